/* SPDX-License-Identifier: MIT */
/*
 * Compact frames of sealed chunks (frame.h has the layout).
 */
#include "engine/frame.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Per record, at most: H, a literal kind, t0, t1 and x (10 each), name
 * (5), type (3), flags (1). */
#define REC_MAX (1 + 1 + 10 + 10 + 10 + 5 + 3 + 1)
#define HDR_MAX (1 + 5 * 5)

#define H_KIND 7u
#define H_TYPE 8u
#define H_FLAGS 16u
#define H_X 32u
#define H_NAME 64u
#define H_T1 128u
#define KIND_ESC 1u /* no record has kind 1 (engine.h) */

static inline int timed(unsigned kind)
{
    return kind == ACT__R_SPAN || kind == ACT__R_INSTANT || kind == ACT__R_COUNTER ||
           kind == ACT__R_EMIT_SPAN || kind == ACT__R_EMIT_INSTANT;
}

/* What a record is coded against: the timed record before it (t0), the
 * untimed one before it (t0, t1, x), the record before it (type). */
typedef struct coder {
    uint64_t t0, o0, o1, ox;
    uint32_t n0, on; /* names: the timed record's before, the untimed one's */
    uint16_t type;
} coder;

static inline uint64_t zz(uint64_t d)
{
    return (d << 1) ^ (uint64_t)(-(int64_t)(d >> 63));
}

static inline uint64_t unzz(uint64_t v)
{
    return (v >> 1) ^ (uint64_t)(-(int64_t)(v & 1));
}

static inline uint32_t rotl1(uint32_t v)
{
    return v << 1 | v >> 31;
}

static inline uint32_t rotr1(uint32_t v)
{
    return v >> 1 | v << 31;
}

static inline uint8_t *put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* A varint of at most @p maxb bytes whose value fits @p lim; NULL when
 * truncated, too long or too large. */
static inline const uint8_t *get(const uint8_t *p, const uint8_t *end, uint64_t *v,
                                 uint64_t lim)
{
    /* Codes of one to three bytes (deltas, repeated names, the usual
     * record), unrolled; the same value as the loop below gives. */
    if (ACT_LIKELY(end - p >= 3)) {
        uint64_t b0 = p[0];
        if (b0 < 0x80) {
            *v = b0;
            return p + 1;
        }
        uint64_t b1 = p[1];
        if (b1 < 0x80) {
            *v = (b0 & 0x7f) | b1 << 7; /* below 2^14: every lim is larger */
            return p + 2;
        }
        uint64_t b2 = p[2];
        if (b2 < 0x80) {
            uint64_t r = (b0 & 0x7f) | (b1 & 0x7f) << 7 | b2 << 14;
            if (r > lim)
                return NULL;
            *v = r;
            return p + 3;
        }
    }
    uint64_t r = 0;
    for (unsigned sh = 0; sh < 70 && p < end; sh += 7) {
        uint8_t b = *p++;
        if (sh == 63 && b > 1)
            return NULL; /* past 64 bits */
        r |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) {
            if (r > lim)
                return NULL;
            *v = r;
            return p;
        }
    }
    return NULL;
}

size_t act__frame_bound(const act__chunk *c, uint32_t used, uint32_t str_off)
{
    size_t strb = str_off <= c->size ? c->size - str_off : 0;
    return HDR_MAX + strb + (size_t)used * REC_MAX;
}

static int offsets_ok(uint32_t size, uint32_t used, uint32_t str_off)
{
    return str_off >= sizeof(act__chunk) && str_off <= size &&
           used <= (str_off - sizeof(act__chunk)) / sizeof(act__rec);
}

