/* bench_checkpoint.c -- what summary checkpoints (GPUPROF_SUMMARY_EVERY) cost
   the program that records: the same training-like loop (steps of 200
   ranges under 20 phases, one counter) in four sessions of one process,
   without checkpoints, with one every second, one every 100 ms, one
   every 100 ms that also writes the live metrics (GPUPROF_METRICS), and
   one every 100 ms that also writes the page (GPUPROF_HTML). Per
   session: the recording thread's CPU time per range (thread CPU clock:
   a checkpoint runs on gpuprof's own thread), and the wall time of each
   GPUPROF_STEP call (a step takes gpuprof__lock, which a checkpoint holds
   while it makes the summary). Figures are ratios to the session without
   checkpoints, measured in the same run; nothing here passes or fails.

   usage: bench_checkpoint [SECONDS per session, default 3]
   Writes its summaries, metrics and page in the current directory (bench_checkpoint.*). */
#define GPUPROF_IMPLEMENTATION
#include "../gpuprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const char *const phases[20] = { "data", "embed", "attn.0", "mlp.0", "attn.1", "mlp.1", "attn.2", "mlp.2", "attn.3", "mlp.3",
                                        "head", "loss", "bwd.head", "bwd.3", "bwd.2", "bwd.1", "bwd.0", "bwd.embed", "allreduce", "update" };

typedef struct { double ns_per_range, step_p50, step_p99, step_max; long steps, slow; } result;

/* One session of `seconds`, checkpoints every `every` s (<= 0: none). */
static result session(double seconds, double every, const char *summary, const char *metrics, const char *html) {
    gpuprof_config cfg;
    result r;
    double *step_ns = (double *)malloc(sizeof(double) * 4000000), t_end, cpu0, ranges = 0;
    long n = 0;
    volatile double sink = 0;
    memset(&cfg, 0, sizeof cfg);
    memset(&r, 0, sizeof r);
    cfg.report = "off";
    cfg.summary_path = summary;
    cfg.summary_every = every > 0 ? every : -1;
    cfg.metrics = metrics;
    cfg.html = html;
    cfg.trace_ring_mb = -1;                          /* statistics only: the checkpoint's cost, not the trace's */
    gpuprof_init(&cfg);
    t_end = now_ns(CLOCK_MONOTONIC) + seconds * 1e9;
    cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    while (now_ns(CLOCK_MONOTONIC) < t_end && n < 4000000) {
        double t0;
        int p, k;
        for (p = 0; p < 20; p++) {
            PROF_RANGE_DYN(phases[p]);
            for (k = 0; k < 9; k++) { PROF_RANGE("op"); sink += k; }
        }
        ranges += 200;
        PROF_COUNTER("loss", sink);
        t0 = now_ns(CLOCK_MONOTONIC);
        PROF_STEP();
        step_ns[n++] = now_ns(CLOCK_MONOTONIC) - t0;
    }
    r.ns_per_range = (now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / ranges;
    r.steps = n;
    qsort(step_ns, (size_t)n, sizeof *step_ns, cmp);
    r.step_p50 = step_ns[n / 2];
    r.step_p99 = step_ns[(size_t)((double)n * 0.99)];
    r.step_max = step_ns[n - 1];
    for (r.slow = 0; r.slow < n && step_ns[n - 1 - r.slow] > 100000; r.slow++) {}
    gpuprof_shutdown();
    free(step_ns);
    return r;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    static const double every[5] = { 0, 1.0, 0.1, 0.1, 0.1 };
    static const char *const label[5] = { "no checkpoints (baseline)", "a checkpoint every 1 s", "a checkpoint every 100 ms", "... and live metrics",
                                           "... and the page" };
    static const char *const file[5] = { "bench_checkpoint.none.json", "bench_checkpoint.1s.json", "bench_checkpoint.100ms.json", "bench_checkpoint.metrics.json",
                                         "bench_checkpoint.page.json" };
    result r[5];
    int i;
    if (!(seconds > 0)) seconds = 3.0;
    for (i = 0; i < 5; i++) r[i] = session(seconds, every[i], file[i], i == 3 ? "bench_checkpoint.prom" : NULL, i == 4 ? "bench_checkpoint.html" : NULL);
    printf("bench_checkpoint: %.1f s per session, steps of 200 ranges (20 phases x 10), one counter; statistics only\n", seconds);
    printf("%-28s %10s %8s %12s %12s %12s %10s %12s\n", "session", "ns/range", "ratio", "step p50", "step p99", "step max", "steps", "over 100 us");
    for (i = 0; i < 5; i++)
        printf("%-28s %10.2f %7.3fx %9.0f ns %9.0f ns %9.0f ns %10ld %12ld\n", label[i], r[i].ns_per_range, r[i].ns_per_range / r[0].ns_per_range,
               r[i].step_p50, r[i].step_p99, r[i].step_max, r[i].steps, r[i].slow);
    printf("(ns/range: the recording thread's CPU time per range, its GPUPROF_STEP calls included; step: the wall time of one GPUPROF_STEP call)\n");
    return 0;
}
