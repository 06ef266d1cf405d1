/* Nothing gpuprof does hangs, kills or corrupts the program it profiles,
   round two (SPEC 11 and 16a, issue 56): a SIGTERM handler that calls
   exit(), a debug file that is a FIFO, a file-size limit, busy threads
   among many idle ones, planted links and /dev/stdout at output paths.
   Each case runs this program again as a child (tests/child.h) with the
   case's environment; the child ends with its own exit status, its outputs
   valid, at most one `gpuprof:` line.
   Usage: test_hostile LIBSAMPLE_DBG LIBCOPY_LIB */
#define _GNU_SOURCE                   /* dladdr, pthread_sigqueue */
#include "gpuprof.h"
#include "json_util.h"
#include "child.h"
#include <pthread.h>
#include <dlfcn.h>
#include <sys/resource.h>
#include <dirent.h>

#define OWN_STATUS 21
static const char *sample_dbg;

static __thread volatile double sink;
static void work_ms(double ms) {
    double until = now_s() + ms / 1e3, x = 1;
    while (now_s() < until) { int i; for (i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9; }
    sink = x;
}

/* ---- the children ---- */

/* The training script's SIGTERM handler (SLURM, Kubernetes): save, exit. */
static void on_term(int sig) { (void)sig; exit(OWN_STATUS); }
static void term_handler(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
}

/* A loop of 1 ms steps until the signal comes. */
static volatile int never;
static int child_term_loop(void) {
    term_handler();
    while (!never) {
        { PROF_RANGE("data"); work_ms(0.2); }
        { PROF_RANGE("forward"); work_ms(0.5); }
        { PROF_RANGE("backward"); work_ms(0.3); }
        PROF_STEP();
    }
    return 3;
}

/* Reports asked for again and again on a thread of the program's. */
static void *reporter(void *arg) {
    (void)arg;
    while (!never) {
        FILE *f = fopen("mid.txt", "w");
        gpuprof_report(f ? f : stderr);
        if (f) fclose(f);
    }
    return NULL;
}
static int child_term_reporter(void) {
    pthread_t th;
    term_handler();
    { PROF_RANGE("warm"); work_ms(1); }
    if (pthread_create(&th, NULL, reporter, NULL) != 0) return 2;
    return child_term_loop();
}

/* The signal sent to the reporting thread itself, which spends most of its
   time inside gpuprof making a report (with its lock held): exit() runs
   there. */
static int child_term_in_report(void) {
    pthread_t th;
    int i;
    term_handler();
    { PROF_RANGE("warm"); work_ms(1); }
    if (pthread_create(&th, NULL, reporter, NULL) != 0) return 2;
    for (i = 0; i < 300; i++) {
        { PROF_RANGE("forward"); work_ms(1); }
        PROF_STEP();
    }
    pthread_kill(th, SIGTERM);
    while (!never) { PROF_RANGE("after"); work_ms(1); }
    return 3;
}

/* A stripped library whose .gnu_debuglink names a FIFO beside it (no
   process writes it): sampled in a range while checkpoints come every 50
   ms; the loop's steps go on. */
static int child_fifo_debuglink(void) {
    void *lib = dlopen("./libsample_dbg.so", RTLD_NOW | RTLD_LOCAL);
    uint64_t (*fn)(uint64_t) = NULL;
    double t0 = now_s(), worst = 0, last;
    int steps = 0;
    if (!lib || !(*(void **)&fn = dlsym(lib, "sample_lib_stripped"))) return 2;
    last = now_s();
    while (now_s() - t0 < 1.0) {
        { PROF_RANGE("lib"); sink += (double)fn(2000000ull); }
        PROF_STEP();
        if (now_s() - last > worst) worst = now_s() - last;
        last = now_s();
        steps++;
    }
    fprintf(stderr, "child: %d steps, the longest %.3f s\n", steps, worst);
    return worst < 0.5 ? OWN_STATUS : 3;
}

/* Steps of 20 ranges for secs seconds. */
static void ranged_steps(double secs) {
    double t0 = now_s();
    while (now_s() - t0 < secs) {
        int i;
        for (i = 0; i < 20; i++) {
            char name[32];
            snprintf(name, sizeof name, "phase_%02d", i);
            { GPUPROF_RANGE_DYN(name); work_ms(0.02); }
        }
        PROF_STEP();
    }
}

/* A file-size limit of 16 KiB (ulimit -f 16), set by the program itself:
   its summary, made at exit on its own thread, outgrows it. */
static int child_fsize(void) {
    struct rlimit rl = { 16 << 10, 16 << 10 };
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 2;
    ranged_steps(0.6);
    return OWN_STATUS;
}

static int child_plain(void) {
    ranged_steps(0.2);
    return OWN_STATUS;
}

/* stdout redirected to a file by the program (as a shell's > does), the
   summary to /dev/stdout. */
static int child_stdout_file(void) {
    if (!freopen("stdout.txt", "w", stdout)) return 2;
    printf("the program's own output\n");
    ranged_steps(0.2);
    printf("the program's last line\n");
    return OWN_STATUS;
}

/* ---- threads that record no range: a pool of sleepers, a few busy ---- */
static int pool_stop;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cond = PTHREAD_COND_INITIALIZER;
static void *sleeper(void *arg) {
    (void)arg;
    pthread_mutex_lock(&pool_mu);
    while (!pool_stop) pthread_cond_wait(&pool_cond, &pool_mu);
    pthread_mutex_unlock(&pool_mu);
    return NULL;
}
static void *spinner(void *arg) {
    double until = now_s() + *(const double *)arg, x = 1;
    while (now_s() < until) { int i; for (i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9; }
    sink = x;
    return NULL;
}
/* n sleeping threads (small stacks); 0 when all started. */
static int sleepers(pthread_t *th, int n) {
    pthread_attr_t a;
    int i;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    for (i = 0; i < n; i++) if (pthread_create(&th[i], &a, sleeper, NULL) != 0) return -1;
    pthread_attr_destroy(&a);
    return 0;
}
static void sleepers_join(pthread_t *th, int n) {
    int i;
    pthread_mutex_lock(&pool_mu);
    pool_stop = 1;
    pthread_cond_broadcast(&pool_cond);
    pthread_mutex_unlock(&pool_mu);
    for (i = 0; i < n; i++) pthread_join(th[i], NULL);
}

/* 800 sleeping threads, then 64 busy ones for 1.5 s, while the stepping
   thread waits in range "pool". */
static int child_busy_pool(void) {
    static pthread_t idle[800], busy[64];
    double secs = 1.5;
    int i;
    { PROF_RANGE("start"); work_ms(1); }
    PROF_STEP();                                  /* the stepping thread: the threads without ranges work for its range */
    if (sleepers(idle, 800) != 0) return 2;
    usleep(300000);                               /* the keeper has looked at them */
    {
        PROF_RANGE("pool");
        for (i = 0; i < 64; i++) if (pthread_create(&busy[i], NULL, spinner, &secs) != 0) return 2;
        for (i = 0; i < 64; i++) pthread_join(busy[i], NULL);
    }
    PROF_STEP();
    sleepers_join(idle, 800);
    return OWN_STATUS;
}

/* The process's CPU time, in seconds. */
static double process_cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* 1000 sleeping threads for 3 s, the stepping thread asleep too: what the
   process spends is the keeper's. */
static int child_idle_pool(void) {
    static pthread_t idle[1000];
    double c0, c1, t0;
    { PROF_RANGE("start"); work_ms(1); }
    if (sleepers(idle, 1000) != 0) return 2;
    usleep(2000000);                              /* past the sampler's first 2 s, when the keeper looks five times as often */
    c0 = process_cpu_s();
    t0 = now_s();
    { PROF_RANGE("idle"); usleep(3000000); }
    c1 = process_cpu_s();
    fprintf(stderr, "child: %.1f%% of a core over %.2f s\n", 100 * (c1 - c0) / (now_s() - t0), now_s() - t0);
    sleepers_join(idle, 1000);
    return OWN_STATUS;
}

/* No timer can be made (RLIMIT_SIGPENDING of 0: ulimit -i 0), then 100
   threads that record ranges, sampled. */
static void *ranged_task(void *arg) { (void)arg; { PROF_RANGE("task"); work_ms(2); } return NULL; }
static int child_no_timers(void) {
    struct rlimit rl = { 0, 0 };
    pthread_t th[100];
    int i;
    struct sigevent ev;
    timer_t probe;
    if (setrlimit(RLIMIT_SIGPENDING, &rl) != 0) return 2;
    memset(&ev, 0, sizeof ev);                    /* does this kernel count a timer against the limit? (6.13 and on may not) */
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGURG;
    if (timer_create(CLOCK_MONOTONIC, &ev, &probe) == 0) { timer_delete(probe); return 77; }
    { PROF_RANGE("main"); work_ms(5); }
    PROF_STEP();
    for (i = 0; i < 100; i++) if (pthread_create(&th[i], NULL, ranged_task, NULL) != 0) return 2;
    for (i = 0; i < 100; i++) pthread_join(th[i], NULL);
    PROF_STEP();
    return OWN_STATUS;
}

/* ---- the sampler's signal blocked, or read by the program ---- */
static __attribute__((noinline)) void spin_cpu(double secs) {
    struct timespec t;
    double until, x = 1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    until = (double)t.tv_sec + t.tv_nsec / 1e9 + secs;
    for (;;) {
        int i;
        for (i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        if ((double)t.tv_sec + t.tv_nsec / 1e9 >= until) break;
    }
    sink = x;
}
static void *blocked_worker(void *arg) { (void)arg; { PROF_RANGE("work"); spin_cpu(0.3); } return NULL; }

/* Every signal blocked before anything (a program that takes its signals
   with sigwait on one thread), then 4 threads of ranges. */
static int child_all_blocked(void) {
    sigset_t all;
    pthread_t th[4];
    int i;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (i = 0; i < 4; i++) pthread_create(&th[i], NULL, blocked_worker, NULL);
    for (i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (i = 0; i < 4; i++) {
        { PROF_RANGE("step_work"); spin_cpu(0.05); }
        PROF_STEP();
    }
    return OWN_STATUS;
}

/* The program's own SIGPROF ticks (setitimer, 100 Hz of CPU), read through
   a signalfd from its first range on: it counts them over 1.5 s of CPU. */
#include <sys/signalfd.h>
#include <sys/time.h>
static int child_signalfd(void) {
    sigset_t prof;
    struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
    struct signalfd_siginfo si;
    long ticks = 0, late = 0;
    int fd;
    { PROF_RANGE("before"); spin_cpu(0.2); }
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &prof, NULL);
    if ((fd = signalfd(-1, &prof, SFD_NONBLOCK)) < 0) return 2;
    setitimer(ITIMER_PROF, &it, NULL);
    {
        PROF_RANGE("after");
        int k;
        for (k = 0; k < 150; k++) {
            spin_cpu(0.01);
            while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) { ticks++; late += k >= 50; }
        }
    }
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_PROF, &it, NULL);
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) ticks++;
    /* gpuprof's timer is stopped within ~0.1-0.3 s of CPU: the last second's ticks are the program's own (100 Hz: 100),
       where gpuprof's would add 250 (a 250 Hz kernel tick) to 1000 */
    fprintf(stderr, "child: the program read %ld SIGPROF ticks of its own timer over 1.5 s of CPU (100 Hz: 150), %ld in the last 1 s (100)\n", ticks, late);
    return late <= 140 ? OWN_STATUS : 3;
}

