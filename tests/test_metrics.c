/* Live metrics (SPEC 19): the Prometheus text file of GPUPROF_METRICS, on a
   virtual clock so that every figure is known, against the summary written
   from the same snapshot; its labels (rank, job, escaping); the checkpoints
   of gpuprof's thread; and the faults a user can cause (an unwritable
   directory, a full disk, a link where the file should be or planted at the
   temporary name, two processes naming one file, a reader meeting the file
   at any moment). With PROMTOOL given, each file also passes
   `promtool check metrics` with no finding.
   Usage: test_metrics [PROMTOOL] */
#define _GNU_SOURCE
#include "vclock.h"                 /* a virtual clock: every figure known (in CUDA builds the simulated GPU's) */
#include "gpuprof.h"
#include "impl/hooks.h"
#include "json_util.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MS 1000000ull
static const char *promtool;

/* The value of the series `name{...}` whose labels hold `labels` (NaN: none). */
static double prom_get(const char *text, const char *name, const char *labels) {
    const char *p = text;
    size_t n = strlen(name);
    while (p && *p) {
        const char *eol = strchr(p, '\n'), *close;
        if (!strncmp(p, name, n) && p[n] == '{' && (close = strstr(p, "} ")) != NULL && (!eol || close < eol)) {
            char line[2048];
            size_t len = (size_t)(close - p);
            if (len < sizeof line) {
                memcpy(line, p, len);
                line[len] = 0;
                if (!labels || strstr(line, labels)) return strtod(close + 2, NULL);
            }
        }
        p = eol ? eol + 1 : NULL;
    }
    return NAN;
}

static int count_lines(const char *text, const char *what) {
    int n = 0;
    const char *p = text;
    while (p && (p = strstr(p, what)) != NULL) { n++; p += strlen(what); }
    return n;
}

/* promtool check metrics < path: no finding (stdout and stderr empty, exit 0). */
static void check_promtool(const char *path, const char *what) {
    char cmd[1024], *out;
    int rc;
    if (!promtool) return;
    snprintf(cmd, sizeof cmd, "'%s' check metrics < '%s' > promtool.out 2>&1", promtool, path);
    rc = system(cmd);
    out = check_slurp("promtool.out");
    CHECK(rc == 0 && out && !out[0], what);
    if (rc != 0 || (out && out[0])) fprintf(stderr, "promtool says:\n%s\n", out ? out : "(nothing)");
    free(out);
}

static void *worker(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < 3; i++) { PROF_RANGE("data"); vsleep(1 * MS); }
    gpuprof_flush();
    return NULL;
}

/* One step: data 2 ms, forward 1 ms around matmul 3 ms, backward 4 ms; every
   fifth step an eval of 10 ms too (another kind of step). */
static void step(int i) {
    PROF_STEP();
    { PROF_RANGE("data"); vsleep(2 * MS); }
    {
        PROF_RANGE("forward");
        vsleep(1 * MS);
        { PROF_RANGE("matmul"); vsleep(3 * MS); }
#ifdef GPUPROF_CUDA
        simcuda_kernel(0, 2 * MS);    /* 2 ms of GPU work, launched at forward's end */
#endif
    }
    { PROF_RANGE("backward"); vsleep(4 * MS); }
    if (i % 5 == 4) { PROF_RANGE("eval"); vsleep(10 * MS); }
    { PROF_RANGE("say \"hi\"\\now"); vsleep(100); }
    { GPUPROF_RANGE_DYN("bad\xff"); vsleep(100); }
    GPUPROF_COUNTER("loss", 1.0 / (i + 1));
}

