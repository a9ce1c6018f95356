/* SPDX-License-Identifier: MIT */
/*
 * Reading a session back: one walk over everything a stopped session
 * recorded, for consumers that are not actrace's own writers (the
 * torch.profiler bridge hands it to Kineto; a vendor tool may hand it to
 * its own format). It is the same walk the Chrome JSON and Perfetto
 * writers make, so a consumer sees exactly what a trace file would carry:
 *
 *   begin(info)                 once: pid, clocks, trace ids
 *   device(dev)                 each device a live plugin described
 *   track(t)                    process and thread names: the host
 *                               process, named threads, each device as a
 *                               process (tid -1) and its streams
 *   event(e)                    every span and instant, thread by thread,
 *                               in start order, parents before children
 *   counter_track(ct)           a counter track (its series) ...
 *   counter(ct, cs)             ... and each time one of them was sampled
 *   end(stats)                  once: drops, plugins and their warnings
 *
 * What the walk resolves, so consumers need not: pids and tids of device
 * streams (device processes have pids from 0x40000000, above any Linux
 * pid), categories, flow ids linking a runtime call to the device work it
 * launched (set only when both sides exist), the end of a span still open
 * when the session stopped.
 *
 * Lifetimes: every pointer handed to a callback (names, args, arrays,
 * the structs themselves) is valid only until that callback returns; copy
 * what you keep. The session's lock is held for the whole walk, so a
 * callback must not call any act_session_* function or record into the
 * session being visited (other sessions and act_log are fine).
 *
 * ABI: every struct starts with struct_size and only grows at its end.
 * The library fills its own structs and sets struct_size to what it
 * filled: check it before reading a field newer than your header
 * (ACT_VISIT_HAS(p, type, field)). Of act_visitor and act_visit_arg, the library
 * reads only what the caller's struct_size covers.
 */
#ifndef ACTRACE_VISIT_H
#define ACTRACE_VISIT_H

#include <stddef.h>
#include <stdint.h>

#include "actrace/export.h"
#include "actrace/session.h"

