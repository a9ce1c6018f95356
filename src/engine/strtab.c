/* SPDX-License-Identifier: MIT */
/*
 * Interned names (act_name), process-wide and outliving sessions. Lookups
 * by content go through a hash table under a mutex (act_name is the slow,
 * once-per-name call); resolving an id to its string is lock-free: ids
 * index a two-level table whose pages never move, published with release
 * stores.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/spool.h"

#define PAGE_BITS 12
#define PAGE_SIZE (1u << PAGE_BITS)
#define MAX_PAGES 4096 /* 16M names */
#define NAME_MAX_LEN ACT__NAME_MAX_LEN

typedef struct entry {
    uint32_t len;
    char s[]; /* NUL-terminated too */
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *_Atomic *_Atomic pages[MAX_PAGES];
static uint32_t count; /* ids 1..count are used; under lock */
static uint32_t *hash; /* open addressing over ids; under lock */
static uint32_t hash_cap;

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

static entry *get(uint32_t id)
{
    if ((id >> PAGE_BITS) >= MAX_PAGES)
        return NULL;
    entry *_Atomic *page = atomic_load_explicit(&pages[id >> PAGE_BITS], memory_order_acquire);
    return page ? atomic_load_explicit(&page[id & (PAGE_SIZE - 1)], memory_order_acquire) : NULL;
}

static int grow(void)
{
    uint32_t ncap = hash_cap ? hash_cap * 2 : 1024;
    uint32_t *nh = calloc(ncap, sizeof *nh);
    if (!nh)
        return -1;
    for (uint32_t i = 0; i < hash_cap; i++) {
        uint32_t id = hash[i];
        if (!id)
            continue;
        entry *e = get(id);
        uint64_t j = fnv(e->s, e->len) & (ncap - 1);
        while (nh[j])
            j = (j + 1) & (ncap - 1);
        nh[j] = id;
    }
    free(hash);
    hash = nh;
    hash_cap = ncap;
    return 0;
}

#if defined(__GNUC__) || defined(__clang__)
#define STRTAB_TLS_IE __attribute__((tls_model("initial-exec")))
#else
#define STRTAB_TLS_IE
#endif
/* This thread holds the table's lock: a signal handler that interrupted
 * act_name and calls it again gets 0 (refused) instead of waiting for its
 * own thread. */
static _Thread_local int lock_held STRTAB_TLS_IE;

act_name_id act_name(const char *name)
{
    if (!name || lock_held)
        return 0;
    size_t n = strnlen(name, NAME_MAX_LEN);
    uint64_t h = fnv(name, n);
    act_name_id id = 0;
    /* Marked busy while the lock is held: a handler that records on this
     * thread meanwhile is counted (reentrant), never waits for it. */
    int busy = act__rec_enter();
    pthread_mutex_lock(&lock);
    lock_held = 1;
    if ((count + 1) * 2 > hash_cap && grow() != 0)
        goto out;
    uint64_t j = h & (hash_cap - 1);
    for (; hash[j]; j = (j + 1) & (hash_cap - 1)) {
        entry *e = get(hash[j]);
        if (e->len == n && memcmp(e->s, name, n) == 0) {
            id = hash[j];
            goto out;
        }
    }
    uint32_t nid = count + 1;
    if ((nid >> PAGE_BITS) >= MAX_PAGES || nid >= ACT__REF_LOCAL)
        goto out;
    entry *_Atomic *page = atomic_load_explicit(&pages[nid >> PAGE_BITS], memory_order_relaxed);
    if (!page) {
        page = calloc(PAGE_SIZE, sizeof *page);
        if (!page)
            goto out;
        atomic_store_explicit(&pages[nid >> PAGE_BITS], page, memory_order_release);
    }
    entry *e = malloc(sizeof *e + n + 1);
    if (!e)
        goto out;
    e->len = (uint32_t)n;
    memcpy(e->s, name, n);
    e->s[n] = '\0';
    atomic_store_explicit(&page[nid & (PAGE_SIZE - 1)], e, memory_order_release);
    hash[j] = nid;
    count = nid;
    id = nid;
    if (act__spooling)
        act__spool_log_name(nid, name, n);
out:
    lock_held = 0;
    pthread_mutex_unlock(&lock);
    if (busy)
        act__rec_leave();
    return id;
}

/* The rebuild's table (act__names_override): set in a process that
 * records nothing. */
static const char *const *ov_names;
static const uint32_t *ov_lens;
static uint32_t ov_n;

void act__names_override(const char *const *names, const uint32_t *lens, uint32_t n)
{
    ov_names = names;
    ov_lens = lens;
    ov_n = names ? n : 0;
}

void act__strtab_spool_begin(void)
{
    pthread_mutex_lock(&lock);
    act__spooling = 1;
    for (uint32_t id = 1; id <= count; id++) {
        entry *e = get(id);
        if (e)
            act__spool_log_name(id, e->s, e->len);
    }
    pthread_mutex_unlock(&lock);
}

int act__name_known(act_name_id id)
{
    if (ACT_UNLIKELY(ov_names != NULL))
        return id && id < ov_n && ov_names[id] != NULL;
    return id && get(id) != NULL;
}

const char *act__name_str(act_name_id id, uint32_t *len)
{
    if (ACT_UNLIKELY(ov_names != NULL)) {
        if (!id || id >= ov_n || !ov_names[id]) {
            *len = 0;
            return "";
        }
        *len = ov_lens[id];
        return ov_names[id];
    }
    entry *e = id ? get(id) : NULL;
    if (!e) {
        *len = 0;
        return "";
    }
    *len = e->len;
    return e->s;
}

void act__strtab_atfork_prepare(void) { pthread_mutex_lock(&lock); }
void act__strtab_atfork_parent(void) { pthread_mutex_unlock(&lock); }
void act__strtab_atfork_child(void) { pthread_mutex_init(&lock, NULL); }
