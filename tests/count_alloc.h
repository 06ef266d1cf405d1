/* count_alloc.h -- TEST CODE. gpuprof's allocations through the tests' own
   allocator (GPUPROF_MALLOC / GPUPROF_FREE), in the implementation's
   "alloc" configuration (impl/impl.c): how many it made and holds, and
   which of them fail. A test linked with it includes this for the counts. */
#ifndef GPUPROF_COUNT_ALLOC_H
#define GPUPROF_COUNT_ALLOC_H
#include <stdlib.h>
extern long alloc_count;     /* allocations asked for */
extern long alloc_fail_at;   /* the one to fail (1-based), 0: none */
extern int alloc_failed;     /* it happened (the count varies a little with thread timing) */
extern int alloc_fail_all;   /* 1: every allocation fails, 2: every other one (the odd counts), 0: none */
extern long live_blocks;     /* gpuprof's allocations not freed yet */
void *count_malloc(size_t n);
void count_free(void *p);
#define GPUPROF_MALLOC(n) count_malloc(n)
#define GPUPROF_FREE(p) count_free(p)

#ifdef COUNT_ALLOC_DEFINE
long alloc_count, alloc_fail_at, live_blocks;
int alloc_failed, alloc_fail_all;
void *count_malloc(size_t n) {
    long k = __atomic_add_fetch(&alloc_count, 1, __ATOMIC_RELAXED);
    void *p;
    if (k == alloc_fail_at) { alloc_failed = 1; return NULL; }
    if (alloc_fail_all == 1 || (alloc_fail_all == 2 && k % 2)) return NULL;
    p = malloc(n);
    if (p) __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    return p;
}
void count_free(void *p) {
    if (p) __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    free(p);
}
#endif
#endif
