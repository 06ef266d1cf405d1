/* Kernel capture (SPEC 13) against the simulated CUPTI (tests/simcupti)
   driven by the simulated CUDA runtime: every kernel's, copy's and wait's
   true time is known, so the tables are checked exactly. Failures that end
   capture for the whole process run in a child process each (this program
   again, with --case NAME).

   argv: [1] libsimcupti.so  [2] a copy without cuptiActivityFlushAll
         [3] python3  [4] check_trace.py */
#define _GNU_SOURCE
#include "simcuda/simcuda.h"
#include "simcupti/simcupti.h"
#define GPUPROF_CLOCK_FN() simcuda_now()
#define GPUPROF_IMPLEMENTATION
#include "gpuprof.h"
#include "json_util.h"
#include <cuda_occupancy.h>
#include <sys/wait.h>

#define US 1000ull
#define MS 1000000ull
#define MIB (1024ull * 1024ull)

static const char *self_path, *sim_lib, *nosym_lib, *python, *check_trace;
static const char *session_trace;       /* the next session streams a trace here */
static int session_from_kernels;        /* the next session times ranges by their kernels (GPUPROF_GPU=kernels) */
static cJSON *sum;
static char errbuf[65536];
static int saved_err = -1;

/* A session with kernel capture; the simulated CUPTI is as the caller set it
   (simcupti_reset first, then failures to inject). */
static void session_begin(const char *name, int warmup) {
    gpuprof_config cfg;
    static char spath[256];
    memset(&cfg, 0, sizeof cfg);
    snprintf(spath, sizeof spath, "k_%s.summary.json", name);
    remove(spath);
    cfg.summary_path = spath;
    cfg.report = "k_report.txt";
    remove("k_report.txt");
    cfg.report_rows = -1;
    cfg.warmup = warmup;
    cfg.kernels = 1;
    cfg.kernel_buffer_mb = 512;             /* the worker scenario holds many small buffers at once */
    cfg.trace_path = session_trace;
    cfg.gpu_from_kernels = session_from_kernels;
    if (session_trace) remove(session_trace);
    simcuda_reset();
    saved_err = check_stderr_to("k_stderr.txt");
    CHECK(gpuprof_init(&cfg) == 0, "gpuprof_init succeeds");
}

static void session_end(const char *name) {
    char path[256];
    char *text;
    gpuprof_shutdown();
    check_stderr_back(saved_err);
    text = check_slurp("k_stderr.txt");
    snprintf(errbuf, sizeof errbuf, "%s", text ? text : "");
    free(text);
    if (errbuf[0]) fprintf(stderr, "[%s printed]\n%s", name, errbuf);
    if (sum) cJSON_Delete(sum);
    snprintf(path, sizeof path, "k_%s.summary.json", name);
    sum = summary_load(path);
    CHECK(sum != NULL, "the summary is valid JSON");
}

static cJSON *capture(void) { return cJSON_GetObjectItem(sum, "capture"); }

static cJSON *find_kind(const char *array, const char *key, const char *value) {
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(sum, array)) {
        cJSON *v = cJSON_GetObjectItem(e, key);
        if (cJSON_IsString(v) && strcmp(v->valuestring, value) == 0) return e;
    }
    return NULL;
}

static const char *jstr(cJSON *o, const char *key) {
    cJSON *v = o ? cJSON_GetObjectItem(o, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : "(not a string)";
}

/* One step of a training loop; the step lasts 11.32 ms:
   data: a 64 MiB pageable copy (10 ms), then a wait for it;
   forward: gemm (100 us) and 4 x relu (5 us), 20 us of CPU;
   backward: gemm_bw (200 us); loss: two waits (300 us, then none);
   outside any range: a memset (2 us); then 1 ms of host work. */
static uint64_t backward_host_ns;       /* CPU time in backward before its launch (the trace scenario's) */
static void train_step(cudaStream_t s) {
    int i;
    { PROF_RANGE("data"); simcupti_memcpy(s, SIMCUPTI_HTOD, SIMCUPTI_PAGEABLE, 64 * MIB, 10 * MS); simcupti_sync(SIMCUPTI_SYNC_STREAM, s); }
    {
        PROF_RANGE("forward");
        simcupti_kernel(s, "gemm", 100 * US, 128, 256);
        for (i = 0; i < 4; i++) simcupti_kernel(s, "relu", 5 * US, 64, 128);
        simcuda_advance(20 * US);
    }
    { PROF_RANGE("backward"); simcuda_advance(backward_host_ns); simcupti_kernel(s, "gemm_bw", 200 * US, 256, 256); }
    { PROF_RANGE("loss"); simcupti_sync(SIMCUPTI_SYNC_STREAM, s); simcupti_sync(SIMCUPTI_SYNC_STREAM, s); }
    simcupti_memset(s, MIB, 2 * US);
    simcuda_advance(1 * MS);
    PROF_STEP();
}

static void check_training_tables(const char *what) {
    cJSON *c = capture(), *k, *x, *y, *r;
    char msg[256];
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(c, "on")), "capture.on is true while capture runs");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(c, "status")), "capture.status is null: nothing went wrong");
    snprintf(msg, sizeof msg, "%s: 11 records per step, 5 steps, and gpuprof's own event queries", what);
    CHECK_EQ_U(jnum(c, "records") - jnum(c, "own"), 55, msg);
    /* CUPTI records every cudaEventQuery as an event synchronization: those
       gpuprof makes to read ranges' GPU times are counted apart, and are in
       neither the sync table nor the trace */
    CHECK(jnum(c, "own") > 0, "gpuprof's own event queries were recorded, and set apart");
    CHECK(simcupti_api_quiet(0, 135) && simcupti_api_quiet(1, 119) && simcupti_api_quiet(0, 317) && simcupti_api_quiet(0, 17),
          "the calls of every GPU-timed range (cudaEventRecord, cuEventRecord, cudaStreamIsCapturing, cudaGetDevice) are not recorded");
    CHECK(!simcupti_api_quiet(0, 138) && !simcupti_api_quiet(0, 137) && !simcupti_api_quiet(0, 211),
          "... cudaEventQuery, cudaEventSynchronize and the launches are");
    CHECK(find_kind("syncs", "kind", "event") == NULL, "... not in the sync table: the program made no event sync");
    CHECK_EQ_U(jnum(c, "unattributed"), 5, "the memsets outside any range are unattributed (all 5 steps)");
    CHECK_EQ_U(jnum(c, "dropped"), 0, "nothing dropped");
    CHECK_EQ_U(jnum(c, "waiting"), 0, "no record waits for its launch record at the end");
    CHECK_EQ_U(jnum(c, "kernels_counted"), 24, "24 kernels in the 4 counted steps (step 0 is warm-up)");
    CHECK_REL(jnum(c, "short_kernel_share"), 16.0 / 24.0, 1e-8, "16 of 24 kernels are shorter than 10 us");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(c, "kernels_per_step"), "mean"), 6, "6 kernels per counted step");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(c, "kernels_per_step"), "count"), 4, "4 counted steps with a length");
    CHECK_REL(jnum(cJSON_GetObjectItem(c, "gpu_busy_percent_per_step"), "mean"), 100.0 * 10.322 / 11.32, 1e-8,
              "GPU busy share of the step: copy 10 ms + kernels 320 us + memset 2 us over the step's 11.32 ms");
    k = cJSON_GetArrayItem(cJSON_GetObjectItem(sum, "kernels"), 0);
    CHECK(strcmp(jstr(k, "name"), "gemm_bw") == 0, "the largest kernel comes first: gemm_bw");
    CHECK_EQ_U(jnum(k, "count"), 4, "gemm_bw: 4 counted calls");
    CHECK_EQ_U(jnum(k, "sum_ns"), 800 * US, "gemm_bw: 4 x 200 us exactly");
    CHECK_EQ_U(jnum(k, "max_ns"), 200 * US, "gemm_bw: max 200 us");
    CHECK_REL(jnum(k, "share"), 800.0 / 1280.0, 1e-12, "gemm_bw: 62.5% of kernel time");
    CHECK(strcmp(jstr(k, "range"), "backward") == 0, "gemm_bw ran in backward");
    CHECK_EQ_U(cJSON_GetArrayItem(cJSON_GetObjectItem(k, "grid"), 0)->valuedouble, 256, "gemm_bw grid x 256");
    k = summary_find(sum, "kernels", "gemm");
    CHECK_EQ_U(jnum(k, "sum_ns"), 400 * US, "gemm: 4 x 100 us");
    CHECK(strcmp(jstr(k, "range"), "forward") == 0, "gemm ran in forward");
    CHECK_EQ_U(cJSON_GetArrayItem(cJSON_GetObjectItem(k, "grid"), 0)->valuedouble, 128, "gemm: grid (128,1,1)");
    CHECK_EQ_U(cJSON_GetArrayItem(cJSON_GetObjectItem(k, "block"), 0)->valuedouble, 256, "gemm: block (256,1,1)");
    CHECK_EQ_U(cJSON_GetArrayItem(cJSON_GetObjectItem(k, "block"), 1)->valuedouble, 1, "gemm: block y 1");
    k = summary_find(sum, "kernels", "relu");
    CHECK_EQ_U(jnum(k, "count"), 16, "relu: 16 calls");
    CHECK_EQ_U(jnum(k, "p50_ns"), 5 * US, "relu: p50 5 us");
    r = summary_find(sum, "ranges", "forward");
    CHECK_EQ_U(jnum(r, "kernel_calls"), 20, "forward launched 20 kernels in counted steps");
    CHECK_EQ_U(jnum(r, "kernel_ns"), 480 * US, "forward's kernels: 480 us");
    r = summary_find(sum, "ranges", "backward");
    CHECK_EQ_U(jnum(r, "kernel_ns"), 800 * US, "backward's kernels: 800 us");
    r = summary_find(sum, "ranges", "data");
    CHECK_EQ_U(jnum(r, "kernel_calls"), 0, "data launched no kernel (a copy is not a kernel)");
    r = summary_path(sum, "forward");
    CHECK_EQ_U(jnum(r, "kernel_calls"), 20, "tree: forward's kernel calls");
    x = find_kind("transfers", "kind", "HtoD");
    CHECK(x && strcmp(jstr(x, "host_memory"), "pageable") == 0, "the copy is HtoD from pageable memory");
    CHECK_EQ_U(jnum(x, "count"), 4, "4 counted copies");
    CHECK_EQ_U(jnum(x, "bytes"), 4 * 64 * MIB, "4 x 64 MiB");
    CHECK_EQ_U(jnum(x, "sum_ns"), 40 * MS, "4 x 10 ms");
    CHECK_REL(jnum(x, "bytes_per_s"), 64.0 * MIB / 0.010, 1e-12, "6.71 GB/s");
    CHECK(strcmp(jstr(x, "range"), "data") == 0, "the copies ran in data");
    y = find_kind("syncs", "kind", "stream");
    CHECK_EQ_U(jnum(y, "count"), 12, "12 stream waits in counted steps");
    CHECK_EQ_U(jnum(y, "sum_ns"), 4 * (10 * MS + 300 * US), "the CPU waited 10 ms + 300 us per step");
    CHECK(strcmp(jstr(y, "range"), "loss") == 0, "most waits are in loss");
}

