/* The verdict and the steps in the layouts real programs have (SPEC 9):
   each scenario is a small program whose summary is checked. Virtual clock,
   so every time is known; it moves 1 ns at every read, as a real one does,
   and each thread has its own (threads run side by side): the
   implementation's "vtls" configuration (impl/clock.h). */
#include <stdint.h>
#include "gpuprof.h"
#include "impl/clock.h"
#include "json_util.h"
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <math.h>

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
        { PROF_RANGE("forward"); vnow_tls += 1000; }
        { PROF_RANGE("backward"); vnow_tls += 2000; }
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
        cJSON_ArrayForEach(ev, trace_events(e)) {
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

static cJSON *session_end(const char *file) {
    cJSON *j;
    FILE *f;
    char report[128];
    snprintf(report, sizeof report, "%s.report.txt", file);
    f = fopen(report, "w");
    gpuprof_report(f);
    fclose(f);
    gpuprof_write_summary(file);
    gpuprof_shutdown();
    j = summary_load(file);
    CHECK(j != NULL, "the summary parses");
    return j;
}
/* A session with cfg (NULL: the defaults), its report off. */
static void session_begin(gpuprof_config *cfg) {
    gpuprof_config dflt;
    memset(&dflt, 0, sizeof dflt);
    if (!cfg) cfg = &dflt;
    cfg->report = "off";
    gpuprof_init(cfg);
}

/* A thread beside the step: n ranges named name of ns each (its own clock). */
typedef struct side_job { const char *name; int n; uint64_t ns; } side_job;
static void *side_thread(void *arg) {
    const side_job *job = (const side_job *)arg;
    int i;
    for (i = 0; i < job->n; i++) { PROF_RANGE_DYN(job->name); vnow_tls += job->ns; }
    return NULL;
}
static cJSON *phase_named(cJSON *j, const char *name) { return summary_find(verdict(j), "phases", name); }
static const char *bottleneck_name(cJSON *j) {
    cJSON *n = cJSON_GetObjectItem(cJSON_GetObjectItem(verdict(j), "bottleneck"), "name");
    return cJSON_IsString(n) ? n->valuestring : "(none)";
}
static int shares_at_most_one(cJSON *j) {
    cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(verdict(j), "phases")) if (jnum(p, "share") > 1.0) return 0;
    return 1;
}

/* A loop of data 1 us, forward 2 us, backward 3 us per step on the main thread. */
static void train_steps(int steps, int wrapped) {
    int i;
    for (i = 0; i < steps; i++) {
        if (wrapped) GPUPROF_BEGIN("step");
        { PROF_RANGE("data"); vnow_tls += 1000; }
        { PROF_RANGE("forward"); vnow_tls += 2000; }
        { PROF_RANGE("backward"); vnow_tls += 3000; }
        if (wrapped) GPUPROF_END();
        PROF_STEP();
    }
}

/* A logger thread that sleeps 20 us in each of its ranges, beside the step:
   it is not a phase of the step, and it does not bound it. */
static void scenario_background_thread(void) {
    static const side_job logger = { "logger.flush", 10, 20000 };
    pthread_t th;
    cJSON *j, *o;
    session_begin(NULL);
    pthread_create(&th, NULL, side_thread, (void *)&logger);
    train_steps(11, 0);
    pthread_join(th, NULL);
    j = session_end("background.json");
    CHECK(strcmp(bottleneck_name(j), "backward") == 0, "background thread: the bottleneck is the step's backward, not the sleeping logger");
    CHECK(phase_named(j, "logger.flush") == NULL, "background thread: the logger is not a phase of the step");
    CHECK(shares_at_most_one(j), "background thread: no phase holds more than 100% of the step");
    o = summary_find(verdict(j), "other_threads", "logger.flush");
    CHECK(o != NULL, "background thread: the logger is listed among the other threads");
    CHECK_EQ_U(jnum(o, "calls"), 10, "with its 10 calls");
    CHECK(jnum(o, "cpu_ns") > 10 * 20000.0 / 11 - 100 && jnum(o, "cpu_ns") < 10 * 20000.0 / 10 + 100, "and its time per step");
    cJSON_Delete(j);
}

/* A "step" range around the whole step: it is the container, the phases
   are the ranges inside it. */
static void scenario_step_container(void) {
    cJSON *j, *c;
    session_begin(NULL);
    train_steps(11, 1);
    j = session_end("container.json");
    c = cJSON_GetObjectItem(verdict(j), "container");
    CHECK(cJSON_IsString(c) && strcmp(c->valuestring, "step") == 0, "step container: \"step\" is named as the range wrapping the step");
    CHECK(phase_named(j, "step") == NULL, "step container: it is not a phase");
    CHECK(phase_named(j, "forward") && phase_named(j, "backward") && phase_named(j, "data"), "step container: the ranges inside it are");
    CHECK(strcmp(bottleneck_name(j), "backward") == 0, "step container: the bottleneck is backward, not \"step\" at 100%");
    CHECK(shares_at_most_one(j), "step container: no share over 100%");
    cJSON_Delete(j);
}

