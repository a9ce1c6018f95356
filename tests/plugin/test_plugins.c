/* SPDX-License-Identifier: MIT */
/*
 * Plugins for the loader tests, one source built several times: TP_VARIANT
 * selects the behaviour (a good plugin, one per refusal reason, and one
 * that returns garbage without crashing). See tests/plugin/tests.cmake.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <actrace/plugin.h>

#define TP_OK 1
#define TP_SECOND 2
#define TP_DECLINE 3
#define TP_FAIL 4
#define TP_NOSYM 5
#define TP_MAJOR2 6
#define TP_SMALL 7
#define TP_NULLENTRY 8
#define TP_GARBAGE 9
#define TP_LOG 10     /* logs hostile text (escapes, CR, bad UTF-8) */
#define TP_HANG 11    /* emits in stop, then flush never returns */
#define TP_LEAK 12    /* a thread that outlives finalize */
#define TP_RACE 13    /* a thread rewrites records while they are emitted */

#ifndef TP_VARIANT
#error "define TP_VARIANT"
#endif

#if TP_VARIANT == TP_SECOND
#define TP_NAME "tp_second"
#elif TP_VARIANT == TP_GARBAGE
#define TP_NAME "tp_garbage"
#elif TP_VARIANT == TP_LOG
#define TP_NAME "tp_log"
#elif TP_VARIANT == TP_HANG
#define TP_NAME "tp_hang"
#elif TP_VARIANT == TP_LEAK
#define TP_NAME "tp_leak"
#elif TP_VARIANT == TP_RACE
#define TP_NAME "tp_race"
#else
#define TP_NAME "tp_ok"
#endif

typedef struct tp {
    const act_plugin_host *h;
    uint32_t dev, track;
    int64_t t0;
    uint64_t tid;
} tp;

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

#if TP_VARIANT == TP_LEAK
static _Atomic unsigned long leak_ticks;
static void *leak_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
        atomic_fetch_add(&leak_ticks, 1);
    }
    return NULL;
}
#endif

#if TP_VARIANT == TP_RACE
/* One record and one arg in plugin memory, emitted again and again while
 * racer() flips the lengths between valid and huge values: the host must
 * check and use one copy. */
static act_plugin_record race_rec;
static act_plugin_arg race_arg[1];
static atomic_int race_stop;
static void *racer(void *arg)
{
    (void)arg;
    volatile uint32_t *nargs = &race_rec.nargs;
    volatile uint32_t *name_len = &race_rec.name_len;
    volatile uint32_t *key_len = &race_arg[0].key_len;
    volatile uint64_t *slen = &race_arg[0].v.s.len;
    while (!atomic_load_explicit(&race_stop, memory_order_relaxed)) {
        *nargs = 0x7fffffffu;
        *name_len = 0x7fffffffu;
        *key_len = 0x7fffffffu;
        *slen = UINT64_C(1) << 40;
        *nargs = 1;
        *name_len = 9;
        *key_len = 3;
        *slen = 5;
    }
    return NULL;
}

static void race(tp *t)
{
    const act_plugin_host *h = t->h;
    memset(race_arg, 0, sizeof race_arg);
    race_arg[0].struct_size = sizeof race_arg[0];
    race_arg[0].kind = ACT_PLUGIN_ARG_STRING;
    race_arg[0].key = "key";
    race_arg[0].key_len = 3;
    race_arg[0].v.s.ptr = "value";
    race_arg[0].v.s.len = 5;
    race_rec = rec(ACT_PLUGIN_RECORD_HOST_SPAN, ACT_RUNTIME,
                   ACT_PLUGIN_HOST_DEVICE, t->tid, t->t0 + 10, t->t0 + 20, 0,
                   "tp_racing");
    race_rec.args = race_arg;
    race_rec.nargs = 1;
    atomic_store(&race_stop, 0);
    pthread_t th;
    if (pthread_create(&th, NULL, racer, NULL) != 0)
        return;
    for (int i = 0; i < 200000; i++)
        h->emit(h->ctx, &race_rec, 1);
    atomic_store(&race_stop, 1);
    pthread_join(th, NULL);
    /* The racer is done (and may have been descheduled in its "huge"
     * half all along): ten emits that must be kept. */
    race_rec.nargs = 1;
    race_rec.name_len = 9;
    race_arg[0].key_len = 3;
    race_arg[0].v.s.len = 5;
    for (int i = 0; i < 10; i++)
        h->emit(h->ctx, &race_rec, 1);
}
#endif

