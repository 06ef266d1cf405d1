/* The Chrome trace: valid JSON for any bytes in a name, properly nested
   complete events (also when a child starts in the same nanosecond as its
   parent), metadata, counters, marks and steps; and a run killed mid-way
   leaves a file the viewers still open.
   gpuprof_write_trace at any time, with a streamed trace or with the flight
   recorder, and arrows from CPU ranges to their GPU ranges (test_gpu).
   usage: test_trace CHECK_TRACE_PY        (the normal test)
          test_trace --die                 (internal: record, then SIGKILL self mid-write)
          test_trace --die-idle            (internal: record 10 ranges, idle 2.5 s, SIGKILL self) */
#include "gpuprof.h"
#include "impl/clock.h"                 /* vnow: built with the implementation's "vnow" configuration */
#include "impl/hooks.h"
#include "json_util.h"
#include <pthread.h>
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

/* A run that records a little, then sits idle (a long GPU wait, a hang)
   and is killed: the writer has written what the block not yet full held. */
static void die_idle(void) {
    gpuprof_config cfg = {0};
    int i;
    cfg.trace_path = "idle.trace.json";
    gpuprof_init(&cfg);
    for (i = 0; i < 10; i++) { PROF_RANGE("before the hang"); vnow += 7; }
    usleep(2500000);               /* the writer passes by once a second */
    raise(SIGKILL);
}

/* The events of a trace file (closed or not), parsed. */
static cJSON *trace_load(const char *path, int *closed) {
    char *text = check_slurp(path);
    cJSON *j = NULL;
    size_t n;
    if (!text) return NULL;
    n = strlen(text);
    while (n && (text[n - 1] == '\n' || text[n - 1] == ' ')) n--;
    *closed = n && text[n - 1] == ']';
    if (!*closed) {
        char *t = (char *)malloc(n + 3);
        memcpy(t, text, n);
        memcpy(t + n, "\n]", 3);
        free(text);
        text = t;
        text[n + 2] = 0;
    }
    j = cJSON_Parse(text);
    free(text);
    return j;
}

/* Complete events named `name` (NULL: all). */
static int count_x(cJSON *events, const char *name) {
    cJSON *e;
    int n = 0;
    cJSON_ArrayForEach(e, events) {
        cJSON *ph = cJSON_GetObjectItem(e, "ph"), *nm = cJSON_GetObjectItem(e, "name");
        if (cJSON_IsString(ph) && strcmp(ph->valuestring, "X") == 0 && (!name || (cJSON_IsString(nm) && strcmp(nm->valuestring, name) == 0))) n++;
    }
    return n;
}

/* The gpuprof object in the trace's closing metadata. */
static cJSON *trace_meta(cJSON *events) {
    cJSON *e;
    cJSON_ArrayForEach(e, events) {
        cJSON *nm = cJSON_GetObjectItem(e, "name");
        if (cJSON_IsString(nm) && strcmp(nm->valuestring, "process_labels") == 0)
            return cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "gpuprof");
    }
    return NULL;
}

/* gpuprof_write_trace with a streamed trace: at any time, again and again;
   the stream goes on. */
static void test_write_any_time(const char *checker) {
    gpuprof_config cfg = {0};
    cJSON *j;
    char cmd[1024];
    int i, closed = 0;
    cfg.report = "off";
    cfg.trace_path = "live.trace.json";
    gpuprof_init(&cfg);
    for (i = 0; i < 10; i++) { PROF_RANGE("a"); vnow += 5; }
    CHECK(gpuprof_write_trace("live.1.json") == 0, "write_trace mid-run: a copy of the stream so far");
    for (i = 0; i < 5000; i++) { PROF_RANGE("b"); vnow += 5; }
    CHECK(gpuprof_write_trace("live.2.json") == 0, "and again later");
    CHECK(gpuprof_write_trace("/nonexistent-dir/live.json") != 0, "a copy into a missing directory: non-zero, the stream goes on");
    CHECK(gpuprof_write_trace(NULL) == 0, "write_trace(NULL): the streamed file itself, brought up to date");
    j = trace_load("live.trace.json", &closed);
    CHECK(j && !closed && count_x(j, "a") == 10 && count_x(j, "b") == 5000,
          "the stream holds every range so far (a 10, b 5000), still open: the run goes on");
    cJSON_Delete(j);
    for (i = 0; i < 10; i++) { PROF_RANGE("c"); vnow += 5; }
    gpuprof_shutdown();
    j = trace_load("live.1.json", &closed);
    CHECK(j && closed && count_x(j, "a") == 10 && count_x(j, NULL) == 10, "the first copy: the 10 ranges recorded before it, closed");
    CHECK_EQ_U(jnum(trace_meta(j), "events"), 10, "its metadata counts them");
    cJSON_Delete(j);
    j = trace_load("live.2.json", &closed);
    CHECK(j && closed && count_x(j, "a") == 10 && count_x(j, "b") == 5000 && count_x(j, "c") == 0,
          "the second copy: everything recorded before it (5010 ranges, more than a block)");
    cJSON_Delete(j);
    j = trace_load("live.trace.json", &closed);
    CHECK(j && closed && count_x(j, "a") == 10 && count_x(j, "b") == 5000 && count_x(j, "c") == 10,
          "the stream went on after the copies: all 5020 ranges, closed at shutdown");
    CHECK_EQ_U(jnum(trace_meta(j), "events"), 5020, "the stream's metadata counts them all");
    cJSON_Delete(j);
    snprintf(cmd, sizeof cmd, "python3 %s live.2.json --expect-x 5010 && python3 %s live.trace.json --expect-x 5020", checker, checker);
    CHECK(system(cmd) == 0, "the copies and the stream pass the trace checker");
}

