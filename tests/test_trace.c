/* The Chrome trace: valid JSON for any bytes in a name, properly nested
   complete events (also when a child starts in the same nanosecond as its
   parent), metadata, counters, marks and steps; and a run killed mid-way
   leaves a file the viewers still open.
   usage: test_trace CHECK_TRACE_PY        (the normal test)
          test_trace --die                 (internal: record, then SIGKILL self) */
#define GPUPROF_IMPLEMENTATION
static unsigned long long vnow = 5000;
#define GPUPROF_CLOCK_FN() vnow
#include "gpuprof.h"
#include "json_util.h"
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void die_mid_run(void) {
    gpuprof_config cfg = {0};
    struct stat st;
    long i;
    cfg.trace_path = "killed.trace.json";
    gpuprof_init(&cfg);
    for (i = 0;; i++) {
        { PROF_RANGE("outer"); vnow += 3; { PROF_RANGE("inner \"quoted\""); vnow += 5; } vnow += 2; }
        PROF_STEP();
        /* once a good part of the trace is on disk, die without any cleanup */
        if (i % 4096 == 0 && stat("killed.trace.json", &st) == 0 && st.st_size > 2000000) raise(SIGKILL);
    }
}

static void *thread_body(void *arg) {
    (void)arg;
    { PROF_RANGE("on a worker"); vnow += 1; }
    return NULL;
}

int main(int argc, char **argv) {
    static const char *const odd[] = {
        "quote \" and backslash \\", "newline\nand\ttab", "control \x01\x1f\x7f", "emoji \xf0\x9f\x9a\x80 ok",
        "invalid \xff\xfe utf8", "truncated \xe2\x82", "overlong \xc0\xaf", "surrogate \xed\xa0\x80", "", "</script>",
    };
    gpuprof_config cfg = {0};
    char cmd[2048];
    pthread_t th;
    cJSON *j;
    int i, status;
    char *text;
    if (argc > 1 && strcmp(argv[1], "--die") == 0) die_mid_run();
    if (argc < 2) { fprintf(stderr, "usage: test_trace CHECK_TRACE_PY\n"); return 2; }

    cfg.report = "off";
    cfg.trace_path = "trace.trace.json";
    gpuprof_init(&cfg);
    for (i = 0; i < 3; i++) {
        PROF_RANGE("step");                 /* the child starts at the same virtual time */
        { PROF_RANGE("forward"); { PROF_RANGE("matmul"); vnow += 100; } vnow += 10; }
        { PROF_RANGE("backward"); vnow += 200; }
        PROF_COUNTER("loss", 1.0 / (i + 1));
        PROF_MARK("checkpoint");
        vnow += 1;
        PROF_STEP();
    }
    for (i = 0; i < (int)(sizeof odd / sizeof odd[0]); i++) { PROF_RANGE_DYN(odd[i]); vnow += 1; }
    pthread_create(&th, NULL, thread_body, NULL);
    pthread_join(th, NULL);
    {
        /* a report mid-run says what the streaming trace holds so far: this
           thread's 3 steps x (4 ranges, a counter, a mark, a step) + the 10
           odd names are recorded, in its block, not written yet; the
           worker's one range went to the writer when it exited */
        FILE *f = fopen("trace.midrun.txt", "w");
        char *mid;
        gpuprof_report(f);
        fclose(f);
        mid = check_slurp("trace.midrun.txt");
        CHECK(mid && strstr(mid, "trace: trace.trace.json (streaming: ") && strstr(mid, " more recorded in buffers, none dropped)"),
              "a mid-run report's trace line says the trace is streaming and what is recorded so far");
        {
            unsigned long long written = 0, buffered = 0;
            const char *at = mid ? strstr(mid, "(streaming: ") : NULL;
            CHECK(at && sscanf(at, "(streaming: %llu events written so far, %llu more", &written, &buffered) == 2 &&
                  written + buffered == 32 && buffered >= 31,
                  "all 32 events so far are accounted for: this thread's 31 in its block, the worker's 1 written or queued (not \"0 events written\")");
        }
        free(mid);
    }
    CHECK(gpuprof_write_trace("trace.copy.json") == 0, "gpuprof_write_trace finishes the stream and copies it");
    gpuprof_shutdown();

    snprintf(cmd, sizeof cmd, "python3 %s trace.trace.json --threads 2 --expect-x %d --expect-name step --expect-name matmul "
             "--expect-name loss --expect-name checkpoint --expect-name 'step 2' --expect-name 'quote \" and backslash \\' "
             "--expect-name 'emoji \xf0\x9f\x9a\x80 ok' --expect-name 'on a worker'", argv[1], 3 * 4 + 10 + 1);
    CHECK(system(cmd) == 0, "the trace parses, nests, names every track and round-trips names");
    text = check_slurp("trace.trace.json");
    CHECK(text && strstr(text, "\"ts\":0.000,\"dur\":0.311}") && strstr(text, "\"ts\":0.001,\"dur\":0.109}"),
          "a child starting in its parent's nanosecond is moved 1 ns later so viewers nest it");
    CHECK(text && strstr(text, "invalid \\ufffd\\ufffd utf8") != NULL, "invalid UTF-8 bytes become U+FFFD");
    CHECK(text && strstr(text, "control \\u0001\\u001f\\u007f") != NULL, "control characters are escaped");
    {
        char *copy = check_slurp("trace.copy.json");
        CHECK(copy && text && strcmp(copy, text) == 0, "the copy equals the streamed trace");
        free(copy);
    }
    free(text);
    j = summary_load("trace.trace.json");
    CHECK(j && cJSON_IsArray(j), "cJSON parses the trace too: a JSON array of events");
    cJSON_Delete(j);

    /* killed mid-run: run ourselves with --die, then read what it left */
    if (fork() == 0) { execl(argv[0], argv[0], "--die", (char *)NULL); _exit(127); }
    wait(&status);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child was killed mid-run");
    snprintf(cmd, sizeof cmd, "python3 %s killed.trace.json --truncated --expect-name outer", argv[1]);
    CHECK(system(cmd) == 0, "the killed run's trace opens after the viewers' missing-bracket tolerance");
    return check_done("test_trace");
}
