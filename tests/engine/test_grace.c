/* SPDX-License-Identifier: MIT */
/*
 * Destroy while other threads record (the grace period, grace.c): the main
 * thread starts, stops and destroys session after session while hammer
 * threads record without pause (scoped spans by id and by name, spans
 * with times, args, instants, counters) and short-lived threads come and
 * go. Stop must return only when no recording call that loaded the
 * session is still running: after it, the session's counts never change
 * again, and destroy frees nothing a call still writes (ASan: no
 * heap-use-after-free; TSan: no race with the free).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "actrace/actrace.h"
#include "check.h"

#define HAMMERS 3
#define ROUNDS 300

static atomic_int done;
static atomic_long calls;

static void *hammer(void *arg)
{
    long k = (long)arg;
    act_name_id name = act_name("grace");
    act_key_id key = act_key("k");
    while (!atomic_load_explicit(&done, memory_order_relaxed)) {
        for (int i = 0; i < 64; i++) {
            act_span_begin_id(ACT_CPU_OP, name);
            act_arg_int_k(key, i);
            act_span_end();
            act_span_begin(ACT_USER_ANNOTATION, "grace_str");
            act_span_end();
            int64_t t = act_now_ns();
            act_span_record_id(ACT_CPU_OP, name, t, t + 10);
            act_arg_str("s", "v");
            act_instant(ACT_USER_ANNOTATION, "tick");
            if ((i & 15) == 0)
                act_counter("grace", "n", (double)(k + i));
        }
        atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
    }
    return NULL;
}

static void *short_lived(void *arg)
{
    (void)arg;
    act_span_begin(ACT_CPU_OP, "short");
    act_span_end();
    return NULL;
}

static void stats(act_session *s, act_session_stats *st)
{
    memset(st, 0, sizeof *st);
    st->struct_size = sizeof *st;
    CHECK_OK(act_session_get_stats(s, st));
}

int main(void)
{
    act_log_set_level(ACT_LOG_ERROR);
    pthread_t th[HAMMERS];
    for (long i = 0; i < HAMMERS; i++)
        CHECK_FATAL(pthread_create(&th[i], NULL, hammer, (void *)i) == 0);
    int changed = 0, recorded_rounds = 0;
    for (int r = 0; r < ROUNDS; r++) {
        act_session *s;
        CHECK_FATAL(act_session_create(NULL, &s) == 0);
        CHECK_FATAL(act_session_start(s) == 0);
        /* Let the hammers attach and record a little. */
        long c0 = atomic_load(&calls);
        for (int spin = 0; spin < 200000 && atomic_load(&calls) < c0 + 2; spin++)
            sched_yield();
        if (r % 10 == 0) {
            pthread_t t;
            if (pthread_create(&t, NULL, short_lived, NULL) == 0)
                pthread_join(t, NULL);
        }
        CHECK_OK(act_session_stop(s));
        act_session_stats a, b;
        stats(s, &a);
        /* Give a call that loaded the session before stop time to write. */
        for (int i = 0; i < 20; i++)
            sched_yield();
        stats(s, &b);
        if (a.recorded != b.recorded || a.dropped != b.dropped ||
            a.args_recorded != b.args_recorded)
            changed++;
        recorded_rounds += a.recorded > 0;
        act_session_destroy(s);
    }
    atomic_store(&done, 1);
    for (int i = 0; i < HAMMERS; i++)
        pthread_join(th[i], NULL);
    /* Nothing was recorded into a stopped session. */
    CHECK_EQ_INT(changed, 0);
    CHECK(recorded_rounds > 0);
    fprintf(stderr, "RecordGrace: %d rounds, %d recorded, %ld hammer loops\n", ROUNDS,
            recorded_rounds, atomic_load(&calls));
    return check_done();
}
