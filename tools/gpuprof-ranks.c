/* gpuprof-ranks -- the cross-rank report (SPEC 10): the summaries of the
   processes of one job (one per rank), range by range: the time per
   counted step on each rank as min / median / max, the slowest and the
   fastest rank, the skew, and the straggler -- the rank that makes the
   others wait -- with its evidence and what it costs them. Plain C99:
   tools/summary_json.h reads the summaries; the analysis and the trace
   merge are gpuprof.h's own (section "Cross-rank report", which says why
   self times and collectives are read as they are), so rank 0 prints the
   same report at MPI_Finalize in a GPUPROF_MPI build.

   Build: cc -O2 -o gpuprof-ranks tools/gpuprof-ranks.c -pthread -lm (CMake builds it). */
#define _POSIX_C_SOURCE 200809L            /* the POSIX calls of gpuprof.h's implementation */

#define TOOL "gpuprof-ranks"
#include "summary_json.h"
#define GPUPROF_IMPLEMENTATION
#define GPUPROF_RANKS_REPORT               /* the cross-rank analysis, without a profiler session */
#include "../gpuprof.h"

static const char *const usage_text =
    "usage: " TOOL " [--json] [--html PAGE.html] SUMMARY.json...\n"
    "       " TOOL " --trace TRACE.json... -o MERGED.json | --hta DIR\n"
    "       " TOOL " --trace TRACE.pftrace... -o MERGED.pftrace\n"
    "\n"
    "Reads the JSON summaries of the ranks of one job (GPUPROF_SUMMARY=run.%r.json gives each rank\n"
    "its own) and prints, per range, the self time per counted step on each rank: min, median and\n"
    "max over the ranks, the slowest and fastest rank, and the skew; then the straggler: the rank\n"
    "that makes the others wait, the range that makes it late, the evidence and the cost.\n"
    "\n"
    "  --json      the same as JSON on stdout\n"
    "  --html P    also write the report as one self-contained HTML page to P: each rank's time in the\n"
    "              straggler's range as bars, the ranges' min / median / max and skew, the report's text\n"
    "  --trace T... -o M   merge the ranks' traces (GPUPROF_TRACE=trace.%r.json) into one: a process\n"
    "              per rank (pid rank+1, named \"rank R \xc2\xb7 host \xc2\xb7 pid P\"), times put on one timeline by\n"
    "              the wall-clock anchor each trace records (as good as the hosts' clock sync), corrected\n"
    "              by the clock offsets rank 0 measured at MPI_Finalize when its cross-rank report\n"
    "              (GPUPROF_MPI: run.ranks.json) is given too; Perfetto traces (.pftrace) merge into a\n"
    "              .pftrace, the same way (sequences, tracks and flows made each rank's own)\n"
    "  --trace T... --hta DIR   each rank's trace as HolisticTraceAnalysis reads one (an object with\n"
    "              \"distributedInfo\" and \"traceEvents\"): DIR/rank<R>.json, for TraceAnalysis(trace_dir=DIR);\n"
    "              DIR is made if it does not exist (JSON traces only: HTA reads no other)\n"
    "  -h, --help  this text\n"
    "\n"
    "skew = max / median - 1 over the ranks (0: balanced; 1.0: the slowest takes twice the median).\n"
    "Communication ranges -- names with allreduce, all_reduce, allgather, all_gather,\n"
    "reduce_scatter, broadcast, barrier, alltoall, or starting with nccl or MPI_, and those listed\n"
    "in GPUPROF_COMM_RANGES=a,b -- and, with kernel capture, NCCL's kernels (GPU table) are time\n"
    "spent waiting: there the rank with the least time is\n"
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

/* Its GPU over the run (SPEC 17): the mean SM clock, and the reason that
   held the clocks back most (idle, a GPU with no work, is not one). */
