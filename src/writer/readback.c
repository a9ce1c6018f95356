/* SPDX-License-Identifier: MIT */
/*
 * The public read-back (actrace/visit.h): act_session_visit() is the
 * internal visitor (visit.h) seen through the public structs. It adds no
 * walk of its own: every consumer, the writers included, reads a session
 * through act__visit, so the bridge to torch.profiler sees what a trace
 * file carries. The only memory it takes is the series-name arrays of one
 * counter track at a time.
 *
 * A window's read-back (act_window_visit, session/window.c) is the same
 * walk over a session that is still collecting, filtered to the window's
 * times: the walk reads each chunk's committed records (chunk->used with
 * acquire loads, records published by release stores), holds the session
 * lock like every walk (no chunk, thread, device or stream list changes
 * under it), and converts counter ticks with act__time_of like the
 * writers. A span still open has no end yet: left out.
 */
#include <stdlib.h>
#include <string.h>

#include "actrace/errors.h"
#include "actrace/visit.h"
#include "writer/json_out.h"
#include "writer/visit.h"

_Static_assert(ACT_VISIT_HOST == ACT__HOST_DEVICE, "host device id");
_Static_assert(ACT_VISIT_DEVICE_PID_BASE == ACT__DEVICE_PID_BASE, "device pid base");
_Static_assert((int)ACT_VISIT_ARG_STRING == (int)ACT__V_STR &&
                   (int)ACT_VISIT_ARG_JSON == (int)ACT__V_JSON &&
                   (int)ACT_VISIT_ARG_BOOL == (int)ACT__V_BOOL &&
                   (int)ACT_VISIT_ARG_DOUBLE == (int)ACT__V_DOUBLE &&
                   (int)ACT_VISIT_ARG_UINT == (int)ACT__V_UINT &&
                   (int)ACT_VISIT_ARG_INT == (int)ACT__V_INT,
               "arg kinds");

typedef struct rb {
    act_visitor v; /* the caller's, widened to ours */
    act_session *s;
    int32_t pid;
    /* the current counter track's series names */
    act_visit_counter_track ct;
    const char **names;
    size_t cap;
    int oom;
    /* A window's read-back (act__readback): events and samples outside
     * [lo, hi] and spans still open are left out. */
    int window;
    int64_t lo, hi;
} rb;

void act_visitor_init(act_visitor *v)
{
    if (!v)
        return;
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
}

static void on_begin(void *ctx, const act__vinfo *in)
{
    rb *r = ctx;
    r->pid = in->pid;
    act_visit_info o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.pid = in->pid;
    o.mono_to_unix_ns = in->mono_to_unix_ns;
    o.base_unix_ns = in->base_unix_ns;
    o.start_ns = r->s->start_mono_ns;
    o.trace_id = in->trace_id;
    o.host_name = in->host_name;
    r->v.begin(r->v.ctx, &o);
}

static void on_device(void *ctx, const act__vdevice *d)
{
    rb *r = ctx;
    act_visit_device o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.id = d->id;
    o.pid = (int32_t)(ACT__DEVICE_PID_BASE + d->id);
    o.name = d->name ? d->name : "";
    o.vendor = d->vendor ? d->vendor : "";
    o.backend = d->backend ? d->backend : "";
    r->v.device(r->v.ctx, &o);
}

static void on_process(void *ctx, const act__vprocess *p)
{
    rb *r = ctx;
    act_visit_track o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.pid = p->pid;
    o.tid = -1;
    o.name = p->name ? p->name : "";
    o.sort_index = p->sort_index;
    o.device = p->device;
    r->v.track(r->v.ctx, &o);
}

static void on_thread(void *ctx, const act__vthread *t)
{
    rb *r = ctx;
    act_visit_track o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.pid = t->pid;
    o.tid = t->tid;
    o.name = t->name ? t->name : "";
    o.device = t->pid >= (int32_t)ACT__DEVICE_PID_BASE ? (uint32_t)(t->pid - (int32_t)ACT__DEVICE_PID_BASE)
                                                        : ACT__HOST_DEVICE;
    o.is_stream = t->is_stream;
    r->v.track(r->v.ctx, &o);
}

