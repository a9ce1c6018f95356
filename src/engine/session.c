/* SPDX-License-Identifier: MIT */
/*
 * The session's recording state (DESIGN.md section 4): its options and
 * config, creating and freeing it (chunk memory, pool, slabs, devices,
 * series), the process-wide started session, fork handling, the clocks and
 * the counters that act_session_get_stats reads. What drives a session
 * (start, the collection window, stop, write, its plugins, the
 * auto-started session of `actrace record`) is the layer above, in
 * src/session/: the engine includes nothing of plugin/, writer/,
 * ondemand/ or session/ (tests/layering/check_layering.sh).
 *
 * States: CREATED -> ARMED (started, window not yet open) -> COLLECTING
 * (act__recording points here) -> DONE (window closed) -> STOPPED.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/frame.h"
#include "engine/spool.h"

void act__record_atfork_child(void);

_Atomic(act_session *) act__started; /* the process's started session */
unsigned act__fork_gen;
/* Even and never 0: bit 0 of a thread's cached generation is its
 * signal-safety guard (record.c). */
static _Atomic uint64_t next_gen = 2;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
/* act_step calls that may still use the session they loaded from
 * act__started (engine.h). */
_Atomic unsigned act__steps_in_flight;
/* The lazy start's (engine.h): set by session/autostart.c at load. */
act_session *(*act__wake_hook)(void);

/* ---- fork ----------------------------------------------------------------- */

/*
 * Every process-wide lock is held across fork() (taken in a fixed order in
 * prepare, released in the parent, re-initialised in the child), so a
 * child never inherits a lock that another thread of the parent held:
 * the type registry, the interned names, and the thread names. The
 * handlers are installed when the library is loaded (the constructor
 * below), not by the first session: act_name, act_thread_name and
 * act_activity_type_register work before any session exists.
 */
static void atfork_prepare(void)
{
    act__grace_atfork_prepare();
    act__types_atfork_prepare();
    act__strtab_atfork_prepare();
    act__names_atfork_prepare();
}

static void atfork_parent(void)
{
    act__names_atfork_parent();
    act__strtab_atfork_parent();
    act__types_atfork_parent();
    act__grace_atfork_parent();
}

static void atfork_child(void)
{
    act__names_atfork_child();
    act__strtab_atfork_child();
    act__types_atfork_child();
    /* The child owns a copy of the parent's memory: it must neither record
     * into the parent's session nor write it at exit. Start clean; the
     * new generation makes every inherited session (and plugin context)
     * refuse records, whoever still holds a pointer to one. */
    act__fork_gen++;
    atomic_store_explicit(&act__recording, NULL, memory_order_relaxed);
    atomic_store_explicit(&act__started, NULL, memory_order_relaxed);
    atomic_store_explicit(&act__steps_in_flight, 0, memory_order_relaxed);
    act__record_atfork_child();
    act__grace_atfork_child();
}