/* A CPU build with the machine's peaks given: forward's time is mostly a
   nested matmul declared with GPUPROF_RANGE_WORK (compute-bound at 50% of
   the given peak): forward takes that class, decided by matmul. */
static void scenario_nested_work(void) {
    gpuprof_config cfg;
    cJSON *j, *f, *by;
    int i;
    memset(&cfg, 0, sizeof cfg);
    cfg.peak_tflops = 1.0;                 /* 1e12 FLOP/s */
    cfg.peak_gbps = 100.0;                 /* 1e11 B/s: ridge 10 FLOP/B */
    session_begin(&cfg);
    for (i = 0; i < 11; i++) {
        { PROF_RANGE("data"); vnow_tls += 500; }
        {
            PROF_RANGE("forward");
            { PROF_RANGE_WORK("matmul", 1e6, 1e4); vnow_tls += 2000; }    /* 1e6 FLOP in 2 us: 5e11 FLOP/s, 100 FLOP/B */
            vnow_tls += 200;
        }
        PROF_STEP();
    }
    j = session_end("nested_work.json");
    f = phase_named(j, "forward");
    CHECK(f && strcmp(cJSON_GetObjectItem(f, "class")->valuestring, "compute-bound") == 0,
          "nested work: forward is compute-bound, from the work declared inside it (not \"CPU-bound: host code\")");
    by = f ? cJSON_GetObjectItem(f, "decided_by") : NULL;
    CHECK(cJSON_IsString(by) && strcmp(by->valuestring, "matmul") == 0, "nested work: decided by matmul");
    CHECK(strcmp(bottleneck_name(j), "forward") == 0, "nested work: forward is the bottleneck");
    {
        char *text = check_slurp("nested_work.json.report.txt");
        CHECK(text && !strstr(text, "declare its work with GPUPROF_RANGE_WORK"), "nested work: the advice does not ask for work already declared");
        CHECK(text && strstr(text, "% of its CPU time in compute-bound ranges, most in \"matmul\" (50% of peak FLOP/s)"), "nested work: the Why says so");
        free(text);
    }
    cJSON_Delete(j);
}

/* Warm-up 2 steps, a "step" range around GPUPROF_STEP (its calls span the
   boundary), and a worker thread whose calls all fall in the warm-up: the
   tree's parent and children agree, and no 0-call row is shown. */
static void scenario_warmup_boundary(void) {
    static const side_job warm_worker = { "worker.task", 5, 100 };
    gpuprof_config cfg;
    cJSON *j, *outer, *inner;
    pthread_t th;
    char *text;
    int i;
    memset(&cfg, 0, sizeof cfg);
    cfg.warmup = 2;
    session_begin(&cfg);
    for (i = 0; i < 10; i++) {
        GPUPROF_BEGIN("iteration");
        { PROF_RANGE("forward"); vnow_tls += 2000; }
        if (i == 0) { pthread_create(&th, NULL, side_thread, (void *)&warm_worker); pthread_join(th, NULL); }
        PROF_STEP();
        GPUPROF_END();                                  /* ends in the next step */
    }
    j = session_end("warmup_boundary.json");
    outer = summary_path(j, "iteration");
    inner = summary_path(j, "iteration/forward");
    CHECK(outer && inner, "warm-up boundary: both tree rows");
    CHECK_EQ_U(jnum(outer, "count"), jnum(inner, "count"), "warm-up boundary: the parent's counted calls equal its child's");
    CHECK_EQ_U(jnum(inner, "count"), 8, "warm-up boundary: 8 of 10 iterations counted (2 in warm-up)");
    text = check_slurp("warmup_boundary.json.report.txt");
    {
        const char *tree = text ? strstr(text, "Call tree") : NULL;
        CHECK(tree && !strstr(tree, "worker.task"), "warm-up boundary: a thread whose calls all fell in warm-up shows no 0-call row");
    }
    free(text);
    cJSON_Delete(j);
}

/* A 200 us model load before the first step and a teardown after the last,
   four 6 us steps, no warm-up (the first iteration's ranges also fall
   before the first GPUPROF_STEP): time outside the steps is listed once, the
   phases are per step window, and no share passes 100%. */