/* An atexit handler the program registered before gpuprof's (so it runs
   after gpuprof's own) that starts gpuprof again. */
static void late_init(void) {
    gpuprof_init(NULL);
    { PROF_RANGE("late"); work_ms(1); }
}
static int child_late_init(void) {
    atexit(late_init);
    ranged_steps(0.1);
    return OWN_STATUS;
}

/* The process's address space now, in bytes (/proc/self/statm). */
static unsigned long long vm_bytes(void) {
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) { if (fscanf(f, "%lu", &pages) != 1) pages = 0; fclose(f); }
    return (unsigned long long)pages * (unsigned long long)sysconf(_SC_PAGESIZE);
}

/* An address-space limit of 300 MiB over what the program has, then 150
   MiB of its own, allocated and touched after gpuprof started. */
static int child_as_limit(void) {
    struct rlimit rl;
    char *big;
    rl.rlim_cur = rl.rlim_max = (rlim_t)(vm_bytes() + (300ull << 20));
    if (setrlimit(RLIMIT_AS, &rl) != 0) return 2;
    ranged_steps(0.2);
    if (!(big = (char *)malloc(150u << 20))) { fprintf(stderr, "child: the program's 150 MiB were refused\n"); return 3; }
    memset(big, 1, 150u << 20);
    free(big);
    return OWN_STATUS;
}

