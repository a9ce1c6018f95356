/* SPDX-License-Identifier: MIT */
/*
 * CUPTI activity records -> act_plugin_record batches (see
 * cupti_translate.h). Record layouts are CUDA 13's: CUpti_ActivityKernel10,
 * Memcpy6, MemcpyPtoP4, Memset4, API, Synchronization2, Overhead3,
 * CudaEvent2, ExternalCorrelation, Context3. Timestamps are already on the
 * host clock: the plugin registers a timestamp callback returning
 * act_plugin_host.now_ns before it enables any kind.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_translate.h"

void ct_init(ct_ctx *c, const act_plugin_host *host, const cu_cupti *api,
             const cu_driver *drv)
{
    memset(c, 0, sizeof *c);
    c->host = host;
    c->api = api;
    c->drv = drv;
    /* __cxa_demangle: present when the program links libstdc++ (nvcc
     * programs do); otherwise load it, which is harmless for a C program. */
    void *p = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!p) {
        void *l = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        if (l)
            p = dlsym(l, "__cxa_demangle");
    }
    memcpy(&c->demangle, &p, sizeof p);
}

void ct_fini(ct_ctx *c)
{
    for (uint32_t i = 0; i < CT_NAME_SLOTS; i++)
        free(c->names[i].demangled);
    memset(c->names, 0, sizeof c->names);
}

/* ---- formatting without printf (per record) ---------------------------------- */

