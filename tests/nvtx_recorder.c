/* nvtx_recorder.c -- TEST CODE: an NVTX tool, loaded the way Nsight is
   (NVTX_INJECTION64_PATH=libnvtx_recorder.so). It writes every domain range
   push and pop to the file named by NVTX_RECORDER_OUT, one per line:

       push <domain> <name>
       pop <domain>

   so a test can compare what a tool sees with gpuprof's own table. */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *out;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* Domain and string handles are pointers to copies of their text, kept in a
   list and freed at exit (NVTX has no call to unregister them). */
struct copy { struct copy *next; char text[]; };
static struct copy *copies;
static char *keep(const char *s) {
    size_t n = strlen(s ? s : "(null)") + 1;
    struct copy *c = (struct copy *)malloc(sizeof *c + n);
    memcpy(c->text, s ? s : "(null)", n);
    pthread_mutex_lock(&mu);
    c->next = copies;
    copies = c;
    pthread_mutex_unlock(&mu);
    return c->text;
}
static nvtxDomainHandle_t NVTX_API rec_domain_create(const char *name) { return (nvtxDomainHandle_t)keep(name); }
static nvtxStringHandle_t NVTX_API rec_register_string(nvtxDomainHandle_t d, const char *s) {
    (void)d;
    return (nvtxStringHandle_t)keep(s);
}
static const char *domain_name(nvtxDomainHandle_t d) { return d ? (const char *)d : "(default)"; }

static int NVTX_API rec_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    const char *name = "(no message)";
    if (a && a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) name = (const char *)a->message.registered;
    else if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII) name = a->message.ascii;
    pthread_mutex_lock(&mu);
    if (out) fprintf(out, "push %s %s\n", domain_name(d), name);
    pthread_mutex_unlock(&mu);
    return 0;
}
static int NVTX_API rec_pop(nvtxDomainHandle_t d) {
    pthread_mutex_lock(&mu);
    if (out) fprintf(out, "pop %s\n", domain_name(d));
    pthread_mutex_unlock(&mu);
    return 0;
}

static void close_out(void) {
    pthread_mutex_lock(&mu);
    if (out) fclose(out);
    out = NULL;
    while (copies) { struct copy *c = copies; copies = c->next; free(c); }
    pthread_mutex_unlock(&mu);
}

int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get_table(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    const char *path = getenv("NVTX_RECORDER_OUT");
    if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table) return 0;
    out = fopen(path ? path : "nvtx_events.txt", "w");
    if (!out) return 0;
    setvbuf(out, NULL, _IOLBF, 0);
    atexit(close_out);
    *table[NVTX_CBID_CORE2_DomainCreateA] = (NvtxFunctionPointer)rec_domain_create;
    *table[NVTX_CBID_CORE2_DomainRegisterStringA] = (NvtxFunctionPointer)rec_register_string;
    *table[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)rec_push;
    *table[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)rec_pop;
    return 1;
}
