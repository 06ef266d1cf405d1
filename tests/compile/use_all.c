/* Uses every macro and function, with the implementation in this file:
   compiled in every dialect of the matrix (C99/C11/C++11/C++17, gcc/clang,
   -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow
   -Wdouble-promotion -Werror, with and without GPUPROF_DISABLE and
   stb_sprintf), together with other_tu.c, and run. */
#define GPUPROF_IMPLEMENTATION
#include "gpuprof.h"

/* The header leaves the C library as this file asked for it: no feature
   macro of its own (in C++, g++ defines _GNU_SOURCE itself), so strict C
   stays strict for the user's code. */
#if !defined(__cplusplus) && defined(_GNU_SOURCE)
#error "gpuprof.h defined _GNU_SOURCE for the file that includes it"
#endif
#if !defined(__cplusplus) && defined(__STRICT_ANSI__) && defined(__GLIBC__) && (defined(__USE_POSIX) || defined(__USE_MISC))
#error "gpuprof.h turned POSIX or BSD declarations on in a strict C file"
#endif

int other_tu_step(int i);

static double loss_of(int i) { return 1.0 / (double)(i + 1); }

static void forward(int i) {
    PROF_FUNC();
    { PROF_RANGE("matmul"); (void)i; }
    { PROF_RANGE("matmul"); }                   /* two ranges on one line would also work */
    { PROF_RANGE_WORK("gemm", 2.0 * 64 * 64 * 64, 3.0 * 64 * 64 * 4); }
}

int main(void) {
    gpuprof_config cfg;
    gpuprof_stats s;
    char name[32];
    int i, rc = 0;
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    rc |= gpuprof_init(&cfg);
    gpuprof_set_stream(0);
    for (i = 0; i < 4; i++) {
        GPUPROF_RANGE("step");
        forward(i);
        snprintf(name, sizeof name, "layer %d", i);
        { PROF_RANGE_DYN(name); }
        PROF_BEGIN("explicit");
        PROF_END();
        { PROF_RANGE_STREAM("on a stream", 0); }    /* 0: this file's default stream */
        GPUPROF_BEGIN_STREAM("explicit on a stream", 0);
        GPUPROF_END();
        PROF_COUNTER("loss", loss_of(i));
        PROF_MARK("mark");
        gpuprof_mem_alloc(name, sizeof name, "names");
        PROF_MEM("after forward");
        GPUPROF_MEM("after forward");
        gpuprof_mem_snapshot(name);
        gpuprof_mem_free(name);
        other_tu_step(i);
        GPUPROF_STEP();
    }
    gpuprof_flush();
    gpuprof_set_enabled(0);
    gpuprof_set_enabled(1);
    gpuprof_reset();
    gpuprof_mem_reset_peaks();
    gpuprof_stats_init(&s);
    gpuprof_stats_add(&s, 1.0);
    gpuprof_stats_add(&s, 3.0);
    if (gpuprof_stats_count(&s) != 2 || gpuprof_stats_mean(&s) != 2.0) return 1;
    (void)gpuprof_stats_quantile(&s, 0.5);
    rc |= gpuprof_report(stdout) != 0 && 0;
    gpuprof_shutdown();
    return rc;
}
