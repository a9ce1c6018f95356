/* SPDX-License-Identifier: MIT */
/*
 * The recording engine's data structures, shared by the recording fast path
 * (record.c), the session's recording state (session.c), the services
 * offered to plugins (services.c), the trace writers (src/writer) and the
 * layer that drives sessions (src/session: start, window, stop, write,
 * plugins). The engine sits below them all and includes none of theirs
 * (tests/layering/check_layering.sh); what it must call above it goes
 * through a pointer that layer sets (act__wake_hook, s->report_plugins,
 * the rebuild's writer).
 *
 * Memory model. Each thread appends fixed-size 32-byte records to the tail
 * chunk of its own chunk list. Records grow upward from the chunk header,
 * copied strings grow downward from the chunk end; a record only ever refers
 * to strings in its own chunk, so a chunk is self-contained. After writing a
 * record (or a group of records that belong together) the thread publishes
 * the new count with a release store to chunk->used; readers load it with
 * acquire and never look past it. No read-modify-write and no lock is taken
 * per event: a lock and an atomic add happen once per new chunk.
 *
 * An open span (act_span_begin) is a committed record whose end time is
 * filled later by act_span_end() with a relaxed atomic store; the writer
 * reads it with a relaxed atomic load, once per use (the sort index keeps
 * the value it loaded), so a span still open at write time is seen as open,
 * never torn, and the sort comparator stays consistent.
 *
 * Locks. s->lock guards the thread list, counter series (and their hash
 * index), devices, streams, sources, state changes and the slabs; the
 * writer holds it for the whole write, because plugin threads may still
 * describe devices, streams and series (arrays that are reallocated).
 * s->window_lock serialises window transitions (the plugins' start, stop
 * and flush, which run outside s->lock since a flush records) with each
 * other and with act_session_stop. Order: window_lock, then a plugin
 * context's lock, then s->lock, then the process-wide locks (interned
 * names, thread names, type registry), which are leaves. act_step announces
 * itself in a global in-flight count before it re-reads the started
 * session; stop unpublishes the session and waits for that count to drain,
 * so no step touches a stopped (or destroyed) session. act_session_start
 * resolves everything act_step reads before its release store of ARMED;
 * act_step ignores a session it sees CREATED.
 *
 * Budget. s->bytes is charged with a compare-and-swap only if the chunk
 * fits: a refused request is never visible to other threads. t->full is a
 * hint, re-checked against s->bytes, never a final verdict.
 *
 * Signals. Each recording call marks its thread busy (a thread-local flag
 * behind compiler barriers, see record.c); a call that finds it set comes
 * from a signal handler that interrupted the thread's own recording call,
 * writes nothing and counts one ACT__DROP_REENTRANT drop in the
 * session-wide s->dropped_reentrant. So the published count never runs
 * ahead of the records written, and a handler never waits for a lock its
 * thread holds. Public calls that take an engine lock outside a recording
 * call (act_session_get_stats, act_name) mark the thread busy the same
 * way while they hold it.
 *
 * Fork. The process-wide locks get pthread_atfork handlers installed when
 * the library is loaded (a constructor in session.c): held across fork,
 * re-initialised in the child, which also starts with no session. A
 * session is bound to the process that created it (s->fork_gen against
 * act__fork_gen, bumped in the child): the child's copy of it refuses
 * every recording (no thread attaches, plugins' emits are refused), so a
 * plugin that still holds its parent's context writes nothing, and never
 * into the parent's spool.
 *
 * An arg record's second arg is added in place after commit and published
 * by a release store of its t1 (see ACT__ARG2_PRESENT). Only an event whose
 * args found no room is taken back: its chunk's count is lowered
 * (record.c, group_undo).
 *
 * Pool. Standard chunks come from a bounded pool (BUFFER_POOL_MB) written
 * once and recycled: the session's helper thread (the drain) copies each
 * chunk a thread has sealed (moved on from) and not pinned (it holds an
 * open span or the current arg group) to the archive, splices the copy
 * into the thread's list in its place under s->lock, and returns the slot
 * (thread.c). Writers and stats, which hold s->lock, see the same lists as
 * ever. Pool empty: BUFFER_FULL_POLICY. Under `actrace record` the slots
 * are part of the spool (shared file memory, mapped a segment at a time
 * as first needed), the archive is carved from the slabs (spilled as
 * ever), and the drain logs each move (ACT__SP_MOVED) after the copy and
 * before the slot is handed out again, so a rebuild finds every chunk at
 * its old place or its new one.
 *
 * Without a pool (BUFFER_POOL_MB = 0), chunk memory past
 * BUFFER_PREALLOC_MB is faulted in ahead of need by the same helper
 * thread (the pre-fault thread, thread.c); recording threads never wait
 * for it.
 *
 * Spool. The session `actrace record` starts in each process keeps its
 * chunk memory (and each thread's act__thread) in a shared file mapping,
 * and logs what else the writer needs, so that record can rebuild the
 * trace of a process that died (spool.h). Such a session also spills:
 * slabs no longer carved are written to the file and dropped from memory
 * when RAM runs short (thread.c). Lock order: spill_lock, then lock.
 *
 * Spill file. A program's own session with a pool does the same past its
 * RAM budget through an unlinked temporary file (SPILL_DIR): the drain
 * pwrites what it archives there, in slabs that spill like the spool's;
 * recording threads' own chunks stay anonymous (thread.c, tmp_*).
 */
#ifndef ACT_ENGINE_H
#define ACT_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* Hot-path accesses that x86-64 does as single plain instructions where
 * C11 atomics would make the compiler load into a register first (a
 * compare with memory, an add to memory): not under TSan, which must see
 * the atomics. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ACT_HAS_TSAN 1
#endif
#endif
#if !defined(ACT_HAS_TSAN) && defined(__SANITIZE_THREAD__)
#define ACT_HAS_TSAN 1
#endif
#ifndef ACT_HAS_TSAN
#define ACT_HAS_TSAN 0
#endif
#if defined(__x86_64__) && !ACT_HAS_TSAN
#define ACT_X86_PLAIN 1
#else
#define ACT_X86_PLAIN 0
#endif

/* ---- clock ------------------------------------------------------------- */

