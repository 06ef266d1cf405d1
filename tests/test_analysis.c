/* The verdict and the roofline (SPEC 9) against the simulated CUDA runtime:
   one scenario per class, where every CPU and GPU time is known, so the
   class, the shares and the roofline figures are checked exactly. The
   rules and thresholds under test are in docs/guide.md, "Verdict". */
#define _GNU_SOURCE                     /* simcuda.h comes before gpuprof.h here */
#include "simcuda/simcuda.h"
#include "gpuprof.h"
#include "json_util.h"

#define US 1000ull
#define MS 1000000ull

/* The simulated device: CC 9.0, 132 SMs at 1.98 GHz, 5120-bit bus at 2619 MHz. */
#define PEAK_BW (2.0 * 2619e6 * 5120 / 8)          /* 3.35232e12 B/s */
#define PEAK_FP32 (256.0 * 132 * 1.98e9)           /* 6.690816e13 FLOP/s */
#define PEAK_BF16 (4096.0 * 132 * 1.98e9)

static cJSON *sum;
static char report[1 << 16];
static int saved_err = -1;

static void session_begin(const char *name, gpuprof_config *cfg) {
    static char spath[256], rpath[256];
    simcuda_reset();
    simcuda_set_resolution(0);          /* exact event times: the checks are exact */
    snprintf(spath, sizeof spath, "an_%s.summary.json", name);
    snprintf(rpath, sizeof rpath, "an_%s.report.txt", name);
    cfg->summary_path = spath;
    cfg->report = rpath;
    cfg->report_rows = -1;
    saved_err = check_stderr_to("an_stderr.txt");
    CHECK(gpuprof_init(cfg) == 0, "gpuprof_init succeeds");
}

static void session_end(const char *name) {
    char path[256], *text;
    gpuprof_shutdown();
    check_stderr_back(saved_err);
    if (sum) cJSON_Delete(sum);
    snprintf(path, sizeof path, "an_%s.summary.json", name);
    sum = summary_load(path);
    CHECK(sum != NULL, "the summary parses as JSON");
    snprintf(path, sizeof path, "an_%s.report.txt", name);
    text = check_slurp(path);
    snprintf(report, sizeof report, "%s", text ? text : "");
    free(text);
}

static cJSON *verdict(void) { return cJSON_GetObjectItem(sum, "verdict"); }

static cJSON *phase(const char *name) { return summary_find(verdict(), "phases", name); }

