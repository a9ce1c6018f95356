/* SPDX-License-Identifier: MIT */
/*
 * What the Chrome writer makes of hard input (issue 12, "Wrong output"):
 * timestamps far from the session (refused; the rest keep their precision),
 * 64-bit stream ids (one track per stream, dense tids), counter samples that
 * share a timestamp (none lost), and spans of two sources that overlap
 * partially on one thread (the later source's moves to a track of its own).
 * Plugin records go in through the engine's services (act__emit), as the
 * plugin host sends them. Traces go to traces/output_*.json for the viewer
 * checks in CI.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "engine/engine.h"
#include "engine/trace_util.h"

static long long ns_of(json_t *ev, const char *key)
{
    return llround(tu_num(ev, key) * 1000.0);
}

static json_t *arg(json_t *ev, const char *key)
{
    return json_object_get(json_object_get(ev, "args"), key);
}

/* The thread_name of (pid, tid), or NULL. */
static const char *thread_name(json_t *root, long long pid, long long tid)
{
    json_t *e;
    size_t i;
    json_array_foreach(tu_events(root), i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *n = json_string_value(json_object_get(e, "name"));
        if (ph && strcmp(ph, "M") == 0 && n && strcmp(n, "thread_name") == 0 &&
            tu_int(e, "pid") == pid && tu_int(e, "tid") == tid)
            return json_string_value(arg(e, "name"));
    }
    return NULL;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = s ? strlen(s) : 0, b = strlen(suffix);
    return s && a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The check viewers make (and ../shared/trace-consumers' lint): on each
 * pid/tid, X slices in start order (longer first) nest perfectly. Returns
 * the number of partial overlaps. */
typedef struct xs {
    long long pid, tid, t0, t1;
} xs;

static int cmp_xs(const void *a, const void *b)
{
    const xs *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->t0 != y->t0)
        return x->t0 < y->t0 ? -1 : 1;
    return x->t1 > y->t1 ? -1 : x->t1 < y->t1;
}

static int partial_overlaps(json_t *root)
{
    size_t n = json_array_size(tu_events(root)), k = 0, i;
    xs *v = calloc(n ? n : 1, sizeof *v), **stack = calloc(n ? n : 1, sizeof *stack);
    json_t *e;
    json_array_foreach(tu_events(root), i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (ph && strcmp(ph, "X") == 0)
            v[k++] = (xs){tu_int(e, "pid"), tu_int(e, "tid"), ns_of(e, "ts"),
                          ns_of(e, "ts") + ns_of(e, "dur")};
    }
    qsort(v, k, sizeof *v, cmp_xs);
    int bad = 0;
    size_t sp = 0;
    for (i = 0; i < k; i++) {
        if (i && (v[i].pid != v[i - 1].pid || v[i].tid != v[i - 1].tid))
            sp = 0;
        while (sp && stack[sp - 1]->t1 <= v[i].t0)
            sp--;
        if (sp && v[i].t1 > stack[sp - 1]->t1)
            bad++;
        stack[sp++] = &v[i];
    }
    free(v);
    free(stack);
    return bad;
}

/* ---- timestamps ------------------------------------------------------------ */

static void emit_host(act_session *s, uint16_t src, const char *name, int64_t t0,
                      int64_t t1, uint64_t corr)
{
    act__emit_record r;
    memset(&r, 0, sizeof r);
    r.kind = ACT__EMIT_HOST_SPAN;
    r.type = ACT_RUNTIME;
    r.source = src;
    r.device = ACT__HOST_DEVICE;
    r.stream = (uint64_t)gettid();
    r.start_ns = t0;
    r.end_ns = t1;
    r.correlation = corr;
    r.name = name;
    r.name_len = strlen(name);
    act__emit(s, &r);
}

static void test_timestamps(void)
{
    const char *path = tu_trace_path("output_timestamps.json");
    act_session *s = tu_session("ACTIVITY_TYPES = cpu_op, kernel, runtime\n");
    const int64_t big = INT64_C(1) << 62, w = ACT__TIME_WINDOW;
    int64_t now = act_now_ns();
    uint32_t dev = 0;
    CHECK_OK(act_device_add("gpu", "test", &dev));
    uint16_t src = 0;
    CHECK_OK(act__source_add(s, "plug", "cuda", &src));

    act_span_record(ACT_CPU_OP, "real", now, now + 1500);
    act_span_record(ACT_CPU_OP, "half a window ago", now - w / 2, now - w / 2 + 1000);
    /* Accepted by 41ef5f1's +-2^62 rule, which let the writer overflow. */
    act_span_record(ACT_CPU_OP, "min", -big, -big + 10);
    act_span_record(ACT_CPU_OP, "max", big - 10, big);
    act_span_record(ACT_CPU_OP, "beyond the window", now - w - 2000000000, now - w - 1000000000);
    act_span_record(ACT_CPU_OP, "ends beyond", now, now + w + 1000000000);
    act_device_span_record(ACT_CONCURRENT_KERNEL, dev, 1, "kernel min", -big, -big + 5);
    act_device_counter(dev, "gpu", "util", "%", big, 1.0);
    act_device_counter(dev, "gpu", "util", "%", now, 2.0);
    /* The same through a plugin's path (the host table validated 0..2^62). */
    emit_host(s, src, "plugin max", big - 5, big, 0);
    emit_host(s, src, "plugin real", now + 100, now + 200, 0);
    uint32_t series = 0;
    CHECK_OK(act__counter_series(s, src, ACT__HOST_DEVICE, "plug", "v", NULL, &series));
    CHECK_EQ_INT(act__counter_sample(s, series, big, 1.0), ACT_ERANGE);
    CHECK_OK(act__counter_sample(s, series, now, 1.0));

    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path);
    json_t *why = json_object_get(tu_stats(root), "dropped_by_reason");
    CHECK_EQ_INT(tu_int(why, "bad_times"), 8);
    CHECK(tu_find(root, "X", "min") == NULL);
    CHECK(tu_find(root, "X", "max") == NULL);
    CHECK(tu_find(root, "X", "plugin max") == NULL);
    json_t *real = tu_find(root, "X", "real"), *old = tu_find(root, "X", "half a window ago");
    CHECK_FATAL(real && old && tu_find(root, "X", "plugin real"));
    CHECK(tu_int(root, "baseTimeNanoseconds") > 0);
    /* Every ts is positive, and the real events keep their nanoseconds
     * although one event is 13 days older. */
    json_t *e;
    size_t i;
    json_array_foreach(tu_events(root), i, e) {
        json_t *ts = json_object_get(e, "ts");
        if (ts)
            CHECK(json_number_value(ts) > 0);
    }
    CHECK_EQ_INT(ns_of(real, "ts") - ns_of(old, "ts"), w / 2);
    CHECK_EQ_INT(ns_of(real, "dur"), 1500);
    CHECK_EQ_INT(tu_count(root, "C", "gpu"), 1);
    json_decref(root);
    act_session_destroy(s);
}

