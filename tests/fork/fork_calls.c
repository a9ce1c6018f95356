/* SPDX-License-Identifier: MIT */
/*
 * libact_fork_calls.so: OpenCL and NVTX calls for the fork tests, made
 * from C (test_fork_plugins.c) or from Python through ctypes
 * (mp_fork.py). Knows nothing of actrace: an "unmodified" library.
 *  - fc_opencl(which, n): n calls of one OpenCL function that needs no
 *    device thread (so they work in a forked child of a process that
 *    initialised pocl): FC_PLATFORM_IDS, FC_PLATFORM_INFO or
 *    FC_DEVICE_IDS. Returns how many succeeded, -1 without a platform.
 *  - fc_nvtx(msg, n): n NVTX push/pop ranges named msg.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <nvtx3/nvToolsExt.h>

#define EXPORT __attribute__((visibility("default")))

enum { FC_PLATFORM_IDS = 0, FC_PLATFORM_INFO = 1, FC_DEVICE_IDS = 2 };

EXPORT int fc_opencl(int which, int n);
EXPORT void fc_nvtx(const char *msg, int n);

int fc_opencl(int which, int n)
{
    cl_platform_id p;
    cl_uint np = 0;
    if (clGetPlatformIDs(1, &p, &np) != CL_SUCCESS || np == 0)
        return -1;
    int ok = 0;
    for (int i = 0; i < n; i++) {
        char name[256];
        cl_device_id d;
        cl_uint nd = 0;
        cl_int r = which == FC_PLATFORM_INFO
                       ? clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name, name, NULL)
                   : which == FC_DEVICE_IDS
                       ? clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, &nd)
                       : clGetPlatformIDs(1, &p, &np);
        ok += r == CL_SUCCESS;
    }
    return ok;
}

void fc_nvtx(const char *msg, int n)
{
    for (int i = 0; i < n; i++) {
        nvtxRangePushA(msg);
        nvtxRangePop();
    }
}