static const char *str(cJSON *o, const char *key) {
    cJSON *v = o ? cJSON_GetObjectItem(o, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : "(none)";
}

static const char *range_class(const char *name) {
    return str(cJSON_GetObjectItem(summary_find(sum, "ranges", name), "gpu"), "verdict");
}

static cJSON *roof(const char *name) { return cJSON_GetObjectItem(summary_find(sum, "ranges", name), "roofline"); }

static int has(const char *needle) { return strstr(report, needle) != NULL; }

/* 50 tiny kernels, each launched in 6 us and done in 2 us: the GPU waits
   for every launch. Step: 300 us in the range, 100 us outside. */
static void test_launch_bound(void) {
    gpuprof_config cfg;
    int step, k;
    memset(&cfg, 0, sizeof cfg);
    session_begin("launch", &cfg);
    for (step = 0; step < 100; step++) {
        { PROF_RANGE("tiny kernels"); for (k = 0; k < 50; k++) { simcuda_kernel(0, 2 * US); simcuda_advance(6 * US); } }
        simcuda_advance(100 * US);
        PROF_STEP();
    }
    session_end("launch");
    CHECK(strcmp(range_class("tiny kernels"), "launch-bound") == 0, "50 launches of 2 us kernels, 6 us apart: launch-bound");
    CHECK(strcmp(str(phase("tiny kernels"), "class"), "launch-bound") == 0, "the phase is launch-bound");
    CHECK_REL(jnum(phase("tiny kernels"), "share"), 0.75, 1e-9, "it holds 300 of each 400 us step");
    CHECK(strcmp(str(verdict(), "class"), "launch-bound") == 0, "the step is launch-bound");
    CHECK(strcmp(str(verdict(), "bound_by"), "cpu") == 0, "the CPU bounds the step (the GPU keeps pace with it)");
    CHECK_EQ_U(jnum(verdict(), "gpu_busy_share"), 0, "no GPU-bound phase keeps the GPU busy");
    CHECK(strcmp(str(cJSON_GetObjectItem(verdict(), "bottleneck"), "name"), "tiny kernels") == 0, "the bottleneck is the launch loop");
    CHECK(strstr(str(cJSON_GetObjectItem(verdict(), "bottleneck"), "remedy"), "CUDA graph") != NULL, "the remedy names CUDA graphs");
    CHECK(has("   verdict: bottleneck \"tiny kernels\", 75% of the step on the CPU, launch-bound"), "the header's verdict line");
    CHECK(has("   bottleneck: \"tiny kernels\", host 300 us per step = 75% of the step, launch-bound"), "the closing line");
    CHECK(has("   try: launch less: fuse small kernels, capture the step in a CUDA graph"), "the remedies line");
}

/* One 5 ms kernel launched in 50 us; the CPU does 4.95 ms of other work,
   so the GPU is busy the whole 5 ms step. */
static void test_gpu_bound(void) {
    gpuprof_config cfg;
    int step;
    memset(&cfg, 0, sizeof cfg);
    session_begin("gpu", &cfg);
    for (step = 0; step < 100; step++) {
        { PROF_RANGE("big kernel"); simcuda_kernel(0, 5 * MS); simcuda_advance(50 * US); }
        simcuda_advance(4950 * US);
        PROF_STEP();
    }
    session_end("gpu");
    CHECK(strcmp(range_class("big kernel"), "GPU-bound") == 0, "a 5 ms kernel behind 50 us of CPU is GPU-bound");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(summary_find(sum, "ranges", "big kernel"), "gpu"), "end_lag_mean_ns"), 4950 * US,
               "the GPU ends it 4.95 ms after the CPU");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(summary_find(sum, "ranges", "big kernel"), "gpu"), "start_lag_mean_ns"), 0,
               "and starts it at once (nothing queued before)");
    CHECK(strcmp(str(verdict(), "bound_by"), "gpu") == 0, "the GPU bounds the step (busy 100% of it)");
    CHECK(strcmp(str(verdict(), "class"), "GPU-bound") == 0, "the step is GPU-bound");
    CHECK_REL(jnum(cJSON_GetObjectItem(verdict(), "bottleneck"), "share"), 1.0, 1e-9, "the kernel holds the whole step on the GPU");
    CHECK(strstr(str(phase("big kernel"), "why"), "GPU time 100.0x the CPU time") != NULL, "the reason: GPU time 100x the CPU time");
    CHECK(has("GPUPROF_RANGE_WORK, or read them in Nsight Compute"), "the remedy says how to tell memory from compute");
}

/* Declared work against the simulated device's peaks: a streaming kernel
   moving half the peak bandwidth, a GEMM reaching half the fp32 peak, both
   1 ms, in a phase "layer" that holds both. */