/* ---- streams ------------------------------------------------------------------ */

static void test_streams(void)
{
    const char *path = tu_trace_path("output_streams.json");
    act_session *s = tu_session("ACTIVITY_TYPES = kernel\n");
    int64_t t = act_now_ns();
    uint32_t dev = 0, dev2 = 0;
    CHECK_OK(act_device_add("packed", "test", &dev));
    CHECK_OK(act_device_add("small", "test", &dev2));
    /* CUPTI-style: context in the high half, stream in the low half. The
     * low 31 bits of all three are 7. */
    const uint64_t s1 = (UINT64_C(1) << 32) | 7, s2 = (UINT64_C(2) << 32) | 7, s3 = 7;
    CHECK_OK(act_stream_name(dev, s1, "ctx 1 stream 7"));
    act_device_span_record(ACT_CONCURRENT_KERNEL, dev, s1, "k1", t, t + 1000);
    act_device_span_record(ACT_CONCURRENT_KERNEL, dev, s2, "k2", t + 500, t + 1500);
    act_device_span_record(ACT_CONCURRENT_KERNEL, dev, s3, "k3", t + 200, t + 1200);
    act_device_span_record(ACT_CONCURRENT_KERNEL, dev2, 5, "k5", t, t + 100);
    act_device_span_record(ACT_CONCURRENT_KERNEL, dev2, 3, "k6", t, t + 100);
    CHECK_OK(act_stream_name(dev2, 3, "three"));
    CHECK_OK(act_session_write(s, path));

    json_t *root = tu_load(path);
    json_t *k1 = tu_find(root, "X", "k1"), *k2 = tu_find(root, "X", "k2"),
           *k3 = tu_find(root, "X", "k3"), *k5 = tu_find(root, "X", "k5"),
           *k6 = tu_find(root, "X", "k6");
    CHECK_FATAL(k1 && k2 && k3 && k5 && k6);
    long long pid = tu_int(k1, "pid");
    /* Dense tids in stream id order; the id stays in args.stream. */
    CHECK_EQ_INT(tu_int(k3, "tid"), 1);
    CHECK_EQ_INT(tu_int(k1, "tid"), 2);
    CHECK_EQ_INT(tu_int(k2, "tid"), 3);
    CHECK_EQ_U64((uint64_t)json_integer_value(arg(k1, "stream")), s1);
    CHECK_EQ_U64((uint64_t)json_integer_value(arg(k2, "stream")), s2);
    CHECK_EQ_U64((uint64_t)json_integer_value(arg(k3, "stream")), s3);
    /* Names follow the mapping; unnamed renumbered streams show their id. */
    const char *n1 = thread_name(root, pid, 2), *n2 = thread_name(root, pid, 3),
               *n3 = thread_name(root, pid, 1);
    CHECK(n1 && strcmp(n1, "ctx 1 stream 7") == 0);
    CHECK(n2 && strcmp(n2, "stream 8589934599") == 0);
    CHECK(n3 && strcmp(n3, "stream 7") == 0);
    /* A device whose ids fit keeps them as tids, as Kineto writes them. */
    CHECK_EQ_INT(tu_int(k5, "tid"), 5);
    CHECK_EQ_INT(tu_int(k6, "tid"), 3);
    const char *n6 = thread_name(root, tu_int(k6, "pid"), 3);
    CHECK(n6 && strcmp(n6, "three") == 0);
    CHECK_EQ_INT(partial_overlaps(root), 0);
    json_decref(root);
    act_session_destroy(s);
}

