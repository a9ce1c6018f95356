/* SPDX-License-Identifier: MIT */
/*
 * The session visitor (visit.h): the walk over a session that every
 * writer shares. It owns everything that needs a view of the whole
 * session before the first event is written: which stream ids need dense
 * tids, which plugin host spans move to a side track, which correlation
 * ids have both a launch and device work (flows), per-thread start order,
 * counter tracks, and the statistics. The writers only format.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/frame.h"
#include "writer/visit.h"

/* The key cache (act__vkeys). Per interned key id: KF_SET once known, bit
 * (1 << which) when reserved for ACT__ARGS_which, and canon, the first id
 * this walk met with the same bytes (0 for ""), so that two interned keys
 * are the same string exactly when their canons are equal (ids act_name
 * returned are distinct strings, but a rebuilt table may repeat one, and
 * every id act_name never returned reads as ""). Ids act_name never
 * returned are not cached: a hostile id cannot grow the cache. */
#define KF_SET 0x80u
struct kent {
    uint32_t canon;
    uint8_t flags;
};
struct act__vkeys {
    struct kent *ent; /* by id */
    size_t cap;
    uint32_t *set;    /* the distinct key strings met: their first id */
    size_t setcap, setn;
    int off;          /* out of memory: every key by its bytes */
};

/* A set of 64-bit keys (flow correlation ids), open addressing, 0 = empty. */
typedef struct keyset {
    uint64_t *slot;
    size_t cap, n;
} keyset;

typedef struct vstate {
    act_session *s;
    const act__visitor *v;
    int32_t pid;
    keyset host_corr, dev_corr;
    /* Streams: devices with a stream id beyond 31 bits get dense tids. */
    size_t ndev;
    uint8_t *dev_dense;      /* per device: its streams are renumbered */
    struct smap_ent *smap;   /* (device, stream) -> tid, dense devices only */
    size_t smap_cap, smap_n;
    /* Plugin host spans moved off a thread they partially overlap. */
    keyset moved;            /* record addresses */
    uint64_t plugin_host_spans;
    struct side_track *sides;
    size_t nsides;
    const char *host_cat[ACT__NTYPE_SLOTS + 1]; /* category by type slot */
    act__vkeys keys_store, *keys; /* the key cache handed out with args */
    uint64_t counter_samples, counter_events;
    act__spill_map spill; /* spilled slabs, dropped again once read */
    act__inflated infl;   /* the archive's frames, decoded while read */
    int oom;
} vstate;

/* The entry of @p c if it is a copy of a frame node, else -1. */
static inline long infl_of(const vstate *w, const act__chunk *c)
{
    if (!w || !w->infl.n || (uintptr_t)c - (uintptr_t)w->infl.map >= w->infl.map_len)
        return -1;
    return act__frames_find(&w->infl, c);
}

/* Before a pass reads chunk @p c: a frame's copy is decoded (again). */
static inline void chunk_enter(vstate *w, const act__chunk *c)
{
    long k = infl_of(w, c);
    if (k >= 0)
        (void)act__frames_enter(&w->infl, (size_t)k); /* checked at the start */
}

/* A pass is done with chunk @p c: if it was spilled, out of memory again;
 * a frame's copy is given back (its node too, if spilled). */
static inline void chunk_done(vstate *w, const act__chunk *c)
{
    long k = infl_of(w, c);
    if (k >= 0) {
        act__frames_drop(&w->infl, (size_t)k);
        c = w->infl.v[k].node;
    }
    if (w->spill.n)
        act__spill_map_drop(&w->spill, c);
}

/* Whether @p c is a frame's copy whose summary (act__fmeta, checked by
 * the first pass) says it holds no record of @p flag (ACT__FM_AUX,
 * ACT__FM_COUNTERS): a pass that looks for those need not decode it. */
static inline int frame_lacks(const vstate *w, const act__chunk *c, uint32_t flag)
{
    long k = infl_of(w, c);
    if (k < 0)
        return 0;
    const act__fmeta *m = act__fmeta_of(w->infl.v[k].node);
    return (m->flags & ACT__FM_SUMMED) && !(m->flags & flag);
}

/* The chunk after @p c in its thread's list, whether @p c is decoded or
 * not. */
static inline const act__chunk *chunk_after(const vstate *w, const act__chunk *c)
{
    long k = infl_of(w, c);
    if (k >= 0)
        return w->infl.v[k].next;
    return atomic_load_explicit(&((act__chunk *)c)->next, memory_order_acquire);
}

/* The chunk after @p c in its thread's list; @p c is done. */
static inline const act__chunk *chunk_next(vstate *w, const act__chunk *c)
{
    const act__chunk *n = chunk_after(w, c);
    chunk_done(w, c);
    return n;
}

static inline int key_is(const char *k, uint32_t n, const char *lit0)
{
    /* The first byte rejects almost every key without a strlen. */
    if (!n)
        return lit0[0] == '\0';
    return k[0] == lit0[0] && strlen(lit0) == n && memcmp(k, lit0, n) == 0;
}

static inline int vargs_next(act__vargs *it, act__varg *out);

/* The keys writers write themselves, by ACT__ARGS_*. */
static const char *const reserved_host[] = {"External id", "unfinished", NULL};
static const char *const reserved_plugin[] = {"External id", "correlation", "device",
                                              "stream", "backend", NULL};
static const char *const *const reserved_of[3] = {NULL, reserved_host, reserved_plugin};

static int is_reserved(const char *k, uint32_t n, int which)
{
    for (const char *const *r = reserved_of[which]; r && *r; r++)
        if (key_is(k, n, *r))
            return 1;
    return 0;
}

static uint64_t key_hash(const char *k, uint32_t n)
{
    uint64_t h = 1469598103934665603u;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211u;
    return h;
}

static int keys_set_grow(act__vkeys *ks)
{
    size_t ncap = ks->setcap ? ks->setcap * 2 : 64;
    uint32_t *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < ks->setcap; i++) {
        if (!ks->set[i])
            continue;
        uint32_t n;
        const char *k = act__name_str(ks->set[i], &n);
        size_t j = key_hash(k, n) & (ncap - 1);
        while (ns[j])
            j = (j + 1) & (ncap - 1);
        ns[j] = ks->set[i];
    }
    free(ks->set);
    ks->set = ns;
    ks->setcap = ncap;
    return 0;
}

static const struct kent *key_slow(act__vkeys *ks, uint32_t id)
{
    static const struct kent empty = {0, KF_SET}; /* "": reserved nowhere */
    if (ks->off)
        return NULL;
    uint32_t n = 0;
    const char *k = id && act__name_known(id) ? act__name_str(id, &n) : "";
    if (!n)
        return &empty;
    if (id >= ks->cap) {
        size_t ncap = ks->cap ? ks->cap : 256;
        while (ncap <= id)
            ncap *= 2;
        struct kent *ne = realloc(ks->ent, ncap * sizeof *ne);
        if (!ne) {
            ks->off = 1;
            return NULL;
        }
        memset(ne + ks->cap, 0, (ncap - ks->cap) * sizeof *ne);
        ks->ent = ne;
        ks->cap = ncap;
    }
    if ((ks->setn + 1) * 2 > ks->setcap && keys_set_grow(ks) != 0) {
        ks->off = 1;
        return NULL;
    }
    size_t j = key_hash(k, n) & (ks->setcap - 1);
    uint32_t canon = id;
    for (; ks->set[j]; j = (j + 1) & (ks->setcap - 1)) {
        uint32_t l2;
        const char *k2 = act__name_str(ks->set[j], &l2);
        if (l2 == n && memcmp(k2, k, n) == 0) {
            canon = ks->set[j];
            break;
        }
    }
    if (canon == id) {
        ks->set[j] = id;
        ks->setn++;
    }
    uint8_t f = KF_SET;
    for (int which = ACT__ARGS_HOST; which <= ACT__ARGS_PLUGIN; which++)
        if (is_reserved(k, n, which))
            f |= (uint8_t)(1u << which);
    ks->ent[id] = (struct kent){canon, f};
    return &ks->ent[id];
}

