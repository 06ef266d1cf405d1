/* NVTX ranges as a tool sees them: run under NVTX_INJECTION64_PATH with the
   recorder library (nvtx_recorder.c), the pushes and pops must have the
   same names, nesting and counts as gpuprof's own call tree. */
#include "gpuprof.h"                   /* linked with the implementation's "nvtx" configuration (GPUPROF_NVTX) */
#include "json_util.h"
#include <stdlib.h>

static size_t seen;                 /* bytes of the recorder's file already read */

/* The recorder's lines since the last call. */
static char *new_events(void) {
    const char *path = getenv("NVTX_RECORDER_OUT");
    char *all = check_slurp(path ? path : "nvtx_events.txt"), *fresh;
    size_t n = all ? strlen(all) : 0;
    fresh = (char *)malloc(n - (seen < n ? seen : n) + 1);
    strcpy(fresh, all ? all + (seen < n ? seen : n) : "");
    seen = n;
    free(all);
    return fresh;
}

/* Replays push/pop lines: checks the domain, the balance, and counts how
   often each call path was pushed. Returns the number of pushes. */
struct pathcount { char path[256]; int count; };
static int replay(char *text, const char *domain, struct pathcount *pc, int *npc, int *balanced) {
    char stack[32][256], *line, *save = NULL;
    int depth = 0, pushes = 0, i, bad_domain = 0;
    *npc = 0;
    *balanced = 1;
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char dom[128], name[200];
        if (sscanf(line, "push %127s %199[^\n]", dom, name) == 2) {
            if (strcmp(dom, domain) != 0) bad_domain++;
            snprintf(stack[depth], sizeof stack[0], "%s%s%s", depth ? stack[depth - 1] : "", depth ? "/" : "", name);
            for (i = 0; i < *npc && strcmp(pc[i].path, stack[depth]) != 0; i++) {}
            if (i == *npc) { snprintf(pc[i].path, sizeof pc[i].path, "%s", stack[depth]); pc[i].count = 0; (*npc)++; }
            pc[i].count++;
            depth++;
            pushes++;
        } else if (sscanf(line, "pop %127s", dom) == 1) {
            if (strcmp(dom, domain) != 0) bad_domain++;
            if (depth == 0) *balanced = 0;
            else depth--;
        }
    }
    if (depth != 0) *balanced = 0;
    CHECK_EQ_U(bad_domain, 0, "every push and pop is in gpuprof's domain");
    return pushes;
}

static void workload(int steps) {
    int s, k;
    for (s = 0; s < steps; s++) {
        PROF_RANGE("step");
        {
            PROF_RANGE("forward");
            for (k = 0; k < 3; k++) { PROF_RANGE("matmul"); }
            { PROF_RANGE_DYN("layer 7"); }
        }
        GPUPROF_BEGIN("backward");
        { PROF_RANGE("matmul"); }
        GPUPROF_END();
        PROF_STEP();
    }
}

int main(void) {
    gpuprof_config cfg;
    struct pathcount pc[64];
    int npc, balanced, pushes, i;
    cJSON *sum;
    char *ev;
    if (!getenv("NVTX_INJECTION64_PATH")) {
        fprintf(stderr, "test_nvtx: run it with NVTX_INJECTION64_PATH=libnvtx_recorder.so (ctest does)\n");
        return 1;
    }
    /* 1. The default domain: the tool sees what the table counts. */
    memset(&cfg, 0, sizeof cfg);
    cfg.summary_path = "nvtx.summary.json";
    cfg.report = "off";
    gpuprof_init(&cfg);
    workload(10);
    gpuprof_shutdown();
    ev = new_events();
    pushes = replay(ev, "gpuprof", pc, &npc, &balanced);
    free(ev);
    sum = summary_load("nvtx.summary.json");
    CHECK(sum != NULL, "summary parses");
    CHECK(balanced, "every push has its pop, in order");
    CHECK_EQ_U(pushes, 10 * 8, "8 ranges per step, each pushed once");
    CHECK_EQ_U(npc, 6, "6 distinct call paths");
    for (i = 0; i < npc; i++) {
        cJSON *row = summary_path(sum, pc[i].path);
        char what[300];
        snprintf(what, sizeof what, "NVTX count of %.200s equals the table's", pc[i].path);
        CHECK_EQ_U(pc[i].count, jnum(row, "count"), what);
    }
    cJSON_Delete(sum);

    /* 2. A domain of the user's choosing. */
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    cfg.nvtx_domain = "my training run";
    gpuprof_init(&cfg);
    workload(2);
    gpuprof_set_enabled(0);
    workload(3);                        /* paused: nothing recorded, nothing pushed */
    gpuprof_set_enabled(1);
    gpuprof_shutdown();
    ev = new_events();
    pushes = replay(ev, "my", pc, &npc, &balanced);   /* the recorder splits at the space: first word */
    free(ev);
    CHECK(balanced, "balanced in the user's domain");
    CHECK_EQ_U(pushes, 2 * 8, "paused steps push nothing");

    /* 3. Off at run time. */
    setenv("GPUPROF_NVTX", "0", 1);
    memset(&cfg, 0, sizeof cfg);
    cfg.report = "off";
    gpuprof_init(&cfg);
    workload(3);
    gpuprof_shutdown();
    ev = new_events();
    CHECK_EQ_U(strlen(ev), 0, "GPUPROF_NVTX=0: no NVTX calls");
    free(ev);
    return check_done("test_nvtx");
}
