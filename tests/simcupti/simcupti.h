/* simcupti.h -- TEST CODE. The control panel of a simulated CUPTI.

   libsimcupti.so exports the CUPTI functions gpuprof calls, compiled against
   the toolkit's own CUPTI headers, so gpuprof loads it as it loads the real
   libcupti (GPUPROF_CUPTI_PATH). Its GPU is the simulated CUDA runtime's
   (tests/simcuda): a test launches work through the functions below, which
   queue it on a simcuda stream, so every kernel's, copy's and wait's true
   start and end are known, and write the records CUPTI would write:

   - per launch, on the calling thread: an external correlation record per
     non-empty stack of pushed ids (the innermost id), then the runtime and
     the driver API records; the GPU record carries the runtime call's id
     (copies and memsets the driver call's, as CUPTI does);
   - a graph launch: one API record, N kernel records with its id (in
     sequence, or in branches that overlap on the stream); a programmatic
     dependent launch: a kernel that starts before the one before it ends;
   - buffers come from the client's request callback, API records into the
     calling thread's buffer, GPU records into one device buffer; a buffer
     is complete when full, and delivered on a worker thread
     (simcupti_set_delivery(1)) or inside cuptiActivityFlushAll, device
     buffers first (so kernels arrive before their launch records); with
     cuptiActivityFlushPeriod(ms), also those whose work is done, every ms of
     virtual time, at the next launch (as CUPTI's own thread wakes); FlushAll
     without FORCED holds back buffers with unfinished work, FORCED delivers
     it with zero timestamps;
   - timestamps on the registered callback's clock, else CLOCK_REALTIME-like
     (virtual time + 1.7e18), so a client that mixes clocks fails loudly;
   - record layouts of CUDA 13.0 (or 12.x, or a larger future kernel record);
   - failures: any call can be made to fail with any code, every call is
     counted. */
#ifndef SIMCUPTI_H
#define SIMCUPTI_H
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { SIMCUPTI_CUDA13 = 0, SIMCUPTI_CUDA12 = 1, SIMCUPTI_FUTURE = 2 };
enum { SIMCUPTI_SYNC_EVENT = 1, SIMCUPTI_SYNC_STREAM = 3, SIMCUPTI_SYNC_DEVICE = 4 };
enum { SIMCUPTI_HTOD = 1, SIMCUPTI_DTOH = 2, SIMCUPTI_DTOD = 8 };
enum { SIMCUPTI_PAGEABLE = 1, SIMCUPTI_PINNED = 2, SIMCUPTI_DEVICE_MEM = 3 };

void     simcupti_reset(void);                      /* everything off, counters zero, no callbacks */
void     simcupti_set_layout(int layout);           /* SIMCUPTI_CUDA13 (default) / _CUDA12 / _FUTURE */
void     simcupti_set_delivery(int worker);         /* 1: a worker thread delivers full buffers */
void     simcupti_set_buffer_use(size_t bytes);     /* use at most this much of each buffer (0: all) */
void     simcupti_fail(const char *fn, uint64_t nth, int result);   /* the nth call of fn from now fails (0: every call) */
void     simcupti_drop(uint64_t n);                 /* records to report as dropped */
void     simcupti_bad_next(int n, int how);         /* the next n kernels: 0 zero timestamps, 1 end before start */
void     simcupti_set_call_cost(uint64_t ns);       /* a launching or waiting call takes ns of CPU (virtual) time */
uint64_t simcupti_calls(const char *fn);            /* calls of a CUPTI function so far */
uint64_t simcupti_total_calls(void);
int      simcupti_depth(int kind);                  /* the calling thread's stack of pushed ids */
int      simcupti_has_timestamp_callback(void);
int      simcupti_api_quiet(int driver, uint32_t cbid);   /* the call's API records were turned off */
int      simcupti_zeroed_attr(void);                /* the client set ZEROED_OUT_ACTIVITY_BUFFER */
uint64_t simcupti_nonzero_buffers(void);            /* ... and then handed over this many buffers not zeroed */
uint64_t simcupti_buffers_delivered(void);

