/* SPDX-License-Identifier: MIT */
/*
 * PM sampling without a GPU. The host half runs against real libcupti
 * for chip GH100: the metric list holds known metrics with units; the
 * default set (CP_PM_DEFAULT_METRICS) fits one pass and gets a config
 * image; an unknown metric is refused with the chip's list; a metric
 * that needs more than one pass (sm__throughput...) is refused with its
 * name to drop; units of rollups (pct_of_peak -> %, per_second). The
 * decode path runs with a stubbed sample source: one counter track per
 * metric on the GPU's device with its unit, GPU timestamps moved to the
 * host clock, a hardware-buffer overflow counted, NaN values refused.
 * With the argument "lifecycle" (PluginCuptiPmLifecycle, also under
 * TSan): the sampler thread's start/stop/start and the profiler's single
 * initialisation and de-initialisation, with counting stand-ins.
 * Skipped (77) without libcupti.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "cupti_api.h"
#include "cupti_pm.h"

/* ---- listing ----------------------------------------------------------------- */

static int nlisted, saw_sm_cycles, saw_dram_thr_pct;

static void on_metric(void *u, const char *name, const char *desc,
                      const char *unit)
{
    (void)u;
    (void)desc;
    nlisted++;
    if (!strcmp(name, "sm__cycles_active") && !strcmp(unit, "gpc_cycle"))
        saw_sm_cycles = 1;
    if (!strcmp(name, "dram__throughput") && !strcmp(unit, "percent"))
        saw_dram_thr_pct = 1;
}

/* ---- fake host for the sink -------------------------------------------------- */

#define NT 8
static char track[NT][128], unit[NT][32];
static uint32_t track_dev[NT];
static int ntracks;
static int64_t ts[NT][16];
static double val[NT][16];
static int nsamp[NT];

static int32_t f_add_counter(act_plugin_ctx *c, const act_plugin_counter *k,
                             uint32_t *out)
{
    (void)c;
    if (ntracks >= NT)
        return ACT_PLUGIN_ELIMIT;
    snprintf(track[ntracks], sizeof track[0], "%s/%s", k->track,
             k->series ? k->series : "");
    snprintf(unit[ntracks], sizeof unit[0], "%s", k->unit ? k->unit : "");
    track_dev[ntracks] = k->device;
    *out = (uint32_t)ntracks++;
    return 0;
}

static int32_t f_emit_samples(act_plugin_ctx *c, uint32_t t,
                              const act_plugin_sample *s, uint32_t n)
{
    (void)c;
    if (t >= (uint32_t)ntracks)
        return ACT_PLUGIN_EINVAL;
    for (uint32_t i = 0; i < n && nsamp[t] < 16; i++) {
        ts[t][nsamp[t]] = s[i].ts_ns;
        val[t][nsamp[t]] = s[i].value;
        nsamp[t]++;
    }
    return (int32_t)n;
}

/* ---- stub source: two reads of samples, then nothing ------------------------- */

typedef struct stub {
    int calls;
} stub;

static int stub_read(void *u, cp_pm_sample *out, int cap, int *overflow)
{
    stub *s = u;
    s->calls++;
    if (s->calls == 1) {
        CHECK(cap >= 3);
        for (int i = 0; i < 3; i++) {
            memset(&out[i], 0, sizeof out[i]);
            out[i].start_gpu_ns = 5000000000ull + (uint64_t)i * 10000;
            out[i].end_gpu_ns = out[i].start_gpu_ns + 10000;
            out[i].values[0] = 10.0 * (i + 1); /* % */
            out[i].values[1] = 1e9 * (i + 1);  /* bytes/s */
        }
        out[1].values[1] = NAN; /* refused, the rest kept */
        return 3;
    }
    if (s->calls == 2) {
        *overflow = 1; /* the hardware buffer overflowed */
        memset(&out[0], 0, sizeof out[0]);
        out[0].start_gpu_ns = 5000100000ull;
        out[0].values[0] = 55.5;
        out[0].values[1] = 7.0;
        return 1;
    }
    return 0;
}

static int fail_read(void *u, cp_pm_sample *out, int cap, int *overflow)
{
    (void)u;
    (void)out;
    (void)cap;
    (void)overflow;
    return -1;
}

/* ---- lifecycle with counting stand-ins for the profiler calls ---------------- */

static _Atomic int n_init, n_deinit, n_chip, cuda_ready;
static char logbuf[8192];
static const char *cfg_metrics, *cfg_kineto_metrics;

static CUptiResult c_init(CUpti_Profiler_Initialize_Params *p)
{
    (void)p;
    n_init++;
    return CUPTI_SUCCESS;
}
static CUptiResult c_deinit(CUpti_Profiler_DeInitialize_Params *p)
{
    (void)p;
    n_deinit++;
    return CUPTI_SUCCESS;
}
static CUptiResult c_chip(CUpti_Device_GetChipName_Params *p)
{
    (void)p;
    n_chip++;
    return CUPTI_ERROR_INVALID_DEVICE; /* the device is then skipped */
}
static CUresult d_count(int *n)
{
    *n = 1;
    return cuda_ready ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}
