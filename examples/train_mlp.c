/* train_mlp.c -- a small MLP learning a synthetic regression task in plain C,
   instrumented with gpuprof: data / forward / backward / optimizer ranges,
   one GPUPROF_STEP per iteration and the loss as a counter. Its buffers are
   tagged (parameters, data, activations, gradients, optimizer state) and a
   GPUPROF_MEM snapshot follows each phase, as a framework's allocator would:
   activations live from forward to the end of backward, gradients and the
   Adam moments are made on first use.

   Build and run (from the repository root):
       cmake -S . -B build && cmake --build build && ./build/train_mlp
   It prints the loss as it trains, then gpuprof's table, and writes
   train_mlp.trace.json (open it in https://ui.perfetto.dev) and
   train_mlp.summary.json. */
#define GPUPROF_IMPLEMENTATION
#include "../gpuprof.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { IN = 16, HIDDEN = 128, BATCH = 128, STEPS = 300 };

typedef struct { float w1[IN][HIDDEN], b1[HIDDEN], w2[HIDDEN], b2; } params;

typedef struct { float x[BATCH][IN], y[BATCH]; } batch;
typedef struct { float h[BATCH][HIDDEN], out[BATCH]; } activations;   /* hidden (after ReLU), output */

typedef struct {
    params *p, *grad, *m, *v;      /* weights, gradients, Adam moments */
    batch *b;
    activations *a;                /* from forward to the end of backward */
} model;

