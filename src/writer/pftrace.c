/* SPDX-License-Identifier: MIT */
/*
 * The Perfetto protobuf encoder (pftrace.h). Packets are built in one
 * buffer and framed when complete; nested messages get a one-byte length
 * that is widened in place when the message turns out longer than 127
 * bytes (rare: long names or many args).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actrace/errors.h"
#include "internal.h"
#include "writer/pftrace.h"

/* Field numbers (Perfetto's protos). */
enum {
    F_TRACE_PACKET = 1,
    /* TracePacket */
    P_CLOCK_SNAPSHOT = 6, P_TIMESTAMP = 8, P_SEQ_ID = 10, P_TRACK_EVENT = 11,
    P_INTERNED = 12, P_SEQ_FLAGS = 13, P_DEFAULTS = 59, P_TRACK_DESC = 60,
    /* TracePacketDefaults */
    D_CLOCK_ID = 58, D_TRACK_EVENT_DEFAULTS = 11,
    /* TrackEventDefaults */
    TD_TRACK_UUID = 11,
    /* ClockSnapshot / Clock */
    CS_CLOCKS = 1, C_ID = 1, C_TS = 2, C_INCREMENTAL = 3,
    /* TrackEvent */
    E_CATEGORY_IIDS = 3, E_DEBUG = 4, E_TYPE = 9, E_NAME_IID = 10, E_TRACK_UUID = 11,
    E_NAME = 23, E_CATEGORIES = 22, E_DOUBLE_COUNTER = 44, E_FLOW_IDS = 47, E_TERM_FLOW_IDS = 48,
    /* DebugAnnotation */
    A_NAME_IID = 1, A_BOOL = 2, A_UINT = 3, A_INT = 4, A_DOUBLE = 5, A_STRING = 6,
    A_JSON = 9, A_NAME = 10, A_STRING_IID = 17,
    /* InternedData */
    I_CATEGORIES = 1, I_NAMES = 2, I_ANN_NAMES = 3, I_STRING_VALUES = 29,
    /* TrackDescriptor */
    T_UUID = 1, T_NAME = 2, T_PROCESS = 3, T_THREAD = 4, T_PARENT = 5, T_COUNTER = 8,
    /* ProcessDescriptor / ThreadDescriptor */
    PD_PID = 1, PD_NAME = 6, TH_PID = 1, TH_TID = 2, TH_NAME = 5,
    /* CounterDescriptor */
    CD_UNIT = 3, CD_UNIT_NAME = 6,
};

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

/* The fast paths write these tags as one byte (fields below 16). */
_Static_assert(P_TIMESTAMP < 16 && P_SEQ_ID < 16 && P_SEQ_FLAGS < 16 && P_TRACK_EVENT < 16 &&
                   E_TYPE < 16 && E_TRACK_UUID < 16 && E_CATEGORY_IIDS < 16 &&
                   E_NAME_IID < 16 && E_DEBUG < 16 && A_NAME_IID < 16,
               "one-byte tags");

/* For the few helpers of the per-event path that gcc would otherwise keep
 * out of line (they have several callers). */
#if defined(__GNUC__) || defined(__clang__)
#define HOT_INLINE static inline __attribute__((always_inline))
#else
#define HOT_INLINE static inline
#endif

#define SEQ_CLEARED 1u
#define SEQ_NEEDS 2u
#define CLOCK_SEQ 64u
#define CLOCK_REALTIME_ID 1u
#define CLOCK_MONOTONIC_ID 3u
#define CLOCK_BOOTTIME_ID 6u

/* Strings longer than this are written inline, never interned; the table
 * stops growing at MAX_INTERNED strings (later ones are written inline). */
#define INTERN_MAX_LEN 256u
#define MAX_INTERNED (1u << 20)

enum { K_NAME = 1, K_CAT = 2, K_KEY = 4, K_VALUE = 8 };

/* ---- buffer ---------------------------------------------------------------- */

static int grow(act__pf *pf, uint8_t **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 1024;
    while (ncap < need)
        ncap *= 2;
    uint8_t *nb = realloc(*buf, ncap);
    if (!nb) {
        pf->err = ACT_ENOMEM;
        return -1;
    }
    *buf = nb;
    *cap = ncap;
    return 0;
}

/* A packet is built in place in the sink's buffer (INPLACE bytes reserved,
 * two of headroom for its frame) and committed without a copy; one that
 * outgrows that moves to the heap buffer and is copied when complete. */
#define INPLACE 1024u

static uint8_t *room_slow(act__pf *pf, size_t n)
{
    if (pf->inplace) {
        if (grow(pf, &pf->heap, &pf->heapcap, pf->len + n))
            return NULL;
        memcpy(pf->heap, pf->pkt, pf->len);
        pf->pkt = pf->heap;
        pf->cap = pf->heapcap;
        pf->inplace = 0;
        return pf->pkt + pf->len;
    }
    if (grow(pf, &pf->heap, &pf->heapcap, pf->len + n))
        return NULL;
    pf->pkt = pf->heap;
    pf->cap = pf->heapcap;
    return pf->pkt + pf->len;
}

static inline uint8_t *room(act__pf *pf, size_t n)
{
    if (pf->len + n > pf->cap)
        return room_slow(pf, n);
    return pf->pkt + pf->len;
}

