#define GPUPROF_IMPLEMENTATION
#include <gpuprof.h>
int main(void) {
    for (int i = 0; i < 3; i++) { PROF_RANGE("consumer step"); PROF_STEP(); }
    return gpuprof_report(stdout);
}
