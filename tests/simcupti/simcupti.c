/* simcupti.c -- TEST CODE: a simulated CUPTI (see simcupti.h).

   Built as a shared library against the toolkit's CUPTI headers, so every
   signature and record layout is the real one; it reaches the simulated
   CUDA runtime (tests/simcuda, linked into the test program, whose symbols
   the program exports) for the virtual clock and the streams.

   One mutex guards everything; the client's callbacks are called without it
   (the buffer-complete callback walks the buffer with
   cuptiActivityGetNextRecord, which takes it). Lock order: this library's
   mutex, then simcuda's. */
#define _GNU_SOURCE
#include "simcupti.h"
#include "../simcuda/simcuda.h"
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SIM_MAX_FN 96
#define SIM_STACK 256
#define SIM_REALTIME 1700000000000000000ull

struct sbuf {
    uint8_t *p;
    size_t size, used;
    uint64_t done_at;             /* virtual time its last record's work ends */
    int device, full;
    pid_t owner;                  /* host buffers: the thread writing into it */
    struct sbuf *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    CUpti_BuffersCallbackRequestFunc req;
    CUpti_BuffersCallbackCompleteFunc done;
    uint64_t (*ts_cb)(void);
    int subscribed, layout, worker_on, worker_stop;
    pthread_t worker;
    uint8_t enabled[64];
    uint8_t quiet[2][1024];         /* runtime / driver calls whose API records are off */
    uint8_t zeroed_attr;            /* ZEROED_OUT_ACTIVITY_BUFFER: kept for the process, as CUPTI does */
    uint64_t nonzero_buffers;       /* buffers handed over not zeroed while it was set */
    uint32_t corr;
    struct sbuf *bufs;            /* held buffers, oldest first */
    size_t use;
    uint64_t dropped, delivered;
    int bad_n, bad_how;
    uint64_t call_cost;           /* virtual ns a launching or waiting call takes on the CPU */
    struct { const char *fn; uint64_t calls, fail_at; int fail_with, fail_always; } fn[SIM_MAX_FN];
    int nfn;
    uint64_t streams[64];         /* by id - 7: the stream's serial + 1 (simcuda_stream_serial), 0: free */
    char *names[256];
    int nnames;
} sim;

static void sim_periodic(void);
static __thread uint64_t sim_stack[6][SIM_STACK];
static __thread int sim_depth[6];
static __thread int sim_in_callback;

/* Counts the call; returns the result it must fail with, or CUPTI_SUCCESS. */
static CUptiResult sim_enter(const char *fn) {
    int i;
    for (i = 0; i < sim.nfn && strcmp(sim.fn[i].fn, fn) != 0; i++) {}
    if (i == sim.nfn && sim.nfn < SIM_MAX_FN) { sim.fn[i].fn = fn; sim.nfn++; }
    if (i == SIM_MAX_FN) return CUPTI_SUCCESS;
    sim.fn[i].calls++;
    if (sim.fn[i].fail_always || (sim.fn[i].fail_at && sim.fn[i].calls == sim.fn[i].fail_at)) return (CUptiResult)sim.fn[i].fail_with;
    return CUPTI_SUCCESS;
}
#define ENTER(name) CUptiResult err_; pthread_mutex_lock(&mu); if ((err_ = sim_enter(name)) != CUPTI_SUCCESS) { pthread_mutex_unlock(&mu); return err_; }
#define LEAVE(r) do { CUptiResult r_ = (r); pthread_mutex_unlock(&mu); return r_; } while (0)

/* Record sizes of the layout in use (0: a kind this library never writes). */
static size_t sim_size(uint32_t kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return sim.layout == SIMCUPTI_CUDA12 ? 208 : sim.layout == SIMCUPTI_FUTURE ? sizeof(CUpti_ActivityKernel10) + 16 : sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sim.layout == SIMCUPTI_CUDA12 ? 88 : sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sim.layout == SIMCUPTI_CUDA12 ? 40 : sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    default: return 0;
    }
}

/* Virtual time t as a record's timestamp. */
static uint64_t sim_ts(uint64_t t) {
    if (sim.ts_cb) return (uint64_t)((int64_t)t + ((int64_t)sim.ts_cb() - (int64_t)simcuda_now()));
    return t + SIM_REALTIME;
}

static uint32_t sim_stream_id(cudaStream_t s) {
    int i;
    uint64_t key = simcuda_stream_serial(s) + 1;      /* not the handle: a new stream may get a destroyed one's address */
    for (i = 0; i < 64 && sim.streams[i] && sim.streams[i] != key; i++) {}
    if (i == 64) return 63;
    sim.streams[i] = key;
    return (uint32_t)i + 7;
}

static const char *sim_name(const char *name) {
    int i;
    for (i = 0; i < sim.nnames; i++) if (strcmp(sim.names[i], name) == 0) return sim.names[i];
    if (sim.nnames == 256) return "(too many names)";
    return sim.names[sim.nnames++] = strdup(name);
}

/* The open buffer of a thread (device: the GPU records' one), requested from the client when there is none. */
static struct sbuf *sim_buf(int device) {
    struct sbuf *b, **tail;
    pid_t me = device ? 0 : (pid_t)syscall(SYS_gettid);
    uint8_t *p = NULL;
    size_t size = 0, maxrec = 0;
    for (tail = &sim.bufs; (b = *tail) != NULL; tail = &b->next)
        if (!b->full && b->device == device && b->owner == me) return b;
    if (!sim.req) return NULL;
    sim.req(&p, &size, &maxrec);
    if (!p || size < 256) return NULL;
    if (sim.zeroed_attr) {
        /* the client said it hands over zeroed buffers: check it */
        size_t i;
        for (i = 0; i < size && !p[i]; i++) {}
        if (i < size) sim.nonzero_buffers++;
    }
    b = (struct sbuf *)calloc(1, sizeof *b);
    b->p = p;
    b->size = sim.use && sim.use < size ? sim.use : size;
    b->device = device;
    b->owner = me;
    *tail = b;
    return b;
}

static void sim_put(int device, const void *rec, uint32_t kind, uint64_t done_at) {
    size_t n = sim_size(kind);
    uint8_t tmp[512];
    struct sbuf *b = sim_buf(device);
    if (b && b->used + n > b->size) { b->full = 1; b = sim_buf(device); }
    if (!b) { sim.dropped++; return; }
    memset(tmp, 0, sizeof tmp);
    memcpy(tmp, rec, n < sizeof(CUpti_ActivityKernel10) ? n : sizeof(CUpti_ActivityKernel10));
    memcpy(b->p + b->used, tmp, n);
    b->used += n;
    if (done_at > b->done_at) b->done_at = done_at;
}

