/* SPDX-License-Identifier: MIT */
/*
 * The recording fast path (record.h). Every call starts with one relaxed
 * load of the recording target and a branch; with no session collecting,
 * that is all it costs. With one, it finds the calling thread's buffer
 * through a thread-local cache validated by the session's generation,
 * writes one 32-byte record and publishes it with a release store.
 */
#include <link.h>
#include <math.h>
#include <stddef.h>
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
    /* The generation of the session the cached buffer belongs to (even:
     * session.c counts them in twos) with bit 0 set while the thread is
     * inside a recording call (the signal-safety guard). The fast paths
     * check both with one compare against the session's generation. */
    uint64_t gb;
    act__thread *thread;
    uint32_t corr_depth; /* external correlation stack, session-independent */
    /* The grace period's word (grace.c, engine.h ACT__RD_*): the count of
     * recording calls this thread is in (a signal handler's nests), and
     * whether the thread is registered. Read by act__grace_wait on other
     * threads: accessed as an atomic, by plain loads and stores. */
    _Atomic uint32_t rd;
    uint64_t serial;     /* act__thread_serial, 0 until first asked */
    uint64_t corr_cur;   /* corr_current(), kept up to date by push and pop */
    uint64_t corr[CORR_DEPTH];
} tls_block;

#if defined(__GNUC__) || defined(__clang__)
#define ACT_TLS_IE __attribute__((tls_model("initial-exec")))
#else
#define ACT_TLS_IE
#endif
static _Thread_local tls_block tl ACT_TLS_IE;
#define TL_BUSY UINT64_C(1)
#define tl_busy (tl.gb & TL_BUSY)
#define tl_gen (tl.gb & ~TL_BUSY)
#define tl_thread tl.thread
#define tl_corr tl.corr
#define tl_corr_depth tl.corr_depth

/* Cache @p t as the calling thread's buffer for @p s (the busy bit kept). */
static inline void tl_set(const act_session *s, act__thread *t)
{
    tl.gb = s->gen | tl_busy;
    tl_thread = t;
}

static _Atomic uint64_t next_serial = 1;

uint64_t act__thread_serial(void)
{
    if (ACT_UNLIKELY(!tl.serial))
        tl.serial = atomic_fetch_add_explicit(&next_serial, 1, memory_order_relaxed);
    return tl.serial;
}

/* Called in a fork()ed child: the child starts with a clean state. */
void act__record_atfork_child(void);
void act__record_atfork_child(void)
{
    tl.gb &= TL_BUSY;
    tl_thread = NULL;
    tl_corr_depth = 0;
    tl.corr_cur = 0;
}

#if defined(__GNUC__) || defined(__clang__)
#define ACT_NOINLINE __attribute__((noinline))
#define ACT_INLINE inline __attribute__((always_inline))
#else
#define ACT_NOINLINE
#define ACT_INLINE inline
#endif

/* The one check every public recording call makes first: one load and a
 * branch. The load is an acquire (it pairs with the release store that
 * published the session, so the session's fields are seen initialised);
 * on x86-64 and for the compiler that is the same single plain load as a
 * relaxed one. The work for an active session lives in separate
 * non-inlined functions so that the inactive path saves no registers and
 * sets up no frame. */
#define IF_RECORDING_DO(s, NESTED) \
    act_session *s = atomic_load_explicit(&act__recording, memory_order_acquire); \
    if (ACT_LIKELY(s == NULL)) \
        return; \
    RD_SCOPE(s, NESTED)
/* An event call: a nested one counts one dropped event. */
#define IF_RECORDING(s) IF_RECORDING_DO(s, act__reentrant_drop(s))
/* An arg call: a nested one counts one dropped arg. */
#define IF_RECORDING_ARG(s) \
    IF_RECORDING_DO(s, atomic_fetch_add_explicit(&(s)->args_dropped_reentrant, 1, \
                                                 memory_order_relaxed))

/*
 * The grace period's read side (grace.c): a call that found a session
 * counts itself in tl.rd, then loads act__recording again; only a session
 * loaded after the count is used (stop's membarrier orders stop's
 * unpublishing store and its reading of the count against the two). The
 * count is taken back when the call's scope ends (a cleanup attribute:
 * every return). The common case (registered, not nested, the same
 * session) is a load, two compares and an add; anything else goes to
 * rd_slow: the thread's first call registers it. A nested call (a signal
 * handler that interrupted a recording call of its thread) records
 * nothing: it runs NESTED (counts its drop) if the call it interrupted
 * was registered (which keeps the session alive), and returns. The fast
 * paths rely on it: they are entered only outside any other call
 * (rd_fast) and set no busy mark of their own.
 */
static ACT_NOINLINE act_session *rd_slow(uint32_t v)
{
    if (!(v & ACT__RD_REG)) {
        /* Nested in an unregistered call, or after the exit hook: nothing
         * shows stop this thread's count. */
        if (v & (ACT__RD_COUNT | ACT__RD_GONE))
            return NULL;
        if (act__grace_register(&tl.rd) != 0)
            return NULL;
    }
    return atomic_load_explicit(&act__recording, memory_order_acquire);
}

/* 1 if the thread is in another recording call (@p v: its word before
 * this call counted itself). */
#define RD_NESTED(v) (((v) & ACT__RD_COUNT) != 0)

/* One more, one less: on x86-64 a single add to memory each (not locked:
 * only this thread writes the word; other threads read it whole), so a
 * signal handler cannot come between a load and a store; elsewhere and
 * under TSan a load and a store (a handler in between leaves the word as
 * it found it). The release on the way out: stop's acquire load of a
 * zero count sees every access of the call before it. */
