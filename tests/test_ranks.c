/* Several processes started together (SPEC 10), without MPI: the rank,
   local rank and world size from the launcher closest to the process
   (torchrun's RANK over the SLURM_PROCID an sbatch script leaves behind),
   the overrides, %r %l %h %p in paths, a path without %r made per-rank,
   only rank 0 printing its table (and where the others' figures are), and
   the summary's and the trace's record of the run: rank, world size, host,
   the variable that gave the rank, the wall-clock anchor, a trace pid that
   is the process id (never 0). Each scenario runs in a child process with
   the launcher's variables set as that launcher sets them. */
#include "gpuprof.h"
#include "json_util.h"
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const launcher_vars[] = {
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_LOCAL_RANK",
    "MV2_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NPROCS", "GPUPROF_RANK",
    "GPUPROF_REPORT", "GPUPROF_SUMMARY", "GPUPROF_TRACE", "TORCHELASTIC_RESTART_COUNT", NULL
};

/* Runs one process of a job: the environment `env` ("NAME=value" ...,
   NULL-terminated), a config's rank/world size, a few ranges; its stderr
   goes to err_path. Returns the child's pid. */
static int run_rank(const char *const *env, const char *summary, const char *trace, int cfg_rank, int cfg_world, const char *err_path) {
    int pid, status, k;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        gpuprof_config cfg;
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644), i;
        dup2(fd, 2);
        close(fd);
        for (k = 0; launcher_vars[k]; k++) unsetenv(launcher_vars[k]);
        for (k = 0; env[k]; k++) putenv((char *)env[k]);
        memset(&cfg, 0, sizeof cfg);
        cfg.summary_path = summary;
        cfg.trace_path = trace;
        cfg.process_name = "train";
        cfg.rank = cfg_rank;
        cfg.world_size = cfg_world;
        gpuprof_init(&cfg);
        for (i = 0; i < 20; i++) { PROF_RANGE("forward"); }
        gpuprof_shutdown();
        fflush(stderr);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the rank's process finishes");
    return pid;
}

