/* SPDX-License-Identifier: MIT */
/*
 * The cupti plugin's glue (plugins/cupti/cupti.c) end to end in real
 * sessions, with libfakecupti.so and libfakecuda.so standing in for
 * libcupti and the driver (ACTRACE_CUPTI_LIBRARY, ACTRACE_CUDA_DRIVER):
 *  - init subscribes, registers the timestamp callback before enabling
 *    any kind, sets SYSTEM thread ids, enables the kinds of the selected
 *    types only (and EXTERNAL_CORRELATION), and everything is disabled and
 *    unsubscribed after the session;
 *  - a launch inside act_correlation_push(77) gets External id 77 (pushed
 *    from the API callback through the host's correlation_current), one
 *    outside gets none; both have a flow from cudaLaunchKernel, on the
 *    launching thread, within the session's window (host clock through
 *    the timestamp callback); the device is described by the driver;
 *  - dropped records CUPTI reports are logged with their count;
 *  - ACTIVITY_TYPES=kernel enables no runtime/driver kinds;
 *  - another CUPTI subscriber makes init decline with
 *    CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, the trace still
 *    written.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "plugin/plugin_test_util.h"
#pragma GCC diagnostic pop

#include <cupti.h>

#define CUPTI_SO ACT_BINARY_DIR "/plugins/cupti.so"
#define FAKE_CUPTI ACT_BINARY_DIR "/tests/cupti/libfakecupti.so"
#define FAKE_CUDA ACT_BINARY_DIR "/tests/cupti/libfakecuda.so"

/* Must match fake_cupti.c. */
typedef struct fake_state {
    int subscribed, busy;
    int enabled[CUPTI_ACTIVITY_KIND_COUNT];
    int ever_enabled[CUPTI_ACTIVITY_KIND_COUNT];
    int ts_before_enable;
    int any_enable;
    int thread_id_type;
    int domains[8];
    int pushes, pops;
    int flushes;
    size_t dropped_to_report;
} fake_state;

static void (*launch)(const char *, uint32_t);
static const fake_state *(*state)(void);
static void (*set_busy)(int);
static void (*set_dropped)(size_t);
static void (*reset)(void);
static int64_t body_t0, body_t1;
static long app_tid;

static int64_t mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void body(void)
{
    body_t0 = mono();
    app_tid = syscall(SYS_gettid);
    act_span_begin(ACT_CPU_OP, "step");
    act_correlation_push(77);
    launch("_Z4workv", 3);
    act_correlation_pop();
    launch("_Z4workv", 4);
    act_span_end();
    set_dropped(5);
    body_t1 = mono();
}

/* 1 if a flow ends at @p dev (same pid/tid/ts) and starts at @p host. */
static int flow_between(json_t *root, json_t *host, json_t *dev)
{
    size_t i, j;
    json_t *f, *s;
    json_array_foreach(trace_events(root), i, f) {
        const char *ph = ev_str(f, "ph");
        if (!ph || strcmp(ph, "f") || ev_int(f, "pid") != ev_int(dev, "pid") ||
            ev_int(f, "tid") != ev_int(dev, "tid") ||
            !json_equal(json_object_get(f, "ts"), json_object_get(dev, "ts")))
            continue;
        json_array_foreach(trace_events(root), j, s) {
            const char *q = ev_str(s, "ph");
            if (q && !strcmp(q, "s") &&
                json_equal(json_object_get(s, "id"), json_object_get(f, "id")) &&
                ev_int(s, "tid") == ev_int(host, "tid") &&
                json_equal(json_object_get(s, "ts"), json_object_get(host, "ts")))
                return 1;
        }
    }
    return 0;
}

static json_t *kernel_on(json_t *root, json_int_t tid)
{
    size_t i;
    json_t *ev;
    json_array_foreach(trace_events(root), i, ev) {
        const char *ph = ev_str(ev, "ph"), *cat = ev_str(ev, "cat");
        if (ph && !strcmp(ph, "X") && cat && !strcmp(cat, "kernel") &&
            ev_int(ev, "tid") == tid)
            return ev;
    }
    return NULL;
}

