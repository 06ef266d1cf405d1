/* impl.c -- TEST CODE. gpuprof's implementation, compiled once per
   configuration and linked into every test that needs nothing else of it
   (tests/CMakeLists.txt, gpuprof_impl; such a test includes gpuprof.h
   without GPUPROF_IMPLEMENTATION). The configurations:
     plain  the CPU build on the real clock;
     vnow   the CPU build on a clock the test moves (vnow.h);
     sim    the CUDA build against the simulated runtime (tests/simcuda),
            on its clock, so that every GPU time is known.
   Each has a ThreadSanitizer build for the tests run under it. */
#if defined(GPUPROF_TEST_VNOW)
#include "vnow.h"
unsigned long long vnow = 1000000;
#define GPUPROF_CLOCK_FN() vnow
#elif defined(GPUPROF_CUDA)
#define _GNU_SOURCE
#include "simcuda/simcuda.h"
#define GPUPROF_CLOCK_FN() simcuda_now()
#endif
#define GPUPROF_IMPLEMENTATION
#include "gpuprof.h"