static void scenario_setup_teardown(void) {
    cJSON *j, *o, *ph;
    session_begin(NULL);
    { PROF_RANGE("load_model"); vnow_tls += 200000; }
    train_steps(5, 0);                                 /* 5 GPUPROF_STEP calls: 4 step windows */
    { PROF_RANGE("teardown"); vnow_tls += 50000; }
    j = session_end("setup.json");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "time"), "count"), 4, "setup: 4 steps (windows between 5 GPUPROF_STEP calls)");
    CHECK(phase_named(j, "load_model") == NULL && phase_named(j, "teardown") == NULL, "setup: the model load and the teardown are not phases");
    CHECK(strcmp(bottleneck_name(j), "backward") == 0, "setup: the bottleneck is backward, not load_model");
    CHECK(shares_at_most_one(j), "setup: no phase holds more than 100% of the step");
    ph = phase_named(j, "backward");
    CHECK(ph && jnum(ph, "cpu_ns") > 2990 && jnum(ph, "cpu_ns") < 3010, "setup: backward 3 us per step (4 windows, 4 calls in them)");
    o = summary_find(verdict(j), "outside_steps", "load_model");
    CHECK(o && jnum(o, "before_first_step_ns") > 200000 && jnum(o, "before_first_step_ns") < 200010, "setup: load_model listed once, 200 us before the first step");
    o = summary_find(verdict(j), "outside_steps", "teardown");
    CHECK(o && jnum(o, "after_last_step_ns") > 50000 && jnum(o, "after_last_step_ns") < 50010, "setup: teardown listed once, 50 us after the last step");
    cJSON_Delete(j);
}

/* llm.c's layout: 60 training steps of 6 us; every 10th also runs a
   validation (20 us), every 20th sampling too (160 us). The steps with an
   evaluation are kinds of their own, whatever their length, each on a line
   that says what it adds, averaged over the steps of that kind; the verdict
   is on the others. */
static void scenario_step_kinds(void) {
    cJSON *j, *k, *x;
    char *text;
    int i;
    session_begin(NULL);
    for (i = 0; i <= 60; i++) {
        { PROF_RANGE("data"); vnow_tls += 1000; }
        { PROF_RANGE("forward"); vnow_tls += 2000; }
        { PROF_RANGE("backward"); vnow_tls += 3000; }
        if (i % 10 == 0) { PROF_RANGE("val"); vnow_tls += 20000; }
        if (i % 20 == 0) { PROF_RANGE("sample"); vnow_tls += 160000; }
        PROF_STEP();
    }
    j = session_end("kinds.json");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(verdict(j), "outlier_steps"), "count"), 0, "kinds: no step is an outlier by its time alone");
    k = cJSON_GetArrayItem(cJSON_GetObjectItem(verdict(j), "step_kinds"), 0);
    CHECK(k && cJSON_GetArraySize(cJSON_GetObjectItem(k, "ranges")) == 1 &&
          strcmp(cJSON_GetArrayItem(cJSON_GetObjectItem(k, "ranges"), 0)->valuestring, "val") == 0, "kinds: the first kind runs val");
    CHECK_EQ_U(jnum(k, "count"), 3, "kinds: steps 10, 30, 50 run val alone");
    x = k ? cJSON_GetArrayItem(cJSON_GetObjectItem(k, "steps"), 2) : NULL;
    CHECK(x && x->valuedouble == 50, "kinds: the third step of that kind is step 50");
    x = k ? cJSON_GetArrayItem(cJSON_GetObjectItem(k, "extra"), 0) : NULL;
    CHECK(x && jnum(x, "ns") >= 20000 && jnum(x, "ns") < 20010, "kinds: val adds its 20 us to each of its steps");
    k = cJSON_GetArrayItem(cJSON_GetObjectItem(verdict(j), "step_kinds"), 1);
    CHECK(k && cJSON_GetArraySize(cJSON_GetObjectItem(k, "ranges")) == 2, "kinds: the second kind runs val and sample");
    CHECK_EQ_U(jnum(k, "count"), 3, "kinds: steps 20, 40, 60 run both");
    x = k ? cJSON_GetArrayItem(cJSON_GetObjectItem(k, "extra"), 0) : NULL;
    CHECK(x && strcmp(cJSON_GetObjectItem(x, "name")->valuestring, "sample") == 0 && jnum(x, "ns") >= 160000 && jnum(x, "ns") < 160010,
          "kinds: sample adds 160 us per step that ran it (not averaged over steps without it)");
    CHECK(strcmp(bottleneck_name(j), "backward") == 0, "kinds: the verdict, on the typical steps, names backward, not sample");
    CHECK(jnum(verdict(j), "step_ns") > 6000 && jnum(verdict(j), "step_ns") < 6020, "kinds: the typical step is 6 us");
    CHECK(phase_named(j, "val") == NULL && phase_named(j, "sample") == NULL, "kinds: val and sample are no phases of the typical step");
    CHECK(shares_at_most_one(j), "kinds: no share over 100%");
    text = check_slurp("kinds.json.report.txt");
    CHECK(text && strstr(text, "   steps with \"val\": 3 (steps 10, 30, 50), 26.0 us each, 4.3x the typical step: +20.0 us in \"val\"\n"),
          "kinds: one line for the steps with val");
    CHECK(text && strstr(text, "   steps with \"val\" and \"sample\": 3 (steps 20, 40, 60), 186 us each, 31.0x the typical step: +160 us in \"sample\", +20.0 us in \"val\"\n"),
          "kinds: one line for the steps with val and sample");
    CHECK(text && strstr(text, "   the figures above are of the other 54 steps, the typical ones\n"), "kinds: the verdict is on the other 54 steps");
    /* one step count: 61 GPUPROF_STEP calls make 60 steps, in the header and the summary */
    CHECK(text && strstr(text, "   steps: 60 counted, 0 excluded (warm-up) | step time: "), "one count: the header says 60 steps counted");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(j, "steps"), "counted"), 60, "one count: the summary's steps.counted is 60");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "time"), "count"), 60, "one count: and 60 step times");
    /* one remedy: the report's try line is the summary's remedy */
    {
        cJSON *r = cJSON_GetObjectItem(cJSON_GetObjectItem(verdict(j), "bottleneck"), "remedy");
        char line[1024];
        snprintf(line, sizeof line, "   try: %s\n", cJSON_IsString(r) ? r->valuestring : "(none)");
        CHECK(text && strstr(text, line) && strstr(line, "no GPU in this run: GPUPROF_SAMPLE=1 names the functions that take its CPU time"),
              "one remedy: the report's try line and the summary's remedy are the same, for host code without a GPU");
    }
    free(text);
    cJSON_Delete(j);
}

