/* SPDX-License-Identifier: MIT */
/*
 * Per-thread buffers: attaching a thread to a session, moving to a new
 * chunk when the tail is full (the once-per-chunk slow path, where the
 * buffer limit is enforced), and drop accounting.
 */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/engine.h"

static int32_t os_tid(void)
{
    return (int32_t)syscall(SYS_gettid);
}

/* A new chunk of at least @p need usable bytes, charged to the session's
 * budget, or NULL if the budget (or malloc) refuses it. */
static act__chunk *chunk_new(act_session *s, size_t need)
{
    size_t size = ACT__CHUNK_SIZE;
    if (need + sizeof(act__chunk) > size)
        size = (need + sizeof(act__chunk) + 4095) & ~(size_t)4095;
    if (size > UINT32_MAX / 2)
        return NULL; /* strings are capped well below this */
    uint64_t before = atomic_fetch_add_explicit(&s->bytes, size, memory_order_relaxed);
    if (before + size > s->max_bytes) {
        atomic_fetch_sub_explicit(&s->bytes, size, memory_order_relaxed);
        return NULL;
    }
    act__chunk *c = malloc(size);
    if (!c) {
        atomic_fetch_sub_explicit(&s->bytes, size, memory_order_relaxed);
        return NULL;
    }
    atomic_init(&c->next, NULL);
    atomic_init(&c->used, 0);
    c->size = (uint32_t)size;
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
    if (t->full)
        return -1;
    act__chunk *c = chunk_new(t->session, need);
    if (!c) {
        /* A standard chunk refused means the budget is spent: stop trying.
         * An oversized one (a huge string) may fail alone. */
        if (need + sizeof(act__chunk) <= ACT__CHUNK_SIZE)
            t->full = 1;
        return -1;
    }
    set_tail(t, c);
    return 0;
}

void act__thread_drop(act__thread *t, int type, act__drop_reason why)
{
    int slot = act__type_slot(type);
    if (slot >= 0)
        t->dropped_type[slot]++;
    else
        t->dropped_other++;
    t->dropped_reason[why]++;
}
