/* SPDX-License-Identifier: MIT */
/*
 * The host plugin: host performance counters of the traced process,
 * sampled on a thread of its own ("actrace-host") every
 * HOST_COUNTER_INTERVAL_MSECS and handed to actrace as counter tracks on
 * the host process (ACT_PLUGIN_HOST_DEVICE).
 *
 * Counters (the HOST_COUNTERS vocabulary; docs/host-plugin.md has units,
 * sources and limits):
 *   cpu               user and system CPU in % of one core (getrusage)
 *   memory            resident set size in bytes (/proc/self/statm)
 *   page_faults       minor and major faults per second (getrusage)
 *   context_switches  voluntary and involuntary switches per second
 *   cycles            CPU cycles per second (perf_event_open, hardware)
 *   instructions      instructions per second (perf_event_open, hardware)
 *   task_clock        task clock, ns of CPU per second (perf, software)
 * The first four are the default set. A perf counter the kernel does not
 * offer is logged once and left out; the others keep working.
 *
 * Rates are deltas over one interval divided by its length, stamped at
 * the interval's start (a counter holds its value until the next sample,
 * so each value is drawn over the interval it describes). The resident
 * size is an instant value, stamped when it was read.
 *
 * Where it samples: on the host's helper thread, through the host's tick
 * service (act_plugin_host.every, ABI 1.2), so a recording process has no
 * thread of this plugin's; with an older host, or when the host has no
 * helper to offer (every returns an error), on a thread of its own
 * ("actrace-host"), as before.
 *
 * Threads: the sampler (the tick, or the thread) owns the sampling state
 * while it runs; start and stop own it before the first tick and after
 * the last (the tick is cancelled, and cancel waits for one that runs,
 * before stop takes the last sample). The buffered samples are shared
 * with flush() under a mutex; start/stop/flush/finalize may come in any
 * order (each checks what is running).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <actrace/plugin.h>

#include "../lazy_wake.h"
#include "../plugin_util.h"

/* ---- the vocabulary ------------------------------------------------------ */

enum {
    HC_CPU,
    HC_MEMORY,
    HC_PAGE_FAULTS,
    HC_CTXSW,
    HC_CYCLES,
    HC_INSTRUCTIONS,
    HC_TASK_CLOCK,
    HC_NCOUNTERS
};

#define HC_MAX_SERIES 2 /* series per counter */

typedef struct hc_def {
    const char *name;  /* HOST_COUNTERS name, also the track name */
    int is_default;    /* in the default set */
    int perf;          /* 1: perf_event_open */
    uint32_t perf_type;
    uint64_t perf_config;
    const char *series[HC_MAX_SERIES]; /* NULL-terminated */
    const char *unit;
} hc_def;

static const hc_def hc_defs[HC_NCOUNTERS] = {
    [HC_CPU] = {"cpu", 1, 0, 0, 0, {"user", "system"}, "%"},
    [HC_MEMORY] = {"memory", 1, 0, 0, 0, {"rss_bytes", NULL}, "bytes"},
    [HC_PAGE_FAULTS] = {"page_faults", 1, 0, 0, 0, {"minor", "major"},
                        "faults/s"},
    [HC_CTXSW] = {"context_switches", 1, 0, 0, 0,
                  {"voluntary", "involuntary"}, "switches/s"},
    [HC_CYCLES] = {"cycles", 0, 1, PERF_TYPE_HARDWARE,
                   PERF_COUNT_HW_CPU_CYCLES, {"cycles", NULL}, "cycles/s"},
    [HC_INSTRUCTIONS] = {"instructions", 0, 1, PERF_TYPE_HARDWARE,
                         PERF_COUNT_HW_INSTRUCTIONS, {"instructions", NULL},
                         "instructions/s"},
    [HC_TASK_CLOCK] = {"task_clock", 0, 1, PERF_TYPE_SOFTWARE,
                       PERF_COUNT_SW_TASK_CLOCK, {"task_clock", NULL},
                       "ns/s"},
};

#define HC_VALID_NAMES                                                         \
    "cpu, memory, page_faults, context_switches, cycles, instructions, "       \
    "task_clock"

/* Samples buffered per series before a batch goes to the host. */
#define HC_BATCH 64
/* Threads a perf counter opens a descriptor for at start. */
#define HC_MAX_THREADS 1024
#define HC_DEFAULT_INTERVAL_MS 100
#define HC_MAX_INTERVAL_MS 3600000L

