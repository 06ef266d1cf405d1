/* simnvml.c -- TEST CODE. A simulated NVML (see simnvml.h). */
#include "simnvml.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))
enum { OK = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NOT_FOUND = 6, GPU_LOST = 15 };

typedef struct { unsigned gpu, memory; } util_t;
typedef struct { unsigned long long total, free, used; } mem_t;
typedef struct { unsigned version; int sensor; int temperature; } temp_t;
typedef struct { unsigned version, supported; } gpm_support_t;
#define GPM_MAX 333                   /* an older nvml.h's NVML_GPM_METRIC_MAX: the library reads numMetrics entries */
typedef struct {
    unsigned id;
    int ret;
    double value;
    struct { char *short_name, *long_name, *unit; } info;
} gpm_metric_t;
typedef struct {
    unsigned version, count;
    void *sample1, *sample2;
    gpm_metric_t metric[GPM_MAX];
} gpm_get_t;

#define MAX_FAIL 16
#define MAX_COUNT 64
static struct {
    pthread_mutex_t mu;
    int ready, inits, devices, gpm, lost, scenario, after, throttle_dev;
    unsigned long util_reads;
    double v[SIMNVML_NVALUES];
    struct { char fn[64]; int rc; } fail[MAX_FAIL];
    struct { char fn[64]; unsigned long n; } count[MAX_COUNT];
    int samples_out;                  /* GPM samples allocated, not freed */
} sim = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 1, 1, 0, 0, 10, -1, 0, { 0 }, { { "", 0 } }, { { "", 0 } }, 0 };
static int devs[16];                  /* handles: pointers to these */

/* A call that blocks, as NVML's do when a GPU falls off the bus: from its
   from-th call on, fn takes ms (0: never returns). Outside sim.mu, so the
   other calls go on (the test decides what they do). */
static struct {
    pthread_mutex_t mu;
    int ready;
    char fn[64];
    unsigned long from, calls;
    unsigned ms;
} hang = { PTHREAD_MUTEX_INITIALIZER, 0, "", 0, 0, 0 };

static void hang_setup(void) {                    /* under hang.mu: SIMNVML_HANG=fn[:from[:ms]] */
    const char *v = getenv("SIMNVML_HANG"), *c;
    size_t n;
    if (hang.ready) return;
    hang.ready = 1;
    if (!v || !*v) return;
    n = (c = strchr(v, ':')) ? (size_t)(c - v) : strlen(v);
    if (n >= sizeof hang.fn) return;
    memcpy(hang.fn, v, n);
    hang.fn[n] = 0;
    hang.from = c ? strtoul(c + 1, NULL, 10) : 1;
    if (!hang.from) hang.from = 1;
    if (c && (c = strchr(c + 1, ':')) != NULL) hang.ms = (unsigned)strtoul(c + 1, NULL, 10);
}

static void maybe_hang(const char *fn) {
    unsigned ms = 0;
    int block = 0;
    pthread_mutex_lock(&hang.mu);
    hang_setup();
    if (hang.fn[0] && !strcmp(hang.fn, fn) && ++hang.calls >= hang.from) { block = 1; ms = hang.ms; }
    pthread_mutex_unlock(&hang.mu);
    if (!block) return;
    do {
        struct timespec ts = { ms ? (time_t)(ms / 1000) : 3600, ms ? (long)(ms % 1000) * 1000000L : 0 };
        while (nanosleep(&ts, &ts) != 0) {}       /* a profiling signal does not end it */
    } while (!ms);
}

EXPORT void simnvml_hang(const char *fn, unsigned long from, unsigned ms) {
    pthread_mutex_lock(&hang.mu);
    hang.ready = 1;
    snprintf(hang.fn, sizeof hang.fn, "%s", fn ? fn : "");
    hang.from = from ? from : 1;
    hang.calls = 0;
    hang.ms = ms;
    pthread_mutex_unlock(&hang.mu);
}

enum { STEADY, POWERCAP, THROTTLE, NOGPM, LOST };

static void steady(void) {
    sim.v[SIMNVML_UTIL] = 90;
    sim.v[SIMNVML_MEMUTIL] = 40;
    sim.v[SIMNVML_SMCLK] = 1980;
    sim.v[SIMNVML_MEMCLK] = 2619;
    sim.v[SIMNVML_POWER_MW] = 300000;
    sim.v[SIMNVML_LIMIT_MW] = 700000;
    sim.v[SIMNVML_TEMP] = 55;
    sim.v[SIMNVML_MEM_USED] = 20.0 * 1073741824.0;
    sim.v[SIMNVML_REASONS] = 0;
    sim.v[SIMNVML_SM_ACT] = 80;
    sim.v[SIMNVML_SM_OCC] = 35;
    sim.v[SIMNVML_TENSOR] = 60;
    sim.v[SIMNVML_DRAM] = 30;
    sim.v[SIMNVML_FP32] = 10;
    sim.v[SIMNVML_FP16] = 5;
    sim.v[SIMNVML_PCIE_TX] = 100;
    sim.v[SIMNVML_PCIE_RX] = 200;
    sim.v[SIMNVML_NVL_RX] = 0;
    sim.v[SIMNVML_NVL_TX] = 0;
}

