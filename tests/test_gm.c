/* GPU metrics per range (SPEC 21) against the simulated PM sampler
   (tests/simcupti) over the simulated GPU (tests/simcuda): each kernel has
   known counter values, so each range's means are known, and the verdict's
   class of each GPU-bound phase follows from them. Refusals and faults that
   are process-wide (cuptiProfilerInitialize failing is never retried) run in
   a child process each (this program again, with --case NAME). It links the
   implementation built against the simulated runtime and its clock (impl sim).

   argv: [1] libsimcupti.so */
#define _GNU_SOURCE
#include "simcuda/simcuda.h"
#include "simcupti/simcupti.h"
#include "gpuprof.h"
#include "json_util.h"
#include <sys/wait.h>
#include <time.h>

#define US 1000ull
#define MS 1000000ull

static const char *self_path, *sim_lib;
static cJSON *sum;
static char errbuf[65536];
static int saved_err = -1;
static int session_kernels;
static int session_mode;        /* the next session's simulated CUDA: SIMCUDA_GPU, or no device */     /* the next session: 1 kernel capture too, 2 ranges timed by their kernels */

/* Kernels with known counters: SMs active, SM issue, tensor, occupancy, warps
   in flight, DRAM (read, write), PCIe read/write, NVLink rx/tx. */
static const double k_stream[SIMCUPTI_PM_N] = { 96, 18, 0, 62, 55, 88, 50, 38, 0, 0, 0, 0 };
static const double k_hgemm[SIMCUPTI_PM_N] = { 98, 45, 78, 30, 24, 32, 24, 8, 0, 0, 0, 0 };
static const double k_busy[SIMCUPTI_PM_N] = { 92, 9, 0, 85, 80, 6, 5, 1, 0, 0, 0, 0 };
static const double k_tiny[SIMCUPTI_PM_N] = { 4, 2, 0, 3, 3, 1, 1, 0, 0, 0, 0, 0 };
static const double k_copy[SIMCUPTI_PM_N] = { 0, 0, 0, 0, 0, 0, 0, 0, 24e9, 1e9, 0, 0 };

static void session_begin(const char *name) {
    gpuprof_config cfg;
    static char spath[256], rpath[256], tpath[256];
    memset(&cfg, 0, sizeof cfg);
    snprintf(spath, sizeof spath, "gm_%s.summary.json", name);
    remove(spath);
    cfg.summary_path = spath;
    snprintf(rpath, sizeof rpath, "gm_%s.report.txt", name);
    cfg.report = rpath;
    snprintf(tpath, sizeof tpath, "gm_%s.trace.json", name);
    cfg.trace_path = tpath;
    remove(rpath);
    remove(tpath);
    cfg.report_rows = -1;
    cfg.warmup = 2;
    cfg.gpu_metrics = 1;
    cfg.kernels = session_kernels == 1;
    cfg.gpu_from_kernels = session_kernels == 2;
    simcuda_reset();
    if (session_mode) simcuda_set_mode(session_mode);
    saved_err = check_stderr_to("gm_stderr.txt");
    CHECK(gpuprof_init(&cfg) == 0, "gpuprof_init succeeds");
}

static void session_end(const char *name) {
    char path[256];
    char *text;
    gpuprof_shutdown();
    check_stderr_back(saved_err);
    text = check_slurp("gm_stderr.txt");
    snprintf(errbuf, sizeof errbuf, "%s", text ? text : "");
    free(text);
    if (errbuf[0]) fprintf(stderr, "[%s printed]\n%s", name, errbuf);
    if (sum) cJSON_Delete(sum);
    snprintf(path, sizeof path, "gm_%s.summary.json", name);
    sum = summary_load(path);
    CHECK(sum != NULL, "the summary is valid JSON");
}

static const char *jstr(cJSON *o, const char *key) {
    cJSON *v = o ? cJSON_GetObjectItem(o, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : "(not a string)";
}

static cJSON *phase_named(const char *name) {
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "verdict"), "phases")) {
        cJSON *v = cJSON_GetObjectItem(e, "name");
        if (cJSON_IsString(v) && strcmp(v->valuestring, name) == 0) return e;
    }
    return NULL;
}

static cJSON *range_gm(const char *name) {
    return cJSON_GetObjectItem(summary_find(sum, "ranges", name), "gpu_metrics");
}

static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p++) n++;
    return n;
}

static int near(double got, double want, double tol) { return fabs(got - want) <= tol; }

/* One step: four GPU phases of 3 ms of kernels each (30 samples at 100 us;
   the GEMM's 4 ms, the bottleneck), 10 us of CPU each, then a wait for the GPU. */