static void device_of(const jv *dev, gpuprof__xr_run *x) {
    const jv *cs = jget(dev, "counters"), *th = jget(dev, "throttle");
    size_t i;
    for (i = 0; cs && cs->type == J_ARR && i < cs->n; i++) {
        const jv *nm = jget(&cs->kids[i], "name");
        if (nm && nm->type == J_STR && !strcmp(nm->str, "SM clock") && jnum(&cs->kids[i], "mean") > 0) x->dev_clock = jnum(&cs->kids[i], "mean");
    }
    for (i = 0; th && th->type == J_ARR && i < th->n; i++) {
        const jv *nm = jget(&th->kids[i], "reason");
        double share = jnum(&th->kids[i], "share");
        if (!nm || nm->type != J_STR || !strcmp(nm->str, "idle") || !(share > x->dev_held)) continue;
        x->dev_held = share;
        x->dev_why = nm->str;
    }
}

/* A summary's figures as the analysis takes them (names point into doc). */
static int run_of(const rankrun *k, gpuprof__xr_run *x) {
    const jv *run = jget(&k->doc, "run"), *st = jget(&k->doc, "steps"), *ranges = jget(&k->doc, "ranges"), *kernels = jget(&k->doc, "kernels");
    size_t i, nk = kernels && kernels->type == J_ARR ? kernels->n : 0;
    memset(x, 0, sizeof *x);
    x->path = k->path;
    x->rank = jnum(run, "rank") >= 0 ? (int)jnum(run, "rank") : -1;
    x->world = jnum(run, "world_size") > 0 ? (int)jnum(run, "world_size") : 0;
    x->steps = jnum(st, "counted") > 0 ? jnum(st, "counted") : 1;
    x->step_ns = jnum(jget(st, "time"), "p50_ns");
    if (!(x->ranges = calloc((ranges && ranges->type == J_ARR ? ranges->n : 0) + nk + 1, sizeof *x->ranges))) return -1;
    /* NCCL's kernels (kernel capture): the GPU side of the collectives, as communication rows */
    for (i = 0; i < nk; i++) {
        const jv *kr = &kernels->kids[i], *nm = jget(kr, "name");
        gpuprof__xr_range *o = &x->ranges[x->nranges];
        if (!nm || nm->type != J_STR || !gpuprof__is_comm(nm->str) || !(jnum(kr, "count") > 0)) continue;
        o->name = nm->str;
        o->self_ns = o->p50_ns = NAN;
        o->gpu = o->kernel = 1;
        o->gpu_self_ns = jnum(kr, "sum_ns");
        o->gpu_p50_ns = jnum(kr, "p50_ns");
        x->nranges++;
    }
    device_of(jget(&k->doc, "device_over_time"), x);
    for (i = 0; ranges && ranges->type == J_ARR && i < ranges->n; i++) {
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

/* The merged trace (gpuprof__xr_merge): the ranks' offsets, when a
   cross-rank report with measured ones is among the inputs. */
static int merge(gpuprof__xr_trace *ts, int n, const char *out_path, const jv *sync, const char *sync_path) {
    char why[600];
    long events = 0;
    int64_t spread = 0;
    int i, measured = 0;
    size_t k;
    const jv *offs = jget(sync, "offsets");
    for (k = 0; offs && offs->type == J_ARR && k < offs->n; k++)
        for (i = 0; i < n; i++)
            if (jnum(&offs->kids[k], "rank") == ts[i].rank && jnum(&offs->kids[k], "offset_ns") == jnum(&offs->kids[k], "offset_ns") &&
                jnum(&offs->kids[k], "bound_ns") >= 0) {
                ts[i].offset_ns = gpuprof__xr_offset_used((int64_t)jnum(&offs->kids[k], "offset_ns"), (int64_t)jnum(&offs->kids[k], "bound_ns"));
                measured++;
            }
    if (gpuprof__xr_merge(ts, n, out_path, &events, &spread, why, sizeof why) != 0) { fprintf(stderr, TOOL ": %s\n", why); return 2; }
    printf("%s: %d ranks, %ld events, one process per rank; the ranks' times put on one timeline by their wall-clock anchors", out_path, n, events);
    if (measured) printf(" and the clock offsets measured at MPI_Finalize (%s)", sync_path);
    printf(" (the last rank started %.3f ms after the first)\n", (double)spread / 1e6);
    return 0;
}

/* DIR and the folders above it, made where missing (mkdir -p); a message
   and 2 when one cannot be made or a file stands in the way. */
static int make_dir(const char *dir) {
    char path[4096], *p, c;
    struct stat st;
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) { fprintf(stderr, TOOL ": --hta needs a directory's path\n"); return 2; }
    memcpy(path, dir, n + 1);
    for (p = path + 1; ; p++) {
        if (*p != '/' && *p) continue;
        c = *p;
        *p = 0;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, TOOL ": cannot make the directory %s: %s\n", path, strerror(errno));
            return 2;
        }
        *p = c;
        if (!c) break;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) { fprintf(stderr, TOOL ": %s is not a directory\n", dir); return 2; }
    return 0;
}