/* Start building a packet (in place when the sink has room). */
static inline void pkt_begin(act__pf *pf)
{
    pf->len = 0;
    pf->depth = 0;
    char *p = act__out_reserve(pf->o, INPLACE);
    if (p) {
        pf->pkt = (uint8_t *)p + 2;
        pf->cap = INPLACE - 2 - 8; /* slack for widening the frame */
        pf->inplace = 1;
    } else {
        pf->pkt = pf->heap;
        pf->cap = pf->heapcap;
        pf->inplace = 0;
    }
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline void f_varint(act__pf *pf, uint32_t field, uint64_t v)
{
    uint8_t *p = room(pf, 20);
    if (!p)
        return;
    p = put_varint(p, (uint64_t)field << 3 | WT_VARINT);
    p = put_varint(p, v);
    pf->len = (size_t)(p - pf->pkt);
}

static inline void f_fixed64(act__pf *pf, uint32_t field, uint64_t v)
{
    uint8_t *p = room(pf, 18);
    if (!p)
        return;
    p = put_varint(p, (uint64_t)field << 3 | WT_I64);
    for (int i = 0; i < 8; i++)
        *p++ = (uint8_t)(v >> (8 * i));
    pf->len = (size_t)(p - pf->pkt);
}

static void f_double(act__pf *pf, uint32_t field, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    f_fixed64(pf, field, v);
}

static void f_bytes(act__pf *pf, uint32_t field, const void *s, size_t n)
{
    uint8_t *p = room(pf, 20 + n);
    if (!p)
        return;
    p = put_varint(p, (uint64_t)field << 3 | WT_LEN);
    p = put_varint(p, n);
    if (n)
        memcpy(p, s, n);
    pf->len = (size_t)(p + n - pf->pkt);
}

static void open_msg(act__pf *pf, uint32_t field)
{
    uint8_t *p = room(pf, 12);
    if (!p || pf->depth == (int)(sizeof pf->nest / sizeof pf->nest[0])) {
        pf->err = ACT_ENOMEM;
        return;
    }
    p = put_varint(p, (uint64_t)field << 3 | WT_LEN);
    pf->nest[pf->depth++] = (size_t)(p - pf->pkt);
    *p++ = 0;
    pf->len = (size_t)(p - pf->pkt);
}

static void close_msg(act__pf *pf)
{
    if (pf->depth == 0)
        return;
    size_t at = pf->nest[--pf->depth];
    size_t body = pf->len - at - 1;
    if (body < 0x80) {
        pf->pkt[at] = (uint8_t)body;
        return;
    }
    uint8_t tmp[10];
    size_t w = (size_t)(put_varint(tmp, body) - tmp);
    if (!room(pf, w - 1))
        return;
    memmove(pf->pkt + at + w, pf->pkt + at + 1, body);
    memcpy(pf->pkt + at, tmp, w);
    pf->len += w - 1;
}

/* Frame the packet in pf->pkt (with its interned data) as Trace.packet. */
static void emit_packet(act__pf *pf)
{
    if (pf->ilen) {
        uint8_t *p = room(pf, 12 + pf->ilen);
        if (p) {
            p = put_varint(p, (uint64_t)P_INTERNED << 3 | WT_LEN);
            p = put_varint(p, pf->ilen);
            memcpy(p, pf->idata, pf->ilen);
            pf->len = (size_t)(p + pf->ilen - pf->pkt);
        }
        pf->ilen = 0;
    }
    if (pf->err) {
        pf->len = 0;
        return;
    }
    if (pf->inplace) {
        uint8_t *start = pf->pkt - 2;
        if (pf->len < 0x80) {
            start[0] = F_TRACE_PACKET << 3 | WT_LEN;
            start[1] = (uint8_t)pf->len;
        } else {
            /* Longer than one length byte: widen the frame in place (the
             * reservation has the slack). */
            uint8_t tmp[10];
            size_t w = (size_t)(put_varint(tmp, pf->len) - tmp);
            memmove(pf->pkt + w - 1, pf->pkt, pf->len);
            start[0] = F_TRACE_PACKET << 3 | WT_LEN;
            memcpy(start + 1, tmp, w);
            pf->len += w - 1;
        }
        act__out_commit(pf->o, (char *)pf->pkt + pf->len);
        pf->len = 0;
        pf->inplace = 0;
        return;
    }
    uint8_t hdr[12], *h = hdr;
    h = put_varint(h, (uint64_t)F_TRACE_PACKET << 3 | WT_LEN);
    h = put_varint(h, pf->len);
    char *p = act__out_reserve(pf->o, (size_t)(h - hdr) + pf->len);
    if (p && (size_t)(h - hdr) + pf->len <= ACT__OUT_RESERVE_SAFE) {
        memcpy(p, hdr, (size_t)(h - hdr));
        memcpy(p + (h - hdr), pf->pkt, pf->len);
        act__out_commit(pf->o, p + (h - hdr) + pf->len);
    } else {
        act__out_write(pf->o, hdr, (size_t)(h - hdr));
        act__out_write(pf->o, pf->pkt, pf->len);
    }
    pf->len = 0;
}

/* ---- strings ------------------------------------------------------------------ */

/* @p s as well-formed UTF-8: itself, or a repaired copy in the encoder's
 * scratch buffer @p which (0 or 1: an event's name and its category, or a
 * key and its value, are in use at once), as the JSON writer repairs it. */
static const char *clean(act__pf *pf, int which, const char *s, size_t *n)
{
    if (act__utf8_valid(s, *n))
        return s;
    uint8_t **b = which ? &pf->clean1 : &pf->clean0;
    size_t *cap = which ? &pf->clean1_cap : &pf->clean0_cap;
    if (grow(pf, b, cap, 3 * *n + 1)) {
        *n = 0;
        return "";
    }
    *n = (size_t)(act__utf8_repair((char *)*b, s, *n) - (char *)*b);
    return (const char *)*b;
}

/* ---- interning ------------------------------------------------------------------ */

/* Eight bytes at a time, seeded per encoder (the output never depends on
 * the hash: iids are given in first-use order). */
static inline uint32_t hash_bytes(const act__pf *pf, const char *s, size_t n)
{
    uint64_t h = pf->seed ^ n;
    size_t all = n;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdu;
        h ^= h >> 29;
    }
    if (n) {
        /* The tail without a byte loop: the last 8 bytes of a longer
         * string shifted (bytes hashed before, as the layout demands), or
         * two overlapping 4-byte words, or 3 bytes picked. */
        uint64_t w;
        if (all >= 8) {
            memcpy(&w, s + n - 8, 8);
            w >>= 8 * (8 - n);
        } else {
            w = act__pf_short_word(s, n);
        }
        h = (h ^ w) * 0xff51afd7ed558ccdu;
        h ^= h >> 29;
    }
    h *= 0x9E3779B97F4A7C15u;
    return (uint32_t)(h >> 32);
}

/* The iid of @p s if it is interned already, else 0. */
static inline uint32_t find(const act__pf *pf, const char *s, size_t n, uint32_t h)
{
    if (!pf->tabcap)
        return 0;
    for (size_t j = h & (pf->tabcap - 1); pf->tab[j].s; j = (j + 1) & (pf->tabcap - 1))
        if (pf->tab[j].hash == h && pf->tab[j].len == n && memcmp(pf->tab[j].s, s, n) == 0)
            return pf->tab[j].g;
    return 0;
}

