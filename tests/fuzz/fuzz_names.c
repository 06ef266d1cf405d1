/* libFuzzer target (a): any bytes as names of dynamic ranges, counters and
   marks. The trace, the summary and the report are written; the trace and
   the summary must parse as JSON and give back each name -- as gpuprof
   promises to keep it: cut at 256 bytes, each byte that is not part of valid
   UTF-8 replaced by U+FFFD, "(empty)" for an empty name. */
#include "../../gpuprof.h"                /* fuzz/run.sh links the implementation */
#include "fuzz_common.h"

/* The reference: an independent strict UTF-8 check (RFC 3629). */
static size_t valid_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0], need, cp, k;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) { need = 1; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { need = 2; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { need = 3; cp = c & 0x07; }
    else return 0;
    if (n < need + 1) return 0;
    for (k = 1; k <= need; k++) {
        if ((s[k] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[k] & 0x3f);
    }
    if (need == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return 0;
    if (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) return 0;
    return need + 1;
}

static void expected(const char *name, char *out) {
    size_t n = strlen(name), i = 0, o = 0, len;
    if (n == 0) { strcpy(out, "(empty)"); return; }
    if (n > GPUPROF_NAME_MAX) n = GPUPROF_NAME_MAX;
    while (i < n) {
        len = valid_seq((const unsigned char *)name + i, n - i);
        if (len) { memcpy(out + o, name + i, len); o += len; i += len; }
        else { memcpy(out + o, "\xef\xbf\xbd", 3); o += 3; i++; }
    }
    out[o] = 0;
}

static int has_name(cJSON *array, const char *want) {
    cJSON *e;
    cJSON_ArrayForEach(e, array) {
        cJSON *n = cJSON_GetObjectItem(e, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, want) == 0) return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char names[4][600], want[4][GPUPROF_NAME_MAX * 3 + 16], tpath[256], spath[256], rpath[256];
    int nn = 0, i;
    size_t start = 0, k;
    gpuprof_config cfg;
    cJSON *sum, *trace;
    fuzz_setup("names");
    /* up to 4 names, separated by NUL bytes, each at most 599 bytes */
    for (k = 0; k <= size && nn < 4; k++) {
        if (k == size || data[k] == 0) {
            size_t len = k - start < 599 ? k - start : 599;
            memcpy(names[nn], data + start, len);
            names[nn][len] = 0;
            nn++;
            start = k + 1;
        }
    }
    snprintf(tpath, sizeof tpath, "%s/t.json", fuzz_dir);
    snprintf(spath, sizeof spath, "%s/s.json", fuzz_dir);
    snprintf(rpath, sizeof rpath, "%s/r.txt", fuzz_dir);
    memset(&cfg, 0, sizeof cfg);
    cfg.trace_path = tpath;
    cfg.summary_path = spath;
    cfg.report = rpath;
    cfg.process_name = names[0];
    gpuprof_init(&cfg);
    for (i = 0; i < nn; i++) {
        gpuprof_site site;
        memset(&site, 0, sizeof site);
        site.name = names[i];
        { PROF_RANGE_DYN(names[i]); { PROF_RANGE_DYN(names[(i + 1) % nn]); } }
        gpuprof__counter(&site, (double)i);
        gpuprof__mark(&site);
    }
    gpuprof_shutdown();
    sum = fuzz_json(spath, "the summary parses");
    trace = fuzz_json(tpath, "the trace parses");
    FUZZ_CHECK(sum && trace, "both files were written");
    for (i = 0; i < nn; i++) {
        int found = 0;
        cJSON *e;
        expected(names[i], want[i]);
        FUZZ_CHECK(has_name(cJSON_GetObjectItem(sum, "ranges"), want[i]), "the range's name round-trips through the summary");
        FUZZ_CHECK(has_name(cJSON_GetObjectItem(sum, "counters"), want[i]), "the counter's name round-trips through the summary");
        cJSON_ArrayForEach(e, trace) {
            cJSON *n = cJSON_GetObjectItem(e, "name"), *ph = cJSON_GetObjectItem(e, "ph");
            if (cJSON_IsString(n) && cJSON_IsString(ph) && ph->valuestring[0] == 'X' && strcmp(n->valuestring, want[i]) == 0) found = 1;
        }
        FUZZ_CHECK(found, "the range's name round-trips through the trace");
    }
    cJSON_Delete(sum);
    cJSON_Delete(trace);
    unlink(tpath);                  /* the next input's session writes them afresh */
    unlink(spath);
    unlink(rpath);
    return 0;
}
