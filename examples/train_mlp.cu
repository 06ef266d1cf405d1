/* train_mlp.cu -- the demo's MLP trained on the GPU with plain CUDA kernels,
   instrumented the same way: data / forward / backward / optimizer ranges,
   one GPUPROF_STEP per iteration, the loss as a counter, the buffers tagged
   (gpuprof_cuda_malloc / _malloc_async) and a GPUPROF_MEM snapshot after
   each phase. nvcc compiles gpuprof's implementation here, which turns on
   GPU timing (CUDA events on each range's stream) and NVTX ranges (Nsight
   Systems shows them).

   Build and run (from the repository root):
       cmake -S . -B build && cmake --build build && ./build/train_mlp_cuda
   The table at exit has GPU columns, a roofline table for the kernels whose
   work is declared (GPUPROF_RANGE_WORK: FLOPs and the bytes they must move)
   and the verdict: what bounds each phase, and the bottleneck; the trace
   (train_mlp_cuda.trace.json) has a track for the CUDA stream under the CPU
   thread. Without a GPU it says so in one line and exits 0.

       GPUPROF_KERNELS=1 ./build/train_mlp_cuda
   adds kernel capture (CUPTI, loaded at run time): the kernel, transfer and
   synchronization tables -- each kernel by its demangled name, with the range
   that launched it -- and the kernels on the trace's stream tracks, and each
   range's GPU time from its kernels beside the event-timed one.

       GPUPROF_GPU=kernels ./build/train_mlp_cuda
   times the ranges by their kernels alone (first start to last end of the
   work each launched), with no CUDA event per range. */
#define GPUPROF_IMPLEMENTATION
#include "../gpuprof.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { IN = 64, HIDDEN = 1024, BATCH = 8192, STEPS = 200 };

#define CUDA_CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    fprintf(stderr, "train_mlp_cuda: %s failed: %s\n", #call, cudaGetErrorString(e_)); exit(1); } } while (0)

struct params { float *w1, *b1, *w2, *b2; };
static const size_t NPARAM = (size_t)IN * HIDDEN + HIDDEN + HIDDEN + 1;

/* Parameters, gradients and the two Adam moments each live in one buffer
   of NPARAM floats, laid out as w1 | b1 | w2 | b2. */
static params view(float *base) {
    params p;
    p.w1 = base;
    p.b1 = p.w1 + IN * HIDDEN;
    p.w2 = p.b1 + HIDDEN;
    p.b2 = p.w2 + HIDDEN;
    return p;
}

__device__ float hash_uniform(unsigned long long x) {    /* splitmix64 -> [-1, 1) */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (float)(x >> 40) / (float)(1 << 23) - 1.0f;
}

__global__ void make_batch(float *x, float *y, int step) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= BATCH) return;
    for (int j = 0; j < IN; j++) x[i * IN + j] = hash_uniform(((unsigned long long)step * BATCH + i) * IN + j);
    const float *r = x + i * IN;
    y[i] = sinf(2.0f * r[0]) + r[1] * r[2] - 0.5f * r[3] * r[3];
}

__global__ void init_params(float *p, size_t n, float scale1, float scale2) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i < (size_t)IN * HIDDEN) p[i] = hash_uniform(i + 12345) * scale1;
    else if (i >= (size_t)IN * HIDDEN + HIDDEN && i < (size_t)IN * HIDDEN + 2 * HIDDEN) p[i] = hash_uniform(i + 777) * scale2;
    else p[i] = 0.0f;
}

__global__ void linear1_relu(const float *x, params p, float *h) {     /* h = relu(x w1 + b1) */
    int k = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y;
    if (k >= HIDDEN) return;
    float s = p.b1[k];
    for (int j = 0; j < IN; j++) s += x[i * IN + j] * p.w1[j * HIDDEN + k];
    h[i * HIDDEN + k] = s > 0 ? s : 0;
}

__global__ void linear2_loss(const float *h, params p, const float *y, float *out, float *dout, float *loss) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= BATCH) return;
    float o = *p.b2;
    for (int k = 0; k < HIDDEN; k++) o += h[i * HIDDEN + k] * p.w2[k];
    out[i] = o;
    float d = o - y[i];
    dout[i] = 2.0f * d / BATCH;
    atomicAdd(loss, d * d / BATCH);
}

