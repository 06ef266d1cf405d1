/* A program that calls setlocale(LC_ALL, "de_DE.UTF-8") still gets valid
   JSON and '.' decimals in the report. Built twice: with stb_sprintf and
   with libc's printf (GPUPROF_NO_STB_SPRINTF).
   Exits 77 (skipped) if the locale is not installed, unless
   GPUPROF_REQUIRE_LOCALE=1 (CI installs it). */
#define GPUPROF_IMPLEMENTATION
static unsigned long long vnow = 1000;
#define GPUPROF_CLOCK_FN() vnow
#include "gpuprof.h"
#include "check.h"
#include <locale.h>

int main(int argc, char **argv) {
    gpuprof_config cfg = {0};
    char cmd[1024], *text;
    FILE *f;
    int i;
    if (!setlocale(LC_ALL, "de_DE.UTF-8")) {
        if (getenv("GPUPROF_REQUIRE_LOCALE")) { fprintf(stderr, "FAIL: locale de_DE.UTF-8 is not installed\n"); return 1; }
        printf("test_locale: skipped, de_DE.UTF-8 not installed\n");
        return 77;
    }
    CHECK(strcmp(localeconv()->decimal_point, ",") == 0, "the German locale really uses a decimal comma");
    cfg.report = "off";
    cfg.trace_path = "locale.trace.json";
    gpuprof_init(&cfg);
    for (i = 0; i < 10; i++) {
        { PROF_RANGE("forward"); vnow += 1234 + i; }
        PROF_COUNTER("loss", 0.25 + i * 0.125);
        PROF_STEP();
    }
    CHECK(gpuprof_write_summary("locale.summary.json") == 0, "summary written");
    f = fopen("locale.report.txt", "w");
    gpuprof_report(f);
    fclose(f);
    gpuprof_shutdown();
    snprintf(cmd, sizeof cmd, "python3 -c \"import json,sys; d=json.load(open('locale.summary.json')); "
             "c=[x for x in d['counters'] if x['name']=='loss'][0]; sys.exit(0 if abs(c['mean']-0.8125)<1e-9 and c['last']==1.375 else 1)\"");
    CHECK(system(cmd) == 0, "the summary is valid JSON with '.' decimals (counter mean 0.8125, last 1.375)");
    if (argc > 1) {
        snprintf(cmd, sizeof cmd, "python3 %s locale.trace.json --expect-name loss --expect-x 10", argv[1]);
        CHECK(system(cmd) == 0, "the trace is valid JSON");
    }
    text = check_slurp("locale.report.txt");
    CHECK(text && strstr(text, "1.24 us") != NULL, "the report writes 1.24 us, not 1,24 us");
    CHECK(text && strstr(text, "0.8125") != NULL, "the report writes counter values with '.'");
    free(text);
    return check_done("test_locale");
}