static void scenario_training(void) {
    cudaStream_t s;
    char *report;
    int i;
    simcupti_reset();
    session_begin("training", 1);
    CHECK(simcupti_has_timestamp_callback(), "gpuprof gave CUPTI its clock");
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    gpuprof_set_stream(s);
    for (i = 0; i < 5; i++) train_step(s);
    CHECK_EQ_U(simcupti_depth(5), 0, "every pushed id was popped (CUSTOM2)");
    CHECK_EQ_U(simcupti_depth(3) + simcupti_depth(4), 0, "torch's CUSTOM0/1 stacks are left alone");
    gpuprof_write_summary("k_mid.summary.json");
    session_end("training");
    check_training_tables("at shutdown");
    {
        cJSON *keep = sum;
        sum = summary_load("k_mid.summary.json");
        CHECK(sum != NULL, "a mid-run summary");
        if (sum) check_training_tables("mid-run");
        cJSON_Delete(sum);
        sum = keep;
    }
    CHECK(errbuf[0] == 0, "nothing printed on stderr");
    report = check_slurp("k_report.txt");
    CHECK(report && strstr(report, "24 kernels in counted steps, 6.0 per step | GPU busy 91.2% of the step"), "the report's kernel line");
    CHECK(report && strstr(report, "66.7% shorter than 10 us"), "the report gives the share of short kernels");
    CHECK(report && strstr(report, "HtoD         pageable"), "the transfer table names the pageable copy");
    CHECK(report && strstr(report, "(pageable: pin the host memory"), "... and what to do about it");
    CHECK(report && strstr(report, "stream                   12     41.2 ms  loss"), "the synchronization table");
    CHECK(report && strstr(report, "(256,1,1)x(256,1,1)"), "the kernel table gives the launch shape");
    if (report) printf("%s", report);
    free(report);
    cudaStreamDestroy(s);
}

/* Buffers delivered by CUPTI's own thread as they fill, small ones, two
   launching threads: every kernel still finds its range. The two threads'
   ranges run at once; their simulated GPU work (a launch, then 5 us of
   simulated time) one after the other: the simulated clock is shared, and
   one thread's advance falling inside the other's launch made a kernel
   5 us longer (or lost it) about once in 60 runs -- a flaw of the
   simulation, not of the capture. */
static pthread_mutex_t sim_work = PTHREAD_MUTEX_INITIALIZER;
static void *launcher(void *arg) {
    cudaStream_t s = (cudaStream_t)arg;
    int i;
    for (i = 0; i < 300; i++) {
        PROF_RANGE("worker");
        pthread_mutex_lock(&sim_work);
        simcupti_kernel(s, "tiny", 3 * US, 1, 32);
        simcuda_advance(5 * US);
        pthread_mutex_unlock(&sim_work);
    }
    return NULL;
}

static void check_span(const char *range, const char *obj, uint64_t calls, uint64_t per_call, uint64_t nowork, const char *what);
static void scenario_worker(int from_kernels) {
    cudaStream_t s1, s2;
    pthread_t a, b;
    cJSON *r, *k;
    simcupti_reset();
    session_from_kernels = from_kernels;     /* the second time: the call slots of two threads, the collector on CUPTI's */
    session_begin("worker", 0);
    session_from_kernels = 0;
    simcupti_set_delivery(1);
    simcupti_set_buffer_use(8192);
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    pthread_create(&a, NULL, launcher, s1);
    pthread_create(&b, NULL, launcher, s2);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    simcuda_advance(10 * MS);
    {
        int i;
        for (i = 0; i < 50 && simcupti_buffers_delivered() < 10; i++) usleep(2000);
    }
    CHECK(simcupti_buffers_delivered() >= 10, "CUPTI's thread delivered buffers as they filled");
    simcupti_set_delivery(0);
    session_end("worker");
    r = summary_find(sum, "ranges", "worker");
    CHECK_EQ_U(jnum(r, "kernel_calls"), 600, "all 600 kernels from two threads found their range");
    k = summary_find(sum, "kernels", "tiny");
    CHECK_EQ_U(jnum(k, "sum_ns"), 600 * 3 * US, "600 x 3 us");
    CHECK_EQ_U(jnum(capture(), "unattributed"), 0, "none unattributed");
    CHECK_EQ_U(jnum(capture(), "short_kernel_share"), 1, "all shorter than 10 us");
    check_span("worker", from_kernels ? "gpu" : "kernel_span", 600, 3 * US, 0,
               from_kernels ? "GPUPROF_GPU=kernels, two threads, buffers on CUPTI's thread: every call's span is its kernel"
                            : "two threads, buffers on CUPTI's thread: every call's span is its kernel");
    CHECK_EQ_U(jnum(capture(), "spans_skipped") + jnum(capture(), "spans_late"), 0, "no call without its span");
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
}

/* CUDA graphs: every kernel of a launch carries the launch's correlation
   id; all belong to the range around cudaGraphLaunch, every time. */
static void scenario_graphs(void) {
    cudaStream_t s;
    int i;
    simcupti_reset();
    session_begin("graphs", 0);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    gpuprof_set_stream(s);
    for (i = 0; i < 3; i++) { PROF_RANGE("replay"); simcupti_graph_launch(s, 7, 5, "graph_node", 10 * US); }
    { PROF_RANGE("replay_again"); simcupti_graph_launch(s, 7, 5, "graph_node", 10 * US); }   /* the graph id again */
    simcupti_graph_launch(s, 8, 2, "graph_node", 10 * US);                                  /* outside any range */
    simcupti_sync(SIMCUPTI_SYNC_STREAM, s);
    session_end("graphs");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "replay"), "kernel_calls"), 15, "3 launches x 5 kernels in replay");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "replay_again"), "kernel_calls"), 5, "a reused graph id goes to the range of its launch");
    CHECK_EQ_U(jnum(summary_find(sum, "kernels", "graph_node"), "count"), 22, "every graph kernel is in the kernel table");
    CHECK_EQ_U(jnum(capture(), "unattributed"), 2, "the launch outside any range: 2 unattributed");
    CHECK(strcmp(jstr(summary_find(sum, "kernels", "graph_node"), "range"), "replay") == 0, "graph_node ran in replay most");
    cudaStreamDestroy(s);
}

/* Zero and reversed timestamps, drops: counted, left out, said. */
static void scenario_bad_records(void) {
    cudaStream_t s;
    int i;
    simcupti_reset();
    session_begin("bad", 0);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    gpuprof_set_stream(s);
    simcupti_bad_next(2, 0);
    for (i = 0; i < 5; i++) { PROF_RANGE("k"); simcupti_kernel(s, "kern", 50 * US, 1, 1); }
    simcupti_bad_next(1, 1);
    { PROF_RANGE("k"); simcupti_kernel(s, "kern", 50 * US, 1, 1); }
    simcupti_drop(7);
    simcupti_sync(SIMCUPTI_SYNC_STREAM, s);
    session_end("bad");
    CHECK_EQ_U(jnum(capture(), "bad_timestamps"), 3, "2 zero and 1 reversed timestamp counted");
    CHECK_EQ_U(jnum(summary_find(sum, "kernels", "kern"), "count"), 3, "the 3 good kernels are kept");
    CHECK_EQ_U(jnum(summary_find(sum, "kernels", "kern"), "sum_ns"), 150 * US, "... with their exact times");
    CHECK_EQ_U(jnum(capture(), "dropped"), 7, "CUPTI's dropped records are reported");
    CHECK(strstr(errbuf, "gpuprof: CUPTI dropped 7 activity records for want of buffer space") != NULL, "one line says so, with the setting");
    CHECK(strstr(errbuf, "GPUPROF_KERNEL_BUFFER_MB") != NULL, "... naming GPUPROF_KERNEL_BUFFER_MB");
    cudaStreamDestroy(s);
}

/* C++ kernels (what nvcc names them) are shown demangled, also in a program
   of C like this one, which loads no C++ runtime of its own. */
static void scenario_demangle(void) {
    static const char *const mangled = "_Z12linear1_reluPKf6paramsPf";
    cudaStream_t s;
    cJSON *k;
    simcupti_reset();
    session_begin("demangle", 0);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    gpuprof_set_stream(s);
    { PROF_RANGE("linear1"); simcupti_kernel(s, mangled, 20 * US, 4, 256); simcupti_kernel(s, "_Zbroken", 5 * US, 1, 1); }
    simcupti_sync(SIMCUPTI_SYNC_STREAM, s);
    session_end("demangle");
    k = summary_find(sum, "kernels", "linear1_relu(float const*, params, float*)");
    CHECK(k != NULL, "the kernel's C++ name, demangled");
    CHECK_EQ_U(k ? jnum(k, "count") : 0, 1, "... with its launch");
    CHECK(summary_find(sum, "kernels", mangled) == NULL, "... and not its mangled name");
    CHECK(summary_find(sum, "kernels", "_Zbroken") != NULL, "a name that does not demangle is shown as CUPTI spells it");
    {
        char *text = check_slurp("k_report.txt");
        CHECK(text && strstr(text, "\nlinear1_relu(float const*, params, float*)  ") != NULL, "the report shows the demangled name");
        free(text);
    }
    cudaStreamDestroy(s);
}

