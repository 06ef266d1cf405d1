/* The session's lifecycle (SPEC 6, 8, 11): any thread may start it, threads
   that exist before it starts and a reporter calling in meanwhile are safe
   (this file also runs under ThreadSanitizer), a second session keeps the
   first one's files, outputs that name one file are refused, warnings start
   afresh with each session, and a forked child leaves the parent's session
   alone -- or, forked before any session, profiles itself. */
#include "gpuprof.h"
#include "impl/hooks.h"
#include "json_util.h"
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static char *err_text;
static int err_saved = -1;
static void err_begin(void) { err_saved = check_stderr_to("lifecycle.stderr"); }
static void err_end(void) {
    check_stderr_back(err_saved);
    free(err_text);
    err_text = check_slurp("lifecycle.stderr");
}
static int lines_with(const char *needle) {
    int n = 0;
    const char *p = err_text ? err_text : "";
    while ((p = strstr(p, needle)) != NULL) { n++; p++; }
    return n;
}
static cJSON *warnings(cJSON *j) { return cJSON_GetObjectItem(j, "warnings"); }

/* 1. Threads that exist before init, all starting at once; the first range
   of any of them starts the session, while a reporter thread asks for the
   report and the summary from before the start to the end. */
#define WORKERS 6
#define RANGES 2000
static int go, workers_done;
static void *worker(void *arg) {
    int i;
    (void)arg;
    while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE)) {}
    for (i = 0; i < RANGES; i++) { PROF_RANGE("work"); { PROF_RANGE("inner"); } }
    __atomic_add_fetch(&workers_done, 1, __ATOMIC_RELEASE);
    return NULL;
}
static void *reporter(void *arg) {
    FILE *sink = fopen("/dev/null", "w");
    int first = 1;
    (void)arg;
    while (__atomic_load_n(&workers_done, __ATOMIC_ACQUIRE) < WORKERS) {
        gpuprof_report(sink);
        gpuprof_write_summary("lifecycle.during.json");
        if (first) { first = 0; __atomic_store_n(&go, 1, __ATOMIC_RELEASE); }   /* its first call came before init */
    }
    gpuprof_write_summary("lifecycle.during.json");   /* at least one while the session runs, however fast the workers were */
    fclose(sink);
    return NULL;
}
static void test_threads_before_init(void) {
    pthread_t w[WORKERS], r;
    int i;
    cJSON *j, *during;
    char *text;
    err_begin();
    for (i = 0; i < WORKERS; i++) pthread_create(&w[i], NULL, worker, NULL);
    pthread_create(&r, NULL, reporter, NULL);
    for (i = 0; i < WORKERS; i++) pthread_join(w[i], NULL);
    pthread_join(r, NULL);
    CHECK(gpuprof_write_summary("lifecycle.first.json") == 0, "the session auto-initialised by a worker's first range is running");
    gpuprof_shutdown();
    err_end();
    j = summary_load("lifecycle.first.json");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "work"), "count"), WORKERS * RANGES, "every range of every thread counted, whichever started the session");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "inner"), "count"), WORKERS * RANGES, "and every nested one");
    CHECK(jnum(warnings(j), "before_init") >= 2, "the reporter's calls before init are counted as such");
    CHECK_EQ_U(jnum(warnings(j), "after_shutdown"), 0, "not as calls after shutdown");
    CHECK(lines_with("gpuprof_report() before anything was recorded does nothing") == 1, "one line says the report came before anything was recorded");
    CHECK(lines_with("after gpuprof_shutdown()") == 0, "no line speaks of a shutdown that never happened");
    text = check_slurp("lifecycle.during.json");
    during = text ? cJSON_Parse(text) : NULL;
    CHECK(during != NULL, "the summaries written while the workers ran parse");
    cJSON_Delete(during);
    free(text);
    cJSON_Delete(j);
}

/* 2. A second session with the same output paths keeps the first one's
   files; warnings print and count afresh in each session. */