/* ---- two copies of the implementation: this program's, and copy_lib's ---- */
static const char *copy_lib;

/* The library loaded, 0.3 s of CPU in its range, unloaded; 1 when done. */
static int copy_lib_run(void) {
    void *lib = dlopen(getenv("COPY_LIB"), RTLD_NOW | RTLD_LOCAL);
    double (*work)(double) = NULL;
    if (!lib || !(*(void **)&work = dlsym(lib, "copy_lib_work"))) { fprintf(stderr, "child: %s\n", dlerror()); return 0; }
    sink += work(0.3);
    dlclose(lib);
    return 1;
}

/* The program's own ranges before and after the library's. */
static int child_copies(void) {
    { PROF_RANGE("exe_before"); spin_cpu(0.1); }
    if (!copy_lib_run()) return 2;
    { PROF_RANGE("exe_after"); spin_cpu(0.3); }
    return OWN_STATUS;
}

/* A program whose only copy is the library's (the mark this program's own
   copy set is taken away first): once it is unloaded, no handler of its
   for the sampler's signal and no thread of its is left. */
static int child_copy_only(void) {
    struct sigaction sa;
    DIR *d;
    struct dirent *e;
    int threads = 0;
    unsetenv("GPUPROF_MAIN_COPY");
    if (!copy_lib_run()) return 2;
    sigaction(SIGPROF, NULL, &sa);
    if ((d = opendir("/proc/self/task")) != NULL) {
        while ((e = readdir(d)) != NULL) threads += e->d_name[0] != '.';
        closedir(d);
    }
    fprintf(stderr, "child: after dlclose, SIGPROF's handler is %s; %d thread%s\n", sa.sa_handler == SIG_DFL ? "the default" : "set",
            threads, threads == 1 ? "" : "s");
    return sa.sa_handler == SIG_DFL && !(sa.sa_flags & SA_SIGINFO) && threads == 1 ? OWN_STATUS : 3;
}