static void step(cudaStream_t s) {
    { PROF_RANGE("stream"); simcupti_kernel(s, "stream_copy", 3 * MS, 8192, 256); simcuda_advance(10 * US); }
    { PROF_RANGE("gemm"); simcupti_kernel(s, "hgemm", 4 * MS, 528, 256); simcuda_advance(10 * US); }
    { PROF_RANGE("walk"); simcupti_kernel(s, "busy_wait", 3 * MS, 1056, 1024); simcuda_advance(10 * US); }
    { PROF_RANGE("small"); simcupti_kernel(s, "tiny", 3 * MS, 5, 64); simcuda_advance(10 * US); }
    { PROF_RANGE("sync"); simcupti_sync(SIMCUPTI_SYNC_STREAM, s); }
    simcuda_advance(50 * US);
    PROF_STEP();
}

static void profiles(void) {
    simcupti_pm_profile("stream_copy", k_stream);
    simcupti_pm_profile("hgemm", k_hgemm);
    simcupti_pm_profile("busy_wait", k_busy);
    simcupti_pm_profile("tiny", k_tiny);
    simcupti_pm_profile("h2d", k_copy);
}

/* The four classes from the figures, with no declared work (Done when, issue 58). */
static void check_classes(const char *what) {
    char msg[256];
    cJSON *g;
    snprintf(msg, sizeof msg, "%s: a streaming phase is memory-bound, quoting its DRAM figure", what);
    CHECK(!strcmp(jstr(phase_named("stream"), "class"), "memory-bound") && strstr(jstr(phase_named("stream"), "why"), "DRAM 8"), msg);
    snprintf(msg, sizeof msg, "%s: a tensor-core GEMM phase is compute-bound, quoting the tensor pipe", what);
    CHECK(!strcmp(jstr(phase_named("gemm"), "class"), "compute-bound") && strstr(jstr(phase_named("gemm"), "why"), "tensor pipe 7"), msg);
    snprintf(msg, sizeof msg, "%s: a phase that keeps the SMs busy far below every peak is latency-bound", what);
    CHECK(!strcmp(jstr(phase_named("walk"), "class"), "latency-bound") && strstr(jstr(phase_named("walk"), "why"), "SMs active 9"), msg);
    snprintf(msg, sizeof msg, "%s: a 5-block phase is under-filled, quoting its SMs active (or, with kernel capture, its grid)", what);
    CHECK(!strcmp(jstr(phase_named("small"), "class"), "under-filled") &&
          strstr(jstr(phase_named("small"), "why"), session_kernels ? "tiny: 5 blocks on 132 SMs" : "SMs active 4%"), msg);
    g = range_gm("stream");
    snprintf(msg, sizeof msg, "%s: the streaming range's figures are its kernel's within a few points (DRAM %.1f, issue %.1f)", what,
             jnum(g, "dram_pct"), jnum(g, "sm_issue_pct"));
    CHECK(near(jnum(g, "dram_pct"), 88, 3) && near(jnum(g, "sm_issue_pct"), 18, 3) && near(jnum(g, "sm_active_pct"), 96, 3), msg);
    g = range_gm("gemm");
    snprintf(msg, sizeof msg, "%s: the GEMM range's tensor pipe is 78 within a few points (%.1f)", what, jnum(g, "tensor_active_pct"));
    CHECK(near(jnum(g, "tensor_active_pct"), 78, 3) && near(jnum(g, "achieved_occupancy_pct"), 30, 3), msg);
    g = range_gm("small");
    snprintf(msg, sizeof msg, "%s: the 5-block range's SMs active is 4 within a point (%.1f), its coverage whole (%.2f)", what,
             jnum(g, "sm_active_pct"), jnum(g, "coverage"));
    CHECK(near(jnum(g, "sm_active_pct"), 4, 1) && jnum(g, "coverage") > 0.95, msg);
    snprintf(msg, sizeof msg, "%s: 8 counted calls of 3 ms at 100 us: about 240 samples (%.0f)", what, jnum(g, "samples"));
    CHECK(jnum(g, "samples") >= 230 && jnum(g, "samples") <= 260, msg);
}