/* A kind is decided by what a step runs, never by its length: validation
   steps right at 3x the median (some above, some below) are all of one
   kind, run after run; a stall in a typical step (no other range) is still
   an outlier by its time, and its extra time is where it was. */
static void scenario_kinds_stable(void) {
    cJSON *j, *k, *o, *x;
    int i;
    session_begin(NULL);
    for (i = 0; i <= 60; i++) {
        { PROF_RANGE("data"); vnow_tls += 1000; }
        { PROF_RANGE("forward"); vnow_tls += 2000; }
        { PROF_RANGE("backward"); vnow_tls += i == 33 ? 103000 : 3000; }
        if (i % 10 == 0) { PROF_RANGE("val"); vnow_tls += (i / 10) % 2 ? 11900 : 12100; }   /* steps of 2.98x and 3.02x */
        PROF_STEP();
    }
    j = session_end("kinds_stable.json");
    k = cJSON_GetArrayItem(cJSON_GetObjectItem(verdict(j), "step_kinds"), 0);
    CHECK_EQ_U(jnum(k, "count"), 6, "stable: all 6 validation steps are one kind, below and above 3x the median alike");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(verdict(j), "step_kinds")) == 1, "stable: one kind set apart");
    o = cJSON_GetObjectItem(verdict(j), "outlier_steps");
    CHECK_EQ_U(jnum(o, "count"), 1, "stable: the stall is an outlier by its time");
    x = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "steps"), 0);
    CHECK(x && x->valuedouble == 33, "stable: the outlier is step 33");
    x = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "extra"), 0);
    CHECK(x && strcmp(cJSON_GetObjectItem(x, "name")->valuestring, "backward") == 0 && jnum(x, "ns") >= 100000 && jnum(x, "ns") < 100010,
          "stable: the stall's extra 100 us is in backward");
    CHECK(jnum(phase_named(j, "backward"), "cpu_ns") >= 3000 && jnum(phase_named(j, "backward"), "cpu_ns") < 3005,
          "stable: backward in a typical step is 3 us, the stall apart");
    cJSON_Delete(j);
}

/* Ten phases, and every 20th step also samples: none of the sampling
   steps' time stays in the typical figures, however many ranges they run
   (each phase exactly 1 us per typical step; shares add up to at most 100%). */
static void scenario_exact_typical(void) {
    static const char *const names[10] = { "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9" };
    cJSON *j, *p;
    double sum = 0;
    int i, n, exact = 1;
    session_begin(NULL);
    for (i = 0; i <= 60; i++) {
        for (n = 0; n < 10; n++) { PROF_RANGE_DYN(names[n]); vnow_tls += 1000; }
        if (i % 20 == 0) { PROF_RANGE("sample"); vnow_tls += 100000; }
        PROF_STEP();
    }
    j = session_end("exact.json");
    for (n = 0; n < 10; n++) {
        p = phase_named(j, names[n]);
        if (!p || jnum(p, "cpu_ns") < 1000 || jnum(p, "cpu_ns") > 1004) exact = 0;
    }
    CHECK(exact, "exact: each of the 10 phases is 1 us per typical step (before: the 3 smallest kept some of the sampling steps' time)");
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(verdict(j), "cpu_share_by_class")) sum += p->valuedouble;
    CHECK(sum <= 1.0 + 1e-9, "exact: the CPU shares by class add up to at most 100%");
    CHECK(shares_at_most_one(j), "exact: no share over 100%");
    cJSON_Delete(j);
}

/* A loss sampled once a step: its P50 and P95 are its real ones, not a
   histogram bucket's edge (40 samples 6.2500, 6.2501, ... in a shuffled
   order: median 6.25195, between the 20th and the 21st). A counter
   sampled more often than its 65536 kept samples: its quantiles are of
   the latest ones, and the report says so. */
