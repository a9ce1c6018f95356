/* SPDX-License-Identifier: MIT */
/*
 * PM sampling (see cupti_pm.h). The host half follows the sequence of
 * Kineto's CuptiPMSamplingApi: cuptiProfilerHostInitialize for the chip,
 * ConfigAddMetrics, GetNumOfPasses (a configuration must fit one pass),
 * GetConfigImage; metric units come from GetMetricProperties.
 *
 * Decoding goes through a cp_pm_source, so the path from decoded samples
 * to counter tracks (timestamps to the host clock, one track per metric,
 * overflow counting) is the same for CUPTI's decoder and a test stub.
 *
 * The device half (cuptiProfilerInitialize, chip name and counter
 * availability of the device, PmSamplingEnable/SetConfig/Start and a
 * decode thread) is not implemented yet: cp_pm_create declines with that
 * reason, so gpu_pm_counter stays empty on a GPU (docs/cupti.md).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_pm.h"

/* ---- host half ------------------------------------------------------------- */

static int host_open(const cu_cupti *api, const char *chip,
                     const uint8_t *avail, CUpti_Profiler_Host_Object **obj,
                     char *msg, size_t cap)
{
    if (!api->ProfilerHostInitialize || !api->ProfilerHostDeinitialize) {
        snprintf(msg, cap, "libcupti lacks the profiler host API");
        return -1;
    }
    CUpti_Profiler_Host_Initialize_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    p.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
    p.pChipName = chip;
    p.pCounterAvailabilityImage = avail;
    CUptiResult rc = api->ProfilerHostInitialize(&p);
    if (rc != CUPTI_SUCCESS || !p.pHostObject) {
        snprintf(msg, cap, "chip '%s': cuptiProfilerHostInitialize: %s",
                 chip, cu_result_str(api, rc));
        return -1;
    }
    *obj = p.pHostObject;
    return 0;
}

static void host_close(const cu_cupti *api, CUpti_Profiler_Host_Object *obj)
{
    CUpti_Profiler_Host_Deinitialize_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
    p.pHostObject = obj;
    api->ProfilerHostDeinitialize(&p);
}

static const CUpti_MetricType metric_types[] = {
    CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO,
    CUPTI_METRIC_TYPE_THROUGHPUT};

static int list_obj(const cu_cupti *api, CUpti_Profiler_Host_Object *obj,
                    void (*fn)(void *, const char *, const char *,
                               const char *),
                    void *u)
{
    int n = 0;
    for (size_t t = 0; t < sizeof metric_types / sizeof metric_types[0];
         t++) {
        CUpti_Profiler_Host_GetBaseMetrics_Params b;
        memset(&b, 0, sizeof b);
        b.structSize = CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE;
        b.pHostObject = obj;
        b.metricType = metric_types[t];
        if (api->ProfilerHostGetBaseMetrics(&b) != CUPTI_SUCCESS)
            continue;
        for (size_t i = 0; i < b.numMetrics; i++) {
            const char *desc = "", *unit = "";
            CUpti_Profiler_Host_GetMetricProperties_Params mp;
            memset(&mp, 0, sizeof mp);
            mp.structSize =
                CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
            mp.pHostObject = obj;
            mp.pMetricName = b.ppMetricNames[i];
            if (api->ProfilerHostGetMetricProperties &&
                api->ProfilerHostGetMetricProperties(&mp) == CUPTI_SUCCESS) {
                desc = mp.pDescription ? mp.pDescription : "";
                unit = mp.pDimUnit ? mp.pDimUnit : "";
            }
            if (fn)
                fn(u, b.ppMetricNames[i], desc, unit);
            n++;
        }
    }
    return n;
}

int cp_pm_list(const cu_cupti *api, const char *chip,
               void (*fn)(void *, const char *, const char *, const char *),
               void *u, char *msg, size_t cap)
{
    CUpti_Profiler_Host_Object *obj = NULL;
    if (!api->ProfilerHostGetBaseMetrics) {
        snprintf(msg, cap, "libcupti lacks cuptiProfilerHostGetBaseMetrics");
        return -1;
    }
    if (host_open(api, chip, NULL, &obj, msg, cap) != 0)
        return -1;
    int n = list_obj(api, obj, fn, u);
    host_close(api, obj);
    return n;
}

