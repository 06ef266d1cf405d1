/* Memory: tracked allocations by category, GPUPROF_MEM phase snapshots,
   per-range deltas, the memory tables and trace counters. Built twice:
   against the simulated CUDA runtime (GPUPROF_CUDA: a virtual device heap
   and memory pool whose every byte is known, so device figures are exact)
   and as a CPU build (tracked bytes and host RSS only, device figures
   unavailable). test_mem_tsan is the CUDA one under ThreadSanitizer. */
#define _GNU_SOURCE
#ifdef GPUPROF_CUDA
#include "simcuda/simcuda.h"
#endif
#include "gpuprof.h"
#include "json_util.h"
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <unistd.h>

#define MiB (1024.0 * 1024.0)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static cJSON *sum;                      /* the summary of the last session */
static char *report;                    /* its text report */
static char *errtext;                   /* what it printed on stderr */
static int saved_err = -1;
static const char *python, *check_trace;

static void session_begin(const char *name, int trace, int mem_ranges) {
    gpuprof_config cfg;
    static char spath[256], tpath[256], rpath[256];
    memset(&cfg, 0, sizeof cfg);
    snprintf(spath, sizeof spath, "mem_%s.summary.json", name);
    snprintf(tpath, sizeof tpath, "mem_%s.trace.json", name);
    snprintf(rpath, sizeof rpath, "mem_%s.report.txt", name);
    cfg.summary_path = spath;
    cfg.trace_path = trace ? tpath : NULL;
    cfg.report = rpath;
    cfg.report_rows = -1;
    cfg.mem_ranges = mem_ranges;
    saved_err = check_stderr_to("mem_stderr.txt");
    CHECK(gpuprof_init(&cfg) == 0, "gpuprof_init succeeds");
}

static void session_end(const char *name) {
    char path[256];
    gpuprof_shutdown();
    check_stderr_back(saved_err);
    free(errtext);
    free(report);
    errtext = check_slurp("mem_stderr.txt");
    if (errtext && *errtext) fprintf(stderr, "[%s printed]\n%s", name, errtext);
    snprintf(path, sizeof path, "mem_%s.report.txt", name);
    report = check_slurp(path);
    snprintf(path, sizeof path, "mem_%s.summary.json", name);
    if (sum) cJSON_Delete(sum);
    sum = summary_load(path);
    CHECK(sum != NULL, "the summary parses");
    CHECK(report != NULL, "the report was written");
}

