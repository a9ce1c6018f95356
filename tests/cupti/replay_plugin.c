/* SPDX-License-Identifier: MIT */
/*
 * cupti_replay.so, a test plugin: the cupti plugin's translation and PM
 * sink code fed with a synthetic run of tests/gpu/workload.cu instead of
 * a GPU. At flush it lays out CUDA 13 activity records (runtime calls,
 * copies both ways on two streams, a memset, busy and short kernels, a
 * context sync) across the session's window, walks them with the real
 * cuptiActivityGetNextRecord into cupti_translate.c, and feeds PM samples
 * (SM activity high while the busy kernels run) through cp_pm_drain from
 * a stub source on a GPU clock 5 s ahead. A real session then writes the
 * trace, so the host's validation and the writer see what a GPU run would
 * give them, and tests/gpu/check_trace.py can check it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <actrace/plugin.h>

#include "cupti_api.h"
#include "cupti_pm.h"
#include "cupti_translate.h"

#define SM "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
#define DRAM "dram__bytes_read.sum.per_second"
#define GPU_AHEAD 5000000000ll

typedef struct replay {
    const act_plugin_host *host;
    cu_cupti api;
    cu_driver drv;
    ct_ctx ct;
    cp_pm_sink sink;
    int64_t t0;
    uint8_t *buf;
    size_t used;
    uint32_t corr;
    /* busy kernel windows on the host clock, for the PM stub */
    int64_t busy[3][2];
    int64_t next_sample, t1;
} replay;

