/* hooks.h -- TEST CODE. What the tests linked with the implementation
   (impl.c) read or set of its state, or call of its functions, which
   gpuprof.h does not offer them. Include it after gpuprof.h. */
#ifndef GPUPROF_TEST_HOOKS_H
#define GPUPROF_TEST_HOOKS_H
#include <stddef.h>
/* Exchanges the clock's tick-to-nanosecond factor (32.32 fixed point) and
   its same-nanosecond span with *mult and *same_ns_ticks: a test sets a
   clock of ticks shorter than a nanosecond, then puts the real one back. */
void impl_clock_swap(unsigned long long *mult, unsigned long long *same_ns_ticks);
void impl_stats_count(gpuprof_stats *s, double x, unsigned count);   /* count samples of x at once */
int impl_key_ns_agrees(double ns);       /* the hot path's histogram key of ns is the general one's */
void impl_stats_add_ns(gpuprof_stats *s, unsigned long long ns);     /* the hot path's add */
int impl_live(void);                     /* a session is recording */
int impl_dev_on(void);                   /* the device's reader runs */
void impl_dev_every_ms(double ms);       /* the period the device's phases are judged against */
void impl_dev_sample(void);              /* one device sample now, on the caller's thread */
void impl_checkpoint(void);              /* one checkpoint now, on the caller's thread */
int impl_path_expand(const char *in, char *out, size_t n);   /* an output path as gpuprof expands it (%p, %r, %l, %h) */
int impl_trace_is_perfetto(const char *path);                /* gpuprof writes a Perfetto trace to this path */
#endif
