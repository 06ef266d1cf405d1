/* bench_overhead.c -- what gpuprof costs, measured in one run against
   baselines from the same run, in one table with the targets of the
   performance issue and a JSON file of the same figures. Loops are timed in
   CPU time of the thread running them (CLOCK_THREAD_CPUTIME_ID): on a shared
   machine wall-clock ratios swing 2-3x between runs, CPU time much less;
   the trace's writer thread shows in the whole-process figures (user + sys
   of every thread, getrusage):
   - a range (literal, explicit, dynamic name; statistics, trace; paused)
     against an empty loop and the two raw clock reads a range needs; the
     same with GPUPROF_COLLECTOR=1, and then the collector thread's CPU time
     per range it adds to the statistics;
   - two threads recording at once against one;
   - whole processes (this program re-run): 4M ranges as fast as they come
     with a JSON trace to a new file, start to exit, against the same loop of
     two clock reads; the trace's metadata says whether every event was
     kept; the same over the last run's file, and with the trace to
     /dev/null (formatted, written nowhere); and a process writing the
     trace's bytes alone: the floor under the figure;
   - the distribution of single ranges with a trace (a buffer hand-over
     every 2048 events);
   - the trace writer against a plain fprintf-per-event writer;
   - peak RSS of 10^7 ranges against the same loop uninstrumented (each in a
     fresh process);
   - a report of 10^4 distinct ranges;
   - the GPU path, counted on the simulated CUDA runtime (bench_gpu_sim,
     run from the same folder when it was built).
   Each timing is the median of 7 runs, with the spread (min..max). Not a
   pass/fail test: read the ratios.

   usage: bench_overhead [iterations per run, default 2000000] [--json PATH]
          (default PATH: bench_overhead.json) */
#define GPUPROF_IMPLEMENTATION
#include "../gpuprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <fcntl.h>

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
#define NOW() gpuprof__thread_cpu_ns()

static double loop_empty(void) {
    uint64_t t0 = NOW();
    for (long i = 0; i < iters; i++) BARRIER();
    return ns_per_iter(t0, NOW());
}
static double loop_clock(void) {
    uint64_t t0 = NOW(), acc = 0;
    for (long i = 0; i < iters; i++) { acc += gpuprof__ticks(); BARRIER(); acc += gpuprof__ticks(); }
    sink = acc;
    return ns_per_iter(t0, NOW());
}
static double loop_range(void) {
    uint64_t t0 = NOW();
    for (long i = 0; i < iters; i++) { PROF_RANGE("bench.range"); BARRIER(); }
    return ns_per_iter(t0, NOW());
}
/* User + sys CPU time of a resource usage, in ns. */
static double rusage_ns(const struct rusage *ru) {
    return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e9 + (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) * 1e3;
}
/* The collector thread's CPU per range: the process's CPU time (getrusage)
   less this thread's, over a stats-only loop and until the collector has
   added the last record (the session has no other thread of its own). */
static double process_cpu_ns(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return rusage_ns(&ru);
}
static double loop_collector(void) {
    double p0 = process_cpu_ns();
    uint64_t t0 = NOW();
    gpuprof__thread *t;
    for (long i = 0; i < iters; i++) { PROF_RANGE("bench.collected"); BARRIER(); }
    t = gpuprof__tls;
    for (int k = 0; k < 2000 && t && GPUPROF__LDA(&t->rec_tail) != t->rec_head; k++) {
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
    }
    return (process_cpu_ns() - p0 - (double)(NOW() - t0)) / (double)iters;
}
static double loop_begin_end(void) {
    uint64_t t0 = NOW();
    for (long i = 0; i < iters; i++) { PROF_BEGIN("bench.begin_end"); BARRIER(); PROF_END(); }
    return ns_per_iter(t0, NOW());
}
static double loop_dyn(void) {
    static const char *const names[4] = { "layer 0", "layer 1", "layer 2", "layer 3" };
    uint64_t t0 = NOW();
    for (long i = 0; i < iters; i++) { PROF_RANGE_DYN(names[i & 3]); BARRIER(); }
    return ns_per_iter(t0, NOW());
}

static void measure(figure *f, double (*loop)(void)) {
    loop();                                   /* warm up: first-call registration, page faults */
    for (int r = 0; r < RUNS; r++) f->run[r] = loop();
    finish(f);
}

static void session(const char *trace_path, int ring, int collector) {
    gpuprof_config cfg = {0};
    cfg.report = "off";
    cfg.collector = collector;
    cfg.trace_path = trace_path;
    cfg.trace_ring_mb = ring ? 0 : -1;        /* 0: the default flight recorder; -1: off */
    gpuprof_init(&cfg);
}

/* The trace writer alone: format and write blocks of range events, 8 at a
   time as the writer takes them (it takes up to 16): each round's events
   moved later than the last round's (the Perfetto encoder writes times as
   deltas), outside the timing; a round is timed as one, so the two reads of
   the thread's CPU clock (~0.5 us together, a syscall) are not charged to
   each block's 2048 events. pattern: 0 one name; 1 two names taking turns;
   2 each odd event the parent of the one before (begun 10 ticks before it,
   ending 20 after: a child and its parent, as ranges end). */
