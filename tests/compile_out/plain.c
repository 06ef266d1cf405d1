/* instrumented.c as it was before anyone instrumented it. */
#include <stdio.h>

int side_effects;

float forward(const float *x, const float *w, float *h, int n) {
    float loss = 0;
    {
        for (int i = 0; i < n; i++) {
            float s = 0;
            for (int j = 0; j < n; j++) s += w[i * n + j] * x[j];
            h[i] = s > 0 ? s : 0;
        }
    }
    for (int i = 0; i < n; i++) loss += h[i] * h[i];
    return loss;
}

void backward(const float *x, const float *h, float *gw, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) gw[i * n + j] = h[i] > 0 ? 2 * h[i] * x[j] : 0;
}

float train_step(const float *x, float *w, float *h, float *gw, int n, int step) {
    char layer[32];
    float loss;
    snprintf(layer, sizeof layer, "layer %d", step % 4);
    loss = forward(x, w, h, n);
    {
        backward(x, h, gw, n);
    }
    for (int i = 0; i < n * n; i++) w[i] -= 0.01f * gw[i];
    return loss;
}
