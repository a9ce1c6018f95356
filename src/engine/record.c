/* SPDX-License-Identifier: MIT */
/*
 * The recording fast path (record.h). Every call starts with one relaxed
 * load of the recording target and a branch; with no session collecting,
 * that is all it costs. With one, it finds the calling thread's buffer
 * through a thread-local cache validated by the session's generation,
 * writes one 32-byte record and publishes it with a release store.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

_Atomic(act_session *) act__recording;

/*
 * All thread-local state in one block with the initial-exec TLS model: one
 * %fs-relative access instead of a __tls_get_addr call per variable, which
 * the default model for a shared library would cost on every event. The
 * block is small (under 300 bytes) so it fits the static TLS surplus glibc
 * reserves for libraries loaded with dlopen.
 */
#define CORR_DEPTH 32
typedef struct tls_block {
    uint64_t gen;       /* session the cached buffer belongs to */
    act__thread *thread;
    uint32_t corr_depth; /* external correlation stack, session-independent */
    uint32_t busy;       /* inside a recording call (signal-safety guard) */
    uint64_t corr[CORR_DEPTH];
} tls_block;

#if defined(__GNUC__) || defined(__clang__)
#define ACT_TLS_IE __attribute__((tls_model("initial-exec")))
#else
#define ACT_TLS_IE
#endif
static _Thread_local tls_block tl ACT_TLS_IE;
#define tl_gen tl.gen
#define tl_thread tl.thread
#define tl_corr tl.corr
#define tl_corr_depth tl.corr_depth

/* Called in a fork()ed child: the child starts with a clean state. */
void act__record_atfork_child(void);
void act__record_atfork_child(void)
{
    tl_gen = 0;
    tl_thread = NULL;
    tl_corr_depth = 0;
}

#if defined(__GNUC__) || defined(__clang__)
#define ACT_NOINLINE __attribute__((noinline))
#else
#define ACT_NOINLINE
#endif

/* The one check every public recording call makes first: one load and a
 * branch. The load is an acquire (it pairs with the release store that
 * published the session, so the session's fields are seen initialised);
 * on x86-64 and for the compiler that is the same single plain load as a
 * relaxed one. The work for an active session lives in separate
 * non-inlined functions so that the inactive path saves no registers and
 * sets up no frame. */
#define IF_RECORDING(s) \
    act_session *s = atomic_load_explicit(&act__recording, memory_order_acquire); \
    if (ACT_LIKELY(s == NULL)) \
        return;

/*
 * Signal safety. A signal handler that records while it interrupted a
 * recording call of its own thread would write into the same record slot,
 * or wait for a lock that its own thread holds (the session lock while a
 * chunk is carved). Each recording call marks its thread busy for its
 * whole duration, buffer lookup included; a call that finds the mark set
 * comes from a handler that interrupted one, records nothing, and is
 * counted as dropped (ACT__DROP_REENTRANT, a session-wide atomic counter:
 * the interrupted call may be updating the thread's own counters). Only
 * the same thread reads the mark, so compiler barriers order it against
 * the record writes; no atomic instruction is needed.
 */
int act__rec_enter(void)
{
    if (ACT_UNLIKELY(tl.busy))
        return 0;
    tl.busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
    return 1;
}

void act__rec_leave(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    tl.busy = 0;
}

void act__reentrant_drop(act_session *s)
{
    atomic_fetch_add_explicit(&s->dropped_reentrant, 1, memory_order_relaxed);
}

/* Run BODY (a call) under the guard; a nested call counts one drop. */
#define GUARDED(s, BODY) \
    do { \
        if (ACT_UNLIKELY(tl.busy)) { \
            act__reentrant_drop(s); \
            return; \
        } \
        tl.busy = 1; \
        atomic_signal_fence(memory_order_seq_cst); \
        BODY; \
        atomic_signal_fence(memory_order_seq_cst); \
        tl.busy = 0; \
    } while (0)

static ACT_NOINLINE act__thread *attach(act_session *s)
{
    act__thread *t = act__thread_get(s);
    if (t) {
        tl_gen = s->gen;
        tl_thread = t;
    }
    return t;
}