#define WRITER_BLOCKS 8
static double writer_events_per_s(long events, int to_null, int format, int pattern) {
    gpuprof__block *b[WRITER_BLOCKS];
    gpuprof__thread *t = gpuprof__tls;
    uint64_t t0, t1;
    long done = 0;
    int saved_fd = -1;
    gpuprof_site site = { "forward", __FILE__, __LINE__, 0 };
    uint32_t id = gpuprof__site_id(&site, t->session);
    gpuprof_site site2 = { "backward", __FILE__, __LINE__, 0 };
    uint32_t id2 = gpuprof__site_id(&site2, t->session);
    for (int k = 0; k < WRITER_BLOCKS; k++) {
        b[k] = (gpuprof__block *)calloc(1, sizeof *b[k]);
        b[k]->owner = t;
        b[k]->count = GPUPROF__BLOCK_EVENTS;
        for (int i = 0; i < GPUPROF__BLOCK_EVENTS; i++) {
            uint64_t j = (uint64_t)k * GPUPROF__BLOCK_EVENTS + (uint64_t)i;
            b[k]->ev[i].ts = 1000000ull + 1234ull * j;
            b[k]->ev[i].u.dur_ticks = 987 + (j & 127);      /* ranges one after another, none overlapping */
            b[k]->ev[i].name_id = pattern && (i & 1) ? id2 : id;
            if (pattern == 2 && (i & 1)) {
                b[k]->ev[i].ts = b[k]->ev[i - 1].ts - 10;
                b[k]->ev[i].u.dur_ticks = b[k]->ev[i - 1].u.dur_ticks + 30;
            }
        }
    }
    gpuprof__fmt_acquire();                       /* keep the writer thread out of the file */
    gpuprof__trace_flush(&gpuprof__trace.out);       /* the stream's staged bytes, before the file is emptied */
    /* start each run on an empty file, so runs do not pile up dirty pages */
    if (ftruncate(gpuprof__trace.out.fd, 0) != 0 || lseek(gpuprof__trace.out.fd, 0, SEEK_SET) != 0) perror("bench");
    gpuprof__trace.out.off = 0;
    gpuprof__trace.out.format = format;
    gpuprof__trace.out.gen = ++gpuprof__trace.out_gen;    /* a new output: a Perfetto sequence starts in it */
    if (to_null) { saved_fd = gpuprof__trace.out.fd; gpuprof__trace.out.fd = open("/dev/null", O_WRONLY); }
    for (t1 = 0; done < events; done += WRITER_BLOCKS * GPUPROF__BLOCK_EVENTS) {
        for (int k = 0; k < WRITER_BLOCKS; k++)
            for (int i = 0; i < GPUPROF__BLOCK_EVENTS; i++) b[k]->ev[i].ts += 1234ull * WRITER_BLOCKS * GPUPROF__BLOCK_EVENTS;
        t0 = NOW();
        for (int k = 0; k < WRITER_BLOCKS; k++) gpuprof__trace_events(&gpuprof__trace.out, b[k], 0, b[k]->count);
        t1 += NOW() - t0;
    }
    gpuprof__trace_flush(&gpuprof__trace.out);       /* what the last round left staged, uncounted */
    gpuprof__trace.out.format = GPUPROF__FMT_JSON;
    if (to_null) { close(gpuprof__trace.out.fd); gpuprof__trace.out.fd = saved_fd; }
    gpuprof__fmt_release();
    for (int k = 0; k < WRITER_BLOCKS; k++) free(b[k]);
    return (double)done / ((double)t1 * 1e-9);
}

static double fprintf_events_per_s(const char *path, long events) {
    FILE *f = fopen(path, "w");
    uint64_t t0, t1;
    if (!f) return 0;
    t0 = NOW();
    for (long i = 0; i < events; i++)
        fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"cat\":\"cpu\",\"name\":\"%s\",\"ts\":%.3f,\"dur\":%.3f}", 1234, 1234,
                "forward", (1000000.0 + 1234.0 * (double)i) / 1000.0, (987.0 + (double)(i % 2048)) / 1000.0);
    fclose(f);
    t1 = NOW();
    return (double)events / ((double)(t1 - t0) * 1e-9);
}

/* Two threads running the same loop at once: the mean of their per-range
   costs. */
static pthread_barrier_t two_bar;
static double two_ns[2];
static void *two_main(void *arg) {
    int k = (int)(intptr_t)arg;
    pthread_barrier_wait(&two_bar);
    two_ns[k] = loop_range();
    return NULL;
}
static double loop_two(void) {
    pthread_t th[2];
    pthread_barrier_init(&two_bar, NULL, 2);
    for (intptr_t k = 0; k < 2; k++) pthread_create(&th[k], NULL, two_main, (void *)k);
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    pthread_barrier_destroy(&two_bar);
    return (two_ns[0] + two_ns[1]) / 2;
}

/* Single ranges with a trace, each timed: their distribution (gpuprof's own
   accumulator), which shows the buffer hand-over every 2048 events. */