static void f_log(act_plugin_ctx *c, int32_t l, const char *m)
{
    (void)c;
    (void)l;
    size_t n = strlen(logbuf);
    snprintf(logbuf + n, sizeof logbuf - n, "%s\n", m);
}
static const char *f_config(act_plugin_ctx *c, const char *key)
{
    (void)c;
    if (!strcmp(key, "PM_COUNTER_METRICS"))
        return cfg_metrics;
    if (!strcmp(key, "CUPTI_PM_SAMPLING_METRICS"))
        return cfg_kineto_metrics;
    return NULL;
}
static void nap_ms(int ms)
{
    struct timespec d = {0, ms * 1000000L};
    nanosleep(&d, NULL);
}

/* Waits up to 3 s for *v to reach @p want. */
static int wait_for(_Atomic int *v, int want)
{
    for (int i = 0; i < 300 && atomic_load(v) < want; i++)
        nap_ms(10);
    return atomic_load(v);
}

static uint32_t dev_of(void *u, uint32_t ordinal)
{
    (void)u;
    return ordinal;
}

/* Lifecycle: nothing touches the profiler before the program has
 * initialised CUDA; then it is initialised once, start/stop/start works,
 * and destroy de-initialises exactly once. No profiler host call is made
 * (the chip name fails), so this part also runs under TSan. */
static void lifecycle(const cu_cupti *api)
{
    act_plugin_host host;
    memset(&host, 0, sizeof host);
    host.struct_size = sizeof host;
    host.add_counter = f_add_counter;
    host.emit_samples = f_emit_samples;
    cu_cupti fake = *api;
    fake.ProfilerInitialize = c_init;
    fake.ProfilerDeInitialize = c_deinit;
    fake.DeviceGetChipName = c_chip;
    cu_driver drv;
    memset(&drv, 0, sizeof drv);
    drv.DeviceGetCount = d_count;
    host.log = f_log;
    host.config_get = f_config;
    cfg_kineto_metrics = "gr__cycles_active.avg"; /* Kineto's key works */
    char why2[256];
    cp_pm *pm = cp_pm_create(&host, &fake, &drv, dev_of, NULL, why2,
                             sizeof why2);
    if (!CHECK(pm != NULL))
        return;
    cp_pm_start(pm);
    nap_ms(120); /* the sampler asks the driver twice or so */
    CHECK_EQ_INT(n_init, 0); /* CUDA not initialised: it waits */
    cp_pm_stop(pm);
    cp_pm_start(pm);
    cuda_ready = 1;
    cp_pm_context_created(pm); /* the program created a context */
    CHECK_EQ_INT(wait_for(&n_init, 1), 1);
    CHECK_EQ_INT(wait_for(&n_chip, 1), 1);
    cp_pm_stop(pm);
    CHECK(strstr(logbuf, "device 0: no chip name") != NULL);
    cp_pm_start(pm);
    cp_pm_context_created(pm);
    nap_ms(60);
    cp_pm_stop(pm);
    CHECK_EQ_INT(n_init, 1);
    CHECK_EQ_INT(n_chip, 1);
    cp_pm_destroy(pm);
    CHECK_EQ_INT(n_deinit, 1);
    /* No metric named at all. */
    cfg_kineto_metrics = NULL;
    cfg_metrics = " , ";
    CHECK(cp_pm_create(&host, &fake, &drv, dev_of, NULL, why2,
                       sizeof why2) == NULL);
    CHECK(strstr(why2, "PM_COUNTER_METRICS") != NULL);
}

