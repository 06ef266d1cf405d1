/* GPU timing against the simulated CUDA runtime (tests/simcuda): every
   GPU time is known, so the checks are exact (to the 0.5 us event
   resolution where it matters). Each scenario is one gpuprof session on a
   fresh virtual GPU. */
#define _GNU_SOURCE                     /* simcuda.h comes before gpuprof.h here */
#include "simcuda/simcuda.h"
#include "gpuprof.h"
#include "json_util.h"
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#define US 1000ull
#define MS 1000000ull

void ptds_range(uint64_t kernel_ns);   /* gpu_ptds.c: a file built with per-thread default streams */

static cJSON *sum;                      /* the summary of the last session */
static char errbuf[65536];              /* what the last session printed on stderr */
static int saved_err = -1;
static const char *python, *check_trace;    /* argv: the trace checker (nesting per track, JSON) */

static void trace_valid(const char *path, const char *extra) {
    char cmd[1024];
    if (!python) return;
    snprintf(cmd, sizeof cmd, "%s %s %s %s", python, check_trace, path, extra);
    CHECK(system(cmd) == 0, "check_trace.py: the trace is valid, GPU ranges nest on each stream track, each has its arrow from its CPU range");
}

static void session_begin(const char *name, int trace) {
    gpuprof_config cfg;
    static char tpath[256], spath[256];
    memset(&cfg, 0, sizeof cfg);
    snprintf(spath, sizeof spath, "gpu_%s.summary.json", name);
    snprintf(tpath, sizeof tpath, "gpu_%s.trace.json", name);
    remove(spath);          /* a session of the same name ran before: its files go, not */
    remove(tpath);          /* kept beside these (gpuprof keeps an earlier session's files) */
    cfg.summary_path = spath;
    cfg.trace_path = trace ? tpath : NULL;
    cfg.report = "off";
    cfg.report_rows = -1;
    saved_err = check_stderr_to("gpu_stderr.txt");
    CHECK(gpuprof_init(&cfg) == 0, "gpuprof_init succeeds");
}

static void session_end(const char *name) {
    char path[256];
    FILE *f;
    size_t n;
    gpuprof_shutdown();
    check_stderr_back(saved_err);
    f = fopen("gpu_stderr.txt", "rb");
    n = f ? fread(errbuf, 1, sizeof errbuf - 1, f) : 0;
    errbuf[n] = 0;
    if (f) fclose(f);
    if (n) fprintf(stderr, "[%s printed]\n%s", name, errbuf);
    if (sum) cJSON_Delete(sum);
    snprintf(path, sizeof path, "gpu_%s.summary.json", name);
    sum = summary_load(path);
    CHECK(sum != NULL, "the summary parses as JSON");
}

/* A session's trace, parsed (the caller deletes it). */
static cJSON *trace_load(const char *path) {
    char *text = check_slurp(path);
    cJSON *tr = text ? cJSON_Parse(text) : NULL;
    free(text);
    CHECK(tr != NULL, "the trace parses");
    return tr;
}

/* A GPU range in the trace, named `name` (NULL: any). */
static int is_gpu_range(cJSON *e, const char *name) {
    cJSON *cat = cJSON_GetObjectItem(e, "cat"), *nm = cJSON_GetObjectItem(e, "name");
    return cJSON_IsString(cat) && strcmp(cat->valuestring, "gpu") == 0 && (!name || (cJSON_IsString(nm) && strcmp(nm->valuestring, name) == 0));
}

static int count_lines(const char *text, const char *needle) {
    int n = 0;
    const char *p = text;
    while ((p = strstr(p, needle)) != NULL) { n++; p += strlen(needle); }
    return n;
}

static cJSON *gpu_of(const char *range) { return cJSON_GetObjectItem(summary_find(sum, "ranges", range), "gpu"); }
static const char *verdict_of(const char *range) {
    cJSON *v = cJSON_GetObjectItem(gpu_of(range), "verdict");
    return cJSON_IsString(v) ? v->valuestring : "(none)";
}

/* A training-like loop the GPU keeps up with: forward 1 ms and backward
   2 ms of GPU work, 100 us of CPU each, 3.8 ms of other host work; each
   step lasts 4 ms, of which the GPU is busy 3 ms. */
