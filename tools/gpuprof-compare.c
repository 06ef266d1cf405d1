/* gpuprof-compare -- compares two gpuprof JSON summaries: per range, the
   baseline and the new time, the change, and whether the change stands out
   of the noise (Welch's t-test on the recorded mean, standard deviation and
   count); ranges added or gone; memory peaks; an overall line; an exit
   status for CI (--fail-if-slower PCT). Plain C99, no dependencies: the
   summaries are read with tools/summary_json.h (shared with gpuprof-ranks).

   Build: cc -O2 -o gpuprof-compare tools/gpuprof-compare.c -lm
   (CMake builds it as tools/gpuprof-compare). Run with --help for the rule. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOOL "gpuprof-compare"
#include "summary_json.h"

static const char *const usage_text =
    "usage: " TOOL " [options] BASELINE.json[,MORE.json...] NEW.json[,MORE.json...]\n"
    "\n"
    "Compares two gpuprof JSON summaries (gpuprof_write_summary, GPUPROF_SUMMARY=path) range\n"
    "by range: the baseline and new mean time per call, the change, and whether the change\n"
    "stands out of the noise. Also: ranges added or gone, memory peaks, the typical step's time\n"
    "(the steps the verdict calls typical: other kinds of step, such as an evaluation every N,\n"
    "and outlier steps set apart) and each other kind of step's on a row of its own.\n"
    "Several runs a side, comma-separated, are compared run against run (see the rule).\n"
    "\n"
    "options:\n"
    "  --fail-if-slower PCT  exit 1 when the step time or any range is significantly slower\n"
    "                        by more than PCT percent (for CI)\n"
    "  --alpha A             significance level of the test (default 0.01)\n"
    "  --min-change PCT      the smallest change that counts, in percent (default 5)\n"
    "  --time gpu|cpu|auto   which time to compare: GPU time per call, CPU time per call, or\n"
    "                        (auto, the default) GPU time where both runs have it and it is\n"
    "                        longer than the CPU time in the baseline, else CPU time\n"
    "  --rows N              ranges to list, largest baseline total first (default 40; 0 = all)\n"
    "  --html PATH           also write the comparison as one self-contained HTML page: each\n"
    "                        row's change as a bar, and the two runs' verdicts side by side\n"
    "  -h, --help            this text\n"
    "\n"
    "The rule: a change stands out of the noise when Welch's t-test on the two runs'\n"
    "recorded statistics (mean, sample standard deviation and count of the calls) gives a\n"
    "two-sided p-value below alpha AND the mean changed by at least min-change percent.\n"
    "Either alone is not enough: with many calls a 0.1% drift is 'significant' yet not worth\n"
    "a look; with few, noisy calls a 10% change may be chance. The test takes the calls as\n"
    "independent samples; calls in a loop are often correlated, so treat p as a guide.\n"
    "Steps within one run are not independent samples of the machine's speed: the same code\n"
    "run twice on a busy machine can differ by more than its steps' spread (clock speed,\n"
    "neighbours). So: with several runs a side, the test is Welch's on the runs' means (each\n"
    "run one sample). With one run a side, the noise between runs is estimated from each run's\n"
    "own drift (steps.over_time.drift: its last tenth of typical steps against its first),\n"
    "added to the variance of each mean, and a change under twice that noise (at least\n"
    "min-change) is within noise; the line 'noise between runs' says how large a change must\n"
    "be. Run each side two or three times where the machine is shared.\n"
    "Ranges with fewer than 2 calls in either run are compared without a test ('n/a').\n"
    "\n"
    "exit status: 0 compared; 1 --fail-if-slower was exceeded; 2 bad usage or unreadable input.\n";

/* ----------------------------------------------------------------------
   Statistics: Welch's t-test, its p-value from the regularized incomplete
   beta function (continued fraction, modified Lentz).
   ---------------------------------------------------------------------- */
static double beta_cf(double a, double b, double x) {
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1), h;
    int m;
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    h = d;
    for (m = 1; m <= 300; m++) {
        double m2 = 2.0 * m, num, delta;
        /* the even step, then the odd one, of the continued fraction */
        num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
        d = 1 + num * d; if (fabs(d) < tiny) d = tiny;
        c = 1 + num / c; if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
        d = 1 + num * d; if (fabs(d) < tiny) d = tiny;
        c = 1 + num / c; if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        delta = d * c;
        h *= delta;
        if (fabs(delta - 1) < 1e-15) break;
    }
    return h;
}

static double beta_inc(double a, double b, double x) {
    double front;
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
    return 1 - front * beta_cf(b, a, 1 - x) / b;
}

/* Two-sided p-value of Welch's test; NaN when it cannot be computed. */
static double welch_p(double m1, double s1, double n1, double m2, double s2, double n2, double *t_out) {
    double v1, v2, se2, t, df;
    if (!(n1 >= 2 && n2 >= 2) || s1 != s1 || s2 != s2 || m1 != m1 || m2 != m2) return NAN;
    v1 = s1 * s1 / n1;
    v2 = s2 * s2 / n2;
    se2 = v1 + v2;
    if (se2 <= 0) { *t_out = m1 == m2 ? 0 : INFINITY; return m1 == m2 ? 1.0 : 0.0; }
    t = (m2 - m1) / sqrt(se2);
    df = se2 * se2 / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1));
    *t_out = t;
    return beta_inc(df / 2, 0.5, df / (df + t * t));
}

