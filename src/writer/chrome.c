/* SPDX-License-Identifier: MIT */
/*
 * The Chrome Trace Event JSON writer (DESIGN.md section 6), in Kineto's
 * layout: schemaVersion, deviceProperties, metadata keys, displayTimeUnit,
 * baseTimeNanoseconds, traceEvents, distributedInfo, actraceStats,
 * traceName. Compact, one event per line.
 *
 * It streams: events are formatted straight from the session's chunks into
 * the sink, so memory stays flat however large the trace. Extra memory is
 * taken only for what needs a global view: the escaped-name cache, the
 * correlation ids of plugin records (to pair flows), counter samples (to
 * give every sample of a track the same series), and an order index for a
 * thread whose events were recorded out of start order.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "plugin/loader.h"
#include "writer/json_out.h"

/* Device processes get pids above any Linux pid (pid_max <= 2^22). */
#define DEVICE_PID_BASE 0x40000000u
/* Strings longer than this are streamed instead of reserved at once. */
#define SMALL_STR 4096u

typedef struct name_ent {
    char *json; /* quoted, escaped */
    uint32_t len;
} name_ent;

/* A set of 64-bit keys (flow correlation ids), open addressing, 0 = empty. */
typedef struct keyset {
    uint64_t *slot;
    size_t cap, n;
} keyset;

typedef struct wctx {
    act_session *s;
    act__out *o;
    int64_t base_unix_ns; /* baseTimeNanoseconds */
    int64_t to_rel_ns;    /* add to a monotonic time: ns since base */
    int32_t pid;
    name_ent *names;
    size_t nnames;
    keyset host_corr, dev_corr;
    name_ent prefix[ACT__NTYPE_SLOTS + 1][2]; /* host event starts, by type and kind */
    name_ent unnamed;                         /* "(unnamed)" */
    char pidtid[64]; /* ,"pid":P,"tid":T,"ts":  of the thread being written */
    uint32_t pidtid_len;
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
    /* Counter samples written, and C events they were written in. */
    uint64_t counter_samples, counter_events;
    int oom;
} wctx;

/* ---- small helpers -------------------------------------------------------- */

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

static void lit(act__out *o, const char *s)
{
    act__out_write(o, s, strlen(s));
}

static void put_i64(act__out *o, int64_t v)
{
    char *p = act__out_reserve(o, ACT__FMT_I64_MAX);
    act__out_commit(o, act__fmt_i64(p, v));
}

static void put_u64(act__out *o, uint64_t v)
{
    char *p = act__out_reserve(o, ACT__FMT_U64_MAX);
    act__out_commit(o, act__fmt_u64(p, v));
}

static void put_double(act__out *o, double v)
{
    char *p = act__out_reserve(o, ACT__FMT_DOUBLE_MAX);
    act__out_commit(o, act__fmt_double(p, v));
}

static void put_str0(act__out *o, const char *s)
{
    act__out_str(o, s, strlen(s));
}

static inline char *cpy(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}
#define CPY(p, lit) cpy((p), (lit), sizeof(lit) - 1)

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

static size_t smap_slot(const wctx *w, uint32_t device, uint64_t stream)
{
    size_t j = mix(stream ^ ((uint64_t)device << 40) ^ device) & (w->smap_cap - 1);
    while (w->smap[j].tid &&
           (w->smap[j].stream != stream || w->smap[j].device != device))
        j = (j + 1) & (w->smap_cap - 1);
    return j;
}

/* Insert (device, stream) with a provisional tid of 1; dense tids are
 * assigned once every stream is known. */
static int smap_add(wctx *w, uint32_t device, uint64_t stream)
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

static uint32_t stream_tid(const wctx *w, uint32_t device, uint64_t stream)
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

/* ---- names ----------------------------------------------------------------- */

/* The escaped JSON of an interned name, cached per write. */
static const name_ent *interned(wctx *w, act_name_id id)
{
    static const name_ent empty = {"\"\"", 2};
    /* Ids are dense, so the cache never grows past the names that exist;
     * an id act_name() never returned is an empty name. */
    if (!act__name_known(id))
        return &empty;
    if (id >= w->nnames) {
        size_t ncap = w->nnames ? w->nnames : 256;
        while (ncap <= id)
            ncap *= 2;
        name_ent *nn = realloc(w->names, ncap * sizeof *nn);
        if (!nn) {
            w->oom = 1;
            return &empty;
        }
        memset(nn + w->nnames, 0, (ncap - w->nnames) * sizeof *nn);
        w->names = nn;
        w->nnames = ncap;
    }
    name_ent *e = &w->names[id];
    if (!e->json) {
        uint32_t len;
        const char *s = act__name_str(id, &len);
        size_t bound = ACT__JSON_STR_MAX(len);
        e->json = malloc(bound);
        if (!e->json) {
            w->oom = 1;
            return &empty;
        }
        e->len = (uint32_t)(act__json_str(e->json, s, len) - e->json);
    }
    return e;
}

/* Write a name ref (interned or local to chunk @p c) as a JSON string. */
static void put_ref(wctx *w, const act__chunk *c, uint32_t ref)
{
    if (ref & ACT__REF_LOCAL) {
        uint32_t len;
        const char *s = act__chunk_str(c, ref, &len);
        if (len <= SMALL_STR) {
            char *p = act__out_reserve(w->o, ACT__JSON_STR_MAX(len));
            act__out_commit(w->o, act__json_str(p, s, len));
        } else {
            act__out_str(w->o, s, len);
        }
    } else {
        const name_ent *e = interned(w, ref);
        act__out_write(w->o, e->json, e->len);
    }
}

/* An event's name: viewers treat "" as a missing name, so an empty one is
 * written as "(unnamed)". */