/* One perf counter: a descriptor per thread that existed at start (each
 * with inherit=1, so the threads they create later are counted too). */
typedef struct hc_perf {
    int *fds;
    size_t nfds;
    int exclude_kernel; /* what the probe at init needed */
} hc_perf;

typedef struct hc_series {
    uint32_t index; /* from add_counter */
    act_plugin_sample buf[HC_BATCH];
    uint32_t n;
} hc_series;

/* Raw readings at one instant. */
typedef struct hc_snap {
    int64_t ts;        /* host clock */
    int64_t user_ns, sys_ns;
    int64_t minflt, majflt, nvcsw, nivcsw;
    double perf[HC_NCOUNTERS]; /* summed, multiplexing-scaled */
} hc_snap;

typedef struct host_plugin {
    const act_plugin_host *host;
    long interval_ms;
    int enabled[HC_NCOUNTERS];
    hc_series series[HC_NCOUNTERS][HC_MAX_SERIES];
    hc_perf perf[HC_NCOUNTERS];
    long page_size;

    /* The sampling state, owned by the sampler (see Threads above). */
    int statm_fd;
    hc_snap snaps[2];
    int cur;
    uint32_t tick_id; /* from host->every; 0: no tick registered */
    atomic_int tick_ready; /* the start sample is taken: ticks sample */

    pthread_mutex_t lock; /* guards everything below and series[].buf */
    pthread_cond_t wake;
    pthread_t thread;
    int thread_live;  /* created and not joined */
    int stop_req;     /* ask the sampler to take its last sample and exit */
    int discard;      /* finalize: exit without sampling or emitting */
    int started;      /* the start sample was handed to the host */
} host_plugin;

/* ---- small helpers ------------------------------------------------------- */

static int64_t tv_ns(struct timeval tv)
{
    return (int64_t)tv.tv_sec * 1000000000 + (int64_t)tv.tv_usec * 1000;
}

/* ---- perf_event_open ------------------------------------------------------ */

static int perf_open(const hc_def *d, pid_t tid, int exclude_kernel)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = d->perf_type;
    a.config = d->perf_config;
    a.inherit = 1;
    a.exclude_kernel = exclude_kernel ? 1 : 0;
    a.exclude_hv = exclude_kernel ? 1 : 0;
    a.read_format =
        PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1,
                        PERF_FLAG_FD_CLOEXEC);
}

/* At init: can this counter be opened at all? Tries counting kernel time
 * too, then user space only (what perf_event_paranoid >= 2 allows).
 * Returns 0, or the errno of the failure. */
static int perf_probe(host_plugin *hp, int c)
{
    int fd = perf_open(&hc_defs[c], 0, 0);
    int ek = 0;
    if (fd < 0 && (errno == EACCES || errno == EPERM)) {
        fd = perf_open(&hc_defs[c], 0, 1);
        ek = 1;
    }
    if (fd < 0)
        return errno ? errno : EINVAL;
    close(fd);
    hp->perf[c].exclude_kernel = ek;
    return 0;
}

/* Opens one descriptor per thread of the process but @p self (the sampler
 * thread of our own; 0: none is left out). Threads created later by those
 * threads are inherited. */
static void perf_open_all(host_plugin *hp, pid_t self)
{
    int any = 0;
    for (int c = 0; c < HC_NCOUNTERS; c++)
        any |= hp->enabled[c] && hc_defs[c].perf;
    if (!any)
        return;
    for (int c = 0; c < HC_NCOUNTERS; c++) {
        if (!hp->enabled[c] || !hc_defs[c].perf)
            continue;
        hp->perf[c].fds = malloc(HC_MAX_THREADS * sizeof(int));
        hp->perf[c].nfds = 0;
    }
    DIR *dir = opendir("/proc/self/task");
    if (!dir) {
        plugin_log(hp->host, ACT_PLUGIN_LOG_WARN,
                   "cannot list /proc/self/task (%s): perf counters cover no "
                   "thread", strerror(errno));
        return;
    }
    int truncated = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (*end || tid <= 0 || tid == self)
            continue;
        for (int c = 0; c < HC_NCOUNTERS; c++) {
            hc_perf *p = &hp->perf[c];
            if (!hp->enabled[c] || !hc_defs[c].perf || !p->fds)
                continue;
            if (p->nfds == HC_MAX_THREADS) {
                truncated = 1;
                continue;
            }
            int fd = perf_open(&hc_defs[c], (pid_t)tid, p->exclude_kernel);
            if (fd >= 0)
                p->fds[p->nfds++] = fd;
            /* else: the thread exited meanwhile (ESRCH), or a limit on
             * descriptors; its time is simply not counted. */
        }
    }
    closedir(dir);
    if (truncated)
        plugin_log(hp->host, ACT_PLUGIN_LOG_WARN,
                   "more than %d threads: perf counters cover the first %d",
                   HC_MAX_THREADS, HC_MAX_THREADS);
}