size_t act__frame_encode(const act__chunk *c, uint32_t used, uint32_t str_off, uint8_t *out,
                         size_t cap)
{
    if (!offsets_ok(c->size, used, str_off) || cap < act__frame_bound(c, used, str_off))
        return 0;
    uint8_t *p = out;
    *p++ = ACT__FRAME_V1;
    p = put(p, c->size);
    p = put(p, used);
    p = put(p, c->settled);
    p = put(p, c->heap);
    p = put(p, str_off);
    memcpy(p, (const char *)c + str_off, c->size - str_off);
    p += c->size - str_off;
    coder k = {0, 0, 0, 0, 0, 0, 0};
    for (uint32_t i = 0; i < used; i++) {
        const act__rec *r = &c->recs[i];
        unsigned kind = r->kind;
        uint64_t t0 = (uint64_t)r->t0;
        uint64_t t1 = (uint64_t)atomic_load_explicit(&((act__rec *)r)->t1, memory_order_relaxed);
        uint64_t t0c, t1c, xc;
        uint32_t nc;
        if (timed(kind)) {
            t0c = zz(t0 - k.t0);
            k.t0 = t0;
            t1c = kind == ACT__R_COUNTER ? __builtin_bswap64(t1) : zz(t1 - t0);
            xc = r->x;
            nc = rotl1(r->name ^ k.n0);
            k.n0 = r->name;
        } else {
            nc = rotl1(r->name ^ k.on);
            k.on = r->name;
            t0c = zz(t0 - k.o0);
            t1c = zz(t1 - k.o1);
            xc = zz(r->x - k.ox);
            k.o0 = t0;
            k.o1 = t1;
            k.ox = r->x;
        }
        unsigned h = kind < 8 && kind != KIND_ESC ? kind : KIND_ESC;
        h |= r->type != k.type ? H_TYPE : 0;
        h |= r->flags ? H_FLAGS : 0;
        h |= xc ? H_X : 0;
        h |= nc ? H_NAME : 0;
        h |= t1c ? H_T1 : 0;
        *p++ = (uint8_t)h;
        if ((h & H_KIND) == KIND_ESC)
            *p++ = (uint8_t)kind;
        p = put(p, t0c);
        if (h & H_T1)
            p = put(p, t1c);
        if (h & H_TYPE)
            p = put(p, r->type);
        if (h & H_FLAGS)
            *p++ = r->flags;
        if (h & H_X)
            p = put(p, xc);
        if (h & H_NAME)
            p = put(p, nc);
        k.type = r->type;
    }
    return (size_t)(p - out);
}

static const uint8_t *header(const uint8_t *p, const uint8_t *end, uint32_t f[5])
{
    if (p >= end || *p != ACT__FRAME_V1)
        return NULL;
    p++;
    for (int k = 0; k < 5; k++) {
        uint64_t v;
        if (!(p = get(p, end, &v, UINT32_MAX)))
            return NULL;
        f[k] = (uint32_t)v;
    }
    if (!offsets_ok(f[0], f[1], f[4]))
        return NULL;
    return p;
}

int act__frame_peek(const uint8_t *in, size_t len, uint32_t *size, uint32_t *used,
                    uint32_t *str_off)
{
    uint32_t f[5];
    if (!header(in, in + len, f))
        return -1;
    *size = f[0];
    *used = f[1];
    *str_off = f[4];
    return 0;
}

int act__frame_decode(const uint8_t *in, size_t len, act__chunk *out, size_t out_cap,
                      size_t *consumed)
{
    const uint8_t *p = in, *end = in + len;
    uint32_t f[5];
    if (!(p = header(p, end, f)))
        return -1;
    uint32_t size = f[0], used = f[1], str_off = f[4];
    if (size > out_cap || (size_t)(end - p) < size - str_off)
        return -1;
    atomic_store_explicit(&out->next, NULL, memory_order_relaxed);
    atomic_store_explicit(&out->used, used, memory_order_relaxed);
    out->size = size;
    out->settled = f[2];
    out->heap = f[3];
    memcpy((char *)out + str_off, p, size - str_off);
    p += size - str_off;
    coder k = {0, 0, 0, 0, 0, 0, 0};
    for (uint32_t i = 0; i < used; i++) {
        act__rec *r = &out->recs[i];
        if (p >= end)
            return -1;
        unsigned h = *p++, kind = h & H_KIND;
        if (kind == KIND_ESC) {
            if (p >= end)
                return -1;
            kind = *p++;
        }
        uint64_t t0c, t1c = 0, xc = 0, name = 0, v;
        if (!(p = get(p, end, &t0c, UINT64_MAX)))
            return -1;
        if ((h & H_T1) && !(p = get(p, end, &t1c, UINT64_MAX)))
            return -1;
        uint16_t type = k.type;
        if (h & H_TYPE) {
            if (!(p = get(p, end, &v, UINT16_MAX)))
                return -1;
            type = (uint16_t)v;
        }
        uint8_t flags = 0;
        if (h & H_FLAGS) {
            if (p >= end)
                return -1;
            flags = *p++;
        }
        if ((h & H_X) && !(p = get(p, end, &xc, UINT64_MAX)))
            return -1;
        if ((h & H_NAME) && !(p = get(p, end, &name, UINT32_MAX)))
            return -1;
        uint64_t t0, t1, x;
        uint32_t nm = rotr1((uint32_t)name);
        if (timed(kind)) {
            t0 = k.t0 + unzz(t0c);
            k.t0 = t0;
            t1 = kind == ACT__R_COUNTER ? __builtin_bswap64(t1c) : t0 + unzz(t1c);
            x = xc;
            nm ^= k.n0;
            k.n0 = nm;
        } else {
            nm ^= k.on;
            k.on = nm;
            t0 = k.o0 + unzz(t0c);
            t1 = k.o1 + unzz(t1c);
            x = k.ox + unzz(xc);
            k.o0 = t0;
            k.o1 = t1;
            k.ox = x;
        }
        r->t0 = (int64_t)t0;
        atomic_store_explicit(&r->t1, (int64_t)t1, memory_order_relaxed);
        r->x = x;
        r->name = nm;
        r->type = type;
        r->kind = (uint8_t)kind;
        r->flags = flags;
        k.type = type;
    }
    *consumed = (size_t)(p - in);
    return 0;
}

