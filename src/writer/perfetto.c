/* SPDX-License-Identifier: MIT */
/*
 * The Perfetto protobuf writer: the session visitor's walk (visit.h)
 * encoded through pftrace.h. It carries what the JSON trace carries:
 *   - the host process and its threads (ProcessDescriptor and
 *     ThreadDescriptor tracks), each recorded thread its own sequence whose
 *     default track is the thread's;
 *   - each device as a process (pid 0x40000000 + device, as in the JSON)
 *     and each of its streams a track of its own under it, with a distinct
 *     uuid and, when two streams share a name, " (stream N)" appended so
 *     that no viewer merges them;
 *   - spans (SLICE_BEGIN/END), instants, args as debug annotations (with
 *     the same reserved keys as the JSON: External id, correlation, device,
 *     stream, backend, unfinished);
 *   - counters: one counter track per series ("track series", unit in the
 *     CounterDescriptor), parented to its process, one sequence per track;
 *   - flows: flow_ids on the launch, terminating_flow_ids on the work;
 *   - trace metadata, deviceProperties and actraceStats as annotations of
 *     one instant "actraceMetadata" on a track "actrace".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"
#include "engine/spool.h"
#include "writer/json_out.h"
#include "writer/pftrace.h"
#include "writer/visit.h"
#include "writer/common.h"
#include "writer/writers.h"

typedef struct pctx {
    act__pf pf;
    act__out devs; /* deviceProperties JSON, in memory */
    int ndevs;
    const act__vinfo *info;
    int64_t base_mono;
    uint32_t seq;       /* the thread sequence being written */
    uint32_t cseq;      /* the counter track's sequence */
    const char *path;
    /* iids cached per interned name id (0: not yet, UINT32_MAX: not
     * internable) and per category string, and of the fixed keys. */
    uint32_t *gname;
    size_t ngname;
    struct {
        const char *p;
        uint32_t g;
    } gcat[32];
    uint32_t g_ext, g_unfinished, g_corr, g_device, g_stream, g_backend, g_unnamed;
    /* iids of string values by name ref (chunk, ref): a thread's recorder
     * copies a repeated value once per chunk, so events share its ref.
     * Direct-mapped; g 0: empty or must go inline. */
    struct {
        const act__chunk *c;
        uint32_t ref, g;
    } gval[64];
} pctx;

/* The iid of string value @p ref of chunk @p c in the event being built
 * (0: inline). */
static inline uint32_t value_g(pctx *p, const act__chunk *c, uint32_t ref)
{
    size_t h = ((ref * 0x9E3779B1u) >> 26 ^ (uintptr_t)c >> 12) & 63;
    if (p->gval[h].c == c && p->gval[h].ref == ref && p->gval[h].g)
        return p->gval[h].g;
    uint32_t vn;
    const char *v = act__visit_ref(c, ref, &vn);
    uint32_t g = act__pf_value_iid(&p->pf, v, vn);
    p->gval[h].c = c;
    p->gval[h].ref = ref;
    p->gval[h].g = g;
    return g;
}

static uint32_t name_g_slow(pctx *p, const act__chunk *c, uint32_t ref);

/* The iid of name ref @p ref (0 when it must go as a string). */
static inline uint32_t name_g(pctx *p, const act__chunk *c, uint32_t ref)
{
    /* A cached iid is of a known name (a known name stays known). */
    if (ref < p->ngname && p->gname[ref] - 1 < UINT32_MAX - 1)
        return p->gname[ref];
    return name_g_slow(p, c, ref);
}

