/* Allocation failure degrades, it does not crash (SPEC 11): with every
   allocation failing mid-run, new call paths, names, counters and trace
   buffers are dropped and counted; what was recorded before stays. */
#include "count_alloc.h"                 /* alloc_fail_all: the "alloc" configuration */
#include "gpuprof.h"
#include "json_util.h"

int main(void) {
    gpuprof_config cfg = {0};
    cJSON *j;
    int i;
    cfg.report = "off";
    cfg.trace_path = "alloc_fail.trace.json";
    gpuprof_init(&cfg);
    for (i = 0; i < 10; i++) { PROF_RANGE("before"); PROF_COUNTER("loss", 1.0); }

    alloc_fail_all = 1;
    for (i = 0; i < 100; i++) {
        char name[32];
        PROF_RANGE("new path");                       /* node chunk: the first was allocated above, so this fits */
        { PROF_RANGE("before"); }
        snprintf(name, sizeof name, "dyn %d", i);
        { PROF_RANGE_DYN(name); { PROF_RANGE("under a failed one"); } }
        PROF_COUNTER("new counter", 2.0);
        { PROF_RANGE("before"); }
    }
    alloc_fail_all = 0;
    /* many new call paths while every other allocation fails: node chunks
       fill, some cannot be allocated (those calls go to the overflow node),
       and ranges inside an overflowed one may get nodes of their own */
    for (i = 0; i < 300; i++) {
        char name[32];
        snprintf(name, sizeof name, "path %d", i);
        { PROF_RANGE_DYN(name); }                   /* registers the name, at the top */
    }
    { PROF_RANGE_DYN("parent"); PROF_RANGE_DYN("leaf"); PROF_RANGE_DYN("leaf2"); }
    alloc_fail_all = 2;
    for (i = 0; i < 300; i++) {
        char name[32];
        snprintf(name, sizeof name, "path %d", i);
        { PROF_RANGE("parent"); { PROF_RANGE_DYN(name); { PROF_RANGE("leaf"); { PROF_RANGE("leaf2"); } } } }
    }
    alloc_fail_all = 0;

    CHECK(gpuprof_write_summary("alloc_fail.summary.json") == 0, "the summary is written once memory is back");
    gpuprof_shutdown();
    j = summary_load("alloc_fail.summary.json");
    CHECK(j != NULL, "summary parses");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "before"), "count"), 210, "ranges on existing call paths are all counted");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "parent"), "count"), 301, "a range whose node exists is counted through failures below it");
    CHECK_EQ_U(jnum(summary_find(j, "counters", "loss"), "count"), 10, "counter samples from before are kept");
    CHECK(summary_find(j, "counters", "new counter") == NULL, "a counter that could not be allocated is dropped");
    CHECK(jnum(cJSON_GetObjectItem(j, "warnings"), "out_of_memory") > 0, "allocation failures are counted");
    CHECK(summary_find(j, "ranges", "[other names]") != NULL, "names that could not be stored go to [other names]");
    cJSON_Delete(j);
    return check_done("test_alloc_fail");
}
