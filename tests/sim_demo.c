/* sim_demo.c -- what gpuprof's table, verdict and trace look like with GPU
   times, on a machine without a GPU: a training-like loop whose "kernels"
   run on the simulated CUDA runtime of the tests (simcuda/), with known
   durations on a simulated H100 (its peaks: 3.35 TB/s, 66.9 TFLOP/s fp32).

       ./build/tests/sim_demo                    (sim_demo.summary.json, sim_demo.trace.json)
       ./build/tests/sim_demo --loss-every 10    (sim_demo_every10.summary.json, ...)
       ./build/tests/sim_demo --flight PATH      no trace file, 4000 steps: the flight
                                                 recorder's events, written to PATH at the end
       GPUPROF_KERNELS=1 GPUPROF_CUPTI_PATH=build/tests/libsimcupti.so ./build/tests/sim_demo
                                                 the kernels too, from the simulated CUPTI
       ./build/tests/sim_demo --burst N          one step of 2100 host ranges and N kernel
                                                 launches (with capture: a trace in parts
                                                 whose middle parts hold none of the main
                                                 thread's own blocks, tests/trace_parts.sh)
       ./build/tests/sim_demo --graphs           100 steps of GPU work that overlaps on one
                                                 stream: a CUDA graph of three branches of
                                                 four kernels, and kernels launched with
                                                 programmatic dependent launch, each in a
                                                 range of its own (sim_graphs.summary.json,
                                                 sim_graphs.trace.json; tests/viewer)

       ./build/tests/sim_demo --mlp              the CUDA demo (examples/train_mlp.cu) as it ran on
                                                 an H100: its kernels' launch shapes (grids, 256
                                                 threads, the registers ptxas gives them for sm_90)
                                                 and times; per step a cudaMemcpyAsync of the labels
                                                 (pinned) and the loss read with cudaMemcpy (pageable)
                                                 and cudaStreamSynchronize, cudaDeviceSynchronize at
                                                 the end (sim_mlp.summary.json, sim_mlp.trace.json;
                                                 the guide's kernel chapter, tests/pftrace_parity.sh)

   Each step: "data" is 1.5 ms of host work (marked as such with
   host_ranges); forward launches a GEMM and 40 small softmax kernels;
   backward one 3.6 ms memory-bound kernel; the optimizer an element-wise
   update; "loss.item" copies the loss to the host, which waits for all of
   it. --loss-every N reads the loss only every Nth step: the one change the
   guide's tour makes. The work is launched through the simulated
   CUPTI (simcupti/), which writes the records CUPTI would when kernel
   capture is on, and only queues the work when it is not. */
#define _GNU_SOURCE
#include "simcuda/simcuda.h"
#include "simcupti/simcupti.h"
#include "gpuprof.h"
#include <stdlib.h>
#include <string.h>

#define US 1000ull

/* A kernel of examples/train_mlp.cu: grid (gx,gy,1) of 256 threads, regs registers per thread. */
static void mlp_kernel(const char *name, uint64_t dur, unsigned gx, unsigned gy, unsigned regs) {
    simcupti_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.grid[0] = gx; sh.grid[1] = gy; sh.grid[2] = 1;
    sh.block[0] = 256; sh.block[1] = sh.block[2] = 1;
    sh.regs = regs;
    simcupti_kernel_shape(0, name, dur, &sh);
    simcuda_advance(5 * US);
}

/* The CUDA demo's step on an H100 (its kernel table in docs/guide.md): the
   kernel times are the H100's means. */
static void mlp_step(void) {
    enum { IN = 64, HIDDEN = 1024, BATCH = 8192 };
    { PROF_RANGE("data"); mlp_kernel("_Z10make_batchPfS_i", 24800, 32, 1, 32); simcupti_memcpy(0, SIMCUPTI_HTOD, SIMCUPTI_PINNED, 4096, 2 * US); }
    {
        PROF_RANGE("forward");
        { PROF_RANGE_WORK("linear1+relu", 2.0 * BATCH * IN * HIDDEN, 4.0 * (BATCH * IN + IN * HIDDEN + BATCH * HIDDEN)); mlp_kernel("_Z12linear1_reluPKf6paramsPf", 163 * US, 4, 8192, 32); }
        { PROF_RANGE_WORK("linear2+loss", 2.0 * BATCH * HIDDEN, 4.0 * (BATCH * HIDDEN + HIDDEN + 3.0 * BATCH)); mlp_kernel("_Z12linear2_lossPKf6paramsS0_PfS2_S2_", 151 * US, 32, 1, 29); }
    }
    {
        PROF_RANGE("backward");
        { PROF_RANGE_WORK("linear2.grad", 2.0 * BATCH * HIDDEN, 4.0 * (BATCH * HIDDEN + BATCH + HIDDEN)); mlp_kernel("_Z7grad_w2PKfS0_6params", 354 * US, 5, 1, 31); }
        { PROF_RANGE_WORK("relu.grad", 1.0 * BATCH * HIDDEN, 4.0 * (2.0 * BATCH * HIDDEN + BATCH + HIDDEN)); mlp_kernel("_Z11grad_hiddenPKfS0_6paramsPf", 34700, 4, 8192, 14); }
        { PROF_RANGE_WORK("linear1.grad", 2.0 * BATCH * (IN + 1) * HIDDEN, 4.0 * (BATCH * IN + BATCH * HIDDEN + (IN + 1) * HIDDEN)); mlp_kernel("_Z7grad_w1PKfS0_6params", 398 * US, 4, 65, 31); }
    }
    { PROF_RANGE("optimizer"); mlp_kernel("_Z4adamPfPKfS_S_mfff", 2590, 265, 1, 18); }
    { PROF_RANGE("loss.item"); simcupti_memcpy(0, SIMCUPTI_DTOH, SIMCUPTI_PAGEABLE, 4, 2 * US); simcupti_sync(SIMCUPTI_SYNC_STREAM, 0); }
    PROF_STEP();
}

