/* CPU samples per range (SPEC 16): a program whose functions split its
   CPU time in known proportions inside known ranges -- on the main thread
   "parse" (tokenize 3 parts, checksum 1, both static), "hash" (a function
   of a shared library), and on a second thread "decode" -- sampled with
   GPUPROF_SAMPLE=1, built with frame pointers. The summary, the report
   and the folded stacks must name those functions with those shares
   (within 10 points: a sampler's counts are random), the library's
   module, the callers, and agree with each other. */
#define _GNU_SOURCE
#include "gpuprof.h"
#include "check.h"
#include "json_util.h"
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

uint64_t sample_lib_hash(uint64_t n);

static __thread volatile uint64_t sink;      /* each thread its own: no race */
#define UNIT 20000000ull                   /* iterations of a part: ~20-40 ms of CPU */

/* each function's own loop: its samples are its self time. It calls
   tick() now and then, so that it is no leaf function (gcc omits the frame
   pointer of a leaf whatever the flags): its frame gives its caller. The
   library's function is a leaf: its caller comes from the stack pointer. */
__attribute__((noinline)) static void tick(uint64_t x) { sink = x; }
#define SPIN(n) do { uint64_t i_, x_ = sink; for (i_ = 0; i_ < (n); i_++) { x_ = x_ * 6364136223846793005ull + i_; if (!(i_ & 0xfffff)) tick(x_); } sink = x_; } while (0)
__attribute__((noinline)) static void tokenize(void) { SPIN(3 * UNIT); }
__attribute__((noinline)) static void checksum(void) { SPIN(1 * UNIT); }
__attribute__((noinline)) static void decode(void) { SPIN(2 * UNIT); }

static void *worker(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < 10; i++) { PROF_RANGE("decode"); decode(); }
    return NULL;
}

/* A function's self and total samples in a range of the summary (-1: absent). */
static double fn_share(cJSON *samples, const char *range, const char *fn, const char *what, const char **module) {
    cJSON *r, *f;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(samples, "by_range")) {
        if (strcmp(cJSON_GetObjectItem(r, "range")->valuestring, range)) continue;
        cJSON_ArrayForEach(f, cJSON_GetObjectItem(r, "functions")) {
            const char *name = cJSON_GetObjectItem(f, "name")->valuestring;
            if (strncmp(name, fn, strlen(fn)) || (name[strlen(fn)] && name[strlen(fn)] != '.')) continue;
            if (module) *module = cJSON_GetObjectItem(f, "module")->valuestring;
            return jnum(f, what) / jnum(r, "samples");
        }
    }
    return -1;
}

/* A program with its own SIGPROF handler keeps it: one line says why there
   are no samples, the summary's samples.error says it, the run goes on.
   In a child process (the handler is the process's). */
static int own_handler_seen;
static void own_handler(int sig) { (void)sig; own_handler_seen++; }
static int own_handler_case(void) {
    gpuprof_config cfg;
    struct sigaction sa, now;
    cJSON *sum, *smp;
    char *err;
    int ok;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = own_handler;
    sigaction(SIGPROF, &sa, NULL);
    memset(&cfg, 0, sizeof cfg);
    cfg.sample_hz = 1;
    cfg.summary_path = "own.summary.json";
    cfg.report = "off";
    fflush(stderr);
    if (!freopen("own.stderr", "w", stderr)) return 2;
    gpuprof_init(&cfg);
    { PROF_RANGE("parse"); tokenize(); }
    gpuprof_shutdown();
    raise(SIGPROF);
    sigaction(SIGPROF, NULL, &now);
    err = check_slurp("own.stderr");
    sum = summary_load("own.summary.json");
    smp = sum ? cJSON_GetObjectItem(sum, "samples") : NULL;
    ok = now.sa_handler == own_handler && own_handler_seen == 1 && err &&
         strstr(err, "gpuprof: no CPU samples: the program handles signal 27 (SIGPROF) itself: set GPUPROF_SAMPLE_SIGNAL") &&
         smp && cJSON_IsString(cJSON_GetObjectItem(smp, "error")) && jnum(smp, "taken") == 0;
    free(err);
    cJSON_Delete(sum);
    return ok ? 0 : 1;
}