static void scenario_counter_quantiles(void) {
    cJSON *j, *c;
    char *text;
    int i;
    session_begin(NULL);
    for (i = 0; i < 40; i++) {
        { PROF_RANGE("train"); vnow_tls += 1000; }
        PROF_COUNTER("loss", 6.25 + 0.0001 * (double)((i * 7) % 40));   /* 7 is prime to 40: each value once */
        PROF_STEP();
    }
    for (i = 0; i < 70000; i++) PROF_COUNTER("tokens", (double)i);
    j = session_end("quantiles.json");
    c = summary_find(j, "counters", "loss");
    CHECK(c && fabs(jnum(c, "p50") - 6.25195) < 1e-9, "quantiles: the loss median is exactly 6.25195 (the mean of its two middle samples)");
    CHECK(c && fabs(jnum(c, "p95") - (6.25 + 0.0001 * 37.05)) < 1e-9, "quantiles: its p95 is 6.253705, between its 38th and 39th samples");
    CHECK_EQ_U(jnum(c, "quantiles_of"), 40, "quantiles: of all 40 samples");
    c = summary_find(j, "counters", "tokens");
    CHECK(c && jnum(c, "p50") == 4464 + 32767.5, "quantiles: a counter of 70000 samples: the median of its last 65536 (4464 .. 69999)");
    CHECK_EQ_U(jnum(c, "quantiles_of"), 65536, "quantiles: of the last 65536");
    text = check_slurp("quantiles.json.report.txt");
    CHECK(text && strstr(text, "      6.252 ") && strstr(text, "(P50, P95: of the last 65536)") &&
          strstr(text, "   P50 and P95 are exact, of all samples (where not marked otherwise)\n"), "quantiles: the report shows them and says what they are of");
    free(text);
    cJSON_Delete(j);
}

/* The run over time: a loop whose data loading slows down from 1 us to
   3 us over 400 steps drifts, and the report says so, naming "data"; a
   steady loop (the same work, 2% of jitter) gets no such line. 5000 steps
   fill the series past its 2048 points: neighbours merge, 4 steps a point. */
static void scenario_drift(void) {
    cJSON *j, *o, *d, *pts, *p;
    char *text;
    int i, sum = 0;
    unsigned r = 1;
    session_begin(NULL);
    for (i = 0; i <= 400; i++) {
        { PROF_RANGE("data"); vnow_tls += 1000 + (uint64_t)(5 * i); }
        { PROF_RANGE("forward"); vnow_tls += 2000; }
        { PROF_RANGE("backward"); vnow_tls += 3000; }
        PROF_STEP();
    }
    j = session_end("drift.json");
    d = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "over_time"), "drift");
    CHECK(d && cJSON_IsTrue(cJSON_GetObjectItem(d, "drifted")), "drift: a loop whose data loading slows down has drifted");
    CHECK(d && jnum(d, "change") > 0.25 && jnum(d, "change") < 0.40, "drift: by about a third (6.1 us to 8.1 us)");
    CHECK(d && cJSON_IsString(cJSON_GetObjectItem(d, "range")) && strcmp(cJSON_GetObjectItem(d, "range")->valuestring, "data") == 0 &&
          jnum(d, "range_change_ns") > 1700 && jnum(d, "range_change_ns") < 2100, "drift: most of it in data (+1.8 us)");
    text = check_slurp("drift.json.report.txt");
    CHECK(text && strstr(text, "   over the run: ") && strstr(text, "   step time rose 29% over the run: median 6.15 us in the first tenth, 7.91 us in the last") && strstr(text, "over the run: median 6.") &&
          strstr(text, "; most of it in \"data\" (+1.7"), "drift: the report draws the run and says where the step time went");
    free(text);
    cJSON_Delete(j);
    session_begin(NULL);
    for (i = 0; i <= 400; i++) {
        r = r * 1103515245u + 12345u;
        { PROF_RANGE("data"); vnow_tls += 1000 + (r >> 16) % 120; }      /* up to 2% of the step */
        { PROF_RANGE("forward"); vnow_tls += 2000; }
        { PROF_RANGE("backward"); vnow_tls += 3000; }
        PROF_STEP();
    }
    j = session_end("steady.json");
    d = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "over_time"), "drift");
    CHECK(d && cJSON_IsFalse(cJSON_GetObjectItem(d, "drifted")), "steady: a steady loop with jitter has not drifted");
    text = check_slurp("steady.json.report.txt");
    CHECK(text && strstr(text, "   over the run: ") && !strstr(text, "   step time rose") && !strstr(text, "   step time fell"), "steady: no drift line");
    free(text);
    cJSON_Delete(j);
    session_begin(NULL);
    for (i = 0; i <= 5000; i++) { { PROF_RANGE("work"); vnow_tls += 1000; } PROF_STEP(); }
    j = session_end("long.json");
    o = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "over_time");
    pts = cJSON_GetObjectItem(o, "points");
    cJSON_ArrayForEach(p, pts) sum += cJSON_GetArrayItem(p, 1)->valueint;
    CHECK_EQ_U(jnum(o, "steps_per_point"), 4, "long: 5000 steps in at most 2048 points: 4 steps a point");
    CHECK(cJSON_GetArraySize(pts) <= 2048 && sum == 5000, "long: every step is in one point");
    cJSON_Delete(j);
    /* two steps 10^9 times the others at the end (a hang, a suspended laptop): their column,
       far above the drawing's scale, is drawn at the top (it was drawn at the bottom: the
       height, ~10^10 levels, overflowed an int) */
    session_begin(NULL);
    for (i = 0; i <= 120; i++) { { PROF_RANGE("work"); vnow_tls += i > 118 ? 1000000000000ull : 1000; } PROF_STEP(); }
    j = session_end("hang.json");
    text = check_slurp("hang.json.report.txt");
    CHECK(text && strstr(text, "\xe2\x96\x85\xe2\x96\x88  step time, 120 steps in 60 columns"),
          "hang: the column of the two long steps is drawn at the top, the steady one before it in the middle");
    free(text);
    cJSON_Delete(j);
}

