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
    uint64_t gen;       /* session the cached buffer belongs to */
    act__thread *thread;
    uint32_t corr_depth; /* external correlation stack, session-independent */
    uint32_t busy;       /* inside a recording call (signal-safety guard) */
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
#define tl_gen tl.gen
#define tl_thread tl.thread
#define tl_corr tl.corr
#define tl_corr_depth tl.corr_depth

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
    tl_gen = 0;
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
#define IF_RECORDING(s) \
    act_session *s = atomic_load_explicit(&act__recording, memory_order_acquire); \
    if (ACT_LIKELY(s == NULL)) \
        return;

/* In a full path: the stand-in of a lazily started session (engine.h)
 * becomes the real one here, once; NULL drops the call. */
#define WAKE(s) \
    if (ACT_UNLIKELY(s->lazy) && (s = act__auto_wake()) == NULL) \
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

/* Run BODY (a call) under the guard; a nested call runs NESTED instead
 * (it counts the drop) and returns. */
#define GUARD(NESTED, BODY) \
    do { \
        if (ACT_UNLIKELY(tl.busy)) { \
            NESTED; \
            return; \
        } \
        tl.busy = 1; \
        atomic_signal_fence(memory_order_seq_cst); \
        BODY; \
        atomic_signal_fence(memory_order_seq_cst); \
        tl.busy = 0; \
    } while (0)

/* GUARD for an event call: a nested one counts one dropped event. */
#define GUARDED(s, BODY) GUARD(act__reentrant_drop(s), BODY)

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
    if (ACT_UNLIKELY((char *)(t->rec + 2) + strbytes > t->str)) {
        if (reserve(t, 2, strbytes) != 0)
            return NULL;
    }
    return t->rec;
}

/* Commit event @p r: args may attach to it from now on. */
static inline void push(act__thread *t, act__rec *r)
{
    t->grp_chunk = t->tail;
    t->grp_start = t->used;
    t->grp_open = 0;
    t->grp_nargs = 0;
    t->arg_half = NULL;
    t->rec = r + 1;
    t->used++;
    t->args_ok = ACT__ARGS_OK;
    act__thread_commit(t);
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
static inline int fast_enter(const act_session *s)
{
    if (ACT_UNLIKELY(tl.busy) || ACT_UNLIKELY(tl_gen != s->gen))
        return 0;
    tl.busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
    return 1;
}

static inline void fast_leave(void)
{
    atomic_signal_fence(memory_order_seq_cst);
    tl.busy = 0;
}

/* A builtin type the session selects (others take the full path). */
static inline int fast_type_ok(const act_session *s, int type)
{
    return (unsigned)type < 64 && ((s->builtin_mask >> type) & 1);
}

/* end >= start, both within the window around the session's anchor: the
 * first test of act__session_time_ok, both times in two compares (with
 * a and b in [0, 2W], a <= b is end >= start). Anything else takes the
 * full path (which also compares with the clock). */
static inline int fast_times_ok(const act_session *s, int64_t start, int64_t end)
{
    uint64_t lo = (uint64_t)s->time_anchor_ns - (uint64_t)ACT__TIME_WINDOW;
    uint64_t a = (uint64_t)start - lo, b = (uint64_t)end - lo;
    return a <= b && b <= 2 * (uint64_t)ACT__TIME_WINDOW;
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
        r->t0 = act__clock_ns();
        atomic_store_explicit(&r->t1, ACT__OPEN, memory_order_relaxed);
        push(t, r);
        t->grp_open = d + 1;
    }
    t->open[d] = r;
}

static ACT_NOINLINE void span_begin(act_session *s, act_activity_type type,
                                    act_name_id id, const char *name)
{
    WAKE(s)
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
    if (ACT_UNLIKELY(s->lazy))
        return; /* nothing was begun */
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

static ACT_NOINLINE void span_record(act_session *s, act_activity_type type,
                                     act_name_id id, const char *name,
                                     int64_t start, int64_t end)
{
    WAKE(s)
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
    if (ACT_LIKELY(fast_enter(s))) {
        act__thread *t = tl_thread;
        act__rec *r = t->rec;
        if (ACT_LIKELY(fast_type_ok(s, type) && fast_times_ok(s, start_ns, end_ns) &&
                       (char *)(r + 2) <= t->str && !(name & ACT__REF_LOCAL))) {
            r->t0 = start_ns;
            atomic_store_explicit(&r->t1, end_ns, memory_order_relaxed);
            r->x = corr_current();
            r->name = name;
            rec_tag(r, (uint16_t)type, ACT__R_SPAN, 0);
            push(t, r);
            fast_leave();
            return;
        }
        fast_leave();
    }
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
            return 1;
        }
    }
    return 0;
}

