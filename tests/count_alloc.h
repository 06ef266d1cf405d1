/* count_alloc.h -- gpuprof's allocations through the tests' own allocator
   (GPUPROF_MALLOC / GPUPROF_FREE): how many it holds, and one of them made
   to fail. Include before gpuprof.h, in the file that defines
   GPUPROF_IMPLEMENTATION (test_faults.c, fuzz/fuzz_api.c). */
#ifndef GPUPROF_COUNT_ALLOC_H
#define GPUPROF_COUNT_ALLOC_H
#include <stdlib.h>
static long alloc_count;     /* allocations asked for */
static long alloc_fail_at;   /* the one to fail (1-based), 0: none */
static int alloc_failed;     /* it happened (the count varies a little with thread timing) */
static long live_blocks;     /* gpuprof's allocations not freed yet */
static void *count_malloc(size_t n) {
    void *p;
    if (__atomic_add_fetch(&alloc_count, 1, __ATOMIC_RELAXED) == alloc_fail_at) { alloc_failed = 1; return NULL; }
    p = malloc(n);
    if (p) __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    return p;
}
static void count_free(void *p) {
    if (p) __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    free(p);
}
#define GPUPROF_MALLOC(n) count_malloc(n)
#define GPUPROF_FREE(p) count_free(p)
#endif