/* ----------------------------------------------------------------------
   The comparison.
   ---------------------------------------------------------------------- */
typedef struct opts { double alpha, min_change, fail_pct; int fail_on, time_mode, rows; const char *html; } opts;
#define MAX_RUNS 16
/* One side of the comparison: its runs' summaries. */
typedef struct runs { jv doc[MAX_RUNS]; int n; double noise; } runs;
enum { T_AUTO, T_GPU, T_CPU };
enum { V_NA, V_SAME, V_FASTER, V_SLOWER, V_CALLS };

typedef struct cmp {
    const char *name;
    double base_total;
    int gpu;                  /* compared on GPU time */
    double n1, m1, s1, n2, m2, s2, change, p;
    int verdict;
} cmp;

static const char *fmt_ns(char *buf, size_t n, double ns) {
    static const char *const unit[] = { "ns", "us", "ms", "s" };
    int u = 0;
    if (ns != ns) { snprintf(buf, n, "-"); return buf; }
    while (u < 3 && fabs(ns) >= 999.5) { ns /= 1000.0; u++; }
    if (u == 0) snprintf(buf, n, "%.0f ns", ns);
    else snprintf(buf, n, fabs(ns) < 9.995 ? "%.2f %s" : fabs(ns) < 99.95 ? "%.1f %s" : "%.0f %s", ns, unit[u]);
    return buf;
}

static const char *fmt_bytes(char *buf, size_t n, double v) {
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    if (v != v) { snprintf(buf, n, "-"); return buf; }
    while (u < 4 && fabs(v) >= 1023.5) { v /= 1024.0; u++; }
    if (u == 0) snprintf(buf, n, "%.0f B", v);
    else snprintf(buf, n, fabs(v) < 9.995 ? "%.2f %s" : fabs(v) < 99.95 ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return buf;
}

static const char *fmt_p(char *buf, size_t n, double p) {
    if (p != p) snprintf(buf, n, "-");
    else if (p < 1e-99) snprintf(buf, n, "<1e-99");
    else snprintf(buf, n, "%.2g", p);
    return buf;
}

static void decide(cmp *c, const opts *o) {
    double t = 0;
    c->change = c->m1 > 0 ? 100.0 * (c->m2 - c->m1) / c->m1 : NAN;
    c->p = welch_p(c->m1, c->s1, c->n1, c->m2, c->s2, c->n2, &t);
    if (c->p != c->p || c->change != c->change) c->verdict = V_NA;
    else if (c->p < o->alpha && fabs(c->change) >= o->min_change) c->verdict = c->change > 0 ? V_SLOWER : V_FASTER;
    else c->verdict = V_SAME;
}

/* The same with the noise between runs (one run a side: each side's
   relative noise, from its drift) added to each mean's variance, and a
   change under twice it within noise. */
static void decide_runs(cmp *c, const opts *o, const runs *a, const runs *b) {
    opts w = *o;
    double floor_pct = 200.0 * sqrt(a->noise * a->noise + b->noise * b->noise);
    if (a->n == 1 && b->n == 1 && c->n1 > 0 && c->n2 > 0) {
        c->s1 = sqrt(c->s1 * c->s1 + c->n1 * (a->noise * c->m1) * (a->noise * c->m1));
        c->s2 = sqrt(c->s2 * c->s2 + c->n2 * (b->noise * c->m2) * (b->noise * c->m2));
        if (floor_pct > w.min_change) w.min_change = floor_pct;
    }
    decide(c, &w);
}

/* A side's runs from "a.json,b.json" (0; 2: a file could not be read, said). */
static int load_runs(const char *list, runs *r) {
    char path[4096];
    const char *p = list;
    memset(r, 0, sizeof *r);
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (r->n == MAX_RUNS) { fprintf(stderr, TOOL ": more than %d runs on one side\n", MAX_RUNS); return 2; }
        if (len >= sizeof path || !len) { fprintf(stderr, TOOL ": '%s' is not a list of files\n", list); return 2; }
        memcpy(path, p, len);
        path[len] = 0;
        if (load(path, &r->doc[r->n]) != 0) return 2;
        r->n++;
        p = e ? e + 1 : p + len;
        if (e && !*p) { fprintf(stderr, TOOL ": '%s' is not a list of files (it ends in a comma)\n", list); return 2; }
    }
    return r->n ? 0 : 2;
}

/* A run's steps compared: its typical steps (steps.typical_time) where the
   summary has them, else all its counted steps. */
static const jv *step_time(const jv *doc) {
    const jv *t = jget(jget(doc, "steps"), "typical_time");
    return jnum(t, "count") > 0 ? t : jget(jget(doc, "steps"), "time");
}

/* A run's noise between runs, relative: its drift's change (the last tenth
   of its typical steps against the first), 0 where it had too few steps. */
