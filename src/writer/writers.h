/* SPDX-License-Identifier: MIT */
/*
 * The trace writers over the session visitor (visit.h). Each returns 0 or
 * a negative ACT_E* code with a message in @p err (naming the path); none
 * touches the session's state beyond reading it.
 */
#ifndef ACT_WRITER_WRITERS_H
#define ACT_WRITER_WRITERS_H

#include <stddef.h>

#include "writer/json_out.h"
#include "writer/visit.h"

/** Output formats. */
enum { ACT__FMT_JSON = 0, ACT__FMT_PERFETTO = 1 };

/** The format a path asks for: ".pftrace", ".pftrace.gz", ".perfetto-trace"
 *  (and its ".gz") are Perfetto's protobuf; anything else JSON. */
int act__format_of_path(const char *path);

/** Write @p s to @p path in the format the path (or OUTPUT_FORMAT) asks
 *  for (write.c). */
int act__write_trace(act_session *s, const char *path, char *err, size_t errcap);

/** Chrome Trace Event JSON (chrome.c). */
int act__write_chrome(act_session *s, const char *path, char *err, size_t errcap);

/** Perfetto protobuf (perfetto.c). */
int act__write_perfetto(act_session *s, const char *path, char *err, size_t errcap);

#endif /* ACT_WRITER_WRITERS_H */