static int count_lines(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text ? text : ""; (p = strstr(p, needle)) != NULL; p++) n++;
    return n;
}
static cJSON *mem(void) { return cJSON_GetObjectItem(sum, "memory"); }
static cJSON *named(cJSON *array, const char *key, const char *name) {
    cJSON *e;
    cJSON_ArrayForEach(e, array) {
        cJSON *n = cJSON_GetObjectItem(e, key);
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) return e;
    }
    return NULL;
}
static cJSON *phase(const char *label) { return named(cJSON_GetObjectItem(mem(), "phases"), "label", label); }
static cJSON *category(const char *name) {
    return named(cJSON_GetObjectItem(cJSON_GetObjectItem(mem(), "tracked"), "categories"), "name", name);
}
static const char *jstr(cJSON *obj, const char *key) {
    cJSON *v = obj ? cJSON_GetObjectItem(obj, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : "(not a string)";
}
static int jnull(cJSON *obj, const char *key) { return obj && cJSON_IsNull(cJSON_GetObjectItem(obj, key)); }
static void report_has(const char *text, const char *what) {
    char msg[512];
    snprintf(msg, sizeof msg, "the report says: %s", text);
    CHECK(report && strstr(report, text), msg);
    (void)what;
}

/* Allocations of the training-loop scenario: on the simulated device
   through the CUDA wrappers, or (CPU build) addresses that are only
   tracked, never touched. */
#ifndef GPUPROF_CUDA
static uintptr_t fake_next = 0x100000;
#endif
static void *dev_alloc(size_t bytes, const char *category) {
#ifdef GPUPROF_CUDA
    void *p = NULL;
    CHECK(gpuprof_cuda_malloc(&p, bytes, category) == cudaSuccess, "gpuprof_cuda_malloc succeeds");
    return p;
#else
    void *p = (void *)fake_next;
    fake_next += bytes + 4096;
    gpuprof_mem_alloc(p, bytes, category);
    return p;
#endif
}
static void dev_free(void *p) {
#ifdef GPUPROF_CUDA
    CHECK(gpuprof_cuda_free(p) == cudaSuccess, "gpuprof_cuda_free succeeds");
#else
    gpuprof_mem_free(p);
#endif
}

/* The scenario: 4 MiB of parameters; each step 100 MiB of
   activations in forward (freed in backward), 100 MiB of gradients in the
   first backward, 200 MiB of optimizer state at the first step. */
static void test_training_phases(void) {
    void *params, *grads = NULL, *state = NULL, *act;
    int step;
#ifdef GPUPROF_CUDA
    simcuda_reset();
#endif
    session_begin("phases", 1, 0);
    params = dev_alloc(4 << 20, "parameters");
    GPUPROF_MEM("start");
    for (step = 0; step < 5; step++) {
        { PROF_RANGE("forward"); act = dev_alloc(100 << 20, "activations"); }
        GPUPROF_MEM("forward");
        {
            PROF_RANGE("backward");
            if (!grads) grads = dev_alloc(100 << 20, "gradients");
            dev_free(act);
        }
        GPUPROF_MEM("backward");
        { PROF_RANGE("optimizer"); if (!state) state = dev_alloc(200 << 20, "optimizer"); }
        GPUPROF_MEM("optimizer");
        PROF_STEP();
    }
    session_end("phases");
    (void)params;
    CHECK_EQ_U(jnum(mem(), "snapshots"), 16, "16 snapshots");
    CHECK_EQ_U(jnum(phase("start"), "count"), 1, "start: 1 snapshot");
    CHECK_EQ_U(jnum(phase("start"), "tracked_bytes"), 4 * MiB, "start: 4 MiB tracked");
    CHECK_EQ_U(jnum(phase("start"), "tracked_delta_bytes"), 4 * MiB, "start: +4 MiB since the session began (the first snapshot has the init baseline to compare with)");
    CHECK_EQ_U(jnum(phase("start"), "tracked_growth_bytes"), 4 * MiB, "start: its growth is the 4 MiB of parameters, not 0");
    CHECK_EQ_U(jnum(phase("forward"), "count"), 5, "forward: 5 snapshots");
    CHECK_EQ_U(jnum(phase("forward"), "tracked_bytes"), 404 * MiB, "forward: 404 MiB tracked at the last");
    CHECK_EQ_U(jnum(phase("forward"), "tracked_delta_bytes"), 100 * MiB, "forward: +100 MiB");
    CHECK_EQ_U(jnum(phase("forward"), "tracked_growth_bytes"), 100 * MiB, "forward: largest growth +100 MiB");
    CHECK(strcmp(jstr(phase("forward"), "growth_category"), "activations") == 0, "forward grows activations");
    CHECK_EQ_U(jnum(phase("forward"), "tracked_peak_bytes"), 404 * MiB, "forward: peak 404 MiB");
    CHECK_EQ_U(jnum(phase("backward"), "tracked_bytes"), 304 * MiB, "backward: 304 MiB");
    CHECK_EQ_U(-jnum(phase("backward"), "tracked_delta_bytes"), 100 * MiB, "backward: -100 MiB (activations freed)");
    CHECK_EQ_U(jnum(phase("backward"), "tracked_growth_bytes"), 0, "backward's largest growth: 0 (+100 gradients, -100 activations at step 0)");
    CHECK(strcmp(jstr(phase("backward"), "growth_category"), "gradients") == 0, "... the category that grew in it: gradients");
    CHECK_EQ_U(jnum(phase("optimizer"), "tracked_bytes"), 304 * MiB, "optimizer: 304 MiB");
    CHECK_EQ_U(jnum(phase("optimizer"), "tracked_delta_bytes"), 0, "optimizer: +0 at the last step");
    CHECK_EQ_U(jnum(phase("optimizer"), "tracked_growth_bytes"), 200 * MiB, "optimizer: +200 MiB at the first step");
    CHECK(strcmp(jstr(phase("optimizer"), "growth_category"), "optimizer") == 0, "optimizer grows optimizer state");
    {
        cJSON *tr = cJSON_GetObjectItem(mem(), "tracked"), *g = cJSON_GetObjectItem(mem(), "largest_growth");
        CHECK_EQ_U(jnum(tr, "peak_bytes"), 404 * MiB, "overall peak: 404 MiB");
        CHECK_EQ_U(jnum(tr, "peak_step"), 1, "reached at step 1");
        CHECK(strcmp(jstr(tr, "peak_before"), "forward") == 0, "before snapshot \"forward\"");
        CHECK_EQ_U(jnum(tr, "live_bytes"), 304 * MiB, "304 MiB live at the end");
        CHECK_EQ_U(jnum(tr, "allocs"), 8, "8 allocations");
        CHECK_EQ_U(jnum(tr, "frees"), 5, "5 frees");
        CHECK(strcmp(jstr(g, "label"), "optimizer") == 0 && jnum(g, "bytes") == 200 * MiB && strcmp(jstr(g, "category"), "optimizer") == 0 &&
              jnum(g, "step") == 0, "largest growth: optimizer, +200 MiB of optimizer state, step 0");
    }
    CHECK_EQ_U(jnum(category("activations"), "live_bytes"), 0, "activations: none live");
    CHECK_EQ_U(jnum(category("activations"), "peak_bytes"), 100 * MiB, "activations: peak 100 MiB");
    CHECK_EQ_U(jnum(category("activations"), "at_peak_bytes"), 100 * MiB, "activations: 100 MiB at the overall peak");
    CHECK_EQ_U(jnum(category("activations"), "allocs"), 5, "activations: 5 allocations");
    CHECK_EQ_U(jnum(category("activations"), "frees"), 5, "activations: 5 frees");
    CHECK_EQ_U(jnum(category("gradients"), "at_peak_bytes"), 100 * MiB, "gradients: 100 MiB at the peak");
    CHECK_EQ_U(jnum(category("optimizer"), "at_peak_bytes"), 200 * MiB, "optimizer: 200 MiB at the peak");
    CHECK_EQ_U(jnum(category("parameters"), "at_peak_bytes"), 4 * MiB, "parameters: 4 MiB at the peak");
    report_has("largest growth: \"optimizer\" +200 MiB tracked, mostly optimizer (+200 MiB), step 0 | peak 404 MiB tracked at step 1 before snapshot \"forward\", optimizer 50%", "");
    report_has("Tracked allocations by category (overall peak 404 MiB at step 1, before snapshot \"forward\"", "");
    report_has("activations        0 B    100 MiB    100 MiB   24.8%          5          5", "");
    report_has("optimizer      200 MiB    200 MiB    200 MiB   49.5%          1          0", "");
#ifdef GPUPROF_CUDA
    /* the virtual device: a 512 MiB context, cudaMalloc in 2 MiB pages */
    CHECK_EQ_U(jnum(phase("start"), "device_used_bytes"), 516 * MiB, "device: 512 MiB context + 4 MiB");
    CHECK_EQ_U(jnum(phase("forward"), "device_used_bytes"), 916 * MiB, "device after forward: 916 MiB");
    CHECK_EQ_U(jnum(phase("forward"), "device_delta_bytes"), 100 * MiB, "device: +100 MiB in forward");
    CHECK_EQ_U(-jnum(phase("backward"), "device_delta_bytes"), 100 * MiB, "device: -100 MiB in backward");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(mem(), "device"), "available")), "device figures available");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(mem(), "device"), "total_bytes"), 80 * 1024 * MiB, "device total 80 GiB");
    report_has("forward           5    404 MiB   +100 MiB    404 MiB   +100 MiB    916 MiB   +100 MiB", "");
    report_has("device 0: 816 MiB used of 80.0 GiB", "");