static void perf_close_all(host_plugin *hp)
{
    for (int c = 0; c < HC_NCOUNTERS; c++) {
        hc_perf *p = &hp->perf[c];
        for (size_t i = 0; i < p->nfds; i++)
            close(p->fds[i]);
        free(p->fds);
        p->fds = NULL;
        p->nfds = 0;
    }
}

/* Sum over the descriptors, each scaled for multiplexing. A thread that
 * exited keeps its final count, so the sum never goes down. */
static double perf_read(const hc_perf *p)
{
    double sum = 0;
    for (size_t i = 0; i < p->nfds; i++) {
        uint64_t v[3];
        if (read(p->fds[i], v, sizeof v) != (ssize_t)sizeof v)
            continue;
        if (v[2] == 0)
            continue; /* never scheduled on the PMU */
        sum += v[2] == v[1] ? (double)v[0]
                            : (double)v[0] * ((double)v[1] / (double)v[2]);
    }
    return sum;
}

/* ---- sampling -------------------------------------------------------------- */

static void snap_take(host_plugin *hp, hc_snap *s)
{
    struct rusage ru;
    memset(s, 0, sizeof *s);
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        s->user_ns = tv_ns(ru.ru_utime);
        s->sys_ns = tv_ns(ru.ru_stime);
        s->minflt = ru.ru_minflt;
        s->majflt = ru.ru_majflt;
        s->nvcsw = ru.ru_nvcsw;
        s->nivcsw = ru.ru_nivcsw;
    }
    for (int c = 0; c < HC_NCOUNTERS; c++)
        if (hp->enabled[c] && hc_defs[c].perf)
            s->perf[c] = perf_read(&hp->perf[c]);
    s->ts = hp->host->now_ns(hp->host->ctx);
}

/* Resident set size in bytes, or -1. Reads the second field of statm. */
static double rss_bytes(host_plugin *hp, int fd)
{
    char buf[128];
    if (fd < 0)
        return -1;
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *p = buf, *end;
    strtoull(p, &end, 10); /* size */
    if (end == p)
        return -1;
    p = end;
    unsigned long long res = strtoull(p, &end, 10);
    if (end == p)
        return -1;
    return (double)res * (double)hp->page_size;
}

/* Hands one series' buffered samples to the host. Caller holds the lock. */
static void series_emit(host_plugin *hp, hc_series *s)
{
    if (s->n) {
        hp->host->emit_samples(hp->host->ctx, s->index, s->buf, s->n);
        s->n = 0;
    }
}

/* Buffers one sample (a batch goes out when the buffer is full). Caller
 * holds the lock. Non-finite values are skipped. */
static void series_add(host_plugin *hp, int c, int k, int64_t ts, double v)
{
    if (!isfinite(v))
        return;
    hc_series *s = &hp->series[c][k];
    if (s->n == HC_BATCH)
        series_emit(hp, s);
    act_plugin_sample *sm = &s->buf[s->n++];
    memset(sm, 0, sizeof *sm);
    sm->struct_size = sizeof *sm;
    sm->ts_ns = ts;
    sm->value = v;
}

static double rate(int64_t delta, double secs)
{
    return delta < 0 ? 0 : (double)delta / secs;
}