/* The drift on llm.c's loop shape (issue 41): a validation step every 10
   (3x a training step) and sampling every 20 (30x), and the first five
   steps three times as long (start-up: allocation, caches) -- steady otherwise,
   no drift line; with the data loading slowing down, a drift line of the
   typical steps, naming "data". */
static void llmc_loop(int drifting) {
    int i;
    for (i = 0; i <= 80; i++) {
        uint64_t slow = i < 5 ? 3 : 1;
        if (i % 10 == 0) { PROF_RANGE("val"); vnow_tls += 12000; }
        if (i > 0 && i % 20 == 0) { PROF_RANGE("sample"); vnow_tls += 150000; }
        { PROF_RANGE("data"); vnow_tls += slow * (500 + (drifting ? (uint64_t)(40 * i) : 0)); }
        { PROF_RANGE("forward"); vnow_tls += slow * 1500; }
        { PROF_RANGE("backward"); vnow_tls += slow * 3000; }
        PROF_STEP();
    }
}
static void scenario_llmc_drift(void) {
    cJSON *j, *d;
    char *text;
    session_begin(NULL);
    llmc_loop(0);
    j = session_end("llmc_steady.json");
    d = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "over_time"), "drift");
    CHECK(d && cJSON_IsFalse(cJSON_GetObjectItem(d, "drifted")), "llm.c shape, steady: no drift (validation and sampling steps, a start-up transient)");
    CHECK(d && jnum(d, "typical_steps") == 72 && jnum(d, "start_steps_left_out") == 2, "llm.c shape: 72 typical steps of 80 compared, the first 2 left out");
    text = check_slurp("llmc_steady.json.report.txt");
    CHECK(text && !strstr(text, "   step time rose") && !strstr(text, "   step time fell"), "llm.c shape, steady: no drift line");
    free(text);
    cJSON_Delete(j);
    session_begin(NULL);
    llmc_loop(1);
    j = session_end("llmc_drift.json");
    d = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "over_time"), "drift");
    CHECK(d && cJSON_IsTrue(cJSON_GetObjectItem(d, "drifted")) && !strcmp(cJSON_GetObjectItem(d, "range")->valuestring, "data"),
          "llm.c shape, data slowing down: drifted, in data");
    text = check_slurp("llmc_drift.json.report.txt");
    CHECK(text && strstr(text, "   step time rose ") && strstr(text, " over the run (its typical steps: 72 of 80): median "), "llm.c shape: the drift line says it compares the typical steps");
    if (text && strstr(text, "   step time rose")) { const char *p = strstr(text, "   step time rose"); printf("%.*s\n", (int)(strchr(p, '\n') - p), p); }
    free(text);
    cJSON_Delete(j);
}

/* Slow-step capture (GPUPROF_CAPTURE_SLOW=5, GPUPROF_CAPTURE_MAX=3): four
   steps stall 100 us in backward among steps of 6 us; the first three are
   captured, each to a file of its own holding that step and the one before
   (and little else), listed in the report and the summary; the fourth is
   over the cap. */