static void test_steady(void) {
    int step;
    uint64_t created_after_warmup = 0, sync0, create0 = 0, record0 = 0, capq0 = 0, extra_records;
    simcuda_reset();
    session_begin("steady", 1);
    sync0 = simcuda_sync_calls();
    for (step = 0; step < 1000; step++) {
        if (step == 20) {
            create0 = simcuda_calls("cudaEventCreateWithFlags");
            record0 = simcuda_calls("cudaEventRecord");
            capq0 = simcuda_calls("cudaStreamIsCapturing");
        }
        { PROF_RANGE("forward"); simcuda_kernel(0, 1 * MS); simcuda_advance(100 * US); }
        { PROF_RANGE("backward"); simcuda_kernel(0, 2 * MS); simcuda_advance(100 * US); }
        simcuda_advance(3800 * US);
        PROF_STEP();
    }
    created_after_warmup = simcuda_calls("cudaEventCreateWithFlags") - create0;
    extra_records = simcuda_calls("cudaEventRecord") - record0 - 2 * 2 * 980;
    CHECK(extra_records <= 5, "exactly two event records per GPU-timed range, plus one per anchor (one a second: 4 s here)");
    CHECK_EQ_U(simcuda_calls("cudaStreamIsCapturing") - capq0, 2 * 2 * 980, "two capture checks per range");
    CHECK_EQ_U(simcuda_sync_calls() - sync0, 0, "1000 steps make no synchronizing CUDA call");
    CHECK_EQ_U(created_after_warmup, 0, "no cudaEventCreate after the first 20 steps (events come from the pool)");
    CHECK(simcuda_calls("cudaEventCreateWithFlags") <= 64, "the event pool stays small when the GPU keeps up");
    session_end("steady");
    CHECK_EQ_U(jnum(gpu_of("forward"), "count"), 1000, "forward: 1000 GPU times");
    CHECK_EQ_U(jnum(gpu_of("forward"), "mean_ns"), 1 * MS, "forward: GPU mean exactly 1.000 ms");
    CHECK_EQ_U(jnum(gpu_of("backward"), "mean_ns"), 2 * MS, "backward: GPU mean exactly 2.000 ms (it waits for forward on the stream)");
    CHECK_REL(jnum(gpu_of("backward"), "p99_ns"), 2 * MS, 0.01, "backward: GPU p99 2 ms");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "forward"), "mean_ns"), 100 * US, "forward: CPU mean exactly 100 us");
    CHECK(strcmp(verdict_of("forward"), "GPU-bound") == 0, "forward (1 ms GPU, 100 us CPU) is GPU-bound");
    {
        cJSON *idle = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "gpu"), "idle_percent_per_step");
        CHECK_EQ_U(jnum(idle, "count"), 999, "GPU idle share for every counted step with a start");
        CHECK_REL(jnum(idle, "p50"), 25.0, 0.01, "the GPU is idle 25 % of each 4 ms step (3 ms in ranges)");
    }
    CHECK_EQ_U(simcuda_live_events(), 0, "every CUDA event gpuprof created is destroyed at shutdown");
    CHECK_EQ_U(count_lines(errbuf, "gpuprof:"), 0, "no message when all is well");
    trace_valid("gpu_steady.trace.json", "--expect-name forward --expect-name backward --expect-flows 2000");
}

/* 5 ms of GPU work behind 50 us of CPU: GPU-bound. The CPU does not wait,
   so the GPU falls further behind each step (the drain at the report waits
   for it: the one synchronisation gpuprof makes). */
static void test_gpu_bound(void) {
    int step;
    simcuda_reset();
    session_begin("gpu_bound", 0);
    for (step = 0; step < 100; step++) {
        { PROF_RANGE("forward"); simcuda_kernel(0, 5 * MS); simcuda_advance(50 * US); }
        PROF_STEP();
    }
    CHECK_EQ_U(simcuda_sync_calls(), 0, "nothing synchronizes before the report");
    session_end("gpu_bound");
    CHECK_EQ_U(jnum(gpu_of("forward"), "count"), 100, "forward: 100 GPU times");
    CHECK_EQ_U(jnum(gpu_of("forward"), "mean_ns"), 5 * MS, "forward: GPU 5.000 ms");
    CHECK_EQ_U(jnum(gpu_of("forward"), "max_ns"), 5 * MS, "forward: GPU max 5.000 ms");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "forward"), "mean_ns"), 50 * US, "forward: CPU 50 us");
    CHECK(strcmp(verdict_of("forward"), "GPU-bound") == 0, "a 5 ms kernel behind 50 us of CPU is GPU-bound");
    CHECK(simcuda_sync_calls() >= 1, "the report drained the pending events");
}