int cp_pm_unit(const cu_cupti *api, const char *chip, const char *metric,
               char *out, size_t cap)
{
    char msg[256];
    CUpti_Profiler_Host_Object *obj = NULL;
    out[0] = '\0';
    if (!api->ProfilerHostGetMetricProperties ||
        host_open(api, chip, NULL, &obj, msg, sizeof msg) != 0)
        return -1;
    /* Properties belong to the base metric ("sm__throughput"). */
    char base[256];
    snprintf(base, sizeof base, "%s", metric);
    char *dot = strchr(base, '.');
    if (dot)
        *dot = '\0';
    CUpti_Profiler_Host_GetMetricProperties_Params mp;
    memset(&mp, 0, sizeof mp);
    mp.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
    mp.pHostObject = obj;
    mp.pMetricName = base;
    int rc = api->ProfilerHostGetMetricProperties(&mp) == CUPTI_SUCCESS ? 0
                                                                        : -1;
    if (rc == 0) {
        const char *unit = mp.pDimUnit ? mp.pDimUnit : "";
        /* A pct_of_peak submetric is a percentage whatever the base's unit. */
        if (strstr(metric, ".pct_of_peak"))
            unit = "%";
        if (strstr(metric, ".per_second"))
            snprintf(out, cap, "%s/second", *unit ? unit : "1");
        else
            snprintf(out, cap, "%s", unit);
    }
    host_close(api, obj);
    return rc;
}

/* Splits a comma list into trimmed names in @p buf. Returns the count. */
static int split(const char *list, char *buf, size_t cap, const char **names,
                 int max)
{
    snprintf(buf, cap, "%s", list ? list : "");
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < max;
         t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ' || *t == '\t')
            t++;
        char *e = t + strlen(t);
        while (e > t && (e[-1] == ' ' || e[-1] == '\t'))
            *--e = '\0';
        if (*t)
            names[n++] = t;
    }
    return n;
}

static int add_metrics(const cu_cupti *api, CUpti_Profiler_Host_Object *obj,
                       const char **names, size_t n)
{
    CUpti_Profiler_Host_ConfigAddMetrics_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
    p.pHostObject = obj;
    p.ppMetricNames = names;
    p.numMetrics = n;
    return api->ProfilerHostConfigAddMetrics(&p) == CUPTI_SUCCESS ? 0 : -1;
}

/* Config image of what was added to @p obj (malloc'ed) and its passes.
 * Returns 1 when CUPTI gives no image: without a device's counter
 * availability image, GetConfigImageSize answers 0 bytes (CUDA 13.0). */
static int config_image(const cu_cupti *api, CUpti_Profiler_Host_Object *obj,
                        uint8_t **img, size_t *len, size_t *passes)
{
    CUpti_Profiler_Host_GetConfigImageSize_Params s;
    memset(&s, 0, sizeof s);
    s.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
    s.pHostObject = obj;
    if (api->ProfilerHostGetConfigImageSize(&s) != CUPTI_SUCCESS)
        return -1;
    if (!s.configImageSize)
        return 1;
    uint8_t *buf = malloc(s.configImageSize);
    if (!buf)
        return -1;
    CUpti_Profiler_Host_GetConfigImage_Params g;
    memset(&g, 0, sizeof g);
    g.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
    g.pHostObject = obj;
    g.configImageSize = s.configImageSize;
    g.pConfigImage = buf;
    CUpti_Profiler_Host_GetNumOfPasses_Params np;
    memset(&np, 0, sizeof np);
    np.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
    np.configImageSize = s.configImageSize;
    np.pConfigImage = buf;
    if (api->ProfilerHostGetConfigImage(&g) != CUPTI_SUCCESS ||
        api->ProfilerHostGetNumOfPasses(&np) != CUPTI_SUCCESS) {
        free(buf);
        return -1;
    }
    *img = buf;
    *len = s.configImageSize;
    *passes = np.numOfPasses;
    return 0;
}