static uint32_t name_g_slow(pctx *p, const act__chunk *c, uint32_t ref)
{
    if (ref & ACT__REF_LOCAL)
        return 0;
    /* Ids are dense, so the cache stays as small as the name table; an id
     * act_name() never returned is an empty name. */
    if (!act__name_known(ref))
        return p->g_unnamed;
    if (ref >= p->ngname) {
        size_t n = p->ngname ? p->ngname : 256;
        while (n <= ref)
            n *= 2;
        uint32_t *ng = realloc(p->gname, n * sizeof *ng);
        if (!ng)
            return 0;
        memset(ng + p->ngname, 0, (n - p->ngname) * sizeof *ng);
        p->gname = ng;
        p->ngname = n;
    }
    uint32_t g = p->gname[ref];
    if (!g) {
        uint32_t len;
        const char *s = act__visit_ref(c, ref, &len);
        g = len ? act__pf_intern(&p->pf, s, len) : p->g_unnamed;
        p->gname[ref] = g ? g : UINT32_MAX;
    }
    return g == UINT32_MAX ? 0 : g;
}

static uint32_t cat_g(pctx *p, const char *cat)
{
    size_t h = ((uintptr_t)cat >> 3) & 31;
    if (p->gcat[h].p != cat) {
        p->gcat[h].p = cat;
        p->gcat[h].g = act__pf_intern(&p->pf, cat, strlen(cat));
    }
    return p->gcat[h].g;
}

static void put_name_of(pctx *p, const act__chunk *c, uint32_t ref, const char **s, size_t *n)
{
    (void)p;
    uint32_t len;
    const char *b = act__visit_ref(c, ref, &len);
    if (!len) {
        *s = "(unnamed)";
        *n = 9;
        return;
    }
    *s = b;
    *n = len;
}

static void ensure_process(pctx *p, int32_t pid, const char *name)
{
    uint64_t u = act__pf_uuid_process(pid);
    if (!act__pf_track_seen(&p->pf, u))
        act__pf_track_process(&p->pf, u, pid, name, name ? strlen(name) : 0);
}

/* The track of (pid, tid), described the first time it is used. */
static uint64_t ensure_track(pctx *p, int32_t pid, uint32_t tid, const char *name, int is_stream)
{
    uint64_t u = act__pf_uuid_thread(pid, tid);
    if (act__pf_track_seen(&p->pf, u))
        return u;
    ensure_process(p, pid, NULL);
    uint64_t parent = act__pf_uuid_process(pid);
    if (is_stream || (uint32_t)pid >= ACT__DEVICE_PID_BASE) {
        /* A stream: a track under its device. Same-named siblings get
         * their tid appended (a name's first use is remembered in the uuid
         * set under a key of its own). */
        char buf[320];
        if (!name) {
            snprintf(buf, sizeof buf, "stream %u", tid);
        } else {
            uint64_t h = 1469598103934665603u ^ (uint64_t)(uint32_t)pid;
            for (const char *c = name; *c; c++)
                h = (h ^ (unsigned char)*c) * 1099511628211u;
            h |= (uint64_t)1 << 62; /* never a process, thread or counter uuid */
            h &= ~((uint64_t)1 << 63);
            if (act__pf_track_seen(&p->pf, h))
                snprintf(buf, sizeof buf, "%s (stream %u)", name, tid);
            else
                snprintf(buf, sizeof buf, "%s", name);
        }
        act__pf_track_named(&p->pf, u, parent, buf, strlen(buf));
    } else {
        act__pf_track_thread(&p->pf, u, parent, pid, (int32_t)tid, name, name ? strlen(name) : 0);
    }
    return u;
}

static int64_t boottime_offset(void)
{
    struct timespec m, b;
    clock_gettime(CLOCK_MONOTONIC, &m);
    clock_gettime(CLOCK_BOOTTIME, &b);
    return ((int64_t)b.tv_sec - m.tv_sec) * 1000000000 + (b.tv_nsec - m.tv_nsec);
}

static void on_begin(void *ctx, const act__vinfo *info)
{
    pctx *p = ctx;
    p->info = info;
    p->base_mono = info->base_unix_ns - info->mono_to_unix_ns;
    act__pf_clocks(&p->pf, p->base_mono, p->base_mono + boottime_offset(), info->base_unix_ns);
}

