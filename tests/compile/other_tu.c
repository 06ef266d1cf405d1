/* A second translation unit: only the declarations and macros; with
   CUDA_FIRST the CUDA runtime's header comes first and gpuprof's cudaMalloc
   wrappers are used (in .cu files nvcc includes that header itself). */
#ifdef CUDA_FIRST
#include <cuda_runtime_api.h>
#endif
#include "gpuprof.h"
int other_tu_step(int i);
int other_tu_step(int i) {
    PROF_RANGE("other tu");
    PROF_COUNTER("i", i);
#ifdef CUDART_VERSION
    {
        void *p = NULL;
        if (gpuprof_cuda_malloc(&p, 64, "workspace") == cudaSuccess) (void)gpuprof_cuda_free(p);
        if (gpuprof_cuda_malloc_async(&p, 64, 0, "workspace") == cudaSuccess) (void)gpuprof_cuda_free_async(p, 0);
#ifdef __cplusplus
        float *f = NULL;                          /* typed, as cudaMalloc takes it in C++ */
        if (gpuprof_cuda_malloc(&f, 64, "workspace") == cudaSuccess) (void)gpuprof_cuda_free(f);
#endif
        (void)cudaGetLastError();                 /* no GPU here: the failures are expected */
    }
#endif
    return i;
}
