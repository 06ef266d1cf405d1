/* bench_overhead.c -- what a range costs, measured in one run against
   baselines from the same run: an empty loop and the two raw clock reads a
   range needs. Also the trace writer's throughput against a plain
   fprintf-per-event writer. Each figure is the median of 7 runs, with the
   spread (min..max). Not a pass/fail test: read the ratios.

   usage: bench_overhead [iterations per run, default 2000000] */
#define GPUPROF_IMPLEMENTATION
#include "../gpuprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define RUNS 7
#define BARRIER() __asm__ __volatile__("" ::: "memory")

static long iters = 2000000;
static volatile uint64_t sink;

typedef struct { const char *name; double run[RUNS], median, lo, hi; } figure;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static void finish(figure *f) {
    double s[RUNS];
    memcpy(s, f->run, sizeof s);
    qsort(s, RUNS, sizeof *s, cmp_double);
    f->median = s[RUNS / 2];
    f->lo = s[0];
    f->hi = s[RUNS - 1];
}

static double ns_per_iter(uint64_t t0, uint64_t t1) { return (double)(t1 - t0) / (double)iters; }

static double loop_empty(void) {
    uint64_t t0 = gpuprof__mono_ns();
    for (long i = 0; i < iters; i++) BARRIER();
    return ns_per_iter(t0, gpuprof__mono_ns());
}
static double loop_clock(void) {
    uint64_t t0 = gpuprof__mono_ns(), acc = 0;
    for (long i = 0; i < iters; i++) { acc += gpuprof__ticks(); BARRIER(); acc += gpuprof__ticks(); }
    sink = acc;
    return ns_per_iter(t0, gpuprof__mono_ns());
}
static double loop_range(void) {
    uint64_t t0 = gpuprof__mono_ns();
    for (long i = 0; i < iters; i++) { PROF_RANGE("bench.range"); BARRIER(); }
    return ns_per_iter(t0, gpuprof__mono_ns());
}
static double loop_begin_end(void) {
    uint64_t t0 = gpuprof__mono_ns();
    for (long i = 0; i < iters; i++) { PROF_BEGIN("bench.begin_end"); BARRIER(); PROF_END(); }
    return ns_per_iter(t0, gpuprof__mono_ns());
}
static double loop_dyn(void) {
    static const char *const names[4] = { "layer 0", "layer 1", "layer 2", "layer 3" };
    uint64_t t0 = gpuprof__mono_ns();
    for (long i = 0; i < iters; i++) { PROF_RANGE_DYN(names[i & 3]); BARRIER(); }
    return ns_per_iter(t0, gpuprof__mono_ns());
}

static void measure(figure *f, double (*loop)(void)) {
    loop();                                   /* warm up: first-call registration, page faults */
    for (int r = 0; r < RUNS; r++) f->run[r] = loop();
    finish(f);
}

static void session(const char *trace_path) {
    gpuprof_config cfg = {0};
    cfg.report = "off";
    cfg.trace_path = trace_path;
    cfg.trace_buffer_mb = 64;
    gpuprof_init(&cfg);
}

/* The trace writer alone: format and write blocks of range events. */
static double writer_events_per_s(long events, int to_null) {
    gpuprof__block *b = (gpuprof__block *)calloc(1, sizeof *b);
    gpuprof__thread *t = gpuprof__tls;
    uint64_t t0, t1;
    long done = 0;
    int saved_fd = -1;
    gpuprof_site site = { "forward", __FILE__, __LINE__, 0 };
    uint32_t id = gpuprof__site_id(&site, t->session);
    b->owner = t;
    b->count = GPUPROF__BLOCK_EVENTS;
    for (int i = 0; i < GPUPROF__BLOCK_EVENTS; i++) {
        b->ev[i].ts = 1000000ull + 1234ull * (uint64_t)i;
        b->ev[i].u.dur_ns = 987 + (uint64_t)i;
        b->ev[i].name_id = id;
    }
    pthread_mutex_lock(&gpuprof__trace_lock);     /* keep the writer thread out of the file */
    /* start each run on an empty file, so runs do not pile up dirty pages */
    if (ftruncate(gpuprof__g.trace_fd, 0) != 0 || lseek(gpuprof__g.trace_fd, 0, SEEK_SET) != 0) perror("bench");
    gpuprof__g.trace_off = 0;
    if (to_null) { saved_fd = gpuprof__g.trace_fd; gpuprof__g.trace_fd = open("/dev/null", O_WRONLY); }
    t0 = gpuprof__mono_ns();
    for (; done < events; done += GPUPROF__BLOCK_EVENTS) gpuprof__trace_format(b);
    t1 = gpuprof__mono_ns();
    if (to_null) { close(gpuprof__g.trace_fd); gpuprof__g.trace_fd = saved_fd; }
    pthread_mutex_unlock(&gpuprof__trace_lock);
    free(b);
    return (double)done / ((double)(t1 - t0) * 1e-9);
}