static void scenario_classes(void) {
    cJSON *top, *m, *tr, *e;
    char *text;
    int i, n = 0, bad = 0;
    double last_ms = -1;
    simcupti_reset();
    profiles();
    session_begin("classes");
    for (i = 0; i < 10; i++) step(0);
    session_end("classes");
    check_classes("CUDA events");
    top = cJSON_GetObjectItem(sum, "gpu_metrics");
    CHECK(!strcmp(jstr(top, "state"), "on") && cJSON_IsNull(cJSON_GetObjectItem(top, "reason")), "gpu_metrics.state is on, its reason null");
    CHECK(!strcmp(jstr(top, "chip"), "GH100") && jnum(top, "interval_ns") == 100000 && !strcmp(jstr(top, "trigger"), "time"),
          "... the chip GH100, every 100 us by time");
    m = cJSON_GetObjectItem(top, "metrics");
    CHECK(cJSON_GetArraySize(m) == 12 && !strcmp(cJSON_GetArrayItem(m, 0)->valuestring, "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"),
          "... all 12 metrics configured, SMs active first");
    CHECK(jnum(top, "samples") >= 1250 && jnum(top, "overflows") == 0, "... the run's samples (10 steps of 13 ms at 100 us), no overflow");
    CHECK(simcupti_pm_interval() == 100000 && simcupti_pm_trigger() == 1, "the sampler was set to 100 us of GPU time");
    CHECK(simcupti_pm_state() == 0, "... and disabled at the end");
    CHECK(cJSON_IsNull(range_gm("sync")) || jnum(range_gm("sync"), "samples") >= 0, "a range with no GPU work has no figures, or empty ones");
    text = check_slurp("gm_classes.report.txt");
    CHECK(text && strstr(text, "GPU metrics (CUPTI PM sampling, device-wide") && strstr(text, "GPU 0 (GH100), a sample every 100 us"),
          "the report has its GPU metrics part, with the chip and the interval");
    CHECK(text && strstr(text, "  stream ") && (strstr(text, " 87% ") || strstr(text, " 88% ")), "... a row per range, the streaming range's DRAM 88%");
    CHECK(text && strstr(text, "try: its GEMMs already run on the tensor cores"), "the GEMM phase, the bottleneck, is not told to use the tensor cores");
    CHECK(text && !strstr(text, "use the tensor cores"), "... nowhere in the report");
    free(text);
    /* the trace: a counter track per metric, at most one point per millisecond */
    text = check_slurp("gm_classes.trace.json");
    tr = text ? cJSON_Parse(text) : NULL;
    free(text);
    cJSON_ArrayForEach(e, trace_events(tr)) {
        cJSON *nm = cJSON_GetObjectItem(e, "name"), *ph = cJSON_GetObjectItem(e, "ph");
        if (!cJSON_IsString(nm) || !cJSON_IsString(ph) || strcmp(ph->valuestring, "C") || strcmp(nm->valuestring, "GPU 0 DRAM (%)")) continue;
        if (jnum(e, "ts") / 1000.0 <= last_ms) bad++;
        last_ms = jnum(e, "ts") / 1000.0;
        n++;
    }
    {
        char msg[160];
        snprintf(msg, sizeof msg, "the trace has a DRAM counter track, a point per millisecond of the run (%d points over 131 ms)", n);
        CHECK(n >= 120 && n <= 140, msg);
    }
    CHECK(bad == 0, "... in time order, never two in one millisecond");
    cJSON_Delete(tr);
}

/* Beside kernel capture, and with ranges timed by their kernels (GPUPROF_GPU=kernels). */
static void scenario_with_capture(void) {
    simcupti_reset();
    profiles();
    session_kernels = 1;
    session_begin("capture");
    for (int i = 0; i < 10; i++) step(0);
    session_end("capture");
    check_classes("beside kernel capture");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "capture"), "on")), "... kernel capture ran too");
    simcupti_reset();
    profiles();
    session_kernels = 2;
    session_begin("fromkernels");
    for (int i = 0; i < 10; i++) step(0);
    session_end("fromkernels");
    check_classes("GPUPROF_GPU=kernels");
    session_kernels = 0;
}

/* Declared work and the figures: both shown, a disagreement said. */
static void scenario_declared(void) {
    cudaStream_t s = 0;
    simcupti_reset();
    profiles();
    session_begin("declared");
    for (int i = 0; i < 10; i++) {
        /* declared as a large copy (memory-bound by the roofline), but the kernel measures DRAM 6% */
        { PROF_RANGE_WORK("walk", 1e6, 3e9); simcupti_kernel(s, "busy_wait", 3 * MS, 1056, 1024); simcuda_advance(10 * US); }
        { PROF_RANGE_WORK("stream", 1e6, 9e9); simcupti_kernel(s, "stream_copy", 3 * MS, 8192, 256); simcuda_advance(10 * US); }
        { PROF_RANGE("sync"); simcupti_sync(SIMCUPTI_SYNC_STREAM, s); }
        PROF_STEP();
    }
    session_end("declared");
    CHECK(strstr(jstr(phase_named("walk"), "why"), "but the GPU metrics measured DRAM 6%") != NULL,
          "declared work that disagrees with the counters: the Why says so");
    CHECK(strstr(jstr(phase_named("stream"), "why"), "; measured DRAM 8") != NULL, "declared work that agrees: both are shown");
}

