/* libFuzzer target (c): sequences of API calls on up to 4 threads at once --
   ranges (scoped, explicit, dynamic, too deep), ends without begins, steps,
   counters (NaN too), marks, flush, reset, reports, summaries, pause and
   resume, shutdown and init again, tracked allocations and frees (double,
   unknown, re-tracked), memory snapshots and peak resets, declared work
   (NaN, infinite and negative too), in any order.
   Checked: no crash (ASan, UBSan), the finished trace and summary parse,
   and the counts hold together: a range's flat count is the sum of its
   call paths' counts and never more than the calls made; the categories'
   live bytes add up to the tracked live bytes, and what they held at the
   peak to the peak; once the threads have exited and the session ended,
   gpuprof holds no memory (one input leaked the states of threads that
   lived through a shutdown). */
#include "../count_alloc.h"              /* live_blocks: gpuprof's allocations not yet freed (fuzz/run.sh links the "alloc" configuration) */
#include "../../gpuprof.h"
#include "fuzz_common.h"
#include <pthread.h>

enum { MAXOPS = 512 };
static unsigned long begun[4];           /* calls of "a", "b", "c", "scope" (all threads) */
static char slots[4][16];                /* addresses the memory ops track, per thread */
static __thread int thread_slot;
static char tpath[256], spath[256], rpath[256];

struct worker { const uint8_t *ops; size_t n; };
static struct worker workers[4];

static size_t run(const uint8_t *ops, size_t n, size_t pos, int depth);

static size_t op(const uint8_t *ops, size_t n, size_t pos, int depth) {
    uint8_t o = ops[pos++], arg = pos < n ? ops[pos] : 0;
    switch (o % 21) {
    case 0: case 1: case 2:
        __atomic_fetch_add(&begun[o % 21], 1, __ATOMIC_RELAXED);
        if (o % 21 == 0) GPUPROF_BEGIN("a");
        else if (o % 21 == 1) GPUPROF_BEGIN("b");
        else GPUPROF_BEGIN("c");
        break;
    case 3: GPUPROF_END(); break;
    case 4:                                           /* a scoped range around the next op */
        if (depth < 40 && pos < n) {
            __atomic_fetch_add(&begun[3], 1, __ATOMIC_RELAXED);
            PROF_RANGE("scope");
            pos = run(ops, n, pos, depth + 1);
        }
        break;
    case 5: {
        char name[8];
        snprintf(name, sizeof name, "d%u", arg % 8);
        { PROF_RANGE_DYN(name); }
        pos++;
        break;
    }
    case 6: PROF_STEP(); break;
    case 7: PROF_COUNTER("x", arg == 255 ? NAN : arg == 254 ? INFINITY : (double)arg - 100.0); pos++; break;
    case 8: PROF_MARK("m"); break;
    case 9: gpuprof_flush(); break;
    case 10: gpuprof_reset(); break;
    case 11: { FILE *f = fopen(rpath, "w"); if (f) { gpuprof_report(f); fclose(f); } break; }
    case 12: gpuprof_write_summary(spath); break;
    case 13: gpuprof_set_enabled(arg & 1); pos++; break;
    case 14: gpuprof_shutdown(); break;
    case 15: {
        gpuprof_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.trace_path = tpath;
        cfg.summary_path = spath;
        cfg.report = "off";
        cfg.warmup = arg % 3;
        gpuprof_init(&cfg);
        pos++;
        break;
    }
    case 16: {                                        /* deeper than GPUPROF_MAX_DEPTH */
        int k;
        for (k = 0; k < GPUPROF_MAX_DEPTH + 3; k++) GPUPROF_BEGIN("deep");
        for (k = 0; k < GPUPROF_MAX_DEPTH + 3; k++) GPUPROF_END();
        break;
    }
    case 17: {                                        /* track an address (maybe again) */
        char cat[4];
        snprintf(cat, sizeof cat, "c%u", arg % 5);
        gpuprof_mem_alloc(&slots[thread_slot][arg % 16], (size_t)arg * 100, arg == 7 ? NULL : cat);
        pos++;
        break;
    }
    case 18: gpuprof_mem_free(arg == 9 ? NULL : &slots[thread_slot][arg % 16]); pos++; break;   /* maybe untracked */
    case 19:
        if (arg % 4 == 3) gpuprof_mem_reset_peaks();
        else if (arg % 4 == 2) gpuprof_mem_snapshot(arg & 128 ? "dyn" : "");
        else GPUPROF_MEM("phase");
        pos++;
        break;
    default:                                          /* literal ranges, nested a little */
        if (arg % 3 == 0) { PROF_RANGE("a"); }
        else if (arg % 3 == 1) { PROF_RANGE("b"); { PROF_RANGE("a"); } }
        else if (arg & 64) {                          /* declared work, finite or not */
            double f = arg & 128 ? (arg & 8 ? NAN : arg & 16 ? -INFINITY : -1.0) : (double)arg * 1e6;
            PROF_RANGE_WORK("w", f, (double)(arg & 7) * 1e5);
        } else { PROF_FUNC(); }
        pos++;
        break;
    }
    return pos;
}

static size_t run(const uint8_t *ops, size_t n, size_t pos, int depth) { return pos < n ? op(ops, n, pos, depth) : pos; }