/* The global id (iid) of @p s, or 0 when it is not interned (too long, the
 * table full, out of memory). */
static uint32_t intern(act__pf *pf, const char *s, size_t n)
{
    if (n > INTERN_MAX_LEN)
        return 0;
    uint32_t h = hash_bytes(pf, s, n);
    if ((pf->ntab + 1) * 2 > pf->tabcap) {
        if (pf->ntab >= MAX_INTERNED)
            goto lookup_only;
        size_t ncap = pf->tabcap ? pf->tabcap * 2 : 1024;
        act__pf_str *nt = calloc(ncap, sizeof *nt);
        if (!nt) {
            pf->err = ACT_ENOMEM;
            return 0;
        }
        for (size_t i = 0; i < pf->tabcap; i++) {
            if (!pf->tab[i].s)
                continue;
            size_t j = pf->tab[i].hash & (ncap - 1);
            while (nt[j].s)
                j = (j + 1) & (ncap - 1);
            nt[j] = pf->tab[i];
        }
        free(pf->tab);
        pf->tab = nt;
        pf->tabcap = ncap;
    }
lookup_only:;
    size_t j = h & (pf->tabcap - 1);
    for (; pf->tab[j].s; j = (j + 1) & (pf->tabcap - 1))
        if (pf->tab[j].hash == h && pf->tab[j].len == n && memcmp(pf->tab[j].s, s, n) == 0)
            return pf->tab[j].g;
    if ((pf->ntab + 1) * 2 > pf->tabcap)
        return 0; /* full: inline */
    char *copy = malloc(n + 1);
    if (!copy) {
        pf->err = ACT_ENOMEM;
        return 0;
    }
    if (n)
        memcpy(copy, s, n);
    copy[n] = '\0';
    if (pf->ntab + 2 > pf->gcap) {
        size_t ncap = pf->gcap ? pf->gcap * 2 : 1024;
        act__pf_str *ng = realloc(pf->gstr, ncap * sizeof *ng);
        if (!ng) {
            free(copy);
            pf->err = ACT_ENOMEM;
            return 0;
        }
        pf->gstr = ng;
        pf->gcap = ncap;
    }
    pf->tab[j] = (act__pf_str){copy, (uint32_t)n, h, (uint32_t)(pf->ntab + 1)};
    pf->ntab++;
    pf->gstr[pf->tab[j].g] = pf->tab[j];
    return pf->tab[j].g;
}

/* Add (iid, @p s) to the packet's InternedData field @p field unless the
 * sequence has it already (@p kind bit). */
static void define(act__pf *pf, act__pf_seq *q, uint32_t g, int kind, uint32_t field,
                   const char *s, size_t n)
{
    if (g >= q->ninterned) {
        size_t ncap = q->ninterned ? q->ninterned : 256;
        while (ncap <= g)
            ncap *= 2;
        uint8_t *ni = realloc(q->interned, ncap);
        if (!ni) {
            pf->err = ACT_ENOMEM;
            return;
        }
        memset(ni + q->ninterned, 0, ncap - q->ninterned);
        q->interned = ni;
        q->ninterned = ncap;
    }
    if (q->interned[g] & kind)
        return;
    q->interned[g] |= (uint8_t)kind;
    /* field { iid = 1; name/str = 2 } */
    if (grow(pf, &pf->idata, &pf->icap, pf->ilen + n + 32))
        return;
    uint8_t *p = pf->idata + pf->ilen;
    uint8_t body[16], *b = body;
    b = put_varint(b, 1 << 3 | WT_VARINT);
    b = put_varint(b, g);
    size_t blen = (size_t)(b - body);
    uint8_t nl[10];
    size_t nll = (size_t)(put_varint(nl, n) - nl);
    p = put_varint(p, (uint64_t)field << 3 | WT_LEN);
    p = put_varint(p, blen + 1 + nll + n);
    memcpy(p, body, blen);
    p += blen;
    *p++ = 2 << 3 | WT_LEN;
    memcpy(p, nl, nll);
    p += nll;
    if (n)
        memcpy(p, s, n);
    pf->ilen = (size_t)(p + n - pf->idata);
}

/* ---- sequences ------------------------------------------------------------------ */

static inline act__pf_seq *seq_of(act__pf *pf, uint32_t id)
{
    return id >= 1 && id <= pf->nseqs ? &pf->seqs[id - 1] : NULL;
}

static uint32_t seq_add(act__pf *pf)
{
    if (pf->nseqs == pf->capseqs) {
        size_t ncap = pf->capseqs ? pf->capseqs * 2 : 16;
        act__pf_seq *ns = realloc(pf->seqs, ncap * sizeof *ns);
        if (!ns) {
            pf->err = ACT_ENOMEM;
            return 0;
        }
        pf->seqs = ns;
        pf->capseqs = ncap;
    }
    act__pf_seq *q = &pf->seqs[pf->nseqs++];
    memset(q, 0, sizeof *q);
    q->id = (uint32_t)pf->nseqs;
    /* What every packet after the first says about its sequence. */
    uint8_t *h = q->hdr;
    *h++ = P_SEQ_ID << 3 | WT_VARINT;
    h = put_varint(h, q->id);
    *h++ = P_SEQ_FLAGS << 3 | WT_VARINT;
    *h++ = SEQ_NEEDS;
    q->hdrlen = (uint8_t)(h - q->hdr);
    return q->id;
}

/* The fields every packet of @p q starts with, at @p p (at most
 * PKT_HEAD_MAX bytes): its timestamp (delta on the sequence's clock) when
 * @p has_ts, its sequence id and its flags. */
#define PKT_HEAD_MAX 24u

