/* vnow.h -- TEST CODE. The clock of the tests linked with the "vnow"
   implementation (impl.c): virtual nanoseconds, which only the test moves
   (vnow += 100 is 100 ns of work), starting at 1 ms. */
#ifndef GPUPROF_TEST_VNOW_H
#define GPUPROF_TEST_VNOW_H
extern unsigned long long vnow;
#endif
