/* train_evals.c -- the shape of a real trainer's loop (llm.c's train_gpt2.c):
   41 training steps of data / forward / zero_grad / backward / update, a
   validation pass every 10 steps and text sampling every 20, the losses as
   counters. The work is plain CPU arithmetic standing in for the model; its
   lengths are llm.c's in proportion (a validation step about 3x a training
   step, a sampling step far longer).

   Build and run (from the repository root):
       cmake -S . -B build && cmake --build build && ./build/train_evals
   gpuprof's report at exit shows the typical (training) step's verdict and
   one line for each other kind of step: those with a validation, those
   with a validation and sampling.

   ./build/train_evals --drift: the data loading falls behind as the run
   goes (0.1 ms a step at first, 1.6 ms at the end), which the report's
   line of the run over time shows, and its drift line names.

   GPUPROF_CAPTURE_SLOW=2.5 ./build/train_evals --stall 33: training step 33
   waits 40 ms for its batch; that step is captured (its window written to a
   trace file of its own), not the validation and sampling steps, which are
   long every time (judged against their own kind of step).

   GPUPROF_SAMPLE=1 ./build/train_evals: the functions inside each phase
   (the report's "CPU samples per range"): the phases call functions named
   as llm.c's, each doing its share of the phase's work. */
#define GPUPROF_IMPLEMENTATION
#include "../gpuprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STEPS = 41, VAL_EVERY = 10, SAMPLE_EVERY = 20 };

/* Work that takes about `units` x 100 us of one core: a dependent chain the
   compiler cannot fold or vectorise away. Inlined into each function below,
   so that a CPU sample lands in the function doing the work. */
static volatile double sink;
static inline __attribute__((always_inline)) void work(int units, double salt) {
    double x = 1.0;
    for (long i = 0; i < (long)units * 60000; i++) x = x * 1.0000001 + salt;
    sink = x;
}

/* The model's functions (llm.c's names); units of work each (each its own
   constant: identical functions would be folded into one). */
#define FN(name, salt) static __attribute__((noinline)) void name(int units) { work(units, salt); }
FN(dataloader_next_batch, 1e-9) FN(matmul_forward, 2e-9) FN(attention_forward, 3e-9) FN(gelu_forward, 4e-9) FN(zero_grads, 5e-9)
FN(matmul_backward, 6e-9) FN(attention_backward, 7e-9) FN(gelu_backward, 8e-9) FN(adamw_update, 9e-9) FN(sample_softmax, 1.1e-8)

static void forward(int units) {               /* matmul 60 %, attention 30 %, gelu 10 % */
    matmul_forward(units * 6 / 10);
    attention_forward(units * 3 / 10);
    gelu_forward(units / 10);
}
static void backward(int units) {              /* matmul 70 %, attention 20 %, gelu 10 % */
    matmul_backward(units * 7 / 10);
    attention_backward(units * 2 / 10);
    gelu_backward(units / 10);
}

/* A loss that falls slowly, with a little noise (a deterministic generator). */
static unsigned rng = 12345;
static double noisy(double v) {
    rng = rng * 1103515245u + 12345u;
    return v + ((double)((rng >> 8) & 0xffff) / 65536.0 - 0.5) * 0.01;
}

int main(int argc, char **argv) {
    int drift = 0, stall = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--drift")) drift = 1;
        else if (!strcmp(argv[i], "--stall") && i + 1 < argc) stall = atoi(argv[++i]);
        else { fprintf(stderr, "usage: train_evals [--drift] [--stall STEP]\n"); return 2; }
    }
    for (int step = 0; step < STEPS; step++) {
        if (step % VAL_EVERY == 0) {                  /* a validation pass: forward over held-out batches */
            PROF_RANGE("val");
            forward(130);
            PROF_COUNTER("val_loss", noisy(6.26 - 0.0002 * step));
        }
        if (step > 0 && step % SAMPLE_EVERY == 0) {   /* text generation: one forward per new token */
            PROF_RANGE("sample");
            forward(1800);
            sample_softmax(200);
        }
        { PROF_RANGE("data");      dataloader_next_batch((drift ? 1 + 15 * step / STEPS : 1) + (step == stall ? 400 : 0)); }
        { PROF_RANGE("forward");   forward(20); }
        { PROF_RANGE("zero_grad"); zero_grads(1); }
        { PROF_RANGE("backward");  backward(40); }
        { PROF_RANGE("update");    adamw_update(4); }
        PROF_COUNTER("train_loss", noisy(6.27 - 0.0005 * step));
        PROF_STEP();
    }
    printf("train_evals: %d steps\n", STEPS);
    return 0;
}
