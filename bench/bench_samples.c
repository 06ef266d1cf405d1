/* bench_samples.c -- what CPU sampling (GPUPROF_SAMPLE, SPEC 16) costs the
   thread it samples: the same compute loop inside a range, in sessions
   without sampling and with it at the default rate, taking turns, each
   timed by the thread's own CPU time (the handler runs on that thread and
   is in it). Prints the medians of 7 of each, their ratio, the samples
   taken, and the CPU per sample the difference gives (the handler, the
   signal's delivery and return).

   usage: bench_samples [ms of CPU per session, default 400] */
#define _GNU_SOURCE
#define GPUPROF_IMPLEMENTATION
#include "../gpuprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RUNS 7
static volatile double sink;

static double thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Work of a known number of iterations, in ranges of ~1 ms, some nested. */
__attribute__((noinline)) static void work(long n) {
    double x = 1.0;
    long i;
    for (i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One session's CPU time (ns) for `blocks` blocks of work; *taken: samples. */
static double session(int sample, long blocks, double *taken) {
    gpuprof_config cfg;
    double t0, t1;
    long b;
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    cfg.sample_hz = sample;
    cfg.trace_ring_mb = -1;
    gpuprof_init(&cfg);
    { PROF_RANGE("warm"); work(1000); }       /* the thread joins (its timer starts) before the clock is read */
    t0 = thread_cpu_ns();
    for (b = 0; b < blocks; b++) {
        PROF_RANGE("block");
        { PROF_RANGE("inner"); work(30000); }
        work(30000);
    }
    t1 = thread_cpu_ns();
    *taken = 0;
    if (sample) {
        char path[64];
        FILE *f;
        snprintf(path, sizeof path, "/tmp/bench_samples.%d.json", (int)getpid());
        gpuprof_write_summary(path);
        if ((f = fopen(path, "r")) != NULL) {
            static char text[1 << 20];
            size_t n = fread(text, 1, sizeof text - 1, f);
            char *p;
            text[n] = 0;
            if ((p = strstr(text, "\"taken\":")) != NULL) *taken = atof(p + 8);
            fclose(f);
        }
        remove(path);
    }
    gpuprof_shutdown();
    return t1 - t0;
}

int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 400, off[RUNS], on[RUNS], taken[RUNS], d, per_block;
    long blocks;
    int i;
    /* the blocks that take about `ms` of CPU */
    {
        double t0 = thread_cpu_ns();
        work(60000 * 50);
        per_block = (thread_cpu_ns() - t0) / 50;
        blocks = (long)(ms * 1e6 / per_block);
        if (blocks < 10) blocks = 10;
    }
    for (i = 0; i < RUNS; i++) {
        double t;
        off[i] = session(0, blocks, &t);
        on[i] = session(1, blocks, &taken[i]);
    }
    qsort(off, RUNS, sizeof off[0], cmp_double);
    qsort(on, RUNS, sizeof on[0], cmp_double);
    qsort(taken, RUNS, sizeof taken[0], cmp_double);
    d = on[RUNS / 2] - off[RUNS / 2];
    printf("sampled thread, CPU per session, no sampling     %10.1f ms  (%.1f .. %.1f)\n", off[RUNS / 2] / 1e6, off[0] / 1e6, off[RUNS - 1] / 1e6);
    printf("sampled thread, CPU per session, GPUPROF_SAMPLE=1 %10.1f ms  (%.1f .. %.1f)\n", on[RUNS / 2] / 1e6, on[0] / 1e6, on[RUNS - 1] / 1e6);
    printf("sampled thread's CPU, sampling on / off           %10.4fx  (target <= 1.01x)\n", on[RUNS / 2] / off[RUNS / 2]);
    printf("samples taken per session                         %10.0f     (%.0f .. %.0f), %.0f per CPU second\n", taken[RUNS / 2], taken[0],
           taken[RUNS - 1], taken[RUNS / 2] / (on[RUNS / 2] * 1e-9));
    printf("CPU per sample (the difference / samples)         %10.2f us\n", taken[RUNS / 2] > 0 ? d / taken[RUNS / 2] / 1e3 : 0.0);
    return 0;
}