/* The CPU runs ahead of the GPU (1 ms kernels launched every 100 us) and
   waits for it every 10th step (a loss.item()): the GPU never idles, so no
   step -- the one that waits above all -- may read as idle. Counting only
   the GPU time of the ranges begun in a step made the waiting step read
   ~90 % idle while the GPU worked through the steps before it. */
static void test_run_ahead(void) {
    int step;
    cJSON *idle;
    simcuda_reset();
    session_begin("run_ahead", 0);
    for (step = 0; step < 200; step++) {
        { PROF_RANGE("forward"); simcuda_kernel(0, 1 * MS); simcuda_advance(100 * US); }
        if (step % 10 == 9) { PROF_RANGE("loss.item"); cudaStreamSynchronize(0); }
        PROF_STEP();
    }
    session_end("run_ahead");
    idle = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "gpu"), "idle_percent_per_step");
    CHECK_EQ_U(jnum(idle, "count"), 199, "an idle share for every counted step with a start");
    CHECK(jnum(idle, "max") < 1.0, "no step reads as idle, the waiting ones included (max < 1 %)");
    CHECK(jnum(idle, "p50") == 0.0, "the median step is exactly 0 % idle");
    CHECK_EQ_U(jnum(gpu_of("forward"), "mean_ns"), 1 * MS, "forward: GPU 1.000 ms");
    CHECK_EQ_U(count_lines(errbuf, "gpuprof:"), 0, "no message");
}

/* After the program waits for the GPU every pending range is finished at
   once; the step that follows must not take them (3 CUDA calls each) while
   the GPU sits idle waiting for its next launch, and a range end takes at
   most 32 (seen on an H100: 100-215 us of idle GPU after each loss.item). */
static void test_harvest_bound(void) {
    int step, k;
    uint64_t q0, q1;
    simcuda_reset();
    session_begin("harvest_bound", 0);
    for (step = 0; step < 10; step++) {
        for (k = 0; k < 12; k++) { PROF_RANGE("kernel"); simcuda_kernel(0, 1 * MS); simcuda_advance(10 * US); }
        PROF_STEP();
    }
    cudaStreamSynchronize(0);
    q0 = simcuda_calls("cudaEventQuery");
    PROF_STEP();
    q1 = simcuda_calls("cudaEventQuery");
    CHECK_EQ_U(q1 - q0, 0, "the step after a wait harvests nothing");
    for (k = 0; k < 16; k++) { PROF_RANGE("kernel"); simcuda_kernel(0, 1 * MS); simcuda_advance(10 * US); }
    q0 = simcuda_calls("cudaEventQuery");
    CHECK(q0 - q1 <= 33, "the 16th range end harvests at most 32 finished ranges (and finds where to stop)");
    CHECK(q0 - q1 >= 16, "... and does harvest");
    session_end("harvest_bound");
    CHECK_EQ_U(jnum(gpu_of("kernel"), "count"), 136, "every range still gets its GPU time");
}

/* 100 tiny kernels, each launched 5 us after the last: the GPU waits for
   the CPU the whole time. */
static void test_launch_bound(void) {
    int step, k;
    simcuda_reset();
    session_begin("launch_bound", 0);
    for (step = 0; step < 50; step++) {
        PROF_RANGE("tiny kernels");
        for (k = 0; k < 100; k++) { simcuda_kernel(0, 1 * US); simcuda_advance(5 * US); }
    }
    session_end("launch_bound");
    CHECK_EQ_U(jnum(gpu_of("tiny kernels"), "count"), 50, "50 GPU times");
    CHECK_EQ_U(jnum(gpu_of("tiny kernels"), "mean_ns"), 500 * US, "the range spans 500 us on the stream, idle gaps included");
    CHECK(strcmp(verdict_of("tiny kernels"), "launch-bound") == 0, "a loop of tiny kernels is launch-bound");
}

/* Nested ranges on two streams; self GPU time; one track per stream; GPU
   ranges at their true start on the CPU timeline. */
