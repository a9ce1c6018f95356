/* SPDX-License-Identifier: MIT */
/*
 * An "unmodified" NVTX-annotated program for the nvtx plugin's tests. It
 * is compiled against the NVTX v3 headers only (no CUDA runtime, no GPU,
 * no actrace) and knows nothing of actrace. Its stdout does not depend on
 * whether a tool is attached: test_nvtx.c runs it with and without one
 * and compares.
 *
 * What it does, in order (test_nvtx.c checks each in the trace):
 *  - main: names its thread and category 7 ("io"); "outer" contains
 *    "inner" (Ex: category 7, red, int64 payload 42); a wide-string range;
 *    marks with every payload type; NULL and invalid UTF-8 messages;
 *  - a domain "mydomain" with category 3 "dom-cat", a registered string
 *    "registered-name" used for a push/pop and a start/end range in it,
 *    and a domain mark; a push/pop with a wild domain handle and a mark
 *    with a wild registered-string handle;
 *  - worker 1 and 2, each naming itself: "work-N" contains "step-N";
 *    worker 1 starts "cross", worker 2 ends it;
 *  - worker 3 pops without a push; main pops once too many at the end.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

static nvtxRangeId_t cross_id;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int cross_started;

static uint32_t tid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

static void busy(void)
{
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
}

static nvtxEventAttributes_t attrs(const char *msg)
{
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = msg;
    return a;
}

static void *worker(void *arg)
{
    int n = (int)(intptr_t)arg;
    char name[32], work[32], step[32];
    snprintf(name, sizeof name, "worker-%d", n);
    snprintf(work, sizeof work, "work-%d", n);
    snprintf(step, sizeof step, "step-%d", n);
    nvtxNameOsThreadA(tid(), name);
    if (n == 3) {
        nvtxRangePop(); /* nothing open on this thread */
        return NULL;
    }
    nvtxRangePushA(work);
    busy();
    nvtxRangePushA(step);
    busy();
    if (n == 1) {
        pthread_mutex_lock(&lock);
        cross_id = nvtxRangeStartA("cross");
        cross_started = 1;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
    } else {
        pthread_mutex_lock(&lock);
        while (!cross_started)
            pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);
        busy();
        nvtxRangeEnd(cross_id);
    }
    nvtxRangePop();
    busy();
    nvtxRangePop();
    return NULL;
}

int main(void)
{
    nvtxNameOsThreadA(tid(), "nvtx-main");
    nvtxNameCategoryA(7, "io");

    nvtxRangePushA("outer");
    busy();
    nvtxEventAttributes_t a = attrs("inner");
    a.category = 7;
    a.colorType = NVTX_COLOR_ARGB;
    a.color = 0xffff0000u;
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = 42;
    nvtxRangePushEx(&a);
    busy();
    nvtxRangePop();
    busy();
    nvtxRangePop();

    nvtxRangePushW(L"wide-\u00fc");
    nvtxRangePop();

    /* Marks with every scalar payload type. */
    nvtxMarkA("mark-a");
    nvtxMarkW(L"mark-w");
    a = attrs("mark-u64");
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = 9000000000000000000ull; /* > INT32, jansson-readable */
    nvtxMarkEx(&a);
    a = attrs("mark-i32");
    a.payloadType = NVTX_PAYLOAD_TYPE_INT32;
    a.payload.iValue = -5;
    nvtxMarkEx(&a);
    a = attrs("mark-u32");
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
    a.payload.uiValue = 4000000000u;
    nvtxMarkEx(&a);
    a = attrs("mark-double");
    a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    a.payload.dValue = 2.5;
    nvtxMarkEx(&a);
    a = attrs("mark-float");
    a.payloadType = NVTX_PAYLOAD_TYPE_FLOAT;
    a.payload.fValue = 0.25f;
    nvtxMarkEx(&a);

    /* Hostile strings: recorded as "(null)" / with U+FFFD. */
    nvtxRangePushA(NULL);
    nvtxRangePop();
    nvtxMarkA(NULL);
    nvtxMarkEx(NULL);
    nvtxRangePushA("bad\xff\xfeutf8");
    nvtxRangePop();

    /* A domain, its category and a registered string. */
    nvtxDomainHandle_t d = nvtxDomainCreateA("mydomain");
    nvtxDomainNameCategoryA(d, 3, "dom-cat");
    nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "registered-name");
    a = attrs(NULL);
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s;
    a.category = 3;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT32;
    a.payload.uiValue = 7;
    nvtxDomainRangePushEx(d, &a);
    busy();
    nvtxDomainRangePop(d);
    nvtxEventAttributes_t b = attrs("dom-range");
    nvtxRangeId_t r = nvtxDomainRangeStartEx(d, &b);
    busy();
    nvtxDomainRangeEnd(d, r);
    b = attrs("dom-mark");
    nvtxDomainMarkEx(d, &b);

    /* Wild handles: a tool must not dereference them. */
    nvtxDomainHandle_t wild = (nvtxDomainHandle_t)(uintptr_t)0xdeadbeefu;
    b = attrs("wild-domain");
    nvtxDomainRangePushEx(wild, &b);
    nvtxDomainRangePop(wild);
    a = attrs(NULL);
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = (nvtxStringHandle_t)(uintptr_t)0x1234567u;
    nvtxMarkEx(&a);

    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)(i + 1));
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);

    nvtxRangePop(); /* one too many */
    nvtxDomainDestroy(d);
    printf("nvtx_app: done\n");
    return 0;
}
