/* gpuprof-ranks -- the cross-rank report (SPEC 10): the summaries of the
   processes of one job (one per rank), range by range: the time per
   counted step on each rank as min / median / max, the slowest and the
   fastest rank, the skew, and the straggler -- the rank that makes the
   others wait -- with its evidence and what it costs them. Plain C99, no
   dependencies (tools/summary_json.h reads the summaries).

   In synchronous training every rank shows the same step time: the rank
   that holds the others back hides behind their waits. Its slow range is
   seen directly, and it waits *least* in the collectives, where the others
   wait for it; the ranks it delays look slow in the ranges that hold a
   collective. So ranges are compared on their self time (a range holding a
   collective is not charged with it), and collectives count as waiting.

   Build: cc -O2 -o gpuprof-ranks tools/gpuprof-ranks.c -lm (CMake builds it). */
#define _POSIX_C_SOURCE 200809L            /* getline */
#include <limits.h>
#include <stdarg.h>

#define TOOL "gpuprof-ranks"
#include "summary_json.h"

static const char *const usage_text =
    "usage: " TOOL " [--json] SUMMARY.json...\n"
    "       " TOOL " --trace TRACE.json... -o MERGED.json\n"
    "\n"
    "Reads the JSON summaries of the ranks of one job (GPUPROF_SUMMARY=run.%r.json gives each rank\n"
    "its own) and prints, per range, the self time per counted step on each rank: min, median and\n"
    "max over the ranks, the slowest and fastest rank, and the skew; then the straggler: the rank\n"
    "that makes the others wait, the range that makes it late, the evidence and the cost.\n"
    "\n"
    "  --json      the same as JSON on stdout\n"
    "  --trace T... -o M   merge the ranks' traces (GPUPROF_TRACE=trace.%r.json) into one: a process\n"
    "              per rank (pid rank+1, named \"rank R \xc2\xb7 host \xc2\xb7 pid P\"), times put on one timeline by\n"
    "              the wall-clock anchor each trace records (as good as the hosts' clock sync)\n"
    "  -h, --help  this text\n"
    "\n"
    "skew = max / median - 1 over the ranks (0: balanced; 1.0: the slowest takes twice the median).\n"
    "Communication ranges -- names with allreduce, all_reduce, allgather, all_gather,\n"
    "reduce_scatter, broadcast, barrier, alltoall, or starting with nccl or MPI_, and those listed\n"
    "in GPUPROF_COMM_RANGES=a,b -- are time spent waiting: there the rank with the least time is\n"
    "the suspect. The straggler is the rank slowest in a non-communication range (the one with the\n"
    "largest excess over the median first) that also waits least in a communication range: skew at\n"
    "least 5%, excess and shortfall in waiting each at least 2% of the step. Without communication\n"
    "ranges: skew at least 10% and excess at least 5% of the step. Otherwise there is none: some rank\n"
    "is always slowest somewhere by chance.\n"
    "\n"
    "exit status: 0 reported; 2 bad usage or unreadable input.\n";

enum { MAX_RANKS = 4096, MAX_RANGES = 512 };

typedef struct rankrun {
    jv doc;
    const char *path;
    int rank, world;
    double steps;           /* counted steps (1 when the program does not step) */
    double step_ns;         /* median step time, NaN without steps */
} rankrun;

typedef struct row {
    const char *name;
    int comm;
    double min, median, max, skew;
    int slowest, fastest;   /* ranks */
    double *v;              /* per run (index in the runs array): self ns per step */
    double *p50;            /* per run: the median call's time (ns), NaN where the rank has no calls */
} row;