static void scenario_capture(int streamed) {
    cJSON *j, *caps, *c, *tr, *e;
    char *text, file[64];
    int i, k, ok = 1;
    gpuprof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.capture_slow = 5;
    cfg.capture_max = 3;
    cfg.summary_path = streamed ? "capture_s.json" : "capture.json";   /* at exit: after the captures are written */
    cfg.report = streamed ? "capture_s.json.report.txt" : "capture.json.report.txt";
    cfg.trace_path = streamed ? "stream.json" : NULL;   /* streamed: its written events are kept for the captures */
    gpuprof_init(&cfg);
    for (i = 0; i <= 60; i++) {
        { PROF_RANGE("data"); vnow_tls += 1000; }
        { PROF_RANGE("forward"); vnow_tls += 2000; }
        { PROF_RANGE("backward"); vnow_tls += i == 20 || i == 35 || i == 50 || i == 55 ? 103000 : 3000; }
        PROF_STEP();
    }
    gpuprof_shutdown();
    j = summary_load(cfg.summary_path);
    caps = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "captures");
    CHECK_EQ_U(cJSON_GetArraySize(caps), 3, "capture: three slow steps captured, the cap (GPUPROF_CAPTURE_MAX=3) honoured");
    for (k = 0; k < 3; k++) {
        static const int want[3] = { 20, 35, 50 };
        int backward = 0, data = 0;
        c = cJSON_GetArrayItem(caps, k);
        if (streamed) snprintf(file, sizeof file, "stream.slow.%d.json", k + 1);
        else snprintf(file, sizeof file, "gpuprof.%d.slow.%d.json", (int)getpid(), k + 1);
        if (!c || jnum(c, "step") != want[k] || !cJSON_IsTrue(cJSON_GetObjectItem(c, "written")) ||
            strcmp(cJSON_GetObjectItem(c, "file")->valuestring, file) != 0 || !(jnum(c, "times_median") > 17)) { ok = 0; continue; }
        text = check_slurp(file);
        tr = text ? cJSON_Parse(text) : NULL;
        free(text);
        cJSON_ArrayForEach(e, trace_events(tr)) {
            cJSON *name = cJSON_GetObjectItem(e, "name");
            if (!cJSON_IsString(name)) continue;
            if (strcmp(name->valuestring, "backward") == 0 && jnum(e, "dur") >= 103.0) backward++;
            if (strcmp(name->valuestring, "data") == 0) data++;
        }
        if (!tr || backward != 1 || data < 2 || data > 3) ok = 0;
        cJSON_Delete(tr);
    }
    CHECK(ok, streamed ? "capture, streamed trace: steps 20, 35, 50 in files beside the trace, each holding its step and the one before"
                       : "capture: steps 20, 35 and 50, each in its own file holding that step's 103 us backward and the step before (2-3 data ranges)");
    if (streamed) {   /* the stream itself is whole: every range once, its formatting untouched by the captures */
        int n = 0;
        text = check_slurp("stream.json");
        tr = text ? cJSON_Parse(text) : NULL;
        free(text);
        cJSON_ArrayForEach(e, trace_events(tr)) {
            cJSON *name = cJSON_GetObjectItem(e, "name");
            if (cJSON_IsString(name) && strcmp(name->valuestring, "backward") == 0) n++;
        }
        CHECK(tr && n == 61, "capture, streamed trace: the trace parses and holds each of the 61 backward ranges once");
        cJSON_Delete(tr);
    }
    text = check_slurp(cfg.report);
    if (streamed) snprintf(file, sizeof file, "-> stream.slow.3.json\n");
    else snprintf(file, sizeof file, "-> gpuprof.%d.slow.3.json\n", (int)getpid());
    CHECK(text && strstr(text, "   slow step 20 captured (a step of the most common kind): 106 us, ") && strstr(text, file) && !strstr(text, "slow step 55"),
          "capture: the report lists each capture with its file");
    free(text);
    cJSON_Delete(j);
}

/* Gradient accumulation, GPUPROF_STEP per micro-batch: an optimizer step
   every 4th step is a quarter of the steps, part of the typical step (its
   cost shared by all); every 10th is rare, a kind of its own. */
static void scenario_accumulation(void) {
    cJSON *j, *p;
    int i, every;
    for (every = 4; every <= 10; every += 6) {
        session_begin(NULL);
        for (i = 0; i <= 80; i++) {
            { PROF_RANGE("forward"); vnow_tls += 2000; }
            { PROF_RANGE("backward"); vnow_tls += 3000; }
            if (i % every == every - 1) { PROF_RANGE("optimizer"); vnow_tls += 8000; }
            PROF_STEP();
        }
        j = session_end(every == 4 ? "accum4.json" : "accum10.json");
        p = phase_named(j, "optimizer");
        if (every == 4) {
            CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(verdict(j), "step_kinds")) == 0, "accumulation, every 4th: no kind set apart");
            CHECK(p && jnum(p, "cpu_ns") >= 2000 && jnum(p, "cpu_ns") < 2005, "accumulation, every 4th: the optimizer is 8 us / 4 per step");
        } else {
            CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(verdict(j), "step_kinds")) == 1, "accumulation, every 10th: the optimizer steps are a kind");
            CHECK(p == NULL, "accumulation, every 10th: the optimizer is no phase of the typical step");
        }
        cJSON_Delete(j);
    }
}

/* llm.c-like, all at once: GPUPROF_STEP at the top of each iteration, two
   worker threads (OpenMP's) with their matmul tiles beside the step, and an
   evaluation every 20 steps. */