static void on_device(void *ctx, const act__vdevice *d)
{
    pctx *p = ctx;
    act__out_char(&p->devs, p->ndevs++ ? ',' : '[');
    act__write_device_json(&p->devs, d);
}

static void on_process(void *ctx, const act__vprocess *pr)
{
    pctx *p = ctx;
    ensure_process(p, pr->pid, pr->name);
}

static void on_thread(void *ctx, const act__vthread *t)
{
    pctx *p = ctx;
    ensure_track(p, t->pid, (uint32_t)t->tid, t->name, t->is_stream);
}

static void on_thread_events(void *ctx, int32_t pid, int32_t tid)
{
    pctx *p = ctx;
    if (p->seq)
        act__pf_seq_flush(&p->pf, p->seq);
    uint64_t u = ensure_track(p, pid, (uint32_t)tid, NULL, 0);
    p->seq = act__pf_seq_new(&p->pf, p->base_mono, u);
}

static void put_arg(pctx *p, const act__varg *a)
{
    if (a->kind == ACT__V_JSON) {
        /* A valid JSON text as legacy_json_value, else as a string. */
        uint32_t kn, vn;
        const char *v = act__visit_ref(a->c, (uint32_t)a->val, &vn);
        if (act__json_valid(v, vn)) {
            const char *k = act__visit_ref(a->c, a->key, &kn);
            act__pf_arg_json(&p->pf, k, kn, v, vn);
            return;
        }
        act__varg str = *a;
        str.kind = ACT__V_STR;
        put_arg(p, &str);
        return;
    }
    uint32_t g = name_g(p, a->c, a->key);
    if (g) {
        switch (a->kind) {
        case ACT__V_INT: act__pf_arg_int_g(&p->pf, g, (int64_t)a->val); return;
        case ACT__V_UINT: act__pf_arg_uint_g(&p->pf, g, a->val); return;
        case ACT__V_DOUBLE: {
            double d;
            memcpy(&d, &a->val, sizeof d);
            act__pf_arg_double_g(&p->pf, g, d);
            return;
        }
        case ACT__V_BOOL: act__pf_arg_bool_g(&p->pf, g, a->val != 0); return;
        case ACT__V_STR: {
            uint32_t vg = value_g(p, a->c, (uint32_t)a->val);
            if (vg) {
                act__pf_arg_str_iid(&p->pf, g, vg);
                return;
            }
            uint32_t vn;
            const char *v = act__visit_ref(a->c, (uint32_t)a->val, &vn);
            act__pf_arg_str_g(&p->pf, g, v, vn);
            return;
        }
        default: return;
        }
    }
    uint32_t kn;
    const char *k = act__visit_ref(a->c, a->key, &kn);
    switch (a->kind) {
    case ACT__V_INT: act__pf_arg_int(&p->pf, k, kn, (int64_t)a->val); break;
    case ACT__V_UINT: act__pf_arg_uint(&p->pf, k, kn, a->val); break;
    case ACT__V_DOUBLE: {
        double d;
        memcpy(&d, &a->val, sizeof d);
        act__pf_arg_double(&p->pf, k, kn, d);
        break;
    }
    case ACT__V_BOOL: act__pf_arg_bool(&p->pf, k, kn, a->val != 0); break;
    case ACT__V_STR: {
        uint32_t vn;
        const char *v = act__visit_ref(a->c, (uint32_t)a->val, &vn);
        act__pf_arg_str(&p->pf, k, kn, v, vn);
        break;
    }
    default: break;
    }
}

#define KEY(s) s, sizeof(s) - 1

#if defined(__GNUC__) || defined(__clang__)
#define NOINLINE __attribute__((noinline))
#define HOT_INLINE static inline __attribute__((always_inline))
#else
#define NOINLINE
#define HOT_INLINE static inline
#endif

static NOINLINE void on_event_any(pctx *p, const act__vevent *e);

/* The args of @p e as interned args for act__pf_event_args_g: their
 * count, or -1 when one is not (a key or value that must go as bytes, more
 * than ACT__PF_GARGS_MAX). */
