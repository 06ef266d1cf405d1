/* check.h -- the tests' few assertions. Each check names what a user would
   notice if it broke; the program ends with "N passed, M failed". */
#ifndef GPUPROF_CHECK_H
#define GPUPROF_CHECK_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

static int check_passed, check_failed;

#define CHECK(cond, what) do { \
    if (cond) check_passed++; \
    else { check_failed++; fprintf(stderr, "FAIL %s:%d: %s\n      (%s)\n", __FILE__, __LINE__, what, #cond); } \
} while (0)

/* Whole numbers up to 2^53, as doubles so that a missing JSON field (NaN)
   fails cleanly instead of converting NaN to an integer. */
#define CHECK_EQ_U(got, want, what) do { \
    double g_ = (double)(got), w_ = (double)(want); \
    if (g_ == w_) check_passed++; \
    else { check_failed++; fprintf(stderr, "FAIL %s:%d: %s: got %.17g, want %.17g\n", __FILE__, __LINE__, what, g_, w_); } \
} while (0)

#define CHECK_REL(got, want, rel, what) do { \
    double g_ = (double)(got), w_ = (double)(want); \
    if (fabs(g_ - w_) <= (rel) * fabs(w_) || g_ == w_) check_passed++; \
    else { check_failed++; fprintf(stderr, "FAIL %s:%d: %s: got %.9g, want %.9g (rel err %.3g > %.3g)\n", \
                                   __FILE__, __LINE__, what, g_, w_, fabs(g_ - w_) / fabs(w_), (double)(rel)); } \
} while (0)

static inline int check_done(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
    return check_failed ? 1 : 0;
}

/* Sends stderr to `path` (what gpuprof prints, for a test to read) until
   check_stderr_back(the returned descriptor). */
static inline int check_stderr_to(const char *path) {
    int saved, fd;
    fflush(stderr);
    saved = dup(2);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
    return saved;
}
static inline void check_stderr_back(int saved) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

/* The whole of a small file, NUL-terminated (the caller frees it). */
static inline char *check_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = (char *)malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    if (buf) buf[n] = 0;
    fclose(f);
    return buf;
}
#endif