static inline int64_t act__clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The host counter (x86-64 TSC, arm64 CNTVCT_EL0). Where it is invariant
 * and the kernel's own clocksource (act__ticks_usable), scoped spans and
 * instants store the raw count, tagged with ACT__TICK_TAG, in t0/t1: one
 * counter read instead of a clock_gettime. Off the hot path the session
 * turns them into CLOCK_MONOTONIC nanoseconds (act__cal_*, below): the
 * drain as it copies a chunk out of the pool, stop for what stays in
 * place. A nanosecond value never has bit 62 set (146 years of uptime),
 * ACT__OPEN has bit 63: a tagged value is told apart from both.
 */
#define ACT__TICK_TAG (INT64_C(1) << 62)
#define ACT__TICK_MASK (ACT__TICK_TAG - 1)

static inline int act__is_tick(int64_t v)
{
    return ((uint64_t)v >> 62) == 1;
}

#if defined(__x86_64__)
#define ACT__HAVE_TICKS 1
static inline int64_t act__ticks(void)
{
    /* rdtsc clears the upper halves of rax and rdx: no zero extension.
     * (The count reaches bit 62 after 48 years at 3 GHz: not masked.) */
    uint64_t v;
    __asm__ __volatile__("rdtsc\n\tshlq $32, %%rdx\n\torq %%rdx, %%rax\n\tbtsq $62, %%rax"
                         : "=a"(v)
                         :
                         : "rdx", "cc");
    _Static_assert(ACT__TICK_TAG == (INT64_C(1) << 62), "the tag is bit 62");
    return (int64_t)v;
}
#elif defined(__aarch64__)
#define ACT__HAVE_TICKS 1
static inline int64_t act__ticks(void)
{
    uint64_t v;
    __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v)::"memory");
    return (int64_t)(v | (uint64_t)ACT__TICK_TAG);
}
#else
#define ACT__HAVE_TICKS 0
static inline int64_t act__ticks(void)
{
    return act__clock_ns();
}
#endif

/* 1 if this machine's counter may stand for CLOCK_MONOTONIC (invariant,
 * and the kernel's clocksource); cached for the process. */
int act__ticks_usable(void);

/* One calibration pair: a counter reading (untagged) and CLOCK_MONOTONIC
 * at the same instant. */
typedef struct act__cal {
    int64_t tick, ns;
} act__cal;

/* Read a pair (the best of a few tries: the counter read on both sides of
 * clock_gettime, the narrowest window's middle). */
act__cal act__cal_read(void);

/* Conversion through pairs @p c[0..n) (ticks and ns both increasing): the
 * piecewise-linear map through them, extended by the end segments (one
 * pair: the nominal 1 ns per tick is never assumed; the pair's ns). Non-
 * decreasing in the tick. @p hint caches the segment (start it at 0). */
int64_t act__cal_conv(const act__cal *c, size_t n, size_t *hint, int64_t tick);

/* act__cal_conv of @p ticks[0..k) into @p out, as the drain settles a
 * chunk (a segment's slope kept across the run); the last value. For the
 * tests: the two must agree to the bit. */
int64_t act__cal_conv_run(const act__cal *c, size_t n, const int64_t *ticks, int64_t *out,
                          size_t k);

struct act__chunk;
/* The session's pairs (clock.c): init (a first pair when s->use_ticks)
 * and free; act__cal_add appends one now if @p need, else if the last is
 * old; act__settle_chunk converts a chunk not yet settled with the pairs
 * there are (its caller added one after the chunk's last write). */
int act__cal_init(act_session *s);
void act__cal_free(act_session *s);
void act__cal_add(act_session *s, int need);
void act__settle_chunk(act_session *s, struct act__chunk *c);
/* The nanoseconds of a record's t0/t1 as read (a tagged tick or
 * already nanoseconds): for code that reads the records of a session
 * still running (a window on it), whose chunks in place may hold ticks
 * until stop. After stop every time is nanoseconds. */
int64_t act__time_of(act_session *s, int64_t v);
/* Stop: every chunk still holding ticks is settled (thread.c). */
void act__settle_times(act_session *s);

/* The time a scoped span or an instant records (record.c). */
#define act__span_now(s) (ACT_LIKELY((s)->tick_gen != UINT64_MAX) ? act__ticks() : act__clock_ns())

/* ---- records ------------------------------------------------------------ */

typedef enum act__rec_kind {
    /* 0, so that a span's type, kind and flags word is its type (the
     * fast paths store it as it came; 1 is unused). */
    ACT__R_SPAN = 0,      /* host span: t0 start, t1 end (ACT__OPEN if open) */
    ACT__R_INSTANT = 2,   /* host instant: t0 */
    ACT__R_COUNTER = 3,   /* t0 ts, t1 double bits, name = series id */
    ACT__R_ARG = 4,       /* attaches to the preceding event record */
    ACT__R_EMIT_SPAN = 5, /* plugin span; followed by one ACT__R_AUX_DEV */
    ACT__R_EMIT_INSTANT = 6,
    ACT__R_AUX_DEV = 7 /* t0 stream/tid, t1 correlation, x device|src<<32,
                          flags: act__emit_kind */
} act__rec_kind;

/* ACT__R_ARG holds one or two args. First: name = key ref (an interned id
 * for act_arg_*, a local string for plugins' args), flags = value kind
 * (act__vkind), x = value (a string is a local ref). Second, filled in
 * place after the record was committed: t0 = value, then t1 published with
 * a release store as ACT__ARG2_PRESENT | kind << 32 | key ref (0: none);
 * a reader loads t1 with acquire before it reads t0. */
#define ACT__ARG2_PRESENT (INT64_C(1) << 40)

/* act__thread.args_ok: where an act_arg_* call goes. */
#define ACT__ARGS_ORPHAN 0  /* no event before it: dropped (orphan_arg) */
#define ACT__ARGS_OK 1      /* attaches to the last event */
#define ACT__ARGS_DROPPED 2 /* its event was dropped: dropped with it */
#define ACT__ARGS_FRESH 3   /* attaches to the last event, its first arg */

#define ACT__OPEN INT64_MIN /* t1 of a span not yet ended */

/* A name reference: an interned id (top bit clear) or, with the top bit
 * set, the byte offset of a copied string inside the record's own chunk
 * (stored as a uint32 length followed by the bytes). 0 means "no name". */
#define ACT__REF_LOCAL 0x80000000u

