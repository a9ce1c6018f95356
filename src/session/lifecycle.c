/* SPDX-License-Identifier: MIT */
/*
 * Session lifecycle (DESIGN.md section 4), the layer above the engine:
 * create with the session's plugins, start, the collection window (time-
 * or iteration-driven, or simply start to stop), act_step, stop, write,
 * destroy. The recording state itself (options, memory, clocks, the
 * process-wide started session, fork handling) is the engine's
 * (engine/session.c); the plugins are the loader's, the trace the
 * writers'.
 *
 * States: CREATED -> ARMED (started, window not yet open) -> COLLECTING
 * (act__recording points here) -> DONE (window closed) -> STOPPED.
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config_impl.h"
#include "engine/spool.h"
#include "plugin/loader.h"
#include "session/session.h"
#include "writer/visit.h"
#include "writer/writers.h"

void act__session_seterr(act_session *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->errmsg, sizeof s->errmsg, fmt, ap);
    va_end(ap);
}

/* ---- window --------------------------------------------------------------- */

/* The session's clocks, in the spool (each time they change). */
static void spool_start(const act_session *s)
{
    if (!s->spooled)
        return;
    int64_t v[6] = {(int64_t)getpid(), s->start_mono_ns, s->mono_to_unix_ns, s->time_anchor_ns,
                    s->categories_generic, s->proc_start};
    const char *n = s->trace_name ? s->trace_name : "";
    size_t len = strlen(n);
    act__spool_log(ACT__SP_START, v, 6, &n, &len, 1);
    act__dist_spool(NULL, 0);
}

static void spool_stop(const act_session *s)
{
    if (s->spooled)
        act__spool_log(ACT__SP_STOP, &s->stop_mono_ns, 1, NULL, NULL, 0);
}

/*
 * Window transitions run the plugins' start, or stop and flush, under
 * s->window_lock, which act_session_stop takes too: a transition that
 * act_step or the timer began finishes (its flush's records included)
 * before stop marks the session STOPPED, and no plugin call can run after
 * stop returns. Not under s->lock: a flush emits records, which may attach
 * its thread to the session (lock order: window_lock, then lock).
 */
void act__session_open_window(act_session *s)
{
    if (s->disabled) /* ACTIVITIES_ENABLED = false: the window never opens */
        return;
    int expected = ACT__S_ARMED;
    pthread_mutex_lock(&s->window_lock);
    pthread_mutex_lock(&s->lock);
    int ok = atomic_compare_exchange_strong(&s->state, &expected, ACT__S_COLLECTING);
    if (ok) {
        s->start_mono_ns = act__clock_ns();
        spool_start(s);
        atomic_store_explicit(&act__recording, s, memory_order_release);
    }
    pthread_mutex_unlock(&s->lock);
    if (ok)
        act__plugins_start(s->plugins);
    pthread_mutex_unlock(&s->window_lock);
}

static void close_window_locked(act_session *s)
{
    int expected = ACT__S_COLLECTING;
    pthread_mutex_lock(&s->lock);
    int ok = atomic_compare_exchange_strong(&s->state, &expected, ACT__S_DONE);
    if (ok) {
        act_session *me = s;
        atomic_compare_exchange_strong(&act__recording, &me, NULL);
        s->stop_mono_ns = act__clock_ns();
        spool_stop(s);
    }
    pthread_mutex_unlock(&s->lock);
    /* The session still accepts the flush's records (DONE is not
     * STOPPED). */
    if (ok)
        act__plugins_stop(s->plugins);
}

void act__session_close_window(act_session *s)
{
    pthread_mutex_lock(&s->window_lock);
    close_window_locked(s);
    pthread_mutex_unlock(&s->window_lock);
}

