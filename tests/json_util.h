/* json_util.h -- reading gpuprof's JSON summary in tests, with cJSON. */
#ifndef GPUPROF_JSON_UTIL_H
#define GPUPROF_JSON_UTIL_H
#include <cjson/cJSON.h>
#include "check.h"

static inline cJSON *summary_load(const char *path) {
    char *text = check_slurp(path);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

/* The entry of `array` ("ranges", "counters") named `name`. */
static inline cJSON *summary_find(cJSON *root, const char *array, const char *name) {
    cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(root, array)) {
        cJSON *n = cJSON_GetObjectItem(e, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) return e;
    }
    return NULL;
}

/* The tree entry for a path such as "step/forward/matmul". */
static inline cJSON *summary_path(cJSON *root, const char *path) {
    cJSON *tree = cJSON_GetObjectItem(root, "tree"), *e;
    char want[512];
    cJSON_ArrayForEach(e, tree) {
        /* rebuild this entry's path by following parent ids */
        char parts[16][128];
        int depth = 0, i;
        cJSON *cur = e;
        while (cur && depth < 16) {
            int parent = cJSON_GetObjectItem(cur, "parent")->valueint;
            cJSON *c;
            snprintf(parts[depth++], sizeof parts[0], "%s", cJSON_GetObjectItem(cur, "name")->valuestring);
            cur = NULL;
            if (parent < 0) break;
            cJSON_ArrayForEach(c, tree) if (cJSON_GetObjectItem(c, "id")->valueint == parent) { cur = c; break; }
        }
        want[0] = 0;
        for (i = depth - 1; i >= 0; i--) {
            strncat(want, parts[i], sizeof want - strlen(want) - 1);
            if (i) strncat(want, "/", sizeof want - strlen(want) - 1);
        }
        if (strcmp(want, path) == 0) return e;
    }
    return NULL;
}

/* The events of a gpuprof trace: the file is a JSON array of them. */
static inline cJSON *trace_events(cJSON *trace) {
    return cJSON_IsArray(trace) ? trace : NULL;
}

static inline double jnum(cJSON *obj, const char *key) {
    cJSON *v = obj ? cJSON_GetObjectItem(obj, key) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}
#endif