/* A range that waits for the GPU by copying to the host (cudaMemcpy into a
   pageable buffer, as loss.item() does) makes no synchronizing call CUPTI
   reports: the verdict names the copy. */
static void scenario_copy_wait(void) {
    cudaStream_t s;
    int k;
    simcupti_reset();
    session_begin("copywait", 1);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    gpuprof_set_stream(s);
    for (k = 0; k < 6; k++) {
        { PROF_RANGE("work"); simcupti_kernel(s, "long", 500 * US, 64, 256); simcuda_advance(10 * US); }
        {
            PROF_RANGE("loss.item");
            cudaStreamSynchronize(s);        /* the copy's implicit wait: no record of its own */
            simcupti_memcpy(s, SIMCUPTI_DTOH, SIMCUPTI_PAGEABLE, 4, 2 * US);
            simcuda_advance(2 * US);
        }
        PROF_STEP();
    }
    session_end("copywait");
    {
        char *text = check_slurp("k_report.txt");
        const char *why = text ? strstr(text, " per call in a copy to pageable host memory for GPU work queued before it\n") : NULL;
        const char *line = why;
        while (line && line > text && line[-1] != '\n') line--;
        CHECK(why && !strncmp(line, "loss.item ", 10) && strstr(line, " sync-bound ") && strstr(line, " sync-bound ") < why,
              "sync-bound without a synchronizing call: the verdict's loss.item row names the copy to pageable host memory");
        CHECK(find_kind("syncs", "kind", "stream") == NULL, "no synchronization record: the wait was the copy's");
        free(text);
    }
    cudaStreamDestroy(s);
}

/* Kernel time beside the range's event-timed GPU time: a range whose host
   work spaces out its launches keeps the GPU idle inside it. */
static void scenario_idle_inside(void) {
    cudaStream_t s;
    int i, k;
    simcupti_reset();
    session_begin("idle", 0);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    gpuprof_set_stream(s);
    for (k = 0; k < 3; k++) {
        { PROF_RANGE("gappy"); for (i = 0; i < 4; i++) { if (i) simcuda_advance(20 * US); simcupti_kernel(s, "small", 5 * US, 1, 32); } }
        { PROF_RANGE("packed"); for (i = 0; i < 4; i++) simcupti_kernel(s, "small", 5 * US, 1, 32); }
        simcupti_sync(SIMCUPTI_SYNC_STREAM, s);
        simcuda_advance(100 * US);
    }
    session_end("idle");
    {
        char *text = check_slurp("k_report.txt");
        const char *t = text ? strstr(text, "\nKernels by range") : NULL;
        CHECK(t && strstr(t, "\ngappy         12       4.0    60.0 us   50.0%     195 us   30.8%\n"),
              "a range that spaces its launches: 20 us of kernels in a 65 us GPU span per call, busy 30.8%");
        CHECK(t && strstr(t, "\npacked        12       4.0    60.0 us   50.0%    60.0 us  100.0%\n"),
              "back-to-back launches: the GPU span is the kernels, busy 100%");
        free(text);
    }
    cudaStreamDestroy(s);
}

/* A range's GPU time two ways: from its CUDA events, and from the kernels
   launched inside it (the span: first start to last end, nested ranges
   included), side by side; then GPUPROF_GPU=kernels, which times ranges by
   their kernels alone, with no CUDA event. The workload of each step:
   late_launch: 30 us of host work, then a 10 us kernel: events 40 us (the
       stream idles from the range's begin), kernels 10 us;
   nokern: 5 us of host work, no GPU work: events 5 us, no span;
   outer: a 5 us kernel, then inner: a 20 us kernel: both ways 25 and 20 us;
   two_streams: 10 us on the range's stream, 40 us on another at once:
       events (one stream) 10 us, kernels 40 us.
   4 steps, the first one warm-up. */
static cJSON *trace_find(cJSON *ev, const char *cat, const char *name, int nth);

/* A trace file checked by check_trace.py (with its --expect-name options), then parsed (NULL: not JSON). */
static cJSON *trace_checked(const char *path, const char *expect, const char *what) {
    char cmd[1024], *text;
    cJSON *tr;
    snprintf(cmd, sizeof cmd, "%s %s %s %s", python, check_trace, path, expect);
    CHECK(system(cmd) == 0, what);
    text = check_slurp(path);
    tr = text ? cJSON_Parse(text) : NULL;
    free(text);
    return tr;
}

static void spans_step(cudaStream_t s, cudaStream_t s2) {
    { PROF_RANGE("late_launch"); simcuda_advance(30 * US); simcupti_kernel(s, "k10", 10 * US, 1, 32); }
    simcupti_sync(SIMCUPTI_SYNC_STREAM, s);
    { PROF_RANGE("nokern"); simcuda_advance(5 * US); }
    {
        PROF_RANGE("outer");
        simcupti_kernel(s, "k5", 5 * US, 1, 32);
        { PROF_RANGE("inner"); simcupti_kernel(s, "k20", 20 * US, 1, 32); }
    }
    simcupti_sync(SIMCUPTI_SYNC_STREAM, s);
    { PROF_RANGE("two_streams"); simcupti_kernel(s, "k10", 10 * US, 1, 32); simcupti_kernel(s2, "k40", 40 * US, 1, 32); }
    simcupti_sync(SIMCUPTI_SYNC_DEVICE, s);
    simcuda_advance(100 * US);
    PROF_STEP();
}

static void check_span(const char *range, const char *obj, uint64_t calls, uint64_t per_call, uint64_t nowork, const char *what) {
    cJSON *r = summary_find(sum, "ranges", range), *k = cJSON_GetObjectItem(r, obj);
    char msg[256];
    snprintf(msg, sizeof msg, "%s: %s.count %llu", what, obj, (unsigned long long)calls);
    CHECK_EQ_U(jnum(k, "count"), calls, msg);
    if (calls) {
        snprintf(msg, sizeof msg, "%s: %s %llu ns per call, exactly", what, obj, (unsigned long long)per_call);
        CHECK(jnum(k, "min_ns") == (double)per_call && jnum(k, "max_ns") == (double)per_call && jnum(k, "sum_ns") == (double)(calls * per_call), msg);
    }
    snprintf(msg, sizeof msg, "%s: %s.no_work_calls %llu", what, obj, (unsigned long long)nowork);
    CHECK_EQ_U(jnum(k, "no_work_calls"), nowork, msg);
}

/* A session with GPUPROF_GPU=kernels and a stream of its own for the ranges
   (the simulated GPU starts afresh with each session). */
static cudaStream_t from_kernels_session(const char *name, int warmup) {
    cudaStream_t s;
    simcupti_reset();
    session_from_kernels = 1;
    session_begin(name, warmup);
    session_from_kernels = 0;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    gpuprof_set_stream(s);
    return s;
}

