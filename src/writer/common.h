/* SPDX-License-Identifier: MIT */
/*
 * What both trace writers (chrome.c, perfetto.c) use and neither owns: the
 * sink's open and close with the writers' error messages, and the two JSON
 * blocks both traces carry (a deviceProperties entry; actraceStats, which
 * the Perfetto trace keeps as an annotation), and the small output helpers
 * both use.
 *
 * Layering inside writer/ (tests/layering/check_layering.sh): write.c
 * dispatches to chrome.c or perfetto.c; those two never call each other;
 * both call down into this file, visit.c, pftrace.c and the sink
 * (json_fmt.c, out_sink.c), which call no writer.
 */
#ifndef ACT_WRITER_COMMON_H
#define ACT_WRITER_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "writer/json_out.h"
#include "writer/visit.h"

/* The writers' small output helpers, over the sink (json_out.h): a C
 * string as is, integers and doubles in JSON's form, a C string as a
 * JSON string. Inline: the JSON writer calls them per event. */
static inline void lit(act__out *o, const char *s)
{
    act__out_write(o, s, strlen(s));
}

static inline void put_i64(act__out *o, int64_t v)
{
    char *p = act__out_reserve(o, ACT__FMT_I64_MAX);
    act__out_commit(o, act__fmt_i64(p, v));
}

static inline void put_u64(act__out *o, uint64_t v)
{
    char *p = act__out_reserve(o, ACT__FMT_U64_MAX);
    act__out_commit(o, act__fmt_u64(p, v));
}

static inline void put_double(act__out *o, double v)
{
    char *p = act__out_reserve(o, ACT__FMT_DOUBLE_MAX);
    act__out_commit(o, act__fmt_double(p, v));
}

static inline void put_str0(act__out *o, const char *s)
{
    act__out_str(o, s, strlen(s));
}

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
