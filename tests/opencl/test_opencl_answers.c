/* SPDX-License-Identifier: MIT */
/*
 * The opencl layer against an untraced run, and its stop window.
 *
 * --answers (OpenclAnswers) runs `test_OpenclAnswers --prog` twice, plainly
 * and under `actrace record --plugin opencl`, and compares what it prints:
 * the answers OpenCL gives the program must be the same traced. The
 * program, on three queues (no properties through clCreateCommandQueue and
 * through clCreateCommandQueueWithProperties, and out-of-order), prints
 *  - CL_QUEUE_PROPERTIES and the size of CL_QUEUE_PROPERTIES_ARRAY;
 *  - CL_QUEUE_REFERENCE_COUNT fresh, after 7 non-blocking writes without
 *    events and one with an event it waits for by polling its status (no
 *    call that synchronises), with that event retained and released, the
 *    queue retained and released, and after clFinish; each read once the
 *    runtime's own count has settled (pocl drops a completed command's
 *    reference a moment after its status says complete);
 *  - CL_EVENT_REFERENCE_COUNT of its event, before and after a retain;
 *  - clGetEventProfilingInfo's status for the four times and for a bad
 *    name (the queues did not ask for profiling: the layer turns it on for
 *    itself, the program must still hear CL_PROFILING_INFO_NOT_AVAILABLE).
 * Then it creates and releases 4200 queues, more than the layer's 4096
 * queue records, each with a write whose event the program holds until
 * all are made (so the runtime's count is 2 when the program releases
 * the queue, and no queue comes back at an earlier one's address): the
 * trace must hold every write as a device copy (a record the program
 * released is recycled; it used to stay, and queues past 4096 went
 * untraced).
 *
 * --stop-window (OpenclStopWindow) is a library user with the opencl
 * plugin and hook.so (loaded after it): 60 non-blocking writes, then
 * act_session_stop; hook.so's stop, which runs after the opencl plugin's
 * stop and before its flush, calls clFinish, which harvests the 60
 * completed writes with no instance collecting. They must be in the
 * trace as device copies, and the plugin's summary must say so (they
 * were neither emitted nor counted).
 * --lanes (OpenclLanes) is a library user with the opencl plugin over a
 * test layer (overlap_layer.so, below the plugin's) that makes commands of
 * an out-of-order queue report that they started when they were queued:
 * LANES large writes enqueued back to back then overlap partly, as
 * commands a device runs at once do. The trace must hold every write, on
 * at least two tracks of the queue ("queue N (out-of-order)" and lanes
 * "queue N (out-of-order), lane K"), and the
 * spans of each track must nest (the shared lint rejects a partial
 * overlap on one track; this used to fail under load, 93ed356).
 * --same-start (OpenclSameStart): commands that start at once each keep
 * their own flow (see same_start below).
 * Skipped (77) without an OpenCL platform.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CL/cl.h>

#include "fork/fork_util.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define OPENCL_SO ACT_BINARY_DIR "/plugins/opencl.so"
#define HOOK_SO ACT_BINARY_DIR "/tests/plugin/plugins/hook.so"
#define OVERLAP_SO ACT_BINARY_DIR "/tests/opencl/overlap_layer.so"
#define WORK ACT_BINARY_DIR "/tests/opencl"
#define MANY 4200
#define WRITES 8 /* per queue in the first part */
#define LATE 60
#define LANES 6
#define LANE_BYTES (16u << 20)

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static cl_uint qrefs_now(cl_command_queue q)
{
    cl_uint r = 0;
    if (clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof r, &r, NULL) != CL_SUCCESS)
        return 0;
    return r;
}

/* The queue's count once three reads 2 ms apart agree. */
static cl_uint qrefs(cl_command_queue q)
{
    cl_uint last = qrefs_now(q);
    for (int same = 0, i = 0; same < 2 && i < 2000; i++) {
        sleep_ms(2);
        cl_uint r = qrefs_now(q);
        same = r == last ? same + 1 : 0;
        last = r;
    }
    return last;
}

