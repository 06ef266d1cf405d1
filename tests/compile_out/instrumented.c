/* A training step instrumented with every gpuprof macro. Built with
   -DGPUPROF_DISABLE it must compile to exactly the machine code of
   plain.c, the same functions never instrumented. */
#include <stdio.h>
#include "gpuprof.h"

int side_effects;
static double expensive_metric(const float *h, int n) { side_effects++; return (double)h[n - 1]; }

float forward(const float *x, const float *w, float *h, int n) {
    float loss = 0;
    PROF_RANGE("forward");
    {
        PROF_RANGE_WORK("matvec", 2.0 * n * n, 4.0 * n * n);
        for (int i = 0; i < n; i++) {
            float s = 0;
            for (int j = 0; j < n; j++) s += w[i * n + j] * x[j];
            h[i] = s > 0 ? s : 0;
        }
    }
    for (int i = 0; i < n; i++) loss += h[i] * h[i];
    PROF_COUNTER("metric", expensive_metric(h, n));
    return loss;
}

void backward(const float *x, const float *h, float *gw, int n) {
    PROF_FUNC();
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) gw[i * n + j] = h[i] > 0 ? 2 * h[i] * x[j] : 0;
}

float train_step(const float *x, float *w, float *h, float *gw, int n, int step) {
    char layer[32];
    float loss;
    PROF_BEGIN("step");
    snprintf(layer, sizeof layer, "layer %d", step % 4);
    loss = forward(x, w, h, n);
    {
        PROF_RANGE_DYN(layer);
        backward(x, h, gw, n);
    }
    for (int i = 0; i < n * n; i++) w[i] -= 0.01f * gw[i];
    PROF_MARK("updated");
    PROF_END();
    PROF_STEP();
    return loss;
}