static void scenario_spans(void) {
    cudaStream_t s, s2;
    uint64_t records;
    char *text;
    cJSON *tr, *ev, *e, *g;
    int i;
    /* events (the default) and spans side by side */
    simcupti_reset();
    session_begin("spans", 1);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    gpuprof_set_stream(s);
    for (i = 0; i < 4; i++) spans_step(s, s2);
    session_end("spans");
    CHECK(strcmp(jstr(cJSON_GetObjectItem(sum, "gpu"), "source"), "events") == 0, "gpu.source is events by default");
    check_span("late_launch", "gpu", 3, 40 * US, 0, "events: the range's begin to its kernel's end");
    check_span("late_launch", "kernel_span", 3, 10 * US, 0, "kernels: the kernel alone");
    check_span("nokern", "gpu", 3, 5 * US, 0, "events: an idle stream's events complete as they are recorded");
    check_span("nokern", "kernel_span", 0, 0, 3, "kernels: a range that launched nothing has no span");
    check_span("outer", "gpu", 3, 25 * US, 0, "events: outer");
    check_span("outer", "kernel_span", 3, 25 * US, 0, "kernels: outer holds inner's kernel too");
    check_span("inner", "kernel_span", 3, 20 * US, 0, "kernels: inner");
    check_span("two_streams", "gpu", 3, 10 * US, 0, "events: only the range's stream");
    check_span("two_streams", "kernel_span", 3, 40 * US, 0, "kernels: every stream it launched on");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(summary_find(sum, "ranges", "outer"), "kernel_span"), "work_ns"), 3 * 5 * US,
               "kernel_span.work_ns: the work launched in outer itself, not in inner");
    CHECK_EQ_U(jnum(capture(), "spans_skipped") + jnum(capture(), "spans_late"), 0, "every call had its span, none came late");
    text = check_slurp("k_report.txt");
    CHECK(text && strstr(text, "\nGPU time per call two ways"), "the report shows both figures side by side");
    CHECK(text && strstr(text, "\nlate_launch         3     40.0 us     10.0 us     40.0 us      10.0 us  -75%        0\n"),
          "late_launch: events 40 us, kernels 10 us");
    CHECK(text && strstr(text, "\nnokern              3     5.00 us           -     5.00 us            -     -        3\n"),
          "nokern: no span, 3 calls without work");
    CHECK(text && strstr(text, "\ntwo_streams         3     10.0 us     40.0 us     10.0 us      40.0 us +300%        0\n"),
          "two_streams: kernels see the other stream");
    if (text && strstr(text, "\nGPU time per call two ways")) printf("%.*s", (int)(strstr(strstr(text, "\nGPU time per call two ways") + 1, "\n\n") - strstr(text, "\nGPU time per call two ways") + 1), strstr(text, "\nGPU time per call two ways"));
    free(text);

    /* GPUPROF_GPU=kernels: no CUDA event, the spans are the GPU time */
    session_trace = "k_spans_trace.json";
    s = from_kernels_session("spans_k", 1);
    session_trace = NULL;
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    records = simcuda_calls("cudaEventRecord");
    for (i = 0; i < 4; i++) spans_step(s, s2);
    CHECK_EQ_U(simcuda_calls("cudaEventRecord") - records, 0, "GPUPROF_GPU=kernels: the ranges record no CUDA event");
    session_end("spans_k");
    CHECK(errbuf[0] == 0, "nothing printed on stderr");
    CHECK(strcmp(jstr(cJSON_GetObjectItem(sum, "gpu"), "source"), "kernels") == 0, "gpu.source is kernels");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(capture(), "gpu_from_kernels")), "capture.gpu_from_kernels is true");
    check_span("late_launch", "gpu", 3, 10 * US, 0, "GPU time from kernels: late_launch");
    check_span("outer", "gpu", 3, 25 * US, 0, "GPU time from kernels: outer");
    check_span("inner", "gpu", 3, 20 * US, 0, "GPU time from kernels: inner");
    check_span("two_streams", "gpu", 3, 40 * US, 0, "GPU time from kernels: two_streams");
    check_span("nokern", "gpu", 0, 0, 3, "GPU time from kernels: nokern has none");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(summary_find(sum, "ranges", "two_streams"), "gpu"), "self_ns"), 3 * 50 * US,
               "gpu.self_ns from kernels: the GPU work launched in the range itself (10 + 40 us per call)");
    text = check_slurp("k_report.txt");
    CHECK(text && strstr(text, "ranges' GPU time from their kernels (GPUPROF_GPU=kernels)"), "the report's header says where GPU time comes from");
    CHECK(text && strstr(text, "ranges timed by their kernels (no CUDA event)"), "... and its GPU line");
    CHECK(text && !strstr(text, "\nGPU time per call two ways"), "no side-by-side table: there are no events");
    CHECK(text && strstr(text, "Busy: kernel time / Span"), "Kernels by range compares the kernels with the span");
    free(text);
    tr = trace_checked("k_spans_trace.json", "--expect-name outer --expect-name k20",
                       "check_trace.py: the trace with ranges timed by kernels is valid, slices nest, arrows bind");
    ev = trace_events(tr);
    for (i = 0; i < 4; i++) {
        int j, starts = 0, ends = 0;
        g = trace_find(ev, "gpu", "outer", i);
        for (j = 0; g && j < 4; j++) {
            cJSON *k5 = trace_find(ev, "kernel", "k5", j), *k20 = trace_find(ev, "kernel", "k20", j);
            starts += k5 && fabs(jnum(g, "ts") - jnum(k5, "ts")) < 0.002;
            ends += k20 && fabs(jnum(g, "ts") + jnum(g, "dur") - jnum(k20, "ts") - jnum(k20, "dur")) < 0.002;
        }
        CHECK(g && starts == 1 && ends == 1, "the range 'outer' on the GPU: from its first kernel's start to its last one's end (warm-up step included)");
    }
    CHECK(trace_find(ev, "gpu", "outer", 4) == NULL, "... once per call");
    i = 0;
    cJSON_ArrayForEach(e, ev) {
        cJSON *a = cJSON_GetObjectItem(e, "args");
        if (!strcmp(jstr(e, "ph"), "M") && !strcmp(jstr(e, "name"), "thread_name") && strstr(jstr(a, "name"), "ranges (from their kernels)")) i++;
    }
    CHECK(i == 1, "the ranges timed by kernels have a track of their own beside the stream's kernels");
    cJSON_Delete(tr);

    /* gpuprof_reset: the calls before it are not counted, also when their spans close after it */
    s = from_kernels_session("spans_reset", 0);
    for (i = 0; i < 3; i++) { PROF_RANGE("a"); simcupti_kernel(s, "k10", 10 * US, 1, 32); simcupti_sync(SIMCUPTI_SYNC_STREAM, s); }
    gpuprof_reset();
    for (i = 0; i < 2; i++) { PROF_RANGE("a"); simcupti_kernel(s, "k20", 20 * US, 1, 32); simcupti_sync(SIMCUPTI_SYNC_STREAM, s); }
    session_end("spans_reset");
    check_span("a", "gpu", 2, 20 * US, 0, "after gpuprof_reset: only the calls since");
    check_span("a", "kernel_span", 2, 20 * US, 0, "... in kernel_span too");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "a"), "kernel_calls"), 2, "kernel_calls since the reset");
    CHECK(summary_find(sum, "kernels", "k10") == NULL || jnum(summary_find(sum, "kernels", "k10"), "count") == 0,
          "the kernel table starts again: no k10 (launched before the reset, handed over after it)");
    CHECK_EQ_U(jnum(summary_find(sum, "kernels", "k20"), "count"), 2, "k20: the 2 calls since");
    CHECK_EQ_U(jnum(find_kind("syncs", "kind", "stream"), "count"), 2, "the sync table since the reset");

    /* a record that comes after its call was settled: counted, not misplaced */
    s = from_kernels_session("spans_late", 0);
    { PROF_RANGE("slow"); simcupti_kernel(s, "k10", 10 * US, 1, 32); }
    PROF_STEP();
    simcuda_advance(6000 * MS);
    PROF_STEP();                           /* folds the call: ended 6 s ago, its record not handed over yet */
    session_end("spans_late");
    CHECK_EQ_U(jnum(capture(), "spans_late"), 1, "the kernel that came 6 s after its range ended is counted late");
    check_span("slow", "gpu", 0, 0, 1, "... and its range has no span");
    CHECK(errbuf[0] == 0, "nothing printed on stderr");
    text = check_slurp("k_report.txt");
    CHECK(text && strstr(text, "1 came after their range's GPU span was closed (5 s after its end, or 32768 calls later)"), "the report says so");
    free(text);
    cudaStreamDestroy(s);
    cudaStreamDestroy(s2);
}

/* Records of CUDA 12 (smaller) and of a later CUPTI (larger): walked with
   cuptiActivityGetNextRecord, read at the offsets they share. */
static void scenario_layouts(void) {
    static const int layout[2] = { SIMCUPTI_CUDA12, SIMCUPTI_FUTURE };
    int l, i;
    for (l = 0; l < 2; l++) {
        cudaStream_t s;
        simcupti_reset();
        session_begin(l ? "future" : "cuda12", 0);
        simcupti_set_layout(layout[l]);
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        gpuprof_set_stream(s);
        for (i = 0; i < 4; i++) {
            PROF_RANGE("mix");
            simcupti_kernel(s, "k12", 30 * US, 2, 64);
            simcupti_memcpy(s, SIMCUPTI_DTOH, SIMCUPTI_PINNED, MIB, 100 * US);
            simcupti_sync(SIMCUPTI_SYNC_DEVICE, s);
        }
        session_end(l ? "future" : "cuda12");
        CHECK_EQ_U(jnum(summary_find(sum, "kernels", "k12"), "sum_ns"), 120 * US, "kernels read in another record layout");
        CHECK_EQ_U(jnum(summary_find(sum, "ranges", "mix"), "kernel_calls"), 4, "and attributed");
        CHECK_EQ_U(jnum(find_kind("transfers", "kind", "DtoH"), "bytes"), 4 * MIB, "copies read in another layout");
        CHECK(strcmp(jstr(find_kind("transfers", "kind", "DtoH"), "host_memory"), "pinned") == 0, "to pinned memory");
        CHECK_EQ_U(jnum(find_kind("syncs", "kind", "device"), "count"), 4, "device synchronizations read in another layout");
        cudaStreamDestroy(s);
    }
}

/* The trace: each kernel, copy and memset on its stream's track with
   Kineto's categories and arguments, the call that launched it on the CPU
   thread, an arrow from one to the other; kernels where the event-timed
   GPU ranges around them are. */
static cJSON *trace_find(cJSON *ev, const char *cat, const char *name, int nth) {
    cJSON *e;
    cJSON_ArrayForEach(e, ev) {
        if (strcmp(jstr(e, "ph"), "X") || strcmp(jstr(e, "cat"), cat) || (name && strcmp(jstr(e, "name"), name))) continue;
        if (nth-- == 0) return e;
    }
    return NULL;
}
static int trace_count(cJSON *ev, const char *ph, const char *cat) {
    cJSON *e;
    int n = 0;
    cJSON_ArrayForEach(e, ev) n += !strcmp(jstr(e, "ph"), ph) && !strcmp(jstr(e, "cat"), cat);
    return n;
}

/* A session streaming a trace to path, its launches costing 2 us of CPU
   time, on a non-blocking stream of its own (returned). */
static cudaStream_t traced_session(const char *path, const char *name, int warmup) {
    cudaStream_t s;
    simcupti_reset();
    simcupti_set_call_cost(2 * US);
    session_trace = path;
    session_begin(name, warmup);
    session_trace = NULL;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    gpuprof_set_stream(s);
    return s;
}