static void put_name(wctx *w, const act__chunk *c, uint32_t ref)
{
    uint32_t len = 0;
    if (ref & ACT__REF_LOCAL)
        act__chunk_str(c, ref, &len);
    else if (ref)
        act__name_str(ref, &len);
    if (len == 0)
        lit(w->o, "\"(unnamed)\"");
    else
        put_ref(w, c, ref);
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

static const char *category(const wctx *w, uint16_t source, int type)
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

/* ---- events ---------------------------------------------------------------- */

/* The end of @p r given its end field @p t1, loaded once by the caller (an
 * open span may be ended by its thread while the writer runs). */
static int64_t end_at(const wctx *w, const act__rec *r, int64_t t1)
{
    if (t1 == ACT__OPEN) {
        t1 = w->s->stop_mono_ns;
        if (t1 < r->t0)
            t1 = r->t0;
    }
    return t1;
}

static int64_t end_of(const wctx *w, const act__rec *r)
{
    return end_at(w, r, atomic_load_explicit(&((act__rec *)r)->t1, memory_order_relaxed));
}

static void put_value(wctx *w, const act__chunk *c, uint8_t kind, uint64_t x)
{
    act__out *o = w->o;
    switch (kind) {
    case ACT__V_INT: put_i64(o, (int64_t)x); break;
    case ACT__V_UINT: put_u64(o, x); break;
    case ACT__V_DOUBLE: {
        double d;
        memcpy(&d, &x, sizeof d);
        put_double(o, d); /* non-finite becomes null: never NaN in the file */
        break;
    }
    case ACT__V_BOOL: lit(o, x ? "true" : "false"); break;
    case ACT__V_STR: put_ref(w, c, (uint32_t)x); break;
    default: lit(o, "null"); break;
    }
}

/* Position of a record: its chunk and index. */
typedef struct rpos {
    const act__chunk *c;
    uint32_t i;
    uint64_t seq; /* order of recording, for a total order when sorting */
    int64_t t1;   /* end loaded once when sorting (INT64_MAX: open), so the
                     comparator stays consistent if a span ends meanwhile */
} rpos;

/* Step to the record after @p p; 0 at the end of what was committed. */
static int next_pos(rpos *p)
{
    if (p->i + 1 < atomic_load_explicit(&((act__chunk *)p->c)->used, memory_order_acquire)) {
        p->i++;
        return 1;
    }
    for (const act__chunk *c = atomic_load_explicit(&((act__chunk *)p->c)->next, memory_order_acquire);
         c; c = atomic_load_explicit(&((act__chunk *)c)->next, memory_order_acquire)) {
        if (atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire)) {
            p->c = c;
            p->i = 0;
            return 1;
        }
    }
    return 0;
}

/* Bytes of an arg key ref inside chunk @p c. */
static const char *arg_key(const act__chunk *c, uint32_t ref, uint32_t *len)
{
    if (ref & ACT__REF_LOCAL)
        return act__chunk_str(c, ref, len);
    return act__name_str(ref, len);
}

static int key_is(const char *k, uint32_t n, const char *lit0)
{
    return strlen(lit0) == n && memcmp(k, lit0, n) == 0;
}

/* Walks the args after an event: an ARG record holds one or two
 * (engine.h). */
typedef struct aiter {
    rpos p;
    int slot; /* of p: 0 first, 1 second (or p is the event) */
    int done;
    /* the current arg */
    const act__chunk *c;
    uint32_t key;
    uint8_t kind;
    uint64_t val;
} aiter;

static aiter args_of(rpos event)
{
    aiter it;
    memset(&it, 0, sizeof it);
    it.p = event;
    it.slot = 1;
    return it;
}

/* Step to the next arg; 0 after the last. */
static int next_arg(aiter *it)
{
    if (it->done)
        return 0;
    if (it->slot == 0) {
        const act__rec *a = &it->p.c->recs[it->p.i];
        int64_t t1 = atomic_load_explicit(&((act__rec *)a)->t1, memory_order_acquire);
        if (t1 & ACT__ARG2_PRESENT) {
            it->slot = 1;
            it->c = it->p.c;
            it->key = (uint32_t)t1;
            it->kind = (uint8_t)(t1 >> 32);
            it->val = (uint64_t)a->t0;
            return 1;
        }
    }
    rpos q = it->p;
    if (!next_pos(&q) || q.c->recs[q.i].kind != ACT__R_ARG) {
        it->done = 1;
        return 0;
    }
    const act__rec *a = &q.c->recs[q.i];
    it->p = q;
    it->slot = 0;
    it->c = q.c;
    it->key = a->name;
    it->kind = a->flags;
    it->val = a->x;
    return 1;
}

/* Write the args following @p at as `,"key":value` pairs. JSON
 * object keys should be unique (RFC 8259) and strict parsers reject
 * duplicates, so a key given twice keeps its last value, and keys the
 * writer already wrote (@p reserved, NULL-terminated) are skipped. */
static int put_args(wctx *w, rpos at, int first, const char *const *reserved)
{
    aiter it = args_of(at);
    while (next_arg(&it)) {
        uint32_t klen;
        const char *key = arg_key(it.c, it.key, &klen);
        int skip = 0;
        for (const char *const *r = reserved; r && *r && !skip; r++)
            skip = key_is(key, klen, *r);
        /* A later arg with the same key wins; look ahead a bounded way. */
        aiter q = it;
        for (int k = 0; k < 64 && !skip && next_arg(&q); k++) {
            uint32_t l2;
            const char *k2 = arg_key(q.c, q.key, &l2);
            skip = l2 == klen && memcmp(k2, key, klen) == 0;
        }
        if (skip)
            continue;
        if (!first)
            act__out_char(w->o, ',');
        first = 0;
        put_ref(w, it.c, it.key);
        act__out_char(w->o, ':');
        put_value(w, it.c, it.kind, it.val);
    }
    return first;
}

