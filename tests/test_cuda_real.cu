/* The real CUDA runtime, built by nvcc: on a machine without a GPU (CI) it
   checks the fallback -- one message, GPU timing off, CPU timing exact; on
   a machine with one it checks that a kernel of about 2 ms reads as GPU
   time, not launch time. */
#include "gpuprof.h"                   /* linked with the implementation's "cuda" configuration, built by the C compiler */
#include "json_util.h"
#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

__global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}

int main(void) {
    int ndev = 0, khz = 0, saved, i;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    bool gpu = e == cudaSuccess && ndev > 0;
    gpuprof_config cfg = gpuprof_config();
    cfg.summary_path = "cuda_real.summary.json";
    cfg.report = "off";
    (void)cudaGetLastError();
    if (gpu) cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
    saved = check_stderr_to("cuda_real.stderr.txt");
    gpuprof_init(&cfg);
    for (i = 0; i < 20; i++) {
        {
            PROF_RANGE("spin 2 ms");
            if (gpu) spin<<<1, 1>>>((long long)khz * 2);      /* kHz * 2 ms = cycles */
            { PROF_RANGE("inner"); }
        }
        PROF_STEP();
    }
    if (gpu) cudaDeviceSynchronize();
    gpuprof_shutdown();
    check_stderr_back(saved);

    char *err = check_slurp("cuda_real.stderr.txt");
    cJSON *sum = summary_load("cuda_real.summary.json"), *spin_row, *dev;
    int lines = 0;
    for (const char *p = err ? err : ""; (p = strstr(p, "gpuprof:")) != NULL; p++) lines++;
    if (err && *err) fprintf(stderr, "[gpuprof printed]\n%s", err);
    CHECK(sum != NULL, "summary parses");
    spin_row = summary_find(sum, "ranges", "spin 2 ms");
    dev = cJSON_GetObjectItem(sum, "device");
    CHECK_EQ_U(jnum(spin_row, "count"), 20, "CPU: 20 calls");
    CHECK_EQ_U(jnum(summary_find(sum, "ranges", "inner"), "count"), 20, "CPU: 20 nested calls");
    if (!gpu) {
        printf("no GPU here (%s): checking the fallback\n", cudaGetErrorName(e));
        CHECK_EQ_U(lines, 1, "exactly one gpuprof message");
        CHECK(err && strstr(err, "GPU timing is off, CPU timing goes on"), "saying GPU timing is off and CPU timing goes on");
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(dev, "available")), "the summary says no device");
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(dev, "cuda")), "in a CUDA build");
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(spin_row, "gpu")), "and has no GPU times");
        CHECK_EQ_U(jnum(cJSON_GetObjectItem(sum, "warnings"), "gpu_unavailable"), 1, "counted once");
    } else {
        cJSON *g = cJSON_GetObjectItem(spin_row, "gpu");
        printf("GPU: %s, %d kHz\n", cJSON_GetObjectItem(dev, "name")->valuestring, khz);
        CHECK_EQ_U(lines, 0, "no message");
        CHECK_EQ_U(jnum(g, "count"), 20, "20 GPU times");
        CHECK(jnum(g, "p50_ns") > 1.5e6 && jnum(g, "p50_ns") < 4e6, "a 2 ms kernel reads about 2 ms of GPU time");
        CHECK(jnum(spin_row, "p50_ns") < 0.5e6, "while its CPU (launch) time is small");
        CHECK(strcmp(cJSON_GetObjectItem(g, "verdict")->valuestring, "GPU-bound") == 0, "GPU-bound");
        printf("spin: GPU p50 %.0f ns, CPU p50 %.0f ns\n", jnum(g, "p50_ns"), jnum(spin_row, "p50_ns"));
    }
    free(err);
    cJSON_Delete(sum);
    return check_done("test_cuda_real");
}
