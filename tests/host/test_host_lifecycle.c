/* SPDX-License-Identifier: MIT */
/*
 * The host plugin driven directly through its table by a fake host, in
 * every order a host may call it: finalize without start, stop/flush
 * without start, start twice, stop twice, flush while sampling, a second
 * window after a stop, finalize while sampling. The fake host checks what
 * it receives: declared tracks on the host device, samples of known
 * tracks, finite values, non-decreasing timestamps per track, nothing
 * after finalize. It also checks that the sampler thread is named
 * "actrace-host" and is gone after stop, and that stop is prompt even with
 * a long interval. With a host that offers ticks (ABI 1.2, a fake helper
 * thread here) the plugin has no thread: it samples in the ticks, which
 * it cancels at stop and finalize; when the host's every fails it falls
 * back to its own thread.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "task_names.h"

#include <actrace/plugin.h>

#define HOST_SO ACT_BINARY_DIR "/plugins/host.so"
#define MAX_TRACKS 32

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *cfg_counters, *cfg_interval;
static int ntracks;
static char track_names[MAX_TRACKS][64];
static long samples[MAX_TRACKS];
static int64_t last_ts[MAX_TRACKS];
static int bad_calls, after_final;
static int finalized;
static char logs[8192];

static void f_log(act_plugin_ctx *ctx, int32_t level, const char *msg)
{
    (void)ctx;
    (void)level;
    pthread_mutex_lock(&lock);
    size_t n = strlen(logs);
    snprintf(logs + n, sizeof logs - n, "%s\n", msg);
    pthread_mutex_unlock(&lock);
}

static int64_t f_now(act_plugin_ctx *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char *f_config(act_plugin_ctx *ctx, const char *key)
{
    (void)ctx;
    if (!strcmp(key, "HOST_COUNTERS"))
        return cfg_counters;
    if (!strcmp(key, "HOST_COUNTER_INTERVAL_MSECS"))
        return cfg_interval;
    return NULL;
}

static int32_t f_add_counter(act_plugin_ctx *ctx, const act_plugin_counter *c,
                             uint32_t *out)
{
    (void)ctx;
    pthread_mutex_lock(&lock);
    int ok = c && c->struct_size >= ACT_PLUGIN_COUNTER_SIZE_1_0 &&
             c->device == ACT_PLUGIN_HOST_DEVICE && c->track && c->series &&
             ntracks < MAX_TRACKS;
    if (ok) {
        snprintf(track_names[ntracks], sizeof track_names[0], "%s/%s",
                 c->track, c->series);
        *out = (uint32_t)ntracks++;
    } else {
        bad_calls++;
    }
    pthread_mutex_unlock(&lock);
    return ok ? 0 : ACT_PLUGIN_EINVAL;
}

static int32_t f_emit_samples(act_plugin_ctx *ctx, uint32_t counter,
                              const act_plugin_sample *s, uint32_t count)
{
    (void)ctx;
    pthread_mutex_lock(&lock);
    if (finalized)
        after_final++;
    if (counter >= (uint32_t)ntracks || !s || count == 0) {
        bad_calls++;
        pthread_mutex_unlock(&lock);
        return ACT_PLUGIN_EINVAL;
    }
    for (uint32_t i = 0; i < count; i++) {
        if (s[i].struct_size != ACT_PLUGIN_SAMPLE_SIZE_1_0 ||
            !isfinite(s[i].value) || s[i].value < 0 ||
            s[i].ts_ns < last_ts[counter])
            bad_calls++;
        last_ts[counter] = s[i].ts_ns;
    }
    samples[counter] += count;
    pthread_mutex_unlock(&lock);
    return (int32_t)count;
}

/* ---- a fake helper thread for the host's ticks (ABI 1.2) ------------- */

static pthread_mutex_t tlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t ticker;
static int ticker_live, tick_cancelled, every_calls, cancel_calls;
static int32_t every_rc; /* what f_every returns (0: it ticks) */
static int64_t tick_period;
static void (*tick_fn)(void *, int64_t);
static void *tick_arg;