static inline uint8_t *put_head(act__pf *pf, act__pf_seq *q, uint8_t *p, int has_ts, int64_t ts)
{
    if (has_ts) {
        if (ACT_UNLIKELY(ts < q->last_ts)) {
            pf->backwards++;
            ts = q->last_ts;
        }
        *p++ = P_TIMESTAMP << 3 | WT_VARINT;
        p = put_varint(p, (uint64_t)(ts - q->last_ts));
        q->last_ts = ts;
    }
    if (ACT_LIKELY(q->started)) {
        memcpy(p, q->hdr, sizeof q->hdr);
        return p + q->hdrlen;
    }
    *p++ = P_SEQ_ID << 3 | WT_VARINT;
    p = put_varint(p, q->id);
    *p++ = P_SEQ_FLAGS << 3 | WT_VARINT;
    *p++ = SEQ_CLEARED;
    q->started = 1;
    return p;
}

/* Start a packet on @p q, with its timestamp when @p has_ts. */
static void packet_start(act__pf *pf, act__pf_seq *q, int has_ts, int64_t ts)
{
    pkt_begin(pf);
    uint8_t *p = room(pf, PKT_HEAD_MAX);
    if (!p)
        return;
    pf->len = (size_t)(put_head(pf, q, p, has_ts, ts) - pf->pkt);
}

int act__pf_init(act__pf *pf, act__out *o)
{
    memset(pf, 0, sizeof *pf);
    pf->o = o;
    /* Hash seed: where this encoder lives and when it started, so that a
     * hostile input cannot aim at collisions. */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pf->seed = ((uint64_t)(uintptr_t)pf ^ (uint64_t)now.tv_nsec * 0x9E3779B97F4A7C15u) | 1;
    if (seq_add(pf) != ACT__PF_SEQ_DESC)
        return ACT_ENOMEM;
    return 0;
}

void act__pf_set_out(act__pf *pf, act__out *o)
{
    pf->o = o;
}

void act__pf_clocks(act__pf *pf, int64_t mono, int64_t boot, int64_t real)
{
    act__pf_seq *q = seq_of(pf, ACT__PF_SEQ_DESC);
    packet_start(pf, q, 0, 0);
    open_msg(pf, P_CLOCK_SNAPSHOT);
    const uint32_t ids[3] = {CLOCK_BOOTTIME_ID, CLOCK_MONOTONIC_ID, CLOCK_REALTIME_ID};
    const int64_t ts[3] = {boot, mono, real};
    for (int i = 0; i < 3; i++) {
        open_msg(pf, CS_CLOCKS);
        f_varint(pf, C_ID, ids[i]);
        f_varint(pf, C_TS, (uint64_t)ts[i]);
        close_msg(pf);
    }
    close_msg(pf);
    emit_packet(pf);
}

uint32_t act__pf_seq_new(act__pf *pf, int64_t t0, uint64_t default_track)
{
    uint32_t id = seq_add(pf);
    act__pf_seq *q = seq_of(pf, id);
    if (!q)
        return 0;
    q->default_track = default_track;
    if (t0 < 0)
        t0 = 0;
    packet_start(pf, q, 0, 0);
    open_msg(pf, P_DEFAULTS);
    f_varint(pf, D_CLOCK_ID, CLOCK_SEQ);
    if (default_track) {
        open_msg(pf, D_TRACK_EVENT_DEFAULTS);
        f_varint(pf, TD_TRACK_UUID, default_track);
        close_msg(pf);
    }
    close_msg(pf);
    open_msg(pf, P_CLOCK_SNAPSHOT);
    open_msg(pf, CS_CLOCKS);
    f_varint(pf, C_ID, CLOCK_SEQ);
    f_varint(pf, C_TS, (uint64_t)t0);
    f_varint(pf, C_INCREMENTAL, 1);
    close_msg(pf);
    open_msg(pf, CS_CLOCKS);
    f_varint(pf, C_ID, CLOCK_MONOTONIC_ID);
    f_varint(pf, C_TS, (uint64_t)t0);
    close_msg(pf);
    close_msg(pf);
    emit_packet(pf);
    q->last_ts = t0;
    return id;
}

/* ---- track descriptors ------------------------------------------------------------ */

int act__pf_track_seen(act__pf *pf, uint64_t uuid)
{
    if ((pf->ndef + 1) * 2 > pf->defcap) {
        size_t ncap = pf->defcap ? pf->defcap * 2 : 256;
        uint64_t *nd = calloc(ncap, sizeof *nd);
        if (!nd) {
            pf->err = ACT_ENOMEM;
            return 1;
        }
        for (size_t i = 0; i < pf->defcap; i++) {
            uint64_t k = pf->defined[i];
            if (!k)
                continue;
            size_t j = (size_t)((k * 0x9E3779B97F4A7C15u) >> 20) & (ncap - 1);
            while (nd[j])
                j = (j + 1) & (ncap - 1);
            nd[j] = k;
        }
        free(pf->defined);
        pf->defined = nd;
        pf->defcap = ncap;
    }
    size_t j = (size_t)((uuid * 0x9E3779B97F4A7C15u) >> 20) & (pf->defcap - 1);
    for (; pf->defined[j]; j = (j + 1) & (pf->defcap - 1))
        if (pf->defined[j] == uuid)
            return 1;
    pf->defined[j] = uuid;
    pf->ndef++;
    return 0;
}

static void desc_start(act__pf *pf, uint64_t uuid, uint64_t parent, const char *name, size_t n)
{
    if (name)
        name = clean(pf, 1, name, &n);
    packet_start(pf, seq_of(pf, ACT__PF_SEQ_DESC), 0, 0);
    open_msg(pf, P_TRACK_DESC);
    f_varint(pf, T_UUID, uuid);
    if (parent)
        f_varint(pf, T_PARENT, parent);
    if (name)
        f_bytes(pf, T_NAME, name, n);
}

static void desc_end(act__pf *pf)
{
    close_msg(pf);
    emit_packet(pf);
}

void act__pf_track_process(act__pf *pf, uint64_t uuid, int32_t pid, const char *name, size_t n)
{
    desc_start(pf, uuid, 0, NULL, 0);
    if (name)
        name = clean(pf, 0, name, &n);
    open_msg(pf, T_PROCESS);
    f_varint(pf, PD_PID, (uint64_t)(int64_t)pid);
    if (name)
        f_bytes(pf, PD_NAME, name, n);
    close_msg(pf);
    desc_end(pf);
}

