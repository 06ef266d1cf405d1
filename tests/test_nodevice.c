/* A C program built by gcc with GPUPROF_CUDA and linked against the real
   shared libcudart -- the way a plain C codebase uses gpuprof's GPU timing.
   Where there is no GPU (CI) the fallback must be clean: one message, the
   CPU statistics exact; where there is one, ranges get GPU times. */
#define GPUPROF_IMPLEMENTATION
#include "gpuprof.h"
#include "json_util.h"
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <unistd.h>

int main(void) {
    gpuprof_config cfg;
    int ndev = 0, saved, fd, i, lines = 0, gpu;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    char *err;
    const char *p;
    cJSON *sum, *row;
    gpu = e == cudaSuccess && ndev > 0;
    memset(&cfg, 0, sizeof cfg);
    cfg.summary_path = "nodevice.summary.json";
    cfg.report = "off";
    fflush(stderr);
    saved = dup(2);
    fd = open("nodevice.stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
    for (i = 0; i < 100; i++) {          /* auto-initialised by the first range */
        if (i == 0) gpuprof_init(&cfg);
        { PROF_RANGE("step"); { PROF_RANGE("forward"); } { PROF_RANGE("backward"); } }
        PROF_STEP();
    }
    gpuprof_shutdown();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    err = check_slurp("nodevice.stderr.txt");
    for (p = err ? err : ""; (p = strstr(p, "gpuprof:")) != NULL; p++) lines++;
    if (err && *err) fprintf(stderr, "[gpuprof printed]\n%s", err);
    sum = summary_load("nodevice.summary.json");
    CHECK(sum != NULL, "summary parses");
    row = summary_find(sum, "ranges", "forward");
    CHECK_EQ_U(jnum(row, "count"), 100, "CPU statistics exact: 100 calls");
    CHECK_EQ_U(jnum(summary_path(sum, "step/backward"), "count"), 100, "call tree intact");
    if (!gpu) {
        printf("no GPU here (%s): checking the fallback\n", cudaGetErrorName(e));
        CHECK_EQ_U(lines, 1, "exactly one gpuprof message");
        CHECK(err && strstr(err, "GPU timing is off, CPU timing goes on"), "it says GPU timing is off and CPU timing goes on");
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "device"), "available")), "summary: no device");
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(row, "gpu")), "no GPU times");
    } else {
        CHECK_EQ_U(lines, 0, "no message");
        CHECK_EQ_U(jnum(cJSON_GetObjectItem(row, "gpu"), "count"), 100, "GPU times for every call");
    }
    free(err);
    cJSON_Delete(sum);
    return check_done("test_nodevice");
}