typedef struct act__rec {
    int64_t t0;
    _Atomic int64_t t1;
    uint64_t x;    /* SPAN/INSTANT: external correlation id; ARG: value;
                      a string ARG value is a local ref. COUNTER: unused */
    uint32_t name; /* name ref; ARG: key ref; COUNTER: series id */
    uint16_t type; /* activity type code (ARG: unused) */
    uint8_t kind;  /* act__rec_kind */
    uint8_t flags;
} act__rec;

_Static_assert(sizeof(act__rec) == 32, "records are 32 bytes");

/* ---- chunks ------------------------------------------------------------- */

#define ACT__CHUNK_SIZE (64u * 1024u)
/* A thread's first chunk: small, so that many short-lived threads recording
 * a few events each do not exhaust the budget (the second is a quarter of
 * ACT__CHUNK_SIZE, the rest full size). */
#define ACT__CHUNK_FIRST (4u * 1024u)

typedef struct act__chunk {
    struct act__chunk *_Atomic next; /* next chunk of the same thread */
    _Atomic uint32_t used;   /* committed records */
    uint32_t size;           /* bytes, header included */
    uint32_t heap;           /* 1: malloc'd (oversized), 0: carved from a slab */
    uint32_t settled;        /* its counter times are nanoseconds (act__settle_chunk);
                                also keeps records 16-byte aligned */
    act__rec recs[];
} act__chunk;

/* Bytes of a copied string in the chunk's string area. */
static inline uint32_t act__str_space(size_t len)
{
    return (uint32_t)((4 + len + 3) & ~(size_t)3);
}

/* Resolve a local string ref inside chunk @p c. */
static inline const char *act__chunk_str(const act__chunk *c, uint32_t ref,
                                         uint32_t *len)
{
    const char *p = (const char *)c + (ref & ~ACT__REF_LOCAL);
    memcpy(len, p, 4);
    return p + 4;
}

/* ---- per-thread state of one session ------------------------------------ */

#define ACT__MAX_DEPTH 256   /* open spans per thread */
#define ACT__TICKS_MAX 32    /* ticks registered at once, per session (act__tick_add) */
#define ACT__NTYPE_SLOTS (ACT_ACTIVITY_TYPE_MAX_BUILTIN + 1 + ACT_ACTIVITY_TYPE_MAX_REGISTERED)

/* Why an attempted event was not recorded. */
typedef enum act__drop_reason {
    ACT__DROP_BUFFER_FULL = 0,    /* MAX_BUFFER_SIZE_MB reached */
    ACT__DROP_NOT_SELECTED = 1,   /* type not in ACTIVITY_TYPES */
    ACT__DROP_BAD_TYPE = 2,       /* not an activity type */
    ACT__DROP_UNBALANCED = 3,     /* span_end without begin, depth overflow */
    ACT__DROP_ORPHAN_ARG = 4,     /* arg with no event right before it */
    ACT__DROP_NONFINITE = 5,      /* counter value NaN or infinite */
    ACT__DROP_BAD_TIMES = 6,      /* end before start */
    ACT__DROP_REENTRANT = 7,      /* called from a signal handler that
                                     interrupted a recording call of its
                                     own thread (session-wide counter) */
    ACT__DROP_NREASONS = 8
} act__drop_reason;

/* The layout of the drop counters in act__thread, as the spool's rebuild
 * checks it (with the struct's size). */
#define ACT__THREAD_LAYOUT ((int64_t)ACT__NTYPE_SLOTS << 16 | ACT__DROP_NREASONS << 8 | 1)

typedef struct act__thread {
    struct act__thread *next; /* session's thread list */
    act_session *session;
    int32_t pid, tid;
    uint64_t serial; /* act__thread_serial() of the recording thread */
    act__chunk *head, *tail;
    /* Cursor into the tail chunk: records go to rec, strings end at str.
     * lim is one byte past the last place an event may start with room
     * for itself and the arg record slot() keeps behind it (str less two
     * records, plus 1), so that the fast paths test room in one compare,
     * rec < lim, which a thread with no chunk yet (all NULL) fails; both
     * are set by act__thread_set_str only. The records written in
     * the tail chunk are its own count (tail->used), written by this
     * thread only. */
    act__rec *rec;
    char *str, *lim;
    uint32_t nchunks; /* chunks taken so far (sizes grow: thread.c) */
    uint8_t args_ok; /* ACT__ARGS_*: may args attach to the last call? */
    uint8_t in_spool; /* allocated in the spool (not freed: unmapped) */
    uint8_t full;    /* buffer limit reached: drop without trying */
    uint32_t depth;  /* open spans, including ones that were not recorded */
    act__rec *open[ACT__MAX_DEPTH]; /* NULL for a span that was dropped */
    /* Drop counters: written by the owning thread only (a relaxed load and
     * store, no read-modify-write), read by stats while it may run. */
    _Atomic uint64_t dropped_type[ACT__NTYPE_SLOTS];
    _Atomic uint64_t dropped_reason[ACT__DROP_NREASONS];
    _Atomic uint64_t dropped_other; /* args and counters: events without a type */
    /* The event args attach to (record.c): its chunk and index, and its
     * arg record whose second slot is still free (NULL if none); set by
     * its first arg. An event and its args are kept or dropped together:
     * when an arg finds no room, the whole group is taken back (the
     * chunks' counts lowered). */
    act__chunk *grp_chunk;
    uint32_t grp_start;
    act__rec *arg_half;
    /* Arg drops (not events): [0] no event before it, [1] its event was
     * dropped (or taken back for lack of room). Owner-written. */
    _Atomic uint64_t args_dropped[2];
    /* Arg keys: pointer -> interned id, verified by content unless the
     * key lies in a read-only segment of a loaded object (ro: a string
     * literal, which cannot change while that object stays loaded; ro
     * entries are verified again once any object was unloaded, kc_subs
     * being the loader's unload count they were checked at). */
    struct {
        const char *p, *s; /* the key given, the interned bytes */
        uint32_t len, id, ro;
    } kcache[16];
    uint64_t kc_subs;
    /* String arg values: (pointer, length) -> copy (at ref) in chunk c;
     * ro: 0 not known, 1 in a read-only segment, 2 not (record.c). */
    struct {
        const char *p;
        const act__chunk *c;
        uint32_t len, ref, ro;
    } vcache[8];
    /* What the loader walks (record.c's ro_lookup) found, so that the
     * values near one asked about need no walk: [ro_lo, ro_hi) the
     * read-only segment the last read-only one lay in (forgotten with the
     * ro entries when an object is unloaded, as they are); [nro_lo,
     * nro_hi) the gap between the read-only segments around the last
     * one in none (a stale gap, an object loaded into it since, is
     * harmless: not read-only only means verified by content). */
    uintptr_t ro_lo, ro_hi, nro_lo, nro_hi;
    /* Small cache for act_counter: (track, series) pointers -> series id. */
    struct {
        const char *track, *series;
        const struct act__series *sp;
        uint32_t id;
    } ccache[16];
    /* The chunk pool (thread.c): pool slots this thread pinned when it
     * last sealed a chunk (chunks that hold an open span, or belong to
     * the current arg group), which the drain must leave in place; a
     * second buffer the next pin set is built in; the pin generation. */
    uint32_t *pins, *pins_next;
    uint32_t npins, cappins, pin_gen;
    /* The thread exited (release; thread.c's key destructor): its tail
     * may be drained and its slots returned to the pool. */
    _Atomic int exited;
    /* The last name in writable memory that missed the cache: its
     * pointer and a hash of its bytes (record.c, name_ref). */
    const char *nc_p;
    uint64_t nc_h;
} act__thread;