/* The metrics against the summary made with them. */
static void check_against(const char *m, cJSON *sum, const char *what) {
    static const char *const qn[3] = { "quantile=\"0.5\"", "quantile=\"0.9\"", "quantile=\"0.99\"" };
    static const char *const qk[3] = { "p50_ns", "p90_ns", "p99_ns" };
    cJSON *typ = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "steps"), "typical_time"), *ph;
    char msg[400], lab[320];
    int q;
    snprintf(msg, sizeof msg, "%s: gpuprof_steps_total = steps.counted", what);
    CHECK_EQ_U(prom_get(m, "gpuprof_steps_total", NULL), jnum(cJSON_GetObjectItem(sum, "steps"), "counted"), msg);
    for (q = 0; q < 3; q++) {
        snprintf(msg, sizeof msg, "%s: gpuprof_step_seconds{%s} = steps.typical_time.%s", what, qn[q], qk[q]);
        CHECK_REL(prom_get(m, "gpuprof_step_seconds", qn[q]) * 1e9, jnum(typ, qk[q]), 1e-8, msg);
    }
    snprintf(msg, sizeof msg, "%s: gpuprof_step_seconds_count = steps.typical_time.count", what);
    CHECK_EQ_U(prom_get(m, "gpuprof_step_seconds_count", NULL), jnum(typ, "count"), msg);
    snprintf(msg, sizeof msg, "%s: gpuprof_step_seconds_sum = steps.typical_time.sum_ns", what);
    CHECK_REL(prom_get(m, "gpuprof_step_seconds_sum", NULL) * 1e9, jnum(typ, "sum_ns"), 1e-8, msg);
    cJSON_ArrayForEach(ph, cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "verdict"), "phases")) {
        const char *name = cJSON_GetObjectItem(ph, "name")->valuestring;
        if (strchr(name, '"') || strchr(name, '\\') || strchr(name, '\xff')) continue;
        snprintf(lab, sizeof lab, "range=\"%s\"", name);
        snprintf(msg, sizeof msg, "%s: gpuprof_phase_share{%s} = the verdict's share", what, lab);
        CHECK_REL(prom_get(m, "gpuprof_phase_share", lab), jnum(ph, "share"), 1e-8, msg);
    }
    snprintf(msg, sizeof msg, "%s: gpuprof_range_calls_total{range=\"forward/matmul\"} = the tree's count", what);
    CHECK_EQ_U(prom_get(m, "gpuprof_range_calls_total", "range=\"forward/matmul\""), jnum(summary_path(sum, "forward/matmul"), "count"), msg);
    snprintf(msg, sizeof msg, "%s: gpuprof_range_seconds_total{range=\"backward\"} = the tree's sum_ns", what);
    CHECK_REL(prom_get(m, "gpuprof_range_seconds_total", "range=\"backward\"") * 1e9, jnum(summary_path(sum, "backward"), "sum_ns"), 1e-8, msg);
    snprintf(msg, sizeof msg, "%s: gpuprof_trace_dropped_events_total = trace.dropped", what);
    CHECK_EQ_U(prom_get(m, "gpuprof_trace_dropped_events_total", NULL), jnum(cJSON_GetObjectItem(sum, "trace"), "dropped"), msg);
}