/* The loader's count of unloaded objects. */
static unsigned long long loader_subs(void)
{
    ro_query q = {0, 0, 0, 0};
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
static ACT_INLINE uint32_t key_cached(act__thread *t, const char *key)
{
    size_t h = ((uintptr_t)key >> 2) & 14;
    if (ACT_LIKELY(key_hit(t, h, key)))
        return t->kcache[h].id;
    if (key_hit(t, h + 1, key))
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
        ro_query q = {(uintptr_t)key, (uintptr_t)key + len + 1, 0, 0};
        dl_iterate_phdr(ro_segment, &q);
        keys_recheck(t, q.subs);
        /* The older entry of the pair makes room. */
        size_t h = ((uintptr_t)key >> 2) & 14;
        t->kcache[h + 1] = t->kcache[h];
        t->kcache[h].p = key;
        t->kcache[h].s = k;
        t->kcache[h].len = len;
        t->kcache[h].id = id;
        t->kcache[h].ro = (uint32_t)q.found;
    }
    return id;
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
static ACT_INLINE int bytes_eq(const char *a, const char *b, uint32_t len)
{
    if (len < 8)
        return memcmp(a, b, len) == 0;
    for (uint32_t i = 0; i + 8 < len; i += 8)
        if (load8(a + i) != load8(b + i))
            return 0;
    return load8(a + len - 8) == load8(b + len - 8);
}

/* A string value already copied into the tail chunk (same pointer, length
 * and bytes), or 0. *h: the cache pair for value_put. */
static ACT_INLINE int value_hit(act__thread *t, size_t i, const char *v, uint32_t len)
{
    if (t->vcache[i].p != v || t->vcache[i].c != t->tail || t->vcache[i].len != len)
        return 0;
    return bytes_eq(t->vcache[i].copy, v, len);
}

static ACT_INLINE uint32_t value_cached(act__thread *t, const char *v, uint32_t len,
                                    size_t *h)
{
    *h = (((uintptr_t)v >> 2) ^ len) & 6;
    if (value_hit(t, *h, v, len))
        return t->vcache[*h].ref;
    if (value_hit(t, *h + 1, v, len))
        return t->vcache[*h + 1].ref;
    return 0;
}

static ACT_INLINE uint32_t value_put(act__thread *t, const char *v, uint32_t len,
                                 size_t h)
{
    uint32_t ref = act__thread_put_str(t, v, len);
    t->vcache[h + 1] = t->vcache[h];
    t->vcache[h].p = v;
    t->vcache[h].c = t->tail;
    t->vcache[h].len = len;
    t->vcache[h].ref = ref;
    t->vcache[h].copy = t->str + 4;
    return ref;
}

/* Take back the current event and its args (no room for the next arg):
 * the event is dropped whole and counted so. */
static ACT_NOINLINE void group_undo(act__thread *t)
{
    act__chunk *c = t->grp_chunk;
    act__rec *ev = &c->recs[t->grp_start];
    if (t->grp_open && t->open[t->grp_open - 1] == ev)
        t->open[t->grp_open - 1] = NULL;
    int type = ev->type;
    /* Counted dropped before it stops counting as recorded, so that totals
     * read while recording never go down. */
    for (uint32_t i = 0; i < t->grp_nargs + 1; i++)
        arg_drop(t, 1);
    drop_event(t, type, ACT__DROP_BUFFER_FULL);
    atomic_store_explicit(&c->used, t->grp_start, memory_order_release);
    for (act__chunk *n = atomic_load_explicit(&c->next, memory_order_relaxed); n;
         n = atomic_load_explicit(&n->next, memory_order_relaxed))
        atomic_store_explicit(&n->used, 0, memory_order_release);
    if (c == t->tail) {
        t->used = t->grp_start;
        t->rec = ev;
    } else {
        t->used = 0;
        t->rec = t->tail->recs;
    }
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
    t->grp_nargs++;
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
    t->used++;
    act__thread_commit(t);
    t->arg_half = r;
    t->grp_nargs++;
}

/* The fast path of an arg with interned key @p kref: 1 if it was
 * attached, 0 (nothing changed) when the full path must decide (no event
 * to attach to, no room in the tail chunk). */
static ACT_INLINE int arg_fast(act__thread *t, uint32_t kref, act__vkind kind,
                           uint64_t bits, const char *sval, uint32_t slen)
{
    if (ACT_UNLIKELY(t->args_ok != ACT__ARGS_OK))
        return 0;
    size_t vh = 0;
    uint32_t vref = 0, need = 0;
    if (sval && !(vref = value_cached(t, sval, slen, &vh)))
        need = act__str_space(slen);
    act__rec *half = t->arg_half;
    if (half ? (size_t)(t->str - (char *)t->rec) < need
             : (char *)(t->rec + 1) + need > t->str)
        return 0;
    if (sval)
        bits = vref ? vref : value_put(t, sval, slen, vh);
    if (half)
        arg_write_half(t, half, kind, kref, bits);
    else
        arg_write_new(t, kind, kref, bits);
    return 1;
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
    if (sval && !(vref = value_cached(t, sval, slen, &vh)))
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

/* The full path of every arg call. */
static ACT_NOINLINE void arg_slow(act_session *s, const char *key, uint32_t kid,
                                  act__vkind kind, uint64_t bits, const char *sval,
                                  uint32_t slen)
{
    if (ACT_UNLIKELY(s->lazy))
        return; /* no event before it: an orphan, and nothing to count it in */
    GUARDED_ARG(s, arg_body(s, key, kid, kind, bits, sval, slen));
}

/* An arg call: the fast path (string key @p key found in the thread's key
 * cache, or interned key @p kid), else the full path. */
static ACT_INLINE void arg_call(act_session *s, const char *key, uint32_t kid,
                            act__vkind kind, uint64_t bits, const char *sval,
                            uint32_t slen)
{
    if (ACT_LIKELY(fast_enter(s))) {
        act__thread *t = tl_thread;
        uint32_t kref = key ? key_cached(t, key) : kid & ACT__REF_LOCAL ? 0 : kid;
        int done = kref && arg_fast(t, kref, kind, bits, sval, slen);
        fast_leave();
        if (ACT_LIKELY(done))
            return;
    }
    arg_slow(s, key, kid, kind, bits, sval, slen);
}

static inline uint64_t double_bits(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

static inline uint32_t str_len(size_t len)
{
    return len > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)len;
}

void act_arg_int(const char *key, int64_t value)
{
    IF_RECORDING(s)
    arg_call(s, key ? key : "", 0, ACT__V_INT, (uint64_t)value, NULL, 0);
}

void act_arg_uint(const char *key, uint64_t value)
{
    IF_RECORDING(s)
    arg_call(s, key ? key : "", 0, ACT__V_UINT, value, NULL, 0);
}

void act_arg_double(const char *key, double value)
{
    IF_RECORDING(s)
    arg_call(s, key ? key : "", 0, ACT__V_DOUBLE, double_bits(value), NULL, 0);
}

void act_arg_bool(const char *key, int value)
{
    IF_RECORDING(s)
    arg_call(s, key ? key : "", 0, ACT__V_BOOL, value != 0, NULL, 0);
}

void act_arg_strn(const char *key, const char *value, size_t len)
{
    IF_RECORDING(s)
    if (!value) {
        value = "";
        len = 0;
    }
    arg_call(s, key ? key : "", 0, ACT__V_STR, 0, value, str_len(len));
}

void act_arg_str(const char *key, const char *value)
{
    IF_RECORDING(s)
    if (!value)
        value = "";
    arg_call(s, key ? key : "", 0, ACT__V_STR, 0, value, str_len(strlen(value)));
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
    IF_RECORDING(s)
    arg_call(s, NULL, key, ACT__V_INT, (uint64_t)value, NULL, 0);
}

void act_arg_uint_k(act_key_id key, uint64_t value)
{
    IF_RECORDING(s)
    arg_call(s, NULL, key, ACT__V_UINT, value, NULL, 0);
}

void act_arg_double_k(act_key_id key, double value)
{
    IF_RECORDING(s)
    arg_call(s, NULL, key, ACT__V_DOUBLE, double_bits(value), NULL, 0);
}

void act_arg_bool_k(act_key_id key, int value)
{
    IF_RECORDING(s)
    arg_call(s, NULL, key, ACT__V_BOOL, value != 0, NULL, 0);
}

void act_arg_strn_k(act_key_id key, const char *value, size_t len)
{
    IF_RECORDING(s)
    if (!value) {
        value = "";
        len = 0;
    }
    arg_call(s, NULL, key, ACT__V_STR, 0, value, str_len(len));
}

void act_arg_str_k(act_key_id key, const char *value)
{
    IF_RECORDING(s)
    if (!value)
        value = "";
    arg_call(s, NULL, key, ACT__V_STR, 0, value, str_len(strlen(value)));
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

/* ---- JSON args -------------------------------------------------------------- */

/* A text arg of kind @p kind, by the string-arg path of act_arg_strn(_k):
 * string key @p key, or if NULL interned @p kid; @p len SIZE_MAX: up to
 * the value's NUL. */
static ACT_INLINE void arg_text(const char *key, act_key_id kid, act__vkind kind,
                                const char *value, size_t len)
{
    IF_RECORDING(s)
    if (!value)
        value = "", len = 0;
    else if (len == SIZE_MAX)
        len = strlen(value);
    arg_call(s, key, kid, kind, 0, value, str_len(len));
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
