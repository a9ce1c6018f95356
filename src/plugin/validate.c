/* SPDX-License-Identifier: MIT */
/*
 * Validation of plugin data. Everything a plugin hands over is checked
 * here before it reaches the engine: a plugin may be buggy, old or
 * hostile, and one bad record must cost that record only.
 */
#include <math.h>
#include <string.h>

#include "plugin/validate.h"

#define ARG_KEY_MAX 256u
#define ARG_STR_MAX 65536u

static const char *const prej_texts[ACT__PREJ_COUNT] = {
    [ACT__PREJ_NONE] = "valid",
    [ACT__PREJ_BATCH] = "batch refused (NULL array or more than "
                        "ACT_PLUGIN_BATCH_MAX elements)",
    [ACT__PREJ_STRUCT_SIZE] = "struct_size smaller than ABI 1.0's, larger "
                              "than ACT_PLUGIN_STRUCT_MAX, not a multiple "
                              "of 8, or differing within a batch",
    [ACT__PREJ_KIND] = "unknown record kind",
    [ACT__PREJ_TYPE] = "unknown activity type code",
    [ACT__PREJ_SHAPE] = "activity type or kind not drawable as a record "
                        "(counter/correlation type, or device span on the "
                        "host)",
    [ACT__PREJ_DEVICE] = "unknown device (not described by this plugin)",
    [ACT__PREJ_TIME] = "timestamp negative or beyond 2^62 ns",
    [ACT__PREJ_ORDER] = "end before start",
    [ACT__PREJ_NAME_NULL] = "NULL name",
    [ACT__PREJ_NAME_LEN] = "name longer than ACT_PLUGIN_NAME_MAX bytes",
    [ACT__PREJ_NAME_UTF8] = "name is not valid UTF-8",
    [ACT__PREJ_ARGS] = "more than ACT_PLUGIN_ARGS_MAX args, or NULL args",
    [ACT__PREJ_ARG] = "invalid arg (key NULL, empty, over 256 bytes or not "
                      "UTF-8; unknown kind; non-finite double; string NULL "
                      "or over 64 KiB)",
    [ACT__PREJ_COUNTER] = "unknown counter track",
    [ACT__PREJ_VALUE] = "non-finite counter value",
    [ACT__PREJ_CALL] = "host function called with invalid arguments",
};

static const char *const prej_names[ACT__PREJ_COUNT] = {
    [ACT__PREJ_NONE] = "valid",          [ACT__PREJ_BATCH] = "batch",
    [ACT__PREJ_STRUCT_SIZE] = "struct_size", [ACT__PREJ_KIND] = "kind",
    [ACT__PREJ_TYPE] = "type",           [ACT__PREJ_SHAPE] = "shape",
    [ACT__PREJ_DEVICE] = "device",       [ACT__PREJ_TIME] = "time",
    [ACT__PREJ_ORDER] = "order",         [ACT__PREJ_NAME_NULL] = "name_null",
    [ACT__PREJ_NAME_LEN] = "name_len",   [ACT__PREJ_NAME_UTF8] = "name_utf8",
    [ACT__PREJ_ARGS] = "args",           [ACT__PREJ_ARG] = "arg",
    [ACT__PREJ_COUNTER] = "counter",     [ACT__PREJ_VALUE] = "value",
    [ACT__PREJ_CALL] = "call",
};

const char *act__prej_name(act__prej r)
{
    return (unsigned)r < ACT__PREJ_COUNT && prej_names[r] ? prej_names[r] : "unknown";
}

const char *act__prej_text(act__prej r)
{
    if ((unsigned)r >= ACT__PREJ_COUNT)
        return "unknown reason";
    return prej_texts[r];
}

act__prej act__pcheck_name(const char *s, uint64_t len, uint64_t cap)
{
    if (!s)
        return ACT__PREJ_NAME_NULL;
    if (len > cap)
        return ACT__PREJ_NAME_LEN;
    if (!act__utf8_valid(s, (size_t)len))
        return ACT__PREJ_NAME_UTF8;
    return ACT__PREJ_NONE;
}

act__prej act__pcheck_cstr(const char *s, size_t cap)
{
    if (!s)
        return ACT__PREJ_NAME_NULL;
    /* memchr bounds the scan: a missing NUL must not run off forever. */
    const char *end = memchr(s, '\0', cap + 1);
    if (!end)
        return ACT__PREJ_NAME_LEN;
    return act__pcheck_name(s, (uint64_t)(end - s), cap);
}

int act__pcheck_stride(uint32_t size, uint32_t min_size)
{
    return size >= min_size && size <= ACT_PLUGIN_STRUCT_MAX &&
           size % 8u == 0;
}

