/* simcuda.c -- TEST CODE: a simulated CUDA runtime (see simcuda.h).

   Compiled against the real cuda_runtime_api.h so every signature is the
   real one; a test links this library instead of libcudart. The model:

   All times are on one virtual clock (ns). Work queued on a stream starts
   when the stream is free (and, for the legacy default stream and the
   blocking streams, when the others it synchronizes with are free), so the
   completion time of everything is known the moment it is queued. An event
   recorded on a stream completes when the stream reaches it; it "is
   complete" once the virtual clock has passed that time.

   One mutex guards everything: this is test code, simplicity first. */
#define _GNU_SOURCE
#include "simcuda.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_MAX_DEV 4
#define SIM_MAX_FN 64

struct CUstream_st {
    int device;
    int nonblocking;
    int legacy;                   /* the legacy default stream of its device */
    uint64_t ready;               /* when the queued work is done */
    int capturing, capture_mode, invalidated;
    pthread_t capture_thread;
    struct CUstream_st *next;     /* all streams, for the legacy rules */
    uint64_t serial;              /* 1, 2, ... in creation order, never reused (0: a legacy stream) */
};

struct CUevent_st {
    int device;
    unsigned flags;
    int recorded, captured;
    uint64_t time;                /* host-clock time the stream reaches it */
};

struct CUgraph_st { int dummy; };
struct CUmemPoolHandle_st { int device; };

#define SIM_PAGE ((uint64_t)2 << 20)        /* cudaMalloc granularity */
#define SIM_CHUNK ((uint64_t)32 << 20)      /* pool reservation granularity */
struct sim_alloc { uintptr_t p; uint64_t bytes, charged; int device, async; struct sim_alloc *next; };
struct sim_mem {
    uint64_t malloc_bytes;                 /* pages taken by cudaMalloc */
    uint64_t used, used_high, rsvd, rsvd_high, threshold;   /* the default pool */
    struct CUmemPoolHandle_st pool;
};

static pthread_mutex_t sim_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint64_t now;
    int mode, ndev;
    cudaError_t sticky, last;
    double drift_ppm;
    int64_t offset_ns;
    uint64_t resolution;
    struct CUstream_st legacy[SIM_MAX_DEV];
    struct CUstream_st *streams;          /* created ones and per-thread ones */
    struct { const char *fn; uint64_t calls, fail_at; cudaError_t fail_with; } fn[SIM_MAX_FN];
    int nfn;
    uint64_t captured_records, invalidations, syncs;
    int64_t live_events;
    int active_global_captures;
    uint64_t latency, rng;        /* work reaching an idle stream waits 0..latency ns */
    uint64_t call_cost;           /* virtual ns every cudart call takes */
    uint64_t mem_total, mem_context;
    int pools;
    struct sim_mem mem[SIM_MAX_DEV];
    struct sim_alloc *allocs;
    uintptr_t next_addr;
} sim = { 1000000000ull, SIMCUDA_GPU, 1, cudaSuccess, cudaSuccess, 0.0, 0, 500, {{0}}, NULL, {{0}}, 0, 0, 0, 0, 0, 0, 0, 88172645463325252ull, 0,
          (uint64_t)80 << 30, (uint64_t)512 << 20, 1, {{0}}, NULL, 0 };

static __thread int sim_device;
static __thread enum cudaStreamCaptureMode sim_thread_mode = cudaStreamCaptureModeGlobal;
static __thread struct CUstream_st *sim_ptds[SIM_MAX_DEV];

#define LOCK() pthread_mutex_lock(&sim_mu)
#define UNLOCK() pthread_mutex_unlock(&sim_mu)