/* Two kernels, each launched to start 10 us before the work before it on the stream ends. */
static void pdl_pair(void) {
    simcupti_kernel_early(0, "pdl_gemm", 40 * US, 10 * US);
    simcupti_kernel_early(0, "pdl_epilogue", 25 * US, 10 * US);
    simcuda_advance(5 * US);
}

int main(int argc, char **argv) {
    gpuprof_config cfg;
    static char summary[64], trace[64];
    const char *flight = NULL;
    int s, k, every = 1, burst = 0, graphs = 0, mlp = 0;
    if (argc == 3 && strcmp(argv[1], "--loss-every") == 0 && atoi(argv[2]) > 0) every = atoi(argv[2]);
    else if (argc == 3 && strcmp(argv[1], "--flight") == 0) flight = argv[2];
    else if (argc == 3 && strcmp(argv[1], "--burst") == 0 && atoi(argv[2]) > 0) burst = atoi(argv[2]);
    else if (argc == 2 && strcmp(argv[1], "--graphs") == 0) graphs = 1;
    else if (argc == 2 && strcmp(argv[1], "--mlp") == 0) mlp = 1;
    else if (argc != 1) { fprintf(stderr, "usage: %s [--loss-every N | --flight PATH | --burst N | --graphs | --mlp]\n", argv[0]); return 2; }
    snprintf(summary, sizeof summary, mlp ? "sim_mlp.summary.json" : graphs ? "sim_graphs.summary.json" : every == 1 ? "sim_demo.summary.json" : "sim_demo_every%d.summary.json", every);
    snprintf(trace, sizeof trace, mlp ? "sim_mlp.trace.json" : graphs ? "sim_graphs.trace.json" : every == 1 ? "sim_demo.trace.json" : "sim_demo_every%d.trace.json", every);
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = flight ? NULL : trace;
    cfg.summary_path = flight ? NULL : summary;
    cfg.warmup = 5;
    cfg.process_name = mlp ? "train_mlp_cuda (simulated H100)" : every == 1 ? "train (simulated GPU)" : "train (simulated GPU, loss every 10 steps)";
    cfg.report = "stdout";
    cfg.host_ranges = mlp ? NULL : "data";
    gpuprof_init(&cfg);
    if (burst) {
        PROF_STEP();
        for (k = 0; k < 2100; k++) { PROF_RANGE("host"); simcuda_advance(2 * US); }      /* a block of the main thread's, handed over */
        { PROF_RANGE("launches"); for (k = 0; k < burst; k++) { simcupti_kernel(0, "tiny", 2 * US, 1, 32); simcuda_advance(3 * US); } }
        PROF_STEP();
        return 0;
    }
    if (mlp) {
        for (s = 0; s < 200; s++) mlp_step();
        simcupti_sync(SIMCUPTI_SYNC_DEVICE, 0);
        return 0;
    }
    if (graphs) {
        for (s = 0; s < 100; s++) {
            { PROF_RANGE("data"); simcuda_advance(200 * US); }
            /* a graph of three branches at once on stream 0: twelve kernels, one launch */
            { PROF_RANGE("forward (graph)"); simcupti_graph_branches(0, 7, 3, 4, "fused_branch_kernel", 30 * US); simcuda_advance(20 * US); }
            /* each kernel starts 10 us before the one before it ends; each range's kernels overlap the next range's */
            { PROF_RANGE("attention"); pdl_pair(); }
            { PROF_RANGE("mlp"); pdl_pair(); }
            { PROF_RANGE("norm"); pdl_pair(); }
            { PROF_RANGE("loss.item"); simcupti_sync(SIMCUPTI_SYNC_STREAM, 0); }
            PROF_STEP();
        }
        return 0;
    }
    for (s = 0; s < (flight ? 4000 : 1000); s++) {     /* --flight: more than 1 MiB of events */
        { PROF_RANGE("data"); simcuda_advance(1500 * US); }
        {
            PROF_RANGE("forward");
            /* a 4096^3 GEMM in fp32 (137 GFLOP, 201 MB) */
            {
                PROF_RANGE_WORK("matmul", 2.0 * 4096 * 4096 * 4096, 3.0 * 4096 * 4096 * 4);
                simcupti_kernel(0, "sgemm_128x128x8_nn", 2800 * US, 1024, 256);
                simcuda_advance(30 * US);
            }
            { PROF_RANGE("softmax"); for (k = 0; k < 40; k++) { simcupti_kernel(0, "softmax_warp_forward", 2 * US, 64, 128); simcuda_advance(6 * US); } }
        }
        /* reads and writes 8 GB of activations and gradients: memory-bound */
        { PROF_RANGE_WORK("backward", 2e9, 8e9); simcupti_kernel(0, "elementwise_backward", 3600 * US, 8192, 256); simcuda_advance(60 * US); }
        { PROF_RANGE_WORK("optimizer", 0.5e9, 1e9); simcupti_kernel(0, "adam_update", 400 * US, 4096, 256); simcuda_advance(40 * US); }
        if (s % every == 0) { PROF_RANGE("loss.item"); simcuda_advance(1 * US); simcupti_sync(SIMCUPTI_SYNC_STREAM, 0); }
        PROF_COUNTER("loss", 1.0 / (1 + s));
        PROF_STEP();
    }
    if (flight && gpuprof_write_trace(flight) != 0) return 1;
    return 0;
}
