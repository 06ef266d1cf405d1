/* gpuprof.h -- where the time and memory go, on the CPU and the GPU, from one header.

   Wrap the phases of your program in ranges, run it, and read a statistics
   table at exit, a Chrome trace that Perfetto opens, and a JSON summary for
   scripts. Built with -DGPUPROF_DISABLE every macro compiles to nothing.

   Do this in exactly one C or C++ file, before any other #include:

       #define GPUPROF_IMPLEMENTATION
       #include "gpuprof.h"

   and include "gpuprof.h" alone everywhere else; link with -pthread -lm (or
   CMake's gpuprof::gpuprof). Then:

       for (int step = 0; step < steps; step++) {
           { PROF_RANGE("data");      load_batch(&batch); }
           { PROF_RANGE("forward");   loss = forward(&model, &batch); }
           { PROF_RANGE("backward");  backward(&model, &batch); }
           { PROF_RANGE("optimizer"); sgd_update(&model, lr); }
           PROF_MEM("after step");               // device, pool, tagged bytes, host RSS
           PROF_COUNTER("loss", loss);
           PROF_STEP();
       }
       // at exit: the table on stderr; GPUPROF_TRACE=run.json ./train writes a trace

   COMPILE-TIME SWITCHES (define before including)
       GPUPROF_IMPLEMENTATION   compile the implementation here (one TU per program)
       GPUPROF_DISABLE          every macro becomes a no-op that does not evaluate its
                                arguments and emits no code; lifecycle/output functions
                                become inline no-ops. The statistics accumulator works.
       GPUPROF_NO_SHORT_NAMES   do not define the PROF_* aliases
       GPUPROF_STB_SPRINTF      use stb_sprintf (Debian libstb-dev) for formatting; it
                                is picked up automatically when <stb/stb_sprintf.h>
                                exists. GPUPROF_NO_STB_SPRINTF turns that off.
       GPUPROF_MALLOC(n) / GPUPROF_FREE(p) / GPUPROF_ASSERT(c)   overrides
       GPUPROF_CLOCK_FN()       an expression giving uint64_t nanoseconds, used
                                instead of the TSC / CLOCK_MONOTONIC (tests use a
                                virtual clock to know every duration exactly)
       GPUPROF_MAX_DEPTH (128) / GPUPROF_NAME_MAX (256)   nesting depth per thread,
                                bytes kept of a name
       GPUPROF_MEM_CATEGORIES (32)   memory categories kept (then "(other categories)")
       GPUPROF_CUDA             time every range on the GPU too, with CUDA events (on
                                by itself when nvcc compiles the implementation file;
                                with gcc/clang add -I<cuda>/include -lcudart).
                                GPUPROF_NO_CUDA turns it off.
       GPUPROF_NVTX             push every range to NVTX as well (on with GPUPROF_CUDA;
                                GPUPROF_NO_NVTX turns it off), so Nsight shows them
       GPUPROF_MPI              compare the ranks inside MPI_Finalize: rank 0 prints the
                                cross-rank report (the straggler) after its table, with
                                the ranks' clock offsets measured by ping-pong; the file
                                defining GPUPROF_IMPLEMENTATION then includes <mpi.h>
                                (docs/guide.md "Several processes")
       GPUPROF_RANKS_REPORT     compile the cross-rank analysis without MPI (the
                                gpuprof-ranks tool does)
       GPUPROF_NO_SAMPLES       leave CPU samples out of the implementation: nothing
                                of the sampler, the ELF reader or their report is in
                                the object; GPUPROF_SAMPLE then prints one line
       GPUPROF_NO_METRICS       leave live metrics (Prometheus) out the same way;
                                GPUPROF_METRICS then prints one line
       GPUPROF_NO_DEVICE        leave the device over the run (NVML) out the same
                                way; GPUPROF_DEVICE_EVERY_MS then prints one line

   MACROS (each also as PROF_X)
       GPUPROF_RANGE(name)             range to the end of the block; name is a literal
       GPUPROF_RANGE_DYN(name)         same, name is a run-time string (copied)
       GPUPROF_RANGE_WORK(name, flops, bytes)   same, with work done per call
       GPUPROF_RANGE_STREAM(name, stream)       same, GPU-timed on that cudaStream_t
                                       (0 = the default stream as this file means it)
       GPUPROF_FUNC()                  range named after the enclosing function
       GPUPROF_BEGIN(name) / GPUPROF_END()      explicit pair (any C compiler);
                                       also GPUPROF_BEGIN_STREAM(name, stream)
       GPUPROF_STEP()                  end of one iteration (warm-up, schedule, step time)
       GPUPROF_COUNTER(name, value)    a numeric sample (loss, tokens/s)
       GPUPROF_MARK(name)              an instant event
       GPUPROF_MEM(label)              memory snapshot of a phase: device used/total,
                                       the default pool (cudaMallocAsync), tracked
                                       bytes per category, host RSS and peak RSS

   FUNCTIONS (return 0 on success, non-zero on error; never abort)
       gpuprof_init(&cfg)              optional; the first range initialises with defaults
       gpuprof_shutdown()              write configured outputs, free; also run at exit
       gpuprof_report(FILE *)          the text tables
       gpuprof_write_trace(path)       a trace of everything streamed so far, or
                                       without GPUPROF_TRACE of the flight recorder's
                                       latest events; any time, again and again; a
                                       .pftrace path: Perfetto's format, else JSON
       gpuprof_write_summary(path)     JSON summary, schema in docs/summary.md
       gpuprof_reset()                 clear statistics
       gpuprof_set_enabled(on)         pause / resume recording
       gpuprof_flush()                 take finished GPU times (never waits), hand this
                                       thread's trace buffer to the writer
       gpuprof_set_stream(stream)      the CUDA stream this thread's ranges are timed on
       gpuprof_mem_alloc(ptr, bytes, category) / gpuprof_mem_free(ptr)
                                       track any allocation, host or device, by category
       gpuprof_mem_snapshot(label)     GPUPROF_MEM with a run-time label
       gpuprof_mem_reset_peaks()       peaks (tracked, the pool's high-water marks) restart
       gpuprof_cuda_malloc(&p, bytes, category) / gpuprof_cuda_free(p), and the
       _malloc_async / _free_async pair: cudaMalloc & co that also track; declared
                                       where cuda_runtime_api.h was included first
       gpuprof_stats_*                 the statistics accumulator, usable on its own

   ENVIRONMENT (overrides the config)
       GPUPROF_TRACE=path   GPUPROF_REPORT=stderr|stdout|off|path   GPUPROF_SUMMARY=path
                            (a trace named *.pftrace or *.perfetto-trace is Perfetto's
                            protobuf format, ~4x smaller; any other name Chrome JSON)
       GPUPROF_TRACE_RING_MB=N  without GPUPROF_TRACE: memory for the latest events
                            (default 32; 0 = off, and then ranges record no trace events)
       Long runs (docs/guide.md "Long runs"):
       GPUPROF_SUMMARY_EVERY=S  with a summary path (or live metrics), gpuprof's thread
                            rewrites it every S seconds (default 60; 0 = at exit only),
                            "complete": false
       GPUPROF_CAPTURE_SLOW=K   a step over K x the running median step of its kind (the
                            ranges it ran) is written, with the step before, to
                            run.slow.N.json (beside the trace) or
                            gpuprof.<pid>.slow.N.json   GPUPROF_CAPTURE_MAX=N (default 5)
       GPUPROF_TRACE_MAX_MB=N   the streamed trace goes on in run.part2.json, ... every N MiB
       GPUPROF_TRACE_KEEP=K     only the newest K parts are kept
       GPUPROF_SAMPLE=1|HZ  CPU samples of every thread on its own CPU time (one that
                            records no range, an OpenMP worker, counts in the stepping
                            thread's open range; 1: 1000 Hz asked; the kernel's tick
                            may give 250): the
                            functions in each range, in the report ("CPU samples per
                            range", the verdict) and the summary; callers need frame
                            pointers (-fno-omit-frame-pointer). A signal (SIGPROF) may
                            make a blocking call return EINTR (docs/guide.md "CPU samples")
       GPUPROF_SAMPLE_FOLDED=path  the samples' folded stacks (flamegraph.pl, speedscope)
       GPUPROF_SAMPLE_SIGNAL=N|NAME|SIGRTMIN+K  the sampler's signal, when the program uses
                            SIGPROF; SIGURG (ignored by default) where a library may reset
                            it to its default. A signal the program takes over mid-run
                            stops the sampling (one line)
       The device over the run (docs/guide.md "The device over the run (NVML)"):
       GPUPROF_DEVICE_EVERY_MS=N  a thread of gpuprof's reads the GPU's utilization, SM and
                            memory clocks, power, temperature, throttle reasons, memory
                            and (Hopper on) GPM's SM, tensor and DRAM activity from NVML
                            every N ms (default 100 where libnvidia-ml.so.1 loads; 0 =
                            off): counter tracks, "Device over the run" in the report,
                            device_over_time in the summary, the drift's cause
       GPUPROF_NVML_PATH=path  the NVML library to load   GPUPROF_NVML_DEVICE=i  NVML's GPU i
                            (default: the CUDA device by PCI bus id, else the local rank)
       GPUPROF_DEVICE_GPM=1  say so when the GPU has no GPM metrics
       Live metrics (docs/guide.md "Live metrics (Prometheus)"):
       GPUPROF_METRICS=path  Prometheus's text format for node_exporter's textfile
                            collector (path.prom, %r: a file per rank), rewritten
                            atomically at every checkpoint (GPUPROF_SUMMARY_EVERY, 60 s)
                            and at exit: steps, step time, ranges, phase shares,
                            counters, memory, the device's gauges; labels rank, job
       GPUPROF_JOB=name     the job label (else SLURM_JOB_ID, TORCHELASTIC_RUN_ID, the
                            process name)
       GPUPROF_WARMUP=N     GPUPROF_SCHEDULE=wait=W,warmup=U,active=A,repeat=R
       GPUPROF_OFF=1        GPUPROF_ROWS=N   GPUPROF_VIEW=flat|tree|both
                            (on/off settings take 1/0, yes/no, true/false, on/off)
       GPUPROF_CLOCK=tsc|monotonic   GPUPROF_GPU=0 (CPU time only in a CUDA build)
       GPUPROF_NVTX=0       GPUPROF_NVTX_DOMAIN=name
       GPUPROF_KERNELS=1    kernel capture (CUDA builds): every kernel, copy, memset and
                            synchronization from CUPTI, attributed to the range that
                            launched it: kernel, transfer and sync tables, kernels on the
                            trace's stream tracks; libcupti is loaded with dlopen, no
                            build-time dependency (docs/guide.md "Kernel capture")
       GPUPROF_GPU=kernels  a range's GPU time from the GPU work launched inside it (its
                            kernels' first start to last end, nested ranges and every
                            stream included) instead of two CUDA events per range; turns
                            kernel capture on; shown beside the events' whenever capture
                            is on (docs/guide.md "A range's GPU time from its kernels")
       GPUPROF_KERNEL_BUFFER_MB=N  memory for CUPTI's activity buffers (default 64)
       GPUPROF_CUPTI_PATH=path     the libcupti to load (else one already loaded,
                            libcupti.so.13/.12, then $CUDA_HOME/extras/CUPTI/lib64)
       GPUPROF_COMM_RANGES=a,b  ranges that are communication (besides allreduce, nccl*,
                            MPI_*...): comm-bound in the verdict, waiting in the cross-rank report
       GPUPROF_MERGE_TRACES=0  GPUPROF_MPI: rank 0 does not merge the ranks' traces
       GPUPROF_MPI_TIMEOUT=S   GPUPROF_MPI: how long rank 0 waits at MPI_Finalize for the
                            other ranks (10 s; a rank that never called gpuprof never comes)
       GPUPROF_MEM_RANGES=1 per range: the change in tracked and device-used bytes
       GPUPROF_COLLECTOR=1  a collector thread adds the ranges' statistics, off the
                            recording threads (default: each thread adds its own in
                            batches; docs/guide.md "Threads" says when this pays)
       GPUPROF_HOST_RANGES=data,io   ranges doing host work (CPU-bound in the verdict)
       GPUPROF_PRECISION=fp32|tf32|fp16|bf16|fp8|fp64   which peak FLOP/s the roofline uses
       GPUPROF_PEAK_TFLOPS=X  GPUPROF_PEAK_GBPS=X        the roofline's peaks, instead of the device's
       In paths, %p becomes the process id, %r the rank, %l the local rank, %h the
       host. Outputs naming one file are refused; a later session does not
       overwrite an earlier one's files (its own get .2, .3... before the extension).

   SEVERAL PROCESSES (SPEC 10; docs/guide.md "Several processes")
       The rank, local rank and world size come from the launcher closest to the
       process: RANK (with WORLD_SIZE: torchrun), OMPI_COMM_WORLD_RANK, PMI_RANK,
       PMIX_RANK, MV2_COMM_WORLD_RANK, then SLURM_PROCID. GPUPROF_RANK=r or
       gpuprof_config.rank/world_size override. With more than one rank, an
       output path without %r gets ".%r" before its extension, and (report left
       to its default) only rank 0 prints its table. The summary's "run" and the
       trace's process metadata record rank, world size, host and a wall-clock
       anchor (t0_realtime_ns). tools/gpuprof-ranks run.*.json compares the
       ranks and names the straggler; built with GPUPROF_MPI, rank 0 does it
       inside MPI_Finalize (clock offsets by ping-pong, run.ranks.json, the
       traces merged into t.ranks.json).

   ANALYSIS (the end of the report; docs/guide.md "Verdict", "Roofline")
       per phase (outermost range) and for the step: CPU-, launch-, sync-, GPU-,
       memory-, compute-, transfer- or comm-bound (collectives: allreduce, nccl*,
       MPI_*, GPUPROF_COMM_RANGES), latency-bound (declared work under 20% of
       its roof), or under-filled (kernel capture: launches that give work to
       fewer than half the SMs; docs/guide.md "The kernel and why"), the
       bottleneck and what to try; GPUPROF_RANGE_WORK
       ranges get achieved FLOP/s, bytes/s and their place on the device's roofline.
       tools/gpuprof-compare BASE.json NEW.json compares two summaries.

   Requires a POSIX system (threads, clock_gettime) for the implementation; the
   header defines no feature macro (_GNU_SOURCE...) for the file including it.
   Full documentation: docs/guide.md.

   LICENSE: MIT, see the end of this file.
*/
#ifndef GPUPROF_H
#define GPUPROF_H

/* gpuprof.h defines no feature macro (_GNU_SOURCE, _POSIX_C_SOURCE): the
   including file's own code sees the C library it asked for. Where a strict
   mode (-std=c99) hides a POSIX call the implementation needs, it reaches
   that call under a name of its own (see "Platform clock"). */

/* ======================================================================
   Configuration defaults
   ====================================================================== */

#define GPUPROF_VERSION "0.1.0"

#ifndef GPUPROF_MAX_DEPTH
#define GPUPROF_MAX_DEPTH 128      /* nesting depth per thread; deeper ranges are counted, not timed */
#endif
#ifndef GPUPROF_NAME_MAX
#define GPUPROF_NAME_MAX 256       /* bytes kept of a range name; longer names are truncated */
#endif
#ifndef GPUPROF_MEM_CATEGORIES
#define GPUPROF_MEM_CATEGORIES 32  /* memory categories kept; later ones count as "(other categories)" */
#endif
#define GPUPROF__MEM_LABELS 64     /* GPUPROF_MEM labels kept; later ones share the last row */
#define GPUPROF__PEAK_FROM 128     /* bytes of the text saying where a roofline peak came from */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================================================================
   Public types and declarations
   ====================================================================== */

/* Statistics accumulator: count, sum, mean, std, min, max and quantiles of a
   stream of doubles in a fixed-size struct. Quantiles come from a log-linear
   histogram (64 buckets per power of two, a window of 32 powers of two) and
   are within 1 % of the exact sample quantile (numpy's linear interpolation)
   for same-signed samples that span up to a factor 2^32; values further below
   the largest ones are folded into the lowest bucket. Fields are private. */
#define GPUPROF_STATS_BUCKETS 2048
typedef struct gpuprof_stats {
    uint64_t count;       /* accepted samples */
    uint64_t rejected;    /* NaN and infinities, not added */
    double   sum;
    double   min, max;
    double   shift;       /* first sample: the sums below are relative to it */
    double   sum_d;       /* sum of (x - shift) */
    double   sum_d2;      /* sum of (x - shift)^2 */
    int32_t  lo_key;      /* histogram key of bucket[0] */
    uint32_t halvings;    /* times the counts were halved to avoid overflow */
    uint32_t bucket[GPUPROF_STATS_BUCKETS];
} gpuprof_stats;

void     gpuprof_stats_init(gpuprof_stats *s);
void     gpuprof_stats_add(gpuprof_stats *s, double x);
void     gpuprof_stats_merge(gpuprof_stats *dst, const gpuprof_stats *src);
uint64_t gpuprof_stats_count(const gpuprof_stats *s);
uint64_t gpuprof_stats_rejected(const gpuprof_stats *s);
double   gpuprof_stats_sum(const gpuprof_stats *s);
double   gpuprof_stats_mean(const gpuprof_stats *s);     /* NaN when empty */
double   gpuprof_stats_stddev(const gpuprof_stats *s);   /* sample std (n-1); 0 for one sample */
double   gpuprof_stats_min(const gpuprof_stats *s);
double   gpuprof_stats_max(const gpuprof_stats *s);
double   gpuprof_stats_quantile(const gpuprof_stats *s, double q);  /* q in [0,1]; NaN when empty */

/* Configuration: zero-initialise and set what you change. */
enum { GPUPROF_VIEW_BOTH = 0, GPUPROF_VIEW_FLAT = 1, GPUPROF_VIEW_TREE = 2 };
typedef struct gpuprof_config {
    const char *trace_path;     /* stream a trace here (GPUPROF_TRACE): Perfetto's format for
                                   *.pftrace / *.perfetto-trace, Chrome JSON for other names; NULL: no trace */
    const char *report;         /* "stderr" (NULL), "stdout", "off" or a path (GPUPROF_REPORT) */
    const char *summary_path;   /* JSON summary written at shutdown (GPUPROF_SUMMARY) */
    const char *schedule;       /* "wait=W,warmup=U,active=A,repeat=R[,skip_first=S]" */
    const char *process_name;   /* shown in the report and the trace; NULL: the program name */
    int warmup;                 /* steps (or, without GPUPROF_STEP, calls per range) to exclude */
    int start_disabled;         /* begin paused; gpuprof_set_enabled(1) resumes */
    int report_rows;            /* rows per table: 0 = 30, -1 = all */
    int report_view;            /* GPUPROF_VIEW_BOTH / _FLAT / _TREE */
    int max_names;              /* distinct range/counter names kept: 0 = 4096 */
    int max_nodes;              /* distinct call paths per thread: 0 = 8192 */
    int trace_buffer_mb;        /* memory for trace events waiting for the writer, taken only as it falls
                                   behind: 0 = 64 MiB (2.8M events) */
    int no_gpu;                 /* CUDA builds: do not time ranges on the GPU (GPUPROF_GPU=0) */
    int no_nvtx;                /* NVTX builds: emit no NVTX ranges (GPUPROF_NVTX=0) */
    const char *nvtx_domain;    /* NVTX domain of the ranges: NULL = "gpuprof" (GPUPROF_NVTX_DOMAIN) */
    int mem_ranges;             /* per range: change in tracked and device-used bytes (GPUPROF_MEM_RANGES=1) */
    const char *host_ranges;    /* names of ranges doing host work (data loading, ...), comma-separated:
                                   the verdict calls them CPU-bound (GPUPROF_HOST_RANGES) */
    double peak_tflops;         /* roofline: peak TFLOP/s; 0 = the device's from gpuprof's table (GPUPROF_PEAK_TFLOPS) */
    double peak_gbps;           /* roofline: peak memory bandwidth in GB/s; 0 = the device's (GPUPROF_PEAK_GBPS) */
    const char *precision;      /* which peak FLOP/s: "fp32" (NULL), "tf32", "fp16", "bf16", "fp8", "fp64" (GPUPROF_PRECISION) */
    int trace_ring_mb;          /* without trace_path: the flight recorder keeps the latest events in this much
                                   memory for gpuprof_write_trace: 0 = 32 MiB, -1 = off (GPUPROF_TRACE_RING_MB, 0 = off) */
    int kernels;                /* CUDA builds: capture every kernel, copy, memset and synchronization with
                                   CUPTI, attributed to the ranges (GPUPROF_KERNELS=1) */
    int kernel_buffer_mb;       /* kernel capture: memory for CUPTI's activity buffers: 0 = 64 MiB
                                   (GPUPROF_KERNEL_BUFFER_MB) */
    int gpu_from_kernels;       /* CUDA builds: a range's GPU time is the span of the GPU work launched inside
                                   it (kernel capture, turned on by this), with no CUDA event (GPUPROF_GPU=kernels) */
    int rank, world_size;       /* this process's rank (0-based) among world_size; world_size 0: both from the
                                   launcher's environment (GPUPROF_RANK overrides the rank) */
    int collector;              /* a thread of gpuprof's adds the ranges' records to their statistics, off the
                                   recording threads; 0: each thread adds its own, 4096 at a time (GPUPROF_COLLECTOR=1) */
    double summary_every;       /* with a summary path or metrics, gpuprof's thread rewrites the summary every this many
                                   seconds, a checkpoint a killed run leaves: 0 = 60, < 0 = at exit only
                                   (GPUPROF_SUMMARY_EVERY, where 0 = at exit only) */
    double capture_slow;        /* a step longer than this many times the running median step of its kind (the
                                   ranges it ran; after 10 steps of that kind) has the flight recorder's window of
                                   it and the step before written to a file of its own, by gpuprof's thread:
                                   0 = off (GPUPROF_CAPTURE_SLOW) */
    int capture_max;            /* at most this many such files: 0 = 5, at most 64 (GPUPROF_CAPTURE_MAX) */
    int trace_max_mb;           /* the streamed trace is closed (a whole file) at this many MiB and goes on in
                                   the next part, run.part2.json, ...: 0 = one file (GPUPROF_TRACE_MAX_MB) */
    int trace_keep;             /* only the newest this many parts are kept: 0 = all (GPUPROF_TRACE_KEEP) */
    double sample_hz;           /* CPU samples per second of each recording thread's CPU time, named per range in
                                   the report and the summary: 0 = off, 1 = the default (1000 asked; the kernel's
                                   tick may give less) (GPUPROF_SAMPLE=1|HZ) */
    const char *sample_folded;  /* with sampling: the samples' folded stacks for flame graphs, "range;outer;...;leaf N"
                                   a line (GPUPROF_SAMPLE_FOLDED) */
    double device_every_ms;     /* the device over the run: gpuprof's thread reads the GPU's utilization, clocks,
                                   power, temperature and throttle reasons from NVML (the driver's library, loaded
                                   at run time) every this many ms: 0 = 100 where NVML loads, < 0 = off
                                   (GPUPROF_DEVICE_EVERY_MS, where 0 = off) */
    const char *metrics;        /* live metrics: Prometheus's text format written here (atomically) at every
                                   checkpoint and at exit, for node_exporter's textfile collector; NULL: none
                                   (GPUPROF_METRICS; checkpoints every summary_every seconds) */
} gpuprof_config;

/* A call site: one static record per GPUPROF_RANGE, so the hot path never
   hashes or copies the name. Internal; filled by the macros. */
typedef struct gpuprof_site {
    const char *name;
    const char *file;
    int line;
    uint64_t id;                /* session << 32 | name id; 0 until first use */
    int stream0;                /* what stream 0 means where the site is: 1 legacy, 2 per-thread */
} gpuprof_site;

#ifndef GPUPROF_DISABLE
int  gpuprof_init(const gpuprof_config *cfg);
void gpuprof_shutdown(void);
int  gpuprof_report(FILE *out);
int  gpuprof_write_trace(const char *path);
int  gpuprof_write_summary(const char *path);
void gpuprof_flush(void);
void gpuprof_reset(void);
void gpuprof_set_stream(void *stream);
void gpuprof_set_enabled(int on);

/* Memory (SPEC 7). Tag any allocation, host or device, with a category;
   GPUPROF_MEM(label) or gpuprof_mem_snapshot(label) records a phase. */
void gpuprof_mem_alloc(void *ptr, size_t bytes, const char *category);   /* NULL ptr: ignored */
void gpuprof_mem_free(void *ptr);                                        /* NULL: ignored */
void gpuprof_mem_snapshot(const char *label);
void gpuprof_mem_reset_peaks(void);

/* Internal entry points used by the macros. */
extern int gpuprof__paused;     /* recording paused (gpuprof_set_enabled(0), GPUPROF_OFF, the schedule): ranges make no call */
int  gpuprof__range_begin(gpuprof_site *site);
int  gpuprof__range_begin_explicit(gpuprof_site *site);
int  gpuprof__range_begin_work(gpuprof_site *site, double flops, double bytes);
int  gpuprof__range_begin_dyn(const char *name, int stream0);
int  gpuprof__range_begin_stream(gpuprof_site *site, void *stream, int flags);
void gpuprof__range_end(int token);
void gpuprof__step(void);
void gpuprof__counter(gpuprof_site *site, double value);
void gpuprof__mark(gpuprof_site *site);
void gpuprof__mem_snap(gpuprof_site *site);
#else
static inline int  gpuprof_init(const gpuprof_config *cfg) { (void)cfg; return 0; }
static inline void gpuprof_shutdown(void) {}
static inline int  gpuprof_report(FILE *out) { (void)out; return 0; }
static inline int  gpuprof_write_trace(const char *path) { (void)path; return 0; }
static inline int  gpuprof_write_summary(const char *path) { (void)path; return 0; }
static inline void gpuprof_flush(void) {}
static inline void gpuprof_reset(void) {}
static inline void gpuprof_set_stream(void *stream) { (void)stream; }
static inline void gpuprof_set_enabled(int on) { (void)on; }
static inline void gpuprof_mem_alloc(void *ptr, size_t bytes, const char *category) { (void)ptr; (void)bytes; (void)category; }
static inline void gpuprof_mem_free(void *ptr) { (void)ptr; }
static inline void gpuprof_mem_snapshot(const char *label) { (void)label; }
static inline void gpuprof_mem_reset_peaks(void) {}
#endif

#ifdef __cplusplus
}
#endif

/* cudaMalloc / cudaFree / cudaMallocAsync / cudaFreeAsync that also track
   the allocation under `category`. Declared where the CUDA runtime's header
   came first (nvcc includes it in every .cu file); with GPUPROF_DISABLE they
   only allocate and free. Freeing untracks only when the free succeeds. */
#if defined(CUDART_VERSION)
static inline cudaError_t gpuprof_cuda_malloc(void **ptr, size_t bytes, const char *category) {
    cudaError_t e = cudaMalloc(ptr, bytes);
    if (e == cudaSuccess) gpuprof_mem_alloc(*ptr, bytes, category);
    return e;
}
static inline cudaError_t gpuprof_cuda_free(void *ptr) {
    cudaError_t e = cudaFree(ptr);
    if (e == cudaSuccess) gpuprof_mem_free(ptr);
    return e;
}
static inline cudaError_t gpuprof_cuda_malloc_async(void **ptr, size_t bytes, cudaStream_t stream, const char *category) {
    cudaError_t e = cudaMallocAsync(ptr, bytes, stream);
    if (e == cudaSuccess) gpuprof_mem_alloc(*ptr, bytes, category);
    return e;
}
static inline cudaError_t gpuprof_cuda_free_async(void *ptr, cudaStream_t stream) {
    cudaError_t e = cudaFreeAsync(ptr, stream);
    if (e == cudaSuccess) gpuprof_mem_free(ptr);
    return e;
}
#ifdef __cplusplus
/* Typed pointers, as cudaMalloc takes them in C++. */
template <class T> static inline cudaError_t gpuprof_cuda_malloc(T **ptr, size_t bytes, const char *category) {
    return gpuprof_cuda_malloc((void **)ptr, bytes, category);
}
template <class T> static inline cudaError_t gpuprof_cuda_malloc_async(T **ptr, size_t bytes, cudaStream_t stream, const char *category) {
    return gpuprof_cuda_malloc_async((void **)ptr, bytes, stream, category);
}
#endif
#endif

/* ======================================================================
   Macros: the enabled versions, then the GPUPROF_DISABLE ones
   ====================================================================== */

#define GPUPROF__CAT2(a, b) a##b
#define GPUPROF__CAT(a, b) GPUPROF__CAT2(a, b)
#ifdef __COUNTER__
#define GPUPROF__UNIQUE __COUNTER__
#else
#define GPUPROF__UNIQUE __LINE__
#endif
/* Stream 0 is the legacy default stream, or the per-thread one in a file
   compiled with --default-stream per-thread: each call site records which,
   so a range lands on the stream its own file means (SPEC 5). */
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#define GPUPROF__STREAM0 2
#else
#define GPUPROF__STREAM0 1
#endif
#define GPUPROF__SITE(var, name) static gpuprof_site var = { name, __FILE__, __LINE__, 0, GPUPROF__STREAM0 }

#ifndef GPUPROF_DISABLE

/* While recording is paused a range costs one load and a branch where it is
   written, not a call. */
#if defined(__GNUC__) || defined(__clang__)
#define GPUPROF__PAUSED() __builtin_expect(__atomic_load_n(&gpuprof__paused, __ATOMIC_RELAXED), 0)
#else
#define GPUPROF__PAUSED() gpuprof__paused
#endif

/* A scoped range ends where its block ends: a C++ destructor, or the cleanup
   attribute of GNU C (gcc, clang, nvcc host code). Plain C compilers without
   it (MSVC) use GPUPROF_BEGIN / GPUPROF_END. */
#if defined(__cplusplus)
struct gpuprof__scope {
    int token;
    explicit gpuprof__scope(int t) : token(t) {}
    ~gpuprof__scope() { if (token) gpuprof__range_end(token); }
private:
    gpuprof__scope(const gpuprof__scope &);
    gpuprof__scope &operator=(const gpuprof__scope &);
};
#define GPUPROF__SCOPE(var, begin_call) gpuprof__scope var(begin_call)
#elif defined(__GNUC__) || defined(__clang__)
static inline void gpuprof__scope_exit(int *token) { if (*token) gpuprof__range_end(*token); }
#define GPUPROF__SCOPE(var, begin_call) \
    int var __attribute__((cleanup(gpuprof__scope_exit), unused)) = (begin_call)
#endif

#ifdef GPUPROF__SCOPE
#define GPUPROF__RANGE_(name, n) \
    GPUPROF__SITE(GPUPROF__CAT(gpuprof__site_, n), name); \
    GPUPROF__SCOPE(GPUPROF__CAT(gpuprof__scope_, n), GPUPROF__PAUSED() ? 0 : gpuprof__range_begin(&GPUPROF__CAT(gpuprof__site_, n)))
#define GPUPROF__RANGE_WORK_(name, flops, bytes, n) \
    GPUPROF__SITE(GPUPROF__CAT(gpuprof__site_, n), name); \
    GPUPROF__SCOPE(GPUPROF__CAT(gpuprof__scope_, n), \
        gpuprof__range_begin_work(&GPUPROF__CAT(gpuprof__site_, n), (double)(flops), (double)(bytes)))
#define GPUPROF__RANGE_DYN_(name, n) \
    GPUPROF__SCOPE(GPUPROF__CAT(gpuprof__scope_, n), gpuprof__range_begin_dyn(name, GPUPROF__STREAM0))
#define GPUPROF__RANGE_STREAM_(name, stream, n) \
    GPUPROF__SITE(GPUPROF__CAT(gpuprof__site_, n), name); \
    GPUPROF__SCOPE(GPUPROF__CAT(gpuprof__scope_, n), \
        gpuprof__range_begin_stream(&GPUPROF__CAT(gpuprof__site_, n), (void *)(stream), 1))
#define GPUPROF_RANGE(name)                   GPUPROF__RANGE_(name, GPUPROF__UNIQUE)
#define GPUPROF_RANGE_WORK(name, flops, bytes) GPUPROF__RANGE_WORK_(name, flops, bytes, GPUPROF__UNIQUE)
#define GPUPROF_RANGE_DYN(name)               GPUPROF__RANGE_DYN_(name, GPUPROF__UNIQUE)
#define GPUPROF_RANGE_STREAM(name, stream)    GPUPROF__RANGE_STREAM_(name, stream, GPUPROF__UNIQUE)
#define GPUPROF_FUNC()                        GPUPROF__RANGE_(__func__, GPUPROF__UNIQUE)
#endif

#define GPUPROF__BEGIN_(name, n) do { GPUPROF__SITE(GPUPROF__CAT(gpuprof__site_, n), name); \
    if (!GPUPROF__PAUSED()) (void)gpuprof__range_begin_explicit(&GPUPROF__CAT(gpuprof__site_, n)); } while (0)
#define GPUPROF__COUNTER_(name, value, n) do { GPUPROF__SITE(GPUPROF__CAT(gpuprof__site_, n), name); \
    gpuprof__counter(&GPUPROF__CAT(gpuprof__site_, n), (double)(value)); } while (0)
#define GPUPROF__MEM_(label, n) do { GPUPROF__SITE(GPUPROF__CAT(gpuprof__site_, n), label); \
    gpuprof__mem_snap(&GPUPROF__CAT(gpuprof__site_, n)); } while (0)
#define GPUPROF__MARK_(name, n) do { GPUPROF__SITE(GPUPROF__CAT(gpuprof__site_, n), name); \
    gpuprof__mark(&GPUPROF__CAT(gpuprof__site_, n)); } while (0)
#define GPUPROF__BEGIN_STREAM_(name, stream, n) do { GPUPROF__SITE(GPUPROF__CAT(gpuprof__site_, n), name); \
    (void)gpuprof__range_begin_stream(&GPUPROF__CAT(gpuprof__site_, n), (void *)(stream), 0); } while (0)
#define GPUPROF_BEGIN(name)          GPUPROF__BEGIN_(name, GPUPROF__UNIQUE)
#define GPUPROF_BEGIN_STREAM(name, stream) GPUPROF__BEGIN_STREAM_(name, stream, GPUPROF__UNIQUE)
#define GPUPROF_END()                gpuprof__range_end(0)
#define GPUPROF_STEP()               gpuprof__step()
#define GPUPROF_COUNTER(name, value) GPUPROF__COUNTER_(name, value, GPUPROF__UNIQUE)
#define GPUPROF_MARK(name)           GPUPROF__MARK_(name, GPUPROF__UNIQUE)
#define GPUPROF_MEM(label)           GPUPROF__MEM_(label, GPUPROF__UNIQUE)

#else /* GPUPROF_DISABLE: nothing is evaluated, nothing is emitted */

/* Arguments are never evaluated and emit no code, yet stay referenced, so
   a variable or function used only there does not turn into an "unused"
   warning: names inside sizeof, values behind a constant 0 ? : (which, unlike
   sizeof, also counts as a use of a function for clang). */
#define GPUPROF_RANGE(name)                    ((void)sizeof(name))
#define GPUPROF_RANGE_WORK(name, flops, bytes) ((void)sizeof(name), (void)(0 ? (double)(flops) : 0.0), (void)(0 ? (double)(bytes) : 0.0))
#define GPUPROF_RANGE_DYN(name)                ((void)sizeof(name))
#define GPUPROF_RANGE_STREAM(name, stream)     ((void)sizeof(name), (void)sizeof(stream))
#define GPUPROF_FUNC()                         ((void)0)
#define GPUPROF_BEGIN(name)                    ((void)sizeof(name))
#define GPUPROF_BEGIN_STREAM(name, stream)     ((void)sizeof(name), (void)sizeof(stream))
#define GPUPROF_END()                          ((void)0)
#define GPUPROF_STEP()                         ((void)0)
#define GPUPROF_COUNTER(name, value)           ((void)sizeof(name), (void)(0 ? (double)(value) : 0.0))
#define GPUPROF_MARK(name)                     ((void)sizeof(name))
#define GPUPROF_MEM(label)                     ((void)sizeof(label))

#endif /* GPUPROF_DISABLE */

#ifndef GPUPROF_NO_SHORT_NAMES
#define PROF_RANGE(name)                    GPUPROF_RANGE(name)
#define PROF_RANGE_WORK(name, flops, bytes) GPUPROF_RANGE_WORK(name, flops, bytes)
#define PROF_RANGE_DYN(name)                GPUPROF_RANGE_DYN(name)
#define PROF_FUNC()                         GPUPROF_FUNC()
#define PROF_RANGE_STREAM(name, stream)     GPUPROF_RANGE_STREAM(name, stream)
#define PROF_BEGIN(name)                    GPUPROF_BEGIN(name)
#define PROF_BEGIN_STREAM(name, stream)     GPUPROF_BEGIN_STREAM(name, stream)
#define PROF_END()                          GPUPROF_END()
#define PROF_STEP()                         GPUPROF_STEP()
#define PROF_COUNTER(name, value)           GPUPROF_COUNTER(name, value)
#define PROF_MARK(name)                     GPUPROF_MARK(name)
#define PROF_MEM(label)                     GPUPROF_MEM(label)
#endif

#endif /* GPUPROF_H */

/* ======================================================================
   Implementation, in sections; each uses only those above it, except a few
   calls down the file, each with its comment: a thread's first range starts
   the session ("Lifecycle"), and a step registers the MPI_Finalize hook and
   wakes gpuprof's thread for a capture.
     Number formatting                numbers in text and JSON, whatever the C locale
     Platform clock                   ticks (TSC or CLOCK_MONOTONIC), their rate, ns
     Statistics accumulator           count, sums, min/max, a histogram for quantiles
     Global state and warnings        shared types, the session's state, locks, messages, memory
     Settings                         GPUPROF_* variables; a step's phase (schedule)
     Loaded libraries                 a seam's entry points bound by name (NVML, CUPTI)
     NVTX                             gpuprof's NVTX domain, names, push and pop
     Name registry                    a small id per distinct name, its JSON string
     Per-thread state                 a thread's call tree of nodes
     Trace buffers                    recording: per-thread blocks of events
     The device: NVML and its reader  the NVML seam, gpuprof's thread sampling the GPU
     Launch figures                   occupancy, SM fill, waves; tensor cores by name
     Kernel capture: CUPTI            the CUPTI seam, the capture's state
     GPU backend                      CUDA events per range, harvested without a sync
     Kernel capture: the records      CUPTI's records into tables, ranges' GPU spans
     CPU samples: the sampler         timers, the signal handler: stacks per open range
     CPU samples: symbols             the ELF seam: .symtab, debug files, .dynsym
     Threads joining and leaving      a thread's state bound, handed on, freed
     Memory                           tracked allocations, snapshots, range deltas
     Ranges                           begin and end (the hot path), counters, marks
     Steps, warm-up and the schedule  GPUPROF_STEP and the step's figures
     Output helpers                   digits, growing buffers, times, path patterns
     Trace output, the layers         the encoder interface, bytes into a file
     Trace encoder, Chrome JSON       a block's events as JSON
     Trace encoder, Perfetto protobuf a block's events as Perfetto's TracePackets
     Trace sinks                      streamed file, its copy, the flight recorder's dump
     Report collection                every thread's nodes into flat and tree tables
     Text report, its cells           widths, names, times
     Analysis                         phases, their classes, the bottleneck
     CPU samples: per range           the samples named, for the report and the summary
     The device: its report           its report section, device_over_time, a drift's cause
     Text report, its parts           header, tables, memory, roofline, verdict
     Kernel capture in the report     kernels, transfers, synchronizations
     Text report, assembled           the report in order
     JSON summary                     docs/summary.md's schema
     Live metrics                     the summary's figures in Prometheus's text format
     Writing the outputs              files, gpuprof_report and write_*, flush, reset
     Checkpoints and captures         the summary rewritten as the run goes, slow steps' windows
     Roofline peaks                   the device's bandwidth and FLOP/s
     Cross-rank report                ranks side by side, the straggler, merged traces
     MPI                              the MPI seam, the report at MPI_Finalize
     Ranks                            which process of a job this is
     Lifecycle                        init, exit, fork, a session's start and shutdown
   ====================================================================== */
#ifdef GPUPROF_IMPLEMENTATION
#ifndef GPUPROF__IMPLEMENTED
#define GPUPROF__IMPLEMENTED

#include <errno.h>
#include <limits.h>
#include <math.h>
#define GPUPROF__NAN ((double)NAN)   /* NAN is a float: spelled as a double, -Wdouble-promotion stays quiet */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* NaN and the infinities, told by their bits: -ffinite-math-only (in -Ofast
   and -ffast-math, which a program's build applies to this file too) lets
   the compiler take x != x as false and x - x == 0 as true. NaN stands for
   a missing figure throughout; these tell it whatever the flags. */
static inline int gpuprof__finite(double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return (b & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
static inline int gpuprof__isnan(double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return (b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}

/* The CUDA backend: on when nvcc compiles this file or with GPUPROF_CUDA;
   NVTX comes with it unless GPUPROF_NO_NVTX. */
#if defined(__CUDACC__) && !defined(GPUPROF_CUDA)
#define GPUPROF_CUDA
#endif
#if defined(GPUPROF_NO_CUDA) || defined(GPUPROF_DISABLE)
#undef GPUPROF_CUDA
#endif
#if defined(GPUPROF_CUDA) && !defined(GPUPROF_NVTX)
#define GPUPROF_NVTX
#endif
#if defined(GPUPROF_NO_NVTX) || defined(GPUPROF_DISABLE)
#undef GPUPROF_NVTX
#endif
/* The toolkit's headers are not -Wpedantic clean (anonymous unions in C99,
   NVTX's dlsym cast): quiet that for them only. */
#if defined(GPUPROF_CUDA) || defined(GPUPROF_NVTX)
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wc11-extensions"
#endif
#ifdef GPUPROF_CUDA
#include <cuda_runtime_api.h>
#endif
#ifdef GPUPROF_NVTX
#include <nvtx3/nvToolsExt.h>
#endif
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

/* GPUPROF_MPI: the MPI the program uses (SPEC 10; section "MPI"). Its
   header is not -Wpedantic clean, nor, in C++, are Open MPI's old C++
   bindings under the strict warnings: quiet for it only. */
#if defined(GPUPROF_MPI)
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wcast-qual"
#if defined(__cplusplus) && !defined(__clang__) && __GNUC__ >= 8
#pragma GCC diagnostic ignored "-Wcast-function-type"
#endif
#endif
#include <mpi.h>
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

#ifndef GPUPROF_MALLOC
#define GPUPROF_MALLOC(n) malloc(n)
#define GPUPROF_FREE(p) free(p)
#define GPUPROF__CALLOC(n) calloc(1, n)   /* with the default allocator only */
#endif
#ifndef GPUPROF_ASSERT
#include <assert.h>
#define GPUPROF_ASSERT(c) assert(c)
#endif

/* Fields that one thread writes while another reads them for a report are
   accessed with relaxed atomics: on x86-64 and AArch64 these are the plain
   loads and stores the compiler would emit anyway, and they make the sharing
   well-defined (and quiet under ThreadSanitizer). */
#if defined(__GNUC__) || defined(__clang__)
#define GPUPROF__LD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define GPUPROF__ST(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define GPUPROF__LDA(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define GPUPROF__STR(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define GPUPROF__ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define GPUPROF__CAS(p, expect, v) __atomic_compare_exchange_n((p), (expect), (v), 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
#define GPUPROF__LIKELY(x) __builtin_expect(!!(x), 1)
#define GPUPROF__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GPUPROF__NOINLINE __attribute__((noinline))
#define GPUPROF__INLINE static inline __attribute__((always_inline))
static inline double gpuprof__ldd(const double *p) { double v; __atomic_load(p, &v, __ATOMIC_RELAXED); return v; }
static inline void gpuprof__std(double *p, double v) { __atomic_store(p, &v, __ATOMIC_RELAXED); }
static inline double gpuprof__ldda(const double *p) { double v; __atomic_load(p, &v, __ATOMIC_ACQUIRE); return v; }
#else
#define GPUPROF__LD(p) (*(p))
#define GPUPROF__ST(p, v) (*(p) = (v))
#define GPUPROF__LDA(p) (*(p))
#define GPUPROF__STR(p, v) (*(p) = (v))
#define GPUPROF__ADD(p, v) ((*(p) += (v)) - (v))
#define GPUPROF__CAS(p, expect, v) (*(p) == *(expect) ? (*(p) = (v), 1) : (*(expect) = *(p), 0))
#define GPUPROF__LIKELY(x) (x)
#define GPUPROF__UNLIKELY(x) (x)
#define GPUPROF__NOINLINE
#define GPUPROF__INLINE static inline
static inline double gpuprof__ldd(const double *p) { return *p; }
static inline void gpuprof__std(double *p, double v) { *p = v; }
static inline double gpuprof__ldda(const double *p) { return *p; }
#endif

#ifndef GPUPROF_DISABLE
/* ----------------------------------------------------------------------
   Number formatting, independent of the C locale
   ---------------------------------------------------------------------- */
#if !defined(GPUPROF_NO_STB_SPRINTF) && !defined(GPUPROF_STB_SPRINTF) && defined(__has_include)
#if __has_include(<stb/stb_sprintf.h>)
#define GPUPROF_STB_SPRINTF
#endif
#endif
#if defined(GPUPROF_STB_SPRINTF) && !defined(GPUPROF_NO_STB_SPRINTF)
#ifndef STB_SPRINTF_IMPLEMENTATION
#define STB_SPRINTF_IMPLEMENTATION
#endif
#define STB_SPRINTF_STATIC
#ifndef STB_SPRINTF_NOUNALIGNED
#define STB_SPRINTF_NOUNALIGNED   /* no 4-byte stores to unaligned addresses (UB; UBSan says so) */
#endif
/* Found on a plain -I path (not a system one), stb's own code would meet the
   user's -Wall -Wextra -Werror; its warnings are not theirs to fix. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wcast-qual"
#endif
#include <stb/stb_sprintf.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#define GPUPROF__VSNPRINTF stbsp_vsnprintf
#define GPUPROF__USING_STB 1
#else
#define GPUPROF__VSNPRINTF vsnprintf
#define GPUPROF__USING_STB 0
#endif

#if !GPUPROF__USING_STB
#include <locale.h>
/* vsnprintf wrote the locale's decimal point, which may be any string ("," in
   de_DE, U+066B ARABIC DECIMAL SEPARATOR in ps_AF): each becomes '.' (the
   digits themselves are always ASCII). Returns the new length. */
static int gpuprof__c_decimals(char *buf, int len) {
    const struct lconv *lc = localeconv();
    const char *dp = lc && lc->decimal_point && lc->decimal_point[0] ? lc->decimal_point : ".";
    size_t dn = strlen(dp);
    int i, o = 0;
    if (dn == 1 && dp[0] == '.') return len;
    for (i = 0; i < len; ) {
        if ((size_t)(len - i) >= dn && memcmp(buf + i, dp, dn) == 0) { buf[o++] = '.'; i += (int)dn; }
        else buf[o++] = buf[i++];
    }
    buf[o] = 0;
    return o;
}
#endif

/* printf into buf; numbers use '.' whatever setlocale() said. Only call it
   with numeric conversions (and %s of text without the locale's decimal
   point), because without stb_sprintf that point is replaced after the fact. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static int gpuprof__fmt(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    int len;
    va_start(ap, fmt);
#if GPUPROF__USING_STB
    len = GPUPROF__VSNPRINTF(buf, (int)n, fmt, ap);
#else
    len = GPUPROF__VSNPRINTF(buf, n, fmt, ap);
#endif
    va_end(ap);
    if (len < 0) { buf[0] = 0; return 0; }
    if ((size_t)len >= n) len = n ? (int)n - 1 : 0;
#if !GPUPROF__USING_STB
    len = gpuprof__c_decimals(buf, len);
#endif
    return len;
}

/* ----------------------------------------------------------------------
   Platform clock
   ---------------------------------------------------------------------- */
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/stat.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif
/* Under a strict mode (-std=c99, -std=c11 without feature macros) glibc
   declares neither clock_gettime nor struct timespec nor O_CLOEXEC: on
   64-bit Linux, where their layout and values are fixed, gpuprof declares
   its own names for them, bound to the same symbol; nothing the including
   file sees changes. */
#if defined(CLOCK_MONOTONIC)
typedef struct timespec gpuprof__timespec;
#define gpuprof__clock_gettime(c, t) clock_gettime((c), (t))
#define GPUPROF__CLOCK_MONOTONIC CLOCK_MONOTONIC
#define GPUPROF__CLOCK_REALTIME CLOCK_REALTIME
#define GPUPROF__CLOCK_THREAD_CPU CLOCK_THREAD_CPUTIME_ID
#elif defined(__linux__) && defined(__LP64__) && (defined(__GNUC__) || defined(__clang__))
typedef struct { long tv_sec, tv_nsec; } gpuprof__timespec;
extern int gpuprof__clock_gettime(int clock, gpuprof__timespec *t) __asm__("clock_gettime");
#define GPUPROF__CLOCK_MONOTONIC 1
#define GPUPROF__CLOCK_REALTIME 0
#define GPUPROF__CLOCK_THREAD_CPU 3
#else
#error "gpuprof.h: the implementation needs POSIX's clock_gettime, which this file's C mode hides: build the file that defines GPUPROF_IMPLEMENTATION with -D_POSIX_C_SOURCE=200809L (or -std=gnu11)"
#endif
/* gethostname and nanosleep, which the strict modes hide as well: bound by their symbols. */
#if defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
extern int gpuprof__gethostname(char *name, size_t len) __asm__("gethostname");
extern int gpuprof__nanosleep(const gpuprof__timespec *req, gpuprof__timespec *rem) __asm__("nanosleep");
#else
#define gpuprof__gethostname gethostname
#define gpuprof__nanosleep nanosleep
#endif
#if !defined(O_CLOEXEC) && defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#define O_CLOEXEC 02000000
#elif !defined(O_CLOEXEC)
#define O_CLOEXEC 0
#endif
/* O_NOFOLLOW and fchmod, for the live metrics' file, which the strict modes hide too. */
#if !defined(O_NOFOLLOW) && defined(__linux__) && defined(__x86_64__)
#define O_NOFOLLOW 0400000
#elif !defined(O_NOFOLLOW) && defined(__linux__) && defined(__aarch64__)
#define O_NOFOLLOW 0100000
#elif !defined(O_NOFOLLOW)
#error "gpuprof.h: the implementation needs O_NOFOLLOW, which this file's C mode hides: build the file that defines GPUPROF_IMPLEMENTATION with -D_POSIX_C_SOURCE=200809L (or -std=gnu11)"
#endif
#if defined(__GLIBC__) && !defined(__USE_XOPEN2K) && !defined(__USE_XOPEN_EXTENDED)
extern int gpuprof__fchmod(int fd, unsigned mode) __asm__("fchmod");
#if __GLIBC__ > 2 || __GLIBC_MINOR__ >= 33                /* lstat is a symbol of its own from glibc 2.33 */
extern int gpuprof__lstat(const char *path, struct stat *st) __asm__("lstat");
#else
#error "gpuprof.h: the implementation needs lstat, which this file's C mode hides: build the file that defines GPUPROF_IMPLEMENTATION with -D_POSIX_C_SOURCE=200809L (or -std=gnu11)"
#endif
#else
#define gpuprof__fchmod fchmod
#define gpuprof__lstat lstat
#endif
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define GPUPROF__X86 1
#else
#define GPUPROF__X86 0
#endif

#if !defined(GPUPROF_CLOCK_FN)
/* CPU time of the calling thread (for the stepping thread's time off the CPU). */
static uint64_t gpuprof__thread_cpu_ns(void) {
    gpuprof__timespec t;
    if (gpuprof__clock_gettime(GPUPROF__CLOCK_THREAD_CPU, &t) != 0) return 0;
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#endif

static uint64_t gpuprof__mono_ns(void) {
    gpuprof__timespec t;
    gpuprof__clock_gettime(GPUPROF__CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Waits on cond (m held) for ns at most: pthread_cond_timedwait's deadline
   is on the realtime clock. */
static int gpuprof__cond_wait_ns(pthread_cond_t *cond, pthread_mutex_t *m, uint64_t ns) {
    struct timespec until;
    gpuprof__timespec rt;
    gpuprof__clock_gettime(GPUPROF__CLOCK_REALTIME, &rt);
    until.tv_sec = rt.tv_sec + (time_t)(ns / 1000000000u);
    until.tv_nsec = rt.tv_nsec + (long)(ns % 1000000000u);
    if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
    return pthread_cond_timedwait(cond, m, &until);
}

/* The hot path reads raw ticks; ticks become nanoseconds through a 32.32
   fixed-point multiplier. With the TSC that is the calibrated rate; with
   clock_gettime the ticks already are nanoseconds. */
static struct {
    int use_tsc;
    uint64_t mult;        /* ns per tick << 32 */
    uint64_t base;        /* ticks at init: the trace's time zero */
    uint64_t same_ns_ticks; /* two reads closer than this may fall in one nanosecond */
} gpuprof__clock;

/* Out of line: the range functions stay leaf functions on the TSC path. */
static GPUPROF__NOINLINE uint64_t gpuprof__mono_cold(void) { return gpuprof__mono_ns(); }

static inline uint64_t gpuprof__ticks(void) {
#if defined(GPUPROF_CLOCK_FN)
    return GPUPROF_CLOCK_FN();
#endif
#if GPUPROF__X86
    if (GPUPROF__LIKELY(gpuprof__clock.use_tsc)) return __builtin_ia32_rdtsc();
#endif
    return gpuprof__mono_cold();
}

/* dt * mult / 2^32, rounded down (mod 2^64): one 64x64->128 multiply where
   the compiler has one, else two 32x64 ones -- the same result. */
#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 gpuprof__u128;     /* __extension__: no -Wpedantic warning */
#endif
static inline uint64_t gpuprof__ticks_to_ns_m(uint64_t dt, uint64_t m) {     /* m: gpuprof__clock.mult, held */
#if defined(__SIZEOF_INT128__)
    return (uint64_t)(((gpuprof__u128)dt * m) >> 32);
#else
    return (dt >> 32) * m + (((dt & 0xffffffffu) * m) >> 32);
#endif
}
static inline uint64_t gpuprof__ticks_to_ns(uint64_t dt) {
    return gpuprof__ticks_to_ns_m(dt, gpuprof__clock.mult);
}

static int gpuprof__tsc_invariant(void) {
#if GPUPROF__X86
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return 0;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1;
#else
    return 0;
#endif
}

/* The TSC runs at a constant rate that the CPU does not tell us reliably,
   so it is measured against CLOCK_MONOTONIC over a few milliseconds. Each
   end point is the TSC read between two clock reads that were close
   together, so a preemption in the middle cannot skew the rate. */
static void gpuprof__tsc_pair(uint64_t *tsc, uint64_t *ns) {
    uint64_t best = (uint64_t)-1;
    *tsc = *ns = 0;
    int i;
    for (i = 0; i < 16; i++) {
        uint64_t a = gpuprof__mono_ns(), t = 0, b;
#if GPUPROF__X86
        t = __builtin_ia32_rdtsc();
#endif
        b = gpuprof__mono_ns();
        if (b - a < best) { best = b - a; *tsc = t; *ns = a + (b - a) / 2; }
    }
}

static void gpuprof__clock_init(int want_tsc) {
    gpuprof__clock.use_tsc = 0;
    gpuprof__clock.mult = (uint64_t)1 << 32;
#if defined(GPUPROF_CLOCK_FN)
    want_tsc = 0;                 /* the user's clock counts nanoseconds */
#endif
    if (want_tsc && gpuprof__tsc_invariant()) {
        uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0;
        gpuprof__tsc_pair(&t0, &n0);
        do gpuprof__tsc_pair(&t1, &n1); while (n1 - n0 < 3000000u);   /* 3 ms */
        if (t1 > t0) {
            gpuprof__clock.mult = (uint64_t)(((double)(n1 - n0) / (double)(t1 - t0)) * 4294967296.0 + 0.5);
            gpuprof__clock.use_tsc = 1;
        }
    }
    gpuprof__clock.same_ns_ticks = ((uint64_t)1 << 32) / gpuprof__clock.mult + 1;
}

#endif /* !GPUPROF_DISABLE */

/* ----------------------------------------------------------------------
   Statistics accumulator (also built with GPUPROF_DISABLE)
   ---------------------------------------------------------------------- */
/* A sample's histogram key is the top 17 bits of its IEEE-754 pattern below
   the sign: 11 exponent bits and 6 mantissa bits, i.e. 64 linear buckets per
   power of two. Keys grow with the value (negatives are mirrored), so a
   bucket index is a shift and a subtraction, with no log() on the hot path.
   Each bucket is reported as the harmonic mean of its bounds, within
   1/(2*64+1) = 0.78 % of any value in it. */
#define GPUPROF__SUB_BITS 6
#define GPUPROF__KEY_SHIFT (52 - GPUPROF__SUB_BITS)

static inline int32_t gpuprof__key(double x) {
    uint64_t b;
    x += 0.0;                                  /* -0.0 becomes +0.0 */
    memcpy(&b, &x, sizeof b);
    if (b >> 63) return -(int32_t)((b & 0x7fffffffffffffffull) >> GPUPROF__KEY_SHIFT) - 1;
    return (int32_t)(b >> GPUPROF__KEY_SHIFT);
}

static double gpuprof__key_value(int32_t key) {
    uint64_t lo_bits, hi_bits;
    double lo, hi;
    if (key < 0) return -gpuprof__key_value(-key - 1);
    lo_bits = (uint64_t)key << GPUPROF__KEY_SHIFT;
    hi_bits = (uint64_t)(key + 1) << GPUPROF__KEY_SHIFT;
    memcpy(&lo, &lo_bits, sizeof lo);
    memcpy(&hi, &hi_bits, sizeof hi);
    if (lo == 0.0) return 0.0;
    if (hi_bits >= 0x7ff0000000000000ull) return lo;   /* top bucket: its upper bound is inf */
    return lo * (2.0 * hi / (lo + hi));
}

void gpuprof_stats_init(gpuprof_stats *s) {
    memset(s, 0, sizeof *s);
}

/* Moves the bucket window so that `key` fits, folding whatever falls off
   the low end into the lowest bucket. Rare: only when a sample lies more
   than the window's span away from those seen so far. */
static GPUPROF__NOINLINE void gpuprof__stats_rebucket(gpuprof_stats *s, int32_t key) {
    const int32_t n = GPUPROF_STATS_BUCKETS;
    int32_t lo = GPUPROF__LD(&s->lo_key), i, top = -1, d;
    for (i = n - 1; i >= 0; i--) if (GPUPROF__LD(&s->bucket[i])) { top = i; break; }
    if (key >= lo + n) {                       /* slide up */
        uint64_t fold = 0;
        d = key - (lo + n - 1);
        for (i = 0; i < n; i++) {
            uint32_t c = GPUPROF__LD(&s->bucket[i]);
            if (i <= d) fold += c;
            else GPUPROF__ST(&s->bucket[i - d], c);
            if (i >= n - d) GPUPROF__ST(&s->bucket[i], 0u);
        }
        if (d >= n) { for (i = 0; i < n; i++) GPUPROF__ST(&s->bucket[i], 0u); }
        GPUPROF__ST(&s->bucket[0], (uint32_t)(fold > 0xffffffffu ? 0xffffffffu : fold));
        GPUPROF__ST(&s->lo_key, lo + d);
    } else {                                   /* slide down as far as the top allows */
        d = lo - key;
        if (top + d >= n) d = n - 1 - top;
        if (d > 0) {
            for (i = n - 1; i >= 0; i--)
                GPUPROF__ST(&s->bucket[i], i >= d ? GPUPROF__LD(&s->bucket[i - d]) : 0u);
            GPUPROF__ST(&s->lo_key, lo - d);
        }
    }
}

static void gpuprof__stats_halve(gpuprof_stats *s) {
    int i;
    for (i = 0; i < GPUPROF_STATS_BUCKETS; i++) {
        uint32_t c = GPUPROF__LD(&s->bucket[i]);
        GPUPROF__ST(&s->bucket[i], (c + 1) / 2);
    }
    GPUPROF__ST(&s->halvings, GPUPROF__LD(&s->halvings) + 1);
}

static void gpuprof__stats_count_key(gpuprof_stats *s, int32_t key, uint32_t c) {
    uint32_t idx = (uint32_t)(key - GPUPROF__LD(&s->lo_key)), v;
    if (GPUPROF__UNLIKELY(idx >= GPUPROF_STATS_BUCKETS)) {
        gpuprof__stats_rebucket(s, key);
        idx = (uint32_t)(key - GPUPROF__LD(&s->lo_key));
        if (idx >= GPUPROF_STATS_BUCKETS) idx = 0;        /* far below: folded */
    }
    v = GPUPROF__LD(&s->bucket[idx]);
    while (GPUPROF__UNLIKELY(v > 0xffffffffu - c)) { gpuprof__stats_halve(s); c = (c + 1) / 2; v = GPUPROF__LD(&s->bucket[idx]); }
    GPUPROF__ST(&s->bucket[idx], v + c);
}

/* min, max and the shifted sums, for a sample after the first. */
GPUPROF__INLINE void gpuprof__stats_moments(gpuprof_stats *s, double x) {
    double d = x - gpuprof__ldd(&s->shift);
    if (x < gpuprof__ldd(&s->min)) gpuprof__std(&s->min, x);
    if (x > gpuprof__ldd(&s->max)) gpuprof__std(&s->max, x);
    gpuprof__std(&s->sum, gpuprof__ldd(&s->sum) + x);
    gpuprof__std(&s->sum_d, gpuprof__ldd(&s->sum_d) + d);
    gpuprof__std(&s->sum_d2, gpuprof__ldd(&s->sum_d2) + d * d);
}

void gpuprof_stats_add(gpuprof_stats *s, double x) {
    uint64_t n = GPUPROF__LD(&s->count);
    if (GPUPROF__UNLIKELY(!gpuprof__finite(x))) { /* NaN or infinity */
        GPUPROF__ST(&s->rejected, GPUPROF__LD(&s->rejected) + 1);
        return;
    }
    if (GPUPROF__UNLIKELY(n == 0)) {
        gpuprof__std(&s->min, x);
        gpuprof__std(&s->max, x);
        gpuprof__std(&s->shift, x);
        GPUPROF__ST(&s->lo_key, gpuprof__key(x) - GPUPROF_STATS_BUCKETS / 2);
    }
    gpuprof__stats_moments(s, x);
    gpuprof__stats_count_key(s, gpuprof__key(x), 1);
    GPUPROF__ST(&s->count, n + 1);
}

/* The key of a whole number of nanoseconds v < 2^53 from the double it
   converts to exactly: gpuprof__key without the sign (x >= +0.0) -- a shift
   of the bits, no branch, not even for 0 (a leading-bit count needs one for
   0, and gcc -O3 turns the statistics' run loop into two loops around it). */
GPUPROF__INLINE int32_t gpuprof__key_ns(double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return (int32_t)(b >> GPUPROF__KEY_SHIFT);
}

/* gpuprof_stats_add for a range's duration in ns, on the hot path: the
   same result, fewer instructions. The rare cases take the general path. */
GPUPROF__INLINE void gpuprof__stats_add_ns(gpuprof_stats *s, uint64_t v) {
    uint64_t n = GPUPROF__LD(&s->count);
    double x = (double)(int64_t)v;
    uint32_t idx = (uint32_t)(gpuprof__key_ns(x) - GPUPROF__LD(&s->lo_key)), c;
    if (GPUPROF__UNLIKELY(n == 0 || idx >= GPUPROF_STATS_BUCKETS || v >> 53)) { gpuprof_stats_add(s, (double)v); return; }
    c = GPUPROF__LD(&s->bucket[idx]);
    if (GPUPROF__UNLIKELY(c == 0xffffffffu)) { gpuprof_stats_add(s, x); return; }
    GPUPROF__ST(&s->bucket[idx], c + 1);
    gpuprof__stats_moments(s, x);
    GPUPROF__ST(&s->count, n + 1);
}

/* The buckets that can hold samples: those from the minimum's to the
   maximum's (a sample below the window is folded into bucket 0, and the
   minimum is then below it too). Merging, quantiles and clearing look at
   these alone: a range's few occupied buckets, not all 2048. */
static void gpuprof__stats_span(const gpuprof_stats *s, double mn, double mx, int *first, int *last) {
    int32_t lo = GPUPROF__LD(&s->lo_key), a = gpuprof__key(mn) - lo, b = gpuprof__key(mx) - lo;
    *first = a < 0 ? 0 : a > GPUPROF_STATS_BUCKETS - 1 ? GPUPROF_STATS_BUCKETS - 1 : a;
    *last = b < *first ? *first : b > GPUPROF_STATS_BUCKETS - 1 ? GPUPROF_STATS_BUCKETS - 1 : b;
}

/* Merging reads src field by field with relaxed atomics, so src may be an
   accumulator another thread is still adding to: the result is then a
   consistent-enough snapshot (each figure within a few samples). */
void gpuprof_stats_merge(gpuprof_stats *dst, const gpuprof_stats *src) {
    uint64_t n = GPUPROF__LD(&src->count);
    double k, smin, smax, sshift, ssum_d;
    uint64_t rejected = GPUPROF__LD(&src->rejected);
    uint32_t src_halvings = GPUPROF__LD(&src->halvings), down;
    int32_t lo;
    int i, first, last;
    if (rejected) dst->rejected += rejected;          /* dst untouched when src is empty */
    if (!n) return;
    /* Bucket counts are in units of 2^halvings samples: both sides go to
       the coarser unit before src's counts are added. */
    while (dst->halvings < src_halvings) gpuprof__stats_halve(dst);
    down = dst->halvings - src_halvings;
    smin = gpuprof__ldd(&src->min);
    smax = gpuprof__ldd(&src->max);
    sshift = gpuprof__ldd(&src->shift);
    ssum_d = gpuprof__ldd(&src->sum_d);
    lo = GPUPROF__LD(&src->lo_key);
    gpuprof__stats_span(src, smin, smax, &first, &last);
    if (!dst->count) {
        dst->shift = sshift;
        dst->min = smin;
        dst->max = smax;
        /* src's samples land at the low end of dst's window, next to its
           header: a report's row of a few samples touches one page */
        dst->lo_key = last - first + 8 < GPUPROF_STATS_BUCKETS ? lo + first - 8 : lo;
    }
    /* Re-express src's shifted sums relative to dst's shift. */
    k = sshift - dst->shift;
    dst->sum_d2 += gpuprof__ldd(&src->sum_d2) + 2.0 * k * ssum_d + (double)n * k * k;
    dst->sum_d += ssum_d + (double)n * k;
    dst->sum += gpuprof__ldd(&src->sum);
    if (smin < dst->min) dst->min = smin;
    if (smax > dst->max) dst->max = smax;
    dst->count += n;
    for (i = first; i <= last; i++) {
        uint32_t c = GPUPROF__LD(&src->bucket[i]);
        if (c && down) c = down >= 32 ? 1u : (uint32_t)(((uint64_t)c + (1ull << down) - 1) >> down);   /* as halving rounds */
        if (c) gpuprof__stats_count_key(dst, lo + i, c);
    }
}

uint64_t gpuprof_stats_count(const gpuprof_stats *s) { return GPUPROF__LD(&s->count); }
uint64_t gpuprof_stats_rejected(const gpuprof_stats *s) { return GPUPROF__LD(&s->rejected); }
double gpuprof_stats_sum(const gpuprof_stats *s) { return gpuprof__ldd(&s->sum); }
double gpuprof_stats_min(const gpuprof_stats *s) { return GPUPROF__LD(&s->count) ? gpuprof__ldd(&s->min) : GPUPROF__NAN; }
double gpuprof_stats_max(const gpuprof_stats *s) { return GPUPROF__LD(&s->count) ? gpuprof__ldd(&s->max) : GPUPROF__NAN; }
double gpuprof_stats_mean(const gpuprof_stats *s) {
    uint64_t n = GPUPROF__LD(&s->count);
    return n ? gpuprof__ldd(&s->sum) / (double)n : GPUPROF__NAN;
}
double gpuprof_stats_stddev(const gpuprof_stats *s) {
    uint64_t n = GPUPROF__LD(&s->count);
    double sd, v;
    if (n < 2) return n ? 0.0 : GPUPROF__NAN;
    sd = gpuprof__ldd(&s->sum_d);
    v = (gpuprof__ldd(&s->sum_d2) - sd * sd / (double)n) / (double)(n - 1);
    return v > 0 ? sqrt(v) : 0.0;
}

/* The value of the sample of rank r (0-based) in sorted order. */
static double gpuprof__stats_order(const gpuprof_stats *s, uint64_t r, uint64_t n, uint64_t total,
                                   int32_t lo, double mn, double mx, int first, int last) {
    double target, v;
    uint64_t cum = 0;
    int i;
    if (r == 0) return mn;
    if (r + 1 >= n) return mx;
    /* After halvings the histogram total differs from the count: scale the rank. */
    target = total == n ? (double)r : (double)r * (double)total / (double)n;
    for (i = first; i <= last; i++) {
        cum += GPUPROF__LD(&s->bucket[i]);
        if ((double)cum > target) break;
    }
    if (i > last) i = last;
    /* The lowest bucket also holds the samples folded in from below the
       window (a 0 among percentages, say): the minimum stands for them. */
    if (i == 0 && gpuprof__key(mn) < lo) return mn;
    v = gpuprof__key_value(lo + i);
    return v < mn ? mn : v > mx ? mx : v;
}

double gpuprof_stats_quantile(const gpuprof_stats *s, double q) {
    uint64_t n = GPUPROF__LD(&s->count), total = 0, k;
    int32_t lo = GPUPROF__LD(&s->lo_key);
    double h, f, a, b, mn, mx;
    int i, first, last;
    if (!n || gpuprof__isnan(q)) return GPUPROF__NAN;
    mn = gpuprof__ldd(&s->min);
    mx = gpuprof__ldd(&s->max);
    if (q < 0) q = 0;
    if (q > 1) q = 1;
    gpuprof__stats_span(s, mn, mx, &first, &last);
    for (i = first; i <= last; i++) total += GPUPROF__LD(&s->bucket[i]);
    if (!total) return mn;
    h = (double)(n - 1) * q;                  /* numpy's "linear" method */
    k = (uint64_t)h;
    f = h - (double)k;
    a = gpuprof__stats_order(s, k, n, total, lo, mn, mx, first, last);
    b = f > 0 ? gpuprof__stats_order(s, k + 1, n, total, lo, mn, mx, first, last) : a;
    return a + f * (b - a);
}

#ifndef GPUPROF_DISABLE
/* ----------------------------------------------------------------------
   Global state and warnings: the types the sections share, the session's
   state (gpuprof__g), the state of the parts that sections above their own
   read (gpuprof__registry, gpuprof__steps, gpuprof__bg, gpuprof__run; the
   threads' list and the trace's are in their sections), the locks,
   one-line messages, allocation.
   ---------------------------------------------------------------------- */
enum {
    GPUPROF__W_END_WITHOUT_BEGIN, GPUPROF__W_MISMATCHED, GPUPROF__W_UNCLOSED, GPUPROF__W_AFTER_SHUTDOWN,
    GPUPROF__W_DOUBLE_INIT, GPUPROF__W_BAD_NAME, GPUPROF__W_LONG_NAME, GPUPROF__W_BAD_VALUE,
    GPUPROF__W_NAMES_FULL, GPUPROF__W_PATHS_FULL, GPUPROF__W_TOO_DEEP, GPUPROF__W_NO_MEMORY,
    GPUPROF__W_DROPPED, GPUPROF__W_BAD_ENV, GPUPROF__W_IO, GPUPROF__W_NO_GPU, GPUPROF__W_CUDA,
    GPUPROF__W_MEM_UNKNOWN, GPUPROF__W_MEM_TWICE, GPUPROF__W_MEM_CAP, GPUPROF__W_BEFORE_INIT, GPUPROF__W_KERNELS, GPUPROF__W_DEVICE, GPUPROF__W_COUNT
};
static const char *const gpuprof__warn_label[GPUPROF__W_COUNT] = {
    "END without BEGIN", "mismatched nesting", "ranges open at shutdown", "calls after shutdown",
    "init called twice", "NULL or empty names", "names truncated", "NaN/inf counter values",
    "names over the cap", "call paths over the cap", "ranges nested too deep", "allocation failures",
    "trace events dropped", "bad settings", "output errors", "GPU unavailable", "CUDA errors",
    "frees of untracked pointers", "allocations tracked twice", "memory categories/labels over the cap",
    "calls before anything was recorded", "kernel capture", "device telemetry"
};

/* The session's lifecycle, one atomic word (gpuprof__g.state): NEVER or
   DOWN -> STARTING -> RUNNING -> STOPPING -> DOWN. Init and shutdown move it
   under gpuprof__life_lock and gpuprof__lock, publishing RUNNING and DOWN
   with release order; any thread may read it (acquire) without a lock, and
   the first range of any thread may be the one that starts the session. */
enum { GPUPROF__NEVER = 0, GPUPROF__RUNNING = 1, GPUPROF__DOWN = 2, GPUPROF__STARTING = 3, GPUPROF__STOPPING = 4 };
enum { GPUPROF__PHASE_COUNT = 0, GPUPROF__PHASE_EXCLUDE = 1, GPUPROF__PHASE_OFF = 2 };
enum { GPUPROF__ID_OTHER = 1, GPUPROF__ID_FIRST_USER = 2 };   /* name id 0 means "not yet registered" */
enum { GPUPROF__F_SCOPED = 1, GPUPROF__F_EXPLICIT = 2, GPUPROF__F_WORK = 4, GPUPROF__F_NVTX = 8, GPUPROF__F_MEM = 16,
       GPUPROF__F_KERN = 32 };   /* KERN: an external correlation id was pushed to CUPTI */
/* An event's type is in its low 4 bits; a GPU range keeps its stream track above them. */
enum { GPUPROF__EV_RANGE = 0, GPUPROF__EV_COUNTER = 1, GPUPROF__EV_MARK = 2, GPUPROF__EV_STEP = 3, GPUPROF__EV_GPU = 4,
       GPUPROF__EV_WORK = 5,     /* WORK: the next range event of that name carries this work (ts: bytes, u: flops) */
       GPUPROF__EV_FLOW = 6,     /* FLOW: the next GPU event was begun by the CPU range at ts (ticks) on thread u */
       /* kernel capture (ts in ns, like GPU): a CUDA call on a CPU thread (u: duration | tid << 40,
          name_id: correlation, flags: cbid | driver << 15); a kernel, copy or memset on a stream
          track (u: duration, name_id: correlation, flags: GPUPROF__KF_*), after its two records of
          arguments KA (grid, block, registers, kernel) and KB (launch time, bytes or shared memory, launching thread) */
       GPUPROF__EV_KAPI = 7, GPUPROF__EV_KERNEL = 8, GPUPROF__EV_KA = 9, GPUPROF__EV_KB = 10 };
enum { GPUPROF__TRACE_NONE = 0, GPUPROF__TRACE_STREAM = 1, GPUPROF__TRACE_RING = 2 };
enum { GPUPROF__FMT_JSON = 0, GPUPROF__FMT_PERFETTO = 1 };   /* a trace output's format: its row in gpuprof__trace_encoders */
/* NUDGE (range events): begun flags >> 8 ns later in the trace (gpuprof__range_event) */
#define GPUPROF__NUDGE_NS(e) (((e)->flags & GPUPROF__EVF_NUDGE) ? (uint32_t)(e)->flags >> 8 : 0u)
enum { GPUPROF__EVF_WARMUP = 1, GPUPROF__EVF_COUNTED = 2, GPUPROF__EVF_NUDGE = 4, GPUPROF__EVF_MEM = 8,
       GPUPROF__EVF_GPU_PART = 16 };   /* GPU_PART (WORK and range events): the range has a GPU event (no rates on its CPU
                                          event; a Perfetto trace's flow starts at it). A step's flags >> 8: its depth */

#define GPUPROF__BLOCK_EVENTS 2048
#define GPUPROF__OUTLIERS 256         /* outlier-step candidates kept (more: none are set apart) */
#define GPUPROF__OUTLIER_X 3.0        /* a step longer than this many median steps is an outlier */
#define GPUPROF__KINDS 16             /* kinds of step kept (a kind: the set of the stepping thread's ranges a step ran); */
                                      /* steps of a kind beyond these count as typical */
#define GPUPROF__CAPTURES 64          /* slow-step captures kept at most (GPUPROF_CAPTURE_MAX) */
#define GPUPROF__CAPTURE_AFTER 10     /* counted steps before a step can be judged slow */
#define GPUPROF__SERIES 2048          /* points of the run over time (step time, phases); when full, neighbours merge */
#define GPUPROF__SERIES_PH 16         /* the stepping thread's outermost ranges followed over time (the first met) */
#define GPUPROF__VALS_CHUNK 1024      /* a counter's samples are kept exactly, in chunks made as needed, */
#define GPUPROF__VALS_CHUNKS 64       /* the last 64 x 1024 (then the chunks are reused as a ring): its quantiles are exact */
#define GPUPROF__KIND_NOISE 0.02      /* a range's extra time in a kind of step is listed from this share of the kind's extra on */
#define GPUPROF__KIND_RARE 0.2        /* a kind running ranges the typical step does not is set apart when it has at most */
                                      /* this share of the counted steps */
#define GPUPROF__NODE_CHUNK 32
#define GPUPROF__DYN_CACHE 256
#define GPUPROF__RECS 4096            /* a thread's ring of calls waiting to be added to the statistics (a power of two) */

#define GPUPROF__JSON_PAD 32          /* bytes after a name's JSON that may be read (not used) */
#define GPUPROF__KC_NAME_MAX 4096     /* bytes of a captured kernel's name shown (C++ template names run long) */
static char gpuprof__empty_json[GPUPROF__JSON_PAD + 3] = "\"\"";

typedef struct gpuprof__name {
    char *text;          /* sanitised, NUL-terminated */
    char *json;          /* the same as a quoted JSON string */
    uint32_t len, hash, json_len;
#ifdef GPUPROF_NVTX
    nvtxEventAttributes_t nvtx;   /* the name registered in gpuprof's NVTX domain */
#endif
} gpuprof__name;

/* GPU time of a call path (CUDA builds), made when its first GPU time comes in. */
typedef struct gpuprof__gpustat {
    gpuprof_stats stats;      /* GPU time in ns, counted calls */
    gpuprof_stats *pre;       /* as gpuprof__node.pre */
    uint64_t self_ns, pre_self_ns, excluded;
    int64_t lag_ns;           /* sum over counted calls of (GPU end - CPU end) */
    int64_t wait_ns;          /* sum over counted calls of (GPU start - CPU start): queued work ahead of the range */
    uint64_t nowork;          /* from kernels: counted calls that launched no GPU work (no span) */
} gpuprof__gpustat;

typedef struct gpuprof__node {
    struct gpuprof__node *parent, *first_child, *next_sibling;
    uint32_t name_id, index;
    uint64_t excluded;        /* calls left out by warm-up or the schedule */
    double flops, bytes;      /* work declared with GPUPROF_RANGE_WORK, counted calls */
    double last;              /* counters: the latest value */
    gpuprof_stats *pre;       /* see gpuprof__exclude() */
    uint64_t pre_self_ns;
    struct gpuprof__vals *vals;   /* counters: their latest samples, exactly */
    gpuprof__gpustat *gpu;    /* CUDA builds: written by whoever harvests this thread's events (GPUPROF_GPU=kernels: the collector) */
    gpuprof__gpustat *kspan;  /* kernel capture: GPU time from the kernels launched inside it (written by the collector) */
    int64_t mem_delta, dev_delta;   /* mem_ranges: sums over counted calls of the change in tracked / device-used bytes */
    uint64_t mem_calls, dev_calls;
    uint64_t kernel_calls, kernel_ns;   /* kernel capture: kernels launched inside this range itself (written by the collector) */
    uint64_t kuf_ns, ktc_ns;  /* ... their time in launches that leave most SMs idle, and on the tensor cores */
    uint64_t copy_ns, copy_bytes, copy_pageable;   /* ... and copies (pageable: those to or from pageable host memory) */
    uint64_t sync_ns;         /* ... and the CPU time its synchronizing calls waited */
    double win_first, win_last;     /* the stepping thread's outer two levels: stats.sum at the first and the last GPUPROF_STEP */
    uint64_t win_count;             /* ... and stats.count at the last (a call ended in a step: the range ran in it) */
    /* What adding a call's record writes, a cache line away from what the
       recording thread reads for every call (parent, name_id): else, with
       GPUPROF_COLLECTOR=1, each record the collector adds would take that
       line from the recording thread's core. */
    char pad_[64];
    uint64_t self_ns;         /* inclusive minus nested ranges, counted calls */
    gpuprof_stats stats;      /* inclusive time in ns (counters: the values) */
} gpuprof__node;

typedef struct gpuprof__frame {
    uint64_t t0;
    gpuprof__node *node;
    uint64_t child_ns;
    double flops, bytes;
    int flags;
    int gdev;                 /* CUDA builds: the device, stream and start event of the GPU part */
    void *gstream, *gev0;
    uint64_t gseq;            /* the thread's GPU records pushed when this range began */
    uint64_t kcall;           /* kernel capture: the call's number + 1 in gpuprof__kc.calls (0: none) */
    int64_t mem0, dev0;       /* mem_ranges: tracked and device-used bytes at the begin (dev0 -1: none) */
} gpuprof__frame;

/* A GPU stream track's lanes in one trace output (section "Trace output,
   the layers": gpuprof__lane_of): GPUPROF__LANES lanes, each with the last
   GPUPROF__LANE_KEEP slices put there and the runs of those before. */
#define GPUPROF__LANES 16
#define GPUPROF__LANE_KEEP 32
#define GPUPROF__LANE_RUNS 8
typedef struct gpuprof__lane {
    uint64_t ts[GPUPROF__LANE_KEEP], end[GPUPROF__LANE_KEEP];   /* the slices kept, a ring */
    uint64_t lo[GPUPROF__LANE_RUNS], hi[GPUPROF__LANE_RUNS];   /* the runs of those no longer kept, apart, by time */
    uint64_t first, last;                 /* the earliest begin and the latest end of all put there */
    uint32_t n, next, runs;
} gpuprof__lane;
typedef struct gpuprof__lanes {
    unsigned gen;                         /* the output generation the lanes are of (a new part starts afresh) */
    uint32_t used, named;                 /* lanes in use; those whose track is named in this output (bits) */
    uint32_t over;                        /* slices past the last lane (told once) */
    gpuprof__lane lane[GPUPROF__LANES];
} gpuprof__lanes;

/* One trace output: the streamed file, or a file gpuprof_write_trace writes. */
typedef struct gpuprof__tout {
    int fd, failed;                       /* failed is published after error is set */
    int format;                           /* GPUPROF__FMT_*: the encoder that writes it */
    unsigned gen;                         /* tracks whose metadata is in this output are marked with it */
    unsigned first_gen;                   /* the generation of its stream's first part (GPUPROF_TRACE_MAX_MB), else its own */
    uint64_t off;                         /* bytes written */
    char *stage;                          /* the streamed file's: encoded bytes wait here to be written in */
    uint32_t staged;                      /* large write()s (gpuprof__trace_stage): staged bytes at its start */
    uint64_t events, flows;               /* events written; flow arrows, also their ids */
    uint64_t from_ns;                     /* a flight-recorder dump: flows from CPU ranges begun before this are left out */
    const char *path;
    char error[96];                       /* why writing failed */
    unsigned char *pf_ctr;                /* Perfetto: name id -> its counter's track is in this output */
    uint32_t *pf_tids;                    /* Perfetto: the thread tracks in it (gpuprof__pf_tid_slot) */
    uint64_t *pf_begins;                  /* Perfetto: begins written on tracks of late events (a cache of hashes) */
    gpuprof__lanes **lanes;               /* a GPU track's lanes in this output, by track (CUDA builds) */
    unsigned char *pf_lane;               /* Perfetto: the lanes of a block's GPU slices, in order (the first pass's, for the second) */
    uint32_t pf_nlane;                    /* the second pass's place in them */
    uint32_t pf_nctr, pf_ntids, pf_ctids;
} gpuprof__tout;

typedef struct gpuprof__event {
    uint64_t ts;                          /* clock ticks since the trace's time zero */
    union { uint64_t dur_ns; uint64_t dur_ticks; double value; uint64_t step; } u;   /* a CPU range: dur_ticks */
    uint32_t name_id;
    uint16_t type, flags;
} gpuprof__event;

struct gpuprof__thread;
typedef struct gpuprof__block {
    struct gpuprof__block *next;
    struct gpuprof__thread *owner;
    int tid;                              /* the recording thread's, copied: a state outlives its thread */
    uint32_t sort_index;
    char label[64];
    uint32_t count;                       /* events recorded (published with release) */
    uint32_t done;                        /* events already in the streamed file (the formatter's) */
    uint32_t aux;                         /* WORK and FLOW records among them (not events of their own) */
    uint64_t sealed_ns;                   /* the flight recorder: when the block was handed over */
    gpuprof__event ev[GPUPROF__BLOCK_EVENTS];
} gpuprof__block;

/* A counted call, as a range's end leaves it in its thread's ring to be
   added to the node's statistics later (gpuprof__rec_drain): 24 bytes. */
typedef struct gpuprof__rec {
    struct gpuprof__node *node;
    uint64_t dt, self;                    /* ns: inclusive, and minus nested ranges */
} gpuprof__rec;

/* A thread's GPU part (CUDA builds): completed in section "GPU backend". */
typedef struct gpuprof__gput gpuprof__gput;

/* What every begin of a name repeats on a sequence (gpuprof__pf_fast_name). */
typedef struct gpuprof__pfname {
    uint64_t nkey;                        /* ~ the event's name id, type and flags as one word (0: none) */
    uint64_t b[2], a0;                    /* the begin's bytes after its timestamp; its frame without the delta */
    uint64_t blen;                        /* how many of b's bytes are its */
} gpuprof__pfname;

/* A thread's sequence in a Perfetto trace (the formatter's; section "Trace
   encoder, Perfetto protobuf"). */
typedef struct gpuprof__pfseq {
    uint32_t seq;                         /* its trusted_packet_sequence_id (0: none yet) */
    unsigned gen;                         /* in the output of this generation */
    int tid;                              /* the thread whose track its events default to */
    uint32_t head_len;
    char head[8];                         /* the packets' sequence id field, encoded */
    uint64_t last;                        /* ns: the incremental clock as its last event left it */
    uint32_t *iid;                        /* name id -> the sequence it was interned in */
    uint64_t *other;                      /* other names interned in this sequence (kernels, calls): a set */
    uint32_t niid, nother, cother;
    gpuprof__pfname fast[4];              /* the fast path's, by name id modulo 4: names that take turns */
} gpuprof__pfseq;

/* The device over the run (sections "The device over the run"), compiled in unless GPUPROF_NO_DEVICE. */
#if defined(GPUPROF_NO_DEVICE)
#define GPUPROF__DEVICE 0
#else
#define GPUPROF__DEVICE 1
#endif

/* Live metrics (section "Live metrics"), compiled in unless GPUPROF_NO_METRICS. */
#if defined(GPUPROF_NO_METRICS)
#define GPUPROF__METRICS 0
#else
#define GPUPROF__METRICS 1
#endif

/* CPU samples, compiled in unless GPUPROF_NO_SAMPLES (then nothing of them
   is in the object: the sections "CPU samples" are left out, a few calls
   become the no-ops of the stubs there, and GPUPROF_SAMPLE gets one line). */
#if defined(GPUPROF_NO_SAMPLES)
#define GPUPROF__SAMPLES 0
typedef struct gpuprof__smp gpuprof__smp;
#else
#define GPUPROF__SAMPLES 1
/* CPU samples (SPEC 16; section "CPU samples: the sampler"): a sampled thread's
   samples, added up by the signal handler as they come -- one slot per
   (innermost open range, call stack), its return addresses in frames[] --
   so that memory stays bounded over a run of hours. Preallocated when the
   thread is first sampled; the handler writes it, a report reads it. */
#define GPUPROF__SMP_SLOTS 4096           /* distinct (range, stack) pairs a thread keeps */
#define GPUPROF__SMP_FRAMES 65536         /* the return addresses of their stacks, all together */
#define GPUPROF__SMP_DEPTH 32             /* frames of a stack: the interrupted PC and 31 callers */
#define GPUPROF__SMP_SCAN_WORDS 64        /* without a frame chain, the stack words read above the stack pointer ... */
#define GPUPROF__SMP_SCAN_KEEP 8          /* ... and the code addresses kept of them, */
#define GPUPROF__SMP_SCANNED ((uintptr_t)1 << 62)   /* each marked so (user addresses are below 2^48) */
#define GPUPROF__SMP_RING 4096            /* a thread's samples waiting for the Perfetto trace's writer */
typedef struct gpuprof__smp_slot {
    uint64_t hash;                        /* 0: free; published last (release) */
    const struct gpuprof__node *node;     /* the innermost open range (NULL: none) */
    uint32_t at, depth;                   /* its stack: frames[at .. at + depth), the PC first */
    uint32_t gen;                         /* the code map's size when taken: its addresses are named by the objects loaded then */
    uint64_t count;
} gpuprof__smp_slot;
typedef struct gpuprof__smp {
    uintptr_t stack_lo, stack_hi;         /* the thread's stack: the frame walk stays inside it */
    uint64_t cpu0_ns;                     /* the thread's CPU time when its timer started */
    uint64_t cpu_ns;                      /* CPU time sampled so far, timers stopped since */
    uint64_t taken, lost;                 /* samples the handler took; those it had no room to keep */
    uint64_t overruns;                    /* expiries the kernel merged into one signal (si_overrun): a tick coarser than the rate, or a thread preempted */
    uint64_t gen;                         /* the thread's timer: its number + 1 (0: none) */
    int busy;                             /* the handler is in it */
    int tid;
    uintptr_t seen_sp;                    /* a thread that records no range: a stack pointer its handler saw, until the keeper
                                             finds its stack's bounds (the walk needs them) */
    uint32_t nframes;
    uint64_t ring_head, ring_tail;        /* samples for the trace: put by the handler, taken by its writer */
    uint64_t trace_lost;                  /* samples kept but left out of the trace: the ring was full, or the thread records no range */
    uint32_t map_seq;                     /* the Perfetto sequence that has the samples' mapping interned */
    uint64_t ring_ts[GPUPROF__SMP_RING];  /* a sample's time: ticks since the thread's clock base */
    uint32_t ring_slot[GPUPROF__SMP_RING];
    uint32_t slot_seq[GPUPROF__SMP_SLOTS];   /* the Perfetto sequence a slot's call stack is interned in */
    gpuprof__smp_slot slot[GPUPROF__SMP_SLOTS];
    uintptr_t frames[GPUPROF__SMP_FRAMES];
} gpuprof__smp;
#endif

typedef struct gpuprof__thread {
    struct gpuprof__thread *next;
    unsigned session;
    int tid, exited;                      /* exited: 1 its thread ended, 2 gpuprof's own (kernel capture's trace events) */
    /* The trace encoders' (sections "Trace encoder, Chrome JSON" and "...,
       Perfetto protobuf"): what formatting this thread's blocks into one
       output carries from one block to the next. A dump formats with a
       fresh one (gpuprof__fmt_save). */
    struct {
        int meta_tid;                         /* tid whose metadata it wrote last, */
        unsigned meta_gen;                    /* into the output of this generation */
        uint32_t work_name;                   /* a WORK event waiting for its range (0: none) */
        int work_rates;                       /* its range's CPU event gets rates (it has no GPU event) */
        double work_flops, work_bytes;
        int flow_tid;                         /* a FLOW waiting for its GPU event (0: none) */
        uint64_t flow_ns;                     /* its CPU range's begin */
        uint32_t flow_name;                   /* and name id */
        gpuprof__event karg[2];               /* the KA and KB records of the next kernel event */
        uint64_t step_ns;                     /* when the last step outside any range was marked (ns), */
        unsigned step_gen, step_track;        /* in the output of this generation; its Perfetto track written in that one */
        int calls_tid;                        /* the thread of the last captured CUDA call it wrote, */
        unsigned calls_gen;                   /* into the output of this generation (its track is named there) */
        gpuprof__pfseq pf;                    /* the Perfetto encoder's: its sequence's interned state */
    } fmt;
    uint32_t index;
    int fmt_tid;                          /* the formatter's, kept across outputs: the thread whose block of this */
    uint32_t fmt_index;                   /* state it encoded last, its order and name: to name that thread's */
    char fmt_label[64];                   /* track in a part that holds none of its blocks (gpuprof__trace_named) */
    char label[64];
    uint32_t depth;                       /* may exceed GPUPROF_MAX_DEPTH: those frames are not timed */
    uint64_t rec_head, rec_room;          /* the thread's: records written to rec[] (release order); rec_head == rec_room: look at rec_tail */
    gpuprof__frame stack[GPUPROF_MAX_DEPTH];
    gpuprof__node root;
    gpuprof__node **by_name;              /* name id -> node last entered under that name */
    gpuprof__node **counters;             /* name id -> counter node */
    gpuprof__node **chunks;
    uint32_t nnodes, max_nodes;           /* nnodes is published with release order */
    uint32_t nids;                        /* entries of by_name and counters: the session's max_ids */
    uint64_t base;                        /* its session's clock zero (gpuprof__clock.base): its events' times count from it */
    uint32_t snap_nodes;                  /* nnodes as a report saw it (under gpuprof__lock) */
    gpuprof__node overflow;               /* call paths beyond max_nodes */
    gpuprof__block *block;
    uint64_t dropped, marks;
    struct { uint32_t hash, id; } dyn[GPUPROF__DYN_CACHE];
    const gpuprof__name *names;           /* its session's name table (kept while threads of it run) */
    void *stream;                         /* gpuprof_set_stream(); NULL: the site's stream 0 */
    gpuprof__gput *gpu;                   /* CUDA builds: event pools and pending GPU ranges */
    gpuprof__smp *smp;                    /* CPU samples (GPUPROF_SAMPLE): NULL when not sampled */
    uintptr_t smp_timer;                  /* its POSIX timer (a timer_t), valid while smp->gen != 0 */
    uint64_t gpu_pushed;                  /* GPU records this thread has queued */
    uint64_t rec_tail;                    /* records added to the statistics, by the holder of rec_busy */
    uint64_t rec_seen;                    /* the collector's: rec_head at its last pass */
    int rec_busy;                         /* one drainer at a time: the collector, a report, the thread itself */
    gpuprof__rec rec[GPUPROF__RECS];      /* counted calls, oldest at rec_tail */
} gpuprof__thread;

/* A slow step to capture (GPUPROF_CAPTURE_SLOW): asked by GPUPROF_STEP, written by gpuprof's thread. */
typedef struct gpuprof__capture {
    uint64_t step, from, to;          /* the step; its window: the step before's start to its end (ticks from the clock base) */
    uint64_t asked;                   /* when (gpuprof__mono_ns): written 10 ms later, the step's own events recorded by then */
    double ns, median;                /* its length, the running median step of its kind then */
    int common;                       /* of the most common kind of step so far; else it ran with[] as well */
    uint32_t with[3], nwith;          /* name ids: outermost ranges its kind runs that the most common kind does not */
    int state;                        /* 0: to write, 1: written, -1: failed */
    char file[256];
} gpuprof__capture;

/* A counter's latest samples (gpuprof__vals_add): sample i is in chunk
   (i / CHUNK) % CHUNKS. The owner thread writes; a report reads. */
typedef struct gpuprof__vals {
    uint64_t n;                                   /* samples added (published after the value) */
    double *chunk[GPUPROF__VALS_CHUNKS];
} gpuprof__vals;

/* A stepping thread's range that ran in a step: its node's index, its time in the step. */
typedef struct gpuprof__ran { uint32_t index, top; double ns; } gpuprof__ran;   /* top: an outermost range */

/* A point of the run over time: consecutive counted steps, merged. */
typedef struct gpuprof__point {
    uint64_t step;                        /* its first step */
    uint32_t n;                           /* steps in it */
    double min, sum, max;                 /* their lengths (ns) */
    double ph[GPUPROF__SERIES_PH];        /* each followed range's time in them (ns) */
    uint64_t t0, t1;                      /* the first step's start, the last one's end (ns since the session's start) */
    uint32_t tn;                          /* of them, typical steps (of the most common kind when they ended) ... */
    double tsum, tph[GPUPROF__SERIES_PH]; /* ... their lengths and the followed ranges' time in them (ns): the drift's */
} gpuprof__point;

/* A step that may be an outlier: its length, its kind, and where its time went. */
typedef struct gpuprof__outlier {
    uint64_t step;
    double dur;                   /* ns */
    int kind;                     /* index in gpuprof__steps.kinds, -1: none (the table was full) */
    uint32_t n;
    gpuprof__ran *ran;            /* every range of the stepping thread's outer two levels that ran in it */
} gpuprof__outlier;

/* A kind of step: the set of the stepping thread's ranges (outer two levels)
   that ran in it. Steps that run the same ranges are of one kind, whatever
   their length: an evaluation every N steps makes a kind of its own. */
typedef struct gpuprof__kind {
    uint64_t sig;                 /* the set's signature: a sum of its nodes' hashed indexes */
    const void *thread;           /* the stepping thread whose nodes these are */
    uint32_t nset, nns;           /* nodes in the set; entries of ns */
    uint64_t steps, first[8];     /* counted steps of this kind, the first few */
    double dur;                   /* their total length (ns) */
    uint32_t *set;                /* the set's node indexes */
    double *ns;                   /* by node index: the time in the steps of this kind */
    gpuprof_stats durs;           /* its steps' lengths so far (a slow step is judged against its own kind's median) */
} gpuprof__kind;

int gpuprof__paused;

static struct {
    int state;
    unsigned session;
    unsigned live;                        /* == session while recording, else 0: the hot path's one check */
    int user_enabled, forked_child, off;
    int cuda_started, cuda_forked;        /* CUDA builds: this process called CUDA; it was forked after its parent did */
    char gpu_bus[32];                     /* CUDA builds: the device's PCI bus id as NVML takes it, from the GPU probe ("": none) */
    int nvtx_on;                          /* NVTX builds: ranges also pushed to NVTX */
    int excluding;                        /* warm-up or schedule may exclude: ranges take the slow check */
    int mem_ranges;                       /* per-range memory deltas: every range takes the slow begin */
    int phase;                            /* of the current step */
    int prev_phase;                       /* of the step before it, and when the current one began (ticks): */
    uint64_t phase_since;                 /* a range is judged by the step its outermost range began in */
    gpuprof_config cfg;                   /* with defaults applied; strings owned below */
    char *trace_path, *report, *summary_path, *process_name;
    char *host_ranges;                    /* comma-separated names (the verdict's CPU-bound ranges), or NULL */
    char *sample_folded;                  /* GPUPROF_SAMPLE_FOLDED's file, or NULL */
    char *metrics_path;                   /* GPUPROF_METRICS's file, or NULL */
    struct {                              /* roofline peaks (0: unknown) and where they came from */
        double flops, bw;
        int user_flops, user_bw;          /* set by the config or the environment: they apply to CPU times too */
        int prec;
        char flops_from[GPUPROF__PEAK_FROM], bw_from[GPUPROF__PEAK_FROM];
    } peak;
    int sched_on, sched_skip, sched_wait, sched_warmup, sched_active, sched_repeat;
    uint64_t warn_count[GPUPROF__W_COUNT];
} gpuprof__g;

/* The state of the parts of gpuprof that sections above their own read,
   one struct each, defined here so that every reader sees it. */
/* The names (section "Name registry"; NVTX's push, above it, reads them). */
static struct {
    gpuprof__name *names;
    uint32_t nnames, max_ids;
    int names_kept;                       /* the last session's table was left to running threads */
    uint32_t *name_hash;                  /* open addressing: slot -> id */
    uint32_t name_hash_mask;
} gpuprof__registry;
/* The steps (section "Steps, warm-up and the schedule"; the warnings, the
   settings, the device, the GPU backend, the samples, memory and the
   ranges read the step count and the stepping thread). */
static struct {
    uint64_t step, counted, excluded, unrecorded;
    struct gpuprof__thread *stepper;      /* the thread calling GPUPROF_STEP: its timeline is the step (under gpuprof__lock) */
    uint64_t cpu0;                        /* the stepping thread's CPU time at the last GPUPROF_STEP (0: none) */
    double cpu, wall;                     /* counted steps measured: its CPU time in them, their length (ns) */
    double runq;                          /* ... the time in them it was runnable but waited for a CPU (ns; < 0: unknown) */
    double vol, invol;                    /* ... its voluntary and involuntary context switches in them */
    uint64_t rq0, vol0, invol0;           /* those counters at the last GPUPROF_STEP */
    int runq_fd1, runq_tid;               /* the stepping thread's /proc/thread-self/schedstat: its descriptor + 1 (0: none), its tid */
    gpuprof__outlier outl[GPUPROF__OUTLIERS];   /* steps that may be outliers (judged against the final median at report time) */
    uint32_t noutl;
    int outl_full;                        /* a candidate found no room: outliers are not set apart */
    gpuprof__kind kinds[GPUPROF__KINDS];  /* the kinds of the counted steps (gpuprof__step_window) */
    uint32_t nkinds;
    gpuprof__ran *ran;                    /* the ranges that ran in the step ending now (scratch) */
    uint32_t nran_max;
    gpuprof__point *series;               /* the run over time: npoints of per_point steps each (the last filling) */
    uint32_t npoints, per_point, nph;
    uint32_t ph_node[GPUPROF__SERIES_PH], ph_name[GPUPROF__SERIES_PH];   /* followed ranges: node index, name id */
    const void *series_thread;            /* the stepping thread they are of */
    int seen;                             /* GPUPROF_STEP was called (warm-up counts steps from then) */
    uint64_t t0;                          /* the last GPUPROF_STEP's time (ticks): the current step's start */
    gpuprof_stats stats;                  /* the counted steps' lengths (ns) */
    uint64_t t0_prev;                     /* the start of the step before the one ending (ticks) */
} gpuprof__steps;
/* gpuprof's threads besides the writer: the collector and the keeper
   (checkpoints, slow-step captures; section "Checkpoints and captures"),
   which the ranges and the steps ask for captures. */
static struct {
    pthread_t collector;                  /* adds the threads' records to the statistics */
    int collector_running, collector_stop;
    pthread_t keeper;                     /* rewrites the summary every cfg.summary_every seconds (checkpoints) */
    int keeper_running, keeper_stop;
    unsigned checkpoints;                 /* checkpoints written so far (a summary says which one it is) */
    gpuprof__capture cap[GPUPROF__CAPTURES];   /* slow steps to capture (GPUPROF_CAPTURE_SLOW): asked by the step, written by the keeper */
    unsigned ncap;                        /* asked (under gpuprof__lock) */
} gpuprof__bg;
/* This process in its job: pid, rank, host, time zero (section "Ranks";
   every output reads it). */
static struct {
    int pid, rank, trace_pid;
    int local_rank, world_size, restarts; /* -1, 0 (world size unknown), -1 when no launcher says */
    const char *rank_source;              /* the variable that gave the rank; NULL: none */
    char host[256];
    uint64_t t0_realtime_ns;              /* CLOCK_REALTIME at the trace's time zero */
    int report_implicit;                  /* the report goes to stderr because nothing said otherwise */
    char *summary_pattern;                /* the summary path as set (with %r), for rank 0's line */
    char *trace_pattern;                  /* the trace's (GPUPROF_MPI: rank 0's merged trace) */
    uint64_t t_init_ns;
} gpuprof__run;


/* gpuprof__lock guards registration, steps and outputs (never the hot path
   of a range); gpuprof__trace_lock the queue of trace blocks, whose writer
   waits on gpuprof__trace_cond. */
static pthread_mutex_t gpuprof__lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t gpuprof__trace_lock = PTHREAD_MUTEX_INITIALIZER;
/* gpuprof__life_lock makes gpuprof_shutdown and gpuprof_write_trace one at a
   time (taken before gpuprof__lock): two threads shutting down at once must
   not both finish the trace. */
static pthread_mutex_t gpuprof__life_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gpuprof__trace_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t gpuprof__col_mu = PTHREAD_MUTEX_INITIALIZER;   /* the collector's sleep and stop */
static pthread_cond_t gpuprof__col_cond = PTHREAD_COND_INITIALIZER;
static __thread gpuprof__thread *gpuprof__tls;
static pthread_key_t gpuprof__tls_key;
static pthread_once_t gpuprof__once = PTHREAD_ONCE_INIT;

/* Each distinct message prints one line on stderr the first time; after
   that it is only counted (shown in the report), so a misuse in a loop
   cannot flood the output. A misuse is one message whatever names and
   numbers are in it (its format); an output, setup or GPU message is one
   per text (they name paths and settings, a few per session), up to
   GPUPROF__WARN_DISTINCT of a kind. The messages printed are remembered by
   a hash, under a lock of their own (taken by nothing else). */
#define GPUPROF__WARN_DISTINCT 8
static pthread_mutex_t gpuprof__warn_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t gpuprof__warn_seen[GPUPROF__W_COUNT][GPUPROF__WARN_DISTINCT];

/* FNV-1a: names, messages and output paths are told apart by it. */
static uint32_t gpuprof__hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h ? h : 1;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static GPUPROF__NOINLINE void gpuprof__warn(int kind, const char *fmt, ...) {
    char line[512];
    va_list ap;
    int n, k, print = 0;
    uint32_t h;
    GPUPROF__ADD(&gpuprof__g.warn_count[kind], 1);
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    if (kind == GPUPROF__W_IO || kind == GPUPROF__W_NO_GPU || kind == GPUPROF__W_DOUBLE_INIT || kind == GPUPROF__W_DEVICE) h = gpuprof__hash(line, (size_t)n);
    else h = gpuprof__hash(fmt, strlen(fmt));
    h |= 1u;                                          /* 0 marks a free slot */
    pthread_mutex_lock(&gpuprof__warn_mu);
    for (k = 0; k < GPUPROF__WARN_DISTINCT; k++) {
        if (gpuprof__warn_seen[kind][k] == h) break;
        if (gpuprof__warn_seen[kind][k] == 0) { gpuprof__warn_seen[kind][k] = h; print = 1; break; }
    }
    if (kind == GPUPROF__W_BAD_ENV) print = 1;        /* every bad setting has its line (they come once, at init) */
    pthread_mutex_unlock(&gpuprof__warn_mu);
    if (print) {                                      /* fwrite: fprintf to an unbuffered stderr takes 8 KiB of the caller's stack (glibc) */
        line[n] = '\n';
        fwrite("gpuprof: ", 1, 9, stderr);
        fwrite(line, 1, (size_t)n + 1, stderr);
        fflush(stderr);
    }
}

/* A line on stderr that is not a warning (counted nowhere): formatted
   here and written with fwrite, as gpuprof__warn's lines are. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
static void gpuprof__say(const char *fmt, ...) {
    char line[640];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    fwrite(line, 1, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, stderr);
    fflush(stderr);
}

/* At shutdown, once the outputs are written: the next session counts and
   prints afresh. */
static void gpuprof__warn_reset(void) {
    int i;
    pthread_mutex_lock(&gpuprof__warn_mu);
    for (i = 0; i < GPUPROF__W_COUNT; i++) GPUPROF__ST(&gpuprof__g.warn_count[i], (uint64_t)0);
    memset(gpuprof__warn_seen, 0, sizeof gpuprof__warn_seen);
    pthread_mutex_unlock(&gpuprof__warn_mu);
}

static void *gpuprof__alloc(size_t n) {
    void *p = GPUPROF_MALLOC(n);
    if (!p) gpuprof__warn(GPUPROF__W_NO_MEMORY, "out of memory (%lu bytes); the affected ranges or events are dropped and counted", (unsigned long)n);
    return p;
}

/* Zeroed memory. With the default allocator a large block comes as fresh
   zero pages that cost nothing until touched (a report's rows: ~17 KiB
   each, of which a range touches a page or two). */
static void *gpuprof__zalloc(size_t n) {
#ifdef GPUPROF__CALLOC
    void *p = GPUPROF__CALLOC(n);
    if (!p) gpuprof__warn(GPUPROF__W_NO_MEMORY, "out of memory (%lu bytes); the affected ranges or events are dropped and counted", (unsigned long)n);
#else
    void *p = gpuprof__alloc(n);
    if (p) memset(p, 0, n);
#endif
    return p;
}

/* An array of n_old elements of size bytes made n_new long, the new ones
   zeroed (GPUPROF_MALLOC has no realloc). NULL: out of memory, *p kept. */
static void *gpuprof__grow(void *p, size_t size, size_t n_old, size_t n_new) {
    char *q = (char *)gpuprof__zalloc(n_new * size);
    if (!q) return NULL;
    if (p && n_old) memcpy(q, p, n_old * size);
    GPUPROF_FREE(p);
    return q;
}

/* Room for one more element in an array of n (capacity *cap, doubled from
   16, the new room zeroed): the array, maybe moved; NULL, the old one
   kept, when memory is short. (inline: only CPU samples call it, which
   GPUPROF_NO_SAMPLES leaves out) */
static inline void *gpuprof__room(void *p, size_t size, uint32_t n, uint32_t *cap) {
    uint32_t c = *cap ? 2 * *cap : 16;
    if (n < *cap) return p;
    if (!(p = gpuprof__grow(p, size, n, c))) return NULL;
    *cap = c;
    return p;
}

static char *gpuprof__strdup(const char *s) {
    size_t n;
    char *p;
    if (!s) return NULL;
    n = strlen(s) + 1;
    p = (char *)gpuprof__alloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* name in ASCII lower case into low (cap bytes, cut to fit); returns its length. */
static size_t gpuprof__lower(char *low, size_t cap, const char *name) {
    size_t i, n = strlen(name);
    if (n >= cap) n = cap - 1;
    for (i = 0; i < n; i++) low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
    low[n] = 0;
    return n;
}

/* ----------------------------------------------------------------------
   Settings: the environment (GPUPROF_*) and the schedule: which phase
   a step is in (counted, warm-up, not recorded).
   ---------------------------------------------------------------------- */
/* A number from 0 to max in the variable: whole (decimal digits), or with
   fractions allowed (seconds, a ratio). Returns 1 when set and valid, 0
   when unset or not (then a line says why). */
static int gpuprof__env_parse(const char *var, int whole, double max, double *out) {
    const char *v = getenv(var);
    char *end;
    double x;
    if (!v || !*v) return 0;
    errno = 0;
    x = whole ? (double)strtol(v, &end, 10) : strtod(v, &end);
    while (*end == ' ') end++;
    if (errno || *end || !(x >= 0 && x <= max)) {
        gpuprof__warn(GPUPROF__W_BAD_ENV, "%s='%.64s' is not a %s from 0 to %.0f; ignored", var, v, whole ? "whole number" : "number", max);
        return 0;
    }
    *out = x;
    return 1;
}
static int gpuprof__env_int(const char *var, int *out) {
    double x;
    if (!gpuprof__env_parse(var, 1, 1e9, &x)) return 0;
    *out = (int)x;
    return 1;
}
static int gpuprof__env_number(const char *var, double *out) { return gpuprof__env_parse(var, 0, 1e6, out); }

/* An on/off setting: 1/0, yes/no, true/false, on/off (any case). Returns 1
   when the variable is set to one of them, 0 when unset or not understood. */
static int gpuprof__is_word(const char *v, const char *word) {    /* ASCII, any case */
    for (; *v && *word; v++, word++) if ((*v | 0x20) != *word) return 0;
    return !*v && !*word;
}

static int gpuprof__parse_flag(const char *v, int *out) {
    static const char *const on[] = { "1", "yes", "true", "on" }, *const no[] = { "0", "no", "false", "off" };
    int i;
    for (i = 0; i < 4; i++) {
        if (gpuprof__is_word(v, on[i])) { *out = 1; return 1; }
        if (gpuprof__is_word(v, no[i])) { *out = 0; return 1; }
    }
    return 0;
}

static int gpuprof__env_flag(const char *var, int *out) {
    const char *v = getenv(var);
    if (!v || !*v) return 0;
    if (gpuprof__parse_flag(v, out)) return 1;
    gpuprof__warn(GPUPROF__W_BAD_ENV, "%s='%.64s' is neither on nor off (1/0, yes/no, true/false, on/off); ignored", var, v);
    return 0;
}

/* "wait=1,warmup=1,active=3,repeat=2[,skip_first=0]"; returns 0 if valid. */
static int gpuprof__parse_schedule(const char *s) {
    int vals[5] = { 0, 0, 0, 0, 0 }, seen = 0;
    static const char *const keys[5] = { "skip_first", "wait", "warmup", "active", "repeat" };
    const char *p = s;
    while (*p) {
        int k, found = -1;
        long x;
        char *end;
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        for (k = 0; k < 5; k++) {
            size_t n = strlen(keys[k]);
            if (strncmp(p, keys[k], n) == 0 && p[n] == '=') { found = k; p += n + 1; break; }
        }
        if (found < 0 || *p < '0' || *p > '9') return -1;
        errno = 0;
        x = strtol(p, &end, 10);
        if (errno || x > 1000000000L) return -1;
        vals[found] = (int)x;
        seen |= 1 << found;
        p = end;
        if (*p && *p != ',' && *p != ' ') return -1;
    }
    if (!(seen & (1 << 3)) || vals[3] < 1) return -1;      /* active is required and >= 1 */
    gpuprof__g.sched_skip = vals[0];
    gpuprof__g.sched_wait = vals[1];
    gpuprof__g.sched_warmup = vals[2];
    gpuprof__g.sched_active = vals[3];
    gpuprof__g.sched_repeat = vals[4];
    gpuprof__g.sched_on = 1;
    return 0;
}

/* torch.profiler's schedule: skip_first steps, then cycles of wait (not
   recorded), warmup (recorded, left out of the statistics) and active
   steps, `repeat` cycles (0: forever). GPUPROF_WARMUP leaves out the first
   N steps on top of that. */
static int gpuprof__phase_of(uint64_t step) {
    int phase = GPUPROF__PHASE_COUNT;
    if (gpuprof__g.sched_on) {
        uint64_t cycle = (uint64_t)gpuprof__g.sched_wait + (uint64_t)gpuprof__g.sched_warmup + (uint64_t)gpuprof__g.sched_active, j, r;
        if (step < (uint64_t)gpuprof__g.sched_skip) return GPUPROF__PHASE_OFF;
        j = step - (uint64_t)gpuprof__g.sched_skip;
        if (gpuprof__g.sched_repeat && j / cycle >= (uint64_t)gpuprof__g.sched_repeat) return GPUPROF__PHASE_OFF;
        r = j % cycle;
        if (r < (uint64_t)gpuprof__g.sched_wait) return GPUPROF__PHASE_OFF;
        if (r < (uint64_t)gpuprof__g.sched_wait + (uint64_t)gpuprof__g.sched_warmup) phase = GPUPROF__PHASE_EXCLUDE;
    }
    /* Before the first GPUPROF_STEP the warm-up is decided per call (gpuprof__exclude). */
    if (phase == GPUPROF__PHASE_COUNT && gpuprof__steps.seen && step < (uint64_t)gpuprof__g.cfg.warmup) phase = GPUPROF__PHASE_EXCLUDE;
    return phase;
}

/* ----------------------------------------------------------------------
   Loaded libraries: a seam's entry points, bound by name
   NVML and CUPTI are loaded with dlopen when asked for, never linked (no
   build-time dependency, and a program without them runs). Each seam lists
   the entry points it calls in a table of these, and one call binds them.
   ---------------------------------------------------------------------- */
#if (GPUPROF__DEVICE && defined(__linux__)) || defined(GPUPROF_CUDA)
#include <dlfcn.h>

/* An entry point: its name, where its pointer goes in the seam's table, and
   whether gpuprof does without it. */
typedef struct gpuprof__lib_sym { const char *name; size_t off; int optional; } gpuprof__lib_sym;

/* Each of syms found in lib and stored in api (an optional one missing:
   NULL). Returns NULL, or the name of a required one missing, with api
   cleared: the caller says which library lacked it. */
static const char *gpuprof__lib_bind(void *lib, const gpuprof__lib_sym *syms, size_t n, void *api, size_t api_size) {
    size_t i;
    for (i = 0; i < n; i++) {
        void *p = dlsym(lib, syms[i].name);
        if (!p && !syms[i].optional) {
            memset(api, 0, api_size);
            return syms[i].name;
        }
        memcpy((char *)api + syms[i].off, &p, sizeof p);
    }
    return NULL;
}
#endif

/* ----------------------------------------------------------------------
   NVTX (SPEC 5): every range is also an NVTX range in gpuprof's domain
   (GPUPROF_NVTX_DOMAIN), with its name registered once, so Nsight Systems
   shows the same ranges. NVTX is header-only (from the CUDA toolkit): with
   no tool attached each call is a null-pointer check; a tool attaches
   through NVTX_INJECTION64_PATH (Nsight does; tests/nvtx_recorder.c too).
   ---------------------------------------------------------------------- */
#ifdef GPUPROF_NVTX
static nvtxDomainHandle_t gpuprof__nvtx_domain;
static char gpuprof__nvtx_domain_name[64];

static void gpuprof__nvtx_name(gpuprof__name *nm, const char *text) {
    nvtxStringHandle_t h = gpuprof__nvtx_domain ? nvtxDomainRegisterStringA(gpuprof__nvtx_domain, text) : NULL;
    memset(&nm->nvtx, 0, sizeof nm->nvtx);
    nm->nvtx.version = NVTX_VERSION;
    nm->nvtx.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    if (h) { nm->nvtx.messageType = NVTX_MESSAGE_TYPE_REGISTERED; nm->nvtx.message.registered = h; }
    else { nm->nvtx.messageType = NVTX_MESSAGE_TYPE_ASCII; nm->nvtx.message.ascii = text; }
}

/* At init: NVTX on unless the config or GPUPROF_NVTX=0 says not; the domain
   is made once per name (a session asking for another one gets it). */
static void gpuprof__nvtx_open(const gpuprof_config *cfg, int off) {
    GPUPROF__ST(&gpuprof__g.nvtx_on, !cfg->no_nvtx && !off);
    if (!cfg->no_nvtx && !off) {
        const char *dn = cfg->nvtx_domain && *cfg->nvtx_domain ? cfg->nvtx_domain : "gpuprof";
        if (!gpuprof__nvtx_domain || strncmp(gpuprof__nvtx_domain_name, dn, sizeof gpuprof__nvtx_domain_name - 1) != 0) {
            snprintf(gpuprof__nvtx_domain_name, sizeof gpuprof__nvtx_domain_name, "%s", dn);
            gpuprof__nvtx_domain = nvtxDomainCreateA(gpuprof__nvtx_domain_name);
        }
    }
}

#define GPUPROF__NVTX_PUSH(f, id) do { if (GPUPROF__LD(&gpuprof__g.nvtx_on)) { \
    nvtxDomainRangePushEx(gpuprof__nvtx_domain, &gpuprof__registry.names[id].nvtx); (f)->flags |= GPUPROF__F_NVTX; } } while (0)
#define GPUPROF__NVTX_POP(f) do { if ((f)->flags & GPUPROF__F_NVTX) nvtxDomainRangePop(gpuprof__nvtx_domain); } while (0)
#else
#define gpuprof__nvtx_open(cfg, off) ((void)(cfg), (void)(off))
#define GPUPROF__NVTX_PUSH(f, id) ((void)0)
#define GPUPROF__NVTX_POP(f) ((void)0)
#endif

/* ----------------------------------------------------------------------
   Name registry: every distinct name gets a small id once; ranges with a
   literal name keep it in their call-site record.
   ---------------------------------------------------------------------- */
/* The length of the valid UTF-8 sequence at s (n bytes left) and its code
   point, or 0 for a byte that does not start one (stray continuation,
   overlong form, surrogate, beyond U+10FFFF, cut short). */
static size_t gpuprof__utf8(const char *s, size_t n, uint32_t *cp) {
    unsigned char c = (unsigned char)s[0];
    size_t len = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0, k;
    uint32_t v = len == 1 ? c : len == 4 ? (c & 7u) : len == 3 ? (c & 15u) : (c & 31u);
    if (!len || len > n || c > 0xf4) return 0;
    for (k = 1; k < len; k++) {
        unsigned char cc = (unsigned char)s[k];
        if ((cc & 0xc0) != 0x80) return 0;
        v = (v << 6) | (cc & 63u);
    }
    if ((len == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) || (len == 4 && (v < 0x10000 || v > 0x10ffff))) return 0;
    *cp = v;
    return len;
}

/* JSON string for any bytes: escapes quotes, backslashes and control
   characters, and turns bytes that are not valid UTF-8 into U+FFFD. */
static size_t gpuprof__json_escape(char *out, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    size_t i = 0, o = 0, len;
    uint32_t cp;
    out[o++] = '"';
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { out[o++] = '\\'; out[o++] = (char)c; i++; }
        else if (c == '\n') { out[o++] = '\\'; out[o++] = 'n'; i++; }
        else if (c == '\t') { out[o++] = '\\'; out[o++] = 't'; i++; }
        else if (c < 0x20 || c == 0x7f) {
            out[o++] = '\\'; out[o++] = 'u'; out[o++] = '0'; out[o++] = '0';
            out[o++] = hex[c >> 4]; out[o++] = hex[c & 15];
            i++;
        } else if ((len = gpuprof__utf8(s + i, n - i, &cp)) != 0) { memcpy(out + o, s + i, len); o += len; i += len; }
        else { memcpy(out + o, "\\ufffd", 6); o += 6; i++; }
    }
    out[o++] = '"';
    out[o] = 0;
    return o;
}

/* Under gpuprof__lock. Returns the id of `s` (n bytes), adding it if new. */
static uint32_t gpuprof__name_lookup(const char *s, size_t n) {
    uint32_t h = gpuprof__hash(s, n), slot, id;
    gpuprof__name *nm;
    char *text, *json;
    if (!gpuprof__registry.names) return GPUPROF__ID_OTHER;
    for (slot = h & gpuprof__registry.name_hash_mask;; slot = (slot + 1) & gpuprof__registry.name_hash_mask) {
        id = gpuprof__registry.name_hash[slot];
        if (!id) break;
        nm = &gpuprof__registry.names[id];
        if (nm->hash == h && nm->len == n && memcmp(nm->text, s, n) == 0) return id;
    }
    if (gpuprof__registry.nnames >= gpuprof__registry.max_ids) {
        gpuprof__warn(GPUPROF__W_NAMES_FULL, "more than %d distinct names; the rest are counted together as \"[other names]\" (raise gpuprof_config.max_names)",
                      gpuprof__g.cfg.max_names);
        return GPUPROF__ID_OTHER;
    }
    text = (char *)gpuprof__alloc(n + 1);
    json = (char *)gpuprof__alloc(n * 6 + 3 + GPUPROF__JSON_PAD);   /* padded: the trace writer copies short names whole */
    if (!text || !json) { GPUPROF_FREE(text); GPUPROF_FREE(json); return GPUPROF__ID_OTHER; }
    memcpy(text, s, n);
    text[n] = 0;
    id = gpuprof__registry.nnames;
    nm = &gpuprof__registry.names[id];
    nm->json_len = (uint32_t)gpuprof__json_escape(json, s, n);
#ifdef GPUPROF_NVTX
    gpuprof__nvtx_name(nm, text);
#endif
    nm->text = text;
    nm->json = json;
    nm->len = (uint32_t)n;
    nm->hash = h;
    GPUPROF__STR(&gpuprof__registry.nnames, id + 1);   /* the writer thread reads names up to nnames */
    gpuprof__registry.name_hash[slot] = id;
    return id;
}

/* Checks a user's name, then looks it up (takes the lock). */
static uint32_t gpuprof__intern(const char *name) {
    size_t n;
    uint32_t id;
    if (!name || !*name) {
        gpuprof__warn(GPUPROF__W_BAD_NAME, "a range, counter or mark was given %s name; it is recorded as \"%s\" (pass a non-empty string)",
                      name ? "an empty" : "a NULL", name ? "(empty)" : "(null)");
        name = name ? "(empty)" : "(null)";
    }
    n = strlen(name);
    if (n > GPUPROF_NAME_MAX) {
        gpuprof__warn(GPUPROF__W_LONG_NAME, "a name of %lu bytes was cut to %d bytes (GPUPROF_NAME_MAX)", (unsigned long)n, GPUPROF_NAME_MAX);
        n = GPUPROF_NAME_MAX;
    }
    pthread_mutex_lock(&gpuprof__lock);
    id = gpuprof__name_lookup(name, n);
    pthread_mutex_unlock(&gpuprof__lock);
    return id;
}

/* A call site caches its name id with the session it belongs to: names are
   registered afresh in each session (init after shutdown), so an id from an
   earlier session is looked up again. */
/* "[other names]" because memory ran out (not because of the cap): worth
   trying again at the next call rather than remembering. */
static int gpuprof__id_transient(uint32_t id) {
    return id == GPUPROF__ID_OTHER && GPUPROF__LD(&gpuprof__registry.nnames) < gpuprof__registry.max_ids;
}

static inline uint32_t gpuprof__site_id(gpuprof_site *site, unsigned session) {
    uint64_t v = GPUPROF__LDA(&site->id);
    if (GPUPROF__UNLIKELY((uint32_t)(v >> 32) != session)) {
        uint32_t id = gpuprof__intern(site->name);
        if (gpuprof__id_transient(id)) return id;
        v = (uint64_t)session << 32 | id;
        GPUPROF__STR(&site->id, v);
    }
    return (uint32_t)v;
}

/* ----------------------------------------------------------------------
   Per-thread state: a stack of open ranges, a call tree of nodes with their
   statistics, and the current trace block. Only its own thread writes it.
   ---------------------------------------------------------------------- */
/* The session's threads (joined in section "Threads joining and leaving a session"). */
static struct {
    gpuprof__thread *threads, *retired;
    uint32_t nthreads;
} gpuprof__threads;

static void gpuprof__node_init(gpuprof__node *n, gpuprof__node *parent, uint32_t name_id, uint32_t index) {
    memset(n, 0, offsetof(gpuprof__node, stats));
    gpuprof_stats_init(&n->stats);
    n->parent = parent;
    n->name_id = name_id;
    n->index = index;
}

/* A counter's exact samples (gpuprof__vals). Adding one allocates only for
   a counter's first sample and once per GPUPROF__VALS_CHUNK of its first
   64 x 1024; out of memory, the counter's quantiles fall back to its
   histogram (the report says so). */
static void gpuprof__vals_free(gpuprof__vals *v) {
    int i;
    if (!v) return;
    for (i = 0; i < GPUPROF__VALS_CHUNKS; i++) GPUPROF_FREE(v->chunk[i]);
    GPUPROF_FREE(v);
}
static void gpuprof__vals_add(gpuprof__node *n, double value) {
    gpuprof__vals *v = n->vals;
    uint64_t i;
    double *c;
    if (!v) {
        v = (gpuprof__vals *)gpuprof__zalloc(sizeof *v);
        if (!v) return;
        GPUPROF__STR(&n->vals, v);
    }
    i = GPUPROF__LD(&v->n);
    c = v->chunk[(i / GPUPROF__VALS_CHUNK) % GPUPROF__VALS_CHUNKS];
    if (!c) {
        if (!(c = (double *)gpuprof__alloc(GPUPROF__VALS_CHUNK * sizeof *c))) return;
        GPUPROF__STR(&v->chunk[(i / GPUPROF__VALS_CHUNK) % GPUPROF__VALS_CHUNKS], c);
    }
    gpuprof__std(&c[i % GPUPROF__VALS_CHUNK], value);
    GPUPROF__STR(&v->n, i + 1);
}

/* This thread's id and a label for its trace track. */
/* glibc says what its headers declared (__USE_MISC, __USE_GNU): whether
   _GNU_SOURCE came before the first system header, not whether it is
   defined now (a CUDA header included before gpuprof.h comes first). */
#if defined(__GLIBC__) ? defined(__USE_MISC) : (defined(_DEFAULT_SOURCE) || defined(_GNU_SOURCE))
#define GPUPROF__HAVE_SYSCALL 1
#endif
#if defined(__GLIBC__) && defined(__USE_GNU)
#define GPUPROF__HAVE_GETNAME 1
#endif
/* gpuprof's own threads (the keeper, the trace writer, the collector, the
   NVML reader) say so as they start: the sampler leaves them out. A ring:
   a tid of one that ended may come back as a program's thread, and is
   then left out until 32 more have started. */
static int gpuprof__own_tids[32];
static unsigned gpuprof__nown;
static void gpuprof__thread_identity(int *tid, char *label, size_t n);
static void gpuprof__own_thread(void) {
    int tid;
    char label[64];
    gpuprof__thread_identity(&tid, label, sizeof label);
    GPUPROF__ST(&gpuprof__own_tids[GPUPROF__ADD(&gpuprof__nown, 1u) % 32u], tid);
}
static inline int gpuprof__is_own_tid(int tid) {   /* (inline: a build without the sampler does not call it) */
    unsigned i;
    for (i = 0; i < 32; i++) if (GPUPROF__LD(&gpuprof__own_tids[i]) == tid) return 1;
    return 0;
}

/* One of gpuprof's threads started with the asynchronous signals blocked
   (it inherits the mask): a program's signals go to the program's threads,
   and the sampler, which leaves out a thread blocking its signal, never
   takes one for the program's even before it has said it is gpuprof's
   (gpuprof__own_thread). pthread_create's result. */
#include <signal.h>
static int gpuprof__spawn(pthread_t *th, void *(*fn)(void *)) {
#if defined(SIG_BLOCK) && defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 199309L
    static const int sync_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS };
    sigset_t all, old;
    unsigned i;
    int rc;
    sigfillset(&all);
    for (i = 0; i < sizeof sync_signals / sizeof sync_signals[0]; i++) sigdelset(&all, sync_signals[i]);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(th, NULL, fn, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
#else
    return pthread_create(th, NULL, fn, NULL);
#endif
}

static void gpuprof__thread_identity(int *tid, char *label, size_t n) {
#if defined(SYS_gettid) && defined(GPUPROF__HAVE_SYSCALL)
    *tid = (int)syscall(SYS_gettid);
#else
    /* A strict C mode hides syscall(): the kernel's thread id from /proc. */
    FILE *f = fopen("/proc/thread-self/stat", "r");
    if (!f || fscanf(f, "%d", tid) != 1) *tid = (int)getpid() + (int)GPUPROF__LD(&gpuprof__threads.nthreads);
    if (f) fclose(f);
#endif
    if (*tid == getpid()) snprintf(label, n, "main thread");
    else {
        char name[32] = "";
#if defined(__linux__) && defined(PR_GET_NAME)
        if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0) name[0] = 0;    /* the calling thread's name, in any C mode */
        name[sizeof name - 1] = 0;
#elif defined(GPUPROF__HAVE_GETNAME)
        pthread_getname_np(pthread_self(), name, sizeof name);
#endif
        snprintf(label, n, "thread %d%s%s", *tid, name[0] ? " " : "", name);
    }
}

/* A thread state, not yet in the session's list, sized for a session's
   ids and call paths (read under gpuprof__lock). */
static gpuprof__thread *gpuprof__thread_alloc(int tid, const char *label, uint32_t ids, int max_nodes) {
    gpuprof__thread *t = (gpuprof__thread *)gpuprof__alloc(sizeof *t);
    uint32_t nchunks = ((uint32_t)max_nodes + GPUPROF__NODE_CHUNK - 1) / GPUPROF__NODE_CHUNK;
    if (!t) return NULL;
    memset(t, 0, offsetof(gpuprof__thread, root));
    memset(&t->by_name, 0, sizeof *t - offsetof(gpuprof__thread, by_name));
    gpuprof__node_init(&t->root, NULL, 0, (uint32_t)-1);
    gpuprof__node_init(&t->overflow, &t->root, GPUPROF__ID_OTHER, (uint32_t)-2);
    t->by_name = (gpuprof__node **)gpuprof__alloc(ids * sizeof *t->by_name);
    t->counters = (gpuprof__node **)gpuprof__alloc(ids * sizeof *t->counters);
    t->chunks = (gpuprof__node **)gpuprof__alloc(nchunks * sizeof *t->chunks);
    if (!t->by_name || !t->counters || !t->chunks) {
        GPUPROF_FREE(t->by_name); GPUPROF_FREE(t->counters); GPUPROF_FREE(t->chunks); GPUPROF_FREE(t);
        return NULL;
    }
    memset(t->by_name, 0, ids * sizeof *t->by_name);
    memset(t->counters, 0, ids * sizeof *t->counters);
    memset(t->chunks, 0, nchunks * sizeof *t->chunks);
    t->max_nodes = nchunks * GPUPROF__NODE_CHUNK;
    t->nids = ids;
    t->tid = tid;
    snprintf(t->label, sizeof t->label, "%s", label);
    return t;
}

/* The child of `parent` named `id`, created on first use. */
static GPUPROF__NOINLINE gpuprof__node *gpuprof__child(gpuprof__thread *t, gpuprof__node *parent, uint32_t id) {
    gpuprof__node *n;
    uint32_t i = t->nnodes;
    for (n = parent->first_child; n; n = n->next_sibling)
        if (n->name_id == id) { t->by_name[id] = n; return n; }
    if (i >= t->max_nodes) {
        gpuprof__warn(GPUPROF__W_PATHS_FULL, "a thread entered more than %u distinct call paths; the rest are counted as \"[other names]\" (raise gpuprof_config.max_nodes)", t->max_nodes);
        return &t->overflow;
    }
    if (i % GPUPROF__NODE_CHUNK == 0) {
        gpuprof__node *c = (gpuprof__node *)gpuprof__alloc(GPUPROF__NODE_CHUNK * sizeof *c);
        if (!c) return &t->overflow;
        t->chunks[i / GPUPROF__NODE_CHUNK] = c;
    }
    n = &t->chunks[i / GPUPROF__NODE_CHUNK][i % GPUPROF__NODE_CHUNK];
    gpuprof__node_init(n, parent, id, i);
    n->next_sibling = parent->first_child;
    parent->first_child = n;
    GPUPROF__STR(&t->nnodes, i + 1);       /* a report may now read it */
    t->by_name[id] = n;
    return n;
}

static gpuprof__node *gpuprof__node_at(gpuprof__thread *t, uint32_t i) {
    return &t->chunks[i / GPUPROF__NODE_CHUNK][i % GPUPROF__NODE_CHUNK];
}

/* ----------------------------------------------------------------------
   Trace buffers: each thread fills a block of events. A full block goes to
   the writer thread (a streamed trace) or onto the flight recorder's ring
   (no trace file: the latest blocks are kept for gpuprof_write_trace, the
   oldest leave it), and the recorder takes an empty one. When none is free
   the recorder drops the event (counted) instead of waiting.
   ---------------------------------------------------------------------- */
/* The trace: its blocks, the writer, the file, the flight recorder (this
   section to "Trace sinks"). */
static struct {
    int on, mode, finished;
    gpuprof__tout out;                    /* the streamed file (mode STREAM) */
    unsigned out_gen;                     /* generations of outputs: metadata written per output */
    unsigned nparts;                      /* the streamed trace's parts so far (GPUPROF_TRACE_MAX_MB; 1: one file) */
    double part_bpe;                      /* the most bytes per event a block of the stream took (a part ends before crossing) */
    uint64_t part_head;                   /* the current part's bytes at its start (its opening) */
    uint64_t parts_events;                /* events in the parts before the current one */
    char part_path[4200];                 /* the current part's path (from the second on) */
    char part_next[4200];                 /* the next part's name, then the oldest's (gpuprof__trace_rotate's, under the trace's lock) */
    uint32_t pf_seqs;                     /* Perfetto sequence ids given so far */
    pthread_t writer;
    int writer_running, writer_stop;
    int fmt_hold, writer_busy;            /* holders (a write_trace formatting, a report counting): the writer waits (under trace_lock) */
    gpuprof__block *queue_head, *queue_tail, *free_blocks;
    uint32_t queue_len;                   /* blocks queued for the writer (under trace_lock) */
    uint32_t blocks_allocated, blocks_max, free_count;
    uint64_t dropped_io;
    /* the flight recorder (mode RING): blocks in the order handed over */
    gpuprof__block *ring_head, *ring_tail;
    uint32_t ring_blocks, ring_max;
    int keep_written;                     /* a streamed trace's written blocks stay in the ring (slow-step captures read it) */
    int dumping;                          /* a write_trace reads the ring: nothing leaves it */
    uint64_t ring_fell_out, ring_from_ns; /* events that left it; the latest hand-over among their blocks */
    char *wbuf;
} gpuprof__trace;

static void gpuprof__ring_evict(void) {     /* under trace_lock: the oldest block of the ring is freed */
    gpuprof__block *b = gpuprof__trace.ring_head;
    gpuprof__trace.ring_head = b->next;
    if (!gpuprof__trace.ring_head) gpuprof__trace.ring_tail = NULL;
    gpuprof__trace.ring_blocks--;
    GPUPROF__ST(&gpuprof__trace.ring_fell_out, gpuprof__trace.ring_fell_out + (b->count - b->aux));
    if (b->sealed_ns > gpuprof__trace.ring_from_ns) GPUPROF__ST(&gpuprof__trace.ring_from_ns, b->sealed_ns);
    b->next = gpuprof__trace.free_blocks;
    gpuprof__trace.free_blocks = b;
    GPUPROF__ST(&gpuprof__trace.free_count, gpuprof__trace.free_count + 1);
}

/* Under trace_lock: a block its recorder is done with. */
static void gpuprof__trace_enqueue(gpuprof__block *b) {
    b->next = NULL;
    if (gpuprof__trace.mode == GPUPROF__TRACE_RING) {
        b->sealed_ns = gpuprof__ticks_to_ns(gpuprof__ticks() - GPUPROF__LD(&gpuprof__clock.base));
        if (gpuprof__trace.ring_tail) gpuprof__trace.ring_tail->next = b;
        else gpuprof__trace.ring_head = b;
        gpuprof__trace.ring_tail = b;
        gpuprof__trace.ring_blocks++;
        while (gpuprof__trace.ring_blocks > gpuprof__trace.ring_max && !gpuprof__trace.dumping) gpuprof__ring_evict();
        return;
    }
    if (gpuprof__trace.queue_tail) gpuprof__trace.queue_tail->next = b;
    else gpuprof__trace.queue_head = b;
    gpuprof__trace.queue_tail = b;
    /* The writer, once woken, goes on while blocks are queued; waking it for
       every block would cost both threads a sleep and a wake-up per block:
       it is woken when 8 are queued, or an eighth of the blocks (recorders
       would soon have none), or at its once-a-second round. */
    if (++gpuprof__trace.queue_len >= 8 || gpuprof__trace.queue_len * 8 >= gpuprof__trace.blocks_max) pthread_cond_signal(&gpuprof__trace_cond);
}

static GPUPROF__NOINLINE gpuprof__block *gpuprof__trace_swap(gpuprof__thread *t) {
    gpuprof__block *b = t->block, *nb = NULL;
    /* Nothing to hand over and no block free: drop without taking the lock,
       so a thread outrunning the writer does not also fight it for the lock. */
    if (!b && !GPUPROF__LD(&gpuprof__trace.free_count) && GPUPROF__LD(&gpuprof__trace.blocks_allocated) >= GPUPROF__LD(&gpuprof__trace.blocks_max) &&
        GPUPROF__LD(&gpuprof__trace.mode) != GPUPROF__TRACE_RING) return NULL;
    pthread_mutex_lock(&gpuprof__trace_lock);
    if (t->session != GPUPROF__LD(&gpuprof__g.session) || !gpuprof__trace.on) {
        if (b) b->count = b->done = b->aux = 0;     /* an old session's block: keep it, empty */
        pthread_mutex_unlock(&gpuprof__trace_lock);
        return NULL;
    }
    if (b && b->count) { t->block = NULL; gpuprof__trace_enqueue(b); b = NULL; }
    /* The flight recorder with every spare block in other threads' hands:
       its oldest block is reused (more threads than spare blocks). */
    if (!b && !gpuprof__trace.free_blocks && gpuprof__trace.blocks_allocated >= gpuprof__trace.blocks_max &&
        gpuprof__trace.mode == GPUPROF__TRACE_RING && gpuprof__trace.ring_head && !gpuprof__trace.dumping)
        gpuprof__ring_evict();
    if (b) nb = b;
    else if (gpuprof__trace.free_blocks) {
        nb = gpuprof__trace.free_blocks;
        gpuprof__trace.free_blocks = nb->next;
        GPUPROF__ST(&gpuprof__trace.free_count, gpuprof__trace.free_count - 1);
    } else if (gpuprof__trace.blocks_allocated < gpuprof__trace.blocks_max ||
               (gpuprof__trace.mode == GPUPROF__TRACE_RING && !gpuprof__trace.ring_head)) {
        /* the flight recorder with every block in a thread's hands: one more (a block per thread) */
        nb = (gpuprof__block *)gpuprof__alloc(sizeof *nb);
        if (nb) GPUPROF__ST(&gpuprof__trace.blocks_allocated, gpuprof__trace.blocks_allocated + 1);
    }
    if (nb) {
        nb->count = nb->done = nb->aux = 0;
        nb->owner = t;
        nb->tid = t->tid;
        nb->sort_index = t->index;
        memcpy(nb->label, t->label, sizeof nb->label);
    }
    t->block = nb;
    pthread_mutex_unlock(&gpuprof__trace_lock);
    if (!nb) {
        if (gpuprof__trace.mode == GPUPROF__TRACE_RING)
            gpuprof__warn(GPUPROF__W_DROPPED, "the flight recorder's spare blocks ran out while gpuprof_write_trace read it, so some trace events are dropped (statistics are complete)");
        else
            gpuprof__warn(GPUPROF__W_DROPPED, "trace events are produced faster than they are written, so some are dropped (statistics are complete); raise gpuprof_config.trace_buffer_mb (now %d)",
                          gpuprof__g.cfg.trace_buffer_mb);
    }
    return nb;
}

GPUPROF__INLINE void gpuprof__trace_put(gpuprof__thread *t, int type, uint32_t name_id, int flags, uint64_t ts, uint64_t u) {
    gpuprof__block *b = t->block;
    gpuprof__event *e;
    if (GPUPROF__UNLIKELY(!b || b->count == GPUPROF__BLOCK_EVENTS)) {
        b = gpuprof__trace_swap(t);
        if (!b) { GPUPROF__ST(&t->dropped, GPUPROF__LD(&t->dropped) + 1); return; }
    }
    e = &b->ev[b->count];
    e->ts = ts;
    e->u.dur_ns = u;
    e->name_id = name_id;
    e->type = (uint16_t)type;
    e->flags = (uint16_t)flags;
    GPUPROF__STR(&b->count, b->count + 1);  /* published: a formatter may read it from another thread */
}

/* A record that is not an event of its own (WORK, FLOW): the next event it
   belongs to follows it in the same thread's blocks. */
static void gpuprof__trace_aux(gpuprof__thread *t, int type, uint32_t name_id, int flags, uint64_t ts, uint64_t u) {
    uint64_t dropped = t->dropped;
    gpuprof__trace_put(t, type, name_id, flags, ts, u);
    if (t->dropped == dropped) t->block->aux++;
}

/* GPUPROF_RANGE_WORK: the work of the range event put next, for its args. */
static void gpuprof__trace_work(gpuprof__thread *t, uint32_t name_id, double flops, double bytes, int flags) {
    uint64_t f, b;
    memcpy(&f, &flops, sizeof f);
    memcpy(&b, &bytes, sizeof b);
    gpuprof__trace_aux(t, GPUPROF__EV_WORK, name_id, flags, b, f);
}

/* Hands this thread's partly filled block to the writer (or the ring). */
static void gpuprof__trace_handoff(gpuprof__thread *t) {
    if (!t || !t->block || !t->block->count) return;
    pthread_mutex_lock(&gpuprof__trace_lock);
    if (t->session == GPUPROF__LD(&gpuprof__g.session) && gpuprof__trace.on) {
        gpuprof__trace_enqueue(t->block);
        t->block = NULL;
    }
    pthread_mutex_unlock(&gpuprof__trace_lock);
}


/* ----------------------------------------------------------------------
   The device: NVML and its reader -- the device over the run (SPEC 17)
   NVML (the driver's libnvidia-ml.so.1, loaded with dlopen: no build-time
   dependency, any build) is read by a thread of gpuprof's own (the reader,
   which a call that never returns may block, and nothing else) every
   GPUPROF_DEVICE_EVERY_MS, never by a recording thread: utilization, clocks,
   power, temperature, the clock-event (throttle) reasons, memory used and,
   on GPUs with GPM (Hopper on), measured SM, tensor and DRAM activity. Each
   sample goes to the trace (counter tracks of a thread state of gpuprof's
   own), to each counter's totals and exact value table (its quantiles), to
   a bounded series over the run (neighbours merge when full), and to the
   outermost range open on the stepping thread then (per phase). A call that
   fails drops its counters with one line; a lost GPU stops the sampling.
   ---------------------------------------------------------------------- */
#if GPUPROF__DEVICE
#if defined(__linux__)
#define GPUPROF__NVML 1                  /* dlopen: section "Loaded libraries" */
#else
#define GPUPROF__NVML 0
#endif

/* NVML's numbers (nvml.h): return codes, clock types, GPM. */
enum { GPUPROF__NVML_OK = 0, GPUPROF__NVML_NOT_SUPPORTED = 3, GPUPROF__NVML_NO_PERMISSION = 4, GPUPROF__NVML_DRIVER_NOT_LOADED = 9,
       GPUPROF__NVML_LIB_NOT_FOUND = 12, GPUPROF__NVML_GPU_LOST = 15 };
enum { GPUPROF__NVML_CLOCK_SM = 1, GPUPROF__NVML_CLOCK_MEM = 2 };
#define GPUPROF__GPM_METRIC_MAX 477       /* nvmlGpmMetricsGet_t's metrics[] in nvml.h 13.4 (older ones are shorter) */
#define GPUPROF__GPM_GAP_NS 100000000ull  /* two GPM samples at least 100 ms apart, as nvml.h asks */
typedef struct { unsigned gpu, memory; } gpuprof__nvml_util;
typedef struct { unsigned long long total, free, used; } gpuprof__nvml_mem;
typedef struct { unsigned version; int sensor; int temperature; } gpuprof__nvml_temp;
typedef struct { unsigned version, supported; } gpuprof__nvml_gpm_support;
typedef struct {
    unsigned id;
    int ret;
    double value;
    const char *short_name, *long_name, *unit;
} gpuprof__nvml_gpm_metric;
typedef struct {
    unsigned version, count;
    void *sample1, *sample2;
    gpuprof__nvml_gpm_metric metric[GPUPROF__GPM_METRIC_MAX];
} gpuprof__nvml_gpm_get;

/* The NVML seam: every entry point gpuprof calls, found by dlsym. The
   driver's library and tests/simnvml export them. */
typedef struct gpuprof__nvml_api {
    int (*Init_v2)(void);
    int (*Shutdown)(void);
    const char *(*ErrorString)(int);
    int (*DeviceGetCount_v2)(unsigned *);
    int (*DeviceGetHandleByIndex_v2)(unsigned, void **);
    int (*DeviceGetHandleByPciBusId_v2)(const char *, void **);
    int (*DeviceGetIndex)(void *, unsigned *);
    int (*DeviceGetName)(void *, char *, unsigned);
    int (*DeviceGetUtilizationRates)(void *, gpuprof__nvml_util *);
    int (*DeviceGetClockInfo)(void *, int, unsigned *);
    int (*DeviceGetMaxClockInfo)(void *, int, unsigned *);
    int (*DeviceGetPowerUsage)(void *, unsigned *);
    int (*DeviceGetEnforcedPowerLimit)(void *, unsigned *);
    int (*DeviceGetTemperatureV)(void *, gpuprof__nvml_temp *);
    int (*DeviceGetTemperature)(void *, int, unsigned *);
    int (*DeviceGetCurrentClocksEventReasons)(void *, unsigned long long *);
    int (*DeviceGetCurrentClocksThrottleReasons)(void *, unsigned long long *);
    int (*DeviceGetMemoryInfo)(void *, gpuprof__nvml_mem *);
    int (*GpmQueryDeviceSupport)(void *, gpuprof__nvml_gpm_support *);
    int (*GpmSampleAlloc)(void **);
    int (*GpmSampleFree)(void *);
    int (*GpmSampleGet)(void *, void *);
    int (*GpmMetricsGet)(gpuprof__nvml_gpm_get *);
} gpuprof__nvml_api;
static const gpuprof__lib_sym gpuprof__nvml_syms[] = {
#define GPUPROF__NVML_SYM(f, opt) { "nvml" #f, offsetof(gpuprof__nvml_api, f), opt }
    GPUPROF__NVML_SYM(Init_v2, 0), GPUPROF__NVML_SYM(Shutdown, 0), GPUPROF__NVML_SYM(ErrorString, 1),
    GPUPROF__NVML_SYM(DeviceGetCount_v2, 0), GPUPROF__NVML_SYM(DeviceGetHandleByIndex_v2, 0),
    GPUPROF__NVML_SYM(DeviceGetHandleByPciBusId_v2, 1), GPUPROF__NVML_SYM(DeviceGetIndex, 1), GPUPROF__NVML_SYM(DeviceGetName, 1),
    GPUPROF__NVML_SYM(DeviceGetUtilizationRates, 1), GPUPROF__NVML_SYM(DeviceGetClockInfo, 1), GPUPROF__NVML_SYM(DeviceGetMaxClockInfo, 1),
    GPUPROF__NVML_SYM(DeviceGetPowerUsage, 1), GPUPROF__NVML_SYM(DeviceGetEnforcedPowerLimit, 1),
    GPUPROF__NVML_SYM(DeviceGetTemperatureV, 1), GPUPROF__NVML_SYM(DeviceGetTemperature, 1),
    GPUPROF__NVML_SYM(DeviceGetCurrentClocksEventReasons, 1), GPUPROF__NVML_SYM(DeviceGetCurrentClocksThrottleReasons, 1),
    GPUPROF__NVML_SYM(DeviceGetMemoryInfo, 1), GPUPROF__NVML_SYM(GpmQueryDeviceSupport, 1), GPUPROF__NVML_SYM(GpmSampleAlloc, 1),
    GPUPROF__NVML_SYM(GpmSampleFree, 1), GPUPROF__NVML_SYM(GpmSampleGet, 1), GPUPROF__NVML_SYM(GpmMetricsGet, 1)
#undef GPUPROF__NVML_SYM
};

/* The counters, in the order of the report: name, unit, the call reading
   it, GPM metric id (0: not GPM), utilization (per phase in the report), and
   its live metric: name (gpuprof_device_...) and the factor from the unit to
   the metric's (SI: ratios, hertz, bytes). */
enum { GPUPROF__DEV_UTIL, GPUPROF__DEV_MEMUTIL, GPUPROF__DEV_SMCLK, GPUPROF__DEV_MEMCLK, GPUPROF__DEV_POWER, GPUPROF__DEV_PLIMIT,
       GPUPROF__DEV_TEMP, GPUPROF__DEV_MEMUSED, GPUPROF__DEV_SMACT, GPUPROF__DEV_SMOCC, GPUPROF__DEV_TENSOR, GPUPROF__DEV_DRAM,
       GPUPROF__DEV_FP32, GPUPROF__DEV_FP16, GPUPROF__DEV_PCIE_TX, GPUPROF__DEV_PCIE_RX, GPUPROF__DEV_NVL_RX, GPUPROF__DEV_NVL_TX,
       GPUPROF__DEV_N, GPUPROF__DEV_FIRST_GPM = GPUPROF__DEV_SMACT };
static const struct { const char *name, *unit, *call; unsigned gpm; int util; const char *metric; double si; } gpuprof__dev_info[GPUPROF__DEV_N] = {
    { "utilization", "%", "nvmlDeviceGetUtilizationRates", 0, 1, "utilization_ratio", 0.01 },
    { "memory utilization", "%", "nvmlDeviceGetUtilizationRates", 0, 1, "memory_utilization_ratio", 0.01 },
    { "SM clock", "MHz", "nvmlDeviceGetClockInfo", 0, 0, "sm_clock_hertz", 1e6 },
    { "memory clock", "MHz", "nvmlDeviceGetClockInfo", 0, 0, "memory_clock_hertz", 1e6 },
    { "power", "W", "nvmlDeviceGetPowerUsage", 0, 0, "power_watts", 1 },
    { "power limit", "W", "nvmlDeviceGetEnforcedPowerLimit", 0, 0, "power_limit_watts", 1 },
    { "temperature", "C", "nvmlDeviceGetTemperatureV", 0, 0, "temperature_celsius", 1 },
    { "memory used", "MiB", "nvmlDeviceGetMemoryInfo", 0, 0, "memory_used_bytes", 1048576.0 },
    { "SM activity", "%", "nvmlGpmMetricsGet", 2, 1, "sm_activity_ratio", 0.01 },
    { "SM occupancy", "%", "nvmlGpmMetricsGet", 3, 1, "sm_occupancy_ratio", 0.01 },
    { "tensor activity", "%", "nvmlGpmMetricsGet", 5, 1, "tensor_activity_ratio", 0.01 },
    { "DRAM bandwidth", "%", "nvmlGpmMetricsGet", 10, 1, "dram_bandwidth_ratio", 0.01 },
    { "FP32 activity", "%", "nvmlGpmMetricsGet", 12, 1, "fp32_activity_ratio", 0.01 },
    { "FP16 activity", "%", "nvmlGpmMetricsGet", 13, 1, "fp16_activity_ratio", 0.01 },
    { "PCIe TX", "MiB/s", "nvmlGpmMetricsGet", 20, 0, "pcie_tx_bytes_per_second", 1048576.0 },
    { "PCIe RX", "MiB/s", "nvmlGpmMetricsGet", 21, 0, "pcie_rx_bytes_per_second", 1048576.0 },
    { "NVLink RX", "MiB/s", "nvmlGpmMetricsGet", 60, 0, "nvlink_rx_bytes_per_second", 1048576.0 },
    { "NVLink TX", "MiB/s", "nvmlGpmMetricsGet", 61, 0, "nvlink_tx_bytes_per_second", 1048576.0 }
};
/* The clock-event reasons (nvmlClocksEventReason*), as the report names them;
   both thermal bits are one reason. */
#define GPUPROF__DEV_WHY 10
static const struct { unsigned long long bits; const char *name; } gpuprof__dev_why[GPUPROF__DEV_WHY] = {
    { 0x4, "power cap" }, { 0x20 | 0x40, "thermal" }, { 0x8, "hardware slowdown" }, { 0x80, "power brake" }, { 0x200, "board limit" },
    { 0x400, "reliability" }, { 0x10, "sync boost" }, { 0x2, "applications clocks" }, { 0x100, "display clock" }, { 0x1, "idle" }
};

#define GPUPROF__DEV_VALUES 512    /* distinct values a counter keeps exactly (its quantiles); then the two closest merge */
#define GPUPROF__DEV_POINTS 512    /* points of the device over the run; when full, neighbours merge */
#define GPUPROF__DEV_PHASES 32     /* outermost ranges whose samples are kept apart (the first met) */

/* A counter: its totals and its distinct values with their counts, sorted. */
typedef struct gpuprof__dev_counter {
    int on;                       /* sampled: 0 not asked, 1 on, -1 dropped (its call failed) */
    uint32_t id;                  /* its trace counter's name id */
    uint64_t n;
    double sum, min, max;
    double *val;                  /* distinct values, ascending ... */
    uint64_t *cnt;                /* ... and how many samples had each */
    uint32_t nval;
    uint64_t impossible;          /* values dropped as outside what it can be */
} gpuprof__dev_counter;

/* Consecutive samples merged into a point of the run over time. */
typedef struct gpuprof__dev_interval {
    uint64_t t0, t1;              /* first and last sample (ns since the session's start) */
    uint32_t n, nwhy;             /* samples; of them, with the reasons read */
    uint32_t why[GPUPROF__DEV_WHY];
    uint32_t cnt[GPUPROF__DEV_N];
    double min[GPUPROF__DEV_N], sum[GPUPROF__DEV_N], max[GPUPROF__DEV_N];
} gpuprof__dev_interval;

/* A sample kept for the GPU windows that come after it. */
#define GPUPROF__DEV_RECENT 256    /* 25.6 s at 100 ms: a GPU window harvested later than that misses its samples */
typedef struct gpuprof__dev_recent_sample {
    uint64_t t;                   /* ns since the session's start */
    uint32_t have;                /* bit k: counter k has a value */
    float v[GPUPROF__DEV_N];
} gpuprof__dev_recent_sample;

/* The samples taken while one outermost range of the stepping thread ran. */
typedef struct gpuprof__dev_phase_sums {
    uint32_t name_id, n;
    uint32_t cnt[GPUPROF__DEV_N];
    double sum[GPUPROF__DEV_N];
} gpuprof__dev_phase_sums;

static struct {
    /* process-wide: the library (loaded once, never unloaded) */
    int loaded;                   /* 1 loaded, -1 could not be (why in status) */
    void *lib;
    gpuprof__nvml_api api;
    char library[512];
    char load_error[320];         /* why it could not be loaded */
    /* this session's (gpuprof__dev_mu) */
    int asked;                    /* telemetry asked for explicitly: its absence is said */
    int on;                       /* sampling */
    int inited;                   /* nvmlInit_v2 took (Shutdown at the end) */
    double every_ms;
    void *dev;
    unsigned index;               /* NVML's index of the device */
    char name[96], bus[32];       /* its name; the CUDA device's PCI bus id that found it ("": by index) */
    char how[48];                 /* how it was picked: "the CUDA device", "GPUPROF_NVML_DEVICE", "the local rank", "the first" */
    unsigned max_sm, max_mem;     /* MHz, 0: unknown */
    char status[320];             /* why there is no telemetry ("": there is, or it was not asked for) */
    int why_on;                   /* clock-event reasons read: 1 event, 2 throttle (older drivers), -1 dropped */
    int temp_v;                   /* nvmlDeviceGetTemperatureV works (else the old call) */
    int gpm;                      /* GPM metrics read: 1 on, 0 not supported, -1 failed */
    void *gpm_s[2];
    int gpm_have;                 /* samples taken into gpm_s: the last is gpm_s[gpm_have & 1] */
    uint64_t gpm_t;               /* the last GPM sample (ns since the session's start) */
    gpuprof__nvml_gpm_get *gpm_get;
    int lost;                     /* the GPU was lost: no more samples */
    unsigned long long mem_total; /* bytes, from the last memory read (what memory used can be) */
    uint64_t samples, lost_at;
    uint64_t nwhy, why[GPUPROF__DEV_WHY];
    gpuprof__dev_counter c[GPUPROF__DEV_N];
    gpuprof__dev_interval *pt;
    uint32_t npt, per_pt;
    gpuprof__dev_phase_sums ph[GPUPROF__DEV_PHASES];   /* by the phase's CPU windows (open on the stepping thread at the sample) */
    uint32_t nph;
    gpuprof__dev_phase_sums gph[GPUPROF__DEV_PHASES];  /* by its GPU windows (CUDA builds: an outermost range's GPU part, when harvested) */
    uint32_t ngph;
    gpuprof__dev_recent_sample *recent;     /* the latest GPUPROF__DEV_RECENT samples, for the GPU windows harvested after them */
    uint64_t nrecent;
    uint64_t outside;             /* samples taken while no outermost range ran */
    gpuprof__thread *tracer;      /* the counters' trace events go into this state's blocks */
} gpuprof__dev;
static pthread_mutex_t gpuprof__dev_mu = PTHREAD_MUTEX_INITIALIZER;

/* NVML's calls run on a thread of their own, the device reader, and never
   under a lock that anything else takes: when a GPU falls off the bus its
   NVML calls block, and then only the telemetry may stop. Each call is
   marked in flight (which one, since when); one in flight for
   GPUPROF__NVML_HUNG_NS is a device that stopped answering: whoever sees it
   first (a report, a checkpoint, the exit) says so in one line, the samples
   before it are kept, and NVML is not called again in this process. The
   exit waits GPUPROF__NVML_WAIT_NS at most for the reader, then leaves it
   blocked where it is, with what it may still touch never freed. */
#define GPUPROF__NVML_HUNG_NS 2000000000ull
#define GPUPROF__NVML_WAIT_NS 1000000000ull
#define GPUPROF__NVML_NOT_CALLED 0x7fff0001   /* a call not made: NVML stopped answering */
static struct {
    pthread_t th;
    int running;                  /* a reader was started and not yet joined or left */
    int stop, done;               /* under gpuprof__dev_reader_mu: asked to end; it has ended */
    const char *call;             /* the call in flight (atomic), NULL: none */
    uint64_t since;               /* when it began (mono ns, atomic) */
    uint64_t t0;                  /* the session's start on the same clock: the line says when (atomic) */
    uint64_t hung_at;             /* ns after t0 that the call began (atomic, set before hung) */
    int hung;                     /* process-wide: NVML stopped answering (atomic; set under gpuprof__dev_reader_mu) */
    int at_shutdown;              /* ... in nvmlShutdown: the samples are whole (set before hung) */
    int index1;                   /* the device's index + 1 once picked, 0 before (atomic) */
    void *left;                   /* what a reader left blocked may still write: kept here, never freed */
} gpuprof__dev_reader;
static pthread_mutex_t gpuprof__dev_reader_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gpuprof__dev_reader_cond = PTHREAD_COND_INITIALIZER;

/* A call about to be made, marked in flight; 0 when NVML is not to be
   called any more. */
static int gpuprof__nvml_enter(const char *call) {
    if (GPUPROF__LDA(&gpuprof__dev_reader.hung)) return 0;
    GPUPROF__ST(&gpuprof__dev_reader.since, gpuprof__mono_ns());
    GPUPROF__STR(&gpuprof__dev_reader.call, call);
    return 1;
}
static int gpuprof__nvml_left(int rc) {
    GPUPROF__STR(&gpuprof__dev_reader.call, (const char *)NULL);
    return rc;
}
/* Every NVML call: rc = GPUPROF__NVC("nvmlDeviceGetPowerUsage", a->DeviceGetPowerUsage(d, &x)). */
#define GPUPROF__NVC(name, call) (gpuprof__nvml_enter(name) ? gpuprof__nvml_left(call) : GPUPROF__NVML_NOT_CALLED)

/* Whether NVML stopped answering: a call in flight for GPUPROF__NVML_HUNG_NS
   (or at all, with force: the exit waited for it), now or earlier. The
   first to see it says so. Any thread; takes only gpuprof__dev_reader_mu, which no
   NVML call is made under. */
static int gpuprof__nvml_hung(int force) {
    const char *call;
    uint64_t since, now;
    int said = 0, index;
    char gpu[16] = "the GPU";
    if (GPUPROF__LDA(&gpuprof__dev_reader.hung)) return 1;
    call = GPUPROF__LDA(&gpuprof__dev_reader.call);
    since = GPUPROF__LD(&gpuprof__dev_reader.since);
    now = gpuprof__mono_ns();
    if (!force && (!call || now < since + GPUPROF__NVML_HUNG_NS)) return 0;
    if (!call) since = now;
    pthread_mutex_lock(&gpuprof__dev_reader_mu);
    if (!GPUPROF__LD(&gpuprof__dev_reader.hung)) {
        uint64_t t0 = GPUPROF__LD(&gpuprof__dev_reader.t0);
        GPUPROF__ST(&gpuprof__dev_reader.hung_at, since > t0 ? since - t0 : 0);
        GPUPROF__ST(&gpuprof__dev_reader.at_shutdown, call && !strcmp(call, "nvmlShutdown"));
        GPUPROF__STR(&gpuprof__dev_reader.hung, 1);
        said = 1;
    }
    pthread_mutex_unlock(&gpuprof__dev_reader_mu);
    if (!said) return 1;
    if ((index = GPUPROF__LD(&gpuprof__dev_reader.index1)) > 0) snprintf(gpu, sizeof gpu, "GPU %d", index - 1);
    if (GPUPROF__LD(&gpuprof__dev_reader.at_shutdown))
        gpuprof__warn(GPUPROF__W_DEVICE, "%s stopped answering: nvmlShutdown has not returned for %.1f s; the exit does not wait for it (the device's samples are all kept)",
                      gpu, (double)(now - since) / 1e9);
    else if (!index)
        gpuprof__warn(GPUPROF__W_DEVICE, "NVML stopped answering: %s has not returned for %.1f s (a GPU that fell off the bus, or a driver that hangs, blocks NVML); device telemetry is off",
                      call ? call : "gpuprof's NVML thread", (double)(now - since) / 1e9);
    else
        gpuprof__warn(GPUPROF__W_DEVICE, "%s stopped answering: %s has not returned for %.1f s (a GPU that fell off the bus blocks NVML); device telemetry stops %.1f s into the run, the samples before it are kept",
                      gpu, call ? call : "gpuprof's NVML thread", (double)(now - since) / 1e9, (double)GPUPROF__LD(&gpuprof__dev_reader.hung_at) / 1e9);
    return 1;
}

static const char *gpuprof__nvml_error(int rc) {
    const char *s = rc == GPUPROF__NVML_NOT_CALLED ? "not called: NVML stopped answering" :
                    gpuprof__dev.api.ErrorString ? gpuprof__dev.api.ErrorString(rc) : NULL;
    return s ? s : "NVML error";
}

/* Loads libnvidia-ml.so.1 (GPUPROF_NVML_PATH: that file) and finds its entry
   points; once per process. 0 when loaded; else -1, why in load_error. */
static int gpuprof__nvml_load(void) {
#if GPUPROF__NVML
    const char *path = getenv("GPUPROF_NVML_PATH"), *missing;
    if (gpuprof__dev.loaded) return gpuprof__dev.loaded > 0 ? 0 : -1;
    if (!path || !*path) path = "libnvidia-ml.so.1";
    snprintf(gpuprof__dev.library, sizeof gpuprof__dev.library, "%s", path);
    if ((gpuprof__dev.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
        const char *e = dlerror();
        size_t n = strlen(path);
        if (e && !strncmp(e, path, n) && e[n] == ':' && e[n + 1] == ' ') e += n + 2;     /* dlerror names the file too */
        snprintf(gpuprof__dev.load_error, sizeof gpuprof__dev.load_error, "cannot load %.200s (%.100s)", path, e ? e : "not found");
        gpuprof__dev.loaded = -1;
        return -1;
    }
    missing = gpuprof__lib_bind(gpuprof__dev.lib, gpuprof__nvml_syms, sizeof gpuprof__nvml_syms / sizeof gpuprof__nvml_syms[0],
                                &gpuprof__dev.api, sizeof gpuprof__dev.api);
    if (missing) {
        snprintf(gpuprof__dev.load_error, sizeof gpuprof__dev.load_error, "%.200s has no %s (not NVML, or too old a driver)", path, missing);
        dlclose(gpuprof__dev.lib);
        gpuprof__dev.lib = NULL;
        gpuprof__dev.loaded = -1;
        return -1;
    }
    gpuprof__dev.loaded = 1;
    return 0;
#else
    snprintf(gpuprof__dev.load_error, sizeof gpuprof__dev.load_error, "device telemetry reads NVML, which gpuprof loads on Linux only");
    gpuprof__dev.loaded = -1;
    return -1;
#endif
}

/* The device: the process's CUDA device by its PCI bus id in a CUDA build
   (NVML numbers devices in PCI order, CUDA by speed), else
   GPUPROF_NVML_DEVICE, else the launcher's local rank (a GPU per rank, in
   order), else 0. 0, or -1 with why in status. */
static int gpuprof__dev_pick(void) {
    const gpuprof__nvml_api *a = &gpuprof__dev.api;
    unsigned count = 0;
    int index = 0, rc;
    const char *v = getenv("GPUPROF_NVML_DEVICE");
    gpuprof__dev.bus[0] = 0;
#ifdef GPUPROF_CUDA
    snprintf(gpuprof__dev.bus, sizeof gpuprof__dev.bus, "%s", gpuprof__g.gpu_bus);     /* set by the GPU probe, if it found a device */
    if (!(v && *v) && gpuprof__dev.bus[0] && a->DeviceGetHandleByPciBusId_v2 &&
        GPUPROF__NVC("nvmlDeviceGetHandleByPciBusId_v2", a->DeviceGetHandleByPciBusId_v2(gpuprof__dev.bus, &gpuprof__dev.dev)) == GPUPROF__NVML_OK) {
        snprintf(gpuprof__dev.how, sizeof gpuprof__dev.how, "the CUDA device");
        if (!a->DeviceGetIndex || GPUPROF__NVC("nvmlDeviceGetIndex", a->DeviceGetIndex(gpuprof__dev.dev, &gpuprof__dev.index)) != GPUPROF__NVML_OK) gpuprof__dev.index = 0;
        return 0;
    }
    gpuprof__dev.bus[0] = 0;
#endif
    snprintf(gpuprof__dev.how, sizeof gpuprof__dev.how, "the first");
    if (v && *v) {
        char *end;
        long x = strtol(v, &end, 10);
        if (*end || x < 0 || x > 1024) {
            gpuprof__warn(GPUPROF__W_BAD_ENV, "GPUPROF_NVML_DEVICE='%.64s' is not a device index; device 0 is read", v);
            x = 0;
        } else snprintf(gpuprof__dev.how, sizeof gpuprof__dev.how, "GPUPROF_NVML_DEVICE");
        index = (int)x;
    }
    if ((rc = GPUPROF__NVC("nvmlDeviceGetCount_v2", a->DeviceGetCount_v2(&count))) != GPUPROF__NVML_OK || count == 0) {
        snprintf(gpuprof__dev.status, sizeof gpuprof__dev.status, "NVML sees no GPU (%s)", rc ? gpuprof__nvml_error(rc) : "0 devices");
        return -1;
    }
    if (!(v && *v) && gpuprof__run.local_rank >= 0 && (unsigned)gpuprof__run.local_rank < count) {
        index = gpuprof__run.local_rank;            /* a launcher's rank on this node: one GPU a rank, in order */
        snprintf(gpuprof__dev.how, sizeof gpuprof__dev.how, "the local rank");
    }
    if ((unsigned)index >= count) {
        snprintf(gpuprof__dev.status, sizeof gpuprof__dev.status, "GPUPROF_NVML_DEVICE=%d, but NVML sees %u GPU%s (0 to %u)", index, count, count == 1 ? "" : "s", count - 1);
        return -1;
    }
    if ((rc = GPUPROF__NVC("nvmlDeviceGetHandleByIndex_v2", a->DeviceGetHandleByIndex_v2((unsigned)index, &gpuprof__dev.dev))) != GPUPROF__NVML_OK) {
        snprintf(gpuprof__dev.status, sizeof gpuprof__dev.status, "NVML cannot open GPU %d (%s)", index, gpuprof__nvml_error(rc));
        return -1;
    }
    gpuprof__dev.index = (unsigned)index;
    return 0;
}

/* A counter's value into its totals and its table of distinct values: when
   the table is full, its two closest neighbours merge first (their
   weighted mean), so the quantiles are exact while a counter takes at most
   GPUPROF__DEV_VALUES values (clocks, %, C do) and close after. */
/* Where x is, or goes, in a counter's ascending values. */
static uint32_t gpuprof__dev_find(const gpuprof__dev_counter *c, double x) {
    uint32_t lo = 0, hi = c->nval;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (c->val[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void gpuprof__dev_value(gpuprof__dev_counter *c, double x) {
    uint32_t at, i, best = 0;
    if (!c->n || x < c->min) c->min = x;
    if (!c->n || x > c->max) c->max = x;
    c->n++;
    c->sum += x;
    if (!c->val) {
        c->val = (double *)gpuprof__alloc(GPUPROF__DEV_VALUES * sizeof *c->val);
        c->cnt = (uint64_t *)gpuprof__alloc(GPUPROF__DEV_VALUES * sizeof *c->cnt);
        if (!c->val || !c->cnt) { GPUPROF_FREE(c->val); GPUPROF_FREE(c->cnt); c->val = NULL; c->cnt = NULL; return; }
    }
    at = gpuprof__dev_find(c, x);
    if (at < c->nval && c->val[at] == x) { c->cnt[at]++; return; }
    if (c->nval == GPUPROF__DEV_VALUES) {            /* a new value in a full table: the two closest merge first */
        for (i = 1; i + 1 < c->nval; i++)
            if (c->val[i + 1] - c->val[i] < c->val[best + 1] - c->val[best]) best = i;
        c->val[best] = (c->val[best] * (double)c->cnt[best] + c->val[best + 1] * (double)c->cnt[best + 1]) / (double)(c->cnt[best] + c->cnt[best + 1]);
        c->cnt[best] += c->cnt[best + 1];
        memmove(c->val + best + 1, c->val + best + 2, (c->nval - best - 2) * sizeof *c->val);
        memmove(c->cnt + best + 1, c->cnt + best + 2, (c->nval - best - 2) * sizeof *c->cnt);
        c->nval--;
        at = gpuprof__dev_find(c, x);
        if (at < c->nval && c->val[at] == x) { c->cnt[at]++; return; }
    }
    memmove(c->val + at + 1, c->val + at, (c->nval - at) * sizeof *c->val);
    memmove(c->cnt + at + 1, c->cnt + at, (c->nval - at) * sizeof *c->cnt);
    c->val[at] = x;
    c->cnt[at] = 1;
    c->nval++;
}

/* The q-quantile of a counter's samples (nearest rank: a value it took). */
static double gpuprof__dev_quantile(const gpuprof__dev_counter *c, double q) {
    uint64_t rank = (uint64_t)ceil(q * (double)c->n), got = 0;
    uint32_t i;
    if (!c->nval) return c->n ? c->sum / (double)c->n : 0;
    if (rank < 1) rank = 1;
    for (i = 0; i < c->nval; i++)
        if ((got += c->cnt[i]) >= rank) return c->val[i];
    return c->val[c->nval - 1];
}

/* One sample into the run over time: the last point, or a new one; when
   all are used, neighbours merge and a point holds twice the samples. */
static void gpuprof__dev_point(uint64_t t_ns, const double *v, const int *have, unsigned long long why, int why_ok) {
    gpuprof__dev_interval *p;
    uint32_t i;
    int k;
    if (!gpuprof__dev.pt) return;
    if (!gpuprof__dev.npt || gpuprof__dev.pt[gpuprof__dev.npt - 1].n >= gpuprof__dev.per_pt) {
        if (gpuprof__dev.npt == GPUPROF__DEV_POINTS) {
            for (i = 0; i < GPUPROF__DEV_POINTS / 2; i++) {
                gpuprof__dev_interval m = gpuprof__dev.pt[2 * i];
                const gpuprof__dev_interval *b = &gpuprof__dev.pt[2 * i + 1];
                m.t1 = b->t1;
                m.n += b->n;
                m.nwhy += b->nwhy;
                for (k = 0; k < GPUPROF__DEV_WHY; k++) m.why[k] += b->why[k];
                for (k = 0; k < GPUPROF__DEV_N; k++) {
                    if (b->cnt[k] && (!m.cnt[k] || b->min[k] < m.min[k])) m.min[k] = b->min[k];
                    if (b->cnt[k] && (!m.cnt[k] || b->max[k] > m.max[k])) m.max[k] = b->max[k];
                    m.cnt[k] += b->cnt[k];
                    m.sum[k] += b->sum[k];
                }
                gpuprof__dev.pt[i] = m;
            }
            gpuprof__dev.npt = GPUPROF__DEV_POINTS / 2;
            gpuprof__dev.per_pt *= 2;
        }
        p = &gpuprof__dev.pt[gpuprof__dev.npt++];
        memset(p, 0, sizeof *p);
        p->t0 = t_ns;
    }
    p = &gpuprof__dev.pt[gpuprof__dev.npt - 1];
    p->t1 = t_ns;
    p->n++;
    if (why_ok) {
        p->nwhy++;
        for (k = 0; k < GPUPROF__DEV_WHY; k++) if (why & gpuprof__dev_why[k].bits) p->why[k]++;
    }
    for (k = 0; k < GPUPROF__DEV_N; k++) {
        if (!have[k]) continue;
        if (!p->cnt[k] || v[k] < p->min[k]) p->min[k] = v[k];
        if (!p->cnt[k] || v[k] > p->max[k]) p->max[k] = v[k];
        p->cnt[k]++;
        p->sum[k] += v[k];
    }
}

/* The outermost range open now on the stepping thread (the thread calling
   GPUPROF_STEP, else the main thread): its name id, 0 when none is. The
   owner writes its depth and frames with relaxed atomic stores, so this
   read from gpuprof's thread is well defined; a range that opens or closes
   meanwhile may be missed by one sample. */
static uint32_t gpuprof__dev_phase_now(void) {
    gpuprof__thread *t;
    uint32_t id = 0;
    pthread_mutex_lock(&gpuprof__lock);
    if (gpuprof__g.state == GPUPROF__RUNNING) {
        t = gpuprof__steps.stepper;
        if (!t) for (t = gpuprof__threads.threads; t && t->tid != gpuprof__run.pid; t = t->next) {}
        if (t && GPUPROF__LD(&t->depth) >= 1) {
            gpuprof__node *n = GPUPROF__LD(&t->stack[0].node);
            if (n) id = n->name_id;
        }
    }
    pthread_mutex_unlock(&gpuprof__lock);
    return id;
}

/* A sample's values into phase id's entry of a table (ph or gph); id 0
   (no range open) counts as outside. */
static void gpuprof__dev_phase_add(gpuprof__dev_phase_sums *tab, uint32_t *n, uint32_t id, const double *v, const int *have) {
    gpuprof__dev_phase_sums *ph = NULL;
    uint32_t i;
    int k;
    if (!id) { gpuprof__dev.outside++; return; }
    for (i = 0; i < *n; i++) if (tab[i].name_id == id) { ph = &tab[i]; break; }
    if (!ph) {
        if (*n == GPUPROF__DEV_PHASES) return;
        ph = &tab[(*n)++];
        memset(ph, 0, sizeof *ph);
        ph->name_id = id;
    }
    ph->n++;
    for (k = 0; k < GPUPROF__DEV_N; k++) if (have[k]) { ph->cnt[k]++; ph->sum[k] += v[k]; }
}

#ifdef GPUPROF_CUDA
/* An outermost range's GPU part, harvested (section "GPU backend", CUDA
   builds): the samples taken in [a, b] (ns) go to its GPU-window entry. A
   GPU-bound phase runs on the GPU later than its CPU range: these are the
   samples of its own work. */
static void gpuprof__dev_gpu_window(uint32_t name_id, int64_t a, int64_t b) {
    uint64_t i, n;
    if (!GPUPROF__LD(&gpuprof__dev.on) || b <= a) return;
    pthread_mutex_lock(&gpuprof__dev_mu);
    n = gpuprof__dev.nrecent;
    for (i = n > GPUPROF__DEV_RECENT ? n - GPUPROF__DEV_RECENT : 0; gpuprof__dev.recent && i < n; i++) {
        const gpuprof__dev_recent_sample *r = &gpuprof__dev.recent[i % GPUPROF__DEV_RECENT];
        double v[GPUPROF__DEV_N];
        int have[GPUPROF__DEV_N], k;
        if ((int64_t)r->t < a || (int64_t)r->t > b) continue;
        for (k = 0; k < GPUPROF__DEV_N; k++) { v[k] = (double)r->v[k]; have[k] = (r->have >> k) & 1u; }
        gpuprof__dev_phase_add(gpuprof__dev.gph, &gpuprof__dev.ngph, name_id, v, have);
    }
    pthread_mutex_unlock(&gpuprof__dev_mu);
}
#endif

/* A call that failed: a lost GPU stops the sampling; any other failure
   (NOT_SUPPORTED, NO_PERMISSION, ...) drops the counters [k0, k1] that call
   reads, with one line, and the others go on; a call not made (NVML stopped
   answering) changes nothing, gpuprof__nvml_hung says it. On the reader,
   outside gpuprof__dev_mu: the state it changes is taken under it.
   Returns 0. */
static int gpuprof__dev_fail(int k0, int k1, const char *call, int rc, uint64_t t_ns) {
    int k, lost_now = 0;
    char what[160] = "";
    size_t n = 0;
    if (rc == GPUPROF__NVML_NOT_CALLED) return 0;
    pthread_mutex_lock(&gpuprof__dev_mu);
    if (rc == GPUPROF__NVML_GPU_LOST) {
        lost_now = !gpuprof__dev.lost;
        gpuprof__dev.lost = 1;
        gpuprof__dev.lost_at = t_ns;
    } else {
        for (k = k0; k <= k1; k++) {
            if (k < 0) continue;
            if (gpuprof__dev.c[k].on > 0 && n < sizeof what - 40)
                n += (size_t)snprintf(what + n, sizeof what - n, "%s%s", n ? ", " : "", gpuprof__dev_info[k].name);
            gpuprof__dev.c[k].on = -1;
        }
        if (k0 < 0 && gpuprof__dev.why_on > 0) { snprintf(what, sizeof what, "clock-event reasons"); gpuprof__dev.why_on = -1; }
    }
    pthread_mutex_unlock(&gpuprof__dev_mu);
    if (lost_now)
        gpuprof__warn(GPUPROF__W_DEVICE, "GPU %u was lost (%s: %s) %.1f s into the run: device telemetry stops there; the samples before it are kept",
                      gpuprof__dev.index, call, gpuprof__nvml_error(rc), (double)t_ns / 1e9);
    if (what[0])
        gpuprof__warn(GPUPROF__W_DEVICE, "GPU %u: %s failed (%s): its %s %s no longer sampled; the other device counters go on",
                      gpuprof__dev.index, call, gpuprof__nvml_error(rc), what, strchr(what, ',') ? "are" : "is");
    return 0;
}

/* What counter k can be: a value outside is the driver's or a failing
   GPU's (utilization 250 %, 4294967 W: 0xffffffff mW, -273 C), dropped
   with one line a counter. Memory used is also bounded by the total. */
static int gpuprof__dev_possible(int k, double x, double *lo, double *hi) {
    const char *u = gpuprof__dev_info[k].unit;
    *lo = 0;
    *hi = !strcmp(u, "%") ? 100.5 : !strcmp(u, "MHz") ? 20000 : !strcmp(u, "W") ? 10000 : !strcmp(u, "C") ? 200 :
          !strcmp(u, "MiB") ? (gpuprof__dev.mem_total > 0 ? (double)gpuprof__dev.mem_total / 1048576.0 : 1073741824.0) : 1e8;
    if (!strcmp(u, "C")) *lo = -60;
    return gpuprof__finite(x) && x >= *lo && x <= *hi;
}

/* Counter k's value from a call that returned rc; 1 when it has one. */
static int gpuprof__dev_got(double *v, int *have, int k, int rc, double x, uint64_t t_ns) {
    double lo, hi;
    if (rc != GPUPROF__NVML_OK) return gpuprof__dev_fail(k, k, gpuprof__dev_info[k].call, rc, t_ns);
    if (!gpuprof__dev_possible(k, x, &lo, &hi)) {
        uint64_t before;
        pthread_mutex_lock(&gpuprof__dev_mu);
        before = gpuprof__dev.c[k].impossible++;
        pthread_mutex_unlock(&gpuprof__dev_mu);
        if (!before)
            gpuprof__warn(GPUPROF__W_DEVICE, "GPU %u: %s gave %s %g %s, which it cannot be (%g to %g): such values are dropped, the others kept (the driver or the GPU misbehaves)",
                          gpuprof__dev.index, gpuprof__dev_info[k].call, gpuprof__dev_info[k].name, x, gpuprof__dev_info[k].unit, lo, hi);
        return 0;
    }
    v[k] = x;
    have[k] = 1;
    return 1;
}

/* GPM: a sample every GPUPROF__GPM_GAP_NS at most; from the second on, the
   metrics between the last two. */
static void gpuprof__dev_read_gpm(double *v, int *have, uint64_t t_ns) {
    const gpuprof__nvml_api *a = &gpuprof__dev.api;
    gpuprof__nvml_gpm_get *g = gpuprof__dev.gpm_get;
    void *prev = gpuprof__dev.gpm_s[(gpuprof__dev.gpm_have + 1) & 1], *cur = gpuprof__dev.gpm_s[gpuprof__dev.gpm_have & 1];
    int rc, k;
    unsigned i;
    if (gpuprof__dev.gpm <= 0 || (gpuprof__dev.gpm_have && t_ns - gpuprof__dev.gpm_t < GPUPROF__GPM_GAP_NS)) return;
    if ((rc = GPUPROF__NVC("nvmlGpmSampleGet", a->GpmSampleGet(gpuprof__dev.dev, cur))) != GPUPROF__NVML_OK) {
        if (rc == GPUPROF__NVML_NOT_CALLED) return;
        pthread_mutex_lock(&gpuprof__dev_mu);
        gpuprof__dev.gpm = -1;
        pthread_mutex_unlock(&gpuprof__dev_mu);
        gpuprof__dev_fail(GPUPROF__DEV_FIRST_GPM, GPUPROF__DEV_N - 1, "nvmlGpmSampleGet", rc, t_ns);
        return;
    }
    gpuprof__dev.gpm_t = t_ns;
    if (!gpuprof__dev.gpm_have++) return;
    memset(g, 0, offsetof(gpuprof__nvml_gpm_get, metric));
    g->version = 1;
    g->sample1 = prev;
    g->sample2 = cur;
    for (k = GPUPROF__DEV_FIRST_GPM; k < GPUPROF__DEV_N; k++) {
        if (gpuprof__dev.c[k].on <= 0) continue;
        memset(&g->metric[g->count], 0, sizeof g->metric[0]);
        g->metric[g->count++].id = gpuprof__dev_info[k].gpm;
    }
    if (!g->count) return;
    if ((rc = GPUPROF__NVC("nvmlGpmMetricsGet", a->GpmMetricsGet(g))) != GPUPROF__NVML_OK) {
        if (rc == GPUPROF__NVML_NOT_CALLED) return;
        pthread_mutex_lock(&gpuprof__dev_mu);
        gpuprof__dev.gpm = -1;
        pthread_mutex_unlock(&gpuprof__dev_mu);
        gpuprof__dev_fail(GPUPROF__DEV_FIRST_GPM, GPUPROF__DEV_N - 1, "nvmlGpmMetricsGet", rc, t_ns);
        return;
    }
    for (i = 0; i < g->count; i++)
        for (k = GPUPROF__DEV_FIRST_GPM; k < GPUPROF__DEV_N; k++)
            if (gpuprof__dev_info[k].gpm == g->metric[i].id) gpuprof__dev_got(v, have, k, g->metric[i].ret, g->metric[i].value, t_ns);
}

/* A counter read by a call of one unsigned result: rc and x. */
#define GPUPROF__DEV_READ1(k, name, call, scale)                                         \
    if (!gpuprof__dev.lost && c[k].on > 0) {                                              \
        rc = GPUPROF__NVC(name, call);                                                    \
        gpuprof__dev_got(v, have, k, rc, (double)x / (scale), t_ns);                       \
    }

/* Every counter still on, read once; on the reader (or a test's thread),
   no lock held: a call may block. */
static void gpuprof__dev_read(double *v, int *have, unsigned long long *why, int *why_ok, uint64_t t_ns) {
    const gpuprof__nvml_api *a = &gpuprof__dev.api;
    void *d = gpuprof__dev.dev;
    gpuprof__dev_counter *c = gpuprof__dev.c;
    unsigned x = 0;
    int rc;
    if (c[GPUPROF__DEV_UTIL].on > 0) {
        gpuprof__nvml_util u = { 0, 0 };
        if ((rc = GPUPROF__NVC("nvmlDeviceGetUtilizationRates", a->DeviceGetUtilizationRates(d, &u))) != GPUPROF__NVML_OK)
            gpuprof__dev_fail(GPUPROF__DEV_UTIL, GPUPROF__DEV_MEMUTIL, gpuprof__dev_info[GPUPROF__DEV_UTIL].call, rc, t_ns);
        else {
            gpuprof__dev_got(v, have, GPUPROF__DEV_UTIL, rc, u.gpu, t_ns);
            gpuprof__dev_got(v, have, GPUPROF__DEV_MEMUTIL, rc, u.memory, t_ns);
        }
    }
    /* each call before its value is read: the order of a call's arguments is unspecified */
    GPUPROF__DEV_READ1(GPUPROF__DEV_SMCLK, "nvmlDeviceGetClockInfo", a->DeviceGetClockInfo(d, GPUPROF__NVML_CLOCK_SM, &x), 1)
    GPUPROF__DEV_READ1(GPUPROF__DEV_MEMCLK, "nvmlDeviceGetClockInfo", a->DeviceGetClockInfo(d, GPUPROF__NVML_CLOCK_MEM, &x), 1)
    GPUPROF__DEV_READ1(GPUPROF__DEV_POWER, "nvmlDeviceGetPowerUsage", a->DeviceGetPowerUsage(d, &x), 1000.0)     /* mW */
    GPUPROF__DEV_READ1(GPUPROF__DEV_PLIMIT, "nvmlDeviceGetEnforcedPowerLimit", a->DeviceGetEnforcedPowerLimit(d, &x), 1000.0)
    if (!gpuprof__dev.lost && c[GPUPROF__DEV_TEMP].on > 0) {
        gpuprof__nvml_temp tv;
        memset(&tv, 0, sizeof tv);
        tv.version = (unsigned)sizeof tv | 1u << 24;      /* nvmlTemperature_v1 */
        rc = gpuprof__dev.temp_v ? GPUPROF__NVC("nvmlDeviceGetTemperatureV", a->DeviceGetTemperatureV(d, &tv))
                                 : GPUPROF__NVC("nvmlDeviceGetTemperature", a->DeviceGetTemperature(d, 0, &x));
        gpuprof__dev_got(v, have, GPUPROF__DEV_TEMP, rc, gpuprof__dev.temp_v ? (double)tv.temperature : (double)x, t_ns);
    }
    if (!gpuprof__dev.lost && c[GPUPROF__DEV_MEMUSED].on > 0) {
        gpuprof__nvml_mem m = { 0, 0, 0 };
        rc = GPUPROF__NVC("nvmlDeviceGetMemoryInfo", a->DeviceGetMemoryInfo(d, &m));
        if (rc == GPUPROF__NVML_OK) gpuprof__dev.mem_total = m.total;
        gpuprof__dev_got(v, have, GPUPROF__DEV_MEMUSED, rc, (double)m.used / 1048576.0, t_ns);
    }
    if (!gpuprof__dev.lost && gpuprof__dev.why_on > 0) {
        rc = gpuprof__dev.why_on == 1 ? GPUPROF__NVC("nvmlDeviceGetCurrentClocksEventReasons", a->DeviceGetCurrentClocksEventReasons(d, why))
                                      : GPUPROF__NVC("nvmlDeviceGetCurrentClocksThrottleReasons", a->DeviceGetCurrentClocksThrottleReasons(d, why));
        if (rc == GPUPROF__NVML_OK) *why_ok = 1;
        else gpuprof__dev_fail(-1, -1, gpuprof__dev.why_on == 1 ? "nvmlDeviceGetCurrentClocksEventReasons" : "nvmlDeviceGetCurrentClocksThrottleReasons", rc, t_ns);
    }
    if (!gpuprof__dev.lost) gpuprof__dev_read_gpm(v, have, t_ns);
}
#undef GPUPROF__DEV_READ1

/* One pass on the reader (or a test's thread): every counter read with no
   lock held, then under gpuprof__dev_mu into the trace, the totals, the run
   over time and the phase open then. A pass whose calls NVML stopped
   answering in keeps nothing. */
static void gpuprof__dev_sample(void) {
    double v[GPUPROF__DEV_N];
    int have[GPUPROF__DEV_N], why_ok = 0, k, any = 0;
    unsigned long long why = 0;
    uint64_t ticks = gpuprof__ticks(), base = GPUPROF__LD(&gpuprof__clock.base), t_ns;
    uint32_t phase = gpuprof__dev_phase_now();        /* before dev_mu: it takes gpuprof__lock */
    t_ns = ticks > base ? gpuprof__ticks_to_ns(ticks - base) : 0;
    memset(have, 0, sizeof have);
    if (!GPUPROF__LDA(&gpuprof__dev.on) || gpuprof__dev.lost || GPUPROF__LDA(&gpuprof__dev_reader.hung)) return;
    gpuprof__dev_read(v, have, &why, &why_ok, t_ns);
    for (k = 0; k < GPUPROF__DEV_N; k++) any |= have[k];
    pthread_mutex_lock(&gpuprof__dev_mu);
    if (!gpuprof__dev.on || gpuprof__dev.lost || GPUPROF__LDA(&gpuprof__dev_reader.hung) || !(any || why_ok)) { pthread_mutex_unlock(&gpuprof__dev_mu); return; }
    gpuprof__dev.samples++;
    if (why_ok) {
        gpuprof__dev.nwhy++;
        for (k = 0; k < GPUPROF__DEV_WHY; k++) if (why & gpuprof__dev_why[k].bits) gpuprof__dev.why[k]++;
    }
    for (k = 0; k < GPUPROF__DEV_N; k++) {
        if (!have[k]) continue;
        gpuprof__dev_value(&gpuprof__dev.c[k], v[k]);
        if (gpuprof__dev.tracer && GPUPROF__LD(&gpuprof__trace.on)) {
            uint64_t u;
            memcpy(&u, &v[k], sizeof u);
            gpuprof__trace_put(gpuprof__dev.tracer, GPUPROF__EV_COUNTER, gpuprof__dev.c[k].id, 0, ticks - gpuprof__dev.tracer->base, u);
        }
    }
    gpuprof__dev_point(t_ns, v, have, why, why_ok);
    gpuprof__dev_phase_add(gpuprof__dev.ph, &gpuprof__dev.nph, phase, v, have);
    if (gpuprof__dev.recent) {
        gpuprof__dev_recent_sample *r = &gpuprof__dev.recent[gpuprof__dev.nrecent++ % GPUPROF__DEV_RECENT];
        r->t = t_ns;
        r->have = 0;
        for (k = 0; k < GPUPROF__DEV_N; k++) { r->v[k] = (float)v[k]; if (have[k]) r->have |= 1u << k; }
    }
    pthread_mutex_unlock(&gpuprof__dev_mu);
}

/* The last session's samples, freed (under gpuprof__dev_mu). What a reader
   left blocked in NVML may still write (the GPM buffer) is let go of, not
   freed. */
static void gpuprof__dev_clear(void) {
    int k;
    for (k = 0; k < GPUPROF__DEV_N; k++) { GPUPROF_FREE(gpuprof__dev.c[k].val); GPUPROF_FREE(gpuprof__dev.c[k].cnt); }
    GPUPROF_FREE(gpuprof__dev.pt);
    if (!GPUPROF__LDA(&gpuprof__dev_reader.hung)) GPUPROF_FREE(gpuprof__dev.gpm_get);
    else if (gpuprof__dev.gpm_get) gpuprof__dev_reader.left = gpuprof__dev.gpm_get;
    GPUPROF_FREE(gpuprof__dev.recent);
    gpuprof__dev.recent = NULL;
    gpuprof__dev.nrecent = 0;
    memset(gpuprof__dev.gph, 0, sizeof gpuprof__dev.gph);
    gpuprof__dev.ngph = 0;
    memset(gpuprof__dev.c, 0, sizeof gpuprof__dev.c);
    memset(gpuprof__dev.ph, 0, sizeof gpuprof__dev.ph);
    memset(gpuprof__dev.why, 0, sizeof gpuprof__dev.why);
    gpuprof__dev.pt = NULL;
    gpuprof__dev.gpm_get = NULL;
    if (!GPUPROF__LDA(&gpuprof__dev_reader.hung)) gpuprof__dev.gpm_s[0] = gpuprof__dev.gpm_s[1] = NULL;   /* else NVML's, never freed */
    gpuprof__dev.npt = gpuprof__dev.nph = 0;
    gpuprof__dev.per_pt = 1;
    gpuprof__dev.samples = gpuprof__dev.nwhy = gpuprof__dev.outside = gpuprof__dev.lost_at = 0;
    gpuprof__dev.lost = gpuprof__dev.gpm = gpuprof__dev.gpm_have = gpuprof__dev.why_on = 0;
    gpuprof__dev.max_sm = gpuprof__dev.max_mem = 0;
    gpuprof__dev.mem_total = 0;
    gpuprof__dev.name[0] = gpuprof__dev.bus[0] = gpuprof__dev.how[0] = 0;
    gpuprof__dev.tracer = NULL;
}

/* At a session's start (under gpuprof__lock): is device telemetry wanted
   (cfg.device_every_ms >= 0; asked for when set, or GPUPROF_NVML_PATH is),
   and has NVML not stopped answering? 1: the reader loads and opens it (a
   dlopen takes time, and 6 KiB of the stack of the thread that starts the
   session), and samples. */
static int gpuprof__dev_want(int off) {
    double every = gpuprof__g.cfg.device_every_ms;
    const char *path = getenv("GPUPROF_NVML_PATH");
    pthread_mutex_lock(&gpuprof__dev_mu);
    GPUPROF__ST(&gpuprof__dev.on, 0);
    gpuprof__dev_clear();
    gpuprof__dev.status[0] = 0;
    gpuprof__dev.asked = every > 0 || (path && *path);
    gpuprof__dev.every_ms = every == 0 ? 100 : every < 10 && every > 0 ? 10 : every;
    pthread_mutex_unlock(&gpuprof__dev_mu);
    if (off || every < 0) return 0;
    if (GPUPROF__LDA(&gpuprof__dev_reader.hung)) {
        if (gpuprof__dev.asked) gpuprof__warn(GPUPROF__W_DEVICE, "device telemetry is off: NVML stopped answering earlier in this process, and gpuprof does not call it again");
        return 0;
    }
    if (gpuprof__dev.loaded < 0) {          /* tried in an earlier session */
        if (gpuprof__dev.asked) gpuprof__warn(GPUPROF__W_DEVICE, "device telemetry is off: %s", gpuprof__dev.load_error);
        return 0;
    }
    return 1;
}

/* GPM where the GPU supports it (Hopper on): its two samples and the
   metrics' buffer; 1 on, 0 not; rc: the support query's answer (-1: not
   asked). */
static int gpuprof__dev_gpm_open(int *rc) {
    const gpuprof__nvml_api *a = &gpuprof__dev.api;
    gpuprof__nvml_gpm_support sup = { 1, 0 };
    *rc = -1;
    if (!a->GpmQueryDeviceSupport || !a->GpmSampleAlloc || !a->GpmSampleFree || !a->GpmSampleGet || !a->GpmMetricsGet) return 0;
    if ((*rc = GPUPROF__NVC("nvmlGpmQueryDeviceSupport", a->GpmQueryDeviceSupport(gpuprof__dev.dev, &sup))) != GPUPROF__NVML_OK || !sup.supported) return 0;
    if ((gpuprof__dev.gpm_get = (gpuprof__nvml_gpm_get *)gpuprof__zalloc(sizeof *gpuprof__dev.gpm_get)) == NULL) return 0;
    if (GPUPROF__NVC("nvmlGpmSampleAlloc", a->GpmSampleAlloc(&gpuprof__dev.gpm_s[0])) != GPUPROF__NVML_OK) return 0;
    if (GPUPROF__NVC("nvmlGpmSampleAlloc", a->GpmSampleAlloc(&gpuprof__dev.gpm_s[1])) == GPUPROF__NVML_OK) return 1;
    GPUPROF__NVC("nvmlGpmSampleFree", a->GpmSampleFree(gpuprof__dev.gpm_s[0]));
    gpuprof__dev.gpm_s[0] = NULL;
    return 0;
}

/* What the device gives: a counter is on when its call exists; GPM where
   the GPU supports it (a capability, said only when GPUPROF_DEVICE_GPM=1
   asked for it). 0 when it gives none of them. */
static int gpuprof__dev_caps(void) {
    const gpuprof__nvml_api *a = &gpuprof__dev.api;
    const char *want_gpm = getenv("GPUPROF_DEVICE_GPM");
    int k, rc = -1, any = 0;
    int has[GPUPROF__DEV_FIRST_GPM];
    has[GPUPROF__DEV_UTIL] = has[GPUPROF__DEV_MEMUTIL] = a->DeviceGetUtilizationRates != NULL;
    has[GPUPROF__DEV_SMCLK] = has[GPUPROF__DEV_MEMCLK] = a->DeviceGetClockInfo != NULL;
    has[GPUPROF__DEV_POWER] = a->DeviceGetPowerUsage != NULL;
    has[GPUPROF__DEV_PLIMIT] = a->DeviceGetEnforcedPowerLimit != NULL;
    has[GPUPROF__DEV_TEMP] = a->DeviceGetTemperatureV != NULL || a->DeviceGetTemperature != NULL;
    has[GPUPROF__DEV_MEMUSED] = a->DeviceGetMemoryInfo != NULL;
    for (k = 0; k < GPUPROF__DEV_FIRST_GPM; k++) any |= gpuprof__dev.c[k].on = has[k];
    gpuprof__dev.temp_v = a->DeviceGetTemperatureV != NULL;
    gpuprof__dev.why_on = a->DeviceGetCurrentClocksEventReasons ? 1 : a->DeviceGetCurrentClocksThrottleReasons ? 2 : 0;
    if (a->DeviceGetMaxClockInfo) {
        if (GPUPROF__NVC("nvmlDeviceGetMaxClockInfo", a->DeviceGetMaxClockInfo(gpuprof__dev.dev, GPUPROF__NVML_CLOCK_SM, &gpuprof__dev.max_sm)) != GPUPROF__NVML_OK) gpuprof__dev.max_sm = 0;
        if (GPUPROF__NVC("nvmlDeviceGetMaxClockInfo", a->DeviceGetMaxClockInfo(gpuprof__dev.dev, GPUPROF__NVML_CLOCK_MEM, &gpuprof__dev.max_mem)) != GPUPROF__NVML_OK) gpuprof__dev.max_mem = 0;
    }
    if (!a->DeviceGetName || GPUPROF__NVC("nvmlDeviceGetName", a->DeviceGetName(gpuprof__dev.dev, gpuprof__dev.name, sizeof gpuprof__dev.name)) != GPUPROF__NVML_OK)
        gpuprof__dev.name[0] = 0;
    gpuprof__dev.name[sizeof gpuprof__dev.name - 1] = 0;
    gpuprof__dev.gpm = gpuprof__dev_gpm_open(&rc);
    for (k = GPUPROF__DEV_FIRST_GPM; k < GPUPROF__DEV_N; k++) gpuprof__dev.c[k].on = gpuprof__dev.gpm > 0;
    if (gpuprof__dev.gpm <= 0 && want_gpm && !strcmp(want_gpm, "1"))
        gpuprof__warn(GPUPROF__W_DEVICE, "GPU %u gives no GPM metrics (%s): SM, tensor and DRAM activity are not sampled (GPM needs Hopper or later and a recent driver)",
                      gpuprof__dev.index, !a->GpmQueryDeviceSupport ? "this NVML has no GPM calls" : rc != GPUPROF__NVML_OK && rc != -1 ? gpuprof__nvml_error(rc) : "not supported on this GPU");
    return any || gpuprof__dev.why_on || gpuprof__dev.gpm > 0;
}

/* On the reader, before its first sample, no lock held while NVML is
   called (its state is published by dev.on): NVML initialised, the device
   picked, its counters named for the trace, a thread state of gpuprof's
   own for their events. Failure: one line if telemetry was asked for, and
   no sampling. */
static void gpuprof__dev_open(void) {
    const gpuprof__nvml_api *a = &gpuprof__dev.api;
    gpuprof__thread *tr;
    int rc, k;
    if ((rc = GPUPROF__NVC("nvmlInit_v2", a->Init_v2())) != GPUPROF__NVML_OK) {
        snprintf(gpuprof__dev.status, sizeof gpuprof__dev.status, "nvmlInit failed (%s)%s", gpuprof__nvml_error(rc),
                 rc == GPUPROF__NVML_DRIVER_NOT_LOADED ? ": no NVIDIA driver is loaded" : "");
    } else {
        gpuprof__dev.inited = 1;
        if (gpuprof__dev_pick() != 0) {
            GPUPROF__NVC("nvmlShutdown", a->Shutdown());
            gpuprof__dev.inited = 0;
        } else if (!gpuprof__dev_caps()) {
            snprintf(gpuprof__dev.status, sizeof gpuprof__dev.status, "%.200s gives none of the counters gpuprof reads (utilization, clocks, power, temperature, memory, GPM)",
                     gpuprof__dev.library);
            GPUPROF__NVC("nvmlShutdown", a->Shutdown());
            gpuprof__dev.inited = 0;
        }
    }
    if (!gpuprof__dev.inited) {
        if (gpuprof__dev.asked && rc != GPUPROF__NVML_NOT_CALLED && !GPUPROF__LDA(&gpuprof__dev_reader.hung))
            gpuprof__warn(GPUPROF__W_DEVICE, "device telemetry is off: %s", gpuprof__dev.status);
        return;
    }
    GPUPROF__ST(&gpuprof__dev_reader.index1, (int)gpuprof__dev.index + 1);
    pthread_mutex_lock(&gpuprof__dev_mu);
    gpuprof__dev.pt = (gpuprof__dev_interval *)gpuprof__alloc(GPUPROF__DEV_POINTS * sizeof *gpuprof__dev.pt);
#ifdef GPUPROF_CUDA
    gpuprof__dev.recent = (gpuprof__dev_recent_sample *)gpuprof__alloc(GPUPROF__DEV_RECENT * sizeof *gpuprof__dev.recent);
#endif
    pthread_mutex_unlock(&gpuprof__dev_mu);
    for (k = 0; k < GPUPROF__DEV_N; k++) {          /* names: outside dev_mu (registering takes gpuprof__lock) */
        char name[96];
        snprintf(name, sizeof name, "GPU %u %s (%s)", gpuprof__dev.index, gpuprof__dev_info[k].name, gpuprof__dev_info[k].unit);
        if (gpuprof__dev.c[k].on > 0) gpuprof__dev.c[k].id = gpuprof__intern(name);
    }
    pthread_mutex_lock(&gpuprof__lock);
    if (gpuprof__g.state == GPUPROF__RUNNING && (tr = gpuprof__thread_alloc(0, "device telemetry", gpuprof__registry.max_ids, 1)) != NULL) {
        tr->exited = 2;
        tr->session = gpuprof__g.session;
        tr->base = gpuprof__clock.base;
        tr->names = gpuprof__registry.names;
        tr->index = UINT32_MAX;
        tr->next = gpuprof__threads.threads;
        GPUPROF__STR(&gpuprof__threads.threads, tr);      /* release: see gpuprof__collector_main */
        gpuprof__dev.tracer = tr;
    }
    pthread_mutex_unlock(&gpuprof__lock);
    GPUPROF__STR(&gpuprof__dev.on, 1);
}

/* On the reader, as it ends: NVML let go of (GPM's samples, then
   nvmlShutdown). The samples stay for the outputs. */
static void gpuprof__dev_shut(void) {
    const gpuprof__nvml_api *a = &gpuprof__dev.api;
    int k;
    pthread_mutex_lock(&gpuprof__dev_mu);
    GPUPROF__ST(&gpuprof__dev.on, 0);
    pthread_mutex_unlock(&gpuprof__dev_mu);
    for (k = 0; k < 2; k++)
        if (gpuprof__dev.gpm_s[k] && GPUPROF__NVC("nvmlGpmSampleFree", a->GpmSampleFree(gpuprof__dev.gpm_s[k])) != GPUPROF__NVML_NOT_CALLED) gpuprof__dev.gpm_s[k] = NULL;
    if (gpuprof__dev.inited && GPUPROF__NVC("nvmlShutdown", a->Shutdown()) != GPUPROF__NVML_NOT_CALLED) gpuprof__dev.inited = 0;
}

/* The reader: opens NVML, samples every every_ms until stopped, lets NVML
   go. It is gpuprof's: its CPU samples and ranges are not the program's. */
static void *gpuprof__dev_reader_main(void *arg) {
    uint64_t period = (uint64_t)(gpuprof__dev.every_ms * 1e6), next;
    (void)arg;
    gpuprof__own_thread();
    if (gpuprof__nvml_load() != 0) {                /* no NVML: said only when telemetry was asked for */
        if (gpuprof__dev.asked) gpuprof__warn(GPUPROF__W_DEVICE, "device telemetry is off: %s", gpuprof__dev.load_error);
    } else gpuprof__dev_open();                     /* NVML's init takes a while: here, not in the program's first range */
    next = gpuprof__mono_ns() + period;
    pthread_mutex_lock(&gpuprof__dev_reader_mu);
    while (!gpuprof__dev_reader.stop && GPUPROF__LDA(&gpuprof__dev.on) && !GPUPROF__LDA(&gpuprof__dev_reader.hung)) {
        uint64_t now = gpuprof__mono_ns();
        if (now >= next) {
            pthread_mutex_unlock(&gpuprof__dev_reader_mu);
            gpuprof__dev_sample();
            pthread_mutex_lock(&gpuprof__dev_reader_mu);
            now = gpuprof__mono_ns();
            while (next <= now) next += period;     /* a late pass is not made up for */
            continue;
        }
        gpuprof__cond_wait_ns(&gpuprof__dev_reader_cond, &gpuprof__dev_reader_mu, next - now);
    }
    pthread_mutex_unlock(&gpuprof__dev_reader_mu);
    gpuprof__dev_shut();
    pthread_mutex_lock(&gpuprof__dev_reader_mu);
    gpuprof__dev_reader.done = 1;
    pthread_cond_broadcast(&gpuprof__dev_reader_cond);
    pthread_mutex_unlock(&gpuprof__dev_reader_mu);
    return NULL;
}

/* At a session's start, with telemetry wanted (gpuprof__dev_want). */
static void gpuprof__dev_start(void) {
    gpuprof__dev_reader.stop = gpuprof__dev_reader.done = 0;
    GPUPROF__ST(&gpuprof__dev_reader.t0, gpuprof__mono_ns());
    GPUPROF__ST(&gpuprof__dev_reader.running, gpuprof__spawn(&gpuprof__dev_reader.th, gpuprof__dev_reader_main) == 0);
    if (!gpuprof__dev_reader.running) gpuprof__warn(GPUPROF__W_IO, "cannot start gpuprof's thread for device telemetry; the device is not sampled");
}

/* At shutdown, before the outputs: the reader stops. One blocked in NVML
   is waited for GPUPROF__NVML_WAIT_NS at most, then left where it is. */
static void gpuprof__dev_stop(void) {
    int done;
    if (!GPUPROF__LD(&gpuprof__dev_reader.running)) return;
    pthread_mutex_lock(&gpuprof__dev_reader_mu);
    gpuprof__dev_reader.stop = 1;
    pthread_cond_broadcast(&gpuprof__dev_reader_cond);
    if (!gpuprof__dev_reader.done && !GPUPROF__LDA(&gpuprof__dev_reader.hung)) {
        uint64_t until = gpuprof__mono_ns() + GPUPROF__NVML_WAIT_NS, now;
        while (!gpuprof__dev_reader.done && (now = gpuprof__mono_ns()) < until) gpuprof__cond_wait_ns(&gpuprof__dev_reader_cond, &gpuprof__dev_reader_mu, until - now);
    }
    done = gpuprof__dev_reader.done;
    pthread_mutex_unlock(&gpuprof__dev_reader_mu);
    if (done) pthread_join(gpuprof__dev_reader.th, NULL);
    else {
        gpuprof__nvml_hung(1);                        /* waited for: it stopped answering, however long its call has been */
        pthread_detach(gpuprof__dev_reader.th);
    }
    GPUPROF__ST(&gpuprof__dev_reader.running, 0);
}

/* At shutdown, once the reader has stopped and the outputs are written:
   the samples freed. */
static void gpuprof__dev_close(void) {
    pthread_mutex_lock(&gpuprof__dev_mu);
    GPUPROF__ST(&gpuprof__dev.on, 0);
    gpuprof__dev_clear();
    pthread_mutex_unlock(&gpuprof__dev_mu);
}

/* A GPU-bound phase's class from GPM (SPEC 17): over the samples taken
   while it ran, the mean DRAM bandwidth utilization against the highest
   mean compute activity (tensor, FP32, FP16). 1 memory-bound, 2
   compute-bound, 0 not measured (no GPM, under 2 samples of both, or both
   under GPUPROF__DEV_CLASS_MIN %: neither bounds it). */
#define GPUPROF__DEV_CLASS_MIN 20.0
/* The samples taken while outermost range name_id ran (NULL: none): in its
   GPU windows where it has a GPU part, else in its CPU windows. */
static const gpuprof__dev_phase_sums *gpuprof__dev_phase_of(uint32_t name_id) {
    uint32_t i;
    for (i = 0; i < gpuprof__dev.ngph; i++) if (gpuprof__dev.gph[i].name_id == name_id && gpuprof__dev.gph[i].n) return &gpuprof__dev.gph[i];
    for (i = 0; i < gpuprof__dev.nph; i++) if (gpuprof__dev.ph[i].name_id == name_id && gpuprof__dev.ph[i].n) return &gpuprof__dev.ph[i];
    return NULL;
}

static int gpuprof__dev_class_locked(uint32_t name_id, double *dram, double *comp) {   /* under gpuprof__dev_mu */
    static const int act[3] = { GPUPROF__DEV_TENSOR, GPUPROF__DEV_FP32, GPUPROF__DEV_FP16 };
    const gpuprof__dev_phase_sums *p = gpuprof__dev_phase_of(name_id);
    double m = -1, c = -1;
    int k, cls = 0;
    if (p && p->cnt[GPUPROF__DEV_DRAM] >= 2) m = p->sum[GPUPROF__DEV_DRAM] / p->cnt[GPUPROF__DEV_DRAM];
    for (k = 0; p && k < 3; k++)
        if (p->cnt[act[k]] >= 2 && p->sum[act[k]] / p->cnt[act[k]] > c) c = p->sum[act[k]] / p->cnt[act[k]];
    if (m >= 0 && c >= 0 && (m >= GPUPROF__DEV_CLASS_MIN || c >= GPUPROF__DEV_CLASS_MIN)) cls = m >= c ? 1 : 2;
    if (dram) *dram = m;
    if (comp) *comp = c;
    return cls;
}

/* The device's latest values, for a reader outside this section (the live
   metrics): each counter's mean over the latest point of the run that has
   it, in its unit (gpuprof__dev_info), NaN where none has; and NVML's index
   of the device. 0 when nothing was sampled. (Built for its one reader.) */
#if GPUPROF__METRICS
static int gpuprof__dev_latest(unsigned *index, double v[GPUPROF__DEV_N]) {
    int k, any = 0;
    for (k = 0; k < GPUPROF__DEV_N; k++) v[k] = GPUPROF__NAN;
    gpuprof__nvml_hung(0);
    pthread_mutex_lock(&gpuprof__dev_mu);
    *index = gpuprof__dev.index;
    for (k = 0; k < GPUPROF__DEV_N && gpuprof__dev.samples; k++) {
        uint32_t i = gpuprof__dev.npt;
        while (i > 0 && !gpuprof__dev.pt[i - 1].cnt[k]) i--;
        if (!i) continue;
        v[k] = gpuprof__dev.pt[i - 1].sum[k] / gpuprof__dev.pt[i - 1].cnt[k];
        any = 1;
    }
    pthread_mutex_unlock(&gpuprof__dev_mu);
    return any;
}
#endif

/* The class the device's counters measured for a phase (1 memory, 2 compute,
   0 unknown: no sample, or activity too low to tell), for the verdict. */
static int gpuprof__dev_class(uint32_t name_id, double *dram, double *comp) {
    int cls;
    if (!GPUPROF__LD(&gpuprof__dev.samples)) return 0;
    pthread_mutex_lock(&gpuprof__dev_mu);
    cls = gpuprof__dev_class_locked(name_id, dram, comp);
    pthread_mutex_unlock(&gpuprof__dev_mu);
    return cls;
}

#else
/* GPUPROF_NO_DEVICE: what the other sections call, as no-ops; a setting
   that asks for the device gets one line. */
#define gpuprof__dev_gpu_window(name_id, start_ns, end_ns) ((void)(name_id), (void)(start_ns), (void)(end_ns))
#define gpuprof__dev_want(off)                                                                                                   \
    (!(off) && (gpuprof__g.cfg.device_every_ms > 0 || getenv("GPUPROF_NVML_PATH"))                                               \
         ? (gpuprof__warn(GPUPROF__W_BAD_ENV, "GPUPROF_DEVICE_EVERY_MS: the device over the run is compiled out of this build "   \
                                              "(GPUPROF_NO_DEVICE); build without it to have it, or use nvidia-smi"), 0)         \
         : 0)
#define gpuprof__dev_start() ((void)0)
#define gpuprof__dev_stop() ((void)0)
#define gpuprof__dev_close() ((void)0)
#define gpuprof__dev_class(name_id, dram, comp) ((void)(name_id), 0)
#endif

/* ----------------------------------------------------------------------
   Launch figures (CUDA builds; SPEC 20): what a kernel's launch shape
   leaves of the GPU -- blocks per SM, theoretical occupancy and its
   limiter, the share of SMs given work, waves -- from the device's limits
   and the kernel record's grid, block, registers and shared memory. The
   arithmetic is that of CUDA's occupancy calculator (the toolkit's
   cuda_occupancy.h, compute capability 7.0 to 12.x), with the launch's
   dynamic shared memory as the kernel's opt-in limit and the default
   carveout; tests/test_kernels.c checks every figure against that header.
   And whether a kernel runs on the tensor cores, from its name.
   ---------------------------------------------------------------------- */
#ifdef GPUPROF_CUDA
/* One device's limits (cudaDeviceGetAttribute at init; 0: unknown). */
typedef struct gpuprof__devlim {
    int cc_major, cc_minor, sms, warp;
    int threads_block, threads_sm, regs_block, regs_sm;
    int smem_block, smem_sm, smem_optin, smem_reserved;   /* bytes */
} gpuprof__devlim;

enum { GPUPROF__LIM_WARPS, GPUPROF__LIM_BLOCKS, GPUPROF__LIM_REGS, GPUPROF__LIM_SMEM, GPUPROF__LIM_COUNT };
static const char *const gpuprof__lim_name[GPUPROF__LIM_COUNT] = { "warps", "blocks", "registers", "shared_memory" };

/* A launch's figures. blocks_per_sm < 0: the device's limits are unknown. */
typedef struct gpuprof__launch {
    int blocks_per_sm, limiter;
    double occupancy;             /* active warps / the SM's maximum */
    double sm_fill;               /* min(blocks, SMs) / SMs */
    double waves;                 /* blocks / (SMs x blocks_per_sm) */
    double est_achieved;          /* min(occupancy, blocks x warps per block / (SMs x max warps per SM)) */
} gpuprof__launch;

static int gpuprof__occ_div_up(int x, int y) { return (x + y - 1) / y; }

/* Blocks an SM holds at most, by architecture. */
static int gpuprof__occ_max_blocks(const gpuprof__devlim *d) {
    switch (d->cc_major) {
    case 7: return d->cc_minor == 5 ? 16 : 32;
    case 8: return d->cc_minor == 0 ? 32 : d->cc_minor == 9 ? 24 : 16;
    case 9: return 32;
    case 10: return d->cc_minor == 1 ? 24 : 32;
    case 11: return d->cc_minor == 0 ? 24 : 32;
    case 12: return 24;
    default: return 0;
    }
}

/* The shared-memory carveouts an SM may be configured with, in KiB, the
   largest last (0 ends the list); NULL: an architecture not known here. */
static const int *gpuprof__occ_carveouts(const gpuprof__devlim *d) {
    static const int volta[] = { 8, 16, 32, 64, 96, 0 }, turing[] = { 32, 64, 0 };
    static const int ga100[] = { 8, 16, 32, 64, 100, 132, 164, 0 }, ga10x[] = { 8, 16, 32, 64, 100, 0 };
    static const int hopper[] = { 8, 16, 32, 64, 100, 132, 164, 196, 228, 0 };
    switch (d->cc_major) {
    case 7: return d->cc_minor == 5 ? turing : volta;
    case 8: return d->cc_minor == 0 || d->cc_minor == 7 ? ga100 : ga10x;
    case 9: return hopper;
    case 10: case 11: return d->cc_minor == 0 || d->cc_minor == 1 || d->cc_minor == 3 ? hopper : NULL;
    case 12: return d->cc_minor <= 1 ? ga10x : NULL;
    default: return NULL;
    }
}

/* bytes rounded up to a carveout (0 stays 0 except on Turing, whose least is
   32 KiB); -1: more than the largest, or an architecture not known here. */
static long gpuprof__occ_carveout(const gpuprof__devlim *d, long bytes) {
    const int *c = gpuprof__occ_carveouts(d);
    if (!c) return -1;
    if (bytes == 0 && c[0] != 32) return 0;
    for (; *c; c++) if (bytes <= (long)*c * 1024) return (long)*c * 1024;
    return -1;
}

/* Blocks per SM as shared memory allows: per block, the static and
   dynamic bytes and the driver's reserve, in units of 128 bytes (256
   before Ampere); per SM, the default carveout (all of it), or the
   carveout the block needs if that is larger. */
static int gpuprof__occ_smem_limit(const gpuprof__devlim *d, long ssmem, long dsmem) {
    long gran = d->cc_major >= 8 ? 128 : 256, stat = ssmem + d->smem_reserved;
    long alloc = (stat + dsmem + gran - 1) / gran * gran, per_sm = gpuprof__occ_carveout(d, d->smem_sm);
    long per_block = (stat + dsmem > d->smem_block ? d->smem_optin : d->smem_block) + (d->cc_major >= 8 ? d->smem_reserved : 0);
    if (per_sm < 0) return -1;
    if (alloc > per_block) return 0;
    if (per_sm < alloc && (per_sm = gpuprof__occ_carveout(d, alloc)) < 0) return -1;
    return alloc > 0 ? (int)(per_sm / alloc) : INT_MAX;
}

/* Blocks per SM as registers allow: registers are given per warp in units
   of 256, and warps to the SM's four schedulers alike. */
static int gpuprof__occ_regs_limit(const gpuprof__devlim *d, int threads, int regs) {
    int warps = gpuprof__occ_div_up(threads, d->warp), per_warp = gpuprof__occ_div_up(regs * d->warp, 256) * 256;
    if (d->regs_block < per_warp * gpuprof__occ_div_up(warps, 4) * 4 || d->regs_block < per_warp * warps || regs > 256) return 0;
    return per_warp ? d->regs_sm / 4 / per_warp * 4 / warps : INT_MAX;
}

/* The figures of `blocks` blocks of `threads` threads, `regs` registers per
   thread and ssmem + dsmem bytes of shared memory on device d. The limiter
   named is the first of warps, blocks, registers, shared memory that sets
   blocks_per_sm: a tie names the one that no kernel change lifts. */
static void gpuprof__occ_calc(const gpuprof__devlim *d, uint64_t blocks, int threads, int regs, long ssmem, long dsmem, gpuprof__launch *o) {
    int lim[GPUPROF__LIM_COUNT], i, best = INT_MAX, max_warps = d->warp > 0 ? d->threads_sm / d->warp : 0, warps;
    o->blocks_per_sm = -1;
    o->limiter = GPUPROF__LIM_WARPS;
    o->occupancy = o->sm_fill = o->waves = o->est_achieved = GPUPROF__NAN;
    if (d->sms <= 0 || max_warps <= 0 || threads <= 0 || d->regs_sm <= 0 || d->smem_sm <= 0 || !gpuprof__occ_max_blocks(d)) return;
    warps = gpuprof__occ_div_up(threads, d->warp);
    lim[GPUPROF__LIM_WARPS] = threads > d->threads_block ? 0 : max_warps / warps;
    lim[GPUPROF__LIM_BLOCKS] = gpuprof__occ_max_blocks(d);
    lim[GPUPROF__LIM_REGS] = gpuprof__occ_regs_limit(d, threads, regs);
    if ((lim[GPUPROF__LIM_SMEM] = gpuprof__occ_smem_limit(d, ssmem, dsmem)) < 0) return;
    for (i = 0; i < GPUPROF__LIM_COUNT; i++) if (lim[i] < best) { best = lim[i]; o->limiter = i; }
    o->blocks_per_sm = best;
    o->occupancy = (double)(best * warps) / max_warps;
    o->sm_fill = (double)(blocks < (uint64_t)d->sms ? blocks : (uint64_t)d->sms) / d->sms;
    o->waves = best > 0 ? (double)blocks / ((double)d->sms * best) : GPUPROF__NAN;
    o->est_achieved = (double)blocks * warps / ((double)d->sms * max_warps);
    if (o->est_achieved > o->occupancy) o->est_achieved = o->occupancy;
}

/* Does a kernel run on the tensor cores, by its name: 1 yes, 0 a GEMM or
   convolution that does not, -1 nothing said. The names are those of
   cuBLAS, cuBLASLt, cuDNN and CUTLASS (docs/guide.md, "Tensor cores"):
   xmma, hmma, imma, wmma, wgmma, tensorop, nvjet or an MMA shape (s16816,
   h1688, i16832, s884 ...) say yes; sgemm, simt, gemv say a GEMM (or
   GEMV) on the CUDA cores. */
static int gpuprof__tensor_cores(const char *name) {
    static const char *const yes[] = { "xmma", "hmma", "imma", "wmma", "wgmma", "tensorop", "tensor_op", "nvjet", NULL };
    static const char *const no[] = { "sgemm", "simt", "gemv", NULL };
    char low[512];
    size_t i, n = gpuprof__lower(low, sizeof low, name);
    int k;
    for (k = 0; yes[k]; k++) if (strstr(low, yes[k])) return 1;
    /* an MMA instruction shape: s16816, h1688, i8816, bf16816 ... (a letter, then 16816 / 1688 / 8816 ...) */
    for (i = 1; i + 4 <= n; i++)
        if ((low[i - 1] == 's' || low[i - 1] == 'h' || low[i - 1] == 'i' || low[i - 1] == 'f') &&
            (strncmp(low + i, "16816", 5) == 0 || strncmp(low + i, "1688", 4) == 0 || strncmp(low + i, "16832", 5) == 0 ||
             strncmp(low + i, "8816", 4) == 0 || strncmp(low + i, "884", 3) == 0))
            return 1;
    for (k = 0; no[k]; k++) if (strstr(low, no[k])) return 0;
    return -1;
}
#endif /* GPUPROF_CUDA */

/* ----------------------------------------------------------------------
   Kernel capture: CUPTI -- its seam and the capture's state (CUDA builds,
   opt-in: GPUPROF_KERNELS=1; SPEC 13)
   What ran on the GPU inside each range -- kernels, copies, memsets,
   synchronizations -- from CUPTI's Activity API, loaded with dlopen at init
   (no build-time dependency) and reached only through the seam below.
   A range pushes an external correlation id (CUSTOM2: torch keeps CUSTOM0/1)
   at its begin and pops it at its end, nothing else on the hot path. CUPTI
   writes records into buffers from a capped pool and hands each back when
   complete, on its own thread or inside gpuprof's flush; the collector reads
   them there (fixed offsets, checked against the toolkit's headers by
   tests/test_cupti_layout.c), matches every GPU record to the range open on
   the launching thread through the correlation records, and adds it to the
   kernel, transfer and synchronization tables. Records come in any order: a
   kernel whose launch record has not arrived yet waits for a later buffer.
   CUPTI's timestamps come from gpuprof's own clock (a callback registered
   once per process), so kernels and ranges share the trace's timeline. Any
   failure at init: one message, capture off, and no further CUPTI call.
   ---------------------------------------------------------------------- */
#ifdef GPUPROF_CUDA

/* CUPTI's numbers (cupti_result.h, cupti_activity.h; CUDA 12 and 13). */
enum {
    GPUPROF__CU_OK = 0, GPUPROF__CU_NOT_INITIALIZED = 15, GPUPROF__CU_MAX_LIMIT = 12, GPUPROF__CU_INVALID_KIND = 21,
    GPUPROF__CU_PRIVILEGES = 35, GPUPROF__CU_MULTIPLE = 39, GPUPROF__CU_UNKNOWN = 999
};
enum {
    GPUPROF__AK_MEMCPY = 1, GPUPROF__AK_MEMSET = 2, GPUPROF__AK_KERNEL = 3, GPUPROF__AK_DRIVER = 4, GPUPROF__AK_RUNTIME = 5,
    GPUPROF__AK_CONC_KERNEL = 10, GPUPROF__AK_SYNC = 38, GPUPROF__AK_EXTCORR = 39
};
enum { GPUPROF__EXT_CUSTOM2 = 5, GPUPROF__FLUSH_FORCED = 1, GPUPROF__ATTR_ZEROED_OUT = 5 };
/* Field offsets: the oldest record version gpuprof reads has them all (K4..K11,
   Memcpy4..6, Memset3..4, Synchronization 1..2, API, ExternalCorrelation). */
enum {
    GPUPROF__KO_REGS = 6, GPUPROF__KO_START = 16, GPUPROF__KO_END = 24, GPUPROF__KO_DEVICE = 40, GPUPROF__KO_STREAM = 48,
    GPUPROF__KO_GRID = 52, GPUPROF__KO_BLOCK = 64, GPUPROF__KO_SSMEM = 76, GPUPROF__KO_DSMEM = 80, GPUPROF__KO_CORR = 92,
    GPUPROF__KO_NAME = 104, GPUPROF__KO_GRAPH = 156, GPUPROF__KO_SIZE = 160,
    GPUPROF__MO_COPYKIND = 4, GPUPROF__MO_SRCKIND = 5, GPUPROF__MO_DSTKIND = 6, GPUPROF__MO_BYTES = 8, GPUPROF__MO_START = 16,
    GPUPROF__MO_END = 24, GPUPROF__MO_DEVICE = 32, GPUPROF__MO_STREAM = 40, GPUPROF__MO_CORR = 44, GPUPROF__MO_RTCORR = 48,
    GPUPROF__MO_SIZE = 56,
    GPUPROF__SO_BYTES = 8, GPUPROF__SO_START = 16, GPUPROF__SO_END = 24, GPUPROF__SO_DEVICE = 32, GPUPROF__SO_STREAM = 40,
    GPUPROF__SO_CORR = 44, GPUPROF__SO_MEMKIND = 50, GPUPROF__SO_SIZE = 52,
    GPUPROF__AO_CBID = 4, GPUPROF__AO_START = 8, GPUPROF__AO_END = 16, GPUPROF__AO_TID = 28, GPUPROF__AO_CORR = 32, GPUPROF__AO_SIZE = 40,
    GPUPROF__YO_TYPE = 4, GPUPROF__YO_START = 8, GPUPROF__YO_END = 16, GPUPROF__YO_CORR = 24, GPUPROF__YO_STREAM = 32, GPUPROF__YO_SIZE = 40,
    GPUPROF__XO_KIND = 4, GPUPROF__XO_ID = 8, GPUPROF__XO_CORR = 16, GPUPROF__XO_SIZE = 24
};

/* The CUPTI seam: every entry point gpuprof calls, found by dlsym in the
   library loaded at init. The real libcupti and tests/simcupti export them. */
typedef void (*gpuprof__cupti_req_fn)(uint8_t **, size_t *, size_t *);
typedef void (*gpuprof__cupti_done_fn)(void *, uint32_t, uint8_t *, size_t, size_t);
typedef void (*gpuprof__cupti_sub_fn)(void *, int, uint32_t, const void *);
typedef struct gpuprof__cupti_api {
    int (*GetVersion)(uint32_t *);
    int (*GetResultString)(int, const char **);
    int (*Subscribe)(void **, gpuprof__cupti_sub_fn, void *);
    int (*ActivityRegisterCallbacks)(gpuprof__cupti_req_fn, gpuprof__cupti_done_fn);
    int (*ActivityRegisterTimestampCallback)(uint64_t (*)(void));
    int (*ActivityEnable)(int);
    int (*ActivityDisable)(int);
    int (*ActivityFlushAll)(uint32_t);
    int (*ActivityGetNextRecord)(uint8_t *, size_t, uint8_t **);
    int (*ActivityGetNumDroppedRecords)(void *, uint32_t, size_t *);
    int (*ActivityPushExternalCorrelationId)(int, uint64_t);
    int (*ActivityPopExternalCorrelationId)(int, uint64_t *);
    int (*GetTimestamp)(uint64_t *);
    int (*ActivityFlushPeriod)(uint32_t);
    int (*SetThreadIdType)(int);
    int (*ActivityEnableRuntimeApi)(uint32_t, uint8_t);
    int (*ActivityEnableDriverApi)(uint32_t, uint8_t);
    int (*ActivitySetAttribute)(int, size_t *, void *);
} gpuprof__cupti_api;
static const gpuprof__lib_sym gpuprof__cupti_syms[] = {
#define GPUPROF__CUPTI_SYM(f, opt) { "cupti" #f, offsetof(gpuprof__cupti_api, f), opt }
    GPUPROF__CUPTI_SYM(GetVersion, 0), GPUPROF__CUPTI_SYM(GetResultString, 0), GPUPROF__CUPTI_SYM(Subscribe, 1),
    GPUPROF__CUPTI_SYM(ActivityRegisterCallbacks, 0), GPUPROF__CUPTI_SYM(ActivityRegisterTimestampCallback, 1),
    GPUPROF__CUPTI_SYM(ActivityEnable, 0), GPUPROF__CUPTI_SYM(ActivityDisable, 0), GPUPROF__CUPTI_SYM(ActivityFlushAll, 0),
    GPUPROF__CUPTI_SYM(ActivityGetNextRecord, 0), GPUPROF__CUPTI_SYM(ActivityGetNumDroppedRecords, 0),
    GPUPROF__CUPTI_SYM(ActivityPushExternalCorrelationId, 0), GPUPROF__CUPTI_SYM(ActivityPopExternalCorrelationId, 0),
    GPUPROF__CUPTI_SYM(GetTimestamp, 0), GPUPROF__CUPTI_SYM(ActivityFlushPeriod, 1), GPUPROF__CUPTI_SYM(SetThreadIdType, 1),
    GPUPROF__CUPTI_SYM(ActivityEnableRuntimeApi, 1), GPUPROF__CUPTI_SYM(ActivityEnableDriverApi, 1),
    GPUPROF__CUPTI_SYM(ActivitySetAttribute, 1)
#undef GPUPROF__CUPTI_SYM
};

/* The CUDA calls every GPU-timed range makes (cupti_runtime_cbid.h,
   cupti_driver_cbid.h): cudaGetDevice, cudaEventRecord (plain, _ptsz,
   WithFlags), cudaStreamIsCapturing, cudaThreadExchangeStreamCaptureMode,
   cudaEventElapsedTime, and the driver calls under them. Their API records
   are turned off where CUPTI allows it (CUDA 12.5 on): none has GPU work to
   attribute, and recording them costs 0.3-1 us of CPU per range (an H100).
   cudaEventQuery and cudaEventSynchronize stay on: CUPTI writes a
   synchronization for each, which needs its call to be matched (and gpuprof's
   own are then set apart, gpuprof__kc_own_push). */
static const uint16_t gpuprof__kc_quiet_rt[] = { 17, 135, 139, 242, 317, 318, 327, 370, 371, 486 };
static const uint16_t gpuprof__kc_quiet_drv[] = { 16, 119, 123, 441, 499, 500, 541, 587, 588, 780 };

#define GPUPROF__KC_MAP (1u << 18)        /* correlation ids remembered (a ring: ids rise by one per API call) */
#define GPUPROF__KC_PENDING 65536         /* GPU records waiting for their launch record */
#define GPUPROF__KC_KERNELS 4096          /* distinct kernel names (then "(other kernels)") */
#define GPUPROF__KC_TOP 4                 /* candidates kept for "the most common" launch shape and range */
#define GPUPROF__KC_SHAPE 10              /* a launch shape: grid, block, registers, static and dynamic shared memory, device */
#define GPUPROF__UNDERFILL 0.5            /* a launch that gives work to fewer than half the SMs leaves most of the GPU idle */
#define GPUPROF__KC_SLOTS 1024            /* steps whose work is still gathered for the busy share (CUPTI
                                             hands records over every GPUPROF__KC_FLUSH_MS or when a buffer fills) */
#define GPUPROF__KC_FLUSH_MS 500
#define GPUPROF__KC_SHORT_NS 10000        /* "short" kernels: under 10 us */
#define GPUPROF__KC_BUF ((size_t)2 << 20) /* one activity buffer */
#define GPUPROF__KAPI_CBID 0x3fffu      /* a captured call's trace event: its cbid in the low bits of flags, */
#define GPUPROF__KAPI_NOWORK 0x4000u    /* ... this bit where it launched no work, 0x8000 for a driver call */
#define GPUPROF__KC_EPOCH 1000000000000ull   /* gpuprof's clock as CUPTI sees it starts here (never 0) */

/* A launch: the range open on the launching thread (0: none), its thread, the call's CPU time. */
typedef struct gpuprof__kcorr {
    uint32_t corr, tid;
    uint64_t ext;
    int64_t api_ns, api_end_ns;
    uint16_t cbid;
    uint8_t has_api, driver, traced;  /* traced: the call is in the trace */
} gpuprof__kcorr;

/* One GPU record, read out of CUPTI's buffer. */
enum { GPUPROF__KR_KERNEL = 0, GPUPROF__KR_MEMCPY = 1, GPUPROF__KR_MEMSET = 2, GPUPROF__KR_SYNC = 3 };
typedef struct gpuprof__krec {
    int64_t start, end;           /* trace ns */
    uint64_t bytes;
    uint32_t corr, corr2;         /* corr2: a copy's runtime correlation id */
    uint32_t kind, sub;           /* sub: copy direction | host memory << 8; sync type */
    uint32_t stream, device, kernel;   /* kernel: index in the kernel table */
    uint32_t grid[3], block[3], regs, smem, dsmem;   /* smem: static + dynamic shared memory; dsmem: the dynamic part */
} gpuprof__krec;

/* "The most common" among many, in a few slots (space-saving counts: exact
   when there are no more distinct keys than slots). */
typedef struct gpuprof__ktop { uint64_t key[GPUPROF__KC_TOP], n[GPUPROF__KC_TOP]; } gpuprof__ktop;

typedef struct gpuprof__kernel {
    char *name;                   /* as CUPTI spells it (copied: CUPTI owns its string) */
    char *shown, *json;           /* demangled where possible; as a JSON string */
    uint32_t hash;
    uint32_t shape[GPUPROF__KC_TOP][GPUPROF__KC_SHAPE];   /* the candidates in `shapes`: see gpuprof__kc_shape */
    gpuprof__launch fig[GPUPROF__KC_TOP];        /* ... and their launch figures */
    gpuprof__ktop shapes, ranges; /* ranges: by name id (0: outside any range) */
    double fill_ns, occ_ns, est_ns;   /* over launches with known figures: sums of time x sm_fill, x occupancy, x est_achieved */
    double known_ns, idle_ns;     /* the time of those launches; of launches that leave most SMs idle (sm_fill < 1/2) */
    int tensor;                   /* gpuprof__tensor_cores of its name: 1, 0, -1 */
    gpuprof_stats stats;          /* GPU time per call, counted steps (last: see gpuprof__kc_kernel) */
} gpuprof__kernel;

typedef struct gpuprof__kxfer { uint64_t count, bytes, sum_ns; gpuprof__ktop ranges; } gpuprof__kxfer;

typedef struct gpuprof__kslot {
    uint64_t step;
    int64_t t0, len;              /* the step's window on the CPU timeline (the current step's is open) */
    int counted, used;
    uint64_t launched, short_k;
    int64_t *iv;                  /* GPU intervals (start, end) of the work launched in the step */
    uint32_t niv, cap;
} gpuprof__kslot;

/* One call of a range made while capture is on, for its GPU span: the first
   start to the last end of the GPU work launched inside it, nested ranges
   included. The recording thread takes a slot at the range's begin (when
   the collector has let go of it: else the call has no span, counted) and
   marks the end; the collector extends the span as records come, and folds
   the call into the range's statistics once its records are in: at
   shutdown (after the last flush), or GPUPROF__KC_SETTLE_NS after its end
   (CUPTI hands buffers over every 500 ms, or when one fills), or when
   GPUPROF__KC_CALLS / 2 later calls need the room (oldest first). */
typedef struct gpuprof__kcall {
    /* the recording thread's, published by seq (begin) and t1 (end) */
    uint64_t seq;                 /* the call's number + 1; written last at the begin */
    uint64_t skip;                /* the highest number + 1 of a later call that found the slot taken */
    gpuprof__node *node;
    uint64_t parent;              /* the enclosing call's number + 1 (0: none) */
    uint64_t step, t0, t1;        /* t1: CPU ticks at the end, 0 while open; written last at the end */
    int busy;                     /* 1 from the begin until the collector folds it */
    int decision, depth, tid;
    double flops, bytes;          /* GPUPROF_RANGE_WORK: work per call (trace args), else 0 */
    /* the collector's (kc.mu) */
    uint64_t folded;              /* seq of the last call of this slot that was folded */
    int64_t first, last;          /* the span, trace ns */
    uint64_t own_ns;              /* GPU time of the work launched inside the call itself */
    uint32_t nrec, device, stream;   /* records in the span (nested ranges' too); device and stream of the first */
} gpuprof__kcall;
#define GPUPROF__KC_CALLS (1u << 16)      /* calls whose span is being gathered, at most (ring) */
#define GPUPROF__KC_SETTLE_NS 5000000000ll   /* a call's records are in this long after its end (10 x the flush period) */

static struct {
    int live;                     /* the hot path pushes ids: capture on in this session */
    int loaded, subscribed, callbacks, ts_cb;   /* process-wide: CUPTI is loaded, ...; the timestamp callback took */
    int accepting;                /* buffers are read (else recycled unread) */
    void *lib;
    gpuprof__cupti_api api;
    uint32_t version;
    char library[512];
    char status[320];             /* why capture is off (empty: on, or not asked for) */
    int asked;
    uint64_t epoch;               /* the callback's value at this session's time zero */
    int64_t pair_off;             /* without the callback: trace ns = CUPTI ns + pair_off */
    /* the buffer pool (kc.pool_mu, never held across a CUPTI call) */
    uint8_t *free_bufs[64];
    uint32_t nfree, nbufs, max_bufs;
    int zeroed;                   /* CUPTI takes gpuprof's buffers as zeroed (ZEROED_OUT_ACTIVITY_BUFFER) */
    uint64_t declined;
    /* the collector (kc.mu) */
    gpuprof__kcorr *map;
    gpuprof__krec *pending;
    uint32_t npending;
    gpuprof__kernel **kern;
    uint32_t nkern, kern_cap;
    uint32_t *kern_hash;          /* open addressing: kernel index + 1 */
    gpuprof__kxfer xfer[5][3];    /* direction HtoD, DtoH, DtoD, HtoH, PtoP x host memory pageable, pinned, neither */
    gpuprof__kxfer sync[4];       /* device, stream, event, stream_wait_event */
    uint64_t memsets, memset_ns;
    uint64_t records, dropped, unattributed, bad_times, late, other_kernels, own;
    uint64_t kernels_counted, short_counted;
    gpuprof__kslot slot[GPUPROF__KC_SLOTS];
    gpuprof_stats per_step, busy;  /* settled counted steps: kernels launched, GPU busy % */
    gpuprof__thread *tracer;      /* the collector's trace events go into this state's blocks (kc.mu) */
    /* range calls and their GPU spans: slots taken by the recording threads, folded by the collector */
    gpuprof__kcall *calls;        /* allocated once per process, never freed (a late range end may write to it) */
    uint64_t call_next;           /* the next call's number (atomic) */
    uint64_t fold_pos;            /* calls below it are folded, skipped, or in open[] (kc.mu) */
    uint64_t *open;               /* numbers + 1 of calls the fold passed while they were open */
    uint32_t nopen, open_cap;
    int64_t settled_at;           /* trace ns of the last fold pass */
    uint64_t spans_skipped;       /* calls that found their slot taken: no span (atomic) */
    uint64_t spans_late;          /* GPU records of a call already folded */
    uint64_t reset_below;         /* calls numbered below this began before gpuprof_reset: not counted */
} gpuprof__kc;
static pthread_mutex_t gpuprof__kc_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t gpuprof__kc_pool_mu = PTHREAD_MUTEX_INITIALIZER;

static const char *gpuprof__cupti_error(int rc) {
    const char *s = NULL;
    if (gpuprof__kc.api.GetResultString && gpuprof__kc.api.GetResultString(rc, &s) != GPUPROF__CU_OK) s = NULL;
    return s ? s : "CUPTI error";
}

/* The id a range pushes: its node (8-aligned, below 2^48) in the low 45
   bits, then either (bit 63 clear) the step it began in, 18 bits, or (bit
   63 set) its call's slot in gpuprof__kc.calls, 16 bits, and 2 bits of the
   call's number above those, which tell a call from the slot's later ones. */
#define GPUPROF__KC_NODE_BITS 45
#define GPUPROF__KC_OWN 1ull          /* the id around gpuprof's own CUDA calls ("node" 8: never a node) */
#define GPUPROF__KC_CALL_BIT (1ull << 63)
static uint64_t gpuprof__kc_ext(const gpuprof__node *n) {
    return ((uintptr_t)n >> 3) | ((uint64_t)GPUPROF__LD(&gpuprof__steps.step) << GPUPROF__KC_NODE_BITS & ~GPUPROF__KC_CALL_BIT);
}
static uint64_t gpuprof__kc_call_ext(const gpuprof__node *n, uint64_t call) {
    return ((uintptr_t)n >> 3) | (uint64_t)(call % GPUPROF__KC_CALLS) << GPUPROF__KC_NODE_BITS | (call / GPUPROF__KC_CALLS & 3u) << 61 | GPUPROF__KC_CALL_BIT;
}
static gpuprof__node *gpuprof__kc_node(uint64_t ext) { return (gpuprof__node *)(uintptr_t)((ext & ((1ull << GPUPROF__KC_NODE_BITS) - 1)) << 3); }

/* gpuprof's own CUDA calls (the event queries and waits that read ranges' GPU
   times) run under an id of their own, and the collector leaves their records
   out: their synchronizations are not the program's. The push happens where
   capture is on and says whether it did; gpuprof__kc_pop pops what was pushed. */
static int gpuprof__kc_own_push(void) {
    return GPUPROF__LD(&gpuprof__kc.live) &&
           gpuprof__kc.api.ActivityPushExternalCorrelationId(GPUPROF__EXT_CUSTOM2, GPUPROF__KC_OWN) == GPUPROF__CU_OK;
}

static GPUPROF__NOINLINE void gpuprof__kc_pop(void) {
    uint64_t id;
    if (gpuprof__kc.loaded > 0) (void)gpuprof__kc.api.ActivityPopExternalCorrelationId(GPUPROF__EXT_CUSTOM2, &id);
}
#endif /* GPUPROF_CUDA */

/* ----------------------------------------------------------------------
   GPU backend (CUDA builds; SPEC 5)
   A range's GPU part: at its begin a start event from the thread's pool is
   recorded on the range's stream, at its end a stop event; the pair goes
   into the thread's queue of pending records. Finished records are
   harvested with cudaEventQuery only -- every few range ends, at
   GPUPROF_STEP and gpuprof_flush -- and never by waiting, except in the one
   drain before a report or at shutdown. GPU start times are placed on the
   CPU clock against an anchor event recorded on gpuprof's own idle
   non-blocking stream, renewed every second; the clock rate between GPU and
   CPU is measured over the anchors so drift stays bounded. Any CUDA error
   turns GPU timing off with one message; CPU timing goes on.
   ---------------------------------------------------------------------- */
#ifdef GPUPROF_CUDA
#define GPUPROF__MAX_DEV 16
#define GPUPROF__RING (1024 + 2 * GPUPROF_MAX_DEPTH)      /* pending records per thread */
#define GPUPROF__POOL (2 * GPUPROF__RING + 8)              /* events per thread and device, at most */
#define GPUPROF__ANCHORS 8
#define GPUPROF__TRACKS 256
#define GPUPROF__GPU_TID0 1000000
#define GPUPROF__STEP_SLOTS 64
#define GPUPROF__HARVEST_EVERY 16
/* At most this many records per harvest from a range end (about 3 CUDA
   calls, ~3 us, each): after the program waits for the GPU every record is
   finished at once, and taking them all would hold up its next launches
   while the GPU sits idle; taken 32 at a time (twice the rate ranges make
   them) the backlog drains while the GPU is busy again. */
#define GPUPROF__HARVEST_MAX 32

typedef struct gpuprof__gpurec {
    cudaEvent_t e0, e1;           /* NULL: a marker for a range without GPU part */
    gpuprof__node *node;
    void *stream;
    uint64_t t0, t1;              /* CPU ticks at the range's begin and end */
    double flops, bytes;          /* GPUPROF_RANGE_WORK: work per call (trace args), else 0 */
    uint64_t step;
    uint32_t depth;               /* 0 = outermost range of its thread */
    int dev, decision;            /* decision: 0 counted, 1 excluded (warm-up), 2 see gpuprof__exclude */
} gpuprof__gpurec;

struct gpuprof__gput {     /* declared in "Global state": a thread state points to it */
    pthread_mutex_t mu;           /* held by whoever harvests this thread's records */
    uint64_t head, tail;          /* ring[tail..head) pending; head written by the owner only */
    gpuprof__gpurec ring[GPUPROF__RING];
    uint64_t acc[GPUPROF_MAX_DEPTH + 2];   /* GPU time of finished children, per depth */
    cudaEvent_t *pool[GPUPROF__MAX_DEV];   /* the owner's free events */
    uint32_t npool[GPUPROF__MAX_DEV], created[GPUPROF__MAX_DEV];
    cudaEvent_t *back[GPUPROF__MAX_DEV];   /* returned by another thread's harvest (under mu) */
    uint32_t nback[GPUPROF__MAX_DEV];
    uint32_t since;               /* records pushed since the last harvest */
    void *cache_stream;           /* stream -> track, last lookup */
    int cache_dev, cache_track;
};

/* GPU time -> CPU time is a continuous piecewise-linear function: a knot
   per anchor (GPU time since the first anchor -> CPU ns), and a slope to the
   next. A new knot continues the last segment (so two events at one GPU
   instant land on one CPU nanosecond, whenever each is placed), and its slope
   steers the line onto the new measurement over the next second. */
typedef struct gpuprof__knots {
    cudaEvent_t ev[GPUPROF__ANCHORS];      /* the anchor event of each knot */
    uint32_t cur, n;
    double gpu[GPUPROF__ANCHORS]; /* knot k at GPU time gpu[k] (ns since the first anchor) */
    double cpu[GPUPROF__ANCHORS]; /* ... maps to cpu[k] (CPU ns since the trace's zero) */
    double slope[GPUPROF__ANCHORS];
} gpuprof__knots;

typedef struct gpuprof__anchor {
    int ready;
    cudaStream_t stream;          /* non-blocking, idle: an event there completes at once */
    cudaEvent_t ev[GPUPROF__ANCHORS];
    double measured[GPUPROF__ANCHORS];     /* CPU time each anchor completed at, as measured */
    double gpu[GPUPROF__ANCHORS], cpu[GPUPROF__ANCHORS], slope[GPUPROF__ANCHORS];
    uint32_t cur, n, seq;         /* seq is odd while an anchor is being added */
    double rate;                  /* CPU ns per GPU ns, measured over the anchors (~7 s) */
} gpuprof__anchor;

static struct {
    int on;                       /* GPU timing now */
    int events;                   /* ranges record CUDA events (on, unless GPUPROF_GPU=kernels took over) */
    int from_kernels;             /* GPUPROF_GPU=kernels in effect: a range's GPU time is the span of its kernels */
    int available;                /* a device was found at init */
    int ndev, dev0, driver, runtime;
    int cc_major, cc_minor, sms, clock_khz, mem_khz, bus_bits;   /* dev0's, for the roofline peaks (0: unknown) */
    gpuprof__devlim lim[GPUPROF__MAX_DEV];   /* each device's limits, for the launch figures (SPEC 20) */
    char name[256];
    char status[256];             /* why GPU timing is off, for the report */
    gpuprof__anchor anchor[GPUPROF__MAX_DEV];
    struct { void *stream; int dev, tid; char label[96]; } track[GPUPROF__TRACKS];
    uint32_t ntracks;
    unsigned track_meta[GPUPROF__TRACKS];  /* the formatter's: the output generation its metadata is in */
    uint64_t timed, skipped_capture, skipped_backlog, skipped_device, lost, events_created, anchors;
    double anchor_uncertainty_ns;
    /* per-step GPU busy time (outermost ranges, wherever they were begun)
       inside the step's window on the CPU timeline, for the idle share */
    struct { uint64_t step, t0_ns, busy_ns, len_ns; int closed, counted; } slot[GPUPROF__STEP_SLOTS];
    gpuprof_stats idle;           /* per counted step: share of the step the GPU was idle, in % */
} gpuprof__gpu;
static pthread_mutex_t gpuprof__gpu_mu = PTHREAD_MUTEX_INITIALIZER;   /* anchors and stream tracks */
#define GPUPROF__FROM_KERNELS gpuprof__gpu.from_kernels

/* The range's begin and end (next) call these, defined further on with the
   harvest they belong to. */
static int gpuprof__gpu_harvest(gpuprof__thread *owner, gpuprof__thread *me, int wait, int limit);
static void gpuprof__anchor_renew(int dev);
static void gpuprof__gpu_busy(uint64_t step, int placed, int64_t start_ns, int64_t end_ns, uint64_t dur);

/* Clears an error gpuprof caused from the runtime's last-error slot, so the
   program's own cudaGetLastError() does not see it. */
static void gpuprof__cuda_clear(cudaError_t e) {
    if (cudaPeekAtLastError() == e) (void)cudaGetLastError();
}

/* Device dev's limits for the launch figures (a field the runtime cannot
   give stays 0, and the launch figures are then unknown). */
static void gpuprof__devlim_read(int dev, gpuprof__devlim *d) {
    static const enum cudaDeviceAttr attr[12] = {
        cudaDevAttrComputeCapabilityMajor, cudaDevAttrComputeCapabilityMinor, cudaDevAttrMultiProcessorCount, cudaDevAttrWarpSize,
        cudaDevAttrMaxThreadsPerBlock, cudaDevAttrMaxThreadsPerMultiProcessor, cudaDevAttrMaxRegistersPerBlock,
        cudaDevAttrMaxRegistersPerMultiprocessor, cudaDevAttrMaxSharedMemoryPerBlock, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
        cudaDevAttrMaxSharedMemoryPerBlockOptin, cudaDevAttrReservedSharedMemoryPerBlock
    };
    int *out[12], k;
    cudaError_t e;
    out[0] = &d->cc_major; out[1] = &d->cc_minor; out[2] = &d->sms; out[3] = &d->warp;
    out[4] = &d->threads_block; out[5] = &d->threads_sm; out[6] = &d->regs_block; out[7] = &d->regs_sm;
    out[8] = &d->smem_block; out[9] = &d->smem_sm; out[10] = &d->smem_optin; out[11] = &d->smem_reserved;
    for (k = 0; k < 12; k++)
        if ((e = cudaDeviceGetAttribute(out[k], attr[k], dev)) != cudaSuccess) { *out[k] = 0; gpuprof__cuda_clear(e); }
}

static GPUPROF__NOINLINE void gpuprof__gpu_fail(cudaError_t e, const char *where) {
    if (!GPUPROF__LD(&gpuprof__gpu.on)) return;
    GPUPROF__ST(&gpuprof__gpu.on, 0);
    GPUPROF__ST(&gpuprof__gpu.events, 0);
    snprintf(gpuprof__gpu.status, sizeof gpuprof__gpu.status, "GPU timing stopped: %s in %s", cudaGetErrorName(e), where);
    if (e == cudaErrorCudartUnloading) return;            /* the process is exiting */
    gpuprof__cuda_clear(e);
    gpuprof__warn(GPUPROF__W_CUDA, "CUDA error %d (%s: %s) in %s; GPU timing is off from here on, CPU timing goes on (GPU times measured before are kept)",
                  (int)e, cudaGetErrorName(e), cudaGetErrorString(e), where);
}

/* Once per session, at init: is there a device? */
static void gpuprof__gpu_probe(int wanted) {
    int n = 0, dev = 0, dv;
    cudaError_t e;
    struct cudaDeviceProp prop;
    uint32_t i;
    GPUPROF__ST(&gpuprof__gpu.on, 0);
    GPUPROF__ST(&gpuprof__gpu.events, 0);
    gpuprof__gpu.available = 0;
    gpuprof__gpu.name[0] = 0;
    gpuprof__g.gpu_bus[0] = 0;
    gpuprof__gpu.timed = gpuprof__gpu.skipped_capture = gpuprof__gpu.skipped_backlog = gpuprof__gpu.skipped_device = 0;
    gpuprof__gpu.lost = gpuprof__gpu.events_created = gpuprof__gpu.anchors = 0;
    gpuprof__gpu.anchor_uncertainty_ns = 0;
    gpuprof__gpu.ntracks = 0;
    gpuprof__gpu.cc_major = gpuprof__gpu.cc_minor = gpuprof__gpu.sms = gpuprof__gpu.clock_khz = gpuprof__gpu.mem_khz = gpuprof__gpu.bus_bits = 0;
    memset(gpuprof__gpu.lim, 0, sizeof gpuprof__gpu.lim);
    memset(gpuprof__gpu.slot, 0, sizeof gpuprof__gpu.slot);
    for (i = 0; i < GPUPROF__STEP_SLOTS; i++) gpuprof__gpu.slot[i].step = i;
    gpuprof_stats_init(&gpuprof__gpu.idle);
    if (!wanted) { snprintf(gpuprof__gpu.status, sizeof gpuprof__gpu.status, "GPU timing off (GPUPROF_GPU=0)"); return; }
    if (gpuprof__g.cuda_forked) {
        /* CUDA does not survive fork(): a child may not touch it once the parent has. */
        snprintf(gpuprof__gpu.status, sizeof gpuprof__gpu.status, "GPU timing off: forked after CUDA started in the parent");
        gpuprof__warn(GPUPROF__W_NO_GPU, "this process was forked after CUDA started in its parent, and CUDA cannot be used across fork(); GPU timing is off, CPU timing goes on");
        return;
    }
    gpuprof__g.cuda_started = 1;
    cudaDriverGetVersion(&gpuprof__gpu.driver);
    cudaRuntimeGetVersion(&gpuprof__gpu.runtime);
    e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= 0) {
        const char *why = e == cudaErrorInsufficientDriver ? "no usable NVIDIA driver" :
                          e == cudaErrorNoDevice || e == cudaSuccess ? "no CUDA device visible (check CUDA_VISIBLE_DEVICES)" :
                          "cudaGetDeviceCount failed";
        if (e == cudaSuccess) e = cudaErrorNoDevice;
        gpuprof__cuda_clear(e);
        snprintf(gpuprof__gpu.status, sizeof gpuprof__gpu.status, "no GPU: %s (%s)", why, cudaGetErrorName(e));
        gpuprof__warn(GPUPROF__W_NO_GPU, "CUDA is not usable here: %s (%s); GPU timing is off, CPU timing goes on", why, cudaGetErrorName(e));
        return;
    }
    if ((e = cudaGetDevice(&dev)) != cudaSuccess || (e = cudaGetDeviceProperties(&prop, dev)) != cudaSuccess) {
        gpuprof__cuda_clear(e);
        snprintf(gpuprof__gpu.status, sizeof gpuprof__gpu.status, "no GPU: %s", cudaGetErrorName(e));
        gpuprof__warn(GPUPROF__W_NO_GPU, "cannot query the CUDA device (%s: %s); GPU timing is off, CPU timing goes on", cudaGetErrorName(e), cudaGetErrorString(e));
        return;
    }
    gpuprof__gpu.ndev = n;
    gpuprof__gpu.dev0 = dev;
    snprintf(gpuprof__gpu.name, sizeof gpuprof__gpu.name, "%s", prop.name);
    snprintf(gpuprof__g.gpu_bus, sizeof gpuprof__g.gpu_bus, "%08X:%02X:%02X.0", (unsigned)prop.pciDomainID, (unsigned)prop.pciBusID, (unsigned)prop.pciDeviceID);
    gpuprof__gpu.cc_major = prop.major;
    gpuprof__gpu.cc_minor = prop.minor;
    {
        /* CUDA 13's cudaDeviceProp has no clock rates: the attributes have them */
        static const enum cudaDeviceAttr attr[4] = { cudaDevAttrMultiProcessorCount, cudaDevAttrClockRate, cudaDevAttrMemoryClockRate,
                                                     cudaDevAttrGlobalMemoryBusWidth };
        int *out[4], k;
        out[0] = &gpuprof__gpu.sms; out[1] = &gpuprof__gpu.clock_khz; out[2] = &gpuprof__gpu.mem_khz; out[3] = &gpuprof__gpu.bus_bits;
        for (k = 0; k < 4; k++)
            if ((e = cudaDeviceGetAttribute(out[k], attr[k], dev)) != cudaSuccess) { *out[k] = 0; gpuprof__cuda_clear(e); }
    }
    for (dv = 0; dv < n && dv < GPUPROF__MAX_DEV; dv++) gpuprof__devlim_read(dv, &gpuprof__gpu.lim[dv]);
    gpuprof__gpu.status[0] = 0;
    gpuprof__gpu.available = 1;
    GPUPROF__ST(&gpuprof__gpu.on, 1);
    GPUPROF__ST(&gpuprof__gpu.events, 1);
    /* The first anchor now, so the first ranges are placed against a recent one. */
    pthread_mutex_lock(&gpuprof__gpu_mu);
    gpuprof__anchor_renew(dev);
    pthread_mutex_unlock(&gpuprof__gpu_mu);
}

static gpuprof__gput *gpuprof__gput_new(gpuprof__thread *t) {
    gpuprof__gput *g = (gpuprof__gput *)gpuprof__alloc(sizeof *g);
    if (!g) return NULL;
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    g->cache_track = -1;
    GPUPROF__STR(&t->gpu, g);          /* a drain on another thread may now use it */
    return g;
}

/* An event for device dev: from the pool, else a new one (until the pool's
   bound, which the ring's size guarantees is never reached). */
static cudaEvent_t gpuprof__event_get(gpuprof__gput *g, int dev) {
    cudaEvent_t ev;
    cudaError_t e;
    if (GPUPROF__UNLIKELY(!g->npool[dev])) {
        if (!g->pool[dev]) {
            g->pool[dev] = (cudaEvent_t *)gpuprof__alloc(2 * GPUPROF__POOL * sizeof(cudaEvent_t));
            if (!g->pool[dev]) return NULL;
            g->back[dev] = g->pool[dev] + GPUPROF__POOL;
        }
        if (GPUPROF__LD(&g->nback[dev])) {       /* events another thread's harvest gave back */
            pthread_mutex_lock(&g->mu);
            memcpy(g->pool[dev], g->back[dev], g->nback[dev] * sizeof(cudaEvent_t));
            g->npool[dev] = g->nback[dev];
            GPUPROF__ST(&g->nback[dev], 0u);
            pthread_mutex_unlock(&g->mu);
        }
        if (!g->npool[dev]) {
            int cur = dev;
            if (g->created[dev] >= GPUPROF__POOL) return NULL;
            /* an event belongs to the device current when it is made */
            if (cudaGetDevice(&cur) == cudaSuccess && cur != dev) cudaSetDevice(dev);
            e = cudaEventCreateWithFlags(&ev, cudaEventDefault);
            if (cur != dev) cudaSetDevice(cur);
            if (e != cudaSuccess) { gpuprof__gpu_fail(e, "cudaEventCreateWithFlags"); return NULL; }
            g->created[dev]++;
            GPUPROF__ADD(&gpuprof__gpu.events_created, 1);
            return ev;
        }
    }
    return g->pool[dev][--g->npool[dev]];
}

/* Gives an event back: to the pool if the caller owns it, else to the
   owner's return list (the caller holds g->mu). */
static void gpuprof__event_put(gpuprof__gput *g, int dev, cudaEvent_t ev, int owner) {
    if (owner) g->pool[dev][g->npool[dev]++] = ev;
    else { g->back[dev][g->nback[dev]] = ev; GPUPROF__ST(&g->nback[dev], g->nback[dev] + 1); }
}

/* Is stream s being captured into a graph? 1 yes (or the legacy stream
   is implicitly part of a capture), 0 no, -1 error (GPU timing is off). */
static int gpuprof__capturing(void *s) {
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing((cudaStream_t)s, &cs);
    if (e == cudaErrorStreamCaptureImplicit) { gpuprof__cuda_clear(e); return 1; }
    if (e != cudaSuccess) { gpuprof__gpu_fail(e, "cudaStreamIsCapturing"); return -1; }
    return cs != cudaStreamCaptureStatusNone;
}

static GPUPROF__NOINLINE void gpuprof__gpu_begin_slow(gpuprof__thread *t, gpuprof__frame *f, void *stream, int s0) {
    gpuprof__gput *g = t->gpu ? t->gpu : gpuprof__gput_new(t);
    void *s = stream ? stream : t->stream ? t->stream : (void *)(uintptr_t)(s0 == 2 ? 2 : 1);
    cudaEvent_t ev;
    cudaError_t e;
    int dev = 0, c;
    if (!g) return;
    if ((e = cudaGetDevice(&dev)) != cudaSuccess) { gpuprof__gpu_fail(e, "cudaGetDevice"); return; }
    if (dev < 0 || dev >= GPUPROF__MAX_DEV) { GPUPROF__ADD(&gpuprof__gpu.skipped_device, 1); return; }
    if (g->head - GPUPROF__LD(&g->tail) + GPUPROF_MAX_DEPTH + 2 > GPUPROF__RING) {
        gpuprof__gpu_harvest(t, t, 0, GPUPROF__HARVEST_MAX);
        if (g->head - GPUPROF__LD(&g->tail) + GPUPROF_MAX_DEPTH + 2 > GPUPROF__RING) {
            GPUPROF__ADD(&gpuprof__gpu.skipped_backlog, 1);
            return;
        }
    }
    if ((c = gpuprof__capturing(s)) != 0) {
        if (c > 0) GPUPROF__ADD(&gpuprof__gpu.skipped_capture, 1);
        return;
    }
    if (!(ev = gpuprof__event_get(g, dev))) return;
    if ((e = cudaEventRecord(ev, (cudaStream_t)s)) != cudaSuccess) {
        gpuprof__event_put(g, dev, ev, 1);
        gpuprof__gpu_fail(e, "cudaEventRecord (is the range's stream on the current device?)");
        return;
    }
    f->gev0 = ev;
    f->gstream = s;
    f->gdev = dev;
}

/* The range of frame f (depth d, 1-based) ends: record its stop event and
   queue the pair; a range without GPU part whose children had one queues a
   marker, so the children's time is not given to a later range. */
static GPUPROF__NOINLINE void gpuprof__gpu_end_slow(gpuprof__thread *t, gpuprof__frame *f, uint32_t d, int decision, uint64_t t1) {
    gpuprof__gput *g = t->gpu;
    gpuprof__gpurec *r;
    cudaEvent_t ev = NULL;
    if (!g) return;
    if (f->gev0) {
        cudaError_t e;
        int c = -1, cur = f->gdev, ok = 0;
        if (!GPUPROF__LD(&gpuprof__gpu.on)) { gpuprof__event_put(g, f->gdev, (cudaEvent_t)f->gev0, 1); return; }
        /* The program may have switched devices inside the range: the stop
           event goes where the start event went, then the device is put back. */
        if ((e = cudaGetDevice(&cur)) != cudaSuccess) gpuprof__gpu_fail(e, "cudaGetDevice");
        else if (cur != f->gdev && (e = cudaSetDevice(f->gdev)) != cudaSuccess) { gpuprof__gpu_fail(e, "cudaSetDevice"); cur = f->gdev; }
        else if ((c = gpuprof__capturing(f->gstream)) > 0) {
            /* a capture began inside the range: its start event is an ordinary one, reusable */
            GPUPROF__ADD(&gpuprof__gpu.skipped_capture, 1);
            ok = 1;
        } else if (c == 0 && (ev = gpuprof__event_get(g, f->gdev)) != NULL) {
            if ((e = cudaEventRecord(ev, (cudaStream_t)f->gstream)) != cudaSuccess) {
                gpuprof__event_put(g, f->gdev, ev, 1);
                ev = NULL;
                gpuprof__gpu_fail(e, "cudaEventRecord");
            } else ok = 1;
        }
        if (cur != f->gdev) cudaSetDevice(cur);
        if (!ev) {
            gpuprof__event_put(g, f->gdev, (cudaEvent_t)f->gev0, 1);
            f->gev0 = NULL;
            if (!ok) return;
        }
    }
    r = &g->ring[g->head % GPUPROF__RING];
    r->e0 = ev ? (cudaEvent_t)f->gev0 : NULL;
    r->e1 = ev;
    r->node = f->node;
    r->stream = f->gstream;
    r->dev = f->gdev;
    r->t0 = f->t0;
    r->t1 = t1;
    if (f->flags & GPUPROF__F_WORK) { r->flops = f->flops; r->bytes = f->bytes; }
    else r->flops = r->bytes = 0;
    r->step = GPUPROF__LD(&gpuprof__steps.step);
    r->depth = d - 1;
    r->decision = decision;
    GPUPROF__STR(&g->head, g->head + 1);     /* a harvesting thread may now read it */
    t->gpu_pushed++;
    if (++g->since >= GPUPROF__HARVEST_EVERY) gpuprof__gpu_harvest(t, t, 0, GPUPROF__HARVEST_MAX);
}

GPUPROF__INLINE void gpuprof__gpu_begin(gpuprof__thread *t, gpuprof__frame *f, void *stream, int s0) {
    f->gev0 = NULL;
    f->gseq = t->gpu_pushed;
    if (GPUPROF__LD(&gpuprof__gpu.events)) gpuprof__gpu_begin_slow(t, f, stream, s0);
}

GPUPROF__INLINE void gpuprof__gpu_end(gpuprof__thread *t, gpuprof__frame *f, uint32_t d, int decision, uint64_t t1) {
    if (f->gev0 || t->gpu_pushed != f->gseq) gpuprof__gpu_end_slow(t, f, d, decision, t1);
}
#define GPUPROF__GPU_PART(f) ((f)->gev0 != NULL)   /* after gpuprof__gpu_end: the range went to the GPU too */
#define GPUPROF__GPU_QUIET(t, f) (!(f)->gev0 && (t)->gpu_pushed == (f)->gseq)   /* gpuprof__gpu_end has nothing to do */

/* A copy of dev's knots. Returns -1 when there is no anchor yet. */
static int gpuprof__anchor_read(int dev, gpuprof__knots *k) {
    gpuprof__anchor *a = &gpuprof__gpu.anchor[dev];
    uint32_t s1, s2, i;
    /* a seqlock: every read acquires, so the second read of seq comes after them */
    do {
        s1 = GPUPROF__LDA(&a->seq);
        k->n = GPUPROF__LDA(&a->n);
        if (!k->n) return -1;
        k->cur = GPUPROF__LDA(&a->cur);
        for (i = 0; i < GPUPROF__ANCHORS; i++) {
            k->ev[i] = a->ev[i];
            k->gpu[i] = gpuprof__ldda(&a->gpu[i]);
            k->cpu[i] = gpuprof__ldda(&a->cpu[i]);
            k->slope[i] = gpuprof__ldda(&a->slope[i]);
        }
        s2 = GPUPROF__LD(&a->seq);
    } while ((s1 & 1) || s1 != s2);
    return 0;
}

/* The CPU time of event ev: on the segment that contains it, measured from
   that segment's own anchor, so that two events at one GPU instant get the
   same float milliseconds, the same nanosecond, whenever each is placed. */
static cudaError_t gpuprof__knots_map(const gpuprof__knots *k, cudaEvent_t ev, int64_t *out) {
    float ms = 0;
    double g, c;
    uint32_t j = k->cur, held = k->n < GPUPROF__ANCHORS ? k->n : GPUPROF__ANCHORS, i;
    cudaError_t e = cudaEventElapsedTime(&ms, k->ev[j], ev);
    if (e != cudaSuccess) return e;
    g = k->gpu[j] + (double)ms * 1e6;
    for (i = 1; i < held && k->gpu[j] > g; i++) j = (j + GPUPROF__ANCHORS - 1) % GPUPROF__ANCHORS;
    if (j != k->cur) {
        if ((e = cudaEventElapsedTime(&ms, k->ev[j], ev)) != cudaSuccess) return e;
        g = k->gpu[j] + (double)ms * 1e6;
    }
    c = k->cpu[j] + (g - k->gpu[j]) * k->slope[j];
    *out = (int64_t)(c >= 0 ? c + 0.5 : c - 0.5);
    return cudaSuccess;
}

/* Records a new anchor on dev's private stream (under gpuprof__gpu_mu). It
   completes at once -- the stream is idle and waits for nothing -- so
   waiting for it with cudaEventQuery is short; the CPU time is the middle
   of the window in which it completed. */
static void gpuprof__anchor_renew(int dev) {
    gpuprof__anchor *a = &gpuprof__gpu.anchor[dev];
    int cur_dev = -1, k;
    uint32_t idx, base;
    uint64_t t0, t2, m0;
    double meas, g, c, slope;
    cudaError_t e = cudaSuccess;
    if (cudaGetDevice(&cur_dev) != cudaSuccess) return;
    if (cur_dev != dev && (e = cudaSetDevice(dev)) != cudaSuccess) { gpuprof__gpu_fail(e, "cudaSetDevice"); return; }
    if (!a->ready) {
        a->ready = 1;                          /* what gets made is destroyed at shutdown */
        a->rate = 1.0;
        if ((e = cudaStreamCreateWithFlags(&a->stream, cudaStreamNonBlocking)) != cudaSuccess) { a->stream = NULL; gpuprof__gpu_fail(e, "cudaStreamCreateWithFlags"); goto out; }
        for (k = 0; k < GPUPROF__ANCHORS; k++)
            if ((e = cudaEventCreateWithFlags(&a->ev[k], cudaEventDefault)) != cudaSuccess) { a->ev[k] = NULL; gpuprof__gpu_fail(e, "cudaEventCreateWithFlags"); goto out; }
    }
    idx = a->n ? (a->cur + 1) % GPUPROF__ANCHORS : 0;
    t0 = gpuprof__ticks();
    if ((e = cudaEventRecord(a->ev[idx], a->stream)) != cudaSuccess) { gpuprof__gpu_fail(e, "cudaEventRecord"); goto out; }
    m0 = gpuprof__mono_ns();
    while ((e = cudaEventQuery(a->ev[idx])) == cudaErrorNotReady && gpuprof__mono_ns() - m0 < 2000000) {}
    t2 = gpuprof__ticks();
    if (e == cudaErrorNotReady) goto out;                /* try again at the next harvest */
    if (e != cudaSuccess) { gpuprof__gpu_fail(e, "cudaEventQuery"); goto out; }
    meas = (double)gpuprof__ticks_to_ns(t0 - GPUPROF__LD(&gpuprof__clock.base)) + (double)gpuprof__ticks_to_ns(t2 - t0) / 2;
    if ((double)gpuprof__ticks_to_ns(t2 - t0) / 2 > gpuprof__gpu.anchor_uncertainty_ns)
        gpuprof__gpu.anchor_uncertainty_ns = (double)gpuprof__ticks_to_ns(t2 - t0) / 2;
    if (!a->n) { g = 0; c = meas; slope = 1.0; }
    else {
        float ms = 0;
        double err;
        if ((e = cudaEventElapsedTime(&ms, a->ev[a->cur], a->ev[idx])) != cudaSuccess) { gpuprof__gpu_fail(e, "cudaEventElapsedTime"); goto out; }
        g = a->gpu[a->cur] + (double)ms * 1e6;
        /* the clock rate over the longest baseline held (about 7 s) */
        base = a->n >= GPUPROF__ANCHORS ? (idx + 1) % GPUPROF__ANCHORS : 0;
        if (base != idx && meas - a->measured[base] > 9e8 && g > a->gpu[base]) {
            double r = (meas - a->measured[base]) / (g - a->gpu[base]);
            if (r > 0.999 && r < 1.001) gpuprof__std(&a->rate, r);
        }
        c = a->cpu[a->cur] + (g - a->gpu[a->cur]) * a->slope[a->cur];       /* continue the line */
        err = meas - c;
        if (err > 1e6 || err < -1e6) { c = meas; slope = a->rate; }          /* far off (a stall): jump */
        else {
            slope = a->rate + err / 1e9;                                      /* meet the measurement in ~1 s */
            if (slope > a->rate + 5e-4) slope = a->rate + 5e-4;
            if (slope < a->rate - 5e-4) slope = a->rate - 5e-4;
        }
    }
    GPUPROF__STR(&a->seq, a->seq + 1);
    a->measured[idx] = meas;
    gpuprof__std(&a->gpu[idx], g);
    gpuprof__std(&a->cpu[idx], c);
    gpuprof__std(&a->slope[idx], slope);
    GPUPROF__ST(&a->cur, idx);
    GPUPROF__ST(&a->n, a->n + 1);
    GPUPROF__STR(&a->seq, a->seq + 1);
    gpuprof__gpu.anchors++;
out:
    if (cur_dev != dev) cudaSetDevice(cur_dev);
}

/* The stream track of (dev, stream); per-thread default streams get one
   per thread. Under the owner's g->mu. */
static int gpuprof__track(gpuprof__gput *g, int dev, void *stream, int tid) {
    uint32_t i;
    if (g->cache_track >= 0 && g->cache_stream == stream && g->cache_dev == dev) return g->cache_track;
    pthread_mutex_lock(&gpuprof__gpu_mu);
    for (i = 0; i < gpuprof__gpu.ntracks; i++)
        if (gpuprof__gpu.track[i].stream == stream && gpuprof__gpu.track[i].dev == dev && (stream != (void *)2 || gpuprof__gpu.track[i].tid == tid)) break;
    if (i == gpuprof__gpu.ntracks) {
        if (i == GPUPROF__TRACKS) i = GPUPROF__TRACKS - 1;          /* the last track takes the rest */
        else {
            gpuprof__gpu.track[i].stream = stream;
            gpuprof__gpu.track[i].dev = dev;
            gpuprof__gpu.track[i].tid = tid;
            if (stream == (void *)1) snprintf(gpuprof__gpu.track[i].label, sizeof gpuprof__gpu.track[i].label, "GPU %d stream: legacy default", dev);
            else if (stream == (void *)2) snprintf(gpuprof__gpu.track[i].label, sizeof gpuprof__gpu.track[i].label, "GPU %d stream: per-thread default (thread %d)", dev, tid);
            else snprintf(gpuprof__gpu.track[i].label, sizeof gpuprof__gpu.track[i].label, "GPU %d stream %p", dev, stream);
            GPUPROF__STR(&gpuprof__gpu.ntracks, i + 1);
        }
    }
    pthread_mutex_unlock(&gpuprof__gpu_mu);
    g->cache_stream = stream;
    g->cache_dev = dev;
    g->cache_track = (int)i;
    return (int)i;
}

static gpuprof__gpustat *gpuprof__gpustat_at(gpuprof__gpustat **at) {
    gpuprof__gpustat *s = (gpuprof__gpustat *)GPUPROF__LDA(at);
    if (s) return s;
    if (!(s = (gpuprof__gpustat *)gpuprof__alloc(sizeof *s))) return NULL;
    memset(s, 0, sizeof *s);
    gpuprof_stats_init(&s->stats);
    GPUPROF__STR(at, s);
    return s;
}
#define gpuprof__gpustat_of(n) gpuprof__gpustat_at(&(n)->gpu)

/* One call's GPU time into g (NULL: no memory, nothing), by the call's
   warm-up/schedule decision (0 counted, 2 see gpuprof__exclude, else left out). */
static void gpuprof__gpustat_add(gpuprof__gpustat *g, int decision, uint64_t dur, uint64_t self, int64_t lag, int64_t wait) {
    if (!g) return;
    if (decision == 0) {
        gpuprof__stats_add_ns(&g->stats, dur);
        GPUPROF__ST(&g->self_ns, g->self_ns + self);
        GPUPROF__ST(&g->lag_ns, g->lag_ns + lag);
        GPUPROF__ST(&g->wait_ns, g->wait_ns + wait);
    } else if (decision == 2) {
        if (!g->pre) {
            gpuprof_stats *p = (gpuprof_stats *)gpuprof__alloc(sizeof *p);
            if (p) { gpuprof_stats_init(p); GPUPROF__STR(&g->pre, p); }
        }
        if (g->pre) gpuprof_stats_add(g->pre, (double)dur);
        GPUPROF__ST(&g->pre_self_ns, g->pre_self_ns + self);
    } else GPUPROF__ST(&g->excluded, g->excluded + 1);
}

/* One finished record: statistics, self time, step busy time, trace. */
static int gpuprof__gpu_take(gpuprof__thread *owner, gpuprof__thread *me, gpuprof__gpurec *r) {
    gpuprof__gput *g = owner->gpu;
    float ms = 0;
    cudaError_t e;
    gpuprof__knots k;
    int64_t start_ns = 0, end_ns = 0, lag, wait;
    int placed = 0;                              /* on the CPU timeline (there is an anchor) */
    uint64_t dur, kids, self;
    /* The duration from the pair itself (the finest resolution); the place
       on the CPU timeline of both ends from the anchor, so that two events
       at one GPU instant (one range's end, the next one's start) land on the
       same nanosecond. */
    if ((e = cudaEventElapsedTime(&ms, r->e0, r->e1)) != cudaSuccess) { gpuprof__gpu_fail(e, "cudaEventElapsedTime"); return -1; }
    dur = ms > 0 ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
    if (gpuprof__anchor_read(r->dev, &k) == 0) {
        if ((e = gpuprof__knots_map(&k, r->e0, &start_ns)) != cudaSuccess || (e = gpuprof__knots_map(&k, r->e1, &end_ns)) != cudaSuccess) {
            gpuprof__gpu_fail(e, "cudaEventElapsedTime");
            return -1;
        }
        if (end_ns < start_ns) end_ns = start_ns;
        placed = 1;
    }
    kids = g->acc[r->depth + 1];
    g->acc[r->depth + 1] = 0;
    g->acc[r->depth] += dur;
    self = dur > kids ? dur - kids : 0;
    lag = placed ? end_ns - (int64_t)gpuprof__ticks_to_ns(r->t1 - GPUPROF__LD(&gpuprof__clock.base)) : 0;
    wait = placed ? start_ns - (int64_t)gpuprof__ticks_to_ns(r->t0 - GPUPROF__LD(&gpuprof__clock.base)) : 0;
    gpuprof__gpustat_add(gpuprof__gpustat_of(r->node), r->decision, dur, self, lag, wait);
    GPUPROF__ADD(&gpuprof__gpu.timed, 1);
    if (r->depth == 0) gpuprof__gpu_busy(r->step, placed, start_ns, end_ns, dur);
    if (r->depth == 0 && placed) gpuprof__dev_gpu_window(r->node->name_id, start_ns, end_ns);
    if (me && placed && GPUPROF__LD(&gpuprof__trace.on)) {
        int track = gpuprof__track(g, r->dev, r->stream, owner->tid);
        uint32_t depth = r->depth > 255 ? 255 : r->depth;
        if (start_ns < 0) start_ns = 0;          /* before the trace's time zero: drawn at it */
        if (end_ns < start_ns) end_ns = start_ns;
        /* the arrow from the CPU range that began it (its event is in the trace whenever this one is) */
        gpuprof__trace_aux(me, GPUPROF__EV_FLOW, r->node->name_id, 0, r->t0 - GPUPROF__LD(&gpuprof__clock.base), (uint64_t)owner->tid);
        if (r->flops != 0 || r->bytes != 0) gpuprof__trace_work(me, r->node->name_id, r->flops, r->bytes, 0);
        gpuprof__trace_put(me, GPUPROF__EV_GPU | (track << 4), r->node->name_id,
                           (r->decision == 1 ? GPUPROF__EVF_WARMUP : 0) | (int)(depth << 8), (uint64_t)start_ns, (uint64_t)(end_ns - start_ns));
    }
    return 0;
}

/* Takes owner's finished records in order. wait=0: stops at the first one
   not finished (cudaEventQuery only) or after `limit` records (0: none);
   wait=1: the drain, which waits. me is the calling thread's state (its
   trace block gets the GPU events). */
static int gpuprof__gpu_harvest(gpuprof__thread *owner, gpuprof__thread *me, int wait, int limit) {
    gpuprof__gput *g = (gpuprof__gput *)GPUPROF__LDA(&owner->gpu);
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    uint64_t head, tail;
    int is_owner = me == owner, exchanged = 0, taken = 0, own = 0;
    if (!g) return 0;
    if (wait) pthread_mutex_lock(&g->mu);
    else if (pthread_mutex_trylock(&g->mu) != 0) return 0;
    head = GPUPROF__LDA(&g->head);
    tail = g->tail;
    if (is_owner) g->since = 0;
    while (tail != head && GPUPROF__LD(&gpuprof__gpu.on) && (wait || !limit || taken < limit)) {
        gpuprof__gpurec *r = &g->ring[tail % GPUPROF__RING];
        if (r->e0) {
            cudaError_t e;
            gpuprof__knots k;
            if (!exchanged) {
                own = gpuprof__kc_own_push();   /* its queries and waits are not the program's */
                /* In relaxed mode gpuprof's queries cannot break a capture
                   that this or another thread is making. */
                if ((e = cudaThreadExchangeStreamCaptureMode(&mode)) != cudaSuccess) { gpuprof__gpu_fail(e, "cudaThreadExchangeStreamCaptureMode"); break; }
                exchanged = 1;
            }
            e = cudaEventQuery(r->e1);
            if (e == cudaErrorNotReady && wait) e = cudaEventSynchronize(r->e1);
            if (e == cudaErrorNotReady) break;
            if (e != cudaSuccess) { gpuprof__gpu_fail(e, "cudaEventQuery"); break; }
            /* an anchor at most a second old keeps float milliseconds precise */
            if (gpuprof__anchor_read(r->dev, &k) != 0 ||
                (double)gpuprof__ticks_to_ns(gpuprof__ticks() - GPUPROF__LD(&gpuprof__clock.base)) - k.cpu[k.cur] > 1e9) {
                if (wait) pthread_mutex_lock(&gpuprof__gpu_mu);
                if (wait || pthread_mutex_trylock(&gpuprof__gpu_mu) == 0) {
                    gpuprof__anchor_renew(r->dev);
                    pthread_mutex_unlock(&gpuprof__gpu_mu);
                }
                if (!GPUPROF__LD(&gpuprof__gpu.on)) break;
            }
            if (gpuprof__gpu_take(owner, me, r) != 0) break;
            gpuprof__event_put(g, r->dev, r->e0, is_owner);
            gpuprof__event_put(g, r->dev, r->e1, is_owner);
            taken++;
        } else {
            g->acc[r->depth + 1] = 0;        /* the parent had no GPU part: nobody to give it to */
        }
        tail++;
        GPUPROF__ST(&g->tail, tail);
    }
    if (exchanged) cudaThreadExchangeStreamCaptureMode(&mode);
    if (own) gpuprof__kc_pop();
    pthread_mutex_unlock(&g->mu);
    return taken;
}

/* gpuprof_flush: all of this thread's finished records (steps use gpuprof__gpu_step_harvest). */
static void gpuprof__gpu_flush(void) {
    gpuprof__thread *t = gpuprof__tls;
    if (t && t->gpu && GPUPROF__LD(&gpuprof__gpu.on)) gpuprof__gpu_harvest(t, t, 0, 0);
}

/* GPUPROF_STEP: a step often ends right after the program waited for the
   GPU (a loss.item()), when taking the finished records would only delay
   its next launches while the GPU idles; range ends take them instead. Only
   records waiting for over 250 ms -- a loop of long steps with few ranges --
   are taken here, which also keeps the anchors fresh. */
static void gpuprof__gpu_step_harvest(void) {
    gpuprof__thread *t = gpuprof__tls;
    gpuprof__gput *g = t ? (gpuprof__gput *)t->gpu : NULL;
    uint64_t tail;
    if (!g || !GPUPROF__LD(&gpuprof__gpu.on)) return;
    tail = GPUPROF__LD(&g->tail);
    if (tail != g->head && gpuprof__ticks_to_ns(gpuprof__ticks() - g->ring[tail % GPUPROF__RING].t1) > 250000000ull)
        gpuprof__gpu_harvest(t, t, 0, GPUPROF__HARVEST_MAX);
}

/* Before a report or at shutdown: every thread's records, waiting for the
   ones still running (the one synchronisation gpuprof makes). */
static void gpuprof__gpu_drain(void) {
    gpuprof__thread *me = gpuprof__tls, *t;
    if (!GPUPROF__LD(&gpuprof__gpu.available)) return;
    if (me && me->session != gpuprof__g.session) me = NULL;
    pthread_mutex_lock(&gpuprof__lock);
    for (t = gpuprof__threads.threads; t; t = t->next)
        if (GPUPROF__LDA(&t->gpu) && GPUPROF__LD(&gpuprof__gpu.on)) gpuprof__gpu_harvest(t, me, 1, 0);
    pthread_mutex_unlock(&gpuprof__lock);
}

/* An outermost range's GPU time counts as busy in every step whose window
   (on the CPU timeline) it overlaps: a GPU running behind the CPU is busy in
   later steps with work begun earlier, and a step that waits for it (a
   loss.item(), a cudaMemcpy) is not idle. Unplaced (no anchor yet): all of
   it goes to the step it was begun in. A step is settled when its slot is
   reused, 64 steps later; GPU time harvested after that is not counted. */
static void gpuprof__gpu_busy(uint64_t step, int placed, int64_t start_ns, int64_t end_ns, uint64_t dur) {
    uint32_t k;
    if (!placed) {
        k = (uint32_t)(step % GPUPROF__STEP_SLOTS);
        if (GPUPROF__LD(&gpuprof__gpu.slot[k].step) == step) GPUPROF__ADD(&gpuprof__gpu.slot[k].busy_ns, dur);
        return;
    }
    for (k = 0; k < GPUPROF__STEP_SLOTS; k++) {
        uint64_t t0 = GPUPROF__LD(&gpuprof__gpu.slot[k].t0_ns), len = GPUPROF__LD(&gpuprof__gpu.slot[k].len_ns);
        int64_t a, b;
        /* t0 is 0 while a GPUPROF_STEP on another thread renews the slot */
        if (!t0 || GPUPROF__LD(&gpuprof__gpu.slot[k].t0_ns) != t0) continue;
        a = start_ns > (int64_t)t0 ? start_ns : (int64_t)t0;
        b = len && end_ns > (int64_t)(t0 + len) ? (int64_t)(t0 + len) : end_ns;
        if (b > a) GPUPROF__ADD(&gpuprof__gpu.slot[k].busy_ns, (uint64_t)(b - a));
    }
}

/* The share of step slot k outside the outermost GPU ranges, in %. */
static double gpuprof__slot_idle(uint32_t k) {
    double busy = (double)GPUPROF__LD(&gpuprof__gpu.slot[k].busy_ns), len = (double)gpuprof__gpu.slot[k].len_ns;
    return busy >= len ? 0.0 : 100.0 * (len - busy) / len;
}

/* GPUPROF_STEP (under gpuprof__lock): step `step` ended at now_ns (CPU
   timeline) after len_ns (0: it had no start). The slot the next step
   takes over is settled into the idle statistics first. */
static void gpuprof__gpu_step(uint64_t step, uint64_t now_ns, uint64_t len_ns, int counted) {
    uint32_t k = (uint32_t)(step % GPUPROF__STEP_SLOTS), next = (uint32_t)((step + 1) % GPUPROF__STEP_SLOTS);
    if (!gpuprof__gpu.available) return;
    if (GPUPROF__LD(&gpuprof__gpu.slot[k].step) == step) {
        GPUPROF__ST(&gpuprof__gpu.slot[k].len_ns, len_ns);
        gpuprof__gpu.slot[k].counted = counted && len_ns;
        gpuprof__gpu.slot[k].closed = 1;
    }
    /* GPUPROF_GPU=kernels: the capture's steps give it (gpuprof__kc_step) */
    if (gpuprof__gpu.slot[next].closed && gpuprof__gpu.slot[next].counted && !gpuprof__gpu.from_kernels)
        gpuprof_stats_add(&gpuprof__gpu.idle, gpuprof__slot_idle(next));
    gpuprof__gpu.slot[next].closed = 0;
    GPUPROF__ST(&gpuprof__gpu.slot[next].t0_ns, (uint64_t)0);
    GPUPROF__ST(&gpuprof__gpu.slot[next].len_ns, (uint64_t)0);
    GPUPROF__ST(&gpuprof__gpu.slot[next].busy_ns, (uint64_t)0);
    GPUPROF__ST(&gpuprof__gpu.slot[next].step, step + 1);
    GPUPROF__ST(&gpuprof__gpu.slot[next].t0_ns, now_ns ? now_ns : 1);
}

/* Destroys an event of gpuprof's; after a CUDA error this may fail too, and
   that error is not left for the program to find. */
static void gpuprof__event_destroy(cudaEvent_t ev) {
    cudaError_t e = cudaEventDestroy(ev);
    if (e != cudaSuccess) gpuprof__cuda_clear(e);
}

/* A thread state is freed: its events go back to the runtime (also those
   of records a CUDA error left pending, counted as lost). */
static void gpuprof__gput_free(gpuprof__gput *g) {
    int dev;
    uint64_t i;
    if (!g) return;
    GPUPROF__ADD(&gpuprof__gpu.lost, g->head - g->tail);
    for (i = g->tail; i != g->head; i++) {
        gpuprof__gpurec *r = &g->ring[i % GPUPROF__RING];
        if (r->e0) { gpuprof__event_destroy(r->e0); gpuprof__event_destroy(r->e1); }
    }
    for (dev = 0; dev < GPUPROF__MAX_DEV; dev++) {
        if (!g->pool[dev]) continue;
        for (i = 0; i < g->npool[dev]; i++) gpuprof__event_destroy(g->pool[dev][i]);
        for (i = 0; i < g->nback[dev]; i++) gpuprof__event_destroy(g->back[dev][i]);
        GPUPROF_FREE(g->pool[dev]);
    }
    pthread_mutex_destroy(&g->mu);
    GPUPROF_FREE(g);
}

/* At shutdown: the anchors' stream and events. */
static void gpuprof__gpu_close(void) {
    int dev, k;
    for (dev = 0; dev < GPUPROF__MAX_DEV; dev++) {
        gpuprof__anchor *a = &gpuprof__gpu.anchor[dev];
        cudaError_t e;
        if (!a->ready) continue;
        for (k = 0; k < GPUPROF__ANCHORS; k++) if (a->ev[k]) gpuprof__event_destroy(a->ev[k]);
        if (a->stream && (e = cudaStreamDestroy(a->stream)) != cudaSuccess) gpuprof__cuda_clear(e);
        memset(a, 0, sizeof *a);
    }
    GPUPROF__ST(&gpuprof__gpu.on, 0);
    GPUPROF__ST(&gpuprof__gpu.events, 0);
}
#else
/* CPU-only build: the GPU part compiles away. */
#define GPUPROF__FROM_KERNELS 0
GPUPROF__INLINE void gpuprof__gpu_begin(gpuprof__thread *t, gpuprof__frame *f, void *stream, int s0) { (void)t; (void)f; (void)stream; (void)s0; }
GPUPROF__INLINE void gpuprof__gpu_end(gpuprof__thread *t, gpuprof__frame *f, uint32_t d, int decision, uint64_t t1) {
    (void)t; (void)f; (void)d; (void)decision; (void)t1;
}
static void gpuprof__gpu_flush(void) {}
#define GPUPROF__GPU_PART(f) 0
#define GPUPROF__GPU_QUIET(t, f) 1
static void gpuprof__gpu_step_harvest(void) {}
static void gpuprof__gpu_drain(void) {}
#endif

/* ----------------------------------------------------------------------
   Kernel capture: the records -- CUPTI's records read into the kernel,
   transfer and synchronization tables and the ranges' GPU spans; a range's
   push and pop.
   ---------------------------------------------------------------------- */
#ifdef GPUPROF_CUDA
static void gpuprof__kc_settle_now(void);     /* the buffer callbacks settle steps; defined with the fold */

/* What to do about a CUPTI failure, by its code. */
static const char *gpuprof__cupti_advice(int rc) {
    switch (rc) {
    case GPUPROF__CU_UNKNOWN: return "CUPTI returns this when no NVIDIA driver or GPU is usable here";
    case GPUPROF__CU_MULTIPLE: return "another profiler (Nsight Systems, Nsight Compute, torch.profiler) holds CUPTI in this process: run without it, or without GPUPROF_KERNELS";
    case GPUPROF__CU_NOT_INITIALIZED: return "the NVIDIA driver is older than this CUPTI: update the driver, or point GPUPROF_CUPTI_PATH at the CUPTI that matches it";
    case GPUPROF__CU_PRIVILEGES: return "this user may not trace the GPU (see NVIDIA's ERR_NVGPUCTRPERM page)";
    default: return "check the CUDA installation";
    }
}

/* Capture goes off with one message; no CUPTI call is made after this. */
static void gpuprof__kc_off(const char *fmt, ...) {
    va_list ap;
    char why[256];
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    GPUPROF__ST(&gpuprof__kc.live, 0);
    GPUPROF__ST(&gpuprof__kc.accepting, 0);
    snprintf(gpuprof__kc.status, sizeof gpuprof__kc.status, "%s", why);
    if (gpuprof__kc.asked == 2) {
        /* GPUPROF_GPU=kernels: the ranges go back to CUDA events */
        gpuprof__gpu.from_kernels = 0;
        GPUPROF__ST(&gpuprof__gpu.events, GPUPROF__LD(&gpuprof__gpu.on));
        gpuprof__warn(GPUPROF__W_KERNELS, "kernel capture is off: %s; GPUPROF_GPU=kernels needs it, so %s", why,
                      GPUPROF__LD(&gpuprof__gpu.on) ? "ranges are timed on the GPU with CUDA events" : "ranges have CPU time only");
    } else gpuprof__warn(GPUPROF__W_KERNELS, "kernel capture is off: %s; ranges are timed as before", why);
}

/* Fails with the call's name, its result, and what to do. */
static int gpuprof__kc_check(int rc, const char *call) {
    if (rc == GPUPROF__CU_OK) return 0;
    gpuprof__kc_off("%s failed with %s (%d) -- %s", call, gpuprof__cupti_error(rc), rc, gpuprof__cupti_advice(rc));
    gpuprof__kc.loaded = -1;      /* and stays so for the process: every later CUPTI call costs ~20 us and fails alike */
    return -1;
}

/* The library: GPUPROF_CUPTI_PATH, else a copy already loaded, else the usual names and the toolkit's folders. */
static void *gpuprof__cupti_open(void) {
    static const char *const loaded[] = { "libcupti.so.13", "libcupti.so.12" };
    static const char *const dirs[] = { "CUDA_HOME", "CUDA_PATH" };
    const char *env = getenv("GPUPROF_CUPTI_PATH");
    char path[512];
    void *h;
    int i;
    if (env && *env) {
        if ((h = dlopen(env, RTLD_NOW | RTLD_LOCAL)) == NULL) {
            const char *e = dlerror();
            gpuprof__kc_off("GPUPROF_CUPTI_PATH='%.200s' cannot be loaded (%.200s)", env, e ? e : "?");
        } else snprintf(gpuprof__kc.library, sizeof gpuprof__kc.library, "%s", env);
        return h;
    }
    for (i = 0; i < 2; i++)
        if ((h = dlopen(loaded[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) != NULL) { snprintf(gpuprof__kc.library, sizeof gpuprof__kc.library, "%s", loaded[i]); return h; }
    snprintf(path, sizeof path, "libcupti.so.%d", gpuprof__gpu.runtime >= 1000 ? gpuprof__gpu.runtime / 1000 : CUDART_VERSION / 1000);
    if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) != NULL || (h = dlopen(strcpy(path, "libcupti.so"), RTLD_NOW | RTLD_LOCAL)) != NULL) {
        snprintf(gpuprof__kc.library, sizeof gpuprof__kc.library, "%s", path);
        return h;
    }
    for (i = 0; i < 3; i++) {
        const char *root = i < 2 ? getenv(dirs[i]) : "/usr/local/cuda";
        if (!root || !*root) continue;
        snprintf(path, sizeof path, "%s/extras/CUPTI/lib64/libcupti.so", root);
        if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) != NULL) { snprintf(gpuprof__kc.library, sizeof gpuprof__kc.library, "%s", path); return h; }
    }
    gpuprof__kc_off("no CUPTI library found (install the CUDA toolkit's CUPTI, or set GPUPROF_CUPTI_PATH to libcupti.so)");
    return NULL;
}

/* The clock CUPTI stamps records with: gpuprof's own, in ns, from an epoch
   that keeps it rising across sessions. */
static uint64_t gpuprof__kc_clock(void) {
    return gpuprof__ticks_to_ns(gpuprof__ticks() - GPUPROF__LD(&gpuprof__clock.base)) + GPUPROF__LD(&gpuprof__kc.epoch);
}

/* A CUPTI timestamp on the trace's timeline (ns since its zero). */
static int64_t gpuprof__kc_ns(uint64_t ts) {
    return gpuprof__kc.ts_cb ? (int64_t)(ts - gpuprof__kc.epoch) : (int64_t)ts + gpuprof__kc.pair_off;
}

/* Without the callback: CUPTI's clock against gpuprof's, the closest of a few reads. */
static void gpuprof__kc_pairs(void) {
    int64_t best = INT64_MAX;
    int i;
    for (i = 0; i < 5; i++) {
        uint64_t a = gpuprof__ticks(), c = 0, b;
        if (gpuprof__kc.api.GetTimestamp(&c) != GPUPROF__CU_OK) return;
        b = gpuprof__ticks();
        if ((int64_t)(b - a) < best) {
            best = (int64_t)(b - a);
            GPUPROF__ST(&gpuprof__kc.pair_off, (int64_t)gpuprof__ticks_to_ns(a + (b - a) / 2 - GPUPROF__LD(&gpuprof__clock.base)) - (int64_t)c);
        }
    }
}

static void gpuprof__kc_sub_cb(void *ud, int domain, uint32_t cbid, const void *data) { (void)ud; (void)domain; (void)cbid; (void)data; }

/* Buffers: from the pool, or new ones up to the cap; none when the pool is
   spent (CUPTI counts the records it could not write, see gpuprof__kc_flush). */
static void gpuprof__kc_req(uint8_t **buf, size_t *size, size_t *max_records) {
    uint8_t *b = NULL;
    int fresh = 0;
    pthread_mutex_lock(&gpuprof__kc_pool_mu);
    if (gpuprof__kc.nfree) b = gpuprof__kc.free_bufs[--gpuprof__kc.nfree];
    else if (gpuprof__kc.nbufs < gpuprof__kc.max_bufs && (b = (uint8_t *)gpuprof__alloc(GPUPROF__KC_BUF)) != NULL) {
        gpuprof__kc.nbufs++;
        fresh = 1;
    } else gpuprof__kc.declined++;
    pthread_mutex_unlock(&gpuprof__kc_pool_mu);
    if (fresh && gpuprof__kc.zeroed) memset(b, 0, GPUPROF__KC_BUF);   /* once per buffer of the pool; returned ones come zeroed */
    *buf = b;
    *size = b ? GPUPROF__KC_BUF : 0;
    *max_records = 0;
}

static void gpuprof__kc_recycle(uint8_t *b) {
    pthread_mutex_lock(&gpuprof__kc_pool_mu);
    if (gpuprof__kc.nfree < sizeof gpuprof__kc.free_bufs / sizeof gpuprof__kc.free_bufs[0]) { gpuprof__kc.free_bufs[gpuprof__kc.nfree++] = b; b = NULL; }
    else gpuprof__kc.nbufs--;
    pthread_mutex_unlock(&gpuprof__kc_pool_mu);
    GPUPROF_FREE(b);
}

GPUPROF__INLINE uint32_t gpuprof__kc_u32(const uint8_t *r, int off) { uint32_t v; memcpy(&v, r + off, 4); return v; }
GPUPROF__INLINE uint64_t gpuprof__kc_u64(const uint8_t *r, int off) { uint64_t v; memcpy(&v, r + off, 8); return v; }

static uint64_t gpuprof__kc_step_of(uint64_t ext) {
    uint64_t now = GPUPROF__LD(&gpuprof__steps.step), mask = (1ull << (63 - GPUPROF__KC_NODE_BITS)) - 1;
    return now - ((now - (ext >> GPUPROF__KC_NODE_BITS)) & mask);
}
/* The call of a call id while its span is open (kc.mu): NULL once folded,
   when its slot went to a later call -- its records came too late. A slot is
   rewritten only after the collector folded its call, so while seq is not
   `folded` the fields are the call's. */
static gpuprof__kcall *gpuprof__kc_call_of(uint64_t ext) {
    gpuprof__kcall *c;
    uint64_t seq;
    if (!(ext & GPUPROF__KC_CALL_BIT) || !gpuprof__kc.calls) return NULL;
    c = &gpuprof__kc.calls[(ext >> GPUPROF__KC_NODE_BITS) & (GPUPROF__KC_CALLS - 1)];
    seq = GPUPROF__LDA(&c->seq);
    if (!seq || seq == c->folded || ((seq - 1) / GPUPROF__KC_CALLS & 3u) != ((ext >> 61) & 3u) || c->node != gpuprof__kc_node(ext)) return NULL;
    return c;
}

/* Counts key; returns its slot. */
static int gpuprof__ktop_add(gpuprof__ktop *t, uint64_t key) {
    int i, lo = 0;
    for (i = 0; i < GPUPROF__KC_TOP; i++) {
        if (t->n[i] && t->key[i] == key) { t->n[i]++; return i; }
        if (t->n[i] < t->n[lo]) lo = i;
    }
    t->key[lo] = key;
    t->n[lo]++;
    return lo;
}
static int gpuprof__ktop_best(const gpuprof__ktop *t) {
    int i, best = -1;
    for (i = 0; i < GPUPROF__KC_TOP; i++) if (t->n[i] && (best < 0 || t->n[i] > t->n[best])) best = i;
    return best;
}

/* The kernel table entry of a name as CUPTI spells it (under kc.mu). */
static uint32_t gpuprof__kc_kernel(const char *name) {
    typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
    static demangle_fn dm;
    static int looked;
    uint32_t h, i, k, cap = GPUPROF__KC_KERNELS * 2;
    gpuprof__kernel *e;
    const char *shown;
    char *dem = NULL;
    size_t m;
    int st = -1;
    if (!name || !*name) name = "(unnamed kernel)";
    h = gpuprof__hash(name, strlen(name)) | 1u;
    for (i = h & (cap - 1); (k = gpuprof__kc.kern_hash[i]) != 0; i = (i + 1) & (cap - 1))
        if (gpuprof__kc.kern[k - 1]->hash == h && strcmp(gpuprof__kc.kern[k - 1]->name, name) == 0) return k - 1;
    if (gpuprof__kc.nkern >= GPUPROF__KC_KERNELS - 1 && strcmp(name, "(other kernels)") != 0) {
        gpuprof__kc.other_kernels++;
        return gpuprof__kc_kernel("(other kernels)");
    }
    /* C++ names are shown demangled, by the C++ runtime's demangler where one is loaded */
    if (!looked) {
        /* a program of C, or of CUDA linked with --as-needed, has none loaded:
           then the system's C++ runtime, loaded privately (never unloaded) */
        static const char *const rt[] = { "libstdc++.so.6", "libc++abi.so.1" };
        void *p = dlsym(RTLD_DEFAULT, "__cxa_demangle"), *lib;
        for (k = 0; !p && k < 2; k++)
            if ((lib = dlopen(rt[k], RTLD_LAZY | RTLD_LOCAL)) != NULL && (p = dlsym(lib, "__cxa_demangle")) == NULL) dlclose(lib);
        memcpy(&dm, &p, sizeof p);
        looked = 1;
    }
    if (dm && name[0] == '_' && name[1] == 'Z' && ((dem = dm(name, NULL, NULL, &st)) == NULL || st != 0)) { free(dem); dem = NULL; }
    shown = dem ? dem : name;
    m = strlen(shown);
    if (m > GPUPROF__KC_NAME_MAX) m = GPUPROF__KC_NAME_MAX;
    if (!(e = (gpuprof__kernel *)gpuprof__alloc(sizeof *e))) { free(dem); return UINT32_MAX; }
    memset(e, 0, sizeof *e - sizeof e->stats);
    gpuprof_stats_init(&e->stats);
    e->hash = h;
    e->tensor = gpuprof__tensor_cores(name);
    e->name = gpuprof__strdup(name);
    e->shown = gpuprof__strdup(shown);
    if ((e->json = (char *)gpuprof__alloc(m * 6 + 3)) != NULL) e->json[gpuprof__json_escape(e->json, shown, m)] = 0;
    free(dem);
    if (!e->name || !e->shown || !e->json) { GPUPROF_FREE(e->name); GPUPROF_FREE(e->shown); GPUPROF_FREE(e->json); GPUPROF_FREE(e); return UINT32_MAX; }
    gpuprof__kc.kern[gpuprof__kc.nkern] = e;
    GPUPROF__STR(&gpuprof__kc.nkern, gpuprof__kc.nkern + 1);   /* the trace writer reads kern[] below it */
    gpuprof__kc.kern_hash[i] = gpuprof__kc.nkern;
    return gpuprof__kc.nkern - 1;
}

/* The step whose window holds CPU time ns (for work launched outside any range). */
static uint64_t gpuprof__kc_step_at(int64_t ns) {
    uint64_t now = GPUPROF__LD(&gpuprof__steps.step);
    uint32_t k;
    for (k = 0; k < GPUPROF__KC_SLOTS; k++) {
        const gpuprof__kslot *s = &gpuprof__kc.slot[k];
        if (s->used && ns >= s->t0 && (s->step == now || ns < s->t0 + s->len)) return s->step;
    }
    return now;
}

static void gpuprof__kc_interval(gpuprof__kslot *s, int64_t a, int64_t b) {
    if (!s) return;
    if (s->niv + 2 > s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 256;
        int64_t *iv = (int64_t *)gpuprof__alloc(cap * sizeof *iv);
        if (!iv) return;
        if (s->iv) { memcpy(iv, s->iv, s->niv * sizeof *iv); GPUPROF_FREE(s->iv); }
        s->iv = iv;
        s->cap = cap;
    }
    s->iv[s->niv++] = a;
    s->iv[s->niv++] = b;
}

static int gpuprof__kc_cmp_iv(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The GPU busy share of a closed step: the union of the intervals of the
   kernels, copies and memsets launched in it, over the step's length, in %. */
static double gpuprof__kc_busy(gpuprof__kslot *s) {
    int64_t busy = 0, a = 0, b = INT64_MIN;
    uint32_t i;
    qsort(s->iv, s->niv / 2, 2 * sizeof *s->iv, gpuprof__kc_cmp_iv);
    for (i = 0; i < s->niv; i += 2) {
        if (s->iv[i] > b) { if (b > a) busy += b - a; a = s->iv[i]; b = s->iv[i + 1]; }
        else if (s->iv[i + 1] > b) b = s->iv[i + 1];
    }
    if (b > a) busy += b - a;
    return busy >= s->len ? 100.0 : 100.0 * (double)busy / (double)s->len;
}

/* The slot of step (under kc.mu); NULL once the step has been settled. */
static gpuprof__kslot *gpuprof__kc_slot(uint64_t step) {
    gpuprof__kslot *s = &gpuprof__kc.slot[step % GPUPROF__KC_SLOTS];
    return s->used && s->step == step ? s : NULL;
}

/* GPUPROF_STEP (under gpuprof__lock): step `step` ended at now_ns after
   len_ns; the slot the next step takes is settled into the per-step
   statistics first. */
static void gpuprof__kc_step(uint64_t step, int64_t now_ns, uint64_t len_ns, int counted) {
    gpuprof__kslot *s, *n;
    if (!GPUPROF__LD(&gpuprof__kc.accepting)) return;
    pthread_mutex_lock(&gpuprof__kc_mu);
    if ((s = gpuprof__kc_slot(step)) != NULL) { s->len = now_ns - s->t0; s->counted = counted && len_ns; }
    n = &gpuprof__kc.slot[(step + 1) % GPUPROF__KC_SLOTS];
    if (n->used && n->counted) {
        double busy = gpuprof__kc_busy(n);
        gpuprof_stats_add(&gpuprof__kc.per_step, (double)n->launched);
        gpuprof_stats_add(&gpuprof__kc.busy, busy);
        if (gpuprof__gpu.from_kernels) gpuprof_stats_add(&gpuprof__gpu.idle, 100.0 - busy);   /* no event-timed range tells it */
    }
    if (n->cap > 4096) { GPUPROF_FREE(n->iv); n->iv = NULL; n->cap = 0; }   /* a large step's intervals go */
    n->used = 1;
    n->step = step + 1;
    n->t0 = now_ns;
    n->len = 0;
    n->counted = 0;
    n->launched = n->short_k = 0;
    n->niv = 0;
    gpuprof__kc_settle_now();
    pthread_mutex_unlock(&gpuprof__kc_mu);
}

/* The name of a CUDA call by its callback id, for the ones that launch or wait. */
static const char *gpuprof__kc_call_name(uint32_t cbid, int driver) {
    static const struct { uint16_t cbid; const char *name; } rt[] = {
        { 31, "cudaMemcpy" }, { 41, "cudaMemcpyAsync" }, { 49, "cudaMemset" }, { 51, "cudaMemsetAsync" },
        { 131, "cudaStreamSynchronize" }, { 137, "cudaEventSynchronize" }, { 147, "cudaStreamWaitEvent" },
        { 165, "cudaDeviceSynchronize" }, { 211, "cudaLaunchKernel" }, { 214, "cudaLaunchKernel_ptsz" },
        { 311, "cudaGraphLaunch" }, { 312, "cudaGraphLaunch_ptsz" }, { 430, "cudaLaunchKernelExC" }
    }, drv[] = {
        { 17, "cuCtxSynchronize" }, { 126, "cuStreamSynchronize" }, { 216, "cuMemsetD8Async" }, { 277, "cuMemcpyHtoDAsync_v2" },
        { 306, "cuMemcpyAsync" }, { 307, "cuLaunchKernel" }, { 514, "cuGraphLaunch" }, { 652, "cuLaunchKernelEx" }
    };
    size_t i;
    if (driver) { for (i = 0; i < sizeof drv / sizeof drv[0]; i++) if (drv[i].cbid == cbid) return drv[i].name; }
    else for (i = 0; i < sizeof rt / sizeof rt[0]; i++) if (rt[i].cbid == cbid) return rt[i].name;
    return "CUDA call";
}

/* The trace track of a CUPTI stream id (its own track: CUPTI's stream ids
   are not the cudaStream_t handles the event-timed ranges are keyed by);
   ranges: the track of the ranges timed by their kernels on that stream
   (beside the kernels': they start and end with them, and would not nest). */
static int gpuprof__kc_track(uint32_t device, uint32_t stream, int ranges) {
    void *key = (void *)(uintptr_t)(0x10000u + (uintptr_t)stream);
    uint32_t i;
    int dev = (int)device, tid = ranges ? -1 : 0;
    pthread_mutex_lock(&gpuprof__gpu_mu);
    for (i = 0; i < gpuprof__gpu.ntracks; i++)
        if (gpuprof__gpu.track[i].stream == key && gpuprof__gpu.track[i].dev == dev && gpuprof__gpu.track[i].tid == tid) break;
    if (i == gpuprof__gpu.ntracks) {
        if (i == GPUPROF__TRACKS) i = GPUPROF__TRACKS - 1;
        else {
            gpuprof__gpu.track[i].stream = key;
            gpuprof__gpu.track[i].dev = dev;
            gpuprof__gpu.track[i].tid = tid;
            snprintf(gpuprof__gpu.track[i].label, sizeof gpuprof__gpu.track[i].label, ranges ? "GPU %d stream %u: ranges (from their kernels)" :
                     "GPU %d stream %u: kernels, copies (CUPTI)", dev, stream);
            GPUPROF__STR(&gpuprof__gpu.ntracks, i + 1);
        }
    }
    pthread_mutex_unlock(&gpuprof__gpu_mu);
    return (int)i;
}

/* A kernel's blocks per SM for its trace event, + 1 (0: unknown): the
   encoders derive the Kineto figures from it, the grid and the block. */
static int gpuprof__kc_trace_bps(const gpuprof__krec *r) {
    gpuprof__launch f;
    if (r->device >= GPUPROF__MAX_DEV) return 0;
    gpuprof__occ_calc(&gpuprof__gpu.lim[r->device], (uint64_t)r->grid[0] * r->grid[1] * r->grid[2], (int)(r->block[0] * r->block[1] * r->block[2]),
                      (int)r->regs, (long)(r->smem - r->dsmem), (long)r->dsmem, &f);
    return f.blocks_per_sm < 0 ? 0 : f.blocks_per_sm > 1000 ? 1001 : f.blocks_per_sm + 1;
}

/* A GPU record into the trace (under kc.mu): the call that launched it on
   its CPU thread (once per call: a graph launch starts many), then the work
   on its stream's track, with its arguments. */
static void gpuprof__kc_trace(const gpuprof__krec *r, gpuprof__kcorr *c) {
    gpuprof__thread *t = gpuprof__kc.tracer;
    int launched = c && c->has_api;
    uint64_t api = launched && c->api_ns > 0 ? (uint64_t)c->api_ns : 0;
    if (!t || !GPUPROF__LD(&gpuprof__trace.on)) return;
    if (launched && !c->traced && c->tid) {
        uint64_t d = c->api_end_ns > (int64_t)api ? (uint64_t)(c->api_end_ns - (int64_t)api) : 0;
        if (d >> 40) d = (1ull << 40) - 1;
        c->traced = 1;
        /* flags: the call's cbid, NOWORK where it launched nothing (a synchronization: no arrow leaves it), driver */
        gpuprof__trace_put(t, GPUPROF__EV_KAPI, c->corr, (int)((c->cbid & GPUPROF__KAPI_CBID) | (r->kind == GPUPROF__KR_SYNC ? GPUPROF__KAPI_NOWORK : 0u) |
                                                              (c->driver ? 0x8000u : 0u)), api, d | (uint64_t)(c->tid & 0xffffffu) << 40);
    }
    if (r->kind == GPUPROF__KR_SYNC) return;
    if (r->kind == GPUPROF__KR_KERNEL)
        gpuprof__trace_aux(t, GPUPROF__EV_KA, (r->block[1] & 0x7ffu) | (r->block[2] & 0x7fu) << 11 | (r->regs & 0x3fffu) << 18,
                           r->kernel == UINT32_MAX ? 0xffff : (int)r->kernel, r->grid[0] | (uint64_t)r->grid[1] << 32, r->grid[2] | (uint64_t)r->block[0] << 32);
    gpuprof__trace_aux(t, GPUPROF__EV_KB, launched ? c->tid : 0, r->kind == GPUPROF__KR_KERNEL ? gpuprof__kc_trace_bps(r) : 0, api,
                       r->kind == GPUPROF__KR_KERNEL ? r->smem : r->bytes);
    /* the work carries its call's correlation id (a copy's runtime call's, not the driver's): the id its arrow starts from */
    gpuprof__trace_put(t, GPUPROF__EV_KERNEL | gpuprof__kc_track(r->device, r->stream, 0) << 4, launched ? c->corr : r->corr,
                       (int)(r->kind | (r->sub & 15u) << 2 | ((r->sub >> 8) & 3u) << 6), r->start > 0 ? (uint64_t)r->start : 0,
                       (uint64_t)(r->end - r->start));
}

/* A kernel launch's shape into its kernel's "most common" candidates, and
   its launch figures into the kernel's time-weighted sums (kc.mu); returns
   the figures. A shape: grid, block, registers per thread, static and
   dynamic shared memory, device. */
static const gpuprof__launch *gpuprof__kc_shape(gpuprof__kernel *k, const gpuprof__krec *r, uint64_t dur) {
    uint32_t sh[GPUPROF__KC_SHAPE];
    const gpuprof__launch *f;
    int i;
    memcpy(sh, r->grid, sizeof r->grid);
    memcpy(sh + 3, r->block, sizeof r->block);
    sh[6] = r->regs;
    sh[7] = r->smem - r->dsmem;
    sh[8] = r->dsmem;
    sh[9] = r->device;
    i = gpuprof__ktop_add(&k->shapes, ((uint64_t)gpuprof__hash((const char *)sh, sizeof sh) << 1) | 1u);
    if (memcmp(k->shape[i], sh, sizeof sh) != 0 || !k->fig[i].blocks_per_sm) {
        /* a new candidate in this slot (a slot of blocks_per_sm 0 was never computed, or cannot launch: cheap either way) */
        static const gpuprof__devlim none = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
        memcpy(k->shape[i], sh, sizeof sh);
        gpuprof__occ_calc(r->device < GPUPROF__MAX_DEV ? &gpuprof__gpu.lim[r->device] : &none, (uint64_t)sh[0] * sh[1] * sh[2],
                          (int)(sh[3] * sh[4] * sh[5]), (int)sh[6], (long)sh[7], (long)sh[8], &k->fig[i]);
    }
    f = &k->fig[i];
    if (f->blocks_per_sm >= 0) {
        double d = (double)dur;
        k->known_ns += d;
        k->fill_ns += d * f->sm_fill;
        k->occ_ns += d * f->occupancy;
        k->est_ns += d * f->est_achieved;
        if (f->sm_fill < GPUPROF__UNDERFILL) k->idle_ns += d;
    }
    return f;
}

/* One GPU record with its launch (NULL: launched outside any range, or its
   launch record is lost), under kc.mu. */
static void gpuprof__kc_span(gpuprof__kcall *call, const gpuprof__krec *r, uint64_t dur);
static void gpuprof__kc_take(const gpuprof__krec *r, gpuprof__kcorr *c) {
    uint64_t ext = c ? c->ext : 0, step, dur = (uint64_t)(r->end - r->start);
    gpuprof__node *node;
    gpuprof__kcall *call = NULL;
    uint32_t range;
    gpuprof__kslot *slot;
    int phase;
    if ((ext & ((1ull << GPUPROF__KC_NODE_BITS) - 1)) == GPUPROF__KC_OWN) { gpuprof__kc.own++; return; }
    node = ext ? gpuprof__kc_node(ext) : NULL;
    range = node ? node->name_id : 0;
    if (ext & GPUPROF__KC_CALL_BIT) {
        /* the range's call: its step, and its span grows by this record */
        if ((call = gpuprof__kc_call_of(ext)) != NULL) {
            step = call->step;
            if (r->kind != GPUPROF__KR_SYNC) gpuprof__kc_span(call, r, dur);
        } else {
            step = gpuprof__kc_step_at(c && c->has_api ? c->api_ns : r->start);
            if (r->kind != GPUPROF__KR_SYNC) gpuprof__kc.spans_late++;
        }
    } else if (ext) step = gpuprof__kc_step_of(ext);
    else {
        if (r->kind != GPUPROF__KR_SYNC) gpuprof__kc.unattributed++;
        step = gpuprof__kc_step_at(c && c->has_api ? c->api_ns : r->start);
    }
    /* the trace shows the work of every recorded step, the statistics that of counted ones */
    if ((phase = gpuprof__phase_of(step)) == GPUPROF__PHASE_OFF) return;
    gpuprof__kc_trace(r, c);
    if (phase != GPUPROF__PHASE_COUNT || (call && call->seq <= GPUPROF__LD(&gpuprof__kc.reset_below))) return;   /* launched before gpuprof_reset */
    slot = gpuprof__kc_slot(step);
    if (!slot && r->kind != GPUPROF__KR_SYNC) gpuprof__kc.late++;
    switch (r->kind) {
    case GPUPROF__KR_KERNEL: {
        gpuprof__kernel *k;
        const gpuprof__launch *fig;
        if (r->kernel == UINT32_MAX) return;
        k = gpuprof__kc.kern[r->kernel];
        gpuprof__stats_add_ns(&k->stats, dur);
        gpuprof__ktop_add(&k->ranges, range);
        fig = gpuprof__kc_shape(k, r, dur);
        if (node) {
            GPUPROF__ST(&node->kernel_calls, node->kernel_calls + 1);
            GPUPROF__ST(&node->kernel_ns, node->kernel_ns + dur);
            if (fig->sm_fill < GPUPROF__UNDERFILL) GPUPROF__ST(&node->kuf_ns, node->kuf_ns + dur);
            if (k->tensor == 1) GPUPROF__ST(&node->ktc_ns, node->ktc_ns + dur);
        }
        gpuprof__kc.kernels_counted++;
        if (dur < GPUPROF__KC_SHORT_NS) gpuprof__kc.short_counted++;
        if (slot) { slot->launched++; if (dur < GPUPROF__KC_SHORT_NS) slot->short_k++; }
        break;
    }
    case GPUPROF__KR_MEMCPY: {
        static const signed char dir[11] = { -1, 0, 1, -1, -1, -1, -1, -1, 2, 3, 4 };
        uint32_t d = r->sub & 0xff, h = r->sub >> 8;
        gpuprof__kxfer *x;
        if (d > 10 || dir[d] < 0) return;
        x = &gpuprof__kc.xfer[(int)dir[d]][h == 1 ? 0 : h == 2 ? 1 : 2];
        if (node) {
            GPUPROF__ST(&node->copy_ns, node->copy_ns + dur);
            GPUPROF__ST(&node->copy_bytes, node->copy_bytes + r->bytes);
            if (h == 1) GPUPROF__ST(&node->copy_pageable, node->copy_pageable + 1);
        }
        x->count++;
        x->bytes += r->bytes;
        x->sum_ns += dur;
        gpuprof__ktop_add(&x->ranges, range);
        break;
    }
    case GPUPROF__KR_MEMSET:
        gpuprof__kc.memsets++;
        gpuprof__kc.memset_ns += dur;
        break;
    default: {
        /* CUPTI's types: 1 event, 2 stream wait event, 3 stream, 4 context (device) */
        static const signed char ty[5] = { -1, 2, 3, 1, 0 };
        gpuprof__kxfer *x;
        if (r->sub > 4 || ty[r->sub] < 0) return;
        x = &gpuprof__kc.sync[(int)ty[r->sub]];
        x->count++;
        x->sum_ns += dur;
        if (node) GPUPROF__ST(&node->sync_ns, node->sync_ns + dur);
        gpuprof__ktop_add(&x->ranges, range);
        return;
    }
    }
    if (slot) gpuprof__kc_interval(slot, r->start, r->end);
}

/* A record launched inside a call: the call's span and those of the calls
   around it grow to hold it (kc.mu). */
static void gpuprof__kc_span(gpuprof__kcall *call, const gpuprof__krec *r, uint64_t dur) {
    gpuprof__kcall *c = call;
    uint32_t hops;
    call->own_ns += dur;
    for (hops = 0; c && hops <= GPUPROF_MAX_DEPTH; hops++) {
        uint64_t p = c->parent;
        /* the trace shows the span on the stream of its first work (of the lowest id, when several start at once) */
        if (!c->nrec++ || r->start < c->first || (r->start == c->first && (r->device < c->device || (r->device == c->device && r->stream < c->stream)))) {
            if (c->nrec == 1) c->last = r->end;
            c->first = r->start;
            c->device = r->device;
            c->stream = r->stream;
        }
        if (r->end > c->last) c->last = r->end;
        c = NULL;
        if (p) {
            gpuprof__kcall *q = &gpuprof__kc.calls[(p - 1) % GPUPROF__KC_CALLS];
            if (GPUPROF__LDA(&q->seq) == p && q->folded != p) c = q;
        }
    }
}

/* A settled call into its range's figures (kc.mu): the span beside the
   event-timed GPU time, or as the range's GPU time (GPUPROF_GPU=kernels,
   then also on the trace's range track of its first stream); then its slot
   is free again. A call that launched nothing has no span. */
static void gpuprof__kc_fold(gpuprof__kcall *c) {
    uint64_t seq = c->seq, base = GPUPROF__LD(&gpuprof__clock.base);
    gpuprof__node *n = c->node;
    int decision = seq <= GPUPROF__LD(&gpuprof__kc.reset_below) ? 1 : c->decision, k = gpuprof__gpu.from_kernels;
    if (c->nrec) {
        int64_t t0 = (int64_t)gpuprof__ticks_to_ns(c->t0 - base), t1 = (int64_t)gpuprof__ticks_to_ns(c->t1 - base);
        uint64_t span = c->last > c->first ? (uint64_t)(c->last - c->first) : 0;
        gpuprof__gpustat_add(gpuprof__gpustat_at(&n->kspan), decision, span, c->own_ns, c->last - t1, c->first - t0);
        if (k) {
            gpuprof__thread *tr = gpuprof__kc.tracer;
            gpuprof__gpustat_add(gpuprof__gpustat_at(&n->gpu), decision, span, c->own_ns, c->last - t1, c->first - t0);
            GPUPROF__ADD(&gpuprof__gpu.timed, 1);
            if (tr && GPUPROF__LD(&gpuprof__trace.on) && gpuprof__phase_of(c->step) != GPUPROF__PHASE_OFF) {
                int track = gpuprof__kc_track(c->device, c->stream, 1);
                uint32_t depth = c->depth > 255 ? 255u : (uint32_t)c->depth;
                int64_t a = c->first > 0 ? c->first : 0, b = c->last > a ? c->last : a;
                gpuprof__trace_aux(tr, GPUPROF__EV_FLOW, n->name_id, 0, c->t0 - base, (uint64_t)(uint32_t)c->tid);
                if (c->flops != 0 || c->bytes != 0) gpuprof__trace_work(tr, n->name_id, c->flops, c->bytes, 0);
                gpuprof__trace_put(tr, GPUPROF__EV_GPU | (track << 4), n->name_id, (decision == 1 ? GPUPROF__EVF_WARMUP : 0) | (int)(depth << 8),
                                   (uint64_t)a, (uint64_t)(b - a));
            }
        }
    } else if (decision == 0) {
        gpuprof__gpustat *g = gpuprof__gpustat_at(&n->kspan);
        if (g) GPUPROF__ST(&g->nowork, g->nowork + 1);
        if (k && (g = gpuprof__gpustat_at(&n->gpu)) != NULL) GPUPROF__ST(&g->nowork, g->nowork + 1);
    }
    c->nrec = 0;
    c->own_ns = 0;
    c->folded = seq;
    GPUPROF__STR(&c->busy, 0);       /* the slot may be taken again */
}

static int gpuprof__kc_open_add(uint64_t id) {
    if (gpuprof__kc.nopen == gpuprof__kc.open_cap) {
        uint32_t cap = gpuprof__kc.open_cap ? gpuprof__kc.open_cap * 2 : 256;
        uint64_t *o = (uint64_t *)gpuprof__alloc(cap * sizeof *o);
        if (!o) return 0;
        if (gpuprof__kc.open) { memcpy(o, gpuprof__kc.open, gpuprof__kc.nopen * sizeof *o); GPUPROF_FREE(gpuprof__kc.open); }
        gpuprof__kc.open = o;
        gpuprof__kc.open_cap = cap;
    }
    gpuprof__kc.open[gpuprof__kc.nopen++] = id;
    return 1;
}

/* Folds the calls that ended GPUPROF__KC_SETTLE_NS ago or more, and those
   GPUPROF__KC_CALLS / 2 calls or more older than the latest (all: every call
   that ended; at shutdown, after CUPTI's last records), in the order they
   began; a call still open when the pass reaches it waits in open[] (a range
   around the whole run must not hold up the others). kc.mu. */
static void gpuprof__kc_settle(int all) {
    uint64_t base = GPUPROF__LD(&gpuprof__clock.base), end = GPUPROF__LDA(&gpuprof__kc.call_next), p;
    int64_t now = (int64_t)gpuprof__ticks_to_ns(gpuprof__ticks() - base), horizon = now - GPUPROF__KC_SETTLE_NS;
    uint32_t i;
    if (!gpuprof__kc.calls) return;
    gpuprof__kc.settled_at = now;
    for (i = 0; i < gpuprof__kc.nopen;) {
        gpuprof__kcall *c = &gpuprof__kc.calls[(gpuprof__kc.open[i] - 1) % GPUPROF__KC_CALLS];
        uint64_t t1 = GPUPROF__LDA(&c->t1);
        if (t1 && (all || t1 <= base || (int64_t)gpuprof__ticks_to_ns(t1 - base) <= horizon || gpuprof__kc.open[i] - 1 + GPUPROF__KC_CALLS / 2 <= end)) {
            gpuprof__kc_fold(c);
            gpuprof__kc.open[i] = gpuprof__kc.open[--gpuprof__kc.nopen];
        } else i++;
    }
    for (p = gpuprof__kc.fold_pos; p < end; p++) {
        gpuprof__kcall *c = &gpuprof__kc.calls[p % GPUPROF__KC_CALLS];
        uint64_t s = GPUPROF__LDA(&c->seq), t1;
        if (s != p + 1) {
            if (s > p + 1 || GPUPROF__LDA(&c->skip) >= p + 1) continue;   /* it found the slot taken: no span */
            break;                                                        /* its thread is still writing it */
        }
        if (!(t1 = GPUPROF__LDA(&c->t1))) {
            if (!gpuprof__kc_open_add(p + 1)) break;
            continue;
        }
        if (!all && t1 > base && (int64_t)gpuprof__ticks_to_ns(t1 - base) > horizon && p + GPUPROF__KC_CALLS / 2 > end) break;
        gpuprof__kc_fold(c);
    }
    gpuprof__kc.fold_pos = p;
}

/* Between sessions: every slot free, the calls of the last one forgotten (kc.mu). */
static void gpuprof__kc_calls_reset(void) {
    uint32_t i;
    if (!gpuprof__kc.calls) return;
    for (i = 0; i < GPUPROF__KC_CALLS; i++) {
        gpuprof__kcall *c = &gpuprof__kc.calls[i];
        c->folded = GPUPROF__LD(&c->seq);
        c->nrec = 0;
        c->own_ns = 0;
        GPUPROF__STR(&c->busy, 0);
    }
    gpuprof__kc.fold_pos = GPUPROF__LD(&gpuprof__kc.call_next);
    gpuprof__kc.nopen = 0;
}

/* The launch of a GPU record, if its launch record has arrived (under kc.mu). */
static gpuprof__kcorr *gpuprof__kc_launch(const gpuprof__krec *r) {
    gpuprof__kcorr *c;
    if (r->corr2) {               /* a copy: the runtime call's id first, then the driver's */
        c = &gpuprof__kc.map[r->corr2 & (GPUPROF__KC_MAP - 1)];
        if (c->corr == r->corr2 && c->has_api) return c;
    }
    c = &gpuprof__kc.map[r->corr & (GPUPROF__KC_MAP - 1)];
    return c->corr == r->corr && c->has_api ? c : NULL;
}

/* The correlation entry of id (under kc.mu), renewed when the ring slot held another. */
static gpuprof__kcorr *gpuprof__kc_entry(uint32_t corr) {
    gpuprof__kcorr *c = &gpuprof__kc.map[corr & (GPUPROF__KC_MAP - 1)];
    if (c->corr != corr) { memset(c, 0, sizeof *c); c->corr = corr; }
    return c;
}

/* Reads one record into r; returns 1 for a GPU record, 0 for the others. */
static int gpuprof__kc_read(const uint8_t *p, gpuprof__krec *r) {
    uint32_t kind = gpuprof__kc_u32(p, 0);
    uint64_t a, b;
    switch (kind) {
    case GPUPROF__AK_EXTCORR:
        if (gpuprof__kc_u32(p, GPUPROF__XO_KIND) == GPUPROF__EXT_CUSTOM2)
            gpuprof__kc_entry(gpuprof__kc_u32(p, GPUPROF__XO_CORR))->ext = gpuprof__kc_u64(p, GPUPROF__XO_ID);
        return 0;
    case GPUPROF__AK_RUNTIME:
    case GPUPROF__AK_DRIVER: {
        gpuprof__kcorr *c = gpuprof__kc_entry(gpuprof__kc_u32(p, GPUPROF__AO_CORR));
        c->has_api = 1;
        c->api_ns = gpuprof__kc_ns(gpuprof__kc_u64(p, GPUPROF__AO_START));
        c->api_end_ns = gpuprof__kc_ns(gpuprof__kc_u64(p, GPUPROF__AO_END));
        c->cbid = (uint16_t)gpuprof__kc_u32(p, GPUPROF__AO_CBID);
        c->driver = kind == GPUPROF__AK_DRIVER;
        c->tid = gpuprof__kc_u32(p, GPUPROF__AO_TID);
        return 0;
    }
    case GPUPROF__AK_KERNEL:
    case GPUPROF__AK_CONC_KERNEL: {
        const char *name;
        memset(r, 0, sizeof *r);
        r->kind = GPUPROF__KR_KERNEL;
        a = gpuprof__kc_u64(p, GPUPROF__KO_START); b = gpuprof__kc_u64(p, GPUPROF__KO_END);
        r->corr = gpuprof__kc_u32(p, GPUPROF__KO_CORR);
        r->device = gpuprof__kc_u32(p, GPUPROF__KO_DEVICE);
        r->stream = gpuprof__kc_u32(p, GPUPROF__KO_STREAM);
        memcpy(r->grid, p + GPUPROF__KO_GRID, sizeof r->grid);
        memcpy(r->block, p + GPUPROF__KO_BLOCK, sizeof r->block);
        { uint16_t regs; memcpy(&regs, p + GPUPROF__KO_REGS, 2); r->regs = regs; }
        r->dsmem = gpuprof__kc_u32(p, GPUPROF__KO_DSMEM);
        r->smem = gpuprof__kc_u32(p, GPUPROF__KO_SSMEM) + r->dsmem;
        memcpy(&name, p + GPUPROF__KO_NAME, sizeof name);
        r->kernel = gpuprof__kc_kernel(name);
        break;
    }
    case GPUPROF__AK_MEMCPY:
        memset(r, 0, sizeof *r);
        r->kind = GPUPROF__KR_MEMCPY;
        a = gpuprof__kc_u64(p, GPUPROF__MO_START); b = gpuprof__kc_u64(p, GPUPROF__MO_END);
        r->bytes = gpuprof__kc_u64(p, GPUPROF__MO_BYTES);
        r->corr = gpuprof__kc_u32(p, GPUPROF__MO_CORR);
        r->corr2 = gpuprof__kc_u32(p, GPUPROF__MO_RTCORR);
        r->device = gpuprof__kc_u32(p, GPUPROF__MO_DEVICE);
        r->stream = gpuprof__kc_u32(p, GPUPROF__MO_STREAM);
        {
            /* the host side of the copy: pageable (1) or pinned (2), else neither */
            uint32_t d = p[GPUPROF__MO_COPYKIND], src = p[GPUPROF__MO_SRCKIND], dst = p[GPUPROF__MO_DSTKIND];
            uint32_t host = d == 1 ? src : d == 2 ? dst : (src == 1 || src == 2) ? src : (dst == 1 || dst == 2) ? dst : 0;
            r->sub = d | (host == 1 || host == 2 ? host : 0) << 8;
        }
        break;
    case GPUPROF__AK_MEMSET:
        memset(r, 0, sizeof *r);
        r->kind = GPUPROF__KR_MEMSET;
        a = gpuprof__kc_u64(p, GPUPROF__SO_START); b = gpuprof__kc_u64(p, GPUPROF__SO_END);
        r->bytes = gpuprof__kc_u64(p, GPUPROF__SO_BYTES);
        r->corr = gpuprof__kc_u32(p, GPUPROF__SO_CORR);
        r->device = gpuprof__kc_u32(p, GPUPROF__SO_DEVICE);
        r->stream = gpuprof__kc_u32(p, GPUPROF__SO_STREAM);
        break;
    case GPUPROF__AK_SYNC:
        memset(r, 0, sizeof *r);
        r->kind = GPUPROF__KR_SYNC;
        a = gpuprof__kc_u64(p, GPUPROF__YO_START); b = gpuprof__kc_u64(p, GPUPROF__YO_END);
        r->sub = gpuprof__kc_u32(p, GPUPROF__YO_TYPE);
        r->corr = gpuprof__kc_u32(p, GPUPROF__YO_CORR);
        r->stream = gpuprof__kc_u32(p, GPUPROF__YO_STREAM);
        break;
    default:
        return 0;
    }
    gpuprof__kc.records++;
    if (a == 0 || b == 0 || b < a) { gpuprof__kc.bad_times++; return 0; }   /* CUPTI ran out of device memory, or of buffers */
    r->start = gpuprof__kc_ns(a);
    r->end = gpuprof__kc_ns(b);
    return 1;
}

/* A fold pass, at most every 100 ms unless half the call slots wait (kc.mu). */
static void gpuprof__kc_settle_now(void) {
    int64_t now = (int64_t)gpuprof__ticks_to_ns(gpuprof__ticks() - GPUPROF__LD(&gpuprof__clock.base));
    if (now - gpuprof__kc.settled_at >= 100000000 || GPUPROF__LD(&gpuprof__kc.call_next) - gpuprof__kc.fold_pos >= GPUPROF__KC_CALLS / 2)
        gpuprof__kc_settle(0);
}

/* A completed buffer, on CUPTI's thread or inside gpuprof__kc_flush. */
static void gpuprof__kc_done(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid) {
    uint8_t *p = NULL;
    gpuprof__krec r;
    uint32_t i, k;
    (void)ctx; (void)stream;
    if (!buf) return;
    if (valid && GPUPROF__LD(&gpuprof__kc.accepting) && gpuprof__kc.loaded > 0) {
        pthread_mutex_lock(&gpuprof__kc_mu);
        if (gpuprof__kc.map) {
            while (gpuprof__kc.api.ActivityGetNextRecord(buf, valid, &p) == GPUPROF__CU_OK) {
                gpuprof__kcorr *c;
                if (!gpuprof__kc_read(p, &r)) continue;
                if ((c = gpuprof__kc_launch(&r)) != NULL) gpuprof__kc_take(&r, c);
                else if (gpuprof__kc.npending < GPUPROF__KC_PENDING) gpuprof__kc.pending[gpuprof__kc.npending++] = r;
                else gpuprof__kc_take(&r, NULL);
            }
            /* records that came before their launch record: matched now if it came since, in
               the order they came (the trace's lanes are chosen in it: gpuprof__lane_of) */
            for (i = k = 0; i < gpuprof__kc.npending; i++) {
                gpuprof__kcorr *c = gpuprof__kc_launch(&gpuprof__kc.pending[i]);
                if (c) gpuprof__kc_take(&gpuprof__kc.pending[i], c);
                else gpuprof__kc.pending[k++] = gpuprof__kc.pending[i];
            }
            gpuprof__kc.npending = k;
            gpuprof__kc_settle_now();
        }
        pthread_mutex_unlock(&gpuprof__kc_mu);
    }
    if (gpuprof__kc.zeroed) memset(buf, 0, size < GPUPROF__KC_BUF ? size : GPUPROF__KC_BUF);   /* as CUPTI was promised */
    gpuprof__kc_recycle(buf);
}

/* Everything CUPTI holds that is complete (forced: everything, at the end). */
static void gpuprof__kc_flush(int forced) {
    size_t dropped = 0;
    uint32_t i;
    if (!GPUPROF__LD(&gpuprof__kc.accepting)) return;
    if (!gpuprof__kc.ts_cb) gpuprof__kc_pairs();
    if (gpuprof__kc_check(gpuprof__kc.api.ActivityFlushAll(forced ? GPUPROF__FLUSH_FORCED : 0), "cuptiActivityFlushAll") != 0) return;
    if (gpuprof__kc.api.ActivityGetNumDroppedRecords(NULL, 0, &dropped) != GPUPROF__CU_OK) dropped = 0;
    pthread_mutex_lock(&gpuprof__kc_mu);
    gpuprof__kc.dropped += dropped;
    if (forced) {
        /* their launch record will not come now */
        for (i = 0; i < gpuprof__kc.npending; i++) gpuprof__kc_take(&gpuprof__kc.pending[i], NULL);
        gpuprof__kc.npending = 0;
    }
    gpuprof__kc_settle(forced);     /* at the end every call that ended: nothing more comes */
    pthread_mutex_unlock(&gpuprof__kc_mu);
    if (dropped)
        gpuprof__warn(GPUPROF__W_KERNELS, "CUPTI dropped %llu activity record%s for want of buffer space: the kernel tables miss them (raise GPUPROF_KERNEL_BUFFER_MB, now %u)",
                      (unsigned long long)dropped, dropped == 1 ? "" : "s", gpuprof__kc.max_bufs * (unsigned)(GPUPROF__KC_BUF >> 20));
}

/* The tables of a session (kc.mu held or no collector running). */
static void gpuprof__kc_clear(void) {
    uint32_t i;
    for (i = 0; i < gpuprof__kc.nkern; i++) {
        GPUPROF_FREE(gpuprof__kc.kern[i]->name);
        GPUPROF_FREE(gpuprof__kc.kern[i]->shown);
        GPUPROF_FREE(gpuprof__kc.kern[i]->json);
        GPUPROF_FREE(gpuprof__kc.kern[i]);
    }
    for (i = 0; i < GPUPROF__KC_SLOTS; i++) GPUPROF_FREE(gpuprof__kc.slot[i].iv);
    GPUPROF_FREE(gpuprof__kc.map);
    GPUPROF_FREE(gpuprof__kc.pending);
    GPUPROF_FREE(gpuprof__kc.kern);
    GPUPROF_FREE(gpuprof__kc.kern_hash);
    gpuprof__kc.map = NULL;
    gpuprof__kc.pending = NULL;
    gpuprof__kc.kern = NULL;
    gpuprof__kc.kern_hash = NULL;
    gpuprof__kc.nkern = gpuprof__kc.npending = 0;
    memset(gpuprof__kc.xfer, 0, sizeof gpuprof__kc.xfer);
    memset(gpuprof__kc.sync, 0, sizeof gpuprof__kc.sync);
    memset(gpuprof__kc.slot, 0, sizeof gpuprof__kc.slot);
    gpuprof__kc.memsets = gpuprof__kc.memset_ns = 0;
    gpuprof__kc.records = gpuprof__kc.own = gpuprof__kc.dropped = gpuprof__kc.unattributed = gpuprof__kc.bad_times = 0;
    gpuprof__kc.late = gpuprof__kc.other_kernels = gpuprof__kc.kernels_counted = gpuprof__kc.short_counted = 0;
    gpuprof__kc.declined = 0;
    gpuprof_stats_init(&gpuprof__kc.per_step);
    gpuprof_stats_init(&gpuprof__kc.busy);
}

static const int gpuprof__kc_kinds[] = { GPUPROF__AK_CONC_KERNEL, GPUPROF__AK_MEMCPY, GPUPROF__AK_MEMSET, GPUPROF__AK_SYNC,
                                         GPUPROF__AK_RUNTIME, GPUPROF__AK_DRIVER, GPUPROF__AK_EXTCORR };

/* CUPTI loaded, its entry points found, its callbacks registered: once per
   process (0), or a message and capture off (-1). */
static int gpuprof__kc_load(void) {
    uint32_t v = 0;
    const char *missing;
    if (!(gpuprof__kc.lib = gpuprof__cupti_open())) return -1;
    missing = gpuprof__lib_bind(gpuprof__kc.lib, gpuprof__cupti_syms, sizeof gpuprof__cupti_syms / sizeof gpuprof__cupti_syms[0],
                                &gpuprof__kc.api, sizeof gpuprof__kc.api);
    if (missing) {
        gpuprof__kc.loaded = -1;
        gpuprof__kc_off("%s has no %s (CUPTI from CUDA 12 or later is needed; GPUPROF_CUPTI_PATH names the library)", gpuprof__kc.library, missing);
        return -1;
    }
    if (gpuprof__kc_check(gpuprof__kc.api.GetVersion(&v), "cuptiGetVersion") != 0) return -1;
    gpuprof__kc.version = v;
    if (gpuprof__kc.api.Subscribe) {
        void *subscriber = NULL;      /* no callback domain is enabled: this only claims CUPTI, as its header asks */
        if (gpuprof__kc_check(gpuprof__kc.api.Subscribe(&subscriber, gpuprof__kc_sub_cb, NULL), "cuptiSubscribe") != 0) return -1;
    }
    /* before anything is enabled, and once per process (CUPTI keeps it) */
    gpuprof__kc.ts_cb = gpuprof__kc.api.ActivityRegisterTimestampCallback &&
                        gpuprof__kc.api.ActivityRegisterTimestampCallback(gpuprof__kc_clock) == GPUPROF__CU_OK;
    if (gpuprof__kc_check(gpuprof__kc.api.ActivityRegisterCallbacks(gpuprof__kc_req, gpuprof__kc_done), "cuptiActivityRegisterCallbacks") != 0) return -1;
    /* records name threads by their kernel id (gettid), as the trace does; CUPTI's
       own thread hands buffers over at least twice a second (the per-step figures) */
    if (gpuprof__kc.api.SetThreadIdType) (void)gpuprof__kc.api.SetThreadIdType(1);
    if (gpuprof__kc.api.ActivityFlushPeriod) (void)gpuprof__kc.api.ActivityFlushPeriod(GPUPROF__KC_FLUSH_MS);
    /* gpuprof hands CUPTI zeroed buffers (zeroed when they come back, off the
       program's threads); else CUPTI zeroes each 2 MiB buffer on the thread
       whose launch needed it */
    if (gpuprof__kc.api.ActivitySetAttribute) {
        uint8_t one = 1;
        size_t n = sizeof one;
        gpuprof__kc.zeroed = gpuprof__kc.api.ActivitySetAttribute(GPUPROF__ATTR_ZEROED_OUT, &n, &one) == GPUPROF__CU_OK;
    }
    gpuprof__kc.loaded = 1;
    return 0;
}

/* This session's tables, and a thread state of gpuprof's own for the
   capture's trace events (0), or a message and capture off (-1). */
static int gpuprof__kc_tables_open(void) {
    pthread_mutex_lock(&gpuprof__kc_mu);
    gpuprof__kc_clear();
    gpuprof__kc.map = (gpuprof__kcorr *)gpuprof__alloc(GPUPROF__KC_MAP * sizeof *gpuprof__kc.map);
    gpuprof__kc.pending = (gpuprof__krec *)gpuprof__alloc(GPUPROF__KC_PENDING * sizeof *gpuprof__kc.pending);
    gpuprof__kc.kern = (gpuprof__kernel **)gpuprof__alloc(GPUPROF__KC_KERNELS * sizeof *gpuprof__kc.kern);
    gpuprof__kc.kern_hash = (uint32_t *)gpuprof__alloc(GPUPROF__KC_KERNELS * 2 * sizeof *gpuprof__kc.kern_hash);
    if (gpuprof__kc.map) memset(gpuprof__kc.map, 0, GPUPROF__KC_MAP * sizeof *gpuprof__kc.map);
    if (gpuprof__kc.kern_hash) memset(gpuprof__kc.kern_hash, 0, GPUPROF__KC_KERNELS * 2 * sizeof *gpuprof__kc.kern_hash);
    gpuprof__kc.slot[0].used = 1;                 /* step 0 runs from the session's start */
    if (!gpuprof__kc.calls && (gpuprof__kc.calls = (gpuprof__kcall *)gpuprof__alloc(GPUPROF__KC_CALLS * sizeof *gpuprof__kc.calls)) != NULL)
        memset(gpuprof__kc.calls, 0, GPUPROF__KC_CALLS * sizeof *gpuprof__kc.calls);
    gpuprof__kc_calls_reset();                    /* without them (no memory) ranges have no GPU span, the rest works */
    gpuprof__kc.spans_skipped = gpuprof__kc.spans_late = 0;
    gpuprof__kc.settled_at = 0;
    /* a thread state of gpuprof's own for the trace events (under gpuprof__lock: init holds it) */
    if ((gpuprof__kc.tracer = gpuprof__thread_alloc(0, "kernel capture", gpuprof__registry.max_ids, gpuprof__g.cfg.max_nodes)) != NULL) {
        gpuprof__kc.tracer->exited = 2;
        gpuprof__kc.tracer->session = gpuprof__g.session;
        gpuprof__kc.tracer->base = gpuprof__clock.base;
        gpuprof__kc.tracer->names = gpuprof__registry.names;
        gpuprof__kc.tracer->index = UINT32_MAX;
        gpuprof__kc.tracer->next = gpuprof__threads.threads;
        GPUPROF__STR(&gpuprof__threads.threads, gpuprof__kc.tracer);   /* release: see gpuprof__collector_main */
    }
    if (!gpuprof__kc.map || !gpuprof__kc.pending || !gpuprof__kc.kern || !gpuprof__kc.kern_hash) {
        gpuprof__kc_clear();
        pthread_mutex_unlock(&gpuprof__kc_mu);
        gpuprof__kc_off("out of memory for its tables (%u MiB)", (unsigned)((GPUPROF__KC_MAP * sizeof(gpuprof__kcorr) + GPUPROF__KC_PENDING * sizeof(gpuprof__krec)) >> 20));
        return -1;
    }
    pthread_mutex_unlock(&gpuprof__kc_mu);
    return 0;
}

/* At session start: CUPTI loaded (once per process), its callbacks
   registered (once), the kinds enabled. wanted: GPUPROF_KERNELS / config;
   2: GPUPROF_GPU=kernels, ranges' GPU time from their kernels (the GPU
   probe came first: then ranges record no CUDA event). */
static void gpuprof__kc_open(int wanted, int buffer_mb) {
    size_t i;
    GPUPROF__ST(&gpuprof__kc.live, 0);
    GPUPROF__ST(&gpuprof__kc.accepting, 0);
    gpuprof__kc.asked = wanted;
    gpuprof__kc.status[0] = 0;
    if (!gpuprof__kc.epoch) gpuprof__kc.epoch = GPUPROF__KC_EPOCH;
    if (!wanted) return;
    if (gpuprof__g.cuda_forked) { gpuprof__kc_off("this process was forked after CUDA started in its parent"); return; }
    if (getenv("NSYS_PROFILING_SESSION_ID")) {
        gpuprof__kc_off("Nsight Systems profiles this process and holds CUPTI (NSYS_PROFILING_SESSION_ID is set): its own timeline has the kernels");
        return;
    }
    if (gpuprof__kc.loaded < 0) { gpuprof__kc_off("CUPTI failed earlier in this process, and is not called again"); return; }
    if (!gpuprof__kc.loaded && gpuprof__kc_load() != 0) return;
    if (gpuprof__kc_tables_open() != 0) return;
    pthread_mutex_lock(&gpuprof__kc_pool_mu);
    gpuprof__kc.max_bufs = (uint32_t)(buffer_mb / (int)(GPUPROF__KC_BUF >> 20));
    if (gpuprof__kc.max_bufs < 2) gpuprof__kc.max_bufs = 2;
    pthread_mutex_unlock(&gpuprof__kc_pool_mu);
    GPUPROF__ST(&gpuprof__kc.accepting, 1);
    for (i = 0; i < sizeof gpuprof__kc_kinds / sizeof gpuprof__kc_kinds[0]; i++)
        if (gpuprof__kc_check(gpuprof__kc.api.ActivityEnable(gpuprof__kc_kinds[i]), "cuptiActivityEnable") != 0) {
            pthread_mutex_lock(&gpuprof__kc_mu);
            gpuprof__kc_clear();
            pthread_mutex_unlock(&gpuprof__kc_mu);
            return;
        }
    /* after the kinds: enabling RUNTIME or DRIVER resets these */
    for (i = 0; gpuprof__kc.api.ActivityEnableRuntimeApi && i < sizeof gpuprof__kc_quiet_rt / sizeof gpuprof__kc_quiet_rt[0]; i++)
        (void)gpuprof__kc.api.ActivityEnableRuntimeApi(gpuprof__kc_quiet_rt[i], 0);
    for (i = 0; gpuprof__kc.api.ActivityEnableDriverApi && i < sizeof gpuprof__kc_quiet_drv / sizeof gpuprof__kc_quiet_drv[0]; i++)
        (void)gpuprof__kc.api.ActivityEnableDriverApi(gpuprof__kc_quiet_drv[i], 0);
    if (!gpuprof__kc.ts_cb) gpuprof__kc_pairs();
    if (wanted == 2 && gpuprof__kc.calls) {
        gpuprof__gpu.from_kernels = 1;
        GPUPROF__ST(&gpuprof__gpu.events, 0);
    } else if (wanted == 2) gpuprof__kc_off("no memory for the ranges' kernel spans");
    GPUPROF__ST(&gpuprof__kc.live, 1);
}

/* At shutdown, after the last report: everything CUPTI still holds, then
   the kinds off (CUPTI stays loaded: it cannot be unloaded safely). */
static void gpuprof__kc_close(void) {
    size_t i;
    if (!GPUPROF__LD(&gpuprof__kc.accepting)) return;
    GPUPROF__ST(&gpuprof__kc.live, 0);
    for (i = 0; i < sizeof gpuprof__kc_kinds / sizeof gpuprof__kc_kinds[0]; i++) (void)gpuprof__kc.api.ActivityDisable(gpuprof__kc_kinds[i]);
    GPUPROF__ST(&gpuprof__kc.accepting, 0);
    /* the clock CUPTI reads goes on rising into the next session */
    GPUPROF__ST(&gpuprof__kc.epoch, gpuprof__kc_clock() + 1000000000ull);
    pthread_mutex_lock(&gpuprof__kc_mu);
    gpuprof__kc_clear();
    gpuprof__kc_calls_reset();
    gpuprof__gpu.from_kernels = 0;
    gpuprof__kc.tracer = NULL;        /* freed with the session's thread states */
    pthread_mutex_unlock(&gpuprof__kc_mu);
}

/* gpuprof_reset: the kernel, transfer and sync tables start again (the
   kernels' names stay; what capture read and dropped is not a statistic). */
static void gpuprof__kc_reset(void) {
    uint32_t i;
    pthread_mutex_lock(&gpuprof__kc_mu);
    for (i = 0; i < gpuprof__kc.nkern; i++) {
        gpuprof__kernel *k = gpuprof__kc.kern[i];
        gpuprof_stats_init(&k->stats);
        memset(&k->shapes, 0, sizeof k->shapes);
        memset(&k->ranges, 0, sizeof k->ranges);
        k->fill_ns = k->occ_ns = k->est_ns = k->known_ns = k->idle_ns = 0;
    }
    memset(gpuprof__kc.xfer, 0, sizeof gpuprof__kc.xfer);
    memset(gpuprof__kc.sync, 0, sizeof gpuprof__kc.sync);
    gpuprof__kc.memsets = gpuprof__kc.memset_ns = 0;
    gpuprof__kc.kernels_counted = gpuprof__kc.short_counted = 0;
    for (i = 0; i < GPUPROF__KC_SLOTS; i++) gpuprof__kc.slot[i].counted = 0;
    gpuprof_stats_init(&gpuprof__kc.per_step);
    gpuprof_stats_init(&gpuprof__kc.busy);
    pthread_mutex_unlock(&gpuprof__kc_mu);
}

/* GPUPROF_GPU=kernels: the GPU idle share per counted step is what the
   kernels, copies and memsets left of it (settled steps and the open ones). */
static int gpuprof__kc_idle(gpuprof_stats *out) {
    uint32_t k;
    if (!gpuprof__gpu.from_kernels) return 0;
    pthread_mutex_lock(&gpuprof__kc_mu);
    *out = gpuprof__gpu.idle;
    for (k = 0; k < GPUPROF__KC_SLOTS; k++) {
        gpuprof__kslot *s = &gpuprof__kc.slot[k];
        if (s->used && s->counted) gpuprof_stats_add(out, 100.0 - gpuprof__kc_busy(s));
    }
    pthread_mutex_unlock(&gpuprof__kc_mu);
    return 1;
}

/* At shutdown with GPUPROF_GPU=kernels: the GPU work still running is
   waited for, so that its records come with their times (CUPTI's forced
   flush gives unfinished work none) -- what the event-timed drain does by
   waiting for the ranges' last events. gpuprof's own wait: not the program's. */
static void gpuprof__kc_drain(void) {
    cudaError_t e;
    int own;
    if (!gpuprof__gpu.from_kernels || !GPUPROF__LD(&gpuprof__kc.live) || !GPUPROF__LD(&gpuprof__gpu.available)) return;
    own = gpuprof__kc_own_push();
    if ((e = cudaDeviceSynchronize()) != cudaSuccess) gpuprof__cuda_clear(e);
    if (own) gpuprof__kc_pop();
}

/* Capture ran in this session: its tables are there. */
static int gpuprof__kc_tables(void) { return gpuprof__kc.map != NULL; }
/* The CUDA call in which the range waits most, from the synchronization table (NULL: none captured). */
static const char *gpuprof__kc_sync_call(uint32_t name_id) {
    static const char *const call[7] = { "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaStreamWaitEvent",
                                         "a copy to pageable host memory", "a copy to pinned host memory", "a copy to the host" };
    uint64_t best = 0;
    int d, i, k = -1;
    if (!gpuprof__kc_tables()) return NULL;
    pthread_mutex_lock(&gpuprof__kc_mu);
    for (d = 0; d < 4; d++) {
        const gpuprof__kxfer *x = &gpuprof__kc.sync[d];
        for (i = 0; i < GPUPROF__KC_TOP; i++)
            if (x->ranges.n[i] && x->ranges.key[i] == name_id && x->sum_ns > best) { best = x->sum_ns; k = d; }
    }
    /* no synchronizing call: a copy to the host waits too (cudaMemcpy, loss.item()) */
    for (d = 0; k < 0 && d < 3; d++)
        for (i = 0; i < GPUPROF__KC_TOP; i++)
            if (gpuprof__kc.xfer[1][d].ranges.n[i] && gpuprof__kc.xfer[1][d].ranges.key[i] == name_id) { k = 4 + d; break; }
    pthread_mutex_unlock(&gpuprof__kc_mu);
    return k >= 0 ? call[k] : NULL;
}

/* The idle statistics including the steps not settled yet (report time). */
static void gpuprof__gpu_idle(gpuprof_stats *out) {
    uint32_t k;
    if (gpuprof__kc_idle(out)) return;
    *out = gpuprof__gpu.idle;
    for (k = 0; k < GPUPROF__STEP_SLOTS; k++)
        if (gpuprof__gpu.slot[k].closed && gpuprof__gpu.slot[k].counted) gpuprof_stats_add(out, gpuprof__slot_idle(k));
}

/* The hot path: a range's begin takes a slot for its call (a number, a
   compare-and-swap and a few stores; no lock, no wait) and pushes its id, its end
   pops it and marks the call ended. f is frame d of thread t. */
static GPUPROF__NOINLINE void gpuprof__kc_push(gpuprof__thread *t, gpuprof__frame *f, uint32_t d) {
    uint64_t ext = gpuprof__kc_ext(f->node);
    gpuprof__kcall *c = NULL;
    f->kcall = 0;
    if (gpuprof__kc.calls) {
        uint64_t p = GPUPROF__ADD(&gpuprof__kc.call_next, 1), seen;
        int free_slot = 0;
        c = &gpuprof__kc.calls[p % GPUPROF__KC_CALLS];
        if (GPUPROF__CAS(&c->busy, &free_slot, 1)) {
            c->node = f->node;
            c->parent = d && (t->stack[d - 1].flags & GPUPROF__F_KERN) ? t->stack[d - 1].kcall : 0;
            c->step = GPUPROF__LD(&gpuprof__steps.step);
            c->depth = (int)d;
            c->tid = t->tid;
            c->decision = 0;
            GPUPROF__ST(&c->t1, (uint64_t)0);
            GPUPROF__STR(&c->seq, p + 1);          /* the collector may read it now */
            f->kcall = p + 1;
            ext = gpuprof__kc_call_ext(f->node, p);
        } else {
            /* the slot's call is not folded yet (2^16 calls since the last fold pass: CUPTI's buffers, a
               GPUPROF_STEP and a report run one): this one goes without span, counted */
            for (seen = GPUPROF__LD(&c->skip); seen < p + 1 && !GPUPROF__CAS(&c->skip, &seen, p + 1);) {}
            GPUPROF__ADD(&gpuprof__kc.spans_skipped, 1);
            c = NULL;
        }
    }
    if (gpuprof__kc.api.ActivityPushExternalCorrelationId(GPUPROF__EXT_CUSTOM2, ext) == GPUPROF__CU_OK) f->flags |= GPUPROF__F_KERN;
    else if (c) {                                  /* nothing can be attributed to it: left out */
        c->decision = 1;
        GPUPROF__STR(&c->t1, (uint64_t)1);
        f->kcall = 0;
    }
}
/* The range of frame f ended at t1 with this decision (0 counted, 1 left
   out, 2 see gpuprof__exclude). A slot reused by a later session is not
   touched (a range open across a shutdown). */
static GPUPROF__NOINLINE void gpuprof__kc_end(gpuprof__frame *f, uint64_t t1, int decision) {
    gpuprof__kcall *c = &gpuprof__kc.calls[(f->kcall - 1) % GPUPROF__KC_CALLS];
    if (GPUPROF__LD(&c->seq) != f->kcall) return;
    c->t0 = f->t0;
    c->decision = decision;
    c->flops = f->flags & GPUPROF__F_WORK ? f->flops : 0;
    c->bytes = f->flags & GPUPROF__F_WORK ? f->bytes : 0;
    GPUPROF__STR(&c->t1, t1 ? t1 : 1);
}
#define GPUPROF__KC_PUSH(t, f, d) do { if (GPUPROF__UNLIKELY(GPUPROF__LD(&gpuprof__kc.live))) gpuprof__kc_push(t, f, d); } while (0)
#define GPUPROF__KC_POP(f) do { if (GPUPROF__UNLIKELY((f)->flags & GPUPROF__F_KERN)) gpuprof__kc_pop(); } while (0)
#define GPUPROF__KC_END(f, t1, decision) do { if (GPUPROF__UNLIKELY((f)->flags & GPUPROF__F_KERN) && (f)->kcall) gpuprof__kc_end(f, t1, decision); } while (0)
/* the range's GPU time will be its kernels' span (GPUPROF_GPU=kernels) */
#define GPUPROF__KC_SPAN(f) (GPUPROF__UNLIKELY((f)->flags & GPUPROF__F_KERN) && (f)->kcall && GPUPROF__FROM_KERNELS)
#else
#define GPUPROF__KC_PUSH(t, f, d) ((void)0)
#define GPUPROF__KC_POP(f) ((void)0)
#define GPUPROF__KC_END(f, t1, decision) ((void)0)
#define GPUPROF__KC_SPAN(f) 0
#define gpuprof__kc_flush(forced) ((void)0)
#define gpuprof__kc_drain() ((void)0)
#define gpuprof__kc_tables() 0
#define gpuprof__kc_sync_call(name_id) ((void)(name_id), (const char *)NULL)
#endif


#if GPUPROF__SAMPLES
/* ----------------------------------------------------------------------
   CPU samples: the sampler (SPEC 16). Each thread that records
   ranges gets a POSIX timer on its own CPU time (timer_create on
   CLOCK_THREAD_CPUTIME_ID, its signal sent to that thread:
   SIGEV_THREAD_ID), made by the thread itself when it joins the session
   and deleted when it leaves or the session ends. The signal's handler,
   async-signal-safe (no allocation, lock, stdio; errno kept), takes the
   interrupted PC, walks the frame pointers up the thread's stack for its
   callers, and adds one to the slot of (the thread's innermost open range,
   that stack). A range's own path is unchanged. Threads that record no
   range get a timer from the keeper (below, "Threads that record no
   range"). The timers tick at the
   kernel's HZ whatever rate is asked (250 Hz on a CONFIG_HZ=250 kernel):
   the report says the rate achieved. Linux (x86-64, AArch64) with glibc,
   in a C mode with POSIX's signals and timers; elsewhere GPUPROF_SAMPLE
   says why there are no samples.
   ---------------------------------------------------------------------- */
#include <signal.h>
#if defined(__linux__) && defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__)) && defined(SA_SIGINFO) && \
    defined(SIGEV_SIGNAL) && defined(CLOCK_THREAD_CPUTIME_ID) && defined(SA_RESTART) && defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200809L
#define GPUPROF__SAMPLER 1
#include <sys/ucontext.h>
#include <sys/uio.h>                       /* struct iovec: process_vm_readv, called by its number (glibc declares it with _GNU_SOURCE only) */
#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID 4
#endif
#ifdef __USE_MISC                          /* glibc names mcontext_t's fields so, else with "__" before */
#define GPUPROF__CTX(f) f
#else
#define GPUPROF__CTX(f) __##f
#endif
/* the thread's stack (a GNU call, bound by its symbol in any C mode) */
extern int gpuprof__getattr_np(pthread_t th, pthread_attr_t *attr) __asm__("pthread_getattr_np");
#include <elf.h>
/* dl_phdr_info's fields, and the call, bound by its symbol (a GNU
   extension the strict C modes hide); adds (objects loaded so far) where
   the size the loader passes holds it. */
struct gpuprof__dlinfo { uintptr_t addr; const char *name; const Elf64_Phdr *phdr; uint16_t phnum; unsigned long long adds, subs; };
extern int gpuprof__dl_iterate_phdr(int (*cb)(struct gpuprof__dlinfo *, size_t, void *), void *data) __asm__("dl_iterate_phdr");
#else
#define GPUPROF__SAMPLER 0
#endif

#define GPUPROF__SMP_HZ 1000               /* GPUPROF_SAMPLE=1: asked per second of a thread's CPU time */

static struct {
    int on;                                /* sampling set up: joining threads start timers (atomic) */
    int signo;                             /* the timers' signal */
    int installed;                         /* its handler is gpuprof's (kept for the process) */
    int trace;                             /* the streamed trace is Perfetto's: samples go into it too (atomic) */
    int ncode;                             /* the loaded objects' code (gpuprof__smp_code; atomic: it grows) */
    unsigned long long code_adds;          /* the loader's count of objects added when it was last brought up to date */
    uintptr_t code_lo[512], code_hi[512];
    uintptr_t code_min, code_max;          /* the span of them all: most words of a stack fall outside it (atomic) */
    uintptr_t code_bias[512];              /* ... each object's load bias and path (NULL: the main program, the vDSO), */
    char *code_path[512];                  /* so that one unloaded since is still named at report time */
    double hz;                             /* asked */
    uint64_t timers;                       /* timers made so far */
    char why[192];                         /* asked but not running: why */
} gpuprof__smp_global;
#define GPUPROF__SMP_ON() GPUPROF__LD(&gpuprof__smp_global.on)   /* sampling now (the sections below ask) */
#define GPUPROF__SMP_ASKED() (gpuprof__smp_global.hz > 0)        /* asked for this session */

/* Threads that record no range: their entries (filled by the keeper, section below). */
#define GPUPROF__SMP_FOREIGN 64            /* such threads sampled at most, per session */
static struct {
    gpuprof__smp *m[GPUPROF__SMP_FOREIGN];
    uintptr_t timer[GPUPROF__SMP_FOREIGN];
    char name[GPUPROF__SMP_FOREIGN][24];   /* /proc/self/task/TID/comm (16 bytes at most), else "thread TID" */
    uint32_t n;                            /* entries made (release: a report reads them) */
    uint64_t missed;                       /* threads found with the table full */
} gpuprof__smp_foreign;
static pthread_mutex_t gpuprof__smp_foreign_mu = PTHREAD_MUTEX_INITIALIZER;

#if GPUPROF__SAMPLER
/* The interrupted PC, frame pointer and stack pointer. */
static void gpuprof__smp_regs(const void *ucv, uintptr_t *pc, uintptr_t *fp, uintptr_t *sp) {
    const ucontext_t *uc = (const ucontext_t *)ucv;
#if defined(__x86_64__)
    const greg_t *g = uc->uc_mcontext.GPUPROF__CTX(gregs);
    *pc = (uintptr_t)g[16];                /* REG_RIP, REG_RBP, REG_RSP: the x86-64 ABI's numbering */
    *fp = (uintptr_t)g[10];
    *sp = (uintptr_t)g[15];
#else
    *pc = (uintptr_t)uc->uc_mcontext.GPUPROF__CTX(pc);
    *fp = (uintptr_t)uc->uc_mcontext.GPUPROF__CTX(regs)[29];
    *sp = (uintptr_t)uc->uc_mcontext.GPUPROF__CTX(sp);
#endif
}

/* Whether an address is in the code of a loaded object (one unloaded
   since keeps its entry: an address there is taken, never read). */
static int gpuprof__smp_is_code(uintptr_t a) {
    int i, n = GPUPROF__LDA(&gpuprof__smp_global.ncode);
    if (a < GPUPROF__LD(&gpuprof__smp_global.code_min) || a >= GPUPROF__LD(&gpuprof__smp_global.code_max)) return 0;
    for (i = 0; i < n; i++) if (a >= gpuprof__smp_global.code_lo[i] && a < gpuprof__smp_global.code_hi[i]) return 1;
    return 0;
}

/* The loaded objects' code (their executable segments), for the handler's
   checks of return addresses. Append-only, as a handler may read it while
   it grows: made at a session's start, and brought up to date where a
   thread joins when the loader has added objects since (dlpi_adds). */
static pthread_mutex_t gpuprof__smp_code_mu = PTHREAD_MUTEX_INITIALIZER;

/* A loaded object's executable segments: the span [lo, hi) they cover
   (hi <= lo: none). */
static void gpuprof__dl_code_span(const struct gpuprof__dlinfo *info, uintptr_t *lo, uintptr_t *hi) {
    uint16_t k;
    *lo = UINTPTR_MAX;
    *hi = 0;
    for (k = 0; k < info->phnum; k++) {
        const Elf64_Phdr *ph = &info->phdr[k];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        if (info->addr + ph->p_vaddr < *lo) *lo = info->addr + ph->p_vaddr;
        if (info->addr + ph->p_vaddr + ph->p_memsz > *hi) *hi = info->addr + ph->p_vaddr + ph->p_memsz;
    }
}

static int gpuprof__smp_code_add(struct gpuprof__dlinfo *info, size_t size, void *data) {
    uintptr_t lo, hi;
    int i, n = gpuprof__smp_global.ncode;
    (void)size; (void)data;
    gpuprof__dl_code_span(info, &lo, &hi);
    if (hi <= lo) return 0;
    for (i = 0; i < n; i++)                             /* known: the same object at the same place */
        if (gpuprof__smp_global.code_lo[i] == lo && gpuprof__smp_global.code_hi[i] == hi &&
            (gpuprof__smp_global.code_path[i] ? info->name && !strcmp(gpuprof__smp_global.code_path[i], info->name) : !(info->name && *info->name))) return 0;
    if (n == (int)(sizeof gpuprof__smp_global.code_lo / sizeof gpuprof__smp_global.code_lo[0])) return 1;
    gpuprof__smp_global.code_lo[n] = lo;
    gpuprof__smp_global.code_hi[n] = hi;
    gpuprof__smp_global.code_bias[n] = info->addr;
    gpuprof__smp_global.code_path[n] = info->name && *info->name ? gpuprof__strdup(info->name) : NULL;
    if (!n || lo < gpuprof__smp_global.code_min) GPUPROF__ST(&gpuprof__smp_global.code_min, lo);
    if (hi > gpuprof__smp_global.code_max) GPUPROF__ST(&gpuprof__smp_global.code_max, hi);
    GPUPROF__STR(&gpuprof__smp_global.ncode, n + 1);          /* release: the entry before the count */
    return 0;
}
static int gpuprof__smp_code_count(struct gpuprof__dlinfo *info, size_t size, void *data) {
    *(unsigned long long *)data = size >= offsetof(struct gpuprof__dlinfo, adds) + sizeof info->adds ? info->adds : 0;
    return 1;                                           /* the first object tells */
}
static void gpuprof__smp_code(void) {
    unsigned long long adds = 0;
    pthread_mutex_lock(&gpuprof__smp_code_mu);
    gpuprof__dl_iterate_phdr(gpuprof__smp_code_count, &adds);
    if (!adds || adds != gpuprof__smp_global.code_adds) {
        gpuprof__dl_iterate_phdr(gpuprof__smp_code_add, NULL);
        gpuprof__smp_global.code_adds = adds;
    }
    pthread_mutex_unlock(&gpuprof__smp_code_mu);
}

/* At shutdown, every timer stopped and no handler running: the map let go
   of (the next session makes it afresh). */
static void gpuprof__smp_code_clear(void) {
    int i;
    pthread_mutex_lock(&gpuprof__smp_code_mu);
    for (i = 0; i < gpuprof__smp_global.ncode; i++) GPUPROF_FREE(gpuprof__smp_global.code_path[i]);
    GPUPROF__ST(&gpuprof__smp_global.ncode, 0);
    GPUPROF__ST(&gpuprof__smp_global.code_max, (uintptr_t)0);
    gpuprof__smp_global.code_adds = 0;
    pthread_mutex_unlock(&gpuprof__smp_code_mu);
}

/* The stack of the interrupted code: its PC, then the return addresses
   the frame-pointer chain gives, each frame checked to lie in the thread's
   stack, above the last, 8-aligned. Code built without frame pointers
   (gcc's default from -O1) gives the PC alone, or callers that stop early.
   A leaf function has no frame of its own even so (gcc 12 leaves it out
   whatever the flags): its caller's return address is then the word at
   the stack pointer, taken when it is code the chain does not give next.
   With no chain, the code addresses among the words above the stack
   pointer, marked GPUPROF__SMP_SCANNED: the report keeps those a call
   precedes. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((no_sanitize_address))     /* it reads other frames' words, which AddressSanitizer keeps as red zones */
#endif
static uint32_t gpuprof__smp_walk(const gpuprof__smp *m, const void *uc, uintptr_t *out) {
    uintptr_t pc, fp, sp, lo, hi = m->stack_hi, top = 0;
    uint32_t n = 0;
    gpuprof__smp_regs(uc, &pc, &fp, &sp);
    out[n++] = pc;
    if (sp >= m->stack_lo && sp + 8 <= hi && !(sp & 7) && gpuprof__smp_is_code(top = *(const uintptr_t *)sp) &&
        !(fp >= sp && fp + 16 <= hi && !(fp & 7) && ((const uintptr_t *)fp)[1] == top))
        out[n++] = top;
    lo = sp > m->stack_lo ? sp : m->stack_lo;
    while (n < GPUPROF__SMP_DEPTH && fp >= lo && fp + 16 <= hi && !(fp & 7)) {
        const uintptr_t *f = (const uintptr_t *)fp;
        if (!gpuprof__smp_is_code(f[1])) break;   /* no loaded code there: the chain is not a frame chain (code without frame pointers) */
        out[n++] = f[1];
        if (f[0] <= fp) break;             /* frames go up the stack */
        lo = fp + 16;
        fp = f[0];
    }
    if (n <= 2 && sp >= m->stack_lo && !(sp & 7)) {
        /* no frame chain (-O2 and up omit frame pointers): the words above
           the stack pointer that are code, marked, for the report to keep
           those after a call instruction (gpuprof__smp_pcs) */
        uintptr_t w = sp + (n == 2 ? 8 : 0), end = sp + 8 * GPUPROF__SMP_SCAN_WORDS < hi ? sp + 8 * GPUPROF__SMP_SCAN_WORDS : hi;
        uint32_t got = 0;
        for (; w + 8 <= end && got < GPUPROF__SMP_SCAN_KEEP && n < GPUPROF__SMP_DEPTH; w += 8) {
            uintptr_t v = *(const uintptr_t *)w;
            if (gpuprof__smp_is_code(v) && v != out[n - 1]) {
                out[n++] = v | GPUPROF__SMP_SCANNED;
                got++;
            }
        }
    }
    return n;
}

/* One sample into the thread's slots: that of (node, stack), made if new.
   Only the thread's own handler writes them (the signal is blocked while
   its handler runs); a slot's hash is published last. */
static int gpuprof__smp_add(gpuprof__smp *m, const gpuprof__node *node, const uintptr_t *st, uint32_t depth) {
    uint32_t i, k, probe, gen = (uint32_t)GPUPROF__LDA(&gpuprof__smp_global.ncode);
    uint64_t h = ((uint64_t)(uintptr_t)node * 0x9E3779B97F4A7C15ull ^ depth) + gen;
    for (i = 0; i < depth; i++) h = (h ^ (uint64_t)st[i]) * 0xBF58476D1CE4E5B9ull;
    h |= 1;                                /* 0: a free slot */
    for (probe = 0, k = (uint32_t)(h >> 40) % GPUPROF__SMP_SLOTS; probe < 32; probe++, k = (k + 1) % GPUPROF__SMP_SLOTS) {
        gpuprof__smp_slot *s = &m->slot[k];
        if (s->hash == h && s->node == node && s->depth == depth && s->gen == gen && !memcmp(&m->frames[s->at], st, depth * sizeof *st)) {
            GPUPROF__ST(&s->count, s->count + 1);
            return (int)k;
        }
        if (s->hash) continue;
        if (m->nframes + depth > GPUPROF__SMP_FRAMES) break;
        memcpy(&m->frames[m->nframes], st, depth * sizeof *st);
        s->node = node;
        s->at = m->nframes;
        s->depth = depth;
        s->gen = gen;
        s->count = 1;
        m->nframes += depth;
        GPUPROF__STR(&s->hash, h);
        return (int)k;
    }
    GPUPROF__ST(&m->lost, m->lost + 1);
    return -1;
}

static void gpuprof__smp_handler(int sig, siginfo_t *si, void *uc) {
    int saved = errno;
    gpuprof__thread *t = gpuprof__tls;
    gpuprof__smp *m;
    (void)sig;
    if (t && (m = GPUPROF__LD(&t->smp)) != NULL && GPUPROF__LD(&gpuprof__smp_global.on) && m->gen) {
        uintptr_t st[GPUPROF__SMP_DEPTH];
        uint32_t d = t->depth, n;
        int k;
        const gpuprof__node *node;
        GPUPROF__ST(&m->busy, 1);
        if (si && si->si_code == SI_TIMER && si->si_overrun > 0) GPUPROF__ST(&m->overruns, m->overruns + (uint64_t)si->si_overrun);
        if (d > GPUPROF_MAX_DEPTH) d = GPUPROF_MAX_DEPTH;
        node = d ? t->stack[d - 1].node : NULL;
        n = gpuprof__smp_walk(m, uc, st);
        GPUPROF__ST(&m->taken, m->taken + 1);
        k = gpuprof__smp_add(m, node, st, n);
#if !defined(GPUPROF_CLOCK_FN)                /* a program's own clock may not be safe to read here */
        if (k >= 0 && GPUPROF__LD(&gpuprof__smp_global.trace)) {   /* and into the ring, for the trace */
            uint64_t h = m->ring_head;
            if (h - GPUPROF__LDA(&m->ring_tail) < GPUPROF__SMP_RING) {
                m->ring_ts[h % GPUPROF__SMP_RING] = gpuprof__ticks() - t->base;
                m->ring_slot[h % GPUPROF__SMP_RING] = (uint32_t)k;
                GPUPROF__STR(&m->ring_head, h + 1);
            } else GPUPROF__ST(&m->trace_lost, m->trace_lost + 1);
        }
#else
        (void)k;
#endif
        GPUPROF__STR(&m->busy, 0);
    } else if (si && si->si_code == SI_TIMER && GPUPROF__LDA(&gpuprof__smp_foreign.n) && (m = (gpuprof__smp *)si->si_value.sival_ptr) != NULL &&
               GPUPROF__LD(&gpuprof__smp_global.on) && GPUPROF__LD(&m->gen)) {
        /* a thread that records no range (an OpenMP worker, a pool's; the
           acquire of the entries' count makes the slots the keeper made
           before arming its timer visible): its samples go to the innermost
           range open on the stepping thread now, the phase that handed it
           the work; none in the trace */
        const gpuprof__thread *s = GPUPROF__LD(&gpuprof__steps.stepper);
        uint32_t d = s ? GPUPROF__LD(&s->depth) : 0, n = 1;
        uintptr_t st[GPUPROF__SMP_DEPTH], fp, sp;
        int k;
        GPUPROF__ST(&m->busy, 1);
        if (si->si_overrun > 0) GPUPROF__ST(&m->overruns, m->overruns + (uint64_t)si->si_overrun);
        if (d > GPUPROF_MAX_DEPTH) d = GPUPROF_MAX_DEPTH;
        if (GPUPROF__LDA(&m->stack_hi)) n = gpuprof__smp_walk(m, uc, st);
        else {                                        /* its stack's bounds unknown yet: the PC alone, and the keeper is told where */
            gpuprof__smp_regs(uc, &st[0], &fp, &sp);
            GPUPROF__ST(&m->seen_sp, sp);
        }
        GPUPROF__ST(&m->taken, m->taken + 1);
        k = gpuprof__smp_add(m, d ? GPUPROF__LD(&s->stack[d - 1].node) : NULL, st, n);
        if (k >= 0 && GPUPROF__LD(&gpuprof__smp_global.trace)) GPUPROF__ST(&m->trace_lost, m->trace_lost + 1);   /* kept, not in the trace */
        GPUPROF__STR(&m->busy, 0);
    }
    errno = saved;
}

/* A thread's CPU time in ns, read from any thread while it lives (Linux's
   clock id of a thread: what pthread_getcpuclockid returns), or the
   calling thread's (tid 0): the real CPU time, whatever clock the program
   gave gpuprof (GPUPROF_CLOCK_FN). */
static uint64_t gpuprof__smp_cpu_of(int tid) {
    gpuprof__timespec ts;
    clockid_t id = tid ? (clockid_t)((~(unsigned)tid << 3) | 6u) : CLOCK_THREAD_CPUTIME_ID;
    if (gpuprof__clock_gettime(id, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#endif

/* Threads that record no range (SPEC 16a): found by the keeper in
   /proc/self/task every GPUPROF__SMP_CHECK_NS, each given a timer on its
   CPU clock whose signal carries its slots (sigev_value), until it ends or
   the session does; gpuprof's own threads are left out, and a thread that
   begins recording ranges takes its own timer over (gpuprof__smp_foreign_drop).
   Its stack's bounds are found once a sample has seen its stack pointer
   (the mapping of /proc/self/maps that holds it); until then a sample is
   its PC alone. */

#if GPUPROF__SAMPLER
#include <dirent.h>
/* Entry i's timer deleted, its CPU time so far added up (gpuprof__smp_foreign_mu held). */
static void gpuprof__smp_foreign_stop(uint32_t i) {
    gpuprof__smp *m = gpuprof__smp_foreign.m[i];
    uint64_t now;
    if (!GPUPROF__LD(&m->gen)) return;
    timer_delete((timer_t)gpuprof__smp_foreign.timer[i]);
    GPUPROF__ST(&m->gen, 0);
    now = gpuprof__smp_cpu_of(m->tid);            /* 0 once the thread is gone: its time up to the last scan stays */
    if (now > m->cpu0_ns) GPUPROF__ST(&m->cpu_ns, now - m->cpu0_ns);
}

/* A thread that now records ranges: the timer the keeper gave it stops (it
   starts its own). */
static void gpuprof__smp_foreign_drop(int tid) {
    uint32_t i;
    for (i = 0; i < gpuprof__smp_foreign.n; i++)
        if (gpuprof__smp_foreign.m[i]->tid == tid) gpuprof__smp_foreign_stop(i);
}

/* A timer for thread tid, its signal carrying its new slots. */
static void gpuprof__smp_foreign_start(int tid) {
    gpuprof__smp *m;
    struct sigevent ev;
    struct itimerspec its;
    timer_t timer;
    char path[64];
    FILE *f;
    uint32_t i = gpuprof__smp_foreign.n;
    double period = 1e9 / gpuprof__smp_global.hz;
    if (i == GPUPROF__SMP_FOREIGN) { gpuprof__smp_foreign.missed++; return; }
    if (!(m = (gpuprof__smp *)gpuprof__zalloc(sizeof *m))) return;
    m->tid = tid;
    m->cpu0_ns = gpuprof__smp_cpu_of(tid);
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = gpuprof__smp_global.signo;
    ev.sigev_value.sival_ptr = m;
    ev._sigev_un._tid = tid;
    if (timer_create((clockid_t)((~(unsigned)tid << 3) | 6u), &ev, &timer) != 0) { GPUPROF_FREE(m); return; }   /* it ended meanwhile */
    gpuprof__smp_foreign.m[i] = m;
    gpuprof__smp_foreign.timer[i] = (uintptr_t)timer;
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    snprintf(gpuprof__smp_foreign.name[i], sizeof gpuprof__smp_foreign.name[i], "thread %d", tid);
    if ((f = fopen(path, "r")) != NULL) {
        if (fgets(gpuprof__smp_foreign.name[i], sizeof gpuprof__smp_foreign.name[i], f)) gpuprof__smp_foreign.name[i][strcspn(gpuprof__smp_foreign.name[i], "\n")] = 0;
        fclose(f);
    }
    GPUPROF__ST(&m->gen, GPUPROF__ADD(&gpuprof__smp_global.timers, 1) + 1);
    GPUPROF__STR(&gpuprof__smp_foreign.n, i + 1);
    its.it_interval.tv_sec = (time_t)((uint64_t)period / 1000000000u);
    its.it_interval.tv_nsec = (long)((uint64_t)period % 1000000000u);
    its.it_value.tv_sec = 0;
    its.it_value.tv_nsec = 1;
    if (timer_settime(timer, 0, &its, NULL) != 0) gpuprof__smp_foreign_stop(i);
}

/* Whether thread tid is sampled already: it records ranges (its own timer), or has an entry. */
static int gpuprof__smp_foreign_known(int tid) {
    gpuprof__thread *t;
    uint32_t i;
    for (t = GPUPROF__LDA(&gpuprof__threads.threads); t; t = t->next)
        if (t->tid == tid && t->smp && GPUPROF__LD(&t->smp->gen)) return 1;
    for (i = 0; i < gpuprof__smp_foreign.n; i++)
        if (gpuprof__smp_foreign.m[i]->tid == tid && GPUPROF__LD(&gpuprof__smp_foreign.m[i]->gen)) return 1;
    return 0;
}

/* The stacks whose bounds a sample asked for: the mappings holding the
   stack pointers seen. */
static void gpuprof__smp_foreign_stacks(void) {
    char line[512];
    FILE *f = NULL;
    uint32_t i;
    for (i = 0; i < gpuprof__smp_foreign.n; i++) {
        gpuprof__smp *m = gpuprof__smp_foreign.m[i];
        uintptr_t sp = GPUPROF__LD(&m->seen_sp);
        unsigned long long lo, hi;
        if (!sp || GPUPROF__LD(&m->stack_hi)) continue;
        if (!f && !(f = fopen("/proc/self/maps", "r"))) return;
        rewind(f);
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && sp >= lo && sp < hi) {
                m->stack_lo = (uintptr_t)lo;
                GPUPROF__STR(&m->stack_hi, (uintptr_t)hi);   /* release: the walk may read between them */
                break;
            }
    }
    if (f) fclose(f);
}

/* Whether thread tid blocks the sampler's signal (SigBlk of its /proc
   status): one of gpuprof's (gpuprof__spawn), or a program's thread that
   asks not to be interrupted; either is left out. */
static int gpuprof__smp_foreign_blocks(int tid) {
    char path[64], line[128];
    unsigned long long mask = 0;
    int found = 0;
    FILE *f;
    snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
    if (!(f = fopen(path, "r"))) return 0;
    while (!found && fgets(line, sizeof line, f)) found = sscanf(line, "SigBlk: %llx", &mask) == 1;
    fclose(f);
    return found && gpuprof__smp_global.signo >= 1 && gpuprof__smp_global.signo <= 64 && (mask >> (gpuprof__smp_global.signo - 1) & 1);
}

/* The keeper's look for threads that record no range: new ones get a
   timer, ended ones lose theirs. */
static void gpuprof__smp_foreign_scan(void) {
    DIR *d;
    struct dirent *e;
    unsigned char alive[GPUPROF__SMP_FOREIGN];
    uint32_t i;
    if (!(d = opendir("/proc/self/task"))) return;
    memset(alive, 0, sizeof alive);
    pthread_mutex_lock(&gpuprof__smp_foreign_mu);
    while ((e = readdir(d)) != NULL) {
        int tid = atoi(e->d_name);
        if (tid <= 0 || gpuprof__is_own_tid(tid)) continue;
        for (i = 0; i < gpuprof__smp_foreign.n && gpuprof__smp_foreign.m[i]->tid != tid; i++) {}
        if (i < gpuprof__smp_foreign.n) alive[i] = 1;
        if (!gpuprof__smp_foreign_known(tid) && GPUPROF__LD(&gpuprof__smp_global.on) && !gpuprof__smp_foreign_blocks(tid)) {
            uint32_t before = gpuprof__smp_foreign.n;
            gpuprof__smp_foreign_start(tid);
            if (gpuprof__smp_foreign.n > before) alive[before] = 1;
        }
    }
    closedir(d);
    for (i = 0; i < gpuprof__smp_foreign.n; i++) {
        gpuprof__smp *m = gpuprof__smp_foreign.m[i];
        uint64_t now;
        if (!GPUPROF__LD(&m->gen)) continue;
        if (!alive[i]) { gpuprof__smp_foreign_stop(i); continue; }
        if ((now = gpuprof__smp_cpu_of(m->tid)) > m->cpu0_ns) GPUPROF__ST(&m->cpu_ns, now - m->cpu0_ns);   /* its CPU time, were it to end */
    }
    gpuprof__smp_foreign_stacks();
    pthread_mutex_unlock(&gpuprof__smp_foreign_mu);
}
#endif

/* At a session's end, every such timer stopped; at the next one's start, the entries let go of. */
static void gpuprof__smp_foreign_stop_all(void) {
#if GPUPROF__SAMPLER
    uint32_t i;
    pthread_mutex_lock(&gpuprof__smp_foreign_mu);
    for (i = 0; i < gpuprof__smp_foreign.n; i++) gpuprof__smp_foreign_stop(i);
    pthread_mutex_unlock(&gpuprof__smp_foreign_mu);
#endif
}
static void gpuprof__smp_foreign_clear(void) {
    uint32_t i;
    pthread_mutex_lock(&gpuprof__smp_foreign_mu);
    for (i = 0; i < gpuprof__smp_foreign.n; i++) GPUPROF_FREE(gpuprof__smp_foreign.m[i]);
    GPUPROF__ST(&gpuprof__smp_foreign.n, 0u);
    gpuprof__smp_foreign.missed = 0;
    pthread_mutex_unlock(&gpuprof__smp_foreign_mu);
}

/* GPUPROF_SAMPLE / cfg.sample_hz at a session's start: the signal and its
   handler, once per process; a program's own handler for that signal is
   left alone (one line: GPUPROF_SAMPLE_SIGNAL picks another). */
static void gpuprof__smp_setup(double hz) {
    gpuprof__smp_foreign_clear();                 /* the last session's threads without ranges */
    gpuprof__smp_global.why[0] = 0;
    gpuprof__smp_global.hz = hz <= 0 ? 0 : hz <= 1 ? GPUPROF__SMP_HZ : hz;
    if (gpuprof__smp_global.hz <= 0) return;
#if GPUPROF__SAMPLER
    {
        const char *v = getenv("GPUPROF_SAMPLE_SIGNAL");
        struct sigaction sa, old;
        int signo = SIGPROF;
        if (v && *v) {
            /* SIGURG and SIGWINCH are ignored by default: a library that resets them to the default cannot end the program with them */
            static const struct { const char *name; int signo; } named[] = {
                { "SIGPROF", SIGPROF }, { "SIGURG", SIGURG }, { "SIGWINCH", SIGWINCH }, { "SIGVTALRM", SIGVTALRM }, { "SIGUSR1", SIGUSR1 }, { "SIGUSR2", SIGUSR2 } };
            char *end;
            long x = strtol(v + (strncmp(v, "SIGRTMIN+", 9) == 0 ? 9 : 0), &end, 10);
            size_t k;
            for (k = 0; k < sizeof named / sizeof named[0] && strcmp(v, named[k].name); k++) {}
            if (k < sizeof named / sizeof named[0]) signo = named[k].signo;
            else if (strncmp(v, "SIGRTMIN+", 9) == 0 && !*end && x >= 0 && x <= SIGRTMAX - SIGRTMIN) signo = SIGRTMIN + (int)x;
            else if (!*end && x > 0 && x <= SIGRTMAX) signo = (int)x;
            else gpuprof__warn(GPUPROF__W_BAD_ENV, "GPUPROF_SAMPLE_SIGNAL='%.64s' is not a signal (a number, SIGPROF, SIGURG, SIGWINCH, SIGVTALRM, SIGUSR1, SIGUSR2 or SIGRTMIN+N); SIGPROF is used", v);
        }
        if (gpuprof__smp_global.installed && gpuprof__smp_global.signo == signo) { GPUPROF__ST(&gpuprof__smp_global.on, 1); return; }
        if (sigaction(signo, NULL, &old) != 0) {
            snprintf(gpuprof__smp_global.why, sizeof gpuprof__smp_global.why, "signal %d cannot be handled here", signo);
        } else if ((old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != NULL : (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
            snprintf(gpuprof__smp_global.why, sizeof gpuprof__smp_global.why, "the program handles signal %d (%s) itself: set GPUPROF_SAMPLE_SIGNAL to a free one "
                     "(SIGRTMIN+3, say)", signo, signo == SIGPROF ? "SIGPROF" : "its own");
        } else {
            memset(&sa, 0, sizeof sa);
            sa.sa_sigaction = gpuprof__smp_handler;
            sa.sa_flags = SA_SIGINFO | SA_RESTART;
            sigemptyset(&sa.sa_mask);
            if (sigaction(signo, &sa, NULL) == 0) {
                gpuprof__smp_global.installed = 1;
                gpuprof__smp_global.signo = signo;
                GPUPROF__ST(&gpuprof__smp_global.on, 1);
                return;
            }
            snprintf(gpuprof__smp_global.why, sizeof gpuprof__smp_global.why, "sigaction(%d) failed: %s", signo, strerror(errno));
        }
    }
#else
    snprintf(gpuprof__smp_global.why, sizeof gpuprof__smp_global.why, "this build has no sampler (it needs Linux on x86-64 or AArch64 with glibc, "
             "and the file defining GPUPROF_IMPLEMENTATION built in a POSIX C mode such as -std=gnu11)");
#endif
    gpuprof__warn(GPUPROF__W_BAD_ENV, "no CPU samples: %s", gpuprof__smp_global.why);
}

/* The calling thread's timer, started as it joins the session: its slots
   made the first time (NULL when memory is short: counted, no samples),
   its stack's bounds taken each time (a state an exited thread left is
   taken over by a new one, on another stack), the code map brought up to
   date (objects loaded since). */
static void gpuprof__smp_thread_timer(gpuprof__thread *t);
static void gpuprof__smp_thread_start(gpuprof__thread *t) {
    if (!GPUPROF__LD(&gpuprof__smp_global.on)) return;
    /* the keeper may have given it a timer while it recorded no range: its own replaces that one */
    pthread_mutex_lock(&gpuprof__smp_foreign_mu);
#if GPUPROF__SAMPLER
    gpuprof__smp_foreign_drop(t->tid);
#endif
    gpuprof__smp_thread_timer(t);
    pthread_mutex_unlock(&gpuprof__smp_foreign_mu);
}
static void gpuprof__smp_thread_timer(gpuprof__thread *t) {
#if GPUPROF__SAMPLER
    gpuprof__smp *m = t->smp;
    struct sigevent ev;
    struct itimerspec its;
    timer_t timer;
    pthread_attr_t attr;
    double period;
    if (!GPUPROF__LD(&gpuprof__smp_global.on) || (m && m->gen)) return;
    if (!m) {
        if (!(m = (gpuprof__smp *)gpuprof__zalloc(sizeof *m))) return;
        GPUPROF__STR(&t->smp, m);
    }
    m->stack_lo = m->stack_hi = 0;       /* no walk until they are known (the timer starts below) */
    if (gpuprof__getattr_np(pthread_self(), &attr) == 0) {
        void *addr = NULL;
        size_t size = 0;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            m->stack_lo = (uintptr_t)addr;
            m->stack_hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
    gpuprof__smp_code();
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = gpuprof__smp_global.signo;
    ev._sigev_un._tid = t->tid;
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &timer) != 0) {
        gpuprof__warn(GPUPROF__W_BAD_ENV, "no CPU samples of thread %d: timer_create failed: %s", t->tid, strerror(errno));
        return;
    }
    period = 1e9 / gpuprof__smp_global.hz;
    its.it_interval.tv_sec = (time_t)((uint64_t)period / 1000000000u);
    its.it_interval.tv_nsec = (long)((uint64_t)period % 1000000000u);
    /* The first expiry: a timer that started from zero would never fire in
       a thread shorter than its period (a thread per task). The kernel looks
       at CPU timers at its tick (100-1000 Hz): at rates of 250 Hz and more
       the timer is due at once, so the first tick that finds the thread
       running samples it, as likely as a tick lands in its CPU time (each
       thread its share); at lower rates a random phase within the period. */
    its.it_value.tv_sec = 0;
    its.it_value.tv_nsec = 1;
    if (gpuprof__smp_global.hz < 250) {
        uint64_t phase = 1 + (gpuprof__mono_ns() * 0x9E3779B97F4A7C15ull >> 11) % (uint64_t)period;
        its.it_value.tv_sec = (time_t)(phase / 1000000000u);
        its.it_value.tv_nsec = (long)(phase % 1000000000u);
    }
    m->tid = t->tid;
    m->cpu0_ns = gpuprof__smp_cpu_of(0);
    t->smp_timer = (uintptr_t)timer;
    GPUPROF__STR(&m->gen, GPUPROF__ADD(&gpuprof__smp_global.timers, 1) + 1);   /* release: cpu0_ns and tid with it */
    if (timer_settime(timer, 0, &its, NULL) != 0) {
        gpuprof__warn(GPUPROF__W_BAD_ENV, "no CPU samples of thread %d: timer_settime failed: %s", t->tid, strerror(errno));
        timer_delete(timer);
        GPUPROF__ST(&m->gen, 0);
    }
#else
    (void)t;
#endif
}

/* A thread's timer deleted, its CPU time sampled added up: on the thread
   (it leaves) or from another (the session ends, the thread still runs;
   the program took the signal over), once (gpuprof__smp_stop_mu). */
#if GPUPROF__SAMPLER
static pthread_mutex_t gpuprof__smp_stop_mu = PTHREAD_MUTEX_INITIALIZER;
#endif
static void gpuprof__smp_thread_stop(gpuprof__thread *t, int own) {
#if GPUPROF__SAMPLER
    gpuprof__smp *m = t->smp;
    uint64_t now;
    if (!m) return;
    pthread_mutex_lock(&gpuprof__smp_stop_mu);
    if (GPUPROF__LD(&m->gen)) {
        timer_delete((timer_t)t->smp_timer);
        now = gpuprof__smp_cpu_of(own ? 0 : m->tid);
        if (now > GPUPROF__LD(&m->cpu0_ns)) GPUPROF__ST(&m->cpu_ns, GPUPROF__LD(&m->cpu_ns) + (now - GPUPROF__LD(&m->cpu0_ns)));
        GPUPROF__ST(&m->gen, 0);
    }
    pthread_mutex_unlock(&gpuprof__smp_stop_mu);
#else
    (void)t; (void)own;
#endif
}

/* Whether the thread's ring holds samples the trace has not taken. */
static int gpuprof__smp_pending(const gpuprof__thread *t) {
    const gpuprof__smp *m = GPUPROF__LDA(&t->smp);
    return m && GPUPROF__LDA(&m->ring_head) != m->ring_tail;
}

/* The session ends: every timer stopped, and no handler still in a
   thread's slots, before anything is read for the last time or freed. */
static void gpuprof__smp_stop_all(void) {
    gpuprof__thread *t;
    uint32_t i;
    int spins;
    if (!GPUPROF__LD(&gpuprof__smp_global.on)) return;
    GPUPROF__ST(&gpuprof__smp_global.on, 0);
    for (t = gpuprof__threads.threads; t; t = t->next) gpuprof__smp_thread_stop(t, t == gpuprof__tls);
    gpuprof__smp_foreign_stop_all();
    for (t = gpuprof__threads.threads; t; t = t->next)
        for (spins = 0; t->smp && GPUPROF__LDA(&t->smp->busy) && spins < 100000; spins++) {}
    for (i = 0; i < GPUPROF__LD(&gpuprof__smp_foreign.n); i++)
        for (spins = 0; GPUPROF__LDA(&gpuprof__smp_foreign.m[i]->busy) && spins < 100000; spins++) {}
}

/* The sampler's signal as the program left it: gpuprof's handler, or one
   the program (or a library) put there since (its own handler, SIG_IGN,
   or SIG_DFL, which a timer's next tick turns into the program's end
   where the signal's default is to terminate, SIGPROF's is: see
   GPUPROF_SAMPLE_SIGNAL=SIGURG). Looked at by the keeper every
   GPUPROF__SMP_CHECK_NS and at each report: taken over, every timer stops
   and one line says so; the samples before are kept. The code map is
   brought up to date then too. */
#define GPUPROF__SMP_CHECK_NS 100000000ull
static void gpuprof__smp_check(void) {
#if GPUPROF__SAMPLER
    struct sigaction cur;
    gpuprof__thread *t;
    const char *what;
    int stopped = 0;
    if (!GPUPROF__LD(&gpuprof__smp_global.on)) return;
    gpuprof__smp_code();                              /* objects loaded since: their return addresses are code too */
    gpuprof__smp_foreign_scan();                             /* threads that record no range */
    if (!gpuprof__smp_global.installed || sigaction(gpuprof__smp_global.signo, NULL, &cur) != 0) return;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == gpuprof__smp_handler) return;
    what = (cur.sa_flags & SA_SIGINFO) ? "installed a handler of its own for" : cur.sa_handler == SIG_DFL ? "reset to its default" :
           cur.sa_handler == SIG_IGN ? "set to be ignored" : "installed a handler of its own for";
    pthread_mutex_lock(&gpuprof__lock);
    if (GPUPROF__LD(&gpuprof__smp_global.on) && gpuprof__g.state == GPUPROF__RUNNING) {
        GPUPROF__ST(&gpuprof__smp_global.on, 0);
        for (t = gpuprof__threads.threads; t; t = t->next) gpuprof__smp_thread_stop(t, t == gpuprof__tls);
        gpuprof__smp_global.installed = 0;                  /* a later session asks again */
        snprintf(gpuprof__smp_global.why, sizeof gpuprof__smp_global.why, "the program %s signal %d after sampling began", what, gpuprof__smp_global.signo);
        stopped = 1;
    }
    pthread_mutex_unlock(&gpuprof__lock);
    if (stopped)
        gpuprof__warn(GPUPROF__W_BAD_ENV, "the program %s signal %d (%s), which gpuprof samples with: CPU sampling stopped there, the samples before it are kept "
                      "(set GPUPROF_SAMPLE_SIGNAL to a signal the program leaves alone: SIGURG, whose default is to ignore it, or SIGRTMIN+3)",
                      what, gpuprof__smp_global.signo, gpuprof__smp_global.signo == SIGPROF ? "SIGPROF" : gpuprof__smp_global.signo == SIGURG ? "SIGURG" : "GPUPROF_SAMPLE_SIGNAL");
#endif
}

/* One thread's samples cleared (own: it is the calling thread). */
static void gpuprof__smp_clear_one(gpuprof__smp *m, int own) {
    uint32_t i;
    for (i = 0; i < GPUPROF__SMP_SLOTS; i++) GPUPROF__ST(&m->slot[i].count, (uint64_t)0);
    GPUPROF__ST(&m->taken, (uint64_t)0);
    GPUPROF__ST(&m->lost, (uint64_t)0);
    GPUPROF__ST(&m->overruns, (uint64_t)0);
    GPUPROF__ST(&m->cpu_ns, (uint64_t)0);
#if GPUPROF__SAMPLER
    if (GPUPROF__LD(&m->gen)) GPUPROF__ST(&m->cpu0_ns, gpuprof__smp_cpu_of(own ? 0 : m->tid));
#else
    (void)own;
#endif
}

/* gpuprof_reset (under gpuprof__lock): the samples so far cleared, as the
   ranges' statistics are (relaxed stores: a thread's handler may be adding
   one at the same moment; the worst case is one sample of the old period
   kept in the new). Each slot's stack stays, with a count of 0. */
static void gpuprof__smp_reset(void) {
    gpuprof__thread *t;
    uint32_t i;
    for (t = gpuprof__threads.threads; t; t = t->next) {
        gpuprof__smp *m = GPUPROF__LDA(&t->smp);
        if (m) gpuprof__smp_clear_one(m, t == gpuprof__tls);
    }
    pthread_mutex_lock(&gpuprof__smp_foreign_mu);                 /* and those of the threads that record no range */
    for (i = 0; i < GPUPROF__LD(&gpuprof__smp_foreign.n); i++) gpuprof__smp_clear_one(gpuprof__smp_foreign.m[i], 0);
    pthread_mutex_unlock(&gpuprof__smp_foreign_mu);
}

/* ----------------------------------------------------------------------
   CPU samples: symbols, the ELF seam. At report time (and as the
   Perfetto trace's writer meets new stacks), never in the handler: the loaded objects (dl_iterate_phdr: each one's path and load
   bias; the main program's path is /proc/self/exe), and for those that
   hold a sampled address their functions, read from the file's ELF .symtab
   (static functions too), else from its debug file (by build id, or
   .gnu_debuglink), else .dynsym. An address no symbol names counts as
   "module (no symbols)" (a stripped library: one row, not one an
   address), module+0xOFFSET where the full symbols miss it, or 0xADDR
   outside every object (JIT code). Inlined code counts as its caller.
   ---------------------------------------------------------------------- */
typedef struct gpuprof__sym { uintptr_t lo, hi; const char *name; } gpuprof__sym;
typedef struct gpuprof__mod {
    char path[512];
    const char *file;                     /* the file's name, in path */
    uintptr_t bias, lo, hi;               /* load bias; its executable segments span [lo, hi) */
    int loaded;                           /* its symbols: 1 read, -1 none to be had, 0 not yet */
    int main;                             /* the main program */
    int code_ix;                          /* its entry in the sampler's code map (-1: none, or not yet known) */
    int full;                             /* its symbols are a .symtab's (static functions too), not .dynsym's alone */
    gpuprof__sym *syms;
    uint32_t nsyms;
    char *strs;                           /* the names, as read */
} gpuprof__mod;
typedef struct gpuprof__symtab { gpuprof__mod *mods; uint32_t n, cap; } gpuprof__symtab;

#if GPUPROF__SAMPLER
static int gpuprof__sym_module(struct gpuprof__dlinfo *info, size_t size, void *data) {
    gpuprof__symtab *st = (gpuprof__symtab *)data;
    gpuprof__mod *m;
    void *na;
    uintptr_t lo, hi;
    (void)size;
    gpuprof__dl_code_span(info, &lo, &hi);
    if (hi <= lo) return 0;
    if (!(na = gpuprof__room(st->mods, sizeof *st->mods, st->n, &st->cap))) return 1;
    st->mods = (gpuprof__mod *)na;
    m = &st->mods[st->n++];                   /* zeroed */
    if (info->name && *info->name) snprintf(m->path, sizeof m->path, "%s", info->name);
    else if (st->n == 1) {                /* the first, unnamed: the main program */
        ssize_t n = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        m->path[n > 0 ? n : 0] = 0;
        m->main = 1;
    } else {                              /* the vDSO, which has no file */
        snprintf(m->path, sizeof m->path, "[vdso]");
    }
    m->file = strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path;
    m->bias = info->addr;
    m->lo = lo;
    m->hi = hi;
    m->code_ix = -1;
    return 0;
}

static int gpuprof__sym_cmp(const void *a, const void *b) {
    const gpuprof__sym *x = (const gpuprof__sym *)a, *y = (const gpuprof__sym *)b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* n bytes of fd at off into a new buffer (NULL: cannot). */
static void *gpuprof__sym_read(int fd, uint64_t off, uint64_t n) {
    char *b;
    uint64_t got = 0;
    if (n == 0 || n > ((uint64_t)1 << 32) || !(b = (char *)gpuprof__alloc((size_t)n + 1))) return NULL;
    while (got < n) {
        ssize_t r = pread(fd, b + got, (size_t)(n - got), (off_t)(off + got));
        if (r <= 0) { GPUPROF_FREE(b); return NULL; }
        got += (uint64_t)r;
    }
    b[n] = 0;
    return b;
}

/* The file where the distribution keeps a module's debug symbols, by the
   build id of its NT_GNU_BUILD_ID note (/usr/lib/debug/.build-id/ab/cdef...
   .debug: Debian's -dbg packages, Fedora's debuginfo); "" when there is
   none. */
static void gpuprof__sym_debug_file(int fd, const Elf64_Ehdr *eh, const Elf64_Shdr *sh, char *out, size_t cap) {
    int i;
    out[0] = 0;
    for (i = 0; i < eh->e_shnum && !out[0]; i++) {
        unsigned char *note;
        uint64_t at = 0;
        if (sh[i].sh_type != SHT_NOTE || sh[i].sh_size > 65536 || !(note = (unsigned char *)gpuprof__sym_read(fd, sh[i].sh_offset, sh[i].sh_size))) continue;
        while (at + 12 <= sh[i].sh_size) {
            uint32_t nsz, dsz, type;
            uint64_t name, desc;
            memcpy(&nsz, note + at, 4);
            memcpy(&dsz, note + at + 4, 4);
            memcpy(&type, note + at + 8, 4);
            name = at + 12;
            desc = name + (((uint64_t)nsz + 3) & ~3ull);
            if (desc + dsz > sh[i].sh_size) break;
            if (type == 3 && nsz == 4 && !memcmp(note + name, "GNU", 4) && dsz >= 2 && dsz <= 64) {     /* NT_GNU_BUILD_ID */
                size_t o = (size_t)snprintf(out, cap, "/usr/lib/debug/.build-id/%02x/", note[desc]);
                uint32_t k;
                for (k = 1; k < dsz && o + 3 < cap; k++) o += (size_t)snprintf(out + o, cap - o, "%02x", note[desc + k]);
                if (o + 7 >= cap || (snprintf(out + o, cap - o, ".debug"), access(out, R_OK) != 0)) out[0] = 0;
                break;
            }
            at = desc + (((uint64_t)dsz + 3) & ~3ull);
        }
        GPUPROF_FREE(note);
    }
}

/* The CRC-32 (IEEE, reflected: zlib's) of the whole file fd, as
   .gnu_debuglink records its debug file's. */
static uint32_t gpuprof__sym_crc(int fd) {
    uint32_t tab[256], c = 0xffffffffu, k;
    unsigned char *chunk = (unsigned char *)gpuprof__alloc(65536);   /* on the heap: a report may be asked for on a thread of 16 KiB */
    ssize_t r;
    off_t at = 0;
    if (!chunk) return 0;
    for (k = 0; k < 256; k++) {
        uint32_t v = k, b;
        for (b = 0; b < 8; b++) v = v & 1 ? 0xedb88320u ^ (v >> 1) : v >> 1;
        tab[k] = v;
    }
    while ((r = pread(fd, chunk, 65536, at)) > 0) {
        for (k = 0; k < (uint32_t)r; k++) c = tab[(c ^ chunk[k]) & 0xff] ^ (c >> 8);
        at += r;
    }
    GPUPROF_FREE(chunk);
    return c ^ 0xffffffffu;
}

/* The debug file a module's .gnu_debuglink section names (objcopy
   --only-keep-debug and --add-gnu-debuglink: a file name and its CRC),
   where gdb looks for it: beside the module, in its .debug/ folder, under
   /usr/lib/debug and the module's folder; the first whose CRC matches,
   "" when none does. */
static void gpuprof__sym_debuglink(int fd, const Elf64_Ehdr *eh, const Elf64_Shdr *sh, const char *path, char *out, size_t cap) {
    static const char *const where[] = { "%.*s%s", "%.*s.debug/%s", "/usr/lib/debug%.*s%s" };
    const Elf64_Shdr *names = eh->e_shstrndx < eh->e_shnum ? &sh[eh->e_shstrndx] : NULL;
    char *strs = names && names->sh_size <= 65536 ? (char *)gpuprof__sym_read(fd, names->sh_offset, names->sh_size) : NULL;
    char *link = NULL;
    const char *slash = strrchr(path, '/');
    int i, dir = slash ? (int)(slash - path) + 1 : 0;
    size_t at = 0;
    uint32_t want = 0;
    for (i = 0; strs && i < eh->e_shnum && !link; i++)
        if (sh[i].sh_name < names->sh_size && !strcmp(strs + sh[i].sh_name, ".gnu_debuglink") && sh[i].sh_size >= 8 && sh[i].sh_size <= 4096 &&
            (link = (char *)gpuprof__sym_read(fd, sh[i].sh_offset, sh[i].sh_size)) != NULL) {
            at = (strlen(link) + 4) & ~(size_t)3;          /* the name, its NUL, padded to 4 bytes; then the CRC */
            if (at + 4 > sh[i].sh_size || !*link || strchr(link, '/')) { GPUPROF_FREE(link); link = NULL; break; }
            memcpy(&want, link + at, 4);
        }
    for (i = 0; link && i < 3 && !out[0]; i++) {
        int dfd;
        if (snprintf(out, cap, where[i], dir, path, link) >= (int)cap || (dfd = open(out, O_RDONLY | O_CLOEXEC)) < 0) { out[0] = 0; continue; }
        if (gpuprof__sym_crc(dfd) != want) out[0] = 0;   /* another build's symbols: not these */
        close(dfd);
    }
    GPUPROF_FREE(link);
    GPUPROF_FREE(strs);
}

/* A module's functions from an ELF file's symbol table (.symtab; with
   any, also .dynsym): 1 from .symtab, 0 from .dynsym, -1 none. debug (not
   NULL): where there is no .symtab, the file of its debug symbols. */
static int gpuprof__sym_table(gpuprof__mod *m, int fd, int any, char *debug, size_t cap) {
    Elf64_Ehdr eh;
    Elf64_Shdr *sh = NULL;
    Elf64_Sym *sy = NULL;
    int i, pick = -1, got = -1;
    uint64_t k, n;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || !eh.e_shnum || !(sh = (Elf64_Shdr *)gpuprof__sym_read(fd, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof *sh)))
        return -1;
    for (i = 0; i < eh.e_shnum; i++) if (sh[i].sh_type == SHT_SYMTAB) pick = i;
    if (pick < 0 && debug) gpuprof__sym_debug_file(fd, &eh, sh, debug, cap);
    if (pick < 0 && debug && !debug[0]) gpuprof__sym_debuglink(fd, &eh, sh, m->path, debug, cap);
    if (pick < 0 && any) for (i = 0; i < eh.e_shnum; i++) if (sh[i].sh_type == SHT_DYNSYM) pick = i;
    if (pick >= 0 && sh[pick].sh_link < eh.e_shnum && sh[pick].sh_entsize == sizeof(Elf64_Sym) && sh[pick].sh_type != SHT_NOBITS &&
        (sy = (Elf64_Sym *)gpuprof__sym_read(fd, sh[pick].sh_offset, sh[pick].sh_size)) != NULL &&
        (m->strs = (char *)gpuprof__sym_read(fd, sh[sh[pick].sh_link].sh_offset, sh[sh[pick].sh_link].sh_size)) != NULL) {
        n = sh[pick].sh_size / sizeof *sy;
        if ((m->syms = (gpuprof__sym *)gpuprof__alloc((size_t)n * sizeof *m->syms + 1)) != NULL) {
            for (k = 0; k < n; k++) {
                int type = ELF64_ST_TYPE(sy[k].st_info);
                if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sy[k].st_shndx == SHN_UNDEF || !sy[k].st_value ||
                    sy[k].st_name >= sh[sh[pick].sh_link].sh_size)
                    continue;
                m->syms[m->nsyms].lo = m->bias + sy[k].st_value;
                m->syms[m->nsyms].hi = m->bias + sy[k].st_value + (sy[k].st_size ? sy[k].st_size : 1);
                m->syms[m->nsyms++].name = m->strs + sy[k].st_name;
            }
            if (m->nsyms) qsort(m->syms, m->nsyms, sizeof *m->syms, gpuprof__sym_cmp);
            got = sh[pick].sh_type == SHT_SYMTAB;
        } else {
            GPUPROF_FREE(m->strs);
            m->strs = NULL;
        }
    }
    GPUPROF_FREE(sy);
    GPUPROF_FREE(sh);
    return got;
}

/* A module's functions from its file: .symtab; else those of its debug
   file (a stripped library whose distribution ships them, libc6-dbg, by
   build id; else the file its .gnu_debuglink names); else .dynsym
   (exported functions only). */
static void gpuprof__sym_load(gpuprof__mod *m) {
    char debug[640];
    int fd, got;
    m->loaded = -1;
    debug[0] = 0;
    if (!m->path[0] || (fd = open(m->path, O_RDONLY | O_CLOEXEC)) < 0) return;
    got = gpuprof__sym_table(m, fd, 0, debug, sizeof debug);
    if (got < 0 && debug[0]) {
        int dfd = open(debug, O_RDONLY | O_CLOEXEC);
        if (dfd >= 0) {
            got = gpuprof__sym_table(m, dfd, 0, NULL, 0);
            close(dfd);
        }
    }
    if (got < 0) got = gpuprof__sym_table(m, fd, 1, NULL, 0);
    close(fd);
    if (got >= 0) m->loaded = 1;
    m->full = got == 1;
}
#endif

/* The loaded objects (their symbols read on need: gpuprof__sym_of), then
   those the code map remembers that are not
   loaded any more (unloaded since they were sampled: read from their
   files all the same); each linked to its entry in the map, which tells
   which object an address was in when a sample was taken. */
static void gpuprof__sym_open(gpuprof__symtab *st) {
    memset(st, 0, sizeof *st);
#if GPUPROF__SAMPLER
    {
        uint32_t live, j;
        int i;
        gpuprof__dl_iterate_phdr(gpuprof__sym_module, st);
        live = st->n;
        pthread_mutex_lock(&gpuprof__smp_code_mu);
        for (i = 0; i < gpuprof__smp_global.ncode; i++) {
            gpuprof__mod *m;
            void *na;
            if (!gpuprof__smp_global.code_path[i]) continue;
            for (j = 0; j < live && !(st->mods[j].lo == gpuprof__smp_global.code_lo[i] && st->mods[j].hi == gpuprof__smp_global.code_hi[i] &&
                                      !strcmp(st->mods[j].path, gpuprof__smp_global.code_path[i])); j++) {}
            if (j < live) { st->mods[j].code_ix = i; continue; }
            if (!(na = gpuprof__room(st->mods, sizeof *st->mods, st->n, &st->cap))) continue;
            st->mods = (gpuprof__mod *)na;
            m = &st->mods[st->n++];           /* zeroed */
            snprintf(m->path, sizeof m->path, "%s", gpuprof__smp_global.code_path[i]);
            m->file = strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path;
            m->bias = gpuprof__smp_global.code_bias[i];
            m->lo = gpuprof__smp_global.code_lo[i];
            m->hi = gpuprof__smp_global.code_hi[i];
            m->code_ix = i;
        }
        pthread_mutex_unlock(&gpuprof__smp_code_mu);
    }
#endif
}

static void gpuprof__sym_close(gpuprof__symtab *st) {
    uint32_t i;
    for (i = 0; i < st->n; i++) {
        GPUPROF_FREE(st->mods[i].syms);
        GPUPROF_FREE(st->mods[i].strs);
    }
    GPUPROF_FREE(st->mods);
    memset(st, 0, sizeof *st);
}

/* The object whose code holds pc (NULL: none known). */
static gpuprof__mod *gpuprof__sym_mod(const gpuprof__symtab *st, uintptr_t pc) {
    uint32_t i;
    for (i = 0; i < st->n; i++) if (pc >= st->mods[i].lo && pc < st->mods[i].hi) return &st->mods[i];
    return NULL;
}

/* The object that held pc when a sample was taken with the code map at
   gen entries: the latest of those entries that holds it (a library
   unloaded since, and another loaded at its address, are told apart),
   else the one loaded now. */
static gpuprof__mod *gpuprof__sym_mod_at(const gpuprof__symtab *st, uintptr_t pc, uint32_t gen) {
    gpuprof__mod *best = NULL;
    uint32_t i;
    for (i = 0; i < st->n; i++) {
        gpuprof__mod *m = &st->mods[i];
        if (pc >= m->lo && pc < m->hi && m->code_ix >= 0 && (uint32_t)m->code_ix < gen && (!best || m->code_ix > best->code_ix)) best = m;
    }
    return best ? best : gpuprof__sym_mod(st, pc);
}

/* The main program's file name ("" when unknown). */
static const char *gpuprof__sym_exe(const gpuprof__symtab *st) {
    return st->n && st->mods[0].main ? st->mods[0].file : "";
}

/* The symbol of module m's function that holds pc (its symbols read on
   first need), NULL where none does. */
static const gpuprof__sym *gpuprof__sym_find(gpuprof__mod *m, uintptr_t pc) {
    uint32_t a = 0, b;
#if GPUPROF__SAMPLER
    if (!m->loaded) gpuprof__sym_load(m);
#endif
    for (b = m->nsyms; a < b;) {                /* the last symbol starting at or before pc */
        uint32_t mid = a + (b - a) / 2;
        if (m->syms[mid].lo <= pc) a = mid + 1;
        else b = mid;
    }
    return a && pc < m->syms[a - 1].hi ? &m->syms[a - 1] : NULL;
}

/* The symbol of module m's function called name (NULL: none). */
static const gpuprof__sym *gpuprof__sym_named(gpuprof__mod *m, const char *name) {
    uint32_t i;
#if GPUPROF__SAMPLER
    if (!m->loaded) gpuprof__sym_load(m);
#endif
    for (i = 0; i < m->nsyms; i++) if (!strcmp(m->syms[i].name, name)) return &m->syms[i];
    return NULL;
}

/* The function holding pc in a sample taken with the code map at gen
   entries: its name in buf ("module (no symbols)" where the object has
   none for it: none at all, or its exports alone; module+0xOFFSET where
   its full symbols do not cover pc; 0xADDR outside every object) and its
   module's file name in *module ("" outside every object). */
#define GPUPROF__OMP_RUNTIME "(OpenMP runtime)"
static const char *gpuprof__sym_of(gpuprof__symtab *st, uintptr_t pc, uint32_t gen, char *buf, size_t n, const char **module) {
    gpuprof__mod *m = gpuprof__sym_mod_at(st, pc, gen);
    const gpuprof__sym *sym;
    if (!m) {
        *module = "";
        snprintf(buf, n, "0x%llx", (unsigned long long)pc);
        return buf;
    }
    *module = m->file;
    /* an OpenMP runtime (libgomp, LLVM's libomp, Intel's libiomp5): its
       threads' spin-waits and barriers are one function, whatever symbols
       it has (SPEC 16a) */
    if (!strncmp(m->file, "libgomp.so", 10) || !strncmp(m->file, "libomp.so", 9) || !strncmp(m->file, "libiomp5.so", 11))
        return GPUPROF__OMP_RUNTIME;
    if ((sym = gpuprof__sym_find(m, pc)) != NULL) return sym->name;
    if (!m->full) snprintf(buf, n, "%s (no symbols)", m->file);      /* one row for the object, not one an address: none, or its exports alone */
    else snprintf(buf, n, "%s+0x%llx", m->file, (unsigned long long)(pc - m->bias));
    return buf;
}

/* Whether a call instruction ends at ret (*call), and the function it
   calls where the instruction says: a direct call (e8 rel32) or one
   through the GOT (ff 15 disp32, -fno-plt; AArch64's bl); 0 otherwise
   (through a register), or where ret's object is not the one loaded there
   now (then *call is 0 too). */
#if GPUPROF__SAMPLER
/* n bytes of this process's memory at addr into dst; 0 where they are not
   mapped (an error, never a fault): process_vm_readv, or /proc/self/mem in
   a strict C mode, which hides syscall(). */
static int gpuprof__self_read(void *dst, uintptr_t addr, size_t n) {
#if defined(SYS_process_vm_readv) && defined(GPUPROF__HAVE_SYSCALL)
    struct iovec here, there;
    here.iov_base = dst;
    here.iov_len = there.iov_len = n;
    there.iov_base = (void *)addr;
    return syscall(SYS_process_vm_readv, (long)getpid(), &here, 1L, &there, 1L, 0L) == (long)n;
#else
    int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC), ok;
    ok = fd >= 0 && pread(fd, dst, n, (off_t)addr) == (ssize_t)n;
    if (fd >= 0) close(fd);
    return ok;
#endif
}
#endif

static uintptr_t gpuprof__sym_callee(const gpuprof__symtab *st, uintptr_t ret, uint32_t gen, int *call) {
#if GPUPROF__SAMPLER
    unsigned char c[8];                        /* the 8 bytes before ret */
    uintptr_t target = 0;
    int32_t rel;
    *call = 0;
    if (gpuprof__sym_mod_at(st, ret, gen) != gpuprof__sym_mod(st, ret) || ret < 8 || !gpuprof__self_read(c, ret - 8, 8)) return 0;
    memcpy(&rel, c + 4, 4);
#if defined(__x86_64__)
    /* a call through a register or memory (ff /2): ff d0+r, ff 10+r;
       REX 41 ff d0+r; ff 50+r disp8; ff 54 sib disp8; ff 15 / ff 90+r disp32 */
    *call = c[3] == 0xe8 || (c[6] == 0xff && ((c[7] & 0xf8) == 0xd0 || ((c[7] & 0xf8) == 0x10 && c[7] != 0x14 && c[7] != 0x15))) ||
            (c[5] == 0x41 && c[6] == 0xff && (c[7] & 0xf8) == 0xd0) || (c[5] == 0xff && (c[6] & 0xf8) == 0x50 && c[6] != 0x54) ||
            (c[4] == 0xff && c[5] == 0x54) || (c[2] == 0xff && (c[3] == 0x15 || ((c[3] & 0xf8) == 0x90 && c[3] != 0x94)));
    if (c[3] == 0xe8) return ret + (uintptr_t)(intptr_t)rel;
    if (c[2] != 0xff || c[3] != 0x15) return 0;
    /* the GOT entry: the callee as the loader bound it */
    return gpuprof__self_read(&target, ret + (uintptr_t)(intptr_t)rel, sizeof target) ? target : 0;
#else                                          /* AArch64: bl imm26, blr */
    (void)target;
    *call = ((uint32_t)rel & 0xfc000000u) == 0x94000000u || ((uint32_t)rel & 0xfffffc1fu) == 0xd63f0000u;
    if (((uint32_t)rel & 0xfc000000u) != 0x94000000u) return 0;
    return ret - 4 + (uintptr_t)(intptr_t)(((int32_t)((uint32_t)rel << 6)) >> 6) * 4;
#endif
#else
    (void)st; (void)ret; (void)gen;
    *call = 0;
    return 0;
#endif
}

/* A sample's stack as the PCs to name, innermost first: the interrupted
   PC, then each return address less 1 (its call), with the callers the
   frame chain skipped put back where a call tells them: the call before a
   return address calls a function other than the one the code inside it
   is in, so that function ran between them without a frame of its own
   (a leaf that saved registers, code built without frame pointers: the
   caller of a libm call, main). main is put back above glibc's
   __libc_start_call_main, which calls it through a register. */
static uint32_t gpuprof__smp_pcs(gpuprof__symtab *st, const uintptr_t *frames, uint32_t depth, uint32_t gen, uintptr_t *pc) {
    uint32_t i, n = 0;
    const gpuprof__sym *inner = NULL;
    for (i = 0; i < depth && n < GPUPROF__SMP_DEPTH; i++) {
        uintptr_t ret = frames[i] & ~GPUPROF__SMP_SCANNED, at = ret - (i ? 1 : 0), callee = 0;
        gpuprof__mod *m = gpuprof__sym_mod_at(st, at, gen), *cm;
        const gpuprof__sym *fn = m ? gpuprof__sym_find(m, at) : NULL, *cs = NULL;
        int call = 0;
        if (i) callee = gpuprof__sym_callee(st, ret, gen, &call);
        if (callee && (cm = gpuprof__sym_mod(st, callee)) != NULL && cm->full) cs = gpuprof__sym_find(cm, callee);
        if (cs && cs->lo != callee) cs = NULL;          /* not a function's entry: a PLT stub's is none */
        if (frames[i] & GPUPROF__SMP_SCANNED) {
            /* a word the stack scan found: a return address where a call
               precedes it that calls the function inside, or one the
               instruction does not name (PLT, register) in another
               function; else a stale word */
            if (!call || (cs && inner && cs != inner) || (!cs && fn && fn == inner)) continue;
        } else if (i && inner && fn && m->full && cs && cs != inner)
            pc[n++] = callee;                  /* a function the chain skipped */
        else if (i && inner && fn && !m->main && !strcmp(fn->name, "__libc_start_call_main") && strcmp(inner->name, "main") &&
                 st->n && st->mods[0].main && (cs = gpuprof__sym_named(&st->mods[0], "main")) != NULL)
            pc[n++] = cs->lo;
        if (n < GPUPROF__SMP_DEPTH) pc[n++] = at;
        inner = fn;
    }
    return n;
}

/* gcc's clones named as the function they are of: f.constprop.0, f.isra.0, f.part.0, f.cold -> f. */
static const char *gpuprof__smp_base(const char *name, char *buf, size_t n) {
    static const char *const sfx[] = { ".constprop.", ".isra.", ".part.", ".cold" };
    size_t i, cut = strlen(name);
    for (i = 0; i < 4; i++) {
        const char *p = strstr(name, sfx[i]);
        if (p && (size_t)(p - name) < cut) cut = (size_t)(p - name);
    }
    if (cut == strlen(name)) return name;
    snprintf(buf, n, "%.*s", (int)cut, name);
    return buf;
}

#else
/* GPUPROF_NO_SAMPLES: what the other sections call, as no-ops; a setting
   that asks for samples gets one line. */
#define GPUPROF__SAMPLER 0
#define GPUPROF__SMP_ON() 0
#define GPUPROF__SMP_ASKED() 0
#define GPUPROF__SMP_CHECK_NS 0
#define gpuprof__smp_thread_start(t) ((void)(t))
#define gpuprof__smp_thread_stop(t, own) ((void)(t), (void)(own))
#define gpuprof__smp_pending(t) ((void)(t), 0)
#define gpuprof__smp_check() ((void)0)
#define gpuprof__smp_reset() ((void)0)
#define gpuprof__smp_code() ((void)0)
#define gpuprof__smp_stop_all() ((void)0)
#define gpuprof__smp_foreign_clear() ((void)0)
#define gpuprof__smp_code_clear() ((void)0)
#define gpuprof__smp_setup(hz)                                                                                                      \
    ((hz) > 0 ? gpuprof__warn(GPUPROF__W_BAD_ENV, "GPUPROF_SAMPLE: CPU samples are compiled out of this build (GPUPROF_NO_SAMPLES); " \
                                                  "build without it to have them, or use perf") : (void)0)
#endif

/* ----------------------------------------------------------------------
   Threads joining and leaving a session: a thread's first range binds it
   to a state (starting the session if none runs), its exit hands the
   state on; states and name tables a shutdown left to running threads
   are freed when the last of them lets go.
   ---------------------------------------------------------------------- */
/* Name tables of sessions shut down while other threads still ran. */
typedef struct gpuprof__oldnames {
    gpuprof__name *names;
    uint32_t *hash, n;
    unsigned session;
    struct gpuprof__oldnames *next;
} gpuprof__oldnames;
static gpuprof__oldnames *gpuprof__oldnames_list;

static void gpuprof__names_free_table(gpuprof__name *names, uint32_t *hash, uint32_t n) {
    uint32_t i;
    for (i = GPUPROF__ID_OTHER; i < n; i++) {
        GPUPROF_FREE(names[i].text);
        GPUPROF_FREE(names[i].json);
    }
    GPUPROF_FREE(names);
    GPUPROF_FREE(hash);
}

static int gpuprof__session_retired(unsigned session) {   /* under gpuprof__lock */
    gpuprof__thread *t;
    for (t = gpuprof__threads.retired; t; t = t->next) if (t->session == session) return 1;
    return 0;
}

/* Under gpuprof__lock: frees the name tables no running thread can reach. */
static void gpuprof__reclaim(void) {
    gpuprof__oldnames **pp = &gpuprof__oldnames_list, *o;
    while ((o = *pp) != NULL) {
        if (gpuprof__session_retired(o->session)) { pp = &o->next; continue; }
        *pp = o->next;
        gpuprof__names_free_table(o->names, o->hash, o->n);
        GPUPROF_FREE(o);
    }
    if (gpuprof__registry.names_kept && gpuprof__g.state != GPUPROF__RUNNING && !gpuprof__session_retired(gpuprof__g.session)) {
        gpuprof__names_free_table(gpuprof__registry.names, gpuprof__registry.name_hash, gpuprof__registry.nnames);
        gpuprof__registry.names = NULL;
        gpuprof__registry.name_hash = NULL;
        gpuprof__registry.nnames = 0;
        gpuprof__registry.names_kept = 0;
    }
}

static void gpuprof__thread_free(gpuprof__thread *t) {
    uint32_t i;
    for (i = 0; i < t->nnodes; i += GPUPROF__NODE_CHUNK) {
        uint32_t k;
        gpuprof__node *c = t->chunks[i / GPUPROF__NODE_CHUNK];
        for (k = 0; k < GPUPROF__NODE_CHUNK && i + k < t->nnodes; k++) {
            GPUPROF_FREE(c[k].pre);
            if (c[k].gpu) { GPUPROF_FREE(c[k].gpu->pre); GPUPROF_FREE(c[k].gpu); }
            if (c[k].kspan) { GPUPROF_FREE(c[k].kspan->pre); GPUPROF_FREE(c[k].kspan); }
        }
        GPUPROF_FREE(c);
    }
    for (i = 0; i < t->nids && t->counters; i++)
        if (t->counters[i]) { GPUPROF_FREE(t->counters[i]->pre); gpuprof__vals_free(t->counters[i]->vals); GPUPROF_FREE(t->counters[i]); }
    GPUPROF_FREE(t->overflow.pre);
    if (t->overflow.gpu) { GPUPROF_FREE(t->overflow.gpu->pre); GPUPROF_FREE(t->overflow.gpu); }
    if (t->overflow.kspan) { GPUPROF_FREE(t->overflow.kspan->pre); GPUPROF_FREE(t->overflow.kspan); }
#ifdef GPUPROF_CUDA
    gpuprof__gput_free(t->gpu);
#endif
    GPUPROF_FREE(t->block);
    GPUPROF_FREE(t->by_name);
    GPUPROF_FREE(t->counters);
    GPUPROF_FREE(t->chunks);
    GPUPROF_FREE(t->fmt.pf.iid);
    GPUPROF_FREE(t->fmt.pf.other);
#if GPUPROF__SAMPLES
    if (t->smp) {
        gpuprof__smp *m = t->smp;
        GPUPROF__STR(&t->smp, NULL);          /* a handler on this thread (its own state) sees none */
        GPUPROF_FREE(m);
    }
#endif
    GPUPROF_FREE(t);
}

/* Under gpuprof__lock: a state a shutdown retired (its thread was running)
   is freed once its thread lets go of it -- the thread exits, or starts
   recording in a later session with a new state. Then that session's name
   table too, once none of its states is left. One exception while the
   thread lives: a range of that state still open with its external id on
   CUPTI's stack (kernel capture) -- kernels the thread launches before the
   range ends name its call-tree node, which must stay valid; such a state
   is kept (freed when the thread exits if it is still the thread's; kept
   for good if the thread moved on to a new session: a rare, bounded loss
   rather than a dangling node). */
static void gpuprof__retired_drop(gpuprof__thread *t, int exiting) {
    gpuprof__thread **pp;
    uint32_t d;
    if (!t) return;
    for (d = 0; !exiting && d < t->depth && d < GPUPROF_MAX_DEPTH; d++)
        if (t->stack[d].flags & GPUPROF__F_KERN) return;
    for (pp = &gpuprof__threads.retired; *pp && *pp != t; pp = &(*pp)->next) {}
    if (!*pp) return;
    *pp = t->next;
    if (gpuprof__tls == t) {               /* the caller's own: its exit must not see it either */
        gpuprof__tls = NULL;
        pthread_setspecific(gpuprof__tls_key, NULL);
    }
    gpuprof__thread_free(t);
    gpuprof__reclaim();
}

/* Binds the calling thread to a state: that of a thread that has exited if
   there is one (so a program that starts a thread per task keeps bounded
   memory; the statistics just go on adding up), else a new one. */
static gpuprof__thread *gpuprof__thread_new(void) {
    gpuprof__thread *t;
    int tid, max_nodes;
    uint32_t ids;
    unsigned session;
    char label[64];
    gpuprof__thread_identity(&tid, label, sizeof label);
    pthread_mutex_lock(&gpuprof__lock);
    gpuprof__retired_drop(gpuprof__tls, 0);     /* this thread's state of an earlier session, if any */
    /* The main thread gets a state of its own: it is usually the one calling
       GPUPROF_STEP, and the step is its timeline, not an exited worker's. */
    for (t = tid == (int)getpid() ? NULL : gpuprof__threads.threads; t && !(t->exited == 1 && t->session == gpuprof__g.session); t = t->next) {}
    if (t) {
        t->exited = 0;
        GPUPROF__ST(&t->depth, 0u);
        t->stream = NULL;
        t->tid = tid;
        memcpy(t->label, label, sizeof label);
        t->index = gpuprof__threads.nthreads++;
        pthread_mutex_unlock(&gpuprof__lock);
        pthread_setspecific(gpuprof__tls_key, t);
        gpuprof__tls = t;
        gpuprof__smp_thread_start(t);
        return t;
    }
    session = gpuprof__g.session;                /* allocated outside the lock, for this session's sizes */
    ids = gpuprof__registry.max_ids;
    max_nodes = gpuprof__g.cfg.max_nodes;
    pthread_mutex_unlock(&gpuprof__lock);
    if (!(t = gpuprof__thread_alloc(tid, label, ids, max_nodes))) return NULL;
    pthread_mutex_lock(&gpuprof__lock);
    if (gpuprof__g.state != GPUPROF__RUNNING || gpuprof__g.session != session) {
        /* another thread shut the session down meanwhile (and maybe started
           one sized differently): nothing to join; the next call starts afresh */
        pthread_mutex_unlock(&gpuprof__lock);
        gpuprof__thread_free(t);
        return NULL;
    }
    t->session = gpuprof__g.session;
    t->base = gpuprof__clock.base;
    t->names = gpuprof__registry.names;
    t->index = gpuprof__threads.nthreads++;
    t->next = gpuprof__threads.threads;
    GPUPROF__STR(&gpuprof__threads.threads, t);        /* release: the collector walks the list without the lock */
    pthread_mutex_unlock(&gpuprof__lock);
    pthread_setspecific(gpuprof__tls_key, t);
    gpuprof__tls = t;
    gpuprof__smp_thread_start(t);
    return t;
}

static void gpuprof__thread_exit(void *p) {
    gpuprof__thread *t = (gpuprof__thread *)p;
    if (!t || GPUPROF__LD(&gpuprof__g.forked_child)) return;
    gpuprof__smp_thread_stop(t, 1);
    gpuprof__trace_handoff(t);
    pthread_mutex_lock(&gpuprof__lock);
    if (t->session == gpuprof__g.session && gpuprof__g.state == GPUPROF__STOPPING) {
        t->exited = 1;      /* a shutdown under way: it frees this state rather than retiring it (no thread left to let go of it) */
    } else if (t->session == gpuprof__g.session && gpuprof__g.state == GPUPROF__RUNNING) {
        if (t->depth) {
            uint32_t d = t->depth > GPUPROF_MAX_DEPTH ? GPUPROF_MAX_DEPTH : t->depth;
            GPUPROF__ADD(&gpuprof__g.warn_count[GPUPROF__W_UNCLOSED], (uint64_t)t->depth - 1);
            gpuprof__warn(GPUPROF__W_UNCLOSED, "a thread (%s) exited with %u range%s open (innermost \"%s\"), not counted (close each BEGIN with END)",
                          t->label, t->depth, t->depth == 1 ? "" : "s", gpuprof__registry.names[t->stack[d - 1].node->name_id].text);
        }
        t->exited = 1;
    } else gpuprof__retired_drop(t, 1);    /* retired by a shutdown while this thread ran */
    pthread_mutex_unlock(&gpuprof__lock);
    gpuprof__tls = NULL;     /* a range in a later TLS destructor starts afresh, not in a state handed on */
}

/* A thread's first range starts the session when none runs. Starting one
   needs every section, so its code is the file's last ("Lifecycle"), which
   stores it here from a constructor that runs before the program's own
   (gpuprof__register_start). A range in a constructor that runs earlier
   still (priority 101 or below) is left out, with a line saying so. */
static int (*gpuprof__lazy_start)(void);

/* Everything a range needs before its first event on this thread: the
   session (auto-initialised on first use), a thread state. */
static GPUPROF__NOINLINE gpuprof__thread *gpuprof__enter_slow(void) {
    gpuprof__thread *t = gpuprof__tls;
    unsigned live = GPUPROF__LDA(&gpuprof__g.live);   /* acquire: the session's settings, published with it */
    if (!live) {
        int state = GPUPROF__LDA(&gpuprof__g.state);
        /* RUNNING with nothing live and not paused: the session's start is
           still being published (its state is set before the settings the
           hot path reads); waiting for it, as for STARTING, keeps the range
           (taking the state as "paused" lost the first ranges of threads
           already running when another one's range started the session). */
        if ((state == GPUPROF__NEVER || state == GPUPROF__STARTING || (state == GPUPROF__RUNNING && !GPUPROF__LD(&gpuprof__paused))) &&
            !GPUPROF__LD(&gpuprof__g.forked_child)) {
            int (*start)(void) = GPUPROF__LD(&gpuprof__lazy_start);
            if (start) start();                      /* or waits for the thread starting it */
            else gpuprof__warn(GPUPROF__W_BEFORE_INIT, "a range before gpuprof's own constructor ran is not recorded (call gpuprof_init() first in a constructor of priority 101 or below)");
            live = GPUPROF__LDA(&gpuprof__g.live);
        } else if ((state == GPUPROF__DOWN || state == GPUPROF__STOPPING) && !GPUPROF__LD(&gpuprof__g.forked_child)) {
            gpuprof__warn(GPUPROF__W_AFTER_SHUTDOWN, "a range, counter or step after gpuprof_shutdown() is ignored (call gpuprof_init() to start a new session)");
        }
        if (!live) return NULL;
    }
    if (!t || t->session != live) t = gpuprof__thread_new();
    return t;
}

/* This thread's state if it may record now: NULL while paused, after
   shutdown, or in a forked child; the first call initialises the session
   and registers the thread. */
GPUPROF__INLINE gpuprof__thread *gpuprof__self(void) {
    gpuprof__thread *t = gpuprof__tls;
    unsigned live = GPUPROF__LD(&gpuprof__g.live);
    if (GPUPROF__LIKELY(t && t->session == live)) return t;     /* sessions start at 1: live != 0 */
    if (!live && GPUPROF__LD(&gpuprof__paused)) return NULL;   /* paused */
    return gpuprof__enter_slow();
}

/* ----------------------------------------------------------------------
   Memory (SPEC 7): tracked allocations by category, GPUPROF_MEM snapshots
   of the device, its default memory pool, the tracked bytes and the host,
   and (opt-in) what each range changes. One mutex, gpuprof__mem_mu, guards
   it all; nothing here is on the path of a range unless mem_ranges is on.
   Lock order: gpuprof__lock, then gpuprof__mem_mu, then the trace lock.
   ---------------------------------------------------------------------- */
typedef struct gpuprof__memfig {
    int dev_ok, pool_ok, host_ok;     /* which figures this snapshot has */
    int dev;                          /* the device they are of */
    uint64_t dev_used, dev_total;     /* cudaMemGetInfo: total - free (all processes) */
    uint64_t pool_used, pool_used_high, pool_rsvd, pool_rsvd_high;   /* the default pool */
    uint64_t rss, rss_peak;           /* host */
    uint64_t tracked;                 /* live bytes in tracked allocations */
} gpuprof__memfig;

typedef struct gpuprof__memcat {
    uint32_t name_id, counter_id;     /* "activations"; "memory: activations (MiB)" */
    uint64_t live, peak, at_peak, allocs, frees;
} gpuprof__memcat;

typedef struct gpuprof__memphase {
    uint32_t name_id;
    uint64_t count, step;             /* snapshots with this label; the step of the last */
    gpuprof__memfig last;             /* figures at the last one */
    int64_t d_tracked, d_dev, d_pool_used, d_pool_rsvd, d_rss;   /* ... and the change since the snapshot before it */
    int has_delta;
    uint64_t peak;                    /* highest tracked bytes between a previous snapshot and one of this label */
    int64_t growth;                   /* the largest growth of tracked bytes into one of this label */
    uint64_t growth_step;
    int32_t growth_cat;               /* the category that grew most in it, -1: none */
    int64_t growth_cat_bytes;
} gpuprof__memphase;

typedef struct gpuprof__memslot { uintptr_t p; uint64_t bytes; uint32_t cat; } gpuprof__memslot;

static pthread_mutex_t gpuprof__mem_mu = PTHREAD_MUTEX_INITIALIZER;
typedef struct gpuprof__memstate {
    int on;                           /* between init and shutdown */
    unsigned session;                 /* whose name ids these are: an id registered in
                                         another session is not stored (checked under the lock) */
    gpuprof__memslot *tab;            /* live tracked allocations: open addressing, linear probing */
    uint32_t cap, used;
    gpuprof__memcat cat[GPUPROF_MEM_CATEGORIES];
    uint32_t ncat;
    uint64_t live, peak, window_peak, allocs, frees, unknown_frees, untracked;
    uint64_t peak_step;
    uint32_t peak_label;              /* the snapshot after the peak names its phase; 0: none yet */
    int peak_pending;                 /* a new overall peak since the last snapshot */
    gpuprof__memphase phase[GPUPROF__MEM_LABELS];
    uint32_t nphase;
    uint64_t snapshots;
    gpuprof__memfig prev;             /* the last snapshot */
    uint64_t prev_cat[GPUPROF_MEM_CATEGORIES];
    int have_prev, any_dev, any_pool, any_host;
    uint64_t rss_seen;                /* the highest RSS a snapshot read (getrusage's peak can lag it a little) */
    int statm_open, statm_fd, statm_pid;   /* /proc/self/statm, kept open */
    /* the largest growth between two snapshots, for the reading */
    int64_t growth;
    uint32_t growth_label;
    int32_t growth_cat;
    int64_t growth_cat_bytes;
    uint64_t growth_step;
    int growth_kind;                  /* 0 none, 1 tracked, 2 device used, 3 host RSS */
    uint32_t id_tracked, id_dev, id_pool_used, id_pool_rsvd, id_rss;   /* trace counter names */
#ifdef GPUPROF_CUDA
    signed char pools[GPUPROF__MAX_DEV];   /* the device supports memory pools: 1, -1, 0 unknown */
#endif
} gpuprof__memstate;
static gpuprof__memstate gpuprof__mem;

static uint32_t gpuprof__mem_hash(uintptr_t p, uint32_t cap) {
    uint64_t h = (uint64_t)p * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32) & (cap - 1);
}

/* The slot of p, or of the empty slot where it would go. */
static uint32_t gpuprof__mem_find(uintptr_t p) {
    uint32_t i = gpuprof__mem_hash(p, gpuprof__mem.cap);
    while (gpuprof__mem.tab[i].p && gpuprof__mem.tab[i].p != p) i = (i + 1) & (gpuprof__mem.cap - 1);
    return i;
}

static int gpuprof__mem_grow(void) {
    uint32_t cap = gpuprof__mem.cap ? gpuprof__mem.cap * 2 : 1024, i, old = gpuprof__mem.cap;
    gpuprof__memslot *tab = (gpuprof__memslot *)gpuprof__alloc(sizeof *tab * cap), *prev = gpuprof__mem.tab;
    if (!tab) return -1;
    memset(tab, 0, sizeof *tab * cap);
    gpuprof__mem.tab = tab;
    gpuprof__mem.cap = cap;
    for (i = 0; i < old; i++) if (prev[i].p) gpuprof__mem.tab[gpuprof__mem_find(prev[i].p)] = prev[i];
    GPUPROF_FREE(prev);
    return 0;
}

/* Removes slot i, moving later entries of its probe run back. */
static void gpuprof__mem_remove(uint32_t i) {
    uint32_t mask = gpuprof__mem.cap - 1, j = i, k;
    for (;;) {
        gpuprof__mem.tab[i].p = 0;
        for (;;) {
            j = (j + 1) & mask;
            if (!gpuprof__mem.tab[j].p) return;
            k = gpuprof__mem_hash(gpuprof__mem.tab[j].p, gpuprof__mem.cap);
            /* j's entry may move to i when its home k is not in (i, j] */
            if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) continue;
            break;
        }
        gpuprof__mem.tab[i] = gpuprof__mem.tab[j];
        i = j;
    }
}

/* Memory calls work while paused (an allocation made then is freed later)
   and do nothing when gpuprof is off, shut down, or in a forked child. */
static int gpuprof__mem_usable(void) {
    if (GPUPROF__LD(&gpuprof__g.forked_child)) return 0;
    if (GPUPROF__LDA(&gpuprof__g.state) != GPUPROF__RUNNING) (void)gpuprof__enter_slow();
    return GPUPROF__LDA(&gpuprof__g.state) == GPUPROF__RUNNING && !GPUPROF__LD(&gpuprof__g.off);
}

/* A trace counter, in MiB, from under gpuprof__mem_mu (so that the values of
   one counter are in time order whichever thread writes them). */
static void gpuprof__mem_counter(gpuprof__thread *t, uint32_t id, double bytes, uint64_t ticks) {
    double mib = bytes / 1048576.0;
    uint64_t u;
    if (!t || !id) return;
    memcpy(&u, &mib, sizeof u);
    gpuprof__trace_put(t, GPUPROF__EV_COUNTER, id, 0, ticks - t->base, u);
}

/* The trace thread state of the caller, if the trace is on and it may record. */
static gpuprof__thread *gpuprof__mem_tracer(void) {
    return GPUPROF__LD(&gpuprof__trace.on) ? gpuprof__self() : NULL;
}

/* The names of the memory counters in the trace, registered on first use
   (outside gpuprof__mem_mu: registering takes gpuprof__lock), kept if the
   session is still the one they were registered in. */
static void gpuprof__mem_names(unsigned session) {
    uint32_t id[5];
    if (GPUPROF__LD(&gpuprof__mem.id_rss)) return;
    id[0] = gpuprof__intern("memory: tracked (MiB)");
    id[1] = gpuprof__intern("memory: device used (MiB)");
    id[2] = gpuprof__intern("memory: pool used (MiB)");
    id[3] = gpuprof__intern("memory: pool reserved (MiB)");
    id[4] = gpuprof__intern("memory: host RSS (MiB)");
    pthread_mutex_lock(&gpuprof__mem_mu);
    if (gpuprof__mem.on && gpuprof__mem.session == session) {
        gpuprof__mem.id_tracked = id[0];
        gpuprof__mem.id_dev = id[1];
        gpuprof__mem.id_pool_used = id[2];
        gpuprof__mem.id_pool_rsvd = id[3];
        GPUPROF__ST(&gpuprof__mem.id_rss, id[4]);
    }
    pthread_mutex_unlock(&gpuprof__mem_mu);
}

/* The index of category `name`, registering it (outside gpuprof__mem_mu:
   registering a name takes gpuprof__lock). Over the cap: the last slot,
   "(other categories)". */
static int32_t gpuprof__mem_cat(const char *name, unsigned *session_out) {
    static const char other[] = "(other categories)";
    uint32_t i, id, cid;
    unsigned session;
    int full;
    char cname[GPUPROF_NAME_MAX + 32];
    if (!name || !*name) name = "(untagged)";
    for (;;) {
        pthread_mutex_lock(&gpuprof__mem_mu);
        if (!gpuprof__mem.on) { pthread_mutex_unlock(&gpuprof__mem_mu); return -1; }
        session = gpuprof__mem.session;
        for (i = 0; i < gpuprof__mem.ncat; i++)
            if (strcmp(gpuprof__registry.names[gpuprof__mem.cat[i].name_id].text, name) == 0) { pthread_mutex_unlock(&gpuprof__mem_mu); *session_out = session; return (int32_t)i; }
        full = gpuprof__mem.ncat >= GPUPROF_MEM_CATEGORIES - 1 && strcmp(name, other) != 0;
        pthread_mutex_unlock(&gpuprof__mem_mu);
        if (!full) break;
        gpuprof__warn(GPUPROF__W_MEM_CAP, "more than %d memory categories: \"%s\" and later ones are counted as \"%s\" (raise GPUPROF_MEM_CATEGORIES)",
                      GPUPROF_MEM_CATEGORIES - 1, name, other);
        name = other;
    }
    gpuprof__mem_names(session);
    snprintf(cname, sizeof cname, "memory: %s (MiB)", name);
    id = gpuprof__intern(name);
    cid = gpuprof__intern(cname);
    pthread_mutex_lock(&gpuprof__mem_mu);
    if (!gpuprof__mem.on || gpuprof__mem.session != session) {
        /* a shutdown (and maybe an init) came between: these ids are not this session's */
        pthread_mutex_unlock(&gpuprof__mem_mu);
        return -1;
    }
    for (i = 0; i < gpuprof__mem.ncat; i++) if (gpuprof__mem.cat[i].name_id == id) break;
    if (i == gpuprof__mem.ncat) {
        if (i >= GPUPROF_MEM_CATEGORIES - 1 && strcmp(name, other) != 0) {
            /* another thread took the last ordinary slot meanwhile */
            pthread_mutex_unlock(&gpuprof__mem_mu);
            return gpuprof__mem_cat(other, session_out);
        }
        memset(&gpuprof__mem.cat[i], 0, sizeof gpuprof__mem.cat[i]);
        gpuprof__mem.cat[i].name_id = id;
        gpuprof__mem.cat[i].counter_id = cid;
        gpuprof__mem.ncat = i + 1;
    }
    pthread_mutex_unlock(&gpuprof__mem_mu);
    *session_out = session;
    return (int32_t)i;
}

/* Under gpuprof__mem_mu: bytes leave category c. */
static void gpuprof__mem_sub(uint32_t c, uint64_t bytes) {
    gpuprof__memcat *k = &gpuprof__mem.cat[c];
    k->live = k->live >= bytes ? k->live - bytes : 0;
    k->frees++;
    GPUPROF__ST(&gpuprof__mem.live, gpuprof__mem.live >= bytes ? gpuprof__mem.live - bytes : 0);
    gpuprof__mem.frees++;
}

void gpuprof_mem_alloc(void *ptr, size_t bytes, const char *category) {
    gpuprof__thread *t;
    gpuprof__memcat *k;
    uint32_t i, c;
    int32_t ci;
    unsigned session = 0;
    uint64_t now;
    if (!ptr || !gpuprof__mem_usable()) return;
    t = gpuprof__mem_tracer();
    if ((ci = gpuprof__mem_cat(category, &session)) < 0) return;
    c = (uint32_t)ci;
    pthread_mutex_lock(&gpuprof__mem_mu);
    if (!gpuprof__mem.on || gpuprof__mem.session != session) { pthread_mutex_unlock(&gpuprof__mem_mu); return; }   /* a new session meanwhile */
    if ((gpuprof__mem.used + 1) * 2 > gpuprof__mem.cap && gpuprof__mem_grow() != 0) {
        gpuprof__mem.untracked++;
        pthread_mutex_unlock(&gpuprof__mem_mu);
        return;
    }
    i = gpuprof__mem_find((uintptr_t)ptr);
    if (gpuprof__mem.tab[i].p) {
        /* Tracked twice without a free between: the old one is gone. */
        gpuprof__memslot old = gpuprof__mem.tab[i];
        gpuprof__warn(GPUPROF__W_MEM_TWICE, "gpuprof_mem_alloc(%p): already tracked (%llu bytes of \"%s\") and not freed since; the old allocation is counted as freed (call gpuprof_mem_free first)",
                      ptr, (unsigned long long)old.bytes, gpuprof__registry.names[gpuprof__mem.cat[old.cat].name_id].text);
        gpuprof__mem_sub(old.cat, old.bytes);
        gpuprof__mem.tab[i].bytes = bytes;
        gpuprof__mem.tab[i].cat = c;
    } else {
        gpuprof__mem.tab[i].p = (uintptr_t)ptr;
        gpuprof__mem.tab[i].bytes = bytes;
        gpuprof__mem.tab[i].cat = c;
        gpuprof__mem.used++;
    }
    k = &gpuprof__mem.cat[c];
    k->live += bytes;
    k->allocs++;
    if (k->live > k->peak) k->peak = k->live;
    GPUPROF__ST(&gpuprof__mem.live, gpuprof__mem.live + bytes);
    gpuprof__mem.allocs++;
    if (gpuprof__mem.live > gpuprof__mem.window_peak) gpuprof__mem.window_peak = gpuprof__mem.live;
    if (gpuprof__mem.live > gpuprof__mem.peak) {
        uint32_t j;
        gpuprof__mem.peak = gpuprof__mem.live;
        gpuprof__mem.peak_step = GPUPROF__LD(&gpuprof__steps.step);
        gpuprof__mem.peak_pending = 1;
        for (j = 0; j < gpuprof__mem.ncat; j++) gpuprof__mem.cat[j].at_peak = gpuprof__mem.cat[j].live;
    }
    if (t) {
        now = gpuprof__ticks();
        gpuprof__mem_counter(t, k->counter_id, (double)k->live, now);
        gpuprof__mem_counter(t, gpuprof__mem.id_tracked, (double)gpuprof__mem.live, now);
    }
    pthread_mutex_unlock(&gpuprof__mem_mu);
}

void gpuprof_mem_free(void *ptr) {
    gpuprof__thread *t;
    uint32_t i, c;
    /* after shutdown: a program freeing its buffers on the way out, silently */
    if (!ptr || GPUPROF__LDA(&gpuprof__g.state) == GPUPROF__DOWN || GPUPROF__LDA(&gpuprof__g.state) == GPUPROF__STOPPING || !gpuprof__mem_usable()) return;
    t = gpuprof__mem_tracer();
    pthread_mutex_lock(&gpuprof__mem_mu);
    if (!gpuprof__mem.on) { pthread_mutex_unlock(&gpuprof__mem_mu); return; }
    if (!gpuprof__mem.cap || !gpuprof__mem.tab[i = gpuprof__mem_find((uintptr_t)ptr)].p) {
        gpuprof__mem.unknown_frees++;
        pthread_mutex_unlock(&gpuprof__mem_mu);
        gpuprof__warn(GPUPROF__W_MEM_UNKNOWN, "gpuprof_mem_free(%p): not a tracked allocation (freed twice, or never given to gpuprof_mem_alloc); ignored", ptr);
        return;
    }
    c = gpuprof__mem.tab[i].cat;
    gpuprof__mem_sub(c, gpuprof__mem.tab[i].bytes);
    gpuprof__mem_remove(i);
    gpuprof__mem.used--;
    if (t) {
        uint64_t now = gpuprof__ticks();
        gpuprof__mem_counter(t, gpuprof__mem.cat[c].counter_id, (double)gpuprof__mem.cat[c].live, now);
        gpuprof__mem_counter(t, gpuprof__mem.id_tracked, (double)gpuprof__mem.live, now);
    }
    pthread_mutex_unlock(&gpuprof__mem_mu);
}

/* Host figures (under gpuprof__mem_mu): RSS from /proc/self/statm
   (resident pages; the file stays open and is re-read from its start, reopened
   in a forked child), the peak from getrusage (KiB on Linux). */
static void gpuprof__mem_host(gpuprof__memfig *m) {
    char buf[256];
    unsigned long long size = 0, resident = 0;
    struct rusage ru;
    long page = sysconf(_SC_PAGESIZE);
    int pid = (int)getpid();
    if (gpuprof__mem.statm_open && gpuprof__mem.statm_pid != pid) { close(gpuprof__mem.statm_fd); gpuprof__mem.statm_open = 0; }
    if (!gpuprof__mem.statm_open) {
        gpuprof__mem.statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
        gpuprof__mem.statm_open = gpuprof__mem.statm_fd >= 0;    /* else tried again next time */
        gpuprof__mem.statm_pid = pid;
    }
    if (gpuprof__mem.statm_open) {
        ssize_t n = lseek(gpuprof__mem.statm_fd, 0, SEEK_SET) == 0 ? read(gpuprof__mem.statm_fd, buf, sizeof buf - 1) : -1;
        if (n > 0) {
            buf[n] = 0;
            if (sscanf(buf, "%llu %llu", &size, &resident) == 2 && page > 0) { m->rss = resident * (unsigned long long)page; m->host_ok = 1; }
        }
    }
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        m->rss_peak = (uint64_t)ru.ru_maxrss * 1024u;
        if (m->rss_peak < m->rss) m->rss_peak = m->rss;
    }
}

#ifdef GPUPROF_CUDA
/* Device figures of the calling thread's current device: cudaMemGetInfo
   and the default pool's attributes. None of these synchronizes; they run
   in relaxed capture mode so that a capture elsewhere is not disturbed. */
static void gpuprof__mem_device(gpuprof__memfig *m, int with_pool) {
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    size_t fr = 0, tot = 0;
    int dev = 0, v = 0;
    cudaError_t e;
    if (!GPUPROF__LD(&gpuprof__gpu.available) || !GPUPROF__LD(&gpuprof__gpu.on)) return;
    if ((e = cudaThreadExchangeStreamCaptureMode(&mode)) != cudaSuccess) { gpuprof__gpu_fail(e, "cudaThreadExchangeStreamCaptureMode"); return; }
    if ((e = cudaGetDevice(&dev)) != cudaSuccess) { gpuprof__gpu_fail(e, "cudaGetDevice"); goto out; }
    if ((e = cudaMemGetInfo(&fr, &tot)) != cudaSuccess) { gpuprof__gpu_fail(e, "cudaMemGetInfo"); goto out; }
    m->dev_ok = 1;
    m->dev = dev;
    m->dev_total = tot;
    m->dev_used = tot >= fr ? tot - fr : 0;
    if (with_pool && dev >= 0 && dev < GPUPROF__MAX_DEV) {
        cudaMemPool_t pool;
        uint64_t a = 0, b = 0, c = 0, d = 0;   /* cuuint64_t */
        if (!GPUPROF__LD(&gpuprof__mem.pools[dev])) {
            e = cudaDeviceGetAttribute(&v, cudaDevAttrMemoryPoolsSupported, dev);
            if (e != cudaSuccess) gpuprof__cuda_clear(e);
            GPUPROF__ST(&gpuprof__mem.pools[dev], (signed char)(e == cudaSuccess && v ? 1 : -1));
        }
        if (GPUPROF__LD(&gpuprof__mem.pools[dev]) > 0) {
            if ((e = cudaDeviceGetDefaultMemPool(&pool, dev)) != cudaSuccess ||
                (e = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &a)) != cudaSuccess ||
                (e = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &b)) != cudaSuccess ||
                (e = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &c)) != cudaSuccess ||
                (e = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &d)) != cudaSuccess) {
                gpuprof__cuda_clear(e);
                GPUPROF__ST(&gpuprof__mem.pools[dev], (signed char)-1);   /* not asked again */
            } else {
                m->pool_ok = 1;
                m->pool_used = a;
                m->pool_used_high = b;
                m->pool_rsvd = c;
                m->pool_rsvd_high = d;
            }
        }
    }
out:
    cudaThreadExchangeStreamCaptureMode(&mode);
}
#else
static void gpuprof__mem_device(gpuprof__memfig *m, int with_pool) { (void)m; (void)with_pool; }
#endif

static int64_t gpuprof__sdiff(uint64_t a, uint64_t b) { return a >= b ? (int64_t)(a - b) : -(int64_t)(b - a); }

/* A GPUPROF_MEM snapshot labelled by name id. */
static void gpuprof__mem_snap_id(uint32_t id, unsigned session) {
    gpuprof__memfig m;
    gpuprof__memphase *ph;
    gpuprof__thread *t = gpuprof__mem_tracer();
    uint32_t i;
    uint64_t now;
    memset(&m, 0, sizeof m);
    gpuprof__mem_names(session);
    gpuprof__mem_device(&m, 1);
    pthread_mutex_lock(&gpuprof__mem_mu);
    if (!gpuprof__mem.on || gpuprof__mem.session != session) { pthread_mutex_unlock(&gpuprof__mem_mu); return; }
    gpuprof__mem_host(&m);
    m.tracked = gpuprof__mem.live;
    if (m.host_ok && m.rss > gpuprof__mem.rss_seen) gpuprof__mem.rss_seen = m.rss;
    if (m.rss_peak < gpuprof__mem.rss_seen) m.rss_peak = gpuprof__mem.rss_seen;
    for (i = 0; i < gpuprof__mem.nphase && gpuprof__mem.phase[i].name_id != id; i++) {}
    if (i == gpuprof__mem.nphase) {
        if (i == GPUPROF__MEM_LABELS) {
            gpuprof__warn(GPUPROF__W_MEM_CAP, "more than %d GPUPROF_MEM labels: \"%s\" and later ones are shown as the last row (use fewer labels)",
                          GPUPROF__MEM_LABELS - 1, gpuprof__registry.names[id].text);
            i = GPUPROF__MEM_LABELS - 1;
        } else {
            memset(&gpuprof__mem.phase[i], 0, sizeof gpuprof__mem.phase[i]);
            gpuprof__mem.phase[i].name_id = id;
            gpuprof__mem.phase[i].growth_cat = -1;
            gpuprof__mem.phase[i].growth = INT64_MIN;
            gpuprof__mem.nphase = i + 1;
        }
    }
    ph = &gpuprof__mem.phase[i];
    ph->count++;
    ph->step = GPUPROF__LD(&gpuprof__steps.step);
    if (gpuprof__mem.window_peak > ph->peak) ph->peak = gpuprof__mem.window_peak;
    ph->has_delta = gpuprof__mem.have_prev;
    if (gpuprof__mem.have_prev) {
        const gpuprof__memfig *p = &gpuprof__mem.prev;
        int64_t grow = gpuprof__sdiff(m.tracked, p->tracked), best = 0;
        int32_t cat = -1;
        int kind = 1;
        ph->d_tracked = grow;
        ph->d_dev = m.dev_ok && p->dev_ok && m.dev == p->dev ? gpuprof__sdiff(m.dev_used, p->dev_used) : 0;
        ph->d_pool_used = m.pool_ok && p->pool_ok ? gpuprof__sdiff(m.pool_used, p->pool_used) : 0;
        ph->d_pool_rsvd = m.pool_ok && p->pool_ok ? gpuprof__sdiff(m.pool_rsvd, p->pool_rsvd) : 0;
        ph->d_rss = m.host_ok && p->host_ok ? gpuprof__sdiff(m.rss, p->rss) : 0;
        for (i = 0; i < gpuprof__mem.ncat; i++) {
            int64_t d = gpuprof__sdiff(gpuprof__mem.cat[i].live, gpuprof__mem.prev_cat[i]);
            if (d > best) { best = d; cat = (int32_t)i; }
        }
        if (grow > ph->growth) {
            ph->growth = grow;
            ph->growth_step = ph->step;
            ph->growth_cat = cat;
            ph->growth_cat_bytes = best;
        }
        /* The reading follows tracked bytes when the program tags its
           allocations, else the device, else the host. */
        if (!gpuprof__mem.allocs) { kind = m.dev_ok && p->dev_ok ? 2 : 3; grow = kind == 2 ? ph->d_dev : ph->d_rss; cat = -1; best = 0; }
        if (grow > 0 && (kind < gpuprof__mem.growth_kind || gpuprof__mem.growth_kind == 0 ||
                         (kind == gpuprof__mem.growth_kind && grow > gpuprof__mem.growth))) {
            gpuprof__mem.growth = grow;
            gpuprof__mem.growth_kind = kind;
            gpuprof__mem.growth_label = ph->name_id;
            gpuprof__mem.growth_cat = cat;
            gpuprof__mem.growth_cat_bytes = best;
            gpuprof__mem.growth_step = ph->step;
        }
    }
    ph->last = m;
    if (gpuprof__mem.peak_pending) { gpuprof__mem.peak_label = ph->name_id; gpuprof__mem.peak_pending = 0; }
    gpuprof__mem.prev = m;
    for (i = 0; i < gpuprof__mem.ncat; i++) gpuprof__mem.prev_cat[i] = gpuprof__mem.cat[i].live;
    gpuprof__mem.have_prev = 1;
    gpuprof__mem.any_dev |= m.dev_ok;
    gpuprof__mem.any_pool |= m.pool_ok && (m.pool_rsvd_high || m.pool_used_high);
    gpuprof__mem.any_host |= m.host_ok;
    gpuprof__mem.window_peak = gpuprof__mem.live;
    gpuprof__mem.snapshots++;
    if (t) {
        now = gpuprof__ticks();
        gpuprof__trace_put(t, GPUPROF__EV_MARK, id, GPUPROF__EVF_MEM, now - t->base, 0);
        if (m.dev_ok) gpuprof__mem_counter(t, gpuprof__mem.id_dev, (double)m.dev_used, now);
        if (m.pool_ok && (m.pool_rsvd_high || m.pool_used_high)) {
            gpuprof__mem_counter(t, gpuprof__mem.id_pool_used, (double)m.pool_used, now);
            gpuprof__mem_counter(t, gpuprof__mem.id_pool_rsvd, (double)m.pool_rsvd, now);
        }
        if (m.host_ok) gpuprof__mem_counter(t, gpuprof__mem.id_rss, (double)m.rss, now);
    }
    pthread_mutex_unlock(&gpuprof__mem_mu);
}

void gpuprof__mem_snap(gpuprof_site *site) {
    unsigned session;
    if (!gpuprof__mem_usable()) return;
    session = GPUPROF__LD(&gpuprof__g.session);
    gpuprof__mem_snap_id(gpuprof__site_id(site, session), session);
}

void gpuprof_mem_snapshot(const char *label) {
    unsigned session;
    if (!gpuprof__mem_usable()) return;
    session = GPUPROF__LD(&gpuprof__g.session);
    gpuprof__mem_snap_id(gpuprof__intern(label), session);
}

/* Peaks start again from what is live now: the tracked ones, and the high-
   water marks of the current device's default pool (setting one to 0 resets
   it). The host's peak RSS is the process's and cannot be reset. */
void gpuprof_mem_reset_peaks(void) {
    uint32_t i;
    if (!gpuprof__mem_usable()) return;
    pthread_mutex_lock(&gpuprof__mem_mu);
    gpuprof__mem.peak = gpuprof__mem.window_peak = gpuprof__mem.live;
    gpuprof__mem.peak_pending = 1;
    gpuprof__mem.peak_step = GPUPROF__LD(&gpuprof__steps.step);
    for (i = 0; i < gpuprof__mem.ncat; i++) gpuprof__mem.cat[i].peak = gpuprof__mem.cat[i].at_peak = gpuprof__mem.cat[i].live;
    pthread_mutex_unlock(&gpuprof__mem_mu);
#ifdef GPUPROF_CUDA
    if (GPUPROF__LD(&gpuprof__gpu.available) && GPUPROF__LD(&gpuprof__gpu.on)) {
        cudaMemPool_t pool;
        uint64_t zero = 0;
        int dev = 0;
        cudaError_t e = cudaGetDevice(&dev);
        if (e == cudaSuccess && dev >= 0 && dev < GPUPROF__MAX_DEV && GPUPROF__LD(&gpuprof__mem.pools[dev]) >= 0) {
            if ((e = cudaDeviceGetDefaultMemPool(&pool, dev)) == cudaSuccess &&
                (e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero)) == cudaSuccess)
                e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero);
        }
        if (e != cudaSuccess) gpuprof__cuda_clear(e);
    }
#endif
}

/* Per-range memory (mem_ranges): the tracked bytes and, in CUDA builds with
   a device, the device's used bytes at a range's begin, read before its
   clock starts. */
static void gpuprof__mem_range_begin(gpuprof__frame *f) {
    gpuprof__memfig m;
    f->flags |= GPUPROF__F_MEM;
    f->mem0 = (int64_t)GPUPROF__LD(&gpuprof__mem.live);
    m.dev_ok = 0;
    gpuprof__mem_device(&m, 0);
    f->dev0 = m.dev_ok ? (int64_t)m.dev_used : -1;
}

static void gpuprof__mem_range_end(gpuprof__node *n, gpuprof__frame *f) {
    gpuprof__memfig m;
    GPUPROF__ST(&n->mem_calls, n->mem_calls + 1);
    GPUPROF__ST(&n->mem_delta, n->mem_delta + ((int64_t)GPUPROF__LD(&gpuprof__mem.live) - f->mem0));
    if (f->dev0 < 0) return;
    m.dev_ok = 0;
    gpuprof__mem_device(&m, 0);
    if (!m.dev_ok) return;
    GPUPROF__ST(&n->dev_calls, n->dev_calls + 1);
    GPUPROF__ST(&n->dev_delta, n->dev_delta + ((int64_t)m.dev_used - f->dev0));
}

/* Session start and end (under gpuprof__lock). At the start, the figures
   then are the baseline the first GPUPROF_MEM is compared with (its phase
   grew by what the program allocated since). */
static void gpuprof__mem_open(void) {
    gpuprof__memfig m;
    pthread_mutex_lock(&gpuprof__mem_mu);
    GPUPROF_FREE(gpuprof__mem.tab);
    if (gpuprof__mem.statm_open && gpuprof__mem.statm_pid == (int)getpid()) close(gpuprof__mem.statm_fd);
    memset(&gpuprof__mem, 0, sizeof gpuprof__mem);
    pthread_mutex_unlock(&gpuprof__mem_mu);
    memset(&m, 0, sizeof m);
    gpuprof__mem_device(&m, 1);
    pthread_mutex_lock(&gpuprof__mem_mu);
    gpuprof__mem_host(&m);
    gpuprof__mem.prev = m;
    gpuprof__mem.have_prev = 1;
    if (m.host_ok) gpuprof__mem.rss_seen = m.rss;
    gpuprof__mem.on = 1;
    gpuprof__mem.session = gpuprof__g.session;
    pthread_mutex_unlock(&gpuprof__mem_mu);
}
static void gpuprof__mem_close(void) {
    pthread_mutex_lock(&gpuprof__mem_mu);
    gpuprof__mem.on = 0;
    if (gpuprof__mem.statm_open && gpuprof__mem.statm_pid == (int)getpid()) close(gpuprof__mem.statm_fd);
    gpuprof__mem.statm_open = 0;
    GPUPROF_FREE(gpuprof__mem.tab);
    gpuprof__mem.tab = NULL;
    gpuprof__mem.cap = gpuprof__mem.used = 0;
    pthread_mutex_unlock(&gpuprof__mem_mu);
}
/* gpuprof_reset: the phases start again, the peaks from what is live. */
static void gpuprof__mem_clear(void) {
    uint32_t i;
    pthread_mutex_lock(&gpuprof__mem_mu);
    gpuprof__mem.nphase = 0;
    gpuprof__mem.snapshots = 0;
    gpuprof__mem.have_prev = gpuprof__mem.any_dev = gpuprof__mem.any_pool = gpuprof__mem.any_host = 0;
    gpuprof__mem.growth = 0;
    gpuprof__mem.growth_kind = 0;
    gpuprof__mem.peak = gpuprof__mem.window_peak = gpuprof__mem.live;
    gpuprof__mem.peak_pending = 1;
    gpuprof__mem.peak_label = 0;
    gpuprof__mem.peak_step = GPUPROF__LD(&gpuprof__steps.step);
    for (i = 0; i < gpuprof__mem.ncat; i++) gpuprof__mem.cat[i].peak = gpuprof__mem.cat[i].at_peak = gpuprof__mem.cat[i].live;
    pthread_mutex_unlock(&gpuprof__mem_mu);
}

/* ----------------------------------------------------------------------
   Ranges: begin and end, counters and marks. A range's end leaves {node,
   inclusive, self} in its thread's ring of records (gpuprof__rec_push:
   three stores and a release store of the head -- no lock, no call); the
   records are added to the nodes' statistics later, a ring at a time, a
   run of one node's records summed in registers (gpuprof__rec_add): by
   default by the recording thread itself when its ring is full
   (gpuprof__rec_room); with GPUPROF_COLLECTOR=1 by a collector thread,
   which takes that work off the recording thread where the ring's cache
   lines travel cheaply between cores (where they do not, the recording
   thread pays more than it saves: hence opt-in). Whoever reads the
   statistics first drains every ring (gpuprof__rec_drain_all: reports, the
   summary, GPUPROF_STEP's window, gpuprof_reset), so every figure holds
   every call that ended before it; nothing is dropped. One drainer per
   ring at a time (rec_busy): a node's statistics have one writer.
   ---------------------------------------------------------------------- */

/* Takes thread t's ring for draining; wait: until it is free, else only if
   it is free now. Returns 1 when taken. */
static int gpuprof__rec_hold(gpuprof__thread *t, int wait) {
    int free_ring = 0;
    while (!GPUPROF__CAS(&t->rec_busy, &free_ring, 1)) {
        gpuprof__timespec ts = { 0, 20000 };
        if (!wait) return 0;
        free_ring = 0;
        gpuprof__nanosleep(&ts, NULL);      /* the holder adds at most one ring: tens of microseconds */
    }
    return 1;
}

/* The collector leaves a recording thread's newest records for its next
   pass (unless the thread wrote none since the last): reading the cache
   lines the thread is still filling would bounce each of them between the
   two cores while it writes them. */
#define GPUPROF__REC_KEEP 64

/* Adds records [p, end), one stretch of a ring, to their nodes'
   statistics: a run of records of one node is added up in registers and
   stored once (one update after another through memory would make a loop
   of one range wait on each store). The
   result is that of gpuprof_stats_add for each duration in turn (sums of
   whole nanoseconds are exact in any order below 2^53). */
static void gpuprof__rec_add(const gpuprof__rec *p, const gpuprof__rec *end) {
    while (p < end) {
        gpuprof__node *n = p->node;
        gpuprof_stats *s = &n->stats;
        const gpuprof__rec *run = p;
        uint64_t sum = 0, self = 0, vmin = ~(uint64_t)0, vmax = 0;
        double shift = gpuprof__ldd(&s->shift), sum_d = 0, sum_d2 = 0;
        int32_t lo = GPUPROF__LD(&s->lo_key);
        if (GPUPROF__LD(&s->count)) {
            for (; p < end && p->node == n; p++) {
                uint64_t v = p->dt;
                double x = (double)(int64_t)v, d;
                uint32_t idx = (uint32_t)(gpuprof__key_ns(x) - lo), c;
                if (GPUPROF__UNLIKELY(idx >= GPUPROF_STATS_BUCKETS || v >> 53 || (c = GPUPROF__LD(&s->bucket[idx])) == 0xffffffffu)) break;
                GPUPROF__ST(&s->bucket[idx], c + 1);
                d = x - shift;
                sum += v;
                self += p->self;
                sum_d += d;
                sum_d2 += d * d;
                vmin = v < vmin ? v : vmin;
                vmax = v > vmax ? v : vmax;
            }
        }
        if (p != run) {
            if ((double)(int64_t)vmin < gpuprof__ldd(&s->min)) gpuprof__std(&s->min, (double)(int64_t)vmin);
            if ((double)(int64_t)vmax > gpuprof__ldd(&s->max)) gpuprof__std(&s->max, (double)(int64_t)vmax);
            gpuprof__std(&s->sum, gpuprof__ldd(&s->sum) + (double)(int64_t)sum);
            gpuprof__std(&s->sum_d, gpuprof__ldd(&s->sum_d) + sum_d);
            gpuprof__std(&s->sum_d2, gpuprof__ldd(&s->sum_d2) + sum_d2);
            GPUPROF__ST(&s->count, GPUPROF__LD(&s->count) + (uint64_t)(p - run));
            GPUPROF__ST(&n->self_ns, GPUPROF__LD(&n->self_ns) + self);
        }
        if (p < end && p->node == n) {      /* a node's first sample, or one the histogram must make room for */
            gpuprof_stats_add(s, (double)p->dt);
            GPUPROF__ST(&n->self_ns, GPUPROF__LD(&n->self_ns) + p->self);
            p++;
        }
    }
}

/* Adds the records of thread t written so far (all but the newest keep) to
   their nodes. wait: wait for another drainer of the ring to finish rather
   than give up. */
static GPUPROF__NOINLINE void gpuprof__rec_drain(gpuprof__thread *t, int wait, uint32_t keep) {
    uint64_t head, tail;
    if (GPUPROF__LDA(&t->rec_head) - GPUPROF__LD(&t->rec_tail) <= keep) return;   /* nothing to add: the ring is not taken */
    if (!gpuprof__rec_hold(t, wait)) return;
    head = GPUPROF__LDA(&t->rec_head);
    if (keep) {
        if (head - t->rec_tail <= keep) { GPUPROF__STR(&t->rec_busy, 0); return; }
        head -= keep;
    }
    tail = t->rec_tail;
    if ((tail & (GPUPROF__RECS - 1)) + (head - tail) > GPUPROF__RECS) {     /* across the ring's end: two stretches */
        gpuprof__rec_add(&t->rec[tail & (GPUPROF__RECS - 1)], t->rec + GPUPROF__RECS);
        tail += GPUPROF__RECS - (tail & (GPUPROF__RECS - 1));
    }
    gpuprof__rec_add(&t->rec[tail & (GPUPROF__RECS - 1)], &t->rec[tail & (GPUPROF__RECS - 1)] + (head - tail));
    GPUPROF__STR(&t->rec_tail, head);
    GPUPROF__STR(&t->rec_busy, 0);
}

/* Under gpuprof__lock: every thread's records into the statistics. */
static void gpuprof__rec_drain_all(void) {
    gpuprof__thread *t;
    for (t = gpuprof__threads.threads; t; t = t->next) gpuprof__rec_drain(t, 1, 0);
}

/* The recording thread reached the mark it had set in its ring (rec_room).
   Without a collector the mark is the ring's end: the thread adds its
   records. With one, the mark is first half a ring past the collector's
   position as the thread last saw it: if the collector has not moved (it is
   asleep or behind), it is woken -- a condition variable's signal, at most
   once per half ring and no system call while it is awake -- and the mark
   moves to the ring's end. A full ring: the thread adds its records now. */
static GPUPROF__NOINLINE void gpuprof__rec_room(gpuprof__thread *t) {
    uint64_t h = t->rec_head;
    for (;;) {
        uint64_t tail = GPUPROF__LDA(&t->rec_tail);
        int collector = GPUPROF__LD(&gpuprof__bg.collector_running);
        if (collector && h - tail < GPUPROF__RECS / 2) { t->rec_room = tail + GPUPROF__RECS / 2; return; }
        if (h - tail < GPUPROF__RECS) {
            if (collector) pthread_cond_signal(&gpuprof__col_cond);
            t->rec_room = tail + GPUPROF__RECS;
            return;
        }
        gpuprof__rec_drain(t, 1, 0);
    }
}

GPUPROF__INLINE void gpuprof__rec_push(gpuprof__thread *t, gpuprof__node *n, uint64_t dt, uint64_t self) {
    uint64_t h = t->rec_head;
    gpuprof__rec *r;
    if (GPUPROF__UNLIKELY(h == t->rec_room)) gpuprof__rec_room(t);
    r = &t->rec[h & (GPUPROF__RECS - 1)];
    r->node = n;
    r->dt = dt;
    r->self = self;
    GPUPROF__STR(&t->rec_head, h + 1);     /* publishes the record to the drainer */
}

/* The collector thread: drains the rings, then sleeps until the fastest
   recording thread would have filled a quarter of its ring at the rate it
   had (20 us to 4 ms; longer and longer while nothing comes), or until a
   recording thread finds half its ring waiting and wakes it (a timed sleep
   of 20 us may last a millisecond: an idle virtual CPU wakes late). It
   never waits on the CPU. It takes no lock but each ring's rec_busy, so
   nothing waits for its pass (a GPUPROF_STEP, a thread's first range, a
   report): a session's list of thread states only grows at its head
   (release-published), and no state of it is freed before the shutdown has
   stopped this thread. */
static void *gpuprof__collector_main(void *arg) {
    uint64_t last = gpuprof__mono_ns(), sleep_ns = 1000000;
    (void)arg;
    gpuprof__own_thread();
    pthread_mutex_lock(&gpuprof__col_mu);
    while (!gpuprof__bg.collector_stop) {
        uint64_t most = 0, now;
        gpuprof__thread *t;
        pthread_mutex_unlock(&gpuprof__col_mu);
        for (t = (gpuprof__thread *)GPUPROF__LDA(&gpuprof__threads.threads); t; t = t->next) {
            uint64_t h = GPUPROF__LDA(&t->rec_head);
            if (h - t->rec_seen > most) most = h - t->rec_seen;
            /* a thread that wrote nothing since the last pass: all of it */
            gpuprof__rec_drain(t, 0, h == t->rec_seen ? 0 : GPUPROF__REC_KEEP);
            t->rec_seen = h;
        }
        now = gpuprof__mono_ns();
        sleep_ns = most ? (now - last) * (GPUPROF__RECS / 4) / most : 2 * sleep_ns;
        if (sleep_ns < 20000) sleep_ns = 20000;
        if (sleep_ns > 4000000) sleep_ns = 4000000;
        last = now;
        pthread_mutex_lock(&gpuprof__col_mu);
        if (!gpuprof__bg.collector_stop) gpuprof__cond_wait_ns(&gpuprof__col_cond, &gpuprof__col_mu, sleep_ns);
    }
    pthread_mutex_unlock(&gpuprof__col_mu);
    return NULL;
}

/* Under gpuprof__lock, at a session's start. Without the thread the
   recording threads add their own records when their rings fill. */
static void gpuprof__collector_start(void) {
    gpuprof__bg.collector_stop = 0;
    GPUPROF__ST(&gpuprof__bg.collector_running, gpuprof__spawn(&gpuprof__bg.collector, gpuprof__collector_main) == 0);
    if (!gpuprof__bg.collector_running)
        gpuprof__warn(GPUPROF__W_IO, "cannot start the collector thread (GPUPROF_COLLECTOR=1); each thread adds its own ranges to the statistics, as by default");
}

/* Not under gpuprof__lock (the thread may be waiting for nothing else). */
static void gpuprof__collector_stop(void) {
    if (!gpuprof__bg.collector_running) return;
    pthread_mutex_lock(&gpuprof__col_mu);
    GPUPROF__ST(&gpuprof__bg.collector_stop, 1);
    pthread_cond_signal(&gpuprof__col_cond);
    pthread_mutex_unlock(&gpuprof__col_mu);
    pthread_join(gpuprof__bg.collector, NULL);
    GPUPROF__ST(&gpuprof__bg.collector_running, 0);
}

/* Warm-up and schedule decisions, only taken while they can exclude
   something. Returns 1 when the call is left out of the statistics, 2 when
   it went to `pre`. Without any GPUPROF_STEP yet, the warm-up counts calls
   per range; the calls after those go to `pre`, which the report counts as
   warm-up if the program turns out to call GPUPROF_STEP (the whole first
   step was warm-up) and as ordinary calls if it never does. */
/* Warm-up and schedule: is this call left out of the statistics? A call is
   judged by the step in which its outermost enclosing range began (t0_outer),
   so a tree whose outer range spans a step boundary (a "step" range around
   GPUPROF_STEP) is counted or left out whole: parents and children agree. */
static GPUPROF__NOINLINE int gpuprof__exclude(gpuprof__node *n, double value, uint64_t self, uint64_t t0_outer) {
    int phase = GPUPROF__LD(&gpuprof__g.phase);
    if (t0_outer < GPUPROF__LD(&gpuprof__g.phase_since)) phase = GPUPROF__LD(&gpuprof__g.prev_phase);
    if (phase == GPUPROF__PHASE_EXCLUDE) {
        GPUPROF__ST(&n->excluded, GPUPROF__LD(&n->excluded) + 1);
        return 1;
    }
    if (gpuprof__g.cfg.warmup > 0 && !GPUPROF__LD(&gpuprof__steps.seen)) {
        if (GPUPROF__LD(&n->excluded) < (uint64_t)gpuprof__g.cfg.warmup) {
            GPUPROF__ST(&n->excluded, GPUPROF__LD(&n->excluded) + 1);
            return 1;
        }
        if (!n->pre) {
            gpuprof_stats *p = (gpuprof_stats *)gpuprof__alloc(sizeof *p);
            if (!p) return 1;
            gpuprof_stats_init(p);
            GPUPROF__STR(&n->pre, p);
        }
        gpuprof_stats_add(n->pre, value);
        GPUPROF__ST(&n->pre_self_ns, GPUPROF__LD(&n->pre_self_ns) + self);
        return 2;
    }
    return 0;
}

/* The general case of opening a range: first use (session, thread state,
   name id), a new call path, too deep, paused, work annotations. */
static GPUPROF__NOINLINE int gpuprof__begin(gpuprof_site *site, uint32_t id, unsigned id_session, int flags, double flops, double bytes, void *stream, int s0) {
    gpuprof__thread *t;
    gpuprof__node *parent, *n;
    gpuprof__frame *f;
    uint32_t d;
    if (!(t = gpuprof__self())) return 0;
    if (site) {
        id = gpuprof__site_id(site, t->session);
        id_session = GPUPROF__LD(&gpuprof__g.session);
    }
    /* A name id is an index into its session's table: if another thread
       shut the session down and started a new one during this call, the id
       and this thread's state may be of different sessions (an event would
       be named by an id the trace's table does not have; fuzz_api's corpus
       holds the case). The range is not recorded, like one begun after the
       shutdown. */
    if (GPUPROF__UNLIKELY(t->session != id_session)) return 0;
    d = t->depth;
    if (GPUPROF__UNLIKELY(d >= GPUPROF_MAX_DEPTH)) {
        gpuprof__warn(GPUPROF__W_TOO_DEEP, "ranges nested deeper than %d are counted but not timed (raise GPUPROF_MAX_DEPTH)", GPUPROF_MAX_DEPTH);
        GPUPROF__ST(&t->depth, d + 1);
        return (int)d + 1;
    }
    parent = d ? t->stack[d - 1].node : &t->root;
    n = t->by_name[id];
    if (GPUPROF__UNLIKELY(!n || n->parent != parent)) n = gpuprof__child(t, parent, id);
    f = &t->stack[d];
    GPUPROF__ST(&f->node, n);
    f->child_ns = 0;
    f->flags = flags;
    f->flops = flops;
    f->bytes = bytes;
    GPUPROF__ST(&t->depth, d + 1);
    if (GPUPROF__UNLIKELY(GPUPROF__LD(&gpuprof__g.mem_ranges))) gpuprof__mem_range_begin(f);
    gpuprof__gpu_begin(t, f, stream, site ? site->stream0 : s0);
    GPUPROF__NVTX_PUSH(f, id);
    GPUPROF__KC_PUSH(t, f, d);
    GPUPROF__ST(&f->t0, gpuprof__ticks());
    return (int)d + 1;
}

#if GPUPROF__X86 && !defined(GPUPROF_CLOCK_FN)
/* gpuprof__begin_fast's last step without the TSC (GPUPROF_CLOCK=monotonic, no invariant TSC). */
static GPUPROF__NOINLINE int gpuprof__begin_stamp(gpuprof__frame *f, uint32_t d) {
    GPUPROF__ST(&f->t0, gpuprof__ticks());
    return (int)d + 1;
}
#endif

/* The common case: recording, the site's id from this session, the call
   path seen before on this thread. Anything else goes to gpuprof__begin as a
   tail call, so this stays a leaf function with nothing to save. */
GPUPROF__INLINE int gpuprof__begin_fast(gpuprof_site *site, int flags) {
    gpuprof__thread *t = gpuprof__tls;
    uint64_t v = GPUPROF__LDA(&site->id);
    unsigned live = GPUPROF__LD(&gpuprof__g.live);
    gpuprof__node *n;
    gpuprof__frame *f;
    uint32_t d;
    if (GPUPROF__UNLIKELY(!live) && GPUPROF__LD(&gpuprof__paused)) return 0;   /* paused */
    if (GPUPROF__UNLIKELY(!t || t->session != live || (uint32_t)(v >> 32) != t->session))
        return gpuprof__begin(site, 0, 0, flags, 0, 0, NULL, 1);
    d = t->depth;
    n = t->by_name[(uint32_t)v];
    if (GPUPROF__UNLIKELY(d >= GPUPROF_MAX_DEPTH || !n || n->parent != (d ? t->stack[d - 1].node : &t->root) ||
                          GPUPROF__LD(&gpuprof__g.mem_ranges)))
        return gpuprof__begin(site, 0, 0, flags, 0, 0, NULL, 1);
    f = &t->stack[d];
    GPUPROF__ST(&f->node, n);   /* relaxed atomic stores (plain ones): gpuprof__dev_phase_now reads them */
    f->child_ns = 0;
    f->flags = flags;
    GPUPROF__ST(&t->depth, d + 1);
    gpuprof__gpu_begin(t, f, NULL, site->stream0);
    GPUPROF__NVTX_PUSH(f, (uint32_t)v);
    GPUPROF__KC_PUSH(t, f, d);
#if GPUPROF__X86 && !defined(GPUPROF_CLOCK_FN)
    /* the other clock as a tail call: no call here, so nothing to save */
    if (GPUPROF__UNLIKELY(!gpuprof__clock.use_tsc)) return gpuprof__begin_stamp(f, d);
    GPUPROF__ST(&f->t0, __builtin_ia32_rdtsc());
#else
    GPUPROF__ST(&f->t0, gpuprof__ticks());
#endif
    return (int)d + 1;
}

int gpuprof__range_begin(gpuprof_site *site) { return gpuprof__begin_fast(site, GPUPROF__F_SCOPED); }
int gpuprof__range_begin_explicit(gpuprof_site *site) { return gpuprof__begin_fast(site, GPUPROF__F_EXPLICIT); }
int gpuprof__range_begin_work(gpuprof_site *site, double flops, double bytes) {
    return gpuprof__begin(site, 0, 0, GPUPROF__F_SCOPED | GPUPROF__F_WORK, flops, bytes, NULL, 1);
}
int gpuprof__range_begin_stream(gpuprof_site *site, void *stream, int scoped) {
    return gpuprof__begin(site, 0, 0, scoped ? GPUPROF__F_SCOPED : GPUPROF__F_EXPLICIT, 0, 0, stream, 1);
}

/* Run-time names are hashed and looked up in a small per-thread cache
   before the shared registry, so a repeated name takes no lock. */
int gpuprof__range_begin_dyn(const char *name, int stream0) {
    gpuprof__thread *t;
    uint32_t h, slot, id;
    size_t n;
    if (!(t = gpuprof__self())) return 0;
    if (!name || !*name) return gpuprof__begin(NULL, gpuprof__intern(name), t->session, GPUPROF__F_SCOPED, 0, 0, NULL, stream0);
    n = strlen(name);
    if (n > GPUPROF_NAME_MAX) return gpuprof__begin(NULL, gpuprof__intern(name), t->session, GPUPROF__F_SCOPED, 0, 0, NULL, stream0);
    h = gpuprof__hash(name, n);
    slot = h % GPUPROF__DYN_CACHE;
    id = t->dyn[slot].id;
    /* the cached id is of this thread state's session: compare in its table
       (another thread may have started a new session meanwhile) */
    if (t->dyn[slot].hash != h || !id || strcmp(t->names[id].text, name) != 0) {
        id = gpuprof__intern(name);
        if (t->session != GPUPROF__LD(&gpuprof__g.session)) return 0;   /* an id of the new session: not for this state */
        if (!gpuprof__id_transient(id)) {
            t->dyn[slot].hash = h;
            t->dyn[slot].id = id;
        }
    }
    return gpuprof__begin(NULL, id, t->session, GPUPROF__F_SCOPED, 0, 0, NULL, stream0);
}

/* The trace event of a range of depth d (1-based) on thread t, begun at t0
   and ended at t1 (ticks): from gpuprof__finish, and from gpuprof__range_end
   as a tail call when the block is full or missing or the range began within
   a nanosecond's ticks of its parent. */
static GPUPROF__NOINLINE void gpuprof__range_event(gpuprof__thread *t, uint32_t d, uint32_t name_id, int evflags, uint64_t t0, uint64_t t1) {
    /* A child that starts in the same nanosecond as its parent would be
       read as the parent's sibling: the writers start it k ns later, k the
       ancestors begun in that nanosecond (a grandchild 2 ns, so that it
       starts after its parent, moved 1 ns), no more than it lasts, its end
       rounded as the writers do; k in the flags above the bits. The tick
       difference rules that out cheaply nearly always. */
    if (GPUPROF__UNLIKELY(d > 1 && t0 - t->stack[d - 2].t0 <= gpuprof__clock.same_ns_ticks)) {
        uint64_t s0 = gpuprof__ticks_to_ns(t0 - t->base), len = gpuprof__ticks_to_ns(t1 - t->base) - s0, k = 0;
        while (k + 1 < d && k < 255 && gpuprof__ticks_to_ns(t->stack[d - 2 - k].t0 - t->base) == s0) k++;
        if (k > len) k = len;
        if (k) evflags |= GPUPROF__EVF_NUDGE | (int)(k << 8);
    }
    gpuprof__trace_put(t, GPUPROF__EV_RANGE, name_id, evflags, t0 - t->base, t1 - t0);
}

/* Closes frame d-1 of t at time t1. */
GPUPROF__INLINE void gpuprof__finish(gpuprof__thread *t, uint32_t d, uint64_t t1) {
    gpuprof__frame *f = &t->stack[d - 1];
    gpuprof__node *n = f->node;
    uint64_t dt = gpuprof__ticks_to_ns(t1 - f->t0), self = dt - f->child_ns;
    int evflags = 0, decision = 0, flow;
    GPUPROF__KC_POP(f);
    GPUPROF__NVTX_POP(f);
    GPUPROF__ST(&t->depth, d - 1);
    if (d > 1) t->stack[d - 2].child_ns += dt;
    if (GPUPROF__UNLIKELY(GPUPROF__LD(&gpuprof__g.excluding))) decision = gpuprof__exclude(n, (double)dt, self, t->stack[0].t0);
    gpuprof__gpu_end(t, f, d, decision, t1);        /* the GPU part follows the same decision */
    /* a range with a GPU part (events, or its kernels' span) starts a flow in a Perfetto trace: its GPU range ends it */
    flow = GPUPROF__GPU_PART(f) || GPUPROF__KC_SPAN(f) ? GPUPROF__EVF_GPU_PART : 0;
    GPUPROF__KC_END(f, t1, decision);
    if (decision) evflags = GPUPROF__EVF_WARMUP;
    else {
        gpuprof__rec_push(t, n, dt, self);
        if (GPUPROF__UNLIKELY(f->flags & (GPUPROF__F_WORK | GPUPROF__F_MEM))) {
            if (f->flags & GPUPROF__F_WORK) {
                gpuprof__std(&n->flops, gpuprof__ldd(&n->flops) + f->flops);
                gpuprof__std(&n->bytes, gpuprof__ldd(&n->bytes) + f->bytes);
                /* the work rides before the range event, for its args (counted calls only: off the common path) */
                if (GPUPROF__LD(&gpuprof__trace.on))
                    gpuprof__trace_work(t, n->name_id, f->flops, f->bytes, GPUPROF__GPU_PART(f) ? GPUPROF__EVF_GPU_PART : 0);
            }
            if (f->flags & GPUPROF__F_MEM) gpuprof__mem_range_end(n, f);
        }
    }
    if (GPUPROF__LD(&gpuprof__trace.on)) gpuprof__range_event(t, d, n->name_id, evflags | flow, f->t0, t1);
}

/* The name of frame d (1-based) for a message. */
static const char *gpuprof__frame_name(gpuprof__thread *t, uint32_t d) {
    if (d == 0 || d > GPUPROF_MAX_DEPTH) return "(a range nested too deep to be timed)";
    return gpuprof__registry.names ? gpuprof__registry.names[t->stack[d - 1].node->name_id].text : "?";
}

static GPUPROF__NOINLINE void gpuprof__end_slow(gpuprof__thread *t, int token, uint64_t t1) {
    uint32_t d = t ? t->depth : 0;
    if (d > GPUPROF_MAX_DEPTH && (token == 0 || (uint32_t)token == d)) { GPUPROF__ST(&t->depth, d - 1); return; }   /* untimed deep frame */
    if (!t || d == 0) {
        if (token == 0 && GPUPROF__LD(&gpuprof__g.state) == GPUPROF__RUNNING && GPUPROF__LD(&gpuprof__g.live))
            gpuprof__warn(GPUPROF__W_END_WITHOUT_BEGIN, "GPUPROF_END() with no open range is ignored (check that each GPUPROF_BEGIN has one END)");
        return;
    }
    if (token == 0) {
        /* The innermost open range is a scoped one: it ends with its block. */
        gpuprof__warn(GPUPROF__W_MISMATCHED, "GPUPROF_END() would close the scoped range \"%s\"; ignored (END closes only GPUPROF_BEGIN ranges)",
                      gpuprof__frame_name(t, d));
        return;
    }
    if ((uint32_t)token > d) return;    /* already closed by a stray END: warned there */
    /* A scoped range ends while ranges opened inside it with BEGIN are still
       open: close those first, at the same time. Frames deeper than
       GPUPROF_MAX_DEPTH were never timed and are just dropped. */
    gpuprof__warn(GPUPROF__W_MISMATCHED, "the scoped range \"%s\" ended while \"%s\" (opened inside it with GPUPROF_BEGIN) was still open; both are closed here",
                  gpuprof__frame_name(t, (uint32_t)token), gpuprof__frame_name(t, d));
    while (t->depth >= (uint32_t)token) {
        if (t->depth > GPUPROF_MAX_DEPTH) GPUPROF__ST(&t->depth, t->depth - 1);
        else gpuprof__finish(t, t->depth, t1);
    }
}

static GPUPROF__NOINLINE void gpuprof__finish_full(gpuprof__thread *t, uint32_t d, uint64_t t1) { gpuprof__finish(t, d, t1); }

/* Closing a range: the common case -- a range with no GPU part, NVTX, work
   or memory to account, nothing to exclude, room in the thread's ring of
   records -- is done here with no call; anything else goes to
   gpuprof__finish as a tail call, decided before anything is written. The
   trace event comes after the record, with its own rare cases (no room in
   the block, a drawing nudge) as a tail call to gpuprof__range_event: checked
   up front with the rest, they would keep more values alive at once (gcc 12
   then saves five registers per call instead of two). The record for the
   statistics (gpuprof__rec_push) and the event store (gpuprof__trace_put)
   are written out again here on purpose: as shared inline helpers, gcc 12
   saves six registers per call and spends 11 more instructions per range. */
#if GPUPROF__X86 && !defined(GPUPROF_CLOCK_FN)
/* gpuprof__range_end without the TSC (GPUPROF_CLOCK=monotonic, no invariant TSC). */
static GPUPROF__NOINLINE void gpuprof__end_any_clock(int token) {
    uint64_t t1 = gpuprof__ticks();
    gpuprof__thread *t = gpuprof__tls;
    uint32_t d;
    if (t && (d = t->depth) != 0 && d <= GPUPROF_MAX_DEPTH &&
        (token ? (uint32_t)token == d : (t->stack[d - 1].flags & GPUPROF__F_EXPLICIT) != 0)) gpuprof__finish(t, d, t1);
    else gpuprof__end_slow(t, token, t1);
}
#endif

void gpuprof__range_end(int token) {
    uint64_t t1;
    gpuprof__thread *t = gpuprof__tls;
    uint32_t d;
#if GPUPROF__X86 && !defined(GPUPROF_CLOCK_FN)
    if (GPUPROF__UNLIKELY(!gpuprof__clock.use_tsc)) { gpuprof__end_any_clock(token); return; }   /* no call on the TSC path */
    t1 = __builtin_ia32_rdtsc();
#else
    t1 = gpuprof__ticks();
#endif
    if (GPUPROF__LIKELY(t && (d = t->depth) != 0 && d <= GPUPROF_MAX_DEPTH &&
                        (token ? (uint32_t)token == d : (t->stack[d - 1].flags & GPUPROF__F_EXPLICIT) != 0))) {
        gpuprof__frame *f = &t->stack[d - 1];
        uint64_t dt, h = t->rec_head, t0;
        gpuprof__node *n;
        gpuprof__rec *r;
        if (GPUPROF__UNLIKELY((f->flags & (GPUPROF__F_WORK | GPUPROF__F_MEM | GPUPROF__F_NVTX | GPUPROF__F_KERN)) || !GPUPROF__GPU_QUIET(t, f) ||
                              GPUPROF__LD(&gpuprof__g.excluding) || h == t->rec_room)) {
            gpuprof__finish_full(t, d, t1);
            return;
        }
        n = f->node;
        t0 = f->t0;
        dt = gpuprof__ticks_to_ns(t1 - t0);
        GPUPROF__ST(&t->depth, d - 1);
        if (d > 1) t->stack[d - 2].child_ns += dt;
        r = &t->rec[h & (GPUPROF__RECS - 1)];       /* the statistics, added later (gpuprof__rec_push written out) */
        r->node = n;
        r->dt = dt;
        r->self = dt - f->child_ns;
        GPUPROF__STR(&t->rec_head, h + 1);
        if (GPUPROF__LD(&gpuprof__trace.on)) {
            gpuprof__block *b = t->block;
            gpuprof__event *e;
            if (GPUPROF__UNLIKELY(!b || b->count == GPUPROF__BLOCK_EVENTS || (d > 1 && t0 - t->stack[d - 2].t0 <= gpuprof__clock.same_ns_ticks))) {
                gpuprof__range_event(t, d, n->name_id, 0, t0, t1);
                return;
            }
            e = &b->ev[b->count];
            e->ts = t0 - t->base;
            e->u.dur_ticks = t1 - t0;
            e->name_id = n->name_id;
            e->type = (uint16_t)GPUPROF__EV_RANGE;
            e->flags = 0;
            GPUPROF__STR(&b->count, b->count + 1);   /* published: a formatter may read it from another thread */
        }
        return;
    }
    gpuprof__end_slow(t, token, t1);
}

void gpuprof__counter(gpuprof_site *site, double value) {
    gpuprof__thread *t;
    gpuprof__node *n;
    uint32_t id;
    if (!(t = gpuprof__self())) return;
    id = gpuprof__site_id(site, t->session);
    n = t->counters[id];
    if (!n) {
        n = (gpuprof__node *)gpuprof__alloc(sizeof *n);
        if (!n) return;
        gpuprof__node_init(n, NULL, id, 0);
        GPUPROF__STR(&t->counters[id], n);
    }
    if (!gpuprof__finite(value)) {
        gpuprof__warn(GPUPROF__W_BAD_VALUE, "counter \"%s\" was given %s; the sample is rejected and counted (check the value before GPUPROF_COUNTER)",
                      gpuprof__registry.names[id].text, gpuprof__isnan(value) ? "NaN" : "an infinity");
        gpuprof_stats_add(&n->stats, value);        /* counted as rejected */
        return;
    }
    if (!GPUPROF__LD(&gpuprof__g.excluding) || !gpuprof__exclude(n, value, 0, UINT64_MAX)) {
        gpuprof_stats_add(&n->stats, value);
        gpuprof__vals_add(n, value);
    }
    gpuprof__std(&n->last, value);
    if (GPUPROF__LD(&gpuprof__trace.on)) {
        uint64_t u;
        memcpy(&u, &value, sizeof u);
        gpuprof__trace_put(t, GPUPROF__EV_COUNTER, id, 0, gpuprof__ticks() - t->base, u);
    }
}

void gpuprof__mark(gpuprof_site *site) {
    gpuprof__thread *t;
    uint32_t id;
    if (!(t = gpuprof__self())) return;
    id = gpuprof__site_id(site, t->session);
    GPUPROF__ST(&t->marks, GPUPROF__LD(&t->marks) + 1);
    if (GPUPROF__LD(&gpuprof__trace.on))
        gpuprof__trace_put(t, GPUPROF__EV_MARK, id, 0, gpuprof__ticks() - t->base, 0);
}

void gpuprof_set_stream(void *stream) {
    gpuprof__thread *t = gpuprof__enter_slow();
    if (t) t->stream = stream;
}

/* ----------------------------------------------------------------------
   Steps, warm-up and the schedule
   ---------------------------------------------------------------------- */
/* Under gpuprof__lock: derive what the hot path reads from the state. */
static void gpuprof__apply_phase(void) {
    int phase = gpuprof__phase_of(gpuprof__steps.step), old = GPUPROF__LD(&gpuprof__g.phase);
    int recording = gpuprof__g.state == GPUPROF__RUNNING && gpuprof__g.user_enabled && phase != GPUPROF__PHASE_OFF &&
                    !GPUPROF__LD(&gpuprof__g.forked_child);
    if (phase != old) {
        GPUPROF__ST(&gpuprof__g.prev_phase, old);
        GPUPROF__ST(&gpuprof__g.phase_since, gpuprof__ticks());
    } else GPUPROF__ST(&gpuprof__g.prev_phase, phase);
    GPUPROF__ST(&gpuprof__g.phase, phase);
    /* The step after a warm-up step is judged on the slow path too: a range
       begun in the warm-up may end in it. */
    GPUPROF__ST(&gpuprof__g.excluding, phase == GPUPROF__PHASE_EXCLUDE || old == GPUPROF__PHASE_EXCLUDE ||
                (gpuprof__g.cfg.warmup > 0 && !gpuprof__steps.seen));
    GPUPROF__STR(&gpuprof__g.live, recording ? gpuprof__g.session : 0u);   /* release: see gpuprof__enter_slow */
    GPUPROF__ST(&gpuprof__paused, gpuprof__g.state == GPUPROF__RUNNING && !recording);
}

/* The step figures beyond the step time: the long steps seen, the kinds
   of step and the stepping thread's CPU time (a new session, gpuprof_reset). */
static void gpuprof__step_figures_clear(void) {
    uint32_t i;
    for (i = 0; i < gpuprof__steps.noutl; i++) GPUPROF_FREE(gpuprof__steps.outl[i].ran);
    for (i = 0; i < gpuprof__steps.nkinds; i++) { GPUPROF_FREE(gpuprof__steps.kinds[i].set); GPUPROF_FREE(gpuprof__steps.kinds[i].ns); }
    GPUPROF_FREE(gpuprof__steps.ran);
    gpuprof__steps.ran = NULL;
    GPUPROF_FREE(gpuprof__steps.series);
    gpuprof__steps.series = NULL;
    gpuprof__steps.npoints = gpuprof__steps.nph = 0;
    gpuprof__steps.series_thread = NULL;
    gpuprof__steps.nran_max = 0;
    gpuprof__steps.noutl = gpuprof__steps.nkinds = 0;
    gpuprof__steps.outl_full = 0;
    gpuprof__steps.cpu = gpuprof__steps.wall = 0;
    gpuprof__steps.runq = gpuprof__steps.vol = gpuprof__steps.invol = 0;
    gpuprof__steps.rq0 = gpuprof__steps.vol0 = gpuprof__steps.invol0 = 0;
    if (gpuprof__steps.runq_fd1 > 0) close(gpuprof__steps.runq_fd1 - 1);
    gpuprof__steps.runq_fd1 = gpuprof__steps.runq_tid = 0;
}

#if !defined(GPUPROF_CLOCK_FN)
/* Why the stepping thread was off the CPU (at each GPUPROF_STEP, on it):
   its time runnable but waiting for a CPU while another thread or process
   had it -- preemption -- (run_delay, /proc/thread-self/schedstat, ns), and
   its voluntary (it blocked: I/O, sleep, a lock, a blocking sync) and
   involuntary (preempted) context switches (getrusage RUSAGE_THREAD).
   Returns bit 1 when the time was read, bit 2 the switches. The file stays
   open while the same thread steps: one read a step. */
static int gpuprof__thread_waits(int tid, uint64_t *runq, uint64_t *vol, uint64_t *invol) {
    int got = 0;
#if defined(__linux__)
    char buf[96];
    long n;
    struct rusage ru;
    if (gpuprof__steps.runq_tid != tid) {
        if (gpuprof__steps.runq_fd1 > 0) close(gpuprof__steps.runq_fd1 - 1);
        gpuprof__steps.runq_fd1 = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC) + 1;
        gpuprof__steps.runq_tid = tid;
    }
    if (gpuprof__steps.runq_fd1 > 0 && lseek(gpuprof__steps.runq_fd1 - 1, 0, SEEK_SET) == 0 &&
        (n = (long)read(gpuprof__steps.runq_fd1 - 1, buf, sizeof buf - 1)) > 0) {
        unsigned long long cpu, delay;
        buf[n] = 0;
        if (sscanf(buf, "%llu %llu", &cpu, &delay) == 2) { *runq = delay; got |= 1; }
    }
    if (getrusage(1 /* RUSAGE_THREAD: Linux's, named only with _GNU_SOURCE */, &ru) == 0) {
        *vol = (uint64_t)ru.ru_nvcsw;
        *invol = (uint64_t)ru.ru_nivcsw;
        got |= 2;
    }
#else
    (void)tid; (void)runq; (void)vol; (void)invol;
#endif
    return got;
}
#endif

/* The node's time and calls in the step that ends now: kept in the scratch
   list when it ran in the step (a call of it ended there). */
static void gpuprof__step_node(gpuprof__node *n, int first, uint32_t *nran) {
    double s = gpuprof__ldd(&n->stats.sum), d = s - gpuprof__ldd(&n->win_last);
    uint64_t c = GPUPROF__LD(&n->stats.count), ran = c - n->win_count;
    if (first) gpuprof__std(&n->win_first, s);
    gpuprof__std(&n->win_last, s);
    n->win_count = c;
    if (first || !ran || n->index >= UINT32_MAX - 2) return;   /* the overflow node is no range of the step */
    if (*nran == gpuprof__steps.nran_max) {
        uint32_t m = gpuprof__steps.nran_max ? 2 * gpuprof__steps.nran_max : 64;
        gpuprof__ran *r = (gpuprof__ran *)gpuprof__grow(gpuprof__steps.ran, sizeof *r, *nran, m);
        if (!r) return;                  /* out of memory: this range is left out of the step's kind */
        gpuprof__steps.ran = r;
        gpuprof__steps.nran_max = m;
    }
    gpuprof__steps.ran[*nran].index = n->index;
    gpuprof__steps.ran[*nran].top = !n->parent || !n->parent->parent;   /* a child of the thread's root */
    gpuprof__steps.ran[(*nran)++].ns = d;
}

/* A set's signature: the same for the same nodes in any order. */
static uint64_t gpuprof__set_sig(const gpuprof__ran *ran, uint32_t n) {
    uint64_t sig = n;
    uint32_t i;
    for (i = 0; i < n; i++) {
        uint64_t x = ((uint64_t)ran[i].index + 1) * 0x9e3779b97f4a7c15ull;
        sig += (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull;
    }
    return sig;
}

/* The kind of a step that ran these ranges (a new one when the set is new
   and the table has room); its figures get the step. -1: no room. */
static int gpuprof__step_kind(const void *thread, const gpuprof__ran *ran, uint32_t n, double dur, uint64_t step) {
    uint64_t sig = gpuprof__set_sig(ran, n);
    uint32_t i, k, top = 0;
    gpuprof__kind *kd;
    for (k = 0; k < gpuprof__steps.nkinds; k++)
        if (gpuprof__steps.kinds[k].sig == sig && gpuprof__steps.kinds[k].nset == n && gpuprof__steps.kinds[k].thread == thread) break;
    for (i = 0; i < n; i++) if (ran[i].index + 1 > top) top = ran[i].index + 1;
    if (k == gpuprof__steps.nkinds) {
        uint32_t *set;
        if (k == GPUPROF__KINDS || !(set = (uint32_t *)gpuprof__alloc((n ? n : 1) * sizeof *set))) return -1;   /* counted as typical */
        kd = &gpuprof__steps.kinds[gpuprof__steps.nkinds++];
        memset(kd, 0, sizeof *kd);
        kd->sig = sig;
        kd->thread = thread;
        kd->nset = n;
        kd->set = set;
        for (i = 0; i < n; i++) set[i] = ran[i].index;
    }
    kd = &gpuprof__steps.kinds[k];
    if (top > kd->nns) {               /* node indexes grow as the thread makes nodes */
        double *ns = (double *)gpuprof__grow(kd->ns, sizeof *ns, kd->nns, top);
        if (!ns) return -1;
        kd->ns = ns;
        kd->nns = top;
    }
    if (kd->steps < 8) kd->first[kd->steps] = step;
    kd->steps++;
    kd->dur += dur;
    for (i = 0; i < n; i++) kd->ns[ran[i].index] += ran[i].ns;
    return (int)k;
}

/* The most common kind of thread's steps so far (ties: the first met), -1
   when it has none. Its steps are the typical ones the drift compares. */
static int gpuprof__kind_top(const void *thread) {
    uint32_t i;
    int top = -1;
    for (i = 0; i < gpuprof__steps.nkinds; i++)
        if (gpuprof__steps.kinds[i].thread == thread && (top < 0 || gpuprof__steps.kinds[i].steps > gpuprof__steps.kinds[top].steps)) top = (int)i;
    return top;
}

/* Two neighbouring points as one. */
static void gpuprof__point_merge(gpuprof__point *to, const gpuprof__point *a, const gpuprof__point *b) {
    int k;
    gpuprof__point m = *a;
    m.n = a->n + b->n;
    m.sum = a->sum + b->sum;
    if (b->min < m.min) m.min = b->min;
    if (b->max > m.max) m.max = b->max;
    for (k = 0; k < GPUPROF__SERIES_PH; k++) { m.ph[k] += b->ph[k]; m.tph[k] += b->tph[k]; }
    m.t1 = b->t1;
    m.tn += b->tn;
    m.tsum += b->tsum;
    *to = m;
}

/* The step that ends now into the run over time: into the last point, or a
   new one; when all are used, neighbours merge and a point holds twice the
   steps. The outermost ranges are followed, the first GPUPROF__SERIES_PH met. */
static void gpuprof__series_add(gpuprof__thread *t, double dur, uint64_t step, uint64_t end_ns, const gpuprof__ran *ran, uint32_t nran, int typical) {
    gpuprof__point *p;
    uint32_t i, k;
    if (!gpuprof__steps.series && !(gpuprof__steps.series = (gpuprof__point *)gpuprof__zalloc(GPUPROF__SERIES * sizeof *gpuprof__steps.series))) return;
    if (gpuprof__steps.series_thread != t) {            /* another stepping thread: its own series */
        gpuprof__steps.series_thread = t;
        gpuprof__steps.npoints = gpuprof__steps.nph = 0;
        gpuprof__steps.per_point = 1;
    }
    if (!gpuprof__steps.npoints || gpuprof__steps.series[gpuprof__steps.npoints - 1].n >= gpuprof__steps.per_point) {
        if (gpuprof__steps.npoints == GPUPROF__SERIES) {
            for (i = 0; i < GPUPROF__SERIES / 2; i++) gpuprof__point_merge(&gpuprof__steps.series[i], &gpuprof__steps.series[2 * i], &gpuprof__steps.series[2 * i + 1]);
            gpuprof__steps.npoints = GPUPROF__SERIES / 2;
            gpuprof__steps.per_point *= 2;
        }
        p = &gpuprof__steps.series[gpuprof__steps.npoints++];
        memset(p, 0, sizeof *p);
        p->step = step;
        p->min = p->max = dur;
        p->t0 = end_ns > (uint64_t)dur ? end_ns - (uint64_t)dur : 0;
    }
    p = &gpuprof__steps.series[gpuprof__steps.npoints - 1];
    p->t1 = end_ns;
    p->n++;
    p->sum += dur;
    if (typical) { p->tn++; p->tsum += dur; }
    if (dur < p->min) p->min = dur;
    if (dur > p->max) p->max = dur;
    for (i = 0; i < nran; i++) {
        if (!ran[i].top) continue;
        for (k = 0; k < gpuprof__steps.nph && gpuprof__steps.ph_node[k] != ran[i].index; k++) {}
        if (k == gpuprof__steps.nph) {
            gpuprof__node *n;
            if (k == GPUPROF__SERIES_PH) continue;
            n = gpuprof__node_at(t, ran[i].index);
            gpuprof__steps.ph_node[k] = ran[i].index;
            gpuprof__steps.ph_name[k] = n ? n->name_id : 0;
            gpuprof__steps.nph++;
        }
        p->ph[k] += ran[i].ns;
        if (typical) p->tph[k] += ran[i].ns;
    }
}

/* Is a counted step of dur ns possibly an outlier? The first few always are
   candidates (the final median decides); later ones when far above the
   median so far (checked only past twice the mean, which is cheap). */
static int gpuprof__outlier_candidate(double dur) {
    const gpuprof_stats *st = &gpuprof__steps.stats;
    int candidate = st->count < 5 || (dur > 2.0 * gpuprof_stats_mean(st) && dur > GPUPROF__OUTLIER_X * gpuprof_stats_quantile(st, 0.5));
    if (candidate && gpuprof__steps.noutl >= GPUPROF__OUTLIERS) { gpuprof__steps.outl_full = 1; return 0; }
    return candidate;
}

/* Under gpuprof__lock, on the stepping thread (which owns these nodes): its
   outer two levels' counted time at the first and at every GPUPROF_STEP;
   for a counted step, its kind (the ranges that ran in it) and, when it may
   be an outlier, where all its time went. dur: the counted step that ends
   now (ns), or < 0. Returns the step's kind (-1: none, or the table full). */
static int gpuprof__step_window(gpuprof__thread *t, int first, double dur, uint64_t step, uint64_t end_ns) {
    gpuprof__node *a, *b;
    uint32_t nran = 0;
    int kind;
    gpuprof__rec_drain(t, 1, 0);   /* the calls that ended in this step */
    for (a = t->root.first_child; a; a = a->next_sibling) {
        gpuprof__step_node(a, first, &nran);
        for (b = a->first_child; b; b = b->next_sibling) gpuprof__step_node(b, first, &nran);
    }
    if (dur < 0) return -1;
    kind = gpuprof__step_kind(t, gpuprof__steps.ran, nran, dur, step);
    gpuprof__series_add(t, dur, step, end_ns, gpuprof__steps.ran, nran, kind < 0 || gpuprof__kind_top(t) == kind);
    if (gpuprof__outlier_candidate(dur)) {
        gpuprof__outlier *o = &gpuprof__steps.outl[gpuprof__steps.noutl];
        gpuprof__ran *copy = (gpuprof__ran *)gpuprof__alloc((nran ? nran : 1) * sizeof *copy);
        if (!copy) { gpuprof__steps.outl_full = 1; return kind; }    /* out of memory: no outliers set apart, as when full */
        if (nran) memcpy(copy, gpuprof__steps.ran, nran * sizeof *copy);
        gpuprof__steps.noutl++;
        o->step = step;
        o->dur = dur;
        o->kind = kind;
        o->n = nran;
        o->ran = copy;
    }
    return kind;
}

/* The keeper's lock and signal: gpuprof's thread (section "Checkpoints and
   captures", further down: it needs the trace's sinks) waits on them, and a
   step that asks for a capture wakes it (gpuprof__keeper_wake). */
static pthread_mutex_t gpuprof__keep_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gpuprof__keep_cond = PTHREAD_COND_INITIALIZER;

/* From the stepping thread, under gpuprof__lock: a capture waits. The
   signal takes no lock (the keeper also looks every 50 ms while captures
   are on, so a signal it was not waiting for is not lost for long). */
static void gpuprof__keeper_wake(void) { pthread_cond_signal(&gpuprof__keep_cond); }
/* Is node index ix in the kind's set? */
static int gpuprof__kind_has(const gpuprof__kind *kd, uint32_t ix) {
    uint32_t i;
    for (i = 0; i < kd->nset; i++) if (kd->set[i] == ix) return 1;
    return 0;
}

/* What sets the kind of step `kind` apart from the most common kind so far:
   the outermost ranges it runs that that kind does not (at most 3 named). */
static void gpuprof__capture_kind(gpuprof__thread *t, int kind, gpuprof__capture *c) {
    const gpuprof__kind *kd = &gpuprof__steps.kinds[kind], *top = &gpuprof__steps.kinds[gpuprof__kind_top(kd->thread)];
    uint32_t i;
    c->common = top == kd;
    for (i = 0; !c->common && i < kd->nset && c->nwith < 3; i++) {
        gpuprof__node *n = gpuprof__node_at(t, kd->set[i]);
        if (n && n->parent == &t->root && !gpuprof__kind_has(top, kd->set[i])) c->with[c->nwith++] = n->name_id;
    }
}

/* Under gpuprof__lock, a counted step of dur ns ending at now, of kind
   `kind` (-1: none kept): slow against the running median of the steps of
   its own kind (GPUPROF_CAPTURE_SLOW; a kind judged from its
   GPUPROF__CAPTURE_AFTER-th step on, so that a validation step every N is
   judged against validation steps, and a kind always long never takes a
   capture), it is captured -- its window, from the start of the step
   before, goes to gpuprof's thread to write. */
static void gpuprof__capture_ask(gpuprof__thread *t, uint64_t step, uint64_t dur, uint64_t now, int kind) {
    double k = gpuprof__g.cfg.capture_slow, median;
    gpuprof_stats *st = kind >= 0 ? &gpuprof__steps.kinds[kind].durs : &gpuprof__steps.stats;
    gpuprof__capture *c;
    uint64_t base = GPUPROF__LD(&gpuprof__clock.base);
    int judged = k > 0 && st->count >= GPUPROF__CAPTURE_AFTER && gpuprof__bg.ncap < (unsigned)gpuprof__g.cfg.capture_max;
    median = judged ? gpuprof_stats_quantile(st, 0.5) : 0;
    if (kind >= 0) gpuprof_stats_add(st, (double)dur);    /* after it is judged: against the steps before it */
    if (!judged || !((double)dur > k * median) || !GPUPROF__LD(&gpuprof__bg.keeper_running)) return;
    c = &gpuprof__bg.cap[gpuprof__bg.ncap];
    memset(c, 0, sizeof *c);
    c->step = step;
    c->ns = (double)dur;
    c->median = median;
    c->common = 1;
    if (kind >= 0 && t) gpuprof__capture_kind(t, kind, c);
    c->from = gpuprof__steps.t0_prev > base ? gpuprof__steps.t0_prev - base : 0;
    c->to = now - base;
    c->asked = gpuprof__mono_ns();
    GPUPROF__STR(&gpuprof__bg.ncap, gpuprof__bg.ncap + 1);
    gpuprof__keeper_wake();
}

/* What each step calls first, set at a session's start by the sections
   further down that need it (NULL: nothing): with GPUPROF_MPI, MPI_Init may
   come after gpuprof's start, and a step registers the MPI_Finalize hook
   then (section "MPI", which needs the reports: gpuprof__mpi_attach). */
static void (*gpuprof__step_hook)(void);
void gpuprof__step(void) {
    uint64_t now = gpuprof__ticks();
    gpuprof__thread *t = gpuprof__tls;
    int counted, recorded, first, phase, kind = -1;
    uint64_t step, dur;
    if (GPUPROF__LD(&gpuprof__g.forked_child)) return;   /* the session is the parent's */
    if (GPUPROF__LD(&gpuprof__step_hook)) GPUPROF__LD(&gpuprof__step_hook)();   /* MPI_Init after gpuprof's: registered at the next step */
    if (GPUPROF__LDA(&gpuprof__g.state) != GPUPROF__RUNNING) {
        if (!gpuprof__enter_slow()) return;      /* auto-init, or warn after shutdown */
        t = gpuprof__tls;
        now = gpuprof__ticks();                  /* the step's time on the session's clock, not before its start */
    }
    if ((!t || t->session != GPUPROF__LD(&gpuprof__g.session)) && GPUPROF__LD(&gpuprof__g.live)) t = gpuprof__enter_slow();
    pthread_mutex_lock(&gpuprof__lock);
    if (gpuprof__g.state != GPUPROF__RUNNING) { pthread_mutex_unlock(&gpuprof__lock); return; }
    /* The step that ends now, judged as if steps had been seen from the
       start: before the first GPUPROF_STEP its ranges were judged per call. */
    first = !gpuprof__steps.seen;
    GPUPROF__ST(&gpuprof__steps.seen, 1);
    phase = gpuprof__phase_of(gpuprof__steps.step);
    if (first) GPUPROF__ST(&gpuprof__g.phase, phase);   /* the step that ends, judged as if steps were seen all along */
    counted = phase == GPUPROF__PHASE_COUNT;
    recorded = phase != GPUPROF__PHASE_OFF;
    step = gpuprof__steps.step;
    /* A counted step is a window between two GPUPROF_STEP calls: N calls
       make N - 1 (the first only starts the clock), each with its time. */
    if (phase == GPUPROF__PHASE_OFF) gpuprof__steps.unrecorded++;
    else if (counted) gpuprof__steps.counted += !first;
    else gpuprof__steps.excluded++;
    /* A step lasts from one GPUPROF_STEP to the next; the first one has no start. */
    dur = first ? 0 : gpuprof__ticks_to_ns(now - gpuprof__steps.t0);
    if (t && t->session == gpuprof__g.session) {
#if !defined(GPUPROF_CLOCK_FN)
        /* The stepping thread's time off the CPU in a step: it was blocked
           (waiting for other threads, I/O, a blocking GPU sync). Not with a
           test clock: its steps are not on the real clock. */
        uint64_t cpu = gpuprof__thread_cpu_ns(), rq = 0, vol = 0, invol = 0;
        int got = gpuprof__thread_waits(t->tid, &rq, &vol, &invol);
        if (counted && !first && gpuprof__steps.stepper == t && gpuprof__steps.cpu0 && cpu >= gpuprof__steps.cpu0) {
            gpuprof__steps.cpu += (double)(cpu - gpuprof__steps.cpu0);
            gpuprof__steps.wall += (double)dur;
            if (!(got & 1) || rq < gpuprof__steps.rq0) gpuprof__steps.runq = -1.0;     /* unknown from now on */
            else if (gpuprof__steps.runq >= 0) gpuprof__steps.runq += (double)(rq - gpuprof__steps.rq0);
            if ((got & 2) && vol >= gpuprof__steps.vol0 && invol >= gpuprof__steps.invol0) {
                gpuprof__steps.vol += (double)(vol - gpuprof__steps.vol0);
                gpuprof__steps.invol += (double)(invol - gpuprof__steps.invol0);
            }
        }
        gpuprof__steps.cpu0 = cpu;
        gpuprof__steps.rq0 = rq;
        gpuprof__steps.vol0 = vol;
        gpuprof__steps.invol0 = invol;
#endif
        gpuprof__steps.stepper = t;
        kind = gpuprof__step_window(t, first, counted && !first ? (double)dur : -1.0, step, gpuprof__ticks_to_ns(now - GPUPROF__LD(&gpuprof__clock.base)));
    }
    if (counted && !first) {
        gpuprof__capture_ask(t && t->session == gpuprof__g.session ? t : NULL, step, dur, now, kind);
        gpuprof_stats_add(&gpuprof__steps.stats, (double)dur);
    }
#ifdef GPUPROF_CUDA
    gpuprof__gpu_step(step, gpuprof__ticks_to_ns(now - GPUPROF__LD(&gpuprof__clock.base)), dur, counted && !first);
    gpuprof__kc_step(step, (int64_t)gpuprof__ticks_to_ns(now - GPUPROF__LD(&gpuprof__clock.base)), dur, counted && !first);
#endif
    gpuprof__steps.t0_prev = first ? now : gpuprof__steps.t0;
    gpuprof__steps.t0 = now;
    gpuprof__steps.step++;
    gpuprof__apply_phase();
    pthread_mutex_unlock(&gpuprof__lock);
    gpuprof__gpu_step_harvest();
    if (recorded && GPUPROF__LD(&gpuprof__trace.on)) {
        if ((!t || t->session != gpuprof__g.session) && GPUPROF__LD(&gpuprof__g.live)) t = gpuprof__enter_slow();
        if (t && t->session == gpuprof__g.session)
            gpuprof__trace_put(t, GPUPROF__EV_STEP, 0, (counted ? GPUPROF__EVF_COUNTED : 0) | (int)((t->depth < 255 ? t->depth : 255) << 8),
                               now - t->base, step);
    }
}

/* ----------------------------------------------------------------------
   Output helpers
   ---------------------------------------------------------------------- */
/* Integers are written two digits at a time from this table: the trace
   writer spends most of its time on numbers. */
static const char gpuprof__digits2[201] =
    "0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849"
    "5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

static char gpuprof__digits4[10000][4];     /* "0000" .. "9999": four digits per step */
static const uint64_t gpuprof__pow10[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull, 1000000000ull,
    10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull, 100000000000000ull,
    1000000000000000ull, 10000000000000000ull, 100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull
};

/* Decimal digits, written in place from the last (the trace writer's inner loop). */
GPUPROF__INLINE char *gpuprof__put_u64(char *p, uint64_t v) {
    unsigned n;
    char *q;
#if defined(__GNUC__) || defined(__clang__)
    n = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233u >> 12;     /* floor(log10) or one more */
    n = n + 1 - (n && v < gpuprof__pow10[n]);
#else
    for (n = 1; n < 20 && v >= gpuprof__pow10[n]; n++) {}
#endif
    q = p + n;
    while (v >= 10000) { q -= 4; memcpy(q, gpuprof__digits4[v % 10000], 4); v /= 10000; }
    while (v >= 100) { q -= 2; memcpy(q, gpuprof__digits2 + (v % 100) * 2, 2); v /= 100; }
    if (v >= 10) { q -= 2; memcpy(q, gpuprof__digits2 + v * 2, 2); }
    else *--q = (char)('0' + v);
    return p + n;
}

/* Fills the four-digit table (once, before the first number is written). */
static void gpuprof__digits4_init(void) {
    int i;
    for (i = 0; i < 10000; i++) {
        gpuprof__digits4[i][0] = (char)('0' + i / 1000);
        gpuprof__digits4[i][1] = (char)('0' + i / 100 % 10);
        gpuprof__digits4[i][2] = (char)('0' + i / 10 % 10);
        gpuprof__digits4[i][3] = (char)('0' + i % 10);
    }
}

/* Microseconds with three decimals from integer nanoseconds: ts and dur are
   both exact, so back-to-back events never overlap by a rounding error. */
GPUPROF__INLINE char *gpuprof__put_us(char *p, uint64_t ns) {
    uint32_t r = (uint32_t)(ns % 1000);
    p = gpuprof__put_u64(p, ns / 1000);
    *p++ = '.';
    *p++ = (char)('0' + r / 100);
    memcpy(p, gpuprof__digits2 + (r % 100) * 2, 2);
    return p + 2;
}

static char *gpuprof__put_s(char *p, const char *s) {
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

/* A growable text buffer for the report and the summary. */
typedef struct gpuprof__buf { char *p; size_t len, cap; int failed; } gpuprof__buf;

/* Room for n more bytes and the ending 0; 0 when there is. */
static int gpuprof__buf_room(gpuprof__buf *b, size_t n) {
    if (b->failed) return -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *np;
        while (cap < b->len + n + 1) cap *= 2;
        np = (char *)gpuprof__alloc(cap);
        if (!np) { b->failed = 1; return -1; }
        if (b->p) { memcpy(np, b->p, b->len); GPUPROF_FREE(b->p); }
        b->p = np;
        b->cap = cap;
    }
    return 0;
}

static void gpuprof__buf_put(gpuprof__buf *b, const char *s, size_t n) {
    if (gpuprof__buf_room(b, n) != 0) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}
static void gpuprof__buf_s(gpuprof__buf *b, const char *s) { gpuprof__buf_put(b, s, strlen(s)); }

/* Text and integers only (those are locale-independent); doubles go
   through gpuprof__fmt first. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void gpuprof__buf_printf(gpuprof__buf *b, const char *fmt, ...) {
    enum { MOST = 1024 };             /* a piece's most bytes, with its 0; formatted in place (not on the caller's stack) */
    va_list ap;
    int n;
    if (gpuprof__buf_room(b, MOST) != 0) return;
    va_start(ap, fmt);
    n = vsnprintf(b->p + b->len, MOST, fmt, ap);
    va_end(ap);
    if (n < 0) { b->p[b->len] = 0; return; }
    b->len += (size_t)n < MOST ? (size_t)n : MOST - 1;
}

/* A JSON number: integers exactly, others with 9 significant digits; NaN
   and infinities (not JSON) become null. */
static void gpuprof__buf_num(gpuprof__buf *b, double v) {
    char tmp[40];
    if (!gpuprof__finite(v)) { gpuprof__buf_s(b, "null"); return; }
    if (v > -9e15 && v < 9e15 && v == (double)(int64_t)v) snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    else gpuprof__fmt(tmp, sizeof tmp, "%.9g", v);
    gpuprof__buf_s(b, tmp);
}

static void gpuprof__buf_json_str(gpuprof__buf *b, const char *s) {
    size_t n = s ? strlen(s) : 0;
    char *tmp = (char *)gpuprof__alloc(n * 6 + 3);
    if (!tmp) { b->failed = 1; return; }
    gpuprof__buf_put(b, tmp, gpuprof__json_escape(tmp, s ? s : "", n));
    GPUPROF_FREE(tmp);
}

/* "812 ns", "4.21 us", "35.8 ms", "1.20 s": three significant digits. */
static const char *gpuprof__fmt_ns(char *buf, size_t n, double ns) {
    static const char *const unit[] = { "ns", "us", "ms", "s" };
    int u = 0;
    if (gpuprof__isnan(ns)) { snprintf(buf, n, "-"); return buf; }
    while (u < 3 && (ns >= 999.5 || ns <= -999.5)) { ns /= 1000.0; u++; }
    if (u == 0) gpuprof__fmt(buf, n, "%.0f", ns);
    else if (ns < 0 ? ns > -9.995 : ns < 9.995) gpuprof__fmt(buf, n, "%.2f", ns);
    else if (ns < 0 ? ns > -99.95 : ns < 99.95) gpuprof__fmt(buf, n, "%.1f", ns);
    else gpuprof__fmt(buf, n, "%.0f", ns);
    strncat(buf, " ", n - strlen(buf) - 1);
    strncat(buf, unit[u], n - strlen(buf) - 1);
    return buf;
}

static const char *gpuprof__fmt_val(char *buf, size_t n, double v) {
    if (gpuprof__isnan(v)) snprintf(buf, n, "-");
    else gpuprof__fmt(buf, n, "%.4g", v);
    return buf;
}

/* A path with %p (pid), %r (rank), %l (local rank; 0 without a launcher)
   and %h (host, a '/' in it as '_') replaced, %% a percent sign. */
static int gpuprof__path_expand(const char *in, char *out, size_t n) {
    size_t o = 0;
    for (; *in && o + 24 < n; in++) {
        if (in[0] == '%' && (in[1] == 'p' || in[1] == 'r' || in[1] == 'l')) {
            int v = in[1] == 'p' ? gpuprof__run.pid : in[1] == 'r' ? gpuprof__run.rank : gpuprof__run.local_rank;
            o += (size_t)snprintf(out + o, n - o, "%d", v < 0 ? 0 : v);
            in++;
        } else if (in[0] == '%' && in[1] == 'h') {
            const char *h;
            for (h = gpuprof__run.host; *h && o + 24 < n; h++) out[o++] = *h == '/' ? '_' : *h;
            in++;
        } else if (in[0] == '%' && in[1] == '%') { out[o++] = '%'; in++; }
        else out[o++] = *in;
    }
    out[o] = 0;
    return *in ? -1 : 0;
}

static int gpuprof__same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (strcmp(a, b) == 0) return 1;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The longest output path gpuprof expands (a buffer of it is on the heap:
   any thread may call, on a stack of 16 KiB). */
#define GPUPROF__PATH_MAX 4096

/* A temporary file beside path (path.PID.tmp), created anew: O_EXCL and
   O_NOFOLLOW, as an output's directory may be shared (never through a link
   someone planted); one a killed run of the same pid left is replaced. */
static int gpuprof__tmp_create(const char *path, char *tmp, size_t n) {
    int fd = -1, tries;
    if ((size_t)snprintf(tmp, n, "%s.%d.tmp", path, gpuprof__run.pid) >= n) { errno = ENAMETOOLONG; return -1; }
    for (tries = 0; tries < 2; tries++) {
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST || unlink(tmp) != 0) break;
    }
    return fd;
}

/* A pipe or a device at an output's path is written through, and must
   never stop or kill the program: it is opened without blocking (a FIFO
   that no process reads fails at once), SIGPIPE is held back in the
   writing thread while it is written (a reader that went away is EPIPE,
   and the signal it raised is taken back), and a pipe that stays full for
   GPUPROF__PIPE_WAIT_MS gives up. SIGPIPE is held back where the C mode
   declares POSIX's signals (not in a strict -std=c99 without
   _POSIX_C_SOURCE). */
#define GPUPROF__PIPE_WAIT_MS 1000
#if defined(SIGPIPE) && defined(SIG_BLOCK) && defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 199309L
#define GPUPROF__HOLD_SIGPIPE 1
typedef struct { sigset_t old; int pending; } gpuprof__sigpipe_hold;
static void gpuprof__sigpipe_block(gpuprof__sigpipe_hold *h) {
    sigset_t pipe, pend;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &h->old);
    h->pending = sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE);
}
static void gpuprof__sigpipe_restore(gpuprof__sigpipe_hold *h, int raised) {
    if (raised && !h->pending) {                  /* ours: taken back before the mask lets it through */
        sigset_t pipe;
        struct timespec zero = { 0, 0 };
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        while (sigtimedwait(&pipe, NULL, &zero) < 0 && errno == EINTR) {}
    }
    pthread_sigmask(SIG_SETMASK, &h->old, NULL);
}
#else
#define GPUPROF__HOLD_SIGPIPE 0
typedef struct { int pending; } gpuprof__sigpipe_hold;
#define gpuprof__sigpipe_block(h) ((void)(h))
#define gpuprof__sigpipe_restore(h, raised) ((void)(h), (void)(raised))
#endif

/* The buffer into fd; 0, or -1 with errno. A pipe (nonblock) that stays
   full GPUPROF__PIPE_WAIT_MS is EAGAIN. */
static int gpuprof__write_all(int fd, const gpuprof__buf *b, int nonblock) {
    size_t off = 0;
    int waited = 0;
    while (off < b->len) {
        ssize_t w = write(fd, b->p + off, b->len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && nonblock && (errno == EAGAIN || errno == EWOULDBLOCK) && waited < GPUPROF__PIPE_WAIT_MS) {
            gpuprof__timespec ts = { 0, 10000000L };
            gpuprof__nanosleep(&ts, NULL);
            waited += 10;
            continue;
        }
        if (w == 0) errno = EIO;
        if (w <= 0) return -1;
        off += (size_t)w;
    }
    return 0;
}

/* Writes the whole buffer to a path (expanded already); a one-line message
   names the path and the reason on failure. A summary and the live metrics
   go to a temporary file (gpuprof__tmp_create) renamed over the last: a
   reader, or a kill, never meets half of one. Only over a regular file or
   none: a device or a pipe is written through, as it is (above). made (not
   NULL): the file is read by another user (node_exporter), so 0644
   whatever the umask, and *made is the file written. */
static int gpuprof__write_file_in(const char *path, const gpuprof__buf *b, const char *what, struct stat *made, char *tmp) {
    int fd, had = 0, rc, atomic = strcmp(what, "summary") == 0 || strcmp(what, "metrics") == 0, special, err, exists;
    struct stat st;
    gpuprof__sigpipe_hold hold;
    exists = stat(path, &st) == 0;
    special = exists && !S_ISREG(st.st_mode);
    if (atomic) atomic = exists ? (had = S_ISREG(st.st_mode)) : errno == ENOENT;
    fd = atomic ? gpuprof__tmp_create(path, tmp, GPUPROF__PATH_MAX + 104) : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (special ? O_NONBLOCK : 0), 0644);
    if (fd < 0) {
        if (special && errno == ENXIO)
            gpuprof__warn(GPUPROF__W_IO, "no process reads the pipe '%s': the %s goes nowhere (start its reader first, or name a file)", path, what);
        else gpuprof__warn(GPUPROF__W_IO, "cannot open '%s' for the %s: %s (check that the directory exists and is writable)", path, what, strerror(errno));
        return -1;
    }
    if (made) (void)gpuprof__fchmod(fd, 0644);
    if (special) gpuprof__sigpipe_block(&hold);
    rc = gpuprof__write_all(fd, b, special);
    err = errno;
    if (special) gpuprof__sigpipe_restore(&hold, rc != 0 && err == EPIPE);
    if (rc != 0) {
        if (special && err == EPIPE) gpuprof__warn(GPUPROF__W_IO, "the reader of '%s' went away during a write of the %s: that write is lost, the run goes on", path, what);
        else if (special && (err == EAGAIN || err == EWOULDBLOCK))
            gpuprof__warn(GPUPROF__W_IO, "'%s' is a pipe that nobody empties (full for %d ms): that write of the %s is dropped, the run goes on", path, GPUPROF__PIPE_WAIT_MS, what);
        else gpuprof__warn(GPUPROF__W_IO, "cannot write the %s to '%s': %s (check free space)%s", what, path, strerror(err), atomic && had ? "; the last complete file stays" : "");
        close(fd);
        if (atomic) unlink(tmp);
        return -1;
    }
    if (made && fstat(fd, made) != 0) memset(made, 0, sizeof *made);
    if (close(fd) != 0) {
        gpuprof__warn(GPUPROF__W_IO, "cannot write the %s to '%s': %s", what, path, strerror(errno));
        if (atomic) unlink(tmp);
        return -1;
    }
    if (atomic && rename(tmp, path) != 0) {
        gpuprof__warn(GPUPROF__W_IO, "cannot rename '%s' to '%s' for the %s: %s", tmp, path, what, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
static int gpuprof__write_file_as(const char *path, const gpuprof__buf *b, const char *what, struct stat *made) {
    char *tmp;                        /* the temporary file's name, on the heap: the caller's stack may be 16 KiB */
    int rc;
    if (b->failed || (tmp = (char *)gpuprof__alloc(GPUPROF__PATH_MAX + 104)) == NULL) return -1;
    rc = gpuprof__write_file_in(path, b, what, made, tmp);
    GPUPROF_FREE(tmp);
    return rc;
}
static int gpuprof__write_file(const char *path, const gpuprof__buf *b, const char *what) { return gpuprof__write_file_as(path, b, what, NULL); }

/* ----------------------------------------------------------------------
   Trace output, the layers: recording (section "Trace buffers") fills each
   thread's blocks with fixed-size events; an encoder turns a block's events
   into the bytes of a format (Chrome JSON, next section); a sink decides
   where those bytes go and when (the streamed file and its writer thread, a
   copy of it, the flight recorder's dump: the section after). A trace
   output (gpuprof__tout) is one file being written: its descriptor, the
   bytes and events in it, its format. A new format is one encoder and a
   row in gpuprof__trace_encoders; a new destination is one sink.
   ---------------------------------------------------------------------- */
#define GPUPROF__WBUF 1048576         /* the encoders' buffer (gpuprof__trace.wbuf, a stage) */
#define GPUPROF__WSTAGE 524288        /* a stage is written once it holds this much */

/* n bytes to the output's file. A failed write is one message; the output
   then writes nothing more (failed), and the statistics go on. */
static void gpuprof__trace_bytes(gpuprof__tout *o, const char *s, size_t n) {
    o->off += n;
    while (n && !o->failed) {
        ssize_t w = write(o->fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            snprintf(o->error, sizeof o->error, "%s", w < 0 ? strerror(errno) : "no progress");
            GPUPROF__STR(&o->failed, 1);    /* a report reads the error after it */
            gpuprof__warn(GPUPROF__W_IO, "cannot write the trace to '%s': %s; the trace stops here, statistics go on (check the path and free space)",
                          o->path, o->error);
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

/* The bytes staged (gpuprof__trace_stage), written now. */
static void gpuprof__trace_flush(gpuprof__tout *o) {
    size_t k = o->staged;
    o->staged = 0;
    if (k) gpuprof__trace_bytes(o, o->stage, k);
}

/* Appends n bytes to the output's file, after the bytes staged (none when
   s is the stage itself: the encoder wrote on after them). */
static void gpuprof__trace_write(gpuprof__tout *o, const char *s, size_t n) {
    if (s == o->stage) o->staged = 0;
    else gpuprof__trace_flush(o);
    gpuprof__trace_bytes(o, s, n);
}

/* Where an encoder puts a block's bytes: the output's stage, after what
   waits there, or the shared buffer (dumps, copies: written at once). */
GPUPROF__INLINE char *gpuprof__trace_buf(const gpuprof__tout *o) {
    return o->stage ? o->stage : gpuprof__trace.wbuf;
}

/* The encoder is done with a block: its bytes [buf, end) are written, or,
   in a stage that is not yet half full, kept for the next block's. The
   kernel charges less for each byte of one large write() than of many
   small ones (page-cache folios filled whole: about 3.5 against 6.5 ns per
   22 bytes for 1 MiB against 45 KiB writes on ext4), and a busy stream's
   blocks each encode to tens of KiB; the writer writes the stage out
   whenever it runs out of blocks (gpuprof__trace_flush). */
static void gpuprof__trace_stage(gpuprof__tout *o, char *buf, char *end) {
    size_t n = (size_t)(end - buf);
    if (o->stage && buf == o->stage && n < GPUPROF__WSTAGE) { o->staged = (uint32_t)n; return; }
    gpuprof__trace_write(o, buf, n);
}

/* An encoder: what starts a file; a block's events [from, n) written (WORK,
   FLOW and a kernel's argument records are parts of the event after them,
   held in the recording thread's state until it comes), returning the
   events written; what ends a file: the events in it, those dropped, and a
   flight-recorder dump's window (events older than window_ns fell out). */
typedef struct gpuprof__trace_encoder {
    void (*begin)(gpuprof__tout *o);
    uint32_t (*events)(gpuprof__tout *o, gpuprof__block *b, uint32_t from, uint32_t n);
    void (*end)(gpuprof__tout *o, uint64_t events, uint64_t dropped, uint64_t fell_out, uint64_t window_ns);
} gpuprof__trace_encoder;

/* The work a WORK event left for this range event, if it is the one. */
static const double *gpuprof__trace_work_for(gpuprof__thread *t, uint32_t name_id, double *w) {
    if (t->fmt.work_name != name_id) return NULL;
    w[0] = t->fmt.work_flops;
    w[1] = t->fmt.work_bytes;
    t->fmt.work_name = 0;
    return w;
}

/* A record that is part of the event after it (WORK, FLOW; a kernel's KA
   and KB), kept in its thread's state until that event is written. */
static void gpuprof__trace_aux_hold(gpuprof__thread *t, const gpuprof__event *e, int type) {
    switch (type) {
    case GPUPROF__EV_WORK:
        t->fmt.work_name = e->name_id;
        t->fmt.work_rates = !(e->flags & GPUPROF__EVF_GPU_PART);
        memcpy(&t->fmt.work_bytes, &e->ts, sizeof t->fmt.work_bytes);
        memcpy(&t->fmt.work_flops, &e->u.dur_ns, sizeof t->fmt.work_flops);
        break;
    case GPUPROF__EV_FLOW:
        t->fmt.flow_tid = (int)e->u.dur_ns;
        t->fmt.flow_ns = gpuprof__ticks_to_ns(e->ts);
        t->fmt.flow_name = e->name_id;
        break;
    default:       /* GPUPROF__EV_KA, GPUPROF__EV_KB */
        t->fmt.karg[type - GPUPROF__EV_KA] = *e;
        break;
    }
}

GPUPROF__INLINE int gpuprof__trace_is_aux(int type) {
    return type == GPUPROF__EV_WORK || type == GPUPROF__EV_FLOW || type == GPUPROF__EV_KA || type == GPUPROF__EV_KB;
}

#ifdef GPUPROF_CUDA
/* The name of captured copy or memset work as Kineto spells it ("Memcpy
   HtoD (Pinned -> Device)", "Memset (Device)"), from its event's flags:
   the kind in bits 0-1, the direction in 2-5, the host memory in 6-7. */
static const char *gpuprof__trace_copy_name(char *buf, size_t n, const gpuprof__event *e) {
    static const char *const dir[11] = { "?", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP" };
    static const char *const host[4] = { "", "Pageable", "Pinned", "" };
    uint32_t d = (e->flags >> 2) & 15u, h = (e->flags >> 6) & 3u;
    if ((e->flags & 3u) != GPUPROF__KR_MEMCPY) return "Memset (Device)";
    if (d > 10) d = 0;
    if (*host[h] && (d == 1 || d == 2)) snprintf(buf, n, d == 1 ? "Memcpy %s (%s -> Device)" : "Memcpy %s (Device -> %s)", dir[d], host[h]);
    else snprintf(buf, n, "Memcpy %s", dir[d]);
    return buf;
}

/* A kernel event's occupancy arguments, from its aux events (karg) and its
   device's limits: Kineto's "blocks per SM" (grid blocks / SMs), "warps per
   SM" (grid warps / SMs) and "est. achieved occupancy %", and the
   theoretical occupancy (SPEC 20). 0: the device's limits are unknown. */
typedef struct gpuprof__kfig { double blocks_sm, warps_sm, est_pct, occ_pct; } gpuprof__kfig;
static int gpuprof__trace_kfig(const gpuprof__event *karg, int dev, gpuprof__kfig *f) {
    const gpuprof__devlim *d = dev >= 0 && dev < GPUPROF__MAX_DEV ? &gpuprof__gpu.lim[dev] : NULL;
    uint64_t blocks = (karg[0].ts & 0xffffffffu) * (karg[0].ts >> 32) * (karg[0].u.dur_ns & 0xffffffffu);
    uint64_t threads = (karg[0].u.dur_ns >> 32) * (karg[0].name_id & 0x7ffu) * ((karg[0].name_id >> 11) & 0x7fu);
    int bps = (int)karg[1].flags - 1, max_warps;
    double warps;
    if (!d || bps < 0 || d->sms <= 0 || d->warp <= 0 || (max_warps = d->threads_sm / d->warp) <= 0) return 0;
    warps = (double)((threads + (uint64_t)d->warp - 1) / (uint64_t)d->warp);
    f->blocks_sm = (double)blocks / d->sms;
    f->warps_sm = f->blocks_sm * warps;
    f->occ_pct = 100.0 * bps * warps / max_warps;
    f->est_pct = 100.0 * f->warps_sm / max_warps;
    if (f->est_pct > f->occ_pct) f->est_pct = f->occ_pct;
    return 1;
}
#endif

#ifdef GPUPROF_CUDA
/* The state whose block of thread tid the formatter encoded last, to name
   that thread's track where other events land on it (captured CUDA calls,
   written from gpuprof's own blocks) and none of its own do: a part of a
   busy stream may hold none. NULL: no block of it was encoded yet. The
   list is only ever added to while a session runs (release, at its head). */
static gpuprof__thread *gpuprof__trace_named(uint32_t tid) {
    gpuprof__thread *t;
    for (t = GPUPROF__LDA(&gpuprof__threads.threads); t; t = t->next)
        if (t->fmt_tid == (int)tid) return t;
    /* none yet: the first part of a trace may fill with the collector's
       events before any block of the launching thread is encoded; its
       state's own name and order then (set when it joined the session) */
    for (t = GPUPROF__LDA(&gpuprof__threads.threads); t; t = t->next)
        if (t->tid == (int)tid && t->label[0]) {
            t->fmt_tid = t->tid;
            t->fmt_index = t->index;
            memcpy(t->fmt_label, t->label, sizeof t->fmt_label);
            return t;
        }
    return NULL;
}
#endif

#ifdef GPUPROF_CUDA
/* Lanes. GPU slices may overlap on one stream's track without nesting: a
   graph's branches run at once on the stream it was launched into, a
   programmatic dependent launch starts a kernel before the one before it
   ends, two ranges' GPU spans cross. The Perfetto UI drops a JSON complete
   event that overlaps its track's open one without nesting in it (import
   stat slice_drop_overlapping_complete_event), and in Perfetto's format an
   end would close the wrong begin. So each output puts every GPU slice on
   a lane of its track: the first lane where it overlaps nothing (captured
   work: kernels never nest) or nests with everything (GPU ranges: a child
   inside its parent, begun later), judged against the last
   GPUPROF__LANE_KEEP slices put there and the spans of those before them
   (GPUPROF__LANE_RUNS runs, each covering some of them and the gaps
   between). Lane 0 is the track itself; lane k is "GPU 0 stream 7 (k+1):
   ...", just below it. Slices arrive in no set order (a parent after its
   children, a buffer's kernels before or after the next buffer's), hence a
   window, not a sorted list. */
#define GPUPROF__LANE_TID(track, lane) (GPUPROF__GPU_TID0 + (uint32_t)(track) * GPUPROF__LANES + (uint32_t)(lane))

/* Whether [ts, end] may go on the lane: apart from each slice there (ends
   may touch begins) or, a range, strictly inside or around it; and apart
   from each run of those no longer kept or, a range, around it. */
static int gpuprof__lane_fits(const gpuprof__lane *l, uint64_t ts, uint64_t end, int nests) {
    uint32_t i;
    if (ts >= l->last || end <= l->first) return 1;   /* after or before all: most slices */
    for (i = 0; i < l->n; i++) {                       /* newest first: the likeliest to overlap */
        uint32_t k = (l->next + GPUPROF__LANE_KEEP - 1 - i) % GPUPROF__LANE_KEEP;
        uint64_t a = l->ts[k], b = l->end[k];
        if (end <= a || ts >= b) continue;
        if (nests && ((ts < a && end >= b) || (ts > a && end <= b))) continue;
        return 0;
    }
    for (i = 0; i < l->runs; i++)
        if (end > l->lo[i] && ts < l->hi[i] && !(nests && ts < l->lo[i] && end >= l->hi[i])) return 0;
    return 1;
}

/* A slice no longer kept, into the runs: merged with those it overlaps or
   touches (back-to-back work is one run);
   past GPUPROF__LANE_RUNS, the two neighbouring runs that span the least
   time together become one (the gap between them taken as busy): siblings
   rather than a long slice and a short one, so that a late parent can
   still be around its children. */
static void gpuprof__lane_forget(gpuprof__lane *l, uint64_t a, uint64_t b) {
    uint32_t i, k, best = 0, r = l->runs;
    if (r && a >= l->lo[r - 1] && a <= l->hi[r - 1]) {  /* the last run goes on (work in order): it meets no other */
        if (b > l->hi[r - 1]) l->hi[r - 1] = b;
        return;
    }
    for (i = 0; i < l->runs;) {
        if (a <= l->hi[i] && b >= l->lo[i]) {        /* meets run i: they become one */
            if (l->lo[i] < a) a = l->lo[i];
            if (l->hi[i] > b) b = l->hi[i];
            memmove(&l->lo[i], &l->lo[i + 1], (l->runs - i - 1) * sizeof l->lo[0]);
            memmove(&l->hi[i], &l->hi[i + 1], (l->runs - i - 1) * sizeof l->hi[0]);
            l->runs--;
        } else i++;
    }
    if (l->runs == GPUPROF__LANE_RUNS) {                 /* full: the two spanning least together become one */
        for (k = 1; k < l->runs; k++)
            if (l->hi[k] - l->lo[k - 1] < l->hi[best + 1] - l->lo[best]) best = k - 1;
        l->hi[best] = l->hi[best + 1];
        memmove(&l->lo[best + 1], &l->lo[best + 2], (l->runs - best - 2) * sizeof l->lo[0]);
        memmove(&l->hi[best + 1], &l->hi[best + 2], (l->runs - best - 2) * sizeof l->hi[0]);
        l->runs--;
        if (a <= l->hi[best] && b >= l->lo[best]) { gpuprof__lane_forget(l, a, b); return; }
    }
    for (i = 0; i < l->runs && l->lo[i] < a; i++) {}
    memmove(&l->lo[i + 1], &l->lo[i], (l->runs - i) * sizeof l->lo[0]);
    memmove(&l->hi[i + 1], &l->hi[i], (l->runs - i) * sizeof l->hi[0]);
    l->lo[i] = a;
    l->hi[i] = b;
    l->runs++;
}

/* [ts, end] onto the lane; the oldest slice kept goes into the runs. */
static void gpuprof__lane_put(gpuprof__lane *l, uint64_t ts, uint64_t end) {
    if (!l->n || ts < l->first) l->first = ts;
    if (!l->n || end > l->last) l->last = end;
    if (l->n == GPUPROF__LANE_KEEP) gpuprof__lane_forget(l, l->ts[l->next], l->end[l->next]);
    else l->n++;
    l->ts[l->next] = ts;
    l->end[l->next] = end;
    l->next = (l->next + 1) % GPUPROF__LANE_KEEP;
}

/* The lane of a GPU slice [ts, end] on its track in this output. Without
   memory for lanes, lane 0 (the track, as without lanes); past the last
   lane, the last, with one message. */
static uint32_t gpuprof__lane_of(gpuprof__tout *o, uint32_t track, uint64_t ts, uint64_t end, int nests) {
    gpuprof__lanes *ls;
    uint32_t k;
    if (!o->lanes && !(o->lanes = (gpuprof__lanes **)gpuprof__zalloc(GPUPROF__TRACKS * sizeof *o->lanes))) return 0;
    if (!(ls = o->lanes[track]) && !(ls = o->lanes[track] = (gpuprof__lanes *)gpuprof__zalloc(sizeof *ls))) return 0;
    if (ls->gen != o->gen) {                  /* a new part: its lanes afresh */
        memset(ls, 0, sizeof *ls);
        ls->gen = o->gen;
    }
    for (k = 0; k < ls->used && !gpuprof__lane_fits(&ls->lane[k], ts, end, nests); k++) {}
    if (k == ls->used) {
        if (k < GPUPROF__LANES) ls->used++;
        else {
            k = GPUPROF__LANES - 1;
            if (!ls->over++)
                gpuprof__warn(GPUPROF__W_KERNELS, "more than %d GPU slices overlap at once on the trace's track \"%s\": the viewers drop those that do not fit its last lane",
                              GPUPROF__LANES, gpuprof__gpu.track[track].label);
        }
    }
    gpuprof__lane_put(&ls->lane[k], ts, end);
    return k;
}

/* A lane's name: its track's, with " (k+1)" after the stream ("GPU 0
   stream 7 (2): kernels, copies (CUPTI)"). */
static const char *gpuprof__lane_label(char *buf, size_t n, uint32_t track, uint32_t lane) {
    const char *label = gpuprof__gpu.track[track].label, *colon = strchr(label, ':');
    if (!lane) return label;
    if (colon) snprintf(buf, n, "%.*s (%u)%s", (int)(colon - label), label, lane + 1, colon);
    else snprintf(buf, n, "%s (%u)", label, lane + 1);
    return buf;
}

/* Whether lane k of the track is to be named in this output (once). */
static int gpuprof__lane_unnamed(gpuprof__tout *o, uint32_t track, uint32_t lane) {
    gpuprof__lanes *ls = o->lanes ? o->lanes[track] : NULL;
    if (!lane) {                          /* the track itself: named as without lanes */
        if (gpuprof__gpu.track_meta[track] == o->gen) return 0;
        gpuprof__gpu.track_meta[track] = o->gen;
        return 1;
    }
    if (!ls || (ls->named & (1u << lane))) return 0;
    ls->named |= 1u << lane;
    return 1;
}

static void gpuprof__lanes_free(gpuprof__tout *o) {
    uint32_t i;
    if (!o->lanes) return;
    for (i = 0; i < GPUPROF__TRACKS; i++) GPUPROF_FREE(o->lanes[i]);
    GPUPROF_FREE(o->lanes);
    o->lanes = NULL;
}
#endif

/* A step as the encoders see it: one marked outside any range (its depth,
   in the flags, is 0) starts a slice that the next such step on the thread
   ends; one inside a range starts none. The slice is "ProfilerStep#N"
   (Kineto's name) with N the number of the step it is in gpuprof's report,
   the summary and the slow-step captures: the step that the mark ending it
   ends (the mark "step N"; the first GPUPROF_STEP ends none). Remembers
   this step; returns 1 when it ends a slice, *from and *no that slice's
   begin (ns) and N. */
static int gpuprof__trace_step(const gpuprof__tout *o, gpuprof__thread *t, const gpuprof__event *e, uint64_t ts, uint64_t *from, uint64_t *no) {
    /* a step begun in an earlier part ends in this one (gpuprof__trace_rotate; a busy
       part may hold none of the thread's events); generations only grow */
    int outside = (e->flags >> 8) == 0, ends = outside && t->fmt.step_gen && t->fmt.step_gen >= o->first_gen;
    *from = t->fmt.step_ns;
    *no = e->u.step;
    t->fmt.step_gen = outside ? o->gen : 0;
    t->fmt.step_ns = ts;
    return ends;
}

/* ----------------------------------------------------------------------
   Trace encoder, Chrome JSON: the file is a JSON array of events ("[" ...
   "]"), the form both the Perfetto UI and chrome://tracing open when the
   closing "]" is missing, so a run killed at any moment leaves a file they
   open as it is. A block's events are formatted into gpuprof__trace.wbuf and
   written one write() per chunk of whole events.
   ---------------------------------------------------------------------- */
static char *gpuprof__trace_head(char *p, const char *ph, uint32_t tid) {
    p = gpuprof__put_s(p, ",\n{\"ph\":\"");
    p = gpuprof__put_s(p, ph);
    p = gpuprof__put_s(p, "\",\"pid\":");
    if (gpuprof__run.trace_pid < 0) { *p++ = '-'; p = gpuprof__put_u64(p, (uint64_t)-(int64_t)gpuprof__run.trace_pid); }
    else p = gpuprof__put_u64(p, (uint64_t)gpuprof__run.trace_pid);
    p = gpuprof__put_s(p, ",\"tid\":");
    return gpuprof__put_u64(p, tid);
}

/* A process killed inside write() leaves the file cut at a page boundary
   (the kernel copies page by page and stops at a fatal signal). So no event
   may straddle a 4 KiB file offset: one that would is pushed past it with
   spaces, and any cut falls between two events. */
static GPUPROF__NOINLINE char *gpuprof__trace_pad(uint64_t a, char *start, char *end) {
    size_t pad = (size_t)(4096 - a % 4096);
    memmove(start + pad, start, (size_t)(end - start));
    memset(start, ' ', pad);
    return end + pad;
}
GPUPROF__INLINE char *gpuprof__trace_fit(const gpuprof__tout *o, const char *buf, char *start, char *end) {
    uint64_t a = o->off + (uint64_t)(start - buf), b = a + (uint64_t)(end - start);
    if (GPUPROF__UNLIKELY(((a ^ (b - 1)) >> 12) != 0 && (b & 4095) != 0)) return gpuprof__trace_pad(a, start, end);
    return end;
}

/* The metadata naming a track (a thread, or a GPU stream) and ordering it. */
static char *gpuprof__trace_track_meta(char *p, uint32_t tid, const char *label, uint64_t sort_index) {
    p = gpuprof__trace_head(p, "M", tid);
    p = gpuprof__put_s(p, ",\"name\":\"thread_name\",\"args\":{\"name\":");
    p += gpuprof__json_escape(p, label, strlen(label));
    p = gpuprof__put_s(p, "}}");
    p = gpuprof__trace_head(p, "M", tid);
    p = gpuprof__put_s(p, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
    p = gpuprof__put_u64(p, sort_index);
    return gpuprof__put_s(p, "}}");
}

/* A JSON number (9 significant digits), or null for NaN and infinities. */
static char *gpuprof__put_num(char *p, double v) {
    if (!gpuprof__finite(v)) return gpuprof__put_s(p, "null");
    return p + gpuprof__fmt(p, 40, "%.9g", v);
}

/* The rest of a complete event after its category: name, ts, dur, args
   (warm-up; the work of a GPUPROF_RANGE_WORK range with the rates achieved
   in this event's measured duration). */
GPUPROF__INLINE char *gpuprof__trace_span(char *p, const gpuprof__name *nm, uint64_t ts, uint64_t dur, int flags) {
    if (GPUPROF__LIKELY(nm->json_len <= GPUPROF__JSON_PAD)) memcpy(p, nm->json, GPUPROF__JSON_PAD);   /* one fixed-size copy */
    else memcpy(p, nm->json, nm->json_len);
    p += nm->json_len;
    memcpy(p, ",\"ts\":", 6);
    p = gpuprof__put_us(p + 6, ts);
    memcpy(p, ",\"dur\":", 7);
    p = gpuprof__put_us(p + 7, dur);
    if (flags & GPUPROF__EVF_WARMUP) p = gpuprof__put_s(p, ",\"args\":{\"warmup\":true}");
    *p++ = '}';
    return p;
}

/* The same with the work of a GPUPROF_RANGE_WORK call in args, and with
   rates (the event measures the call: its GPU event, or its CPU event when
   it has none) from its measured duration, before any drawing nudge. */
static GPUPROF__NOINLINE char *gpuprof__trace_span_work(char *p, const gpuprof__name *nm, uint64_t ts, uint64_t dur, int flags,
                                                        const double *work, int rates, uint64_t measured) {
    double s = measured > 0 ? (double)measured * 1e-9 : 0;
    p = gpuprof__trace_span(p, nm, ts, dur, flags & ~GPUPROF__EVF_WARMUP) - 1;   /* reopened before its '}' */
    p = gpuprof__put_s(p, (flags & GPUPROF__EVF_WARMUP) ? ",\"args\":{\"warmup\":true," : ",\"args\":{");
    /* one number per call: without stb_sprintf gpuprof__fmt turns a locale's ',' into '.' */
    p = gpuprof__put_num(gpuprof__put_s(p, "\"flops\":"), work[0]);
    p = gpuprof__put_num(gpuprof__put_s(p, ",\"bytes\":"), work[1]);
    if (work[1] > 0) p = gpuprof__put_num(gpuprof__put_s(p, ",\"flop_per_byte\":"), work[0] / work[1]);
    if (s > 0 && rates) {
        p = gpuprof__put_num(gpuprof__put_s(p, ",\"flop_per_s\":"), work[0] / s);
        p = gpuprof__put_num(gpuprof__put_s(p, ",\"bytes_per_s\":"), work[1] / s);
    }
    return gpuprof__put_s(p, "}}");
}

#ifdef GPUPROF_CUDA
/* A flow arrow from the CPU range that began a GPU range to it ("s" binds to
   the slice around its ts on the CPU thread, "f" with "bp":"e" to the GPU
   slice around its ts); Perfetto draws it, chrome://tracing too. */
static char *gpuprof__trace_flow(gpuprof__tout *o, char *p, const char *cat, const char *name, uint32_t cpu_tid, uint64_t cpu_ns, uint32_t gpu_tid, uint64_t gpu_ns) {
    uint64_t id = ++o->flows;
    p = gpuprof__trace_head(p, "s", cpu_tid);
    p = gpuprof__put_s(gpuprof__put_s(gpuprof__put_s(gpuprof__put_s(p, ",\"cat\":\""), cat), "\",\"name\":\""), name);
    p = gpuprof__put_s(p, "\",\"id\":");
    p = gpuprof__put_u64(p, id);
    p = gpuprof__put_us(gpuprof__put_s(p, ",\"ts\":"), cpu_ns);
    *p++ = '}';
    p = gpuprof__trace_head(p, "f", gpu_tid);
    p = gpuprof__put_s(gpuprof__put_s(gpuprof__put_s(gpuprof__put_s(p, ",\"bp\":\"e\",\"cat\":\""), cat), "\",\"name\":\""), name);
    p = gpuprof__put_s(p, "\",\"id\":");
    p = gpuprof__put_u64(p, id);
    p = gpuprof__put_us(gpuprof__put_s(p, ",\"ts\":"), gpu_ns);
    *p++ = '}';
    return p;
}
#endif

#ifdef GPUPROF_CUDA
/* A lane of a GPU stream's track: its name, once per output (the lanes
   sorted below their track); returns its tid in *tid. */
static char *gpuprof__trace_gpu_lane(gpuprof__tout *o, char *p, uint32_t track, uint32_t lane, uint32_t *tid) {
    char label[128];
    *tid = GPUPROF__LANE_TID(track, lane);
    if (!gpuprof__lane_unnamed(o, track, lane)) return p;
    return gpuprof__trace_track_meta(p, *tid, gpuprof__lane_label(label, sizeof label, track, lane), 100000 + (uint64_t)track * GPUPROF__LANES + lane);
}

/* The CUDA call that launched captured GPU work, on its CPU thread (Kineto's "cuda_runtime"). */
static char *gpuprof__trace_kapi(char *p, const gpuprof__event *e) {
    uint32_t cbid = e->flags & GPUPROF__KAPI_CBID, driver = e->flags >> 15;
    p = gpuprof__trace_head(p, "X", (uint32_t)(e->u.dur_ns >> 40));
    p = gpuprof__put_s(p, driver ? ",\"cat\":\"cuda_driver\",\"name\":\"" : ",\"cat\":\"cuda_runtime\",\"name\":\"");
    p = gpuprof__put_s(p, gpuprof__kc_call_name(cbid, (int)driver));
    if (!strcmp(gpuprof__kc_call_name(cbid, (int)driver), "CUDA call")) { *p++ = ' '; p = gpuprof__put_u64(p, cbid); }
    p = gpuprof__put_us(gpuprof__put_s(p, "\",\"ts\":"), e->ts);
    p = gpuprof__put_us(gpuprof__put_s(p, ",\"dur\":"), e->u.dur_ns & ((1ull << 40) - 1));
    p = gpuprof__put_u64(gpuprof__put_s(p, ",\"args\":{\"correlation\":"), e->name_id);
    p = gpuprof__put_u64(gpuprof__put_s(p, ",\"cbid\":"), cbid);
    return gpuprof__put_s(p, "}}");
}

static char *gpuprof__put_dim3(char *p, uint64_t x, uint64_t y, uint64_t z) {
    *p++ = '[';
    p = gpuprof__put_u64(p, x);
    *p++ = ',';
    p = gpuprof__put_u64(p, y);
    *p++ = ',';
    p = gpuprof__put_u64(p, z);
    *p++ = ']';
    return p;
}

/* A captured kernel, copy or memset on its stream's track, with Kineto's
   category and arguments, and an arrow from the call that launched it. */
static char *gpuprof__trace_kernel(gpuprof__tout *o, char *p, const gpuprof__event *e, const gpuprof__event *karg) {
    uint32_t track = (uint32_t)e->type >> 4, kind = e->flags & 3u;
    uint64_t ts = e->ts, dur = e->u.dur_ns, api = karg[1].ts;
    uint32_t launcher = karg[1].name_id, kern = karg[0].flags, tid;
    char name[96];
    gpuprof__kfig kf;
    p = gpuprof__trace_gpu_lane(o, p, track, gpuprof__lane_of(o, track, ts, ts + dur, 0), &tid);
    p = gpuprof__trace_head(p, "X", tid);
    if (kind == GPUPROF__KR_KERNEL) {
        p = gpuprof__put_s(p, ",\"cat\":\"kernel\",\"name\":");
        p = gpuprof__put_s(p, kern < GPUPROF__LDA(&gpuprof__kc.nkern) ? gpuprof__kc.kern[kern]->json : "\"(kernel)\"");
    } else {
        p = gpuprof__put_s(p, kind == GPUPROF__KR_MEMCPY ? ",\"cat\":\"gpu_memcpy\",\"name\":\"" : ",\"cat\":\"gpu_memset\",\"name\":\"");
        p = gpuprof__put_s(p, gpuprof__trace_copy_name(name, sizeof name, e));
        *p++ = '"';
    }
    p = gpuprof__put_us(gpuprof__put_s(p, ",\"ts\":"), ts);
    p = gpuprof__put_us(gpuprof__put_s(p, ",\"dur\":"), dur);
    /* Kineto's device and stream (HolisticTraceAnalysis finds GPU work by its stream) */
    p = gpuprof__put_u64(gpuprof__put_s(p, ",\"args\":{\"device\":"), (uint64_t)gpuprof__gpu.track[track].dev);
    {
        uintptr_t sv = (uintptr_t)gpuprof__gpu.track[track].stream;    /* 0x10000 + CUPTI's stream id (gpuprof__kc_track) */
        p = gpuprof__put_s(p, ",\"stream\":");
        p = sv >= 0x10000u ? gpuprof__put_u64(p, (uint64_t)(sv - 0x10000u)) : gpuprof__put_s(p, "-1");   /* the shared last track */
    }
    if (kind == GPUPROF__KR_KERNEL) {
        p = gpuprof__put_dim3(gpuprof__put_s(p, ",\"grid\":"), karg[0].ts & 0xffffffffu, karg[0].ts >> 32, karg[0].u.dur_ns & 0xffffffffu);
        p = gpuprof__put_dim3(gpuprof__put_s(p, ",\"block\":"), karg[0].u.dur_ns >> 32, karg[0].name_id & 0x7ffu, (karg[0].name_id >> 11) & 0x7fu);
        p = gpuprof__put_u64(gpuprof__put_s(p, ",\"registers per thread\":"), karg[0].name_id >> 18);
        p = gpuprof__put_u64(gpuprof__put_s(p, ",\"shared memory\":"), karg[1].u.dur_ns);
        if (gpuprof__trace_kfig(karg, gpuprof__gpu.track[track].dev, &kf))
            p += gpuprof__fmt(p, 160, ",\"blocks per SM\":%.6g,\"warps per SM\":%.6g,\"est. achieved occupancy %%\":%.0f,\"theoretical occupancy %%\":%.0f",
                              kf.blocks_sm, kf.warps_sm, kf.est_pct, kf.occ_pct);
    } else {
        p = gpuprof__put_u64(gpuprof__put_s(p, ",\"bytes\":"), karg[1].u.dur_ns);
        if (kind == GPUPROF__KR_MEMCPY && dur) {
            p = gpuprof__put_s(p, ",\"memory bandwidth (GB/s)\":");
            p += gpuprof__fmt(p, 40, "%.3f", (double)karg[1].u.dur_ns / (double)dur);
        }
    }
    p = gpuprof__put_u64(gpuprof__put_s(p, ",\"correlation\":"), e->name_id);
    p = gpuprof__put_s(p, "}}");
    if (launcher && api >= o->from_ns) {
        /* never back in time: a kernel placed a little before its launch gets the arrow at the launch */
        uint64_t at = ts > api ? ts : api;
        if (at <= ts + dur) p = gpuprof__trace_flow(o, p, "ac2g", "launch", launcher, api, tid, at);
    }
    return p;
}
#endif

#ifdef GPUPROF_CUDA
/* The name of the thread a captured CUDA call ran on, in this output, if
   its own events have not put it there; t: gpuprof's own, writing the call. */
static char *gpuprof__json_calls_meta(const gpuprof__tout *o, gpuprof__thread *t, char *p, uint32_t tid) {
    gpuprof__thread *c;
    if (t->fmt.calls_tid == (int)tid && t->fmt.calls_gen == o->gen) return p;
    t->fmt.calls_tid = (int)tid;
    t->fmt.calls_gen = o->gen;
    if (!(c = gpuprof__trace_named(tid)) || (c->fmt.meta_tid == (int)tid && c->fmt.meta_gen == o->gen)) return p;
    c->fmt.meta_tid = (int)tid;
    c->fmt.meta_gen = o->gen;
    return gpuprof__trace_track_meta(p, tid, c->fmt_label, c->fmt_index);
}
#endif

/* An event other than a CPU range: a counter, a mark, a step and, in CUDA
   builds, a GPU range, a captured CUDA call or kernel. ts and dur in ns. */
static GPUPROF__NOINLINE char *gpuprof__json_other(gpuprof__tout *o, gpuprof__thread *t, char *p, const gpuprof__event *e, int type,
                                                  const gpuprof__name *nm, uint32_t tid, uint64_t ts, uint64_t dur) {
#ifndef GPUPROF_CUDA
    (void)o; (void)t; (void)dur;            /* the GPU events' */
#endif
    switch (type) {
    case GPUPROF__EV_COUNTER:
        p = gpuprof__trace_head(p, "C", tid);
        p = gpuprof__put_s(p, ",\"name\":");
        p = gpuprof__put_s(p, nm->json);
        p = gpuprof__put_s(p, ",\"ts\":");
        p = gpuprof__put_us(p, ts);
        p = gpuprof__put_s(p, ",\"args\":{\"value\":");
        p += gpuprof__fmt(p, 40, "%.9g", e->u.value);
        p = gpuprof__put_s(p, "}}");
        break;
    case GPUPROF__EV_MARK:
        p = gpuprof__trace_head(p, "i", tid);
        p = gpuprof__put_s(p, (e->flags & GPUPROF__EVF_MEM) ? ",\"s\":\"t\",\"cat\":\"memory\",\"name\":" : ",\"s\":\"t\",\"cat\":\"mark\",\"name\":");
        p = gpuprof__put_s(p, nm->json);
        p = gpuprof__put_s(p, ",\"ts\":");
        p = gpuprof__put_us(p, ts);
        *p++ = '}';
        break;
#ifdef GPUPROF_CUDA
    case GPUPROF__EV_GPU: {
        double work[2];
        /* On its stream's track. Ranges that start or end together on the
           GPU (a parent and its first child) would not nest once rounded:
           each is shrunk by its depth in ns at both ends, far below the
           events' 0.5 us resolution. */
        uint32_t track = (uint32_t)e->type >> 4, depth = (uint32_t)e->flags >> 8, lane_tid;
        ts += depth;
        dur = dur > 2 * depth ? dur - 2 * depth : 0;
        p = gpuprof__trace_gpu_lane(o, p, track, gpuprof__lane_of(o, track, ts, ts + dur, 1), &lane_tid);
        p = gpuprof__trace_head(p, "X", lane_tid);
        p = gpuprof__put_s(p, ",\"cat\":\"gpu\",\"name\":");
        if (t->fmt.work_name && gpuprof__trace_work_for(t, e->name_id, work)) p = gpuprof__trace_span_work(p, nm, ts, dur, e->flags, work, 1, e->u.dur_ns);
        else p = gpuprof__trace_span(p, nm, ts, dur, e->flags);
        if (t->fmt.flow_tid) {
            /* The arrow may not point back in time (chrome://tracing
               drops it): a GPU range begun a few ns before its CPU range
               read the clock (its event is recorded first) gets the arrow
               at the CPU range's begin, inside the GPU range. */
            uint64_t at = ts > t->fmt.flow_ns ? ts : t->fmt.flow_ns;
            if (t->fmt.flow_ns >= o->from_ns && at <= ts + dur)
                p = gpuprof__trace_flow(o, p, "flow", "cpu to gpu", (uint32_t)t->fmt.flow_tid, t->fmt.flow_ns, lane_tid, at);
            t->fmt.flow_tid = 0;
        }
        break;
    }
    case GPUPROF__EV_KAPI:
        p = gpuprof__trace_kapi(gpuprof__json_calls_meta(o, t, p, (uint32_t)(e->u.dur_ns >> 40)), e);
        break;
    case GPUPROF__EV_KERNEL:
        p = gpuprof__trace_kernel(o, p, e, t->fmt.karg);
        memset(t->fmt.karg, 0, sizeof t->fmt.karg);
        break;
#endif
    case GPUPROF__EV_STEP:
    default: {
        uint64_t from, no;
        if (gpuprof__trace_step(o, t, e, ts, &from, &no)) {
            /* the slice of the step the last one began (Kineto's name: HolisticTraceAnalysis's iterations) */
            p = gpuprof__trace_head(p, "X", tid);
            p = gpuprof__put_u64(gpuprof__put_s(p, ",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#"), no);
            p = gpuprof__put_us(gpuprof__put_s(p, "\",\"ts\":"), from);
            p = gpuprof__put_us(gpuprof__put_s(p, ",\"dur\":"), ts - from);
            *p++ = '}';
        }
        p = gpuprof__trace_head(p, "i", tid);
        p = gpuprof__put_s(p, ",\"s\":\"p\",\"cat\":\"step\",\"name\":\"step ");
        p = gpuprof__put_u64(p, e->u.step);
        p = gpuprof__put_s(p, "\",\"ts\":");
        p = gpuprof__put_us(p, ts);
        p = gpuprof__put_s(p, ",\"args\":{\"step\":");
        p = gpuprof__put_u64(p, e->u.step);
        p = gpuprof__put_s(p, (e->flags & GPUPROF__EVF_COUNTED) ? ",\"counted\":true}}" : ",\"counted\":false}}");
        break;
    }
    }
    return p;
}

/* The encoder's events: formats events [from, n) of a block and writes
   them; returns the events written. */
static uint32_t gpuprof__json_events(gpuprof__tout *o, gpuprof__block *b, uint32_t from, uint32_t n) {
    char *buf = gpuprof__trace_buf(o), *p = buf + o->staged, range_head[96];
    double work[2];
    gpuprof__thread *t = b->owner;
    uint32_t tid = (uint32_t)b->tid, i, naux = 0;
    size_t range_head_len;
    /* what every complete event of this thread starts with (at most 69
       bytes, copied as 80: one fixed-size copy) */
    memset(range_head, 0, sizeof range_head);
    range_head_len = (size_t)(gpuprof__put_s(gpuprof__trace_head(range_head, "X", tid), ",\"cat\":\"cpu\",\"name\":") - range_head);
    if (b->tid && (t->fmt.meta_tid != b->tid || t->fmt.meta_gen != o->gen)) {    /* tid 0: gpuprof's own, no track of its own */
        char *start = p;
        t->fmt.meta_tid = b->tid;
        t->fmt.meta_gen = o->gen;
        p = gpuprof__trace_track_meta(p, tid, b->label, b->sort_index);
        p = gpuprof__trace_fit(o, buf, start, p);
    }
    for (i = from; i < n; i++) {
        const gpuprof__event *e = &b->ev[i];
        int type = e->type & 15, named = type < GPUPROF__EV_KAPI;    /* the kernel capture's events carry no name id */
        const gpuprof__name *nm = &gpuprof__registry.names[named ? e->name_id : 0];
        uint64_t ts = type == GPUPROF__EV_GPU || !named ? e->ts : gpuprof__ticks_to_ns(e->ts), dur = e->u.dur_ns;
        char *start;
        /* A CPU range's end is converted as a point in time, not as its
           start plus a converted length: rounded so, a child that ends a
           tick before its parent never ends a nanosecond after it. */
        if (type == GPUPROF__EV_RANGE) dur = gpuprof__ticks_to_ns(e->ts + e->u.dur_ticks) - ts;
        if (named && (e->flags & GPUPROF__EVF_NUDGE)) { ts += GPUPROF__NUDGE_NS(e); dur -= GPUPROF__NUDGE_NS(e); }
        if ((size_t)(p - buf) + (named ? nm->len * 6 : GPUPROF__KC_NAME_MAX * 6) + 2048 + 4096 > GPUPROF__WBUF) {
            gpuprof__trace_write(o, buf, (size_t)(p - buf));
            p = buf;
        }
        start = p;
        if (GPUPROF__LIKELY(type == GPUPROF__EV_RANGE)) {
            memcpy(p, range_head, 80);
            if (GPUPROF__UNLIKELY(t->fmt.work_name) && gpuprof__trace_work_for(t, e->name_id, work))
                p = gpuprof__trace_span_work(p + range_head_len, nm, ts, dur, e->flags, work, t->fmt.work_rates,
                                             dur + GPUPROF__NUDGE_NS(e));
            else p = gpuprof__trace_span(p + range_head_len, nm, ts, dur, e->flags);
        } else if (gpuprof__trace_is_aux(type)) {
            naux++;
            gpuprof__trace_aux_hold(t, e, type);
        } else p = gpuprof__json_other(o, t, p, e, type, nm, tid, ts, dur);
        p = gpuprof__trace_fit(o, buf, start, p);
    }
    gpuprof__trace_stage(o, buf, p);
    n = n > from ? n - from - naux : 0;
    GPUPROF__ST(&o->events, o->events + n);      /* a report may read it meanwhile */
    return n;
}

/* The start of a trace file: "[" and the process's name. */
static void gpuprof__json_begin(gpuprof__tout *o) {
    char head[2048], name[96], *p = head;
    size_t n;
    if (gpuprof__run.rank >= 0) snprintf(name, sizeof name, "%.60s (rank %d)", gpuprof__g.process_name, gpuprof__run.rank);
    else snprintf(name, sizeof name, "%.60s", gpuprof__g.process_name);
    n = strlen(name);
    p = gpuprof__put_s(p, "[\n{\"ph\":\"M\",\"pid\":");
    p += snprintf(p, 32, "%d", gpuprof__run.trace_pid);
    p = gpuprof__put_s(p, ",\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":");
    p += gpuprof__json_escape(p, name, n);
    if (gpuprof__run.rank >= 0) {
        /* for tools that put ranks side by side: HTA finds the rank with the
           pattern "rank":\s+N, hence the space after the colon */
        p += snprintf(p, 48, ",\"distributedInfo\": {\"rank\": %d", gpuprof__run.rank);
        if (gpuprof__run.world_size > 0) p += snprintf(p, 48, ", \"world_size\": %d", gpuprof__run.world_size);
        *p++ = '}';
    }
    p = gpuprof__put_s(p, ",\"host\":");
    n = strlen(gpuprof__run.host);
    p += gpuprof__json_escape(p, gpuprof__run.host, n > 200 ? 200 : n);
    p += snprintf(p, 64, ",\"t0_realtime_ns\":%llu}}", (unsigned long long)gpuprof__run.t0_realtime_ns);
    if (gpuprof__run.rank >= 0) {
        p = gpuprof__put_s(p, ",\n{\"ph\":\"M\",\"pid\":");
        p += snprintf(p, 32, "%d", gpuprof__run.trace_pid);
        p += snprintf(p, 96, ",\"tid\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%d}}", gpuprof__run.rank);
    }
    gpuprof__trace_write(o, head, (size_t)(p - head));
}

/* The end of a trace file: what it holds, in the process's labels (shown by
   both viewers) and in args.gpuprof for programs, then "]". window_ns: a
   flight-recorder dump holds every event that began after it. */
static void gpuprof__json_end(gpuprof__tout *o, uint64_t events, uint64_t dropped, uint64_t fell_out, uint64_t window_ns) {
    char tail[768], *p = tail;
    p = gpuprof__trace_head(p, "M", 0);
    p = gpuprof__put_s(p, ",\"name\":\"process_labels\",\"args\":{\"labels\":\"gpuprof " GPUPROF_VERSION ": ");
    p = gpuprof__put_u64(p, events);
    p = gpuprof__put_s(p, " events, ");
    p = gpuprof__put_u64(p, dropped);
    p = gpuprof__put_s(p, " dropped");
    if (fell_out) {
        p = gpuprof__put_s(p, ", flight recorder: from ");
        p = gpuprof__put_us(p, window_ns);
        p = gpuprof__put_s(p, " us on (");
        p = gpuprof__put_u64(p, fell_out);
        p = gpuprof__put_s(p, " older events fell out)");
    }
    p = gpuprof__put_s(p, "\",\"gpuprof\":{\"version\":\"" GPUPROF_VERSION "\",\"events\":");
    p = gpuprof__put_u64(p, events);
    p = gpuprof__put_s(p, ",\"dropped\":");
    p = gpuprof__put_u64(p, dropped);
    p = gpuprof__put_s(p, gpuprof__trace.mode == GPUPROF__TRACE_RING ? ",\"flight_recorder\":true" : ",\"flight_recorder\":false");
    p = gpuprof__put_s(p, ",\"fell_out\":");
    p = gpuprof__put_u64(p, fell_out);
    p = gpuprof__put_s(p, ",\"window_start_us\":");
    p = gpuprof__put_us(p, window_ns);
    p = gpuprof__put_s(p, "}}}\n]\n");
    gpuprof__trace_write(o, tail, (size_t)(p - tail));
}

/* ----------------------------------------------------------------------
   Trace encoder, Perfetto protobuf (SPEC 14): the file is a stream of
   TracePackets, each framed as field 1 of a Trace (byte 0x0a, its length,
   its bytes), so the file is a whole trace after every packet, and a run
   killed inside one loses that packet only. Each thread that recorded
   events is a sequence of its own in an output: its first packet clears
   the sequence's state, interns the categories and argument names, sets
   its defaults (the thread's track, the sequence's clock) and starts that
   clock, an incremental one: an event's timestamp is the nanoseconds since
   the sequence's previous one. Names are interned in the first packet that
   uses them. A slice is a begin and an end packet. Events come in the
   order ranges end, so a parent's begin is earlier than what went before
   it on its sequence: such a timestamp is written on the absolute clock
   (BOOTTIME, ns since the trace's time zero) and leaves the incremental
   one as it was. The viewers sort by time; among equal times they keep
   the file's order, and the recording makes a child start after its parent.
   Field numbers: FACTS-perfetto.md and perfetto's protos/perfetto/trace.
   ---------------------------------------------------------------------- */
#define GPUPROF__PF_CLOCK 64u          /* the sequence-scoped incremental clock */
#define GPUPROF__PF_ABS 6u             /* BOOTTIME: absolute, ns since the trace's time zero */
/* interned event names' ids: a registered name's is its id + 1; the others' in spaces above */
#define GPUPROF__PF_KERN (1ull << 32)  /* + the kernel's index */
#define GPUPROF__PF_CALL (2ull << 32)  /* + cbid | driver << 16 */
#define GPUPROF__PF_COPY (3ull << 32)  /* + the flags that name a copy or memset (gpuprof__trace_copy_name) */
/* tracks: the process's, a thread's (or a GPU stream's, as a thread), a thread's steps, a counter's, a thread's CUDA calls */
enum { GPUPROF__PF_TPROC = 1, GPUPROF__PF_TTHREAD = 2, GPUPROF__PF_TSTEPS = 3, GPUPROF__PF_TCOUNTER = 4, GPUPROF__PF_TCALLS = 5 };
/* interned categories and argument names: their iid is their index + 1 (a CPU range has no
   category: its track says what it is, and the common path writes two bytes fewer) */
enum { GPUPROF__PC_GPU = 1, GPUPROF__PC_KERNEL, GPUPROF__PC_MEMCPY, GPUPROF__PC_MEMSET, GPUPROF__PC_RUNTIME,
       GPUPROF__PC_DRIVER, GPUPROF__PC_MARK, GPUPROF__PC_MEMORY, GPUPROF__PC_STEP, GPUPROF__PC_ANNOTATION };
static const char *const gpuprof__pf_cats[] = { "gpu", "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver",
                                                 "mark", "memory", "step", "user_annotation" };
enum { GPUPROF__PA_WARMUP = 1, GPUPROF__PA_FLOPS, GPUPROF__PA_BYTES, GPUPROF__PA_FPB, GPUPROF__PA_FPS, GPUPROF__PA_BPS,
       GPUPROF__PA_STEP, GPUPROF__PA_COUNTED, GPUPROF__PA_CORR, GPUPROF__PA_CBID, GPUPROF__PA_DEVICE, GPUPROF__PA_STREAM,
       GPUPROF__PA_GRID, GPUPROF__PA_BLOCK, GPUPROF__PA_REGS, GPUPROF__PA_SHARED, GPUPROF__PA_BW, GPUPROF__PA_BLOCKS_SM,
       GPUPROF__PA_WARPS_SM, GPUPROF__PA_EST_OCC, GPUPROF__PA_OCC };
static const char *const gpuprof__pf_args[] = { "warmup", "flops", "bytes", "flop_per_byte", "flop_per_s", "bytes_per_s", "step",
                                                 "counted", "correlation", "cbid", "device", "stream", "grid", "block",
                                                 "registers per thread", "shared memory", "memory bandwidth (GB/s)", "blocks per SM",
                                                 "warps per SM", "est. achieved occupancy %", "theoretical occupancy %" };

/* Protobuf's wire format, written forward into a buffer with room. */
GPUPROF__INLINE char *gpuprof__pb_varint(char *p, uint64_t v) {
    while (v >= 0x80) { *p++ = (char)(v | 0x80); v >>= 7; }
    *p++ = (char)v;
    return p;
}
GPUPROF__INLINE char *gpuprof__pb_uint(char *p, uint32_t field, uint64_t v) {
    return gpuprof__pb_varint(gpuprof__pb_varint(p, (uint64_t)field << 3), v);
}
/* v < 16384 as a varint in the low bytes of the result, without a branch:
   v = a + 128 b (b > 0) is the bytes a | 0x80, b, that is v + 128 b + 128. */
GPUPROF__INLINE uint64_t gpuprof__pb_v2(uint32_t v) {
    uint32_t hi = v & ~0x7fu;
    return (uint64_t)(v + hi + ((uint32_t)(hi != 0) << 7));
}

/* 8 bytes stored little-endian (the wire's order) at p, unaligned. */
GPUPROF__INLINE void gpuprof__st64(char *p, uint64_t w) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    int k;
    for (k = 0; k < 8; k++) p[k] = (char)(w >> (8 * k));
#else
    memcpy(p, &w, 8);
#endif
}

static char *gpuprof__pb_fixed64(char *p, uint32_t field, uint64_t v) {
    p = gpuprof__pb_varint(p, (uint64_t)field << 3 | 1);
    gpuprof__st64(p, v);
    return p + 8;
}
static char *gpuprof__pb_double(char *p, uint32_t field, double v) {
    uint64_t bits;
    memcpy(&bits, &v, 8);
    return gpuprof__pb_fixed64(p, field, bits);
}
static char *gpuprof__pb_bytes(char *p, uint32_t field, const char *s, size_t n) {
    p = gpuprof__pb_varint(gpuprof__pb_varint(p, (uint64_t)field << 3 | 2), n);
    memcpy(p, s, n);
    return p + n;
}
static char *gpuprof__pb_str(char *p, uint32_t field, const char *s) {
    return gpuprof__pb_bytes(p, field, s, strlen(s));
}

/* A length-delimited field whose length is known once written: its tag and
   one byte for the length, returning where its content starts; closed by
   gpuprof__pb_close, which moves the content on when the length needs more. */
GPUPROF__INLINE char *gpuprof__pb_open(char *p, uint32_t field) {
    p = gpuprof__pb_varint(p, (uint64_t)field << 3 | 2);
    return p + 1;
}
static char *gpuprof__pb_close(char *start, char *end) {
    size_t n = (size_t)(end - start), k = 1;
    char tmp[10];
    if (GPUPROF__LIKELY(n < 0x80)) { start[-1] = (char)n; return end; }
    k = (size_t)(gpuprof__pb_varint(tmp, n) - tmp);
    memmove(start + k - 1, start, n);
    memcpy(start - 1, tmp, k);
    return end + k - 1;
}

/* A track's uuid, small (most are one to three bytes on the wire): unique
   in the file; gpuprof-ranks makes them unique across the ranks it merges. */
static uint64_t gpuprof__pf_uuid(int kind, uint64_t id) {
    return (id & 0xffffffffu) << 3 | (uint64_t)kind;
}

/* The process's track: its pid and name, (at the end) a label saying what
   the file holds, and in its description the host, the wall-clock anchor
   (CLOCK_REALTIME at time zero) and the rank. */
static char *gpuprof__pf_process(char *p, const char *end_label) {
    char name[128], lab[320], *pk = gpuprof__pb_open(p, 1), *td, *pd;
    int n;
    if (gpuprof__run.rank >= 0) snprintf(name, sizeof name, "%.60s (rank %d)", gpuprof__g.process_name, gpuprof__run.rank);
    else snprintf(name, sizeof name, "%.60s", gpuprof__g.process_name);
    td = gpuprof__pb_open(pk, 60);
    pd = gpuprof__pb_open(gpuprof__pb_uint(td, 1, gpuprof__pf_uuid(GPUPROF__PF_TPROC, 0)), 3);
    p = gpuprof__pb_uint(pd, 1, (uint32_t)gpuprof__run.trace_pid);
    p = gpuprof__pb_str(p, 6, name);
    if (end_label) p = gpuprof__pb_str(p, 8, end_label);
    p = gpuprof__pb_close(pd, p);
    /* the anchor, for programs (gpuprof-ranks): in the track's description */
    n = snprintf(lab, sizeof lab, "gpuprof " GPUPROF_VERSION "; host=%.200s; t0_realtime_ns=%llu", gpuprof__run.host, (unsigned long long)gpuprof__run.t0_realtime_ns);
    if (gpuprof__run.rank >= 0 && n > 0 && (size_t)n < sizeof lab) n += snprintf(lab + n, sizeof lab - (size_t)n, "; rank=%d", gpuprof__run.rank);
    if (gpuprof__run.world_size > 0 && n > 0 && (size_t)n < sizeof lab) snprintf(lab + n, sizeof lab - (size_t)n, "; world_size=%d", gpuprof__run.world_size);
    p = gpuprof__pb_str(p, 14, lab);
    if (gpuprof__run.rank >= 0) p = gpuprof__pb_uint(p, 12, (uint64_t)gpuprof__run.rank);     /* sibling_order_rank */
    p = gpuprof__pb_close(td, p);
    return gpuprof__pb_close(pk, p);
}

/* The fast path's varints (gpuprof__pf_ranges_fast), for v < 16384: what
   v adds to the word that opens a packet -- its varint's bytes at bytes 3-4,
   1 to the frame's length at byte 1 when it takes two -- and, in the top
   byte, which the next store overwrites, how far that packet's bytes reach
   past it (4 or 5): one load instead of a dozen instructions. 128 KiB, made
   when the first Perfetto output starts. */
static uint64_t gpuprof__pf_vtab[16384];
static pthread_once_t gpuprof__pf_vtab_once = PTHREAD_ONCE_INIT;
static void gpuprof__pf_vtab_make(void) {
    uint32_t v;
    for (v = 0; v < 16384; v++) gpuprof__pf_vtab[v] = gpuprof__pb_v2(v) << 24 | (uint64_t)(v >= 0x80) << 8 | (uint64_t)(4 + (v >= 0x80)) << 56;
}

static void gpuprof__pf_begin(gpuprof__tout *o) {
    char head[1024];
    pthread_once(&gpuprof__pf_vtab_once, gpuprof__pf_vtab_make);
    gpuprof__trace_write(o, head, (size_t)(gpuprof__pf_process(head, NULL) - head));
}

#if GPUPROF__SAMPLES
/* The objects loaded, as the writer of CPU samples knows them (gpuprof__pf_samples). */
static gpuprof__symtab gpuprof__pf_syms;      /* the writer's loaded objects, read again when an address is in none */
#endif

/* The end: the process's track again, its labels saying what the file
   holds (as the JSON trace's process_labels do). */
static void gpuprof__pf_end(gpuprof__tout *o, uint64_t events, uint64_t dropped, uint64_t fell_out, uint64_t window_ns) {
    char tail[1024], lab[256];
    int n = snprintf(lab, sizeof lab, "gpuprof " GPUPROF_VERSION ": %llu events, %llu dropped", (unsigned long long)events, (unsigned long long)dropped);
    if (fell_out && n > 0 && (size_t)n < sizeof lab)
        snprintf(lab + n, sizeof lab - (size_t)n, ", flight recorder: from %.3f us on (%llu older events fell out)", (double)window_ns / 1e3,
                 (unsigned long long)fell_out);
    gpuprof__trace_write(o, tail, (size_t)(gpuprof__pf_process(tail, lab) - tail));
    GPUPROF_FREE(o->pf_ctr);
    GPUPROF_FREE(o->pf_tids);
    GPUPROF_FREE(o->pf_begins);
    GPUPROF_FREE(o->pf_lane);
#if GPUPROF__SAMPLES
    gpuprof__sym_close(&gpuprof__pf_syms);      /* read again when a sample next needs it */
#endif
    o->pf_ctr = NULL;
    o->pf_tids = NULL;
    o->pf_begins = NULL;
    o->pf_lane = NULL;
    o->pf_nctr = o->pf_ntids = o->pf_ctids = 0;
}

/* The entry of tid among the thread tracks of the output: tid << 3 | 1
   its track named | 2 its track written | 4 its "CUDA calls" track written;
   added if need be; -1 when out of memory. */
static int gpuprof__pf_tid_slot(gpuprof__tout *o, uint32_t tid) {
    uint32_t i;
    for (i = 0; i < o->pf_ntids; i++) if (o->pf_tids[i] >> 3 == tid) return (int)i;
    if (o->pf_ntids == o->pf_ctids) {
        uint32_t c = o->pf_ctids ? 2 * o->pf_ctids : 16, *nt = (uint32_t *)gpuprof__alloc(c * sizeof *nt);
        if (!nt) return -1;
        if (o->pf_ntids) memcpy(nt, o->pf_tids, o->pf_ntids * sizeof *nt);
        GPUPROF_FREE(o->pf_tids);
        o->pf_tids = nt;
        o->pf_ctids = c;
    }
    o->pf_tids[o->pf_ntids] = tid << 3;
    return (int)o->pf_ntids++;
}

/* A thread's track (or a GPU stream's, shown as a thread), once per output;
   label NULL: a thread known only by its tid (a CUDA call's launching
   thread) until its own events name it. */
static char *gpuprof__pf_thread_track(gpuprof__tout *o, char *p, uint32_t tid, const char *label) {
    char *pk, *td, *th;
    int i = gpuprof__pf_tid_slot(o, tid);
    if (i < 0 || (o->pf_tids[i] & 1) || (!label && (o->pf_tids[i] & 2))) return p;
    o->pf_tids[i] |= label ? 3u : 2u;
    pk = gpuprof__pb_open(p, 1);
    td = gpuprof__pb_open(pk, 60);
    p = gpuprof__pb_uint(td, 1, gpuprof__pf_uuid(GPUPROF__PF_TTHREAD, tid));
    th = gpuprof__pb_open(p, 4);
    p = gpuprof__pb_uint(th, 1, (uint32_t)gpuprof__run.trace_pid);
    p = gpuprof__pb_uint(p, 2, tid);
    if (label) p = gpuprof__pb_str(p, 5, label);
    p = gpuprof__pb_close(th, p);
    p = gpuprof__pb_close(td, p);
    return gpuprof__pb_close(pk, p);
}

#ifdef GPUPROF_CUDA
/* A thread's "CUDA calls" track (captured CUDA calls: gpuprof's own
   sequence writes them, late, so they get a track beside the thread's own
   ranges rather than ties with them), once per output. */
static char *gpuprof__pf_calls_track(gpuprof__tout *o, char *p, uint32_t tid) {
    char *pk, *td;
    int i = gpuprof__pf_tid_slot(o, tid);
    if (i >= 0 && !(o->pf_tids[i] & 1)) {   /* the thread's own events have not named its track here */
        const gpuprof__thread *c = gpuprof__trace_named(tid);
        p = gpuprof__pf_thread_track(o, p, tid, c ? c->fmt_label : NULL);
    }
    if (i < 0 || (o->pf_tids[i] & 4)) return p;
    o->pf_tids[i] |= 4;
    pk = gpuprof__pb_open(p, 1);
    td = gpuprof__pb_open(pk, 60);
    p = gpuprof__pb_uint(gpuprof__pb_uint(td, 1, gpuprof__pf_uuid(GPUPROF__PF_TCALLS, tid)), 5, gpuprof__pf_uuid(GPUPROF__PF_TTHREAD, tid));
    p = gpuprof__pb_str(p, 2, "CUDA calls");
    return gpuprof__pb_close(pk, gpuprof__pb_close(td, p));
}
#endif

/* A counter's track (a process counter, named as the counter), once per output. */
static char *gpuprof__pf_counter_track(gpuprof__tout *o, char *p, uint32_t name_id, const gpuprof__name *nm) {
    char *pk, *td;
    if (name_id >= o->pf_nctr) {
        uint32_t c = name_id + 64;
        unsigned char *nc = (unsigned char *)gpuprof__alloc(c);
        if (!nc) return p;
        memset(nc, 0, c);
        if (o->pf_nctr) memcpy(nc, o->pf_ctr, o->pf_nctr);
        GPUPROF_FREE(o->pf_ctr);
        o->pf_ctr = nc;
        o->pf_nctr = c;
    }
    if (o->pf_ctr[name_id]) return p;
    o->pf_ctr[name_id] = 1;
    pk = gpuprof__pb_open(p, 1);
    td = gpuprof__pb_open(pk, 60);
    p = gpuprof__pb_uint(td, 1, gpuprof__pf_uuid(GPUPROF__PF_TCOUNTER, name_id));
    p = gpuprof__pb_uint(p, 5, gpuprof__pf_uuid(GPUPROF__PF_TPROC, 0));
    p = gpuprof__pb_bytes(p, 2, nm->text, nm->len);
    *p++ = (char)(8 << 3 | 2);                /* counter: {} */
    *p++ = 0;
    p = gpuprof__pb_close(td, p);
    return gpuprof__pb_close(pk, p);
}

/* A thread's sequence in this output: begun at its first events in it
   (or when its state passed to another thread): its track, then a packet
   that clears the sequence's state, interns the categories and argument
   names, sets the defaults and starts the incremental clock at 0. */
static char *gpuprof__pf_seq_start(gpuprof__tout *o, gpuprof__pfseq *s, char *p, int tid, const char *label) {
    char *pk, *f, *g;
    uint32_t i;
    s->seq = ++gpuprof__trace.pf_seqs;            /* never reused while the process runs: stale interning marks never match */
    s->gen = o->gen;
    s->tid = tid;
    s->last = 0;
    if (s->other) memset(s->other, 0, s->cother * sizeof *s->other);
    s->nother = 0;
    memset(s->fast, 0, sizeof s->fast);
    s->head_len = (uint32_t)(gpuprof__pb_uint(s->head, 10, s->seq) - s->head);
    if (tid) p = gpuprof__pf_thread_track(o, p, (uint32_t)tid, label);
    pk = gpuprof__pb_open(p, 1);
    p = gpuprof__pb_uint(pk, 10, s->seq);
    p = gpuprof__pb_uint(p, 13, 3);          /* SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE */
    f = gpuprof__pb_open(p, 12);              /* interned_data */
    p = f;
    for (i = 0; i < sizeof gpuprof__pf_cats / sizeof *gpuprof__pf_cats; i++) {
        g = gpuprof__pb_open(p, 1);
        p = gpuprof__pb_str(gpuprof__pb_uint(g, 1, i + 1), 2, gpuprof__pf_cats[i]);
        p = gpuprof__pb_close(g, p);
    }
    for (i = 0; i < sizeof gpuprof__pf_args / sizeof *gpuprof__pf_args; i++) {
        g = gpuprof__pb_open(p, 3);
        p = gpuprof__pb_str(gpuprof__pb_uint(g, 1, i + 1), 2, gpuprof__pf_args[i]);
        p = gpuprof__pb_close(g, p);
    }
    p = gpuprof__pb_close(f, p);
    f = gpuprof__pb_open(p, 59);              /* trace_packet_defaults */
    p = gpuprof__pb_uint(f, 58, GPUPROF__PF_CLOCK);
    g = gpuprof__pb_open(p, 11);
    p = gpuprof__pb_uint(g, 11, tid ? gpuprof__pf_uuid(GPUPROF__PF_TTHREAD, (uint32_t)tid) : gpuprof__pf_uuid(GPUPROF__PF_TPROC, 0));
    p = gpuprof__pb_close(g, p);
    p = gpuprof__pb_close(f, p);
    f = gpuprof__pb_open(p, 6);               /* clock_snapshot: the incremental clock and BOOTTIME, both 0 now */
    g = gpuprof__pb_open(f, 1);
    p = gpuprof__pb_uint(gpuprof__pb_uint(gpuprof__pb_uint(gpuprof__pb_uint(g, 1, GPUPROF__PF_CLOCK), 2, 0), 3, 1), 4, 1);
    p = gpuprof__pb_close(g, p);
    g = gpuprof__pb_open(p, 1);
    p = gpuprof__pb_uint(gpuprof__pb_uint(g, 1, GPUPROF__PF_ABS), 2, 0);
    p = gpuprof__pb_close(g, p);
    p = gpuprof__pb_close(f, p);
    return gpuprof__pb_close(pk, p);
}

/* Opens a packet at ts (ns) on s's sequence: the timestamp as a delta on
   the incremental clock, or, earlier than the sequence's last, on the
   absolute clock; *pk: where the packet's content starts. */
GPUPROF__INLINE char *gpuprof__pf_head(gpuprof__pfseq *s, char *p, uint64_t ts, char **pk) {
    *p++ = 0x0a;
    *pk = ++p;
    if (GPUPROF__LIKELY(ts >= s->last)) {
        *p++ = 0x40;                          /* timestamp */
        p = gpuprof__pb_varint(p, ts - s->last);
        s->last = ts;
    } else {
        p = gpuprof__pb_uint(p, 58, GPUPROF__PF_ABS);
        *p++ = 0x40;
        p = gpuprof__pb_varint(p, ts);
    }
    memcpy(p, s->head, 8);                    /* trusted_packet_sequence_id */
    return p + s->head_len;
}

/* A registered name interned on this sequence already? Marks it so when not. */
static int gpuprof__pf_name_seen(gpuprof__pfseq *s, uint32_t id) {
    if (id >= s->niid) {
        uint32_t c = id + 1 > 2 * s->niid ? id + 256 : 2 * s->niid, *nt = (uint32_t *)gpuprof__alloc(c * sizeof *nt);
        if (!nt) return -1;
        memset(nt, 0, c * sizeof *nt);
        if (s->niid) memcpy(nt, s->iid, s->niid * sizeof *nt);
        GPUPROF_FREE(s->iid);
        s->iid = nt;
        s->niid = c;
    }
    if (s->iid[id] == s->seq) return 1;
    s->iid[id] = s->seq;
    return 0;
}

/* The name of an event, as an interned id, sent in this packet the first
   time on the sequence (*p is inside the packet, before the track event).
   seen: gpuprof__pf_name_seen's or gpuprof__pf_other's answer (1 interned
   already, 0 not yet, -1 no room to remember it). Returns the iid, or 0:
   the event carries the name itself (gpuprof__pf_put_name). */
static uint64_t gpuprof__pf_name(char **p, int seen, uint64_t iid, const char *text, size_t n) {
    char *f, *g, *q;
    if (seen == 1) return iid;
    if (seen < 0) return 0;
    f = gpuprof__pb_open(*p, 12);
    g = gpuprof__pb_open(f, 2);
    q = gpuprof__pb_bytes(gpuprof__pb_uint(g, 1, iid), 2, text, n);
    q = gpuprof__pb_close(g, q);
    *p = gpuprof__pb_close(f, q);
    return iid;
}

/* A track event's name: name_iid, or the name itself. */
static char *gpuprof__pf_put_name(char *p, uint64_t iid, const char *text, size_t n) {
    return iid ? gpuprof__pb_uint(p, 10, iid) : gpuprof__pb_bytes(p, 23, text, n);
}

/* A debug annotation with an interned name and a varint value: field 2
   for a bool, 3 an unsigned, 4 a signed integer. */
enum { GPUPROF__PF_BOOL = 2, GPUPROF__PF_UINT = 3, GPUPROF__PF_INT = 4 };
static char *gpuprof__pf_arg_v(char *p, int name, int field, uint64_t v) {
    char *a = gpuprof__pb_open(p, 4);
    return gpuprof__pb_close(a, gpuprof__pb_uint(gpuprof__pb_uint(a, 1, (uint64_t)name), (uint32_t)field, v));
}
static char *gpuprof__pf_arg_d(char *p, int name, double v) {
    char *a = gpuprof__pb_open(p, 4);
    return gpuprof__pb_close(a, gpuprof__pb_double(gpuprof__pb_uint(a, 1, (uint64_t)name), 5, v));
}

/* A range's work (GPUPROF_RANGE_WORK), with rates over its measured time. */
static char *gpuprof__pf_work(char *p, const double *work, int rates, uint64_t measured) {
    double s = measured > 0 ? (double)measured * 1e-9 : 0;
    p = gpuprof__pf_arg_d(p, GPUPROF__PA_FLOPS, work[0]);
    p = gpuprof__pf_arg_d(p, GPUPROF__PA_BYTES, work[1]);
    if (work[1] > 0) p = gpuprof__pf_arg_d(p, GPUPROF__PA_FPB, work[0] / work[1]);
    if (s > 0 && rates) {
        p = gpuprof__pf_arg_d(p, GPUPROF__PA_FPS, work[0] / s);
        p = gpuprof__pf_arg_d(p, GPUPROF__PA_BPS, work[1] / s);
    }
    return p;
}

/* The flow id of a CPU range (its thread, begin in ns, name) toward its
   GPU range (a hash: both ends compute it, each from its own record; the
   name tells a parent from a child begun in the same ns), and of a CUDA
   call toward the work it launched (its correlation id). */
static uint64_t gpuprof__pf_flow_cpu(uint32_t tid, uint64_t ns, uint32_t name_id) {
    uint64_t h = (ns ^ ((uint64_t)tid << 40)) * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 29) ^ name_id) * 0xBF58476D1CE4E5B9ull;
    return (h ^ (h >> 32)) & ~(1ull << 63);
}
#define GPUPROF__PF_FLOW_CALL(corr) ((1ull << 63) | (uint64_t)(corr))

/* A slice's end: an end packet on the track (0: the sequence's default). */
GPUPROF__INLINE char *gpuprof__pf_end_slice(gpuprof__pfseq *s, char *p, uint64_t ts, uint64_t track, uint64_t flow_in) {
    char *pk, *te;
    p = gpuprof__pf_head(s, p, ts, &pk);
    te = gpuprof__pb_open(p, 11);
    te[0] = 0x48;                             /* type: SLICE_END */
    te[1] = 2;
    p = te + 2;
    if (track) p = gpuprof__pb_uint(p, 11, track);
    if (flow_in) p = gpuprof__pb_fixed64(p, 48, flow_in);
    return gpuprof__pb_close(pk, gpuprof__pb_close(te, p));
}

/* Opens an event at ts: a slice's begin (type 1), an instant (3) or a
   counter value (4): the packet's head, its name interned first if need be
   (text NULL: no name), the track event's type and name. *pk and *te: where
   the packet's and the track event's contents start (GPUPROF__PF_CLOSE). */
static char *gpuprof__pf_event(gpuprof__pfseq *s, char *p, uint64_t ts, char **pk, char **te, int type, int seen, uint64_t iid,
                               const char *text, size_t n) {
    p = gpuprof__pf_head(s, p, ts, pk);
    if (text) iid = gpuprof__pf_name(&p, seen, iid, text, n);
    *te = gpuprof__pb_open(p, 11);
    p = gpuprof__pb_uint(*te, 9, (uint64_t)type);
    return text ? gpuprof__pf_put_name(p, iid, text, n) : p;
}
#define GPUPROF__PF_CLOSE(pk, te, p) gpuprof__pb_close(pk, gpuprof__pb_close(te, p))

/* A CPU range with more than a name: warm-up, work, a GPU part (the flow's
   start: its GPU range ends it). ts: its begin, the nudge applied. */
static GPUPROF__NOINLINE char *gpuprof__pf_range_more(gpuprof__pfseq *s, gpuprof__thread *t, char *p, const gpuprof__event *e,
                                                      const gpuprof__name *nm, uint32_t tid, uint64_t ts, uint64_t end) {
    char *pk, *te;
    double work[2];
    const double *w = t->fmt.work_name ? gpuprof__trace_work_for(t, e->name_id, work) : NULL;
    p = gpuprof__pf_event(s, p, ts, &pk, &te, 1, gpuprof__pf_name_seen(s, e->name_id), e->name_id + 1ull, nm->text, nm->len);
    if (e->flags & GPUPROF__EVF_GPU_PART) p = gpuprof__pb_fixed64(p, 47, gpuprof__pf_flow_cpu(tid, gpuprof__ticks_to_ns(e->ts), e->name_id));
    if (e->flags & GPUPROF__EVF_WARMUP) p = gpuprof__pf_arg_v(p, GPUPROF__PA_WARMUP, GPUPROF__PF_BOOL, 1);
    if (w) p = gpuprof__pf_work(p, w, t->fmt.work_rates, end - ts + GPUPROF__NUDGE_NS(e));
    p = GPUPROF__PF_CLOSE(pk, te, p);
    return gpuprof__pf_end_slice(s, p, end, 0, 0);
}

/* A step: an instant on the process's track ("step N"), and, when the step
   before it was marked on this thread outside any range, the slice from
   that one to this, "ProfilerStep#N" (Kineto's name), on a track "steps"
   of the thread's: begun after the ranges inside it were written, on the
   thread's own track it could not nest them. ts: the step's time. */
static char *gpuprof__pf_step(gpuprof__tout *o, gpuprof__pfseq *s, gpuprof__thread *t, char *p, const gpuprof__event *e, uint64_t ts) {
    char *pk, *te, name[48];
    uint64_t from, no;
    int n;
    if (gpuprof__trace_step(o, t, e, ts, &from, &no)) {
        uint64_t uuid = gpuprof__pf_uuid(GPUPROF__PF_TSTEPS, (uint32_t)s->tid);
        if (t->fmt.step_track != o->gen) {
            char *td;
            t->fmt.step_track = o->gen;
            pk = gpuprof__pb_open(p, 1);
            td = gpuprof__pb_open(pk, 60);
            p = gpuprof__pb_uint(gpuprof__pb_uint(td, 1, uuid), 5, gpuprof__pf_uuid(GPUPROF__PF_TTHREAD, (uint32_t)s->tid));
            p = gpuprof__pb_str(p, 2, "steps");
            p = gpuprof__pb_close(pk, gpuprof__pb_close(td, p));
        }
        n = snprintf(name, sizeof name, "ProfilerStep#%llu", (unsigned long long)no);
        p = gpuprof__pf_event(s, p, from, &pk, &te, 1, -1, 0, name, (size_t)n);
        p = gpuprof__pb_uint(gpuprof__pb_uint(p, 3, GPUPROF__PC_ANNOTATION), 11, uuid);
        p = gpuprof__pf_end_slice(s, GPUPROF__PF_CLOSE(pk, te, p), ts, uuid, 0);
    }
    n = snprintf(name, sizeof name, "step %llu", (unsigned long long)e->u.step);
    p = gpuprof__pf_event(s, p, ts, &pk, &te, 3, -1, 0, name, (size_t)n);
    p = gpuprof__pb_uint(gpuprof__pb_uint(p, 3, GPUPROF__PC_STEP), 11, gpuprof__pf_uuid(GPUPROF__PF_TPROC, 0));
    p = gpuprof__pf_arg_v(p, GPUPROF__PA_STEP, GPUPROF__PF_UINT, e->u.step);
    p = gpuprof__pf_arg_v(p, GPUPROF__PA_COUNTED, GPUPROF__PF_BOOL, (e->flags & GPUPROF__EVF_COUNTED) ? 1 : 0);
    return GPUPROF__PF_CLOSE(pk, te, p);
}

#ifdef GPUPROF_CUDA
/* An interned id of a name other than a registered one, this sequence's
   already? Marks it so when not (a set of ids; 0 when full: sent inline). */
static int gpuprof__pf_other(gpuprof__pfseq *s, uint64_t iid) {
    uint32_t i;
    if (s->nother * 2 >= s->cother) {
        uint32_t c = s->cother ? 2 * s->cother : 64, k;
        uint64_t *nt = (uint64_t *)gpuprof__alloc(c * sizeof *nt);
        if (!nt) return -1;
        memset(nt, 0, c * sizeof *nt);
        for (k = 0; k < s->cother; k++)
            if (s->other[k]) {
                for (i = (uint32_t)(s->other[k] * 0x9E3779B97F4A7C15ull >> 40) & (c - 1); nt[i]; i = (i + 1) & (c - 1)) {}
                nt[i] = s->other[k];
            }
        GPUPROF_FREE(s->other);
        s->other = nt;
        s->cother = c;
    }
    for (i = (uint32_t)(iid * 0x9E3779B97F4A7C15ull >> 40) & (s->cother - 1); s->other[i]; i = (i + 1) & (s->cother - 1))
        if (s->other[i] == iid) return 1;
    s->other[i] = iid;
    s->nother++;
    return 0;
}

static char *gpuprof__pf_arg_s(char *p, int name, const char *v) {
    char *a = gpuprof__pb_open(p, 4);
    return gpuprof__pb_close(a, gpuprof__pb_str(gpuprof__pb_uint(a, 1, (uint64_t)name), 6, v));
}

/* GPU work comes in any order (GPU ranges as their events are read,
   captured work and CUDA calls as CUPTI hands its buffers over), and the
   viewers keep the file's order among equal times: a slice ending when a
   slice written before it begins would close that one. So the ends of a
   block's GPU slices and CUDA calls are written first (gpuprof__pf_gpu_ends), their begins after, and
   on a stream's track an end comes before a begin at the same time. An end
   meeting the begin of an earlier pass (work that came late) is written
   1 ns earlier. A slice of no length has its begin and its end in the
   second pass. */

#define GPUPROF__PF_BEGINS 65536           /* 16384 sets of 4: 512 KiB, an output with GPU events only */

/* A begin at ts on a track of late events (its uuid), remembered; or
   whether one was written (mark 0). The ends of a later pass that would
   meet one end 1 ns earlier. A cache: a set forgets its oldest of 4. */
static int gpuprof__pf_begun(gpuprof__tout *o, uint64_t uuid, uint64_t ts, int mark) {
    uint64_t key = (ts ^ (uuid * 0xBF58476D1CE4E5B9ull)) * 0x9E3779B97F4A7C15ull, *set;
    int i;
    key = (key ^ (key >> 31)) | 1;             /* 0: an empty slot */
    if (!o->pf_begins) {
        if (!mark || !(o->pf_begins = (uint64_t *)gpuprof__alloc(GPUPROF__PF_BEGINS * sizeof *o->pf_begins))) return 0;
        memset(o->pf_begins, 0, GPUPROF__PF_BEGINS * sizeof *o->pf_begins);
    }
    set = &o->pf_begins[(key >> 50) * 4];
    for (i = 0; i < 4; i++) if (set[i] == key) return 1;
    if (mark) {
        memmove(set + 1, set, 3 * sizeof *set);
        set[0] = key;
    }
    return 0;
}

/* A late slice's begin and end in ns: a GPU range shrunk by its depth at
   both ends (as in the JSON trace), captured work and a CUDA call as they
   were recorded. */
static void gpuprof__pf_late_times(const gpuprof__event *e, int type, uint64_t *ts, uint64_t *end) {
    uint32_t depth = type == GPUPROF__EV_GPU ? (uint32_t)e->flags >> 8 : 0;
    uint64_t dur = type == GPUPROF__EV_KAPI ? e->u.dur_ns & ((1ull << 40) - 1) : e->u.dur_ns;
    *ts = e->ts + depth;
    *end = *ts + (dur > 2 * depth ? dur - 2 * depth : 0);
}

/* A late slice's track (its uuid), begin and end in ns, its track's
   descriptor written first if need be: a GPU range or captured work on
   lane `lane` of its stream's track, a CUDA call on its thread's "CUDA
   calls" track. */
static char *gpuprof__pf_late_span(gpuprof__tout *o, char *p, const gpuprof__event *e, int type, uint32_t lane, uint64_t *uuid, uint64_t *ts, uint64_t *end) {
    uint32_t track = (uint32_t)e->type >> 4, gtid = GPUPROF__LANE_TID(track, lane);
    char label[128];
    int slot;
    gpuprof__pf_late_times(e, type, ts, end);
    if (type == GPUPROF__EV_KAPI) {
        uint32_t tid = (uint32_t)(e->u.dur_ns >> 40);
        *uuid = gpuprof__pf_uuid(GPUPROF__PF_TCALLS, tid);
        return gpuprof__pf_calls_track(o, p, tid);
    }
    *uuid = gpuprof__pf_uuid(GPUPROF__PF_TTHREAD, gtid);
    if ((slot = gpuprof__pf_tid_slot(o, gtid)) >= 0 && (o->pf_tids[slot] & 1)) return p;   /* named already: no label to make */
    return gpuprof__pf_thread_track(o, p, gtid, gpuprof__lane_label(label, sizeof label, track, lane));
}

/* The lane of a block's next GPU slice: the first pass chooses it
   (gpuprof__lane_of) and keeps it for the second, which takes them in the
   same order. No room to keep them: lane 0 in both. */
static uint32_t gpuprof__pf_lane(gpuprof__tout *o, const gpuprof__event *e, int type, int first) {
    uint64_t ts, end;
    uint32_t lane;
    if (!o->pf_lane) return 0;
    if (!first) return o->pf_lane[o->pf_nlane++];
    gpuprof__pf_late_times(e, type, &ts, &end);
    lane = gpuprof__lane_of(o, (uint32_t)e->type >> 4, ts, end, type == GPUPROF__EV_GPU);
    o->pf_lane[o->pf_nlane++] = (unsigned char)lane;
    return lane;
}

/* A call's arrow to each piece of work it launched (a graph launch: many):
   a flow bound as the legacy event's (bind_id, flow_direction): FLOW_OUT
   on the call, FLOW_IN on each piece. Perfetto's reader draws an arrow
   from the call to each FLOW_IN and keeps the flow open (flow_ids would
   chain the pieces one to the next, terminating_flow_ids end it at the
   first). */
enum { GPUPROF__PF_FLOW_IN = 1, GPUPROF__PF_FLOW_OUT = 2 };
static char *gpuprof__pf_bind(char *p, uint64_t id, int dir) {
    char *l = gpuprof__pb_open(p, 6);
    return gpuprof__pb_close(l, gpuprof__pb_uint(gpuprof__pb_uint(l, 8, id), 13, (uint64_t)dir));
}

/* A piece of work's end on its lane, the call's arrow ending there when
   the piece began before the call (bind: its id; 0 none). */
static char *gpuprof__pf_end_bound(gpuprof__pfseq *s, char *p, uint64_t ts, uint64_t track, uint64_t bind) {
    char *pk, *te;
    p = gpuprof__pf_head(s, p, ts, &pk);
    te = gpuprof__pb_open(p, 11);
    p = gpuprof__pb_uint(gpuprof__pb_uint(te, 9, 2), 11, track);          /* type: SLICE_END */
    if (bind) p = gpuprof__pf_bind(p, bind, GPUPROF__PF_FLOW_IN);
    return gpuprof__pb_close(pk, gpuprof__pb_close(te, p));
}

/* The flow a GPU range ends (from the CPU range that began it: the FLOW
   record before it): 0 when none, or when its CPU range is outside a
   flight-recorder dump's window or began after it ended (the JSON trace's
   rule); *at_end: on its end, the GPU range having begun before its CPU
   range's begin, or with it (the viewers would meet the flow's end first). */
static uint64_t gpuprof__pf_gpu_flow(const gpuprof__tout *o, int flow_tid, uint64_t flow_ns, uint32_t flow_name, uint64_t ts, uint64_t end, int *at_end) {
    *at_end = ts <= flow_ns + 1;               /* + 1: a CPU range may begin 1 ns late (a nudged child) */
    if (!flow_tid || flow_ns < o->from_ns || flow_ns > end) return 0;
    return gpuprof__pf_flow_cpu((uint32_t)flow_tid, flow_ns, flow_name);
}

/* The flow captured work ends (from the CUDA call that launched it: its KB
   record), as gpuprof__pf_gpu_flow. */
static uint64_t gpuprof__pf_kernel_flow(const gpuprof__tout *o, const gpuprof__event *e, const gpuprof__event *kb, uint64_t ts, uint64_t end, int *at_end) {
    *at_end = ts <= kb->ts;
    if (!kb->name_id || kb->ts < o->from_ns || kb->ts > end) return 0;
    return GPUPROF__PF_FLOW_CALL(e->name_id);
}

/* The first pass over a block's events [from, n): the ends of its GPU
   slices, following the FLOW and KB records as the second pass will. */
static char *gpuprof__pf_gpu_ends(gpuprof__tout *o, gpuprof__pfseq *s, const gpuprof__thread *t, const gpuprof__block *b,
                                  uint32_t from, uint32_t n, char *p) {
    int flow_tid = t->fmt.flow_tid, at_end = 0;
    uint64_t flow_ns = t->fmt.flow_ns, ts, end, flow = 0, uuid;
    uint32_t flow_name = t->fmt.flow_name, i;
    gpuprof__event kb = t->fmt.karg[1];
    o->pf_nlane = 0;
    for (i = from; i < n; i++) {
        const gpuprof__event *e = &b->ev[i];
        int type = e->type & 15;
        if (type == GPUPROF__EV_FLOW) {
            flow_tid = (int)e->u.dur_ns;
            flow_ns = gpuprof__ticks_to_ns(e->ts);
            flow_name = e->name_id;
        } else if (type == GPUPROF__EV_KB) kb = *e;
        else if (type == GPUPROF__EV_GPU || type == GPUPROF__EV_KERNEL || type == GPUPROF__EV_KAPI) {
            p = gpuprof__pf_late_span(o, p, e, type, type == GPUPROF__EV_KAPI ? 0 : gpuprof__pf_lane(o, e, type, 1), &uuid, &ts, &end);
            if (type == GPUPROF__EV_GPU) flow = gpuprof__pf_gpu_flow(o, flow_tid, flow_ns, flow_name, ts, end, &at_end);
            if (type == GPUPROF__EV_KERNEL) flow = gpuprof__pf_kernel_flow(o, e, &kb, ts, end, &at_end);
            if (end > ts + 1 && gpuprof__pf_begun(o, uuid, end, 0)) end--;
            if (end > ts && type == GPUPROF__EV_KERNEL) p = gpuprof__pf_end_bound(s, p, end, uuid, at_end ? flow : 0);
            else if (end > ts) p = gpuprof__pf_end_slice(s, p, end, uuid, type == GPUPROF__EV_GPU && at_end ? flow : 0);
            if (type == GPUPROF__EV_GPU) flow_tid = 0;
            if (type == GPUPROF__EV_KERNEL) memset(&kb, 0, sizeof kb);
        }
    }
    o->pf_nlane = 0;                           /* the second pass takes the lanes from the first */
    return p;
}

/* A GPU range's begin on its stream's track (its end: the first pass),
   ending its CPU range's flow unless its end does. */
static char *gpuprof__pf_gpu(gpuprof__tout *o, gpuprof__pfseq *s, gpuprof__thread *t, char *p, const gpuprof__event *e, const gpuprof__name *nm) {
    char *pk, *te;
    double work[2];
    const double *w;
    uint64_t ts, end, uuid, flow;
    int flow_at_end;
    p = gpuprof__pf_late_span(o, p, e, GPUPROF__EV_GPU, gpuprof__pf_lane(o, e, GPUPROF__EV_GPU, 0), &uuid, &ts, &end);
    flow = gpuprof__pf_gpu_flow(o, t->fmt.flow_tid, t->fmt.flow_ns, t->fmt.flow_name, ts, end, &flow_at_end);
    t->fmt.flow_tid = 0;
    w = t->fmt.work_name ? gpuprof__trace_work_for(t, e->name_id, work) : NULL;
    gpuprof__pf_begun(o, uuid, ts, 1);
    p = gpuprof__pf_event(s, p, ts, &pk, &te, 1, gpuprof__pf_name_seen(s, e->name_id), e->name_id + 1ull, nm->text, nm->len);
    p = gpuprof__pb_uint(gpuprof__pb_uint(p, 3, GPUPROF__PC_GPU), 11, uuid);
    if (flow && !flow_at_end) p = gpuprof__pb_fixed64(p, 48, flow);
    if (e->flags & GPUPROF__EVF_WARMUP) p = gpuprof__pf_arg_v(p, GPUPROF__PA_WARMUP, GPUPROF__PF_BOOL, 1);
    if (w) p = gpuprof__pf_work(p, w, 1, e->u.dur_ns);
    p = GPUPROF__PF_CLOSE(pk, te, p);
    return end > ts ? p : gpuprof__pf_end_slice(s, p, end, uuid, flow_at_end ? flow : 0);
}

/* A CUDA call that launched captured work, its begin on its thread's
   "CUDA calls" track (its end: the first pass), the start of the flow to
   that work (ended by the kernel, copy or memset). */
static char *gpuprof__pf_kapi(gpuprof__tout *o, gpuprof__pfseq *s, char *p, const gpuprof__event *e) {
    char *pk, *te, name[64];
    uint32_t cbid = e->flags & GPUPROF__KAPI_CBID, driver = e->flags >> 15;
    uint64_t iid = GPUPROF__PF_CALL | cbid | (uint64_t)driver << 16, uuid, ts, end;
    const char *call = gpuprof__kc_call_name(cbid, (int)driver);
    int n = !strcmp(call, "CUDA call") ? snprintf(name, sizeof name, "CUDA call %u", cbid) : snprintf(name, sizeof name, "%s", call);
    p = gpuprof__pf_late_span(o, p, e, GPUPROF__EV_KAPI, 0, &uuid, &ts, &end);
    gpuprof__pf_begun(o, uuid, ts, 1);
    p = gpuprof__pf_event(s, p, ts, &pk, &te, 1, gpuprof__pf_other(s, iid), iid, name, (size_t)n);
    p = gpuprof__pb_uint(gpuprof__pb_uint(p, 3, driver ? GPUPROF__PC_DRIVER : GPUPROF__PC_RUNTIME), 11, uuid);
    if (ts >= o->from_ns && !(e->flags & GPUPROF__KAPI_NOWORK))           /* its work's rule (gpuprof__pf_kernel_flow) */
        p = gpuprof__pf_bind(p, GPUPROF__PF_FLOW_CALL(e->name_id), GPUPROF__PF_FLOW_OUT);
    p = gpuprof__pf_arg_v(gpuprof__pf_arg_v(p, GPUPROF__PA_CORR, GPUPROF__PF_UINT, e->name_id), GPUPROF__PA_CBID, GPUPROF__PF_UINT, cbid);
    p = GPUPROF__PF_CLOSE(pk, te, p);
    return end > ts ? p : gpuprof__pf_end_slice(s, p, end, uuid, 0);
}

/* A captured kernel, copy or memset on its stream's track, with Kineto's
   category and arguments, ending the flow from the call that launched it. */
static char *gpuprof__pf_kernel(gpuprof__tout *o, gpuprof__pfseq *s, char *p, const gpuprof__event *e, const gpuprof__event *karg) {
    char *pk, *te, name[96], dims[64];
    uint32_t track = (uint32_t)e->type >> 4, kind = e->flags & 3u, kern = karg[0].flags;
    uint64_t ts, end, dur = e->u.dur_ns, uuid, iid, flow;
    uintptr_t sv = (uintptr_t)gpuprof__gpu.track[track].stream;    /* 0x10000 + CUPTI's stream id (gpuprof__kc_track) */
    const char *text;
    int flow_at_end;
    gpuprof__kfig kf;
    if (kind == GPUPROF__KR_KERNEL) {
        iid = GPUPROF__PF_KERN | kern;
        text = kern < GPUPROF__LDA(&gpuprof__kc.nkern) ? gpuprof__kc.kern[kern]->shown : "(kernel)";
    } else {
        iid = GPUPROF__PF_COPY | (e->flags & 0xffu);         /* the name's flags: kind, direction, host memory */
        text = gpuprof__trace_copy_name(name, sizeof name, e);
    }
    p = gpuprof__pf_late_span(o, p, e, GPUPROF__EV_KERNEL, gpuprof__pf_lane(o, e, GPUPROF__EV_KERNEL, 0), &uuid, &ts, &end);
    flow = gpuprof__pf_kernel_flow(o, e, &karg[1], ts, end, &flow_at_end);
    gpuprof__pf_begun(o, uuid, ts, 1);
    p = gpuprof__pf_event(s, p, ts, &pk, &te, 1, gpuprof__pf_other(s, iid), iid, text, strlen(text));
    p = gpuprof__pb_uint(p, 3, kind == GPUPROF__KR_KERNEL ? GPUPROF__PC_KERNEL : kind == GPUPROF__KR_MEMCPY ? GPUPROF__PC_MEMCPY : GPUPROF__PC_MEMSET);
    p = gpuprof__pb_uint(p, 11, uuid);
    if (flow && !flow_at_end) p = gpuprof__pf_bind(p, flow, GPUPROF__PF_FLOW_IN);
    p = gpuprof__pf_arg_v(p, GPUPROF__PA_DEVICE, GPUPROF__PF_UINT, (uint64_t)gpuprof__gpu.track[track].dev);
    p = gpuprof__pf_arg_v(p, GPUPROF__PA_STREAM, GPUPROF__PF_INT, sv >= 0x10000u ? (uint64_t)(sv - 0x10000u) : (uint64_t)(int64_t)-1);
    if (kind == GPUPROF__KR_KERNEL) {
        snprintf(dims, sizeof dims, "[%u,%u,%u]", (unsigned)(karg[0].ts & 0xffffffffu), (unsigned)(karg[0].ts >> 32), (unsigned)(karg[0].u.dur_ns & 0xffffffffu));
        p = gpuprof__pf_arg_s(p, GPUPROF__PA_GRID, dims);
        snprintf(dims, sizeof dims, "[%u,%u,%u]", (unsigned)(karg[0].u.dur_ns >> 32), karg[0].name_id & 0x7ffu, (karg[0].name_id >> 11) & 0x7fu);
        p = gpuprof__pf_arg_s(p, GPUPROF__PA_BLOCK, dims);
        p = gpuprof__pf_arg_v(p, GPUPROF__PA_REGS, GPUPROF__PF_UINT, karg[0].name_id >> 18);
        p = gpuprof__pf_arg_v(p, GPUPROF__PA_SHARED, GPUPROF__PF_UINT, karg[1].u.dur_ns);
        if (gpuprof__trace_kfig(karg, gpuprof__gpu.track[track].dev, &kf)) {
            p = gpuprof__pf_arg_d(p, GPUPROF__PA_BLOCKS_SM, kf.blocks_sm);
            p = gpuprof__pf_arg_d(p, GPUPROF__PA_WARPS_SM, kf.warps_sm);
            p = gpuprof__pf_arg_v(p, GPUPROF__PA_EST_OCC, GPUPROF__PF_UINT, (uint64_t)(kf.est_pct + 0.5));
            p = gpuprof__pf_arg_v(p, GPUPROF__PA_OCC, GPUPROF__PF_UINT, (uint64_t)(kf.occ_pct + 0.5));
        }
    } else {
        p = gpuprof__pf_arg_v(p, GPUPROF__PA_BYTES, GPUPROF__PF_UINT, karg[1].u.dur_ns);
        if (kind == GPUPROF__KR_MEMCPY && dur) p = gpuprof__pf_arg_d(p, GPUPROF__PA_BW, (double)karg[1].u.dur_ns / (double)dur);
    }
    p = gpuprof__pf_arg_v(p, GPUPROF__PA_CORR, GPUPROF__PF_UINT, e->name_id);
    p = GPUPROF__PF_CLOSE(pk, te, p);
    return end > ts ? p : gpuprof__pf_end_bound(s, p, end, uuid, flow_at_end ? flow : 0);
}
#endif

/* An event other than a plain CPU range. */
static GPUPROF__NOINLINE char *gpuprof__pf_other_event(gpuprof__tout *o, gpuprof__pfseq *s, gpuprof__thread *t, char *p, const gpuprof__event *e,
                                                       int type, const gpuprof__name *nm, uint64_t ts) {
    char *pk, *te;
    switch (type) {
    case GPUPROF__EV_COUNTER:
        p = gpuprof__pf_counter_track(o, p, e->name_id, nm);
        p = gpuprof__pf_event(s, p, ts, &pk, &te, 4, 0, 0, NULL, 0);
        p = gpuprof__pb_uint(p, 11, gpuprof__pf_uuid(GPUPROF__PF_TCOUNTER, e->name_id));
        return GPUPROF__PF_CLOSE(pk, te, gpuprof__pb_double(p, 44, e->u.value));
    case GPUPROF__EV_MARK:
        p = gpuprof__pf_event(s, p, ts, &pk, &te, 3, gpuprof__pf_name_seen(s, e->name_id), e->name_id + 1ull, nm->text, nm->len);
        return GPUPROF__PF_CLOSE(pk, te, gpuprof__pb_uint(p, 3, (e->flags & GPUPROF__EVF_MEM) ? GPUPROF__PC_MEMORY : GPUPROF__PC_MARK));
#ifdef GPUPROF_CUDA
    case GPUPROF__EV_GPU:
        return gpuprof__pf_gpu(o, s, t, p, e, nm);
    case GPUPROF__EV_KAPI:
        return gpuprof__pf_kapi(o, s, p, e);
    case GPUPROF__EV_KERNEL:
        p = gpuprof__pf_kernel(o, s, p, e, t->fmt.karg);
        memset(t->fmt.karg, 0, sizeof t->fmt.karg);
        return p;
#endif
    case GPUPROF__EV_STEP:
    default:
        return gpuprof__pf_step(o, s, t, p, e, ts);
    }
}

/* The common case, in straight-line code: a run of CPU ranges with nothing
   but a name already interned on the sequence, each begun less than 16 us
   after the sequence's last timestamp and ending less than 16 us after its
   begin, or, a parent, begun before the last timestamp and ending less than
   16 us after it; name ids below 16383 and a sequence id below 16384: every
   varint but a parent's absolute begin fits two bytes, every length one; 20
   to 26 bytes a range. A range is five stores, each running past what it
   writes into what the next one overwrites:
   - the begin's frame, its length and the timestamp's tag and delta (8
     bytes; the delta's part from gpuprof__pf_vtab), or a parent's on the
     absolute clock (gpuprof__pf_abs_head);
   - the sequence id and track_event { type = SLICE_BEGIN, name_iid }: the
     same bytes for every range of a name (up to 10: 16 bytes stored), made
     once per name on the sequence (gpuprof__pf_fast_name, four names kept:
     names that take turns, a parent and its children), with the checks on
     the event's type and flags; an event's last 8 bytes, name id, type and
     flags, are compared with the name's as one word;
   - the end's frame, length, timestamp;
   - the sequence id and track_event { type = SLICE_END }: the sequence's.
   The sequence's state is held in locals (stores through the byte pointer
   would otherwise make the compiler reload it). Returns the first event it
   did not write; *pp advanced, by at most 48 bytes an event written
   (room: the caller's limit). */
/* The bytes every begin of a name repeats on the sequence, for the event e
   (its key read already); 0: the event is not for the fast path. */
static GPUPROF__NOINLINE int gpuprof__pf_fast_name(const gpuprof__pfseq *s, const gpuprof__event *e, gpuprof__pfname *f) {
    uint32_t id = e->name_id + 1, idl = 1 + (id >= 0x80), hl = s->head_len, v = (uint32_t)gpuprof__pb_v2(id);
    unsigned char bb[16] = { 0 };
    /* type 0 (a CPU range), none of the flags the slower paths handle, its name interned */
    if ((e->type | (e->flags & (GPUPROF__EVF_WARMUP | GPUPROF__EVF_GPU_PART | GPUPROF__EVF_NUDGE))) != 0 || id > s->niid ||
        s->iid[id - 1] != s->seq || id >= 16384)
        return 0;
    memcpy(bb, s->head, hl);
    bb[hl] = 0x5a;                            /* track_event, its length */
    bb[hl + 1] = (unsigned char)(3 + idl);
    bb[hl + 2] = 0x48;                        /* type = SLICE_BEGIN */
    bb[hl + 3] = 1;
    bb[hl + 4] = 0x50;                        /* name_iid */
    bb[hl + 5] = (unsigned char)v;
    bb[hl + 6] = (unsigned char)(v >> 8);
    f->blen = hl + 5 + idl;
    memcpy(f->b, bb, 16);
    f->a0 = 0x0a | (uint64_t)(1 + 1 + f->blen) << 8 | 0x40 << 16;
    return 1;
}

/* A begin's frame and timestamp on the absolute clock (timestamp_clock_id =
   BOOTTIME, timestamp = ns since the trace's time zero), blen bytes to come
   in the packet; at most 16 bytes. */
static GPUPROF__NOINLINE char *gpuprof__pf_abs_head(char *p, uint64_t ts, uint64_t blen) {
    char *q = gpuprof__pb_varint(p + 6, ts);
    p[0] = 0x0a;
    p[1] = (char)((q - p) - 2 + (ptrdiff_t)blen);
    p[2] = (char)0xd0;                        /* field 58, timestamp_clock_id */
    p[3] = 0x03;
    p[4] = (char)GPUPROF__PF_ABS;
    p[5] = 0x40;                              /* timestamp */
    return q;
}

/* The loop, for a sequence id of hl - 1 bytes (a constant where called). */
GPUPROF__INLINE uint32_t gpuprof__pf_ranges_run(gpuprof__pfseq *s, const gpuprof__event *ev, uint32_t i, uint32_t stop, char **pp, uint32_t hl) {
    char *p = *pp;
    uint64_t last = s->last, d = 0, c0 = 0x0a | (uint64_t)(1 + 1 + hl + 4) << 8 | 0x40 << 16, m = gpuprof__clock.mult;
    uint64_t key = ~0ull, a0 = 0, b0 = 0, b1 = 0, blen = 0;   /* the name's (gpuprof__pfname, in registers); no event's key: its type would be 0xffff */
    const uint64_t *vt = gpuprof__pf_vtab;
    const gpuprof__event *e = ev + i, *e_stop = ev + stop;
    memcpy(&d, s->head, hl);
    d |= 0x0248025aull << (8 * hl);          /* the end's sequence id, track_event { type = SLICE_END } */
    for (; e < e_stop; e++) {
        uint64_t k, ts, end, dt, du, v;   /* du: the end's delta on the incremental clock */
        memcpy(&k, &e->name_id, 8);           /* name id, type, flags */
        if (GPUPROF__UNLIKELY(k != key)) {
            gpuprof__pfname *f = &s->fast[k & 3];
            if (f->nkey != ~k) {
                if (!gpuprof__pf_fast_name(s, e, f)) break;
                f->nkey = ~k;
            }
            key = k;
            a0 = f->a0;
            b0 = f->b[0];
            b1 = f->b[1];
            blen = f->blen;
        }
        ts = gpuprof__ticks_to_ns_m(e->ts, m);
        end = gpuprof__ticks_to_ns_m(e->ts + e->u.dur_ticks, m);
        dt = ts - last;                       /* earlier times are too large, as unsigned numbers */
        du = end - ts;                        /* the end's delta, from the begin */
        if (GPUPROF__LIKELY((dt | du) < 16384)) {
            v = vt[dt];
            gpuprof__st64(p, a0 + v);
            p += v >> 56;
        } else {
            /* a parent, its begin before what went before it on the sequence: on the
               absolute clock, which leaves the incremental one as it was */
            if (ts >= last || (du = end - last) >= 16384) break;
            p = gpuprof__pf_abs_head(p, ts, blen);
        }
        last = end;
        gpuprof__st64(p, b0);
        gpuprof__st64(p + 8, b1);
        p += blen;
        v = vt[du];
        gpuprof__st64(p, c0 + v);
        p += v >> 56;
        gpuprof__st64(p, d);
        p += hl + 4;
    }
    s->last = last;
    *pp = p;
    return (uint32_t)(e - ev);
}

static uint32_t gpuprof__pf_ranges_fast(gpuprof__pfseq *s, const gpuprof__event *ev, uint32_t i, uint32_t n, char **pp, const char *limit) {
    uint32_t room = *pp < limit ? (uint32_t)((size_t)(limit - *pp) / 48) : 0, stop = room < n - i ? i + room : n;
    if (s->head_len == 2) return gpuprof__pf_ranges_run(s, ev, i, stop, pp, 2);
    if (s->head_len == 3) return gpuprof__pf_ranges_run(s, ev, i, stop, pp, 3);
    return i;
}

/* CPU samples (GPUPROF_SAMPLE) in the streamed trace: each sample the
   handler put in its thread's ring is a perf_sample packet on the thread's
   sequence, on the absolute clock, its call stack interned there the first
   time it comes (frames named as the report names them, outermost first;
   one mapping for them all), so that the Perfetto UI shows the samples on
   the thread and a flame graph of a selected area. */

#if GPUPROF__SAMPLES
/* Slot k's call stack into the sequence's interned data (idata: open). */
static char *gpuprof__pf_stack(gpuprof__pfseq *s, gpuprof__smp *m, uint32_t k, char *p) {
    const gpuprof__smp_slot *sl = &m->slot[k];
    uint32_t i, depth = sl->depth < GPUPROF__SMP_DEPTH ? sl->depth : GPUPROF__SMP_DEPTH;
    uintptr_t pc[GPUPROF__SMP_DEPTH];
    char buf[160], base[160], label[240], *e;
    if (m->map_seq != s->seq) {               /* the one mapping, and its empty build id */
        e = gpuprof__pb_open(p, 19);
        p = gpuprof__pb_close(e, gpuprof__pb_uint(gpuprof__pb_uint(e, 1, 1), 2, 1));
        e = gpuprof__pb_open(p, 16);
        p = gpuprof__pb_close(e, gpuprof__pb_str(gpuprof__pb_uint(e, 1, 1), 2, ""));
        m->map_seq = s->seq;
    }
    depth = gpuprof__smp_pcs(&gpuprof__pf_syms, &m->frames[sl->at], depth, sl->gen, pc);
    for (i = 0; i < depth; i++) {
        const char *module, *name = gpuprof__sym_of(&gpuprof__pf_syms, pc[i], sl->gen, buf, sizeof buf, &module);
        const char *exe = gpuprof__sym_exe(&gpuprof__pf_syms);
        uint64_t fid = (uint64_t)k * GPUPROF__SMP_DEPTH + i + 1;
        name = gpuprof__smp_base(name, base, sizeof base);
        if (*module && strcmp(module, exe)) snprintf(label, sizeof label, "%s [%s]", name, module);
        else snprintf(label, sizeof label, "%s", name);
        e = gpuprof__pb_open(p, 5);           /* function_names { iid, str } */
        p = gpuprof__pb_close(e, gpuprof__pb_str(gpuprof__pb_uint(e, 1, fid), 2, label));
        e = gpuprof__pb_open(p, 6);           /* frames { iid, function_name_id, mapping_id } */
        p = gpuprof__pb_close(e, gpuprof__pb_uint(gpuprof__pb_uint(gpuprof__pb_uint(e, 1, fid), 2, fid), 3, 1));
    }
    e = gpuprof__pb_open(p, 7);               /* callstacks { iid, frame_ids: the outermost first } */
    p = gpuprof__pb_uint(e, 1, (uint64_t)k + 1);
    for (i = depth; i-- > 0;) p = gpuprof__pb_uint(p, 2, (uint64_t)k * GPUPROF__SMP_DEPTH + i + 1);
    m->slot_seq[k] = s->seq;
    return gpuprof__pb_close(e, p);
}

/* The thread's samples waiting in its ring, as packets after p (the
   streamed trace only: the ring is taken once). */
static char *gpuprof__pf_samples(gpuprof__tout *o, gpuprof__pfseq *s, gpuprof__thread *t, char *buf, char *p) {
    gpuprof__smp *m = GPUPROF__LDA(&t->smp);
    uint64_t tail, head;
    uint32_t k, i;
    if (!m || (tail = m->ring_tail) == (head = GPUPROF__LDA(&m->ring_head))) return p;
    for (; tail != head; tail++) {
        char *pk, *pe;
        k = m->ring_slot[tail % GPUPROF__SMP_RING];
        if (k >= GPUPROF__SMP_SLOTS || !GPUPROF__LDA(&m->slot[k].hash)) continue;
        if ((size_t)(p - buf) + 16384 > GPUPROF__WBUF) {
            gpuprof__trace_write(o, buf, (size_t)(p - buf));
            p = buf;
        }
        if (m->slot_seq[k] != s->seq)         /* a new stack: its addresses in the objects known, else the objects read again */
            for (i = 0; i < m->slot[k].depth && i < GPUPROF__SMP_DEPTH; i++)
                if (!gpuprof__sym_mod(&gpuprof__pf_syms, m->frames[m->slot[k].at + i] & ~GPUPROF__SMP_SCANNED)) {
                    gpuprof__sym_close(&gpuprof__pf_syms);
                    gpuprof__sym_open(&gpuprof__pf_syms);
                    break;
                }
        pk = gpuprof__pb_open(p, 1);
        p = gpuprof__pb_uint(gpuprof__pb_uint(pk, 58, GPUPROF__PF_ABS), 8, gpuprof__ticks_to_ns(m->ring_ts[tail % GPUPROF__SMP_RING]));
        p = gpuprof__pb_uint(gpuprof__pb_uint(p, 10, s->seq), 13, 2);      /* SEQ_NEEDS_INCREMENTAL_STATE: interned stacks */
        if (m->slot_seq[k] != s->seq) {
            char *id = gpuprof__pb_open(p, 12);
            p = gpuprof__pb_close(id, gpuprof__pf_stack(s, m, k, id));
        }
        pe = gpuprof__pb_open(p, 66);         /* perf_sample { pid, tid, callstack_iid } */
        p = gpuprof__pb_uint(gpuprof__pb_uint(pe, 2, (uint32_t)gpuprof__run.trace_pid), 3, (uint32_t)m->tid);
        p = gpuprof__pb_close(pe, gpuprof__pb_uint(p, 4, (uint64_t)k + 1));
        p = gpuprof__pb_close(pk, p);
    }
    GPUPROF__STR(&m->ring_tail, tail);
    return p;
}
#endif

/* The encoder's events: events [from, n) of a block encoded and written;
   returns the events written. */
static uint32_t gpuprof__pf_events(gpuprof__tout *o, gpuprof__block *b, uint32_t from, uint32_t n) {
    char *buf = gpuprof__trace_buf(o), *p = buf + o->staged, *pk, *te;
    gpuprof__thread *t = b->owner;
    gpuprof__pfseq *s = &t->fmt.pf;
    uint32_t tid = (uint32_t)b->tid, i, naux = 0;
    if (s->gen != o->gen || s->tid != b->tid || !s->seq) p = gpuprof__pf_seq_start(o, s, p, b->tid, b->label);
#ifdef GPUPROF_CUDA
    if (!o->pf_lane) o->pf_lane = (unsigned char *)gpuprof__alloc(GPUPROF__BLOCK_EVENTS);
    p = gpuprof__pf_gpu_ends(o, s, t, b, from, n, p);      /* at most 2048 ends of ~30 bytes: room in the buffer */
#endif
    for (i = from; i < n; i++) {
        const gpuprof__event *e = &b->ev[i];
        int type = e->type & 15, named = type < GPUPROF__EV_KAPI;    /* the kernel capture's events carry no name id */
        const gpuprof__name *nm = &gpuprof__registry.names[named ? e->name_id : 0];
        if ((size_t)(p - buf) + (named ? nm->len : GPUPROF__KC_NAME_MAX) + 4096 > GPUPROF__WBUF) {
            gpuprof__trace_write(o, buf, (size_t)(p - buf));
            p = buf;
        }
        if (GPUPROF__LIKELY(type == GPUPROF__EV_RANGE)) {
            uint64_t ts = gpuprof__ticks_to_ns(e->ts) + GPUPROF__NUDGE_NS(e), end = gpuprof__ticks_to_ns(e->ts + e->u.dur_ticks);
            uint32_t next;
            if (GPUPROF__UNLIKELY((e->flags & (GPUPROF__EVF_WARMUP | GPUPROF__EVF_GPU_PART)) || t->fmt.work_name)) {
                p = gpuprof__pf_range_more(s, t, p, e, nm, tid, ts, end);
                continue;
            }
            if ((next = gpuprof__pf_ranges_fast(s, b->ev, i, n, &p, buf + GPUPROF__WBUF - 8192)) > i) {
                i = next - 1;                 /* a run of common ranges written */
                continue;
            }
            p = gpuprof__pf_event(s, p, ts, &pk, &te, 1, gpuprof__pf_name_seen(s, e->name_id), e->name_id + 1ull, nm->text, nm->len);
            p = GPUPROF__PF_CLOSE(pk, te, p);
            p = gpuprof__pf_end_slice(s, p, end, 0, 0);
        } else if (gpuprof__trace_is_aux(type)) {
            naux++;
            gpuprof__trace_aux_hold(t, e, type);
        } else {
            uint64_t ts = type == GPUPROF__EV_GPU || !named ? e->ts : gpuprof__ticks_to_ns(e->ts);
            p = gpuprof__pf_other_event(o, s, t, p, e, type, nm, ts);
        }
    }
#if GPUPROF__SAMPLES
    if (o == &gpuprof__trace.out && GPUPROF__LD(&gpuprof__smp_global.trace)) p = gpuprof__pf_samples(o, s, t, buf, p);
#endif
    gpuprof__trace_stage(o, buf, p);
    n = n > from ? n - from - naux : 0;
    GPUPROF__ST(&o->events, o->events + n);      /* a report may read it meanwhile */
    return n;
}

/* ----------------------------------------------------------------------
   Trace sinks: the streamed file, written by a background thread as blocks
   fill and, once a second, with what threads have recorded into blocks not
   yet full (a killed run loses at most about a second of events); a copy of
   the stream (gpuprof_write_trace with a trace file); the flight recorder's
   dump (without one). gpuprof_write_trace formats while the writer waits
   (fmt_hold), so one formatter touches the state at a time: the file, each
   thread's pending WORK/FLOW records, the metadata written per output.
   ---------------------------------------------------------------------- */
static const gpuprof__trace_encoder gpuprof__trace_encoders[] = {
    { gpuprof__json_begin, gpuprof__json_events, gpuprof__json_end },      /* GPUPROF__FMT_JSON */
    { gpuprof__pf_begin, gpuprof__pf_events, gpuprof__pf_end },            /* GPUPROF__FMT_PERFETTO */
};

/* A trace file's format, by its name: Perfetto's for .pftrace and
   .perfetto-trace, JSON for any other. */
static int gpuprof__trace_format(const char *path) {
    size_t n = path ? strlen(path) : 0;
    if ((n >= 8 && !strcmp(path + n - 8, ".pftrace")) || (n >= 15 && !strcmp(path + n - 15, ".perfetto-trace"))) return GPUPROF__FMT_PERFETTO;
    return GPUPROF__FMT_JSON;
}

/* A new file of the output's format: its counts zeroed, its start written. */
static void gpuprof__trace_start(gpuprof__tout *o) {
    o->gen = o->first_gen = ++gpuprof__trace.out_gen;
    o->off = o->events = o->flows = 0;
    o->failed = 0;
    o->error[0] = 0;
    gpuprof__trace_encoders[o->format].begin(o);
}

static uint32_t gpuprof__trace_events(gpuprof__tout *o, gpuprof__block *b, uint32_t from, uint32_t n) {
    gpuprof__thread *t = b->owner;
    if (b->tid && t->fmt_tid != b->tid) {
        t->fmt_tid = b->tid;
        t->fmt_index = b->sort_index;
        memcpy(t->fmt_label, b->label, sizeof t->fmt_label);
    }
    return gpuprof__trace_encoders[o->format].events(o, b, from, n);
}

static void gpuprof__trace_stop(gpuprof__tout *o, uint64_t events, uint64_t dropped, uint64_t fell_out, uint64_t window_ns) {
    gpuprof__trace_encoders[o->format].end(o, events, dropped, fell_out, window_ns);
#ifdef GPUPROF_CUDA
    gpuprof__lanes_free(o);
#endif
}

/* The events recorded so far into blocks not yet full, of every thread (the
   formatter's turn: the writer, or a write_trace while the writer waits).
   Under gpuprof__lock (no thread state is freed meanwhile); each block is
   read under trace_lock, and stays valid after: only the formatter frees or
   reuses a block handed over. consume: into the stream, which remembers
   what it wrote (a flight-recorder dump reads them all). */
static void gpuprof__trace_live(gpuprof__tout *o, int consume) {
    gpuprof__thread *t;
    for (t = gpuprof__threads.threads; t; t = t->next) {
        gpuprof__block *b;
        uint32_t n;
        pthread_mutex_lock(&gpuprof__trace_lock);
        b = t->block;
        pthread_mutex_unlock(&gpuprof__trace_lock);
        if (!b || ((n = GPUPROF__LDA(&b->count)) <= (consume ? b->done : 0u) && !(consume && gpuprof__smp_pending(t)))) continue;
        if (!o->failed) gpuprof__trace_events(o, b, consume ? b->done : 0, n);
        else if (consume) GPUPROF__ADD(&gpuprof__trace.dropped_io, (uint64_t)(n - b->done));
        if (consume) GPUPROF__ST(&b->done, n);
    }
}

/* A file beside the trace: run.json -> run.<what><n>.json (run.pftrace ->
   run.<what><n>.pftrace: the trace's format; no extension: .json). */
static void gpuprof__trace_sibling(char *out, size_t cap, const char *what, unsigned n) {
    const char *tp = gpuprof__g.trace_path, *dot = strrchr(tp, '.'), *slash = strrchr(tp, '/');
    if (!dot || (slash && dot < slash)) snprintf(out, cap, "%s.%s%u.json", tp, what, n);
    else snprintf(out, cap, "%.*s.%s%u%s", (int)(dot - tp), tp, what, n, dot);
}

/* Part n of the streamed trace: the trace's own name for the first, then
   run.json -> run.part2.json, run.pftrace -> run.part2.pftrace. */
static void gpuprof__part_name(char *out, size_t cap, unsigned n) {
    if (n <= 1) snprintf(out, cap, "%s", gpuprof__g.trace_path);
    else gpuprof__trace_sibling(out, cap, "part", n);
}

/* The first part still on disk, of n written (GPUPROF_TRACE_KEEP). */
static unsigned gpuprof__part_first(unsigned n) {
    unsigned keep = (unsigned)gpuprof__g.cfg.trace_keep;
    return gpuprof__g.cfg.trace_keep > 0 && n > keep ? n - keep + 1 : 1;
}

/* The formatter's turn, between blocks: the streamed trace has reached
   GPUPROF_TRACE_MAX_MB, so this part is ended as a whole file (its closing
   metadata) and the stream goes on in the next, which starts afresh (its
   own metadata, its own Perfetto sequences: it opens on its own). Flows
   from ranges begun before it are left out of it. Beyond GPUPROF_TRACE_KEEP
   parts, the oldest is removed. */
static void gpuprof__trace_rotate(void) {
    gpuprof__tout *o = &gpuprof__trace.out;
    char *next = gpuprof__trace.part_next, *old = gpuprof__trace.part_next;     /* not on the stack: gpuprof_write_trace's caller may have 16 KiB */
    int fd;
    gpuprof__part_name(next, sizeof gpuprof__trace.part_next, gpuprof__trace.nparts + 1);
    fd = open(next, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {          /* this part goes on, past the limit */
        gpuprof__warn(GPUPROF__W_IO, "cannot open the trace's next part '%s': %s; the trace goes on in '%s' past GPUPROF_TRACE_MAX_MB", next, strerror(errno), o->path);
        gpuprof__g.cfg.trace_max_mb = 0;
        return;
    }
    gpuprof__trace_flush(o);
    gpuprof__trace_stop(o, o->events, 0, 0, 0);
    if (close(o->fd) != 0 && !o->failed) gpuprof__warn(GPUPROF__W_IO, "cannot write the trace to '%s': %s", o->path, strerror(errno));
    GPUPROF__ST(&gpuprof__trace.parts_events, gpuprof__trace.parts_events + o->events);
    GPUPROF__ST(&gpuprof__trace.nparts, gpuprof__trace.nparts + 1);
    memcpy(gpuprof__trace.part_path, next, sizeof gpuprof__trace.part_path);
    o->fd = fd;
    o->path = gpuprof__trace.part_path;
    o->from_ns = gpuprof__ticks_to_ns(gpuprof__ticks() - GPUPROF__LD(&gpuprof__clock.base));
    {
        unsigned first = o->first_gen;       /* the stream's, whichever part it is in */
        gpuprof__trace_start(o);
        o->first_gen = first;
    }
    gpuprof__trace.part_head = o->off + o->staged;
    if (gpuprof__part_first(gpuprof__trace.nparts) > 1) {       /* the one that just left the newest GPUPROF_TRACE_KEEP */
        gpuprof__part_name(old, sizeof gpuprof__trace.part_next, gpuprof__part_first(gpuprof__trace.nparts) - 1);
        if (unlink(old) != 0 && errno != ENOENT) gpuprof__warn(GPUPROF__W_IO, "cannot remove the trace's old part '%s': %s (GPUPROF_TRACE_KEEP)", old, strerror(errno));
    }
}

/* GPUPROF_TRACE_MAX_MB: would a block of nev events cross the limit, with
   the part's closing metadata? Its size is estimated at the most bytes per
   event a block of this stream has taken so far; a part holding nothing but
   its opening is never ended for it. */
#define GPUPROF__PART_FOOT 65536      /* bytes kept for a part's closing metadata */
static int gpuprof__part_would_cross(uint64_t nev) {
    uint64_t limit = (uint64_t)gpuprof__g.cfg.trace_max_mb << 20, now = gpuprof__trace.out.off + gpuprof__trace.out.staged;
    if (gpuprof__g.cfg.trace_max_mb <= 0 || !(gpuprof__trace.part_bpe > 0) || now <= gpuprof__trace.part_head) return 0;
    return (double)now + (double)nev * gpuprof__trace.part_bpe + GPUPROF__PART_FOOT > (double)limit;
}

/* Formats a list of handed-over blocks into the stream and frees them. */
static void gpuprof__trace_drain(gpuprof__block *list) {
    gpuprof__block *b, *last = NULL;
    uint32_t k = 0;
    uint64_t lost = 0;
    if (!list) return;
    for (b = list; b; b = b->next, k++) {
        if (gpuprof__trace.out.failed) lost += b->count - b->done;
        else if (b->count > b->done) {
            uint64_t before, nev = b->count - b->done;
            if (gpuprof__part_would_cross(nev)) gpuprof__trace_rotate();
            before = gpuprof__trace.out.off + gpuprof__trace.out.staged;
            gpuprof__trace_events(&gpuprof__trace.out, b, b->done, b->count);
            if (gpuprof__trace.out.off + gpuprof__trace.out.staged > before &&
                (double)(gpuprof__trace.out.off + gpuprof__trace.out.staged - before) / (double)nev > gpuprof__trace.part_bpe)
                gpuprof__trace.part_bpe = (double)(gpuprof__trace.out.off + gpuprof__trace.out.staged - before) / (double)nev;
        }
        if (gpuprof__g.cfg.trace_max_mb > 0 && gpuprof__trace.out.off + gpuprof__trace.out.staged >= (uint64_t)gpuprof__g.cfg.trace_max_mb << 20)
            gpuprof__trace_rotate();   /* a block larger than its estimate: this part ends past the limit */
        last = b;
    }
    pthread_mutex_lock(&gpuprof__trace_lock);
    GPUPROF__ADD(&gpuprof__trace.dropped_io, lost);
    if (gpuprof__trace.keep_written) {         /* slow-step captures read them: the latest stay, as in the flight recorder */
        if (gpuprof__trace.ring_tail) gpuprof__trace.ring_tail->next = list;
        else gpuprof__trace.ring_head = list;
        gpuprof__trace.ring_tail = last;
        gpuprof__trace.ring_blocks += k;
        while (gpuprof__trace.ring_blocks > gpuprof__trace.ring_max && !gpuprof__trace.dumping) gpuprof__ring_evict();
    } else {
        last->next = gpuprof__trace.free_blocks;
        gpuprof__trace.free_blocks = list;
        GPUPROF__ST(&gpuprof__trace.free_count, gpuprof__trace.free_count + k);
    }
    pthread_mutex_unlock(&gpuprof__trace_lock);
}

/* Writes handed-over blocks until told to stop; once a second without any,
   the live blocks' new events. Holds trace_lock except while formatting and
   writing, so recorders only ever wait for a list update. */
static void *gpuprof__writer_main(void *arg) {
    (void)arg;
    gpuprof__own_thread();
    pthread_mutex_lock(&gpuprof__trace_lock);
    for (;;) {
        gpuprof__block *list, *last;
        int k;
        while ((!gpuprof__trace.queue_head || gpuprof__trace.fmt_hold) && !gpuprof__trace.writer_stop) {
            int rc;
            if (gpuprof__trace.fmt_hold) { pthread_cond_wait(&gpuprof__trace_cond, &gpuprof__trace_lock); continue; }
            rc = gpuprof__cond_wait_ns(&gpuprof__trace_cond, &gpuprof__trace_lock, 1000000000u);
            if (rc == ETIMEDOUT && !gpuprof__trace.queue_head && !gpuprof__trace.fmt_hold && !gpuprof__trace.writer_stop) {
                gpuprof__trace.writer_busy = 1;
                pthread_mutex_unlock(&gpuprof__trace_lock);
                /* never waits for gpuprof__lock: a shutdown holding it may be joining this thread */
                if (pthread_mutex_trylock(&gpuprof__lock) == 0) {
                    gpuprof__trace_live(&gpuprof__trace.out, 1);
                    pthread_mutex_unlock(&gpuprof__lock);
                }
                gpuprof__trace_flush(&gpuprof__trace.out);
                pthread_mutex_lock(&gpuprof__trace_lock);
                gpuprof__trace.writer_busy = 0;
                pthread_cond_broadcast(&gpuprof__trace_cond);
            }
        }
        if (!gpuprof__trace.queue_head) break;           /* told to stop, nothing left */
        /* 16 blocks at a time (~1 ms of work): a gpuprof_write_trace or a
           report waiting for its turn waits no longer than that */
        list = last = gpuprof__trace.queue_head;
        for (k = 1; k < 16 && last->next; k++) last = last->next;
        gpuprof__trace.queue_head = last->next;
        gpuprof__trace.queue_len -= (uint32_t)k;
        if (!gpuprof__trace.queue_head) gpuprof__trace.queue_tail = NULL;
        last->next = NULL;
        gpuprof__trace.writer_busy = 1;
        pthread_mutex_unlock(&gpuprof__trace_lock);
        gpuprof__trace_drain(list);
        pthread_mutex_lock(&gpuprof__trace_lock);
        if (!gpuprof__trace.queue_head && gpuprof__trace.out.staged) {     /* no more blocks for now: the file up to date */
            pthread_mutex_unlock(&gpuprof__trace_lock);
            gpuprof__trace_flush(&gpuprof__trace.out);
            pthread_mutex_lock(&gpuprof__trace_lock);
        }
        gpuprof__trace.writer_busy = 0;
        pthread_cond_broadcast(&gpuprof__trace_cond);
    }
    pthread_mutex_unlock(&gpuprof__trace_lock);
    return NULL;
}

/* The formatter's turn for the calling thread: the writer finishes what it
   is writing and then waits until gpuprof__fmt_release. */
static void gpuprof__fmt_acquire(void) {
    pthread_mutex_lock(&gpuprof__trace_lock);
    gpuprof__trace.fmt_hold++;
    while (gpuprof__trace.writer_busy) pthread_cond_wait(&gpuprof__trace_cond, &gpuprof__trace_lock);
    pthread_mutex_unlock(&gpuprof__trace_lock);
}

static void gpuprof__fmt_release(void) {
    pthread_mutex_lock(&gpuprof__trace_lock);
    gpuprof__trace.fmt_hold--;
    pthread_cond_broadcast(&gpuprof__trace_cond);
    pthread_mutex_unlock(&gpuprof__trace_lock);
}

static int gpuprof__trace_open(void) {
    gpuprof__tout *o = &gpuprof__trace.out;
    o->path = gpuprof__g.trace_path;
    o->format = gpuprof__trace_format(o->path);
    o->fd = open(gpuprof__g.trace_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (o->fd < 0) {
        gpuprof__warn(GPUPROF__W_IO, "cannot open the trace file '%s': %s; no trace is written, statistics go on (check that the directory exists and is writable)",
                      gpuprof__g.trace_path, strerror(errno));
        o->fd = -1;
        return -1;
    }
    if (!gpuprof__trace.wbuf) gpuprof__trace.wbuf = (char *)gpuprof__alloc(GPUPROF__WBUF);   /* a dump of an earlier session may have made it */
    if (!gpuprof__trace.wbuf) { close(o->fd); o->fd = -1; return -1; }
    o->stage = (char *)gpuprof__alloc(GPUPROF__WBUF);    /* none: each block written as it is encoded */
    o->staged = 0;
    {
        uint32_t m = (uint32_t)(((uint64_t)gpuprof__g.cfg.trace_buffer_mb << 20) / sizeof(gpuprof__block));
        GPUPROF__ST(&gpuprof__trace.blocks_max, m < 4 ? 4u : m);   /* read unlocked by gpuprof__trace_swap */
    }
    gpuprof__trace_start(o);
    GPUPROF__ST(&gpuprof__trace.nparts, 1u);
    GPUPROF__ST(&gpuprof__trace.parts_events, (uint64_t)0);
    gpuprof__trace.part_bpe = 0;
    gpuprof__trace.part_head = gpuprof__trace.out.off + gpuprof__trace.out.staged;
    gpuprof__trace.writer_stop = gpuprof__trace.fmt_hold = gpuprof__trace.writer_busy = 0;
    if (gpuprof__spawn(&gpuprof__trace.writer, gpuprof__writer_main) != 0) {
        gpuprof__warn(GPUPROF__W_IO, "cannot start the trace writer thread; no trace is written to '%s'", gpuprof__g.trace_path);
        close(o->fd);
        o->fd = -1;
        GPUPROF_FREE(o->stage);
        o->stage = NULL;
        return -1;
    }
    gpuprof__trace.writer_running = 1;
    /* Under trace_lock: a thread of the last session that checks (session,
       gpuprof__trace.on) under it to hand over a block sees this session's number
       whenever it sees the trace on (a case in fuzz_api's corpus). */
    pthread_mutex_lock(&gpuprof__trace_lock);
    GPUPROF__ST(&gpuprof__trace.mode, (int)GPUPROF__TRACE_STREAM);
    GPUPROF__ST(&gpuprof__trace.on, 1);
    pthread_mutex_unlock(&gpuprof__trace_lock);
    return 0;
}

/* No trace file: the flight recorder, unless it is off. */
static void gpuprof__ring_open(void) {
    uint64_t bytes = (uint64_t)gpuprof__g.cfg.trace_ring_mb << 20;
    if (gpuprof__g.cfg.trace_ring_mb <= 0) return;
    gpuprof__trace.ring_max = (uint32_t)(bytes / sizeof(gpuprof__block));
    if (gpuprof__trace.ring_max < 2) gpuprof__trace.ring_max = 2;
    /* spare blocks: the ones being filled, and room for what comes in while a write_trace reads the ring */
    GPUPROF__ST(&gpuprof__trace.blocks_max, gpuprof__trace.ring_max + gpuprof__trace.ring_max / 8 + 16);
    pthread_mutex_lock(&gpuprof__trace_lock);
    GPUPROF__ST(&gpuprof__trace.mode, (int)GPUPROF__TRACE_RING);
    GPUPROF__ST(&gpuprof__trace.on, 1);
    pthread_mutex_unlock(&gpuprof__trace_lock);
}

static uint64_t gpuprof__dropped(void) {     /* under gpuprof__lock */
    uint64_t d = GPUPROF__LD(&gpuprof__trace.dropped_io);
    gpuprof__thread *t;
    for (t = gpuprof__threads.threads; t; t = t->next) d += GPUPROF__LD(&t->dropped);
    return d;
}

/* Everything recorded so far into the stream: the blocks handed over, then
   what threads have in blocks not yet full. The stream goes on. Returns the
   stream's length then (the writer goes on appending after it), and the
   events in it. */
static uint64_t gpuprof__trace_sync(uint64_t *events) {
    gpuprof__block *list;
    uint64_t end;
    gpuprof__fmt_acquire();
    pthread_mutex_lock(&gpuprof__trace_lock);
    list = gpuprof__trace.queue_head;
    gpuprof__trace.queue_head = gpuprof__trace.queue_tail = NULL;
    gpuprof__trace.queue_len = 0;
    pthread_mutex_unlock(&gpuprof__trace_lock);
    gpuprof__trace_drain(list);
    pthread_mutex_lock(&gpuprof__lock);
    gpuprof__trace_live(&gpuprof__trace.out, 1);
    pthread_mutex_unlock(&gpuprof__lock);
    gpuprof__trace_flush(&gpuprof__trace.out);
    end = gpuprof__trace.out.off;
    if (events) *events = gpuprof__trace.out.events;
    gpuprof__fmt_release();
    return end;
}

/* Frees the blocks no thread holds (free list, ring). */
static void gpuprof__blocks_free(void) {
    gpuprof__block *lists[2], *b;
    int k;
    pthread_mutex_lock(&gpuprof__trace_lock);
    lists[0] = gpuprof__trace.free_blocks;
    lists[1] = gpuprof__trace.ring_head;
    gpuprof__trace.free_blocks = gpuprof__trace.ring_head = gpuprof__trace.ring_tail = NULL;
    gpuprof__trace.ring_blocks = 0;
    pthread_mutex_unlock(&gpuprof__trace_lock);
    for (k = 0; k < 2; k++)
        while ((b = lists[k]) != NULL) { lists[k] = b->next; GPUPROF_FREE(b); }
}

/* Ends the trace at shutdown: the streamed file gets every event recorded
   (blocks handed over, then those of running threads), its closing
   metadata and "]"; the flight recorder is let go. */
static int gpuprof__trace_finish(void) {
    gpuprof__tout *o = &gpuprof__trace.out;
    uint64_t dropped;
    int rc;
    if (gpuprof__trace.finished || gpuprof__trace.mode == GPUPROF__TRACE_NONE) return gpuprof__trace.mode == GPUPROF__TRACE_NONE ? -1 : 0;
    gpuprof__trace_handoff(gpuprof__tls);
    pthread_mutex_lock(&gpuprof__trace_lock);
    GPUPROF__ST(&gpuprof__trace.on, 0);
    gpuprof__trace.writer_stop = 1;
    pthread_cond_broadcast(&gpuprof__trace_cond);
    pthread_mutex_unlock(&gpuprof__trace_lock);
    gpuprof__trace.finished = 1;
    if (gpuprof__trace.mode == GPUPROF__TRACE_RING) {
        gpuprof__blocks_free();
        GPUPROF_FREE(gpuprof__trace.wbuf);        /* made by a dump (gpuprof_write_trace, a slow-step capture) */
        gpuprof__trace.wbuf = NULL;
        return 0;
    }
    if (gpuprof__trace.writer_running) pthread_join(gpuprof__trace.writer, NULL);
    gpuprof__trace.writer_running = 0;
    /* The events in the blocks of threads still running (a thread pool that
       never exits): their owners change t->block only under trace_lock and
       publish each event before counting it, so the events counted now are
       written whole, while an owner may go on filling the rest. */
    pthread_mutex_lock(&gpuprof__lock);
    gpuprof__trace_live(o, 1);
    dropped = gpuprof__dropped();
    pthread_mutex_unlock(&gpuprof__lock);
    gpuprof__trace_flush(o);
    gpuprof__trace_stop(o, o->events, dropped, 0, 0);
    rc = o->failed ? -1 : 0;
    if (close(o->fd) != 0 && !o->failed) {
        gpuprof__warn(GPUPROF__W_IO, "cannot write the trace to '%s': %s", o->path, strerror(errno));
        rc = -1;
    }
    o->fd = -1;
    GPUPROF_FREE(o->stage);
    o->stage = NULL;
    gpuprof__blocks_free();
    GPUPROF_FREE(gpuprof__trace.wbuf);
    gpuprof__trace.wbuf = NULL;
    return rc;
}

/* gpuprof_write_trace(path) with a streamed trace: the stream brought up to
   date, then its bytes copied to path a chunk at a time and closed there. */
static int gpuprof__trace_copy(const char *path) {
    enum { CHUNK = 65536 };
    gpuprof__tout o;
    char *chunk;                      /* on the heap: gpuprof_write_trace may be called on a stack of 16 KiB */
    uint64_t off = 0, end, dropped, events;
    int in;
    if ((chunk = (char *)gpuprof__alloc(CHUNK)) == NULL) return -1;
    end = gpuprof__trace_sync(&events);
    memset(&o, 0, sizeof o);
    o.path = path;
    o.format = gpuprof__trace.out.format;        /* the stream's bytes, ended as the stream would be */
    if (gpuprof__trace_format(path) != o.format)
        gpuprof__warn(GPUPROF__W_IO, "gpuprof_write_trace('%s'): a copy of the streamed trace '%s' is in its format, %s, whatever the name says (name the copy after the stream: .pftrace for Perfetto, any other for JSON)",
                      path, gpuprof__trace.out.path, o.format == GPUPROF__FMT_PERFETTO ? "Perfetto's" : "JSON");
    if ((in = open(gpuprof__trace.out.path, O_RDONLY | O_CLOEXEC)) < 0) {
        gpuprof__warn(GPUPROF__W_IO, "cannot read back the streamed trace '%s': %s; nothing is written to '%s'", gpuprof__trace.out.path, strerror(errno), path);
        GPUPROF_FREE(chunk);
        return -1;
    }
    if ((o.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        gpuprof__warn(GPUPROF__W_IO, "cannot write the trace to '%s': %s (check that the directory exists and is writable)", path, strerror(errno));
        close(in);
        GPUPROF_FREE(chunk);
        return -1;
    }
    while (off < end && !o.failed) {
        size_t want = end - off < (uint64_t)CHUNK ? (size_t)(end - off) : (size_t)CHUNK;
        ssize_t n = read(in, chunk, want);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            gpuprof__warn(GPUPROF__W_IO, "cannot read back the streamed trace '%s': %s; '%s' is incomplete", gpuprof__trace.out.path,
                          n < 0 ? strerror(errno) : "it is shorter than written", path);
            o.failed = 1;
            break;
        }
        gpuprof__trace_write(&o, chunk, (size_t)n);
        off += (uint64_t)n;
    }
    close(in);
    GPUPROF_FREE(chunk);
    pthread_mutex_lock(&gpuprof__lock);
    dropped = gpuprof__dropped();
    pthread_mutex_unlock(&gpuprof__lock);
    if (!o.failed) gpuprof__trace_stop(&o, events, dropped, 0, 0);
    if (close(o.fd) != 0 && !o.failed) {
        gpuprof__warn(GPUPROF__W_IO, "cannot write the trace to '%s': %s", path, strerror(errno));
        return -1;
    }
    return o.failed ? -1 : 0;
}

/* A window of time for a dump: CPU events' times are in ticks from the
   clock base, GPU and kernel capture's in ns from it. */
typedef struct gpuprof__window { uint64_t from_t, to_t, from_ns, to_ns; } gpuprof__window;

/* Does an event overlap the window? Kinds without a time there are kept. */
static int gpuprof__in_window(const gpuprof__event *e, const gpuprof__window *w) {
    uint64_t end;
    switch (e->type) {
    case GPUPROF__EV_RANGE: return e->ts <= w->to_t && e->ts + e->u.dur_ticks >= w->from_t;
    case GPUPROF__EV_COUNTER: case GPUPROF__EV_MARK: case GPUPROF__EV_STEP: return e->ts >= w->from_t && e->ts <= w->to_t;
    case GPUPROF__EV_GPU: case GPUPROF__EV_KERNEL: end = e->ts + e->u.dur_ns; break;
    case GPUPROF__EV_KAPI: end = e->ts + (e->u.dur_ns & ((1ull << 40) - 1)); break;
    default: return 1;
    }
    return e->ts <= w->to_ns && end >= w->from_ns;
}

/* A block's first n events that overlap the window into o, each with the
   records it carries (WORK, FLOW, KA, KB come just before it), through tmp. */
static void gpuprof__trace_window(gpuprof__tout *o, gpuprof__block *b, uint32_t n, const gpuprof__window *w, gpuprof__block *tmp) {
    uint32_t i, j, aux0 = 0;
    tmp->next = NULL;
    tmp->owner = b->owner;
    tmp->tid = b->tid;
    tmp->sort_index = b->sort_index;
    memcpy(tmp->label, b->label, sizeof tmp->label);
    tmp->count = tmp->done = tmp->aux = 0;
    for (i = 0; i < n; i++) {
        if (gpuprof__trace_is_aux(b->ev[i].type)) continue;
        if (gpuprof__in_window(&b->ev[i], w)) {
            for (j = aux0; j <= i; j++) tmp->ev[tmp->count++] = b->ev[j];
            tmp->aux += i - aux0;
        }
        aux0 = i + 1;
    }
    if (tmp->count) gpuprof__trace_events(o, tmp, 0, tmp->count);
}

/* A list of blocks, first to last, into a dump: all their events, or those in the window. */
static void gpuprof__dump_list(gpuprof__tout *o, gpuprof__block *b, gpuprof__block *last, const gpuprof__window *w, gpuprof__block *tmp) {
    for (; b && !o->failed; b = b == last ? NULL : b->next) {
        if (w) gpuprof__trace_window(o, b, b->count, w, tmp);
        else gpuprof__trace_events(o, b, 0, b->count);
    }
}

/* The formatter's state in a thread (its fmt). A dump formats with a fresh
   state and gives the one it found back after (a streamed trace's writer
   goes on with it). saved: per thread, its pointer then its state; under
   gpuprof__lock. */
#define GPUPROF__FMT_OFF offsetof(gpuprof__thread, fmt)
#define GPUPROF__FMT_LEN sizeof(((gpuprof__thread *)0)->fmt)
#define GPUPROF__FMT_SAVED (sizeof(gpuprof__thread *) + GPUPROF__FMT_LEN)
static void gpuprof__fmt_save(unsigned char *saved, uint32_t n) {
    gpuprof__thread *t;
    uint32_t i;
    for (i = 0, t = gpuprof__threads.threads; t && i < n; t = t->next, i++) {
        memcpy(saved + i * GPUPROF__FMT_SAVED, &t, sizeof t);
        memcpy(saved + i * GPUPROF__FMT_SAVED + sizeof t, (char *)t + GPUPROF__FMT_OFF, GPUPROF__FMT_LEN);
        memset((char *)t + GPUPROF__FMT_OFF, 0, GPUPROF__FMT_LEN);
    }
}
static void gpuprof__fmt_restore(const unsigned char *saved, uint32_t n) {
    gpuprof__thread *t;
    uint32_t i;
    for (i = 0; i < n; i++) {         /* threads added since are not among them; none is freed meanwhile */
        memcpy(&t, saved + i * GPUPROF__FMT_SAVED, sizeof t);
        GPUPROF_FREE(t->fmt.pf.iid);      /* the dump's interning tables */
        GPUPROF_FREE(t->fmt.pf.other);
        memcpy((char *)t + GPUPROF__FMT_OFF, saved + i * GPUPROF__FMT_SAVED + sizeof t, GPUPROF__FMT_LEN);
    }
}

/* gpuprof_write_trace(path) with the flight recorder, or a slow step's
   capture (the events in window w; all when NULL): the blocks on the ring,
   oldest first, then the events in blocks being filled; nothing leaves the
   ring meanwhile (recorders use the spare blocks), and recording goes on.
   The caller holds life_lock: one dump at a time. With a streamed trace (its
   written blocks kept for slow-step captures) the writer waits meanwhile,
   and the dump also reads the blocks queued for it. */
static int gpuprof__ring_dump(const char *path, const gpuprof__window *w) {
    gpuprof__tout o;
    gpuprof__block *b, *last, *q = NULL, *qlast = NULL, *tmp = NULL;
    uint64_t fell_out, from_ns, dropped;
    gpuprof__thread *t;
    struct gpuprof__live { gpuprof__block *b; uint32_t n; } *live = NULL;
    unsigned char *saved = NULL;
    uint32_t nlive = 0, nthreads = 0, i;
    int rc, stream = gpuprof__trace.mode == GPUPROF__TRACE_STREAM;
    memset(&o, 0, sizeof o);
    o.path = path;
    o.format = gpuprof__trace_format(path);
    if ((o.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        gpuprof__warn(GPUPROF__W_IO, "cannot write the trace to '%s': %s (check that the directory exists and is writable)", path, strerror(errno));
        return -1;
    }
    if (!gpuprof__trace.wbuf && !(gpuprof__trace.wbuf = (char *)gpuprof__alloc(GPUPROF__WBUF))) { close(o.fd); return -1; }
    if (stream) gpuprof__fmt_acquire();
    /* One instant for all: the ring as it is and the events in the blocks
       being filled, each thread's formatting state cleared. */
    pthread_mutex_lock(&gpuprof__lock);
    for (t = gpuprof__threads.threads; t; t = t->next) nthreads++;
    live = (struct gpuprof__live *)gpuprof__alloc((nthreads + 1) * sizeof *live);
    if (!(saved = (unsigned char *)gpuprof__alloc((nthreads + 1) * GPUPROF__FMT_SAVED))) o.failed = 1;
    pthread_mutex_lock(&gpuprof__trace_lock);
    gpuprof__trace.dumping = 1;
    b = gpuprof__trace.ring_head;
    last = gpuprof__trace.ring_tail;
    if (stream) { q = gpuprof__trace.queue_head; qlast = gpuprof__trace.queue_tail; }
    fell_out = gpuprof__trace.ring_fell_out;
    from_ns = gpuprof__trace.ring_from_ns;
    for (i = 0, t = gpuprof__threads.threads; t; t = t->next)
        if (live && t->block && (live[i].n = GPUPROF__LDA(&t->block->count)) != 0) live[i++].b = t->block;
    nlive = live ? i : 0;
    pthread_mutex_unlock(&gpuprof__trace_lock);
    if (saved) gpuprof__fmt_save(saved, nthreads);
    dropped = gpuprof__dropped();
    pthread_mutex_unlock(&gpuprof__lock);
    o.from_ns = from_ns;
    gpuprof__trace_start(&o);
    /* The lists stay as they are (blocks are only added after their last,
       nothing is evicted while dumping, the writer waits), and so do the
       states owning the blocks (freed at shutdown, which waits on life_lock). */
    if (w && !(tmp = (gpuprof__block *)gpuprof__alloc(sizeof *tmp))) o.failed = 1;
    gpuprof__dump_list(&o, b, last, w, tmp);
    gpuprof__dump_list(&o, q, qlast, w, tmp);
    for (i = 0; i < nlive && !o.failed; i++) {
        if (w) gpuprof__trace_window(&o, live[i].b, live[i].n, w, tmp);
        else gpuprof__trace_events(&o, live[i].b, 0, live[i].n);
    }
    GPUPROF_FREE(tmp);
    GPUPROF_FREE(live);
    if (saved) {
        pthread_mutex_lock(&gpuprof__lock);
        gpuprof__fmt_restore(saved, nthreads);
        pthread_mutex_unlock(&gpuprof__lock);
        GPUPROF_FREE(saved);
    }
    pthread_mutex_lock(&gpuprof__trace_lock);
    gpuprof__trace.dumping = 0;
    while (gpuprof__trace.ring_blocks > gpuprof__trace.ring_max) gpuprof__ring_evict();
    pthread_mutex_unlock(&gpuprof__trace_lock);
    gpuprof__trace_stop(&o, o.events, dropped, fell_out, from_ns);
    if (stream) gpuprof__fmt_release();
    rc = o.failed ? -1 : 0;
    if (close(o.fd) != 0 && !o.failed) {
        gpuprof__warn(GPUPROF__W_IO, "cannot write the trace to '%s': %s", path, strerror(errno));
        rc = -1;
    }
    return rc;
}

/* ----------------------------------------------------------------------
   Report collection: every thread's nodes merged into a flat table (by
   name) and a call tree (by path). Threads may go on recording meanwhile.
   ---------------------------------------------------------------------- */
typedef struct gpuprof__row {
    uint32_t name_id, depth;
    int32_t parent;
    int other;                  /* tree rows: recorded on a thread other than the one calling GPUPROF_STEP */
    int windowed;               /* the stepping thread's outer two levels: the time splits as below */
    double before_ns, in_ns, after_ns;   /* counted time before the first GPUPROF_STEP, between the first and the last, after the last */
    double out_ns;              /* of in_ns: in outlier steps (by time) */
    uint32_t out_runs;          /* outlier steps it ran in */
    uint64_t open_calls;        /* mid-run: calls open now (not in stats), ... */
    double open_ns;             /* ... and their time so far */
    double q[4];                /* counters: p50, p90, p95, p99 of the kept samples, exactly */
    uint64_t q_over;            /* ... over this many samples (0: from the histogram) */
    double *vals;               /* counters, while collecting: the kept samples of every thread */
    uint64_t nvals, vals_seen;  /* kept, and added in all (more than kept: the older ones are gone) */
    uint32_t win_node;          /* windowed: the stepping thread's node index + 1 (kinds' times are by node) */
    uint64_t self_ns, excluded;
    double flops, bytes, last;
    uint64_t gpu_self_ns, gpu_excluded;
    int64_t gpu_lag_ns, gpu_wait_ns;
    int64_t mem_delta, dev_delta;     /* mem_ranges: sums of the changes, over mem_calls / dev_calls */
    uint64_t mem_calls, dev_calls;
    uint64_t kernel_calls, kernel_ns; /* kernel capture: kernels launched inside the range itself */
    uint64_t kuf_ns, ktc_ns;          /* ... in launches that leave most SMs idle, and on the tensor cores */
    uint64_t copy_ns, copy_bytes, copy_pageable, sync_ns;
    uint64_t gpu_nowork;        /* GPUPROF_GPU=kernels: counted calls that launched nothing (no GPU time) */
    uint64_t kspan_self_ns, kspan_nowork;   /* kernel capture: the GPU time from kernels' own work, calls without any */
    gpuprof_stats stats;
    gpuprof_stats gpu;          /* GPU time (CUDA builds) */
    gpuprof_stats kspan;        /* kernel capture: GPU time from the kernels launched inside (first start to last end) */
} gpuprof__row;

typedef struct gpuprof__snap {
    gpuprof__row *flat, *tree, *counters;
    gpuprof__row **flatp;       /* the flat rows in display order */
    uint32_t nflat, ntree, ncounters;
    uint32_t *order;            /* tree rows in display order (depth first, larger totals first) */
    uint32_t norder;
    double profiled_ns;         /* sum of self times: time spent inside any range */
    double gpu_ns;              /* sum of GPU self times */
    int has_gpu;                /* some range has GPU time: tables sort by it */
    uint64_t marks, dropped, excluded_calls;
    uint64_t dropped_full, trace_buffered;   /* trace events dropped for want of a free block; waiting in blocks (streaming) */
    uint64_t trace_written;                  /* events in the streamed file, at the same instant as trace_buffered */
    uint32_t nout;                          /* outlier steps: how many, which (the first few), their total time, the median step */
    uint64_t out_steps[8];
    double out_dur, out_median;
    unsigned char out_real[GPUPROF__OUTLIERS];
    gpuprof__kind *kinds;                   /* copies of the stepping thread's kinds of step (their sets and times) */
    uint32_t nkinds;
    int typical;                            /* the kind with the most steps (-1: none) */
    unsigned char kind_rare[GPUPROF__KINDS];   /* running ranges the typical kind does not, in few steps: set apart */
    unsigned char kind_copy[GPUPROF__KINDS];   /* gpuprof__steps.kinds' index -> its copy's + 1 (0: not copied, another thread's) */
    gpuprof__point *series;                 /* a copy of the run over time */
    uint32_t npoints, per_point, nph;
    uint32_t ph_name[GPUPROF__SERIES_PH];
    unsigned checkpoint;                    /* a summary made as checkpoint n (0: not one) */
    const char *series_json;                /* the summary's steps.over_time, formatted before (gpuprof__make), or NULL */
    size_t series_json_len;
    uint32_t nthreads;
    gpuprof__memstate *mem;     /* a copy of the memory state (its table left out) */
} gpuprof__snap;

/* Empties an accumulator that only this thread uses, zeroing just the
   buckets its samples can be in. */
static void gpuprof__stats_clear_used(gpuprof_stats *s) {
    if (s->count) {
        int first, last;
        gpuprof__stats_span(s, s->min, s->max, &first, &last);
        memset(&s->bucket[first], 0, (size_t)(last - first + 1) * sizeof s->bucket[0]);
    }
    memset(s, 0, offsetof(gpuprof_stats, bucket));
}

/* A node's GPU figures (g may be NULL) into a row's: the `pre` calls as
   for the CPU statistics (see gpuprof__exclude). */
static void gpuprof__row_gpustat(gpuprof_stats *stats, uint64_t *self, uint64_t *nowork, uint64_t *excluded, gpuprof__gpustat *g) {
    gpuprof_stats *pre;
    if (!g) return;
    pre = (gpuprof_stats *)GPUPROF__LDA(&g->pre);
    gpuprof_stats_merge(stats, &g->stats);
    *self += GPUPROF__LD(&g->self_ns);
    *nowork += GPUPROF__LD(&g->nowork);
    *excluded += GPUPROF__LD(&g->excluded);
    if (!pre) return;
    if (GPUPROF__LD(&gpuprof__steps.seen)) *excluded += gpuprof_stats_count(pre);
    else { gpuprof_stats_merge(stats, pre); *self += GPUPROF__LD(&g->pre_self_ns); }
}

static void gpuprof__row_add(gpuprof__row *r, gpuprof__node *n) {
    gpuprof_stats *pre = (gpuprof_stats *)GPUPROF__LDA(&n->pre);
    gpuprof_stats_merge(&r->stats, &n->stats);
    r->self_ns += GPUPROF__LD(&n->self_ns);
    r->excluded += GPUPROF__LD(&n->excluded);
    r->flops += gpuprof__ldd(&n->flops);
    r->bytes += gpuprof__ldd(&n->bytes);
    r->last = gpuprof__ldd(&n->last);
    r->mem_delta += GPUPROF__LD(&n->mem_delta);
    r->dev_delta += GPUPROF__LD(&n->dev_delta);
    r->mem_calls += GPUPROF__LD(&n->mem_calls);
    r->dev_calls += GPUPROF__LD(&n->dev_calls);
    r->kernel_calls += GPUPROF__LD(&n->kernel_calls);
    r->kernel_ns += GPUPROF__LD(&n->kernel_ns);
    r->kuf_ns += GPUPROF__LD(&n->kuf_ns);
    r->ktc_ns += GPUPROF__LD(&n->ktc_ns);
    r->copy_ns += GPUPROF__LD(&n->copy_ns);
    r->copy_bytes += GPUPROF__LD(&n->copy_bytes);
    r->copy_pageable += GPUPROF__LD(&n->copy_pageable);
    r->sync_ns += GPUPROF__LD(&n->sync_ns);
    if (pre) {
        /* See gpuprof__exclude: warm-up if steps were used, ordinary calls if not. */
        if (GPUPROF__LD(&gpuprof__steps.seen)) r->excluded += gpuprof_stats_count(pre);
        else { gpuprof_stats_merge(&r->stats, pre); r->self_ns += GPUPROF__LD(&n->pre_self_ns); }
    }
    {
        gpuprof__gpustat *g = (gpuprof__gpustat *)GPUPROF__LDA(&n->gpu);
        uint64_t kspan_excluded = 0;
        gpuprof__row_gpustat(&r->gpu, &r->gpu_self_ns, &r->gpu_nowork, &r->gpu_excluded, g);
        if (g) {
            r->gpu_lag_ns += GPUPROF__LD(&g->lag_ns);
            r->gpu_wait_ns += GPUPROF__LD(&g->wait_ns);
        }
        gpuprof__row_gpustat(&r->kspan, &r->kspan_self_ns, &r->kspan_nowork, &kspan_excluded, (gpuprof__gpustat *)GPUPROF__LDA(&n->kspan));
    }
}

/* The steps are the windows between consecutive GPUPROF_STEP calls. The
   stepping thread's outer two levels of ranges (phases, and those inside a
   range wrapping the step) keep their counted time at the first and the
   last GPUPROF_STEP, so their time splits into before the steps (a model
   load), in them, and after them (teardown). */
static void gpuprof__row_window(gpuprof__row *r, gpuprof__node *n, const gpuprof__thread *t, const gpuprof__snap *s) {
    double sum = r->stats.sum, first, last;
    uint32_t i, k;
    if (t != gpuprof__steps.stepper || !(n->parent == &t->root || (n->parent && n->parent->parent == &t->root))) {
        r->in_ns = sum;
        return;
    }
    first = gpuprof__ldd(&n->win_first);
    last = gpuprof__ldd(&n->win_last);
    if (last > sum) last = sum;                      /* statistics cleared since (gpuprof_reset) */
    if (first > last) first = last;
    r->windowed = 1;
    r->win_node = n->index + 1;
    r->before_ns = first;
    r->in_ns = last - first;
    r->after_ns = sum - last;
    for (i = 0; i < gpuprof__steps.noutl; i++)
        if (s->out_real[i])
            for (k = 0; k < gpuprof__steps.outl[i].n; k++)
                if (gpuprof__steps.outl[i].ran[k].index == n->index) { r->out_ns += gpuprof__steps.outl[i].ran[k].ns; r->out_runs++; }
    if (r->out_ns > r->in_ns) r->out_ns = r->in_ns;
}

/* Under gpuprof__lock: the stepping thread's kinds of step, copied; the
   typical one (the most steps); the rare ones running ranges it does not. */
static void gpuprof__kinds_snap(gpuprof__snap *s) {
    uint32_t k, i, j;
    const gpuprof__kind *ty;
    s->typical = -1;
    if (!gpuprof__steps.nkinds || !(s->kinds = (gpuprof__kind *)gpuprof__zalloc(gpuprof__steps.nkinds * sizeof *s->kinds))) return;
    for (k = 0; k < gpuprof__steps.nkinds; k++) {
        const gpuprof__kind *g = &gpuprof__steps.kinds[k];
        gpuprof__kind *c = &s->kinds[s->nkinds];
        if (g->thread != (const void *)gpuprof__steps.stepper) continue;
        *c = *g;
        c->set = (uint32_t *)gpuprof__alloc((g->nset ? g->nset : 1) * sizeof *c->set);
        c->ns = (double *)gpuprof__alloc((g->nns ? g->nns : 1) * sizeof *c->ns);
        if (!c->set || !c->ns) { GPUPROF_FREE(c->set); GPUPROF_FREE(c->ns); memset(c, 0, sizeof *c); continue; }
        if (g->nset) memcpy(c->set, g->set, g->nset * sizeof *c->set);
        if (g->nns) memcpy(c->ns, g->ns, g->nns * sizeof *c->ns);
        if (s->typical < 0 || c->steps > s->kinds[s->typical].steps) s->typical = (int)s->nkinds;
        s->kind_copy[k] = (unsigned char)++s->nkinds;
    }
    if (s->typical < 0) return;
    ty = &s->kinds[s->typical];
    for (k = 0; k < s->nkinds; k++) {
        const gpuprof__kind *c = &s->kinds[k];
        int extra = 0;
        if ((int)k == s->typical || (double)c->steps > GPUPROF__KIND_RARE * (double)gpuprof__steps.stats.count) continue;
        for (i = 0; i < c->nset && !extra; i++) {
            for (j = 0; j < ty->nset && ty->set[j] != c->set[i]; j++) {}
            extra = j == ty->nset;
        }
        s->kind_rare[k] = (unsigned char)extra;
    }
}

/* Under gpuprof__lock: a copy of the run over time (out of memory: none). */
static void gpuprof__series_snap(gpuprof__snap *s) {
    if (gpuprof__steps.npoints && (s->series = (gpuprof__point *)gpuprof__alloc(gpuprof__steps.npoints * sizeof *s->series)) != NULL) {
        memcpy(s->series, gpuprof__steps.series, gpuprof__steps.npoints * sizeof *s->series);
        s->npoints = gpuprof__steps.npoints;
        s->per_point = gpuprof__steps.per_point;
        s->nph = gpuprof__steps.nph;
        memcpy(s->ph_name, gpuprof__steps.ph_name, sizeof s->ph_name);
    }
}

/* Is candidate i of a kind set apart (counted there, not as an outlier)? */
static int gpuprof__outl_rare(const gpuprof__snap *s, uint32_t i) {
    int k = gpuprof__steps.outl[i].kind;
    return k >= 0 && s->kind_copy[k] && s->kind_rare[s->kind_copy[k] - 1];
}

/* Under gpuprof__lock: the kinds of step, and which candidate steps of the
   others are outliers, against the median of all counted steps. */
static void gpuprof__outliers(gpuprof__snap *s) {
    const gpuprof_stats *st = &gpuprof__steps.stats;
    uint32_t i;
    gpuprof__kinds_snap(s);
    gpuprof__series_snap(s);
    if (st->count < 5 || gpuprof__steps.outl_full) return;
    s->out_median = gpuprof_stats_quantile(st, 0.5);
    for (i = 0; i < gpuprof__steps.noutl; i++) {
        if (!(gpuprof__steps.outl[i].dur > GPUPROF__OUTLIER_X * s->out_median) || gpuprof__outl_rare(s, i)) continue;
        s->out_real[i] = 1;
        if (s->nout < 8) s->out_steps[s->nout] = gpuprof__steps.outl[i].step;
        s->nout++;
        s->out_dur += gpuprof__steps.outl[i].dur;
    }
    if (s->nout * 2 >= st->count) { s->nout = 0; s->out_dur = 0; memset(s->out_real, 0, sizeof s->out_real); }   /* not outliers: half the steps */
}

/* Adds one row into another (a node read once goes to its flat and its tree
   row, so the two tables agree even while the node's thread records). */
static void gpuprof__row_merge(gpuprof__row *dst, const gpuprof__row *src) {
    gpuprof_stats_merge(&dst->stats, &src->stats);
    dst->open_calls += src->open_calls;
    dst->open_ns += src->open_ns;
    gpuprof_stats_merge(&dst->gpu, &src->gpu);
    dst->self_ns += src->self_ns;
    dst->excluded += src->excluded;
    dst->flops += src->flops;
    dst->bytes += src->bytes;
    dst->last = src->last;
    dst->gpu_self_ns += src->gpu_self_ns;
    dst->gpu_excluded += src->gpu_excluded;
    dst->gpu_nowork += src->gpu_nowork;
    gpuprof_stats_merge(&dst->kspan, &src->kspan);
    dst->kspan_self_ns += src->kspan_self_ns;
    dst->kspan_nowork += src->kspan_nowork;
    dst->gpu_lag_ns += src->gpu_lag_ns;
    dst->gpu_wait_ns += src->gpu_wait_ns;
    dst->mem_delta += src->mem_delta;
    dst->dev_delta += src->dev_delta;
    dst->mem_calls += src->mem_calls;
    dst->dev_calls += src->dev_calls;
    dst->kernel_calls += src->kernel_calls;
    dst->kernel_ns += src->kernel_ns;
    dst->kuf_ns += src->kuf_ns;
    dst->ktc_ns += src->ktc_ns;
    dst->copy_ns += src->copy_ns;
    dst->sync_ns += src->sync_ns;
    dst->copy_bytes += src->copy_bytes;
    dst->copy_pageable += src->copy_pageable;
    dst->windowed |= src->windowed;
    dst->before_ns += src->before_ns;
    dst->in_ns += src->in_ns;
    dst->after_ns += src->after_ns;
    dst->out_ns += src->out_ns;
    dst->out_runs += src->out_runs;
    if (src->win_node) dst->win_node = src->win_node;
}

/* The next row of a zeroed array (gpuprof__zalloc): already empty. */
static gpuprof__row *gpuprof__row_new(gpuprof__row *rows, uint32_t *n, uint32_t name_id, uint32_t depth, int32_t parent) {
    gpuprof__row *r = &rows[(*n)++];
    r->name_id = name_id;
    r->depth = depth;
    r->parent = parent;
    return r;
}

static gpuprof__snap *gpuprof__collect_snap;   /* for the qsort comparators */
/* Tables sort by GPU total time when there is GPU time, else by CPU total. */
static double gpuprof__row_key(const gpuprof__row *r) { return gpuprof__collect_snap->has_gpu ? r->gpu.sum : r->stats.sum; }
static int gpuprof__by_total(const void *a, const void *b) {
    const gpuprof__row *rows = gpuprof__collect_snap->tree;
    double x = gpuprof__row_key(&rows[*(const uint32_t *)a]), y = gpuprof__row_key(&rows[*(const uint32_t *)b]);
    return x < y ? 1 : x > y ? -1 : (int)(*(const uint32_t *)a) - (int)(*(const uint32_t *)b);
}
static int gpuprof__flat_by_total(const void *a, const void *b) {
    const gpuprof__row *ra = *(const gpuprof__row *const *)a, *rb = *(const gpuprof__row *const *)b;
    double x = gpuprof__row_key(ra), y = gpuprof__row_key(rb);
    return x < y ? 1 : x > y ? -1 : (int)ra->name_id - (int)rb->name_id;
}

static void gpuprof__snap_free(gpuprof__snap *s) {
    uint32_t k;
    GPUPROF_FREE(s->series);
    for (k = 0; s->counters && k < s->ncounters; k++) GPUPROF_FREE(s->counters[k].vals);
    for (k = 0; k < s->nkinds; k++) { GPUPROF_FREE(s->kinds[k].set); GPUPROF_FREE(s->kinds[k].ns); }
    GPUPROF_FREE(s->kinds);
    GPUPROF_FREE(s->flat);
    GPUPROF_FREE(s->flatp);
    GPUPROF_FREE(s->tree);
    GPUPROF_FREE(s->counters);
    GPUPROF_FREE(s->order);
    GPUPROF_FREE(s->mem);
    memset(s, 0, sizeof *s);
}

/* Under gpuprof__lock, for a report: events dropped because no block was
   free, and (while the trace streams) those recorded but not written yet. */
static void gpuprof__trace_pending(gpuprof__snap *s) {
    gpuprof__thread *t;
    gpuprof__block *b;
    s->dropped_full = s->trace_buffered = 0;
    s->trace_written = GPUPROF__LD(&gpuprof__trace.parts_events) + GPUPROF__LD(&gpuprof__trace.out.events);
    for (t = gpuprof__threads.threads; t; t = t->next) s->dropped_full += GPUPROF__LD(&t->dropped);
    if (gpuprof__trace.mode != GPUPROF__TRACE_STREAM || gpuprof__trace.finished) return;
    /* Written and waiting counted at one instant: while the writer waits
       (it never waits for gpuprof__lock, which the caller holds). */
    gpuprof__fmt_acquire();
    pthread_mutex_lock(&gpuprof__trace_lock);
    s->trace_written = GPUPROF__LD(&gpuprof__trace.parts_events) + GPUPROF__LD(&gpuprof__trace.out.events);
    for (b = gpuprof__trace.queue_head; b; b = b->next) s->trace_buffered += b->count - GPUPROF__LD(&b->done);
    for (t = gpuprof__threads.threads; t; t = t->next)
        if (t->block) s->trace_buffered += GPUPROF__LDA(&t->block->count) - GPUPROF__LD(&t->block->done);
    pthread_mutex_unlock(&gpuprof__trace_lock);
    gpuprof__fmt_release();
}

/* The collector's working tables (freed when the snapshot is made). */
typedef struct gpuprof__collector {
    uint32_t total, ncount;       /* nodes and counters of all threads, as counted first */
    uint32_t *flat_of;            /* name id -> flat row (tagged 0x80000000: that name's only tree row) */
    uint32_t *hash, mask;         /* (parent row, name) -> tree row */
    uint32_t *tree_of;            /* a thread's node index -> tree row */
    uint32_t *seen, nseen;        /* names in the order met */
    uint32_t nrows;               /* flat rows made */
    gpuprof__row *one;            /* one node, read once */
} gpuprof__collector;

static void gpuprof__collector_free(gpuprof__collector *c) {
    GPUPROF_FREE(c->flat_of);
    GPUPROF_FREE(c->hash);
    GPUPROF_FREE(c->tree_of);
    GPUPROF_FREE(c->seen);
    GPUPROF_FREE(c->one);
}

/* Threads may add nodes and counters while a report runs: each thread's
   count is taken once here, and only that many are read afterwards. */
static void gpuprof__collect_counts(gpuprof__snap *s, gpuprof__collector *c) {
    gpuprof__thread *t;
    uint32_t i;
    gpuprof__rec_drain_all();      /* every call that ended so far */
    for (t = gpuprof__threads.threads; t; t = t->next) {
        t->snap_nodes = GPUPROF__LDA(&t->nnodes);
        c->total += t->snap_nodes + 1;
        for (i = 0; i < gpuprof__registry.max_ids; i++) if (GPUPROF__LDA(&t->counters[i])) c->ncount++;
        s->marks += GPUPROF__LD(&t->marks);
        s->nthreads++;
    }
    s->dropped = gpuprof__dropped();
    gpuprof__trace_pending(s);
    gpuprof__outliers(s);
}

static int gpuprof__collect_alloc(gpuprof__snap *s, gpuprof__collector *c) {
    uint32_t total = c->total;
    c->mask = 1;
    while (c->mask < 2 * total + 2) c->mask <<= 1;
    s->flat = (gpuprof__row *)gpuprof__zalloc((total + 1) * sizeof *s->flat);
    s->tree = (gpuprof__row *)gpuprof__zalloc((total + 1) * sizeof *s->tree);
    s->counters = (gpuprof__row *)gpuprof__zalloc((c->ncount + 1) * sizeof *s->counters);
    s->order = (uint32_t *)gpuprof__alloc((total + 1) * sizeof *s->order);
    c->flat_of = (uint32_t *)gpuprof__alloc(gpuprof__registry.max_ids * sizeof *c->flat_of);
    c->hash = (uint32_t *)gpuprof__alloc(c->mask * sizeof *c->hash);
    c->tree_of = (uint32_t *)gpuprof__alloc((size_t)(gpuprof__g.cfg.max_nodes + GPUPROF__NODE_CHUNK + 1) * sizeof *c->tree_of);
    c->one = (gpuprof__row *)gpuprof__zalloc(sizeof *c->one);
    c->seen = (uint32_t *)gpuprof__alloc((total + 1) * sizeof *c->seen);
    if (!s->flat || !s->tree || !s->counters || !s->order || !c->flat_of || !c->hash || !c->tree_of || !c->one || !c->seen) return -1;
    memset(c->flat_of, 0xff, gpuprof__registry.max_ids * sizeof *c->flat_of);
    memset(c->hash, 0xff, c->mask * sizeof *c->hash);
    c->mask--;
    return 0;
}

/* Mid-run (a checkpoint, a summary or report asked for while running): the
   ranges open now on thread t, outermost first, with their begin ticks;
   their calls are not in the statistics yet. The owner stores its depth and
   frames with relaxed atomic stores: a frame that opens or closes meanwhile
   may be seen or not. At shutdown none is counted (they are warned of). */
#define GPUPROF__OPEN_MAX 32
static uint32_t gpuprof__open_frames(gpuprof__thread *t, const gpuprof__node **node, uint64_t *t0) {
    uint32_t d, i, n = 0;
    if (GPUPROF__LD(&gpuprof__g.state) != GPUPROF__RUNNING || t->exited) return 0;
    d = GPUPROF__LD(&t->depth);
    if (d > GPUPROF_MAX_DEPTH) d = GPUPROF_MAX_DEPTH;
    for (i = 0; i < d && n < GPUPROF__OPEN_MAX; i++) {
        const gpuprof__node *nd = GPUPROF__LD(&t->stack[i].node);
        if (!nd) continue;
        node[n] = nd;
        t0[n++] = GPUPROF__LD(&t->stack[i].t0);
    }
    return n;
}

/* One thread's nodes into the tree (by call path) and the flat table (by name). */
static void gpuprof__collect_nodes(gpuprof__snap *s, gpuprof__collector *c, gpuprof__thread *t) {
    uint32_t nn = t->snap_nodes, k, f;
    gpuprof__row *one = c->one;
    /* Once a thread calls GPUPROF_STEP, the outermost ranges of the others
       (a logger, data workers, OpenMP's) are rows of their own: they are not
       phases of the step. */
    int other = gpuprof__steps.stepper && t != gpuprof__steps.stepper;
    const gpuprof__node *open[GPUPROF__OPEN_MAX];
    uint64_t open_t0[GPUPROF__OPEN_MAX], now = gpuprof__ticks();
    uint32_t nopen = gpuprof__open_frames(t, open, open_t0), i;
    for (k = 0; k <= nn; k++) {
        gpuprof__node *n = k < nn ? gpuprof__node_at(t, k) : &t->overflow;
        /* parents come before their children; the root and the overflow
           node (index -1, -2) have no row */
        uint32_t parent_row = n->parent && n->parent->index < k ? c->tree_of[n->parent->index] : 0xffffffffu, slot, row;
        if (k == nn && !GPUPROF__LD(&n->stats.count) && !GPUPROF__LD(&n->excluded)) break;
        memset(one, 0, offsetof(gpuprof__row, stats));
        gpuprof__stats_clear_used(&one->stats);
        gpuprof__stats_clear_used(&one->gpu);
        gpuprof__stats_clear_used(&one->kspan);
        gpuprof__row_add(one, n);
        gpuprof__row_window(one, n, t, s);
        for (i = 0; i < nopen; i++)
            if (open[i] == n) { one->open_calls++; one->open_ns += now > open_t0[i] ? (double)gpuprof__ticks_to_ns(now - open_t0[i]) : 0; }
        /* tree: the row of (parent row, name) */
        for (slot = (n->name_id * 2654435761u ^ parent_row * 40503u ^ (uint32_t)other) & c->mask;; slot = (slot + 1) & c->mask) {
            row = c->hash[slot];
            if (row == 0xffffffffu) {
                row = s->ntree;
                gpuprof__row_new(s->tree, &s->ntree, n->name_id,
                                 parent_row == 0xffffffffu ? 0 : s->tree[parent_row].depth + 1, (int32_t)parent_row)->other = other;
                c->hash[slot] = row;
                break;
            }
            if (s->tree[row].name_id == n->name_id && (uint32_t)s->tree[row].parent == parent_row && s->tree[row].other == other) break;
        }
        gpuprof__row_merge(&s->tree[row], one);
        if (k < nn) c->tree_of[k] = row;
        /* flat: a name met on one call path is that path's tree row
           (tagged); met on a second path, it gets a row of its own */
        f = c->flat_of[n->name_id];
        if (f == 0xffffffffu) {
            c->flat_of[n->name_id] = row | 0x80000000u;
            c->seen[c->nseen++] = n->name_id;
        } else if (f & 0x80000000u) {
            if ((f & 0x7fffffffu) != row) {
                gpuprof__row *fr = gpuprof__row_new(s->flat, &c->nrows, n->name_id, 0, -1);
                gpuprof__row_merge(fr, &s->tree[f & 0x7fffffffu]);
                gpuprof__row_merge(fr, one);
                c->flat_of[n->name_id] = c->nrows - 1;
            }
        } else gpuprof__row_merge(&s->flat[f], one);
    }
}

/* A thread's kept samples of a counter into its row. The owner may add
   meanwhile: only the samples added before n was read are taken (a ring
   slot overwritten during the copy gives a newer sample of the same counter). */
static void gpuprof__vals_collect(gpuprof__row *r, gpuprof__vals *v) {
    uint64_t n, kept, i, cap = (uint64_t)GPUPROF__VALS_CHUNK * GPUPROF__VALS_CHUNKS;
    double *all;
    if (!v || !(n = GPUPROF__LDA(&v->n))) return;
    kept = n < cap ? n : cap;
    r->vals_seen += n;
    if (!(all = (double *)gpuprof__grow(r->vals, sizeof *all, r->nvals, r->nvals + kept))) { r->vals_seen = UINT64_MAX; return; }
    r->vals = all;
    for (i = n - kept; i < n; i++) {
        const double *c = (const double *)GPUPROF__LDA(&v->chunk[(i / GPUPROF__VALS_CHUNK) % GPUPROF__VALS_CHUNKS]);
        all[r->nvals++] = c ? gpuprof__ldd(&c[i % GPUPROF__VALS_CHUNK]) : GPUPROF__NAN;
    }
}

/* qsort's order of doubles (the run over time's medians; the ranks'). */
static int gpuprof__cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The k-th smallest of v[lo..hi] (0-based over v; v reordered around it):
   quickselect, linear on average (a report made under gpuprof__lock sorts
   nothing: 65536 samples take a fraction of a millisecond). */
static double gpuprof__select(double *v, uint64_t lo, uint64_t hi, uint64_t k) {
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2], x;
        uint64_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) { x = v[i]; v[i] = v[j]; v[j] = x; i++; if (j == 0) break; j--; }
        }
        if (k <= j && j != (uint64_t)-1) hi = j;
        else if (k >= i) lo = i;
        else return v[k];
    }
    return v[k];
}

/* A counter row's exact quantiles from its kept samples, when they are the
   samples its statistics hold (all of them, or the latest of them). */
static void gpuprof__vals_quantiles(gpuprof__row *r) {
    static const double qs[4] = { 0.5, 0.9, 0.95, 0.99 };
    uint64_t i, n = r->nvals;
    int q;
    if (n && r->vals_seen == r->stats.count) {
        for (q = 0; q < 4; q++) {       /* between the two nearest samples, as numpy's default */
            double pos = qs[q] * (double)(n - 1), lo = floor(pos), a, b;
            uint64_t k = (uint64_t)lo;
            a = gpuprof__select(r->vals, 0, n - 1, k);
            for (b = a, i = k + 1; i < n; i++) if (i == k + 1 || r->vals[i] < b) b = r->vals[i];   /* the next: the least above k */
            r->q[q] = k + 1 < n ? a + (pos - lo) * (b - a) : a;
        }
        r->q_over = n;
    }
    GPUPROF_FREE(r->vals);
    r->vals = NULL;
}

static void gpuprof__collect_counters(gpuprof__snap *s, gpuprof__collector *c, gpuprof__thread *t) {
    uint32_t i, k;
    for (k = 0; k < gpuprof__registry.max_ids; k++) {
        gpuprof__node *cn = (gpuprof__node *)GPUPROF__LDA(&t->counters[k]);
        if (!cn) continue;
        for (i = 0; i < s->ncounters && s->counters[i].name_id != k; i++) {}
        if (i == s->ncounters) {
            if (s->ncounters > c->ncount) continue;        /* created since the counts: next report */
            gpuprof__row_new(s->counters, &s->ncounters, k, 0, -1);
        }
        gpuprof__row_add(&s->counters[i], cn);
        gpuprof__vals_collect(&s->counters[i], (gpuprof__vals *)GPUPROF__LDA(&cn->vals));
    }
}

/* The flat table: rows are ~17 KiB (two histograms), so it is pointers, sorted. */
static int gpuprof__collect_flat(gpuprof__snap *s, const gpuprof__collector *c) {
    uint32_t i;
    if (!(s->flatp = (gpuprof__row **)gpuprof__alloc((c->nseen + 1) * sizeof *s->flatp))) return -1;
    s->nflat = c->nseen;
    for (i = 0; i < c->nseen; i++) {
        uint32_t fl = c->flat_of[c->seen[i]];
        gpuprof__row *r = s->flatp[i] = fl & 0x80000000u ? &s->tree[fl & 0x7fffffffu] : &s->flat[fl];
        s->profiled_ns += (double)r->self_ns;
        s->excluded_calls += r->excluded;
        s->gpu_ns += (double)r->gpu_self_ns;
        if (r->gpu.count) s->has_gpu = 1;
    }
    gpuprof__collect_snap = s;
    qsort(s->flatp, s->nflat, sizeof *s->flatp, gpuprof__flat_by_total);
    return 0;
}

/* Display order of the tree: children sorted by total, depth first. The
   collector's hash table (mask+1 >= ntree+1 entries) serves as scratch. */
static int gpuprof__collect_tree_order(gpuprof__snap *s, gpuprof__collector *c) {
    uint32_t *kids = (uint32_t *)gpuprof__alloc((s->ntree + 1) * sizeof *kids);
    uint32_t *first = (uint32_t *)gpuprof__alloc((s->ntree + 2) * sizeof *first);
    uint32_t *stack = (uint32_t *)gpuprof__alloc((s->ntree + 1) * sizeof *stack), *cursor = c->hash, sp = 0, nk = 0, r;
    if (!kids || !first || !stack) { GPUPROF_FREE(kids); GPUPROF_FREE(first); GPUPROF_FREE(stack); return -1; }
    /* group children by parent (counting sort), root's children last */
    memset(first, 0, (s->ntree + 2) * sizeof *first);
    for (r = 0; r < s->ntree; r++) first[(s->tree[r].parent < 0 ? s->ntree : (uint32_t)s->tree[r].parent) + 1]++;
    for (r = 0; r <= s->ntree; r++) first[r + 1] += first[r];
    for (r = 0; r <= s->ntree; r++) cursor[r] = first[r];
    for (r = 0; r < s->ntree; r++) {
        uint32_t p = s->tree[r].parent < 0 ? s->ntree : (uint32_t)s->tree[r].parent;
        kids[cursor[p]++] = r;
    }
    gpuprof__collect_snap = s;
    for (r = 0; r <= s->ntree; r++) qsort(kids + first[r], first[r + 1] - first[r], sizeof *kids, gpuprof__by_total);
    /* iterative depth-first walk; push children in reverse so the largest comes first */
    for (r = first[s->ntree + 1]; r > first[s->ntree]; r--) stack[sp++] = kids[r - 1];
    while (sp) {
        uint32_t x = stack[--sp];
        s->order[nk++] = x;
        for (r = first[x + 1]; r > first[x]; r--) stack[sp++] = kids[r - 1];
    }
    GPUPROF_ASSERT(nk == s->ntree);             /* every row reached once from the roots */
    s->norder = nk;
    GPUPROF_FREE(stack);
    GPUPROF_FREE(kids);
    GPUPROF_FREE(first);
    return 0;
}

/* Under gpuprof__lock: every thread's nodes merged into rows (counts, rows,
   counters, flat table, tree order), and a copy of the memory state. */
static int gpuprof__collect(gpuprof__snap *s) {
    gpuprof__collector c;
    gpuprof__thread *t;
    memset(s, 0, sizeof *s);
    memset(&c, 0, sizeof c);
    gpuprof__collect_counts(s, &c);
    if (gpuprof__collect_alloc(s, &c) != 0) goto fail;
    for (t = gpuprof__threads.threads; t; t = t->next) {
        gpuprof__collect_nodes(s, &c, t);
        gpuprof__collect_counters(s, &c, t);
    }
    {
        uint32_t i;
        for (i = 0; i < s->ncounters; i++) gpuprof__vals_quantiles(&s->counters[i]);
    }
    GPUPROF_ASSERT(c.nrows <= c.total + 1 && s->ntree <= c.total + 1 && s->ncounters <= c.ncount + 1 && c.nseen <= c.total + 1);
    if (gpuprof__collect_flat(s, &c) != 0 || gpuprof__collect_tree_order(s, &c) != 0) goto fail;
    gpuprof__collector_free(&c);
    if ((s->mem = (gpuprof__memstate *)gpuprof__alloc(sizeof *s->mem)) != NULL) {
        pthread_mutex_lock(&gpuprof__mem_mu);
        *s->mem = gpuprof__mem;
        pthread_mutex_unlock(&gpuprof__mem_mu);
        s->mem->tab = NULL;
    }
    return 0;
fail:
    gpuprof__collector_free(&c);
    gpuprof__snap_free(s);
    return -1;
}

/* ----------------------------------------------------------------------
   Text report, its cells: terminal widths, names cut to a column, times.
   ---------------------------------------------------------------------- */
/* Terminal columns of a code point: 2 for East Asian wide and fullwidth
   characters and most emoji, else 1. */
static int gpuprof__columns(uint32_t cp) {
    return (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf && cp != 0x303f) ||
           (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) ||
           (cp >= 0xff00 && cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1faff) ||
           (cp >= 0x20000 && cp <= 0x3fffd) ? 2 : 1;
}

/* Display width of a name in the table (see gpuprof__name_cell). */
static size_t gpuprof__width(const char *s) {
    size_t w = 0, n = strlen(s), i = 0, len;
    uint32_t cp;
    while (i < n) {
        len = gpuprof__utf8(s + i, n - i, &cp);
        w += len ? (size_t)gpuprof__columns(cp) : 1;
        i += len ? len : 1;
    }
    return w;
}

/* The name in a column of `width`, indented: control characters and bytes
   that are not UTF-8 shown as '?', cut with "..." when too long. */
static void gpuprof__name_cell(gpuprof__buf *b, const char *text, size_t width, size_t indent) {
    char cell[GPUPROF_NAME_MAX * 2 + 256];
    size_t o = 0, w = indent, i = 0, n = strlen(text), len, full = gpuprof__width(text) + indent;
    uint32_t cp;
    size_t room = full > width ? width - 3 : width;            /* leave room for "..." */
    memset(cell, ' ', indent < 200 ? indent : 200);
    o = indent < 200 ? indent : 200;
    while (i < n && o < sizeof cell - 16) {
        int cols;
        len = gpuprof__utf8(text + i, n - i, &cp);
        cols = len ? gpuprof__columns(cp) : 1;
        if (w + (size_t)cols > room) break;
        if (!len || cp < 0x20 || cp == 0x7f) { cell[o++] = '?'; i += len ? len : 1; }
        else { memcpy(cell + o, text + i, len); o += len; i += len; }
        w += (size_t)cols;
    }
    if (full > width) { while (w < width && o < sizeof cell - 2) { cell[o++] = '.'; w++; } }
    while (w < width && o < sizeof cell - 2) { cell[o++] = ' '; w++; }
    gpuprof__buf_put(b, cell, o);
}

static const char *gpuprof__name_text(uint32_t id) { return gpuprof__registry.names[id].text; }

/* A name inside a line of text, as the tables show it: control characters
   and bytes that are not UTF-8 as '?', so a name cannot break the line. */
static void gpuprof__buf_name(gpuprof__buf *b, const char *text) {
    size_t i = 0, n = strlen(text), len;
    uint32_t cp;
    while (i < n) {
        len = gpuprof__utf8(text + i, n - i, &cp);
        if (!len || cp < 0x20 || cp == 0x7f) { gpuprof__buf_put(b, "?", 1); i += len ? len : 1; }
        else { gpuprof__buf_put(b, text + i, len); i += len; }
    }
}

/* lead, then the name of id in quotes, as above. */
static void gpuprof__buf_qname(gpuprof__buf *b, const char *lead, uint32_t id) {
    gpuprof__buf_s(b, lead);
    gpuprof__buf_s(b, "\"");
    gpuprof__buf_name(b, gpuprof__name_text(id));
    gpuprof__buf_s(b, "\"");
}

/* A table's title line(s), then its header row: the first column's name in
   the names' width, then the other columns. */
static void gpuprof__table_head(gpuprof__buf *b, const char *title, const char *first, size_t width, const char *columns) {
    gpuprof__buf_s(b, title);
    gpuprof__name_cell(b, first, width, 0);
    gpuprof__buf_s(b, columns);
}

static void gpuprof__cell_ns(gpuprof__buf *b, double ns) {
    char tmp[32];
    gpuprof__buf_printf(b, " %10s", gpuprof__fmt_ns(tmp, sizeof tmp, ns));
}

static void gpuprof__cell_val(gpuprof__buf *b, double v) {
    char tmp[32];
    gpuprof__buf_printf(b, " %10s", gpuprof__fmt_val(tmp, sizeof tmp, v));
}

static const char *gpuprof__clock_name(int lower) {
#if defined(GPUPROF_CLOCK_FN)
    return lower ? "custom" : "GPUPROF_CLOCK_FN";
#else
    return gpuprof__clock.use_tsc ? (lower ? "tsc" : "TSC") : (lower ? "clock_monotonic" : "CLOCK_MONOTONIC");
#endif
}

/* Since init; on the test clock when GPUPROF_CLOCK_FN replaces the real one. */
static uint64_t gpuprof__wall_ns(void) {
#if defined(GPUPROF_CLOCK_FN)
    return gpuprof__ticks_to_ns(gpuprof__ticks() - GPUPROF__LD(&gpuprof__clock.base));
#else
    return gpuprof__mono_ns() - gpuprof__run.t_init_ns;
#endif
}

/* ----------------------------------------------------------------------
   Analysis (SPEC 9): the roofline figures of a range with declared work,
   the class of each range and the verdict per phase. The rules and their
   thresholds are in docs/guide.md, "Verdict"; keep the two in step.
   ---------------------------------------------------------------------- */
enum { GPUPROF__PREC_FP32, GPUPROF__PREC_TF32, GPUPROF__PREC_FP16, GPUPROF__PREC_BF16, GPUPROF__PREC_FP8, GPUPROF__PREC_FP64, GPUPROF__PREC_COUNT };
static const char *const gpuprof__prec_name[GPUPROF__PREC_COUNT] = { "fp32", "tf32", "fp16", "bf16", "fp8", "fp64" };
enum { GPUPROF__K_NONE, GPUPROF__K_CPU, GPUPROF__K_LAUNCH, GPUPROF__K_SYNC, GPUPROF__K_GPU, GPUPROF__K_MEMORY, GPUPROF__K_COMPUTE,
       GPUPROF__K_TRANSFER, GPUPROF__K_COMM, GPUPROF__K_UNDERFILL, GPUPROF__K_LATENCY, GPUPROF__K_COUNT };
/* TRANSFER: from kernel capture's copies only; COMM: collectives; UNDERFILL: kernel capture's launch figures;
   LATENCY: declared work far below both roofs (SPEC 20) */
static const char *const gpuprof__kname[GPUPROF__K_COUNT] = {
    NULL, "CPU-bound", "launch-bound", "sync-bound", "GPU-bound", "memory-bound", "compute-bound", "transfer-bound", "comm-bound",
    "under-filled", "latency-bound"
};
/* The usual remedies of each class (the closing line of the verdict). */
static const char *const gpuprof__remedy[GPUPROF__K_COUNT] = {
    NULL,
    "take the host work off the step's critical path: prepare the next batch in a background thread (more loader workers), "
    "copy from pinned memory with cudaMemcpyAsync, cache what is decoded each step",
    "launch less: fuse small kernels, capture the step in a CUDA graph, raise the batch size so each launch does more",
    "take the synchronizing call out of the step: read the value every N steps, or copy it asynchronously to pinned memory "
    "and read it a step later; the GPU work it waits for is then what remains",
    "find out whether memory or compute bounds the kernels: declare their work with GPUPROF_RANGE_WORK, or read them in Nsight Compute",
    "move fewer bytes: fuse element-wise kernels, use lower precision (bf16/fp16/fp8), keep data in cache (tiling, better coalescing)",
    "do fewer or cheaper FLOPs: use the tensor cores (tf32/bf16/fp16 matmuls), a better algorithm, or skip wasted work (padding, recomputation)",
    "pin the host memory (cudaHostAlloc, cudaHostRegister, pin_memory=True) and copy with cudaMemcpyAsync on a stream of its own, "
    "so copies overlap compute; copy less per step (keep data on the GPU, lower precision)",
    "a collective waits for the slowest rank: compare the ranks (gpuprof-ranks run.*.json, or GPUPROF_MPI) to find the straggler; "
    "if they are even, overlap communication with compute (all-reduce gradient buckets during backward) or send less",
    "give the GPU more blocks: split the work over more of them (split-K for a long reduction, smaller tiles, one block per row "
    "or tile), or run such kernels beside other work on another stream",
    "raise the parallelism and fix the access: more warps or more independent work per thread, contiguous (coalesced) loads, "
    "reuse through shared memory or registers (tiling) -- or a tuned library (cuBLAS, cuDNN, CUTLASS) for GEMM-like work"
};
/* latency-bound, with no kernel capture to say whether its grids fill the SMs */
#define GPUPROF__LATENCY_REMEDY "first see whether its kernels' grids fill the SMs (GPUPROF_KERNELS=1: an under-filled grid is the " \
    "larger fix); then raise the parallelism and fix the access: more warps or more independent work per thread, contiguous " \
    "(coalesced) loads, reuse through shared memory or registers (tiling) -- or a tuned library (cuBLAS, cuDNN, CUTLASS)"
/* compute-bound where the kernels already run on the tensor cores */
#define GPUPROF__TC_REMEDY "its GEMMs already run on the tensor cores: do fewer FLOPs (a better algorithm, no padding or recomputation), " \
    "use a lower precision where accuracy allows (bf16 -> fp8), or fuse the element-wise work between them"

/* Thresholds of the rules (docs/guide.md "Verdict"). */
#define GPUPROF__GPU_OVER_CPU 1.5     /* GPU time >= 1.5 x CPU time: GPU-bound */
#define GPUPROF__LAG_SHARE 0.1        /* or the GPU ends it later after the CPU closed it than 10% of the longer of the two times */
#define GPUPROF__WAIT_SHARE 0.5       /* the GPU starts the range >= half its CPU time late ... */
#define GPUPROF__SYNC_GPU_SHARE 0.5   /* ... and its GPU time is <= half its CPU time: sync-bound */
#define GPUPROF__CHILD_SHARE 0.5      /* nested ranges of one class holding >= half a phase decide it */
#define GPUPROF__GPU_BUSY 0.9         /* phases keep the GPU busy >= 90% of the step: the GPU bounds the step */
#define GPUPROF__UF_SHARE (1.0 / 3)   /* kernels that leave most SMs idle hold >= a third of a GPU-bound range's kernel time: under-filled */
#define GPUPROF__TC_SHARE 0.5         /* kernels on the tensor cores hold >= half its kernel time: no "use the tensor cores" */
#define GPUPROF__FAR_BELOW 0.2        /* GPU work under 20% of its bounding roof: latency-bound, neither memory- nor compute-bound */

/* Is this name among GPUPROF_HOST_RANGES? */
static int gpuprof__is_host(uint32_t name_id) {
    const char *list = gpuprof__g.host_ranges, *name = gpuprof__name_text(name_id), *p;
    size_t n = strlen(name);
    if (!list) return 0;
    for (p = list; *p;) {
        const char *e = strchr(p, ','), *a = p, *z;
        if (!e) e = p + strlen(p);
        z = e;
        while (a < z && *a == ' ') a++;
        while (z > a && z[-1] == ' ') z--;
        if ((size_t)(z - a) == n && memcmp(a, name, n) == 0) return 1;
        p = *e ? e + 1 : e;
    }
    return 0;
}

/* A communication range (waiting time): collectives by name, MPI_* and
   nccl*, and the names listed in GPUPROF_COMM_RANGES=a,b. */
static int gpuprof__is_comm(const char *name) {
    static const char *const parts[] = { "allreduce", "all_reduce", "allgather", "all_gather", "reduce_scatter",
                                         "reducescatter", "broadcast", "barrier", "alltoall", "all_to_all", NULL };
    const char *list = getenv("GPUPROF_COMM_RANGES");
    char low[256];
    int k;
    gpuprof__lower(low, sizeof low, name);
    if (strncmp(low, "nccl", 4) == 0 || strncmp(name, "MPI_", 4) == 0) return 1;
    for (k = 0; parts[k]; k++) if (strstr(low, parts[k])) return 1;
    while (list && *list) {
        const char *e = strchr(list, ',');
        size_t len = e ? (size_t)(e - list) : strlen(list);
        if (len == strlen(name) && strncmp(list, name, len) == 0) return 1;
        list = e ? e + 1 : NULL;
    }
    return 0;
}

/* Roofline figures of a range that declared its work (GPUPROF_RANGE_WORK). */
typedef struct gpuprof__roof {
    double flops, bytes, time_ns;   /* per counted call; time: GPU mean when the range has GPU times, else CPU mean */
    int on_gpu;
    double fps, bps, ai;            /* achieved FLOP/s, bytes/s; FLOP per byte (NaN without bytes) */
    double peak_f, peak_b, ridge;   /* the peaks that apply (0: none), the ridge point in FLOP/byte */
    int bound;                      /* GPUPROF__K_MEMORY / _COMPUTE, or 0 without both peaks */
    double frac;                    /* the share of the bounding peak reached */
} gpuprof__roof;

static int gpuprof__roofline(const gpuprof__row *r, gpuprof__roof *o) {
    double calls = (double)r->stats.count, s;
    memset(o, 0, sizeof *o);
    if (!r->stats.count || (r->flops == 0 && r->bytes == 0)) return 0;
    if (!(r->flops >= 0 && r->bytes >= 0 && r->flops - r->flops == 0 && r->bytes - r->bytes == 0)) return 0;   /* NaN, inf, negative: no figures */
    o->flops = r->flops / calls;
    o->bytes = r->bytes / calls;
    o->on_gpu = r->gpu.count > 0;
    o->time_ns = o->on_gpu ? r->gpu.sum / (double)r->gpu.count : r->stats.sum / calls;
    s = o->time_ns * 1e-9;
    o->fps = s > 0 ? o->flops / s : GPUPROF__NAN;
    o->bps = s > 0 ? o->bytes / s : GPUPROF__NAN;
    o->ai = o->bytes > 0 ? o->flops / o->bytes : GPUPROF__NAN;
    /* the device's peaks bound GPU times; a CPU time only meets peaks the user gave */
    o->peak_f = o->on_gpu || gpuprof__g.peak.user_flops ? gpuprof__g.peak.flops : 0;
    o->peak_b = o->on_gpu || gpuprof__g.peak.user_bw ? gpuprof__g.peak.bw : 0;
    o->ridge = o->peak_f > 0 && o->peak_b > 0 ? o->peak_f / o->peak_b : GPUPROF__NAN;
    o->frac = GPUPROF__NAN;
    if (o->peak_f > 0 && o->peak_b > 0 && s > 0) {
        if (o->bytes > 0 && o->ai < o->ridge) { o->bound = GPUPROF__K_MEMORY; o->frac = o->bps / o->peak_b; }
        else { o->bound = GPUPROF__K_COMPUTE; o->frac = o->fps / o->peak_f; }
    }
    return 1;
}

/* The class of one range from its own figures (per counted call):
   CPU-bound   named in GPUPROF_HOST_RANGES, or no GPU time;
   GPU-bound   GPU >= 1.5 x CPU, or the GPU ends it more than 10% of max(GPU, CPU) after the CPU
               (under-filled when kernels that give work to fewer than half
               the SMs hold a third of its kernel time; else memory- or
               compute-bound when the roofline can tell, latency-bound when
               its work reaches under 20% of the bounding roof);
   sync-bound  the GPU reaches the range >= half its CPU time late and its GPU
               time is <= half its CPU time: the CPU sat in it while the GPU
               worked through what was queued before;
               or (kernel capture) it launched nothing and waited in
               synchronizing calls >= half its CPU time;
   comm-bound  a communication range (gpuprof__is_comm: allreduce, nccl*,
               MPI_*, GPUPROF_COMM_RANGES): its time is a collective's, mostly
               waiting for the other ranks;
   launch-bound otherwise: the GPU keeps pace with the CPU. */
static int gpuprof__klass(const gpuprof__row *r) {
    double c, g, lag, wait;
    gpuprof__roof rf;
    if (!r->stats.count) return GPUPROF__K_NONE;
    if (gpuprof__is_host(r->name_id)) return GPUPROF__K_CPU;
    if (gpuprof__is_comm(gpuprof__name_text(r->name_id))) return GPUPROF__K_COMM;
    if (!r->gpu.count) {
        if (gpuprof__roofline(r, &rf) && rf.bound) return rf.bound;
        /* kernel capture: a range that launched nothing (GPUPROF_GPU=kernels) but waited in a synchronizing call */
        if ((double)r->sync_ns >= GPUPROF__WAIT_SHARE * r->stats.sum) return GPUPROF__K_SYNC;
        return GPUPROF__K_CPU;
    }
    c = r->stats.sum / (double)r->stats.count;
    g = r->gpu.sum / (double)r->gpu.count;
    lag = (double)r->gpu_lag_ns / (double)r->gpu.count;
    wait = (double)r->gpu_wait_ns / (double)r->gpu.count;
    if (g >= GPUPROF__GPU_OVER_CPU * c || lag > GPUPROF__LAG_SHARE * (g > c ? g : c)) {
        int m;
        /* its kernels leave most SMs idle: neither memory nor compute can bound them (before the roofline) */
        if (r->kernel_ns && (double)r->kuf_ns >= GPUPROF__UF_SHARE * (double)r->kernel_ns) return GPUPROF__K_UNDERFILL;
        /* far below its roof: latency, not bandwidth or FLOPs, sets the pace */
        if (gpuprof__roofline(r, &rf) && rf.bound) return rf.frac < GPUPROF__FAR_BELOW ? GPUPROF__K_LATENCY : rf.bound;
        if ((m = gpuprof__dev_class(r->name_id, NULL, NULL)) != 0) return m == 1 ? GPUPROF__K_MEMORY : GPUPROF__K_COMPUTE;   /* measured (GPM) */
        return GPUPROF__K_GPU;
    }
    if (wait >= GPUPROF__WAIT_SHARE * c && g <= GPUPROF__SYNC_GPU_SHARE * c) return GPUPROF__K_SYNC;
    return GPUPROF__K_LAUNCH;
}

/* The per-range verdict of the GPU tables and the summary (NULL: no GPU time). */
static const char *gpuprof__verdict(const gpuprof__row *r) {
    if (!r->gpu.count || !r->stats.count) return NULL;
    return gpuprof__kname[gpuprof__klass(r)];
}

static int gpuprof__k_gpu(int k) {
    return k == GPUPROF__K_GPU || k == GPUPROF__K_MEMORY || k == GPUPROF__K_COMPUTE || k == GPUPROF__K_UNDERFILL || k == GPUPROF__K_LATENCY;
}

#define GPUPROF__PHASES 48        /* phases the verdict lists, the largest first */
#define GPUPROF__CONTAINER_SHARE 0.9   /* a range holding this much of every step wraps the step: its children are the phases */
#define GPUPROF__BLOCKED_WAITS 0.25    /* the stepping thread off the CPU this share of its steps: it waited */
typedef struct gpuprof__phase {
    const gpuprof__row *r;
    int k;
    double cpu, gpu, t;           /* ns per step: CPU time, GPU time, the time it holds the step */
    const gpuprof__row *by;       /* the nested range that decided the class (NULL: the phase itself) */
    double by_ns;                 /* ns per step of the nested ranges of that class */
    int by_gpu;                   /* by_ns is GPU time (a comm-bound phase decided by NCCL's GPU time) */
    double kern_ns, uf_ns, tc_ns; /* kernel capture, run totals of it and its nested ranges: kernel time, of which in launches
                                     that leave most SMs idle, on the tensor cores */
} gpuprof__phase;

typedef struct gpuprof__verdict_t {
    gpuprof__phase ph[GPUPROF__PHASES];
    int nph, more;                /* listed, and phases left out */
    int per_step;                 /* 1: per counted step; 0: no GPUPROF_STEP, per run */
    double steps, step_ns;        /* divisor of the totals; the time per step (mean) or the phases' sum */
    double cpu_by[GPUPROF__K_COUNT];     /* ns per step: CPU time of the phases of each class */
    double gpu_by[GPUPROF__K_COUNT];     /* ns per step: GPU time of the phases of each class */
    double cpu_sum, gpu_sum;             /* per step: all phases' CPU time; GPU-bound phases' GPU time */
    int gpu_step;                 /* the GPU is busy in phases >= 90% of the step: the GPU side bounds it */
    int step_k;                   /* the class that bounds the step */
    int bottleneck, waits_for;    /* indexes into ph, -1: none; bottleneck -2: CPU time outside any range */
    double outside_ns;            /* per step: the CPU's time outside any outermost range */
    const gpuprof__row *container;        /* the range that wraps the whole step (its children are the phases), or NULL */
    const gpuprof__row *other[GPUPROF__PHASES];   /* outermost ranges of the other threads, the largest first */
    int nother;
    const gpuprof__row *outside[GPUPROF__PHASES]; /* ranges with time outside the steps worth listing (a model load) */
    int noutside;
    double blocked;               /* the stepping thread's share of the steps off the CPU (< 0: not measured) */
    double preempted;             /* of which runnable, waiting for a CPU another thread or process had (< 0: unknown) */
    double vol, invol;            /* its voluntary and involuntary context switches per counted step */
    uint32_t nout;                /* outlier steps, left out of the figures above (see gpuprof__snap) */
    uint64_t out_steps[8];        /* the first few */
    double out_x, out_median;     /* their mean length in median steps; the median step */
    const gpuprof__row *extra[2]; /* the phases with the most extra time in them */
    double extra_ns[2];
    const struct gpuprof__snap *snap;      /* the snapshot it was made from: its kinds of step */
    unsigned char apart[GPUPROF__KINDS];   /* kinds of step left out of the figures above, each on a line of its own */
    int napart;
    double apart_steps, apart_dur;         /* their steps, and the steps' total length */
    struct {
        const gpuprof__row *with[4];       /* the ranges it runs that the typical step does not */
        int nwith;
        const gpuprof__row *extra[3];      /* the phases with the most extra time per step of it */
        double extra_ns[3];
    } kv[GPUPROF__KINDS];
} gpuprof__verdict_t;

static int gpuprof__phase_cmp(const void *a, const void *b) {
    double x = ((const gpuprof__phase *)a)->t, y = ((const gpuprof__phase *)b)->t;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* A phase is an outermost range (a call tree row of depth 0). Its class is
   its own, except that nested ranges decide it when those of one class hold
   at least half of it: sync-bound or CPU-bound nested ranges (by CPU time) in
   a phase that reads launch-bound; memory- or compute-bound ones (by GPU self
   time) in a phase that reads GPU-bound. */
/* What the nested ranges of one phase hold, by class (gpuprof__analyze). */
typedef struct gpuprof__nested {
    double sync_ns, host_ns, mem_ns, comp_ns, lat_ns;         /* CPU self time (sync, host), GPU self time (memory, compute, latency) */
    double comm_ns, comm_gpu_ns, comm_best;                   /* collectives: CPU and GPU self time */
    const gpuprof__row *comm_by;
    double sync_best, host_best, mem_best, comp_best, lat_best;
    const gpuprof__row *sync_by, *host_by, *mem_by, *comp_by, *lat_by; /* the largest of each class */
    double work_mem_ns, work_comp_ns;     /* CPU self time of declared work without GPU time, by its bound */
    double work_mem_best, work_comp_best;
    const gpuprof__row *work_mem_by, *work_comp_by;
    double kern_ns, uf_ns, tc_ns;         /* kernel capture: kernel time, in launches that leave most SMs idle, on the tensor cores */
} gpuprof__nested;

static void gpuprof__nested_add(gpuprof__nested *a, const gpuprof__row *d, int k) {
    double c = d->stats.sum, g = (double)d->gpu_self_ns;
    a->kern_ns += (double)d->kernel_ns;
    a->uf_ns += (double)d->kuf_ns;
    a->tc_ns += (double)d->ktc_ns;
    switch (k) {
    case GPUPROF__K_SYNC: a->sync_ns += (double)d->self_ns; if (c > a->sync_best) { a->sync_best = c; a->sync_by = d; } break;
    case GPUPROF__K_COMM:
        a->comm_ns += (double)d->self_ns;
        a->comm_gpu_ns += g;
        if (c + g > a->comm_best) { a->comm_best = c + g; a->comm_by = d; }
        break;
    case GPUPROF__K_CPU:      /* host work the user named; a range merely without GPU time does not decide a phase */
        if (gpuprof__is_host(d->name_id)) { a->host_ns += (double)d->self_ns; if (c > a->host_best) { a->host_best = c; a->host_by = d; } }
        break;
    case GPUPROF__K_MEMORY:
        if (d->gpu.count) { a->mem_ns += g; if (g > a->mem_best) { a->mem_best = g; a->mem_by = d; } }
        else { a->work_mem_ns += (double)d->self_ns; if (c > a->work_mem_best) { a->work_mem_best = c; a->work_mem_by = d; } }
        break;
    case GPUPROF__K_COMPUTE:
        if (d->gpu.count) { a->comp_ns += g; if (g > a->comp_best) { a->comp_best = g; a->comp_by = d; } }
        else { a->work_comp_ns += (double)d->self_ns; if (c > a->work_comp_best) { a->work_comp_best = c; a->work_comp_by = d; } }
        break;
    case GPUPROF__K_LATENCY:
        a->lat_ns += g;
        if (g > a->lat_best) { a->lat_best = g; a->lat_by = d; }
        break;
    default: break;
    }
}

/* A windowed row's time in the steps of kind kd. */
static double gpuprof__kind_ns(const gpuprof__kind *kd, const gpuprof__row *r) {
    return r->win_node && r->win_node - 1 < kd->nns ? kd->ns[r->win_node - 1] : 0.0;
}

/* A row's time in the kinds of step set apart. */
static double gpuprof__apart_ns(const gpuprof__verdict_t *v, const gpuprof__row *r) {
    double x = 0;
    int k;
    for (k = 0; v->snap && k < (int)v->snap->nkinds; k++) if (v->apart[k]) x += gpuprof__kind_ns(&v->snap->kinds[k], r);
    return x;
}

/* A row's counted time inside the typical step windows (steps of other
   kinds and outlier steps apart; per run: all of it). */
static double gpuprof__in_steps(const gpuprof__verdict_t *v, const gpuprof__row *r) {
    double x;
    if (!(v->per_step && r->windowed)) return r->stats.sum;
    x = r->in_ns - (v->nout ? r->out_ns : 0.0) - gpuprof__apart_ns(v, r);
    return x > 0 ? x : 0;
}

/* A range's time in an outlier step that ran it beyond its time in a
   typical step (typical_steps of them, the outlier steps apart). */
static double gpuprof__extra_ns(const gpuprof__verdict_t *v, const gpuprof__row *r, double typical_steps) {
    double typ = (r->in_ns - r->out_ns - gpuprof__apart_ns(v, r)) / typical_steps;
    return r->out_runs ? r->out_ns / r->out_runs - (typ > 0 ? typ : 0) : 0;
}

/* Long steps whose extra time is mostly a sync-bound range (a loss read
   every N steps) are where the loop pays for the GPU work queued in the
   others: part of every step's cost, not outliers to set apart. */
static int gpuprof__outliers_are_syncs(const gpuprof__snap *s, const gpuprof__verdict_t *v) {
    uint32_t i;
    const gpuprof__row *top = NULL;
    double best = 0;
    for (i = 0; i < s->ntree; i++) {
        const gpuprof__row *r = &s->tree[i];
        double x;
        if (!r->windowed || r->other || !(r->depth == 0 || gpuprof__klass(r) == GPUPROF__K_SYNC)) continue;
        x = gpuprof__extra_ns(v, r, v->steps - (double)s->nout);
        if (x > best) { best = x; top = r; }
    }
    return top && gpuprof__klass(top) == GPUPROF__K_SYNC;
}

/* The same for the steps of kind k: a sync-bound range read every N steps
   makes those steps a kind of their own, but they pay for every step. */
static int gpuprof__kind_is_syncs(const gpuprof__snap *s, int k) {
    const gpuprof__kind *kd = &s->kinds[k];
    double rest = (double)gpuprof__steps.stats.count - (double)kd->steps, best = 0;
    const gpuprof__row *top = NULL;
    uint32_t i;
    for (i = 0; i < s->ntree && rest > 0; i++) {
        const gpuprof__row *r = &s->tree[i];
        double in = gpuprof__kind_ns(kd, r), x;
        if (!r->windowed || r->other || !(r->depth == 0 || gpuprof__klass(r) == GPUPROF__K_SYNC)) continue;
        x = in / (double)kd->steps - (r->in_ns - in) / rest;
        if (x > best) { best = x; top = r; }
    }
    return top && gpuprof__klass(top) == GPUPROF__K_SYNC;
}

/* The mean of the typical steps (steps of other kinds and outlier steps apart). */
static double gpuprof__typical_step(const gpuprof__snap *s, const gpuprof__verdict_t *v) {
    return (gpuprof__steps.stats.sum - v->apart_dur - (v->nout ? s->out_dur : 0.0)) / v->steps;
}

/* Which tree rows are the step's phases: the outermost ranges of the thread
   calling GPUPROF_STEP (those of other threads are listed apart), and, where
   one range wraps the whole step (a "step" range around forward, backward,
   optimizer), the ranges inside it instead. */
static void gpuprof__find_phases(const gpuprof__snap *s, gpuprof__verdict_t *v, unsigned char *is_phase) {
    uint32_t i, j;
    int changed = 1;
    for (i = 0; i < s->ntree; i++) {
        const gpuprof__row *r = &s->tree[i];
        if (r->depth != 0 || !r->stats.count) continue;
        if (r->other) { if (v->nother < GPUPROF__PHASES) v->other[v->nother++] = r; continue; }
        is_phase[i] = 1;
    }
    for (i = 1; i < (uint32_t)v->nother; i++)          /* the largest first (few rows: insertion) */
        for (j = i; j > 0 && v->other[j]->stats.sum > v->other[j - 1]->stats.sum; j--) {
            const gpuprof__row *x = v->other[j]; v->other[j] = v->other[j - 1]; v->other[j - 1] = x;
        }
    if (!v->per_step) return;
    while (changed) {
        changed = 0;
        for (i = 0; i < s->ntree; i++) {
            const gpuprof__row *r = &s->tree[i];
            int kids = 0;
            if (!is_phase[i] || gpuprof__in_steps(v, r) / v->steps < GPUPROF__CONTAINER_SHARE * gpuprof__typical_step(s, v)) continue;
            for (j = 0; j < s->ntree; j++) if (s->tree[j].parent == (int32_t)i && s->tree[j].stats.count) kids++;
            if (!kids) continue;
            is_phase[i] = 0;
            for (j = 0; j < s->ntree; j++) if (s->tree[j].parent == (int32_t)i && s->tree[j].stats.count) is_phase[j] = 1;
            if (!v->container) v->container = r;
            changed = 1;
        }
    }
    /* Time outside the steps is reported once, not divided over them: a
       range with none in the steps is no phase; one with more outside than
       a step lasts is listed (a 200 ms model load before the first step). */
    for (i = 0; i < s->ntree; i++) {
        const gpuprof__row *r = &s->tree[i];
        if (!is_phase[i] || !r->windowed) continue;
        if (r->before_ns + r->after_ns >= gpuprof_stats_mean(&gpuprof__steps.stats) && v->noutside < GPUPROF__PHASES) v->outside[v->noutside++] = r;
        if (gpuprof__in_steps(v, r) <= 0) is_phase[i] = 0;      /* nothing in the (typical) steps */
    }
}

/* A phase's class from its own figures and its nested ranges' (a): a
   CPU-side phase that mostly waits in a collective, a sync or host code
   takes that class, a GPU phase mostly NCCL's, memory- or compute-bound
   kernels; copies filling its CPU time make it transfer-bound. per: the
   share of its run totals that is one typical step. */
static void gpuprof__phase_classify(gpuprof__phase *p, const gpuprof__row *r, const gpuprof__nested *a, double per) {
    /* a CPU-side phase's class may come from its nested ranges */
    int cpu_side = p->k == GPUPROF__K_LAUNCH || (p->k == GPUPROF__K_CPU && !gpuprof__is_host(r->name_id));
    if (cpu_side && a->comm_ns > 0 && a->comm_ns >= GPUPROF__CHILD_SHARE * r->stats.sum && a->comm_ns >= a->sync_ns && a->comm_ns >= a->host_ns) {
        p->k = GPUPROF__K_COMM;      /* a phase that mostly waits in a collective (backward around its all-reduce) */
        p->by = a->comm_by;
        p->by_ns = a->comm_ns * per;
    } else if (p->k == GPUPROF__K_GPU && r->gpu.count && a->comm_gpu_ns > 0 && a->comm_gpu_ns >= GPUPROF__CHILD_SHARE * r->gpu.sum) {
        p->k = GPUPROF__K_COMM;      /* its GPU time mostly NCCL's */
        p->by = a->comm_by;
        p->by_ns = a->comm_gpu_ns * per;
        p->by_gpu = 1;
    } else if (cpu_side) {
        if (a->sync_ns > 0 && a->sync_ns >= GPUPROF__CHILD_SHARE * r->stats.sum && a->sync_ns >= a->host_ns) { p->k = GPUPROF__K_SYNC; p->by = a->sync_by; p->by_ns = a->sync_ns * per; }
        else if (a->host_ns > 0 && a->host_ns >= GPUPROF__CHILD_SHARE * r->stats.sum) { p->k = GPUPROF__K_CPU; p->by = a->host_by; p->by_ns = a->host_ns * per; }
        /* declared work on the CPU (peaks given): a phase mostly made of it takes its bound */
        else if (a->work_mem_ns + a->work_comp_ns >= GPUPROF__CHILD_SHARE * r->stats.sum) {
            int mem = a->work_mem_ns >= a->work_comp_ns;
            p->k = mem ? GPUPROF__K_MEMORY : GPUPROF__K_COMPUTE;
            p->by = mem ? a->work_mem_by : a->work_comp_by;
            p->by_ns = (mem ? a->work_mem_ns : a->work_comp_ns) * per;
        }
    } else if (p->k == GPUPROF__K_GPU && r->gpu.count) {
        /* the nested class of the most GPU time, memory, compute or latency, where it holds half */
        double most = a->mem_ns >= a->comp_ns ? a->mem_ns : a->comp_ns;
        if (a->lat_ns > most) most = a->lat_ns;
        if (most > 0 && most >= GPUPROF__CHILD_SHARE * r->gpu.sum) {
            p->k = most == a->mem_ns ? GPUPROF__K_MEMORY : most == a->comp_ns ? GPUPROF__K_COMPUTE : GPUPROF__K_LATENCY;
            p->by = most == a->mem_ns ? a->mem_by : most == a->comp_ns ? a->comp_by : a->lat_by;
            p->by_ns = most * per;
        }
    }
    /* kernel capture: a GPU phase whose kernels mostly leave most SMs idle
       is under-filled, whatever its nested ranges' roofline says */
    p->kern_ns = (double)r->kernel_ns + a->kern_ns;
    p->uf_ns = (double)r->kuf_ns + a->uf_ns;
    p->tc_ns = (double)r->ktc_ns + a->tc_ns;
    if (gpuprof__k_gpu(p->k) && p->kern_ns > 0 && p->uf_ns >= GPUPROF__UF_SHARE * p->kern_ns) {
        p->k = GPUPROF__K_UNDERFILL;
        p->by = NULL;
    }
    /* kernel capture: copies launched in the phase fill at least half its CPU
       time (a cudaMemcpy from pageable memory waits for its copy) */
    if (!gpuprof__k_gpu(p->k) && r->copy_ns > 0 && (double)r->copy_ns >= GPUPROF__CHILD_SHARE * r->stats.sum) {
        p->k = GPUPROF__K_TRANSFER;
        p->by = NULL;
    }
}

/* One definition of a step for every figure, and the outlier steps set
   apart (an evaluation every N steps): the verdict is on the typical ones. */
static void gpuprof__verdict_steps(const gpuprof__snap *s, gpuprof__verdict_t *v) {
    /* the windows between consecutive GPUPROF_STEP calls that were counted */
    int k;
    v->snap = s;
    v->per_step = gpuprof__steps.counted > 0 && gpuprof__steps.stats.count > 0;
    v->steps = v->per_step ? (double)gpuprof__steps.stats.count : 1.0;
    v->blocked = gpuprof__steps.wall > 0 ? 1.0 - gpuprof__steps.cpu / gpuprof__steps.wall : -1.0;
    if (v->blocked < 0 && gpuprof__steps.wall > 0) v->blocked = 0;
    v->preempted = gpuprof__steps.wall > 0 && gpuprof__steps.runq >= 0 ? gpuprof__steps.runq / gpuprof__steps.wall : -1.0;
    if (v->blocked >= 0 && v->preempted > v->blocked) v->preempted = v->blocked;    /* two clocks read apart */
    v->vol = v->steps > 0 ? gpuprof__steps.vol / v->steps : 0;
    v->invol = v->steps > 0 ? gpuprof__steps.invol / v->steps : 0;
    for (k = 0; v->per_step && k < (int)s->nkinds; k++) {
        const gpuprof__kind *kd = &s->kinds[k];
        if (!s->kind_rare[k] || gpuprof__kind_is_syncs(s, k) || v->apart_steps + (double)kd->steps >= v->steps) continue;
        v->apart[k] = 1;
        v->napart++;
        v->apart_steps += (double)kd->steps;
        v->apart_dur += kd->dur;
    }
    v->steps -= v->apart_steps;
    if (v->per_step && s->nout && (double)s->nout < v->steps && !gpuprof__outliers_are_syncs(s, v)) {
        v->nout = s->nout;
        v->steps -= (double)s->nout;
        memcpy(v->out_steps, s->out_steps, sizeof v->out_steps);
        v->out_median = s->out_median;
        v->out_x = s->out_median > 0 ? s->out_dur / (double)s->nout / s->out_median : 0;
    }
}

/* For each kind of step set apart: the ranges it runs that the typical
   step does not (an outer one stands for the ones inside it), and the
   phases with the most extra time per step of that kind. */
static void gpuprof__kinds_explain(const gpuprof__snap *s, gpuprof__verdict_t *v) {
    const gpuprof__kind *ty = s->typical >= 0 ? &s->kinds[s->typical] : NULL;
    uint32_t i;
    int k, j, m;
    for (k = 0; ty && k < (int)s->nkinds; k++) {
        const gpuprof__kind *kd = &s->kinds[k];
        if (!v->apart[k]) continue;
        for (i = 0; i < s->ntree; i++) {
            const gpuprof__row *r = &s->tree[i], *up = r->parent >= 0 ? &s->tree[r->parent] : NULL;
            double x;
            if (!r->windowed || r->other || !r->win_node) continue;
            if (gpuprof__kind_has(kd, r->win_node - 1) && !gpuprof__kind_has(ty, r->win_node - 1) && v->kv[k].nwith < 4 &&
                !(up && up->win_node && gpuprof__kind_has(kd, up->win_node - 1) && !gpuprof__kind_has(ty, up->win_node - 1)))
                v->kv[k].with[v->kv[k].nwith++] = r;
            if (r == v->container || !(r->depth == 0 || (v->container && up == v->container))) continue;
            x = gpuprof__kind_ns(kd, r) / (double)kd->steps - gpuprof__in_steps(v, r) / v->steps;
            if (!(x > 0) || x < GPUPROF__KIND_NOISE * (kd->dur / (double)kd->steps - v->step_ns)) continue;   /* a typical range's noise */
            for (j = 0; j < 3 && v->kv[k].extra[j] && v->kv[k].extra_ns[j] >= x; j++) {}
            if (j == 3) continue;
            for (m = 2; m > j; m--) { v->kv[k].extra[m] = v->kv[k].extra[m - 1]; v->kv[k].extra_ns[m] = v->kv[k].extra_ns[m - 1]; }
            v->kv[k].extra[j] = r;
            v->kv[k].extra_ns[j] = x;
        }
    }
}

/* From the phases (all, nall of them, the largest first): the step's
   figures on both timelines, what bounds it, the bottleneck phase and, for
   a sync-bound one, the GPU phase it waits for. */
static void gpuprof__step_bound(const gpuprof__snap *s, gpuprof__verdict_t *v, const gpuprof__phase *all, uint32_t nall) {
    uint32_t i;
    int k;
    /* The GPU time of a range spans any idle time of its stream inside it:
       only GPU-bound phases (the GPU behind the CPU) count as busy. */
    for (i = 0; i < nall; i++) {
        v->cpu_by[all[i].k] += all[i].cpu;
        v->gpu_by[all[i].k] += all[i].gpu;
        v->cpu_sum += all[i].cpu;
        if (gpuprof__k_gpu(all[i].k)) v->gpu_sum += all[i].gpu;
    }
    /* Two timelines per step: the CPU's (the phases' CPU times and what is
       outside any range add up to the step) and the GPU's (the phases' GPU
       times and the idle time). The GPU bounds the step when it is busy in
       phases nearly all of it; else the CPU does. */
    v->step_ns = v->per_step ? gpuprof__typical_step(s, v) : v->cpu_sum;
    if (v->nout)        /* where the outlier steps' extra time went: beyond the step's ranges' typical time */
        for (i = 0; i < s->ntree; i++) {
            const gpuprof__row *r = &s->tree[i];
            double x;
            if (!r->windowed || r == v->container || !(r->depth == 0 || (v->container && r->parent >= 0 && &s->tree[r->parent] == v->container))) continue;
            x = gpuprof__extra_ns(v, r, v->steps);
            if (x > v->extra_ns[0]) { v->extra[1] = v->extra[0]; v->extra_ns[1] = v->extra_ns[0]; v->extra[0] = r; v->extra_ns[0] = x; }
            else if (x > v->extra_ns[1]) { v->extra[1] = r; v->extra_ns[1] = x; }
        }
    gpuprof__kinds_explain(s, v);
    v->gpu_step = v->step_ns > 0 && v->gpu_sum >= GPUPROF__GPU_BUSY * v->step_ns;   /* the GPU-bound phases fill the step */
    v->outside_ns = v->per_step && v->step_ns > v->cpu_sum ? v->step_ns - v->cpu_sum : 0;
    for (k = 1, v->step_k = 0; k < GPUPROF__K_COUNT; k++) {
        const double *by = v->gpu_step ? v->gpu_by : v->cpu_by;
        /* the GPU side is bounded by GPU classes; the CPU side by what the
           CPU does (a GPU-bound phase's CPU time is its launches) */
        if (v->gpu_step ? !gpuprof__k_gpu(k) : s->has_gpu && gpuprof__k_gpu(k)) continue;
        if (by[k] > 0 && (!v->step_k || by[k] > by[v->step_k])) v->step_k = k;
    }
    if (!v->step_k) v->step_k = v->gpu_step ? GPUPROF__K_GPU : GPUPROF__K_LAUNCH;
    for (i = 0; i < (uint32_t)v->nph; i++) {
        double x = v->gpu_step ? v->ph[i].gpu : v->ph[i].cpu;
        if (v->bottleneck < 0 || x > (v->gpu_step ? v->ph[v->bottleneck].gpu : v->ph[v->bottleneck].cpu)) v->bottleneck = (int)i;
    }
    if (!v->gpu_step && v->bottleneck >= 0 && v->outside_ns > v->ph[v->bottleneck].cpu) { v->bottleneck = -2; v->step_k = GPUPROF__K_CPU; }
    if (v->bottleneck >= 0 && v->ph[v->bottleneck].k == GPUPROF__K_SYNC)
        for (i = 0; i < (uint32_t)v->nph; i++)
            if (gpuprof__k_gpu(v->ph[i].k) && (v->waits_for < 0 || v->ph[i].gpu > v->ph[v->waits_for].gpu)) v->waits_for = (int)i;
}

#ifdef GPUPROF_CUDA
/* Of the kernels launched mostly inside phase ph (itself or a range nested
   in it): the one with the most time in launches that leave most SMs idle
   (idle = 1), or the most time of all (idle = 0); NULL: none. Kernel
   capture's tables are read under kc.mu. */
static const gpuprof__kernel *gpuprof__kc_phase_kernel(const gpuprof__snap *s, const gpuprof__row *ph, int idle) {
    const gpuprof__kernel *best = NULL;
    double most = 0;
    uint32_t i, j;
    if (!s || !gpuprof__kc.map) return NULL;
    pthread_mutex_lock(&gpuprof__kc_mu);
    for (i = 0; i < gpuprof__kc.nkern; i++) {
        const gpuprof__kernel *k = gpuprof__kc.kern[i];
        int r = gpuprof__ktop_best(&k->ranges);
        double x = idle ? k->idle_ns : k->stats.sum;
        if (r < 0 || !k->ranges.key[r] || x <= most) continue;
        for (j = 0; j < s->ntree; j++) {
            const gpuprof__row *d = &s->tree[j];
            if (d->name_id != (uint32_t)k->ranges.key[r]) continue;
            while (d && d != ph) d = d->parent >= 0 ? &s->tree[d->parent] : NULL;
            if (d) { best = k; most = x; break; }
        }
    }
    pthread_mutex_unlock(&gpuprof__kc_mu);
    return best;
}

/* A kernel's name for a sentence: up to its parameter list, at most 48 bytes. */
static const char *gpuprof__kc_short(char *buf, size_t n, const gpuprof__kernel *k) {
    const char *name = k->shown, *par = strchr(name, '(');
    size_t len = par && par > name ? (size_t)(par - name) : strlen(name);
    if (strncmp(name, "void ", 5) == 0 && len > 5) { name += 5; len -= 5; }
    if (len > 48) len = 48;
    if (len >= n) len = n - 1;
    memcpy(buf, name, len);
    buf[len] = 0;
    return buf;
}
#endif

/* The verdict from a snapshot: the step's phases, each one's class and time
   per typical step, what bounds the step and the bottleneck. */
static void gpuprof__analyze(const gpuprof__snap *s, gpuprof__verdict_t *v) {
    uint32_t i, j, nall = 0;
    gpuprof__phase *all;
    gpuprof__nested *nest;
    unsigned char *is_phase;
    memset(v, 0, sizeof *v);
    v->bottleneck = v->waits_for = -1;
    if (!s->ntree) return;
    all = (gpuprof__phase *)gpuprof__zalloc(s->ntree * sizeof *all);
    nest = (gpuprof__nested *)gpuprof__zalloc(s->ntree * sizeof *nest);
    is_phase = (unsigned char *)gpuprof__zalloc(s->ntree);
    if (!all || !nest || !is_phase) { GPUPROF_FREE(all); GPUPROF_FREE(nest); GPUPROF_FREE(is_phase); return; }
    gpuprof__verdict_steps(s, v);
    gpuprof__find_phases(s, v, is_phase);
    /* each nested range into its phase's totals: one pass, O(rows x depth) */
    for (j = 0; j < s->ntree; j++) {
        const gpuprof__row *d = &s->tree[j];
        int32_t up = d->parent;
        if (is_phase[j]) continue;
        while (up >= 0 && !is_phase[up]) up = s->tree[up].parent;
        if (up >= 0) gpuprof__nested_add(&nest[up], d, gpuprof__klass(d));
    }
    for (i = 0; i < s->ntree; i++) {
        const gpuprof__row *r = &s->tree[i];
        gpuprof__phase *p;
        double per;
        if (!is_phase[i] || !r->stats.count) continue;
        p = &all[nall++];
        p->r = r;
        p->k = gpuprof__klass(r);
        /* run totals of this phase's ranges -> per step, in the steps: in the
           proportion of its CPU time that fell in them (GPU and nested times too) */
        per = (r->stats.sum > 0 ? gpuprof__in_steps(v, r) / r->stats.sum : 1.0) / v->steps;
        p->cpu = r->stats.sum * per;
        p->gpu = r->gpu.count ? r->gpu.sum * per : 0;
        gpuprof__phase_classify(p, r, &nest[i], per);
        /* a GPU-bound phase holds the step for its GPU time (the CPU waits for it
           somewhere later); any other for its CPU time */
        p->t = gpuprof__k_gpu(p->k) && p->gpu > p->cpu ? p->gpu : p->cpu;
    }
    qsort(all, nall, sizeof *all, gpuprof__phase_cmp);
    v->nph = nall < GPUPROF__PHASES ? (int)nall : GPUPROF__PHASES;
    v->more = (int)nall - v->nph;
    memcpy(v->ph, all, (size_t)v->nph * sizeof *all);
    gpuprof__step_bound(s, v, all, nall);
    GPUPROF_FREE(nest);
    GPUPROF_FREE(all);
    GPUPROF_FREE(is_phase);
}

/* The run over time (SPEC 15): did the step time drift? Only typical steps
   (those of the most common kind when they ended: a validation or sampling
   step every N is another kind, drawn over the run but not compared), and
   not the first of them (a fiftieth, 2 to 10: start-up effects past the
   warm-up). The last tenth of those steps against the first tenth after
   them, each as the median of its points' mean step; a drift is a change of
   at least a tenth of the step and beyond noise (three standard errors,
   from the points' spread), with the followed range whose time changed most
   the same way. */
#define GPUPROF__DRIFT_MIN 0.10
#define GPUPROF__DRIFT_SKIP 50        /* the first fiftieth of the typical steps (2 to 10) is start-up */
typedef struct gpuprof__drift {
    int judged, drifted;          /* enough points to judge; a drift beyond noise */
    double first, last;           /* the tenths' median step (ns) */
    int slot;                     /* the followed range with most of the change (index into the snapshot's ph_name), -1: none */
    double slot_change;           /* its change per step (ns) */
    uint64_t t[4];                /* the first tenth's start and end, the last tenth's (ns since the session's start) */
    uint64_t typical, all, skipped;   /* the steps compared from, of all the counted steps; left out as start-up */
} gpuprof__drift;

/* The median of v[0..n) (sorted in place) and its robust spread (1.4826 x
   the median absolute deviation: the standard deviation of normal noise). */
static double gpuprof__median_spread(double *v, uint32_t n, double *spread) {
    double med;
    uint32_t i;
    qsort(v, n, sizeof *v, gpuprof__cmp_double);
    med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    if (spread) {
        for (i = 0; i < n; i++) v[i] = fabs(v[i] - med);
        qsort(v, n, sizeof *v, gpuprof__cmp_double);
        *spread = 1.4826 * (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
    }
    return med;
}

/* The median over the points idx[a..b) of the typical steps' mean (slot < 0)
   or of a followed range's time per typical step. */
static double gpuprof__tenth_median(const gpuprof__snap *s, const uint32_t *idx, uint32_t a, uint32_t b, int slot, double *v, double *spread) {
    uint32_t i;
    for (i = a; i < b; i++) {
        const gpuprof__point *p = &s->series[idx[i]];
        v[i - a] = (slot < 0 ? p->tsum : p->tph[slot]) / p->tn;
    }
    return gpuprof__median_spread(v, b - a, spread);
}

static void gpuprof__drift_of(const gpuprof__snap *s, gpuprof__drift *d) {
    uint64_t total = 0, got, span;
    uint32_t i, n = 0, a1, b1, a2, b2;
    uint32_t *idx;
    double *v, sd1, sd2, se, best = 0;
    int k;
    memset(d, 0, sizeof *d);
    d->slot = -1;
    if (!s->npoints || !(idx = (uint32_t *)gpuprof__alloc(s->npoints * sizeof *idx))) return;
    for (i = 0; i < s->npoints; i++) {
        d->all += s->series[i].n;
        if (s->series[i].tn) { idx[n++] = i; total += s->series[i].tn; }
    }
    d->typical = total;
    d->skipped = total / GPUPROF__DRIFT_SKIP < 2 ? 2 : total / GPUPROF__DRIFT_SKIP > 10 ? 10 : total / GPUPROF__DRIFT_SKIP;
    for (a1 = 0, got = 0; a1 < n && got < d->skipped; a1++) got += s->series[idx[a1]].tn;
    d->skipped = got;
    span = total > got ? (total - got) / 10 : 0;          /* a tenth of the steps compared */
    for (b1 = a1, got = 0; b1 < n && got < span; b1++) got += s->series[idx[b1]].tn;
    for (a2 = n, got = 0; a2 > 0 && got < span; a2--) got += s->series[idx[a2 - 1]].tn;
    b2 = n;
    if (total < 20 + d->skipped || b1 - a1 < 3 || b2 - a2 < 3 || b1 > a2 || !(v = (double *)gpuprof__alloc(n * sizeof *v))) {   /* too few steps to judge */
        GPUPROF_FREE(idx);
        return;
    }
    d->first = gpuprof__tenth_median(s, idx, a1, b1, -1, v, &sd1);
    d->last = gpuprof__tenth_median(s, idx, a2, b2, -1, v, &sd2);
    se = sqrt(sd1 * sd1 / (b1 - a1) + sd2 * sd2 / (b2 - a2));
    d->judged = 1;
    d->t[0] = s->series[idx[a1]].t0;
    d->t[1] = s->series[idx[b1 - 1]].t1;
    d->t[2] = s->series[idx[a2]].t0;
    d->t[3] = s->series[idx[b2 - 1]].t1;
    d->drifted = fabs(d->last - d->first) >= GPUPROF__DRIFT_MIN * d->first && fabs(d->last - d->first) > 3 * se;
    for (k = 0; d->drifted && k < (int)s->nph; k++) {
        double ch = gpuprof__tenth_median(s, idx, a2, b2, k, v, NULL) - gpuprof__tenth_median(s, idx, a1, b1, k, v, NULL);
        if (d->last > d->first ? ch > best : ch < best) { best = ch; d->slot = k; d->slot_change = ch; }
    }
    GPUPROF_FREE(v);
    GPUPROF_FREE(idx);
}

/* ----------------------------------------------------------------------
   CPU samples: per range, what the samples say -- for the report's
   "CPU samples per range", the verdict, the summary's `samples` and the
   folded stacks (GPUPROF_SAMPLE_FOLDED). Every thread's slots are read as
   they are (a sample coming meanwhile may be in or not), their addresses
   named ("CPU samples: symbols"), and added up by range path ("forward/matmul"; "(no
   range)" outside every range) and function.
   ---------------------------------------------------------------------- */
/* How a CPU-bound phase's functions get named (the verdict's try: line, sampling off). */
#if GPUPROF__SAMPLES
#define GPUPROF__HOST_NAMES "no GPU in this run: GPUPROF_SAMPLE=1 names the functions that take its CPU time (CPU samples per range), "
#else
#define GPUPROF__HOST_NAMES "no GPU in this run: perf names the functions that take its CPU time (CPU samples are compiled out of this build), "
#endif

#if GPUPROF__SAMPLES
typedef struct gpuprof__smp_func { char *name, *module; uint64_t self, total; } gpuprof__smp_func;
typedef struct gpuprof__smp_per_range {
    char *path;
    uint64_t samples;
    gpuprof__smp_func *fn;
    uint32_t nfn, cfn;
} gpuprof__smp_per_range;
typedef struct gpuprof__smp_report {
    uint64_t taken, lost, kept, with_callers, trace_lost;
    uint64_t overruns;                     /* expiries the kernel merged into the signals taken (si_overrun) */
    uint32_t threads, foreign;             /* threads sampled; of which record no range (their samples: the stepping thread's range) */
    double cpu_s;                         /* CPU time of the sampled threads while sampled */
    gpuprof__smp_per_range *r;
    uint32_t nr, cr;
    gpuprof__buf folded;                  /* "path;outer;...;leaf count" lines, when asked */
    char exe[256];                        /* the main program's file name */
} gpuprof__smp_report;

/* A range's path: its name and its ancestors', outermost first. */
static void gpuprof__smp_path(const gpuprof__node *n, char *out, size_t cap) {
    const gpuprof__node *chain[GPUPROF_MAX_DEPTH];
    int d = 0;
    size_t k = 0;
    for (; n && n->parent && d < GPUPROF_MAX_DEPTH; n = n->parent) chain[d++] = n;
    if (!d) { snprintf(out, cap, "(no range)"); return; }
    out[0] = 0;
    while (d-- > 0 && k + 1 < cap) k += (size_t)snprintf(out + k, cap - k, "%s%s", k ? "/" : "", gpuprof__name_text(chain[d]->name_id));
}

static gpuprof__smp_per_range *gpuprof__smp_range(gpuprof__smp_report *r, const char *path) {
    uint32_t i;
    void *na;
    for (i = 0; i < r->nr; i++) if (!strcmp(r->r[i].path, path)) return &r->r[i];
    if (!(na = gpuprof__room(r->r, sizeof *r->r, r->nr, &r->cr))) return NULL;
    r->r = (gpuprof__smp_per_range *)na;
    if (!(r->r[r->nr].path = gpuprof__strdup(path))) return NULL;
    return &r->r[r->nr++];
}

static gpuprof__smp_func *gpuprof__smp_fn(gpuprof__smp_per_range *g, const char *name, const char *module) {
    uint32_t i;
    void *na;
    for (i = 0; i < g->nfn; i++) if (!strcmp(g->fn[i].name, name) && !strcmp(g->fn[i].module, module)) return &g->fn[i];
    if (!(na = gpuprof__room(g->fn, sizeof *g->fn, g->nfn, &g->cfn))) return NULL;
    g->fn = (gpuprof__smp_func *)na;
    if (!(g->fn[g->nfn].name = gpuprof__strdup(name))) return NULL;
    if (!(g->fn[g->nfn].module = gpuprof__strdup(module))) { GPUPROF_FREE(g->fn[g->nfn].name); return NULL; }
    return &g->fn[g->nfn++];
}

/* One slot into the tables: its range's self count for the leaf's
   function, a total for each function its stack holds (once a stack);
   a folded line when asked. */
/* A stack's names while it is taken: on the heap, once a collection (a
   report may be asked for on a thread of 16 KiB). */
typedef struct gpuprof__smp_names {
    char path[512], buf[GPUPROF__SMP_DEPTH][160], base[160];
    const char *name[GPUPROF__SMP_DEPTH], *module[GPUPROF__SMP_DEPTH];
    uintptr_t pc[GPUPROF__SMP_DEPTH];
} gpuprof__smp_names;
static void gpuprof__smp_take(gpuprof__smp_report *r, gpuprof__symtab *st, const gpuprof__smp *m, const gpuprof__smp_slot *s, int folded,
                              gpuprof__smp_names *nm) {
    char *path = nm->path, *base = nm->base;
    char (*buf)[160] = nm->buf;
    const char **name = nm->name, **module = nm->module;
    gpuprof__smp_per_range *g;
    uint32_t i, j, depth = s->depth < GPUPROF__SMP_DEPTH ? s->depth : GPUPROF__SMP_DEPTH;
    uint64_t count = GPUPROF__LD(&s->count);
    if (!count) return;                         /* cleared by gpuprof_reset */
    gpuprof__smp_path(s->node, path, sizeof nm->path);
    if (!(g = gpuprof__smp_range(r, path)) || !depth) return;
    g->samples += count;
    r->kept += count;
    if (depth > 1) r->with_callers += count;
    depth = gpuprof__smp_pcs(st, &m->frames[s->at], depth, s->gen, nm->pc);
    for (i = 0; i < depth; i++) name[i] = gpuprof__sym_of(st, nm->pc[i], s->gen, buf[i], sizeof buf[i], &module[i]);
    for (i = 0; i < depth; i++) {
        gpuprof__smp_func *f;
        for (j = 0; j < i && !(module[j] == module[i] && !strcmp(name[j], name[i])); j++) {}
        if (j < i) continue;                   /* recursion: once a stack */
        if (!(f = gpuprof__smp_fn(g, name[i], module[i]))) return;
        f->total += count;
        if (!i) f->self += count;
    }
    if (!folded) return;
    gpuprof__buf_s(&r->folded, path);
    for (i = depth; i-- > 0;) {
        gpuprof__buf_s(&r->folded, ";");
        gpuprof__buf_s(&r->folded, gpuprof__smp_base(name[i], base, sizeof nm->base));
    }
    gpuprof__buf_printf(&r->folded, " %llu\n", (unsigned long long)count);
}

/* A sampled thread's CPU time while sampled, in seconds: that of its
   timers stopped, and of the one running now (ranged: whether it records
   ranges, and so keeps the time of its stopped timers; else the keeper's
   entry, whose one timer's time is the larger of the last look's and now's). */
static double gpuprof__smp_cpu_s(const gpuprof__smp *m, int ranged) {
    uint64_t cpu = GPUPROF__LD(&m->cpu_ns);
#if GPUPROF__SAMPLER
    if (GPUPROF__LDA(&m->gen)) {
        uint64_t now = gpuprof__smp_cpu_of(ranged && gpuprof__tls && m->tid == gpuprof__tls->tid ? 0 : m->tid);
        if (now > m->cpu0_ns) cpu = ranged ? cpu + (now - m->cpu0_ns) : (now - m->cpu0_ns > cpu ? now - m->cpu0_ns : cpu);
    }
#else
    (void)ranged;
#endif
    return (double)cpu * 1e-9;
}

/* Whether thread tid records ranges (the keeper may have sampled it before
   its first range: those samples count, the thread once). */
static int gpuprof__smp_tid_records(int tid) {
    const gpuprof__thread *t;
    for (t = GPUPROF__LDA(&gpuprof__threads.threads); t; t = t->next) if (t->smp && t->smp->tid == tid) return 1;
    return 0;
}

/* One thread's samples into the tables, and its counts. */
static void gpuprof__smp_take_all(gpuprof__smp_report *r, gpuprof__symtab *st, const gpuprof__smp *m, int folded, gpuprof__smp_names *nm) {
    uint32_t i;
    r->taken += GPUPROF__LD(&m->taken);
    r->lost += GPUPROF__LD(&m->lost);
    r->overruns += GPUPROF__LD(&m->overruns);
    r->trace_lost += GPUPROF__LD(&m->trace_lost);
    for (i = 0; i < GPUPROF__SMP_SLOTS; i++)
        if (GPUPROF__LDA(&m->slot[i].hash)) gpuprof__smp_take(r, st, m, &m->slot[i], folded, nm);
}

static int gpuprof__smp_fn_cmp(const void *a, const void *b) {
    const gpuprof__smp_func *x = (const gpuprof__smp_func *)a, *y = (const gpuprof__smp_func *)b;
    if (x->self != y->self) return x->self < y->self ? 1 : -1;
    if (x->total != y->total) return x->total < y->total ? 1 : -1;
    if ((x->name[0] == '_' && x->name[1] == '_') != (y->name[0] == '_' && y->name[1] == '_'))
        return x->name[0] == '_' && x->name[1] == '_' ? 1 : -1;     /* the C library's own (__libc_start_call_main) after main */
    return strcmp(x->name, y->name);
}
static int gpuprof__smp_range_cmp(const void *a, const void *b) {
    const gpuprof__smp_per_range *x = (const gpuprof__smp_per_range *)a, *y = (const gpuprof__smp_per_range *)b;
    if (x->samples != y->samples) return x->samples < y->samples ? 1 : -1;
    return strcmp(x->path, y->path);
}

/* Every thread's samples so far, by range and function, most first. 0:
   sampling was not asked for. */
static int gpuprof__smp_collect(gpuprof__smp_report *r, int folded) {
    gpuprof__symtab st;
    gpuprof__thread *t;
    gpuprof__smp_names *nm;
    uint32_t i;
    memset(r, 0, sizeof *r);
    if (gpuprof__smp_global.hz <= 0 || (nm = (gpuprof__smp_names *)gpuprof__alloc(sizeof *nm)) == NULL) return 0;
    gpuprof__sym_open(&st);
    snprintf(r->exe, sizeof r->exe, "%s", gpuprof__sym_exe(&st));
    for (t = GPUPROF__LDA(&gpuprof__threads.threads); t; t = t->next) {
        const gpuprof__smp *m = GPUPROF__LDA(&t->smp);
        if (!m) continue;
        r->threads++;
        r->cpu_s += gpuprof__smp_cpu_s(m, 1);
        gpuprof__smp_take_all(r, &st, m, folded, nm);
    }
    /* threads that record no range: their CPU time up to the keeper's last look, or now */
    pthread_mutex_lock(&gpuprof__smp_foreign_mu);
    for (i = 0; i < gpuprof__smp_foreign.n; i++) {
        const gpuprof__smp *m = gpuprof__smp_foreign.m[i];
        if (!GPUPROF__LD(&m->taken)) continue;      /* never ran while sampled (a thread asleep throughout) */
        if (!gpuprof__smp_tid_records(m->tid)) { r->threads++; r->foreign++; }
        r->cpu_s += gpuprof__smp_cpu_s(m, 0);
        gpuprof__smp_take_all(r, &st, m, folded, nm);
    }
    pthread_mutex_unlock(&gpuprof__smp_foreign_mu);
    for (i = 0; i < r->nr; i++)
        if (r->r[i].nfn) qsort(r->r[i].fn, r->r[i].nfn, sizeof r->r[i].fn[0], gpuprof__smp_fn_cmp);
    if (r->nr) qsort(r->r, r->nr, sizeof r->r[0], gpuprof__smp_range_cmp);
    gpuprof__sym_close(&st);
    GPUPROF_FREE(nm);
    return 1;
}

static void gpuprof__smp_range_free(gpuprof__smp_per_range *g) {
    uint32_t k;
    for (k = 0; k < g->nfn; k++) {
        GPUPROF_FREE(g->fn[k].name);
        GPUPROF_FREE(g->fn[k].module);
    }
    GPUPROF_FREE(g->fn);
    GPUPROF_FREE(g->path);
    memset(g, 0, sizeof *g);
}

static void gpuprof__smp_free(gpuprof__smp_report *r) {
    uint32_t i;
    for (i = 0; i < r->nr; i++) gpuprof__smp_range_free(&r->r[i]);
    GPUPROF_FREE(r->r);
    GPUPROF_FREE(r->folded.p);
    memset(r, 0, sizeof *r);
}

/* A range's functions as the report shows them: gcc's clones of a
   function (f.constprop.0, f.part.0, f.cold) added to it, most first
   (out: zeroed by the caller; gpuprof__smp_range_free). */
static void gpuprof__smp_merge(const gpuprof__smp_per_range *g, gpuprof__smp_per_range *out) {
    char base[160];
    uint32_t k;
    for (k = 0; k < g->nfn; k++) {
        gpuprof__smp_func *f = gpuprof__smp_fn(out, gpuprof__smp_base(g->fn[k].name, base, sizeof base), g->fn[k].module);
        if (f) { f->self += g->fn[k].self; f->total += g->fn[k].total; }
    }
    out->samples += g->samples;
    if (out->nfn) qsort(out->fn, out->nfn, sizeof out->fn[0], gpuprof__smp_fn_cmp);
}

/* The mechanism, in words. */
static void gpuprof__smp_mechanism(char *out, size_t n) {
#if GPUPROF__SAMPLER
    snprintf(out, n, "a POSIX CPU-time timer per thread, signal %d%s", gpuprof__smp_global.signo, gpuprof__smp_global.signo == SIGPROF ? " (SIGPROF)" : "");
#else
    snprintf(out, n, "none in this build");
#endif
}

/* The report's "CPU samples per range" (r: the samples collected; NULL:
   none asked for): the header line, then each range with samples (most
   first), its top functions by self samples. */
static void gpuprof__report_samples(gpuprof__buf *b, const gpuprof__smp_report *r, uint32_t rows) {
    char mech[96], over[48];
    uint32_t i, k;
    if (!r) return;
    gpuprof__smp_mechanism(mech, sizeof mech);
    over[0] = 0;
    if (r->overruns) gpuprof__fmt(over, sizeof over, ", %llu timer overruns", (unsigned long long)r->overruns);
    gpuprof__buf_printf(b, "\nCPU samples per range (%s: asked %.0f Hz, got %.0f per CPU second; %u thread%s sampled, %u recording no range; "
                           "%llu taken, %llu lost%s%s)\n", mech, gpuprof__smp_global.hz, r->cpu_s > 0 ? (double)r->taken / r->cpu_s : 0.0, r->threads,
                        r->threads == 1 ? "" : "s", r->foreign, (unsigned long long)r->taken, (unsigned long long)r->lost,
                        /* expiries the kernel merged: the tick is coarser than the rate asked, or the threads wait for a CPU */
                        over,
                        r->kept && r->with_callers * 2 >= r->kept ? "; with callers" : r->kept ? "; no callers: build with -fno-omit-frame-pointer to see them" : "");
    if (gpuprof__smp_global.why[0]) gpuprof__buf_printf(b, "   no samples: %s\n", gpuprof__smp_global.why);
    for (i = 0; i < r->nr && i < rows; i++) {
        gpuprof__smp_per_range g;
        memset(&g, 0, sizeof g);
        gpuprof__smp_merge(&r->r[i], &g);
        gpuprof__buf_printf(b, "%s: %llu samples (%.1f%%)\n    Self  Stacks  Function\n", r->r[i].path, (unsigned long long)g.samples,
                            r->kept ? 100.0 * (double)g.samples / (double)r->kept : 0.0);
        for (k = 0; k < g.nfn && k < 10; k++) {
            const gpuprof__smp_func *f = &g.fn[k];
            if (!f->self && k >= 3) break;
            gpuprof__buf_printf(b, "  %5.1f%%  %5.1f%%  %s", 100.0 * (double)f->self / (double)g.samples, 100.0 * (double)f->total / (double)g.samples, f->name);
            if (strcmp(f->module, r->exe)) gpuprof__buf_printf(b, "  [%s]", *f->module ? f->module : "no object");
            gpuprof__buf_s(b, "\n");
        }
        gpuprof__smp_range_free(&g);
    }
}

/* The verdict's "try:" for a CPU-bound phase: the functions its samples
   (its own and its nested ranges') name most, then the remedy (or, when
   given, the one for a phase whose functions are named); or the remedy and
   how to have them named (r: the samples collected; NULL: none asked for). */
#define GPUPROF__OMP_SHARE 0.2    /* the OpenMP runtime holds this share of a phase's samples: its wait policy is named */
#define GPUPROF__OMP_REMEDY "set OMP_WAIT_POLICY=passive (or GOMP_SPINCOUNT=0; KMP_BLOCKTIME=0 for libomp) so that idle threads sleep " \
    "instead of spinning, run fewer threads (OMP_NUM_THREADS), or give each parallel region more work"
static void gpuprof__verdict_samples(gpuprof__buf *b, const gpuprof__smp_report *r, const char *phase, const char *remedy, const char *named) {
    gpuprof__smp_per_range all;
    uint64_t n, omp;
    uint32_t i, k, shown;
    size_t len = strlen(phase);
    if (!r) {            /* sampling off: the try: line itself says how to have the functions named */
        if (named) gpuprof__buf_printf(b, "\n   try: " GPUPROF__HOST_NAMES "%s\n", named);
        else gpuprof__buf_printf(b, "\n   try: %s; GPUPROF_SAMPLE=1 names the functions that take its CPU time (CPU samples per range)\n", remedy);
        return;
    }
    memset(&all, 0, sizeof all);
    for (i = 0; i < r->nr; i++) {
        const gpuprof__smp_per_range *g = &r->r[i];
        if (strncmp(g->path, phase, len) || (g->path[len] && g->path[len] != '/')) continue;
        gpuprof__smp_merge(g, &all);
    }
    n = all.samples;
    /* the phase's own functions first; the OpenMP runtime (its workers waiting) after, with its own remedy */
    for (i = 0, omp = 0; i < all.nfn; i++) if (!strcmp(all.fn[i].name, GPUPROF__OMP_RUNTIME)) omp += all.fn[i].self;
    for (i = 0; i < all.nfn && !strcmp(all.fn[i].name, GPUPROF__OMP_RUNTIME); i++) {}
    if (n && i < all.nfn && all.fn[i].self) {
        gpuprof__buf_printf(b, "\n   try: speed up %s, %.0f%% of its %llu CPU samples", all.fn[i].name, 100.0 * (double)all.fn[i].self / (double)n,
                            (unsigned long long)n);
        for (k = i + 1, shown = 0; k < all.nfn && shown < 2 && all.fn[k].self; k++) {
            if (!strcmp(all.fn[k].name, GPUPROF__OMP_RUNTIME)) continue;
            gpuprof__buf_printf(b, "%s %s %.0f%%", !shown ? " (then" : ",", all.fn[k].name, 100.0 * (double)all.fn[k].self / (double)n);
            shown++;
        }
        gpuprof__buf_printf(b, "%sCPU samples per range); ", shown ? "; " : " (");
        if ((double)omp >= GPUPROF__OMP_SHARE * (double)n)
            gpuprof__buf_printf(b, "its OpenMP threads wait in the runtime for %.0f%% of its samples: " GPUPROF__OMP_REMEDY "; ", 100.0 * (double)omp / (double)n);
        gpuprof__buf_printf(b, "%s\n", named ? named : remedy);
    } else if (n && omp) {
        gpuprof__buf_printf(b, "\n   try: its OpenMP threads wait in the runtime for %.0f%% of its %llu CPU samples: " GPUPROF__OMP_REMEDY "; %s\n",
                            100.0 * (double)omp / (double)n, (unsigned long long)n, named ? named : remedy);
    } else gpuprof__buf_printf(b, "\n   try: %s\n   (no CPU samples in it: a phase shorter than a tick of the sampler's timer)\n", remedy);
    gpuprof__smp_range_free(&all);
}

/* The summary's "samples" (docs/summary.md): the mechanism, the rate
   achieved, samples taken and lost, and per range its functions by self
   samples (the top 50). */
/* A thread's CPU time while sampled and the rate it got (null: none),
   closing its object. */
static void gpuprof__summary_sample_rate(gpuprof__buf *b, const gpuprof__smp *m, int ranged) {
    double cpu = gpuprof__smp_cpu_s(m, ranged);
    gpuprof__buf_printf(b, ",\"cpu_s\":%.6f,\"rate_hz\":", cpu);
    if (cpu > 0) gpuprof__buf_printf(b, "%.1f}", (double)GPUPROF__LD(&m->taken) / cpu);
    else gpuprof__buf_s(b, "null}");
}

/* "threads": every sampled thread, its name, tid, samples, whether it
   records ranges, its CPU time and rate (one that does not gives its samples to the stepping
   thread's innermost range). */
static void gpuprof__summary_sample_threads(gpuprof__buf *b) {
    gpuprof__thread *t;
    uint32_t i;
    const char *sep = "";
    gpuprof__buf_s(b, ",\"threads\":[");
    for (t = GPUPROF__LDA(&gpuprof__threads.threads); t; t = t->next) {
        const gpuprof__smp *m = GPUPROF__LDA(&t->smp);
        if (!m || t->exited == 2) continue;
        gpuprof__buf_printf(b, "%s{\"name\":", sep);
        gpuprof__buf_json_str(b, t->label);
        gpuprof__buf_printf(b, ",\"tid\":%d,\"samples\":%llu,\"records_ranges\":true", m->tid, (unsigned long long)GPUPROF__LD(&m->taken));
        gpuprof__summary_sample_rate(b, m, 1);
        sep = ",";
    }
    pthread_mutex_lock(&gpuprof__smp_foreign_mu);
    for (i = 0; i < gpuprof__smp_foreign.n; i++) {
        const gpuprof__smp *m = gpuprof__smp_foreign.m[i];
        if (!GPUPROF__LD(&m->taken) || gpuprof__smp_tid_records(m->tid)) continue;
        gpuprof__buf_printf(b, "%s{\"name\":", sep);
        gpuprof__buf_json_str(b, gpuprof__smp_foreign.name[i]);
        gpuprof__buf_printf(b, ",\"tid\":%d,\"samples\":%llu,\"records_ranges\":false", m->tid, (unsigned long long)GPUPROF__LD(&m->taken));
        gpuprof__summary_sample_rate(b, m, 0);
        sep = ",";
    }
    pthread_mutex_unlock(&gpuprof__smp_foreign_mu);
    gpuprof__buf_s(b, "]");
}

static void gpuprof__summary_samples(gpuprof__buf *b) {
    gpuprof__smp_report r;
    char mech[96];
    uint32_t i, k;
    if (!gpuprof__smp_collect(&r, 0)) {
        gpuprof__buf_s(b, "\"samples\":null,\n");
        return;
    }
    gpuprof__smp_mechanism(mech, sizeof mech);
    gpuprof__buf_s(b, "\"samples\":{\"mechanism\":");
    gpuprof__buf_json_str(b, mech);
    gpuprof__buf_s(b, ",\"asked_hz\":");
    gpuprof__buf_num(b, gpuprof__smp_global.hz);
    gpuprof__buf_s(b, ",\"rate_hz\":");
    gpuprof__buf_num(b, r.cpu_s > 0 ? (double)r.taken / r.cpu_s : 0.0);
    gpuprof__buf_printf(b, ",\"taken\":%llu,\"lost\":%llu,\"overruns\":%llu,\"with_callers\":%llu,\"trace_lost\":%llu,\"error\":", (unsigned long long)r.taken,
                        (unsigned long long)r.lost, (unsigned long long)r.overruns, (unsigned long long)r.with_callers, (unsigned long long)r.trace_lost);
    if (gpuprof__smp_global.why[0]) gpuprof__buf_json_str(b, gpuprof__smp_global.why);
    else gpuprof__buf_s(b, "null");
    gpuprof__summary_sample_threads(b);
    gpuprof__buf_s(b, ",\"by_range\":[");
    for (i = 0; i < r.nr; i++) {
        const gpuprof__smp_per_range *g = &r.r[i];
        gpuprof__buf_s(b, i ? ",\n  {\"range\":" : "\n  {\"range\":");
        gpuprof__buf_json_str(b, g->path);
        gpuprof__buf_printf(b, ",\"samples\":%llu,\"functions\":[", (unsigned long long)g->samples);
        for (k = 0; k < g->nfn && k < 50; k++) {
            gpuprof__buf_s(b, k ? ",{\"name\":" : "{\"name\":");
            gpuprof__buf_json_str(b, g->fn[k].name);
            gpuprof__buf_s(b, ",\"module\":");
            gpuprof__buf_json_str(b, g->fn[k].module);
            gpuprof__buf_printf(b, ",\"self\":%llu,\"total\":%llu}", (unsigned long long)g->fn[k].self, (unsigned long long)g->fn[k].total);
        }
        gpuprof__buf_s(b, "]}");
    }
    gpuprof__buf_s(b, "]},\n");
    gpuprof__smp_free(&r);
}
#else
/* GPUPROF_NO_SAMPLES: the report, the verdict and the summary without samples. */
typedef struct gpuprof__smp_report { int none; } gpuprof__smp_report;
#define gpuprof__smp_collect(r, folded) ((void)(r), (void)(folded), 0)
#define gpuprof__smp_free(r) ((void)(r))
#define gpuprof__report_samples(b, r, rows) ((void)(b), (void)(r), (void)(rows))
#define gpuprof__verdict_samples(b, r, phase, remedy, named) \
    ((void)(r), (void)(phase), gpuprof__buf_printf((b), "\n   try: %s%s\n", (named) ? GPUPROF__HOST_NAMES : "", (named) ? (named) : (remedy)))
#define gpuprof__summary_samples(b) gpuprof__buf_s((b), "\"samples\":null,\n")
#endif

/* ----------------------------------------------------------------------
   The device: its report -- the report's section, the summary's
   device_over_time, and the device's part in a drift (SPEC 17)
   ---------------------------------------------------------------------- */
#if GPUPROF__DEVICE
static int gpuprof__dev_whole(int k) {
    const char *u = gpuprof__dev_info[k].unit;
    return !strcmp(u, "MHz") || !strcmp(u, "MiB") || !strcmp(u, "MiB/s") || !strcmp(u, "C");
}

/* A value as the report shows it: whole MHz, MiB, C; tenths of %, W. */
static const char *gpuprof__dev_fmt(char *out, size_t cap, int k, double v) {
    gpuprof__fmt(out, cap, gpuprof__dev_whole(k) ? "%.0f" : "%.1f", v);
    return out;
}

/* The mean of counter k over the points whose middle is in [a, b] (ns);
   the share of those samples under each clock-event reason. 0: none. */
static uint64_t gpuprof__dev_window(int k, uint64_t a, uint64_t b, double *mean, double *why_share) {
    uint64_t n = 0, nwhy = 0, why[GPUPROF__DEV_WHY];
    double sum = 0;
    uint32_t i;
    int r;
    memset(why, 0, sizeof why);
    for (i = 0; i < gpuprof__dev.npt; i++) {
        const gpuprof__dev_interval *p = &gpuprof__dev.pt[i];
        uint64_t mid = p->t0 + (p->t1 - p->t0) / 2;
        if (mid < a || mid > b) continue;
        n += p->cnt[k];
        sum += p->sum[k];
        nwhy += p->nwhy;
        for (r = 0; r < GPUPROF__DEV_WHY; r++) why[r] += p->why[r];
    }
    *mean = n ? sum / (double)n : 0;
    for (r = 0; why_share && r < GPUPROF__DEV_WHY; r++) why_share[r] = nwhy ? (double)why[r] / (double)nwhy : 0;
    return n;
}

/* The device's part in a drift of the step time: the SM clock moved the
   other way by GPUPROF__DEV_CLOCK_MOVE or more between the first and the
   last tenth (their windows on the clock), with the reason that held the
   clocks back most in the last tenth. Writes "" when it did not. */
#define GPUPROF__DEV_CLOCK_MOVE 0.02
static void gpuprof__dev_drift_cause(char *out, size_t cap, const gpuprof__drift *d) {
    double c1, c2, share[GPUPROF__DEV_WHY], best = 0;
    int r, top = -1;
    char t1[32], t2[32], t3[32];
    out[0] = 0;
    if (!d->drifted || !GPUPROF__LD(&gpuprof__dev.samples)) return;
    pthread_mutex_lock(&gpuprof__dev_mu);
    if (gpuprof__dev.c[GPUPROF__DEV_SMCLK].n && gpuprof__dev_window(GPUPROF__DEV_SMCLK, d->t[0], d->t[1], &c1, NULL) &&
        gpuprof__dev_window(GPUPROF__DEV_SMCLK, d->t[2], d->t[3], &c2, share) &&
        fabs(c2 - c1) >= GPUPROF__DEV_CLOCK_MOVE * c1 && (c2 < c1) == (d->last > d->first)) {
        for (r = 0; r < GPUPROF__DEV_WHY; r++)
            if (share[r] > best && strcmp(gpuprof__dev_why[r].name, "idle")) { best = share[r]; top = r; }
        gpuprof__fmt(t1, sizeof t1, "%.0f", c1);
        gpuprof__fmt(t2, sizeof t2, "%.0f", c2);
        gpuprof__fmt(t3, sizeof t3, "%.0f", 100 * best);
        if (top < 0) snprintf(out, cap, "SM clock %s from %s to %s MHz", c2 < c1 ? "fell" : "rose", t1, t2);
        else snprintf(out, cap, "SM clock %s from %s to %s MHz; %s %s%% of the last tenth", c2 < c1 ? "fell" : "rose", t1, t2, gpuprof__dev_why[top].name, t3);
    }
    pthread_mutex_unlock(&gpuprof__dev_mu);
}

/* A phase's mean call (ns): on the CPU, or on the GPU where that is longer
   (its samples are then those of its GPU windows). */
static double gpuprof__dev_row_call_ns(const gpuprof__row *r) {
    double c = r->stats.sum / (double)r->stats.count;
    return r->gpu.count && r->gpu.sum / (double)r->gpu.count > c ? r->gpu.sum / (double)r->gpu.count : c;
}

/* An outermost range of the stepping thread with counted calls (a phase);
   one whose mean call is under two intervals is too short for samples of
   its own (they fall at random in it). */
static int gpuprof__dev_is_phase(const gpuprof__row *r) { return !r->depth && !r->other && r->stats.count; }
static int gpuprof__dev_short(const gpuprof__row *r) { return gpuprof__dev_row_call_ns(r) < 2e6 * gpuprof__dev.every_ms; }


/* Counter k over the run in w columns (the points' means, min to max). */
static void gpuprof__dev_spark(gpuprof__buf *b, int k, uint32_t w) {
    static const char *const level[8] = { "\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
                                          "\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88" };   /* U+2581..U+2588 */
    const gpuprof__dev_counter *c = &gpuprof__dev.c[k];
    uint32_t j, i, np = gpuprof__dev.npt;
    int last = 0;
    if (np < w) w = np;
    for (j = 0; j < w; j++) {
        double sum = 0, n = 0, x;
        for (i = j * np / w; i < (j + 1) * np / w; i++) { sum += gpuprof__dev.pt[i].sum[k]; n += gpuprof__dev.pt[i].cnt[k]; }
        if (n > 0) {
            x = c->max > c->min ? (sum / n - c->min) / (c->max - c->min) * 7.0 + 0.5 : 0;
            last = !(x > 0) ? 0 : x >= 7 ? 7 : (int)x;
        }
        gpuprof__buf_s(b, level[last]);             /* a column without this counter's samples (GPM's slower pace) repeats the last */
    }
}

/* The section's head: the device, the samples, what was not sampled. */
static void gpuprof__dev_report_head(gpuprof__buf *b) {
    char t1[32];
    int k, first = 1;
    gpuprof__buf_printf(b, "\nDevice over the run: GPU %u", gpuprof__dev.index);
    if (gpuprof__dev.name[0]) gpuprof__buf_printf(b, ", %s", gpuprof__dev.name);
    if (gpuprof__dev.bus[0]) gpuprof__buf_printf(b, " (the CUDA device, bus %s)", gpuprof__dev.bus);
    else if (strcmp(gpuprof__dev.how, "the first")) gpuprof__buf_printf(b, " (%s)", gpuprof__dev.how);
    gpuprof__fmt(t1, sizeof t1, "%g", gpuprof__dev.every_ms);
    gpuprof__buf_printf(b, ", NVML: %llu samples every %s ms", (unsigned long long)gpuprof__dev.samples, t1);
    gpuprof__buf_s(b, gpuprof__dev.gpm > 0 ? ", GPM metrics on\n" : gpuprof__dev.gpm < 0 ? ", GPM metrics failed\n" : ", no GPM (before Hopper)\n");
    if (gpuprof__dev.lost) {
        gpuprof__fmt(t1, sizeof t1, "%.1f", (double)gpuprof__dev.lost_at / 1e9);
        gpuprof__buf_printf(b, "   the GPU was lost %s s into the run: no samples after it\n", t1);
    } else if (GPUPROF__LDA(&gpuprof__dev_reader.hung) && !GPUPROF__LD(&gpuprof__dev_reader.at_shutdown)) {
        gpuprof__fmt(t1, sizeof t1, "%.1f", (double)GPUPROF__LD(&gpuprof__dev_reader.hung_at) / 1e9);
        gpuprof__buf_printf(b, "   the GPU stopped answering %s s into the run (an NVML call never returned): no samples after it\n", t1);
    }
    for (k = 0; k < GPUPROF__DEV_N; k++) {
        if (gpuprof__dev.c[k].on >= 0) continue;
        gpuprof__buf_printf(b, "%s%s", first ? "   not sampled (its call failed): " : ", ", gpuprof__dev_info[k].name);
        first = 0;
    }
    if (!first) gpuprof__buf_s(b, "\n");
}

/* One row a counter: mean, p5, p95, the run in 40 columns, min to max. */
static void gpuprof__dev_report_counters(gpuprof__buf *b) {
    char t[4][32], label[48];
    int k;
    int zeros = 0;
    gpuprof__buf_s(b, "   counter                      mean       p5      p95  over the run (min to max)\n");
    for (k = 0; k < GPUPROF__DEV_N; k++) {
        const gpuprof__dev_counter *c = &gpuprof__dev.c[k];
        if (!c->n || (c->min == 0 && c->max == 0)) continue;        /* all zero: one line below */
        snprintf(label, sizeof label, "%s (%s)", gpuprof__dev_info[k].name, gpuprof__dev_info[k].unit);
        gpuprof__buf_printf(b, "   %-24s %8s %8s %8s  ", label, gpuprof__dev_fmt(t[0], sizeof t[0], k, c->sum / (double)c->n),
                            gpuprof__dev_fmt(t[1], sizeof t[1], k, gpuprof__dev_quantile(c, 0.05)), gpuprof__dev_fmt(t[2], sizeof t[2], k, gpuprof__dev_quantile(c, 0.95)));
        gpuprof__dev_spark(b, k, 40);
        gpuprof__buf_printf(b, " (%s to %s", gpuprof__dev_fmt(t[0], sizeof t[0], k, c->min), gpuprof__dev_fmt(t[3], sizeof t[3], k, c->max));
        if (k == GPUPROF__DEV_SMCLK && gpuprof__dev.max_sm) gpuprof__buf_printf(b, "; the GPU's max %u", gpuprof__dev.max_sm);
        if (k == GPUPROF__DEV_MEMCLK && gpuprof__dev.max_mem) gpuprof__buf_printf(b, "; the GPU's max %u", gpuprof__dev.max_mem);
        gpuprof__buf_s(b, ")\n");
    }
    for (k = 0; k < GPUPROF__DEV_N; k++) {
        if (!gpuprof__dev.c[k].n || gpuprof__dev.c[k].min != 0 || gpuprof__dev.c[k].max != 0) continue;
        gpuprof__buf_printf(b, "%s%s", zeros++ ? ", " : "   zero throughout: ", gpuprof__dev_info[k].name);
    }
    if (zeros) gpuprof__buf_s(b, "\n");
}

/* The share of the samples under each clock-event reason. */
static void gpuprof__dev_report_why(gpuprof__buf *b) {
    char t1[32];
    int r, any = 0;
    if (!gpuprof__dev.nwhy) return;
    gpuprof__buf_s(b, "   clocks held back:");
    for (r = 0; r < GPUPROF__DEV_WHY; r++) {
        if (!gpuprof__dev.why[r]) continue;
        gpuprof__fmt(t1, sizeof t1, "%.0f", 100.0 * (double)gpuprof__dev.why[r] / (double)gpuprof__dev.nwhy);
        gpuprof__buf_printf(b, "%s %s %s%%", any ? "," : "", gpuprof__dev_why[r].name, t1);
        any = 1;
    }
    gpuprof__buf_printf(b, any ? " of the samples\n" : " never, in %llu samples\n", (unsigned long long)gpuprof__dev.nwhy);
}


/* One phase's line: its utilization counters' means over its samples, and
   the class GPM gives the GPU's work in it. */
static void gpuprof__dev_report_phase(gpuprof__buf *b, const gpuprof__dev_phase_sums *p) {
    char t1[32], t2[32];
    int k, first = 1, cls;
    double dram, comp;
    gpuprof__buf_qname(b, "     ", p->name_id);
    gpuprof__buf_printf(b, ", %u samples%s:", p->n, p >= gpuprof__dev.gph && p < gpuprof__dev.gph + GPUPROF__DEV_PHASES ? " in its GPU windows" : "");
    for (k = 0; k < GPUPROF__DEV_N; k++) {
        if (!gpuprof__dev_info[k].util || !p->cnt[k]) continue;
        gpuprof__buf_printf(b, "%s %s %s%%", first ? "" : ",", gpuprof__dev_info[k].name, gpuprof__dev_fmt(t1, sizeof t1, k, p->sum[k] / p->cnt[k]));
        first = 0;
    }
    gpuprof__buf_s(b, "\n");
    if ((cls = gpuprof__dev_class_locked(p->name_id, &dram, &comp)) != 0) {
        gpuprof__fmt(t1, sizeof t1, "%.0f", dram);
        gpuprof__fmt(t2, sizeof t2, "%.0f", comp);
        gpuprof__buf_printf(b, "       the GPU's work in it reads %s (measured, GPM): DRAM bandwidth %s%% of peak, compute activity %s%%\n",
                            cls == 1 ? "memory-bound" : "compute-bound", t1, t2);
    }
}

/* Per outermost range of the stepping thread (the report's phases): its
   line, or, for one whose calls are too short to hold samples of their
   own, its name in the closing line. */
static void gpuprof__dev_report_phases(gpuprof__buf *b, const gpuprof__snap *s) {
    char t1[32], t2[32];
    uint32_t i;
    int shown = 0, short_ones = 0;
    for (i = 0; i < s->ntree; i++) {
        const gpuprof__row *r = &s->tree[i];
        const gpuprof__dev_phase_sums *p = gpuprof__dev_phase_of(r->name_id);
        if (!gpuprof__dev_is_phase(r) || !p || gpuprof__dev_short(r)) continue;
        if (!shown++) gpuprof__buf_s(b, "   by phase (outermost ranges; the means over the samples taken while each ran):\n");
        gpuprof__dev_report_phase(b, p);
    }
    for (i = 0; i < s->ntree; i++) {
        const gpuprof__row *r = &s->tree[i];
        double call;
        if (!gpuprof__dev_is_phase(r) || !gpuprof__dev_short(r)) continue;
        call = gpuprof__dev_row_call_ns(r);
        gpuprof__fmt(t1, sizeof t1, "%g", gpuprof__dev.every_ms * 2);
        if (!short_ones++) gpuprof__buf_printf(b, "   phases too short for their own utilization (a call under 2 x the interval, %s ms):", t1);
        gpuprof__buf_qname(b, short_ones > 1 ? ", " : " ", r->name_id);
        gpuprof__buf_printf(b, " (%s a call)", gpuprof__fmt_ns(t2, sizeof t2, call));
    }
    if (short_ones) gpuprof__buf_s(b, "\n");
}

/* The report's "Device over the run" (SPEC 17). */
static void gpuprof__report_device(gpuprof__buf *b, const gpuprof__snap *s) {
    gpuprof__nvml_hung(0);
    if (!GPUPROF__LD(&gpuprof__dev.samples)) return;
    pthread_mutex_lock(&gpuprof__dev_mu);
    gpuprof__dev_report_head(b);
    gpuprof__dev_report_counters(b);
    gpuprof__dev_report_why(b);
    gpuprof__dev_report_phases(b, s);
    pthread_mutex_unlock(&gpuprof__dev_mu);
}

/* The summary's device_over_time (docs/summary.md), or null. */
static void gpuprof__json_device(gpuprof__buf *b, const gpuprof__snap *s) {
    uint32_t i;
    int k, r, first = 1;
    gpuprof__buf_s(b, "\"device_over_time\":");
    gpuprof__nvml_hung(0);
    pthread_mutex_lock(&gpuprof__dev_mu);
    if (!gpuprof__dev.samples) {
        pthread_mutex_unlock(&gpuprof__dev_mu);
        gpuprof__buf_s(b, "null,\n");
        return;
    }
    gpuprof__buf_s(b, "{\"every_ms\":");
    gpuprof__buf_num(b, gpuprof__dev.every_ms);
    gpuprof__buf_printf(b, ",\"device\":{\"index\":%u,\"name\":", gpuprof__dev.index);
    gpuprof__buf_json_str(b, gpuprof__dev.name);
    gpuprof__buf_s(b, ",\"pci_bus_id\":");
    gpuprof__buf_json_str(b, gpuprof__dev.bus);
    gpuprof__buf_s(b, ",\"picked_by\":");
    gpuprof__buf_json_str(b, gpuprof__dev.how);
    gpuprof__buf_printf(b, ",\"sm_clock_max_mhz\":%u,\"memory_clock_max_mhz\":%u,\"gpm\":%s,\"lost_at_ns\":", gpuprof__dev.max_sm, gpuprof__dev.max_mem,
                        gpuprof__dev.gpm > 0 ? "true" : "false");
    gpuprof__buf_num(b, gpuprof__dev.lost ? (double)gpuprof__dev.lost_at : GPUPROF__NAN);
    gpuprof__buf_s(b, ",\"stopped_answering_at_ns\":");
    gpuprof__buf_num(b, GPUPROF__LDA(&gpuprof__dev_reader.hung) && !GPUPROF__LD(&gpuprof__dev_reader.at_shutdown) ? (double)GPUPROF__LD(&gpuprof__dev_reader.hung_at) : GPUPROF__NAN);
    gpuprof__buf_printf(b, "},\"samples\":%llu,\"steps_per_point\":%u,\n \"counters\":[", (unsigned long long)gpuprof__dev.samples, gpuprof__dev.per_pt);
    for (k = 0; k < GPUPROF__DEV_N; k++) {
        const gpuprof__dev_counter *c = &gpuprof__dev.c[k];
        if (!c->n) continue;
        gpuprof__buf_s(b, first ? "\n  {\"name\":" : ",\n  {\"name\":");
        first = 0;
        gpuprof__buf_json_str(b, gpuprof__dev_info[k].name);
        gpuprof__buf_printf(b, ",\"unit\":\"%s\",\"samples\":%llu,\"dropped\":%s,\"impossible\":%llu,\"mean\":", gpuprof__dev_info[k].unit,
                            (unsigned long long)c->n, c->on < 0 ? "true" : "false", (unsigned long long)c->impossible);
        gpuprof__buf_num(b, c->sum / (double)c->n);
        gpuprof__buf_s(b, ",\"min\":"); gpuprof__buf_num(b, c->min);
        gpuprof__buf_s(b, ",\"max\":"); gpuprof__buf_num(b, c->max);
        gpuprof__buf_s(b, ",\"p5\":"); gpuprof__buf_num(b, gpuprof__dev_quantile(c, 0.05));
        gpuprof__buf_s(b, ",\"p95\":"); gpuprof__buf_num(b, gpuprof__dev_quantile(c, 0.95));
        gpuprof__buf_s(b, ",\"points\":[");
        for (i = 0, r = 0; i < gpuprof__dev.npt; i++) {
            const gpuprof__dev_interval *p = &gpuprof__dev.pt[i];
            if (!p->cnt[k]) continue;
            gpuprof__buf_printf(b, "%s[%llu,", r++ ? "," : "", (unsigned long long)p->t0);
            gpuprof__buf_num(b, p->min[k]); gpuprof__buf_s(b, ",");
            gpuprof__buf_num(b, p->sum[k] / p->cnt[k]); gpuprof__buf_s(b, ",");
            gpuprof__buf_num(b, p->max[k]); gpuprof__buf_s(b, "]");
        }
        gpuprof__buf_s(b, "]}");
    }
    gpuprof__buf_s(b, "],\n \"throttle\":[");
    for (r = 0, first = 1; r < GPUPROF__DEV_WHY && gpuprof__dev.nwhy; r++) {
        gpuprof__buf_printf(b, "%s{\"reason\":\"%s\",\"share\":", first ? "" : ",", gpuprof__dev_why[r].name);
        gpuprof__buf_num(b, (double)gpuprof__dev.why[r] / (double)gpuprof__dev.nwhy);
        gpuprof__buf_s(b, "}");
        first = 0;
    }
    gpuprof__buf_s(b, "],\n \"by_phase\":[");
    for (i = 0, first = 1; i < s->ntree; i++) {
        const gpuprof__row *row = &s->tree[i];
        const gpuprof__dev_phase_sums *p = gpuprof__dev_phase_of(row->name_id);
        int any = 0;
        if (!gpuprof__dev_is_phase(row) || !p || gpuprof__dev_short(row)) continue;
        gpuprof__buf_printf(b, "%s{\"range\":%s,\"samples\":%u,\"counters\":{", first ? "" : ",", gpuprof__registry.names[p->name_id].json, p->n);
        first = 0;
        for (k = 0; k < GPUPROF__DEV_N; k++) {
            if (!p->cnt[k]) continue;
            gpuprof__buf_s(b, any++ ? "," : "");
            gpuprof__buf_json_str(b, gpuprof__dev_info[k].name);
            gpuprof__buf_s(b, ":");
            gpuprof__buf_num(b, p->sum[k] / p->cnt[k]);
        }
        gpuprof__buf_s(b, "}}");
    }
    gpuprof__buf_s(b, "],\"too_short\":[");
    for (i = 0, first = 1; i < s->ntree; i++) {
        const gpuprof__row *row = &s->tree[i];
        if (!gpuprof__dev_is_phase(row) || !gpuprof__dev_short(row)) continue;
        gpuprof__buf_printf(b, "%s%s", first ? "" : ",", gpuprof__registry.names[row->name_id].json);
        first = 0;
    }
    gpuprof__buf_printf(b, "],\"outside_ranges\":%llu},\n", (unsigned long long)gpuprof__dev.outside);
    pthread_mutex_unlock(&gpuprof__dev_mu);
}

#else
/* GPUPROF_NO_DEVICE: the report and the summary without the device. */
#define gpuprof__dev_drift_cause(out, n, d) ((void)(n), (void)(d), (out)[0] = 0)
#define gpuprof__report_device(b, s) ((void)(b), (void)(s))
#define gpuprof__json_device(b, s) ((void)(s), gpuprof__buf_s((b), "\"device_over_time\":null,\n"))
#endif

/* ----------------------------------------------------------------------
   Text report, its parts: the header, the tables by CPU and by GPU time,
   counters, memory, the roofline, the verdict, the warnings.
   ---------------------------------------------------------------------- */
/* Bytes with a binary unit and three significant digits; sign=1 writes a
   '+' before growth. NaN: "-". */
static const char *gpuprof__fmt_bytes(char *buf, size_t n, double v, int sign) {
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double a = v < 0 ? -v : v;
    const char *pre = v < 0 ? "-" : sign && v > 0 ? "+" : "";
    int u = 0;
    if (gpuprof__isnan(v)) { snprintf(buf, n, "-"); return buf; }
    while (u < 4 && a >= 1023.5) { a /= 1024.0; u++; }
    if (u == 0) gpuprof__fmt(buf, n, "%s%.0f B", pre, a);
    else if (a < 9.995) gpuprof__fmt(buf, n, "%s%.2f %s", pre, a, unit[u]);
    else if (a < 99.95) gpuprof__fmt(buf, n, "%s%.1f %s", pre, a, unit[u]);
    else gpuprof__fmt(buf, n, "%s%.0f %s", pre, a, unit[u]);
    return buf;
}

/* Why a phase is under-filled: the kernel that leaves most SMs idle longest
   and its launch, or the share of such launches. */
static void gpuprof__why_underfilled(char *out, size_t n, const gpuprof__snap *s, const gpuprof__phase *p) {
    char t1[32], kn[64];
    gpuprof__fmt(t1, sizeof t1, "%.0f", p->kern_ns > 0 ? 100.0 * p->uf_ns / p->kern_ns : 0.0);
#ifdef GPUPROF_CUDA
    {
        const gpuprof__kernel *k = gpuprof__kc_phase_kernel(s, p->r, 1);
        int sh = k ? gpuprof__ktop_best(&k->shapes) : -1;
        if (sh >= 0 && k->fig[sh].blocks_per_sm >= 0 && k->shape[sh][9] < GPUPROF__MAX_DEV) {
            const uint32_t *x = k->shape[sh];
            char t2[32];
            gpuprof__fmt(t2, sizeof t2, "%.0f", 100.0 * k->fig[sh].sm_fill);
            snprintf(out, n, "%s: %llu blocks on %d SMs (%s%% of the SMs given work); %s%% of its kernel time leaves most SMs idle",
                     gpuprof__kc_short(kn, sizeof kn, k), (unsigned long long)x[0] * x[1] * x[2], gpuprof__gpu.lim[x[9]].sms, t2, t1);
            return;
        }
    }
#else
    (void)s; (void)kn;
#endif
    snprintf(out, n, "%s%% of its kernel time in launches that give work to fewer than half the SMs", t1);
}

/* What a GPU phase's main kernel says of its occupancy, where registers or
   shared memory limit it below half and the grid fills the SMs: "; kernel
   runs at ...", else "". Low occupancy alone is no class (many good GEMMs
   run at one block per SM): it is named, with its remedy, only here, and
   not for a tensor-core kernel (a library's tiles are sized on purpose). */
static void gpuprof__why_occupancy(char *out, size_t n, const gpuprof__snap *s, const gpuprof__phase *p) {
    out[0] = 0;
#ifdef GPUPROF_CUDA
    {
        const gpuprof__kernel *k = gpuprof__k_gpu(p->k) ? gpuprof__kc_phase_kernel(s, p->r, 0) : NULL;
        int sh = k ? gpuprof__ktop_best(&k->shapes) : -1;
        const gpuprof__launch *f = sh >= 0 ? &k->fig[sh] : NULL;
        char kn[64], t1[32];
        if (!f || f->blocks_per_sm < 0) return;
        gpuprof__fmt(t1, sizeof t1, "%.0f", 100.0 * f->occupancy);
        if (p->k == GPUPROF__K_LATENCY && !(f->occupancy < 0.5 && (f->limiter == GPUPROF__LIM_REGS || f->limiter == GPUPROF__LIM_SMEM))) {
            /* far below the roofs: its main kernel's occupancy says whether more warps are there to hide latency */
            snprintf(out, n, "; %s runs at %s%% occupancy (limited by %s), %llu blocks on %d SMs", gpuprof__kc_short(kn, sizeof kn, k), t1,
                     gpuprof__lim_name[f->limiter], (unsigned long long)k->shape[sh][0] * k->shape[sh][1] * k->shape[sh][2],
                     k->shape[sh][9] < GPUPROF__MAX_DEV ? gpuprof__gpu.lim[k->shape[sh][9]].sms : 0);
            return;
        }
        if (k->tensor == 1 || f->occupancy >= 0.5 || f->sm_fill < 1 || (f->limiter != GPUPROF__LIM_REGS && f->limiter != GPUPROF__LIM_SMEM))
            return;
        if (f->limiter == GPUPROF__LIM_REGS)
            snprintf(out, n, "; %s runs at %s%% occupancy, limited by its %u registers per thread (__launch_bounds__, -maxrregcount)",
                     gpuprof__kc_short(kn, sizeof kn, k), t1, k->shape[sh][6]);
        else
            snprintf(out, n, "; %s runs at %s%% occupancy, limited by its %u bytes of shared memory per block (smaller tiles, fewer stages)",
                     gpuprof__kc_short(kn, sizeof kn, k), t1, k->shape[sh][7] + k->shape[sh][8]);
    }
#else
    (void)n; (void)s; (void)p;
#endif
}

/* Why a phase has its class, in a few words. */
static void gpuprof__phase_why_class(char *out, size_t n, const gpuprof__snap *s, const gpuprof__phase *p) {
    char t1[32], t2[32];
    const gpuprof__row *r = p->r;
    double calls = (double)r->stats.count, c = r->stats.sum / calls;
    double g = r->gpu.count ? r->gpu.sum / (double)r->gpu.count : 0;
    gpuprof__roof rf;
    if (p->by) {
        int on_cpu = p->k == GPUPROF__K_SYNC || p->k == GPUPROF__K_CPU || (p->k == GPUPROF__K_COMM && !p->by_gpu) || !p->by->gpu.count;
        gpuprof__fmt(t1, sizeof t1, "%.0f", p->t > 0 ? 100.0 * p->by_ns / (on_cpu ? p->cpu : p->gpu) : 0.0);
        if (p->k == GPUPROF__K_MEMORY || p->k == GPUPROF__K_COMPUTE || p->k == GPUPROF__K_LATENCY) {
            gpuprof__roofline(p->by, &rf);
            gpuprof__fmt(t2, sizeof t2, "%.0f", 100.0 * rf.frac);
            snprintf(out, n, "%s%% of its %s time in %s ranges, most in \"%s\" (%s%% of peak %s)", t1, on_cpu ? "CPU" : "GPU", gpuprof__kname[p->k],
                     gpuprof__name_text(p->by->name_id), t2, rf.bound == GPUPROF__K_MEMORY ? "bandwidth" : "FLOP/s");
        } else if (p->k == GPUPROF__K_COMM)
            snprintf(out, n, "%s%% of its %s time in collectives, most in \"%s\": waiting for the other ranks", t1, on_cpu ? "CPU" : "GPU",
                     gpuprof__name_text(p->by->name_id));
        else
            snprintf(out, n, "%s%% of its CPU time in %s ranges, most in \"%s\"", t1, gpuprof__kname[p->k], gpuprof__name_text(p->by->name_id));
        return;
    }
    switch (p->k) {
    case GPUPROF__K_CPU:
        snprintf(out, n, gpuprof__is_host(r->name_id) ? "host work (GPUPROF_HOST_RANGES)" : "no GPU time: host work");
        break;
    case GPUPROF__K_LAUNCH:
        if (r->kernel_calls >= 2 * r->stats.count) {
            /* kernel capture: many kernels, short ones, the GPU idle between them */
            gpuprof__fmt(t2, sizeof t2, "%.0f", c > 0 ? 100.0 * (double)r->kernel_ns / r->stats.sum : 0.0);
            snprintf(out, n, "%.0f kernels per call, %s each on average, busy %s%% of its CPU time: the launches set the pace",
                     (double)r->kernel_calls / calls, gpuprof__fmt_ns(t1, sizeof t1, (double)r->kernel_ns / (double)r->kernel_calls), t2);
        } else snprintf(out, n, "the GPU keeps pace: GPU %s vs CPU %s per call", gpuprof__fmt_ns(t1, sizeof t1, g), gpuprof__fmt_ns(t2, sizeof t2, c));
        break;
    case GPUPROF__K_SYNC: {
        const char *call = gpuprof__kc_sync_call(r->name_id);
        double wait = r->gpu.count ? (double)r->gpu_wait_ns / (double)r->gpu.count : (double)r->sync_ns / calls;
        snprintf(out, n, "waits %s per call%s%s for GPU work queued before it", gpuprof__fmt_ns(t1, sizeof t1, wait), call ? " in " : "", call ? call : "");
        break;
    }
    case GPUPROF__K_COMM:
        snprintf(out, n, "a collective (by its name, or GPUPROF_COMM_RANGES): waiting for the other ranks, then the transfer");
        break;
    case GPUPROF__K_TRANSFER: {
        char t3[32];
        gpuprof__fmt(t1, sizeof t1, "%.0f", 100.0 * (double)r->copy_ns / r->stats.sum);
        gpuprof__fmt_bytes(t2, sizeof t2, (double)r->copy_bytes / calls, 0);
        gpuprof__fmt(t3, sizeof t3, "%.2f", r->copy_ns ? (double)r->copy_bytes / (double)r->copy_ns : 0.0);
        snprintf(out, n, "copies fill %s%% of its CPU time: %s per call at %s GB/s%s", t1, t2, t3,
                 r->copy_pageable ? ", to or from pageable host memory" : "");
        break;
    }
    case GPUPROF__K_GPU:
        if (g >= GPUPROF__GPU_OVER_CPU * c) {
            gpuprof__fmt(t1, sizeof t1, "%.1f", c > 0 ? g / c : 0.0);
            snprintf(out, n, "GPU time %sx the CPU time", t1);
        } else snprintf(out, n, "the GPU ends %s per call after the CPU", gpuprof__fmt_ns(t1, sizeof t1, (double)r->gpu_lag_ns / (double)r->gpu.count));
        break;
    case GPUPROF__K_UNDERFILL:
        gpuprof__why_underfilled(out, n, s, p);
        break;
    case GPUPROF__K_MEMORY:
    case GPUPROF__K_COMPUTE:
    case GPUPROF__K_LATENCY:
        gpuprof__roofline(r, &rf);
        gpuprof__fmt(t1, sizeof t1, "%.0f", 100.0 * rf.frac);
        gpuprof__fmt(t2, sizeof t2, "%.3g", rf.ai);
        snprintf(out, n, "%s%% of peak %s at %s FLOP/B%s", t1, rf.bound == GPUPROF__K_MEMORY ? "bandwidth" : "FLOP/s", t2,
                 p->k == GPUPROF__K_LATENCY ? ": far below both roofs" : "");
        break;
    default: snprintf(out, n, "-");
    }
}

/* ... and what its main kernel's occupancy adds. */
static void gpuprof__phase_why(char *out, size_t n, const gpuprof__snap *s, const gpuprof__phase *p) {
    size_t k;
    gpuprof__phase_why_class(out, n, s, p);
    if ((k = strlen(out)) + 1 < n) gpuprof__why_occupancy(out + k, n - k, s, p);
}

/* "GPU 0: NVIDIA H100 ... (CUDA 13.0, driver 13.0)", or why there is no GPU time. */
static void gpuprof__device_text(char *out, size_t n) {
#ifdef GPUPROF_CUDA
    const char *note = gpuprof__gpu.status[0] ? gpuprof__gpu.status :
                       gpuprof__gpu.from_kernels ? "ranges' GPU time from their kernels (GPUPROF_GPU=kernels)" : "";
    if (gpuprof__gpu.available)
        snprintf(out, n, "GPU %d: %s (CUDA %d.%d, driver %d.%d)%s%s", gpuprof__gpu.dev0, gpuprof__gpu.name,
                 gpuprof__gpu.runtime / 1000, gpuprof__gpu.runtime % 1000 / 10, gpuprof__gpu.driver / 1000, gpuprof__gpu.driver % 1000 / 10,
                 note[0] ? " | " : "", note);
    else snprintf(out, n, "%s", gpuprof__gpu.status[0] ? gpuprof__gpu.status : "no GPU");
#else
    snprintf(out, n, "CPU only (no CUDA in this build)");
#endif
}

/* The line under a table cut at `rows`. */
static void gpuprof__more_rows(gpuprof__buf *b, uint32_t total, uint32_t rows) {
    if (total > rows) gpuprof__buf_printf(b, "... %u more rows (GPUPROF_ROWS=N or report_rows shows more)\n", total - rows);
}

static void gpuprof__cell_bytes(gpuprof__buf *b, double v, int sign) {
    char tmp[32];
    gpuprof__buf_printf(b, " %10s", gpuprof__fmt_bytes(tmp, sizeof tmp, v, sign));
}

/* Why a snapshot has no device figures, for the report and the summary. */
static const char *gpuprof__mem_device_status(void) {
#ifdef GPUPROF_CUDA
    if (gpuprof__gpu.status[0]) return gpuprof__gpu.status;
    return "no snapshot had device figures";
#else
    return "CPU build: compile the implementation with nvcc or -DGPUPROF_CUDA for device figures";
#endif
}

/* The one-line reading: where memory grew most, the peak and what it was,
   the device and the host now. */
static void gpuprof__mem_reading(gpuprof__buf *b, const gpuprof__memstate *m) {
    char t1[32], t2[32], t3[32];
    const char *sep = "";
    gpuprof__buf_s(b, "   memory: ");
    if (m->growth_kind) {
        static const char *const what[] = { "", "tracked", "device used", "host RSS" };
        gpuprof__buf_qname(b, "largest growth: ", m->growth_label);
        gpuprof__buf_printf(b, " %s %s", gpuprof__fmt_bytes(t1, sizeof t1, (double)m->growth, 1), what[m->growth_kind]);
        if (m->growth_cat >= 0) {
            gpuprof__buf_s(b, ", mostly ");
            gpuprof__buf_name(b, gpuprof__name_text(m->cat[m->growth_cat].name_id));
            gpuprof__buf_printf(b, " (%s)", gpuprof__fmt_bytes(t2, sizeof t2, (double)m->growth_cat_bytes, 1));
        }
        gpuprof__buf_printf(b, ", step %llu", (unsigned long long)m->growth_step);
        sep = " | ";
    }
    if (m->peak) {
        uint32_t i, top = 0;
        for (i = 1; i < m->ncat; i++) if (m->cat[i].at_peak > m->cat[top].at_peak) top = i;
        gpuprof__buf_printf(b, "%speak %s tracked", sep, gpuprof__fmt_bytes(t1, sizeof t1, (double)m->peak, 0));
        gpuprof__buf_printf(b, " at step %llu", (unsigned long long)m->peak_step);
        if (m->peak_label && !m->peak_pending) gpuprof__buf_qname(b, " before snapshot ", m->peak_label);
        else if (m->snapshots) gpuprof__buf_s(b, " after the last snapshot");
        gpuprof__buf_s(b, ", ");
        gpuprof__buf_name(b, gpuprof__name_text(m->cat[top].name_id));
        gpuprof__buf_printf(b, " %.0f%%", 100.0 * (double)m->cat[top].at_peak / (double)m->peak);
        sep = " | ";
    }
    if (m->snapshots && m->prev.dev_ok) {
        gpuprof__buf_printf(b, "%sdevice %d: %s used of %s", sep, m->prev.dev, gpuprof__fmt_bytes(t1, sizeof t1, (double)m->prev.dev_used, 0),
                            gpuprof__fmt_bytes(t2, sizeof t2, (double)m->prev.dev_total, 0));
        sep = " | ";
    } else if (m->snapshots) {
        gpuprof__buf_printf(b, "%sdevice: unavailable", sep);
        sep = " | ";
    }
    if (m->snapshots && m->prev.host_ok) {
        gpuprof__buf_printf(b, "%shost RSS %s, peak %s", sep, gpuprof__fmt_bytes(t1, sizeof t1, (double)m->prev.rss, 0),
                            gpuprof__fmt_bytes(t3, sizeof t3, (double)m->prev.rss_peak, 0));
    }
    gpuprof__buf_s(b, "\n");
}

/* The memory tables: phases (GPUPROF_MEM labels) and tracked categories. */
static void gpuprof__report_mem(gpuprof__buf *b, const gpuprof__memstate *m, size_t width) {
    uint32_t i;
    int tracked = m->allocs > 0, dev = m->any_dev, pool = m->any_pool, host = m->any_host;
    char t1[32];
    if (!m->snapshots && !m->allocs) return;
    if (m->snapshots) {
        for (i = 0; i < m->nphase; i++) { size_t w = gpuprof__width(gpuprof__name_text(m->phase[i].name_id)); if (w > width) width = w; }
        if (width > 40) width = 40;
        gpuprof__buf_printf(b, "\nMemory by phase (GPUPROF_MEM: %llu snapshot%s; each label at its last snapshot, %s since the snapshot before it",
                            (unsigned long long)m->snapshots, m->snapshots == 1 ? "" : "s", "\xce\x94");
        if (tracked) gpuprof__buf_s(b, ";\nPeak: most tracked bytes live since the snapshot before; Growth: the largest \xce\x94 Tracked at this label");
        gpuprof__buf_s(b, ")\n");
        gpuprof__name_cell(b, "Label", width, 0);
        gpuprof__buf_s(b, "     Count");
        if (tracked) gpuprof__buf_s(b, "    Tracked          \xce\x94       Peak     Growth");
        if (dev) gpuprof__buf_s(b, "   Dev used          \xce\x94");
        if (pool) gpuprof__buf_s(b, "  Pool used  Pool rsvd");
        if (host) gpuprof__buf_s(b, "   Host RSS          \xce\x94");
        gpuprof__buf_s(b, "\n");
        for (i = 0; i < m->nphase; i++) {
            const gpuprof__memphase *p = &m->phase[i];
            gpuprof__name_cell(b, gpuprof__name_text(p->name_id), width, 0);
            gpuprof__buf_printf(b, " %9llu", (unsigned long long)p->count);
            if (tracked) {
                gpuprof__cell_bytes(b, (double)p->last.tracked, 0);
                gpuprof__cell_bytes(b, p->has_delta ? (double)p->d_tracked : GPUPROF__NAN, 1);
                gpuprof__cell_bytes(b, (double)p->peak, 0);
                gpuprof__cell_bytes(b, p->growth != INT64_MIN ? (double)p->growth : GPUPROF__NAN, 1);
            }
            if (dev) {
                gpuprof__cell_bytes(b, p->last.dev_ok ? (double)p->last.dev_used : GPUPROF__NAN, 0);
                gpuprof__cell_bytes(b, p->has_delta && p->last.dev_ok ? (double)p->d_dev : GPUPROF__NAN, 1);
            }
            if (pool) {
                gpuprof__cell_bytes(b, p->last.pool_ok ? (double)p->last.pool_used : GPUPROF__NAN, 0);
                gpuprof__cell_bytes(b, p->last.pool_ok ? (double)p->last.pool_rsvd : GPUPROF__NAN, 0);
            }
            if (host) {
                gpuprof__cell_bytes(b, p->last.host_ok ? (double)p->last.rss : GPUPROF__NAN, 0);
                gpuprof__cell_bytes(b, p->has_delta && p->last.host_ok ? (double)p->d_rss : GPUPROF__NAN, 1);
            }
            gpuprof__buf_s(b, "\n");
        }
        if (!dev) gpuprof__buf_printf(b, "Device memory: unavailable (%s)\n", gpuprof__mem_device_status());
        else if (pool) {
            gpuprof__buf_printf(b, "Default pool (cudaMallocAsync) high-water marks: used %s, ", gpuprof__fmt_bytes(t1, sizeof t1, (double)m->prev.pool_used_high, 0));
            gpuprof__buf_printf(b, "reserved %s\n", gpuprof__fmt_bytes(t1, sizeof t1, (double)m->prev.pool_rsvd_high, 0));
        }
    }
    if (tracked) {
        size_t cw = width;
        for (i = 0; i < m->ncat; i++) { size_t w = gpuprof__width(gpuprof__name_text(m->cat[i].name_id)); if (w > cw) cw = w; }
        if (cw > 40) cw = 40;
        gpuprof__buf_printf(b, "\nTracked allocations by category (overall peak %s at step %llu",
                            gpuprof__fmt_bytes(t1, sizeof t1, (double)m->peak, 0), (unsigned long long)m->peak_step);
        if (m->peak_label && !m->peak_pending) gpuprof__buf_qname(b, ", before snapshot ", m->peak_label);
        gpuprof__buf_s(b, "; At peak: what each category held then)\n");
        gpuprof__name_cell(b, "Category", cw, 0);
        gpuprof__buf_s(b, "       Live       Peak    At peak   Share     Allocs      Frees\n");
        for (i = 0; i < m->ncat; i++) {
            const gpuprof__memcat *c = &m->cat[i];
            gpuprof__name_cell(b, gpuprof__name_text(c->name_id), cw, 0);
            gpuprof__cell_bytes(b, (double)c->live, 0);
            gpuprof__cell_bytes(b, (double)c->peak, 0);
            gpuprof__cell_bytes(b, (double)c->at_peak, 0);
            gpuprof__fmt(t1, sizeof t1, "%.1f", m->peak ? 100.0 * (double)c->at_peak / (double)m->peak : 0.0);
            gpuprof__buf_printf(b, " %6s%%", t1);
            gpuprof__buf_printf(b, " %10llu %10llu\n", (unsigned long long)c->allocs, (unsigned long long)c->frees);
        }
        if (m->unknown_frees || m->untracked)
            gpuprof__buf_printf(b, "%llu free%s of untracked pointers ignored; %llu allocation%s not tracked (out of memory)\n",
                                (unsigned long long)m->unknown_frees, m->unknown_frees == 1 ? "" : "s",
                                (unsigned long long)m->untracked, m->untracked == 1 ? "" : "s");
    }
}

/* mem_ranges: two more columns in the flat table, the mean change per call. */
static void gpuprof__mem_range_head(gpuprof__buf *b, int pad) {
    if (GPUPROF__LD(&gpuprof__g.mem_ranges)) gpuprof__buf_printf(b, "%*s  Tracked \xce\x94/call  Device \xce\x94/call", pad, "");
    gpuprof__buf_s(b, "\n");
}
static void gpuprof__mem_range_cells(gpuprof__buf *b, const gpuprof__row *r) {
    if (GPUPROF__LD(&gpuprof__g.mem_ranges)) {
        gpuprof__buf_s(b, "     ");
        gpuprof__cell_bytes(b, r->mem_calls ? (double)r->mem_delta / (double)r->mem_calls : GPUPROF__NAN, 1);
        gpuprof__buf_s(b, "    ");
        gpuprof__cell_bytes(b, r->dev_calls ? (double)r->dev_delta / (double)r->dev_calls : GPUPROF__NAN, 1);
    }
    gpuprof__buf_s(b, "\n");
}

/* "66.9 TFLOP/s", "3.35 TB/s", "2.15 GFLOP": three significant digits, decimal prefixes. */
static const char *gpuprof__fmt_si(char *buf, size_t n, double v, const char *unit) {
    static const char *const pre[] = { "", "k", "M", "G", "T", "P", "E" };
    int u = 0;
    if (gpuprof__isnan(v)) { snprintf(buf, n, "-"); return buf; }
    while (u < 6 && (v >= 999.5 || v <= -999.5)) { v /= 1000.0; u++; }
    gpuprof__fmt(buf, n, "%.3g %s%s", v, pre[u], unit);
    return buf;
}

static void gpuprof__cell_si(gpuprof__buf *b, double v, const char *unit, int w) {
    char tmp[40];
    gpuprof__buf_printf(b, " %*s", w, gpuprof__fmt_si(tmp, sizeof tmp, v, unit));
}

/* Ranges with declared work: achieved rates against the peaks. */
static void gpuprof__report_roofline(gpuprof__buf *b, const gpuprof__snap *s, size_t width, uint32_t rows) {
    char t1[40], t2[40], t3[40];
    uint32_t i, shown = 0, total = 0;
    gpuprof__roof rf;
    for (i = 0; i < s->nflat; i++) if (s->flatp[i]->flops != 0 || s->flatp[i]->bytes != 0) total++;
    if (!total) return;
    gpuprof__buf_s(b, "\nRoofline (GPUPROF_RANGE_WORK, per call; rates from the GPU time where the range has one, else the CPU time;\n"
                      "memory-bound below the ridge point, compute-bound above; Of peak: of the bounding peak)\n");
    gpuprof__buf_printf(b, "   peaks: memory %s (%s), %s %s (%s)", gpuprof__g.peak.bw > 0 ? gpuprof__fmt_si(t1, sizeof t1, gpuprof__g.peak.bw, "B/s") : "unknown",
                        gpuprof__g.peak.bw_from, gpuprof__prec_name[gpuprof__g.peak.prec],
                        gpuprof__g.peak.flops > 0 ? gpuprof__fmt_si(t2, sizeof t2, gpuprof__g.peak.flops, "FLOP/s") : "unknown", gpuprof__g.peak.flops_from);
    if (gpuprof__g.peak.bw > 0 && gpuprof__g.peak.flops > 0) gpuprof__buf_printf(b, "; ridge %s FLOP/B", gpuprof__fmt_val(t3, sizeof t3, gpuprof__g.peak.flops / gpuprof__g.peak.bw));
    gpuprof__buf_s(b, "\n");
    gpuprof__name_cell(b, "Name", width, 0);
    gpuprof__buf_s(b, "     Calls  Time/call    FLOP/call   Bytes/call        FLOP/s       Bytes/s     FLOP/B  Bound          Of peak\n");
    for (i = 0; i < s->nflat && shown < rows; i++) {
        const gpuprof__row *r = s->flatp[i];
        if (!gpuprof__roofline(r, &rf)) continue;
        shown++;
        gpuprof__name_cell(b, gpuprof__name_text(r->name_id), width, 0);
        gpuprof__buf_printf(b, " %9llu", (unsigned long long)r->stats.count);
        gpuprof__buf_printf(b, " %8s %s", gpuprof__fmt_ns(t1, sizeof t1, rf.time_ns), rf.on_gpu ? "G" : "C");
        gpuprof__cell_si(b, rf.flops, "FLOP", 12);
        gpuprof__cell_si(b, rf.bytes, "B", 12);
        gpuprof__cell_si(b, rf.fps, "FLOP/s", 13);
        gpuprof__cell_si(b, rf.bps, "B/s", 13);
        if (rf.ai == rf.ai) gpuprof__fmt(t1, sizeof t1, "%.3g", rf.ai);
        else snprintf(t1, sizeof t1, "-");
        gpuprof__buf_printf(b, " %10s", t1);
        gpuprof__buf_printf(b, "  %-13s", rf.bound ? gpuprof__kname[rf.bound] : "-");
        if (rf.bound) { gpuprof__fmt(t1, sizeof t1, "%.1f%%", 100.0 * rf.frac); gpuprof__buf_printf(b, " %8s\n", t1); }
        else gpuprof__buf_s(b, "        -\n");
    }
    gpuprof__more_rows(b, total, rows);
    gpuprof__buf_s(b, "   (Time/call: G = GPU time, C = CPU time)\n");
}

/* A phase's remedy: its class's, except that a compute-bound phase whose
   kernel time is mostly on the tensor cores is not told to use them. */
static const char *gpuprof__phase_remedy(const gpuprof__phase *p) {
    if (p->k == GPUPROF__K_COMPUTE && p->kern_ns > 0 && p->tc_ns >= GPUPROF__TC_SHARE * p->kern_ns) return GPUPROF__TC_REMEDY;
    /* latency-bound without kernel capture: its grids may not fill the SMs, which capture would tell */
    if (p->k == GPUPROF__K_LATENCY && p->kern_ns <= 0) return GPUPROF__LATENCY_REMEDY;
    return gpuprof__remedy[p->k];
}

/* The time by which a phase bounds the step: GPU time when the GPU bounds it, else CPU time. */
static double gpuprof__bound_ns(const gpuprof__verdict_t *v, const gpuprof__phase *p) { return v->gpu_step ? p->gpu : p->cpu; }

#define GPUPROF__OUTSIDE_REMEDY "wrap the code between the phases in ranges (GPUPROF_RANGE) to see what takes the time " \
    "(while it runs, a GPU has only the work queued before it)"
#define GPUPROF__HOST_WORK "declare its work with GPUPROF_RANGE_WORK and the machine's peaks (GPUPROF_PEAK_GBPS, GPUPROF_PEAK_TFLOPS) for a roofline"
/* host code of a run without a GPU: sampling off, the try: line says how to have its functions named (GPUPROF__HOST_NAMES); on, it names them */
#define GPUPROF__HOST_REMEDY GPUPROF__HOST_NAMES "or " GPUPROF__HOST_WORK
#define GPUPROF__HOST_SAMPLED "no GPU in this run: speed up the functions its CPU samples name (CPU samples per range), or " GPUPROF__HOST_WORK
/* The bottleneck: its name, class, time per step and remedy (the CPU's time outside any range is one too). */
static void gpuprof__bottleneck(const gpuprof__verdict_t *v, const char **name, int *k, double *ns, const char **remedy) {
    if (v->bottleneck == -2) {
        *name = NULL;
        *k = GPUPROF__K_CPU;
        *ns = v->outside_ns;
        *remedy = GPUPROF__OUTSIDE_REMEDY;
        return;
    }
    *name = gpuprof__name_text(v->ph[v->bottleneck].r->name_id);
    *k = v->ph[v->bottleneck].k;
    *ns = gpuprof__bound_ns(v, &v->ph[v->bottleneck]);
    /* host code of a run without a GPU: no batch to prepare, no copy to overlap */
    *remedy = *k == GPUPROF__K_CPU && !(v->snap && v->snap->has_gpu) ? (GPUPROF__SMP_ASKED() ? GPUPROF__HOST_SAMPLED : GPUPROF__HOST_REMEDY)
                                                                      : gpuprof__phase_remedy(&v->ph[v->bottleneck]);
}

/* The lead, then the bottleneck's name in quotes or, with the other lead,
   "code outside any range". */
static void gpuprof__bottleneck_name(gpuprof__buf *b, const char *lead, const char *lead_outside, const char *name) {
    if (!name) { gpuprof__buf_s(b, lead_outside); gpuprof__buf_s(b, "code outside any range"); return; }
    gpuprof__buf_s(b, lead);
    gpuprof__buf_s(b, "\"");
    gpuprof__buf_name(b, name);
    gpuprof__buf_s(b, "\"");
}

/* The short form for the header: where the time goes and what bounds it. */
static void gpuprof__verdict_head(gpuprof__buf *b, const gpuprof__verdict_t *v) {
    char t1[32];
    const char *name, *remedy;
    int k;
    double ns;
    if (v->bottleneck == -1) return;
    gpuprof__bottleneck(v, &name, &k, &ns, &remedy);
    gpuprof__fmt(t1, sizeof t1, "%.0f", v->step_ns > 0 ? 100.0 * ns / v->step_ns : 0.0);
    gpuprof__bottleneck_name(b, "   verdict: bottleneck ", "   verdict: bottleneck: ", name);
    gpuprof__buf_printf(b, ", %s%% of the %s on the %s, %s", t1, v->per_step ? "step" : "time in outermost ranges", v->gpu_step ? "GPU" : "CPU",
                        gpuprof__kname[k]);
    if (v->waits_for >= 0) {
        gpuprof__buf_qname(b, ", waiting for ", v->ph[v->waits_for].r->name_id);
        gpuprof__buf_printf(b, " (%s)", gpuprof__kname[v->ph[v->waits_for].k]);
    }
    gpuprof__buf_s(b, " (the verdict at the end says why and what to try)\n");
}


/* The two timelines of the step, by class, and which one bounds it. */
static void gpuprof__verdict_step(gpuprof__buf *b, const gpuprof__verdict_t *v, int gpu_run) {
    char t1[32];
    int k, first = 1;
    double d = v->step_ns > 0 ? 100.0 / v->step_ns : 0.0;
    gpuprof__buf_printf(b, "   %s: ", v->per_step ? "step" : "run");
    if (gpu_run) {
        gpuprof__fmt(t1, sizeof t1, "%.0f%%", d * v->gpu_sum);
        gpuprof__buf_printf(b, "GPU busy in GPU-bound phases %s", t1);
        for (k = 1; k < GPUPROF__K_COUNT; k++) {
            if (!(v->gpu_by[k] > 0) || !gpuprof__k_gpu(k)) continue;
            gpuprof__fmt(t1, sizeof t1, "%.0f%%", d * v->gpu_by[k]);
            gpuprof__buf_printf(b, "%s%s %s", first ? " (" : ", ", gpuprof__kname[k], t1);
            first = 0;
        }
        gpuprof__buf_s(b, first ? "; " : "); ");
        first = 1;
    }
    gpuprof__buf_s(b, "CPU in phases: ");
    for (k = 1; k < GPUPROF__K_COUNT; k++) {
        if (!(v->cpu_by[k] > 0)) continue;
        gpuprof__fmt(t1, sizeof t1, "%.0f%%", d * v->cpu_by[k]);
        gpuprof__buf_printf(b, "%s%s %s", first ? "" : ", ", gpuprof__kname[k], t1);
        first = 0;
    }
    if (v->per_step && v->step_ns > v->cpu_sum) {
        gpuprof__fmt(t1, sizeof t1, "%.0f%%", d * (v->step_ns - v->cpu_sum));
        gpuprof__buf_printf(b, ", outside any range %s", t1);
    }
    if (v->gpu_step) gpuprof__buf_printf(b, "\n   -> the GPU bounds the %s (busy in GPU-bound phases >= 90%% of it): %s\n", v->per_step ? "step" : "run", gpuprof__kname[v->step_k]);
    else if (gpu_run) {
        gpuprof__fmt(t1, sizeof t1, "%.0f%%", d * v->gpu_sum);
        gpuprof__buf_printf(b, "\n   -> the CPU bounds the %s (the GPU is busy in GPU-bound phases %s of it): %s\n", v->per_step ? "step" : "run", t1, gpuprof__kname[v->step_k]);
    } else gpuprof__buf_printf(b, "\n   -> no GPU in this run: %s\n", gpuprof__kname[v->step_k]);
}

/* The stepping thread off the CPU: how much of it was waiting (it blocked:
   I/O, sleep, a lock, a blocking sync) and how much preemption (runnable,
   while another thread or process had its CPU), from its own counters. */
static void gpuprof__report_offcpu(gpuprof__buf *b, const gpuprof__verdict_t *v) {
    char t1[32], t2[32], t3[32], s1[32], s2[32];
    double waited = v->preempted >= 0 ? v->blocked - v->preempted : v->blocked;
    gpuprof__fmt(t1, sizeof t1, "%.0f", 100.0 * v->blocked);
    gpuprof__fmt(s1, sizeof s1, "%.0f", v->vol);
    gpuprof__fmt(s2, sizeof s2, "%.0f", v->invol);
    if (v->preempted < 0) {
        gpuprof__buf_printf(b, "   the stepping thread was off the CPU %s%% of its steps (%s voluntary, %s involuntary context switches a step): %s\n", t1, s1, s2,
                            v->invol > v->vol ? "mostly preempted -- another process had its CPU (a loaded machine: the step times include it)"
                                              : "it waited (I/O, sleep, a lock or a blocking sync) -- that wait is part of the step's time");
        return;
    }
    gpuprof__fmt(t2, sizeof t2, "%.0f", 100.0 * waited);
    gpuprof__fmt(t3, sizeof t3, "%.0f", 100.0 * v->preempted);
    gpuprof__buf_printf(b, "   the stepping thread was off the CPU %s%% of its steps: waiting %s%% (I/O, sleep, a lock or a blocking sync; %s voluntary switch%s a step), "
                           "preempted %s%% (runnable while another thread or process had its CPU; %s involuntary switch%s a step) -- %s\n", t1, t2, s1,
                        strcmp(s1, "1") ? "es" : "", t3, s2, strcmp(s2, "1") ? "es" : "",
                        v->preempted > waited ? "the machine is loaded: the step times include the time others took its CPU (free or pin the CPUs)"
                                              : "that wait is part of the step's time");
}

/* The outermost ranges of threads other than the stepping one: what they do
   per step, apart from the step's own timeline (they run beside it). */
static void gpuprof__report_other_threads(gpuprof__buf *b, const gpuprof__verdict_t *v, size_t width) {
    char t1[32];
    int i;
    gpuprof__buf_printf(b, "Other threads (beside the step, not part of it; Busy: their time per %s as a share of it, several threads add up)\n",
                        v->per_step ? "step" : "run");
    gpuprof__name_cell(b, "Range", width, 0);
    gpuprof__buf_printf(b, "%9s %10s      Calls\n", "Busy", v->per_step ? "Host/step" : "Host total");
    for (i = 0; i < v->nother; i++) {
        const gpuprof__row *r = v->other[i];
        double per = r->stats.sum / v->steps;
        gpuprof__name_cell(b, gpuprof__name_text(r->name_id), width, 0);
        gpuprof__fmt(t1, sizeof t1, "%.1f%%", v->step_ns > 0 ? 100.0 * per / v->step_ns : 0.0);
        gpuprof__buf_printf(b, " %8s", t1);
        gpuprof__cell_ns(b, per);
        gpuprof__buf_printf(b, " %10llu\n", (unsigned long long)r->stats.count);
    }
    if (v->blocked >= 0) {
        double waited = v->preempted >= 0 ? v->blocked - v->preempted : v->blocked;
        gpuprof__fmt(t1, sizeof t1, "%.0f", 100.0 * v->blocked);
        if (v->blocked >= GPUPROF__BLOCKED_WAITS && v->preempted > waited) gpuprof__report_offcpu(b, v);
        else gpuprof__buf_printf(b, "   the stepping thread was off the CPU %s%% of its steps: %s\n", t1,
                                 v->blocked >= GPUPROF__BLOCKED_WAITS ? "it waited (for these threads, I/O or a blocking sync) -- what it waits for bounds the step"
                                                                      : "it did not wait for these threads much; they run beside the step");
    }
}

/* The outlier steps, on a line of their own: which, how long, where their extra time went. */
static void gpuprof__report_outliers(gpuprof__buf *b, const gpuprof__verdict_t *v) {
    char t1[32], t2[32];
    uint32_t i;
    gpuprof__buf_printf(b, "   outlier steps: %u (step%s ", v->nout, v->nout == 1 ? "" : "s");
    for (i = 0; i < v->nout && i < 8; i++) gpuprof__buf_printf(b, "%s%llu", i ? ", " : "", (unsigned long long)v->out_steps[i]);
    gpuprof__fmt(t1, sizeof t1, "%.1f", v->out_x);
    gpuprof__buf_printf(b, "%s): %sx the median step (%s) on average", v->nout > 8 ? ", ..." : "", t1, gpuprof__fmt_ns(t2, sizeof t2, v->out_median));
    for (i = 0; i < 2 && v->extra[i]; i++) {
        gpuprof__buf_qname(b, i ? " and " : "; the extra time is in ", v->extra[i]->name_id);
        gpuprof__buf_printf(b, " (%s per outlier step that ran it)", gpuprof__fmt_ns(t1, sizeof t1, v->extra_ns[i]));
    }
    gpuprof__buf_s(b, "\n");
}

/* Each kind of step set apart, on a line of its own: the ranges it runs
   that the typical step does not, which steps, how long, and where the
   extra time goes (per step of that kind: every one of them ran it). */
static void gpuprof__report_kinds(gpuprof__buf *b, const gpuprof__verdict_t *v) {
    char t1[32], t2[32];
    int k, i;
    for (k = 0; k < (int)v->snap->nkinds; k++) {
        const gpuprof__kind *kd = &v->snap->kinds[k];
        double mean = kd->dur / (double)kd->steps;
        int nw = v->kv[k].nwith;
        if (!v->apart[k]) continue;
        gpuprof__buf_s(b, "   steps with ");
        for (i = 0; i < nw; i++) gpuprof__buf_qname(b, i == 0 ? "" : i + 1 == nw ? " and " : ", ", v->kv[k].with[i]->name_id);
        gpuprof__buf_printf(b, ": %llu (step%s ", (unsigned long long)kd->steps, kd->steps == 1 ? "" : "s");
        for (i = 0; i < (int)kd->steps && i < 8; i++) gpuprof__buf_printf(b, "%s%llu", i ? ", " : "", (unsigned long long)kd->first[i]);
        gpuprof__fmt(t2, sizeof t2, "%.1f", v->step_ns > 0 ? mean / v->step_ns : 0.0);
        gpuprof__buf_printf(b, "%s), %s each, %sx the typical step", kd->steps > 8 ? ", ..." : "", gpuprof__fmt_ns(t1, sizeof t1, mean), t2);
        for (i = 0; i < 3 && v->kv[k].extra[i]; i++) {
            gpuprof__buf_printf(b, "%s+%s in ", i ? ", " : ": ", gpuprof__fmt_ns(t1, sizeof t1, v->kv[k].extra_ns[i]));
            gpuprof__buf_qname(b, "", v->kv[k].extra[i]->name_id);
        }
        gpuprof__buf_s(b, "\n");
    }
}

/* Time outside the steps, once: before the first GPUPROF_STEP, after the last. */
static void gpuprof__report_outside(gpuprof__buf *b, const gpuprof__verdict_t *v, size_t width) {
    int i;
    gpuprof__table_head(b, "Outside the steps (once, not per step; the steps are the windows between GPUPROF_STEP calls)\n", "Range", width,
                        "  Before 1st  After last\n");
    for (i = 0; i < v->noutside; i++) {
        const gpuprof__row *r = v->outside[i];
        gpuprof__name_cell(b, gpuprof__name_text(r->name_id), width, 0);
        gpuprof__buf_s(b, " ");
        gpuprof__cell_ns(b, r->before_ns);
        gpuprof__buf_s(b, " ");
        gpuprof__cell_ns(b, r->after_ns);
        gpuprof__buf_s(b, "\n");
    }
}

static void gpuprof__report_verdict(gpuprof__buf *b, const gpuprof__verdict_t *v, size_t width, int gpu_run, const gpuprof__smp_report *smp) {
    char t1[32], t2[32], why[512];
    int i, k;
    double ns;
    const char *name, *remedy;
    const gpuprof__phase *p;
    if (!v->nph) return;
    if (v->per_step && v->container) {
        gpuprof__buf_printf(b, "\nVerdict (per %s step, mean %s; ", v->nout || v->napart ? "typical" : "counted", gpuprof__fmt_ns(t1, sizeof t1, v->step_ns));
        gpuprof__buf_qname(b, "phases are the ranges inside ", v->container->name_id);
        gpuprof__buf_s(b, ", which wraps the step; rules: docs/guide.md \"Verdict\")\n");
    } else if (v->per_step)
        gpuprof__buf_printf(b, "\nVerdict (per %s step, mean %s; phases are the outermost ranges%s; rules: docs/guide.md \"Verdict\")\n",
                            v->nout || v->napart ? "typical" : "counted", gpuprof__fmt_ns(t1, sizeof t1, v->step_ns), v->nother ? " of the thread calling GPUPROF_STEP" : "");
    else gpuprof__buf_s(b, "\nVerdict (no GPUPROF_STEP: over the whole run, shares of the time in outermost ranges; rules: docs/guide.md \"Verdict\")\n");
    gpuprof__name_cell(b, "Phase", width, 0);
    gpuprof__buf_printf(b, "%9s %10s %10s  Class           Why\n", "Share", v->per_step ? "Host/step" : "Host total", v->per_step ? "GPU/step" : "GPU total");
    for (i = 0; i < v->nph; i++) {
        p = &v->ph[i];
        gpuprof__name_cell(b, gpuprof__name_text(p->r->name_id), width, 0);
        gpuprof__fmt(t1, sizeof t1, "%.1f%%", v->step_ns > 0 ? 100.0 * p->t / v->step_ns : 0.0);
        gpuprof__buf_printf(b, " %8s", t1);
        gpuprof__cell_ns(b, p->cpu);
        gpuprof__cell_ns(b, p->r->gpu.count ? p->gpu : GPUPROF__NAN);
        if (!gpu_run && p->k == GPUPROF__K_CPU) snprintf(why, sizeof why, "no GPU in this run: host code");
        else gpuprof__phase_why(why, sizeof why, v->snap, p);
        gpuprof__buf_printf(b, "  %-14s  %s\n", gpuprof__kname[p->k], why);
    }
    if (v->more) gpuprof__buf_printf(b, "... %d smaller phases\n", v->more);
    if (v->nother) gpuprof__report_other_threads(b, v, width);
    if (v->noutside) gpuprof__report_outside(b, v, width);
    if (!v->nother && v->blocked >= GPUPROF__BLOCKED_WAITS) gpuprof__report_offcpu(b, v);   /* with other threads, their table says it */
    if (v->napart) gpuprof__report_kinds(b, v);
    if (v->nout) gpuprof__report_outliers(b, v);
    if (v->napart || v->nout) gpuprof__buf_printf(b, "   the figures above are of the other %.0f steps, the typical ones\n", v->steps);
    gpuprof__verdict_step(b, v, gpu_run);
    if (v->bottleneck == -1) return;
    gpuprof__bottleneck(v, &name, &k, &ns, &remedy);
    gpuprof__fmt(t1, sizeof t1, "%.0f", v->step_ns > 0 ? 100.0 * ns / v->step_ns : 0.0);
    gpuprof__bottleneck_name(b, "   bottleneck: ", "   bottleneck: ", name);
    gpuprof__buf_printf(b, ", %s %s per %s = %s%% of the %s, %s", v->gpu_step ? "GPU" : "host", gpuprof__fmt_ns(t2, sizeof t2, ns),
                        v->per_step ? "step" : "run", t1, v->per_step ? "step" : "time in outermost ranges", gpuprof__kname[k]);
    if (v->waits_for >= 0) {
        const gpuprof__phase *w = &v->ph[v->waits_for];
        gpuprof__buf_qname(b, ": it waits for the GPU, whose largest phase is ", w->r->name_id);
        gpuprof__buf_printf(b, " (%s, GPU %s per %s)", gpuprof__kname[w->k], gpuprof__fmt_ns(t2, sizeof t2, w->gpu), v->per_step ? "step" : "run");
    }
    if (k == GPUPROF__K_CPU && name) {        /* its functions named: no profiler left to reach for */
        const gpuprof__row *pr = v->ph[v->bottleneck].r;
        /* a phase that declares its work already lacks only the peaks */
        const char *more = pr->flops != 0 || pr->bytes != 0 ? "or give the machine's peaks (GPUPROF_PEAK_GBPS, GPUPROF_PEAK_TFLOPS) for a roofline of its declared work"
                                                             : "or " GPUPROF__HOST_WORK;
        gpuprof__verdict_samples(b, smp, name, remedy, !(v->snap && v->snap->has_gpu) ? more : NULL);
    }
    else gpuprof__buf_printf(b, "\n   try: %s\n", remedy);
    if (v->waits_for >= 0) {
        gpuprof__buf_qname(b, "   then, for ", v->ph[v->waits_for].r->name_id);
        gpuprof__buf_printf(b, ": %s\n", gpuprof__phase_remedy(&v->ph[v->waits_for]));
    }
}

/* The name of the trace's k-th part, after before (a name is built on the
   heap: the report may be asked for on a thread of 16 KiB). */
static void gpuprof__buf_part(gpuprof__buf *b, const char *before, unsigned k) {
    char *name = (char *)gpuprof__alloc(GPUPROF__PATH_MAX + 104);
    gpuprof__buf_s(b, before);
    if (!name) { b->failed = 1; return; }
    gpuprof__part_name(name, GPUPROF__PATH_MAX + 104, k);
    gpuprof__buf_s(b, name);
    GPUPROF_FREE(name);
}

/* The parts of the streamed trace on disk (GPUPROF_TRACE_MAX_MB): first and
   last of those kept, and how many were written and removed. */
static void gpuprof__report_parts(gpuprof__buf *b) {
    unsigned n = GPUPROF__LD(&gpuprof__trace.nparts), first = gpuprof__part_first(n);
    if (n <= 1) return;
    gpuprof__buf_printf(b, "   trace parts: %u of at most %d MiB;", n, gpuprof__g.cfg.trace_max_mb);
    gpuprof__buf_part(b, " on disk: ", first);
    if (n > first) gpuprof__buf_part(b, n > first + 1 ? " ... " : ", ", n);
    if (first > 1) gpuprof__buf_printf(b, " (the newest %u, GPUPROF_TRACE_KEEP; %u older removed)", n - first + 1, first - 1);
    gpuprof__buf_s(b, "\n");
}

/* What became of the trace: written, still streaming, dropped, or failed;
   or what the flight recorder holds. */
static void gpuprof__report_trace_line(gpuprof__buf *b, const gpuprof__snap *s) {
    unsigned long long written = s->trace_written;
    int failed = GPUPROF__LDA(&gpuprof__trace.out.failed);
    unsigned n = GPUPROF__LD(&gpuprof__trace.nparts);
    if (gpuprof__trace.mode == GPUPROF__TRACE_RING) {
        unsigned long long out = GPUPROF__LD(&gpuprof__trace.ring_fell_out);
        gpuprof__buf_printf(b, "   trace: none streamed; the flight recorder keeps the latest events (%d MiB", gpuprof__g.cfg.trace_ring_mb);
        if (out) gpuprof__buf_printf(b, ", %llu older ones fell out", out);
        gpuprof__buf_s(b, ") for gpuprof_write_trace(path)\n");
        return;
    }
    if (n > 1) {                     /* in parts: those on disk, the first kept to the last (GPUPROF_TRACE_KEEP removes older ones) */
        gpuprof__buf_part(b, "   trace: ", gpuprof__part_first(n));
        gpuprof__buf_part(b, " ... ", n);
    } else {
        gpuprof__buf_s(b, "   trace: ");
        gpuprof__buf_s(b, gpuprof__g.trace_path);
    }
    if (gpuprof__trace.finished) gpuprof__buf_printf(b, " (%llu events written", written);
    else gpuprof__buf_printf(b, " (streaming: %llu events written so far, %llu more recorded in buffers", written, (unsigned long long)s->trace_buffered);
    if (s->dropped_full)
        gpuprof__buf_printf(b, "; %llu dropped, recorded faster than written: raise trace_buffer_mb, now %d",
                            (unsigned long long)s->dropped_full, gpuprof__g.cfg.trace_buffer_mb);
    if (failed)
        gpuprof__buf_printf(b, "; writing failed (%s), %llu events lost: check the path and free space",
                            gpuprof__trace.out.error, (unsigned long long)(s->dropped - s->dropped_full));
    else if (!s->dropped_full) gpuprof__buf_s(b, ", none dropped");
    gpuprof__buf_s(b, ")\n");
    gpuprof__report_parts(b);
}

/* The text report, step by step: the header (run, steps, trace, GPU, the
   verdict's short form, memory), the range tables (flat and tree, by GPU
   time when there is any, else by CPU time), roofline, counters, memory,
   the verdict, the warnings. */
typedef struct gpuprof__layout { size_t width; uint32_t rows; } gpuprof__layout;

static gpuprof__layout gpuprof__report_layout(const gpuprof__snap *s) {
    gpuprof__layout L;
    uint32_t i;
    L.width = 4;
    L.rows = gpuprof__g.cfg.report_rows < 0 ? 0xffffffffu : (uint32_t)gpuprof__g.cfg.report_rows;
    for (i = 0; i < s->nflat; i++) { size_t w = gpuprof__width(gpuprof__name_text(s->flatp[i]->name_id)); if (w > L.width) L.width = w; }
    for (i = 0; i < s->ntree; i++) { size_t w = gpuprof__width(gpuprof__name_text(s->tree[i].name_id)) + 2 * s->tree[i].depth; if (w > L.width) L.width = w; }
    for (i = 0; i < s->ncounters; i++) { size_t w = gpuprof__width(gpuprof__name_text(s->counters[i].name_id)); if (w > L.width) L.width = w; }
    if (L.width > 40) L.width = 40;
    return L;
}

/* CUDA builds: how many ranges were GPU-timed, what was not, and how idle the GPU was per step. */
#ifdef GPUPROF_CUDA
static void gpuprof__report_gpu_line(gpuprof__buf *b) {
    char t1[32], t2[32], t3[32];
    gpuprof_stats idle;
    if (!gpuprof__gpu.available) return;
    gpuprof__buf_printf(b, "   GPU: %llu range%s timed %s", (unsigned long long)GPUPROF__LD(&gpuprof__gpu.timed),
                        GPUPROF__LD(&gpuprof__gpu.timed) == 1 ? "" : "s", gpuprof__gpu.from_kernels ? "by their kernels (no CUDA event)" : "with CUDA events");
    if (gpuprof__gpu.skipped_capture) gpuprof__buf_printf(b, ", %llu inside CUDA graph capture (not GPU-timed)", (unsigned long long)gpuprof__gpu.skipped_capture);
    if (gpuprof__gpu.skipped_backlog) gpuprof__buf_printf(b, ", %llu not GPU-timed (%d ranges waiting for the GPU)", (unsigned long long)gpuprof__gpu.skipped_backlog, GPUPROF__RING);
    if (gpuprof__gpu.lost) gpuprof__buf_printf(b, ", %llu lost to a CUDA error", (unsigned long long)gpuprof__gpu.lost);
    gpuprof__gpu_idle(&idle);
    if (idle.count) {
        gpuprof__fmt(t1, sizeof t1, "%.1f", gpuprof_stats_mean(&idle));
        gpuprof__fmt(t2, sizeof t2, "%.1f", gpuprof_stats_quantile(&idle, 0.5));
        gpuprof__fmt(t3, sizeof t3, "%.1f", gpuprof_stats_quantile(&idle, 0.95));
        gpuprof__buf_printf(b, " | GPU idle per step (%s): mean %s%%, p50 %s%%, p95 %s%%",
                            gpuprof__gpu.from_kernels ? "no kernel, copy or memset running" : "outside GPU ranges", t1, t2, t3);
    }
    gpuprof__buf_s(b, "\n");
}
#else
#define gpuprof__report_gpu_line(b) ((void)(b))
#endif

/* The run over time in one line: the step time of up to 60 columns of
   consecutive steps as block heights (the top tenth of columns clipped, so
   a rare long step does not flatten the rest), then the drift, if any. */
static void gpuprof__report_series(gpuprof__buf *b, const gpuprof__snap *s) {
    static const char *const level[8] = { "\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
                                          "\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88" };   /* U+2581..U+2588 */
    double col[60], sorted[60], lo, hi;
    uint64_t steps = 0;
    uint32_t w = s->npoints < 60 ? s->npoints : 60, j, i;
    char t1[32], t2[32], cause[200];
    gpuprof__drift d;
    for (j = 0; j < w; j++) {
        double sum = 0, n = 0;
        for (i = j * s->npoints / w; i < (j + 1) * s->npoints / w; i++) { sum += s->series[i].sum; n += s->series[i].n; }
        col[j] = sorted[j] = n > 0 ? sum / n : 0;
        steps += (uint64_t)n;
    }
    qsort(sorted, w, sizeof *sorted, gpuprof__cmp_double);
    lo = sorted[0];
    hi = sorted[w >= 10 ? (w - 1) * 9 / 10 : w - 1];
    if (hi - lo < GPUPROF__DRIFT_MIN * sorted[w / 2]) {     /* a steady run: noise is not drawn as a change */
        lo = sorted[w / 2] * (1 - GPUPROF__DRIFT_MIN / 2);
        hi = sorted[w / 2] * (1 + GPUPROF__DRIFT_MIN / 2);
    }
    gpuprof__buf_s(b, "   over the run: ");
    for (j = 0; j < w; j++) {
        /* clamped as a double: a clipped column can be any number of times the scale */
        double x = hi > lo ? (col[j] - lo) / (hi - lo) * 7.0 + 0.5 : 0;
        gpuprof__buf_s(b, level[!(x > 0) ? 0 : x >= 7 ? 7 : (int)x]);
    }
    gpuprof__buf_printf(b, "  step time, %llu steps in %u columns (%s%s to %s%s)\n", (unsigned long long)steps, w,
                        lo < sorted[0] ? "scale " : "", gpuprof__fmt_ns(t1, sizeof t1, lo), gpuprof__fmt_ns(t2, sizeof t2, hi), hi < sorted[w - 1] ? " or more" : "");
    gpuprof__drift_of(s, &d);
    if (!d.drifted) return;
    gpuprof__fmt(t1, sizeof t1, "%.0f", 100.0 * fabs(d.last - d.first) / d.first);
    gpuprof__buf_printf(b, "   step time %s %s%% over the run", d.last > d.first ? "rose" : "fell", t1);
    if (d.typical < d.all) gpuprof__buf_printf(b, " (its typical steps: %llu of %llu)", (unsigned long long)d.typical, (unsigned long long)d.all);
    gpuprof__buf_printf(b, ": median %s in the first tenth, ", gpuprof__fmt_ns(t2, sizeof t2, d.first));
    gpuprof__buf_printf(b, "%s in the last", gpuprof__fmt_ns(t2, sizeof t2, d.last));
    if (d.slot >= 0) {
        gpuprof__buf_qname(b, "; most of it in ", s->ph_name[d.slot]);
        gpuprof__buf_printf(b, " (%s%s)", d.slot_change > 0 ? "+" : "-", gpuprof__fmt_ns(t2, sizeof t2, fabs(d.slot_change)));
    }
    gpuprof__dev_drift_cause(cause, sizeof cause, &d);
    if (cause[0]) gpuprof__buf_printf(b, "; %s", cause);
    gpuprof__buf_s(b, "\n");
}

/* The slow steps captured (GPUPROF_CAPTURE_SLOW), a line each. */
static void gpuprof__report_captures(gpuprof__buf *b) {
    uint32_t k;
    unsigned i, n = GPUPROF__LDA(&gpuprof__bg.ncap);
    char t1[32], t2[32], t3[32];
    for (i = 0; i < n; i++) {
        const gpuprof__capture *c = &gpuprof__bg.cap[i];
        int state = GPUPROF__LDA(&c->state);
        gpuprof__fmt(t2, sizeof t2, "%.1f", c->ns / c->median);
        gpuprof__buf_printf(b, "   slow step %llu captured", (unsigned long long)c->step);
        if (c->common) gpuprof__buf_s(b, " (a step of the most common kind)");
        for (k = 0; k < c->nwith; k++) gpuprof__buf_qname(b, k == 0 ? " (a step with " : k + 1 == c->nwith ? " and " : ", ", c->with[k]);
        gpuprof__buf_printf(b, "%s: %s, %sx the running median of its kind (%s) -> %s\n", c->nwith ? ")" : "",
                            gpuprof__fmt_ns(t1, sizeof t1, c->ns), t2, gpuprof__fmt_ns(t3, sizeof t3, c->median),
                            state == 1 ? c->file : state < 0 ? "(the file could not be written)" : "(being written)");
    }
}

static void gpuprof__report_header(gpuprof__buf *b, const gpuprof__snap *s) {
    char t1[32], t2[32], t3[32], t4[32], rank[96] = "", device[640];
    double wall = (double)gpuprof__wall_ns();
    if (gpuprof__run.rank >= 0 && gpuprof__run.world_size > 0)
        snprintf(rank, sizeof rank, ", rank %d of %d on %.40s", gpuprof__run.rank, gpuprof__run.world_size, gpuprof__run.host);
    else if (gpuprof__run.rank >= 0) snprintf(rank, sizeof rank, ", rank %d on %.40s", gpuprof__run.rank, gpuprof__run.host);
    gpuprof__device_text(device, sizeof device);
    gpuprof__buf_printf(b, "\n== gpuprof %s: %s (pid %d%s) | %s | wall %s | %d thread%s | clock %s\n",
                        GPUPROF_VERSION, gpuprof__g.process_name, gpuprof__run.pid, rank, device,
                        gpuprof__fmt_ns(t1, sizeof t1, wall), (int)gpuprof__threads.nthreads, gpuprof__threads.nthreads == 1 ? "" : "s",
                        gpuprof__clock_name(0));
    if (gpuprof__steps.seen) {
        gpuprof__buf_printf(b, "   steps: %llu counted, %llu excluded (warm-up)", (unsigned long long)gpuprof__steps.counted,
                            (unsigned long long)gpuprof__steps.excluded);
        if (gpuprof__g.sched_on) gpuprof__buf_printf(b, ", %llu not recorded (schedule)", (unsigned long long)gpuprof__steps.unrecorded);
        if (gpuprof__steps.stats.count)
            gpuprof__buf_printf(b, " | step time: mean %s, p50 %s, p95 %s, max %s",
                                gpuprof__fmt_ns(t1, sizeof t1, gpuprof_stats_mean(&gpuprof__steps.stats)),
                                gpuprof__fmt_ns(t2, sizeof t2, gpuprof_stats_quantile(&gpuprof__steps.stats, 0.5)),
                                gpuprof__fmt_ns(t3, sizeof t3, gpuprof_stats_quantile(&gpuprof__steps.stats, 0.95)),
                                gpuprof__fmt_ns(t4, sizeof t4, gpuprof_stats_max(&gpuprof__steps.stats)));
        gpuprof__buf_s(b, "\n");
        if (s->npoints >= 2) gpuprof__report_series(b, s);
        gpuprof__report_captures(b);
    } else if (gpuprof__g.cfg.warmup > 0) {
        gpuprof__buf_printf(b, "   no GPUPROF_STEP: the first %d calls of each range are excluded (warm-up)\n", gpuprof__g.cfg.warmup);
    }
    if (s->excluded_calls) gpuprof__buf_printf(b, "   %llu range calls excluded from the statistics (warm-up/schedule), still in the trace\n",
                                               (unsigned long long)s->excluded_calls);
    if (gpuprof__g.trace_path || gpuprof__trace.mode == GPUPROF__TRACE_RING)
        gpuprof__report_trace_line(b, s);
    gpuprof__report_gpu_line(b);
}

/* The start of a row in every range table: the name (indented by depth in
   the trees), the counted calls, the total CPU time. */
static void gpuprof__row_lead(gpuprof__buf *b, const gpuprof__row *r, size_t width, size_t indent) {
    gpuprof__name_cell(b, gpuprof__name_text(r->name_id), width, indent);
    gpuprof__buf_printf(b, " %9llu", (unsigned long long)r->stats.count);
    gpuprof__cell_ns(b, r->stats.sum);
}

/* A share in percent, one decimal, in a column of 7. */
static void gpuprof__cell_pct(gpuprof__buf *b, double part, double whole) {
    char t[32];
    gpuprof__fmt(t, sizeof t, "%.1f", whole > 0 ? 100.0 * part / whole : 0.0);
    gpuprof__buf_printf(b, " %6s%%", t);
}

static void gpuprof__report_gpu_flat(gpuprof__buf *b, const gpuprof__snap *s, gpuprof__layout L) {
    char t1[32];
    uint32_t i, rows = L.rows;
    gpuprof__table_head(b, GPUPROF__FROM_KERNELS ?
                           "\nRanges by GPU time (GPU: first start to last end of the GPU work launched inside the range, nested ranges included;\n"
                           "Self: the GPU time of the work launched in the range itself; CPU: host time in the range; GPU% = share of all GPU self time)\n" :
                           "\nRanges by GPU time (GPU: CUDA events on the range's stream, nested ranges included in Total, not in Self;\n"
                           "CPU: host time in the range, the launch cost of asynchronous work; GPU% = share of all GPU self time)\n", "Name", L.width,
                        "     Calls  CPU Total   CPU Mean  GPU Total   GPU Self   GPU%   GPU Mean    GPU P50    GPU P95    GPU P99    GPU Max  Verdict");
    gpuprof__mem_range_head(b, 5);
    for (i = 0; i < s->nflat && i < rows; i++) {
        gpuprof__row *r = s->flatp[i];
        gpuprof_stats *g = &r->gpu;
        const char *v = gpuprof__verdict(r);
        if (!r->stats.count) continue;
        gpuprof__row_lead(b, r, L.width, 0);
        gpuprof__cell_ns(b, gpuprof_stats_mean(&r->stats));
        gpuprof__cell_ns(b, g->count ? g->sum : GPUPROF__NAN);
        gpuprof__cell_ns(b, g->count ? (double)r->gpu_self_ns : GPUPROF__NAN);
        gpuprof__fmt(t1, sizeof t1, "%.1f", s->gpu_ns > 0 ? 100.0 * (double)r->gpu_self_ns / s->gpu_ns : 0.0);
        gpuprof__buf_printf(b, " %5s%%", g->count ? t1 : "-");
        gpuprof__cell_ns(b, gpuprof_stats_mean(g));
        gpuprof__cell_ns(b, gpuprof_stats_quantile(g, 0.50));
        gpuprof__cell_ns(b, gpuprof_stats_quantile(g, 0.95));
        gpuprof__cell_ns(b, gpuprof_stats_quantile(g, 0.99));
        gpuprof__cell_ns(b, g->count ? g->max : GPUPROF__NAN);
        gpuprof__buf_printf(b, GPUPROF__LD(&gpuprof__g.mem_ranges) ? "  %-13s" : "  %s", v ? v : "-");
        gpuprof__mem_range_cells(b, r);
    }
    gpuprof__more_rows(b, s->nflat, rows);
}

static void gpuprof__report_gpu_tree(gpuprof__buf *b, const gpuprof__snap *s, gpuprof__layout L) {
    uint32_t i, rows = L.rows;
    gpuprof__table_head(b, "\nCall tree (each range under the range it ran in)\n", "Name", L.width,
                        "     Calls  CPU Total   CPU Self  GPU Total   GPU Self   GPU Mean    GPU P95  Verdict\n");
    for (i = 0; i < s->norder && i < rows; i++) {
        gpuprof__row *r = &s->tree[s->order[i]];
        gpuprof_stats *g = &r->gpu;
        const char *v = gpuprof__verdict(r);
        if (!r->stats.count && !g->count) continue;          /* every call fell in warm-up */
        gpuprof__row_lead(b, r, L.width, 2 * r->depth);
        gpuprof__cell_ns(b, (double)r->self_ns);
        gpuprof__cell_ns(b, g->count ? g->sum : GPUPROF__NAN);
        gpuprof__cell_ns(b, g->count ? (double)r->gpu_self_ns : GPUPROF__NAN);
        gpuprof__cell_ns(b, gpuprof_stats_mean(g));
        gpuprof__cell_ns(b, gpuprof_stats_quantile(g, 0.95));
        gpuprof__buf_printf(b, "  %s\n", v ? v : "-");
    }
    gpuprof__more_rows(b, s->norder, rows);
}

static void gpuprof__report_cpu_flat(gpuprof__buf *b, const gpuprof__snap *s, gpuprof__layout L) {
    uint32_t i, rows = L.rows;
    gpuprof__table_head(b, "\nRanges by total time (Total includes nested ranges, Self does not; Self% = share of all time in ranges)\n", "Name", L.width,
                        "     Calls      Total       Self   Self%       Mean        Std        Min        P50        P95        P99        Max");
    gpuprof__mem_range_head(b, 0);
    for (i = 0; i < s->nflat && i < rows; i++) {
        gpuprof__row *r = s->flatp[i];
        gpuprof_stats *st = &r->stats;
        if (!st->count) continue;
        gpuprof__row_lead(b, r, L.width, 0);
        gpuprof__cell_ns(b, (double)r->self_ns);
        gpuprof__cell_pct(b, (double)r->self_ns, s->profiled_ns);
        gpuprof__cell_ns(b, gpuprof_stats_mean(st));
        gpuprof__cell_ns(b, gpuprof_stats_stddev(st));
        gpuprof__cell_ns(b, st->min);
        gpuprof__cell_ns(b, gpuprof_stats_quantile(st, 0.50));
        gpuprof__cell_ns(b, gpuprof_stats_quantile(st, 0.95));
        gpuprof__cell_ns(b, gpuprof_stats_quantile(st, 0.99));
        gpuprof__cell_ns(b, st->max);
        gpuprof__mem_range_cells(b, r);
    }
    gpuprof__more_rows(b, s->nflat, rows);
}

static void gpuprof__report_cpu_tree(gpuprof__buf *b, const gpuprof__snap *s, gpuprof__layout L) {
    uint32_t i, rows = L.rows;
    gpuprof__table_head(b, "\nCall tree (each range under the range it ran in; Total% = share of all time in ranges)\n", "Name", L.width,
                        "     Calls      Total       Self  Total%       Mean        P50        P95        Max\n");
    for (i = 0; i < s->norder && i < rows; i++) {
        gpuprof__row *r = &s->tree[s->order[i]];
        gpuprof_stats *st = &r->stats;
        if (!st->count) continue;                            /* every call fell in warm-up */
        gpuprof__row_lead(b, r, L.width, 2 * r->depth);
        gpuprof__cell_ns(b, (double)r->self_ns);
        gpuprof__cell_pct(b, st->sum, s->profiled_ns);
        gpuprof__cell_ns(b, gpuprof_stats_mean(st));
        gpuprof__cell_ns(b, gpuprof_stats_quantile(st, 0.50));
        gpuprof__cell_ns(b, gpuprof_stats_quantile(st, 0.95));
        gpuprof__cell_ns(b, st->count ? st->max : GPUPROF__NAN);
        gpuprof__buf_s(b, "\n");
    }
    gpuprof__more_rows(b, s->norder, rows);
}

static void gpuprof__report_counters(gpuprof__buf *b, const gpuprof__snap *s, size_t width) {
    uint32_t i;
    gpuprof__table_head(b, "\nCounters\n", "Name", width, "   Samples       Last       Mean        Std        Min        P50        P95        Max\n");
    for (i = 0; i < s->ncounters; i++) {
        gpuprof__row *r = &s->counters[i];
        gpuprof_stats *st = &r->stats;
        gpuprof__name_cell(b, gpuprof__name_text(r->name_id), width, 0);
        gpuprof__buf_printf(b, " %9llu", (unsigned long long)st->count);
        gpuprof__cell_val(b, r->last);
        gpuprof__cell_val(b, gpuprof_stats_mean(st));
        gpuprof__cell_val(b, gpuprof_stats_stddev(st));
        gpuprof__cell_val(b, gpuprof_stats_min(st));
        gpuprof__cell_val(b, r->q_over ? r->q[0] : gpuprof_stats_quantile(st, 0.5));
        gpuprof__cell_val(b, r->q_over ? r->q[2] : gpuprof_stats_quantile(st, 0.95));
        gpuprof__cell_val(b, gpuprof_stats_max(st));
        if (r->q_over && r->q_over < st->count) gpuprof__buf_printf(b, "  (P50, P95: of the last %llu)", (unsigned long long)r->q_over);
        else if (st->count && !r->q_over) gpuprof__buf_s(b, "  (P50, P95: from a histogram, within 1%)");
        if (st->rejected) gpuprof__buf_printf(b, "  (%llu NaN/inf rejected)", (unsigned long long)st->rejected);
        gpuprof__buf_s(b, "\n");
    }
    if (s->ncounters) gpuprof__buf_s(b, "   P50 and P95 are exact, of all samples (where not marked otherwise)\n");
}

static void gpuprof__report_warnings(gpuprof__buf *b) {
    uint64_t warnings = 0;
    int i;
    for (i = 0; i < GPUPROF__W_COUNT; i++) warnings += GPUPROF__LD(&gpuprof__g.warn_count[i]);
    if (warnings) {
        int first = 1;
        gpuprof__buf_s(b, "\nWarnings (each distinct message was printed once, when it first happened): ");
        for (i = 0; i < GPUPROF__W_COUNT; i++) {
            uint64_t c = GPUPROF__LD(&gpuprof__g.warn_count[i]);
            if (!c) continue;
            gpuprof__buf_printf(b, "%s%llu %s", first ? "" : ", ", (unsigned long long)c, gpuprof__warn_label[i]);
            first = 0;
        }
        gpuprof__buf_s(b, "\n");
    }
}

/* ----------------------------------------------------------------------
   Kernel capture in the report: the kernels, kernels by range, GPU spans,
   transfers, synchronizations (under gpuprof__lock; the collector's tables
   are read under kc.mu).
   ---------------------------------------------------------------------- */
#ifdef GPUPROF_CUDA
static const char *const gpuprof__kc_dir[5] = { "HtoD", "DtoH", "DtoD", "HtoH", "PtoP" };
static const char *const gpuprof__kc_host[3] = { "pageable", "pinned", NULL };
static const char *const gpuprof__kc_sync[4] = { "device", "stream", "event", "stream_wait_event" };

/* The name of the range a top list counts most (NULL: outside any range, or none). */
static const char *gpuprof__kc_range(const gpuprof__ktop *t) {
    int i = gpuprof__ktop_best(t);
    return i >= 0 && t->key[i] ? gpuprof__name_text((uint32_t)t->key[i]) : NULL;
}

static int gpuprof__kc_cmp_kern(const void *a, const void *b) {
    double x = (*(gpuprof__kernel *const *)a)->stats.sum, y = (*(gpuprof__kernel *const *)b)->stats.sum;
    return x > y ? -1 : x < y;
}

/* The kernels with counted calls, largest total first (a list to free); *total: their time. */
static gpuprof__kernel **gpuprof__kc_sorted(uint32_t *n, double *total) {
    gpuprof__kernel **v = (gpuprof__kernel **)gpuprof__alloc((gpuprof__kc.nkern + 1) * sizeof *v);
    uint32_t i;
    *n = 0;
    *total = 0;
    if (!v) return NULL;
    for (i = 0; i < gpuprof__kc.nkern; i++)
        if (gpuprof__kc.kern[i]->stats.count) { v[(*n)++] = gpuprof__kc.kern[i]; *total += gpuprof__kc.kern[i]->stats.sum; }
    qsort(v, *n, sizeof *v, gpuprof__kc_cmp_kern);
    return v;
}

/* The per-step figures, with the steps not settled yet. */
static void gpuprof__kc_steps(gpuprof_stats *per_step, gpuprof_stats *busy) {
    uint32_t k;
    *per_step = gpuprof__kc.per_step;
    *busy = gpuprof__kc.busy;
    for (k = 0; k < GPUPROF__KC_SLOTS; k++) {
        gpuprof__kslot *s = &gpuprof__kc.slot[k];
        if (!s->used || !s->counted) continue;
        gpuprof_stats_add(per_step, (double)s->launched);
        gpuprof_stats_add(busy, gpuprof__kc_busy(s));
    }
}

/* Each range's GPU time per call both ways, where a range has both: from
   its CUDA events and from the kernels launched inside it. */
static void gpuprof__report_spans(gpuprof__buf *b, const gpuprof__snap *s, size_t width, uint32_t rows) {
    uint32_t i, n;
    char t1[32];
    for (i = 0, n = 0; i < s->nflat; i++) n += s->flatp[i]->gpu.count && s->flatp[i]->kspan.count + s->flatp[i]->kspan_nowork;
    if (!n || gpuprof__gpu.from_kernels) return;
    gpuprof__table_head(b, "\nGPU time per call two ways (Events: CUDA events recorded at the range's begin and end; Kernels: first start\n"
                           "to last end of the GPU work launched inside it, nested ranges included -- GPUPROF_GPU=kernels times ranges\n"
                           "so, without events; No work: counted calls that launched nothing, which have no span)\n", "Range", width,
                        "     Calls  Events P50 Kernels P50 Events Mean Kernels Mean  Diff  No work\n");
    for (i = 0, n = 0; i < s->nflat && n < rows; i++) {
        const gpuprof__row *r = s->flatp[i];
        double ev, ks;
        if (!r->gpu.count || !(r->kspan.count + r->kspan_nowork)) continue;
        n++;
        ev = gpuprof_stats_mean(&r->gpu);
        ks = r->kspan.count ? gpuprof_stats_mean(&r->kspan) : GPUPROF__NAN;
        gpuprof__name_cell(b, gpuprof__name_text(r->name_id), width, 0);
        gpuprof__buf_printf(b, " %9llu", (unsigned long long)r->gpu.count);
        gpuprof__buf_printf(b, " %11s", gpuprof__fmt_ns(t1, sizeof t1, gpuprof_stats_quantile(&r->gpu, 0.5)));
        gpuprof__buf_printf(b, " %11s", r->kspan.count ? gpuprof__fmt_ns(t1, sizeof t1, gpuprof_stats_quantile(&r->kspan, 0.5)) : "-");
        gpuprof__buf_printf(b, " %11s", gpuprof__fmt_ns(t1, sizeof t1, ev));
        gpuprof__buf_printf(b, " %12s", r->kspan.count ? gpuprof__fmt_ns(t1, sizeof t1, ks) : "-");
        if (r->kspan.count && ev > 0) {
            gpuprof__fmt(t1, sizeof t1, "%+.0f%%", 100.0 * (ks - ev) / ev);
            gpuprof__buf_printf(b, " %5s", t1);
        } else gpuprof__buf_s(b, "     -");
        gpuprof__buf_printf(b, " %8llu\n", (unsigned long long)r->kspan_nowork);
    }
}

/* The kernel report's first lines: what was captured, what was lost. */
static void gpuprof__kc_report_head(gpuprof__buf *b, const gpuprof_stats *per_step, const gpuprof_stats *busy) {
    char t1[32], t2[32], t3[32];
    gpuprof__buf_printf(b, "\nKernels (CUPTI %u, %s): %llu kernel%s in counted steps", gpuprof__kc.version, gpuprof__kc.library,
                        (unsigned long long)gpuprof__kc.kernels_counted, gpuprof__kc.kernels_counted == 1 ? "" : "s");
    if (per_step->count) {
        gpuprof__fmt(t1, sizeof t1, "%.1f", gpuprof_stats_mean(per_step));
        gpuprof__fmt(t2, sizeof t2, "%.1f", gpuprof_stats_mean(busy));
        gpuprof__buf_printf(b, ", %s per step | GPU busy %s%% of the step (kernels, copies, memsets)", t1, t2);
    }
    if (gpuprof__kc.kernels_counted) {
        gpuprof__fmt(t3, sizeof t3, "%.1f", 100.0 * (double)gpuprof__kc.short_counted / (double)gpuprof__kc.kernels_counted);
        gpuprof__buf_printf(b, " | %s%% shorter than 10 us", t3);
    }
    gpuprof__buf_printf(b, "\n   %llu records, %llu outside any range, %llu dropped by CUPTI, %llu with bad timestamps",
                        (unsigned long long)gpuprof__kc.records, (unsigned long long)gpuprof__kc.unattributed,
                        (unsigned long long)gpuprof__kc.dropped, (unsigned long long)gpuprof__kc.bad_times);
    if (gpuprof__kc.npending) gpuprof__buf_printf(b, ", %u waiting for their launch record", gpuprof__kc.npending);
    if (gpuprof__kc.own) gpuprof__buf_printf(b, ", %llu of gpuprof's own event queries left out", (unsigned long long)gpuprof__kc.own);
    if (gpuprof__kc.late) gpuprof__buf_printf(b, ", %llu handed over too late for the per-step figures", (unsigned long long)gpuprof__kc.late);
    if (GPUPROF__LD(&gpuprof__kc.spans_skipped))
        gpuprof__buf_printf(b, ", %llu range calls without a GPU span (%u calls open or not yet folded)", (unsigned long long)GPUPROF__LD(&gpuprof__kc.spans_skipped),
                            GPUPROF__KC_CALLS);
    if (gpuprof__kc.spans_late)
        gpuprof__buf_printf(b, ", %llu came after their range's GPU span was closed (%.0f s after its end, or %u calls later)", (unsigned long long)gpuprof__kc.spans_late,
                            (double)GPUPROF__KC_SETTLE_NS / 1e9, GPUPROF__KC_CALLS / 2);
    if (gpuprof__kc.status[0]) gpuprof__buf_printf(b, "\n   capture stopped: %s", gpuprof__kc.status);
    gpuprof__buf_s(b, "\n");
}

/* A kernel's SM fill and occupancy cells ("  4%  100% warps        "):
   its most common launch's (sh), or the time-weighted SM fill when it ran
   with several shapes that differ in it ("~"). */
static void gpuprof__kc_cell_launch(gpuprof__buf *b, const gpuprof__kernel *k, int sh) {
    const gpuprof__launch *f = sh >= 0 ? &k->fig[sh] : NULL;
    char t1[32], t2[48];
    double fill;
    if (!f || f->blocks_per_sm < 0 || k->known_ns <= 0) { gpuprof__buf_s(b, "   -  -                "); return; }
    fill = k->fill_ns / k->known_ns;
    gpuprof__fmt(t1, sizeof t1, fabs(fill - f->sm_fill) > 0.005 ? "~%.0f%%" : "%.0f%%", 100.0 * fill);
    gpuprof__fmt(t2, sizeof t2, "%.0f%% %s", 100.0 * f->occupancy, f->blocks_per_sm ? gpuprof__lim_name[f->limiter] : "cannot launch");
    gpuprof__buf_printf(b, "%4s  %-16s ", t1, t2);
}

/* The line under the kernel table: the kernels that leave most SMs idle
   (sm_fill under 1/2, or a last partial wave on fewer than half the SMs
   that is at least a quarter of the kernel's waves), the largest first,
   with the launch remedy. */
static void gpuprof__kc_report_idle(gpuprof__buf *b, gpuprof__kernel **v, uint32_t n, double total) {
    uint32_t i, shown = 0;
    char kn[64], t1[32];
    for (i = 0; i < n && shown < 4; i++) {
        const gpuprof__kernel *k = v[i];
        int sh = gpuprof__ktop_best(&k->shapes);
        const gpuprof__launch *f = sh >= 0 ? &k->fig[sh] : NULL;
        uint64_t blocks, per_wave, last;
        int sms;
        if (!f || f->blocks_per_sm <= 0 || k->shape[sh][9] >= GPUPROF__MAX_DEV || k->stats.sum < 0.01 * total) continue;
        sms = gpuprof__gpu.lim[k->shape[sh][9]].sms;
        blocks = (uint64_t)k->shape[sh][0] * k->shape[sh][1] * k->shape[sh][2];
        per_wave = (uint64_t)sms * (uint64_t)f->blocks_per_sm;
        last = blocks % per_wave;
        gpuprof__fmt(t1, sizeof t1, "%.1f", 100.0 * k->stats.sum / total);
        if (f->sm_fill < GPUPROF__UNDERFILL) {
            gpuprof__buf_printf(b, "%s%s %llu blocks on %d SMs (%s%% of GPU time)", shown ? ", " : "   leave most SMs idle: ", gpuprof__kc_short(kn, sizeof kn, k),
                                (unsigned long long)blocks, sms, t1);
        } else if (blocks > per_wave && last && last < (uint64_t)sms / 2 && blocks / per_wave + 1 <= 4) {
            gpuprof__buf_printf(b, "%s%s its last of %llu waves on %llu of %d SMs (%s%% of GPU time)", shown ? ", " : "   leave most SMs idle: ",
                                gpuprof__kc_short(kn, sizeof kn, k), (unsigned long long)(blocks / per_wave + 1), (unsigned long long)last, sms, t1);
        } else continue;
        shown++;
    }
    if (shown) gpuprof__buf_s(b, "\n      -> more blocks (split the work, split-K, smaller tiles), or other work beside them on another stream\n");
}

/* The kernels by GPU time (v: n of them, sorted; total: their GPU time). */
static void gpuprof__kc_report_table(gpuprof__buf *b, gpuprof__kernel **v, uint32_t n, double total, uint32_t rows) {
    size_t kw = 6, width;
    uint32_t i;
    if (!n) return;
    for (i = 0; i < n && i < rows; i++) { size_t w = gpuprof__width(v[i]->shown); if (w > kw) kw = w; }
    width = kw > 72 ? 72 : kw;
    gpuprof__table_head(b, "", "Kernel", width, "     Calls  GPU Total       Mean        P50        P99        Max  Share  Grid x Block               "
                                                "SMs  Occupancy        Range\n");
    for (i = 0; i < n && i < rows; i++) {
        gpuprof__kernel *k = v[i];
        int sh = gpuprof__ktop_best(&k->shapes);
        const char *rg = gpuprof__kc_range(&k->ranges);
        char shape[96] = "-";
        gpuprof__name_cell(b, k->shown, width, 0);
        gpuprof__buf_printf(b, " %9llu", (unsigned long long)k->stats.count);
        gpuprof__cell_ns(b, k->stats.sum);
        gpuprof__cell_ns(b, gpuprof_stats_mean(&k->stats));
        gpuprof__cell_ns(b, gpuprof_stats_quantile(&k->stats, 0.5));
        gpuprof__cell_ns(b, gpuprof_stats_quantile(&k->stats, 0.99));
        gpuprof__cell_ns(b, k->stats.max);
        gpuprof__cell_pct(b, k->stats.sum, total);
        if (sh >= 0) snprintf(shape, sizeof shape, "(%u,%u,%u)x(%u,%u,%u)", k->shape[sh][0], k->shape[sh][1], k->shape[sh][2],
                              k->shape[sh][3], k->shape[sh][4], k->shape[sh][5]);
        gpuprof__buf_printf(b, "  %-26s ", shape);
        gpuprof__kc_cell_launch(b, k, sh);
        if (rg) gpuprof__buf_name(b, rg);
        else gpuprof__buf_s(b, "-");
        gpuprof__buf_s(b, "\n");
    }
    gpuprof__more_rows(b, n, rows);
    gpuprof__kc_report_idle(b, v, n, total);
}

/* Per range: the kernels launched inside it (not in ranges inside it). */
static void gpuprof__kc_report_by_range(gpuprof__buf *b, const gpuprof__snap *s, size_t range_width, uint32_t rows) {
    double ktotal = 0;
    uint32_t i, n;
    char t1[32];
    for (i = 0; i < s->nflat; i++) ktotal += (double)s->flatp[i]->kernel_ns;
    if (ktotal <= 0) return;
    if (gpuprof__gpu.from_kernels)
        gpuprof__table_head(b, "\nKernels by range (launched inside the range itself, not in ranges inside it; Span: the range's GPU time,\n"
                               "first start to last end of its GPU work; Busy: kernel time / Span -- below 100%, the GPU idled inside the range)\n",
                            "Range", range_width, "   Kernels  Per call  GPU Total  Share       Span   Busy\n");
    else
        gpuprof__table_head(b, "\nKernels by range (launched inside the range itself, not in ranges inside it; Events: the range's GPU self\n"
                               "time from its CUDA events; Busy: kernel time / Events -- below 100%, the GPU idled inside the range)\n", "Range", range_width,
                            "   Kernels  Per call  GPU Total  Share     Events   Busy\n");
    for (i = 0, n = 0; i < s->nflat && n < rows; i++) {
        const gpuprof__row *r = s->flatp[i];
        if (!r->kernel_calls) continue;
        n++;
        gpuprof__name_cell(b, gpuprof__name_text(r->name_id), range_width, 0);
        gpuprof__fmt(t1, sizeof t1, "%.1f", r->stats.count ? (double)r->kernel_calls / (double)r->stats.count : 0.0);
        gpuprof__buf_printf(b, " %9llu %9s", (unsigned long long)r->kernel_calls, t1);
        gpuprof__cell_ns(b, (double)r->kernel_ns);
        gpuprof__cell_pct(b, (double)r->kernel_ns, ktotal);
        if (gpuprof__gpu.from_kernels && r->gpu.count && r->gpu.sum > 0) {
            gpuprof__cell_ns(b, r->gpu.sum);
            gpuprof__cell_pct(b, (double)r->kernel_ns, r->gpu.sum);
        } else if (!gpuprof__gpu.from_kernels && r->gpu.count && r->gpu_self_ns) {
            gpuprof__cell_ns(b, (double)r->gpu_self_ns);
            gpuprof__cell_pct(b, (double)r->kernel_ns, (double)r->gpu_self_ns);
        } else gpuprof__buf_s(b, "          -       -");
        gpuprof__buf_s(b, "\n");
    }
}

/* Copies by direction and host memory, with the range that made most. */
static void gpuprof__kc_report_transfers(gpuprof__buf *b) {
    uint32_t d, h, n;
    char t1[32], t2[32];
    for (d = 0, n = 0; d < 5; d++) for (h = 0; h < 3; h++) n += gpuprof__kc.xfer[d][h].count != 0;
    if (!n) return;
    gpuprof__buf_s(b, "\nTransfers    Host memory      Calls        Bytes  GPU Total        GB/s  Range\n");
    for (d = 0; d < 5; d++) for (h = 0; h < 3; h++) {
        const gpuprof__kxfer *x = &gpuprof__kc.xfer[d][h];
        const char *rg = gpuprof__kc_range(&x->ranges);
        if (!x->count) continue;
        gpuprof__fmt(t1, sizeof t1, "%.2f", x->sum_ns ? (double)x->bytes / (double)x->sum_ns : 0.0);
        gpuprof__fmt_bytes(t2, sizeof t2, (double)x->bytes, 0);
        gpuprof__buf_printf(b, "%-12s %-12s %9llu %12s", gpuprof__kc_dir[d], gpuprof__kc_host[h] ? gpuprof__kc_host[h] : "-",
                            (unsigned long long)x->count, t2);
        gpuprof__cell_ns(b, (double)x->sum_ns);
        gpuprof__buf_printf(b, " %11s  ", t1);
        if (rg) gpuprof__buf_name(b, rg);
        else gpuprof__buf_s(b, "-");
        gpuprof__buf_s(b, h == 0 && (d == 0 || d == 1) ? "  (pageable: pin the host memory to copy asynchronously)\n" : "\n");
    }
}

/* Synchronizing calls by kind: how long the CPU waited in them. */
static void gpuprof__kc_report_syncs(gpuprof__buf *b) {
    uint32_t d, n;
    char t1[32];
    for (d = 0, n = 0; d < 4; d++) n += gpuprof__kc.sync[d].count != 0;
    if (!n) return;
    gpuprof__buf_s(b, "\nSynchronizations     Calls  CPU waited  Range\n");
    for (d = 0; d < 4; d++) {
        const gpuprof__kxfer *x = &gpuprof__kc.sync[d];
        const char *rg = gpuprof__kc_range(&x->ranges);
        if (!x->count) continue;
        gpuprof__buf_printf(b, "%-17s %9llu", gpuprof__kc_sync[d], (unsigned long long)x->count);
        gpuprof__buf_printf(b, " %11s  ", gpuprof__fmt_ns(t1, sizeof t1, (double)x->sum_ns));
        if (rg) gpuprof__buf_name(b, rg);
        else gpuprof__buf_s(b, "-");
        gpuprof__buf_s(b, "\n");
    }
}

/* The kernel report (under gpuprof__lock; the collector's tables under kc.mu). */
static void gpuprof__report_kernels(gpuprof__buf *b, const gpuprof__snap *s, size_t width, uint32_t rows) {
    gpuprof__kernel **v;
    gpuprof_stats per_step, busy;
    uint32_t n;
    double total;
    if (!gpuprof__kc.asked) return;
    if (!gpuprof__kc.map) { gpuprof__buf_printf(b, "\nKernels: capture off: %s\n", gpuprof__kc.status); return; }
    pthread_mutex_lock(&gpuprof__kc_mu);
    v = gpuprof__kc_sorted(&n, &total);
    gpuprof__kc_steps(&per_step, &busy);
    gpuprof__kc_report_head(b, &per_step, &busy);
    gpuprof__kc_report_table(b, v, n, total, rows);
    GPUPROF_FREE(v);
    gpuprof__kc_report_by_range(b, s, width, rows);
    gpuprof__report_spans(b, s, width, rows);
    gpuprof__kc_report_transfers(b);
    gpuprof__kc_report_syncs(b);
    pthread_mutex_unlock(&gpuprof__kc_mu);
}

#else
static void gpuprof__report_kernels(gpuprof__buf *b, const gpuprof__snap *s, size_t width, uint32_t rows) { (void)b; (void)s; (void)width; (void)rows; }
#endif

/* ----------------------------------------------------------------------
   Text report, assembled (gpuprof_report and the report at exit)
   ---------------------------------------------------------------------- */
static void gpuprof__report_text(gpuprof__buf *b, gpuprof__snap *s) {
    gpuprof__layout L = gpuprof__report_layout(s);
    int view = gpuprof__g.cfg.report_view, sampled;
    /* the verdict and the samples on the heap (tens of KiB): the report may be asked for on a thread of 16 KiB */
    gpuprof__verdict_t *verdict = (gpuprof__verdict_t *)gpuprof__zalloc(sizeof *verdict);
    gpuprof__smp_report *smp = (gpuprof__smp_report *)gpuprof__zalloc(sizeof *smp);
    if (!verdict || !smp) {
        GPUPROF_FREE(verdict);
        GPUPROF_FREE(smp);
        b->failed = 1;
        return;
    }
    gpuprof__report_header(b, s);
    gpuprof__analyze(s, verdict);
    gpuprof__verdict_head(b, verdict);
    if (s->mem && (s->mem->snapshots || s->mem->allocs)) gpuprof__mem_reading(b, s->mem);
    if (s->has_gpu) {
        if (view != GPUPROF_VIEW_TREE) gpuprof__report_gpu_flat(b, s, L);
        if (view != GPUPROF_VIEW_FLAT && s->norder) gpuprof__report_gpu_tree(b, s, L);
    } else {
        if (view != GPUPROF_VIEW_TREE) gpuprof__report_cpu_flat(b, s, L);
        if (view != GPUPROF_VIEW_FLAT && s->norder) gpuprof__report_cpu_tree(b, s, L);
    }
    gpuprof__report_kernels(b, s, L.width, L.rows);
    if (view != GPUPROF_VIEW_TREE) gpuprof__report_roofline(b, s, L.width, L.rows);
    if (s->ncounters) gpuprof__report_counters(b, s, L.width);
    if (s->mem) gpuprof__report_mem(b, s->mem, L.width);
    if (s->marks) gpuprof__buf_printf(b, "\nMarks: %llu\n", (unsigned long long)s->marks);
    gpuprof__report_device(b, s);
    sampled = gpuprof__smp_collect(smp, 0);    /* once: the section and the verdict both name functions */
    gpuprof__report_samples(b, sampled ? smp : NULL, L.rows);
    gpuprof__report_verdict(b, verdict, L.width, s->has_gpu, sampled ? smp : NULL);
    gpuprof__smp_free(smp);
    gpuprof__report_warnings(b);
    GPUPROF_FREE(verdict);
    GPUPROF_FREE(smp);
}

/* ----------------------------------------------------------------------
   JSON summary (schema: docs/summary.md)
   ---------------------------------------------------------------------- */
static const char *const gpuprof__warn_key[GPUPROF__W_COUNT] = {
    "end_without_begin", "mismatched_nesting", "open_at_shutdown", "after_shutdown", "double_init",
    "bad_name", "long_name", "bad_counter_value", "names_over_cap", "paths_over_cap", "too_deep",
    "out_of_memory", "trace_dropped", "bad_setting", "output_error", "gpu_unavailable", "cuda_error",
    "mem_unknown_free", "mem_tracked_twice", "mem_over_cap", "before_init", "kernel_capture",
    "device_telemetry"
};

static void gpuprof__json_stats_q(gpuprof__buf *b, const gpuprof_stats *st, const char *unit, const double *q) {
    static const double qs[] = { 0.5, 0.9, 0.95, 0.99 };
    static const char *const qn[] = { "p50", "p90", "p95", "p99" };
    int i;
    gpuprof__buf_printf(b, "\"count\":%llu,\"sum%s\":", (unsigned long long)st->count, unit);
    gpuprof__buf_num(b, st->sum);
    gpuprof__buf_printf(b, ",\"mean%s\":", unit);
    gpuprof__buf_num(b, gpuprof_stats_mean(st));
    gpuprof__buf_printf(b, ",\"std%s\":", unit);
    gpuprof__buf_num(b, gpuprof_stats_stddev(st));
    gpuprof__buf_printf(b, ",\"min%s\":", unit);
    gpuprof__buf_num(b, gpuprof_stats_min(st));
    for (i = 0; i < 4; i++) {
        gpuprof__buf_printf(b, ",\"%s%s\":", qn[i], unit);
        gpuprof__buf_num(b, q ? q[i] : gpuprof_stats_quantile(st, qs[i]));
    }
    gpuprof__buf_printf(b, ",\"max%s\":", unit);
    gpuprof__buf_num(b, gpuprof_stats_max(st));
}
/* The statistics with quantiles from the histogram. */
static void gpuprof__json_stats(gpuprof__buf *b, const gpuprof_stats *st, const char *unit) { gpuprof__json_stats_q(b, st, unit, NULL); }

static void gpuprof__json_range(gpuprof__buf *b, const gpuprof__row *r, double profiled) {
    gpuprof__buf_s(b, "{\"name\":");
    gpuprof__buf_s(b, gpuprof__registry.names[r->name_id].json);
    gpuprof__buf_s(b, ",");
    gpuprof__json_stats(b, &r->stats, "_ns");
    if (r->open_calls) {                 /* mid-run: calls under way, not in the figures above */
        gpuprof__buf_printf(b, ",\"open\":{\"calls\":%llu,\"ns\":", (unsigned long long)r->open_calls);
        gpuprof__buf_num(b, floor(r->open_ns + 0.5));
        gpuprof__buf_s(b, "}");
    }
    gpuprof__buf_printf(b, ",\"self_ns\":%llu,\"excluded_calls\":%llu,\"share\":", (unsigned long long)r->self_ns,
                        (unsigned long long)r->excluded);
    gpuprof__buf_num(b, profiled > 0 ? (double)r->self_ns / profiled : 0.0);
    gpuprof__buf_s(b, ",\"flops\":");
    gpuprof__buf_num(b, r->flops);
    gpuprof__buf_s(b, ",\"bytes\":");
    gpuprof__buf_num(b, r->bytes);
    gpuprof__buf_s(b, ",\"gpu\":");
    if (r->gpu.count || r->gpu_excluded || r->gpu_nowork) {
        const char *v = gpuprof__verdict(r);
        gpuprof__buf_s(b, "{");
        gpuprof__json_stats(b, &r->gpu, "_ns");
        gpuprof__buf_printf(b, ",\"self_ns\":%llu,\"excluded_calls\":%llu,\"no_work_calls\":%llu,\"end_lag_mean_ns\":", (unsigned long long)r->gpu_self_ns,
                            (unsigned long long)r->gpu_excluded, (unsigned long long)r->gpu_nowork);
        gpuprof__buf_num(b, r->gpu.count ? (double)r->gpu_lag_ns / (double)r->gpu.count : GPUPROF__NAN);
        gpuprof__buf_s(b, ",\"start_lag_mean_ns\":");
        gpuprof__buf_num(b, r->gpu.count ? (double)r->gpu_wait_ns / (double)r->gpu.count : GPUPROF__NAN);
        gpuprof__buf_printf(b, ",\"verdict\":%s%s%s}", v ? "\"" : "", v ? v : "null", v ? "\"" : "");
    } else gpuprof__buf_s(b, "null");
    gpuprof__buf_s(b, ",\"roofline\":");
    {
        gpuprof__roof rf;
        if (gpuprof__roofline(r, &rf)) {
            gpuprof__buf_s(b, "{\"flops_per_call\":");
            gpuprof__buf_num(b, rf.flops);
            gpuprof__buf_s(b, ",\"bytes_per_call\":");
            gpuprof__buf_num(b, rf.bytes);
            gpuprof__buf_printf(b, ",\"time_from\":\"%s\",\"time_ns\":", rf.on_gpu ? "gpu" : "cpu");
            gpuprof__buf_num(b, rf.time_ns);
            gpuprof__buf_s(b, ",\"flops_per_s\":");
            gpuprof__buf_num(b, rf.fps);
            gpuprof__buf_s(b, ",\"bytes_per_s\":");
            gpuprof__buf_num(b, rf.bps);
            gpuprof__buf_s(b, ",\"flop_per_byte\":");
            gpuprof__buf_num(b, rf.ai);
            gpuprof__buf_s(b, ",\"bound\":");
            if (rf.bound) gpuprof__buf_printf(b, "\"%s\"", gpuprof__kname[rf.bound]);
            else gpuprof__buf_s(b, "null");
            gpuprof__buf_s(b, ",\"peak_fraction\":");
            gpuprof__buf_num(b, rf.frac);
            gpuprof__buf_s(b, "}");
        } else gpuprof__buf_s(b, "null");
    }
    gpuprof__buf_s(b, ",\"mem\":");
    if (GPUPROF__LD(&gpuprof__g.mem_ranges) && r->mem_calls) {
        gpuprof__buf_printf(b, "{\"calls\":%llu,\"tracked_delta_sum_bytes\":%lld,\"tracked_delta_mean_bytes\":", (unsigned long long)r->mem_calls, (long long)r->mem_delta);
        gpuprof__buf_num(b, (double)r->mem_delta / (double)r->mem_calls);
        gpuprof__buf_s(b, ",\"device_delta_mean_bytes\":");
        gpuprof__buf_num(b, r->dev_calls ? (double)r->dev_delta / (double)r->dev_calls : GPUPROF__NAN);
        gpuprof__buf_s(b, "}");
    } else gpuprof__buf_s(b, "null");
    if (gpuprof__kc_tables()) gpuprof__buf_printf(b, ",\"kernel_calls\":%llu,\"kernel_ns\":%llu", (unsigned long long)r->kernel_calls, (unsigned long long)r->kernel_ns);
    else gpuprof__buf_s(b, ",\"kernel_calls\":null,\"kernel_ns\":null");
    /* the GPU time per call from the kernels launched inside (the "gpu" object's when GPUPROF_GPU=kernels) */
    gpuprof__buf_s(b, ",\"kernel_span\":");
    if (gpuprof__kc_tables() && (r->kspan.count || r->kspan_nowork)) {
        gpuprof__buf_s(b, "{");
        gpuprof__json_stats(b, &r->kspan, "_ns");
        gpuprof__buf_printf(b, ",\"work_ns\":%llu,\"no_work_calls\":%llu}", (unsigned long long)r->kspan_self_ns, (unsigned long long)r->kspan_nowork);
    } else gpuprof__buf_s(b, "null");
}

/* A figure of a snapshot, or null where it has none. */
static void gpuprof__json_bytes(gpuprof__buf *b, const char *key, int ok, double v) {
    gpuprof__buf_printf(b, ",\"%s\":", key);
    if (ok) gpuprof__buf_num(b, v);
    else gpuprof__buf_s(b, "null");
}

static void gpuprof__json_mem(gpuprof__buf *b, const gpuprof__memstate *m) {
    static const char *const what[] = { "", "tracked", "device used", "host RSS" };
    const gpuprof__memfig *last = &m->prev;
    uint32_t i;
    gpuprof__buf_printf(b, "\"memory\":{\"snapshots\":%llu,\n \"device\":", (unsigned long long)m->snapshots);
    if (m->snapshots && last->dev_ok) {
        gpuprof__buf_printf(b, "{\"available\":true,\"index\":%d,\"used_bytes\":%llu,\"total_bytes\":%llu,\"pool\":", last->dev,
                            (unsigned long long)last->dev_used, (unsigned long long)last->dev_total);
        if (last->pool_ok)
            gpuprof__buf_printf(b, "{\"used_bytes\":%llu,\"used_high_bytes\":%llu,\"reserved_bytes\":%llu,\"reserved_high_bytes\":%llu}}",
                                (unsigned long long)last->pool_used, (unsigned long long)last->pool_used_high,
                                (unsigned long long)last->pool_rsvd, (unsigned long long)last->pool_rsvd_high);
        else gpuprof__buf_s(b, "null}");
    } else {
        gpuprof__buf_s(b, "{\"available\":false,\"status\":");
        gpuprof__buf_json_str(b, m->snapshots ? gpuprof__mem_device_status() : "no GPUPROF_MEM snapshot");
        gpuprof__buf_s(b, "}");
    }
    gpuprof__buf_s(b, ",\n \"host\":");
    if (m->snapshots && last->host_ok)
        gpuprof__buf_printf(b, "{\"rss_bytes\":%llu,\"peak_rss_bytes\":%llu}", (unsigned long long)last->rss, (unsigned long long)last->rss_peak);
    else gpuprof__buf_s(b, "null");
    gpuprof__buf_printf(b, ",\n \"tracked\":{\"live_bytes\":%llu,\"peak_bytes\":%llu,\"peak_step\":%llu,\"peak_before\":",
                        (unsigned long long)m->live, (unsigned long long)m->peak, (unsigned long long)m->peak_step);
    if (m->peak_label && !m->peak_pending) gpuprof__buf_s(b, gpuprof__registry.names[m->peak_label].json);
    else gpuprof__buf_s(b, "null");
    gpuprof__buf_printf(b, ",\"allocs\":%llu,\"frees\":%llu,\"unknown_frees\":%llu,\"untracked\":%llu,\"categories\":[",
                        (unsigned long long)m->allocs, (unsigned long long)m->frees, (unsigned long long)m->unknown_frees, (unsigned long long)m->untracked);
    for (i = 0; i < m->ncat; i++) {
        const gpuprof__memcat *c = &m->cat[i];
        gpuprof__buf_s(b, i ? ",\n  {\"name\":" : "\n  {\"name\":");
        gpuprof__buf_s(b, gpuprof__registry.names[c->name_id].json);
        gpuprof__buf_printf(b, ",\"live_bytes\":%llu,\"peak_bytes\":%llu,\"at_peak_bytes\":%llu,\"allocs\":%llu,\"frees\":%llu}",
                            (unsigned long long)c->live, (unsigned long long)c->peak, (unsigned long long)c->at_peak,
                            (unsigned long long)c->allocs, (unsigned long long)c->frees);
    }
    gpuprof__buf_s(b, "]},\n \"phases\":[");
    for (i = 0; i < m->nphase; i++) {
        const gpuprof__memphase *p = &m->phase[i];
        gpuprof__buf_s(b, i ? ",\n  {\"label\":" : "\n  {\"label\":");
        gpuprof__buf_s(b, gpuprof__registry.names[p->name_id].json);
        gpuprof__buf_printf(b, ",\"count\":%llu,\"step\":%llu,\"tracked_bytes\":%llu", (unsigned long long)p->count,
                            (unsigned long long)p->step, (unsigned long long)p->last.tracked);
        gpuprof__json_bytes(b, "tracked_delta_bytes", p->has_delta, (double)p->d_tracked);
        gpuprof__buf_printf(b, ",\"tracked_peak_bytes\":%llu", (unsigned long long)p->peak);
        gpuprof__json_bytes(b, "tracked_growth_bytes", p->growth != INT64_MIN, (double)p->growth);
        gpuprof__buf_s(b, ",\"growth_category\":");
        if (p->growth != INT64_MIN && p->growth_cat >= 0) gpuprof__buf_s(b, gpuprof__registry.names[m->cat[p->growth_cat].name_id].json);
        else gpuprof__buf_s(b, "null");
        gpuprof__json_bytes(b, "device_used_bytes", p->last.dev_ok, (double)p->last.dev_used);
        gpuprof__json_bytes(b, "device_delta_bytes", p->has_delta && p->last.dev_ok, (double)p->d_dev);
        gpuprof__json_bytes(b, "pool_used_bytes", p->last.pool_ok, (double)p->last.pool_used);
        gpuprof__json_bytes(b, "pool_used_delta_bytes", p->has_delta && p->last.pool_ok, (double)p->d_pool_used);
        gpuprof__json_bytes(b, "pool_reserved_bytes", p->last.pool_ok, (double)p->last.pool_rsvd);
        gpuprof__json_bytes(b, "pool_reserved_delta_bytes", p->has_delta && p->last.pool_ok, (double)p->d_pool_rsvd);
        gpuprof__json_bytes(b, "rss_bytes", p->last.host_ok, (double)p->last.rss);
        gpuprof__json_bytes(b, "rss_delta_bytes", p->has_delta && p->last.host_ok, (double)p->d_rss);
        gpuprof__buf_s(b, "}");
    }
    gpuprof__buf_s(b, "],\n \"largest_growth\":");
    if (m->growth_kind) {
        gpuprof__buf_s(b, "{\"label\":");
        gpuprof__buf_s(b, gpuprof__registry.names[m->growth_label].json);
        gpuprof__buf_printf(b, ",\"bytes\":%lld,\"of\":\"%s\",\"step\":%llu,\"category\":", (long long)m->growth, what[m->growth_kind],
                            (unsigned long long)m->growth_step);
        if (m->growth_cat >= 0) {
            gpuprof__buf_s(b, gpuprof__registry.names[m->cat[m->growth_cat].name_id].json);
            gpuprof__buf_printf(b, ",\"category_bytes\":%lld}", (long long)m->growth_cat_bytes);
        } else gpuprof__buf_s(b, "null,\"category_bytes\":null}");
    } else gpuprof__buf_s(b, "null");
    gpuprof__buf_s(b, "},\n");
}

/* The i-th object of an array, opened with its "name". */
static void gpuprof__json_named(gpuprof__buf *b, int i, uint32_t name_id) {
    gpuprof__buf_s(b, i ? ",{\"name\":" : "{\"name\":");
    gpuprof__buf_s(b, gpuprof__registry.names[name_id].json);
}

/* "peaks": the roofline's peaks and where they came from. */
static void gpuprof__json_peaks(gpuprof__buf *b) {
    gpuprof__buf_s(b, "\"peaks\":{\"precision\":");
    gpuprof__buf_printf(b, "\"%s\",\"flops_per_s\":", gpuprof__prec_name[gpuprof__g.peak.prec]);
    gpuprof__buf_num(b, gpuprof__g.peak.flops > 0 ? gpuprof__g.peak.flops : GPUPROF__NAN);
    gpuprof__buf_s(b, ",\"flops_from\":");
    gpuprof__buf_json_str(b, gpuprof__g.peak.flops_from);
    gpuprof__buf_s(b, ",\"bytes_per_s\":");
    gpuprof__buf_num(b, gpuprof__g.peak.bw > 0 ? gpuprof__g.peak.bw : GPUPROF__NAN);
    gpuprof__buf_s(b, ",\"bytes_from\":");
    gpuprof__buf_json_str(b, gpuprof__g.peak.bw_from);
    gpuprof__buf_s(b, ",\"ridge_flop_per_byte\":");
    gpuprof__buf_num(b, gpuprof__g.peak.flops > 0 && gpuprof__g.peak.bw > 0 ? gpuprof__g.peak.flops / gpuprof__g.peak.bw : GPUPROF__NAN);
}

/* The verdict's "phases": each one's class, share of the step, times. */
static void gpuprof__json_phases(gpuprof__buf *b, const gpuprof__snap *s, const gpuprof__verdict_t *v) {
    char why[512];
    int i;
    gpuprof__buf_s(b, ",\n \"phases\":[");
    for (i = 0; i < v->nph; i++) {
        const gpuprof__phase *p = &v->ph[i];
        gpuprof__buf_s(b, i ? ",\n  {\"name\":" : "\n  {\"name\":");
        gpuprof__buf_s(b, gpuprof__registry.names[p->r->name_id].json);
        gpuprof__buf_printf(b, ",\"class\":\"%s\",\"share\":", gpuprof__kname[p->k]);
        gpuprof__buf_num(b, v->step_ns > 0 ? p->t / v->step_ns : GPUPROF__NAN);
        gpuprof__buf_s(b, ",\"cpu_ns\":");
        gpuprof__buf_num(b, p->cpu);
        gpuprof__buf_s(b, ",\"gpu_ns\":");
        gpuprof__buf_num(b, p->r->gpu.count ? p->gpu : GPUPROF__NAN);
        gpuprof__buf_s(b, ",\"held_ns\":");
        gpuprof__buf_num(b, p->t);
        gpuprof__buf_s(b, ",\"decided_by\":");
        if (p->by) gpuprof__buf_s(b, gpuprof__registry.names[p->by->name_id].json);
        else gpuprof__buf_s(b, "null");
        if (!s->has_gpu && p->k == GPUPROF__K_CPU) snprintf(why, sizeof why, "no GPU in this run: host code");
        else gpuprof__phase_why(why, sizeof why, s, p);
        gpuprof__buf_s(b, ",\"why\":");
        gpuprof__buf_json_str(b, why);
        gpuprof__buf_s(b, "}");
    }
}

/* The kinds of step set apart (docs/summary.md "step_kinds"). */
static void gpuprof__json_kinds(gpuprof__buf *b, const gpuprof__verdict_t *v) {
    int k, i, n = 0;
    for (k = 0; v->snap && k < (int)v->snap->nkinds; k++) {
        const gpuprof__kind *kd = &v->snap->kinds[k];
        double mean = kd->dur / (double)kd->steps;
        if (!v->apart[k]) continue;
        gpuprof__buf_s(b, n++ ? ",{\"ranges\":[" : "{\"ranges\":[");
        for (i = 0; i < v->kv[k].nwith; i++) {
            if (i) gpuprof__buf_s(b, ",");
            gpuprof__buf_json_str(b, gpuprof__name_text(v->kv[k].with[i]->name_id));
        }
        gpuprof__buf_printf(b, "],\"count\":%llu,\"steps\":[", (unsigned long long)kd->steps);
        for (i = 0; i < (int)kd->steps && i < 8; i++) gpuprof__buf_printf(b, "%s%llu", i ? "," : "", (unsigned long long)kd->first[i]);
        gpuprof__buf_s(b, "],\"mean_step_ns\":");
        gpuprof__buf_num(b, mean);
        gpuprof__buf_s(b, ",\"times_typical\":");
        gpuprof__buf_num(b, v->step_ns > 0 ? mean / v->step_ns : GPUPROF__NAN);
        gpuprof__buf_s(b, ",\"extra\":[");
        for (i = 0; i < 3 && v->kv[k].extra[i]; i++) {
            gpuprof__json_named(b, i, v->kv[k].extra[i]->name_id);
            gpuprof__buf_s(b, ",\"ns\":");
            gpuprof__buf_num(b, v->kv[k].extra_ns[i]);
            gpuprof__buf_s(b, "}");
        }
        gpuprof__buf_s(b, "]}");
    }
}

/* What the verdict sets apart from the step's phases: other threads'
   ranges, outlier steps and where their extra time went, time outside
   the steps. */
static void gpuprof__json_apart(gpuprof__buf *b, const gpuprof__verdict_t *v) {
    int i;
    gpuprof__buf_s(b, ",\"other_threads\":[");
    for (i = 0; i < v->nother; i++) {
        gpuprof__json_named(b, i, v->other[i]->name_id);
        gpuprof__buf_printf(b, ",\"calls\":%llu,\"cpu_ns\":", (unsigned long long)v->other[i]->stats.count);
        gpuprof__buf_num(b, v->other[i]->stats.sum / v->steps);
        gpuprof__buf_s(b, ",\"busy_share\":");
        gpuprof__buf_num(b, v->step_ns > 0 ? v->other[i]->stats.sum / v->steps / v->step_ns : GPUPROF__NAN);
        gpuprof__buf_s(b, "}");
    }
    gpuprof__buf_printf(b, "],\"outlier_steps\":{\"count\":%u,\"steps\":[", v->nout);
    for (i = 0; i < (int)v->nout && i < 8; i++) gpuprof__buf_printf(b, "%s%llu", i ? "," : "", (unsigned long long)v->out_steps[i]);
    gpuprof__buf_s(b, "],\"times_median\":");
    gpuprof__buf_num(b, v->nout ? v->out_x : GPUPROF__NAN);
    gpuprof__buf_s(b, ",\"median_step_ns\":");
    gpuprof__buf_num(b, v->nout ? v->out_median : GPUPROF__NAN);
    gpuprof__buf_s(b, ",\"extra\":[");
    for (i = 0; i < 2 && v->extra[i]; i++) {
        gpuprof__json_named(b, i, v->extra[i]->name_id);
        gpuprof__buf_s(b, ",\"ns\":");
        gpuprof__buf_num(b, v->extra_ns[i]);
        gpuprof__buf_s(b, "}");
    }
    gpuprof__buf_s(b, "]},\"step_kinds\":[");
    gpuprof__json_kinds(b, v);
    gpuprof__buf_s(b, "],\"outside_steps\":[");
    for (i = 0; i < v->noutside; i++) {
        gpuprof__json_named(b, i, v->outside[i]->name_id);
        gpuprof__buf_s(b, ",\"before_first_step_ns\":");
        gpuprof__buf_num(b, v->outside[i]->before_ns);
        gpuprof__buf_s(b, ",\"after_last_step_ns\":");
        gpuprof__buf_num(b, v->outside[i]->after_ns);
        gpuprof__buf_s(b, "}");
    }
}

/* "peaks" and "verdict" (docs/summary.md). */
static void gpuprof__json_verdict(gpuprof__buf *b, const gpuprof__snap *s, gpuprof__verdict_t *v) {
    const char *name, *remedy;
    double ns;
    int k, first, side;
    gpuprof__json_peaks(b);
    gpuprof__buf_s(b, "},\n\"verdict\":");
    gpuprof__analyze(s, v);
    if (!v->nph) { gpuprof__buf_s(b, "null,\n"); return; }
    gpuprof__buf_printf(b, "{\"per\":\"%s\",\"step_ns\":", v->per_step ? "step" : "run");
    gpuprof__buf_num(b, v->step_ns);
    gpuprof__buf_printf(b, ",\"class\":\"%s\",\"bound_by\":\"%s\",\"gpu_busy_share\":", gpuprof__kname[v->step_k], v->gpu_step ? "gpu" : "cpu");
    gpuprof__buf_num(b, s->has_gpu && v->step_ns > 0 ? v->gpu_sum / v->step_ns : GPUPROF__NAN);
    for (side = 0; side < 2; side++) {
        const double *by = side ? v->gpu_by : v->cpu_by;
        gpuprof__buf_s(b, side ? ",\"gpu_share_by_class\":{" : ",\"cpu_share_by_class\":{");
        for (k = 1, first = 1; k < GPUPROF__K_COUNT; k++) {
            if (!(by[k] > 0)) continue;
            gpuprof__buf_printf(b, "%s\"%s\":", first ? "" : ",", gpuprof__kname[k]);
            gpuprof__buf_num(b, v->step_ns > 0 ? by[k] / v->step_ns : GPUPROF__NAN);
            first = 0;
        }
        gpuprof__buf_s(b, "}");
    }
    gpuprof__json_phases(b, s, v);
    gpuprof__buf_printf(b, "],\n \"more_phases\":%d,\"container\":", v->more);
    if (v->container) gpuprof__buf_s(b, gpuprof__registry.names[v->container->name_id].json);
    else gpuprof__buf_s(b, "null");
    gpuprof__buf_s(b, ",\"stepper_blocked_share\":");
    gpuprof__buf_num(b, v->blocked >= 0 ? v->blocked : GPUPROF__NAN);
    gpuprof__buf_s(b, ",\"stepper_preempted_share\":");
    gpuprof__buf_num(b, v->blocked >= 0 && v->preempted >= 0 ? v->preempted : GPUPROF__NAN);
    gpuprof__buf_s(b, ",\"stepper_switches_per_step\":");
    if (v->blocked >= 0) {
        gpuprof__buf_s(b, "{\"voluntary\":");
        gpuprof__buf_num(b, v->vol);
        gpuprof__buf_s(b, ",\"involuntary\":");
        gpuprof__buf_num(b, v->invol);
        gpuprof__buf_s(b, "}");
    } else gpuprof__buf_s(b, "null");
    gpuprof__json_apart(b, v);
    gpuprof__buf_s(b, "],\"outside_ns\":");
    gpuprof__buf_num(b, v->per_step ? v->outside_ns : GPUPROF__NAN);
    gpuprof__buf_s(b, ",\"bottleneck\":{\"name\":");
    gpuprof__bottleneck(v, &name, &k, &ns, &remedy);
    if (name) gpuprof__buf_s(b, gpuprof__registry.names[v->ph[v->bottleneck].r->name_id].json);
    else gpuprof__buf_s(b, "null");
    gpuprof__buf_printf(b, ",\"outside_ranges\":%s,\"class\":\"%s\",\"time_ns\":", name ? "false" : "true", gpuprof__kname[k]);
    gpuprof__buf_num(b, ns);
    gpuprof__buf_s(b, ",\"share\":");
    gpuprof__buf_num(b, v->step_ns > 0 ? ns / v->step_ns : GPUPROF__NAN);
    gpuprof__buf_s(b, ",\"waits_for\":");
    if (v->waits_for >= 0) gpuprof__buf_s(b, gpuprof__registry.names[v->ph[v->waits_for].r->name_id].json);
    else gpuprof__buf_s(b, "null");
    gpuprof__buf_s(b, ",\"remedy\":");
    gpuprof__buf_json_str(b, remedy);
    gpuprof__buf_s(b, "}},\n");
}

static void gpuprof__json_analysis(gpuprof__buf *b, const gpuprof__snap *s) {
    gpuprof__verdict_t *v = (gpuprof__verdict_t *)gpuprof__zalloc(sizeof *v);   /* on the heap: the caller's stack may be 16 KiB */
    if (!v) { b->failed = 1; return; }
    gpuprof__json_verdict(b, s, v);
    GPUPROF_FREE(v);
}

#ifdef GPUPROF_CUDA
static void gpuprof__json_opt_name(gpuprof__buf *b, const char *key, const char *text) {
    gpuprof__buf_printf(b, ",\"%s\":", key);
    if (text) gpuprof__buf_json_str(b, text);
    else gpuprof__buf_s(b, "null");
}

/* A kernel's "launch" (SPEC 20): the figures of its most common launch
   shape (sh), and over all its launches the time-weighted SM fill and
   occupancy; null where the device's limits are unknown. */
static void gpuprof__json_launch(gpuprof__buf *b, const gpuprof__kernel *k, int sh) {
    const gpuprof__launch *f = sh >= 0 ? &k->fig[sh] : NULL;
    const uint32_t *x = sh >= 0 ? k->shape[sh] : NULL;
    if (!f || f->blocks_per_sm < 0) { gpuprof__buf_s(b, ",\"launch\":null"); return; }
    gpuprof__buf_printf(b, ",\"launch\":{\"blocks\":%llu,\"threads_per_block\":%llu,\"registers_per_thread\":%u,\"shared_memory_bytes\":%llu",
                        (unsigned long long)x[0] * x[1] * x[2], (unsigned long long)x[3] * x[4] * x[5], x[6], (unsigned long long)x[7] + x[8]);
    gpuprof__buf_printf(b, ",\"blocks_per_sm\":%d,\"occupancy\":", f->blocks_per_sm);
    gpuprof__buf_num(b, f->occupancy);
    gpuprof__buf_printf(b, ",\"limiter\":\"%s\",\"sm_fill\":", gpuprof__lim_name[f->limiter]);
    gpuprof__buf_num(b, f->sm_fill);
    gpuprof__buf_s(b, ",\"waves\":");
    gpuprof__buf_num(b, f->waves);
    gpuprof__buf_s(b, ",\"est_achieved_occupancy\":");
    gpuprof__buf_num(b, f->est_achieved);
    gpuprof__buf_s(b, ",\"time_weighted\":{\"sm_fill\":");
    gpuprof__buf_num(b, k->known_ns > 0 ? k->fill_ns / k->known_ns : GPUPROF__NAN);
    gpuprof__buf_s(b, ",\"occupancy\":");
    gpuprof__buf_num(b, k->known_ns > 0 ? k->occ_ns / k->known_ns : GPUPROF__NAN);
    gpuprof__buf_s(b, ",\"est_achieved_occupancy\":");
    gpuprof__buf_num(b, k->known_ns > 0 ? k->est_ns / k->known_ns : GPUPROF__NAN);
    gpuprof__buf_s(b, ",\"most_sms_idle_share\":");
    gpuprof__buf_num(b, k->known_ns > 0 ? k->idle_ns / k->known_ns : GPUPROF__NAN);
    gpuprof__buf_s(b, "}}");
}

/* "capture", "kernels", "transfers", "syncs" (docs/summary.md). */
static void gpuprof__json_kernels(gpuprof__buf *b) {
    gpuprof__kernel **v;
    gpuprof_stats per_step, busy;
    uint32_t n = 0, i, d, h;
    double total = 0;
    int first;
    if (!gpuprof__kc.asked) { gpuprof__buf_s(b, "\"capture\":null,\n\"kernels\":[],\n\"transfers\":[],\n\"syncs\":[],\n"); return; }
    pthread_mutex_lock(&gpuprof__kc_mu);
    gpuprof__buf_printf(b, "\"capture\":{\"on\":%s", GPUPROF__LD(&gpuprof__kc.live) ? "true" : "false");
    gpuprof__json_opt_name(b, "library", gpuprof__kc.library[0] ? gpuprof__kc.library : NULL);
    gpuprof__buf_printf(b, ",\"version\":%u,\"records\":%llu,\"dropped\":%llu,\"unattributed\":%llu,\"bad_timestamps\":%llu,\"waiting\":%u,"
                           "\"own\":%llu,\"gpu_from_kernels\":%s,\"spans_skipped\":%llu,\"spans_late\":%llu,\"kernels_counted\":%llu,\"short_kernel_share\":",
                        gpuprof__kc.version, (unsigned long long)gpuprof__kc.records, (unsigned long long)gpuprof__kc.dropped,
                        (unsigned long long)gpuprof__kc.unattributed, (unsigned long long)gpuprof__kc.bad_times, gpuprof__kc.npending,
                        (unsigned long long)gpuprof__kc.own, gpuprof__gpu.from_kernels ? "true" : "false",
                        (unsigned long long)GPUPROF__LD(&gpuprof__kc.spans_skipped), (unsigned long long)gpuprof__kc.spans_late,
                        (unsigned long long)gpuprof__kc.kernels_counted);
    gpuprof__buf_num(b, gpuprof__kc.kernels_counted ? (double)gpuprof__kc.short_counted / (double)gpuprof__kc.kernels_counted : GPUPROF__NAN);
    gpuprof__kc_steps(&per_step, &busy);
    gpuprof__buf_s(b, ",\"kernels_per_step\":");
    if (per_step.count) { gpuprof__buf_s(b, "{"); gpuprof__json_stats(b, &per_step, ""); gpuprof__buf_s(b, "}"); }
    else gpuprof__buf_s(b, "null");
    gpuprof__buf_s(b, ",\"gpu_busy_percent_per_step\":");
    if (busy.count) { gpuprof__buf_s(b, "{"); gpuprof__json_stats(b, &busy, ""); gpuprof__buf_s(b, "}"); }
    else gpuprof__buf_s(b, "null");
    gpuprof__json_opt_name(b, "status", gpuprof__kc.status[0] ? gpuprof__kc.status : NULL);
    gpuprof__buf_s(b, "},\n\"kernels\":[");
    v = gpuprof__kc.map ? gpuprof__kc_sorted(&n, &total) : NULL;
    for (i = 0; i < n; i++) {
        gpuprof__kernel *k = v[i];
        int sh = gpuprof__ktop_best(&k->shapes);
        gpuprof__buf_s(b, i ? ",\n {\"name\":" : "\n {\"name\":");
        gpuprof__buf_s(b, k->json);
        gpuprof__buf_s(b, ",");
        gpuprof__json_stats(b, &k->stats, "_ns");
        gpuprof__buf_s(b, ",\"share\":");
        gpuprof__buf_num(b, total > 0 ? k->stats.sum / total : 0.0);
        if (sh >= 0) gpuprof__buf_printf(b, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u]", k->shape[sh][0], k->shape[sh][1], k->shape[sh][2],
                                         k->shape[sh][3], k->shape[sh][4], k->shape[sh][5]);
        else gpuprof__buf_s(b, ",\"grid\":null,\"block\":null");
        gpuprof__json_opt_name(b, "range", gpuprof__kc_range(&k->ranges));
        gpuprof__json_launch(b, k, sh);
        gpuprof__buf_s(b, k->tensor == 1 ? ",\"tensor_cores\":true}" : k->tensor == 0 ? ",\"tensor_cores\":false}" : ",\"tensor_cores\":null}");
    }
    GPUPROF_FREE(v);
    gpuprof__buf_s(b, "],\n\"transfers\":[");
    for (d = 0, first = 1; d < 5; d++) for (h = 0; h < 3; h++) {
        const gpuprof__kxfer *x = &gpuprof__kc.xfer[d][h];
        if (!x->count) continue;
        gpuprof__buf_printf(b, "%s{\"kind\":\"%s\",\"host_memory\":", first ? "\n " : ",\n ", gpuprof__kc_dir[d]);
        first = 0;
        if (gpuprof__kc_host[h]) gpuprof__buf_printf(b, "\"%s\"", gpuprof__kc_host[h]);
        else gpuprof__buf_s(b, "null");
        gpuprof__buf_printf(b, ",\"count\":%llu,\"bytes\":%llu,\"sum_ns\":%llu,\"bytes_per_s\":", (unsigned long long)x->count,
                            (unsigned long long)x->bytes, (unsigned long long)x->sum_ns);
        gpuprof__buf_num(b, x->sum_ns ? (double)x->bytes * 1e9 / (double)x->sum_ns : GPUPROF__NAN);
        gpuprof__json_opt_name(b, "range", gpuprof__kc_range(&x->ranges));
        gpuprof__buf_s(b, "}");
    }
    gpuprof__buf_s(b, "],\n\"syncs\":[");
    for (d = 0, first = 1; d < 4; d++) {
        const gpuprof__kxfer *x = &gpuprof__kc.sync[d];
        if (!x->count) continue;
        gpuprof__buf_printf(b, "%s{\"kind\":\"%s\",\"count\":%llu,\"sum_ns\":%llu", first ? "\n " : ",\n ", gpuprof__kc_sync[d],
                            (unsigned long long)x->count, (unsigned long long)x->sum_ns);
        first = 0;
        gpuprof__json_opt_name(b, "range", gpuprof__kc_range(&x->ranges));
        gpuprof__buf_s(b, "}");
    }
    gpuprof__buf_s(b, "],\n");
    pthread_mutex_unlock(&gpuprof__kc_mu);
}
#else
static void gpuprof__json_kernels(gpuprof__buf *b) { gpuprof__buf_s(b, "\"capture\":null,\n\"kernels\":[],\n\"transfers\":[],\n\"syncs\":[],\n"); }
#endif

/* steps.over_time (docs/summary.md): the points of the run over time and its drift. */
static void gpuprof__json_series(gpuprof__buf *b, const gpuprof__snap *s) {
    uint32_t i, k;
    gpuprof__drift d;
    char cause[200];
    if (s->series_json) { gpuprof__buf_put(b, s->series_json, s->series_json_len); return; }
    gpuprof__buf_printf(b, "\n \"over_time\":{\"steps_per_point\":%u,\"ranges\":[", s->npoints ? s->per_point : 0u);
    for (k = 0; k < s->nph; k++) gpuprof__buf_printf(b, "%s%s", k ? "," : "", gpuprof__registry.names[s->ph_name[k]].json);
    gpuprof__buf_s(b, "],\"points\":[");
    for (i = 0; i < s->npoints; i++) {
        const gpuprof__point *p = &s->series[i];
        gpuprof__buf_printf(b, "%s[%llu,%u,", i ? "," : "", (unsigned long long)p->step, p->n);
        gpuprof__buf_num(b, p->min);
        gpuprof__buf_s(b, ",");
        gpuprof__buf_num(b, p->sum / p->n);
        gpuprof__buf_s(b, ",");
        gpuprof__buf_num(b, p->max);
        for (k = 0; k < s->nph; k++) { gpuprof__buf_s(b, ","); gpuprof__buf_num(b, p->ph[k] / p->n); }
        gpuprof__buf_s(b, "]");
    }
    gpuprof__buf_s(b, "],\"drift\":");
    gpuprof__drift_of(s, &d);
    if (!d.judged) { gpuprof__buf_s(b, "null}"); return; }
    gpuprof__buf_printf(b, "{\"drifted\":%s,\"typical_steps\":%llu,\"start_steps_left_out\":%llu,\"first_tenth_ns\":", d.drifted ? "true" : "false",
                        (unsigned long long)d.typical, (unsigned long long)d.skipped);
    gpuprof__buf_num(b, d.first);
    gpuprof__buf_s(b, ",\"last_tenth_ns\":");
    gpuprof__buf_num(b, d.last);
    gpuprof__buf_s(b, ",\"change\":");
    gpuprof__buf_num(b, (d.last - d.first) / d.first);
    gpuprof__buf_s(b, ",\"range\":");
    gpuprof__buf_s(b, d.slot >= 0 ? gpuprof__registry.names[s->ph_name[d.slot]].json : "null");
    gpuprof__buf_s(b, ",\"range_change_ns\":");
    gpuprof__buf_num(b, d.slot >= 0 ? d.slot_change : GPUPROF__NAN);
    gpuprof__dev_drift_cause(cause, sizeof cause, &d);
    gpuprof__buf_s(b, ",\"device_cause\":");
    if (cause[0]) gpuprof__buf_json_str(b, cause);
    else gpuprof__buf_s(b, "null");
    gpuprof__buf_s(b, "}}");
}

/* steps.captures (docs/summary.md): the slow steps captured. */
static void gpuprof__json_captures(gpuprof__buf *b) {
    uint32_t k;
    unsigned i, n = GPUPROF__LDA(&gpuprof__bg.ncap);
    gpuprof__buf_s(b, ",\n \"captures\":[");
    for (i = 0; i < n; i++) {
        const gpuprof__capture *c = &gpuprof__bg.cap[i];
        int state = GPUPROF__LDA(&c->state);
        gpuprof__buf_printf(b, "%s{\"step\":%llu,\"ns\":", i ? "," : "", (unsigned long long)c->step);
        gpuprof__buf_num(b, c->ns);
        gpuprof__buf_s(b, ",\"median_ns\":");
        gpuprof__buf_num(b, c->median);
        gpuprof__buf_s(b, ",\"times_median\":");
        gpuprof__buf_num(b, c->ns / c->median);
        gpuprof__buf_printf(b, ",\"kind\":{\"most_common\":%s,\"with\":[", c->common ? "true" : "false");
        for (k = 0; k < c->nwith; k++) gpuprof__buf_printf(b, "%s%s", k ? "," : "", gpuprof__registry.names[c->with[k]].json);
        gpuprof__buf_s(b, "]},\"file\":");
        if (state == 1) gpuprof__buf_json_str(b, c->file);
        else gpuprof__buf_s(b, "null");
        gpuprof__buf_printf(b, ",\"written\":%s}", state == 1 ? "true" : "false");
    }
    gpuprof__buf_s(b, "]");
}

/* The summary's "trace": the streamed file (its parts) or the flight recorder. */
static void gpuprof__json_trace(gpuprof__buf *b, const gpuprof__snap *s) {
    gpuprof__buf_s(b, "\"trace\":{\"path\":");
    if (gpuprof__g.trace_path) gpuprof__buf_json_str(b, gpuprof__g.trace_path);
    else gpuprof__buf_s(b, "null");
    gpuprof__buf_printf(b, ",\"events\":%llu,\"in_buffers\":%llu,\"dropped\":%llu,\"dropped_buffers_full\":%llu,\"flight_recorder_mb\":%d,\"fell_out\":%llu,\"error\":",
                        (unsigned long long)s->trace_written, (unsigned long long)s->trace_buffered,
                        (unsigned long long)s->dropped, (unsigned long long)s->dropped_full,
                        gpuprof__trace.mode == GPUPROF__TRACE_RING ? gpuprof__g.cfg.trace_ring_mb : 0,
                        (unsigned long long)GPUPROF__LD(&gpuprof__trace.ring_fell_out));
    if (GPUPROF__LDA(&gpuprof__trace.out.failed)) gpuprof__buf_json_str(b, gpuprof__trace.out.error);
    else gpuprof__buf_s(b, "null");
    {   /* the parts on disk (GPUPROF_TRACE_MAX_MB), oldest first; one file: [path] */
        unsigned n = gpuprof__g.trace_path && gpuprof__trace.mode == GPUPROF__TRACE_STREAM ? GPUPROF__LD(&gpuprof__trace.nparts) : 0, k;
        unsigned first = gpuprof__part_first(n);
        char *part = n ? (char *)gpuprof__alloc(GPUPROF__PATH_MAX + 104) : NULL;     /* on the heap: the caller's stack may be 16 KiB */
        gpuprof__buf_printf(b, ",\"parts_written\":%u,\"parts\":[", n);
        if (n && !part) b->failed = 1;
        for (k = first; part && k <= n; k++) {
            gpuprof__part_name(part, GPUPROF__PATH_MAX + 104, k);
            if (k > first) gpuprof__buf_s(b, ",");
            gpuprof__buf_json_str(b, part);
        }
        gpuprof__buf_s(b, "]");
        GPUPROF_FREE(part);
    }
}

/* The summary's "counters" entries. */
static void gpuprof__json_counters(gpuprof__buf *b, const gpuprof__snap *s) {
    uint32_t i;
    for (i = 0; i < s->ncounters; i++) {
        const gpuprof__row *r = &s->counters[i];
        gpuprof__buf_s(b, i ? ",\n " : "\n ");
        gpuprof__buf_s(b, "{\"name\":");
        gpuprof__buf_s(b, gpuprof__registry.names[r->name_id].json);
        gpuprof__buf_s(b, ",");
        gpuprof__json_stats_q(b, &r->stats, "", r->q_over ? r->q : NULL);
        gpuprof__buf_s(b, ",\"quantiles_of\":");
        if (r->q_over) gpuprof__buf_printf(b, "%llu", (unsigned long long)r->q_over);
        else gpuprof__buf_s(b, "null");
        gpuprof__buf_printf(b, ",\"rejected\":%llu,\"excluded\":%llu,\"last\":", (unsigned long long)r->stats.rejected,
                            (unsigned long long)r->excluded);
        gpuprof__buf_num(b, r->last);
        gpuprof__buf_s(b, "}");
    }
}

/* The run's place among several processes (SPEC 10): world size, local
   rank (null when no launcher says), host, the variable the rank came
   from, elastic restarts, and the wall-clock time of the trace's zero. */
static void gpuprof__json_ranks(gpuprof__buf *b) {
    if (gpuprof__run.world_size > 0) gpuprof__buf_printf(b, ",\"world_size\":%d", gpuprof__run.world_size);
    else gpuprof__buf_s(b, ",\"world_size\":null");
    if (gpuprof__run.local_rank >= 0) gpuprof__buf_printf(b, ",\"local_rank\":%d", gpuprof__run.local_rank);
    else gpuprof__buf_s(b, ",\"local_rank\":null");
    gpuprof__buf_s(b, ",\"host\":");
    gpuprof__buf_json_str(b, gpuprof__run.host);
    gpuprof__buf_s(b, ",\"rank_source\":");
    if (gpuprof__run.rank_source) gpuprof__buf_json_str(b, gpuprof__run.rank_source);
    else gpuprof__buf_s(b, "null");
    if (gpuprof__run.restarts >= 0) gpuprof__buf_printf(b, ",\"restarts\":%d", gpuprof__run.restarts);
    else gpuprof__buf_s(b, ",\"restarts\":null");
    gpuprof__buf_printf(b, ",\"t0_realtime_ns\":%llu", (unsigned long long)gpuprof__run.t0_realtime_ns);
}

static void gpuprof__summary_json(gpuprof__buf *b, gpuprof__snap *s) {
    uint32_t i;
    gpuprof__buf_s(b, "{\n\"schema\":\"gpuprof-summary\",\"schema_version\":4,\"tool_version\":\"" GPUPROF_VERSION "\",");
    /* complete: written at the session's end; else a checkpoint (n) or a call of gpuprof_write_summary mid-run */
    gpuprof__buf_printf(b, "\"complete\":%s,\"checkpoint\":", gpuprof__g.state == GPUPROF__STOPPING ? "true" : "false");
    if (s->checkpoint) gpuprof__buf_printf(b, "%u", s->checkpoint);
    else gpuprof__buf_s(b, "null");
    gpuprof__buf_s(b, ",\n\"run\":{\"process\":");
    gpuprof__buf_json_str(b, gpuprof__g.process_name);
    gpuprof__buf_printf(b, ",\"pid\":%d,\"rank\":%d,\"threads\":%u,\"wall_ns\":%llu,\"clock\":\"%s\"", gpuprof__run.pid, gpuprof__run.rank,
                        gpuprof__threads.nthreads, (unsigned long long)gpuprof__wall_ns(),
                        gpuprof__clock_name(1));
    gpuprof__json_ranks(b);
    gpuprof__buf_s(b, "},\n");
#ifdef GPUPROF_CUDA
    {
        gpuprof_stats idle;
        gpuprof__buf_printf(b, "\"device\":{\"cuda\":true,\"available\":%s,\"index\":%d,\"name\":", gpuprof__gpu.available ? "true" : "false", gpuprof__gpu.dev0);
        if (gpuprof__gpu.available) gpuprof__buf_json_str(b, gpuprof__gpu.name);
        else gpuprof__buf_s(b, "null");
        gpuprof__buf_printf(b, ",\"devices\":%d,\"runtime_version\":%d,\"driver_version\":%d,\"status\":", gpuprof__gpu.ndev, gpuprof__gpu.runtime, gpuprof__gpu.driver);
        if (gpuprof__gpu.status[0]) gpuprof__buf_json_str(b, gpuprof__gpu.status);
        else gpuprof__buf_s(b, "null");
        gpuprof__buf_printf(b, "},\n\"gpu\":{\"on\":%s,\"source\":\"%s\",\"ranges_timed\":%llu,\"skipped_capture\":%llu,\"skipped_backlog\":%llu,\"skipped_device\":%llu,\"lost\":%llu,"
                               "\"events_created\":%llu,\"anchors\":%llu,\"anchor_uncertainty_ns\":",
                            GPUPROF__LD(&gpuprof__gpu.on) ? "true" : "false", gpuprof__gpu.from_kernels ? "kernels" : "events", (unsigned long long)gpuprof__gpu.timed, (unsigned long long)gpuprof__gpu.skipped_capture,
                            (unsigned long long)gpuprof__gpu.skipped_backlog, (unsigned long long)gpuprof__gpu.skipped_device, (unsigned long long)gpuprof__gpu.lost,
                            (unsigned long long)gpuprof__gpu.events_created, (unsigned long long)gpuprof__gpu.anchors);
        gpuprof__buf_num(b, gpuprof__gpu.anchor_uncertainty_ns);
        gpuprof__buf_s(b, ",\"clock_rate\":");
        gpuprof__buf_num(b, gpuprof__gpu.anchor[gpuprof__gpu.dev0].n ? gpuprof__gpu.anchor[gpuprof__gpu.dev0].rate : 1.0);
        gpuprof__buf_s(b, ",\"gpu_self_ns\":");
        gpuprof__buf_num(b, s->gpu_ns);
        gpuprof__gpu_idle(&idle);
        gpuprof__buf_s(b, ",\"idle_percent_per_step\":");
        if (idle.count) { gpuprof__buf_s(b, "{"); gpuprof__json_stats(b, &idle, ""); gpuprof__buf_s(b, "}"); }
        else gpuprof__buf_s(b, "null");
        gpuprof__buf_s(b, "},\n\"config\":{\"warmup\":");
    }
#else
    gpuprof__buf_s(b, "\"device\":{\"cuda\":false,\"available\":false,\"name\":null},\n\"gpu\":null,\n\"config\":{\"warmup\":");
#endif
    gpuprof__buf_printf(b, "%d,\"schedule\":", gpuprof__g.cfg.warmup);
    if (gpuprof__g.sched_on)
        gpuprof__buf_printf(b, "{\"skip_first\":%d,\"wait\":%d,\"warmup\":%d,\"active\":%d,\"repeat\":%d}", gpuprof__g.sched_skip,
                            gpuprof__g.sched_wait, gpuprof__g.sched_warmup, gpuprof__g.sched_active, gpuprof__g.sched_repeat);
    else gpuprof__buf_s(b, "null");
    gpuprof__buf_printf(b, ",\"max_names\":%d,\"max_nodes\":%d,\"trace_buffer_mb\":%d,\"trace_ring_mb\":%d,\"max_depth\":%d,\"collector\":%s},\n",
                        gpuprof__g.cfg.max_names, gpuprof__g.cfg.max_nodes, gpuprof__g.cfg.trace_buffer_mb,
                        gpuprof__g.cfg.trace_ring_mb > 0 ? gpuprof__g.cfg.trace_ring_mb : 0, GPUPROF_MAX_DEPTH, gpuprof__g.cfg.collector ? "true" : "false");
    gpuprof__buf_printf(b, "\"steps\":{\"seen\":%s,\"counted\":%llu,\"excluded\":%llu,\"not_recorded\":%llu,\"time\":{",
                        gpuprof__steps.seen ? "true" : "false", (unsigned long long)gpuprof__steps.counted,
                        (unsigned long long)gpuprof__steps.excluded, (unsigned long long)gpuprof__steps.unrecorded);
    gpuprof__json_stats(b, &gpuprof__steps.stats, "_ns");
    gpuprof__buf_s(b, "},\"typical_time\":");       /* the steps of the most common kind (the live metrics' step_seconds) */
    if (s->typical >= 0) {
        gpuprof__buf_s(b, "{");
        gpuprof__json_stats(b, &s->kinds[s->typical].durs, "_ns");
        gpuprof__buf_s(b, "},");
    } else gpuprof__buf_s(b, "null,");
    gpuprof__json_series(b, s);
    gpuprof__json_captures(b);
    gpuprof__buf_s(b, "},\n");
    gpuprof__json_analysis(b, s);
    gpuprof__json_kernels(b);
    gpuprof__summary_samples(b);
    gpuprof__json_device(b, s);
    gpuprof__buf_s(b, "\"profiled_ns\":");
    gpuprof__buf_num(b, s->profiled_ns);
    gpuprof__buf_s(b, ",\n\"ranges\":[");
    for (i = 0; i < s->nflat; i++) {
        gpuprof__buf_s(b, i ? ",\n " : "\n ");
        gpuprof__json_range(b, s->flatp[i], s->profiled_ns);
        gpuprof__buf_s(b, "}");
    }
    gpuprof__buf_s(b, "],\n\"tree\":[");
    for (i = 0; i < s->norder; i++) {
        const gpuprof__row *r = &s->tree[s->order[i]];
        gpuprof__buf_s(b, i ? ",\n " : "\n ");
        gpuprof__json_range(b, r, s->profiled_ns);
        gpuprof__buf_printf(b, ",\"depth\":%u,\"id\":%u,\"parent\":%d,\"other_thread\":%s}", r->depth, s->order[i], r->parent,
                            r->other ? "true" : "false");
    }
    gpuprof__buf_s(b, "],\n\"counters\":[");
    gpuprof__json_counters(b, s);
    gpuprof__buf_s(b, "],\n");
    if (s->mem) gpuprof__json_mem(b, s->mem);
    else gpuprof__buf_s(b, "\"memory\":null,\n");
    gpuprof__buf_printf(b, "\"marks\":%llu,\n", (unsigned long long)s->marks);
    gpuprof__json_trace(b, s);
    gpuprof__buf_s(b, "},\n\"warnings\":{");
    for (i = 0; i < GPUPROF__W_COUNT; i++)
        gpuprof__buf_printf(b, "%s\"%s\":%llu", i ? "," : "", gpuprof__warn_key[i], (unsigned long long)GPUPROF__LD(&gpuprof__g.warn_count[i]));
    gpuprof__buf_s(b, "}\n}\n");
}

/* ----------------------------------------------------------------------
   Live metrics (SPEC 19): the summary's figures in Prometheus's text
   format (0.0.4), for node_exporter's textfile collector, made from the
   same snapshot as the summary at each checkpoint and at exit. Base units:
   seconds, bytes, hertz, watts, celsius, ratios 0-1. Every series carries
   rank and job.
   ---------------------------------------------------------------------- */
#if GPUPROF__METRICS

/* Text as a label value takes it: backslash, quote and newline escaped,
   bytes that are not UTF-8 as U+FFFD (one such byte and the scrape would
   drop the whole file). */
static void gpuprof__metrics_str(gpuprof__buf *b, const char *s) {
    char tmp[256];
    size_t n = 0, i = 0, len = s ? strlen(s) : 0, k;
    uint32_t cp;
    while (i < len) {
        if (n + 8 >= sizeof tmp) { gpuprof__buf_put(b, tmp, n); n = 0; }
        if (s[i] == '\\' || s[i] == '"') { tmp[n++] = '\\'; tmp[n++] = s[i++]; }
        else if (s[i] == '\n') { tmp[n++] = '\\'; tmp[n++] = 'n'; i++; }
        else if ((k = gpuprof__utf8(s + i, len - i, &cp)) != 0) { memcpy(tmp + n, s + i, k); n += k; i += k; }
        else { memcpy(tmp + n, "\xef\xbf\xbd", 3); n += 3; i++; }
    }
    gpuprof__buf_put(b, tmp, n);
}

/* A sample's value: integers exactly, others to 15 digits (a Unix time to
   the microsecond), NaN and Inf as the format spells them. */
static void gpuprof__metrics_val(gpuprof__buf *b, double v) {
    char tmp[40];
    if (gpuprof__isnan(v)) { gpuprof__buf_s(b, "NaN"); return; }
    if (!gpuprof__finite(v)) { gpuprof__buf_s(b, v > 0 ? "+Inf" : "-Inf"); return; }
    if (v > -9e15 && v < 9e15 && v == (double)(int64_t)v) snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    else gpuprof__fmt(tmp, sizeof tmp, "%.15g", v);
    gpuprof__buf_s(b, tmp);
}

/* A family's # HELP and # TYPE lines. */
static void gpuprof__metrics_family(gpuprof__buf *b, const char *name, const char *type, const char *help) {
    gpuprof__buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample: name{rank="..",job=".."[,key="val"]} value. `base` holds the
   rank and job labels, escaped already. */
static void gpuprof__metrics_at(gpuprof__buf *b, const char *name, const char *base, const char *key, const char *val, double v) {
    gpuprof__buf_s(b, name);
    gpuprof__buf_s(b, "{");
    gpuprof__buf_s(b, base);
    if (key) {
        gpuprof__buf_printf(b, ",%s=\"", key);
        gpuprof__metrics_str(b, val);
        gpuprof__buf_s(b, "\"");
    }
    gpuprof__buf_s(b, "} ");
    gpuprof__metrics_val(b, v);
    gpuprof__buf_s(b, "\n");
}

/* The job label: GPUPROF_JOB, the scheduler's job id, the elastic run's id,
   else the process name. */
static const char *gpuprof__metrics_job(void) {
    static const char *const vars[] = { "GPUPROF_JOB", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID" };
    size_t i;
    for (i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return v;
    }
    return gpuprof__g.process_name;
}

/* A tree row's path, outermost first, joined by '/' (the CPU samples'
   by_range names them so). */
static void gpuprof__metrics_path(char *out, size_t n, const gpuprof__snap *s, uint32_t row) {
    uint32_t chain[GPUPROF_MAX_DEPTH + 1], depth = 0, i;
    size_t o = 0;
    int32_t r = (int32_t)row;
    while (r >= 0 && depth <= GPUPROF_MAX_DEPTH) { chain[depth++] = (uint32_t)r; r = s->tree[r].parent; }
    out[0] = 0;
    for (i = depth; i-- > 0 && o + 1 < n;)
        o += (size_t)snprintf(out + o, n - o, "%s%s", i + 1 < depth ? "/" : "", gpuprof__registry.names[s->tree[chain[i]].name_id].text);
}

typedef struct gpuprof__metrics_range { char *path; double ns, calls, gpu_ns; int gpu; } gpuprof__metrics_range;

static int gpuprof__metrics_range_cmp(const void *a, const void *b) {
    return strcmp(((const gpuprof__metrics_range *)a)->path, ((const gpuprof__metrics_range *)b)->path);
}

/* The ranges' totals by path: the tree's rows, those of one path on several
   threads added up (a label set names one series). */
static void gpuprof__metrics_ranges(gpuprof__buf *b, const gpuprof__snap *s, const char *base) {
    static const char *const fam[3][2] = {
        { "gpuprof_range_seconds_total", "Time inside the range, its nested ranges included, over its counted calls (seconds)." },
        { "gpuprof_range_calls_total", "Counted calls of the range (warm-up and excluded steps left out)." },
        { "gpuprof_range_gpu_seconds_total", "GPU time of the range's counted calls (seconds): CUDA events, or its kernels' span (GPUPROF_GPU=kernels)." } };
    gpuprof__metrics_range *r = s->ntree ? (gpuprof__metrics_range *)gpuprof__zalloc(s->ntree * sizeof *r) : NULL;
    char *path = s->ntree ? (char *)gpuprof__alloc(4096) : NULL;       /* on the heap: the caller's stack may be 16 KiB */
    uint32_t i, n = 0, k;
    int f, any_gpu = 0;
    if (s->ntree && (!r || !path)) { GPUPROF_FREE(r); GPUPROF_FREE(path); b->failed = 1; return; }
    for (i = 0; i < s->ntree; i++) {
        const gpuprof__row *t = &s->tree[i];
        if (!t->stats.count && !t->gpu.count) continue;
        gpuprof__metrics_path(path, 4096, s, i);
        if (!(r[n].path = gpuprof__strdup(path))) { b->failed = 1; break; }
        r[n].ns = t->stats.sum;
        r[n].calls = (double)t->stats.count;
        r[n].gpu_ns = t->gpu.sum;
        r[n].gpu = t->gpu.count > 0;
        any_gpu |= r[n].gpu;
        n++;
    }
    if (n) qsort(r, n, sizeof *r, gpuprof__metrics_range_cmp);
    for (i = 0, k = 0; i < n; i++) {           /* one entry per path */
        if (k && strcmp(r[k - 1].path, r[i].path) == 0) {
            r[k - 1].ns += r[i].ns; r[k - 1].calls += r[i].calls; r[k - 1].gpu_ns += r[i].gpu_ns; r[k - 1].gpu |= r[i].gpu;
            GPUPROF_FREE(r[i].path);
        } else r[k++] = r[i];
    }
    for (f = 0; f < 3 && k; f++) {
        if (f == 2 && !any_gpu) break;
        gpuprof__metrics_family(b, fam[f][0], "counter", fam[f][1]);
        for (i = 0; i < k; i++)
            if (f < 2 || r[i].gpu) gpuprof__metrics_at(b, fam[f][0], base, "range", r[i].path, f == 0 ? r[i].ns / 1e9 : f == 1 ? r[i].calls : r[i].gpu_ns / 1e9);
    }
    for (i = 0; i < k; i++) GPUPROF_FREE(r[i].path);
    GPUPROF_FREE(r);
    GPUPROF_FREE(path);
}

#if GPUPROF__DEVICE
/* The device's gauges (SPEC 17 telemetry): each counter's mean over the
   last point of the device over the run (device_over_time's last point),
   in base units. */
static void gpuprof__metrics_device(gpuprof__buf *b, const char *base) {
    double v[GPUPROF__DEV_N];
    char name[96], help[160], gpu[16];
    unsigned index;
    int k;
    if (!gpuprof__dev_latest(&index, v)) return;
    snprintf(gpu, sizeof gpu, "%u", index);
    for (k = 0; k < GPUPROF__DEV_N; k++) {
        if (!gpuprof__finite(v[k])) continue;
        snprintf(name, sizeof name, "gpuprof_device_%s", gpuprof__dev_info[k].metric);
        snprintf(help, sizeof help, "The GPU's %s (NVML), the mean of the latest point of the device over the run.", gpuprof__dev_info[k].name);
        gpuprof__metrics_family(b, name, "gauge", help);
        gpuprof__metrics_at(b, name, base, "gpu", gpu, v[k] * gpuprof__dev_info[k].si);
    }
}
#endif

/* gpuprof_info, the steps, the phases' shares (the verdict's), counters,
   memory (with GPUPROF_MEM snapshots), drops, and whether the run ended. */
static void gpuprof__metrics_run(gpuprof__buf *b, const gpuprof__snap *s, const char *base) {
    static const double qs[3] = { 0.5, 0.9, 0.99 };
    static const char *const qn[3] = { "0.5", "0.9", "0.99" };
    const gpuprof_stats *ty = s->typical >= 0 ? &s->kinds[s->typical].durs : NULL;
    gpuprof__verdict_t *v = (gpuprof__verdict_t *)gpuprof__zalloc(sizeof *v);    /* on the heap: the caller's stack may be 16 KiB */
    char ws[16];
    int i;
    snprintf(ws, sizeof ws, "%d", gpuprof__run.world_size > 0 ? gpuprof__run.world_size : 1);
    gpuprof__metrics_family(b, "gpuprof_info", "gauge", "The profiled process: gpuprof's version, the process, its host, the job's world size.");
    gpuprof__buf_printf(b, "gpuprof_info{%s,version=\"" GPUPROF_VERSION "\",process=\"", base);
    gpuprof__metrics_str(b, gpuprof__g.process_name);
    gpuprof__buf_s(b, "\",host=\"");
    gpuprof__metrics_str(b, gpuprof__run.host);
    gpuprof__buf_printf(b, "\",world_size=\"%s\"} 1\n", ws);
    gpuprof__metrics_family(b, "gpuprof_steps_total", "counter", "Counted steps (GPUPROF_STEP, warm-up and excluded steps left out).");
    gpuprof__metrics_at(b, "gpuprof_steps_total", base, NULL, NULL, (double)gpuprof__steps.counted);
    gpuprof__metrics_family(b, "gpuprof_step_seconds", "summary", "Step time of the typical steps (the most common kind: the same ranges ran), seconds.");
    for (i = 0; i < 3; i++) gpuprof__metrics_at(b, "gpuprof_step_seconds", base, "quantile", qn[i], ty && ty->count ? gpuprof_stats_quantile(ty, qs[i]) / 1e9 : GPUPROF__NAN);
    gpuprof__metrics_at(b, "gpuprof_step_seconds_sum", base, NULL, NULL, ty ? ty->sum / 1e9 : 0.0);
    gpuprof__metrics_at(b, "gpuprof_step_seconds_count", base, NULL, NULL, ty ? (double)ty->count : 0.0);
    gpuprof__metrics_ranges(b, s, base);
    if (!v) { b->failed = 1; return; }
    gpuprof__analyze(s, v);
    if (v->nph) gpuprof__metrics_family(b, "gpuprof_phase_share", "gauge", "The verdict's share of the step held by each phase (an outermost range), 0-1.");
    for (i = 0; i < v->nph; i++)
        gpuprof__metrics_at(b, "gpuprof_phase_share", base, "range", gpuprof__registry.names[v->ph[i].r->name_id].text, v->step_ns > 0 ? v->ph[i].t / v->step_ns : GPUPROF__NAN);
    if (s->ncounters) gpuprof__metrics_family(b, "gpuprof_value_last", "gauge", "The last value of each GPUPROF_COUNTER.");
    for (i = 0; i < (int)s->ncounters; i++) gpuprof__metrics_at(b, "gpuprof_value_last", base, "name", gpuprof__registry.names[s->counters[i].name_id].text, s->counters[i].last);
    if (s->mem) {
        const gpuprof__memfig *last = &s->mem->prev;
        gpuprof__metrics_family(b, "gpuprof_memory_bytes", "gauge", "Memory at the latest GPUPROF_MEM snapshot: tracked bytes live, the device's used bytes, the host's RSS.");
        gpuprof__metrics_at(b, "gpuprof_memory_bytes", base, "kind", "tracked", (double)s->mem->live);
        if (s->mem->snapshots && last->dev_ok) gpuprof__metrics_at(b, "gpuprof_memory_bytes", base, "kind", "device_used", (double)last->dev_used);
        if (s->mem->snapshots && last->host_ok) gpuprof__metrics_at(b, "gpuprof_memory_bytes", base, "kind", "host_rss", (double)last->rss);
    }
    gpuprof__metrics_family(b, "gpuprof_trace_dropped_events_total", "counter", "Trace events dropped (the writer fell behind, or the trace stopped).");
    gpuprof__metrics_at(b, "gpuprof_trace_dropped_events_total", base, NULL, NULL, (double)s->dropped);
#if GPUPROF__DEVICE
    gpuprof__metrics_device(b, base);
#endif
    gpuprof__metrics_family(b, "gpuprof_run_complete", "gauge", "1 once the run has ended and these are its final figures; 0 at a checkpoint.");
    gpuprof__metrics_at(b, "gpuprof_run_complete", base, NULL, NULL, gpuprof__g.state == GPUPROF__STOPPING ? 1.0 : 0.0);
    GPUPROF_FREE(v);
}

/* The whole file (docs/guide.md "Live metrics"). */
static void gpuprof__metrics_text(gpuprof__buf *b, const gpuprof__snap *s) {
    gpuprof__buf base = { NULL, 0, 0, 0 };
    gpuprof__timespec rt;
    gpuprof__buf_printf(&base, "rank=\"%d\",job=\"", gpuprof__run.rank > 0 ? gpuprof__run.rank : 0);
    gpuprof__metrics_str(&base, gpuprof__metrics_job());
    gpuprof__buf_s(&base, "\"");
    if (base.failed) { b->failed = 1; return; }
    gpuprof__metrics_run(b, s, base.p);
    gpuprof__clock_gettime(GPUPROF__CLOCK_REALTIME, &rt);
    gpuprof__metrics_family(b, "gpuprof_last_update_timestamp_seconds", "gauge", "When gpuprof wrote this file (Unix time, seconds).");
    gpuprof__metrics_at(b, "gpuprof_last_update_timestamp_seconds", base.p, NULL, NULL, (double)rt.tv_sec + (double)rt.tv_nsec / 1e9);
    GPUPROF_FREE(base.p);
}

/* Which file gpuprof last renamed into the metrics path: another inode
   there later means another writer. */
static struct { int written; uint64_t dev, ino; } gpuprof__metrics_file;

/* A session begins: no file of its written yet. */
static void gpuprof__metrics_begin(void) {
    memset(&gpuprof__metrics_file, 0, sizeof gpuprof__metrics_file);
}

/* The metrics file, atomically (gpuprof__write_file_as); a link or a
   directory at the path is refused, and another process replacing the
   file between two writes is said once. The run goes on either way. */
static int gpuprof__metrics_write(const char *path, const gpuprof__buf *b) {
    struct stat st;
    if (gpuprof__lstat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) {
            gpuprof__warn(GPUPROF__W_IO, "the metrics path '%s' is %s, not a file; no metrics are written (name a file, *.prom)", path,
                          S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory" : "special");
            return -1;
        }
        if (S_ISREG(st.st_mode) && gpuprof__metrics_file.written &&
            ((uint64_t)st.st_dev != gpuprof__metrics_file.dev || (uint64_t)st.st_ino != gpuprof__metrics_file.ino))
            gpuprof__warn(GPUPROF__W_IO, "'%s' was replaced by another process since gpuprof wrote it: two processes write one metrics file and each overwrites the other's series (put %%r or %%p in GPUPROF_METRICS)", path);
    }
    if (gpuprof__write_file_as(path, b, "metrics", &st) != 0) return -1;
    gpuprof__metrics_file.written = S_ISREG(st.st_mode);
    gpuprof__metrics_file.dev = (uint64_t)st.st_dev;
    gpuprof__metrics_file.ino = (uint64_t)st.st_ino;
    return 0;
}

#else
/* GPUPROF_NO_METRICS: nothing to write (the outputs' opening says so once). */
#define gpuprof__metrics_text(b, s) ((void)(b), (void)(s))
#define gpuprof__metrics_write(path, b) ((void)(path), (void)(b), 0)
#define gpuprof__metrics_begin() ((void)0)
#endif

/* ----------------------------------------------------------------------
   Writing the outputs: files, the report, the summary, the trace on
   demand, gpuprof_flush and gpuprof_reset
   ---------------------------------------------------------------------- */
enum { GPUPROF__MAKE_REPORT, GPUPROF__MAKE_SUMMARY, GPUPROF__MAKE_CHECKPOINT };

/* The summary's steps.over_time, formatted from a copy of the series taken
   under gpuprof__lock but outside it: its thousands of numbers are most of
   what a summary costs, and a GPUPROF_STEP waits for that lock. */
static void gpuprof__series_pre(gpuprof__buf *out) {
    gpuprof__snap s;
    memset(&s, 0, sizeof s);
    pthread_mutex_lock(&gpuprof__lock);
    gpuprof__series_snap(&s);
    pthread_mutex_unlock(&gpuprof__lock);
    gpuprof__json_series(out, &s);               /* the session's names are not freed while it runs */
    GPUPROF_FREE(s.series);
}
/* The report or the summary into b; with metrics (not NULL), also the live
   metrics, from the same snapshot. A checkpoint neither waits for the GPU
   nor flushes CUPTI: it has what the steps harvested. */
static int gpuprof__make(gpuprof__buf *b, int what, gpuprof__buf *metrics) {
    gpuprof__snap *sp = (gpuprof__snap *)gpuprof__zalloc(sizeof *sp);     /* on the heap: a caller's stack may be 16 KiB */
    gpuprof__buf series = { NULL, 0, 0, 0 };
    int rc;
    if (!sp) return -1;
    gpuprof__smp_check();                /* the samples' signal still gpuprof's? */
    if (what != GPUPROF__MAKE_CHECKPOINT) {
        gpuprof__gpu_drain();
        gpuprof__kc_flush(0);
    }
    if (what != GPUPROF__MAKE_REPORT) gpuprof__series_pre(&series);
    pthread_mutex_lock(&gpuprof__lock);
    if (gpuprof__g.state != GPUPROF__RUNNING && gpuprof__g.state != GPUPROF__STOPPING) {   /* shut down by another thread meanwhile */
        pthread_mutex_unlock(&gpuprof__lock);
        GPUPROF_FREE(series.p);
        GPUPROF_FREE(sp);
        return -1;
    }
    rc = gpuprof__collect(sp);
    if (rc == 0) {
        sp->checkpoint = what == GPUPROF__MAKE_CHECKPOINT ? GPUPROF__LD(&gpuprof__bg.checkpoints) + 1 : 0;
        sp->series_json = series.p && !series.failed ? series.p : NULL;
        sp->series_json_len = series.len;
        if (what == GPUPROF__MAKE_REPORT) gpuprof__report_text(b, sp);
        else gpuprof__summary_json(b, sp);
        if (metrics) gpuprof__metrics_text(metrics, sp);
        gpuprof__snap_free(sp);
    }
    pthread_mutex_unlock(&gpuprof__lock);
    GPUPROF_FREE(series.p);
    GPUPROF_FREE(sp);
    return rc || b->failed ? -1 : 0;
}

static int gpuprof__usable(const char *fn) {
    int state = GPUPROF__LDA(&gpuprof__g.state);
    if (GPUPROF__LD(&gpuprof__g.forked_child)) return 0;
    if (state == GPUPROF__RUNNING) return 1;
    if (state == GPUPROF__NEVER || state == GPUPROF__STARTING)
        gpuprof__warn(GPUPROF__W_BEFORE_INIT, "%s() before anything was recorded does nothing (call it after the first range, or after gpuprof_init())", fn);
    else gpuprof__warn(GPUPROF__W_AFTER_SHUTDOWN, "%s() after gpuprof_shutdown() does nothing (call it before, or gpuprof_init() again)", fn);
    return 0;
}

static int gpuprof__report_to(FILE *out) {
    gpuprof__buf b = { NULL, 0, 0, 0 };
    int rc = gpuprof__make(&b, GPUPROF__MAKE_REPORT, NULL);
    if (rc == 0 && (fwrite(b.p, 1, b.len, out) != b.len || fflush(out) != 0)) {
        gpuprof__warn(GPUPROF__W_IO, "cannot write the report: %s", strerror(errno));
        rc = -1;
    }
    GPUPROF_FREE(b.p);
    return rc;
}

int gpuprof_report(FILE *out) {
    if (!gpuprof__usable("gpuprof_report")) return -1;
    if (!out) { gpuprof__warn(GPUPROF__W_IO, "gpuprof_report(NULL): pass stdout, stderr or an open FILE"); return -1; }
    return gpuprof__report_to(out);
}

int gpuprof_write_summary(const char *path) {
    gpuprof__buf b = { NULL, 0, 0, 0 };
    char *full;                       /* the paths of the public calls on the heap: the caller's stack may be 16 KiB */
    int rc = -1;
    if (!gpuprof__usable("gpuprof_write_summary")) return -1;
    if (!path || !*path) { gpuprof__warn(GPUPROF__W_IO, "gpuprof_write_summary() needs a file path"); return -1; }
    if ((full = (char *)gpuprof__alloc(GPUPROF__PATH_MAX)) == NULL) return -1;
    if (gpuprof__path_expand(path, full, GPUPROF__PATH_MAX) != 0) gpuprof__warn(GPUPROF__W_IO, "gpuprof_write_summary(): the path '%.64s...' is too long", path);
    else if (gpuprof__g.trace_path && gpuprof__same_file(full, gpuprof__g.trace_path))
        gpuprof__warn(GPUPROF__W_IO, "gpuprof_write_summary('%s'): that is the file the trace is written to; nothing written (give the summary its own path)", full);
    else if ((rc = gpuprof__make(&b, GPUPROF__MAKE_SUMMARY, NULL)) == 0) rc = gpuprof__write_file(full, &b, "summary");
    GPUPROF_FREE(b.p);
    GPUPROF_FREE(full);
    return rc;
}

/* The trace (path expanded) of what was recorded so far. */
static int gpuprof__write_trace_to(const char *path) {
    if (gpuprof__trace.mode == GPUPROF__TRACE_NONE) {
        gpuprof__warn(GPUPROF__W_IO, "no trace was recorded, so nothing is written to '%s' (set GPUPROF_TRACE=path, or leave the flight recorder on: GPUPROF_TRACE_RING_MB / gpuprof_config.trace_ring_mb not 0)",
                      path ? path : "(null)");
        return -1;
    }
    gpuprof__gpu_drain();           /* finished GPU ranges into the trace (waits for the GPU) */
    if (gpuprof__trace.mode == GPUPROF__TRACE_STREAM) {
        if (!path || !*path || gpuprof__same_file(path, gpuprof__trace.out.path)) {
            (void)gpuprof__trace_sync(NULL);  /* the streamed file itself, brought up to date */
            return gpuprof__trace.out.failed ? -1 : 0;
        }
        return gpuprof__trace_copy(path);
    }
    if (!path || !*path) {
        gpuprof__warn(GPUPROF__W_IO, "gpuprof_write_trace() needs a path: no trace file was configured, the flight recorder's events go to the file named");
        return -1;
    }
    return gpuprof__ring_dump(path, NULL);
}

static int gpuprof__write_trace_locked(const char *path) {
    char *full;
    int rc;
    if (!gpuprof__usable("gpuprof_write_trace")) return -1;
    if ((full = (char *)gpuprof__alloc(GPUPROF__PATH_MAX)) == NULL) return -1;
    if (path && *path && gpuprof__path_expand(path, full, GPUPROF__PATH_MAX) == 0) path = full;
    rc = gpuprof__write_trace_to(path);
    GPUPROF_FREE(full);
    return rc;
}

int gpuprof_write_trace(const char *path) {
    int rc;
    if (GPUPROF__LD(&gpuprof__g.forked_child)) return -1;
    pthread_mutex_lock(&gpuprof__life_lock);
    rc = gpuprof__write_trace_locked(path);
    pthread_mutex_unlock(&gpuprof__life_lock);
    return rc;
}

void gpuprof_flush(void) {
    if (GPUPROF__LDA(&gpuprof__g.state) != GPUPROF__RUNNING || GPUPROF__LD(&gpuprof__g.forked_child)) return;
    gpuprof__gpu_flush();                        /* everything finished, however much */
    gpuprof__trace_handoff(gpuprof__tls);
}

/* Empties an accumulator that its owner thread may be adding to. */
static void gpuprof__stats_clear(gpuprof_stats *st) {
    int k;
    GPUPROF__ST(&st->count, (uint64_t)0);
    GPUPROF__ST(&st->rejected, (uint64_t)0);
    gpuprof__std(&st->sum, 0.0);
    gpuprof__std(&st->sum_d, 0.0);
    gpuprof__std(&st->sum_d2, 0.0);
    for (k = 0; k < GPUPROF_STATS_BUCKETS; k++) GPUPROF__ST(&st->bucket[k], 0u);
}

static void gpuprof__gpustat_clear(gpuprof__gpustat *g) {
    if (!g) return;
    gpuprof__stats_clear(&g->stats);
    GPUPROF__ST(&g->self_ns, (uint64_t)0);
    GPUPROF__ST(&g->pre_self_ns, (uint64_t)0);
    GPUPROF__ST(&g->excluded, (uint64_t)0);
    GPUPROF__ST(&g->nowork, (uint64_t)0);
    GPUPROF__ST(&g->lag_ns, (int64_t)0);
    GPUPROF__ST(&g->wait_ns, (int64_t)0);
    if (g->pre) GPUPROF__ST(&g->pre->count, (uint64_t)0);
}

void gpuprof_reset(void) {
    gpuprof__thread *t;
    uint32_t i;
    if (!gpuprof__usable("gpuprof_reset")) return;
    pthread_mutex_lock(&gpuprof__lock);
    if (gpuprof__g.state != GPUPROF__RUNNING) { pthread_mutex_unlock(&gpuprof__lock); return; }
    for (t = gpuprof__threads.threads; t; t = t->next) {
        uint32_t nn = GPUPROF__LDA(&t->nnodes);
        /* The calls that ended before now are of the old period: their
           records are dropped with the statistics, the ring held meanwhile. */
        gpuprof__rec_hold(t, 1);
        GPUPROF__STR(&t->rec_tail, GPUPROF__LDA(&t->rec_head));
        for (i = 0; i <= nn; i++) {
            gpuprof__node *n = i < nn ? gpuprof__node_at(t, i) : &t->overflow;
            /* Relaxed stores: the owner may be adding at the same moment; the
               worst case is one sample of the old period kept in the new. */
            gpuprof__stats_clear(&n->stats);
            GPUPROF__ST(&n->self_ns, (uint64_t)0);
            GPUPROF__ST(&n->excluded, (uint64_t)0);
            GPUPROF__ST(&n->pre_self_ns, (uint64_t)0);
            gpuprof__std(&n->flops, 0.0);
            gpuprof__std(&n->bytes, 0.0);
            gpuprof__std(&n->win_first, 0.0);
            gpuprof__std(&n->win_last, 0.0);
            n->win_count = 0;
            GPUPROF__ST(&n->mem_delta, (int64_t)0);
            GPUPROF__ST(&n->dev_delta, (int64_t)0);
            GPUPROF__ST(&n->mem_calls, (uint64_t)0);
            GPUPROF__ST(&n->dev_calls, (uint64_t)0);
            if (n->pre) GPUPROF__ST(&n->pre->count, (uint64_t)0);
            gpuprof__gpustat_clear(n->gpu);
            gpuprof__gpustat_clear(n->kspan);
            /* kernel capture's, written by the collector */
            GPUPROF__ST(&n->kernel_calls, (uint64_t)0);
            GPUPROF__ST(&n->kernel_ns, (uint64_t)0);
            GPUPROF__ST(&n->kuf_ns, (uint64_t)0);
            GPUPROF__ST(&n->ktc_ns, (uint64_t)0);
            GPUPROF__ST(&n->copy_ns, (uint64_t)0);
            GPUPROF__ST(&n->copy_bytes, (uint64_t)0);
            GPUPROF__ST(&n->copy_pageable, (uint64_t)0);
            GPUPROF__ST(&n->sync_ns, (uint64_t)0);
        }
        for (i = 0; i < gpuprof__registry.max_ids; i++) {
            gpuprof__node *n = (gpuprof__node *)GPUPROF__LDA(&t->counters[i]);
            if (n) gpuprof__stats_clear(&n->stats);
        }
        GPUPROF__ST(&t->marks, (uint64_t)0);
        GPUPROF__STR(&t->rec_busy, 0);
    }
    gpuprof__smp_reset();
    gpuprof__mem_clear();
    gpuprof_stats_init(&gpuprof__steps.stats);
    gpuprof__steps.counted = gpuprof__steps.excluded = gpuprof__steps.unrecorded = 0;
    gpuprof__step_figures_clear();       /* they belong to the statistics just cleared */
#ifdef GPUPROF_CUDA
    {
        uint32_t k;
        gpuprof_stats_init(&gpuprof__gpu.idle);
        for (k = 0; k < GPUPROF__STEP_SLOTS; k++) gpuprof__gpu.slot[k].closed = 0;
        GPUPROF__ST(&gpuprof__kc.reset_below, GPUPROF__LD(&gpuprof__kc.call_next));   /* spans still open: of the old period */
        gpuprof__kc_reset();
    }
#endif
    pthread_mutex_unlock(&gpuprof__lock);
}

/* ----------------------------------------------------------------------
   Checkpoints and captures (SPEC 15), gpuprof's own thread (the keeper):
   it rewrites the summary every cfg.summary_every seconds, so a run killed
   at any moment leaves a valid summary of everything up to its last
   checkpoint ("complete": false); and it writes the slow steps' windows
   that GPUPROF_STEP asks for (gpuprof__capture_ask), off the stepping thread.
   ---------------------------------------------------------------------- */
/* The summary and the live metrics as they stand (at exit: final),
   written atomically, each where asked for; 0 when every one asked for
   was written. */
static int gpuprof__summary_and_metrics(int what) {
    gpuprof__buf b = { NULL, 0, 0, 0 }, m = { NULL, 0, 0, 0 };
    int made = gpuprof__make(&b, what, gpuprof__g.metrics_path ? &m : NULL) == 0, ok = made;
    if (made && gpuprof__g.summary_path && gpuprof__write_file(gpuprof__g.summary_path, &b, "summary") != 0) ok = 0;
    if (made && gpuprof__g.metrics_path && gpuprof__metrics_write(gpuprof__g.metrics_path, &m) != 0) ok = 0;   /* each tried */
    GPUPROF_FREE(b.p);
    GPUPROF_FREE(m.p);
    return ok ? 0 : -1;
}

/* One checkpoint. The recording threads' ranges never wait for it; a
   GPUPROF_STEP waits for gpuprof__lock while the summary is made
   (bench/README.md, "Checkpoints"). */
static void gpuprof__checkpoint(void) {
    if (gpuprof__summary_and_metrics(GPUPROF__MAKE_CHECKPOINT) == 0) GPUPROF__ST(&gpuprof__bg.checkpoints, GPUPROF__LD(&gpuprof__bg.checkpoints) + 1u);
}


/* The n-th capture's file: beside the trace (run.json -> run.slow.1.json,
   run.pftrace -> run.slow.1.pftrace), or gpuprof.<pid>.slow.<n>.json. */
static void gpuprof__capture_name(char *out, size_t cap, unsigned n) {
    if (gpuprof__g.trace_path) gpuprof__trace_sibling(out, cap, "slow.", n);
    else snprintf(out, cap, "gpuprof.%d.slow.%u.json", gpuprof__run.pid, n);
}

/* The captures asked for and not written yet. A dump runs under life_lock
   (one at a time: gpuprof_write_trace's too): the keeper tries it, and when
   it is taken (a shutdown under way, or a write_trace) they wait for its
   next look; a shutdown (holding it: locked = 1) writes what is left. */
static void gpuprof__captures_write(int locked) {
    unsigned i, n = GPUPROF__LDA(&gpuprof__bg.ncap);
    for (i = 0; i < n; i++) {
        gpuprof__capture *c = &gpuprof__bg.cap[i];
        gpuprof__window w;
        int rc;
        if (GPUPROF__LD(&c->state) != 0) continue;
        if (!locked && gpuprof__mono_ns() < c->asked + 10000000u) return;    /* the step's end is being recorded */
        if (!locked && pthread_mutex_trylock(&gpuprof__life_lock) != 0) return;
        gpuprof__capture_name(c->file, sizeof c->file, i + 1);
        w.from_t = c->from;
        w.to_t = c->to;
        w.from_ns = gpuprof__ticks_to_ns(c->from);
        w.to_ns = gpuprof__ticks_to_ns(c->to);
        rc = gpuprof__ring_dump(c->file, &w);
        if (!locked) pthread_mutex_unlock(&gpuprof__life_lock);
        GPUPROF__STR(&c->state, rc == 0 ? 1 : -1);
    }
}

/* The keeper: sleeps until the next checkpoint is due, a capture is asked
   for, or it is stopped. (The device has a thread of its own, the reader:
   NVML may block.) */
static void *gpuprof__keeper_main(void *arg) {
    double every = gpuprof__g.cfg.summary_every;
    int checkpoints = (gpuprof__g.summary_path || gpuprof__g.metrics_path) && every > 0, captures = gpuprof__g.cfg.capture_slow > 0;
    int sampling = GPUPROF__SMP_ON();
    uint64_t period = checkpoints ? (uint64_t)(every * 1e9) : UINT64_MAX / 2, next = gpuprof__mono_ns() + period;
    uint64_t quick = gpuprof__mono_ns() + 2000000000u;   /* the sampler's first 2 s: threads made then (a pool, OpenMP's) are found sooner */
    (void)arg;
    gpuprof__own_thread();
    pthread_mutex_lock(&gpuprof__keep_mu);
    while (!gpuprof__bg.keeper_stop) {
        uint64_t now = gpuprof__mono_ns(), wait;
        if (captures) {
            pthread_mutex_unlock(&gpuprof__keep_mu);
            gpuprof__captures_write(0);
            pthread_mutex_lock(&gpuprof__keep_mu);
        }
        if (checkpoints && now >= next) {
            pthread_mutex_unlock(&gpuprof__keep_mu);
            gpuprof__checkpoint();
            pthread_mutex_lock(&gpuprof__keep_mu);
            now = gpuprof__mono_ns();
            while (next <= now) next += period;       /* a slow checkpoint skips the ones it overran */
            continue;
        }
        if (sampling) {
            pthread_mutex_unlock(&gpuprof__keep_mu);
            gpuprof__smp_check();
            pthread_mutex_lock(&gpuprof__keep_mu);
            sampling = GPUPROF__SMP_ON();
        }
        wait = next - now;
        if (captures && wait > 50000000u) wait = 50000000u;
        if (sampling && wait > GPUPROF__SMP_CHECK_NS) wait = now < quick ? GPUPROF__SMP_CHECK_NS / 5 : GPUPROF__SMP_CHECK_NS;
        if (!gpuprof__bg.keeper_stop) gpuprof__cond_wait_ns(&gpuprof__keep_cond, &gpuprof__keep_mu, wait);
    }
    pthread_mutex_unlock(&gpuprof__keep_mu);
    return NULL;
}

/* At a session's start (under gpuprof__lock), with checkpoints or captures
   asked for. Captures read the flight recorder: without it (a streamed
   trace, or GPUPROF_TRACE_RING_MB=0) they are off, and a line says so. */
static void gpuprof__keeper_start(void) {
    int checkpoints = (gpuprof__g.summary_path || gpuprof__g.metrics_path) && gpuprof__g.cfg.summary_every > 0;
    GPUPROF__ST(&gpuprof__bg.checkpoints, 0u);
    gpuprof__metrics_begin();
    GPUPROF__ST(&gpuprof__bg.ncap, 0u);
    gpuprof__trace.keep_written = 0;
    /* the settings as the config and the environment left them */
    if (gpuprof__g.cfg.capture_max > GPUPROF__CAPTURES) gpuprof__g.cfg.capture_max = GPUPROF__CAPTURES;
    if (gpuprof__g.cfg.capture_slow > 0 && !(gpuprof__g.cfg.capture_slow > 1)) {
        gpuprof__warn(GPUPROF__W_BAD_ENV, "GPUPROF_CAPTURE_SLOW=%g: a slow step is longer than the median, so it must be above 1; no step is captured",
                      gpuprof__g.cfg.capture_slow);
        gpuprof__g.cfg.capture_slow = 0;
    }
    if (gpuprof__g.cfg.capture_slow > 0 && gpuprof__trace.mode == GPUPROF__TRACE_STREAM) {
        /* a streamed trace: its latest written blocks are kept as the flight recorder's would be
           (GPUPROF_TRACE_RING_MB, at most half the trace's buffers) */
        uint32_t m = (uint32_t)(((uint64_t)(gpuprof__g.cfg.trace_ring_mb > 0 ? gpuprof__g.cfg.trace_ring_mb : 32) << 20) / sizeof(gpuprof__block));
        pthread_mutex_lock(&gpuprof__trace_lock);
        gpuprof__trace.ring_max = m < gpuprof__trace.blocks_max / 2 ? m : gpuprof__trace.blocks_max / 2;
        if (gpuprof__trace.ring_max < 2) gpuprof__trace.ring_max = 2;
        gpuprof__trace.keep_written = 1;
        pthread_mutex_unlock(&gpuprof__trace_lock);
    } else if (gpuprof__g.cfg.capture_slow > 0 && gpuprof__trace.mode != GPUPROF__TRACE_RING) {
        gpuprof__warn(GPUPROF__W_BAD_ENV, "GPUPROF_CAPTURE_SLOW reads the flight recorder, which is off (GPUPROF_TRACE_RING_MB=0): no slow step is captured");
        gpuprof__g.cfg.capture_slow = 0;
    }
    if (gpuprof__dev_want(0)) gpuprof__dev_start();
    if (!checkpoints && !(gpuprof__g.cfg.capture_slow > 0) && !GPUPROF__SMP_ON()) return;
    if (checkpoints && gpuprof__g.cfg.summary_every < 0.01) gpuprof__g.cfg.summary_every = 0.01;
    if (checkpoints && gpuprof__g.cfg.summary_every > 1e6) gpuprof__g.cfg.summary_every = 1e6;   /* in ns, it fits 64 bits */
    gpuprof__bg.keeper_stop = 0;
    GPUPROF__ST(&gpuprof__bg.keeper_running, gpuprof__spawn(&gpuprof__bg.keeper, gpuprof__keeper_main) == 0);
    if (!gpuprof__bg.keeper_running)
        gpuprof__warn(GPUPROF__W_IO, "cannot start gpuprof's thread for checkpoints, captures and the sampler's watch; the summary is written at exit only, no slow step is captured");
}

/* At shutdown, under life_lock and not gpuprof__lock (a checkpoint under
   way takes it); the captures still to write are written then, before the
   summary at exit lists them. */
static void gpuprof__keeper_stop(void) {
    gpuprof__dev_stop();
    if (!GPUPROF__LD(&gpuprof__bg.keeper_running)) return;
    pthread_mutex_lock(&gpuprof__keep_mu);
    gpuprof__bg.keeper_stop = 1;
    pthread_cond_signal(&gpuprof__keep_cond);
    pthread_mutex_unlock(&gpuprof__keep_mu);
    pthread_join(gpuprof__bg.keeper, NULL);
    GPUPROF__ST(&gpuprof__bg.keeper_running, 0);
    if (gpuprof__g.cfg.capture_slow > 0) gpuprof__captures_write(1);
}

/* ----------------------------------------------------------------------
   Roofline peaks (SPEC 9): memory bandwidth from the device's attributes,
   peak FLOP/s from a table by compute capability and precision; the config
   and the environment override both.
   ---------------------------------------------------------------------- */

#ifdef GPUPROF_CUDA
/* Dense FLOP per clock cycle per SM, from NVIDIA's architecture whitepapers:
   fp64 and fp32 on the CUDA cores (an FMA is 2 FLOP), tf32, fp16/bf16 and
   fp8 on the tensor cores (dense, fp32 accumulate on data-centre parts,
   fp16 accumulate on GeForce); 0 = not supported. Peak = this x SMs x the
   clock the runtime reports (the boost clock; datasheets sometimes quote
   tensor figures at a lower one). docs/guide.md "Roofline" has the table. */
static const struct gpuprof__flop_row { int major, minor; double v[GPUPROF__PREC_COUNT]; } gpuprof__flop_table[] = {
    /*              fp32   tf32   fp16   bf16    fp8  fp64 */
    {  7, 0, { 128,     0, 1024,     0,     0,   64 } },   /* V100 */
    {  7, 5, { 128,     0, 1024,     0,     0,    4 } },   /* T4, RTX 20 */
    {  8, 0, { 128,  1024, 2048,  2048,     0,   64 } },   /* A100, A30 */
    {  8, 6, { 256,   512, 1024,  1024,     0,    4 } },   /* A10, A40, RTX 30 */
    {  8, 7, { 256,   512, 1024,  1024,     0,    4 } },   /* Jetson Orin */
    {  8, 9, { 256,   512, 1024,  1024,  2048,    4 } },   /* L4, L40S, RTX 40 */
    {  9, 0, { 256,  2048, 4096,  4096,  8192,  128 } },   /* H100, H200, GH200 */
    { 10, 0, { 256,  4096, 8192,  8192, 16384,  128 } },   /* B200, GB200 */
    { 12, 0, { 256,   512, 1024,  1024,  2048,    4 } },   /* RTX 50, RTX PRO Blackwell */
};

/* The row for major.minor: exact, else the same major's nearest lower minor. */
static const struct gpuprof__flop_row *gpuprof__flop_row_of(int major, int minor) {
    const struct gpuprof__flop_row *best = NULL;
    size_t i;
    for (i = 0; i < sizeof gpuprof__flop_table / sizeof gpuprof__flop_table[0]; i++) {
        const struct gpuprof__flop_row *r = &gpuprof__flop_table[i];
        if (r->major == major && r->minor <= minor && (!best || r->minor > best->minor)) best = r;
    }
    return best;
}
#endif

/* A positive number from the environment (or -1 when the variable is unset or bad). */
static double gpuprof__env_positive(const char *var) {
    const char *v = getenv(var);
    char *end;
    double x;
    if (!v || !*v) return -1;
    errno = 0;
    x = strtod(v, &end);
    while (*end == ' ') end++;
    if (errno || *end || !(x > 0) || x > 1e9) {
        gpuprof__warn(GPUPROF__W_BAD_ENV, "%s='%.64s' is not a positive number; ignored", var, v);
        return -1;
    }
    return x;
}

/* A peak the user gives: the environment variable, else the config's field
   (in TFLOP/s or GB/s; `unit` converts). Returns 1 when one was taken. */
static int gpuprof__peak_setting(const char *var, const char *field, double cfg_value, double unit, double *out, char *from) {
    double x = gpuprof__env_positive(var);
    if (x > 0) { *out = x * unit; snprintf(from, GPUPROF__PEAK_FROM, "%s", var); return 1; }
    if (cfg_value > 0 && cfg_value <= 1e9) { *out = cfg_value * unit; snprintf(from, GPUPROF__PEAK_FROM, "config"); return 1; }
    if (cfg_value != 0) gpuprof__warn(GPUPROF__W_BAD_ENV, "the config's %s (%g) is not a positive number; ignored", field, cfg_value);
    return 0;
}

static void gpuprof__peaks_init(const gpuprof_config *cfg) {
    const char *v = getenv("GPUPROF_PRECISION"), *from = "GPUPROF_PRECISION";
    int i;
    memset(&gpuprof__g.peak, 0, sizeof gpuprof__g.peak);
    if (!v || !*v) { v = cfg->precision; from = "the config's precision"; }
    if (v && *v) {
        for (i = 0; i < GPUPROF__PREC_COUNT && strcmp(v, gpuprof__prec_name[i]) != 0; i++) {}
        if (i < GPUPROF__PREC_COUNT) gpuprof__g.peak.prec = i;
        else gpuprof__warn(GPUPROF__W_BAD_ENV, "%s '%.32s' is not fp32, tf32, fp16, bf16, fp8 or fp64; using fp32", from, v);
    }
    gpuprof__g.peak.user_flops = gpuprof__peak_setting("GPUPROF_PEAK_TFLOPS", "peak_tflops", cfg->peak_tflops, 1e12,
                                                       &gpuprof__g.peak.flops, gpuprof__g.peak.flops_from);
    gpuprof__g.peak.user_bw = gpuprof__peak_setting("GPUPROF_PEAK_GBPS", "peak_gbps", cfg->peak_gbps, 1e9,
                                                    &gpuprof__g.peak.bw, gpuprof__g.peak.bw_from);
#ifdef GPUPROF_CUDA
    if (gpuprof__gpu.available) {
        const struct gpuprof__flop_row *r = gpuprof__flop_row_of(gpuprof__gpu.cc_major, gpuprof__gpu.cc_minor);
        int p = gpuprof__g.peak.prec;
        if (gpuprof__g.peak.flops == 0.0) {
            if (r && r->v[p] > 0 && gpuprof__gpu.sms > 0 && gpuprof__gpu.clock_khz > 0) {
                gpuprof__g.peak.flops = r->v[p] * gpuprof__gpu.sms * (double)gpuprof__gpu.clock_khz * 1e3;
                /* gpuprof__fmt: a '.' whatever the locale */
                gpuprof__fmt(gpuprof__g.peak.flops_from, sizeof gpuprof__g.peak.flops_from, "%.0f %s FLOP/clock/SM for CC %d.%d x %d SMs x %.2f GHz",
                             r->v[p], gpuprof__prec_name[p], gpuprof__gpu.cc_major, gpuprof__gpu.cc_minor, gpuprof__gpu.sms, gpuprof__gpu.clock_khz * 1e-6);
            } else
                snprintf(gpuprof__g.peak.flops_from, sizeof gpuprof__g.peak.flops_from, "none for %s on CC %d.%d: set GPUPROF_PEAK_TFLOPS",
                         gpuprof__prec_name[p], gpuprof__gpu.cc_major, gpuprof__gpu.cc_minor);
        }
        if (gpuprof__g.peak.bw == 0.0) {
            if (gpuprof__gpu.mem_khz > 0 && gpuprof__gpu.bus_bits > 0) {
                /* double data rate: two transfers of bus_bits per memory clock */
                gpuprof__g.peak.bw = 2.0 * (double)gpuprof__gpu.mem_khz * 1e3 * (double)gpuprof__gpu.bus_bits / 8.0;
                gpuprof__fmt(gpuprof__g.peak.bw_from, sizeof gpuprof__g.peak.bw_from, "%d-bit bus x %.0f MHz memory clock x 2",
                             gpuprof__gpu.bus_bits, gpuprof__gpu.mem_khz * 1e-3);
            } else snprintf(gpuprof__g.peak.bw_from, sizeof gpuprof__g.peak.bw_from, "unknown: set GPUPROF_PEAK_GBPS");
        }
    }
#endif
    if (gpuprof__g.peak.flops == 0.0 && !gpuprof__g.peak.flops_from[0])
        snprintf(gpuprof__g.peak.flops_from, sizeof gpuprof__g.peak.flops_from, "no GPU: set GPUPROF_PEAK_TFLOPS");
    if (gpuprof__g.peak.bw == 0.0 && !gpuprof__g.peak.bw_from[0])
        snprintf(gpuprof__g.peak.bw_from, sizeof gpuprof__g.peak.bw_from, "no GPU: set GPUPROF_PEAK_GBPS");
}

/* ----------------------------------------------------------------------
   Cross-rank report (SPEC 10): the ranks of one job side by side, range by
   range, and the straggler. One analysis for both of its users:
   tools/gpuprof-ranks (figures read from the ranks' summaries) and rank 0
   under GPUPROF_MPI (figures gathered at MPI_Finalize).

   In synchronous training every rank shows the same step time: the rank
   that holds the others back hides behind their waits. Its slow range is
   seen directly, and it waits *least* in the collectives, where the others
   wait for it; the ranks it delays look slow in the ranges that hold a
   collective. So ranges are compared on their self time (a range holding a
   collective is not charged with it), and collectives count as waiting.
   skew = max / median - 1 over the ranks (0: balanced).
   ---------------------------------------------------------------------- */
#if defined(GPUPROF_MPI) || defined(GPUPROF_RANKS_REPORT)

typedef struct gpuprof__xr_range {   /* one range of one rank */
    const char *name;
    double self_ns, p50_ns;          /* CPU: self time over the counted steps; the median call (NaN: unknown) */
    int gpu;                         /* it has GPU times: */
    double gpu_self_ns, gpu_p50_ns;
    int kernel;                      /* a captured kernel (NCCL's), GPU times only: not a range */
} gpuprof__xr_range;

typedef struct gpuprof__xr_run {     /* one rank */
    int rank, world;                 /* world 0: unknown */
    double steps;                    /* counted steps (1 when the program does not step) */
    double step_ns;                  /* the median step, NaN without steps */
    const char *path;                /* where its figures came from (messages) */
    uint32_t nranges;
    gpuprof__xr_range *ranges;
    double dev_clock;                /* its GPU's mean SM clock over the run (MHz; 0: no device telemetry) */
    double dev_held;                 /* the share of its GPU's samples under dev_why */
    const char *dev_why;             /* the reason that held its clocks back most (power cap, thermal, ...), or NULL */
} gpuprof__xr_run;

typedef struct gpuprof__xr_row {
    const char *name;
    int comm, kernel;
    double min, median, max, skew;
    int slowest, fastest;            /* index in the runs */
    double *v;                       /* per run: self ns per counted step */
    double *p50;                     /* per run: the median call, NaN where the rank has no calls */
} gpuprof__xr_row;

typedef struct gpuprof__xr {
    gpuprof__xr_run *runs;           /* sorted by rank */
    int nrun, world, steps_differ;
    gpuprof__xr_row *rows, *gpu_rows;
    int nrow, ngpu;
    double step_med;                 /* the median over the ranks of their median steps; NaN */
    int strag, comm_row;             /* rows; -1: none. comm_row >= nrow: gpu_rows[comm_row - nrow] */
    double excess, cost;             /* the straggler's excess in its range; what it costs the others per step */
    int ndev;                        /* ranks with device telemetry (SPEC 17) */
    double dev_med;                  /* the median of their mean SM clocks */
    int throttled;                   /* the run whose GPU throttles (index in runs), -1: none */
} gpuprof__xr;

/* The median of v[0..n) (n >= 1), sorting a copy in `scratch`. */
static double gpuprof__median_of(const double *v, int n, double *scratch) {
    memcpy(scratch, v, (size_t)n * sizeof *scratch);
    qsort(scratch, (size_t)n, sizeof *scratch, gpuprof__cmp_double);
    return n % 2 ? scratch[n / 2] : (scratch[n / 2 - 1] + scratch[n / 2]) / 2;
}

/* How much run `who`'s median call exceeds the median over the ranks of
   their median calls (a rank late in every step moves it; one stalled step
   does not). NaN where a rank lacks the figure. */
static double gpuprof__xr_p50_excess(const gpuprof__xr *x, const gpuprof__xr_row *w, int who, double *scratch) {
    double m;
    int r;
    for (r = 0; r < x->nrun; r++) if (w->p50[r] != w->p50[r]) return GPUPROF__NAN;
    m = gpuprof__median_of(w->p50, x->nrun, scratch);
    return m > 0 ? w->p50[who] / m - 1 : GPUPROF__NAN;
}

static int gpuprof__xr_by_rank(const void *a, const void *b) {
    return ((const gpuprof__xr_run *)a)->rank - ((const gpuprof__xr_run *)b)->rank;
}

/* Every range name any rank has, with each rank's self time per counted
   step, on the CPU or (gpu) on the GPU where the range has GPU times.
   Returns the number of rows, -1 when out of memory. */
static int gpuprof__xr_rows(gpuprof__xr *x, int gpu, gpuprof__xr_row **out, double *scratch) {
    gpuprof__xr_row *rows = NULL;
    int nrow = 0, cap = 0, r, i;
    uint32_t k;
    for (r = 0; r < x->nrun; r++) {
        const gpuprof__xr_run *run = &x->runs[r];
        for (k = 0; k < run->nranges; k++) {
            const gpuprof__xr_range *g = &run->ranges[k];
            int j;
            if (gpu ? !g->gpu : g->kernel) continue;
            for (j = 0; j < nrow && strcmp(rows[j].name, g->name) != 0; j++) {}
            if (j == nrow) {
                if (nrow == cap) {
                    int ncap = cap ? 2 * cap : 16;
                    gpuprof__xr_row *nr = (gpuprof__xr_row *)gpuprof__alloc((size_t)ncap * sizeof *nr);
                    if (!nr) goto oom;
                    if (rows) memcpy(nr, rows, (size_t)nrow * sizeof *nr);
                    GPUPROF_FREE(rows);
                    rows = nr;
                    cap = ncap;
                }
                memset(&rows[nrow], 0, sizeof rows[nrow]);
                rows[nrow].name = g->name;
                rows[nrow].comm = gpuprof__is_comm(g->name);
                rows[nrow].kernel = g->kernel;
                rows[nrow].v = (double *)gpuprof__alloc(2 * (size_t)x->nrun * sizeof(double));
                if (!rows[nrow].v) goto oom;
                rows[nrow].p50 = rows[nrow].v + x->nrun;
                for (i = 0; i < x->nrun; i++) { rows[nrow].v[i] = 0; rows[nrow].p50[i] = GPUPROF__NAN; }
                nrow++;
            }
            {
                double self = gpu ? g->gpu_self_ns : g->self_ns;
                rows[j].v[r] += (self == self ? self : 0) / run->steps;
                rows[j].p50[r] = gpu ? g->gpu_p50_ns : g->p50_ns;
            }
        }
    }
    for (i = 0; i < nrow; i++) {
        gpuprof__xr_row *w = &rows[i];
        w->min = w->max = w->v[0];
        w->slowest = w->fastest = 0;
        for (r = 1; r < x->nrun; r++) {
            if (w->v[r] > w->max) { w->max = w->v[r]; w->slowest = r; }
            if (w->v[r] < w->min) { w->min = w->v[r]; w->fastest = r; }
        }
        w->median = gpuprof__median_of(w->v, x->nrun, scratch);
        w->skew = w->median > 0 ? w->max / w->median - 1 : 0;
    }
    *out = rows;
    return nrow;
oom:
    for (i = 0; i < nrow; i++) GPUPROF_FREE(rows[i].v);
    GPUPROF_FREE(rows);
    *out = NULL;
    return -1;
}

/* The straggler: the rank slowest in a non-communication range, trying the
   ranges by their excess over the median, largest first -- corroborated,
   where the job has communication ranges, by that rank waiting least in one
   of them (noise makes some rank slowest in every range; only the true
   straggler also waits least). Its shortfall in that wait is the cost to
   the others. Without communication ranges a larger margin holds. */
static void gpuprof__xr_straggler(gpuprof__xr *x, double *scratch) {
    const gpuprof__xr_row *rows = x->rows;
    int *order = (int *)gpuprof__alloc((size_t)(x->nrow + 1) * sizeof *order);
    int n = 0, has_comm = 0, i, j, k;
    x->strag = x->comm_row = -1;
    x->excess = x->cost = 0;
    if (!order) return;
    for (i = 0; i < x->ngpu; i++) has_comm |= x->gpu_rows[i].comm;
    for (i = 0; i < x->nrow; i++) {
        has_comm |= rows[i].comm;
        if (rows[i].comm) continue;
        for (j = n++; j > 0 && rows[order[j - 1]].max - rows[order[j - 1]].median < rows[i].max - rows[i].median; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    for (k = 0; k < n; k++) {
        const gpuprof__xr_row *w = &rows[order[k]];
        double ex = w->max - w->median, best = 0;
        int who = w->slowest, cidx = -1;
        /* margins above what 4 ranks sharing 2 cores show among equals (7 % skew, 5 % of the step, seen) */
        if (w->skew < 0.10 || (x->step_med == x->step_med && ex < 0.05 * x->step_med)) break;
        if (!(gpuprof__xr_p50_excess(x, w, who, scratch) >= 0.05)) continue;     /* late in a few steps only: noise */
        if (!has_comm) { x->strag = order[k]; x->excess = x->cost = ex; break; }
        /* the waiting side: a communication range on the CPU, or on the GPU
           (a GPU-timed range, NCCL's kernels: the CPU does not wait there) */
        for (i = 0; i < x->nrow + x->ngpu; i++) {
            const gpuprof__xr_row *c = i < x->nrow ? &rows[i] : &x->gpu_rows[i - x->nrow];
            if (c->comm && c->fastest == who && c->median - c->v[who] > best && !(gpuprof__xr_p50_excess(x, c, who, scratch) > -0.05)) {
                best = c->median - c->v[who];
                cidx = i;
            }
        }
        if (cidx >= 0 && (gpuprof__isnan(x->step_med) || best >= 0.05 * x->step_med)) {
            x->strag = order[k];
            x->comm_row = cidx;
            x->excess = ex;
            x->cost = best;
            break;
        }
    }
    GPUPROF_FREE(order);
}

/* The communication row where the straggler waits least. */
static const gpuprof__xr_row *gpuprof__xr_comm(const gpuprof__xr *x) {
    return x->comm_row < x->nrow ? &x->rows[x->comm_row] : &x->gpu_rows[x->comm_row - x->nrow];
}

static void gpuprof__xr_free(gpuprof__xr *x) {
    int i;
    for (i = 0; i < x->nrow; i++) GPUPROF_FREE(x->rows[i].v);
    for (i = 0; i < x->ngpu; i++) GPUPROF_FREE(x->gpu_rows[i].v);
    GPUPROF_FREE(x->rows);
    GPUPROF_FREE(x->gpu_rows);
    x->rows = x->gpu_rows = NULL;
    x->nrow = x->ngpu = 0;
}

/* The analysis of nrun >= 1 runs (sorted by rank here; ranks distinct).
   0, or -1 when out of memory. */
/* A rank whose GPU throttles (SPEC 17): its mean SM clock at least
   GPUPROF__XR_CLOCK_LOW below the ranks' median, or its clocks held back in
   at least GPUPROF__XR_HELD of its samples while the median rank's are not
   (under a twentieth); the lowest clock first. */
#define GPUPROF__XR_CLOCK_LOW 0.03
#define GPUPROF__XR_HELD 0.25
static void gpuprof__xr_device(gpuprof__xr *x, double *scratch) {
    double held_med;
    int i, n = 0;
    x->throttled = -1;
    for (i = 0; i < x->nrun; i++) if (x->runs[i].dev_clock > 0) scratch[x->nrun + n++] = x->runs[i].dev_clock;
    x->ndev = n;
    if (n < 2) return;
    x->dev_med = gpuprof__median_of(scratch + x->nrun, n, scratch);
    for (i = 0, n = 0; i < x->nrun; i++) if (x->runs[i].dev_clock > 0) scratch[x->nrun + n++] = x->runs[i].dev_held;
    held_med = gpuprof__median_of(scratch + x->nrun, n, scratch);
    for (i = 0; i < x->nrun; i++) {
        const gpuprof__xr_run *r = &x->runs[i];
        if (!(r->dev_clock > 0)) continue;
        if (r->dev_clock > (1 - GPUPROF__XR_CLOCK_LOW) * x->dev_med && !(r->dev_held >= GPUPROF__XR_HELD && held_med < 0.05)) continue;
        if (x->throttled < 0 || r->dev_clock < x->runs[x->throttled].dev_clock) x->throttled = i;
    }
}

static int gpuprof__xr_analyse(gpuprof__xr *x, gpuprof__xr_run *runs, int nrun) {
    double *scratch = (double *)gpuprof__alloc(2 * (size_t)nrun * sizeof *scratch);
    int i, n = 0;
    memset(x, 0, sizeof *x);
    x->runs = runs;
    x->nrun = nrun;
    x->step_med = GPUPROF__NAN;
    x->strag = x->comm_row = -1;
    if (!scratch) return -1;
    qsort(runs, (size_t)nrun, sizeof *runs, gpuprof__xr_by_rank);
    for (i = 0; i < nrun; i++) {
        if (runs[i].world > x->world) x->world = runs[i].world;
        if (runs[i].steps != runs[0].steps) x->steps_differ = 1;
        if (runs[i].step_ns == runs[i].step_ns) scratch[nrun + n++] = runs[i].step_ns;
    }
    if (n) x->step_med = gpuprof__median_of(scratch + nrun, n, scratch);
    if ((x->nrow = gpuprof__xr_rows(x, 0, &x->rows, scratch)) < 0 || (x->ngpu = gpuprof__xr_rows(x, 1, &x->gpu_rows, scratch)) < 0) {
        if (x->nrow < 0) x->nrow = 0;
        x->ngpu = 0;
        gpuprof__xr_free(x);
        GPUPROF_FREE(scratch);
        return -1;
    }
    gpuprof__xr_straggler(x, scratch);
    gpuprof__xr_device(x, scratch);
    GPUPROF_FREE(scratch);
    return 0;
}

/* What the reader should know before trusting the comparison: one line
   each, no prefix, no newline at the end of the last. missing_known: the
   caller says which ranks are missing itself. */
static void gpuprof__xr_warnings(const gpuprof__xr *x, gpuprof__buf *b, int missing_known) {
    char s0[32], s1[32];
    if (x->world && x->world != x->nrun && !missing_known)
        gpuprof__buf_printf(b, "%swarning: the world size is %d but there are figures of %d ranks: ranks are missing", b->len ? "\n" : "", x->world, x->nrun);
    if (x->steps_differ) {
        gpuprof__fmt(s0, sizeof s0, "%.0f", x->runs[0].steps);
        gpuprof__fmt(s1, sizeof s1, "%.0f", x->runs[x->nrun - 1].steps);
        gpuprof__buf_printf(b, "%swarning: the ranks counted different numbers of steps (rank %d: %s, rank %d: %s); times per step still compare, totals do not",
                            b->len ? "\n" : "", x->runs[0].rank, s0, x->runs[x->nrun - 1].rank, s1);
    }
}

static const char *gpuprof__xr_ms(char *buf, size_t n, double ns) {
    if (gpuprof__isnan(ns)) snprintf(buf, n, "-");
    else if (ns >= 1e6) gpuprof__fmt(buf, n, "%.2f ms", ns / 1e6);
    else gpuprof__fmt(buf, n, "%.1f us", ns / 1e3);
    return buf;
}

/* The name column: the longest name, 28 to 64 characters (a kernel's name can be long). */
#define GPUPROF__XR_NAME_MAX 64
static int gpuprof__xr_width(const gpuprof__xr *x) {
    int i, w = 28;
    for (i = 0; i < x->nrow + x->ngpu; i++) {
        size_t n = strlen(i < x->nrow ? x->rows[i].name : x->gpu_rows[i - x->nrow].name);
        if ((int)n > w) w = n > GPUPROF__XR_NAME_MAX ? GPUPROF__XR_NAME_MAX : (int)n;
    }
    return w;
}

static void gpuprof__xr_table(gpuprof__buf *b, const gpuprof__xr *x, const gpuprof__xr_row *rows, int nrow, int width) {
    char b1[32], b2[32], b3[32], sk[32];
    int i;
    gpuprof__buf_printf(b, "%-*s %-5s %11s %11s %11s %8s %8s %7s\n", width, "range", "", "min", "median", "max", "slowest", "fastest", "skew");
    for (i = 0; i < nrow; i++) {
        const gpuprof__xr_row *w = &rows[i];
        char name[GPUPROF__XR_NAME_MAX + 1];
        snprintf(name, sizeof name, "%s", w->name);
        gpuprof__fmt(sk, sizeof sk, "%.0f", 100 * w->skew);
        gpuprof__buf_printf(b, "%-*s %-5s %11s %11s %11s %8d %8d %6s%%\n", width, name, w->comm ? "comm" : "", gpuprof__xr_ms(b1, sizeof b1, w->min),
                            gpuprof__xr_ms(b2, sizeof b2, w->median), gpuprof__xr_ms(b3, sizeof b3, w->max), x->runs[w->slowest].rank,
                            x->runs[w->fastest].rank, sk);
    }
}

/* The report as text: the table, the GPU table, the straggler line. */
/* Each rank's GPU over the run, and the rank whose GPU throttles. */
static void gpuprof__xr_device_text(gpuprof__buf *b, const gpuprof__xr *x) {
    char t1[32], t2[32];
    int i;
    if (!x->ndev) return;
    gpuprof__buf_s(b, "GPU over the run (NVML): mean SM clock; clocks held back\n");
    for (i = 0; i < x->nrun; i++) {
        const gpuprof__xr_run *r = &x->runs[i];
        if (!(r->dev_clock > 0)) continue;
        gpuprof__fmt(t1, sizeof t1, "%.0f", r->dev_clock);
        gpuprof__fmt(t2, sizeof t2, "%.0f", 100 * r->dev_held);
        gpuprof__buf_printf(b, "  rank %-4d %6s MHz   ", r->rank, t1);
        if (r->dev_why && r->dev_held > 0) gpuprof__buf_printf(b, "%s %s%% of its samples\n", r->dev_why, t2);
        else gpuprof__buf_s(b, "never\n");
    }
    if (x->throttled >= 0) {
        const gpuprof__xr_run *r = &x->runs[x->throttled];
        gpuprof__fmt(t1, sizeof t1, "%.0f", r->dev_clock);
        gpuprof__fmt(t2, sizeof t2, "%.0f", x->dev_med);
        gpuprof__buf_printf(b, "throttled GPU: rank %d -- SM clock %s MHz vs median %s MHz", r->rank, t1, t2);
        if (r->dev_why && r->dev_held > 0) {
            gpuprof__fmt(t1, sizeof t1, "%.0f", 100 * r->dev_held);
            gpuprof__buf_printf(b, ", %s %s%% of its samples", r->dev_why, t1);
        }
        gpuprof__buf_s(b, " (its work runs slower: check its cooling and power, nvidia-smi -q -d PERFORMANCE)\n");
    }
}

static void gpuprof__xr_text(gpuprof__buf *b, const gpuprof__xr *x) {
    char b1[32], b2[32], b3[32], b4[32], t[32];
    int width = gpuprof__xr_width(x);
    gpuprof__fmt(t, sizeof t, "%.0f", x->runs[0].steps);
    gpuprof__buf_printf(b, "%d ranks (world size %d), %s counted steps; self time per counted step (a range holding a collective is not charged with it)\n",
                        x->nrun, x->world ? x->world : x->nrun, t);
    gpuprof__xr_table(b, x, x->rows, x->nrow, width);
    if (x->step_med == x->step_med) gpuprof__buf_printf(b, "%-*s %-5s %11s %11s\n", width, "step (median over ranks)", "", "", gpuprof__xr_ms(b1, sizeof b1, x->step_med));
    if (x->ngpu) {
        int i, kernels = 0;
        for (i = 0; i < x->ngpu; i++) kernels |= x->gpu_rows[i].kernel;
        gpuprof__buf_s(b, kernels ? "GPU self time per counted step (CUDA events; NCCL's kernels from kernel capture):\n"
                                  : "GPU self time per counted step (CUDA events):\n");
        gpuprof__xr_table(b, x, x->gpu_rows, x->ngpu, width);
    }
    gpuprof__xr_device_text(b, x);
    if (x->strag < 0) {
        gpuprof__buf_s(b, "no straggler: no rank is both late in a range and waits least (the differences above are noise)\n");
        return;
    }
    {
        const gpuprof__xr_row *w = &x->rows[x->strag];
        int who = w->slowest;
        gpuprof__fmt(t, sizeof t, "%.0f", 100 * w->skew);
        gpuprof__buf_printf(b, "straggler: rank %d -- \"%s\" %s per step vs median %s (+%s%%)", x->runs[who].rank, w->name, gpuprof__xr_ms(b1, sizeof b1, w->v[who]),
                            gpuprof__xr_ms(b2, sizeof b2, w->median), t);
        if (x->comm_row >= 0) {
            const gpuprof__xr_row *c = gpuprof__xr_comm(x);
            gpuprof__buf_printf(b, "; it waits least in \"%s\"%s (%s vs median %s); the other ranks wait ~%s per step for it", c->name,
                                x->comm_row >= x->nrow ? " on the GPU" : "", gpuprof__xr_ms(b3, sizeof b3, c->v[who]), gpuprof__xr_ms(b4, sizeof b4, c->median),
                                gpuprof__xr_ms(b1, sizeof b1, x->cost));
        } else gpuprof__buf_printf(b, "; it costs ~%s per step", gpuprof__xr_ms(b1, sizeof b1, x->cost));
        if (x->step_med == x->step_med && x->step_med > 0) {
            gpuprof__fmt(t, sizeof t, "%.0f", 100 * x->cost / x->step_med);
            gpuprof__buf_printf(b, " (%s%% of the %s step)", t, gpuprof__xr_ms(b2, sizeof b2, x->step_med));
        }
        gpuprof__buf_s(b, "\n");
    }
}

static void gpuprof__xr_json_rows(gpuprof__buf *b, const char *key, const gpuprof__xr *x, const gpuprof__xr_row *rows, int nrow) {
    int i;
    gpuprof__buf_printf(b, "\"%s\":[", key);
    for (i = 0; i < nrow; i++) {
        const gpuprof__xr_row *w = &rows[i];
        gpuprof__buf_s(b, i ? ",\n{\"name\":" : "\n{\"name\":");
        gpuprof__buf_json_str(b, w->name);
        gpuprof__buf_printf(b, ",\"comm\":%s,\"min_ns\":", w->comm ? "true" : "false");
        gpuprof__buf_num(b, floor(w->min + 0.5));
        gpuprof__buf_s(b, ",\"median_ns\":");
        gpuprof__buf_num(b, floor(w->median + 0.5));
        gpuprof__buf_s(b, ",\"max_ns\":");
        gpuprof__buf_num(b, floor(w->max + 0.5));
        gpuprof__buf_printf(b, ",\"slowest_rank\":%d,\"fastest_rank\":%d,\"skew\":", x->runs[w->slowest].rank, x->runs[w->fastest].rank);
        gpuprof__buf_num(b, floor(w->skew * 1e4 + 0.5) / 1e4);
        gpuprof__buf_s(b, "}");
    }
    gpuprof__buf_s(b, "]");
}

/* ",\"devices\":[...],\"throttled_rank\":R|null" (SPEC 17), where ranks have device telemetry. */
static void gpuprof__xr_device_json(gpuprof__buf *b, const gpuprof__xr *x) {
    int i, first = 1;
    gpuprof__buf_s(b, ",\n\"devices\":[");
    for (i = 0; i < x->nrun; i++) {
        const gpuprof__xr_run *r = &x->runs[i];
        if (!(r->dev_clock > 0)) continue;
        gpuprof__buf_printf(b, "%s{\"rank\":%d,\"sm_clock_mean_mhz\":", first ? "" : ",", r->rank);
        gpuprof__buf_num(b, floor(r->dev_clock * 10 + 0.5) / 10);
        gpuprof__buf_s(b, ",\"held_back_by\":");
        if (r->dev_why && r->dev_held > 0) gpuprof__buf_json_str(b, r->dev_why);
        else gpuprof__buf_s(b, "null");
        gpuprof__buf_s(b, ",\"held_back_share\":");
        gpuprof__buf_num(b, floor(r->dev_held * 1e4 + 0.5) / 1e4);
        gpuprof__buf_s(b, "}");
        first = 0;
    }
    gpuprof__buf_s(b, "],\"throttled_rank\":");
    if (x->throttled >= 0) gpuprof__buf_printf(b, "%d", x->runs[x->throttled].rank);
    else gpuprof__buf_s(b, "null");
}

/* The report as JSON (SPEC 10's fields); `extra` (or NULL) goes in before
   the closing brace: ",\"key\":value...". */
static void gpuprof__xr_json(gpuprof__buf *b, const gpuprof__xr *x, const char *extra) {
    gpuprof__buf_printf(b, "{\"schema\":\"gpuprof-ranks\",\"ranks\":%d,\"world_size\":%d,\"steps\":", x->nrun, x->world ? x->world : x->nrun);
    gpuprof__buf_num(b, x->runs[0].steps);
    gpuprof__buf_s(b, ",\"step_median_ns\":");
    gpuprof__buf_num(b, x->step_med == x->step_med ? floor(x->step_med + 0.5) : x->step_med);
    gpuprof__buf_s(b, ",");
    gpuprof__xr_json_rows(b, "ranges", x, x->rows, x->nrow);
    gpuprof__buf_s(b, ",\n");
    gpuprof__xr_json_rows(b, "gpu_ranges", x, x->gpu_rows, x->ngpu);
    gpuprof__buf_s(b, ",\n\"straggler\":");
    if (x->strag < 0) gpuprof__buf_s(b, "null");
    else {
        const gpuprof__xr_row *w = &x->rows[x->strag];
        gpuprof__buf_printf(b, "{\"rank\":%d,\"range\":", x->runs[w->slowest].rank);
        gpuprof__buf_json_str(b, w->name);
        gpuprof__buf_s(b, ",\"excess_ns\":");
        gpuprof__buf_num(b, floor(x->excess + 0.5));
        gpuprof__buf_s(b, ",\"wait_range\":");
        if (x->comm_row >= 0) gpuprof__buf_json_str(b, gpuprof__xr_comm(x)->name);
        else gpuprof__buf_s(b, "null");
        gpuprof__buf_s(b, ",\"wait_cost_share\":");
        gpuprof__buf_num(b, x->step_med == x->step_med && x->step_med > 0 ? floor(x->cost / x->step_med * 1e4 + 0.5) / 1e4 : GPUPROF__NAN);
        gpuprof__buf_s(b, "}");
    }
    gpuprof__xr_device_json(b, x);
    if (extra) gpuprof__buf_s(b, extra);
    gpuprof__buf_s(b, "}\n");
}

/* The merged trace: one process per rank, on one timeline. gpuprof writes
   one event per line; each rank's lines are copied with the pid made
   rank+1 (never 0: special in Perfetto), "ts" moved by the rank's anchor
   (t0_realtime_ns) less the earliest -- and less its measured clock offset
   where the ranks' clocks were compared (GPUPROF_MPI) --, flow ids made
   unique across ranks, and the process named "rank R · host · pid P".
   Streamed: no trace is held in memory. */
typedef struct gpuprof__xr_trace {
    const char *path;
    int rank, pid;
    uint64_t t0;                     /* the trace's anchor: CLOCK_REALTIME of its ts 0 */
    int64_t offset_ns;               /* its clock minus rank 0's, to apply (0: none; gpuprof__xr_offset_used) */
    char host[128];
} gpuprof__xr_trace;

/* Whether a measured clock offset moves a rank's events: only when it is
   larger than its error bound. Otherwise the measurement cannot tell it
   from 0, and the wall-clock anchors (NTP: tens of us between hosts, 0 on
   one host) are the better guess -- a rank descheduled in every exchange
   gives a bound, and an offset, of milliseconds. */
static int64_t gpuprof__xr_offset_used(int64_t offset_ns, int64_t bound_ns) {
    return (offset_ns < 0 ? -offset_ns : offset_ns) > bound_ns ? offset_ns : 0;
}

/* The next line of f in *buf (grown as needed), or NULL at the end. */
static char *gpuprof__xr_line(FILE *f, char **buf, size_t *cap) {
    size_t len = 0;
    if (!*buf) {
        if (!(*buf = (char *)gpuprof__alloc(4096))) return NULL;
        *cap = 4096;
    }
    while (fgets(*buf + len, (int)(*cap - len), f)) {
        len += strlen(*buf + len);
        if ((*buf)[len - 1] == '\n') return *buf;
        if (*cap - len < 2) {
            char *nb = (char *)gpuprof__alloc(2 * *cap);
            if (!nb) return NULL;
            memcpy(nb, *buf, len + 1);
            GPUPROF_FREE(*buf);
            *buf = nb;
            *cap *= 2;
        }
    }
    return len ? *buf : NULL;
}

static char *gpuprof__xr_event(char *line) {       /* the event on a line, or NULL */
    size_t n;
    while (*line == ' ' || *line == '\t' || *line == ',') line++;
    n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == ',')) line[--n] = 0;
    return n >= 2 && line[0] == '{' && line[n - 1] == '}' ? line : NULL;
}

#define GPUPROF__DIGIT(c) ((c) >= '0' && (c) <= '9')

/* The ranks' Perfetto traces. A rank's file is its packets; merged, each
   packet is copied with what would clash between ranks made the rank's own
   -- sequence ids (the rank above bit 22), track uuids (the rank + 1 above
   bit 40), flow ids (mixed with the rank), pids (rank + 1) -- its absolute
   times (BOOTTIME in clock snapshots and in packets on that clock) moved as
   the JSON events' are, and its process named "rank R · host · pid P", its
   description starting "gpuprof merged". Read frame by frame: a rank's file
   cut short (a killed rank) ends at its last whole packet. */
typedef struct gpuprof__xr_pf {
    uint32_t seq_hi;
    uint64_t uuid_hi, flow_mix;
    int64_t shift;
    int pid;
    const char *name;
} gpuprof__xr_pf;

enum { GPUPROF__XRP_PACKET, GPUPROF__XRP_TRACK, GPUPROF__XRP_PROCESS, GPUPROF__XRP_THREAD, GPUPROF__XRP_EVENT, GPUPROF__XRP_DEFAULTS,
       GPUPROF__XRP_TE_DEFAULTS, GPUPROF__XRP_SNAPSHOT, GPUPROF__XRP_CLOCK, GPUPROF__XRP_LEGACY };

/* A varint at *p, before end: 1, or 0 when it is cut or too long. */
static int gpuprof__pb_get(const unsigned char **p, const unsigned char *end, uint64_t *v) {
    uint64_t r = 0;
    int s;
    for (s = 0; *p < end && s < 64; s += 7) {
        unsigned c = *(*p)++;
        r |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80)) { *v = r; return 1; }
    }
    return 0;
}

/* A field as read: its number, wire type, value (a varint's, a fixed
   one's little-endian) and, length-delimited, its bytes [sub, sub + v). */
typedef struct gpuprof__pbf {
    uint32_t f, wt;
    uint64_t v;
    const unsigned char *sub;
} gpuprof__pbf;

/* The next field of a message at *p, before end, into *x: 1, or 0 at its
   end or where it does not decode (cut short, an unknown wire type). */
static int gpuprof__pb_field(const unsigned char **p, const unsigned char *end, gpuprof__pbf *x) {
    uint64_t tag;
    int k, size;
    if (*p >= end || !gpuprof__pb_get(p, end, &tag)) return 0;
    x->f = (uint32_t)(tag >> 3);
    x->wt = (uint32_t)(tag & 7);
    if (x->wt == 0) return gpuprof__pb_get(p, end, &x->v);
    if (x->wt == 2) {
        if (!gpuprof__pb_get(p, end, &x->v) || x->v > (uint64_t)(end - *p)) return 0;
        x->sub = *p;
        *p += x->v;
        return 1;
    }
    if (x->wt != 1 && x->wt != 5) return 0;
    size = x->wt == 1 ? 8 : 4;
    if (end - *p < size) return 0;
    for (x->v = 0, k = 0; k < size; k++) x->v |= (uint64_t)(*p)[k] << (8 * k);
    *p += size;
    return 1;
}

/* The value of varint field f of a message (its first), or dflt. */
static uint64_t gpuprof__pb_find(const unsigned char *p, const unsigned char *end, uint32_t f, uint64_t dflt) {
    gpuprof__pbf x;
    while (gpuprof__pb_field(&p, end, &x))
        if (x.wt == 0 && x.f == f) return x.v;
    return dflt;
}

/* Message `kind` [p, end) rewritten for the rank into o (room: twice its
   size and 256 bytes); the end of what was written, or NULL when it does
   not decode. */
static char *gpuprof__xr_pf_msg(const gpuprof__xr_pf *c, int kind, const unsigned char *p, const unsigned char *end, char *o) {
    gpuprof__pbf x;
    /* a packet on the absolute clock, a BOOTTIME clock: their times move */
    int moves = kind == GPUPROF__XRP_PACKET ? gpuprof__pb_find(p, end, 58, 0) == GPUPROF__PF_ABS
              : kind == GPUPROF__XRP_CLOCK ? gpuprof__pb_find(p, end, 1, 0) == GPUPROF__PF_ABS : 0;
    while (p < end) {
        const unsigned char *field = p;
        int sub = -1;
        if (!gpuprof__pb_field(&p, end, &x)) return NULL;
        if (x.wt == 0) {
            if (kind == GPUPROF__XRP_PACKET && x.f == 10) x.v |= (uint64_t)c->seq_hi;
            else if (moves && ((kind == GPUPROF__XRP_PACKET && x.f == 8) || (kind == GPUPROF__XRP_CLOCK && x.f == 2))) x.v = (uint64_t)((int64_t)x.v + c->shift);
            else if ((kind == GPUPROF__XRP_TRACK && (x.f == 1 || x.f == 5)) || ((kind == GPUPROF__XRP_EVENT || kind == GPUPROF__XRP_TE_DEFAULTS) && x.f == 11))
                x.v |= c->uuid_hi;
            else if ((kind == GPUPROF__XRP_PROCESS || kind == GPUPROF__XRP_THREAD) && x.f == 1) x.v = (uint64_t)c->pid;
            else if (kind == GPUPROF__XRP_LEGACY && x.f == 8) x.v ^= c->flow_mix;          /* a bound flow's id */
            o = gpuprof__pb_uint(o, x.f, x.v);
            continue;
        }
        if (x.wt == 1 && kind == GPUPROF__XRP_EVENT && (x.f == 47 || x.f == 48)) {
            o = gpuprof__pb_fixed64(o, x.f, x.v ^ c->flow_mix);
            continue;
        }
        switch (x.wt == 2 ? kind * 100 + (int)x.f : -1) {
        case GPUPROF__XRP_PACKET * 100 + 60: sub = GPUPROF__XRP_TRACK; break;
        case GPUPROF__XRP_PACKET * 100 + 11: sub = GPUPROF__XRP_EVENT; break;
        case GPUPROF__XRP_PACKET * 100 + 59: sub = GPUPROF__XRP_DEFAULTS; break;
        case GPUPROF__XRP_PACKET * 100 + 6: sub = GPUPROF__XRP_SNAPSHOT; break;
        case GPUPROF__XRP_EVENT * 100 + 6: sub = GPUPROF__XRP_LEGACY; break;
        case GPUPROF__XRP_TRACK * 100 + 3: sub = GPUPROF__XRP_PROCESS; break;
        case GPUPROF__XRP_TRACK * 100 + 4: sub = GPUPROF__XRP_THREAD; break;
        case GPUPROF__XRP_DEFAULTS * 100 + 11: sub = GPUPROF__XRP_TE_DEFAULTS; break;
        case GPUPROF__XRP_SNAPSHOT * 100 + 1: sub = GPUPROF__XRP_CLOCK; break;
        default: break;
        }
        if (x.wt == 2 && kind == GPUPROF__XRP_PROCESS && x.f == 6) o = gpuprof__pb_str(o, 6, c->name);
        else if (x.wt == 2 && kind == GPUPROF__XRP_TRACK && x.f == 14) o = gpuprof__pb_str(o, 14, "gpuprof merged trace: a process per rank");
        else if (sub >= 0) {
            char *start = gpuprof__pb_open(o, x.f), *q = gpuprof__xr_pf_msg(c, sub, x.sub, x.sub + x.v, start);
            if (!q) return NULL;
            o = gpuprof__pb_close(start, q);
        } else {                               /* as it was */
            memcpy(o, field, (size_t)(p - field));
            o += p - field;
        }
    }
    return o;
}

/* Whether the file is a Perfetto trace: by its name, as gpuprof writes it. */
static int gpuprof__xr_is_pf(const char *path) {
    return gpuprof__trace_format(path) == GPUPROF__FMT_PERFETTO;
}

/* The next whole packet of f in *buf (grown as needed): its length, or -1
   at the end (or where a packet is cut short, or the frame is not one). */
static long gpuprof__xr_pf_next(FILE *f, unsigned char **buf, size_t *cap) {
    uint64_t len = 0;
    int c, s;
    if ((c = getc(f)) != 0x0a) return -1;
    for (s = 0; s < 64; s += 7) {
        if ((c = getc(f)) == EOF) return -1;
        len |= (uint64_t)(c & 0x7f) << s;
        if (!(c & 0x80)) break;
    }
    if (len > (1u << 30)) return -1;
    if (len + 1 > *cap) {
        unsigned char *nb = (unsigned char *)gpuprof__alloc((size_t)len + 1);
        if (!nb) return -1;
        GPUPROF_FREE(*buf);
        *buf = nb;
        *cap = (size_t)len + 1;
    }
    return fread(*buf, 1, (size_t)len, f) == (size_t)len ? (long)len : -1;
}

/* A rank's process description ("gpuprof V; host=H; t0_realtime_ns=N;
   rank=R"), or a merged trace's ("gpuprof merged ..."): 1 for the latter. */
static int gpuprof__xr_pf_desc(gpuprof__xr_trace *t, const unsigned char *s, uint64_t n) {
    char desc[512];
    const char *q;
    size_t m = n < sizeof desc - 1 ? (size_t)n : sizeof desc - 1, i;
    memcpy(desc, s, m);
    desc[m] = 0;
    if ((q = strstr(desc, "; rank=")) != NULL) t->rank = atoi(q + 7);
    if ((q = strstr(desc, "; t0_realtime_ns=")) != NULL) t->t0 = strtoull(q + 17, NULL, 10);
    if ((q = strstr(desc, "; host=")) != NULL) {
        for (q += 7, i = 0; *q && *q != ';' && i + 1 < sizeof t->host; q++) t->host[i++] = *q;
        t->host[i] = 0;
    }
    return strncmp(desc, "gpuprof merged", 14) == 0;
}

/* The rank, pid, host and anchor of a Perfetto trace: its process track's
   pid and description, in its first packets. 0; 1 for a merged trace; or
   -1 with the reason in why. */
static int gpuprof__xr_pf_head(gpuprof__xr_trace *t, char *why, size_t nwhy) {
    FILE *f = fopen(t->path, "rb");
    unsigned char *buf = NULL;
    size_t cap = 0;
    long n;
    int k, found = 0, merged = 0;
    if (!f) { snprintf(why, nwhy, "cannot read %s: %s", t->path, strerror(errno)); return -1; }
    t->rank = -1;
    t->t0 = 0;
    t->host[0] = 0;
    for (k = 0; k < 8 && !found && (n = gpuprof__xr_pf_next(f, &buf, &cap)) >= 0; k++) {
        const unsigned char *p = buf;
        gpuprof__pbf x, y;
        while (gpuprof__pb_field(&p, buf + n, &x)) {
            const unsigned char *d = x.sub;
            if (x.wt != 2 || x.f != 60) continue;          /* a track descriptor */
            while (gpuprof__pb_field(&d, x.sub + x.v, &y)) {
                if (y.wt == 2 && y.f == 3) { found = 1; t->pid = (int)gpuprof__pb_find(y.sub, y.sub + y.v, 1, 0); }
                if (y.wt == 2 && y.f == 14) merged = gpuprof__xr_pf_desc(t, y.sub, y.v);
            }
        }
    }
    GPUPROF_FREE(buf);
    fclose(f);
    if (merged) return 1;
    if (!found || t->rank < 0 || !t->t0) {
        snprintf(why, nwhy, "%s is not the Perfetto trace of a rank (%s); write each rank's with GPUPROF_TRACE=trace.%%r.pftrace", t->path,
                 !found ? "no process track at its start" : t->rank < 0 ? "no rank in its process's description" : "no t0_realtime_ns anchor");
        return -1;
    }
    return 0;
}

/* 1 for a packet with a track event other than a slice's end (what the
   JSON trace has one event for), else 0. */
static int gpuprof__xr_pf_event(const unsigned char *p, const unsigned char *end) {
    gpuprof__pbf x;
    while (gpuprof__pb_field(&p, end, &x))
        if (x.wt == 2 && x.f == 11) return gpuprof__pb_find(x.sub, x.sub + x.v, 9, 0) != 2;
    return 0;
}

/* Copies a rank's packets into out, rewritten; the events among them. */
static long gpuprof__xr_pf_copy(FILE *in, FILE *out, const gpuprof__xr_pf *c, int *bad) {
    unsigned char *buf = NULL;
    char *o = NULL;
    size_t cap = 0, ocap = 0;
    long n, events = 0;
    char frame[16];
    while ((n = gpuprof__xr_pf_next(in, &buf, &cap)) >= 0) {
        char *e;
        if ((size_t)n * 2 + 256 > ocap) {
            GPUPROF_FREE(o);
            ocap = (size_t)n * 2 + 256;
            if (!(o = (char *)gpuprof__alloc(ocap))) { *bad = 1; break; }
        }
        if (!(e = gpuprof__xr_pf_msg(c, GPUPROF__XRP_PACKET, buf, buf + n, o))) { *bad = 1; break; }
        frame[0] = 0x0a;
        fwrite(frame, 1, (size_t)(gpuprof__pb_varint(frame + 1, (uint64_t)(e - o)) - frame), out);
        fwrite(o, 1, (size_t)(e - o), out);
        events += gpuprof__xr_pf_event(buf, buf + n);
    }
    GPUPROF_FREE(buf);
    GPUPROF_FREE(o);
    return events;
}

/* The merged Perfetto trace of n ranks' Perfetto traces, as gpuprof__xr_merge. */
static int gpuprof__xr_merge_pf(const gpuprof__xr_trace *ts, int n, const int64_t *shift, FILE *out, long *events, char *why, size_t nwhy) {
    int i;
    for (i = 0; i < n; i++) {
        FILE *in = fopen(ts[i].path, "rb");
        gpuprof__xr_pf c;
        char name[256];
        int bad = 0;
        if (!in) { snprintf(why, nwhy, "cannot read %s: %s", ts[i].path, strerror(errno)); return -1; }
        snprintf(name, sizeof name, "rank %d \xc2\xb7 %.128s \xc2\xb7 pid %d", ts[i].rank, ts[i].host, ts[i].pid);
        c.seq_hi = (uint32_t)(ts[i].rank + 1) << 22;
        c.uuid_hi = (uint64_t)(ts[i].rank + 1) << 40;
        c.flow_mix = (uint64_t)(uint32_t)(ts[i].rank + 1) * (uint64_t)0x9E3779B97F4A7C15ull;
        c.shift = shift[i];
        c.pid = ts[i].rank + 1;
        c.name = name;
        *events += gpuprof__xr_pf_copy(in, out, &c, &bad);
        fclose(in);
        if (bad) { snprintf(why, nwhy, "%s: a packet that does not decode as gpuprof writes them; the merged trace stops before it", ts[i].path); return -1; }
    }
    return 0;
}

/* The rank, pid, host and anchor from a trace's process_name event (in its
   first lines). 0; 1 for a merged trace (this code's output); or -1 with
   the reason in why. */
static int gpuprof__xr_trace_head(gpuprof__xr_trace *t, char *why, size_t nwhy) {
    static const char rank_key[] = "\"distributedInfo\": {\"rank\": ";
    FILE *f;
    if (gpuprof__trace_format(t->path) == GPUPROF__FMT_PERFETTO) return gpuprof__xr_pf_head(t, why, nwhy);
    f = fopen(t->path, "r");
    char *line = NULL, *e, *q;
    size_t cap = 0;
    int found = 0, k;
    if (!f) { snprintf(why, nwhy, "cannot read %s: %s", t->path, strerror(errno)); return -1; }
    for (k = 0; k < 8 && !found && gpuprof__xr_line(f, &line, &cap); k++) {
        if (!(e = gpuprof__xr_event(line)) || !strstr(e, "\"name\":\"process_name\"")) continue;
        found = 1;
        if (strstr(e, "\"merged\":true")) { GPUPROF_FREE(line); fclose(f); return 1; }
        q = strstr(e, rank_key);
        t->rank = q ? atoi(q + sizeof rank_key - 1) : -1;
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
    GPUPROF_FREE(line);
    fclose(f);
    if (!found || t->rank < 0 || !t->t0) {
        snprintf(why, nwhy, "%s is not the trace of a rank (%s); write each rank's with GPUPROF_TRACE=trace.%%r.json", t->path,
                 !found ? "no process_name event at its start" : t->rank < 0 ? "no distributedInfo rank" : "no t0_realtime_ns anchor");
        return -1;
    }
    return 0;
}

/* Copies event `e` to `out` with "pid":N replaced, the number after "ts":
   moved by off_ns, and the number after "id": made unique for the rank. */
static void gpuprof__xr_copy_event(FILE *out, const char *e, int pid, int64_t off_ns, int rank, int nranks) {
    const char *p = e;
    while (*p) {
        if (strncmp(p, "\"pid\":", 6) == 0) {
            fprintf(out, "\"pid\":%d", pid);
            p += 6;
            if (*p == '-') p++;
            while (GPUPROF__DIGIT(*p)) p++;
        } else if (strncmp(p, "\"ts\":", 5) == 0 && GPUPROF__DIGIT(p[5])) {
            int64_t us = 0, frac = 0, ns;
            int d = 0;
            p += 5;
            while (GPUPROF__DIGIT(*p)) us = us * 10 + (*p++ - '0');
            if (*p == '.') for (p++; GPUPROF__DIGIT(*p); p++) if (d < 3) { frac = frac * 10 + (*p - '0'); d++; }
            while (d < 3) { frac *= 10; d++; }
            ns = us * 1000 + frac + off_ns;
            if (ns < 0) ns = 0;               /* a negative ts is rejected by the viewers */
            fprintf(out, "\"ts\":%lld.%03lld", (long long)(ns / 1000), (long long)(ns % 1000));
        } else if (strncmp(p, "\"id\":", 5) == 0 && GPUPROF__DIGIT(p[5])) {
            unsigned long long id = strtoull(p + 5, NULL, 10);
            fprintf(out, "\"id\":%llu", id * (unsigned long long)nranks + (unsigned long long)rank);
            for (p += 5; GPUPROF__DIGIT(*p); p++) {}
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

/* The merged JSON trace of n ranks' JSON traces, as gpuprof__xr_merge. */
static int gpuprof__xr_merge_json(const gpuprof__xr_trace *ts, int n, const int64_t *shift, int nranks, FILE *out, long *events, char *why, size_t nwhy) {
    int i;
    char *line = NULL, *e;
    const char *h;
    size_t cap = 0;
    fputs("[", out);
    for (i = 0; i < n; i++) {
        FILE *f = fopen(ts[i].path, "r");
        int pid = ts[i].rank + 1;
        if (!f) {
            snprintf(why, nwhy, "cannot read %s: %s", ts[i].path, strerror(errno));
            GPUPROF_FREE(line);
            return -1;
        }
        fprintf(out, "%s\n{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rank %d \xc2\xb7 ", i ? "," : "", pid, ts[i].rank);
        for (h = ts[i].host; *h; h++) if (*h != '"' && *h != '\\') fputc(*h, out);
        fprintf(out, " \xc2\xb7 pid %d\",\"merged\":true}}", ts[i].pid);
        while (gpuprof__xr_line(f, &line, &cap)) {
            if (!(e = gpuprof__xr_event(line)) || strstr(e, "\"name\":\"process_name\"")) continue;
            fputs(",\n", out);
            gpuprof__xr_copy_event(out, e, pid, shift[i], ts[i].rank, nranks);
            (*events)++;
        }
        fclose(f);
    }
    GPUPROF_FREE(line);
    fputs("\n]\n", out);
    return 0;
}

/* Writes the merged trace of n ranks' traces (distinct ranks) to out_path,
   in the format its name says (JSON, or Perfetto's for .pftrace; the ranks'
   traces must be of that format). Each rank's times move by its anchor
   (t0_realtime_ns) less the earliest, and less its measured clock offset.
   0 with *events and *spread_ns (how much later than the first the last
   rank started), or -1 with the reason in why. */
static int gpuprof__xr_merge(const gpuprof__xr_trace *ts, int n, const char *out_path, long *events, int64_t *spread_ns, char *why, size_t nwhy) {
    int64_t base = INT64_MAX, latest = 0, *shift;
    int i, max_rank = 0, pf = gpuprof__xr_is_pf(out_path), rc;
    FILE *out;
    *events = 0;
    for (i = 0; i < n; i++)
        if (gpuprof__xr_is_pf(ts[i].path) != pf) {
            snprintf(why, nwhy, "%s is a %s trace, and the merged trace %s would be %s: merge Perfetto traces into a .pftrace, JSON traces into a .json",
                     ts[i].path, pf ? "JSON" : "Perfetto", out_path, pf ? "Perfetto's" : "JSON");
            return -1;
        }
    if (!(shift = (int64_t *)gpuprof__alloc((size_t)(n > 0 ? n : 1) * sizeof *shift))) { snprintf(why, nwhy, "out of memory"); return -1; }
    for (i = 0; i < n; i++) {
        int64_t at = (int64_t)ts[i].t0 - ts[i].offset_ns;     /* its ts 0 on rank 0's clock */
        if (at < base) base = at;
        if (ts[i].rank > max_rank) max_rank = ts[i].rank;
    }
    for (i = 0; i < n; i++) {
        shift[i] = (int64_t)ts[i].t0 - ts[i].offset_ns - base;
        if (shift[i] > latest) latest = shift[i];
    }
    if (!(out = fopen(out_path, pf ? "wb" : "w"))) {
        snprintf(why, nwhy, "cannot write %s: %s", out_path, strerror(errno));
        GPUPROF_FREE(shift);
        return -1;
    }
    rc = pf ? gpuprof__xr_merge_pf(ts, n, shift, out, events, why, nwhy) : gpuprof__xr_merge_json(ts, n, shift, max_rank + 1, out, events, why, nwhy);
    GPUPROF_FREE(shift);
    if (fclose(out) != 0 && rc == 0) { snprintf(why, nwhy, "cannot write %s: %s", out_path, strerror(errno)); return -1; }
    *spread_ns = latest;
    return rc;
}
#undef GPUPROF__DIGIT

#endif /* GPUPROF_MPI || GPUPROF_RANKS_REPORT */

/* ----------------------------------------------------------------------
   MPI (GPUPROF_MPI; SPEC 10): the ranks compared inside MPI_Finalize.
   Once MPI is initialized (seen at gpuprof_init, at a GPUPROF_STEP or at
   gpuprof_shutdown), gpuprof registers a delete callback for an attribute
   of MPI_COMM_SELF: MPI_Finalize runs it first, while MPI still works and
   every rank is there. In it each rank finishes its session if it still
   runs (the outputs are written as at exit), then rank 0 measures every
   rank's clock offset by ping-pong (the fastest of a few round trips; half
   of it bounds the error), takes every rank's flat table, and prints the
   cross-rank report where its own table went, with the JSON next to its
   summary. No collective: a rank that never registered (no gpuprof call
   after MPI_Init) would hang the others in one. Each rank says hello to
   rank 0, which waits for the others up to GPUPROF_MPI_TIMEOUT seconds
   (10), then talks to those that came, one at a time, point to point, on
   MPI_COMM_WORLD with tags of its own. A rank with profiling off still
   takes part, with no figures. MPI is called only from the thread that
   called MPI_Init (any thread under MPI_THREAD_MULTIPLE), never after
   MPI_Finalize. Every MPI function gpuprof calls is in the table below.
   ---------------------------------------------------------------------- */
#ifdef GPUPROF_MPI
typedef struct gpuprof__mpi_api {
    int (*Initialized)(int *);
    int (*Finalized)(int *);
    int (*Query_thread)(int *);
    int (*Is_thread_main)(int *);
    int (*Comm_rank)(MPI_Comm, int *);
    int (*Comm_size)(MPI_Comm, int *);
    int (*Comm_create_keyval)(MPI_Comm_copy_attr_function *, MPI_Comm_delete_attr_function *, int *, void *);
    int (*Comm_set_attr)(MPI_Comm, int, void *);
    int (*Send)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
    int (*Recv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
    int (*Iprobe)(int, int, MPI_Comm, int *, MPI_Status *);
} gpuprof__mpi_api;
static const gpuprof__mpi_api gpuprof__mpi = {
    MPI_Initialized, MPI_Finalized, MPI_Query_thread, MPI_Is_thread_main, MPI_Comm_rank, MPI_Comm_size,
    MPI_Comm_create_keyval, MPI_Comm_set_attr, MPI_Send, MPI_Recv, MPI_Iprobe,
};
/* gpuprof's messages at MPI_Finalize, on MPI_COMM_WORLD (a communicator of
   its own would need a collective, which a rank that never registered would
   not join): tags the program is unlikely to leave unreceived there. */
enum { GPUPROF__TAG_HELLO = 0x47500, GPUPROF__TAG_GO, GPUPROF__TAG_PING, GPUPROF__TAG_PONG, GPUPROF__TAG_REC };

#define GPUPROF__MPI_ROUNDS 20
#define GPUPROF__XR_MAGIC 0x52585047u     /* "GPXR" */

static struct {
    pthread_mutex_t mu;
    int attached;                /* 0 not yet, 1 the hook is registered, 2 it ran, -1 registering failed */
    char *mine;                  /* this rank's flat table (gpuprof__mpi_keep), serialized */
    size_t nmine;
    char *report;                /* where rank 0's table went: stderr, stdout, off or a path */
    char *ranks_path;            /* the cross-rank JSON: the summary's pattern with %r -> "ranks" */
    char *merged_path;           /* the merged trace: the trace's pattern with %r -> "ranks" */
} gpuprof__mpis = { PTHREAD_MUTEX_INITIALIZER, 0, NULL, 0, NULL, NULL, NULL };

/* An output pattern's path with %r -> "ranks" (rank 0's files for the
   whole job), or NULL without %r. */
static char *gpuprof__mpi_path(const char *pattern) {
    char pat[4096], path[4096];
    const char *r = pattern ? strstr(pattern, "%r") : NULL;
    if (!r || strlen(pattern) >= 4000) return NULL;
    snprintf(pat, sizeof pat, "%.*sranks%s", (int)(r - pattern), pattern, r + 2);
    return gpuprof__path_expand(pat, path, sizeof path) == 0 ? gpuprof__strdup(path) : NULL;
}

static int gpuprof__mpi_hook(MPI_Comm comm, int keyval, void *value, void *extra);   /* registered here, defined last */

/* Registers the hook once MPI runs (any thread may ask; only the thread
   MPI allows calls it). */
static void gpuprof__mpi_attach(void) {
    int init = 0, fin = 0, level = MPI_THREAD_SINGLE, is_main = 0, key, wr = -1;
    if (GPUPROF__LDA(&gpuprof__mpis.attached) || gpuprof__mpi.Initialized(&init) != MPI_SUCCESS || !init) return;   /* a step of a run without MPI: no lock */
    pthread_mutex_lock(&gpuprof__mpis.mu);
    if (gpuprof__mpis.attached || gpuprof__mpi.Finalized(&fin) != MPI_SUCCESS || fin) {
        pthread_mutex_unlock(&gpuprof__mpis.mu);
        return;
    }
    gpuprof__mpi.Query_thread(&level);
    gpuprof__mpi.Is_thread_main(&is_main);
    if (level != MPI_THREAD_MULTIPLE && !is_main) { pthread_mutex_unlock(&gpuprof__mpis.mu); return; }
    if (gpuprof__mpi.Comm_create_keyval(MPI_COMM_NULL_COPY_FN, gpuprof__mpi_hook, &key, NULL) != MPI_SUCCESS ||
        gpuprof__mpi.Comm_set_attr(MPI_COMM_SELF, key, NULL) != MPI_SUCCESS) {
        gpuprof__warn(GPUPROF__W_BAD_ENV, "cannot register a hook at MPI_Finalize (MPI_Comm_set_attr on MPI_COMM_SELF failed); no cross-rank report");
        GPUPROF__STR(&gpuprof__mpis.attached, -1);
        pthread_mutex_unlock(&gpuprof__mpis.mu);
        return;
    }
    GPUPROF__STR(&gpuprof__mpis.attached, 1);
    gpuprof__mpi.Comm_rank(MPI_COMM_WORLD, &wr);
    if (gpuprof__run.rank >= 0 && wr != gpuprof__run.rank)
        gpuprof__warn(GPUPROF__W_BAD_ENV, "this process is rank %d to MPI but rank %d from %s; the cross-rank report uses MPI's", wr, gpuprof__run.rank,
                      gpuprof__run.rank_source ? gpuprof__run.rank_source : "the environment");
    pthread_mutex_unlock(&gpuprof__mpis.mu);
}

/* Appends raw bytes (the record is read back by the same program on the
   same kind of machine). */
static void gpuprof__rec_put(gpuprof__buf *b, const void *p, size_t n) { gpuprof__buf_put(b, (const char *)p, n); }

static void gpuprof__mpi_forget(void) {
    GPUPROF_FREE(gpuprof__mpis.mine);
    GPUPROF_FREE(gpuprof__mpis.report);
    GPUPROF_FREE(gpuprof__mpis.ranks_path);
    GPUPROF_FREE(gpuprof__mpis.merged_path);
    gpuprof__mpis.mine = gpuprof__mpis.report = gpuprof__mpis.ranks_path = gpuprof__mpis.merged_path = NULL;
    gpuprof__mpis.nmine = 0;
}

/* At shutdown (under the life lock, before the settings go): this rank's
   flat table and trace path for the gather, and where rank 0's outputs go. */
static void gpuprof__mpi_keep(void) {
    gpuprof__buf b = { NULL, 0, 0, 0 };
    gpuprof__snap s;
    uint32_t magic = GPUPROF__XR_MAGIC, n = 0, i;
    int32_t head[3];
    double steps, step_ns;
#ifdef GPUPROF_CUDA
    gpuprof__kernel **kv = NULL;
    uint32_t nk = 0;
    double ktotal = 0;
#endif
    gpuprof__mpi_attach();     /* MPI started after gpuprof: still in time */
    if (GPUPROF__LDA(&gpuprof__mpis.attached) != 1) {
        int fin = 0;
        if (GPUPROF__LDA(&gpuprof__mpis.attached) == 0 && gpuprof__run.world_size > 1 && gpuprof__run.rank == 0 && gpuprof__mpi.Finalized(&fin) == MPI_SUCCESS && fin)
            gpuprof__warn(GPUPROF__W_BAD_ENV, "MPI was finalized before gpuprof saw it initialized, so the ranks were not compared "
                          "(call gpuprof_init() or GPUPROF_STEP() after MPI_Init; gpuprof-ranks compares the summaries)");
        return;
    }
    gpuprof__mpi_forget();
    gpuprof__mpis.report = gpuprof__strdup(gpuprof__g.report ? gpuprof__g.report : "stderr");
    gpuprof__mpis.ranks_path = gpuprof__mpi_path(gpuprof__run.summary_pattern);
    {
        int merge = 1;
        gpuprof__env_flag("GPUPROF_MERGE_TRACES", &merge);     /* 0: gpuprof-ranks merges them later */
        if (merge) gpuprof__mpis.merged_path = gpuprof__mpi_path(gpuprof__run.trace_pattern);
    }
    pthread_mutex_lock(&gpuprof__lock);
    if (gpuprof__collect(&s) != 0) { pthread_mutex_unlock(&gpuprof__lock); return; }
    steps = gpuprof__steps.counted ? (double)gpuprof__steps.counted : 1.0;
    step_ns = gpuprof__steps.stats.count ? gpuprof_stats_quantile(&gpuprof__steps.stats, 0.5) : GPUPROF__NAN;
    head[0] = gpuprof__run.rank;
    head[1] = gpuprof__run.world_size;
    head[2] = 1;                                /* recorded */
    gpuprof__rec_put(&b, &magic, 4);
    gpuprof__rec_put(&b, head, sizeof head);
    gpuprof__rec_put(&b, &steps, 8);
    gpuprof__rec_put(&b, &step_ns, 8);
    for (i = 0; i < s.nflat; i++) if (s.flatp[i]->stats.count || s.flatp[i]->gpu.count) n++;
#ifdef GPUPROF_CUDA
    /* NCCL's kernels (kernel capture): the GPU side of the collectives */
    pthread_mutex_lock(&gpuprof__kc_mu);
    if (gpuprof__kc.map && (kv = gpuprof__kc_sorted(&nk, &ktotal)) != NULL)
        for (i = 0; i < nk; i++) if (kv[i]->stats.count && gpuprof__is_comm(kv[i]->shown)) n++;
#endif
    gpuprof__rec_put(&b, &n, 4);
    for (i = 0; i < s.nflat; i++) {
        const gpuprof__row *r = s.flatp[i];
        double f[4];
        int32_t gpu = r->gpu.count > 0;
        const char *name = gpuprof__registry.names[r->name_id].text;
        uint32_t len = (uint32_t)strlen(name) + 1;
        if (!r->stats.count && !r->gpu.count) continue;
        f[0] = (double)r->self_ns;
        f[1] = r->stats.count ? gpuprof_stats_quantile(&r->stats, 0.5) : GPUPROF__NAN;
        f[2] = gpu ? (double)r->gpu_self_ns : 0.0;
        f[3] = gpu ? gpuprof_stats_quantile(&r->gpu, 0.5) : GPUPROF__NAN;
        gpuprof__rec_put(&b, f, sizeof f);
        gpuprof__rec_put(&b, &gpu, 4);
        gpuprof__rec_put(&b, &len, 4);
        gpuprof__rec_put(&b, name, len);
    }
#ifdef GPUPROF_CUDA
    for (i = 0; kv && i < nk; i++) {
        const gpuprof__kernel *k = kv[i];
        double f[4];
        int32_t flags = 3;                      /* GPU times, a kernel */
        uint32_t len = (uint32_t)strlen(k->shown) + 1;
        if (!k->stats.count || !gpuprof__is_comm(k->shown)) continue;
        f[0] = f[1] = GPUPROF__NAN;
        f[2] = k->stats.sum;
        f[3] = gpuprof_stats_quantile(&k->stats, 0.5);
        gpuprof__rec_put(&b, f, sizeof f);
        gpuprof__rec_put(&b, &flags, 4);
        gpuprof__rec_put(&b, &len, 4);
        gpuprof__rec_put(&b, k->shown, len);
    }
    GPUPROF_FREE(kv);
    pthread_mutex_unlock(&gpuprof__kc_mu);
#endif
    {
        const char *tp = gpuprof__g.trace_path && gpuprof__trace.mode == GPUPROF__TRACE_STREAM && !GPUPROF__LDA(&gpuprof__trace.out.failed) ? gpuprof__g.trace_path : "";
        uint32_t len = (uint32_t)strlen(tp) + 1;
        gpuprof__rec_put(&b, &len, 4);
        gpuprof__rec_put(&b, tp, len);
    }
    gpuprof__snap_free(&s);
    pthread_mutex_unlock(&gpuprof__lock);
    if (b.failed) { GPUPROF_FREE(b.p); return; }
    gpuprof__mpis.mine = b.p;
    gpuprof__mpis.nmine = b.len;
}

/* One rank's record back into a run and its trace's path ("": none);
   names point into the record. 0, or -1 when it is not a whole record. */
static int gpuprof__mpi_read(const char *p, size_t n, gpuprof__xr_run *run, const char **trace) {
    size_t off = 0;
    uint32_t magic, k;
    int32_t head[3];
#define GPUPROF__TAKE(dst, sz) do { if (n - off < (size_t)(sz)) return -1; memcpy((dst), p + off, (sz)); off += (sz); } while (0)
    GPUPROF__TAKE(&magic, 4);
    if (magic != GPUPROF__XR_MAGIC) return -1;
    GPUPROF__TAKE(head, sizeof head);
    GPUPROF__TAKE(&run->steps, 8);
    GPUPROF__TAKE(&run->step_ns, 8);
    GPUPROF__TAKE(&run->nranges, 4);
    run->rank = head[0];
    run->world = head[1] > 0 ? head[1] : 0;
    if (run->nranges > n / 24) return -1;
    run->ranges = (gpuprof__xr_range *)gpuprof__alloc((size_t)(run->nranges + 1) * sizeof *run->ranges);
    if (!run->ranges) return -1;
    for (k = 0; k < run->nranges; k++) {
        gpuprof__xr_range *g = &run->ranges[k];
        double f[4];
        int32_t gpu;
        uint32_t len;
        GPUPROF__TAKE(f, sizeof f);
        GPUPROF__TAKE(&gpu, 4);
        GPUPROF__TAKE(&len, 4);
        if (len == 0 || n - off < len || p[off + len - 1] != 0) return -1;
        g->name = p + off;
        off += len;
        g->self_ns = f[0]; g->p50_ns = f[1]; g->gpu = (gpu & 1) != 0; g->kernel = (gpu & 2) != 0; g->gpu_self_ns = f[2]; g->gpu_p50_ns = f[3];
    }
    {
        uint32_t len;
        GPUPROF__TAKE(&len, 4);
        if (len == 0 || n - off < len || p[off + len - 1] != 0) return -1;
        *trace = p + off;
    }
#undef GPUPROF__TAKE
    return 0;
}

/* The clock zero of this rank's last session on the wall clock, advanced
   by the profiler's clock: what the per-rank files use to line up. */
static int64_t gpuprof__mpi_now(void) {
    if (gpuprof__clock.mult && gpuprof__run.t0_realtime_ns)
        return (int64_t)(gpuprof__run.t0_realtime_ns + gpuprof__ticks_to_ns(gpuprof__ticks() - GPUPROF__LD(&gpuprof__clock.base)));
    {
        gpuprof__timespec ts;
        gpuprof__clock_gettime(GPUPROF__CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
}

/* The clock offset of rank r to rank 0 by ping-pong: rank 0 reads its
   clock, asks, r answers with its clock, rank 0 reads again. The round trip
   with the least time bounds the error: offset = theirs - (send + receive)
   / 2, within half that round trip. At least GPUPROF__MPI_ROUNDS exchanges,
   more (up to 5x, 0.2 s a rank, until `until` for all) while the bound is
   above 20 us: a rank descheduled in every exchange (more ranks than
   cores) gives a loose one. Each ping says whether another follows. Rank
   0's side; gpuprof__mpi_pong is the other rank's. */
static void gpuprof__mpi_ping(int r, int64_t *off, int64_t *bound, int64_t until) {
    int64_t best = INT64_MAX, start = gpuprof__mpi_now(), msg[2], t;
    int k;
    for (k = 0; ; k++) {
        int64_t t0 = gpuprof__mpi_now(), t1;
        msg[0] = k < GPUPROF__MPI_ROUNDS || (best > 20000 && k < 5 * GPUPROF__MPI_ROUNDS && t0 - start < 200000000 && t0 < until);
        msg[1] = t0;
        gpuprof__mpi.Send(msg, 2, MPI_INT64_T, r, GPUPROF__TAG_PING, MPI_COMM_WORLD);
        if (!msg[0]) break;
        gpuprof__mpi.Recv(&t, 1, MPI_INT64_T, r, GPUPROF__TAG_PONG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        t1 = gpuprof__mpi_now();
        if (t1 - t0 < best) { best = t1 - t0; *off = t - (t0 + (t1 - t0) / 2); *bound = (t1 - t0 + 1) / 2; }
    }
}
static void gpuprof__mpi_pong(void) {
    int64_t msg[2], t;
    for (;;) {
        gpuprof__mpi.Recv(msg, 2, MPI_INT64_T, 0, GPUPROF__TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (!msg[0]) break;
        t = gpuprof__mpi_now();
        gpuprof__mpi.Send(&t, 1, MPI_INT64_T, 0, GPUPROF__TAG_PONG, MPI_COMM_WORLD);
    }
}

/* Waits (polling, so MPI progresses) up to `seconds` for a message with
   `tag` from `source` (MPI_ANY_SOURCE: any); 1 with *st filled, 0 on time out. */
static int gpuprof__mpi_wait(int source, int tag, double seconds, MPI_Status *st) {
    int64_t until = (int64_t)gpuprof__mono_ns() + (int64_t)(seconds * 1e9);
    int flag = 0;
    for (;;) {
        if (gpuprof__mpi.Iprobe(source, tag, MPI_COMM_WORLD, &flag, st) != MPI_SUCCESS) return 0;
        if (flag) return 1;
        if ((int64_t)gpuprof__mono_ns() > until) return 0;
        {
            gpuprof__timespec ts;
            ts.tv_sec = 0;
            ts.tv_nsec = 100000;                   /* 0.1 ms */
            gpuprof__nanosleep(&ts, NULL);
        }
    }
}

/* Rank 0: the ranks' traces merged into one, when it can read them all
   (one host, or a shared file system); else how to merge them elsewhere. */
static void gpuprof__mpi_merge(gpuprof__buf *txt, gpuprof__xr_trace *ts, int n, int nrun) {
    char why[600];
    long events = 0;
    int64_t spread = 0;
    int i;
    for (i = 0; i < n; i++) {
        int64_t off = ts[i].offset_ns;
        if (gpuprof__xr_trace_head(&ts[i], why, sizeof why) != 0) {
            gpuprof__buf_printf(txt, "no merged trace: rank 0 %s (another host's file? merge them where they all are: "
                                     "gpuprof-ranks %s --trace TRACES... -o merged.json)\n", why, gpuprof__mpis.ranks_path ? gpuprof__mpis.ranks_path : "");
            return;
        }
        ts[i].offset_ns = off;
    }
    if (gpuprof__xr_merge(ts, n, gpuprof__mpis.merged_path, &events, &spread, why, sizeof why) != 0) {
        gpuprof__buf_printf(txt, "no merged trace: %s\n", why);
        return;
    }
    gpuprof__buf_printf(txt, "merged trace: %s (%d rank%s, %ld events, a process per rank, on one timeline)%s\n",
                        gpuprof__mpis.merged_path, n, n == 1 ? "" : "s", events, n < nrun ? "; ranks without a trace are missing from it" : "");
}

/* Rank 0: the report of the gathered records, where its table went. */
static void gpuprof__mpi_report(const char *all, const int64_t *len, const int64_t *at, const char *joined, int size, const int64_t *off,
                                const int64_t *bound, double timeout) {
    gpuprof__xr_run *runs = (gpuprof__xr_run *)gpuprof__alloc((size_t)size * sizeof *runs);
    gpuprof__buf txt = { NULL, 0, 0, 0 }, js = { NULL, 0, 0, 0 }, extra = { NULL, 0, 0, 0 }, warn = { NULL, 0, 0, 0 };
    gpuprof__xr x;
    int nrun = 0, r, worst = 0, loose = 0, ntrace = 0, applied = 0, nnr = 0, nnj = 0;
    char b1[32], b2[32];
    gpuprof__buf nj = { NULL, 0, 0, 0 };
    gpuprof__xr_trace *traces = (gpuprof__xr_trace *)gpuprof__alloc((size_t)size * sizeof *traces);
    const char *dest = gpuprof__mpis.report ? gpuprof__mpis.report : "stderr";
    FILE *out = NULL;
    if (!runs) return;
    gpuprof__buf_s(&extra, ",\"gathered_at\":\"MPI_Finalize\",\"not_recorded\":[");
    for (r = 0; r < size; r++) {
        const char *tp = "";
        memset(&runs[nrun], 0, sizeof runs[nrun]);
        if (!joined[r]) {
            gpuprof__buf_printf(&nj, "%s%d", nnj++ ? "," : "", r);
            continue;
        }
        if (len[r] > 0 && gpuprof__mpi_read(all + at[r], (size_t)len[r], &runs[nrun], &tp) == 0 && runs[nrun].nranges) {
            runs[nrun].rank = r;                       /* MPI's */
            runs[nrun].world = size;
            if (*tp && traces) {
                memset(&traces[ntrace], 0, sizeof traces[ntrace]);
                traces[ntrace].path = tp;
                traces[ntrace].offset_ns = gpuprof__xr_offset_used(off[r], bound[r]);
                ntrace++;
            }
            nrun++;
        } else {
            GPUPROF_FREE(runs[nrun].ranges);
            gpuprof__buf_printf(&extra, "%s%d", nnr++ ? "," : "", r);
        }
    }
    gpuprof__buf_printf(&extra, "],\"not_joined\":[%s]", nj.p ? nj.p : "");
    gpuprof__buf_printf(&extra, ",\"clock_sync\":{\"method\":\"ping-pong\",\"min_rounds\":%d,\"offsets\":[", GPUPROF__MPI_ROUNDS);
    for (r = 0; r < size; r++) {
        if (!joined[r]) continue;
        gpuprof__buf_printf(&extra, "%s{\"rank\":%d,\"offset_ns\":%lld,\"bound_ns\":%lld,\"applied\":%s}", r ? "," : "", r, (long long)off[r],
                            (long long)bound[r], gpuprof__xr_offset_used(off[r], bound[r]) ? "true" : "false");
        if (bound[r] > bound[loose]) loose = r;
        if (llabs((long long)off[r]) > llabs((long long)off[worst])) worst = r;
        if (gpuprof__xr_offset_used(off[r], bound[r])) applied++;
    }
    gpuprof__buf_s(&extra, "]}");
    if (nrun >= 2 && gpuprof__xr_analyse(&x, runs, nrun) == 0) {
        gpuprof__xr_warnings(&x, &warn, 1);
        gpuprof__buf_printf(&txt, "== gpuprof: the job's %d ranks, gathered at MPI_Finalize (GPUPROF_MPI) ==\n", size);
        gpuprof__xr_text(&txt, &x);
        if (nnr) gpuprof__buf_printf(&txt, "%d rank%s recorded nothing (GPUPROF_OFF, or no range) and %s left out\n", nnr, nnr == 1 ? "" : "s", nnr == 1 ? "is" : "are");
        gpuprof__fmt_ns(b1, sizeof b1, (double)off[worst]);
        gpuprof__fmt_ns(b2, sizeof b2, (double)bound[loose]);
        gpuprof__buf_printf(&txt, "clocks: the ranks' offsets to rank 0 by ping-pong (the fastest of %d+ round trips): at most %s (rank %d), each known within +-%s",
                            GPUPROF__MPI_ROUNDS, b1, worst, b2);
        if (applied) gpuprof__buf_printf(&txt, "; %d rank%s beyond the bound corrected in the merged trace\n", applied, applied == 1 ? "" : "s");
        else gpuprof__buf_s(&txt, "; none beyond its bound: the wall-clock anchors align the ranks\n");
        gpuprof__xr_json(&js, &x, extra.p);
        if (gpuprof__mpis.ranks_path && !js.failed && gpuprof__write_file(gpuprof__mpis.ranks_path, &js, "cross-rank report") == 0)
            gpuprof__buf_printf(&txt, "the same as JSON: %s\n", gpuprof__mpis.ranks_path);
        if (ntrace && gpuprof__mpis.merged_path) gpuprof__mpi_merge(&txt, traces, ntrace, nrun);
        gpuprof__xr_free(&x);
    } else if (nrun < 2)
        gpuprof__buf_printf(&txt, "gpuprof: %d of the job's %d ranks recorded ranges; nothing to compare across ranks\n", nrun, size);
    if (nnj) {
        gpuprof__fmt(b1, sizeof b1, "%g", timeout);
        gpuprof__buf_printf(&txt, "%s%d rank%s did not join the comparison (%s %s): no gpuprof call after MPI_Init, or %s reached MPI_Finalize more than "
                                  "%s s after rank 0 (GPUPROF_MPI_TIMEOUT)\n", nrun < 2 ? "gpuprof: " : "", nnj, nnj == 1 ? "" : "s", nnj == 1 ? "rank" : "ranks",
                            nj.p ? nj.p : "", nnj == 1 ? "it" : "they", b1);
    }
    if (strcmp(dest, "off") != 0 && !txt.failed && txt.len) {
        if (strcmp(dest, "stdout") == 0) out = stdout;
        else if (strcmp(dest, "stderr") == 0 || (out = fopen(dest, "a")) == NULL) out = stderr;
        if (warn.len) { fwrite("gpuprof: ", 1, 9, stderr); fwrite(warn.p, 1, warn.len, stderr); fwrite("\n", 1, 1, stderr); fflush(stderr); }
        fwrite(txt.p, 1, txt.len, out);
        fflush(out);
        if (out != stdout && out != stderr) fclose(out);
    }
    for (r = 0; r < nrun; r++) GPUPROF_FREE(runs[r].ranges);
    GPUPROF_FREE(runs);
    GPUPROF_FREE(traces);
    GPUPROF_FREE(txt.p);
    GPUPROF_FREE(js.p);
    GPUPROF_FREE(extra.p);
    GPUPROF_FREE(warn.p);
    GPUPROF_FREE(nj.p);
}

/* How long rank 0 waits at MPI_Finalize for the others (GPUPROF_MPI_TIMEOUT
   seconds, 10); the others wait three times as long for rank 0. */
static double gpuprof__mpi_timeout(void) {
    const char *v = getenv("GPUPROF_MPI_TIMEOUT");
    char *end;
    double t;
    if (!v || !*v) return 10.0;
    t = strtod(v, &end);
    if (*end || !(t >= 0 && t <= 3600)) {
        gpuprof__warn(GPUPROF__W_BAD_ENV, "GPUPROF_MPI_TIMEOUT='%.32s' is not a number of seconds from 0 to 3600; waiting 10 s", v);
        return 10.0;
    }
    return t;
}

/* Inside MPI_Finalize, on each rank that registered. Point to point only:
   every rank says hello to rank 0 (with the size of its record); rank 0
   waits for them (GPUPROF_MPI_TIMEOUT), then, one rank at a time, says go
   (and whether it can take the record), measures the clock offset, and
   receives the record. A rank that never registered is not waited for
   beyond the timeout; one whose rank 0 never comes gives up after 3x it. */
static int gpuprof__mpi_hook(MPI_Comm comm, int keyval, void *value, void *extra) {
    int me = 0, size = 1, r;
    int64_t mine, go, *len = NULL, *at = NULL, *off = NULL, *bound = NULL, total = 0;
    char *all = NULL, *joined = NULL;
    double timeout = gpuprof__mpi_timeout();
    MPI_Status st;
    (void)comm; (void)keyval; (void)value; (void)extra;
    if (GPUPROF__LD(&gpuprof__g.forked_child)) return MPI_SUCCESS;
    if (GPUPROF__LDA(&gpuprof__g.state) == GPUPROF__RUNNING) gpuprof_shutdown();   /* writes this rank's outputs, keeps its table */
    gpuprof__mpi.Comm_rank(MPI_COMM_WORLD, &me);
    gpuprof__mpi.Comm_size(MPI_COMM_WORLD, &size);
    mine = gpuprof__mpis.mine && gpuprof__mpis.nmine < (size_t)INT32_MAX ? (int64_t)gpuprof__mpis.nmine : 0;
    if (size > 1 && me != 0) {
        gpuprof__mpi.Send(&mine, 1, MPI_INT64_T, 0, GPUPROF__TAG_HELLO, MPI_COMM_WORLD);
        if (!gpuprof__mpi_wait(0, GPUPROF__TAG_GO, 3 * timeout, &st))
            gpuprof__say("gpuprof: rank %d waited %g s at MPI_Finalize for rank 0 to compare the ranks, in vain (rank 0 made no gpuprof call after MPI_Init?); "
                            "gpuprof-ranks compares the summaries\n", me, 3 * timeout);
        else {
            gpuprof__mpi.Recv(&go, 1, MPI_INT64_T, 0, GPUPROF__TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            gpuprof__mpi_pong();
            if (go && mine) gpuprof__mpi.Send(gpuprof__mpis.mine, (int)mine, MPI_BYTE, 0, GPUPROF__TAG_REC, MPI_COMM_WORLD);
        }
    } else if (size > 1) {
        int nj = 1, ok;
        len = (int64_t *)gpuprof__zalloc(4 * (size_t)size * sizeof *len);
        joined = (char *)gpuprof__zalloc((size_t)size);
        if (len && joined) {
            at = len + size; off = at + size; bound = off + size;
            joined[0] = 1;
            len[0] = mine;
            /* the hellos, as the ranks arrive: until all came, or the timeout */
            while (nj < size && gpuprof__mpi_wait(MPI_ANY_SOURCE, GPUPROF__TAG_HELLO, timeout, &st)) {
                int64_t n = 0;
                gpuprof__mpi.Recv(&n, 1, MPI_INT64_T, st.MPI_SOURCE, GPUPROF__TAG_HELLO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (n < 0 || n > INT32_MAX) n = 0;     /* not a size a rank sends: no record */
                if (st.MPI_SOURCE > 0 && st.MPI_SOURCE < size && !joined[st.MPI_SOURCE]) { joined[st.MPI_SOURCE] = 1; len[st.MPI_SOURCE] = n; nj++; }
            }
            for (r = 0; r < size; r++) { at[r] = total; total += joined[r] ? len[r] : 0; }
            all = (char *)gpuprof__alloc((size_t)total + 1);
            ok = all != NULL;
            if (all && mine) memcpy(all, gpuprof__mpis.mine, (size_t)mine);
            /* go to every rank that came, at once (then each waits for its turn
               with no time limit: rank 0 is committed to it) */
            for (r = 1; r < size; r++) {
                if (!joined[r]) continue;
                go = ok && len[r] > 0;                /* send your record (out of memory: the clocks only) */
                gpuprof__mpi.Send(&go, 1, MPI_INT64_T, r, GPUPROF__TAG_GO, MPI_COMM_WORLD);
            }
            {
                int64_t until = gpuprof__mpi_now() + 2000000000;   /* longer exchanges for loose bounds: 2 s in all */
                for (r = 1; r < size; r++) {
                    if (!joined[r]) continue;
                    gpuprof__mpi_ping(r, &off[r], &bound[r], until);
                    if (ok && len[r] > 0) gpuprof__mpi.Recv(all + at[r], (int)len[r], MPI_BYTE, r, GPUPROF__TAG_REC, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
            }
            if (ok) gpuprof__mpi_report(all, len, at, joined, size, off, bound, timeout);
            else gpuprof__say("gpuprof: out of memory gathering the ranks' figures at MPI_Finalize; no cross-rank report (gpuprof-ranks compares the summaries)\n");
        } else gpuprof__say("gpuprof: out of memory at MPI_Finalize; the ranks are not compared (gpuprof-ranks compares the summaries)\n");
    }
    GPUPROF_FREE(all);
    GPUPROF_FREE(len);
    GPUPROF_FREE(joined);
    gpuprof__mpi_forget();
    GPUPROF__STR(&gpuprof__mpis.attached, 2);        /* done: no MPI call from here on */
    return MPI_SUCCESS;
}
#endif /* GPUPROF_MPI */

/* ----------------------------------------------------------------------
   Ranks (SPEC 10): which of several processes started together this one
   is. The launcher closest to the process wins, Slurm last: torchrun
   inside an sbatch script sets RANK and leaves the script's SLURM_PROCID=0,
   and RANK is the true rank (taking SLURM_PROCID first made every worker
   rank 0, all writing one file). RANK counts only with WORLD_SIZE: alone
   it is too common a name. Local rank and world size come from the same
   launcher as the rank. */
typedef struct { const char *rank, *local, *size, *size_old; int needs_size; } gpuprof__launcher;
static const gpuprof__launcher gpuprof__launchers[] = {
    { "RANK", "LOCAL_RANK", "WORLD_SIZE", NULL, 1 },                                       /* torchrun */
    { "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", NULL, 0 }, /* Open MPI */
    { "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", NULL, 0 },                                /* MPICH, Intel MPI */
    { "PMIX_RANK", NULL, NULL, NULL, 0 },                                                  /* PMIx (an MPI singleton) */
    { "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_SIZE", NULL, 0 }, /* MVAPICH */
    { "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NPROCS", 0 },                /* srun, sbatch */
};

/* A launcher's number (0 to 10^6) from variable `var`; 0 if unset or not one. */
static int gpuprof__env_index(const char *var, int *out) {
    const char *v = var ? getenv(var) : NULL;
    char *end;
    long x;
    if (!v || !*v) return 0;
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || *end || x < 0 || x > 1000000) return 0;
    *out = (int)x;
    return 1;
}

static void gpuprof__ranks_detect(const gpuprof_config *cfg) {
    const gpuprof__launcher *l;
    int r, x;
    size_t i;
    gpuprof__run.rank = gpuprof__run.local_rank = gpuprof__run.restarts = -1;
    gpuprof__run.world_size = 0;
    gpuprof__run.rank_source = NULL;
    for (i = 0; i < sizeof gpuprof__launchers / sizeof gpuprof__launchers[0]; i++) {
        l = &gpuprof__launchers[i];
        if (!gpuprof__env_index(l->rank, &r) || (l->needs_size && !gpuprof__env_index(l->size, &x))) continue;
        gpuprof__run.rank = r;
        gpuprof__run.rank_source = l->rank;
        if (gpuprof__env_index(l->local, &x)) gpuprof__run.local_rank = x;
        if ((gpuprof__env_index(l->size, &x) || gpuprof__env_index(l->size_old, &x)) && x > r) gpuprof__run.world_size = x;
        break;
    }
    if (cfg->world_size > 0) {
        if (cfg->rank >= 0 && cfg->rank < cfg->world_size) {
            gpuprof__run.rank = cfg->rank;
            gpuprof__run.world_size = cfg->world_size;
            gpuprof__run.rank_source = "gpuprof_config.rank";
        } else gpuprof__warn(GPUPROF__W_BAD_ENV, "gpuprof_config.rank %d is not from 0 to world_size-1 (%d); the rank comes from the environment", cfg->rank, cfg->world_size - 1);
    }
    if (gpuprof__env_int("GPUPROF_RANK", &x)) {
        if (gpuprof__run.world_size && x >= gpuprof__run.world_size) {
            gpuprof__warn(GPUPROF__W_BAD_ENV, "GPUPROF_RANK=%d is not below the world size %d (from %s); the world size is taken as unknown",
                          x, gpuprof__run.world_size, gpuprof__run.rank_source ? gpuprof__run.rank_source : "gpuprof_config");
            gpuprof__run.world_size = 0;
        }
        gpuprof__run.rank = x;
        gpuprof__run.rank_source = "GPUPROF_RANK";
    }
    if (gpuprof__env_index("TORCHELASTIC_RESTART_COUNT", &x)) gpuprof__run.restarts = x;
    if (gpuprof__gethostname(gpuprof__run.host, sizeof gpuprof__run.host) != 0 || !gpuprof__run.host[0]) snprintf(gpuprof__run.host, sizeof gpuprof__run.host, "localhost");
    gpuprof__run.host[sizeof gpuprof__run.host - 1] = 0;
}

static void gpuprof__process_name(char *out, size_t n) {
    FILE *f = fopen("/proc/self/comm", "r");
    out[0] = 0;
    if (f) {
        if (fgets(out, (int)n, f)) out[strcspn(out, "\n")] = 0;
        fclose(f);
    }
    if (!out[0]) snprintf(out, n, "process");
}

/* ----------------------------------------------------------------------
   Lifecycle: init, exit, fork, the session's start and its shutdown
   ---------------------------------------------------------------------- */
static void gpuprof__atexit(void) { gpuprof_shutdown(); }

/* fork(): the child has no writer thread and shares the trace file, so it
   records nothing and writes nothing; the parent is unaffected. */
#if GPUPROF__SAMPLER
static sigset_t gpuprof__fork_mask;              /* the forking thread's, while the sampler's signal is blocked */
#endif
/* The sampler's signal is blocked in the forking thread around fork: a
   signal arriving faster than a large process's copy would restart it
   forever. */
static void gpuprof__fork_prepare(void) {
#if GPUPROF__SAMPLER
    if (gpuprof__smp_global.installed) {
        sigset_t block;
        sigemptyset(&block);
        sigaddset(&block, gpuprof__smp_global.signo);
        pthread_sigmask(SIG_BLOCK, &block, &gpuprof__fork_mask);
    }
#endif
    pthread_mutex_lock(&gpuprof__life_lock);
    pthread_mutex_lock(&gpuprof__keep_mu);       /* a shutdown (under life_lock) stops the keeper: after life_lock */
    pthread_mutex_lock(&gpuprof__lock);
    pthread_mutex_lock(&gpuprof__mem_mu);
    pthread_mutex_lock(&gpuprof__trace_lock);
    pthread_mutex_lock(&gpuprof__warn_mu);
}
static void gpuprof__fork_unblock(void) {
#if GPUPROF__SAMPLER
    if (gpuprof__smp_global.installed) pthread_sigmask(SIG_SETMASK, &gpuprof__fork_mask, NULL);
#endif
}
static void gpuprof__fork_parent(void) {
    pthread_mutex_unlock(&gpuprof__warn_mu);
    pthread_mutex_unlock(&gpuprof__trace_lock);
    pthread_mutex_unlock(&gpuprof__mem_mu);
    pthread_mutex_unlock(&gpuprof__lock);
    pthread_mutex_unlock(&gpuprof__keep_mu);
    pthread_mutex_unlock(&gpuprof__life_lock);
    gpuprof__fork_unblock();
}
static void gpuprof__fork_child(void) {
    int state = gpuprof__g.state;
    /* Forked while a session ran: the session stays the parent's. Forked
       before the first range or after a shutdown: the child may start its
       own (its files named by %p), without CUDA if the parent started it. */
    gpuprof__g.forked_child = state != GPUPROF__NEVER && state != GPUPROF__DOWN;
    gpuprof__g.cuda_forked = gpuprof__g.cuda_started;
    gpuprof__g.live = 0;
    gpuprof__paused = gpuprof__g.forked_child;     /* the parent's session: the child's ranges make no call */
    gpuprof__trace.on = 0;
    gpuprof__trace.mode = GPUPROF__TRACE_NONE;    /* the blocks and the file are the parent's */
    gpuprof__trace.writer_running = 0;
    gpuprof__bg.collector_running = 0;               /* the parent's threads: not in this process */
    gpuprof__bg.keeper_running = 0;
    pthread_mutex_unlock(&gpuprof__warn_mu);
    pthread_mutex_unlock(&gpuprof__trace_lock);
    pthread_mutex_unlock(&gpuprof__mem_mu);
    pthread_mutex_unlock(&gpuprof__lock);
    pthread_mutex_unlock(&gpuprof__keep_mu);
    pthread_mutex_unlock(&gpuprof__life_lock);
    gpuprof__fork_unblock();                        /* the parent's timers are not the child's: it samples none of them */
}

static void gpuprof__once_init(void) {
    gpuprof__digits4_init();       /* before any number is written: every output needs a session */
    pthread_key_create(&gpuprof__tls_key, gpuprof__thread_exit);
    pthread_atfork(gpuprof__fork_prepare, gpuprof__fork_parent, gpuprof__fork_child);
#ifdef GPUPROF_CUDA
    {
        /* The CUDA runtime starts (and registers its own teardown) before our
           exit handler is registered, so ours runs first and can still
           drain the last GPU events at exit. */
        const char *v = getenv("GPUPROF_GPU"), *o = getenv("GPUPROF_OFF");
        int n = 0, gpu = 1, off = 0;
        if (v) (void)gpuprof__parse_flag(v, &gpu);
        if (o) (void)gpuprof__parse_flag(o, &off);
        if (gpu && !off) {
            (void)cudaGetDeviceCount(&n);
            gpuprof__g.cuda_started = 1;
        }
    }
#endif
    atexit(gpuprof__atexit);
}

static void gpuprof__free_settings(void) {
    GPUPROF_FREE(gpuprof__g.trace_path);
    GPUPROF_FREE(gpuprof__g.report);
    GPUPROF_FREE(gpuprof__g.summary_path);
    GPUPROF_FREE(gpuprof__g.process_name);
    GPUPROF_FREE(gpuprof__g.host_ranges);
    GPUPROF_FREE(gpuprof__g.sample_folded);
    GPUPROF_FREE(gpuprof__g.metrics_path);
    GPUPROF_FREE(gpuprof__run.summary_pattern);
    GPUPROF_FREE(gpuprof__run.trace_pattern);
    gpuprof__g.trace_path = gpuprof__g.report = gpuprof__g.summary_path = gpuprof__g.process_name = NULL;
    gpuprof__g.host_ranges = gpuprof__run.summary_pattern = gpuprof__run.trace_pattern = gpuprof__g.sample_folded = gpuprof__g.metrics_path = NULL;
}

/* The defaults of every setting a zeroed config leaves open. */
static void gpuprof__config_defaults(gpuprof_config *cfg) {
    if (cfg->report_rows == 0) cfg->report_rows = 30;
    if (cfg->max_names <= 0) cfg->max_names = 4096;
    if (cfg->max_names > (1 << 24)) cfg->max_names = 1 << 24;
    if (cfg->max_nodes <= 0) cfg->max_nodes = 8192;
    if (cfg->trace_buffer_mb <= 0) cfg->trace_buffer_mb = 64;
    if (cfg->trace_ring_mb == 0) cfg->trace_ring_mb = 32;
    if (cfg->trace_ring_mb > 65536) cfg->trace_ring_mb = 65536;
    if (cfg->kernel_buffer_mb <= 0) cfg->kernel_buffer_mb = 64;
    if (cfg->warmup < 0) cfg->warmup = 0;
    if (cfg->summary_every == 0) cfg->summary_every = 60;
    if (cfg->capture_max <= 0) cfg->capture_max = 5;
}

/* The environment over the config (the user's last word); *off: GPUPROF_OFF. */
static void gpuprof__config_from_env(gpuprof_config *cfg, int *off) {
    const char *v;
    gpuprof__env_int("GPUPROF_WARMUP", &cfg->warmup);
    if (gpuprof__env_int("GPUPROF_TRACE_RING_MB", &cfg->trace_ring_mb) && cfg->trace_ring_mb <= 0) cfg->trace_ring_mb = -1;
    if (gpuprof__env_int("GPUPROF_ROWS", &cfg->report_rows) && cfg->report_rows == 0) cfg->report_rows = -1;
    gpuprof__env_flag("GPUPROF_OFF", off);
    if ((v = getenv("GPUPROF_VIEW")) != NULL) {
        if (strcmp(v, "flat") == 0) cfg->report_view = GPUPROF_VIEW_FLAT;
        else if (strcmp(v, "tree") == 0) cfg->report_view = GPUPROF_VIEW_TREE;
        else if (strcmp(v, "both") == 0) cfg->report_view = GPUPROF_VIEW_BOTH;
        else gpuprof__warn(GPUPROF__W_BAD_ENV, "GPUPROF_VIEW='%.64s' is not flat, tree or both; ignored", v);
    }
    if ((v = getenv("GPUPROF_GPU")) != NULL && (strcmp(v, "kernels") == 0 || strcmp(v, "events") == 0)) {
        cfg->no_gpu = 0;
        cfg->gpu_from_kernels = v[0] == 'k';
    } else if (v && *v) {
        int on = 1;
        if (gpuprof__parse_flag(v, &on)) cfg->no_gpu = !on;
        else gpuprof__warn(GPUPROF__W_BAD_ENV, "GPUPROF_GPU='%.64s' is not 1 (CUDA events), kernels (from kernel capture) or 0 (CPU only); ignored", v);
    }
    if (gpuprof__env_flag("GPUPROF_NVTX", &cfg->no_nvtx)) cfg->no_nvtx = !cfg->no_nvtx;
    if ((v = getenv("GPUPROF_NVTX_DOMAIN")) != NULL && *v) cfg->nvtx_domain = v;
    gpuprof__env_flag("GPUPROF_MEM_RANGES", &cfg->mem_ranges);
    gpuprof__env_flag("GPUPROF_COLLECTOR", &cfg->collector);
    gpuprof__env_flag("GPUPROF_KERNELS", &cfg->kernels);
    if (gpuprof__env_int("GPUPROF_KERNEL_BUFFER_MB", &cfg->kernel_buffer_mb) && cfg->kernel_buffer_mb <= 0) cfg->kernel_buffer_mb = 64;
    if ((v = getenv("GPUPROF_SCHEDULE")) != NULL) cfg->schedule = v;
    if ((v = getenv("GPUPROF_HOST_RANGES")) != NULL) cfg->host_ranges = v;
    if (gpuprof__env_number("GPUPROF_SUMMARY_EVERY", &cfg->summary_every) && cfg->summary_every == 0) cfg->summary_every = -1;
    gpuprof__env_number("GPUPROF_CAPTURE_SLOW", &cfg->capture_slow);
    gpuprof__env_int("GPUPROF_TRACE_MAX_MB", &cfg->trace_max_mb);
    gpuprof__env_int("GPUPROF_TRACE_KEEP", &cfg->trace_keep);
    if (gpuprof__env_int("GPUPROF_CAPTURE_MAX", &cfg->capture_max) && cfg->capture_max == 0) cfg->capture_slow = 0;
    gpuprof__env_parse("GPUPROF_SAMPLE", 0, 100000, &cfg->sample_hz);
    if ((v = getenv("GPUPROF_SAMPLE_FOLDED")) != NULL && *v) cfg->sample_folded = v;
    if ((v = getenv("GPUPROF_METRICS")) != NULL) cfg->metrics = v;
    if (gpuprof__env_parse("GPUPROF_DEVICE_EVERY_MS", 0, 3600000, &cfg->device_every_ms) && cfg->device_every_ms == 0) cfg->device_every_ms = -1;
}

/* Output paths, expanded (%p, %r). An output that names the same file as
   another is refused (SPEC 8), and a file an earlier session of this
   process wrote, while it is still there, is not truncated: this session's
   goes next to it. */
static uint32_t gpuprof__old_outputs[64];        /* hashes of files earlier sessions wrote */
static unsigned gpuprof__nold_outputs;

static int gpuprof__is_old_output(const char *path) {
    uint32_t h = gpuprof__hash(path, strlen(path));
    unsigned i;
    struct stat st;
    if (stat(path, &st) != 0) return 0;              /* gone (moved, removed): nothing to keep */
    for (i = 0; i < gpuprof__nold_outputs && i < 64; i++) if (gpuprof__old_outputs[i] == h) return 1;
    return 0;
}

static void gpuprof__remember_output(const char *path) {
    if (path && *path && !gpuprof__is_old_output(path))
        gpuprof__old_outputs[gpuprof__nold_outputs++ % 64] = gpuprof__hash(path, strlen(path));
}

/* A path setting for one of several ranks: without %r or %p every rank
   would write the same file, so ".%r" goes before the extension (rank 0
   says so, once for each output). `out` holds at least 4096 bytes. */
static const char *gpuprof__per_rank(const char *setting, const char *what, char *out) {
    const char *dot, *slash;
    if (gpuprof__run.world_size <= 1 || strstr(setting, "%r") || strstr(setting, "%p") || strlen(setting) > 4000) return setting;
    dot = strrchr(setting, '.');
    slash = strrchr(setting, '/');
    if (!dot || (slash && dot < slash) || dot == setting || dot[-1] == '/') dot = setting + strlen(setting);
    snprintf(out, 4096, "%.*s.%%r%s", (int)(dot - setting), setting, dot);
    if (gpuprof__run.rank == 0)
        gpuprof__warn(GPUPROF__W_BAD_ENV, "the %s path '%s' has no %%r, and %d ranks would all write it: each writes '%s' (%%r the rank)",
                      what, setting, gpuprof__run.world_size, out);
    return out;
}

/* The expanded path of an output setting (NULL: none); `what` names it in
   messages; *pattern (when asked) gets the setting as used, before expansion. */
static char *gpuprof__output_path(const char *setting, const char *what, char **pattern) {
    enum { N = 4096 };                /* on the heap: any thread may start the session, on a stack of 16 KiB */
    char *mem, *path, *alt = NULL, *ranked, *out = NULL;
    const char *dot, *slash;
    unsigned k;
    if (!setting || !*setting || strcmp(setting, "off") == 0) return NULL;
    if ((mem = (char *)gpuprof__alloc(2 * N)) == NULL) return NULL;
    path = mem;
    ranked = mem + N;
    setting = gpuprof__per_rank(setting, what, ranked);
    if (pattern) *pattern = gpuprof__strdup(setting);
    if (gpuprof__path_expand(setting, path, N) != 0)
        gpuprof__warn(GPUPROF__W_BAD_ENV, "the %s path '%.64s...' is too long; no %s is written", what, setting, what);
    else if (!gpuprof__is_old_output(path)) out = gpuprof__strdup(path);
    else {
        dot = strrchr(path, '.');
        slash = strrchr(path, '/');
        if (!dot || (slash && dot < slash)) dot = path + strlen(path);
        for (k = 2; (alt = (char *)gpuprof__alloc(N + 24)) != NULL; k++) {
            snprintf(alt, N + 24, "%.*s.%u%s", (int)(dot - path), path, k, dot);
            if (!gpuprof__is_old_output(alt)) break;
            GPUPROF_FREE(alt);
        }
        if (alt) gpuprof__warn(GPUPROF__W_IO, "'%s' holds the %s of an earlier session of this process; this session's goes to '%s'", path, what, alt);
        out = alt;
    }
    GPUPROF_FREE(mem);
    return out;
}

static int gpuprof__outputs_open(const gpuprof_config *cfg, int off) {
    const char *v, *clash;
    v = getenv("GPUPROF_TRACE");
    gpuprof__g.trace_path = off ? NULL : gpuprof__output_path(v ? v : cfg->trace_path, "trace", &gpuprof__run.trace_pattern);
    v = getenv("GPUPROF_SUMMARY");
    gpuprof__g.summary_path = off ? NULL : gpuprof__output_path(v ? v : cfg->summary_path, "summary", &gpuprof__run.summary_pattern);
    gpuprof__g.sample_folded = off || !cfg->sample_folded || !*cfg->sample_folded ? NULL : gpuprof__output_path(cfg->sample_folded, "folded stacks", NULL);
#if GPUPROF__METRICS
    gpuprof__g.metrics_path = off ? NULL : gpuprof__output_path(cfg->metrics, "metrics", NULL);
#else
    if (!off && cfg->metrics && *cfg->metrics)
        gpuprof__warn(GPUPROF__W_BAD_ENV, "GPUPROF_METRICS: live metrics are compiled out of this build (GPUPROF_NO_METRICS); build without it to have them");
#endif
    if (gpuprof__g.metrics_path && ((gpuprof__g.trace_path && gpuprof__same_file(gpuprof__g.metrics_path, gpuprof__g.trace_path)) ||
                                    (gpuprof__g.summary_path && gpuprof__same_file(gpuprof__g.metrics_path, gpuprof__g.summary_path)))) {
        gpuprof__warn(GPUPROF__W_BAD_ENV, "the metrics name the same file as the %s ('%s'); no metrics are written (give them their own path, *.prom)",
                      gpuprof__g.trace_path && gpuprof__same_file(gpuprof__g.metrics_path, gpuprof__g.trace_path) ? "trace" : "summary", gpuprof__g.metrics_path);
        GPUPROF_FREE(gpuprof__g.metrics_path);
        gpuprof__g.metrics_path = NULL;
    }
    v = getenv("GPUPROF_REPORT");
    gpuprof__run.report_implicit = !v && !cfg->report;
    if (!v) v = cfg->report ? cfg->report : "stderr";
    if (off) v = "off";
    if (!*v || strcmp(v, "stderr") == 0 || strcmp(v, "stdout") == 0 || strcmp(v, "off") == 0) gpuprof__g.report = gpuprof__strdup(*v ? v : "stderr");
    else if ((gpuprof__g.report = gpuprof__output_path(v, "report", NULL)) == NULL) gpuprof__g.report = gpuprof__strdup("stderr");
    if (!gpuprof__g.report) return -1;
    if (gpuprof__g.trace_path && gpuprof__g.summary_path && gpuprof__same_file(gpuprof__g.trace_path, gpuprof__g.summary_path)) {
        gpuprof__warn(GPUPROF__W_BAD_ENV, "the trace and the summary name the same file '%s'; the trace is written there and no summary (give each its own path)", gpuprof__g.summary_path);
        GPUPROF_FREE(gpuprof__g.summary_path);
        gpuprof__g.summary_path = NULL;
    }
    clash = gpuprof__g.trace_path && gpuprof__same_file(gpuprof__g.report, gpuprof__g.trace_path) ? "trace"
          : gpuprof__g.summary_path && gpuprof__same_file(gpuprof__g.report, gpuprof__g.summary_path) ? "summary" : NULL;
    if (clash) {
        gpuprof__warn(GPUPROF__W_BAD_ENV, "the report names the same file as the %s ('%s'); the report goes to stderr instead (give it its own path)",
                      clash, gpuprof__g.report);
        GPUPROF_FREE(gpuprof__g.report);
        if ((gpuprof__g.report = gpuprof__strdup("stderr")) == NULL) return -1;
    }
    return 0;
}

/* The name table: id 0 is "unregistered", id 1 collects names over the cap.
   A table the last session left to threads still running stays theirs. */
static int gpuprof__names_open(const gpuprof_config *cfg, int off) {
    uint32_t hsize = 16;
    if (gpuprof__registry.names_kept && gpuprof__registry.names) {
        gpuprof__oldnames *o = (gpuprof__oldnames *)gpuprof__alloc(sizeof *o);
        if (o) {
            o->names = gpuprof__registry.names;
            o->hash = gpuprof__registry.name_hash;
            o->n = gpuprof__registry.nnames;
            o->session = gpuprof__g.session;
            o->next = gpuprof__oldnames_list;
            gpuprof__oldnames_list = o;
        }
        gpuprof__registry.names = NULL;
        gpuprof__registry.name_hash = NULL;
    }
    gpuprof__registry.names_kept = 0;
    gpuprof__registry.max_ids = (uint32_t)cfg->max_names + GPUPROF__ID_FIRST_USER;
    while (hsize < 2 * gpuprof__registry.max_ids) hsize <<= 1;
    gpuprof__registry.names = (gpuprof__name *)gpuprof__alloc(gpuprof__registry.max_ids * sizeof *gpuprof__registry.names);
    gpuprof__registry.name_hash = (uint32_t *)gpuprof__alloc(hsize * sizeof *gpuprof__registry.name_hash);
    if (!gpuprof__registry.names || !gpuprof__registry.name_hash) {
        GPUPROF_FREE(gpuprof__registry.names);
        GPUPROF_FREE(gpuprof__registry.name_hash);
        gpuprof__registry.names = NULL;
        gpuprof__registry.name_hash = NULL;
        return -1;
    }
    memset(gpuprof__registry.names, 0, gpuprof__registry.max_ids * sizeof *gpuprof__registry.names);
    memset(gpuprof__registry.name_hash, 0, hsize * sizeof *gpuprof__registry.name_hash);
    gpuprof__registry.name_hash_mask = hsize - 1;
    gpuprof__registry.names[0].text = gpuprof__empty_json + 2;   /* the NUL after its "": an empty name */
    gpuprof__registry.names[0].json = gpuprof__empty_json;
    gpuprof__registry.nnames = 1;
    gpuprof__nvtx_open(cfg, off);       /* the domain before the first name, so names are registered in it */
    gpuprof__name_lookup("[other names]", 13);
    return 0;
}

/* CLOCK_REALTIME at the profiler clock's zero, so that the files of several
   processes can be put on one timeline (SPEC 10): the wall clock read
   between two reads of the profiler clock, the pair with the least time
   between them of nine; never used for event times. */
static uint64_t gpuprof__realtime_at_base(void) {
    uint64_t best_gap = UINT64_MAX, best = 0;
    int k;
    for (k = 0; k < 9; k++) {            /* the closest pair: a preemption between two reads is not taken */
        gpuprof__timespec ts;
        uint64_t a = gpuprof__ticks(), b, gap, mid_ns, rt;
        gpuprof__clock_gettime(GPUPROF__CLOCK_REALTIME, &ts);
        b = gpuprof__ticks();
        gap = b - a;
        if (gap >= best_gap) continue;
        best_gap = gap;
        rt = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        mid_ns = gpuprof__ticks_to_ns(a + gap / 2 - gpuprof__clock.base);
        best = rt - mid_ns;
    }
    return best;
}

/* A new session's counters, clock zero, GPU, trace and memory; then it runs. */
static void gpuprof__session_start(const gpuprof_config *cfg, int off) {
    if (gpuprof__g.session == 0 || !gpuprof__clock.mult) {
        const char *v = getenv("GPUPROF_CLOCK");
        if (v && strcmp(v, "tsc") != 0 && strcmp(v, "monotonic") != 0)
            gpuprof__warn(GPUPROF__W_BAD_ENV, "GPUPROF_CLOCK='%.32s' is not tsc or monotonic; using the default", v);
        gpuprof__clock_init(!(v && strcmp(v, "monotonic") == 0));
    }
    GPUPROF__ST(&gpuprof__clock.base, gpuprof__ticks());   /* the trace's time zero (a thread of the last session may still read it) */
    gpuprof__run.t0_realtime_ns = gpuprof__realtime_at_base();
    gpuprof__run.t_init_ns = gpuprof__mono_ns();
    gpuprof__threads.threads = NULL;
    gpuprof__threads.nthreads = 0;
    gpuprof__steps.step = gpuprof__steps.counted = gpuprof__steps.excluded = gpuprof__steps.unrecorded = 0;
    gpuprof__steps.seen = 0;
    gpuprof__steps.t0 = 0;
    gpuprof__steps.stepper = NULL;
    gpuprof__steps.cpu0 = 0;
    gpuprof__step_figures_clear();
    gpuprof_stats_init(&gpuprof__steps.stats);
    memset(&gpuprof__trace.out, 0, sizeof gpuprof__trace.out);
    gpuprof__trace.out.fd = -1;
    GPUPROF__ST(&gpuprof__trace.mode, (int)GPUPROF__TRACE_NONE);   /* these three: read unlocked by a thread of the last session */
    gpuprof__trace.finished = 0;
    gpuprof__trace.dropped_io = 0;
    GPUPROF__ST(&gpuprof__trace.blocks_allocated, 0u);
    GPUPROF__ST(&gpuprof__trace.free_count, 0u);
    gpuprof__trace.queue_head = gpuprof__trace.queue_tail = gpuprof__trace.free_blocks = NULL;
    gpuprof__trace.queue_len = 0;
    gpuprof__trace.ring_head = gpuprof__trace.ring_tail = NULL;
    gpuprof__trace.ring_blocks = 0;
    gpuprof__trace.ring_fell_out = gpuprof__trace.ring_from_ns = 0;
    gpuprof__trace.dumping = 0;
    /* read without the lock by a thread checking which session its state and ids belong to */
    GPUPROF__ST(&gpuprof__g.session, gpuprof__g.session + 1 ? gpuprof__g.session + 1 : 1u);
#ifdef GPUPROF_CUDA
    gpuprof__gpu_probe(!cfg->no_gpu && !off);
    gpuprof__kc_open(off ? 0 : cfg->gpu_from_kernels && !cfg->no_gpu ? 2 : cfg->kernels, cfg->kernel_buffer_mb);
#else
    if ((cfg->kernels || cfg->gpu_from_kernels) && !off)
        gpuprof__warn(GPUPROF__W_KERNELS, "kernel capture (GPUPROF_KERNELS, GPUPROF_GPU=kernels) needs a CUDA build of the file that defines GPUPROF_IMPLEMENTATION (nvcc, or -DGPUPROF_CUDA -lcudart); ranges are timed as before");
#endif
    gpuprof__peaks_init(cfg);
    if (gpuprof__g.trace_path && gpuprof__trace_open() != 0) {
        GPUPROF_FREE(gpuprof__g.trace_path);
        gpuprof__g.trace_path = NULL;
    }
    if (!gpuprof__g.trace_path && !off) gpuprof__ring_open();
    gpuprof__mem_open();
    if (!off && cfg->collector) gpuprof__collector_start();
#if GPUPROF__SAMPLER
    if (!off && cfg->sample_hz > 0) gpuprof__smp_code();      /* before any timer runs */
#endif
    gpuprof__smp_setup(off ? 0 : cfg->sample_hz);
    if (!off) gpuprof__keeper_start();          /* after the sampler: the keeper watches its signal */
    /* samples into the streamed trace when it is Perfetto's (and gpuprof reads its own clock: a program's may not be safe in a signal handler) */
#if !defined(GPUPROF_CLOCK_FN) && GPUPROF__SAMPLES
    GPUPROF__ST(&gpuprof__smp_global.trace, GPUPROF__LD(&gpuprof__smp_global.on) && gpuprof__g.trace_path && gpuprof__trace.out.format == GPUPROF__FMT_PERFETTO);
#endif
    GPUPROF__ST(&gpuprof__g.mem_ranges, cfg->mem_ranges && !off);
    gpuprof__g.user_enabled = !cfg->start_disabled && !off;
    GPUPROF__ST(&gpuprof__g.off, off);
}

static int gpuprof__init_internal(const gpuprof_config *user, int explicit_call) {
    gpuprof_config cfg;
    char pname[256];
    int off = 0, state;
    pthread_once(&gpuprof__once, gpuprof__once_init);
    if (GPUPROF__LD(&gpuprof__g.forked_child)) {
        if (explicit_call)
            gpuprof__warn(GPUPROF__W_DOUBLE_INIT, "gpuprof_init() in a process forked while its parent was profiling: this process records nothing and leaves the parent's files alone (to profile a child, fork it before the first range or after gpuprof_shutdown())");
        return 1;
    }
    pthread_mutex_lock(&gpuprof__life_lock);           /* waits for a shutdown under way */
    pthread_mutex_lock(&gpuprof__lock);
    state = GPUPROF__LD(&gpuprof__g.state);
    if (state == GPUPROF__RUNNING || (state == GPUPROF__DOWN && !explicit_call)) {
        pthread_mutex_unlock(&gpuprof__lock);
        pthread_mutex_unlock(&gpuprof__life_lock);
        if (explicit_call)
            gpuprof__warn(GPUPROF__W_DOUBLE_INIT, "gpuprof_init() called while already running (perhaps after a range auto-initialised it); this call's config is ignored");
        return 1;
    }
    GPUPROF__ST(&gpuprof__g.state, (int)GPUPROF__STARTING);
    if (user) cfg = *user;
    else memset(&cfg, 0, sizeof cfg);
    gpuprof__run.pid = (int)getpid();
    gpuprof__ranks_detect(&cfg);
    gpuprof__run.trace_pid = gpuprof__run.pid;      /* never the rank: pid 0 is special in Perfetto */
    gpuprof__config_defaults(&cfg);
    gpuprof__config_from_env(&cfg, &off);
    gpuprof__g.cfg = cfg;
    gpuprof__g.cfg.nvtx_domain = NULL;        /* not kept: the domain is made in names_open */
    gpuprof__g.cfg.schedule = gpuprof__g.cfg.host_ranges = NULL;   /* kept as parsed below, */
    gpuprof__g.cfg.trace_path = gpuprof__g.cfg.summary_path = gpuprof__g.cfg.report = gpuprof__g.cfg.process_name = gpuprof__g.cfg.metrics = NULL;   /* and as copied */
    gpuprof__g.sched_on = 0;
    if (cfg.schedule && *cfg.schedule && gpuprof__parse_schedule(cfg.schedule) != 0)
        gpuprof__warn(GPUPROF__W_BAD_ENV, "schedule '%.100s' is not of the form wait=W,warmup=U,active=A,repeat=R (active >= 1); recording every step", cfg.schedule);
    if (cfg.process_name) snprintf(pname, sizeof pname, "%s", cfg.process_name);
    else gpuprof__process_name(pname, sizeof pname);
    gpuprof__g.process_name = gpuprof__strdup(pname);
    gpuprof__g.host_ranges = cfg.host_ranges && *cfg.host_ranges ? gpuprof__strdup(cfg.host_ranges) : NULL;
    if (!gpuprof__g.process_name || gpuprof__outputs_open(&cfg, off) != 0 || gpuprof__names_open(&cfg, off) != 0) {
        gpuprof__free_settings();
        GPUPROF__STR(&gpuprof__g.state, state);
        pthread_mutex_unlock(&gpuprof__lock);
        pthread_mutex_unlock(&gpuprof__life_lock);
        return -1;
    }
    gpuprof__session_start(&cfg, off);
    GPUPROF__STR(&gpuprof__g.state, (int)GPUPROF__RUNNING);
    gpuprof__apply_phase();
    pthread_mutex_unlock(&gpuprof__lock);
    pthread_mutex_unlock(&gpuprof__life_lock);
#ifdef GPUPROF_MPI
    GPUPROF__ST(&gpuprof__step_hook, &gpuprof__mpi_attach);   /* the steps register it once MPI runs */
    gpuprof__mpi_attach();          /* profiling off too: every rank joins the gather */
#endif
    return 0;
}

/* The lazy start a thread's first range calls, stored in the threads'
   section (which stands above the sections a start needs) before main and
   before any constructor or C++ static object of default priority, since
   those may record ranges. Storing it is all that runs there. */
static int gpuprof__start_lazily(void) { return gpuprof__init_internal(NULL, 0); }
#if defined(__GNUC__) || defined(__clang__)
__attribute__((constructor(101)))
#endif
static void gpuprof__register_start(void) { GPUPROF__ST(&gpuprof__lazy_start, &gpuprof__start_lazily); }

int gpuprof_init(const gpuprof_config *cfg) {
    gpuprof__register_start();          /* done already where constructors run; a compiler without them starts lazily after this */
    return gpuprof__init_internal(cfg, 1);
}

void gpuprof_set_enabled(int on) {
    if (GPUPROF__LD(&gpuprof__g.forked_child)) return;
    if (GPUPROF__LDA(&gpuprof__g.state) == GPUPROF__NEVER) gpuprof__init_internal(NULL, 0);
    pthread_mutex_lock(&gpuprof__lock);
    if (gpuprof__g.state == GPUPROF__RUNNING && !gpuprof__g.off) {   /* GPUPROF_OFF=1 is the user's last word */
        gpuprof__g.user_enabled = on != 0;
        gpuprof__apply_phase();
    }
    pthread_mutex_unlock(&gpuprof__lock);
}


static void gpuprof__names_free(void) {
    gpuprof__names_free_table(gpuprof__registry.names, gpuprof__registry.name_hash, gpuprof__registry.nnames);
    gpuprof__registry.names = NULL;
    gpuprof__registry.name_hash = NULL;
    gpuprof__registry.nnames = 0;
}

/* At shutdown: the summary, then the report (to stderr, with a line saying
   why, when its file cannot be written). */
static void gpuprof__outputs_write(void) {
    const char *report = gpuprof__g.report;
    gpuprof__buf b = { NULL, 0, 0, 0 };
    if (gpuprof__g.summary_path || gpuprof__g.metrics_path) (void)gpuprof__summary_and_metrics(GPUPROF__MAKE_SUMMARY);
#if GPUPROF__SAMPLES
    if (gpuprof__g.sample_folded) {
        gpuprof__smp_report r;
        if (gpuprof__smp_collect(&r, 1)) gpuprof__write_file(gpuprof__g.sample_folded, &r.folded, "folded stacks");
        gpuprof__smp_free(&r);
    }
#endif
    if (strcmp(report, "off") == 0) return;
    if (gpuprof__run.report_implicit && gpuprof__run.world_size > 1) {
        /* several ranks share the job's log: one table, and where the rest are */
        if (gpuprof__run.rank != 0) return;
        gpuprof__report_to(stderr);
        if (gpuprof__run.summary_pattern) {
            char glob[512];
            const char *q = gpuprof__run.summary_pattern;
            size_t k = 0;
            for (; *q && k + 2 < sizeof glob; q++) {      /* the pattern as a shell glob: %r, %l, %h, %p -> * */
                if (q[0] == '%' && q[1] && strchr("rlhp", q[1])) { glob[k++] = '*'; q++; }
                else glob[k++] = *q;
            }
            glob[k] = 0;
#ifdef GPUPROF_MPI
            if (GPUPROF__LDA(&gpuprof__mpis.attached) == 1)
                gpuprof__say("gpuprof: rank 0 of %d printed its table; every rank's summary is in '%s' (%%r the rank); MPI_Finalize compares them "
                                "(GPUPROF_REPORT=stderr prints each rank's table)\n", gpuprof__run.world_size, gpuprof__run.summary_pattern);
            else
#endif
            gpuprof__say("gpuprof: rank 0 of %d printed its table; every rank's summary is in '%s' (%%r the rank): gpuprof-ranks %s compares them "
                            "(GPUPROF_REPORT=stderr prints each rank's table)\n", gpuprof__run.world_size, gpuprof__run.summary_pattern, glob);
        }
        else
            gpuprof__say("gpuprof: rank 0 of %d printed its table; the other ranks print none (GPUPROF_REPORT=stderr prints each rank's table; GPUPROF_SUMMARY=run.%%r.json keeps each rank's figures)\n",
                    gpuprof__run.world_size);
        return;
    }
    if (strcmp(report, "stderr") == 0) gpuprof__report_to(stderr);
    else if (strcmp(report, "stdout") == 0) gpuprof__report_to(stdout);
    else if (gpuprof__make(&b, GPUPROF__MAKE_REPORT, NULL) == 0 && gpuprof__write_file(report, &b, "report") != 0) {
        gpuprof__say("gpuprof: the report that could not go to '%s' follows here\n", report);
        if (fwrite(b.p, 1, b.len, stderr) != b.len) gpuprof__warn(GPUPROF__W_IO, "cannot write the report to stderr either: %s", strerror(errno));
        fflush(stderr);
    }
    GPUPROF_FREE(b.p);
}

static void gpuprof__shutdown_locked(void) {
    gpuprof__thread *self = gpuprof__tls, *t, *next;
    int keep_names = 0;
    pthread_mutex_lock(&gpuprof__lock);
    if (gpuprof__g.state != GPUPROF__RUNNING || gpuprof__g.forked_child) {
        pthread_mutex_unlock(&gpuprof__lock);
        return;
    }
    GPUPROF__STR(&gpuprof__g.state, (int)GPUPROF__STOPPING);
    GPUPROF__ST(&gpuprof__g.live, 0u);
    GPUPROF__ST(&gpuprof__paused, 0);     /* a range after shutdown takes the call, which says so */
    for (t = gpuprof__threads.threads; t; t = t->next) {
        if ((t == self || t->exited) && t->depth) {
            uint32_t d = t->depth > GPUPROF_MAX_DEPTH ? GPUPROF_MAX_DEPTH : t->depth;
            gpuprof__warn(GPUPROF__W_UNCLOSED, "%u range%s still open at shutdown (innermost \"%s\") %s not counted (close each BEGIN with END before exit)",
                          t->depth, t->depth == 1 ? " was" : "s were", gpuprof__name_text(t->stack[d - 1].node->name_id), t->depth == 1 ? "is" : "are");
            GPUPROF__ADD(&gpuprof__g.warn_count[GPUPROF__W_UNCLOSED], (uint64_t)(t->depth - 1));   /* one per open range */
        }
    }
    pthread_mutex_unlock(&gpuprof__lock);
    gpuprof__collector_stop();      /* the report drains the rings itself */
    gpuprof__keeper_stop();         /* a checkpoint under way ends first, captures asked for are written */
    gpuprof__smp_stop_all();        /* the samples as they are now, no handler in them while they are read */
    gpuprof__gpu_drain();           /* the GPU events go into the trace before it ends */
    gpuprof__kc_drain();            /* (GPUPROF_GPU=kernels: the GPU work still running) */
    gpuprof__kc_flush(1);           /* and the kernels CUPTI still holds */
    gpuprof__trace_finish();
#ifdef GPUPROF_MPI
    gpuprof__mpi_keep();            /* this rank's table for the gather at MPI_Finalize */
#endif
    gpuprof__outputs_write();
    gpuprof__dev_close();           /* the device's samples freed: the outputs have them */
    gpuprof__smp_foreign_clear();          /* ... and those of the threads that record no range */
#if GPUPROF__SAMPLER
    gpuprof__smp_code_clear();      /* (the symbols of objects unloaded meanwhile were read for the outputs) */
#endif
#ifdef GPUPROF_CUDA
    gpuprof__kc_close();
#endif
    pthread_mutex_lock(&gpuprof__lock);
    GPUPROF__ST(&gpuprof__g.mem_ranges, 0);
    gpuprof__mem_close();
    /* Free what no thread can touch again: this thread's state and those of
       threads that have exited. A thread still running keeps its state
       (retired, still reachable) because it may be inside a range now. This
       thread's state may also be one an earlier shutdown retired (it has
       recorded nothing in this session): freed too, as it lets go of it. */
    if (self && self->session != gpuprof__g.session) gpuprof__retired_drop(self, 0);
    for (t = gpuprof__threads.threads; t; t = next) {
        next = t->next;
        if (t == self || t->exited) gpuprof__thread_free(t);
        else { t->next = gpuprof__threads.retired; gpuprof__threads.retired = t; keep_names = 1; }
    }
    gpuprof__threads.threads = NULL;
    gpuprof__tls = NULL;
    if (self) pthread_setspecific(gpuprof__tls_key, NULL);   /* freed above: its exit must not see it */
#ifdef GPUPROF_CUDA
    gpuprof__gpu_close();
#endif
#ifdef GPUPROF_NVTX
    GPUPROF__ST(&gpuprof__g.nvtx_on, 0);
#endif
    /* A thread still running may be in the middle of a call that reads a
       name (a message, a dynamic name's cache check): then the name table
       stays allocated (the next init starts a new one). */
    if (keep_names) gpuprof__registry.names_kept = 1;
    else gpuprof__names_free();
    gpuprof__remember_output(gpuprof__g.trace_path);
    gpuprof__remember_output(gpuprof__g.summary_path);
    if (gpuprof__g.report && strcmp(gpuprof__g.report, "stderr") && strcmp(gpuprof__g.report, "stdout") && strcmp(gpuprof__g.report, "off"))
        gpuprof__remember_output(gpuprof__g.report);
    gpuprof__free_settings();
    gpuprof__step_figures_clear();     /* the kinds' and outliers' tables: the node indexes are of threads freed above */
    gpuprof__warn_reset();
    GPUPROF__STR(&gpuprof__g.state, (int)GPUPROF__DOWN);
    pthread_mutex_unlock(&gpuprof__lock);
}

void gpuprof_shutdown(void) {
    if (GPUPROF__LD(&gpuprof__g.forked_child)) return;
    pthread_mutex_lock(&gpuprof__life_lock);
    gpuprof__shutdown_locked();
    pthread_mutex_unlock(&gpuprof__life_lock);
}

#endif /* !GPUPROF_DISABLE */
#endif /* GPUPROF__IMPLEMENTED */
#endif /* GPUPROF_IMPLEMENTATION */

/*
   MIT License

   Copyright (c) 2026 the gpuprof authors

   Permission is hereby granted, free of charge, to any person obtaining a copy
   of this software and associated documentation files (the "Software"), to deal
   in the Software without restriction, including without limitation the rights
   to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
   copies of the Software, and to permit persons to whom the Software is
   furnished to do so, subject to the following conditions:

   The above copyright notice and this permission notice shall be included in
   all copies or substantial portions of the Software.

   THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
   IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
   FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
   AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
   LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
   OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
   SOFTWARE.
*/
