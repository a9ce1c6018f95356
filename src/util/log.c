/* SPDX-License-Identifier: MIT */
/*
 * The log callback. Messages are formatted into a stack buffer and handed
 * to the callback whole; the callback and level are read with relaxed
 * atomics so act_log() may be called from any thread.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "actrace/log.h"

static void default_log(void *user, act_log_level level, const char *msg)
{
    static const char *const names[] = {"debug", "info", "warning", "error"};
    (void)user;
    fprintf(stderr, "actrace: %s: %s\n", level <= ACT_LOG_ERROR ? names[level] : "?", msg);
}

/* The function pointer and its user pointer are published together. */
typedef struct log_sink {
    act_log_fn fn;
    void *user;
} log_sink;

static log_sink sinks[2] = {{default_log, NULL}, {default_log, NULL}};
static _Atomic int sink_index;
static _Atomic int log_level = -1; /* -1: not yet read from ACTRACE_LOG */

static int level_from_env(void)
{
    const char *e = secure_getenv("ACTRACE_LOG");
    if (!e)
        return ACT_LOG_WARN;
    static const char *const names[] = {"debug", "info", "warn", "error", "off"};
    for (int i = 0; i < 5; i++)
        if (strcasecmp(e, names[i]) == 0)
            return i;
    return ACT_LOG_WARN;
}

void act_log_set(act_log_fn fn, void *user)
{
    /* Double-buffered so a concurrent reader sees a consistent pair. */
    int next = !atomic_load_explicit(&sink_index, memory_order_relaxed);
    sinks[next].fn = fn ? fn : default_log;
    sinks[next].user = fn ? user : NULL;
    atomic_store_explicit(&sink_index, next, memory_order_release);
}

void act_log_set_level(act_log_level level)
{
    atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

void act_log(act_log_level level, const char *fmt, ...)
{
    int min = atomic_load_explicit(&log_level, memory_order_relaxed);
    if (min < 0) {
        min = level_from_env();
        int expected = -1;
        atomic_compare_exchange_strong(&log_level, &expected, min);
        min = atomic_load_explicit(&log_level, memory_order_relaxed);
    }
    if ((int)level < min || level >= ACT_LOG_OFF)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_sink s = sinks[atomic_load_explicit(&sink_index, memory_order_acquire)];
    s.fn(s.user, level, msg);
}
