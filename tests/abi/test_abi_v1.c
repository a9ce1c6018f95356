/* SPDX-License-Identifier: MIT */
/*
 * The ABI promise, tested: a plugin compiled against the frozen first
 * plugin.h (tests/abi/v1) loads into this libactrace and produces exactly
 * the events listed below, forever. If this test has to change, the ABI
 * was broken: add a new frozen version instead (docs/ABI.md).
 *
 * Events are compared by phase, name, category, time relative to the
 * first one (ns, exact), duration, where they are drawn (host thread or
 * device stream) and the args the plugin attached.
 */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "../plugin/plugin_test_util.h"

#define V1_PLUGIN ACT_BINARY_DIR "/tests/abi/abi_v1.so"

typedef struct expected {
    const char *ph, *name, *cat;
    int64_t rel_ns, dur_ns; /* dur -1: no duration (instant) */
    const char *where;      /* "host", or the device stream's name */
} expected;

static const expected want[] = {
    {"X", "abi_v1_launch", "runtime", 0, 2000, "host"},
    {"X", "abi_v1_kernel", "kernel", 3000, 5000, "abi_v1_s0"},
    {"X", "abi_v1_copy", "gpu_memcpy", 4000, 1000, "abi_v1_s5"},
    {"i", "abi_v1_device_mark", "gpu_user_annotation", 6000, -1, "abi_v1_s0"},
    {"i", "abi_v1_host_mark", "cpu_instant_event", 7000, -1, "host"},
    {"X", "abi_v1_custom_span", "abi_v1_custom", 8000, 500, "abi_v1_s5"},
};

static int64_t us_to_ns(json_t *v)
{
    return (int64_t)llround(json_number_value(v) * 1000.0);
}

int main(void)
{
    const char *trace = ACT_TRACE_DIR "/abi_v1.json";
    log_start();
    act_correlation_push(4242);
    const char *list[] = {V1_PLUGIN};
    CHECK_FATAL(run_session(list, 1, NULL, trace, NULL) == 0);
    act_correlation_pop();
    if (!CHECK_EQ_INT(log_count("loaded 'abi_v1'", NULL, NULL), 1))
        fprintf(stderr, "log:\n%s", log_buf);
    CHECK_EQ_INT(log_count("rejected", NULL, NULL), 0);
    CHECK_EQ_INT(log_count("abi v1 plugin init", NULL, NULL), 1);

    json_t *root = trace_load(trace);
    CHECK_FATAL(root != NULL);
    json_int_t dev = trace_process(root, "ABI v1 device");
    CHECK_FATAL(dev >= 0);

    json_t *first = trace_find(root, "X", "abi_v1_launch");
    CHECK_FATAL(first != NULL);
    int64_t t0 = us_to_ns(json_object_get(first, "ts"));
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const expected *w = &want[i];
        CHECK_EQ_INT(trace_count(root, w->ph, w->name), 1);
        json_t *ev = trace_find(root, w->ph, w->name);
        if (!CHECK(ev != NULL)) {
            fprintf(stderr, "  missing %s %s\n", w->ph, w->name);
            continue;
        }
        CHECK_EQ_STR(ev_str(ev, "cat"), w->cat);
        CHECK_EQ_INT(us_to_ns(json_object_get(ev, "ts")) - t0, w->rel_ns);
        if (w->dur_ns >= 0)
            CHECK_EQ_INT(us_to_ns(json_object_get(ev, "dur")), w->dur_ns);
        if (strcmp(w->where, "host") == 0) {
            CHECK_EQ_INT(ev_int(ev, "pid"), getpid());
            CHECK_EQ_INT(ev_int(ev, "tid"), gettid());
        } else {
            CHECK_EQ_INT(ev_int(ev, "pid"), dev);
            CHECK_EQ_INT(ev_int(ev, "tid"), trace_thread(root, dev, w->where));
        }
    }

    /* Typed args, escaped by the host. */
    json_t *args = json_object_get(first, "args");
    CHECK_EQ_INT(json_integer_value(json_object_get(args, "i")), -42);
    CHECK_EQ_INT(json_integer_value(json_object_get(args, "u")), 42);
    CHECK_NEAR(json_number_value(json_object_get(args, "d")), 0.5, 0);
    CHECK(json_is_true(json_object_get(args, "b")));
    CHECK_EQ_STR(json_string_value(json_object_get(args, "s")),
                 "quote\" and \\ backslash");
    /* External correlation, and the flow to the kernel it launched. */
    json_t *kernel = trace_find(root, "X", "abi_v1_kernel");
    CHECK_FATAL(kernel != NULL);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_object_get(kernel, "args"), "External id")),
                 4242);
    CHECK(trace_has_flow(root, first, kernel));

    /* The device, its properties, the counter. */
    char *props = json_dumps(json_object_get(root, "deviceProperties"), 0);
    CHECK(props && strstr(props, "\"ABI v1 device\"") &&
          strstr(props, "\"Frozen\"") && strstr(props, "\"v1arch\"") &&
          strstr(props, "1073741824"));
    free(props);
    CHECK_EQ_INT(trace_count(root, "C", "abi_v1_load"), 2);
    size_t i;
    json_t *ev;
    int seen = 0;
    json_array_foreach(trace_events(root), i, ev) {
        const char *ph = ev_str(ev, "ph"), *name = ev_str(ev, "name");
        if (!ph || strcmp(ph, "C") || !name || strcmp(name, "abi_v1_load"))
            continue;
        int64_t rel = us_to_ns(json_object_get(ev, "ts")) - t0;
        double v = json_number_value(
            json_object_get(json_object_get(ev, "args"), "busy"));
        CHECK_EQ_INT(ev_int(ev, "pid"), dev);
        if (rel == 3000 && v == 10)
            seen |= 1;
        else if (rel == 8000 && v == 0)
            seen |= 2;
        else
            fprintf(stderr, "unexpected sample at %lld: %g\n", (long long)rel,
                    v);
    }
    CHECK_EQ_INT(seen, 3);
    json_decref(root);
    act_log_set(NULL, NULL);
    CHECK_MAIN_END;
}
