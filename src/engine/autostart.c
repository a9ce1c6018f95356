/* SPDX-License-Identifier: MIT */
/*
 * The auto-started session behind `actrace record`: the command runs the
 * program with libactrace preloaded and ACTRACE_RECORD_OUTPUT naming the
 * trace file. At load, the library starts a session with the environment's
 * config (ACTRACE_CONFIG, ACTRACE_PLUGINS); at exit, or on SIGINT, SIGTERM
 * or SIGHUP, it writes the trace. The variable is removed at once so that
 * the program's own child processes do not record over the same file.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"

static act_session *auto_session;
static char *auto_path;
static volatile sig_atomic_t auto_written;

static void auto_write(void)
{
    if (!auto_session || auto_written)
        return;
    auto_written = 1;
    int rc = act_session_write(auto_session, auto_path);
    if (rc != 0)
        act_log(ACT_LOG_ERROR, "cannot write the trace: %s", act_session_errmsg(auto_session));
}

static void auto_at_exit(void)
{
    auto_write();
    /* The session is left for the process teardown: other exit handlers
     * or threads may still call into the library. */
}

/* Writing from a signal handler is not async-signal-safe; it is the best a
 * tracer can do for a program stopped with Ctrl-C, and the handler then
 * re-raises the signal with its default action so the exit status is the
 * one the program would have had. */
static void auto_on_signal(int sig)
{
    auto_write();
    signal(sig, SIG_DFL);
    raise(sig);
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((constructor))
#endif
static void auto_start(void)
{
    const char *out = secure_getenv("ACTRACE_RECORD_OUTPUT");
    if (!out || !*out)
        return;
    /* Kineto's placeholder: ACTIVITIES_LOG_FILE = /tmp/trace_%pid%.json. */
    const char *at = strstr(out, "%pid%");
    if (at) {
        char pid[24];
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        size_t n = strlen(out) - 5 + strlen(pid) + 1;
        auto_path = malloc(n);
        if (auto_path)
            snprintf(auto_path, n, "%.*s%s%s", (int)(at - out), out, pid, at + 5);
    } else {
        auto_path = strdup(out);
    }
    unsetenv("ACTRACE_RECORD_OUTPUT");
    if (!auto_path)
        return;
    act_session_opts o;
    act_session_opts_init(&o);
    const char *name = secure_getenv("ACTRACE_RECORD_NAME");
    o.trace_name = name && *name ? name : NULL;
    int rc = act_session_create(&o, &auto_session);
    if (rc == 0)
        rc = act_session_start(auto_session);
    if (rc != 0) {
        act_log(ACT_LOG_ERROR, "cannot start recording: %s", act_strerror(rc));
        act_session_destroy(auto_session);
        auto_session = NULL;
        return;
    }
    atexit(auto_at_exit);
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < ACT_ARRAY_SIZE(sigs); i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = auto_on_signal;
            sigemptyset(&sa.sa_mask);
            sigaction(sigs[i], &sa, NULL);
        }
    }
}
