/* SPDX-License-Identifier: MIT */
/*
 * Which writer a trace goes through: the output path's extension when it
 * names a format (.json[.gz]: JSON; .pftrace[.gz], .perfetto-trace[.gz]:
 * Perfetto), else OUTPUT_FORMAT (auto and json: JSON; perfetto). A name
 * always wins over the key, so that `actrace record`'s per-process .json
 * traces stay JSON whatever the user's config says.
 */
#include <stdio.h>
#include <string.h>

#include "engine/engine.h"
#include "writer/writers.h"

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int act__format_of_path(const char *path)
{
    static const char *const pf[] = {".pftrace", ".pftrace.gz", ".perfetto-trace",
                                     ".perfetto-trace.gz"};
    for (size_t i = 0; i < ACT_ARRAY_SIZE(pf); i++)
        if (ends_with(path, pf[i]))
            return ACT__FMT_PERFETTO;
    return ACT__FMT_JSON;
}

int act__write_trace(act_session *s, const char *path, char *err, size_t errcap)
{
    const char *f = s->config ? act_config_get_str(s->config, "OUTPUT_FORMAT") : NULL;
    int fmt = act__format_of_path(path);
    if (fmt == ACT__FMT_JSON && !ends_with(path, ".json") && !ends_with(path, ".json.gz") && f &&
        strcmp(f, "perfetto") == 0)
        fmt = ACT__FMT_PERFETTO;
    if (err && errcap)
        err[0] = '\0';
    return fmt == ACT__FMT_PERFETTO ? act__write_perfetto(s, path, err, errcap)
                                    : act__write_chrome(s, path, err, errcap);
}
