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
 * Lazily. In the directory mode a process that record did not start
 * itself (a descendant: a forked child, or any image below record's own
 * child) starts no session at load: it writes one small log, BASE.meta
 * (its pid, parent, clocks, process start and command line, in one
 * write), and points act__recording at a stand-in session (engine.h), so
 * that its first recording call, act_session_active, a session of its
 * own, or a plugin whose runtime shows up (the NVTX injection, the OpenCL
 * layer, a plugin's fork handler in a child of a process that used it)
 * starts the real session, spool and plugins then (act__auto_wake). A
 * process that never records creates no thread, no spool and no plugin
 * instance: at exit it appends its end, exit status and CPU use to the
 * log, and record turns the log into the process's trace, as it does for
 * a spool (not marked rebuilt: nothing was lost). One that dies leaves
 * the log without the end: rebuilt, as for any spool. record's own child
 * starts at once: its plugins' init sets what their runtimes read
 * (OPENCL_LAYERS, NVTX_INJECTION64_PATH) for every descendant; where a
 * plugin it loaded cannot start lazily (no runtime hook, as cupti), it
 * sets ACTRACE_RECORD_EAGER=1 and every descendant starts at once too.
 *
 * Otherwise. In the directory mode each process also spools (spool.h):
 * its chunk memory is DIR/<pid>-<ns>.spool and the rest is logged in
 * DIR/<pid>-<ns>.meta. A process that writes its trace removes both; one
 * that ends by _exit, abort, a crash, SIGKILL or exec leaves them, and
 * record rebuilds its trace from them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/spool.h"
#include "plugin/loader.h"
#include "session/session.h"

/* The variables auto_start reads (act__env_scan). */
enum { ENV_DIR, ENV_OUTPUT, ENV_EAGER, ENV_PARENT, ENV_NAME, ENV_HOST, ENV_COUNT };

static act_session *auto_session;
static char *auto_path;
static char *auto_dir; /* ACTRACE_RECORD_DIR, or NULL in single-file mode */
/* Directory mode's auto_path and auto_dir live here, not on the heap: a
 * process that records nothing never calls malloc. */
static char auto_path_buf[80];
static char auto_dir_buf[PATH_MAX];
static int auto_written;
static pthread_mutex_t auto_lock = PTHREAD_MUTEX_INITIALIZER;
/* Lazy start: act__recording points at the stand-in while auto_pending;
 * auto_waker is the thread (tid) inside the start, whose own nested
 * recording calls (plugin init) are dropped rather than wait for it. */
static act_session lazy_standin = {.gen = UINT64_MAX, .tick_gen = UINT64_MAX, .lazy = 1};
static atomic_int auto_pending;
static atomic_int auto_waker;
static int auto_lazy_logged; /* a light spool exists (BASE.meta) */
/* The light log samples memory (/proc/self/statm at start and at exit,
 * 10-15 us in all in a new process, whose /proc entry is made then, a
 * quarter of what the library costs it): unless the
 * process record started itself loaded plugins and no host plugin among
 * them (ACTRACE_RECORD_HOST=0), since the samples stand for that
 * plugin's. */
static int auto_lazy_rss = 1;
static atomic_int auto_child_eager; /* a forked child to start after the fork handlers */
static int auto_session_start(void);
static void auto_late_register(void);
static void auto_lazy_exit(int status);
/* The arguments the library's constructor was called with (glibc passes
 * main's argc and argv to every ELF constructor, a preloaded or dlopen'd
 * library's too): at load they are what /proc/self/cmdline holds, read
 * without a /proc open (about 10-20 us in a new process: its /proc entry
 * is made on first use). NULL where not known. */
static int auto_argc;
static char **auto_argv;

/* @p n raw bytes of a command line (arguments each ended by a NUL, as
 * /proc/self/cmdline holds them) in @p buf, joined by spaces, NUL-ended:
 * its length. */
static size_t cmdline_join(char *buf, size_t n)
{
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    buf[n] = '\0';
    return n;
}

/* The command line, arguments joined by spaces (at most @p cap - 1 bytes):
 * from the constructor's arguments when @p at_load, else from /proc. */
static size_t read_cmdline(char *buf, size_t cap, int at_load)
{
    if (at_load && auto_argv && auto_argc > 0) {
        size_t n = 0;
        for (int i = 0; i < auto_argc && auto_argv[i] && n < cap - 1; i++) {
            for (const char *a = auto_argv[i]; *a && n < cap - 1; a++)
                buf[n++] = *a;
            if (n < cap - 1)
                buf[n++] = '\0';
        }
        return cmdline_join(buf, n);
    }
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0)
        return 0;
    return cmdline_join(buf, (size_t)n);
}

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
    char buf[256];
    if (read_cmdline(buf, sizeof buf, 0))
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