static void put_ts(act__out *o, const char *key, size_t keylen, int64_t rel_ns)
{
    char *p = act__out_reserve(o, keylen + ACT__FMT_TS_MAX);
    p = cpy(p, key, keylen);
    act__out_commit(o, act__fmt_ts_us(p, rel_ns));
}

/* pid/tid of a device stream or a host thread named by a plugin. */
static void emit_ids(const wctx *w, const act__rec *aux, int32_t *pid, uint32_t *tid,
                     uint16_t *source, uint32_t *device, uint64_t *corr)
{
    *device = (uint32_t)aux->x;
    *source = (uint16_t)(aux->x >> 32);
    *corr = (uint64_t)atomic_load_explicit(&((act__rec *)aux)->t1, memory_order_relaxed);
    uint64_t stream = (uint64_t)aux->t0;
    if (*device == ACT__HOST_DEVICE) {
        *pid = w->pid;
        *tid = (uint32_t)stream & 0x7fffffffu;
    } else {
        *pid = (int32_t)(DEVICE_PID_BASE + *device);
        *tid = stream_tid(w, *device, stream);
    }
}

/* One host event (span or instant) of thread @p t. */
/* The constant start of a host event of @p type and @p kind:
 * {"ph":"X","cat":"cpu_op","name":  (cached per write). */
static const name_ent *host_prefix(wctx *w, int type, uint8_t kind)
{
    static const name_ent none = {"", 0};
    int slot = act__type_slot(type);
    if (slot < 0)
        slot = ACT__NTYPE_SLOTS; /* not a type: cannot be recorded, but be safe */
    name_ent *e = &w->prefix[slot][kind == ACT__R_SPAN];
    if (!e->json) {
        const char *cat = category(w, 0, type);
        size_t n = strlen(cat) * 6 + 64;
        e->json = malloc(n);
        if (!e->json) {
            w->oom = 1;
            return &none;
        }
        char *p = e->json;
        p = kind == ACT__R_SPAN ? CPY(p, "{\"ph\":\"X\",\"cat\":")
                                : CPY(p, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":");
        p = act__json_str(p, cat, strlen(cat));
        p = CPY(p, ",\"name\":");
        e->len = (uint32_t)(p - e->json);
    }
    return e;
}

/* One host event (span or instant) of the thread whose ids are in
 * w->pidtid. The common case (interned or short name, no args) is one
 * reservation and a handful of copies. */
static void emit_host(wctx *w, rpos at)
{
    const act__rec *r = &at.c->recs[at.i];
    act__out *o = w->o;
    const name_ent *pre = host_prefix(w, r->type, r->kind);
    const name_ent *nm = NULL;
    if (!(r->name & ACT__REF_LOCAL)) {
        nm = interned(w, r->name);
        if (nm->len <= 2)
            nm = &w->unnamed;
    }
    size_t name_max = nm ? nm->len : 0;
    char *p = act__out_reserve(o, pre->len + name_max + w->pidtid_len + 2 * ACT__FMT_TS_MAX + 16);
    p = cpy(p, pre->json, pre->len);
    if (nm) {
        p = cpy(p, nm->json, nm->len);
    } else {
        act__out_commit(o, p);
        put_name(w, at.c, r->name);
        p = act__out_reserve(o, w->pidtid_len + 2 * ACT__FMT_TS_MAX + 16);
    }
    p = cpy(p, w->pidtid, w->pidtid_len);
    p = act__fmt_ts_us(p, r->t0 + w->to_rel_ns);
    int open = 0;
    if (r->kind == ACT__R_SPAN) {
        int64_t t1 = atomic_load_explicit(&((act__rec *)r)->t1, memory_order_relaxed);
        open = t1 == ACT__OPEN;
        p = CPY(p, ",\"dur\":");
        p = act__fmt_ts_us(p, end_at(w, r, t1) - r->t0);
    }
    rpos look = at;
    int has_args = next_pos(&look) && look.c->recs[look.i].kind == ACT__R_ARG;
    if (!(r->x || open || has_args)) {
        p = CPY(p, "},\n");
        act__out_commit(o, p);
        return;
    }
    act__out_commit(o, p);
    /* Args: the external correlation first (Kineto's "External id"). */
    lit(o, ",\"args\":{");
    int first = 1;
    if (r->x) {
        lit(o, "\"External id\":");
        put_u64(o, r->x);
        first = 0;
    }
    if (open) {
        lit(o, first ? "\"unfinished\":true" : ",\"unfinished\":true");
        first = 0;
    }
    static const char *const host_reserved[] = {"External id", "unfinished", NULL};
    put_args(w, at, first, host_reserved);
    lit(o, "}},\n");
}