static void session_with_misuse(const char *summary, const char *trace) {
    gpuprof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    cfg.summary_path = summary;
    cfg.trace_path = trace;
    gpuprof_init(&cfg);
    { PROF_RANGE("step"); }
    PROF_END();                                  /* END without BEGIN, once per session */
    gpuprof_shutdown();
}
static void test_second_session(void) {
    cJSON *a, *b;
    err_begin();
    session_with_misuse("life.summary.json", "life.trace.json");
    session_with_misuse("life.summary.json", "life.trace.json");
    err_end();
    a = summary_load("life.summary.json");
    b = summary_load("life.summary.2.json");
    CHECK(a && b, "the first session's summary is kept; the second goes to life.summary.2.json");
    CHECK(access("life.trace.2.json", F_OK) == 0, "and its trace to life.trace.2.json");
    CHECK(lines_with("'life.summary.json' holds the summary of an earlier session of this process; this session's goes to 'life.summary.2.json'") == 1,
          "one line says where the second session's summary goes");
    CHECK(lines_with("'life.trace.json' holds the trace of an earlier session") == 1, "and one where its trace goes");
    CHECK_EQ_U(jnum(warnings(a), "end_without_begin"), 1, "session 1: END without BEGIN counted once");
    CHECK_EQ_U(jnum(warnings(b), "end_without_begin"), 1, "session 2: counted once again (counters start afresh)");
    CHECK(lines_with("GPUPROF_END() with no open range") == 2, "and the line printed again in the second session");
    cJSON_Delete(a);
    cJSON_Delete(b);
    remove("life.summary.json");                 /* gone: a third session may write there again */
    session_with_misuse("life.summary.json", NULL);
    a = summary_load("life.summary.json");
    CHECK(a != NULL, "a file the user removed meanwhile is simply written again");
    cJSON_Delete(a);
}

/* 3. Outputs that name one file: refused with one line, nothing overwritten. */
static void test_same_file(void) {
    gpuprof_config cfg;
    cJSON *t;
    char *text;
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = "same.json";
    cfg.summary_path = "same.json";
    cfg.report = "same.json";
    err_begin();
    gpuprof_init(&cfg);
    { PROF_RANGE("step"); }
    CHECK(gpuprof_write_summary("same.json") != 0, "write_summary to the file the trace streams to: refused");
    gpuprof_shutdown();
    err_end();
    text = check_slurp("same.json");
    t = text ? cJSON_Parse(text) : NULL;
    CHECK(t && cJSON_IsArray(t) && cJSON_GetArraySize(t) > 2, "the file holds the trace, whole");
    CHECK(lines_with("the trace and the summary name the same file 'same.json'") == 1, "one line refuses the summary");
    CHECK(lines_with("the report names the same file as the trace ('same.json'); the report goes to stderr instead") == 1,
          "one line sends the report to stderr");
    CHECK(lines_with("that is the file the trace is written to") == 1, "one line refuses write_summary onto the trace");
    CHECK(lines_with("Ranges by total time") == 1, "the report came out on stderr");
    cJSON_Delete(t);
    free(text);
}

/* 4. fork() while a session runs: the child records nothing, calls no
   gpuprof output, and an explicit init there says why it does nothing. */
static void test_fork_running(void) {
    gpuprof_config cfg;
    int pid, status;
    cJSON *j;
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    cfg.summary_path = "fork.parent.json";
    gpuprof_init(&cfg);
    { PROF_RANGE("parent"); }
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int bad = 0, i;
        gpuprof_config c2;
        err_begin();
        PROF_STEP();                                   /* once turned recording back on */
        for (i = 0; i < 10; i++) { PROF_RANGE("child"); }
        if (impl_live()) bad |= 1;
        memset(&c2, 0, sizeof c2);
        c2.summary_path = "fork.child.json";
        c2.report = "off";
        if (gpuprof_init(&c2) == 0) bad |= 2;
        gpuprof_shutdown();
        err_end();
        if (!err_text || !strstr(err_text, "gpuprof_init() in a process forked while its parent was profiling")) bad |= 4;
        if (access("fork.child.json", F_OK) == 0) bad |= 8;
        _exit(bad);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status), "the child exits normally");
    CHECK(!(WEXITSTATUS(status) & 1), "in the child, GPUPROF_STEP does not turn recording back on");
    CHECK(!(WEXITSTATUS(status) & 2), "gpuprof_init in the child returns non-zero");
    CHECK(!(WEXITSTATUS(status) & 4), "and says why in one line");
    CHECK(!(WEXITSTATUS(status) & 8), "the child writes no file");
    { PROF_RANGE("parent"); }
    gpuprof_shutdown();
    j = summary_load("fork.parent.json");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "parent"), "count"), 2, "the parent's session goes on, exact");
    CHECK(summary_find(j, "ranges", "child") == NULL, "with nothing of the child's");
    cJSON_Delete(j);
}