static int32_t tp_init(const act_plugin_host *h, void **state, char *reason,
                       uint32_t cap)
{
#if TP_VARIANT == TP_DECLINE
    (void)state;
    /* Describes a device and a counter, then declines: neither may show
     * in the trace. */
    act_plugin_device d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.name = "declined device";
    uint32_t dev;
    h->add_device(h->ctx, &d, &dev);
    act_plugin_counter c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.device = dev;
    c.track = "declined track";
    uint32_t tr;
    h->add_counter(h->ctx, &c, &tr);
    strncpy(reason, "no tp device present", cap);
    return ACT_PLUGIN_DECLINE;
#elif TP_VARIANT == TP_FAIL
    (void)h;
    (void)state;
    strncpy(reason, "driver error 42", cap);
    return -1;
#else
    (void)reason;
    (void)cap;
    tp *t = calloc(1, sizeof *t);
    if (!t)
        return ACT_PLUGIN_ENOMEM;
    t->h = h;
    act_plugin_device d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.name = TP_NAME " device";
    d.vendor = "Test";
    if (h->add_device(h->ctx, &d, &t->dev) != 0) {
        free(t);
        return -1;
    }
    h->name_stream(h->ctx, t->dev, 3, "q3", 2);
    act_plugin_counter c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.device = t->dev;
    c.track = "load";
    c.unit = "%";
    if (h->add_counter(h->ctx, &c, &t->track) != 0) {
        free(t);
        return -1;
    }
#if TP_VARIANT == TP_LOG
    /* ESC sequences, CR, BEL, a C1 CSI, invalid UTF-8, and valid UTF-8
     * ("é") that must be kept. */
    h->log(h->ctx, ACT_PLUGIN_LOG_WARN,
           "tp_log says \x1b[31mred\x1b[0m\rover\x07" "bell\xc2\x9b" "2J "
           "bad\xff\xfe caf\xc3\xa9 end\nnext line");
    /* Long: cut at a character boundary, never mid-sequence. */
    static char longmsg[3001];
    memcpy(longmsg, "tp_log long ", 12);
    for (size_t i = 12; i + 2 <= 3000; i += 2)
        memcpy(longmsg + i, "\xc3\xa9", 2);
    h->log(h->ctx, ACT_PLUGIN_LOG_WARN, longmsg);
#endif
#if TP_VARIANT == TP_LEAK
    /* A plugin bug: a thread that runs plugin code after finalize, never
     * joined. The host must not unmap the plugin under it. */
    pthread_t th;
    if (pthread_create(&th, NULL, leak_main, NULL) == 0)
        pthread_detach(th);
#endif
    *state = t;
    return 0;
#endif
}

#if TP_VARIANT == TP_SECOND
static void *tid_main(void *arg)
{
    *(uint64_t *)arg = (uint64_t)syscall(SYS_gettid);
    return NULL;
}
#endif

static void tp_start(void *state)
{
    tp *t = state;
    /* A key read only once the session starts, not in init: its own, not
     * an unknown key (test_plugin_loader.c, test_late_config_key). */
    (void)t->h->config_get(t->h->ctx, "TP_LATE_KEY");
    t->t0 = t->h->now_ns(t->h->ctx);
    t->tid = (uint64_t)syscall(SYS_gettid);
#if TP_VARIANT == TP_SECOND
    /* Both tp_ok and tp_second emit a host span at [t0 + 1000, t0 + 2000]
     * of their own start: on one thread they overlap partially whenever
     * the two start less than 1 us apart, which viewers draw on an
     * overflow track (and CI's trace validation fails at random). The
     * second plugin's host span goes on a thread of its own instead: a
     * thread it created, whose tid no other host event uses. */
    pthread_t th;
    uint64_t tid = 0;
    if (pthread_create(&th, NULL, tid_main, &tid) == 0) {
        pthread_join(th, NULL);
        if (tid)
            t->tid = tid;
    }
#endif
}