static int is_comm(const char *name) {
    static const char *const parts[] = { "allreduce", "all_reduce", "allgather", "all_gather", "reduce_scatter",
                                         "reducescatter", "broadcast", "barrier", "alltoall", "all_to_all", NULL };
    const char *list = getenv("GPUPROF_COMM_RANGES");
    char low[256];
    size_t i, n = strlen(name);
    int k;
    if (n >= sizeof low) n = sizeof low - 1;
    for (i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)name[i]);
    low[n] = 0;
    if (strncmp(low, "nccl", 4) == 0 || strncmp(name, "MPI_", 4) == 0) return 1;
    for (k = 0; parts[k]; k++) if (strstr(low, parts[k])) return 1;
    if (list) {
        const char *p = list;
        while (*p) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            if (len == strlen(name) && strncmp(p, name, len) == 0) return 1;
            if (!e) break;
            p = e + 1;
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(const double *v, int n) {
    double *s = malloc((size_t)n * sizeof *s), m;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}

/* How much rank `who`'s median call exceeds the median over the ranks of
   their median calls (a rank late in every step moves it; one stalled step
   does not). NaN where a rank lacks the figure. */
static double p50_excess(const row *w, int nrun, int who) {
    double m;
    int r;
    for (r = 0; r < nrun; r++) if (w->p50[r] != w->p50[r]) return NAN;
    m = median_of(w->p50, nrun);
    return m > 0 ? w->p50[who] / m - 1 : NAN;
}

static const char *fmt_ms(char *buf, size_t n, double ns) {
    if (ns != ns) snprintf(buf, n, "-");
    else if (ns >= 1e6) snprintf(buf, n, "%.2f ms", ns / 1e6);
    else snprintf(buf, n, "%.1f us", ns / 1e3);
    return buf;
}

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

static int by_rank(const void *a, const void *b) { return ((const rankrun *)a)->rank - ((const rankrun *)b)->rank; }

/* ----------------------------------------------------------------------
   The merged trace. gpuprof writes one event per line; each rank's lines
   are copied with the pid made rank+1 (never 0), "ts" shifted by the rank's
   anchor minus the earliest, flow ids made unique across ranks, and the
   process named after its rank. Streamed: no trace is held in memory. */
typedef struct tracein { const char *path; int rank, pid; unsigned long long t0; char host[128]; } tracein;

static char *trim_event(char *line) {       /* the event on a line, or NULL */
    size_t n;
    while (*line == ' ' || *line == '\t' || *line == ',') line++;
    n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == ',')) line[--n] = 0;
    return n >= 2 && line[0] == '{' && line[n - 1] == '}' ? line : NULL;
}

/* The rank, pid, host and anchor from a trace's process_name event. */
static int trace_head(tracein *t) {
    FILE *f = fopen(t->path, "r");
    char *line = NULL, *e, *q;
    size_t cap = 0;
    int found = 0, k;
    if (!f) { fprintf(stderr, TOOL ": cannot read %s: %s\n", t->path, strerror(errno)); return -1; }
    for (k = 0; k < 8 && getline(&line, &cap, f) > 0 && !found; k++) {
        if (!(e = trim_event(line)) || !strstr(e, "\"name\":\"process_name\"")) continue;
        found = 1;
        q = strstr(e, "\"distributedInfo\": {\"rank\": ");
        t->rank = q ? atoi(q + strlen("\"distributedInfo\": {\"rank\": ")) : -1;
        q = strstr(e, "\"pid\":");
        t->pid = q ? atoi(q + 6) : 0;
        q = strstr(e, "\"t0_realtime_ns\":");
        t->t0 = q ? strtoull(q + 17, NULL, 10) : 0;
        t->host[0] = 0;
        if ((q = strstr(e, "\"host\":\"")) != NULL) {
            size_t i;
            for (q += 8, i = 0; *q && *q != '"' && i + 1 < sizeof t->host; q++) t->host[i++] = *q;
            t->host[i] = 0;
        }
    }
    free(line);
    fclose(f);
    if (!found || t->rank < 0 || !t->t0) {
        fprintf(stderr, TOOL ": %s is not the trace of a rank (%s); write each rank's with GPUPROF_TRACE=trace.%%r.json\n", t->path,
                !found ? "no process_name event at its start" : t->rank < 0 ? "no distributedInfo rank" : "no t0_realtime_ns anchor");
        return -1;
    }
    return 0;
}

/* Copies `e` to `out` with "pid":N replaced, the number after "ts": moved by
   off_ns, and the number after "id": made unique for the rank. */
