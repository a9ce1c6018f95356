/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the plugin tests: capture the log, run a session with
 * a list of plugins, and look things up in the written trace (jansson).
 * Header-only: each test executable includes it once, after check.h.
 */
#ifndef ACT_TESTS_PLUGIN_UTIL_H
#define ACT_TESTS_PLUGIN_UTIL_H

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <actrace/actrace.h>
#include <jansson.h>

#ifndef ACT_TRACE_DIR
#define ACT_TRACE_DIR ACT_BINARY_DIR "/traces"
#endif
#define TP_DIR ACT_BINARY_DIR "/tests/plugin/plugins"

/* ---- log capture ---------------------------------------------------- */

static char log_buf[1 << 16];
static size_t log_len;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_capture(void *user, act_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    pthread_mutex_lock(&log_lock);
    int n = snprintf(log_buf + log_len, sizeof log_buf - log_len, "%s\n", msg);
    if (n > 0 && log_len + (size_t)n < sizeof log_buf)
        log_len += (size_t)n;
    pthread_mutex_unlock(&log_lock);
    if (getenv("TP_VERBOSE"))
        fprintf(stderr, "log: %s\n", msg);
}

static void log_reset(void)
{
    pthread_mutex_lock(&log_lock);
    log_len = 0;
    log_buf[0] = '\0';
    pthread_mutex_unlock(&log_lock);
}

static void log_start(void)
{
    act_log_set(log_capture, NULL);
    act_log_set_level(ACT_LOG_DEBUG);
    log_reset();
}

/* Number of log lines containing every one of up to three needles. */
static int log_count(const char *a, const char *b, const char *c)
{
    int n = 0;
    const char *p = log_buf;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char line[2048];
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        if ((!a || strstr(line, a)) && (!b || strstr(line, b)) &&
            (!c || strstr(line, c)))
            n++;
        p += len;
        if (*p)
            p++;
    }
    return n;
}

/* ---- sessions ------------------------------------------------------- */

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Create, start, run @p body (may be NULL) or sleep 2 ms, stop, write to
 * @p trace (may be NULL), destroy. Returns act_session_write's code. */
static int run_session(const char *const *plugins, size_t n,
                       const char *config, const char *trace,
                       void (*body)(void))
{
    act_session_opts o;
    act_session_opts_init(&o);
    o.plugins = plugins;
    o.plugin_count = n;
    if (config) {
        o.config_text = config;
        o.config_text_len = strlen(config);
    }
    act_session *s = NULL;
    int rc = act_session_create(&o, &s);
    if (rc != 0) {
        fprintf(stderr, "act_session_create: %s\n", act_strerror(rc));
        return rc;
    }
    rc = act_session_start(s);
    if (rc == 0) {
        if (body)
            body();
        else
            sleep_ms(2);
        rc = act_session_stop(s);
    }
    if (rc == 0 && trace) {
        mkdir(ACT_TRACE_DIR, 0755);
        rc = act_session_write(s, trace);
        if (rc)
            fprintf(stderr, "write %s: %s (%s)\n", trace, act_strerror(rc),
                    act_session_errmsg(s));
    }
    act_session_destroy(s);
    return rc;
}

/* ---- the trace -------------------------------------------------------- */

static json_t *trace_load(const char *path)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root)
        fprintf(stderr, "%s:%d:%d: %s\n", path, err.line, err.column,
                err.text);
    return root;
}

static json_t *trace_events(json_t *root)
{
    return json_object_get(root, "traceEvents");
}

static const char *ev_str(json_t *ev, const char *key)
{
    return json_string_value(json_object_get(ev, key));
}

static json_int_t ev_int(json_t *ev, const char *key)
{
    return json_integer_value(json_object_get(ev, key));
}

/* The first event with phase @p ph and name @p name (NULL: any). */
static json_t *trace_find(json_t *root, const char *ph, const char *name)
{
    size_t i;
    json_t *ev;
    json_array_foreach(trace_events(root), i, ev) {
        const char *p = ev_str(ev, "ph"), *n = ev_str(ev, "name");
        if (p && strcmp(p, ph) == 0 && (!name || (n && strcmp(n, name) == 0)))
            return ev;
    }
    return NULL;
}

static int trace_count(json_t *root, const char *ph, const char *name)
{
    int c = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(trace_events(root), i, ev) {
        const char *p = ev_str(ev, "ph"), *n = ev_str(ev, "name");
        if (p && strcmp(p, ph) == 0 && (!name || (n && strcmp(n, name) == 0)))
            c++;
    }
    return c;
}

/* pid of the process whose process_name metadata contains @p needle;
 * -1 if none. */
static json_int_t trace_process(json_t *root, const char *needle)
{
    size_t i;
    json_t *ev;
    json_array_foreach(trace_events(root), i, ev) {
        const char *p = ev_str(ev, "ph"), *n = ev_str(ev, "name");
        if (!p || strcmp(p, "M") || !n || strcmp(n, "process_name"))
            continue;
        const char *v = json_string_value(
            json_object_get(json_object_get(ev, "args"), "name"));
        if (v && strstr(v, needle))
            return ev_int(ev, "pid");
    }
    return -1;
}

/* tid of the thread named @p name in process @p pid; -1 if none. */
static json_int_t trace_thread(json_t *root, json_int_t pid, const char *name)
{
    size_t i;
    json_t *ev;
    json_array_foreach(trace_events(root), i, ev) {
        const char *p = ev_str(ev, "ph"), *n = ev_str(ev, "name");
        if (!p || strcmp(p, "M") || !n || strcmp(n, "thread_name") ||
            ev_int(ev, "pid") != pid)
            continue;
        const char *v = json_string_value(
            json_object_get(json_object_get(ev, "args"), "name"));
        if (v && strcmp(v, name) == 0)
            return ev_int(ev, "tid");
    }
    return -1;
}

/* 1 if a flow start ("s") sits on @p from's pid/tid and a flow end ("f")
 * with the same id on @p to's pid/tid. */
static int trace_has_flow(json_t *root, json_t *from, json_t *to)
{
    size_t i, j;
    json_t *s, *f;
    json_array_foreach(trace_events(root), i, s) {
        const char *p = ev_str(s, "ph");
        if (!p || strcmp(p, "s") || ev_int(s, "pid") != ev_int(from, "pid") ||
            ev_int(s, "tid") != ev_int(from, "tid"))
            continue;
        json_array_foreach(trace_events(root), j, f) {
            const char *q = ev_str(f, "ph");
            if (q && strcmp(q, "f") == 0 &&
                json_equal(json_object_get(f, "id"), json_object_get(s, "id")) &&
                ev_int(f, "pid") == ev_int(to, "pid") &&
                ev_int(f, "tid") == ev_int(to, "tid"))
                return 1;
        }
    }
    return 0;
}

#endif /* ACT_TESTS_PLUGIN_UTIL_H */