/* The external correlation records, then the runtime and driver API records
   of one call by this thread at virtual time [t0, t1]; returns the runtime id, *drv the driver's. */
static uint32_t sim_api(uint32_t rt_cbid, uint32_t drv_cbid, uint64_t t0, uint64_t t1, uint32_t *drv) {
    uint32_t id[2], k, j, tid = (uint32_t)syscall(SYS_gettid);
    int kinds[2] = { CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER };
    id[0] = ++sim.corr;
    id[1] = ++sim.corr;
    for (k = 0; k < 2; k++) {
        CUpti_ActivityAPI a;
        if (!sim.enabled[kinds[k]] || sim.quiet[k][k ? drv_cbid : rt_cbid]) continue;
        if (sim.enabled[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION])
            for (j = 1; j < 6; j++) {
                CUpti_ActivityExternalCorrelation x;
                if (!sim_depth[j]) continue;
                memset(&x, 0, sizeof x);
                x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
                x.externalKind = (CUpti_ExternalCorrelationKind)j;
                x.externalId = sim_stack[j][sim_depth[j] - 1];
                x.correlationId = id[k];
                sim_put(0, &x, x.kind, 0);
            }
        memset(&a, 0, sizeof a);
        a.kind = (CUpti_ActivityKind)kinds[k];
        a.cbid = k ? drv_cbid : rt_cbid;
        a.start = sim_ts(t0);
        a.end = sim_ts(t1);
        a.processId = (uint32_t)getpid();
        a.threadId = tid;
        a.correlationId = id[k];
        sim_put(0, &a, a.kind, 0);
    }
    *drv = id[1];
    return id[0];
}

/* The shape of the next kernel record (simcupti_kernel_shape), else grid
   (gx,1,1), block (bx,1,1), 32 registers, 1 KiB of static shared memory. */
static const simcupti_shape *next_shape;

static void sim_pm_kernel(const char *name, uint64_t start, uint64_t dur);   /* the PM sampler's record of it (below) */
static void sim_kernel_record(cudaStream_t s, const char *name, uint64_t start, uint64_t dur, unsigned gx, unsigned bx, uint32_t corr, uint32_t graph) {
    CUpti_ActivityKernel10 k;
    int kind = sim.enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : CUPTI_ACTIVITY_KIND_KERNEL;
    sim_pm_kernel(name, start, dur);
    if (!sim.enabled[kind]) return;
    memset(&k, 0, sizeof k);
    k.kind = (CUpti_ActivityKind)kind;
    k.registersPerThread = 32;
    k.start = sim_ts(start);
    k.end = sim_ts(start + dur);
    if (sim.bad_n > 0) {
        sim.bad_n--;
        if (sim.bad_how == 0) k.start = k.end = 0;
        else k.end = k.start - 1000;
    }
    k.completed = k.end;
    k.streamId = sim_stream_id(s);
    k.gridX = (int32_t)gx; k.gridY = 1; k.gridZ = 1;
    k.blockX = (int32_t)bx; k.blockY = 1; k.blockZ = 1;
    k.staticSharedMemory = 1024;
    if (next_shape) {
        k.gridX = (int32_t)next_shape->grid[0]; k.gridY = (int32_t)next_shape->grid[1]; k.gridZ = (int32_t)next_shape->grid[2];
        k.blockX = (int32_t)next_shape->block[0]; k.blockY = (int32_t)next_shape->block[1]; k.blockZ = (int32_t)next_shape->block[2];
        k.registersPerThread = (uint16_t)next_shape->regs;
        k.staticSharedMemory = (int32_t)next_shape->static_smem;
        k.dynamicSharedMemory = (int32_t)next_shape->dynamic_smem;
    }
    k.correlationId = corr;
    k.name = sim_name(name);
    k.graphId = graph;
    k.graphNodeId = graph ? (uint64_t)graph << 32 | corr : 0;
    sim_put(1, &k, k.kind, start + dur);
}

/* A cudaLaunchKernel of one kernel: grid (gx,1,1) x block (bx,1,1), or the given shape. */
static uint32_t sim_launch(cudaStream_t s, const char *name, uint64_t dur_ns, unsigned gx, unsigned bx, const simcupti_shape *shape) {
    uint64_t now, start;
    uint32_t r, d;
    pthread_mutex_lock(&mu);
    now = simcuda_now();
    start = simcuda_stream_done(s);
    simcuda_kernel(s, dur_ns);
    simcuda_advance(sim.call_cost);
    r = sim_api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, now, now + sim.call_cost, &d);
    next_shape = shape;
    sim_kernel_record(s, name, start, dur_ns, gx, bx, r, 0);
    next_shape = NULL;
    pthread_mutex_unlock(&mu);
    sim_periodic();
    return r;
}

uint32_t simcupti_kernel(cudaStream_t s, const char *name, uint64_t dur_ns, unsigned grid_x, unsigned block_x) {
    return sim_launch(s, name, dur_ns, grid_x, block_x, NULL);
}

uint32_t simcupti_kernel_shape(cudaStream_t s, const char *name, uint64_t dur_ns, const simcupti_shape *shape) {
    return sim_launch(s, name, dur_ns, 1, 1, shape);
}

uint32_t simcupti_graph_launch(cudaStream_t s, uint32_t graph_id, int kernels, const char *name, uint64_t dur_ns) {
    uint64_t now, start;
    uint32_t r, d;
    int i;
    pthread_mutex_lock(&mu);
    now = simcuda_now();
    simcuda_advance(sim.call_cost);
    r = sim_api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, now, now + sim.call_cost, &d);
    for (i = 0; i < kernels; i++) {
        start = simcuda_stream_done(s);
        simcuda_kernel(s, dur_ns);
        sim_kernel_record(s, name, start, dur_ns, 64, 128, r, graph_id);
    }
    pthread_mutex_unlock(&mu);
    sim_periodic();
    return r;
}

uint32_t simcupti_graph_branches(cudaStream_t s, uint32_t graph_id, int branches, int kernels, const char *name, uint64_t dur_ns) {
    uint64_t now, base, stagger = branches > 0 ? dur_ns / (uint64_t)branches : 0;
    uint32_t r, d;
    int b, i;
    pthread_mutex_lock(&mu);
    now = simcuda_now();
    simcuda_advance(sim.call_cost);
    r = sim_api(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, now, now + sim.call_cost, &d);
    base = simcuda_stream_done(s);
    for (b = 0; b < branches; b++)
        for (i = 0; i < kernels; i++)
            sim_kernel_record(s, name, base + (uint64_t)b * stagger + (uint64_t)i * dur_ns, dur_ns, 64, 128, r, graph_id);
    if (branches > 0 && kernels > 0) simcuda_kernel(s, (uint64_t)(branches - 1) * stagger + (uint64_t)kernels * dur_ns);
    pthread_mutex_unlock(&mu);
    sim_periodic();
    return r;
}