/* What the cache knows of key @p ref, or NULL: a local key, or no cache. */
static inline const struct kent *key_of(act__vkeys *ks, uint32_t ref)
{
    if (!ks || (ref & ACT__REF_LOCAL))
        return NULL;
    if (ACT_LIKELY(ref < ks->cap && (ks->ent[ref].flags & KF_SET)))
        return &ks->ent[ref];
    return key_slow(ks, ref);
}

static void keys_free(act__vkeys *ks)
{
    free(ks->ent);
    free(ks->set);
}

/* Whether arg @p b has the key of @p a, whose bytes are @p key, @p klen. */
static int same_key_bytes(const act__varg *a, const char *key, uint32_t klen, const act__varg *b)
{
    if (b->key == a->key && (!(b->key & ACT__REF_LOCAL) || b->c == a->c))
        return 1; /* the same ref: the same string */
    uint32_t l2;
    const char *k2 = act__visit_ref(b->c, b->key, &l2);
    return l2 == klen && memcmp(k2, key, klen) == 0;
}

/* How far a later arg with the same key is looked for. */
#define DUP_LOOKAHEAD 64
_Static_assert(ACT__VUNIQ_MAX <= DUP_LOOKAHEAD, "act__vuniq_start sees every duplicate");

int act__vargs_next_unique(act__vargs *it, int which, act__varg *out)
{
    if (which < ACT__ARGS_ALL || which > ACT__ARGS_PLUGIN)
        which = ACT__ARGS_ALL;
    while (vargs_next(it, out)) {
        const struct kent *ka = key_of(it->keys, out->key);
        if (ACT_LIKELY(ka != NULL)) {
            /* An interned key: by id, through the cache. */
            if (ka->flags & (1u << which))
                continue;
            uint32_t canon = ka->canon; /* ka moves when the cache grows */
            act__vargs q = *it;
            act__varg b;
            int dup = 0;
            for (int k = 0; k < DUP_LOOKAHEAD && !dup && vargs_next(&q, &b); k++) {
                const struct kent *kb = key_of(it->keys, b.key);
                if (kb) {
                    dup = kb->canon == canon;
                } else {
                    uint32_t klen;
                    const char *key = act__visit_ref(out->c, out->key, &klen);
                    dup = same_key_bytes(out, key, klen, &b);
                }
            }
            if (!dup)
                return 1;
            continue;
        }
        /* A local key (or no cache): by bytes. */
        uint32_t klen;
        const char *key = act__visit_ref(out->c, out->key, &klen);
        int skip = is_reserved(key, klen, which);
        /* A later arg with the same key wins; look ahead a bounded way. */
        act__vargs q = *it;
        act__varg b;
        for (int k = 0; k < DUP_LOOKAHEAD && !skip && vargs_next(&q, &b); k++)
            skip = same_key_bytes(out, key, klen, &b);
        if (!skip)
            return 1;
    }
    return 0;
}

void act__vuniq_start(act__vuniq *u, const act__vargs *args, int which)
{
    if (which < ACT__ARGS_ALL || which > ACT__ARGS_PLUGIN)
        which = ACT__ARGS_ALL;
    u->which = which;
    u->pos = 0;
    u->more = 0;
    /* canon[k] of arg k: its key's canon, or UINT32_MAX to compare bytes. */
    uint32_t canon[ACT__VUNIQ_MAX];
    act__vargs it = *args;
    act__varg a;
    uint32_t n = 0, nbytes = 0;
    while (vargs_next(&it, &a)) {
        if (n == ACT__VUNIQ_MAX) {
            u->more = 1;
            u->it = *args;
            return;
        }
        const struct kent *k = key_of(it.keys, a.key);
        uint32_t c = UINT32_MAX;
        if (k) {
            if (k->flags & (1u << which))
                continue; /* reserved: so is any arg with the same key */
            c = k->canon;
        } else {
            uint32_t kn;
            const char *key = act__visit_ref(a.c, a.key, &kn);
            if (is_reserved(key, kn, which))
                continue;
            nbytes++;
        }
        canon[n] = c;
        u->arg[n++] = a;
    }
    /* Of a key given twice, the last wins (as act__vargs_next_unique:
     * every arg is within its lookahead). */
    uint32_t kept = 0;
    if (n == 2 && !nbytes) { /* the usual case (Kineto's two args) */
        if (canon[0] == canon[1])
            u->arg[0] = u->arg[1], n = 1;
        u->n = n;
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        int dup = 0;
        for (uint32_t j = i + 1; j < n && !dup; j++) {
            if (canon[i] != UINT32_MAX && canon[j] != UINT32_MAX) {
                dup = canon[i] == canon[j];
            } else if (nbytes) {
                uint32_t kn;
                const char *key = act__visit_ref(u->arg[i].c, u->arg[i].key, &kn);
                dup = same_key_bytes(&u->arg[i], key, kn, &u->arg[j]);
            }
        }
        if (!dup) {
            if (kept != i)
                u->arg[kept] = u->arg[i];
            kept++;
        }
    }
    u->n = kept;
}

static int is_event(uint8_t kind)
{
    return kind == ACT__R_SPAN || kind == ACT__R_INSTANT || kind == ACT__R_EMIT_SPAN ||
           kind == ACT__R_EMIT_INSTANT;
}

#define CB(w, name, ...)                                                          \
    do {                                                                          \
        if ((w)->v->name)                                                         \
            (w)->v->name((w)->v->ctx, __VA_ARGS__);                               \
    } while (0)

static uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdu;
    k ^= k >> 33;
    return k;
}

static int keyset_add(keyset *ks, uint64_t k)
{
    if (!k)
        k = 1;
    if ((ks->n + 1) * 2 > ks->cap) {
        size_t ncap = ks->cap ? ks->cap * 2 : 1024;
        uint64_t *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return -1;
        for (size_t i = 0; i < ks->cap; i++) {
            if (!ks->slot[i])
                continue;
            size_t j = mix(ks->slot[i]) & (ncap - 1);
            while (ns[j])
                j = (j + 1) & (ncap - 1);
            ns[j] = ks->slot[i];
        }
        free(ks->slot);
        ks->slot = ns;
        ks->cap = ncap;
    }
    size_t j = mix(k) & (ks->cap - 1);
    while (ks->slot[j] && ks->slot[j] != k)
        j = (j + 1) & (ks->cap - 1);
    if (!ks->slot[j]) {
        ks->slot[j] = k;
        ks->n++;
    }
    return 0;
}

static int keyset_has(const keyset *ks, uint64_t k)
{
    if (!ks->cap)
        return 0;
    if (!k)
        k = 1;
    size_t j = mix(k) & (ks->cap - 1);
    while (ks->slot[j]) {
        if (ks->slot[j] == k)
            return 1;
        j = (j + 1) & (ks->cap - 1);
    }
    return 0;
}

/* Flow id: unique across sources, exact in a double (< 2^53). */
static uint64_t flow_id(uint16_t source, uint64_t corr)
{
    return ((uint64_t)source << 44) | (corr & ((UINT64_C(1) << 44) - 1));
}


/* ---- streams -------------------------------------------------------------- */

/* Stream ids are 64-bit (CUPTI packs a context and a stream into one), tids
 * are written as integers below 2^31. A device whose stream ids all fit
 * keeps them as tids (as Kineto writes them); a device with one that does
 * not gets tids 1, 2, 3, ... for its streams in id order. The id itself is
 * in every event's args.stream and, for a renumbered device, in the track's
 * thread_name. */
typedef struct smap_ent {
    uint64_t stream;
    uint32_t device;
    uint32_t tid; /* 0: empty slot */
} smap_ent;

#define STREAM_TID_MAX 0x7fffffffu

static size_t smap_slot(const vstate *w, uint32_t device, uint64_t stream)
{
    size_t j = mix(stream ^ ((uint64_t)device << 40) ^ device) & (w->smap_cap - 1);
    while (w->smap[j].tid &&
           (w->smap[j].stream != stream || w->smap[j].device != device))
        j = (j + 1) & (w->smap_cap - 1);
    return j;
}

/* Insert (device, stream) with a provisional tid of 1; dense tids are
 * assigned once every stream is known. */