#else
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(mem(), "device"), "available")), "CPU build: device figures unavailable");
    CHECK(jnull(phase("forward"), "device_used_bytes"), "CPU build: no device figure, not 0");
    report_has("Device memory: unavailable (CPU build", "");
    report_has("forward           5    404 MiB   +100 MiB    404 MiB   +100 MiB", "");
#endif
    CHECK(jnum(phase("forward"), "rss_bytes") > 0, "host RSS present");
    CHECK(jnum(cJSON_GetObjectItem(mem(), "host"), "peak_rss_bytes") >= jnum(cJSON_GetObjectItem(mem(), "host"), "rss_bytes"), "peak RSS >= RSS");
    CHECK_EQ_U(count_lines(errtext, "gpuprof:"), 0, "no message");
    if (python) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s %s mem_phases.trace.json --expect-name forward", python, check_trace);
        CHECK(system(cmd) == 0, "the trace is valid");
    }
    {
        /* counter tracks: activations go 100, 0, 100, 0 ... MiB */
        char *text = check_slurp("mem_phases.trace.json");
        cJSON *tr = text ? cJSON_Parse(text) : NULL, *e;
        int act = 0, act_ok = 1, rss = 0, dev = 0, marks = 0;
        cJSON_ArrayForEach(e, trace_events(tr)) {
            const char *ph = jstr(e, "ph"), *nm = jstr(e, "name");
            if (strcmp(ph, "C") == 0 && strcmp(nm, "memory: activations (MiB)") == 0) {
                double v = jnum(cJSON_GetObjectItem(e, "args"), "value");
                if (v != (act % 2 ? 0.0 : 100.0)) act_ok = 0;
                act++;
            }
            if (strcmp(ph, "C") == 0 && strcmp(nm, "memory: host RSS (MiB)") == 0) rss++;
            if (strcmp(ph, "C") == 0 && strcmp(nm, "memory: device used (MiB)") == 0) dev++;
            if (strcmp(ph, "i") == 0 && strcmp(nm, "optimizer") == 0 && strcmp(jstr(e, "cat"), "memory") == 0) marks++;
        }
        CHECK_EQ_U(act, 10, "trace: 10 samples of the activations counter");
        CHECK(act_ok, "trace: activations 100, 0, 100, 0, ... MiB");
        CHECK_EQ_U(rss, 16, "trace: host RSS at each snapshot");
#ifdef GPUPROF_CUDA
        CHECK_EQ_U(dev, 16, "trace: device used at each snapshot");
#else
        CHECK_EQ_U(dev, 0, "trace: no device counter in a CPU build");
#endif
        CHECK_EQ_U(marks, 5, "trace: an instant event (cat memory) per snapshot");
        cJSON_Delete(tr);
        free(text);
    }
}