/* One sample of every enabled counter over the interval prev..cur. */
static void sample(host_plugin *hp, const hc_snap *prev, const hc_snap *cur,
                   int statm_fd)
{
    int64_t dt = cur->ts - prev->ts;
    /* The last interval at stop may be very short: rates over a few
     * microseconds are noise (getrusage counts in microseconds, often in
     * ticks), so they are left out below 1 ms or half an interval. */
    int64_t min_dt = (int64_t)hp->interval_ms * 500000;
    if (min_dt > 1000000)
        min_dt = 1000000;
    double rss = hp->enabled[HC_MEMORY] ? rss_bytes(hp, statm_fd) : -1;
    pthread_mutex_lock(&hp->lock);
    if (dt > 0 && dt >= min_dt) {
        double secs = (double)dt / 1e9;
        int64_t t = prev->ts;
        if (hp->enabled[HC_CPU]) {
            series_add(hp, HC_CPU, 0, t,
                       100.0 * (double)(cur->user_ns - prev->user_ns) /
                           (double)dt);
            series_add(hp, HC_CPU, 1, t,
                       100.0 * (double)(cur->sys_ns - prev->sys_ns) /
                           (double)dt);
        }
        if (hp->enabled[HC_PAGE_FAULTS]) {
            series_add(hp, HC_PAGE_FAULTS, 0, t,
                       rate(cur->minflt - prev->minflt, secs));
            series_add(hp, HC_PAGE_FAULTS, 1, t,
                       rate(cur->majflt - prev->majflt, secs));
        }
        if (hp->enabled[HC_CTXSW]) {
            series_add(hp, HC_CTXSW, 0, t, rate(cur->nvcsw - prev->nvcsw, secs));
            series_add(hp, HC_CTXSW, 1, t,
                       rate(cur->nivcsw - prev->nivcsw, secs));
        }
        for (int c = 0; c < HC_NCOUNTERS; c++) {
            if (!hp->enabled[c] || !hc_defs[c].perf)
                continue;
            double d = cur->perf[c] - prev->perf[c];
            series_add(hp, c, 0, t, d < 0 ? 0 : d / secs);
        }
    }
    if (rss >= 0)
        series_add(hp, HC_MEMORY, 0, cur->ts, rss);
    pthread_mutex_unlock(&hp->lock);
}

/* The start of sampling (on the sampler thread, or in start for ticks):
 * opens what it reads, takes the first snapshot, and hands over the
 * resident size at the start at once (not batched: a process that ends
 * before the first tick, and by _exit with no stop sample, still has it).
 * @p self: the tid perf counters leave out (0: none). */
static void sampling_begin(host_plugin *hp, pid_t self)
{
    hp->statm_fd = hp->enabled[HC_MEMORY]
                       ? open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
                       : -1;
    if (hp->enabled[HC_MEMORY] && hp->statm_fd < 0)
        plugin_log(hp->host, ACT_PLUGIN_LOG_WARN,
                   "cannot open /proc/self/statm (%s): no memory samples",
                   strerror(errno));
    perf_open_all(hp, self);
    hp->cur = 0;
    snap_take(hp, &hp->snaps[0]);
    if (hp->enabled[HC_MEMORY]) {
        double rss = rss_bytes(hp, hp->statm_fd);
        pthread_mutex_lock(&hp->lock);
        if (rss >= 0)
            series_add(hp, HC_MEMORY, 0, hp->snaps[0].ts, rss);
        series_emit(hp, &hp->series[HC_MEMORY][0]);
        pthread_mutex_unlock(&hp->lock);
    }
}

/* One sample over the interval since the last snapshot (a tick, or the
 * last one at stop). */
static void sampling_step(host_plugin *hp)
{
    snap_take(hp, &hp->snaps[hp->cur ^ 1]);
    sample(hp, &hp->snaps[hp->cur], &hp->snaps[hp->cur ^ 1], hp->statm_fd);
    hp->cur ^= 1;
}

static void sampling_end(host_plugin *hp)
{
    perf_close_all(hp);
    if (hp->statm_fd >= 0)
        close(hp->statm_fd);
    hp->statm_fd = -1;
}

/* The tick on the host's helper thread (host->every). */
static void sampler_tick(void *arg, int64_t now_ns)
{
    host_plugin *hp = arg;
    (void)now_ns; /* snap_take reads the clock next to its readings */
    if (atomic_load_explicit(&hp->tick_ready, memory_order_acquire))
        sampling_step(hp);
}