static void auto_at_exit(int status, void *arg)
{
    (void)arg;
    if (atomic_load(&auto_pending)) {
        /* Never started: the end goes to the light spool, and recording
         * calls from later exit handlers are dropped. */
        pthread_mutex_lock(&auto_lock);
        if (atomic_load(&auto_pending)) {
            atomic_store(&auto_pending, 0);
            act_session *l = &lazy_standin;
            atomic_compare_exchange_strong(&act__recording, &l, NULL);
            auto_lazy_exit(status);
        }
        pthread_mutex_unlock(&auto_lock);
        return;
    }
    auto_write();
    /* The session is left for the process teardown: other exit handlers
     * or threads may still call into the library. */
}

/* @p v in decimal at @p p (at least @p width digits, zero-padded);
 * returns the end. */
static char *put_dec(char *p, uint64_t v, int width)
{
    char t[24];
    int n = 0;
    do
        t[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < 20);
    while (n < width && n < 20)
        t[n++] = '0';
    while (n)
        *p++ = t[--n];
    return p;
}

/* <pid>-<ns>-<identity>.json, a name in the record directory (written by
 * hand, not snprintf: every process under record makes one at load); the
 * identity is act__proc_id's, the same in an image this process exec's. */
static char *auto_dir_path(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char *p = auto_path_buf; /* 11 + 1 + 29 + 1 + 20 + 6 bytes at most */
    char *e = put_dec(p, (uint64_t)getpid(), 1);
    *e++ = '-';
    e = put_dec(e, (uint64_t)(ts.tv_sec < 0 ? 0 : ts.tv_sec), 1);
    e = put_dec(e, (uint64_t)ts.tv_nsec, 9);
    *e++ = '-';
    int64_t st = act__proc_id();
    e = put_dec(e, (uint64_t)(st < 0 ? 0 : st), 1);
    memcpy(e, ".json", 6);
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
    if (rc == 0) {
        auto_session->auto_start = 1;
        auto_session->owner = ACT__OWNER_RECORD;
        rc = act_session_start(auto_session);
    }
    if (rc != 0) {
        act_log(ACT_LOG_ERROR, "cannot start recording: %s", act_strerror(rc));
        act_session_destroy(auto_session);
        auto_session = NULL;
        act__spool_remove();
        return rc;
    }
    auto_late_register();
    return 0;
}

static int64_t page_size(void)
{
    static long pg;
    if (!pg)
        pg = sysconf(_SC_PAGESIZE);
    return pg >= 1024 ? pg : 4096;
}

/* Resident memory in KiB (/proc/self/statm, as the host plugin reads
 * it), -1 if unreadable. */
