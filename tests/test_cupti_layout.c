/* gpuprof reads CUPTI's records at fixed offsets (it cannot include the
   CUPTI headers). This test, built against the toolkit's headers, checks
   every offset against offsetof() for each record version gpuprof reads
   (CUDA 12's and 13's), then builds a buffer of real records, walks it with
   the real libcupti's cuptiActivityGetNextRecord (which needs no driver),
   and reads each record with gpuprof's own reader.
   argv[1]: the toolkit's libcupti (the walk is skipped, exit 77, without it). */
#include <cupti.h>
#define GPUPROF_IMPLEMENTATION
#include "gpuprof.h"
#include "check.h"
#include <stddef.h>

#define SAME(type, field, off) _Static_assert(offsetof(type, field) == (off), #type "." #field " is where gpuprof reads it")
#define SAME_KERNEL(t) SAME(t, kind, 0); SAME(t, registersPerThread, GPUPROF__KO_REGS); SAME(t, start, GPUPROF__KO_START); \
    SAME(t, end, GPUPROF__KO_END); SAME(t, deviceId, GPUPROF__KO_DEVICE); SAME(t, streamId, GPUPROF__KO_STREAM); \
    SAME(t, gridX, GPUPROF__KO_GRID); SAME(t, gridY, GPUPROF__KO_GRID + 4); SAME(t, gridZ, GPUPROF__KO_GRID + 8); \
    SAME(t, blockX, GPUPROF__KO_BLOCK); SAME(t, blockZ, GPUPROF__KO_BLOCK + 8); SAME(t, staticSharedMemory, GPUPROF__KO_SSMEM); \
    SAME(t, dynamicSharedMemory, GPUPROF__KO_DSMEM); SAME(t, correlationId, GPUPROF__KO_CORR); SAME(t, name, GPUPROF__KO_NAME); \
    SAME(t, graphId, GPUPROF__KO_GRAPH); _Static_assert(sizeof(t) >= GPUPROF__KO_SIZE, #t " holds every field gpuprof reads")
SAME_KERNEL(CUpti_ActivityKernel10);
SAME_KERNEL(CUpti_ActivityKernel9);
SAME_KERNEL(CUpti_ActivityKernel5);
#define SAME_MEMCPY(t) SAME(t, copyKind, GPUPROF__MO_COPYKIND); SAME(t, srcKind, GPUPROF__MO_SRCKIND); SAME(t, dstKind, GPUPROF__MO_DSTKIND); \
    SAME(t, bytes, GPUPROF__MO_BYTES); SAME(t, start, GPUPROF__MO_START); SAME(t, end, GPUPROF__MO_END); SAME(t, deviceId, GPUPROF__MO_DEVICE); \
    SAME(t, streamId, GPUPROF__MO_STREAM); SAME(t, correlationId, GPUPROF__MO_CORR); SAME(t, runtimeCorrelationId, GPUPROF__MO_RTCORR); \
    _Static_assert(sizeof(t) >= GPUPROF__MO_SIZE, #t " holds every field gpuprof reads")
SAME_MEMCPY(CUpti_ActivityMemcpy6);
SAME_MEMCPY(CUpti_ActivityMemcpy5);
SAME(CUpti_ActivityMemset4, bytes, GPUPROF__SO_BYTES); SAME(CUpti_ActivityMemset4, start, GPUPROF__SO_START);
SAME(CUpti_ActivityMemset4, end, GPUPROF__SO_END); SAME(CUpti_ActivityMemset4, deviceId, GPUPROF__SO_DEVICE);
SAME(CUpti_ActivityMemset4, streamId, GPUPROF__SO_STREAM); SAME(CUpti_ActivityMemset4, correlationId, GPUPROF__SO_CORR);
SAME(CUpti_ActivityMemset4, memoryKind, GPUPROF__SO_MEMKIND);
SAME(CUpti_ActivityAPI, cbid, GPUPROF__AO_CBID); SAME(CUpti_ActivityAPI, start, GPUPROF__AO_START); SAME(CUpti_ActivityAPI, end, GPUPROF__AO_END);
SAME(CUpti_ActivityAPI, threadId, GPUPROF__AO_TID); SAME(CUpti_ActivityAPI, correlationId, GPUPROF__AO_CORR);
#define SAME_SYNC(t) SAME(t, type, GPUPROF__YO_TYPE); SAME(t, start, GPUPROF__YO_START); SAME(t, end, GPUPROF__YO_END); \
    SAME(t, correlationId, GPUPROF__YO_CORR); SAME(t, streamId, GPUPROF__YO_STREAM)
SAME_SYNC(CUpti_ActivitySynchronization2);
SAME_SYNC(CUpti_ActivitySynchronization);
SAME(CUpti_ActivityExternalCorrelation, externalKind, GPUPROF__XO_KIND); SAME(CUpti_ActivityExternalCorrelation, externalId, GPUPROF__XO_ID);
SAME(CUpti_ActivityExternalCorrelation, correlationId, GPUPROF__XO_CORR);
/* gpuprof's numbers are CUPTI's */
#define EQ(a, b) ((int)(a) == (int)(b))
_Static_assert(EQ(GPUPROF__AK_CONC_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) && EQ(GPUPROF__AK_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY) &&
               EQ(GPUPROF__AK_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET) && EQ(GPUPROF__AK_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) &&
               EQ(GPUPROF__AK_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME) && EQ(GPUPROF__AK_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER) &&
               EQ(GPUPROF__AK_EXTCORR, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) && EQ(GPUPROF__AK_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL), "activity kinds");
_Static_assert(EQ(GPUPROF__EXT_CUSTOM2, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2) && EQ(GPUPROF__FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) &&
               EQ(GPUPROF__ATTR_ZEROED_OUT, CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER), "kinds, flags and attributes");
_Static_assert(EQ(GPUPROF__CU_MAX_LIMIT, CUPTI_ERROR_MAX_LIMIT_REACHED) && EQ(GPUPROF__CU_INVALID_KIND, CUPTI_ERROR_INVALID_KIND) &&
               EQ(GPUPROF__CU_MULTIPLE, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) && EQ(GPUPROF__CU_UNKNOWN, CUPTI_ERROR_UNKNOWN) &&
               EQ(GPUPROF__CU_NOT_INITIALIZED, CUPTI_ERROR_NOT_INITIALIZED) && EQ(GPUPROF__CU_PRIVILEGES, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), "results");
_Static_assert(EQ(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1) && EQ(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 2) && EQ(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 8) &&
               EQ(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, 9) && EQ(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, 10) && EQ(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 1) &&
               EQ(CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 2), "copy directions and memory kinds as gpuprof__kc_take maps them");
_Static_assert(EQ(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 1) && EQ(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 2) &&
               EQ(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 3) && EQ(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 4),
               "synchronization types as gpuprof__kc_take maps them");

int main(int argc, char **argv) {
    CUpti_ActivityExternalCorrelation x;
    CUpti_ActivityAPI a;
    CUpti_ActivityKernel10 k;
    CUpti_ActivityMemcpy6 m;
    CUpti_ActivityMemset4 s;
    CUpti_ActivitySynchronization2 y;
    const void *rec[6] = { &x, &a, &k, &m, &s, &y };
    const size_t len[6] = { sizeof x, sizeof a, sizeof k, sizeof m, sizeof s, sizeof y };
    static uint8_t buf[4096] __attribute__((aligned(8)));
    size_t off = 0, i;
    void *lib;
    CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
    CUpti_Activity *r = NULL;
    gpuprof__krec got[6];
    int n = 0, gpu = 0;
    memset(&x, 0, sizeof x); memset(&a, 0, sizeof a); memset(&k, 0, sizeof k); memset(&m, 0, sizeof m); memset(&s, 0, sizeof s); memset(&y, 0, sizeof y);
    x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION; x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2; x.externalId = 0x123456789ull; x.correlationId = 41;
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME; a.cbid = 211; a.start = 1000; a.end = 1100; a.threadId = 4242; a.correlationId = 41;
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL; k.registersPerThread = 40; k.start = 2000; k.end = 2500; k.streamId = 13;
    k.gridX = 80; k.gridY = 2; k.gridZ = 1; k.blockX = 256; k.blockY = 1; k.blockZ = 1; k.staticSharedMemory = 4096; k.dynamicSharedMemory = 8192;
    k.correlationId = 41; k.name = "layout_kernel";
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY; m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH; m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED; m.bytes = 1 << 20; m.start = 3000; m.end = 3700; m.streamId = 13; m.correlationId = 43; m.runtimeCorrelationId = 42;
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET; s.bytes = 512; s.start = 4000; s.end = 4010; s.streamId = 14; s.correlationId = 45;
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION; y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE; y.start = 5000; y.end = 9000;
    y.correlationId = 47; y.streamId = 13;
    for (i = 0; i < 6; i++) { memcpy(buf + off, rec[i], len[i]); off += len[i]; }
    CHECK(1, "every offset gpuprof reads matches the toolkit's headers (checked when this file compiled)");
    {
        /* the CUDA calls whose API records gpuprof turns off, by the headers' names */
        static const uint16_t rt[] = {
            CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020,
            CUPTI_RUNTIME_TRACE_CBID_cudaEventElapsedTime_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000,
            CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_ptsz_v10000,
            CUPTI_RUNTIME_TRACE_CBID_cudaThreadExchangeStreamCaptureMode_v10010, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010,
            CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010, CUPTI_RUNTIME_TRACE_CBID_cudaEventElapsedTime_v12080 };
        static const uint16_t drv[] = {
            CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, CUPTI_DRIVER_TRACE_CBID_cuEventRecord, CUPTI_DRIVER_TRACE_CBID_cuEventElapsedTime,
            CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz, CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing,
            CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing_ptsz, CUPTI_DRIVER_TRACE_CBID_cuThreadExchangeStreamCaptureMode,
            CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags, CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz,
            CUPTI_DRIVER_TRACE_CBID_cuEventElapsedTime_v2 };
        CHECK(sizeof rt == sizeof gpuprof__kc_quiet_rt && !memcmp(rt, gpuprof__kc_quiet_rt, sizeof rt),
              "the runtime calls of a GPU-timed range gpuprof quiets are those the headers name");
        CHECK(sizeof drv == sizeof gpuprof__kc_quiet_drv && !memcmp(drv, gpuprof__kc_quiet_drv, sizeof drv),
              "... and the driver calls under them");
    }
    if (argc < 2 || !(lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) {
        printf("no libcupti (%s): the walk with the real library is skipped\n", argc < 2 ? "not given" : dlerror());
        return check_failed ? 1 : 77;
    }
    {
        void *f = dlsym(lib, "cuptiActivityGetNextRecord");
        memcpy(&next, &f, sizeof f);
    }
    CHECK(next != NULL, "the real libcupti exports cuptiActivityGetNextRecord");
    if (!next) return check_done("test_cupti_layout");
    /* gpuprof's reader, on the trace's clock = CUPTI's (the callback's) */
    gpuprof__kc.map = (gpuprof__kcorr *)calloc(GPUPROF__KC_MAP, sizeof *gpuprof__kc.map);
    gpuprof__kc.kern = (gpuprof__kernel **)calloc(GPUPROF__KC_KERNELS, sizeof *gpuprof__kc.kern);
    gpuprof__kc.kern_hash = (uint32_t *)calloc(GPUPROF__KC_KERNELS * 2, sizeof *gpuprof__kc.kern_hash);
    gpuprof__kc.ts_cb = 1;
    gpuprof__kc.epoch = 0;
    while (next(buf, off, &r) == CUPTI_SUCCESS) {
        if (n < 6 && gpuprof__kc_read((const uint8_t *)r, &got[gpu])) gpu++;
        n++;
    }
    CHECK_EQ_U(n, 6, "the real cuptiActivityGetNextRecord walks the 6 records (CUDA 13 layouts)");
    CHECK_EQ_U(gpu, 4, "gpuprof reads 4 of them as GPU records (kernel, copy, memset, sync)");
    {
        const gpuprof__kcorr *c = &gpuprof__kc.map[41 & (GPUPROF__KC_MAP - 1)];
        CHECK(c->corr == 41 && c->ext == 0x123456789ull, "the external correlation id, on correlation 41");
        CHECK(c->has_api && c->api_ns == 1000 && c->tid == 4242, "the launch: CPU time and thread");
    }
    CHECK(got[0].kind == GPUPROF__KR_KERNEL && got[0].start == 2000 && got[0].end == 2500 && got[0].corr == 41, "kernel: times and correlation");
    CHECK(got[0].grid[0] == 80 && got[0].grid[1] == 2 && got[0].block[0] == 256 && got[0].regs == 40 && got[0].smem == 12288 && got[0].stream == 13,
          "kernel: grid, block, registers, shared memory, stream");
    CHECK(got[0].kernel != UINT32_MAX && strcmp(gpuprof__kc.kern[got[0].kernel]->name, "layout_kernel") == 0, "kernel: its name (copied)");
    CHECK(got[1].kind == GPUPROF__KR_MEMCPY && got[1].bytes == (1u << 20) && got[1].corr == 43 && got[1].corr2 == 42 && got[1].end - got[1].start == 700,
          "copy: bytes, both correlation ids, duration");
    CHECK(got[1].sub == (2u | 2u << 8), "copy: device to host, into pinned memory");
    CHECK(got[2].kind == GPUPROF__KR_MEMSET && got[2].bytes == 512 && got[2].corr == 45 && got[2].stream == 14, "memset");
    CHECK(got[3].kind == GPUPROF__KR_SYNC && got[3].sub == 3 && got[3].end - got[3].start == 4000 && got[3].corr == 47, "stream synchronization");
    {
        /* a truncated last record and a zero kind end the walk, as gpuprof expects */
        CUptiResult rc;
        r = NULL;
        for (i = 0; (rc = next(buf, off - 8, &r)) == CUPTI_SUCCESS; i++) {}
        CHECK(rc == CUPTI_ERROR_MAX_LIMIT_REACHED && i == 5, "a truncated record: MAX_LIMIT_REACHED after the 5 whole ones");
        memset(buf + len[0], 0, 4);
        r = NULL;
        for (i = 0; (rc = next(buf, off, &r)) == CUPTI_SUCCESS; i++) {}
        CHECK(rc == CUPTI_ERROR_INVALID_KIND && i == 1, "a zero kind: INVALID_KIND");
    }
    return check_done("test_cupti_layout");
}