void act__pf_track_thread(act__pf *pf, uint64_t uuid, uint64_t parent, int32_t pid, int32_t tid,
                          const char *name, size_t n)
{
    desc_start(pf, uuid, parent, NULL, 0);
    if (name)
        name = clean(pf, 0, name, &n);
    open_msg(pf, T_THREAD);
    f_varint(pf, TH_PID, (uint64_t)(int64_t)pid);
    f_varint(pf, TH_TID, (uint64_t)(int64_t)tid);
    if (name)
        f_bytes(pf, TH_NAME, name, n);
    close_msg(pf);
    desc_end(pf);
}

void act__pf_track_named(act__pf *pf, uint64_t uuid, uint64_t parent, const char *name, size_t n)
{
    desc_start(pf, uuid, parent, name, n);
    desc_end(pf);
}

void act__pf_track_counter(act__pf *pf, uint64_t uuid, uint64_t parent, const char *name, size_t n,
                           const char *unit)
{
    desc_start(pf, uuid, parent, name, n);
    open_msg(pf, T_COUNTER);
    if (unit && *unit) {
        /* CounterDescriptor.Unit where one fits; the text always. */
        int u = strcmp(unit, "ns") == 0                               ? 1
                : strcmp(unit, "bytes") == 0 || strcmp(unit, "B") == 0 ? 3
                : strcmp(unit, "count") == 0                          ? 2
                                                                      : 0;
        if (u)
            f_varint(pf, CD_UNIT, (uint64_t)u);
        size_t un = strlen(unit);
        const char *uc = clean(pf, 0, unit, &un);
        f_bytes(pf, CD_UNIT_NAME, uc, un);
    }
    close_msg(pf);
    desc_end(pf);
}

/* ---- ends ---------------------------------------------------------------------------- */

static int end_before(const act__pf_end *a, const act__pf_end *b)
{
    return a->t1 < b->t1 || (a->t1 == b->t1 && a->order > b->order);
}

static void heap_push(act__pf *pf, act__pf_seq *q, act__pf_end e)
{
    if (q->nheap == q->capheap) {
        size_t ncap = q->capheap ? q->capheap * 2 : 64;
        act__pf_end *nh = realloc(q->heap, ncap * sizeof *nh);
        if (!nh) {
            pf->err = ACT_ENOMEM;
            return;
        }
        q->heap = nh;
        q->capheap = ncap;
    }
    size_t i = q->nheap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!end_before(&e, &q->heap[p]))
            break;
        q->heap[i] = q->heap[p];
        i = p;
    }
    q->heap[i] = e;
}

static inline act__pf_end heap_pop(act__pf_seq *q)
{
    act__pf_end top = q->heap[0];
    if (q->nheap == 1) { /* flat spans: the usual case */
        q->nheap = 0;
        return top;
    }
    act__pf_end last = q->heap[--q->nheap];
    size_t i = 0, n = q->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && end_before(&q->heap[c + 1], &q->heap[c]))
            c++;
        if (!end_before(&q->heap[c], &last))
            break;
        q->heap[i] = q->heap[c];
        i = c;
    }
    if (n)
        q->heap[i] = last;
    return top;
}

/* An END is always short: written straight into the sink, with one-byte
 * lengths (at most 2 + PKT_HEAD_MAX + 2 + 2 + 11 bytes). */
HOT_INLINE void write_end(act__pf *pf, act__pf_seq *q, const act__pf_end *e)
{
    uint8_t *p0 = (uint8_t *)act__out_reserve(pf->o, 64);
    uint8_t *p = put_head(pf, q, p0 + 2, 1, e->t1);
    if (pf->err)
        return;
    *p++ = P_TRACK_EVENT << 3 | WT_LEN;
    uint8_t *te = p++;
    *p++ = E_TYPE << 3 | WT_VARINT;
    *p++ = ACT__PF_END;
    if (e->track != q->default_track) {
        *p++ = E_TRACK_UUID << 3 | WT_VARINT;
        p = put_varint(p, e->track);
    }
    *te = (uint8_t)(p - te - 1);
    p0[0] = F_TRACE_PACKET << 3 | WT_LEN;
    p0[1] = (uint8_t)(p - p0 - 2);
    act__out_commit(pf->o, (char *)p);
}

/* Write the ENDs of @p q up to @p t (all with @p all). */
HOT_INLINE void flush_ends(act__pf *pf, act__pf_seq *q, int64_t t, int all)
{
    while (q->nheap && (all || q->heap[0].t1 <= t)) {
        act__pf_end e = heap_pop(q);
        write_end(pf, q, &e);
    }
}

void act__pf_seq_flush(act__pf *pf, uint32_t seq)
{
    act__pf_seq *q = seq_of(pf, seq);
    if (q)
        flush_ends(pf, q, 0, 1);
}

/* ---- events ------------------------------------------------------------------------- */

/* Room event_start needs, and room for the two iids that may follow it. */
#define EVENT_HEAD_MAX (PKT_HEAD_MAX + 2 + 2 + 11 + 2 * 6)

/* The start of an event's packet, up to its type and track. 0 when the
 * sequence does not exist. */
/* What comes before any event at @p ts on @p q: the ENDs due by then;
 * for a span, its end @p t1 cut to the innermost open span of @p track. */
HOT_INLINE int64_t event_prep(act__pf *pf, act__pf_seq *q, int type, uint64_t track, int64_t ts,
                                 int64_t t1)
{
    if (type != ACT__PF_COUNTER)
        flush_ends(pf, q, ts, 0);
    if (type == ACT__PF_BEGIN) {
        if (t1 < ts)
            t1 = ts;
        /* Nest inside the innermost open span of the track. */
        const act__pf_end *inner = NULL;
        for (size_t i = 0; i < q->nheap; i++)
            if (q->heap[i].track == track && (!inner || q->heap[i].order > inner->order))
                inner = &q->heap[i];
        if (inner && t1 > inner->t1) {
            t1 = inner->t1;
            pf->clamped++;
        }
    }
    pf->events++;
    return t1;
}

