/* train_ddp.c -- data-parallel training over MPI, instrumented with gpuprof:
   every rank fits the same linear model to its own shard of a synthetic
   regression task; the gradients are summed across ranks with
   MPI_Allreduce inside "backward", so every rank waits there for the
   slowest, as NCCL's all-reduce makes GPUs wait in real jobs. Data loading
   is simulated as a reader waiting on storage (a sleep) plus parsing.

   --slow-rank R makes rank R's data loading three times slower: the
   straggler. Every rank then shows the same step time; the cross-rank
   report finds which one the others wait for.

   Build (CMake builds it when it finds MPI) and run, from the repository root:
       mpirun -n 4 ./build/train_ddp --slow-rank 3      (as root: --allow-run-as-root)
   Each rank writes train_ddp.<rank>.json (the rank comes from Open MPI's
   OMPI_COMM_WORLD_RANK, MPICH's PMI_RANK, ...); rank 0 prints its table,
   and, built with GPUPROF_MPI, the cross-rank report at MPI_Finalize
   (train_ddp.ranks.json holds it as JSON). Without GPUPROF_MPI the same
   report comes from ./build/gpuprof-ranks train_ddp.*.json.

   --no-shutdown leaves gpuprof_shutdown() to MPI_Finalize (as a program
   that finalizes MPI inside a cleanup function, like llm.c, does);
   --off-rank R runs rank R with GPUPROF_OFF=1 (it still takes part). */
#define _POSIX_C_SOURCE 200809L
#define GPUPROF_IMPLEMENTATION
#define GPUPROF_MPI                   /* compare the ranks inside MPI_Finalize */
#include "../gpuprof.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { FEATURES = 256, BATCH = 512, STEPS = 60 };

static void wait_storage(double ms) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)((ms - 1000.0 * (double)ts.tv_sec) * 1e6);
    nanosleep(&ts, NULL);
}

/* A batch of this rank's shard: y = x . w_true + noise. */
static void load_batch(float *x, float *y, const float *w_true, unsigned *seed, double storage_ms) {
    int i, j;
    wait_storage(storage_ms);
    for (i = 0; i < BATCH; i++) {
        float s = 0;
        for (j = 0; j < FEATURES; j++) {
            *seed = *seed * 1103515245u + 12345u;
            x[i * FEATURES + j] = (float)((*seed >> 8) & 0xffff) / 65536.0f - 0.5f;
            s += x[i * FEATURES + j] * w_true[j];
        }
        y[i] = s;
    }
}

int main(int argc, char **argv) {
    int rank, size, slow = -1, off = -1, shutdown = 1, step, i, j;
    float *w, *w_true, *grad, *x, *y, *err;
    unsigned seed;
    double loss = 0;
    gpuprof_config cfg;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--slow-rank") == 0 && i + 1 < argc) slow = atoi(argv[++i]);
        else if (strcmp(argv[i], "--off-rank") == 0 && i + 1 < argc) off = atoi(argv[++i]);
        else if (strcmp(argv[i], "--no-shutdown") == 0) shutdown = 0;
    }
    if (rank == off) setenv("GPUPROF_OFF", "1", 1);
    memset(&cfg, 0, sizeof cfg);
    cfg.summary_path = "train_ddp.%r.json";
    cfg.warmup = 5;
    gpuprof_init(&cfg);
    w = calloc(FEATURES, sizeof *w);
    w_true = malloc(FEATURES * sizeof *w_true);
    grad = malloc(FEATURES * sizeof *grad);
    x = malloc((size_t)BATCH * FEATURES * sizeof *x);
    y = malloc(BATCH * sizeof *y);
    err = malloc(BATCH * sizeof *err);
    if (!w || !w_true || !grad || !x || !y || !err) { fprintf(stderr, "train_ddp: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    for (j = 0; j < FEATURES; j++) w_true[j] = (float)((j * 37) % 17) / 17.0f - 0.5f;
    seed = 1234u + 7919u * (unsigned)rank;
    for (step = 0; step < STEPS; step++) {
        PROF_STEP();
        { PROF_RANGE("data"); load_batch(x, y, w_true, &seed, rank == slow ? 9.0 : 3.0); }
        {
            PROF_RANGE("forward");
            loss = 0;
            for (i = 0; i < BATCH; i++) {
                float s = 0;
                for (j = 0; j < FEATURES; j++) s += x[i * FEATURES + j] * w[j];
                err[i] = s - y[i];
                loss += (double)err[i] * err[i] / BATCH;
            }
        }
        {
            PROF_RANGE("backward");
            memset(grad, 0, FEATURES * sizeof *grad);
            for (i = 0; i < BATCH; i++)
                for (j = 0; j < FEATURES; j++) grad[j] += 2.0f * err[i] * x[i * FEATURES + j] / BATCH;
            {
                PROF_RANGE("allreduce");      /* a communication range: gpuprof-ranks reads it as waiting */
                MPI_Allreduce(MPI_IN_PLACE, grad, FEATURES, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            }
        }
        { PROF_RANGE("optimizer"); for (j = 0; j < FEATURES; j++) w[j] -= 0.5f * grad[j] / (float)size; }
        PROF_COUNTER("loss", loss);
        if (rank == 0 && step % 20 == 0) printf("step %3d  loss %.4f\n", step, loss);
    }
    PROF_STEP();
    if (shutdown) gpuprof_shutdown();   /* else MPI_Finalize runs it */
    free(w); free(w_true); free(grad); free(x); free(y); free(err);
    MPI_Finalize();                     /* GPUPROF_MPI: rank 0 prints the cross-rank report here */
    return 0;
}