#ifdef GPUPROF_CUDA
/* cudaMallocAsync: the default pool's used/reserved figures, their
   high-water marks, the release at a synchronization, and the reset. */
static void test_pool(void) {
    void *a = NULL, *b = NULL;
    cJSON *d;
    simcuda_reset();
    session_begin("pool", 0, 0);
    CHECK(gpuprof_cuda_malloc_async(&a, 100 << 20, 0, "workspace") == cudaSuccess, "100 MiB from the pool");
    CHECK(gpuprof_cuda_malloc_async(&b, 50 << 20, 0, "workspace") == cudaSuccess, "50 MiB from the pool");
    GPUPROF_MEM("two");
    CHECK(gpuprof_cuda_free_async(a, 0) == cudaSuccess, "100 MiB back");
    GPUPROF_MEM("one");
    cudaStreamSynchronize(0);                  /* the pool releases down to its threshold (0) */
    GPUPROF_MEM("synced");
    gpuprof_mem_reset_peaks();
    GPUPROF_MEM("reset");
    session_end("pool");
    CHECK_EQ_U(jnum(phase("two"), "pool_used_bytes"), 150 * MiB, "two: pool used 150 MiB");
    CHECK_EQ_U(jnum(phase("two"), "pool_reserved_bytes"), 160 * MiB, "two: reserved 160 MiB (32 MiB chunks)");
    CHECK_EQ_U(jnum(phase("two"), "device_used_bytes"), 672 * MiB, "two: device used = context + reserved");
    CHECK_EQ_U(jnum(phase("one"), "pool_used_bytes"), 50 * MiB, "one: pool used 50 MiB");
    CHECK_EQ_U(-jnum(phase("one"), "pool_used_delta_bytes"), 100 * MiB, "one: used -100 MiB");
    CHECK_EQ_U(jnum(phase("one"), "pool_reserved_bytes"), 160 * MiB, "one: still 160 MiB reserved");
    CHECK_EQ_U(jnum(phase("synced"), "pool_reserved_bytes"), 64 * MiB, "synced: reserved down to 64 MiB");
    CHECK_EQ_U(-jnum(phase("synced"), "device_delta_bytes"), 96 * MiB, "synced: the device got 96 MiB back");
    CHECK_EQ_U(-jnum(phase("synced"), "pool_reserved_delta_bytes"), 96 * MiB, "synced: reserved -96 MiB");
    CHECK_EQ_U(jnum(phase("synced"), "tracked_bytes"), 50 * MiB, "50 MiB tracked");
    d = cJSON_GetObjectItem(cJSON_GetObjectItem(mem(), "device"), "pool");
    CHECK_EQ_U(jnum(d, "used_bytes"), 50 * MiB, "last snapshot: pool used 50 MiB");
    CHECK_EQ_U(jnum(d, "used_high_bytes"), 50 * MiB, "after the reset the used high-water mark is what is used");
    CHECK_EQ_U(jnum(d, "reserved_high_bytes"), 64 * MiB, "and the reserved one what is reserved");
    report_has("two            1    150 MiB   +150 MiB    150 MiB   +150 MiB    672 MiB   +160 MiB    150 MiB    160 MiB", "");
    CHECK_EQ_U(jnum(phase("two"), "device_delta_bytes"), 160 * MiB, "two: +160 MiB of device memory since init (context 512 MiB then)");
    report_has("Default pool (cudaMallocAsync) high-water marks: used 50.0 MiB, reserved 64.0 MiB", "");
    CHECK_EQ_U(count_lines(errtext, "gpuprof:"), 0, "no message");

    /* before the reset, the marks had seen 150 and 160 MiB */
    simcuda_reset();
    session_begin("pool2", 0, 0);
    CHECK(gpuprof_cuda_malloc_async(&a, 100 << 20, 0, "workspace") == cudaSuccess, "100 MiB");
    CHECK(gpuprof_cuda_malloc_async(&b, 50 << 20, 0, "workspace") == cudaSuccess, "50 MiB");
    gpuprof_cuda_free_async(a, 0);
    gpuprof_cuda_free_async(b, 0);
    GPUPROF_MEM("empty");
    session_end("pool2");
    d = cJSON_GetObjectItem(cJSON_GetObjectItem(mem(), "device"), "pool");
    CHECK_EQ_U(jnum(d, "used_bytes"), 0, "nothing used");
    CHECK_EQ_U(jnum(d, "used_high_bytes"), 150 * MiB, "used high-water mark 150 MiB");
    CHECK_EQ_U(jnum(d, "reserved_high_bytes"), 160 * MiB, "reserved high-water mark 160 MiB");

    /* a device without memory pools: no pool figures, no message */
    simcuda_reset();
    simcuda_set_pools(0);
    session_begin("nopool", 0, 0);
    GPUPROF_MEM("x");
    session_end("nopool");
    CHECK(jnull(phase("x"), "pool_used_bytes"), "no pool: pool figures null");
    CHECK_EQ_U(jnum(phase("x"), "device_used_bytes"), 512 * MiB, "device figures still there");
    CHECK_EQ_U(count_lines(errtext, "gpuprof:"), 0, "no message");
}