static void test_streams_and_trace(void) {
    cudaStream_t s1, s2;
    uint64_t t0, starts[20];
    int i;
    simcuda_reset();
    session_begin("streams", 1);
    t0 = simcuda_now();
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    for (i = 0; i < 20; i++) {
        starts[i] = simcuda_now();
        {
            PROF_RANGE_STREAM("outer", s1);
            simcuda_kernel(s1, 1 * MS);
            { PROF_RANGE_STREAM("inner", s1); simcuda_kernel(s1, 2 * MS); simcuda_advance(10 * US); }
            simcuda_advance(10 * US);
        }
        { PROF_RANGE_STREAM("side", s2); simcuda_kernel(s2, 4 * MS); simcuda_advance(10 * US); }
        simcuda_advance(10 * MS);
        PROF_STEP();
    }
    session_end("streams");
    trace_valid("gpu_streams.trace.json", "--expect-name outer --expect-name inner --expect-name side --expect-flows 60");
    CHECK_EQ_U(jnum(gpu_of("outer"), "mean_ns"), 3 * MS, "outer spans its 1 ms kernel and inner's 2 ms");
    CHECK_EQ_U(jnum(gpu_of("inner"), "mean_ns"), 2 * MS, "inner: 2 ms");
    CHECK_EQ_U(jnum(gpu_of("side"), "mean_ns"), 4 * MS, "side, on the other stream: 4 ms");
    CHECK_EQ_U(jnum(gpu_of("inner"), "self_ns"), 20 * 2 * MS, "inner: self = total (no children)");
    CHECK_EQ_U(jnum(gpu_of("outer"), "self_ns"), 20 * 1 * MS, "outer: GPU self time = 3 ms minus inner's 2 ms, per call");
    {
        cJSON *tr = trace_load("gpu_streams.trace.json"), *e;
        int tid_outer = -1, tid_inner = -1, tid_side = -1, n_outer = 0, bad_start = 0, tracks = 0;
        cJSON_ArrayForEach(e, trace_events(tr)) {
            const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
            int tid = cJSON_GetObjectItem(e, "tid")->valueint;
            if (ph[0] == 'M' && strcmp(cJSON_GetObjectItem(e, "name")->valuestring, "thread_name") == 0 &&
                strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "name")->valuestring, "GPU 0 stream")) tracks++;
            if (is_gpu_range(e, "outer")) {
                if (fabs(jnum(e, "ts") - (double)(starts[n_outer] - t0) / 1000.0) > 1.0) bad_start++;
                tid_outer = tid;
                n_outer++;
            } else if (is_gpu_range(e, "inner")) tid_inner = tid;
            else if (is_gpu_range(e, "side")) tid_side = tid;
        }
        CHECK_EQ_U(n_outer, 20, "20 GPU events for outer in the trace");
        CHECK_EQ_U(bad_start, 0, "every GPU range starts within 1 us of its true start on the CPU timeline");
        CHECK(tid_outer == tid_inner && tid_outer != tid_side && tid_side > 0, "one track per stream: inner with outer, side apart");
        CHECK_EQ_U(tracks, 2, "two stream tracks are named in the metadata");
        cJSON_Delete(tr);
    }
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
}

/* A long run with the GPU clock drifting 100 ppm from the CPU's and an
   offset: after the first seconds (the rate is measured over the anchors),
   GPU ranges stay within 1 us of their true start. */
static void test_drift(void) {
    uint64_t t0, starts[300];
    int i, n = 0, bad = 0, bad_early = 0;
    cJSON *tr, *e;
    simcuda_reset();
    simcuda_set_drift(100.0, 123456789);
    session_begin("drift", 1);
    t0 = simcuda_now();
    for (i = 0; i < 300; i++) {
        starts[i] = simcuda_now();
        { PROF_RANGE("k"); simcuda_kernel(0, 300 * US); simcuda_advance(20 * US); }
        simcuda_advance(1000 * MS - 20 * US);
        PROF_STEP();
    }
    session_end("drift");
    tr = trace_load("gpu_drift.trace.json");
    cJSON_ArrayForEach(e, trace_events(tr)) {
        double ts, want;
        if (!is_gpu_range(e, NULL)) continue;
        ts = jnum(e, "ts");
        want = (double)(starts[n] - t0) / 1000.0;
        if (n >= 10 && fabs(ts - want) > 1.0) { if (bad < 3) fprintf(stderr, "range %d: ts %.3f want %.3f\n", n, ts, want); bad++; }
        if (n < 10 && fabs(ts - want) > 200.0) bad_early++;
        n++;
    }
    CHECK_EQ_U(n, 300, "300 GPU ranges in the trace");
    CHECK_EQ_U(bad, 0, "after 10 s, every GPU range within 1 us of its true start despite 100 ppm drift");
    CHECK_EQ_U(bad_early, 0, "before the rate is known, within the drift of one second");
    CHECK_REL(jnum(cJSON_GetObjectItem(sum, "gpu"), "clock_rate"), 1.0 / 1.0001, 1e-7, "the measured clock rate is the simulated drift");
    CHECK_REL(jnum(gpu_of("k"), "mean_ns"), 300 * US * 1.0001, 0.002, "durations are GPU durations");
    cJSON_Delete(tr);
}

