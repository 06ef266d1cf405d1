/* summary_json.h -- reading gpuprof's JSON summaries in the tools
   (gpuprof-compare, gpuprof-ranks): a small JSON reader (the whole document
   as a tree) and the loading of one summary with its checks. Plain C99, no
   dependencies; each tool defines TOOL (its name, for messages) first. */
#ifndef GPUPROF_SUMMARY_JSON_H
#define GPUPROF_SUMMARY_JSON_H
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------------
   A small JSON reader: the whole document as a tree.
   ---------------------------------------------------------------------- */
enum { J_NULL, J_FALSE, J_TRUE, J_NUM, J_STR, J_ARR, J_OBJ };
typedef struct jv {
    int type;
    double num;
    char *str;                /* J_STR: the value; in an object: the key is in `key` */
    char *key;
    struct jv *kids;          /* J_ARR / J_OBJ: n children */
    size_t n;
} jv;

typedef struct { const char *p, *end; const char *err; int depth; } jparser;

static void jskip(jparser *ps) { while (ps->p < ps->end && isspace((unsigned char)*ps->p)) ps->p++; }

static int jstring(jparser *ps, char **out) {
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    if (!s) { ps->err = "out of memory"; return -1; }
    ps->p++;                                  /* the opening quote */
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned c = (unsigned char)*ps->p++;
        char buf[4];
        size_t k = 0;
        if (c == '\\') {
            if (ps->p >= ps->end) break;
            c = (unsigned char)*ps->p++;
            switch (c) {
            case 'n': buf[k++] = '\n'; break;
            case 't': buf[k++] = '\t'; break;
            case 'r': buf[k++] = '\r'; break;
            case 'b': buf[k++] = '\b'; break;
            case 'f': buf[k++] = '\f'; break;
            case 'u': {
                unsigned cp = 0, i;
                if (ps->end - ps->p < 4) { ps->err = "bad \\u escape"; free(s); return -1; }
                for (i = 0; i < 4; i++) {
                    int h = ps->p[i];
                    cp = cp * 16 + (unsigned)(isdigit(h) ? h - '0' : (tolower(h) - 'a' + 10));
                }
                ps->p += 4;
                /* names are for display: a surrogate half shows as U+FFFD */
                if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd;
                if (cp < 0x80) buf[k++] = (char)cp;
                else if (cp < 0x800) { buf[k++] = (char)(0xc0 | cp >> 6); buf[k++] = (char)(0x80 | (cp & 63)); }
                else { buf[k++] = (char)(0xe0 | cp >> 12); buf[k++] = (char)(0x80 | ((cp >> 6) & 63)); buf[k++] = (char)(0x80 | (cp & 63)); }
                break;
            }
            default: buf[k++] = (char)c;    /* \" \\ \/ */
            }
        } else buf[k++] = (char)c;
        if (n + k + 1 > cap) {
            char *t;
            cap = 2 * cap + k;
            if (!(t = realloc(s, cap))) { free(s); ps->err = "out of memory"; return -1; }
            s = t;
        }
        memcpy(s + n, buf, k);
        n += k;
    }
    if (ps->p >= ps->end) { free(s); ps->err = "unterminated string"; return -1; }
    ps->p++;
    s[n] = 0;
    *out = s;
    return 0;
}

static int jvalue(jparser *ps, jv *v);

static int jlist(jparser *ps, jv *v, char close) {
    size_t cap = 0;
    ps->p++;
    if (++ps->depth > 64) { ps->err = "nested too deep"; return -1; }
    jskip(ps);
    if (ps->p < ps->end && *ps->p == close) { ps->p++; ps->depth--; return 0; }
    for (;;) {
        jv kid;
        memset(&kid, 0, sizeof kid);
        jskip(ps);
        if (close == '}') {
            if (ps->p >= ps->end || *ps->p != '"') { ps->err = "expected a key"; return -1; }
            if (jstring(ps, &kid.key) != 0) return -1;
            jskip(ps);
            if (ps->p >= ps->end || *ps->p != ':') { free(kid.key); ps->err = "expected ':'"; return -1; }
            ps->p++;
        }
        if (jvalue(ps, &kid) != 0) { free(kid.key); return -1; }
        if (v->n == cap) {
            jv *t;
            cap = cap ? 2 * cap : 8;
            if (!(t = realloc(v->kids, cap * sizeof *t))) { ps->err = "out of memory"; return -1; }
            v->kids = t;
        }
        v->kids[v->n++] = kid;
        jskip(ps);
        if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
        if (ps->p < ps->end && *ps->p == close) { ps->p++; ps->depth--; return 0; }
        ps->err = close == '}' ? "expected ',' or '}'" : "expected ',' or ']'";
        return -1;
    }
}

