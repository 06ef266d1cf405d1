/* simnvml.h -- TEST CODE. The control panel of a simulated NVML.

   libsimnvml.so exports the NVML functions gpuprof calls (nvml.h's names,
   signatures and struct layouts, declared here by hand as gpuprof does), so
   gpuprof loads it as it loads the driver's libnvidia-ml.so.1
   (GPUPROF_NVML_PATH). A test that links it sets what the next calls
   return; a program that does not (a demo, a rank) picks a scenario with
   the environment:

     SIMNVML_DEVICES=N       GPUs (default 1); GPU i has PCI bus id
                             00000000:XX:00.0 with XX = 3B + i
     SIMNVML_SCENARIO=       steady (default): 1980 MHz, 300 W of 700, 90 % busy
                             powercap: from the SIMNVML_AFTER-th (default 10)
                             utilization read on, the SM clock falls to 1755 MHz,
                             power reaches the 700 W cap, reason "power cap" set
                             throttle: as powercap from the start
                             nogpm: no GPM (an Ampere); lost: the GPU is lost at
                             the SIMNVML_AFTER-th read
     SIMNVML_THROTTLE_DEVICE=I   GPU I alone is under its power cap (1755 MHz,
                             700 W, reason "power cap"): the rank that reads it throttles
     SIMNVML_NO_POWER=1      nvmlDeviceGetPowerUsage returns NOT_SUPPORTED
     SIMNVML_HANG=FN[:K[:MS]]  from its K-th call on (default 1), FN takes MS
                             ms (default: never returns), as NVML's calls do
                             when a GPU falls off the bus
   Built with -DSIMNVML_BARE (libsimnvml_bare.so) it exports NVML's set-up
   calls only: a library that loads but gives no counter.

   Every call is counted; any call can be made to fail. */
#ifndef SIMNVML_H
#define SIMNVML_H
#ifdef __cplusplus
extern "C" {
#endif

enum { SIMNVML_UTIL, SIMNVML_MEMUTIL, SIMNVML_SMCLK, SIMNVML_MEMCLK, SIMNVML_POWER_MW, SIMNVML_LIMIT_MW, SIMNVML_TEMP,
       SIMNVML_MEM_USED, SIMNVML_REASONS,
       /* GPM metrics, in % (PCIe, NVLink in MiB/s) */
       SIMNVML_SM_ACT, SIMNVML_SM_OCC, SIMNVML_TENSOR, SIMNVML_DRAM, SIMNVML_FP32, SIMNVML_FP16,
       SIMNVML_PCIE_TX, SIMNVML_PCIE_RX, SIMNVML_NVL_RX, SIMNVML_NVL_TX, SIMNVML_NVALUES };

void          simnvml_reset(void);                     /* the steady scenario, 1 GPU with GPM, nothing failing */
void          simnvml_set(int what, double value);     /* what the next reads give (every device) */
void          simnvml_fail(const char *fn, int rc);    /* every later call of fn returns rc (0: works again) */
void          simnvml_set_gpm(int supported);          /* GPM on or off */
void          simnvml_set_lost(int lost);              /* every call returns GPU_IS_LOST (15) */
void          simnvml_set_devices(int n);
unsigned long simnvml_calls(const char *fn);           /* calls of fn so far */
void          simnvml_hang(const char *fn, unsigned long from, unsigned ms);  /* as SIMNVML_HANG */

#ifdef __cplusplus
}
#endif
#endif