static cJSON *run_of(cJSON *sum) { return cJSON_GetObjectItem(sum, "run"); }
static const char *jstr(cJSON *o, const char *key) {
    cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
static int jnull(cJSON *o, const char *key) { return cJSON_IsNull(cJSON_GetObjectItem(o, key)); }
static int contains(const char *path, const char *needle) {
    char *t = check_slurp(path);
    int yes = t && strstr(t, needle) != NULL;
    free(t);
    return yes;
}

/* 1. torchrun inside an sbatch script: the workers inherit the script's
   SLURM_PROCID=0; RANK is theirs. Each writes its own file. */
static void test_torchrun_in_sbatch(void) {
    char host[256];
    int r;
    gethostname(host, sizeof host);
    for (r = 0; r < 4; r++) {
        char rank[16], local[24];
        const char *env[] = { "SLURM_PROCID=0", "SLURM_LOCALID=0", "SLURM_NTASKS=1", rank, local, "WORLD_SIZE=4", NULL };
        snprintf(rank, sizeof rank, "RANK=%d", r);
        snprintf(local, sizeof local, "LOCAL_RANK=%d", r % 2);
        run_rank(env, "ranks.sbatch.%r.%l.json", NULL, 0, 0, "ranks.err.txt");
    }
    for (r = 0; r < 4; r++) {
        char path[64];
        cJSON *j;
        snprintf(path, sizeof path, "ranks.sbatch.%d.%d.json", r, r % 2);
        j = summary_load(path);
        CHECK(j != NULL, "torchrun in sbatch: each worker writes its own summary (%r the rank, %l the local rank)");
        CHECK_EQ_U(jnum(run_of(j), "rank"), r, "its rank is torchrun's RANK, not the script's SLURM_PROCID=0");
        CHECK_EQ_U(jnum(run_of(j), "world_size"), 4, "the world size is WORLD_SIZE");
        CHECK_EQ_U(jnum(run_of(j), "local_rank"), r % 2, "the local rank is LOCAL_RANK");
        CHECK(jstr(run_of(j), "rank_source") && strcmp(jstr(run_of(j), "rank_source"), "RANK") == 0, "rank_source names RANK");
        CHECK(jstr(run_of(j), "host") && strcmp(jstr(run_of(j), "host"), host) == 0, "host is the machine's name");
        cJSON_Delete(j);
        remove(path);
    }
}

/* 2. The other launchers, each as it sets its variables; RANK without
   WORLD_SIZE is not a launcher's. */
static void test_launchers(void) {
    static const struct { const char *env[6]; int rank, local, world; const char *source; } cases[] = {
        { { "RANK=7", "SLURM_PROCID=3", "SLURM_LOCALID=1", "SLURM_NTASKS=8", NULL }, 3, 1, 8, "SLURM_PROCID" },
        { { "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_SIZE=2", "PMIX_RANK=1", NULL }, 1, 1, 2, "OMPI_COMM_WORLD_RANK" },
        { { "PMI_RANK=2", "MPI_LOCALRANKID=0", "PMI_SIZE=3", "SLURM_PROCID=0", NULL }, 2, 0, 3, "PMI_RANK" },
        { { "PMIX_RANK=0", NULL }, 0, -1, 0, "PMIX_RANK" },
        { { "MV2_COMM_WORLD_RANK=5", "MV2_COMM_WORLD_LOCAL_RANK=1", "MV2_COMM_WORLD_SIZE=6", NULL }, 5, 1, 6, "MV2_COMM_WORLD_RANK" },
        { { "SLURM_PROCID=1", "SLURM_NPROCS=2", NULL }, 1, -1, 2, "SLURM_PROCID" },
        { { "GPUPROF_RANK=4", "SLURM_PROCID=0", "SLURM_NTASKS=1", NULL }, 4, -1, 0, "GPUPROF_RANK" },
        { { NULL }, -1, -1, 0, NULL },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *j, *run;
        char msg[160];
        run_rank(cases[i].env, "ranks.launcher.json", NULL, 0, 0, "ranks.err.txt");
        j = summary_load("ranks.launcher.json");
        if (!j) {
            char path[64];
            snprintf(path, sizeof path, "ranks.launcher.%d.json", cases[i].rank);   /* world size > 1: per-rank file */
            j = summary_load(path);
            remove(path);
        }
        remove("ranks.launcher.json");
        run = run_of(j);
        snprintf(msg, sizeof msg, "%s: rank %d", cases[i].env[0] ? cases[i].env[0] : "no launcher", cases[i].rank);
        CHECK(j != NULL, msg);
        CHECK_EQ_U(jnum(run, "rank"), cases[i].rank, msg);
        if (cases[i].local >= 0) CHECK_EQ_U(jnum(run, "local_rank"), cases[i].local, "local rank from the same launcher");
        else CHECK(jnull(run, "local_rank"), "no local rank: null");
        if (cases[i].world > 0) CHECK_EQ_U(jnum(run, "world_size"), cases[i].world, "world size from the same launcher");
        else CHECK(jnull(run, "world_size"), "no world size: null");
        if (cases[i].source) CHECK(jstr(run, "rank_source") && strcmp(jstr(run, "rank_source"), cases[i].source) == 0, "rank_source names the variable");
        else CHECK(jnull(run, "rank_source"), "no launcher: rank_source null");
        cJSON_Delete(j);
    }
}

/* 3. The overrides, and what is wrong with them. */
static void test_overrides(void) {
    const char *none[] = { "SLURM_PROCID=0", "SLURM_NTASKS=1", NULL };
    const char *bad[] = { "GPUPROF_RANK=first", "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2", NULL };
    cJSON *j;
    run_rank(none, "ranks.cfg.%r.json", NULL, 1, 2, "ranks.err.txt");
    j = summary_load("ranks.cfg.1.json");
    CHECK(j && jnum(run_of(j), "rank") == 1 && jnum(run_of(j), "world_size") == 2, "gpuprof_config.rank and world_size override the launcher");
    CHECK(j && jstr(run_of(j), "rank_source") && strcmp(jstr(run_of(j), "rank_source"), "gpuprof_config.rank") == 0, "and say so");
    cJSON_Delete(j);
    remove("ranks.cfg.1.json");
    run_rank(none, "ranks.cfg.%r.json", NULL, 2, 2, "ranks.err.txt");
    CHECK(contains("ranks.err.txt", "gpuprof: gpuprof_config.rank 2 is not from 0 to world_size-1 (1); the rank comes from the environment"),
          "a config rank outside the world: one line, the launcher's rank kept");
    remove("ranks.cfg.0.json");
    run_rank(bad, "ranks.bad.%r.json", NULL, 0, 0, "ranks.err.txt");
    CHECK(contains("ranks.err.txt", "gpuprof: GPUPROF_RANK='first' is not a whole number"), "GPUPROF_RANK not a number: one line");
    j = summary_load("ranks.bad.1.json");
    CHECK(j && jnum(run_of(j), "rank") == 1, "and the launcher's rank is kept");
    cJSON_Delete(j);
    remove("ranks.bad.1.json");
}

/* 4. Four ranks, the report left to its default: rank 0 prints its table
   and one line saying where the others' figures are; the others print no
   table. A summary path without %r is made per-rank (rank 0 says so). The
   traces: pid the process id, the rank in the process name and in
   distributedInfo (as HTA reads it), the wall-clock anchor. */
static void test_four_ranks(void) {
    int r, pids[4];
    struct timespec now;
    long long t_ns;
    clock_gettime(CLOCK_REALTIME, &now);
    t_ns = (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
    for (r = 0; r < 4; r++) {
        char rank[16], err[32];
        const char *env[] = { rank, "WORLD_SIZE=4", "TORCHELASTIC_RESTART_COUNT=1", NULL };
        snprintf(rank, sizeof rank, "RANK=%d", r);
        snprintf(err, sizeof err, "ranks.err.%d.txt", r);
        pids[r] = run_rank(env, "ranks.four.json", "ranks.four.%r.%h.trace.json", 0, 0, err);
    }
    CHECK(contains("ranks.err.0.txt", "== gpuprof"), "rank 0 prints its table");
    CHECK(contains("ranks.err.0.txt", "gpuprof: rank 0 of 4 printed its table; every rank's summary is in 'ranks.four.%r.json'"),
          "and one line saying where every rank's summary is");
    CHECK(contains("ranks.err.0.txt", "gpuprof: the summary path 'ranks.four.json' has no %r, and 4 ranks would all write it: each writes 'ranks.four.%r.json'"),
          "a summary path without %r: rank 0 says each rank writes its own");
    CHECK(contains("ranks.err.0.txt", ", rank 0 of 4 on "), "the table's heading names the rank, the world size and the host");
    for (r = 1; r < 4; r++) {
        char err[32], *text;
        snprintf(err, sizeof err, "ranks.err.%d.txt", r);
        text = check_slurp(err);
        CHECK(text && !strstr(text, "== gpuprof") && !strstr(text, "gpuprof:"), "the other ranks print no table and no line");
        free(text);
    }
    for (r = 0; r < 4; r++) {
        char path[320], host[200], *text;
        cJSON *j, *e, *meta = NULL;
        snprintf(path, sizeof path, "ranks.four.%d.json", r);
        j = summary_load(path);
        CHECK(j && jnum(run_of(j), "rank") == r, "each rank's summary in its own file");
        CHECK(j && jnum(run_of(j), "restarts") == 1, "torchrun's restart count is kept");
        CHECK(j && fabs(jnum(run_of(j), "t0_realtime_ns") - (double)t_ns) < 60e9, "t0_realtime_ns is the wall clock at the run's start");
        cJSON_Delete(j);
        remove(path);
        gethostname(host, sizeof host);
        snprintf(path, sizeof path, "ranks.four.%d.%s.trace.json", r, host);
        text = check_slurp(path);
        CHECK(text != NULL, "each rank's trace in its own file (%h the host)");
        j = text ? cJSON_Parse(text) : NULL;
        cJSON_ArrayForEach(e, trace_events(j)) {
            const char *name = jstr(e, "name");
            if (name && strcmp(name, "process_name") == 0) meta = e;
        }
        CHECK(meta && jnum(meta, "pid") == pids[r], "the trace's pid is the process id, not the rank (pid 0 is special in Perfetto)");
        {
            char want[32];
            cJSON *args = cJSON_GetObjectItem(meta, "args");
            snprintf(want, sizeof want, "train (rank %d)", r);
            CHECK(jstr(args, "name") && strcmp(jstr(args, "name"), want) == 0, "the process is named with its rank");
            CHECK(jnum(cJSON_GetObjectItem(args, "distributedInfo"), "rank") == r &&
                  jnum(cJSON_GetObjectItem(args, "distributedInfo"), "world_size") == 4, "distributedInfo: rank and world size");
            snprintf(want, sizeof want, "\"rank\": %d", r);
            CHECK(text && strstr(text, want), "written as HTA's pattern \"rank\":\\s+N finds it (a space after the colon)");
            CHECK(jnum(args, "t0_realtime_ns") > 0, "and the wall-clock anchor");
        }
        cJSON_Delete(j);
        free(text);
        remove(path);
    }
    for (r = 0; r < 4; r++) {
        char err[32];
        snprintf(err, sizeof err, "ranks.err.%d.txt", r);
        remove(err);
    }
}

int main(void) {
    test_torchrun_in_sbatch();
    test_launchers();
    test_overrides();
    test_four_ranks();
    remove("ranks.err.txt");
    return check_done("test_ranks");
}
