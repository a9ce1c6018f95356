/* SPDX-License-Identifier: MIT */
/*
 * The cupti plugin: NVIDIA GPU activity through CUPTI's activity API
 * (kernels, copies, memsets, runtime and driver calls, synchronisation,
 * CUDA events, CUPTI overhead), translated by cupti_translate.c, and
 * hardware PM counters through CUPTI's PM sampling API (cupti_pm.c).
 *
 * Loading: libcupti and libcuda.so.1 are dlopen'ed in init, so cupti.so
 * loads anywhere; init declines, with the reason, when either is missing,
 * when there is no NVIDIA device, or when cuptiSubscribe fails (another
 * CUPTI client such as Nsight Systems is attached:
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; without a driver most
 * calls answer CUPTI_ERROR_UNKNOWN). cuInit is never called: a program
 * that forks before it touches CUDA must keep working.
 *
 * One process-wide instance: CUPTI's buffer and timestamp callbacks carry
 * no user pointer, and CUPTI itself is process-wide (one subscriber, one
 * set of enabled kinds), so a second instance is declined and the
 * callbacks find the live one through g_cp.
 *
 * Threads: CUPTI completes buffers on its own worker thread and on the
 * thread that calls cuptiActivityFlushAll; translation is serialised by
 * cp->lock. The API callback runs on application threads and only pushes
 * and pops the external correlation id.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <actrace/plugin.h>

#include "cupti_api.h"
#include "cupti_pm.h"
#include "cupti_translate.h"
#include "../plugin_util.h"

#define CP_BUFFER_BYTES (4u << 20) /* one CUPTI buffer, as Kineto */
#define CP_MIN_BUFFER_BYTES (64u << 10)

typedef struct cupti_plugin {
    const act_plugin_host *host;
    cu_cupti api;
    cu_driver drv;
    CUpti_SubscriberHandle sub;
    int subscribed;
    int ext_corr;      /* push external ids from the API callback */
    size_t buf_bytes;  /* one buffer */
    size_t max_bytes;  /* ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB */
    atomic_size_t outstanding;
    atomic_uint_fast64_t buffers_refused;
    atomic_uint_fast64_t cupti_dropped;
    uint64_t dropped_reported;
    CUpti_ActivityKind kinds[16];
    int nkinds;
    int enabled; /* kinds are enabled */
    pthread_mutex_t lock; /* serialises ct and the counters below */
    ct_ctx ct;
    cp_pm *pm; /* PM sampling, or NULL */
} cupti_plugin;

static _Atomic(cupti_plugin *) g_cp;
/* Held while a completed buffer is translated, and by finalize while it
 * clears g_cp: a completion never sees an instance being freed. */
static pthread_mutex_t g_complete_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Fork. A fork()ed child inherits g_cp, whose host table is the parent's
 * session, and CUPTI's own state: a subscription (ours) whose worker
 * thread does not exist in the child. The child must never deliver into
 * the parent's session: its fork handler forgets the instance (g_cp NULL:
 * every callback then finds none, refuses buffers and frees completed
 * ones untranslated; the instance is leaked in the child). CUPTI cannot
 * be released or used safely in the child (CUDA is not fork-safe, and
 * calling CUPTI from a fork handler could wait on a lock of a thread that
 * is gone), so a child's own session declines the plugin with that
 * reason. g_cp_pid names the process g_cp belongs to: the reset runs
 * from the handler and again from init, whatever order the handlers ran.
 */
static pid_t g_cp_pid;
static int g_forked_from_cupti; /* this process inherited a subscription */

static void fork_reset(void)
{
    if (!g_cp_pid || g_cp_pid == getpid())
        return;
    g_cp_pid = 0;
    g_forked_from_cupti = 1;
    atomic_store_explicit(&g_cp, NULL, memory_order_release);
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&g_complete_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&g_complete_lock);
}

static void fork_child(void)
{
    pthread_mutex_init(&g_complete_lock, NULL);
    fork_reset();
}