/* No device (the simulated runtime's): device figures unavailable, host
   figures present, the one no-GPU message. */
static void test_no_device(void) {
    simcuda_reset();
    simcuda_set_mode(SIMCUDA_NO_DEVICE);
    session_begin("nodev", 0, 0);
    gpuprof_mem_alloc((void *)0x1000, 1 << 20, "host buffers");
    GPUPROF_MEM("a");
    session_end("nodev");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(mem(), "device"), "available")), "device unavailable");
    CHECK(jnull(phase("a"), "device_used_bytes"), "device used: null, not 0");
    CHECK(jnum(phase("a"), "rss_bytes") > 0, "host RSS present");
    CHECK_EQ_U(jnum(phase("a"), "tracked_bytes"), 1 * MiB, "tracked bytes present");
    CHECK_EQ_U(count_lines(errtext, "gpuprof:"), 1, "one message (no GPU)");
    report_has("Device memory: unavailable (", "");
    report_has("device: unavailable", "");
}
#endif

/* Host RSS follows a 256 MiB buffer that is touched, then freed. */
static void test_host_rss(void) {
    size_t n = (size_t)256 << 20;
    char *p;
    double up, down;
#ifdef GPUPROF_CUDA
    simcuda_reset();
#endif
    session_begin("rss", 0, 0);
    GPUPROF_MEM("before");
    p = (char *)malloc(n);
    CHECK(p != NULL, "256 MiB allocated");
    if (!p) return;
    {
        volatile char *v = p;                  /* every page written, and not optimised away */
        size_t i;
        for (i = 0; i < n; i += 4096) v[i] = (char)i;
    }
    GPUPROF_MEM("touched");
    free(p);
    malloc_trim(0);
    GPUPROF_MEM("freed");
    session_end("rss");
    up = jnum(phase("touched"), "rss_delta_bytes");
    down = jnum(phase("freed"), "rss_delta_bytes");
    printf("host RSS: +%.1f MiB touched, %.1f MiB freed\n", up / MiB, down / MiB);
#if SANITIZED
    /* a sanitizer's shadow memory grows and shrinks with the buffer */
    CHECK(up > 240 * MiB, "RSS rises by at least 256 MiB (sanitizer shadow on top) when the buffer is touched");
    CHECK(down < -240 * MiB, "and falls after free + malloc_trim");
#else
    CHECK(up > 240 * MiB && up < 272 * MiB, "RSS rises by about 256 MiB when the buffer is touched");
    CHECK(down < -240 * MiB && down > -272 * MiB, "and falls by about as much after free + malloc_trim");
#endif
    CHECK(jnum(cJSON_GetObjectItem(mem(), "host"), "peak_rss_bytes") >= jnum(phase("touched"), "rss_bytes"), "the peak RSS saw it");
    report_has("   Host RSS          \xce\x94", "");
}

