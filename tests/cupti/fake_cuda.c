/* SPDX-License-Identifier: MIT */
/*
 * libfakecuda.so: a stand-in for libcuda.so.1 for PluginCuptiFake, with
 * one initialised device ("Fake GPU", 4 SMs, compute capability 9.0).
 * Test-only; never installed.
 */
#include <stdio.h>

#include <cuda.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetCount(int *n)
{
    *n = 1;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGet(CUdevice *d, int ord)
{
    if (ord != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    (void)d;
    snprintf(name, (size_t)len, "Fake GPU");
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 4; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}
EXPORT CUresult cuDeviceTotalMem_v2(size_t *m, CUdevice d)
{
    (void)d;
    *m = (size_t)1 << 30;
    return CUDA_SUCCESS;
}