/* Real anchors are noisy: the GPU sees new work some microseconds after it
   is submitted, so an anchor's CPU time is uncertain by that much. With up
   to 20 us of random latency and 30 ppm of drift over 300 s, back-to-back
   ranges on one stream still nest and touch without overlapping (the CPU
   timeline of GPU instants is one continuous line), and each sits within
   the latency of where the CPU began it. */
static void test_anchor_noise(void) {
    uint64_t t0, begins[300];
    int i, n = 0, far = 0;
    cJSON *tr, *e;
    simcuda_reset();
    simcuda_set_latency(20 * US);
    simcuda_set_call_cost(300);           /* time passes while gpuprof polls the anchor */
    simcuda_set_drift(30.0, 5000);
    session_begin("noise", 1);
    t0 = simcuda_now();
    for (i = 0; i < 300; i++) {
        begins[i] = simcuda_now();
        { PROF_RANGE("a"); simcuda_kernel(0, 1 * MS); simcuda_advance(5 * US); }
        { PROF_RANGE("b"); simcuda_kernel(0, 2 * MS); simcuda_advance(5 * US); }
        { PROF_RANGE("c"); simcuda_kernel(0, 1 * MS); simcuda_advance(5 * US); }
        simcuda_advance(1000 * MS);
        PROF_STEP();
    }
    session_end("noise");
    trace_valid("gpu_noise.trace.json", "--expect-name a --expect-name b --expect-name c --expect-flows 900");
    tr = trace_load("gpu_noise.trace.json");
    cJSON_ArrayForEach(e, trace_events(tr)) {
        if (!is_gpu_range(e, "a")) continue;
        if (n >= 3 && fabs(jnum(e, "ts") - (double)(begins[n] - t0) / 1000.0) > 45.0) far++;
        n++;
    }
    CHECK_EQ_U(n, 300, "300 GPU ranges a");
    CHECK_EQ_U(far, 0, "each within the submission latency (+ the anchor's uncertainty) of its CPU begin");
    CHECK(jnum(cJSON_GetObjectItem(sum, "gpu"), "anchors") >= 299, "an anchor per second");
    cJSON_Delete(tr);
}

/* Stream capture: nothing recorded into the capture, the capture survives
   (also the queries of a harvest running meanwhile), skips are counted. */
static void test_capture(void) {
    cudaStream_t s;
    cudaGraph_t graph = NULL;
    cudaError_t e;
    int i;
    simcuda_reset();
    session_begin("capture", 0);
    cudaStreamCreate(&s);                                  /* a blocking stream */
    for (i = 0; i < 5; i++) { PROF_RANGE_STREAM("before", s); simcuda_kernel(s, 1 * MS); }   /* pending: GPU behind */
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    { PROF_RANGE_STREAM("captured", s); simcuda_kernel(s, 1 * MS); }
    { PROF_RANGE("legacy during capture"); }               /* legacy stream: implicitly part of the capture */
    simcuda_advance(10 * MS);
    gpuprof_flush();                                       /* harvests "before" while the capture is active */
    for (i = 0; i < 20; i++) { PROF_RANGE_STREAM("captured", s); }   /* 16 ends trigger a harvest too */
    e = cudaStreamEndCapture(s, &graph);
    CHECK(e == cudaSuccess && graph != NULL, "the capture survives gpuprof (cudaStreamEndCapture succeeds)");
    CHECK_EQ_U(simcuda_captured_records(), 0, "no event was recorded into the capture");
    CHECK_EQ_U(simcuda_invalidations(), 0, "no gpuprof query invalidated the capture");
    if (graph) cudaGraphDestroy(graph);
    { PROF_RANGE_STREAM("after", s); simcuda_kernel(s, 1 * MS); }
    session_end("capture");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(sum, "gpu"), "skipped_capture"), 22, "22 ranges skipped their GPU part, counted");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "captured"), "count"), 21, "captured ranges still have CPU times");
    CHECK(cJSON_IsNull(gpu_of("captured")), "and no GPU times");
    CHECK_EQ_U(jnum(gpu_of("before"), "count"), 5, "ranges before the capture: GPU-timed");
    CHECK_EQ_U(jnum(gpu_of("after"), "count"), 1, "ranges after it: GPU-timed");
    cudaStreamDestroy(s);
}