static void test_roofline(void) {
    gpuprof_config cfg;
    int step;
    const double bytes = 0.5 * PEAK_BW * 1e-3, flops = 0.5 * PEAK_FP32 * 0.5e-3;
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = "an_roofline.trace.json";
    session_begin("roofline", &cfg);
    for (step = 0; step < 40; step++) {
        {
            PROF_RANGE("layer");
            { PROF_RANGE_WORK("stream", bytes / 4, bytes); simcuda_kernel(0, 1 * MS); simcuda_advance(20 * US); }
            { PROF_RANGE_WORK("gemm", flops, 1e6); simcuda_kernel(0, 500 * US); simcuda_advance(20 * US); }
        }
        { PROF_RANGE_WORK("bad work", NAN, -1.0); simcuda_advance(1 * US); }    /* a user's NaN */
        simcuda_advance(1459 * US);
        PROF_STEP();
    }
    session_end("roofline");
    CHECK(cJSON_IsNull(roof("bad work")), "NaN or negative work: no roofline figures (and the trace still parses, below)");
    {
        cJSON *peaks = cJSON_GetObjectItem(sum, "peaks");
        CHECK_REL(jnum(peaks, "bytes_per_s"), PEAK_BW, 1e-12, "peak bandwidth: 5120-bit bus x 2619 MHz x 2 = 3.35 TB/s");
        CHECK_REL(jnum(peaks, "flops_per_s"), PEAK_FP32, 1e-12, "peak fp32: 256 FLOP/clock/SM x 132 SMs x 1.98 GHz = 66.9 TFLOP/s");
        CHECK_REL(jnum(peaks, "ridge_flop_per_byte"), PEAK_FP32 / PEAK_BW, 1e-8, "ridge point = peak FLOP/s / peak bytes/s");
        CHECK(strcmp(str(peaks, "precision"), "fp32") == 0, "fp32 by default");
    }
    CHECK(strcmp(str(roof("stream"), "time_from"), "gpu") == 0, "rates from the GPU time");
    CHECK_EQ_U(jnum(roof("stream"), "time_ns"), 1 * MS, "stream: 1 ms per call");
    CHECK_REL(jnum(roof("stream"), "bytes_per_s"), 0.5 * PEAK_BW, 1e-9, "stream: bytes/call / 1 ms");
    CHECK_REL(jnum(roof("stream"), "flop_per_byte"), 0.25, 1e-12, "stream: 0.25 FLOP/B");
    CHECK(strcmp(str(roof("stream"), "bound"), "memory-bound") == 0, "stream: below the ridge: memory-bound");
    CHECK_REL(jnum(roof("stream"), "peak_fraction"), 0.5, 1e-9, "stream: 50% of peak bandwidth");
    CHECK(strcmp(str(roof("gemm"), "bound"), "compute-bound") == 0, "gemm: above the ridge: compute-bound");
    CHECK_REL(jnum(roof("gemm"), "flops_per_s"), 0.5 * PEAK_FP32, 1e-9, "gemm: FLOP/call / 0.5 ms");
    CHECK_REL(jnum(roof("gemm"), "peak_fraction"), 0.5, 1e-9, "gemm: 50% of peak FLOP/s");
    CHECK(strcmp(range_class("stream"), "memory-bound") == 0, "stream's verdict: memory-bound");
    CHECK(strcmp(range_class("gemm"), "compute-bound") == 0, "gemm's verdict: compute-bound");
    CHECK(strcmp(str(phase("layer"), "class"), "memory-bound") == 0, "layer: 1 of its 1.5 ms GPU time is memory-bound: memory-bound");
    CHECK(strcmp(str(phase("layer"), "decided_by"), "stream") == 0, "decided by \"stream\"");
    CHECK(strcmp(str(verdict(), "class"), "memory-bound") == 0, "the step: memory-bound");
    CHECK(has("Roofline (GPUPROF_RANGE_WORK"), "the report has the roofline table");
    CHECK(has("   peaks: memory 3.35 TB/s (5120-bit bus x 2619 MHz memory clock x 2), fp32 66.9 TFLOP/s"), "the peaks line");
    CHECK(has("0.25  memory-bound     50.0%"), "the table's Bound and Of peak columns");
    {
        /* the GPU event of each call carries its work and the rates of that call */
        char *text = check_slurp("an_roofline.trace.json");
        cJSON *tr = text ? cJSON_Parse(text) : NULL, *e;
        int gpu_args = 0, cpu_args = 0;
        free(text);
        CHECK(tr != NULL, "the trace parses");
        cJSON_ArrayForEach(e, trace_events(tr)) {
            cJSON *nm = cJSON_GetObjectItem(e, "name"), *cat = cJSON_GetObjectItem(e, "cat"), *args = cJSON_GetObjectItem(e, "args");
            if (!cJSON_IsString(nm) || strcmp(nm->valuestring, "stream") != 0 || !cJSON_IsString(cat)) continue;
            if (strcmp(cat->valuestring, "gpu") == 0) {
                gpu_args++;
                CHECK_REL(jnum(args, "bytes"), bytes, 1e-9, "trace: the GPU event's bytes");
                CHECK_REL(jnum(args, "bytes_per_s"), 0.5 * PEAK_BW, 1e-6, "trace: bytes/s over the GPU event's 1 ms");
            } else if (strcmp(cat->valuestring, "cpu") == 0) {
                cpu_args++;
                CHECK_REL(jnum(args, "flop_per_byte"), 0.25, 1e-6, "trace: the CPU event's FLOP/B");
            }
        }
        CHECK_EQ_U(gpu_args, 40, "every GPU event of \"stream\" has args");
        CHECK_EQ_U(cpu_args, 40, "every CPU event of \"stream\" has args");
        cJSON_Delete(tr);
    }
}

