/* The Perfetto trace (SPEC 14): chosen by the file's name, whole packets
   only (a run killed at any moment leaves whole packets and at most one
   cut short), the counts in its closing label, the size, a flight-recorder
   dump in either format from one ring, a copy of a stream keeps the
   stream's format (and says so); and, with a Python that has Perfetto's
   decoder (perfetto_trace_pb2), the same run's JSON and Perfetto traces
   hold the same slices, instants, counter values, flows and names.
   The clock is virtual (vnow): two sessions of the same loop are the same.
   usage: test_pftrace CHECK_TRACE_PY [PYTHON CHECK_PFTRACE_PY]
          test_pftrace --die        (internal: record into a .pftrace, then SIGKILL self mid-write) */
#include "impl/clock.h"
#include "gpuprof.h"
#include "check.h"
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A file of Perfetto packets, frame by frame: the whole ones, whether a
   last one is cut short, and the text of the last whole one. */
typedef struct frames { long n; int cut, bad; char last[2048]; size_t last_len; } frames;

static frames read_frames(const char *path) {
    frames f;
    FILE *in = fopen(path, "rb");
    unsigned char *buf;
    long size, i = 0;
    memset(&f, 0, sizeof f);
    if (!in) { f.bad = 1; return f; }
    fseek(in, 0, SEEK_END);
    size = ftell(in);
    fseek(in, 0, SEEK_SET);
    buf = (unsigned char *)malloc((size_t)size + 1);
    if (!buf || fread(buf, 1, (size_t)size, in) != (size_t)size) f.bad = 1;
    fclose(in);
    while (!f.bad && i < size) {
        uint64_t len = 0;
        int shift = 0;
        long j = i + 1;
        if (buf[i] != 0x0a) { f.bad = 1; break; }
        while (j < size && (buf[j] & 0x80) && shift < 63) { len |= (uint64_t)(buf[j] & 0x7f) << shift; shift += 7; j++; }
        if (j >= size) { f.cut = 1; break; }
        len |= (uint64_t)buf[j++] << shift;
        if (j + (long)len > size) { f.cut = 1; break; }
        f.n++;
        f.last_len = len < sizeof f.last ? (size_t)len : sizeof f.last;
        memcpy(f.last, buf + j, f.last_len);
        i = j + (long)len;
    }
    free(buf);
    return f;
}