static void scenario_trace(void) {
    cudaStream_t s = traced_session("k_trace.json", "trace", 1);
    cJSON *tr, *ev, *k, *g, *a;
    int i;
    backward_host_ns = 1 * US;             /* the launch is not the whole range */
    for (i = 0; i < 3; i++) train_step(s);
    backward_host_ns = 0;
    session_end("trace");
    tr = trace_checked("k_trace.json", "--expect-name gemm_bw --expect-name cudaLaunchKernel",
                       "check_trace.py: the trace is valid, slices nest on every track, every arrow binds to a slice at both ends");
    ev = trace_events(tr);
    CHECK(ev != NULL, "the trace parses");
    CHECK_EQ_U(trace_count(ev, "X", "kernel"), 18, "18 kernels in the trace (warm-up step included)");
    CHECK_EQ_U(trace_count(ev, "X", "gpu_memcpy"), 3, "3 copies");
    CHECK_EQ_U(trace_count(ev, "X", "gpu_memset"), 3, "3 memsets");
    CHECK_EQ_U(trace_count(ev, "X", "cuda_runtime"), 30, "the 10 runtime calls of each step that launch or wait, on the CPU thread");
    CHECK_EQ_U(trace_count(ev, "X", "cuda_driver"), 3, "the memset's driver call (its record names the driver call)");
    CHECK_EQ_U(trace_count(ev, "s", "ac2g"), 24, "an arrow from each launch to its kernel, copy or memset");
    CHECK(trace_find(ev, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 0) != NULL, "copies are named as Kineto names them");
    k = trace_find(ev, "kernel", "gemm", 0);
    a = cJSON_GetObjectItem(k, "args");
    CHECK(a && cJSON_GetArrayItem(cJSON_GetObjectItem(a, "grid"), 0)->valuedouble == 128 &&
          cJSON_GetArrayItem(cJSON_GetObjectItem(a, "block"), 0)->valuedouble == 256, "kernel args: grid and block");
    CHECK(a && jnum(a, "registers per thread") == 32 && jnum(a, "shared memory") == 1024 && jnum(a, "correlation") > 0,
          "kernel args: registers, shared memory, correlation");
    /* the same GPU work seen twice: gemm_bw inside the event-timed backward range, within 1 us */
    for (i = 0; i < 3; i++) {
        int j;
        g = trace_find(ev, "gpu", "backward", i);
        for (j = 0, k = NULL; g && j < 3; j++) {
            cJSON *c = trace_find(ev, "kernel", "gemm_bw", j);
            if (!k || fabs(jnum(c, "ts") - jnum(g, "ts")) < fabs(jnum(k, "ts") - jnum(g, "ts"))) k = c;
        }
        CHECK(k && g && fabs(jnum(k, "ts") - jnum(g, "ts")) <= 1.0 && fabs(jnum(k, "ts") + jnum(k, "dur") - jnum(g, "ts") - jnum(g, "dur")) <= 1.0,
              "a kernel lies where the event-timed GPU range around it is (within 1 us)");
    }
    CHECK(strstr(jstr(trace_find(ev, "kernel", "gemm", 0), "name"), "gemm") != NULL, "kernel names as CUPTI gives them");
    cJSON_Delete(tr);
    cudaStreamDestroy(s);
}

/* GPU work that overlaps on one stream (SPEC 18) goes to lanes of its
   track: a graph of three branches of four 30 us kernels, branch b starting
   10 us after branch b - 1; then three 40 us kernels, the second and third
   launched to start 10 us before the one before ends (programmatic
   dependent launch); then a range around 40 child ranges, each timed by
   CUDA events around a 5 us kernel (its GPU range comes after theirs, more
   than a lane's window later). Expected: branch b on lane b; the first and
   third PDL kernels on lane 0, the second on lane 1; no two kernels of a
   lane overlap; the graph launch has an arrow to each of its 12 kernels;
   the 41 GPU ranges nest on one lane. */
static const char *lane_of(cJSON *ev, double tid) {
    cJSON *e;
    cJSON_ArrayForEach(e, ev)
        if (!strcmp(jstr(e, "ph"), "M") && !strcmp(jstr(e, "name"), "thread_name") && jnum(e, "tid") == tid)
            return jstr(cJSON_GetObjectItem(e, "args"), "name");
    return "";
}

static void scenario_lanes(void) {
    cudaStream_t s = traced_session("k_lanes.json", "lanes", 0);
    cJSON *tr, *ev, *e;
    char lane0[128], lane1[128], lane2[128];
    double last_end[3] = { 0, 0, 0 };
    int i, on[3] = { 0, 0, 0 }, other = 0, apart = 1, launches = 0, ranges_on_one = 1;
    double ranges_tid = -1;
    uint32_t graph;
    { PROF_RANGE("graph"); simcuda_advance(1 * US); graph = simcupti_graph_branches(s, 3, 3, 4, "branch", 30 * US); simcuda_advance(1 * US); }
    {
        PROF_RANGE("pdl");
        simcupti_kernel_early(s, "pdl_first", 40 * US, 0);
        simcupti_kernel_early(s, "pdl_second", 40 * US, 10 * US);
        simcupti_kernel_early(s, "pdl_third", 40 * US, 10 * US);
    }
    {
        PROF_RANGE("outer");
        for (i = 0; i < 40; i++) { PROF_RANGE("inner"); simcuda_advance(1 * US); simcupti_kernel(s, "small", 5 * US, 1, 32); simcuda_advance(6 * US); }
    }
    simcupti_sync(SIMCUPTI_SYNC_STREAM, s);
    session_end("lanes");
    tr = trace_checked("k_lanes.json", "--expect-name branch", "check_trace.py: the lanes' trace is valid, slices nest on every track");
    ev = trace_events(tr);
    CHECK(ev != NULL, "the lanes' trace parses");
    cJSON_ArrayForEach(e, ev) {
        const char *name = jstr(e, "name"), *lane;
        int k;
        if (!strcmp(jstr(e, "ph"), "s") && !strcmp(jstr(e, "cat"), "ac2g")) launches++;
        if (strcmp(jstr(e, "ph"), "X")) continue;
        if (!strcmp(jstr(e, "cat"), "gpu")) {
            if (ranges_tid < 0) ranges_tid = jnum(e, "tid");
            ranges_on_one &= jnum(e, "tid") == ranges_tid;
            continue;
        }
        if (strcmp(jstr(e, "cat"), "kernel")) continue;
        lane = lane_of(ev, jnum(e, "tid"));
        /* lane 0's name has one "(": "(CUPTI)" */
        k = strstr(lane, " (3):") ? 2 : strstr(lane, " (2):") ? 1 : strchr(lane, '(') == strrchr(lane, '(') ? 0 : -1;
        if (k < 0) { other++; continue; }
        if (!strcmp(name, "branch") || !strcmp(name, "small")) on[k]++;
        else if (!strcmp(name, "pdl_second") ? k != 1 : k != 0) other++;
        apart &= jnum(e, "ts") >= last_end[k] - 1e-9;
        last_end[k] = jnum(e, "ts") + jnum(e, "dur");
    }
    /* the lanes' names, from the stream's (its id is CUPTI's) */
    cJSON_ArrayForEach(e, ev)
        if (!strcmp(jstr(e, "cat"), "kernel") && !strcmp(jstr(e, "name"), "branch")) { snprintf(lane0, sizeof lane0, "%s", lane_of(ev, jnum(e, "tid"))); break; }
    snprintf(lane1, sizeof lane1, "%.*s (2)%s", (int)(strchr(lane0, ':') - lane0), lane0, strchr(lane0, ':'));
    snprintf(lane2, sizeof lane2, "%.*s (3)%s", (int)(strchr(lane0, ':') - lane0), lane0, strchr(lane0, ':'));
    CHECK_EQ_U(on[0], 4 + 40, "lane 0: the first branch's 4 kernels and the 40 small ones");
    CHECK_EQ_U(on[1], 4, "lane 1: the second branch's 4 kernels");
    CHECK_EQ_U(on[2], 4, "lane 2: the third branch's 4 kernels");
    CHECK_EQ_U(other, 0, "the PDL kernels: the first and third on lane 0, the second on lane 1; no fourth lane");
    CHECK(apart, "no two kernels of a lane overlap (in the order they were written: the order they ran)");
    CHECK_EQ_U(launches, 12 + 3 + 40, "an arrow from each launch to each of its kernels: the graph launch's to its 12");
    CHECK(ranges_tid >= 0 && ranges_on_one, "the 41 GPU ranges (outer and its 40 children, outer written last) on one lane: they nest");
    CHECK(graph > 0, "the graph launch has a correlation id");
    {
        int named[3] = { 0, 0, 0 };
        cJSON_ArrayForEach(e, ev) {
            const char *n;
            if (strcmp(jstr(e, "ph"), "M") || strcmp(jstr(e, "name"), "thread_name")) continue;
            n = jstr(cJSON_GetObjectItem(e, "args"), "name");
            named[0] += !strcmp(n, lane0);
            named[1] += !strcmp(n, lane1);
            named[2] += !strcmp(n, lane2);
        }
        CHECK(named[0] == 1 && named[1] == 1 && named[2] == 1, "each lane named once: \"GPU 0 stream N: kernels, copies (CUPTI)\", \"... N (2): ...\", \"... N (3): ...\"");
    }
    cJSON_Delete(tr);
    cudaStreamDestroy(s);
}

/* ---------------- failures, each in a process of its own ---------------- */
static int run_case(const char *name, const char *env_name, const char *env_value) {
    pid_t pid = fork();
    int st = 0;
    if (pid == 0) {
        if (env_name) setenv(env_name, env_value, 1);
        execl(self_path, self_path, sim_lib, nosym_lib, python, check_trace, "--case", name, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A session whose capture fails: one line naming the reason, the ranges
   still timed, capture.status says why, and no CUPTI call after it. */
static void failing_session(const char *expect, int calls_during_init_max) {
    uint64_t calls;
    cudaStream_t s;
    int i;
    session_begin("fail", 0);
    calls = simcupti_total_calls();
    CHECK(calls <= (uint64_t)calls_during_init_max, "few CUPTI calls before the failure");
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    gpuprof_set_stream(s);
    for (i = 0; i < 10; i++) { PROF_RANGE("step"); simcuda_kernel(s, 10 * US); simcuda_advance(5 * US); }
    PROF_STEP();
    session_end("fail");
    CHECK_EQ_U(simcupti_total_calls(), calls, "no CUPTI call after the failure (ranges, flush, report, shutdown)");
    CHECK(strstr(errbuf, expect) != NULL, "the message names the reason");
    {
        const char *p = strstr(errbuf, "gpuprof: kernel capture is off"), *q = p ? strstr(p + 1, "gpuprof: kernel capture") : NULL;
        CHECK(p != NULL && q == NULL, "exactly one line about it");
        CHECK(p && strstr(p, "ranges are timed as before"), "it says what goes on");
    }
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(capture(), "on")), "capture.on is false");
    CHECK(cJSON_IsString(cJSON_GetObjectItem(capture(), "status")), "capture.status says why");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "step"), "count"), 10, "the ranges are timed");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(summary_find(sum, "ranges", "step"), "kernel_calls")), "kernel_calls is null without capture");
    cudaStreamDestroy(s);
}