/* Many threads, each holding a block, and a ring with fewer spare blocks
   than threads: a thread that needs a block takes the ring's oldest rather
   than dropping its events. */
enum { RING_THREADS = 40, RING_RANGES = 4000 };
static pthread_barrier_t ring_bar;
static void *ring_worker(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < 1000; i++) { PROF_RANGE("w"); }
    pthread_barrier_wait(&ring_bar);          /* all 40 threads now hold a block at once */
    for (; i < RING_RANGES; i++) { PROF_RANGE("w"); }
    return NULL;
}
static void test_ring_many_threads(void) {
    gpuprof_config cfg = {0};
    pthread_t th[RING_THREADS];
    cJSON *j;
    int i, closed = 0;
    cfg.report = "off";
    cfg.summary_path = "ring_threads.summary.json";
    cfg.trace_ring_mb = 1;                    /* 21 blocks, 18 spare: fewer than the 40 threads */
    gpuprof_init(&cfg);
    pthread_barrier_init(&ring_bar, NULL, RING_THREADS);
    for (i = 0; i < RING_THREADS; i++) pthread_create(&th[i], NULL, ring_worker, NULL);
    for (i = 0; i < RING_THREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&ring_bar);
    CHECK(gpuprof_write_trace("ring_threads.json") == 0, "a dump after 40 threads recorded");
    j = trace_load("ring_threads.json", &closed);
    CHECK(j && closed && jnum(trace_meta(j), "dropped") == 0 && count_x(j, "w") + jnum(trace_meta(j), "fell_out") == RING_THREADS * RING_RANGES,
          "40 threads holding blocks at once, fewer spare blocks than threads: nothing dropped, kept + fell out = all 160000 ranges");
    cJSON_Delete(j);
    gpuprof_shutdown();
    j = summary_load("ring_threads.summary.json");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(j, "trace"), "dropped"), 0, "and the summary says none was dropped");
    cJSON_Delete(j);
}

/* Without a trace file, the flight recorder: the latest events, in a
   bounded ring; write_trace writes them, with the window they cover. */