#if TP_VARIANT == TP_GARBAGE
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Everything here is wrong in some way, but every pointer stays inside
 * memory the plugin owns: garbage, not a crash. */
static void garbage(tp *t)
{
    const act_plugin_host *h = t->h;
    static char bytes[8192];
    static act_plugin_arg args[70];
    static act_plugin_record recs[2000];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (char)next();
    for (size_t i = 0; i < 70; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].struct_size = sizeof args[i];
        args[i].kind = (int32_t)(next() % 7);
        args[i].key = next() % 8 ? bytes + next() % 2048 : NULL;
        args[i].key_len = (uint32_t)(next() % 300);
        if (args[i].kind == ACT_PLUGIN_ARG_STRING) {
            args[i].v.s.ptr = bytes + next() % 2048;
            args[i].v.s.len = next() % 4 ? next() % 4096 : (1ull << 40);
        } else {
            args[i].v.u = next();
        }
    }
    for (size_t i = 0; i < 2000; i++) {
        act_plugin_record *r = &recs[i];
        memset(r, 0, sizeof *r);
        r->struct_size = sizeof *r;
        r->kind = (int32_t)(next() % 5) - 1;
        r->type = next() % 4 ? (int32_t)(next() % 32) : (int32_t)next();
        r->device = next() % 3 ? (uint32_t)(next() % 3) : ACT_PLUGIN_HOST_DEVICE;
        r->stream = next();
        r->start_ns = next() % 2 ? t->t0 + (int64_t)(next() % 1000)
                                 : (int64_t)next();
        r->end_ns = r->start_ns + (int64_t)(next() % 2000) - 500;
        r->correlation = next() % 16;
        r->name = next() % 10 ? bytes + next() % 2048 : NULL;
        r->name_len = next() % 10 ? (uint32_t)(next() % 64)
                                  : (uint32_t)(next() % 6000);
        r->nargs = (uint32_t)(next() % 72);
        r->args = next() % 10 ? args : NULL;
        if (r->nargs > 70)
            r->nargs = 70 + (next() % 2 ? 0 : 1000);
    }
    h->emit(h->ctx, recs, 2000);
    /* Whole batches that are wrong. */
    act_plugin_record bad = recs[0];
    bad.struct_size = 3;
    h->emit(h->ctx, &bad, 1);
    h->emit(h->ctx, NULL, 5);
    h->emit(h->ctx, recs, ACT_PLUGIN_BATCH_MAX + 1);
    /* Three good records among the garbage must survive. */
    act_plugin_record good[3] = {
        rec(ACT_PLUGIN_RECORD_DEVICE_SPAN, ACT_CONCURRENT_KERNEL, t->dev, 3,
            t->t0 + 100, t->t0 + 200, 0, "gb_valid_0"),
        rec(ACT_PLUGIN_RECORD_DEVICE_SPAN, ACT_GPU_MEMSET, t->dev, 3,
            t->t0 + 300, t->t0 + 400, 0, "gb_valid_1"),
        rec(ACT_PLUGIN_RECORD_HOST_SPAN, ACT_DRIVER, ACT_PLUGIN_HOST_DEVICE,
            t->tid, t->t0 + 500, t->t0 + 600, 0, "gb_valid_2"),
    };
    h->emit(h->ctx, good, 3);
    act_plugin_sample s[4];
    memset(s, 0, sizeof s);
    for (int i = 0; i < 4; i++)
        s[i].struct_size = sizeof s[0];
    s[0].ts_ns = t->t0 + 100;
    s[0].value = NAN;
    s[1].ts_ns = t->t0 + 200;
    s[1].value = -INFINITY;
    s[2].ts_ns = -7;
    s[3].ts_ns = t->t0 + 300;
    s[3].value = 12.5;
    h->emit_samples(h->ctx, t->track, s, 4);
    h->emit_samples(h->ctx, 99, s, 4);
    /* Misused calls. */
    uint32_t out;
    int32_t type;
    h->add_device(h->ctx, NULL, &out);
    act_plugin_device d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.name = "bad\xff";
    h->add_device(h->ctx, &d, &out);
    h->name_stream(h->ctx, 77, 1, "x", 1);
    h->name_stream(h->ctx, t->dev, 1, NULL, 1);
    h->log(h->ctx, ACT_PLUGIN_LOG_WARN, NULL);
    h->log(h->ctx, 1234, "level out of range, still logged");
    h->register_type(h->ctx, "Bad Name!", ACT_SHAPE_DEVICE_SPAN, &type);
    h->register_type(h->ctx, "tp_garbage_type", 99, &type);
    act_plugin_counter c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.device = 42;
    c.track = "x";
    h->add_counter(h->ctx, &c, &out);
}
#endif

