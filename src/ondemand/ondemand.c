/* SPDX-License-Identifier: MIT */
/*
 * On-demand tracing with the dynolog daemon (docs/on-demand.md; the wire
 * protocol is in dyno_ipc.h). A client above the session layer: it
 * starts sessions and opens and closes their windows; the session reaches
 * it only through act__step_hook, installed here at load.
 *
 * Who polls (docs/architecture.md, "One poller per process"). Only when
 * ACTRACE_USE_DAEMON or KINETO_USE_DAEMON is set to a true value when the
 * library is loaded does one detached thread (the poller) bind a datagram
 * socket of its own and poll the daemon every ACTRACE_DAEMON_POLL_MS
 * (5000, as Kineto). Never in the actrace command itself (it exports
 * actrace_cli_never_polls). Where Kineto polls (KINETO_USE_DAEMON set and
 * a loaded object defines libkineto_init: torch), Kineto owns on-demand:
 * the poller stops before its next poll, and actrace's plugins ride in
 * Kineto's session through actrace.torch.enable(). A process (a forked
 * child, or a new image after exec) binds and polls only after it has
 * lived one poll interval: one that execs or exits sooner (a shell, a
 * wrapper script, the child of a fork+exec) never registers an endpoint
 * that vanishes (dynolog blocks its IPC thread retrying a reply to one),
 * nor leaves a socket file.
 *
 * Ready at start. The plugins the process's own config names (the ones a
 * request's session would load) get what their runtimes read at their
 * first call set at load: OPENCL_LAYERS (the opencl plugin as a layer;
 * ACTRACE_OPENCL_PROFILE_QUEUES=1) and NVTX_INJECTION64_PATH, as `record`
 * and actrace.torch.enable() do. Until a window opens the layer only
 * forwards.
 *
 * A reply with a config opens a session: the environment's config
 * (ACTRACE_CONFIG) with the request's keys on top, only those a remote
 * requester may set (remote_keys), bounded; plugins are loaded as for any
 * session (a request may not name PLUGINS: a daemon's word never loads
 * code). The session's own window machinery runs a duration window; an
 * iteration window opens and closes here, in act_step, at the process's
 * step count that the request names (resolved as Kineto does). One that
 * has not opened within ACTRACE_DAEMON_START_TIMEOUT_MS (60 s), or whose
 * steps stop for as long, is given up or closed. When the window has
 * closed the poller writes the trace (od_file.h: an exclusively created
 * file under the allowed directory, linked at its name when complete) and
 * polls again.
 *
 * Busy. While the process records (a session of the poller's, of its
 * program's, or of `actrace record`), polls ask for config type 0, as
 * Kineto's do while it traces: dynolog keeps a request that arrives
 * meanwhile for later and tells a second requester that the process is
 * busy. A daemon that hands over a config anyway is answered by dropping
 * it with a warning: requests are never queued here.
 *
 * Trust. Any local user can bind an abstract name, so a reply counts only
 * when it comes from the endpoint "dynolog" and from root or this
 * process's own user (the kernel's credentials on the datagram).
 *
 * Locks. od_lock guards the poller's session from the poller thread and
 * the exit handler, which writes an open window at exit and waits for a
 * write in progress (at most ACT__OD_EXIT_WAIT_S). Fork: the child closes
 * the parent's socket and abandons the parent's session (the engine's
 * fork handler already cleared the recording state), then starts a poller
 * of its own, late (above), if the variable is still set.
 */
#include <errno.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "ondemand/dyno_ipc.h"
#include "ondemand/od_file.h"
#include "plugin/loader.h"
#include "session/session.h"

static _Atomic int64_t steps_total; /* act_step calls of the process */

/* The iteration window act_step drives: its session (NULL: none), and the
 * step counts at which it opens and closes. Steps announce themselves in
 * step_inflight before they load the session, so that whoever takes the
 * session away (clear_step_window) can wait for those using it. */
