/* SPDX-License-Identifier: MIT */
/*
 * The nvtx plugin: NVTX v3 ranges, marks and thread names from unmodified
 * programs. One shared object is two things at once:
 *
 *  - an actrace plugin (act_plugin_entry), loaded by libactrace at session
 *    start. Its init points NVTX_INJECTION64_PATH at this very file
 *    (dladdr) unless the program already has one (then it keeps it and
 *    says so once), so that children inherit it too;
 *  - the NVTX injection library (InitializeInjectionNvtx2). At a program's
 *    first NVTX call, the header-only NVTX code dlopen()s that path, which
 *    yields this already-loaded image, and calls InitializeInjectionNvtx2;
 *    we fill NVTX's core and domain function tables with the callbacks
 *    below. The image is shared, so the callbacks see the plugin's state.
 *
 * Memory model. NVTX's injection is process-wide, so its state is too
 * (static, not per plugin instance). Each application thread owns an
 * `nthread`: a stack of open push ranges and a chain of `block`s, each a
 * byte stream of variable-length events. Only the owner writes a block;
 * it publishes an event by a release store of block.used, and ends an
 * open one by a release store of ev.end. flush(), after stop(), walks
 * every thread's chain with acquire loads, so a thread still inside a
 * callback while recording stops races with nothing it could corrupt:
 * its event is either published (and read) or not (and lost, as it would
 * be a moment later). Start/end ranges, which may end on another thread,
 * live in one global chain under a mutex. Blocks are allocated one at a
 * time (8 KiB doubling to 256 KiB; never per event), bounded by
 * NVTX_MAX_BUFFER_MB, and never freed while the process lives: a late
 * callback may still hold a pointer into one. The next session reuses
 * them (each thread rewinds its own chain at its first call, seeing a new
 * generation). Handles given to the program (domains, registered strings)
 * are indices checked against a count, never pointers it could forge.
 *
 * Hot path (push/pop): one load of the "collecting" flag, one
 * initial-exec TLS load, two clock reads (CLOCK_MONOTONIC, which init
 * checked now_ns is), a strlen and a copy of the message, a few stores;
 * blocks come pre-faulted from a helper thread. No lock, no atomic
 * read-modify-write, no allocation, no formatting. Names are checked
 * (UTF-8) and args built only in flush. See docs/nvtx.md for the mapping
 * and its choices.
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <actrace/plugin.h>

#include "../lazy_wake.h"

#define MAX_DEPTH 128          /* open push ranges recorded per thread */
#define BLOCK_FIRST (8u << 10)   /* a thread's first block: data bytes */
#define BLOCK_BYTES (256u << 10) /* blocks double up to this */
#define NAME_MAX_BYTES 4096u   /* longer messages are truncated */
#define MAX_DOMAINS 65535u
#define MAX_LANES 1024u        /* tracks for overlapping start/end ranges */
#define RANGE_TID_BASE 0x40000000u /* above any Linux tid (pid_max <= 2^22) */
#define BATCH 1024u
#define MAX_ARGS 6u
#define OPEN_END INT64_MIN

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- events ----------------------------------------------------------- */

enum { EV_PUSH = 1, EV_MARK = 2, EV_RANGE = 3 };
enum { F_NAME_NULL = 1, F_HAS_COLOR = 2, F_NAME_REG = 4 };

/* One recorded NVTX event. Events are variable-length records in one
 * byte stream per thread: the header, then an `evx` if F_EXT, then the
 * name's bytes padded to 8. A push+pop of a short name writes one
 * sequential run of 40 bytes or so, never a second stream. */
typedef struct ev {
    int64_t start;
    _Atomic int64_t end; /* OPEN_END until ended */
    uint32_t name_len;
    uint16_t domain;     /* 0: default domain */
    uint8_t kind;        /* EV_* */
    uint8_t flags;       /* F_* */
} ev;

/* What only Ex calls and start/end ranges carry. */
typedef struct evx {
    const char *reg;  /* registered string's UTF-8 (F_NAME_REG) */
    uint64_t payload; /* raw bits, see payload_type */
    uint32_t category; /* 0: none */
    uint32_t color;    /* ARGB, if F_HAS_COLOR */
    uint32_t tid;      /* start/end ranges: thread that started it */
    _Atomic uint32_t tid_end; /* ... and the one that ended it */
    int8_t payload_type; /* NVTX_PAYLOAD_TYPE_*, 0: none */
    uint8_t pad[7];
} evx;

enum { F_EXT = 8 };

typedef struct block {
    _Atomic(struct block *) next;
    _Atomic uint32_t used; /* published bytes of data */
    uint32_t cap;          /* bytes of data */
    _Alignas(8) char data[];
} block;

_Static_assert(BLOCK_FIRST >= NAME_MAX_BYTES + 64, "a block holds any event");

static inline uint32_t pad8(uint32_t n)
{
    return (n + 7u) & ~7u;
}

static inline evx *ev_ext(const ev *e)
{
    return (evx *)(void *)((char *)(uintptr_t)e + sizeof(ev));
}

static inline const char *ev_name(const ev *e)
{
    return (const char *)e + sizeof(ev) + ((e->flags & F_EXT) ? sizeof(evx) : 0);
}

static inline uint32_t ev_size(const ev *e)
{
    uint32_t n = (e->flags & (F_NAME_REG | F_NAME_NULL)) ? 0 : e->name_len;
    return (uint32_t)sizeof(ev) + ((e->flags & F_EXT) ? (uint32_t)sizeof(evx) : 0) +
           pad8(n);
}

/* Per application thread (or the global start/end range chain). */
typedef struct nthread {
    struct nthread *next_thread; /* global list, under g_lock */
    uint32_t tid;
    _Atomic uint32_t gen;   /* session generation this state belongs to */
    _Atomic(block *) head;  /* first block (never changes once set) */
    block *cur;    /* block being filled */
    uint32_t pos;  /* bytes used in cur (published or being written) */
    int depth;     /* open push ranges, including unrecorded ones */
    ev *stack[MAX_DEPTH];
    uint16_t stack_dom[MAX_DEPTH];
    /* Counted by the owner (bump: a relaxed load and store, no locked
     * instruction), summed by flush: a count a moment late is fine. */
    _Atomic uint64_t bad_pops, domain_pops, too_deep, null_strings,
        truncated, dropped, bad_attrs;
} nthread;

/* Domains, registered strings and category names: rare calls, kept for
 * the process's life (events refer to them by index or pointer). The
 * handles given to the program are small integers (index + 1 for
 * strings, the index for domains), not pointers: a handle is checked
 * against the count and never dereferenced, so a stale, foreign or wild
 * handle cannot crash anything. Entries are written before the count that
 * publishes them (release); readers load the count (acquire). */
#define STR_CHUNK 1024u
#define STR_CHUNKS 4096u /* up to 4M registered strings */

typedef struct string_rec {
    const char *utf8;
    uint32_t len;
} string_rec;

typedef struct name_rec {
    uint32_t key_a; /* domain index, or OS thread id */
    uint32_t key_b; /* category id */
    char *name;
} name_rec;

/* ---- global state ------------------------------------------------------- */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_on;       /* a session is collecting */
static _Atomic uint32_t g_gen; /* bumped at each start */
static _Atomic int g_armed;    /* a plugin instance initialised here */
/* A forked child of a process that used NVTX: its first NVTX call wakes
 * its lazily started session (lazy_wake.h); not from the fork handler,
 * where the other plugins' handlers are not done yet. */
static _Atomic int g_wake_pending;

static int nvtx_wake_now(void)
{
    atomic_store(&g_wake_pending, 0);
    plugin_lazy_wake();
    return atomic_load_explicit(&g_on, memory_order_acquire);
}

/* 1 if no session collects: the callbacks' first test (one load). */
static inline int nvtx_off(void)
{
    if (__builtin_expect(atomic_load_explicit(&g_on, memory_order_acquire) != 0, 1))
        return 0;
    return !(atomic_load_explicit(&g_wake_pending, memory_order_relaxed) && nvtx_wake_now());
}
static int64_t (*g_now_fn)(act_plugin_ctx *);
static act_plugin_ctx *g_now_ctx;
static int g_direct_clock; /* now_ns is CLOCK_MONOTONIC: read it here */
static const act_plugin_host *g_host; /* while an instance lives */
static _Atomic uint64_t g_bytes;      /* block bytes allocated */
static uint64_t g_max_bytes = 256ull << 20;

static nthread *g_threads; /* under g_lock */
static nthread g_ranges;   /* start/end ranges, under g_lock */
static ev **g_range_index; /* range id - 1 -> event, under g_lock */
static size_t g_nranges, g_cap_ranges;

