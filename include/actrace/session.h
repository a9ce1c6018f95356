/* SPDX-License-Identifier: MIT */
/*
 * Sessions: one collection of activity from start to stop, written to a
 * trace file. Lifecycle (DESIGN.md section 4):
 *
 *   act_session_create -> act_session_start -> [warmup] -> collect
 *     -> act_session_stop -> act_session_write -> act_session_destroy
 *
 * One session is active per process; the recording calls of record.h go to
 * it. The active session is set by act_session_start() and cleared by
 * act_session_stop(). A session may not be restarted after it stopped.
 *
 * Thread-safety: create/start/stop/write/destroy are serialised per session
 * by the caller; recording calls may race with them from any thread (a call
 * racing with stop is either recorded or not attempted, never half-done).
 */
#ifndef ACTRACE_SESSION_H
#define ACTRACE_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "actrace/config.h"
#include "actrace/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct act_session act_session;

/** Options for act_session_create(). May grow: initialise with
 *  act_session_opts_init(). NULL means defaults (config from
 *  act_config_load_env()). */
typedef struct act_session_opts {
    uint32_t struct_size;
    uint32_t reserved;
    /** Borrowed for the call: the session takes a copy. NULL: load the
     *  config from the environment (act_config_load_env). */
    const act_config *config;
    /** Config text layered on top of @c config (or of the environment's
     *  config when @c config is NULL). NULL: none. */
    const char *config_text;
    size_t config_text_len;
    /** Extra plugins to load, in addition to the config's PLUGINS. */
    const char *const *plugins;
    size_t plugin_count;
    /** Trace name written as "traceName"; NULL: the output file's name. */
    const char *trace_name;
    /* end of ABI 0.1 */
} act_session_opts;

/** Zero @p o and set its struct_size. */
ACT_API void act_session_opts_init(act_session_opts *o);

/**
 * Create a session (not started). Loads the configured plugins; a plugin
 * that is refused is reported through the log and never stops the session.
 * @return 0, ACT_EINVAL (bad options; the config error is in the log),
 *         ACT_ENOMEM.
 */
ACT_API int act_session_create(const act_session_opts *opts,
                               act_session **out);

/**
 * Make the session the process's active one and start collecting (after
 * the configured warmup). @return 0, ACT_EBUSY if another session is
 * active, ACT_ESTATE if this one was already started.
 */
ACT_API int act_session_start(act_session *s);

/**
 * Stop collecting: plugins are stopped and flushed, the session is no
 * longer active. @return 0, or ACT_ESTATE if it was not started.
 */
ACT_API int act_session_stop(act_session *s);

/**
 * Write the trace to @p path (Chrome Trace Event JSON; gzip-compressed if
 * the path ends in ".gz"). Stops the session first if it is running.
 * The file appears under its name only when complete; on failure nothing
 * is left under @p path and act_session_errmsg() names the path and cause.
 * The recorded data stay in the session, so a failed write can be retried.
 * @return 0, ACT_EIO, ACT_ENOSPC, ACT_ENOTSUP (.gz without zlib).
 */
ACT_API int act_session_write(act_session *s, const char *path);

/** Free the session (stopping it if needed). NULL does nothing. */
ACT_API void act_session_destroy(act_session *s);

/** Last detailed error message of the session; "" if none. Library-owned,
 *  valid until the next call on the session. */
ACT_API const char *act_session_errmsg(const act_session *s);

/** The session's effective config (owned by the session). */
ACT_API const act_config *act_session_config(const act_session *s);

/** The process's active session, or NULL. */
ACT_API act_session *act_session_active(void);

/** Totals so far (all threads, all types). Safe while recording; exact
 *  once the session stopped. */
typedef struct act_session_stats {
    uint32_t struct_size;
    uint32_t reserved;
    uint64_t recorded; /**< events (and counter samples) kept, args not included */
    uint64_t dropped;  /**< events lost to the buffer limit or misuse */
    uint64_t bytes;    /**< buffer memory held */
    /* end of ABI 0.1 */
    uint64_t args_recorded; /**< args kept (each with its event) */
    uint64_t args_dropped;  /**< args lost: with their event, or with none before them */
    /* end of ABI 0.2 */
    /** Appended after ABI 0.3: buffer bytes written out of RAM and dropped
     *  from it, kept on disk for the writer (under `actrace record` the
     *  process's spool; in a program's own session the SPILL_DIR file) */
    uint64_t spilled;
} act_session_stats;

/** Fill @p out (set out->struct_size first, or zero it). */
ACT_API int act_session_get_stats(const act_session *s,
                                  act_session_stats *out);

/**
 * Mark the end of one iteration (training step) for the iteration-driven
 * windows of the active session (ACTIVITIES_WARMUP_ITERATIONS,
 * ACTIVITIES_ITERATIONS, PROFILE_START_ITERATION). No-op without one.
 */
ACT_API void act_step(void);

/*
 * Windows on the active session (appended after ABI 0.3). A consumer that
 * wants a slice of activity while another owner's session is active (the
 * torch.profiler bridge under `actrace record`) does not start a session of
 * its own (that fails with ACT_EBUSY): it opens a window on the active one
 * and, at its end, visits the events recorded between open and close, from
 * the same buffers and the same plugins. The owner's session is unchanged:
 * its trace keeps everything.
 *
 *   act_window_open -> [work] -> act_window_close -> act_window_visit
 *     -> act_window_free
 *
 * act_window_visit (actrace/visit.h) must run while the session the window
 * was opened on is still the active one (before its owner stops it); it
 * returns ACT_ESTATE otherwise. One window is used by one thread at a
 * time; any number of windows may be open at once.
 */
typedef struct act_window act_window;

/**
 * Open a window on the process's active session, starting now.
 * @return 0; ACT_EINVAL (NULL @p out); ACT_ESTATE (no active session);
 *         ACT_ENOMEM.
 */
ACT_API int act_window_open(act_window **out);

/** End the window now. @return 0; ACT_EINVAL (NULL); ACT_ESTATE (already
 *  closed). */
ACT_API int act_window_close(act_window *w);

/** The window's start and end, monotonic ns (CLOCK_MONOTONIC, the clock of
 *  act_visit_event's times); end is 0 while it is open. NULL: nothing. */
ACT_API void act_window_bounds(const act_window *w, int64_t *start_ns, int64_t *end_ns);

/** Free the window. NULL does nothing. The session is not touched. */
ACT_API void act_window_free(act_window *w);

#ifdef __cplusplus
}
#endif
#endif /* ACTRACE_SESSION_H */
