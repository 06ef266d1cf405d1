/* The device over the run (SPEC 17), against the simulated NVML of
   tests/simnvml, loaded as the driver's libnvidia-ml.so.1 is
   (GPUPROF_NVML_PATH). The exact scenarios take every sample themselves
   (impl_dev_sample, on a virtual clock) with the values set just
   before, so each figure is known; the last one lets gpuprof's thread
   sample on the real clock, as in a run.
   Usage: test_device LIBSIMNVML [PYTHON CHECK_TRACE] */
#include "vclock.h"                 /* a virtual clock: every figure known (in CUDA builds the simulated GPU's) */
#include "gpuprof.h"
#include "impl/hooks.h"
#include "json_util.h"
#include "simnvml/simnvml.h"
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include <dlfcn.h>
#include <sys/wait.h>

#define MS 1000000ull
static const char *lib;

/* A session with the simulated NVML, gpuprof's thread never sampling (an
   hour apart): the test samples. Waits for gpuprof's thread to open NVML. */
static int session(const char *summary, const char *trace) {
    int i;
    remove(summary);                  /* else a later session of this process writes beside it (SPEC 8) */
    remove("report.txt");
    setenv("GPUPROF_NVML_PATH", lib, 1);
    setenv("GPUPROF_DEVICE_EVERY_MS", "3600000", 1);
    setenv("GPUPROF_SUMMARY", summary, 1);
    setenv("GPUPROF_REPORT", "report.txt", 1);
    if (trace) setenv("GPUPROF_TRACE", trace, 1);
    else unsetenv("GPUPROF_TRACE");
    gpuprof_init(NULL);
    for (i = 0; i < 500 && !impl_dev_on(); i++) usleep(10000);
    impl_dev_every_ms(100);           /* what the phases are judged against: 100 ms, the default */
    return impl_dev_on();
}

static cJSON *counter(cJSON *dev, const char *name) {
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(dev, "counters"))
        if (!strcmp(cJSON_GetObjectItem(c, "name")->valuestring, name)) return c;
    return NULL;
}

static double share(cJSON *dev, const char *reason) {
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(dev, "throttle"))
        if (!strcmp(cJSON_GetObjectItem(c, "reason")->valuestring, reason)) return jnum(c, "share");
    return -1;
}

/* 40 steps of "forward" then "data"; from step 20 on the GPU hits its power
   cap: the SM clock falls from 1980 to 1755 MHz and forward takes 20% longer.
   A sample in forward (utilization 95%) and one after data, outside any
   range (20%): 80 samples. */