/* --hta DIR: each rank's trace as HolisticTraceAnalysis reads one -- a JSON
   object with the rank in a top-level "distributedInfo" and the events in
   "traceEvents" (gpuprof streams the array form, which a killed run leaves
   readable) -- written to DIR/rank<R>.json, streamed; DIR is made if need be. */
static int hta_copy(const gpuprof__xr_trace *ts, int n, const char *dir, int world) {
    int i;
    if (make_dir(dir) != 0) return 2;
    for (i = 0; i < n; i++) {
        char path[4096], *line = NULL, *e;
        size_t cap = 0;
        long events = 0;
        FILE *in = fopen(ts[i].path, "r"), *out;
        if (!in) { fprintf(stderr, TOOL ": cannot read %s: %s\n", ts[i].path, strerror(errno)); return 2; }
        snprintf(path, sizeof path, "%s/rank%d.json", dir, ts[i].rank);
        if (!(out = fopen(path, "w"))) {
            fprintf(stderr, TOOL ": cannot write %s: %s\n", path, strerror(errno));
            fclose(in);
            return 2;
        }
        fprintf(out, "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": %d, \"world_size\": %d}, \"traceEvents\": [", ts[i].rank, world > ts[i].rank ? world : n);
        while (gpuprof__xr_line(in, &line, &cap)) {
            if (!(e = gpuprof__xr_event(line))) continue;
            fprintf(out, "%s\n%s", events ? "," : "", e);
            events++;
        }
        fputs("\n]}\n", out);
        free(line);
        fclose(in);
        if (fclose(out) != 0) { fprintf(stderr, TOOL ": cannot write %s: %s\n", path, strerror(errno)); return 2; }
        printf("%s: rank %d's trace for HolisticTraceAnalysis (%ld events)\n", path, ts[i].rank, events);
    }
    return 0;
}

/* What the run reads lives until exit (a short-lived tool). */
static rankrun all_runs[MAX_RANKS];
/* --html: the page, to a temporary file renamed over path (0), or a line and -1. */
static int write_page(const char *path, const gpuprof__xr *x) {
    gpuprof__buf page = { NULL, 0, 0, 0 };
    char tmp[4096];
    FILE *f;
    int rc = -1;
    gpuprof__xr_html(&page, x);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (page.failed) fprintf(stderr, TOOL ": out of memory for the page\n");
    else if (!(f = fopen(tmp, "w"))) fprintf(stderr, TOOL ": cannot write the page to '%s': %s\n", path, strerror(errno));
    else if (fwrite(page.p, 1, page.len, f) != page.len || fclose(f) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, TOOL ": cannot write the page to '%s': %s\n", path, strerror(errno));
        remove(tmp);
    } else rc = 0;
    free(page.p);
    return rc;
}

