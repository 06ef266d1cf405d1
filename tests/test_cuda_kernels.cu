/* Kernel capture with the real CUDA runtime and the real libcupti, built by
   nvcc. On a machine without a GPU (CI) it checks the fallback: the summary
   says capture is off and why, the ranges are counted as before. On a machine
   with one it checks what CUPTI reports against what the program did --
   launch counts are exact on any GPU: three kernels per call of "launch3",
   the five kernels of a CUDA graph replayed in "graph" (all belonging to the
   range around cudaGraphLaunch), a copy into pageable host memory in "copy",
   a cudaStreamSynchronize in "sync" -- with demangled names, and kernel
   times that fit inside their ranges' event-timed GPU spans; and each
   kernel's launch figures (SPEC 20): blocks_per_sm equal to the runtime's
   cudaOccupancyMaxActiveBlocksPerMultiprocessor for its launch, a kernel
   of 64 KiB of dynamic shared memory ("occupancy") among them. */
#include "gpuprof.h"                   /* linked with the implementation's "cuda" configuration, built by the C compiler */
#include "json_util.h"
#include <cuda_runtime.h>
#include <stdlib.h>

enum { STEPS = 4, GRAPH_NODES = 5 };

__global__ void tiny(float *p) { p[threadIdx.x] += 1.0f; }
__global__ void gnode(float *p) { p[threadIdx.x] *= 0.5f; }
__global__ void smem_heavy(float *p) {
    extern __shared__ float buf[];
    buf[threadIdx.x] = p[threadIdx.x];
    __syncthreads();
    p[threadIdx.x] = buf[(threadIdx.x + 1) % blockDim.x];
}
enum { HEAVY_SMEM = 64 * 1024, HEAVY_BLOCKS = 264 };


static const char *jstr(cJSON *o, const char *key) {
    cJSON *v = o ? cJSON_GetObjectItem(o, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : "";
}

static cJSON *find_kind(cJSON *sum, const char *array, const char *key, const char *value) {
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(sum, array)) {
        cJSON *v = cJSON_GetObjectItem(e, key);
        if (cJSON_IsString(v) && !strcmp(v->valuestring, value)) return e;
    }
    return NULL;
}

/* kernels[].launch.blocks_per_sm of the kernel named `name` against the runtime's occupancy figure */
static void check_occupancy(cJSON *sum, const char *name, const void *fn, int threads, size_t dsmem) {
    cJSON *l = cJSON_GetObjectItem(summary_find(sum, "kernels", name), "launch");
    int want = -1;
    char what[160];
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&want, fn, threads, dsmem);
    printf("%s: blocks_per_sm %g, cudaOccupancyMaxActiveBlocksPerMultiprocessor %d; limiter %s\n", name, jnum(l, "blocks_per_sm"), want, jstr(l, "limiter"));
    snprintf(what, sizeof what, "%s: blocks_per_sm is the runtime's cudaOccupancyMaxActiveBlocksPerMultiprocessor", name);
    CHECK_EQ_U(jnum(l, "blocks_per_sm"), want, what);
}