static char *g_domain_names[MAX_DOMAINS]; /* [0] unused: default domain */
static _Atomic uint32_t g_ndomains = 1;
static _Atomic(string_rec *) g_strings[STR_CHUNKS];
static _Atomic uint32_t g_nstrings;
static name_rec *g_catnames, *g_threadnames;
static size_t g_ncat, g_capcat, g_nthn, g_capthn;

static _Atomic uint64_t g_bad_ends, g_registered, g_bad_handles,
    g_null_global, g_injected;
static _Atomic int g_kept_logged;
static int g_kept;             /* NVTX_INJECTION64_PATH was someone else's */
static char g_kept_path[512];

/* initial-exec: a plain %fs-relative load instead of a __tls_get_addr
 * call on every NVTX call. One pointer fits glibc's static TLS surplus
 * reserved for dlopen()ed libraries. */
static __thread nthread *tl __attribute__((tls_model("initial-exec")));

/* Owner-only counter increment: no locked instruction. */
static inline void bump(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* The host clock. plugin.h defines now_ns as CLOCK_MONOTONIC; when init
 * confirmed it, the plugin reads that clock itself and saves two calls
 * (the table's and libactrace's) per timestamp. */
static inline int64_t now(void)
{
    if (LIKELY(g_direct_clock)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    return g_now_fn(g_now_ctx);
}

static uint32_t gettid_u32(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

/* ---- blocks and per-thread state ---------------------------------------- */

static block *block_new(uint32_t cap)
{
    size_t bytes = sizeof(block) + cap;
    uint64_t was = atomic_fetch_add(&g_bytes, bytes);
    if (was + bytes > g_max_bytes) {
        atomic_fetch_sub(&g_bytes, bytes);
        return NULL;
    }
    block *b = malloc(bytes);
    if (!b) {
        atomic_fetch_sub(&g_bytes, bytes);
        return NULL;
    }
    atomic_init(&b->next, NULL);
    atomic_init(&b->used, 0);
    b->cap = cap;
    return b;
}

/* ---- pre-faulted blocks --------------------------------------------------- */

/* A full-size block's first touch costs a page fault per 4 KiB, which on
 * the recording thread would add about half a clock read to every
 * push+pop. While a session collects, a helper thread keeps POOL_TARGET
 * full-size blocks allocated with MAP_POPULATE (faulted in by the kernel
 * off the hot path); next_block takes one under g_pool_lock, once per
 * 256 KiB. With the pool empty (or no helper), blocks are allocated
 * directly, as before. */
#define POOL_TARGET 8

static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_pool_cond = PTHREAD_COND_INITIALIZER;
static block *g_pool;     /* ready blocks, linked by next; g_pool_lock */
static int g_pool_n;      /* g_pool_lock */
static int g_pool_stop;   /* g_pool_lock */
static pthread_t g_pool_thread;
static int g_pool_running;         /* g_pool_lock */
static _Atomic int g_pool_wanted;  /* 1 once a session saw NVTX activity */
static _Atomic uint64_t g_pool_hits, g_pool_misses; /* full-size blocks */

static block *block_populated(void)
{
    size_t bytes = sizeof(block) + BLOCK_BYTES;
    uint64_t was = atomic_fetch_add(&g_bytes, bytes);
    if (was + bytes > g_max_bytes) {
        atomic_fetch_sub(&g_bytes, bytes);
        return NULL;
    }
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (m == MAP_FAILED) {
        atomic_fetch_sub(&g_bytes, bytes);
        return NULL;
    }
    block *b = m;
    atomic_init(&b->next, NULL);
    atomic_init(&b->used, 0);
    b->cap = BLOCK_BYTES;
    return b;
}

static void *pool_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_pool_lock);
    while (!g_pool_stop) {
        if (g_pool_n < POOL_TARGET) {
            pthread_mutex_unlock(&g_pool_lock);
            block *b = block_populated();
            pthread_mutex_lock(&g_pool_lock);
            if (b) {
                atomic_store_explicit(&b->next, g_pool, memory_order_relaxed);
                g_pool = b;
                g_pool_n++;
                continue;
            }
            /* Budget spent: wait to be stopped (drops are counted). */
        }
        pthread_cond_wait(&g_pool_cond, &g_pool_lock);
    }
    pthread_mutex_unlock(&g_pool_lock);
    return NULL;
}

/* A ready full-size block, or NULL. */
static block *pool_take(void)
{
    pthread_mutex_lock(&g_pool_lock);
    block *b = g_pool;
    if (b) {
        g_pool = atomic_load_explicit(&b->next, memory_order_relaxed);
        g_pool_n--;
        atomic_store_explicit(&b->next, NULL, memory_order_relaxed);
        pthread_cond_signal(&g_pool_cond);
    }
    pthread_mutex_unlock(&g_pool_lock);
    return b;
}

/* Started by the first thread that records in a session (a program that
 * makes no NVTX call gets no helper and no pre-faulted memory). */
static void pool_start(void)
{
    if (atomic_exchange(&g_pool_wanted, 1))
        return;
    pthread_mutex_lock(&g_pool_lock);
    if (!g_pool_running && atomic_load(&g_on)) {
        g_pool_stop = 0;
        g_pool_running =
            pthread_create(&g_pool_thread, NULL, pool_main, NULL) == 0;
    }
    pthread_mutex_unlock(&g_pool_lock);
}

static void pool_stop(void)
{
    pthread_mutex_lock(&g_pool_lock);
    int running = g_pool_running;
    g_pool_stop = 1;
    g_pool_running = 0;
    pthread_cond_signal(&g_pool_cond);
    pthread_mutex_unlock(&g_pool_lock);
    if (running)
        pthread_join(g_pool_thread, NULL);
    atomic_store(&g_pool_wanted, 0);
    /* Ready blocks stay in the pool for the next session. */
}

/* Rewinds a thread's chain for a new session; blocks are kept. */
static void thread_reset(nthread *t, uint32_t gen)
{
    for (block *b = atomic_load(&t->head); b; b = atomic_load(&b->next))
        atomic_store_explicit(&b->used, 0, memory_order_release);
    t->cur = atomic_load_explicit(&t->head, memory_order_relaxed);
    t->pos = 0;
    t->depth = 0;
    atomic_store_explicit(&t->bad_pops, 0, memory_order_relaxed);
    atomic_store_explicit(&t->domain_pops, 0, memory_order_relaxed);
    atomic_store_explicit(&t->too_deep, 0, memory_order_relaxed);
    atomic_store_explicit(&t->null_strings, 0, memory_order_relaxed);
    atomic_store_explicit(&t->truncated, 0, memory_order_relaxed);
    atomic_store_explicit(&t->dropped, 0, memory_order_relaxed);
    atomic_store_explicit(&t->bad_attrs, 0, memory_order_relaxed);
    atomic_store_explicit(&t->gen, gen, memory_order_release);
}

static void pool_start(void);

static __attribute__((noinline)) nthread *thread_slow(void)
{
    uint32_t gen = atomic_load_explicit(&g_gen, memory_order_acquire);
    pool_start();
    nthread *t = tl;
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t)
            return NULL;
        t->tid = gettid_u32();
        atomic_init(&t->gen, gen);
        pthread_mutex_lock(&g_lock);
        t->next_thread = g_threads;
        g_threads = t;
        pthread_mutex_unlock(&g_lock);
        tl = t;
        return t;
    }
    thread_reset(t, gen);
    return t;
}

static inline nthread *me(void)
{
    nthread *t = tl;
    if (LIKELY(t && atomic_load_explicit(&t->gen, memory_order_relaxed) ==
                        atomic_load_explicit(&g_gen,
                                                   memory_order_relaxed)))
        return t;
    return thread_slow();
}

/* Moves to the next block of the chain (reused from an earlier session,
 * or new). NULL when the buffer budget is spent. */
static __attribute__((noinline)) block *next_block(nthread *t)
{
    block *b = t->cur;
    block *nb = b ? atomic_load_explicit(&b->next, memory_order_relaxed) : NULL;
    if (nb) {
        atomic_store_explicit(&nb->used, 0, memory_order_relaxed);
    } else {
        /* Small first, doubling: a thread that records little (or a
         * short-lived one) holds little. */
        uint32_t cap = b ? (b->cap < BLOCK_BYTES ? 2 * b->cap : BLOCK_BYTES)
                         : BLOCK_FIRST;
        nb = cap == BLOCK_BYTES ? pool_take() : NULL;
        if (cap == BLOCK_BYTES)
            atomic_fetch_add_explicit(nb ? &g_pool_hits : &g_pool_misses, 1,
                                      memory_order_relaxed);
        if (!nb)
            nb = block_new(cap);
        if (!nb)
            return NULL;
        if (b)
            atomic_store_explicit(&b->next, nb, memory_order_release);
        else
            atomic_store_explicit(&t->head, nb, memory_order_release);
    }
    t->cur = nb;
    t->pos = 0;
    return nb;
}

