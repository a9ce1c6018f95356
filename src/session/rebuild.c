/* SPDX-License-Identifier: MIT */
/*
 * A dead process's trace, rebuilt from its spool (engine/spool.h): the
 * engine reads the spool into a session (act__spool_read), the writer that
 * the output's name asks for writes it (act__write_trace).
 */
#include "session/rebuild.h"
#include "writer/writers.h"

int act__spool_rebuild(const char *base, const char *out, unsigned flags, char *err,
                       size_t errlen)
{
    return act__spool_read(base, out, flags, act__write_trace, err, errlen);
}
