/* Bad input (SPEC 11): each misuse prints one "gpuprof:" line however often
   it happens, is counted in the summary, and the program goes on. */
#include "gpuprof.h"
#include "json_util.h"
#include <sys/stat.h>
#include <unistd.h>

static int saved_stderr = -1;
static void capture_begin(void) {
    FILE *f = fopen("misuse.stderr", "w");
    fflush(stderr);
    saved_stderr = dup(2);
    dup2(fileno(f), 2);
    fclose(f);
}
static char *capture_end(void) {
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    return check_slurp("misuse.stderr");
}
static int count_lines(const char *text, const char *prefix) {
    int n = 0;
    const char *p = text;
    while (p && *p) {
        if (strncmp(p, prefix, strlen(prefix)) == 0) n++;
        p = strchr(p, '\n');
        if (p) p++;
    }
    return n;
}

static cJSON *start(gpuprof_config *cfg) {
    cfg->report = "off";
    capture_begin();
    gpuprof_init(cfg);
    return NULL;
}

/* Ends the session: writes the summary, returns it; *err gets stderr. */
static cJSON *finish(char **err) {
    gpuprof_write_summary("misuse.summary.json");
    gpuprof_shutdown();
    *err = capture_end();
    return summary_load("misuse.summary.json");
}

static double warning(cJSON *j, const char *key) { return jnum(cJSON_GetObjectItem(j, "warnings"), key); }

static int depth_left, begin_at_bottom;
static void recurse(void) {
    PROF_RANGE("recursive");
    if (--depth_left > 0) recurse();
    else if (begin_at_bottom) PROF_BEGIN("left open at the bottom");
}

