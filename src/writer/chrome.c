/* SPDX-License-Identifier: MIT */
/*
 * The Chrome Trace Event JSON writer (DESIGN.md section 6), in Kineto's
 * layout: schemaVersion, deviceProperties, metadata keys, displayTimeUnit,
 * baseTimeNanoseconds, traceEvents, distributedInfo, actraceStats,
 * traceName. Compact, one event per line.
 *
 * It formats what the session visitor (visit.h) hands it, in the order it
 * hands it: the visitor decides tracks, flows, order and statistics; this
 * file only writes JSON. It streams: events are formatted straight from the
 * session's chunks into the sink, so memory stays flat however large the
 * trace; the only cache is the escaped form of interned names.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/spool.h"
#include "writer/json_out.h"
#include "writer/visit.h"
#include "writer/common.h"
#include "writer/writers.h"

/* Strings longer than this are streamed instead of reserved at once. */
#define SMALL_STR 4096u

typedef struct name_ent {
    char *json; /* quoted, escaped */
    uint32_t len;
} name_ent;

typedef struct wctx {
    act__out *o;
    const act__vinfo *info;
    int64_t to_rel_ns;    /* add to a monotonic time: ns since base */
    int32_t pid;
    name_ent *names;
    size_t nnames;
    name_ent prefix[ACT__NTYPE_SLOTS + 1][2]; /* host event starts, by type and kind */
    name_ent unnamed;                         /* "(unnamed)" */
    char pidtid[64]; /* ,"pid":P,"tid":T,"ts":  of the thread being written */
    uint32_t pidtid_len;
    int firstdev;
    const char *path;
    int oom;
} wctx;

static inline char *cpy(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}
#define CPY(p, lit) cpy((p), (lit), sizeof(lit) - 1)

/* ---- names ----------------------------------------------------------------- */

/* The escaped JSON of an interned name, cached per write. */
static const name_ent *interned(wctx *w, act_name_id id)
{
    static const name_ent empty = {"\"\"", 2};
    if (ACT_LIKELY(id < w->nnames && w->names[id].json))
        return &w->names[id]; /* the usual case: no string table */
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
        len = interned(w, ref)->len - 2; /* the JSON string's quotes */
    if (len == 0)
        lit(w->o, "\"(unnamed)\"");
    else
        put_ref(w, c, ref);
}


/* ---- events ---------------------------------------------------------------- */

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
    case ACT__V_JSON: {
        /* Verbatim when it is one valid JSON value, else as a string. */
        uint32_t n;
        const char *v = act__visit_ref(c, (uint32_t)x, &n);
        if (act__json_valid(v, n))
            act__out_write(o, v, n);
        else
            put_ref(w, c, (uint32_t)x);
        break;
    }
    default: lit(o, "null"); break;
    }
}

/* Write the args of an event as `,"key":value` pairs (see
 * act__vargs_next_unique: keys are unique, those @p reserved (ACT__ARGS_*)
 * for skipped). */
static int put_args(wctx *w, act__vargs args, int first, int reserved)
{
    act__vuniq u;
    act__varg a;
    act__vuniq_start(&u, &args, reserved);
    while (act__vuniq_next(&u, &a)) {
        if (!first)
            act__out_char(w->o, ',');
        first = 0;
        put_ref(w, a.c, a.key);
        act__out_char(w->o, ':');
        put_value(w, a.c, a.kind, a.val);
    }
    return first;
}

static void put_ts(act__out *o, const char *key, size_t keylen, int64_t rel_ns)
{
    char *p = act__out_reserve(o, keylen + ACT__FMT_TS_MAX);
    p = cpy(p, key, keylen);
    act__out_commit(o, act__fmt_ts_us(p, rel_ns));
}

/* The duration to write for a span from @p rel0 lasting @p dur ns. Viewers
 * parse ts and dur into doubles and add them: fl(ts) + fl(dur) can round
 * one ulp past fl(ts + dur), the next span's start when the two touch, and
 * the spans then overlap. Write the largest dur <= the real one for which
 * the sum in doubles never passes the end's own double (strtod of a
 * three-decimal microsecond value is the correctly rounded quotient, as is
 * the division below, for |ns| < 2^53). At most a nanosecond or two is
 * given up, only when the rounding would go the wrong way. */
