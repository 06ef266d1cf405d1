/* vclock.h -- TEST CODE. The virtual clock of a test linked with the
   implementation's "vtick" configuration, or in a CUDA build its "sim"
   one (impl/impl.c), so that every figure the test checks is known:
   the simulated GPU's clock (tests/simcuda), which is also the host's
   there, so GPU times and windows are known too; else one clock for every
   thread, moving 1 ns per read. vsleep(ns): work of ns on it. */
#ifndef GPUPROF_TEST_VCLOCK_H
#define GPUPROF_TEST_VCLOCK_H
#include <stdint.h>
#ifdef GPUPROF_CUDA
#include "simcuda/simcuda.h"
static void vsleep(uint64_t ns) { simcuda_advance(ns); }
#else
#include "impl/clock.h"
#endif
#endif