static void copy_event(FILE *out, const char *e, int pid, unsigned long long off_ns, int rank, int nranks) {
    const char *p = e;
    while (*p) {
        if (strncmp(p, "\"pid\":", 6) == 0) {
            fprintf(out, "\"pid\":%d", pid);
            p += 6;
            if (*p == '-') p++;
            while (isdigit((unsigned char)*p)) p++;
        } else if (strncmp(p, "\"ts\":", 5) == 0 && (isdigit((unsigned char)p[5]))) {
            unsigned long long us = 0, frac = 0, ns;
            int d = 0;
            p += 5;
            while (isdigit((unsigned char)*p)) us = us * 10 + (unsigned long long)(*p++ - '0');
            if (*p == '.') for (p++; isdigit((unsigned char)*p); p++) if (d < 3) { frac = frac * 10 + (unsigned long long)(*p - '0'); d++; }
            while (d < 3) { frac *= 10; d++; }
            ns = us * 1000 + frac + off_ns;
            fprintf(out, "\"ts\":%llu.%03llu", ns / 1000, ns % 1000);
        } else if (strncmp(p, "\"id\":", 5) == 0 && isdigit((unsigned char)p[5])) {
            unsigned long long id = strtoull(p + 5, NULL, 10);
            fprintf(out, "\"id\":%llu", id * (unsigned long long)nranks + (unsigned long long)rank);
            for (p += 5; isdigit((unsigned char)*p); p++) {}
        } else if (*p == '"') {                /* a string: copied whole (a name may hold "pid": too) */
            const char *q = p + 1;
            while (*q && *q != '"') q += *q == '\\' && q[1] ? 2 : 1;
            if (*q) q++;
            fwrite(p, 1, (size_t)(q - p), out);
            p = q;
            if (*p == ':') continue;           /* a key: its value follows */
        } else fputc(*p++, out);
    }
}

static int merge_traces(tracein *ts, int n, const char *out_path) {
    FILE *out = fopen(out_path, "w");
    unsigned long long base = ULLONG_MAX;
    int i, first = 1, max_rank = 0;
    long events = 0;
    if (!out) { fprintf(stderr, TOOL ": cannot write %s: %s\n", out_path, strerror(errno)); return 2; }
    for (i = 0; i < n; i++) {
        if (ts[i].t0 < base) base = ts[i].t0;
        if (ts[i].rank > max_rank) max_rank = ts[i].rank;
    }
    fputs("[", out);
    for (i = 0; i < n; i++) {
        FILE *f = fopen(ts[i].path, "r");
        char *line = NULL, *e;
        size_t cap = 0;
        int pid = ts[i].rank + 1;
        if (!f) { fprintf(stderr, TOOL ": cannot read %s: %s\n", ts[i].path, strerror(errno)); fclose(out); return 2; }
        fprintf(out, "%s\n{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rank %d \xc2\xb7 ", first ? "" : ",", pid, ts[i].rank);
        for (e = ts[i].host; *e; e++) if (*e != '"' && *e != '\\') fputc(*e, out);
        fprintf(out, " \xc2\xb7 pid %d\"}}", ts[i].pid);
        first = 0;
        while (getline(&line, &cap, f) > 0) {
            if (!(e = trim_event(line)) || strstr(e, "\"name\":\"process_name\"")) continue;
            fputs(",\n", out);
            copy_event(out, e, pid, ts[i].t0 - base, ts[i].rank, max_rank + 1);
            events++;
        }
        free(line);
        fclose(f);
    }
    fputs("\n]\n", out);
    if (fclose(out) != 0) { fprintf(stderr, TOOL ": cannot write %s: %s\n", out_path, strerror(errno)); return 2; }
    {
        unsigned long long latest = 0;
        for (i = 0; i < n; i++) if (ts[i].t0 - base > latest) latest = ts[i].t0 - base;
        printf("%s: %d ranks, %ld events, one process per rank; the ranks' times put on one timeline by their wall-clock anchors (the last rank started %.3f ms after the first)\n",
               out_path, n, events, (double)latest / 1e6);
    }
    return 0;
}

/* The rows of the table: every range name any rank has, with each rank's
   self time per counted step -- on the CPU, or (gpu) on the GPU, where the
   range has GPU times. Returns the number of rows. */
