/* SPDX-License-Identifier: MIT */
/*
 * The cupti plugin's translation without a GPU: hand-built CUDA 13
 * activity records of every kind the plugin maps (Kernel10, Memcpy6,
 * MemcpyPtoP4, Memset4, API for runtime and driver, Synchronization2,
 * CudaEvent2, Overhead3, plus ExternalCorrelation and Context3) are laid
 * out in a buffer and walked by the real cuptiActivityGetNextRecord
 * (libcupti is dlopen'ed; it needs no driver) into cupti_translate.c,
 * whose output a fake host table records and this test checks: kinds,
 * types, devices, streams and their names, times, correlation and
 * external ids, names (demangled kernels, API names without _vNNNN),
 * args. Also: an unknown kind is skipped, batches larger than one
 * emit() call are all delivered, device properties come from the driver
 * table when there is one. Skipped (77) without libcupti.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "cupti_api.h"
#include "cupti_translate.h"

/* ---- fake host ----------------------------------------------------------- */

#define MAXR 4096
typedef struct got_arg {
    char key[64];
    int32_t kind;
    uint64_t u;
    int64_t i;
    double d;
    char s[128];
} got_arg;

typedef struct got_rec {
    act_plugin_record r; /* name/args pointers cleared */
    char name[256];
    got_arg args[CT_ARGS];
} got_rec;

static got_rec *got;
static int ngot, nemit_calls;
static char dev_names[8][128];
static char dev_props[8][1024];
static int ndev;
static char streams[64][64];
static uint32_t stream_dev[64];
static uint64_t stream_id[64];
static int nstreams;

static void f_log(act_plugin_ctx *c, int32_t l, const char *m)
{
    (void)c;
    (void)l;
    fprintf(stderr, "log: %s\n", m);
}

static int32_t f_add_device(act_plugin_ctx *c, const act_plugin_device *d,
                            uint32_t *out)
{
    (void)c;
    if (ndev >= 8)
        return ACT_PLUGIN_ELIMIT;
    snprintf(dev_names[ndev], sizeof dev_names[0], "%s/%s", d->name,
             d->vendor ? d->vendor : "");
    size_t len = 0;
    for (uint32_t i = 0; i < d->nprops; i++) {
        const act_plugin_arg *a = &d->props[i];
        int w = a->kind == ACT_PLUGIN_ARG_INT
                    ? snprintf(dev_props[ndev] + len, 1024 - len, "%.*s=%lld;",
                               (int)a->key_len, a->key, (long long)a->v.i)
                    : snprintf(dev_props[ndev] + len, 1024 - len,
                               "%.*s=%llu;", (int)a->key_len, a->key,
                               (unsigned long long)a->v.u);
        len += (size_t)w;
    }
    *out = (uint32_t)ndev++;
    return 0;
}

static int32_t f_name_stream(act_plugin_ctx *c, uint32_t dev, uint64_t s,
                             const char *n, uint32_t len)
{
    (void)c;
    if (nstreams < 64) {
        snprintf(streams[nstreams], 64, "%.*s", (int)len, n);
        stream_dev[nstreams] = dev;
        stream_id[nstreams] = s;
        nstreams++;
    }
    return 0;
}

static int32_t f_emit(act_plugin_ctx *c, const act_plugin_record *r,
                      uint32_t n)
{
    (void)c;
    nemit_calls++;
    for (uint32_t k = 0; k < n && ngot < MAXR; k++) {
        got_rec *g = &got[ngot++];
        memset(g, 0, sizeof *g);
        g->r = r[k];
        snprintf(g->name, sizeof g->name, "%.*s", (int)r[k].name_len,
                 r[k].name);
        for (uint32_t a = 0; a < r[k].nargs && a < CT_ARGS; a++) {
            const act_plugin_arg *x = &r[k].args[a];
            got_arg *y = &g->args[a];
            snprintf(y->key, sizeof y->key, "%.*s", (int)x->key_len, x->key);
            y->kind = x->kind;
            y->u = x->v.u;
            y->i = x->v.i;
            y->d = x->v.d;
            if (x->kind == ACT_PLUGIN_ARG_STRING)
                snprintf(y->s, sizeof y->s, "%.*s", (int)x->v.s.len,
                         x->v.s.ptr);
        }
        g->r.name = NULL;
        g->r.args = NULL;
    }
    return (int32_t)n;
}

