/* SPDX-License-Identifier: MIT */
/*
 * What both trace writers (chrome.c, perfetto.c) use and neither owns: the
 * sink's open and close with the writers' error messages, and the two JSON
 * blocks both traces carry (a deviceProperties entry; actraceStats, which
 * the Perfetto trace keeps as an annotation).
 *
 * Layering inside writer/ (tests/layering/check_layering.sh): write.c
 * dispatches to chrome.c or perfetto.c; those two never call each other;
 * both call down into this file, visit.c, pftrace.c and the sink
 * (json_fmt.c, out_sink.c), which call no writer.
 */
#ifndef ACT_WRITER_COMMON_H
#define ACT_WRITER_COMMON_H

#include <stddef.h>

#include "writer/json_out.h"
#include "writer/visit.h"

/** Open @p o on @p path for a writer; the message in @p err on failure. */
int act__writer_open(act__out *o, const char *path, char *err, size_t errcap);
/** Finish @p o (or abandon it when @p oom, with an out-of-memory message
 *  unless the sink has an error of its own, which then wins). */
int act__writer_close(act__out *o, int oom, const char *path, char *err, size_t errcap);

/** One deviceProperties entry as a JSON object. */
void act__write_device_json(act__out *o, const act__vdevice *dev);

/** actraceStats as one compact JSON object. */
void act__write_stats_json(act__out *o, const act__vstats *st);

#endif /* ACT_WRITER_COMMON_H */
