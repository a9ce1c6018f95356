/* SPDX-License-Identifier: MIT */
/*
 * The public read-back (actrace/visit.h), through the public API only: the
 * application records operators with correlation ids while the example
 * plugin simulates a device. act_session_visit must hand back the device,
 * its named streams, the operators, the plugin's runtime calls, kernels
 * (with their typed args) and copies, flows pairing each launch with its
 * device work, the counter track and its samples, and the plugin in the
 * stats; it must agree with the trace the session then writes, refuse a
 * collecting session and a visitor with an unknown non-zero tail, and
 * accept a visitor from an older header (a smaller struct).
 */
#include <stdlib.h>
#include <unistd.h>

#include "actrace/visit.h"
#include "check.h"
/* Only some of the shared helpers are used here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "plugin_test_util.h"

#define LAUNCHES 5

typedef struct seen {
    int64_t start_ns;
    int begins, ends, devices, streams, dev_procs;
    uint32_t dev_id;
    int32_t dev_pid;
    char backend[32];
    int ops, ops_ext_ok, kernels, copies, launches, args_ok, bw_ok;
    int flow_start, flow_end, flow_pairs;
    uint64_t start_ids[64], end_ids[64];
    int ctracks, samples;
    char unit[8];
    size_t nplugins;
    char plugin[32];
    uint64_t recorded;
    int events;
} seen;

static void app_body(void)
{
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "op_%d", i);
        act_correlation_push(100 + (uint64_t)i);
        act_span_begin(ACT_CPU_OP, name);
        sleep_ms(1);
        act_span_end();
        act_correlation_pop();
    }
}

static void on_begin(void *ctx, const act_visit_info *in)
{
    seen *s = ctx;
    s->begins++;
    CHECK_EQ_INT(in->pid, getpid());
    s->start_ns = in->start_ns;
    CHECK(in->mono_to_unix_ns > 1600000000LL * 1000000000LL); /* after 2020 */
}

static void on_device(void *ctx, const act_visit_device *d)
{
    seen *s = ctx;
    s->devices++;
    CHECK_EQ_STR(d->name, "Example NPU 0");
    CHECK_EQ_STR(d->vendor, "Example Corp");
    s->dev_id = d->id;
    s->dev_pid = d->pid;
    snprintf(s->backend, sizeof s->backend, "%s", d->backend);
    CHECK_EQ_INT(d->pid, ACT_VISIT_DEVICE_PID_BASE + (int32_t)d->id);
}

static void on_track(void *ctx, const act_visit_track *t)
{
    seen *s = ctx;
    if (t->tid == -1 && t->device != ACT_VISIT_HOST) {
        s->dev_procs++;
        CHECK(strncmp(t->name, "Example NPU 0", 13) == 0);
    }
    if (t->is_stream) {
        s->streams++;
        CHECK(strcmp(t->name, "compute") == 0 || strcmp(t->name, "copy") == 0);
        CHECK_EQ_INT(t->tid, strcmp(t->name, "compute") == 0 ? 1 : 2);
    }
}