static _Atomic(act_session *) step_session;
static _Atomic int64_t step_from, step_to;
static atomic_uint step_inflight;

/* act__step_hook: every act_step(), first. An atomic add and a load when
 * no iteration window waits. */
static void od_step(void)
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

#define ACT__OD_EXIT_WAIT_S 120 /* the longest exit waits for a write */

static int od_fd = -1;
static _Atomic int od_owner;  /* the process that bound od_fd (the poller
                                * sets it, the exit handler reads it) */
static int64_t od_first_ns;   /* the first poll's delay (a forked child's) */
static int64_t od_start_timeout_ns; /* iteration windows: see the top */
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
static act__od_file od_file;    /* its trace's file */
static int od_iter;             /* it is an iteration window */
static int64_t od_since_ns;     /* when it started, or its last step */
static int64_t od_seen_steps;   /* steps_total then */
static _Atomic int od_writing;  /* a write in progress (exit waits) */

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

/* The keys a request from the daemon may set (anyone who can reach the
 * daemon sends it); the rest of a session's config is the process's own.
 * docs/on-demand.md, "What a request may set", keeps this list. */
static const char *const remote_keys[] = {
    "ACTIVITIES_ENABLED", "ACTIVITIES_LOG_FILE", "ACTIVITIES_DURATION_MSECS",
    "ACTIVITIES_DURATION_SECS", "ACTIVITIES_ITERATIONS", "ACTIVITIES_WARMUP_ITERATIONS",
    "ACTIVITIES_WARMUP_PERIOD_SECS", "PROFILE_START_TIME", "PROFILE_START_ITERATION",
    "PROFILE_START_ITERATION_ROUNDUP", "REQUEST_TRACE_ID", "REQUEST_GROUP_TRACE_ID",
    "ACTRACE_TRACE_ID", "ACTIVITY_TYPES",
    /* Kineto's keys that `dyno gputrace` sends; no effect in actrace. */
    "PROFILE_REPORT_INPUT_SHAPES", "PROFILE_PROFILE_MEMORY", "PROFILE_WITH_STACK",
    "PROFILE_WITH_FLOPS", "PROFILE_WITH_MODULES",
};
#define ACT__OD_MAX_ITERS 10000        /* ACTIVITIES_ITERATIONS and its warmup */
#define ACT__OD_MAX_ROUNDUP 1000000    /* PROFILE_START_ITERATION_ROUNDUP */
#define ACT__OD_MAX_WARMUP_SECS 60     /* ACTIVITIES_WARMUP_PERIOD_SECS */
#define ACT__OD_MAX_ID 128             /* a trace id's bytes */

typedef struct req_keys {
    int plugins, log_file, duration, iterations, start_iter, roundup, start_time, enabled;
    const act_config *req;
    FILE *text;           /* the keys kept, bounded, as config lines */
    char dropped[512];    /* the keys left out, for one warning */
    char clamped[512];    /* the values bounded, for one warning */
    int64_t max_ms;       /* ACTRACE_DAEMON_MAX_DURATION_MS */
    const char *act_id, *req_id; /* ACTRACE_TRACE_ID, REQUEST_TRACE_ID */
    int bad_id;
} req_keys;

static int64_t get_int(const act_config *c, const char *key, int64_t dflt)
{
    int64_t v;
    return act_config_get_int(c, key, &v) == 0 ? v : dflt;
}

/* Append "KEY" (or "KEY to V" when @p v >= 0) to a list for a warning. */
static void note(char *buf, size_t cap, const char *key, long long v)
{
    size_t n = strlen(buf);
    if (n + 1 >= cap)
        return;
    if (v >= 0)
        snprintf(buf + n, cap - n, "%s%s to %lld", n ? ", " : "", key, v);
    else
        snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", key);
}

static int64_t bounded(req_keys *k, const char *key, int64_t v, int64_t hi)
{
    if (v <= hi)
        return v;
    note(k->clamped, sizeof k->clamped, key, (long long)hi);
    return hi;
}