static void on_event(void *ctx, const act__vevent *e)
{
    rb *r = ctx;
    if (r->window && (e->open || e->t0 < r->lo || e->t1 > r->hi))
        return;
    act_visit_event o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.kind = (e->kind == ACT__R_SPAN || e->kind == ACT__R_EMIT_SPAN) ? ACT_VISIT_SPAN : ACT_VISIT_INSTANT;
    o.open = e->open;
    o.flow_dir = e->flow_dir;
    o.from_plugin = e->kind == ACT__R_EMIT_SPAN || e->kind == ACT__R_EMIT_INSTANT;
    o.type = e->type;
    o.source = e->source;
    o.pid = e->pid;
    o.tid = e->tid;
    o.start_ns = e->t0;
    o.end_ns = e->t1;
    o.external_id = e->ext;
    o.correlation = e->corr;
    o.device = e->device;
    o.nargs_hint = e->has_args;
    o.stream = e->stream;
    o.flow = e->flow;
    uint32_t len = 0;
    o.name = act__visit_ref(e->c, e->name, &len);
    o.name_len = len;
    o.category = e->cat ? e->cat : "";
    o.backend = e->backend ? e->backend : "";
    o.impl = e;
    r->v.event(r->v.ctx, &o);
}

size_t act_visit_event_args(const act_visit_event *e, act_visit_arg *out, size_t cap)
{
    if (!e || !e->impl || !e->nargs_hint)
        return 0;
    size_t stride = cap && out ? out[0].struct_size : 0;
    if (cap && stride < offsetof(act_visit_arg, v) + sizeof out->v)
        cap = 0; /* a struct too small to hold an arg: count only */
    const act__vevent *in = e->impl;
    act__vuniq u;
    act__varg a;
    size_t n = 0;
    act__vuniq_start(&u, &in->args, ACT__ARGS_ALL);
    while (act__vuniq_next(&u, &a)) {
        if (n < cap) {
            act_visit_arg *o = (act_visit_arg *)((char *)out + n * stride);
            uint32_t kl = 0, vl = 0;
            o->kind = a.kind;
            o->key = act__visit_ref(a.c, a.key, &kl);
            o->key_len = kl;
            switch (a.kind) {
            case ACT__V_INT: o->v.i = (int64_t)a.val; break;
            case ACT__V_UINT: o->v.u = a.val; break;
            case ACT__V_DOUBLE: memcpy(&o->v.d, &a.val, sizeof o->v.d); break;
            case ACT__V_BOOL: o->v.b = a.val != 0; break;
            default:
                o->kind = ACT_VISIT_ARG_STRING;
                o->v.s.ptr = act__visit_ref(a.c, (uint32_t)a.val, &vl);
                o->v.s.len = vl;
                break;
            }
            /* A JSON arg: its own kind for callers that know it (by their
             * struct size), and only when the writers write it as JSON. */
            if (stride >= offsetof(act_visit_arg, reserved)) {
                o->from_json = a.kind == ACT__V_JSON;
                if (o->from_json && act__json_valid(o->v.s.ptr, o->v.s.len))
                    o->kind = ACT_VISIT_ARG_JSON;
            }
        }
        n++;
    }
    /* The bandwidth the writers add (visit.c's mem_bandwidth): an arg of
     * the written trace, so one here too. */
    if (in->has_mem_bw) {
        if (n < cap) {
            act_visit_arg *o = (act_visit_arg *)((char *)out + n * stride);
            o->kind = ACT_VISIT_ARG_DOUBLE;
            o->key = ACT__MEM_BW_KEY;
            o->key_len = sizeof ACT__MEM_BW_KEY - 1;
            o->v.d = in->mem_bw_gbps;
            if (stride >= offsetof(act_visit_arg, reserved))
                o->from_json = 0;
        }
        n++;
    }
    return n;
}

static void on_counter_track(void *ctx, const act__vctrack *ct)
{
    rb *r = ctx;
    if (ct->nseries * 2 > r->cap) {
        const char **p = realloc(r->names, ct->nseries * 2 * sizeof *p);
        if (!p) {
            r->oom = 1;
            r->ct.struct_size = 0; /* its samples are skipped */
            return;
        }
        r->names = p;
        r->cap = ct->nseries * 2;
    }
    for (size_t i = 0; i < ct->nseries; i++) {
        const act__series *se = ct->series[i];
        r->names[i] = se->series ? se->series : "";
        r->names[ct->nseries + i] = se->unit ? se->unit : "";
    }
    memset(&r->ct, 0, sizeof r->ct);
    r->ct.struct_size = sizeof r->ct;
    r->ct.id = ct->index;
    r->ct.pid = ct->pid;
    r->ct.device = ct->device;
    r->ct.name = ct->name ? ct->name : "";
    r->ct.category = ct->cat ? ct->cat : "";
    r->ct.nseries = ct->nseries;
    r->ct.series = r->names;
    r->ct.units = r->names + ct->nseries;
    if (r->v.counter_track)
        r->v.counter_track(r->v.ctx, &r->ct);
}

