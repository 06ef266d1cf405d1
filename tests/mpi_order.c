/* GPUPROF_MPI when gpuprof starts before MPI does: the first range
   initialises gpuprof before MPI_Init, so the hook at MPI_Finalize is
   registered at the next GPUPROF_STEP (or gpuprof_shutdown) once MPI runs.
   With --no-step nothing gpuprof does comes between MPI_Init and
   MPI_Finalize: the session ends at exit, after MPI_Finalize, where no MPI
   call is allowed; rank 0 says the ranks were not compared, and why.
   --only R: only rank R makes gpuprof calls (after MPI_Init); the others
   never register, and nobody may wait for them forever.
   usage: mpiexec -n 2 mpi_order [--no-step | --only R] */
#define _POSIX_C_SOURCE 200809L
#include "gpuprof.h"                   /* linked with the implementation's "mpi" configuration (GPUPROF_MPI) */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static volatile double sink;

int main(int argc, char **argv) {
    int i, k, rank = 0, only = argc > 2 && strcmp(argv[1], "--only") == 0 ? atoi(argv[2]) : -1;
    int step = !(argc > 1 && strcmp(argv[1], "--no-step") == 0);
    if (only >= 0) {                         /* one rank profiles, the others never call gpuprof */
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        for (i = 0; i < 8; i++) {
            if (rank == only) { PROF_RANGE("work"); for (k = 0; k < 20000; k++) sink = sink * 1.0000001 + 1e-9; }
            if (rank == only) PROF_STEP();
        }
        MPI_Finalize();
        return 0;
    }
    { PROF_RANGE("setup"); sink = 1; }       /* gpuprof starts here, before MPI */
    MPI_Init(&argc, &argv);
    for (i = 0; i < 8; i++) {
        { PROF_RANGE("work"); for (k = 0; k < 20000; k++) sink = sink * 1.0000001 + 1e-9; }
        if (step) PROF_STEP();
    }
    MPI_Finalize();
    return 0;                                /* gpuprof_shutdown() at exit, if MPI_Finalize did not run it */
}