static double run_noise(const jv *doc) {
    const jv *d = jget(jget(jget(doc, "steps"), "over_time"), "drift");
    double a = jnum(d, "first_tenth_ns"), b = jnum(d, "last_tenth_ns");
    return a > 0 && b == b ? fabs(b - a) / a : 0.0;
}

/* The statistics of one thing over a side's runs: with one run, its own
   (count, mean, std); with several, each run's mean as one sample. get:
   a run's count, mean and std (0: it has it). */
typedef int (*get_fn)(const jv *doc, const void *arg, double *n, double *m, double *s);
static int side_stats(const runs *r, get_fn get, const void *arg, double *n, double *m, double *s) {
    double sum = 0, sum2 = 0, cn, cm, cs;
    int k;
    if (r->n == 1) return get(&r->doc[0], arg, n, m, s);
    for (k = 0; k < r->n; k++) {
        if (get(&r->doc[k], arg, &cn, &cm, &cs) != 0) return -1;
        sum += cm;
        sum2 += cm * cm;
    }
    *n = r->n;
    *m = sum / r->n;
    *s = sqrt(fmax(0.0, (sum2 - sum * sum / r->n) / (r->n - 1)));
    return 0;
}

/* The statistics a range is compared on. */
static int range_stats(const jv *r, int want_gpu, double *n, double *m, double *s) {
    const jv *g = jget(r, "gpu");
    const jv *src = want_gpu ? g : r;
    if (!src || src->type != J_OBJ) return -1;
    *n = jnum(src, "count");
    *m = jnum(src, "mean_ns");
    *s = jnum(src, "std_ns");
    return *n > 0 ? 0 : -1;
}

/* Getters for side_stats: the typical step; a kind of step (arg: its
   ranges, "eval,log"); a range (arg: a range_key). */
static int get_step(const jv *doc, const void *arg, double *n, double *m, double *s) {
    const jv *t = step_time(doc);
    (void)arg;
    *n = jnum(t, "count"); *m = jnum(t, "mean_ns"); *s = jnum(t, "std_ns");
    return *n > 0 ? 0 : -1;
}
static void kind_key(const jv *kd, char *out, size_t cap) {
    const jv *rs = jget(kd, "ranges");
    size_t i, k = 0;
    out[0] = 0;
    for (i = 0; rs && i < rs->n && k + 1 < cap; i++)
        if (rs->kids[i].type == J_STR) k += (size_t)snprintf(out + k, cap - k, "%s%s", k ? "," : "", rs->kids[i].str);
}
static const jv *find_kind(const jv *doc, const char *key) {
    const jv *ks = jget(jget(doc, "verdict"), "step_kinds");
    char k2[512];
    size_t i;
    for (i = 0; ks && i < ks->n; i++) {
        kind_key(&ks->kids[i], k2, sizeof k2);
        if (!strcmp(k2, key)) return &ks->kids[i];
    }
    return NULL;
}
static int get_kind(const jv *doc, const void *arg, double *n, double *m, double *s) {
    const jv *t = jget(find_kind(doc, (const char *)arg), "time");
    *n = jnum(t, "count"); *m = jnum(t, "mean_ns"); *s = jnum(t, "std_ns");
    return *n > 0 ? 0 : -1;
}
typedef struct range_key { const char *name; int gpu; } range_key;
static int get_range(const jv *doc, const void *arg, double *n, double *m, double *s) {
    const range_key *k = (const range_key *)arg;
    const jv *rs = jget(doc, "ranges");
    size_t i;
    for (i = 0; rs && i < rs->n; i++) {
        const jv *nm = jget(&rs->kids[i], "name");
        if (nm && nm->type == J_STR && !strcmp(nm->str, k->name)) return range_stats(&rs->kids[i], k->gpu, n, m, s);
    }
    return -1;
}

static int has_gpu(const jv *r) {
    const jv *g = jget(r, "gpu");
    return g && g->type == J_OBJ && jnum(g, "count") > 0;
}

static const jv *find_range(const jv *ranges, const char *name) {
    size_t i;
    for (i = 0; ranges && i < ranges->n; i++) {
        const jv *nm = jget(&ranges->kids[i], "name");
        if (nm && nm->type == J_STR && strcmp(nm->str, name) == 0) return &ranges->kids[i];
    }
    return NULL;
}

/* One run's side of a range not compared: its counted calls and mean, and
   the calls open when that summary was written (a checkpoint mid-run). */
static void side(const char *label, const jv *r) {
    char b[32];
    const jv *o = jget(r, "open");
    if (!r) { printf("  %s: absent", label); return; }
    printf("  %s: %.0f calls", label, jnum(r, "count"));
    if (jnum(r, "count") > 0) printf(", mean %s", fmt_ns(b, sizeof b, jnum(r, "mean_ns")));
    if (o && jnum(o, "calls") > 0) printf(", %.0f open (%s so far)", jnum(o, "calls"), fmt_ns(b, sizeof b, jnum(o, "ns")));
}

/* Is a range open in this summary (calls under way when it was written)? */
static int is_open(const jv *r) { return r && jnum(jget(r, "open"), "calls") > 0; }

/* A range open or without a counted call in one of the runs: both sides. */
static void open_line(int *n, int width, const char *name, const jv *a1, const jv *a2) {
    if (!(*n)++) printf("\nopen or without a counted call (a summary written mid-run: calls under way are not in its figures):\n");
    printf("  %-*s", width, name);
    side("baseline", a1);
    side(";  new", a2);
    printf("\n");
}