static int build_rows(const rankrun *runs, int nrun, int gpu, row *rows) {
    int nrow = 0, r, i;
    for (r = 0; r < nrun; r++) {
        const jv *ranges = jget(&runs[r].doc, "ranges");
        size_t k;
        for (k = 0; ranges && ranges->type == J_ARR && k < ranges->n; k++) {
            const jv *nm = jget(&ranges->kids[k], "name"), *fig = &ranges->kids[k];
            int j;
            if (!nm || nm->type != J_STR) continue;
            if (gpu && (!(fig = jget(fig, "gpu")) || fig->type != J_OBJ)) continue;
            for (j = 0; j < nrow && strcmp(rows[j].name, nm->str) != 0; j++) {}
            if (j == nrow && nrow < MAX_RANGES) {
                rows[nrow].name = nm->str;
                rows[nrow].comm = is_comm(nm->str);
                rows[nrow].v = calloc((size_t)nrun, sizeof *rows[nrow].v);
                rows[nrow].p50 = malloc((size_t)nrun * sizeof *rows[nrow].p50);
                for (i = 0; i < nrun; i++) rows[nrow].p50[i] = NAN;
                nrow++;
            }
            if (j < nrow) {
                double self = jnum(fig, "self_ns");
                rows[j].v[r] += (self == self ? self : 0) / runs[r].steps;
                rows[j].p50[r] = jnum(fig, "p50_ns");
            }
        }
    }
    for (i = 0; i < nrow; i++) {
        row *w = &rows[i];
        w->min = w->max = w->v[0];
        w->slowest = w->fastest = 0;
        for (r = 1; r < nrun; r++) {
            if (w->v[r] > w->max) { w->max = w->v[r]; w->slowest = r; }
            if (w->v[r] < w->min) { w->min = w->v[r]; w->fastest = r; }
        }
        w->median = median_of(w->v, nrun);
        w->skew = w->median > 0 ? w->max / w->median - 1 : 0;
    }
    return nrow;
}

static void print_rows(const row *rows, int nrow, const rankrun *runs) {
    char b1[32], b2[32], b3[32];
    int i;
    printf("%-28s %-5s %11s %11s %11s %8s %8s %7s\n", "range", "", "min", "median", "max", "slowest", "fastest", "skew");
    for (i = 0; i < nrow; i++) {
        char name[29];
        snprintf(name, sizeof name, "%s", rows[i].name);
        printf("%-28s %-5s %11s %11s %11s %8d %8d %6.0f%%\n", name, rows[i].comm ? "comm" : "", fmt_ms(b1, sizeof b1, rows[i].min),
               fmt_ms(b2, sizeof b2, rows[i].median), fmt_ms(b3, sizeof b3, rows[i].max), runs[rows[i].slowest].rank,
               runs[rows[i].fastest].rank, 100 * rows[i].skew);
    }
}

static void json_rows(const char *key, const row *rows, int nrow, const rankrun *runs) {
    int i;
    printf("\"%s\":[", key);
    for (i = 0; i < nrow; i++) {
        printf("%s\n{\"name\":", i ? "," : "");
        json_str(rows[i].name);
        printf(",\"comm\":%s,\"min_ns\":%.0f,\"median_ns\":%.0f,\"max_ns\":%.0f,\"slowest_rank\":%d,\"fastest_rank\":%d,\"skew\":%.4f}",
               rows[i].comm ? "true" : "false", rows[i].min, rows[i].median, rows[i].max, runs[rows[i].slowest].rank,
               runs[rows[i].fastest].rank, rows[i].skew);
    }
    printf("]");
}

/* The straggler: the rank slowest in a non-communication range, trying the
   ranges by their excess over the median, largest first -- corroborated,
   where the job has communication ranges, by that rank waiting least in one
   of them (noise makes some rank slowest in every range; only the true
   straggler also waits least). Its shortfall in that wait is the cost to
   the others (*cost, with the range in *comm_row). Without communication
   ranges a larger margin holds. Returns the row, or -1: none. */