/* ---- the parent ---- */

/* The summary at path: absent, or whole JSON that says its state. */
static int summary_valid(const char *path, int *complete) {
    char *text = check_slurp(path);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    int ok = j && cJSON_GetObjectItem(j, "complete") != NULL;
    *complete = ok && cJSON_IsTrue(cJSON_GetObjectItem(j, "complete"));
    cJSON_Delete(j);
    free(text);
    return ok;
}

static int gpuprof_lines(const char *err) { return lines_with(err, ""); }

/* 45 SIGTERMs at random times: 30 into a plain loop, 15 into one with a
   reporting thread; 50 ms checkpoints. */
static void case_sigterm_random(void) {
    static const char *const env[] = { "GPUPROF_SUMMARY=term.json", "GPUPROF_SUMMARY_EVERY=0.05", "GPUPROF_REPORT=term.txt", NULL };
    int i, ended = 0, own = 0, valid = 0, quiet = 0, complete = 0, hung = 0;
    double worst = 0;
    srand(12345);
    for (i = 0; i < 45; i++) {
        double after = (rand() % 1000) / 1000.0 * 0.35;   /* after the first checkpoint: a loaded machine may start the child late */
        child_result r;
        int whole;
        remove("term.json");
        r = run_child_signal(i < 30 ? "term_loop" : "term_reporter", env, 15, SIGTERM, after, "term.json");
        ended += r.rc != -1 && r.after_signal >= 0;   /* ended by the signal, not before it */
        hung += r.rc == -1;
        own += r.rc == OWN_STATUS;
        if (summary_valid("term.json", &whole)) { valid++; complete += whole; }
        quiet += gpuprof_lines(r.err) <= 1;
        if (r.after_signal > worst) worst = r.after_signal;
        if (r.rc != OWN_STATUS || gpuprof_lines(r.err) > 1) show(i < 30 ? "SIGTERM into a loop" : "SIGTERM into a loop with a reporter", &r);
        free(r.err);
    }
    fprintf(stderr, "sigterm: 45 runs: %d ended (%d hung), %d with the program's status, %d summaries valid (%d complete), longest exit %.2f s\n",
            ended, hung, own, valid, complete, worst);
    CHECK(ended == 45, "45 SIGTERMs at random times into loops whose handler calls exit(): none hangs");
    CHECK(own == 45, "... each ends with the program's own status");
    CHECK(valid == 45, "... each leaves a valid summary (the exit's, or the last checkpoint's)");
    CHECK(quiet == 45, "... with at most one gpuprof: line");
}

static void case_sigterm_in_report(void) {
    static const char *const env[] = { "GPUPROF_SUMMARY=inrep.json", "GPUPROF_SUMMARY_EVERY=0.05", "GPUPROF_REPORT=inrep.txt", NULL };
    int i, own = 0, valid = 0, quiet = 0, whole;
    for (i = 0; i < 5; i++) {
        child_result r = run_child("term_in_report", env, 15);
        own += r.rc == OWN_STATUS;
        valid += summary_valid("inrep.json", &whole);
        quiet += gpuprof_lines(r.err) <= 1;
        if (i == 0 || r.rc != OWN_STATUS) show("SIGTERM on the thread making a report", &r);
        free(r.err);
    }
    CHECK(own == 5, "a SIGTERM handler that calls exit() on a thread inside gpuprof_report: the program ends with its own status (5 of 5)");
    CHECK(valid == 5 && quiet == 5, "... a valid summary, at most one gpuprof: line");
}