static inline void low_ref(uint32_t ref, uint32_t *low)
{
    if ((ref & ACT__REF_LOCAL) && (ref & ~ACT__REF_LOCAL) < *low)
        *low = ref & ~ACT__REF_LOCAL;
}

/* ---- the archive's frame nodes ------------------------------------------- */

act__chunk *act__frame_node(const act__chunk *c, uint8_t **scratch, size_t *scap,
                            void *(*carve)(void *arg, size_t bytes), void *arg)
{
    uint32_t used = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
    /* One pass for the summary and for the lowest local string ref (names,
     * arg keys and string values; c->size if none), where the string area
     * act__frame_encode copies starts. */
    act__fmeta m;
    memset(&m, 0, sizeof m);
    m.nrec = used;
    m.flags = ACT__FM_SORTED | ACT__FM_SUMMED;
    m.min_t0 = INT64_MAX;
    uint32_t low = c->size;
    int64_t prev_t0 = INT64_MIN, prev_t1 = INT64_MAX;
    for (uint32_t i = 0; i < used; i++) {
        const act__rec *r = &c->recs[i];
        int64_t t1 = atomic_load_explicit(&((act__rec *)r)->t1, memory_order_acquire);
        switch (r->kind) {
        case ACT__R_ARG:
            m.args += 1 + ((t1 & ACT__ARG2_PRESENT) != 0);
            low_ref(r->name, &low);
            if (act__vkind_text(r->flags))
                low_ref((uint32_t)r->x, &low);
            if ((uint64_t)t1 & (uint64_t)ACT__ARG2_PRESENT) {
                low_ref((uint32_t)t1, &low);
                if (act__vkind_text((unsigned)((uint64_t)t1 >> 32) & 0xff))
                    low_ref((uint32_t)r->t0, &low);
            }
            continue;
        case ACT__R_AUX_DEV:
            m.flags = (m.flags | ACT__FM_AUX) & ~ACT__FM_SUMMED;
            continue;
        case ACT__R_SPAN:
        case ACT__R_INSTANT:
        case ACT__R_EMIT_SPAN:
        case ACT__R_EMIT_INSTANT:
            low_ref(r->name, &low);
            break;
        default:
            m.events++;
            if (r->kind == ACT__R_COUNTER) {
                m.flags |= ACT__FM_COUNTERS;
                if (r->t0 < m.min_t0)
                    m.min_t0 = r->t0;
            }
            continue;
        }
        /* An event: as scan_thread reads it (visit.c). */
        m.events++;
        m.hevents++;
        if (act__is_tick(r->t0))
            m.flags &= ~ACT__FM_SUMMED;
        if (r->t0 < m.min_t0)
            m.min_t0 = r->t0;
        if (t1 == ACT__OPEN)
            t1 = INT64_MAX;
        if (r->t0 < prev_t0 || (r->t0 == prev_t0 && t1 > prev_t1))
            m.flags &= ~ACT__FM_SORTED;
        if (m.hevents == 1)
            m.first_t0 = r->t0, m.first_t1 = t1;
        prev_t0 = m.last_t0 = r->t0;
        prev_t1 = m.last_t1 = t1;
    }
    uint32_t recs_end = (uint32_t)(sizeof(act__chunk) + (size_t)used * sizeof(act__rec));
    uint32_t lo = low < recs_end ? recs_end : low;
    size_t need = act__frame_bound(c, used, lo);
    if (*scap < need) {
        uint8_t *nb = realloc(*scratch, need);
        if (!nb)
            return NULL;
        *scratch = nb;
        *scap = need;
    }
    size_t flen = act__frame_encode(c, used, lo, *scratch, *scap);
    size_t bytes = sizeof(act__chunk) + sizeof(act__fmeta) + flen;
    if (!flen || bytes >= c->size)
        return NULL;
    act__chunk *a = carve(arg, bytes);
    if (!a)
        return NULL;
    m.flen = (uint32_t)flen;
    atomic_store_explicit(&a->next, NULL, memory_order_relaxed);
    atomic_store_explicit(&a->used, 0, memory_order_relaxed);
    a->size = (uint32_t)bytes;
    a->heap = ACT__CHUNK_FRAMED;
    a->settled = c->settled;
    memcpy(a->recs, &m, sizeof m);
    memcpy((char *)a->recs + sizeof m, *scratch, flen);
    (void)act__fmeta_sum(a, &((act__fmeta *)(void *)a->recs)->sum);
    return a;
}