static int child_case(const char *name) {
    if (!strcmp(name, "nolib")) failing_session("kernel capture is off: GPUPROF_CUPTI_PATH='/nonexistent/libcupti.so' cannot be loaded", 0);
    else if (!strcmp(name, "nosym")) failing_session("has no cuptiActivityFlushAll (CUPTI from CUDA 12 or later is needed", 0);
    else if (!strcmp(name, "nodriver")) {
        simcupti_fail("cuptiActivityEnable", 0, 999);
        failing_session("cuptiActivityEnable failed with CUPTI_ERROR_UNKNOWN (999) -- CUPTI returns this when no NVIDIA driver or GPU is usable here", 20);
    } else if (!strcmp(name, "busy")) {
        simcupti_fail("cuptiSubscribe", 0, 39);
        failing_session("cuptiSubscribe failed with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39) -- another profiler (Nsight Systems, Nsight Compute, torch.profiler) holds CUPTI", 20);
    } else if (!strcmp(name, "olddriver")) {
        simcupti_fail("cuptiGetVersion", 0, 15);
        failing_session("cuptiGetVersion failed with CUPTI_ERROR_NOT_INITIALIZED (15) -- the NVIDIA driver is older than this CUPTI", 20);
    } else if (!strcmp(name, "nsys")) {
        failing_session("Nsight Systems profiles this process and holds CUPTI (NSYS_PROFILING_SESSION_ID is set)", 0);
        CHECK_EQ_U(simcupti_total_calls(), 0, "under nsys CUPTI is not even loaded");
    } else if (!strcmp(name, "unasked")) {
        gpuprof_config cfg;
        int i;
        memset(&cfg, 0, sizeof cfg);
        cfg.report = "off";
        cfg.summary_path = "k_unasked.summary.json";
        gpuprof_init(&cfg);
        for (i = 0; i < 100; i++) { PROF_RANGE("plain"); simcuda_advance(US); }
        gpuprof_shutdown();
        CHECK_EQ_U(simcupti_total_calls(), 0, "without GPUPROF_KERNELS not a single CUPTI call");
        sum = summary_load("k_unasked.summary.json");
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(sum, "capture")), "capture is null when not asked for");
    } else if (!strcmp(name, "nocallback")) {
        /* CUPTI refuses gpuprof's clock: calibrated pairs place the records instead */
        cudaStream_t s;
        int i;
        simcupti_fail("cuptiActivityRegisterTimestampCallback", 0, 1);
        session_begin("nocb", 0);
        CHECK(!simcupti_has_timestamp_callback(), "the callback was refused");
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    gpuprof_set_stream(s);
        for (i = 0; i < 3; i++) { PROF_RANGE("r"); simcupti_kernel(s, "k", 40 * US, 1, 1); simcupti_sync(SIMCUPTI_SYNC_STREAM, s); }
        session_end("nocb");
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(capture(), "on")), "a refused callback alone leaves capture on");
        CHECK_EQ_U(jnum(summary_find(sum, "kernels", "k"), "sum_ns"), 120 * US, "kernel times exact on CUPTI's own clock");
        CHECK_EQ_U(jnum(find_kind("syncs", "kind", "stream"), "sum_ns"), 120 * US, "waits exact");
        cudaStreamDestroy(s);
    } else if (!strcmp(name, "envkernels") || !strcmp(name, "kernels_nodriver")) {
        /* GPUPROF_GPU=kernels turns capture on by itself; when capture fails, the ranges go back to CUDA events */
        gpuprof_config cfg;
        cudaStream_t s;
        uint64_t records;
        int i, fails = !strcmp(name, "kernels_nodriver");
        char *text;
        memset(&cfg, 0, sizeof cfg);
        cfg.summary_path = "k_env.summary.json";
        cfg.report = "off";
        if (fails) simcupti_fail("cuptiActivityEnable", 0, 999);
        saved_err = check_stderr_to("k_stderr.txt");
        gpuprof_init(&cfg);
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        gpuprof_set_stream(s);
        records = simcuda_calls("cudaEventRecord");
        for (i = 0; i < 5; i++) { PROF_RANGE("step"); simcupti_kernel(s, "k", 10 * US, 1, 1); simcuda_advance(5 * US); }
        CHECK_EQ_U(simcuda_calls("cudaEventRecord") - records, fails ? 10u : 0u,
                   fails ? "capture failed: the ranges record CUDA events again" : "GPUPROF_GPU=kernels alone: no CUDA event");
        gpuprof_shutdown();
        check_stderr_back(saved_err);
        text = check_slurp("k_stderr.txt");
        sum = summary_load("k_env.summary.json");
        CHECK(strcmp(jstr(cJSON_GetObjectItem(sum, "gpu"), "source"), fails ? "events" : "kernels") == 0,
              fails ? "gpu.source events: capture is off" : "gpu.source kernels: GPUPROF_GPU=kernels turned capture on");
        CHECK_EQ_U(jnum(cJSON_GetObjectItem(summary_find(sum, "ranges", "step"), "gpu"), "count"), 5, "every range has its GPU time");
        if (fails) CHECK(text && strstr(text, "gpuprof: kernel capture is off: cuptiActivityEnable failed with CUPTI_ERROR_UNKNOWN (999)") &&
                         strstr(text, "; GPUPROF_GPU=kernels needs it, so ranges are timed on the GPU with CUDA events\n"),
                         "one line: capture is off, and the ranges are timed with CUDA events");
        else {
            CHECK(text && !text[0], "nothing printed");
            CHECK_EQ_U(jnum(cJSON_GetObjectItem(summary_find(sum, "ranges", "step"), "gpu"), "min_ns"), 10 * US, "the span is the kernel's 10 us");
        }
        free(text);
        cudaStreamDestroy(s);
    } else {
        fprintf(stderr, "no case %s\n", name);
        return 2;
    }
    return check_done(name);
}

/* The launch figures (SPEC 20) against CUDA's occupancy calculator, the
   toolkit's cuda_occupancy.h, over a grid of launch shapes on the limits of
   four architectures: every blocks_per_sm, occupancy and limiter agrees. */
static void occ_arch(int major, int minor, int sms, int threads_sm, int smem_sm, int optin, int reserved, gpuprof__devlim *d, cudaOccDeviceProp *p) {
    memset(d, 0, sizeof *d);
    memset(p, 0, sizeof *p);
    d->cc_major = p->computeMajor = major;
    d->cc_minor = p->computeMinor = minor;
    d->sms = p->numSms = sms;
    d->warp = p->warpSize = 32;
    d->threads_block = p->maxThreadsPerBlock = 1024;
    d->threads_sm = p->maxThreadsPerMultiprocessor = threads_sm;
    d->regs_block = p->regsPerBlock = 65536;
    d->regs_sm = p->regsPerMultiprocessor = 65536;
    d->smem_block = 49152;
    p->sharedMemPerBlock = 49152;
    d->smem_sm = smem_sm;
    p->sharedMemPerMultiprocessor = (size_t)smem_sm;
    d->smem_optin = optin;
    p->sharedMemPerBlockOptin = (size_t)optin;
    d->smem_reserved = reserved;
    p->reservedSharedMemPerBlock = (size_t)reserved;
}