static void scenario_power_cap(void) {
    cJSON *j, *dev, *c, *ph, *drift;
    char *report;
    int i;
    simnvml_reset();
    CHECK(session("cap.json", "cap.trace.json"), "power cap: NVML opens (the simulated one)");
    for (i = 0; i < 40; i++) {
        PROF_STEP();
        if (i == 20) {
            simnvml_set(SIMNVML_SMCLK, 1755);
            simnvml_set(SIMNVML_REASONS, 0x4);
            simnvml_set(SIMNVML_POWER_MW, 700000);
        }
        {
            PROF_RANGE("forward");
            vsleep(150 * MS);
            simnvml_set(SIMNVML_UTIL, 95);
            impl_dev_sample();
            vsleep((i < 20 ? 150 : 210) * MS);
        }
        { PROF_RANGE("data"); vsleep(10 * MS); }
        simnvml_set(SIMNVML_UTIL, 20);
        impl_dev_sample();
        vsleep(1 * MS);
    }
    PROF_STEP();
    gpuprof_shutdown();
    j = summary_load("cap.json");
    dev = cJSON_GetObjectItem(j, "device_over_time");
    CHECK(cJSON_IsObject(dev), "power cap: the summary has device_over_time");
    CHECK_EQ_U(jnum(dev, "samples"), 80, "power cap: 80 samples");
    CHECK_EQ_U(jnum(dev, "every_ms"), 100, "power cap: the interval");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(dev, "device"), "sm_clock_max_mhz"), 1980, "power cap: the GPU's max SM clock");
    c = counter(dev, "SM clock");
    CHECK(c != NULL, "power cap: an SM clock counter");
    CHECK(c && !strcmp(cJSON_GetObjectItem(c, "unit")->valuestring, "MHz"), "power cap: in MHz");
    CHECK_EQ_U(jnum(c, "mean"), 1867.5, "power cap: SM clock mean, half at 1980 and half at 1755");
    CHECK_EQ_U(jnum(c, "p5"), 1755, "power cap: SM clock p5");
    CHECK_EQ_U(jnum(c, "p95"), 1980, "power cap: SM clock p95");
    CHECK_EQ_U(jnum(c, "min"), 1755, "power cap: SM clock min");
    CHECK_EQ_U(cJSON_GetArraySize(cJSON_GetObjectItem(c, "points")), 80, "power cap: a point per sample (80 < 512)");
    c = counter(dev, "power");
    CHECK_EQ_U(jnum(c, "mean"), 500, "power cap: power mean (300 W then 700 W)");
    c = counter(dev, "utilization");
    CHECK_EQ_U(jnum(c, "mean"), 57.5, "power cap: utilization mean over all samples");
    CHECK_EQ_U(share(dev, "power cap"), 0.5, "power cap: under the power cap half of the samples");
    CHECK_EQ_U(share(dev, "thermal"), 0, "power cap: never thermal");
    CHECK_EQ_U(jnum(dev, "outside_ranges"), 40, "power cap: 40 samples outside any range");
    ph = cJSON_GetArrayItem(cJSON_GetObjectItem(dev, "by_phase"), 0);
    CHECK(ph && !strcmp(cJSON_GetObjectItem(ph, "range")->valuestring, "forward"), "power cap: forward is long enough for its own utilization");
    CHECK_EQ_U(cJSON_GetArraySize(cJSON_GetObjectItem(dev, "by_phase")), 1, "power cap: only forward (data is 10 ms a call)");
    CHECK_EQ_U(jnum(ph, "samples"), 40, "power cap: forward's 40 samples");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(ph, "counters"), "utilization"), 95, "power cap: forward's utilization is that of its samples only");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(ph, "counters"), "SM clock"), 1867.5, "power cap: forward's SM clock");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(dev, "too_short")) == 1 &&
          !strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(dev, "too_short"), 0)->valuestring, "data"), "power cap: data is too short, said");
    CHECK_EQ_U(jnum(counter(dev, "DRAM bandwidth"), "mean"), 30, "power cap: GPM's DRAM bandwidth");
    CHECK_EQ_U(jnum(counter(dev, "DRAM bandwidth"), "samples"), 79, "power cap: GPM metrics from the second GPM sample on");
    drift = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "over_time"), "drift"), "device_cause");
    CHECK(cJSON_IsString(drift) && !strcmp(drift->valuestring, "SM clock fell from 1980 to 1755 MHz; power cap 100% of the last tenth"),
          "power cap: the drift names the SM clock and the power cap");
    if (cJSON_IsString(drift)) printf("drift's device cause: %s\n", drift->valuestring);
    cJSON_Delete(j);
    report = check_slurp("report.txt");
    CHECK(report && strstr(report, "Device over the run: GPU 0, Simulated H100 0, NVML: 80 samples every 100 ms, GPM metrics on"), "power cap: the report's section");
    CHECK(report && strstr(report, "   SM clock (MHz)               1868     1755     1980  "), "power cap: the SM clock's row");
    CHECK(report && strstr(report, "   clocks held back: power cap 50% of the samples\n"), "power cap: the throttle line");
    CHECK(report && strstr(report, "     \"forward\", 40 samples: utilization 95.0%, memory utilization 40.0%, SM activity 80.0%, SM occupancy 35.0%, "
                                   "tensor activity 60.0%, DRAM bandwidth 30.0%, FP32 activity 10.0%, FP16 activity 5.0%\n"), "power cap: forward's line");
    CHECK(report && strstr(report, "phases too short for their own utilization (a call under 2 x the interval, 200 ms): \"data\" (10.0 ms a call)"),
          "power cap: the short phase, said");
    CHECK(report && strstr(report, "; SM clock fell from 1980 to 1755 MHz; power cap 100% of the last tenth\n"), "power cap: the drift line names the cause");
    if (report && strstr(report, "   step time rose")) {
        const char *p = strstr(report, "   step time rose");
        printf("%.*s\n", (int)(strchr(p, '\n') - p), p);
    }
    if (report) {
        const char *p = strstr(report, "Device over the run");
        if (p) printf("%.*s", (int)(strstr(p, "\nVerdict") ? strstr(p, "\nVerdict") - p : 2000), p);
    }
    free(report);
}


