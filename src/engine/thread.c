/* SPDX-License-Identifier: MIT */
/*
 * Per-thread buffers: attaching a thread to a session, moving to a new
 * chunk when the tail is full (the once-per-chunk slow path, where the
 * buffer limit is enforced), and drop accounting.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/engine.h"

static int32_t os_tid(void)
{
    return (int32_t)syscall(SYS_gettid);
}

struct act__slab {
    struct act__slab *next;
    size_t size;
};

#define SLAB_SIZE ((size_t)4 << 20)

/* Map a slab of @p size bytes (a multiple of the chunk size plus one chunk
 * for the header); pre-fault it if asked. Under s->lock. */
static int slab_add(act_session *s, size_t size, int populate)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
#ifdef MADV_HUGEPAGE
    /* Before the first touch, so the faults below get huge pages. */
    madvise(p, size, MADV_HUGEPAGE);
#endif
    if (populate) {
        /* Pre-fault by writing: MAP_POPULATE was measured to leave pages
         * that still cost a fault-like trap on the first write (about
         * 100 ns per record on this project's VMs, against under 2 ns
         * after a write-touch). */
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
    struct act__slab *sl = p;
    sl->next = s->slabs;
    sl->size = size;
    s->slabs = sl;
    /* The slab header takes the first chunk-sized slot. */
    s->slab_cur = (char *)p + ACT__CHUNK_SIZE;
    s->slab_end = (char *)p + size;
    return 0;
}

int act__slab_prealloc(act_session *s, size_t bytes)
{
    size_t n = (bytes + ACT__CHUNK_SIZE - 1) / ACT__CHUNK_SIZE;
    if (!n)
        return 0;
    pthread_mutex_lock(&s->lock);
    int rc = slab_add(s, (n + 1) * ACT__CHUNK_SIZE, 1);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void act__slabs_free(act_session *s)
{
    for (struct act__slab *sl = s->slabs, *n; sl; sl = n) {
        n = sl->next;
        munmap(sl, sl->size);
    }
    s->slabs = NULL;
}

/* A new chunk of at least @p need usable bytes, charged to the session's
 * budget, or NULL if the budget (or the system) refuses it. */
static act__chunk *chunk_new(act_session *s, size_t need)
{
    size_t size = ACT__CHUNK_SIZE;
    int heap = 0;
    if (need + sizeof(act__chunk) > size) {
        size = (need + sizeof(act__chunk) + 4095) & ~(size_t)4095;
        heap = 1;
    }
    if (size > UINT32_MAX / 2)
        return NULL; /* strings are capped well below this */
    /* Check before charging (a compare-and-swap): a request the budget
     * refuses never shows in s->bytes, so a huge string refused on one
     * thread cannot make another thread's ordinary chunk look over the
     * limit. */
    uint64_t cur = atomic_load_explicit(&s->bytes, memory_order_relaxed);
    do {
        if (size > s->max_bytes || cur > s->max_bytes - size)
            return NULL;
    } while (!atomic_compare_exchange_weak_explicit(&s->bytes, &cur, cur + size,
                                                    memory_order_relaxed,
                                                    memory_order_relaxed));
    act__chunk *c = NULL;
    if (heap) {
        c = malloc(size);
    } else {
        pthread_mutex_lock(&s->lock);
        if (s->slab_cur == s->slab_end)
            slab_add(s, SLAB_SIZE, 0);
        if (s->slab_cur != s->slab_end) {
            c = (act__chunk *)s->slab_cur;
            s->slab_cur += ACT__CHUNK_SIZE;
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
    act__thread *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->session = s;
    t->pid = (int32_t)getpid();
    t->tid = os_tid();
    act__chunk *c = chunk_new(s, 0);
    if (c)
        set_tail(t, c);
    else
        t->full = 1;
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
        if (atomic_load_explicit(&s->bytes, memory_order_relaxed) + ACT__CHUNK_SIZE > s->max_bytes)
            return -1;
        t->full = 0;
    }
    act__chunk *c = chunk_new(s, need);
    if (!c) {
        /* An oversized chunk (a huge string) may fail alone. */
        if (need + sizeof(act__chunk) <= ACT__CHUNK_SIZE)
            t->full = 1;
        return -1;
    }
    set_tail(t, c);
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