static void scenario_occupancy(void) {
    static const int regs[] = { 0, 16, 24, 31, 32, 40, 48, 56, 64, 72, 80, 96, 128, 168, 200, 232, 255 };
    static const int ssmem[] = { 0, 4096, 16384, 49152 };
    static const int dsmem[] = { 0, 1024, 8192, 20000, 49152, 65536, 100000, 135168, 166912, 200000, 232448 - 49152, 232448 };
    static const int mask[GPUPROF__LIM_COUNT] = { OCC_LIMIT_WARPS, OCC_LIMIT_BLOCKS, OCC_LIMIT_REGISTERS, OCC_LIMIT_SHARED_MEMORY };
    static const struct { int major, minor, sms, threads_sm, smem_sm, optin, reserved; } arch[] = {
        { 8, 0, 108, 2048, 167936, 166912, 1024 },   /* A100 */
        { 9, 0, 132, 2048, 233472, 232448, 1024 },   /* H100 SXM */
        { 8, 6, 82, 1536, 102400, 101376, 1024 },    /* RTX 3090 */
        { 7, 5, 40, 1024, 65536, 65536, 0 },         /* T4 */
    };
    cudaOccDeviceState state;
    cudaOccFuncAttributes fa;
    cudaOccResult res;
    gpuprof__devlim d;
    cudaOccDeviceProp p;
    gpuprof__launch f;
    size_t a, r, ss, ds;
    int threads;
    long compared = 0, bad_blocks = 0, bad_limiter = 0, bad_occ = 0, nonzero = 0;
    char msg[256] = "";
    memset(&state, 0, sizeof state);
    state.cacheConfig = CACHE_PREFER_NONE;
    state.carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT;
    for (a = 0; a < sizeof arch / sizeof *arch; a++) {
        occ_arch(arch[a].major, arch[a].minor, arch[a].sms, arch[a].threads_sm, arch[a].smem_sm, arch[a].optin, arch[a].reserved, &d, &p);
        for (threads = 32; threads <= 1024; threads += threads < 256 ? 16 : 32)
            for (r = 0; r < sizeof regs / sizeof *regs; r++)
                for (ss = 0; ss < sizeof ssmem / sizeof *ssmem; ss++)
                    for (ds = 0; ds < sizeof dsmem / sizeof *dsmem; ds++) {
                        /* as cudaOccFuncAttributes is made from cudaFuncAttributes, the launch's dynamic shared memory opted in */
                        memset(&fa, 0, sizeof fa);
                        fa.maxThreadsPerBlock = 1024;
                        fa.numRegs = regs[r];
                        fa.sharedSizeBytes = (size_t)ssmem[ss];
                        fa.partitionedGCConfig = PARTITIONED_GC_OFF;
                        fa.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
                        fa.maxDynamicSharedSizeBytes = (size_t)dsmem[ds];
                        fa.numBlockBarriers = 1;
                        memset(&res, 0, sizeof res);
                        if (cudaOccMaxActiveBlocksPerMultiprocessor(&res, &p, &fa, &state, threads, (size_t)dsmem[ds]) != CUDA_OCC_SUCCESS) continue;
                        gpuprof__occ_calc(&d, 1000, threads, regs[r], ssmem[ss], dsmem[ds], &f);
                        compared++;
                        if (f.blocks_per_sm != res.activeBlocksPerMultiprocessor) {
                            if (!bad_blocks++)
                                snprintf(msg, sizeof msg, "sm_%d%d, %d threads, %d registers, %d + %d bytes: %d blocks per SM, the calculator %d", arch[a].major,
                                         arch[a].minor, threads, regs[r], ssmem[ss], dsmem[ds], f.blocks_per_sm, res.activeBlocksPerMultiprocessor);
                            continue;
                        }
                        if (!f.blocks_per_sm) continue;
                        nonzero++;
                        if (!(res.limitingFactors & (unsigned)mask[f.limiter])) bad_limiter++;
                        if (f.occupancy != (double)(res.activeBlocksPerMultiprocessor * ((threads + 31) / 32)) / (arch[a].threads_sm / 32)) bad_occ++;
                    }
    }
    if (msg[0]) fprintf(stderr, "first difference: %s\n", msg);
    printf("occupancy: %ld launch shapes compared with cuda_occupancy.h (%ld that launch)\n", compared, nonzero);
    CHECK(compared > 20000 && nonzero > 10000, "the grid of shapes covers tens of thousands of launches on sm_80, sm_90, sm_86 and sm_75");
    CHECK_EQ_U(bad_blocks, 0, "blocks_per_sm equals cudaOccMaxActiveBlocksPerMultiprocessor's for every shape");
    CHECK_EQ_U(bad_limiter, 0, "the limiter named is one of the calculator's limiting factors");
    CHECK_EQ_U(bad_occ, 0, "occupancy is active warps / the SM's maximum warps");
    /* the grid's figures, exactly (H100: 132 SMs, 64 warps per SM) */
    occ_arch(9, 0, 132, 2048, 233472, 232448, 1024, &d, &p);
    gpuprof__occ_calc(&d, 5, 256, 31, 0, 0, &f);
    CHECK(f.blocks_per_sm == 8 && f.limiter == GPUPROF__LIM_WARPS && f.occupancy == 1.0, "256 threads, 31 registers: 8 blocks per SM, limited by warps (a tie with registers names warps)");
    CHECK(f.sm_fill == 5.0 / 132 && f.waves == 5.0 / (132 * 8) && f.est_achieved == 5.0 * 8 / (132 * 64), "5 blocks: sm_fill 5/132, waves 5/1056, est. achieved 40/8448");
    gpuprof__occ_calc(&d, 1000, 128, 168, 0, 0, &f);
    CHECK(f.blocks_per_sm == 3 && f.limiter == GPUPROF__LIM_REGS && f.occupancy == 12.0 / 64, "168 registers: 3 blocks of 4 warps per SM, limited by registers");
    CHECK(f.sm_fill == 1.0 && f.waves == 1000.0 / (132 * 3) && f.est_achieved == f.occupancy, "1000 blocks: every SM, 2.5 waves, achieved = theoretical");
    gpuprof__occ_calc(&d, 264, 128, 64, 0, 200 * 1024, &f);
    CHECK(f.blocks_per_sm == 1 && f.limiter == GPUPROF__LIM_SMEM, "200 KiB of dynamic shared memory: 1 block per SM, limited by shared memory");
    gpuprof__occ_calc(&d, 10, 32, 16, 0, 0, &f);
    CHECK(f.blocks_per_sm == 32 && f.limiter == GPUPROF__LIM_BLOCKS, "32 threads: 32 blocks per SM, limited by blocks");
    d.sms = 0;
    gpuprof__occ_calc(&d, 10, 32, 16, 0, 0, &f);
    CHECK(f.blocks_per_sm == -1 && gpuprof__isnan(f.occupancy), "unknown device limits: no figures");
    /* tensor cores by name */
    CHECK(gpuprof__tensor_cores("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas") == 1 &&
          gpuprof__tensor_cores("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn") == 1 &&
          gpuprof__tensor_cores("ampere_tf32_s1688gemm_tf32_128x128_16x4_nt") == 1 && gpuprof__tensor_cores("volta_h884gemm_64x64_ldg8_nn") == 1 &&
          gpuprof__tensor_cores("cutlass_80_tensorop_s16816gemm_f16_256x128_32x3_nn_align8") == 1 &&
          gpuprof__tensor_cores("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT") == 1 &&
          gpuprof__tensor_cores("ampere_int8_i16832gemm_int8_256x128_64x3_nt") == 1,
          "cuBLAS, cuBLASLt and CUTLASS tensor-core GEMMs are named as such (xmma, s16816, s1688, h884, tensorop, nvjet, i16832)");
    CHECK(gpuprof__tensor_cores("ampere_sgemm_128x64_nn") == 0 && gpuprof__tensor_cores("cutlass_simt_sgemm_128x128_8x2_nn_align1") == 0 &&
          gpuprof__tensor_cores("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>") == 0 &&
          gpuprof__tensor_cores("_ZN5cudnn6detail23implicit_convolve_sgemmIffLi1024ELi5ELi5ELi3ELi3ELi3ELi1ELb1ELb0ELb1EEEviiiPKT_iPS2_S4_18kernel_conv_paramsyiffiS4_S4_ii") == 0,
          "SIMT GEMMs (sgemm, simt, gemv, cuDNN's implicit_convolve_sgemm) are not");
    CHECK(gpuprof__tensor_cores("_Z7grad_w2PKfS0_6params") == -1 && gpuprof__tensor_cores("vectorized_elementwise_kernel") == -1,
          "a kernel whose name says neither: unknown");
}

/* The CUDA demo's shapes (examples/train_mlp.cu: grids, 256 threads, the
   registers ptxas gives them for sm_90) and its H100 kernel times, on the
   simulated H100: grad_w2 runs 5 blocks on 132 SMs, and its phase is
   under-filled with a launch remedy. */
static void demo_kernel(cudaStream_t s, const char *name, uint64_t dur, unsigned gx, unsigned gy, unsigned regs) {
    simcupti_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.grid[0] = gx; sh.grid[1] = gy; sh.grid[2] = 1;
    sh.block[0] = 256; sh.block[1] = sh.block[2] = 1;
    sh.regs = regs;
    simcupti_kernel_shape(s, name, dur, &sh);
    simcuda_advance(4 * US);
}

static cJSON *kernel_named(const char *prefix) {
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(sum, "kernels")) {
        cJSON *v = cJSON_GetObjectItem(e, "name");
        if (cJSON_IsString(v) && strncmp(v->valuestring, prefix, strlen(prefix)) == 0) return e;
    }
    return NULL;
}

static cJSON *phase_named(const char *name) {
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "verdict"), "phases")) {
        cJSON *v = cJSON_GetObjectItem(e, "name");
        if (cJSON_IsString(v) && strcmp(v->valuestring, name) == 0) return e;
    }
    return NULL;
}

static void scenario_launch(void) {
    cudaStream_t s = 0;
    cJSON *k, *l, *ph;
    char *text;
    int step;
    simcupti_reset();
    session_begin("launch", 2);
    for (step = 0; step < 12; step++) {
        { PROF_RANGE("data"); demo_kernel(s, "_Z10make_batchPfS_i", 24800, 32, 1, 32); }
        {
            PROF_RANGE("forward");
            { PROF_RANGE("linear1+relu"); demo_kernel(s, "_Z12linear1_reluPKf6paramsPf", 163 * US, 4, 8192, 32); }
            { PROF_RANGE("linear2+loss"); demo_kernel(s, "_Z12linear2_lossPKf6paramsS0_PfS2_S2_", 151 * US, 32, 1, 29); }
        }
        {
            PROF_RANGE("backward");
            { PROF_RANGE("linear2.grad"); demo_kernel(s, "_Z7grad_w2PKfS0_6params", 354 * US, 5, 1, 31); }
            { PROF_RANGE("relu.grad"); demo_kernel(s, "_Z11grad_hiddenPKfS0_6paramsPf", 34700, 4, 8192, 14); }
            { PROF_RANGE("linear1.grad"); demo_kernel(s, "_Z7grad_w1PKfS0_6params", 398 * US, 4, 65, 31); }
        }
        { PROF_RANGE("optimizer"); demo_kernel(s, "_Z4adamPfPKfS_S_mfff", 2590, 265, 1, 18); }
        { PROF_RANGE("loss.item"); simcupti_sync(SIMCUPTI_SYNC_STREAM, s); }
        PROF_STEP();
    }
    session_end("launch");
    k = kernel_named("grad_w2");
    l = cJSON_GetObjectItem(k, "launch");
    CHECK(l && cJSON_IsObject(l), "kernels[].launch is there for grad_w2");
    CHECK(jnum(l, "blocks") == 5 && jnum(l, "threads_per_block") == 256 && jnum(l, "registers_per_thread") == 31 && jnum(l, "shared_memory_bytes") == 0,
          "grad_w2's launch: 5 blocks of 256 threads, 31 registers, no shared memory");
    CHECK(jnum(l, "blocks_per_sm") == 8 && jnum(l, "occupancy") == 1 && strcmp(jstr(l, "limiter"), "warps") == 0,
          "... 8 blocks per SM, occupancy 1, limited by warps (cuda_occupancy.h's figures for sm_90)");
    CHECK_REL(jnum(l, "sm_fill"), 5.0 / 132, 1e-8, "... sm_fill 5/132");
    CHECK_REL(jnum(l, "waves"), 5.0 / 1056, 1e-8, "... waves 5/(132 x 8)");
    CHECK_REL(jnum(l, "est_achieved_occupancy"), 40.0 / 8448, 1e-8, "... est. achieved occupancy 40/(132 x 64)");
    CHECK_REL(jnum(cJSON_GetObjectItem(l, "time_weighted"), "sm_fill"), 5.0 / 132, 1e-8, "... one shape: the time-weighted sm_fill is the same");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(k, "tensor_cores")), "grad_w2's name says nothing of tensor cores: null");
    l = cJSON_GetObjectItem(kernel_named("linear1_relu"), "launch");
    CHECK(jnum(l, "blocks") == 32768 && jnum(l, "sm_fill") == 1 && jnum(l, "est_achieved_occupancy") == 1, "linear1_relu: 32768 blocks fill the GPU");
    CHECK_REL(jnum(l, "waves"), 32768.0 / 1056, 1e-8, "... in 31 waves");
    l = cJSON_GetObjectItem(kernel_named("grad_w1"), "launch");
    CHECK(jnum(l, "blocks") == 260 && jnum(l, "sm_fill") == 1, "grad_w1: 260 blocks, every SM has work");
    ph = phase_named("backward");
    CHECK(strcmp(jstr(ph, "class"), "under-filled") == 0, "backward (grad_w2: 45% of its kernel time on 5 of 132 SMs) is under-filled");
    CHECK(strstr(jstr(ph, "why"), "grad_w2: 5 blocks on 132 SMs (4% of the SMs given work); 45% of its kernel time leaves most SMs idle") != NULL,
          "... and why names grad_w2 and its launch");
    CHECK(strcmp(jstr(phase_named("forward"), "class"), "under-filled") == 0 && strstr(jstr(phase_named("forward"), "why"), "linear2_loss: 32 blocks on 132 SMs"),
          "forward (linear2_loss: 32 blocks, 48% of its kernel time) is under-filled too");
    CHECK(strcmp(jstr(phase_named("loss.item"), "class"), "sync-bound") == 0, "loss.item keeps its class");
    text = check_slurp("k_report.txt");
    CHECK(text && strstr(text, "bottleneck: \"backward\"") && strstr(text, "under-filled\n   try: give the GPU more blocks: split the work"),
          "the report: backward is the bottleneck, under-filled, and the try: line is about the launch");
    CHECK(text && !strstr(text, "use the tensor cores"), "... no tensor-core advice anywhere");
    CHECK(text && strstr(text, "leave most SMs idle: grad_w2 5 blocks on 132 SMs"), "the line under the kernel table names grad_w2");
    CHECK(text && strstr(text, "(5,1,1)x(256,1,1)            4%  100% warps"), "the kernel table: grad_w2 fills 4% of the SMs, occupancy 100% limited by warps");
    free(text);
}