/* The calling thread's buffer for the (non-NULL) recording session. */
static inline act__thread *thread_of(act_session *s)
{
    if (ACT_LIKELY(tl_gen == s->gen))
        return tl_thread;
    return attach(s);
}


static inline uint64_t corr_current(void)
{
    uint32_t d = tl_corr_depth;
    return d && d <= CORR_DEPTH ? tl_corr[d - 1] : 0;
}

/* 1 if @p type is selected; otherwise counts the drop and returns 0. */
static inline int admit(act__thread *t, int type)
{
    if (ACT_LIKELY(act__type_selected(t->session, type)))
        return 1;
    act__thread_drop(t, type,
                     act__type_slot(type) < 0 ? ACT__DROP_BAD_TYPE
                                              : ACT__DROP_NOT_SELECTED);
    return 0;
}

/* A record slot with @p strbytes of string space behind it, or NULL. */
static inline act__rec *slot(act__thread *t, uint32_t strbytes)
{
    if (ACT_UNLIKELY((char *)(t->rec + 1) + strbytes > t->str)) {
        if (act__thread_reserve(t, 1, strbytes) != 0)
            return NULL;
    }
    return t->rec;
}

static inline void push(act__thread *t, act__rec *r, int args_ok)
{
    t->rec = r + 1;
    t->used++;
    t->args_ok = (uint8_t)args_ok;
    act__thread_commit(t);
}

static inline act__rec *event(act__thread *t, int type, uint8_t kind,
                              act_name_id id, const char *name)
{
    uint32_t len = 0, space = 0;
    if (name) {
        size_t n = strlen(name);
        len = n > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)n;
        space = act__str_space(len);
    }
    act__rec *r = slot(t, space);
    if (ACT_UNLIKELY(!r)) {
        act__thread_drop(t, type, ACT__DROP_BUFFER_FULL);
        return NULL;
    }
    /* An id that act_name() never returned is written as an empty name;
     * one with the local-string bit must never reach the writer. */
    r->name = name ? act__thread_put_str(t, name, len) : (id & ACT__REF_LOCAL ? 0 : id);
    r->x = corr_current();
    r->type = (uint16_t)type;
    r->kind = kind;
    r->flags = 0;
    return r;
}

static inline void span_begin_body(act_session *s, act_activity_type type,
                                    act_name_id id, const char *name)
{
    act__thread *t = thread_of(s);
    if (!t)
        return;
    uint32_t d = t->depth++;
    act__rec *r = NULL;
    if (ACT_UNLIKELY(d >= ACT__MAX_DEPTH)) {
        act__thread_drop(t, type, ACT__DROP_UNBALANCED);
        return;
    }
    if (admit(t, type) && (r = event(t, type, ACT__R_SPAN, id, name)) != NULL) {
        r->t0 = act__clock_ns();
        atomic_store_explicit(&r->t1, ACT__OPEN, memory_order_relaxed);
        push(t, r, 1);
    }
    t->open[d] = r;
}

static ACT_NOINLINE void span_begin(act_session *s, act_activity_type type,
                                    act_name_id id, const char *name)
{
    GUARDED(s, span_begin_body(s, type, id, name));
}

void act_span_begin(act_activity_type type, const char *name)
{
    IF_RECORDING(s)
    span_begin(s, type, 0, name ? name : "");
}

void act_span_begin_id(act_activity_type type, act_name_id name)
{
    IF_RECORDING(s)
    span_begin(s, type, name, NULL);
}

static inline void span_end_body(act_session *s)
{
    act__thread *t = thread_of(s);
    if (!t)
        return;
    if (ACT_UNLIKELY(t->depth == 0)) {
        act__thread_drop(t, -1, ACT__DROP_UNBALANCED);
        return;
    }
    uint32_t d = --t->depth;
    if (d < ACT__MAX_DEPTH && t->open[d])
        atomic_store_explicit(&t->open[d]->t1, act__clock_ns(),
                              memory_order_relaxed);
}

static ACT_NOINLINE void span_end(act_session *s)
{
    /* A nested end is not counted: the nested begin it pairs with was. */
    if (ACT_UNLIKELY(tl.busy))
        return;
    tl.busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
    span_end_body(s);
    atomic_signal_fence(memory_order_seq_cst);
    tl.busy = 0;
}