__attribute__((constructor)) static void cp_load(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---- CUPTI callbacks (no user pointer: they find g_cp) ---------------------- */

static uint64_t CUPTIAPI cb_timestamp(void)
{
    cupti_plugin *cp = atomic_load_explicit(&g_cp, memory_order_acquire);
    int64_t t = cp ? cp->host->now_ns(cp->host->ctx) : plugin_mono_ns();
    return t < 0 ? 0 : (uint64_t)t;
}

static void CUPTIAPI cb_buffer_request(uint8_t **buffer, size_t *size,
                                       size_t *max_records)
{
    cupti_plugin *cp = atomic_load_explicit(&g_cp, memory_order_acquire);
    *buffer = NULL;
    *size = 0;
    *max_records = 0;
    if (!cp)
        return;
    size_t want = cp->buf_bytes;
    size_t now = atomic_fetch_add(&cp->outstanding, want);
    if (now + want > cp->max_bytes) {
        /* Over budget: CUPTI drops records and counts them. */
        atomic_fetch_sub(&cp->outstanding, want);
        atomic_fetch_add(&cp->buffers_refused, 1);
        return;
    }
    void *p = NULL;
    if (posix_memalign(&p, 8, want) != 0) {
        atomic_fetch_sub(&cp->outstanding, want);
        atomic_fetch_add(&cp->buffers_refused, 1);
        return;
    }
    *buffer = p;
    *size = want;
}

static void CUPTIAPI cb_buffer_complete(CUcontext ctx, uint32_t stream,
                                        uint8_t *buffer, size_t size,
                                        size_t valid)
{
    pthread_mutex_lock(&g_complete_lock);
    cupti_plugin *cp = atomic_load_explicit(&g_cp, memory_order_acquire);
    if (cp) {
        pthread_mutex_lock(&cp->lock);
        ct_buffer(&cp->ct, buffer, valid);
        size_t dropped = 0;
        if (cp->api.ActivityGetNumDroppedRecords &&
            cp->api.ActivityGetNumDroppedRecords(ctx, stream, &dropped) ==
                CUPTI_SUCCESS &&
            dropped)
            atomic_fetch_add(&cp->cupti_dropped, dropped);
        pthread_mutex_unlock(&cp->lock);
        if (buffer)
            atomic_fetch_sub(&cp->outstanding, size);
    }
    pthread_mutex_unlock(&g_complete_lock);
    free(buffer);
}

/* API enter/exit on application threads: make device work issued inside
 * an act_correlation_push region carry that id (Kineto's External id). */
static void CUPTIAPI cb_api(void *userdata, CUpti_CallbackDomain domain,
                            CUpti_CallbackId cbid, const void *data)
{
    cupti_plugin *cp = userdata;
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED && cp->pm)
            cp_pm_context_created(cp->pm);
        return;
    }
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API &&
        domain != CUPTI_CB_DOMAIN_DRIVER_API)
        return;
    const CUpti_CallbackData *cb = data;
    if (!cp->ext_corr || !cb->correlationData)
        return;
    if (cb->callbackSite == CUPTI_API_ENTER) {
        uint64_t id = cp->host->correlation_current(cp->host->ctx);
        *cb->correlationData = 0;
        if (id && cp->api.ActivityPushExternalCorrelationId(
                      CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id) ==
                      CUPTI_SUCCESS)
            *cb->correlationData = 1;
    } else if (*cb->correlationData) {
        uint64_t last = 0;
        cp->api.ActivityPopExternalCorrelationId(
            CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
        *cb->correlationData = 0;
    }
}

/* Host device of CUDA device @p ordinal for PM counter tracks. */
static uint32_t pm_device(void *u, uint32_t ordinal)
{
    cupti_plugin *cp = u;
    pthread_mutex_lock(&cp->lock);
    uint32_t d = ct_device(&cp->ct, ordinal);
    pthread_mutex_unlock(&cp->lock);
    return d;
}

/* ---- selection ------------------------------------------------------------- */

static int selected(const cupti_plugin *cp, int32_t type)
{
    return !cp->host->type_selected ||
           cp->host->type_selected(cp->host->ctx, type);
}