/* Counts the lines gpuprof printed (stderr sent to `path`) that hold `what`. */
static int lines_with(const char *path, const char *what) {
    char *text = check_slurp(path), *p;
    int n = 0;
    for (p = text; p && (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
    free(text);
    return n;
}

/* A call that fails drops its counter, one line; a lost GPU stops the
   sampling, one line; the samples before are kept. */
static void scenario_faults(void) {
    cJSON *j, *dev;
    unsigned long reads;
    int saved, i;
    simnvml_reset();
    simnvml_fail("nvmlDeviceGetPowerUsage", 3);      /* NOT_SUPPORTED */
    saved = check_stderr_to("faults.err");
    CHECK(session("faults.json", NULL), "faults: NVML opens");
    for (i = 0; i < 5; i++) { PROF_RANGE("work"); vsleep(300 * MS); impl_dev_sample(); }
    simnvml_set_lost(1);
    for (i = 0; i < 3; i++) { PROF_RANGE("work"); vsleep(300 * MS); impl_dev_sample(); }
    reads = simnvml_calls("nvmlDeviceGetUtilizationRates");
    impl_dev_sample();
    CHECK_EQ_U(simnvml_calls("nvmlDeviceGetUtilizationRates"), reads, "faults: no NVML call after the GPU was lost");
    simnvml_set_lost(0);
    gpuprof_shutdown();
    check_stderr_back(saved);
    CHECK_EQ_U(lines_with("faults.err", "gpuprof: GPU 0: nvmlDeviceGetPowerUsage failed (Not Supported): its power is no longer sampled; the other device counters go on\n"), 1,
               "faults: one line for the power call");
    CHECK_EQ_U(lines_with("faults.err", "gpuprof: GPU 0 was lost (nvmlDeviceGetUtilizationRates: GPU is lost) 1.8 s into the run: device telemetry stops there; the samples before it are kept\n"), 1,
               "faults: one line for the lost GPU");
    CHECK_EQ_U(lines_with("faults.err", "gpuprof:"), 2, "faults: nothing else said");
    j = summary_load("faults.json");
    dev = cJSON_GetObjectItem(j, "device_over_time");
    CHECK_EQ_U(jnum(dev, "samples"), 5, "faults: the 5 samples before the loss");
    CHECK(counter(dev, "power") == NULL, "faults: no power counter");
    CHECK_EQ_U(jnum(counter(dev, "SM clock"), "samples"), 5, "faults: the others went on");
    CHECK(jnum(cJSON_GetObjectItem(dev, "device"), "lost_at_ns") > 1.79e9, "faults: when the GPU was lost");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(j, "warnings"), "device_telemetry"), 2, "faults: counted under device_telemetry");
    cJSON_Delete(j);
    {
        char *report = check_slurp("report.txt");
        CHECK(report && strstr(report, "   the GPU was lost 1.8 s into the run: no samples after it\n"), "faults: the report says the GPU was lost");
        CHECK(report && strstr(report, "   not sampled (its call failed): power\n"), "faults: the report names the counter dropped");
        free(report);
    }
}

/* Values a counter cannot be (a misbehaving driver or GPU: utilization
   250 %, 0xffffffff mW, -273 C, more memory used than there is) are
   dropped, one line a counter, and the good ones kept. */