static int find_straggler(const row *rows, int nrow, int nrun, double step_med, int *comm_row, double *cost) {
    int order[MAX_RANGES], n = 0, has_comm = 0, i, j, k;
    for (i = 0; i < nrow; i++) {
        has_comm |= rows[i].comm;
        if (rows[i].comm) continue;
        for (j = n++; j > 0 && rows[order[j - 1]].max - rows[order[j - 1]].median < rows[i].max - rows[i].median; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    for (k = 0; k < n; k++) {
        const row *w = &rows[order[k]];
        double ex = w->max - w->median, best = 0;
        int who = w->slowest;
        if (w->skew < (has_comm ? 0.05 : 0.10) || (step_med == step_med && ex < (has_comm ? 0.02 : 0.05) * step_med)) break;
        if (!(p50_excess(w, nrun, who) >= 0.05)) continue;     /* late in a few steps only: noise */
        if (!has_comm) { *comm_row = -1; *cost = ex; return order[k]; }
        *comm_row = -1;
        for (i = 0; i < nrow; i++)
            if (rows[i].comm && rows[i].fastest == who && rows[i].median - rows[i].v[who] > best &&
                !(p50_excess(&rows[i], nrun, who) > -0.05)) { best = rows[i].median - rows[i].v[who]; *comm_row = i; }
        if (*comm_row >= 0 && (step_med != step_med || best >= 0.02 * step_med)) { *cost = best; return order[k]; }
    }
    *comm_row = -1;
    return -1;
}

/* What the run reads and builds lives until exit (a short-lived tool). */
static rankrun all_runs[MAX_RANKS];
static row all_rows[MAX_RANGES], all_gpu_rows[MAX_RANGES];
static tracein all_traces[MAX_RANKS];

int main(int argc, char **argv) {
    rankrun *runs = all_runs;
    row *rows = all_rows, *gpu_rows = all_gpu_rows;
    int nrun = 0, nrow = 0, ngpu = 0, i, as_json = 0, world = 0, steps_differ = 0;
    int strag = -1, comm_row = -1, in_traces = 0, ntrace = 0;
    const char *merged = NULL;
    tracein *traces = all_traces;
    double step_med = NAN, excess = 0, cost = 0;
    char b1[32], b2[32], b3[32], b4[32];
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) as_json = 1;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) { fputs(usage_text, stdout); return 0; }
        else if (strcmp(argv[i], "--trace") == 0) in_traces = 1;
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) merged = argv[++i];
        else if (in_traces && argv[i][0] != '-') {
            if (ntrace == MAX_RANKS) { fprintf(stderr, TOOL ": more than %d traces\n", MAX_RANKS); return 2; }
            traces[ntrace].path = argv[i];
            if (trace_head(&traces[ntrace]) != 0) return 2;
            ntrace++;
        }
        else if (argv[i][0] == '-' && argv[i][1]) { fprintf(stderr, TOOL ": unknown option %s (see --help)\n", argv[i]); return 2; }
        else if (nrun == MAX_RANKS) { fprintf(stderr, TOOL ": more than %d summaries\n", MAX_RANKS); return 2; }
        else {
            rankrun *k = &runs[nrun];
            const jv *run, *st;
            if (load(argv[i], &k->doc) != 0) return 2;
            k->path = argv[i];
            run = jget(&k->doc, "run");
            k->rank = jnum(run, "rank") >= 0 ? (int)jnum(run, "rank") : -1;
            k->world = jnum(run, "world_size") > 0 ? (int)jnum(run, "world_size") : 0;
            st = jget(&k->doc, "steps");
            k->steps = jnum(st, "counted") > 0 ? jnum(st, "counted") : 1;
            k->step_ns = jnum(jget(st, "time"), "p50_ns");
            if (k->rank < 0) {
                fprintf(stderr, TOOL ": %s has no rank (the process had no launcher variable; set GPUPROF_RANK=r)\n", argv[i]);
                return 2;
            }
            nrun++;
        }
    }
    if (in_traces || merged) {
        int k;
        if (!merged || ntrace < 1) { fprintf(stderr, TOOL ": --trace needs the ranks' traces and -o MERGED.json (see --help)\n"); return 2; }
        for (i = 0; i < ntrace; i++)
            for (k = 0; k < i; k++)
                if (traces[k].rank == traces[i].rank) {
                    fprintf(stderr, TOOL ": %s and %s are both rank %d\n", traces[k].path, traces[i].path, traces[i].rank);
                    return 2;
                }
        if ((k = merge_traces(traces, ntrace, merged)) != 0) return k;
        if (nrun == 0) return 0;
    }
    if (nrun < 2) { fprintf(stderr, "%s", nrun ? TOOL ": one summary is not several ranks; give every rank's (run.*.json)\n" : usage_text); return 2; }
    qsort(runs, (size_t)nrun, sizeof *runs, by_rank);
    for (i = 1; i < nrun; i++)
        if (runs[i].rank == runs[i - 1].rank) {
            fprintf(stderr, TOOL ": %s and %s are both rank %d (two runs of one job mixed, or a restart?)\n", runs[i - 1].path, runs[i].path, runs[i].rank);
            return 2;
        }
    for (i = 0; i < nrun; i++) {
        if (runs[i].world > world) world = runs[i].world;
        if (runs[i].steps != runs[0].steps) steps_differ = 1;
    }
    if (world && world != nrun)
        fprintf(stderr, TOOL ": warning: the world size is %d but %d summaries were given: ranks are missing\n", world, nrun);
    if (steps_differ)
        fprintf(stderr, TOOL ": warning: the ranks counted different numbers of steps (rank %d: %.0f, rank %d: %.0f); times per step still compare, totals do not\n",
                runs[0].rank, runs[0].steps, runs[nrun - 1].rank, runs[nrun - 1].steps);
    {
        double *s = malloc((size_t)nrun * sizeof *s);
        int n = 0;
        for (i = 0; i < nrun; i++) if (runs[i].step_ns == runs[i].step_ns) s[n++] = runs[i].step_ns;
        if (n) step_med = median_of(s, n);
        free(s);
    }
    nrow = build_rows(runs, nrun, 0, rows);
    ngpu = build_rows(runs, nrun, 1, gpu_rows);
    strag = find_straggler(rows, nrow, nrun, step_med, &comm_row, &cost);
    if (strag >= 0) excess = rows[strag].max - rows[strag].median;
    if (as_json) {
        printf("{\"ranks\":%d,\"world_size\":%d,\"steps\":%.0f,", nrun, world ? world : nrun, runs[0].steps);
        json_rows("ranges", rows, nrow, runs);
        printf(",\n");
        json_rows("gpu_ranges", gpu_rows, ngpu, runs);
        printf(",\n\"straggler\":");
        if (strag < 0) printf("null}\n");
        else {
            printf("{\"rank\":%d,\"range\":", runs[rows[strag].slowest].rank);
            json_str(rows[strag].name);
            printf(",\"excess_ns\":%.0f,\"wait_cost_share\":", excess);
            if (step_med == step_med && step_med > 0) printf("%.4f}}\n", cost / step_med);
            else printf("null}}\n");
        }
        return 0;
    }
    printf("%d ranks (world size %d), %.0f counted steps; self time per counted step (a range holding a collective is not charged with it)\n",
           nrun, world ? world : nrun, runs[0].steps);
    print_rows(rows, nrow, runs);
    if (step_med == step_med) printf("%-28s %-5s %11s %11s\n", "step (median over ranks)", "", "", fmt_ms(b1, sizeof b1, step_med));
    if (ngpu) {
        printf("GPU self time per counted step (CUDA events):\n");
        print_rows(gpu_rows, ngpu, runs);
    }
    if (strag < 0) {
        printf("no straggler: no rank is both late in a range and waits least (the differences above are noise; see --help)\n");
        return 0;
    }
    {
        const row *w = &rows[strag];
        int who = w->slowest;
        printf("straggler: rank %d -- \"%s\" %s per step vs median %s (+%.0f%%)", runs[who].rank, w->name, fmt_ms(b1, sizeof b1, w->v[who]),
               fmt_ms(b2, sizeof b2, w->median), 100 * w->skew);
        if (comm_row >= 0)
            printf("; it waits least in \"%s\" (%s vs median %s)", rows[comm_row].name, fmt_ms(b3, sizeof b3, rows[comm_row].v[who]),
                   fmt_ms(b4, sizeof b4, rows[comm_row].median));
        if (comm_row >= 0) printf("; the other ranks wait ~%s per step for it", fmt_ms(b1, sizeof b1, cost));
        else printf("; it costs ~%s per step", fmt_ms(b1, sizeof b1, cost));
        if (step_med == step_med && step_med > 0) printf(" (%.0f%% of the %s step)", 100 * cost / step_med, fmt_ms(b2, sizeof b2, step_med));
        printf("\n");
    }
    return 0;
}