static void scenario_values(void) {
    pthread_t t;
    cJSON *sum;
    char *m, *ck;
    struct stat st;
    int i;
    remove("v.json");
    remove("v.prom");
    setenv("GPUPROF_METRICS", "v.prom", 1);
    setenv("GPUPROF_SUMMARY", "v.json", 1);
    setenv("GPUPROF_SUMMARY_EVERY", "3600", 1);     /* the test makes the checkpoint itself */
    setenv("GPUPROF_JOB", "llm \"7b\" \\ run", 1);
    umask(077);                                      /* the file is 0644 whatever the umask */
    gpuprof_init(NULL);
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    for (i = 0; i < 10; i++) step(i);
    impl_checkpoint();
    ck = check_slurp("v.prom");
    sum = summary_load("v.json");
    CHECK(ck && sum, "a checkpoint writes the metrics and the summary");
    if (ck && sum) {
        CHECK(prom_get(ck, "gpuprof_run_complete", NULL) == 0, "checkpoint: gpuprof_run_complete 0");
        CHECK_EQ_U(prom_get(ck, "gpuprof_steps_total", NULL), 9, "checkpoint: 9 steps counted (10 marks)");
        check_against(ck, sum, "checkpoint");
        check_promtool("v.prom", "promtool check metrics: the checkpoint's file, no finding");
    }
    cJSON_Delete(sum);
    free(ck);
    for (; i < 20; i++) step(i);
    PROF_STEP();
    gpuprof_shutdown();
    m = check_slurp("v.prom");
    sum = summary_load("v.json");
    CHECK(m && sum, "at exit: the metrics and the summary");
    if (!m || !sum) { free(m); cJSON_Delete(sum); return; }
    CHECK(stat("v.prom", &st) == 0 && (st.st_mode & 0777) == 0644, "the file is 0644 (node_exporter reads it as another user), under umask 077");
    umask(022);
    CHECK(prom_get(m, "gpuprof_run_complete", NULL) == 1, "at exit: gpuprof_run_complete 1");
    CHECK_EQ_U(prom_get(m, "gpuprof_steps_total", NULL), 20, "at exit: 20 steps");
    check_against(m, sum, "at exit");
    CHECK_EQ_U(prom_get(m, "gpuprof_step_seconds_count", NULL), 16, "the typical steps: 16 (the 4 with an eval are another kind)");
    CHECK_REL(prom_get(m, "gpuprof_step_seconds", "quantile=\"0.5\""), 0.010, 0.01, "their median: 10 ms (the histogram's resolution)");
    CHECK_REL(prom_get(m, "gpuprof_step_seconds_sum", NULL), 16 * 0.010, 1e-4, "their sum: 16 x 10 ms");
    CHECK_EQ_U(prom_get(m, "gpuprof_range_calls_total", "range=\"data\""), 23, "range data: 20 calls on the stepping thread + 3 on the worker, one series");
    CHECK_REL(prom_get(m, "gpuprof_range_seconds_total", "range=\"data\""), 20 * 0.002 + 3 * 0.001, 1e-4, "range data: 43 ms");
    CHECK_EQ_U(count_lines(m, "gpuprof_range_calls_total{rank=\"0\",job=\"llm \\\"7b\\\" \\\\ run\",range=\"data\"}"), 1,
               "one series per path, job escaped (quote, backslash)");
    CHECK_REL(prom_get(m, "gpuprof_range_seconds_total", "range=\"forward/matmul\""), 20 * 0.003, 1e-4, "forward/matmul: by its path, 60 ms");
    CHECK_EQ_U(prom_get(m, "gpuprof_range_calls_total", "range=\"eval\""), 4, "eval: 4 calls");
    CHECK_EQ_U(prom_get(m, "gpuprof_range_calls_total", "range=\"say \\\"hi\\\"\\\\now\""), 20, "a range name with a quote and a backslash, escaped");
    CHECK_EQ_U(prom_get(m, "gpuprof_range_calls_total", "range=\"bad\xef\xbf\xbd\""), 20, "a name that is not UTF-8: U+FFFD in its place");
    CHECK(prom_get(m, "gpuprof_value_last", "name=\"loss\"") == 1.0 / 20, "gpuprof_value_last{name=\"loss\"}: the last value, 1/20");
#ifdef GPUPROF_CUDA
    CHECK_REL(prom_get(m, "gpuprof_range_gpu_seconds_total", "range=\"forward\"") * 1e9, jnum(cJSON_GetObjectItem(summary_path(sum, "forward"), "gpu"), "sum_ns"),
              1e-8, "CUDA: gpuprof_range_gpu_seconds_total{range=\"forward\"} = the tree's gpu.sum_ns");
    CHECK(prom_get(m, "gpuprof_range_gpu_seconds_total", "range=\"forward\"") >= 20 * 0.002, "CUDA: forward's GPU time holds its 20 kernels of 2 ms");
    CHECK(strstr(m, "# TYPE gpuprof_range_gpu_seconds_total counter\n") != NULL, "CUDA: the GPU seconds' family");
#else
    CHECK(isnan(prom_get(m, "gpuprof_range_gpu_seconds_total", NULL)), "a CPU build: no GPU seconds");
#endif
    CHECK(prom_get(m, "gpuprof_memory_bytes", "kind=\"tracked\"") == 0 && isnan(prom_get(m, "gpuprof_memory_bytes", "kind=\"host_rss\"")),
          "nothing tracked, no GPUPROF_MEM snapshot: tracked bytes 0, no RSS (as the summary's memory)");
    CHECK(strstr(m, "gpuprof_info{rank=\"0\",job=\"llm \\\"7b\\\" \\\\ run\",version=\"" GPUPROF_VERSION "\",process=\"") != NULL &&
          strstr(m, "\",world_size=\"1\"} 1\n"), "gpuprof_info: version, process, host, world size");
    CHECK(prom_get(m, "gpuprof_last_update_timestamp_seconds", NULL) > 1.6e9, "gpuprof_last_update_timestamp_seconds: a Unix time");
    CHECK(strstr(m, "# TYPE gpuprof_step_seconds summary\n") && strstr(m, "# TYPE gpuprof_range_seconds_total counter\n") &&
          strstr(m, "# TYPE gpuprof_phase_share gauge\n"), "# TYPE lines");
    check_promtool("v.prom", "promtool check metrics: the final file, no finding");
    cJSON_Delete(sum);
    free(m);
}