/* Misuse: unknown and double frees, an address tracked twice, NULL. */
static void test_misuse(void) {
    int a, b;
#ifdef GPUPROF_CUDA
    simcuda_reset();
#endif
    session_begin("misuse", 0, 0);
    gpuprof_mem_alloc(&a, 1000, "x");
    gpuprof_mem_free(&a);
    gpuprof_mem_free(&a);                       /* double free */
    gpuprof_mem_free(&b);                       /* never tracked */
    gpuprof_mem_alloc(&b, 300, "y");
    gpuprof_mem_alloc(&b, 500, "z");            /* tracked again without a free */
    gpuprof_mem_alloc(NULL, 100, "x");          /* a failed allocation: ignored */
    gpuprof_mem_free(NULL);                     /* free(NULL): ignored */
    gpuprof_mem_alloc(&a, 7, NULL);             /* no category */
    {
        static char many[40];                   /* 40 more categories: over the cap of 32 */
        char cat[16];
        int k;
        for (k = 0; k < 40; k++) {
            snprintf(cat, sizeof cat, "many %d", k);
            gpuprof_mem_alloc(&many[k], 10, cat);
        }
    }
    GPUPROF_MEM("end");
    session_end("misuse");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(mem(), "tracked"), "unknown_frees"), 2, "two frees of untracked pointers counted");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(sum, "warnings"), "mem_unknown_free"), 2, "as warnings");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(sum, "warnings"), "mem_tracked_twice"), 1, "one address tracked twice");
    CHECK_EQ_U(count_lines(errtext, "not a tracked allocation"), 1, "one message for the untracked frees");
    CHECK_EQ_U(count_lines(errtext, "already tracked"), 1, "one message for the address tracked twice");
    CHECK_EQ_U(jnum(category("y"), "live_bytes"), 0, "the first allocation at the address counts as freed");
    CHECK_EQ_U(jnum(category("z"), "live_bytes"), 500, "the second is live");
    CHECK_EQ_U(jnum(category("(untagged)"), "live_bytes"), 7, "no category: \"(untagged)\"");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(mem(), "tracked"), "live_bytes"), 507 + 400, "907 bytes live");
    CHECK_EQ_U(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(mem(), "tracked"), "categories")), GPUPROF_MEM_CATEGORIES,
               "categories stop at the cap (GPUPROF_MEM_CATEGORIES)");
    CHECK_EQ_U(jnum(category("(other categories)"), "live_bytes"), 10 * (40 - (GPUPROF_MEM_CATEGORIES - 1 - 4)),
               "the ones over it count as \"(other categories)\", every byte kept");
    CHECK_EQ_U(count_lines(errtext, "memory categories"), 1, "one message about the cap");
    report_has("2 frees of untracked pointers ignored", "");
    {
        /* after shutdown a program frees its buffers on the way out: silently */
        int saved = check_stderr_to("mem_after.txt");
        char *after;
        gpuprof_mem_free(&b);
        check_stderr_back(saved);
        after = check_slurp("mem_after.txt");
        CHECK(after && !*after, "gpuprof_mem_free after gpuprof_shutdown says nothing");
        free(after);
    }
}

