/* libFuzzer target (b): the environment variables and config strings
   gpuprof parses. The input's lines are values for GPUPROF_SCHEDULE,
   GPUPROF_WARMUP, GPUPROF_ROWS, GPUPROF_VIEW, GPUPROF_CLOCK, GPUPROF_OFF,
   GPUPROF_TRACE, GPUPROF_SUMMARY, GPUPROF_REPORT (paths kept inside a scratch
   directory, with their %p / %r / %l / %h / %% intact), GPUPROF_RANK; the first byte picks
   whether they go through the environment or the config struct. A short run
   follows; whatever was written must parse. */
#include "../../gpuprof.h"                /* fuzz/run.sh links the implementation */
#include "../impl/hooks.h"
#include "fuzz_common.h"

enum { NKEYS = 10 };
static const char *const keys[NKEYS] = {
    "GPUPROF_SCHEDULE", "GPUPROF_WARMUP", "GPUPROF_ROWS", "GPUPROF_VIEW", "GPUPROF_CLOCK",
    "GPUPROF_OFF", "GPUPROF_TRACE", "GPUPROF_SUMMARY", "GPUPROF_REPORT", "GPUPROF_RANK"
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char vals[NKEYS][300], path[3][400];
    int nv = 0, i, via_env;
    size_t start = 1, k;
    gpuprof_config cfg;
    cJSON *j;
    fuzz_setup("env");
    if (size < 1) return 0;
    via_env = data[0] & 1;
    for (k = 1; k <= size && nv < NKEYS; k++) {
        if (k == size || data[k] == '\n' || data[k] == 0) {
            size_t len = k - start < 299 ? k - start : 299;
            memcpy(vals[nv], data + start, len);
            vals[nv][len] = 0;
            nv++;
            start = k + 1;
        }
    }
    for (i = nv; i < NKEYS; i++) vals[i][0] = 0;
    /* paths: inside the scratch directory, no '/' of their own */
    for (i = 0; i < 3; i++) {
        char *v = vals[6 + i], *c;
        for (c = v; *c; c++) if (*c == '/') *c = '_';
        if (i == 2 && (strcmp(v, "stderr") == 0 || strcmp(v, "stdout") == 0)) strcpy(v, "off");   /* keep the log quiet */
        snprintf(path[i], sizeof path[i], "%s/%c%s", fuzz_dir, "tsr"[i], v);    /* never the same file twice */
        if (i == 2 && strcmp(v, "off") == 0) snprintf(path[i], sizeof path[i], "off");
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    if (via_env) {
        for (i = 0; i < 6; i++) if (i < nv) setenv(keys[i], vals[i], 1);
        setenv("GPUPROF_TRACE", path[0], 1);
        setenv("GPUPROF_SUMMARY", path[1], 1);
        setenv("GPUPROF_REPORT", path[2], 1);
        if (nv > 9) setenv("GPUPROF_RANK", vals[9], 1);
    } else {
        cfg.schedule = vals[0];
        cfg.warmup = atoi(vals[1]);
        cfg.report_rows = atoi(vals[2]);
        cfg.report_view = atoi(vals[3]) % 3;
        cfg.trace_path = path[0];
        cfg.summary_path = path[1];
        cfg.report = path[2];
        cfg.max_names = atoi(vals[4]) % 100000;
        cfg.trace_buffer_mb = atoi(vals[5]) % 64;
    }
    gpuprof_init(&cfg);
    for (i = 0; i < 12; i++) {
        { PROF_RANGE("forward"); { PROF_RANGE("inner"); } }
        PROF_COUNTER("loss", 1.0 / (i + 1));
        PROF_STEP();
    }
    gpuprof_shutdown();
    for (i = 0; i < NKEYS; i++) unsetenv(keys[i]);
    /* whatever was written parses (with %p/%r/%l/%h expanded) */
    {
        char full[4200];
        impl_path_expand(path[1], full, sizeof full);
        if ((j = fuzz_json(full, "the summary parses")) != NULL) {
            cJSON *steps = cJSON_GetObjectItem(j, "steps");
            FUZZ_CHECK(cJSON_GetObjectItem(steps, "counted") != NULL, "the summary has its steps");
            cJSON_Delete(j);
            unlink(full);
        }
        if (impl_trace_is_perfetto(path[0])) {
            if (fuzz_pftrace(path[0], "the Perfetto trace is whole packets")) unlink(path[0]);
        } else if ((j = fuzz_json(path[0], "the trace parses")) != NULL) { cJSON_Delete(j); unlink(path[0]); }
    }
    return 0;
}
