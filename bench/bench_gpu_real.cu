/* bench_gpu_real.cu -- what a range costs on a real GPU, with and without
   kernel capture (CUPTI), in CPU time of the calling thread (median of 7 runs,
   min..max), against baselines measured in the same run:
     - a range with GPU timing off (the CPU-only path of a CUDA build);
     - a GPU-timed range (two cudaEventRecord), capture off and on;
     - a range timed by its kernels (GPUPROF_GPU=kernels: capture, no event);
     - one launch of an empty kernel: bare, inside a GPU-timed range, and
       inside a GPU-timed range with capture on (CUPTI records the launch);
   and, for capture, the whole process's CPU (user + sys, every thread:
   CUPTI's and gpuprof's collector too) per launch, against the same loop
   without capture. Without a GPU it says so and exits 0.

   usage: bench_gpu_real [iterations per run, default 20000] */
#define GPUPROF_IMPLEMENTATION
#include "../gpuprof.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

enum { RUNS = 7 };

__global__ void empty_kernel(void) {}

static double thread_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double process_ns(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return ((double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec) * 1e9 + ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec) * 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum what { RANGE, LAUNCH, RANGE_LAUNCH };

/* One run of n iterations: thread CPU ns per iteration (and the process's in *proc). */
static double run(enum what w, long n, double *proc) {
    double t0 = thread_ns(), p0 = process_ns(), t;
    for (long i = 0; i < n; i++) {
        if (w == RANGE) { PROF_RANGE("bench.range"); }
        else if (w == LAUNCH) empty_kernel<<<1, 1>>>();
        else { PROF_RANGE("bench.launch"); empty_kernel<<<1, 1>>>(); }
        if ((i & 255) == 255) {
            cudaStreamSynchronize(0);
            if (w != LAUNCH) PROF_STEP();    /* the bare loop must not start gpuprof */
        }
    }
    cudaStreamSynchronize(0);
    t = (thread_ns() - t0) / (double)n;
    if (proc) *proc = (process_ns() - p0) / (double)n;
    return t;
}

/* Median, min and max over RUNS runs in one session (gpu: GPU timing; kernels: capture, 2: and
   the ranges' GPU time from their kernels, GPUPROF_GPU=kernels). */
static void measure(const char *label, enum what w, long n, int gpu, int kernels, double *out) {
    gpuprof_config cfg;
    double r[RUNS], pr[RUNS];
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    cfg.no_gpu = !gpu;
    cfg.kernels = kernels;
    cfg.gpu_from_kernels = kernels == 2;
    gpuprof_init(&cfg);
    run(w, n / 10, NULL);
    for (int k = 0; k < RUNS; k++) r[k] = run(w, n, &pr[k]);
    gpuprof_shutdown();
    qsort(r, RUNS, sizeof *r, cmp);
    qsort(pr, RUNS, sizeof *pr, cmp);
    out[0] = r[RUNS / 2];
    out[1] = pr[RUNS / 2];
    printf("%-58s %9.0f ns  (%.0f .. %.0f)   process CPU %9.0f ns\n", label, r[RUNS / 2], r[0], r[RUNS - 1], pr[RUNS / 2]);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000;
    int dev = 0;
    cudaDeviceProp p;
    double cpu[2], cpuk[2], gpu[2], gpuk[2], fromk[2], launchfk[2], bare[2], launch[2], launchk[2], launchc[2], launchck[2], r[RUNS], pr[RUNS];
    if (cudaGetDeviceCount(&dev) != cudaSuccess || dev == 0) {
        printf("bench_gpu_real: no CUDA device here; nothing measured\n");
        return 0;
    }
    cudaGetDeviceProperties(&p, 0);
    printf("bench_gpu_real: %s, %ld iterations x %d runs; thread CPU time per iteration, median (min .. max)\n", p.name, n, RUNS);
    for (int k = 0; k < RUNS; k++) r[k] = run(LAUNCH, n, &pr[k]);   /* warm up the driver */
    for (int k = 0; k < RUNS; k++) r[k] = run(LAUNCH, n, &pr[k]);
    qsort(r, RUNS, sizeof *r, cmp);
    qsort(pr, RUNS, sizeof *pr, cmp);
    bare[0] = r[RUNS / 2];
    bare[1] = pr[RUNS / 2];
    printf("%-58s %9.0f ns  (%.0f .. %.0f)   process CPU %9.0f ns\n", "empty kernel launch, no gpuprof (baseline)", bare[0], r[0], r[RUNS - 1], bare[1]);
    measure("range, GPU timing off", RANGE, n, 0, 0, cpu);
    measure("range, GPU timing off, kernel capture on", RANGE, n, 0, 1, cpuk);
    measure("range, GPU-timed", RANGE, n, 1, 0, gpu);
    measure("range, GPU-timed, kernel capture on", RANGE, n, 1, 1, gpuk);
    measure("range, GPU time from its kernels (GPUPROF_GPU=kernels)", RANGE, n, 1, 2, fromk);
    measure("range around a launch, GPU timing off", RANGE_LAUNCH, n, 0, 0, launchc);
    measure("range around a launch, GPU timing off, kernel capture on", RANGE_LAUNCH, n, 0, 1, launchck);
    measure("range around a launch, GPU-timed", RANGE_LAUNCH, n, 1, 0, launch);
    measure("range around a launch, GPU-timed, kernel capture on", RANGE_LAUNCH, n, 1, 1, launchk);
    measure("range around a launch, GPU time from its kernels", RANGE_LAUNCH, n, 1, 2, launchfk);
    printf("\ncapture's cost per CPU-timed range (no launch):   %+.0f ns thread CPU, %+.0f ns process CPU\n", cpuk[0] - cpu[0], cpuk[1] - cpu[1]);
    printf("capture's cost per CPU-timed range, one launch:  %+.0f ns thread CPU, %+.0f ns process CPU\n", launchck[0] - launchc[0], launchck[1] - launchc[1]);
    printf("capture's cost per GPU-timed range (no launch):   %+.0f ns thread CPU, %+.0f ns process CPU\n", gpuk[0] - gpu[0], gpuk[1] - gpu[1]);
    printf("capture's cost per range with one launch:         %+.0f ns thread CPU, %+.0f ns process CPU\n", launchk[0] - launch[0], launchk[1] - launch[1]);
    printf("a GPU-timed range around a launch, over the bare launch: %+.0f ns thread CPU\n", launch[0] - bare[0]);
    printf("GPUPROF_GPU=kernels vs events with capture, no launch / one launch: %+.0f / %+.0f ns thread CPU\n", fromk[0] - gpuk[0], launchfk[0] - launchk[0]);
    return 0;
}