static int64_t safe_dur(int64_t rel0, int64_t dur)
{
    if (dur <= 0)
        return dur;
    double t0 = (double)rel0 / 1e3, end = (double)(rel0 + dur) / 1e3;
    for (int k = 0; k < 4 && dur > 0 && t0 + (double)dur / 1e3 > end; k++)
        dur--;
    return dur;
}

/* The constant start of a host event of @p type and @p kind:
 * {"ph":"X","cat":"cpu_op","name":  (cached per write). */
static const name_ent *host_prefix(wctx *w, const char *cat, int type, uint8_t kind)
{
    static const name_ent none = {"", 0};
    int slot = act__type_slot(type);
    if (slot < 0)
        slot = ACT__NTYPE_SLOTS; /* not a type: cannot be recorded, but be safe */
    name_ent *e = &w->prefix[slot][kind == ACT__R_SPAN];
    if (!e->json) {
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
static void emit_host(wctx *w, const act__vevent *e)
{
    act__out *o = w->o;
    const name_ent *pre = host_prefix(w, e->cat, e->type, e->kind);
    const name_ent *nm = NULL;
    if (!(e->name & ACT__REF_LOCAL)) {
        nm = interned(w, e->name);
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
        put_name(w, e->c, e->name);
        p = act__out_reserve(o, w->pidtid_len + 2 * ACT__FMT_TS_MAX + 16);
    }
    p = cpy(p, w->pidtid, w->pidtid_len);
    int64_t rel0 = e->t0 + w->to_rel_ns;
    p = act__fmt_ts_us(p, rel0);
    if (e->kind == ACT__R_SPAN) {
        p = CPY(p, ",\"dur\":");
        p = act__fmt_ts_us(p, safe_dur(rel0, e->t1 - e->t0));
    }
    if (!(e->ext || e->open || e->has_args)) {
        p = CPY(p, "},\n");
        act__out_commit(o, p);
        return;
    }
    act__out_commit(o, p);
    /* Args: the external correlation first (Kineto's "External id"). */
    lit(o, ",\"args\":{");
    int first = 1;
    if (e->ext) {
        lit(o, "\"External id\":");
        put_u64(o, e->ext);
        first = 0;
    }
    if (e->open) {
        lit(o, first ? "\"unfinished\":true" : ",\"unfinished\":true");
        first = 0;
    }
    put_args(w, e->args, first, ACT__ARGS_HOST);
    lit(o, "}},\n");
}

/* One plugin record. */
static void emit_plugin(wctx *w, const act__vevent *e)
{
    act__out *o = w->o;
    lit(o, e->kind == ACT__R_EMIT_SPAN ? "{\"ph\":\"X\",\"cat\":" : "{\"ph\":\"i\",\"s\":\"t\",\"cat\":");
    put_str0(o, e->cat);
    lit(o, ",\"name\":");
    put_name(w, e->c, e->name);
    lit(o, ",\"pid\":");
    put_i64(o, e->pid);
    lit(o, ",\"tid\":");
    put_u64(o, e->tid);
    int64_t rel0 = e->t0 + w->to_rel_ns;
    put_ts(o, ",\"ts\":", 6, rel0);
    if (e->kind == ACT__R_EMIT_SPAN)
        put_ts(o, ",\"dur\":", 7, safe_dur(rel0, e->t1 - e->t0));
    lit(o, ",\"args\":{");
    if (e->ext) {
        lit(o, "\"External id\":");
        put_u64(o, e->ext);
        act__out_char(o, ',');
    }
    if (e->corr) {
        lit(o, "\"correlation\":");
        put_u64(o, e->corr);
        act__out_char(o, ',');
    }
    if (e->device != ACT__HOST_DEVICE) {
        lit(o, "\"device\":");
        put_u64(o, e->device);
        lit(o, ",\"stream\":");
        put_u64(o, e->stream);
        act__out_char(o, ',');
    }
    lit(o, "\"backend\":");
    put_str0(o, e->backend);
    put_args(w, e->args, 0, ACT__ARGS_PLUGIN);
    if (e->has_mem_bw) {
        lit(o, ",\"" ACT__MEM_BW_KEY "\":");
        put_double(o, e->mem_bw_gbps);
    }
    lit(o, "}},\n");

    if (e->flow_dir) {
        lit(o, e->flow_dir == 1 ? "{\"ph\":\"s\",\"id\":" : "{\"ph\":\"f\",\"bp\":\"e\",\"id\":");
        put_u64(o, e->flow);
        lit(o, ",\"pid\":");
        put_i64(o, e->pid);
        lit(o, ",\"tid\":");
        put_u64(o, e->tid);
        put_ts(o, ",\"ts\":", 6, rel0);
        lit(o, ",\"cat\":\"ac2g\",\"name\":\"ac2g\"},\n");
    }
}

static void on_event(void *ctx, const act__vevent *e)
{
    wctx *w = ctx;
    if (e->kind == ACT__R_SPAN || e->kind == ACT__R_INSTANT)
        emit_host(w, e);
    else
        emit_plugin(w, e);
}

static void on_thread_events(void *ctx, int32_t pid, int32_t tid)
{
    wctx *w = ctx;
    char *p = w->pidtid;
    p = CPY(p, ",\"pid\":");
    p = act__fmt_i64(p, pid);
    p = CPY(p, ",\"tid\":");
    p = act__fmt_i64(p, tid);
    p = CPY(p, ",\"ts\":");
    w->pidtid_len = (uint32_t)(p - w->pidtid);
}

/* ---- counters --------------------------------------------------------------- */

/* Every sample of a counter track carries the same set of series (the
 * track's), each with its latest value: Chrome counters describe the whole
 * state of the track at a time. */
static void on_counter(void *ctx, const act__vctrack *ct, const act__vcsample *cs)
{
    wctx *w = ctx;
    act__out *o = w->o;
    lit(o, "{\"ph\":\"C\",\"cat\":\"");
    lit(o, ct->cat);
    lit(o, "\",\"name\":");
    put_str0(o, ct->name);
    lit(o, ",\"pid\":");
    put_i64(o, ct->pid);
    lit(o, ",\"tid\":0");
    put_ts(o, ",\"ts\":", 6, cs->ts + w->to_rel_ns);
    lit(o, ",\"args\":{");
    int first = 1;
    for (size_t k = 0; k < ct->nseries; k++) {
        if (!cs->seen[k])
            continue;
        if (!first)
            act__out_char(o, ',');
        first = 0;
        /* An empty key breaks viewers: name it "value". */
        put_str0(o, ct->series[k]->series[0] ? ct->series[k]->series : "value");
        act__out_char(o, ':');
        put_double(o, cs->cur[k]);
    }
    lit(o, "}},\n");
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

static void on_process(void *ctx, const act__vprocess *p)
{
    wctx *w = ctx;
    meta(w->o, "process_name", p->pid, 0, "name", p->name, 0);
    meta(w->o, "process_sort_index", p->pid, 0, "sort_index", NULL, p->sort_index);
}

static void on_thread(void *ctx, const act__vthread *t)
{
    wctx *w = ctx;
    meta(w->o, "thread_name", t->pid, t->tid, "name", t->name, 0);
}

static void on_begin(void *ctx, const act__vinfo *info)
{
    wctx *w = ctx;
    w->info = info;
    w->to_rel_ns = info->to_rel_ns;
    w->pid = info->pid;
    lit(w->o, "{\"schemaVersion\":1,\"deviceProperties\":[");
}

static void on_device(void *ctx, const act__vdevice *dev)
{
    wctx *w = ctx;
    lit(w->o, w->firstdev ? ",\n" : "\n");
    w->firstdev = 1;
    act__write_device_json(w->o, dev);
}

static void on_metadata(void *ctx, const act__vinfo *info)
{
    wctx *w = ctx;
    act__out *o = w->o;
    lit(o, "],\n");
    if (info->trace_id && *info->trace_id) {
        lit(o, "\"trace_id\":");
        put_str0(o, info->trace_id);
        lit(o, ",\n");
    }
    /* Kineto hands the group id only to its logger observer; actrace
     * writes it next to trace_id, where tools look for request ids. */
    if (info->group_trace_id && *info->group_trace_id) {
        lit(o, "\"group_trace_id\":");
        put_str0(o, info->group_trace_id);
        lit(o, ",\n");
    }
    lit(o, "\"host_name\":");
    put_str0(o, info->host_name);
    lit(o, ",\n\"displayTimeUnit\":\"ms\",\n\"baseTimeNanoseconds\":");
    put_i64(o, info->base_unix_ns);
    if (info->proc_start > 0) {
        /* The process's identity (act__proc_id): with the pid it names one
         * process across exec, so that `actrace record` keeps an exec'd
         * image on the same pid and moves only a reused one. Its pidfs
         * inode, else its start in clock ticks after boot. */
        if (info->proc_start & ACT__PROC_ID_PIDFS) {
            lit(o, ",\n\"actraceProcessId\":");
            put_i64(o, info->proc_start & ~ACT__PROC_ID_PIDFS);
        } else {
            lit(o, ",\n\"actraceProcessStart\":");
            put_i64(o, info->proc_start);
        }
    }
    lit(o, ",\n\"traceEvents\":[\n");
}

static void on_end(void *ctx, const act__vstats *st)
{
    wctx *w = ctx;
    act__out *o = w->o;
    const act__vinfo *info = w->info;
    /* Close the event array with a metadata event, so the last real event's
     * trailing comma stays valid JSON. */
    lit(o, "{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":");
    put_i64(o, w->pid);
    lit(o, ",\"tid\":0,\"args\":{\"labels\":\"actrace ");
    lit(o, ACT_VERSION_STRING);
    lit(o, "\"}}\n]");

    /* distributedInfo in every trace, in Kineto's layout; ", " and ": "
     * because HTA finds a file's rank with "rank":\s+(\d+). */
    lit(o, ",\n\"distributedInfo\": {\"backend\": ");
    put_str0(o, info->dist_backend);
    lit(o, ", \"rank\": ");
    put_i64(o, info->rank);
    lit(o, ", \"world_size\": ");
    put_i64(o, info->world);
    lit(o, ", \"local_rank\": ");
    put_i64(o, info->local);
    act__out_char(o, '}');
    if (!info->has_rank) {
        /* No launcher variable named a rank: the 0 above is a default, so
         * that a launcher's own trace (torchrun, a shell) is told apart
         * from rank 0's (record --per-process, actrace merge). */
        lit(o, ",\n\"actraceRankDefault\":true");
    }
    if (info->recovered) {
        /* Rebuilt from the spool of a process that could not write its
         * trace: per-thread drop counts died with it. */
        lit(o, ",\n\"actraceRecovered\":true");
    }
    lit(o, ",\n\"actraceStats\":");
    act__write_stats_json(o, st);
    lit(o, ",\n\"traceName\":");
    const char *name = info->trace_name;
    if (!name) {
        name = strrchr(w->path, '/');
        name = name ? name + 1 : w->path;
    }
    put_str0(o, name);
    lit(o, "}\n");
}

/* ---- entry ------------------------------------------------------------------- */

int act__write_chrome(act_session *s, const char *path, char *err, size_t errcap)
{
    act__out out;
    int rc = act__writer_open(&out, path, err, errcap);
    if (rc)
        return rc;
    wctx w;
    memset(&w, 0, sizeof w);
    w.o = &out;
    w.path = path;
    w.unnamed.json = "\"(unnamed)\"";
    w.unnamed.len = 11;
    act__visitor v = {sizeof v, &w, on_begin, on_device, on_metadata, on_process, on_thread,
                      on_thread_events, on_event, NULL, on_counter, on_end};
    char verr[256];
    int vrc = act__visit(s, &v, verr, sizeof verr);
    for (size_t i = 0; i < w.nnames; i++)
        free(w.names[i].json);
    for (size_t i = 0; i < ACT_ARRAY_SIZE(w.prefix); i++) {
        free(w.prefix[i][0].json);
        free(w.prefix[i][1].json);
    }
    free(w.names);
    return act__writer_close(&out, vrc || w.oom, path, err, errcap);
}
