/* The stepping thread off the CPU (issue 41): waiting -- it blocked, here in
   sleeps -- told from preemption -- runnable while another process had its
   CPU, here a busy child pinned to the same CPU -- from the thread's own
   counters (run_delay in /proc/thread-self/schedstat, and the voluntary and
   involuntary context switches of getrusage(RUSAGE_THREAD)). Real clock:
   each step is 5 ms of sleep, or 5 ms of this thread's CPU time. */
#define _GNU_SOURCE
#include "gpuprof.h"
#include "json_util.h"
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void burn(double ms) {              /* ms of this thread's own CPU time, however long it takes */
    double t0 = cpu_ms(), x = 1;
    while (cpu_ms() - t0 < ms) { int i; for (i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9; }
    sink = x;
}

/* 40 steps of "work"; hog: a busy child pinned to this thread's CPU;
   outside: between the steps, outside any range, 3 ms of this thread's
   CPU (OUT_CODE) or three sched_yield()s that give the hog the CPU
   (OUT_YIELD: preemption outside any range, as a loaded machine's often
   is, where the thread enters the kernel). */
enum { OUT_NONE, OUT_CODE, OUT_YIELD };
static cJSON *run(const char *tag, int hog, int outside) {
    char summary[64], report[64];
    pid_t child = -1;
    int i;
    snprintf(summary, sizeof summary, "%s.json", tag);
    snprintf(report, sizeof report, "%s.txt", tag);
    if (hog) {
        cpu_set_t one;
        int cpu = sched_getcpu();
        CPU_ZERO(&one);
        CPU_SET(cpu < 0 ? 0 : cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0) return NULL;
        if ((child = fork()) == 0) { for (;;) sink = sink * 1.0000001 + 1e-9; }
    }
    setenv("GPUPROF_SUMMARY", summary, 1);
    setenv("GPUPROF_REPORT", report, 1);
    gpuprof_init(NULL);
    for (i = 0; i < 40; i++) {
        PROF_STEP();
        if (outside == OUT_CODE) burn(3);
        else if (outside == OUT_YIELD) { sched_yield(); sched_yield(); sched_yield(); }
        {
            PROF_RANGE("work");
            if (hog || outside) burn(outside ? 1 : 5);
            else { struct timespec ts = { 0, 5000000 }; nanosleep(&ts, NULL); }
        }
    }
    PROF_STEP();
    gpuprof_shutdown();
    if (child > 0) { kill(child, SIGKILL); waitpid(child, NULL, 0); }
    return summary_load(summary);
}

int main(void) {
    cJSON *j, *v;
    char *text;
    double waited, pre;
    j = run("sleeps", 0, OUT_NONE);
    v = cJSON_GetObjectItem(j, "verdict");
    pre = jnum(v, "stepper_preempted_share");
    waited = jnum(v, "stepper_blocked_share") - (pre == pre ? pre : 0);
    printf("sleeps: off the CPU %.2f, preempted %.2f, switches %.1f voluntary / %.1f involuntary a step\n", jnum(v, "stepper_blocked_share"), pre,
           jnum(cJSON_GetObjectItem(v, "stepper_switches_per_step"), "voluntary"), jnum(cJSON_GetObjectItem(v, "stepper_switches_per_step"), "involuntary"));
    CHECK(waited > 0.5, "sleeps: the stepping thread was off the CPU, waiting, most of its steps");
    CHECK(pre != pre || pre < waited, "sleeps: less preemption than waiting");
    CHECK(jnum(cJSON_GetObjectItem(v, "stepper_switches_per_step"), "voluntary") >= 1, "sleeps: a voluntary switch (at least) a step");
    text = check_slurp("sleeps.txt");
    CHECK(text && strstr(text, "that wait is part of the step's time"), "sleeps: the report says it waited");
    CHECK(text && !strstr(text, "the machine is loaded"), "sleeps: not that the machine is loaded");
    free(text);
    cJSON_Delete(j);
    /* 3 ms of code outside any range against 1 ms in "work": the verdict
       blames it and says to wrap it in ranges -- unless this machine
       preempted the thread for half of it or more, when it says to free
       the CPUs first (the case below) */
    j = run("outside", 0, OUT_CODE);
    v = cJSON_GetObjectItem(j, "verdict");
    pre = jnum(v, "stepper_preempted_share");
    text = check_slurp("outside.txt");
    CHECK(text && strstr(text, "   bottleneck: code outside any range, host "), "code outside any range: the bottleneck");
    if (pre == pre && pre < 0.25)
        CHECK(text && strstr(text, "try: wrap the code between the phases in ranges (GPUPROF_RANGE)"), "... and the try: line says to wrap it in ranges");
    else printf("outside: preempted %.2f of the steps here (a loaded machine): its try: line is not judged\n", pre);
    free(text);
    cJSON_Delete(j);
    if (!(j = run("hog", 1, OUT_NONE))) { printf("test_waits: cannot pin to one CPU here; the preemption case is skipped\n"); return check_done("test_waits"); }
    v = cJSON_GetObjectItem(j, "verdict");
    pre = jnum(v, "stepper_preempted_share");
    printf("hog: off the CPU %.2f, preempted %.2f, switches %.1f voluntary / %.1f involuntary a step\n", jnum(v, "stepper_blocked_share"), pre,
           jnum(cJSON_GetObjectItem(v, "stepper_switches_per_step"), "voluntary"), jnum(cJSON_GetObjectItem(v, "stepper_switches_per_step"), "involuntary"));
    CHECK(jnum(v, "stepper_blocked_share") > 0.25, "hog: the stepping thread was off the CPU a quarter of its steps or more (it shares its CPU)");
    if (pre == pre) CHECK(pre > 0.8 * jnum(v, "stepper_blocked_share"), "hog: that time off the CPU is preemption (run_delay)");
    CHECK(jnum(cJSON_GetObjectItem(v, "stepper_switches_per_step"), "involuntary") > jnum(cJSON_GetObjectItem(v, "stepper_switches_per_step"), "voluntary"),
          "hog: more involuntary switches than voluntary ones");
    text = check_slurp("hog.txt");
    CHECK(text && (strstr(text, "the machine is loaded") || strstr(text, "mostly preempted")), "hog: the report says preempted, not waited");
    if (text && strstr(text, "off the CPU")) { const char *p = strstr(text, "   the stepping thread"); printf("%.*s\n", (int)(strchr(p, '\n') - p), p); }
    free(text);
    cJSON_Delete(j);
    /* The hog takes the CPU outside any range: that time is preemption,
       and the verdict says to free the CPUs before wrapping it in ranges. */
    j = run("hog_outside", 1, OUT_YIELD);
    v = cJSON_GetObjectItem(j, "verdict");
    pre = jnum(v, "stepper_preempted_share");
    text = check_slurp("hog_outside.txt");
    printf("hog_outside: preempted %.2f of the steps\n", pre);
    CHECK(text && strstr(text, "   bottleneck: code outside any range, host "), "hog outside any range: the bottleneck is the time outside any range");
    if (pre == pre)
        CHECK(text && strstr(text, "try: free or pin the CPUs, then measure again: the stepping thread was preempted for half the time outside any range or more"),
              "... and the try: line says to free or pin the CPUs first, not to wrap code that may not be there");
    if (text && strstr(text, "   try: ")) { const char *p = strstr(text, "   try: "); printf("%.*s\n", (int)(strchr(p, '\n') - p), p); }
    free(text);
    text = j ? cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "verdict")) : NULL;
    CHECK(text && strstr(text, "free or pin the CPUs, then measure again"), "... the summary's verdict too");
    free(text);
    cJSON_Delete(j);
    return check_done("test_waits");
}