static void *ticker_main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "fake-helper");
    for (;;) {
        struct timespec ts = {(time_t)(tick_period / 1000000000), (long)(tick_period % 1000000000)};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&tlock);
        int stop = tick_cancelled;
        pthread_mutex_unlock(&tlock);
        if (stop)
            break;
        tick_fn(tick_arg, f_now(NULL));
    }
    return NULL;
}

static int32_t f_every(act_plugin_ctx *ctx, int64_t period_ns,
                       void (*fn)(void *, int64_t), void *arg, uint32_t *id)
{
    (void)ctx;
    pthread_mutex_lock(&tlock);
    every_calls++;
    int32_t rc = every_rc;
    if (rc == 0 && (ticker_live || !fn || !id || period_ns < 1000000))
        rc = ACT_PLUGIN_EINVAL;
    if (rc == 0) {
        tick_fn = fn;
        tick_arg = arg;
        tick_period = period_ns;
        tick_cancelled = 0;
        ticker_live = pthread_create(&ticker, NULL, ticker_main, NULL) == 0;
        *id = 7;
    }
    pthread_mutex_unlock(&tlock);
    return rc;
}

/* As the real host: when it returns, the tick does not run any more. */
static int32_t f_every_cancel(act_plugin_ctx *ctx, uint32_t id)
{
    (void)ctx;
    pthread_mutex_lock(&tlock);
    cancel_calls++;
    int live = ticker_live && id == 7;
    tick_cancelled = 1;
    ticker_live = 0;
    pthread_mutex_unlock(&tlock);
    if (live)
        pthread_join(ticker, NULL);
    return live ? 0 : ACT_PLUGIN_EINVAL;
}

/* A host of ABI 1.1 (no ticks): the plugin samples on its own thread. */
static act_plugin_host fake_host(void)
{
    act_plugin_host h;
    memset(&h, 0, sizeof h);
    h.struct_size = ACT_PLUGIN_HOST_SIZE_1_1;
    h.abi_major = ACT_PLUGIN_ABI_MAJOR;
    h.abi_minor = ACT_PLUGIN_ABI_MINOR;
    h.host_version = "test";
    h.log = f_log;
    h.now_ns = f_now;
    h.config_get = f_config;
    h.add_counter = f_add_counter;
    h.emit_samples = f_emit_samples;
    return h;
}

static void reset(const char *counters, const char *interval)
{
    pthread_mutex_lock(&lock);
    cfg_counters = counters;
    cfg_interval = interval;
    ntracks = 0;
    memset(samples, 0, sizeof samples);
    memset(last_ts, 0, sizeof last_ts);
    bad_calls = after_final = finalized = 0;
    logs[0] = '\0';
    pthread_mutex_unlock(&lock);
}

static long total_samples(void)
{
    long n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < ntracks; i++)
        n += samples[i];
    pthread_mutex_unlock(&lock);
    return n;
}

/* Threads of this process named @p name. */
/* Threads of this process named @p name now. A thread that was joined
 * can stay in /proc/self/task for a moment (the kernel wakes the joiner
 * before it removes the task): threads_gone waits for that. */

/* 0 once no thread is named @p name, waiting up to 2 s for joined ones
 * to leave /proc; else how many are left. */