/* The job label's sources, in order; the rank. */
static void scenario_labels(void) {
    char *m;
    unsetenv("GPUPROF_SUMMARY");
    unsetenv("GPUPROF_JOB");
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("TORCHELASTIC_RUN_ID", "elastic-1", 1);
    setenv("GPUPROF_METRICS", "l.prom", 1);
    setenv("GPUPROF_RANK", "3", 1);
    gpuprof_init(NULL);
    { PROF_RANGE("x"); vsleep(MS); }
    gpuprof_shutdown();
    m = check_slurp("l.prom");
    CHECK(m && strstr(m, "gpuprof_steps_total{rank=\"3\",job=\"4242\"} 0\n"), "SLURM_JOB_ID before TORCHELASTIC_RUN_ID; the rank label");
    CHECK(m && isnan(prom_get(m, "gpuprof_step_seconds", "quantile=\"0.5\"")) == 1 && strstr(m, "quantile=\"0.5\"} NaN\n"),
          "no steps: the quantiles are NaN");
    free(m);
    unsetenv("SLURM_JOB_ID");
    gpuprof_init(NULL);
    { PROF_RANGE("x"); vsleep(MS); }
    gpuprof_shutdown();
    m = check_slurp("l.prom");
    CHECK(m && strstr(m, "gpuprof_steps_total{rank=\"3\",job=\"elastic-1\"}"), "then TORCHELASTIC_RUN_ID");
    free(m);
    unsetenv("TORCHELASTIC_RUN_ID");
    unsetenv("GPUPROF_RANK");
    gpuprof_init(NULL);
    { PROF_RANGE("x"); vsleep(MS); }
    gpuprof_shutdown();
    m = check_slurp("l.prom");
    CHECK(m && (strstr(m, "gpuprof_steps_total{rank=\"0\",job=\"test_metrics\"}") || strstr(m, "gpuprof_steps_total{rank=\"0\",job=\"test_metrics_cu\"}")),
          "else the process name; rank 0 without ranks");
    check_promtool("l.prom", "promtool check metrics: a run without steps, no finding");
    free(m);
    gpuprof_init(NULL);                               /* a session with no range at all */
    gpuprof_shutdown();
    m = check_slurp("l.prom");
    CHECK(m && strstr(m, "gpuprof_run_complete{rank=\"0\",job=\"") && !strstr(m, "gpuprof_range_calls_total"), "a session without a range: a whole file, no range series");
    check_promtool("l.prom", "promtool check metrics: a session without a range, no finding");
    free(m);
}

/* A session writing metrics to `path`, its stderr kept; returns what it printed. */
static char *faulty(const char *path, const char *errfile) {
    int saved = check_stderr_to(errfile), i;
    setenv("GPUPROF_METRICS", path, 1);
    gpuprof_init(NULL);
    for (i = 0; i < 3; i++) { PROF_RANGE("work"); vsleep(MS); }
    impl_checkpoint();
    for (i = 0; i < 3; i++) { PROF_RANGE("work"); vsleep(MS); }
    gpuprof_shutdown();
    check_stderr_back(saved);
    return check_slurp(errfile);
}

