/* Faults from outside (SPEC 11; docs/faults.md): allocation failure at
   every allocation gpuprof makes, in turn; the output directory removed
   mid-run; no file descriptors left; fork() mid-run. Each runs in a child
   process: it must finish normally, say what happened in a gpuprof: line,
   and keep what was recorded before the fault. */
#define _GNU_SOURCE                      /* stdlib.h comes before gpuprof.h here */
#include <stddef.h>
#include "count_alloc.h"                 /* alloc_count, alloc_fail_at, alloc_failed, live_blocks: the "alloc" configuration */
#include "gpuprof.h"
#include "json_util.h"
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Runs fn in a child with stderr in err_path; returns its exit status (-1: killed). */
static int in_child(void (*fn)(void), const char *err_path) {
    int status, pid;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        close(fd);
        fn();
        fflush(stderr);
        _exit(alloc_fail_at && !alloc_failed ? 10 : 0);
    }
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The workload: two threads, literal and dynamic names, counters, a step
   loop, a trace, a report and a summary. */
static void *worker(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < 300; i++) { PROF_RANGE("worker"); { PROF_RANGE("inner"); } }
    return NULL;
}
static void workload(void) {
    gpuprof_config cfg;
    pthread_t th;
    int i;
    FILE *out = fopen("/dev/null", "w");
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = "faults.trace.json";
    cfg.summary_path = "faults.summary.json";
    cfg.report = "faults.report.txt";
    cfg.warmup = 2;
    gpuprof_init(&cfg);
    pthread_create(&th, NULL, worker, NULL);
    for (i = 0; i < 50; i++) {
        char name[16];
        snprintf(name, sizeof name, "layer %d", i % 7);
        { PROF_RANGE("forward"); { PROF_RANGE_DYN(name); } }
        PROF_COUNTER("loss", 1.0 / (i + 1));
        PROF_MARK("mark");
        PROF_STEP();
        if (i == 25) { gpuprof_report(out); gpuprof_flush(); }
    }
    pthread_join(th, NULL);
    gpuprof_shutdown();
    fclose(out);
}

static void test_alloc_each(void) {
    long total, k;
    int crashed = 0, silent = 0, kept = 0, runs = 0, written = 0, missed = 0, status;
    alloc_fail_at = 0;
    alloc_count = 0;
    alloc_failed = 0;
    /* a dry run in a child counts the allocations */
    {
        int fds[2], pid;
        if (pipe(fds) != 0) return;
        pid = fork();
        if (pid == 0) {
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 2);
            workload();
            if (write(fds[1], &alloc_count, sizeof alloc_count) != (ssize_t)sizeof alloc_count) _exit(1);
            _exit(0);
        }
        if (read(fds[0], &total, sizeof total) != (ssize_t)sizeof total) total = 0;
        waitpid(pid, &status, 0);
        close(fds[0]);
        close(fds[1]);
    }
    CHECK(total > 20, "the workload allocates (dry run)");
    for (k = 1; k <= total; k++) {
        char *err;
        cJSON *j;
        alloc_fail_at = k;
        alloc_count = 0;
        remove("faults.summary.json");
        status = in_child(workload, "faults.stderr.txt");
        if (status == 10) { missed++; continue; }     /* this run made fewer allocations */
        runs++;
        if (status != 0) { crashed++; fprintf(stderr, "allocation %ld failing: child exit %d\n", k, status); continue; }
        err = check_slurp("faults.stderr.txt");
        if (!err || !strstr(err, "gpuprof: out of memory")) {
            silent++;
            fprintf(stderr, "allocation %ld failing: no message; it printed: %.300s\n", k, err ? err : "(nothing)");
        }
        j = summary_load("faults.summary.json");
        /* the main thread's 50 forward calls survive unless the failure hit them or the summary itself */
        if (j) written++;
        if (j && jnum(summary_find(j, "ranges", "forward"), "count") == 48) kept++;
        else if (getenv("FAULTS_VERBOSE")) fprintf(stderr, "allocation %ld failing: summary %s, forward %g\n", k, j ? "written" : "missing", jnum(summary_find(j, "ranges", "forward"), "count"));
        cJSON_Delete(j);
        free(err);
    }
    alloc_fail_at = 0;
    printf("allocation failure at each of %ld allocations in turn: %d runs (%d made fewer allocations), %d crashed, %d silent, "
           "%d summaries written (the others needed the failed memory), %d of them with every counted call\n",
           total, runs, missed, crashed, silent, written, kept);
    CHECK_EQ_U(crashed, 0, "no allocation failure crashes the program");
    CHECK_EQ_U(silent, 0, "every allocation failure says so (gpuprof: out of memory)");
    CHECK_EQ_U(kept, written, "what was recorded survives: every summary written has every counted forward call");
    CHECK(written >= runs / 2, "most runs still write their summary");
}

