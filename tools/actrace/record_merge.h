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
} act__merge_result;

/** Merges every DIR/<pid>-<ns>.json into @p out_path, written as the
 *  library writes a trace (temporary file and rename, gzip for ".gz",
 *  devices and FIFOs in place). Returns 0, or -1 with @p err set. */
int act__record_merge(const char *dir, const char *out_path, const char *trace_name,
                      act__merge_result *res, char *err, size_t errcap);

#endif