static void capped(void) {
    sim.v[SIMNVML_SMCLK] = 1755;
    sim.v[SIMNVML_POWER_MW] = 700000;
    sim.v[SIMNVML_REASONS] = 0x4;
    sim.v[SIMNVML_TEMP] = 83;
}

/* Under mu: the first call sets up from the environment. */
static void ready(void) {
    const char *v;
    if (sim.ready) return;
    sim.ready = 1;
    steady();
    if ((v = getenv("SIMNVML_DEVICES")) != NULL && atoi(v) > 0 && atoi(v) <= 16) sim.devices = atoi(v);
    if ((v = getenv("SIMNVML_AFTER")) != NULL && atoi(v) >= 0) sim.after = atoi(v);
    if ((v = getenv("SIMNVML_THROTTLE_DEVICE")) != NULL && atoi(v) >= 0) sim.throttle_dev = atoi(v);
    v = getenv("SIMNVML_SCENARIO");
    sim.scenario = !v ? STEADY : !strcmp(v, "powercap") ? POWERCAP : !strcmp(v, "throttle") ? THROTTLE : !strcmp(v, "nogpm") ? NOGPM :
                   !strcmp(v, "lost") ? LOST : STEADY;
    if (sim.scenario == NOGPM) sim.gpm = 0;
    if (sim.scenario == THROTTLE) capped();
    if ((v = getenv("SIMNVML_NO_POWER")) != NULL && !strcmp(v, "1")) {
        snprintf(sim.fail[0].fn, sizeof sim.fail[0].fn, "nvmlDeviceGetPowerUsage");
        sim.fail[0].rc = NOT_SUPPORTED;
    }
}

/* Under mu: counts the call; its result if it is made to fail, else OK. */
static int enter(const char *fn) {
    int i;
    ready();
    for (i = 0; i < MAX_COUNT; i++) {
        if (!strcmp(sim.count[i].fn, fn)) { sim.count[i].n++; break; }
        if (!sim.count[i].fn[0]) { snprintf(sim.count[i].fn, sizeof sim.count[i].fn, "%s", fn); sim.count[i].n = 1; break; }
    }
    if (sim.lost && strcmp(fn, "nvmlShutdown") && strcmp(fn, "nvmlErrorString")) return GPU_LOST;
    for (i = 0; i < MAX_FAIL; i++) if (sim.fail[i].rc && !strcmp(sim.fail[i].fn, fn)) return sim.fail[i].rc;
    if (strcmp(fn, "nvmlInit_v2") && strcmp(fn, "nvmlErrorString") && strcmp(fn, "nvmlShutdown") && !sim.inits) return UNINITIALIZED;
    return OK;
}
#define ENTER(fn) int rc_; maybe_hang(fn); pthread_mutex_lock(&sim.mu); if ((rc_ = enter(fn)) != OK) { pthread_mutex_unlock(&sim.mu); return rc_; }
#define LEAVE(rc) do { pthread_mutex_unlock(&sim.mu); return (rc); } while (0)
#define DEV(h) ((int *)(h) >= devs && (int *)(h) < devs + sim.devices)

/* Under mu: what device h reads; the device SIMNVML_THROTTLE_DEVICE names is under its power cap. */
static double val(void *h, int what) {
    if ((int *)h - devs == sim.throttle_dev) {
        if (what == SIMNVML_SMCLK) return 1755;
        if (what == SIMNVML_POWER_MW) return 700000;
        if (what == SIMNVML_REASONS) return 0x4;
        if (what == SIMNVML_TEMP) return 83;
    }
    return sim.v[what];
}