static gpuprof__xr_run all_xr[MAX_RANKS];
static gpuprof__xr_trace all_traces[MAX_RANKS];

int main(int argc, char **argv) {
    rankrun *runs = all_runs;
    gpuprof__xr_run *xr = all_xr;
    gpuprof__xr x;
    gpuprof__buf out = { NULL, 0, 0, 0 }, warn = { NULL, 0, 0, 0 };
    int nrun = 0, i, as_json = 0, in_traces = 0, ntrace = 0;
    const char *merged = NULL, *hta = NULL, *html = NULL;
    gpuprof__xr_trace *traces = all_traces;
    const jv *sync = NULL;
    const char *sync_path = NULL;
    char why[600];
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) as_json = 1;
        else if (strcmp(argv[i], "--html") == 0 && i + 1 < argc) html = argv[++i];
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) { fputs(usage_text, stdout); return 0; }
        else if (strcmp(argv[i], "--trace") == 0) in_traces = 1;
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) merged = argv[++i];
        else if (strcmp(argv[i], "--hta") == 0 && i + 1 < argc) hta = argv[++i];
        else if (in_traces && argv[i][0] != '-') {
            if (ntrace == MAX_RANKS) { fprintf(stderr, TOOL ": more than %d traces\n", MAX_RANKS); return 2; }
            int rc;
            traces[ntrace].path = argv[i];
            if ((rc = gpuprof__xr_trace_head(&traces[ntrace], why, sizeof why)) < 0) { fprintf(stderr, TOOL ": %s\n", why); return 2; }
            if (rc == 1) { fprintf(stderr, TOOL ": %s is a merged trace already: skipped\n", argv[i]); continue; }
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
                sync = jget(&k->doc, "clock_sync");       /* its measured offsets serve --trace */
                sync_path = argv[i];
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
    if (sync_path && !in_traces && !merged)
        fprintf(stderr, TOOL ": %s is a cross-rank report already (rank 0's, from GPUPROF_MPI), not a rank's summary: skipped\n", sync_path);
    if (in_traces || merged || hta) {
        int k;
        if ((!merged && !hta) || ntrace < 1) { fprintf(stderr, TOOL ": --trace needs the ranks' traces and -o MERGED.json or --hta DIR (see --help)\n"); return 2; }
        for (i = 0; i < ntrace; i++)
            for (k = 0; k < i; k++)
                if (traces[k].rank == traces[i].rank) {
                    fprintf(stderr, TOOL ": %s and %s are both rank %d\n", traces[k].path, traces[i].path, traces[i].rank);
                    return 2;
                }
        if (merged && (k = merge(traces, ntrace, merged, sync, sync_path)) != 0) return k;
        if (hta)
            for (i = 0; i < ntrace; i++)
                if (gpuprof__xr_is_pf(traces[i].path)) {
                    fprintf(stderr, TOOL ": --hta: %s is a Perfetto trace; HolisticTraceAnalysis reads JSON traces (write the ranks' with GPUPROF_TRACE=trace.%%r.json)\n",
                            traces[i].path);
                    return 2;
                }
        if (hta && (k = hta_copy(traces, ntrace, hta, ntrace)) != 0) return k;
        if (nrun == 0) return 0;
    }
    if (nrun < 2) { fprintf(stderr, "%s", nrun ? TOOL ": one summary is not several ranks; give every rank's (run.*.json)\n" : usage_text); return 2; }
    qsort(xr, (size_t)nrun, sizeof *xr, gpuprof__xr_by_rank);
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
    if (out.failed) fprintf(stderr, TOOL ": out of memory\n");
    else fwrite(out.p, 1, out.len, stdout);
    if (html && write_page(html, &x) != 0) out.failed = 1;
    gpuprof__xr_free(&x);
    free(out.p);
    free(warn.p);
    for (i = 0; i < nrun; i++) free(xr[i].ranges);
    return out.failed || fflush(stdout) != 0 ? 2 : 0;
}