static inline int event_start(act__pf *pf, uint32_t seq, int type, uint64_t track, int64_t ts, int64_t t1)
{
    act__pf_seq *q = seq_of(pf, seq);
    pf->cur = q;
    if (!q)
        return 0;
    if (!track)
        track = q->default_track;
    t1 = event_prep(pf, q, type, track, ts, t1);
    pf->cur_t1 = t1;
    pf->cur_track = track;
    pf->cur_type = type;
    /* The packet's head, the TrackEvent opened (one length byte, patched
     * by close_msg), its type and track: at most EVENT_HEAD_MAX bytes. */
    pkt_begin(pf);
    uint8_t *p = room(pf, EVENT_HEAD_MAX);
    if (!p)
        return 1;
    p = put_head(pf, q, p, 1, ts);
    *p++ = P_TRACK_EVENT << 3 | WT_LEN;
    pf->nest[0] = (size_t)(p - pf->pkt);
    pf->depth = 1;
    *p++ = 0;
    *p++ = E_TYPE << 3 | WT_VARINT;
    *p++ = (uint8_t)type;
    if (track != q->default_track) {
        *p++ = E_TRACK_UUID << 3 | WT_VARINT;
        p = put_varint(p, track);
    }
    pf->len = (size_t)(p - pf->pkt);
    return 1;
}

/* The iid of *@p s (0: not internable), looked up as given first: a hit
 * is valid UTF-8 already (the table holds only repaired strings), so only
 * a new string is checked, and then *@p s, *@p n may become its repaired
 * copy (scratch buffer @p which). */
static uint32_t intern_raw(act__pf *pf, int which, const char **s, size_t *n)
{
    if (*n <= INTERN_MAX_LEN) {
        uint32_t g = find(pf, *s, *n, hash_bytes(pf, *s, *n));
        if (g)
            return g;
    }
    *s = clean(pf, which, *s, n);
    return intern(pf, *s, *n);
}

uint32_t act__pf_intern(act__pf *pf, const char *s, size_t n)
{
    return intern_raw(pf, 0, &s, &n);
}

/* Make sure the current sequence has interned string @p g as @p kind
 * (InternedData field @p ifield) before it is referred to. */
static inline void need_g(act__pf *pf, uint32_t g, int kind, uint32_t ifield)
{
    act__pf_seq *q = pf->cur;
    if (ACT_LIKELY(g < q->ninterned && (q->interned[g] & kind)))
        return;
    define(pf, q, g, kind, ifield, pf->gstr[g].s, pf->gstr[g].len);
}

/* Refer to interned string @p g as @p kind (defined on the sequence first). */
static void use_g(act__pf *pf, uint32_t g, int kind, uint32_t ifield, uint32_t field)
{
    need_g(pf, g, kind, ifield);
    f_varint(pf, field, g);
}

void act__pf_event_g(act__pf *pf, uint32_t seq, int type, uint64_t track, int64_t ts, int64_t t1,
                     uint32_t cat_g, uint32_t name_g)
{
    if (!event_start(pf, seq, type, track, ts, t1) || pf->err)
        return;
    /* event_start left room for both iids (EVENT_HEAD_MAX). */
    uint8_t *p = pf->pkt + pf->len;
    if (cat_g) {
        need_g(pf, cat_g, K_CAT, I_CATEGORIES);
        *p++ = E_CATEGORY_IIDS << 3 | WT_VARINT;
        p = put_varint(p, cat_g);
    }
    need_g(pf, name_g, K_NAME, I_NAMES);
    *p++ = E_NAME_IID << 3 | WT_VARINT;
    p = put_varint(p, name_g);
    pf->len = (size_t)(p - pf->pkt);
}

static void arg_scalar_g(act__pf *pf, uint32_t g, uint32_t field, uint64_t v, int fixed);

/* DebugAnnotation { name_iid = @p g; @p field = @p v } at @p p (a varint
 * value, or with @p fixed 8 bytes): at most ACT__PF_GARG_BYTES bytes, so
 * its length is one byte. */
#define ACT__PF_GARG_BYTES 20
static inline uint8_t *put_scalar_ann(uint8_t *p, uint32_t g, uint32_t field, uint64_t v,
                                      int fixed)
{
    *p++ = E_DEBUG << 3 | WT_LEN;
    uint8_t *at = p++;
    *p++ = A_NAME_IID << 3 | WT_VARINT;
    p = put_varint(p, g);
    if (fixed) {
        p = put_varint(p, (uint64_t)field << 3 | WT_I64);
        for (int i = 0; i < 8; i++)
            *p++ = (uint8_t)(v >> (8 * i));
    } else {
        p = put_varint(p, (uint64_t)field << 3 | WT_VARINT); /* 17: two bytes */
        p = put_varint(p, v);
    }
    *at = (uint8_t)(p - at - 1);
    return p;
}

/* The annotation field of a garg kind, and whether it is 8 bytes. */
static const uint8_t garg_field[] = {0, A_INT, A_UINT, A_DOUBLE, A_BOOL, A_STRING_IID};

static inline int defined_as(const act__pf_seq *q, uint32_t g, int kind)
{
    return g < q->ninterned && (q->interned[g] & kind);
}

/* act__pf_event_args_g, inlined into both entry points so that the
 * argless one (n a constant 0) carries no arg loop. */