static int smap_add(vstate *w, uint32_t device, uint64_t stream)
{
    if ((w->smap_n + 1) * 2 > w->smap_cap) {
        size_t ncap = w->smap_cap ? w->smap_cap * 2 : 64;
        smap_ent *old = w->smap;
        size_t ocap = w->smap_cap;
        w->smap = calloc(ncap, sizeof *w->smap);
        if (!w->smap) {
            w->smap = old;
            return -1;
        }
        w->smap_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].tid)
                w->smap[smap_slot(w, old[i].device, old[i].stream)] = old[i];
        free(old);
    }
    size_t j = smap_slot(w, device, stream);
    if (!w->smap[j].tid) {
        w->smap[j] = (smap_ent){stream, device, 1};
        w->smap_n++;
    }
    return 0;
}

static uint32_t stream_tid(const vstate *w, uint32_t device, uint64_t stream)
{
    if (device >= w->ndev || !w->dev_dense[device])
        return (uint32_t)stream & STREAM_TID_MAX; /* fits: see smap */
    if (!w->smap_cap)
        return 0;
    return w->smap[smap_slot(w, device, stream)].tid;
}

/* tid of the track for @p source's moved spans of thread @p tid: above any
 * Linux tid (< 2^22) and below 2^31, one per source (< 256). */
static uint32_t side_tid(uint16_t source, uint32_t tid)
{
    return 0x40000000u | ((uint32_t)source << 22) | (tid & 0x3fffffu);
}


/* ---- categories ---------------------------------------------------------- */

/* Kineto's category for a runtime/driver event of a known backend. */
static const char *kineto_cat(const char *backend, int type)
{
    static const struct {
        const char *backend, *runtime, *driver;
    } map[] = {
        {"cuda", "cuda_runtime", "cuda_driver"},
        {"xpu", "xpu_runtime", "xpu_driver"},
        {"mtia", "mtia_runtime", NULL},
        {"glow", "glow_runtime", NULL},
        {"hpu", "hpu_op", NULL},
        {"privateuse1", "privateuse1_runtime", "privateuse1_driver"},
    };
    for (size_t i = 0; i < ACT_ARRAY_SIZE(map); i++) {
        if (strcmp(backend, map[i].backend) == 0)
            return type == ACT_RUNTIME ? map[i].runtime : type == ACT_DRIVER ? map[i].driver : NULL;
    }
    return NULL;
}

static const char *category(const vstate *w, uint16_t source, int type)
{
    const char *name = act_activity_type_name((act_activity_type)type);
    if (!name)
        name = "unknown";
    if (!w->s->categories_generic && source && source < w->s->nsources &&
        (type == ACT_RUNTIME || type == ACT_DRIVER)) {
        const char *k = kineto_cat(w->s->sources[source].backend, type);
        if (k)
            return k;
    }
    return name;
}


/* The end of @p r given its end field @p t1, loaded once by the caller (an
 * open span may be ended by its thread while the writer runs). */
/* A record's t0. The drain settles full chunks' counter ticks in place
 * (engine/clock.c) while a window reads the running session: read as a
 * relaxed atomic (a plain load on every target we build for). */
static inline int64_t rec_t0(const act__rec *r)
{
    return __atomic_load_n(&r->t0, __ATOMIC_RELAXED);
}

/* A scoped span's or an instant's time as nanoseconds. Stop settles every
 * counter tick (engine.h, ACT__TICK_TAG); a recording call that loaded the
 * session just before stop unpublished it may still write one after, so
 * a tick that reaches the writer is converted here (rare: one lock). */
static inline int64_t host_time(const vstate *w, int64_t v)
{
    if (ACT_UNLIKELY(act__is_tick(v)))
        return act__time_of((act_session *)w->s, v);
    return v;
}

static int64_t end_at(const vstate *w, const act__rec *r, int64_t t1)
{
    if (t1 == ACT__OPEN) {
        int64_t t0 = host_time(w, rec_t0(r));
        t1 = w->s->stop_mono_ns;
        return t1 < t0 ? t0 : t1;
    }
    return host_time(w, t1);
}

static int64_t end_of(const vstate *w, const act__rec *r)
{
    return end_at(w, r, atomic_load_explicit(&((act__rec *)r)->t1, memory_order_relaxed));
}


/* Position of a record: its chunk and index. */
typedef struct rpos {
    const act__chunk *c;
    uint32_t i;
    uint64_t seq; /* order of recording, for a total order when sorting */
    int64_t t1;   /* end loaded once when sorting (INT64_MAX: open), so the
                     comparator stays consistent if a span ends meanwhile */
    int64_t t0;   /* start, when sorting (the chunk need not be decoded) */
} rpos;

/* Step to the record after @p p (its chunk entered); 0 at the end of what
 * was committed. The chunk it steps to is entered. */
static int next_pos(vstate *w, rpos *p)
{
    if (p->i + 1 < atomic_load_explicit(&((act__chunk *)p->c)->used, memory_order_acquire)) {
        p->i++;
        return 1;
    }
    for (const act__chunk *c = chunk_after(w, p->c); c; c = chunk_after(w, c)) {
        chunk_enter(w, c);
        if (atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire)) {
            p->c = c;
            p->i = 0;
            return 1;
        }
    }
    return 0;
}


/* ---- per-thread passes ------------------------------------------------------ */

typedef struct tscan {
    uint64_t recorded; /* events and counter samples */
    uint64_t args;
    uint64_t events;
    int sorted;
    int64_t min_t0;
} tscan;