static void scenario_faults(void) {
    char *err, *victim;
    struct stat st;
    char tmp[64];
    FILE *f;
    setenv("GPUPROF_REPORT", "off", 1);
    /* an unwritable directory (even root may not create files in /sys) */
    err = faulty("/sys/gpuprof-test-metrics.prom", "unwritable.err");
    CHECK(err && count_lines(err, "gpuprof:") == 1 && strstr(err, "gpuprof: cannot open '/sys/gpuprof-test-metrics.prom' for the metrics: ") &&
          strstr(err, "(check that the directory exists and is writable)"),
          "an unwritable directory: one line, the path and the reason named");
    if (err && count_lines(err, "gpuprof:") != 1) fprintf(stderr, "it printed:\n%s", err);
    free(err);
    /* a full disk */
    err = faulty("/dev/full", "full.err");
    CHECK(err && count_lines(err, "gpuprof:") == 1 && strstr(err, "gpuprof: cannot write the metrics to '/dev/full': No space left on device (check free space)"),
          "a full disk: one line with the reason");
    CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode), "... /dev/full is still a device (written through, not replaced)");
    free(err);
    /* the disk fills after a checkpoint (a file size limit stands in for it):
       the write fails, the last complete file stays, no temporary file is left */
    {
        pid_t pid;
        int status;
        remove("fsize.prom");
        if ((pid = fork()) == 0) {
            struct rlimit rl = { 200, 200 };
            char *before, *after, tmpname[64];
            int saved, i, ok;
            signal(SIGXFSZ, SIG_IGN);
            setenv("GPUPROF_METRICS", "fsize.prom", 1);
            gpuprof_init(NULL);
            for (i = 0; i < 3; i++) { PROF_RANGE("work"); vsleep(MS); }
            impl_checkpoint();
            before = check_slurp("fsize.prom");
            setrlimit(RLIMIT_FSIZE, &rl);
            saved = check_stderr_to("fsize.err");
            impl_checkpoint();
            check_stderr_back(saved);
            after = check_slurp("fsize.prom");
            err = check_slurp("fsize.err");
            snprintf(tmpname, sizeof tmpname, "fsize.prom.%d.tmp", (int)getpid());
            ok = before && after && !strcmp(before, after) && strlen(before) > 200 && access(tmpname, F_OK) != 0 && err &&
                 count_lines(err, "gpuprof:") == 1 && strstr(err, "gpuprof: the process's file-size limit (ulimit -f) stops gpuprof's outputs: a summary, report, metrics or trace file that meets it is not written (the last complete one stays)");
            if (!ok) fprintf(stderr, "fsize: it printed:\n%s", err ? err : "(nothing)");
            _exit(ok ? 0 : 1);
        }
        CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the disk fills after a checkpoint: one line, the last complete file stays as it was, no temporary file left");
    }
    /* a link where the file should be: refused, its target untouched */
    f = fopen("victim.txt", "w");
    if (f) { fputs("precious\n", f); fclose(f); }
    remove("link.prom");
    CHECK(symlink("victim.txt", "link.prom") == 0, "a link planted at the metrics path");
    err = faulty("link.prom", "link.err");
    victim = check_slurp("victim.txt");
    CHECK(err && count_lines(err, "gpuprof:") == 1 && strstr(err, "gpuprof: the metrics path 'link.prom' is a symbolic link, not a file; nothing is written there (gpuprof follows no link at an output's path: name the file itself)"),
          "a link at the metrics path: one line, nothing written through it");
    CHECK(victim && !strcmp(victim, "precious\n") && lstat("link.prom", &st) == 0 && S_ISLNK(st.st_mode), "... the link and its target untouched");
    free(err);
    free(victim);
    /* a link planted at the temporary name: never written through */
    snprintf(tmp, sizeof tmp, "planted.prom.%d.tmp", (int)getpid());
    remove("planted.prom");
    CHECK(symlink("victim.txt", tmp) == 0, "a link planted at the temporary file's name");
    err = faulty("planted.prom", "planted.err");
    victim = check_slurp("victim.txt");
    CHECK(err && !err[0], "... nothing to say: the link is replaced by a file of gpuprof's own");
    CHECK(victim && !strcmp(victim, "precious\n"), "... its target untouched");
    CHECK(lstat("planted.prom", &st) == 0 && S_ISREG(st.st_mode) && access(tmp, F_OK) != 0, "... the metrics written, no temporary file left");
    free(err);
    free(victim);
    /* the summary's own path */
    setenv("GPUPROF_SUMMARY", "same.prom", 1);
    err = faulty("same.prom", "same.err");
    CHECK(err && count_lines(err, "gpuprof:") == 1 && strstr(err, "the metrics name the same file as the summary ('same.prom'); no metrics are written"),
          "metrics and summary naming one file: one line, the summary kept");
    free(err);
    unsetenv("GPUPROF_SUMMARY");
    unsetenv("GPUPROF_REPORT");
}

/* Two processes naming one file, each checkpointing every 20 ms for 0.4 s:
   each says once that the other replaces its file. */