static const char *verdict_word(int v) {
    return v == V_FASTER ? "faster" : v == V_SLOWER ? "SLOWER" : v == V_SAME ? "within noise" : v == V_CALLS ? "calls per step differ*" : "n/a";
}

static void print_row(const cmp *c, int width) {
    char b1[32], b2[32], ch[32], p[32];
    if (c->verdict == V_CALLS) snprintf(ch, sizeof ch, "%+.1f%%*", c->change);
    else if (c->change == c->change) snprintf(ch, sizeof ch, "%+.1f%%", c->change);
    else snprintf(ch, sizeof ch, "-");
    printf("%-*s %3s %9.0f %9.0f %10s %10s %8s %8s  %s\n", width, c->name, c->gpu ? "GPU" : "CPU", c->n1, c->n2,
           fmt_ns(b1, sizeof b1, c->m1), fmt_ns(b2, sizeof b2, c->m2), ch, fmt_p(p, sizeof p, c->p), verdict_word(c->verdict));
}

static int cmp_total(const void *a, const void *b) {
    double x = ((const cmp *)a)->base_total, y = ((const cmp *)b)->base_total;
    return x < y ? 1 : x > y ? -1 : strcmp(((const cmp *)a)->name, ((const cmp *)b)->name);
}

static void mem_line(const char *what, double a, double b) {
    char b1[32], b2[32];
    if (a != a && b != b) return;
    printf("  %-24s %10s -> %10s", what, fmt_bytes(b1, sizeof b1, a), fmt_bytes(b2, sizeof b2, b));
    if (a == a && b == b && a > 0) printf("  (%+.1f%%)", 100.0 * (b - a) / a);
    printf("\n");
}

static const char *proc_of(const jv *doc) {
    const jv *p = jget(jget(doc, "run"), "process");
    return p && p->type == J_STR ? p->str : "?";
}

/* Which steps are compared, and with one run a side how large a change
   must be to be told from the noise between runs. */
static void describe_sides(const runs *sd, const opts *o) {
    int a;
    for (a = 0; a < 2; a++) {
        const jv *st = jget(&sd[a].doc[0], "steps"), *ty = jget(st, "typical_time");
        const jv *out = jget(jget(&sd[a].doc[0], "verdict"), "outlier_steps");
        printf("%s: %d run%s", a ? "new" : "baseline", sd[a].n, sd[a].n == 1 ? "" : "s");
        if (jnum(ty, "count") > 0)
            printf("; compared on its typical steps, %.0f of %.0f counted (%.0f outlier steps and other kinds of step apart)", jnum(ty, "count"),
                   jnum(st, "counted"), jnum(out, "count") == jnum(out, "count") ? jnum(out, "count") : 0.0);
        else printf("; compared on all %.0f counted steps", jnum(st, "counted"));
        printf("\n");
    }
    if (sd[0].n > 1 && sd[1].n > 1) printf("several runs a side: each run's mean is one sample of the test\n");
    else {
        double floor_pct = 200.0 * sqrt(sd[0].noise * sd[0].noise + sd[1].noise * sd[1].noise);
        printf("noise between runs: %.1f%% and %.1f%% (each run's drift, its last tenth against its first): with one run a side, "
               "a change under %.1f%% is within noise; several runs a side (a.json,b.json) test the runs themselves\n",
               100.0 * sd[0].noise, 100.0 * sd[1].noise, floor_pct > o->min_change ? floor_pct : o->min_change);
    }
}

/* A row for each kind of step set apart in the baseline and found in the
   new run (by the ranges it runs): its steps' time. */
static int kind_rows(const runs *sd, const opts *o, cmp *out, int max) {
    const jv *ks = jget(jget(&sd[0].doc[0], "verdict"), "step_kinds");
    static char keys[8][512];
    size_t i;
    int n = 0;
    for (i = 0; ks && i < ks->n && n < max && n < 8; i++) {
        cmp *c = &out[n];
        kind_key(&ks->kids[i], keys[n], sizeof keys[n]);
        memset(c, 0, sizeof *c);
        if (!keys[n][0] || side_stats(&sd[0], get_kind, keys[n], &c->n1, &c->m1, &c->s1) != 0 ||
            side_stats(&sd[1], get_kind, keys[n], &c->n2, &c->m2, &c->s2) != 0) continue;
        c->name = keys[n];
        decide_runs(c, o, &sd[0], &sd[1]);
        n++;
    }
    return n;
}

/* The options and the two sides' lists into o and files: -1 to go on, else
   the exit status (the message said). */
