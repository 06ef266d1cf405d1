/* Nothing gpuprof does hangs, kills or corrupts the program it profiles,
   round two (SPEC 11 and 16a, issue 56): a SIGTERM handler that calls
   exit(), a debug file that is a FIFO, a file-size limit, busy threads
   among many idle ones, planted links and /dev/stdout at output paths.
   Each case runs this program again as a child (tests/child.h) with the
   case's environment; the child ends with its own exit status, its outputs
   valid, at most one `gpuprof:` line.
   Usage: test_hostile LIBSAMPLE_DBG */
#define _GNU_SOURCE                   /* dladdr, pthread_sigqueue */
#include "gpuprof.h"
#include "json_util.h"
#include "child.h"
#include <pthread.h>
#include <dlfcn.h>
#include <sys/resource.h>

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
        double after = 0.15 + (rand() % 1000) / 1000.0 * 0.35;
        child_result r;
        int whole;
        remove("term.json");
        r = run_child_signal(i < 30 ? "term_loop" : "term_reporter", env, 15, SIGTERM, after);
        ended += r.rc != -1;
        hung += r.rc == -1;
        own += r.rc == OWN_STATUS;
        if (summary_valid("term.json", &whole)) { valid++; complete += whole; }
        quiet += gpuprof_lines(r.err) <= 1;
        if (r.wall - after > worst) worst = r.wall - after;
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

int main(int argc, char **argv) {
    child_self = argv[0];
    if (argc == 3 && !strcmp(argv[1], "child")) {
        const char *m = argv[2];
        return !strcmp(m, "term_loop") ? child_term_loop() : !strcmp(m, "term_reporter") ? child_term_reporter() :
               !strcmp(m, "term_in_report") ? child_term_in_report() : !strcmp(m, "fifo_debuglink") ? child_fifo_debuglink() : 2;
    }
    if (argc < 2) { fprintf(stderr, "usage: test_hostile LIBSAMPLE_DBG\n"); return 2; }
    sample_dbg = argv[1];
    case_sigterm_random();
    case_sigterm_in_report();
    case_fifo_debuglink();
    return check_done("test_hostile");
}