/* backward queues 4 ms of GPU work; "loss.item" then synchronizes and
   waits for it: its CPU time is the wait, its GPU time nothing. */
static void test_sync_bound(void) {
    gpuprof_config cfg;
    int step;
    memset(&cfg, 0, sizeof cfg);
    session_begin("sync", &cfg);
    for (step = 0; step < 100; step++) {
        { PROF_RANGE("backward"); simcuda_kernel(0, 4 * MS); simcuda_advance(40 * US); }
        { PROF_RANGE("loss.item"); cudaStreamSynchronize(0); }
        { PROF_RANGE("data"); simcuda_advance(4 * MS); }
        PROF_STEP();
    }
    session_end("sync");
    CHECK(strcmp(range_class("loss.item"), "sync-bound") == 0, "a range that waits for queued GPU work is sync-bound, not launch-bound");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(summary_find(sum, "ranges", "loss.item"), "gpu"), "start_lag_mean_ns"), 3960 * US,
               "the GPU reaches it 3.96 ms after the CPU opened it");
    CHECK(strcmp(range_class("backward"), "GPU-bound") == 0, "backward is GPU-bound");
    CHECK(strcmp(range_class("data"), "launch-bound") == 0, "data, not marked as host work, reads launch-bound (the GPU keeps pace)");
    CHECK(strcmp(str(verdict(), "bound_by"), "cpu") == 0, "the CPU bounds the step: the GPU is busy 4 of 8 ms");
    CHECK(strcmp(str(verdict(), "class"), "launch-bound") == 0, "data's 4 ms are the CPU's largest share");
    CHECK(strcmp(str(phase("loss.item"), "why"), "waits 3.96 ms per call for GPU work queued before it") == 0, "the reason names the wait");
}

/* The same loop with "data" marked as host work, and the loss read inside
   "forward": forward is sync-bound by its nested range, data CPU-bound. */
static void test_host_and_nested_sync(void) {
    gpuprof_config cfg;
    int step;
    memset(&cfg, 0, sizeof cfg);
    cfg.host_ranges = "io, data";
    session_begin("host", &cfg);
    for (step = 0; step < 100; step++) {
        {
            PROF_RANGE("forward");
            simcuda_kernel(0, 3 * MS);
            simcuda_advance(30 * US);
            { PROF_RANGE("loss.item"); cudaStreamSynchronize(0); }
        }
        { PROF_RANGE("data"); simcuda_advance(5 * MS); }
        PROF_STEP();
    }
    session_end("host");
    CHECK(strcmp(str(phase("data"), "class"), "CPU-bound") == 0, "a range named in host_ranges is CPU-bound");
    CHECK(strcmp(str(phase("data"), "why"), "host work (GPUPROF_HOST_RANGES)") == 0, "and says why");
    CHECK(strcmp(str(phase("forward"), "class"), "sync-bound") == 0, "forward: 2.97 of its 3 ms waiting in loss.item: sync-bound");
    CHECK(strcmp(str(phase("forward"), "decided_by"), "loss.item") == 0, "decided by its nested range loss.item");
    CHECK(strcmp(str(verdict(), "class"), "CPU-bound") == 0, "the step: 5 of 8 ms on the CPU in host work: CPU-bound");
    CHECK(strcmp(str(cJSON_GetObjectItem(verdict(), "bottleneck"), "name"), "data") == 0, "the bottleneck is data");
    CHECK_REL(jnum(cJSON_GetObjectItem(verdict(), "bottleneck"), "share"), 5.0 / 8.0, 1e-9, "5 ms of the 8 ms step");
    CHECK(has("   try: take the host work off the step's critical path"), "the CPU-bound remedy");
}

