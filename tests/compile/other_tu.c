/* A second translation unit: only the declarations and macros. */
#include "gpuprof.h"
int other_tu_step(int i);
int other_tu_step(int i) {
    PROF_RANGE("other tu");
    PROF_COUNTER("i", i);
    return i;
}
