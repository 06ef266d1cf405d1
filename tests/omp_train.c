/* omp_train.c -- a training step in llm.c's shape, for CPU samples on a
   real build (SPEC 16a): built as llm.c's Makefile builds its CPU trainer,
   -Ofast -march=native -fopenmp. Each step, "forward" and "backward" run a
   matmul as an OpenMP parallel loop (the workers never open a range) and
   then a GELU (of a length that varies from step to step) on the main
   thread alone, while the workers wait in the
   OpenMP runtime (they spin: OMP_WAIT_POLICY is not set); "update" is a
   serial AdamW. tests/samples_omp.sh checks gpuprof's samples of it against
   perf's over all threads of the same run.

       OMP_NUM_THREADS=2 GPUPROF_SAMPLE=1 ./build/tests/omp_train [STEPS]

   Writes omp_train.summary.json in the working directory. */
#include "gpuprof.h"                   /* linked with the implementation's "ofast" configuration: built as this file is */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { B = 32, C = 256, OC = 256 };
static float inp[B * C], w[OC * C], out[B * OC], act[B * OC], dout[B * OC], dinp[B * C];
static float m1[B * C], v1[B * C];

/* out = inp . w^T, rows split over the OpenMP threads */
static void matmul_forward(float *o, const float *x, const float *wt) {
#pragma omp parallel for
    for (int b = 0; b < B; b++)
        for (int j = 0; j < OC; j++) {
            float s = 0;
            for (int i = 0; i < C; i++) s += x[b * C + i] * wt[j * C + i];
            o[b * OC + j] = s;
        }
}

/* dinp = dout . w, rows split over the OpenMP threads */
static void matmul_backward(float *dx, const float *d, const float *wt) {
#pragma omp parallel for
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < C; i++) dx[b * C + i] = 0;
        for (int j = 0; j < OC; j++)
            for (int i = 0; i < C; i++) dx[b * C + i] += d[b * OC + j] * wt[j * C + i];
    }
}

/* the main thread alone, several passes: the workers wait meanwhile */
static void __attribute__((noinline)) gelu_forward(float *y, const float *x, int n, int passes) {
    for (int pass = 0; pass < passes; pass++)
        for (int i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + tanhf(0.7978845608f * (x[i] + 0.044715f * x[i] * x[i] * x[i]))) + 1e-7f * (float)pass;
}

static void __attribute__((noinline)) gelu_backward(float *dx, const float *x, const float *d, int n, int passes) {
    for (int pass = 0; pass < passes; pass++)
        for (int i = 0; i < n; i++) {
            float u = 0.7978845608f * (x[i] + 0.044715f * x[i] * x[i] * x[i]), t = tanhf(u);
            dx[i] = d[i] * (0.5f * (1.0f + t) + 0.5f * x[i] * (1.0f - t * t) * 0.7978845608f) + 1e-7f * (float)pass;
        }
}

static void __attribute__((noinline)) adamw(float *p, const float *g, float *m, float *v, int n, int t) {
    for (int pass = 0; pass < 4; pass++)
        for (int i = 0; i < n; i++) {
            m[i] = 0.9f * m[i] + 0.1f * g[i];
            v[i] = 0.999f * v[i] + 0.001f * g[i] * g[i];
            p[i] -= 1e-4f * (m[i] / (1.0f - powf(0.9f, (float)t)) / (sqrtf(v[i] / (1.0f - powf(0.999f, (float)t))) + 1e-8f) + 0.01f * p[i]);
        }
}

int main(int argc, char **argv) {
    gpuprof_config cfg = { 0 };
    int steps = argc > 1 ? atoi(argv[1]) : 5000, s, i;
    double sum = 0;
    for (i = 0; i < B * C; i++) inp[i] = (float)((unsigned)i * 7919u % 1000u) / 1000.0f - 0.5f;
    for (i = 0; i < OC * C; i++) w[i] = (float)((unsigned)i * 104729u % 1000u) / 10000.0f - 0.05f;
    cfg.summary_path = "omp_train.summary.json";
    cfg.process_name = "omp_train";
    gpuprof_init(&cfg);
    for (s = 1; s <= steps; s++) {
        /* steps of uneven length: a periodic step would alias with the periodic samplers (the kernel's tick, perf's timer) */
        int passes = 20 + (int)((unsigned)s * 2654435761u >> 27);
        { PROF_RANGE("forward"); matmul_forward(out, inp, w); gelu_forward(act, out, B * OC, passes); }
        { PROF_RANGE("backward"); gelu_backward(dout, out, act, B * OC, passes); matmul_backward(dinp, dout, w); }
        { PROF_RANGE("update"); adamw(w, dinp, m1, v1, B * C, s); }
        PROF_STEP();
    }
    for (i = 0; i < B * OC; i++) sum += act[i];
    printf("omp_train: %d steps, checksum %.3f\n", steps, sum);
    return 0;
}
