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
 * The device half follows Kineto's CuptiPMSamplingProfiler: once the
 * program has initialised CUDA (never cuInit here), cuptiProfilerInitialize,
 * the device's chip name and counter availability, the host config with
 * its one-pass check, PmSamplingEnable / SetConfig / counter data image,
 * Start, and a thread draining every 50 ms. Written against the
 * CUDA 13 headers; it has not run on a GPU yet (tests/gpu/run.sh is the
 * check).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cupti_pm.h"
#include "../plugin_util.h"

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
    const char *prefix; /* only base names starting so; NULL: all */
    size_t plen;
} listbuf;

static void list_into(void *u, const char *name, const char *desc,
                      const char *unit)
{
    (void)desc;
    (void)unit;
    listbuf *l = u;
    if (l->prefix && strncmp(name, l->prefix, l->plen) != 0)
        return;
    if (l->len + 8 >= l->cap)
        return;
    int w = snprintf(l->p + l->len, l->cap - l->len, "%s%s",
                     l->n++ ? ", " : "", name);
    if (w > 0)
        l->len += (size_t)w < l->cap - l->len ? (size_t)w : l->cap - l->len - 1;
}

/* The chip's base metrics for an unknown @p metric: those of its unit
 * ("sm__" of "sm__foo.avg") if any, else all of them. Returns the length
 * of the prefix used, 0 for all. Each pass opens its own host object:
 * CUPTI 13.0 appends to the names a host object returned before, so a
 * second GetBaseMetrics on one object lists every name twice. */
