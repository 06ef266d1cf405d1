/* The environment variables a user sets without recompiling:
   GPUPROF_TRACE / GPUPROF_SUMMARY / GPUPROF_REPORT paths (with %p), the row
   limit and view, GPUPROF_OFF=1, and GPUPROF_CLOCK=monotonic. Each case runs
   this program again as a child with that environment. */
#include "gpuprof.h"
#include "json_util.h"
#include <sys/wait.h>
#include <unistd.h>

/* The child: a short training loop with the default config. */
static int child(void) {
    int i, k;
    if (getenv("TEST_ENABLE")) gpuprof_set_enabled(1);     /* must not override GPUPROF_OFF=1 */
    for (i = 0; i < 20; i++) {
        { PROF_RANGE("forward"); for (k = 0; k < 5; k++) { PROF_RANGE("layer"); } }
        { PROF_RANGE("backward"); }
        { PROF_RANGE("optimizer"); }
        PROF_COUNTER("loss", 1.0 / (i + 1));
        PROF_STEP();
    }
    if (getenv("TEST_SUMMARY")) gpuprof_write_summary(getenv("TEST_SUMMARY"));
    printf("child pid %d\n", (int)getpid());
    return 0;
}

/* Runs the child with `env` (NAME=VALUE;NAME=VALUE), returns its pid. */
static int run(const char *self, const char *env) {
    char buf[1024], *save, *kv;
    int pid = fork(), status;
    if (pid == 0) {
        snprintf(buf, sizeof buf, "%s", env);
        for (kv = strtok_r(buf, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) putenv(strdup(kv));
        freopen("env.child.out", "w", stdout);
        freopen("env.child.err", "w", stderr);
        execl(self, self, "--child", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child exits normally");
    return pid;
}

int main(int argc, char **argv) {
    char path[256], *text;
    cJSON *j;
    int pid;
    if (argc > 1 && strcmp(argv[1], "--child") == 0) return child();
    remove("env.trace.json");

    /* trace, summary and report paths, %p expanded to the pid */
    pid = run(argv[0], "GPUPROF_TRACE=env.%p.trace.json;GPUPROF_SUMMARY=env.%p.summary.json;GPUPROF_REPORT=env.%p.report.txt;GPUPROF_WARMUP=2");
    snprintf(path, sizeof path, "env.%d.summary.json", pid);
    j = summary_load(path);
    CHECK(j != NULL, "GPUPROF_SUMMARY: the summary is written at exit, %p becomes the pid");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(j, "steps"), "counted"), 18, "GPUPROF_WARMUP=2: 18 of 20 steps counted");
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "layer"), "count"), 90, "GPUPROF_WARMUP=2: 90 of 100 layer calls counted");
    cJSON_Delete(j);
    snprintf(path, sizeof path, "env.%d.trace.json", pid);
    text = check_slurp(path);
    CHECK(text && strstr(text, "\"name\":\"optimizer\"") != NULL, "GPUPROF_TRACE: the trace is written, %p becomes the pid");
    free(text);
    snprintf(path, sizeof path, "env.%d.report.txt", pid);
    text = check_slurp(path);
    CHECK(text && strstr(text, "Call tree") && strstr(text, "\n  layer "), "GPUPROF_REPORT=path: the report goes to the file");
    free(text);
    text = check_slurp("env.child.err");
    CHECK(text && !strstr(text, "Ranges by total time"), "GPUPROF_REPORT=path: nothing on stderr");
    free(text);

    /* the report on stdout, flat view, two rows */
    run(argv[0], "GPUPROF_REPORT=stdout;GPUPROF_VIEW=flat;GPUPROF_ROWS=2");
    text = check_slurp("env.child.out");
    CHECK(text && strstr(text, "Ranges by total time") && !strstr(text, "Call tree"), "GPUPROF_VIEW=flat: only the flat table");
    CHECK(text && strstr(text, "... 2 more rows (GPUPROF_ROWS=N"), "GPUPROF_ROWS=2: two rows, then how many more");
    free(text);

    /* the default: the report on stderr at exit */
    run(argv[0], "GPUPROF_VIEW=tree");
    text = check_slurp("env.child.err");
    CHECK(text && strstr(text, "Call tree") && !strstr(text, "Ranges by total time"), "default: the report on stderr; GPUPROF_VIEW=tree");
    free(text);

    /* GPUPROF_OFF=1: nothing recorded, nothing written */
    remove("env.off.explicit.json");
    run(argv[0], "GPUPROF_OFF=1;GPUPROF_TRACE=env.off.trace.json;GPUPROF_SUMMARY=env.off.summary.json;TEST_ENABLE=1;TEST_SUMMARY=env.off.explicit.json");
    j = summary_load("env.off.explicit.json");
    CHECK(j && summary_find(j, "ranges", "forward") == NULL, "GPUPROF_OFF=1: nothing recorded, even after gpuprof_set_enabled(1)");
    cJSON_Delete(j);
    text = check_slurp("env.child.err");
    CHECK(text && !strstr(text, "gpuprof"), "GPUPROF_OFF=1: no report, no message, even after gpuprof_set_enabled(1)");
    free(text);
    CHECK(check_slurp("env.off.trace.json") == NULL && check_slurp("env.off.summary.json") == NULL, "GPUPROF_OFF=1: no files");

    /* on/off settings read as people write them: yes/no, true/false, on/off, any case */
    run(argv[0], "GPUPROF_OFF=yes;GPUPROF_SUMMARY=env.yes.summary.json");
    text = check_slurp("env.child.err");
    CHECK(text && !strstr(text, "gpuprof"), "GPUPROF_OFF=yes: off, no report, no complaint");
    free(text);
    CHECK(check_slurp("env.yes.summary.json") == NULL, "GPUPROF_OFF=yes: no files");
    run(argv[0], "GPUPROF_OFF=False;GPUPROF_NVTX=off;GPUPROF_GPU=On;GPUPROF_MEM_RANGES=no;GPUPROF_SUMMARY=env.false.summary.json");
    j = summary_load("env.false.summary.json");
    CHECK(j && jnum(summary_find(j, "ranges", "forward"), "count") == 20, "GPUPROF_OFF=False: recording, every other flag understood");
    cJSON_Delete(j);
    text = check_slurp("env.child.err");
    CHECK(text && !strstr(text, "gpuprof:"), "GPUPROF_OFF=False, GPUPROF_NVTX=off, GPUPROF_GPU=On, GPUPROF_MEM_RANGES=no: no complaint");
    free(text);
    run(argv[0], "GPUPROF_OFF=maybe;GPUPROF_REPORT=off");
    text = check_slurp("env.child.err");
    CHECK(text && strstr(text, "gpuprof: GPUPROF_OFF='maybe' is neither on nor off (1/0, yes/no, true/false, on/off); ignored"),
          "GPUPROF_OFF=maybe: one line lists what it accepts");
    free(text);

    /* an unwritable report path: said, and the report comes on stderr instead */
    run(argv[0], "GPUPROF_REPORT=no_such_dir/report.txt");
    text = check_slurp("env.child.err");
    CHECK(text && strstr(text, "gpuprof: cannot open 'no_such_dir/report.txt' for the report: No such file or directory"),
          "GPUPROF_REPORT unwritable: one line names the path and the reason");
    CHECK(text && strstr(text, "gpuprof: the report that could not go to 'no_such_dir/report.txt' follows here") &&
          strstr(text, "Ranges by total time"), "and the report is not lost: it follows on stderr");
    free(text);

    /* a trace on a full disk: the write error is named, not the buffer size */
    run(argv[0], "GPUPROF_TRACE=/dev/full");
    text = check_slurp("env.child.err");
    CHECK(text && strstr(text, "cannot write the trace to '/dev/full': No space left on device"), "GPUPROF_TRACE=/dev/full: the error is named");
    CHECK(text && strstr(text, "trace: /dev/full (0 events written; writing failed (No space left on device)"),
          "the report's trace line says writing failed and why");
    CHECK(text && !strstr(text, "trace_buffer_mb"), "and does not advise a bigger buffer");
    free(text);

    /* GPUPROF_CLOCK=monotonic: the fallback clock */
    run(argv[0], "GPUPROF_CLOCK=monotonic;GPUPROF_SUMMARY=env.mono.summary.json");
    j = summary_load("env.mono.summary.json");
    CHECK(j && strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "run"), "clock")->valuestring, "clock_monotonic") == 0,
          "GPUPROF_CLOCK=monotonic: clock_gettime is used");
    CHECK(j && jnum(summary_find(j, "ranges", "forward"), "min_ns") > 0, "GPUPROF_CLOCK=monotonic: durations are measured");
    cJSON_Delete(j);
    return check_done("test_env");
}