/* calloc/free that tell gpuprof what the memory is for. */
static void *tracked_calloc(size_t bytes, const char *category) {
    void *ptr = calloc(1, bytes);
    if (!ptr) { fprintf(stderr, "train_mlp: out of memory\n"); exit(1); }
    gpuprof_mem_alloc(ptr, bytes, category);
    return ptr;
}
static void tracked_free(void *ptr) {
    gpuprof_mem_free(ptr);
    free(ptr);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(void) {        /* xorshift64*, in [-1, 1) */
    rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
    return (float)((rng * 2685821657736338717ull) >> 40) / (float)(1 << 23) - 1.0f;
}

/* The task: a smooth nonlinear function of the first four inputs. */
static float target(const float *x) {
    return sinf(2.0f * x[0]) + x[1] * x[2] - 0.5f * x[3] * x[3];
}

static void load_batch(model *m) {
    PROF_FUNC();
    for (int i = 0; i < BATCH; i++) {
        for (int j = 0; j < IN; j++) m->b->x[i][j] = uniform();
        m->b->y[i] = target(m->b->x[i]);
    }
}

static int tuned;                    /* --tuned: the first layer accumulates in a local array */

static float forward(model *m) {
    float loss = 0;
    m->a = (activations *)tracked_calloc(sizeof *m->a, "activations");
    {
        PROF_RANGE_WORK("linear1+relu", 2.0 * BATCH * IN * HIDDEN, 4.0 * (BATCH * IN + IN * HIDDEN + BATCH * HIDDEN));
        for (int i = 0; i < BATCH; i++) {
            if (tuned) {
                /* a local accumulator: the compiler need not fear that h aliases w1, and vectorizes */
                float acc[HIDDEN];
                memcpy(acc, m->p->b1, sizeof acc);
                for (int j = 0; j < IN; j++) {
                    const float xij = m->b->x[i][j], *w = m->p->w1[j];
                    for (int k = 0; k < HIDDEN; k++) acc[k] += xij * w[k];
                }
                for (int k = 0; k < HIDDEN; k++) m->a->h[i][k] = acc[k] > 0 ? acc[k] : 0;
                continue;
            }
            for (int k = 0; k < HIDDEN; k++) m->a->h[i][k] = m->p->b1[k];
            for (int j = 0; j < IN; j++) {
                float xij = m->b->x[i][j];
                for (int k = 0; k < HIDDEN; k++) m->a->h[i][k] += xij * m->p->w1[j][k];
            }
            for (int k = 0; k < HIDDEN; k++) if (m->a->h[i][k] < 0) m->a->h[i][k] = 0;
        }
    }
    {
        PROF_RANGE_WORK("linear2", 2.0 * BATCH * HIDDEN, 4.0 * (BATCH * HIDDEN + HIDDEN));
        for (int i = 0; i < BATCH; i++) {
            float o = m->p->b2;
            for (int k = 0; k < HIDDEN; k++) o += m->a->h[i][k] * m->p->w2[k];
            m->a->out[i] = o;
        }
    }
    {
        PROF_RANGE("mse_loss");
        for (int i = 0; i < BATCH; i++) { float d = m->a->out[i] - m->b->y[i]; loss += d * d; }
    }
    return loss / BATCH;
}

static void backward(model *m) {
    float dout[BATCH];
    if (!m->grad) m->grad = (params *)tracked_calloc(sizeof *m->grad, "gradients");
    memset(m->grad, 0, sizeof *m->grad);
    for (int i = 0; i < BATCH; i++) dout[i] = 2.0f * (m->a->out[i] - m->b->y[i]) / BATCH;
    {
        PROF_RANGE("linear2.grad");
        for (int i = 0; i < BATCH; i++) {
            m->grad->b2 += dout[i];
            for (int k = 0; k < HIDDEN; k++) m->grad->w2[k] += dout[i] * m->a->h[i][k];
        }
    }
    {
        PROF_RANGE("linear1.grad");
        for (int i = 0; i < BATCH; i++) {
            float dh[HIDDEN];
            for (int k = 0; k < HIDDEN; k++) dh[k] = m->a->h[i][k] > 0 ? dout[i] * m->p->w2[k] : 0.0f;
            for (int k = 0; k < HIDDEN; k++) m->grad->b1[k] += dh[k];
            for (int j = 0; j < IN; j++) {
                float xij = m->b->x[i][j];
                for (int k = 0; k < HIDDEN; k++) m->grad->w1[j][k] += xij * dh[k];
            }
        }
    }
    tracked_free(m->a);                        /* the activations are spent */
    m->a = NULL;
}

static void adam_update(model *m, int step, float lr) {
    const float b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    float *p, *g, *mm, *vv;
    size_t n = sizeof(params) / sizeof(float);
    if (!m->m) {
        m->m = (params *)tracked_calloc(sizeof *m->m, "optimizer state");
        m->v = (params *)tracked_calloc(sizeof *m->v, "optimizer state");
    }
    p = (float *)m->p; g = (float *)m->grad; mm = (float *)m->m; vv = (float *)m->v;
    float c1 = 1.0f - powf(b1, (float)step + 1), c2 = 1.0f - powf(b2, (float)step + 1);
    for (size_t i = 0; i < n; i++) {
        mm[i] = b1 * mm[i] + (1 - b1) * g[i];
        vv[i] = b2 * vv[i] + (1 - b2) * g[i] * g[i];
        p[i] -= lr * (mm[i] / c1) / (sqrtf(vv[i] / c2) + eps);
    }
}

int main(int argc, char **argv) {
    gpuprof_config cfg = {0};
    static model m;
    float loss = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tuned") == 0) tuned = 1;
        else { fprintf(stderr, "usage: %s [--tuned]   (--tuned: the first layer accumulates in a local array)\n", argv[0]); return 2; }
    }
    cfg.trace_path = tuned ? "train_mlp_tuned.trace.json" : "train_mlp.trace.json";
    cfg.summary_path = tuned ? "train_mlp_tuned.summary.json" : "train_mlp.summary.json";
    cfg.warmup = 5;                            /* the first steps fault pages in and warm caches */
    gpuprof_init(&cfg);

    m.p = (params *)tracked_calloc(sizeof *m.p, "parameters");
    m.b = (batch *)tracked_calloc(sizeof *m.b, "data");
    for (int j = 0; j < IN; j++)
        for (int k = 0; k < HIDDEN; k++) m.p->w1[j][k] = uniform() * sqrtf(6.0f / IN);
    for (int k = 0; k < HIDDEN; k++) m.p->w2[k] = uniform() * sqrtf(6.0f / HIDDEN) * 0.5f;
    PROF_MEM("init");

    for (int step = 0; step < STEPS; step++) {
        { PROF_RANGE("data");      load_batch(&m); }
        PROF_MEM("data");
        { PROF_RANGE("forward");   loss = forward(&m); }
        PROF_MEM("forward");
        { PROF_RANGE("backward");  backward(&m); }
        PROF_MEM("backward");
        { PROF_RANGE("optimizer"); adam_update(&m, step, 3e-3f); }
        PROF_MEM("optimizer");
        PROF_COUNTER("loss", loss);
        if (step % 50 == 0 || step == STEPS - 1) printf("step %3d  loss %.4f\n", step, loss);
        PROF_STEP();
    }
    fflush(stdout);
    gpuprof_shutdown();                        /* the table now, with the buffers still live (it would also come at exit) */
    tracked_free(m.p); tracked_free(m.b); tracked_free(m.grad); tracked_free(m.m); tracked_free(m.v);
    return 0;
}
