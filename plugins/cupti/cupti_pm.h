/* SPDX-License-Identifier: MIT */
/*
 * PM sampling for the cupti plugin: gpu_pm_counter time series from
 * CUPTI's PM sampling API (cupti_pmsampling.h) with metrics resolved by
 * the profiler host API (cupti_profiler_host.h).
 *
 * The host half (chip -> metric list, units, config image, pass count)
 * needs no GPU and is shared with the actrace-cupti-metrics tool; the
 * device half runs on a GPU once the program has initialised CUDA.
 */
#ifndef ACT_CUPTI_PM_H
#define ACT_CUPTI_PM_H

#include <stddef.h>
#include <stdint.h>

#include <actrace/plugin.h>

#include "cupti_api.h"

#define CP_PM_MAX_METRICS 64
/* SM activity and occupancy, instruction rate, DRAM and PCIe traffic: one
 * pass on GH100 (sm__throughput, Nsight's "SM throughput", takes 19). */
#define CP_PM_DEFAULT_METRICS                                                  \
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed,"                     \
    "sm__warps_active.avg.pct_of_peak_sustained_elapsed,"                      \
    "sm__inst_executed.sum.per_second,"                                        \
    "dram__throughput.avg.pct_of_peak_sustained_elapsed,"                      \
    "dram__bytes_read.sum.per_second,dram__bytes_write.sum.per_second,"        \
    "pcie__read_bytes.sum.per_second,pcie__write_bytes.sum.per_second"

/* ---- host half (no GPU) -------------------------------------------------- */

/**
 * Resolves @p metrics (comma list) for @p chip ("GH100"): every metric
 * known, the set fits one pass. @p avail is the device's counter
 * availability image or NULL (host only). On success returns 0 and, when
 * @p image is not NULL, the config image (malloc'ed) in *image and *image_len.
 * On failure returns -1 with a message naming the unknown metrics and the
 * chip's list, or the metrics to drop for one pass.
 */
int cp_pm_check(const cu_cupti *api, const char *chip, const char *metrics,
                const uint8_t *avail, uint8_t **image, size_t *image_len,
                char *msg, size_t cap);

/** Calls @p fn for every metric of @p chip (base name, description,
 *  unit). Returns the number listed, or -1 with a message. */
int cp_pm_list(const cu_cupti *api, const char *chip,
               void (*fn)(void *u, const char *name, const char *desc,
                          const char *unit),
               void *u, char *msg, size_t cap);

/** Unit of @p metric on @p chip ("%", "byte/second"...) into @p out. */
int cp_pm_unit(const cu_cupti *api, const char *chip, const char *metric,
               char *out, size_t cap);

/* ---- decoding (stubbable source) ----------------------------------------- */

/** One decoded sample: GPU timestamps and one value per metric. */
typedef struct cp_pm_sample {
    uint64_t start_gpu_ns, end_gpu_ns;
    double values[CP_PM_MAX_METRICS];
} cp_pm_sample;

/** Where samples come from: CUPTI's decoder on a GPU, a stub in tests.
 *  read() fills up to @p cap samples, sets *overflow when the hardware
 *  buffer overflowed since the last call, returns the count or -1. */
typedef struct cp_pm_source {
    int (*read)(void *u, cp_pm_sample *out, int cap, int *overflow);
    void *u;
} cp_pm_source;

/** Sink: per-metric counter tracks on one device. */
typedef struct cp_pm_sink {
    const act_plugin_host *host;
    uint32_t nmetrics;
    uint32_t track[CP_PM_MAX_METRICS];
    int64_t gpu_to_host_ns; /* added to GPU timestamps */
    uint64_t samples, overflows, refused;
} cp_pm_sink;

/** Declares one counter track per metric on host device @p device, with
 *  the units given (NULL entries: none). 0 or a negative code. */
int cp_pm_sink_init(cp_pm_sink *s, const act_plugin_host *host,
                    uint32_t device, const char *const *metrics,
                    const char *const *units, uint32_t n);

/** Drains @p src once into @p s. Returns samples handed over, -1 on a
 *  source error. */
int cp_pm_drain(cp_pm_sink *s, const cp_pm_source *src);

/* ---- the plugin's PM sampler (GPU) --------------------------------------- */

typedef struct cp_pm cp_pm;

/** Maps a CUDA device ordinal to the host device index (describing the
 *  device on first use); UINT32_MAX on failure. */
typedef uint32_t (*cp_pm_device_fn)(void *u, uint32_t ordinal);

/** Reads PM_COUNTER_* (and Kineto's CUPTI_PM_SAMPLING_*) keys. NULL with
 *  a reason when PM sampling cannot run. */
cp_pm *cp_pm_create(const act_plugin_host *host, const cu_cupti *api,
                    const cu_driver *drv, cp_pm_device_fn device_of,
                    void *device_u, char *why, size_t cap);
/** Starts the sampler thread: it sets the devices up once the program
 *  has initialised CUDA (cp_pm_context_created wakes it early), starts
 *  them and drains them every 50 ms. Stop drains and joins it; start
 *  again resumes on the same configuration. */
void cp_pm_start(cp_pm *pm);
void cp_pm_context_created(cp_pm *pm);
void cp_pm_stop(cp_pm *pm);
void cp_pm_flush(cp_pm *pm);
void cp_pm_destroy(cp_pm *pm);

#endif