/* One plugin record (with its AUX_DEV record right after it). */
static void emit_plugin(wctx *w, rpos at)
{
    const act__rec *r = &at.c->recs[at.i];
    rpos ap = at;
    if (!next_pos(&ap) || ap.c->recs[ap.i].kind != ACT__R_AUX_DEV)
        return; /* torn group: cannot happen for committed records */
    const act__rec *aux = &ap.c->recs[ap.i];
    int32_t pid;
    uint32_t tid, device;
    uint16_t source;
    uint64_t corr;
    emit_ids(w, aux, &pid, &tid, &source, &device, &corr);
    if (device == ACT__HOST_DEVICE && w->moved.n && keyset_has(&w->moved, (uint64_t)(uintptr_t)r))
        tid = side_tid(source, tid);
    act__emit_kind kind = (act__emit_kind)aux->flags;
    act__out *o = w->o;
    const char *cat = category(w, source, r->type);
    lit(o, r->kind == ACT__R_EMIT_SPAN ? "{\"ph\":\"X\",\"cat\":" : "{\"ph\":\"i\",\"s\":\"t\",\"cat\":");
    put_str0(o, cat);
    lit(o, ",\"name\":");
    put_name(w, at.c, r->name);
    lit(o, ",\"pid\":");
    put_i64(o, pid);
    lit(o, ",\"tid\":");
    put_u64(o, tid);
    put_ts(o, ",\"ts\":", 6, r->t0 + w->to_rel_ns);
    if (r->kind == ACT__R_EMIT_SPAN)
        put_ts(o, ",\"dur\":", 7, end_of(w, r) - r->t0);
    lit(o, ",\"args\":{");
    if (r->x) {
        lit(o, "\"External id\":");
        put_u64(o, r->x);
        act__out_char(o, ',');
    }
    if (corr) {
        lit(o, "\"correlation\":");
        put_u64(o, corr);
        act__out_char(o, ',');
    }
    if (device != ACT__HOST_DEVICE) {
        lit(o, "\"device\":");
        put_u64(o, device);
        lit(o, ",\"stream\":");
        put_u64(o, (uint64_t)aux->t0);
        act__out_char(o, ',');
    }
    lit(o, "\"backend\":");
    put_str0(o, source < w->s->nsources ? w->s->sources[source].backend : "");
    static const char *const plugin_reserved[] = {"External id", "correlation", "device",
                                                  "stream", "backend", NULL};
    put_args(w, ap, 0, plugin_reserved);
    lit(o, "}},\n");

    /* Flow from the API call to the device work it launched ("ac2g"). */
    if (!corr || r->kind != ACT__R_EMIT_SPAN)
        return;
    uint64_t key = flow_id(source, corr);
    int host_side = kind == ACT__EMIT_HOST_SPAN;
    if (host_side ? keyset_has(&w->dev_corr, key) : keyset_has(&w->host_corr, key)) {
        lit(o, host_side ? "{\"ph\":\"s\",\"id\":" : "{\"ph\":\"f\",\"bp\":\"e\",\"id\":");
        put_u64(o, key);
        lit(o, ",\"pid\":");
        put_i64(o, pid);
        lit(o, ",\"tid\":");
        put_u64(o, tid);
        put_ts(o, ",\"ts\":", 6, r->t0 + w->to_rel_ns);
        lit(o, ",\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n");
    }
}

static void emit_at(wctx *w, rpos at)
{
    switch (at.c->recs[at.i].kind) {
    case ACT__R_SPAN:
    case ACT__R_INSTANT: emit_host(w, at); break;
    case ACT__R_EMIT_SPAN:
    case ACT__R_EMIT_INSTANT: emit_plugin(w, at); break;
    default: break;
    }
}

static int is_event(uint8_t kind)
{
    return kind == ACT__R_SPAN || kind == ACT__R_INSTANT || kind == ACT__R_EMIT_SPAN ||
           kind == ACT__R_EMIT_INSTANT;
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
    const act__rec *rx = &x->c->recs[x->i], *ry = &y->c->recs[y->i];
    if (rx->t0 != ry->t0)
        return rx->t0 < ry->t0 ? -1 : 1;
    /* Same start: the longer (the parent) first. */
    int64_t dx = x->t1, dy = y->t1;
    if (dx != dy)
        return dx > dy ? -1 : 1;
    /* Keep recording order otherwise (qsort is not stable). */
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void scan_thread(wctx *w, const act__thread *t, tscan *sc)
{
    memset(sc, 0, sizeof *sc);
    sc->sorted = 1;
    sc->min_t0 = INT64_MAX;
    int64_t prev_t0 = INT64_MIN, prev_t1 = INT64_MAX;
    for (const act__chunk *c = t->head; c; c = atomic_load_explicit(&((act__chunk *)c)->next, memory_order_acquire)) {
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
                    if ((uint64_t)r->t0 > STREAM_TID_MAX && dev < w->ndev)
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
                if (r->kind == ACT__R_COUNTER && r->t0 < sc->min_t0)
                    sc->min_t0 = r->t0;
                continue;
            }
            sc->events++;
            if (r->t0 < sc->min_t0)
                sc->min_t0 = r->t0;
            int64_t t1 = atomic_load_explicit(&((act__rec *)r)->t1, memory_order_relaxed);
            if (t1 == ACT__OPEN)
                t1 = INT64_MAX;
            if (r->t0 < prev_t0 || (r->t0 == prev_t0 && t1 > prev_t1))
                sc->sorted = 0;
            prev_t0 = r->t0;
            prev_t1 = t1;
        }
    }
}

