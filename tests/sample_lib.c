/* sample_lib.c -- TEST CODE: a function in a shared library of its own,
   for tests/test_samples.c (CPU samples name the module of a function
   outside the main program). */
#include <stdint.h>

#ifdef SAMPLE_LIB_OTHER               /* libsample_other.so: the same code under another name (tests/test_hang.c) */
#define sample_lib_hash sample_lib_other
#endif

uint64_t sample_lib_hash(uint64_t n);
uint64_t sample_lib_hash(uint64_t n) {
    volatile uint64_t h = 1469598103934665603ull;
    uint64_t i;
    for (i = 0; i < n; i++) h = (h ^ i) * 1099511628211ull;
    return h;
}
