/* Threads: 8 threads x 100000 ranges each, every count exact, one trace
   track per thread; run under ThreadSanitizer as test_threads_tsan. */
#define GPUPROF_IMPLEMENTATION
#include "gpuprof.h"
#include "json_util.h"
#include <dirent.h>
#include <pthread.h>

enum { THREADS = 8, RANGES = 100000 };

static void *worker(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < RANGES; i++) {
        PROF_RANGE("worker.step");
        if (i % 10 == 0) { PROF_RANGE("worker.inner"); }
    }
    PROF_COUNTER("worker.done", 1.0);
    return NULL;
}

/* Creates new call paths as fast as it can, taking no lock (the names are
   registered beforehand), so that reports running meanwhile see the node
   count grow under them. */
enum { NEW_PATHS = 3000 };
static uint32_t path_ids[NEW_PATHS];
static int paths_done;
static void *path_maker(void *arg) {
    int i, tok;
    (void)arg;
    for (i = 0; i < NEW_PATHS; i++) {
        tok = gpuprof__begin(NULL, path_ids[i], gpuprof__g.session, GPUPROF__F_SCOPED, 0, 0, NULL, 1);
        { PROF_RANGE("leaf"); }
        gpuprof__range_end(tok);
    }
    __atomic_store_n(&paths_done, 1, __ATOMIC_RELAXED);
    return NULL;
}

/* A pool thread that never exits (OpenMP's, a thread pool's): it records a
   partial trace block, then waits until after the shutdown. */
static int pool_recorded, pool_release;
static void *pool_thread(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < 700; i++) { PROF_RANGE("pool.task"); }
    __atomic_store_n(&pool_recorded, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&pool_release, __ATOMIC_ACQUIRE)) {
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void *short_task(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < 100; i++) { PROF_RANGE("task"); }
    return NULL;
}

/* Reads everything while the workers record (SPEC 6): report, summary, flush. */
static int workers_done;
static int reports;
static void *reporter(void *arg) {
    FILE *devnull = fopen("/dev/null", "w");
    (void)arg;
    while (!__atomic_load_n(&workers_done, __ATOMIC_RELAXED)) {
        gpuprof_report(devnull);
        gpuprof_write_summary("threads.during.json");
        gpuprof_flush();
        reports++;
    }
    fclose(devnull);
    return NULL;
}

