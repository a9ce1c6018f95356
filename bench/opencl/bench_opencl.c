/* SPDX-License-Identifier: MIT */
/*
 * What the opencl backend adds to an OpenCL program, on the OpenCL runtime
 * of this machine (pocl here): per enqueue and per non-enqueue call,
 * traced minus untraced, in one run of this program.
 *
 * The workload (this program with "work") creates one in-order queue and
 * times, best of ROUNDS:
 *  - enqueue: BATCH clEnqueueNDRangeKernel of a one-work-item kernel, then
 *    clFinish (the layer's harvest of the batch happens there, so it is
 *    counted), per enqueue;
 *  - write: the same with 64-byte non-blocking clEnqueueWriteBuffer;
 *  - call: clSetKernelArg, per call (a call that enqueues nothing).
 * The driver (no argument) runs the workload plainly and under
 * `actrace record --plugin opencl`, alternating, REPEAT times each, keeps
 * each figure's best, and prints one JSON line:
 *   opencl_enqueue_ns_plain / _traced / opencl_enqueue_overhead_ns, the
 *   same for write and call.
 * Exit status 0; 77 (with a message) when there is no OpenCL device.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#define BATCH 2000
#define ROUNDS 5
#define CALLS 200000
#define REPEAT 3

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int work(void)
{
    cl_platform_id p;
    cl_device_id d;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &p, &n) != CL_SUCCESS || !n ||
        clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, &n) != CL_SUCCESS || !n)
        return 77;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, NULL, &err);
    const char *src = "__kernel void k(__global int *a) { a[0] += 1; }";
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (!q || !prog || clBuildProgram(prog, 1, &d, "", NULL, NULL) != CL_SUCCESS)
        return 1;
    cl_kernel k = clCreateKernel(prog, "k", &err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    char host[64] = {0};
    clSetKernelArg(k, 0, sizeof buf, &buf);
    size_t one = 1;
    double best_enq = 1e9, best_wr = 1e9, best_call = 1e9;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_s();
        for (int i = 0; i < BATCH; i++)
            clEnqueueNDRangeKernel(q, k, 1, NULL, &one, NULL, 0, NULL, NULL);
        clFinish(q);
        double t1 = now_s();
        for (int i = 0; i < BATCH; i++)
            clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, sizeof host, host, 0, NULL,
                                 NULL);
        clFinish(q);
        double t2 = now_s();
        for (int i = 0; i < CALLS; i++)
            clSetKernelArg(k, 0, sizeof buf, &buf);
        double t3 = now_s();
        if ((t1 - t0) / BATCH < best_enq)
            best_enq = (t1 - t0) / BATCH;
        if ((t2 - t1) / BATCH < best_wr)
            best_wr = (t2 - t1) / BATCH;
        if ((t3 - t2) / CALLS < best_call)
            best_call = (t3 - t2) / CALLS;
    }
    printf("%.1f %.1f %.2f\n", best_enq * 1e9, best_wr * 1e9, best_call * 1e9);
    clReleaseMemObject(buf);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}

/* Runs @p cmd and reads its three figures. Returns the exit status. */
static int measure(const char *cmd, double v[3])
{
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    int got = fscanf(f, "%lf %lf %lf", &v[0], &v[1], &v[2]);
    int st = pclose(f);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return rc == 0 && got != 3 ? -1 : rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "work") == 0)
        return work();
    char plain[4096], traced[4096];
    snprintf(plain, sizeof plain, "'%s' work", argv[0]);
    snprintf(traced, sizeof traced,
             "'%s/bin/actrace' record --force --no-default-plugins --plugin opencl "
             "-o %s/bench_opencl_trace.json -- '%s' work 2>/dev/null",
             ACT_BINARY_DIR, ACT_BINARY_DIR, argv[0]);
    double bp[3] = {1e18, 1e18, 1e18}, bt[3] = {1e18, 1e18, 1e18};
    for (int r = 0; r < REPEAT; r++) {
        double v[3];
        int rc = measure(plain, v);
        if (rc == 77) {
            fprintf(stderr, "bench_opencl: no OpenCL device; skipped\n");
            return 77;
        }
        if (rc != 0) {
            fprintf(stderr, "bench_opencl: workload failed (%d)\n", rc);
            return 1;
        }
        for (int i = 0; i < 3; i++)
            bp[i] = v[i] < bp[i] ? v[i] : bp[i];
        if (measure(traced, v) != 0) {
            fprintf(stderr, "bench_opencl: traced workload failed\n");
            return 1;
        }
        for (int i = 0; i < 3; i++)
            bt[i] = v[i] < bt[i] ? v[i] : bt[i];
    }
    printf("{\"opencl_enqueue_ns_plain\":%.1f,\"opencl_enqueue_ns_traced\":%.1f,"
           "\"opencl_enqueue_overhead_ns\":%.1f,"
           "\"opencl_write_ns_plain\":%.1f,\"opencl_write_ns_traced\":%.1f,"
           "\"opencl_write_overhead_ns\":%.1f,"
           "\"opencl_call_ns_plain\":%.2f,\"opencl_call_ns_traced\":%.2f,"
           "\"opencl_call_overhead_ns\":%.2f}\n",
           bp[0], bt[0], bt[0] - bp[0], bp[1], bt[1], bt[1] - bp[1], bp[2], bt[2],
           bt[2] - bp[2]);
    return 0;
}
