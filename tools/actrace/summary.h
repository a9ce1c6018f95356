/* SPDX-License-Identifier: MIT */
/*
 * What `actrace summary` gathers in its one streaming pass over a trace
 * (summary_collect.c) and then prints as text or JSON (cmd_summary.c).
 *
 * Memory is O(distinct names + processes + threads + counter series +
 * devices + open slices + open flows; plus up to STEP_KEEP durations for
 * each of at most STEP_FAMILIES step families), independent of the file size:
 * every per-key structure is a hash map (act_cli_map) into a growable
 * array; per-thread slice stacks and per-device interval sets are capped
 * (see SELF_STACK and IV_KEEP in summary_collect.c).
 */
#ifndef ACT_CLI_SUMMARY_H
#define ACT_CLI_SUMMARY_H

#include <stdint.h>

#include "trace_read.h"

/* actrace's device processes: pid = DEVICE_PID_BASE + device index. */
#define SUM_DEVICE_PID_BASE 0x40000000u

/* Device span kinds. */
enum { DK_NONE = 0, DK_KERNEL = 1, DK_MEMCPY = 2, DK_MEMSET = 3 };

/* Sums of durations saturate: each duration is at most 9.2e15 ns (the
 * reader's limit), but a trace with a few thousand of them passes
 * INT64_MAX, and a wrapped sum printed negative shares. A saturated one
 * is visibly the maximum. */
