/* SPDX-License-Identifier: MIT */
/*
 * Windows on the active session (act_window_*, actrace/session.h and
 * visit.h), through the public API: a window opened and closed on a
 * session that keeps collecting hands back exactly the events that started
 * and ended inside it (not those before or after, not a span still open),
 * while a second thread keeps recording into the session during the walk;
 * the owner's session is unchanged and its own read-back keeps everything.
 * A window whose session stopped, and a window with no active session,
 * are refused.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actrace/actrace.h"
#include "actrace/visit.h"
#include "check.h"

typedef struct seen {
    int64_t lo, hi;
    int before, inside, inside_rec, inside_i, after, open_span, hammer, out_of_bounds;
    int events;
} seen;

static void sleep_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void on_event(void *ctx, const act_visit_event *e)
{
    seen *s = ctx;
    s->events++;
    char name[32];
    size_t n = e->name_len < sizeof name - 1 ? e->name_len : sizeof name - 1;
    memcpy(name, e->name, n);
    name[n] = '\0';
    if (s->hi && (e->start_ns < s->lo || e->end_ns > s->hi))
        s->out_of_bounds++;
    if (!strcmp(name, "before"))
        s->before++;
    else if (!strcmp(name, "inside"))
        s->inside += e->end_ns >= e->start_ns + 1000000; /* slept 2 ms in it */
    else if (!strcmp(name, "inside_rec"))
        s->inside_rec++;
    else if (!strcmp(name, "inside_i"))
        s->inside_i++;
    else if (!strcmp(name, "after"))
        s->after++;
    else if (!strcmp(name, "open_span"))
        s->open_span++;
    else if (!strcmp(name, "hammer"))
        s->hammer++;
}

static atomic_int stop_hammer;
static atomic_int hammered; /* spans the hammer has ended */

static void *hammer(void *arg)
{
    (void)arg;
    /* Bounded: under TSan an unbounded writer outgrows the walks. */
    for (int i = 0; i < 20000 && !atomic_load(&stop_hammer); i++) {
        act_span_begin(ACT_CPU_OP, "hammer");
        act_span_end();
        atomic_fetch_add(&hammered, 1);
    }
    return NULL;
}

static void visitor(act_visitor *v, seen *s, const act_window *w)
{
    memset(s, 0, sizeof *s);
    act_visitor_init(v);
    v->ctx = s;
    v->event = on_event;
    if (w)
        act_window_bounds(w, &s->lo, &s->hi);
}

int main(void)
{
    unsetenv("ACTRACE_PLUGINS");
    unsetenv("ACTRACE_RECORD_DIR");
    act_window *w = NULL, *w2 = NULL;
    act_visitor v;
    seen got;

    CHECK_EQ_INT(act_window_open(NULL), ACT_EINVAL);
    CHECK_EQ_INT(act_window_close(NULL), ACT_EINVAL);
    act_window_free(NULL);
    act_window_bounds(NULL, NULL, NULL);
    /* No active session: nothing to open a window on. */
    CHECK_EQ_INT(act_window_open(&w), ACT_ESTATE);
    CHECK(w == NULL);

    act_session *s = NULL;
    CHECK_FATAL(act_session_create(NULL, &s) == 0);
    CHECK_FATAL(act_session_start(s) == 0);

    act_span_begin(ACT_CPU_OP, "before");
    sleep_us(200);
    act_span_end();
    sleep_us(200);

    CHECK_FATAL(act_window_open(&w) == 0);
    int64_t lo = 0, hi = -1;
    act_window_bounds(w, &lo, &hi);
    CHECK(lo > 0);
    CHECK_EQ_INT(hi, 0); /* open */
    act_span_begin(ACT_CPU_OP, "inside");
    sleep_us(2000);
    act_span_end();
    int64_t t = act_now_ns();
    act_span_record(ACT_CPU_OP, "inside_rec", t, t + 1000);
    act_instant(ACT_CPU_INSTANT_EVENT, "inside_i");
    act_span_begin(ACT_USER_ANNOTATION, "open_span"); /* ends after the window */
    sleep_us(200);
    CHECK_FATAL(act_window_open(&w2) == 0); /* a second window, left open */
    CHECK_EQ_INT(act_window_close(w), 0);
    CHECK_EQ_INT(act_window_close(w), ACT_ESTATE);
    act_window_bounds(w, &lo, &hi);
    CHECK(hi >= lo && hi > 0);
    sleep_us(200);
    act_span_end(); /* open_span */
    act_span_begin(ACT_CPU_OP, "after");
    sleep_us(200);
    act_span_end();

    /* The walk runs while another thread keeps recording. */
    pthread_t th;
    CHECK_FATAL(pthread_create(&th, NULL, hammer, NULL) == 0);
    /* Until the hammer has recorded (a loaded machine may not run it for
     * a while; no time is asserted, only bounded: 30 s). */
    for (int i = 0; i < 30000 && atomic_load(&hammered) < 100; i++)
        sleep_us(1000);
    CHECK_FATAL(atomic_load(&hammered) >= 100);
    for (int pass = 0; pass < 3; pass++) {
        visitor(&v, &got, w);
        CHECK_EQ_INT(act_window_visit(w, &v), 0);
        CHECK_EQ_INT(got.out_of_bounds, 0);
        CHECK_EQ_INT(got.before, 0);
        CHECK_EQ_INT(got.inside, 1);
        CHECK_EQ_INT(got.inside_rec, 1);
        CHECK_EQ_INT(got.inside_i, 1);
        CHECK_EQ_INT(got.open_span, 0);
        CHECK_EQ_INT(got.after, 0);
        CHECK_EQ_INT(got.hammer, 0);
    }
    /* The second window is still open: until now; it saw open_span end
     * after its start but start before it, so not that; after and the
     * hammer's spans are inside it. */
    visitor(&v, &got, NULL);
    CHECK_EQ_INT(act_window_visit(w2, &v), 0);
    CHECK_EQ_INT(got.inside, 0);
    CHECK_EQ_INT(got.open_span, 0);
    CHECK_EQ_INT(got.after, 1);
    CHECK(got.hammer > 0);
    atomic_store(&stop_hammer, 1);
    pthread_join(th, NULL);

    /* A bad visitor: refused as by act_session_visit. */
    act_visitor bad;
    memset(&bad, 0, sizeof bad);
    CHECK_EQ_INT(act_window_visit(w, &bad), ACT_EINVAL);
    CHECK_EQ_INT(act_window_visit(w, NULL), ACT_EINVAL);
    CHECK_EQ_INT(act_window_visit(NULL, &v), ACT_EINVAL);

    /* The owner's session is unchanged: its read-back has everything. */
    CHECK_FATAL(act_session_stop(s) == 0);
    visitor(&v, &got, NULL);
    CHECK_EQ_INT(act_window_visit(w, &v), ACT_ESTATE); /* no longer active */
    CHECK_EQ_INT(act_session_visit(s, &v), 0);
    CHECK_EQ_INT(got.before, 1);
    CHECK_EQ_INT(got.inside, 1);
    CHECK_EQ_INT(got.inside_rec, 1);
    CHECK_EQ_INT(got.inside_i, 1);
    CHECK_EQ_INT(got.open_span, 1);
    CHECK_EQ_INT(got.after, 1);
    CHECK(got.hammer > 0);
    act_window_free(w);
    act_window_free(w2);
    act_session_destroy(s);
    return check_done();
}