static void *sampler_main(void *arg)
{
    host_plugin *hp = arg;
    pthread_setname_np(pthread_self(), "actrace-host");
    sampling_begin(hp, (pid_t)syscall(SYS_gettid));
    pthread_mutex_lock(&hp->lock);
    hp->started = 1;
    pthread_cond_broadcast(&hp->wake);
    pthread_mutex_unlock(&hp->lock);

    const int64_t step = (int64_t)hp->interval_ms * 1000000;
    int64_t next = plugin_mono_ns() + step;
    for (;;) {
        struct timespec dl = {(time_t)(next / 1000000000),
                              (long)(next % 1000000000)};
        pthread_mutex_lock(&hp->lock);
        int rc = 0;
        while (!hp->stop_req && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&hp->wake, &hp->lock, &dl);
        int stopping = hp->stop_req, discard = hp->discard;
        pthread_mutex_unlock(&hp->lock);
        if (discard)
            break;
        /* A tick, or the last sample at stop. */
        sampling_step(hp);
        if (stopping)
            break;
        next += step;
        int64_t now = plugin_mono_ns();
        if (next <= now) /* late (suspended, overloaded): skip ticks */
            next = now + step;
    }
    sampling_end(hp);
    return NULL;
}

/* 1 if the host offers ticks (ABI 1.2). */
static int host_has_every(const act_plugin_host *h)
{
    return h->struct_size >= ACT_PLUGIN_HOST_SIZE_1_2 && h->every && h->every_cancel;
}

/* ---- config ---------------------------------------------------------------- */

/* Parses HOST_COUNTERS into want[]. Unknown names are logged and ignored.
 * Returns the number of valid names. */
static int parse_counters(host_plugin *hp, const char *v, int *want)
{
    int nvalid = 0, nitems = 0;
    const char *p = v ? v : "";
    while (*p) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        const char *b = p;
        while (*p && *p != ',')
            p++;
        const char *e = p;
        while (e > b && isspace((unsigned char)e[-1]))
            e--;
        if (e == b)
            continue;
        nitems++;
        size_t len = (size_t)(e - b);
        int found = -1;
        for (int c = 0; c < HC_NCOUNTERS; c++)
            if (strlen(hc_defs[c].name) == len &&
                strncasecmp(hc_defs[c].name, b, len) == 0)
                found = c;
        if (found < 0) {
            plugin_log(hp->host, ACT_PLUGIN_LOG_ERROR,
                       "HOST_COUNTERS: unknown counter '%.*s' ignored (valid: "
                       HC_VALID_NAMES ")",
                       (int)(len > 64 ? 64 : len), b);
            continue;
        }
        if (!want[found])
            nvalid++;
        want[found] = 1;
    }
    if (nitems == 0) /* empty: the default set */
        for (int c = 0; c < HC_NCOUNTERS; c++)
            if ((want[c] = hc_defs[c].is_default))
                nvalid++;
    return nvalid;
}