static inline int64_t sum_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline uint64_t sum_addu(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* Copy directions. */
enum { CD_HTOD, CD_DTOH, CD_DTOD, CD_HTOH, CD_PTOP, CD_OTHER, CD_COUNT };

typedef struct sum_tally {
    const char *key; /* phase or category; NULL: none */
    uint64_t n;
} sum_tally;

/* Per name (all X events) and per (process, name) (host tables). */
typedef struct sum_nstat {
    const char *name;
    uint32_t proc; /* per-process stats only */
    uint64_t count;
    int64_t total, self, min, max; /* ns */
} sum_nstat;

typedef struct sum_proc {
    act__jv *pid; /* a copy of the pid value (NULL: missing) */
    char *name;
    uint64_t events;
    int is_device;
    int64_t device;
    size_t nthreads;
    size_t first_thread, last_thread; /* SIZE_MAX: none */
} sum_proc;

typedef struct sum_thread {
    size_t proc;
    act__jv *tid;
    char *name;
    uint64_t events;
    size_t next_in_proc;
    /* Open X slices (ts, end, per-process stat) for self time. */
    struct { int64_t ts, end; size_t stat; } *stack;
    size_t depth, stack_cap; /* grown as slices nest, up to SELF_STACK */
} sum_thread;

typedef struct sum_series {
    size_t ctr;
    const char *key;
    uint64_t n;
    double min, max, last, sum, integral;
    int64_t first_ts, last_ts;
    int unordered;
} sum_series;

typedef struct sum_ctr {
    act__jv *pid;
    char *name;
    uint64_t samples;
    size_t *series; /* indices into series, in first-seen order */
    size_t nseries, cap;
} sum_ctr;

/* A set of time intervals whose union length is wanted. */
typedef struct sum_ivset {
    struct { int64_t s, e; } *v;
    size_t n, cap;
    int64_t done_until, done_total;
    int unsorted; /* an interval was added before the last one's start */
} sum_ivset;

#define LAT_BUCKETS 1920

typedef struct sum_kstat {
    size_t dev;
    const char *name;
    uint64_t count;
    int64_t total, min, max;
} sum_kstat;

typedef struct sum_device {
    int64_t id;
    sum_ivset busy, kind[4];
    int64_t kind_sum[4];
    uint64_t kind_count[4];
    uint64_t copy_count[CD_COUNT], copy_bytes[CD_COUNT];
    int64_t copy_time[CD_COUNT];
    uint64_t lat_n;
    int64_t lat_max, lat_min;
    uint64_t *lat; /* LAT_BUCKETS counts, allocated on first use */
    int64_t *lat_v; /* the first LAT_EXACT latencies, exact */
    size_t lat_vcap;
    int lat_sorted;
} sum_device;

/* Up to this many launches per device, quantiles are exact. */
#define LAT_EXACT 65536

/* An open flow identity (hash of cat, name, id). */
typedef struct sum_flow {
    uint64_t key;
    int64_t ts;     /* of the pending starts or finishes */
    size_t proc;    /* process of the pending finish */
    uint32_t ns, nf; /* pending starts, finishes */
} sum_flow;

/* Numbered steps (see act_cli_step_group): their durations, for the
 * distribution. Exact up to STEP_KEEP steps a family; past that, count,
 * total, min and max stay exact and the quantiles come from the first
 * STEP_KEEP. */
#define STEP_KEEP 65536
#define STEP_FAMILIES 8

typedef struct sum_steps {
    char *name; /* the grouped name, e.g. "ProfilerStep*" */
    uint64_t count;
    int64_t total, min, max; /* ns */
    int64_t *v;              /* the first STEP_KEEP durations */
    size_t nv, cap;
    int sorted;
} sum_steps;

typedef struct summ {
    act_cli_map phase_map, cat_map, name_map, pname_map, proc_map, thr_map,
        ctr_map, series_map, dev_map, kname_map;
    sum_tally *ph, *cat;
    size_t ph_one[256]; /* 1 + tally of a one-character ph (no map lookup) */
    size_t nph, phcap, ncat, catcap;
    sum_nstat *nm, *pn;
    size_t nnm, nmcap, npn, pncap;
    sum_proc *pr;
    size_t npr, prcap;
    sum_thread *th;
    size_t nth, thcap;
    sum_ctr *ct;
    size_t nct, ctcap;
    sum_series *se;
    size_t nse, secap;
    sum_device *dv;
    size_t ndv, dvcap;
    sum_kstat *ks;
    size_t nks, kscap;
    sum_flow *fl; /* open addressing, cap a power of two, key 0 = empty */
    size_t flcap, fln;
    uint64_t flow_starts, flow_steps, flow_finishes, flow_matched,
        flow_unmatched_s, flow_unmatched_f;
    /* Matched flows that end in a process without device work (not
     * launches: no launch latency). */
    uint64_t flow_host;
    uint64_t events;
    int64_t first, last;
    int have_time;
    /* Top-level members and what they say. */
    act__jv *trace_name, *base_time, *device_props, *stats;
    int kineto_keys, top_array;
    char *actrace_version;
    /* Step families, most steps first after act_cli_steps_sort. */
    sum_steps steps[STEP_FAMILIES];
    size_t nsteps;
    /* Top-level "distributedInfo" (rank, world size), when present;
     * actrace's "actraceRankDefault": its rank is a default, not a rank. */
    act__jv *dist_info;
    int rank_default;
    /* Called after each event (key NULL) and each other top-level member
     * (its key) has been counted: `actrace report` gathers its own
     * statistics in the same pass. NULL: none. */
    void (*hook)(void *ctx, struct summ *S, const char *key, const act__jv *v);
    void *hook_ctx;
} summ;

/* ---- a directory of traces (a job) ---------------------------------------- */

/* One trace of a directory: what the per-rank table shows. */
typedef struct sum_rank {
    char *file;       /* its name in the directory */
    char *error;      /* NULL, or why it could not be summarised */
    int64_t rank;     /* distributedInfo.rank; -1: none */
    uint64_t events;
    int have_time;
    int64_t first, last;  /* ns, the trace's own ts */
    int64_t start_unix;   /* ns since the epoch; -1: no base time */
    size_t ndev;          /* devices with device spans */
    int64_t busy;         /* summed busy time of those devices, ns */
    double busy_pct;      /* busy / (ndev * window) * 100; -1: no device */
    char *step_name;      /* its most frequent step family; NULL: none */
    uint64_t steps;
    int64_t step_min, step_p50, step_p90, step_max, step_total;
} sum_rank;

/* A kernel across the ranks (by name). */
typedef struct sum_jkernel {
    const char *name;
    uint64_t count;
    int64_t total, max;
    size_t ranks; /* how many traces ran it */
    size_t last;  /* the last trace that counted it */
} sum_jkernel;

typedef struct sum_job {
    char *dir;
    sum_rank *r;   /* sorted: by rank, ranks unknown last, then by file */
    size_t nr, rcap, nerr;
    act_cli_map kmap;
    sum_jkernel *k; /* sorted by total, most first, after the pass */
    size_t nk, kcap;
    sum_steps steps; /* every trace's durations of the first trace's
                        most frequent step family */
    size_t slowest;  /* index into r; SIZE_MAX: none */
    int slowest_by_steps; /* 1: by step p50, 0: by trace span */
} sum_job;

/** Summarise one trace file (or "-" for standard input) into @p S (zeroed
 *  by the caller): open, the collection pass, unmatched flows counted,
 *  step families sorted. 0, or -1 with the message in @p msg. */
int act_cli_summary_file(summ *S, const char *path, char *msg, size_t msglen);

/** Is @p path a directory? */
int act_cli_is_dir(const char *path);

/** Summarise every trace in directory @p dir (regular files named *.json
 *  or *.json.gz, not hidden, not in subdirectories) one at a time, in
 *  name order, into @p J (zeroed by the caller). For each file @p each
 *  (may be NULL) is called with its path and its summary (NULL when it
 *  could not be read, then @p err says why) before the summary is freed;
 *  @p J keeps only the per-rank rows and the job-wide tables. 0; -1 with
 *  @p msg when the directory cannot be read or holds no trace. Files
 *  that cannot be read are rows with an error (J->nerr counts them). */
int act_cli_summary_dir(sum_job *J, const char *dir,
                        void (*each)(void *ctx, const char *path, summ *S,
                                     const char *err),
                        void *ctx, char *msg, size_t msglen);
void act_cli_summary_job_free(sum_job *J);

/** Read the whole trace of @p tr into @p S (zeroed by the caller).
 *  0, or -1 with the reader's message in @p msg. */
int act_cli_summary_collect(summ *S, act_cli_trace *tr, char *msg,
                            size_t msglen);
void act_cli_summary_free(summ *S);

/** Union length of @p iv (finishes it). */
int64_t act_cli_ivset_total(sum_ivset *iv);

/** The value at quantile @p q (0..1) of a device's launch latencies (ns):
 *  nearest rank, exact up to LAT_EXACT launches, else within 1/32. */
int64_t act_cli_lat_quantile(sum_device *d, double q);

extern const char *const act_cli_copy_dir_names[CD_COUNT];

/** The name that numbered instances of @p name share in the top lists,
 *  as torch.profiler's table groups them: a name ending in "#<digits>"
 *  ("ProfilerStep#12") becomes "<prefix>*" ("ProfilerStep*"), as does a
 *  name ending in " <digits>" or "_<digits>" whose prefix ends in "step"
 *  or "iteration" (any case: "train_step_3", "Iteration 7"). Written to
 *  @p buf (@p len bytes); NULL when @p name is not numbered (or does not
 *  fit). *is_step (when not NULL) says whether the group is a step: its
 *  prefix contains "step" or "iteration". */
const char *act_cli_step_group(const char *name, char *buf, size_t len,
                               int *is_step);

/** The value at quantile @p q (0..1) of a step family's durations (ns),
 *  nearest rank over the kept durations. */
int64_t act_cli_steps_quantile(sum_steps *st, double q);

/** Sorts the step families by count, most first. */
void act_cli_steps_sort(summ *S);
/** The index in S->pr of the process @p pid (added if new). */
size_t act_cli_summary_proc(summ *S, const act__jv *pid);

/** The device span kind (DK_*) of an event of category @p cat. */
int act_cli_device_kind(const act__jv *cat);

#endif /* ACT_CLI_SUMMARY_H */