/* 8 threads allocate and free concurrently: every total exact. */
enum { THREADS = 8, PER_THREAD = 20000 };
static void *alloc_worker(void *arg) {
    int k = (int)(intptr_t)arg, i;
    char cat[16];
    uintptr_t base = ((uintptr_t)k + 1) << 32;
    snprintf(cat, sizeof cat, "cat %d", k % 4);
    for (i = 0; i < PER_THREAD; i++) {
        gpuprof_mem_alloc((void *)(base + (uintptr_t)i * 64), (size_t)(i % 7 + 1) * 1000, cat);
        if (i % 2) gpuprof_mem_free((void *)(base + (uintptr_t)(i - 1) * 64));   /* the even ones are freed */
        if (i % 1000 == 0) GPUPROF_MEM("worker");
    }
    return NULL;
}
static void test_threads(void) {
    pthread_t th[THREADS];
    int k, i;
    double live_per_thread = 0, peak;
#ifdef GPUPROF_CUDA
    simcuda_reset();
#endif
    session_begin("threads", 0, 0);
    for (k = 0; k < THREADS; k++) pthread_create(&th[k], NULL, alloc_worker, (void *)(intptr_t)k);
    for (k = 0; k < THREADS; k++) pthread_join(th[k], NULL);
    GPUPROF_MEM("joined");
    session_end("threads");
    for (i = 1; i < PER_THREAD; i += 2) live_per_thread += (double)(i % 7 + 1) * 1000;
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(mem(), "tracked"), "allocs"), THREADS * PER_THREAD, "every allocation counted");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(mem(), "tracked"), "frees"), THREADS * PER_THREAD / 2, "every free counted");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(mem(), "tracked"), "live_bytes"), THREADS * live_per_thread, "live bytes exact");
    for (k = 0; k < 4; k++) {
        char cat[16];
        snprintf(cat, sizeof cat, "cat %d", k);
        CHECK_EQ_U(jnum(category(cat), "live_bytes"), 2 * live_per_thread, "each category's live bytes exact (two threads each)");
        CHECK_EQ_U(jnum(category(cat), "allocs"), 2 * PER_THREAD, "each category's allocations exact");
    }
    peak = jnum(cJSON_GetObjectItem(mem(), "tracked"), "peak_bytes");
    CHECK(peak >= THREADS * live_per_thread, "the peak is at least what is live at the end");
    CHECK_EQ_U(jnum(phase("worker"), "count"), THREADS * PER_THREAD / 1000, "every snapshot counted");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(mem(), "tracked"), "unknown_frees"), 0, "no free was lost");
}