static long parse_interval(host_plugin *hp, const char *v)
{
    if (!v || !*v)
        return HC_DEFAULT_INTERVAL_MS;
    char *end;
    errno = 0;
    long ms = strtol(v, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    if (errno || *end || ms < 1) {
        plugin_log(hp->host, ACT_PLUGIN_LOG_ERROR,
                   "HOST_COUNTER_INTERVAL_MSECS: '%s' is not an integer >= 1; "
                   "using %d", v, HC_DEFAULT_INTERVAL_MS);
        return HC_DEFAULT_INTERVAL_MS;
    }
    if (ms > HC_MAX_INTERVAL_MS) {
        plugin_log(hp->host, ACT_PLUGIN_LOG_WARN,
                   "HOST_COUNTER_INTERVAL_MSECS: %ld is more than an hour; "
                   "using %ld", ms, HC_MAX_INTERVAL_MS);
        ms = HC_MAX_INTERVAL_MS;
    }
    return ms;
}

/* ---- the plugin table's functions ------------------------------------------ */

static void hp_free(host_plugin *hp)
{
    pthread_cond_destroy(&hp->wake);
    pthread_mutex_destroy(&hp->lock);
    free(hp);
}

static int32_t host_init(const act_plugin_host *host, void **state,
                         char *reason, uint32_t reason_cap)
{
    if (host->struct_size < ACT_PLUGIN_HOST_SIZE_1_0 || !host->log ||
        !host->now_ns || !host->config_get || !host->add_counter ||
        !host->emit_samples) {
        plugin_set_reason(reason, reason_cap, "host lacks ABI 1.0 functions");
        return ACT_PLUGIN_DECLINE;
    }
    host_plugin *hp = calloc(1, sizeof *hp);
    if (!hp) {
        plugin_set_reason(reason, reason_cap, "out of memory");
        return ACT_PLUGIN_ENOMEM;
    }
    hp->host = host;
    hp->statm_fd = -1;
    pthread_condattr_t ca;
    if (pthread_mutex_init(&hp->lock, NULL) != 0) {
        free(hp);
        plugin_set_reason(reason, reason_cap, "cannot create a mutex");
        return ACT_PLUGIN_ENOMEM;
    }
    if (pthread_condattr_init(&ca) != 0 ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&hp->wake, &ca) != 0) {
        pthread_mutex_destroy(&hp->lock);
        free(hp);
        plugin_set_reason(reason, reason_cap, "cannot create a condition variable");
        return ACT_PLUGIN_ENOMEM;
    }
    pthread_condattr_destroy(&ca);
    hp->page_size = sysconf(_SC_PAGESIZE);
    if (hp->page_size <= 0)
        hp->page_size = 4096;

    hp->interval_ms = parse_interval(
        hp, host->config_get(host->ctx, "HOST_COUNTER_INTERVAL_MSECS"));
    int want[HC_NCOUNTERS] = {0};
    int nvalid =
        parse_counters(hp, host->config_get(host->ctx, "HOST_COUNTERS"), want);
    if (nvalid == 0) {
        plugin_set_reason(reason, reason_cap,
                          "HOST_COUNTERS names no known counter (valid: "
                          HC_VALID_NAMES ")");
        hp_free(hp);
        return ACT_PLUGIN_DECLINE;
    }

    /* Find out what works before declaring anything. */
    int nenabled = 0;
    for (int c = 0; c < HC_NCOUNTERS; c++) {
        if (!want[c])
            continue;
        if (hc_defs[c].perf) {
            int err = perf_probe(hp, c);
            if (err) {
                plugin_log(hp->host, ACT_PLUGIN_LOG_WARN, "%s: not available: %s",
                           hc_defs[c].name, strerror(err));
                continue;
            }
        }
        hp->enabled[c] = 1;
        nenabled++;
    }
    if (nenabled == 0) {
        plugin_set_reason(reason, reason_cap,
                          "none of the requested counters is available");
        hp_free(hp);
        return ACT_PLUGIN_DECLINE;
    }

    /* Declare the tracks: on the host process, one per counter. */
    for (int c = 0; c < HC_NCOUNTERS; c++) {
        if (!hp->enabled[c])
            continue;
        for (int k = 0; k < HC_MAX_SERIES && hc_defs[c].series[k]; k++) {
            act_plugin_counter ctr;
            memset(&ctr, 0, sizeof ctr);
            ctr.struct_size = sizeof ctr;
            ctr.device = ACT_PLUGIN_HOST_DEVICE;
            ctr.track = hc_defs[c].name;
            ctr.series = hc_defs[c].series[k];
            ctr.unit = hc_defs[c].unit;
            int32_t rc = host->add_counter(host->ctx, &ctr,
                                           &hp->series[c][k].index);
            if (rc != 0) {
                plugin_set_reason(reason, reason_cap,
                                  "cannot declare the counter track %s/%s (%d)",
                                  hc_defs[c].name, hc_defs[c].series[k], (int)rc);
                hp_free(hp);
                return rc < 0 ? rc : ACT_PLUGIN_EINVAL;
            }
        }
    }
    char names[256];
    size_t len = 0;
    names[0] = '\0';
    for (int c = 0; c < HC_NCOUNTERS; c++)
        if (hp->enabled[c] && len < sizeof names) {
            int n = snprintf(names + len, sizeof names - len, "%s%s",
                             len ? ", " : "", hc_defs[c].name);
            if (n > 0)
                len += (size_t)n;
        }
    plugin_log(hp->host, ACT_PLUGIN_LOG_INFO, "sampling %s every %ld ms", names,
               hp->interval_ms);
    *state = hp;
    return ACT_PLUGIN_OK;
}

/* Stops and joins the sampler if it runs. With @p discard, it exits
 * without a last sample. */