static void emit_thread(wctx *w, const act__thread *t, const tscan *sc)
{
    char *p = w->pidtid;
    p = CPY(p, ",\"pid\":");
    p = act__fmt_i64(p, t->pid);
    p = CPY(p, ",\"tid\":");
    p = act__fmt_i64(p, t->tid);
    p = CPY(p, ",\"ts\":");
    w->pidtid_len = (uint32_t)(p - w->pidtid);
    if (!sc->sorted) {
        /* Recorded out of start order (caller-supplied times): sort this
         * thread's events so that parents precede children. */
        rpos *idx = malloc(sc->events * sizeof *idx);
        if (idx) {
            size_t k = 0;
            for (const act__chunk *c = t->head; c; c = atomic_load_explicit(&((act__chunk *)c)->next, memory_order_acquire)) {
                uint32_t n = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
                for (uint32_t i = 0; i < n && k < sc->events; i++)
                    if (is_event(c->recs[i].kind)) {
                        int64_t t1 = atomic_load_explicit(&((act__rec *)&c->recs[i])->t1,
                                                          memory_order_relaxed);
                        idx[k] = (rpos){c, i, k, t1 == ACT__OPEN ? INT64_MAX : t1};
                        k++;
                    }
            }
            qsort(idx, k, sizeof *idx, cmp_pos);
            for (size_t i = 0; i < k; i++)
                emit_at(w, idx[i]);
            free(idx);
            return;
        }
        w->oom = 1; /* fall through: unsorted but complete */
    }
    for (const act__chunk *c = t->head; c; c = atomic_load_explicit(&((act__chunk *)c)->next, memory_order_acquire)) {
        uint32_t n = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
        for (uint32_t i = 0; i < n; i++)
            if (is_event(c->recs[i].kind))
                emit_at(w, (rpos){c, i, 0, 0});
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
static void plan_streams(wctx *w, act__thread **threads, size_t nthreads)
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
        for (const act__chunk *c = threads[k]->head; c; c = atomic_load_explicit(&((act__chunk *)c)->next, memory_order_acquire)) {
            uint32_t n = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
            for (uint32_t i = 0; i < n; i++) {
                const act__rec *r = &c->recs[i];
                uint32_t dev = (uint32_t)r->x;
                if (r->kind == ACT__R_AUX_DEV && dev < w->ndev && w->dev_dense[dev] &&
                    smap_add(w, dev, (uint64_t)r->t0))
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

static void move_span(wctx *w, const hspan *h)
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
static void plan_overlaps(wctx *w, act__thread **threads, size_t nthreads)
{
    keyset tids = {NULL, 0, 0};
    hspan *v = NULL;
    size_t n = 0, cap = 0, *stack = NULL;
    for (size_t k = 0; k < nthreads; k++) {
        for (const act__chunk *c = threads[k]->head; c; c = atomic_load_explicit(&((act__chunk *)c)->next, memory_order_acquire)) {
            uint32_t used = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
            for (uint32_t i = 0; i + 1 < used; i++) {
                const act__rec *r = &c->recs[i], *aux = r + 1;
                if (r->kind != ACT__R_EMIT_SPAN || aux->kind != ACT__R_AUX_DEV ||
                    (uint32_t)aux->x != ACT__HOST_DEVICE)
                    continue;
                hspan h = {r->t0, end_of(w, r), r, (uint32_t)aux->t0 & 0x7fffffffu, 0,
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
        for (const act__chunk *c = threads[k]->head; c; c = atomic_load_explicit(&((act__chunk *)c)->next, memory_order_acquire)) {
            uint32_t used = atomic_load_explicit(&((act__chunk *)c)->used, memory_order_acquire);
            for (uint32_t i = 0; i < used; i++) {
                const act__rec *r = &c->recs[i];
                if (r->kind != ACT__R_SPAN)
                    continue;
                hspan h = {r->t0, end_of(w, r), r, tid, 0, 0};
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

/* Every sample of a counter track carries the same set of series (the
 * track's), each with its latest value: Chrome counters describe the whole
 * state of the track at a time. A series not yet sampled takes its first
 * value. */
static void emit_counters(wctx *w, act__thread **threads, size_t nthreads)
{
    act_session *s = w->s;
    size_t ns = s->nseries, n = 0, cap = 0;
    if (!ns)
        return;
    uint32_t *track_of = calloc(ns, sizeof *track_of);
    uint32_t *next_of = calloc(ns, sizeof *next_of);
    uint8_t *clash = calloc(ns, 1);
    double *cur = calloc(ns, sizeof *cur);
    uint8_t *seen = calloc(ns, 1);
    csample *v = NULL;
    if (!track_of || !next_of || !clash || !cur || !seen ||
        assign_tracks(s, ns, track_of, next_of, clash) != 0)
        goto oom;
    for (size_t k = 0; k < nthreads; k++) {
        for (const act__chunk *c = threads[k]->head; c; c = atomic_load_explicit(&((act__chunk *)c)->next, memory_order_acquire)) {
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
                v[n].ts = r->t0;
                memcpy(&v[n].v, &bits, sizeof bits);
                n++;
            }
        }
    }
    if (n) /* qsort's pointer must not be NULL, even for no elements */
        qsort(v, n, sizeof *v, cmp_sample);
    act__out *o = w->o;
    w->counter_samples = n;
    for (size_t i = 0; i < n;) {
        uint32_t track = v[i].track;
        size_t end = i;
        while (end < n && v[end].track == track)
            end++;
        /* First values, so every event of the track has every series. */
        for (size_t j = end; j-- > i;) {
            cur[v[j].series] = v[j].v;
            seen[v[j].series] = 1;
        }
        const act__series *head = s->series[track];
        char *tname = track_name(s, head, clash[track]);
        if (!tname)
            goto oom;
        int32_t pid = head->device == ACT__HOST_DEVICE ? w->pid : (int32_t)(DEVICE_PID_BASE + head->device);
        for (size_t j = i; j < end;) {
            /* One event per time: samples of different series at the same
             * time share it (what a C event is for); a series sampled again
             * at the same time (sorted next to each other) starts another
             * event, so that no sample's value is lost. */
            int64_t ts = v[j].ts;
            size_t j0 = j;
            for (; j < end && v[j].ts == ts && (j == j0 || v[j].series != v[j - 1].series); j++)
                cur[v[j].series] = v[j].v;
            w->counter_events++;
            lit(o, "{\"ph\":\"C\",\"cat\":\"");
            lit(o, head->device == ACT__HOST_DEVICE ? "host_counter" : "gpu_pm_counter");
            lit(o, "\",\"name\":");
            put_str0(o, tname);
            lit(o, ",\"pid\":");
            put_i64(o, pid);
            lit(o, ",\"tid\":0");
            put_ts(o, ",\"ts\":", 6, ts + w->to_rel_ns);
            lit(o, ",\"args\":{");
            int first = 1;
            for (uint32_t k = track; k != NO_SERIES; k = next_of[k]) {
                if (!seen[k])
                    continue;
                if (!first)
                    act__out_char(o, ',');
                first = 0;
                /* An empty key breaks viewers: name it "value". */
                put_str0(o, s->series[k]->series[0] ? s->series[k]->series : "value");
                act__out_char(o, ':');
                put_double(o, cur[k]);
            }
            lit(o, "}},\n");
        }
        free(tname);
        i = end;
    }
    free(v);
    free(track_of);
    free(next_of);
    free(clash);
    free(cur);
    free(seen);
    return;
oom:
    w->oom = 1;
    free(v);
    free(track_of);
    free(next_of);
    free(clash);
    free(cur);
    free(seen);
}

/* ---- metadata ----------------------------------------------------------------- */

static void meta(act__out *o, const char *what, int64_t pid, int64_t tid, const char *key,
                 const char *sval, int64_t ival)
{
    lit(o, "{\"ph\":\"M\",\"name\":\"");
    lit(o, what);
    lit(o, "\",\"pid\":");
    put_i64(o, pid);
    lit(o, ",\"tid\":");
    put_i64(o, tid);
    lit(o, ",\"args\":{\"");
    lit(o, key);
    lit(o, "\":");
    if (sval)
        put_str0(o, sval);
    else
        put_i64(o, ival);
    lit(o, "}},\n");
}

static void emit_metadata(wctx *w, act__thread **threads, size_t nthreads)
{
    act__out *o = w->o;
    act_session *s = w->s;
    char buf[256];
    const char *pname = act__process_name(buf, sizeof buf);
    meta(o, "process_name", w->pid, 0, "name", pname ? pname : "host", 0);
    meta(o, "process_sort_index", w->pid, 0, "sort_index", NULL, 0);
    for (size_t i = 0; i < nthreads; i++) {
        const char *tn = act__thread_name_lookup(threads[i]->tid, threads[i]->serial, buf, sizeof buf);
        if (tn)
            meta(o, "thread_name", threads[i]->pid, threads[i]->tid, "name", tn, 0);
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
        meta(o, "thread_name", w->pid, side_tid(st->source, st->tid), "name", label, 0);
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
            meta(o, "thread_name", w->pid, named[k], "name", tn, 0);
    }
    for (size_t d = 0; d < s->ndevices; d++) {
        const act__device *dev = &s->devices[d];
        if (!act__source_live(s, dev->source))
            continue;
        int64_t pid = DEVICE_PID_BASE + d;
        char label[320];
        if (dev->name[0])
            snprintf(label, sizeof label, "%s (device %zu)", dev->name, d);
        else
            snprintf(label, sizeof label, "device %zu", d);
        meta(o, "process_name", pid, 0, "name", label, 0);
        meta(o, "process_sort_index", pid, 0, "sort_index", NULL, (int64_t)(100 + d));
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
                meta(o, "thread_name", pid, e->tid, "name", nm ? nm : label, 0);
            }
            continue;
        }
        for (size_t k = 0; k < dev->nstreams; k++)
            meta(o, "thread_name", pid, (int64_t)stream_tid(w, (uint32_t)d, dev->streams[k].id),
                 "name", dev->streams[k].name, 0);
    }
}

static void put_arg_value(act__out *o, const act__arg *a)
{
    switch (a->kind) {
    case ACT__V_INT: put_i64(o, a->v.i); break;
    case ACT__V_UINT: put_u64(o, a->v.u); break;
    case ACT__V_DOUBLE: put_double(o, a->v.d); break;
    case ACT__V_BOOL: lit(o, a->v.b ? "true" : "false"); break;
    case ACT__V_STR: act__out_str(o, a->v.s.p, a->v.s.n); break;
    }
}

static void emit_header(wctx *w)
{
    act__out *o = w->o;
    act_session *s = w->s;
    lit(o, "{\"schemaVersion\":1,\"deviceProperties\":[");
    int firstdev = 1;
    for (size_t d = 0; d < s->ndevices; d++) {
        const act__device *dev = &s->devices[d];
        if (!act__source_live(s, dev->source))
            continue;
        lit(o, firstdev ? "\n{\"id\":" : ",\n{\"id\":");
        firstdev = 0;
        put_u64(o, d);
        lit(o, ",\"name\":");
        put_str0(o, dev->name);
        lit(o, ",\"vendor\":");
        put_str0(o, dev->vendor);
        lit(o, ",\"backend\":");
        put_str0(o, dev->source < s->nsources ? s->sources[dev->source].backend : "");
        for (size_t k = 0; k < dev->nprops; k++) {
            act__out_char(o, ',');
            act__out_str(o, dev->props[k].key, dev->props[k].key_len);
            act__out_char(o, ':');
            put_arg_value(o, &dev->props[k]);
        }
        act__out_char(o, '}');
    }
    lit(o, "],\n");
    const char *trace_id = act_config_get_str(s->config, "REQUEST_TRACE_ID");
    if (trace_id && *trace_id) {
        lit(o, "\"trace_id\":");
        put_str0(o, trace_id);
        lit(o, ",\n");
    }
    /* Kineto hands the group id only to its logger observer; actrace
     * writes it next to trace_id, where tools look for request ids. */
    const char *group_id = act_config_get_str(s->config, "REQUEST_GROUP_TRACE_ID");
    if (group_id && *group_id) {
        lit(o, "\"group_trace_id\":");
        put_str0(o, group_id);
        lit(o, ",\n");
    }
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        strcpy(host, "unknown");
    host[sizeof host - 1] = '\0';
    lit(o, "\"host_name\":");
    put_str0(o, host);
    lit(o, ",\n\"displayTimeUnit\":\"ms\",\n\"baseTimeNanoseconds\":");
    put_i64(o, w->base_unix_ns);
    if (s->proc_start > 0) {
        /* The process's start (clock ticks after boot, /proc/<pid>/stat):
         * with the pid it names one process across exec, so that
         * `actrace record` keeps an exec'd image on the same pid and moves
         * only a reused one. */
        lit(o, ",\n\"actraceProcessStart\":");
        put_i64(o, s->proc_start);
    }
    lit(o, ",\n\"traceEvents\":[\n");
}

static int env_int(const char *const *names, int64_t *out)
{
    for (; *names; names++) {
        const char *e = secure_getenv(*names);
        if (e && *e) {
            char *end;
            long long v = strtoll(e, &end, 10);
            if (*end == '\0' && v >= 0) {
                *out = v;
                return 1;
            }
        }
    }
    return 0;
}

static void emit_footer(wctx *w, const uint64_t *recorded, const char *path)
{
    act__out *o = w->o;
    act_session *s = w->s;
    /* Close the event array with a metadata event, so the last real event's
     * trailing comma stays valid JSON. */
    lit(o, "{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":");
    put_i64(o, w->pid);
    lit(o, ",\"tid\":0,\"args\":{\"labels\":\"actrace ");
    lit(o, ACT_VERSION_STRING);
    lit(o, "\"}}\n]");

    /* distributedInfo in every trace, in Kineto's layout; ", " and ": "
     * because HTA finds a file's rank with "rank":\s+(\d+). Launcher
     * variables in order: torchrun's, Slurm's, OpenMPI's; a process none
     * of them names is a job of one. */
    static const char *const rank_env[] = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", NULL};
    static const char *const world_env[] = {"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", NULL};
    static const char *const local_env[] = {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", NULL};
    int64_t rank = 0, world = 1, local = 0;
    env_int(rank_env, &rank);
    env_int(world_env, &world);
    env_int(local_env, &local);
    const char *backend = secure_getenv("ACTRACE_DIST_BACKEND");
    lit(o, ",\n\"distributedInfo\": {\"backend\": ");
    put_str0(o, backend && *backend ? backend : "unknown");
    lit(o, ", \"rank\": ");
    put_i64(o, rank);
    lit(o, ", \"world_size\": ");
    put_i64(o, world);
    lit(o, ", \"local_rank\": ");
    put_i64(o, local);
    act__out_char(o, '}');

    /* Statistics: recorded + dropped == attempted. */
    uint64_t by_reason[ACT__DROP_NREASONS] = {0};
    uint64_t by_type[ACT__NTYPE_SLOTS] = {0};
    uint64_t dropped = 0;
    for (const act__thread *t = s->threads; t; t = t->next) {
        for (int r = 0; r < ACT__DROP_NREASONS; r++) {
            uint64_t n = atomic_load_explicit(&t->dropped_reason[r], memory_order_relaxed);
            by_reason[r] += n;
            dropped += n;
        }
        for (int k = 0; k < ACT__NTYPE_SLOTS; k++)
            by_type[k] += atomic_load_explicit(&t->dropped_type[k], memory_order_relaxed);
    }
    /* Session-wide: not counted by type (see engine.h). */
    by_reason[ACT__DROP_REENTRANT] = atomic_load(&s->dropped_reentrant);
    dropped += by_reason[ACT__DROP_REENTRANT];
    static const char *const reasons[ACT__DROP_NREASONS] = {
        "buffer_full", "type_not_selected", "bad_type", "unbalanced",
        "orphan_arg", "non_finite", "bad_times", "reentrant"};
    /* Args are counted apart from events: an arg is recorded with its
     * event or dropped with it (or because no event came before it). */
    uint64_t args_orphan = 0, args_with_event = 0;
    for (const act__thread *t = s->threads; t; t = t->next) {
        args_orphan += atomic_load_explicit(&t->args_dropped[0], memory_order_relaxed);
        args_with_event += atomic_load_explicit(&t->args_dropped[1], memory_order_relaxed);
    }
    if (s->recovered) {
        /* Rebuilt from the spool of a process that could not write its
         * trace: per-thread drop counts died with it. */
        lit(o, ",\n\"actraceRecovered\":true");
    }
    lit(o, ",\n\"actraceStats\":{\"recorded\":");
    put_u64(o, recorded[0]);
    lit(o, ",\"dropped\":");
    put_u64(o, dropped);
    lit(o, ",\"args_recorded\":");
    put_u64(o, recorded[1]);
    lit(o, ",\"args_dropped\":");
    uint64_t args_reentrant = atomic_load(&s->args_dropped_reentrant);
    put_u64(o, args_orphan + args_with_event + args_reentrant);
    lit(o, ",\"args_dropped_by_reason\":{\"orphan_arg\":");
    put_u64(o, args_orphan);
    lit(o, ",\"event_dropped\":");
    put_u64(o, args_with_event);
    lit(o, ",\"reentrant\":");
    put_u64(o, args_reentrant);
    lit(o, "},\"dropped_by_reason\":{");
    for (int r = 0, n = 0; r < ACT__DROP_NREASONS; r++) {
        if (r == ACT__DROP_ORPHAN_ARG)
            continue; /* args: above */
        lit(o, n++ ? ",\"" : "\"");
        lit(o, reasons[r]);
        lit(o, "\":");
        put_u64(o, by_reason[r]);
    }
    lit(o, "},\"dropped_by_type\":{");
    int first = 1;
    for (int k = 0; k < ACT__NTYPE_SLOTS; k++) {
        if (!by_type[k])
            continue;
        int code = k <= ACT_ACTIVITY_TYPE_MAX_BUILTIN ? k : ACT_ACTIVITY_TYPE_FIRST_CUSTOM + (k - ACT_ACTIVITY_TYPE_MAX_BUILTIN - 1);
        const char *name = act_activity_type_name((act_activity_type)code);
        if (!first)
            act__out_char(o, ',');
        first = 0;
        if (name) {
            put_str0(o, name);
        } else {
            char num[24];
            snprintf(num, sizeof num, "%d", code);
            put_str0(o, num);
        }
        act__out_char(o, ':');
        put_u64(o, by_type[k]);
    }
    lit(o, "},\"buffer_bytes\":");
    put_u64(o, atomic_load(&s->bytes));
    lit(o, ",\"buffer_limit_bytes\":");
    put_u64(o, s->max_bytes);
    size_t np = act__plugins_count(s->plugins);
    lit(o, ",\"plugins\":[");
    for (size_t i = 0; i < np; i++) {
        lit(o, i ? ",{\"name\":" : "{\"name\":");
        put_str0(o, act__plugins_name(s->plugins, i));
        lit(o, ",\"path\":");
        put_str0(o, act__plugins_path(s->plugins, i));
        lit(o, ",\"rejected\":");
        put_u64(o, act__plugins_rejected(s->plugins, i));
        lit(o, ",\"rejected_by_reason\":{");
        int firstr = 1;
        for (size_t k = 0; k < act__plugins_reason_count(); k++) {
            const char *key;
            uint64_t n = act__plugins_rejected_by(s->plugins, i, k, &key);
            if (!n)
                continue;
            if (!firstr)
                act__out_char(o, ',');
            firstr = 0;
            put_str0(o, key);
            act__out_char(o, ':');
            put_u64(o, n);
        }
        lit(o, "},\"filtered\":");
        put_u64(o, act__plugins_filtered(s->plugins, i));
        lit(o, ",\"dropped\":");
        put_u64(o, act__plugins_dropped(s->plugins, i));
        size_t nw = act__plugins_warning_count(s->plugins, i);
        if (nw) {
            lit(o, ",\"warnings\":[");
            for (size_t k = 0; k < nw; k++) {
                if (k)
                    act__out_char(o, ',');
                put_str0(o, act__plugins_warning(s->plugins, i, k));
            }
            act__out_char(o, ']');
        }
        act__out_char(o, '}');
    }
    lit(o, "]");
    if (s->nseries) {
        lit(o, ",\"counter_samples\":");
        put_u64(o, w->counter_samples);
        lit(o, ",\"counter_events\":");
        put_u64(o, w->counter_events);
        lit(o, ",\"counters\":[");
        int firsts = 1;
        for (size_t i = 0; i < s->nseries; i++) {
            const act__series *e = s->series[i];
            if (!act__source_live(s, e->source))
                continue;
            lit(o, firsts ? "{\"track\":" : ",{\"track\":");
            firsts = 0;
            put_str0(o, e->track);
            lit(o, ",\"series\":");
            put_str0(o, e->series);
            lit(o, ",\"unit\":");
            put_str0(o, e->unit ? e->unit : "");
            if (e->device != ACT__HOST_DEVICE) {
                lit(o, ",\"device\":");
                put_u64(o, e->device);
            }
            act__out_char(o, '}');
        }
        act__out_char(o, ']');
    }
    lit(o, "},\n\"traceName\":");
    const char *name = s->trace_name;
    if (!name) {
        name = strrchr(path, '/');
        name = name ? name + 1 : path;
    }
    put_str0(o, name);
    lit(o, "}\n");
}

/* ---- entry ------------------------------------------------------------------- */

int act__write_chrome(act_session *s, const char *path)
{
    act__out out;
    int rc = act__out_open(&out, path, NULL, 0);
    if (rc) {
        act__session_seterr(s, "%s", act__out_errmsg(&out));
        return rc;
    }
    wctx w;
    memset(&w, 0, sizeof w);
    w.s = s;
    w.o = &out;
    w.pid = s->pid ? s->pid : (int32_t)getpid();
    w.unnamed.json = "\"(unnamed)\"";
    w.unnamed.len = 11;

    /* The session lock is held for the whole write: devices, streams,
     * counter series, sources and the thread list may still grow (a
     * plugin's thread naming a stream, an app call in flight) and would be
     * reallocated under the writer otherwise. Recording itself is not
     * blocked but for a thread that needs a new chunk. Lock order: the
     * session lock before the names locks (act__thread_name_lookup). */
    pthread_mutex_lock(&s->lock);
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
    if (!threads || !scans) {
        pthread_mutex_unlock(&s->lock);
        free(threads);
        free(scans);
        act__out_abort(&out);
        act__session_seterr(s, "%s: out of memory", path);
        return ACT_ENOMEM;
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
    plan_streams(&w, threads, nthreads);
    if (w.plugin_host_spans)
        plan_overlaps(&w, threads, nthreads);
    /* Base: a whole second at least one second before the earliest event,
     * so every ts is positive and never 0 (as in Kineto's traces). */
    int64_t first_unix = min_t0 + s->mono_to_unix_ns;
    w.base_unix_ns = (first_unix / 1000000000 - 1) * 1000000000;
    w.to_rel_ns = s->mono_to_unix_ns - w.base_unix_ns;

    emit_header(&w);
    emit_metadata(&w, threads, nthreads);
    for (size_t i = 0; i < nthreads; i++)
        emit_thread(&w, threads[i], &scans[i]);
    emit_counters(&w, threads, nthreads);
    emit_footer(&w, recorded, path);
    pthread_mutex_unlock(&s->lock);

    for (size_t i = 0; i < w.nnames; i++)
        free(w.names[i].json);
    for (size_t i = 0; i < ACT_ARRAY_SIZE(w.prefix); i++) {
        free(w.prefix[i][0].json);
        free(w.prefix[i][1].json);
    }
    free(w.names);
    free(w.dev_dense);
    free(w.smap);
    free(w.moved.slot);
    free(w.sides);
    free(w.host_corr.slot);
    free(w.dev_corr.slot);
    free(threads);
    free(scans);
    if (w.oom && !act__out_error(&out)) {
        act__out_abort(&out);
        act__session_seterr(s, "%s: out of memory while writing the trace", path);
        return ACT_ENOMEM;
    }
    rc = act__out_finish(&out);
    if (rc)
        act__session_seterr(s, "%s", act__out_errmsg(&out));
    return rc;
}