uint32_t simcupti_kernel_early(cudaStream_t s, const char *name, uint64_t dur_ns, uint64_t early_ns) {
    uint64_t now, done, start;
    uint32_t r, d;
    pthread_mutex_lock(&mu);
    now = simcuda_now();
    done = simcuda_stream_done(s);
    start = done > now + early_ns ? done - early_ns : now;
    if (start + dur_ns > done) simcuda_kernel(s, start + dur_ns - done);
    simcuda_advance(sim.call_cost);
    r = sim_api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, now, now + sim.call_cost, &d);
    sim_kernel_record(s, name, start, dur_ns, 132, 256, r, 0);
    pthread_mutex_unlock(&mu);
    sim_periodic();
    return r;
}

uint32_t simcupti_memcpy(cudaStream_t s, int copy_kind, int host_kind, uint64_t bytes, uint64_t dur_ns) {
    CUpti_ActivityMemcpy6 m;
    uint64_t now, start;
    uint32_t r, d;
    pthread_mutex_lock(&mu);
    now = simcuda_now();
    start = simcuda_stream_done(s);
    simcuda_kernel(s, dur_ns);
    simcuda_advance(sim.call_cost);
    r = sim_api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, now, now + sim.call_cost, &d);
    if (sim.enabled[CUPTI_ACTIVITY_KIND_MEMCPY]) {
        memset(&m, 0, sizeof m);
        m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        m.copyKind = (uint8_t)copy_kind;
        m.srcKind = (uint8_t)(copy_kind == SIMCUPTI_HTOD ? host_kind : SIMCUPTI_DEVICE_MEM);
        m.dstKind = (uint8_t)(copy_kind == SIMCUPTI_DTOH ? host_kind : SIMCUPTI_DEVICE_MEM);
        m.bytes = bytes;
        m.start = sim_ts(start);
        m.end = sim_ts(start + dur_ns);
        m.streamId = sim_stream_id(s);
        m.correlationId = d;
        m.runtimeCorrelationId = r;
        sim_put(1, &m, m.kind, start + dur_ns);
    }
    pthread_mutex_unlock(&mu);
    sim_periodic();
    return r;
}

uint32_t simcupti_memset(cudaStream_t s, uint64_t bytes, uint64_t dur_ns) {
    CUpti_ActivityMemset4 m;
    uint64_t now, start;
    uint32_t r, d;
    pthread_mutex_lock(&mu);
    now = simcuda_now();
    start = simcuda_stream_done(s);
    simcuda_kernel(s, dur_ns);
    simcuda_advance(sim.call_cost);
    r = sim_api(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, now, now + sim.call_cost, &d);
    if (sim.enabled[CUPTI_ACTIVITY_KIND_MEMSET]) {
        memset(&m, 0, sizeof m);
        m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
        m.bytes = bytes;
        m.start = sim_ts(start);
        m.end = sim_ts(start + dur_ns);
        m.streamId = sim_stream_id(s);
        m.correlationId = d;             /* the driver call's, as CUPTI writes it */
        m.memoryKind = SIMCUPTI_DEVICE_MEM;
        sim_put(1, &m, m.kind, start + dur_ns);
    }
    pthread_mutex_unlock(&mu);
    sim_periodic();
    return r;
}

/* cudaEventQuery and cudaEventSynchronize, from simcuda: the real CUPTI
   writes an event synchronization for each (seen on an H100, CUDA 13.0). */
static void sim_event_wait(int query, uint64_t t0, uint64_t t1) {
    CUpti_ActivitySynchronization2 y;
    uint32_t r, d;
    if (!sim.enabled[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION]) return;
    pthread_mutex_lock(&mu);
    r = sim_api(query ? CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020 : CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
                query ? CUPTI_DRIVER_TRACE_CBID_cuEventQuery : CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, t0, t1, &d);
    memset(&y, 0, sizeof y);
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
    y.start = sim_ts(t0);
    y.end = sim_ts(t1);
    y.correlationId = r;
    y.streamId = 0xFFFFFFFFu;
    y.cudaEventId = 1;
    sim_put(0, &y, y.kind, 0);
    pthread_mutex_unlock(&mu);
}

uint32_t simcupti_sync(int type, cudaStream_t s) {
    CUpti_ActivitySynchronization2 y;
    uint64_t t0, t1;
    uint32_t r, d;
    pthread_mutex_lock(&mu);
    t0 = simcuda_now();
    simcuda_advance(sim.call_cost);
    if (type == SIMCUPTI_SYNC_DEVICE) cudaDeviceSynchronize();
    else cudaStreamSynchronize(s);
    t1 = simcuda_now();
    r = sim_api(type == SIMCUPTI_SYNC_DEVICE ? CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 : CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                type == SIMCUPTI_SYNC_DEVICE ? CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize : CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, t0, t1, &d);
    if (sim.enabled[CUPTI_ACTIVITY_KIND_SYNCHRONIZATION]) {
        memset(&y, 0, sizeof y);
        y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
        y.type = (CUpti_ActivitySynchronizationType)type;
        y.start = sim_ts(t0);
        y.end = sim_ts(t1);
        y.correlationId = r;
        y.streamId = type == SIMCUPTI_SYNC_DEVICE ? 0xFFFFFFFFu : sim_stream_id(s);
        y.cudaEventId = 0xFFFFFFFFu;
        sim_put(0, &y, y.kind, 0);
    }
    pthread_mutex_unlock(&mu);
    sim_periodic();
    return r;
}

/* Unfinished GPU work in a buffer delivered by force: zero timestamps, as CUPTI gives it. */
static void sim_zero_unfinished(struct sbuf *b, uint64_t now_ts) {
    size_t off = 0, n;
    while (off + 4 <= b->used && (n = sim_size(*(uint32_t *)(b->p + off))) != 0) {
        uint32_t kind = *(uint32_t *)(b->p + off);
        if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL || kind == CUPTI_ACTIVITY_KIND_MEMCPY ||
            kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            uint64_t end;
            memcpy(&end, b->p + off + 24, 8);          /* end is at 24 in all three */
            if (end > now_ts) memset(b->p + off + 16, 0, 16);
        }
        off += n;
    }
}

/* Takes the buffers to deliver (device ones first): full ones, and with
   `open` the others holding records; only those whose work is done, unless forced. */