/* Threads of this process (/proc/self/task), or -1. */
static int task_count(void) {
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The statistics are added from the threads' rings of records: by default
   by each thread itself, a ring at a time, with no thread of gpuprof's; with
   GPUPROF_COLLECTOR=1 by a collector thread, without any report asking.
   Whatever reads first drains the rest; gpuprof_reset drops what ended
   before it; the collector ends at shutdown. */
static void test_collector(void) {
    gpuprof_config cfg = {0};
    gpuprof__thread *t;
    cJSON *j;
    int i, k, before = task_count();
    uint64_t sum;
    gpuprof__node *n;
    cfg.report = "off";
    cfg.trace_ring_mb = 0;
    cfg.summary_every = -1;          /* no checkpoints: their thread is counted below */

    /* the default: no thread; each thread adds a full ring itself */
    cfg.summary_path = "selfadd.summary.json";
    gpuprof_init(&cfg);
    CHECK(before < 0 || task_count() == before, "by default a session starts no thread (no trace file, no collector)");
    for (i = 0; i < 5 * GPUPROF__RECS + 7; i++) { PROF_RANGE("self-added"); }
    t = gpuprof__tls;
    CHECK_EQ_U(GPUPROF__LD(&t->rec_head) - GPUPROF__LD(&t->rec_tail), 7, "a thread adds its own records when its ring is full, a ring at a time");
    for (sum = 0, n = t->root.first_child; n; n = n->next_sibling) sum += GPUPROF__LD(&n->stats.count);
    CHECK_EQ_U(sum, 5 * (uint64_t)GPUPROF__RECS, "... into the statistics: all but the 7 still in the ring");
    gpuprof_shutdown();
    j = summary_load("selfadd.summary.json");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "self-added"), "count"), 5 * GPUPROF__RECS + 7, "the summary drains the ring: every call counted");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "config"), "collector")), "the summary's config: \"collector\":false by default");
    cJSON_Delete(j);

    /* GPUPROF_COLLECTOR=1 */
    setenv("GPUPROF_COLLECTOR", "1", 1);
    cfg.summary_path = "collector.summary.json";
    gpuprof_init(&cfg);
    unsetenv("GPUPROF_COLLECTOR");
    CHECK(before < 0 || task_count() == before + 1, "GPUPROF_COLLECTOR=1: one collector thread");
    for (i = 0; i < 3 * GPUPROF__RECS; i++) { PROF_RANGE("collected"); }
    t = gpuprof__tls;
    for (k = 0; k < 200 && GPUPROF__LDA(&t->rec_tail) != t->rec_head; k++) {
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
    }
    CHECK(GPUPROF__LDA(&t->rec_tail) == t->rec_head, "the collector adds every record by itself within 2 s");
    CHECK_EQ_U(GPUPROF__LD(&t->root.first_child->stats.count), 3 * GPUPROF__RECS, "... into the range's statistics");
    for (i = 0; i < 100; i++) { PROF_RANGE("reset away"); }
    gpuprof_reset();
    for (i = 0; i < 5; i++) { PROF_RANGE("reset away"); }
    for (i = 0; i < 5 * GPUPROF__RECS + 3; i++) { PROF_RANGE("again"); }
    gpuprof_shutdown();
    CHECK(before < 0 || task_count() == before, "no thread of gpuprof's is left after shutdown");
    /* a summary path with checkpoints (the default every 60 s): one thread, gone at shutdown */
    {
        gpuprof_config ck = cfg;
        ck.summary_path = "checkpointed.summary.json";
        ck.summary_every = 0;
        gpuprof_init(&ck);
        CHECK(before < 0 || task_count() == before + 1, "checkpoints: one thread writes them");
        gpuprof_shutdown();
        CHECK(before < 0 || task_count() == before, "checkpoints: their thread is gone after shutdown");
    }
    j = summary_load("collector.summary.json");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "reset away"), "count"), 5, "gpuprof_reset drops the records of calls that ended before it");
    CHECK(summary_find(j, "ranges", "collected") == NULL || jnum(summary_find(j, "ranges", "collected"), "count") == 0,
          "... and the statistics they were added to");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "again"), "count"), 5 * GPUPROF__RECS + 3, "every call counted at shutdown");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "config"), "collector")), "the summary's config: \"collector\":true with GPUPROF_COLLECTOR=1");
    cJSON_Delete(j);
}

/* A ring's records are added a run of one range at a time, in registers:
   the statistics come out as if each duration had been added on its own
   (gpuprof_stats_add, the code before), whatever the order -- long runs,
   two ranges alternating, random ranges, a range's first sample, durations
   the histogram must slide its window for, a full bucket, one past 2^53 --
   and wherever a full ring cuts a run. */