/* 5. fork() with no session running: the child profiles itself, with its
   own files (%p). */
static void test_fork_idle(void) {
    int pid, status;
    char path[64];
    cJSON *j;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        gpuprof_config cfg;
        int i;
        memset(&cfg, 0, sizeof cfg);
        cfg.report = "off";
        cfg.summary_path = "fork.%p.json";
        if (gpuprof_init(&cfg) != 0) _exit(1);
        for (i = 0; i < 7; i++) { PROF_RANGE("child work"); }
        gpuprof_shutdown();
        _exit(0);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a child forked between sessions starts its own");
    snprintf(path, sizeof path, "fork.%d.json", pid);
    j = summary_load(path);
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "child work"), "count"), 7, "its summary, named by its pid, has its ranges");
    cJSON_Delete(j);
}

/* 0. GPUPROF_STEP as the very first call, on the real clock (the TSC): the
   first step is measured on the session's clock, not from a time read
   before the session (and its clock) started. In a child, before this
   process has any session. */
static void test_step_first(void) {
    int pid, status, i;
    cJSON *j, *time;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        setenv("GPUPROF_SUMMARY", "step_first.json", 1);
        setenv("GPUPROF_REPORT", "off", 1);
        for (i = 0; i < 20; i++) {
            PROF_STEP();
            { PROF_RANGE("forward"); }
        }
        gpuprof_shutdown();
        _exit(0);
    }
    waitpid(pid, &status, 0);
    j = summary_load("step_first.json");
    time = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "steps"), "time");
    CHECK_EQ_U(jnum(time, "count"), 19, "GPUPROF_STEP first: 19 steps timed between 20 calls");
    CHECK(jnum(time, "max_ns") < 1e8, "GPUPROF_STEP first: no step of hundreds of seconds in a run of microseconds");
    cJSON_Delete(j);
}

/* Whether the stepping thread waited for the other threads, on the real
   clock: in one session each step waits for a worker's 2 ms of work (joins
   it); in the other a worker's 0.2 ms runs beside a step that computes 2 ms. */
static void spin_cpu_ms(double ms) {
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) * 1e-6 < ms);
}
static void *step_worker(void *arg) {
    { PROF_RANGE("worker.chunk"); spin_cpu_ms(*(const double *)arg); }
    return NULL;
}
static double blocked_share(int wait_for_worker, const char *file) {
    gpuprof_config cfg;
    cJSON *j;
    double b, p;
    int i;
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    gpuprof_init(&cfg);
    for (i = 0; i < 12; i++) {
        static const double long_chunk = 2.0, short_chunk = 0.2;
        pthread_t th;
        pthread_create(&th, NULL, step_worker, (void *)(wait_for_worker ? &long_chunk : &short_chunk));
        if (wait_for_worker) { PROF_RANGE("wait"); pthread_join(th, NULL); }
        else { { PROF_RANGE("compute"); spin_cpu_ms(2.0); } pthread_join(th, NULL); }
        PROF_STEP();
    }
    gpuprof_write_summary(file);
    gpuprof_shutdown();
    j = summary_load(file);
    b = jnum(cJSON_GetObjectItem(j, "verdict"), "stepper_blocked_share");
    /* off the CPU while runnable is preemption by other load, not the step's
       own waiting: left out where the kernel says how much it was (schedstat) */
    p = jnum(cJSON_GetObjectItem(j, "verdict"), "stepper_preempted_share");
    if (p == p && p >= 0) b -= p;
    cJSON_Delete(j);
    return b;
}
static void test_stepper_waits(void) {
    double waits = blocked_share(1, "waits.json"), busy = 1.0;
    int k;
    /* Preemption by other load also takes a thread off the CPU, and only ever
       adds to the share: blocked_share leaves out what schedstat counts of it,
       and the least of the runs is the step's own figure (up to nine on a
       loaded machine, until one shows it). */
    for (k = 0; k < 9 && (k < 3 || busy >= waits - 0.3); k++) { double x = blocked_share(0, "busy.json"); if (x < busy) busy = x; }
    CHECK(waits > 0.6, "a step that joins its worker: the stepping thread is off the CPU most of it (it waited)");
    CHECK(busy < waits - 0.3, "a step that computes beside its worker: the stepping thread is much less off the CPU");
    printf("stepping thread off the CPU: %.0f%% when waiting for the worker, %.0f%% when computing beside it\n", 100 * waits, 100 * busy);
}