/* Writes "[x, y, z]" into @p out (at least 48 bytes); returns its length. */
static uint32_t fmt_dim3(char *out, int32_t x, int32_t y, int32_t z)
{
    const int32_t v[3] = {x, y, z};
    char *p = out;
    *p++ = '[';
    for (int k = 0; k < 3; k++) {
        if (k) {
            *p++ = ',';
            *p++ = ' ';
        }
        uint32_t u = (uint32_t)v[k];
        if (v[k] < 0) {
            *p++ = '-';
            u = 0u - (uint32_t)v[k];
        }
        char tmp[10];
        int n = 0;
        do {
            tmp[n++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        while (n)
            *p++ = tmp[--n];
    }
    *p++ = ']';
    *p = '\0';
    return (uint32_t)(p - out);
}

/* ---- args ------------------------------------------------------------------ */

static act_plugin_arg *arg_at(ct_ctx *c, uint32_t *na, const char *key)
{
    act_plugin_arg *a = &c->args[c->n][(*na)++];
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->key = key;
    a->key_len = (uint32_t)strlen(key);
    return a;
}

static void arg_u(ct_ctx *c, uint32_t *na, const char *key, uint64_t v)
{
    act_plugin_arg *a = arg_at(c, na, key);
    a->kind = ACT_PLUGIN_ARG_UINT;
    a->v.u = v;
}

static void arg_i(ct_ctx *c, uint32_t *na, const char *key, int64_t v)
{
    act_plugin_arg *a = arg_at(c, na, key);
    a->kind = ACT_PLUGIN_ARG_INT;
    a->v.i = v;
}

static void arg_d(ct_ctx *c, uint32_t *na, const char *key, double v)
{
    act_plugin_arg *a = arg_at(c, na, key);
    a->kind = ACT_PLUGIN_ARG_DOUBLE;
    a->v.d = v;
}

static void arg_s(ct_ctx *c, uint32_t *na, const char *key, const char *s)
{
    act_plugin_arg *a = arg_at(c, na, key);
    a->kind = ACT_PLUGIN_ARG_STRING;
    a->v.s.ptr = s;
    a->v.s.len = strlen(s);
}

/* ---- lookups ----------------------------------------------------------------- */

static uint64_t ext_of(const ct_ctx *c, uint32_t corr)
{
    const uint32_t i = corr & (CT_EXT_RING - 1);
    return corr && c->ext[i].corr == corr ? c->ext[i].ext : 0;
}

static int prop_attr(const ct_ctx *c, CUdevice d, CUdevice_attribute a,
                     int *out)
{
    return c->drv && c->drv->DeviceGetAttribute &&
           c->drv->DeviceGetAttribute(out, a, d) == CUDA_SUCCESS;
}

uint32_t ct_device(ct_ctx *c, uint32_t ordinal)
{
    if (ordinal < CT_MAX_DEVICES && c->dev_index[ordinal])
        return c->dev_index[ordinal] - 1;
    if (ordinal >= CT_MAX_DEVICES)
        return UINT32_MAX;
    char name[256];
    snprintf(name, sizeof name, "CUDA device %" PRIu32, ordinal);
    act_plugin_arg props[16];
    uint32_t np = 0;
    CUdevice d = 0;
    /* The driver is initialised by the program by the time its records
     * arrive; without a usable driver (tests) the device gets a name. */
    int have = c->drv && c->drv->DeviceGet &&
               c->drv->DeviceGet(&d, (int)ordinal) == CUDA_SUCCESS;
    char dname[200];
    if (have && c->drv->DeviceGetName &&
        c->drv->DeviceGetName(dname, (int)sizeof dname, d) == CUDA_SUCCESS) {
        dname[sizeof dname - 1] = '\0';
        snprintf(name, sizeof name, "%s", dname);
    }
#define PROP(k, kind_, field, val)                                             \
    do {                                                                       \
        memset(&props[np], 0, sizeof props[np]);                               \
        props[np].struct_size = sizeof props[np];                              \
        props[np].kind = kind_;                                                \
        props[np].key = k;                                                     \
        props[np].key_len = (uint32_t)strlen(k);                               \
        props[np].v.field = val;                                               \
        np++;                                                                  \
    } while (0)
    PROP("cudaDeviceOrdinal", ACT_PLUGIN_ARG_UINT, u, ordinal);
    if (have) {
        size_t mem = 0;
        if (c->drv->DeviceTotalMem &&
            c->drv->DeviceTotalMem(&mem, d) == CUDA_SUCCESS)
            PROP("totalGlobalMem", ACT_PLUGIN_ARG_UINT, u, mem);
        static const struct {
            const char *key;
            CUdevice_attribute a;
        } attrs[] = {
            {"computeMajor", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
            {"computeMinor", CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
            {"maxThreadsPerBlock", CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
            {"maxThreadsPerMultiprocessor",
             CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
            {"regsPerBlock", CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
            {"regsPerMultiprocessor",
             CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR},
            {"warpSize", CU_DEVICE_ATTRIBUTE_WARP_SIZE},
            {"sharedMemPerBlock",
             CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
            {"sharedMemPerMultiprocessor",
             CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
            {"numSms", CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
            {"sharedMemPerBlockOptin",
             CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
        };
        for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
            int v = 0;
            if (prop_attr(c, d, attrs[i].a, &v))
                PROP(attrs[i].key, ACT_PLUGIN_ARG_INT, i, v);
        }
    }
#undef PROP
    act_plugin_device dev;
    memset(&dev, 0, sizeof dev);
    dev.struct_size = sizeof dev;
    dev.name = name;
    dev.vendor = "NVIDIA";
    dev.props = props;
    dev.nprops = np;
    uint32_t idx = UINT32_MAX;
    if (c->host->add_device(c->host->ctx, &dev, &idx) != 0)
        return UINT32_MAX;
    c->dev_index[ordinal] = idx + 1;
    return idx;
}

static uint32_t device_of_context(ct_ctx *c, uint32_t ctx)
{
    for (uint32_t i = 0; i < c->nctxs; i++)
        if (c->ctxs[i].ctx == ctx)
            return c->ctxs[i].dev;
    return 0; /* unknown context: the first device */
}

/* Names stream @p stream of host device @p hdev the first time it is seen. */
static void see_stream(ct_ctx *c, uint32_t hdev, uint32_t stream)
{
    const uint64_t key = (((uint64_t)hdev << 32) | stream) + 1;
    uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 52) &
                 (CT_STREAM_SLOTS - 1);
    for (uint32_t probe = 0; probe < CT_STREAM_SLOTS; probe++) {
        uint64_t *s = &c->streams[(i + probe) & (CT_STREAM_SLOTS - 1)];
        if (*s == key)
            return;
        if (*s == 0) {
            if (c->nstreams >= CT_STREAM_SLOTS / 2)
                return; /* table full: the stream keeps its number only */
            *s = key;
            c->nstreams++;
            char nm[48];
            int len = stream == UINT32_MAX
                          ? snprintf(nm, sizeof nm, "context sync")
                          : snprintf(nm, sizeof nm, "stream %" PRIu32, stream);
            c->host->name_stream(c->host->ctx, hdev, stream, nm,
                                 (uint32_t)len);
            return;
        }
    }
}

static const char *demangled(ct_ctx *c, const char *mangled)
{
    if (!mangled)
        return "(unknown kernel)";
    if (!c->demangle || mangled[0] != '_' || mangled[1] != 'Z')
        return mangled;
    uintptr_t h = (uintptr_t)mangled;
    uint32_t i = (uint32_t)((h * 0x9E3779B97F4A7C15ull) >> 40) &
                 (CT_NAME_SLOTS - 1);
    for (uint32_t probe = 0; probe < CT_NAME_SLOTS; probe++) {
        ct_name_slot *s = &c->names[(i + probe) & (CT_NAME_SLOTS - 1)];
        if (s->key == mangled)
            return s->demangled ? s->demangled : mangled;
        if (!s->key) {
            if (c->nnames >= CT_NAME_SLOTS / 2)
                break;
            int st = -1;
            char *d = c->demangle(mangled, NULL, NULL, &st);
            if (st != 0) {
                free(d);
                d = NULL;
            }
            s->key = mangled;
            s->demangled = d;
            c->nnames++;
            return d ? d : mangled;
        }
    }
    return mangled;
}

/* Function name of an API record, without CUPTI's version suffix
 * ("cudaLaunchKernel_v7000" -> "cudaLaunchKernel"). */
static const char *api_name(ct_ctx *c, int driver, uint32_t cbid,
                            uint32_t *len)
{
    ct_api_name *slot =
        cbid < CT_API_NAMES ? &(driver ? c->drv_names : c->rt_names)[cbid]
                            : NULL;
    if (slot && slot->len) {
        *len = slot->len;
        return slot->ptr;
    }
    const char *nm = NULL;
    if (!c->api->GetCallbackName ||
        c->api->GetCallbackName(driver ? CUPTI_CB_DOMAIN_DRIVER_API
                                       : CUPTI_CB_DOMAIN_RUNTIME_API,
                                cbid, &nm) != CUPTI_SUCCESS ||
        !nm || !*nm) {
        nm = driver ? "(unknown driver call)" : "(unknown runtime call)";
    }
    size_t n = strlen(nm);
    const char *v = strstr(nm, "_v");
    if (v && v > nm && strspn(v + 2, "0123456789") == strlen(v + 2) && v[2])
        n = (size_t)(v - nm);
    if (slot) {
        slot->ptr = nm;
        slot->len = (uint32_t)n;
    }
    *len = (uint32_t)n;
    return nm;
}

static const char *copy_kind(uint8_t k)
{
    static const char *const n[] = {"Unknown", "HtoD", "DtoH", "HtoA",
                                    "AtoH",    "AtoA", "AtoD", "DtoA",
                                    "DtoD",    "HtoH", "PtoP"};
    return k < sizeof n / sizeof n[0] ? n[k] : "Unknown";
}

static const char *mem_kind(uint32_t k)
{
    static const char *const n[] = {"Unknown", "Pageable", "Pinned",
                                    "Device",  "Array",    "Managed",
                                    "Device Static", "Managed Static"};
    return k < sizeof n / sizeof n[0] ? n[k] : "Unknown";
}

static const char *sync_name(uint32_t t)
{
    switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Context Sync";
    default: return "Unknown Sync";
    }
}

static const char *overhead_name(uint32_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "Driver Compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI Buffer Flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI Instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI Resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "Module Loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "Lazy Function Loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "Command Buffer Full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "Activity Buffer Request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "UVM Activity Init";
    default: return "Unknown Overhead";
    }
}

/* ---- batching --------------------------------------------------------------- */

void ct_flush(ct_ctx *c)
{
    if (!c->n)
        return;
    int32_t kept = c->host->emit(c->host->ctx, c->recs, c->n);
    if (kept < 0)
        c->bad += c->n;
    c->translated += c->n;
    c->n = 0;
}

static act_plugin_record *rec_begin(ct_ctx *c, int32_t kind, int32_t type,
                                    uint32_t device, uint64_t stream,
                                    uint64_t start, uint64_t end)
{
    act_plugin_record *r = &c->recs[c->n];
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    r->kind = kind;
    r->type = type;
    r->device = device;
    r->stream = stream;
    /* CUPTI's timestamps come from our callback: non-negative int64. */
    r->start_ns = (int64_t)(start > INT64_MAX ? INT64_MAX : start);
    r->end_ns = (int64_t)(end > INT64_MAX ? INT64_MAX : end);
    if (r->end_ns < r->start_ns)
        r->end_ns = r->start_ns;
    return r;
}

static void rec_end(ct_ctx *c, act_plugin_record *r, const char *name,
                    uint32_t name_len, uint32_t nargs)
{
    r->name = name;
    r->name_len = name_len;
    r->nargs = nargs;
    r->args = nargs ? c->args[c->n] : NULL;
    if (++c->n == CT_BATCH)
        ct_flush(c);
}

/* ---- one record ---------------------------------------------------------------- */

static void on_kernel(ct_ctx *c, const CUpti_ActivityKernel10 *k)
{
    uint32_t dev = ct_device(c, k->deviceId);
    if (dev == UINT32_MAX) {
        c->no_device++;
        return;
    }
    see_stream(c, dev, k->streamId);
    act_plugin_record *r = rec_begin(c, ACT_PLUGIN_RECORD_DEVICE_SPAN,
                                     ACT_CONCURRENT_KERNEL, dev, k->streamId,
                                     k->start, k->end);
    r->correlation = k->correlationId;
    r->external_id = ext_of(c, k->correlationId);
    uint32_t na = 0;
    char *grid = c->scratch[c->n][0], *block = c->scratch[c->n][1];
    fmt_dim3(grid, k->gridX, k->gridY, k->gridZ);
    fmt_dim3(block, k->blockX, k->blockY, k->blockZ);
    arg_u(c, &na, "context", k->contextId);
    arg_u(c, &na, "registers per thread", k->registersPerThread);
    arg_i(c, &na, "shared memory",
          (int64_t)k->staticSharedMemory + k->dynamicSharedMemory);
    arg_i(c, &na, "static shared memory", k->staticSharedMemory);
    arg_i(c, &na, "dynamic shared memory", k->dynamicSharedMemory);
    arg_s(c, &na, "grid", grid);
    arg_s(c, &na, "block", block);
    arg_i(c, &na, "blocks", (int64_t)k->gridX * k->gridY * k->gridZ);
    if (k->queued && k->queued != UINT64_MAX)
        arg_u(c, &na, "queued", k->queued);
    if (k->graphId)
        arg_u(c, &na, "graph id", k->graphId);
    const char *nm = demangled(c, k->name);
    rec_end(c, r, nm, (uint32_t)strnlen(nm, ACT_PLUGIN_NAME_MAX), na);
}

static void memcpy_common(ct_ctx *c, uint32_t device, uint32_t stream,
                          uint32_t corr, uint64_t start, uint64_t end,
                          uint8_t copyk, uint8_t srck, uint8_t dstk,
                          uint64_t bytes, uint32_t ctx, int peer,
                          uint32_t srcdev, uint32_t dstdev)
{
    uint32_t dev = ct_device(c, device);
    if (dev == UINT32_MAX) {
        c->no_device++;
        return;
    }
    see_stream(c, dev, stream);
    act_plugin_record *r = rec_begin(c, ACT_PLUGIN_RECORD_DEVICE_SPAN,
                                     ACT_GPU_MEMCPY, dev, stream, start, end);
    r->correlation = corr;
    r->external_id = ext_of(c, corr);
    uint32_t na = 0;
    arg_s(c, &na, "kind", copy_kind(copyk));
    arg_u(c, &na, "bytes", bytes);
    arg_s(c, &na, "src kind", mem_kind(srck));
    arg_s(c, &na, "dst kind", mem_kind(dstk));
    arg_u(c, &na, "context", ctx);
    if (end > start)
        arg_d(c, &na, "memory bandwidth (GB/s)",
              (double)bytes / (double)(end - start));
    if (peer) {
        arg_u(c, &na, "src device", srcdev);
        arg_u(c, &na, "dst device", dstdev);
    }
    /* Names are formatted once per (kind, src, dst), not per record. */
    uint32_t ck = copyk < CT_COPY_KINDS ? copyk : 0;
    uint32_t sk = srck < CT_MEM_KINDS ? srck : 0;
    uint32_t dk = dstk < CT_MEM_KINDS ? dstk : 0;
    char *nm = c->copy_names[ck][sk][dk];
    if (!nm[0])
        snprintf(nm, sizeof c->copy_names[0][0][0], "Memcpy %s (%s -> %s)",
                 copy_kind((uint8_t)ck), mem_kind(sk), mem_kind(dk));
    rec_end(c, r, nm, (uint32_t)strlen(nm), na);
}

static void on_memset(ct_ctx *c, const CUpti_ActivityMemset4 *m)
{
    uint32_t dev = ct_device(c, m->deviceId);
    if (dev == UINT32_MAX) {
        c->no_device++;
        return;
    }
    see_stream(c, dev, m->streamId);
    act_plugin_record *r =
        rec_begin(c, ACT_PLUGIN_RECORD_DEVICE_SPAN, ACT_GPU_MEMSET, dev,
                  m->streamId, m->start, m->end);
    r->correlation = m->correlationId;
    r->external_id = ext_of(c, m->correlationId);
    uint32_t na = 0;
    arg_u(c, &na, "bytes", m->bytes);
    arg_u(c, &na, "value", m->value);
    arg_s(c, &na, "memory kind", mem_kind(m->memoryKind));
    arg_u(c, &na, "context", m->contextId);
    if (m->end > m->start)
        arg_d(c, &na, "memory bandwidth (GB/s)",
              (double)m->bytes / (double)(m->end - m->start));
    uint32_t mk = m->memoryKind < CT_MEM_KINDS ? m->memoryKind : 0;
    char *nm = c->memset_names[mk];
    if (!nm[0])
        snprintf(nm, sizeof c->memset_names[0], "Memset (%s)", mem_kind(mk));
    rec_end(c, r, nm, (uint32_t)strlen(nm), na);
}

static void on_api(ct_ctx *c, const CUpti_ActivityAPI *a, int driver)
{
    act_plugin_record *r = rec_begin(
        c, ACT_PLUGIN_RECORD_HOST_SPAN, driver ? ACT_DRIVER : ACT_RUNTIME,
        ACT_PLUGIN_HOST_DEVICE, a->threadId, a->start, a->end);
    r->correlation = a->correlationId;
    r->external_id = ext_of(c, a->correlationId);
    uint32_t na = 0;
    arg_u(c, &na, "cbid", a->cbid);
    if (a->returnValue)
        arg_u(c, &na, "return", a->returnValue);
    uint32_t len = 0;
    const char *nm = api_name(c, driver, a->cbid, &len);
    rec_end(c, r, nm, len, na);
}

static void on_sync(ct_ctx *c, const CUpti_ActivitySynchronization2 *s)
{
    uint32_t dev = ct_device(c, device_of_context(c, s->contextId));
    if (dev == UINT32_MAX) {
        c->no_device++;
        return;
    }
    see_stream(c, dev, s->streamId);
    act_plugin_record *r =
        rec_begin(c, ACT_PLUGIN_RECORD_DEVICE_SPAN, ACT_CUDA_SYNC, dev,
                  s->streamId, s->start, s->end);
    r->correlation = s->correlationId;
    r->external_id = ext_of(c, s->correlationId);
    uint32_t na = 0;
    arg_u(c, &na, "context", s->contextId);
    if (s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE ||
        s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT)
        arg_u(c, &na, "cuda event", s->cudaEventId);
    const char *nm = sync_name(s->type);
    rec_end(c, r, nm, (uint32_t)strlen(nm), na);
}

static void on_event(ct_ctx *c, const CUpti_ActivityCudaEvent2 *e)
{
    uint32_t dev = ct_device(c, e->deviceId);
    if (dev == UINT32_MAX) {
        c->no_device++;
        return;
    }
    see_stream(c, dev, e->streamId);
    act_plugin_record *r =
        rec_begin(c, ACT_PLUGIN_RECORD_INSTANT, ACT_CUDA_EVENT, dev,
                  e->streamId, e->deviceTimestamp, e->deviceTimestamp);
    r->correlation = e->correlationId;
    r->external_id = ext_of(c, e->correlationId);
    uint32_t na = 0;
    arg_u(c, &na, "cuda event", e->eventId);
    arg_u(c, &na, "context", e->contextId);
    rec_end(c, r, "Event Record", 12, na);
}

static void on_overhead(ct_ctx *c, const CUpti_ActivityOverhead3 *o)
{
    /* On the thread it concerns; process- or device-wide overheads go on
     * the host process's thread 0 lane... which is no thread: use the
     * process id, which is the main thread's tid. */
    uint64_t tid = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
                           o->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS
                       ? (o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD
                              ? o->objectId.pt.threadId
                              : o->objectId.pt.processId)
                       : 0;
    act_plugin_record *r =
        rec_begin(c, ACT_PLUGIN_RECORD_HOST_SPAN, ACT_OVERHEAD,
                  ACT_PLUGIN_HOST_DEVICE, tid, o->start, o->end);
    r->correlation = 0; /* an overhead launches nothing */
    uint32_t na = 0;
    if (o->correlationId)
        arg_u(c, &na, "cupti correlation", o->correlationId);
    const char *nm = overhead_name(o->overheadKind);
    rec_end(c, r, nm, (uint32_t)strlen(nm), na);
}

void ct_buffer(ct_ctx *c, uint8_t *buf, size_t valid)
{
    CUpti_Activity *rec = NULL;
    if (!buf || !valid)
        return;
    while (c->api->ActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
            on_kernel(c, (const CUpti_ActivityKernel10 *)(void *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            const CUpti_ActivityMemcpy6 *m = (const void *)rec;
            memcpy_common(c, m->deviceId, m->streamId, m->correlationId,
                          m->start, m->end, m->copyKind, m->srcKind,
                          m->dstKind, m->bytes, m->contextId, 0, 0, 0);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY2: {
            const CUpti_ActivityMemcpyPtoP4 *m = (const void *)rec;
            memcpy_common(c, m->deviceId, m->streamId, m->correlationId,
                          m->start, m->end, m->copyKind, m->srcKind,
                          m->dstKind, m->bytes, m->contextId, 1,
                          m->srcDeviceId, m->dstDeviceId);
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMSET:
            on_memset(c, (const void *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_RUNTIME:
            on_api(c, (const void *)rec, 0);
            break;
        case CUPTI_ACTIVITY_KIND_DRIVER:
            on_api(c, (const void *)rec, 1);
            break;
        case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
            on_sync(c, (const void *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
            on_event(c, (const void *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_OVERHEAD:
            on_overhead(c, (const void *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
            const CUpti_ActivityExternalCorrelation *x = (const void *)rec;
            const uint32_t i = x->correlationId & (CT_EXT_RING - 1);
            c->ext[i].corr = x->correlationId;
            c->ext[i].ext = x->externalId;
            break;
        }
        case CUPTI_ACTIVITY_KIND_CONTEXT: {
            const CUpti_ActivityContext3 *x = (const void *)rec;
            uint32_t i = 0;
            while (i < c->nctxs && c->ctxs[i].ctx != x->contextId)
                i++;
            if (i < CT_MAX_CONTEXTS) {
                c->ctxs[i].ctx = x->contextId;
                c->ctxs[i].dev = x->deviceId;
                if (i == c->nctxs)
                    c->nctxs++;
            }
            break;
        }
        default:
            c->skipped++;
            break;
        }
    }
    ct_flush(c);
}
