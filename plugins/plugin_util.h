/* SPDX-License-Identifier: MIT */
/*
 * Small helpers the bundled plugins share, each its own copy (static
 * inline: a plugin is its own shared object and links nothing of
 * libactrace's): a formatted message through the host's log callback, a
 * formatted decline reason into the caller's buffer, and CLOCK_MONOTONIC
 * in nanoseconds, the clock of every timestamp a plugin emits.
 */
#ifndef ACT_PLUGIN_UTIL_H
#define ACT_PLUGIN_UTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "actrace/plugin.h"

/* One message to the host's log (truncated at 2 KiB). */
static inline void plugin_log(const act_plugin_host *host, int32_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline void plugin_log(const act_plugin_host *host, int32_t level, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    host->log(host->ctx, level, msg);
}

/* init's reason for declining, into @p reason (@p cap bytes; none when
 * the host passed no buffer). */
static inline void plugin_set_reason(char *reason, uint32_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline void plugin_set_reason(char *reason, uint32_t cap, const char *fmt, ...)
{
    if (!reason || !cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, cap, fmt, ap);
    va_end(ap);
}

static inline int64_t plugin_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif
