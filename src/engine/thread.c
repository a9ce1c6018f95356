/* SPDX-License-Identifier: MIT */
/*
 * Per-thread buffers: attaching a thread to a session, moving to a new
 * chunk when the tail is full (the once-per-chunk slow path, where the
 * buffer limit is enforced), and drop accounting.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/spool.h"

static int32_t os_tid(void)
{
    return (int32_t)syscall(SYS_gettid);
}

struct act__slab {
    struct act__slab *next;
    size_t size;
    uint64_t off; /* offset in the spool file (a spooled session) */
    size_t charged; /* bytes of chunks carved from it (under s->lock) */
    int spilled;    /* written to the spool and dropped from memory */
};

#define SLAB_SIZE ((size_t)4 << 20)
/* Carving starts this far into a slab (its header), keeping chunks page
 * aligned. */
#define SLAB_HDR ((size_t)4096)

/* Fault in @p size bytes at @p p by writing. MAP_POPULATE was measured to
 * leave pages that still cost a fault-like trap on the first write (about
 * 100 ns per record on this project's VMs, against under 2 ns after a
 * write-touch). */
static void populate_write(void *p, size_t size)
{
    int done = 0;
#ifdef MADV_POPULATE_WRITE
    done = madvise(p, size, MADV_POPULATE_WRITE) == 0;
#endif
    if (!done) {
        long pg = sysconf(_SC_PAGESIZE);
        for (size_t off = 0; off < size; off += (size_t)(pg > 0 ? pg : 4096))
            ((volatile char *)p)[off] = 0;
    }
}

/* Map a slab of @p size bytes. @p huge: ask for transparent huge pages,
 * which only pays where the slab is faulted in before recording (faulting
 * huge pages on demand stalls in compaction: ../shared/notes). */