static int cmp_pos(const void *a, const void *b)
{
    const rpos *x = a, *y = b;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    /* Same start: the longer (the parent) first. */
    int64_t dx = x->t1, dy = y->t1;
    if (dx != dy)
        return dx > dy ? -1 : 1;
    /* Keep recording order otherwise (qsort is not stable). */
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void scan_thread(vstate *w, const act__thread *t, tscan *sc)
{
    memset(sc, 0, sizeof *sc);
    sc->sorted = 1;
    sc->min_t0 = INT64_MAX;
    int64_t prev_t0 = INT64_MIN, prev_t1 = INT64_MAX;
    for (const act__chunk *c = t->head; c; c = chunk_next(w, c)) {
        long k = infl_of(w, c);
        if (k >= 0) {
            /* A frame: its summary, made when it was encoded, stands for
             * its records unless it has device records or ticks; its sum
             * is checked here, before anything is written (a frame that
             * passes it and still does not decode, a forgery, is refused
             * by the write pass: no file is renamed into place). */
            const act__fmeta *m = NULL;
            int got = act__frames_summary(&w->infl, (size_t)k, &m);
            if (got < 0)
                continue; /* the write is refused (w->infl.bad) */
            if (got > 0) {
                sc->recorded += m->events;
                sc->args += m->args;
                if (m->min_t0 < sc->min_t0)
                    sc->min_t0 = m->min_t0;
                if (m->hevents) {
                    sc->events += m->hevents;
                    if (!(m->flags & ACT__FM_SORTED) || m->first_t0 < prev_t0 ||
                        (m->first_t0 == prev_t0 && m->first_t1 > prev_t1))
                        sc->sorted = 0;
                    prev_t0 = m->last_t0;
                    prev_t1 = m->last_t1;
                }
                continue;
            }
        }
        chunk_enter(w, c);
        uint32_t n = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
        for (uint32_t i = 0; i < n; i++) {
            const act__rec *r = &c->recs[i];
            if (r->kind == ACT__R_AUX_DEV) {
                uint64_t corr = (uint64_t)atomic_load_explicit(&((act__rec *)r)->t1, memory_order_relaxed);
                if (corr && i > 0 && c->recs[i - 1].kind == ACT__R_EMIT_SPAN) {
                    uint64_t key = flow_id((uint16_t)(r->x >> 32), corr);
                    if (keyset_add(r->flags == ACT__EMIT_HOST_SPAN ? &w->host_corr : &w->dev_corr, key))
                        w->oom = 1;
                }
                uint32_t dev = (uint32_t)r->x;
                if (dev != ACT__HOST_DEVICE) {
                    if ((uint64_t)rec_t0(r) > STREAM_TID_MAX && dev < w->ndev)
                        w->dev_dense[dev] = 1;
                } else if (i > 0 && c->recs[i - 1].kind == ACT__R_EMIT_SPAN) {
                    w->plugin_host_spans++;
                }
                continue;
            }
            if (r->kind == ACT__R_ARG) {
                sc->args += 1 + ((atomic_load_explicit(&((act__rec *)r)->t1, memory_order_acquire) &
                                  ACT__ARG2_PRESENT) != 0);
                continue;
            }
            sc->recorded++;
            if (!is_event(r->kind)) {
                /* Counter samples count for the base time too. */
                int64_t t0 = rec_t0(r);
                if (r->kind == ACT__R_COUNTER && t0 < sc->min_t0)
                    sc->min_t0 = t0;
                continue;
            }
            sc->events++;
            /* t0 loaded once: each relaxed load is a load of its own. */
            int64_t t0 = rec_t0(r), h0 = host_time(w, t0);
            if (h0 < sc->min_t0)
                sc->min_t0 = h0;
            int64_t t1 = atomic_load_explicit(&((act__rec *)r)->t1, memory_order_relaxed);
            if (t1 == ACT__OPEN)
                t1 = INT64_MAX;
            if (t0 < prev_t0 || (t0 == prev_t0 && t1 > prev_t1))
                sc->sorted = 0;
            prev_t0 = t0;
            prev_t1 = t1;
        }
    }
}


/* ---- stream tids ----------------------------------------------------------- */

static int cmp_smap(const void *a, const void *b)
{
    const smap_ent *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return x->stream < y->stream ? -1 : x->stream > y->stream;
}

/* Renumber the streams of every device that has an id beyond 31 bits
 * (seen by scan_thread in events, here in named streams). */
static void plan_streams(vstate *w, act__thread **threads, size_t nthreads)
{
    const act_session *s = w->s;
    int any = 0;
    for (size_t d = 0; d < w->ndev; d++) {
        const act__device *dev = &s->devices[d];
        for (size_t k = 0; k < dev->nstreams; k++)
            if (dev->streams[k].id > STREAM_TID_MAX)
                w->dev_dense[d] = 1;
        any |= w->dev_dense[d];
    }
    if (!any)
        return;
    for (size_t k = 0; k < nthreads; k++) {
        for (const act__chunk *c = threads[k]->head; c; c = chunk_next(w, c)) {
            if (frame_lacks(w, c, ACT__FM_AUX))
                continue;
            chunk_enter(w, c);
            uint32_t n = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
            for (uint32_t i = 0; i < n; i++) {
                const act__rec *r = &c->recs[i];
                uint32_t dev = (uint32_t)r->x;
                if (r->kind == ACT__R_AUX_DEV && dev < w->ndev && w->dev_dense[dev] &&
                    smap_add(w, dev, (uint64_t)rec_t0(r)))
                    goto oom;
            }
        }
    }
    for (size_t d = 0; d < w->ndev; d++) {
        const act__device *dev = &s->devices[d];
        for (size_t k = 0; w->dev_dense[d] && k < dev->nstreams; k++)
            if (smap_add(w, (uint32_t)d, dev->streams[k].id))
                goto oom;
    }
    /* Dense tids in stream id order, from 1 on each device. */
    smap_ent *v = malloc((w->smap_n ? w->smap_n : 1) * sizeof *v);
    if (!v)
        goto oom;
    size_t n = 0;
    for (size_t j = 0; j < w->smap_cap; j++)
        if (w->smap[j].tid)
            v[n++] = w->smap[j];
    qsort(v, n, sizeof *v, cmp_smap);
    uint32_t rank = 0;
    for (size_t j = 0; j < n; j++) {
        rank = j && v[j].device == v[j - 1].device ? rank + 1 : 1;
        w->smap[smap_slot(w, v[j].device, v[j].stream)].tid = rank;
    }
    free(v);
    return;
oom:
    w->oom = 1;
}

/* ---- sources sharing a thread ------------------------------------------------ */

/* Spans that two sources (the app and a plugin, or two plugins) put on one
 * thread come from different clocks and calls, and may overlap partially,
 * which no viewer can draw on one track (Perfetto moves one to an overflow
 * track, chrome://tracing draws them wrongly). The rule: the app's spans stay
 * on the thread; a plugin span that partially overlaps a span of a source
 * loaded before it (the app first) is moved to a track of its own for that
 * thread and plugin, named "<thread> [<plugin>]". Spans that nest stay
 * where they were recorded, so runtime calls still sit under the operators
 * that made them. A source's spans that overlap each other are its own
 * doing and are left alone (actrace check reports them). */
typedef struct side_track {
    uint32_t tid; /* the thread's tid */
    uint16_t source;
} side_track;

typedef struct hspan {
    int64_t t0, t1;
    const act__rec *rec;
    uint32_t tid, seq;
    uint16_t source;
} hspan;

static int cmp_hspan(const void *a, const void *b)
{
    const hspan *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1)
        return x->t1 > y->t1 ? -1 : 1; /* the parent first */
    if (x->source != y->source)
        return x->source < y->source ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int hspan_push(hspan **v, size_t *n, size_t *cap, hspan h)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 256;
        hspan *nv = realloc(*v, ncap * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
        *cap = ncap;
    }
    h.seq = (uint32_t)*n;
    (*v)[(*n)++] = h;
    return 0;
}

static void move_span(vstate *w, const hspan *h)
{
    if (keyset_add(&w->moved, (uint64_t)(uintptr_t)h->rec)) {
        w->oom = 1;
        return;
    }
    for (size_t i = w->nsides; i-- > 0;)
        if (w->sides[i].tid == h->tid && w->sides[i].source == h->source)
            return;
    side_track *ns = realloc(w->sides, (w->nsides + 1) * sizeof *ns);
    if (!ns) {
        w->oom = 1;
        return;
    }
    w->sides = ns;
    w->sides[w->nsides++] = (side_track){h->tid, h->source};
}

/* Decide which plugin host spans move (w->moved), before anything is
 * written. Costs memory only for threads that have plugin host spans. */
static void plan_overlaps(vstate *w, act__thread **threads, size_t nthreads)
{
    keyset tids = {NULL, 0, 0};
    hspan *v = NULL;
    size_t n = 0, cap = 0, *stack = NULL;
    for (size_t k = 0; k < nthreads; k++) {
        for (const act__chunk *c = threads[k]->head; c; c = chunk_next(w, c)) {
            if (frame_lacks(w, c, ACT__FM_AUX))
                continue;
            chunk_enter(w, c);
            uint32_t used = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
            for (uint32_t i = 0; i + 1 < used; i++) {
                const act__rec *r = &c->recs[i], *aux = r + 1;
                if (r->kind != ACT__R_EMIT_SPAN || aux->kind != ACT__R_AUX_DEV ||
                    (uint32_t)aux->x != ACT__HOST_DEVICE)
                    continue;
                hspan h = {rec_t0(r), end_of(w, r), r, (uint32_t)aux->t0 & 0x7fffffffu, 0,
                           (uint16_t)(aux->x >> 32)};
                if (hspan_push(&v, &n, &cap, h) || keyset_add(&tids, (uint64_t)h.tid + 1))
                    goto oom;
            }
        }
    }
    for (size_t k = 0; k < nthreads; k++) {
        uint32_t tid = (uint32_t)threads[k]->tid & 0x7fffffffu;
        if (!keyset_has(&tids, (uint64_t)tid + 1))
            continue;
        for (const act__chunk *c = threads[k]->head; c; c = chunk_next(w, c)) {
            chunk_enter(w, c);
            uint32_t used = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
            for (uint32_t i = 0; i < used; i++) {
                const act__rec *r = &c->recs[i];
                if (r->kind != ACT__R_SPAN)
                    continue;
                hspan h = {host_time(w, rec_t0(r)), end_of(w, r), r, tid, 0, 0};
                if (hspan_push(&v, &n, &cap, h))
                    goto oom;
            }
        }
    }
    qsort(v, n, sizeof *v, cmp_hspan);
    stack = malloc((n ? n : 1) * sizeof *stack);
    if (!stack)
        goto oom;
    /* The sweep viewers make: spans in start order, a stack of the open
     * ones; a span that ends after the innermost open one overlaps it
     * partially. The later source yields. */
    for (size_t i = 0; i < n;) {
        uint32_t tid = v[i].tid;
        size_t sp = 0;
        for (; i < n && v[i].tid == tid; i++) {
            const hspan *x = &v[i];
            int moved = 0;
            for (;;) {
                while (sp && v[stack[sp - 1]].t1 <= x->t0)
                    sp--;
                if (!sp || x->t1 <= v[stack[sp - 1]].t1)
                    break;
                const hspan *top = &v[stack[sp - 1]];
                if (x->source > top->source) {
                    moved = 1;
                    break;
                }
                if (top->source == x->source)
                    break;
                move_span(w, top);
                sp--;
            }
            if (moved)
                move_span(w, x);
            else
                stack[sp++] = i;
        }
    }
    free(stack);
    free(v);
    free(tids.slot);
    return;
oom:
    w->oom = 1;
    free(stack);
    free(v);
    free(tids.slot);
}


