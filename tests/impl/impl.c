/* impl.c -- TEST CODE. gpuprof's implementation, compiled once per
   configuration and linked into the tests (tests/CMakeLists.txt,
   gpuprof_impl; tests/fuzz/run.sh). A test includes gpuprof.h without
   GPUPROF_IMPLEMENTATION, and hooks.h for what it reads of the
   implementation's state. The configurations, chosen by a define:
     (none)              the real clock;
     GPUPROF_TEST_VNOW   a clock only the test moves (clock.h: vnow);
     GPUPROF_TEST_VTICK  the same, one nanosecond later at every read, shared
                         by all threads (clock.h: vsleep);
     GPUPROF_TEST_VTLS   one such clock per thread (clock.h: vnow_tls);
     GPUPROF_TEST_SIM    with GPUPROF_CUDA: the simulated CUDA runtime
                         (tests/simcuda) and its clock, so every GPU time is
                         known; GPUPROF_CUDA alone: the real libcudart;
     GPUPROF_TEST_ALLOC  gpuprof's allocations counted, one of them made to
                         fail (count_alloc.h);
   and the build's own switches and flags (GPUPROF_MPI, GPUPROF_NVTX,
   GPUPROF_NO_STB_SPRINTF, -Ofast, ThreadSanitizer, libFuzzer). */
#if defined(GPUPROF_TEST_SIM)
#define _GNU_SOURCE
#include "simcuda/simcuda.h"
#define GPUPROF_CLOCK_FN() simcuda_now()
#elif defined(GPUPROF_TEST_VNOW) || defined(GPUPROF_TEST_VTICK) || defined(GPUPROF_TEST_VTLS)
#include "clock.h"
#endif
#if defined(GPUPROF_TEST_ALLOC)
#define COUNT_ALLOC_DEFINE
#include "count_alloc.h"
#endif
#define GPUPROF_IMPLEMENTATION
#include "gpuprof.h"
#include "hooks.h"

#if defined(GPUPROF_TEST_VNOW) || defined(GPUPROF_TEST_VTICK)
unsigned long long vnow = 1000000;
#elif defined(GPUPROF_TEST_VTLS)
__thread unsigned long long vnow_tls = 1000000;
unsigned long long vtls_clock(void) { return ++vnow_tls; }
#endif
#if defined(GPUPROF_TEST_VTICK)
unsigned long long vtick_clock(void) { return __atomic_add_fetch(&vnow, 1, __ATOMIC_RELAXED); }
#endif

/* The hooks (hooks.h). */
#if !defined(GPUPROF_DISABLE)
void impl_clock_swap(unsigned long long *mult, unsigned long long *same_ns_ticks) {
    unsigned long long m = gpuprof__clock.mult, s = gpuprof__clock.same_ns_ticks;
    gpuprof__clock.mult = *mult;
    gpuprof__clock.same_ns_ticks = *same_ns_ticks;
    *mult = m;
    *same_ns_ticks = s;
}
int impl_path_expand(const char *in, char *out, size_t n) { return gpuprof__path_expand(in, out, n); }
int impl_trace_is_perfetto(const char *path) { return gpuprof__trace_format(path) == GPUPROF__FMT_PERFETTO; }
void impl_stats_count(gpuprof_stats *s, double x, unsigned count) { gpuprof__stats_count_key(s, gpuprof__key(x), count); }
int impl_key_ns_agrees(double ns) { return gpuprof__key_ns(ns) == gpuprof__key(ns); }
void impl_stats_add_ns(gpuprof_stats *s, unsigned long long ns) { gpuprof__stats_add_ns(s, ns); }
int impl_live(void) { return __atomic_load_n(&gpuprof__g.live, __ATOMIC_RELAXED) != 0; }
#if GPUPROF__DEVICE
int impl_dev_on(void) { return GPUPROF__LDA(&gpuprof__dev.on) != 0; }
void impl_dev_every_ms(double ms) { gpuprof__dev.every_ms = ms; }
void impl_dev_sample(void) { gpuprof__dev_sample(); }
#endif
#if GPUPROF__METRICS
void impl_checkpoint(void) { gpuprof__checkpoint(); }
#endif
#endif