/* Counts the call; returns the error it must fail with, or cudaSuccess. */
static cudaError_t sim_enter(const char *fn) {
    int i;
    sim.now += sim.call_cost;
    for (i = 0; i < sim.nfn && strcmp(sim.fn[i].fn, fn) != 0; i++) {}
    if (i == sim.nfn && sim.nfn < SIM_MAX_FN) { sim.fn[i].fn = fn; sim.nfn++; }
    if (i < SIM_MAX_FN) {
        sim.fn[i].calls++;
        if (sim.fn[i].fail_at && sim.fn[i].calls == sim.fn[i].fail_at) { sim.last = sim.fn[i].fail_with; return sim.fn[i].fail_with; }
    }
    if (sim.mode == SIMCUDA_NO_DRIVER) return sim.last = cudaErrorInsufficientDriver;
    if (sim.mode == SIMCUDA_NO_DEVICE) return sim.last = cudaErrorNoDevice;
    if (sim.sticky != cudaSuccess) return sim.sticky;
    return cudaSuccess;
}
static cudaError_t sim_fail(cudaError_t e) { sim.last = e; return e; }
#define ENTER(name) cudaError_t err_; LOCK(); if ((err_ = sim_enter(name)) != cudaSuccess) { UNLOCK(); return err_; }
#define LEAVE(e) do { cudaError_t e_ = (e); if (e_ != cudaSuccess) sim_fail(e_); UNLOCK(); return e_; } while (0)

/* ---------------- the control panel ---------------- */
void simcuda_reset(void) {
    struct CUstream_st *s;
    int i;
    LOCK();
    while ((s = sim.streams) != NULL) { sim.streams = s->next; free(s); }
    memset(&sim.legacy, 0, sizeof sim.legacy);
    for (i = 0; i < SIM_MAX_DEV; i++) { sim.legacy[i].legacy = 1; sim.legacy[i].device = i; }
    sim.now = 1000000000ull;
    sim.mode = SIMCUDA_GPU;
    sim.ndev = 1;
    sim.sticky = sim.last = cudaSuccess;
    sim.drift_ppm = 0;
    sim.offset_ns = 0;
    sim.resolution = 500;
    memset(sim.fn, 0, sizeof sim.fn);
    sim.nfn = 0;
    sim.captured_records = sim.invalidations = sim.syncs = 0;
    sim.live_events = 0;
    sim.active_global_captures = 0;
    sim.latency = 0;
    sim.call_cost = 0;
    sim.rng = 88172645463325252ull;
    while (sim.allocs) { struct sim_alloc *a = sim.allocs; sim.allocs = a->next; free(a); }
    memset(sim.mem, 0, sizeof sim.mem);
    for (i = 0; i < SIM_MAX_DEV; i++) sim.mem[i].pool.device = i;
    sim.mem_total = (uint64_t)80 << 30;
    sim.mem_context = (uint64_t)512 << 20;
    sim.pools = 1;
    sim.next_addr = (uintptr_t)0x7f0000000000ull;
    UNLOCK();
    memset(sim_ptds, 0, sizeof sim_ptds);      /* this thread's; they were freed above */
}
void simcuda_set_mode(int mode) { LOCK(); sim.mode = mode; UNLOCK(); }
void simcuda_set_devices(int n) { LOCK(); sim.ndev = n < 1 ? 1 : n > SIM_MAX_DEV ? SIM_MAX_DEV : n; UNLOCK(); }
uint64_t simcuda_now(void) { uint64_t t; LOCK(); t = sim.now; UNLOCK(); return t; }
void simcuda_advance(uint64_t ns) { LOCK(); sim.now += ns; UNLOCK(); }
void simcuda_set_drift(double ppm, int64_t offset_ns) { LOCK(); sim.drift_ppm = ppm; sim.offset_ns = offset_ns; UNLOCK(); }
void simcuda_set_resolution(uint64_t ns) { LOCK(); sim.resolution = ns; UNLOCK(); }
void simcuda_set_latency(uint64_t ns) { LOCK(); sim.latency = ns; UNLOCK(); }
void simcuda_set_call_cost(uint64_t ns) { LOCK(); sim.call_cost = ns; UNLOCK(); }
void simcuda_sticky_error(cudaError_t e) { LOCK(); sim.sticky = e; sim.last = e; UNLOCK(); }
uint64_t simcuda_captured_records(void) { uint64_t n; LOCK(); n = sim.captured_records; UNLOCK(); return n; }
uint64_t simcuda_invalidations(void) { uint64_t n; LOCK(); n = sim.invalidations; UNLOCK(); return n; }
int64_t simcuda_live_events(void) { int64_t n; LOCK(); n = sim.live_events; UNLOCK(); return n; }
uint64_t simcuda_sync_calls(void) { uint64_t n; LOCK(); n = sim.syncs; UNLOCK(); return n; }

