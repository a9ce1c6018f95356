/* SPDX-License-Identifier: MIT */
/*
 * What both trace writers (chrome.c, perfetto.c) use and neither owns: the
 * sink's open and close with the writers' error messages, and the two JSON
 * blocks both traces carry (a deviceProperties entry; actraceStats, which
 * the Perfetto trace keeps as an annotation), and the small output helpers
 * both use.
 *
 * Layering inside writer/ (tests/layering/check_layering.sh): write.c
 * dispatches to chrome.c or perfetto.c; those two never call each other;
 * both call down into this file, visit.c, pftrace.c and the sink
 * (json_fmt.c, out_sink.c), which call no writer.
 */
#include <stdio.h>
#include <string.h>

#include "engine/engine.h"
#include "writer/common.h"

int act__writer_open(act__out *o, const char *path, char *err, size_t errcap)
{
    int rc = act__out_open(o, path, NULL, 0);
    if (rc)
        snprintf(err, errcap, "%s", act__out_errmsg(o));
    return rc;
}

int act__writer_close(act__out *o, int oom, const char *path, char *err, size_t errcap)
{
    if (oom && !act__out_error(o)) {
        act__out_abort(o);
        snprintf(err, errcap, "%s: out of memory while writing the trace", path);
        return ACT_ENOMEM;
    }
    int rc = act__out_finish(o);
    if (rc)
        snprintf(err, errcap, "%s", act__out_errmsg(o));
    return rc;
}

static void put_arg_value(act__out *o, const act__arg *a)
{
    switch (a->kind) {
    case ACT__V_INT: put_i64(o, a->v.i); break;
    case ACT__V_UINT: put_u64(o, a->v.u); break;
    case ACT__V_DOUBLE: put_double(o, a->v.d); break;
    case ACT__V_BOOL: lit(o, a->v.b ? "true" : "false"); break;
    case ACT__V_STR:
    case ACT__V_JSON: act__out_str(o, a->v.s.p, a->v.s.n); break; /* plugins' args: no JSON */
    }
}

/* One deviceProperties entry (both writers: the JSON trace's deviceProperties,
 * the Perfetto trace's annotation). */
void act__write_device_json(act__out *o, const act__vdevice *dev)
{
    lit(o, "{\"id\":");
    put_u64(o, dev->id);
    lit(o, ",\"name\":");
    put_str0(o, dev->name);
    lit(o, ",\"vendor\":");
    put_str0(o, dev->vendor);
    lit(o, ",\"backend\":");
    put_str0(o, dev->backend);
    for (size_t k = 0; k < dev->nprops; k++) {
        act__out_char(o, ',');
        act__out_str(o, dev->props[k].key, dev->props[k].key_len);
        act__out_char(o, ':');
        put_arg_value(o, &dev->props[k]);
    }
    act__out_char(o, '}');
}

/* actraceStats as one JSON object (both writers; the Perfetto writer
 * carries it as an annotation). Args are counted apart from events: an arg
 * is recorded with its event or dropped with it (or because no event came
 * before it). */
void act__write_stats_json(act__out *o, const act__vstats *st)
{
    lit(o, "{\"recorded\":");
    put_u64(o, st->recorded);
    lit(o, ",\"dropped\":");
    put_u64(o, st->dropped);
    lit(o, ",\"args_recorded\":");
    put_u64(o, st->args_recorded);
    lit(o, ",\"args_dropped\":");
    put_u64(o, st->args_dropped);
    lit(o, ",\"args_dropped_by_reason\":{\"orphan_arg\":");
    put_u64(o, st->args_orphan);
    lit(o, ",\"event_dropped\":");
    put_u64(o, st->args_event_dropped);
    lit(o, ",\"reentrant\":");
    put_u64(o, st->args_reentrant);
    lit(o, "},\"dropped_by_reason\":{");
    for (int r = 0, n = 0; r < ACT__DROP_NREASONS; r++) {
        if (r == ACT__DROP_ORPHAN_ARG)
            continue; /* args: above */
        lit(o, n++ ? ",\"" : "\"");
        lit(o, st->reason_names[r]);
        lit(o, "\":");
        put_u64(o, st->by_reason[r]);
    }
    lit(o, "},\"dropped_by_type\":{");
    int first = 1;
    for (int k = 0; k < ACT__NTYPE_SLOTS; k++) {
        if (!st->by_type[k])
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
        put_u64(o, st->by_type[k]);
    }
    lit(o, "},\"buffer_bytes\":");
    put_u64(o, st->buffer_bytes);
    lit(o, ",\"buffer_limit_bytes\":");
    put_u64(o, st->buffer_limit_bytes);
    lit(o, ",\"plugins\":[");
    for (size_t i = 0; i < st->nplugins; i++) {
        const act__vplugin *p = &st->plugins[i];
        lit(o, i ? ",{\"name\":" : "{\"name\":");
        put_str0(o, p->name);
        lit(o, ",\"path\":");
        put_str0(o, p->path);
        lit(o, ",\"rejected\":");
        put_u64(o, p->rejected);
        lit(o, ",\"rejected_by_reason\":{");
        for (size_t k = 0; k < p->nreasons; k++) {
            if (k)
                act__out_char(o, ',');
            put_str0(o, p->reason_key[k]);
            act__out_char(o, ':');
            put_u64(o, p->reason_n[k]);
        }
        lit(o, "},\"filtered\":");
        put_u64(o, p->filtered);
        lit(o, ",\"dropped\":");
        put_u64(o, p->dropped);
        if (p->nwarnings) {
            lit(o, ",\"warnings\":[");
            for (size_t k = 0; k < p->nwarnings; k++) {
                if (k)
                    act__out_char(o, ',');
                put_str0(o, p->warnings[k]);
            }
            act__out_char(o, ']');
        }
        act__out_char(o, '}');
    }
    lit(o, "]");
    if (st->nseries) {
        lit(o, ",\"counter_samples\":");
        put_u64(o, st->counter_samples);
        lit(o, ",\"counter_events\":");
        put_u64(o, st->counter_events);
        lit(o, ",\"counters\":[");
        int firsts = 1;
        for (size_t i = 0; i < st->nseries; i++) {
            const act__series *e = st->series[i];
            if (!st->series_live[i])
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
    lit(o, "}");
}