static int parse_args(int argc, char **argv, opts *o, const char **files) {
    int nfiles = 0, a;
    for (a = 1; a < argc; a++) {
        const char *s = argv[a];
        char *end;
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) { fputs(usage_text, stdout); return 0; }
        if (!strcmp(s, "--fail-if-slower") || !strcmp(s, "--alpha") || !strcmp(s, "--min-change") || !strcmp(s, "--rows") || !strcmp(s, "--time")) {
            double x;
            if (a + 1 >= argc) { fprintf(stderr, TOOL ": %s needs a value (see --help)\n", s); return 2; }
            if (!strcmp(s, "--time")) {
                const char *t = argv[++a];
                if (!strcmp(t, "gpu")) o->time_mode = T_GPU;
                else if (!strcmp(t, "cpu")) o->time_mode = T_CPU;
                else if (!strcmp(t, "auto")) o->time_mode = T_AUTO;
                else { fprintf(stderr, TOOL ": --time '%s' is not gpu, cpu or auto\n", t); return 2; }
                continue;
            }
            errno = 0;
            x = strtod(argv[++a], &end);
            if (errno || *end || end == argv[a] || x != x || x < 0) { fprintf(stderr, TOOL ": %s '%s' is not a non-negative number\n", s, argv[a]); return 2; }
            if (!strcmp(s, "--fail-if-slower")) { o->fail_pct = x; o->fail_on = 1; }
            else if (!strcmp(s, "--alpha")) {
                if (!(x > 0 && x < 1)) { fprintf(stderr, TOOL ": --alpha must be between 0 and 1 (e.g. 0.01)\n"); return 2; }
                o->alpha = x;
            } else if (!strcmp(s, "--min-change")) o->min_change = x;
            else o->rows = (int)x;
            continue;
        }
        if (!strcmp(s, "--html")) {
            if (a + 1 >= argc) { fprintf(stderr, TOOL ": --html needs a path (see --help)\n"); return 2; }
            o->html = argv[++a];
            continue;
        }
        if (s[0] == '-' && s[1]) { fprintf(stderr, TOOL ": unknown option %s (see --help)\n", s); return 2; }
        if (nfiles == 2) { fprintf(stderr, TOOL ": more than two files given (see --help)\n"); return 2; }
        files[nfiles++] = s;
    }
    if (nfiles != 2) { fprintf(stderr, "%s", usage_text); return 2; }
    return -1;
}

/* Range a1 of the baseline (a2: the new run's of that name) compared into
   c: 0 where it cannot be (no GPU time asked for, no counted call). */
static int compare_range(const runs *sd, const opts *o, const jv *a1, const jv *a2, const char *name, cmp *c) {
    double steps1 = jnum(jget(&sd[0].doc[0], "steps"), "counted"), steps2 = jnum(jget(&sd[1].doc[0], "steps"), "counted"), bn, bm, bs;
    range_key key;
    memset(c, 0, sizeof *c);
    c->name = name;
    /* auto: the time that holds the range in the baseline: GPU time when
       both runs have one and it is the longer (a range that waits has
       CPU time only to show) */
    key.name = name;
    key.gpu = o->time_mode == T_GPU ||
              (o->time_mode == T_AUTO && has_gpu(a1) && has_gpu(a2) && jnum(jget(a1, "gpu"), "mean_ns") > jnum(a1, "mean_ns"));
    if (side_stats(&sd[0], get_range, &key, &c->n1, &c->m1, &c->s1) != 0 || side_stats(&sd[1], get_range, &key, &c->n2, &c->m2, &c->s2) != 0) {
        if (o->time_mode == T_GPU) return 0;       /* no GPU time in one of the runs */
        key.gpu = 0;
        if (side_stats(&sd[0], get_range, &key, &c->n1, &c->m1, &c->s1) != 0 || side_stats(&sd[1], get_range, &key, &c->n2, &c->m2, &c->s2) != 0) return 0;
    }
    c->gpu = key.gpu;
    c->base_total = range_stats(a1, key.gpu, &bn, &bm, &bs) == 0 ? bn * bm : 0;   /* the order of the rows: the first baseline run's total */
    decide_runs(c, o, &sd[0], &sd[1]);
    /* a range called more or less often per step: its time per call is
       not the point; its time per step is (no test: one total per run) */
    if (sd[0].n == 1 && sd[1].n == 1 && steps1 > 0 && steps2 > 0 && fabs(c->n1 / steps1 - c->n2 / steps2) > 0.01 * (c->n1 / steps1)) {
        double t1 = c->m1 * c->n1 / steps1, t2 = c->m2 * c->n2 / steps2;
        c->change = t1 > 0 ? 100.0 * (t2 - t1) / t1 : NAN;
        c->verdict = V_CALLS;
        c->p = NAN;
    }
    return 1;
}

/* Ranges open, or without a counted call, in either run (a summary
   written mid-run: a checkpoint inside the first evaluation): said, not
   dropped; then ranges in one run only, counted into *added and *gone. */
