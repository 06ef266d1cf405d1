/* GPU metrics (SPEC 21) against the toolkit's own CUPTI, with no GPU:
   1. gpuprof's C copies of the PM sampling structs (cupti_profiler_host.h is
      C++ only) against the real headers, field by field, at compile time;
   2. the metric set gpuprof chooses, by the real libcupti's host half (no
      driver needed, FACTS-pmsampling section 4.1): every metric, one pass, on
      GH100 and GA100; a chip without PM sampling refused.

   argv: [1] the toolkit's libcupti.so (its libnvperf_host.so must be on
   LD_LIBRARY_PATH: libcupti loads it by its bare name). Exits 77 (skipped)
   without one. */
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_pmsampling.h>
#include <cupti_target.h>
#define GPUPROF_IMPLEMENTATION
#include "gpuprof.h"
#include "check.h"

/* A C copy's field at the real struct's offset, of its size; the struct's
   STRUCT_SIZE as gpuprof computes it. */
#define SAME(mine, theirs, field)                                                                                      \
    static_assert(offsetof(mine, field) == offsetof(theirs, field), #mine "." #field ": offset differs from " #theirs); \
    static_assert(sizeof(((mine *)0)->field) == sizeof(((theirs *)0)->field), #mine "." #field ": size differs from " #theirs)
#define SIZE(mine, theirs, last) static_assert(GPUPROF__PM_SIZE(mine, last) == theirs##_STRUCT_SIZE, #mine ": STRUCT_SIZE differs")

SAME(gpuprof__pm_init, CUpti_Profiler_Initialize_Params, pPriv); SIZE(gpuprof__pm_init, CUpti_Profiler_Initialize_Params, pPriv);
SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, cuDevice); SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, isSupported);
SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, architecture); SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, sli);
SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, vGpu); SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, confidentialCompute);
SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, cmp); SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, wsl);
SAME(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, api); SIZE(gpuprof__pm_supported, CUpti_Profiler_DeviceSupported_Params, api);
SAME(gpuprof__pm_chip, CUpti_Device_GetChipName_Params, deviceIndex); SAME(gpuprof__pm_chip, CUpti_Device_GetChipName_Params, pChipName);
SIZE(gpuprof__pm_chip, CUpti_Device_GetChipName_Params, pChipName);
SAME(gpuprof__pm_avail, CUpti_PmSampling_GetCounterAvailability_Params, deviceIndex);
SAME(gpuprof__pm_avail, CUpti_PmSampling_GetCounterAvailability_Params, counterAvailabilityImageSize);
SAME(gpuprof__pm_avail, CUpti_PmSampling_GetCounterAvailability_Params, pCounterAvailabilityImage);
SIZE(gpuprof__pm_avail, CUpti_PmSampling_GetCounterAvailability_Params, pCounterAvailabilityImage);
SAME(gpuprof__pm_host_init, CUpti_Profiler_Host_Initialize_Params, profilerType); SAME(gpuprof__pm_host_init, CUpti_Profiler_Host_Initialize_Params, pChipName);
SAME(gpuprof__pm_host_init, CUpti_Profiler_Host_Initialize_Params, pCounterAvailabilityImage);
SAME(gpuprof__pm_host_init, CUpti_Profiler_Host_Initialize_Params, pHostObject); SIZE(gpuprof__pm_host_init, CUpti_Profiler_Host_Initialize_Params, pHostObject);
SAME(gpuprof__pm_host_deinit, CUpti_Profiler_Host_Deinitialize_Params, pHostObject);
SIZE(gpuprof__pm_host_deinit, CUpti_Profiler_Host_Deinitialize_Params, pHostObject);
SAME(gpuprof__pm_add, CUpti_Profiler_Host_ConfigAddMetrics_Params, pHostObject); SAME(gpuprof__pm_add, CUpti_Profiler_Host_ConfigAddMetrics_Params, ppMetricNames);
SAME(gpuprof__pm_add, CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics); SIZE(gpuprof__pm_add, CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics);
SAME(gpuprof__pm_image_size, CUpti_Profiler_Host_GetConfigImageSize_Params, pHostObject);
SAME(gpuprof__pm_image_size, CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize);
SIZE(gpuprof__pm_image_size, CUpti_Profiler_Host_GetConfigImageSize_Params, configImageSize);
SAME(gpuprof__pm_image, CUpti_Profiler_Host_GetConfigImage_Params, pHostObject); SAME(gpuprof__pm_image, CUpti_Profiler_Host_GetConfigImage_Params, configImageSize);
SAME(gpuprof__pm_image, CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage); SIZE(gpuprof__pm_image, CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage);
SAME(gpuprof__pm_passes, CUpti_Profiler_Host_GetNumOfPasses_Params, configImageSize); SAME(gpuprof__pm_passes, CUpti_Profiler_Host_GetNumOfPasses_Params, pConfigImage);
SAME(gpuprof__pm_passes, CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses); SIZE(gpuprof__pm_passes, CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses);
SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pHostObject);
SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pCounterDataImage);
SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, counterDataImageSize);
SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, rangeIndex);
SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, ppMetricNames);
SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, numMetrics);
SAME(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues);
SIZE(gpuprof__pm_eval, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues);
SAME(gpuprof__pm_enable, CUpti_PmSampling_Enable_Params, deviceIndex); SAME(gpuprof__pm_enable, CUpti_PmSampling_Enable_Params, pPmSamplingObject);
SIZE(gpuprof__pm_enable, CUpti_PmSampling_Enable_Params, pPmSamplingObject);
SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, pPmSamplingObject); SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, configSize);
SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, pConfig); SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, hardwareBufferSize);
SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, samplingInterval); SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, triggerMode);
SAME(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, hwBufferAppendMode);
SIZE(gpuprof__pm_config, CUpti_PmSampling_SetConfig_Params, hwBufferAppendMode);
SAME(gpuprof__pm_data_size, CUpti_PmSampling_GetCounterDataSize_Params, pPmSamplingObject);
SAME(gpuprof__pm_data_size, CUpti_PmSampling_GetCounterDataSize_Params, pMetricNames);
SAME(gpuprof__pm_data_size, CUpti_PmSampling_GetCounterDataSize_Params, numMetrics);
SAME(gpuprof__pm_data_size, CUpti_PmSampling_GetCounterDataSize_Params, maxSamples);
SAME(gpuprof__pm_data_size, CUpti_PmSampling_GetCounterDataSize_Params, counterDataSize);
SIZE(gpuprof__pm_data_size, CUpti_PmSampling_GetCounterDataSize_Params, counterDataSize);
SAME(gpuprof__pm_data_init, CUpti_PmSampling_CounterDataImage_Initialize_Params, pPmSamplingObject);
SAME(gpuprof__pm_data_init, CUpti_PmSampling_CounterDataImage_Initialize_Params, counterDataSize);
SAME(gpuprof__pm_data_init, CUpti_PmSampling_CounterDataImage_Initialize_Params, pCounterData);
SIZE(gpuprof__pm_data_init, CUpti_PmSampling_CounterDataImage_Initialize_Params, pCounterData);
SAME(gpuprof__pm_object, CUpti_PmSampling_Start_Params, pPmSamplingObject); SIZE(gpuprof__pm_object, CUpti_PmSampling_Start_Params, pPmSamplingObject);
SAME(gpuprof__pm_object, CUpti_PmSampling_Stop_Params, pPmSamplingObject); SIZE(gpuprof__pm_object, CUpti_PmSampling_Stop_Params, pPmSamplingObject);
SAME(gpuprof__pm_object, CUpti_PmSampling_Disable_Params, pPmSamplingObject); SIZE(gpuprof__pm_object, CUpti_PmSampling_Disable_Params, pPmSamplingObject);
SAME(gpuprof__pm_decode, CUpti_PmSampling_DecodeData_Params, pPmSamplingObject);
SAME(gpuprof__pm_decode, CUpti_PmSampling_DecodeData_Params, pCounterDataImage);
SAME(gpuprof__pm_decode, CUpti_PmSampling_DecodeData_Params, counterDataImageSize);
SAME(gpuprof__pm_decode, CUpti_PmSampling_DecodeData_Params, decodeStopReason);
SAME(gpuprof__pm_decode, CUpti_PmSampling_DecodeData_Params, overflow); SIZE(gpuprof__pm_decode, CUpti_PmSampling_DecodeData_Params, overflow);
SAME(gpuprof__pm_data_info, CUpti_PmSampling_GetCounterDataInfo_Params, pCounterDataImage);
SAME(gpuprof__pm_data_info, CUpti_PmSampling_GetCounterDataInfo_Params, counterDataImageSize);
SAME(gpuprof__pm_data_info, CUpti_PmSampling_GetCounterDataInfo_Params, numTotalSamples);
SAME(gpuprof__pm_data_info, CUpti_PmSampling_GetCounterDataInfo_Params, numPopulatedSamples);
SAME(gpuprof__pm_data_info, CUpti_PmSampling_GetCounterDataInfo_Params, numCompletedSamples);
SIZE(gpuprof__pm_data_info, CUpti_PmSampling_GetCounterDataInfo_Params, numCompletedSamples);
SAME(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, pPmSamplingObject);
SAME(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, pCounterDataImage);
SAME(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, counterDataImageSize);
SAME(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, sampleIndex);
SAME(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, startTimestamp);
SAME(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, endTimestamp);
SIZE(gpuprof__pm_sample_info, CUpti_PmSampling_CounterData_GetSampleInfo_Params, endTimestamp);
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