static void scenario_two_writers(void) {
    int go[2], k, status, ok = 1;
    pid_t pid[2];
    char name[32], *err;
    if (pipe(go) != 0) { CHECK(0, "pipe"); return; }
    for (k = 0; k < 2; k++) {
        if ((pid[k] = fork()) == 0) {
            char c;
            int i;
            snprintf(name, sizeof name, "two.%d.err", k);
            setenv("GPUPROF_METRICS", "two.prom", 1);
            setenv("GPUPROF_SUMMARY_EVERY", "0.02", 1);
            setenv("GPUPROF_REPORT", "off", 1);
            close(go[1]);
            if (read(go[0], &c, 1) != 0) _exit(3);       /* both start when the pipe closes */
            check_stderr_to(name);
            gpuprof_init(NULL);
            for (i = 0; i < 40; i++) { PROF_RANGE("work"); usleep(10000); }
            gpuprof_shutdown();
            _exit(0);
        }
    }
    close(go[0]);
    close(go[1]);
    for (k = 0; k < 2; k++) ok &= waitpid(pid[k], &status, 0) == pid[k] && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    CHECK(ok, "two processes, one metrics file: both run to the end");
    for (k = 0; k < 2; k++) {
        snprintf(name, sizeof name, "two.%d.err", k);
        err = check_slurp(name);
        /* (a CUDA build's child also says it was forked after CUDA started) */
        int said = err ? count_lines(err, "gpuprof:") - count_lines(err, "was forked after CUDA started") : -1;
        CHECK(said == 1 && strstr(err, "gpuprof: 'two.prom' was replaced by another process since gpuprof wrote it: two processes write one metrics file"),
              "two processes, one metrics file: each says so, once");
        if (said != 1) fprintf(stderr, "%s printed:\n%s", name, err ? err : "(nothing)");
        free(err);
    }
}

/* gpuprof's thread rewrites the file every 10 ms while a reader reads it
   as fast as it can: every read is a whole file. */
static void scenario_reader(void) {
    pid_t pid;
    int status, reads = 0, whole = 0, checkpoints = 0;
    remove("r.prom");
    if ((pid = fork()) == 0) {
        int i;
        setenv("GPUPROF_METRICS", "r.prom", 1);
        setenv("GPUPROF_SUMMARY_EVERY", "0.01", 1);
        setenv("GPUPROF_REPORT", "off", 1);
        gpuprof_init(NULL);
        for (i = 0; i < 100; i++) { PROF_STEP(); { PROF_RANGE("work"); usleep(5000); } }
        gpuprof_shutdown();
        _exit(0);
    }
    for (;;) {
        char *m = check_slurp("r.prom");
        if (m) {
            const char *last = strstr(m, "gpuprof_last_update_timestamp_seconds{");
            reads++;
            whole += !strncmp(m, "# HELP gpuprof_info ", 20) && last && strchr(last, '\n') && strchr(last, '\n')[1] == 0;
            checkpoints += prom_get(m, "gpuprof_run_complete", NULL) == 0;
            free(m);
        }
        if (waitpid(pid, &status, WNOHANG) == pid) break;
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the checkpointing process ran to the end");
    CHECK(reads > 10 && whole == reads, "a reader never meets half a file (renamed into place)");
    CHECK(checkpoints > 0, "gpuprof's thread wrote checkpoints (gpuprof_run_complete 0) as the run went");
    {
        char *m = check_slurp("r.prom");
        CHECK(m && prom_get(m, "gpuprof_run_complete", NULL) == 1 && prom_get(m, "gpuprof_steps_total", NULL) == 99,
              "... and at exit the final file: gpuprof_run_complete 1, 99 steps");
        free(m);
    }
    printf("reader: %d reads, %d whole, %d of checkpoints\n", reads, whole, checkpoints);
    check_promtool("r.prom", "promtool check metrics: a file of gpuprof's thread, no finding");
}

int main(int argc, char **argv) {
    promtool = argc > 1 && argv[1][0] ? argv[1] : NULL;
    setenv("GPUPROF_TRACE_RING_MB", "0", 1);
    setenv("GPUPROF_WARMUP", "0", 1);
    setenv("GPUPROF_REPORT", "off", 1);
    unsetenv("GPUPROF_JOB");
    unsetenv("SLURM_JOB_ID");
    unsetenv("TORCHELASTIC_RUN_ID");
    scenario_values();
    scenario_labels();
    scenario_faults();
    scenario_two_writers();
    scenario_reader();
    if (!promtool) printf("test_metrics: promtool not found, the files were not checked with it\n");
    return check_done("test_metrics");
}
