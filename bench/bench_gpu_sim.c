/* bench_gpu_sim.c -- the GPU path of a range, against the simulated CUDA
   runtime of the tests (tests/simcuda): which CUDA calls a GPU-timed range
   makes in steady state (counted: event records, synchronizing calls, event
   creations), and what gpuprof's own part of it costs on the CPU beside a
   CPU-only range, in the same run. With kernel capture on the simulated CUPTI
   (tests/simcupti): the same range with its external correlation push and pop,
   the collector's CPU per launch (the kernel, the runtime and driver calls and
   their external correlations; gpuprof's own event queries too) and the memory
   capture holds. With GPU metrics on (the simulated PM sampler): the same
   range with its GPU span handed to the sampler. The simulated calls cost ~20-40 ns each (a mutex); a real driver's cudaEventRecord costs microseconds (bench/README.md
   has an H100's figures), which this does not measure.

   Prints "key value" lines that bench_overhead reads into its table.
   usage: bench_gpu_sim [ranges per run, default 200000] */
#define _GNU_SOURCE
#include "../tests/simcuda/simcuda.h"
#include "../tests/simcupti/simcupti.h"
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

static long step_every;      /* GPUPROF_STEP every this many ranges (0: none) */
static double loop(long n) {
    uint64_t t0 = gpuprof__mono_ns();
    for (long i = 0; i < n; i++) {
        { PROF_RANGE("bench.gpu"); BARRIER(); }
        if (step_every && i % step_every == step_every - 1) PROF_STEP();
    }
    return (double)(gpuprof__mono_ns() - t0) / (double)n;
}

/* Median and spread of RUNS runs of n ranges, in a session with or without
   GPU timing, with or without kernel capture (2: and the ranges timed by
   their kernels, GPUPROF_GPU=kernels; 3: no capture, GPU metrics). */
static void measure(long n, int gpu, int kernels, double *med, double *lo, double *hi) {
    gpuprof_config cfg = {0};
    double r[RUNS];
    cfg.report = "off";
    cfg.no_gpu = !gpu;
    cfg.kernels = kernels == 1 || kernels == 2;
    cfg.gpu_from_kernels = kernels == 2;      /* GPUPROF_GPU=kernels: no CUDA event, a call slot */
    cfg.gpu_metrics = kernels == 3;           /* GPU metrics: each harvested span goes to the sampler's list */
    /* its calls are folded (their slots freed) where buffers come, at GPUPROF_STEP and at reports:
       a loop of a training step's size, so the slots are reused as in a program */
    step_every = kernels == 2 ? 1000 : 0;
    cfg.kernel_buffer_mb = 1024;
    gpuprof_init(&cfg);
    /* gpuprof's part only: the simulated CUPTI's recording of every
       cudaEventQuery (what the real one costs there is the H100's figure in
       bench/README.md) stays off */
    if (kernels == 1 || kernels == 2) simcuda_event_hook = NULL;
    loop(n / 10);
    for (int k = 0; k < RUNS; k++) r[k] = loop(n);
    gpuprof_shutdown();
    qsort(r, RUNS, sizeof *r, cmp_double);
    *med = r[RUNS / 2];
    *lo = r[0];
    *hi = r[RUNS - 1];
}

static double thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The collector: n kernels launched in ranges (the simulated CUPTI writes
   their records into gpuprof's buffers as the real one does), then the
   buffers read, matched and added up on this thread inside
   cuptiActivityFlushAll, where the simulated CUPTI hands them over (the real
   one hands most over on its own thread every 500 ms), timed in this
   thread's CPU time, RUNS times. */
static void collector(long n) {
    gpuprof_config cfg = {0};
    double r[RUNS], t0;
    uint64_t recs = 0, rec0;
    size_t bufs = 0;
    cudaStream_t s;
    cfg.report = "off";
    cfg.kernels = 1;
    cfg.kernel_buffer_mb = 1024;
    for (int k = 0; k < RUNS; k++) {
        simcupti_reset();
        gpuprof_init(&cfg);
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        gpuprof_set_stream(s);
        for (long i = 0; i < n; i++) {
            PROF_RANGE("bench.kernel");
            simcupti_kernel(s, "bench_kernel", 2000, 128, 256);
            if ((i & 1023) == 1023) PROF_STEP();
        }
        cudaStreamSynchronize(s);
        rec0 = gpuprof__kc.records;
        t0 = thread_cpu_ns();
        gpuprof__kc_flush(0);        /* what a report does first */
        r[k] = thread_cpu_ns() - t0;
        recs = gpuprof__kc.records - rec0;
        bufs = gpuprof__kc.nbufs;
        cudaStreamDestroy(s);
        gpuprof_shutdown();
    }
    qsort(r, RUNS, sizeof *r, cmp_double);
    printf("gpu_sim_collector_ns_per_launch %.2f %.2f %.2f\n", r[RUNS / 2] / (double)n, r[0] / (double)n, r[RUNS - 1] / (double)n);
    printf("gpu_sim_collector_launches %ld\n", n);
    printf("gpu_sim_collector_gpu_records %llu\n", (unsigned long long)recs);
    printf("gpu_sim_capture_buffer_mib %.1f\n", (double)bufs * (double)GPUPROF__KC_BUF / 1048576.0);
    printf("gpu_sim_capture_tables_mib %.1f\n",
           ((double)GPUPROF__KC_MAP * sizeof(gpuprof__kcorr) + (double)GPUPROF__KC_PENDING * sizeof(gpuprof__krec)) / 1048576.0);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 200000, steady = 10000, launches = n / 4;
    double cpu, cpu_lo, cpu_hi, gpu, gpu_lo, gpu_hi, kern, kern_lo, kern_hi, kspan, kspan_lo, kspan_hi, gm, gm_lo, gm_hi;
    uint64_t rec0, sync0, create0;
    gpuprof_config cfg = {0};
    if (n < 1000) n = 1000;
    simcuda_reset();
    measure(n, 0, 0, &cpu, &cpu_lo, &cpu_hi);
    measure(n, 1, 0, &gpu, &gpu_lo, &gpu_hi);
    setenv("GPUPROF_CUPTI_PATH", SIMCUPTI_PATH, 1);
    simcupti_reset();
    measure(n, 1, 1, &kern, &kern_lo, &kern_hi);
    simcupti_reset();
    measure(n, 1, 2, &kspan, &kspan_lo, &kspan_hi);
    /* GPU metrics: the virtual clock stands still here, so no sample comes and
       every span waits in the sampler's list until it is full (then the oldest
       is attributed to each new one): its most expensive steady state */
    simcupti_reset();
    measure(n, 1, 3, &gm, &gm_lo, &gm_hi);
    collector(launches);

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
    printf("gpu_sim_kernels_ns %.2f %.2f %.2f\n", kern, kern_lo, kern_hi);
    printf("gpu_sim_from_kernels_ns %.2f %.2f %.2f\n", kspan, kspan_lo, kspan_hi);
    printf("gpu_sim_gpu_metrics_ns %.2f %.2f %.2f\n", gm, gm_lo, gm_hi);
    printf("gpu_sim_call_slots_mib %.1f\n", (double)GPUPROF__KC_CALLS * sizeof(gpuprof__kcall) / 1048576.0);
    return 0;
}
