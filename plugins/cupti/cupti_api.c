/* SPDX-License-Identifier: MIT */
/*
 * dlopen/dlsym of libcupti and libcuda.so.1 for the cupti plugin (see
 * cupti_api.h). Nothing here initialises CUDA: loading the driver library
 * is harmless, cuInit is left to the program.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_api.h"

#define SYM(tbl, lib, field, name)                                             \
    do {                                                                       \
        void *p_ = dlsym((lib), (name));                                       \
        memcpy(&(tbl)->field, &p_, sizeof p_);                                 \
    } while (0)

static void *open_first(const char *const *names, char *why, size_t cap)
{
    why[0] = '\0';
    for (; *names; names++) {
        if (!**names)
            continue;
        void *h = dlopen(*names, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
        if (!why[0]) {
            const char *e = dlerror();
            snprintf(why, cap, "%s", e ? e : *names);
        }
    }
    return NULL;
}

int cu_cupti_load(cu_cupti *api, char *why, size_t cap)
{
    memset(api, 0, sizeof *api);
    const char *env = getenv("ACTRACE_CUPTI_LIBRARY");
    const char *names[] = {
        env && *env ? env : "libcupti.so.13",
        env && *env ? "" : "libcupti.so",
#ifdef ACT_CUPTI_LIBDIR
        env && *env ? "" : ACT_CUPTI_LIBDIR "/libcupti.so",
#endif
        NULL};
    api->lib = open_first(names, why, cap);
    if (!api->lib)
        return -1;
    void *l = api->lib;
    SYM(api, l, GetResultString, "cuptiGetResultString");
    SYM(api, l, GetCallbackName, "cuptiGetCallbackName");
    SYM(api, l, Subscribe, "cuptiSubscribe");
    SYM(api, l, Unsubscribe, "cuptiUnsubscribe");
    SYM(api, l, EnableDomain, "cuptiEnableDomain");
    SYM(api, l, EnableCallback, "cuptiEnableCallback");
    SYM(api, l, ActivityEnable, "cuptiActivityEnable");
    SYM(api, l, ActivityDisable, "cuptiActivityDisable");
    SYM(api, l, ActivityGetNextRecord, "cuptiActivityGetNextRecord");
    SYM(api, l, ActivityGetNumDroppedRecords,
        "cuptiActivityGetNumDroppedRecords");
    SYM(api, l, ActivityRegisterCallbacks, "cuptiActivityRegisterCallbacks");
    SYM(api, l, ActivityRegisterTimestampCallback,
        "cuptiActivityRegisterTimestampCallback");
    SYM(api, l, ActivityFlushAll, "cuptiActivityFlushAll");
    SYM(api, l, ActivityPushExternalCorrelationId,
        "cuptiActivityPushExternalCorrelationId");
    SYM(api, l, ActivityPopExternalCorrelationId,
        "cuptiActivityPopExternalCorrelationId");
    SYM(api, l, SetThreadIdType, "cuptiSetThreadIdType");
    SYM(api, l, ProfilerHostInitialize, "cuptiProfilerHostInitialize");
    SYM(api, l, ProfilerHostDeinitialize, "cuptiProfilerHostDeinitialize");
    SYM(api, l, ProfilerHostGetSupportedChips,
        "cuptiProfilerHostGetSupportedChips");
    SYM(api, l, ProfilerHostGetBaseMetrics, "cuptiProfilerHostGetBaseMetrics");
    SYM(api, l, ProfilerHostGetMetricProperties,
        "cuptiProfilerHostGetMetricProperties");
    SYM(api, l, ProfilerHostConfigAddMetrics,
        "cuptiProfilerHostConfigAddMetrics");
    SYM(api, l, ProfilerHostGetConfigImageSize,
        "cuptiProfilerHostGetConfigImageSize");
    SYM(api, l, ProfilerHostGetConfigImage, "cuptiProfilerHostGetConfigImage");
    SYM(api, l, ProfilerHostGetNumOfPasses, "cuptiProfilerHostGetNumOfPasses");
    SYM(api, l, ProfilerHostEvaluateToGpuValues,
        "cuptiProfilerHostEvaluateToGpuValues");
    SYM(api, l, ProfilerInitialize, "cuptiProfilerInitialize");
    SYM(api, l, ProfilerDeInitialize, "cuptiProfilerDeInitialize");
    SYM(api, l, DeviceGetChipName, "cuptiDeviceGetChipName");
    SYM(api, l, PmSamplingEnable, "cuptiPmSamplingEnable");
    SYM(api, l, PmSamplingDisable, "cuptiPmSamplingDisable");
    SYM(api, l, PmSamplingSetConfig, "cuptiPmSamplingSetConfig");
    SYM(api, l, PmSamplingStart, "cuptiPmSamplingStart");
    SYM(api, l, PmSamplingStop, "cuptiPmSamplingStop");
    SYM(api, l, PmSamplingDecodeData, "cuptiPmSamplingDecodeData");
    SYM(api, l, PmSamplingGetCounterAvailability,
        "cuptiPmSamplingGetCounterAvailability");
    SYM(api, l, PmSamplingGetCounterDataSize,
        "cuptiPmSamplingGetCounterDataSize");
    SYM(api, l, PmSamplingCounterDataImageInitialize,
        "cuptiPmSamplingCounterDataImageInitialize");
    SYM(api, l, PmSamplingGetCounterDataInfo,
        "cuptiPmSamplingGetCounterDataInfo");
    SYM(api, l, PmSamplingCounterDataGetSampleInfo,
        "cuptiPmSamplingCounterDataGetSampleInfo");
    if (!api->ActivityGetNextRecord || !api->Subscribe ||
        !api->ActivityEnable || !api->ActivityRegisterCallbacks) {
        snprintf(why, cap, "libcupti lacks the activity API");
        cu_cupti_unload(api);
        return -1;
    }
    return 0;
}

void cu_cupti_unload(cu_cupti *api)
{
    /* libcupti is never dlclose'd: it keeps threads and atexit handlers
     * that must outlive the plugin. */
    memset(api, 0, sizeof *api);
}