static uint64_t drain_rng = 0x9E3779B97F4A7C15ull;
static uint64_t drain_next(void) {
    drain_rng ^= drain_rng << 13; drain_rng ^= drain_rng >> 7; drain_rng ^= drain_rng << 17;
    return drain_rng;
}
static gpuprof__node *drain_nodes[3];
static gpuprof_stats drain_ref[3];
static uint64_t drain_self[3];
static void drain_put(gpuprof__thread *t, int k, uint64_t dt) {
    uint64_t self = dt - dt / 3;
    gpuprof__rec_push(t, drain_nodes[k], dt, self);
    gpuprof_stats_add(&drain_ref[k], (double)dt);
    drain_self[k] += self;
}
static const char *drain_names[3] = { "drain.a", "drain.b", "drain.huge" };
static void drain_compare(gpuprof__thread *t, const char *when) {
    char what[320];
    int k;
    CHECK_EQ_U(GPUPROF__LD(&t->rec_head) - GPUPROF__LD(&t->rec_tail), 0, "every record added");
    for (k = 0; k < 3; k++) {
        const gpuprof_stats *s = &drain_nodes[k]->stats, *r = &drain_ref[k];
        snprintf(what, sizeof what, "%s, %s: count, min, max, shift, histogram and window as added one by one", drain_names[k], when);
        CHECK(s->count == r->count && s->min == r->min && s->max == r->max && s->shift == r->shift && s->lo_key == r->lo_key &&
              s->halvings == r->halvings && !memcmp(s->bucket, r->bucket, sizeof s->bucket) && s->rejected == r->rejected, what);
        snprintf(what, sizeof what, "%s, %s: self time", drain_names[k], when);
        CHECK_EQ_U(drain_nodes[k]->self_ns, drain_self[k], what);
        if (k < 2) {     /* whole nanoseconds whose sums stay below 2^53: exact in any order */
            snprintf(what, sizeof what, "%s, %s: sums exact (%.17g %.17g %.17g against %.17g %.17g %.17g)", drain_names[k], when,
                     s->sum, s->sum_d, s->sum_d2, r->sum, r->sum_d, r->sum_d2);
            CHECK(s->sum == r->sum && s->sum_d == r->sum_d && s->sum_d2 == r->sum_d2, what);
        } else {         /* past 2^53 the order of the additions rounds differently */
            CHECK_REL(s->sum, r->sum, 1e-12, "drain.huge: sum");
            CHECK_REL(s->sum_d, r->sum_d, 1e-12, "drain.huge: sum of differences");
            CHECK_REL(s->sum_d2, r->sum_d2, 1e-12, "drain.huge: sum of squares");
        }
    }
}
static void test_drain_runs(void) {
    gpuprof_config cfg = {0};
    gpuprof__thread *t;
    gpuprof__node *n;
    int i, k;
    cfg.report = "off";
    cfg.trace_ring_mb = 0;
    gpuprof_init(&cfg);
    { PROF_RANGE("drain.a"); }
    { PROF_RANGE("drain.b"); }
    { PROF_RANGE("drain.huge"); }
    t = gpuprof__tls;
    gpuprof__rec_drain(t, 1, 0);
    for (n = t->root.first_child; n; n = n->next_sibling)
        for (k = 0; k < 3; k++)
            if (!strcmp(gpuprof__registry.names[n->name_id].text, drain_names[k])) drain_nodes[k] = n;
    CHECK(drain_nodes[0] && drain_nodes[1] && drain_nodes[2], "three ranges to add records to");
    if (!drain_nodes[0] || !drain_nodes[1] || !drain_nodes[2]) { gpuprof_shutdown(); return; }
    for (k = 0; k < 3; k++) {                       /* from nothing, on both sides */
        gpuprof_stats_init(&drain_nodes[k]->stats);
        drain_nodes[k]->self_ns = 0;
        gpuprof_stats_init(&drain_ref[k]);
    }
    for (i = 0; i < 1000; i++) drain_put(t, 0, 20 + drain_next() % 11);                /* one run */
    drain_put(t, 1, 3);                                                                  /* b's first sample: 3 ns */
    for (i = 0; i < 1000; i++) drain_put(t, i & 1, 1 + drain_next() % 200);              /* alternating */
    gpuprof__rec_drain(t, 1, 0);
    drain_compare(t, "after runs and alternation");
    {   /* a bucket one short of full, on both sides: the next sample fills it, the one after halves the histogram */
        uint32_t idx = (uint32_t)(gpuprof__key(25.0) - drain_nodes[0]->stats.lo_key);
        drain_nodes[0]->stats.bucket[idx] = drain_ref[0].bucket[idx] = 0xfffffffeu;
        for (i = 0; i < 5; i++) drain_put(t, 0, 25);
    }
    for (i = 0; i < 6000; i++) {                     /* random ranges and runs, up to 1 ms: b's window slides */
        int kk = (int)(drain_next() % 2), len = (int)(drain_next() % 7);
        uint64_t scale = (uint64_t)1 << (drain_next() % 20);
        while (len-- >= 0) drain_put(t, kk, drain_next() % scale);
    }
    for (i = 0; i < 300; i++)                        /* past 2^53 now and then */
        drain_put(t, 2, i % 50 == 7 ? ((uint64_t)1 << 53) + (drain_next() % 1000000) * 2 : 100 + drain_next() % 100);
    gpuprof__rec_drain(t, 1, 0);
    drain_compare(t, "at the end");
    CHECK(drain_ref[0].halvings == 1, "the full bucket halved the histogram (the test reaches that case)");
    CHECK(drain_ref[1].lo_key != gpuprof__key(3.0) - GPUPROF_STATS_BUCKETS / 2, "b's window slid (the test reaches that case)");
    gpuprof_shutdown();
}

