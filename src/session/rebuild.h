/* SPDX-License-Identifier: MIT */
/*
 * The spool's rebuild as the actrace command calls it (record, after a
 * process that did not write its trace): the one private symbol the
 * library exports (libactrace.map, ACTRACE_PRIVATE).
 */
#ifndef ACT_SESSION_REBUILD_H
#define ACT_SESSION_REBUILD_H

#include <stddef.h>

#include "engine/spool.h" /* ACT__SPOOL_SKIP_EMPTY, ACT__SPOOL_SKIP_IDLE */

/* Build the trace of the process that spooled to BASE.* and write it to
 * @p out, in a process that records nothing (its thread and process names
 * are replaced by the dead process's). 0, 1 (skipped: ACT__SPOOL_SKIP_EMPTY), 2 (the light
 * log of a process that recorded nothing and exited normally: written, not
 * marked rebuilt), or -1 with a message in
 * @p err. Exported (private, for the actrace command only: not part of
 * the API). */
__attribute__((visibility("default"))) int act__spool_rebuild(const char *base, const char *out,
                                                              unsigned flags, char *err,
                                                              size_t errlen);

#endif /* ACT_SESSION_REBUILD_H */