#if ACT_X86_PLAIN
static ACT_INLINE void rd_inc(void)
{
    __asm__ volatile("addl $1, %0" : "+m"(*(uint32_t *)&tl.rd)::"memory");
}
static ACT_INLINE void rd_leave(void)
{
    __asm__ volatile("subl $1, %0" : "+m"(*(uint32_t *)&tl.rd)::"memory");
}
#else
static ACT_INLINE void rd_inc(void)
{
    atomic_store_explicit(&tl.rd, atomic_load_explicit(&tl.rd, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
}
static ACT_INLINE void rd_leave(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&tl.rd, atomic_load_explicit(&tl.rd, memory_order_relaxed) - 1,
                          memory_order_release);
}
#endif

/* Count the call; the word as it was. */
static ACT_INLINE uint32_t rd_enter(void)
{
    uint32_t v = atomic_load_explicit(&tl.rd, memory_order_relaxed);
    rd_inc();
    return v;
}

static ACT_INLINE void rd_cleanup(const char *unused)
{
    (void)unused;
    rd_leave();
}

#define RD_SCOPE(s, NESTED) \
    const char rd_scope_ __attribute__((cleanup(rd_cleanup), unused)) = 0; \
    uint32_t rd_v_ = rd_enter(); \
    if (ACT_UNLIKELY(rd_v_ != ACT__RD_REG || \
                     atomic_load_explicit(&act__recording, memory_order_acquire) != s)) { \
        if ((s = rd_slow(rd_v_)) == NULL) \
            return; \
        if (RD_NESTED(rd_v_)) { \
            NESTED; \
            return; \
        } \
    }

_Atomic uint32_t *act__rd_word(void)
{
    return &tl.rd;
}

/* The count for a fast path (the public call itself, no cleanup scope, so
 * that it saves no register and its full path is a tail call): 1 with the
 * thread counted (registered, in no other call, the session @p s still
 * published), else 0 with nothing changed (the full path, a separate
 * function with IF_RECORDING, decides again from scratch). */
static ACT_INLINE int rd_fast(const act_session *s)
{
#if ACT_X86_PLAIN
    /* Plain reads, so that each is one compare with memory (the asm's
     * memory clobber in rd_inc keeps the second load after the add). */
    if (ACT_UNLIKELY(*(const uint32_t *)&tl.rd != ACT__RD_REG))
        return 0;
    rd_inc();
    if (ACT_LIKELY(*(act_session *const *)&act__recording == s)) {
        /* An acquire: the session may be a new one at the same address,
         * published since the first load (x86-64 keeps loads in order;
         * the fence keeps the compiler's). */
        atomic_signal_fence(memory_order_acquire);
        return 1;
    }
#else
    if (ACT_UNLIKELY(atomic_load_explicit(&tl.rd, memory_order_relaxed) != ACT__RD_REG))
        return 0;
    rd_inc();
    if (ACT_LIKELY(atomic_load_explicit(&act__recording, memory_order_acquire) == s))
        return 1;
#endif
    rd_leave();
    return 0;
}

/* A public call's first check, for the calls with a fast path (rd_fast). */
#define IF_RECORDING_FAST(s) \
    act_session *s = atomic_load_explicit(&act__recording, memory_order_acquire); \
    if (ACT_LIKELY(s == NULL)) \
        return;

/* The lazy stand-in's wake (engine.h), uncounted while the session starts
 * (the start may wait for a stop, which waits for counted calls), then
 * the session loaded again, counted. */
static ACT_NOINLINE act_session *rd_wake(void)
{
    rd_leave();
    act_session *r = act__lazy_wake();
    rd_enter();
    if (!r)
        return NULL;
    r = atomic_load_explicit(&act__recording, memory_order_acquire);
    return r && !r->lazy ? r : NULL;
}

act_session *act__rd_begin(void)
{
    act_session *s = atomic_load_explicit(&act__recording, memory_order_acquire);
    if (!s)
        return NULL;
    uint32_t v = rd_enter();
    if (v != ACT__RD_REG || atomic_load_explicit(&act__recording, memory_order_acquire) != s)
        s = rd_slow(v);
    if (s && ACT_UNLIKELY(s->lazy))
        s = rd_wake();
    if (!s)
        rd_leave();
    return s;
}

void act__rd_end(void)
{
    rd_leave();
}

/* In a full path: the stand-in of a lazily started session (engine.h)
 * becomes the real one here, once; NULL drops the call. */
#define WAKE(s) \
    if (ACT_UNLIKELY(s->lazy) && (s = rd_wake()) == NULL) \
        return;

/*
 * Signal safety. A signal handler that records while it interrupted a
 * recording call of its own thread would write into the same record slot,
 * or wait for a lock that its own thread holds (the session lock while a
 * chunk is carved). Every public recording call counts itself in tl.rd for
 * its whole duration (the grace period's count, RD_SCOPE and rd_fast); a
 * call that finds the count raised comes from a handler that interrupted
 * one, records nothing, and is counted as dropped (ACT__DROP_REENTRANT, a
 * session-wide atomic counter: the interrupted call may be updating the
 * thread's own counters). The engine's other entries (act_name, plugin
 * emits, get_stats) take the busy mark in tl.gb instead (act__rec_enter),
 * which the fast paths' generation compare sees, and the full paths take
 * it too (GUARD). Only the same thread reads the mark, so compiler
 * barriers order it against the record writes; no atomic instruction is
 * needed.
 */
int act__rec_enter(void)
{
    /* (A recording call's fast path sets no busy mark: its count.) */
    if (ACT_UNLIKELY(tl_busy || (atomic_load_explicit(&tl.rd, memory_order_relaxed) & ACT__RD_COUNT)))
        return 0;
    tl.gb |= TL_BUSY;
    atomic_signal_fence(memory_order_seq_cst);
    return 1;
}

int act__rec_enter_counted(void)
{
    if (ACT_UNLIKELY(tl_busy ||
                     (atomic_load_explicit(&tl.rd, memory_order_relaxed) & ACT__RD_COUNT) > 1))
        return 0;
    tl.gb |= TL_BUSY;
    atomic_signal_fence(memory_order_seq_cst);
    return 1;
}

void act__rec_leave(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    tl.gb &= ~TL_BUSY;
}

void act__reentrant_drop(act_session *s)
{
    atomic_fetch_add_explicit(&s->dropped_reentrant, 1, memory_order_relaxed);
}

/* Run BODY (a call) under the guard; a nested call runs NESTED instead
 * (it counts the drop) and returns. */
#define GUARD(NESTED, BODY) \
    do { \
        if (ACT_UNLIKELY(tl_busy)) { \
            NESTED; \
            return; \
        } \
        tl.gb |= TL_BUSY; \
        atomic_signal_fence(memory_order_seq_cst); \
        BODY; \
        atomic_signal_fence(memory_order_seq_cst); \
        tl.gb &= ~TL_BUSY; \
    } while (0)

/* GUARD for an event call: a nested one counts one dropped event. */
#define GUARDED(s, BODY) GUARD(act__reentrant_drop(s), BODY)

static ACT_NOINLINE act__thread *attach(act_session *s)
{
    act__thread *t = act__thread_get(s);
    if (t)
        tl_set(s, t);
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
    return tl.corr_cur;
}

/* The innermost recorded id at the stack's depth now. */
static inline void corr_update(void)
{
    uint32_t d = tl_corr_depth;
    tl.corr_cur = d && d <= CORR_DEPTH ? tl_corr[d - 1] : 0;
}

/* Count a dropped event: its args are dropped with it. */
static inline void drop_event(act__thread *t, int type, act__drop_reason why)
{
    act__thread_drop(t, type, why);
    t->args_ok = ACT__ARGS_DROPPED;
}

/* 1 if @p type is selected; otherwise counts the drop and returns 0. */
static inline int admit(act__thread *t, int type)
{
    if (ACT_LIKELY(act__type_selected(t->session, type)))
        return 1;
    drop_event(t, type,
                     act__type_slot(type) < 0 ? ACT__DROP_BAD_TYPE
                                              : ACT__DROP_NOT_SELECTED);
    return 0;
}

static int reserve(act__thread *t, uint32_t nrec, uint32_t strbytes);

/* A slot for an event record with @p strbytes of string space behind it,
 * and room for one arg record after it (an event and its first args land
 * in the same chunk), or NULL. */
static inline act__rec *slot(act__thread *t, uint32_t strbytes)
{
    if (ACT_UNLIKELY((char *)t->rec + strbytes >= t->lim)) {
        if (reserve(t, 2, strbytes) != 0)
            return NULL;
    }
    return t->rec;
}

/* Commit event @p r: args may attach to it from now on. Its group (the
 * event and its args, kept or dropped together) is set up by its first
 * arg (group_begin), so that an argless event costs only the commit. */
static inline void push(act__thread *t, act__rec *r)
{
    t->rec = r + 1;
    t->args_ok = ACT__ARGS_FRESH;
    act__thread_commit(t, 1);
}

/* The first arg of the event just committed (args_ok ACT__ARGS_FRESH):
 * nothing was written since, so the event is the tail chunk's last
 * record, and room for one arg record follows it (slot). */
static ACT_INLINE void group_begin(act__thread *t)
{
    t->grp_chunk = t->tail;
    t->grp_start = act__thread_used(t) - 1;
    t->arg_half = NULL;
    t->args_ok = ACT__ARGS_OK;
}

/*
 * The fast paths. A public call first tries to record inline, with no
 * call and no saved register: it takes the guard, then checks everything
 * the full path would decide differently (the thread's cached buffer, the
 * type, the times, room in the tail chunk); if any check fails it lets
 * the guard go, having changed nothing, and runs the full path, which
 * decides again from scratch. The guard is taken before the cursor is
 * read: a signal handler that records in between cannot leave it stale.
 */
/* 1 with the guard taken (the thread's buffer is then tl_thread, never
 * NULL: tl_gen is only set with a thread, by attach and
 * act__thread_for, and no session has generation 0), 0 for the full path. */
/* No busy mark of their own: a fast path runs inside a counted call
 * (IF_RECORDING, rd_fast), and a call that interrupts it (a signal
 * handler) sees the count and records nothing (RD_SCOPE, act__rec_enter).
 * The compare still fails while another guard holds the busy mark (a
 * handler that interrupted act__rec_enter's users: get_stats, act_name). */
static inline int fast_enter(const act_session *s)
{
    if (ACT_UNLIKELY(tl.gb != s->gen)) /* busy, or another session's */
        return 0;
    atomic_signal_fence(memory_order_seq_cst);
    return 1;
}

static inline void fast_leave(void)
{
    atomic_signal_fence(memory_order_seq_cst);
}

/* fast_enter against @p gen (the session's generation, or its counter
 * generation: tick_gen). */
static inline int fast_enter_gen(uint64_t gen)
{
    if (ACT_UNLIKELY(tl.gb != gen))
        return 0;
    atomic_signal_fence(memory_order_seq_cst);
    return 1;
}

/* A builtin type the session selects (others take the full path). */
static inline int fast_type_ok(const act_session *s, int type)
{
    return (unsigned)type < 64 && ((s->builtin_mask >> type) & 1);
}

/* end >= start, both within the window around the session's anchor (the
 * stricter fast window of engine.h, in one test: an unsigned difference
 * below the bound also orders the two). Anything else takes the full
 * path, which also compares with the clock. */
static inline int fast_times_ok(const act_session *s, int64_t start, int64_t end)
{
    uint64_t a = (uint64_t)start - s->fast_time_lo, d = (uint64_t)end - (uint64_t)start;
    return ((a | d) & ~(uint64_t)(ACT__FAST_WINDOW - 1)) == 0;
}

/* type, kind and flags of a record in one 32-bit store. */
static inline void rec_tag(act__rec *r, uint16_t type, uint8_t kind, uint8_t flags)
{
    _Static_assert(offsetof(act__rec, kind) == offsetof(act__rec, type) + 2 &&
                   offsetof(act__rec, flags) == offsetof(act__rec, type) + 3,
                   "type, kind, flags: one little-endian word");
    uint32_t w = (uint32_t)type | (uint32_t)kind << 16 | (uint32_t)flags << 24;
    memcpy(&r->type, &w, sizeof w);
}

static uint32_t name_ref(act__thread *t, const char *name);

static inline act__rec *event(act__thread *t, int type, uint8_t kind,
                              act_name_id id, const char *name)
{
    uint32_t len = 0, space = 0;
    if (name) {
        /* A repeated name costs what an interned one does. */
        uint32_t nid = name_ref(t, name);
        if (nid) {
            id = nid;
            name = NULL;
        }
    }
    if (name) {
        size_t n = strlen(name);
        len = n > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)n;
        space = act__str_space(len);
    }
    act__rec *r = slot(t, space);
    if (ACT_UNLIKELY(!r)) {
        drop_event(t, type, ACT__DROP_BUFFER_FULL);
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
        drop_event(t, type, ACT__DROP_UNBALANCED);
        return;
    }
    if (admit(t, type) && (r = event(t, type, ACT__R_SPAN, id, name)) != NULL) {
        r->t0 = act__span_now(s);
        atomic_store_explicit(&r->t1, ACT__OPEN, memory_order_relaxed);
        push(t, r);
    }
    t->open[d] = r;
}

