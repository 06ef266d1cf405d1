/* clock.h -- TEST CODE. The virtual clocks of the implementation's test
   configurations (impl.c), in nanoseconds, starting at 1 ms:
     GPUPROF_TEST_VNOW   vnow, which only the test moves (vnow += 100 is
                         100 ns of work);
     GPUPROF_TEST_VTICK  vnow too, one nanosecond later at every read and
                         shared by all threads; vsleep(ns) moves it;
     GPUPROF_TEST_VTLS   vnow_tls, one per thread, one nanosecond later at
                         every read of its thread's. */
#ifndef GPUPROF_TEST_CLOCK_H
#define GPUPROF_TEST_CLOCK_H
#if defined(GPUPROF_TEST_VNOW)
extern unsigned long long vnow;
#define GPUPROF_CLOCK_FN() vnow
#elif defined(GPUPROF_TEST_VTICK)
extern unsigned long long vnow;
unsigned long long vtick_clock(void);
#define GPUPROF_CLOCK_FN() vtick_clock()
static inline void vsleep(unsigned long long ns) { __atomic_add_fetch(&vnow, ns, __ATOMIC_RELAXED); }
#elif defined(GPUPROF_TEST_VTLS)
extern __thread unsigned long long vnow_tls;
unsigned long long vtls_clock(void);
#define GPUPROF_CLOCK_FN() vtls_clock()
#endif
#endif
