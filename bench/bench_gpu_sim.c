/* bench_gpu_sim.c -- the GPU path of a range, against the simulated CUDA
   runtime of the tests (tests/simcuda): which CUDA calls a GPU-timed range
   makes in steady state (counted: event records, synchronizing calls, event
   creations), and what gpuprof's own part of it costs on the CPU beside a
   CPU-only range, in the same run. The simulated calls cost ~20-40 ns each
   (a mutex); a real driver's cudaEventRecord costs microseconds (bench/README.md
   has an H100's figures), which this does not measure.

   Prints "key value" lines that bench_overhead reads into its table.
   usage: bench_gpu_sim [ranges per run, default 200000] */
#define _GNU_SOURCE
#include "../tests/simcuda/simcuda.h"
#define GPUPROF_IMPLEMENTATION
#include "../gpuprof.h"

#include <stdio.h>
#include <stdlib.h>

#define RUNS 7
#define BARRIER() __asm__ __volatile__("" ::: "memory")

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double loop(long n) {
    uint64_t t0 = gpuprof__mono_ns();
    for (long i = 0; i < n; i++) { PROF_RANGE("bench.gpu"); BARRIER(); }
    return (double)(gpuprof__mono_ns() - t0) / (double)n;
}

/* Median and spread of RUNS runs of n ranges, in a session with or without
   GPU timing. */
static void measure(long n, int gpu, double *med, double *lo, double *hi) {
    gpuprof_config cfg = {0};
    double r[RUNS];
    cfg.report = "off";
    cfg.no_gpu = !gpu;
    gpuprof_init(&cfg);
    loop(n / 10);
    for (int k = 0; k < RUNS; k++) r[k] = loop(n);
    gpuprof_shutdown();
    qsort(r, RUNS, sizeof *r, cmp_double);
    *med = r[RUNS / 2];
    *lo = r[0];
    *hi = r[RUNS - 1];
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 200000, steady = 10000;
    double cpu, cpu_lo, cpu_hi, gpu, gpu_lo, gpu_hi;
    uint64_t rec0, sync0, create0;
    gpuprof_config cfg = {0};
    if (n < 1000) n = 1000;
    simcuda_reset();
    measure(n, 0, &cpu, &cpu_lo, &cpu_hi);
    measure(n, 1, &gpu, &gpu_lo, &gpu_hi);

    /* steady state: after 1000 ranges, count the calls of 10 000 more */
    cfg.report = "off";
    gpuprof_init(&cfg);
    loop(1000);
    rec0 = simcuda_calls("cudaEventRecord");
    sync0 = simcuda_sync_calls();
    create0 = simcuda_calls("cudaEventCreateWithFlags");
    loop(steady);
    printf("gpu_sim_records_per_range %.4f\n", (double)(simcuda_calls("cudaEventRecord") - rec0) / (double)steady);
    printf("gpu_sim_syncs %llu\n", (unsigned long long)(simcuda_sync_calls() - sync0));
    printf("gpu_sim_event_creates %llu\n", (unsigned long long)(simcuda_calls("cudaEventCreateWithFlags") - create0));
    gpuprof_shutdown();
    printf("gpu_sim_cpu_only_ns %.2f %.2f %.2f\n", cpu, cpu_lo, cpu_hi);
    printf("gpu_sim_gpu_timed_ns %.2f %.2f %.2f\n", gpu, gpu_lo, gpu_hi);
    return 0;
}