int main(void) {
    int ndev = 0, i, k, saved;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    bool gpu = e == cudaSuccess && ndev > 0;
    gpuprof_config cfg = gpuprof_config();
    cudaStream_t s = NULL;
    cudaGraphExec_t exec = NULL;
    float *d = NULL, *host = NULL;
    const size_t copy_bytes = (size_t)1 << 20;
    cfg.summary_path = "cuda_kernels.summary.json";
    cfg.report = "cuda_kernels.report.txt";
    cfg.kernels = 1;
    (void)cudaGetLastError();
    if (gpu) {
        cudaGraph_t graph;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        cudaMalloc(&d, copy_bytes);
        cudaMemset(d, 0, copy_bytes);
        host = (float *)malloc(copy_bytes);           /* pageable */
        cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        for (i = 0; i < GRAPH_NODES; i++) gnode<<<1, 32, 0, s>>>(d);
        cudaStreamEndCapture(s, &graph);
        cudaGraphInstantiate(&exec, graph, 0);
        cudaGraphDestroy(graph);
        cudaFuncSetAttribute(smem_heavy, cudaFuncAttributeMaxDynamicSharedMemorySize, HEAVY_SMEM);
        cudaStreamSynchronize(s);
    }
    saved = check_stderr_to("cuda_kernels.stderr.txt");
    gpuprof_init(&cfg);
    if (gpu) gpuprof_set_stream(s);
    for (k = 0; k < STEPS; k++) {
        { PROF_RANGE("launch3"); if (gpu) for (i = 0; i < 3; i++) tiny<<<1, 32, 0, s>>>(d); }
        { PROF_RANGE("graph"); if (gpu) cudaGraphLaunch(exec, s); }
        { PROF_RANGE("copy"); if (gpu) cudaMemcpyAsync(host, d, copy_bytes, cudaMemcpyDeviceToHost, s); }
        { PROF_RANGE("sync"); if (gpu) cudaStreamSynchronize(s); }
        { PROF_RANGE("occupancy"); if (gpu) smem_heavy<<<HEAVY_BLOCKS, 256, HEAVY_SMEM, s>>>(d); }
        PROF_STEP();
    }
    gpuprof_shutdown();
    check_stderr_back(saved);

    char *err = check_slurp("cuda_kernels.stderr.txt");
    cJSON *sum = summary_load("cuda_kernels.summary.json"), *cap;
    if (err && *err) fprintf(stderr, "[gpuprof printed]\n%s", err);
    CHECK(sum != NULL, "summary parses");
    cap = cJSON_GetObjectItem(sum, "capture");
    CHECK(cJSON_IsObject(cap), "capture was asked for: the summary has its object");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "launch3"), "count"), STEPS, "CPU: every call counted");
    if (!gpu) {
        cJSON *st = cJSON_GetObjectItem(cap, "status");
        printf("no GPU here (%s): checking the fallback\n", cudaGetErrorName(e));
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cap, "on")), "capture is off");
        CHECK(cJSON_IsString(st) && strstr(st->valuestring, " failed with "), "capture.status says why");
        CHECK(err && strstr(err, "gpuprof: kernel capture is off: ") && cJSON_IsString(st) && strstr(err, st->valuestring),
              "one line says so, the same words");
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(sum, "kernels")) == 0, "no kernels");
    } else {
        cJSON *tk = summary_find(sum, "kernels", "tiny(float*)"), *gk = summary_find(sum, "kernels", "gnode(float*)");
        cJSON *x = find_kind(sum, "transfers", "kind", "DtoH"), *y = find_kind(sum, "syncs", "kind", "stream");
        char *report = check_slurp("cuda_kernels.report.txt");
        printf("GPU: %s; CUPTI %g from %s\n", cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "device"), "name")->valuestring,
               jnum(cap, "version"), cJSON_GetObjectItem(cap, "library")->valuestring);
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cap, "on")), "capture ran");
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(cap, "status")), "nothing went wrong");
        CHECK_EQ_U(jnum(cap, "dropped"), 0, "CUPTI dropped nothing");
        CHECK_EQ_U(jnum(cap, "bad_timestamps"), 0, "no bad timestamps");
        CHECK_EQ_U(jnum(cap, "waiting"), 0, "every record met its launch");
        CHECK(tk != NULL, "the launched kernel, demangled");
        CHECK_EQ_U(jnum(tk, "count"), 3 * STEPS, "3 launches per call, every one recorded");
        CHECK(tk && !strcmp(jstr(tk, "range"), "launch3"), "... in the range that launched them");
        CHECK(gk != NULL, "the graph's kernel");
        CHECK_EQ_U(jnum(gk, "count"), GRAPH_NODES * STEPS, "every kernel of every graph replay (one launch, five kernels)");
        CHECK(gk && !strcmp(jstr(gk, "range"), "graph"), "... in the range around cudaGraphLaunch");
        CHECK_EQ_U(jnum(summary_find(sum, "ranges", "graph"), "kernel_calls"), GRAPH_NODES * STEPS, "the graph range's kernel count");
        CHECK_EQ_U(jnum(summary_find(sum, "ranges", "launch3"), "kernel_calls"), 3 * STEPS, "launch3's kernel count");
        CHECK(x != NULL && !strcmp(jstr(x, "host_memory"), "pageable"), "the copy to the host: pageable memory");
        CHECK_EQ_U(x ? jnum(x, "count") : 0, STEPS, "one copy per step");
        CHECK_EQ_U(x ? jnum(x, "bytes") : 0, STEPS * copy_bytes, "... of 1 MiB");
        CHECK(x && !strcmp(jstr(x, "range"), "copy"), "... in the copy range");
        CHECK(y != NULL && jnum(y, "count") >= STEPS, "the stream synchronizations");
        CHECK(y && !strcmp(jstr(y, "range"), "sync"), "... in the sync range");
        CHECK(find_kind(sum, "syncs", "kind", "event") == NULL, "gpuprof's own event queries are not in the sync table");
        CHECK(jnum(cap, "own") > 0, "... they are counted apart");
        /* kernel time fits in the event-timed GPU span of the range that launched it */
        CHECK(jnum(tk, "sum_ns") <= jnum(cJSON_GetObjectItem(summary_find(sum, "ranges", "launch3"), "gpu"), "sum_ns") * 1.001,
              "launch3's kernels take no longer than its event-timed GPU time");
        CHECK(report && strstr(report, "\ngnode(float*) "), "the report's kernel table names the graph's kernel");
        check_occupancy(sum, "tiny(float*)", (const void *)tiny, 32, 0);
        check_occupancy(sum, "gnode(float*)", (const void *)gnode, 32, 0);
        check_occupancy(sum, "smem_heavy(float*)", (const void *)smem_heavy, 256, HEAVY_SMEM);
        CHECK(!strcmp(jstr(cJSON_GetObjectItem(summary_find(sum, "kernels", "smem_heavy(float*)"), "launch"), "limiter"), "shared_memory"),
              "smem_heavy's occupancy is limited by its 64 KiB of shared memory");
        free(report);
        cudaGraphExecDestroy(exec);
        cudaFree(d);
        free(host);
        cudaStreamDestroy(s);
    }
    cJSON_Delete(sum);
    free(err);
    return check_done("test_cuda_kernels");
}
