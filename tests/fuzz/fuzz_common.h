/* fuzz_common.h -- what the libFuzzer targets share: a scratch directory,
   quiet gpuprof messages, JSON and Perfetto trace checks. A failed check calls abort(), which
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

/* A Perfetto trace (a .pftrace name) is whole packets -- byte 0x0a, a
   varint length, that many bytes -- from its first byte to its last, and its
   last packet says what it holds; 1 when the file exists and is one. */
static int fuzz_pftrace(const char *path, const char *what) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long size, i = 0, last = -1;
    int ok = 1;
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = (unsigned char *)malloc((size_t)size + 1);
    FUZZ_CHECK(buf && fread(buf, 1, (size_t)size, f) == (size_t)size, "the trace is read back");
    fclose(f);
    while (ok && i < size) {
        unsigned long long len = 0;
        int shift = 0;
        long j = i + 1;
        if (buf[i] != 0x0a) { ok = 0; break; }
        while (j < size && (buf[j] & 0x80) && shift < 63) { len |= (unsigned long long)(buf[j] & 0x7f) << shift; shift += 7; j++; }
        if (j >= size) { ok = 0; break; }
        len |= (unsigned long long)buf[j++] << shift;
        if (len > (unsigned long long)(size - j)) { ok = 0; break; }
        last = j;
        i = j + (long)len;
    }
    if (ok) {
        long k;
        for (ok = 0, k = last; k >= 0 && k + 8 <= size && !ok; k++) ok = memcmp(buf + k, "gpuprof ", 8) == 0;
    }
    if (!ok) fprintf(stdout, "%s is not whole packets ending with gpuprof's label (%ld bytes)\n", path, size);
    free(buf);
    FUZZ_CHECK(ok, what);
    return 1;
}
#endif