static struct sbuf *sim_take(int open, int forced) {
    struct sbuf *out = NULL, **otail = &out, **p, *b;
    uint64_t now = simcuda_now();
    int dev;
    for (dev = 1; dev >= 0; dev--)
        for (p = &sim.bufs; (b = *p) != NULL;) {
            if (b->device == dev && (b->full || (open && b->used)) && (forced || b->done_at <= now)) {
                *p = b->next;
                b->next = NULL;
                if (forced) sim_zero_unfinished(b, sim_ts(now));
                *otail = b;
                otail = &b->next;
            } else p = &b->next;
        }
    return out;
}

static void sim_deliver(struct sbuf *list) {
    while (list) {
        struct sbuf *b = list;
        list = b->next;
        sim_in_callback = 1;
        if (sim.done) sim.done(NULL, 0, b->p, b->size, b->used);
        sim_in_callback = 0;
        pthread_mutex_lock(&mu);
        sim.delivered++;
        pthread_mutex_unlock(&mu);
        free(b);
    }
}

/* cuptiActivityFlushPeriod: CUPTI's own thread wakes every period and hands
   over the buffers whose work is done; here at the first launch after each
   period of virtual time (on the launching thread, outside any lock of gpuprof's). */
static uint64_t sim_period_ns, sim_last_period;
static void sim_periodic(void) {
    struct sbuf *list = NULL;
    pthread_mutex_lock(&mu);
    if (sim_period_ns && !sim_in_callback && simcuda_now() - sim_last_period >= sim_period_ns) {
        sim_last_period = simcuda_now();
        list = sim_take(1, 0);
    }
    pthread_mutex_unlock(&mu);
    sim_deliver(list);
}

static void *sim_worker(void *arg) {
    (void)arg;
    for (;;) {
        struct sbuf *list;
        pthread_mutex_lock(&mu);
        if (sim.worker_stop) { pthread_mutex_unlock(&mu); return NULL; }
        list = sim_take(0, 0);
        pthread_mutex_unlock(&mu);
        sim_deliver(list);
        usleep(200);
    }
}

/* ---------------- the control panel ---------------- */
void simcupti_set_delivery(int worker) {
    pthread_mutex_lock(&mu);
    if (worker && !sim.worker_on) {
        sim.worker_on = 1;
        sim.worker_stop = 0;
        pthread_create(&sim.worker, NULL, sim_worker, NULL);
    } else if (!worker && sim.worker_on) {
        sim.worker_stop = 1;
        pthread_mutex_unlock(&mu);
        pthread_join(sim.worker, NULL);
        pthread_mutex_lock(&mu);
        sim.worker_on = 0;
    }
    pthread_mutex_unlock(&mu);
}

/* The callbacks and the buffers stay: CUPTI keeps them for the process. */
void simcupti_reset(void) {
    simcupti_set_delivery(0);
    pthread_mutex_lock(&mu);
    memset(sim.fn, 0, sizeof sim.fn);
    sim.nfn = 0;
    memset(sim.enabled, 0, sizeof sim.enabled);
    memset(sim.quiet, 0, sizeof sim.quiet);
    sim.subscribed = 0;
    sim.layout = SIMCUPTI_CUDA13;
    sim.use = 0;
    sim.dropped = sim.delivered = 0;
    sim.bad_n = 0;
    sim.call_cost = 0;
    sim_last_period = 0;
    pthread_mutex_unlock(&mu);
    simcupti_pm_reset();
}
void simcupti_set_call_cost(uint64_t ns) { pthread_mutex_lock(&mu); sim.call_cost = ns; pthread_mutex_unlock(&mu); }
void simcupti_set_layout(int layout) { pthread_mutex_lock(&mu); sim.layout = layout; pthread_mutex_unlock(&mu); }
void simcupti_set_buffer_use(size_t bytes) { pthread_mutex_lock(&mu); sim.use = bytes; pthread_mutex_unlock(&mu); }
void simcupti_drop(uint64_t n) { pthread_mutex_lock(&mu); sim.dropped += n; pthread_mutex_unlock(&mu); }
void simcupti_bad_next(int n, int how) { pthread_mutex_lock(&mu); sim.bad_n = n; sim.bad_how = how; pthread_mutex_unlock(&mu); }
int simcupti_has_timestamp_callback(void) { int r; pthread_mutex_lock(&mu); r = sim.ts_cb != NULL; pthread_mutex_unlock(&mu); return r; }
uint64_t simcupti_buffers_delivered(void) { uint64_t n; pthread_mutex_lock(&mu); n = sim.delivered; pthread_mutex_unlock(&mu); return n; }
int simcupti_depth(int kind) { return kind > 0 && kind < 6 ? sim_depth[kind] : -1; }

void simcupti_fail(const char *fn, uint64_t nth, int result) {
    int i;
    pthread_mutex_lock(&mu);
    for (i = 0; i < sim.nfn && strcmp(sim.fn[i].fn, fn) != 0; i++) {}
    if (i == sim.nfn && sim.nfn < SIM_MAX_FN) { sim.fn[i].fn = fn; sim.nfn++; }
    if (i < SIM_MAX_FN) {
        sim.fn[i].fail_always = nth == 0;
        sim.fn[i].fail_at = nth ? sim.fn[i].calls + nth : 0;
        sim.fn[i].fail_with = result;
    }
    pthread_mutex_unlock(&mu);
}
uint64_t simcupti_calls(const char *fn) {
    uint64_t n = 0;
    int i;
    pthread_mutex_lock(&mu);
    for (i = 0; i < sim.nfn; i++) if (strcmp(sim.fn[i].fn, fn) == 0) n = sim.fn[i].calls;
    pthread_mutex_unlock(&mu);
    return n;
}
uint64_t simcupti_total_calls(void) {
    uint64_t n = 0;
    int i;
    pthread_mutex_lock(&mu);
    for (i = 0; i < sim.nfn; i++) n += sim.fn[i].calls;
    pthread_mutex_unlock(&mu);
    return n;
}

size_t simcupti_sample_buffer(uint8_t *buf, size_t size) {
    CUpti_ActivityExternalCorrelation x;
    CUpti_ActivityAPI a;
    CUpti_ActivityKernel10 k;
    CUpti_ActivityMemcpy6 m;
    CUpti_ActivityMemset4 s;
    CUpti_ActivitySynchronization2 y;
    const void *rec[6] = { &x, &a, &k, &m, &s, &y };
    size_t len[6] = { sizeof x, sizeof a, sizeof k, sizeof m, sizeof s, sizeof y }, off = 0;
    int i;
    memset(&x, 0, sizeof x); memset(&a, 0, sizeof a); memset(&k, 0, sizeof k);
    memset(&m, 0, sizeof m); memset(&s, 0, sizeof s); memset(&y, 0, sizeof y);
    x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION; x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2; x.externalId = 77; x.correlationId = 5;
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME; a.cbid = 211; a.start = 100; a.end = 110; a.correlationId = 5;
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL; k.start = 200; k.end = 300; k.correlationId = 5; k.gridX = 7; k.blockX = 9; k.name = "sample";
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY; m.copyKind = 1; m.srcKind = 1; m.bytes = 4096; m.start = 400; m.end = 500; m.correlationId = 6; m.runtimeCorrelationId = 5;
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET; s.bytes = 64; s.start = 600; s.end = 650; s.correlationId = 6;
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION; y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE; y.start = 700; y.end = 900; y.correlationId = 8;
    for (i = 0; i < 6; i++) {
        if (off + len[i] > size) return off;
        memcpy(buf + off, rec[i], len[i]);
        off += len[i];
    }
    return off;
}