/* A copy of file src at dst; 0 when done. */
static int copy_file(const char *src, const char *dst) {
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    char buf[65536];
    size_t n;
    int ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok ? 0 : -1;
}

static void case_fifo_debuglink(void) {
    static const char *const env[] = { "GPUPROF_SAMPLE=1", "GPUPROF_SUMMARY=dbg.json", "GPUPROF_SUMMARY_EVERY=0.05", "GPUPROF_REPORT=dbg.txt", NULL };
    child_result r;
    cJSON *j, *f = NULL, *rg;
    CHECK(copy_file(sample_dbg, "libsample_dbg.so") == 0 && mkfifo("libsample_dbg.so.debug", 0644) == 0,
          "a stripped library beside a FIFO of its debug file's name");
    r = run_child("fifo_debuglink", env, 20);
    show("a .gnu_debuglink that names a FIFO", &r);
    CHECK(r.rc == OWN_STATUS, "a stripped library whose .gnu_debuglink names a FIFO: the loop never freezes (no step over 0.5 s), its own status");
    CHECK(gpuprof_lines(r.err) == 0, "... and no gpuprof: line (a debug file that is not a file is no debug file)");
    j = summary_load("dbg.json");
    cJSON_ArrayForEach(rg, cJSON_GetObjectItem(cJSON_GetObjectItem(j, "samples"), "by_range"))
        if (!strcmp(cJSON_GetObjectItem(rg, "range")->valuestring, "lib")) f = cJSON_GetArrayItem(cJSON_GetObjectItem(rg, "functions"), 0);
    CHECK(f && !strcmp(cJSON_GetObjectItem(f, "name")->valuestring, "libsample_dbg.so (no symbols)"),
          "... its samples count under the library, without symbols");
    cJSON_Delete(j);
    free(r.err);
}

/* Whether any file in the working directory ends in .tmp. */
static int tmp_left(void) {
    DIR *d = opendir(".");
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL) n += strlen(e->d_name) > 4 && !strcmp(e->d_name + strlen(e->d_name) - 4, ".tmp");
    if (d) closedir(d);
    return n;
}

static void case_fsize(void) {
    static const char *const env[] = { "GPUPROF_SUMMARY=fsize.json", "GPUPROF_REPORT=fsize.txt", "GPUPROF_TRACE=fsize.trace.json", NULL };
    child_result r = run_child("fsize", env, 30);
    int whole;
    show("a file-size limit of 16 KiB (ulimit -f)", &r);
    CHECK(r.rc == OWN_STATUS, "RLIMIT_FSIZE of 16 KiB, a summary and a trace that outgrow it: no SIGXFSZ at exit, the program ends with its own status");
    CHECK(gpuprof_lines(r.err) == 1 && lines_with(r.err, "the process's file-size limit (ulimit -f) stops gpuprof's outputs") == 1,
          "... one gpuprof: line names the limit");
    CHECK(tmp_left() == 0 && !check_slurp("fsize.json"), "... no temporary file is left, and no half summary: none (it did not fit)");
    (void)whole;
    free(r.err);
}

/* A file of text, mode 0600, and a link planted at link pointing to it. */
static void plant(const char *link, const char *victim) {
    FILE *f = fopen(victim, "w");
    if (f) { fputs("precious\n", f); fclose(f); }
    chmod(victim, 0600);
    remove(link);
    if (symlink(victim, link) != 0) perror("symlink");
}

static void case_links(void) {
    static const char *const outs[][3] = {
        { "GPUPROF_TRACE=link.trace.json", "link.trace.json", "trace" }, { "GPUPROF_REPORT=link.txt", "link.txt", "report" },
        { "GPUPROF_SUMMARY=link.json", "link.json", "summary" }, { "GPUPROF_SAMPLE_FOLDED=link.folded", "link.folded", "folded stacks" } };
    int i;
    for (i = 0; i < 4; i++) {
        const char *env[] = { outs[i][0], "GPUPROF_SAMPLE=1", i == 1 ? NULL : "GPUPROF_REPORT=off", NULL };
        char victim[64], *text, msg[160], what[200];
        struct stat st;
        child_result r;
        snprintf(victim, sizeof victim, "victim%d.txt", i);
        plant(outs[i][1], victim);
        r = run_child("plain", env, 30);
        text = check_slurp(victim);
        snprintf(msg, sizeof msg, "the %s path '%s' is a symbolic link, not a file; nothing is written there", outs[i][2], outs[i][1]);
        snprintf(what, sizeof what, "a link planted at the %s's path: its target (mode 0600) untouched, the link kept, the program's own status", outs[i][2]);
        if (r.rc != OWN_STATUS || gpuprof_lines(r.err) != 1) show("a planted link", &r);
        CHECK(r.rc == OWN_STATUS && text && !strcmp(text, "precious\n") && lstat(outs[i][1], &st) == 0 && S_ISLNK(st.st_mode), what);
        CHECK(gpuprof_lines(r.err) == 1 + (i == 1) && lines_with(r.err, msg) == 1 && (i != 1 || lines_with(r.err, "the report that could not go to 'link.txt' follows here")),
              "... one line says the link is not followed (and for the report, that it follows on stderr)");
        free(text);
        free(r.err);
    }
}