static void scenario_impossible(void) {
    cJSON *j, *dev;
    int saved, i;
    simnvml_reset();
    saved = check_stderr_to("impossible.err");
    CHECK(session("impossible.json", NULL), "impossible values: NVML opens");
    for (i = 0; i < 6; i++) {
        int bad = i >= 2 && i < 5;                    /* samples 3, 4 and 5 */
        simnvml_set(SIMNVML_UTIL, bad ? 250 : 90);
        simnvml_set(SIMNVML_POWER_MW, bad ? 4294967295.0 : 300000);
        simnvml_set(SIMNVML_TEMP, bad ? -273 : 55);
        simnvml_set(SIMNVML_MEM_USED, bad ? 1.8e19 : 20.0 * 1073741824.0);
        { PROF_RANGE("work"); vsleep(300 * MS); impl_dev_sample(); }
    }
    gpuprof_shutdown();
    check_stderr_back(saved);
    CHECK_EQ_U(lines_with("impossible.err", "gpuprof: GPU 0: nvmlDeviceGetUtilizationRates gave utilization 250 %, which it cannot be (0 to 100.5): such values are dropped, the others kept (the driver or the GPU misbehaves)\n"), 1,
               "impossible values: one line for utilization 250 %");
    CHECK_EQ_U(lines_with("impossible.err", "gpuprof: GPU 0: nvmlDeviceGetPowerUsage gave power 4.29497e+06 W"), 1, "impossible values: one line for 4294967 W");
    CHECK_EQ_U(lines_with("impossible.err", "gpuprof: GPU 0: nvmlDeviceGetTemperatureV gave temperature -273 C"), 1, "impossible values: one line for -273 C");
    CHECK_EQ_U(lines_with("impossible.err", "gpuprof: GPU 0: nvmlDeviceGetMemoryInfo gave memory used 1.71661e+13 MiB, which it cannot be (0 to 81920)"), 1,
               "impossible values: one line for more memory used than the GPU has");
    CHECK_EQ_U(lines_with("impossible.err", "gpuprof:"), 4, "impossible values: nothing else said");
    j = summary_load("impossible.json");
    dev = cJSON_GetObjectItem(j, "device_over_time");
    CHECK_EQ_U(jnum(dev, "samples"), 6, "impossible values: every sample kept, with its good values");
    CHECK_EQ_U(jnum(counter(dev, "utilization"), "samples"), 3, "impossible values: utilization has its 3 good values");
    CHECK_EQ_U(jnum(counter(dev, "utilization"), "impossible"), 3, "impossible values: ... and counts the 3 dropped");
    CHECK_EQ_U(jnum(counter(dev, "utilization"), "max"), 90, "impossible values: the maximum is a value the GPU can have");
    CHECK_EQ_U(jnum(counter(dev, "power"), "max"), 300, "impossible values: power's maximum 300 W");
    CHECK_EQ_U(jnum(counter(dev, "temperature"), "min"), 55, "impossible values: temperature's minimum 55 C");
    CHECK_EQ_U(jnum(counter(dev, "memory used"), "max"), 20480, "impossible values: memory used's maximum 20 GiB");
    CHECK_EQ_U(jnum(counter(dev, "SM clock"), "samples"), 6, "impossible values: the other counters untouched");
    cJSON_Delete(j);
}

/* A GPU without GPM: its counters are not there, and nothing is said
   unless GPUPROF_DEVICE_GPM=1 asked for them. */
static void scenario_no_gpm(void) {
    cJSON *j, *dev;
    int saved, ask;
    for (ask = 0; ask < 2; ask++) {
        simnvml_reset();
        simnvml_set_gpm(0);
        if (ask) setenv("GPUPROF_DEVICE_GPM", "1", 1);
        saved = check_stderr_to("nogpm.err");
        CHECK(session("nogpm.json", NULL), "no GPM: NVML opens");
        { PROF_RANGE("work"); vsleep(300 * MS); impl_dev_sample(); vsleep(300 * MS); impl_dev_sample(); }
        gpuprof_shutdown();
        check_stderr_back(saved);
        unsetenv("GPUPROF_DEVICE_GPM");
        CHECK_EQ_U(lines_with("nogpm.err", "gpuprof:"), ask, ask ? "no GPM, asked for: one line" : "no GPM: nothing said");
        if (ask) CHECK_EQ_U(lines_with("nogpm.err", "gpuprof: GPU 0 gives no GPM metrics (not supported on this GPU): SM, tensor and DRAM activity are not sampled"), 1,
                            "no GPM, asked for: the line");
        j = summary_load("nogpm.json");
        dev = cJSON_GetObjectItem(j, "device_over_time");
        CHECK(counter(dev, "DRAM bandwidth") == NULL && counter(dev, "utilization") != NULL, "no GPM: NVML's counters, not GPM's");
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(dev, "device"), "gpm")), "no GPM: device.gpm false");
        CHECK_EQ_U(simnvml_calls("nvmlGpmSampleGet"), 0, "no GPM: no GPM sample taken");
        cJSON_Delete(j);
    }
}

/* GPUPROF_DEVICE_EVERY_MS=0: off, not one NVML call. */
static void scenario_off(void) {
    cJSON *j;
    simnvml_reset();
    setenv("GPUPROF_NVML_PATH", lib, 1);
    setenv("GPUPROF_DEVICE_EVERY_MS", "0", 1);
    setenv("GPUPROF_SUMMARY", "off.json", 1);
    gpuprof_init(NULL);
    { PROF_RANGE("work"); vsleep(300 * MS); }
    gpuprof_shutdown();
    CHECK_EQ_U(simnvml_calls("nvmlInit_v2"), 0, "off: NVML is not initialised");
    j = summary_load("off.json");
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(j, "device_over_time")), "off: device_over_time is null");
    cJSON_Delete(j);
}