#ifdef __cplusplus
extern "C" {
#endif

/** True when the library-filled struct @p p, of type @p type, carries
 *  @p field. */
#define ACT_VISIT_HAS(p, type, field) \
    ((p)->struct_size >= offsetof(type, field) + sizeof(((const type *)0)->field))

/** device of host events (act_visit_event.device, act_visit_track.device). */
#define ACT_VISIT_HOST UINT32_MAX

/** Start of the pids given to devices' processes (device id added). */
#define ACT_VISIT_DEVICE_PID_BASE 0x40000000

typedef struct act_visit_info {
    uint32_t struct_size;
    int32_t pid;              /**< the process that recorded */
    int64_t mono_to_unix_ns;  /**< add to an event's time: Unix-epoch ns
                                   (the session's offset, read at start) */
    int64_t base_unix_ns;     /**< baseTimeNanoseconds of a written trace */
    int64_t start_ns;         /**< the session's start (monotonic), 0: never started */
    const char *trace_id;     /**< REQUEST_TRACE_ID or NULL */
    const char *host_name;
    /* end of ABI 0.3 */
} act_visit_info;

typedef struct act_visit_device {
    uint32_t struct_size;
    uint32_t id;          /**< as in act_visit_event.device */
    int32_t pid;          /**< its process in a trace */
    uint32_t reserved;
    const char *name, *vendor;
    const char *backend;  /**< the plugin's backend name ("opencl", ...) */
    /* end of ABI 0.3 */
} act_visit_device;

/** A named process or thread (tid -1: the process itself). */
typedef struct act_visit_track {
    uint32_t struct_size;
    int32_t pid;
    int64_t tid;          /**< -1: the process */
    const char *name;
    int64_t sort_index;   /**< processes: their position in a viewer */
    uint32_t device;      /**< processes: the device, or ACT_VISIT_HOST */
    uint8_t is_stream;    /**< threads: a device stream */
    uint8_t reserved[3];
    /* end of ABI 0.3 */
} act_visit_track;

enum {
    ACT_VISIT_SPAN = 0,
    ACT_VISIT_INSTANT = 1
};

enum {
    ACT_VISIT_FLOW_NONE = 0,
    ACT_VISIT_FLOW_START = 1, /**< a launch: the flow starts here */
    ACT_VISIT_FLOW_END = 2    /**< device work: the flow ends here */
};

typedef struct act_visit_event {
    uint32_t struct_size;
    uint8_t kind;        /**< ACT_VISIT_SPAN or ACT_VISIT_INSTANT */
    uint8_t open;        /**< a span not ended when the session stopped (end_ns: the stop) */
    uint8_t flow_dir;    /**< ACT_VISIT_FLOW_* */
    uint8_t from_plugin; /**< recorded by a plugin (else by the application) */
    int32_t type;        /**< activity type code (activity_type.h) */
    uint32_t source;     /**< 0: the application; a plugin: its index + 1 */
    int32_t pid;
    uint32_t tid;        /**< a thread, or a device stream's track */
    int64_t start_ns, end_ns; /**< monotonic (act_now_ns); equal for instants */
    uint64_t external_id;     /**< the thread's correlation id at the call, 0: none */
    uint64_t correlation;     /**< a plugin's own correlation id, 0: none */
    uint32_t device;          /**< ACT_VISIT_HOST for host events */
    uint32_t nargs_hint;      /**< 0: the event has no args */
    uint64_t stream;          /**< plugin events: the stream (or host tid) */
    uint64_t flow;            /**< flow id (< 2^53) when flow_dir != 0 */
    const char *name;         /**< not NUL-terminated in general: use name_len */
    size_t name_len;
    const char *category;     /**< as written in a trace's "cat" */
    const char *backend;      /**< plugin events: the plugin's backend; "" otherwise */
    const void *impl;         /**< private to the library (act_visit_event_args) */
    /* end of ABI 0.3 */
} act_visit_event;

enum {
    ACT_VISIT_ARG_INT = 0,
    ACT_VISIT_ARG_UINT = 1,
    ACT_VISIT_ARG_DOUBLE = 2,
    ACT_VISIT_ARG_BOOL = 3,
    ACT_VISIT_ARG_STRING = 4,
    /** Appended after ABI 0.3: a JSON text from act_arg_json() that the
     *  writers write verbatim (v.s holds it; it is valid JSON). Given only
     *  to callers whose struct_size covers act_visit_arg.from_json; to
     *  older callers, and for a text that is not valid JSON, it is
     *  ACT_VISIT_ARG_STRING. */
    ACT_VISIT_ARG_JSON = 5
};

typedef struct act_visit_arg {
    uint32_t struct_size; /**< set by the caller (sizeof) before the call */
    uint32_t kind;        /**< ACT_VISIT_ARG_* */
    const char *key;      /**< not NUL-terminated in general */
    size_t key_len;
    union {
        int64_t i;
        uint64_t u;
        double d;
        int b;
        struct {
            const char *ptr; /**< not NUL-terminated in general */
            size_t len;
        } s;
    } v;
    /* end of ABI 0.3 */
    /** Recorded by act_arg_json(): 1 with kind ACT_VISIT_ARG_JSON, and
     *  with kind ACT_VISIT_ARG_STRING when the text is no valid JSON (the
     *  writers write it as a string); else 0. Set when struct_size covers it. */
    uint8_t from_json;
    uint8_t reserved[7];
} act_visit_arg;

/**
 * The args of event @p e (inside its event callback only), as a trace
 * writes them: of a key given twice, only the last. Fills up to @p cap
 * entries of @p out (each entry's struct_size set by the caller; the
 * stride is out[0].struct_size).
 * @return the number of args the event has (may exceed @p cap), or 0.
 */
ACT_API size_t act_visit_event_args(const act_visit_event *e, act_visit_arg *out,
                                    size_t cap);

typedef struct act_visit_counter_track {
    uint32_t struct_size;
    uint32_t id;          /**< unique in this walk */
    int32_t pid;          /**< its device's process, or the host's */
    uint32_t device;      /**< or ACT_VISIT_HOST */
    const char *name;     /**< the track ("utilization", "cpu") */
    const char *category; /**< "host_counter" or "gpu_pm_counter" */
    size_t nseries;
    const char *const *series; /**< each series' name, nseries of them */
    const char *const *units;  /**< each series' unit, "" when none */
    /* end of ABI 0.3 */
} act_visit_counter_track;

typedef struct act_visit_sample {
    uint32_t struct_size;
    uint32_t reserved;
    int64_t ts_ns;              /**< monotonic */
    size_t nchanged;            /**< series sampled at ts_ns ... */
    const uint32_t *changed;    /**< ... as indexes into the track's series */
    const double *values;       /**< ... and their values */
    const double *current;      /**< every series' latest value (nseries) */
    const uint8_t *seen;        /**< series that have a value yet (nseries) */
    /* end of ABI 0.3 */
} act_visit_sample;

typedef struct act_visit_plugin {
    uint32_t struct_size;
    uint32_t reserved;
    const char *name, *path;
    uint64_t rejected;     /**< records it handed over that failed validation */
    uint64_t filtered;     /**< records of a type not selected */
    uint64_t dropped;      /**< records refused by the buffer limit */
    size_t nwarnings;      /**< its first warnings (log at WARN or ERROR) */
    const char *const *warnings;
    /* end of ABI 0.3 */
} act_visit_plugin;

typedef struct act_visit_stats {
    uint32_t struct_size;
    uint32_t reserved;
    uint64_t recorded, dropped;          /**< events: recorded + dropped == attempted */
    uint64_t args_recorded, args_dropped;
    size_t nreasons;                     /**< drops by reason ... */
    const char *const *reason_names;     /**< ... ("buffer_full", ...) */
    const uint64_t *by_reason;
    size_t nplugins;                     /**< plugins that loaded and started */
    const act_visit_plugin *const *plugins;
    uint64_t counter_samples;
    /* end of ABI 0.3 */
} act_visit_stats;

/** Callbacks of act_session_visit(); NULL ones are skipped. Initialise
 *  with act_visitor_init(). */
typedef struct act_visitor {
    uint32_t struct_size;
    uint32_t reserved;
    void *ctx; /**< passed to every callback */
    void (*begin)(void *ctx, const act_visit_info *info);
    void (*device)(void *ctx, const act_visit_device *dev);
    void (*track)(void *ctx, const act_visit_track *t);
    void (*event)(void *ctx, const act_visit_event *e);
    void (*counter_track)(void *ctx, const act_visit_counter_track *ct);
    void (*counter)(void *ctx, const act_visit_counter_track *ct, const act_visit_sample *cs);
    void (*end)(void *ctx, const act_visit_stats *stats);
    /* end of ABI 0.3 */
} act_visitor;

/** Zero @p v and set its struct_size. */
ACT_API void act_visitor_init(act_visitor *v);

/**
 * Walk what session @p s recorded, calling @p v's callbacks from the
 * calling thread. The session must be stopped (act_session_stop) or never
 * started; it stays unchanged, so it can be visited again or written.
 * @return 0; ACT_EINVAL (NULL argument, or a visitor larger than this
 *         library's whose unknown tail is not zero); ACT_ESTATE (the
 *         session is collecting); ACT_ENOMEM (the walk still completed as
 *         well as it could: some flows, counters or the event order may be
 *         missing).
 */
ACT_API int act_session_visit(act_session *s, const act_visitor *v);

/**
 * Walk the events of window @p w (actrace/session.h, appended after ABI
 * 0.3): what the session it was opened on recorded between its open and
 * close (until now when still open), read while that session keeps
 * collecting. The same walk as act_session_visit(), but event(): only
 * spans that started and ended inside the window (spans still open are
 * left out) and instants inside it; counter(): only samples inside it.
 * begin(), device(), track() and end() describe the whole session (its
 * stats are the session's totals so far). Records committed while the
 * walk runs may or may not be seen. The session's lock is held for the
 * walk, as in act_session_visit().
 * @return 0; ACT_EINVAL (NULL argument or a bad visitor, as above);
 *         ACT_ESTATE (the window's session is not the active one any more);
 *         ACT_ENOMEM (as above).
 */
ACT_API int act_window_visit(act_window *w, const act_visitor *v);

#ifdef __cplusplus
}
#endif
#endif /* ACTRACE_VISIT_H */