/* The counts in the closing label ("gpuprof V: N events, D dropped"). */
static int end_counts(const frames *f, unsigned long long *events, unsigned long long *dropped) {
    static const char key[] = "gpuprof " GPUPROF_VERSION ": ";
    size_t i;
    for (i = 0; i + sizeof key - 1 < f->last_len; i++)
        if (memcmp(f->last + i, key, sizeof key - 1) == 0) {
            char tmp[128];
            size_t n = f->last_len - i - (sizeof key - 1);
            if (n >= sizeof tmp) n = sizeof tmp - 1;
            memcpy(tmp, f->last + i + sizeof key - 1, n);
            tmp[n] = 0;
            return sscanf(tmp, "%llu events, %llu dropped", events, dropped) == 2 ? 0 : -1;
        }
    return -1;
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* The loop both formats record: nested ranges (a child starting in its
   parent's nanosecond), a counter, a mark, steps outside any range, a
   range of declared work, a thread of its own. */
static void *worker(void *arg) {
    (void)arg;
    { PROF_RANGE("on a worker"); }
    return NULL;
}
static void session(const char *trace_path, int ring, int steps) {
    gpuprof_config cfg = {0};
    pthread_t th;
    int i;
    vnow = 5000;
    cfg.report = "off";
    cfg.trace_path = trace_path;
    cfg.trace_ring_mb = ring ? 1 : -1;
    gpuprof_init(&cfg);
    for (i = 0; i < steps; i++) {
        PROF_STEP();
        vnow += 2;
        {
            PROF_RANGE("step");
            { PROF_RANGE("forward"); { PROF_RANGE("matmul"); vnow += 100; } vnow += 10; }
            { PROF_RANGE_WORK("backward", 2e9, 8e9); vnow += 200; }
            PROF_COUNTER("loss", 1.0 / (i + 1));
            if (i % 100 == 0) PROF_MARK("checkpoint");
            vnow += 1;
        }
        vnow += 3;
    }
    pthread_create(&th, NULL, worker, NULL);
    pthread_join(th, NULL);
}

/* 100000 ranges, two levels, nothing else. */
static void plain(const char *path) {
    gpuprof_config cfg = {0};
    int i;
    vnow = 5000;
    cfg.report = "off";
    cfg.trace_path = path;
    gpuprof_init(&cfg);
    for (i = 0; i < 50000; i++) { PROF_RANGE("layer"); vnow += 7; { PROF_RANGE("kernel launch"); vnow += 20; } vnow += 5; }
    gpuprof_shutdown();
}

/* The encoder's fast path in its other shapes: sequence ids of two bytes
   (130 dumps before: each gives the threads new sequences) and name ids of
   two bytes (300 names), runs of one name broken by others; then one ring
   dumped in both formats. */
static void many_names(void) {
    gpuprof_config cfg = {0};
    char name[32];
    int i, k;
    vnow = 5000;
    cfg.report = "off";
    cfg.trace_ring_mb = 1;
    cfg.max_names = 1000;
    gpuprof_init(&cfg);
    { PROF_RANGE("before"); vnow += 3; }
    for (i = 0; i < 130; i++) CHECK(gpuprof_write_trace("scratch.pftrace") == 0 || i > 0, "a dump");
    for (i = 0; i < 300; i++)
        for (k = 0; k < 1 + i % 4; k++) {
            snprintf(name, sizeof name, "name %d", i);
            { PROF_RANGE_DYN(name); vnow += 20 + (unsigned)(k * 90); }
            vnow += 1 + (unsigned)(i % 3) * 200;
        }
    CHECK(gpuprof_write_trace("names.pftrace") == 0 && gpuprof_write_trace("names.json") == 0, "300 names, dumped as Perfetto and as JSON");
    gpuprof_shutdown();
    remove("scratch.pftrace");
}

static void die_mid_run(void) {
    gpuprof_config cfg = {0};
    long i;
    cfg.trace_path = "killed.pftrace";
    gpuprof_init(&cfg);
    for (i = 0;; i++) {
        { PROF_RANGE("outer"); vnow += 3; { PROF_RANGE("inner"); vnow += 5; } vnow += 2; }
        PROF_STEP();
        if (i % 4096 == 0 && file_size("killed.pftrace") > 1000000) raise(SIGKILL);
    }
}

/* With a decoder: each pair holds the same. */
static void parity(const char *py, const char *checker) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s run.pftrace run.json && %s %s plain.pftrace plain.json && %s %s ring.pftrace ring.json && "
             "%s %s names.pftrace names.json && %s %s killed.pftrace --cut", py, checker, py, checker, py, checker, py, checker, py, checker);
    CHECK(system(cmd) == 0, "Perfetto's own decoder reads the .pftrace files; each holds what the JSON trace of the same run holds");
}