/* A capture that begins inside a range: its end is not recorded. */
static void test_capture_inside_range(void) {
    cudaStream_t s;
    cudaGraph_t graph = NULL;
    simcuda_reset();
    session_begin("capture_inside", 0);
    cudaStreamCreate(&s);
    {
        PROF_RANGE_STREAM("spans the capture start", s);
        cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        simcuda_kernel(s, 1 * MS);
    }
    CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess, "the capture survives");
    CHECK_EQ_U(simcuda_captured_records(), 0, "the range's end was not recorded into the capture");
    if (graph) cudaGraphDestroy(graph);
    session_end("capture_inside");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(sum, "gpu"), "skipped_capture"), 1, "counted as skipped");
    cudaStreamDestroy(s);
}

static void run_loop(int steps, int sticky_at) {
    int step;
    for (step = 0; step < steps; step++) {
        if (step == sticky_at) simcuda_sticky_error(cudaErrorIllegalAddress);
        { PROF_RANGE("forward"); simcuda_kernel(0, 1 * MS); simcuda_advance(100 * US); }
        simcuda_advance(3 * MS);
        PROF_STEP();
        gpuprof_flush();
    }
}

/* No driver, no device, a sticky error after step 10: one message each,
   CPU timing intact, what was measured before kept. */
static void test_errors(void) {
    simcuda_reset();
    simcuda_set_mode(SIMCUDA_NO_DRIVER);
    session_begin("no_driver", 1);
    run_loop(20, -1);
    session_end("no_driver");
    CHECK_EQ_U(count_lines(errbuf, "gpuprof:"), 1, "no driver: one message");
    CHECK(strstr(errbuf, "no usable NVIDIA driver") && strstr(errbuf, "cudaErrorInsufficientDriver"), "which says there is no driver");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "forward"), "count"), 20, "no driver: CPU times complete");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "device"), "available")), "no driver: device unavailable in the summary");
    CHECK(cJSON_IsNull(gpu_of("forward")), "no driver: no GPU times");

    simcuda_reset();
    simcuda_set_mode(SIMCUDA_NO_DEVICE);
    session_begin("no_device", 0);
    run_loop(20, -1);
    session_end("no_device");
    CHECK_EQ_U(count_lines(errbuf, "gpuprof:"), 1, "no device: one message");
    CHECK(strstr(errbuf, "no CUDA device visible") != NULL, "which says there is no device");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "forward"), "count"), 20, "no device: CPU times complete");

    simcuda_reset();
    session_begin("sticky", 1);
    run_loop(20, 10);
    session_end("sticky");
    CHECK_EQ_U(count_lines(errbuf, "gpuprof:"), 1, "sticky error: one message");
    CHECK(strstr(errbuf, "cudaErrorIllegalAddress") && strstr(errbuf, "CPU timing goes on"), "naming the error, saying CPU timing goes on");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "forward"), "count"), 20, "sticky error: CPU times complete");
    CHECK_EQ_U(jnum(gpu_of("forward"), "count"), 10, "sticky error: the 10 GPU times measured before it are kept");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(sum, "warnings"), "cuda_error"), 1, "counted once");
}

/* Fault injection: each cudart call gpuprof makes fails once, at its 1st,
   2nd or 5th call: at most one message, no crash, CPU statistics exact, the
   GPU times measured before the failure kept (the count never exceeds the
   calls). */