/* ---- counter series and devices ---------------------------------------- */

typedef struct act__series {
    char *track, *series, *unit;
    uint32_t device; /* or ACT__HOST_DEVICE */
    uint16_t source;
} act__series;

typedef struct act__device {
    char *name, *vendor;
    uint16_t source;
    act__arg *props; /* deep copies */
    size_t nprops, capprops;
    struct {
        uint64_t id;
        char *name;
    } *streams;
    size_t nstreams, capstreams;
} act__device;

typedef struct act__source {
    char *name, *backend;
    int retired; /* its plugin was refused: its devices are not written */
} act__source;

/* ---- session ----------------------------------------------------------- */

typedef enum act__state {
    ACT__S_CREATED = 0,
    ACT__S_ARMED = 1,      /* started, waiting for the window to open */
    ACT__S_COLLECTING = 2, /* recording calls go to this session */
    ACT__S_DONE = 3,       /* window closed, not yet stopped */
    ACT__S_STOPPED = 4
} act__state;

struct act__plugins;
struct act__vplugin;

/* Who started a session: its owner (docs/architecture.md, "Who owns the
 * process's session"). */
typedef enum act__owner {
    ACT__OWNER_PROGRAM = 0, /* the program's own act_session_start() */
    ACT__OWNER_RECORD = 1,  /* session/autostart.c, under actrace record */
    ACT__OWNER_ONDEMAND = 2, /* the on-demand poller (ondemand/ondemand.c) */
    ACT__OWNER_TORCH = 3    /* torch.profiler through actrace.torch.enable() */
} act__owner;

/* "program", "record", "on-demand", "torch". */
const char *act__owner_name(int owner);

/* The owner of the last session that became the active one: set by
 * act_session_start before anything can see the session as busy, read
 * by whoever is refused as busy, to name whose session is in the way. */
extern _Atomic int act__started_owner;

struct act_session {
    uint64_t gen; /* unique per session, even: validates thread-local caches */
    /* gen where scoped spans read the counter (use_ticks), else
     * UINT64_MAX (never a thread's cached value): the scoped fast paths
     * test the thread's buffer and the clock in one compare. */
    uint64_t tick_gen;
    int lazy; /* the stand-in of a session not started yet (session/autostart.c) */
    int auto_start; /* the session session/autostart.c starts */
    int owner;      /* act__owner: set before act_session_start */
    unsigned fork_gen; /* act__fork_gen at create: the process it records in */
    act_config *config;
    act_activity_set types;
    uint64_t builtin_mask; /* types 0..63 selected, for the fast path */
    int custom_types_default; /* registered types recorded (no ACTIVITY_TYPES) */
    int categories_generic;
    char *trace_name;

    /* Serialises window transitions (the plugins' start, stop and flush)
     * with each other and with act_session_stop. Taken before lock. */
    pthread_mutex_t window_lock;
    /* threads, series, devices, streams, sources, state changes, slabs;
     * held by the writer for the whole write */
    pthread_mutex_t lock;
    _Atomic int state;
    act__thread *threads;
    _Atomic uint64_t bytes;
    uint64_t max_bytes;
    /* Standard chunks are carved from large mmap'd slabs (huge pages where
     * the kernel allows) so recording rarely page-faults; the first slab is
     * pre-faulted at create (BUFFER_PREALLOC_MB). Under lock. */
    struct act__slab *slabs;
    char *slab_cur, *slab_end;
    /* Slabs pre-faulted by the pre-fault thread (thread.c), waiting to be
     * carved, oldest first; ready_bytes is their carvable size. Under
     * ready_lock, which a recording thread only ever try-locks (a
     * pre-fault thread preempted while holding it never blocks recording).
     * The thread keeps a few slabs ready, within MAX_BUFFER_SIZE_MB, so
     * recording threads do not take first-touch page faults; if it falls
     * behind they map fresh memory as before. It runs from start to stop
     * in the process that started it
     * (prefault_pid): a forked child has none and falls back. */
    pthread_mutex_t ready_lock;
    struct act__slab *ready_head, *ready_tail;
    size_t ready_bytes;
    pthread_t prefault;
    int prefault_running, prefault_stop; /* under ready_lock */
    /* Bytes of chunks a session takes before the pre-fault thread starts
     * (0: at once). A process `actrace record` did not start itself (a
     * forked child, a compiler a build runs) is lazy: 512 KB. */
    uint64_t prefault_after;
    int32_t prefault_pid;
    pthread_cond_t prefault_cond;
    /* Ticks (act__tick_add): periodic calls that the helper thread (the
     * pre-fault thread or the drain) makes for plugins, so that a plugin
     * that samples (host) needs no thread of its own. The table is under
     * tick_lock (a leaf: no other lock is taken under it, and no tick
     * runs under it); tick_first is the earliest next_ns (INT64_MAX: none),
     * read by the helper without the lock to skip it between ticks.
     * tick_busy_* name the tick running now (0: none); tick_done is
     * broadcast when it returns. helper_stuck: a cancel gave up waiting
     * for a tick that did not return (PLUGIN_TIMEOUT_MSECS): the helper is
     * not joined and the session is not freed (its memory is leaked, as a
     * stuck plugin's context is). */
    pthread_mutex_t tick_lock;
    pthread_cond_t tick_done;
    struct act__tick {
        void (*fn)(void *arg, int64_t now_ns);
        void *arg;
        const void *owner;
        int64_t period_ns, next_ns;
        uint32_t id; /* 0: a free entry */
    } ticks[ACT__TICKS_MAX];
    uint32_t tick_next_id;
    uint32_t tick_busy_id;
    const void *tick_busy_owner;
    _Atomic int64_t tick_first;
    int helper_stuck;
    struct act_session *stuck_next; /* sessions left to a stuck helper (session.c) */