static void tp_emit_all(tp *t);

#if TP_VARIANT == TP_HANG
/* Emits in stop (which returns), then hangs in flush without touching the
 * host again: the host's wait is bounded, and what was emitted is kept. */
static void tp_stop(void *state)
{
    tp_emit_all(state);
}

static void tp_flush(void *state)
{
    (void)state;
    for (;;) /* a wedged driver */
        sleep(1000);
}
#else
static void tp_flush(void *state)
{
    tp_emit_all(state);
}
#endif

static void tp_emit_all(tp *t)
{
#if TP_VARIANT == TP_GARBAGE
    garbage(t);
#elif TP_VARIANT == TP_RACE
    race(t);
#else
    const act_plugin_host *h = t->h;
    act_plugin_record r[3] = {
        rec(ACT_PLUGIN_RECORD_HOST_SPAN, ACT_RUNTIME, ACT_PLUGIN_HOST_DEVICE,
            t->tid, t->t0 + 1000, t->t0 + 2000, 7, "tpLaunch_" TP_NAME),
        rec(ACT_PLUGIN_RECORD_DEVICE_SPAN, ACT_CONCURRENT_KERNEL, t->dev, 3,
            t->t0 + 3000, t->t0 + 5000, 7, "tp_kernel_" TP_NAME),
        rec(ACT_PLUGIN_RECORD_INSTANT, ACT_GPU_USER_ANNOTATION, t->dev, 3,
            t->t0 + 4000, 0, 0, "tp_mark_" TP_NAME),
    };
    h->emit(h->ctx, r, 3);
    act_plugin_sample s[2];
    memset(s, 0, sizeof s);
    s[0].struct_size = s[1].struct_size = sizeof s[0];
    s[0].ts_ns = t->t0 + 3000;
    s[0].value = 75;
    s[1].ts_ns = t->t0 + 5000;
    s[1].value = 0;
    h->emit_samples(h->ctx, t->track, s, 2);
#endif
}

static void tp_finalize(void *state)
{
    free(state);
}

static const act_plugin table = {
    .struct_size = sizeof(act_plugin),
#if TP_VARIANT == TP_MAJOR2
    .abi_major = 2,
#else
    .abi_major = ACT_PLUGIN_ABI_MAJOR,
#endif
    .abi_minor = ACT_PLUGIN_ABI_MINOR,
    .name = TP_NAME,
    .backend = "tp",
    .version = "0.0.1",
    .init = tp_init,
    .start = tp_start,
#if TP_VARIANT == TP_HANG
    .stop = tp_stop,
#endif
    .flush = tp_flush,
    .finalize = tp_finalize,
};

#if TP_VARIANT == TP_SMALL
static act_plugin small_table;
#endif

#if TP_VARIANT == TP_NOSYM
/* Exports a function, but not the entry symbol. */
ACT_PLUGIN_EXPORT const act_plugin *tp_entry_misnamed(void);
const act_plugin *tp_entry_misnamed(void) { return &table; }
#else
ACT_PLUGIN_EXPORT const act_plugin *
act_plugin_entry(const act_plugin_host *host, uint32_t major, uint32_t minor)
{
    (void)host;
    (void)major;
    (void)minor;
#if TP_VARIANT == TP_NULLENTRY
    return table.name ? NULL : &table;
#elif TP_VARIANT == TP_SMALL
    small_table = table;
    small_table.struct_size = 40;
    return &small_table;
#else
    return &table;
#endif
}
#endif
