/* SPDX-License-Identifier: MIT */
/*
 * On-demand tracing with the dynolog daemon (docs/on-demand.md; the wire
 * protocol is in dyno_ipc.h).
 *
 * Off unless ACTRACE_USE_DAEMON or KINETO_USE_DAEMON is set to a true
 * value when the library is loaded: then, and only then, one detached
 * thread (the poller) binds a datagram socket of its own and polls the
 * daemon every ACTRACE_DAEMON_POLL_MS (5000, as Kineto). Nothing else in
 * the library knows about it; the recording path is untouched (act_step
 * counts steps here, an atomic add, on or off).
 *
 * A reply with a config opens a session: the environment's config
 * (ACTRACE_CONFIG) with the request's text on top, plugins loaded as for
 * any session (ACTRACE_PLUGINS, the config file's PLUGINS; a request may
 * not name plugins: a daemon's word never loads code). The session's own
 * window machinery runs it (ACTIVITIES_DURATION_MSECS and
 * PROFILE_START_TIME on its timer); an iteration window opens and closes
 * here, in act_step, at the process's step count that the request names
 * (resolved as Kineto does: a start in the past moves to the next step
 * that is a multiple of PROFILE_START_ITERATION_ROUNDUP). When the window has closed the poller writes the trace to the
 * request's ACTIVITIES_LOG_FILE with "_<pid>" inserted, and polls again.
 *
 * Busy. While the process records (a session of the poller's, of its
 * program's, or of `actrace record`), polls ask for config type 0, as
 * Kineto's do while it traces: dynolog keeps a request that arrives
 * meanwhile for later and tells a second requester that the process is
 * busy. A daemon that hands over a config anyway (one that ignores the
 * type) is answered by dropping it with a warning: requests are never
 * queued here. A process whose own session is active (its program's, or
 * the one `actrace record` starts) drops requests the same way.
 *
 * Trust. Any local user can bind an abstract name, so a reply counts only
 * when it comes from the endpoint "dynolog" and from root or this
 * process's own user (the kernel's credentials on the datagram), and the
 * trace goes only under /tmp or KINETO_ONDEMAND_TRACE_DIR, never through
 * "..", as Kineto restricts it.
 *
 * Locks. od_lock guards the poller's session from the poller thread and
 * the exit handler (which writes an open window at exit, waiting at most
 * 2 s for a write in progress). Fork: the child closes the parent's socket
 * and abandons the parent's session (the engine's fork handler already
 * cleared the recording state), then starts a poller of its own if the
 * variable is still set.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "ondemand/dyno_ipc.h"
#include "ondemand/ondemand.h"
#include "session/session.h"

static _Atomic int64_t steps_total; /* act_step calls of the process */

/* The iteration window act_step drives: its session (NULL: none), and the
 * step counts at which it opens and closes. Steps announce themselves in
 * step_inflight before they load the session, so that whoever takes the
 * session away (clear_step_window) can wait for those using it. */
static _Atomic(act_session *) step_session;
static _Atomic int64_t step_from, step_to;
static atomic_uint step_inflight;

void act__ondemand_step(void)
{
    int64_t g = atomic_fetch_add(&steps_total, 1) + 1;
    if (!atomic_load_explicit(&step_session, memory_order_relaxed))
        return;
    atomic_fetch_add(&step_inflight, 1);
    act_session *s = atomic_load(&step_session);
    if (s) {
        if (g >= atomic_load(&step_to)) {
            act_session *me = s;
            if (atomic_compare_exchange_strong(&step_session, &me, NULL))
                act__session_close_window(s);
        } else if (g >= atomic_load(&step_from)) {
            act__session_open_window(s); /* once: it is ARMED only once */
        }
    }
    atomic_fetch_sub(&step_inflight, 1);
}

/* No step uses the session once this returns. */
static void clear_step_window(void)
{
    atomic_store(&step_session, NULL);
    while (atomic_load(&step_inflight) != 0)
        sched_yield();
}

static int od_fd = -1;
static pid_t od_owner;        /* the process that bound od_fd */
static char od_name[80];      /* our endpoint's name */
static int64_t od_poll_ns;    /* between polls */
static int32_t od_pids[ACT__DYNO_MAX_PIDS];
static int od_npids;
static int64_t od_job;
static atomic_int od_exiting;
static int od_atexit_done;
static int od_warned_sender;

static pthread_mutex_t od_lock = PTHREAD_MUTEX_INITIALIZER;
static act_session *od_session; /* the open request's session, or NULL */
static char *od_path;           /* where its trace goes */

/* ---- setup ---------------------------------------------------------------- */

