/* sim_demo.c -- what gpuprof's table and trace look like with GPU times,
   on a machine without a GPU: a training-like loop whose "kernels" run on
   the simulated CUDA runtime of the tests (simcuda/), with known durations.
   The README's GPU table is this program's output:
       ./build/tests/sim_demo            (writes sim_demo.trace.json) */
#define _GNU_SOURCE
#include "simcuda/simcuda.h"
#define GPUPROF_CLOCK_FN() simcuda_now()
#define GPUPROF_IMPLEMENTATION
#include "gpuprof.h"

#define US 1000ull

int main(void) {
    gpuprof_config cfg;
    cudaStream_t copy;
    int s, k;
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = "sim_demo.trace.json";
    cfg.warmup = 5;
    cfg.process_name = "train (simulated GPU)";
    cfg.report = "stdout";
    gpuprof_init(&cfg);
    cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking);
    for (s = 0; s < 200; s++) {
        { PROF_RANGE_STREAM("data", copy); simcuda_kernel(copy, 300 * US); simcuda_advance(200 * US); }
        {
            PROF_RANGE("forward");
            { PROF_RANGE("matmul"); simcuda_kernel(0, 1800 * US + (uint64_t)(s % 7) * 20 * US); simcuda_advance(30 * US); }
            { PROF_RANGE("softmax"); for (k = 0; k < 40; k++) { simcuda_kernel(0, 2 * US); simcuda_advance(6 * US); } }
        }
        { PROF_RANGE("backward"); simcuda_kernel(0, 3600 * US); simcuda_advance(60 * US); }
        { PROF_RANGE("optimizer"); simcuda_kernel(0, 400 * US); simcuda_advance(40 * US); }
        {
            /* logging: 100 small kernels launched one by one, after the GPU has caught up */
            simcuda_advance(6500 * US);
            PROF_RANGE("log metrics");
            for (k = 0; k < 100; k++) { simcuda_kernel(0, 1 * US); simcuda_advance(4 * US); }
        }
        PROF_COUNTER("loss", 1.0 / (1 + s));
        PROF_STEP();
    }
    return 0;
}