static void install_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void act__atfork_install(void)
{
    pthread_once(&atfork_once, install_atfork);
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((constructor)) static void act_lib_init(void)
{
    act__grace_init();
    act__atfork_install();
}
#endif

/* ---- options -------------------------------------------------------------- */

void act_session_opts_init(act_session_opts *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
}

/* Copy the caller's opts, reading only the fields its struct_size covers
 * and refusing a larger struct whose unknown tail is not zero. */
int act__session_opts_read(const act_session_opts *in, act_session_opts *out)
{
    act_session_opts_init(out);
    if (!in)
        return 0;
    size_t n = in->struct_size;
    if (n < offsetof(act_session_opts, config))
        return ACT_EINVAL;
    if (n > sizeof *out) {
        const unsigned char *tail = (const unsigned char *)in + sizeof *out;
        for (size_t i = 0; i < n - sizeof *out; i++)
            if (tail[i])
                return ACT_EINVAL;
        n = sizeof *out;
    }
    memcpy(out, in, n);
    out->struct_size = sizeof *out;
    return 0;
}

/* Which window keys were set explicitly (not defaults). */
typedef struct explicit_keys {
    int warmup, duration, iterations, start_iter, types, start_time;
} explicit_keys;

static int visit_key(void *user, const char *key, const char *value)
{
    explicit_keys *e = user;
    (void)value;
    if (strcmp(key, "ACTIVITIES_WARMUP_PERIOD_SECS") == 0)
        e->warmup = 1;
    else if (strcmp(key, "ACTIVITIES_DURATION_SECS") == 0 ||
             strcmp(key, "ACTIVITIES_DURATION_MSECS") == 0)
        e->duration = 1;
    else if (strcmp(key, "ACTIVITIES_ITERATIONS") == 0)
        e->iterations = 1;
    else if (strcmp(key, "PROFILE_START_ITERATION") == 0)
        e->start_iter = 1;
    else if (strcmp(key, "ACTIVITY_TYPES") == 0)
        e->types = 1;
    else if (strcmp(key, "PROFILE_START_TIME") == 0)
        e->start_time = 1;
    return 0;
}

int act__prealloc_small;
#define TOP_WARM ((uint64_t)2 << 20)

static int visit_prealloc(void *user, const char *key, const char *value)
{
    (void)value;
    if (strcmp(key, "BUFFER_PREALLOC_MB") == 0)
        *(int *)user = 1;
    return 0;
}

static int64_t cfg_int(const act_config *c, const char *key, int64_t dflt)
{
    int64_t v;
    return act_config_get_int(c, key, &v) == 0 ? v : dflt;
}

static int apply_config(act_session *s)
{
    act_config_activity_types(s->config, &s->types);
    s->builtin_mask = 0;
    for (int t = 0; t <= ACT_ACTIVITY_TYPE_MAX_BUILTIN; t++)
        if (act_activity_set_has(&s->types, (act_activity_type)t))
            s->builtin_mask |= (uint64_t)1 << t;
    int64_t mb = cfg_int(s->config, "MAX_BUFFER_SIZE_MB", 256);
    if (mb < 1)
        mb = 1;
    s->max_bytes = (uint64_t)mb << 20;
    int64_t smb = cfg_int(s->config, "SPOOL_MAX_MB", 8192);
    s->spool_max_bytes = (uint64_t)(smb < 1 ? 1 : smb) << 20;
    const char *cat = act_config_get_str(s->config, "TRACE_CATEGORIES");
    s->categories_generic = cat && strcmp(cat, "generic") == 0;

    explicit_keys e = {0, 0, 0, 0, 0, 0};
    act_config_foreach(s->config, visit_key, &e);
    int enabled = 1;
    s->disabled = act_config_get_bool(s->config, "ACTIVITIES_ENABLED", &enabled) == 0 && !enabled;
    /* PROFILE_START_TIME (ms since the Unix epoch; 0 is "not set"): the
     * window opens then (act_session_start computes the wait). */
    int64_t start_ms = e.start_time ? cfg_int(s->config, "PROFILE_START_TIME", 0) : 0;
    s->profile_start_unix_ns = start_ms <= 0 ? 0
                               : start_ms > INT64_MAX / 1000000 ? INT64_MAX
                                                                : start_ms * 1000000;
    if (s->profile_start_unix_ns && (e.iterations || e.start_iter)) {
        /* As in Kineto, an iteration window takes precedence. */
        act_log(ACT_LOG_WARN, "config: PROFILE_START_TIME is ignored: the iteration "
                "keys (PROFILE_START_ITERATION, ACTIVITIES_ITERATIONS) start the window");
        s->profile_start_unix_ns = 0;
    }
    /* A config cannot name a type before it is registered: registered
     * types are recorded unless ACTIVITY_TYPES was set (the plugin host
     * applies the same rule). */
    s->custom_types_default = !e.types;
    s->warmup_ns = s->duration_ns = -1;
    s->start_iter = s->iterations = -1;
    if (e.iterations || e.start_iter) {
        s->iterations = cfg_int(s->config, "ACTIVITIES_ITERATIONS", 1);
        if (s->iterations < 1)
            s->iterations = 1;
        if (e.start_iter) {
            int64_t start = cfg_int(s->config, "PROFILE_START_ITERATION", 0);
            int64_t round = cfg_int(s->config, "PROFILE_START_ITERATION_ROUNDUP", 1);
            if (round > 1)
                start = (start + round - 1) / round * round;
            s->start_iter = start;
        } else {
            /* Relative to the step count at start: resolved in start(). */
            s->start_iter = -2 - cfg_int(s->config, "ACTIVITIES_WARMUP_ITERATIONS", 0);
        }
    } else if (s->profile_start_unix_ns) {
        /* Opens at the start time (no warmup: the time is the start). */
        s->warmup_ns = 0;
        s->duration_ns = e.duration ? cfg_int(s->config, "ACTIVITIES_DURATION_MSECS", 500) * 1000000 : -1;
    } else if (e.warmup || e.duration) {
        s->warmup_ns = e.warmup ? cfg_int(s->config, "ACTIVITIES_WARMUP_PERIOD_SECS", 0) * 1000000000 : 0;
        s->duration_ns = e.duration ? cfg_int(s->config, "ACTIVITIES_DURATION_MSECS", 500) * 1000000 : -1;
    }
    return 0;
}

void act__env_scan(const char *const *names, size_t n, const char **out)
{
    /* A variable whose first byte starts none of the names is passed over
     * at once (most of them). */
    uint64_t first[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        out[i] = NULL;
        unsigned char c = (unsigned char)names[i][0];
        first[c >> 6] |= (uint64_t)1 << (c & 63);
    }
    size_t found = n;
    for (char **e = environ; e && *e; e++) {
        const char *v = *e;
        unsigned char c = (unsigned char)v[0];
        if (!(first[c >> 6] >> (c & 63) & 1))
            continue;
        for (size_t i = 0; i < n; i++) {
            const char *a = names[i], *b = v;
            if (out[i] || *a != *b)
                continue;
            while (*a && *a == *b) {
                a++;
                b++;
            }
            if (!*a && *b == '=') {
                out[i] = b + 1;
                if (found == n)
                    found = i;
                break;
            }
        }
    }
    /* Secure execution (set-id): secure_getenv finds nothing, and neither
     * does this (asked of a name found, not of the auxiliary vector: one
     * function fewer to bind at load). */
    if (found < n && !secure_getenv(names[found]))
        for (size_t i = 0; i < n; i++)
            out[i] = NULL;
}

/* The first of @p vals (n) that is a decimal integer >= 0. */
static int env_int(const char *const *vals, size_t n, int64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        const char *e = vals[i];
        if (e && *e) {
            char *end;
            long long v = strtoll(e, &end, 10);
            if (*end == '\0' && v >= 0) {
                *out = v;
                return 1;
            }
        }
    }
    return 0;
}

