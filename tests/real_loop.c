/* real_loop.c -- a loop in the shapes of karpathy's llama2.c (a range that
   wraps the step, phases inside it) and llm.c (OpenMP loops in a function,
   a validation step every 10), for the advice on real loops (issue 57):
   built as llm.c builds its trainer, -O2 -fopenmp, frame pointers kept.

   Each step, "forward" wraps:
     "attention"   a small OpenMP matmul; in outlier steps (every 12th, from
                   step 7) it runs 8x longer in "rope", a range inside it;
     "ffn"         starts 4 threads that record no range, each a few ms of
                   CPU, and joins them: the stepping thread waits in it;
     "classifier"  the bottleneck: classifier_matmul's two OpenMP loops
                   (classifier_matmul._omp_fn.0 and .1, 31% each with one
                   thread) and softmax_rows' one (38%): counted in pieces,
                   softmax_rows would look the largest;
     "io"          a 2 ms nanosleep: off the CPU, not CPU-bound.
   then "sample" (outside it: the clock read in a loop, in the vDSO);
   every 10th step also "eval".

       OMP_NUM_THREADS=1 GPUPROF_SAMPLE=1 ./build/tests/real_loop [STEPS [SCALE [SUMMARY]]]
       ./build/tests/real_loop busier


   SCALE (1) multiplies every phase's work and sleep: a run at 5 has a 5x
   longer typical step. Writes SUMMARY (real_loop.summary.json) in the
   working directory. */
#define _GNU_SOURCE                       /* sched_setaffinity: the "busier" mode */
#include "gpuprof.h"             /* linked with the implementation's "plain" configuration */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { N = 96 };
static float a[N * N], b[N * N], c[N * N], d[N * N], e[N * N];
static int scale = 1;

/* busy work: reps passes over the rows, a chain of dependent adds each
   (no -ffast-math: nothing can be reordered away); about 14 us a pass */
static float __attribute__((noinline)) spin_rows(const float *x, int reps) {
    float s = 0;
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) s += x[i * N + j] * 1.0001f;
    return s;
}

/* one OpenMP loop over the rows: each row's dependent chain, reps times */
#define ROWS_LOOP(out, x, y, reps)                                            \
    _Pragma("omp parallel for")                                               \
    for (int i = 0; i < N; i++) {                                             \
        float acc = out[i];                                                   \
        for (int r = 0; r < (reps); r++)                                      \
            for (int j = 0; j < N; j++) acc += x[i * N + j] * y[j * N + i];   \
        out[i] = acc * 1e-6f;                                                 \
    }

/* every loop reads the same inputs the same way: their time is their passes' */
static void __attribute__((noinline)) attention(int reps) { ROWS_LOOP(c, a, b, reps) }

/* two parallel loops: gcc outlines them as classifier_matmul._omp_fn.0 and .1 */
static void __attribute__((noinline)) classifier_matmul(int reps) {
    ROWS_LOOP(d, a, b, reps)
    ROWS_LOOP(e, a, b, reps)
}

static void __attribute__((noinline)) softmax_rows(int reps) { ROWS_LOOP(e, a, b, reps) }

static void *ffn_worker(void *arg) {
    static float sink[4];
    int k = (int)(size_t)arg;
    sink[k] += spin_rows(a, 60 * scale);
    return NULL;
}

static void ffn(void) {
    pthread_t t[4];
    int k;
    for (k = 0; k < 4; k++) pthread_create(&t[k], NULL, ffn_worker, (void *)(size_t)k);
    for (k = 0; k < 4; k++) pthread_join(t[k], NULL);
}

/* n reads of the clock: the vDSO's clock_gettime, a function with no file */
static float __attribute__((noinline)) clock_reads(int n) {
    struct timespec ts;
    long x = 0;
    for (int k = 0; k < n; k++) { clock_gettime(CLOCK_MONOTONIC, &ts); x += ts.tv_nsec & 1; }
    return (float)x * 1e-9f;
}

static void io_wait(void) {
    struct timespec ts = { 0, 2000000L * scale };
    nanosleep(&ts, NULL);
}

/* "busier": the same 3 ms of work a step on one CPU, and from the middle of
   the run four threads that spin on that CPU too: the step time rises
   because the stepping thread is preempted, not because its code got
   slower (the drift line must say so). */
static volatile int spinning = 1;
static void *spinner(void *arg) {
    float x = 0;
    (void)arg;
    while (spinning) x += spin_rows(a, 1);
    return NULL;
}

static int busier(void) {
    gpuprof_config cfg = { 0 };
    cpu_set_t one, mine;
    pthread_t th[4];
    int s, k, c = 0;
    float sum = 0;
    if (sched_getaffinity(0, sizeof mine, &mine) == 0)      /* the first CPU this process may run on */
        while (c < CPU_SETSIZE - 1 && !CPU_ISSET(c, &mine)) c++;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) { perror("real_loop: sched_setaffinity"); return 1; }
    cfg.summary_path = "busier.summary.json";
    cfg.process_name = "real_loop busier";
    gpuprof_init(&cfg);
    for (s = 1; s <= 200; s++) {
        if (s == 100)
            for (k = 0; k < 4; k++) pthread_create(&th[k], NULL, spinner, NULL);
        { PROF_RANGE("work"); sum += spin_rows(b, 470); }
        PROF_STEP();
    }
    spinning = 0;
    for (k = 0; k < 4; k++) pthread_join(th[k], NULL);
    printf("real_loop busier: checksum %.3f\n", (double)sum);
    return 0;
}

int main(int argc, char **argv) {
    gpuprof_config cfg = { 0 };
    int steps = argc > 1 ? atoi(argv[1]) : 300, s, i;
    float sum = 0;
    if (argc > 1 && !strcmp(argv[1], "busier")) return busier();
    scale = argc > 2 && atoi(argv[2]) > 0 ? atoi(argv[2]) : 1;
    for (i = 0; i < N * N; i++) {
        a[i] = (float)((unsigned)i * 7919u % 1000u) / 1000.0f;
        b[i] = (float)((unsigned)i * 104729u % 1000u) / 1000.0f;
    }
    cfg.summary_path = argc > 3 ? argv[3] : "real_loop.summary.json";
    cfg.process_name = "real_loop";
    gpuprof_init(&cfg);
    for (s = 1; s <= steps; s++) {
        {
            PROF_RANGE("forward");
            {
                PROF_RANGE("attention");
                attention(40 * scale);
                if (s % 12 == 7) { PROF_RANGE("rope"); attention(6500 * scale); }
            }
            { PROF_RANGE("ffn"); ffn(); }
            { PROF_RANGE("classifier"); classifier_matmul(330 * scale); softmax_rows(400 * scale); }
            { PROF_RANGE("io"); io_wait(); }
        }
        { PROF_RANGE("sample"); sum += spin_rows(d, 7); sum += clock_reads(20000); }
        if (s % 10 == 0) { PROF_RANGE("eval"); sum += spin_rows(c, 200 * scale); }
        PROF_STEP();
    }
    printf("real_loop: %d steps at scale %d, checksum %.3f\n", steps, scale, (double)sum);
    return 0;
}