/* Reserves a record: the header, an evx if @p ext, and @p name_bytes.
 * Returns it with flags set (F_EXT or 0), or NULL when the budget is
 * spent (counted). The caller fills it and calls publish(). */
static inline ev *ev_new(nthread *t, uint32_t name_bytes, int ext)
{
    uint32_t need = (uint32_t)sizeof(ev) + (ext ? (uint32_t)sizeof(evx) : 0) +
                    pad8(name_bytes);
    block *b = t->cur;
    if (UNLIKELY(!b || b->cap - t->pos < need)) {
        b = next_block(t);
        if (UNLIKELY(!b)) {
            bump(&t->dropped);
            return NULL;
        }
    }
    ev *e = (ev *)(void *)(b->data + t->pos);
    e->flags = ext ? F_EXT : 0;
    return e;
}

static inline void publish(nthread *t, const ev *e)
{
    t->pos += ev_size(e);
    atomic_store_explicit(&t->cur->used, t->pos, memory_order_release);
}

/* ---- messages ----------------------------------------------------------- */

/* Encodes one code point; invalid ones become U+FFFD. Returns bytes. */
static int utf8_put(char *p, uint32_t c)
{
    if (c >= 0xd800 && c <= 0xdfff)
        c = 0xfffd;
    if (c > 0x10ffff)
        c = 0xfffd;
    if (c < 0x80) {
        p[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        p[0] = (char)(0xc0 | (c >> 6));
        p[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        p[0] = (char)(0xe0 | (c >> 12));
        p[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        p[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    p[0] = (char)(0xf0 | (c >> 18));
    p[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    p[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    p[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* The message an event carries, before any copy: bytes (A), wide (W) or
 * a registered handle. */
typedef struct nmsg {
    const char *a;
    const wchar_t *w;
    const string_rec *reg;
    int null;
} nmsg;

/* memcpy for the short names NVTX ranges have: GCC inlines a memcpy of
 * unknown size into an 8-byte-aligned destination as `rep movsq`, whose
 * start-up cost was a third of the plugin's share of a push+pop. */
static inline void copy_name(char *dst, const char *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, src + i, 8);
        memcpy(dst + i, &w, 8);
    }
    if (i + 4 <= n) {
        uint32_t w;
        memcpy(&w, src + i, 4);
        memcpy(dst + i, &w, 4);
        i += 4;
    }
    for (; i < n; i++)
        dst[i] = src[i];
}

/* A new event named from @p m, with an evx if @p ext (forced for a
 * registered name, which the evx points to); NULL when dropped. */
static inline ev *ev_with_name(nthread *t, const nmsg *m, int ext)
{
    ev *e;
    if (LIKELY(m->a != NULL)) {
        size_t n = strlen(m->a);
        if (UNLIKELY(n > NAME_MAX_BYTES)) {
            n = NAME_MAX_BYTES;
            bump(&t->truncated);
        }
        e = ev_new(t, (uint32_t)n, ext);
        if (UNLIKELY(!e))
            return NULL;
        copy_name((char *)ev_name(e), m->a, n);
        e->name_len = (uint32_t)n;
        return e;
    }
    if (m->w) {
        size_t n = wcslen(m->w);
        if (n > NAME_MAX_BYTES / 4) {
            n = NAME_MAX_BYTES / 4;
            bump(&t->truncated);
        }
        e = ev_new(t, (uint32_t)(4 * n), ext);
        if (!e)
            return NULL;
        char *dst = (char *)ev_name(e);
        uint32_t len = 0;
        for (size_t i = 0; i < n; i++)
            len += (uint32_t)utf8_put(dst + len, (uint32_t)m->w[i]);
        e->name_len = len; /* publish() advances by this, not 4 * n */
        return e;
    }
    e = ev_new(t, 0, ext || m->reg);
    if (!e)
        return NULL;
    e->name_len = 0;
    if (m->reg) {
        ev_ext(e)->reg = m->reg->utf8;
        e->name_len = m->reg->len;
        e->flags |= F_NAME_REG;
    } else {
        e->flags |= F_NAME_NULL;
        bump(&t->null_strings);
    }
    return e;
}

static const string_rec *check_string(nvtxStringHandle_t h)
{
    uintptr_t v = (uintptr_t)(const void *)h;
    if (v == 0 || v > atomic_load_explicit(&g_nstrings, memory_order_acquire)) {
        atomic_fetch_add_explicit(&g_bad_handles, 1, memory_order_relaxed);
        return NULL;
    }
    string_rec *chunk = atomic_load_explicit(&g_strings[(v - 1) / STR_CHUNK],
                                             memory_order_acquire);
    return &chunk[(v - 1) % STR_CHUNK];
}

static uint16_t domain_index(nvtxDomainHandle_t h)
{
    uintptr_t v = (uintptr_t)(const void *)h;
    if (v == 0)
        return 0;
    if (v >= atomic_load_explicit(&g_ndomains, memory_order_acquire)) {
        atomic_fetch_add_explicit(&g_bad_handles, 1, memory_order_relaxed);
        return 0;
    }
    return (uint16_t)v;
}

/* Reads an event attribute struct into a message and the event's extra
 * fields. Returns 0 if it is unusable (counted by the caller). */
typedef struct attrs {
    nmsg m;
    uint32_t category, color;
    int has_color;
    int8_t payload_type;
    uint64_t payload;
} attrs;

static int read_attrs(const nvtxEventAttributes_t *a, attrs *out)
{
    memset(out, 0, sizeof *out);
    if (!a || a->size < sizeof(nvtxEventAttributes_t)) {
        out->m.null = 1;
        return 0;
    }
    out->category = a->category;
    if (a->colorType == NVTX_COLOR_ARGB) {
        out->has_color = 1;
        out->color = a->color;
    }
    switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
    case NVTX_PAYLOAD_TYPE_INT64:
    case NVTX_PAYLOAD_TYPE_DOUBLE:
        out->payload_type = (int8_t)a->payloadType;
        memcpy(&out->payload, &a->payload, 8);
        break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
        out->payload_type = (int8_t)a->payloadType;
        out->payload = a->payload.uiValue;
        break;
    case NVTX_PAYLOAD_TYPE_INT32:
        out->payload_type = (int8_t)a->payloadType;
        out->payload = (uint64_t)(int64_t)a->payload.iValue;
        break;
    case NVTX_PAYLOAD_TYPE_FLOAT: {
        double d = a->payload.fValue;
        out->payload_type = NVTX_PAYLOAD_TYPE_DOUBLE;
        memcpy(&out->payload, &d, 8);
        break;
    }
    default: /* unknown or extended payloads are not recorded */
        break;
    }
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        out->m.a = a->message.ascii;
        break;
    case NVTX_MESSAGE_TYPE_UNICODE:
        out->m.w = a->message.unicode;
        break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
        out->m.reg = check_string(a->message.registered);
        break;
    default:
        break;
    }
    out->m.null = !out->m.a && !out->m.w && !out->m.reg;
    return 1;
}

/* Zeroes an event's evx (when it has one) and fills it from @p x. */
static inline void ext_init(ev *e, const attrs *x)
{
    if (!(e->flags & F_EXT))
        return;
    evx *v = ev_ext(e);
    const char *reg = (e->flags & F_NAME_REG) ? v->reg : NULL;
    memset(v, 0, sizeof *v);
    v->reg = reg;
    if (!x)
        return;
    v->category = x->category;
    v->color = x->color;
    if (x->has_color)
        e->flags |= F_HAS_COLOR;
    v->payload_type = x->payload_type;
    v->payload = x->payload;
}

/* ---- push / pop --------------------------------------------------------- */

static inline int push_msg(const nmsg *m, const attrs *x, uint16_t dom)
{
    if (nvtx_off())
        return -1;
    nthread *t = me();
    if (UNLIKELY(!t))
        return -1;
    int level = t->depth;
    ev *e = NULL;
    if (LIKELY(level < MAX_DEPTH)) {
        e = ev_with_name(t, m, x != NULL);
        if (LIKELY(e)) {
            e->kind = EV_PUSH;
            e->domain = dom;
            ext_init(e, x);
            atomic_store_explicit(&e->end, OPEN_END, memory_order_relaxed);
            e->start = now();
            publish(t, e);
        }
        t->stack[level] = e;
        t->stack_dom[level] = dom;
    } else {
        bump(&t->too_deep);
    }
    t->depth = level + 1;
    return level;
}

static inline int pop_dom(uint16_t dom)
{
    if (nvtx_off())
        return -1;
    int64_t ts = now();
    nthread *t = me();
    if (UNLIKELY(!t))
        return -1;
    int top = t->depth - 1;
    if (UNLIKELY(top < 0)) {
        bump(&t->bad_pops);
        return -1;
    }
    if (LIKELY(top < MAX_DEPTH)) {
        int i = top;
        while (i >= 0 && t->stack_dom[i] != dom)
            i--;
        if (UNLIKELY(i < 0)) {
            bump(&t->bad_pops);
            return -1;
        }
        ev *e = t->stack[i];
        if (LIKELY(e))
            atomic_store_explicit(&e->end, ts, memory_order_release);
        if (UNLIKELY(i != top)) {
            /* Another domain's range was open above it: close this one
             * and keep the others open (domains have their own stacks). */
            bump(&t->domain_pops);
            memmove(&t->stack[i], &t->stack[i + 1],
                    (size_t)(top - i) * sizeof t->stack[0]);
            memmove(&t->stack_dom[i], &t->stack_dom[i + 1],
                    (size_t)(top - i) * sizeof t->stack_dom[0]);
        }
    }
    t->depth = top;
    return top;
}

static int NVTX_API cb_push_a(const char *s)
{
    nmsg m = {s, NULL, NULL, s == NULL};
    return push_msg(&m, NULL, 0);
}

static int NVTX_API cb_push_w(const wchar_t *s)
{
    nmsg m = {NULL, s, NULL, s == NULL};
    return push_msg(&m, NULL, 0);
}

static void count_bad_attr(void)
{
    nthread *t = me();
    if (t)
        bump(&t->bad_attrs);
}

static int NVTX_API cb_push_ex(const nvtxEventAttributes_t *a)
{
    if (nvtx_off())
        return -1;
    attrs x;
    if (!read_attrs(a, &x))
        count_bad_attr();
    return push_msg(&x.m, &x, 0);
}

static int NVTX_API cb_pop(void)
{
    return pop_dom(0);
}

static int NVTX_API cb_dom_push_ex(nvtxDomainHandle_t d,
                                   const nvtxEventAttributes_t *a)
{
    if (nvtx_off())
        return -1;
    attrs x;
    if (!read_attrs(a, &x))
        count_bad_attr();
    return push_msg(&x.m, &x, domain_index(d));
}

static int NVTX_API cb_dom_pop(nvtxDomainHandle_t d)
{
    return pop_dom(domain_index(d));
}

/* ---- marks ---------------------------------------------------------------- */

static void mark_msg(const nmsg *m, const attrs *x, uint16_t dom)
{
    if (nvtx_off())
        return;
    nthread *t = me();
    if (!t)
        return;
    ev *e = ev_with_name(t, m, x != NULL);
    if (!e)
        return;
    e->kind = EV_MARK;
    e->domain = dom;
    ext_init(e, x);
    e->start = now();
    atomic_store_explicit(&e->end, e->start, memory_order_relaxed);
    publish(t, e);
}

static void NVTX_API cb_mark_a(const char *s)
{
    nmsg m = {s, NULL, NULL, s == NULL};
    mark_msg(&m, NULL, 0);
}

static void NVTX_API cb_mark_w(const wchar_t *s)
{
    nmsg m = {NULL, s, NULL, s == NULL};
    mark_msg(&m, NULL, 0);
}

static void NVTX_API cb_mark_ex(const nvtxEventAttributes_t *a)
{
    if (nvtx_off())
        return;
    attrs x;
    if (!read_attrs(a, &x))
        count_bad_attr();
    mark_msg(&x.m, &x, 0);
}

static void NVTX_API cb_dom_mark_ex(nvtxDomainHandle_t d,
                                    const nvtxEventAttributes_t *a)
{
    if (nvtx_off())
        return;
    attrs x;
    if (!read_attrs(a, &x))
        count_bad_attr();
    mark_msg(&x.m, &x, domain_index(d));
}

/* ---- start / end ranges ----------------------------------------------------- */

/* Range ids carry the session generation in the top bits so that an id
 * from an earlier session never ends a range of this one. */
#define ID_GEN_SHIFT 40

static nvtxRangeId_t range_start(const nmsg *m, const attrs *x, uint16_t dom)
{
    if (nvtx_off())
        return 0;
    uint32_t tid = gettid_u32();
    nvtxRangeId_t id = 0;
    pthread_mutex_lock(&g_lock);
    uint32_t gen = atomic_load(&g_gen);
    if (g_ranges.gen != gen) {
        thread_reset(&g_ranges, gen);
        g_nranges = 0;
    }
    if (g_nranges == g_cap_ranges) {
        size_t ncap = g_cap_ranges ? 2 * g_cap_ranges : 1024;
        ev **ni = realloc(g_range_index, ncap * sizeof *ni);
        if (!ni) {
            bump(&g_ranges.dropped);
            goto out;
        }
        g_range_index = ni;
        g_cap_ranges = ncap;
    }
    ev *e = ev_with_name(&g_ranges, m, 1);
    if (!e)
        goto out;
    e->kind = EV_RANGE;
    e->domain = dom;
    ext_init(e, x);
    ev_ext(e)->tid = tid;
    atomic_store_explicit(&e->end, OPEN_END, memory_order_relaxed);
    e->start = now();
    publish(&g_ranges, e);
    g_range_index[g_nranges++] = e;
    id = ((nvtxRangeId_t)(gen & 0xffffffu) << ID_GEN_SHIFT) | g_nranges;
out:
    pthread_mutex_unlock(&g_lock);
    return id;
}

static void range_end(nvtxRangeId_t id)
{
    if (nvtx_off())
        return;
    int64_t ts = now();
    uint32_t tid = gettid_u32();
    uint64_t idx = id & ((1ull << ID_GEN_SHIFT) - 1);
    uint32_t gen = (uint32_t)(id >> ID_GEN_SHIFT);
    int bad = 1;
    pthread_mutex_lock(&g_lock);
    if (idx >= 1 && idx <= g_nranges &&
        gen == (atomic_load(&g_gen) & 0xffffffu)) {
        ev *e = g_range_index[idx - 1];
        if (atomic_load_explicit(&e->end, memory_order_relaxed) == OPEN_END) {
            atomic_store_explicit(&ev_ext(e)->tid_end, tid,
                                  memory_order_relaxed);
            atomic_store_explicit(&e->end, ts, memory_order_release);
            bad = 0;
        }
    }
    pthread_mutex_unlock(&g_lock);
    if (bad)
        atomic_fetch_add_explicit(&g_bad_ends, 1, memory_order_relaxed);
}

static nvtxRangeId_t NVTX_API cb_start_a(const char *s)
{
    nmsg m = {s, NULL, NULL, s == NULL};
    return range_start(&m, NULL, 0);
}

static nvtxRangeId_t NVTX_API cb_start_w(const wchar_t *s)
{
    nmsg m = {NULL, s, NULL, s == NULL};
    return range_start(&m, NULL, 0);
}

static nvtxRangeId_t NVTX_API cb_start_ex(const nvtxEventAttributes_t *a)
{
    if (nvtx_off())
        return 0;
    attrs x;
    if (!read_attrs(a, &x))
        count_bad_attr();
    return range_start(&x.m, &x, 0);
}

static nvtxRangeId_t NVTX_API cb_dom_start_ex(nvtxDomainHandle_t d,
                                             const nvtxEventAttributes_t *a)
{
    if (nvtx_off())
        return 0;
    attrs x;
    if (!read_attrs(a, &x))
        count_bad_attr();
    return range_start(&x.m, &x, domain_index(d));
}

static void NVTX_API cb_end(nvtxRangeId_t id)
{
    range_end(id);
}

static void NVTX_API cb_dom_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    (void)d; /* ids are unique across domains */
    range_end(id);
}

/* ---- names: domains, strings, categories, threads ----------------------- */

/* A NUL-terminated UTF-8 copy of an A or W string (malloc), or NULL. */
static char *dup_msg(const char *a, const wchar_t *w)
{
    if (a) {
        size_t n = strnlen(a, NAME_MAX_BYTES);
        char *p = malloc(n + 1);
        if (p) {
            memcpy(p, a, n);
            p[n] = '\0';
        }
        return p;
    }
    if (w) {
        size_t n = wcslen(w);
        if (n > NAME_MAX_BYTES / 4)
            n = NAME_MAX_BYTES / 4;
        char *p = malloc(4 * n + 1);
        if (!p)
            return NULL;
        size_t len = 0;
        for (size_t i = 0; i < n; i++)
            len += (size_t)utf8_put(p + len, (uint32_t)w[i]);
        p[len] = '\0';
        return p;
    }
    return NULL;
}

static nvtxDomainHandle_t domain_create(const char *a, const wchar_t *w)
{
    /* Domains are created before or while recording: keep them either
     * way (a domain made before start is used during it). */
    if (!atomic_load(&g_armed))
        return NULL;
    char *name = dup_msg(a, w);
    if (!name) {
        atomic_fetch_add(&g_null_global, 1);
        name = strdup("(null)");
        if (!name)
            return NULL;
    }
    uintptr_t d = 0;
    pthread_mutex_lock(&g_lock);
    uint32_t n = atomic_load_explicit(&g_ndomains, memory_order_relaxed);
    /* The same name again: the same handle (NVTX allows either). */
    for (uint32_t i = 1; i < n && !d; i++)
        if (strcmp(g_domain_names[i], name) == 0)
            d = i;
    if (!d && n < MAX_DOMAINS) {
        g_domain_names[n] = name;
        name = NULL;
        atomic_store_explicit(&g_ndomains, n + 1, memory_order_release);
        d = n;
    }
    pthread_mutex_unlock(&g_lock);
    free(name);
    return (nvtxDomainHandle_t)(void *)d;
}

static nvtxDomainHandle_t NVTX_API cb_domain_create_a(const char *s)
{
    return domain_create(s, NULL);
}

static nvtxDomainHandle_t NVTX_API cb_domain_create_w(const wchar_t *s)
{
    return domain_create(NULL, s);
}

/* Domains stay valid for the process's life: recorded events name them,
 * and NVTX lets a program keep using a handle it should not. */
static void NVTX_API cb_domain_destroy(nvtxDomainHandle_t d)
{
    (void)d;
}

static nvtxStringHandle_t register_string(nvtxDomainHandle_t d,
                                          const char *a, const wchar_t *w)
{
    (void)domain_index(d);
    if (!atomic_load(&g_armed))
        return NULL;
    char *p = dup_msg(a, w);
    if (!p) {
        atomic_fetch_add(&g_null_global, 1);
        return NULL;
    }
    uintptr_t h = 0;
    pthread_mutex_lock(&g_lock);
    uint32_t n = atomic_load_explicit(&g_nstrings, memory_order_relaxed);
    string_rec *chunk = n / STR_CHUNK < STR_CHUNKS
                            ? atomic_load_explicit(&g_strings[n / STR_CHUNK],
                                                   memory_order_relaxed)
                            : NULL;
    if (!chunk && n / STR_CHUNK < STR_CHUNKS) {
        chunk = calloc(STR_CHUNK, sizeof *chunk);
        if (chunk)
            atomic_store_explicit(&g_strings[n / STR_CHUNK], chunk,
                                  memory_order_release);
    }
    if (chunk) {
        chunk[n % STR_CHUNK].utf8 = p;
        chunk[n % STR_CHUNK].len = (uint32_t)strlen(p);
        p = NULL;
        atomic_store_explicit(&g_nstrings, n + 1, memory_order_release);
        h = (uintptr_t)n + 1;
    }
    pthread_mutex_unlock(&g_lock);
    free(p);
    if (h)
        atomic_fetch_add(&g_registered, 1);
    return (nvtxStringHandle_t)(void *)h;
}

static nvtxStringHandle_t NVTX_API cb_register_a(nvtxDomainHandle_t d,
                                                 const char *s)
{
    return register_string(d, s, NULL);
}

static nvtxStringHandle_t NVTX_API cb_register_w(nvtxDomainHandle_t d,
                                                 const wchar_t *s)
{
    return register_string(d, NULL, s);
}

/* Sets (a, b) -> name in a small table under g_lock (latest wins). */
static void name_set(name_rec **tab, size_t *n, size_t *cap, uint32_t a,
                     uint32_t b, const char *s8, const wchar_t *sw)
{
    if (!atomic_load(&g_armed))
        return;
    char *name = dup_msg(s8, sw);
    if (!name) {
        atomic_fetch_add(&g_null_global, 1);
        return;
    }
    pthread_mutex_lock(&g_lock);
    for (size_t i = 0; i < *n; i++)
        if ((*tab)[i].key_a == a && (*tab)[i].key_b == b) {
            /* flush reads names under g_lock too: the old one can go. */
            free((*tab)[i].name);
            (*tab)[i].name = name;
            name = NULL;
            break;
        }
    if (name) {
        if (*n == *cap) {
            size_t ncap = *cap ? 2 * *cap : 16;
            name_rec *nt = realloc(*tab, ncap * sizeof *nt);
            if (nt) {
                *tab = nt;
                *cap = ncap;
            }
        }
        if (*n < *cap) {
            (*tab)[*n].key_a = a;
            (*tab)[*n].key_b = b;
            (*tab)[*n].name = name;
            ++*n;
            name = NULL;
        }
    }
    pthread_mutex_unlock(&g_lock);
    free(name);
}

static void NVTX_API cb_name_category_a(uint32_t c, const char *s)
{
    name_set(&g_catnames, &g_ncat, &g_capcat, 0, c, s, NULL);
}

static void NVTX_API cb_name_category_w(uint32_t c, const wchar_t *s)
{
    name_set(&g_catnames, &g_ncat, &g_capcat, 0, c, NULL, s);
}

static void NVTX_API cb_dom_name_category_a(nvtxDomainHandle_t d, uint32_t c,
                                            const char *s)
{
    name_set(&g_catnames, &g_ncat, &g_capcat, domain_index(d), c, s, NULL);
}

static void NVTX_API cb_dom_name_category_w(nvtxDomainHandle_t d, uint32_t c,
                                            const wchar_t *s)
{
    name_set(&g_catnames, &g_ncat, &g_capcat, domain_index(d), c, NULL, s);
}

static void NVTX_API cb_name_thread_a(uint32_t tid, const char *s)
{
    name_set(&g_threadnames, &g_nthn, &g_capthn, tid, 0, s, NULL);
}

static void NVTX_API cb_name_thread_w(uint32_t tid, const wchar_t *s)
{
    name_set(&g_threadnames, &g_nthn, &g_capthn, tid, 0, NULL, s);
}

/* ---- the injection entry point ------------------------------------------- */

typedef struct slot {
    unsigned id;
    NvtxFunctionPointer fn;
} slot;

#define FN(f) ((NvtxFunctionPointer)(void (*)(void))(f))

static int fill_module(const NvtxExportTableCallbacks *cb,
                       NvtxCallbackModule module, const slot *slots,
                       size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (slots[i].id <= size && table[slots[i].id])
            *table[slots[i].id] = slots[i].fn;
    return 1;
}

/**
 * Called by NVTX (in each module of the program that uses it) at its first
 * NVTX call. Declines (returns 0, NVTX then turns every call into a no-op)
 * when no actrace session loaded this plugin in this process: a child that
 * inherited NVTX_INJECTION64_PATH without recording, for instance.
 */
ACT_PLUGIN_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
ACT_PLUGIN_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    /* The program's first NVTX call: a lazily started session starts now
     * (lazy_wake.h), and its load arms this plugin. */
    if (get && !atomic_load(&g_armed))
        plugin_lazy_wake();
    if (!get || !atomic_load(&g_armed))
        return 0;
    const NvtxExportTableCallbacks *cb =
        (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
        return 0;
    static const slot core[] = {
        {NVTX_CBID_CORE_MarkEx, FN(cb_mark_ex)},
        {NVTX_CBID_CORE_MarkA, FN(cb_mark_a)},
        {NVTX_CBID_CORE_MarkW, FN(cb_mark_w)},
        {NVTX_CBID_CORE_RangeStartEx, FN(cb_start_ex)},
        {NVTX_CBID_CORE_RangeStartA, FN(cb_start_a)},
        {NVTX_CBID_CORE_RangeStartW, FN(cb_start_w)},
        {NVTX_CBID_CORE_RangeEnd, FN(cb_end)},
        {NVTX_CBID_CORE_RangePushEx, FN(cb_push_ex)},
        {NVTX_CBID_CORE_RangePushA, FN(cb_push_a)},
        {NVTX_CBID_CORE_RangePushW, FN(cb_push_w)},
        {NVTX_CBID_CORE_RangePop, FN(cb_pop)},
        {NVTX_CBID_CORE_NameCategoryA, FN(cb_name_category_a)},
        {NVTX_CBID_CORE_NameCategoryW, FN(cb_name_category_w)},
        {NVTX_CBID_CORE_NameOsThreadA, FN(cb_name_thread_a)},
        {NVTX_CBID_CORE_NameOsThreadW, FN(cb_name_thread_w)},
    };
    static const slot core2[] = {
        {NVTX_CBID_CORE2_DomainMarkEx, FN(cb_dom_mark_ex)},
        {NVTX_CBID_CORE2_DomainRangeStartEx, FN(cb_dom_start_ex)},
        {NVTX_CBID_CORE2_DomainRangeEnd, FN(cb_dom_end)},
        {NVTX_CBID_CORE2_DomainRangePushEx, FN(cb_dom_push_ex)},
        {NVTX_CBID_CORE2_DomainRangePop, FN(cb_dom_pop)},
        {NVTX_CBID_CORE2_DomainNameCategoryA, FN(cb_dom_name_category_a)},
        {NVTX_CBID_CORE2_DomainNameCategoryW, FN(cb_dom_name_category_w)},
        {NVTX_CBID_CORE2_DomainRegisterStringA, FN(cb_register_a)},
        {NVTX_CBID_CORE2_DomainRegisterStringW, FN(cb_register_w)},
        {NVTX_CBID_CORE2_DomainCreateA, FN(cb_domain_create_a)},
        {NVTX_CBID_CORE2_DomainCreateW, FN(cb_domain_create_w)},
        {NVTX_CBID_CORE2_DomainDestroy, FN(cb_domain_destroy)},
    };
    if (!fill_module(cb, NVTX_CB_MODULE_CORE, core,
                     sizeof core / sizeof core[0]))
        return 0;
    fill_module(cb, NVTX_CB_MODULE_CORE2, core2,
                sizeof core2 / sizeof core2[0]);
    atomic_fetch_add(&g_injected, 1);
    return 1;
}

/* ---- flush: events to records -------------------------------------------- */

/* Valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF)? */
static int utf8_ok(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf) {
            k = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (i + k >= n)
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if (i + j >= n || (s[i + j] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + j] & 0x3f);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return 0;
        i += k + 1;
    }
    return 1;
}

/* Copies @p s to @p out replacing each invalid byte by U+FFFD; returns
 * the length written (out holds at least 3 * n bytes). */
static size_t utf8_fix(const unsigned char *s, size_t n, char *out)
{
    size_t o = 0, i = 0;
    while (i < n) {
        size_t k = 1;
        unsigned c = s[i];
        if (c < 0x80) {
            out[o++] = (char)c;
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            k = 2;
        else if (c >= 0xe0 && c <= 0xef)
            k = 3;
        else if (c >= 0xf0 && c <= 0xf4)
            k = 4;
        else
            k = 0;
        if (k && i + k <= n && utf8_ok(s + i, k)) {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else {
            o += (size_t)utf8_put(out + o, 0xfffd);
            i++;
        }
    }
    return o;
}

typedef struct flusher {
    const act_plugin_host *h;
    act_plugin_record recs[BATCH];
    act_plugin_arg args[BATCH][MAX_ARGS];
    char colors[BATCH][8];
    char *scratch; /* fixed names, 3 * NAME_MAX_BYTES per record */
    size_t nrec;
    uint64_t spans, marks, ranges, open_at_stop, bad_utf8, emitted_kept,
        lanes_full;
} flusher;

static void fl_emit(flusher *f)
{
    if (f->nrec) {
        int32_t k = f->h->emit(f->h->ctx, f->recs, (uint32_t)f->nrec);
        if (k > 0)
            f->emitted_kept += (uint64_t)k;
    }
    f->nrec = 0;
}

static act_plugin_arg *arg_at(flusher *f, act_plugin_record *r,
                              const char *key)
{
    act_plugin_arg *a = &f->args[f->nrec][r->nargs++];
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->key = key;
    a->key_len = (uint32_t)strlen(key);
    return a;
}

static void arg_str(act_plugin_arg *a, const char *s)
{
    a->kind = ACT_PLUGIN_ARG_STRING;
    a->v.s.ptr = s;
    a->v.s.len = strlen(s);
}

/* Called with g_lock held (names and domains are read). */
static const char *category_name(uint16_t dom, uint32_t cat)
{
    for (size_t i = 0; i < g_ncat; i++)
        if (g_catnames[i].key_a == dom && g_catnames[i].key_b == cat)
            return g_catnames[i].name;
    return NULL;
}

static void fl_add(flusher *f, const ev *e, int kind,
                   int32_t type, uint64_t stream, int64_t end)
{
    if (f->nrec == BATCH)
        fl_emit(f);
    act_plugin_record *r = &f->recs[f->nrec];
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    r->kind = kind;
    r->type = type;
    r->device = ACT_PLUGIN_HOST_DEVICE;
    r->stream = stream;
    r->start_ns = e->start;
    r->end_ns = end;
    r->args = f->args[f->nrec];

    static const evx none;
    const evx *x = (e->flags & F_EXT) ? ev_ext(e) : &none;
    const char *name = (e->flags & F_NAME_REG) ? x->reg : ev_name(e);
    size_t len = e->name_len;
    if (e->flags & F_NAME_NULL) {
        name = "(null)";
        len = 6;
    } else if (!utf8_ok((const unsigned char *)name, len)) {
        char *out = f->scratch + f->nrec * 3 * NAME_MAX_BYTES;
        len = utf8_fix((const unsigned char *)name, len, out);
        if (len > NAME_MAX_BYTES)
            len = NAME_MAX_BYTES; /* a cut U+FFFD at worst: fixed below */
        while (len && !utf8_ok((const unsigned char *)out, len))
            len--;
        name = out;
        f->bad_utf8++;
    }
    if (len == 0) {
        name = "(empty)";
        len = 7;
    }
    r->name = name;
    r->name_len = (uint32_t)len;

    if (e->domain && e->domain < atomic_load(&g_ndomains))
        arg_str(arg_at(f, r, "domain"), g_domain_names[e->domain]);
    if (x->category) {
        const char *cn = category_name(e->domain, x->category);
        act_plugin_arg *a = arg_at(f, r, "category");
        if (cn) {
            arg_str(a, cn);
        } else {
            a->kind = ACT_PLUGIN_ARG_UINT;
            a->v.u = x->category;
        }
    }
    if (e->flags & F_HAS_COLOR) {
        static const char hex[] = "0123456789abcdef";
        char *c = f->colors[f->nrec];
        c[0] = '#';
        for (int i = 0; i < 6; i++)
            c[1 + i] = hex[(x->color >> (20 - 4 * i)) & 0xf];
        c[7] = '\0';
        arg_str(arg_at(f, r, "color"), c);
    }
    if (x->payload_type) {
        act_plugin_arg *a = arg_at(f, r, "payload");
        switch (x->payload_type) {
        case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
        case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
            a->kind = ACT_PLUGIN_ARG_UINT;
            a->v.u = x->payload;
            break;
        case NVTX_PAYLOAD_TYPE_INT64:
        case NVTX_PAYLOAD_TYPE_INT32:
            a->kind = ACT_PLUGIN_ARG_INT;
            a->v.i = (int64_t)x->payload;
            break;
        default: {
            double d;
            memcpy(&d, &x->payload, 8);
            if (isfinite(d)) {
                a->kind = ACT_PLUGIN_ARG_DOUBLE;
                a->v.d = d;
            } else {
                arg_str(a, isnan(d) ? "nan" : d > 0 ? "inf" : "-inf");
            }
            break;
        }
        }
    }
    if (e->kind == EV_RANGE) {
        act_plugin_arg *a = arg_at(f, r, "start_tid");
        a->kind = ACT_PLUGIN_ARG_UINT;
        a->v.u = x->tid;
        a = arg_at(f, r, "end_tid");
        a->kind = ACT_PLUGIN_ARG_UINT;
        a->v.u = atomic_load_explicit(&x->tid_end, memory_order_relaxed);
    }
    if (!r->nargs)
        r->args = NULL;
    f->nrec++;
}

static void flush_thread(flusher *f, nthread *t)
{
    for (block *b = atomic_load_explicit(&t->head, memory_order_acquire); b;
         b = atomic_load_explicit(&b->next, memory_order_acquire)) {
        uint32_t used = atomic_load_explicit(&b->used, memory_order_acquire);
        for (uint32_t off = 0; off < used;) {
            const ev *e = (const ev *)(const void *)(b->data + off);
            off += ev_size(e);
            int64_t end = atomic_load_explicit(&e->end, memory_order_acquire);
            if (e->kind == EV_MARK) {
                fl_add(f, e, ACT_PLUGIN_RECORD_INSTANT, ACT_CPU_INSTANT_EVENT,
                       t->tid, e->start);
                f->marks++;
            } else if (end == OPEN_END) {
                f->open_at_stop++;
            } else {
                fl_add(f, e, ACT_PLUGIN_RECORD_HOST_SPAN, ACT_USER_ANNOTATION,
                       t->tid, end);
                f->spans++;
            }
        }
    }
}

/* Start/end ranges go to tracks of their own: lane k is the synthetic
 * thread RANGE_TID_BASE + k of the host process, and a range takes the
 * first lane free at its start, so ranges on one track never overlap
 * (they may cross threads; start_tid/end_tid say which). Events are in
 * start order: they were timed under g_lock. */
static uint32_t flush_ranges(flusher *f)
{
    int64_t lane_end[MAX_LANES];
    uint32_t nlanes = 0;
    nthread *t = &g_ranges;
    if (atomic_load(&t->gen) != atomic_load(&g_gen))
        return 0;
    for (block *b = atomic_load(&t->head); b; b = atomic_load(&b->next)) {
        uint32_t used = atomic_load(&b->used);
        for (uint32_t off = 0; off < used;) {
            const ev *e = (const ev *)(const void *)(b->data + off);
            off += ev_size(e);
            int64_t end = atomic_load(&e->end);
            if (end == OPEN_END) {
                f->open_at_stop++;
                continue;
            }
            /* A lane is free once its last range ended: ranges that touch
             * share it (the writer keeps ts + dur below the next ts). */
            uint32_t lane = 0;
            while (lane < nlanes && lane_end[lane] > e->start)
                lane++;
            if (lane == MAX_LANES) {
                /* Drawn on a full track it would break nesting, which
                 * trace viewers reject: counted instead. */
                f->lanes_full++;
                continue;
            }
            if (lane == nlanes)
                nlanes++;
            lane_end[lane] = end;
            fl_add(f, e, ACT_PLUGIN_RECORD_HOST_SPAN, ACT_USER_ANNOTATION,
                   RANGE_TID_BASE + lane, end);
            f->ranges++;
        }
    }
    return nlanes;
}

/* Thread names (nvtxNameOsThread) and the range tracks' names, through
 * name_thread (ABI 1.1). Called with g_lock held. */
static void name_threads(flusher *f, uint32_t nlanes)
{
    const act_plugin_host *h = f->h;
    if (h->struct_size < ACT_PLUGIN_HOST_SIZE_1_1 || !h->name_thread) {
        if (g_nthn || nlanes)
            h->log(h->ctx, ACT_PLUGIN_LOG_INFO,
                   "this libactrace lacks name_thread (plugin ABI 1.1): "
                   "NVTX thread names are not recorded");
        return;
    }
    char *fixed = f->scratch;
    for (size_t i = 0; i < g_nthn; i++) {
        const char *nm = g_threadnames[i].name;
        size_t len = strlen(nm);
        if (len > NAME_MAX_BYTES)
            len = NAME_MAX_BYTES;
        if (!utf8_ok((const unsigned char *)nm, len)) {
            len = utf8_fix((const unsigned char *)nm, len, fixed);
            while (len > NAME_MAX_BYTES ||
                   (len && !utf8_ok((const unsigned char *)fixed, len)))
                len--;
            nm = fixed;
        }
        uint32_t tid = g_threadnames[i].key_a;
        if (len && tid && tid <= INT32_MAX)
            h->name_thread(h->ctx, g_threadnames[i].key_a, nm, (uint32_t)len);
    }
    for (uint32_t k = 0; k < nlanes; k++) {
        char nm[40];
        int n = k ? snprintf(nm, sizeof nm, "NVTX ranges (%u)", k + 1)
                  : snprintf(nm, sizeof nm, "NVTX ranges");
        h->name_thread(h->ctx, RANGE_TID_BASE + k, nm, (uint32_t)n);
    }
}

/* ---- the plugin table ---------------------------------------------------- */

typedef struct nvtx_plugin {
    const act_plugin_host *host;
} nvtx_plugin;

static void log_kept_once(const act_plugin_host *h)
{
    if (atomic_exchange(&g_kept_logged, 1))
        return;
    char msg[1024];
    int cupti = strstr(g_kept_path, "cupti") != NULL;
    snprintf(msg, sizeof msg,
             "NVTX_INJECTION64_PATH is already set to %s%s; keeping it: "
             "NVTX ranges go to that tool, not to this trace",
             g_kept_path,
             cupti ? " (libcupti: CUPTI turns NVTX into MARKER activity; "
                     "actrace's cupti plugin does not record those)"
                   : " (another tool, e.g. Nsight Systems)");
    h->log(h->ctx, ACT_PLUGIN_LOG_WARN, msg);
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (strcmp(a, b) == 0)
        return 1;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Whether now_ns reads CLOCK_MONOTONIC, as plugin.h says: three host
 * readings each between two of ours. */
static int host_clock_is_monotonic(const act_plugin_host *h)
{
    for (int i = 0; i < 3; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        int64_t t = h->now_ns(h->ctx);
        clock_gettime(CLOCK_MONOTONIC, &b);
        int64_t ta = (int64_t)a.tv_sec * 1000000000 + a.tv_nsec;
        int64_t tb = (int64_t)b.tv_sec * 1000000000 + b.tv_nsec;
        if (t < ta || t > tb)
            return 0;
    }
    return 1;
}

/* ---- fork ----------------------------------------------------------------- */

/*
 * A fork()ed child inherits this file's globals: g_host (the parent's
 * session: the child's own instance would be declined as "another
 * session"), g_on (the child's calls would go on recording into blocks
 * nobody flushes), the helper thread's flags (the thread is gone), the
 * states of threads that do not exist in the child, and locks another
 * thread may have held. g_lock and g_pool_lock are held across fork; the
 * child forgets the parent's instance (fork_reset) so that its own
 * session owns NVTX there. g_owner_pid names the process g_host belongs
 * to: the reset runs from the fork handler and again from init, and
 * neither undoes the child's own instance, whatever order the fork
 * handlers ran in. NVTX's function tables (filled by the injection) stay:
 * they point at this image, which the child shares.
 */
static pid_t g_owner_pid; /* while an instance lives */

static void fork_prepare(void)
{
    pthread_mutex_lock(&g_lock);
    pthread_mutex_lock(&g_pool_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&g_pool_lock);
    pthread_mutex_unlock(&g_lock);
}

/* Single-threaded: the child of fork before anything else runs there. */
static void fork_reset(void)
{
    if (!g_owner_pid || g_owner_pid == getpid())
        return;
    g_owner_pid = 0;
    atomic_store(&g_on, 0);
    atomic_store(&g_armed, 0);
    g_host = NULL;
    /* Other threads' states: gone with their threads (their blocks are
     * the parent's pages, left untouched); the child's budget is its own. */
    for (nthread **pp = &g_threads; *pp;) {
        nthread *t = *pp;
        if (t == tl) {
            pp = &t->next_thread;
            continue;
        }
        *pp = t->next_thread;
        for (block *b = atomic_load(&t->head); b; b = atomic_load(&b->next))
            atomic_fetch_sub(&g_bytes, sizeof(block) + b->cap);
    }
}

static void fork_child(void)
{
    pthread_mutex_init(&g_lock, NULL);
    pthread_mutex_init(&g_pool_lock, NULL);
    pthread_cond_init(&g_pool_cond, NULL);
    g_pool_running = 0; /* the helper thread is the parent's */
    g_pool_stop = 0;
    atomic_store(&g_pool_wanted, 0);
    int used = atomic_load(&g_armed) && atomic_load(&g_injected);
    fork_reset();
    /* The child calls NVTX straight into this plugin (the injection is
     * inherited): its first call starts its session if it starts lazily. */
    if (used)
        atomic_store(&g_wake_pending, 1);
}

/* At load: in place before an instance exists. libactrace's auto-start
 * registered its fork handler before (a child's lazy state is set up when
 * fork_child runs); init resets a parent's state itself where a child's
 * session started before this handler ran. */
__attribute__((constructor)) static void nvtx_load(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static int32_t nvtx_init(const act_plugin_host *host, void **state,
                         char *reason, uint32_t reason_cap)
{
    fork_reset(); /* a child whose fork handlers ran in another order */
    if (host->struct_size < ACT_PLUGIN_HOST_SIZE_1_0 || !host->emit ||
        !host->now_ns || !host->log) {
        snprintf(reason, reason_cap, "host lacks ABI 1.0 functions");
        return ACT_PLUGIN_DECLINE;
    }
    if (g_host) {
        snprintf(reason, reason_cap,
                 "another session already owns NVTX in this process");
        return ACT_PLUGIN_DECLINE;
    }
    g_max_bytes = 256ull << 20;
    const char *v = host->config_get(host->ctx, "NVTX_MAX_BUFFER_MB");
    if (v && *v) {
        char *endp;
        unsigned long long mb = strtoull(v, &endp, 10);
        if (*endp || mb == 0 || mb > (1ull << 20))
            host->log(host->ctx, ACT_PLUGIN_LOG_WARN,
                      "NVTX_MAX_BUFFER_MB: expected 1..1048576; using 256");
        else
            g_max_bytes = mb << 20;
    }
    Dl_info di;
    const char *self = NULL;
    if (dladdr((void *)(uintptr_t)&InitializeInjectionNvtx2, &di) &&
        di.dli_fname && di.dli_fname[0] == '/')
        self = di.dli_fname;
    if (!self) {
        snprintf(reason, reason_cap, "cannot find this plugin's own path");
        return ACT_PLUGIN_DECLINE;
    }
    nvtx_plugin *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(reason, reason_cap, "out of memory");
        return ACT_PLUGIN_ENOMEM;
    }
    p->host = host;
    const char *cur = getenv("NVTX_INJECTION64_PATH");
    if (cur && *cur && !same_file(cur, self)) {
        g_kept = 1;
        snprintf(g_kept_path, sizeof g_kept_path, "%s", cur);
        log_kept_once(host);
    } else {
        g_kept = 0;
        /* Before main (auto-start) or at session creation: NVTX reads it
         * at the program's first NVTX call. Children inherit it. */
        setenv("NVTX_INJECTION64_PATH", self, 1);
    }
    g_now_fn = host->now_ns;
    g_now_ctx = host->ctx;
    g_direct_clock = host_clock_is_monotonic(host);
    g_host = host;
    g_owner_pid = getpid();
    atomic_store(&g_armed, 1);
    *state = p;
    return ACT_PLUGIN_OK;
}

static void nvtx_start(void *state)
{
    (void)state;
    pthread_mutex_lock(&g_lock);
    /* Per-recording counts (registered strings are process-wide). */
    atomic_store(&g_bad_ends, 0);
    atomic_store(&g_bad_handles, 0);
    atomic_store(&g_null_global, 0);
    atomic_fetch_add_explicit(&g_gen, 1, memory_order_release);
    atomic_store_explicit(&g_on, 1, memory_order_release);
    pthread_mutex_unlock(&g_lock);
}

static void nvtx_stop(void *state)
{
    (void)state;
    atomic_store_explicit(&g_on, 0, memory_order_release);
    pool_stop();
}

static void nvtx_flush(void *state)
{
    nvtx_plugin *p = state;
    flusher *f = calloc(1, sizeof *f);
    if (f)
        f->scratch = malloc((size_t)BATCH * 3 * NAME_MAX_BYTES);
    if (!f || !f->scratch) {
        p->host->log(p->host->ctx, ACT_PLUGIN_LOG_ERROR,
                     "out of memory: NVTX events not delivered");
        if (f)
            free(f);
        return;
    }
    f->h = p->host;
    uint32_t gen = atomic_load(&g_gen);
    uint64_t bad_pops = 0, domain_pops = 0, too_deep = 0, nulls = 0,
             truncated = 0, dropped = 0, bad_attrs = 0;
    pthread_mutex_lock(&g_lock);
    for (nthread *t = g_threads; t; t = t->next_thread) {
        if (atomic_load(&t->gen) != gen)
            continue;
        flush_thread(f, t);
        bad_pops += atomic_load(&t->bad_pops);
        domain_pops += atomic_load(&t->domain_pops);
        too_deep += atomic_load(&t->too_deep);
        nulls += atomic_load(&t->null_strings);
        truncated += atomic_load(&t->truncated);
        dropped += atomic_load(&t->dropped);
        bad_attrs += atomic_load(&t->bad_attrs);
    }
    uint32_t nlanes = flush_ranges(f);
    name_threads(f, nlanes);
    if (atomic_load(&g_ranges.gen) == gen) {
        nulls += atomic_load(&g_ranges.null_strings);
        truncated += atomic_load(&g_ranges.truncated);
        dropped += atomic_load(&g_ranges.dropped);
    }
    fl_emit(f);

    /* What the NVTX layer saw, as one instant on the flushing thread. */
    uint64_t vals[] = {f->spans,
                       f->ranges,
                       f->marks,
                       bad_pops + domain_pops,
                       atomic_load(&g_bad_ends),
                       f->open_at_stop,
                       nulls + atomic_load(&g_null_global),
                       f->bad_utf8,
                       atomic_load(&g_registered),
                       atomic_load(&g_bad_handles),
                       bad_attrs,
                       truncated,
                       dropped + too_deep + f->lanes_full,
                       atomic_load(&g_injected),
                       (uint64_t)g_kept};
    static const char *const keys[] = {
        "spans",        "ranges",       "marks",
        "bad_pops",     "bad_range_ends", "open_at_stop",
        "null_strings", "invalid_utf8", "registered_strings",
        "bad_handles",  "bad_attributes", "truncated", "dropped",
        "nvtx_modules", "injection_kept"};
    enum { NSTATS = sizeof keys / sizeof keys[0] };
    act_plugin_arg all[NSTATS];
    for (size_t i = 0; i < NSTATS; i++) {
        memset(&all[i], 0, sizeof all[0]);
        all[i].struct_size = sizeof all[0];
        all[i].kind = ACT_PLUGIN_ARG_UINT;
        all[i].key = keys[i];
        all[i].key_len = (uint32_t)strlen(keys[i]);
        all[i].v.u = vals[i];
    }
    act_plugin_record *r = &f->recs[0];
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    r->kind = ACT_PLUGIN_RECORD_INSTANT;
    r->type = ACT_CPU_INSTANT_EVENT;
    r->device = ACT_PLUGIN_HOST_DEVICE;
    r->stream = gettid_u32();
    r->start_ns = p->host->now_ns(p->host->ctx);
    r->name = "nvtx_stats";
    r->name_len = 10;
    r->args = all;
    r->nargs = NSTATS;
    p->host->emit(p->host->ctx, r, 1);
    pthread_mutex_unlock(&g_lock);

    uint64_t problems = bad_pops + domain_pops + atomic_load(&g_bad_ends) +
                        f->bad_utf8 + nulls + dropped + too_deep;
    if (problems || f->open_at_stop) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "NVTX: %llu spans, %llu ranges, %llu marks; unbalanced "
                 "pops %llu, bad range ends %llu, open at stop %llu, NULL "
                 "strings %llu, invalid UTF-8 %llu, dropped %llu",
                 (unsigned long long)f->spans, (unsigned long long)f->ranges,
                 (unsigned long long)f->marks,
                 (unsigned long long)(bad_pops + domain_pops),
                 (unsigned long long)atomic_load(&g_bad_ends),
                 (unsigned long long)f->open_at_stop,
                 (unsigned long long)nulls, (unsigned long long)f->bad_utf8,
                 (unsigned long long)(dropped + too_deep));
        p->host->log(p->host->ctx, ACT_PLUGIN_LOG_INFO, msg);
    }
    char dbg[160];
    snprintf(dbg, sizeof dbg,
             "full-size blocks: %llu pre-faulted, %llu faulted in by the "
             "recording threads",
             (unsigned long long)atomic_exchange(&g_pool_hits, 0),
             (unsigned long long)atomic_exchange(&g_pool_misses, 0));
    p->host->log(p->host->ctx, ACT_PLUGIN_LOG_DEBUG, dbg);
    free(f->scratch);
    free(f);
}

static void nvtx_finalize(void *state)
{
    /* Callbacks stay installed in NVTX's tables (they cannot be removed)
     * and do nothing once g_on is 0; the clock pointer stays valid because
     * libactrace outlives its session. */
    atomic_store(&g_on, 0);
    pthread_mutex_lock(&g_lock);
    g_host = NULL;
    g_owner_pid = 0;
    pthread_mutex_unlock(&g_lock);
    free(state);
}

static const int32_t nvtx_types[] = {ACT_USER_ANNOTATION,
                                     ACT_CPU_INSTANT_EVENT};

static const act_plugin nvtx_plugin_table = {
    .struct_size = sizeof(act_plugin),
    .abi_major = ACT_PLUGIN_ABI_MAJOR,
    .abi_minor = ACT_PLUGIN_ABI_MINOR,
    .name = "nvtx",
    .backend = "nvtx",
    .version = "1.0.0",
    .types = nvtx_types,
    .ntypes = sizeof nvtx_types / sizeof nvtx_types[0],
    .init = nvtx_init,
    .start = nvtx_start,
    .stop = nvtx_stop,
    .flush = nvtx_flush,
    .finalize = nvtx_finalize,
};

ACT_PLUGIN_EXPORT const act_plugin *
act_plugin_entry(const act_plugin_host *host, uint32_t host_abi_major,
                 uint32_t host_abi_minor)
{
    (void)host;
    (void)host_abi_minor;
    if (host_abi_major != ACT_PLUGIN_ABI_MAJOR)
        return NULL;
    return &nvtx_plugin_table;
}
