/* A data-parallel job without MPI, as torchrun would start it inside an
   sbatch script: this program forks N workers with RANK, LOCAL_RANK and
   WORLD_SIZE set, and the script's SLURM_PROCID=0 too; each runs a
   training loop whose gradients are "all-reduced" -- every rank waits at a
   process-shared barrier inside "backward", as a blocking collective makes
   it wait for the slowest rank. With --slow R, rank R's data loading takes
   longer: the straggler. The work is sleeps, so the ranks do not compete
   for the CPU (the timing holds on a loaded machine). Each rank writes the
   summary GPUPROF_SUMMARY names (run.%r.json: one per rank).
   usage: ranks_sim [--ranks N] [--slow R] [--steps S] */
#define _GNU_SOURCE
#include "gpuprof.h"
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void work_ms(double ms) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)((ms - 1000.0 * (double)ts.tv_sec) * 1e6);
    nanosleep(&ts, NULL);
}

static void worker(int rank, int slow, int steps, pthread_barrier_t *allreduce) {
    int s;
    gpuprof_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.process_name = "ranks_sim";
    cfg.warmup = 1;
    gpuprof_init(&cfg);
    for (s = 0; s < steps; s++) {
        PROF_STEP();
        { PROF_RANGE("data"); work_ms(rank == slow ? 12.0 : 5.0); }
        { PROF_RANGE("forward"); work_ms(3.0); }
        {
            PROF_RANGE("backward");
            work_ms(4.0);
            { PROF_RANGE("allreduce"); pthread_barrier_wait(allreduce); }
        }
        { PROF_RANGE("optimizer"); work_ms(1.0); }
    }
    PROF_STEP();
    gpuprof_shutdown();
}

int main(int argc, char **argv) {
    int ranks = 4, slow = -1, steps = 16, r, i, failed = 0;
    pthread_barrier_t *bar;
    pthread_barrierattr_t attr;
    for (i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--ranks") == 0) ranks = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--slow") == 0) slow = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
    }
    if (ranks < 1 || ranks > 64 || steps < 2) { fprintf(stderr, "usage: ranks_sim [--ranks N] [--slow R] [--steps S]\n"); return 2; }
    bar = (pthread_barrier_t *)mmap(NULL, sizeof *bar, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (bar == MAP_FAILED) { perror("mmap"); return 1; }
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(bar, &attr, (unsigned)ranks);
    for (r = 0; r < ranks; r++) {
        if (fork() == 0) {
            char v[16];
            snprintf(v, sizeof v, "%d", r);
            setenv("RANK", v, 1);
            setenv("LOCAL_RANK", v, 1);
            snprintf(v, sizeof v, "%d", ranks);
            setenv("WORLD_SIZE", v, 1);
            setenv("SLURM_PROCID", "0", 1);           /* torchrun inside an sbatch script: the script's own */
            setenv("SLURM_NTASKS", "1", 1);
            worker(r, slow, steps, bar);
            _exit(0);
        }
    }
    for (r = 0; r < ranks; r++) {
        int status;
        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
    }
    return failed;
}