static void single_ranges(gpuprof_stats *st) {
    gpuprof_stats_init(st);
    for (long i = 0; i < iters; i++) {
        uint64_t a = gpuprof__ticks(), b;
        { PROF_RANGE("bench.single"); BARRIER(); }
        b = gpuprof__ticks();
        gpuprof_stats_add(st, (double)gpuprof__ticks_to_ns(b - a));
    }
}

/* Runs this program again as `self FLAG mode n [path]` and returns the
   child's resource usage (every thread of it), or -1 if it failed. */
static int run_child(const char *self, const char *flag, const char *mode, long n, const char *path, struct rusage *ru) {
    char count[32];
    int status;
    pid_t pid;
    snprintf(count, sizeof count, "%ld", n);
    fflush(stdout);
    if ((pid = fork()) < 0) return -1;
    if (pid == 0) {
        execl(self, self, flag, mode, count, path, (char *)NULL);
        _exit(127);
    }
    return wait4(pid, &status, 0, ru) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* A fresh process makes n ranges with statistics and a trace (written to
   /dev/null), or runs the same loop with no gpuprof at all; its peak RSS in KiB. */
static long child_peak_kib(const char *self, const char *mode, long n) {
    struct rusage ru;
    return run_child(self, "--rss-child", mode, n, NULL, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* A whole process, start to exit (process_child: n ranges with a JSON
   trace to `path`, the same loop of two clock reads, or n bytes written);
   its CPU time (user + sys, every thread) per one of `per`, in ns. */
static double child_cpu_ns(const char *self, const char *mode, long n, const char *path, long per) {
    struct rusage ru;
    if (run_child(self, "--process-child", mode, n, path, &ru) != 0) return -1;
    return rusage_ns(&ru) / (double)per;
}
/* The bytes alone: a process that writes n bytes of range events' JSON to a
   new file at `path` as the trace writer does (1 MiB write() calls), with no
   range and no formatting: what the kernel charges for the trace's bytes. */
static int write_child(long n, const char *path) {
    static char buf[1 << 20];
    static const char ev[] = ",\n{\"ph\":\"X\",\"pid\":12345,\"tid\":12345,\"cat\":\"cpu\",\"name\":\"bench.process\",\"ts\":1234.567,\"dur\":0.010}";
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 1;
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = ev[i % (sizeof ev - 1)];
    while (n > 0) {
        ssize_t w = write(fd, buf, n < (long)sizeof buf ? (size_t)n : sizeof buf);
        if (w <= 0) { close(fd); return 1; }
        n -= w;
    }
    return close(fd) != 0;
}
static int process_child(const char *mode, long n, const char *path) {
    if (strcmp(mode, "write") == 0) return write_child(n, path);
    if (strcmp(mode, "trace") == 0) {
        gpuprof_config cfg = {0};
        cfg.report = "off";
        cfg.trace_path = path;
        gpuprof_init(&cfg);
        for (long i = 0; i < n; i++) { PROF_RANGE("bench.process"); BARRIER(); }
        gpuprof_shutdown();
    } else {
        uint64_t acc = 0;
        gpuprof__clock_init(1);               /* the clock gpuprof reads (rdtsc where it can), without a session */
        for (long i = 0; i < n; i++) { acc += gpuprof__ticks(); BARRIER(); acc += gpuprof__ticks(); }
        sink = acc;
    }
    return 0;
}
/* The events and drops a trace's closing metadata counts: the JSON trace's
   "gpuprof" object, or the Perfetto trace's last process label. */
static int trace_counts(const char *path, double *events, double *dropped) {
    char tail[1024];
    const char *at;
    size_t k;
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, -(long)(sizeof tail - 1), SEEK_END);
    k = fread(tail, 1, sizeof tail - 1, f);
    fclose(f);
    tail[k] = 0;
    for (size_t i = 0; i < k; i++) if (!tail[i]) tail[i] = ' ';    /* protobuf: its bytes as text */
    if ((at = strstr(tail, "gpuprof " GPUPROF_VERSION ": ")) != NULL)
        return sscanf(at + strlen("gpuprof " GPUPROF_VERSION ": "), "%lf events, %lf dropped", events, dropped) == 2 ? 0 : -1;
    at = strstr(tail, "\"gpuprof\":{");
    return at && sscanf(at, "\"gpuprof\":{\"version\":\"%*[^\"]\",\"events\":%lf,\"dropped\":%lf", events, dropped) == 2 ? 0 : -1;
}

/* The host's CPU, as /proc/cpuinfo names it. */
static void cpu_model(char *out, size_t n) {
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(out, n, "unknown CPU");
    while (f && fgets(line, sizeof line, f)) {
        char *c = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && c) {
            c += 2;
            c[strcspn(c, "\n")] = 0;
            snprintf(out, n, "%s", c);
            break;
        }
    }
    if (f) fclose(f);
}

static int rss_child(const char *mode, long n) {
    if (strcmp(mode, "ranges") == 0) {
        gpuprof_config cfg = {0};
        cfg.report = "off";
        cfg.trace_path = "/dev/null";
        gpuprof_init(&cfg);
        for (long i = 0; i < n; i++) { PROF_RANGE("bench.rss"); BARRIER(); }
        gpuprof_shutdown();
    } else {
        volatile uint64_t acc = 0;
        for (long i = 0; i < n; i++) { acc += gpuprof__ticks(); BARRIER(); acc += gpuprof__ticks(); }
    }
    return 0;
}

/* A report of 10^4 distinct ranges, rendered to /dev/null: ms. */
static double report_ms(double *lo, double *hi) {
    gpuprof_config cfg = {0};
    double r[RUNS];
    char name[32];
    FILE *devnull = fopen("/dev/null", "w");
    cfg.report = "off";
    cfg.max_names = 20000;
    cfg.max_nodes = 20000;
    gpuprof_init(&cfg);
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof name, "range %d", i);
        { PROF_RANGE_DYN(name); }
    }
    for (int k = 0; k < RUNS; k++) {
        uint64_t t0 = gpuprof__mono_ns();
        gpuprof_report(devnull);
        r[k] = (double)(gpuprof__mono_ns() - t0) / 1e6;
    }
    gpuprof_shutdown();
    fclose(devnull);
    qsort(r, RUNS, sizeof *r, cmp_double);
    *lo = r[0];
    *hi = r[RUNS - 1];
    return r[RUNS / 2];
}

