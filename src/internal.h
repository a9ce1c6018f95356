/* SPDX-License-Identifier: MIT */
/*
 * act__ internals shared between components. Nothing here is exported.
 *
 * Engine services for the plugin host (src/plugin): devices, streams,
 * record emission and counter series. The plugin layer validates what a
 * plugin hands it (types, devices, times, UTF-8, sizes), counts what it
 * rejects, and passes only valid data here.
 */
#ifndef ACT_INTERNAL_H
#define ACT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "actrace/actrace.h"

#if defined(__GNUC__) || defined(__clang__)
#define ACT_LIKELY(x) __builtin_expect(!!(x), 1)
#define ACT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ACT_HIDDEN __attribute__((visibility("hidden")))
#else
#define ACT_LIKELY(x) (x)
#define ACT_UNLIKELY(x) (x)
#define ACT_HIDDEN
#endif

#define ACT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- time --------------------------------------------------------------- */

/* Timestamps beyond +-2^62 ns (146 years) are refused where they enter; the
 * engine then also refuses those far from the session (engine.h,
 * ACT__TIME_WINDOW), so the writer's arithmetic can never overflow. */
#define ACT__TIME_MAX (INT64_C(1) << 62)
static inline int act__time_ok(int64_t t)
{
    return t >= -ACT__TIME_MAX && t <= ACT__TIME_MAX;
}

/* ---- typed values (args and device properties) ------------------------ */

typedef enum act__vkind {
    ACT__V_INT = 0,
    ACT__V_UINT = 1,
    ACT__V_DOUBLE = 2,
    ACT__V_BOOL = 3,
    ACT__V_STR = 4,
    ACT__V_JSON = 5 /* a JSON text, recorded as a string (act_arg_json);
                       written verbatim where act__json_valid, else as a string */
} act__vkind;

/* Kinds whose value is a string reference (ACT__V_STR, ACT__V_JSON). */
static inline int act__vkind_text(unsigned kind)
{
    return kind == ACT__V_STR || kind == ACT__V_JSON;
}

typedef struct act__arg {
    const char *key; /* any bytes */
    size_t key_len;
    act__vkind kind;
    union {
        int64_t i;
        uint64_t u;
        double d;
        int b;
        struct {
            const char *p; /* any bytes */
            size_t n;
        } s;
    } v;
} act__arg;

/* ---- sources: index 0 is the application, plugins get 1.. ------------- */

/* Register a record source (one per loaded plugin). @p backend is the
 * backend name used for Kineto categories ("cuda" -> "cuda_runtime").
 * Returns 0 and the source id, or ACT_ELIMIT (at most 255 sources). */
int act__source_add(act_session *s, const char *name, const char *backend,
                    uint16_t *out);
/* The source's plugin was refused after it registered (its init declined
 * or failed): what it described (devices, counter tracks) is left out of
 * the trace. */
void act__source_retire(act_session *s, uint16_t source);

/* ---- devices and streams --------------------------------------------- */

#define ACT__HOST_DEVICE UINT32_MAX

/* Describe a device; returns its index (0..). The trace gives each device a
 * pid in a reserved range with process_name/process_sort_index metadata and
 * an entry in "deviceProperties". */
int act__device_add(act_session *s, uint16_t source, const char *name,
                    const char *vendor, uint32_t *out);
/* A typed property of a device (written in deviceProperties). Copied. */
int act__device_prop(act_session *s, uint32_t device, const act__arg *prop);
/* Name a stream/queue of a device (written as thread_name of its tid). */
int act__stream_name(act_session *s, uint32_t device, uint64_t stream,
                     const char *name, size_t len);
/* Number of devices described so far. */
uint32_t act__device_count(const act_session *s);
/* Names host thread @p tid, process-wide (latest wins). by_plugin marks
 * a name given through the plugin host table (name_thread): the writer
 * emits it even for a tid with no chunk of its own, whose events all came
 * through a plugin's emit. */
int act__thread_name_set(int32_t tid, const char *name, size_t len,
                         int by_plugin);

/* ---- records --------------------------------------------------------- */

