/* The lazy start before main (SPEC 6): a range in a constructor of the
   program's own starts the session as a range in main does, and main's
   ranges join it; a range in a constructor that runs before gpuprof's own
   (priority 100 here, below gpuprof's 101) is left out, with one line that
   says how to record it. */
#include "gpuprof.h"
#include "json_util.h"
#include <fcntl.h>
#include <unistd.h>

static int err_pipe[2] = {-1, -1}, err_saved = -1;

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wprio-ctor-dtor"      /* 100 is reserved: the point is to run before gpuprof */
#endif
/* Before check.h has moved into the test's directory: stderr goes to a pipe, not a file. */
__attribute__((constructor(100))) static void before_gpuprof(void) {
    if (pipe(err_pipe) != 0) return;
    fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
    err_saved = dup(2);
    dup2(err_pipe[1], 2);
    PROF_BEGIN("too_early");
    PROF_END();
    dup2(err_saved, 2);
}

__attribute__((constructor)) static void program_constructor(void) {
    PROF_RANGE("in_constructor");
}

int main(void) {
    char text[4096];
    ssize_t n = err_pipe[0] >= 0 ? read(err_pipe[0], text, sizeof text - 1) : -1;
    cJSON *j;
    text[n > 0 ? n : 0] = 0;
    CHECK(err_pipe[0] >= 0 && n > 0, "the range before gpuprof's constructor wrote a line");
    CHECK(strstr(text, "gpuprof: a range before gpuprof's own constructor ran is not recorded "
                       "(call gpuprof_init() first in a constructor of priority 101 or below)\n") != NULL,
          "the line says the range is not recorded and how to record it");
    CHECK(strstr(text, "gpuprof:") == text && strstr(text + 1, "gpuprof:") == NULL, "one line, and nothing else");
    { PROF_RANGE("in_main"); }
    CHECK(gpuprof_write_summary("startup.json") == 0, "the summary is written");
    j = summary_load("startup.json");
    CHECK(j != NULL, "the summary parses");
    if (j) {
        cJSON *c = summary_find(j, "ranges", "in_constructor"), *m = summary_find(j, "ranges", "in_main");
        CHECK(c && jnum(c, "count") == 1, "the range in a constructor of the program's own started the session and is counted");
        CHECK(m && jnum(m, "count") == 1, "main's range is in the session the constructor started");
        CHECK(summary_find(j, "ranges", "too_early") == NULL, "the range before gpuprof's constructor is left out");
        cJSON_Delete(j);
    }
    gpuprof_shutdown();
    return check_done("test_startup");
}
