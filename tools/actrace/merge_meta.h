/* SPDX-License-Identifier: MIT */
/*
 * What a merged trace keeps of each input's identity (merge_meta.c), shared
 * by record's merge (record_merge.c) and `actrace merge` (cmd_merge.c):
 * distributedInfo, trace_id, group_trace_id and host_name, per input in its
 * "actraceProcesses" entry and, where HTA and Kineto look for them, at the
 * top of the merged trace.
 */
#ifndef ACT_CLI_MERGE_META_H
#define ACT_CLI_MERGE_META_H

#include <stddef.h>
#include <stdint.h>

#include "reader/reader.h"
#include "writer/json_out.h"

typedef struct act__merge_meta {
    act__jv *dist, *trace_id, *group_id, *host; /* copies, or NULL */
    int has_rank;     /* a rank that a launcher variable set: the rank is
                         in distributedInfo and no "actraceRankDefault" */
    int rank_default; /* "actraceRankDefault": true */
    int64_t rank;     /* distributedInfo.rank */
} act__merge_meta;

/** Keeps top-level member @p key = @p v when it is one of the above.
 *  Returns 1 when it was, 0 otherwise. Exits on out of memory. */
int act__merge_meta_take(act__merge_meta *m, const char *key, const act__jv *v);

/** Writes, each followed by ",\n": the distributedInfo of the first of @p n
 *  inputs with a rank set (else the first with one; HTA reads one rank per
 *  file), in Kineto's spaced
 *  layout so that HTA's "rank":\s+(\d+) finds it; then trace_id,
 *  group_trace_id and host_name where every input that has one agrees. */
void act__merge_meta_put_top(act__out *o, const act__merge_meta *const *m, size_t n);

/** Writes the members of an input's actraceProcesses entry, each with a
 *  leading ',': "rank" (when set), "distributedInfo", "trace_id", "group_trace_id",
 *  "host_name" (those it has). */
void act__merge_meta_put_entry(act__out *o, const act__merge_meta *m);

void act__merge_meta_free(act__merge_meta *m);

/** Replaces *@p slot (freed) with a copy of @p v. Exits on out of memory. */
void act__merge_keep(act__jv **slot, const act__jv *v);

#endif
