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


/* The unsigned number after @p key in @p line; 0 if found (the writer
 * writes one event per line, integers in decimal). */
static inline int num_after(const char *line, const char *key, unsigned long long *u)
{
    const char *p = strstr(line, key);
    if (!p)
        return -1;
    *u = strtoull(p + strlen(key), NULL, 10);
    return 0;
}

/* What a trace must hold beyond valid JSON: no negative ts or dur, and no
 * ts a double cannot hold to the nanosecond (timestamps far from the
 * session are refused, so the writer's arithmetic cannot wrap), and on device processes one track per 64-bit stream id: a
 * tid never carries two streams, a stream never two tids. */
static inline void check_trace_lines(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        abort();
    enum { MAXS = 4096 };
    static unsigned long long pids[MAXS], tids[MAXS], streams[MAXS];
    size_t n = 0;
    static char line[1 << 16];
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "\"ts\":-") || strstr(line, "\"dur\":-")) {
            fprintf(stderr, "fuzz: negative ts or dur: %.200s\n", line);
            abort();
        }
        /* Every ts within 2^53 ns of the base: exact to the ns as a double. */
        const char *ts = strstr(line, "\"ts\":");
        if (ts && strtod(ts + 5, NULL) * 1000.0 >= 9007199254740992.0) {
            fprintf(stderr, "fuzz: ts beyond double precision: %.200s\n", line);
            abort();
        }
        unsigned long long pid, tid, stream;
        if (num_after(line, "\"pid\":", &pid) || pid < 0x40000000u ||
            num_after(line, "\"tid\":", &tid) || num_after(line, "\"stream\":", &stream))
            continue;
        size_t i = 0;
        for (; i < n; i++) {
            if (pids[i] != pid)
                continue;
            if ((tids[i] == tid) != (streams[i] == stream)) {
                fprintf(stderr, "fuzz: pid %llu: tid %llu/%llu, stream %llu/%llu\n", pid,
                        tids[i], tid, streams[i], stream);
                abort();
            }
            if (tids[i] == tid)
                break;
        }
        if (i == n && n < MAXS) {
            pids[n] = pid;
            tids[n] = tid;
            streams[n] = stream;
            n++;
        }
    }
    fclose(f);
}

/* Read the file at @p path, remove it, and abort unless it is one valid
 * JSON document. */
static inline void check_trace_file(const char *path)
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