static void scenario_llmc_like(void) {
    static const side_job tiles = { "matmul_forward.tile", 80, 1500 };
    pthread_t w[2];
    cJSON *j, *o;
    int i;
    session_begin(NULL);
    for (i = 0; i < 2; i++) pthread_create(&w[i], NULL, side_thread, (void *)&tiles);
    for (i = 0; i <= 60; i++) {
        PROF_STEP();
        { PROF_RANGE("forward"); vnow_tls += 2000; }
        { PROF_RANGE("backward"); vnow_tls += 3000; }
        { PROF_RANGE("update"); vnow_tls += 500; }
        if (i > 0 && i % 20 == 0) { PROF_RANGE("val"); vnow_tls += 100000; }
    }
    for (i = 0; i < 2; i++) pthread_join(w[i], NULL);
    j = session_end("llmc.json");
    CHECK(strcmp(bottleneck_name(j), "backward") == 0, "llm.c-like: the bottleneck is backward");
    CHECK(phase_named(j, "matmul_forward.tile") == NULL && summary_find(verdict(j), "other_threads", "matmul_forward.tile"),
          "llm.c-like: the workers' tiles are listed beside the step, not as a phase");
    o = cJSON_GetArrayItem(cJSON_GetObjectItem(verdict(j), "step_kinds"), 0);
    CHECK_EQ_U(jnum(o, "count"), 2, "llm.c-like: the two steps with an evaluation inside the windows are a kind of their own");
    CHECK(jnum(verdict(j), "step_ns") > 5500 && jnum(verdict(j), "step_ns") < 5520, "llm.c-like: the typical step is 5.5 us");
    CHECK(shares_at_most_one(j), "llm.c-like: no share over 100%");
    cJSON_Delete(j);
}

/* Data-parallel training: backward holds an all-reduce that waits 6 us of
   its 7 for the other ranks. The phase is comm-bound, decided by the
   collective, and the bottleneck's remedy is to find the straggler; a range
   named in GPUPROF_COMM_RANGES counts as communication too, and a phase
   with a short all-reduce keeps its own class. */
static void scenario_collectives(void) {
    cJSON *j, *p;
    int i;
    setenv("GPUPROF_COMM_RANGES", "halo_exchange", 1);
    session_begin(NULL);
    for (i = 0; i < 11; i++) {
        { PROF_RANGE("data"); vnow_tls += 1000; }
        { PROF_RANGE("forward"); vnow_tls += 2000; { PROF_RANGE("allreduce.small"); vnow_tls += 100; } }
        { PROF_RANGE("backward"); vnow_tls += 1000; { PROF_RANGE("allreduce"); vnow_tls += 6000; } }
        { PROF_RANGE("halo_exchange"); vnow_tls += 500; }
        PROF_STEP();
    }
    j = session_end("collectives.json");
    unsetenv("GPUPROF_COMM_RANGES");
    p = phase_named(j, "backward");
    CHECK(p && strcmp(cJSON_GetObjectItem(p, "class")->valuestring, "comm-bound") == 0, "collectives: backward, mostly its all-reduce, is comm-bound");
    CHECK(strcmp(bottleneck_name(j), "backward") == 0, "collectives: backward is the bottleneck");
    p = phase_named(j, "halo_exchange");
    CHECK(p && strcmp(cJSON_GetObjectItem(p, "class")->valuestring, "comm-bound") == 0, "collectives: a range named in GPUPROF_COMM_RANGES is comm-bound");
    p = phase_named(j, "forward");
    CHECK(p && strcmp(cJSON_GetObjectItem(p, "class")->valuestring, "CPU-bound") == 0, "collectives: forward, with a short all-reduce inside, keeps its class");
    CHECK(strcmp(cJSON_GetObjectItem(verdict(j), "class")->valuestring, "comm-bound") == 0, "collectives: the step is comm-bound");
    p = phase_named(j, "backward");
    CHECK(p && strstr(cJSON_GetObjectItem(p, "why")->valuestring, "of its CPU time in collectives, most in \"allreduce\": waiting for the other ranks") &&
          strcmp(cJSON_GetObjectItem(p, "decided_by")->valuestring, "allreduce") == 0, "collectives: the summary says why, decided by the all-reduce");
    {
        char *report = check_slurp("collectives.json.report.txt");
        CHECK(report && strstr(report, "try: a collective waits for the slowest rank: compare the ranks"), "collectives: the report says what to try");
        free(report);
    }
    cJSON_Delete(j);
}

int main(void) {
    scenario_step_first();
    scenario_background_thread();
    scenario_step_container();
    scenario_nested_work();
    scenario_warmup_boundary();
    scenario_setup_teardown();
    scenario_step_kinds();
    scenario_kinds_stable();
    scenario_exact_typical();
    scenario_accumulation();
    scenario_counter_quantiles();
    scenario_drift();
    scenario_llmc_drift();
    scenario_capture(0);
    scenario_capture(1);
    scenario_llmc_like();
    scenario_collectives();
    return check_done("test_verdict");
}