/* mem_ranges: what each range changes, per call. */
static void test_mem_ranges(void) {
    void *p[3];
    int i;
    cJSON *grow, *shrink;
#ifdef GPUPROF_CUDA
    simcuda_reset();
#endif
    session_begin("ranges", 0, 1);
    for (i = 0; i < 3; i++) { PROF_RANGE("grow"); p[i] = dev_alloc(10 << 20, "blocks"); }
    for (i = 0; i < 3; i++) { PROF_RANGE("shrink"); dev_free(p[i]); }
    { PROF_RANGE("nothing"); }
    session_end("ranges");
    grow = cJSON_GetObjectItem(summary_find(sum, "ranges", "grow"), "mem");
    shrink = cJSON_GetObjectItem(summary_find(sum, "ranges", "shrink"), "mem");
    CHECK_EQ_U(jnum(grow, "calls"), 3, "grow: 3 calls measured");
    CHECK_EQ_U(jnum(grow, "tracked_delta_mean_bytes"), 10 * MiB, "grow: +10 MiB tracked per call");
    CHECK_EQ_U(-jnum(shrink, "tracked_delta_mean_bytes"), 10 * MiB, "shrink: -10 MiB tracked per call");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(summary_find(sum, "ranges", "nothing"), "mem"), "tracked_delta_mean_bytes"), 0, "nothing: 0");
#ifdef GPUPROF_CUDA
    CHECK_EQ_U(jnum(grow, "device_delta_mean_bytes"), 10 * MiB, "grow: +10 MiB of device memory per call");
    CHECK_EQ_U(-jnum(shrink, "device_delta_mean_bytes"), 10 * MiB, "shrink: -10 MiB of device memory per call");
#else
    CHECK(jnull(grow, "device_delta_mean_bytes"), "CPU build: no device delta");
#endif
    report_has("Tracked \xce\x94/call  Device \xce\x94/call", "");
    report_has("+10.0 MiB", "");
}

/* Without mem_ranges nothing changes for ranges: no column, "mem": null. */
static void test_off(void) {
#ifdef GPUPROF_CUDA
    simcuda_reset();
    {
        uint64_t before = simcuda_calls("cudaMemGetInfo");
#endif
        session_begin("off", 0, 0);
        { PROF_RANGE("r"); gpuprof_mem_alloc((void *)0x5000, 64, "x"); }
        session_end("off");
#ifdef GPUPROF_CUDA
        CHECK_EQ_U(simcuda_calls("cudaMemGetInfo") - before, 1, "no device query without snapshots or mem_ranges, but the baseline's at init");
    }
#endif
    CHECK(jnull(summary_find(sum, "ranges", "r"), "mem"), "ranges: \"mem\": null");
    CHECK(!strstr(report, "/call"), "no per-range memory columns");
    CHECK(strstr(report, "Tracked allocations by category") != NULL, "the category table still shows the tracked bytes");
    CHECK(!strstr(report, "Memory by phase"), "no phase table without snapshots");
}

/* A category or label with a control character cannot break the report's
   one-line memory reading (nor its tables): it shows as '?'. */
static void test_odd_category(void) {
    static char buf[64];
    const char *line, *end;
    session_begin("odd", 0, 0);
    GPUPROF_MEM("before");
    gpuprof_mem_alloc(buf, 64 << 20, "acti\nvations\x1b[31m");
    gpuprof_mem_snapshot("for\rward");
    session_end("odd");
    line = report ? strstr(report, "   memory: ") : NULL;
    end = line ? strchr(line, '\n') : NULL;
    CHECK(line && end, "the report has its memory line");
    CHECK(line && end && strstr(line, "largest growth: \"for?ward\" +64.0 MiB tracked, mostly acti?vations?[31m (+64.0 MiB)") &&
          strstr(line, "largest growth") < end, "the category's and the label's control characters show as '?', on one line");
    CHECK(report && !strchr(report, '\r') && !strchr(report, '\x1b'), "no control character reaches the report");
    CHECK_EQ_U(jnum(category("acti\nvations\x1b[31m"), "live_bytes"), 64 << 20, "the summary keeps the name as given");
}

int main(int argc, char **argv) {
    if (argc > 2) { python = argv[1]; check_trace = argv[2]; }
    test_odd_category();
    test_training_phases();
#ifdef GPUPROF_CUDA
    test_pool();
    test_no_device();
#endif
    test_host_rss();
    test_misuse();
    test_threads();
    test_mem_ranges();
    test_off();
    if (sum) cJSON_Delete(sum);
    free(report);
    free(errtext);
    return check_done("test_mem");
}
