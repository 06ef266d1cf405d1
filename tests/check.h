/* check.h -- the tests' few assertions. Each check names what a user would
   notice if it broke; the program ends with "N passed, M failed".

   A test writes its files into a fresh directory of its own under $TMPDIR
   (or /tmp), whatever directory it is started from: before main() it moves
   there, making the paths it was given absolute first. The directory is
   removed at exit when every check passed, and kept (and named) when one
   failed. Children the test starts (fork, exec) stay in it. The fuzzers,
   whose files have a directory of their own, define CHECK_NO_WORKDIR. */
#ifndef GPUPROF_CHECK_H
#define GPUPROF_CHECK_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>

static int check_passed, check_failed;

#ifndef CHECK_NO_WORKDIR
static char check_workdir[PATH_MAX];
static int check_workdir_owner;

static void check_rm_tree(const char *path) {
    DIR *d = opendir(path);
    struct dirent *e;
    char sub[PATH_MAX];
    struct stat st;
    while (d && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) check_rm_tree(sub);
        else remove(sub);
    }
    if (d) closedir(d);
    remove(path);
}

static void check_leave_workdir(void) {
    if (!check_workdir[0] || getpid() != check_workdir_owner) return;   /* a forked child exiting */
    if (check_failed) { fprintf(stderr, "check: this run's files are kept in %s\n", check_workdir); return; }
    if (chdir("/") == 0) check_rm_tree(check_workdir);
}

/* glibc passes main's arguments to constructors: relative paths among
   them (the test's own name, the checker scripts) still work after the move. */
__attribute__((constructor)) static void check_enter_workdir(int argc, char **argv) {
    const char *tmp = getenv("TMPDIR");
    char resolved[PATH_MAX];
    int i;
    for (i = 0; argv && i < argc; i++) {
        struct stat st;
        if (argv[i] && argv[i][0] != '/' && strchr(argv[i], '/') && stat(argv[i], &st) == 0 && realpath(argv[i], resolved))
            argv[i] = strdup(resolved);
    }
    if (getenv("CHECK_WORKDIR")) return;                /* started by a test: already in its directory */
    snprintf(check_workdir, sizeof check_workdir, "%s/gpuprof-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(check_workdir) || chdir(check_workdir) != 0) {
        fprintf(stderr, "check: cannot make a directory for this test's files (%s); stopping\n", check_workdir);
        exit(2);
    }
    setenv("CHECK_WORKDIR", check_workdir, 1);
    check_workdir_owner = (int)getpid();
    atexit(check_leave_workdir);
}
#endif

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