    act__series **series; /* each allocated once: pointers stay valid */
    size_t nseries, capseries;
    /* Open-addressing index over series ids + 1 (0 = empty), keyed by
     * source, device, track and series name. Under lock. */
    uint32_t *series_hash;
    size_t series_hash_cap;
    /* Recording calls dropped because they interrupted one of their own
     * thread's (a signal handler): ACT__DROP_REENTRANT. */
    _Atomic uint64_t dropped_reentrant;
    /* act_arg_* calls dropped for the same reason (args count apart). */
    _Atomic uint64_t args_dropped_reentrant;
    act__device *devices;
    size_t ndevices, capdevices;
    act__source sources[256];
    size_t nsources;

    /* Windows (DESIGN.md section 4). */
    int64_t warmup_ns, duration_ns; /* < 0: not configured */
    int64_t start_iter, iterations; /* < 0: not configured */
    int64_t profile_start_unix_ns;  /* PROFILE_START_TIME; 0: not set */
    int disabled;                   /* ACTIVITIES_ENABLED = false */
    _Atomic int64_t steps;
    pthread_t timer;
    int timer_running;
    pthread_cond_t timer_cond;

    int64_t start_mono_ns, stop_mono_ns;
    int64_t mono_to_unix_ns; /* add to a monotonic time to get Unix time */
    /* The clock when the session was started (set once, before anything
     * can record): the anchor of the timestamp window (act__session_time_ok). */
    int64_t time_anchor_ns;

    struct act__plugins *plugins;
    /* Chunk memory lives in this process's spool (spool.h); what the
     * writer needs besides is logged there too. Set at create. */
    int spooled;
    /* Scoped spans and instants store counter ticks (ACT__TICK_TAG),
     * turned into nanoseconds through the pairs in cal[0..ncal) (under
     * cal_lock, a leaf: taken by the drain and by stop). */
    int use_ticks;
    pthread_mutex_t cal_lock;
    act__cal *cal;
    size_t ncal, capcal;
    /* With use_ticks: the chunks not from the pool (carved, a thread's
     * first ones, oversized), which stop settles in place; the pool's
     * own are found through the pool. Under lock. Never a spilled one,
     * so stop touches no spilled page. */
    struct act__chunk **loose;
    size_t nloose, caploose;
    /* Spooled: MAX_BUFFER_SIZE_MB bounds the chunk memory in RAM (s->bytes)
     * and SPOOL_MAX_MB the spool (s->bytes + spilled). Slabs no longer
     * carved are spilled, oldest first: written to the spool file and
     * dropped from memory (thread.c, spill_one), by the pre-fault thread
     * ahead of need or by a recording thread that finds RAM full.
     * spill_lock serialises spillers; taken before s->lock. */
    uint64_t spool_max_bytes;
    _Atomic uint64_t spilled;
    pthread_mutex_t spill_lock;
    struct act__slab *spill_next; /* writeback started, not dropped yet */
    /* A program's own session (not spooled) with a pool, past its RAM
     * budget: the drain's archive goes to slabs of an unlinked temporary
     * file in SPILL_DIR, spilled like a spooled session's slabs (thread.c,
     * tmp_archive_chunk). tmp_ok: 0 with SPILL_DIR = none, or once the
     * file could not be made or grow (said once). tmp_on: set by the drain
     * once the budget, every pool slot counted in use, first runs short
     * (thread.c, tmp_wanted), never cleared; from then on the
     * budget is checked as a spooled one (SPOOL_MAX_MB for RAM and file
     * together). The file, its size and the slab being carved are the
     * drain's alone (tmp_slab is read under lock by spillers, who skip it). */
    int tmp_ok;
    _Atomic int tmp_on;
    int tmp_fd;        /* -1 until first needed; kept at 512 or above */
    /* The file's identity, checked (fstat) before each use: a program
     * that closed the descriptor and got its number for a file of its
     * own must never have trace data written there. tmp_lost: it did
     * (the descriptor is the program's now: never used or closed). */
    uint64_t tmp_dev, tmp_ino;
    _Atomic int tmp_lost;
    int32_t tmp_pid;   /* the process that made it (a forked child maps none) */
    uint64_t tmp_size;
    char *tmp_dir;     /* SPILL_DIR, else $TMPDIR, else /tmp */
    struct act__slab *tmp_slab;
    char *tmp_cur, *tmp_end;
    /* A trace rebuilt from a spool by another process: the pid it is
     * written under (0: getpid()), and "actraceRecovered" in the trace. */
    int32_t pid;
    int recovered;
    /* A rebuilt session's chunks: the spool file's private mapping (the
     * rebuild fixed up only their headers there), for the writer to drop
     * the rest again once read (act__spill_map_make). */
    const void *rebuilt_map;
    size_t rebuilt_len;
    /* The dead process's launcher variables (ACT__SP_DIST; has_dist 0:
     * this process's environment at write time). */
    int has_dist;
    struct act__dist {
        int has_rank, has_world, has_local;
        int64_t rank, world, local;
        char backend[256]; /* ACTRACE_DIST_BACKEND (cut to 255 bytes); "": none */
    } dist;
    /* This process's start time, clock ticks after boot (/proc/self/stat
     * field 22; the same across exec): 0 if unknown. */
    int64_t proc_start;
    char errmsg[512];
    /* The plugins' lines of actraceStats: set by the layer that loaded
     * them (session/lifecycle.c), called by the writers' visitor with
     * s->lock held; fills *pl (*n entries) and *warn (the warnings they
     * point into), both the caller's to free; 0, or ACT_ENOMEM (nothing
     * filled). NULL: the session has no plugins (a rebuilt one). */
    int (*report_plugins)(const act_session *s, struct act__vplugin **pl,
                          const char ***warn, size_t *n);
    /* The config's unknown keys (no built-in, no plugin read them) were
     * reported: once, when the session first stops, or at destroy if it
     * never ran (session/lifecycle.c). */
    int unread_reported;
    /* The recording fast path's time window (record.c): time_anchor_ns -
     * ACT__FAST_WINDOW / 2, set with the anchor when the session starts
     * (before anything can record in it). */
    uint64_t fast_time_lo;
    /* The bounded pool standard chunks come from, recycled once the
     * helper thread has drained them (copied to the archive and spliced
     * into the thread's list in their place; under record, in the spool).
     * NULL: chunks are carved from slabs as they are needed
     * (BUFFER_POOL_MB = 0). thread.c. */
    struct act__pool *pool;
};