/* Work, launched from the calling thread; each returns its correlation id. */
uint32_t simcupti_kernel(cudaStream_t s, const char *name, uint64_t dur_ns, unsigned grid_x, unsigned block_x);
/* A kernel of the given launch shape (the record's grid, block, registers per thread, shared memory). */
typedef struct simcupti_shape { unsigned grid[3], block[3], regs, static_smem, dynamic_smem; } simcupti_shape;
uint32_t simcupti_kernel_shape(cudaStream_t s, const char *name, uint64_t dur_ns, const simcupti_shape *shape);
uint32_t simcupti_memcpy(cudaStream_t s, int copy_kind, int host_kind, uint64_t bytes, uint64_t dur_ns);
uint32_t simcupti_memset(cudaStream_t s, uint64_t bytes, uint64_t dur_ns);
uint32_t simcupti_sync(int type, cudaStream_t s);  /* waits (simcuda's clock moves) and records the wait */
uint32_t simcupti_graph_launch(cudaStream_t s, uint32_t graph_id, int kernels, const char *name, uint64_t dur_ns);
/* A graph whose branches run at once: `branches` chains of `kernels` kernels,
   all on s (as CUPTI reports a graph's work on the stream it was launched
   into), branch b starting b * dur_ns / branches after the first, so they
   overlap without nesting. */
uint32_t simcupti_graph_branches(cudaStream_t s, uint32_t graph_id, int branches, int kernels, const char *name, uint64_t dur_ns);
/* A programmatic dependent launch (cudaLaunchKernelEx): the kernel starts
   early_ns before the work queued on s ends (not before now). */
uint32_t simcupti_kernel_early(cudaStream_t s, const char *name, uint64_t dur_ns, uint64_t early_ns);

/* PM sampling (SPEC 21): a sampler over the simulated GPU. A kernel's
   profile is the value of each metric while it runs (percentages of peak,
   bytes/s); a sample is the sum over the kernels in it of their values
   times the share of the sample they ran (percentages capped at 100). */
enum { SIMCUPTI_PM_SMACT, SIMCUPTI_PM_ISSUE, SIMCUPTI_PM_TENSOR, SIMCUPTI_PM_OCC, SIMCUPTI_PM_WARPS, SIMCUPTI_PM_DRAM,
       SIMCUPTI_PM_DRAM_RD, SIMCUPTI_PM_DRAM_WR, SIMCUPTI_PM_PCIE_RD, SIMCUPTI_PM_PCIE_WR, SIMCUPTI_PM_NVL_RX, SIMCUPTI_PM_NVL_TX,
       SIMCUPTI_PM_N };
void     simcupti_pm_reset(void);                   /* (simcupti_reset does it too) chip GH100, all supported */
void     simcupti_pm_profile(const char *kernel, const double v[SIMCUPTI_PM_N]);
void     simcupti_pm_chip(const char *chip);        /* what cuptiDeviceGetChipName says; GV100 has no PM sampling */
void     simcupti_pm_support(int field, int level); /* cuptiProfilerDeviceSupported: 0 isSupported, 1 architecture, 2 sli,
                                                       3 vGpu, 4 confidentialCompute, 5 cmp, 6 wsl (3 supported) */
void     simcupti_pm_max_metrics(int n);            /* a set of more than n metrics takes 2 passes (0: any, -1: every set) */
void     simcupti_pm_reject(const char *metric);    /* the host half refuses this name (INVALID_PARAMETER) */
void     simcupti_pm_overflow_after(uint64_t n);    /* the hardware buffer overflows after n samples (0: never) */
void     simcupti_pm_hang(int on);                  /* cuptiPmSamplingDecodeData blocks until turned off */
void     simcupti_set_version(uint32_t v);          /* what cuptiGetVersion says (0: by the layout) */
uint64_t simcupti_pm_samples(void);                 /* samples made so far */
int      simcupti_pm_state(void);                   /* 0 disabled, 1 enabled, 2 started */
uint64_t simcupti_pm_interval(void);                /* the interval SetConfig gave */
int      simcupti_pm_trigger(void);                 /* ... and its trigger mode (0 SYS clock, 1 time) */

/* A sample buffer of one record of each kind, CUDA 13 layouts; returns its valid size. */
size_t   simcupti_sample_buffer(uint8_t *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