/* ---------------- refusals and faults, each in a process of its own ---------------- */
static int run_case(const char *name) {
    pid_t pid = fork();
    int st = 0;
    if (pid == 0) {
        execl(self_path, self_path, sim_lib, "--case", name, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* A session whose GPU metrics are refused: one line with the cause and what
   to do, the state and reason in the summary, the ranges timed as before. */
static void refused(const char *name, const char *reason, const char *line) {
    char msg[300];
    int i;
    profiles();
    session_begin(name);
    for (i = 0; i < 10; i++) step(0);
    session_end(name);
    snprintf(msg, sizeof msg, "%s: one gpuprof line: '%s'", name, line);
    CHECK(strstr(errbuf, line) != NULL, msg);
    CHECK(count(errbuf, "GPU metrics are ") == 1, "... said once");
    snprintf(msg, sizeof msg, "%s: gpu_metrics.reason is %s", name, reason);
    CHECK(!strcmp(jstr(cJSON_GetObjectItem(sum, "gpu_metrics"), "reason"), reason), msg);
    CHECK(!strcmp(jstr(phase_named("stream"), "class"), session_mode ? "CPU-bound" : "GPU-bound"), "... the ranges are timed and classed as before");
    CHECK(jnum(summary_find(sum, "ranges", "stream"), "count") == 8, "... every counted call is there");
}

static int child_case(const char *name) {
    simcupti_reset();
    if (!strcmp(name, "noperm")) {
        simcupti_fail("cuptiPmSamplingEnable", 0, 35);
        refused(name, "no_permission", "cuptiPmSamplingEnable failed (CUPTI error 35) -- this user may not read the GPU's performance counters: run as root");
        CHECK(!strcmp(jstr(cJSON_GetObjectItem(sum, "gpu_metrics"), "state"), "unavailable"), "... the state is unavailable");
    } else if (!strcmp(name, "busy")) {
        simcupti_fail("cuptiPmSamplingEnable", 0, 26);
        refused(name, "counters_busy", "another profiler holds the GPU's counters (Nsight Systems --gpu-metrics-devices, Nsight Compute, DCGM");
    } else if (!strcmp(name, "unsupported")) {
        simcupti_pm_support(0, 1);
        simcupti_pm_support(1, 1);
        refused(name, "unsupported_device", "GPU 0 has no PM sampling: its architecture (PM sampling needs Turing or newer)");
        CHECK_EQ_U(simcupti_calls("cuptiPmSamplingEnable"), 0, "... nothing enabled");
    } else if (!strcmp(name, "volta")) {
        simcupti_pm_chip("GV100");
        refused(name, "unsupported_device", "CUPTI has no PM sampling for the chip GV100");
    } else if (!strcmp(name, "nodriver")) {
        simcupti_fail("cuptiProfilerInitialize", 0, 999);
        refused(name, "no_driver", "cuptiProfilerInitialize failed (CUPTI error 999): no usable NVIDIA driver");
        CHECK_EQ_U(simcupti_calls("cuptiDeviceGetChipName") + simcupti_calls("cuptiProfilerDeviceSupported") + simcupti_calls("cuptiPmSamplingEnable"), 0,
                   "... and no CUPTI call after it (the real library crashes in the next one)");
        refused("nodriver2", "no_driver", "CUPTI's profiler failed to start earlier in this process, and is not called again");
        CHECK_EQ_U(simcupti_calls("cuptiProfilerInitialize"), 1, "... a second session does not try again");
    } else if (!strcmp(name, "old")) {
        simcupti_set_version(23);
        refused(name, "old_cupti", "is too old: PM sampling came with CUDA 12.6's CUPTI");
    } else if (!strcmp(name, "nolib")) {
        refused(name, "no_cupti", "GPU metrics are off: GPUPROF_CUPTI_PATH='/nonexistent/libcupti.so' cannot be loaded");
    } else if (!strcmp(name, "nopass")) {
        simcupti_pm_max_metrics(-1);
        refused(name, "no_single_pass", "no metric of gpuprof's set can be sampled in one pass on GH100");
    } else if (!strcmp(name, "nodevice")) {
        session_mode = SIMCUDA_NO_DEVICE;
        refused(name, "no_device", "CUDA found no usable GPU here");
        CHECK_EQ_U(simcupti_total_calls(), 0, "... and CUPTI is not even loaded");
    } else if (!strcmp(name, "greedy")) {
        simcupti_pm_max_metrics(5);
        profiles();
        session_begin(name);
        for (int i = 0; i < 10; i++) step(0);
        session_end(name);
        CHECK(strstr(errbuf, "GPU metrics on GH100: warps in flight, DRAM read, DRAM write, PCIe read, PCIe write, NVLink rx, NVLink tx cannot be sampled there with the rest in one pass") != NULL,
              "a chip that cannot have them all in one pass: the verdict's four and occupancy kept, the rest named in one line");
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "gpu_metrics"), "metrics")) == 5, "... five kept");
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(range_gm("stream"), "pcie_read_bytes_per_s")), "... a metric left out is null");
        CHECK(!strcmp(jstr(phase_named("stream"), "class"), "memory-bound"), "... and the classes still come");
    } else if (!strcmp(name, "overflow")) {
        simcupti_pm_overflow_after(100);
        profiles();
        session_begin(name);
        for (int i = 0; i < 10; i++) step(0);
        session_end(name);
        CHECK(strstr(errbuf, "GPU metrics are stopped: the GPU's sample buffer overflowed") != NULL, "an overflow: one line");
        CHECK(!strcmp(jstr(cJSON_GetObjectItem(sum, "gpu_metrics"), "state"), "stopped") &&
              !strcmp(jstr(cJSON_GetObjectItem(sum, "gpu_metrics"), "reason"), "overflow"), "... state stopped, reason overflow");
        CHECK(jnum(cJSON_GetObjectItem(sum, "gpu_metrics"), "overflows") == 1 && jnum(cJSON_GetObjectItem(sum, "gpu_metrics"), "samples") <= 100,
              "... counted once, the samples before it kept");
        CHECK(jnum(summary_find(sum, "ranges", "stream"), "count") == 8, "... and the run goes on");
    } else if (!strcmp(name, "hang")) {
        struct timespec a, b;
        profiles();
        session_begin(name);
        for (int i = 0; i < 3; i++) step(0);
        simcupti_pm_hang(1);
        for (int i = 0; i < 7; i++) step(0);
        usleep(50000);                      /* the decoding thread is in the call now */
        clock_gettime(CLOCK_MONOTONIC, &a);
        session_end(name);
        clock_gettime(CLOCK_MONOTONIC, &b);
        CHECK((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < 3.0, "a decode that never returns holds the exit about a second, not more");
        CHECK(strstr(errbuf, "a PM sampling call has not returned for 1.0 s; the exit does not wait for it") != NULL, "... and says so");
        CHECK(!strcmp(jstr(cJSON_GetObjectItem(sum, "gpu_metrics"), "reason"), "hung"), "... reason hung");
        _exit(check_done("test_gm --case hang"));   /* the thread left in the call stays blocked */
    } else {
        fprintf(stderr, "unknown case %s\n", name);
        return 2;
    }
    if (sum) cJSON_Delete(sum);
    return check_done(name);
}