static int env_true(const char *name)
{
    const char *v = secure_getenv(name);
    if (!v)
        return 0;
    static const char *const off[] = {"", "0", "false", "no", "off", "n", "f"};
    for (size_t i = 0; i < ACT_ARRAY_SIZE(off); i++)
        if (strcasecmp(v, off[i]) == 0)
            return 0;
    return 1;
}

static int enabled(void)
{
    return env_true("ACTRACE_USE_DAEMON") || env_true("KINETO_USE_DAEMON");
}

static int64_t env_ms(const char *name, int64_t dflt, int64_t lo, int64_t hi)
{
    const char *v = secure_getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (*end || x < lo || x > hi) {
        act_log(ACT_LOG_WARN, "%s=%s: not a number of milliseconds in [%" PRId64 ", %" PRId64
                "]; using %" PRId64, name, v, lo, hi, dflt);
        return dflt;
    }
    return x;
}

/* The parent of @p pid from /proc/<pid>/stat; 0 if unknown. */
static int32_t parent_of(int32_t pid)
{
    char path[48], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the comm may hold anything */
    int ppid = 0;
    char st;
    if (!p || sscanf(p + 1, " %c %d", &st, &ppid) != 2)
        return 0;
    return ppid;
}

/* The process and its ancestors while they are > 1, at most 10 of them. */
static void find_pids(void)
{
    int32_t pid = (int32_t)getpid();
    od_npids = 0;
    for (int i = 0; i < ACT__DYNO_MAX_PIDS && (i == 0 || pid > 1); i++) {
        od_pids[od_npids++] = pid;
        pid = parent_of(pid);
    }
    const char *job = secure_getenv("SLURM_JOB_ID");
    od_job = job ? strtoll(job, NULL, 10) : 0;
}

/* "dynoconfigclient" and a random UUID, as Kineto names its endpoint. */
static void make_name(void)
{
    unsigned char r[16];
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
        for (size_t i = 0; i < sizeof r; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            r[i] = (unsigned char)(x >> 56);
        }
    }
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
    static const char hex[] = "0123456789abcdef";
    char *p = od_name + snprintf(od_name, sizeof od_name, "dynoconfigclient");
    for (size_t i = 0; i < sizeof r; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[r[i] >> 4];
        *p++ = hex[r[i] & 15];
    }
    *p = '\0';
}

/* ---- one request ---------------------------------------------------------- */

typedef struct req_keys {
    int plugins, log_file, duration, iterations, start_iter, roundup, start_time, enabled;
} req_keys;

static int visit_req(void *user, const char *key, const char *value)
{
    req_keys *k = user;
    (void)value;
    if (strcmp(key, "PLUGINS") == 0)
        k->plugins = 1;
    else if (strcmp(key, "ACTIVITIES_LOG_FILE") == 0)
        k->log_file = 1;
    else if (strcmp(key, "ACTIVITIES_DURATION_MSECS") == 0 ||
             strcmp(key, "ACTIVITIES_DURATION_SECS") == 0)
        k->duration = 1;
    else if (strcmp(key, "ACTIVITIES_ITERATIONS") == 0)
        k->iterations = 1;
    else if (strcmp(key, "PROFILE_START_ITERATION") == 0)
        k->start_iter = 1;
    else if (strcmp(key, "PROFILE_START_ITERATION_ROUNDUP") == 0)
        k->roundup = 1;
    else if (strcmp(key, "PROFILE_START_TIME") == 0)
        k->start_time = 1;
    return 0;
}

static int64_t get_int(const act_config *c, const char *key, int64_t dflt)
{
    int64_t v;
    return act_config_get_int(c, key, &v) == 0 ? v : dflt;
}

/* The directory on-demand traces are kept to, with a trailing '/'. */
static void allowed_dir(char *out, size_t cap)
{
    const char *d = secure_getenv("KINETO_ONDEMAND_TRACE_DIR");
    if (!d || !*d)
        d = "/tmp/";
    size_t n = strlen(d);
    snprintf(out, cap, "%s%s", d, d[n - 1] == '/' ? "" : "/");
}

/*
 * Where the trace goes, as Kineto decides: the request's
 * ACTIVITIES_LOG_FILE with "_<pid>" before ".pt.trace.json", else before
 * the first ".json"; a file outside the allowed directory (or with "..")
 * is refused for the default name there, libkineto_activities_<pid>.json.
 */