/* gpuprof's thread samples on the real clock, as in a run: the counters'
   tracks in both trace formats, the same values. */
static void scenario_live(int argc, char **argv) {
    cJSON *j, *dev;
    char cmd[4096];
    int i;
    simnvml_reset();
    setenv("GPUPROF_NVML_PATH", lib, 1);
    setenv("GPUPROF_DEVICE_EVERY_MS", "20", 1);
    setenv("GPUPROF_SUMMARY", "live.json", 1);
    unsetenv("GPUPROF_TRACE");
    gpuprof_init(NULL);
    for (i = 0; i < 30; i++) { PROF_RANGE("step"); vsleep(10 * MS); usleep(10000); PROF_STEP(); }
    CHECK(gpuprof_write_trace("live.trace.json") == 0, "live: the JSON trace written");
    CHECK(gpuprof_write_trace("live.pftrace") == 0, "live: the Perfetto trace written");
    gpuprof_shutdown();
    j = summary_load("live.json");
    dev = cJSON_GetObjectItem(j, "device_over_time");
    CHECK(jnum(dev, "samples") >= 5 && jnum(dev, "samples") <= 40, "live: about one sample per 20 ms of a 0.3 s run");
    printf("live: %g samples in 30 steps of 10 ms\n", jnum(dev, "samples"));
    CHECK_EQ_U(jnum(dev, "every_ms"), 20, "live: the interval asked");
    cJSON_Delete(j);
    if (argc >= 4) {
        snprintf(cmd, sizeof cmd, "%s %s live.trace.json --expect-name 'GPU 0 SM clock (MHz)' --expect-name 'GPU 0 utilization (%%)' --expect-name 'GPU 0 power (W)'",
                 argv[2], argv[3]);
        CHECK(system(cmd) == 0, "live: the JSON trace is valid and has the device's counter tracks");
    }
    if (argc >= 6) {
        snprintf(cmd, sizeof cmd, "%s %s live.pftrace live.trace.json", argv[4], argv[5]);
        CHECK(system(cmd) == 0, "live: the Perfetto trace has the same counter values as the JSON one");
    }
}

/* No NVML (a machine without the driver): said only when asked for. A
   process of its own: NVML is loaded, or not, once per process. */
static void scenario_absent(void) {
    int asked;
    for (asked = 0; asked < 2; asked++) {
        pid_t pid;
        int status = 0;
        void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (!asked && (h || (h = dlopen("libnvidia-ml.so.1", RTLD_NOW)) != NULL)) {
            printf("absent: this machine has libnvidia-ml.so.1; the silent case is not checked\n");
            continue;
        }
        fflush(NULL);
        if ((pid = fork()) == 0) {
            int saved = check_stderr_to(asked ? "absent1.err" : "absent0.err");
            if (asked) setenv("GPUPROF_NVML_PATH", "/nonexistent/libnvidia-ml.so.1", 1);
            else unsetenv("GPUPROF_NVML_PATH");
            unsetenv("GPUPROF_DEVICE_EVERY_MS");
            setenv("GPUPROF_REPORT", "off", 1);
            unsetenv("GPUPROF_SUMMARY");
            { PROF_RANGE("work"); }
            gpuprof_shutdown();
            check_stderr_back(saved);
            _exit(0);
        }
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "absent: the run goes on");
        if (asked)
            CHECK_EQ_U(lines_with("absent1.err", "gpuprof: device telemetry is off: cannot load /nonexistent/libnvidia-ml.so.1 ("), 1, "absent, asked for: one line");
        else CHECK_EQ_U(lines_with("absent0.err", "gpuprof:"), 0, "absent, not asked for: nothing said");
    }
}

#ifdef GPUPROF_CUDA
/* A GPU-bound phase runs on the GPU after its CPU range: its samples are
   those taken in its GPU windows. Each step queues 400 ms of "forward" on
   the GPU (its CPU range closes at once), then waits in "wait", where a
   sample is taken 200 ms in (utilization 97%, the GPU in forward's
   kernel); one more after the step, outside every window (20%). */