__global__ void grad_w2(const float *h, const float *dout, params g) {    /* dL/dw2, dL/db2 */
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k > HIDDEN) return;
    float s = 0;
    if (k == HIDDEN) { for (int i = 0; i < BATCH; i++) s += dout[i]; *g.b2 = s; return; }
    for (int i = 0; i < BATCH; i++) s += dout[i] * h[i * HIDDEN + k];
    g.w2[k] = s;
}

__global__ void grad_hidden(const float *h, const float *dout, params p, float *dh) {
    int k = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y;
    if (k >= HIDDEN) return;
    dh[i * HIDDEN + k] = h[i * HIDDEN + k] > 0 ? dout[i] * p.w2[k] : 0.0f;
}

__global__ void grad_w1(const float *x, const float *dh, params g) {      /* dL/dw1, dL/db1 */
    int k = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y;      /* j == IN: the bias */
    if (k >= HIDDEN) return;
    float s = 0;
    for (int i = 0; i < BATCH; i++) s += (j < IN ? x[i * IN + j] : 1.0f) * dh[i * HIDDEN + k];
    if (j < IN) g.w1[j * HIDDEN + k] = s;
    else g.b1[k] = s;
}

__global__ void adam(float *p, const float *g, float *m, float *v, size_t n, float lr, float c1, float c2) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    m[i] = 0.9f * m[i] + 0.1f * g[i];
    v[i] = 0.999f * v[i] + 0.001f * g[i] * g[i];
    p[i] -= lr * (m[i] / c1) / (sqrtf(v[i] / c2) + 1e-8f);
}

