/* fuzz_common.h -- what the libFuzzer targets share: a scratch directory,
   quiet gpuprof messages, JSON checks. A failed check calls abort(), which
   libFuzzer reports as a finding with the input that caused it. */
#ifndef GPUPROF_FUZZ_COMMON_H
#define GPUPROF_FUZZ_COMMON_H
#include <cjson/cJSON.h>
#define CHECK_NO_WORKDIR                 /* the fuzz directory holds the files */
#include "../check.h"                /* check_slurp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fuzz_dir[128];

#define FUZZ_CHECK(cond, what) do { if (!(cond)) { \
    fprintf(stdout, "fuzz check failed: %s (%s) at %s:%d\n", what, #cond, __FILE__, __LINE__); fflush(stdout); abort(); } } while (0)

/* gpuprof's one-line messages go to stderr through the FILE*: send them to
   /dev/null (libFuzzer and the sanitizers write to fd 2 directly). */
static void fuzz_setup(const char *name) {
    static int done;
    FILE *null;
    if (done) return;
    done = 1;
    snprintf(fuzz_dir, sizeof fuzz_dir, "/tmp/gpuprof_%s.%d", name, (int)getpid());
    mkdir(fuzz_dir, 0700);
    null = fopen("/dev/null", "w");
    if (null) stderr = null;
}

/* The file parses as JSON (or does not exist); returns the tree or NULL. */
static cJSON *fuzz_json(const char *path, const char *what) {
    char *text = check_slurp(path);
    cJSON *j;
    if (!text) return NULL;
    j = cJSON_Parse(text);
    if (!j) fprintf(stdout, "%s does not parse; it begins: %.200s\n", path, text);
    free(text);
    FUZZ_CHECK(j != NULL, what);
    return j;
}
#endif
