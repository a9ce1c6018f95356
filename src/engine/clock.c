/* SPDX-License-Identifier: MIT */
/*
 * Counter timestamps (engine.h, act__ticks). Scoped spans and instants
 * store the host counter raw where it is invariant and the kernel itself
 * keeps CLOCK_MONOTONIC on it; the session records calibration pairs
 * (counter, CLOCK_MONOTONIC) when it is created, as the drain works
 * (before it copies chunks out of the pool, and every CAL_PERIOD_NS) and
 * at stop, and turns the ticks into nanoseconds off the hot path through
 * the piecewise-linear map those pairs make. Every conversion of a tick
 * goes through the same segment of the same map (pairs are only ever
 * appended, after the ticks they convert), so converted times keep the
 * counter's order on every thread and lie between the two pairs' clock
 * readings around them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "engine/engine.h"

/* The longest the drain goes without a pair while the session runs. */
#define CAL_PERIOD_NS INT64_C(250000000)

static int ticks_ok = -1;
static pthread_once_t ticks_once = PTHREAD_ONCE_INIT;

/* The first line of @p path (NUL-ended, newline cut) into @p buf, or "". */
static void first_line(const char *path, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (!fgets(buf, (int)size, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

#if defined(__x86_64__)
/* 1 if the first "flags" line of /proc/cpuinfo names @p a and @p b. */
static int cpu_flags(const char *a, const char *b)
{
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (!f)
        return 0;
    char line[8192];
    int ok = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        int na = 0, nb = 0;
        for (char *save = NULL, *w = strtok_r(line + 5, " \t:\n", &save); w;
             w = strtok_r(NULL, " \t:\n", &save)) {
            na |= strcmp(w, a) == 0;
            nb |= strcmp(w, b) == 0;
        }
        ok = na && nb;
        break;
    }
    fclose(f);
    return ok;
}
#endif

static void ticks_probe(void)
{
    char cs[64];
    first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", cs, sizeof cs);
#if defined(__x86_64__)
    ticks_ok = strcmp(cs, "tsc") == 0 && cpu_flags("constant_tsc", "nonstop_tsc");
#elif defined(__aarch64__)
    ticks_ok = strcmp(cs, "arch_sys_counter") == 0;
#else
    (void)cs;
    ticks_ok = 0;
#endif
}

int act__ticks_usable(void)
{
    pthread_once(&ticks_once, ticks_probe);
    return ticks_ok;
}

act__cal act__cal_read(void)
{
    act__cal best = {0, 0};
    int64_t width = INT64_MAX;
    for (int k = 0; k < 3; k++) {
        int64_t a = act__ticks() & ACT__TICK_MASK;
        int64_t ns = act__clock_ns();
        int64_t b = act__ticks() & ACT__TICK_MASK;
        if (b - a < width) {
            width = b - a;
            best.tick = a + (b - a) / 2;
            best.ns = ns;
        }
    }
    return best;
}

/* Segment [c[i], c[i+1]]'s nanoseconds per tick, and the line through
 * c[i] at @p tick: the one formula act__cal_conv and the drain's run
 * (run_conv) both use, so that the two agree to the bit. */
static inline double seg_slope(const act__cal *c, size_t i)
{
    return (double)(c[i + 1].ns - c[i].ns) / (double)(c[i + 1].tick - c[i].tick);
}

static inline int64_t seg_value(const act__cal *c, size_t i, double slope, int64_t tick)
{
    return c[i].ns + (int64_t)((double)(tick - c[i].tick) * slope);
}

int64_t act__cal_conv(const act__cal *c, size_t n, size_t *hint, int64_t tick)
{
    tick &= ACT__TICK_MASK;
    if (n == 0)
        return 0;
    if (n == 1)
        return c[0].ns;
    /* The segment [c[i], c[i+1]] holding the tick, or an end one. */
    size_t i = *hint < n - 1 ? *hint : 0;
    if (!(c[i].tick <= tick && tick < c[i + 1].tick)) {
        if (tick < c[0].tick) {
            i = 0;
        } else if (tick >= c[n - 1].tick) {
            i = n - 2;
        } else {
            size_t lo = 0, hi = n - 1; /* c[lo].tick <= tick < c[hi].tick */
            while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (c[mid].tick <= tick)
                    lo = mid;
                else
                    hi = mid;
            }
            i = lo;
        }
        *hint = i;
    }
    int64_t v = seg_value(c, i, seg_slope(c, i), tick);
    if (tick < c[0].tick)
        return v < 0 ? 0 : v;
    /* Inside a segment: between its ends (rounding never steps out). */
    if (tick < c[n - 1].tick && v > c[i + 1].ns)
        v = c[i + 1].ns;
    if (v < c[i].ns)
        v = c[i].ns;
    return v;
}

int act__cal_init(act_session *s)
{
    if (!s->use_ticks)
        return 0;
    s->capcal = 64;
    s->cal = malloc(s->capcal * sizeof *s->cal);
    if (!s->cal) {
        s->use_ticks = 0;
        return 0;
    }
    s->cal[0] = act__cal_read();
    s->ncal = 1;
    return 0;
}

void act__cal_free(act_session *s)
{
    free(s->loose);
    s->loose = NULL;
    s->nloose = s->caploose = 0;
    pthread_mutex_destroy(&s->cal_lock);
    free(s->cal);
    s->cal = NULL;
    s->ncal = s->capcal = 0;
}

/* Append a pair if @p need or the last is CAL_PERIOD_NS old. Under cal_lock. */
static void cal_add_locked(act_session *s, int need)
{
    act__cal p = act__cal_read();
    act__cal *last = &s->cal[s->ncal - 1];
    if (!need && p.ns - last->ns < CAL_PERIOD_NS)
        return;
    if (p.tick <= last->tick || p.ns < last->ns)
        return; /* never out of order (the same instant twice) */
    if (s->ncal == s->capcal) {
        size_t cap = s->capcal * 2;
        act__cal *nc = realloc(s->cal, cap * sizeof *nc);
        if (!nc)
            return; /* the map goes on from the last pair: less exact, still ordered */
        s->cal = nc;
        s->capcal = cap;
    }
    s->cal[s->ncal++] = p;
}

void act__cal_add(act_session *s, int need)
{
    if (!s->use_ticks)
        return;
    pthread_mutex_lock(&s->cal_lock);
    cal_add_locked(s, need);
    pthread_mutex_unlock(&s->cal_lock);
}

/*
 * act__cal_conv for a run of ticks that mostly fall in one segment (a
 * chunk's records: the drain settles chunks before the pair after them is
 * taken, so a whole chunk shares a segment): the segment's slope is kept,
 * so that a tick inside it costs a multiply, not a division (act__cal_conv
 * divides on every call). The same formula as act__cal_conv's inside a
 * segment (seg_slope, seg_value), so the same nanoseconds to the bit
 * (test_clock.c compares the two); any other tick goes to act__cal_conv,
 * and the segment it lands in is kept.
 */
typedef struct cal_run {
    const act__cal *c;
    size_t n, i;  /* pairs, and the segment [c[i], c[i+1]] kept */
    double slope; /* segment i's, when seg */
    int seg;
} cal_run;

/* A tick outside the kept segment: act__cal_conv, and its segment kept. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int64_t run_miss(cal_run *r, int64_t tick)
{
    const act__cal *c = r->c;
    int64_t v = act__cal_conv(c, r->n, &r->i, tick);
    if (r->n >= 2) {
        r->slope = seg_slope(c, r->i);
        r->seg = 1;
    }
    return v;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline int64_t run_conv(cal_run *r, int64_t tick)
{
    tick &= ACT__TICK_MASK;
    const act__cal *c = r->c;
    size_t i = r->i;
    if (ACT_LIKELY(r->seg && c[i].tick <= tick && tick < c[i + 1].tick)) {
        int64_t v = seg_value(c, i, r->slope, tick);
        if (v > c[i + 1].ns)
            v = c[i + 1].ns;
        if (v < c[i].ns)
            v = c[i].ns;
        return v;
    }
    return run_miss(r, tick);
}

int64_t act__cal_conv_run(const act__cal *c, size_t n, const int64_t *ticks, int64_t *out,
                          size_t k)
{
    cal_run r = {c, n, 0, 0.0, 0};
    int64_t last = 0;
    for (size_t j = 0; j < k; j++)
        out[j] = last = run_conv(&r, ticks[j]);
    return last;
}

/* Turn the ticks of chunk @p c's spans and instants into nanoseconds. The
 * caller owns the chunk's records (the drain, a sealed unpinned slot; stop,
 * recording over). Under cal_lock. */
static void settle_locked(act_session *s, act__chunk *c)
{
    cal_run run = {s->cal, s->ncal, 0, 0.0, 0};
    uint32_t n = atomic_load_explicit(&c->used, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        act__rec *r = &c->recs[i];
        if (r->kind != ACT__R_SPAN && r->kind != ACT__R_INSTANT)
            continue;
        /* t0 stored as a relaxed atomic: a window (session/window.c) may
         * read the running session's records meanwhile. */
        int64_t t0 = r->t0;
        if (act__is_tick(t0)) {
            t0 = run_conv(&run, t0);
            __atomic_store_n(&r->t0, t0, __ATOMIC_RELAXED);
        }
        int64_t t1 = atomic_load_explicit(&r->t1, memory_order_relaxed);
        if (act__is_tick(t1)) {
            t1 = run_conv(&run, t1);
            if (t1 < t0)
                t1 = t0;
            atomic_store_explicit(&r->t1, t1, memory_order_relaxed);
        }
    }
    c->settled = 1;
}

void act__settle_chunk(act_session *s, act__chunk *c)
{
    if (!s->use_ticks || c->settled)
        return;
    pthread_mutex_lock(&s->cal_lock);
    settle_locked(s, c);
    pthread_mutex_unlock(&s->cal_lock);
}

int64_t act__time_of(act_session *s, int64_t v)
{
    if (!act__is_tick(v))
        return v;
    if (!s->use_ticks)
        return v & ACT__TICK_MASK; /* never written so: no map to go by */
    pthread_mutex_lock(&s->cal_lock);
    if (s->ncal == 0 || (v & ACT__TICK_MASK) >= s->cal[s->ncal - 1].tick)
        cal_add_locked(s, 1); /* a pair after it: never extrapolated */
    size_t hint = 0;
    int64_t ns = act__cal_conv(s->cal, s->ncal, &hint, v);
    pthread_mutex_unlock(&s->cal_lock);
    return ns;
}