EXPORT void simnvml_reset(void) {
    pthread_mutex_lock(&sim.mu);
    ready();
    steady();
    memset(sim.fail, 0, sizeof sim.fail);
    memset(sim.count, 0, sizeof sim.count);
    sim.gpm = 1;
    sim.lost = 0;
    sim.devices = 1;
    sim.scenario = STEADY;
    sim.util_reads = 0;
    sim.throttle_dev = -1;
    pthread_mutex_unlock(&sim.mu);
}
EXPORT void simnvml_set(int what, double value) {
    pthread_mutex_lock(&sim.mu);
    ready();
    if (what >= 0 && what < SIMNVML_NVALUES) sim.v[what] = value;
    pthread_mutex_unlock(&sim.mu);
}
EXPORT void simnvml_fail(const char *fn, int rc) {
    int i;
    pthread_mutex_lock(&sim.mu);
    ready();
    for (i = 0; i < MAX_FAIL; i++) if (!strcmp(sim.fail[i].fn, fn) || (!sim.fail[i].rc && !sim.fail[i].fn[0])) break;
    if (i < MAX_FAIL) { snprintf(sim.fail[i].fn, sizeof sim.fail[i].fn, "%s", fn); sim.fail[i].rc = rc; }
    pthread_mutex_unlock(&sim.mu);
}
EXPORT void simnvml_set_gpm(int on) { pthread_mutex_lock(&sim.mu); ready(); sim.gpm = on; pthread_mutex_unlock(&sim.mu); }
EXPORT void simnvml_set_lost(int lost) { pthread_mutex_lock(&sim.mu); ready(); sim.lost = lost; pthread_mutex_unlock(&sim.mu); }
EXPORT void simnvml_set_devices(int n) { pthread_mutex_lock(&sim.mu); ready(); sim.devices = n > 0 && n <= 16 ? n : 1; pthread_mutex_unlock(&sim.mu); }
EXPORT unsigned long simnvml_calls(const char *fn) {
    unsigned long n = 0;
    int i;
    pthread_mutex_lock(&sim.mu);
    for (i = 0; i < MAX_COUNT; i++) if (!strcmp(sim.count[i].fn, fn)) n = sim.count[i].n;
    pthread_mutex_unlock(&sim.mu);
    return n;
}