HOT_INLINE void event_args_g(act__pf *pf, uint32_t seq, int type, uint64_t track, int64_t ts,
                             int64_t t1, uint32_t cat_g, uint32_t name_g, const act__pf_garg *a,
                             size_t n)
{
    act__pf_seq *q = seq_of(pf, seq);
    if (!q)
        return;
    if (!track)
        track = q->default_track;
    int fast = n <= ACT__PF_GARGS_MAX && !pf->err && type != ACT__PF_COUNTER &&
               defined_as(q, name_g, K_NAME) && (!cat_g || defined_as(q, cat_g, K_CAT));
    for (size_t i = 0; i < n && fast; i++)
        fast = a[i].kind >= ACT__PF_ARG_INT && a[i].kind <= ACT__PF_ARG_STR_IID &&
               defined_as(q, a[i].key_g, K_KEY) &&
               (a[i].kind != ACT__PF_ARG_STR_IID || defined_as(q, (uint32_t)a[i].v, K_VALUE));
    if (ACT_UNLIKELY(!fast)) {
        /* Strings new to the sequence: the general way. */
        act__pf_event_g(pf, seq, type, track, ts, t1, cat_g, name_g);
        for (size_t i = 0; i < n; i++) {
            if (a[i].kind == ACT__PF_ARG_STR_IID)
                act__pf_arg_str_iid(pf, a[i].key_g, (uint32_t)a[i].v);
            else if (a[i].kind >= ACT__PF_ARG_INT && a[i].kind < ACT__PF_ARG_STR_IID)
                arg_scalar_g(pf, a[i].key_g, garg_field[a[i].kind], a[i].v,
                             a[i].kind == ACT__PF_ARG_DOUBLE);
        }
        act__pf_event_end(pf);
        return;
    }
    t1 = event_prep(pf, q, type, track, ts, t1);
    /* Straight into the sink: at most 2 + PKT_HEAD_MAX + 4 + 11 + 12 bytes
     * and ACT__PF_GARG_BYTES per arg, so both lengths are one byte. */
    uint8_t *p0 = (uint8_t *)act__out_reserve(pf->o, 64 + ACT__PF_GARGS_MAX * ACT__PF_GARG_BYTES);
    uint8_t *p = put_head(pf, q, p0 + 2, 1, ts);
    *p++ = P_TRACK_EVENT << 3 | WT_LEN;
    uint8_t *te = p++;
    *p++ = E_TYPE << 3 | WT_VARINT;
    *p++ = (uint8_t)type;
    if (track != q->default_track) {
        *p++ = E_TRACK_UUID << 3 | WT_VARINT;
        p = put_varint(p, track);
    }
    if (cat_g) {
        *p++ = E_CATEGORY_IIDS << 3 | WT_VARINT;
        p = put_varint(p, cat_g);
    }
    *p++ = E_NAME_IID << 3 | WT_VARINT;
    p = put_varint(p, name_g);
    for (size_t i = 0; i < n; i++)
        p = put_scalar_ann(p, a[i].key_g, garg_field[a[i].kind], a[i].v,
                           a[i].kind == ACT__PF_ARG_DOUBLE);
    *te = (uint8_t)(p - te - 1);
    p0[0] = F_TRACE_PACKET << 3 | WT_LEN;
    p0[1] = (uint8_t)(p - p0 - 2);
    act__out_commit(pf->o, (char *)p);
    if (type == ACT__PF_BEGIN) {
        if (q->nheap == 0 && q->capheap) { /* flat spans: the usual case */
            q->heap[0] = (act__pf_end){t1, track, ++pf->order};
            q->nheap = 1;
        } else {
            heap_push(pf, q, (act__pf_end){t1, track, ++pf->order});
        }
    }
}

void act__pf_event_args_g(act__pf *pf, uint32_t seq, int type, uint64_t track, int64_t ts,
                          int64_t t1, uint32_t cat_g, uint32_t name_g, const act__pf_garg *a,
                          size_t n)
{
    event_args_g(pf, seq, type, track, ts, t1, cat_g, name_g, a, n);
}

void act__pf_event_whole_g(act__pf *pf, uint32_t seq, int type, uint64_t track, int64_t ts,
                           int64_t t1, uint32_t cat_g, uint32_t name_g)
{
    event_args_g(pf, seq, type, track, ts, t1, cat_g, name_g, NULL, 0);
}

void act__pf_event(act__pf *pf, uint32_t seq, int type, uint64_t track, int64_t ts, int64_t t1,
                   const char *cat, size_t catn, const char *name, size_t namen)
{
    if (!event_start(pf, seq, type, track, ts, t1) || type == ACT__PF_COUNTER)
        return;
    act__pf_seq *q = pf->cur;
    if (cat) {
        uint32_t g = intern_raw(pf, 1, &cat, &catn);
        if (g) {
            define(pf, q, g, K_CAT, I_CATEGORIES, cat, catn);
            f_varint(pf, E_CATEGORY_IIDS, g);
        } else {
            f_bytes(pf, E_CATEGORIES, cat, catn);
        }
    }
    uint32_t g = intern_raw(pf, 0, &name, &namen);
    if (g) {
        define(pf, q, g, K_NAME, I_NAMES, name, namen);
        f_varint(pf, E_NAME_IID, g);
    } else {
        f_bytes(pf, E_NAME, name, namen);
    }
}

static void arg_start_g(act__pf *pf, uint32_t g)
{
    open_msg(pf, E_DEBUG);
    use_g(pf, g, K_KEY, I_ANN_NAMES, A_NAME_IID);
}

/* A DebugAnnotation { name_iid = @p g; @p field = @p v } whose value is a
 * varint (or, with @p fixed, 8 bytes): never longer than 127 bytes, so
 * written at once with a one-byte length. */
static void arg_scalar_g(act__pf *pf, uint32_t g, uint32_t field, uint64_t v, int fixed)
{
    if (!pf->cur)
        return;
    need_g(pf, g, K_KEY, I_ANN_NAMES);
    uint8_t *p = room(pf, 32);
    if (!p)
        return;
    pf->len = (size_t)(put_scalar_ann(p, g, field, v, fixed) - pf->pkt);
}

void act__pf_arg_int_g(act__pf *pf, uint32_t key_g, int64_t v)
{
    arg_scalar_g(pf, key_g, A_INT, (uint64_t)v, 0);
}

void act__pf_arg_uint_g(act__pf *pf, uint32_t key_g, uint64_t v)
{
    arg_scalar_g(pf, key_g, A_UINT, v, 0);
}

void act__pf_arg_double_g(act__pf *pf, uint32_t key_g, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    arg_scalar_g(pf, key_g, A_DOUBLE, bits, 1);
}

void act__pf_arg_bool_g(act__pf *pf, uint32_t key_g, int v)
{
    arg_scalar_g(pf, key_g, A_BOOL, v != 0, 0);
}

/* Values this short are interned. */
#define VALUE_INTERN_MAX 64u

/* A string value: by iid when it is short, else inline. @p looked: the
 * caller found it is not interned yet. */
static void str_value(act__pf *pf, const char *s, size_t n, int looked)
{
    /* A value interned already needs no UTF-8 check: the table holds only
     * repaired strings, so raw bytes equal to one are valid. */
    uint32_t g = !looked && pf->cur && n <= VALUE_INTERN_MAX ? find(pf, s, n, hash_bytes(pf, s, n)) : 0;
    if (!g) {
        s = clean(pf, 1, s, &n);
        g = pf->cur && n <= VALUE_INTERN_MAX ? intern(pf, s, n) : 0;
    }
    if (g) {
        define(pf, pf->cur, g, K_VALUE, I_STRING_VALUES, s, n);
        f_varint(pf, A_STRING_IID, g);
    } else {
        f_bytes(pf, A_STRING, s, n);
    }
}

