/* bench_device.c -- what the device over the run (SPEC 17) costs. gpuprof's
   thread reads NVML every GPUPROF_DEVICE_EVERY_MS (100 by default): one pass
   is every counter's call (utilization, two clocks, power and its limit,
   temperature, memory, the clock-event reasons, a GPM sample and its
   metrics), then gpuprof's bookkeeping (each counter's totals and value
   table, the run over time, the phase open then, the trace's counter
   events). Measured in the calling thread's CPU time:

     the calls alone, through the seam (the baseline: what NVML itself costs)
     a whole pass (gpuprof__dev_sample), GPM included every time

   and their ratio, then what a pass every 100 ms takes of one core. The
   recording threads do nothing for it (a range's path has no instruction
   of it: bench/README.md, "The device over the run").

   usage: bench_device [--real]   (default: the simulated NVML of the tests;
   --real: the driver's libnvidia-ml.so.1, on a machine with a GPU) */
#define _GNU_SOURCE
#define GPUPROF_IMPLEMENTATION
#include "../gpuprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PASSES 20000
#define RUNS 7

static double thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The calls of one pass, straight through the seam, their results dropped. */
static void calls_only(void) {
    const gpuprof__nvml_api *a = &gpuprof__dev.api;
    void *d = gpuprof__dev.dev;
    gpuprof__nvml_util u;
    gpuprof__nvml_mem m;
    gpuprof__nvml_temp tv;
    unsigned x;
    unsigned long long why;
    gpuprof__nvml_gpm_get *g = gpuprof__dev.gpm_get;
    (void)a->DeviceGetUtilizationRates(d, &u);
    (void)a->DeviceGetClockInfo(d, GPUPROF__NVML_CLOCK_SM, &x);
    (void)a->DeviceGetClockInfo(d, GPUPROF__NVML_CLOCK_MEM, &x);
    (void)a->DeviceGetPowerUsage(d, &x);
    (void)a->DeviceGetEnforcedPowerLimit(d, &x);
    memset(&tv, 0, sizeof tv);
    tv.version = (unsigned)sizeof tv | 1u << 24;
    if (a->DeviceGetTemperatureV) (void)a->DeviceGetTemperatureV(d, &tv);
    (void)a->DeviceGetMemoryInfo(d, &m);
    if (a->DeviceGetCurrentClocksEventReasons) (void)a->DeviceGetCurrentClocksEventReasons(d, &why);
    if (gpuprof__dev.gpm > 0) {
        int k;
        (void)a->GpmSampleGet(d, gpuprof__dev.gpm_s[1]);
        memset(g, 0, offsetof(gpuprof__nvml_gpm_get, metric));
        g->version = 1;
        g->sample1 = gpuprof__dev.gpm_s[0];
        g->sample2 = gpuprof__dev.gpm_s[1];
        for (k = GPUPROF__DEV_FIRST_GPM; k < GPUPROF__DEV_N; k++) {
            memset(&g->metric[g->count], 0, sizeof g->metric[0]);
            g->metric[g->count++].id = gpuprof__dev_info[k].gpm;
        }
        (void)a->GpmMetricsGet(g);
    }
}

int main(int argc, char **argv) {
    double base[RUNS], pass[RUNS], t0;
    int r, i, real = argc > 1 && !strcmp(argv[1], "--real");
    if (!real && !getenv("GPUPROF_NVML_PATH")) setenv("GPUPROF_NVML_PATH", SIMNVML_PATH, 1);
    setenv("GPUPROF_DEVICE_EVERY_MS", "3600000", 1);       /* gpuprof's thread opens NVML and never samples: this thread does */
    setenv("GPUPROF_REPORT", "off", 1);
    gpuprof_init(NULL);
    { PROF_RANGE("phase"); }
    for (i = 0; i < 500 && !GPUPROF__LDA(&gpuprof__dev.on); i++) { struct timespec ts = { 0, 10000000 }; nanosleep(&ts, NULL); }
    if (!GPUPROF__LDA(&gpuprof__dev.on)) { fprintf(stderr, "bench_device: NVML did not open: %s\n", gpuprof__dev.status); return 1; }
    { struct timespec ts = { 0, 150000000 }; nanosleep(&ts, NULL); }     /* past GPM's first 100 ms */
    gpuprof__dev_sample();                                   /* the first GPM sample: the passes below all get metrics */
    for (r = 0; r < RUNS; r++) {
        t0 = thread_cpu_ns();
        for (i = 0; i < PASSES; i++) calls_only();
        base[r] = (thread_cpu_ns() - t0) / PASSES;
        t0 = thread_cpu_ns();
        for (i = 0; i < PASSES; i++) {
            gpuprof__dev.gpm_t = 0;                          /* GPM's metrics in every pass, as at 100 ms */
            gpuprof__dev_sample();
        }
        pass[r] = (thread_cpu_ns() - t0) / PASSES;
    }
    printf("device: %s, %s (GPM %s), %llu samples taken\n", gpuprof__dev.library, gpuprof__dev.name, gpuprof__dev.gpm > 0 ? "on" : "off",
           (unsigned long long)gpuprof__dev.samples);
    qsort(base, RUNS, sizeof *base, cmp_double);
    qsort(pass, RUNS, sizeof *pass, cmp_double);
    printf("NVML's calls of one pass, alone (baseline)     %9.1f ns  (%.1f .. %.1f)\n", base[RUNS / 2], base[0], base[RUNS - 1]);
    printf("a whole pass (gpuprof__dev_sample)             %9.1f ns  (%.1f .. %.1f)\n", pass[RUNS / 2], pass[0], pass[RUNS - 1]);
    printf("a pass / its calls                              %8.2fx\n", pass[RUNS / 2] / base[RUNS / 2]);
    printf("so every 100 ms, gpuprof's thread takes of one core  %.4f%%\n", 100 * pass[RUNS / 2] / 1e8);
    gpuprof_shutdown();
    return 0;
}
