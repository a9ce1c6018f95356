/* SPDX-License-Identifier: MIT */
/*
 * What `actrace report` gathers beyond `actrace summary` (report_collect.c),
 * in the same streaming pass (summ's hook), and writes as one HTML page
 * (cmd_report.c). Everything here is bounded by the number of devices,
 * kernel names, counter series and steps, never by the number of events:
 * busy time and counter values go into RB_BINS time bins whose width
 * doubles as the trace's time range grows; kernel durations into log
 * histograms; device spans are kept (for per-step device work) only up to
 * RPT_SPANS_MAX.
 */
#ifndef ACT_CLI_REPORT_H
#define ACT_CLI_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "summary.h"

#define RB_BINS 400

/* Bins of width w ns: bin k covers [k*w, (k+1)*w); the array holds bins
 * k0 .. k0 + RB_BINS - 1. When an added time falls outside, w doubles
 * (pairs of bins merge) until the range fits. */
typedef struct rpt_bins {
    int64_t w, k0;
    int64_t kmin, kmax; /* occupied bins; kmin > kmax: none */
    int nvals;          /* 1: busy ns; 4: sum, n, min, max */
    double *v;          /* RB_BINS * nvals */
} rpt_bins;

/* Kernel duration histogram: 8 buckets per power of two of ns. */
#define RK_SUB 8
#define RK_BUCKETS (64 * RK_SUB)

typedef struct rpt_kernel {
    int64_t dev;
    const char *name;
    uint64_t count;
    int64_t total, min, max;
    uint32_t *hist; /* RK_BUCKETS */
} rpt_kernel;

typedef struct rpt_dev {
    int64_t id; /* as summary's: the device, or -1 - process index */
    rpt_bins busy;
    int64_t run_s, run_e; /* the current run of overlapping spans */
    int have_run;
} rpt_dev;

typedef struct rpt_series {
    const char *track; /* the counter event's name */
    const char *key;
    char *pid;         /* the pid as text */
    uint64_t n;
    double min, max;
    rpt_bins bins;
} rpt_series;

typedef struct rpt_step {
    int64_t ts, dur;
    int64_t num; /* N of ProfilerStep#N, -1 if not a number */
} rpt_step;

typedef struct rpt_span {
    int64_t s, e;
    int kind;
} rpt_span;

#define RPT_SPANS_MAX (4u << 20)
#define RPT_SERIES_MAX 64

typedef struct rpt {
    act_cli_map dev_map, k_map, se_map;
    rpt_dev *dv;
    size_t ndv, dvcap;
    rpt_kernel *ks;
    size_t nks, kscap;
    rpt_series *se;
    size_t nse, secap;
    uint64_t series_left_out; /* counter series past RPT_SERIES_MAX */
    rpt_step *st;
    size_t nst, stcap;
    rpt_span *sp;
    size_t nsp, spcap;
    int spans_cut; /* more device spans than RPT_SPANS_MAX */
    int64_t rank;  /* distributedInfo.rank, -1 if absent */
    char *host;
} rpt;

/** Make @p S call into @p R for each event of its pass. */
void act_cli_report_attach(rpt *R, summ *S);
/** After the pass: close the open runs of device spans. */
void act_cli_report_finish(rpt *R);
void act_cli_report_free(rpt *R);

/** Read the trace @p file (the @p index th of the page) and write its part
 *  of the page, one JSON object, to @p out. 1 when it was read; 0 with the
 *  reader's message in @p err (the object then says so). */
int act_cli_report_trace(const char *file, size_t index, FILE *out, char *err,
                         size_t errlen);

/** Write @p s (NULL: "") as a JSON string that is safe inside a <script>
 *  element (<, >, & and control bytes as \\u escapes). */
void act_cli_report_jstr(FILE *f, const char *s);

/** The quantile @p q of a kernel's durations (ns), within 1/16. */
int64_t act_cli_report_kquantile(const rpt_kernel *k, double q);

#endif /* ACT_CLI_REPORT_H */