HOT_INLINE int gargs_of(pctx *p, const act__vevent *e, act__pf_garg *g)
{
    act__vuniq u;
    act__varg a;
    act__vuniq_start(&u, &e->args, ACT__ARGS_HOST);
    int n = 0;
    while (act__vuniq_next(&u, &a)) {
        if (n == ACT__PF_GARGS_MAX)
            return -1;
        uint32_t kg = name_g(p, a.c, a.key);
        if (!kg)
            return -1;
        g[n].key_g = kg;
        g[n].v = a.val;
        switch (a.kind) {
        case ACT__V_INT: g[n].kind = ACT__PF_ARG_INT; break;
        case ACT__V_UINT: g[n].kind = ACT__PF_ARG_UINT; break;
        case ACT__V_DOUBLE: g[n].kind = ACT__PF_ARG_DOUBLE; break;
        case ACT__V_BOOL:
            g[n].kind = ACT__PF_ARG_BOOL;
            g[n].v = a.val != 0;
            break;
        case ACT__V_STR:
            g[n].kind = ACT__PF_ARG_STR_IID;
            if (!(g[n].v = value_g(p, a.c, (uint32_t)a.val)))
                return -1;
            break;
        default: return -1;
        }
        n++;
    }
    return n;
}

/* A host event with args: at once when its args are interned, else
 * field by field. */
HOT_INLINE void on_event_args(pctx *p, const act__vevent *e, uint32_t ng, uint32_t cg)
{
    act__pf_garg g[ACT__PF_GARGS_MAX];
    int n = gargs_of(p, e, g);
    if (n < 0) {
        on_event_any(p, e);
        return;
    }
    act__pf_event_args_g(&p->pf, p->seq, e->kind == ACT__R_SPAN ? ACT__PF_BEGIN : ACT__PF_INSTANT, 0,
                         e->t0, e->t1, cg, ng, g, (size_t)n);
}

static void on_event(void *ctx, const act__vevent *e)
{
    pctx *p = ctx;
    if ((e->kind == ACT__R_SPAN || e->kind == ACT__R_INSTANT) && !e->ext && !e->open &&
        !e->flow_dir) {
        /* The usual host event: names interned, no args (or a few whose
         * keys and values are). */
        uint32_t ng = name_g(p, e->c, e->name), cg = cat_g(p, e->cat);
        if (ng && cg) {
            if (e->has_args)
                on_event_args(p, e, ng, cg);
            else
                act__pf_event_whole_g(&p->pf, p->seq,
                                      e->kind == ACT__R_SPAN ? ACT__PF_BEGIN : ACT__PF_INSTANT, 0,
                                      e->t0, e->t1, cg, ng);
            return;
        }
    }
    on_event_any(p, e);
}