static ACT_NOINLINE void span_begin(act_session *s, act_activity_type type,
                                    act_name_id id, const char *name)
{
    WAKE(s)
    GUARDED(s, span_begin_body(s, type, id, name));
}

static ACT_INLINE uint32_t key_fast(const act__thread *t, const char *key);

/* The fast paths' begin, the checks done (room at @p r, depth @p d below
 * the limit): span record @p r opened at depth @p d, its start @p now. */
static ACT_INLINE void span_open_fast(act__thread *t, act__rec *r, uint32_t d, int64_t now,
                                      act_activity_type type, uint32_t name)
{
    t->depth = d + 1;
    r->t0 = now;
    atomic_store_explicit(&r->t1, ACT__OPEN, memory_order_relaxed);
    r->x = corr_current();
    r->name = name;
    rec_tag(r, (uint16_t)type, ACT__R_SPAN, 0);
    t->open[d] = r;
    push(t, r);
}

/* act_span_begin's fast path: a string literal the thread has seen (its
 * interned id cached on its pointer), looked up under the guard (a
 * signal handler may change the cache). */
static ACT_INLINE int begin_fast_str(act_session *s, act_activity_type type, const char *name)
{
    if (ACT_LIKELY(fast_type_ok(s, type) && fast_enter_gen(s->tick_gen))) {
        act__thread *t = tl_thread;
        act__rec *r = t->rec;
        uint32_t d = t->depth;
        uint32_t id = key_fast(t, name);
        if (ACT_LIKELY(id && (char *)r < t->lim && d < ACT__MAX_DEPTH)) {
            span_open_fast(t, r, d, act__ticks(), type, id);
            fast_leave();
            return 1;
        }
        fast_leave();
    }
    return 0;
}

static ACT_NOINLINE void span_begin_str_slow(act_activity_type type, const char *name)
{
    IF_RECORDING(s)
    span_begin(s, type, 0, name ? name : "");
}

void act_span_begin(act_activity_type type, const char *name)
{
    IF_RECORDING_FAST(s)
    if (name && ACT_LIKELY(rd_fast(s))) {
        int ok = begin_fast_str(s, type, name);
        rd_leave();
        if (ACT_LIKELY(ok))
            return;
    }
    span_begin_str_slow(type, name);
}

/*
 * The scoped fast paths, as act_span_record_id's plus the open-span stack:
 * anything they would decide differently (depth at the limit, no room,
 * another session's buffer, a type not selected, the innermost span
 * dropped) takes the full path, which decides again. @p now is read
 * before the checks: on the counter (act__ticks) inline; on the clock
 * in a separate function (span_*_clock), so that the counter's path saves
 * no register for a call.
 */
static ACT_INLINE int begin_fast(act_session *s, act_activity_type type, act_name_id name,
                                 uint64_t gen, int ticks)
{
    if (ACT_LIKELY(fast_type_ok(s, type) && !(name & ACT__REF_LOCAL) && fast_enter_gen(gen))) {
        act__thread *t = tl_thread;
        act__rec *r = t->rec;
        uint32_t d = t->depth;
        if (ACT_LIKELY((char *)r < t->lim && d < ACT__MAX_DEPTH)) {
            span_open_fast(t, r, d, ticks ? act__ticks() : act__clock_ns(), type, name);
            fast_leave();
            return 1;
        }
        fast_leave();
    }
    return 0;
}

static ACT_NOINLINE void span_begin_clock(act_activity_type type, act_name_id name)
{
    IF_RECORDING(s)
    if (!begin_fast(s, type, name, s->gen, 0))
        span_begin(s, type, name, NULL);
}

void act_span_begin_id(act_activity_type type, act_name_id name)
{
    IF_RECORDING_FAST(s)
    if (ACT_LIKELY(rd_fast(s))) {
        /* One compare tests the thread's buffer and the counter clock. */
        int ok = begin_fast(s, type, name, s->tick_gen, 1);
        rd_leave();
        if (ACT_LIKELY(ok))
            return;
    }
    span_begin_clock(type, name);
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
        atomic_store_explicit(&t->open[d]->t1, act__span_now(s),
                              memory_order_relaxed);
}