static int id_ok(const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n > ACT__OD_MAX_ID)
        return 0;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\')
            return 0;
    return 1;
}

static int visit_req(void *user, const char *key, const char *value)
{
    req_keys *k = user;
    if (strcmp(key, "PLUGINS") == 0) {
        k->plugins = 1;
        return 0;
    }
    size_t i = 0;
    while (i < ACT_ARRAY_SIZE(remote_keys) && strcmp(key, remote_keys[i]) != 0)
        i++;
    if (i == ACT_ARRAY_SIZE(remote_keys)) {
        note(k->dropped, sizeof k->dropped, key, -1);
        return 0;
    }
    if (strcmp(key, "ACTIVITIES_LOG_FILE") == 0) {
        k->log_file = 1;
    } else if (strcmp(key, "ACTIVITIES_DURATION_MSECS") == 0 ||
               strcmp(key, "ACTIVITIES_DURATION_SECS") == 0) {
        k->duration = 1; /* written once, bounded, after the visit */
        return 0;
    } else if (strcmp(key, "ACTIVITIES_ITERATIONS") == 0 ||
               strcmp(key, "ACTIVITIES_WARMUP_ITERATIONS") == 0 ||
               strcmp(key, "PROFILE_START_ITERATION_ROUNDUP") == 0 ||
               strcmp(key, "ACTIVITIES_WARMUP_PERIOD_SECS") == 0) {
        int64_t hi = key[0] == 'P' ? ACT__OD_MAX_ROUNDUP
                     : strstr(key, "SECS") ? ACT__OD_MAX_WARMUP_SECS : ACT__OD_MAX_ITERS;
        k->iterations |= strcmp(key, "ACTIVITIES_ITERATIONS") == 0;
        k->roundup |= key[0] == 'P';
        fprintf(k->text, "%s = %lld\n", key, (long long)bounded(k, key, get_int(k->req, key, 0), hi));
        return 0;
    } else if (strcmp(key, "PROFILE_START_ITERATION") == 0) {
        k->start_iter = 1;
    } else if (strcmp(key, "PROFILE_START_TIME") == 0) {
        k->start_time = 1;
    } else if (strcmp(key, "REQUEST_TRACE_ID") == 0 || strcmp(key, "ACTRACE_TRACE_ID") == 0) {
        /* ACTRACE_TRACE_ID wins: dynolog appends its own REQUEST_TRACE_ID
         * after the request's text, so that one is the daemon's. */
        if (!id_ok(value))
            k->bad_id = 1;
        else if (key[0] == 'A')
            k->act_id = value;
        else
            k->req_id = value;
        return 0;
    }
    fprintf(k->text, "%s = %s\n", key, value);
    return 0;
}