static void print_unmatched(const jv *r1, const jv *r2, int width, int *added, int *gone) {
    int open = 0;
    size_t i;
    char b[32];
    for (i = 0; r1 && i < r1->n; i++) {
        const jv *a1 = &r1->kids[i], *nm = jget(a1, "name"), *a2;
        if (!nm || nm->type != J_STR) continue;
        a2 = find_range(r2, nm->str);
        if (a2 ? !is_open(a1) && !is_open(a2) && jnum(a1, "count") > 0 && jnum(a2, "count") > 0 : !is_open(a1)) continue;
        open_line(&open, width, nm->str, a1, a2);
    }
    for (i = 0; r2 && i < r2->n; i++) {
        const jv *nm = jget(&r2->kids[i], "name");
        if (nm && nm->type == J_STR && !find_range(r1, nm->str) && is_open(&r2->kids[i])) open_line(&open, width, nm->str, NULL, &r2->kids[i]);
    }
    for (i = 0; r2 && i < r2->n; i++) {
        const jv *nm = jget(&r2->kids[i], "name");
        if (!nm || nm->type != J_STR || find_range(r1, nm->str)) continue;
        if (!(*added)++) printf("\nadded (only in the new run):\n");
        printf("  %-*s %9.0f calls, mean %s\n", width, nm->str, jnum(&r2->kids[i], "count"), fmt_ns(b, sizeof b, jnum(&r2->kids[i], "mean_ns")));
    }
    for (i = 0; r1 && i < r1->n; i++) {
        const jv *nm = jget(&r1->kids[i], "name");
        if (!nm || nm->type != J_STR || find_range(r2, nm->str)) continue;
        if (!(*gone)++) printf("\ngone (only in the baseline):\n");
        printf("  %-*s %9.0f calls, mean %s\n", width, nm->str, jnum(&r1->kids[i], "count"), fmt_ns(b, sizeof b, jnum(&r1->kids[i], "mean_ns")));
    }
}

/* The memory peaks of the two first runs. */
static void print_memory(const jv *doc1, const jv *doc2) {
    const jv *m1 = jget(doc1, "memory"), *m2 = jget(doc2, "memory");
    double t1 = jnum(jget(m1, "tracked"), "peak_bytes"), t2 = jnum(jget(m2, "tracked"), "peak_bytes");
    double h1 = jnum(jget(m1, "host"), "peak_rss_bytes"), h2 = jnum(jget(m2, "host"), "peak_rss_bytes");
    double d1 = jnum(jget(m1, "device"), "used_bytes"), d2 = jnum(jget(m2, "device"), "used_bytes");
    double p1 = jnum(jget(jget(m1, "device"), "pool"), "used_high_bytes"), p2 = jnum(jget(jget(m2, "device"), "pool"), "used_high_bytes");
    if (!((t1 > 0 || t2 > 0) || h1 == h1 || h2 == h2 || d1 == d1 || d2 == d2)) return;
    printf("\nmemory (baseline -> new):\n");
    if (t1 > 0 || t2 > 0) mem_line("tracked peak", t1, t2);
    mem_line("device used (last snapshot)", d1, d2);
    mem_line("pool used high-water", p1, p2);
    mem_line("host peak RSS", h1, h2);
}

/* The rows' verdicts counted: [faster, slower, within noise, not testable, called differently]. */
typedef struct tally { int n[5]; } tally;

/* The overall line. */
static void print_overall(const cmp *step, const jv *doc1, const tally *t, int added, int gone) {
    printf("\noverall: ");
    if (step) {
        char b1[32], b2[32], p[32];
        printf("step time %s -> %s (%+.1f%%, p %s): %s; ", fmt_ns(b1, sizeof b1, step->m1), fmt_ns(b2, sizeof b2, step->m2), step->change,
               fmt_p(p, sizeof p, step->p), step->verdict == V_FASTER ? "faster" : step->verdict == V_SLOWER ? "SLOWER" : step->verdict == V_SAME ? "no significant change" : "not testable");
    } else printf("no step time in %s; ", jnum(jget(jget(doc1, "steps"), "time"), "count") > 0 ? "the new run" : "the baseline");
    printf("ranges: %d faster, %d slower, %d within noise", t->n[0], t->n[1], t->n[2]);
    if (t->n[3]) printf(", %d not testable", t->n[3]);
    if (t->n[4]) printf(", %d called differently", t->n[4]);
    printf(", %d added, %d gone", added, gone);
    if (!t->n[0] && !t->n[1] && (!step || (step->verdict != V_FASTER && step->verdict != V_SLOWER))) printf(" -> no significant change");
    printf("\n");
}

/* ----------------------------------------------------------------------
   --html: the comparison as one self-contained page (inline CSS and SVG,
   no script, no request), the same rows and words as the table.
   ---------------------------------------------------------------------- */
static void html_esc(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '&') fputs("&amp;", f);
        else if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

/* One row: its times, its change as a bar left (faster) or right (slower) of the middle. */
static void html_row(FILE *f, const cmp *c) {
    char b1[32], b2[32], p[32];
    double w = c->change == c->change ? (fabs(c->change) > 100 ? 100 : fabs(c->change)) : 0;
    const char *colour = c->verdict == V_FASTER ? "#4d9a5b" : c->verdict == V_SLOWER ? "#c0392b" : "#a9b4bf";
    fputs("<tr><td>", f);
    html_esc(f, c->name);
    fprintf(f, "</td><td>%s</td><td class=n>%.0f</td><td class=n>%.0f</td><td class=n>%s</td><td class=n>%s</td>", c->gpu ? "GPU" : "CPU", c->n1,
            c->n2, fmt_ns(b1, sizeof b1, c->m1), fmt_ns(b2, sizeof b2, c->m2));
    fprintf(f, "<td><svg width=204 height=14><line x1=102 y1=0 x2=102 y2=14 stroke='#8a939c'/><rect x=%.1f y=3 width=%.1f height=8 fill='%s'/></svg> ",
            c->change < 0 ? 102 - w : 102.0, w, colour);
    if (c->change == c->change) fprintf(f, "%+.1f%%%s", c->change, c->verdict == V_CALLS ? "*" : "");
    else fputs("-", f);
    fprintf(f, "</td><td class=n>%s</td><td class='v%d'>%s</td></tr>\n", fmt_p(p, sizeof p, c->p), c->verdict, verdict_word(c->verdict));
}