/* The stepping thread alone, sleeping 2 ms of each step in a read (I/O):
   the report says it waited, though no other thread recorded a range. */
static void test_stepper_waits_alone(void) {
    gpuprof_config cfg;
    char *text;
    FILE *f;
    int i;
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    gpuprof_init(&cfg);
    for (i = 0; i < 12; i++) {
        { PROF_RANGE("read"); usleep(2000); }
        { PROF_RANGE("compute"); spin_cpu_ms(0.2); }
        PROF_STEP();
    }
    f = fopen("alone.report.txt", "w");
    gpuprof_report(f);
    fclose(f);
    gpuprof_shutdown();
    text = check_slurp("alone.report.txt");
    /* the line ends on the wait where it outweighs the time the thread sat runnable after each sleep
       (its run delay); on a loaded machine (ThreadSanitizer's run beside the suite) the delay can be
       larger, and the line then says the machine is loaded: either way the waiting share is said */
    CHECK(text && strstr(text, "   the stepping thread was off the CPU ") && strstr(text, "% of its steps: waiting ") &&
          strstr(text, "(I/O, sleep, a lock or a blocking sync; ") &&
          (strstr(text, " -- that wait is part of the step's time\n") || strstr(text, " -- the machine is loaded: the step times include")),
          "a stepping thread that sleeps in its steps, alone: the report says it waited");
    free(text);
}

/* Checkpoints (GPUPROF_SUMMARY_EVERY): a run killed by SIGKILL after its
   first checkpoints leaves a valid summary, "complete": false, whose counts
   are those of the run up to that checkpoint; a run that ends writes the
   complete one over them. */
static void test_checkpoints(void) {
    pid_t pid;
    int status, n = -1, i;
    cJSON *j, *w;
    double steps, calls;
    setenv("GPUPROF_SUMMARY", "ckpt.json", 1);
    setenv("GPUPROF_SUMMARY_EVERY", "0.05", 1);
    setenv("GPUPROF_REPORT", "off", 1);
    pid = fork();
    if (pid == 0) {
        gpuprof_init(NULL);                          /* after this process's earlier sessions: explicitly */
        for (;;) {                                   /* until killed */
            { PROF_RANGE("work"); spin_cpu_ms(0.5); }
            PROF_STEP();
        }
    }
    for (i = 0; i < 500 && n < 3; i++) {             /* up to 5 s for three checkpoints */
        usleep(10000);
        if ((j = summary_load("ckpt.json")) != NULL) { n = (int)jnum(j, "checkpoint"); cJSON_Delete(j); }
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "checkpoints: the run was killed by SIGKILL");
    CHECK(n >= 3, "checkpoints: three checkpoints written within 5 s, every 50 ms");
    j = summary_load("ckpt.json");
    CHECK(j && cJSON_IsFalse(cJSON_GetObjectItem(j, "complete")), "checkpoints: the killed run's summary parses and says it is not complete");
    CHECK(j && jnum(j, "checkpoint") >= 3, "checkpoints: it is the last checkpoint written");
    steps = j ? jnum(cJSON_GetObjectItem(j, "steps"), "counted") : 0;
    w = j ? summary_find(j, "ranges", "work") : NULL;
    calls = w ? jnum(w, "count") : 0;
    CHECK(steps >= 10 && calls >= steps && calls <= steps + 2,
          "checkpoints: its counts are the run's up to the checkpoint (a work call per step, the step's and the one begun before the first)");
    cJSON_Delete(j);
    /* a run that ends: the summary at exit is complete */
    setenv("GPUPROF_SUMMARY", "ckpt_done.json", 1);
    pid = fork();
    if (pid == 0) {
        gpuprof_init(NULL);
        for (i = 0; i < 200; i++) { { PROF_RANGE("work"); spin_cpu_ms(0.5); } PROF_STEP(); }
        gpuprof_shutdown();
        _exit(0);
    }
    waitpid(pid, &status, 0);
    j = summary_load("ckpt_done.json");
    CHECK(j && cJSON_IsTrue(cJSON_GetObjectItem(j, "complete")) && cJSON_IsNull(cJSON_GetObjectItem(j, "checkpoint")),
          "checkpoints: the summary written at the end says complete, and is no checkpoint");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(j, "steps"), "counted"), 199, "checkpoints: the complete summary has all 199 steps");
    {
        char tmp[64];
        snprintf(tmp, sizeof tmp, "ckpt_done.json.%d.tmp", (int)pid);    /* the temporary file is named by its writer's pid */
        CHECK(access(tmp, F_OK) != 0, "checkpoints: no temporary file is left behind");
    }
    cJSON_Delete(j);
    unsetenv("GPUPROF_SUMMARY");
    unsetenv("GPUPROF_SUMMARY_EVERY");
    unsetenv("GPUPROF_REPORT");
}

