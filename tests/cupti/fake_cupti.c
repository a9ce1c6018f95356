/* SPDX-License-Identifier: MIT */
/*
 * libfakecupti.so: a stand-in for libcupti with just what the cupti
 * plugin's glue (plugins/cupti/cupti.c) calls, so PluginCuptiFake can run
 * the plugin end to end in a real session without a GPU. It records what
 * the plugin asked for (kinds enabled, the order of the timestamp callback
 * and the first enable, the thread id type, subscription), and
 * fake_launch() plays a cudaLaunchKernel: API enter and exit callbacks to
 * the subscriber, then an EXTERNAL_CORRELATION record (when the plugin
 * pushed an id), a RUNTIME record and a kernel record, stamped with the
 * plugin's timestamp callback. cuptiActivityFlushAll hands them over
 * through the plugin's buffer callbacks. Test-only; never installed.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cupti.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct fake_state {
    int subscribed, busy;
    int enabled[CUPTI_ACTIVITY_KIND_COUNT];
    int ever_enabled[CUPTI_ACTIVITY_KIND_COUNT];
    int ts_before_enable; /* timestamp callback registered before any enable */
    int any_enable;
    int thread_id_type;
    int domains[8];
    int pushes, pops;
    int flushes;
    size_t dropped_to_report;
} fake_state;

static fake_state st;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_CallbackFunc sub_cb;
static void *sub_user;
static CUpti_BuffersCallbackRequestFunc req_cb;
static CUpti_BuffersCallbackCompleteFunc done_cb;
static CUpti_TimestampCallbackFunc ts_cb;
static uint64_t ext_stack[16];
static int ext_depth;
static uint8_t pending[1 << 16];
static size_t npending;
static uint32_t next_corr = 100;

EXPORT const fake_state *fake_state_get(void) { return &st; }
EXPORT void fake_set_busy(int busy) { st.busy = busy; }
EXPORT void fake_set_dropped(size_t n) { st.dropped_to_report = n; }
EXPORT void fake_reset(void)
{
    pthread_mutex_lock(&lock);
    int busy = st.busy;
    memset(&st, 0, sizeof st);
    st.busy = busy;
    ts_cb = NULL;
    npending = 0;
    pthread_mutex_unlock(&lock);
}

static void *put(size_t size)
{
    if (npending + size > sizeof pending)
        return NULL;
    void *p = pending + npending;
    memset(p, 0, size);
    npending += (size + 7) & ~(size_t)7;
    return p;
}

static uint64_t now(void)
{
    return ts_cb ? ts_cb() : 0;
}