/* A run's verdict: its phases, classes and shares, its bottleneck and what to try. */
static void html_verdict(FILE *f, const char *file, const jv *doc) {
    const jv *v = jget(doc, "verdict"), *ph = v ? jget(v, "phases") : NULL, *bn = v ? jget(v, "bottleneck") : NULL;
    size_t i;
    fputs("<div class=side><h3>", f);
    html_esc(f, file);
    fputs("</h3>", f);
    if (!ph || ph->type != J_ARR) { fputs("<p>no verdict in this summary</p></div>", f); return; }
    fputs("<table><tr><th>phase</th><th>class</th><th class=n>share</th></tr>", f);
    for (i = 0; i < ph->n; i++) {
        const jv *nm = jget(&ph->kids[i], "name"), *cl = jget(&ph->kids[i], "class");
        fputs("<tr><td>", f);
        html_esc(f, nm && nm->type == J_STR ? nm->str : "?");
        fputs("</td><td>", f);
        html_esc(f, cl && cl->type == J_STR ? cl->str : "?");
        fprintf(f, "</td><td class=n>%.1f%%</td></tr>", 100.0 * jnum(&ph->kids[i], "share"));
    }
    fputs("</table>", f);
    if (bn) {
        const jv *nm = jget(bn, "name"), *rm = jget(bn, "remedy");
        fputs("<p><b>bottleneck:</b> ", f);
        html_esc(f, nm && nm->type == J_STR ? nm->str : "CPU time outside any range");
        fputs("<br><b>try:</b> ", f);
        html_esc(f, rm && rm->type == J_STR ? rm->str : "-");
        fputs("</p>", f);
    }
    fputs("</div>", f);
}