static char *trace_path(const act_config *req, int has_file)
{
    char dir[4096];
    allowed_dir(dir, sizeof dir);
    const char *f = has_file ? act_config_get_str(req, "ACTIVITIES_LOG_FILE") : NULL;
    int pid = (int)getpid();
    if (f && (strncmp(f, dir, strlen(dir)) != 0 || strstr(f, ".."))) {
        act_log(ACT_LOG_WARN, "on-demand: ACTIVITIES_LOG_FILE %s is outside %s (or has \"..\"): "
                "the trace goes to the default name there", f, dir);
        f = NULL;
    }
    size_t cap = (f ? strlen(f) : strlen(dir)) + 64;
    char *p = malloc(cap);
    if (!p)
        return NULL;
    if (!f) {
        snprintf(p, cap, "%slibkineto_activities_%d.json", dir, pid);
        return p;
    }
    const char *at = strstr(f, ".pt.trace.json");
    if (!at)
        at = strstr(f, ".json");
    if (at)
        snprintf(p, cap, "%.*s_%d%s", (int)(at - f), f, pid, at);
    else
        snprintf(p, cap, "%s", f);
    return p;
}

/* The window of an iteration request, as Kineto resolves it: the start is
 * an iteration of the process (steps_total); one in the past moves to
 * the next step plus the warmup, rounded up to the ROUNDUP multiple.
 * @p cur is the process's step count now. Returns that iteration. */
static int64_t resolve_start_iter(const act_config *req, const req_keys *k, int64_t cur)
{
    int64_t start = k->start_iter ? get_int(req, "PROFILE_START_ITERATION", 0) : 0;
    int64_t warm = get_int(req, "ACTIVITIES_WARMUP_ITERATIONS", 0);
    int64_t round = k->roundup ? get_int(req, "PROFILE_START_ITERATION_ROUNDUP", 0) : 0;
    /* The request comes in the middle of step `cur`: the first whole step
     * it can have is the next one (Kineto, which checks at act_step's
     * boundary, can start at `cur` itself). */
    if (cur >= start - warm) {
        start = cur + 1 + warm;
        if (round > 0 && start % round)
            start += round - start % round;
    }
    return start;
}

static void finish_locked(void)
{
    act_session *s = od_session;
    clear_step_window();
    int rc = act_session_write(s, od_path);
    if (rc == 0)
        act_log(ACT_LOG_INFO, "on-demand: trace written to %s", od_path);
    else
        act_log(ACT_LOG_ERROR, "on-demand: cannot write the trace: %s", act_session_errmsg(s));
    act_session_destroy(s);
    od_session = NULL;
    free(od_path);
    od_path = NULL;
}