/* The directory on-demand traces are kept to. */
static const char *allowed_dir(void)
{
    const char *d = secure_getenv("KINETO_ONDEMAND_TRACE_DIR");
    return d && *d ? d : "/tmp";
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
    if (warm > ACT__OD_MAX_ITERS) /* the bounds of visit_req */
        warm = ACT__OD_MAX_ITERS;
    if (round > ACT__OD_MAX_ROUNDUP)
        round = ACT__OD_MAX_ROUNDUP;
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

static void drop_locked(void)
{
    clear_step_window();
    act_session_destroy(od_session);
    od_session = NULL;
    act__od_file_abort(&od_file);
}

static void finish_locked(void)
{
    act_session *s = od_session;
    clear_step_window();
    char target[64], err[4200];
    act__od_file_target(&od_file, target, sizeof target);
    atomic_store(&od_writing, 1); /* until the session is gone: exit waits */
    int rc = act_session_write(s, target);
    if (rc == 0) {
        rc = act__od_file_commit(&od_file, err, sizeof err);
        if (rc == 0 && err[0])
            act_log(ACT_LOG_WARN, "on-demand: %s", err);
        if (rc == 0)
            act_log(ACT_LOG_INFO, "on-demand: trace written to %s", od_file.final);
        else
            act_log(ACT_LOG_ERROR, "on-demand: %s", err);
    } else {
        act_log(ACT_LOG_ERROR, "on-demand: cannot write the trace: %s", act_session_errmsg(s));
        act__od_file_abort(&od_file);
    }
    act_session_destroy(s);
    od_session = NULL;
    atomic_store(&od_writing, 0);
}

/* The refusal of a request while another owner's session is active. */
static void refuse_busy(void)
{
    /* No started session while act__recording is set: record's session,
     * waiting for the process's first event (lazy). */
    int owner = atomic_load(&act__started) ? atomic_load(&act__started_owner) : ACT__OWNER_RECORD;
    act_log(ACT_LOG_WARN, "on-demand: busy: the process already records (the %s owner's "
            "session is active); request ignored", act__owner_name(owner));
}

static void start_request(const char *text, size_t len)
{
    if (act__session_started()) {
        /* Before the request's file or plugins: nothing to undo. */
        refuse_busy();
        return;
    }
    act_config *req = NULL, *cfg = NULL;
    act_parse_error err;
    memset(&err, 0, sizeof err);
    char *kept = NULL;
    size_t kept_len = 0;
    /* Unknown keys: the session warns, after loading its plugins, for
     * those none of them reads. */
    act_config_parse_opts po;
    act_config_parse_opts_init(&po);
    po.flags = ACT_CONFIG_QUIET_UNKNOWN;
    if (act_config_parse(text, len, &po, &req, &err) != 0) {
        act_log(ACT_LOG_ERROR, "on-demand: the daemon's config, line %d, column %d: %s; "
                "request ignored", err.line, err.column, err.message);
        return;
    }
    req_keys k;
    memset(&k, 0, sizeof k);
    k.req = req;
    k.max_ms = env_ms("ACTRACE_DAEMON_MAX_DURATION_MS", 600000, 1, 86400000);
    k.text = open_memstream(&kept, &kept_len);
    if (!k.text)
        goto out;
    act_config_foreach(req, visit_req, &k);
    if (k.act_id || k.req_id)
        fprintf(k.text, "REQUEST_TRACE_ID = %s\n", k.act_id ? k.act_id : k.req_id);
    /* Kineto's format, whatever the process's own OUTPUT_FORMAT: the
     * trace is written through a descriptor, whose name says nothing. */
    fprintf(k.text, "OUTPUT_FORMAT = json\n");
    if (k.duration) {
        /* One duration, in milliseconds, at most max_ms. */
        int64_t ms = get_int(req, "ACTIVITIES_DURATION_MSECS", 0);
        const char *key = "ACTIVITIES_DURATION_MSECS";
        if (ms <= 0) {
            int64_t secs = get_int(req, "ACTIVITIES_DURATION_SECS", 0);
            ms = secs > k.max_ms / 1000 ? k.max_ms + 1 : secs * 1000;
            key = "ACTIVITIES_DURATION_SECS";
        }
        fprintf(k.text, "ACTIVITIES_DURATION_MSECS = %lld\n",
                (long long)bounded(&k, key, ms, k.max_ms));
    }
    int on = 1;
    if (k.plugins) {
        act_log(ACT_LOG_ERROR, "on-demand: the daemon's config names PLUGINS; only the "
                "process's own config (ACTRACE_PLUGINS, ACTRACE_CONFIG) loads plugins; request ignored");
        goto out;
    }
    if (k.dropped[0])
        act_log(ACT_LOG_WARN, "on-demand: the daemon's config sets %s, which only the process's "
                "own config may set: left out", k.dropped);
    if (k.clamped[0])
        act_log(ACT_LOG_WARN, "on-demand: the daemon's config was bounded: %s", k.clamped);
    if (k.bad_id)
        act_log(ACT_LOG_WARN, "on-demand: a trace id of the request is empty, longer than %d "
                "bytes or has control characters, quotes or backslashes: not used", ACT__OD_MAX_ID);
    if (act_config_get_bool(req, "ACTIVITIES_ENABLED", &on) == 0 && !on) {
        act_log(ACT_LOG_INFO, "on-demand: ACTIVITIES_ENABLED is false: nothing to trace");
        goto out;
    }
    if (k.start_time) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
        if (get_int(req, "PROFILE_START_TIME", 0) > now_ms + k.max_ms) {
            act_log(ACT_LOG_ERROR, "on-demand: PROFILE_START_TIME is more than %" PRId64
                    " ms ahead (ACTRACE_DAEMON_MAX_DURATION_MS); request ignored", k.max_ms);
            goto out;
        }
    }
    /* The window. Kineto's iteration requests need ACTIVITIES_ITERATIONS
     * > 0; a request with no window keys gets Kineto's 500 ms. */
    int iter = (k.start_iter || k.roundup) && get_int(req, "ACTIVITIES_ITERATIONS", 0) > 0;
    if (iter) {
        if (atomic_load(&steps_total) == 0)
            act_log(ACT_LOG_WARN, "on-demand: an iteration request, and this process has not "
                    "called act_step yet: the window opens only when it does (given up after "
                    "%" PRId64 " ms)", od_start_timeout_ns / 1000000);
        /* An iteration window, opened and closed by od_step: the
         * session's own step rule is kept out of the way below. */
        fprintf(k.text, "PROFILE_START_ITERATION = 0\nPROFILE_START_ITERATION_ROUNDUP = 1\n");
    } else if (!k.duration && !k.iterations) {
        fprintf(k.text, "ACTIVITIES_DURATION_MSECS = 500\n");
    }
    if (fclose(k.text) != 0) {
        k.text = NULL;
        goto out;
    }
    k.text = NULL;
    if (act_config_load_env(&po, &cfg, &err) != 0 ||
        act_config_parse(kept, kept_len, &po, &cfg, &err) != 0) {
        act_log(ACT_LOG_ERROR, "on-demand: config: %s; request ignored", err.message);
        goto out;
    }
    /* A process that records already is refused before a session is made
     * for the request, so that no plugin is loaded (its init run) beside
     * the recording session's. One being made at this moment (record's at
     * load, the program's own) is met by act_session_start below. */
    if (atomic_load(&act__started) || atomic_load(&act__recording)) {
        refuse_busy();
        goto out;
    }
    char warn[4600], ferr[4200];
    int frc = act__od_file_open(&od_file, allowed_dir(),
                                k.log_file ? act_config_get_str(req, "ACTIVITIES_LOG_FILE") : NULL,
                                (int)getpid(), warn, sizeof warn, ferr, sizeof ferr);
    if (warn[0])
        act_log(ACT_LOG_WARN, "on-demand: %s: the trace goes to the default name in %s", warn,
                allowed_dir());
    if (frc != 0) {
        act_log(ACT_LOG_ERROR, "on-demand: %s; request ignored", ferr);
        goto out;
    }
    act_session_opts o;
    act_session_opts_init(&o);
    o.config = cfg;
    act_session *s = NULL;
    int rc = act_session_create(&o, &s);
    if (rc == 0)
        s->owner = ACT__OWNER_ONDEMAND;
    if (rc == 0 && iter)
        s->start_iter = INT64_MAX / 4; /* never by the session's own count */
    if (rc == 0)
        rc = act_session_start(s);
    if (rc != 0) {
        if (rc == ACT_EBUSY)
            refuse_busy();
        else
            act_log(ACT_LOG_ERROR, "on-demand: %s; request ignored", act_strerror(rc));
        act_session_destroy(s);
        act__od_file_abort(&od_file);
        goto out;
    }
    od_iter = iter;
    od_since_ns = act__clock_ns();
    od_seen_steps = atomic_load(&steps_total);
    if (iter) {
        /* From the step count now; a step that ran past the start before
         * the window was published moves it to the next multiple. */
        int64_t iters = get_int(cfg, "ACTIVITIES_ITERATIONS", 1);
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
    act_log(ACT_LOG_INFO, "on-demand: tracing (request %s) into %s/%s", id && *id ? id : "-",
            od_file.dir, od_file.name);
    od_session = s;
out:
    if (k.text)
        fclose(k.text);
    free(kept);
    act_config_destroy(req);
    act_config_destroy(cfg);
}

/* An iteration window that has not opened within the start timeout, or
 * whose steps stopped for as long: given up, or closed and written. */
static void check_iter_locked(void)
{
    if (!od_session || !od_iter)
        return;
    int64_t now = act__clock_ns(), steps = atomic_load(&steps_total);
    if (steps != od_seen_steps) {
        od_seen_steps = steps;
        od_since_ns = now;
        return;
    }
    if (now - od_since_ns < od_start_timeout_ns)
        return;
    if (atomic_load(&od_session->state) == ACT__S_ARMED) {
        act_log(ACT_LOG_WARN, "on-demand: the iteration window did not open within %" PRId64
                " ms (no act_step() reached its start): request given up, nothing written",
                od_start_timeout_ns / 1000000);
        drop_locked();
    } else if (atomic_load(&od_session->state) == ACT__S_COLLECTING) {
        act_log(ACT_LOG_WARN, "on-demand: no act_step() for %" PRId64 " ms inside the iteration "
                "window: closed early", od_start_timeout_ns / 1000000);
        clear_step_window();
        act__session_close_window(od_session);
    }
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
        act_log(ACT_LOG_WARN, "on-demand: busy: a trace window is open (the on-demand owner's "
                "session); the daemon's new request is dropped, not queued");
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

/* ---- who polls ------------------------------------------------------------ */

typedef struct obj_names {
    char names[16][512];
    int n;
    unsigned long long adds;
} obj_names;

static int collect_obj(struct dl_phdr_info *info, size_t size, void *data)
{
    obj_names *o = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
        o->adds = info->dlpi_adds;
    const char *n = info->dlpi_name, *b = n ? strrchr(n, '/') : NULL;
    b = b ? b + 1 : n;
    if (b && *b && (strstr(b, "torch") || strstr(b, "kineto")) && o->n < 16 &&
        strlen(n) < sizeof o->names[0])
        strcpy(o->names[o->n++], n);
    return 0;
}

/* Kineto polls in this process: KINETO_USE_DAEMON is set (Kineto takes
 * any value) and a loaded object named like torch's or Kineto's own
 * library defines libkineto_init (torch initialises Kineto's daemon
 * client at import when the variable is set). Looked at again only when
 * an object was loaded since. */
static int kineto_polls(void)
{
    static unsigned long long seen_adds = ~0ull;
    if (!getenv("KINETO_USE_DAEMON"))
        return 0;
    obj_names o;
    o.n = 0;
    o.adds = 0;
    dl_iterate_phdr(collect_obj, &o); /* no dlopen inside: the loader's lock */
    if (o.adds && o.adds == seen_adds)
        return 0;
    seen_adds = o.adds;
    for (int i = 0; i < o.n; i++) {
        void *h = dlopen(o.names[i], RTLD_LAZY | RTLD_NOLOAD);
        int found = h && dlsym(h, "libkineto_init") != NULL;
        if (h)
            dlclose(h);
        if (found) {
            act_log(ACT_LOG_INFO, "on-demand: Kineto polls the daemon in this process (%s, "
                    "KINETO_USE_DAEMON): it owns on-demand requests; actrace's poller stops "
                    "(actrace.torch.enable() puts actrace's plugins in Kineto's traces)",
                    o.names[i]);
            return 1;
        }
    }
    return 0;
}

static void *poller(void *arg)
{
    (void)arg;
    /* The first poll registers the process: after it has lived one poll
     * interval (od_first_ns; see the top). */
    int64_t next = act__clock_ns() + od_first_ns;
    while (!atomic_load(&od_exiting)) {
        int64_t now = act__clock_ns();
        int is_busy = busy();
        if (now >= next) {
            if (!is_busy && kineto_polls())
                break;
            if (od_fd < 0) {
                int fd = act__dyno_bind(od_name);
                if (fd < 0) {
                    act_log(ACT_LOG_WARN, "on-demand: cannot bind the endpoint %s: %s; no "
                            "polling", od_name, strerror(-fd));
                    return NULL;
                }
                od_fd = fd;
                atomic_store(&od_owner, (int)getpid());
            }
            send_poll(is_busy);
            next = now + od_poll_ns;
        }
        int64_t wait_ms = (next - now) / 1000000 + 1;
        if (is_busy && wait_ms > 20)
            wait_ms = 20; /* a window of ours is open: look at it often */
        act__dyno_msg m;
        int rc = 0;
        if (od_fd < 0)
            poll(NULL, 0, (int)wait_ms);
        else
            rc = act__dyno_recv(od_fd, (int)wait_ms, &m);
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
        check_iter_locked();
        if (od_session && window_done(od_session))
            finish_locked();
        pthread_mutex_unlock(&od_lock);
    }
    if (od_fd >= 0 && !atomic_load(&od_exiting)) {
        atomic_store(&od_owner, 0);
        act__dyno_unbind(od_fd, od_name);
        od_fd = -1;
    }
    return NULL;
}

/* An open window is written at exit (it is what the daemon asked for).
 * A write in progress on the poller is waited for, up to
 * ACT__OD_EXIT_WAIT_S; anything else holding the lock, 2 s. A trace given
 * up leaves no file: it was still unnamed. */
static void od_at_exit(void)
{
    atomic_store(&od_exiting, 1);
    int64_t t0 = act__clock_ns();
    int locked = 0;
    for (;;) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        if (pthread_mutex_timedlock(&od_lock, &ts) == 0) {
            locked = 1;
            break;
        }
        int64_t waited = act__clock_ns() - t0;
        if (waited > (int64_t)ACT__OD_EXIT_WAIT_S * 1000000000 ||
            (!atomic_load(&od_writing) && waited > 2 * (int64_t)1000000000))
            break;
    }
    if (locked) {
        if (od_session && atomic_load(&od_session->state) >= ACT__S_COLLECTING)
            finish_locked();
        pthread_mutex_unlock(&od_lock);
    } else {
        act_log(ACT_LOG_ERROR, "on-demand: the trace being written did not finish within "
                "%d s of exit: given up", ACT__OD_EXIT_WAIT_S);
        if (od_file.tmp[0] && od_file.dirfd >= 0)
            unlinkat(od_file.dirfd, od_file.tmp, 0);
    }
    /* The socket stays open (the poller may be in poll(2) on it) and goes
     * with the process; its file, in the directory mode, goes now. */
    struct sockaddr_un sa;
    socklen_t salen;
    if (atomic_load(&od_owner) == (int)getpid() && act__dyno_addr(od_name, &sa, &salen) == 0 && sa.sun_path[0])
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

/* The poller thread; it binds its endpoint itself before its first poll,
 * one poll interval from now. */
static int start_poller(void)
{
    od_poll_ns = poll_interval_ms() * 1000000;
    od_first_ns = od_poll_ns;
    od_start_timeout_ns = env_ms("ACTRACE_DAEMON_START_TIMEOUT_MS", 60000, 1, 86400000) * 1000000;
    find_pids();
    make_name();
    od_fd = -1;
    atomic_store(&od_owner, 0);
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
    atomic_store(&od_writing, 0);
    /* The parent's file: closed, never removed. */
    if (od_file.fd >= 0)
        close(od_file.fd);
    if (od_file.dirfd >= 0)
        close(od_file.dirfd);
    od_file.fd = od_file.dirfd = -1;
    od_file.tmp[0] = '\0';
    if (od_fd >= 0)
        close(od_fd); /* never unlink: the file is the parent's */
    od_fd = -1;
    atomic_store(&od_owner, 0);
    od_warned_sender = 0;
    /* Late: a child that execs (or exits) within one poll interval never
     * registers with the daemon nor leaves an endpoint behind. */
    if (!atomic_load(&od_exiting) && enabled())
        start_poller();
}

/* ---- ready at start ------------------------------------------------------- */

/* Put @p path first in the list variable @p var (':'-separated), once. */
static void env_prepend(const char *var, const char *path)
{
    const char *cur = getenv(var);
    size_t pl = strlen(path);
    for (const char *p = cur; p && *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == pl && memcmp(p, path, n) == 0)
            return;
        p = e ? e + 1 : p + n;
    }
    size_t n = pl + (cur ? strlen(cur) : 0) + 2;
    char *v = malloc(n);
    if (!v)
        return;
    snprintf(v, n, "%s%s%s", path, cur && *cur ? ":" : "", cur ? cur : "");
    setenv(var, v, 1);
    free(v);
}

/* A plugin file a runtime may load by itself: this user's or root's, and
 * writable by no one else (the loader checks more before it loads one). */
static int file_ok(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
           (st.st_uid == 0 || st.st_uid == geteuid()) && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

static void prepare_one(const char *entry, size_t len)
{
    char path[4096], real[4096];
    const char *dir = act__plugins_dir();
    if (len == 0 || len >= 1024)
        return;
    if (memchr(entry, '/', len))
        snprintf(path, sizeof path, "%.*s", (int)len, entry);
    else if (len > 3 && memcmp(entry + len - 3, ".so", 3) == 0)
        snprintf(path, sizeof path, "%s/%.*s", dir, (int)len, entry);
    else
        snprintf(path, sizeof path, "%s/%.*s.so", dir, (int)len, entry);
    if (!realpath(path, real) || !file_ok(real))
        return;
    const char *b = strrchr(real, '/');
    b = b ? b + 1 : real;
    if (strcmp(b, "opencl.so") == 0) {
        env_prepend("OPENCL_LAYERS", real);
        /* Queues the program creates before a window opens must profile
         * too, or their commands have no device times. */
        setenv("ACTRACE_OPENCL_PROFILE_QUEUES", "1", 0);
        act_log(ACT_LOG_DEBUG, "on-demand: OPENCL_LAYERS starts with %s", real);
    } else if (strcmp(b, "nvtx.so") == 0) {
        setenv("NVTX_INJECTION64_PATH", real, 0);
    }
}

static int prepare_visit(void *user, const char *key, const char *value)
{
    (void)user;
    if (strcmp(key, "PLUGINS") == 0)
        for (const char *p = value; *p;) {
            size_t n = strcspn(p, ",: \t");
            prepare_one(p, n);
            p += n;
            p += strspn(p, ",: \t");
        }
    return 0;
}

/* What the runtimes of the plugins a request's session would load read
 * at their first call (see the top): set now, before the program runs. */
static void prepare_runtimes(void)
{
    const char *env = secure_getenv("ACTRACE_PLUGINS");
    for (const char *p = env; p && *p;) {
        size_t n = strcspn(p, ":");
        prepare_one(p, n);
        p += n;
        p += *p == ':';
    }
    act_config *cfg = NULL;
    if (act_config_load_env(NULL, &cfg, NULL) == 0)
        act_config_foreach(cfg, prepare_visit, NULL);
    act_config_destroy(cfg);
    if (env_true("ACTRACE_DEFAULT_PLUGINS")) {
        prepare_one("opencl", 6);
        prepare_one("nvtx", 4);
    }
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((constructor))
#endif
static void od_init(void)
{
    if (!enabled())
        return;
    /* The actrace command never registers (it exports this symbol). */
    if (dlsym(RTLD_DEFAULT, "actrace_cli_never_polls"))
        return;
    prepare_runtimes();
    atomic_store(&act__step_hook, od_step);
    act__atfork_install(); /* the engine's fork handler runs first */
    pthread_atfork(NULL, NULL, od_atfork_child);
    start_poller();
}