static void test_faults(void) {
    static const char *const fns[] = {
        "cudaGetDeviceCount", "cudaGetDevice", "cudaGetDeviceProperties", "cudaStreamCreateWithFlags",
        "cudaEventCreateWithFlags", "cudaEventRecord", "cudaStreamIsCapturing", "cudaEventQuery",
        "cudaEventElapsedTime", "cudaThreadExchangeStreamCaptureMode", "cudaEventSynchronize"
    };
    static const uint64_t nth[] = { 1, 2, 5 };
    unsigned f, k;
    int bad_count = 0, bad_msgs = 0, bad_gpu = 0, runs = 0, leaks = 0;
    for (f = 0; f < sizeof fns / sizeof fns[0]; f++)
        for (k = 0; k < 3; k++) {
            int step;
            simcuda_reset();
            simcuda_fail_call(fns[f], nth[k], cudaErrorLaunchFailure);
            session_begin("fault", 0);
            for (step = 0; step < 20; step++) {
                { PROF_RANGE("forward"); simcuda_kernel(0, 1 * MS); simcuda_advance(100 * US); }
                simcuda_advance(3 * MS);
                PROF_STEP();
                if (step % 5 == 4) gpuprof_flush();
            }
            { PROF_RANGE("still running at the report"); simcuda_kernel(0, 5 * MS); }
            session_end("fault");
            runs++;
            if (jnum(summary_find(sum, "ranges", "forward"), "count") != 20) bad_count++;
            if (count_lines(errbuf, "gpuprof:") > 1) bad_msgs++;
            if (jnum(gpu_of("forward"), "count") > 20) bad_gpu++;
            if (simcuda_live_events() != 0) { fprintf(stderr, "%s failing at call %d: %lld events left\n", fns[f], (int)nth[k], (long long)simcuda_live_events()); leaks++; }
            if (count_lines(errbuf, "gpuprof:") == 1 && !strstr(errbuf, "cudaErrorLaunchFailure")) bad_msgs++;
        }
    CHECK_EQ_U(runs, 33, "33 fault-injection runs");
    CHECK_EQ_U(bad_count, 0, "every cudart failure: CPU statistics exact");
    CHECK_EQ_U(bad_msgs, 0, "every cudart failure: at most one message, naming the error");
    CHECK_EQ_U(bad_gpu, 0, "every cudart failure: GPU counts consistent");
    CHECK_EQ_U(leaks, 0, "every cudart failure: all of gpuprof's CUDA events destroyed at shutdown");
}

/* Two devices: ranges are timed on the device current at their begin, also
   when the program switches devices inside a range; the device is put back. */
static void test_two_devices(void) {
    int i, dev = -1;
    simcuda_reset();
    simcuda_set_devices(2);
    session_begin("two_devices", 1);
    for (i = 0; i < 30; i++) {
        cudaSetDevice(i % 2);
        { PROF_RANGE("on its device"); simcuda_kernel(0, 1 * MS); simcuda_advance(10 * US); }
        {
            PROF_RANGE("switches inside");
            simcuda_kernel(0, 2 * MS);
            cudaSetDevice(1 - i % 2);
            simcuda_kernel(0, 5 * MS);        /* on the other device: not this range's stream */
            simcuda_advance(10 * US);
        }
        cudaGetDevice(&dev);
        if (dev != 1 - i % 2) break;
        simcuda_advance(10 * MS);
        PROF_STEP();
    }
    session_end("two_devices");
    CHECK_EQ_U(i, 30, "the device the program chose is still current after each range");
    CHECK_EQ_U(count_lines(errbuf, "gpuprof:"), 0, "no CUDA error from switching devices");
    CHECK_EQ_U(jnum(gpu_of("on its device"), "count"), 30, "30 GPU times on alternating devices");
    CHECK_EQ_U(jnum(gpu_of("on its device"), "mean_ns"), 1 * MS, "each 1 ms");
    CHECK_EQ_U(jnum(gpu_of("switches inside"), "mean_ns"), 2 * MS, "a range that switches devices is timed on the device it began on");
    trace_valid("gpu_two_devices.trace.json", "--expect-name \"switches inside\" --expect-flows 60");
    {
        char *text = check_slurp("gpu_two_devices.trace.json");
        CHECK(text && strstr(text, "GPU 0 stream: legacy default") && strstr(text, "GPU 1 stream: legacy default"), "a track per device's stream");
        free(text);
    }
}

/* Stream 0 in a file built with per-thread default streams is that
   thread's stream. */
static void test_per_thread_stream(void) {
    simcuda_reset();
    session_begin("ptds", 1);
    ptds_range(2 * MS);
    session_end("ptds");
    CHECK_EQ_U(jnum(gpu_of("ptds"), "mean_ns"), 2 * MS, "the per-thread default stream's kernel is timed");
    {
        char *text = check_slurp("gpu_ptds.trace.json");
        CHECK(text && strstr(text, "per-thread default (thread"), "its track is the thread's per-thread default stream");
        free(text);
    }
}

/* Threads on their own streams, a report from another thread meanwhile
   (it harvests their records: events go back to their owners). */