static void start_request(const char *text, size_t len)
{
    act_config *req = NULL, *cfg = NULL;
    act_parse_error err;
    memset(&err, 0, sizeof err);
    if (act_config_parse(text, len, NULL, &req, &err) != 0) {
        act_log(ACT_LOG_ERROR, "on-demand: the daemon's config, line %d, column %d: %s; "
                "request ignored", err.line, err.column, err.message);
        return;
    }
    req_keys k;
    memset(&k, 0, sizeof k);
    act_config_foreach(req, visit_req, &k);
    int on = 1;
    if (k.plugins) {
        act_log(ACT_LOG_ERROR, "on-demand: the daemon's config names PLUGINS; only the "
                "process's own config (ACTRACE_PLUGINS, ACTRACE_CONFIG) loads plugins; request ignored");
        goto out;
    }
    if (act_config_get_bool(req, "ACTIVITIES_ENABLED", &on) == 0 && !on) {
        act_log(ACT_LOG_INFO, "on-demand: ACTIVITIES_ENABLED is false: nothing to trace");
        goto out;
    }
    /* The window. Kineto's iteration requests need ACTIVITIES_ITERATIONS
     * > 0; a request with no window keys gets Kineto's 500 ms. */
    char extra[256] = "";
    int iter = (k.start_iter || k.roundup) && get_int(req, "ACTIVITIES_ITERATIONS", 0) > 0;
    if (iter) {
        if (atomic_load(&steps_total) == 0)
            act_log(ACT_LOG_WARN, "on-demand: an iteration request, and this process has not "
                    "called act_step yet: the window opens only when it does");
        /* An iteration window, opened and closed by act__ondemand_step:
         * the session's own step rule is kept out of the way below. */
        snprintf(extra, sizeof extra,
                 "PROFILE_START_ITERATION = 0\nPROFILE_START_ITERATION_ROUNDUP = 1\n");
    } else if (!k.duration && !k.iterations) {
        snprintf(extra, sizeof extra, "ACTIVITIES_DURATION_MSECS = 500\n");
    }
    if (act_config_load_env(NULL, &cfg, &err) != 0 ||
        act_config_parse(text, len, NULL, &cfg, &err) != 0 ||
        act_config_parse(extra, strlen(extra), NULL, &cfg, &err) != 0) {
        act_log(ACT_LOG_ERROR, "on-demand: config: %s; request ignored", err.message);
        goto out;
    }
    char *path = trace_path(req, k.log_file);
    if (!path)
        goto out;
    act_session_opts o;
    act_session_opts_init(&o);
    o.config = cfg;
    act_session *s = NULL;
    int rc = act_session_create(&o, &s);
    if (rc == 0 && iter)
        s->start_iter = INT64_MAX / 4; /* never by the session's own count */
    if (rc == 0)
        rc = act_session_start(s);
    if (rc != 0) {
        act_log(rc == ACT_EBUSY ? ACT_LOG_WARN : ACT_LOG_ERROR,
                "on-demand: %s; request ignored",
                rc == ACT_EBUSY ? "busy: the process already records (a session is active)"
                                : act_strerror(rc));
        act_session_destroy(s);
        free(path);
        goto out;
    }
    if (iter) {
        /* From the step count now; a step that ran past the start before
         * the window was published moves it to the next multiple. */
        int64_t iters = get_int(req, "ACTIVITIES_ITERATIONS", 1);
        int64_t cur = atomic_load(&steps_total), from = resolve_start_iter(req, &k, cur);
        atomic_store(&step_from, from);
        atomic_store(&step_to, from + iters);
        atomic_store(&step_session, s);
        int64_t now = atomic_load(&steps_total);
        if (now >= from && atomic_load(&s->state) == ACT__S_ARMED) {
            from = resolve_start_iter(req, &k, now);
            atomic_store(&step_to, from + iters);
            atomic_store(&step_from, from);
        }
        act_log(ACT_LOG_DEBUG, "on-demand: step %" PRId64 " now, the window spans steps %" PRId64
                " to %" PRId64, cur, from, from + iters);
    }
    const char *id = act_config_get_str(cfg, "REQUEST_TRACE_ID");
    act_log(ACT_LOG_INFO, "on-demand: tracing (request %s) into %s", id && *id ? id : "-", path);
    od_session = s;
    od_path = path;
out:
    act_config_destroy(req);
    act_config_destroy(cfg);
}

/* The session's window has closed (or never will: a stopped session). */
static int window_done(const act_session *s)
{
    return atomic_load(&s->state) >= ACT__S_DONE;
}

static void on_reply(act__dyno_msg *m)
{
    if (strcmp(m->type, ACT__DYNO_REQ) != 0)
        return;
    if (strcmp(m->src, ACT__DYNO_DAEMON) != 0 || !m->has_cred ||
        (m->uid != 0 && m->uid != geteuid())) {
        if (!od_warned_sender++)
            act_log(ACT_LOG_WARN, "on-demand: ignored a message from \"%s\" (uid %d): only the "
                    "daemon \"%s\", run by root or by this user, is obeyed",
                    m->src, m->has_cred ? (int)m->uid : -1, ACT__DYNO_DAEMON);
        return;
    }
    if (m->len == 0)
        return; /* nothing to do */
    pthread_mutex_lock(&od_lock);
    if (atomic_load(&od_exiting)) {
        /* the process is ending */
    } else if (od_session) {
        act_log(ACT_LOG_WARN, "on-demand: busy: a trace window is open; the daemon's new "
                "request is dropped, not queued");
    } else {
        start_request(m->data, m->len);
    }
    pthread_mutex_unlock(&od_lock);
}

static int busy(void)
{
    pthread_mutex_lock(&od_lock);
    int b = od_session != NULL;
    pthread_mutex_unlock(&od_lock);
    return b;
}

static void send_poll(int is_busy)
{
    unsigned char buf[ACT__DYNO_POLL_LEN(ACT__DYNO_MAX_PIDS)];
    /* Activities only while the process does not record: no window of
     * ours, no session of its program's or of `actrace record` (Kineto's
     * rule: it asks for none while its profiler is active). */
    int32_t type = is_busy || act__session_started() ? 0 : ACT__DYNO_CFG_ACTIVITIES;
    size_t n = act__dyno_poll_encode(buf, type, od_job, od_pids, od_npids);
    int rc = act__dyno_send(od_fd, ACT__DYNO_DAEMON, ACT__DYNO_REQ, buf, n);
    static int warned;
    if (rc != 0 && rc != -ECONNREFUSED && rc != -ENOENT && rc != -EAGAIN && !warned++)
        act_log(ACT_LOG_WARN, "on-demand: cannot poll the daemon: %s", strerror(-rc));
}

