/* SPDX-License-Identifier: MIT */
/*
 * The opencl backend end to end: `actrace record --plugin opencl -- PROG`
 * on examples/opencl (PROG = actrace-cl-demo, or actrace-cl-demo-dlopen
 * which reaches OpenCL through dlopen/dlsym). Checks:
 *  - the program prints the same with and without tracing (queue
 *    properties included: profiling is forced but not reported);
 *  - every kernel, copy and fill it made is a device span with its name,
 *    bytes / direction and a flow from the enqueue call that made it;
 *  - every device span lies inside the host window of its command: it
 *    starts after its enqueue call began and ends before the run ended;
 *    on each in-order queue the spans follow enqueue order;
 *  - the device is described (name, vendor, versions, compute units,
 *    global memory, clock).
 * With the linked program it also checks the defaults of `actrace record`:
 * with no --plugin, host and the opencl backend are loaded (not the example
 * plugin) and the kernels are traced; with no OpenCL runtime the backend
 * declines with one line at -v and nothing without it.
 * With --late (OpenclLate) it is a library user that initialises OpenCL
 * before it starts a session: the layer cannot be installed any more; the
 * plugin must say so once (log, actraceStats warnings, an instant in the
 * trace) and the program must go on untraced, without a crash.
 * With --ext (OpenclExtension) it is a library user that starts its session
 * (with the plugin) before its first OpenCL call, then calls extension
 * functions it got from clGetExtensionFunctionAddressForPlatform: the
 * command-buffer functions pocl has; each must be a runtime span in the
 * trace, and so must every lookup. It also drives an out-of-order queue in
 * a second context with a chain of events the program asked for (which it
 * releases itself): every command must be a device span on a stream named
 * out-of-order, and the queue must report the properties it was given.
 * With --memcheck PROG (OpenclMemcheck) it runs PROG under valgrind's
 * memcheck, untraced and traced (the plugin as a layer in the program,
 * libactrace preloaded): no error and no definite leak outside the OpenCL
 * runtime's own (tests/opencl/pocl.supp). The traced run starts the
 * memcheck tool directly: valgrind's launcher is itself a dynamically
 * linked program, which would take the recording for itself.
 * The trace is written to $ACT_TRACE_DIR for the CI validators. Without an
 * OpenCL platform the test is skipped (77).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <actrace/actrace.h>
#include <jansson.h>

#include "check.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define WORK ACT_BINARY_DIR "/tests/opencl"
#define ITER 3

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

static int run(const char *cmd)
{
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

typedef struct span {
    const char *name, *cat;
    double ts, dur;
    json_int_t pid, tid, corr;
    json_t *args;
} span;

static span get_span(json_t *ev)
{
    span s;
    memset(&s, 0, sizeof s);
    s.name = json_string_value(json_object_get(ev, "name"));
    s.cat = json_string_value(json_object_get(ev, "cat"));
    s.ts = json_number_value(json_object_get(ev, "ts"));
    s.dur = json_number_value(json_object_get(ev, "dur"));
    s.pid = json_integer_value(json_object_get(ev, "pid"));
    s.tid = json_integer_value(json_object_get(ev, "tid"));
    s.args = json_object_get(ev, "args");
    s.corr = json_integer_value(json_object_get(s.args, "correlation"));
    return s;
}

static int is_x(json_t *ev)
{
    const char *ph = json_string_value(json_object_get(ev, "ph"));
    return ph && strcmp(ph, "X") == 0;
}

static char late_log[8192];

static void late_capture(void *user, act_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    size_t n = strlen(late_log);
    snprintf(late_log + n, sizeof late_log - n, "%s\n", msg);
}

static int late(void)
{
    unsetenv("OPENCL_LAYERS");
    cl_platform_id p;
    cl_uint np = 0;
    /* OpenCL first: the ICD loader reads OPENCL_LAYERS now, still empty. */
    if (clGetPlatformIDs(1, &p, &np) != CL_SUCCESS || np == 0)
        CHECK_SKIP("no OpenCL platform (install pocl-opencl-icd)");
    act_log_set(late_capture, NULL);
    act_log_set_level(ACT_LOG_DEBUG);
    const char *plugins[] = {ACT_BINARY_DIR "/plugins/opencl.so"};
    act_session_opts o;
    act_session_opts_init(&o);
    o.plugins = plugins;
    o.plugin_count = 1;
    act_session *s = NULL;
    CHECK_FATAL(act_session_create(&o, &s) == 0);
    CHECK_FATAL(act_session_start(s) == 0);
    /* The program's own span: viewers need one to draw a timeline. */
    act_span_begin(ACT_USER_ANNOTATION, "opencl work");
    cl_device_id d;
    cl_uint nd = 0;
    CHECK_EQ_INT(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, &nd), CL_SUCCESS);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    CHECK(ctx != NULL);
    if (ctx)
        clReleaseContext(ctx);
    act_span_end();
    const char *dir = getenv("ACT_TRACE_DIR");
    char trace[512];
    snprintf(trace, sizeof trace, "%s/opencl_late.json", dir ? dir : ACT_TRACE_DIR);
    CHECK_EQ_INT(act_session_stop(s), 0);
    CHECK_EQ_INT(act_session_write(s, trace), 0);
    act_session_destroy(s);
    act_log_set(NULL, NULL);
    /* Once in the log. */
    const char *w = strstr(late_log, "initialised in this process before");
    CHECK(w != NULL);
    CHECK(w && !strstr(w + 1, "initialised in this process before"));
    json_error_t jerr;
    json_t *root = json_load_file(trace, 0, &jerr);
    CHECK_FATAL(root != NULL);
    char *stats = json_dumps(json_object_get(root, "actraceStats"), JSON_COMPACT);
    CHECK(stats && strstr(stats, "\"warnings\":[\"OpenCL was initialised"));
    free(stats);
    int inst = 0, calls = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(root, "traceEvents"), i, ev) {
        const char *nm = json_string_value(json_object_get(ev, "name"));
        inst += nm && strcmp(nm, "opencl layer not active") == 0;
        calls += nm && strncmp(nm, "cl", 2) == 0;
    }
    CHECK_EQ_INT(inst, 1);
    CHECK_EQ_INT(calls, 0); /* not traced, and nothing made up */
    json_decref(root);
    CHECK_MAIN_END;
}