static cl_uint erefs(cl_event e)
{
    cl_uint r = 0;
    clGetEventInfo(e, CL_EVENT_REFERENCE_COUNT, sizeof r, &r, NULL);
    return r;
}

static void wait_polling(cl_event e)
{
    cl_int st = CL_QUEUED;
    while (clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) ==
               CL_SUCCESS &&
           st > CL_COMPLETE)
        sched_yield();
}

static void answers_for(const char *what, cl_command_queue q, cl_mem m, const char *host)
{
    cl_command_queue_properties p = 0;
    size_t arr = 0;
    clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof p, &p, NULL);
    clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES_ARRAY, 0, NULL, &arr);
    printf("%s: properties %llu, properties array %zu bytes\n", what, (unsigned long long)p,
           arr);
    printf("%s: refs fresh %u\n", what, qrefs(q));
    for (int i = 0; i < WRITES - 1; i++)
        clEnqueueWriteBuffer(q, m, CL_FALSE, 0, 64, host, 0, NULL, NULL);
    cl_event ev = NULL;
    if (p & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
        /* Out of order: a barrier event follows every write before it. */
        clEnqueueWriteBuffer(q, m, CL_FALSE, 0, 64, host, 0, NULL, NULL);
        clEnqueueBarrierWithWaitList(q, 0, NULL, &ev);
    } else {
        clEnqueueWriteBuffer(q, m, CL_FALSE, 0, 64, host, 0, NULL, &ev);
    }
    wait_polling(ev);
    printf("%s: refs after the writes, event held %u\n", what, qrefs(q));
    printf("%s: event refs %u", what, erefs(ev));
    clRetainEvent(ev);
    printf(", retained %u", erefs(ev));
    clReleaseEvent(ev);
    printf(", released %u\n", erefs(ev));
    static const cl_profiling_info names[] = {CL_PROFILING_COMMAND_QUEUED,
                                              CL_PROFILING_COMMAND_SUBMIT,
                                              CL_PROFILING_COMMAND_START,
                                              CL_PROFILING_COMMAND_END, 0x7777};
    printf("%s: profiling info", what);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        cl_ulong t = 0;
        printf(" %d", (int)clGetEventProfilingInfo(ev, names[i], sizeof t, &t, NULL));
    }
    printf("\n");
    clRetainCommandQueue(q);
    printf("%s: refs retained %u", what, qrefs(q));
    clReleaseCommandQueue(q);
    printf(", released %u", qrefs(q));
    clReleaseEvent(ev);
    printf(", event released %u", qrefs(q));
    clFinish(q);
    printf(", finished %u\n", qrefs(q));
}

static int prog(void)
{
    cl_platform_id pl;
    cl_device_id d;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &pl, &n) != CL_SUCCESS || !n ||
        clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 1, &d, &n) != CL_SUCCESS || !n)
        return 77;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    static char host[64];
    if (!ctx || !m)
        return 2;
    cl_command_queue q1 = clCreateCommandQueue(ctx, d, 0, &err);
    cl_command_queue q2 = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
    cl_queue_properties ooo[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
                                 0};
    cl_command_queue q3 = clCreateCommandQueueWithProperties(ctx, d, ooo, &err);
    if (!q1 || !q2 || !q3)
        return 3;
    answers_for("clCreateCommandQueue", q1, m, host);
    answers_for("clCreateCommandQueueWithProperties", q2, m, host);
    answers_for("out-of-order", q3, m, host);
    clReleaseCommandQueue(q1);
    clReleaseCommandQueue(q2);
    clReleaseCommandQueue(q3);
    /* More queues than the layer has records: each released while the
     * program still holds an event of it (until the end: so the runtime
     * keeps every queue, and none comes back at an address seen before). */
    static cl_event evs[MANY];
    int ok = 0;
    for (int i = 0; i < MANY; i++) {
        cl_command_queue q = clCreateCommandQueue(ctx, d, 0, &err);
        if (!q)
            break;
        ok += clEnqueueWriteBuffer(q, m, CL_FALSE, 0, 64, host, 0, NULL, &evs[i]) ==
              CL_SUCCESS;
        clFinish(q);
        clReleaseCommandQueue(q);
    }
    for (int i = 0; i < MANY; i++)
        if (evs[i])
            clReleaseEvent(evs[i]);
    printf("%d queues with a write each\n", ok);
    clReleaseMemObject(m);
    clReleaseContext(ctx);
    return 0;
}