int main(int argc, char **argv) {
    const char *missing;
    char msg[200];
    if (argc < 2 || !argv[1][0]) { printf("no libcupti given: skipped\n"); return 77; }
    if (!(gpuprof__gm.lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) { printf("cannot load %s: skipped\n", argv[1]); return 77; }
    missing = gpuprof__lib_bind(gpuprof__gm.lib, gpuprof__pm_syms, sizeof gpuprof__pm_syms / sizeof gpuprof__pm_syms[0], &gpuprof__gm.api,
                                sizeof gpuprof__gm.api);
    snprintf(msg, sizeof msg, "the toolkit's libcupti has every PM sampling entry point gpuprof binds (missing: %s)", missing ? missing : "none");
    CHECK(missing == NULL, msg);
    if (missing) return check_done("test_gm_real");
    CHECK(chosen("GH100") == GPUPROF__GM_N, "GH100 (H100): all 12 metrics, in one pass, by the real library");
    CHECK(chosen("GA100") == GPUPROF__GM_N, "GA100 (A100): all 12 metrics, in one pass");
    CHECK(chosen("GA102") >= 8, "GA102: the verdict's metrics and more, in one pass");
    CHECK(chosen("AD102") >= 8, "AD102: the same (it has no NVLink counters)");
    CHECK(chosen("TU102") >= 4, "TU102: at least the verdict's four");
    CHECK(gpuprof__gm_select("GV100", NULL) != 0 && !strcmp(gpuprof__gm.reason, "unsupported_device"),
          "GV100 (Volta): refused, unsupported_device (no PM sampling before Turing)");
    gpuprof__gm_host_free(gpuprof__gm.host);
    GPUPROF_FREE(gpuprof__gm.config);
    return check_done("test_gm_real");
}