static void case_dev_stdout(void) {
    static const char *const env[] = { "GPUPROF_SUMMARY=/dev/stdout", "GPUPROF_REPORT=off", NULL };
    struct stat before, st;
    int had = lstat("/dev/stdout", &before) == 0;   /* a link to /proc/self/fd/1 on Linux */
    child_result r = run_child("stdout_file", env, 30);
    char *out = check_slurp("stdout.txt"), *brace = out ? strchr(out, '{') : NULL;
    cJSON *j = brace ? cJSON_Parse(brace) : NULL;
    show("GPUPROF_SUMMARY=/dev/stdout with stdout redirected to a file", &r);
    CHECK(r.rc == OWN_STATUS && had && lstat("/dev/stdout", &st) == 0 && st.st_ino == before.st_ino && (st.st_mode & S_IFMT) == (before.st_mode & S_IFMT),
          "GPUPROF_SUMMARY=/dev/stdout, stdout a file: /dev/stdout is written through, never replaced");
    CHECK(out && !strncmp(out, "the program's own output\nthe program's last line\n{", 50) && j && cJSON_GetObjectItem(j, "complete"),
          "... the summary follows the program's own output in its file (appended, not truncated over it)");
    CHECK(gpuprof_lines(r.err) == 0, "... and no gpuprof: line");
    cJSON_Delete(j);
    free(out);
    free(r.err);
}

static void case_newline_path(void) {
    static const char *const env[] = { "GPUPROF_REPORT=no_such_dir/a\nb.txt", NULL };
    child_result r = run_child("plain", env, 30);
    CHECK(r.rc == OWN_STATUS && gpuprof_lines(r.err) == 2 && lines_with(r.err, "cannot open 'no_such_dir/a\\nb.txt' for the report") == 1,
          "a newline in an output's path is escaped in its message: one line (then the report's own line saying it follows on stderr)");
    if (r.rc != OWN_STATUS) show("a newline in a path", &r);
    free(r.err);
}

static void case_busy_pool(void) {
    cJSON *j, *smp, *rg, *th;
    child_result r = run_sampled("busy_pool", "64 busy threads started after 800 sleeping ones", NULL, &j, &smp, NULL);
    double pool = 0, foreign = 0;
    cJSON_ArrayForEach(rg, cJSON_GetObjectItem(smp, "by_range"))
        if (!strcmp(cJSON_GetObjectItem(rg, "range")->valuestring, "pool")) pool = jnum(rg, "samples");
    cJSON_ArrayForEach(th, cJSON_GetObjectItem(smp, "threads"))
        if (cJSON_IsFalse(cJSON_GetObjectItem(th, "records_ranges"))) foreign += jnum(th, "samples");
    fprintf(stderr, "pool: %.0f samples in \"pool\", %.0f from threads without ranges, of %.0f taken; %.2f of %.2f CPU seconds unsampled\n", pool, foreign,
            jnum(smp, "taken"), jnum(smp, "unsampled_cpu_s"), jnum(smp, "process_cpu_s"));
    CHECK(r.rc == OWN_STATUS && gpuprof_lines(r.err) == 0, "64 busy threads after 800 sleeping ones, sampled: the program's own status, no gpuprof: line");
    /* 64 threads share 2 CPUs for 1.5 s: about 3 CPU-seconds, 750 ticks at 250 Hz on an idle machine; each is
       found within 0.1-0.2 s. On a loaded one they get less CPU (115 samples in one CI run): what is checked is
       that their CPU time was under a timer and their samples are in the stepping thread's range */
    CHECK(foreign >= 50 && pool >= 0.9 * foreign && jnum(smp, "unsampled_cpu_s") <= 0.6 * jnum(smp, "process_cpu_s"),
          "... the busy threads are sampled (their CPU time under a timer, bar the keeper's delay in finding them; their samples in the range the stepping thread waits in)");
    cJSON_Delete(j);
    free(r.err);
}

