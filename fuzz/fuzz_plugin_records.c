/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the plugin host's record validation: records and args built from
 * the input bytes (names and strings point into the input, so any byte
 * sequence and length reaches the checks) go through act__pcheck_record.
 * Whatever it accepts must honour the ABI's promises (valid UTF-8 name
 * within the cap, end >= start, a described device) and is emitted into a
 * live session whose trace must be valid JSON.
 */
#include <stdint.h>
#include <string.h>

#include "actrace/actrace.h"
#include "engine/engine.h"
#include "json_check.h"
#include "plugin/validate.h"

typedef struct in {
    const uint8_t *p;
    size_t n;
} in;

static uint64_t take(in *s, size_t bytes)
{
    uint64_t v = 0;
    for (size_t i = 0; i < bytes; i++) {
        v = (v << 8) | (s->n ? *s->p : 0);
        if (s->n) {
            s->p++;
            s->n--;
        }
    }
    return v;
}

/* A byte span of the input of length taken from the input (may claim more
 * than there is: then it is clamped, as a real plugin could not do). */
static const char *span(in *s, uint32_t *len)
{
    uint32_t n = (uint32_t)take(s, 1);
    if (n > s->n)
        n = (uint32_t)s->n;
    const char *p = (const char *)s->p;
    s->p += n;
    s->n -= n;
    *len = n;
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        act_log_set_level(ACT_LOG_OFF);
        quiet = 1;
    }
    act_session_opts o;
    act_session_opts_init(&o);
    o.config_text = "BUFFER_PREALLOC_MB = 0\nMAX_BUFFER_SIZE_MB = 4\n";
    o.config_text_len = strlen(o.config_text);
    act_session *s = NULL;
    if (act_session_create(&o, &s) != 0 || act_session_start(s) != 0) {
        act_session_destroy(s);
        return 0;
    }
    uint16_t source = 0;
    act__source_add(s, "fuzz", "cuda", &source);
    const uint32_t ndev = 2;
    for (uint32_t d = 0; d < ndev; d++) {
        uint32_t id;
        act__device_add(s, source, "dev", "vendor", &id);
    }
    in src = {data, size};
    act_plugin_arg args[8];
    const int64_t base = act_now_ns();
    while (src.n) {
        act_plugin_record r;
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        r.kind = (int32_t)(take(&src, 1) % 4) - (take(&src, 1) == 0xff);
        r.type = (int32_t)(take(&src, 2) % 1100) - 5;
        r.device = (uint32_t)take(&src, 1);
        if (r.device == 0xff)
            r.device = ACT_PLUGIN_HOST_DEVICE;
        r.stream = take(&src, 1);
        if (r.stream == 0xff) /* any 64-bit stream id */
            r.stream = take(&src, 8);
        /* Near the clock (times far from it are refused), sometimes anything. */
        r.start_ns = base + (int64_t)take(&src, 3) - 1000;
        if (take(&src, 1) == 0xfe)
            r.start_ns = (int64_t)take(&src, 8);
        r.end_ns = (int64_t)((uint64_t)r.start_ns + take(&src, 2) - 100); /* wraps: no UB */
        r.correlation = take(&src, 1);
        r.external_id = take(&src, 1);
        r.name = span(&src, &r.name_len);
        if (take(&src, 1) == 0x42)
            r.name = NULL;
        r.nargs = (uint32_t)(take(&src, 1) % 10);
        uint32_t na = r.nargs < 8 ? r.nargs : 8;
        for (uint32_t i = 0; i < na; i++) {
            act_plugin_arg *a = &args[i];
            memset(a, 0, sizeof *a);
            a->struct_size = sizeof *a;
            a->kind = (int32_t)(take(&src, 1) % 6);
            a->key = span(&src, &a->key_len);
            uint64_t v = take(&src, 8);
            memcpy(&a->v.u, &v, sizeof v);
            if (a->kind == ACT_PLUGIN_ARG_STRING) {
                uint32_t n;
                a->v.s.ptr = span(&src, &n);
                a->v.s.len = n;
            }
        }
        r.args = r.nargs ? args : NULL;
        if (r.nargs > 8)
            r.nargs = 8; /* the array holds 8: more is the batch's problem */

        act__emit_record out;
        act__arg conv[ACT_PLUGIN_ARGS_MAX];
        act__prej why = act__pcheck_record(&r, ndev, &out, conv);
        if (why != ACT__PREJ_NONE)
            continue;
        /* What validation promises. */
        if (!r.name || r.name_len > ACT_PLUGIN_NAME_MAX || !act__utf8_valid(r.name, r.name_len))
            abort();
        if (out.kind != ACT__EMIT_INSTANT && out.end_ns < out.start_ns)
            abort();
        if (out.device != ACT__HOST_DEVICE && out.device >= ndev)
            abort();
        out.source = source;
        act__emit(s, &out);
    }
    char path[] = "/tmp/act_fuzz_plugin_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    close(fd);
    if (act_session_write(s, path) != 0)
        abort();
    check_trace_lines(path);
    check_trace_file(path);
    act_session_destroy(s);
    return 0;
}
