/* Runs the compiled-out step: the macros' arguments were never evaluated. */
#include <stdio.h>
extern int side_effects;
float train_step(const float *x, float *w, float *h, float *gw, int n, int step);
int main(void) {
    float x[4] = { 1, 2, 3, 4 }, w[16] = { 0.1f }, h[4], gw[16];
    for (int s = 0; s < 3; s++) train_step(x, w, h, gw, 4, s);
    printf("compile_out: arguments evaluated %d times\n", side_effects);
    return side_effects != 0;
}