typedef enum act__emit_kind {
    ACT__EMIT_DEVICE_SPAN = 0, /* on device/stream */
    ACT__EMIT_HOST_SPAN = 1,   /* on host pid/tid (runtime/driver calls) */
    ACT__EMIT_INSTANT = 2      /* device instant if device != HOST, else host */
} act__emit_kind;

typedef struct act__emit_record {
    act__emit_kind kind;
    act_activity_type type; /* canonical, selected */
    uint16_t source;
    uint32_t device;        /* device index, or ACT__HOST_DEVICE */
    uint64_t stream;        /* device stream id, or host tid */
    int64_t start_ns, end_ns;
    uint64_t correlation; /* links a host API span to device work; 0 none */
    uint64_t external_id; /* external correlation ("External id"); 0 none */
    const char *name;     /* any bytes */
    size_t name_len;
    const act__arg *args;
    size_t nargs;
} act__emit_record;

/* Append one record into the calling thread's buffer. Returns 0, or
 * ACT_ELIMIT when the buffer limit dropped it (counted by the session),
 * ACT_ERANGE when a time is outside the session's window (counted as
 * bad_times; engine.h, ACT__TIME_WINDOW), ACT_ESTATE when the session is
 * not collecting. */
int act__emit(act_session *s, const act__emit_record *r);

/* ---- counters -------------------------------------------------------- */

/* Ticks on the helper thread (the plugin ABI's every/every_cancel).
 * act__tick_add: call @p fn(@p arg, now) every @p period_ns (the first
 * time one period from now) for @p owner; *@p id receives its handle (>
 * 0). ACT_ESTATE when no helper runs in this process (not started, stopped,
 * a forked child, or its creation failed: the caller uses a thread of its
 * own), ACT_ELIMIT when ACT__TICKS_MAX are registered.
 * act__tick_cancel: removes @p owner's tick @p id (0: all of @p owner's),
 * then, unless called on the helper thread itself (from a tick), waits
 * for one of them that is running to return, at most @p wait_ms (<= 0:
 * for ever). 0, ACT_ENOENT when @p id is not a live tick of @p owner, or
 * ACT_EBUSY when the wait gave up (the helper is then abandoned:
 * helper_stuck). A no-op (0) in a process where no helper runs. */
int act__tick_add(act_session *s, const void *owner, int64_t period_ns,
                  void (*fn)(void *arg, int64_t now_ns), void *arg, uint32_t *id);
int act__tick_cancel(act_session *s, const void *owner, uint32_t id, int64_t wait_ms);
/* Shortest and longest period of a plugin's tick (act_plugin_host.every). */
#define ACT__PLUGIN_TICK_MIN_NS INT64_C(1000000)
#define ACT__PLUGIN_TICK_MAX_NS (INT64_C(3600) * 1000000000)

/* Declare a counter series: on @p device (or ACT__HOST_DEVICE), track name,
 * series name, unit (may be NULL). The same triple returns the same id. */
int act__counter_series(act_session *s, uint16_t source, uint32_t device,
                        const char *track, const char *series,
                        const char *unit, uint32_t *out);
/* One sample; the value must be finite (callers check). ACT_ERANGE (and
 * counted as bad_times) when @p ts_ns is outside the session's window. */
int act__counter_sample(act_session *s, uint32_t series, int64_t ts_ns,
                        double value);

/* ---- session state the plugin host needs ------------------------------ */

/* Selected activity types of the session. */
const act_activity_set *act__session_types(const act_session *s);
/* 1 while the session is collecting (started, not stopped). */
int act__session_collecting(const act_session *s);

/* The process generation: 0 in the process that loaded the library,
 * bumped by the engine's fork handler in every fork()ed child (before any
 * other thread exists there). A session, and a plugin context, remember
 * the generation they were created in and refuse to record in another:
 * a child's copy of its parent's session is never written to, so the
 * child cannot scribble into the parent's shared spool. One load and a
 * compare, no getpid() on any recording path. */
extern unsigned act__fork_gen;

/* Fork handlers of the activity-type registry lock (activity_type.c),
 * installed with the engine's at library load (engine/session.c). */
void act__types_atfork_prepare(void);
void act__types_atfork_parent(void);
void act__types_atfork_child(void);

#endif /* ACT_INTERNAL_H */
