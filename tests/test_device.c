/* The device over the run (SPEC 17), against the simulated NVML of
   tests/simnvml, loaded as the driver's libnvidia-ml.so.1 is
   (GPUPROF_NVML_PATH). The exact scenarios take every sample themselves
   (gpuprof__dev_sample, on a virtual clock) with the values set just
   before, so each figure is known; the last one lets gpuprof's thread
   sample on the real clock, as in a run.
   Usage: test_device LIBSIMNVML [PYTHON CHECK_TRACE] */
#define GPUPROF_IMPLEMENTATION
#include <stdint.h>
static uint64_t vnow = 1000000;       /* one clock for every thread: only the test's thread takes samples on it */
static uint64_t test_clock(void) { return __atomic_add_fetch(&vnow, 1, __ATOMIC_RELAXED); }
#define GPUPROF_CLOCK_FN() test_clock()
#include "gpuprof.h"
#include "json_util.h"
#include "simnvml/simnvml.h"
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#define MS 1000000ull
static const char *lib;

static void vsleep(uint64_t ns) { __atomic_add_fetch(&vnow, ns, __ATOMIC_RELAXED); }

/* A session with the simulated NVML, gpuprof's thread never sampling (an
   hour apart): the test samples. Waits for gpuprof's thread to open NVML. */
static int session(const char *summary, const char *trace) {
    int i;
    setenv("GPUPROF_NVML_PATH", lib, 1);
    setenv("GPUPROF_DEVICE_EVERY_MS", "3600000", 1);
    setenv("GPUPROF_SUMMARY", summary, 1);
    setenv("GPUPROF_REPORT", "report.txt", 1);
    if (trace) setenv("GPUPROF_TRACE", trace, 1);
    else unsetenv("GPUPROF_TRACE");
    gpuprof_init(NULL);
    for (i = 0; i < 500 && !GPUPROF__LDA(&gpuprof__dev.on); i++) usleep(10000);
    gpuprof__dev.every_ms = 100;      /* what the phases are judged against: 100 ms, the default */
    return GPUPROF__LDA(&gpuprof__dev.on);
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
            gpuprof__dev_sample();
            vsleep((i < 20 ? 150 : 210) * MS);
        }
        { PROF_RANGE("data"); vsleep(10 * MS); }
        simnvml_set(SIMNVML_UTIL, 20);
        gpuprof__dev_sample();
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
    if (report) {
        const char *p = strstr(report, "Device over the run");
        if (p) printf("%.*s", (int)(strstr(p, "\nVerdict") ? strstr(p, "\nVerdict") - p : 2000), p);
    }
    free(report);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: test_device LIBSIMNVML [PYTHON CHECK_TRACE]\n"); return 2; }
    lib = argv[1];
    scenario_power_cap();
    return check_done("test_device");
}