static struct act__slab *slab_map(const act_session *s, size_t size, int huge, int populate)
{
    uint64_t off = 0;
    void *p;
    if (s->spooled) {
        /* Shared file memory (spool.h); no huge pages for files. */
        p = act__spool_map(size, &off);
        if (!p)
            return NULL;
        huge = 0;
    } else {
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
    }
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
    madvise(p, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#else
    (void)huge;
#endif
    if (populate)
        populate_write(p, size);
    struct act__slab *sl = p;
    sl->next = NULL;
    sl->size = size;
    sl->off = off;
    sl->charged = 0;
    sl->spilled = 0;
    return sl;
}

/* Make @p sl the slab being carved. Under s->lock. */
static void slab_use(act_session *s, struct act__slab *sl)
{
    sl->next = s->slabs;
    s->slabs = sl;
    s->slab_cur = (char *)sl + SLAB_HDR;
    s->slab_end = (char *)sl + sl->size;
}

int act__slab_prealloc(act_session *s, size_t bytes)
{
    if (!bytes)
        return 0;
    bytes = (bytes + 4095) & ~(size_t)4095;
    struct act__slab *sl = slab_map(s, bytes + SLAB_HDR, 1, 1);
    if (!sl)
        return -1;
    pthread_mutex_lock(&s->lock);
    slab_use(s, sl);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

void act__slabs_free(act_session *s)
{
    for (struct act__slab *sl = s->slabs, *n; sl; sl = n) {
        n = sl->next;
        munmap(sl, sl->size);
    }
    s->slabs = NULL;
    for (struct act__slab *sl = s->ready_head, *n; sl; sl = n) {
        n = sl->next;
        munmap(sl, sl->size);
    }
    s->ready_head = s->ready_tail = NULL;
    s->ready_bytes = 0;
}

/* ---- spilling (a spooled session) ------------------------------------------ */

/* Drop slab @p sl (its writeback started) from memory and uncharge it.
 * Under spill_lock. Returns the bytes uncharged. */
static size_t spill_finish(act_session *s, struct act__slab *sl)
{
    /* The header page stays: the slab list is walked. */
    if (act__spool_spill((char *)sl + SLAB_HDR, sl->off + SLAB_HDR, sl->size - SLAB_HDR) != 0)
        return 0; /* left charged, and never tried again */
    pthread_mutex_lock(&s->lock);
    size_t charged = sl->charged;
    pthread_mutex_unlock(&s->lock);
    atomic_fetch_add_explicit(&s->spilled, charged, memory_order_relaxed);
    atomic_fetch_sub_explicit(&s->bytes, charged, memory_order_relaxed);
    return charged;
}

/* Spill slabs no longer carved (never the current one), oldest first: a
 * slab's chunks are written to the spool file and dropped from memory,
 * and uncharged from the RAM budget. Pipelined: each call drops the slab
 * whose writeback the previous call started (done by now, as a rule) and
 * starts the next one's, so the pre-fault thread does not wait for the
 * disk. @p urgent (a recording thread with no room): when nothing was in
 * flight, the new victim is finished at once. A thread whose tail chunk
 * lies in a spilled slab faults its pages back in as it writes (the
 * budget is approximate by that much). Returns the bytes uncharged. */
static size_t spill_one(act_session *s, int urgent)
{
    pthread_mutex_lock(&s->spill_lock);
    size_t got = 0;
    if (s->spill_next) {
        got = spill_finish(s, s->spill_next);
        s->spill_next = NULL;
    }
    pthread_mutex_lock(&s->lock);
    struct act__slab *victim = NULL;
    for (struct act__slab *sl = s->slabs ? s->slabs->next : NULL; sl; sl = sl->next)
        if (!sl->spilled && sl->charged)
            victim = sl; /* the list is newest first: the last is oldest */
    if (victim)
        victim->spilled = 1; /* chosen: carved no more, spilled below */
    pthread_mutex_unlock(&s->lock);
    if (victim) {
        act__spool_writeback(victim->off + SLAB_HDR, victim->size - SLAB_HDR);
        if (urgent && !got)
            got = spill_finish(s, victim);
        else
            s->spill_next = victim;
    }
    pthread_mutex_unlock(&s->spill_lock);
    return got;
}

/* ---- the pre-fault thread --------------------------------------------------- */

#define PREFAULT_AHEAD ((size_t)16 << 20)
/* What a recording thread maps when no pre-faulted slab is ready: a few
 * chunks only, so it goes back to pre-faulted memory as soon as the
 * pre-fault thread catches up. */
#define FALLBACK_SLAB (SLAB_HDR + 4 * (size_t)ACT__CHUNK_SIZE)

/* 1 if one more slab may be pre-faulted: fewer than PREFAULT_AHEAD bytes
 * are ready, and the budget could still take them all (memory the budget
 * would refuse is never touched). Under ready_lock. */
static int prefault_wanted(const act_session *s)
{
    if (s->ready_bytes >= PREFAULT_AHEAD)
        return 0;
    uint64_t used = atomic_load_explicit(&s->bytes, memory_order_relaxed);
    /* A lazy session (prefault_after) pre-faults nothing until it has
     * used that much: most short-lived processes record a few events. */
    if (used + atomic_load_explicit(&s->spilled, memory_order_relaxed) < s->prefault_after)
        return 0;
    return used + s->ready_bytes + SLAB_SIZE <= s->max_bytes;
}

/* Wait on prefault_cond (ready_lock held) for at most @p ms. */
static void wait_ms(act_session *s, long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += ms * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&s->prefault_cond, &s->ready_lock, &ts);
}

static void *prefault_main(void *arg)
{
    act_session *s = arg;
    pthread_mutex_lock(&s->ready_lock);
    while (!s->prefault_stop) {
        /* Spooled: keep room in the RAM budget (a quarter of it, at most
         * 32 MB: what the pre-fault thread keeps ready and some) by
         * spilling ahead of need, so recording threads rarely spill
         * themselves; a run that fits in the budget never spills. */
        if (s->spooled && atomic_load_explicit(&s->bytes, memory_order_relaxed) >
                              s->max_bytes - (s->max_bytes / 4 < ((uint64_t)32 << 20)
                                                  ? s->max_bytes / 4
                                                  : ((uint64_t)32 << 20))) {
            pthread_mutex_unlock(&s->ready_lock);
            size_t got = spill_one(s, 0);
            pthread_mutex_lock(&s->ready_lock);
            if (got)
                continue;
        }
        if (!prefault_wanted(s)) {
            if (s->spooled || s->prefault_after) {
                /* Woken by ready_take, or every 10 ms to spill or to see
                 * whether a lazy session got going. */
                wait_ms(s, 10);
            } else {
                pthread_cond_wait(&s->prefault_cond, &s->ready_lock);
            }
            continue;
        }
        pthread_mutex_unlock(&s->ready_lock);
        struct act__slab *sl = slab_map(s, SLAB_SIZE, 0, 1);
        pthread_mutex_lock(&s->ready_lock);
        if (!sl) {
            /* Out of memory for now: recording threads fall back. */
            if (!s->prefault_stop)
                wait_ms(s, 50);
            continue;
        }
        if (s->ready_tail)
            s->ready_tail->next = sl;
        else
            s->ready_head = sl;
        s->ready_tail = sl;
        s->ready_bytes += sl->size - SLAB_HDR;
    }
    pthread_mutex_unlock(&s->ready_lock);
    return NULL;
}

void act__prefault_start(act_session *s)
{
    pthread_mutex_lock(&s->ready_lock);
    int running = s->prefault_running;
    s->prefault_stop = 0;
    pthread_mutex_unlock(&s->ready_lock);
    if (running)
        return;
    pthread_cond_init(&s->prefault_cond, NULL);
    /* No signal is delivered to the helper: the program's handlers run on
     * its own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->prefault, NULL, prefault_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&s->prefault_cond);
        act_log(ACT_LOG_WARN, "cannot start the buffer pre-fault thread; recording threads fault in their own memory");
        return;
    }
    pthread_mutex_lock(&s->ready_lock);
    s->prefault_pid = (int32_t)getpid();
    s->prefault_running = 1;
    pthread_mutex_unlock(&s->ready_lock);
}

void act__prefault_stop(act_session *s)
{
    /* A forked child never had the thread, and the lock may have been held
     * by it at the fork: leave both alone. */
    if (s->prefault_pid && s->prefault_pid != (int32_t)getpid())
        return;
    pthread_mutex_lock(&s->ready_lock);
    int mine = s->prefault_running && s->prefault_pid == (int32_t)getpid();
    s->prefault_running = 0;
    s->prefault_stop = 1;
    if (mine)
        pthread_cond_signal(&s->prefault_cond);
    pthread_mutex_unlock(&s->ready_lock);
    if (mine) {
        pthread_join(s->prefault, NULL);
        pthread_cond_destroy(&s->prefault_cond);
    }
}

/* A pre-faulted slab, or NULL if none is ready or the pre-fault thread
 * holds the lock right now (never waited for). */
static struct act__slab *ready_take(act_session *s)
{
    if (pthread_mutex_trylock(&s->ready_lock) != 0)
        return NULL;
    struct act__slab *sl = s->ready_head;
    if (sl) {
        s->ready_head = sl->next;
        if (!s->ready_head)
            s->ready_tail = NULL;
        s->ready_bytes -= sl->size - SLAB_HDR;
    }
    if (s->prefault_running && s->prefault_pid == (int32_t)getpid() &&
        s->ready_bytes < PREFAULT_AHEAD / 2)
        pthread_cond_signal(&s->prefault_cond);
    pthread_mutex_unlock(&s->ready_lock);
    return sl;
}

/* Size of a thread's next standard chunk: a thread starts small (most
 * short-lived threads record a few events) and grows to ACT__CHUNK_SIZE. */
static size_t chunk_size_for(uint32_t nth)
{
    return nth == 0 ? ACT__CHUNK_FIRST : nth == 1 ? ACT__CHUNK_SIZE / 4 : ACT__CHUNK_SIZE;
}

/* A new chunk of at least @p need usable bytes (@p std: the standard size
 * for the thread's chunk number), charged to the session's budget, or NULL
 * if the budget (or the system) refuses it. */
static act__chunk *chunk_new(act_session *s, size_t need, size_t std, uint64_t *off)
{
    size_t size = std;
    int heap = 0;
    if (need + sizeof(act__chunk) > size) {
        size = (need + sizeof(act__chunk) + 4095) & ~(size_t)4095;
        if (size <= ACT__CHUNK_SIZE)
            size = ACT__CHUNK_SIZE;
        else
            heap = 1;
    }
    if (size > UINT32_MAX / 2)
        return NULL; /* strings are capped well below this */
    /* Check before charging (a compare-and-swap): a request the budget
     * refuses never shows in s->bytes, so a huge string refused on one
     * thread cannot make another thread's ordinary chunk look over the
     * limit. */
    uint64_t cur = atomic_load_explicit(&s->bytes, memory_order_relaxed);
    for (;;) {
        if (s->spooled) {
            /* The spool's bound: what is in memory and what was spilled. */
            uint64_t sp = atomic_load_explicit(&s->spilled, memory_order_relaxed);
            if (size > s->spool_max_bytes || cur + sp > s->spool_max_bytes - size)
                return NULL;
            if (size <= s->max_bytes && cur > s->max_bytes - size) {
                /* RAM is full: spill the oldest slab and try again. */
                if (!spill_one(s, 1))
                    return NULL;
                cur = atomic_load_explicit(&s->bytes, memory_order_relaxed);
                continue;
            }
        }
        if (size > s->max_bytes || cur > s->max_bytes - size)
            return NULL;
        if (atomic_compare_exchange_weak_explicit(&s->bytes, &cur, cur + size,
                                                  memory_order_relaxed, memory_order_relaxed))
            break;
    }
    act__chunk *c = NULL;
    if (heap && s->spooled) {
        /* A slab of its own, in the list behind the one being carved:
         * spilled like any other (never carved: it is full). */
        struct act__slab *sl = slab_map(s, size + SLAB_HDR, 0, 0);
        if (sl) {
            c = (act__chunk *)(void *)((char *)sl + SLAB_HDR);
            *off = sl->off + SLAB_HDR;
            sl->charged = size;
            pthread_mutex_lock(&s->lock);
            if (s->slabs) {
                sl->next = s->slabs->next;
                s->slabs->next = sl;
            } else {
                /* Nothing is carved from it: the next carve maps a new
                 * slab in front of it. */
                s->slabs = sl;
                s->slab_cur = s->slab_end = NULL;
            }
            pthread_mutex_unlock(&s->lock);
        }
        heap = 0; /* the slab's: unmapped with it */
    } else if (heap) {
        c = malloc(size);
    } else {
        pthread_mutex_lock(&s->lock);
        if ((size_t)(s->slab_end - s->slab_cur) < size) {
            /* The rest of this slab is left unused (under a chunk). */
            struct act__slab *sl = ready_take(s);
            if (!sl) {
                /* The pre-fault thread fell behind (or there is none):
                 * fresh memory, faulted in by this thread as it writes. */
                sl = slab_map(s, FALLBACK_SLAB, 0, 0);
            }
            if (sl)
                slab_use(s, sl);
        }
        if ((size_t)(s->slab_end - s->slab_cur) >= size) {
            c = (act__chunk *)s->slab_cur;
            s->slab_cur += size;
            *off = s->slabs->off + (uint64_t)((char *)c - (char *)s->slabs);
            s->slabs->charged += size;
        }
        pthread_mutex_unlock(&s->lock);
    }
    if (!c) {
        atomic_fetch_sub_explicit(&s->bytes, size, memory_order_relaxed);
        return NULL;
    }
    atomic_init(&c->next, NULL);
    atomic_init(&c->used, 0);
    c->size = (uint32_t)size;
    c->heap = (uint32_t)heap;
    c->pad_ = 0;
    return c;
}

/* Log chunk @p c (at spool offset @p off) as thread @p t's next: before
 * anything is written to it, so a rebuild never misses a committed
 * record. */
static void spool_chunk(const act__thread *t, const act__chunk *c, uint64_t off)
{
    int64_t v[3] = {(int64_t)t->serial, (int64_t)off, (int64_t)c->size};
    act__spool_log(ACT__SP_CHUNK, v, 3, NULL, NULL, 0);
}

static void set_tail(act__thread *t, act__chunk *c)
{
    if (t->tail)
        atomic_store_explicit(&t->tail->next, c, memory_order_release);
    else
        t->head = c;
    t->tail = c;
    t->rec = c->recs;
    t->str = (char *)c + c->size;
    t->used = 0;
}

act__thread *act__thread_get(act_session *s)
{
    /* A fork()ed child's copy of its parent's session: its chunks may be
     * the parent's shared spool. Never attach to it. */
    if (s->fork_gen != act__fork_gen)
        return NULL;
    /* Spooled: the thread's state lives in the spool, so that its drop
     * counts outlive the process. */
    uint64_t toff = UINT64_MAX;
    act__thread *t = s->spooled ? act__spool_alloc(sizeof *t, &toff) : NULL;
    if (t)
        t->in_spool = 1;
    else
        t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->session = s;
    t->pid = (int32_t)getpid();
    t->tid = os_tid();
    t->serial = act__thread_serial();
    if (s->spooled) {
        /* The thread's name now (the rebuild has no /proc of the thread). */
        char comm[17] = "";
        prctl(PR_GET_NAME, comm, 0, 0, 0);
        int64_t v[6] = {(int64_t)t->serial, t->pid, t->tid, (int64_t)toff,
                        (int64_t)sizeof *t, ACT__THREAD_LAYOUT};
        const char *cs = comm;
        size_t cl = strnlen(comm, 16);
        act__spool_log(ACT__SP_THREAD, v, 6, &cs, &cl, 1);
    }
    uint64_t off = 0;
    act__chunk *c = chunk_new(s, 0, chunk_size_for(0), &off);
    if (c) {
        if (s->spooled)
            spool_chunk(t, c, off);
        set_tail(t, c);
        t->nchunks = 1;
    } else {
        t->full = 1;
    }
    pthread_mutex_lock(&s->lock);
    t->next = s->threads;
    s->threads = t;
    pthread_mutex_unlock(&s->lock);
    return t;
}

int act__thread_reserve(act__thread *t, uint32_t nrec, uint32_t strbytes)
{
    size_t need = (size_t)nrec * sizeof(act__rec) + strbytes;
    if (t->tail && (size_t)(t->str - (char *)t->rec) >= need)
        return 0;
    act_session *s = t->session;
    /* `full` is a hint that saves a trip to the allocator while the budget
     * has no room for a standard chunk; it is re-checked (one relaxed
     * load), never final: a chunk refused for a transient reason (the
     * system out of memory, a slab that could not be mapped) does not stop
     * the thread for good. */
    if (t->full) {
        /* Spooled, a full RAM budget is spilled, not final: try. */
        if (!s->spooled &&
            atomic_load_explicit(&s->bytes, memory_order_relaxed) + ACT__CHUNK_SIZE > s->max_bytes)
            return -1;
        t->full = 0;
    }
    uint64_t off = 0;
    act__chunk *c = chunk_new(s, need, chunk_size_for(t->nchunks), &off);
    if (c && s->spooled)
        spool_chunk(t, c, off);
    if (!c) {
        /* An oversized chunk (a huge string) may fail alone. */
        if (need + sizeof(act__chunk) <= ACT__CHUNK_SIZE)
            t->full = 1;
        return -1;
    }
    set_tail(t, c);
    t->nchunks++;
    return 0;
}

/* Only the owning thread writes: no read-modify-write needed. */
static inline void bump(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

void act__thread_drop(act__thread *t, int type, act__drop_reason why)
{
    /* Args that follow a dropped event must not attach to the one before. */
    if (why != ACT__DROP_ORPHAN_ARG)
        t->args_ok = 0;
    int slot = act__type_slot(type);
    if (slot >= 0)
        bump(&t->dropped_type[slot]);
    else
        bump(&t->dropped_other);
    bump(&t->dropped_reason[why]);
}