#define VG_FLAGS                                                               \
    "--error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite "   \
    "--suppressions=" ACT_SOURCE_DIR "/tests/opencl/pocl.supp -q"

static int memcheck(const char *prog)
{
    const char *vlib = getenv("VALGRIND_LIB");
    if (!vlib || !*vlib)
        vlib = "/usr/libexec/valgrind";
    char tool[512], cmd[4096], log[512];
    snprintf(tool, sizeof tool, "%s/memcheck-amd64-linux", vlib);
    if (run("command -v valgrind >/dev/null 2>&1") != 0 || access(tool, X_OK) != 0)
        CHECK_SKIP("valgrind (memcheck) is not installed");
    CHECK_FATAL(system("mkdir -p " WORK) == 0);
    snprintf(log, sizeof log, WORK "/%s.memcheck.log", prog);
    snprintf(cmd, sizeof cmd, "valgrind " VG_FLAGS " " ACT_BINARY_DIR "/bin/%s 1 "
             ">/dev/null 2>%s", prog, log);
    int rc = run(cmd);
    if (rc == 77)
        CHECK_SKIP("no OpenCL platform or device (install pocl-opencl-icd)");
    if (!CHECK_EQ_INT(rc, 0)) {
        char *l = slurp(log);
        fprintf(stderr, "untraced:\n%s\n", l ? l : "");
        free(l);
    }
    const char *dir = getenv("ACT_TRACE_DIR");
    char trace[512];
    snprintf(trace, sizeof trace, "%s/opencl_memcheck.json", dir ? dir : ACT_TRACE_DIR);
    remove(trace);
    snprintf(cmd, sizeof cmd,
             "VALGRIND_LIB=%s VALGRIND_LAUNCHER=\"$(command -v valgrind)\" "
             "LD_PRELOAD=" ACT_BINARY_DIR "/src/libactrace.so "
             "ACTRACE_RECORD_OUTPUT=%s ACTRACE_PLUGINS=opencl "
             "ACTRACE_DEFAULT_PLUGINS=0 %s " VG_FLAGS " " ACT_BINARY_DIR
             "/bin/%s 1 >/dev/null 2>%s", vlib, trace, tool, prog, log);
    rc = run(cmd);
    if (!CHECK_EQ_INT(rc, 0)) {
        char *l = slurp(log);
        fprintf(stderr, "traced:\n%s\n", l ? l : "");
        free(l);
    }
    json_error_t err;
    json_t *root = json_load_file(trace, 0, &err);
    CHECK_FATAL(root != NULL);
    int k = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(root, "traceEvents"), i, ev) {
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        k += is_x(ev) && cat && strcmp(cat, "kernel") == 0;
    }
    CHECK_EQ_INT(k, 4);
    json_decref(root);
    CHECK_MAIN_END;
}