/* ---- counters ------------------------------------------------------------------ */

#define CTHREADS 8
#define CSAMPLES 2000

static void *counter_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < CSAMPLES; i++)
        act_counter("contended", "v", i);
    return NULL;
}

static void test_counters(void)
{
    const char *path = tu_trace_path("output_counters.json");
    act_session *s = tu_session(NULL);
    int64_t t = act_now_ns();
    uint32_t dev = 0;
    CHECK_OK(act_device_add("gpu", "test", &dev));
    act_device_counter(dev, "pm", "a", NULL, t, 1.0);
    act_device_counter(dev, "pm", "a", NULL, t, 2.0); /* same series, same time */
    act_device_counter(dev, "pm", "b", NULL, t, 5.0); /* another series, same time */
    act_device_counter(dev, "pm", "a", NULL, t + 1000, 3.0);
    pthread_t th[CTHREADS];
    for (int i = 0; i < CTHREADS; i++)
        CHECK_OK(pthread_create(&th[i], NULL, counter_thread, NULL));
    for (int i = 0; i < CTHREADS; i++)
        pthread_join(th[i], NULL);
    act_span_record(ACT_CPU_OP, "host work", t, t + 5000); /* for speedscope */
    CHECK_OK(act_session_write(s, path));

    json_t *root = tu_load(path);
    /* Both values of "a" at t are in the trace; "b" shares an event. */
    CHECK_EQ_INT(tu_count(root, "C", "pm"), 3);
    int seen1 = 0, seen2 = 0;
    json_t *e;
    size_t i;
    json_array_foreach(tu_events(root), i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (!n || strcmp(n, "pm") != 0)
            continue;
        double a = json_number_value(arg(e, "a"));
        CHECK(json_number_value(arg(e, "b")) == 5.0);
        if (ns_of(e, "ts") == ns_of(tu_find(root, "C", "pm"), "ts")) {
            seen1 += a == 1.0;
            seen2 += a == 2.0;
        }
    }
    CHECK_EQ_INT(seen1, 1);
    CHECK_EQ_INT(seen2, 1);
    /* One series sampled by many threads: one event per sample. */
    CHECK_EQ_INT(tu_count(root, "C", "contended"), CTHREADS * CSAMPLES);
    json_t *st = tu_stats(root);
    CHECK_EQ_INT(tu_int(st, "counter_samples"), 4 + CTHREADS * CSAMPLES);
    CHECK_EQ_INT(tu_int(st, "counter_events"), 3 + CTHREADS * CSAMPLES);
    json_decref(root);
    act_session_destroy(s);
}

