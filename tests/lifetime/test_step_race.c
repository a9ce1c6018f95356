/* SPDX-License-Identifier: MIT */
/*
 * act_step racing with the session's lifecycle (issue 12, "Concurrency and
 * lifetime"):
 *  - a window close started by act_step on another thread is inside a
 *    plugin's flush when the app writes and destroys the session: write
 *    must wait for it, and the flush's record must be in the trace (it was
 *    lost, and the flush then ran after finalize and dlclose: SIGSEGV);
 *  - a window open started by act_step is inside a plugin's start when the
 *    app destroys the session: no plugin call may overlap start, none may
 *    run after finalize;
 *  - act_session_start against a thread stepping all the time (the start
 *    iteration was resolved after the session was published: a TSan
 *    report), then stop and destroy while it still steps.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "engine/trace_util.h"

static _Atomic int start_entered, flush_entered;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 15];

static void on_log(void *user, act_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    if (strstr(msg, "tp_slow start entered"))
        atomic_store(&start_entered, 1);
    if (strstr(msg, "tp_slow flush entered"))
        atomic_store(&flush_entered, 1);
    pthread_mutex_lock(&log_lock);
    size_t n = strlen(log_text);
    snprintf(log_text + n, sizeof log_text - n, "%s\n", msg);
    pthread_mutex_unlock(&log_lock);
}

static void wait_flag(_Atomic int *f)
{
    while (!atomic_load(f)) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

static act_session *make(const char *config, int with_plugin)
{
    static const char *const plugins[] = {TP_SLOW_PATH};
    act_session_opts o;
    act_session_opts_init(&o);
    o.config_text = config;
    o.config_text_len = strlen(config);
    if (with_plugin) {
        o.plugins = plugins;
        o.plugin_count = 1;
    }
    act_session *s = NULL;
    int rc = act_session_create(&o, &s);
    if (rc != 0) {
        fprintf(stderr, "act_session_create: %s\n", act_strerror(rc));
        exit(1);
    }
    return s;
}

static void *step_once(void *arg)
{
    (void)arg;
    act_step();
    return NULL;
}

static int log_has(const char *needle)
{
    pthread_mutex_lock(&log_lock);
    int r = strstr(log_text, needle) != NULL;
    pthread_mutex_unlock(&log_lock);
    return r;
}

/* act_step closes the window (flush sleeps) while the app writes. */
static void test_flush_vs_write(void)
{
    setenv("TPS_SLOW", "flush", 1);
    atomic_store(&flush_entered, 0);
    log_text[0] = '\0';
    act_session *s = make("PROFILE_START_ITERATION=1\nACTIVITIES_ITERATIONS=1\n", 1);
    CHECK_OK(act_session_start(s));
    act_step(); /* iteration 1: the window opens */
    pthread_t th;
    CHECK_FATAL(pthread_create(&th, NULL, step_once, NULL) == 0); /* closes it */
    wait_flag(&flush_entered);
    const char *path = tu_trace_path("lifetime_step_flush.json");
    CHECK_OK(act_session_write(s, path));
    act_session_destroy(s);
    pthread_join(th, NULL);
    CHECK(log_has("tp_slow flush left"));
    CHECK(!log_has("overlap"));
    CHECK(!log_has("refused"));
    json_t *root = tu_load(path);
    CHECK_EQ_INT((long long)tu_count(root, "X", "tp_slow_late_flush"), 1);
    json_decref(root);
}

/* act_step opens the window (start sleeps) while the app destroys. */
static void test_start_vs_destroy(void)
{
    setenv("TPS_SLOW", "start", 1);
    atomic_store(&start_entered, 0);
    log_text[0] = '\0';
    act_session *s = make("PROFILE_START_ITERATION=1\nACTIVITIES_ITERATIONS=5\n", 1);
    CHECK_OK(act_session_start(s));
    pthread_t th;
    CHECK_FATAL(pthread_create(&th, NULL, step_once, NULL) == 0);
    wait_flag(&start_entered);
    act_session_destroy(s);
    CHECK(log_has("tp_slow start left"));
    CHECK(!log_has("overlap"));
    pthread_join(th, NULL);
}

static _Atomic int stepping;

static void *step_loop(void *arg)
{
    (void)arg;
    while (atomic_load_explicit(&stepping, memory_order_relaxed))
        act_step();
    return NULL;
}

/* Sessions started, stopped and destroyed under a thread that steps. */
static void test_start_vs_step(void)
{
    unsetenv("TPS_SLOW");
    atomic_store(&stepping, 1);
    pthread_t th;
    CHECK_FATAL(pthread_create(&th, NULL, step_loop, NULL) == 0);
    for (int i = 0; i < 40; i++) {
        /* Window relative to the steps at start (warmup iterations), or at
         * an absolute iteration; odd rounds with the plugin. */
        act_session *s = make(i % 2 ? "ACTIVITIES_WARMUP_ITERATIONS=3\nACTIVITIES_ITERATIONS=50\n"
                                    : "PROFILE_START_ITERATION=10\nACTIVITIES_ITERATIONS=100\n",
                              i % 2);
        CHECK_OK(act_session_start(s));
        for (int k = 0; k < 200; k++)
            act_instant(ACT_USER_ANNOTATION, "x");
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
        act_session_stop(s);
        act_session_destroy(s);
    }
    atomic_store(&stepping, 0);
    pthread_join(th, NULL);
    CHECK(!log_has("overlap"));
}

int main(void)
{
    act_log_set(on_log, NULL);
    act_log_set_level(ACT_LOG_WARN);
    test_flush_vs_write();
    test_start_vs_destroy();
    test_start_vs_step();
    CHECK_MAIN_END;
}