static int ext(void)
{
    unsetenv("OPENCL_LAYERS");
    const char *plugins[] = {ACT_BINARY_DIR "/plugins/opencl.so"};
    act_session_opts o;
    act_session_opts_init(&o);
    o.plugins = plugins;
    o.plugin_count = 1;
    /* The lookups are counted below however short they are. */
    static const char all_calls[] = "OPENCL_MIN_CALL_NS = 0\n";
    o.config_text = all_calls;
    o.config_text_len = sizeof all_calls - 1;
    act_session *s = NULL;
    CHECK_FATAL(act_session_create(&o, &s) == 0);
    CHECK_FATAL(act_session_start(s) == 0);
    act_span_begin(ACT_USER_ANNOTATION, "extensions");
    cl_platform_id p;
    cl_uint np = 0;
    if (clGetPlatformIDs(1, &p, &np) != CL_SUCCESS || np == 0) {
        act_session_destroy(s);
        CHECK_SKIP("no OpenCL platform (install pocl-opencl-icd)");
    }
    cl_device_id d;
    CHECK_FATAL(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL) == CL_SUCCESS);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
    CHECK_FATAL(ctx && q);
    clCreateCommandBufferKHR_fn create = NULL;
    clReleaseCommandBufferKHR_fn release = NULL;
    void *a = clGetExtensionFunctionAddressForPlatform(p, "clCreateCommandBufferKHR");
    void *b = clGetExtensionFunctionAddressForPlatform(p, "clReleaseCommandBufferKHR");
    memcpy(&create, &a, sizeof a);
    memcpy(&release, &b, sizeof b);
    int have_cb = create && release;
    if (have_cb) {
        cl_command_buffer_khr cb = create(1, &q, NULL, &err);
        CHECK_EQ_INT(err, CL_SUCCESS);
        if (cb)
            CHECK_EQ_INT(release(cb), CL_SUCCESS);
    }
    /* A core function through the extension lookup: ocl-icd returns the
     * ICD's own entry point, which the layer cannot wrap; it must work. */
    void *c = clGetExtensionFunctionAddressForPlatform(p, "clGetPlatformInfo");
    if (c) {
        cl_int(CL_API_CALL * info)(cl_platform_id, cl_platform_info, size_t, void *,
                                   size_t *);
        memcpy(&info, &c, sizeof c);
        char name[256];
        CHECK_EQ_INT(info(p, CL_PLATFORM_NAME, sizeof name, name, NULL), CL_SUCCESS);
    }
    /* A second context with an out-of-order queue: a fill, a chain of
     * kernels on events the program asked for, a blocking read. */
    cl_context ctx2 = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_queue_properties ooo[] = {CL_QUEUE_PROPERTIES,
                                 CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
    cl_command_queue q2 = clCreateCommandQueueWithProperties(ctx2, d, ooo, &err);
    const char *src = "__kernel void inc(__global int *a) { a[get_global_id(0)] += 1; }";
    cl_program prog = clCreateProgramWithSource(ctx2, 1, &src, NULL, &err);
    CHECK_FATAL(ctx2 && q2 && prog && clBuildProgram(prog, 1, &d, "", NULL, NULL) == 0);
    cl_kernel k = clCreateKernel(prog, "inc", &err);
    cl_mem m = clCreateBuffer(ctx2, CL_MEM_READ_WRITE, 256 * sizeof(int), NULL, &err);
    CHECK_FATAL(k && m);
    clSetKernelArg(k, 0, sizeof m, &m);
    cl_event evs[6];
    int zero = 0;
    size_t g = 256;
    CHECK_EQ_INT(clEnqueueFillBuffer(q2, m, &zero, sizeof zero, 0, 256 * sizeof(int), 0,
                                     NULL, &evs[0]), CL_SUCCESS);
    for (int j = 1; j < 6; j++)
        CHECK_EQ_INT(clEnqueueNDRangeKernel(q2, k, 1, NULL, &g, NULL, 1, &evs[j - 1],
                                            &evs[j]), CL_SUCCESS);
    int host[256];
    CHECK_EQ_INT(clEnqueueReadBuffer(q2, m, CL_TRUE, 0, sizeof host, host, 1, &evs[5],
                                     NULL), CL_SUCCESS);
    CHECK_EQ_INT(host[0], 5);
    for (int j = 0; j < 6; j++)
        CHECK_EQ_INT(clReleaseEvent(evs[j]), CL_SUCCESS);
    cl_command_queue_properties qp = 0;
    clGetCommandQueueInfo(q2, CL_QUEUE_PROPERTIES, sizeof qp, &qp, NULL);
    CHECK_EQ_INT(qp, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    clFinish(q2);
    clReleaseMemObject(m);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q2);
    clReleaseContext(ctx2);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    act_span_end();
    const char *dir = getenv("ACT_TRACE_DIR");
    char trace[512];
    snprintf(trace, sizeof trace, "%s/opencl_ext.json", dir ? dir : ACT_TRACE_DIR);
    CHECK_EQ_INT(act_session_stop(s), 0);
    CHECK_EQ_INT(act_session_write(s, trace), 0);
    act_session_destroy(s);
    json_error_t jerr;
    json_t *root = json_load_file(trace, 0, &jerr);
    CHECK_FATAL(root != NULL);
    int ncreate = 0, nrelease = 0, ninfo = 0, nlookup = 0, ninc = 0, nfill = 0,
        nread = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(json_object_get(root, "traceEvents"), i, ev) {
        const char *nm = json_string_value(json_object_get(ev, "name"));
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        if (nm && cat && is_x(ev)) {
            ninc += strcmp(cat, "kernel") == 0 && strcmp(nm, "inc") == 0;
            nfill += strcmp(cat, "gpu_memset") == 0;
            nread += strcmp(cat, "gpu_memcpy") == 0 && strcmp(nm, "Memcpy DtoH") == 0;
        }
        if (!nm || !cat || strcmp(cat, "runtime"))
            continue;
        ncreate += strcmp(nm, "clCreateCommandBufferKHR") == 0;
        nrelease += strcmp(nm, "clReleaseCommandBufferKHR") == 0;
        ninfo += strcmp(nm, "clGetPlatformInfo") == 0;
        nlookup += strcmp(nm, "clGetExtensionFunctionAddressForPlatform") == 0;
    }
    if (have_cb) {
        CHECK_EQ_INT(ncreate, 1);
        CHECK_EQ_INT(nrelease, 1);
    }
    (void)ninfo; /* ocl-icd hands out pocl's own function here: not ours */
    CHECK_EQ_INT(nlookup, 3);
    CHECK_EQ_INT(ninc, 5);
    CHECK_EQ_INT(nfill, 1);
    CHECK_EQ_INT(nread, 1);
    char *all = json_dumps(root, JSON_COMPACT);
    CHECK(all && strstr(all, "(out-of-order)"));
    free(all);
    json_decref(root);
    CHECK_MAIN_END;
}