static void case_idle_pool(void) {
    cJSON *j, *smp;
    child_result r = run_sampled("idle_pool", "1000 sleeping threads, sampled", NULL, &j, &smp, NULL);
    const char *at = strstr(r.err, "child: ");
    double pct = at ? atof(at + 7) : 100;
    CHECK(r.rc == OWN_STATUS && pct < 2.0, "1000 sleeping threads without ranges, sampling on: the process spends under 2% of a core while they sleep (the keeper reads no file per thread)");
    cJSON_Delete(j);
    free(r.err);
}

static void case_no_timers(void) {
    cJSON *j, *smp;
    char *report;
    child_result r = run_sampled("no_timers", "no timer can be made (ulimit -i 0), 101 threads with ranges", NULL, &j, &smp, &report);
    if (r.rc == 77) {                             /* this kernel makes timers whatever the limit: nothing to test */
        fprintf(stderr, "no_timers: left out: this kernel makes a timer under RLIMIT_SIGPENDING 0\n");
        cJSON_Delete(j);
        free(report);
        free(r.err);
        return;
    }
    CHECK(r.rc == OWN_STATUS && gpuprof_lines(r.err) == 1 && lines_with(r.err, "CPU samples: a thread's CPU timer cannot be made (timer_create: ") == 1,
          "timers that cannot be made (ulimit -i 0): one line for all 101 threads, the program's own status");
    /* 101 threads record ranges; the keeper may have tried one of them (busy before its first range) as a thread without ranges */
    CHECK(jnum(smp, "threads_without_timer") >= 101 && jnum(smp, "threads_without_timer") <= 102 && cJSON_GetArraySize(cJSON_GetObjectItem(smp, "threads")) == 0,
          "... the summary counts the 101 threads left unsampled and lists none as sampled");
    CHECK(report && strstr(report, "0 threads sampled, 0 recording no range; 0 taken, 0 lost, 10") && strstr(report, " threads not sampled (no timer could be made)"),
          "... and the report's header says so");
    cJSON_Delete(j);
    free(report);
    free(r.err);
}

static void case_all_blocked(void) {
    cJSON *j, *smp;
    char *report;
    child_result r = run_sampled("all_blocked", "every signal blocked before the threads start, sampled", NULL, &j, &smp, &report);
    CHECK(r.rc == OWN_STATUS && gpuprof_lines(r.err) == 1 && lines_with(r.err, "CPU samples: the program blocks signal 27 (SIGPROF) in some threads") == 1,
          "every signal blocked by the program: one line says the sampler's is, the program's own status");
    CHECK(jnum(smp, "threads_signal_blocked") == 5 && jnum(smp, "taken") == 0, "... the summary counts the 5 threads left unsampled");
    CHECK(report && !strstr(report, "shorter than a tick") && strstr(report, "(no CPU samples in it: the program blocks or reads the sampler's signal in some threads"),
          "... and the verdict does not call the phase shorter than a tick");
    cJSON_Delete(j);
    free(report);
    free(r.err);
}

static void case_signalfd(void) {
    cJSON *j, *smp;
    child_result r = run_sampled("signalfd", "the program reads SIGPROF through a signalfd after its first range", NULL, &j, &smp, NULL);
    CHECK(r.rc == OWN_STATUS, "a program that reads SIGPROF through a signalfd: gpuprof's timer stops, its last second's ticks are its own timer's (100, not 350 or more)");
    CHECK(gpuprof_lines(r.err) == 1 && lines_with(r.err, "or reads it itself (sigwait, signalfd)") == 1, "... and one line says why that thread is not sampled");
    cJSON_Delete(j);
    free(r.err);
}

static void case_late_init(void) {
    static const char *const env[] = { "GPUPROF_TRACE=late.trace.json", "GPUPROF_REPORT=off", NULL };
    child_result r = run_child("late_init", env, 30);
    char *trace = check_slurp("late.trace.json");
    cJSON *j = trace ? cJSON_Parse(trace) : NULL;
    struct stat st;
    show("gpuprof_init from an atexit handler that runs after gpuprof's", &r);
    CHECK(r.rc == OWN_STATUS && gpuprof_lines(r.err) == 1 &&
          lines_with(r.err, "gpuprof_init() while the program exits (an atexit handler or a destructor run after gpuprof's) starts nothing") == 1,
          "gpuprof_init from an atexit handler run after gpuprof's: one line, the program's own status");
    CHECK(j && stat("late.trace.2.json", &st) != 0, "... the session's trace stays valid, and no second trace is begun");
    cJSON_Delete(j);
    free(trace);
    free(r.err);
}