static int threads_gone(const char *name)
{
    int n = threads_named(name, 0);
    for (int i = 0; n && i < 200; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        n = threads_named(name, 0);
    }
    return n;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double mono_s(void)
{
    return (double)f_now(NULL) / 1e9;
}

static const act_plugin *plug;
static act_plugin_host host;

static void *init_ok(void)
{
    char reason[256] = "";
    void *st = NULL;
    int32_t rc = plug->init(&host, &st, reason, sizeof reason);
    if (!CHECK_EQ_INT(rc, ACT_PLUGIN_OK))
        fprintf(stderr, "  reason: %s\n", reason);
    return rc == ACT_PLUGIN_OK ? st : NULL;
}

static void finalize(void *st)
{
    plug->finalize(st);
    pthread_mutex_lock(&lock);
    finalized = 1;
    pthread_mutex_unlock(&lock);
}

int main(void)
{
    void *so = dlopen(HOST_SO, RTLD_NOW | RTLD_LOCAL);
    if (!so)
        fprintf(stderr, "dlopen: %s\n", dlerror());
    CHECK_FATAL(so != NULL);
    act_plugin_entry_fn entry;
    void *sym = dlsym(so, ACT_PLUGIN_ENTRY_SYMBOL);
    CHECK_FATAL(sym != NULL);
    memcpy(&entry, &sym, sizeof entry);
    host = fake_host();
    CHECK(entry(&host, 2, 0) == NULL); /* another major: declined */
    plug = entry(&host, ACT_PLUGIN_ABI_MAJOR, ACT_PLUGIN_ABI_MINOR);
    CHECK_FATAL(plug != NULL);
    CHECK_EQ_STR(plug->name, "host");
    CHECK(plug->init && plug->start && plug->stop && plug->flush &&
          plug->finalize);

    /* The default set: 7 series on 4 tracks. */
    reset(NULL, NULL);
    void *st = init_ok();
    CHECK_FATAL(st != NULL);
    CHECK_EQ_INT(ntracks, 7);
    CHECK_EQ_STR(track_names[0], "cpu/user");
    CHECK(strstr(logs, "every 100 ms") != NULL);
    finalize(st); /* never started */
    CHECK_EQ_INT(total_samples(), 0);

    /* stop and flush without start; then start twice, flush while
     * sampling, stop twice, a second window. */
    reset("cpu,memory", "5");
    st = init_ok();
    CHECK_FATAL(st != NULL);
    CHECK_EQ_INT(ntracks, 3);
    plug->stop(st);
    plug->flush(st);
    CHECK_EQ_INT(total_samples(), 0);
    CHECK_EQ_INT(threads_named("actrace-host", 0), 0);
    plug->start(st);
    plug->start(st);
    sleep_ms(60);
    CHECK_EQ_INT(threads_named("actrace-host", 0), 1);
    plug->flush(st); /* while sampling: delivers what is buffered */
    long mid = total_samples();
    CHECK(mid > 0);
    plug->stop(st);
    plug->stop(st);
    CHECK_EQ_INT(threads_gone("actrace-host"), 0);
    plug->flush(st);
    long first = total_samples();
    CHECK(first > mid); /* at least the last sample at stop */
    plug->start(st);
    sleep_ms(30);
    plug->stop(st);
    plug->flush(st);
    CHECK(total_samples() > first);
    plug->flush(st); /* nothing left */
    finalize(st);
    CHECK_EQ_INT(bad_calls, 0);
    CHECK_EQ_INT(after_final, 0);

    /* A long interval: stop is still prompt and takes a last sample. */
    reset("cpu", "600000");
    st = init_ok();
    CHECK_FATAL(st != NULL);
    plug->start(st);
    sleep_ms(20);
    double t0 = mono_s();
    plug->stop(st);
    double took = mono_s() - t0;
    if (!CHECK(took < 5.0))
        fprintf(stderr, "  stop took %.3f s\n", took);
    plug->flush(st);
    CHECK_EQ_INT(total_samples(), 2); /* user and system, once */
    finalize(st);

    /* finalize while sampling: the thread ends, nothing is emitted after. */
    reset("memory", "1");
    st = init_ok();
    CHECK_FATAL(st != NULL);
    plug->start(st);
    sleep_ms(20);
    finalize(st);
    CHECK_EQ_INT(threads_gone("actrace-host"), 0);
    sleep_ms(10);
    CHECK_EQ_INT(after_final, 0);
    CHECK_EQ_INT(bad_calls, 0);

    /* A host with ticks (ABI 1.2): no thread of the plugin's; the start
     * sample before start returns, ticks on the host's thread, cancelled
     * at stop before the last sample, nothing after. */
    act_plugin_host old_host = host;
    host = fake_host();
    host.struct_size = sizeof host;
    host.every = f_every;
    host.every_cancel = f_every_cancel;
    reset("cpu,memory", "5");
    every_rc = 0;
    st = init_ok();
    CHECK_FATAL(st != NULL);
    plug->start(st);
    CHECK_EQ_INT(every_calls, 1);
    CHECK_EQ_INT(total_samples(), 1); /* the resident size at the start */
    CHECK_EQ_INT(threads_named("actrace-host", 0), 0);
    for (int i = 0; i < 10000 && total_samples() < 4; i++) {
        plug->flush(st);
        sleep_ms(1);
    }
    CHECK(total_samples() >= 4); /* ticks ran (and sampled) */
    CHECK_EQ_INT(threads_named("fake-helper", 0), 1);
    CHECK_EQ_INT(threads_named("actrace-host", 0), 0);
    plug->stop(st);
    CHECK_EQ_INT(cancel_calls, 1);
    CHECK_EQ_INT(threads_gone("fake-helper"), 0);
    plug->flush(st);
    long at_stop = total_samples();
    sleep_ms(20);
    plug->flush(st);
    CHECK_EQ_INT(total_samples(), at_stop);
    /* A second window registers again. */
    plug->start(st);
    CHECK_EQ_INT(every_calls, 2);
    CHECK_EQ_INT(threads_named("actrace-host", 0), 0);
    /* finalize while ticking: cancelled, nothing emitted after. */
    finalize(st);
    CHECK_EQ_INT(cancel_calls, 2);
    CHECK_EQ_INT(threads_gone("fake-helper"), 0);
    sleep_ms(10);
    CHECK_EQ_INT(after_final, 0);
    CHECK_EQ_INT(bad_calls, 0);

    /* A host whose every fails (no helper in this process): the plugin's
     * own thread, as with an older host. */
    reset("cpu", "5");
    every_rc = ACT_PLUGIN_ESTATE;
    st = init_ok();
    CHECK_FATAL(st != NULL);
    plug->start(st);
    CHECK_EQ_INT(every_calls, 3);
    CHECK_EQ_INT(threads_named("actrace-host", 0), 1);
    CHECK_EQ_INT(threads_named("fake-helper", 0), 0);
    sleep_ms(20);
    plug->stop(st);
    CHECK_EQ_INT(threads_gone("actrace-host"), 0);
    CHECK_EQ_INT(cancel_calls, 2); /* nothing to cancel */
    plug->flush(st);
    CHECK(total_samples() > 0);
    finalize(st);
    host = old_host;

    /* Bad values: an unparsable interval falls back to the default. */
    reset("context_switches", "abc");
    st = init_ok();
    CHECK_FATAL(st != NULL);
    CHECK(strstr(logs, "HOST_COUNTER_INTERVAL_MSECS") != NULL);
    CHECK(strstr(logs, "every 100 ms") != NULL);
    finalize(st);

    /* Nothing valid: declined with a reason, no track declared. */
    reset("bogus", NULL);
    char reason[256] = "";
    st = NULL;
    CHECK_EQ_INT(plug->init(&host, &st, reason, sizeof reason),
                 ACT_PLUGIN_DECLINE);
    CHECK(strstr(reason, "no known counter") != NULL);
    CHECK(strstr(logs, "unknown counter 'bogus'") != NULL);
    CHECK_EQ_INT(ntracks, 0);

    /* A host without the counter functions: declined, not a crash. */
    act_plugin_host poor = fake_host();
    poor.add_counter = NULL;
    reset(NULL, NULL);
    CHECK_EQ_INT(plug->init(&poor, &st, reason, sizeof reason),
                 ACT_PLUGIN_DECLINE);

    dlclose(so);
    CHECK_MAIN_END;
}