static void on_event(void *ctx, const act_visit_event *e)
{
    seen *s = ctx;
    s->events++;
    CHECK(e->end_ns >= e->start_ns);
    if (!e->from_plugin && e->type == ACT_CPU_OP && e->name_len == 4 &&
        memcmp(e->name, "op_", 3) == 0) {
        s->ops++;
        s->ops_ext_ok += e->external_id == 100 + (uint64_t)(e->name[3] - '0');
        CHECK_EQ_INT(e->device, ACT_VISIT_HOST);
    }
    if (e->from_plugin && e->type == ACT_CONCURRENT_KERNEL) {
        s->kernels++;
        CHECK_EQ_INT(e->device, s->dev_id);
        CHECK_EQ_INT(e->pid, s->dev_pid);
        CHECK_EQ_INT(e->tid, 1);
        CHECK_EQ_STR(e->backend, "example");
        act_visit_arg a[4];
        memset(a, 0, sizeof a);
        for (int i = 0; i < 4; i++)
            a[i].struct_size = sizeof a[i];
        size_t n = act_visit_event_args(e, a, 4);
        /* The backend arg, then the plugin's two. */
        int grid = 0, queue = 0;
        for (size_t i = 0; i < n && i < 4; i++) {
            if (a[i].key_len == 4 && memcmp(a[i].key, "grid", 4) == 0)
                grid = a[i].kind == ACT_VISIT_ARG_INT && a[i].v.i % 64 == 0 && a[i].v.i > 0;
            if (a[i].key_len == 5 && memcmp(a[i].key, "queue", 5) == 0)
                queue = a[i].kind == ACT_VISIT_ARG_STRING && a[i].v.s.len == 7 &&
                        memcmp(a[i].v.s.ptr, "compute", 7) == 0;
        }
        s->args_ok += grid && queue;
        /* Counting without room. */
        CHECK_EQ_INT(act_visit_event_args(e, NULL, 0), n);
    }
    if (e->from_plugin && e->type == ACT_GPU_MEMCPY) {
        s->copies++;
        CHECK_EQ_INT(e->tid, 2);
        /* Its "bytes" and the bandwidth a written trace gives it (bytes per
         * ns, 0 for an empty span). */
        act_visit_arg a[8];
        memset(a, 0, sizeof a);
        for (int i = 0; i < 8; i++)
            a[i].struct_size = sizeof a[i];
        size_t n = act_visit_event_args(e, a, 8);
        double bytes = -1, bw = -1;
        for (size_t i = 0; i < n && i < 8; i++) {
            if (a[i].key_len == 5 && memcmp(a[i].key, "bytes", 5) == 0)
                bytes = a[i].kind == ACT_VISIT_ARG_UINT ? (double)a[i].v.u
                        : a[i].kind == ACT_VISIT_ARG_INT ? (double)a[i].v.i : -1;
            if (a[i].key_len == 23 && memcmp(a[i].key, "memory bandwidth (GB/s)", 23) == 0 &&
                a[i].kind == ACT_VISIT_ARG_DOUBLE)
                bw = a[i].v.d;
        }
        double want = e->end_ns > e->start_ns ? bytes / (double)(e->end_ns - e->start_ns) : 0;
        s->bw_ok += bytes > 0 && bw == want;
    }
    if (e->from_plugin && e->type == ACT_RUNTIME) {
        s->launches++;
        CHECK_EQ_INT(e->device, ACT_VISIT_HOST);
        CHECK_EQ_INT(e->pid, getpid());
    }
    if (e->flow_dir == ACT_VISIT_FLOW_START && s->flow_start < 64)
        s->start_ids[s->flow_start++] = e->flow;
    if (e->flow_dir == ACT_VISIT_FLOW_END && s->flow_end < 64)
        s->end_ids[s->flow_end++] = e->flow;
}

static void on_ctrack(void *ctx, const act_visit_counter_track *ct)
{
    seen *s = ctx;
    s->ctracks++;
    CHECK_EQ_STR(ct->name, "utilization");
    CHECK_EQ_INT(ct->device, s->dev_id);
    CHECK_EQ_INT(ct->nseries, 1);
    snprintf(s->unit, sizeof s->unit, "%s", ct->units[0]);
}

static void on_counter(void *ctx, const act_visit_counter_track *ct, const act_visit_sample *cs)
{
    seen *s = ctx;
    s->samples++;
    CHECK_EQ_INT(cs->nchanged, 1);
    CHECK(cs->values[0] >= 0.0 && cs->values[0] <= 100.0);
    CHECK(cs->current[0] == cs->values[0]);
    (void)ct;
}

static void on_end(void *ctx, const act_visit_stats *st)
{
    seen *s = ctx;
    s->ends++;
    s->nplugins = st->nplugins;
    if (st->nplugins)
        snprintf(s->plugin, sizeof s->plugin, "%s", st->plugins[0]->name);
    s->recorded = st->recorded;
    CHECK_EQ_INT(st->dropped, 0);
    CHECK(st->nreasons > 0 && strcmp(st->reason_names[0], "buffer_full") == 0);
}

static void visitor(act_visitor *v, seen *s)
{
    memset(s, 0, sizeof *s);
    act_visitor_init(v);
    v->ctx = s;
    v->begin = on_begin;
    v->device = on_device;
    v->track = on_track;
    v->event = on_event;
    v->counter_track = on_ctrack;
    v->counter = on_counter;
    v->end = on_end;
}