/* A 64-bit state that takes 8 bytes a step: (h ^ w) * odd, then
 * h ^= h >> 29, each a bijection of h for a given w, so that one word
 * changed leaves a different state to the end. */
static uint64_t sum_bytes(uint64_t h, const uint8_t *p, size_t n)
{
    const uint64_t k = 0x9E3779B97F4A7C15u;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * k;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w ^ ((uint64_t)n << 56)) * k;
    return h ^ (h >> 29);
}

int act__fmeta_sum(const act__chunk *c, uint64_t *out)
{
    const act__fmeta *m = act__fmeta_of(c);
    if (c->size < sizeof(act__chunk) + sizeof *m ||
        m->flen > c->size - sizeof(act__chunk) - sizeof *m)
        return -1;
    uint64_t h = sum_bytes(0x5851F42D4C957F2Du, (const uint8_t *)m, offsetof(act__fmeta, sum));
    *out = sum_bytes(h, (const uint8_t *)(m + 1), m->flen);
    return 0;
}

int act__frames_summary(act__inflated *u, size_t k, const act__fmeta **mp)
{
    const act__chunk *node = u->v[k].node;
    const act__fmeta *m = act__fmeta_of(node);
    uint64_t h;
    if (act__fmeta_sum(node, &h) != 0 || h != m->sum) {
        u->bad = 1;
        return -1;
    }
    if (!(m->flags & ACT__FM_SUMMED))
        return 0;
    *mp = m;
    return 1;
}

/* A chunk's room in the copies' mapping: whole pages of its own, so that
 * dropping one copy (MADV_DONTNEED) touches no other. Pages a copy never
 * writes (the gap between its records and its string area) are never
 * faulted in. */
static size_t copy_room(uint32_t size)
{
    return ((size_t)size + 4095) & ~(size_t)4095;
}

long act__frames_find(const act__inflated *u, const act__chunk *c)
{
    if (!u->n || (uintptr_t)c - (uintptr_t)u->map >= u->map_len)
        return -1;
    size_t lo = 0, hi = u->n; /* copies in address order */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)u->v[mid].copy <= (uintptr_t)c)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo || u->v[lo - 1].copy != c)
        return -1;
    return (long)(lo - 1);
}

/* Decode entry @p k's frame into its copy. 0, or -1: the frame no longer
 * decodes (the copy then holds no records). */
static uint64_t frames_decoded; /* act__frames_decoded */

uint64_t act__frames_decoded(void)
{
    return __atomic_load_n(&frames_decoded, __ATOMIC_RELAXED);
}

static int infl_decode(struct act__infl_ent *e)
{
    __atomic_fetch_add(&frames_decoded, 1, __ATOMIC_RELAXED);
    const act__fmeta *m = act__fmeta_of(e->node);
    uint32_t size = 0, used, so;
    size_t got;
    act__chunk *d = e->copy;
    int rc = 0;
    if (act__frame_peek((const uint8_t *)(m + 1), m->flen, &size, &used, &so) != 0 ||
        size != e->size ||
        act__frame_decode((const uint8_t *)(m + 1), m->flen, d, size, &got) != 0) {
        memset(d, 0, sizeof *d);
        d->size = (uint32_t)sizeof *d;
        rc = -1;
    }
    d->heap = 0; /* the copies' mapping's */
    atomic_store_explicit(&d->used, rc ? 0 : used, memory_order_relaxed);
    atomic_store_explicit(&d->next, e->next, memory_order_relaxed);
    return rc;
}