static size_t suggest(const cu_cupti *api, const char *chip,
                      const uint8_t *avail, const char *metric, char *out,
                      size_t cap)
{
    listbuf l = {out, 0, cap, 0, NULL, 0};
    char why[256];
    CUpti_Profiler_Host_Object *obj = NULL;
    out[0] = '\0';
    const char *us = strstr(metric, "__");
    if (us && us > metric && host_open(api, chip, avail, &obj, why,
                                       sizeof why) == 0) {
        l.prefix = metric;
        l.plen = (size_t)(us - metric) + 2;
        list_obj(api, obj, list_into, &l);
        host_close(api, obj);
        if (l.n > 0)
            return l.plen;
    }
    l.prefix = NULL;
    l.len = 0;
    out[0] = '\0';
    if (host_open(api, chip, avail, &obj, why, sizeof why) == 0) {
        list_obj(api, obj, list_into, &l);
        host_close(api, obj);
    }
    return 0;
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
    const char *first_bad = NULL;
    bad[0] = '\0';
    for (int i = 0; i < n; i++) {
        CUpti_Profiler_Host_Object *one = NULL;
        char m2[256];
        if (host_open(api, chip, avail, &one, m2, sizeof m2) != 0)
            break;
        if (add_metrics(api, one, &names[i], 1) != 0) {
            if (!first_bad)
                first_bad = names[i];
            int w = snprintf(bad + blen, sizeof bad - blen, "%s'%s'",
                             nbad++ ? ", " : "", names[i]);
            if (w > 0 && (size_t)w < sizeof bad - blen)
                blen += (size_t)w;
        }
        host_close(api, one);
    }
    if (nbad) {
        char *all = malloc(65536);
        size_t prefix_len =
            all ? suggest(api, chip, avail, first_bad, all, 65536) : 0;
        snprintf(msg, cap,
                 "unknown metric%s %s on chip %s (a metric is a base name "
                 "with a rollup, e.g. sm__cycles_active.avg); base metrics "
                 "of %s%s%.*s%s: %s (all of them: actrace-cupti-metrics "
                 "--chip %s)",
                 nbad > 1 ? "s" : "", bad, chip, chip,
                 prefix_len ? " starting with '" : "", (int)prefix_len,
                 first_bad, prefix_len ? "'" : "", all ? all : "?", chip);
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

#define PM_MAX_DEVICES 16
#define PM_HW_BUFFER (512u << 20) /* hardware buffer per device */
#define PM_MAX_SAMPLES 4096u      /* samples the counter data image holds */

typedef struct pm_dev {
    cp_pm *pm;
    uint32_t ordinal;
    char chip[64];
    CUpti_Profiler_Host_Object *hobj; /* evaluates samples */
    CUpti_PmSampling_Object *obj;
    uint8_t *config;
    size_t config_len;
    uint8_t *cdata;
    size_t cdata_len;
    size_t cursor, completed;
    int decoded;
    int started;
    int retained; /* holds a reference on the device's primary context */
    cp_pm_sink sink;
} pm_dev;

struct cp_pm {
    const act_plugin_host *host;
    const cu_cupti *api;
    const cu_driver *drv;
    cp_pm_device_fn device_of;
    void *device_u;
    char metrics_list[4096]; /* as configured */
    char metrics_buf[4096];  /* split into names[] */
    const char *names[CP_PM_MAX_METRICS];
    int nnames;
    uint64_t interval_ns;
    int want_dev[PM_MAX_DEVICES]; /* PM_COUNTER_DEVICES; all when none */
    int any_dev;

    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t wake;
    int set_up;           /* devices enabled (once) */
    int profiler_inited;  /* cuptiProfilerInitialize done, deinit once */
    pm_dev dev[PM_MAX_DEVICES];
    int ndev;
    pthread_t thread;
    int thread_live, stop_req;
};

static const char *cfg(cp_pm *pm, const char *key)
{
    const char *v = pm->host->config_get(pm->host->ctx, key);
    return v && *v ? v : NULL;
}

cp_pm *cp_pm_create(const act_plugin_host *host, const cu_cupti *api,
                    const cu_driver *drv, cp_pm_device_fn device_of,
                    void *device_u, char *why, size_t cap)
{
    if (!api->ProfilerInitialize || !api->PmSamplingEnable ||
        !api->PmSamplingDecodeData || !api->DeviceGetChipName ||
        !api->ProfilerHostEvaluateToGpuValues || !host->add_counter ||
        !host->emit_samples) {
        snprintf(why, cap, "libcupti or the host lacks the PM sampling API");
        return NULL;
    }
    cp_pm *pm = calloc(1, sizeof *pm);
    if (!pm) {
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    pm->host = host;
    pm->api = api;
    pm->drv = drv;
    pm->device_of = device_of;
    pm->device_u = device_u;
    pthread_mutex_init(&pm->lock, NULL);
    pthread_cond_init(&pm->wake, NULL);
    const char *m = cfg(pm, "PM_COUNTER_METRICS");
    if (!m)
        m = cfg(pm, "CUPTI_PM_SAMPLING_METRICS"); /* Kineto's key */
    if (!m)
        m = CP_PM_DEFAULT_METRICS;
    snprintf(pm->metrics_list, sizeof pm->metrics_list, "%s", m);
    pm->nnames = split(m, pm->metrics_buf, sizeof pm->metrics_buf, pm->names,
                       CP_PM_MAX_METRICS);
    if (pm->nnames == 0) {
        snprintf(why, cap, "PM_COUNTER_METRICS names no metric");
        cp_pm_destroy(pm);
        return NULL;
    }
    const char *iv = cfg(pm, "PM_COUNTER_INTERVAL_USECS");
    long us = iv ? strtol(iv, NULL, 10) : 10000;
    if (us < 1)
        us = 10000;
    pm->interval_ns = (uint64_t)us * 1000u;
    const char *devs = cfg(pm, "PM_COUNTER_DEVICES");
    const char *kdev = cfg(pm, "CUPTI_PM_SAMPLING_DEVICE_ID");
    pm->any_dev = 1;
    if (devs) {
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s", devs);
        for (char *save = NULL, *t = strtok_r(tmp, ", ", &save); t;
             t = strtok_r(NULL, ", ", &save)) {
            long d = strtol(t, NULL, 10);
            if (d >= 0 && d < PM_MAX_DEVICES) {
                pm->want_dev[d] = 1;
                pm->any_dev = 0;
            }
        }
    } else if (kdev && strtol(kdev, NULL, 10) >= 0) {
        long d = strtol(kdev, NULL, 10);
        if (d < PM_MAX_DEVICES) {
            pm->want_dev[d] = 1;
            pm->any_dev = 0;
        }
    }
    return pm;
}

/* Counter availability image of device @p ordinal (malloc'ed). */
static uint8_t *availability(cp_pm *pm, uint32_t ordinal)
{
    CUpti_PmSampling_GetCounterAvailability_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE;
    p.deviceIndex = ordinal;
    if (pm->api->PmSamplingGetCounterAvailability(&p) != CUPTI_SUCCESS ||
        !p.counterAvailabilityImageSize)
        return NULL;
    uint8_t *img = malloc(p.counterAvailabilityImageSize);
    if (!img)
        return NULL;
    p.pCounterAvailabilityImage = img;
    if (pm->api->PmSamplingGetCounterAvailability(&p) != CUPTI_SUCCESS) {
        free(img);
        return NULL;
    }
    return img;
}

static int image_init(pm_dev *d)
{
    CUpti_PmSampling_CounterDataImage_Initialize_Params p;
    memset(&p, 0, sizeof p);
    p.structSize =
        CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    p.pPmSamplingObject = d->obj;
    p.counterDataSize = d->cdata_len;
    p.pCounterData = d->cdata;
    d->cursor = d->completed = 0;
    d->decoded = 0;
    return d->pm->api->PmSamplingCounterDataImageInitialize(&p) ==
                   CUPTI_SUCCESS
               ? 0
               : -1;
}

/* The CUPTI sample source of one device (see cp_pm_source). */
static int dev_read(void *u, cp_pm_sample *out, int cap, int *overflow)
{
    pm_dev *d = u;
    const cu_cupti *api = d->pm->api;
    if (!d->decoded) {
        CUpti_PmSampling_DecodeData_Params dp;
        memset(&dp, 0, sizeof dp);
        dp.structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE;
        dp.pPmSamplingObject = d->obj;
        dp.pCounterDataImage = d->cdata;
        dp.counterDataImageSize = d->cdata_len;
        CUptiResult rc = api->PmSamplingDecodeData(&dp);
        if (dp.overflow)
            *overflow = 1;
        if (rc != CUPTI_SUCCESS)
            return -1;
        CUpti_PmSampling_GetCounterDataInfo_Params ip;
        memset(&ip, 0, sizeof ip);
        ip.structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE;
        ip.pCounterDataImage = d->cdata;
        ip.counterDataImageSize = d->cdata_len;
        if (api->PmSamplingGetCounterDataInfo(&ip) != CUPTI_SUCCESS)
            return -1;
        d->completed = ip.numCompletedSamples;
        d->cursor = 0;
        d->decoded = 1;
    }
    int n = 0;
    while (n < cap && d->cursor < d->completed) {
        CUpti_PmSampling_CounterData_GetSampleInfo_Params si;
        memset(&si, 0, sizeof si);
        si.structSize =
            CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE;
        si.pPmSamplingObject = d->obj;
        si.pCounterDataImage = d->cdata;
        si.counterDataImageSize = d->cdata_len;
        si.sampleIndex = d->cursor;
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev;
        memset(&ev, 0, sizeof ev);
        ev.structSize =
            CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
        ev.pHostObject = d->hobj;
        ev.pCounterDataImage = d->cdata;
        ev.counterDataImageSize = d->cdata_len;
        ev.rangeIndex = d->cursor;
        ev.ppMetricNames = d->pm->names;
        ev.numMetrics = (size_t)d->pm->nnames;
        ev.pMetricValues = out[n].values;
        d->cursor++;
        if (api->PmSamplingCounterDataGetSampleInfo(&si) != CUPTI_SUCCESS ||
            api->ProfilerHostEvaluateToGpuValues(&ev) != CUPTI_SUCCESS)
            continue;
        out[n].start_gpu_ns = si.startTimestamp;
        out[n].end_gpu_ns = si.endTimestamp;
        n++;
    }
    if (d->cursor >= d->completed) /* all read: the image takes more */
        image_init(d);
    return n;
}

static int64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void release_ctx(cp_pm *pm, pm_dev *d)
{
    CUdevice cd = 0;
    if (d->retained && pm->drv->DevicePrimaryCtxRelease &&
        pm->drv->DeviceGet(&cd, (int)d->ordinal) == CUDA_SUCCESS)
        pm->drv->DevicePrimaryCtxRelease(cd);
    d->retained = 0;
}

/* Enables PM sampling on one device. 0, or -1 (logged). */
static int dev_setup(cp_pm *pm, uint32_t ordinal)
{
    const cu_cupti *api = pm->api;
    pm_dev *d = &pm->dev[pm->ndev];
    memset(d, 0, sizeof *d);
    d->pm = pm;
    d->ordinal = ordinal;
    CUpti_Device_GetChipName_Params cn;
    memset(&cn, 0, sizeof cn);
    cn.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    cn.deviceIndex = ordinal;
    CUptiResult rc = api->DeviceGetChipName(&cn);
    if (rc != CUPTI_SUCCESS || !cn.pChipName) {
        plugin_log(pm->host, ACT_PLUGIN_LOG_WARN, "PM sampling: device %u: no chip "
                   "name (%s)", ordinal, cu_result_str(api, rc));
        return -1;
    }
    snprintf(d->chip, sizeof d->chip, "%s", cn.pChipName);
    uint8_t *avail = availability(pm, ordinal);
    if (!avail) {
        plugin_log(pm->host, ACT_PLUGIN_LOG_WARN, "PM sampling: device %u (%s): no "
                   "counter availability (another profiler, or no permission: "
                   "NVreg_RestrictProfilingToAdminUsers)", ordinal, d->chip);
        return -1;
    }
    static char msg[70000];
    if (cp_pm_check(api, d->chip, pm->metrics_list,
                    avail, &d->config, &d->config_len, msg,
                    sizeof msg) != 0) {
        plugin_log(pm->host, ACT_PLUGIN_LOG_ERROR, "PM sampling: device %u: %s",
                   ordinal, msg);
        free(avail);
        return -1;
    }
    char why[256];
    if (host_open(api, d->chip, avail, &d->hobj, why, sizeof why) != 0 ||
        add_metrics(api, d->hobj, pm->names, (size_t)pm->nnames) != 0) {
        plugin_log(pm->host, ACT_PLUGIN_LOG_ERROR, "PM sampling: device %u: %s",
                   ordinal, why);
        free(avail);
        goto fail;
    }
    free(avail);
    /* The program's (primary) context made current on this thread, as
     * CUPTI's own PM sampling sample has it; retained only if the program
     * already activated it, so no context is ever created here. */
    const cu_driver *drv = pm->drv;
    CUdevice cd = 0;
    unsigned flags = 0;
    int active = 0;
    CUcontext pctx = NULL;
    if (drv->DeviceGet && drv->DevicePrimaryCtxGetState &&
        drv->DevicePrimaryCtxRetain && drv->CtxSetCurrent &&
        drv->DeviceGet(&cd, (int)ordinal) == CUDA_SUCCESS &&
        drv->DevicePrimaryCtxGetState(cd, &flags, &active) == CUDA_SUCCESS &&
        active && drv->DevicePrimaryCtxRetain(&pctx, cd) == CUDA_SUCCESS) {
        d->retained = 1;
        drv->CtxSetCurrent(pctx);
    }
    CUpti_PmSampling_Enable_Params en;
    memset(&en, 0, sizeof en);
    en.structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE;
    en.deviceIndex = ordinal;
    rc = api->PmSamplingEnable(&en);
    if (rc != CUPTI_SUCCESS) {
        plugin_log(pm->host, ACT_PLUGIN_LOG_ERROR, "PM sampling: device %u: "
                   "cuptiPmSamplingEnable: %s", ordinal, cu_result_str(api, rc));
        goto fail;
    }
    d->obj = en.pPmSamplingObject;
    CUpti_PmSampling_SetConfig_Params sc;
    memset(&sc, 0, sizeof sc);
    sc.structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE;
    sc.pPmSamplingObject = d->obj;
    sc.configSize = d->config_len;
    sc.pConfig = d->config;
    sc.hardwareBufferSize = PM_HW_BUFFER;
    sc.samplingInterval = pm->interval_ns;
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    rc = api->PmSamplingSetConfig(&sc);
    if (rc != CUPTI_SUCCESS) {
        plugin_log(pm->host, ACT_PLUGIN_LOG_ERROR, "PM sampling: device %u (%s): "
                   "cuptiPmSamplingSetConfig: %s (time-interval triggers need "
                   "GA10x or later)", ordinal, d->chip, cu_result_str(api, rc));
        goto fail;
    }
    CUpti_PmSampling_GetCounterDataSize_Params cs;
    memset(&cs, 0, sizeof cs);
    cs.structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE;
    cs.pPmSamplingObject = d->obj;
    cs.pMetricNames = pm->names;
    cs.numMetrics = (size_t)pm->nnames;
    cs.maxSamples = PM_MAX_SAMPLES;
    if (api->PmSamplingGetCounterDataSize(&cs) != CUPTI_SUCCESS ||
        !cs.counterDataSize || !(d->cdata = malloc(cs.counterDataSize))) {
        plugin_log(pm->host, ACT_PLUGIN_LOG_ERROR, "PM sampling: device %u: no counter "
                   "data image", ordinal);
        goto fail;
    }
    d->cdata_len = cs.counterDataSize;
    if (image_init(d) != 0)
        goto fail;
    /* One track per metric on the GPU's process, with its unit. */
    uint32_t hdev = pm->device_of(pm->device_u, ordinal);
    char units[CP_PM_MAX_METRICS][64];
    const char *up[CP_PM_MAX_METRICS];
    for (int i = 0; i < pm->nnames; i++) {
        if (cp_pm_unit(api, d->chip, pm->names[i], units[i], 64) != 0)
            units[i][0] = '\0';
        up[i] = units[i];
    }
    if (hdev == UINT32_MAX ||
        cp_pm_sink_init(&d->sink, pm->host, hdev, pm->names, up,
                        (uint32_t)pm->nnames) != 0)
        goto fail;
    /* The GPU timer runs on Unix time (the driver keeps it in step with
     * CLOCK_REALTIME); samples move to the host clock by this offset. */
    d->sink.gpu_to_host_ns =
        clock_ns(CLOCK_MONOTONIC) - clock_ns(CLOCK_REALTIME);
    plugin_log(pm->host, ACT_PLUGIN_LOG_INFO, "PM sampling on device %u (%s): %d "
               "metrics every %llu us", ordinal, d->chip, pm->nnames,
               (unsigned long long)(pm->interval_ns / 1000));
    pm->ndev++;
    return 0;
fail:
    if (d->obj) {
        CUpti_PmSampling_Disable_Params dp;
        memset(&dp, 0, sizeof dp);
        dp.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE;
        dp.pPmSamplingObject = d->obj;
        api->PmSamplingDisable(&dp);
    }
    if (d->hobj)
        host_close(api, d->hobj);
    release_ctx(pm, d);
    free(d->config);
    free(d->cdata);
    memset(d, 0, sizeof *d);
    return -1;
}

/* Sets up every wanted device once CUDA is initialised. Lock held. */
static int setup(cp_pm *pm)
{
    if (pm->set_up)
        return 0;
    int n = 0;
    if (!pm->drv || !pm->drv->DeviceGetCount ||
        pm->drv->DeviceGetCount(&n) != CUDA_SUCCESS)
        return -1; /* not yet: the program has not initialised CUDA */
    pm->set_up = 1;
    if (!pm->profiler_inited) {
        CUpti_Profiler_Initialize_Params ip;
        memset(&ip, 0, sizeof ip);
        ip.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
        CUptiResult rc = pm->api->ProfilerInitialize(&ip);
        if (rc != CUPTI_SUCCESS) {
            plugin_log(pm->host, ACT_PLUGIN_LOG_ERROR, "PM sampling: "
                       "cuptiProfilerInitialize: %s", cu_result_str(pm->api, rc));
            return -1;
        }
        pm->profiler_inited = 1;
    }
    for (int d = 0; d < n && d < PM_MAX_DEVICES; d++)
        if (pm->any_dev || pm->want_dev[d])
            dev_setup(pm, (uint32_t)d);
    return 0;
}

static void drain_all(cp_pm *pm)
{
    for (int i = 0; i < pm->ndev; i++) {
        pm_dev *d = &pm->dev[i];
        if (!d->started)
            continue;
        cp_pm_source src = {dev_read, d};
        uint64_t ov = d->sink.overflows;
        if (cp_pm_drain(&d->sink, &src) < 0)
            d->decoded = 0;
        if (d->sink.overflows > ov)
            plugin_log(pm->host, ACT_PLUGIN_LOG_WARN,
                       "PM sampling: device %u: hardware buffer overflow (%llu "
                       "so far): samples lost; raise PM_COUNTER_INTERVAL_USECS",
                       d->ordinal, (unsigned long long)d->sink.overflows);
    }
}

/* Starts sampling on the set-up devices that are not sampling. Lock held. */
static void start_devices(cp_pm *pm)
{
    for (int i = 0; i < pm->ndev; i++) {
        pm_dev *d = &pm->dev[i];
        if (d->started)
            continue;
        image_init(d);
        CUpti_PmSampling_Start_Params sp;
        memset(&sp, 0, sizeof sp);
        sp.structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE;
        sp.pPmSamplingObject = d->obj;
        CUptiResult rc = pm->api->PmSamplingStart(&sp);
        if (rc == CUPTI_SUCCESS)
            d->started = 1;
        else
            plugin_log(pm->host, ACT_PLUGIN_LOG_ERROR, "PM sampling: device %u: "
                       "cuptiPmSamplingStart: %s", d->ordinal,
                       cu_result_str(pm->api, rc));
    }
}

/* The sampler thread: sets the devices up once the program has
 * initialised CUDA (asking the driver every 50 ms, or sooner when a
 * context is created), starts them, and drains them every 50 ms. Setting
 * up here rather than in CUPTI's resource callback keeps profiler calls
 * out of the driver's context creation. */
static void *pm_main(void *arg)
{
    cp_pm *pm = arg;
    pthread_mutex_lock(&pm->lock);
    while (!pm->stop_req) {
        if (setup(pm) == 0)
            start_devices(pm);
        drain_all(pm);
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_nsec += 50 * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        if (!pm->stop_req)
            pthread_cond_timedwait(&pm->wake, &pm->lock, &dl);
    }
    pthread_mutex_unlock(&pm->lock);
    return NULL;
}

void cp_pm_start(cp_pm *pm)
{
    pthread_mutex_lock(&pm->lock);
    if (!pm->thread_live) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pm->stop_req = 0;
        int rc = pthread_create(&pm->thread, NULL, pm_main, pm);
        pm->thread_live = rc == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0)
            plugin_log(pm->host, ACT_PLUGIN_LOG_ERROR, "PM sampling: cannot start its "
                       "thread: %s", strerror(rc));
    }
    pthread_mutex_unlock(&pm->lock);
}

void cp_pm_context_created(cp_pm *pm)
{
    pthread_mutex_lock(&pm->lock);
    pthread_cond_signal(&pm->wake);
    pthread_mutex_unlock(&pm->lock);
}

void cp_pm_stop(cp_pm *pm)
{
    pthread_mutex_lock(&pm->lock);
    int live = pm->thread_live;
    pm->stop_req = 1;
    pthread_cond_signal(&pm->wake);
    pthread_mutex_unlock(&pm->lock);
    if (live)
        pthread_join(pm->thread, NULL);
    pthread_mutex_lock(&pm->lock);
    pm->thread_live = 0;
    for (int i = 0; i < pm->ndev; i++) {
        pm_dev *d = &pm->dev[i];
        if (!d->started)
            continue;
        CUpti_PmSampling_Stop_Params sp;
        memset(&sp, 0, sizeof sp);
        sp.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE;
        sp.pPmSamplingObject = d->obj;
        pm->api->PmSamplingStop(&sp);
    }
    drain_all(pm); /* what the hardware buffer still holds */
    for (int i = 0; i < pm->ndev; i++)
        pm->dev[i].started = 0;
    pthread_mutex_unlock(&pm->lock);
}

void cp_pm_flush(cp_pm *pm)
{
    (void)pm; /* samples are emitted as they are decoded */
}

void cp_pm_destroy(cp_pm *pm)
{
    if (!pm)
        return;
    cp_pm_stop(pm);
    for (int i = 0; i < pm->ndev; i++) {
        pm_dev *d = &pm->dev[i];
        CUpti_PmSampling_Disable_Params dp;
        memset(&dp, 0, sizeof dp);
        dp.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE;
        dp.pPmSamplingObject = d->obj;
        pm->api->PmSamplingDisable(&dp);
        host_close(pm->api, d->hobj);
        release_ctx(pm, d);
        free(d->config);
        free(d->cdata);
    }
    pm->ndev = 0;
    /* Once only: a second de-initialisation crashes (seen in Kineto). */
    if (pm->profiler_inited && pm->api->ProfilerDeInitialize) {
        CUpti_Profiler_DeInitialize_Params dp;
        memset(&dp, 0, sizeof dp);
        dp.structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE;
        pm->api->ProfilerDeInitialize(&dp);
        pm->profiler_inited = 0;
    }
    pthread_cond_destroy(&pm->wake);
    pthread_mutex_destroy(&pm->lock);
    free(pm);
}
