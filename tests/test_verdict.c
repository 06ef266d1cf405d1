/* The verdict and the steps in the layouts real programs have (SPEC 9):
   each scenario is a small program whose summary is checked. Virtual clock,
   so every time is known; it moves 1 ns at every read, as a real one does. */
#define GPUPROF_IMPLEMENTATION
#include <stdint.h>
static uint64_t vnow = 1000000;
static uint64_t test_clock(void) { return ++vnow; }
#define GPUPROF_CLOCK_FN() test_clock()
#include "gpuprof.h"
#include "json_util.h"
#include <stdlib.h>

static cJSON *verdict(cJSON *j) { return cJSON_GetObjectItem(j, "verdict"); }

/* PROF_STEP() as the very first gpuprof call (llm.c's loop calls it before
   any range): the session starts there, and the first step is measured from
   that call on the session's clock. */
static void scenario_step_first(void) {
    cJSON *j, *time, *e;
    char *text;
    int i, marker_ok = 0, markers = 0;
    setenv("GPUPROF_SUMMARY", "step_first.json", 1);
    setenv("GPUPROF_TRACE", "step_first.trace.json", 1);
    setenv("GPUPROF_REPORT", "off", 1);
    for (i = 0; i < 10; i++) {
        PROF_STEP();
        { PROF_RANGE("forward"); vnow += 1000; }
        { PROF_RANGE("backward"); vnow += 2000; }
    }
    gpuprof_shutdown();
    unsetenv("GPUPROF_SUMMARY");
    unsetenv("GPUPROF_TRACE");
    unsetenv("GPUPROF_REPORT");
    j = summary_load("step_first.json");
    time = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "time");
    CHECK_EQ_U(jnum(time, "count"), 9, "step first: 9 intervals between 10 GPUPROF_STEP calls");
    CHECK(jnum(time, "max_ns") > 3000 && jnum(time, "max_ns") < 3100, "step first: no step is longer than its 3 us of work (+ clock reads)");
    text = check_slurp("step_first.trace.json");
    e = text ? cJSON_Parse(text) : NULL;
    CHECK(e != NULL, "step first: the trace parses");
    {
        cJSON *ev;
        cJSON_ArrayForEach(ev, cJSON_GetObjectItem(e, "traceEvents")) {
            cJSON *name = cJSON_GetObjectItem(ev, "name");
            if (cJSON_IsString(name) && strncmp(name->valuestring, "step ", 5) == 0) {
                markers++;
                if (strcmp(name->valuestring, "step 0") == 0 && jnum(ev, "ts") >= 0 && jnum(ev, "ts") < 1.0) marker_ok = 1;
            }
        }
    }
    CHECK_EQ_U(markers, 10, "step first: ten step marks");
    CHECK(marker_ok, "step first: the step-0 mark is at the start of the trace (ts < 1 us), not at 1.8e16 us");
    cJSON_Delete(e);
    free(text);
    CHECK(verdict(j) != NULL, "step first: a verdict");
    cJSON_Delete(j);
}

int main(void) {
    scenario_step_first();
    return check_done("test_verdict");
}