static CUresult d_get(CUdevice *d, int ord)
{
    *d = ord;
    return ord == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
static CUresult d_name(char *b, int len, CUdevice d)
{
    (void)d;
    snprintf(b, (size_t)len, "NVIDIA H200 (replay)");
    return CUDA_SUCCESS;
}
static CUresult d_attr(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

static int32_t rp_init(const act_plugin_host *host, void **state, char *reason,
                       uint32_t cap)
{
    replay *r = calloc(1, sizeof *r);
    if (!r)
        return ACT_PLUGIN_ENOMEM;
    char why[256];
    if (cu_cupti_load(&r->api, why, sizeof why) != 0) {
        snprintf(reason, cap, "no libcupti (%s)", why);
        free(r);
        return ACT_PLUGIN_DECLINE;
    }
    r->host = host;
    r->drv.DeviceGet = d_get;
    r->drv.DeviceGetName = d_name;
    r->drv.DeviceGetAttribute = d_attr;
    r->buf = aligned_alloc(8, 1 << 16);
    if (!r->buf) {
        free(r);
        return ACT_PLUGIN_ENOMEM;
    }
    ct_init(&r->ct, host, &r->api, &r->drv);
    const char *metrics[] = {SM, DRAM};
    const char *units[] = {"%", "byte/second"};
    uint32_t dev = ct_device(&r->ct, 0);
    if (dev == UINT32_MAX ||
        cp_pm_sink_init(&r->sink, host, dev, metrics, units, 2) != 0) {
        snprintf(reason, cap, "cannot declare the device or tracks");
        free(r->buf);
        free(r);
        return ACT_PLUGIN_EINVAL;
    }
    r->sink.gpu_to_host_ns = -GPU_AHEAD;
    *state = r;
    return ACT_PLUGIN_OK;
}

static void rp_start(void *state)
{
    replay *r = state;
    r->t0 = r->host->now_ns(r->host->ctx);
}

static void *put(replay *r, size_t size)
{
    void *p = r->buf + r->used;
    memset(p, 0, size);
    r->used += (size + 7) & ~(size_t)7;
    return p;
}

/* A runtime call at @p a..b (host ns) on this thread; its correlation. */
static uint32_t rt(replay *r, uint32_t cbid, int64_t a, int64_t b)
{
    CUpti_ActivityAPI *x = put(r, sizeof *x);
    x->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    x->cbid = cbid;
    x->start = (uint64_t)a;
    x->end = (uint64_t)b;
    x->processId = (uint32_t)getpid();
    x->threadId = (uint32_t)syscall(SYS_gettid);
    x->correlationId = ++r->corr;
    return x->correlationId;
}

static void kernel(replay *r, const char *name, uint32_t stream, int64_t a,
                   int64_t b, uint32_t corr)
{
    CUpti_ActivityKernel10 *k = put(r, sizeof *k);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->start = (uint64_t)a;
    k->end = (uint64_t)b;
    k->streamId = stream;
    k->contextId = 1;
    k->correlationId = corr;
    k->name = name;
    k->gridX = 1056;
    k->gridY = k->gridZ = k->blockY = k->blockZ = 1;
    k->blockX = 256;
    k->registersPerThread = 16;
}

static void copy(replay *r, uint8_t kind, uint32_t stream, int64_t a,
                 int64_t b, uint32_t corr)
{
    CUpti_ActivityMemcpy6 *m = put(r, sizeof *m);
    m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m->copyKind = kind;
    m->srcKind = kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
                     ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED
                     : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m->dstKind = kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
                     ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
                     : CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    m->bytes = 64u << 20;
    m->start = (uint64_t)a;
    m->end = (uint64_t)b;
    m->streamId = stream;
    m->contextId = 1;
    m->correlationId = corr;
}

static int stub_read(void *u, cp_pm_sample *out, int cap, int *overflow)
{
    replay *r = u;
    (void)overflow;
    int n = 0;
    while (n < cap && r->next_sample < r->t1) {
        int64_t t = r->next_sample;
        int on = 0;
        for (int i = 0; i < 3; i++)
            on |= t >= r->busy[i][0] && t <= r->busy[i][1];
        memset(&out[n], 0, sizeof out[n]);
        out[n].start_gpu_ns = (uint64_t)(t + GPU_AHEAD);
        out[n].end_gpu_ns = out[n].start_gpu_ns + 1000000;
        out[n].values[0] = on ? 93.0 : 0.4;
        out[n].values[1] = on ? 1.5e9 : 2e6;
        n++;
        r->next_sample += 1000000; /* 1 ms */
    }
    return n;
}

static void rp_flush(void *state)
{
    replay *r = state;
    int64_t t1 = r->host->now_ns(r->host->ctx);
    int64_t D = t1 - r->t0;
    if (D < 1000000)
        return;
#define AT(f) (r->t0 + (int64_t)((double)D * (f)))
    const uint32_t A = 13, B = 14;
    r->used = 0;
    r->corr = 0;
    CUpti_ActivityContext3 *cx = put(r, sizeof *cx);
    cx->kind = CUPTI_ACTIVITY_KIND_CONTEXT;
    cx->contextId = 1;
    cx->deviceId = 0;
    rt(r, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, AT(0.01), AT(0.02));
    uint32_t c = rt(r, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                    AT(0.200), AT(0.2005));
    copy(r, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, A, AT(0.21), AT(0.23), c);
    c = rt(r, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, AT(0.201),
           AT(0.2015));
    copy(r, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, B, AT(0.21), AT(0.23), c);
    c = rt(r, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, AT(0.202),
           AT(0.2025));
    CUpti_ActivityMemset4 *ms = put(r, sizeof *ms);
    ms->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    ms->bytes = 32u << 20;
    ms->start = (uint64_t)AT(0.235);
    ms->end = (uint64_t)AT(0.236);
    ms->streamId = B;
    ms->contextId = 1;
    ms->correlationId = c;
    ms->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    for (int i = 0; i < 3; i++) {
        CUpti_ActivityExternalCorrelation *x = put(r, sizeof *x);
        x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
        x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
        x->externalId = 4242;
        x->correlationId = r->corr + 1;
        c = rt(r, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
               AT(0.203 + i * 0.0005), AT(0.2033 + i * 0.0005));
        r->busy[i][0] = AT(0.24 + i * 0.15);
        /* Back to back: the writer keeps ts + dur below the next ts. */
        r->busy[i][1] = AT(0.24 + (i + 1) * 0.15);
        kernel(r, "_Z11busy_kernelPfiy", A, r->busy[i][0], r->busy[i][1], c);
    }
    for (int i = 0; i < 4; i++) {
        c = rt(r, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
               AT(0.205 + i * 0.0004), AT(0.2053 + i * 0.0004));
        kernel(r, "_Z12scale_kernelPfif", B, AT(0.237 + i * 0.001),
               AT(0.2378 + i * 0.001), c);
    }
    c = rt(r, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, AT(0.207),
           AT(0.2072));
    copy(r, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, A, AT(0.70), AT(0.71), c);
    c = rt(r, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, AT(0.2075),
           AT(0.2077));
    copy(r, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, B, AT(0.711), AT(0.72), c);
    c = rt(r, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
           AT(0.208), AT(0.73));
    CUpti_ActivitySynchronization2 *sy = put(r, sizeof *sy);
    sy->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    sy->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
    sy->start = (uint64_t)AT(0.208);
    sy->end = (uint64_t)AT(0.73);
    sy->contextId = 1;
    sy->streamId = UINT32_MAX;
    sy->correlationId = c;
    rt(r, CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, AT(0.95), AT(0.96));
    ct_buffer(&r->ct, r->buf, r->used);
    /* PM samples every 1 ms over the window. */
    r->next_sample = AT(0.005);
    r->t1 = AT(0.99);
    cp_pm_source src = {stub_read, r};
    while (cp_pm_drain(&r->sink, &src) > 0)
        ;
#undef AT
}

static void rp_finalize(void *state)
{
    replay *r = state;
    ct_fini(&r->ct);
    free(r->buf);
    free(r);
}

static const act_plugin rp_table = {
    .struct_size = sizeof(act_plugin),
    .abi_major = ACT_PLUGIN_ABI_MAJOR,
    .abi_minor = ACT_PLUGIN_ABI_MINOR,
    .name = "cupti_replay",
    .backend = "cuda",
    .version = "test",
    .init = rp_init,
    .start = rp_start,
    .flush = rp_flush,
    .finalize = rp_finalize,
};

ACT_PLUGIN_EXPORT const act_plugin *
act_plugin_entry(const act_plugin_host *host, uint32_t major, uint32_t minor)
{
    (void)host;
    (void)minor;
    return major == ACT_PLUGIN_ABI_MAJOR ? &rp_table : NULL;
}