int main(void) {
    gpuprof_config cfg;
    pthread_t th;
    cJSON *sum, *smp;
    char *report, *folded;
    const char *module = NULL;
    double tok, chk, lib, dec, main_total, leaf_caller;
    int i;
    {
        pid_t pid = fork();
        int st = 0;
        if (pid == 0) _exit(own_handler_case());
        waitpid(pid, &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a program's own SIGPROF handler is kept, one gpuprof: line says so, samples.error too");
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.sample_hz = 1;
    cfg.summary_path = "samples.summary.json";
    cfg.report = "samples.report.txt";
    cfg.sample_folded = "samples.folded";
    gpuprof_init(&cfg);
    pthread_create(&th, NULL, worker, NULL);
    for (i = 0; i < 10; i++) {
        { PROF_RANGE("parse"); tokenize(); checksum(); }
        { PROF_RANGE("hash"); sink += sample_lib_hash(UNIT); }   /* about half of parse: parse is the bottleneck on any CPU */
        PROF_STEP();
    }
    pthread_join(th, NULL);
    gpuprof_shutdown();

    sum = summary_load("samples.summary.json");
    CHECK(sum != NULL, "the summary parses");
    smp = sum ? cJSON_GetObjectItem(sum, "samples") : NULL;
    CHECK(smp && cJSON_IsObject(smp), "the summary has samples");
    if (!smp || !cJSON_IsObject(smp)) return check_done("test_samples");
    printf("test_samples: %s, asked %.0f Hz, got %.0f Hz; %.0f taken, %.0f lost\n", cJSON_GetObjectItem(smp, "mechanism")->valuestring,
           jnum(smp, "asked_hz"), jnum(smp, "rate_hz"), jnum(smp, "taken"), jnum(smp, "lost"));
#ifdef __SANITIZE_THREAD__
    /* ThreadSanitizer holds a signal back until its own safe points: a
       handful of samples, at no rate; here only its race checks count */
    CHECK(jnum(smp, "taken") >= 1, "samples come under ThreadSanitizer");
    cJSON_Delete(sum);
    return check_done("test_samples_tsan");
#endif
    CHECK(jnum(smp, "taken") >= 200, "at least 200 samples in ~1.6 s of CPU time");
    CHECK(jnum(smp, "lost") == 0, "none lost");
    CHECK(jnum(smp, "rate_hz") >= 50 && jnum(smp, "rate_hz") <= 1100, "the rate achieved: between the kernel's tick and the rate asked");
    tok = fn_share(smp, "parse", "tokenize", "self", NULL);
    chk = fn_share(smp, "parse", "checksum", "self", NULL);
    lib = fn_share(smp, "hash", "sample_lib_hash", "self", &module);
    dec = fn_share(smp, "decode", "decode", "self", NULL);
    main_total = fn_share(smp, "parse", "main", "total", NULL);
    leaf_caller = fn_share(smp, "hash", "main", "total", NULL);
    printf("test_samples: parse: tokenize %.1f%% checksum %.1f%%; hash: sample_lib_hash %.1f%% [%s]; decode (a thread): decode %.1f%%; "
           "stacks in parse holding main %.1f%%\n", 100 * tok, 100 * chk, 100 * lib, module ? module : "?", 100 * dec, 100 * main_total);
    CHECK(fabs(tok - 0.75) <= 0.10, "parse: tokenize (a static function) takes 3/4 of its samples, within 10 points");
    CHECK(fabs(chk - 0.25) <= 0.10, "parse: checksum takes 1/4, within 10 points");
    CHECK(lib >= 0.85, "hash: the shared library's function takes nearly all of its samples");
    CHECK(module && !strcmp(module, "libsample_lib.so"), "... named with its module, libsample_lib.so");
    CHECK(dec >= 0.85, "decode, on the second thread: decode takes nearly all of its samples");
    CHECK(main_total >= 0.9, "callers from frame pointers: main is in the stacks of parse's samples");
    CHECK(leaf_caller >= 0.9, "a leaf function without a frame of its own (the library's, built without frame pointers): "
                              "its caller, main, is in its stacks (the return address at the stack pointer)");
    report = check_slurp("samples.report.txt");
    CHECK(report && strstr(report, "CPU samples per range (a POSIX CPU-time timer per thread, signal "), "the report has the section, with the mechanism");
    CHECK(report && strstr(report, "  [libsample_lib.so]"), "the report names the library's module");
    CHECK(report && strstr(report, "try: speed up tokenize, "), "the verdict's try: names the CPU-bound phase's top function");
    folded = check_slurp("samples.folded");
    CHECK(folded && strstr(folded, "parse;") && strstr(folded, ";main;") && strstr(folded, ";tokenize "), "the folded stacks: range;outer;...;leaf count");
    {
        /* the folded file adds up to the samples kept, per range as in the summary */
        double parse_sum = 0, total = 0;
        char *line = folded;
        cJSON *r;
        while (line && *line) {
            char *nl = strchr(line, '\n'), *sp;
            if (nl) *nl = 0;
            sp = strrchr(line, ' ');
            if (sp) { total += atof(sp + 1); if (!strncmp(line, "parse;", 6)) parse_sum += atof(sp + 1); }
            line = nl ? nl + 1 : NULL;
        }
        cJSON_ArrayForEach(r, cJSON_GetObjectItem(smp, "by_range"))
            if (!strcmp(cJSON_GetObjectItem(r, "range")->valuestring, "parse")) CHECK(jnum(r, "samples") == parse_sum, "the folded file's parse lines add up to the summary's parse samples");
        CHECK(total == jnum(smp, "taken") - jnum(smp, "lost"), "the folded file holds every sample kept");
    }
    free(report);
    free(folded);
    cJSON_Delete(sum);
    return check_done("test_samples");
}