/* The output directory disappears mid-run. */
static void dir_gone(void) {
    gpuprof_config cfg;
    int i;
    mkdir("faults_dir", 0755);
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = "faults_dir/trace.json";
    cfg.summary_path = "faults_dir/summary.json";
    cfg.report = "off";
    gpuprof_init(&cfg);
    for (i = 0; i < 1000; i++) { PROF_RANGE("before"); }
    remove("faults_dir/trace.json");
    rmdir("faults_dir");
    for (i = 0; i < 1000; i++) { PROF_RANGE("after"); }
    if (gpuprof_write_summary("faults_dir/summary.json") == 0) _exit(3);
    if (gpuprof_report(stderr) != 0) _exit(4);
    gpuprof_shutdown();
}

/* No file descriptor left: the trace cannot be opened. */
static void no_fds(void) {
    gpuprof_config cfg;
    struct rlimit rl;
    int i, fd;
    /* use up every descriptor below a low limit */
    rl.rlim_cur = rl.rlim_max = 32;
    setrlimit(RLIMIT_NOFILE, &rl);
    while ((fd = open("/dev/null", O_RDONLY)) >= 0) {}
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = "faults_nofd.trace.json";
    cfg.summary_path = "faults_nofd.summary.json";
    cfg.report = "stderr";
    gpuprof_init(&cfg);
    for (i = 0; i < 1000; i++) { PROF_RANGE("work"); }
    gpuprof_shutdown();
}

/* A child forked while another thread was inside AddressSanitizer's
   allocator (clang 14's runtime takes no lock around fork) waits forever
   for the allocator in the leak check at its exit: LeakSanitizer asks this
   function first, and the forked child skips that check (what gpuprof
   allocated is counted by live_blocks instead). No effect without ASan. */
static volatile int forked_child;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return forked_child; }

/* fork() mid-run: the child records nothing and writes nothing. */
static void forked(void) {
    gpuprof_config cfg;
    int i, pid, status;
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = "faults_fork.trace.json";
    cfg.summary_path = "faults_fork.summary.json";
    cfg.report = "off";
    gpuprof_init(&cfg);
    for (i = 0; i < 500; i++) { PROF_RANGE("parent"); }
    pid = fork();
    if (pid == 0) {
        forked_child = 1;
        for (i = 0; i < 500; i++) { PROF_RANGE("child"); }
        gpuprof_write_summary("faults_fork.summary.json");     /* must not touch the parent's files */
        exit(0);                                                /* runs the atexit handlers */
    }
    for (i = 0; i < 500; i++) { PROF_RANGE("parent"); }
    waitpid(pid, &status, 0);
    for (i = 0; i < 500; i++) { PROF_RANGE("parent"); }
    gpuprof_shutdown();
}

/* A session shut down while another thread records: that thread's state and
   the session's names stay alive for it, and are freed when it exits. */
static int stop_recording;
static long busy_rounds;                    /* the busy thread's loops so far */
static void *busy(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&stop_recording, __ATOMIC_ACQUIRE)) {
        { PROF_RANGE("busy"); PROF_COUNTER("x", NAN); }
        __atomic_add_fetch(&busy_rounds, 1, __ATOMIC_ACQ_REL);
    }
    return NULL;
}
static void shutdown_while_running(void) {
    gpuprof_config cfg;
    pthread_t th;
    int round;
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    for (round = 0; round < 3; round++) {
        struct timespec ts = { 0, 20000000 };
        gpuprof_init(&cfg);
        __atomic_store_n(&stop_recording, 0, __ATOMIC_RELEASE);
        pthread_create(&th, NULL, busy, NULL);
        nanosleep(&ts, NULL);
        gpuprof_shutdown();                 /* the busy thread is inside ranges */
        nanosleep(&ts, NULL);
        __atomic_store_n(&stop_recording, 1, __ATOMIC_RELEASE);
        pthread_join(th, NULL);
    }
    printf("shutdown while a thread records, 3 rounds: %ld of gpuprof's allocations left after the threads exited\n", live_blocks);
    fflush(stdout);
    if (live_blocks != 0) _exit(5);
}

/* One thread recording on through five sessions (shut down and started
   again around it): each time it moves to the new session, its state of the
   last one and that session's names are freed -- not kept until it exits. */