static act_plugin_host fake_host(void)
{
    act_plugin_host h;
    memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    h.abi_major = ACT_PLUGIN_ABI_MAJOR;
    h.abi_minor = ACT_PLUGIN_ABI_MINOR;
    h.log = f_log;
    h.add_device = f_add_device;
    h.name_stream = f_name_stream;
    h.emit = f_emit;
    return h;
}

static const got_arg *arg(const got_rec *g, const char *key)
{
    for (uint32_t a = 0; a < g->r.nargs && a < CT_ARGS; a++)
        if (!strcmp(g->args[a].key, key))
            return &g->args[a];
    return NULL;
}

static const got_rec *find(const char *name)
{
    for (int i = 0; i < ngot; i++)
        if (!strcmp(got[i].name, name))
            return &got[i];
    return NULL;
}

static int find_stream(uint32_t dev, uint64_t s, const char *name)
{
    for (int i = 0; i < nstreams; i++)
        if (stream_dev[i] == dev && stream_id[i] == s &&
            !strcmp(streams[i], name))
            return 1;
    return 0;
}

/* ---- fake driver: two devices --------------------------------------------- */

static CUresult d_get(CUdevice *d, int ord)
{
    if (ord < 0 || ord > 1)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = ord;
    return CUDA_SUCCESS;
}
static CUresult d_name(char *buf, int len, CUdevice d)
{
    snprintf(buf, (size_t)len, "NVIDIA H200 #%d", (int)d);
    return CUDA_SUCCESS;
}
static CUresult d_attr(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
static CUresult d_mem(size_t *m, CUdevice d)
{
    (void)d;
    *m = (size_t)141 << 30;
    return CUDA_SUCCESS;
}

/* ---- building the buffer ------------------------------------------------- */

static uint8_t *buf;
static size_t used;

static void *put(size_t size)
{
    void *p = buf + used;
    memset(p, 0, size);
    used += (size + 7) & ~(size_t)7;
    return p;
}

#define T0 1000000000ull

int main(void)
{
    cu_cupti api;
    char why[512];
    if (cu_cupti_load(&api, why, sizeof why) != 0) {
        printf("skipped: no libcupti (%s)\n", why);
        return 77;
    }
    got = calloc(MAXR, sizeof *got);
    buf = aligned_alloc(8, 1 << 20);
    CHECK_FATAL(got && buf);

    act_plugin_host host = fake_host();
    cu_driver drv;
    memset(&drv, 0, sizeof drv);
    drv.DeviceGet = d_get;
    drv.DeviceGetName = d_name;
    drv.DeviceGetAttribute = d_attr;
    drv.DeviceTotalMem = d_mem;
    ct_ctx *ct = calloc(1, sizeof *ct);
    CHECK_FATAL(ct != NULL);
    ct_init(ct, &host, &api, &drv);

    /* Context 5 is on device 1 (for the sync record). */
    CUpti_ActivityContext3 *cx = put(sizeof *cx);
    cx->kind = CUPTI_ACTIVITY_KIND_CONTEXT;
    cx->contextId = 5;
    cx->deviceId = 1;
    /* The launch: external id 777 pushed around cudaLaunchKernel. */
    CUpti_ActivityExternalCorrelation *x = put(sizeof *x);
    x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    x->externalId = 777;
    x->correlationId = 41;
    CUpti_ActivityAPI *rt = put(sizeof *rt);
    rt->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    rt->cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    rt->start = T0;
    rt->end = T0 + 5000;
    rt->processId = 100;
    rt->threadId = 4242;
    rt->correlationId = 41;
    CUpti_ActivityAPI *dr = put(sizeof *dr);
    dr->kind = CUPTI_ACTIVITY_KIND_DRIVER;
    dr->cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    dr->start = T0 + 1000;
    dr->end = T0 + 4000;
    dr->threadId = 4242;
    dr->correlationId = 42;
    dr->returnValue = 0;
    CUpti_ActivityKernel10 *k = put(sizeof *k);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->start = T0 + 10000;
    k->end = T0 + 30000;
    k->deviceId = 0;
    k->contextId = 1;
    k->streamId = 7;
    k->gridX = 128;
    k->gridY = 2;
    k->gridZ = 1;
    k->blockX = 256;
    k->blockY = 1;
    k->blockZ = 1;
    k->registersPerThread = 32;
    k->staticSharedMemory = 1024;
    k->dynamicSharedMemory = 2048;
    k->correlationId = 41;
    k->name = "_Z6vecAddPKfS0_Pfi";
    CUpti_ActivityMemcpy6 *mc = put(sizeof *mc);
    mc->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    mc->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    mc->srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    mc->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    mc->bytes = 1 << 20;
    mc->start = T0 + 40000;
    mc->end = T0 + 50000;
    mc->deviceId = 0;
    mc->streamId = 8;
    mc->correlationId = 43;
    CUpti_ActivityMemcpyPtoP4 *pp = put(sizeof *pp);
    pp->kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    pp->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    pp->srcKind = pp->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    pp->bytes = 4096;
    pp->start = T0 + 60000;
    pp->end = T0 + 61000;
    pp->deviceId = 1;
    pp->streamId = 9;
    pp->srcDeviceId = 0;
    pp->dstDeviceId = 1;
    pp->correlationId = 44;
    CUpti_ActivityMemset4 *ms = put(sizeof *ms);
    ms->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    ms->value = 0xab;
    ms->bytes = 512;
    ms->start = T0 + 70000;
    ms->end = T0 + 70500;
    ms->deviceId = 0;
    ms->streamId = 7;
    ms->correlationId = 45;
    ms->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    CUpti_ActivitySynchronization2 *sy = put(sizeof *sy);
    sy->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    sy->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
    sy->start = T0 + 80000;
    sy->end = T0 + 90000;
    sy->correlationId = 46;
    sy->contextId = 5;
    sy->streamId = UINT32_MAX;
    CUpti_ActivityCudaEvent2 *ev = put(sizeof *ev);
    ev->kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
    ev->correlationId = 47;
    ev->streamId = 7;
    ev->eventId = 3;
    ev->deviceId = 0;
    ev->deviceTimestamp = T0 + 95000;
    CUpti_ActivityOverhead3 *ov = put(sizeof *ov);
    ov->kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    ov->overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    ov->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    ov->objectId.pt.processId = 100;
    ov->objectId.pt.threadId = 4243;
    ov->start = T0 + 96000;
    ov->end = T0 + 97000;
    /* A kind the plugin does not translate: skipped, nothing emitted. */
    CUpti_ActivityName *nm = put(sizeof *nm);
    nm->kind = CUPTI_ACTIVITY_KIND_NAME;
    nm->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    nm->name = "worker";

    ct_buffer(ct, buf, used);

    CHECK_EQ_INT(ngot, 9);
    /* Devices: 0 then 1, described by the (fake) driver. */
    CHECK_EQ_INT(ndev, 2);
    CHECK_EQ_STR(dev_names[0], "NVIDIA H200 #0/NVIDIA");
    CHECK_EQ_STR(dev_names[1], "NVIDIA H200 #1/NVIDIA");
    CHECK(strstr(dev_props[0], "numSms=132;") != NULL);
    CHECK(strstr(dev_props[0], "computeMajor=9;") != NULL);
    CHECK(strstr(dev_props[0], "totalGlobalMem=151397597184;") != NULL);
    CHECK(strstr(dev_props[1], "cudaDeviceOrdinal=1;") != NULL);

    const got_rec *g = find("cudaLaunchKernel");
    if (CHECK(g != NULL)) {
        CHECK_EQ_INT(g->r.kind, ACT_PLUGIN_RECORD_HOST_SPAN);
        CHECK_EQ_INT(g->r.type, ACT_RUNTIME);
        CHECK_EQ_U64(g->r.device, ACT_PLUGIN_HOST_DEVICE);
        CHECK_EQ_U64(g->r.stream, 4242);
        CHECK_EQ_INT(g->r.start_ns, (int64_t)T0);
        CHECK_EQ_INT(g->r.end_ns, (int64_t)T0 + 5000);
        CHECK_EQ_U64(g->r.correlation, 41);
        CHECK_EQ_U64(g->r.external_id, 777);
        CHECK(arg(g, "cbid") && arg(g, "cbid")->u == 211);
        CHECK(arg(g, "return") == NULL);
    }
    g = find("cuLaunchKernel");
    if (CHECK(g != NULL)) {
        CHECK_EQ_INT(g->r.type, ACT_DRIVER);
        CHECK_EQ_U64(g->r.correlation, 42);
        CHECK_EQ_U64(g->r.external_id, 0);
    }
    g = find("vecAdd(float const*, float const*, float*, int)");
    if (CHECK(g != NULL)) {
        CHECK_EQ_INT(g->r.kind, ACT_PLUGIN_RECORD_DEVICE_SPAN);
        CHECK_EQ_INT(g->r.type, ACT_CONCURRENT_KERNEL);
        CHECK_EQ_U64(g->r.device, 0);
        CHECK_EQ_U64(g->r.stream, 7);
        CHECK_EQ_INT(g->r.start_ns, (int64_t)T0 + 10000);
        CHECK_EQ_INT(g->r.end_ns, (int64_t)T0 + 30000);
        CHECK_EQ_U64(g->r.correlation, 41);
        CHECK_EQ_U64(g->r.external_id, 777);
        CHECK(arg(g, "grid") && !strcmp(arg(g, "grid")->s, "[128, 2, 1]"));
        CHECK(arg(g, "block") && !strcmp(arg(g, "block")->s, "[256, 1, 1]"));
        CHECK(arg(g, "registers per thread") &&
              arg(g, "registers per thread")->u == 32);
        CHECK(arg(g, "shared memory") && arg(g, "shared memory")->i == 3072);
        CHECK(arg(g, "blocks") && arg(g, "blocks")->i == 256);
    }
    g = find("Memcpy HtoD (Pinned -> Device)");
    if (CHECK(g != NULL)) {
        CHECK_EQ_INT(g->r.type, ACT_GPU_MEMCPY);
        CHECK_EQ_U64(g->r.stream, 8);
        CHECK_EQ_U64(g->r.correlation, 43);
        CHECK(arg(g, "bytes") && arg(g, "bytes")->u == 1 << 20);
        CHECK(arg(g, "kind") && !strcmp(arg(g, "kind")->s, "HtoD"));
        CHECK(arg(g, "src kind") && !strcmp(arg(g, "src kind")->s, "Pinned"));
        CHECK(arg(g, "dst kind") && !strcmp(arg(g, "dst kind")->s, "Device"));
        /* 1 MiB in 10 us = 104.8576 GB/s */
        CHECK(arg(g, "memory bandwidth (GB/s)") &&
              arg(g, "memory bandwidth (GB/s)")->d > 104.85 &&
              arg(g, "memory bandwidth (GB/s)")->d < 104.86);
    }
    g = find("Memcpy PtoP (Device -> Device)");
    if (CHECK(g != NULL)) {
        CHECK_EQ_INT(g->r.type, ACT_GPU_MEMCPY);
        CHECK_EQ_U64(g->r.device, 1);
        CHECK(arg(g, "src device") && arg(g, "src device")->u == 0);
        CHECK(arg(g, "dst device") && arg(g, "dst device")->u == 1);
    }
    g = find("Memset (Device)");
    if (CHECK(g != NULL)) {
        CHECK_EQ_INT(g->r.type, ACT_GPU_MEMSET);
        CHECK(arg(g, "bytes") && arg(g, "bytes")->u == 512);
        CHECK(arg(g, "value") && arg(g, "value")->u == 0xab);
    }
    g = find("Context Sync");
    if (CHECK(g != NULL)) {
        CHECK_EQ_INT(g->r.type, ACT_CUDA_SYNC);
        CHECK_EQ_U64(g->r.device, 1); /* context 5 -> CUDA device 1 */
        CHECK_EQ_U64(g->r.stream, UINT32_MAX);
        CHECK_EQ_INT(g->r.end_ns - g->r.start_ns, 10000);
    }
    g = find("Event Record");
    if (CHECK(g != NULL)) {
        CHECK_EQ_INT(g->r.kind, ACT_PLUGIN_RECORD_INSTANT);
        CHECK_EQ_INT(g->r.type, ACT_CUDA_EVENT);
        CHECK_EQ_INT(g->r.start_ns, (int64_t)T0 + 95000);
        CHECK(arg(g, "cuda event") && arg(g, "cuda event")->u == 3);
    }
    g = find("CUPTI Buffer Flush");
    if (CHECK(g != NULL)) {
        CHECK_EQ_INT(g->r.kind, ACT_PLUGIN_RECORD_HOST_SPAN);
        CHECK_EQ_INT(g->r.type, ACT_OVERHEAD);
        CHECK_EQ_U64(g->r.stream, 4243);
        CHECK_EQ_U64(g->r.correlation, 0);
    }
    /* Streams named once each, per device. */
    CHECK(find_stream(0, 7, "stream 7"));
    CHECK(find_stream(0, 8, "stream 8"));
    CHECK(find_stream(1, 9, "stream 9"));
    CHECK(find_stream(1, UINT32_MAX, "context sync"));
    CHECK_EQ_INT(nstreams, 4);
    CHECK_EQ_U64(ct->skipped, 1);

    /* A second buffer: 1000 kernels of one name (demangled once, shared
     * pointer), more than one batch; no device or stream named again. */
    const char *kname = k->name; /* k is about to be overwritten */
    used = 0;
    for (int i = 0; i < 1000; i++) {
        CUpti_ActivityKernel10 *kk = put(sizeof *kk);
        kk->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        kk->start = T0 + 200000 + (uint64_t)i * 100;
        kk->end = kk->start + 50;
        kk->streamId = 7;
        kk->correlationId = 1000 + (uint32_t)i;
        kk->name = kname;
        kk->gridX = kk->gridY = kk->gridZ = 1;
        kk->blockX = kk->blockY = kk->blockZ = 1;
    }
    ngot = 0;
    nemit_calls = 0;
    ct_buffer(ct, buf, used);
    CHECK_EQ_INT(ngot, 1000);
    CHECK(nemit_calls >= 1000 / CT_BATCH);
    CHECK_EQ_INT(ndev, 2);
    CHECK_EQ_INT(nstreams, 4);
    int same = 1;
    for (int i = 0; i < ngot; i++)
        same &= !strcmp(got[i].name,
                        "vecAdd(float const*, float const*, float*, int)") &&
                got[i].r.correlation == 1000 + (uint64_t)i &&
                got[i].r.external_id == 0;
    CHECK(same);

    /* Odd values: extreme dimensions, a NULL kernel name, unknown copy
     * and memory kinds, end before start, a device beyond the table. */
    used = 0;
    CUpti_ActivityKernel10 *ok = put(sizeof *ok);
    ok->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    ok->start = T0 + 500;
    ok->end = T0 + 100; /* before start: clamped to an empty span */
    ok->streamId = 7;
    ok->gridX = 2147483647;
    ok->gridY = 0;
    ok->gridZ = -5;
    ok->blockX = ok->blockY = ok->blockZ = 1;
    ok->name = NULL;
    CUpti_ActivityMemcpy6 *om = put(sizeof *om);
    om->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    om->copyKind = 200;
    om->srcKind = 99;
    om->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC;
    om->streamId = 7;
    CUpti_ActivityMemset4 *far = put(sizeof *far);
    far->kind = CUPTI_ACTIVITY_KIND_MEMSET;
    far->deviceId = 5000; /* no such device: dropped */
    ngot = 0;
    ct_buffer(ct, buf, used);
    CHECK_EQ_INT(ngot, 2);
    g = find("(unknown kernel)");
    if (CHECK(g != NULL)) {
        CHECK(arg(g, "grid") &&
              !strcmp(arg(g, "grid")->s, "[2147483647, 0, -5]"));
        CHECK_EQ_INT(g->r.end_ns, g->r.start_ns);
    }
    CHECK(find("Memcpy Unknown (Unknown -> Managed Static)") != NULL);
    CHECK_EQ_U64(ct->no_device, 1);

    /* Without a driver table: the device is named by its ordinal. */
    ct_ctx *bare = calloc(1, sizeof *bare);
    CHECK_FATAL(bare != NULL);
    ct_init(bare, &host, &api, NULL);
    CHECK_EQ_U64(ct_device(bare, 3), 2);
    CHECK_EQ_STR(dev_names[2], "CUDA device 3/NVIDIA");
    CHECK_EQ_U64(ct_device(bare, 3), 2); /* described once */
    CHECK_EQ_INT(ndev, 3);
    CHECK_EQ_U64(ct_device(bare, 100000), UINT32_MAX);
    /* An empty or NULL buffer is a no-op. */
    ngot = 0;
    ct_buffer(bare, NULL, 0);
    ct_buffer(bare, buf, 0);
    CHECK_EQ_INT(ngot, 0);
    ct_fini(bare);
    ct_fini(ct);
    free(bare);
    free(ct);
    free(buf);
    free(got);
    CHECK_MAIN_END;
}