static void on_counter(void *ctx, const act__vctrack *ct, const act__vcsample *cs)
{
    rb *r = ctx;
    (void)ct;
    if (!r->ct.struct_size || !r->v.counter)
        return;
    if (r->window && (cs->ts < r->lo || cs->ts > r->hi))
        return;
    act_visit_sample o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.ts_ns = cs->ts;
    o.nchanged = cs->nchanged;
    o.changed = cs->changed;
    o.values = cs->changed_val;
    o.current = cs->cur;
    o.seen = cs->seen;
    r->v.counter(r->v.ctx, &r->ct, &o);
}

static void on_end(void *ctx, const act__vstats *st)
{
    rb *r = ctx;
    act_visit_stats o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.recorded = st->recorded;
    o.dropped = st->dropped;
    o.args_recorded = st->args_recorded;
    o.args_dropped = st->args_dropped;
    o.nreasons = ACT__DROP_NREASONS;
    o.reason_names = st->reason_names;
    o.by_reason = st->by_reason;
    o.counter_samples = st->counter_samples;
    act_visit_plugin *pl = calloc(st->nplugins ? st->nplugins : 1, sizeof *pl);
    const act_visit_plugin **pp = calloc(st->nplugins ? st->nplugins : 1, sizeof *pp);
    if (!pl || !pp)
        r->oom = 1;
    else {
        for (size_t i = 0; i < st->nplugins; i++) {
            const act__vplugin *in = &st->plugins[i];
            pl[i].struct_size = sizeof pl[i];
            pl[i].name = in->name ? in->name : "";
            pl[i].path = in->path ? in->path : "";
            pl[i].rejected = in->rejected;
            pl[i].filtered = in->filtered;
            pl[i].dropped = in->dropped;
            pl[i].nwarnings = in->nwarnings;
            pl[i].warnings = in->warnings;
            pp[i] = &pl[i];
        }
        o.nplugins = st->nplugins;
        o.plugins = pp;
    }
    r->v.end(r->v.ctx, &o);
    free(pl);
    free(pp);
}

int act_session_visit(act_session *s, const act_visitor *v)
{
    return act__readback(s, v, 0, INT64_MIN, INT64_MAX);
}

int act__readback(act_session *s, const act_visitor *v, int window, int64_t lo, int64_t hi)
{
    if (!s || !v || v->struct_size < offsetof(act_visitor, begin))
        return ACT_EINVAL;
    rb r;
    memset(&r, 0, sizeof r);
    size_t n = v->struct_size;
    if (n > sizeof r.v) {
        const unsigned char *tail = (const unsigned char *)v + sizeof r.v;
        for (size_t i = 0; i < n - sizeof r.v; i++)
            if (tail[i])
                return ACT_EINVAL;
        n = sizeof r.v;
    }
    memcpy(&r.v, v, n);
    int st = atomic_load(&s->state);
    if (window ? (act__session_started() != s || st >= ACT__S_STOPPED)
               : (st != ACT__S_CREATED && st != ACT__S_STOPPED))
        return ACT_ESTATE;
    r.s = s;
    r.window = window;
    r.lo = lo;
    r.hi = hi;
    act__visitor iv;
    memset(&iv, 0, sizeof iv);
    iv.struct_size = sizeof iv;
    iv.ctx = &r;
    iv.begin = r.v.begin ? on_begin : NULL;
    iv.device = r.v.device ? on_device : NULL;
    iv.process = r.v.track ? on_process : NULL;
    iv.thread = r.v.track ? on_thread : NULL;
    iv.event = r.v.event ? on_event : NULL;
    iv.counter_track = r.v.counter_track || r.v.counter ? on_counter_track : NULL;
    iv.counter = r.v.counter ? on_counter : NULL;
    iv.end = r.v.end ? on_end : NULL;
    char err[128];
    int rc = act__visit(s, &iv, err, sizeof err);
    free(r.names);
    return rc ? rc : r.oom ? ACT_ENOMEM : 0;
}
