/* SPDX-License-Identifier: MIT */
/*
 * The session layer: what drives a session, above the recording engine
 * (src/engine), the plugin loader (src/plugin) and the trace writers
 * (src/writer), which it uses and which never include it
 * (tests/layering/check_layering.sh). lifecycle.c: act_session_create
 * and destroy with their plugins, start, the collection window, act_step,
 * stop, write. autostart.c: the auto-started session of `actrace record`.
 * rebuild.c (rebuild.h): a dead process's trace from its spool. On-demand
 * tracing (src/ondemand) is a client above it: it starts sessions, opens
 * and closes their windows, and is reached from here only through
 * act__step_hook, never by name.
 */
#ifndef ACT_SESSION_SESSION_H
#define ACT_SESSION_SESSION_H

#include <stddef.h>

#include "engine/engine.h"

/* Window control (lifecycle.c): open an ARMED session's window (its
 * plugins start), close a COLLECTING one's (they stop and flush). */
void act__session_open_window(act_session *s);
void act__session_close_window(act_session *s);

/* Called first by every act_step() when set (NULL: nothing): a client
 * above the session that counts steps (on-demand's iteration windows)
 * installs it once, at load, before the program's threads run. */
extern void (*_Atomic act__step_hook)(void);

void act__session_seterr(act_session *s, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Lazy start (autostart.c, engine.h): start the real session of a process
 * under `actrace record` that has not recorded yet, once, and return it;
 * NULL when there is none. The engine reaches it through act__wake_hook. */
act_session *act__auto_wake(void);

#endif /* ACT_SESSION_SESSION_H */
