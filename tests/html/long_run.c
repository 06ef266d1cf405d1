/* long_run.c -- a loop of N steps of three ranges, for the page's test
   (tests/html/page.sh): 20 000 steps for its size bound, or slow steps
   (--sleep-us) for a run killed after its checkpoints. A validation range
   every 500 steps gives the step over the run a kind of step set apart.
   usage: long_run STEPS [--sleep-us N] */
#define _GNU_SOURCE
#include "gpuprof.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile double sink;

static void work(int n) {
    double a = 0;
    for (int i = 0; i < n; i++) a += (double)i * 1e-9;
    sink = a;
}

int main(int argc, char **argv) {
    long steps = argc > 1 ? atol(argv[1]) : 1000, i;
    int sleep_us = argc > 3 && !strcmp(argv[2], "--sleep-us") ? atoi(argv[3]) : 0;
    for (i = 0; i < steps; i++) {
        { PROF_RANGE("data"); work(200); }
        { PROF_RANGE("forward"); work(2000); }
        { PROF_RANGE("backward"); work(4000); if (sleep_us) usleep((useconds_t)sleep_us); }
        if (i % 500 == 499) { PROF_RANGE("validate"); work(40000); }
        PROF_STEP();
    }
    printf("long_run: %ld steps\n", steps);
    return 0;
}