/* Global recording target: the collecting session, or NULL. */
extern _Atomic(act_session *) act__recording;

/*
 * The grace period (grace.c): a recording call counts itself in its
 * thread's word (act__rd_word) before it uses the session it loaded from
 * act__recording, and restores the word as it returns; act_session_stop,
 * after unpublishing the session, calls act__grace_wait, which returns
 * when every call that may have loaded it has returned. A word holds the
 * count (ACT__RD_COUNT), ACT__RD_REG once the thread is registered (its
 * word can be seen by act__grace_wait), ACT__RD_GONE after its exit hook
 * (no longer registered; the thread records nothing more).
 */
#define ACT__RD_REG (UINT32_C(1) << 31)
#define ACT__RD_GONE (UINT32_C(1) << 30)
#define ACT__RD_COUNT (ACT__RD_GONE - 1)
_Atomic uint32_t *act__rd_word(void);
/* Register the calling thread's word @p w (its count raised): 0 (REG set
 * in @p w), or -1 (refused: no memory, its lock held by this thread). */
int act__grace_register(_Atomic uint32_t *w);
/* Once, at load (the thread-exit key). */
void act__grace_init(void);
/* At session start: membarrier's registration, once per process. */
void act__grace_prepare(void);
/* After act__recording stopped pointing at a session: wait out the calls
 * that may still use it. */
void act__grace_wait(void);
void act__grace_atfork_prepare(void);
void act__grace_atfork_parent(void);
void act__grace_atfork_child(void);
/* For a public entry outside record.c: the session to record into with
 * the calling thread counted (act__rd_end takes the count back), or NULL
 * (nothing to record; not counted). A lazy stand-in is woken. */
act_session *act__rd_begin(void);
void act__rd_end(void);

/* Lazy start (session/autostart.c). Under `actrace record`, a process that
 * has not recorded yet has act__recording pointing at a stand-in session
 * (lazy set, a generation no thread caches), so every recording call takes
 * its full path, where it calls act__lazy_wake: that starts the real
 * session once (and returns it), or returns NULL (no session: drop the
 * call, as with none). Never called with an engine lock held. The start
 * is the layer above's (act__auto_wake): it sets act__wake_hook at load,
 * before it points act__recording at its stand-in. */
extern act_session *(*act__wake_hook)(void);
static inline act_session *act__lazy_wake(void)
{
    return act__wake_hook ? act__wake_hook() : NULL;
}
/* The process's started session (act_session_start claims it, stop
 * clears it), and the act_step calls that may still use the session they
 * loaded from it: Dekker-style with act_session_stop, a step announces
 * itself in act__steps_in_flight, then re-reads act__started; stop clears
 * act__started, then waits for the count to drain, so the session is never
 * used by a step after stop returns (session/lifecycle.c). A forked child
 * starts with neither (session.c). */
extern _Atomic(act_session *) act__started;
extern _Atomic unsigned act__steps_in_flight;
/* The started session, without waking a lazy one (the on-demand poller). */
act_session *act__session_started(void);

/* Slot of a type in the per-type drop counters; -1 if not a type code. */
static inline int act__type_slot(int type)
{
    if ((unsigned)type <= ACT_ACTIVITY_TYPE_MAX_BUILTIN)
        return type;
    if (type >= ACT_ACTIVITY_TYPE_FIRST_CUSTOM &&
        type < ACT_ACTIVITY_TYPE_FIRST_CUSTOM + ACT_ACTIVITY_TYPE_MAX_REGISTERED)
        return ACT_ACTIVITY_TYPE_MAX_BUILTIN + 1 + (type - ACT_ACTIVITY_TYPE_FIRST_CUSTOM);
    return -1;
}

/* 1 if what @p source described is written (the app, or a plugin that
 * was not refused). */
static inline int act__source_live(const act_session *s, uint16_t source)
{
    return source < s->nsources && !s->sources[source].retired;
}

/* 1 if records of @p type are kept by @p s: built-in types by the
 * ACTIVITY_TYPES selection (a bit test for the fast path), registered ones
 * also when ACTIVITY_TYPES was not set. */
static inline int act__type_selected(const act_session *s, int type)
{
    if ((unsigned)type < 64)
        return (int)((s->builtin_mask >> type) & 1);
    if (act__type_slot(type) < 0)
        return 0;
    if (s->custom_types_default)
        return act_activity_type_name((act_activity_type)type) != NULL;
    return act_activity_set_has(&s->types, (act_activity_type)type);
}

/* Caller-supplied timestamps (the app's act_span_record and device calls,
 * every plugin record and sample) must lie within ACT__TIME_WINDOW of the
 * session's start or of the clock when they are recorded. Every event of a
 * trace then lies within [start - W, stop + W], so the writer's integer
 * arithmetic cannot overflow and one absurd timestamp cannot push the real
 * events beyond what a double holds to the nanosecond (2^53 ns, 104 days,
 * relative to baseTimeNanoseconds). 2^51 ns is about 26 days. */
#define ACT__TIME_WINDOW (INT64_C(1) << 51)

/* The fast paths' stricter window, checked in one test (record.c): start
 * within ACT__FAST_WINDOW / 2 of the anchor, end - start below
 * ACT__FAST_WINDOW; both times then lie within ACT__TIME_WINDOW of it.
 * Any other pair takes the full checks above. */
#define ACT__FAST_WINDOW (INT64_C(1) << 50)
_Static_assert(ACT__FAST_WINDOW / 2 * 3 <= ACT__TIME_WINDOW, "fast window inside the window");

