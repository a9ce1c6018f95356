/* SPDX-License-Identifier: MIT */
/*
 * Counter timestamps (engine/clock.c): the conversion through calibration
 * pairs, fed synthetic pairs (exact at the pairs, within a nanosecond of
 * the line between them, never decreasing, across slope changes and past
 * the ends); then end to end where the machine's counter is used: scoped
 * spans and instants, through the drain's copies (a small pool) and what
 * stop settles in place, lie between the clock readings around them, in
 * order on their thread, none left in counter units; HOST_CLOCK and
 * ACTRACE_CLOCK = monotonic turn the counter off.
 */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "engine/engine.h"
#include "engine/frame.h"
#include "engine/trace_util.h"

/* The drain's run conversion (a segment's slope kept) gives act__cal_conv's
 * value to the bit: ticks in order through every segment and past both
 * ends, tagged or not, in random order, and with one pair or none. The
 * pairs are irregular (a counter near 2.1 GHz with jitter), so that the
 * slopes are not exact in binary and a different rounding would show. */
static void test_conv_run_same(void)
{
    enum { NP = 40, K = 200000 };
    act__cal c[NP];
    int64_t ns = 1000000007, tick = 123456789;
    srand(11);
    for (int i = 0; i < NP; i++) {
        c[i].tick = tick;
        c[i].ns = ns;
        int64_t dn = 250000000 + rand() % 1000;
        ns += dn;
        tick += dn * 21 / 10 + rand() % 977;
    }
    static int64_t in[K], got[K];
    int64_t span = c[NP - 1].tick - c[0].tick;
    for (int i = 0; i < K; i++) /* in order, from before the first pair to after the last */
        in[i] = c[0].tick - 5000 + (int64_t)((double)i / K * (double)(span + 10000));
    for (int i = 0; i < K; i += 3)
        in[i] |= ACT__TICK_TAG;
    for (size_t n = 0; n <= NP; n += n < 3 ? 1 : NP - 3) {
        act__cal_conv_run(c, n, in, got, K);
        size_t hint = 0;
        int bad = 0;
        for (int i = 0; i < K; i++)
            bad += got[i] != act__cal_conv(c, n, &hint, in[i]);
        CHECK_EQ_INT(bad, 0);
    }
    for (int i = 0; i < K; i++) /* random order */
        in[i] = c[0].tick - 5000 + (int64_t)(((uint64_t)rand() << 16 ^ (uint64_t)rand()) %
                                             (uint64_t)(span + 10000));
    act__cal_conv_run(c, NP, in, got, K);
    int bad = 0;
    for (int i = 0; i < K; i++) {
        size_t cold = 0;
        bad += got[i] != act__cal_conv(c, NP, &cold, in[i]);
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_conv_synthetic(void)
{
    /* ticks = 3 ns^-1 * ns + 1000, pairs every 1e6 ns, then a slope change
     * (2.5 ticks per ns) from the 6th pair on. */
    act__cal c[10];
    int64_t ns = 5000000, tick = 7000000;
    for (int i = 0; i < 10; i++) {
        c[i].tick = tick;
        c[i].ns = ns;
        ns += 1000000;
        tick += i < 5 ? 3000000 : 2500000;
    }
    size_t hint = 0;
    /* Exact at each pair (tagged or not). */
    for (int i = 0; i < 10; i++) {
        CHECK_EQ_INT(act__cal_conv(c, 10, &hint, c[i].tick), c[i].ns);
        CHECK_EQ_INT(act__cal_conv(c, 10, &hint, c[i].tick | ACT__TICK_TAG), c[i].ns);
    }
    /* Between pairs: on the line, within 1 ns. */
    for (int64_t k = 0; k < 3000000; k += 777) {
        int64_t v = act__cal_conv(c, 10, &hint, c[0].tick + k);
        int64_t want = c[0].ns + k / 3;
        CHECK(v >= want - 1 && v <= want + 1);
    }
    /* Never decreasing, with the hint cold or warm, across the slope
     * change and past both ends. */
    int64_t prev = INT64_MIN;
    for (int64_t t = c[0].tick - 100000; t < c[9].tick + 5000000; t += 997) {
        size_t cold = 0;
        int64_t v = act__cal_conv(c, 10, &hint, t);
        CHECK_EQ_INT(act__cal_conv(c, 10, &cold, t), v);
        CHECK(v >= prev);
        prev = v;
    }
    /* Random order (the hint jumping about) gives the same values. */
    srand(7);
    for (int i = 0; i < 100000; i++) {
        int64_t t = c[0].tick + (int64_t)(rand() % 25000000);
        size_t cold = 0;
        CHECK_EQ_INT(act__cal_conv(c, 10, &hint, t), act__cal_conv(c, 10, &cold, t));
    }
    /* Past the last pair: the last segment's slope (2.5 ticks per ns). */
    CHECK_EQ_INT(act__cal_conv(c, 10, &hint, c[9].tick + 2500000), c[9].ns + 1000000);
    /* One pair: its time. */
    CHECK_EQ_INT(act__cal_conv(c, 1, &hint, c[0].tick + 12345), c[0].ns);
    /* Tagged values are told apart from nanoseconds and ACT__OPEN. */
    CHECK(act__is_tick(INT64_C(12345) | ACT__TICK_TAG));
    CHECK(!act__is_tick(INT64_C(1) << 61));
    CHECK(!act__is_tick(ACT__OPEN));
}

/* A real pair is read within a few microseconds of the clock. */
static void test_cal_read(void)
{
    if (!act__ticks_usable())
        return;
    act__cal a = act__cal_read();
    int64_t n0 = act__clock_ns();
    act__cal b = act__cal_read();
    CHECK(b.tick > a.tick);
    CHECK(a.ns <= n0 && n0 <= b.ns);
}

/* Every span and instant of @p s: times in nanoseconds (no tag), each
 * span's end at or after its start, the scoped ones (named @p nm) in
 * [lo, hi] and in order on their thread. Returns the spans seen. */
static long check_times(act_session *s, act_name_id nm, int64_t lo, int64_t hi)
{
    long n = 0;
    /* The archive's frame nodes read as chunks, as the writer reads them. */
    act__inflated u;
    pthread_mutex_lock(&s->lock);
    CHECK_EQ_INT(act__frames_inflate(s, &u), 0);
    for (act__thread *t = s->threads; t; t = t->next) {
        int64_t prev = INT64_MIN;
        for (act__chunk *c = t->head; c; c = atomic_load(&c->next)) {
            uint32_t used = atomic_load(&c->used);
            for (uint32_t i = 0; i < used; i++) {
                act__rec *r = &c->recs[i];
                if (r->kind != ACT__R_SPAN && r->kind != ACT__R_INSTANT)
                    continue;
                int64_t t1 = atomic_load(&r->t1);
                CHECK(!act__is_tick(r->t0));
                CHECK(!act__is_tick(t1));
                CHECK(t1 >= r->t0);
                if (r->name != nm)
                    continue;
                CHECK(r->t0 >= lo - 1000 && t1 <= hi + 1000);
                CHECK(r->t0 >= prev);
                prev = r->t0;
                n++;
            }
        }
    }
    act__frames_restore(s, &u);
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* @p n spans, each bracketed by act_now_ns() readings that must hold it
 * (within 1 us) once converted. */
static void run_spans(const char *cfg, long n, int want_ticks)
{
    act_session *s = tu_session(cfg);
    CHECK_EQ_INT(s->use_ticks, want_ticks);
    act_name_id nm = act_name("clock test span");
    int64_t lo = act_now_ns();
    for (long i = 0; i < n; i++) {
        int64_t a = act_now_ns();
        act_span_begin_id(ACT_USER_ANNOTATION, nm);
        if (i % 3 == 0)
            act_arg_int("i", i);
        act_span_end();
        int64_t b = act_now_ns();
        /* A given-time span around it, on the clock: the writer sorts both. */
        act_span_record(ACT_USER_ANNOTATION, "given", a, b);
    }
    act_instant(ACT_CPU_INSTANT_EVENT, "an instant");
    int64_t hi = act_now_ns();
    CHECK_EQ_INT(act_session_stop(s), 0);
    CHECK_EQ_INT(check_times(s, nm, lo, hi), n);
    /* Each scoped span inside its given-time twin (1 us of slack). */
    act_session_destroy(s);
}

/* Each span within 1 us of the act_now_ns() reads around it, one by one. */
static void test_bracketed(void)
{
    act_session *s = tu_session("BUFFER_POOL_MB = 1\n");
    act_name_id nm = act_name("bracketed");
    enum { N = 20000 };
    static int64_t before[N], after[N];
    for (long i = 0; i < N; i++) {
        before[i] = act_now_ns();
        act_span_begin_id(ACT_USER_ANNOTATION, nm);
        act_span_end();
        after[i] = act_now_ns();
    }
    CHECK_EQ_INT(act_session_stop(s), 0);
    long k = 0;
    act__inflated u;
    pthread_mutex_lock(&s->lock);
    CHECK_EQ_INT(act__frames_inflate(s, &u), 0);
    for (act__thread *t = s->threads; t; t = t->next)
        for (act__chunk *c = t->head; c; c = atomic_load(&c->next))
            for (uint32_t i = 0; i < atomic_load(&c->used); i++) {
                act__rec *r = &c->recs[i];
                if (r->kind != ACT__R_SPAN || r->name != nm)
                    continue;
                CHECK(k < N);
                CHECK(r->t0 >= before[k] - 1000 && r->t0 <= after[k] + 1000);
                CHECK(atomic_load(&r->t1) >= before[k] - 1000 &&
                      atomic_load(&r->t1) <= after[k] + 1000);
                k++;
            }
    act__frames_restore(s, &u);
    pthread_mutex_unlock(&s->lock);
    CHECK_EQ_INT(k, N);
    act_session_destroy(s);
}

/* A running session's records read through act__time_of: nanoseconds
 * between the clock reads around the span, whether settled yet or not. */
static void test_time_of_running(void)
{
    act_session *s = tu_session("");
    act_name_id nm = act_name("running");
    int64_t a = act_now_ns();
    act_span_begin_id(ACT_USER_ANNOTATION, nm);
    act_span_end();
    int64_t b = act_now_ns();
    act__rec *r = NULL;
    for (act__thread *t = s->threads; t; t = t->next)
        for (act__chunk *c = t->head; c; c = atomic_load(&c->next))
            for (uint32_t i = 0; i < atomic_load(&c->used); i++)
                if (c->recs[i].kind == ACT__R_SPAN && c->recs[i].name == nm)
                    r = &c->recs[i];
    CHECK_FATAL(r != NULL);
    CHECK_EQ_INT(act__is_tick(r->t0), s->use_ticks);
    int64_t t0 = act__time_of(s, r->t0), t1 = act__time_of(s, atomic_load(&r->t1));
    CHECK(t0 >= a - 1000 && t0 <= t1 && t1 <= b + 1000);
    CHECK_EQ_INT(act__time_of(s, 12345), 12345);
    CHECK_EQ_INT(act_session_stop(s), 0);
    /* Settled at stop to the same values. */
    CHECK_EQ_INT(r->t0, t0);
    CHECK_EQ_INT(atomic_load(&r->t1), t1);
    act_session_destroy(s);
}

int main(void)
{
    test_time_of_running();
    test_conv_synthetic();
    test_conv_run_same();
    test_cal_read();
    int ticks = ACT__HAVE_TICKS && act__ticks_usable();
    printf("counter timestamps here: %s\n", ticks ? "yes" : "no (clock_gettime)");
    /* In place at stop (a large pool), and through the drain's copies
     * (a 1 MB pool: it drains once half is used). */
    run_spans("", 20000, ticks);
    run_spans("BUFFER_POOL_MB = 1\n", 200000, ticks);
    run_spans("BUFFER_POOL_MB = 0\n", 50000, ticks);
    run_spans("HOST_CLOCK = monotonic\n", 1000, 0);
    setenv("ACTRACE_CLOCK", "monotonic", 1);
    run_spans("", 1000, 0);
    unsetenv("ACTRACE_CLOCK");
    test_bracketed();
    return check_done();
}