static void scenario_gpu_windows(void) {
    cJSON *j, *dev, *ph, *c;
    char *report;
    int i;
    simnvml_reset();
    simnvml_set(SIMNVML_DRAM, 85);        /* GPM: the GPU's work reads memory-bound */
    simnvml_set(SIMNVML_TENSOR, 10);
    CHECK(session("windows.json", NULL), "GPU windows: NVML opens");
    for (i = 0; i < 10; i++) {
        PROF_STEP();
        { PROF_RANGE("forward"); simcuda_kernel(0, 400 * MS); }
        {
            PROF_RANGE("wait");
            vsleep(200 * MS);
            simnvml_set(SIMNVML_UTIL, 97);
            impl_dev_sample();
            cudaDeviceSynchronize();
        }
        vsleep(150 * MS);
        simnvml_set(SIMNVML_UTIL, 20);
        impl_dev_sample();
        vsleep(1 * MS);                   /* not at the instant the next forward begins */
    }
    PROF_STEP();
    gpuprof_shutdown();
    j = summary_load("windows.json");
    dev = cJSON_GetObjectItem(j, "device_over_time");
    CHECK_EQ_U(jnum(dev, "samples"), 20, "GPU windows: 20 samples");
    ph = NULL;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(dev, "by_phase")) if (!strcmp(cJSON_GetObjectItem(c, "range")->valuestring, "forward")) ph = c;
    CHECK(ph != NULL, "GPU windows: forward (400 ms a call on the GPU) has its own utilization");
    CHECK_EQ_U(jnum(ph, "samples"), 10, "GPU windows: forward's samples are those in its GPU windows");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(ph, "counters"), "utilization"), 97, "GPU windows: forward's utilization");
    c = cJSON_GetObjectItem(cJSON_GetObjectItem(summary_find(j, "ranges", "forward"), "gpu"), "verdict");
    CHECK(cJSON_IsString(c) && !strcmp(c->valuestring, "memory-bound"), "GPU windows: GPM classes the GPU-bound forward memory-bound (no work declared)");
    cJSON_Delete(j);
    report = check_slurp("report.txt");
    CHECK(report && strstr(report, "     \"forward\", 10 samples in its GPU windows: utilization 97.0%"), "GPU windows: the report's line");
    CHECK(report && strstr(report, "       the GPU's work in it reads memory-bound (measured, GPM): DRAM bandwidth 85% of peak, compute activity 10%\n"),
          "GPU windows: the class, measured");
    if (report && strstr(report, "by phase")) printf("%.*s", (int)(strstr(strstr(report, "by phase"), "\n\n") - strstr(report, "by phase")), strstr(report, "by phase"));
    free(report);
}

/* A CUDA build reads the process's CUDA device, found by its PCI bus id
   (NVML numbers GPUs in PCI order, CUDA fastest first): simulated CUDA
   device 0 is on bus 3C, NVML's GPU 1 of two. GPUPROF_NVML_DEVICE overrides. */
static void scenario_bus(void) {
    cJSON *j, *d;
    int pick;
    for (pick = 0; pick < 2; pick++) {
        simnvml_reset();
        simnvml_set_devices(2);
        if (pick) setenv("GPUPROF_NVML_DEVICE", "0", 1);
        CHECK(session("bus.json", NULL), "bus id: NVML opens");
        { PROF_RANGE("work"); vsleep(300 * MS); impl_dev_sample(); }
        gpuprof_shutdown();
        unsetenv("GPUPROF_NVML_DEVICE");
        j = summary_load("bus.json");
        d = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "device_over_time"), "device");
        CHECK_EQ_U(jnum(d, "index"), pick ? 0 : 1, pick ? "bus id: GPUPROF_NVML_DEVICE=0 reads GPU 0" : "bus id: the CUDA device is NVML's GPU 1");
        CHECK(cJSON_IsString(cJSON_GetObjectItem(d, "pci_bus_id")) &&
              !strcmp(cJSON_GetObjectItem(d, "pci_bus_id")->valuestring, pick ? "" : "00000000:3C:00.0"), "bus id: the bus id it was found by");
        CHECK(!strcmp(cJSON_GetObjectItem(d, "picked_by")->valuestring, pick ? "GPUPROF_NVML_DEVICE" : "the CUDA device"), "bus id: how it was picked");
        cJSON_Delete(j);
    }
}
#endif

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: test_device LIBSIMNVML [PYTHON CHECK_TRACE [VIEWER_PYTHON CHECK_PFTRACE]]\n"); return 2; }
    lib = argv[1];
#ifdef GPUPROF_CUDA
    (void)argc;
    scenario_bus();
    scenario_gpu_windows();
    return check_done("test_device_cuda");
#endif
    scenario_absent();
    scenario_power_cap();
    scenario_faults();
    scenario_impossible();
    scenario_no_gpm();
    scenario_off();
    scenario_live(argc, argv);
    return check_done("test_device");
}