/* ---------------- CUPTI ---------------- */
static uint32_t sim_version;      /* simcupti_set_version (0: by the layout) */
CUptiResult cuptiGetVersion(uint32_t *version) {
    ENTER("cuptiGetVersion");
    *version = sim_version ? sim_version : sim.layout == SIMCUPTI_CUDA12 ? 28 : 130001;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiGetResultString(CUptiResult result, const char **str) {
    ENTER("cuptiGetResultString");
    switch ((int)result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_NOT_INITIALIZED: *str = "CUPTI_ERROR_NOT_INITIALIZED"; break;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: *str = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_UNKNOWN: *str = "CUPTI_ERROR_UNKNOWN"; break;
    default: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
    }
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata) {
    ENTER("cuptiSubscribe");
    (void)callback; (void)userdata;
    if (sim.subscribed) LEAVE(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    sim.subscribed = 1;
    *subscriber = (CUpti_SubscriberHandle)&sim;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
    ENTER("cuptiUnsubscribe");
    (void)subscriber;
    sim.subscribed = 0;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done) {
    ENTER("cuptiActivityRegisterCallbacks");
    sim.req = req;
    sim.done = done;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn) {
    ENTER("cuptiActivityRegisterTimestampCallback");
    sim.ts_cb = fn;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
    ENTER("cuptiActivityEnable");
    if ((int)kind <= 0 || (int)kind >= 64) LEAVE(CUPTI_ERROR_INVALID_KIND);
    sim.enabled[kind] = 1;
    /* as the real one: enabling RUNTIME or DRIVER records every call of it again */
    if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) memset(sim.quiet[0], 0, sizeof sim.quiet[0]);
    if (kind == CUPTI_ACTIVITY_KIND_DRIVER) memset(sim.quiet[1], 0, sizeof sim.quiet[1]);
    if (kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) simcuda_event_hook = sim_event_wait;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
    ENTER("cuptiActivityDisable");
    if ((int)kind <= 0 || (int)kind >= 64) LEAVE(CUPTI_ERROR_INVALID_KIND);
    sim.enabled[kind] = 0;
    LEAVE(CUPTI_SUCCESS);
}
#ifndef SIMCUPTI_WITHOUT_FLUSHALL
CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    struct sbuf *list;
    ENTER("cuptiActivityFlushAll");
    if (sim_in_callback) {
        fprintf(stderr, "simcupti: cuptiActivityFlushAll called from inside a buffer callback (CUPTI deadlocks there)\n");
        abort();
    }
    list = sim_take(1, (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0);
    pthread_mutex_unlock(&mu);
    sim_deliver(list);
    return CUPTI_SUCCESS;
}
#endif
CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record) {
    size_t off, n;
    uint32_t kind;
    ENTER("cuptiActivityGetNextRecord");
    if (!buffer || !record) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    off = *record ? (size_t)((uint8_t *)*record - buffer) + sim_size(*(uint32_t *)*record) : 0;
    if (off + 4 > valid) LEAVE(CUPTI_ERROR_MAX_LIMIT_REACHED);
    memcpy(&kind, buffer + off, 4);
    if (!(n = sim_size(kind))) LEAVE(CUPTI_ERROR_INVALID_KIND);
    if (off + n > valid) LEAVE(CUPTI_ERROR_MAX_LIMIT_REACHED);
    *record = (CUpti_Activity *)(buffer + off);
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *dropped) {
    ENTER("cuptiActivityGetNumDroppedRecords");
    (void)ctx; (void)stream;
    *dropped = (size_t)sim.dropped;
    sim.dropped = 0;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id) {
    ENTER("cuptiActivityPushExternalCorrelationId");
    if ((int)kind <= 0 || (int)kind >= 6 || sim_depth[kind] == SIM_STACK) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    sim_stack[kind][sim_depth[kind]++] = id;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t *last) {
    ENTER("cuptiActivityPopExternalCorrelationId");
    if ((int)kind <= 0 || (int)kind >= 6) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    if (!sim_depth[kind]) LEAVE(CUPTI_ERROR_QUEUE_EMPTY);
    *last = sim_stack[kind][--sim_depth[kind]];
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiGetTimestamp(uint64_t *ts) {
    ENTER("cuptiGetTimestamp");
    *ts = sim_ts(simcuda_now());
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiActivityFlushPeriod(uint32_t ms) {
    ENTER("cuptiActivityFlushPeriod");
    sim_period_ns = (uint64_t)ms * 1000000u;   /* kept for the process, as CUPTI keeps it */
    LEAVE(CUPTI_SUCCESS);
}
static CUptiResult sim_quiet(int driver, CUpti_CallbackId cbid, uint8_t enable) {
    if (cbid >= 1024) return CUPTI_ERROR_INVALID_PARAMETER;
    sim.quiet[driver][cbid] = !enable;
    return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
    ENTER("cuptiActivityEnableRuntimeApi");
    LEAVE(sim_quiet(0, cbid, enable));
}
CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
    ENTER("cuptiActivityEnableDriverApi");
    LEAVE(sim_quiet(1, cbid, enable));
}
CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *size, void *value) {
    ENTER("cuptiActivitySetAttribute");
    if (!size || !value) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    if (attr != CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER) LEAVE(CUPTI_SUCCESS);   /* the others change nothing here */
    if (*size != sizeof(uint8_t)) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    sim.zeroed_attr = *(uint8_t *)value != 0;
    LEAVE(CUPTI_SUCCESS);
}
int simcupti_zeroed_attr(void) { return sim.zeroed_attr; }
uint64_t simcupti_nonzero_buffers(void) { return sim.nonzero_buffers; }
int simcupti_api_quiet(int driver, uint32_t cbid) { return cbid < 1024 && sim.quiet[driver ? 1 : 0][cbid]; }
CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
    ENTER("cuptiSetThreadIdType");
    (void)type;                     /* records always carry gettid() here */
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiFinalize(void) {
    ENTER("cuptiFinalize");
    LEAVE(CUPTI_SUCCESS);
}