static int answers(const char *self)
{
    unsetenv("ACTRACE_PLUGINS");
    unsetenv("OPENCL_LAYERS");
    CHECK_FATAL(system("mkdir -p " WORK) == 0);
    char cmd[4096], trace[512];
    const char *dir = getenv("ACT_TRACE_DIR");
    snprintf(trace, sizeof trace, "%s/opencl_answers.json", dir ? dir : ACT_TRACE_DIR);
    snprintf(cmd, sizeof cmd, "%s --prog >" WORK "/answers.plain 2>" WORK "/answers.log", self);
    int rc = fu_run(cmd);
    if (rc == 77)
        CHECK_SKIP("no OpenCL platform or device (install pocl-opencl-icd)");
    CHECK_FATAL(rc == 0);
    snprintf(cmd, sizeof cmd,
             ACTRACE " record --force -o %s --plugin opencl -- %s --prog >" WORK
             "/answers.traced 2>" WORK "/answers.log", trace, self);
    CHECK_EQ_INT(fu_run(cmd), 0);
    char *a = tu_slurp(WORK "/answers.plain", NULL);
    char *b = tu_slurp(WORK "/answers.traced", NULL);
    CHECK_FATAL(a && b);
    CHECK_EQ_STR(b, a);
    /* The untraced answers are what OpenCL says without a layer. */
    CHECK(strstr(a, "clCreateCommandQueue: profiling info -7 -7 -7 -7 -7") != NULL);
    CHECK(strstr(a, "4200 queues with a write each") != NULL);
    free(a);
    free(b);
    json_error_t err;
    json_t *root = json_load_file(trace, 0, &err);
    CHECK_FATAL(root != NULL);
    CHECK_EQ_INT(fu_count(root, NULL, "gpu_memcpy", 0), 3 * WRITES + MANY);
    json_decref(root);
    return check_done();
}

static char log_text[1 << 14];

static void log_capture(void *user, act_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    size_t n = strlen(log_text);
    snprintf(log_text + n, sizeof log_text - n, "%s\n", msg);
}

static cl_command_queue sw_queue;

static void finish_in_stop(void)
{
    clFinish(sw_queue);
}

/* A library user's session with @p plugins, started, and the first OpenCL
 * device in *@p d (skips the test without one). */
static act_session *started_session(const char **plugins, size_t n_plugins,
                                    cl_device_id *d)
{
    act_session_opts o;
    act_session_opts_init(&o);
    o.plugins = plugins;
    o.plugin_count = n_plugins;
    act_session *s = NULL;
    CHECK_FATAL(act_session_create(&o, &s) == 0);
    CHECK_FATAL(act_session_start(s) == 0);
    cl_platform_id pl;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &pl, &n) != CL_SUCCESS || !n ||
        clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 1, d, &n) != CL_SUCCESS || !n) {
        act_session_destroy(s);
        CHECK_SKIP("no OpenCL platform or device (install pocl-opencl-icd)");
    }
    return s;
}

