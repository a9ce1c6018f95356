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

/* The function pointer and its user pointer are published together under
 * a sequence lock: a setter makes the sequence odd, stores the pair, and
 * makes it even again; a reader retries until it read the pair under one
 * even sequence. (A double buffer tore when two act_log_set calls
 * overtook a reader.) Lock-free for readers, so act_log stays usable in
 * a forked child. */
static _Atomic(act_log_fn) sink_fn = default_log;
static _Atomic(void *) sink_user;
static _Atomic unsigned sink_seq;
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
    unsigned seq = atomic_load_explicit(&sink_seq, memory_order_relaxed);
    for (;;) {
        seq &= ~1u; /* wait for another setter to finish */
        if (atomic_compare_exchange_weak_explicit(&sink_seq, &seq, seq + 1,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    }
    /* Release on the data: a reader that sees either new value also sees
     * the odd sequence (no fences: TSan does not model them). */
    atomic_store_explicit(&sink_fn, fn ? fn : default_log, memory_order_release);
    atomic_store_explicit(&sink_user, fn ? user : NULL, memory_order_release);
    atomic_store_explicit(&sink_seq, seq + 2, memory_order_release);
}

/* The current pair, read consistently. A reader that keeps finding a
 * setter at work (a signal handler logging while its own thread is inside
 * act_log_set) falls back to the default sink rather than spin forever. */
static void sink_read(act_log_fn *fn, void **user)
{
    for (int tries = 0; tries < 100000; tries++) {
        unsigned s1 = atomic_load_explicit(&sink_seq, memory_order_acquire);
        if (s1 & 1)
            continue;
        *fn = atomic_load_explicit(&sink_fn, memory_order_acquire);
        *user = atomic_load_explicit(&sink_user, memory_order_acquire);
        if (atomic_load_explicit(&sink_seq, memory_order_relaxed) == s1)
            return;
    }
    *fn = default_log;
    *user = NULL;
}

void act_log_get(act_log_fn *fn, void **user)
{
    act_log_fn f;
    void *u;
    sink_read(&f, &u);
    if (fn)
        *fn = f;
    if (user)
        *user = u;
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
    act_log_fn fn;
    void *user;
    sink_read(&fn, &user);
    fn(user, level, msg);
}
