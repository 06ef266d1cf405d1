/* copy_lib.c -- TEST CODE: a shared library with a copy of gpuprof's
   implementation of its own (a careless build: the program defines it too),
   for tests/test_hostile.c. Its ranges go to its own files when the program
   has a copy; unloaded, it leaves no signal handler, timer or thread. */
#define GPUPROF_IMPLEMENTATION
#include "gpuprof.h"
#include <time.h>

static double copy_lib_cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* secs of CPU time in the library's range "lib_work". */
double copy_lib_work(double secs);
double copy_lib_work(double secs) {
    volatile double x = 1;
    double until = copy_lib_cpu_s() + secs;
    PROF_RANGE("lib_work");
    while (copy_lib_cpu_s() < until) {
        int i;
        for (i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9;
    }
    return x;
}
