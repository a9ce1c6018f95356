/* SPDX-License-Identifier: MIT */
/*
 * The auto-started session behind `actrace record`: how a process that
 * loads libactrace through LD_PRELOAD decides where and when it writes.
 *
 * Where. Under `actrace record`, ACTRACE_RECORD_DIR names a private
 * directory (0700) that record created. Every process that loads the
 * library checks it once (an absolute path, a directory owned by its euid,
 * mode 0700; spool.c) and from then on reaches it only through a
 * descriptor, never by its path: a process that outlives record, whose
 * directory was removed or is not the one it checked, stops recording and
 * says so. It records on its own and writes DIR/<pid>-<ns>.json (the clock
 * part keeps a reused pid from replacing an earlier file): the program,
 * its forked children (with or without exec), exec'd images and
 * grandchildren. The variables are never removed, so wrappers (env, nice,
 * sh -c, launcher scripts) pass them on. record merges the files.
 * Without the directory, ACTRACE_RECORD_OUTPUT names one trace file (a
 * "%pid%" in it is replaced by the pid); that variable is removed at once
 * so that the program's children do not write over the same file.
 *
 * Fork. A forked child's copy of the parent's session holds the parent's
 * events: the child abandons it (it is the parent's to write) and, in the
 * directory mode, starts a session of its own from the fork on, writing
 * its own file. In the single-file mode the child records nothing.
 *
 * When. At exit (atexit). The library installs no signal handler: a
 * program sees the dispositions it would see untraced (CPython installs
 * its SIGINT handler, KeyboardInterrupt, only where it finds the default
 * action; a program may chain to what it finds). A process that a signal
 * ends writes nothing itself: in the directory mode its spool keeps what
 * it recorded and record rebuilds the trace (below); in the single-file
 * mode it is lost.
 *
 * Otherwise. In the directory mode each process also spools (spool.h):
 * its chunk memory is DIR/<pid>-<ns>.spool and the rest is logged in
 * DIR/<pid>-<ns>.meta. A process that writes its trace removes both; one
 * that ends by _exit, abort, a crash, SIGKILL or exec leaves them, and
 * record rebuilds its trace from them.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/spool.h"

static act_session *auto_session;
static char *auto_path;
static char *auto_dir; /* ACTRACE_RECORD_DIR, or NULL in single-file mode */
static int auto_written;
static pthread_mutex_t auto_lock = PTHREAD_MUTEX_INITIALIZER;
/* The process's command line, arguments joined by spaces, as its name in
 * the merged trace when the program named none. */
static void auto_name_process(void)
{
    /* act__process_name falls back to /proc/self/comm: a name equal to it
     * was not given by the program. */
    char cur[64], comm[64] = "";
    const char *set = act__process_name(cur, sizeof cur);
    int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, comm, sizeof comm - 1);
        close(fd);
        comm[n > 0 ? n : 0] = '\0';
        char *nl = strchr(comm, '\n');
        if (nl)
            *nl = '\0';
    }
    if (set && strcmp(set, comm) != 0)
        return;
    fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[256];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    buf[n] = '\0';
    act_process_name(buf);
}

/* Where the trace goes: the path, or (directory mode) the file in the
 * checked directory, through its descriptor (/proc/self/fd/N/NAME); NULL
 * when the directory is gone (said by act__spool_dir_check). */
static const char *auto_target(char *buf, size_t cap)
{
    if (!auto_dir)
        return auto_path;
    int dfd = act__spool_dir_check();
    if (dfd < 0)
        return NULL;
    snprintf(buf, cap, "/proc/self/fd/%d/%s", dfd, auto_path);
    return buf;
}

static void auto_write(void)
{
    pthread_mutex_lock(&auto_lock);
    if (auto_session && !auto_written) {
        auto_written = 1;
        if (auto_dir)
            auto_name_process();
        char buf[128];
        const char *target = auto_target(buf, sizeof buf);
        if (!target) {
            pthread_mutex_unlock(&auto_lock);
            return;
        }
        act__xfsz_guard g;
        act__xfsz_block(&g);
        int rc = act_session_write(auto_session, target);
        act__xfsz_unblock(&g);
        if (rc != 0)
            act_log(ACT_LOG_ERROR, "cannot write the trace: %s%s",
                    act_session_errmsg(auto_session),
                    act__spooling ? " (record rebuilds it from the spool)" : "");
        else
            act__spool_remove(); /* written: the spool is not needed */
    }
    pthread_mutex_unlock(&auto_lock);
}

static void auto_at_exit(void)
{
    auto_write();
    /* The session is left for the process teardown: other exit handlers
     * or threads may still call into the library. */
}

/* <pid>-<ns>.json, a name in the record directory. */
static char *auto_dir_path(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char *p = malloc(64);
    if (p)
        snprintf(p, 64, "%d-%lld%09ld.json", (int)getpid(), (long long)ts.tv_sec, ts.tv_nsec);
    return p;
}

static int auto_session_start(void)
{
    /* A process `actrace record` started itself has record as its parent
     * (ACTRACE_RECORD_PARENT); any other is a descendant: a small
     * pre-allocation (act__prealloc_small). */
    const char *parent = secure_getenv("ACTRACE_RECORD_PARENT");
    if (auto_dir && parent && *parent && atol(parent) != (long)getppid())
        act__prealloc_small = 1;
    if (auto_dir) {
        /* The spool: BASE = the trace's path without ".json". */
        size_t n = strlen(auto_path);
        char *base = n > 5 ? strndup(auto_path, n - 5) : NULL;
        if (!base || act__spool_open(base) != 0)
            act_log(ACT_LOG_WARN, "cannot create the spool %s/%s.spool: %s; if this process "
                    "does not exit normally, its events are lost", auto_dir,
                    base ? base : auto_path, strerror(errno));
        free(base);
        if (act__spooling)
            auto_name_process(); /* logged: a rebuilt trace has the name too */
    }
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
        act__spool_remove();
        return rc;
    }
    return 0;
}

/* Runs in the child after the engine's own fork handler (registered
 * earlier) cleared the recording state. */
static void auto_atfork_child(void)
{
    /* The inherited session is the parent's: leave it alone (its memory is
     * only this process's copy, or the parent's spool, which this process
     * never writes, and is released at exit). */
    act__spool_atfork_child();
    auto_session = NULL;
    free(auto_path);
    auto_path = NULL;
    auto_written = 0;
    pthread_mutex_init(&auto_lock, NULL);
    if (!auto_dir)
        return; /* single-file mode: the child records nothing */
    auto_path = auto_dir_path();
    if (!auto_path)
        return;
    if (act__spool_dir_check() < 0)
        return; /* the directory is gone: said once */
    auto_session_start();
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((constructor))
#endif
static void auto_start(void)
{
    const char *dir = secure_getenv("ACTRACE_RECORD_DIR");
    const char *out = secure_getenv("ACTRACE_RECORD_OUTPUT");
    if (dir && *dir) {
        if (act__spool_dir_open(dir) != 0)
            return; /* said why: not recording */
        auto_dir = strdup(dir);
        if (!auto_dir)
            return;
        auto_path = auto_dir_path();
    } else if (out && *out) {
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
    } else {
        return;
    }
    if (!auto_path)
        return;
    if (auto_session_start() != 0)
        return;
    act__atfork_install(); /* the engine's fork handler runs first */
    pthread_atfork(NULL, NULL, auto_atfork_child);
    atexit(auto_at_exit);
}