static void test_flight_recorder(const char *checker) {
    gpuprof_config cfg = {0};
    cJSON *j, *e, *meta;
    char cmd[1024];
    const int total = 100000;
    int i, closed = 0, kept, contiguous = 1;
    double fell_out, prev = -1, first = -1, window;
    FILE *f;
    char *rep;
    cfg.report = "off";
    cfg.trace_ring_mb = 1;                    /* 1 MiB: 21 blocks of 2048 events */
    gpuprof_init(&cfg);
    for (i = 0; i < total; i++) { PROF_RANGE("r"); vnow += 1000; }
    CHECK(gpuprof_write_trace("ring.json") == 0, "write_trace without a trace file: the flight recorder's events");
    j = trace_load("ring.json", &closed);
    meta = trace_meta(j);
    kept = count_x(j, "r");
    fell_out = jnum(meta, "fell_out");
    window = jnum(meta, "window_start_us");
    CHECK(j && closed && kept > 40000 && kept < 46000, "it keeps about 1 MiB of events (21 blocks x 2048 + the block being filled)");
    CHECK_EQ_U(kept + fell_out, total, "kept + fell out = every range recorded: none lost unaccounted");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(meta, "flight_recorder")), "the metadata says it is the flight recorder's");
    cJSON_ArrayForEach(e, j) {
        cJSON *ph = cJSON_GetObjectItem(e, "ph");
        double ts = jnum(e, "ts");
        if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0) continue;
        if (first < 0) first = ts;
        if (prev >= 0 && fabs(ts - prev - 1.0) > 1e-6) contiguous = 0;
        prev = ts;
    }
    CHECK(contiguous && prev == total - 1 && first == fell_out,
          "the kept ranges are the latest ones, one after another: the last recorded down to the first not fallen out");
    CHECK(window >= first && window <= first + 2,
          "window_start_us: from there on every event is in the dump (blocks leave whole, so a few before it are too)");
    cJSON_Delete(j);
    snprintf(cmd, sizeof cmd, "python3 %s ring.json --expect-x %d", checker, kept);
    CHECK(system(cmd) == 0, "the dump passes the trace checker");
    f = fopen("ring.report.txt", "w");
    gpuprof_report(f);
    fclose(f);
    rep = check_slurp("ring.report.txt");
    CHECK(rep && strstr(rep, "trace: none streamed; the flight recorder keeps the latest events (1 MiB, "), "the report says what the flight recorder holds");
    free(rep);
    CHECK(gpuprof_write_trace(NULL) != 0, "the flight recorder and no path: non-zero (there is no stream to bring up to date)");
    CHECK(gpuprof_write_trace("/nonexistent-dir/ring.json") != 0, "a dump into a missing directory: non-zero");
    for (i = 0; i < 10; i++) { PROF_RANGE("later"); vnow += 1000; }
    CHECK(gpuprof_write_trace("ring2.json") == 0, "a second dump, recording went on");
    j = trace_load("ring2.json", &closed);
    CHECK(j && closed && count_x(j, "later") == 10 && jnum(trace_meta(j), "fell_out") + count_x(j, NULL) == total + 10,
          "the second dump has the later ranges, and still accounts for every range");
    cJSON_Delete(j);
    gpuprof_shutdown();
    /* GPUPROF_TRACE_RING_MB=0: no flight recorder, and write_trace says how to get a trace */
    setenv("GPUPROF_TRACE_RING_MB", "0", 1);
    gpuprof_init(&cfg);
    { PROF_RANGE("r"); }
    CHECK(gpuprof_write_trace("none.json") != 0 && access("none.json", F_OK) != 0, "GPUPROF_TRACE_RING_MB=0: no flight recorder, nothing written");
    gpuprof_shutdown();
    unsetenv("GPUPROF_TRACE_RING_MB");
}

/* A clock whose ticks are not whole nanoseconds (0.3 ns, a 3.3 GHz TSC): a
   child that ends one tick before its parent must still end within it once
   both are rounded to nanoseconds (its end was once its rounded start plus
   its rounded length, 1 ns late in 10 of these 203 cases). */
static void test_rounding(const char *checker) {
    gpuprof_config cfg = {0};
    char cmd[1024];
    int a, b;
    unsigned long long mult = (unsigned long long)(0.3 * 4294967296.0), same_ns = (1ull << 32) / mult + 1;
    cfg.report = "off";
    cfg.trace_path = "rounding.trace.json";
    gpuprof_init(&cfg);
    impl_clock_swap(&mult, &same_ns);         /* ticks of 0.3 ns */
    vnow += 100;
    for (a = 2; a < 9; a++)
        for (b = 4; b < 33; b++) {
            PROF_RANGE("parent");
            vnow += (unsigned long long)a;
            { PROF_RANGE("child"); vnow += (unsigned long long)b; }
            vnow += 1;
        }
    gpuprof_shutdown();
    impl_clock_swap(&mult, &same_ns);         /* the test clock's again: ticks are nanoseconds */
    snprintf(cmd, sizeof cmd, "python3 %s rounding.trace.json --expect-x %d", checker, 2 * 7 * 29);
    CHECK(system(cmd) == 0, "with 0.3 ns ticks every child ends within its parent, which ends one tick later");
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
    if (argc > 1 && strcmp(argv[1], "--die-idle") == 0) die_idle();
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
           odd names are recorded, in its block (or written, if the writer's
           once-a-second pass came by); the worker's one range went to the
           writer when it exited */
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
                  written + buffered == 32,
                  "all 32 events so far are accounted for, written or in buffers (the writer writes blocks not yet full once a second: how many depends on timing)");
        }
        free(mid);
    }
    CHECK(gpuprof_write_trace("trace.copy.json") == 0, "gpuprof_write_trace copies the stream as it is so far");
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
    CHECK(system(cmd) == 0, "the killed run's trace is a valid JSON array but for its closing bracket, which the viewers do without");
    if (fork() == 0) { execl(argv[0], argv[0], "--die-idle", (char *)NULL); _exit(127); }
    wait(&status);
    snprintf(cmd, sizeof cmd, "python3 %s idle.trace.json --truncated --expect-x 10", argv[1]);
    CHECK(WIFSIGNALED(status) && system(cmd) == 0, "a run killed while idle: its last ranges (in a block not yet full) were written within the second");

    test_rounding(argv[1]);
    test_write_any_time(argv[1]);
    test_flight_recorder(argv[1]);
    test_ring_many_threads();
    return check_done("test_trace");
}