int main(int argc, char **argv) {
    frames f;
    unsigned long long events = 0, dropped = 1;
    long pf, js;
    int status, saved;
    char *err;
    vnow = 5000;
    if (argc > 1 && strcmp(argv[1], "--die") == 0) die_mid_run();
    if (argc < 2) { fprintf(stderr, "usage: test_pftrace CHECK_TRACE_PY [PYTHON CHECK_PFTRACE_PY]\n"); return 2; }

    /* the same run twice: JSON, then Perfetto */
    session("run.json", 0, 20000);
    gpuprof_shutdown();
    session("run.pftrace", 0, 20000);
    saved = check_stderr_to("copy.err");
    CHECK(gpuprof_write_trace("copy.json") == 0, "write_trace copies a Perfetto stream");
    check_stderr_back(saved);
    err = check_slurp("copy.err");
    CHECK(err && strstr(err, "gpuprof: gpuprof_write_trace('copy.json'): a copy of the streamed trace 'run.pftrace' is in its format, Perfetto's"),
          "a copy named like JSON of a Perfetto stream: one line says the copy is in the stream's format");
    free(err);
    gpuprof_shutdown();
    f = read_frames("run.pftrace");
    CHECK(!f.bad && !f.cut && f.n > 2 * 20000 * 4, "the Perfetto trace is whole packets, a begin and an end per range");
    CHECK(end_counts(&f, &events, &dropped) == 0, "its last packet says what it holds");
    CHECK_EQ_U(events, 20000 * 6 + 200 + 1, "every event: per step 4 ranges, a counter and the step; 200 marks; the worker's range");
    CHECK_EQ_U(dropped, 0, "none dropped");
    f = read_frames("copy.json");
    CHECK(!f.bad && !f.cut && f.n > 0, "the copy is the Perfetto stream's bytes, whatever its name");
    pf = file_size("run.pftrace");
    js = file_size("run.json");
    CHECK(pf > 0 && js > 0 && pf * 2 < js, "with steps, counters and work arguments the Perfetto trace is less than half the JSON trace");
    printf("test_pftrace: steps of 4 ranges, a counter, work arguments: %ld bytes (Perfetto) against %ld (JSON), %.2fx smaller\n", pf, js,
           (double)js / (double)pf);
    plain("plain.json");
    plain("plain.pftrace");
    pf = file_size("plain.pftrace");
    js = file_size("plain.json");
    CHECK(pf > 0 && js > 0 && pf * 7 < js * 2 && pf < 25 * 100000, "plain nested ranges: under 25 bytes a range, 3.5 times smaller than JSON or more");
    printf("test_pftrace: 100000 plain ranges: %ld bytes (Perfetto, %.1f a range) against %ld (JSON, %.1f), %.2fx smaller\n", pf,
           (double)pf / 1e5, js, (double)js / 1e5, (double)js / (double)pf);

    /* the flight recorder: one ring dumped in both formats, by name */
    session(NULL, 1, 20000);
    CHECK(gpuprof_write_trace("ring.pftrace") == 0 && gpuprof_write_trace("ring.json") == 0, "one ring, dumped twice: as Perfetto and as JSON");
    gpuprof_shutdown();
    f = read_frames("ring.pftrace");
    CHECK(!f.bad && !f.cut && end_counts(&f, &events, &dropped) == 0 && events > 0 && events < 20000 * 6,
          "the dump named .pftrace is a Perfetto trace of the ring's window (older events fell out)");
    {
        char *j = check_slurp("ring.json");
        CHECK(j && j[0] == '[', "the dump named .json is a JSON trace");
        free(j);
    }

    many_names();
    f = read_frames("names.pftrace");
    CHECK(!f.bad && !f.cut && end_counts(&f, &events, &dropped) == 0, "a dump of 300 names, on sequences numbered past 127");
    CHECK_EQ_U(events, 751, "every range in it: 750 and the first");

    /* killed mid-run: whole packets, at most the last one cut short */
    if (fork() == 0) { execl(argv[0], argv[0], "--die", (char *)NULL); _exit(127); }
    wait(&status);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child was killed mid-run");
    f = read_frames("killed.pftrace");
    CHECK(!f.bad && f.n > 10000, "the killed run's Perfetto trace: whole packets up to the kill (a last one may be cut short)");

    if (argc >= 4) parity(argv[2], argv[3]);
    else printf("test_pftrace: no Python with perfetto_trace_pb2 given: the parity with the JSON trace is checked by the viewers' setup\n");
    return check_done("test_pftrace");
}