void simcuda_set_memory(uint64_t total, uint64_t context) { LOCK(); sim.mem_total = total; sim.mem_context = context; UNLOCK(); }
void simcuda_set_pools(int supported) { LOCK(); sim.pools = supported; UNLOCK(); }
static uint64_t sim_used(int d) { return sim.mem_context + sim.mem[d].malloc_bytes + sim.mem[d].rsvd; }
uint64_t simcuda_device_used(int device) { uint64_t u; LOCK(); u = sim_used(device); UNLOCK(); return u; }
static uint64_t sim_round(uint64_t n, uint64_t to) { return (n + to - 1) / to * to; }
/* At a synchronizing call the pool gives back what it holds above its
   release threshold (never what is in use). */
static void sim_pool_release(int d) {
    struct sim_mem *m = &sim.mem[d];
    uint64_t keep = sim_round(m->used, SIM_CHUNK);
    if (m->threshold > keep) keep = m->threshold < m->rsvd ? m->threshold : m->rsvd;
    if (keep < m->rsvd) m->rsvd = keep;
}

void simcuda_fail_call(const char *fn, uint64_t nth, cudaError_t e) {
    int i;
    LOCK();
    for (i = 0; i < sim.nfn && strcmp(sim.fn[i].fn, fn) != 0; i++) {}
    if (i == sim.nfn && sim.nfn < SIM_MAX_FN) { sim.fn[i].fn = fn; sim.nfn++; }
    if (i < SIM_MAX_FN) { sim.fn[i].fail_at = sim.fn[i].calls + nth; sim.fn[i].fail_with = e; }
    UNLOCK();
}

uint64_t simcuda_calls(const char *fn) {
    uint64_t n = 0;
    int i;
    LOCK();
    for (i = 0; i < sim.nfn; i++) if (strcmp(sim.fn[i].fn, fn) == 0) n = sim.fn[i].calls;
    UNLOCK();
    return n;
}

/* Streams are numbered as created, across resets: a stream created where a
   destroyed one was (the same address) is still a new stream, as CUDA's
   stream ids are. */
static uint64_t sim_serials;

/* The stream object behind a handle (NULL = legacy unless per-thread). */
static struct CUstream_st *sim_stream(cudaStream_t s) {
    if (s == NULL || s == cudaStreamLegacy) return &sim.legacy[sim_device];
    if (s == cudaStreamPerThread) {
        if (!sim_ptds[sim_device]) {
            struct CUstream_st *n = (struct CUstream_st *)calloc(1, sizeof *n);
            n->device = sim_device;
            n->serial = ++sim_serials;
            n->next = sim.streams;
            sim.streams = n;
            sim_ptds[sim_device] = n;
        }
        return sim_ptds[sim_device];
    }
    return (struct CUstream_st *)s;
}

/* When work queued now on st may start, by the default-stream rules. An
   idle stream sees new work after the submission latency, if one is set. */