/* 6. Sessions shut down and started again, 24 times, by the main thread
   while a pool of threads records run-time and literal names: each thread
   moves to the new session; every session's trace is whole and names only
   what was recorded (an id of one session's name table formatted with the
   next one's crashed the writer: found by fuzz_api). */
#define POOL 3
#define RESTARTS 24
static int pool_stop;
static void *pool_worker(void *arg) {
    unsigned i = 0;
    char name[8];
    (void)arg;
    while (!__atomic_load_n(&pool_stop, __ATOMIC_ACQUIRE)) {
        snprintf(name, sizeof name, "dyn%u", i++ % 8);
        { PROF_RANGE_DYN(name); { PROF_RANGE("lit"); } }
        if (i % 16 == 0) { GPUPROF_BEGIN("explicit"); GPUPROF_END(); }
    }
    return NULL;
}
static void test_restart_under_pool(void) {
    gpuprof_config cfg;
    pthread_t th[POOL];
    int i, r, whole = 0, foreign = 0, events = 0;
    char path[64];
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = "restart.trace.json";
    cfg.report = "off";
    for (r = 1; r <= RESTARTS; r++) {
        snprintf(path, sizeof path, r == 1 ? "restart.trace.json" : "restart.trace.%d.json", r);
        remove(path);
    }
    err_begin();
    gpuprof_init(&cfg);
    for (i = 0; i < POOL; i++) pthread_create(&th[i], NULL, pool_worker, NULL);
    for (r = 1; r < RESTARTS; r++) {
        struct timespec ts = { 0, 1000000 + 250000 * (r % 4) };
        nanosleep(&ts, NULL);
        gpuprof_shutdown();
        gpuprof_init(&cfg);
    }
    __atomic_store_n(&pool_stop, 1, __ATOMIC_RELEASE);
    for (i = 0; i < POOL; i++) pthread_join(th[i], NULL);
    gpuprof_shutdown();
    err_end();
    for (r = 1; r <= RESTARTS; r++) {
        cJSON *j, *e;
        snprintf(path, sizeof path, r == 1 ? "restart.trace.json" : "restart.trace.%d.json", r);
        if (!(j = summary_load(path))) continue;
        whole++;
        cJSON_ArrayForEach(e, trace_events(j)) {
            cJSON *ph = cJSON_GetObjectItem(e, "ph"), *nm = cJSON_GetObjectItem(e, "name");
            if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0) continue;
            events++;
            if (!cJSON_IsString(nm) || !(strncmp(nm->valuestring, "dyn", 3) == 0 || strcmp(nm->valuestring, "lit") == 0 ||
                                         strcmp(nm->valuestring, "explicit") == 0)) foreign++;
        }
        cJSON_Delete(j);
        remove(path);
    }
    printf("%d sessions under a pool of %d threads: %d traces whole, %d ranges, %d with a name not recorded\n", RESTARTS, POOL, whole, events, foreign);
    CHECK_EQ_U(whole, RESTARTS, "sessions restarted under recording threads: every session's trace parses");
    CHECK(events > 0, "and holds the pool's ranges");
    CHECK_EQ_U(foreign, 0, "each range named as recorded");
}

int main(void) {
    test_step_first();
    test_threads_before_init();
    test_second_session();
    test_same_file();
    test_fork_running();
    test_fork_idle();
    test_stepper_waits();
    test_stepper_waits_alone();
    test_checkpoints();
    test_restart_under_pool();
    free(err_text);
    return check_done("test_lifecycle");
}