static inline int act__time_near(int64_t t, int64_t anchor)
{
    /* |t - anchor| <= W, in unsigned arithmetic: no overflow for any t. */
    return (uint64_t)t - (uint64_t)anchor + (uint64_t)ACT__TIME_WINDOW <=
           2 * (uint64_t)ACT__TIME_WINDOW;
}

static inline int act__session_time_ok(const act_session *s, int64_t t)
{
    if (ACT_LIKELY(act__time_near(t, s->time_anchor_ns)))
        return 1;
    /* A session may run for weeks: then compare with the clock. */
    return act__time_near(t, act__clock_ns());
}

/* Interned names longer than this are cut (strtab.c). */
#define ACT__NAME_MAX_LEN 65536

/* ---- engine internals used across files ---------------------------------- */

/* The calling thread's buffer for @p s (attached on first use), or NULL if
 * it cannot be allocated. */
act__thread *act__thread_get(act_session *s);
/* Like act__thread_get, through the calling thread's cache. */
act__thread *act__thread_for(act_session *s);
/* Make room for @p nrec records and @p strbytes of strings in the tail
 * chunk, moving to a new chunk if needed. 0, or -1 when the buffer limit
 * refuses a new chunk. */
int act__thread_reserve(act__thread *t, uint32_t nrec, uint32_t strbytes);
/* Copy a string into the tail chunk's string area (space reserved). */
static inline void act__thread_set_str(act__thread *t, char *str)
{
    t->str = str;
    t->lim = str - 2 * sizeof(act__rec) + 1;
}
static inline uint32_t act__thread_put_str(act__thread *t, const char *s,
                                           uint32_t len)
{
    act__thread_set_str(t, t->str - act__str_space(len));
    uint32_t l32 = len;
    memcpy(t->str, &l32, 4);
    if (len)
        memcpy(t->str + 4, s, len);
    return (uint32_t)(t->str - (char *)t->tail) | ACT__REF_LOCAL;
}
/* Records committed to the tail chunk (owner only: a relaxed load). */
static inline uint32_t act__thread_used(const act__thread *t)
{
    return atomic_load_explicit(&t->tail->used, memory_order_relaxed);
}
/* Commit @p n more records to the tail chunk (readers load its count
 * with acquire). The count is the chunk's own: no copy in the thread. */
static inline void act__thread_commit(act__thread *t, uint32_t n)
{
#if ACT_X86_PLAIN
    /* One add to memory: a plain store on x86-64 has release order; only
     * this thread writes the count (not locked). */
    __asm__ __volatile__("addl %1, %0" : "+m"(*(uint32_t *)&t->tail->used) : "ir"(n) : "memory");
#else
    atomic_store_explicit(&t->tail->used, act__thread_used(t) + n, memory_order_release);
#endif
}
void act__thread_drop(act__thread *t, int type, act__drop_reason why);

/* Append one counter sample (the app's act_counter and plugins' samples
 * alike). 0, or -1 when the buffer limit dropped it (counted). */
static inline int act__thread_put_counter(act__thread *t, uint32_t series,
                                          int64_t ts_ns, double value)
{
    if ((char *)(t->rec + 1) > t->str && act__thread_reserve(t, 1, 0) != 0) {
        act__thread_drop(t, -1, ACT__DROP_BUFFER_FULL);
        return -1;
    }
    act__rec *r = t->rec;
    r->t0 = ts_ns;
    int64_t bits;
    memcpy(&bits, &value, sizeof bits);
    atomic_store_explicit(&r->t1, bits, memory_order_relaxed);
    r->x = 0;
    r->name = series;
    r->type = 0;
    r->kind = ACT__R_COUNTER;
    r->flags = 0;
    t->rec = r + 1;
    t->args_ok = 0; /* args never attach to a counter */
    act__thread_commit(t, 1);
    return 0;
}

/* String table (interned names), process-wide. */
const char *act__name_str(act_name_id id, uint32_t *len);
/* 1 if @p id was returned by act_name() (ids are dense from 1). */
int act__name_known(act_name_id id);
void act__strtab_atfork_prepare(void);
void act__strtab_atfork_parent(void);
void act__strtab_atfork_child(void);
void act__names_atfork_prepare(void);
void act__names_atfork_parent(void);
void act__names_atfork_child(void);
/* Install the fork handlers (once; also done when the library loads). */
void act__atfork_install(void);
/* Set by the auto-start (session/autostart.c) before it creates the session of a
 * process that `actrace record` did not start itself (a forked child, or a
 * program one of them exec'd): such a process pre-faults 1 MB, not
 * BUFFER_PREALLOC_MB's default of 16, writes none of its pool, and its
 * helper thread warms nothing until it has used 512 KB, unless the config
 * sets the key. A build that forks a thousand compilers must not pay 16 MB
 * of page faults for each; the helper still stays ahead of a child that
 * records a lot. */
extern int act__prealloc_small;
/* This process's identity across exec: with its pid it names one process
 * (an exec'd image has the same; a later process given the same pid has
 * another). The inode number of its pid in pidfs (Linux 6.9+: unique for
 * the boot, no /proc lookup) with ACT__PROC_ID_PIDFS (spool.h) set; where there is
 * no pidfs, its start in clock ticks after boot (/proc/self/stat field
 * 22); 0 if neither can be read. Read once per process (cached with the
 * pid: a forked child reads its own). */
int64_t act__proc_id(void);
/* distributedInfo's variables from the environment: the launcher's rank,
 * world size and local rank (torchrun's RANK..., Slurm's, OpenMPI's, the
 * first set to a whole number >= 0), ACTRACE_DIST_BACKEND. */
typedef struct act__dist act__dist;
void act__dist_env(act__dist *d);
/* secure_getenv of @p n names in one pass over the environment: out[i] is
 * the value of names[i] (the first one, as getenv finds it) or NULL; all
 * NULL in a secure-execution (set-id) process, as secure_getenv. */
void act__env_scan(const char *const *names, size_t n, const char **out);
/* Log this process's act__dist_env to the spool (ACT__SP_DIST), or encode
 * it into @p buf (@p cap bytes) when @p buf is not NULL: its size, 0 if it
 * does not fit. */
size_t act__dist_spool(char *buf, size_t cap);

/* Signal-safety guard of the recording calls (record.c): 1 if the calling
 * thread may record now (and marks it busy), 0 if it interrupted one of
 * its own recording calls (the call must then only count the drop with
 * act__reentrant_drop and return). Every act__rec_enter() that returned 1
 * is paired with act__rec_leave(). */