void act__dist_env(act__dist *d)
{
    /* Three candidates each for the rank, the world size and the local
     * rank, in order of preference, and the backend: one pass (every
     * process under record reads them at its start). */
    static const char *const names[] = {
        "RANK",       "SLURM_PROCID",  "OMPI_COMM_WORLD_RANK",
        "WORLD_SIZE", "SLURM_NTASKS",  "OMPI_COMM_WORLD_SIZE",
        "LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
        "ACTRACE_DIST_BACKEND"};
    const char *v[10];
    act__env_scan(names, 10, v);
    d->rank = d->local = 0;
    d->world = 1;
    d->has_rank = env_int(v, 3, &d->rank);
    d->has_world = env_int(v + 3, 3, &d->world);
    d->has_local = env_int(v + 6, 3, &d->local);
    const char *b = v[9] ? v[9] : "";
    size_t bl = 0;
    while (bl < sizeof d->backend - 1 && b[bl])
        bl++;
    memcpy(d->backend, b, bl);
    d->backend[bl] = '\0';
}

size_t act__dist_spool(char *buf, size_t cap)
{
    act__dist d;
    act__dist_env(&d);
    int64_t v[6] = {d.has_rank, d.rank, d.has_world, d.world, d.has_local, d.local};
    const char *b = d.backend;
    size_t bl = strlen(b);
    if (buf)
        return act__spool_encode(buf, cap, ACT__SP_DIST, v, 6, &b, &bl, 1);
    act__spool_log(ACT__SP_DIST, v, 6, &b, &bl, 1);
    return 0;
}