/* The GPU path from bench_gpu_sim beside this program, if it was built. */
typedef struct {
    int ok, kc;
    double records, syncs, creates, cpu, cpu_lo, cpu_hi, gpu, gpu_lo, gpu_hi, kern, kern_lo, kern_hi;
    double coll, coll_lo, coll_hi, launches, gpu_records, buf_mib, tables_mib;
    double kspan, kspan_lo, kspan_hi, slots_mib;
} gpu_sim;
static gpu_sim run_gpu_sim(const char *self) {
    gpu_sim g;
    char cmd[4200], line[256];
    const char *slash = strrchr(self, '/');
    FILE *p;
    memset(&g, 0, sizeof g);
    snprintf(cmd, sizeof cmd, "%.*sbench_gpu_sim 2>/dev/null", slash ? (int)(slash - self + 1) : 0, self);
    if (!(p = popen(cmd, "r"))) return g;
    while (fgets(line, sizeof line, p)) {
        if (sscanf(line, "gpu_sim_records_per_range %lf", &g.records) == 1) g.ok |= 1;
        sscanf(line, "gpu_sim_syncs %lf", &g.syncs);
        sscanf(line, "gpu_sim_event_creates %lf", &g.creates);
        if (sscanf(line, "gpu_sim_cpu_only_ns %lf %lf %lf", &g.cpu, &g.cpu_lo, &g.cpu_hi) == 3) g.ok |= 2;
        if (sscanf(line, "gpu_sim_gpu_timed_ns %lf %lf %lf", &g.gpu, &g.gpu_lo, &g.gpu_hi) == 3) g.ok |= 4;
        if (sscanf(line, "gpu_sim_kernels_ns %lf %lf %lf", &g.kern, &g.kern_lo, &g.kern_hi) == 3) g.kc |= 1;
        if (sscanf(line, "gpu_sim_collector_ns_per_launch %lf %lf %lf", &g.coll, &g.coll_lo, &g.coll_hi) == 3) g.kc |= 2;
        sscanf(line, "gpu_sim_collector_launches %lf", &g.launches);
        sscanf(line, "gpu_sim_collector_gpu_records %lf", &g.gpu_records);
        sscanf(line, "gpu_sim_capture_buffer_mib %lf", &g.buf_mib);
        sscanf(line, "gpu_sim_capture_tables_mib %lf", &g.tables_mib);
        if (sscanf(line, "gpu_sim_from_kernels_ns %lf %lf %lf", &g.kspan, &g.kspan_lo, &g.kspan_hi) == 3) g.kc |= 4;
        sscanf(line, "gpu_sim_call_slots_mib %lf", &g.slots_mib);
    }
    g.ok = pclose(p) == 0 && g.ok == 7;
    return g;
}

/* The table: one row per figure, its baseline, the ratio, the target and
   whether this run met it. The same rows go to the JSON file. */
static FILE *json;
static int json_rows;
static void row(const char *name, double v, const char *unit, double lo, double hi, const char *base, double ratio,
                const char *target, int met) {
    char spread[48] = "", rat[16] = "";
    if (lo == lo && hi == hi) snprintf(spread, sizeof spread, "(%.4g .. %.4g)", lo, hi);
    if (ratio == ratio) snprintf(rat, sizeof rat, "%.2fx", ratio);
    {
        char line[256];
        size_t n = (size_t)snprintf(line, sizeof line, "%-50s %10.4g %-8s %-20s %-13s %7s  %-12s %s", name, v, unit, spread, base ? base : "", rat,
                                    target ? target : "", !target ? "" : met ? "met" : "NOT MET");
        if (n >= sizeof line) n = sizeof line - 1;
        while (n && line[n - 1] == ' ') n--;
        printf("%.*s\n", (int)n, line);
    }
    if (json) {
        fprintf(json, "%s\n  {\"figure\":\"%s\",\"value\":%.6g,\"unit\":\"%s\"", json_rows++ ? "," : "", name, v, unit);
        if (lo == lo && hi == hi) fprintf(json, ",\"min\":%.6g,\"max\":%.6g", lo, hi);
        if (base) fprintf(json, ",\"baseline\":\"%s\",\"ratio\":%.4f", base, ratio);
        if (target) fprintf(json, ",\"target\":\"%s\",\"met\":%s", target, met ? "true" : "false");
        fprintf(json, "}");
    }
}