static void *poller(void *arg)
{
    (void)arg;
    int64_t next = act__clock_ns(); /* the first poll registers the process */
    while (!atomic_load(&od_exiting)) {
        int64_t now = act__clock_ns();
        int is_busy = busy();
        if (now >= next) {
            send_poll(is_busy);
            next = now + od_poll_ns;
        }
        int64_t wait_ms = (next - now) / 1000000 + 1;
        if (is_busy && wait_ms > 20)
            wait_ms = 20; /* a window of ours is open: look at it often */
        act__dyno_msg m;
        int rc = act__dyno_recv(od_fd, (int)wait_ms, &m);
        if (rc == 1) {
            on_reply(&m);
            act__dyno_msg_free(&m);
        } else if (rc < 0 && rc != -EBADMSG && rc != -EMSGSIZE && rc != -ENOMEM) {
            if (!atomic_load(&od_exiting))
                act_log(ACT_LOG_ERROR, "on-demand: the socket failed (%s): no more polling",
                    strerror(-rc));
            break;
        }
        pthread_mutex_lock(&od_lock);
        if (od_session && window_done(od_session))
            finish_locked();
        pthread_mutex_unlock(&od_lock);
    }
    return NULL;
}

/* An open window is written at exit (it is what the daemon asked for).
 * A write in progress on the poller is waited for, 2 s at most. */
static void od_at_exit(void)
{
    atomic_store(&od_exiting, 1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    if (pthread_mutex_timedlock(&od_lock, &ts) != 0)
        return;
    if (od_session && atomic_load(&od_session->state) >= ACT__S_COLLECTING)
        finish_locked();
    pthread_mutex_unlock(&od_lock);
    /* The socket stays open (the poller may be in poll(2) on it) and goes
     * with the process; its file, in the directory mode, goes now. */
    struct sockaddr_un sa;
    socklen_t salen;
    if (od_owner == getpid() && act__dyno_addr(od_name, &sa, &salen) == 0 && sa.sun_path[0])
        unlink(sa.sun_path);
}

/* Between polls: ACTRACE_DAEMON_POLL_MS, else the config file's
 * ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS (Kineto's key), else 5 s. */
static int64_t poll_interval_ms(void)
{
    int64_t secs = 5;
    act_config *cfg = NULL;
    if (act_config_load_env(NULL, &cfg, NULL) == 0)
        secs = get_int(cfg, "ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS", 5);
    act_config_destroy(cfg);
    if (secs < 1 || secs > 3600)
        secs = 5;
    return env_ms("ACTRACE_DAEMON_POLL_MS", secs * 1000, 1, 3600000);
}

static int start_poller(void)
{
    od_poll_ns = poll_interval_ms() * 1000000;
    find_pids();
    make_name();
    od_fd = act__dyno_bind(od_name);
    if (od_fd < 0) {
        act_log(ACT_LOG_WARN, "on-demand: cannot bind the endpoint %s: %s; no polling", od_name,
                strerror(-od_fd));
        od_fd = -1;
        return -1;
    }
    od_owner = getpid();
    /* Every signal blocked, so the program's threads take them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 256 * 1024);
    pthread_t t;
    int rc = pthread_create(&t, &a, poller, NULL);
    pthread_attr_destroy(&a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        act_log(ACT_LOG_WARN, "on-demand: cannot start the poller thread: %s", strerror(rc));
        act__dyno_unbind(od_fd, od_name);
        od_fd = -1;
        return -1;
    }
    pthread_setname_np(t, "actrace-dyno");
    if (!od_atexit_done) {
        od_atexit_done = 1;
        atexit(od_at_exit);
    }
    return 0;
}

/* The child of a fork: the parent's socket, session and thread are not
 * its own (the thread did not survive the fork). */
static void od_atfork_child(void)
{
    pthread_mutex_init(&od_lock, NULL);
    /* The parent's session (its memory is only a copy here): no step of
     * the child may open or close its window. */
    atomic_store(&step_session, NULL);
    atomic_store(&step_inflight, 0);
    od_session = NULL;
    free(od_path);
    od_path = NULL;
    if (od_fd >= 0)
        close(od_fd); /* never unlink: the file is the parent's */
    od_fd = -1;
    od_warned_sender = 0;
    if (!atomic_load(&od_exiting) && enabled())
        start_poller();
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((constructor))
#endif
static void od_init(void)
{
    if (!enabled())
        return;
    act__atfork_install(); /* the engine's fork handler runs first */
    pthread_atfork(NULL, NULL, od_atfork_child);
    start_poller();
}