static ACT_NOINLINE void span_end(act_session *s)
{
    if (ACT_UNLIKELY(s->lazy))
        return; /* nothing was begun */
    /* A nested end is not counted: the nested begin it pairs with was. */
    if (ACT_UNLIKELY(tl_busy))
        return;
    tl.gb |= TL_BUSY;
    atomic_signal_fence(memory_order_seq_cst);
    span_end_body(s);
    atomic_signal_fence(memory_order_seq_cst);
    tl.gb &= ~TL_BUSY;
}

static ACT_INLINE int end_fast(uint64_t gen, int ticks)
{
    if (ACT_LIKELY(fast_enter_gen(gen))) {
        act__thread *t = tl_thread;
        /* depth 0 wraps past ACT__MAX_DEPTH; 64 bits: an index as is */
        size_t d = (size_t)t->depth - 1;
        act__rec *r;
        if (ACT_LIKELY(d < ACT__MAX_DEPTH && (r = t->open[d]) != NULL)) {
            t->depth = (uint32_t)d;
            atomic_store_explicit(&r->t1, ticks ? act__ticks() : act__clock_ns(),
                                  memory_order_relaxed);
            fast_leave();
            return 1;
        }
        fast_leave();
    }
    return 0;
}

static ACT_NOINLINE void span_end_clock(void)
{
    /* A nested end is not counted: the nested begin it pairs with was. */
    IF_RECORDING_DO(s, (void)0)
    if (!end_fast(s->gen, 0))
        span_end(s);
}

void act_span_end(void)
{
    IF_RECORDING_FAST(s)
    if (ACT_LIKELY(rd_fast(s))) {
        int ok = end_fast(s->tick_gen, 1);
        rd_leave();
        if (ACT_LIKELY(ok))
            return;
    }
    span_end_clock();
}

static inline void span_record_body(act_session *s, act_activity_type type,
                                     act_name_id id, const char *name,
                                     int64_t start, int64_t end)
{
    act__thread *t = thread_of(s);
    if (!t || !admit(t, type))
        return;
    if (ACT_UNLIKELY(end < start || !act__session_time_ok(s, start) ||
                     !act__session_time_ok(s, end))) {
        drop_event(t, type, ACT__DROP_BAD_TIMES);
        return;
    }
    act__rec *r = event(t, type, ACT__R_SPAN, id, name);
    if (!r)
        return;
    r->t0 = start;
    atomic_store_explicit(&r->t1, end, memory_order_relaxed);
    push(t, r);
}

/* (The session last: act_span_record_id's fast path hands its own
 * arguments on in the registers they came in.) */
static ACT_NOINLINE void span_record(act_activity_type type, act_name_id id,
                                     int64_t start, int64_t end, const char *name,
                                     act_session *s)
{
    WAKE(s)
    GUARDED(s, span_record_body(s, type, id, name, start, end));
}

void act_span_record(act_activity_type type, const char *name,
                     int64_t start_ns, int64_t end_ns)
{
    IF_RECORDING(s)
    span_record(type, 0, start_ns, end_ns, name ? name : "", s);
}

static ACT_NOINLINE void span_record_id_slow(act_activity_type type, act_name_id name,
                                             int64_t start_ns, int64_t end_ns)
{
    IF_RECORDING(s)
    span_record(type, name, start_ns, end_ns, NULL, s);
}

void act_span_record_id(act_activity_type type, act_name_id name,
                        int64_t start_ns, int64_t end_ns)
{
    IF_RECORDING_FAST(s)
    if (ACT_UNLIKELY(!rd_fast(s)))
        goto slow;
    /* The checks that need no thread state first, while few registers
     * are live. */
    if (ACT_LIKELY(fast_type_ok(s, type) && fast_times_ok(s, start_ns, end_ns) &&
                   !(name & ACT__REF_LOCAL) && fast_enter(s))) {
        act__thread *t = tl_thread;
        act__rec *r = t->rec;
        if (ACT_LIKELY((char *)r < t->lim)) {
            r->t0 = start_ns;
            atomic_store_explicit(&r->t1, end_ns, memory_order_relaxed);
            r->x = corr_current();
            r->name = name;
            rec_tag(r, (uint16_t)type, ACT__R_SPAN, 0);
            push(t, r);
            fast_leave();
            rd_leave();
            return;
        }
        fast_leave();
    }
    rd_leave();
slow:
    span_record_id_slow(type, name, start_ns, end_ns);
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
    r->t0 = act__span_now(s);
    atomic_store_explicit(&r->t1, r->t0, memory_order_relaxed);
    push(t, r);
}

static ACT_NOINLINE void instant(act_session *s, act_activity_type type,
                                 act_name_id id, const char *name)
{
    WAKE(s)
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
    WAKE(s)
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

static inline void arg_drop(act__thread *t, int why)
{
    _Atomic uint64_t *c = &t->args_dropped[why];
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/*
 * Arg keys: a per-thread two-way cache keyed by the pointer. Keys are
 * nearly always string literals: a key found in a read-only segment of a
 * loaded object (dl_iterate_phdr, on a miss) hits on the pointer alone;
 * any other key is verified by content on every hit, so a buffer reused
 * for another key never hits a stale entry. An object unloaded since (the
 * loader's unload count, read on every miss and when a chunk is taken)
 * turns the thread's read-only entries back into verified ones.
 */
typedef struct ro_query {
    uintptr_t lo, hi; /* the key's bytes, NUL included */
    int found;
    unsigned long long subs;
    uintptr_t gap_lo, gap_hi; /* no read-only segment meets [lo, hi) there */
    uintptr_t seg_lo, seg_hi; /* found: the segment */
} ro_query;

static int ro_segment(struct dl_phdr_info *info, size_t size, void *arg)
{
    ro_query *q = arg;
    q->subs = info->dlpi_subs;
    if (q->lo == 0)
        return 1; /* only the unload count was asked */
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        return 1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W))
            continue;
        uintptr_t b = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
        if (q->lo >= b && q->hi <= b + ph->p_filesz) {
            q->found = 1;
            q->seg_lo = b;
            q->seg_hi = b + ph->p_filesz;
            return 1;
        }
        /* The gap around [lo, hi) narrows to exclude this segment (its
         * whole memory size); one that overlaps [lo, hi) leaves none. */
        uintptr_t e = b + (ph->p_memsz > ph->p_filesz ? ph->p_memsz : ph->p_filesz);
        if (e <= q->lo) {
            if (e > q->gap_lo)
                q->gap_lo = e;
        } else if (b >= q->hi) {
            if (b < q->gap_hi)
                q->gap_hi = b;
        } else {
            q->gap_lo = q->gap_hi = 0;
        }
    }
    return 0;
}

/* Whether [lo, hi) lies in a read-only segment of a loaded object: the
 * thread's last read-only segment or its last gap known to hold none
 * answers without asking the loader (a walk over every loaded object:
 * about 16k instructions in a process with torch's hundred libraries),
 * else a walk, which also notices an unload (keys_recheck) and leaves
 * the segment or the gap around [lo, hi). */
static void keys_recheck(act__thread *t, unsigned long long subs);
static int ro_lookup(act__thread *t, uintptr_t lo, uintptr_t hi)
{
    if (lo >= t->ro_lo && hi <= t->ro_hi)
        return 1;
    if (lo >= t->nro_lo && hi <= t->nro_hi)
        return 0;
    ro_query q = {lo, hi, 0, 0, 0, UINTPTR_MAX, 0, 0};
    dl_iterate_phdr(ro_segment, &q);
    keys_recheck(t, q.subs);
    if (q.found) {
        t->ro_lo = q.seg_lo;
        t->ro_hi = q.seg_hi;
    } else if (q.gap_lo <= lo && hi <= q.gap_hi) {
        t->nro_lo = q.gap_lo;
        t->nro_hi = q.gap_hi;
    }
    return q.found;
}