static uint64_t sim_start_time(struct CUstream_st *st) {
    uint64_t now = sim.now, t;
    if (sim.latency) {
        sim.rng ^= sim.rng << 13; sim.rng ^= sim.rng >> 7; sim.rng ^= sim.rng << 17;
        now += sim.rng % (sim.latency + 1);
    }
    t = now > st->ready ? now : st->ready;
    struct CUstream_st *o;
    if (st->nonblocking) return t;
    if (st->legacy) {
        for (o = sim.streams; o; o = o->next)
            if (o->device == st->device && !o->nonblocking && o->ready > t) t = o->ready;
    } else if (sim.legacy[st->device].ready > t) t = sim.legacy[st->device].ready;
    return t;
}

void simcuda_kernel(cudaStream_t s, uint64_t dur_ns) {
    struct CUstream_st *st;
    LOCK();
    st = sim_stream(s);
    if (!st->capturing) st->ready = sim_start_time(st) + dur_ns;
    UNLOCK();
}

uint64_t simcuda_stream_serial(cudaStream_t s) {
    uint64_t n;
    LOCK();
    n = sim_stream(s)->serial;
    UNLOCK();
    return n;
}

uint64_t simcuda_stream_done(cudaStream_t s) {
    uint64_t t;
    LOCK();
    t = sim_start_time(sim_stream(s));
    UNLOCK();
    return t;
}

/* The GPU's timestamp of host-clock time t, rounded to the resolution. */
static double sim_gpu_time(uint64_t t) {
    double g = (double)sim.offset_ns + (double)t * (1.0 + sim.drift_ppm * 1e-6);
    if (sim.resolution) g = floor(g / (double)sim.resolution + 0.5) * (double)sim.resolution;
    return g;
}

/* An unsafe call (event query/sync) by this thread: does a capture forbid it? */
static int sim_unsafe_forbidden(void) {
    struct CUstream_st *o;
    int hit = 0;
    if (sim_thread_mode == cudaStreamCaptureModeRelaxed) return 0;
    for (o = sim.streams; o; o = o->next) {
        if (!o->capturing) continue;
        if ((o->capture_mode == cudaStreamCaptureModeGlobal) ||
            (pthread_equal(o->capture_thread, pthread_self()) && o->capture_mode != cudaStreamCaptureModeRelaxed)) {
            if (!o->invalidated) sim.invalidations++;
            o->invalidated = 1;
            hit = 1;
        }
    }
    return hit;
}

/* ---------------- cudart ---------------- */
cudaError_t cudaGetDeviceCount(int *count) {
    ENTER("cudaGetDeviceCount");
    *count = sim.ndev;
    LEAVE(cudaSuccess);
}
cudaError_t cudaGetDevice(int *device) {
    ENTER("cudaGetDevice");
    *device = sim_device;
    LEAVE(cudaSuccess);
}
cudaError_t cudaSetDevice(int device) {
    ENTER("cudaSetDevice");
    if (device < 0 || device >= sim.ndev) LEAVE(cudaErrorInvalidDevice);
    sim_device = device;
    LEAVE(cudaSuccess);
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
    ENTER("cudaGetDeviceProperties");
    if (device < 0 || device >= sim.ndev) LEAVE(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "Simulated GPU %d", device);
    prop->major = 9;
    prop->minor = 0;
    prop->totalGlobalMem = (size_t)80 << 30;
    prop->pciBusID = 0x3c + device;    /* tests/simnvml: NVML device 1 (3B + 1) of two */
    LEAVE(cudaSuccess);
}
cudaError_t cudaDriverGetVersion(int *v) { LOCK(); *v = sim.mode == SIMCUDA_NO_DRIVER ? 0 : 13000; UNLOCK(); return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int *v) { *v = 13000; return cudaSuccess; }

