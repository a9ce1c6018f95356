/* SPDX-License-Identifier: MIT */
/*
 * Devices described by the application (record.h): thin wrappers over the
 * engine services the plugin host uses too, acting on the started session
 * with the application as the record source (source 0).
 */
#include <math.h>
#include <string.h>

#include "engine/engine.h"

static int device_ok(act_session *s, uint32_t device)
{
    return s && device < act__device_count(s);
}

int act_device_add(const char *name, const char *vendor, uint32_t *out)
{
    act_session *s = act_session_active();
    if (!s)
        return ACT_ESTATE;
    if (!out)
        return ACT_EINVAL;
    /* From a signal handler that interrupted a recording call of this
     * thread (which may hold the session lock): refuse, never deadlock. */
    if (!act__rec_enter())
        return ACT_ESTATE;
    int rc = act__device_add(s, 0, name ? name : "", vendor, out);
    act__rec_leave();
    return rc;
}

static int prop(uint32_t device, const char *key, act__arg *a)
{
    act_session *s = act_session_active();
    if (!s)
        return ACT_ESTATE;
    if (!key)
        return ACT_EINVAL;
    a->key = key;
    a->key_len = strlen(key);
    if (!act__rec_enter())
        return ACT_ESTATE;
    int rc = device_ok(s, device) ? act__device_prop(s, device, a) : ACT_EINVAL;
    act__rec_leave();
    return rc;
}

int act_device_prop_int(uint32_t device, const char *key, int64_t value)
{
    act__arg a = {.kind = ACT__V_INT, .v.i = value};
    return prop(device, key, &a);
}

int act_device_prop_str(uint32_t device, const char *key, const char *value)
{
    act__arg a = {.kind = ACT__V_STR};
    a.v.s.p = value ? value : "";
    a.v.s.n = strlen(a.v.s.p);
    return prop(device, key, &a);
}

int act_device_prop_double(uint32_t device, const char *key, double value)
{
    if (!isfinite(value))
        return ACT_EINVAL;
    act__arg a = {.kind = ACT__V_DOUBLE, .v.d = value};
    return prop(device, key, &a);
}

int act_stream_name(uint32_t device, uint64_t stream, const char *name)
{
    act_session *s = act_session_active();
    if (!s)
        return ACT_ESTATE;
    if (!act__rec_enter())
        return ACT_ESTATE;
    int rc = ACT_EINVAL;
    if (name && device_ok(s, device))
        rc = act__stream_name(s, device, stream, name, strlen(name));
    act__rec_leave();
    return rc;
}

static void device_span_record(act_session *s, act_activity_type type, uint32_t device,
                               uint64_t stream, const char *name, int64_t start_ns,
                               int64_t end_ns)
{
    act__thread *t = act__thread_for(s);
    if (!t)
        return;
    if (act__type_slot(type) < 0) {
        act__thread_drop(t, type, ACT__DROP_BAD_TYPE);
        return;
    }
    if (!act__type_selected(s, type)) {
        act__thread_drop(t, type, ACT__DROP_NOT_SELECTED);
        return;
    }
    if (end_ns < start_ns || !act__session_time_ok(s, start_ns) ||
        !act__session_time_ok(s, end_ns)) {
        act__thread_drop(t, type, ACT__DROP_BAD_TIMES);
        return;
    }
    if (!device_ok(s, device)) {
        act__thread_drop(t, type, ACT__DROP_BAD_TYPE);
        return;
    }
    act__emit_record r;
    memset(&r, 0, sizeof r);
    r.kind = ACT__EMIT_DEVICE_SPAN;
    r.type = type;
    r.source = 0;
    r.device = device;
    r.stream = stream;
    r.start_ns = start_ns;
    r.end_ns = end_ns;
    r.external_id = act_correlation_current();
    r.name = name ? name : "";
    r.name_len = strlen(r.name);
    act__emit_guarded(s, &r); /* counts its own drop when the buffer is full */
}

void act_device_span_record(act_activity_type type, uint32_t device, uint64_t stream,
                            const char *name, int64_t start_ns, int64_t end_ns)
{
    act_session *s = act__rd_begin();
    if (!s)
        return;
    if (!act__rec_enter_counted()) {
        act__reentrant_drop(s);
        act__rd_end();
        return;
    }
    device_span_record(s, type, device, stream, name, start_ns, end_ns);
    act__rec_leave();
    act__rd_end();
}

static void device_counter(act_session *s, uint32_t device, const char *track,
                           const char *series, const char *unit, int64_t ts_ns,
                           double value)
{
    act__thread *t = act__thread_for(s);
    if (!t)
        return;
    if (!track || !series || !device_ok(s, device)) {
        act__thread_drop(t, -1, ACT__DROP_BAD_TYPE);
        return;
    }
    if (!isfinite(value)) {
        act__thread_drop(t, -1, ACT__DROP_NONFINITE);
        return;
    }
    if (!act__session_time_ok(s, ts_ns)) {
        act__thread_drop(t, -1, ACT__DROP_BAD_TIMES);
        return;
    }
    uint32_t id;
    if (act__series_find(s, 0, device, track, series, unit, &id, NULL) != 0) {
        act__thread_drop(t, -1, ACT__DROP_BUFFER_FULL);
        return;
    }
    act__counter_sample_guarded(s, id, ts_ns, value);
}

void act_device_counter(uint32_t device, const char *track, const char *series,
                        const char *unit, int64_t ts_ns, double value)
{
    act_session *s = act__rd_begin();
    if (!s)
        return;
    if (!act__rec_enter_counted()) {
        act__reentrant_drop(s);
        act__rd_end();
        return;
    }
    device_counter(s, device, track, series, unit, ts_ns, value);
    act__rec_leave();
    act__rd_end();
}
