/* SPDX-License-Identifier: MIT */
/*
 * A small, real OpenCL program for `make demo` and the tests of the
 * opencl backend: two kernels (scale, add), transfers both ways, a fill,
 * two in-order queues driven by two threads, one of them waiting on an
 * event it asked for. It knows nothing of actrace; its output depends only
 * on the computation, so a traced and an untraced run print the same.
 *
 * Built twice: linked against libOpenCL (actrace-cl-demo), and with
 * CL_DEMO_DLOPEN (actrace-cl-demo-dlopen), where it loads libOpenCL.so.1
 * with dlopen and calls every entry point through dlsym, as some runtimes
 * and language bindings do.
 *
 * Usage: actrace-cl-demo [ITERATIONS]   (default 4)
 * Exit status: 0, 1 on an OpenCL error, 77 when there is no OpenCL
 * platform or device (the tests then skip).
 */
#define CL_TARGET_OPENCL_VERSION 300
/* clCreateCommandQueue is deprecated but still what many programs call. */
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CL_DEMO_DLOPEN
#include <dlfcn.h>
#endif

/* Every entry point the program uses, called through this table. */
#define CL_DEMO_FUNCS(X)                                                       \
    X(clGetPlatformIDs)                                                        \
    X(clGetDeviceIDs)                                                          \
    X(clCreateContext)                                                         \
    X(clReleaseContext)                                                        \
    X(clCreateCommandQueue)                                                    \
    X(clCreateCommandQueueWithProperties)                                      \
    X(clGetCommandQueueInfo)                                                   \
    X(clReleaseCommandQueue)                                                   \
    X(clCreateBuffer)                                                          \
    X(clReleaseMemObject)                                                      \
    X(clCreateProgramWithSource)                                               \
    X(clBuildProgram)                                                          \
    X(clGetProgramBuildInfo)                                                   \
    X(clReleaseProgram)                                                        \
    X(clCreateKernel)                                                          \
    X(clSetKernelArg)                                                          \
    X(clReleaseKernel)                                                         \
    X(clEnqueueWriteBuffer)                                                    \
    X(clEnqueueReadBuffer)                                                     \
    X(clEnqueueFillBuffer)                                                     \
    X(clEnqueueNDRangeKernel)                                                  \
    X(clWaitForEvents)                                                         \
    X(clGetEventInfo)                                                          \
    X(clReleaseEvent)                                                          \
    X(clFinish)

#define CL_DEMO_PTR(f) static __typeof__(&f) p_##f;
CL_DEMO_FUNCS(CL_DEMO_PTR)

static int load_opencl(void)
{
#ifdef CL_DEMO_DLOPEN
    void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "cl_demo: cannot load libOpenCL.so.1: %s\n", dlerror());
        return -1;
    }