static int stop_window(void)
{
    unsetenv("ACTRACE_PLUGINS");
    unsetenv("OPENCL_LAYERS");
    act_log_set(log_capture, NULL);
    act_log_set_level(ACT_LOG_INFO);
    const char *plugins[] = {OPENCL_SO, HOOK_SO};
    cl_device_id d;
    act_session *s = started_session(plugins, 2, &d);
    void *hook = dlopen(HOOK_SO, RTLD_NOW | RTLD_NOLOAD);
    void (*on_stop)(void (*)(void)) = NULL;
    if (hook)
        *(void **)&on_stop = dlsym(hook, "tp_hook_on_stop");
    CHECK_FATAL(on_stop != NULL);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    sw_queue = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    CHECK_FATAL(ctx && sw_queue && m);
    static char host[64];
    act_span_begin(ACT_USER_ANNOTATION, "writes");
    /* Fewer than the layer's polling threshold, and nothing that waits:
     * all 60 are still the layer's when the session stops. */
    for (int i = 0; i < LATE; i++)
        CHECK_EQ_INT(clEnqueueWriteBuffer(sw_queue, m, CL_FALSE, 0, sizeof host, host, 0,
                                          NULL, NULL), CL_SUCCESS);
    act_span_end();
    on_stop(finish_in_stop);
    CHECK_EQ_INT(act_session_stop(s), 0);
    on_stop(NULL);
    const char *dir = getenv("ACT_TRACE_DIR");
    char trace[512];
    snprintf(trace, sizeof trace, "%s/opencl_stop_window.json", dir ? dir : ACT_TRACE_DIR);
    CHECK_EQ_INT(act_session_write(s, trace), 0);
    act_session_destroy(s);
    act_log_set(NULL, NULL);
    clReleaseMemObject(m);
    clReleaseCommandQueue(sw_queue);
    clReleaseContext(ctx);
    json_error_t jerr;
    json_t *root = json_load_file(trace, 0, &jerr);
    CHECK_FATAL(root != NULL);
    CHECK_EQ_INT(fu_count(root, NULL, "gpu_memcpy", 0), LATE);
    json_decref(root);
    if (!CHECK(strstr(log_text, "60 device commands traced (60 spans)") != NULL))
        fprintf(stderr, "log:\n%s\n", log_text);
    return check_done();
}

/* The X events of each (pid, tid) nest: sorted by start (longer first
 * on ties), each one ends before the next starts or contains it. Returns
 * the number of partial overlaps. */
static int partial_overlaps(json_t *evs)
{
    size_t n = json_array_size(evs), bad = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(evs, i);
        if (strcmp(json_string_value(json_object_get(a, "ph")) ?: "", "X") != 0)
            continue;
        double as = json_number_value(json_object_get(a, "ts"));
        double ae = as + json_number_value(json_object_get(a, "dur"));
        for (size_t j = 0; j < n; j++) {
            json_t *b = json_array_get(evs, j);
            if (j == i ||
                strcmp(json_string_value(json_object_get(b, "ph")) ?: "", "X") != 0 ||
                !json_equal(json_object_get(a, "pid"), json_object_get(b, "pid")) ||
                !json_equal(json_object_get(a, "tid"), json_object_get(b, "tid")))
                continue;
            double bs = json_number_value(json_object_get(b, "ts"));
            double be = bs + json_number_value(json_object_get(b, "dur"));
            /* b starts inside a and ends after it. */
            if (bs > as && bs < ae && be > ae) {
                fprintf(stderr, "partial overlap: %s [%.3f, %.3f] and %s [%.3f, %.3f]\n",
                        json_string_value(json_object_get(a, "name")), as, ae,
                        json_string_value(json_object_get(b, "name")), bs, be);
                bad++;
            }
        }
    }
    return (int)bad;
}