/* A compute-bound GEMM phase: told to use the tensor cores when its GEMM
   is a SIMT one, not when it already runs on them; a well-filled
   memory-bound phase beside it keeps its class. */
static void tensor_session(const char *name, const char *gemm) {
    cudaStream_t s = 0;
    simcupti_shape g, u;
    int step;
    memset(&g, 0, sizeof g);
    g.grid[0] = 264; g.grid[1] = g.grid[2] = 1;
    g.block[0] = 128; g.block[1] = g.block[2] = 1;
    g.regs = 168;
    g.dynamic_smem = 200 * 1024;
    memset(&u, 0, sizeof u);
    u.grid[0] = 4096; u.grid[1] = u.grid[2] = 1;
    u.block[0] = 256; u.block[1] = u.block[2] = 1;
    u.regs = 18;
    simcupti_reset();
    session_begin(name, 2);
    for (step = 0; step < 10; step++) {
        /* 30 GFLOP in 1 ms: 30 TFLOP/s, 45% of the H100's 66.9 fp32 peak, at 300 FLOP/B */
        { PROF_RANGE_WORK("matmul", 30e9, 1e8); simcupti_kernel_shape(s, gemm, 1 * MS, &g); simcuda_advance(5 * US); }
        /* 1 GB in 500 us: 2 TB/s, at 0.01 FLOP/B */
        { PROF_RANGE_WORK("update", 1e7, 1e9); simcupti_kernel_shape(s, "_Z6updatePfPKfm", 500 * US, &u); simcuda_advance(5 * US); }
        { PROF_RANGE("sync"); simcupti_sync(SIMCUPTI_SYNC_STREAM, s); }
        PROF_STEP();
    }
    session_end(name);
}

static void scenario_tensor_cores(void) {
    char *text;
    tensor_session("tc", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(kernel_named("sm90_xmma_gemm"), "tensor_cores")), "the xmma GEMM: tensor_cores true");
    CHECK(strcmp(jstr(phase_named("matmul"), "class"), "compute-bound") == 0, "matmul is compute-bound (45% of peak FLOP/s)");
    CHECK(strcmp(jstr(phase_named("update"), "class"), "memory-bound") == 0, "update (4096 blocks, 60% of peak bandwidth) stays memory-bound");
    text = check_slurp("k_report.txt");
    CHECK(text && strstr(text, "compute-bound\n   try: its GEMMs already run on the tensor cores: do fewer FLOPs"),
          "a compute-bound phase on the tensor cores is not told to use them");
    CHECK(text && !strstr(text, "use the tensor cores") && !strstr(text, "limited by its"),
          "... nor told of its kernel's occupancy (1 block per SM is how such GEMMs run)");
    free(text);
    tensor_session("simt", "ampere_sgemm_128x64_nn");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(kernel_named("ampere_sgemm"), "tensor_cores")), "the SIMT sgemm: tensor_cores false");
    CHECK(strcmp(jstr(phase_named("matmul"), "class"), "compute-bound") == 0, "matmul is compute-bound");
    CHECK(strstr(jstr(phase_named("matmul"), "why"), "; ampere_sgemm_128x64_nn runs at 6% occupancy, limited by its 204800 bytes of shared memory per block"),
          "... and its main kernel's occupancy is named, with its limiter");
    text = check_slurp("k_report.txt");
    CHECK(text && strstr(text, "compute-bound\n   try: do fewer or cheaper FLOPs: use the tensor cores"), "a SIMT GEMM still is told to use the tensor cores");
    free(text);
}

/* A GEMM that fills the SMs but reaches 9% of peak FLOP/s: latency-bound,
   with its kernel's occupancy in Why and a remedy about parallelism and
   access, not the tensor cores. */
static void scenario_latency(void) {
    cudaStream_t s = 0;
    simcupti_shape g;
    char *text;
    int step;
    memset(&g, 0, sizeof g);
    g.grid[0] = 1024; g.grid[1] = g.grid[2] = 1;
    g.block[0] = 256; g.block[1] = g.block[2] = 1;
    g.regs = 40;
    simcupti_reset();
    session_begin("latency", 2);
    for (step = 0; step < 10; step++) {
        /* 30 GFLOP in 5 ms: 6 TFLOP/s, 9% of the H100's 66.9 fp32 peak, at 300 FLOP/B */
        { PROF_RANGE_WORK("naive_gemm", 30e9, 1e8); simcupti_kernel_shape(s, "_Z10naive_gemmPKfS0_Pfi", 5 * MS, &g); simcuda_advance(5 * US); }
        { PROF_RANGE("sync"); simcupti_sync(SIMCUPTI_SYNC_STREAM, s); }
        PROF_STEP();
    }
    session_end("latency");
    CHECK(strcmp(jstr(phase_named("naive_gemm"), "class"), "latency-bound") == 0, "a full grid at 9% of peak FLOP/s is latency-bound");
    CHECK(strstr(jstr(phase_named("naive_gemm"), "why"),
                 "9% of peak FLOP/s at 300 FLOP/B: far below both roofs; naive_gemm runs at 75% occupancy (limited by registers), 1024 blocks on 132 SMs") != NULL,
          "... Why gives the figure and its kernel's occupancy");
    text = check_slurp("k_report.txt");
    CHECK(text && strstr(text, "latency-bound\n   try: raise the parallelism and fix the access: more warps"), "... the remedy is about parallelism and access");
    CHECK(text && !strstr(text, "tensor cores"), "... not the tensor cores");
    free(text);
}

int main(int argc, char **argv) {
    static const struct { const char *name, *env, *value; } cases[] = {
        { "nolib", "GPUPROF_CUPTI_PATH", "/nonexistent/libcupti.so" },
        { "nosym", "GPUPROF_CUPTI_PATH", NULL },
        { "nodriver", NULL, NULL }, { "busy", NULL, NULL }, { "olddriver", NULL, NULL },
        { "nsys", "NSYS_PROFILING_SESSION_ID", "1" }, { "unasked", NULL, NULL }, { "nocallback", NULL, NULL },
        { "envkernels", "GPUPROF_GPU", "kernels" }, { "kernels_nodriver", "GPUPROF_GPU", "kernels" }
    };
    size_t i;
    if (argc < 5) { fprintf(stderr, "usage: %s LIBSIMCUPTI LIBSIMCUPTI_WITHOUT_FLUSHALL PYTHON CHECK_TRACE\n", argv[0]); return 2; }
    self_path = argv[0];
    sim_lib = argv[1];
    nosym_lib = argv[2];
    python = argv[3];
    check_trace = argv[4];
    if (!getenv("GPUPROF_CUPTI_PATH")) setenv("GPUPROF_CUPTI_PATH", sim_lib, 1);
    unsetenv("NSYS_PROFILING_SESSION_ID");
    if (argc > 6 && !strcmp(argv[5], "--case")) {
        if (!strcmp(argv[6], "nsys")) setenv("NSYS_PROFILING_SESSION_ID", "1", 1);
        return child_case(argv[6]);
    }
    unsetenv("GPUPROF_GPU");
    scenario_training();
    scenario_worker(0);
    scenario_worker(1);
    scenario_graphs();
    scenario_bad_records();
    CHECK(simcupti_zeroed_attr() == 1, "gpuprof tells CUPTI its buffers come zeroed (CUPTI would zero them on the launching thread)");
    CHECK_EQ_U(simcupti_nonzero_buffers(), 0, "... and every buffer it hands over is, reused ones included");
    scenario_demangle();
    scenario_idle_inside();
    scenario_spans();
    scenario_copy_wait();
    scenario_layouts();
    scenario_trace();
    scenario_lanes();
    scenario_occupancy();
    scenario_launch();
    scenario_tensor_cores();
    scenario_latency();
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[128];
        int rc = run_case(cases[i].name, cases[i].env, cases[i].value ? cases[i].value : nosym_lib);
        snprintf(what, sizeof what, "failure case '%s' passes (in a process of its own)", cases[i].name);
        CHECK(rc == 0, what);
    }
    if (sum) cJSON_Delete(sum);
    return check_done("test_kernels");
}