/* ---- counters --------------------------------------------------------------- */

typedef struct csample {
    uint32_t track; /* track index: series sharing device+source+track name */
    uint32_t series;
    int64_t ts;
    double v;
} csample;

static int cmp_sample(const void *a, const void *b)
{
    const csample *x = a, *y = b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->series < y->series ? -1 : x->series > y->series;
}

/* A track's name in the trace (malloc'd). Tracks of different sources
 * (the app and plugins) are kept apart by the engine; when two share a name
 * on the same process, the plugin's gets its name appended ("memory
 * [host]") so that readers grouping counters by name and pid see two
 * tracks, not one whose keys change. */
static char *track_name(const act_session *s, const act__series *head, int clash)
{
    const char *name = head->track[0] ? head->track : "(unnamed)";
    const char *src = clash && head->source && head->source < s->nsources
                          ? s->sources[head->source].name : NULL;
    size_t n = strlen(name) + (src ? strlen(src) + 3 : 0) + 1;
    char *buf = malloc(n);
    if (buf)
        snprintf(buf, n, src ? "%s [%s]" : "%s", name, src);
    return buf;
}

#define NO_SERIES UINT32_MAX

static uint64_t track_hash(const act__series *e)
{
    uint64_t h = 1469598103934665603u ^ ((uint64_t)e->source << 32 | e->device);
    for (const char *p = e->track; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    return mix(h);
}

/* Group the @p ns series into tracks (same device, source and track name)
 * in linear time: track_of[i] is the track's first series, next_of[i] the
 * track's next series after i (ascending) or NO_SERIES. -1 when out of
 * memory. */
static int assign_tracks(const act_session *s, size_t ns, uint32_t *track_of,
                         uint32_t *next_of, uint8_t *clash)
{
    size_t cap = 16;
    while (cap < ns * 2)
        cap *= 2;
    uint32_t *slot = malloc(cap * sizeof *slot); /* a track's last series */
    if (!slot)
        return -1;
    memset(slot, 0xff, cap * sizeof *slot);
    for (size_t i = 0; i < ns; i++) {
        const act__series *a = s->series[i];
        size_t j = track_hash(a) & (cap - 1);
        for (; slot[j] != NO_SERIES; j = (j + 1) & (cap - 1)) {
            const act__series *b = s->series[slot[j]];
            if (a->device == b->device && a->source == b->source && strcmp(a->track, b->track) == 0)
                break;
        }
        next_of[i] = NO_SERIES;
        if (slot[j] == NO_SERIES) {
            track_of[i] = (uint32_t)i;
        } else {
            track_of[i] = track_of[slot[j]];
            next_of[slot[j]] = (uint32_t)i;
        }
        slot[j] = (uint32_t)i;
    }
    /* clash[i]: another source has a track of the same name on the same
     * device (see track_name), found through a second index that ignores
     * the source: it keeps each name's first series, whose clash flag then
     * stands for the name. */
    memset(slot, 0xff, cap * sizeof *slot);
    for (size_t i = 0; i < ns; i++) {
        const act__series *a = s->series[i];
        act__series key = *a;
        key.source = 0;
        size_t j = track_hash(&key) & (cap - 1);
        for (; slot[j] != NO_SERIES; j = (j + 1) & (cap - 1)) {
            const act__series *b = s->series[slot[j]];
            if (a->device == b->device && strcmp(a->track, b->track) == 0)
                break;
        }
        if (slot[j] == NO_SERIES)
            slot[j] = (uint32_t)i;
        else if (s->series[slot[j]]->source != a->source)
            clash[slot[j]] = 1;
    }
    for (size_t i = 0; i < ns; i++) {
        const act__series *a = s->series[i];
        act__series key = *a;
        key.source = 0;
        size_t j = track_hash(&key) & (cap - 1);
        while (a->device != s->series[slot[j]]->device ||
               strcmp(a->track, s->series[slot[j]]->track) != 0)
            j = (j + 1) & (cap - 1);
        clash[i] = clash[slot[j]];
    }
    free(slot);
    return 0;
}


/* ---- names and args ------------------------------------------------------ */

const char *act__visit_ref(const act__chunk *c, uint32_t ref, uint32_t *len)
{
    if (ref & ACT__REF_LOCAL)
        return act__chunk_str(c, ref, len);
    /* "" for 0 or an id act_name never returned. */
    return act__name_str(ref, len);
}

int act__vargs_next(act__vargs *it, act__varg *out)
{
    return vargs_next(it, out);
}

static inline int vargs_next(act__vargs *it, act__varg *out)
{
    if (it->done)
        return 0;
    if (it->slot == 0) {
        const act__rec *a = &it->c->recs[it->i];
        int64_t t1 = atomic_load_explicit(&((act__rec *)a)->t1, memory_order_acquire);
        if (t1 & ACT__ARG2_PRESENT) {
            it->slot = 1;
            out->c = it->c;
            out->key = (uint32_t)t1;
            out->kind = (uint8_t)(t1 >> 32);
            out->val = (uint64_t)a->t0;
            return 1;
        }
    }
    rpos q = {it->c, it->i, 0, 0, 0};
    if (q.i + 1 < atomic_load_explicit(&((act__chunk *)q.c)->used, memory_order_acquire))
        q.i++; /* next_pos's usual case, inline */
    else if (!next_pos((vstate *)it->walk, &q))
        q.c = NULL;
    if (!q.c || q.c->recs[q.i].kind != ACT__R_ARG) {
        it->done = 1;
        return 0;
    }
    const act__rec *a = &q.c->recs[q.i];
    it->c = q.c;
    it->i = q.i;
    it->slot = 0;
    out->c = q.c;
    out->key = a->name;
    out->kind = a->flags;
    out->val = a->x;
    return 1;
}


/* ---- events ---------------------------------------------------------------- */

static inline const char *host_category(vstate *w, int type)
{
    int slot = act__type_slot(type);
    if (slot < 0)
        slot = ACT__NTYPE_SLOTS;
    if (!w->host_cat[slot])
        w->host_cat[slot] = category(w, 0, type);
    return w->host_cat[slot];
}

/* The fields of a thread's host events that are the same for all of
 * them, set once per thread (visit_host fills in the rest). */
static void host_template(act__vevent *e, int32_t pid, int32_t tid)
{
    memset(e, 0, sizeof *e);
    e->struct_size = sizeof *e;
    e->pid = pid;
    e->tid = (uint32_t)tid;
    e->device = ACT__HOST_DEVICE;
}

/* Host record @p i of chunk @p c, whose first @p n records are known to be
 * committed. @p e: the thread's template (host_template). */
static inline void visit_host(vstate *w, act__vevent *e, const act__chunk *c, uint32_t i,
                              uint32_t n)
{
    const act__rec *r = &c->recs[i];
    e->kind = r->kind;
    e->open = 0;
    e->type = r->type;
    e->t0 = e->t1 = host_time(w, rec_t0(r));
    if (r->kind == ACT__R_SPAN) {
        int64_t t1 = atomic_load_explicit(&((act__rec *)r)->t1, memory_order_relaxed);
        e->open = t1 == ACT__OPEN;
        e->t1 = end_at(w, r, t1);
    }
    e->ext = r->x;
    e->cat = host_category(w, r->type);
    e->c = c;
    e->name = r->name;
    e->rec = r;
    if (i + 1 < n) {
        e->has_args = c->recs[i + 1].kind == ACT__R_ARG;
    } else {
        rpos look = {c, i, 0, 0, 0};
        e->has_args = next_pos(w, &look) && look.c->recs[look.i].kind == ACT__R_ARG;
    }
    e->args = (act__vargs){c, i, 1, !e->has_args, w->keys, w};
    w->v->event(w->v->ctx, e);
}

/* Kineto's "memory bandwidth (GB/s)" of copy or memset @p e, from its
 * "bytes" arg (see act__vevent.has_mem_bw). */
static void mem_bandwidth(act__vevent *e)
{
    if (e->kind != ACT__R_EMIT_SPAN || !e->has_args ||
        (e->type != ACT_GPU_MEMCPY && e->type != ACT_GPU_MEMSET))
        return;
    static const char bw_key[] = ACT__MEM_BW_KEY;
    act__vargs it = e->args;
    act__varg a;
    double bytes = -1;
    while (act__vargs_next(&it, &a)) {
        uint32_t kn;
        const char *k = act__visit_ref(a.c, a.key, &kn);
        if (kn == sizeof bw_key - 1 && memcmp(k, bw_key, kn) == 0)
            return; /* the plugin's own (CUPTI's) */
        if (kn == 5 && memcmp(k, "bytes", 5) == 0) {
            if (a.kind == ACT__V_UINT)
                bytes = (double)a.val;
            else if (a.kind == ACT__V_INT && (int64_t)a.val >= 0)
                bytes = (double)(int64_t)a.val;
        }
    }
    if (bytes < 0)
        return;
    e->has_mem_bw = 1;
    e->mem_bw_gbps = e->t1 > e->t0 ? bytes / (double)(e->t1 - e->t0) : 0.0;
}

/* One plugin record (with its AUX_DEV record right after it). */
static void visit_plugin(vstate *w, rpos at)
{
    const act__rec *r = &at.c->recs[at.i];
    rpos ap = at;
    if (!next_pos(w, &ap) || ap.c->recs[ap.i].kind != ACT__R_AUX_DEV)
        return; /* torn group: cannot happen for committed records */
    const act__rec *aux = &ap.c->recs[ap.i];
    act__vevent e;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    e.kind = r->kind;
    e.type = r->type;
    e.device = (uint32_t)aux->x;
    e.source = (uint16_t)(aux->x >> 32);
    e.corr = (uint64_t)atomic_load_explicit(&((act__rec *)aux)->t1, memory_order_relaxed);
    e.stream = (uint64_t)aux->t0;
    if (e.device == ACT__HOST_DEVICE) {
        e.pid = w->pid;
        e.tid = (uint32_t)e.stream & 0x7fffffffu;
        if (w->moved.n && keyset_has(&w->moved, (uint64_t)(uintptr_t)r))
            e.tid = side_tid(e.source, e.tid);
    } else {
        e.pid = (int32_t)(ACT__DEVICE_PID_BASE + e.device);
        e.tid = stream_tid(w, e.device, e.stream);
    }
    e.t0 = e.t1 = rec_t0(r);
    if (r->kind == ACT__R_EMIT_SPAN)
        e.t1 = end_of(w, r);
    e.ext = r->x;
    e.cat = category(w, e.source, r->type);
    e.backend = e.source < w->s->nsources ? w->s->sources[e.source].backend : "";
    e.c = at.c;
    e.name = r->name;
    e.rec = r;
    rpos look = ap;
    e.has_args = next_pos(w, &look) && look.c->recs[look.i].kind == ACT__R_ARG;
    e.args = (act__vargs){ap.c, ap.i, 1, !e.has_args, w->keys, w};
    /* Flow from the API call to the device work it launched ("ac2g"). */
    if (e.corr && r->kind == ACT__R_EMIT_SPAN) {
        uint64_t key = flow_id(e.source, e.corr);
        int host_side = (act__emit_kind)aux->flags == ACT__EMIT_HOST_SPAN;
        if (host_side ? keyset_has(&w->dev_corr, key) : keyset_has(&w->host_corr, key)) {
            e.flow = key;
            e.flow_dir = host_side ? 1 : 2;
        }
    }
    mem_bandwidth(&e);
    w->v->event(w->v->ctx, &e);
}

/* The record at @p at, of a chunk whose first @p n records are committed;
 * @p he: the thread's host event template. */
static inline void visit_at(vstate *w, rpos at, uint32_t n, act__vevent *he)
{
    switch (at.c->recs[at.i].kind) {
    case ACT__R_SPAN:
    case ACT__R_INSTANT: visit_host(w, he, at.c, at.i, n); break;
    case ACT__R_EMIT_SPAN:
    case ACT__R_EMIT_INSTANT: visit_plugin(w, at); break;
    default: break;
    }
}

static void visit_thread(vstate *w, const act__thread *t, const tscan *sc)
{
    CB(w, thread_events, t->pid, t->tid);
    if (!w->v->event)
        return;
    act__vevent he;
    host_template(&he, t->pid, t->tid);
    if (!sc->sorted) {
        /* Recorded out of start order (caller-supplied times): sort this
         * thread's events so that parents precede children. */
        rpos *idx = malloc(sc->events * sizeof *idx);
        if (idx) {
            size_t k = 0;
            for (const act__chunk *c = t->head; c; c = chunk_next(w, c)) {
                chunk_enter(w, c);
                uint32_t n = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
                for (uint32_t i = 0; i < n && k < sc->events; i++)
                    if (is_event(c->recs[i].kind)) {
                        int64_t t1 = atomic_load_explicit(&((act__rec *)&c->recs[i])->t1,
                                                          memory_order_relaxed);
                        idx[k] = (rpos){c, i, k, t1 == ACT__OPEN ? INT64_MAX : t1,
                                        rec_t0(&c->recs[i])};
                        k++;
                    }
            }
            qsort(idx, k, sizeof *idx, cmp_pos);
            /* In time order: a frame's copy is decoded again as an event
             * of it comes up (at most ACT__INFL_LIVE held at once). */
            for (size_t i = 0; i < k; i++) {
                chunk_enter(w, idx[i].c);
                visit_at(w, idx[i], idx[i].i + 1, &he);
            }
            free(idx);
            for (const act__chunk *c = t->head; c && (w->spill.n || w->infl.n); c = chunk_next(w, c))
                ;
            return;
        }
        w->oom = 1; /* fall through: unsorted but complete */
    }
    for (const act__chunk *c = t->head; c; c = chunk_next(w, c)) {
        chunk_enter(w, c);
        uint32_t n = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
        for (uint32_t i = 0; i < n; i++)
            visit_at(w, (rpos){c, i, 0, 0, 0}, n, &he);
    }
}

/* ---- counters --------------------------------------------------------------- */

/* Counter samples grouped per track and sorted by time; each time of a track
 * is handed out with the latest value of every series of the track (a series
 * not yet sampled takes its first value, flagged in seen). */
static void visit_counters(vstate *w, act__thread **threads, size_t nthreads)
{
    act_session *s = w->s;
    size_t ns = s->nseries, n = 0, cap = 0;
    if (!ns)
        return;
    uint32_t *track_of = calloc(ns, sizeof *track_of);
    uint32_t *next_of = calloc(ns, sizeof *next_of);
    uint8_t *clash = calloc(ns, 1);
    double *cur = calloc(ns, sizeof *cur);     /* by position in the track */
    uint8_t *seen = calloc(ns, 1);
    uint32_t *pos = calloc(ns, sizeof *pos);   /* series -> position */
    uint32_t *ids = calloc(ns, sizeof *ids);
    const act__series **tser = calloc(ns, sizeof *tser);
    uint32_t *chg = calloc(ns, sizeof *chg);
    double *chv = calloc(ns, sizeof *chv);
    csample *v = NULL;
    if (!track_of || !next_of || !clash || !cur || !seen || !pos || !ids || !tser || !chg ||
        !chv || assign_tracks(s, ns, track_of, next_of, clash) != 0)
        goto oom;
    for (size_t k = 0; k < nthreads; k++) {
        for (const act__chunk *c = threads[k]->head; c; c = chunk_next(w, c)) {
            if (frame_lacks(w, c, ACT__FM_COUNTERS))
                continue;
            chunk_enter(w, c);
            uint32_t cnt = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
            for (uint32_t i = 0; i < cnt; i++) {
                const act__rec *r = &c->recs[i];
                if (r->kind != ACT__R_COUNTER || r->name >= ns)
                    continue;
                if (n == cap) {
                    size_t ncap = cap ? cap * 2 : 1024;
                    csample *nv = realloc(v, ncap * sizeof *nv);
                    if (!nv)
                        goto oom;
                    v = nv;
                    cap = ncap;
                }
                int64_t bits = atomic_load_explicit(&((act__rec *)r)->t1, memory_order_relaxed);
                v[n].track = track_of[r->name];
                v[n].series = r->name;
                v[n].ts = rec_t0(r);
                memcpy(&v[n].v, &bits, sizeof bits);
                n++;
            }
        }
    }
    if (n) /* qsort's pointer must not be NULL, even for no elements */
        qsort(v, n, sizeof *v, cmp_sample);
    w->counter_samples = n;
    for (size_t i = 0; i < n;) {
        uint32_t track = v[i].track;
        size_t end = i;
        while (end < n && v[end].track == track)
            end++;
        size_t nser = 0;
        for (uint32_t k = track; k != NO_SERIES; k = next_of[k]) {
            pos[k] = (uint32_t)nser;
            ids[nser] = k;
            tser[nser] = s->series[k];
            seen[nser] = 0;
            nser++;
        }
        /* First values, so every time of the track has every series. */
        for (size_t j = end; j-- > i;) {
            cur[pos[v[j].series]] = v[j].v;
            seen[pos[v[j].series]] = 1;
        }
        const act__series *head = s->series[track];
        char *tname = track_name(s, head, clash[track]);
        if (!tname)
            goto oom;
        act__vctrack ct = {sizeof ct, track,
                           head->device == ACT__HOST_DEVICE ? w->pid
                                                            : (int32_t)(ACT__DEVICE_PID_BASE + head->device),
                           head->device, tname,
                           head->device == ACT__HOST_DEVICE ? "host_counter" : "gpu_pm_counter",
                           nser, tser, ids};
        CB(w, counter_track, &ct);
        for (size_t j = i; j < end;) {
            /* One time per call: samples of different series at the same
             * time share it; a series sampled again at the same time
             * (sorted next to each other) starts another, so that no
             * sample's value is lost. */
            int64_t ts = v[j].ts;
            size_t j0 = j, nchg = 0;
            for (; j < end && v[j].ts == ts && (j == j0 || v[j].series != v[j - 1].series); j++) {
                uint32_t p = pos[v[j].series];
                cur[p] = v[j].v;
                chg[nchg] = p;
                chv[nchg++] = v[j].v;
            }
            w->counter_events++;
            act__vcsample cs = {sizeof cs, ts, nchg, chg, chv, cur, seen};
            CB(w, counter, &ct, &cs);
        }
        free(tname);
        i = end;
    }
    goto done;
oom:
    w->oom = 1;
done:
    free(v);
    free(track_of);
    free(next_of);
    free(clash);
    free(cur);
    free(seen);
    free(pos);
    free(ids);
    free(tser);
    free(chg);
    free(chv);
}

/* ---- metadata ------------------------------------------------------------------ */

static void process(vstate *w, int32_t pid, int64_t sort_index, const char *name, uint32_t device)
{
    act__vprocess p = {sizeof p, pid, sort_index, name, device};
    CB(w, process, &p);
}

static void thread(vstate *w, int32_t pid, int64_t tid, const char *name, int is_stream)
{
    act__vthread t = {sizeof t, pid, tid, name, (uint8_t)is_stream};
    CB(w, thread, &t);
}

static void visit_metadata(vstate *w, act__thread **threads, size_t nthreads)
{
    act_session *s = w->s;
    char buf[256];
    const char *pname = act__process_name(buf, sizeof buf);
    process(w, w->pid, 0, pname ? pname : "host", ACT__HOST_DEVICE);
    for (size_t i = 0; i < nthreads; i++) {
        const char *tn = act__thread_name_lookup(threads[i]->tid, threads[i]->serial, buf, sizeof buf);
        if (tn)
            thread(w, threads[i]->pid, threads[i]->tid, tn, 0);
    }
    for (size_t i = 0; i < w->nsides; i++) {
        const side_track *st = &w->sides[i];
        const char *tn = act__thread_name_lookup((int32_t)st->tid, ACT__SERIAL_ANY, buf, sizeof buf);
        const char *src = st->source < s->nsources ? s->sources[st->source].name : "";
        char label[320];
        if (tn)
            snprintf(label, sizeof label, "%s [%s]", tn, src);
        else
            snprintf(label, sizeof label, "thread %" PRIu32 " [%s]", st->tid, src);
        thread(w, w->pid, side_tid(st->source, st->tid), label, 0);
    }
    /* Threads a plugin named (name_thread, ABI 1.1) whose events came
     * through the plugin, so they have no chunk of their own. */
    int32_t named[1024];
    size_t nnamed = act__thread_names_by_plugin(named, 1024);
    for (size_t k = 0; k < nnamed && k < 1024; k++) {
        size_t i = 0;
        while (i < nthreads && !(threads[i]->tid == named[k] && threads[i]->pid == w->pid))
            i++;
        const char *tn = i == nthreads ? act__thread_name_lookup(named[k], 0, buf, sizeof buf) : NULL;
        if (tn)
            thread(w, w->pid, named[k], tn, 0);
    }
    for (size_t d = 0; d < s->ndevices; d++) {
        const act__device *dev = &s->devices[d];
        if (!act__source_live(s, dev->source))
            continue;
        int32_t pid = (int32_t)(ACT__DEVICE_PID_BASE + d);
        char label[320];
        if (dev->name[0])
            snprintf(label, sizeof label, "%s (device %zu)", dev->name, d);
        else
            snprintf(label, sizeof label, "device %zu", d);
        process(w, pid, (int64_t)(100 + d), label, (uint32_t)d);
        if (d < w->ndev && w->dev_dense[d]) {
            /* Renumbered streams: every track is named, by default with
             * its stream id. */
            for (size_t j = 0; j < w->smap_cap; j++) {
                const smap_ent *e = &w->smap[j];
                if (!e->tid || e->device != d)
                    continue;
                const char *nm = NULL;
                for (size_t k = 0; k < dev->nstreams && !nm; k++)
                    if (dev->streams[k].id == e->stream)
                        nm = dev->streams[k].name;
                snprintf(label, sizeof label, "stream %" PRIu64, e->stream);
                thread(w, pid, e->tid, nm ? nm : label, 1);
            }
            continue;
        }
        for (size_t k = 0; k < dev->nstreams; k++)
            thread(w, pid, (int64_t)stream_tid(w, (uint32_t)d, dev->streams[k].id),
                   dev->streams[k].name, 1);
    }
}

/* ---- statistics ------------------------------------------------------------------ */

static void visit_end(vstate *w, const uint64_t *recorded)
{
    act_session *s = w->s;
    act__vstats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    /* recorded + dropped == attempted. */
    for (const act__thread *t = s->threads; t; t = t->next) {
        for (int r = 0; r < ACT__DROP_NREASONS; r++) {
            uint64_t n = atomic_load_explicit(&t->dropped_reason[r], memory_order_relaxed);
            st.by_reason[r] += n;
            st.dropped += n;
        }
        for (int k = 0; k < ACT__NTYPE_SLOTS; k++)
            st.by_type[k] += atomic_load_explicit(&t->dropped_type[k], memory_order_relaxed);
        st.args_orphan += atomic_load_explicit(&t->args_dropped[0], memory_order_relaxed);
        st.args_event_dropped += atomic_load_explicit(&t->args_dropped[1], memory_order_relaxed);
    }
    /* Session-wide: not counted by type (see engine.h). */
    st.by_reason[ACT__DROP_REENTRANT] = atomic_load(&s->dropped_reentrant);
    st.dropped += st.by_reason[ACT__DROP_REENTRANT];
    static const char *const reasons[ACT__DROP_NREASONS] = {
        "buffer_full", "type_not_selected", "bad_type", "unbalanced",
        "orphan_arg", "non_finite", "bad_times", "reentrant"};
    st.reason_names = reasons;
    st.recorded = recorded[0];
    st.args_recorded = recorded[1];
    st.args_reentrant = atomic_load(&s->args_dropped_reentrant);
    st.args_dropped = st.args_orphan + st.args_event_dropped + st.args_reentrant;
    st.buffer_bytes = atomic_load(&s->bytes);
    st.buffer_limit_bytes = s->max_bytes;
    /* The plugins' lines come from the layer that loaded them (engine.h). */
    act__vplugin *pl = NULL;
    const char **warn = NULL;
    size_t np = 0;
    if (s->report_plugins && s->report_plugins(s, &pl, &warn, &np) != 0)
        w->oom = 1;
    st.nplugins = np;
    st.plugins = pl;
    uint8_t *live = calloc(s->nseries ? s->nseries : 1, 1);
    if (!live)
        w->oom = 1;
    else
        for (size_t i = 0; i < s->nseries; i++)
            live[i] = (uint8_t)act__source_live(s, s->series[i]->source);
    st.nseries = live ? s->nseries : 0;
    st.series = (const act__series *const *)s->series;
    st.series_live = live;
    st.counter_samples = w->counter_samples;
    st.counter_events = w->counter_events;
    CB(w, end, &st);
    free(live);
    free(pl);
    free(warn);
}

/* ---- entry ----------------------------------------------------------------------- */

/* Everything a walk allocated (what it has not allocated is still zero:
 * act__visit clears its state first), after the session lock is let go. */
static void walk_free(vstate *w, act__thread **threads, tscan *scans)
{
    act__spill_map_free(&w->spill);
    free(w->dev_dense);
    free(w->smap);
    free(w->moved.slot);
    free(w->sides);
    free(w->host_corr.slot);
    free(w->dev_corr.slot);
    keys_free(&w->keys_store);
    free(threads);
    free(scans);
}

int act__visit(act_session *s, const act__visitor *v, char *err, size_t errcap)
{
    vstate w;
    memset(&w, 0, sizeof w);
    w.s = s;
    w.v = v;
    w.pid = s->pid ? s->pid : (int32_t)getpid();
    w.keys = &w.keys_store;

    /* The session lock is held for the whole walk: devices, streams,
     * counter series, sources and the thread list may still grow (a
     * plugin's thread naming a stream, an app call in flight) and would be
     * reallocated under the visitor otherwise. Recording itself is not
     * blocked but for a thread that needs a new chunk. Lock order: the
     * session lock before the names locks (act__thread_name_lookup). */
    pthread_mutex_lock(&s->lock);
    /* A spooled session past its RAM budget: the spilled slabs come back
     * as each pass reads them and are dropped again once read (out of
     * memory for the map: they stay, as before). */
    (void)act__spill_map_make(s, &w.spill);
    /* Snapshot the thread list in attach order. */
    size_t nthreads = 0;
    for (act__thread *t = s->threads; t; t = t->next)
        nthreads++;
    act__thread **threads = malloc((nthreads ? nthreads : 1) * sizeof *threads);
    tscan *scans = calloc(nthreads ? nthreads : 1, sizeof *scans);
    if (threads) {
        size_t i = nthreads;
        for (act__thread *t = s->threads; t; t = t->next)
            threads[--i] = t;
    }
    /* The archive's frame nodes read as chunks again, for this walk
     * (copies, undone before the lock is let go). */
    int irc = threads && scans ? act__frames_inflate_lazy(s, &w.infl, &w.spill) : 0;
    if (!threads || !scans || irc != 0) {
        pthread_mutex_unlock(&s->lock);
        walk_free(&w, threads, scans);
        snprintf(err, errcap, irc == ACT_EINVAL ? "a frame of the archive does not decode"
                                                : "out of memory");
        return irc ? irc : ACT_ENOMEM;
    }

    uint64_t recorded[2] = {0, 0}; /* events, args */
    int64_t min_t0 = s->start_mono_ns ? s->start_mono_ns : act__clock_ns();
    w.ndev = s->ndevices;
    w.dev_dense = calloc(w.ndev ? w.ndev : 1, 1);
    if (!w.dev_dense)
        w.oom = 1, w.ndev = 0;
    for (size_t i = 0; i < nthreads; i++) {
        scan_thread(&w, threads[i], &scans[i]);
        recorded[0] += scans[i].recorded;
        recorded[1] += scans[i].args;
        if (scans[i].events && scans[i].min_t0 < min_t0)
            min_t0 = scans[i].min_t0;
    }
    if (w.infl.bad) {
        /* The first pass checked every frame's sum (or decoded it): one
         * is damaged (a spill file written over). Nothing written yet. */
        act__frames_restore(s, &w.infl);
        pthread_mutex_unlock(&s->lock);
        walk_free(&w, threads, scans);
        snprintf(err, errcap, "a frame of the archive does not decode");
        return ACT_EINVAL;
    }
    plan_streams(&w, threads, nthreads);
    if (w.plugin_host_spans)
        plan_overlaps(&w, threads, nthreads);

    act__vinfo info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.pid = w.pid;
    /* Base: a whole second at least one second before the earliest event,
     * so every ts is positive and never 0 (as in Kineto's traces). */
    int64_t first_unix = min_t0 + s->mono_to_unix_ns;
    info.base_unix_ns = (first_unix / 1000000000 - 1) * 1000000000;
    info.to_rel_ns = s->mono_to_unix_ns - info.base_unix_ns;
    info.mono_to_unix_ns = s->mono_to_unix_ns;
    info.proc_start = s->proc_start;
    info.trace_id = act_config_get_str(s->config, "REQUEST_TRACE_ID");
    info.group_trace_id = act_config_get_str(s->config, "REQUEST_GROUP_TRACE_ID");
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        strcpy(host, "unknown");
    host[sizeof host - 1] = '\0';
    info.host_name = host;
    info.trace_name = s->trace_name;
    info.recovered = s->recovered;
    info.categories_generic = s->categories_generic;
    /* distributedInfo: the launcher's variables in order, torchrun's,
     * Slurm's, OpenMPI's; a process none of them names is a job of one
     * (rank 0 of 1). No launcher names the communication backend. */
    /* A trace rebuilt from a spool: the dead process's, logged at its
     * start; otherwise this process's environment now. */
    act__dist dist;
    if (s->has_dist)
        dist = s->dist;
    else
        act__dist_env(&dist);
    info.has_rank = dist.has_rank;
    info.has_world = dist.has_world;
    info.has_local = dist.has_local;
    info.rank = dist.has_rank ? dist.rank : 0;
    info.world = dist.has_world ? dist.world : 1;
    info.local = dist.has_local ? dist.local : 0;
    info.dist_backend = dist.backend[0] ? dist.backend : "unknown";

    CB(&w, begin, &info);
    for (size_t d = 0; d < s->ndevices; d++) {
        const act__device *dev = &s->devices[d];
        if (!act__source_live(s, dev->source))
            continue;
        act__vdevice vd = {sizeof vd, (uint32_t)d, dev->name, dev->vendor,
                           dev->source < s->nsources ? s->sources[dev->source].backend : "",
                           dev->props, dev->nprops};
        CB(&w, device, &vd);
    }
    CB(&w, metadata, &info);
    visit_metadata(&w, threads, nthreads);
    for (size_t i = 0; i < nthreads; i++)
        visit_thread(&w, threads[i], &scans[i]);
    visit_counters(&w, threads, nthreads);
    visit_end(&w, recorded);
    int bad = w.infl.bad; /* changed since the first pass: those chunks empty */
    act__frames_restore(s, &w.infl);
    pthread_mutex_unlock(&s->lock);
    walk_free(&w, threads, scans);
    if (bad) {
        snprintf(err, errcap, "a frame of the archive stopped decoding while the trace was written");
        return ACT_EINVAL;
    }
    if (w.oom) {
        snprintf(err, errcap, "out of memory while writing the trace");
        return ACT_ENOMEM;
    }
    return 0;
}