/* ---------------- PM sampling (SPEC 21) ----------------
   A sampler over the simulated GPU: every kernel launched (any way) is
   kept with its virtual start and end; a sample [t, t + interval) holds,
   per metric, the sum over the kernels running in it of their profile's
   value times the share of the sample they ran (percentages capped at
   100), so idle gaps read 0 and a range's figures are its kernels'. The
   host half accepts the names of simcupti_pm_names on the chips it knows;
   its config image lists the metrics by index. Samples are made when
   decoded, up to the virtual clock (whole intervals only). */
#include <cupti_target.h>
#include <cupti_profiler_target.h>
#include <cupti_pmsampling.h>

static const char *const sim_pm_names[SIMCUPTI_PM_N + 1] = {
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed", "sm__warps_active_realtime.avg.pct_of_peak_sustained_active",
    "tpc__warps_active_shader_cs_realtime.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__read_throughput.avg.pct_of_peak_sustained_elapsed", "dram__write_throughput.avg.pct_of_peak_sustained_elapsed",
    "pcie__read_bytes.sum.per_second", "pcie__write_bytes.sum.per_second", "nvlrx__bytes.sum.per_second", "nvltx__bytes.sum.per_second",
    "TPC.TriageCompute.tpc__warps_active_realtime.avg.pct_of_peak_sustained_elapsed"   /* GH100's other name for warps in flight */
};
#define SIM_PM_KERNELS 65536
#define SIM_PM_PROFILES 32
/* The host half's objects (C copies of cupti_profiler_host.h's structs, as gpuprof's). */
typedef struct { size_t structSize; void *pPriv; int profilerType; const char *pChipName; uint8_t *pAvail; void *pHostObject; } sim_host_init;
typedef struct { size_t structSize; void *pPriv; void *pHostObject; } sim_host_deinit;
typedef struct { size_t structSize; void *pPriv; void *pHostObject; const char **ppMetricNames; size_t numMetrics; } sim_host_add;
typedef struct { size_t structSize; void *pPriv; void *pHostObject; size_t configImageSize; } sim_host_size;
typedef struct { size_t structSize; void *pPriv; void *pHostObject; size_t configImageSize; uint8_t *pConfigImage; } sim_host_image;
typedef struct { size_t structSize; void *pPriv; size_t configImageSize; uint8_t *pConfigImage; size_t numOfPasses; } sim_host_passes;
typedef struct {
    size_t structSize; void *pPriv; void *pHostObject; uint8_t *pCounterDataImage; size_t counterDataImageSize, rangeIndex;
    const char **ppMetricNames; size_t numMetrics; double *pMetricValues;
} sim_host_eval;
struct sim_host { char chip[32]; int n, idx[64]; };
/* A counter data image: this header, then `cap` samples. */
struct sim_pm_image { uint32_t magic, cap, count, pad; };
struct sim_pm_entry { uint64_t start, end; double v[SIMCUPTI_PM_N]; };

static struct {
    struct { uint64_t a, b; int prof; } k[SIM_PM_KERNELS];
    uint64_t nk;
    struct { char name[64]; double v[SIMCUPTI_PM_N]; } prof[SIM_PM_PROFILES];
    int nprof;
    char chip[32];
    int support[7];                   /* isSupported, architecture, sli, vGpu, confidentialCompute, cmp, wsl */
    int max_metrics, enabled, started, overflowed, hang, inited;
    char reject[SIMCUPTI_PM_N + 1];
    int idx[SIMCUPTI_PM_N + 1], n;    /* the configured metrics, by index into sim_pm_names */
    uint64_t interval, next, stop_at, made, overflow_after;
    int trigger;
    size_t hwbuf;
} pm;
static pthread_cond_t pm_cond = PTHREAD_COND_INITIALIZER;

void simcupti_pm_reset(void) {
    int inited;
    pthread_mutex_lock(&mu);
    inited = pm.inited;                   /* cuptiProfilerInitialize holds for the process */
    memset(&pm, 0, sizeof pm);
    pm.inited = inited;
    strcpy(pm.chip, "GH100");
    for (int i = 0; i < 7; i++) pm.support[i] = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
    sim_version = 0;
    pthread_cond_broadcast(&pm_cond);
    pthread_mutex_unlock(&mu);
}
void simcupti_set_version(uint32_t v) { pthread_mutex_lock(&mu); sim_version = v; pthread_mutex_unlock(&mu); }
void simcupti_pm_profile(const char *kernel, const double v[SIMCUPTI_PM_N]) {
    pthread_mutex_lock(&mu);
    if (pm.nprof < SIM_PM_PROFILES) {
        snprintf(pm.prof[pm.nprof].name, sizeof pm.prof[pm.nprof].name, "%s", kernel);
        memcpy(pm.prof[pm.nprof++].v, v, sizeof pm.prof[0].v);
    }
    pthread_mutex_unlock(&mu);
}
void simcupti_pm_chip(const char *chip) { pthread_mutex_lock(&mu); snprintf(pm.chip, sizeof pm.chip, "%s", chip); pthread_mutex_unlock(&mu); }
void simcupti_pm_support(int field, int level) { pthread_mutex_lock(&mu); if (field >= 0 && field < 7) pm.support[field] = level; pthread_mutex_unlock(&mu); }
void simcupti_pm_max_metrics(int n) { pthread_mutex_lock(&mu); pm.max_metrics = n; pthread_mutex_unlock(&mu); }
void simcupti_pm_reject(const char *metric) {
    pthread_mutex_lock(&mu);
    for (int i = 0; i <= SIMCUPTI_PM_N; i++) if (!strcmp(sim_pm_names[i], metric)) pm.reject[i] = 1;
    pthread_mutex_unlock(&mu);
}
void simcupti_pm_overflow_after(uint64_t samples) { pthread_mutex_lock(&mu); pm.overflow_after = samples; pthread_mutex_unlock(&mu); }
void simcupti_pm_hang(int on) { pthread_mutex_lock(&mu); pm.hang = on; pthread_cond_broadcast(&pm_cond); pthread_mutex_unlock(&mu); }
uint64_t simcupti_pm_samples(void) { uint64_t n; pthread_mutex_lock(&mu); n = pm.made; pthread_mutex_unlock(&mu); return n; }
int simcupti_pm_state(void) { int s; pthread_mutex_lock(&mu); s = pm.started ? 2 : pm.enabled ? 1 : 0; pthread_mutex_unlock(&mu); return s; }
uint64_t simcupti_pm_interval(void) { uint64_t n; pthread_mutex_lock(&mu); n = pm.interval; pthread_mutex_unlock(&mu); return n; }
int simcupti_pm_trigger(void) { int n; pthread_mutex_lock(&mu); n = pm.trigger; pthread_mutex_unlock(&mu); return n; }