int main(int argc, char **argv) {
    gpuprof_config cfg;
    cJSON *j;
    char *err, *huge;
    int i, rc;

    /* END without BEGIN, three times: one message, three counted */
    memset(&cfg, 0, sizeof cfg); start(&cfg);
    PROF_END(); PROF_END(); PROF_END();
    { PROF_RANGE("after"); }
    j = finish(&err);
    CHECK(count_lines(err, "gpuprof:") == 1 && strstr(err, "GPUPROF_END() with no open range"), "END without BEGIN: one line");
    CHECK_EQ_U(warning(j, "end_without_begin"), 3, "END without BEGIN: counted 3 times");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "after"), "count"), 1, "END without BEGIN: later ranges still work");
    cJSON_Delete(j); free(err);

    /* a scoped range ends while a BEGIN inside it is open; an END meant for a scoped range */
    memset(&cfg, 0, sizeof cfg); start(&cfg);
    { PROF_RANGE("outer"); PROF_BEGIN("inner"); }
    { PROF_RANGE("scoped"); PROF_END(); }
    j = finish(&err);
    CHECK(strstr(err, "\"outer\" ended while \"inner\""), "mismatched nesting: one line naming both ranges");
    CHECK(count_lines(err, "gpuprof:") == 2 && strstr(err, "GPUPROF_END() would close the scoped range \"scoped\""),
          "and the END meant for a scoped range has its own line (a second message of the kind)");
    CHECK_EQ_U(warning(j, "mismatched_nesting"), 2, "mismatched nesting: both cases counted");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "inner"), "count"), 1, "mismatched nesting: the inner range is closed with the outer");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "scoped"), "count"), 1, "a stray END does not close a scoped range early");
    CHECK(summary_path(j, "outer/inner") != NULL, "mismatched nesting: the tree keeps inner under outer");
    cJSON_Delete(j); free(err);

    /* NULL, empty, huge and odd-byte names */
    memset(&cfg, 0, sizeof cfg); start(&cfg);
    huge = (char *)malloc(100001);
    memset(huge, 'x', 100000); huge[100000] = 0;
    for (i = 0; i < 3; i++) { PROF_RANGE_DYN(NULL); }
    { PROF_RANGE_DYN(""); }
    { PROF_RANGE_DYN(huge); }
    { PROF_RANGE_DYN("\xff\"odd\\\n"); }
    { PROF_RANGE_DYN("\xe5\x90\x8d\xe5\x89\x8d wide"); }        /* two CJK characters, 2 columns each */
    {
        FILE *f = fopen("misuse.report.txt", "w");
        gpuprof_report(f);
        fclose(f);
    }
    j = finish(&err);
    if (argc > 1) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "python3 %s misuse.report.txt --expect '?\"odd\\?' --expect '\xe5\x90\x8d\xe5\x89\x8d wide'", argv[1]);
        CHECK(system(cmd) == 0, "odd names in the report: valid UTF-8, '?' for control and invalid bytes, wide characters keep the columns aligned");
    }
    CHECK(count_lines(err, "gpuprof:") == 2, "bad names: one line for NULL/empty, one for the huge name");
    CHECK_EQ_U(warning(j, "bad_name"), 4, "NULL and empty names counted");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "(null)"), "count"), 3, "a NULL name is recorded as (null)");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "(empty)"), "count"), 1, "an empty name is recorded as (empty)");
    huge[GPUPROF_NAME_MAX] = 0;
    CHECK(summary_find(j, "ranges", huge) != NULL, "a huge name is cut to GPUPROF_NAME_MAX bytes");
    CHECK(summary_find(j, "ranges", "\xef\xbf\xbd\"odd\\\n") != NULL, "odd bytes: quotes, backslash, newline round-trip; invalid UTF-8 becomes U+FFFD");
    free(huge);
    cJSON_Delete(j); free(err);

    /* NaN and infinite counter values */
    memset(&cfg, 0, sizeof cfg); start(&cfg);
    PROF_COUNTER("loss", NAN); PROF_COUNTER("loss", INFINITY); PROF_COUNTER("loss", 0.5);
    PROF_COUNTER("huge", 1e300); PROF_COUNTER("huge", -1e300);
    j = finish(&err);
    CHECK(jnum(summary_find(j, "counters", "huge"), "max") == 1e300, "huge finite counter values are written as numbers");
    CHECK(count_lines(err, "gpuprof:") == 1 && strstr(err, "counter \"loss\" was given NaN"), "NaN counter: one line naming the counter");
    CHECK_EQ_U(warning(j, "bad_counter_value"), 2, "NaN/inf counter values counted");
    CHECK_EQ_U(jnum(summary_find(j, "counters", "loss"), "count"), 1, "the finite sample is kept");
    CHECK_EQ_U(jnum(summary_find(j, "counters", "loss"), "rejected"), 2, "the NaN/inf samples are rejected");
    cJSON_Delete(j); free(err);

    /* init twice */
    memset(&cfg, 0, sizeof cfg); start(&cfg);
    rc = gpuprof_init(&cfg);
    j = finish(&err);
    CHECK(rc != 0 && count_lines(err, "gpuprof:") == 1 && strstr(err, "already running"), "init twice: non-zero and one line");
    CHECK_EQ_U(warning(j, "double_init"), 1, "init twice: counted");
    cJSON_Delete(j); free(err);

    /* ranges open at shutdown, then use after shutdown */
    memset(&cfg, 0, sizeof cfg);
    cfg.summary_path = "misuse.shutdown.json";
    start(&cfg);
    PROF_BEGIN("left open");
    gpuprof_shutdown();
    { PROF_RANGE("too late"); }
    { PROF_RANGE("too late"); }
    PROF_STEP();
    rc = gpuprof_report(stdout);
    err = capture_end();
    CHECK(strstr(err, "1 range was still open at shutdown (innermost \"left open\")") != NULL, "open at shutdown: named");
    CHECK(count_lines(err, "gpuprof:") == 3 && strstr(err, "a range, counter or step after gpuprof_shutdown() is ignored"),
          "use after shutdown: one line for all the late ranges and steps");
    CHECK(strstr(err, "gpuprof_report() after gpuprof_shutdown() does nothing") != NULL,
          "and one for the report after shutdown: another message of the same kind is not swallowed");
    CHECK(rc != 0, "gpuprof_report after shutdown returns non-zero");
    j = summary_load("misuse.shutdown.json");
    CHECK_EQ_U(warning(j, "open_at_shutdown"), 1, "open at shutdown: counted in the summary written at shutdown");
    cJSON_Delete(j); free(err);

    /* two ranges open at shutdown: the line is printed, naming the innermost, and both counted */
    memset(&cfg, 0, sizeof cfg);
    cfg.summary_path = "misuse.two_open.json";
    start(&cfg);
    PROF_BEGIN("outer left open");
    PROF_BEGIN("inner left open");
    gpuprof_shutdown();
    err = capture_end();
    CHECK(strstr(err, "2 ranges were still open at shutdown (innermost \"inner left open\") are not counted") != NULL,
          "two ranges open at shutdown: one line, naming the innermost");
    j = summary_load("misuse.two_open.json");
    CHECK_EQ_U(warning(j, "open_at_shutdown"), 2, "two ranges open at shutdown: both counted");
    cJSON_Delete(j); free(err);

    /* bad settings in the environment */
    setenv("GPUPROF_WARMUP", "abc", 1);
    setenv("GPUPROF_SCHEDULE", "wait=x", 1);
    memset(&cfg, 0, sizeof cfg); start(&cfg);
    for (i = 0; i < 3; i++) { PROF_RANGE("work"); PROF_STEP(); }
    j = finish(&err);
    unsetenv("GPUPROF_WARMUP");
    unsetenv("GPUPROF_SCHEDULE");
    CHECK(strstr(err, "GPUPROF_WARMUP='abc' is not a whole number") != NULL, "bad GPUPROF_WARMUP: says what is wrong");
    CHECK_EQ_U(warning(j, "bad_setting"), 2, "bad settings counted");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "work"), "count"), 3, "bad settings: defaults apply, every step recorded");
    cJSON_Delete(j); free(err);

    /* slow-step capture asked of every step (K <= 1) and for more files than are kept (CAPTURE_MAX over 64) */
    setenv("GPUPROF_CAPTURE_SLOW", "0.5", 1);
    setenv("GPUPROF_CAPTURE_MAX", "1000", 1);
    memset(&cfg, 0, sizeof cfg); start(&cfg);
    for (i = 0; i < 30; i++) { PROF_RANGE("work"); PROF_STEP(); }
    j = finish(&err);
    unsetenv("GPUPROF_CAPTURE_SLOW");
    unsetenv("GPUPROF_CAPTURE_MAX");
    CHECK(strstr(err, "GPUPROF_CAPTURE_SLOW=0.5: a slow step is longer than the median, so it must be above 1; no step is captured") != NULL,
          "GPUPROF_CAPTURE_SLOW=0.5: one line says why nothing is captured");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "captures")) == 0, "GPUPROF_CAPTURE_SLOW=0.5: no capture");
    cJSON_Delete(j); free(err);

    /* checkpoints asked for once every 10^300 s (cfg.summary_every): held to 10^6 s (in ns, a
       64-bit number; under UBSan the conversion was an error), the summary written at the end */
    memset(&cfg, 0, sizeof cfg);
    cfg.summary_every = 1e300;
    cfg.summary_path = "every.summary.json";
    start(&cfg);
    for (i = 0; i < 3; i++) { PROF_RANGE("work"); PROF_STEP(); }
    j = finish(&err);
    cJSON_Delete(j); free(err);
    j = summary_load("every.summary.json");
    CHECK(j && cJSON_IsTrue(cJSON_GetObjectItem(j, "complete")) && jnum(summary_find(j, "ranges", "work"), "count") == 3,
          "checkpoints every 1e300 s: none before the end; the summary at exit is complete");
    cJSON_Delete(j);

    /* output files that cannot be written */
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_ring_mb = -1;             /* no flight recorder either */
    start(&cfg);
    { PROF_RANGE("work"); }
    CHECK(gpuprof_write_summary("/nonexistent-dir/s.json") != 0, "summary into a missing directory: non-zero");
    CHECK(gpuprof_write_summary("/dev/full") != 0, "summary onto a full disk (/dev/full): non-zero");
    CHECK(gpuprof_report(NULL) != 0, "gpuprof_report(NULL): non-zero");
    CHECK(gpuprof_write_trace("x.json") != 0, "write_trace without a trace file or flight recorder: non-zero");
    j = finish(&err);
    CHECK(strstr(err, "cannot open '/nonexistent-dir/s.json' for the summary: No such file or directory") != NULL,
          "unwritable path: the message names the path and the reason");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "work"), "count"), 1, "failed outputs leave the statistics intact");
    cJSON_Delete(j); free(err);
    capture_begin();
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    gpuprof_init(&cfg);
    rc = gpuprof_write_summary("/dev/full");
    gpuprof_shutdown();
    err = capture_end();
    CHECK(rc != 0 && strstr(err, "cannot write the summary to '/dev/full': No space left on device"), "full disk: named with the reason");
    free(err);
    {   /* a summary is renamed into place only over a regular file: a device stays a device */
        struct stat st;
        char tmp[64];
        snprintf(tmp, sizeof tmp, "/dev/full.%d.tmp", (int)getpid());
        CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode) && access(tmp, F_OK) != 0,
              "full disk: /dev/full is still a device, and no temporary file was made beside it");
    }

    /* the trace streamed onto a full disk, or into a missing directory */
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = "/dev/full";
    start(&cfg);
    for (i = 0; i < 100000; i++) { PROF_RANGE("work"); }
    rc = gpuprof_write_trace(NULL);
    j = finish(&err);
    CHECK(rc != 0, "trace onto /dev/full: gpuprof_write_trace returns non-zero");
    CHECK(count_lines(err, "gpuprof:") == 1 && strstr(err, "cannot write the trace to '/dev/full': No space left on device"),
          "trace onto /dev/full: one line with the reason");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "work"), "count"), 100000, "trace onto /dev/full: statistics complete");
    cJSON_Delete(j); free(err);
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = "/nonexistent-dir/t.json";
    start(&cfg);
    { PROF_RANGE("work"); }
    j = finish(&err);
    CHECK(strstr(err, "cannot open the trace file '/nonexistent-dir/t.json': No such file or directory") != NULL,
          "trace into a missing directory: named with the reason");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "work"), "count"), 1, "trace into a missing directory: statistics go on");
    cJSON_Delete(j); free(err);

    /* nesting deeper than GPUPROF_MAX_DEPTH */
    memset(&cfg, 0, sizeof cfg); start(&cfg);
    depth_left = GPUPROF_MAX_DEPTH + 72;
    recurse();
    { PROF_RANGE("after"); }
    j = finish(&err);
    CHECK(count_lines(err, "gpuprof:") == 1 && strstr(err, "nested deeper than"), "too deep: one line");
    CHECK_EQ_U(warning(j, "too_deep"), 72, "too deep: every untimed frame counted");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "recursive"), "count"), GPUPROF_MAX_DEPTH, "too deep: the frames within the limit are timed");
    CHECK(summary_path(j, "after") != NULL, "too deep: the stack is balanced afterwards");
    cJSON_Delete(j); free(err);

    /* a BEGIN left open inside a scoped range that is itself too deep to be timed */
    memset(&cfg, 0, sizeof cfg); start(&cfg);
    depth_left = GPUPROF_MAX_DEPTH + 5;
    begin_at_bottom = 1;
    recurse();
    begin_at_bottom = 0;
    { PROF_RANGE("after"); }
    j = finish(&err);
    CHECK(strstr(err, "nested too deep to be timed") != NULL, "mismatch below the depth limit: named without reading past the stack");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "recursive"), "count"), GPUPROF_MAX_DEPTH, "mismatch below the depth limit: timed frames still counted");
    CHECK(summary_path(j, "after") != NULL, "mismatch below the depth limit: the stack is balanced afterwards");
    cJSON_Delete(j); free(err);

    /* more distinct names than the cap */
    memset(&cfg, 0, sizeof cfg);
    cfg.max_names = 8;
    start(&cfg);
    for (i = 0; i < 20; i++) { char name[16]; snprintf(name, sizeof name, "layer %d", i); PROF_RANGE_DYN(name); }
    j = finish(&err);
    CHECK(count_lines(err, "gpuprof:") == 1 && strstr(err, "more than 8 distinct names"), "name cap: one line");
    CHECK(jnum(summary_find(j, "ranges", "[other names]"), "count") == 12, "name cap: the overflow is counted under [other names]");
    cJSON_Delete(j); free(err);
    return check_done("test_misuse");
}