static void choose_kinds(cupti_plugin *cp)
{
    cp->nkinds = 0;
#define ADD(k) cp->kinds[cp->nkinds++] = (k)
    if (selected(cp, ACT_CONCURRENT_KERNEL))
        ADD(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (selected(cp, ACT_GPU_MEMCPY)) {
        ADD(CUPTI_ACTIVITY_KIND_MEMCPY);
        ADD(CUPTI_ACTIVITY_KIND_MEMCPY2);
    }
    if (selected(cp, ACT_GPU_MEMSET))
        ADD(CUPTI_ACTIVITY_KIND_MEMSET);
    if (selected(cp, ACT_RUNTIME))
        ADD(CUPTI_ACTIVITY_KIND_RUNTIME);
    if (selected(cp, ACT_DRIVER))
        ADD(CUPTI_ACTIVITY_KIND_DRIVER);
    if (selected(cp, ACT_CUDA_SYNC)) {
        ADD(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
        ADD(CUPTI_ACTIVITY_KIND_CONTEXT); /* context -> device for syncs */
    }
    if (selected(cp, ACT_CUDA_EVENT))
        ADD(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
    if (selected(cp, ACT_OVERHEAD))
        ADD(CUPTI_ACTIVITY_KIND_OVERHEAD);
    if (cp->nkinds && cp->host->correlation_current &&
        cp->api.ActivityPushExternalCorrelationId &&
        cp->api.ActivityPopExternalCorrelationId && cp->api.EnableDomain) {
        ADD(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
        cp->ext_corr = 1;
    }
#undef ADD
}

static long config_long(const cupti_plugin *cp, const char *key, long dflt)
{
    const char *v = cp->host->config_get(cp->host->ctx, key);
    if (!v || !*v)
        return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    return *end == '\0' ? n : dflt;
}

/* Is there an NVIDIA device, without cuInit? If the program already
 * initialised CUDA, ask the driver; otherwise look for the device nodes
 * the driver creates. Returns NULL if yes, else the reason. */
static const char *no_device(cupti_plugin *cp, char *buf, size_t cap)
{
    int n = 0;
    CUresult rc = cp->drv.DeviceGetCount(&n);
    if (rc == CUDA_SUCCESS)
        return n > 0 ? NULL : "no CUDA device";
    if (rc == CUDA_ERROR_STUB_LIBRARY)
        return "the CUDA driver is the toolkit's stub library (no driver)";
    if (rc != CUDA_ERROR_NOT_INITIALIZED) {
        snprintf(buf, cap, "CUDA driver error %d", (int)rc);
        return buf;
    }
    if (access("/dev/nvidiactl", F_OK) != 0 && access("/dev/dxg", F_OK) != 0)
        return "no NVIDIA device (no /dev/nvidiactl)";
    return NULL;
}

/* ---- the table ---------------------------------------------------------------- */

static void cp_free(cupti_plugin *cp)
{
    ct_fini(&cp->ct);
    pthread_mutex_destroy(&cp->lock);
    cu_cupti_unload(&cp->api);
    cu_driver_unload(&cp->drv);
    free(cp);
}

static int32_t cp_init(const act_plugin_host *host, void **state,
                       char *reason, uint32_t reason_cap)
{
    if (host->struct_size < ACT_PLUGIN_HOST_SIZE_1_0 || !host->log ||
        !host->now_ns || !host->config_get || !host->add_device ||
        !host->emit || !host->name_stream) {
        plugin_set_reason(reason, reason_cap, "host lacks ABI 1.0 functions");
        return ACT_PLUGIN_DECLINE;
    }
    fork_reset(); /* a child whose fork handlers ran in another order */
    if (g_forked_from_cupti) {
        plugin_set_reason(reason, reason_cap,
                          "this process was forked from one that used CUPTI: CUPTI (like "
                          "CUDA) cannot be used in a forked child; its GPU activity is not "
                          "traced (start GPU workers with spawn or exec)");
        return ACT_PLUGIN_DECLINE;
    }
    if (atomic_load(&g_cp)) {
        plugin_set_reason(reason, reason_cap,
                          "already loaded: CUPTI allows one instance per process");
        return ACT_PLUGIN_DECLINE;
    }
    cupti_plugin *cp = calloc(1, sizeof *cp);
    if (!cp) {
        plugin_set_reason(reason, reason_cap, "out of memory");
        return ACT_PLUGIN_ENOMEM;
    }
    cp->host = host;
    pthread_mutex_init(&cp->lock, NULL);
    char why[512];
    if (cu_cupti_load(&cp->api, why, sizeof why) != 0) {
        plugin_set_reason(reason, reason_cap, "no CUPTI library (%s)", why);
        cp_free(cp);
        return ACT_PLUGIN_DECLINE;
    }
    if (cu_driver_load(&cp->drv, why, sizeof why) != 0) {
        plugin_set_reason(reason, reason_cap, "no CUDA driver (%s)", why);
        cp_free(cp);
        return ACT_PLUGIN_DECLINE;
    }
    const char *nodev = no_device(cp, why, sizeof why);
    if (nodev) {
        plugin_set_reason(reason, reason_cap, "%s", nodev);
        cp_free(cp);
        return ACT_PLUGIN_DECLINE;
    }
    choose_kinds(cp);
    int want_pm = selected(cp, ACT_GPU_PM_COUNTER);
    if (!cp->nkinds && !want_pm) {
        plugin_set_reason(reason, reason_cap,
                          "no GPU activity type is selected (ACTIVITY_TYPES)");
        cp_free(cp);
        return ACT_PLUGIN_DECLINE;
    }

    /* Buffers: ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB bounds what is held. */
    long mb = config_long(cp, "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB", 128);
    if (mb < 1)
        mb = 1;
    cp->max_bytes = (size_t)mb << 20;
    cp->buf_bytes = CP_BUFFER_BYTES;
    while (cp->buf_bytes > CP_MIN_BUFFER_BYTES &&
           cp->buf_bytes * 4 > cp->max_bytes)
        cp->buf_bytes /= 2;

    CUptiResult rc = cp->api.Subscribe(&cp->sub, cb_api, cp);
    if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        plugin_set_reason(reason, reason_cap,
                          "another CUPTI client is attached (Nsight Systems, "
                          "another profiler): %s",
                          cu_result_str(&cp->api, rc));
        cp_free(cp);
        return ACT_PLUGIN_DECLINE;
    }
    if (rc != CUPTI_SUCCESS) {
        plugin_set_reason(reason, reason_cap, "cuptiSubscribe failed: %s",
                          cu_result_str(&cp->api, rc));
        cp_free(cp);
        return ACT_PLUGIN_DECLINE;
    }
    cp->subscribed = 1;
    ct_init(&cp->ct, host, &cp->api, &cp->drv);
    g_cp_pid = getpid();
    atomic_store_explicit(&g_cp, cp, memory_order_release);

    /* The clock first, before any kind is enabled. */
    if (cp->api.ActivityRegisterTimestampCallback)
        rc = cp->api.ActivityRegisterTimestampCallback(cb_timestamp);
    else
        rc = CUPTI_ERROR_NOT_SUPPORTED;
    if (rc != CUPTI_SUCCESS)
        plugin_log(cp->host, ACT_PLUGIN_LOG_WARN,
                   "cannot put CUPTI on the host clock (%s): device times may "
                   "be offset", cu_result_str(&cp->api, rc));
    if (cp->api.SetThreadIdType)
        cp->api.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    rc = cp->api.ActivityRegisterCallbacks(cb_buffer_request,
                                           cb_buffer_complete);
    if (rc != CUPTI_SUCCESS) {
        plugin_set_reason(reason, reason_cap,
                          "cuptiActivityRegisterCallbacks failed: %s",
                          cu_result_str(&cp->api, rc));
        pthread_mutex_lock(&g_complete_lock);
        atomic_store(&g_cp, NULL);
        g_cp_pid = 0;
        pthread_mutex_unlock(&g_complete_lock);
        cp->api.Unsubscribe(cp->sub);
        cp_free(cp);
        return ACT_PLUGIN_DECLINE;
    }
    if (want_pm) {
        char pmwhy[1024];
        pmwhy[0] = '\0';
        cp->pm = cp_pm_create(host, &cp->api, &cp->drv, pm_device, cp, pmwhy,
                              sizeof pmwhy);
        if (!cp->pm)
            plugin_log(cp->host, ACT_PLUGIN_LOG_WARN, "PM sampling off: %s", pmwhy);
        else if (cp->api.EnableCallback)
            /* PM sampling waits for the program to initialise CUDA. */
            cp->api.EnableCallback(1, cp->sub, CUPTI_CB_DOMAIN_RESOURCE,
                                   CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    }
    *state = cp;
    return ACT_PLUGIN_OK;
}

static void cp_start(void *state)
{
    cupti_plugin *cp = state;
    if (!cp->enabled) {
        if (cp->ext_corr) {
            cp->api.EnableDomain(1, cp->sub, CUPTI_CB_DOMAIN_RUNTIME_API);
            cp->api.EnableDomain(1, cp->sub, CUPTI_CB_DOMAIN_DRIVER_API);
        }
        for (int i = 0; i < cp->nkinds; i++) {
            CUptiResult rc = cp->api.ActivityEnable(cp->kinds[i]);
            if (rc != CUPTI_SUCCESS)
                plugin_log(cp->host, ACT_PLUGIN_LOG_WARN,
                           "cuptiActivityEnable(%d): %s", (int)cp->kinds[i],
                           cu_result_str(&cp->api, rc));
        }
        cp->enabled = 1;
    }
    if (cp->pm)
        cp_pm_start(cp->pm);
}

static void cp_stop(void *state)
{
    cupti_plugin *cp = state;
    if (cp->pm)
        cp_pm_stop(cp->pm);
    if (!cp->enabled)
        return;
    for (int i = 0; i < cp->nkinds; i++)
        cp->api.ActivityDisable(cp->kinds[i]);
    if (cp->ext_corr) {
        cp->api.EnableDomain(0, cp->sub, CUPTI_CB_DOMAIN_RUNTIME_API);
        cp->api.EnableDomain(0, cp->sub, CUPTI_CB_DOMAIN_DRIVER_API);
    }
    cp->enabled = 0;
}

static void cp_flush(void *state)
{
    cupti_plugin *cp = state;
    if (cp->api.ActivityFlushAll)
        cp->api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (cp->pm)
        cp_pm_flush(cp->pm);
    uint64_t dropped = atomic_load(&cp->cupti_dropped);
    uint64_t refused = atomic_load(&cp->buffers_refused);
    pthread_mutex_lock(&cp->lock);
    uint64_t bad = cp->ct.bad + cp->ct.no_device;
    pthread_mutex_unlock(&cp->lock);
    if (dropped + refused + bad > cp->dropped_reported) {
        plugin_log(cp->host, ACT_PLUGIN_LOG_WARN,
                   "%" PRIu64 " CUPTI activity records dropped, %" PRIu64
                   " buffer requests refused (ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB"
                   "=%zu), %" PRIu64 " records refused by the host or of a "
                   "device that could not be described",
                   dropped, refused, cp->max_bytes >> 20, bad);
        cp->dropped_reported = dropped + refused + bad;
    }
}

static void cp_finalize(void *state)
{
    cupti_plugin *cp = state;
    cp_stop(cp);
    if (cp->pm)
        cp_pm_destroy(cp->pm);
    /* No host call after finalize: from here on, completed buffers are
     * freed untranslated (the callbacks find no instance). */
    pthread_mutex_lock(&g_complete_lock);
    atomic_store_explicit(&g_cp, NULL, memory_order_release);
    g_cp_pid = 0;
    pthread_mutex_unlock(&g_complete_lock);
    if (cp->api.ActivityFlushAll)
        cp->api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (cp->subscribed)
        cp->api.Unsubscribe(cp->sub);
    cp_free(cp);
}

static const int32_t cp_types[] = {
    ACT_CONCURRENT_KERNEL, ACT_GPU_MEMCPY, ACT_GPU_MEMSET, ACT_RUNTIME,
    ACT_DRIVER,            ACT_CUDA_SYNC, ACT_CUDA_EVENT, ACT_OVERHEAD,
    ACT_GPU_PM_COUNTER,
};

static const act_plugin cp_table = {
    .struct_size = sizeof(act_plugin),
    .abi_major = ACT_PLUGIN_ABI_MAJOR,
    .abi_minor = ACT_PLUGIN_ABI_MINOR,
    .name = "cupti",
    .backend = "cuda",
    .version = "1.0.0",
    .types = cp_types,
    .ntypes = sizeof cp_types / sizeof cp_types[0],
    .init = cp_init,
    .start = cp_start,
    .stop = cp_stop,
    .flush = cp_flush,
    .finalize = cp_finalize,
};

ACT_PLUGIN_EXPORT const act_plugin *
act_plugin_entry(const act_plugin_host *host, uint32_t host_abi_major,
                 uint32_t host_abi_minor)
{
    (void)host;
    (void)host_abi_minor;
    if (host_abi_major != ACT_PLUGIN_ABI_MAJOR)
        return NULL;
    return &cp_table;
}
