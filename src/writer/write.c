/* SPDX-License-Identifier: MIT */
/*
 * Which writer a trace goes through: OUTPUT_FORMAT (json, perfetto) when
 * the config names one, else the output path's extension.
 */
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
    int fmt = f && strcmp(f, "perfetto") == 0 ? ACT__FMT_PERFETTO
              : f && strcmp(f, "json") == 0   ? ACT__FMT_JSON
                                              : act__format_of_path(path);
    if (err && errcap)
        err[0] = '\0';
    return fmt == ACT__FMT_PERFETTO ? act__write_perfetto(s, path, err, errcap)
                                    : act__write_chrome(s, path, err, errcap);
}
