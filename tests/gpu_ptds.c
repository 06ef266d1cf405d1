/* A file built with per-thread default streams (as nvcc --default-stream
   per-thread does): stream 0 in its ranges is the calling thread's stream. */
#include "simcuda/simcuda.h"
#include "gpuprof.h"

void ptds_range(uint64_t kernel_ns);
void ptds_range(uint64_t kernel_ns) {
    PROF_RANGE("ptds");
    simcuda_kernel(cudaStreamPerThread, kernel_ns);
    simcuda_advance(10000);
}