act__prej act__pcheck_args(const act_plugin_arg *args, uint32_t nargs,
                           act__arg *out)
{
    if (nargs == 0)
        return ACT__PREJ_NONE;
    if (nargs > ACT_PLUGIN_ARGS_MAX || !args)
        return ACT__PREJ_ARGS;
    uint32_t stride = args->struct_size;
    if (!act__pcheck_stride(stride, ACT_PLUGIN_ARG_SIZE_1_0))
        return ACT__PREJ_STRUCT_SIZE;
    const unsigned char *base = (const unsigned char *)args;
    for (uint32_t i = 0; i < nargs; i++) {
        /* One copy of each arg is checked and converted (key_len, string
         * length): a plugin thread changing the arg meanwhile cannot make
         * the two disagree. The bytes the pointers lead to stay the
         * plugin's; the writer escapes them whatever they become. */
        act_plugin_arg copy;
        const unsigned char *src = base + (size_t)i * stride;
        uint32_t size;
        memcpy(&size, src, sizeof size);
        if (size != stride)
            return ACT__PREJ_STRUCT_SIZE;
        memset(&copy, 0, sizeof copy);
        memcpy(&copy, src, stride < sizeof copy ? stride : sizeof copy);
        const act_plugin_arg *a = &copy;
        if (!a->key || a->key_len == 0 || a->key_len > ARG_KEY_MAX ||
            !act__utf8_valid(a->key, a->key_len))
            return ACT__PREJ_ARG;
        act__arg *o = &out[i];
        o->key = a->key;
        o->key_len = a->key_len;
        switch (a->kind) {
        case ACT_PLUGIN_ARG_INT:
            o->kind = ACT__V_INT;
            o->v.i = a->v.i;
            break;
        case ACT_PLUGIN_ARG_UINT:
            o->kind = ACT__V_UINT;
            o->v.u = a->v.u;
            break;
        case ACT_PLUGIN_ARG_DOUBLE:
            if (!isfinite(a->v.d))
                return ACT__PREJ_ARG;
            o->kind = ACT__V_DOUBLE;
            o->v.d = a->v.d;
            break;
        case ACT_PLUGIN_ARG_BOOL:
            o->kind = ACT__V_BOOL;
            o->v.b = a->v.b != 0;
            break;
        case ACT_PLUGIN_ARG_STRING:
            /* Values are any bytes: the writer escapes and replaces
             * invalid UTF-8. Only the pointer and size are checked. */
            if ((!a->v.s.ptr && a->v.s.len) || a->v.s.len > ARG_STR_MAX)
                return ACT__PREJ_ARG;
            o->kind = ACT__V_STR;
            o->v.s.p = a->v.s.ptr ? a->v.s.ptr : "";
            o->v.s.n = (size_t)a->v.s.len;
            break;
        default:
            return ACT__PREJ_ARG;
        }
    }
    return ACT__PREJ_NONE;
}

act__prej act__pcheck_record(const act_plugin_record *r, uint32_t ndev,
                             act__emit_record *out, act__arg *args)
{
    act__emit_kind kind;
    switch (r->kind) {
    case ACT_PLUGIN_RECORD_DEVICE_SPAN:
        kind = ACT__EMIT_DEVICE_SPAN;
        break;
    case ACT_PLUGIN_RECORD_HOST_SPAN:
        kind = ACT__EMIT_HOST_SPAN;
        break;
    case ACT_PLUGIN_RECORD_INSTANT:
        kind = ACT__EMIT_INSTANT;
        break;
    default:
        return ACT__PREJ_KIND;
    }
    act_activity_type type;
    if (act_activity_type_canonical(r->type, &type) != 0)
        return ACT__PREJ_TYPE;
    act_activity_shape shape;
    if (act_activity_type_shape(type, &shape) != 0)
        return ACT__PREJ_TYPE;
    if (shape == ACT_SHAPE_COUNTER || shape == ACT_SHAPE_CORRELATION)
        return ACT__PREJ_SHAPE;
    if (r->device == ACT_PLUGIN_HOST_DEVICE) {
        if (kind == ACT__EMIT_DEVICE_SPAN)
            return ACT__PREJ_SHAPE;
    } else {
        if (kind == ACT__EMIT_HOST_SPAN)
            return ACT__PREJ_SHAPE;
        if (r->device >= ndev)
            return ACT__PREJ_DEVICE;
    }
    if (r->start_ns < 0 || r->start_ns > ACT__TIME_MAX)
        return ACT__PREJ_TIME;
    int64_t end = kind == ACT__EMIT_INSTANT ? r->start_ns : r->end_ns;
    if (end < r->start_ns)
        return ACT__PREJ_ORDER;
    if (end > ACT__TIME_MAX)
        return ACT__PREJ_TIME;
    act__prej e = act__pcheck_name(r->name, r->name_len, ACT_PLUGIN_NAME_MAX);
    if (e)
        return e;
    e = act__pcheck_args(r->args, r->nargs, args);
    if (e)
        return e;

    out->kind = kind;
    out->type = type;
    out->source = 0; /* the caller sets source and maps the device */
    out->device = r->device == ACT_PLUGIN_HOST_DEVICE ? ACT__HOST_DEVICE
                                                      : r->device;
    out->stream = r->stream;
    out->start_ns = r->start_ns;
    out->end_ns = end;
    out->correlation = r->correlation;
    out->external_id = r->external_id;
    out->name = r->name;
    out->name_len = r->name_len;
    out->args = r->nargs ? args : NULL;
    out->nargs = r->nargs;
    return ACT__PREJ_NONE;
}