/* Plays cudaLaunchKernel of @p name on @p stream. */
EXPORT void fake_launch(const char *name, uint32_t stream)
{
    uint32_t corr = __atomic_add_fetch(&next_corr, 1, __ATOMIC_RELAXED);
    uint64_t cdata = 0;
    CUpti_CallbackData cb;
    memset(&cb, 0, sizeof cb);
    cb.functionName = "cudaLaunchKernel";
    cb.correlationId = corr;
    cb.correlationData = &cdata;
    int rt_on = st.domains[CUPTI_CB_DOMAIN_RUNTIME_API];
    uint64_t t0 = now();
    uint64_t ext = 0;
    if (rt_on && sub_cb) {
        cb.callbackSite = CUPTI_API_ENTER;
        sub_cb(sub_user, CUPTI_CB_DOMAIN_RUNTIME_API,
               CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &cb);
    }
    pthread_mutex_lock(&lock);
    if (ext_depth > 0)
        ext = ext_stack[ext_depth - 1];
    pthread_mutex_unlock(&lock);
    uint64_t t1 = now();
    if (rt_on && sub_cb) {
        cb.callbackSite = CUPTI_API_EXIT;
        sub_cb(sub_user, CUPTI_CB_DOMAIN_RUNTIME_API,
               CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &cb);
    }
    pthread_mutex_lock(&lock);
    if (ext && st.enabled[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION]) {
        CUpti_ActivityExternalCorrelation *x = put(sizeof *x);
        if (x) {
            x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
            x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
            x->externalId = ext;
            x->correlationId = corr;
        }
    }
    if (st.enabled[CUPTI_ACTIVITY_KIND_RUNTIME]) {
        CUpti_ActivityAPI *a = put(sizeof *a);
        if (a) {
            a->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
            a->cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
            a->start = t0;
            a->end = t1 > t0 ? t1 : t0 + 1;
            a->processId = (uint32_t)getpid();
            a->threadId = (uint32_t)syscall(SYS_gettid);
            a->correlationId = corr;
        }
    }
    if (st.enabled[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]) {
        CUpti_ActivityKernel10 *k = put(sizeof *k);
        if (k) {
            k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            k->start = t1 + 1000;
            k->end = t1 + 21000;
            k->streamId = stream;
            k->correlationId = corr;
            k->name = name;
            k->gridX = k->gridY = k->gridZ = 1;
            k->blockX = 32;
            k->blockY = k->blockZ = 1;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* ---- the CUPTI API the plugin uses ------------------------------------------ */

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
    *s = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
             ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
             : "CUPTI_FAKE_ERROR";
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t cbid,
                                        const char **name)
{
    (void)cbid;
    *name = d == CUPTI_CB_DOMAIN_RUNTIME_API ? "cudaLaunchKernel_v7000"
                                             : "cuLaunchKernel";
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *h,
                                  CUpti_CallbackFunc cb, void *user)
{
    if (st.busy)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    st.subscribed = 1;
    sub_cb = cb;
    sub_user = user;
    *h = (CUpti_SubscriberHandle)&st;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle h)
{
    (void)h;
    st.subscribed = 0;
    sub_cb = NULL;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t on, CUpti_SubscriberHandle h,
                                     CUpti_CallbackDomain d)
{
    (void)h;
    if ((unsigned)d < 8)
        st.domains[d] = (int)on;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle h,
                                       CUpti_CallbackDomain d,
                                       CUpti_CallbackId id)
{
    (void)on, (void)h, (void)d, (void)id;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind k)
{
    if ((unsigned)k >= CUPTI_ACTIVITY_KIND_COUNT)
        return CUPTI_ERROR_INVALID_KIND;
    if (!st.any_enable)
        st.ts_before_enable = ts_cb != NULL;
    st.any_enable = 1;
    st.enabled[k] = 1;
    st.ever_enabled[k] = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind k)
{
    if ((unsigned)k >= CUPTI_ACTIVITY_KIND_COUNT)
        return CUPTI_ERROR_INVALID_KIND;
    st.enabled[k] = 0;
    return CUPTI_SUCCESS;
}

static size_t kind_size(CUpti_ActivityKind k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        return sizeof(CUpti_ActivityExternalCorrelation);
    default: return 0;
    }
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid,
                                              CUpti_Activity **rec)
{
    size_t off = 0;
    if (*rec) {
        size_t sz = kind_size((*rec)->kind);
        if (!sz)
            return CUPTI_ERROR_INVALID_KIND;
        off = (size_t)((uint8_t *)*rec - buf) + ((sz + 7) & ~(size_t)7);
    }
    if (off + sizeof(CUpti_Activity) > valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *rec = (CUpti_Activity *)(void *)(buf + off);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s,
                                                     size_t *n)
{
    (void)c, (void)s;
    *n = st.dropped_to_report;
    st.dropped_to_report = 0;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(
    CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done)
{
    req_cb = req;
    done_cb = done;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(
    CUpti_TimestampCallbackFunc f)
{
    ts_cb = f;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    st.flushes++;
    if (!req_cb || !done_cb)
        return CUPTI_SUCCESS;
    pthread_mutex_lock(&lock);
    size_t n = npending;
    uint8_t *copy = NULL;
    if (n) {
        copy = malloc(n);
        if (copy)
            memcpy(copy, pending, n);
        npending = 0;
    }
    pthread_mutex_unlock(&lock);
    if (!n && !st.dropped_to_report) {
        free(copy);
        return CUPTI_SUCCESS;
    }
    uint8_t *buf = NULL;
    size_t size = 0, maxrec = 0;
    req_cb(&buf, &size, &maxrec);
    if (buf && size >= n) {
        if (n)
            memcpy(buf, copy, n);
        done_cb(NULL, 0, buf, size, n);
    } else if (buf) {
        done_cb(NULL, 0, buf, size, 0);
    }
    free(copy);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityPushExternalCorrelationId(
    CUpti_ExternalCorrelationKind k, uint64_t id)
{
    (void)k;
    pthread_mutex_lock(&lock);
    if (ext_depth < 16)
        ext_stack[ext_depth++] = id;
    st.pushes++;
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityPopExternalCorrelationId(
    CUpti_ExternalCorrelationKind k, uint64_t *last)
{
    (void)k;
    pthread_mutex_lock(&lock);
    if (ext_depth > 0)
        ext_depth--;
    if (last)
        *last = ext_stack[ext_depth];
    st.pops++;
    pthread_mutex_unlock(&lock);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType t)
{
    st.thread_id_type = (int)t;
    return CUPTI_SUCCESS;
}