void act_span_end(void)
{
    IF_RECORDING(s)
    span_end(s);
}

static inline void span_record_body(act_session *s, act_activity_type type,
                                     act_name_id id, const char *name,
                                     int64_t start, int64_t end)
{
    act__thread *t = thread_of(s);
    if (!t || !admit(t, type))
        return;
    if (ACT_UNLIKELY(end < start || !act__time_ok(start) || !act__time_ok(end))) {
        act__thread_drop(t, type, ACT__DROP_BAD_TIMES);
        return;
    }
    act__rec *r = event(t, type, ACT__R_SPAN, id, name);
    if (!r)
        return;
    r->t0 = start;
    atomic_store_explicit(&r->t1, end, memory_order_relaxed);
    push(t, r, 1);
}

static ACT_NOINLINE void span_record(act_session *s, act_activity_type type,
                                     act_name_id id, const char *name,
                                     int64_t start, int64_t end)
{
    GUARDED(s, span_record_body(s, type, id, name, start, end));
}

void act_span_record(act_activity_type type, const char *name,
                     int64_t start_ns, int64_t end_ns)
{
    IF_RECORDING(s)
    span_record(s, type, 0, name ? name : "", start_ns, end_ns);
}

void act_span_record_id(act_activity_type type, act_name_id name,
                        int64_t start_ns, int64_t end_ns)
{
    IF_RECORDING(s)
    span_record(s, type, name, NULL, start_ns, end_ns);
}

static inline void instant_body(act_session *s, act_activity_type type,
                                 act_name_id id, const char *name)
{
    act__thread *t = thread_of(s);
    if (!t || !admit(t, type))
        return;
    act__rec *r = event(t, type, ACT__R_INSTANT, id, name);
    if (!r)
        return;
    r->t0 = act__clock_ns();
    atomic_store_explicit(&r->t1, r->t0, memory_order_relaxed);
    push(t, r, 1);
}

static ACT_NOINLINE void instant(act_session *s, act_activity_type type,
                                 act_name_id id, const char *name)
{
    GUARDED(s, instant_body(s, type, id, name));
}

void act_instant(act_activity_type type, const char *name)
{
    IF_RECORDING(s)
    instant(s, type, 0, name ? name : "");
}

void act_instant_id(act_activity_type type, act_name_id name)
{
    IF_RECORDING(s)
    instant(s, type, name, NULL);
}

static inline void counter_body(act_session *s, const char *track,
                                 const char *series, const char *unit,
                                 double value)
{
    act__thread *t = thread_of(s);
    if (!t)
        return;
    if (!track || !series) {
        act__thread_drop(t, -1, ACT__DROP_BAD_TYPE);
        return;
    }
    if (ACT_UNLIKELY(!isfinite(value))) {
        act__thread_drop(t, -1, ACT__DROP_NONFINITE);
        return;
    }
    /* The cache is keyed by the pointers but verified by content, so a
     * buffer reused for another name never hits a stale entry. */
    size_t h = (((uintptr_t)track >> 3) ^ ((uintptr_t)series >> 5)) & 15;
    uint32_t id;
    if (t->ccache[h].track == track && t->ccache[h].series == series &&
        strcmp(t->ccache[h].sp->track, track) == 0 &&
        strcmp(t->ccache[h].sp->series, series) == 0) {
        id = t->ccache[h].id;
    } else {
        act__series *sp;
        if (act__series_find(t->session, 0, ACT__HOST_DEVICE, track, series,
                             unit, &id, &sp) != 0) {
            act__thread_drop(t, -1, ACT__DROP_BUFFER_FULL);
            return;
        }
        t->ccache[h].track = track;
        t->ccache[h].series = series;
        t->ccache[h].sp = sp;
        t->ccache[h].id = id;
    }
    act__thread_put_counter(t, id, act__clock_ns(), value);
}

static ACT_NOINLINE void counter(act_session *s, const char *track,
                                 const char *series, const char *unit,
                                 double value)
{
    GUARDED(s, counter_body(s, track, series, unit, value));
}

void act_counter_unit(const char *track, const char *series, const char *unit,
                      double value)
{
    IF_RECORDING(s)
    counter(s, track, series, unit, value);
}