static int64_t rss_kib(void)
{
    char b[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    if (n <= 0)
        return -1;
    b[n] = '\0';
    /* "size resident ...": the second field (no sscanf: every process
     * under record reads it at its start and at its end). */
    char *p = b, *end;
    strtoll(p, &end, 10);
    if (end == p || *end != ' ')
        return -1;
    p = end;
    long long res = strtoll(p, &end, 10);
    if (end == p || res < 0)
        return -1;
    return res * page_size() / 1024;
}

/* The light spool: BASE.meta with the session's start (as a live session
 * logs it, with the parent pid after it) and the command line, one write. */
static void auto_lazy_open(const char *const *env)
{
    size_t n = strlen(auto_path);
    if (n <= 5)
        return;
    char base[80];
    if (n - 5 >= sizeof base)
        return;
    memcpy(base, auto_path, n - 5);
    base[n - 5] = '\0';
    struct timespec rt;
    int64_t m0 = act__clock_ns();
    clock_gettime(CLOCK_REALTIME, &rt);
    int64_t m1 = act__clock_ns();
    int64_t start = m0 + (m1 - m0) / 2;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        ru.ru_utime = ru.ru_stime = (struct timeval){0, 0};
    int64_t v[10] = {(int64_t)getpid(), start,
                     (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - start, start, 0,
                     act__proc_id(), (int64_t)getppid(), auto_lazy_rss ? rss_kib() : -1,
                     (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
                     (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec};
    const char *name = env ? env[ENV_NAME] : secure_getenv("ACTRACE_RECORD_NAME");
    const char *strs[1] = {name ? name : ""};
    size_t lens[1] = {strlen(strs[0])};
    char cmd[256];
    const char *cs = cmd;
    size_t cl = read_cmdline(cmd, sizeof cmd, env != NULL);
    char buf[2048];
    size_t len = act__spool_encode(buf, sizeof buf, ACT__SP_START, v, 10, strs, lens, 1);
    if (len && cl)
        len += act__spool_encode(buf + len, sizeof buf - len, ACT__SP_PNAME, NULL, 0, &cs, &cl, 1);
    if (len)
        len += act__dist_spool(buf + len, sizeof buf - len);
    if (!len || act__spool_light_open(base, buf, len) != 0) {
        act_log(ACT_LOG_WARN, "cannot create %s/%s.meta: %s; this process may be missing "
                "from the trace", auto_dir, base, strerror(errno));
        return;
    }
    auto_lazy_logged = 1;
}

/* Enter the lazy state: no session until the first use. */
static void auto_lazy_begin(const char *const *env)
{
    const char *host = env ? env[ENV_HOST] : secure_getenv("ACTRACE_RECORD_HOST");
    auto_lazy_rss = !host || strcmp(host, "0") != 0;
    auto_lazy_open(env);
    atomic_store(&auto_pending, 1);
    atomic_store_explicit(&act__recording, &lazy_standin, memory_order_release);
}

act_session *act__auto_wake(void)
{
    if (atomic_load(&auto_pending)) {
        int me = (int)syscall(SYS_gettid);
        if (atomic_load(&auto_waker) == me)
            return NULL; /* a call of the start itself (a plugin's init) */
        pthread_mutex_lock(&auto_lock);
        if (atomic_load(&auto_pending)) {
            atomic_store(&auto_waker, me);
            if (auto_session_start() != 0) {
                act_session *l = &lazy_standin;
                atomic_compare_exchange_strong(&act__recording, &l, NULL);
            }
            atomic_store(&auto_waker, 0);
            atomic_store(&auto_pending, 0);
        }
        pthread_mutex_unlock(&auto_lock);
    }
    act_session *r = atomic_load_explicit(&act__recording, memory_order_acquire);
    /* No read of *r: another thread may be destroying it (the on-demand
     * poller gets here from act_session_start while the program destroys
     * its own session; TSan saw it in OnDemand.own_session). */
    return r && r != &lazy_standin ? r : NULL;
}

/* At the exit of a process that never started its session: its end, exit
 * status and CPU use, appended to the light spool. */
static void auto_lazy_exit(int status)
{
    if (!auto_lazy_logged)
        return;
    /* A name the program gave itself (act_process_name, no session
     * needed) replaces the command line. */
    char cur[64], buf[256];
    size_t len = 0;
    const char *set = act__process_name_given(cur, sizeof cur);
    if (set) {
        size_t n = strlen(set);
        len = act__spool_encode(buf, sizeof buf, ACT__SP_PNAME, NULL, 0, &set, &n, 1);
    }
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        ru.ru_utime = ru.ru_stime = (struct timeval){0, 0};
    int64_t stop = act__clock_ns();
    len += act__spool_encode(buf + len, sizeof buf - len, ACT__SP_STOP, &stop, 1, NULL, NULL, 0);
    int64_t e[4] = {status, auto_lazy_rss ? rss_kib() : -1,
                    (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
                    (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec};
    len += act__spool_encode(buf + len, sizeof buf - len, ACT__SP_EXIT, e, 4, NULL, NULL, 0);
    /* One write: the end is logged whole or not at all. */
    act__spool_append(buf, len);
}

/* 1 if this process starts its session at load: record's own child,
 * ACTRACE_RECORD_EAGER=1 (a plugin that cannot start lazily was loaded
 * there, or the user asked), or ACTRACE_RECORD_LAZY=0. */
static int auto_eager(const char *const *env)
{
    const char *e = env[ENV_EAGER];
    if (e && strcmp(e, "1") == 0)
        return 1;
    const char *parent = env[ENV_PARENT];
    /* strtoll as the rest of the start uses, not atol (strtol): one
     * function fewer to bind at load. */
    return parent && *parent && strtoll(parent, NULL, 10) == (long long)getppid();
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
    if (auto_path != auto_path_buf)
        free(auto_path);
    auto_path = NULL;
    auto_written = 0;
    pthread_mutex_init(&auto_lock, NULL);
    if (!auto_dir)
        return; /* single-file mode: the child records nothing */
    atomic_store(&auto_pending, 0);
    atomic_store(&auto_waker, 0);
    auto_lazy_logged = 0;
    auto_path = auto_dir_path();
    if (!auto_path)
        return;
    if (act__spool_dir_check() < 0)
        return; /* the directory is gone: said once */
    /* A child starts lazily (a plugin whose runtime the parent used wakes
     * it from its own fork handler, which runs after this one). Where
     * every process must start at once, the start still waits for the
     * plugins' fork handlers: starting here would init a plugin whose
     * locks its own prepare handler holds until its child handler runs
     * (the opencl layer's g_mu: a daemon's grandchild hung in RecordMulti).
     * auto_atfork_child_late, registered after the plugins were loaded,
     * starts it. A forked child is never record's own child: only the
     * variable makes it eager (getppid() may be record's pid for an
     * orphan that record, a subreaper, adopted). */
    auto_lazy_begin(NULL); /* the environment as it is now */
    const char *e = secure_getenv("ACTRACE_RECORD_EAGER");
    if (e && strcmp(e, "1") == 0)
        atomic_store(&auto_child_eager, 1);
}

/* Runs in the child after the fork handlers of the plugins loaded by the
 * parent's start (registered after them, auto_late_register). */
static void auto_atfork_child_late(void)
{
    if (atomic_exchange(&auto_child_eager, 0))
        act__auto_wake();
}

static void auto_late_install(void)
{
    pthread_atfork(NULL, NULL, auto_atfork_child_late);
}

/* Called once plugins are loaded: from then on a child's eager start runs
 * after their fork handlers. */
static void auto_late_register(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, auto_late_install);
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((constructor))
#endif
#if defined(__GLIBC__)
static void auto_start(int argc, char **argv, char **envp)
{
    (void)envp;
    auto_argc = argc;
    auto_argv = argv;
#else
static void auto_start(void)
{
#endif
    /* The engine's lazy recording calls start the session through this
     * (engine.h); set before any stand-in is published. */
    act__wake_hook = act__auto_wake;
    /* What the start reads of the environment, in one pass (every process
     * under record pays for it at load). */
    static const char *const names[ENV_COUNT] = {
        [ENV_DIR] = "ACTRACE_RECORD_DIR",     [ENV_OUTPUT] = "ACTRACE_RECORD_OUTPUT",
        [ENV_EAGER] = "ACTRACE_RECORD_EAGER", [ENV_PARENT] = "ACTRACE_RECORD_PARENT",
        [ENV_NAME] = "ACTRACE_RECORD_NAME",   [ENV_HOST] = "ACTRACE_RECORD_HOST"};
    const char *env[ENV_COUNT];
    act__env_scan(names, ENV_COUNT, env);
    const char *dir = env[ENV_DIR];
    const char *out = env[ENV_OUTPUT];
    if (dir && *dir) {
        if (act__spool_dir_open(dir) != 0)
            return; /* said why: not recording */
        size_t dl = strlen(dir);
        if (dl >= sizeof auto_dir_buf)
            return; /* act__spool_dir_open refused it already */
        memcpy(auto_dir_buf, dir, dl + 1);
        auto_dir = auto_dir_buf;
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
    /* The fork handlers first: those of plugins loaded by the start run
     * after this one in a child (a plugin may wake the child's session). */
    act__atfork_install(); /* the engine's fork handler runs first */
    pthread_atfork(NULL, NULL, auto_atfork_child);
    if (auto_dir && !auto_eager(env)) {
        auto_lazy_begin(env);
    } else {
        if (auto_session_start() != 0)
            return;
        /* A plugin with no hook for its runtime: descendants start at once. */
        if (auto_dir && auto_session && !act__plugins_all_lazy(auto_session->plugins))
            setenv("ACTRACE_RECORD_EAGER", "1", 1);
        /* Whether descendants that record nothing sample memory as the
         * host plugin would (auto_lazy_rss). */
        if (auto_dir && auto_session && !secure_getenv("ACTRACE_RECORD_HOST")) {
            int host = 0;
            for (size_t i = 0; i < act__plugins_count(auto_session->plugins); i++)
                host |= strcmp(act__plugins_name(auto_session->plugins, i), "host") == 0;
            setenv("ACTRACE_RECORD_HOST", host ? "1" : "0", 1);
        }
    }
    on_exit(auto_at_exit, NULL);
}
