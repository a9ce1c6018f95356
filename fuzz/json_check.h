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


/* Walk the object at v->p (one member level, values skipped with value())
 * and note where the value of each key in @p keys begins (NULL when
 * absent). Keys are compared as written, quotes included: the writer spells
 * its own keys plainly. 1 if the object is well formed. */
static int obj_find(jv *v, const char *const *keys, const char **vals, int nkeys)
{
    for (int i = 0; i < nkeys; i++)
        vals[i] = NULL;
    ws(v);
    if (v->p >= v->end || *v->p != '{')
        return 0;
    v->p++;
    ws(v);
    if (v->p < v->end && *v->p == '}') {
        v->p++;
        return 1;
    }
    for (;;) {
        ws(v);
        const char *k = v->p;
        if (!string(v))
            return 0;
        size_t kl = (size_t)(v->p - k);
        ws(v);
        if (v->p >= v->end || *v->p++ != ':')
            return 0;
        ws(v);
        for (int i = 0; i < nkeys; i++)
            if (strlen(keys[i]) == kl && memcmp(keys[i], k, kl) == 0)
                vals[i] = v->p;
        if (!value(v))
            return 0;
        ws(v);
        if (v->p >= v->end)
            return 0;
        char c = *v->p++;
        if (c == '}')
            return 1;
        if (c != ',')
            return 0;
    }
}

/* What a trace must hold beyond valid JSON: no negative ts or dur, and no
 * ts a double cannot hold to the nanosecond (timestamps far from the
 * session are refused, so the writer's arithmetic cannot wrap), and on
 * device processes one track per 64-bit stream id: a tid never carries two
 * streams, a stream never two tids. The writer puts one event on a line;
 * each line is parsed, so a name or an arg key that spells "ts":- inside a
 * string is not taken for a field (a substring search once was: fuzz_trace
 * found it in CI). */
static inline void check_trace_lines(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        abort();
    enum { MAXS = 4096 };
    static unsigned long long pids[MAXS], tids[MAXS], streams[MAXS];
    size_t n = 0;
    static char line[1 << 16];
    static const char *const top[] = {"\"ts\"", "\"dur\"", "\"pid\"", "\"tid\"", "\"args\""};
    static const char *const inargs[] = {"\"stream\""};
    while (fgets(line, sizeof line, f)) {
        const char *val[5], *sval[1] = {NULL};
        jv v = {line, line + strlen(line), 0};
        if (!obj_find(&v, top, val, 5))
            continue; /* the header or footer, not an event */
        const char *ts = val[0], *dur = val[1], *pid_s = val[2], *tid_s = val[3];
        if ((ts && *ts == '-') || (dur && *dur == '-')) {
            fprintf(stderr, "fuzz: negative ts or dur: %.200s\n", line);
            abort();
        }
        /* Every ts within 2^53 ns of the base: exact to the ns as a double. */
        if (ts && strtod(ts, NULL) * 1000.0 >= 9007199254740992.0) {
            fprintf(stderr, "fuzz: ts beyond double precision: %.200s\n", line);
            abort();
        }
        if (val[4] && *val[4] == '{') {
            jv a = {val[4], line + strlen(line), 0};
            if (!obj_find(&a, inargs, sval, 1))
                abort(); /* value() accepted it a moment ago */
        }
        if (!pid_s || !tid_s || !sval[0])
            continue;
        unsigned long long pid = strtoull(pid_s, NULL, 10), tid = strtoull(tid_s, NULL, 10),
                           stream = strtoull(sval[0], NULL, 10);
        if (pid < 0x40000000u)
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