int act__rec_enter(void);
/* The same for a call counted by act__rd_begin already. */
int act__rec_enter_counted(void);
void act__rec_leave(void);
void act__reentrant_drop(act_session *s);

/* Thread and process names, process-wide. */
/* A name given to thread (@p tid, @p serial) by act_thread_name, else one a
 * plugin gave @p tid (name_thread), else the kernel's name for @p tid, else
 * NULL. @p serial ACT__SERIAL_ANY takes the latest name given to @p tid. */
#define ACT__SERIAL_ANY UINT64_MAX
const char *act__thread_name_lookup(int32_t tid, uint64_t serial, char *buf, size_t cap);
/* The tids named by plugins (act__thread_name_set with by_plugin):
 * writes up to @p cap, returns how many. */
size_t act__thread_names_by_plugin(int32_t *out, size_t cap);
/* The calling thread's serial: nonzero, unique per thread in the process
 * (a fork()ed child's thread keeps the one it had). */
uint64_t act__thread_serial(void);
/* Name thread (@p tid, @p serial) exactly (the spool's rebuild). */
int act__thread_name_set_serial(int32_t tid, uint64_t serial, const char *name, size_t len,
                                int by_plugin);
/* Forget every thread name and the process name (the spool's rebuild,
 * in a process of its own). */
void act__names_reset(void);
/* Interned names: log every one that exists to the spool, and every new
 * one from now on (under the table's lock, so none is missed). */
void act__strtab_spool_begin(void);
/* Resolve interned ids through @p names / @p lens (n entries; NULL
 * entries are unknown) instead of this process's table: a rebuilt trace's
 * ids are the dead process's. NULL: back to the table. */
void act__names_override(const char *const *names, const uint32_t *lens, uint32_t n);
const char *act__process_name(char *buf, size_t cap);
/* The name the program gave itself (act_process_name), copied into @p buf,
 * or NULL: unlike act__process_name, no fall back to /proc/self/comm. */
const char *act__process_name_given(char *buf, size_t cap);

/* act__emit and act__counter_sample for a caller that holds the
 * signal-safety guard (act__rec_enter) already. */
int act__emit_guarded(act_session *s, const act__emit_record *r);
int act__counter_sample_guarded(act_session *s, uint32_t series, int64_t ts_ns,
                                double value);

/* Counter series lookup for act_counter (slow path, takes the lock). */
int act__series_find(act_session *s, uint16_t source, uint32_t device,
                     const char *track, const char *series, const char *unit,
                     uint32_t *out, act__series **sp);

/* Slabs: pre-fault @p bytes of chunks; unmap everything at destroy. */
int act__slab_prealloc(act_session *s, size_t bytes);
/* The chunk pool: @p bytes of standard chunks (reserved, not touched;
 * spooled: part of the spool, mapped as needed), the first @p warm bytes
 * written now; @p policy:
 * BUFFER_FULL_POLICY, what a recording thread that finds the pool empty
 * does: grow (carve a chunk from the slabs, as without a pool), drop, or
 * wait for the drain. 0, or -1 (no pool: the session carves slabs as
 * before). Freed by act__slabs_free. */
enum { ACT__POOL_GROW = 0, ACT__POOL_DROP = 1, ACT__POOL_WAIT = 2 };
int act__pool_create(act_session *s, size_t bytes, size_t warm, int policy);
/* Tests: chunks drained so far, the pool's slots, and how many were ever
 * touched (handed out or warmed). All 0 without a pool. */
void act__pool_counts(act_session *s, uint64_t *drained, uint32_t *slots, uint32_t *touched);
/* Tests: wait for three whole passes of the drain, so that with nothing
 * recorded meanwhile it is done with what was there (no-op without one). */
void act__pool_settle(act_session *s);
/* A session being destroyed: no thread-exit hook touches it any more. */
void act__pool_forget(act_session *s);
/* The calling thread forgets its cached buffer (record.c): its next
 * recording call attaches a new one (after its exit hook ran). */
void act__thread_forget(void);
void act__slabs_free(act_session *s);
/* A writer of a spooled session reads spilled slabs back (faulting them
 * in) and drops them again as it goes, so that the process's resident
 * memory stays within the budget however long the trace (a rebuilt
 * session: its whole mapping of the spool, but for the chunks' header
 * pages, which the rebuild wrote): the spilled
 * slabs' ranges, sorted (made under s->lock; -1 when out of memory, and
 * nothing is dropped; n = 0 when nothing was spilled), and the drop of one
 * chunk a reader is done with (a no-op unless it lies in a spilled slab).
 * Only shared file memory is ever dropped: nothing is lost. */
typedef struct act__spill_map {
    uintptr_t *lo; /* n pairs (start, end) */
    size_t n;
    int priv; /* a rebuild's private mapping: each chunk's header page stays */
} act__spill_map;
int act__spill_map_make(act_session *s, act__spill_map *m);
void act__spill_map_drop(const act__spill_map *m, const act__chunk *c);
void act__spill_map_free(act__spill_map *m);
/* A chunk of the rebuild's private mapping of a spool (ending at @p end),
 * read: its pages past the header page leave memory (they were only read;
 * the header page, which the rebuild writes, stays). */
void act__chunk_drop_read(const act__chunk *c, uintptr_t end);
/* The pre-fault thread: started by act_session_start (a failure to start
 * only logs), stopped and joined by stop/destroy (idempotent; a no-op in a
 * forked child, which never had it). */
void act__prefault_start(act_session *s);
void act__prefault_stop(act_session *s);

/* The recording state of a session (session.c); the public
 * act_session_create/destroy (session/lifecycle.c) add its plugins.
 * act__session_opts_read copies the caller's opts, reading only what its
 * struct_size covers (ACT_EINVAL for a larger struct with a non-zero
 * tail); act__session_create takes opts so read, and its plugin list is
 * not its business. act__session_free frees a session that is not
 * collecting (CREATED or STOPPED) and whose plugins are gone. */
int act__session_opts_read(const act_session_opts *in, act_session_opts *out);
int act__session_create(const act_session_opts *opts, act_session **out);
void act__session_free(act_session *s);
/* Sample the offset from the monotonic clock to Unix time. */
void act__sample_clock_offset(act_session *s);

#endif /* ACT_ENGINE_H */
