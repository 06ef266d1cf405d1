/* gpuprof reads CUPTI's records at fixed offsets (it cannot include the
   CUPTI headers). This test, built against the toolkit's headers, checks
   every offset against offsetof() for each record version gpuprof reads
   (CUDA 12's and 13's), then builds a buffer of real records, walks it with
   the real libcupti's cuptiActivityGetNextRecord (which needs no driver),
   and reads each record with gpuprof's own reader.
   The GPU metrics (SPEC 21) the same way: gpuprof's C copies of the PM
   sampling structs (cupti_profiler_host.h is C++ only: this file is C++ for
   it) against the real headers, field by field, at compile time; then the
   metric set gpuprof chooses, by the real libcupti's host half (no driver
   needed, FACTS-pmsampling section 4.1): every metric in one pass on GH100
   and GA100, a chip without PM sampling refused.
   argv[1]: the toolkit's libcupti (the walk is skipped, exit 77, without it;
   its libnvperf_host.so must be on LD_LIBRARY_PATH: libcupti loads it by its
   bare name). */
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_pmsampling.h>
#include <cupti_target.h>
#define GPUPROF_IMPLEMENTATION
#include "gpuprof.h"
#include "check.h"
#include <stddef.h>

#define SAME(type, field, off) static_assert(offsetof(type, field) == (off), #type "." #field " is where gpuprof reads it")
#define SAME_KERNEL(t) SAME(t, kind, 0); SAME(t, registersPerThread, GPUPROF__KO_REGS); SAME(t, start, GPUPROF__KO_START); \
    SAME(t, end, GPUPROF__KO_END); SAME(t, deviceId, GPUPROF__KO_DEVICE); SAME(t, streamId, GPUPROF__KO_STREAM); \
    SAME(t, gridX, GPUPROF__KO_GRID); SAME(t, gridY, GPUPROF__KO_GRID + 4); SAME(t, gridZ, GPUPROF__KO_GRID + 8); \
    SAME(t, blockX, GPUPROF__KO_BLOCK); SAME(t, blockZ, GPUPROF__KO_BLOCK + 8); SAME(t, staticSharedMemory, GPUPROF__KO_SSMEM); \
    SAME(t, dynamicSharedMemory, GPUPROF__KO_DSMEM); SAME(t, correlationId, GPUPROF__KO_CORR); SAME(t, name, GPUPROF__KO_NAME); \
    SAME(t, graphId, GPUPROF__KO_GRAPH); static_assert(sizeof(t) >= GPUPROF__KO_SIZE, #t " holds every field gpuprof reads")
SAME_KERNEL(CUpti_ActivityKernel10);
SAME_KERNEL(CUpti_ActivityKernel9);
SAME_KERNEL(CUpti_ActivityKernel5);
#define SAME_MEMCPY(t) SAME(t, copyKind, GPUPROF__MO_COPYKIND); SAME(t, srcKind, GPUPROF__MO_SRCKIND); SAME(t, dstKind, GPUPROF__MO_DSTKIND); \
    SAME(t, bytes, GPUPROF__MO_BYTES); SAME(t, start, GPUPROF__MO_START); SAME(t, end, GPUPROF__MO_END); SAME(t, deviceId, GPUPROF__MO_DEVICE); \
    SAME(t, streamId, GPUPROF__MO_STREAM); SAME(t, correlationId, GPUPROF__MO_CORR); SAME(t, runtimeCorrelationId, GPUPROF__MO_RTCORR); \
    static_assert(sizeof(t) >= GPUPROF__MO_SIZE, #t " holds every field gpuprof reads")
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
static_assert(EQ(GPUPROF__AK_CONC_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) && EQ(GPUPROF__AK_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY) &&
               EQ(GPUPROF__AK_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET) && EQ(GPUPROF__AK_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) &&
               EQ(GPUPROF__AK_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME) && EQ(GPUPROF__AK_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER) &&
               EQ(GPUPROF__AK_EXTCORR, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) && EQ(GPUPROF__AK_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL), "activity kinds");
static_assert(EQ(GPUPROF__EXT_CUSTOM2, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2) && EQ(GPUPROF__FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) &&
               EQ(GPUPROF__ATTR_ZEROED_OUT, CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER), "kinds, flags and attributes");
static_assert(EQ(GPUPROF__CU_MAX_LIMIT, CUPTI_ERROR_MAX_LIMIT_REACHED) && EQ(GPUPROF__CU_INVALID_KIND, CUPTI_ERROR_INVALID_KIND) &&
               EQ(GPUPROF__CU_MULTIPLE, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) && EQ(GPUPROF__CU_UNKNOWN, CUPTI_ERROR_UNKNOWN) &&
               EQ(GPUPROF__CU_NOT_INITIALIZED, CUPTI_ERROR_NOT_INITIALIZED) && EQ(GPUPROF__CU_PRIVILEGES, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), "results");
static_assert(EQ(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1) && EQ(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 2) && EQ(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 8) &&
               EQ(CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, 9) && EQ(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, 10) && EQ(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 1) &&
               EQ(CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 2), "copy directions and memory kinds as gpuprof__kc_take maps them");
static_assert(EQ(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 1) && EQ(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 2) &&
               EQ(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 3) && EQ(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 4),
               "synchronization types as gpuprof__kc_take maps them");

/* A C copy's field at the real struct's offset, of its size; the struct's
   STRUCT_SIZE as gpuprof computes it. */
#define PM_SAME(mine, theirs, field)                                                                                      \
    static_assert(offsetof(mine, field) == offsetof(theirs, field), #mine "." #field ": offset differs from " #theirs); \
    static_assert(sizeof(((mine *)0)->field) == sizeof(((theirs *)0)->field), #mine "." #field ": size differs from " #theirs)
#define PM_SIZE(mine, theirs, last) static_assert(GPUPROF__PM_SIZE(mine, last) == theirs##_STRUCT_SIZE, #mine ": STRUCT_SIZE differs")

PM_SAME(gpuprof__pm_init, CUpti_Profiler_Initialize_Params, pPriv); PM_SIZE(gpuprof__pm_init, CUpti_Profiler_Initialize_Params, pPriv);
PM_SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, cuDevice); PM_SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, isSupported);
PM_SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, architecture); PM_SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, sli);
PM_SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, vGpu); PM_SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, confidentialCompute);
PM_SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, cmp); PM_SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, wsl);
PM_SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, api); PM_SIZE(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, api);
PM_SAME(gpuprof__pm_chip, CUpti_Device_GetChipName_Params, deviceIndex); PM_SAME(gpuprof__pm_chip, CUpti_Device_GetChipName_Params, pChipName);
PM_SIZE(gpuprof__pm_chip, CUpti_Device_GetChipName_Params, pChipName);
PM_SAME(gpuprof__pm_avail, CUpti_PmSampling_GetCounterAvailability_Params, deviceIndex);
PM_SAME(gpuprof__pm_avail, CUpti_PmSampling_GetCounterAvailability_Params, counterAvailabilityImageSize);
PM_SAME(gpuprof__pm_avail, CUpti_PmSampling_GetCounterAvailability_Params, pCounterAvailabilityImage);
PM_SIZE(gpuprof__pm_avail, CUpti_PmSampling_GetCounterAvailability_Params, pCounterAvailabilityImage);
PM_SAME(gpuprof__pm_host_init, CUpti_Profiler_Host_Initialize_Params, profilerType); PM_SAME(gpuprof__pm_host_init, CUpti_Profiler_Host_Initialize_Params, pChipName);
PM_SAME(gpuprof__pm_host_init, CUpti_Profiler_Host_Initialize_Params, pCounterAvailabilityImage);
PM_SAME(gpuprof__pm_host_init, CUpti_Profiler_Host_Initialize_Params, pHostObject); PM_SIZE(gpuprof__pm_host_init, CUpti_Profiler_Host_Initialize_Params, pHostObject);
PM_SAME(gpuprof__pm_host_deinit, CUpti_Profiler_Host_Deinitialize_Params, pHostObject);
PM_SIZE(gpuprof__pm_host_deinit, CUpti_Profiler_Host_Deinitialize_Params, pHostObject);
PM_SAME(gpuprof__pm_add, CUpti_Profiler_Host_ConfigAddMetrics_Params, pHostObject); PM_SAME(gpuprof__pm_add, CUpti_Profiler_Host_ConfigAddMetrics_Params, ppMetricNames);
PM_SAME(gpuprof__pm_add, CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics); PM_SIZE(gpuprof__pm_add, CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics);
PM_SAME(gpuprof__pm_image_size, CUpti_Profiler_Host_GetConfigImageSize_Params, pHostObject);
PM_SAME(gpuprof__pm_image_size, CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize);
PM_SIZE(gpuprof__pm_image_size, CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize);
PM_SAME(gpuprof__pm_image, CUpti_Profiler_Host_GetConfigImage_Params, pHostObject); PM_SAME(gpuprof__pm_image, CUpti_Profiler_Host_GetConfigImage_Params, configImageSize);
PM_SAME(gpuprof__pm_image, CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage); PM_SIZE(gpuprof__pm_image, CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage);
PM_SAME(gpuprof__pm_passes, CUpti_Profiler_Host_GetNumOfPasses_Params, configImageSize); PM_SAME(gpuprof__pm_passes, CUpti_Profiler_Host_GetNumOfPasses_Params, pConfigImage);
PM_SAME(gpuprof__pm_passes, CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses); PM_SIZE(gpuprof__pm_passes, CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses);
PM_SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pHostObject);
PM_SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pCounterDataImage);
PM_SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, counterDataImageSize);
PM_SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, rangeIndex);
PM_SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, ppMetricNames);
PM_SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, numMetrics);
PM_SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues);
PM_SIZE(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues);
PM_SAME(gpuprof__pm_enable, CUpti_PmSampling_Enable_Params, deviceIndex); PM_SAME(gpuprof__pm_enable, CUpti_PmSampling_Enable_Params, pPmSamplingObject);
PM_SIZE(gpuprof__pm_enable, CUpti_PmSampling_Enable_Params, pPmSamplingObject);
PM_SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, pPmSamplingObject); PM_SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, configSize);
PM_SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, pConfig); PM_SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, hardwareBufferSize);
PM_SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, samplingInterval); PM_SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, triggerMode);
PM_SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, hwBufferAppendMode);
PM_SIZE(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, hwBufferAppendMode);
PM_SAME(gpuprof__pm_data_size, CUpti_PmSampling_GetCounterDataSize_Params, pPmSamplingObject);
PM_SAME(gpuprof__pm_data_size, CUpti_PmSampling_GetCounterDataSize_Params, pMetricNames);
PM_SAME(gpuprof__pm_data_size, CUpti_PmSampling_GetCounterDataSize_Params, numMetrics);
PM_SAME(gpuprof__pm_data_size, CUpti_PmSampling_GetCounterDataSize_Params, maxSamples);
PM_SAME(gpuprof__pm_data_size, CUpti_PmSampling_GetCounterDataSize_Params, counterDataSize);
PM_SIZE(gpuprof__pm_data_size, CUpti_PmSampling_GetCounterDataSize_Params, counterDataSize);
PM_SAME(gpuprof__pm_data_init, CUpti_PmSampling_CounterDataImage_Initialize_Params, pPmSamplingObject);
PM_SAME(gpuprof__pm_data_init, CUpti_PmSampling_CounterDataImage_Initialize_Params, counterDataSize);
PM_SAME(gpuprof__pm_data_init, CUpti_PmSampling_CounterDataImage_Initialize_Params, pCounterData);
PM_SIZE(gpuprof__pm_data_init, CUpti_PmSampling_CounterDataImage_Initialize_Params, pCounterData);
PM_SAME(gpuprof__pm_object, CUpti_PmSampling_Start_Params, pPmSamplingObject); PM_SIZE(gpuprof__pm_object, CUpti_PmSampling_Start_Params, pPmSamplingObject);
PM_SAME(gpuprof__pm_object, CUpti_PmSampling_Stop_Params, pPmSamplingObject); PM_SIZE(gpuprof__pm_object, CUpti_PmSampling_Stop_Params, pPmSamplingObject);
PM_SAME(gpuprof__pm_object, CUpti_PmSampling_Disable_Params, pPmSamplingObject); PM_SIZE(gpuprof__pm_object, CUpti_PmSampling_Disable_Params, pPmSamplingObject);
PM_SAME(gpuprof__pm_decode, CUpti_PmSampling_DecodeData_Params, pPmSamplingObject);
PM_SAME(gpuprof__pm_decode, CUpti_PmSampling_DecodeData_Params, pCounterDataImage);
PM_SAME(gpuprof__pm_decode, CUpti_PmSampling_DecodeData_Params, counterDataImageSize);
PM_SAME(gpuprof__pm_decode, CUpti_PmSampling_DecodeData_Params, decodeStopReason);
PM_SAME(gpuprof__pm_decode, CUpti_PmSampling_DecodeData_Params, overflow); PM_SIZE(gpuprof__pm_decode, CUpti_PmSampling_DecodeData_Params, overflow);
PM_SAME(gpuprof__pm_data_info, CUpti_PmSampling_GetCounterDataInfo_Params, pCounterDataImage);
PM_SAME(gpuprof__pm_data_info, CUpti_PmSampling_GetCounterDataInfo_Params, counterDataImageSize);
PM_SAME(gpuprof__pm_data_info, CUpti_PmSampling_GetCounterDataInfo_Params, numTotalSamples);
PM_SAME(gpuprof__pm_data_info, CUpti_PmSampling_GetCounterDataInfo_Params, numPopulatedSamples);
PM_SAME(gpuprof__pm_data_info, CUpti_PmSampling_GetCounterDataInfo_Params, numCompletedSamples);
PM_SIZE(gpuprof__pm_data_info, CUpti_PmSampling_GetCounterDataInfo_Params, numCompletedSamples);
PM_SAME(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, pPmSamplingObject);
PM_SAME(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, pCounterDataImage);
PM_SAME(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, counterDataImageSize);
PM_SAME(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, sampleIndex);
PM_SAME(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, startTimestamp);
PM_SAME(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, endTimestamp);
PM_SIZE(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, endTimestamp);
/* the numbers gpuprof uses, as CUPTI defines them */
static_assert(GPUPROF__PM_TYPE == CUPTI_PROFILER_TYPE_PM_SAMPLING && GPUPROF__PM_API == CUPTI_PROFILER_PM_SAMPLING, "profiler type, API");
static_assert(GPUPROF__PM_SUPPORTED == CUPTI_PROFILER_CONFIGURATION_SUPPORTED, "support level");
static_assert(GPUPROF__PM_TRIGGER_SYSCLK == CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL &&
              GPUPROF__PM_TRIGGER_TIME == CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL, "trigger modes");
