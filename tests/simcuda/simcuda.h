/* simcuda.h -- TEST CODE. The control panel of a simulated CUDA runtime.

   libsimcuda exports the real cudart function names that gpuprof calls (and
   the few a test program calls as a user would), compiled against the real
   cuda_runtime_api.h, so a test links it instead of libcudart. Behind them is
   a virtual GPU whose true times are known:

   - one virtual clock, in nanoseconds, for the host and the GPU; it moves
     only when a test says so (simcuda_advance) or a synchronizing call
     waits for the GPU. gpuprof reads it through GPUPROF_CLOCK_FN.
   - streams run queued work in order: simcuda_kernel() queues a "kernel" of
     a known duration; an event completes when its stream reaches it. The
     legacy default stream waits for all blocking streams and they for it;
     streams made with cudaStreamNonBlocking wait for nothing; each host
     thread has its own per-thread default stream (a blocking stream).
   - the GPU's timestamps may drift against the host clock and are rounded
     to the event resolution (0.5 us by default), as real ones are.
   - capture: cudaStreamBeginCapture/EndCapture with the modes' rules for
     "unsafe" calls (an event query while a capture is active invalidates it
     unless the calling thread is in relaxed mode).
   - errors: no driver (35 from everything), no device (100), a sticky error
     from a chosen moment, or one call of a chosen function failing.
   - device memory: cudaMalloc/cudaFree, the default memory pool
     (cudaMallocAsync/cudaFreeAsync, its attributes and high-water marks),
     cudaMemGetInfo (see simcuda_set_memory).
   - every cudart function counts its calls.

   gpuprof.h never knows this exists. */
#ifndef SIMCUDA_H
#define SIMCUDA_H
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { SIMCUDA_GPU = 0, SIMCUDA_NO_DRIVER = 1, SIMCUDA_NO_DEVICE = 2 };

void     simcuda_reset(void);                        /* everything back to a fresh GPU, counters zero */
void     simcuda_set_mode(int mode);                 /* SIMCUDA_GPU / _NO_DRIVER / _NO_DEVICE */
void     simcuda_set_devices(int n);                 /* visible devices (1..4), default 1 */
uint64_t simcuda_now(void);                          /* the virtual clock (ns) */
void     simcuda_advance(uint64_t ns);               /* host work: the clock moves on */
void     simcuda_kernel(cudaStream_t s, uint64_t dur_ns);   /* queue work of dur_ns on s */
uint64_t simcuda_stream_serial(cudaStream_t s);      /* 1, 2, ... as created, never reused; 0: a legacy default stream */
uint64_t simcuda_stream_done(cudaStream_t s);        /* when s will have finished its queued work */
void     simcuda_set_drift(double ppm, int64_t offset_ns);  /* GPU clock = offset + t * (1 + ppm/1e6) */
void     simcuda_set_resolution(uint64_t ns);        /* rounding of event timestamps (0: exact) */
void     simcuda_set_latency(uint64_t ns);           /* work reaching an idle stream waits 0..ns (random) */
void     simcuda_set_call_cost(uint64_t ns);         /* every cudart call takes ns of virtual time */
void     simcuda_sticky_error(cudaError_t e);        /* from now on every call fails with e */
void     simcuda_fail_call(const char *fn, uint64_t nth, cudaError_t e);   /* the nth call (1-based) of fn fails once */
uint64_t simcuda_calls(const char *fn);              /* calls of a cudart function so far */
uint64_t simcuda_captured_records(void);             /* cudaEventRecord calls that went into a capture */
uint64_t simcuda_invalidations(void);                /* captures invalidated by an unsafe call */
int64_t  simcuda_live_events(void);                  /* created minus destroyed */
uint64_t simcuda_sync_calls(void);                   /* cudaDeviceSynchronize + cudaStreamSynchronize + cudaEventSynchronize */
/* Device memory: total and what the context takes before any allocation
   (default 80 GiB and 512 MiB); cudaMalloc takes whole 2 MiB pages; the
   default pool (cudaMallocAsync) counts used bytes exactly and reserves in
   32 MiB chunks, releasing down to its release threshold (default 0) at
   every synchronizing call. cudaMemGetInfo's used = context + cudaMalloc
   pages + pool reserved. */
void     simcuda_set_memory(uint64_t total, uint64_t context);
void     simcuda_set_pools(int supported);           /* cudaDevAttrMemoryPoolsSupported, default 1 */
uint64_t simcuda_device_used(int device);            /* what cudaMemGetInfo reports as used */
/* Called after every cudaEventQuery (query 1) and cudaEventSynchronize (0)
   with the virtual times the call began and ended, outside simcuda's lock:
   the simulated CUPTI records them as the real one does (an event
   synchronization each, cudaEventQuery included). */
extern void (*simcuda_event_hook)(int query, uint64_t t0, uint64_t t1);

#ifdef __cplusplus
}
#endif
#endif