uint32_t act__pf_value_iid(act__pf *pf, const char *s, size_t n)
{
    if (n > VALUE_INTERN_MAX)
        return 0;
    /* A value interned already needs no UTF-8 check (see str_value). */
    uint32_t g = find(pf, s, n, hash_bytes(pf, s, n));
    if (g)
        return g;
    s = clean(pf, 1, s, &n);
    return n <= VALUE_INTERN_MAX ? intern(pf, s, n) : 0;
}

void act__pf_arg_str_iid(act__pf *pf, uint32_t key_g, uint32_t val_g)
{
    if (!pf->cur)
        return;
    need_g(pf, val_g, K_VALUE, I_STRING_VALUES);
    arg_scalar_g(pf, key_g, A_STRING_IID, val_g, 0);
}

const char *act__pf_string(const act__pf *pf, uint32_t g, size_t *n)
{
    *n = pf->gstr[g].len;
    return pf->gstr[g].s;
}

void act__pf_arg_str_g(act__pf *pf, uint32_t key_g, const char *s, size_t n)
{
    if (!pf->cur)
        return;
    /* The usual value: short, so as short as an int. */
    uint32_t g = act__pf_value_iid(pf, s, n);
    if (g) {
        act__pf_arg_str_iid(pf, key_g, g);
        return;
    }
    arg_start_g(pf, key_g);
    str_value(pf, s, n, 1);
    close_msg(pf);
}

static void arg_start(act__pf *pf, const char *key, size_t kn)
{
    open_msg(pf, E_DEBUG);
    uint32_t g = pf->cur ? intern_raw(pf, 0, &key, &kn) : 0;
    if (!pf->cur)
        key = clean(pf, 0, key, &kn);
    if (g) {
        define(pf, pf->cur, g, K_KEY, I_ANN_NAMES, key, kn);
        f_varint(pf, A_NAME_IID, g);
    } else {
        f_bytes(pf, A_NAME, key, kn);
    }
}

/* A DebugAnnotation of a scalar (as arg_scalar_g) under key @p key: by the
 * key's iid when it can be interned (the bytes arg_start would give). */
static void arg_scalar(act__pf *pf, const char *key, size_t kn, uint32_t field, uint64_t v,
                       int fixed)
{
    uint32_t g = pf->cur ? intern_raw(pf, 0, &key, &kn) : 0;
    if (g) {
        arg_scalar_g(pf, g, field, v, fixed);
        return;
    }
    if (!pf->cur)
        key = clean(pf, 0, key, &kn);
    open_msg(pf, E_DEBUG);
    f_bytes(pf, A_NAME, key, kn);
    if (fixed)
        f_fixed64(pf, field, v);
    else
        f_varint(pf, field, v);
    close_msg(pf);
}

void act__pf_arg_int(act__pf *pf, const char *key, size_t kn, int64_t v)
{
    arg_scalar(pf, key, kn, A_INT, (uint64_t)v, 0);
}

void act__pf_arg_uint(act__pf *pf, const char *key, size_t kn, uint64_t v)
{
    arg_scalar(pf, key, kn, A_UINT, v, 0);
}

void act__pf_arg_double(act__pf *pf, const char *key, size_t kn, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    arg_scalar(pf, key, kn, A_DOUBLE, bits, 1);
}

void act__pf_arg_bool(act__pf *pf, const char *key, size_t kn, int v)
{
    arg_scalar(pf, key, kn, A_BOOL, v != 0, 0);
}

void act__pf_arg_str(act__pf *pf, const char *key, size_t kn, const char *s, size_t n)
{
    arg_start(pf, key, kn);
    str_value(pf, s, n, 0);
    close_msg(pf);
}

void act__pf_arg_json(act__pf *pf, const char *key, size_t kn, const char *s, size_t n)
{
    arg_start(pf, key, kn);
    f_bytes(pf, A_JSON, s, n);
    close_msg(pf);
}

void act__pf_counter_value(act__pf *pf, double v)
{
    f_double(pf, E_DOUBLE_COUNTER, v);
}

void act__pf_flow(act__pf *pf, uint64_t id, int terminating)
{
    f_fixed64(pf, terminating ? E_TERM_FLOW_IDS : E_FLOW_IDS, id);
}

void act__pf_event_end(act__pf *pf)
{
    act__pf_seq *q = pf->cur;
    if (!q)
        return;
    if (ACT_LIKELY(pf->depth == 1 && pf->inplace && !pf->ilen && !pf->err && pf->len < 0x80)) {
        /* The usual event: one open TrackEvent, nothing newly interned,
         * shorter than 128 bytes: patch both lengths and commit. */
        pf->pkt[pf->nest[0]] = (uint8_t)(pf->len - pf->nest[0] - 1);
        pf->pkt[-2] = F_TRACE_PACKET << 3 | WT_LEN;
        pf->pkt[-1] = (uint8_t)pf->len;
        act__out_commit(pf->o, (char *)pf->pkt + pf->len);
        pf->len = 0;
        pf->depth = 0;
        pf->inplace = 0;
    } else {
        while (pf->depth)
            close_msg(pf);
        emit_packet(pf);
    }
    if (pf->cur_type == ACT__PF_BEGIN)
        heap_push(pf, q, (act__pf_end){pf->cur_t1, pf->cur_track, ++pf->order});
    pf->cur = NULL;
}

int act__pf_finish(act__pf *pf)
{
    for (size_t i = 0; i < pf->nseqs; i++)
        flush_ends(pf, &pf->seqs[i], 0, 1);
    return pf->err;
}

void act__pf_free(act__pf *pf)
{
    for (size_t i = 0; i < pf->nseqs; i++) {
        free(pf->seqs[i].interned);
        free(pf->seqs[i].heap);
    }
    for (size_t i = 0; i < pf->tabcap; i++)
        free(pf->tab[i].s);
    free(pf->seqs);
    free(pf->tab);
    free(pf->gstr);
    free(pf->defined);
    free(pf->heap);
    free(pf->idata);
    free(pf->clean0);
    free(pf->clean1);
    memset(pf, 0, sizeof *pf);
}
