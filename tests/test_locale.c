/* A program that calls setlocale(LC_ALL, "de_DE.UTF-8") or a locale whose
   decimal point is neither ',' nor '.' (ps_AF.UTF-8) still gets valid JSON
   and '.' decimals in the report. Built twice: with stb_sprintf and
   with libc's printf (GPUPROF_NO_STB_SPRINTF).
   Exits 77 (skipped) if neither locale is installed, unless
   GPUPROF_REQUIRE_LOCALE=1 (CI installs both). */
#include "gpuprof.h"
#include "impl/clock.h"                 /* vnow: built with the implementation's "vnow" configuration */
#include "check.h"
#include <locale.h>

/* One session under `locale`; its summary, trace and report are checked. */
static void run_in(const char *locale, const char *tag, const char *check_trace) {
    gpuprof_config cfg = {0};
    char cmd[1024], path[64], trace[64], what[160], *text;
    FILE *f;
    int i;
    setlocale(LC_ALL, locale);
    snprintf(trace, sizeof trace, "locale.%s.trace.json", tag);
    cfg.report = "off";
    cfg.trace_path = trace;
    gpuprof_init(&cfg);
    for (i = 0; i < 10; i++) {
        { PROF_RANGE("forward"); vnow += 1234 + (unsigned)i; }
        PROF_COUNTER("loss", 0.25 + i * 0.125);
        PROF_STEP();
    }
    snprintf(path, sizeof path, "locale.%s.summary.json", tag);
    CHECK(gpuprof_write_summary(path) == 0, "summary written");
    snprintf(path, sizeof path, "locale.%s.report.txt", tag);
    f = fopen(path, "w");
    gpuprof_report(f);
    fclose(f);
    gpuprof_shutdown();
    setlocale(LC_ALL, "C");        /* python reads the files */
    snprintf(cmd, sizeof cmd, "python3 -c \"import json,sys; d=json.load(open('locale.%s.summary.json')); "
             "c=[x for x in d['counters'] if x['name']=='loss'][0]; sys.exit(0 if abs(c['mean']-0.8125)<1e-9 and c['last']==1.375 else 1)\"", tag);
    snprintf(what, sizeof what, "%s: the summary is valid JSON with '.' decimals (counter mean 0.8125, last 1.375)", locale);
    CHECK(system(cmd) == 0, what);
    if (check_trace) {
        snprintf(cmd, sizeof cmd, "python3 %s %s --expect-name loss --expect-x 10", check_trace, trace);
        snprintf(what, sizeof what, "%s: the trace is valid JSON", locale);
        CHECK(system(cmd) == 0, what);
    }
    text = check_slurp(path);
    snprintf(what, sizeof what, "%s: the report writes 1.24 us, with '.'", locale);
    CHECK(text && strstr(text, "1.24 us") != NULL, what);
    snprintf(what, sizeof what, "%s: the report writes counter values with '.'", locale);
    CHECK(text && strstr(text, "0.8125") != NULL, what);
    free(text);
}

int main(int argc, char **argv) {
    /* German: a decimal comma. Pashto (Afghanistan): U+066B ARABIC DECIMAL
       SEPARATOR, two bytes that are neither ',' nor '.'. */
    static const char *const locales[] = { "de_DE.UTF-8", "ps_AF.UTF-8" }, *const tags[] = { "de", "ps" };
    int k, ran = 0;
    for (k = 0; k < 2; k++) {
        if (!setlocale(LC_ALL, locales[k])) {
            if (getenv("GPUPROF_REQUIRE_LOCALE")) { fprintf(stderr, "FAIL: locale %s is not installed\n", locales[k]); return 1; }
            printf("test_locale: %s not installed, not checked\n", locales[k]);
            continue;
        }
        if (k == 0) CHECK(strcmp(localeconv()->decimal_point, ",") == 0, "the German locale really uses a decimal comma");
        else CHECK(strcmp(localeconv()->decimal_point, "\xd9\xab") == 0, "the Pashto locale really uses U+066B");
        run_in(locales[k], tags[k], argc > 1 ? argv[1] : NULL);
        ran++;
    }
    if (!ran) { printf("test_locale: skipped, no test locale installed\n"); return 77; }
    return check_done("test_locale");
}
