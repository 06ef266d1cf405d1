/* sample_lib.c -- TEST CODE: a function in a shared library of its own,
   for tests/test_samples.c (CPU samples name the module of a function
   outside the main program) and tests/test_hang.c (libraries unloaded
   before the report; stripped libraries, with and without a debug file). */
#include <stdint.h>

#if defined(SAMPLE_LIB_OTHER)         /* libsample_other.so: the same code under another name (tests/test_hang.c) */
#define sample_lib_hash sample_lib_other
#elif defined(SAMPLE_LIB_STRIPPED)    /* libsample_dbg.so, libsample_bare.so: the work in a static function, which only
                                         the debug file names (its .symtab put apart: objcopy --only-keep-debug) */
#define sample_lib_hash sample_lib_stripped
__attribute__((noinline)) static uint64_t sample_lib_work(uint64_t n) {
    volatile uint64_t h = 1469598103934665603ull;
    uint64_t i;
    for (i = 0; i < n; i++) h = (h ^ i) * 1099511628211ull;
    return h;
}
#endif

uint64_t sample_lib_hash(uint64_t n);
uint64_t sample_lib_hash(uint64_t n) {
#if defined(SAMPLE_LIB_STRIPPED)
    return sample_lib_work(n) + n;    /* not a tail call: this function stays on the stack */
#else
    volatile uint64_t h = 1469598103934665603ull;
    uint64_t i;
    for (i = 0; i < n; i++) h = (h ^ i) * 1099511628211ull;
    return h;
#endif
}