/* A sync phase as the bottleneck: loss.item waits for 3 GPU phases whose
   work is each smaller than the wait; the verdict names what it waits for. */
static void test_sync_bottleneck(void) {
    gpuprof_config cfg;
    int step;
    memset(&cfg, 0, sizeof cfg);
    session_begin("syncb", &cfg);
    for (step = 0; step < 50; step++) {
        { PROF_RANGE("forward"); simcuda_kernel(0, 1 * MS); simcuda_advance(10 * US); }
        { PROF_RANGE("backward"); simcuda_kernel(0, 2 * MS); simcuda_advance(10 * US); }
        { PROF_RANGE("optimizer"); simcuda_kernel(0, 500 * US); simcuda_advance(10 * US); }
        { PROF_RANGE("loss.item"); cudaStreamSynchronize(0); }
        { PROF_RANGE("log"); simcuda_advance(3 * MS); }
        PROF_STEP();
    }
    session_end("syncb");
    CHECK(strcmp(str(verdict(), "bound_by"), "cpu") == 0, "GPU busy 3.5 of 6.5 ms: the CPU bounds the step");
    CHECK(strcmp(str(cJSON_GetObjectItem(verdict(), "bottleneck"), "name"), "loss.item") == 0, "the 3.47 ms wait is the CPU's largest phase");
    CHECK(strcmp(str(cJSON_GetObjectItem(verdict(), "bottleneck"), "class"), "sync-bound") == 0, "sync-bound");
    CHECK(strcmp(str(cJSON_GetObjectItem(verdict(), "bottleneck"), "waits_for"), "backward") == 0, "it waits for the GPU, mostly backward");
    CHECK(has("it waits for the GPU, whose largest phase is \"backward\" (GPU-bound, GPU 2.00 ms per step)"), "the closing line names it");
    CHECK(has("   then, for \"backward\": find out whether memory or compute bounds the kernels"), "and what to try for it");
}