int cu_driver_load(cu_driver *drv, char *why, size_t cap)
{
    memset(drv, 0, sizeof *drv);
    const char *env = getenv("ACTRACE_CUDA_DRIVER");
    const char *names[] = {env && *env ? env : "libcuda.so.1", NULL};
    drv->lib = open_first(names, why, cap);
    if (!drv->lib)
        return -1;
    void *l = drv->lib;
    SYM(drv, l, DriverGetVersion, "cuDriverGetVersion");
    SYM(drv, l, DeviceGetCount, "cuDeviceGetCount");
    SYM(drv, l, DeviceGet, "cuDeviceGet");
    SYM(drv, l, DeviceGetName, "cuDeviceGetName");
    SYM(drv, l, DeviceGetAttribute, "cuDeviceGetAttribute");
    SYM(drv, l, DeviceTotalMem, "cuDeviceTotalMem_v2");
    SYM(drv, l, DevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState");
    SYM(drv, l, DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SYM(drv, l, DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    SYM(drv, l, CtxSetCurrent, "cuCtxSetCurrent");
    if (!drv->DriverGetVersion || !drv->DeviceGetCount || !drv->DeviceGet) {
        snprintf(why, cap, "libcuda.so.1 lacks cuDeviceGetCount");
        cu_driver_unload(drv);
        return -1;
    }
    return 0;
}

void cu_driver_unload(cu_driver *drv)
{
    memset(drv, 0, sizeof *drv);
}

const char *cu_result_str(const cu_cupti *api, CUptiResult rc)
{
    const char *s = NULL;
    if (api && api->GetResultString &&
        api->GetResultString(rc, &s) == CUPTI_SUCCESS && s)
        return s;
    static _Thread_local char buf[32];
    snprintf(buf, sizeof buf, "CUPTI error %d", (int)rc);
    return buf;
}
