/* Ranges under a virtual clock, so every duration is known exactly:
   nesting, inclusive vs self time, the call tree, one name at two call
   paths, run-time names, explicit BEGIN/END, FUNC and WORK ranges. */
#include "impl/clock.h"
#include "gpuprof.h"
#include "json_util.h"

static void load_batch(void) { PROF_FUNC(); vnow += 30; }

static void train_step(int i) {
    PROF_RANGE("step");
    vnow += 100;
    {
        PROF_RANGE("forward");
        vnow += 1000;
        { PROF_RANGE("matmul"); vnow += 600; }
        vnow += 50;
    }
    {
        PROF_RANGE("backward");
        vnow += 2000;
        { PROF_RANGE("matmul"); vnow += 1200; }
    }
    {
        char name[32];
        snprintf(name, sizeof name, "layer %d", i % 3);
        PROF_RANGE_DYN(name);
        vnow += 10 * (i % 3 + 1);
    }
    PROF_BEGIN("io");
    vnow += 5;
    PROF_END();
    { PROF_RANGE_WORK("gemm", 1e6, 2e6); vnow += 40; }
    load_batch();
    vnow += 7;
}

int main(int argc, char **argv) {
    gpuprof_config cfg = {0};
    cJSON *j, *r;
    FILE *rep;
    char *text;
    int i;
    cfg.report = "off";
    CHECK(gpuprof_init(&cfg) == 0, "gpuprof_init with a zeroed config succeeds");
    for (i = 0; i < 10; i++) train_step(i);
    CHECK(gpuprof_write_summary("ranges.summary.json") == 0, "the summary is written");
    rep = fopen("ranges.report.txt", "w");
    CHECK(rep && gpuprof_report(rep) == 0, "the report is written");
    if (rep) fclose(rep);
    gpuprof_shutdown();

    j = summary_load("ranges.summary.json");
    CHECK(j != NULL, "the summary parses as JSON");
    if (!j) return check_done("test_ranges");

    r = summary_find(j, "ranges", "step");
    CHECK_EQ_U(jnum(r, "count"), 10, "step: 10 calls");
    CHECK_EQ_U(jnum(r, "sum_ns"), 10 * (100 + 1650 + 3200 + 5 + 40 + 30 + 7) + 4 * 10 + 3 * 20 + 3 * 30, "step: inclusive total");
    CHECK_EQ_U(jnum(r, "self_ns"), 10 * (100 + 7), "step: self time excludes every nested range");
    r = summary_find(j, "ranges", "forward");
    CHECK_EQ_U(jnum(r, "sum_ns"), 10 * 1650, "forward: inclusive total");
    CHECK_EQ_U(jnum(r, "self_ns"), 10 * 1050, "forward: self = inclusive - matmul");
    CHECK_EQ_U(jnum(r, "min_ns"), 1650, "forward: min");
    CHECK_EQ_U(jnum(r, "max_ns"), 1650, "forward: max");
    CHECK(jnum(r, "std_ns") == 0, "forward: std of identical calls is 0");

    r = summary_find(j, "ranges", "matmul");
    CHECK_EQ_U(jnum(r, "count"), 20, "matmul (flat): both call paths aggregate, 20 calls");
    CHECK_EQ_U(jnum(r, "sum_ns"), 10 * (600 + 1200), "matmul (flat): total");
    CHECK_EQ_U(jnum(r, "mean_ns"), 900, "matmul (flat): mean");
    CHECK_EQ_U(jnum(r, "min_ns"), 600, "matmul (flat): min");
    CHECK_EQ_U(jnum(r, "max_ns"), 1200, "matmul (flat): max");
    CHECK_REL(jnum(r, "p50_ns"), 900, 0.01, "matmul (flat): p50 interpolates between the two paths");
    CHECK_REL(jnum(r, "p95_ns"), 1200, 0.01, "matmul (flat): p95");

    r = summary_path(j, "step/forward/matmul");
    CHECK(r != NULL, "tree: matmul under step/forward");
    CHECK_EQ_U(jnum(r, "count"), 10, "tree: step/forward/matmul calls");
    CHECK_EQ_U(jnum(r, "sum_ns"), 6000, "tree: step/forward/matmul total");
    CHECK_EQ_U(jnum(r, "depth"), 2, "tree: matmul depth under forward");
    r = summary_path(j, "step/backward/matmul");
    CHECK_EQ_U(jnum(r, "sum_ns"), 12000, "tree: step/backward/matmul total");
    CHECK(summary_path(j, "step/backward") && summary_path(j, "step/load_batch"), "tree: backward and load_batch under step");

    CHECK_EQ_U(jnum(summary_find(j, "ranges", "layer 0"), "count"), 4, "RANGE_DYN: \"layer 0\" called 4 times");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "layer 1"), "sum_ns"), 3 * 20, "RANGE_DYN: \"layer 1\" total");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "layer 2"), "sum_ns"), 3 * 30, "RANGE_DYN: \"layer 2\" total");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "io"), "sum_ns"), 50, "BEGIN/END: io total");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "load_batch"), "count"), 10, "FUNC: named after the function");
    r = summary_find(j, "ranges", "gemm");
    CHECK(jnum(r, "flops") == 1e7 && jnum(r, "bytes") == 2e7, "WORK: flops and bytes summed over calls");
    CHECK_REL(jnum(j, "profiled_ns"), jnum(summary_find(j, "ranges", "step"), "sum_ns"), 1e-12,
              "time in ranges = the top-level range's total (self times add up)");
    r = summary_find(j, "ranges", "step");
    CHECK(fabs(jnum(r, "share") - 107.0 / (jnum(r, "sum_ns") / 10)) < 1e-9, "share = self time / all time in ranges");
    CHECK(jnum(cJSON_GetObjectItem(j, "warnings"), "mismatched_nesting") == 0, "no warnings for correct nesting");
    cJSON_Delete(j);

    /* the text report: flat rows sorted by total, the tree indented */
    text = check_slurp("ranges.report.txt");
    CHECK(text && strstr(text, "\n    matmul ") != NULL, "report: matmul is indented two levels in the call tree");
    CHECK(text && strstr(text, "\nstep ") && strstr(text, "\n  forward "), "report: tree rows for step and forward");
    CHECK(text && strstr(text, "Ranges by total time") < strstr(text, "Call tree"), "report: flat table, then the tree");
    CHECK(text && strstr(text, "1.65 us") != NULL, "report: times are scaled (1650 ns -> 1.65 us)");
    {
        const char *flat = text ? strstr(text, "Ranges by total time") : NULL;
        const char *a = flat ? strstr(flat, "\nstep ") : NULL, *b = flat ? strstr(flat, "\nbackward ") : NULL;
        const char *c = flat ? strstr(flat, "\nforward ") : NULL;
        CHECK(a && b && c && a < b && b < c, "report: flat rows sorted by total (step, backward, forward)");
    }
    if (text) fputs(text, stdout);
    free(text);
    if (argc > 1) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "python3 %s ranges.report.txt", argv[1]);
        CHECK(system(cmd) == 0, "report: every table's columns line up");
    }

    /* a second session after shutdown: names registered afresh */
    cfg.report = "off";
    CHECK(gpuprof_init(&cfg) == 0, "gpuprof_init after shutdown starts a new session");
    train_step(1);
    CHECK(gpuprof_write_summary("ranges2.summary.json") == 0, "second session: summary written");
    gpuprof_shutdown();
    j = summary_load("ranges2.summary.json");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "forward"), "count"), 1, "second session: forward counted once, from zero");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "layer 1"), "count"), 1, "second session: run-time names work again");
    cJSON_Delete(j);
    return check_done("test_ranges");
}