/* Lazy copies of at most a pool chunk's size are backed by a place of a
 * small memory file (u->mfd, ACT__INFL_LIVE places of ACT__CHUNK_SIZE),
 * mapped over the copy's address while it is decoded and the copy's
 * untouched anonymous memory mapped back when dropped: memory written
 * before, reused pass after pass, rather than fresh pages to fault in and
 * zero for every chunk of every pass (microseconds a page on some VMs).
 * Only addresses of the walk's own mapping are ever mapped over. */
#ifndef MAP_POPULATE
#define MAP_POPULATE 0
#endif
static int slot_map(act__inflated *u, struct act__infl_ent *e, size_t at)
{
    if (u->mfd < 0 || e->size > ACT__CHUNK_SIZE)
        return -1;
    /* Populated: the place's pages are the memory file's already (1 MiB
     * at most in all), mapped in one call rather than a fault for each
     * 4 KiB the decode writes (16 a chunk). */
    void *p = mmap(e->copy, copy_room(e->size), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_FIXED | MAP_POPULATE, u->mfd, (off_t)(at * ACT__CHUNK_SIZE));
    if (p == MAP_FAILED) {
        /* The range may be gone: anonymous memory again. */
        mmap(e->copy, copy_room(e->size), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        return -1;
    }
    e->slot = (int16_t)at;
    return 0;
}

void act__frames_drop(act__inflated *u, size_t k)
{
    struct act__infl_ent *e = &u->v[k];
    if (!e->live)
        return;
    e->live = 0;
    if (e->slot >= 0) {
        e->slot = -1;
        if (mmap(e->copy, copy_room(e->size), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) != MAP_FAILED)
            return;
    }
    madvise(e->copy, copy_room(e->size), MADV_DONTNEED);
}

int act__frames_enter(act__inflated *u, size_t k)
{
    struct act__infl_ent *e = &u->v[k];
    e->stamp = ++u->clock;
    if (e->live)
        return 0;
    if (u->lazy) {
        /* At most ACT__INFL_LIVE copies live that the walk has not dropped
         * itself (random access: a thread sorted by time): a free place,
         * or the one entered longest ago makes room. */
        size_t at = 0;
        for (size_t j = 0; j < ACT__INFL_LIVE; j++) {
            size_t o = u->ring[j];
            if (!o || !u->v[o - 1].live) {
                at = j;
                break;
            }
            if (u->v[o - 1].stamp < u->v[u->ring[at] - 1].stamp)
                at = j;
        }
        if (u->ring[at] && u->ring[at] - 1 != k)
            act__frames_drop(u, u->ring[at] - 1);
        u->ring[at] = k + 1;
        (void)slot_map(u, e, at); /* else its own fresh pages */
    }
    int rc = infl_decode(e);
    e->live = 1;
    if (rc)
        u->bad = 1;
    return rc;
}

/* A look at chunk @p c is over: if it lies in a spilled slab, its pages
 * go (a read fault of a file mapping maps the 64 KiB around it: a walk
 * over the headers alone would map the whole spill file). */
static void let_go(const act__inflated *u, const act__chunk *c)
{
    if (u->spill && u->spill->n)
        act__spill_map_drop(u->spill, c);
}

/* The tail of a thread that has exited, which no longer moves; NULL for a
 * live one, whose tail (the chunk it writes) is never a frame and which
 * may be moving it now (a window's walk while the session records). */
static act__chunk *tail_of_exited(const act__thread *t)
{
    return atomic_load_explicit(&t->exited, memory_order_acquire) ? t->tail : NULL;
}

int act__frames_inflate_lazy(act_session *s, act__inflated *u, const act__spill_map *spill)
{
    memset(u, 0, sizeof *u);
    u->mfd = -1;
    u->spill = spill;
    size_t cap = 0, len = 0;
    /* The nodes, in list order; spilled chunks let go as soon as read. */
    for (act__thread *t = s->threads; t; t = t->next) {
        act__chunk *prev = NULL;
        int prev_node = 0;
        for (act__chunk *c = t->head, *nc; c; prev = c, c = nc) {
            nc = atomic_load_explicit(&c->next, memory_order_acquire);
            int framed = act__chunk_framed(c);
            uint32_t size = 0, used, so;
            if (framed) {
                const act__fmeta *m = act__fmeta_of(c);
                if (act__frame_peek((const uint8_t *)(m + 1), m->flen, &size, &used, &so) != 0 ||
                    size < sizeof(act__chunk)) {
                    let_go(u, c);
                    free(u->v);
                    memset(u, 0, sizeof *u);
                    return ACT_EINVAL;
                }
            }
            let_go(u, c);
            if (!framed) {
                prev_node = 0;
                continue;
            }
            if (u->n == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                struct act__infl_ent *nv = realloc(u->v, ncap * sizeof *nv);
                if (!nv) {
                    free(u->v);
                    memset(u, 0, sizeof *u);
                    return ACT_ENOMEM;
                }
                u->v = nv;
                cap = ncap;
            }
            u->v[u->n++] = (struct act__infl_ent){t, prev_node ? NULL : prev, c, NULL, nc, size,
                                                  (uint8_t)!prev_node, 0, -1, 0};
            len += copy_room(size);
            prev_node = 1;
        }
    }
    if (!u->n)
        return 0;
    /* Address space only: a copy is faulted in while the walk reads it
     * (act__frames_enter) and given back once it moves on
     * (act__frames_drop), so the walk holds a few decoded chunks at a
     * time, not the session's decoded size. Small pages: a huge page
     * would hold 2 MB of copies live for one. */
    void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
    if (map == MAP_FAILED) {
        free(u->v);
        memset(u, 0, sizeof *u);
        return ACT_ENOMEM;
    }
#ifdef MADV_NOHUGEPAGE
    madvise(map, len, MADV_NOHUGEPAGE);
#endif
    u->map = map;
    u->map_len = len;
    u->lazy = 1;
#ifdef MFD_CLOEXEC
    u->mfd = memfd_create("actrace-walk", MFD_CLOEXEC);
    if (u->mfd >= 0 && ftruncate(u->mfd, (off_t)ACT__INFL_LIVE * ACT__CHUNK_SIZE) != 0) {
        close(u->mfd);
        u->mfd = -1;
    }
#endif
    char *at = map;
    for (size_t k = 0; k < u->n; k++) {
        u->v[k].copy = (act__chunk *)(void *)at;
        at += copy_room(u->v[k].size);
    }
    /* The list reaches each copy: from a chunk in memory or the head (set
     * here), or from the copy before (its next, set when decoded). */
    for (size_t k = 0; k < u->n; k++) {
        struct act__infl_ent *e = &u->v[k];
        if (k + 1 < u->n && e->next == u->v[k + 1].node)
            e->next = u->v[k + 1].copy;
        if (e->restore && e->prev) {
            atomic_store_explicit(&e->prev->next, e->copy, memory_order_release);
            let_go(u, e->prev);
        } else if (e->restore) {
            e->t->head = e->copy;
        }
        if (tail_of_exited(e->t) == e->node)
            e->t->tail = e->copy;
    }
    /* Whether each frame is whole is known as the walk's first pass reads
     * its summary or decodes it (u->bad), before anything is written. */
    return 0;
}

int act__frames_inflate(act_session *s, act__inflated *u)
{
    int rc = act__frames_inflate_lazy(s, u, NULL);
    if (rc != 0)
        return rc;
    u->lazy = 0; /* every copy live until restore, in fresh memory */
    if (u->mfd >= 0)
        close(u->mfd);
    u->mfd = -1;
    for (size_t k = 0; k < u->n; k++)
        (void)act__frames_enter(u, k);
    if (u->bad) {
        act__frames_restore(s, u);
        return ACT_EINVAL;
    }
    return 0;
}

void act__frames_restore(act_session *s, act__inflated *u)
{
    (void)s;
    /* Last first: a copy may be the one before the next node replaced. */
    for (size_t k = u->n; k-- > 0;) {
        struct act__infl_ent *e = &u->v[k];
        if (e->restore && e->prev) {
            atomic_store_explicit(&e->prev->next, e->node, memory_order_release);
            let_go(u, e->prev);
        } else if (e->restore) {
            e->t->head = e->node;
        }
        if (tail_of_exited(e->t) == e->copy)
            e->t->tail = e->node;
    }
    free(u->v);
    if (u->map)
        munmap(u->map, u->map_len);
    if (u->mfd >= 0)
        close(u->mfd);
    memset(u, 0, sizeof *u);
    u->mfd = -1;
}
