/* Load (docs/faults.md): 16 threads x 10^6 ranges while another thread
   reports and flushes in a loop; a 10^7-range run with a trace whose peak
   RSS stays bounded; 100 000 distinct dynamic names against the name cap.
   Statistics must be exact; every trace event is either written or counted
   as dropped. */
#include "gpuprof.h"
#include "json_util.h"
#include <pthread.h>
#include <sys/resource.h>

enum { THREADS = 16, PER_THREAD = 1000000 };
static int stop_reporter;

static void *recorder(void *arg) {
    int i;
    (void)arg;
    for (i = 0; i < PER_THREAD; i++) { PROF_RANGE("hot"); }
    return NULL;
}

static void *reporter(void *arg) {
    FILE *null = fopen("/dev/null", "w");
    long *n = (long *)arg;
    while (!__atomic_load_n(&stop_reporter, __ATOMIC_ACQUIRE)) {
        gpuprof_report(null);
        gpuprof_flush();
        (*n)++;
    }
    fclose(null);
    return NULL;
}

static long peak_rss_kib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

int main(void) {
    gpuprof_config cfg;
    pthread_t th[THREADS], rep;
    long reports = 0, rss0, rss1;
    cJSON *j, *trace;
    int i;

    /* 1. 10^7 ranges with a trace: memory stays bounded */
    rss0 = peak_rss_kib();
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = "load.trace.json";
    cfg.report = "off";
    cfg.trace_buffer_mb = 16;            /* the bound follows the setting (64 MiB by default) */
    gpuprof_init(&cfg);
    for (i = 0; i < 10000000; i++) { PROF_RANGE("ten million"); }
    gpuprof_shutdown();
    j = NULL;
    rss1 = peak_rss_kib();
    printf("10^7 ranges with a trace: peak RSS %ld KiB (%ld KiB before gpuprof started, %ld KiB more)\n", rss1, rss0, rss1 - rss0);
    CHECK(rss1 - rss0 < 64 * 1024, "a 10^7-range run with 16 MiB of trace buffers adds less than 64 MiB to peak RSS (under ASan too)");
    remove("load.trace.json");

    /* 2. 16 threads x 10^6, a reporter in a loop */
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = "load.trace.json";
    cfg.summary_path = "load.summary.json";
    cfg.report = "off";
    gpuprof_init(&cfg);
    pthread_create(&rep, NULL, reporter, &reports);
    for (i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, recorder, NULL);
    for (i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    __atomic_store_n(&stop_reporter, 1, __ATOMIC_RELEASE);
    pthread_join(rep, NULL);
    gpuprof_shutdown();
    j = summary_load("load.summary.json");
    trace = cJSON_GetObjectItem(j, "trace");
    printf("16 threads x 10^6 ranges with %ld reports meanwhile: %.0f counted, %.0f trace events written, %.0f dropped\n",
           reports, jnum(summary_find(j, "ranges", "hot"), "count"), jnum(trace, "events"), jnum(trace, "dropped"));
    CHECK_EQ_U(jnum(summary_find(j, "ranges", "hot"), "count"), (double)THREADS * PER_THREAD, "every range counted, exactly");
    CHECK_EQ_U(jnum(trace, "events") + jnum(trace, "dropped"), (double)THREADS * PER_THREAD, "every trace event written or counted as dropped");
    CHECK(reports > 0, "the reporter ran meanwhile");
    cJSON_Delete(j);

    /* 3. 100 000 distinct dynamic names against the cap of 4096 */
    memset(&cfg, 0, sizeof cfg);
    cfg.summary_path = "load_names.summary.json";
    cfg.report = "off";
    gpuprof_init(&cfg);
    for (i = 0; i < 100000; i++) {
        char name[32];
        snprintf(name, sizeof name, "tensor %d", i);
        { PROF_RANGE_DYN(name); }
    }
    gpuprof_shutdown();
    j = summary_load("load_names.summary.json");
    {
        double total = 0, named = 0;
        cJSON *r;
        cJSON_ArrayForEach(r, cJSON_GetObjectItem(j, "ranges")) {
            total += jnum(r, "count");
            if (strncmp(cJSON_GetObjectItem(r, "name")->valuestring, "tensor ", 7) == 0) named++;
        }
        printf("100000 distinct names: %.0f kept by name, %.0f calls in [other names], %.0f calls in all\n",
               named, jnum(summary_find(j, "ranges", "[other names]"), "count"), total);
        CHECK_EQ_U(total, 100000, "every call counted");
        CHECK_EQ_U(named, 4096, "the first 4096 names (max_names) keep their rows");
        CHECK_EQ_U(jnum(summary_find(j, "ranges", "[other names]"), "count"), 100000 - 4096, "the rest in one overflow row");
        CHECK_EQ_U(jnum(cJSON_GetObjectItem(j, "warnings"), "names_over_cap"), 100000 - 4096, "each counted as over the cap");
    }
    cJSON_Delete(j);
    return check_done("test_load");
}