static void sampler_stop(host_plugin *hp, int discard)
{
    if (hp->tick_id) {
        /* When cancel returns, no tick runs (the host may have cancelled
         * it already, before stop: then cancel only says so). */
        hp->host->every_cancel(hp->host->ctx, hp->tick_id);
        hp->tick_id = 0;
        atomic_store_explicit(&hp->tick_ready, 0, memory_order_relaxed);
        if (!discard)
            sampling_step(hp);
        sampling_end(hp);
        return;
    }
    pthread_mutex_lock(&hp->lock);
    int live = hp->thread_live;
    if (live) {
        hp->stop_req = 1;
        hp->discard = discard;
        pthread_cond_signal(&hp->wake);
    }
    pthread_mutex_unlock(&hp->lock);
    if (!live)
        return;
    pthread_join(hp->thread, NULL);
    pthread_mutex_lock(&hp->lock);
    hp->thread_live = 0;
    hp->stop_req = 0;
    hp->discard = 0;
    pthread_mutex_unlock(&hp->lock);
}

static void host_start(void *state)
{
    host_plugin *hp = state;
    pthread_mutex_lock(&hp->lock);
    int live = hp->thread_live;
    pthread_mutex_unlock(&hp->lock);
    if (live || hp->tick_id)
        return; /* already sampling */
    if (host_has_every(hp->host)) {
        /* On the host's helper: the start sample now, on this thread (it
         * is taken before start returns, as with a thread), then a tick
         * every interval. The helper is one of actrace's threads: perf
         * counters leave none out (the helper's own work is counted). */
        uint32_t id = 0;
        int32_t rc = hp->host->every(hp->host->ctx, (int64_t)hp->interval_ms * 1000000,
                                     sampler_tick, hp, &id);
        if (rc == 0 && id) {
            /* A tick that comes before the start sample is taken (this
             * thread preempted for a period) does nothing. */
            hp->tick_id = id;
            sampling_begin(hp, 0);
            atomic_store_explicit(&hp->tick_ready, 1, memory_order_release);
            return;
        }
        /* No helper to run it (none in this process): a thread of ours. */
    }
    /* The sampler takes no signal meant for the application. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_mutex_lock(&hp->lock);
    hp->stop_req = 0;
    hp->discard = 0;
    hp->started = 0;
    int rc = pthread_create(&hp->thread, NULL, sampler_main, hp);
    hp->thread_live = rc == 0;
    /* The start sample is taken before start returns (at most 1 s): every
     * process has at least its resource usage at the start. */
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += 1;
    int wrc = 0;
    while (rc == 0 && !hp->started && wrc != ETIMEDOUT)
        wrc = pthread_cond_timedwait(&hp->wake, &hp->lock, &dl);
    pthread_mutex_unlock(&hp->lock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        plugin_log(hp->host, ACT_PLUGIN_LOG_ERROR,
                   "cannot start the sampling thread: %s", strerror(rc));
}

static void host_stop(void *state)
{
    sampler_stop(state, 0);
}

static void host_flush(void *state)
{
    host_plugin *hp = state;
    pthread_mutex_lock(&hp->lock);
    for (int c = 0; c < HC_NCOUNTERS; c++)
        for (int k = 0; k < HC_MAX_SERIES; k++)
            if (hp->enabled[c] && hc_defs[c].series[k])
                series_emit(hp, &hp->series[c][k]);
    pthread_mutex_unlock(&hp->lock);
}

static void host_finalize(void *state)
{
    host_plugin *hp = state;
    sampler_stop(hp, 1); /* only if stop never came */
    hp_free(hp);
}

static const act_plugin host_plugin_table = {
    .struct_size = sizeof(act_plugin),
    .abi_major = ACT_PLUGIN_ABI_MAJOR,
    .abi_minor = ACT_PLUGIN_ABI_MINOR,
    .name = "host",
    .backend = "host",
    .version = "1.0.0",
    .types = NULL,
    .ntypes = 0,
    .init = host_init,
    .start = host_start,
    .stop = host_stop,
    .flush = host_flush,
    .finalize = host_finalize,
};

ACT_PLUGIN_EXPORT const act_plugin *
act_plugin_entry(const act_plugin_host *host, uint32_t host_abi_major,
                 uint32_t host_abi_minor)
{
    (void)host;
    (void)host_abi_minor;
    if (host_abi_major != ACT_PLUGIN_ABI_MAJOR)
        return NULL;
    return &host_plugin_table;
}