static int lanes(void)
{
    unsetenv("ACTRACE_PLUGINS");
    setenv("OPENCL_LAYERS", OVERLAP_SO, 1);
    const char *plugins[] = {OPENCL_SO};
    cl_device_id d;
    act_session *s = started_session(plugins, 1, &d);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES,
                                   CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, props, &err);
    cl_mem m[LANES];
    char *host = malloc(LANE_BYTES);
    CHECK_FATAL(ctx && q && host);
    memset(host, 7, LANE_BYTES);
    for (int i = 0; i < LANES; i++) {
        m[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, LANE_BYTES, NULL, &err);
        CHECK_FATAL(m[i] != NULL);
    }
    /* Back to back: each write takes milliseconds, the gap is microseconds. */
    for (int i = 0; i < LANES; i++)
        CHECK_EQ_INT(clEnqueueWriteBuffer(q, m[i], CL_FALSE, 0, LANE_BYTES, host, 0, NULL,
                                          NULL), CL_SUCCESS);
    CHECK_EQ_INT(clFinish(q), CL_SUCCESS);
    CHECK_EQ_INT(act_session_stop(s), 0);
    const char *dir = getenv("ACT_TRACE_DIR");
    char trace[512];
    snprintf(trace, sizeof trace, "%s/opencl_lanes.json", dir ? dir : ACT_TRACE_DIR);
    CHECK_EQ_INT(act_session_write(s, trace), 0);
    act_session_destroy(s);
    for (int i = 0; i < LANES; i++)
        clReleaseMemObject(m[i]);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    free(host);
    json_error_t jerr;
    json_t *root = json_load_file(trace, 0, &jerr);
    CHECK_FATAL(root != NULL);
    json_t *evs = json_object_get(root, "traceEvents");
    CHECK_EQ_INT(fu_count(root, NULL, "gpu_memcpy", 0), LANES);
    /* The queue's tracks: lane 0 keeps the queue's name, lane K > 0 adds
     * ", lane K". */
    int lane_tracks = 0;
    for (size_t i = 0; i < json_array_size(evs); i++) {
        json_t *e = json_array_get(evs, i);
        const char *nm = json_string_value(json_object_get(e, "name"));
        json_t *args = json_object_get(e, "args");
        const char *tn = json_string_value(json_object_get(args, "name"));
        if (nm && strcmp(nm, "thread_name") == 0 && tn && strstr(tn, " (out-of-order)"))
            lane_tracks++;
    }
    if (!CHECK(lane_tracks >= 2))
        fprintf(stderr, "%d tracks for the queue: is overlap_layer.so below the plugin's layer?\n",
                lane_tracks);
    CHECK_EQ_INT(partial_overlaps(evs), 0);
    json_decref(root);
    return check_done();
}

/* --same-start (OpenclSameStart): SAME non-blocking writes into buffers
 * made with CL_MEM_USE_HOST_PTR, whose copies pocl does not make: it
 * reports each one's start and end as one time, so several commands
 * start at once on the queue. Each launch's flow must end at its own
 * device span: in the trace, every "f" lies at (pid, tid, ts) of exactly
 * one device span, whose correlation is that of the host span at its
 * "s"; no two device spans of a track start at one ts. (On 75803da the
 * zero-length copies all sat at one ts, as 3 of hashcat's 2207 did.) */