int main(int argc, char **argv) {
    static const char *const cases[] = { "noperm", "busy", "unsupported", "volta", "nodriver", "old", "nolib", "nopass", "nodevice",
                                         "greedy", "overflow", "hang" };
    size_t i;
    if (argc < 2) { fprintf(stderr, "usage: %s LIBSIMCUPTI\n", argv[0]); return 2; }
    self_path = argv[0];
    sim_lib = argv[1];
    setenv("GPUPROF_CUPTI_PATH", sim_lib, 1);
    unsetenv("NSYS_PROFILING_SESSION_ID");
    unsetenv("GPUPROF_GPU");
    unsetenv("GPUPROF_TRACE");              /* the sessions name their own outputs */
    unsetenv("GPUPROF_SUMMARY");
    unsetenv("GPUPROF_REPORT");
    if (argc > 3 && !strcmp(argv[2], "--case")) {
        if (!strcmp(argv[3], "nolib")) setenv("GPUPROF_CUPTI_PATH", "/nonexistent/libcupti.so", 1);
        return child_case(argv[3]);
    }
    scenario_classes();
    scenario_with_capture();
    scenario_declared();
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[128];
        snprintf(what, sizeof what, "case '%s' passes (in a process of its own)", cases[i]);
        CHECK(run_case(cases[i]) == 0, what);
    }
    if (sum) cJSON_Delete(sum);
    return check_done("test_gm");
}
