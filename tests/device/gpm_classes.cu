/* gpm_classes.cu -- a device check (tests/device/run.sh): two phases whose
   bound is known, each about a second of kernels queued back to back --
   "copy", a grid-stride copy of 1 GiB (DRAM-bound), and "fma", a chain of
   fused multiply-adds on registers (compute-bound) -- with no work
   declared, so gpuprof can class them only from what GPM measured in their
   GPU windows (SPEC 17). Writes
   gpm_classes.json (GPUPROF_SUMMARY) for run.sh to read; without a GPU it
   says so and exits 0. */
#define GPUPROF_IMPLEMENTATION
#include "../../gpuprof.h"

#include <cuda_runtime.h>
#include <stdio.h>

__global__ void copy_kernel(const float4 *in, float4 *out, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) out[i] = in[i];
}

__global__ void fma_kernel(float *out, int iters) {
    float a = threadIdx.x * 1e-3f, b = 1.0001f, c = 1e-7f, d = blockIdx.x * 1e-3f;
    for (int i = 0; i < iters; i++) {
        a = fmaf(a, b, c);
        d = fmaf(d, b, c);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a + d;
}

int main(void) {
    size_t n = ((size_t)1 << 30) / sizeof(float4);
    float4 *in, *out;
    float *fout;
    int dev = 0, sms = 0, step;
    if (cudaGetDeviceCount(&dev) != cudaSuccess || dev == 0) { printf("gpm_classes: no CUDA GPU here\n"); return 0; }
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    if (cudaMalloc(&in, n * sizeof *in) != cudaSuccess || cudaMalloc(&out, n * sizeof *out) != cudaSuccess ||
        cudaMalloc(&fout, (size_t)sms * 8 * 256 * sizeof *fout) != cudaSuccess) { printf("gpm_classes: out of GPU memory\n"); return 1; }
    cudaMemset(in, 0, n * sizeof *in);
    for (step = 0; step < 3; step++) {
        int i;
        PROF_STEP();
        /* queued without a wait: each phase's GPU part is its own kernels, back to back */
        { PROF_RANGE("copy"); for (i = 0; i < 2000; i++) copy_kernel<<<sms * 8, 256>>>(in, out, n); }
        { PROF_RANGE("fma"); for (i = 0; i < 600; i++) fma_kernel<<<sms * 8, 256>>>(fout, 1 << 20); }
        { PROF_RANGE("sync"); cudaDeviceSynchronize(); }
    }
    PROF_STEP();
    cudaFree(in);
    cudaFree(out);
    cudaFree(fout);
    return 0;
}