/* The page: written to a temporary file, renamed over path (a reader never sees half of it). 0, or 2 with a line. */
static int write_html(const char *path, const char *const *files, const opts *o, const jv *doc1, const jv *doc2, const cmp *step,
                      const cmp *kinds, int nkinds, const cmp *rows, size_t nrows) {
    char tmp[4096];
    FILE *f;
    size_t i;
    int k;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (!(f = fopen(tmp, "w"))) { fprintf(stderr, TOOL ": cannot write the page to '%s': %s\n", path, strerror(errno)); return 2; }
    fputs("<!doctype html>\n<html lang=en><head><meta charset=utf-8><meta http-equiv=Content-Security-Policy content=\"default-src 'none'; "
          "style-src 'unsafe-inline'\"><title>gpuprof-compare</title><style>body{font:14px/1.45 system-ui,sans-serif;color:#1d232a;"
          "background:#f6f7f9;margin:0}main{max-width:1100px;margin:0 auto;padding:18px 24px 50px}table{border-collapse:collapse;width:100%;"
          "background:#fff;border:1px solid #e1e5ea;font-size:13px}th,td{padding:4px 8px;text-align:left;border-bottom:1px solid #eef0f3}"
          "th{background:#eef1f5}.n{text-align:right;font-variant-numeric:tabular-nums}.v2{color:#2e7d32;font-weight:600}"
          ".v3{color:#c0392b;font-weight:600}.sides{display:flex;gap:16px}.side{flex:1}.note{color:#5b6570;font-size:12px}</style></head><body><main>\n", f);
    fputs("<h1>gpuprof-compare</h1><p>baseline <b>", f);
    html_esc(f, files[0]);
    fputs("</b> vs new <b>", f);
    html_esc(f, files[1]);
    fprintf(f, "</b></p><p class=note>rule: p &lt; %g (Welch's t-test on mean, std, count) and |change| &ge; %g%%; "
               "bars: green faster, red slower, grey within noise (to &plusmn;100%%)</p>\n", o->alpha, o->min_change);
    if (step) fprintf(f, "<p id=overall>step time %+.1f%%: <b>%s</b></p>", step->change, verdict_word(step->verdict));
    fputs("<table id=rows><tr><th>range</th><th>on</th><th class=n>calls</th><th class=n>calls</th><th class=n>baseline</th><th class=n>new</th>"
          "<th>change</th><th class=n>p</th><th>verdict</th></tr>\n", f);
    if (step) html_row(f, step);
    for (k = 0; k < nkinds; k++) html_row(f, &kinds[k]);
    for (i = 0; i < nrows && (o->rows == 0 || (int)i < o->rows); i++) html_row(f, &rows[i]);
    fputs("</table><h2>The verdicts</h2><div class=sides>", f);
    html_verdict(f, files[0], doc1);
    html_verdict(f, files[1], doc2);
    fputs("</div></main></body></html>\n", f);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, TOOL ": cannot write the page to '%s': %s\n", path, strerror(errno));
        remove(tmp);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv) {
    opts o = { 0.01, 5.0, 0.0, 0, T_AUTO, 40, NULL };
    const char *files[2] = { NULL, NULL };
    static runs side_[2];
    static char kind_names[8][520];
    const jv *doc1, *doc2, *r1, *r2;
    cmp *rows, step, kinds[8];
    tally t;
    size_t i, nrows = 0;
    int width = 24, added = 0, gone = 0, fail = 0, a, have_step = 0, nkinds, html_rc = 0;

    if ((a = parse_args(argc, argv, &o, files)) >= 0) return a;
    if (load_runs(files[0], &side_[0]) != 0 || load_runs(files[1], &side_[1]) != 0) return 2;
    doc1 = &side_[0].doc[0];                       /* the first run of each side: the ranges listed, memory, what the step is */
    doc2 = &side_[1].doc[0];
    for (a = 0; a < 2; a++) {
        int k;
        for (k = 0; k < side_[a].n; k++) if (run_noise(&side_[a].doc[k]) > side_[a].noise) side_[a].noise = run_noise(&side_[a].doc[k]);
    }
    r1 = jget(doc1, "ranges");
    r2 = jget(doc2, "ranges");
    if (!(rows = calloc((r1 ? r1->n : 0) + 1, sizeof *rows))) { fprintf(stderr, TOOL ": out of memory\n"); return 2; }

    printf("%s: baseline %s (%s) vs new %s (%s)\n", TOOL, files[0], proc_of(doc1), files[1], proc_of(doc2));
    printf("rule: p < %g (Welch's t-test on mean, std, count) and |change| >= %g%% (see --help)\n", o.alpha, o.min_change);
    describe_sides(side_, &o);

    /* the typical step's time, then each other kind of step's, then the ranges */
    memset(&step, 0, sizeof step);
    if (side_stats(&side_[0], get_step, NULL, &step.n1, &step.m1, &step.s1) == 0 &&
        side_stats(&side_[1], get_step, NULL, &step.n2, &step.m2, &step.s2) == 0) {
        have_step = 1;
        step.name = jnum(jget(jget(doc1, "steps"), "typical_time"), "count") > 0 ? "(typical step)" : "(step time)";
        decide_runs(&step, &o, &side_[0], &side_[1]);
    }
    nkinds = kind_rows(side_, &o, kinds, sizeof kinds / sizeof kinds[0]);
    for (i = 0; r1 && i < r1->n; i++) {
        const jv *nm = jget(&r1->kids[i], "name"), *a2;
        if (!nm || nm->type != J_STR || !(a2 = find_range(r2, nm->str)) || !compare_range(side_, &o, &r1->kids[i], a2, nm->str, &rows[nrows])) continue;
        if ((int)strlen(nm->str) > width) width = (int)strlen(nm->str) > 48 ? 48 : (int)strlen(nm->str);
        nrows++;
    }
    qsort(rows, nrows, sizeof *rows, cmp_total);

    printf("\n%-*s %3s %9s %9s %10s %10s %8s %8s  %s\n", width, "Range", "On", "Calls", "Calls", "Baseline", "New", "Change", "p", "Verdict");
    if (have_step) print_row(&step, width);
    for (a = 0; a < nkinds; a++) {
        snprintf(kind_names[a], sizeof kind_names[a], "(steps with %s)", kinds[a].name);
        kinds[a].name = kind_names[a];
        print_row(&kinds[a], width);
    }
    memset(&t, 0, sizeof t);
    for (i = 0; i < nrows; i++) {
        const cmp *c = &rows[i];
        if (o.rows == 0 || (int)i < o.rows) print_row(c, width);
        t.n[c->verdict == V_FASTER ? 0 : c->verdict == V_SLOWER ? 1 : c->verdict == V_SAME ? 2 : c->verdict == V_CALLS ? 4 : 3]++;
        if (o.fail_on && c->verdict == V_SLOWER && c->change > o.fail_pct) fail = 1;
    }
    if (o.rows && (int)nrows > o.rows) printf("... %d more ranges (--rows 0 lists all)\n", (int)nrows - o.rows);
    if (t.n[4]) printf("* called a different number of times per step: Baseline and New are per call, Change is of its total time per step\n");
    if (o.fail_on && have_step && step.verdict == V_SLOWER && step.change > o.fail_pct) fail = 1;

    print_unmatched(r1, r2, width, &added, &gone);
    print_memory(doc1, doc2);
    print_overall(have_step ? &step : NULL, doc1, &t, added, gone);
    if (o.html) html_rc = write_html(o.html, files, &o, doc1, doc2, have_step ? &step : NULL, kinds, nkinds, rows, nrows);
    if (o.fail_on)
        printf("%s: %s\n", TOOL, fail ? "FAIL: slower by more than the --fail-if-slower limit" : "ok: nothing slower than the --fail-if-slower limit");
    fflush(stdout);
    free(rows);
    for (a = 0; a < 2; a++) {
        int k;
        for (k = 0; k < side_[a].n; k++) jfree(&side_[a].doc[k]);
    }
    return html_rc ? 2 : fail ? 1 : 0;
}
