/* SPDX-License-Identifier: MIT */
/*
 * A plugin built against the frozen copy of the first published plugin.h
 * (tests/abi/v1/actrace/plugin.h). It uses every host function of ABI 1.0
 * once and emits a fixed set of events; test_abi_v1.c checks that they
 * keep appearing, unchanged, in traces written by every later libactrace.
 *
 * Never edit this file or the frozen header: a change here that a test
 * needs means the ABI promise was broken (docs/ABI.md).
 */
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <actrace/plugin.h>

typedef struct v1 {
    const act_plugin_host *h;
    uint32_t dev, track;
    int32_t custom;
    int64_t t0;
    uint64_t tid, ext;
} v1;

static v1 state_storage;

static act_plugin_arg arg(int32_t kind, const char *key)
{
    act_plugin_arg a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.kind = kind;
    a.key = key;
    a.key_len = (uint32_t)strlen(key);
    return a;
}

static act_plugin_record rec(int32_t kind, int32_t type, uint32_t dev,
                             uint64_t stream, int64_t s, int64_t e,
                             uint64_t corr, const char *name)
{
    act_plugin_record r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.kind = kind;
    r.type = type;
    r.device = dev;
    r.stream = stream;
    r.start_ns = s;
    r.end_ns = e;
    r.correlation = corr;
    r.name = name;
    r.name_len = (uint32_t)strlen(name);
    return r;
}

static int32_t v1_init(const act_plugin_host *h, void **state, char *reason,
                       uint32_t cap)
{
    v1 *p = &state_storage;
    memset(p, 0, sizeof *p);
    p->h = h;
    if (h->abi_major != 1 || h->struct_size < ACT_PLUGIN_HOST_SIZE_1_0) {
        strncpy(reason, "host does not speak ABI 1", cap - 1);
        return ACT_PLUGIN_DECLINE;
    }
    h->log(h->ctx, ACT_PLUGIN_LOG_INFO, "abi v1 plugin init");
    const char *v = h->config_get(h->ctx, "ACTIVITY_TYPES");
    (void)v; /* any value, or NULL: only the call is exercised */
    if (h->register_type(h->ctx, "abi_v1_custom", ACT_SHAPE_DEVICE_SPAN,
                         &p->custom) != 0)
        return -1;
    act_plugin_arg props[2] = {arg(ACT_PLUGIN_ARG_UINT, "memoryBytes"),
                               arg(ACT_PLUGIN_ARG_STRING, "arch")};
    props[0].v.u = 1u << 30;
    props[1].v.s.ptr = "v1arch";
    props[1].v.s.len = 6;
    act_plugin_device d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.name = "ABI v1 device";
    d.vendor = "Frozen";
    d.props = props;
    d.nprops = 2;
    if (h->add_device(h->ctx, &d, &p->dev) != 0)
        return -1;
    h->name_stream(h->ctx, p->dev, 0, "abi_v1_s0", 9);
    h->name_stream(h->ctx, p->dev, 5, "abi_v1_s5", 9);
    act_plugin_counter c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.device = p->dev;
    c.track = "abi_v1_load";
    c.series = "busy";
    c.unit = "%";
    if (h->add_counter(h->ctx, &c, &p->track) != 0)
        return -1;
    *state = p;
    return ACT_PLUGIN_OK;
}

static void v1_start(void *state)
{
    v1 *p = state;
    p->t0 = p->h->now_ns(p->h->ctx);
    p->tid = (uint64_t)syscall(SYS_gettid);
    p->ext = p->h->correlation_current(p->h->ctx);
}

static void v1_flush(void *state)
{
    v1 *p = state;
    const act_plugin_host *h = p->h;
    int64_t t = p->t0;
    act_plugin_arg args[5] = {
        arg(ACT_PLUGIN_ARG_INT, "i"), arg(ACT_PLUGIN_ARG_UINT, "u"),
        arg(ACT_PLUGIN_ARG_DOUBLE, "d"), arg(ACT_PLUGIN_ARG_BOOL, "b"),
        arg(ACT_PLUGIN_ARG_STRING, "s")};
    args[0].v.i = -42;
    args[1].v.u = 42;
    args[2].v.d = 0.5;
    args[3].v.b = 1;
    args[4].v.s.ptr = "quote\" and \\ backslash";
    args[4].v.s.len = strlen(args[4].v.s.ptr);
    act_plugin_record r[6] = {
        rec(ACT_PLUGIN_RECORD_HOST_SPAN, ACT_RUNTIME, ACT_PLUGIN_HOST_DEVICE,
            p->tid, t + 1000, t + 3000, 1, "abi_v1_launch"),
        rec(ACT_PLUGIN_RECORD_DEVICE_SPAN, ACT_CONCURRENT_KERNEL, p->dev, 0,
            t + 4000, t + 9000, 1, "abi_v1_kernel"),
        rec(ACT_PLUGIN_RECORD_DEVICE_SPAN, ACT_GPU_MEMCPY, p->dev, 5,
            t + 5000, t + 6000, 0, "abi_v1_copy"),
        rec(ACT_PLUGIN_RECORD_INSTANT, ACT_GPU_USER_ANNOTATION, p->dev, 0,
            t + 7000, 0, 0, "abi_v1_device_mark"),
        rec(ACT_PLUGIN_RECORD_INSTANT, ACT_CPU_INSTANT_EVENT,
            ACT_PLUGIN_HOST_DEVICE, p->tid, t + 8000, 0, 0,
            "abi_v1_host_mark"),
        rec(ACT_PLUGIN_RECORD_DEVICE_SPAN, p->custom, p->dev, 5, t + 9000,
            t + 9500, 0, "abi_v1_custom_span"),
    };
    r[0].args = args;
    r[0].nargs = 5;
    r[0].external_id = p->ext;
    r[1].external_id = p->ext;
    h->emit(h->ctx, r, 6);
    act_plugin_sample s[2];
    memset(s, 0, sizeof s);
    s[0].struct_size = s[1].struct_size = sizeof s[0];
    s[0].ts_ns = t + 4000;
    s[0].value = 10;
    s[1].ts_ns = t + 9000;
    s[1].value = 0;
    h->emit_samples(h->ctx, p->track, s, 2);
}

static const int32_t v1_types[] = {ACT_RUNTIME, ACT_CONCURRENT_KERNEL};

static const act_plugin v1_table = {
    .struct_size = sizeof(act_plugin),
    .abi_major = ACT_PLUGIN_ABI_MAJOR,
    .abi_minor = ACT_PLUGIN_ABI_MINOR,
    .name = "abi_v1",
    .backend = "abi_v1",
    .version = "1.0",
    .types = v1_types,
    .ntypes = 2,
    .init = v1_init,
    .start = v1_start,
    .flush = v1_flush,
};

ACT_PLUGIN_EXPORT const act_plugin *
act_plugin_entry(const act_plugin_host *host, uint32_t major, uint32_t minor)
{
    (void)host;
    (void)minor;
    return major == 1 ? &v1_table : NULL;
}