EXPORT int nvmlInit_v2(void) { ENTER("nvmlInit_v2"); sim.inits++; LEAVE(OK); }
EXPORT int nvmlShutdown(void) { ENTER("nvmlShutdown"); if (sim.inits) sim.inits--; LEAVE(OK); }
EXPORT const char *nvmlErrorString(int rc) {
    return rc == OK ? "Success" : rc == NOT_SUPPORTED ? "Not Supported" : rc == 4 ? "Insufficient Permissions" : rc == GPU_LOST ? "GPU is lost" :
           rc == UNINITIALIZED ? "Uninitialized" : rc == 9 ? "Driver Not Loaded" : "Unknown Error";
}
EXPORT int nvmlDeviceGetCount_v2(unsigned *n) { ENTER("nvmlDeviceGetCount_v2"); *n = (unsigned)sim.devices; LEAVE(OK); }
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h) {
    ENTER("nvmlDeviceGetHandleByIndex_v2");
    if (i >= (unsigned)sim.devices) LEAVE(INVALID_ARGUMENT);
    *h = &devs[i];
    LEAVE(OK);
}
EXPORT int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **h) {
    unsigned dom, b, d, f;
    ENTER("nvmlDeviceGetHandleByPciBusId_v2");
    if (sscanf(bus, "%x:%x:%x.%x", &dom, &b, &d, &f) != 4 || dom != 0 || b < 0x3b || b >= 0x3bu + (unsigned)sim.devices) LEAVE(NOT_FOUND);
    *h = &devs[b - 0x3b];
    LEAVE(OK);
}
EXPORT int nvmlDeviceGetIndex(void *h, unsigned *i) { ENTER("nvmlDeviceGetIndex"); if (!DEV(h)) LEAVE(INVALID_ARGUMENT); *i = (unsigned)((int *)h - devs); LEAVE(OK); }
EXPORT int nvmlDeviceGetName(void *h, char *out, unsigned n) {
    ENTER("nvmlDeviceGetName");
    if (!DEV(h)) LEAVE(INVALID_ARGUMENT);
    snprintf(out, n, "Simulated H100 %d", (int)((int *)h - devs));
    LEAVE(OK);
}
#ifndef SIMNVML_BARE                  /* the counters */
EXPORT int nvmlDeviceGetUtilizationRates(void *h, util_t *u) {
    ENTER("nvmlDeviceGetUtilizationRates");
    if (!DEV(h)) LEAVE(INVALID_ARGUMENT);
    if (++sim.util_reads == (unsigned long)sim.after + 1 && sim.scenario == POWERCAP) capped();
    if (sim.util_reads == (unsigned long)sim.after + 1 && sim.scenario == LOST) { sim.lost = 1; LEAVE(GPU_LOST); }
    u->gpu = (unsigned)sim.v[SIMNVML_UTIL];
    u->memory = (unsigned)sim.v[SIMNVML_MEMUTIL];
    LEAVE(OK);
}
EXPORT int nvmlDeviceGetClockInfo(void *h, int type, unsigned *mhz) {
    ENTER("nvmlDeviceGetClockInfo");
    if (!DEV(h) || type < 0 || type > 3) LEAVE(INVALID_ARGUMENT);
    *mhz = (unsigned)val(h, type == 2 ? SIMNVML_MEMCLK : SIMNVML_SMCLK);
    LEAVE(OK);
}
EXPORT int nvmlDeviceGetMaxClockInfo(void *h, int type, unsigned *mhz) {
    ENTER("nvmlDeviceGetMaxClockInfo");
    if (!DEV(h) || type < 0 || type > 3) LEAVE(INVALID_ARGUMENT);
    *mhz = type == 2 ? 2619u : 1980u;
    LEAVE(OK);
}
EXPORT int nvmlDeviceGetPowerUsage(void *h, unsigned *mw) { ENTER("nvmlDeviceGetPowerUsage"); if (!DEV(h)) LEAVE(INVALID_ARGUMENT); *mw = (unsigned)val(h, SIMNVML_POWER_MW); LEAVE(OK); }
EXPORT int nvmlDeviceGetEnforcedPowerLimit(void *h, unsigned *mw) { ENTER("nvmlDeviceGetEnforcedPowerLimit"); if (!DEV(h)) LEAVE(INVALID_ARGUMENT); *mw = (unsigned)sim.v[SIMNVML_LIMIT_MW]; LEAVE(OK); }
EXPORT int nvmlDeviceGetTemperatureV(void *h, temp_t *t) {
    ENTER("nvmlDeviceGetTemperatureV");
    if (!DEV(h) || t->version != ((unsigned)sizeof *t | 1u << 24) || t->sensor != 0) LEAVE(INVALID_ARGUMENT);
    t->temperature = (int)val(h, SIMNVML_TEMP);
    LEAVE(OK);
}
EXPORT int nvmlDeviceGetCurrentClocksEventReasons(void *h, unsigned long long *r) {
    ENTER("nvmlDeviceGetCurrentClocksEventReasons");
    if (!DEV(h)) LEAVE(INVALID_ARGUMENT);
    *r = (unsigned long long)val(h, SIMNVML_REASONS);
    LEAVE(OK);
}
EXPORT int nvmlDeviceGetMemoryInfo(void *h, mem_t *m) {
    ENTER("nvmlDeviceGetMemoryInfo");
    if (!DEV(h)) LEAVE(INVALID_ARGUMENT);
    m->total = 80ull << 30;
    m->used = (unsigned long long)sim.v[SIMNVML_MEM_USED];
    m->free = m->total - m->used;
    LEAVE(OK);
}
EXPORT int nvmlGpmQueryDeviceSupport(void *h, gpm_support_t *s) {
    ENTER("nvmlGpmQueryDeviceSupport");
    if (!DEV(h) || s->version != 1) LEAVE(INVALID_ARGUMENT);
    s->supported = (unsigned)sim.gpm;
    LEAVE(OK);
}
EXPORT int nvmlGpmSampleAlloc(void **s) {
    ENTER("nvmlGpmSampleAlloc");
    if (!(*s = calloc(1, 64))) LEAVE(999);
    sim.samples_out++;
    LEAVE(OK);
}
EXPORT int nvmlGpmSampleFree(void *s) { ENTER("nvmlGpmSampleFree"); free(s); sim.samples_out--; LEAVE(OK); }
EXPORT int nvmlGpmSampleGet(void *h, void *s) {
    ENTER("nvmlGpmSampleGet");
    if (!DEV(h) || !s || !sim.gpm) LEAVE(!sim.gpm ? NOT_SUPPORTED : INVALID_ARGUMENT);
    ((unsigned long *)s)[0]++;            /* the sample was taken */
    LEAVE(OK);
}
EXPORT int nvmlGpmMetricsGet(gpm_get_t *g) {
    unsigned i;
    ENTER("nvmlGpmMetricsGet");
    if (g->version != 1 || !g->sample1 || !g->sample2 || g->sample1 == g->sample2 || g->count > GPM_MAX ||
        !((unsigned long *)g->sample1)[0] || !((unsigned long *)g->sample2)[0]) LEAVE(INVALID_ARGUMENT);
    for (i = 0; i < g->count; i++) {
        int k = -1;
        switch (g->metric[i].id) {
        case 2: k = SIMNVML_SM_ACT; break;
        case 3: k = SIMNVML_SM_OCC; break;
        case 5: k = SIMNVML_TENSOR; break;
        case 10: k = SIMNVML_DRAM; break;
        case 12: k = SIMNVML_FP32; break;
        case 13: k = SIMNVML_FP16; break;
        case 20: k = SIMNVML_PCIE_TX; break;
        case 21: k = SIMNVML_PCIE_RX; break;
        case 60: k = SIMNVML_NVL_RX; break;
        case 61: k = SIMNVML_NVL_TX; break;
        default: break;
        }
        g->metric[i].ret = k < 0 ? NOT_SUPPORTED : OK;
        g->metric[i].value = k < 0 ? 0 : sim.v[k];
    }
    LEAVE(OK);
}
#endif
