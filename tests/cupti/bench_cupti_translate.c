/* SPDX-License-Identifier: MIT */
/*
 * act-bench-cupti: cost of the cupti plugin's translation per CUPTI
 * record, without a GPU. A 300k-record buffer (runtime call, kernel, copy,
 * repeated) is walked (1) by cuptiActivityGetNextRecord alone, the
 * baseline CUPTI imposes on any consumer, and (2) through ct_buffer into a
 * host whose emit() only counts. Prints ns/record for both and their
 * ratio, best of 5 runs. Not a test: run by hand (make bench does not).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cupti_api.h"
#include "cupti_translate.h"

static uint64_t emitted;

static int32_t f_emit(act_plugin_ctx *c, const act_plugin_record *r,
                      uint32_t n)
{
    (void)c;
    (void)r;
    emitted += n;
    return (int32_t)n;
}
static int32_t f_add_device(act_plugin_ctx *c, const act_plugin_device *d,
                            uint32_t *out)
{
    (void)c;
    (void)d;
    *out = 0;
    return 0;
}
static int32_t f_name_stream(act_plugin_ctx *c, uint32_t d, uint64_t s,
                             const char *n, uint32_t l)
{
    (void)c, (void)d, (void)s, (void)n, (void)l;
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
    cu_cupti api;
    char why[256];
    if (cu_cupti_load(&api, why, sizeof why) != 0) {
        fprintf(stderr, "no libcupti: %s\n", why);
        return 77;
    }
    enum { TRIPLES = 100000 };
    size_t cap = (size_t)TRIPLES * 400;
    uint8_t *buf = aligned_alloc(8, cap);
    if (!buf)
        return 1;
    size_t used = 0;
    for (uint32_t i = 0; i < TRIPLES; i++) {
        CUpti_ActivityAPI *a = (void *)(buf + used);
        memset(a, 0, sizeof *a);
        a->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
        a->cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
        a->start = 1000 + i * 100ull;
        a->end = a->start + 5;
        a->threadId = 7;
        a->correlationId = i + 1;
        used += sizeof *a;
        CUpti_ActivityKernel10 *k = (void *)(buf + used);
        memset(k, 0, sizeof *k);
        k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k->start = a->start + 10;
        k->end = k->start + 50;
        k->streamId = 7 + i % 4;
        k->correlationId = i + 1;
        k->name = "_Z6vecAddPKfS0_Pfi";
        k->gridX = k->gridY = k->gridZ = k->blockX = k->blockY = k->blockZ = 1;
        used += sizeof *k;
        CUpti_ActivityMemcpy6 *m = (void *)(buf + used);
        memset(m, 0, sizeof *m);
        m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        m->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
        m->bytes = 4096;
        m->start = k->end;
        m->end = m->start + 20;
        m->streamId = 7;
        m->correlationId = i + 1;
        used += sizeof *m;
    }
    const double nrec = 3.0 * TRIPLES;
    act_plugin_host host;
    memset(&host, 0, sizeof host);
    host.struct_size = sizeof host;
    host.emit = f_emit;
    host.add_device = f_add_device;
    host.name_stream = f_name_stream;
    ct_ctx *ct = calloc(1, sizeof *ct);
    if (!ct)
        return 1;
    ct_init(ct, &host, &api, NULL);
    double best_walk = 1e9, best_tr = 1e9;
    for (int run = 0; run < 5; run++) {
        double t0 = now_s();
        CUpti_Activity *r = NULL;
        uint64_t sum = 0;
        while (api.ActivityGetNextRecord(buf, used, &r) == CUPTI_SUCCESS)
            sum += r->kind;
        double t1 = now_s();
        emitted = 0;
        ct_buffer(ct, buf, used);
        double t2 = now_s();
        if (sum == 0 || emitted != (uint64_t)nrec) {
            fprintf(stderr, "bad run: %llu emitted\n",
                    (unsigned long long)emitted);
            return 1;
        }
        if (t1 - t0 < best_walk)
            best_walk = t1 - t0;
        if (t2 - t1 < best_tr)
            best_tr = t2 - t1;
    }
    printf("cupti_walk_ns_per_record %.1f\n", best_walk * 1e9 / nrec);
    printf("cupti_translate_ns_per_record %.1f\n", best_tr * 1e9 / nrec);
    printf("cupti_translate_over_walk %.2f\n", best_tr / best_walk);
    ct_fini(ct);
    free(ct);
    free(buf);
    return 0;
}
