/* child.h -- the hostile-case tests' way of running a program: this test
   program again, as a child in one of its modes, with an environment of the
   case, its stderr kept; killed when it outlives its limit (it hung). Used
   by tests/test_hang.c and tests/test_hostile.c. */
#ifndef GPUPROF_CHILD_H
#define GPUPROF_CHILD_H
#include "check.h"
#include "json_util.h"
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <sys/wait.h>

static const char *child_self;        /* argv[0]: main sets it */

/* A test's child modes, by name. */
typedef struct { const char *name; int (*run)(void); } child_mode;
#define CHILD_MODE(fn) { #fn, child_##fn }

/* In main, first: when started as `PROGRAM child MODE`, runs that mode and
   gives its status (*status; 1 returned); else 0, the test goes on. */
static int child_dispatch(int argc, char **argv, const child_mode *modes, size_t n, int *status) {
    size_t i;
    child_self = argv[0];
    if (argc != 3 || strcmp(argv[1], "child")) return 0;
    *status = 2;
    for (i = 0; i < n; i++)
        if (!strcmp(argv[2], modes[i].name)) *status = modes[i].run();
    return 1;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

typedef struct {
    int rc;                           /* the child's exit status, or 128 + its signal, or -1: killed by us (it hung) */
    double wall;                      /* seconds */
    double after_signal;              /* seconds from the signal sent to its end (-1: none sent) */
    char *err;                        /* its stderr */
} child_result;

/* Runs this program in mode with the environment entries env (NULL-ended)
   added, stderr into a file; sends it signal sig (0: none) `after` seconds
   after the file `ready` appears (NULL: after its start); kills it after
   limit seconds. */
static child_result run_child_signal(const char *mode, const char *const *env, double limit, int sig, double after, const char *ready) {
    child_result r = { -1, 0, -1, NULL };
    char errfile[64];
    double t0 = now_s(), sent_at = 0;
    int status = 0, done = 0, sent = 0;
    double since = ready ? -1 : t0;               /* when the clock for `after` started (-1: not yet) */
    pid_t pid;
    struct stat rst;
    snprintf(errfile, sizeof errfile, "%s.stderr", mode);
    fflush(NULL);
    if ((pid = fork()) == 0) {
        int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int i;
        if (fd >= 0) { dup2(fd, 2); close(fd); }
        for (i = 0; env && env[i]; i++) putenv((char *)env[i]);
        execl(child_self, child_self, "child", mode, (char *)NULL);
        _exit(127);
    }
    while (pid > 0 && now_s() - t0 < limit) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) { done = 1; break; }
        if (sig && since < 0 && stat(ready, &rst) == 0) since = now_s();
        if (sig && !sent && since >= 0 && now_s() - since >= after) { kill(pid, sig); sent = 1; sent_at = now_s(); continue; }
        usleep(sig && !sent ? 1000 : 20000);
    }
    r.wall = now_s() - t0;
    if (sent) r.after_signal = now_s() - sent_at;
    if (!done && pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        r.rc = -1;
    } else if (done) r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.err = check_slurp(errfile);
    if (!r.err) r.err = strdup("");
    return r;
}
static child_result run_child(const char *mode, const char *const *env, double limit) { return run_child_signal(mode, env, limit, 0, 0, NULL); }

/* Lines of text starting "gpuprof: " that hold needle. */
static int lines_with(const char *text, const char *needle) {
    int n = 0;
    const char *p = text;
    while (p && *p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        if (!strncmp(line, "gpuprof: ", 9) && strstr(line, needle)) n++;
        p = e ? e + 1 : NULL;
    }
    return n;
}

static void show(const char *what, const child_result *r) {
    fprintf(stderr, "%s: status %d after %.2f s\n%s", what, r->rc, r->wall, r->err);
}

/* Child `mode` with CPU samples on, its summary and report named after it
   (mode.json, mode.txt), the entries of extra (NULL-ended; NULL: none) also
   in its environment: *j its summary (NULL: none; cJSON_Delete it), *smp
   its samples, *report (when asked for) its report's text; shown as `what`. */
static child_result run_sampled(const char *mode, const char *what, const char *const *extra, cJSON **j, cJSON **smp, char **report) {
    char summary[96], rep[96];
    const char *env[8] = { "GPUPROF_SAMPLE=1", summary, rep, NULL };
    int i, n = 3;
    child_result r;
    snprintf(summary, sizeof summary, "GPUPROF_SUMMARY=%s.json", mode);
    snprintf(rep, sizeof rep, "GPUPROF_REPORT=%s.txt", mode);
    for (i = 0; extra && extra[i] && n < 7; i++) env[n++] = extra[i];
    env[n] = NULL;
    r = run_child(mode, env, 60);
    snprintf(summary, sizeof summary, "%s.json", mode);
    *j = summary_load(summary);
    *smp = *j ? cJSON_GetObjectItem(*j, "samples") : NULL;
    if (report) {
        snprintf(rep, sizeof rep, "%s.txt", mode);
        *report = check_slurp(rep);
    }
    show(what, &r);
    return r;
}
#endif
