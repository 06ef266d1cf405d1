/* Warm-up exclusion and the schedule: exactly the right steps and calls are
   counted, excluded, or not recorded at all. Virtual clock: known times. */
#include "impl/clock.h"
#include "gpuprof.h"
#include "json_util.h"

/* One training step whose "work" range lasts 1000 ns in warm-up steps and
   100 ns afterwards, so a leaked warm-up call shows in the mean. */
static void run_steps(int steps, int warm_steps, int call_step) {
    int i;
    for (i = 0; i < steps; i++) {
        { PROF_RANGE("work"); vnow += i < warm_steps ? 1000 : 100; }
        PROF_COUNTER("loss", i < warm_steps ? 9.0 : 1.0);
        vnow += 10;
        if (call_step) PROF_STEP();
    }
}

/* Each session writes its summary to `file` and its trace to "trace.<file>". */
static cJSON *session(const char *schedule, int warmup, int steps, int warm_steps, int call_step, const char *file) {
    gpuprof_config cfg = {0};
    char trace[64];
    snprintf(trace, sizeof trace, "trace.%s", file);
    cfg.report = "off";
    cfg.warmup = warmup;
    cfg.schedule = schedule;
    cfg.trace_path = trace;
    gpuprof_init(&cfg);
    run_steps(steps, warm_steps, call_step);
    gpuprof_write_summary(file);
    gpuprof_shutdown();
    return summary_load(file);
}

int main(int argc, char **argv) {
    cJSON *j, *r, *st;
    char cmd[512];
    vnow = 1000;

    /* GPUPROF_WARMUP=3 with steps: steps 0-2 excluded, 3-9 counted */
    j = session(NULL, 3, 10, 3, 1, "warmup1.json");
    st = cJSON_GetObjectItem(j, "steps");
    CHECK_EQ_U(jnum(st, "counted"), 7, "warm-up 3 of 10 steps: 7 counted");
    CHECK_EQ_U(jnum(st, "excluded"), 3, "warm-up 3 of 10 steps: 3 excluded");
    r = summary_find(j, "ranges", "work");
    CHECK_EQ_U(jnum(r, "count"), 7, "work: 7 calls counted");
    CHECK_EQ_U(jnum(r, "excluded_calls"), 3, "work: 3 calls excluded");
    CHECK_EQ_U(jnum(r, "max_ns"), 100, "work: no warm-up call (1000 ns) leaked into the statistics");
    r = summary_find(j, "counters", "loss");
    CHECK_EQ_U(jnum(r, "count"), 7, "counter samples in warm-up steps are excluded too");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(st, "time"), "count"), 7, "step time: one interval per counted step (each starts at the previous GPUPROF_STEP)");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(st, "time"), "mean_ns"), 110, "step time: 100 ns of work + 10 ns");
    cJSON_Delete(j);
    if (argc > 1) {
        snprintf(cmd, sizeof cmd, "python3 %s trace.warmup1.json --expect-x 10 --expect-name 'step 0'", argv[1]);
        CHECK(system(cmd) == 0, "warm-up calls are still in the trace (10 ranges), with step marks");
    }

    /* warm-up without any GPUPROF_STEP: the first N calls of each range */
    j = session(NULL, 2, 6, 2, 0, "warmup2.json");
    r = summary_find(j, "ranges", "work");
    CHECK_EQ_U(jnum(r, "count"), 4, "no steps, warm-up 2: 4 of 6 calls counted");
    CHECK_EQ_U(jnum(r, "excluded_calls"), 2, "no steps, warm-up 2: 2 calls excluded");
    CHECK_EQ_U(jnum(r, "max_ns"), 100, "no steps: the excluded calls are the first two");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "seen")), "summary says no steps were seen");
    cJSON_Delete(j);

    /* a range called several times in the first step, then steps: the whole
       first step is warm-up once the program shows it calls GPUPROF_STEP */
    {
        gpuprof_config cfg = {0};
        int i;
        cfg.report = "off";
        cfg.warmup = 1;
        gpuprof_init(&cfg);
        for (i = 0; i < 5; i++) { PROF_RANGE("layer"); vnow += 1000; }
        PROF_STEP();
        for (i = 0; i < 5; i++) { PROF_RANGE("layer"); vnow += 100; }
        PROF_STEP();
        gpuprof_write_summary("warmup3.json");
        gpuprof_shutdown();
        j = summary_load("warmup3.json");
        r = summary_find(j, "ranges", "layer");
        CHECK_EQ_U(jnum(r, "count"), 5, "warm-up 1 step, 5 calls per step: the second step's 5 calls counted");
        CHECK_EQ_U(jnum(r, "excluded_calls"), 5, "warm-up 1 step: all 5 calls of the first step excluded");
        CHECK_EQ_U(jnum(r, "max_ns"), 100, "warm-up 1 step: no first-step call in the statistics");
        cJSON_Delete(j);
    }

    /* torch.profiler schedule: wait=1, warmup=1, active=2, repeat=2 over 10 steps:
       0 wait, 1 warm-up, 2-3 active, 4 wait, 5 warm-up, 6-7 active, 8-9 done */
    j = session("wait=1,warmup=1,active=2,repeat=2", 0, 10, 0, 1, "sched1.json");
    st = cJSON_GetObjectItem(j, "steps");
    CHECK_EQ_U(jnum(st, "counted"), 4, "schedule: 4 active steps counted");
    CHECK_EQ_U(jnum(st, "excluded"), 2, "schedule: 2 warm-up steps excluded");
    CHECK_EQ_U(jnum(st, "not_recorded"), 4, "schedule: 4 wait/done steps not recorded");
    r = summary_find(j, "ranges", "work");
    CHECK_EQ_U(jnum(r, "count"), 4, "schedule: work counted in active steps only");
    CHECK_EQ_U(jnum(r, "excluded_calls"), 2, "schedule: work in warm-up steps excluded");
    cJSON_Delete(j);
    if (argc > 1) {
        snprintf(cmd, sizeof cmd, "python3 %s trace.sched1.json --expect-x 6", argv[1]);
        CHECK(system(cmd) == 0, "schedule: wait and done steps are not in the trace (6 ranges)");
    }

    /* skip_first and repeat=0 (forever) */
    j = session("skip_first=3,wait=0,warmup=0,active=1", 0, 10, 0, 1, "sched2.json");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "work"), "count"), 7, "schedule skip_first=3, active=1 forever: 7 of 10 counted");
    cJSON_Delete(j);

    /* warm-up and schedule together: the first active step is also within warm-up */
    j = session("wait=1,warmup=0,active=3", 2, 4, 0, 1, "sched3.json");
    r = summary_find(j, "ranges", "work");
    CHECK_EQ_U(jnum(r, "count"), 2, "schedule + GPUPROF_WARMUP=2: steps 2 and 3 counted");
    CHECK_EQ_U(jnum(r, "excluded_calls"), 1, "schedule + GPUPROF_WARMUP=2: step 1 excluded, step 0 not recorded");
    cJSON_Delete(j);
    return check_done("test_warmup");
}
