/* train_mlp.cu -- the demo's MLP trained on the GPU with plain CUDA kernels,
   instrumented the same way: data / forward / backward / optimizer ranges,
   one GPUPROF_STEP per iteration, the loss as a counter. nvcc compiles
   gpuprof's implementation here, which turns on GPU timing (CUDA events on
   each range's stream) and NVTX ranges (Nsight Systems shows them).

   Build and run (from the repository root):
       cmake -S . -B build && cmake --build build && ./build/train_mlp_cuda
   The table at exit has GPU columns and a verdict per range; the trace
   (train_mlp_cuda.trace.json) has a track for the CUDA stream under the CPU
   thread. Without a GPU it says so in one line and exits 0. */
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

    float *pbuf, *gbuf, *mbuf, *vbuf, *x, *y, *h, *dh, *out, *dout, *loss;
    CUDA_CHECK(cudaMalloc(&pbuf, NPARAM * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&gbuf, NPARAM * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&mbuf, NPARAM * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&vbuf, NPARAM * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&x, (size_t)BATCH * IN * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&y, BATCH * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&h, (size_t)BATCH * HIDDEN * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dh, (size_t)BATCH * HIDDEN * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&out, BATCH * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&dout, BATCH * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&loss, sizeof(float)));
    CUDA_CHECK(cudaMemset(mbuf, 0, NPARAM * sizeof(float)));
    CUDA_CHECK(cudaMemset(vbuf, 0, NPARAM * sizeof(float)));
    init_params<<<(unsigned)((NPARAM + 255) / 256), 256>>>(pbuf, NPARAM, sqrtf(6.0f / IN), 0.5f * sqrtf(6.0f / HIDDEN));
    params p = view(pbuf), g = view(gbuf);
    const unsigned nblk = (unsigned)((NPARAM + 255) / 256);

    for (int step = 0; step < STEPS; step++) {
        { PROF_RANGE("data"); make_batch<<<BATCH / 256, 256>>>(x, y, step); }
        {
            PROF_RANGE("forward");
            cudaMemsetAsync(loss, 0, sizeof(float));
            { PROF_RANGE("linear1+relu"); linear1_relu<<<dim3(HIDDEN / 256, BATCH), 256>>>(x, p, h); }
            { PROF_RANGE("linear2+loss"); linear2_loss<<<BATCH / 256, 256>>>(h, p, y, out, dout, loss); }
        }
        {
            PROF_RANGE("backward");
            { PROF_RANGE("linear2.grad"); grad_w2<<<(HIDDEN + 256) / 256, 256>>>(h, dout, g); }
            { PROF_RANGE("relu.grad"); grad_hidden<<<dim3(HIDDEN / 256, BATCH), 256>>>(h, dout, p, dh); }
            { PROF_RANGE("linear1.grad"); grad_w1<<<dim3(HIDDEN / 256, IN + 1), 256>>>(x, dh, g); }
        }
        {
            PROF_RANGE("optimizer");
            float c1 = 1.0f - powf(0.9f, (float)step + 1), c2 = 1.0f - powf(0.999f, (float)step + 1);
            adam<<<nblk, 256>>>(pbuf, gbuf, mbuf, vbuf, NPARAM, 1e-3f, c1, c2);
        }
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
    cudaFree(pbuf); cudaFree(gbuf); cudaFree(mbuf); cudaFree(vbuf);
    cudaFree(x); cudaFree(y); cudaFree(h); cudaFree(dh); cudaFree(out); cudaFree(dout); cudaFree(loss);
    return 0;
}