/* Field 22 of /proc/self/stat: when this process started, in clock ticks
 * after boot; 0 if it cannot be read. Only where there is no pidfs: in a
 * new process this read costs about twice what pidfs does (its /proc entry
 * is made then, and the stat file's text is dear to make). */
static int64_t proc_start_read(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* The last ')': the comm may hold anything. By hand, not strrchr, and
     * within the first 64 bytes: "PID (COMM)" is at most 10 + 2 + 15 + 1
     * bytes, and no field after it holds a ')'. */
    const char *p = NULL;
    for (ssize_t i = n < 64 ? n : 64; i-- > 0;)
        if (buf[i] == ')') {
            p = buf + i;
            break;
        }
    if (!p)
        return 0;
    p++;
    /* Field 3 (state) follows; field 22 is 19 fields further. */
    for (int f = 3; f < 22 && *p; f++) {
        while (*p == ' ')
            p++;
        while (*p && *p != ' ')
            p++;
    }
    char *end;
    long long v = strtoll(p, &end, 10);
    return v > 0 && *end == ' ' ? v : 0;
}

#ifndef PIDFS_MAGIC
#define PIDFS_MAGIC 0x50494446
#endif

/* The pidfs inode of this process's pid: pidfd_open, fstatfs (pidfs, not
 * the anonymous inode older kernels give every pidfd), fstat, close, 8-9
 * us in a new process on our VMs; 0 where there is none. */
static int64_t proc_pidfs_ino(pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        return 0;
    struct statfs sf;
    struct stat st;
    int64_t ino = 0;
    if (fstatfs(fd, &sf) == 0 && (unsigned long)sf.f_type == PIDFS_MAGIC && fstat(fd, &st) == 0 &&
        st.st_ino > 0 && (uint64_t)st.st_ino < (uint64_t)ACT__PROC_ID_PIDFS)
        ino = (int64_t)st.st_ino;
    close(fd);
    return ino;
#else
    (void)pid;
    return 0;
#endif
}

static _Atomic int64_t proc_id;
static _Atomic int32_t proc_id_pid;

int64_t act__proc_id(void)
{
    int32_t pid = (int32_t)getpid();
    if (atomic_load_explicit(&proc_id_pid, memory_order_acquire) == pid)
        return atomic_load_explicit(&proc_id, memory_order_relaxed);
    /* Threads that race store the same value. */
    int64_t ino = proc_pidfs_ino((pid_t)pid);
    int64_t v = ino > 0 ? ACT__PROC_ID_PIDFS | ino : proc_start_read();
    if (v > 0) {
        atomic_store_explicit(&proc_id, v, memory_order_relaxed);
        atomic_store_explicit(&proc_id_pid, pid, memory_order_release);
    }
    return v;
}