static_assert(GPUPROF__PM_KEEP_OLDEST == CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST, "append mode");
static_assert(GPUPROF__PM_FULL == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL &&
              GPUPROF__PM_END == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS, "decode stop reasons");
static_assert(GPUPROF__PM_OUT_OF_MEMORY == CUPTI_ERROR_OUT_OF_MEMORY && GPUPROF__PM_HW_BUSY == CUPTI_ERROR_HARDWARE_BUSY &&
              GPUPROF__PM_NOT_SUPPORTED == CUPTI_ERROR_NOT_SUPPORTED && GPUPROF__PM_PRIVILEGES == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES &&
              GPUPROF__PM_VGPU_PRIVILEGES == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES &&
              GPUPROF__PM_MIG == CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED && GPUPROF__PM_INVALID_PARAMETER == CUPTI_ERROR_INVALID_PARAMETER,
              "result codes");

/* The set chosen for chip by the real host half: n metrics, one pass. */
static int chosen(const char *chip) {
    char msg[200];
    int rc = gpuprof__gm_select(chip, NULL);
    size_t passes = 0, size = 0;
    void *host = NULL;
    uint8_t *img = NULL;
    if (rc != 0) return -1;
    /* the image kept makes one pass, by the library itself */
    rc = gpuprof__gm_image(chip, NULL, gpuprof__gm.names, (size_t)gpuprof__gm.nmetric, &host, &img, &size, &passes);
    snprintf(msg, sizeof msg, "%s: the %d metrics chosen make one config image of one pass (%zu bytes, %zu pass)", chip, gpuprof__gm.nmetric, size, passes);
    CHECK(rc == 0 && passes == 1, msg);
    printf("%s: %d metrics in one pass, a config image of %zu bytes\n", chip, gpuprof__gm.nmetric, size);
    GPUPROF_FREE(img);
    gpuprof__gm_host_free(host);
    return gpuprof__gm.nmetric;
}