/* Any event, field by field. */
static NOINLINE void on_event_any(pctx *p, const act__vevent *e)
{
    int host = e->kind == ACT__R_SPAN || e->kind == ACT__R_INSTANT;
    uint64_t track = host ? 0 : ensure_track(p, e->pid, e->tid, NULL, e->device != ACT__HOST_DEVICE);
    int span = e->kind == ACT__R_SPAN || e->kind == ACT__R_EMIT_SPAN;
    int type = span ? ACT__PF_BEGIN : ACT__PF_INSTANT;
    uint32_t ng = name_g(p, e->c, e->name), cg = cat_g(p, e->cat);
    if (ng && cg) {
        act__pf_event_g(&p->pf, p->seq, type, track, e->t0, e->t1, cg, ng);
    } else {
        const char *name;
        size_t nn;
        put_name_of(p, e->c, e->name, &name, &nn);
        act__pf_event(&p->pf, p->seq, type, track, e->t0, e->t1, e->cat, strlen(e->cat), name, nn);
    }
    if (e->ext)
        act__pf_arg_uint_g(&p->pf, p->g_ext, e->ext);
    if (host) {
        if (e->open)
            act__pf_arg_bool_g(&p->pf, p->g_unfinished, 1);
    } else {
        if (e->corr)
            act__pf_arg_uint_g(&p->pf, p->g_corr, e->corr);
        if (e->device != ACT__HOST_DEVICE) {
            act__pf_arg_uint_g(&p->pf, p->g_device, e->device);
            act__pf_arg_uint_g(&p->pf, p->g_stream, e->stream);
        }
        act__pf_arg_str_g(&p->pf, p->g_backend, e->backend, strlen(e->backend));
    }
    if (e->has_args) {
        act__vuniq u;
        act__varg a;
        act__vuniq_start(&u, &e->args, host ? ACT__ARGS_HOST : ACT__ARGS_PLUGIN);
        while (act__vuniq_next(&u, &a))
            put_arg(p, &a);
    }
    if (e->has_mem_bw)
        act__pf_arg_double(&p->pf, KEY(ACT__MEM_BW_KEY), e->mem_bw_gbps);
    if (e->flow_dir)
        act__pf_flow(&p->pf, e->flow, e->flow_dir == 2);
    act__pf_event_end(&p->pf);
}

static void on_counter_track(void *ctx, const act__vctrack *ct)
{
    pctx *p = ctx;
    if (p->seq) {
        act__pf_seq_flush(&p->pf, p->seq);
        p->seq = 0;
    }
    ensure_process(p, ct->pid, NULL);
    for (size_t k = 0; k < ct->nseries; k++) {
        const act__series *se = ct->series[k];
        char buf[512];
        snprintf(buf, sizeof buf, "%s %s", ct->name, se->series[0] ? se->series : "value");
        uint64_t u = ACT__PF_UUID_COUNTER(ct->series_id[k]);
        if (!act__pf_track_seen(&p->pf, u))
            act__pf_track_counter(&p->pf, u, act__pf_uuid_process(ct->pid), buf, strlen(buf),
                                  se->unit);
    }
    p->cseq = act__pf_seq_new(&p->pf, p->base_mono, 0);
}

static void on_counter(void *ctx, const act__vctrack *ct, const act__vcsample *cs)
{
    pctx *p = ctx;
    for (size_t k = 0; k < cs->nchanged; k++) {
        act__pf_event(&p->pf, p->cseq, ACT__PF_COUNTER,
                      ACT__PF_UUID_COUNTER(ct->series_id[cs->changed[k]]), cs->ts, cs->ts, NULL, 0,
                      NULL, 0);
        act__pf_counter_value(&p->pf, cs->changed_val[k]);
        act__pf_event_end(&p->pf);
    }
}

static void arg_str0(pctx *p, const char *key, const char *v)
{
    if (v && *v)
        act__pf_arg_str(&p->pf, key, strlen(key), v, strlen(v));
}