static void sessions_around_a_thread(void) {
    gpuprof_config cfg;
    pthread_t th;
    long live[5];
    int round;
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    __atomic_store_n(&stop_recording, 0, __ATOMIC_RELEASE);
    for (round = 0; round < 5; round++) {
        struct timespec ts = { 0, 20000000 };
        long seen;
        gpuprof_init(&cfg);
        seen = __atomic_load_n(&busy_rounds, __ATOMIC_ACQUIRE);
        if (round == 0) pthread_create(&th, NULL, busy, NULL);
        nanosleep(&ts, NULL);
        /* The thread records in this session: a whole loop of it begun after
           the init. (A thread the scheduler kept off the CPU through the
           session would still hold its state of the session before -- and
           that table's entry in the list of old ones, one block more.) */
        while (__atomic_load_n(&busy_rounds, __ATOMIC_ACQUIRE) < seen + 2) sched_yield();
        gpuprof_shutdown();
        live[round] = __atomic_load_n(&live_blocks, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&stop_recording, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    printf("one thread through 5 sessions: gpuprof's allocations after each shutdown %ld %ld %ld %ld %ld, %ld after it exited\n",
           live[0], live[1], live[2], live[3], live[4], live_blocks);
    fflush(stdout);
    if (live[4] > live[1]) _exit(6);        /* one retired state and table at a time, not one per session */
    if (live_blocks != 0) _exit(5);
}

/* A thread that recorded in one session shuts the next one down before
   recording in it: its state of the first session goes too. */
static int stage;
static void *records_then_shuts_down(void *arg) {
    (void)arg;
    { PROF_RANGE("first session"); }
    __atomic_store_n(&stage, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&stage, __ATOMIC_ACQUIRE) != 2) {}
    gpuprof_shutdown();                     /* the second session, from a state of the first */
    return NULL;
}
static void stale_thread_shuts_down(void) {
    gpuprof_config cfg;
    pthread_t th;
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    gpuprof_init(&cfg);
    pthread_create(&th, NULL, records_then_shuts_down, NULL);
    while (__atomic_load_n(&stage, __ATOMIC_ACQUIRE) != 1) {}
    gpuprof_shutdown();                     /* the thread's state is retired: it is still running */
    gpuprof_init(&cfg);
    __atomic_store_n(&stage, 2, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    printf("a thread of session 1 shutting session 2 down: %ld of gpuprof's allocations left\n", live_blocks);
    fflush(stdout);
    if (live_blocks != 0) _exit(5);
}

int main(int argc, char **argv) {
    char *err;
    cJSON *j;
    const char *python = argc > 2 ? argv[1] : NULL, *check_trace = argc > 2 ? argv[2] : NULL;
    test_alloc_each();

    CHECK_EQ_U(in_child(dir_gone, "faults.stderr.txt"), 0, "directory removed mid-run: the program finishes");
    err = check_slurp("faults.stderr.txt");
    CHECK(err && strstr(err, "cannot open 'faults_dir/summary.json' for the summary: No such file or directory"), "it names the path and the reason");
    CHECK(err && strstr(err, "before ") && strstr(err, "after "), "and the statistics of before and after are all there (report)");
    free(err);

    CHECK_EQ_U(in_child(no_fds, "faults.stderr.txt"), 0, "no file descriptors: the program finishes");
    err = check_slurp("faults.stderr.txt");
    CHECK(err && strstr(err, "cannot open the trace file 'faults_nofd.trace.json': Too many open files"), "the trace's failure names the reason");
    CHECK(err && strstr(err, "Too many open files") && strstr(err, "work "), "the report still comes out, with the statistics");
    free(err);

    CHECK_EQ_U(in_child(shutdown_while_running, "faults.stderr.txt"), 0,
               "shutdown while another thread records: no crash, and all of gpuprof's memory freed once that thread exits");

    CHECK_EQ_U(in_child(sessions_around_a_thread, "faults.stderr.txt"), 0,
               "a thread recording through five sessions: its state of each ended session is freed when it moves on");

    CHECK_EQ_U(in_child(stale_thread_shuts_down, "faults.stderr.txt"), 0,
               "a thread with a state of an earlier session shuts the session down: that state is freed too");

    CHECK_EQ_U(in_child(forked, "faults.stderr.txt"), 0, "fork mid-run: the parent finishes");
    j = summary_load("faults_fork.summary.json");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "parent"), "count"), 1500, "the parent's statistics are exact");
    CHECK(j && summary_find(j, "ranges", "child") == NULL, "the child's ranges are not in the parent's summary");
    cJSON_Delete(j);
    if (python) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s %s faults_fork.trace.json --expect-name parent", python, check_trace);
        CHECK(system(cmd) == 0, "the parent's trace is intact");
        err = check_slurp("faults_fork.trace.json");
        CHECK(err && !strstr(err, "\"child\""), "and has nothing of the child's");
        free(err);
    }
    return check_done("test_faults");
}