int main(void) {
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("train_mlp_cuda: no CUDA GPU here (%s); nothing to train (the CPU demo is ./train_mlp)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "no device");
        return 0;
    }
    gpuprof_config cfg = gpuprof_config();  /* zero-initialised: defaults */
    cfg.trace_path = "train_mlp_cuda.trace.json";
    cfg.summary_path = "train_mlp_cuda.summary.json";
    cfg.warmup = 5;                       /* the first steps load the kernels */
    gpuprof_init(&cfg);

    /* Parameters and the batch live all run (cudaMalloc); gradients and the
       Adam moments are made on first use; the activations of each step come
       from the stream-ordered pool (cudaMallocAsync) in forward and go back
       at the end of backward, as a framework's caching allocator would. */
    float *pbuf, *gbuf = NULL, *mbuf = NULL, *vbuf = NULL, *x, *y, *h, *dh, *out, *dout, *loss;
    CUDA_CHECK(gpuprof_cuda_malloc(&pbuf, NPARAM * sizeof(float), "parameters"));
    CUDA_CHECK(gpuprof_cuda_malloc(&x, (size_t)BATCH * IN * sizeof(float), "data"));
    CUDA_CHECK(gpuprof_cuda_malloc(&y, BATCH * sizeof(float), "data"));
    CUDA_CHECK(gpuprof_cuda_malloc(&loss, sizeof(float), "workspace"));
    init_params<<<(unsigned)((NPARAM + 255) / 256), 256>>>(pbuf, NPARAM, sqrtf(6.0f / IN), 0.5f * sqrtf(6.0f / HIDDEN));
    params p = view(pbuf), g;
    const unsigned nblk = (unsigned)((NPARAM + 255) / 256);
    PROF_MEM("init");

    for (int step = 0; step < STEPS; step++) {
        { PROF_RANGE("data"); make_batch<<<BATCH / 256, 256>>>(x, y, step); }
        PROF_MEM("data");
        {
            PROF_RANGE("forward");
            CUDA_CHECK(gpuprof_cuda_malloc_async(&h, (size_t)BATCH * HIDDEN * sizeof(float), 0, "activations"));
            CUDA_CHECK(gpuprof_cuda_malloc_async(&out, BATCH * sizeof(float), 0, "activations"));
            CUDA_CHECK(gpuprof_cuda_malloc_async(&dout, BATCH * sizeof(float), 0, "activations"));
            cudaMemsetAsync(loss, 0, sizeof(float));
            { PROF_RANGE_WORK("linear1+relu", 2.0 * BATCH * IN * HIDDEN, 4.0 * (BATCH * IN + IN * HIDDEN + BATCH * HIDDEN)); linear1_relu<<<dim3(HIDDEN / 256, BATCH), 256>>>(x, p, h); }
            { PROF_RANGE_WORK("linear2+loss", 2.0 * BATCH * HIDDEN, 4.0 * (BATCH * HIDDEN + HIDDEN + 3.0 * BATCH)); linear2_loss<<<BATCH / 256, 256>>>(h, p, y, out, dout, loss); }
        }
        PROF_MEM("forward");
        {
            PROF_RANGE("backward");
            if (!gbuf) CUDA_CHECK(gpuprof_cuda_malloc(&gbuf, NPARAM * sizeof(float), "gradients"));
            g = view(gbuf);
            CUDA_CHECK(gpuprof_cuda_malloc_async(&dh, (size_t)BATCH * HIDDEN * sizeof(float), 0, "activations"));
            { PROF_RANGE_WORK("linear2.grad", 2.0 * BATCH * HIDDEN, 4.0 * (BATCH * HIDDEN + BATCH + HIDDEN)); grad_w2<<<(HIDDEN + 256) / 256, 256>>>(h, dout, g); }
            { PROF_RANGE_WORK("relu.grad", 1.0 * BATCH * HIDDEN, 4.0 * (2.0 * BATCH * HIDDEN + BATCH + HIDDEN)); grad_hidden<<<dim3(HIDDEN / 256, BATCH), 256>>>(h, dout, p, dh); }
            { PROF_RANGE_WORK("linear1.grad", 2.0 * BATCH * (IN + 1) * HIDDEN, 4.0 * (BATCH * IN + BATCH * HIDDEN + (IN + 1) * HIDDEN)); grad_w1<<<dim3(HIDDEN / 256, IN + 1), 256>>>(x, dh, g); }
            CUDA_CHECK(gpuprof_cuda_free_async(h, 0));
            CUDA_CHECK(gpuprof_cuda_free_async(dh, 0));
            CUDA_CHECK(gpuprof_cuda_free_async(out, 0));
            CUDA_CHECK(gpuprof_cuda_free_async(dout, 0));
        }
        PROF_MEM("backward");
        {
            PROF_RANGE("optimizer");
            float c1 = 1.0f - powf(0.9f, (float)step + 1), c2 = 1.0f - powf(0.999f, (float)step + 1);
            if (!mbuf) {
                CUDA_CHECK(gpuprof_cuda_malloc(&mbuf, NPARAM * sizeof(float), "optimizer state"));
                CUDA_CHECK(gpuprof_cuda_malloc(&vbuf, NPARAM * sizeof(float), "optimizer state"));
                CUDA_CHECK(cudaMemsetAsync(mbuf, 0, NPARAM * sizeof(float)));
                CUDA_CHECK(cudaMemsetAsync(vbuf, 0, NPARAM * sizeof(float)));
            }
            adam<<<nblk, 256>>>(pbuf, gbuf, mbuf, vbuf, NPARAM, 1e-3f, c1, c2);
        }
        PROF_MEM("optimizer");
        if (step % 10 == 0 || step == STEPS - 1) {
            /* reading the loss waits for the GPU, as loss.item() does */
            float l = 0;
            { PROF_RANGE("loss.item"); CUDA_CHECK(cudaMemcpy(&l, loss, sizeof l, cudaMemcpyDeviceToHost)); }
            PROF_COUNTER("loss", l);
            if (step % 50 == 0 || step == STEPS - 1) printf("step %3d  loss %.4f\n", step, l);
        }
        PROF_STEP();
    }
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    fflush(stdout);
    gpuprof_shutdown();                   /* the table now, while the CUDA runtime is up */
    gpuprof_cuda_free(pbuf); gpuprof_cuda_free(gbuf); gpuprof_cuda_free(mbuf); gpuprof_cuda_free(vbuf);
    gpuprof_cuda_free(x); gpuprof_cuda_free(y); gpuprof_cuda_free(loss);   /* after shutdown: only freed */
    return 0;
}