static void on_end(void *ctx, const act__vstats *st)
{
    pctx *p = ctx;
    const act__vinfo *info = p->info;
    if (p->seq) {
        act__pf_seq_flush(&p->pf, p->seq);
        p->seq = 0;
    }
    if (!act__pf_track_seen(&p->pf, ACT__PF_UUID_META))
        act__pf_track_named(&p->pf, ACT__PF_UUID_META, 0, KEY("actrace"));
    uint32_t seq = act__pf_seq_new(&p->pf, p->base_mono, ACT__PF_UUID_META);
    act__pf_event(&p->pf, seq, ACT__PF_INSTANT, 0, p->base_mono, p->base_mono, KEY("actrace"),
                  KEY("actraceMetadata"));
    act__pf_arg_int(&p->pf, KEY("baseTimeNanoseconds"), info->base_unix_ns);
    arg_str0(p, "host_name", info->host_name);
    arg_str0(p, "trace_id", info->trace_id);
    arg_str0(p, "group_trace_id", info->group_trace_id);
    const char *name = info->trace_name;
    if (!name) {
        name = strrchr(p->path, '/');
        name = name ? name + 1 : p->path;
    }
    arg_str0(p, "traceName", name);
    if (info->proc_start & ACT__PROC_ID_PIDFS)
        act__pf_arg_int(&p->pf, KEY("actraceProcessId"), info->proc_start & ~ACT__PROC_ID_PIDFS);
    else if (info->proc_start > 0)
        act__pf_arg_int(&p->pf, KEY("actraceProcessStart"), info->proc_start);
    if (info->recovered)
        act__pf_arg_bool(&p->pf, KEY("actraceRecovered"), 1);
    if (info->has_rank)
        act__pf_arg_int(&p->pf, KEY("distributedInfo.rank"), info->rank);
    if (info->has_world)
        act__pf_arg_int(&p->pf, KEY("distributedInfo.world_size"), info->world);
    if (info->has_local)
        act__pf_arg_int(&p->pf, KEY("distributedInfo.local_rank"), info->local);
    if (!p->ndevs)
        act__out_char(&p->devs, '[');
    act__out_char(&p->devs, ']');
    act__out stats;
    size_t dn = 0, sn = 0;
    char *dj = NULL, *sj = NULL;
    if (act__out_finish(&p->devs) == 0)
        dj = act__out_mem_take(&p->devs, &dn);
    if (act__out_open_mem(&stats, 0) == 0) {
        act__write_stats_json(&stats, st);
        if (act__out_finish(&stats) == 0)
            sj = act__out_mem_take(&stats, &sn);
    }
    if (!dj || !sj)
        p->pf.err = ACT_ENOMEM;
    else {
        act__pf_arg_json(&p->pf, KEY("deviceProperties"), dj, dn);
        act__pf_arg_json(&p->pf, KEY("actraceStats"), sj, sn);
    }
    free(dj);
    free(sj);
    act__pf_event_end(&p->pf);
}

int act__write_perfetto(act_session *s, const char *path, char *err, size_t errcap)
{
    act__out out;
    int rc = act__writer_open(&out, path, err, errcap);
    if (rc)
        return rc;
    pctx p;
    memset(&p, 0, sizeof p);
    p.path = path;
    /* deviceProperties and actraceStats are small: built in memory. */
    if (act__pf_init(&p.pf, &out) || act__out_open_mem(&p.devs, 0)) {
        act__pf_free(&p.pf);
        act__out_abort(&out);
        snprintf(err, errcap, "%s: out of memory", path);
        return ACT_ENOMEM;
    }
    p.g_ext = act__pf_intern(&p.pf, KEY("External id"));
    p.g_unfinished = act__pf_intern(&p.pf, KEY("unfinished"));
    p.g_corr = act__pf_intern(&p.pf, KEY("correlation"));
    p.g_device = act__pf_intern(&p.pf, KEY("device"));
    p.g_stream = act__pf_intern(&p.pf, KEY("stream"));
    p.g_backend = act__pf_intern(&p.pf, KEY("backend"));
    p.g_unnamed = act__pf_intern(&p.pf, KEY("(unnamed)"));
    if (!p.g_ext || !p.g_unfinished || !p.g_corr || !p.g_device || !p.g_stream ||
        !p.g_backend || !p.g_unnamed) {
        act__pf_free(&p.pf);
        act__out_abort(&p.devs);
        act__out_abort(&out);
        snprintf(err, errcap, "%s: out of memory", path);
        return ACT_ENOMEM;
    }
    act__visitor v = {sizeof v, &p, on_begin, on_device, NULL, on_process, on_thread,
                      on_thread_events, on_event, on_counter_track, on_counter, on_end};
    char verr[256];
    int vrc = act__visit(s, &v, verr, sizeof verr);
    int prc = act__pf_finish(&p.pf);
    act__pf_free(&p.pf);
    free(p.gname);
    act__out_abort(&p.devs);
    return act__writer_close(&out, vrc || prc, path, err, errcap);
}