static int wait_until(act_session *s, int64_t deadline_ns)
{
    struct timespec ts = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
    pthread_mutex_lock(&s->lock);
    int stopping = 0;
    while (!(stopping = atomic_load(&s->state) >= ACT__S_STOPPED || !s->timer_running)) {
        if (pthread_cond_timedwait(&s->timer_cond, &s->lock, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&s->lock);
    return stopping;
}

static void *timer_main(void *arg)
{
    act_session *s = arg;
    /* The warmup counts from act_session_start, not from when this thread
     * got to run (PROFILE_START_TIME is a time, not a delay). */
    int64_t t0 = s->start_mono_ns;
    if (s->warmup_ns > 0) {
        if (wait_until(s, t0 + s->warmup_ns))
            return NULL;
        act__session_open_window(s);
    }
    if (s->duration_ns >= 0 && !wait_until(s, act__clock_ns() + s->duration_ns))
        act__session_close_window(s);
    return NULL;
}

int act_session_start(act_session *s)
{
    if (!s)
        return ACT_EINVAL;
    if (atomic_load(&s->state) != ACT__S_CREATED)
        return ACT_ESTATE;
    /* Claiming act__started makes the session visible to act_step at once,
     * but act_step ignores it until the release store of ARMED below, so
     * everything set up before that store (the start iteration, the
     * clock) is seen complete. */
    act_session *none = NULL;
    /* Under record, a process's own session meets the one record starts
     * for it, as if that one had started at load (autostart.c). */
    if (!s->auto_start && atomic_load(&act__recording))
        act__auto_wake();
    if (!atomic_compare_exchange_strong(&act__started, &none, s))
        return ACT_EBUSY;
    atomic_store(&act__started_owner, s->owner);
    act__sample_clock_offset(s);
    act__grace_prepare();
    act__prefault_start(s);
    s->start_mono_ns = act__clock_ns();
    s->time_anchor_ns = s->start_mono_ns;
    s->fast_time_lo = (uint64_t)s->time_anchor_ns - ACT__FAST_WINDOW / 2;
    spool_start(s);
    if (s->start_iter <= -2) /* warmup iterations counted from now */
        s->start_iter = atomic_load(&s->steps) + (-2 - s->start_iter);
    if (s->profile_start_unix_ns) {
        /* Wait until PROFILE_START_TIME (at most 2^61 ns, 73 years, so
         * that the timer's deadline cannot overflow). */
        int64_t wait = s->profile_start_unix_ns - (s->start_mono_ns + s->mono_to_unix_ns);
        s->warmup_ns = wait <= 0 ? 0 : wait > ACT__TIME_MAX / 2 ? ACT__TIME_MAX / 2 : wait;
        if (wait <= 0)
            act_log(ACT_LOG_INFO, "PROFILE_START_TIME has passed: collecting from now");
    }
    /* Published last: act_step ignores a session that is not armed yet. */
    atomic_store_explicit(&s->state, ACT__S_ARMED, memory_order_release);
    if (s->warmup_ns >= 0 || s->duration_ns >= 0) {
        /* Without a warmup the window opens now, not when the timer thread
         * gets to run, so nothing recorded right after start is lost. */
        if (s->warmup_ns <= 0)
            act__session_open_window(s);
        s->timer_running = 1;
        if (pthread_create(&s->timer, NULL, timer_main, s) != 0) {
            s->timer_running = 0;
            act_log(ACT_LOG_WARN, "cannot start the window timer; collecting until stop");
            act__session_open_window(s);
        }
    } else if (s->start_iter < 0 || atomic_load(&s->steps) >= s->start_iter) {
        act__session_open_window(s);
    }
    return 0;
}

void (*_Atomic act__step_hook)(void);

void act_step(void)
{
    void (*hook)(void) = atomic_load_explicit(&act__step_hook, memory_order_relaxed);
    if (hook)
        hook(); /* on-demand: counts the step, drives its iteration window */
    if (!atomic_load_explicit(&act__started, memory_order_relaxed))
        return;
    /* Announce the step, then look again (seq_cst on both sides, against
     * act_session_stop's store and load): either stop sees this step and
     * waits for it, or this step sees the session gone. */
    atomic_fetch_add(&act__steps_in_flight, 1);
    act_session *s = atomic_load(&act__started);
    if (s) {
        int64_t n = atomic_fetch_add(&s->steps, 1) + 1;
        /* Acquire: pairs with start's release store of ARMED, after which
         * start_iter is final. */
        int st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st != ACT__S_CREATED && s->start_iter >= 0) {
            if (st == ACT__S_ARMED && n >= s->start_iter)
                act__session_open_window(s);
            else if (st == ACT__S_COLLECTING && n >= s->start_iter + s->iterations)
                act__session_close_window(s);
        }
    }
    atomic_fetch_sub(&act__steps_in_flight, 1);
}

/* A key no built-in knows is a plugin's when a loaded plugin read it
 * through config_get: in its init, its start, or later while the session
 * ran (a plugin may read its keys lazily). So the others are reported as
 * unknown once the plugins have had the whole session to read theirs:
 * when it first stops (its window closed, the plugins stopped and
 * flushed), or when it is destroyed without having run. */
static void report_unread(act_session *s)
{
    if (__atomic_exchange_n(&s->unread_reported, 1, __ATOMIC_RELAXED))
        return;
    act__config_warn_unread(s->config);
}

int act_session_stop(act_session *s)
{
    if (!s)
        return ACT_EINVAL;
    int st = atomic_load(&s->state);
    if (st == ACT__S_CREATED || st == ACT__S_STOPPED)
        return ACT_ESTATE;
    /* No act_step may reach the session once stop returns: unpublish it,
     * then wait for the steps that loaded it (one may be running a window
     * transition, i.e. plugin code). */
    act_session *me = s;
    atomic_compare_exchange_strong(&act__started, &me, NULL);
    while (atomic_load(&act__steps_in_flight) != 0)
        sched_yield();
    if (s->timer_running) {
        pthread_mutex_lock(&s->lock);
        s->timer_running = 0;
        pthread_cond_broadcast(&s->timer_cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->timer, NULL);
    }
    pthread_mutex_lock(&s->window_lock);
    close_window_locked(s);
    pthread_mutex_lock(&s->lock);
    if (st == ACT__S_ARMED || !s->stop_mono_ns) {
        s->stop_mono_ns = act__clock_ns();
        spool_stop(s);
    }
    atomic_store(&s->state, ACT__S_STOPPED);
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(&s->window_lock);
    /* Unpublished (close_window_locked): wait out the recording calls that
     * loaded it before (grace.c), so that nothing writes into its buffers
     * from now on (the settle below converts their times in place) and
     * destroy may free it. */
    act__grace_wait();
    act__prefault_stop(s);
    report_unread(s);
    return 0;
}

int act_session_write(act_session *s, const char *path)
{
    if (!s || !path || !*path)
        return ACT_EINVAL;
    int st = atomic_load(&s->state);
    if (st != ACT__S_CREATED && st != ACT__S_STOPPED)
        act_session_stop(s);
    s->errmsg[0] = '\0';
    char err[1024];
    int rc = act__write_trace(s, path, err, sizeof err);
    if (rc)
        act__session_seterr(s, "%s", err);
    return rc;
}

/* ---- create, destroy -------------------------------------------------------- */

/* s->report_plugins (engine.h): per loaded plugin, its name, path, what it
 * handed over that was rejected (by reason), filtered or dropped, and its
 * first warnings, for actraceStats. */
static int report_plugins(const act_session *s, act__vplugin **out, const char ***warn_out,
                          size_t *n_out)
{
    size_t np = act__plugins_count(s->plugins);
    act__vplugin *pl = calloc(np ? np : 1, sizeof *pl);
    const char **warn = NULL;
    size_t nwarn = 0;
    for (size_t i = 0; i < np; i++)
        nwarn += act__plugins_warning_count(s->plugins, i);
    warn = calloc(nwarn ? nwarn : 1, sizeof *warn);
    if (!pl || !warn) {
        free(pl);
        free(warn);
        return ACT_ENOMEM;
    }
    for (size_t i = 0, wk = 0; i < np; i++) {
        act__vplugin *p = &pl[i];
        p->name = act__plugins_name(s->plugins, i);
        p->path = act__plugins_path(s->plugins, i);
        p->rejected = act__plugins_rejected(s->plugins, i);
        for (size_t k = 0; k < act__plugins_reason_count() && p->nreasons < 16; k++) {
            const char *key;
            uint64_t n = act__plugins_rejected_by(s->plugins, i, k, &key);
            if (!n)
                continue;
            p->reason_key[p->nreasons] = key;
            p->reason_n[p->nreasons++] = n;
        }
        p->filtered = act__plugins_filtered(s->plugins, i);
        p->dropped = act__plugins_dropped(s->plugins, i);
        p->nwarnings = act__plugins_warning_count(s->plugins, i);
        p->warnings = warn + wk;
        for (size_t k = 0; k < p->nwarnings; k++)
            warn[wk++] = act__plugins_warning(s->plugins, i, k);
    }
    *out = pl;
    *warn_out = warn;
    *n_out = np;
    return 0;
}

int act_session_create(const act_session_opts *opts_in, act_session **out)
{
    if (!out)
        return ACT_EINVAL;
    *out = NULL;
    act_session_opts o;
    int rc = act__session_opts_read(opts_in, &o);
    if (rc)
        return rc;
    act_session *s;
    rc = act__session_create(&o, &s);
    if (rc)
        return rc;
    s->report_plugins = report_plugins;
    /* ACTIVITIES_ENABLED = false: nothing is recorded, so no plugin is
     * loaded (none runs its init, none starts). */
    if (s->disabled)
        act_log(ACT_LOG_INFO, "ACTIVITIES_ENABLED is false: the session records nothing and loads no plugin");
    else
        rc = act__plugins_load(s, s->config, o.plugins, o.plugin_count, &s->plugins);
    if (rc != 0) {
        s->unread_reported = 1; /* the error is what matters here */
        act_session_destroy(s);
        return rc;
    }
    *out = s;
    return 0;
}

void act_session_destroy(act_session *s)
{
    if (!s)
        return;
    int st = atomic_load(&s->state);
    if (st != ACT__S_CREATED && st != ACT__S_STOPPED)
        act_session_stop(s);
    act__prefault_stop(s);
    report_unread(s);
    act__pool_forget(s); /* no thread-exit hook touches it from now on */
    act__plugins_destroy(s->plugins);
    act__session_free(s);
}