/* Under mu: a kernel the GPU runs in [start, start + dur). */
static void sim_pm_kernel(const char *name, uint64_t start, uint64_t dur) {
    int p;
    for (p = 0; p < pm.nprof && strcmp(pm.prof[p].name, name) != 0; p++) {}
    pm.k[pm.nk % SIM_PM_KERNELS].a = start;
    pm.k[pm.nk % SIM_PM_KERNELS].b = start + dur;
    pm.k[pm.nk++ % SIM_PM_KERNELS].prof = p < pm.nprof ? p : -1;
}

/* Under mu: the sample [t, t + interval). */
static void sim_pm_sample(uint64_t t, struct sim_pm_entry *e) {
    uint64_t i, from = pm.nk > SIM_PM_KERNELS ? pm.nk - SIM_PM_KERNELS : 0, end = t + pm.interval;
    int m;
    memset(e, 0, sizeof *e);
    e->start = sim_ts(t);
    e->end = sim_ts(end);
    for (i = from; i < pm.nk; i++) {
        uint64_t a = pm.k[i % SIM_PM_KERNELS].a, b = pm.k[i % SIM_PM_KERNELS].b;
        int p = pm.k[i % SIM_PM_KERNELS].prof;
        double share;
        if (p < 0 || b <= t || a >= end) continue;
        share = (double)((b < end ? b : end) - (a > t ? a : t)) / (double)pm.interval;
        for (m = 0; m < SIMCUPTI_PM_N; m++) e->v[m] += share * pm.prof[p].v[m];
    }
    for (m = 0; m < SIMCUPTI_PM_N; m++) if (m < SIMCUPTI_PM_PCIE_RD && e->v[m] > 100) e->v[m] = 100;
}

static int sim_pm_index(const char *name) {
    for (int i = 0; i <= SIMCUPTI_PM_N; i++) if (!strcmp(sim_pm_names[i], name)) return i == SIMCUPTI_PM_N ? SIMCUPTI_PM_WARPS : i;
    return -1;
}

CUptiResult cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params *p) {
    ENTER("cuptiProfilerInitialize");
    (void)p;
    pm.inited = 1;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params *p) { ENTER("cuptiProfilerDeInitialize"); (void)p; pm.inited = 0; LEAVE(CUPTI_SUCCESS); }