static int jvalue(jparser *ps, jv *v) {
    jskip(ps);
    if (ps->p >= ps->end) { ps->err = "unexpected end"; return -1; }
    switch (*ps->p) {
    case '{': v->type = J_OBJ; return jlist(ps, v, '}');
    case '[': v->type = J_ARR; return jlist(ps, v, ']');
    case '"': v->type = J_STR; return jstring(ps, &v->str);
    case 'n': if (ps->end - ps->p >= 4 && !memcmp(ps->p, "null", 4)) { ps->p += 4; v->type = J_NULL; return 0; } break;
    case 't': if (ps->end - ps->p >= 4 && !memcmp(ps->p, "true", 4)) { ps->p += 4; v->type = J_TRUE; return 0; } break;
    case 'f': if (ps->end - ps->p >= 5 && !memcmp(ps->p, "false", 5)) { ps->p += 5; v->type = J_FALSE; return 0; } break;
    default: {
        char *e;
        errno = 0;
        v->num = strtod(ps->p, &e);
        if (e == ps->p) break;
        ps->p = e;
        v->type = J_NUM;
        return 0;
    }
    }
    ps->err = "unexpected character";
    return -1;
}

static void jfree(jv *v) {
    size_t i;
    for (i = 0; i < v->n; i++) jfree(&v->kids[i]);
    free(v->kids);
    free(v->str);
    free(v->key);
}

static const jv *jget(const jv *o, const char *key) {
    size_t i;
    if (!o || o->type != J_OBJ) return NULL;
    for (i = 0; i < o->n; i++) if (strcmp(o->kids[i].key, key) == 0) return &o->kids[i];
    return NULL;
}

/* A number, or NaN where it is missing or null. */
static double jnum(const jv *o, const char *key) {
    const jv *v = jget(o, key);
    return v && v->type == J_NUM ? v->num : NAN;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    if (!f) return NULL;
    do {
        if (n + 65536 > cap) {
            char *t;
            cap = 2 * cap + 65536;
            if (!(t = realloc(buf, cap))) { free(buf); fclose(f); return NULL; }
            buf = t;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return buf;
}

/* Any JSON document from `path`, or -1 after a message. */
static int load_json(const char *path, jv *doc) {
    size_t len = 0;
    char *text;
    jparser ps;
    memset(doc, 0, sizeof *doc);
    if (!(text = slurp(path, &len))) {
        fprintf(stderr, TOOL ": cannot read %s: %s\n", path, strerror(errno ? errno : EIO));
        return -1;
    }
    ps.p = text;
    ps.end = text + len;
    ps.err = NULL;
    ps.depth = 0;
    if (jvalue(&ps, doc) != 0) {
        fprintf(stderr, TOOL ": %s is not valid JSON (%s at byte %ld); is it a gpuprof summary?\n", path, ps.err, (long)(ps.p - text));
        free(text);
        jfree(doc);
        return -1;
    }
    free(text);
    return 0;
}

/* 0 when `doc` (read from `path`) is a gpuprof summary; else -1 after a
   message naming what is wrong, with doc freed. */
static int check_summary(const char *path, jv *doc) {
    const jv *schema = jget(doc, "schema");
    if (!schema || schema->type != J_STR || strcmp(schema->str, "gpuprof-summary") != 0) {
        fprintf(stderr, TOOL ": %s is JSON but not a gpuprof summary (no \"schema\":\"gpuprof-summary\"); write one with GPUPROF_SUMMARY=path\n", path);
        jfree(doc);
        return -1;
    }
    if (!(jnum(doc, "schema_version") >= 1)) {
        fprintf(stderr, TOOL ": %s has no schema_version; written by an unknown gpuprof\n", path);
        jfree(doc);
        return -1;
    }
    {   /* a checkpoint (GPUPROF_SUMMARY_EVERY) of a run still going, or killed: its figures are partial */
        const jv *c = jget(doc, "complete"), *n = jget(doc, "checkpoint");
        char which[64] = "written by gpuprof_write_summary";
        if (n && n->type == J_NUM) snprintf(which, sizeof which, "checkpoint %.0f", n->num);
        if (c && c->type == J_FALSE)
            fprintf(stderr, TOOL ": %s is partial: a summary written before the run ended (%s, the first %.1f s of the run); "
                            "its figures cover only that\n", path, which, jnum(jget(doc, "run"), "wall_ns") / 1e9);
    }
    return 0;
}

/* A gpuprof summary from `path`, or -1 after a message naming what is wrong. */
static inline int load(const char *path, jv *doc) {
    return load_json(path, doc) != 0 ? -1 : check_summary(path, doc);
}

#endif