/* Under AddressSanitizer the host half cannot run: libcupti loads
   libnvperf_host.so with RTLD_DEEPBIND, which the sanitizer's runtime refuses
   (it ends the process). The compile-time checks above still hold. */
#if defined(__SANITIZE_ADDRESS__)
#define PM_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PM_UNDER_ASAN 1
#endif
#endif

/* The GPU metrics' set by the real host half, with lib's PM sampling entry points. */
static void gpuprof_pm_host(void *lib) {
    const char *missing;
    char msg[200];
#ifdef PM_UNDER_ASAN
    (void)lib; (void)missing; (void)msg;
    printf("the GPU metrics' set by the real host half: skipped under AddressSanitizer (libcupti loads libnvperf_host.so with RTLD_DEEPBIND)\n");
    return;
#endif
    gpuprof__gm.lib = lib;
    missing = gpuprof__lib_bind(gpuprof__gm.lib, gpuprof__pm_syms, sizeof gpuprof__pm_syms / sizeof gpuprof__pm_syms[0], &gpuprof__gm.api,
                                sizeof gpuprof__gm.api);
    snprintf(msg, sizeof msg, "the toolkit's libcupti has every PM sampling entry point gpuprof binds (missing: %s)", missing ? missing : "none");
    CHECK(missing == NULL, msg);
    if (missing) return;
    CHECK(chosen("GH100") == GPUPROF__GM_N, "GH100 (H100): all 12 metrics, in one pass, by the real library");
    CHECK(chosen("GA100") == GPUPROF__GM_N, "GA100 (A100): all 12 metrics, in one pass");
    CHECK(chosen("GA102") >= 8, "GA102: the verdict's metrics and more, in one pass");
    CHECK(chosen("AD102") >= 8, "AD102: the same (it has no NVLink counters)");
    CHECK(chosen("TU102") >= 4, "TU102: at least the verdict's four");
    CHECK(gpuprof__gm_select("GV100", NULL) != 0 && !strcmp(gpuprof__gm.reason, "unsupported_device"),
          "GV100 (Volta): refused, unsupported_device (no PM sampling before Turing)");
    gpuprof__gm_host_free(gpuprof__gm.host);
    GPUPROF_FREE(gpuprof__gm.config);
}

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
    gpuprof_pm_host(lib);
    return check_done("test_cupti_layout");
}
