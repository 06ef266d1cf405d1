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

   The analysis is gpuprof.h's own (section "Cross-rank report"): rank 0
   prints the same report at MPI_Finalize in a GPUPROF_MPI build.

   Build: cc -O2 -o gpuprof-ranks tools/gpuprof-ranks.c -pthread -lm (CMake builds it). */
#define _POSIX_C_SOURCE 200809L            /* getline */
#include <limits.h>
#include <stdarg.h>

#define TOOL "gpuprof-ranks"
#include "summary_json.h"
#define GPUPROF_IMPLEMENTATION
#define GPUPROF_RANKS_REPORT               /* the cross-rank analysis, without a profiler session */
#include "../gpuprof.h"

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

enum { MAX_RANKS = 4096 };

typedef struct rankrun {
    jv doc;
    const char *path;
} rankrun;

static int by_rank(const void *a, const void *b) { return ((const gpuprof__xr_run *)a)->rank - ((const gpuprof__xr_run *)b)->rank; }

/* A summary's figures as the analysis takes them (names point into doc). */
static int run_of(const rankrun *k, gpuprof__xr_run *x) {
    const jv *run = jget(&k->doc, "run"), *st = jget(&k->doc, "steps"), *ranges = jget(&k->doc, "ranges");
    size_t i;
    memset(x, 0, sizeof *x);
    x->path = k->path;
    x->rank = jnum(run, "rank") >= 0 ? (int)jnum(run, "rank") : -1;
    x->world = jnum(run, "world_size") > 0 ? (int)jnum(run, "world_size") : 0;
    x->steps = jnum(st, "counted") > 0 ? jnum(st, "counted") : 1;
    x->step_ns = jnum(jget(st, "time"), "p50_ns");
    if (!ranges || ranges->type != J_ARR) return 0;
    if (!(x->ranges = calloc(ranges->n + 1, sizeof *x->ranges))) return -1;
    for (i = 0; i < ranges->n; i++) {
        const jv *r = &ranges->kids[i], *nm = jget(r, "name"), *g = jget(r, "gpu");
        gpuprof__xr_range *o = &x->ranges[x->nranges];
        if (!nm || nm->type != J_STR) continue;
        o->name = nm->str;
        o->self_ns = jnum(r, "self_ns");
        o->p50_ns = jnum(r, "p50_ns");
        if (g && g->type == J_OBJ) { o->gpu = 1; o->gpu_self_ns = jnum(g, "self_ns"); o->gpu_p50_ns = jnum(g, "p50_ns"); }
        x->nranges++;
    }
    return 0;
}

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

/* What the run reads lives until exit (a short-lived tool). */
static rankrun all_runs[MAX_RANKS];
static gpuprof__xr_run all_xr[MAX_RANKS];
static tracein all_traces[MAX_RANKS];

int main(int argc, char **argv) {
    rankrun *runs = all_runs;
    gpuprof__xr_run *xr = all_xr;
    gpuprof__xr x;
    gpuprof__buf out = { NULL, 0, 0, 0 }, warn = { NULL, 0, 0, 0 };
    int nrun = 0, i, as_json = 0, in_traces = 0, ntrace = 0;
    const char *merged = NULL;
    tracein *traces = all_traces;
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
            const jv *schema;
            if (load_json(argv[i], &k->doc) != 0) return 2;
            schema = jget(&k->doc, "schema");
            if (schema && schema->type == J_STR && strcmp(schema->str, "gpuprof-ranks") == 0) {
                fprintf(stderr, TOOL ": %s is a cross-rank report already (rank 0's, from GPUPROF_MPI), not a rank's summary: skipped\n", argv[i]);
                continue;
            }
            if (check_summary(argv[i], &k->doc) != 0) return 2;
            k->path = argv[i];
            if (run_of(k, &xr[nrun]) != 0) { fprintf(stderr, TOOL ": out of memory\n"); return 2; }
            if (xr[nrun].rank < 0) {
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
    qsort(xr, (size_t)nrun, sizeof *xr, by_rank);
    for (i = 1; i < nrun; i++)
        if (xr[i].rank == xr[i - 1].rank) {
            fprintf(stderr, TOOL ": %s and %s are both rank %d (two runs of one job mixed, or a restart?)\n", xr[i - 1].path, xr[i].path, xr[i].rank);
            return 2;
        }
    if (gpuprof__xr_analyse(&x, xr, nrun) != 0) { fprintf(stderr, TOOL ": out of memory\n"); return 2; }
    gpuprof__xr_warnings(&x, &warn, 0);
    if (warn.len) {
        char *line = warn.p, *nl;
        for (; line; line = nl ? nl + 1 : NULL) {
            if ((nl = strchr(line, '\n')) != NULL) *nl = 0;
            fprintf(stderr, TOOL ": %s\n", line);
        }
    }
    if (as_json) gpuprof__xr_json(&out, &x, NULL);
    else gpuprof__xr_text(&out, &x);
    if (out.failed) { fprintf(stderr, TOOL ": out of memory\n"); return 2; }
    fwrite(out.p, 1, out.len, stdout);
    return fflush(stdout) == 0 ? 0 : 2;
}