CUptiResult cuptiProfilerDeviceSupported(CUpti_Profiler_DeviceSupported_Params *p) {
    ENTER("cuptiProfilerDeviceSupported");
    if (!pm.inited) LEAVE(CUPTI_ERROR_NOT_INITIALIZED);
    if (p->structSize < CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    p->isSupported = (CUpti_Profiler_Support_Level)pm.support[0];
    p->architecture = (CUpti_Profiler_Support_Level)pm.support[1];
    p->sli = (CUpti_Profiler_Support_Level)pm.support[2];
    p->vGpu = (CUpti_Profiler_Support_Level)pm.support[3];
    p->confidentialCompute = (CUpti_Profiler_Support_Level)pm.support[4];
    p->cmp = (CUpti_Profiler_Support_Level)pm.support[5];
    p->wsl = (CUpti_Profiler_Support_Level)pm.support[6];
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params *p) {
    ENTER("cuptiDeviceGetChipName");
    if (!pm.inited) { pthread_mutex_unlock(&mu); abort(); }     /* as the real one crashes there (FACTS-pmsampling 1.2) */
    p->pChipName = pm.chip;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiPmSamplingGetCounterAvailability(CUpti_PmSampling_GetCounterAvailability_Params *p) {
    ENTER("cuptiPmSamplingGetCounterAvailability");
    if (!p->pCounterAvailabilityImage) p->counterAvailabilityImageSize = 64;
    else memset(p->pCounterAvailabilityImage, 0xa5, p->counterAvailabilityImageSize);
    LEAVE(CUPTI_SUCCESS);
}
static int sim_chip_known(const char *chip) {
    static const char *const known[] = { "TU102", "TU104", "TU106", "TU116", "GA100", "GA102", "GA104", "GH100", "AD102", "GB100", NULL };
    if (!strcmp(chip, "GV100")) return 0;
    for (int i = 0; known[i]; i++) if (!strcmp(known[i], chip)) return 1;
    return -1;
}
CUptiResult cuptiProfilerHostInitialize(sim_host_init *p) {
    struct sim_host *h;
    int k;
    ENTER("cuptiProfilerHostInitialize");
    if (!p->pChipName || (k = sim_chip_known(p->pChipName)) < 0) LEAVE(CUPTI_ERROR_INVALID_CHIP_NAME);
    if (k == 0) LEAVE(CUPTI_ERROR_NOT_SUPPORTED);
    h = (struct sim_host *)calloc(1, sizeof *h);
    snprintf(h->chip, sizeof h->chip, "%s", p->pChipName);
    p->pHostObject = h;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiProfilerHostDeinitialize(sim_host_deinit *p) { ENTER("cuptiProfilerHostDeinitialize"); free(p->pHostObject); LEAVE(CUPTI_SUCCESS); }
CUptiResult cuptiProfilerHostConfigAddMetrics(sim_host_add *p) {
    struct sim_host *h = (struct sim_host *)p->pHostObject;
    ENTER("cuptiProfilerHostConfigAddMetrics");
    for (size_t i = 0; i < p->numMetrics; i++) {
        int k = -1;
        for (int j = 0; j <= SIMCUPTI_PM_N; j++) if (!strcmp(sim_pm_names[j], p->ppMetricNames[i])) k = j;
        /* GH100 has warps in flight only under its group's name; the others only under the plain one */
        if (k < 0 || pm.reject[k] || (k == SIMCUPTI_PM_N && strcmp(h->chip, "GH100") != 0) || h->n == 64) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
        h->idx[h->n++] = k;
    }
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiProfilerHostGetConfigImageSize(sim_host_size *p) {
    ENTER("cuptiProfilerHostGetConfigImageSize");
    p->configImageSize = 8 + 4 * (size_t)((struct sim_host *)p->pHostObject)->n;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiProfilerHostGetConfigImage(sim_host_image *p) {
    struct sim_host *h = (struct sim_host *)p->pHostObject;
    uint32_t head[2] = { 0x53504d31u, (uint32_t)h->n };
    ENTER("cuptiProfilerHostGetConfigImage");
    if (p->configImageSize < 8 + 4 * (size_t)h->n) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    memcpy(p->pConfigImage, head, 8);
    for (int i = 0; i < h->n; i++) { uint32_t k = (uint32_t)h->idx[i]; memcpy(p->pConfigImage + 8 + 4 * i, &k, 4); }
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiProfilerHostGetNumOfPasses(sim_host_passes *p) {
    uint32_t head[2];
    ENTER("cuptiProfilerHostGetNumOfPasses");
    memcpy(head, p->pConfigImage, 8);
    p->numOfPasses = pm.max_metrics < 0 ? 2 : pm.max_metrics && (int)head[1] > pm.max_metrics ? 2 : 1;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiProfilerHostEvaluateToGpuValues(sim_host_eval *p) {
    struct sim_pm_image *im = (struct sim_pm_image *)p->pCounterDataImage;
    struct sim_pm_entry *e = (struct sim_pm_entry *)(im + 1);
    ENTER("cuptiProfilerHostEvaluateToGpuValues");
    if (p->rangeIndex >= im->count) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    for (size_t i = 0; i < p->numMetrics; i++) {
        int k = sim_pm_index(p->ppMetricNames[i]);
        if (k < 0) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
        p->pMetricValues[i] = e[p->rangeIndex].v[k];
    }
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiPmSamplingEnable(CUpti_PmSampling_Enable_Params *p) {
    ENTER("cuptiPmSamplingEnable");
    if (pm.enabled) LEAVE(CUPTI_ERROR_INVALID_OPERATION);
    pm.enabled = 1;
    p->pPmSamplingObject = (CUpti_PmSampling_Object *)&pm;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiPmSamplingSetConfig(CUpti_PmSampling_SetConfig_Params *p) {
    uint32_t head[2];
    ENTER("cuptiPmSamplingSetConfig");
    if (!pm.enabled || p->pPmSamplingObject != (CUpti_PmSampling_Object *)&pm || !p->pConfig || p->configSize < 8 || !p->samplingInterval)
        LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    memcpy(head, p->pConfig, 8);
    if (head[0] != 0x53504d31u || head[1] > SIMCUPTI_PM_N + 1) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    if (pm.max_metrics < 0 || (pm.max_metrics && (int)head[1] > pm.max_metrics)) LEAVE(CUPTI_ERROR_NOT_SUPPORTED);
    pm.n = (int)head[1];
    for (int i = 0; i < pm.n; i++) { uint32_t k; memcpy(&k, p->pConfig + 8 + 4 * i, 4); pm.idx[i] = (int)k; }
    pm.interval = p->samplingInterval;     /* SYS clock cycles count as ns here: a 1 GHz SYS clock */
    pm.trigger = (int)p->triggerMode;
    pm.hwbuf = p->hardwareBufferSize;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiPmSamplingGetCounterDataSize(CUpti_PmSampling_GetCounterDataSize_Params *p) {
    ENTER("cuptiPmSamplingGetCounterDataSize");
    if (!pm.enabled) LEAVE(CUPTI_ERROR_INVALID_OPERATION);
    p->counterDataSize = sizeof(struct sim_pm_image) + p->maxSamples * sizeof(struct sim_pm_entry);
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiPmSamplingCounterDataImageInitialize(CUpti_PmSampling_CounterDataImage_Initialize_Params *p) {
    struct sim_pm_image *im = (struct sim_pm_image *)p->pCounterData;
    ENTER("cuptiPmSamplingCounterDataImageInitialize");
    if (p->counterDataSize < sizeof *im) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    im->magic = 0x53504d32u;
    im->cap = (uint32_t)((p->counterDataSize - sizeof *im) / sizeof(struct sim_pm_entry));
    im->count = 0;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiPmSamplingStart(CUpti_PmSampling_Start_Params *p) {
    ENTER("cuptiPmSamplingStart");
    (void)p;
    if (!pm.enabled || !pm.interval) LEAVE(CUPTI_ERROR_INVALID_OPERATION);
    pm.started = 1;
    pm.next = simcuda_now();
    pm.stop_at = 0;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiPmSamplingStop(CUpti_PmSampling_Stop_Params *p) {
    ENTER("cuptiPmSamplingStop");
    (void)p;
    if (pm.started) pm.stop_at = simcuda_now();
    pm.started = 0;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiPmSamplingDisable(CUpti_PmSampling_Disable_Params *p) {
    ENTER("cuptiPmSamplingDisable");
    (void)p;
    pm.enabled = pm.started = 0;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiPmSamplingDecodeData(CUpti_PmSampling_DecodeData_Params *p) {
    struct sim_pm_image *im = (struct sim_pm_image *)p->pCounterDataImage;
    struct sim_pm_entry *e = (struct sim_pm_entry *)(im + 1);
    uint64_t until;
    ENTER("cuptiPmSamplingDecodeData");
    while (pm.hang) pthread_cond_wait(&pm_cond, &mu);            /* a decode that does not return (until simcupti_pm_hang(0)) */
    if (pm.overflowed) LEAVE(CUPTI_ERROR_OUT_OF_MEMORY);        /* for the rest of the session, as reported of the real one */
    until = pm.started ? simcuda_now() : pm.stop_at;
    im->count = 0;
    while (pm.interval && pm.next + pm.interval <= until && im->count < im->cap) {
        if (pm.overflow_after && pm.made >= pm.overflow_after) {
            pm.overflowed = 1;
            p->overflow = 1;
            LEAVE(CUPTI_ERROR_OUT_OF_MEMORY);
        }
        sim_pm_sample(pm.next, &e[im->count++]);
        pm.next += pm.interval;
        pm.made++;
    }
    p->decodeStopReason = pm.interval && pm.next + pm.interval <= until ? CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL
                                                                       : CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS;
    p->overflow = 0;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiPmSamplingGetCounterDataInfo(CUpti_PmSampling_GetCounterDataInfo_Params *p) {
    const struct sim_pm_image *im = (const struct sim_pm_image *)p->pCounterDataImage;
    ENTER("cuptiPmSamplingGetCounterDataInfo");
    p->numTotalSamples = im->cap;
    p->numPopulatedSamples = p->numCompletedSamples = im->count;
    LEAVE(CUPTI_SUCCESS);
}
CUptiResult cuptiPmSamplingCounterDataGetSampleInfo(CUpti_PmSampling_CounterData_GetSampleInfo_Params *p) {
    const struct sim_pm_image *im = (const struct sim_pm_image *)p->pCounterDataImage;
    const struct sim_pm_entry *e = (const struct sim_pm_entry *)(im + 1);
    ENTER("cuptiPmSamplingCounterDataGetSampleInfo");
    if (p->sampleIndex >= im->count) LEAVE(CUPTI_ERROR_INVALID_PARAMETER);
    p->startTimestamp = e[p->sampleIndex].start;
    p->endTimestamp = e[p->sampleIndex].end;
    LEAVE(CUPTI_SUCCESS);
}