enum { NTHREADS = 4, TSTEPS = 300 };
static void *worker(void *arg) {
    cudaStream_t s;
    int i;
    (void)arg;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    for (i = 0; i < TSTEPS; i++) {
        PROF_RANGE_STREAM("work", s);
        simcuda_kernel(s, 200 * US);
    }
    cudaStreamSynchronize(s);
    return (void *)s;
}
static void test_threads(void) {
    pthread_t th[NTHREADS];
    int i;
    FILE *devnull = fopen("/dev/null", "w");
    simcuda_reset();
    session_begin("threads", 1);
    for (i = 0; i < NTHREADS; i++) pthread_create(&th[i], NULL, worker, NULL);
    for (i = 0; i < 5; i++) gpuprof_report(devnull);
    for (i = 0; i < NTHREADS; i++) { void *s; pthread_join(th[i], &s); cudaStreamDestroy((cudaStream_t)s); }
    session_end("threads");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "work"), "count"), NTHREADS * TSTEPS, "CPU count exact");
    CHECK_EQ_U(jnum(gpu_of("work"), "count"), NTHREADS * TSTEPS, "GPU count exact across threads");
    CHECK_EQ_U(simcuda_live_events(), 0, "no CUDA event leaked");
    fclose(devnull);
}

/* fork() while a session runs: CUDA is not usable in the child, and the
   child's GPUPROF_STEP and ranges must not call it (nor record); a child
   forked between sessions, after CUDA started, profiles on the CPU only. */
static void test_fork(void) {
    int pid, status;
    simcuda_reset();
    session_begin("fork", 0);
    { PROF_RANGE("parent"); simcuda_kernel(0, 1 * MS); }
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        uint64_t before = simcuda_calls("cudaEventRecord") + simcuda_calls("cudaEventQuery") + simcuda_calls("cudaEventCreateWithFlags");
        int i;
        PROF_STEP();
        for (i = 0; i < 5; i++) { PROF_RANGE("child"); simcuda_kernel(0, 1 * MS); }
        PROF_STEP();
        gpuprof_flush();
        _exit(simcuda_calls("cudaEventRecord") + simcuda_calls("cudaEventQuery") + simcuda_calls("cudaEventCreateWithFlags") == before ? 0 : 3);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "in a child forked mid-session, GPUPROF_STEP and ranges make no CUDA call");
    session_end("fork");
    CHECK_EQ_U(jnum(gpu_of("parent"), "count"), 1, "the parent's GPU time is there");
    CHECK(summary_find(sum, "ranges", "child") == NULL, "nothing of the child's");

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        gpuprof_config cfg;
        uint64_t before = simcuda_calls("cudaGetDeviceCount");
        int fd = open("gpu_fork_child.err", O_WRONLY | O_CREAT | O_TRUNC, 0644), i;
        dup2(fd, 2);
        close(fd);
        memset(&cfg, 0, sizeof cfg);
        cfg.report = "off";
        cfg.summary_path = "gpu_fork_child.json";
        if (gpuprof_init(&cfg) != 0) _exit(1);
        for (i = 0; i < 4; i++) { PROF_RANGE("child"); }
        gpuprof_shutdown();
        _exit(simcuda_calls("cudaGetDeviceCount") == before ? 0 : 3);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a child forked between sessions starts its own without touching CUDA");
    {
        cJSON *j = summary_load("gpu_fork_child.json");
        char *err = check_slurp("gpu_fork_child.err");
        CHECK_EQ_U(jnum(summary_find(j, "ranges", "child"), "count"), 4, "and records on the CPU");
        CHECK(err && strstr(err, "gpuprof: this process was forked after CUDA started in its parent, and CUDA cannot be used across fork(); GPU timing is off, CPU timing goes on"),
              "one line says why its GPU timing is off");
        cJSON_Delete(j);
        free(err);
    }
}

int main(int argc, char **argv) {
    if (argc > 2) { python = argv[1]; check_trace = argv[2]; }
    test_fork();
    test_steady();
    test_gpu_bound();
    test_run_ahead();
    test_harvest_bound();
    test_launch_bound();
    test_streams_and_trace();
    test_drift();
    test_anchor_noise();
    test_capture();
    test_capture_inside_range();
    test_errors();
    test_faults();
    test_two_devices();
    test_per_thread_stream();
    test_threads();
    if (sum) cJSON_Delete(sum);
    return check_done("test_gpu");
}