cudaError_t cudaGetLastError(void) {
    cudaError_t e;
    LOCK();
    e = sim.mode == SIMCUDA_NO_DRIVER ? cudaErrorInsufficientDriver : sim.sticky != cudaSuccess ? sim.sticky : sim.last;
    sim.last = cudaSuccess;
    UNLOCK();
    return e;
}
cudaError_t cudaPeekAtLastError(void) {
    cudaError_t e;
    LOCK();
    e = sim.mode == SIMCUDA_NO_DRIVER ? cudaErrorInsufficientDriver : sim.sticky != cudaSuccess ? sim.sticky : sim.last;
    UNLOCK();
    return e;
}
const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorCapturedEvent: return "cudaErrorCapturedEvent";
    case cudaErrorCudartUnloading: return "cudaErrorCudartUnloading";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    default: return "cudaErrorUnknown";
    }
}
const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    default: return cudaGetErrorName(e);
    }
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
    struct CUstream_st *n;
    ENTER("cudaStreamCreateWithFlags");
    n = (struct CUstream_st *)calloc(1, sizeof *n);
    n->device = sim_device;
    n->serial = ++sim_serials;
    n->nonblocking = (flags & cudaStreamNonBlocking) != 0;
    n->next = sim.streams;
    sim.streams = n;
    *s = n;
    LEAVE(cudaSuccess);
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    struct CUstream_st **p;
    ENTER("cudaStreamDestroy");
    for (p = &sim.streams; *p; p = &(*p)->next)
        if (*p == (struct CUstream_st *)s) { *p = (*p)->next; free(s); LEAVE(cudaSuccess); }
    LEAVE(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    uint64_t t;
    ENTER("cudaStreamSynchronize");
    sim.syncs++;
    sim_pool_release(sim_device);
    t = sim_start_time(sim_stream(s));
    if (t > sim.now) sim.now = t;
    LEAVE(cudaSuccess);
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) { return cudaStreamSynchronize(s == NULL ? cudaStreamPerThread : s); }
cudaError_t cudaDeviceSynchronize(void) {
    struct CUstream_st *o;
    ENTER("cudaDeviceSynchronize");
    sim.syncs++;
    sim_pool_release(sim_device);
    for (o = sim.streams; o; o = o->next) if (o->device == sim_device && o->ready > sim.now) sim.now = o->ready;
    if (sim.legacy[sim_device].ready > sim.now) sim.now = sim.legacy[sim_device].ready;
    LEAVE(cudaSuccess);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
    struct CUevent_st *n;
    ENTER("cudaEventCreateWithFlags");
    n = (struct CUevent_st *)calloc(1, sizeof *n);
    n->device = sim_device;
    n->flags = flags;
    sim.live_events++;
    *e = n;
    LEAVE(cudaSuccess);
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    cudaError_t err;
    LOCK();
    err = sim_enter("cudaEventDestroy");
    /* After a sticky error the context is gone, and its events with it: the
       call fails, the memory is released all the same. */
    if (e && (err == cudaSuccess || err == sim.sticky)) { free(e); sim.live_events--; }
    else if (!e && err == cudaSuccess) err = cudaErrorInvalidResourceHandle;
    if (err != cudaSuccess) sim.last = err;
    UNLOCK();
    return err;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    struct CUstream_st *st;
    ENTER("cudaEventRecord");
    if (!e) LEAVE(cudaErrorInvalidResourceHandle);
    st = sim_stream(s);
    if (st->device != e->device) LEAVE(cudaErrorInvalidResourceHandle);
    if (st->capturing) {                 /* a graph node, not a timestamp */
        sim.captured_records++;
        e->captured = 1;
        e->recorded = 1;
        LEAVE(cudaSuccess);
    }
    e->captured = 0;
    e->recorded = 1;
    e->time = sim_start_time(st);
    st->ready = e->time;
    LEAVE(cudaSuccess);
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) { return cudaEventRecord(e, s == NULL ? cudaStreamPerThread : s); }
void (*simcuda_event_hook)(int query, uint64_t t0, uint64_t t1);
static cudaError_t sim_event_query(cudaEvent_t e);
static cudaError_t sim_event_synchronize(cudaEvent_t e);
cudaError_t cudaEventQuery(cudaEvent_t e) {
    uint64_t t0 = simcuda_now();
    cudaError_t r = sim_event_query(e);
    if (simcuda_event_hook) simcuda_event_hook(1, t0, simcuda_now());
    return r;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    uint64_t t0 = simcuda_now();
    cudaError_t r = sim_event_synchronize(e);
    if (simcuda_event_hook) simcuda_event_hook(0, t0, simcuda_now());
    return r;
}
static cudaError_t sim_event_query(cudaEvent_t e) {
    ENTER("cudaEventQuery");
    if (!e) LEAVE(cudaErrorInvalidResourceHandle);
    if (sim_unsafe_forbidden()) LEAVE(cudaErrorStreamCaptureUnsupported);
    if (e->captured) LEAVE(cudaErrorCapturedEvent);
    if (e->recorded && e->time > sim.now) LEAVE(cudaErrorNotReady);
    LEAVE(cudaSuccess);
}
static cudaError_t sim_event_synchronize(cudaEvent_t e) {
    ENTER("cudaEventSynchronize");
    sim.syncs++;
    sim_pool_release(sim_device);
    if (!e) LEAVE(cudaErrorInvalidResourceHandle);
    if (sim_unsafe_forbidden()) LEAVE(cudaErrorStreamCaptureUnsupported);
    if (e->captured) LEAVE(cudaErrorCapturedEvent);
    if (e->recorded && e->time > sim.now) sim.now = e->time;
    LEAVE(cudaSuccess);
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    ENTER("cudaEventElapsedTime");
    if (!a || !b || !a->recorded || !b->recorded || a->captured || b->captured ||
        (a->flags & cudaEventDisableTiming) || (b->flags & cudaEventDisableTiming) || a->device != b->device)
        LEAVE(cudaErrorInvalidResourceHandle);
    if (a->time > sim.now || b->time > sim.now) LEAVE(cudaErrorNotReady);
    *ms = (float)((sim_gpu_time(b->time) - sim_gpu_time(a->time)) / 1e6);
    LEAVE(cudaSuccess);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status) {
    struct CUstream_st *st, *o;
    ENTER("cudaStreamIsCapturing");
    st = sim_stream(s);
    if (st->legacy)
        for (o = sim.streams; o; o = o->next)
            if (o->capturing && !o->nonblocking && o->capture_mode != cudaStreamCaptureModeRelaxed) LEAVE(cudaErrorStreamCaptureImplicit);
    *status = !st->capturing ? cudaStreamCaptureStatusNone : st->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    LEAVE(cudaSuccess);
}
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus *status) {
    return cudaStreamIsCapturing(s == NULL ? cudaStreamPerThread : s, status);
}
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
    struct CUstream_st *st;
    ENTER("cudaStreamBeginCapture");
    st = sim_stream(s);
    if (st->legacy) LEAVE(cudaErrorStreamCaptureUnsupported);
    if (st->capturing) LEAVE(cudaErrorIllegalState);
    st->capturing = 1;
    st->invalidated = 0;
    st->capture_mode = mode;
    st->capture_thread = pthread_self();
    LEAVE(cudaSuccess);
}
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode mode) {
    return cudaStreamBeginCapture(s == NULL ? cudaStreamPerThread : s, mode);
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph) {
    struct CUstream_st *st;
    int bad;
    ENTER("cudaStreamEndCapture");
    st = sim_stream(s);
    if (!st->capturing) LEAVE(cudaErrorIllegalState);
    bad = st->invalidated;
    st->capturing = 0;
    st->invalidated = 0;
    *graph = bad ? NULL : (cudaGraph_t)calloc(1, sizeof(struct CUgraph_st));
    LEAVE(bad ? cudaErrorStreamCaptureInvalidated : cudaSuccess);
}
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t *graph) {
    return cudaStreamEndCapture(s == NULL ? cudaStreamPerThread : s, graph);
}
cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode) {
    enum cudaStreamCaptureMode old;
    ENTER("cudaThreadExchangeStreamCaptureMode");
    old = sim_thread_mode;
    sim_thread_mode = *mode;
    *mode = old;
    LEAVE(cudaSuccess);
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    ENTER("cudaGraphDestroy");
    free(g);
    LEAVE(cudaSuccess);
}