int main(void)
{
    setenv("ACTRACE_CUPTI_LIBRARY", FAKE_CUPTI, 1);
    setenv("ACTRACE_CUDA_DRIVER", FAKE_CUDA, 1);
    unsetenv("ACTRACE_PLUGINS");
    void *fake = dlopen(FAKE_CUPTI, RTLD_NOW | RTLD_LOCAL);
    CHECK_FATAL(fake != NULL);
    *(void **)&launch = dlsym(fake, "fake_launch");
    *(void **)&state = dlsym(fake, "fake_state_get");
    *(void **)&set_busy = dlsym(fake, "fake_set_busy");
    *(void **)&set_dropped = dlsym(fake, "fake_set_dropped");
    *(void **)&reset = dlsym(fake, "fake_reset");
    CHECK_FATAL(launch && state && set_busy && set_dropped && reset);
    const char *plugins[] = {CUPTI_SO};

    /* 1. Default types. */
    log_start();
    const char *trace = ACT_TRACE_DIR "/cupti_fake.json";
    CHECK_EQ_INT(run_session(plugins, 1, NULL, trace, body), 0);
    const fake_state *st = state();
    CHECK(st->ts_before_enable);
    CHECK_EQ_INT(st->thread_id_type, CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    CHECK(st->ever_enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]);
    CHECK(st->ever_enabled[CUPTI_ACTIVITY_KIND_RUNTIME]);
    CHECK(st->ever_enabled[CUPTI_ACTIVITY_KIND_DRIVER]);
    CHECK(st->ever_enabled[CUPTI_ACTIVITY_KIND_MEMCPY]);
    CHECK(st->ever_enabled[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION]);
    CHECK(!st->ever_enabled[CUPTI_ACTIVITY_KIND_MARKER]); /* NVTX: nvtx plugin */
    int still = 0;
    for (int k = 0; k < CUPTI_ACTIVITY_KIND_COUNT; k++)
        still += st->enabled[k];
    CHECK_EQ_INT(still, 0);
    CHECK_EQ_INT(st->subscribed, 0);
    CHECK_EQ_INT(st->pushes, 1); /* only inside the pushed region */
    CHECK_EQ_INT(st->pops, 1);
    CHECK(st->flushes >= 1);
    CHECK(log_count("cupti", "5 CUPTI activity records dropped", NULL) >= 1);

    json_t *root = trace_load(trace);
    CHECK_FATAL(root != NULL);
    json_t *props = json_object_get(root, "deviceProperties");
    CHECK_EQ_INT(json_array_size(props), 1);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(props, 0), "name")),
                 "Fake GPU");
    CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(props, 0), "numSms")),
                 4);
    json_t *k3 = kernel_on(root, 3), *k4 = kernel_on(root, 4);
    CHECK_FATAL(k3 && k4);
    CHECK_EQ_STR(ev_str(k3, "name"), "work()");
    json_t *a3 = json_object_get(k3, "args"), *a4 = json_object_get(k4, "args");
    CHECK_EQ_INT(json_integer_value(json_object_get(a3, "External id")), 77);
    CHECK(json_object_get(a4, "External id") == NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(a3, "backend")), "cuda");
    int launches = 0, flows3 = 0, flows4 = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(trace_events(root), i, ev) {
        const char *nm = ev_str(ev, "name");
        if (!nm || strcmp(nm, "cudaLaunchKernel") || strcmp(ev_str(ev, "ph"), "X"))
            continue;
        launches++;
        CHECK_EQ_STR(ev_str(ev, "cat"), "cuda_runtime");
        CHECK_EQ_INT(ev_int(ev, "tid"), app_tid);
        flows3 += flow_between(root, ev, k3);
        flows4 += flow_between(root, ev, k4);
    }
    CHECK_EQ_INT(launches, 2);
    CHECK_EQ_INT(flows3, 1); /* each kernel from exactly one launch */
    CHECK_EQ_INT(flows4, 1);
    /* Device times on the host clock: the kernels follow their launches
     * by 1 us in the fake, inside the body's window (trace times are
     * relative; compare durations and order instead). */
    double ts3 = json_number_value(json_object_get(k3, "ts"));
    double ts4 = json_number_value(json_object_get(k4, "ts"));
    CHECK(ts4 > ts3);
    CHECK(ts4 - ts3 < (double)(body_t1 - body_t0) / 1000.0);
    CHECK_EQ_INT((int)(json_number_value(json_object_get(k3, "dur")) * 1000 + 0.5), 20000);
    json_decref(root);

    /* 2. Only kernels selected: no API kinds, no callbacks for them. */
    reset();
    CHECK_EQ_INT(run_session(plugins, 1, "ACTIVITY_TYPES = kernel\n", NULL, body), 0);
    st = state();
    CHECK(st->ever_enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]);
    CHECK(!st->ever_enabled[CUPTI_ACTIVITY_KIND_RUNTIME]);
    CHECK(!st->ever_enabled[CUPTI_ACTIVITY_KIND_DRIVER]);
    CHECK(!st->ever_enabled[CUPTI_ACTIVITY_KIND_MEMCPY]);

    /* 3. Another subscriber: declined, the trace still written. */
    reset();
    set_busy(1);
    log_reset();
    const char *t2 = ACT_BINARY_DIR "/tests/cupti/cupti_fake_busy.json";
    CHECK_EQ_INT(run_session(plugins, 1, NULL, t2, NULL), 0);
    CHECK(log_count("cupti", "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
                    "declined") >= 1);
    CHECK_EQ_INT(state()->any_enable, 0);
    root = trace_load(t2);
    CHECK(root != NULL);
    json_decref(root);
    set_busy(0);
    CHECK_MAIN_END;
}
