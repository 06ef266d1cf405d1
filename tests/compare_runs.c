/* compare_runs.c -- TEST CODE. Writes the JSON summary of one run of a
   training-like loop whose durations come from a seeded generator on a
   virtual clock, so that gpuprof-compare can be tested on runs whose truth
   is known:

       compare_runs OUT.json SEED [--slower PCT] [--fused] [--log-every N]

   Each call of "forward", "backward", "optimizer", "data" lasts its mean
   with a normal jitter of 5% (Box-Muller on a xorshift generator seeded by
   SEED); two seeds are the same code run twice. --slower PCT makes
   "backward" PCT percent slower; --fused replaces the range "softmax" with
   "fused softmax" (half as long) and tracks 1.5 MiB of workspace instead of 1 MiB;
   --log-every N runs the range "log" every Nth step instead of every step. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof.h"
#include "impl/clock.h"                 /* vnow: built with the implementation's "vnow" configuration */

static uint64_t rng;
static double uniform(void) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}
static void work(double mean_ns) {
    double z = sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform());
    double d = mean_ns * (1.0 + 0.05 * z);
    vnow += (uint64_t)(d > 0 ? d : 0);
}

int main(int argc, char **argv) {
    gpuprof_config cfg;
    double slower = 0;
    int fused = 0, every = 1, step, i;
    const char *mid = NULL;
    static char workspace[1];
    if (argc < 3) return 2;
    for (i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--slower") && i + 1 < argc) slower = atof(argv[++i]);
        else if (!strcmp(argv[i], "--fused")) fused = 1;
        else if (!strcmp(argv[i], "--log-every") && i + 1 < argc) every = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--checkpoint-in-eval") && i + 1 < argc) mid = argv[++i];
        else return 2;
    }
    rng = 0x9e3779b97f4a7c15ull * (uint64_t)(atoi(argv[2]) + 1);
    memset(&cfg, 0, sizeof cfg);
    cfg.summary_path = argv[1];
    cfg.report = "off";
    cfg.process_name = fused ? "compare_runs --fused" : "compare_runs";
    gpuprof_init(&cfg);
    gpuprof_mem_alloc(workspace, fused ? 1536 * 1024 : 1024 * 1024, "workspace");
    for (step = 0; step < 300; step++) {
        { PROF_RANGE("data"); work(300e3); }
        {
            PROF_RANGE("forward");
            work(800e3);
            if (fused) { PROF_RANGE("fused softmax"); work(100e3); }
            else { PROF_RANGE("softmax"); work(200e3); }
        }
        { PROF_RANGE("backward"); work(2e6 * (1.0 + slower / 100.0)); }
        { PROF_RANGE("optimizer"); work(400e3); }
        if (every > 0 && step % every == 0) { PROF_RANGE("log"); work(100e3); }
        if (mid && step == 150) {        /* an evaluation, the first: a summary written while it runs (a checkpoint's moment) */
            PROF_RANGE("eval");
            work(5e6);
            gpuprof_write_summary(mid);
            work(1e6);
        }
        PROF_MEM("step");
        PROF_STEP();
    }
    gpuprof_mem_free(workspace);
    gpuprof_shutdown();
    return 0;
}