int act__session_create(const act_session_opts *opts, act_session **out)
{
    const act_session_opts o = *opts;
    int rc = 0;
    act__atfork_install(); /* done at load already; harmless again */

    act_session *s = calloc(1, sizeof *s);
    if (!s)
        return ACT_ENOMEM;
    s->gen = atomic_fetch_add(&next_gen, 2);
    s->tick_gen = UINT64_MAX;
    s->fork_gen = act__fork_gen;
    s->tmp_fd = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->window_lock, NULL);
    pthread_mutex_init(&s->ready_lock, NULL);
    pthread_mutex_init(&s->spill_lock, NULL);
    pthread_mutex_init(&s->cal_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->timer_cond, &ca);
    pthread_cond_init(&s->tick_done, &ca);
    pthread_mutex_init(&s->tick_lock, NULL);
    atomic_init(&s->tick_first, INT64_MAX);
    pthread_condattr_destroy(&ca);
    atomic_init(&s->state, ACT__S_CREATED);
    act__sample_clock_offset(s); /* again at start; this serves a never-started write */

    act_parse_error err;
    memset(&err, 0, sizeof err);
    /* Unknown keys are warned about once the plugins are loaded, for those
     * no plugin reads (act_session_create). */
    act_config_parse_opts po;
    act_config_parse_opts_init(&po);
    po.flags = ACT_CONFIG_QUIET_UNKNOWN;
    if (o.config)
        rc = act_config_dup(o.config, &s->config);
    else
        rc = act_config_load_env(&po, &s->config, &err);
    if (rc == 0 && o.config_text)
        rc = act_config_parse(o.config_text, o.config_text_len, &po,
                              &s->config, &err);
    if (rc != 0) {
        if (err.code)
            act_log(ACT_LOG_ERROR, "config: line %d, column %d: %s",
                    err.line, err.column, err.message);
        act__session_free(s);
        return rc == ACT_ENOMEM ? ACT_ENOMEM : ACT_EINVAL;
    }
    apply_config(s);
    /* Under `actrace record`, chunk memory is the process's spool. */
    s->spooled = act__spool_take();
    /* Scoped spans and instants on the counter (clock.c), unless the
     * machine's counter cannot stand for CLOCK_MONOTONIC, a config or
     * ACTRACE_CLOCK=monotonic says no, or the session is spooled (a
     * rebuild after a crash reads its records as they are). */
    {
        const char *hc = act_config_get_str(s->config, "HOST_CLOCK");
        const char *env = secure_getenv("ACTRACE_CLOCK");
        int forced = (hc && strcmp(hc, "monotonic") == 0) ||
                     (env && strcmp(env, "monotonic") == 0);
        s->use_ticks = ACT__HAVE_TICKS && !forced && !s->spooled && act__ticks_usable();
        act__cal_init(s);
        s->tick_gen = s->use_ticks ? s->gen : UINT64_MAX;
    }
    /* Elsewhere, what the drain archives past the RAM budget goes to an
     * unlinked temporary file (thread.c), made when first needed. */
    if (!s->spooled) {
        const char *sd = act_config_get_str(s->config, "SPILL_DIR");
        if (!sd || strcmp(sd, "none") != 0) {
            const char *d = sd && *sd ? sd : secure_getenv("TMPDIR");
            s->tmp_dir = strdup(d && *d ? d : "/tmp");
            s->tmp_ok = s->tmp_dir != NULL;
        }
    }
    s->proc_start = act__proc_id();
    /* Pre-fault the first buffers so that recording does not page-fault. */
    int explicit_pre = 0;
    act_config_foreach(s->config, visit_prealloc, &explicit_pre);
    int64_t pre = cfg_int(s->config, "BUFFER_PREALLOC_MB", 16);
    if (act__prealloc_small && !explicit_pre && pre > 1)
        pre = 1;
    if (act__prealloc_small && !explicit_pre)
        s->prefault_after = (uint64_t)512 << 10;
    /* Standard chunks come from a recycled pool (thread.c), its first
     * BUFFER_PREALLOC_MB written now. Under record the pool is part of the
     * spool, at most half the RAM budget (the archive it drains to needs
     * room there too); a process record did not start itself warms none
     * of it until it records (the drain warms it ahead from then on). */
    int64_t pool_mb = cfg_int(s->config, "BUFFER_POOL_MB", 128);
    if (pool_mb > 0) {
        uint64_t pb = (uint64_t)pool_mb << 20, warm = pre > 0 ? (uint64_t)pre << 20 : 0;
        uint64_t pool_max = s->spooled ? s->max_bytes / 2 : s->max_bytes;
        if (pb > pool_max)
            pb = pool_max;
        if (s->spooled && act__prealloc_small && !explicit_pre)
            warm = 0;
        /* The program record started: 2 MB now, the rest warmed ahead by
         * the helper once it has recorded 512 KB. Writing all of
         * BUFFER_PREALLOC_MB (and reserving it in the spool) cost every
         * record run about 7 ms before the program's first instruction,
         * most of what `record -- make` or a shell script paid there
         * (bench/record), for a process that may record nothing. */
        if (s->spooled && !act__prealloc_small && !explicit_pre && warm > TOP_WARM) {
            warm = TOP_WARM;
            s->prefault_after = (uint64_t)512 << 10;
        }
        if (warm > pb)
            warm = pb;
        const char *pol = act_config_get_str(s->config, "BUFFER_FULL_POLICY");
        /* The slabs then only hold threads' small first chunks: 1 MB
         * of them pre-faulted (51 threads' first two chunks). */
        int policy = !pol || strcmp(pol, "grow") == 0 ? ACT__POOL_GROW
                     : strcmp(pol, "wait") == 0   ? ACT__POOL_WAIT
                                                  : ACT__POOL_DROP;
        if (act__pool_create(s, (size_t)pb, (size_t)warm, policy) == 0 &&
            pre > 1)
            pre = 1;
    }
    if (pre > 0) {
        uint64_t bytes = (uint64_t)pre << 20;
        if (bytes > s->max_bytes)
            bytes = s->max_bytes;
        if (act__slab_prealloc(s, (size_t)bytes) != 0)
            act_log(ACT_LOG_WARN, "cannot pre-allocate %" PRId64 " MB of trace buffers", pre);
    }
    /* torch_kineto.cpp creates its sessions through the public API,
     * named as torch.profiler's trace: that name marks the torch owner
     * (it only names whose session a refusal was for). */
    s->owner = o.trace_name && strcmp(o.trace_name, "torch.profiler") == 0 ? ACT__OWNER_TORCH
                                                                            : ACT__OWNER_PROGRAM;
    if (o.trace_name && !(s->trace_name = strdup(o.trace_name))) {
        act__session_free(s);
        return ACT_ENOMEM;
    }
    s->sources[0].name = strdup("host");
    s->sources[0].backend = strdup("");
    s->nsources = 1;
    *out = s;
    return 0;
}