typedef struct listbuf {
    char *p;
    size_t len, cap;
    int n;
} listbuf;

static void list_into(void *u, const char *name, const char *desc,
                      const char *unit)
{
    (void)desc;
    (void)unit;
    listbuf *l = u;
    if (l->len + 8 >= l->cap)
        return;
    int w = snprintf(l->p + l->len, l->cap - l->len, "%s%s",
                     l->n++ ? ", " : "", name);
    if (w > 0)
        l->len += (size_t)w < l->cap - l->len ? (size_t)w : l->cap - l->len - 1;
}

int cp_pm_check(const cu_cupti *api, const char *chip, const char *metrics,
                const uint8_t *avail, uint8_t **image, size_t *image_len,
                char *msg, size_t cap)
{
    if (!api->ProfilerHostConfigAddMetrics ||
        !api->ProfilerHostGetConfigImageSize ||
        !api->ProfilerHostGetConfigImage || !api->ProfilerHostGetNumOfPasses) {
        snprintf(msg, cap, "libcupti lacks the profiler host API");
        return -1;
    }
    char buf[4096];
    const char *names[CP_PM_MAX_METRICS];
    int n = split(metrics, buf, sizeof buf, names, CP_PM_MAX_METRICS);
    if (n == 0) {
        snprintf(msg, cap, "no metric named");
        return -1;
    }
    CUpti_Profiler_Host_Object *obj = NULL;
    if (host_open(api, chip, avail, &obj, msg, cap) != 0)
        return -1;
    /* Unknown names first: each one alone, on a fresh host object. */
    char bad[1024];
    size_t blen = 0;
    int nbad = 0;
    bad[0] = '\0';
    for (int i = 0; i < n; i++) {
        CUpti_Profiler_Host_Object *one = NULL;
        char m2[256];
        if (host_open(api, chip, avail, &one, m2, sizeof m2) != 0)
            break;
        if (add_metrics(api, one, &names[i], 1) != 0) {
            int w = snprintf(bad + blen, sizeof bad - blen, "%s'%s'",
                             nbad++ ? ", " : "", names[i]);
            if (w > 0 && (size_t)w < sizeof bad - blen)
                blen += (size_t)w;
        }
        host_close(api, one);
    }
    if (nbad) {
        char *all = malloc(65536);
        listbuf l = {all, 0, all ? 65536 : 0, 0};
        if (all) {
            all[0] = '\0';
            list_obj(api, obj, list_into, &l);
        }
        snprintf(msg, cap,
                 "unknown metric%s %s on chip %s (a metric is a base name "
                 "with a rollup, e.g. sm__throughput.avg.pct_of_peak_"
                 "sustained_elapsed); base metrics of %s: %s",
                 nbad > 1 ? "s" : "", bad, chip, chip, all ? all : "?");
        free(all);
        host_close(api, obj);
        return -1;
    }
    /* One pass: add metrics one by one; a metric that makes the set need
     * a second pass is one to drop. */
    char drop[1024];
    size_t dlen = 0;
    int ndrop = 0;
    const char *kept[CP_PM_MAX_METRICS];
    int nkept = 0;
    drop[0] = '\0';
    for (int i = 0; i < n; i++) {
        CUpti_Profiler_Host_Object *trial = NULL;
        char m2[256];
        if (host_open(api, chip, avail, &trial, m2, sizeof m2) != 0)
            break;
        kept[nkept] = names[i];
        uint8_t *img = NULL;
        size_t len = 0, passes = 0;
        int ok = add_metrics(api, trial, kept, (size_t)nkept + 1) == 0;
        int ci = ok ? config_image(api, trial, &img, &len, &passes) : -1;
        ok = ok && (ci == 1 || (ci == 0 && passes <= 1));
        free(img);
        host_close(api, trial);
        if (ok) {
            nkept++;
        } else {
            int w = snprintf(drop + dlen, sizeof drop - dlen, "%s%s",
                             ndrop++ ? ", " : "", names[i]);
            if (w > 0 && (size_t)w < sizeof drop - dlen)
                dlen += (size_t)w;
        }
    }
    if (ndrop) {
        snprintf(msg, cap,
                 "these metrics need more than one pass on %s (PM sampling "
                 "takes one): drop %s",
                 chip, drop);
        host_close(api, obj);
        return -1;
    }
    uint8_t *img = NULL;
    size_t len = 0, passes = 0;
    int ci = add_metrics(api, obj, names, (size_t)n) == 0
                 ? config_image(api, obj, &img, &len, &passes)
                 : -1;
    host_close(api, obj);
    if (ci < 0 || (ci == 1 && avail)) {
        snprintf(msg, cap, "cannot build the configuration for %s", chip);
        return -1;
    }
    if (ci == 1)
        snprintf(msg, cap,
                 "%d metric%s known; pass count not checked (CUPTI builds "
                 "the config image only with a device's counter "
                 "availability image)",
                 n, n > 1 ? "s" : "");
    else
        snprintf(msg, cap, "%d metric%s, 1 pass, config image %zu bytes", n,
                 n > 1 ? "s" : "", len);
    if (image) {
        *image = img;
        *image_len = len;
    } else {
        free(img);
    }
    return 0;
}

