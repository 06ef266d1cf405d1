/* bench_samples.c -- what CPU sampling (GPUPROF_SAMPLE, SPEC 16) costs the
   thread it samples: the same compute loop inside a range, in sessions
   without sampling and with it at the default rate, taking turns, each
   timed by the thread's own CPU time (the handler runs on that thread and
   is in it). Prints the medians of 7 of each, their ratio and the samples
   taken; then the cost of one sample measured alone, the handler called
   directly on a real context (getcontext: the walk goes up this program's
   frames) and a signal raised and handled (raise: the kernel's delivery
   and return too, all but the timer's tick), and what that cost at the
   rate achieved makes of a second of the thread's CPU. The sessions'
   ratio is within the machine's noise; the per-sample figure is not.

   usage: bench_samples [ms of CPU per session, default 400] */
#define _GNU_SOURCE
#define GPUPROF_IMPLEMENTATION
#include "../gpuprof.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ucontext.h>

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

/* ns of CPU per call of the handler alone (direct), or per raised signal. */
__attribute__((noinline)) static double per_sample(int raised) {
    gpuprof_config cfg;
    ucontext_t uc;
    double t0, t1;
    long i, n = raised ? 200000 : 2000000;
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    cfg.sample_hz = 1;
    cfg.trace_ring_mb = -1;
    gpuprof_init(&cfg);
    {
        PROF_RANGE("outer");
        PROF_RANGE("inner");
        getcontext(&uc);
        t0 = thread_cpu_ns();
        for (i = 0; i < n; i++) {
            if (raised) raise(SIGPROF);
            else gpuprof__smp_handler(SIGPROF, NULL, &uc);
        }
        t1 = thread_cpu_ns();
    }
    gpuprof_shutdown();
    return (t1 - t0) / (double)n;
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
    (void)d;
    {
        double direct[RUNS], raised[RUNS], rate = taken[RUNS / 2] / (on[RUNS / 2] * 1e-9);
        for (i = 0; i < RUNS; i++) {
            direct[i] = per_sample(0);
            raised[i] = per_sample(1);
        }
        qsort(direct, RUNS, sizeof direct[0], cmp_double);
        qsort(raised, RUNS, sizeof raised[0], cmp_double);
        printf("a sample: the handler alone (a walk of this stack)  %10.1f ns  (%.1f .. %.1f)\n", direct[RUNS / 2], direct[0], direct[RUNS - 1]);
        printf("a sample: a signal raised and handled              %10.1f ns  (%.1f .. %.1f)\n", raised[RUNS / 2], raised[0], raised[RUNS - 1]);
        printf("so at %.0f samples per CPU second, the thread's CPU   %10.4f%%  (target <= 1%%)\n", rate, rate * raised[RUNS / 2] * 1e-9 * 100);
    }
    return 0;
}