int main(void)
{
    const char *trace = ACT_TRACE_DIR "/visit_example.json";
    unsetenv("ACTRACE_PLUGIN_DIR");
    unsetenv("ACTRACE_PLUGINS");
    act_session_opts o;
    act_session_opts_init(&o);
    const char *list[] = {"example"};
    o.plugins = list;
    o.plugin_count = 1;
    char cfg[64];
    snprintf(cfg, sizeof cfg, "EXAMPLE_LAUNCHES = %d\n", LAUNCHES);
    o.config_text = cfg;
    o.config_text_len = strlen(cfg);
    act_session *s = NULL;
    CHECK_FATAL(act_session_create(&o, &s) == 0);

    act_visitor v;
    seen got;
    visitor(&v, &got);
    CHECK_EQ_INT(act_session_visit(NULL, &v), ACT_EINVAL);
    CHECK_EQ_INT(act_session_visit(s, NULL), ACT_EINVAL);
    /* Never started: an empty walk, with begin and end. */
    CHECK_EQ_INT(act_session_visit(s, &v), 0);
    CHECK_EQ_INT(got.begins, 1);
    CHECK_EQ_INT(got.ends, 1);
    CHECK_EQ_INT(got.kernels, 0);
    CHECK_EQ_INT(got.start_ns, 0);

    CHECK_FATAL(act_session_start(s) == 0);
    app_body();
    CHECK_EQ_INT(act_session_visit(s, &v), ACT_ESTATE);
    CHECK_FATAL(act_session_stop(s) == 0);

    for (int pass = 0; pass < 2; pass++) {
        visitor(&v, &got);
        CHECK_EQ_INT(act_session_visit(s, &v), 0);
        CHECK_EQ_INT(got.begins, 1);
        CHECK(got.start_ns > 0);
        CHECK_EQ_INT(got.devices, 1);
        CHECK_EQ_STR(got.backend, "example");
        CHECK_EQ_INT(got.dev_procs, 1);
        CHECK_EQ_INT(got.streams, 2);
        CHECK_EQ_INT(got.ops, 4);
        CHECK_EQ_INT(got.ops_ext_ok, 4);
        CHECK_EQ_INT(got.kernels, LAUNCHES);
        CHECK_EQ_INT(got.args_ok, LAUNCHES);
        CHECK_EQ_INT(got.copies, LAUNCHES);
        CHECK_EQ_INT(got.bw_ok, LAUNCHES);
        CHECK_EQ_INT(got.launches, 2 * LAUNCHES);
        /* Each launch (kernel and copy) has one flow, both ends. */
        CHECK_EQ_INT(got.flow_start, 2 * LAUNCHES);
        CHECK_EQ_INT(got.flow_end, 2 * LAUNCHES);
        int pairs = 0;
        for (int i = 0; i < got.flow_start; i++)
            for (int j = 0; j < got.flow_end; j++)
                pairs += got.start_ids[i] == got.end_ids[j];
        CHECK_EQ_INT(pairs, 2 * LAUNCHES);
        CHECK_EQ_INT(got.ctracks, 1);
        CHECK_EQ_STR(got.unit, "%");
        CHECK_EQ_INT(got.samples, 2 * LAUNCHES);
        CHECK_EQ_INT(got.nplugins, 1);
        CHECK_EQ_STR(got.plugin, "example");
        CHECK_EQ_INT(got.ends, 1);
    }

    int events = got.events, flow_start = got.flow_start;

    /* An older caller: a visitor that ends after event. */
    seen old;
    act_visitor small;
    visitor(&small, &old);
    small.struct_size = offsetof(act_visitor, counter_track);
    small.counter_track = on_ctrack; /* beyond its size: never called */
    CHECK_EQ_INT(act_session_visit(s, &small), 0);
    CHECK_EQ_INT(old.kernels, LAUNCHES);
    CHECK_EQ_INT(old.ctracks, 0);

    /* A newer caller whose unknown tail is not zero: refused. */
    struct {
        act_visitor v;
        uint64_t extra;
    } big;
    memset(&big, 0, sizeof big);
    big.v = v;
    big.v.struct_size = sizeof big;
    big.extra = 1;
    CHECK_EQ_INT(act_session_visit(s, &big.v), ACT_EINVAL);
    big.extra = 0;
    CHECK_EQ_INT(act_session_visit(s, &big.v), 0);

    /* The written trace carries what the walk handed out. */
    mkdir(ACT_TRACE_DIR, 0755);
    CHECK_FATAL(act_session_write(s, trace) == 0);
    act_session_destroy(s);
    json_t *root = trace_load(trace);
    CHECK_FATAL(root != NULL);
    int x = 0, flows = 0;
    json_t *e;
    size_t i;
    json_array_foreach(json_object_get(root, "traceEvents"), i, e) {
        const char *ph = ev_str(e, "ph");
        if (ph && (strcmp(ph, "X") == 0 || strcmp(ph, "i") == 0))
            x++;
        if (ph && strcmp(ph, "s") == 0)
            flows++;
    }
    CHECK_EQ_INT(x, events);
    CHECK_EQ_INT(flows, flow_start);
    json_decref(root);
    return check_done();
}
