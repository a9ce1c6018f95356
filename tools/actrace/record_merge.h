/* SPDX-License-Identifier: MIT */
/*
 * The merge step of `actrace record` (record_merge.c): the per-process
 * traces of a directory into one trace.
 */
#ifndef ACT_RECORD_MERGE_H
#define ACT_RECORD_MERGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct act__merge_result {
    size_t files;      /**< per-process traces merged */
    uint64_t events;   /**< events written */
    uint64_t dropped;  /**< sum of the files' actraceStats.dropped */
    size_t light_recovered; /**< light logs of processes that did not exit
                                 normally (their entries say "recovered") */
} act__merge_result;

struct act__light_set;
/** Merges every DIR/<pid>-<ns>.json, the light logs DIR/BASE.meta and the
 *  processes of @p light (record_light.h; entries not dropped, NULL: none)
 *  into @p out_path, written as the library writes a trace (temporary file
 *  and rename, gzip for ".gz", devices and FIFOs in place). Returns 0, or
 *  -1 with @p err set. */
int act__record_merge(const char *dir, const struct act__light_set *light, const char *out_path,
                      const char *trace_name, act__merge_result *res, char *err, size_t errcap);

/** `record --per-process`: moves every DIR/<pid>-<ns>.json to
 *  OUTDIR/rank-R_<pid>.pt.trace.json (record_split.c), R being its
 *  distributedInfo.rank; an existing name is kept unless @p force, and two
 *  processes never share one ("-2", ... before ".pt.trace.json"). Returns 0, or -1
 *  with @p err set (the files moved before stay moved). */
int act__record_split(const char *dir, const char *outdir, int force, act__merge_result *res,
                      char *err, size_t errcap);

struct act__rd;
/** Opens the trace at @p path for reading: *@p fd and a streaming reader
 *  *@p r over it (act__rd_destroy and close them). 0, or -1 with @p err
 *  set ("PATH: why", or out of memory). */
int act__merge_open(const char *path, int *fd, struct act__rd **r, char *err, size_t errcap);

/* Writers shared with `actrace merge` (cmd_merge.c), in record_merge.c. */
struct act__out;
struct act__jv;
/** @p v as compact JSON (strings escaped). */
void act__merge_put_value(struct act__out *o, const struct act__jv *v);
/** @p ns as microseconds with up to three decimals (integer maths). */
void act__merge_put_us(struct act__out *o, int64_t ns);
/** The merge of @p n actraceStats objects (some NULL): integers summed,
 *  objects merged key by key, anything else the first's. */
void act__merge_put_stats(struct act__out *o, const struct act__jv **vals, size_t n);

#endif