static void case_as_limit(void) {
    static const char *const env[] = { "GPUPROF_SUMMARY=as.json", "GPUPROF_SAMPLE=1", "GPUPROF_TRACE=as.trace.json", "GPUPROF_REPORT=off", NULL };
    child_result r = run_child("as_limit", env, 30);
    int whole;
    show("an address-space limit 300 MiB over the program's", &r);
    CHECK(r.rc == OWN_STATUS, "RLIMIT_AS 300 MiB over the program's, every output on: the program's own 150 MiB are not refused because of gpuprof");
    CHECK(gpuprof_lines(r.err) == 1 && lines_with(r.err, "the address-space limit (ulimit -v) leaves this process") == 1,
          "... and one line says what gpuprof takes of the room the limit leaves");
    CHECK(summary_valid("as.json", &whole) && whole, "... its summary written");
    free(r.err);
}

/* Whether summary path holds a range named name. */
static int summary_has_range(const char *path, const char *name) {
    char *text = check_slurp(path), needle[96];
    int has;
    snprintf(needle, sizeof needle, "\"name\":\"%s\"", name);
    has = text && strstr(text, needle) != NULL;
    free(text);
    return has;
}

static void case_copies(void) {
    char lib[600];
    const char *env[] = { "GPUPROF_SAMPLE=1", "GPUPROF_SUMMARY=copies.json", "GPUPROF_REPORT=off", lib, NULL };
    child_result r;
    snprintf(lib, sizeof lib, "COPY_LIB=%s", copy_lib);
    r = run_child("copies", env, 30);
    show("a library with a copy of the implementation of its own, loaded by a program with one", &r);
    CHECK(r.rc == OWN_STATUS && gpuprof_lines(r.err) == 1 &&
          lines_with(r.err, "a second copy of gpuprof's implementation runs in this process (in libcopy_lib; the main program has the first): its ranges go to files of their own, named with '.libcopy_lib' ('copies.libcopy_lib.json')") == 1,
          "two copies of the implementation (the program's, a library's): one line, the program's own status");
    CHECK(summary_has_range("copies.libcopy_lib.json", "lib_work") && summary_has_range("copies.json", "exe_after") && !summary_has_range("copies.json", "lib_work"),
          "... the library's ranges are in files of its own, the program's in its");
    free(r.err);
}

static void case_copy_only(void) {
    char lib[600];
    const char *env[] = { "GPUPROF_SAMPLE=1", "GPUPROF_SUMMARY=only.json", "GPUPROF_REPORT=off", lib, NULL };
    child_result r;
    cJSON *j;
    snprintf(lib, sizeof lib, "COPY_LIB=%s", copy_lib);
    r = run_child("copy_only", env, 30);
    show("the only copy in a library, sampled, then unloaded", &r);
    CHECK(r.rc == OWN_STATUS && gpuprof_lines(r.err) == 0,
          "a library's copy of gpuprof, sampling, unloaded: it leaves no handler for SIGPROF and no thread behind");
    j = summary_load("only.json");
    CHECK(j && summary_has_range("only.json", "lib_work") && jnum(cJSON_GetObjectItem(j, "samples"), "taken") > 0,
          "... and wrote its summary, with samples, as it was unloaded");
    cJSON_Delete(j);
    free(r.err);
}

int main(int argc, char **argv) {
    static const child_mode modes[] = {
        CHILD_MODE(term_loop), CHILD_MODE(term_reporter), CHILD_MODE(term_in_report), CHILD_MODE(fifo_debuglink), CHILD_MODE(fsize),
        CHILD_MODE(plain), CHILD_MODE(stdout_file), CHILD_MODE(busy_pool), CHILD_MODE(idle_pool), CHILD_MODE(no_timers),
        CHILD_MODE(all_blocked), CHILD_MODE(signalfd), CHILD_MODE(late_init), CHILD_MODE(as_limit), CHILD_MODE(copies), CHILD_MODE(copy_only) };
    int status;
    if (child_dispatch(argc, argv, modes, sizeof modes / sizeof modes[0], &status)) return status;
    if (argc < 3) { fprintf(stderr, "usage: test_hostile LIBSAMPLE_DBG LIBCOPY_LIB\n"); return 2; }
    sample_dbg = argv[1];
    copy_lib = argv[2];
    case_sigterm_random();
    case_sigterm_in_report();
    case_fifo_debuglink();
    case_fsize();
    case_links();
    case_dev_stdout();
    case_newline_path();
    case_busy_pool();
    case_idle_pool();
    case_no_timers();
    case_all_blocked();
    case_signalfd();
    case_late_init();
    case_as_limit();
    case_copies();
    case_copy_only();
    return check_done("test_hostile");
}