int main(int argc, char **argv) {
    gpuprof_config cfg = {0};
    pthread_t th[THREADS];
    cJSON *j;
    char cmd[1024];
    int i;
    cfg.report = "off";
    cfg.trace_path = "threads.trace.json";
    cfg.trace_buffer_mb = 64;
    gpuprof_init(&cfg);
    pthread_t rep;
    pthread_create(&rep, NULL, reporter, NULL);
    for (i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, worker, NULL);
    for (i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    __atomic_store_n(&workers_done, 1, __ATOMIC_RELAXED);
    pthread_join(rep, NULL);
    CHECK(reports > 0, "reports were made while the workers recorded");
    j = summary_load("threads.during.json");
    CHECK(j != NULL, "a summary written while threads record is valid JSON");
    cJSON_Delete(j);
    { PROF_RANGE("main.after_join"); }
    CHECK(gpuprof_write_summary("threads.summary.json") == 0, "summary written");
    gpuprof_shutdown();
    j = summary_load("threads.summary.json");
    CHECK(j != NULL, "summary parses");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "worker.step"), "count"), THREADS * RANGES, "every worker.step call counted");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "worker.inner"), "count"), THREADS * RANGES / 10, "every worker.inner call counted");
    CHECK_EQ_U(jnum(summary_find(j, "counters", "worker.done"), "count"), THREADS, "one counter sample per thread");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(j, "run"), "threads"), THREADS + 1, "9 threads recorded (8 workers and main; the reporter only reads)");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(j, "trace"), "dropped"), 0, "no trace event dropped with a 64 MiB buffer");
    cJSON_Delete(j);
    if (argc > 1) {    /* the path of check_trace.py: validate the trace too */
        snprintf(cmd, sizeof cmd, "python3 %s threads.trace.json --threads %d --expect-x %d", argv[1], THREADS + 1,
                 THREADS * RANGES + THREADS * RANGES / 10 + 1);
        CHECK(system(cmd) == 0, "the trace is valid: one track per thread, every range present and nested");
    }

    /* reports while another thread keeps adding call paths (the report must
       use the node counts it started with) */
    {
        FILE *devnull = fopen("/dev/null", "w");
        cfg.trace_path = NULL;
        cfg.max_names = 8192;
        gpuprof_init(&cfg);
        for (i = 0; i < NEW_PATHS; i++) {
            char name[32];
            snprintf(name, sizeof name, "path %d", i);
            path_ids[i] = gpuprof__intern(name);
        }
        { PROF_RANGE("leaf"); }
        pthread_create(&th[0], NULL, path_maker, NULL);
        while (!__atomic_load_n(&paths_done, __ATOMIC_RELAXED)) gpuprof_report(devnull);
        pthread_join(th[0], NULL);
        CHECK(gpuprof_write_summary("threads3.summary.json") == 0, "reports while call paths are being created");
        gpuprof_shutdown();
        fclose(devnull);
        j = summary_load("threads3.summary.json");
        CHECK_EQ_U(jnum(summary_find(j, "ranges", "leaf"), "count"), NEW_PATHS + 1, "every range counted while reports ran");
        cJSON_Delete(j);
        cfg.max_names = 0;
    }

    /* 200 short-lived threads one after the other (a thread per task): each
       takes over the state of one that has exited, so memory stays bounded,
       and every thread still gets its own trace track */
    {
        gpuprof__thread *it;
        int states = 0;
        cfg.trace_path = "threads2.trace.json";
        gpuprof_init(&cfg);
        for (i = 0; i < 200; i++) {
            pthread_create(&th[0], NULL, short_task, NULL);
            pthread_join(th[0], NULL);
        }
        pthread_mutex_lock(&gpuprof__lock);
        for (it = gpuprof__threads.threads; it; it = it->next) states++;
        pthread_mutex_unlock(&gpuprof__lock);
        CHECK(states <= 2, "200 threads in sequence reuse one state, not 200");
        CHECK(gpuprof_write_summary("threads2.summary.json") == 0, "summary written");
        gpuprof_shutdown();
        j = summary_load("threads2.summary.json");
        CHECK_EQ_U(jnum(summary_find(j, "ranges", "task"), "count"), 200 * 100, "every range of every short-lived thread counted");
        CHECK_EQ_U(jnum(cJSON_GetObjectItem(j, "run"), "threads"), 200, "200 threads reported");
        cJSON_Delete(j);
        if (argc > 1) {
            snprintf(cmd, sizeof cmd, "python3 %s threads2.trace.json --threads 200 --expect-x %d", argv[1], 200 * 100);
            CHECK(system(cmd) == 0, "one named trace track per short-lived thread");
        }
    }
    /* threads still running at shutdown: their buffered events reach the
       trace, and the report does not blame the buffer size */
    {
        char *text;
        cfg.trace_path = "threads_pool.trace.json";
        cfg.summary_path = "threads_pool.summary.json";
        gpuprof_init(&cfg);
        for (i = 0; i < 3; i++) pthread_create(&th[i], NULL, pool_thread, NULL);
        while (!__atomic_load_n(&pool_recorded, __ATOMIC_ACQUIRE)) {}
        for (i = 0; i < 50; i++) { PROF_RANGE("main.task"); }
        {
            struct timespec ts = { 0, 20000000 };   /* the other pool threads finish their ranges too */
            nanosleep(&ts, NULL);
        }
        gpuprof_shutdown();
        __atomic_store_n(&pool_release, 1, __ATOMIC_RELEASE);
        for (i = 0; i < 3; i++) pthread_join(th[i], NULL);
        cfg.summary_path = NULL;
        j = summary_load("threads_pool.summary.json");
        CHECK_EQ_U(jnum(cJSON_GetObjectItem(j, "trace"), "dropped"), 0, "threads alive at shutdown: none of their trace events dropped");
        CHECK_EQ_U(jnum(cJSON_GetObjectItem(j, "trace"), "events"), 3 * 700 + 50, "every event of the pool threads is written");
        cJSON_Delete(j);
        if (argc > 1) {
            snprintf(cmd, sizeof cmd, "python3 %s threads_pool.trace.json --threads 4 --expect-x %d", argv[1], 3 * 700 + 50);
            CHECK(system(cmd) == 0, "the trace holds the 2100 ranges of the three pool threads, on their tracks");
        }
        text = check_slurp("threads_pool.trace.json");
        CHECK(text && strstr(text, "gpuprof 0.1.0: 2150 events, 0 dropped"), "the trace's own label counts them all");
        free(text);
    }

    /* gpuprof_write_trace again and again while 4 threads record: with a
       streamed trace (each call brings the stream up to date and copies it)
       and with the flight recorder (each call dumps the ring) */
    {
        int k, mode;
        for (mode = 0; mode < 2; mode++) {
            const char *copy = mode == 0 ? "concurrent.copy.json" : "concurrent.dump.json";
            int fails = 0;
            memset(&cfg, 0, sizeof cfg);
            cfg.report = "off";
            cfg.summary_path = mode == 0 ? "concurrent.summary.json" : "concurrent_ring.summary.json";
            cfg.trace_path = mode == 0 ? "concurrent.trace.json" : NULL;
            cfg.trace_ring_mb = 1;
            gpuprof_init(&cfg);
            for (i = 0; i < 4; i++) pthread_create(&th[i], NULL, worker, NULL);
            for (k = 0; k < 30; k++) {
                struct timespec ts = { 0, 2000000 };
                fails += gpuprof_write_trace(copy) != 0;
                if (mode == 0) fails += gpuprof_write_trace(NULL) != 0;
                nanosleep(&ts, NULL);
            }
            for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
            fails += gpuprof_write_trace(copy) != 0;
            gpuprof_shutdown();
            CHECK_EQ_U(fails, 0, mode == 0 ? "write_trace while threads record (streamed): every call succeeds"
                                           : "write_trace while threads record (flight recorder): every call succeeds");
            j = summary_load(cfg.summary_path);
            CHECK_EQ_U(jnum(summary_find(j, "ranges", "worker.step"), "count"), 4 * RANGES, "statistics exact meanwhile");
            if (mode == 1)
                CHECK(jnum(cJSON_GetObjectItem(j, "trace"), "fell_out") > 0 && jnum(cJSON_GetObjectItem(j, "trace"), "flight_recorder_mb") == 1,
                      "the flight recorder ran (1 MiB) and older events fell out of it");
            if (mode == 0)
                CHECK_EQ_U(jnum(cJSON_GetObjectItem(j, "trace"), "events") + jnum(cJSON_GetObjectItem(j, "trace"), "dropped"),
                           4 * (RANGES + RANGES / 10 + 1), "the stream: every event written or counted as dropped, none twice");
            cJSON_Delete(j);
            if (argc > 1) {
                snprintf(cmd, sizeof cmd, "python3 %s %s%s", argv[1], copy, mode == 0 ? " --threads 4" : "");
                CHECK(system(cmd) == 0, mode == 0 ? "the last copy is a valid trace with the 4 threads' tracks" : "the last dump is a valid trace");
            }
        }
    }
    test_collector();
    test_drain_runs();
    return check_done("test_threads");
}