/* Peaks from the config and the environment; precision; CPU-only ranges. */
static void test_peaks_and_cpu(void) {
    gpuprof_config cfg;
    int i;
    memset(&cfg, 0, sizeof cfg);
    cfg.precision = "bf16";
    session_begin("bf16", &cfg);
    { PROF_RANGE("x"); simcuda_advance(1 * US); }
    session_end("bf16");
    CHECK_REL(jnum(cJSON_GetObjectItem(sum, "peaks"), "flops_per_s"), PEAK_BF16, 1e-12, "bf16: 4096 FLOP/clock/SM on CC 9.0");
    CHECK(strcmp(str(cJSON_GetObjectItem(sum, "peaks"), "precision"), "bf16") == 0, "precision bf16");

    memset(&cfg, 0, sizeof cfg);
    cfg.peak_tflops = 100;
    cfg.peak_gbps = 2000;
    setenv("GPUPROF_PEAK_GBPS", "1000", 1);
    session_begin("override", &cfg);
    { PROF_RANGE("x"); simcuda_advance(1 * US); }
    session_end("override");
    unsetenv("GPUPROF_PEAK_GBPS");
    CHECK_REL(jnum(cJSON_GetObjectItem(sum, "peaks"), "flops_per_s"), 100e12, 1e-12, "peak_tflops in the config replaces the table");
    CHECK_REL(jnum(cJSON_GetObjectItem(sum, "peaks"), "bytes_per_s"), 1000e9, 1e-12, "GPUPROF_PEAK_GBPS overrides the config");
    CHECK(strcmp(str(cJSON_GetObjectItem(sum, "peaks"), "bytes_from"), "GPUPROF_PEAK_GBPS") == 0, "and says so");

    /* bad settings: a one-line message each, the device's peaks stay */
    memset(&cfg, 0, sizeof cfg);
    cfg.precision = "fp12";
    setenv("GPUPROF_PEAK_TFLOPS", "fast", 1);
    session_begin("badpeaks", &cfg);
    session_end("badpeaks");
    unsetenv("GPUPROF_PEAK_TFLOPS");
    {
        char *err = check_slurp("an_stderr.txt");
        CHECK(err && strstr(err, "gpuprof: the config's precision 'fp12' is not fp32, tf32, fp16, bf16, fp8 or fp64; using fp32"), "a bad precision is named");
        CHECK(err && strstr(err, "gpuprof: GPUPROF_PEAK_TFLOPS='fast' is not a positive number; ignored"), "a bad peak is named");
        free(err);
    }
    CHECK_REL(jnum(cJSON_GetObjectItem(sum, "peaks"), "flops_per_s"), PEAK_FP32, 1e-12, "the table's fp32 peak stays");

    /* GPU timing off: rates from CPU times; the device's peaks do not apply
       to them, the user's do */
    memset(&cfg, 0, sizeof cfg);
    cfg.no_gpu = 1;
    session_begin("cpuonly", &cfg);
    for (i = 0; i < 10; i++) { PROF_RANGE_WORK("saxpy", 2e6, 12e6); simcuda_advance(1 * MS); }
    session_end("cpuonly");
    CHECK(strcmp(str(roof("saxpy"), "time_from"), "cpu") == 0, "without GPU times the rates come from the CPU time");
    CHECK_REL(jnum(roof("saxpy"), "bytes_per_s"), 12e9, 1e-9, "12 MB in 1 ms: 12 GB/s");
    CHECK_REL(jnum(roof("saxpy"), "flops_per_s"), 2e9, 1e-9, "2 MFLOP in 1 ms: 2 GFLOP/s");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(roof("saxpy"), "bound")), "no peaks given: achieved figures alone, no bound");
    CHECK(strcmp(str(phase("saxpy"), "class"), "CPU-bound") == 0, "a CPU-only phase is CPU-bound");

    memset(&cfg, 0, sizeof cfg);
    cfg.no_gpu = 1;
    cfg.peak_gbps = 24;
    cfg.peak_tflops = 1;
    session_begin("cpupeaks", &cfg);
    for (i = 0; i < 10; i++) { PROF_RANGE_WORK("saxpy", 2e6, 12e6); simcuda_advance(1 * MS); }
    session_end("cpupeaks");
    CHECK(strcmp(str(roof("saxpy"), "bound"), "memory-bound") == 0, "with the machine's peaks given: memory-bound (0.17 FLOP/B < ridge 41.7)");
    CHECK_REL(jnum(roof("saxpy"), "peak_fraction"), 0.5, 1e-9, "12 of 24 GB/s");
    CHECK(strcmp(str(phase("saxpy"), "class"), "memory-bound") == 0, "and the phase is memory-bound");
}

/* No GPUPROF_STEP: shares of the run's time in outermost ranges. */
static void test_no_steps(void) {
    gpuprof_config cfg;
    int i;
    memset(&cfg, 0, sizeof cfg);
    session_begin("nosteps", &cfg);
    for (i = 0; i < 10; i++) {
        { PROF_RANGE("a"); simcuda_advance(3 * MS); }
        { PROF_RANGE("b"); simcuda_advance(1 * MS); }
    }
    session_end("nosteps");
    CHECK(strcmp(str(verdict(), "per"), "run") == 0, "without steps the verdict is over the run");
    CHECK_REL(jnum(phase("a"), "share"), 0.75, 1e-9, "a: 30 of the 40 ms in outermost ranges");
    CHECK(has("Verdict (no GPUPROF_STEP: over the whole run"), "the table says so");
}

int main(void) {
    test_launch_bound();
    test_gpu_bound();
    test_roofline();
    test_sync_bound();
    test_host_and_nested_sync();
    test_sync_bottleneck();
    test_peaks_and_cpu();
    test_no_steps();
    if (sum) cJSON_Delete(sum);
    return check_done("test_analysis");
}