/* ---- decoding -------------------------------------------------------------- */

int cp_pm_sink_init(cp_pm_sink *s, const act_plugin_host *host,
                    uint32_t device, const char *const *metrics,
                    const char *const *units, uint32_t n)
{
    memset(s, 0, sizeof *s);
    s->host = host;
    if (n > CP_PM_MAX_METRICS)
        return ACT_PLUGIN_EINVAL;
    for (uint32_t i = 0; i < n; i++) {
        act_plugin_counter c;
        memset(&c, 0, sizeof c);
        c.struct_size = sizeof c;
        c.device = device;
        c.track = metrics[i];
        c.series = "value";
        c.unit = units && units[i] && *units[i] ? units[i] : NULL;
        int32_t rc = host->add_counter(host->ctx, &c, &s->track[i]);
        if (rc != 0)
            return rc;
    }
    s->nmetrics = n;
    return 0;
}

int cp_pm_drain(cp_pm_sink *s, const cp_pm_source *src)
{
    enum { CAP = 64 };
    static _Thread_local cp_pm_sample buf[CAP];
    static _Thread_local act_plugin_sample out[CAP];
    int total = 0;
    for (;;) {
        int overflow = 0;
        int n = src->read(src->u, buf, CAP, &overflow);
        if (overflow)
            s->overflows++;
        if (n < 0)
            return -1;
        if (n == 0)
            return total;
        for (uint32_t m = 0; m < s->nmetrics; m++) {
            uint32_t k = 0;
            for (int i = 0; i < n; i++) {
                double v = buf[i].values[m];
                int64_t ts = (int64_t)buf[i].start_gpu_ns + s->gpu_to_host_ns;
                if (!(v == v) || v > 1e300 || v < -1e300 || ts < 0) {
                    s->refused++; /* NaN/inf or before the epoch */
                    continue;
                }
                memset(&out[k], 0, sizeof out[k]);
                out[k].struct_size = sizeof out[k];
                out[k].ts_ns = ts;
                out[k].value = v;
                k++;
            }
            if (k)
                s->host->emit_samples(s->host->ctx, s->track[m], out, k);
        }
        s->samples += (uint64_t)n;
        total += n;
        if (n < CAP)
            return total;
    }
}

/* ---- device half ------------------------------------------------------------- */

cp_pm *cp_pm_create(const act_plugin_host *host, const cu_cupti *api,
                    ct_ctx *ct, char *why, size_t cap)
{
    (void)host;
    (void)api;
    (void)ct;
    snprintf(why, cap,
             "PM sampling on the device is not implemented in this version "
             "(metrics can be checked with actrace-cupti-metrics)");
    return NULL;
}

void cp_pm_start(cp_pm *pm) { (void)pm; }
void cp_pm_context_created(cp_pm *pm) { (void)pm; }
void cp_pm_stop(cp_pm *pm) { (void)pm; }
void cp_pm_flush(cp_pm *pm) { (void)pm; }
void cp_pm_destroy(cp_pm *pm) { (void)pm; }
