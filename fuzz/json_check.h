/* SPDX-License-Identifier: MIT */
/*
 * A strict JSON validator for fuzz targets (RFC 8259 grammar; UTF-8 is not
 * re-checked: the writer's own fuzzer covers that). Header-only, static.
 */
#ifndef ACT_FUZZ_JSON_CHECK_H
#define ACT_FUZZ_JSON_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct jv {
    const char *p, *end;
    int depth;
} jv;

static void ws(jv *v)
{
    while (v->p < v->end && (*v->p == ' ' || *v->p == '\n' || *v->p == '\r' || *v->p == '\t'))
        v->p++;
}

static int value(jv *v);

static int string(jv *v)
{
    if (v->p >= v->end || *v->p != '"')
        return 0;
    v->p++;
    while (v->p < v->end) {
        unsigned char c = (unsigned char)*v->p++;
        if (c == '"')
            return 1;
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            if (v->p >= v->end)
                return 0;
            char e = *v->p++;
            if (e == 'u') {
                for (int i = 0; i < 4; i++, v->p++)
                    if (v->p >= v->end || !strchr("0123456789abcdefABCDEF", *v->p) || !*v->p)
                        return 0;
            } else if (!strchr("\"\\/bfnrt", e) || !e) {
                return 0;
            }
        }
    }
    return 0;
}

static int number(jv *v)
{
    const char *s = v->p;
    if (v->p < v->end && *v->p == '-')
        v->p++;
    if (v->p >= v->end)
        return 0;
    if (*v->p == '0')
        v->p++;
    else if (*v->p >= '1' && *v->p <= '9')
        while (v->p < v->end && *v->p >= '0' && *v->p <= '9')
            v->p++;
    else
        return 0;
    if (v->p < v->end && *v->p == '.') {
        v->p++;
        const char *d = v->p;
        while (v->p < v->end && *v->p >= '0' && *v->p <= '9')
            v->p++;
        if (v->p == d)
            return 0;
    }
    if (v->p < v->end && (*v->p == 'e' || *v->p == 'E')) {
        v->p++;
        if (v->p < v->end && (*v->p == '+' || *v->p == '-'))
            v->p++;
        const char *d = v->p;
        while (v->p < v->end && *v->p >= '0' && *v->p <= '9')
            v->p++;
        if (v->p == d)
            return 0;
    }
    return v->p > s;
}

static int lit(jv *v, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(v->end - v->p) < n || memcmp(v->p, w, n) != 0)
        return 0;
    v->p += n;
    return 1;
}

static int container(jv *v, char open, char close, int object)
{
    if (++v->depth > 64)
        return 0;
    v->p++; /* open */
    (void)open;
    ws(v);
    if (v->p < v->end && *v->p == close) {
        v->p++;
        v->depth--;
        return 1;
    }
    for (;;) {
        ws(v);
        if (object) {
            if (!string(v))
                return 0;
            ws(v);
            if (v->p >= v->end || *v->p++ != ':')
                return 0;
        }
        if (!value(v))
            return 0;
        ws(v);
        if (v->p >= v->end)
            return 0;
        char c = *v->p++;
        if (c == close)
            break;
        if (c != ',')
            return 0;
    }
    v->depth--;
    return 1;
}

static int value(jv *v)
{
    ws(v);
    if (v->p >= v->end)
        return 0;
    switch (*v->p) {
    case '{': return container(v, '{', '}', 1);
    case '[': return container(v, '[', ']', 0);
    case '"': return string(v);
    case 't': return lit(v, "true");
    case 'f': return lit(v, "false");
    case 'n': return lit(v, "null");
    default: return number(v);
    }
}

static int valid_json(const char *p, size_t n)
{
    jv v = {p, p + n, 0};
    if (!value(&v))
        return 0;
    ws(&v);
    return v.p == v.end;
}


/* Read the file at @p path, remove it, and abort unless it is one valid
 * JSON document. */
static void check_trace_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        abort();
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        abort();
    fclose(f);
    unlink(path);
    if (!valid_json(buf, (size_t)n)) {
        fprintf(stderr, "fuzz: the trace is not valid JSON\n");
        abort();
    }
    free(buf);
}

#endif