/* ---------------- device memory ---------------- */
static void *sim_new_alloc(uint64_t bytes, uint64_t charged, int async) {
    struct sim_alloc *a = (struct sim_alloc *)calloc(1, sizeof *a);
    if (!a) return NULL;
    a->p = sim.next_addr;
    sim.next_addr += sim_round(bytes ? bytes : 1, 512) + 512;
    a->bytes = bytes;
    a->charged = charged;
    a->device = sim_device;
    a->async = async;
    a->next = sim.allocs;
    sim.allocs = a;
    return (void *)a->p;
}
static struct sim_alloc *sim_take_alloc(void *p) {
    struct sim_alloc **pp, *a;
    for (pp = &sim.allocs; (a = *pp) != NULL; pp = &a->next)
        if (a->p == (uintptr_t)p) { *pp = a->next; return a; }
    return NULL;
}
cudaError_t cudaMalloc(void **p, size_t bytes) {
    uint64_t pages;
    ENTER("cudaMalloc");
    pages = sim_round(bytes, SIM_PAGE);
    if (sim_used(sim_device) + pages > sim.mem_total) LEAVE(cudaErrorMemoryAllocation);
    if (!(*p = sim_new_alloc(bytes, pages, 0))) LEAVE(cudaErrorMemoryAllocation);
    sim.mem[sim_device].malloc_bytes += pages;
    LEAVE(cudaSuccess);
}
cudaError_t cudaFree(void *p) {
    struct sim_alloc *a;
    ENTER("cudaFree");
    if (!p) LEAVE(cudaSuccess);
    if (!(a = sim_take_alloc(p))) LEAVE(cudaErrorInvalidValue);
    if (a->async) sim.mem[a->device].used -= a->bytes;
    else sim.mem[a->device].malloc_bytes -= a->charged;
    free(a);
    LEAVE(cudaSuccess);
}
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s) {
    struct sim_mem *m;
    uint64_t need;
    ENTER("cudaMallocAsync");
    (void)s;
    m = &sim.mem[sim_device];
    need = sim_round(m->used + bytes, SIM_CHUNK);
    if (need > m->rsvd && sim_used(sim_device) + (need - m->rsvd) > sim.mem_total) LEAVE(cudaErrorMemoryAllocation);
    if (!(*p = sim_new_alloc(bytes, 0, 1))) LEAVE(cudaErrorMemoryAllocation);
    m->used += bytes;
    if (need > m->rsvd) m->rsvd = need;
    if (m->used > m->used_high) m->used_high = m->used;
    if (m->rsvd > m->rsvd_high) m->rsvd_high = m->rsvd;
    LEAVE(cudaSuccess);
}
cudaError_t cudaMallocAsync_ptsz(void **p, size_t bytes, cudaStream_t s) { return cudaMallocAsync(p, bytes, s); }
cudaError_t cudaFreeAsync(void *p, cudaStream_t s) {
    struct sim_alloc *a;
    ENTER("cudaFreeAsync");
    (void)s;
    if (!p) LEAVE(cudaSuccess);
    if (!(a = sim_take_alloc(p)) || !a->async) { free(a); LEAVE(cudaErrorInvalidValue); }
    sim.mem[a->device].used -= a->bytes;
    free(a);
    LEAVE(cudaSuccess);
}
cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s) { return cudaFreeAsync(p, s); }
cudaError_t cudaMemGetInfo(size_t *fr, size_t *total) {
    ENTER("cudaMemGetInfo");
    *total = (size_t)sim.mem_total;
    *fr = (size_t)(sim.mem_total - sim_used(sim_device));
    LEAVE(cudaSuccess);
}
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
    ENTER("cudaDeviceGetAttribute");
    if (device < 0 || device >= sim.ndev) LEAVE(cudaErrorInvalidDevice);
    if (attr == cudaDevAttrMemoryPoolsSupported) *value = sim.pools;
    /* an H100 SXM's figures: the roofline peaks come out as 66.9 TFLOP/s fp32 and 3.35 TB/s */
    else if (attr == cudaDevAttrClockRate) *value = 1980000;
    else if (attr == cudaDevAttrMultiProcessorCount) *value = 132;
    else if (attr == cudaDevAttrMemoryClockRate) *value = 2619000;
    else if (attr == cudaDevAttrGlobalMemoryBusWidth) *value = 5120;
    /* ... and its limits, for the launch figures (an H100 SXM's cudaDeviceProp) */
    else if (attr == cudaDevAttrComputeCapabilityMajor) *value = 9;
    else if (attr == cudaDevAttrComputeCapabilityMinor) *value = 0;
    else if (attr == cudaDevAttrWarpSize) *value = 32;
    else if (attr == cudaDevAttrMaxThreadsPerBlock) *value = 1024;
    else if (attr == cudaDevAttrMaxThreadsPerMultiProcessor) *value = 2048;
    else if (attr == cudaDevAttrMaxRegistersPerBlock || attr == cudaDevAttrMaxRegistersPerMultiprocessor) *value = 65536;
    else if (attr == cudaDevAttrMaxSharedMemoryPerBlock) *value = 49152;
    else if (attr == cudaDevAttrMaxSharedMemoryPerMultiprocessor) *value = 233472;
    else if (attr == cudaDevAttrMaxSharedMemoryPerBlockOptin) *value = 232448;
    else if (attr == cudaDevAttrReservedSharedMemoryPerBlock) *value = 1024;
    else *value = 0;
    LEAVE(cudaSuccess);
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device) {
    ENTER("cudaDeviceGetDefaultMemPool");
    if (device < 0 || device >= sim.ndev) LEAVE(cudaErrorInvalidDevice);
    if (!sim.pools) LEAVE(cudaErrorNotSupported);
    *pool = &sim.mem[device].pool;
    LEAVE(cudaSuccess);
}
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value) {
    struct sim_mem *m;
    uint64_t v;
    ENTER("cudaMemPoolGetAttribute");
    if (!pool) LEAVE(cudaErrorInvalidValue);
    m = &sim.mem[pool->device];
    switch (attr) {
    case cudaMemPoolAttrUsedMemCurrent: v = m->used; break;
    case cudaMemPoolAttrUsedMemHigh: v = m->used_high; break;
    case cudaMemPoolAttrReservedMemCurrent: v = m->rsvd; break;
    case cudaMemPoolAttrReservedMemHigh: v = m->rsvd_high; break;
    case cudaMemPoolAttrReleaseThreshold: v = m->threshold; break;
    default: LEAVE(cudaErrorInvalidValue);
    }
    memcpy(value, &v, sizeof v);
    LEAVE(cudaSuccess);
}
/* The High attributes may only be set to 0, which resets them to the
   current value. */
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value) {
    struct sim_mem *m;
    uint64_t v;
    ENTER("cudaMemPoolSetAttribute");
    if (!pool) LEAVE(cudaErrorInvalidValue);
    m = &sim.mem[pool->device];
    memcpy(&v, value, sizeof v);
    switch (attr) {
    case cudaMemPoolAttrUsedMemHigh: if (v) LEAVE(cudaErrorInvalidValue); m->used_high = m->used; break;
    case cudaMemPoolAttrReservedMemHigh: if (v) LEAVE(cudaErrorInvalidValue); m->rsvd_high = m->rsvd; break;
    case cudaMemPoolAttrReleaseThreshold: m->threshold = v; break;
    default: LEAVE(cudaErrorInvalidValue);
    }
    LEAVE(cudaSuccess);
}