/* ---- overlapping sources -------------------------------------------------------- */

static void test_overlap(void)
{
    const char *path = tu_trace_path("output_overlap.json");
    act_session *s = tu_session("ACTIVITY_TYPES = cpu_op, runtime, kernel\n");
    uint16_t a = 0, b = 0;
    CHECK_OK(act__source_add(s, "plugA", "cuda", &a));
    CHECK_OK(act__source_add(s, "plugB", "cuda", &b));
    uint32_t dev = 0;
    CHECK_OK(act__device_add(s, a, "gpu", "test", &dev));
    act_thread_name("main");
    int64_t t = act_now_ns();
    act_span_record(ACT_CPU_OP, "app op", t, t + 10000);
    act_span_record(ACT_CPU_OP, "app child", t + 6000, t + 7000);
    emit_host(s, a, "A nested", t + 1000, t + 2000, 0);
    emit_host(s, a, "A partial", t + 5000, t + 15000, 9);
    emit_host(s, b, "B partial", t + 1500, t + 3000, 0);
    emit_host(s, b, "B nested", t + 1200, t + 1400, 0);
    /* The device work "A partial" launched: its flow follows the move. */
    act__emit_record k;
    memset(&k, 0, sizeof k);
    k.kind = ACT__EMIT_DEVICE_SPAN;
    k.type = ACT_CONCURRENT_KERNEL;
    k.source = a;
    k.device = dev;
    k.stream = 1;
    k.start_ns = t + 20000;
    k.end_ns = t + 30000;
    k.correlation = 9;
    k.name = "kernel";
    k.name_len = 6;
    CHECK_OK(act__emit(s, &k));
    CHECK_OK(act_session_write(s, path));

    json_t *root = tu_load(path);
    long long me = gettid();
    json_t *app = tu_find(root, "X", "app op"), *child = tu_find(root, "X", "app child"),
           *an = tu_find(root, "X", "A nested"), *ap = tu_find(root, "X", "A partial"),
           *bp = tu_find(root, "X", "B partial"), *bn = tu_find(root, "X", "B nested");
    CHECK_FATAL(app && child && an && ap && bp && bn);
    CHECK_EQ_INT(tu_int(app, "tid"), me);
    CHECK_EQ_INT(tu_int(child, "tid"), me);
    CHECK_EQ_INT(tu_int(an, "tid"), me);
    CHECK_EQ_INT(tu_int(bn, "tid"), me);
    /* Moved, each to its source's track for this thread, same process. */
    CHECK(tu_int(ap, "tid") != me);
    CHECK(tu_int(bp, "tid") != me);
    CHECK(tu_int(ap, "tid") != tu_int(bp, "tid"));
    CHECK_EQ_INT(tu_int(ap, "pid"), getpid());
    CHECK(ends_with(thread_name(root, getpid(), tu_int(ap, "tid")), "main [plugA]"));
    CHECK(ends_with(thread_name(root, getpid(), tu_int(bp, "tid")), "main [plugB]"));
    /* Times are untouched. */
    CHECK_EQ_INT(ns_of(ap, "dur"), 10000);
    CHECK_EQ_INT(ns_of(ap, "ts") - ns_of(app, "ts"), 5000);
    CHECK_EQ_INT(partial_overlaps(root), 0);
    json_t *flow = tu_find(root, "s", NULL);
    CHECK_FATAL(flow != NULL);
    CHECK_EQ_INT(tu_int(flow, "tid"), tu_int(ap, "tid"));
    CHECK_EQ_INT(ns_of(flow, "ts"), ns_of(ap, "ts"));
    json_decref(root);
    act_session_destroy(s);
}

int main(void)
{
    act_log_set_level(ACT_LOG_ERROR);
    test_timestamps();
    test_streams();
    test_counters();
    test_overlap();
    CHECK_MAIN_END;
}
