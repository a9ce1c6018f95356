/* SPDX-License-Identifier: MIT */
/*
 * Helpers for tests that write a trace and read it back with a real JSON
 * parser (jansson): load, find events, make a session from config text.
 */
#ifndef ACT_TESTS_TRACE_UTIL_H
#define ACT_TESTS_TRACE_UTIL_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "actrace/actrace.h"

/* A session from config text, started. Exits the test on failure. */
static inline act_session *tu_session(const char *config_text)
{
    act_session_opts o;
    act_session_opts_init(&o);
    o.config_text = config_text;
    o.config_text_len = config_text ? strlen(config_text) : 0;
    act_session *s = NULL;
    int rc = act_session_create(&o, &s);
    if (rc != 0) {
        fprintf(stderr, "act_session_create: %s\n", act_strerror(rc));
        exit(1);
    }
    rc = act_session_start(s);
    if (rc != 0) {
        fprintf(stderr, "act_session_start: %s\n", act_strerror(rc));
        exit(1);
    }
    return s;
}

/* Path for a trace that CI validates with the real viewers:
 * <build>/traces/<name>. */
static inline const char *tu_trace_path(const char *name)
{
    static char path[4096];
    mkdir(ACT_BINARY_DIR "/traces", 0755);
    snprintf(path, sizeof path, "%s/traces/%s", ACT_BINARY_DIR, name);
    return path;
}

/* Load and strictly parse a trace; exits on a parse error. */
static inline json_t *tu_load(const char *path)
{
    json_error_t err;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
    if (!root) {
        fprintf(stderr, "%s:%d:%d: invalid JSON: %s\n", path, err.line, err.column, err.text);
        exit(1);
    }
    return root;
}

static inline json_t *tu_events(json_t *root)
{
    return json_object_get(root, "traceEvents");
}

/* The first event with phase @p ph and name @p name (NULL: any). */
static inline json_t *tu_find(json_t *root, const char *ph, const char *name)
{
    json_t *evs = tu_events(root), *e;
    size_t i;
    json_array_foreach(evs, i, e) {
        const char *p = json_string_value(json_object_get(e, "ph"));
        const char *n = json_string_value(json_object_get(e, "name"));
        if (p && strcmp(p, ph) == 0 && (!name || (n && strcmp(n, name) == 0)))
            return e;
    }
    return NULL;
}

static inline size_t tu_count(json_t *root, const char *ph, const char *name)
{
    json_t *evs = tu_events(root), *e;
    size_t i, n = 0;
    json_array_foreach(evs, i, e) {
        const char *p = json_string_value(json_object_get(e, "ph"));
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (p && strcmp(p, ph) == 0 && (!name || (nm && strcmp(nm, name) == 0)))
            n++;
    }
    return n;
}

static inline long long tu_int(json_t *obj, const char *key)
{
    return json_integer_value(json_object_get(obj, key));
}

static inline double tu_num(json_t *obj, const char *key)
{
    return json_number_value(json_object_get(obj, key));
}

static inline json_t *tu_stats(json_t *root)
{
    return json_object_get(root, "actraceStats");
}

/* Read a whole file (NUL-terminated); NULL on error. */
static inline char *tu_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = (size_t)n;
    }
    return buf;
}

#endif