int main(int argc, char **argv)
{
    cu_cupti api;
    char why[512];
    if (cu_cupti_load(&api, why, sizeof why) != 0) {
        printf("skipped: no libcupti (%s)\n", why);
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "lifecycle")) {
        lifecycle(&api);
        CHECK_MAIN_END;
    }
    static char msg[70000];

    /* Listing GH100's metrics. */
    int n = cp_pm_list(&api, "GH100", on_metric, NULL, msg, sizeof msg);
    CHECK(n > 100);
    CHECK_EQ_INT(n, nlisted);
    CHECK(saw_sm_cycles);
    CHECK(saw_dram_thr_pct);
    CHECK_EQ_INT(cp_pm_list(&api, "NOSUCHCHIP", NULL, NULL, msg, sizeof msg),
                 -1);
    CHECK(strstr(msg, "NOSUCHCHIP") != NULL);

    /* The default set fits one pass on GH100 and gets a config image. */
    uint8_t *img = NULL;
    size_t len = 0;
    CHECK_EQ_INT(cp_pm_check(&api, "GH100", CP_PM_DEFAULT_METRICS, NULL, &img,
                             &len, msg, sizeof msg),
                 0);
    CHECK(img != NULL && len > 0);
    CHECK(strstr(msg, "8 metrics, 1 pass") != NULL);
    free(img);

    /* Unknown metric: named, with the chip's list. */
    CHECK_EQ_INT(cp_pm_check(&api, "GH100",
                             "sm__cycles_active.avg, nosuch__metric.sum", NULL,
                             NULL, NULL, msg, sizeof msg),
                 -1);
    CHECK(strstr(msg, "unknown metric 'nosuch__metric.sum'") != NULL);
    CHECK(strstr(msg, "sm__cycles_active") != NULL);
    CHECK(strstr(msg, "dram__throughput") != NULL);
    CHECK(strstr(msg, "'sm__cycles_active.avg'") == NULL);
    /* An unknown name in a known unit: that unit's metrics only. */
    CHECK_EQ_INT(cp_pm_check(&api, "GH100", "sm__nosuch.avg", NULL, NULL,
                             NULL, msg, sizeof msg),
                 -1);
    CHECK(strstr(msg, "starting with 'sm__': ") != NULL);
    CHECK(strstr(msg, "sm__cycles_active") != NULL);
    CHECK(strstr(msg, ", dram__") == NULL);

    /* Multi-pass: sm__throughput needs several passes on GH100; the one
     * to drop is named, the others are not. */
    CHECK_EQ_INT(cp_pm_check(&api, "GH100",
                             "gr__cycles_active.avg,"
                             "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                             NULL, NULL, NULL, msg, sizeof msg),
                 -1);
    CHECK(strstr(msg, "more than one pass") != NULL);
    CHECK(strstr(msg, "drop sm__throughput.avg.pct_of_peak_sustained_elapsed") !=
          NULL);
    CHECK(strstr(msg, "gr__cycles_active") == NULL);
    /* Nothing named. */
    CHECK_EQ_INT(cp_pm_check(&api, "GH100", " , ", NULL, NULL, NULL, msg,
                             sizeof msg),
                 -1);

    /* Units. */
    char u[64];
    CHECK_EQ_INT(cp_pm_unit(&api, "GH100",
                            "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
                            u, sizeof u),
                 0);
    CHECK_EQ_STR(u, "%");
    CHECK_EQ_INT(cp_pm_unit(&api, "GH100", "dram__bytes_read.sum.per_second",
                            u, sizeof u),
                 0);
    CHECK_EQ_STR(u, "byte/second");
    CHECK_EQ_INT(cp_pm_unit(&api, "GH100", "gr__cycles_active.avg", u,
                            sizeof u),
                 0);
    CHECK_EQ_STR(u, "sys_cycle");

    /* Decode path with a stubbed source. */
    act_plugin_host host;
    memset(&host, 0, sizeof host);
    host.struct_size = sizeof host;
    host.add_counter = f_add_counter;
    host.emit_samples = f_emit_samples;
    const char *metrics[] = {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
                             "dram__bytes_read.sum.per_second"};
    const char *units[] = {"%", "byte/second"};
    cp_pm_sink sink;
    CHECK_EQ_INT(cp_pm_sink_init(&sink, &host, 0, metrics, units, 2), 0);
    CHECK_EQ_INT(ntracks, 2);
    CHECK_EQ_STR(track[0],
                 "sm__cycles_active.avg.pct_of_peak_sustained_elapsed/value");
    CHECK_EQ_STR(unit[1], "byte/second");
    CHECK_EQ_U64(track_dev[0], 0);
    sink.gpu_to_host_ns = -4000000000ll; /* GPU clock 4 s ahead */
    stub st = {0};
    cp_pm_source src = {stub_read, &st};
    CHECK_EQ_INT(cp_pm_drain(&sink, &src), 3); /* a short read ends a drain */
    CHECK_EQ_INT(cp_pm_drain(&sink, &src), 1);
    CHECK_EQ_INT(cp_pm_drain(&sink, &src), 0);
    CHECK_EQ_U64(sink.samples, 4);
    CHECK_EQ_U64(sink.overflows, 1);
    CHECK_EQ_U64(sink.refused, 1);
    CHECK_EQ_INT(nsamp[0], 4);
    CHECK_EQ_INT(nsamp[1], 3);
    CHECK_EQ_INT(ts[0][0], 1000000000);
    CHECK_EQ_INT(ts[0][1], 1000010000);
    CHECK_EQ_INT(ts[0][3], 1000100000);
    CHECK_NEAR(val[0][2], 30.0, 1e-9);
    CHECK_NEAR(val[0][3], 55.5, 1e-9);
    CHECK_EQ_INT(ts[1][1], 1000020000); /* the NaN sample is gone */
    CHECK_NEAR(val[1][1], 3e9, 1);
    cp_pm_source bad = {fail_read, NULL};
    CHECK_EQ_INT(cp_pm_drain(&sink, &bad), -1);

    CHECK_MAIN_END;
}