/* The loader's count of unloaded objects. */
static unsigned long long loader_subs(void)
{
    ro_query q = {0, 0, 0, 0, 0, 0, 0, 0};
    dl_iterate_phdr(ro_segment, &q);
    return q.subs;
}

/* After an unload, verify every entry by content again. */
static void keys_recheck(act__thread *t, unsigned long long subs)
{
    if (ACT_LIKELY(subs == t->kc_subs))
        return;
    for (size_t i = 0; i < 16; i++)
        t->kcache[i].ro = 0;
    for (size_t i = 0; i < 8; i++)
        t->vcache[i].ro = 0;
    t->ro_lo = t->ro_hi = 0;
    t->kc_subs = subs;
}

static ACT_INLINE int key_hit(act__thread *t, size_t i, const char *key)
{
    if (t->kcache[i].p != key)
        return 0;
    if (ACT_LIKELY(t->kcache[i].ro))
        return 1;
    /* The interned bytes hold no NUL: a shorter key differs at its NUL. */
    const char *k = t->kcache[i].s;
    uint32_t len = t->kcache[i].len;
    for (uint32_t j = 0; j < len; j++)
        if (k[j] != key[j])
            return 0;
    return key[len] == '\0';
}

/* The id of cached key @p key, or 0 on a miss. */
static uint32_t key_cached(act__thread *t, const char *key)
{
    size_t h = ((uintptr_t)key >> 2) & 14;
    if (key_hit(t, h, key))
        return t->kcache[h].id;
    if (key_hit(t, h + 1, key))
        return t->kcache[h + 1].id;
    return 0;
}

/* The same for the fast path: a read-only key (a string literal) only,
 * on its pointer alone; 0 sends the call to the full path. */
static ACT_INLINE uint32_t key_fast(const act__thread *t, const char *key)
{
    size_t h = ((uintptr_t)key >> 2) & 14;
    if (ACT_LIKELY(t->kcache[h].p == key && t->kcache[h].ro))
        return t->kcache[h].id;
    if (t->kcache[h + 1].p == key && t->kcache[h + 1].ro)
        return t->kcache[h + 1].id;
    return 0;
}

/* The interned id of arg key @p key (through the cache), or 0 if the
 * string table refuses it. */
static inline uint32_t key_id(act__thread *t, const char *key)
{
    uint32_t id = key_cached(t, key);
    if (ACT_LIKELY(id))
        return id;
    id = act_name(key);
    if (id) {
        uint32_t len;
        const char *k = act__name_str(id, &len);
        if (strncmp(k, key, (size_t)len + 1) != 0)
            return 0; /* cut by the table's length cap: copy it instead */
        int ro = ro_lookup(t, (uintptr_t)key, (uintptr_t)key + len + 1);
        /* The older entry of the pair makes room. */
        size_t h = ((uintptr_t)key >> 2) & 14;
        t->kcache[h + 1] = t->kcache[h];
        t->kcache[h].p = key;
        t->kcache[h].s = k;
        t->kcache[h].len = len;
        t->kcache[h].id = id;
        t->kcache[h].ro = (uint32_t)ro;
    }
    return id;
}

/*
 * A name string's interned id (names and arg keys share the table): a
 * cached one (a literal on its pointer alone, any other verified by
 * content, so a buffer reused for another name never hits a stale id);
 * on a miss, a literal (a read-only segment) is interned; a name in
 * writable memory is interned the second time its pointer comes with the
 * same bytes (a buffer reused for one name), never the first, so names
 * made fresh for each event (numbered ones) are copied as before and do
 * not fill the process's table. 0: copy it.
 */
static uint32_t name_ref(act__thread *t, const char *name)
{
    uint32_t id = key_cached(t, name);
    if (ACT_LIKELY(id))
        return id;
    size_t len = strlen(name);
    if (len == 0 || len >= 65536)
        return 0;
    if (!ro_lookup(t, (uintptr_t)name, (uintptr_t)name + len + 1)) {
        uint64_t h = UINT64_C(1469598103934665603);
        for (size_t i = 0; i < len; i++)
            h = (h ^ (unsigned char)name[i]) * UINT64_C(1099511628211);
        h ^= len;
        if (t->nc_p != name || t->nc_h != h) {
            t->nc_p = name;
            t->nc_h = h;
            return 0;
        }
    }
    return key_id(t, name);
}

/* Take a chunk for @p nrec records and @p strbytes of strings (the
 * moment to notice an unloaded object, see key_id). */
static int reserve(act__thread *t, uint32_t nrec, uint32_t strbytes)
{
    int rc = act__thread_reserve(t, nrec, strbytes);
    keys_recheck(t, loader_subs());
    return rc;
}

