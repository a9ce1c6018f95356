/* SPDX-License-Identifier: MIT */
/*
 * The CUPTI and CUDA driver entry points the cupti plugin uses, resolved
 * at run time with dlopen/dlsym so cupti.so loads on machines without
 * CUDA. One table per library; a NULL entry means the symbol is missing
 * (an older CUPTI), and the code that needs it declines or skips.
 */
#ifndef ACT_CUPTI_API_H
#define ACT_CUPTI_API_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <cupti_profiler_host.h>

typedef struct cu_cupti {
    void *lib;
    CUptiResult (*GetResultString)(CUptiResult, const char **);
    CUptiResult (*GetCallbackName)(CUpti_CallbackDomain, uint32_t,
                                   const char **);
    CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc,
                             void *);
    CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*EnableDomain)(uint32_t, CUpti_SubscriberHandle,
                                CUpti_CallbackDomain);
    CUptiResult (*EnableCallback)(uint32_t, CUpti_SubscriberHandle,
                                  CUpti_CallbackDomain, CUpti_CallbackId);
    CUptiResult (*ActivityEnable)(CUpti_ActivityKind);
    CUptiResult (*ActivityDisable)(CUpti_ActivityKind);
    CUptiResult (*ActivityGetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t *);
    CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                             CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*ActivityRegisterTimestampCallback)(
        CUpti_TimestampCallbackFunc);
    CUptiResult (*ActivityFlushAll)(uint32_t);
    CUptiResult (*ActivityPushExternalCorrelationId)(
        CUpti_ExternalCorrelationKind, uint64_t);
    CUptiResult (*ActivityPopExternalCorrelationId)(
        CUpti_ExternalCorrelationKind, uint64_t *);
    CUptiResult (*SetThreadIdType)(CUpti_ActivityThreadIdType);
    /* Profiler host (works without a GPU, given a chip name). */
    CUptiResult (*ProfilerHostInitialize)(CUpti_Profiler_Host_Initialize_Params *);
    CUptiResult (*ProfilerHostDeinitialize)(
        CUpti_Profiler_Host_Deinitialize_Params *);
    CUptiResult (*ProfilerHostGetSupportedChips)(
        CUpti_Profiler_Host_GetSupportedChips_Params *);
    CUptiResult (*ProfilerHostGetBaseMetrics)(
        CUpti_Profiler_Host_GetBaseMetrics_Params *);
    CUptiResult (*ProfilerHostGetMetricProperties)(
        CUpti_Profiler_Host_GetMetricProperties_Params *);
    CUptiResult (*ProfilerHostConfigAddMetrics)(
        CUpti_Profiler_Host_ConfigAddMetrics_Params *);
    CUptiResult (*ProfilerHostGetConfigImageSize)(
        CUpti_Profiler_Host_GetConfigImageSize_Params *);
    CUptiResult (*ProfilerHostGetConfigImage)(
        CUpti_Profiler_Host_GetConfigImage_Params *);
    CUptiResult (*ProfilerHostGetNumOfPasses)(
        CUpti_Profiler_Host_GetNumOfPasses_Params *);
    CUptiResult (*ProfilerHostEvaluateToGpuValues)(
        CUpti_Profiler_Host_EvaluateToGpuValues_Params *);
    /* Profiler target and PM sampling (need a GPU). */
    CUptiResult (*ProfilerInitialize)(CUpti_Profiler_Initialize_Params *);
    CUptiResult (*ProfilerDeInitialize)(CUpti_Profiler_DeInitialize_Params *);
    CUptiResult (*DeviceGetChipName)(CUpti_Device_GetChipName_Params *);
    CUptiResult (*PmSamplingEnable)(CUpti_PmSampling_Enable_Params *);
    CUptiResult (*PmSamplingDisable)(CUpti_PmSampling_Disable_Params *);
    CUptiResult (*PmSamplingSetConfig)(CUpti_PmSampling_SetConfig_Params *);
    CUptiResult (*PmSamplingStart)(CUpti_PmSampling_Start_Params *);
    CUptiResult (*PmSamplingStop)(CUpti_PmSampling_Stop_Params *);
    CUptiResult (*PmSamplingDecodeData)(CUpti_PmSampling_DecodeData_Params *);
    CUptiResult (*PmSamplingGetCounterAvailability)(
        CUpti_PmSampling_GetCounterAvailability_Params *);
    CUptiResult (*PmSamplingGetCounterDataSize)(
        CUpti_PmSampling_GetCounterDataSize_Params *);
    CUptiResult (*PmSamplingCounterDataImageInitialize)(
        CUpti_PmSampling_CounterDataImage_Initialize_Params *);
    CUptiResult (*PmSamplingGetCounterDataInfo)(
        CUpti_PmSampling_GetCounterDataInfo_Params *);
    CUptiResult (*PmSamplingCounterDataGetSampleInfo)(
        CUpti_PmSampling_CounterData_GetSampleInfo_Params *);
} cu_cupti;

typedef struct cu_driver {
    void *lib;
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DevicePrimaryCtxGetState)(CUdevice, unsigned int *, int *);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
} cu_driver;

/**
 * Loads libcupti: $ACTRACE_CUPTI_LIBRARY if set, else libcupti.so.13 /
 * libcupti.so from the loader's path, else the toolkit's copy found at
 * build time. Returns 0, or -1 with a reason in @p why.
 */
int cu_cupti_load(cu_cupti *api, char *why, size_t cap);
void cu_cupti_unload(cu_cupti *api);

/** Loads libcuda.so.1 (never calls cuInit). 0, or -1 with a reason. */
int cu_driver_load(cu_driver *drv, char *why, size_t cap);
void cu_driver_unload(cu_driver *drv);

/** CUPTI's text for @p rc ("CUPTI_ERROR_UNKNOWN"), or a number. */
const char *cu_result_str(const cu_cupti *api, CUptiResult rc);

#endif