/* ---- clocks --------------------------------------------------------------- */

void act__sample_clock_offset(act_session *s)
{
    /* Bracket the realtime read with two monotonic reads and take the
     * midpoint, so the offset error is at most half the bracket. */
    struct timespec rt;
    int64_t m0 = act__clock_ns();
    clock_gettime(CLOCK_REALTIME, &rt);
    int64_t m1 = act__clock_ns();
    int64_t unix_ns = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
    s->mono_to_unix_ns = unix_ns - (m0 + (m1 - m0) / 2);
}

void act__session_free(act_session *s)
{
    if (!s)
        return;
    act__prefault_stop(s);
    act__pool_forget(s); /* no thread-exit hook touches it from now on */
    if (s->helper_stuck) {
        /* The helper may still return from a plugin's tick into it: kept,
         * and reachable (a leak checker does not report it). */
        static act_session *stuck;
        static pthread_mutex_t stuck_lock = PTHREAD_MUTEX_INITIALIZER;
        pthread_mutex_lock(&stuck_lock);
        s->stuck_next = stuck;
        stuck = s;
        pthread_mutex_unlock(&stuck_lock);
        return;
    }
    for (act__thread *t = s->threads, *nt; t; t = nt) {
        nt = t->next;
        for (act__chunk *c = t->head, *nc; c; c = nc) {
            nc = atomic_load_explicit(&c->next, memory_order_relaxed);
            if (c->heap == 1)
                free(c);
            else if (c->heap == 2)
                munmap(c, c->size);
        }
        free(t->pins);
        free(t->pins_next);
        if (!t->in_spool)
            free(t);
    }
    for (size_t i = 0; i < s->nseries; i++) {
        free(s->series[i]->track);
        free(s->series[i]->series);
        free(s->series[i]->unit);
        free(s->series[i]);
    }
    act__slabs_free(s);
    free(s->tmp_dir);
    free(s->series);
    free(s->series_hash);
    for (size_t i = 0; i < s->ndevices; i++) {
        act__device *d = &s->devices[i];
        free(d->name);
        free(d->vendor);
        for (size_t j = 0; j < d->nprops; j++) {
            free((char *)d->props[j].key);
            if (d->props[j].kind == ACT__V_STR)
                free((char *)d->props[j].v.s.p);
        }
        free(d->props);
        for (size_t j = 0; j < d->nstreams; j++)
            free(d->streams[j].name);
        free(d->streams);
    }
    free(s->devices);
    for (size_t i = 0; i < s->nsources; i++) {
        free(s->sources[i].name);
        free(s->sources[i].backend);
    }
    act_config_destroy(s->config);
    free(s->trace_name);
    pthread_cond_destroy(&s->timer_cond);
    pthread_cond_destroy(&s->tick_done);
    pthread_mutex_destroy(&s->tick_lock);
    act__cal_free(s);
    pthread_mutex_destroy(&s->window_lock);
    pthread_mutex_destroy(&s->ready_lock);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

const char *act_session_errmsg(const act_session *s)
{
    return s ? s->errmsg : "";
}

const act_config *act_session_config(const act_session *s)
{
    return s ? s->config : NULL;
}

act_session *act_session_active(void)
{
    /* A caller that asks for the session means to use it: a lazily
     * started one (session/autostart.c) starts now. */
    act_session *s = atomic_load(&act__started);
    if (!s && atomic_load_explicit(&act__recording, memory_order_acquire))
        s = act__lazy_wake() ? atomic_load(&act__started) : NULL;
    return s;
}

_Atomic int act__started_owner;

const char *act__owner_name(int owner)
{
    switch (owner) {
    case ACT__OWNER_RECORD:
        return "record";
    case ACT__OWNER_ONDEMAND:
        return "on-demand";
    case ACT__OWNER_TORCH:
        return "torch";
    default:
        return "program";
    }
}

act_session *act__session_started(void)
{
    return atomic_load(&act__started);
}

int act_session_get_stats(const act_session *s, act_session_stats *out)
{
    if (!s || !out)
        return ACT_EINVAL;
    act_session_stats st;
    memset(&st, 0, sizeof st);
    act_session *ms = (act_session *)s;
    /* Marked busy while the lock is held: a signal handler that records
     * on this thread meanwhile is counted (reentrant), never waits for
     * the lock its own thread holds. */
    int busy = act__rec_enter();
    pthread_mutex_lock(&ms->lock);
    for (act__thread *t = s->threads; t; t = t->next) {
        for (act__chunk *c = t->head; c; c = atomic_load_explicit(&c->next, memory_order_acquire)) {
            if (act__chunk_framed(c)) {
                st.recorded += act__fmeta_of(c)->events;
                st.args_recorded += act__fmeta_of(c)->args;
                continue;
            }
            uint32_t n = atomic_load_explicit(&c->used, memory_order_acquire);
            for (uint32_t i = 0; i < n; i++) {
                const act__rec *r = &c->recs[i];
                if (r->kind == ACT__R_ARG)
                    st.args_recorded += 1 + ((atomic_load_explicit(&((act__rec *)r)->t1, memory_order_acquire) &
                                              ACT__ARG2_PRESENT) != 0);
                else
                    st.recorded += r->kind != ACT__R_AUX_DEV;
            }
        }
        for (int r = 0; r < ACT__DROP_NREASONS; r++)
            st.dropped += atomic_load_explicit(&t->dropped_reason[r], memory_order_relaxed);
        st.args_dropped += atomic_load_explicit(&t->args_dropped[0], memory_order_relaxed) +
                           atomic_load_explicit(&t->args_dropped[1], memory_order_relaxed);
    }
    pthread_mutex_unlock(&ms->lock);
    if (busy)
        act__rec_leave();
    st.dropped += atomic_load(&ms->dropped_reentrant);
    st.args_dropped += atomic_load(&ms->args_dropped_reentrant);
    st.bytes = atomic_load(&s->bytes);
    st.spilled = atomic_load(&s->spilled);
    size_t n = out->struct_size && out->struct_size < sizeof st ? out->struct_size : sizeof st;
    st.struct_size = (uint32_t)n;
    memcpy(out, &st, n);
    return 0;
}