#define CL_DEMO_SYM(f)                                                         \
    {                                                                          \
        void *s_ = dlsym(h, #f);                                               \
        if (!s_) {                                                             \
            fprintf(stderr, "cl_demo: %s missing\n", #f);                      \
            return -1;                                                         \
        }                                                                      \
        memcpy(&p_##f, &s_, sizeof s_);                                        \
    }
    CL_DEMO_FUNCS(CL_DEMO_SYM)
    /* The handle stays open for the life of the process, like a runtime's. */
#else
#define CL_DEMO_SET(f) p_##f = f;
    CL_DEMO_FUNCS(CL_DEMO_SET)
#endif
    return 0;
}

static const char *source =
    "__kernel void scale(__global float *a, float f) {\n"
    "    size_t i = get_global_id(0);\n"
    "    a[i] = a[i] * f;\n"
    "}\n"
    "__kernel void add(__global const float *a, __global const float *b,\n"
    "                  __global float *c) {\n"
    "    size_t i = get_global_id(0);\n"
    "    c[i] = a[i] + b[i];\n"
    "}\n";

#define N 4096

typedef struct worker {
    int id;
    int iterations;
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    double checksum;
    cl_uint event_refs; /* reference count of an event the thread kept */
    int failed;
} worker;

#define CHECK(call)                                                            \
    do {                                                                       \
        cl_int e_ = (call);                                                    \
        if (e_ != CL_SUCCESS) {                                                \
            fprintf(stderr, "cl_demo: %s failed: %d (line %d)\n", #call, e_,   \
                    __LINE__);                                                 \
            w->failed = 1;                                                     \
            goto out;                                                          \
        }                                                                      \
    } while (0)

static void *work(void *arg)
{
    worker *w = arg;
    cl_int err = CL_SUCCESS;
    cl_mem a = NULL, b = NULL, c = NULL;
    cl_kernel ks = NULL, ka = NULL;
    float *host = malloc(N * sizeof(float));
    if (!host) {
        w->failed = 1;
        return NULL;
    }
    a = p_clCreateBuffer(w->ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
    CHECK(err);
    b = p_clCreateBuffer(w->ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
    CHECK(err);
    c = p_clCreateBuffer(w->ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
    CHECK(err);
    ks = p_clCreateKernel(w->prog, "scale", &err);
    CHECK(err);
    ka = p_clCreateKernel(w->prog, "add", &err);
    CHECK(err);
    size_t global = N, local = 64;
    for (int it = 0; it < w->iterations; it++) {
        for (int i = 0; i < N; i++)
            host[i] = (float)((i + it + w->id) % 97);
        /* Host to device, a fill, two kernels, device to host. */
        CHECK(p_clEnqueueWriteBuffer(w->q, a, CL_FALSE, 0, N * sizeof(float), host, 0,
                                     NULL, NULL));
        float pattern = 0.5f * (float)(w->id + 1);
        CHECK(p_clEnqueueFillBuffer(w->q, b, &pattern, sizeof pattern, 0,
                                    N * sizeof(float), 0, NULL, NULL));
        float f = 2.0f;
        CHECK(p_clSetKernelArg(ks, 0, sizeof a, &a));
        CHECK(p_clSetKernelArg(ks, 1, sizeof f, &f));
        CHECK(p_clEnqueueNDRangeKernel(w->q, ks, 1, NULL, &global, &local, 0, NULL,
                                       NULL));
        CHECK(p_clSetKernelArg(ka, 0, sizeof a, &a));
        CHECK(p_clSetKernelArg(ka, 1, sizeof b, &b));
        CHECK(p_clSetKernelArg(ka, 2, sizeof c, &c));
        cl_event done = NULL;
        /* Worker 1 asks for the kernel's event and waits on it; worker 0
         * lets the blocking read and clFinish synchronise. */
        CHECK(p_clEnqueueNDRangeKernel(w->q, ka, 1, NULL, &global, NULL, 0, NULL,
                                       w->id == 1 ? &done : NULL));
        if (done) {
            CHECK(p_clWaitForEvents(1, &done));
            CHECK(p_clGetEventInfo(done, CL_EVENT_REFERENCE_COUNT,
                                   sizeof w->event_refs, &w->event_refs, NULL));
            CHECK(p_clReleaseEvent(done));
        }
        CHECK(p_clEnqueueReadBuffer(w->q, c, CL_TRUE, 0, N * sizeof(float), host, 0,
                                    NULL, NULL));
        for (int i = 0; i < N; i++)
            w->checksum += host[i];
    }
    CHECK(p_clFinish(w->q));
out:
    if (ks)
        p_clReleaseKernel(ks);
    if (ka)
        p_clReleaseKernel(ka);
    if (a)
        p_clReleaseMemObject(a);
    if (b)
        p_clReleaseMemObject(b);
    if (c)
        p_clReleaseMemObject(c);
    free(host);
    return NULL;
}

int main(int argc, char **argv)
{
    int iterations = argc > 1 ? atoi(argv[1]) : 4;
    if (iterations < 1 || iterations > 100000) {
        fprintf(stderr, "usage: %s [ITERATIONS 1..100000]\n", argv[0]);
        return 2;
    }
    if (load_opencl() != 0)
        return 77;
    cl_platform_id platform;
    cl_uint np = 0;
    if (p_clGetPlatformIDs(1, &platform, &np) != CL_SUCCESS || np == 0) {
        fprintf(stderr, "cl_demo: no OpenCL platform\n");
        return 77;
    }
    cl_device_id dev;
    cl_uint nd = 0;
    if (p_clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, &nd) != CL_SUCCESS ||
        nd == 0) {
        fprintf(stderr, "cl_demo: no OpenCL device\n");
        return 77;
    }
    cl_int err = CL_SUCCESS;
    cl_context ctx = p_clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (!ctx) {
        fprintf(stderr, "cl_demo: clCreateContext: %d\n", err);
        return 1;
    }
    /* Queue 0 the 1.x way, queue 1 with a properties array; neither asks
     * for profiling, and each says so below. */
    cl_command_queue q0 = p_clCreateCommandQueue(ctx, dev, 0, &err);
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, 0, 0};
    cl_command_queue q1 = p_clCreateCommandQueueWithProperties(ctx, dev, props, &err);
    cl_program prog = p_clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    if (!q0 || !q1 || !prog) {
        fprintf(stderr, "cl_demo: setup failed: %d\n", err);
        return 1;
    }
    err = p_clBuildProgram(prog, 1, &dev, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[4096] = "";
        p_clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                                NULL);
        fprintf(stderr, "cl_demo: build failed: %d\n%s\n", err, log);
        return 1;
    }
    /* For the tests: the OPENCL_LAYERS this process hands its children
     * (ocl-icd 2.3.1 cuts it at its first ':' while reading it). */
    if (getenv("CL_DEMO_SHOW_LAYERS")) {
        const char *l = getenv("OPENCL_LAYERS");
        fprintf(stderr, "OPENCL_LAYERS=%s\n", l ? l : "");
    }
    cl_command_queue qs[2] = {q0, q1};
    for (int i = 0; i < 2; i++) {
        cl_command_queue_properties p = 0;
        p_clGetCommandQueueInfo(qs[i], CL_QUEUE_PROPERTIES, sizeof p, &p, NULL);
        printf("queue %d: profiling %s\n", i,
               p & CL_QUEUE_PROFILING_ENABLE ? "on" : "off");
    }
    worker w[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].id = i;
        w[i].iterations = iterations;
        w[i].ctx = ctx;
        w[i].q = qs[i];
        w[i].prog = prog;
        if (pthread_create(&th[i], NULL, work, &w[i]) != 0) {
            fprintf(stderr, "cl_demo: pthread_create failed\n");
            return 1;
        }
    }
    int failed = 0;
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        failed |= w[i].failed;
        printf("worker %d: %d iterations, checksum %.1f\n", i, iterations,
               w[i].checksum);
    }
    /* w[1].event_refs is not printed: pocl's own references to an event
     * come and go with its worker threads, so the count varies run to run. */
    p_clReleaseProgram(prog);
    p_clReleaseCommandQueue(q0);
    p_clReleaseCommandQueue(q1);
    p_clReleaseContext(ctx);
    return failed ? 1 : 0;
}
