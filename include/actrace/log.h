/* SPDX-License-Identifier: MIT */
/*
 * The one place actrace reports warnings and diagnostics. By default
 * messages at ACT_LOG_WARN and above go to stderr prefixed with "actrace: ".
 * An application may route them elsewhere with act_log_set().
 */
#ifndef ACTRACE_LOG_H
#define ACTRACE_LOG_H

#include "actrace/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum act_log_level {
    ACT_LOG_DEBUG = 0,
    ACT_LOG_INFO = 1,
    ACT_LOG_WARN = 2,
    ACT_LOG_ERROR = 3,
    ACT_LOG_OFF = 4
} act_log_level;

/** Receives one complete message (no trailing newline). */
typedef void (*act_log_fn)(void *user, act_log_level level, const char *msg);

/**
 * Replace the log callback; NULL restores the default (stderr).
 * @p user is passed back unchanged and must outlive its use.
 * Thread-safe; a message being delivered concurrently may still reach the
 * previous callback.
 */
ACT_API void act_log_set(act_log_fn fn, void *user);

/**
 * The current callback and its @p user (the default's, which prints to
 * stderr, when none was set): a component that must see messages for a
 * while (the torch.profiler bridge) forwards to it rather than replace an
 * application's callback for good. Appended after ABI 0.3.
 */
ACT_API void act_log_get(act_log_fn *fn, void **user);

/** Messages below @p level are discarded (default ACT_LOG_WARN; the
 *  environment variable ACTRACE_LOG=debug|info|warn|error|off overrides the
 *  default at first use). */
ACT_API void act_log_set_level(act_log_level level);

/** Deliver a message through the current callback (printf-style). */
ACT_API void act_log(act_log_level level, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif /* ACTRACE_LOG_H */
