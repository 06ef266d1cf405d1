/* A C program built by gcc with GPUPROF_CUDA and linked against the real
   shared libcudart -- the way a plain C codebase uses gpuprof's GPU timing.
   Where there is no GPU (CI) the fallback must be clean: one message, the
   CPU statistics exact; where there is one, ranges get GPU times. Memory
   too: device figures unavailable (not 0) and the host ones present, or
   with a GPU, a tracked cudaMalloc and device figures. The CUDA header
   comes first, so gpuprof.h declares its cudaMalloc wrappers.
   With GPUPROF_KERNELS=1 (a second ctest entry) the real libcupti is
   loaded: without a GPU it fails (CUPTI_ERROR_UNKNOWN, 999), and that is
   one more line, capture off, everything else as before. */
#include <cuda_runtime_api.h>
#include "gpuprof.h"                   /* linked with the implementation's "cuda" configuration: GPUPROF_CUDA, the real libcudart */
#include "json_util.h"
#include <fcntl.h>
#include <unistd.h>

int main(void) {
    gpuprof_config cfg;
    int ndev = 0, saved, i, lines = 0, gpu, kernels = getenv("GPUPROF_KERNELS") != NULL;
    /* GPUPROF_GPU=kernels turns capture on; without a GPU it says the ranges keep their CPU time */
    int from_kernels = getenv("GPUPROF_GPU") && !strcmp(getenv("GPUPROF_GPU"), "kernels");
    cudaError_t e = cudaGetDeviceCount(&ndev);
    char *err;
    const char *p;
    void *dev = NULL, *host = malloc(1 << 20);
    cudaError_t me;
    cJSON *sum, *row, *mem, *ph;
    gpu = e == cudaSuccess && ndev > 0;
    kernels |= from_kernels;
    memset(&cfg, 0, sizeof cfg);
    cfg.summary_path = "nodevice.summary.json";
    cfg.report = "off";
    saved = check_stderr_to("nodevice.stderr.txt");
    for (i = 0; i < 100; i++) {          /* auto-initialised by the first range */
        if (i == 0) gpuprof_init(&cfg);
        if (i == 0) gpuprof_mem_alloc(host, 1 << 20, "host buffers");
        { PROF_RANGE("step"); { PROF_RANGE("forward"); } { PROF_RANGE("backward"); } }
        GPUPROF_MEM("after step");
        PROF_STEP();
    }
    me = gpuprof_cuda_malloc(&dev, 1 << 20, "device buffers");
    GPUPROF_MEM("after cudaMalloc");
    if (me == cudaSuccess) gpuprof_cuda_free(dev);
    else (void)cudaGetLastError();
    gpuprof_mem_free(host);
    free(host);
    gpuprof_shutdown();
    check_stderr_back(saved);
    err = check_slurp("nodevice.stderr.txt");
    for (p = err ? err : ""; (p = strstr(p, "gpuprof:")) != NULL; p++) lines++;
    if (err && *err) fprintf(stderr, "[gpuprof printed]\n%s", err);
    sum = summary_load("nodevice.summary.json");
    CHECK(sum != NULL, "summary parses");
    row = summary_find(sum, "ranges", "forward");
    CHECK_EQ_U(jnum(row, "count"), 100, "CPU statistics exact: 100 calls");
    CHECK_EQ_U(jnum(summary_path(sum, "step/backward"), "count"), 100, "call tree intact");
    mem = cJSON_GetObjectItem(sum, "memory");
    ph = NULL;
    {
        cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(mem, "phases"))
            if (strcmp(cJSON_GetObjectItem(e, "label")->valuestring, "after cudaMalloc") == 0) ph = e;
    }
    CHECK_EQ_U(jnum(mem, "snapshots"), 101, "101 memory snapshots");
    CHECK(jnum(cJSON_GetObjectItem(mem, "host"), "rss_bytes") > 0, "host RSS present");
    CHECK_EQ_U(jnum(cJSON_GetObjectItem(mem, "tracked"), "live_bytes"), 0, "tracked bytes back to 0 after the frees");
    if (!gpu) {
        printf("no GPU here (%s): checking the fallback\n", cudaGetErrorName(e));
        CHECK_EQ_U(lines, 1 + kernels, "exactly one gpuprof message (and one about kernel capture)");
        CHECK(err && strstr(err, "GPU timing is off, CPU timing goes on"), "it says GPU timing is off and CPU timing goes on");
        if (kernels) {
            cJSON *c = cJSON_GetObjectItem(sum, "capture");
            CHECK(err && strstr(err, "gpuprof: kernel capture is off: ") &&
                  strstr(err, from_kernels ? "; GPUPROF_GPU=kernels needs it, so ranges have CPU time only\n" : "; ranges are timed as before"),
                  "kernel capture: one line saying it is off and what goes on");
            CHECK(err && strstr(err, "CUPTI_ERROR_UNKNOWN (999) -- CUPTI returns this when no NVIDIA driver or GPU is usable here"),
                  "... naming the real CUPTI's answer without a driver");
            CHECK(cJSON_IsFalse(cJSON_GetObjectItem(c, "on")) && cJSON_IsString(cJSON_GetObjectItem(c, "status")), "capture: off, with the reason");
            CHECK(cJSON_IsString(cJSON_GetObjectItem(c, "library")), "capture: the library it loaded");
            printf("capture: %s (%s)\n", cJSON_GetObjectItem(c, "status")->valuestring, cJSON_GetObjectItem(c, "library")->valuestring);
        }
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "device"), "available")), "summary: no device");
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(row, "gpu")), "no GPU times");
        CHECK(me != cudaSuccess, "gpuprof_cuda_malloc passes cudaMalloc's error on");
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(mem, "device"), "available")), "memory: device figures unavailable");
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(ph, "device_used_bytes")), "device used: null, not 0");
        CHECK_EQ_U(jnum(ph, "tracked_bytes"), 1 << 20, "the failed cudaMalloc is not tracked (1 MiB of host buffers is)");
    } else {
        CHECK_EQ_U(lines, 0, "no message");
        if (kernels) CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "capture"), "on")), "kernel capture is on");
        CHECK_EQ_U(jnum(cJSON_GetObjectItem(row, "gpu"), "count"), 100, "GPU times for every call");
        CHECK(me == cudaSuccess, "gpuprof_cuda_malloc allocates");
        CHECK_EQ_U(jnum(ph, "tracked_bytes"), 2 << 20, "1 MiB on the device and 1 MiB of host buffers tracked");
        CHECK(jnum(ph, "device_used_bytes") > 0, "device used is known");
        printf("GPU: device used %.0f MiB of %.0f MiB\n", jnum(ph, "device_used_bytes") / 1048576.0,
               jnum(cJSON_GetObjectItem(mem, "device"), "total_bytes") / 1048576.0);
    }
    free(err);
    cJSON_Delete(sum);
    return check_done("test_nodevice");
}