void act_counter(const char *track, const char *series, double value)
{
    act_counter_unit(track, series, NULL, value);
}

/* ---- args ----------------------------------------------------------------- */

static inline act__rec *arg_slot(act__thread *t, const char *key,
                                 uint32_t extra)
{
    if (ACT_UNLIKELY(!t->args_ok)) {
        act__thread_drop(t, -1, ACT__DROP_ORPHAN_ARG);
        return NULL;
    }
    if (!key)
        key = "";
    size_t n = strlen(key);
    uint32_t klen = n > 65535 ? 65535 : (uint32_t)n;
    act__rec *r = slot(t, act__str_space(klen) + extra);
    if (ACT_UNLIKELY(!r)) {
        act__thread_drop(t, -1, ACT__DROP_BUFFER_FULL);
        return NULL;
    }
    r->name = act__thread_put_str(t, key, klen);
    r->type = 0;
    r->kind = ACT__R_ARG;
    atomic_store_explicit(&r->t1, 0, memory_order_relaxed);
    r->t0 = 0;
    return r;
}

static inline void arg_scalar_body(act_session *s, const char *key,
                                    act__vkind kind, uint64_t bits)
{
    act__thread *t = thread_of(s);
    if (!t)
        return;
    act__rec *r = arg_slot(t, key, 0);
    if (!r)
        return;
    r->flags = (uint8_t)kind;
    r->x = bits;
    push(t, r, 1);
}

static ACT_NOINLINE void arg_scalar(act_session *s, const char *key,
                                    act__vkind kind, uint64_t bits)
{
    GUARDED(s, arg_scalar_body(s, key, kind, bits));
}

void act_arg_int(const char *key, int64_t value)
{
    IF_RECORDING(s)
    arg_scalar(s, key, ACT__V_INT, (uint64_t)value);
}

void act_arg_uint(const char *key, uint64_t value)
{
    IF_RECORDING(s)
    arg_scalar(s, key, ACT__V_UINT, value);
}

void act_arg_double(const char *key, double value)
{
    IF_RECORDING(s)
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    arg_scalar(s, key, ACT__V_DOUBLE, bits);
}

void act_arg_bool(const char *key, int value)
{
    IF_RECORDING(s)
    arg_scalar(s, key, ACT__V_BOOL, value != 0);
}

static inline void arg_strn_body(act_session *s, const char *key,
                                  const char *value, size_t len)
{
    act__thread *t = thread_of(s);
    if (!t)
        return;
    if (!value) {
        value = "";
        len = 0;
    }
    uint32_t vlen = len > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)len;
    act__rec *r = arg_slot(t, key, act__str_space(vlen));
    if (!r)
        return;
    r->flags = ACT__V_STR;
    r->x = act__thread_put_str(t, value, vlen);
    push(t, r, 1);
}

static ACT_NOINLINE void arg_strn(act_session *s, const char *key,
                                  const char *value, size_t len)
{
    GUARDED(s, arg_strn_body(s, key, value, len));
}

void act_arg_strn(const char *key, const char *value, size_t len)
{
    IF_RECORDING(s)
    arg_strn(s, key, value, len);
}

void act_arg_str(const char *key, const char *value)
{
    act_arg_strn(key, value, value ? strlen(value) : 0);
}

/* ---- correlation ---------------------------------------------------------- */

void act_correlation_push(uint64_t id)
{
    /* Deeper pushes keep counting so pops stay balanced. */
    if (tl_corr_depth < CORR_DEPTH)
        tl_corr[tl_corr_depth] = id;
    tl_corr_depth++;
}

void act_correlation_pop(void)
{
    if (tl_corr_depth)
        tl_corr_depth--;
}

uint64_t act_correlation_current(void)
{
    return corr_current();
}

int64_t act_now_ns(void)
{
    return act__clock_ns();
}

act__thread *act__thread_for(act_session *s)
{
    if (ACT_LIKELY(tl_gen == s->gen))
        return tl_thread;
    act__thread *t = act__thread_get(s);
    if (t) {
        tl_gen = s->gen;
        tl_thread = t;
    }
    return t;
}