int main(int argc, char **argv)
{
    const char *prog = argc > 1 ? argv[1] : "actrace-cl-demo";
    if (strcmp(prog, "--late") == 0)
        return late();
    if (strcmp(prog, "--ext") == 0)
        return ext();
    if (strcmp(prog, "--memcheck") == 0)
        return memcheck(argc > 2 ? argv[2] : "actrace-cl-demo");
    unsetenv("ACTRACE_PLUGIN_DIR");
    unsetenv("ACTRACE_PLUGINS");
    unsetenv("OPENCL_LAYERS");
    CHECK_FATAL(system("mkdir -p " WORK) == 0);
    char cmd[4096], out_plain[512], out_traced[512], trace[512], log[512];
    snprintf(out_plain, sizeof out_plain, WORK "/%s.plain.out", prog);
    snprintf(out_traced, sizeof out_traced, WORK "/%s.traced.out", prog);
    snprintf(log, sizeof log, WORK "/%s.log", prog);
    const char *dir = getenv("ACT_TRACE_DIR");
    snprintf(trace, sizeof trace, "%s/opencl_%s.json", dir ? dir : ACT_TRACE_DIR,
             strcmp(prog, "actrace-cl-demo") ? "dlopen" : "linked");
    remove(trace);

    snprintf(cmd, sizeof cmd, ACT_BINARY_DIR "/bin/%s %d >%s 2>%s", prog, ITER,
             out_plain, log);
    int rc = run(cmd);
    if (rc == 77)
        CHECK_SKIP("no OpenCL platform or device (install pocl-opencl-icd)");
    CHECK_FATAL(rc == 0);

    snprintf(cmd, sizeof cmd,
             "ACTRACE_LOG=info %s record --force -o %s --plugin opencl -- "
             ACT_BINARY_DIR "/bin/%s %d >%s 2>%s",
             ACTRACE, trace, prog, ITER, out_traced, log);
    rc = run(cmd);
    if (!CHECK_EQ_INT(rc, 0)) {
        char *l = slurp(log);
        fprintf(stderr, "%s\n", l ? l : "(no log)");
        free(l);
    }
    char *a = slurp(out_plain), *b = slurp(out_traced);
    CHECK_FATAL(a && b);
    CHECK_EQ_STR(b, a);
    CHECK(strstr(a, "queue 0: profiling off") != NULL);
    free(a);
    free(b);

    json_error_t err;
    json_t *root = json_load_file(trace, 0, &err);
    if (!root)
        fprintf(stderr, "%s:%d: %s\n", trace, err.line, err.text);
    CHECK_FATAL(root != NULL);
    json_t *events = json_object_get(root, "traceEvents");
    size_t i, j;
    json_t *ev, *ev2;

    /* Host side: runtime spans by correlation id. */
    int kernels = 0, htod = 0, dtoh = 0, fills = 0, scale = 0, add = 0;
    int linked = 0, inside = 0, devspans = 0;
    double host_end = 0;
    json_array_foreach(events, i, ev) {
        if (!is_x(ev))
            continue;
        span s = get_span(ev);
        if (s.cat && strcmp(s.cat, "runtime") == 0 && s.ts + s.dur > host_end)
            host_end = s.ts + s.dur;
    }
    json_array_foreach(events, i, ev) {
        if (!is_x(ev))
            continue;
        span d = get_span(ev);
        if (!d.cat || (strcmp(d.cat, "kernel") && strcmp(d.cat, "gpu_memcpy") &&
                       strcmp(d.cat, "gpu_memset")))
            continue;
        devspans++;
        if (strcmp(d.cat, "kernel") == 0) {
            kernels++;
            scale += strcmp(d.name, "scale") == 0;
            add += strcmp(d.name, "add") == 0;
            CHECK_EQ_INT(json_integer_value(json_object_get(d.args, "global_x")),
                         4096);
        } else if (strcmp(d.cat, "gpu_memcpy") == 0) {
            const char *dirn = json_string_value(json_object_get(d.args, "direction"));
            CHECK(dirn != NULL);
            htod += dirn && strcmp(dirn, "HtoD") == 0;
            dtoh += dirn && strcmp(dirn, "DtoH") == 0;
            CHECK_EQ_INT(json_integer_value(json_object_get(d.args, "bytes")),
                         4096 * 4);
        } else {
            fills++;
            CHECK_EQ_INT(json_integer_value(json_object_get(d.args, "bytes")),
                         4096 * 4);
        }
        /* The enqueue call with the same correlation id. */
        CHECK(d.corr > 0);
        int found = 0;
        json_array_foreach(events, j, ev2) {
            if (!is_x(ev2))
                continue;
            span h = get_span(ev2);
            if (h.corr != d.corr || !h.cat || strcmp(h.cat, "runtime"))
                continue;
            found++;
            CHECK(strncmp(h.name, "clEnqueue", 9) == 0);
            /* Starts after its enqueue call began, ends inside the run. */
            if (CHECK(d.ts >= h.ts) && CHECK(d.ts + d.dur <= host_end))
                inside++;
        }
        linked += found == 1;
    }
    const int per = ITER * 2; /* two threads */
    CHECK_EQ_INT(kernels, 2 * per);
    CHECK_EQ_INT(scale, per);
    CHECK_EQ_INT(add, per);
    CHECK_EQ_INT(htod, per);
    CHECK_EQ_INT(dtoh, per);
    CHECK_EQ_INT(fills, per);
    CHECK_EQ_INT(linked, devspans);
    CHECK_EQ_INT(inside, devspans);

    /* Flows: one s and one f per device span. */
    int fs = 0, ff = 0;
    json_array_foreach(events, i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        if (ph && strcmp(ph, "s") == 0)
            fs++;
        if (ph && strcmp(ph, "f") == 0)
            ff++;
    }
    CHECK_EQ_INT(fs, devspans);
    CHECK_EQ_INT(ff, devspans);

    /* Per in-order queue (a device tid), spans in enqueue (correlation)
     * order and not overlapping. */
    json_array_foreach(events, i, ev) {
        if (!is_x(ev))
            continue;
        span d = get_span(ev);
        if (!d.cat || !json_object_get(d.args, "queue") ||
            strcmp(d.cat, "runtime") == 0)
            continue;
        json_array_foreach(events, j, ev2) {
            if (!is_x(ev2))
                continue;
            span e = get_span(ev2);
            if (e.pid != d.pid || e.tid != d.tid || e.corr <= d.corr ||
                strcmp(e.cat, "runtime") == 0)
                continue;
            /* As viewers compute it, in floating point. */
            CHECK(e.ts >= d.ts + d.dur);
        }
    }

    /* The device, described. */
    json_t *dev = json_array_get(json_object_get(root, "deviceProperties"), 0);
    CHECK(dev != NULL);
    const char *keys[] = {"name", "vendor", "openclVersion", "driverVersion",
                          "numComputeUnits", "totalGlobalMem", "clockRateMHz"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (!CHECK(json_object_get(dev, keys[k]) != NULL))
            fprintf(stderr, "missing device property %s\n", keys[k]);
    char *l = slurp(log);
    CHECK(l && strstr(l, "0 clamped") != NULL);
    if (l && !strstr(l, "0 clamped"))
        fprintf(stderr, "%s\n", l);
    free(l);
    json_decref(root);

    if (strcmp(prog, "actrace-cl-demo") == 0) {
        /* No flags at all: host and every installed backend. */
        char dtrace[512];
        snprintf(dtrace, sizeof dtrace, "%s/opencl_defaults.json",
                 dir ? dir : ACT_TRACE_DIR);
        remove(dtrace);
        snprintf(cmd, sizeof cmd, "%s record --force -o %s -- " ACT_BINARY_DIR
                 "/bin/%s 1 >/dev/null 2>%s", ACTRACE, dtrace, prog, log);
        CHECK_EQ_INT(run(cmd), 0);
        root = json_load_file(dtrace, 0, &err);
        CHECK_FATAL(root != NULL);
        char *stats = json_dumps(json_object_get(root, "actraceStats"), JSON_COMPACT);
        CHECK(stats && strstr(stats, "\"name\":\"host\""));
        CHECK(stats && strstr(stats, "\"name\":\"opencl\""));
        CHECK(stats && !strstr(stats, "\"name\":\"example\""));
        free(stats);
        int k = 0;
        json_array_foreach(json_object_get(root, "traceEvents"), i, ev) {
            const char *cat = json_string_value(json_object_get(ev, "cat"));
            k += is_x(ev) && cat && strcmp(cat, "kernel") == 0;
        }
        CHECK_EQ_INT(k, 4);
        json_decref(root);

        /* No OpenCL runtime: a quiet decline, one line at -v. */
        snprintf(cmd, sizeof cmd,
                 "OPENCL_VENDOR_PATH=/nonexistent %s record --force -v -o %s/none.json -- "
                 "/bin/true 2>%s", ACTRACE, WORK, log);
        CHECK_EQ_INT(run(cmd), 0);
        char *l2 = slurp(log);
        CHECK(l2 && strstr(l2, "info: plugin ") && strstr(l2, "opencl.so: refused: init declined: no OpenCL runtime"));
        /* Quiet: no warning about the backend (other lines may warn). */
        for (const char *ln = l2; ln && *ln;) {
            const char *e = strchr(ln, '\n');
            size_t n = e ? (size_t)(e - ln) : strlen(ln);
            char line[1024];
            snprintf(line, sizeof line, "%.*s", (int)n, ln);
            if (!CHECK(!(strstr(line, "warning") && strstr(line, "opencl"))))
                fprintf(stderr, "%s\n", line);
            ln = e ? e + 1 : NULL;
        }
        free(l2);
        snprintf(cmd, sizeof cmd,
                 "OPENCL_VENDOR_PATH=/nonexistent %s record --force -o %s/none.json -- "
                 "/bin/true 2>%s", ACTRACE, WORK, log);
        CHECK_EQ_INT(run(cmd), 0);
        l2 = slurp(log);
        CHECK(l2 && !strstr(l2, "opencl.so"));
        free(l2);
        /* Children get every layer: ocl-icd 2.3.1 cut OPENCL_LAYERS to its
         * first path in the process; the layer puts it back. */
        snprintf(cmd, sizeof cmd,
                 "OPENCL_LAYERS=/nonexistent/other_layer.so CL_DEMO_SHOW_LAYERS=1 "
                 "%s record --force --plugin opencl -o %s/layers.json -- " ACT_BINARY_DIR
                 "/bin/%s 1 >/dev/null 2>%s", ACTRACE, WORK, prog, log);
        CHECK_EQ_INT(run(cmd), 0);
        l2 = slurp(log);
        CHECK(l2 && strstr(l2, "/opencl.so:/nonexistent/other_layer.so\n"));
        if (l2 && !strstr(l2, "/opencl.so:/nonexistent/other_layer.so\n"))
            fprintf(stderr, "%s\n", l2);
        free(l2);
        /* An explicit list replaces the default. */
        snprintf(cmd, sizeof cmd, "%s record --force -v --plugin host -o %s/none.json -- "
                 "/bin/true 2>%s", ACTRACE, WORK, log);
        CHECK_EQ_INT(run(cmd), 0);
        l2 = slurp(log);
        CHECK(l2 && strstr(l2, "host.so: loaded") && !strstr(l2, "opencl.so"));
        free(l2);
    }
    CHECK_MAIN_END;
}
