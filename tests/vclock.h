/* vclock.h -- TEST CODE. A virtual clock for gpuprof's timings, so that
   every figure a test checks is known. Include it before gpuprof.h (it
   defines GPUPROF_CLOCK_FN). In a CUDA build it is the simulated GPU's
   clock (tests/simcuda), which is also the host's there: GPU times and
   windows are known too. Else one clock for every thread, moving 1 ns per
   read. vsleep(ns): work of ns on it. */
#ifndef GPUPROF_TEST_VCLOCK_H
#define GPUPROF_TEST_VCLOCK_H
#include <stdint.h>
#ifdef GPUPROF_CUDA
#include "simcuda/simcuda.h"
#define GPUPROF_CLOCK_FN() simcuda_now()
static void vsleep(uint64_t ns) { simcuda_advance(ns); }
#else
static uint64_t vnow = 1000000;
static uint64_t test_clock(void) { return __atomic_add_fetch(&vnow, 1, __ATOMIC_RELAXED); }
#define GPUPROF_CLOCK_FN() test_clock()
static void vsleep(uint64_t ns) { __atomic_add_fetch(&vnow, ns, __ATOMIC_RELAXED); }
#endif
#endif