static inline uint64_t load8(const char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* memcmp(a, b, len) == 0 for the short values args mostly are, inline:
 * 8-byte words, the last one overlapping (reads stay within len). */
static inline uint32_t load4(const char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static ACT_INLINE int bytes_eq(const char *a, const char *b, uint32_t len)
{
    if (len < 8) { /* no call: the callers' fast paths stay leaf code */
        if (len >= 4)
            return load4(a) == load4(b) && load4(a + len - 4) == load4(b + len - 4);
        for (uint32_t i = 0; i < len; i++)
            if (a[i] != b[i])
                return 0;
        return 1;
    }
    for (uint32_t i = 0; i + 8 < len; i += 8)
        if (load8(a + i) != load8(b + i))
            return 0;
    return load8(a + len - 8) == load8(b + len - 8);
}

/*
 * String arg values: a per-thread two-way cache (pointer -> the copy in
 * the tail chunk, copies being per chunk), verified by content, except
 * that a value found in a read-only segment of a loaded object (ro 1: a
 * string literal, NUL right after its len bytes) hits on the pointer and
 * the length alone, and act_arg_str then needs no strlen. A pointer's
 * read-only state is asked of the loader (dl_iterate_phdr) once, on its
 * first verified hit, and kept by the pointer's later entries (ro 2: not
 * read-only); an unloaded object resets it (keys_recheck).
 */
#define LEN_UNKNOWN UINT32_MAX /* act_arg_str's value: strlen not taken yet */

static inline uint32_t str_len(size_t len)
{
    return len > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)len;
}


/* The length of value @p v (LEN_UNKNOWN: measured now). */
static ACT_INLINE uint32_t value_len(const char *v, uint32_t len)
{
    return len != LEN_UNKNOWN ? len : str_len(strlen(v));
}

/* Entry @p e holds the copy of @p v (@p len bytes) in the tail chunk. */
static ACT_INLINE int value_hit(const act__thread *t, size_t e, const char *v, uint32_t len)
{
    if (t->vcache[e].p != v || t->vcache[e].len != len || t->vcache[e].c != t->tail)
        return 0;
    if (t->vcache[e].ro == 1)
        return 1;
    uint32_t cl;
    return bytes_eq(act__chunk_str(t->tail, t->vcache[e].ref, &cl), v, len);
}

/* Entry @p e (of @p v, @p len bytes) had its first verified hit: ask the
 * loader once whether it is read-only. */
static ACT_NOINLINE void value_learn_ro(act__thread *t, size_t e, const char *v, uint32_t len)
{
    int ro = ro_lookup(t, (uintptr_t)v, (uintptr_t)v + len + 1);
    t->vcache[e].ro = ro && v[len] == '\0' ? 1 : 2;
}

/* The copy of @p v in the tail chunk, or 0; *len is measured if it was
 * LEN_UNKNOWN. *h: the pair for value_put. */
static ACT_INLINE uint32_t value_cached(act__thread *t, const char *v, uint32_t *len,
                                        size_t *h)
{
    size_t i = *h = ((uintptr_t)v >> 3) & 6;
    *len = value_len(v, *len);
    if (!value_hit(t, i, v, *len) && !value_hit(t, ++i, v, *len))
        return 0;
    if (ACT_UNLIKELY(!t->vcache[i].ro))
        value_learn_ro(t, i, v, *len);
    return t->vcache[i].ref;
}

/* Copy @p v (@p len bytes, room reserved) into the tail chunk and cache
 * it in pair @p h; its ref. */
static ACT_INLINE uint32_t value_put(act__thread *t, const char *v, uint32_t len,
                                     size_t h)
{
    uint32_t ref = act__thread_put_str(t, v, len);
    /* A pointer known read-only or not stays so (same length for ro). */
    uint32_t ro = t->vcache[h].p == v && (t->vcache[h].ro == 2 || t->vcache[h].len == len)
                      ? t->vcache[h].ro
                      : 0;
    t->vcache[h + 1] = t->vcache[h];
    t->vcache[h].p = v;
    t->vcache[h].c = t->tail;
    t->vcache[h].len = len;
    t->vcache[h].ref = ref;
    t->vcache[h].ro = ro;
    return ref;
}

/* The copy of a read-only value @p v in the tail chunk, on its pointer
 * (and length, unless LEN_UNKNOWN) alone, in the first way of its pair,
 * or 0 (arg_str_miss decides). */
static ACT_INLINE uint32_t value_fast(const act__thread *t, const char *v, uint32_t len)
{
    size_t h = ((uintptr_t)v >> 3) & 6;
    if (ACT_LIKELY(t->vcache[h].p == v && t->vcache[h].ro == 1 && t->vcache[h].c == t->tail &&
                   (len == LEN_UNKNOWN || len == t->vcache[h].len)))
        return t->vcache[h].ref;
    return 0;
}

/* The args attached to the current event so far: its group's records
 * after it (all arg records, one or two args each), counted when the
 * group is taken back rather than on every arg. */
static uint32_t group_args(const act__thread *t)
{
    uint32_t n = 0, i = t->grp_start + 1;
    for (const act__chunk *c = t->grp_chunk; c;
         c = atomic_load_explicit(&c->next, memory_order_relaxed), i = 0) {
        uint32_t used = atomic_load_explicit(&c->used, memory_order_relaxed);
        for (; i < used; i++)
            n += 1 + ((atomic_load_explicit(&c->recs[i].t1, memory_order_relaxed) &
                       ACT__ARG2_PRESENT) != 0);
        if (c == t->tail)
            break;
    }
    return n;
}

/* Take back the current event and its args (no room for the next arg):
 * the event is dropped whole and counted so. */
static ACT_NOINLINE void group_undo(act__thread *t)
{
    act__chunk *c = t->grp_chunk;
    act__rec *ev = &c->recs[t->grp_start];
    /* A span begun and not ended yet: its end has nothing to close. */
    uint32_t d = t->depth;
    if (d && d <= ACT__MAX_DEPTH && t->open[d - 1] == ev)
        t->open[d - 1] = NULL;
    int type = ev->type;
    /* Counted dropped before it stops counting as recorded, so that totals
     * read while recording never go down. */
    for (uint32_t i = 0, n = group_args(t) + 1; i < n; i++)
        arg_drop(t, 1);
    drop_event(t, type, ACT__DROP_BUFFER_FULL);
    atomic_store_explicit(&c->used, t->grp_start, memory_order_release);
    for (act__chunk *n = atomic_load_explicit(&c->next, memory_order_relaxed); n;
         n = atomic_load_explicit(&n->next, memory_order_relaxed))
        atomic_store_explicit(&n->used, 0, memory_order_release);
    t->rec = c == t->tail ? ev : t->tail->recs;
    t->arg_half = NULL;
}

/* Fill the free second slot of arg record @p half. */
static ACT_INLINE void arg_write_half(act__thread *t, act__rec *half, act__vkind kind,
                                  uint32_t kref, uint64_t bits)
{
    half->t0 = (int64_t)bits;
    atomic_store_explicit(&half->t1,
                          ACT__ARG2_PRESENT | (int64_t)kind << 32 | (int64_t)kref,
                          memory_order_release);
    t->arg_half = NULL;
}

/* Write a new arg record at the cursor (room checked). */
static ACT_INLINE void arg_write_new(act__thread *t, act__vkind kind, uint32_t kref,
                                 uint64_t bits)
{
    act__rec *r = t->rec;
    r->t0 = 0;
    atomic_store_explicit(&r->t1, 0, memory_order_relaxed);
    r->x = bits;
    r->name = kref;
    rec_tag(r, 0, ACT__R_ARG, (uint8_t)kind);
    t->rec = r + 1;
    act__thread_commit(t, 1);
    t->arg_half = r;
}

/* The first arg of the event just committed (args_ok ACT__ARGS_FRESH):
 * group_begin and arg_write_new in one, room known (slot). */
static ACT_INLINE void arg_first(act__thread *t, act__vkind kind, uint32_t kref,
                                 uint64_t bits)
{
    act__chunk *c = t->tail;
    act__rec *r = t->rec;
    uint32_t u = act__thread_used(t);
    t->grp_chunk = c;
    t->grp_start = u - 1;
    t->args_ok = ACT__ARGS_OK;
    r->t0 = 0;
    atomic_store_explicit(&r->t1, 0, memory_order_relaxed);
    r->x = bits;
    r->name = kref;
    rec_tag(r, 0, ACT__R_ARG, (uint8_t)kind);
    t->rec = r + 1;
    t->arg_half = r;
    atomic_store_explicit(&c->used, u + 1, memory_order_release);
}

/* Attach an arg whose place is decided (arg_call): the event's first
 * arg, the second slot of @p half, or a new arg record (room checked). */
static ACT_INLINE void arg_write(act__thread *t, uint8_t st, act__rec *half,
                                 act__vkind kind, uint32_t kref, uint64_t bits)
{
    if (st == ACT__ARGS_FRESH)
        arg_first(t, kind, kref, bits);
    else if (half)
        arg_write_half(t, half, kind, kref, bits);
    else
        arg_write_new(t, kind, kref, bits);
}

/* Attach one arg to the current event: in the free second slot of its
 * last arg record, or in a new arg record. The key: string @p key, or if
 * NULL the interned @p kid (one act_key never returned is the empty key).
 * @p sval: a string value's bytes (kinds ACT__V_STR, ACT__V_JSON; never
 * NULL for them), else NULL and @p bits is the value. */
static inline void arg_put(act__thread *t, const char *key, uint32_t kid,
                           act__vkind kind, uint64_t bits, const char *sval,
                           uint32_t slen)
{
    if (t->args_ok == ACT__ARGS_FRESH)
        group_begin(t);
    if (ACT_UNLIKELY(t->args_ok != ACT__ARGS_OK)) {
        arg_drop(t, t->args_ok == ACT__ARGS_DROPPED);
        return;
    }
    uint32_t kref, klen = 0;
    if (!key && kid && !(kid & ACT__REF_LOCAL)) {
        kref = kid;
    } else {
        if (!key)
            key = "";
        kref = key_id(t, key);
    }
    uint32_t need = 0; /* string bytes to copy */
    if (ACT_UNLIKELY(!kref)) {
        size_t n = strlen(key);
        klen = n > 65535 ? 65535 : (uint32_t)n;
        need += act__str_space(klen);
    }
    size_t vh = 0;
    uint32_t vref = 0;
    if (sval && !(vref = value_cached(t, sval, &slen, &vh)))
        need += act__str_space(slen);
    act__rec *half = t->arg_half;
    if (half && (size_t)(t->str - (char *)t->rec) >= need) {
        /* The second slot of the last arg record (in the tail chunk). */
        if (!kref)
            kref = act__thread_put_str(t, key, klen);
        if (sval)
            bits = vref ? vref : value_put(t, sval, slen, vh);
        arg_write_half(t, half, kind, kref, bits);
        return;
    }
    if (ACT_UNLIKELY((char *)(t->rec + 1) + need > t->str)) {
        const act__chunk *old = t->tail;
        if (sval && vref)
            need += act__str_space(slen); /* copies are per chunk */
        if (reserve(t, 1, need) != 0) {
            group_undo(t);
            return;
        }
        if (t->tail != old)
            vref = 0;
    }
    if (!kref)
        kref = act__thread_put_str(t, key, klen);
    if (sval)
        bits = vref ? vref : value_put(t, sval, slen, vh);
    arg_write_new(t, kind, kref, bits);
}

static inline void arg_body(act_session *s, const char *key, uint32_t kid,
                            act__vkind kind, uint64_t bits, const char *sval,
                            uint32_t slen)
{
    act__thread *t = thread_of(s);
    if (!t)
        return;
    arg_put(t, key, kid, kind, bits, sval, slen);
}

/* GUARD for an arg call: a nested one counts as a dropped arg. */
#define GUARDED_ARG(s, BODY) \
    GUARD(atomic_fetch_add_explicit(&(s)->args_dropped_reentrant, 1, memory_order_relaxed), BODY)

/* The full path of every arg call (@p bits: a string value's pointer for
 * kinds ACT__V_STR and ACT__V_JSON, so that no argument goes on the
 * stack). */
static ACT_NOINLINE void arg_slow(act_session *s, const char *key, uint32_t kid,
                                  act__vkind kind, uint64_t bits, uint32_t slen)
{
    if (ACT_UNLIKELY(s->lazy))
        return; /* no event before it: an orphan, and nothing to count it in */
    const char *sval = NULL;
    if (act__vkind_text(kind) && !(sval = (const char *)(uintptr_t)bits)) {
        sval = "";
        slen = 0;
    }
    GUARDED_ARG(s, arg_body(s, key, kid, kind, bits, sval, slen));
}

/* The full path of an arg call, counted afresh (arg_call's fast path
 * takes its count back first). */
static ACT_NOINLINE void arg_full(const char *key, uint32_t kid, act__vkind kind, uint64_t bits,
                                  uint32_t slen)
{
    IF_RECORDING_ARG(s)
    arg_slow(s, key, kid, kind, bits, slen);
}

/* arg_call's string value not found read-only in the cache, its length
 * known: entered with the guard taken and the arg's place checked
 * (arg_call). A verified hit calls nothing, so that it saves no register;
 * the copy and the full path are out of line. */
static ACT_NOINLINE void arg_str_put(act__thread *t, act__vkind kind, uint32_t kref,
                                     const char *v, uint32_t len);
static ACT_NOINLINE void arg_str_learn(act__thread *t, act__vkind kind, uint32_t kref,
                                       const char *v, uint32_t len, size_t e);
static ACT_NOINLINE void arg_str_known(act__thread *t, act__vkind kind, uint32_t kref,
                                       const char *v, uint32_t len)
{
    uint8_t st = t->args_ok;
    act__rec *half = st == ACT__ARGS_OK ? t->arg_half : NULL;
    size_t h = ((uintptr_t)v >> 3) & 6;
    if (!value_hit(t, h, v, len) && !value_hit(t, ++h, v, len)) {
        arg_str_put(t, kind, kref, v, len);
        return;
    }
    if (ACT_UNLIKELY(!t->vcache[h].ro)) {
        arg_str_learn(t, kind, kref, v, len, h);
        return;
    }
    arg_write(t, st, half, kind, kref, t->vcache[h].ref);
    fast_leave();
    rd_leave();
}

/* arg_str_known's hit in entry @p e whose read-only state is not known. */
static ACT_NOINLINE void arg_str_learn(act__thread *t, act__vkind kind, uint32_t kref,
                                       const char *v, uint32_t len, size_t e)
{
    value_learn_ro(t, e, v, len);
    uint8_t st = t->args_ok;
    arg_write(t, st, st == ACT__ARGS_OK ? t->arg_half : NULL, kind, kref, t->vcache[e].ref);
    fast_leave();
    rd_leave();
}

/* arg_str_known's miss: a copy if it fits, else the full path. */
static ACT_NOINLINE void arg_str_put(act__thread *t, act__vkind kind, uint32_t kref,
                                     const char *v, uint32_t len)
{
    uint8_t st = t->args_ok;
    act__rec *half = st == ACT__ARGS_OK ? t->arg_half : NULL;
    if ((size_t)(t->str - (char *)t->rec) >= (half ? 0 : sizeof(act__rec)) + act__str_space(len)) {
        arg_write(t, st, half, kind, kref, value_put(t, v, len, ((uintptr_t)v >> 3) & 6));
        fast_leave();
        rd_leave();
        return;
    }
    fast_leave();
    rd_leave();
    /* No room: the full path takes a chunk, or drops the group. */
    arg_full(NULL, kref, kind, (uintptr_t)v, len);
}

/* The same, the length maybe not taken yet (LEN_UNKNOWN). */
static ACT_NOINLINE void arg_str_miss(act__thread *t, act__vkind kind, uint32_t kref,
                                      const char *v, uint32_t len)
{
    if (!v) {
        v = "";
        len = 0;
    }
    arg_str_known(t, kind, kref, v, value_len(v, len));
}

/* An arg call. The fast path: a string key found read-only in the
 * thread's key cache, or interned key @p kid; an event to attach to and
 * room; a text value (kinds ACT__V_STR and ACT__V_JSON: @p sval, @p slen)
 * found read-only in the value cache, else arg_str_miss. Anything else
 * takes the full path. Only tail calls here, so that the fast path saves
 * no register. */
static ACT_INLINE void arg_call(act_session *s, const char *key, uint32_t kid,
                                act__vkind kind, uint64_t bits, const char *sval,
                                uint32_t slen)
{
    if (ACT_UNLIKELY(!rd_fast(s)))
        goto full;
    if (ACT_LIKELY(fast_enter(s))) {
        act__thread *t = tl_thread;
        uint32_t kref = key ? key_fast(t, key) : kid & ACT__REF_LOCAL ? 0 : kid;
        uint8_t st = t->args_ok;
        act__rec *half = NULL;
        /* slot() left room for one arg record after the event (FRESH). */
        if (ACT_LIKELY(kref) &&
            (st == ACT__ARGS_FRESH ||
             (st == ACT__ARGS_OK &&
              ((half = t->arg_half) != NULL || (char *)(t->rec + 1) <= t->str)))) {
            if (act__vkind_text(kind) && ACT_UNLIKELY(!(bits = value_fast(t, sval, slen)))) {
                arg_str_miss(t, kind, kref, sval, slen);
                return;
            }
            arg_write(t, st, half, kind, kref, bits);
            fast_leave();
            rd_leave();
            return;
        }
        fast_leave();
    }
    rd_leave();
full:
    arg_full(key, kid, kind, act__vkind_text(kind) ? (uintptr_t)sval : bits, slen);
}

static inline uint64_t double_bits(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

void act_arg_int(const char *key, int64_t value)
{
    IF_RECORDING_FAST(s)
    arg_call(s, key ? key : "", 0, ACT__V_INT, (uint64_t)value, NULL, 0);
}

void act_arg_uint(const char *key, uint64_t value)
{
    IF_RECORDING_FAST(s)
    arg_call(s, key ? key : "", 0, ACT__V_UINT, value, NULL, 0);
}

void act_arg_double(const char *key, double value)
{
    IF_RECORDING_FAST(s)
    arg_call(s, key ? key : "", 0, ACT__V_DOUBLE, double_bits(value), NULL, 0);
}

void act_arg_bool(const char *key, int value)
{
    IF_RECORDING_FAST(s)
    arg_call(s, key ? key : "", 0, ACT__V_BOOL, value != 0, NULL, 0);
}

void act_arg_strn(const char *key, const char *value, size_t len)
{
    IF_RECORDING_FAST(s)
    if (!value) {
        value = "";
        len = 0;
    }
    arg_call(s, key ? key : "", 0, ACT__V_STR, 0, value, str_len(len));
}

void act_arg_str(const char *key, const char *value)
{
    IF_RECORDING_FAST(s)
    arg_call(s, key ? key : "", 0, ACT__V_STR, 0, value, LEN_UNKNOWN);
}

act_key_id act_key(const char *key)
{
    /* act_name cuts a longer name: such a key is not interned. */
    if (!key || strnlen(key, ACT__NAME_MAX_LEN + 1) > ACT__NAME_MAX_LEN)
        return 0;
    return act_name(key);
}

void act_arg_int_k(act_key_id key, int64_t value)
{
    IF_RECORDING_FAST(s)
    arg_call(s, NULL, key, ACT__V_INT, (uint64_t)value, NULL, 0);
}

void act_arg_uint_k(act_key_id key, uint64_t value)
{
    IF_RECORDING_FAST(s)
    arg_call(s, NULL, key, ACT__V_UINT, value, NULL, 0);
}

void act_arg_double_k(act_key_id key, double value)
{
    IF_RECORDING_FAST(s)
    arg_call(s, NULL, key, ACT__V_DOUBLE, double_bits(value), NULL, 0);
}

void act_arg_bool_k(act_key_id key, int value)
{
    IF_RECORDING_FAST(s)
    arg_call(s, NULL, key, ACT__V_BOOL, value != 0, NULL, 0);
}

void act_arg_strn_k(act_key_id key, const char *value, size_t len)
{
    IF_RECORDING_FAST(s)
    if (!value) {
        value = "";
        len = 0;
    }
    arg_call(s, NULL, key, ACT__V_STR, 0, value, str_len(len));
}

void act_arg_str_k(act_key_id key, const char *value)
{
    IF_RECORDING_FAST(s)
    arg_call(s, NULL, key, ACT__V_STR, 0, value, LEN_UNKNOWN);
}

/* ---- correlation ---------------------------------------------------------- */

void act_correlation_push(uint64_t id)
{
    /* Deeper pushes keep counting so pops stay balanced. */
    if (tl_corr_depth < CORR_DEPTH)
        tl_corr[tl_corr_depth] = id;
    tl_corr_depth++;
    corr_update();
}

void act_correlation_pop(void)
{
    if (tl_corr_depth)
        tl_corr_depth--;
    corr_update();
}

uint64_t act_correlation_current(void)
{
    return corr_current();
}

/* ---- operators: correlation, span and arg in two calls -------------------- */

int64_t act_op_begin(uint64_t correlation)
{
    if (tl_corr_depth < CORR_DEPTH)
        tl_corr[tl_corr_depth] = correlation;
    tl_corr_depth++;
    corr_update();
    return act__clock_ns();
}

/* act_op_end's full path: what act_span_record_id and act_arg_int_k would
 * record (the pop is the caller's). */
static ACT_NOINLINE void op_end_slow(act_activity_type type, act_name_id name,
                                     int64_t start_ns, int64_t end_ns, act_key_id key,
                                     int64_t value)
{
    act_span_record_id(type, name, start_ns, end_ns);
    if (key)
        act_arg_int_k(key, value);
}

static ACT_INLINE void op_end_rec(act_activity_type type, act_name_id name, int64_t start_ns,
                                  int64_t end_ns, act_key_id key, int64_t value)
{
    IF_RECORDING_FAST(s)
    if (ACT_LIKELY(rd_fast(s))) {
        /* act_span_record_id's fast path, with the arg (an interned key)
         * written in the record after the span: slot() and the fast path
         * both keep room for one arg record after an event. The two are
         * committed by one store, as a group that is complete. The end
         * time is the caller's: a clock call here would make this path
         * save and restore registers around it. */
        if (ACT_LIKELY(fast_type_ok(s, type) && fast_times_ok(s, start_ns, end_ns) &&
                       !((name | key) & ACT__REF_LOCAL) && fast_enter(s))) {
            act__thread *t = tl_thread;
            act__rec *r = t->rec;
            if (ACT_LIKELY((char *)r < t->lim)) {
                r->t0 = start_ns;
                atomic_store_explicit(&r->t1, end_ns, memory_order_relaxed);
                r->x = corr_current();
                r->name = name;
                rec_tag(r, (uint16_t)type, ACT__R_SPAN, 0);
                if (key) {
                    act__rec *a = r + 1;
                    a->t0 = 0;
                    atomic_store_explicit(&a->t1, 0, memory_order_relaxed);
                    a->x = (uint64_t)value;
                    a->name = key;
                    rec_tag(a, 0, ACT__R_ARG, (uint8_t)ACT__V_INT);
                    uint32_t u = act__thread_used(t);
                    t->grp_chunk = t->tail;
                    t->grp_start = u;
                    t->arg_half = a;
                    t->args_ok = ACT__ARGS_OK;
                    t->rec = r + 2;
                    atomic_store_explicit(&t->tail->used, u + 2, memory_order_release);
                } else {
                    push(t, r);
                }
                fast_leave();
                rd_leave();
                return;
            }
            fast_leave();
        }
        rd_leave();
    }
    op_end_slow(type, name, start_ns, end_ns, key, value);
}

void act_op_end(act_activity_type type, act_name_id name, int64_t start_ns, int64_t end_ns,
                act_key_id key, int64_t value)
{
    op_end_rec(type, name, start_ns, end_ns, key, value);
    if (tl_corr_depth)
        tl_corr_depth--;
    corr_update();
}

int64_t act_now_ns(void)
{
    return act__clock_ns();
}

void act__thread_forget(void)
{
    tl.gb &= TL_BUSY; /* no session cached; the busy bit kept */
    tl_thread = NULL;
}

act__thread *act__thread_for(act_session *s)
{
    if (ACT_LIKELY(tl_gen == s->gen))
        return tl_thread;
    act__thread *t = act__thread_get(s);
    if (t)
        tl_set(s, t);
    return t;
}

/* ---- JSON args -------------------------------------------------------------- */

/* A text arg of kind @p kind by the string args' paths: string key
 * @p key, or if NULL interned @p kid; @p len SIZE_MAX: up to the value's
 * NUL (measured by the value cache's miss path, as act_arg_str's). */
static ACT_INLINE void arg_text(const char *key, act_key_id kid, act__vkind kind,
                                const char *value, size_t len)
{
    IF_RECORDING_FAST(s)
    if (!value)
        value = "", len = 0;
    arg_call(s, key, kid, kind, 0, value, len == SIZE_MAX ? LEN_UNKNOWN : str_len(len));
}

void act_arg_json(const char *key, const char *json)
{
    arg_text(key ? key : "", 0, ACT__V_JSON, json, SIZE_MAX);
}

void act_arg_jsonn(const char *key, const char *json, size_t len)
{
    arg_text(key ? key : "", 0, ACT__V_JSON, json, len == SIZE_MAX ? len - 1 : len);
}

void act_arg_json_k(act_key_id key, const char *json)
{
    arg_text(NULL, key, ACT__V_JSON, json, SIZE_MAX);
}

void act_arg_jsonn_k(act_key_id key, const char *json, size_t len)
{
    arg_text(NULL, key, ACT__V_JSON, json, len == SIZE_MAX ? len - 1 : len);
}