static void *worker_main(void *arg) {
    struct worker *w = (struct worker *)arg;
    size_t pos = 0;
    thread_slot = (int)(w - workers);
    while (pos < w->n) pos = run(w->ops, w->n, pos, 0);
    return NULL;
}

/* The flat count of each name equals the sum over its call paths. */
static void check_counts(cJSON *sum) {
    cJSON *r, *t;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(sum, "ranges")) {
        const char *name = cJSON_GetObjectItem(r, "name")->valuestring;
        double flat = cJSON_GetObjectItem(r, "count")->valuedouble, paths = 0;
        cJSON_ArrayForEach(t, cJSON_GetObjectItem(sum, "tree"))
            if (strcmp(cJSON_GetObjectItem(t, "name")->valuestring, name) == 0) paths += cJSON_GetObjectItem(t, "count")->valuedouble;
        FUZZ_CHECK(flat == paths, "a range's flat count is the sum of its call paths' counts");
        {
            cJSON *rf = cJSON_GetObjectItem(r, "roofline");
            FUZZ_CHECK(rf && (cJSON_IsNull(rf) || cJSON_IsObject(rf)), "roofline is an object or null");
        }
        if (strcmp(name, "scope") == 0) FUZZ_CHECK(flat <= (double)begun[3], "no more scoped calls counted than made");
    }
    {
        cJSON *v = cJSON_GetObjectItem(sum, "verdict"), *p;
        FUZZ_CHECK(v != NULL, "the summary has a verdict (null without ranges)");
        cJSON_ArrayForEach(p, cJSON_GetObjectItem(v, "phases")) {
            cJSON *share = cJSON_GetObjectItem(p, "share");
            FUZZ_CHECK(cJSON_IsNull(share) || (cJSON_IsNumber(share) && share->valuedouble >= 0), "a phase's share is a number >= 0 or null");
            FUZZ_CHECK(cJSON_IsString(cJSON_GetObjectItem(p, "class")), "every phase has a class");
        }
    }
    {
        cJSON *tr = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "memory"), "tracked"), *c;
        double live = 0, at_peak = 0;
        if (!tr) return;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(tr, "categories")) {
            live += cJSON_GetObjectItem(c, "live_bytes")->valuedouble;
            at_peak += cJSON_GetObjectItem(c, "at_peak_bytes")->valuedouble;
            FUZZ_CHECK(cJSON_GetObjectItem(c, "peak_bytes")->valuedouble >= cJSON_GetObjectItem(c, "live_bytes")->valuedouble, "a category's peak is at least what it holds");
        }
        FUZZ_CHECK(live == cJSON_GetObjectItem(tr, "live_bytes")->valuedouble, "the categories' live bytes add up to the tracked live bytes");
        FUZZ_CHECK(at_peak == cJSON_GetObjectItem(tr, "peak_bytes")->valuedouble, "what the categories held at the peak adds up to the peak");
        FUZZ_CHECK(cJSON_GetObjectItem(tr, "peak_bytes")->valuedouble >= cJSON_GetObjectItem(tr, "live_bytes")->valuedouble, "the peak is at least what is live");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint8_t ops[4][MAXOPS];
    struct worker *w = workers;
    pthread_t th[4];
    int nthreads, i;
    size_t k;
    gpuprof_config cfg;
    cJSON *j;
    fuzz_setup("api");
    if (size < 1) return 0;
    snprintf(tpath, sizeof tpath, "%s/t.json", fuzz_dir);
    snprintf(spath, sizeof spath, "%s/s.json", fuzz_dir);
    snprintf(rpath, sizeof rpath, "%s/r.txt", fuzz_dir);
    unlink(tpath);
    unlink(spath);
    memset(begun, 0, sizeof begun);
    nthreads = 1 + data[0] % 4;
    for (i = 0; i < 4; i++) w[i].n = 0;
    for (k = 1; k < size; k++) {                       /* ops dealt to the threads in turn */
        struct worker *x = &w[(k - 1) % (size_t)nthreads];
        if (x->n < MAXOPS) ops[(k - 1) % (size_t)nthreads][x->n++] = data[k];
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = tpath;
    cfg.summary_path = spath;
    cfg.report = "off";
    gpuprof_init(&cfg);
    for (i = 0; i < nthreads; i++) {
        w[i].ops = ops[i];
        if (pthread_create(&th[i], NULL, worker_main, &w[i]) != 0) w[i].ops = NULL;
    }
    for (i = 0; i < nthreads; i++) if (w[i].ops) pthread_join(th[i], NULL);
    gpuprof_shutdown();
    if ((j = fuzz_json(spath, "the summary parses")) != NULL) { check_counts(j); cJSON_Delete(j); }
    if ((j = fuzz_json(tpath, "the finished trace parses")) != NULL) cJSON_Delete(j);
    /* every thread has exited and the session ended: nothing of gpuprof's is
       left (thread states retired by a shutdown, their name tables) */
    FUZZ_CHECK(__atomic_load_n(&live_blocks, __ATOMIC_RELAXED) == 0, "all of gpuprof's memory is freed once the threads exited and the session ended");
    return 0;
}