int main(int argc, char **argv) {
    figure empty = { "empty loop", { 0 }, 0, 0, 0 }, clock2 = { "two raw clock reads (the baseline)", { 0 }, 0, 0, 0 },
           stats = { "", { 0 }, 0, 0, 0 }, ring = { "", { 0 }, 0, 0, 0 }, traced = { "", { 0 }, 0, 0, 0 },
           begin_end = { "", { 0 }, 0, 0, 0 }, dyn = { "", { 0 }, 0, 0, 0 }, off = { "", { 0 }, 0, 0, 0 },
           two_stats = { "", { 0 }, 0, 0, 0 }, two_traced = { "", { 0 }, 0, 0, 0 }, coll = { "", { 0 }, 0, 0, 0 },
           stats_col = { "", { 0 }, 0, 0, 0 };
    double w_rate[RUNS], n_rate[RUNS], f_rate[RUNS], pw_rate[RUNS], pn_rate[RUNS], pn2_rate[RUNS], pnn_rate[RUNS], ch_pf[RUNS], pf_bytes = -1, pf_events = -1, pf_dropped = -1, ch_trace[RUNS], ch_clock[RUNS], ch_over[RUNS], ch_null[RUNS], ch_write[RUNS], ch_bytes = -1, ch_events = -1, ch_dropped = -1, base, rep, rep_lo, rep_hi;
    const char *trace = "/tmp/gpuprof_bench.trace.json", *pftrace = "/tmp/gpuprof_bench.pftrace", *json_path = "bench_overhead.json";
    long events = 1000000, rss_n = 10000000, proc_n = 4000000, kib_none, kib_ranges;
    char cpu[256];
    gpuprof_stats single;
    gpu_sim g;
    if (argc > 3 && strcmp(argv[1], "--rss-child") == 0) return rss_child(argv[2], atol(argv[3]));
    if (argc > 4 && strcmp(argv[1], "--process-child") == 0) return process_child(argv[2], atol(argv[3]), argv[4]);
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--json") == 0 && a + 1 < argc) json_path = argv[++a];
        else iters = atol(argv[a]);
    }
    if (iters < 1000) iters = 1000;
    cpu_model(cpu, sizeof cpu);

    session(NULL, 0, 0);                      /* statistics only: no trace file, no flight recorder */
    measure(&empty, loop_empty);
    measure(&clock2, loop_clock);
    measure(&stats, loop_range);
    measure(&two_stats, loop_two);
    gpuprof_set_enabled(0);
    measure(&off, loop_range);
    gpuprof_shutdown();

    session(NULL, 0, 1);                      /* statistics only, added by the collector thread */
    measure(&stats_col, loop_range);
    measure(&coll, loop_collector);
    gpuprof_shutdown();

    session(NULL, 1, 0);                      /* the default: no trace file, the flight recorder on */
    measure(&ring, loop_range);
    gpuprof_shutdown();

    session(trace, 0, 0);
    measure(&traced, loop_range);
    measure(&two_traced, loop_two);
    measure(&begin_end, loop_begin_end);
    measure(&dyn, loop_dyn);
    single_ranges(&single);
    for (int r = 0; r < RUNS; r++) w_rate[r] = writer_events_per_s(events, 0, GPUPROF__FMT_JSON, 0);
    for (int r = 0; r < RUNS; r++) n_rate[r] = writer_events_per_s(events, 1, GPUPROF__FMT_JSON, 0);
    for (int r = 0; r < RUNS; r++) pw_rate[r] = writer_events_per_s(events, 0, GPUPROF__FMT_PERFETTO, 0);
    for (int r = 0; r < RUNS; r++) pn_rate[r] = writer_events_per_s(events, 1, GPUPROF__FMT_PERFETTO, 0);
    for (int r = 0; r < RUNS; r++) pn2_rate[r] = writer_events_per_s(events, 1, GPUPROF__FMT_PERFETTO, 1);
    for (int r = 0; r < RUNS; r++) pnn_rate[r] = writer_events_per_s(events, 1, GPUPROF__FMT_PERFETTO, 2);
    gpuprof_shutdown();
    for (int r = 0; r < RUNS; r++) f_rate[r] = fprintf_events_per_s("/tmp/gpuprof_bench.fprintf.json", events);
    remove(trace);
    remove("/tmp/gpuprof_bench.fprintf.json");
    for (int r = 0; r < RUNS; r++) {
        double ev, dr;
        struct stat st;
        ch_clock[r] = child_cpu_ns("/proc/self/exe", "clock", proc_n, trace, proc_n);
        /* each run writes a new file: freeing the last run's 400 MB of page
           cache (O_TRUNC) is charged to whoever truncates it -- measured on
           its own below, not counted against the ranges */
        remove(trace);
        ch_trace[r] = child_cpu_ns("/proc/self/exe", "trace", proc_n, trace, proc_n);
        if (trace_counts(trace, &ev, &dr) != 0) ev = dr = -1;
        if (ch_events < 0 || dr > ch_dropped) { ch_events = ev; ch_dropped = dr; }     /* the worst run */
        ch_bytes = stat(trace, &st) == 0 ? (double)st.st_size : -1;
        ch_over[r] = child_cpu_ns("/proc/self/exe", "trace", proc_n, trace, proc_n);          /* over the file just written */
        ch_null[r] = child_cpu_ns("/proc/self/exe", "trace", proc_n, "/dev/null", proc_n);    /* formatted, written nowhere */
        remove(trace);
        ch_write[r] = ch_bytes > 0 ? child_cpu_ns("/proc/self/exe", "write", (long)ch_bytes, trace, proc_n) : -1;   /* per event */
        remove(pftrace);
        ch_pf[r] = child_cpu_ns("/proc/self/exe", "trace", proc_n, pftrace, proc_n);          /* the same into a Perfetto trace */
        if (trace_counts(pftrace, &ev, &dr) != 0) ev = dr = -1;
        if (pf_events < 0 || dr > pf_dropped) { pf_events = ev; pf_dropped = dr; }
        pf_bytes = stat(pftrace, &st) == 0 ? (double)st.st_size : -1;
    }
    remove(pftrace);
    remove(trace);
    kib_none = child_peak_kib("/proc/self/exe", "none", rss_n);
    kib_ranges = child_peak_kib("/proc/self/exe", "ranges", rss_n);
    rep = report_ms(&rep_lo, &rep_hi);
    g = run_gpu_sim(argv[0]);
    qsort(w_rate, RUNS, sizeof *w_rate, cmp_double);
    qsort(n_rate, RUNS, sizeof *n_rate, cmp_double);
    qsort(pw_rate, RUNS, sizeof *pw_rate, cmp_double);
    qsort(pn_rate, RUNS, sizeof *pn_rate, cmp_double);
    qsort(pn2_rate, RUNS, sizeof *pn2_rate, cmp_double);
    qsort(pnn_rate, RUNS, sizeof *pnn_rate, cmp_double);
    qsort(ch_pf, RUNS, sizeof *ch_pf, cmp_double);
    qsort(f_rate, RUNS, sizeof *f_rate, cmp_double);
    qsort(ch_trace, RUNS, sizeof *ch_trace, cmp_double);
    qsort(ch_clock, RUNS, sizeof *ch_clock, cmp_double);
    qsort(ch_over, RUNS, sizeof *ch_over, cmp_double);
    qsort(ch_null, RUNS, sizeof *ch_null, cmp_double);
    qsort(ch_write, RUNS, sizeof *ch_write, cmp_double);

    json = fopen(json_path, "w");
    if (json) fprintf(json, "{\"tool\":\"gpuprof bench_overhead\",\"version\":\"%s\",\"cpu\":\"%s\",\"iterations\":%ld,\"runs\":%d,\"clock\":\"%s\",\"figures\":[",
                      GPUPROF_VERSION, cpu, iters, RUNS, gpuprof__clock.use_tsc ? "tsc" : "clock_monotonic");
    printf("gpuprof %s benchmark on %s (%ld CPUs): %ld iterations x %d runs per timing, clock %s\n", GPUPROF_VERSION, cpu,
           sysconf(_SC_NPROCESSORS_ONLN), iters, RUNS, gpuprof__clock.use_tsc ? "TSC (rdtsc)" : "CLOCK_MONOTONIC");
    printf("times: CPU time of the thread running the loop, or of the whole process where it says so; median (min .. max)\n");