static double fprintf_events_per_s(const char *path, long events) {
    FILE *f = fopen(path, "w");
    uint64_t t0, t1;
    if (!f) return 0;
    t0 = gpuprof__mono_ns();
    for (long i = 0; i < events; i++)
        fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"cat\":\"cpu\",\"name\":\"%s\",\"ts\":%.3f,\"dur\":%.3f}", 1234, 1234,
                "forward", (1000000.0 + 1234.0 * (double)i) / 1000.0, (987.0 + (double)(i % 2048)) / 1000.0);
    fclose(f);
    t1 = gpuprof__mono_ns();
    return (double)events / ((double)(t1 - t0) * 1e-9);
}

static void row(const figure *f, double base) {
    printf("%-44s %8.2f ns  (%6.2f .. %6.2f)  %6.2fx\n", f->name, f->median, f->lo, f->hi, base > 0 ? f->median / base : 0);
}

int main(int argc, char **argv) {
    figure empty = { "empty loop", { 0 }, 0, 0, 0 }, clock2 = { "two raw clock reads (the baseline)", { 0 }, 0, 0, 0 },
           stats = { "GPUPROF_RANGE, literal name, stats only", { 0 }, 0, 0, 0 }, traced = { "GPUPROF_RANGE, literal name, stats + trace", { 0 }, 0, 0, 0 },
           begin_end = { "GPUPROF_BEGIN/END, stats + trace", { 0 }, 0, 0, 0 }, dyn = { "GPUPROF_RANGE_DYN, stats + trace", { 0 }, 0, 0, 0 },
           off = { "GPUPROF_RANGE, runtime-disabled", { 0 }, 0, 0, 0 };
    double w_rate[RUNS], n_rate[RUNS], f_rate[RUNS], base;
    const char *trace = "/tmp/gpuprof_bench.trace.json";
    long events = 1000000;
    if (argc > 1) iters = atol(argv[1]);
    if (iters < 1000) iters = 1000;

    session(NULL);
    measure(&empty, loop_empty);
    measure(&clock2, loop_clock);
    measure(&stats, loop_range);
    gpuprof_set_enabled(0);
    measure(&off, loop_range);
    gpuprof_shutdown();

    session(trace);
    measure(&traced, loop_range);
    measure(&begin_end, loop_begin_end);
    measure(&dyn, loop_dyn);
    for (int r = 0; r < RUNS; r++) w_rate[r] = writer_events_per_s(events, 0);
    for (int r = 0; r < RUNS; r++) n_rate[r] = writer_events_per_s(events, 1);
    gpuprof_shutdown();
    for (int r = 0; r < RUNS; r++) f_rate[r] = fprintf_events_per_s("/tmp/gpuprof_bench.fprintf.json", events);
    remove(trace);
    remove("/tmp/gpuprof_bench.fprintf.json");

    printf("gpuprof %s overhead per begin+end pair, %ld iterations x %d runs, clock %s\n", GPUPROF_VERSION, iters, RUNS,
           gpuprof__clock.use_tsc ? "TSC (rdtsc)" : "CLOCK_MONOTONIC");
#ifdef GPUPROF_NVTX
    printf("built with NVTX: ranges %s NVTX (%s)\n", getenv("GPUPROF_NVTX") && strcmp(getenv("GPUPROF_NVTX"), "0") == 0 ? "not pushed to" : "pushed to",
           getenv("NVTX_INJECTION64_PATH") ? "a tool is attached" : "no tool attached");
#endif
    printf("%-44s %11s  %16s  %7s\n", "", "median", "(min .. max)", "vs clock");
    base = clock2.median;
    row(&empty, base);
    row(&clock2, base);
    row(&stats, base);
    row(&traced, base);
    row(&begin_end, base);
    row(&dyn, base);
    row(&off, base);
    printf("%-44s %8.2f ns above the empty loop\n", "runtime-disabled", off.median - empty.median);
    qsort(w_rate, RUNS, sizeof *w_rate, cmp_double);
    qsort(n_rate, RUNS, sizeof *n_rate, cmp_double);
    qsort(f_rate, RUNS, sizeof *f_rate, cmp_double);
    printf("trace writer to a file:      %6.1f M events/s (%.1f .. %.1f), %.1fx a fprintf-per-event writer (%.1f M events/s)\n",
           w_rate[RUNS / 2] / 1e6, w_rate[0] / 1e6, w_rate[RUNS - 1] / 1e6, w_rate[RUNS / 2] / f_rate[RUNS / 2], f_rate[RUNS / 2] / 1e6);
    printf("trace writer to /dev/null:   %6.1f M events/s (%.1f .. %.1f): the formatting alone\n",
           n_rate[RUNS / 2] / 1e6, n_rate[0] / 1e6, n_rate[RUNS - 1] / 1e6);
    return 0;
}