#define SAME 64
static int same_start(void)
{
    unsetenv("ACTRACE_PLUGINS");
    unsetenv("OPENCL_LAYERS");
    const char *plugins[] = {OPENCL_SO};
    cl_device_id d;
    act_session *s = started_session(plugins, 1, &d);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
    CHECK_FATAL(ctx && q);
    static char host[SAME][64];
    cl_mem m[SAME];
    for (int i = 0; i < SAME; i++) {
        m[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, sizeof host[i],
                              host[i], &err);
        CHECK_FATAL(m[i] != NULL);
    }
    for (int r = 0; r < 4; r++) {
        for (int i = 0; i < SAME; i++)
            CHECK_EQ_INT(clEnqueueWriteBuffer(q, m[i], CL_FALSE, 0, sizeof host[i], host[i],
                                              0, NULL, NULL), CL_SUCCESS);
        CHECK_EQ_INT(clFinish(q), CL_SUCCESS);
    }
    CHECK_EQ_INT(act_session_stop(s), 0);
    const char *dir = getenv("ACT_TRACE_DIR");
    char trace[512];
    snprintf(trace, sizeof trace, "%s/opencl_same_start.json", dir ? dir : ACT_TRACE_DIR);
    CHECK_EQ_INT(act_session_write(s, trace), 0);
    act_session_destroy(s);
    for (int i = 0; i < SAME; i++)
        clReleaseMemObject(m[i]);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    json_error_t jerr;
    json_t *root = json_load_file(trace, 0, &jerr);
    CHECK_FATAL(root != NULL);
    json_t *evs = json_object_get(root, "traceEvents");
    size_t n = json_array_size(evs);
    CHECK_EQ_INT(fu_count(root, NULL, "gpu_memcpy", 0), 4 * SAME);
    int flows = 0, unbound = 0, wrong = 0, shared = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *f = json_array_get(evs, i);
        const char *ph = json_string_value(json_object_get(f, "ph"));
        const char *cat = json_string_value(json_object_get(f, "cat"));
        if (ph && strcmp(ph, "X") == 0 && cat && strcmp(cat, "gpu_memcpy") == 0) {
            /* Another device span of this track at this ts? */
            for (size_t j = i + 1; j < n; j++) {
                json_t *g = json_array_get(evs, j);
                const char *c2 = json_string_value(json_object_get(g, "cat"));
                if (c2 && strcmp(c2, "gpu_memcpy") == 0 &&
                    json_equal(json_object_get(f, "pid"), json_object_get(g, "pid")) &&
                    json_equal(json_object_get(f, "tid"), json_object_get(g, "tid")) &&
                    json_number_value(json_object_get(f, "ts")) ==
                        json_number_value(json_object_get(g, "ts")))
                    shared++;
            }
            continue;
        }
        if (!ph || strcmp(ph, "f") != 0)
            continue;
        flows++;
        /* The s of this id, and the host span it lies on. */
        json_int_t host_corr = -1, dev_corr = -1;
        int at_f = 0;
        for (size_t j = 0; j < n; j++) {
            json_t *g = json_array_get(evs, j);
            const char *p2 = json_string_value(json_object_get(g, "ph"));
            if (!p2)
                continue;
            if (strcmp(p2, "s") == 0 && json_equal(json_object_get(g, "id"),
                                                   json_object_get(f, "id"))) {
                for (size_t k = 0; k < n; k++) {
                    json_t *h = json_array_get(evs, k);
                    const char *p3 = json_string_value(json_object_get(h, "ph"));
                    if (p3 && strcmp(p3, "X") == 0 &&
                        json_equal(json_object_get(h, "pid"), json_object_get(g, "pid")) &&
                        json_equal(json_object_get(h, "tid"), json_object_get(g, "tid")) &&
                        json_number_value(json_object_get(h, "ts")) ==
                            json_number_value(json_object_get(g, "ts")))
                        host_corr = json_integer_value(
                            json_object_get(json_object_get(h, "args"), "correlation"));
                }
            }
            if (strcmp(p2, "X") == 0 &&
                json_equal(json_object_get(g, "pid"), json_object_get(f, "pid")) &&
                json_equal(json_object_get(g, "tid"), json_object_get(f, "tid")) &&
                json_number_value(json_object_get(g, "ts")) ==
                    json_number_value(json_object_get(f, "ts"))) {
                at_f++;
                dev_corr = json_integer_value(
                    json_object_get(json_object_get(g, "args"), "correlation"));
            }
        }
        if (at_f != 1)
            unbound++;
        else if (dev_corr != host_corr || host_corr <= 0)
            wrong++;
    }
    CHECK_EQ_INT(flows, 4 * SAME);
    CHECK_EQ_INT(shared, 0);
    CHECK_EQ_INT(unbound, 0);
    CHECK_EQ_INT(wrong, 0);
    json_decref(root);
    return check_done();
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--same-start") == 0)
        return same_start();
    if (argc > 1 && strcmp(argv[1], "--lanes") == 0)
        return lanes();
    if (argc > 1 && strcmp(argv[1], "--prog") == 0)
        return prog();
    if (argc > 1 && strcmp(argv[1], "--stop-window") == 0)
        return stop_window();
    return answers(argv[0]);
}