#ifdef GPUPROF_NVTX
    printf("built with NVTX: ranges %s NVTX (%s)\n", getenv("GPUPROF_NVTX") && strcmp(getenv("GPUPROF_NVTX"), "0") == 0 ? "not pushed to" : "pushed to",
           getenv("NVTX_INJECTION64_PATH") ? "a tool is attached" : "no tool attached");
#endif
    printf("%-50s %10s %-8s %-20s %-13s %7s  %s\n", "figure", "median", "unit", "(min .. max)", "baseline", "ratio", "target");
    base = clock2.median;
    row(empty.name, empty.median, "ns", empty.lo, empty.hi, NULL, NAN, NULL, 0);
    row(clock2.name, clock2.median, "ns", clock2.lo, clock2.hi, NULL, NAN, NULL, 0);
    row("GPUPROF_RANGE, literal, stats only", stats.median, "ns", stats.lo, stats.hi, "clock reads", stats.median / base,
        "<= 1.2x", stats.median / base <= 1.2);
    row("GPUPROF_RANGE, stats only, GPUPROF_COLLECTOR=1", stats_col.median, "ns", stats_col.lo, stats_col.hi, "clock reads", stats_col.median / base, NULL, 0);
    row("  the collector thread's CPU per range it adds", coll.median, "ns", coll.lo, coll.hi, "clock reads", coll.median / base, NULL, 0);
    row("GPUPROF_RANGE, literal, stats + flight recorder", ring.median, "ns", ring.lo, ring.hi, "clock reads", ring.median / base, NULL, 0);
    row("GPUPROF_RANGE, literal, stats + streamed trace", traced.median, "ns", traced.lo, traced.hi, "clock reads", traced.median / base,
        "<= 1.25x", traced.median / base <= 1.25);
    row("GPUPROF_BEGIN/END, stats + trace", begin_end.median, "ns", begin_end.lo, begin_end.hi, "clock reads", begin_end.median / base, NULL, 0);
    row("GPUPROF_RANGE_DYN, stats + trace", dyn.median, "ns", dyn.lo, dyn.hi, "clock reads", dyn.median / base, "<= 3x", dyn.median / base <= 3.0);
    row("GPUPROF_RANGE, runtime-disabled", off.median, "ns", off.lo, off.hi, "clock reads", off.median / base, NULL, 0);
    row("runtime-disabled, above the empty loop", off.median - empty.median, "ns", NAN, NAN, NULL, NAN, "<= 2 ns", off.median - empty.median <= 2.0);
    row("2 threads at once, per thread, stats only", two_stats.median, "ns", two_stats.lo, two_stats.hi, "1 thread", two_stats.median / stats.median,
        "<= 1.1x", two_stats.median / stats.median <= 1.1);
    row("2 threads at once, per thread, stats + trace", two_traced.median, "ns", two_traced.lo, two_traced.hi, "1 thread",
        two_traced.median / traced.median, "<= 1.1x", two_traced.median / traced.median <= 1.1);
    row("process, 4M ranges + JSON trace file, start to exit", ch_trace[RUNS / 2], "ns", ch_trace[0], ch_trace[RUNS - 1], "clock, process",
        ch_trace[RUNS / 2] / ch_clock[RUNS / 2], "<= 2.0x", ch_trace[RUNS / 2] / ch_clock[RUNS / 2] <= 2.0);
    row("process, 4M x two clock reads (baseline)", ch_clock[RUNS / 2], "ns", ch_clock[0], ch_clock[RUNS - 1], NULL, NAN, NULL, 0);
    row("process, the same over the last run's trace file", ch_over[RUNS / 2], "ns", ch_over[0], ch_over[RUNS - 1], "clock, process",
        ch_over[RUNS / 2] / ch_clock[RUNS / 2], NULL, 0);
    row("process, the same with the trace to /dev/null", ch_null[RUNS / 2], "ns", ch_null[0], ch_null[RUNS - 1], "clock, process",
        ch_null[RUNS / 2] / ch_clock[RUNS / 2], NULL, 0);
    row("process, the trace's bytes alone, per event", ch_write[RUNS / 2], "ns", ch_write[0], ch_write[RUNS - 1], "clock, process",
        ch_write[RUNS / 2] / ch_clock[RUNS / 2], NULL, 0);
    row("  the trace file per range event", ch_bytes / (double)proc_n, "bytes", NAN, NAN, NULL, NAN, NULL, 0);
    row("process, 4M ranges: trace events written", ch_events, "", NAN, NAN, NULL, NAN, "== 4e6", ch_events == (double)proc_n);
    row("process, 4M ranges: trace events dropped, worst run", ch_dropped, "", NAN, NAN, NULL, NAN, "== 0", ch_dropped == 0);
    row("process, 4M ranges + Perfetto trace (.pftrace)", ch_pf[RUNS / 2], "ns", ch_pf[0], ch_pf[RUNS - 1], "clock, process",
        ch_pf[RUNS / 2] / ch_clock[RUNS / 2], "<= 1.6x", ch_pf[RUNS / 2] / ch_clock[RUNS / 2] <= 1.6);
    row("  the Perfetto trace file per range event", pf_bytes / (double)proc_n, "bytes", NAN, NAN, "JSON", pf_bytes / ch_bytes, "<= 25", pf_bytes / (double)proc_n <= 25.0);
    row("process, 4M ranges, Perfetto: events written", pf_events, "", NAN, NAN, NULL, NAN, "== 4e6", pf_events == (double)proc_n);
    row("process, 4M ranges, Perfetto: dropped, worst run", pf_dropped, "", NAN, NAN, NULL, NAN, "== 0", pf_dropped == 0);
    row("single range with trace, p50 (wall)", gpuprof_stats_quantile(&single, 0.5), "ns", NAN, NAN, NULL, NAN, NULL, 0);
    row("single range with trace, p99.99 (hand-overs)", gpuprof_stats_quantile(&single, 0.9999), "ns", NAN, NAN, NULL, NAN, NULL, 0);
    row("single range with trace, max (VM interrupts too)", gpuprof_stats_max(&single), "ns", NAN, NAN, NULL, NAN, NULL, 0);
    row("trace writer to a file", w_rate[RUNS / 2] / 1e6, "M ev/s", w_rate[0] / 1e6, w_rate[RUNS - 1] / 1e6, NULL, NAN, NULL, 0);
    row("trace writer to a file, vs fprintf per event", w_rate[RUNS / 2] / 1e6, "M ev/s", NAN, NAN, "fprintf", w_rate[RUNS / 2] / f_rate[RUNS / 2],
        ">= 5x", w_rate[RUNS / 2] / f_rate[RUNS / 2] >= 5.0);
    row("fprintf-per-event writer (baseline)", f_rate[RUNS / 2] / 1e6, "M ev/s", f_rate[0] / 1e6, f_rate[RUNS - 1] / 1e6, NULL, NAN, NULL, 0);
    row("trace writer to /dev/null (formatting alone)", n_rate[RUNS / 2] / 1e6, "M ev/s", n_rate[0] / 1e6, n_rate[RUNS - 1] / 1e6, NULL, NAN, NULL, 0);
    row("Perfetto writer to a file", pw_rate[RUNS / 2] / 1e6, "M ev/s", pw_rate[0] / 1e6, pw_rate[RUNS - 1] / 1e6, NULL, NAN, NULL, 0);
    row("Perfetto writer to /dev/null (encoding alone)", pn_rate[RUNS / 2] / 1e6, "M ev/s", pn_rate[0] / 1e6, pn_rate[RUNS - 1] / 1e6, NULL, NAN, NULL, 0);
    row("  writer CPU per event, JSON / Perfetto (to /dev/null)", pn_rate[RUNS / 2] / n_rate[RUNS / 2], "x", NAN, NAN, NULL, NAN, ">= 4x",
        pn_rate[RUNS / 2] / n_rate[RUNS / 2] >= 4.0);
    row("Perfetto encoding, two names taking turns", pn2_rate[RUNS / 2] / 1e6, "M ev/s", pn2_rate[0] / 1e6, pn2_rate[RUNS - 1] / 1e6, NULL, NAN, NULL, 0);
    row("Perfetto encoding, a child and its parent", pnn_rate[RUNS / 2] / 1e6, "M ev/s", pnn_rate[0] / 1e6, pnn_rate[RUNS - 1] / 1e6, NULL, NAN, NULL, 0);
    if (kib_none > 0 && kib_ranges > 0) {
        row("peak RSS, 10^7 empty loop iterations (baseline)", (double)kib_none / 1024.0, "MiB", NAN, NAN, NULL, NAN, NULL, 0);
        row("peak RSS, 10^7 ranges, stats + trace", (double)kib_ranges / 1024.0, "MiB", NAN, NAN, NULL, NAN, NULL, 0);
        row("peak RSS, 10^7 ranges, above the baseline", (double)(kib_ranges - kib_none) / 1024.0, "MiB", NAN, NAN, NULL, NAN, "<= 64 MiB",
            kib_ranges - kib_none <= 64 * 1024);
    } else printf("peak RSS: the child processes failed\n");
    row("report of 10^4 distinct ranges", rep, "ms", rep_lo, rep_hi, NULL, NAN, "< 50 ms", rep < 50.0);
    if (g.ok) {
        row("GPU path (simulated runtime): event records per range", g.records, "", NAN, NAN, NULL, NAN, "== 2", g.records == 2.0);
        row("GPU path: synchronizing calls, 10^4 ranges", g.syncs, "", NAN, NAN, NULL, NAN, "== 0", g.syncs == 0);
        row("GPU path: event creations, 10^4 ranges", g.creates, "", NAN, NAN, NULL, NAN, "== 0", g.creates == 0);
        row("range, CPU only (CUDA build, GPU timing off)", g.cpu, "ns", g.cpu_lo, g.cpu_hi, NULL, NAN, NULL, 0);
        row("range, GPU-timed on the simulated runtime", g.gpu, "ns", g.gpu_lo, g.gpu_hi, "CPU only", g.gpu / g.cpu, NULL, 0);
        if ((g.kc & 3) == 3) {
            row("range, GPU-timed, kernel capture on (push+pop)", g.kern, "ns", g.kern_lo, g.kern_hi, "GPU-timed", g.kern / g.gpu, NULL, 0);
            row("kernel capture: collector CPU per launch", g.coll, "ns", g.coll_lo, g.coll_hi, NULL, NAN, NULL, 0);
            row("kernel capture: GPU records per launch (+own queries)", g.launches > 0 ? g.gpu_records / g.launches : NAN, "", NAN, NAN, NULL, NAN, NULL, 0);
            row("kernel capture: activity buffers in use", g.buf_mib, "MiB", NAN, NAN, NULL, NAN, NULL, 0);
            row("kernel capture: correlation and pending tables", g.tables_mib, "MiB", NAN, NAN, NULL, NAN, NULL, 0);
        }
        if (g.kc & 4) {
            row("range, GPU time from its kernels (GPUPROF_GPU=kernels)", g.kspan, "ns", g.kspan_lo, g.kspan_hi, "GPU-timed", g.kspan / g.gpu, NULL, 0);
            row("range, GPUPROF_GPU=kernels vs capture + events", g.kspan, "ns", NAN, NAN, "capture on", g.kspan / g.kern, NULL, 0);
            row("kernel capture: range call slots (spans)", g.slots_mib, "MiB", NAN, NAN, NULL, NAN, NULL, 0);
        }
    } else printf("GPU path: bench_gpu_sim not found beside this program (built when the CUDA toolkit is installed)\n");
    if (json) {
        fprintf(json, "\n]}\n");
        fclose(json);
        printf("(the same figures: %s)\n", json_path);
    }
    return 0;
}
