/* SPDX-License-Identifier: MIT */
/*
 * actrace plugin ABI: the only header a backend plugin needs.
 *
 * A plugin is a shared object exporting one function, act_plugin_entry().
 * The host (libactrace) calls it with its table of services
 * (act_plugin_host) and the ABI version it speaks; the plugin returns its
 * own table (act_plugin) or NULL to decline. Everything the plugin records
 * goes through the host table as batches of plain structs: the plugin never
 * formats JSON, never links libactrace, and never sees host internals.
 *
 * Compatibility rules (docs/ABI.md is the promise):
 *  - Every struct that crosses the boundary starts with uint32_t
 *    struct_size; tables also carry the ABI major and minor.
 *  - Fields are only ever appended; a comment marks where each ABI minor
 *    ends, and _Static_assert pins every offset (LP64).
 *  - Each side reads only the fields that the other side's struct_size
 *    covers; a field beyond it is treated as absent (zero / NULL).
 *  - A NULL function pointer means "not implemented".
 *  - Enumerations cross the boundary as fixed-width integers.
 *  - A plugin built against an older minor of the same major keeps
 *    loading; a different major is refused with a message.
 *
 * Pure C11, compiles as C and C++. Strings are UTF-8; where a length is
 * given, the bytes need not be NUL-terminated.
 */
#ifndef ACTRACE_PLUGIN_H
#define ACTRACE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "actrace/activity_type.h"

#ifdef __cplusplus
extern "C" {
#endif

/** ABI version this header describes. */
#define ACT_PLUGIN_ABI_MAJOR 1
#define ACT_PLUGIN_ABI_MINOR 2

/** Name of the one symbol a plugin exports. */
#define ACT_PLUGIN_ENTRY_SYMBOL "act_plugin_entry"

/** Optional data symbol (an int, any value) a plugin exports to say that
 *  it can start lazily: under `actrace record`, a process that has not
 *  recorded yet loads no plugin at all, and this plugin wakes the
 *  process's session (calling act_session_active(), found with dlsym)
 *  when its runtime is first used there. A plugin without it makes every
 *  recorded process load its plugins at start (docs/plugins.md). */
#define ACT_PLUGIN_LAZY_SYMBOL "act_plugin_lazy"

/** Marks the entry point as exported even under -fvisibility=hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define ACT_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define ACT_PLUGIN_EXPORT
#endif

/* ---- return codes ----------------------------------------------------- */

/** Success. Host functions return 0 or a negative value; the negative
 *  values are libactrace's ACT_E* codes (actrace/errors.h), listed here
 *  so a plugin needs no other header. */
#define ACT_PLUGIN_OK 0
#define ACT_PLUGIN_EINVAL (-1)   /**< invalid argument */
#define ACT_PLUGIN_ENOMEM (-2)   /**< out of memory */
#define ACT_PLUGIN_ESTATE (-7)   /**< not collecting */
#define ACT_PLUGIN_ELIMIT (-10)  /**< a limit was reached */
#define ACT_PLUGIN_ENOTSUP (-11) /**< not supported by this host */
/** Returned by act_plugin.init to decline without failing (no device,
 *  feature turned off...). The reason buffer says why. */
#define ACT_PLUGIN_DECLINE 1

/* ---- limits the host enforces ----------------------------------------- */

#define ACT_PLUGIN_NAME_MAX 4096u     /**< bytes in a record/stream name */
#define ACT_PLUGIN_ARGS_MAX 64u       /**< args per record or device */
#define ACT_PLUGIN_BATCH_MAX 1048576u /**< records or samples per call */
#define ACT_PLUGIN_DEVICES_MAX 256u   /**< devices per plugin */
#define ACT_PLUGIN_TRACKS_MAX 4096u   /**< counter tracks per plugin */
#define ACT_PLUGIN_STRUCT_MAX 4096u   /**< largest struct_size accepted */

/** Device index meaning "the host" (host API spans and host instants). */
#define ACT_PLUGIN_HOST_DEVICE UINT32_MAX

/* ---- typed values ----------------------------------------------------- */

/** Kinds of act_plugin_arg (stored as int32_t). */
#define ACT_PLUGIN_ARG_INT 0    /**< v.i */
#define ACT_PLUGIN_ARG_UINT 1   /**< v.u */
#define ACT_PLUGIN_ARG_DOUBLE 2 /**< v.d, must be finite */
#define ACT_PLUGIN_ARG_BOOL 3   /**< v.b, 0 or non-zero */
#define ACT_PLUGIN_ARG_STRING 4 /**< v.s, any bytes; the host escapes */

/**
 * A typed key/value: a record's argument or a device property. Arrays of
 * args are strided by their first element's struct_size, and every
 * element must carry the same struct_size.
 */
typedef struct act_plugin_arg {
    uint32_t struct_size; /**< sizeof(act_plugin_arg) */
    int32_t kind;         /**< ACT_PLUGIN_ARG_* */
    const char *key;      /**< UTF-8, 1..256 bytes, not NUL-terminated */
    uint32_t key_len;
    uint32_t reserved0; /**< zero */
    union {
        int64_t i;
        uint64_t u;
        double d;
        int32_t b;
        struct {
            const char *ptr; /**< NULL only when len is 0 */
            uint64_t len;    /**< at most 65536 */
        } s;
    } v;
    /* end of ABI 1.0 */
} act_plugin_arg;

/* ---- records ---------------------------------------------------------- */

/** Kinds of act_plugin_record (stored as int32_t). */
#define ACT_PLUGIN_RECORD_DEVICE_SPAN 0 /**< on a device stream */
#define ACT_PLUGIN_RECORD_HOST_SPAN 1   /**< a runtime/driver call on a host thread */
#define ACT_PLUGIN_RECORD_INSTANT 2     /**< device instant, or host if device is HOST */

/**
 * One activity. Batches are arrays strided by the first record's
 * struct_size; every record of a batch carries the same struct_size.
 */
typedef struct act_plugin_record {
    uint32_t struct_size; /**< sizeof(act_plugin_record) */
    int32_t kind;         /**< ACT_PLUGIN_RECORD_* */
    int32_t type;         /**< activity type code (built-in or registered) */
    uint32_t device;      /**< from add_device, or ACT_PLUGIN_HOST_DEVICE */
    /** Device span/instant: the stream or queue id on the device.
     *  Host span/instant: the OS thread id (gettid()) of the app thread. */
    uint64_t stream;
    int64_t start_ns;      /**< host clock (act_plugin_host.now_ns) */
    int64_t end_ns;        /**< >= start_ns; ignored for instants */
    uint64_t correlation;  /**< links a host API span to the device work
                                it launched (drawn as a flow); 0: none */
    uint64_t external_id;  /**< external correlation id (see
                                act_plugin_host.correlation_current); 0: none */
    const char *name;      /**< UTF-8, not NUL-terminated; never NULL */
    uint32_t name_len;     /**< <= ACT_PLUGIN_NAME_MAX */
    uint32_t nargs;        /**< <= ACT_PLUGIN_ARGS_MAX */
    const act_plugin_arg *args; /**< nargs args, or NULL when nargs is 0 */
    /* end of ABI 1.0 */
} act_plugin_record;

/* ---- devices and counters --------------------------------------------- */

/** Describes one device (accelerator) for add_device. */
typedef struct act_plugin_device {
    uint32_t struct_size; /**< sizeof(act_plugin_device) */
    uint32_t nprops;      /**< <= ACT_PLUGIN_ARGS_MAX */
    const char *name;     /**< NUL-terminated UTF-8, e.g. "Example NPU 0" */
    const char *vendor;   /**< NUL-terminated UTF-8, may be NULL */
    const act_plugin_arg *props; /**< typed properties (memory, SMs...) */
    /* end of ABI 1.0 */
} act_plugin_device;

/** Declares one counter track for add_counter. */
typedef struct act_plugin_counter {
    uint32_t struct_size; /**< sizeof(act_plugin_counter) */
    uint32_t device;      /**< from add_device, or ACT_PLUGIN_HOST_DEVICE */
    const char *track;    /**< NUL-terminated UTF-8 track name */
    const char *series;   /**< series within the track; NULL: same as track */
    const char *unit;     /**< "%", "bytes"...; NULL: none */
    /* end of ABI 1.0 */
} act_plugin_counter;

/** One counter sample. Arrays are strided by the first one's struct_size. */
typedef struct act_plugin_sample {
    uint32_t struct_size; /**< sizeof(act_plugin_sample) */
    uint32_t reserved0;   /**< zero */
    int64_t ts_ns;        /**< host clock */
    double value;         /**< must be finite */
    /* end of ABI 1.0 */
} act_plugin_sample;

/* ---- the host table ----------------------------------------------------- */

/** Opaque: identifies the calling plugin to the host. */
typedef struct act_plugin_ctx act_plugin_ctx;

/** Log levels for act_plugin_host.log (same values as act_log_level). */
#define ACT_PLUGIN_LOG_DEBUG 0
#define ACT_PLUGIN_LOG_INFO 1
#define ACT_PLUGIN_LOG_WARN 2
#define ACT_PLUGIN_LOG_ERROR 3

/**
 * What the host offers. Valid from act_plugin_entry() until finalize
 * returns; pass @c ctx as the first argument of every call. Every function
 * is thread-safe unless it says otherwise. Check a field is covered by
 * struct_size and non-NULL before calling it when you need a minor newer
 * than 1.0.
 */
typedef struct act_plugin_host {
    uint32_t struct_size; /**< sizeof(act_plugin_host) of the host */
    uint16_t abi_major;   /**< ACT_PLUGIN_ABI_MAJOR of the host */
    uint16_t abi_minor;   /**< ACT_PLUGIN_ABI_MINOR of the host */
    act_plugin_ctx *ctx;  /**< this plugin's handle */
    const char *host_version; /**< libactrace version, "0.1.0" */

    /** Log a message (NUL-terminated, one line) under the plugin's name. */
    void (*log)(act_plugin_ctx *ctx, int32_t level, const char *msg);
    /** The host clock in nanoseconds (CLOCK_MONOTONIC). Convert device
     *  timestamps to it so device work lands on the host timeline. */
    int64_t (*now_ns)(act_plugin_ctx *ctx);
    /** The session config's value for @p key (raw text, set or default),
     *  or NULL. Valid until finalize. Plugins read their own keys here. */
    const char *(*config_get)(act_plugin_ctx *ctx, const char *key);
    /** Register a custom activity type (act_activity_type_register rules:
     *  [a-z][a-z0-9_]{0,62}, codes from 1024). Same name and shape again:
     *  same code. Returns 0 and the code in *out, or a negative code. */
    int32_t (*register_type)(act_plugin_ctx *ctx, const char *name,
                             int32_t shape, int32_t *out);
    /** 1 if records of @p type will be kept (selected by ACTIVITY_TYPES,
     *  or a custom type when ACTIVITY_TYPES is not set), else 0. */
    int32_t (*type_selected)(act_plugin_ctx *ctx, int32_t type);
    /** Describe a device; *out receives its index for records, streams
     *  and counters (0, 1, ... per plugin). Call from init or start. */
    int32_t (*add_device)(act_plugin_ctx *ctx, const act_plugin_device *dev,
                          uint32_t *out);
    /** Name a stream/queue of a device (drawn as a thread of the device
     *  process). */
    int32_t (*name_stream)(act_plugin_ctx *ctx, uint32_t device,
                           uint64_t stream, const char *name,
                           uint32_t name_len);
    /** Hand over @p count records. Invalid records are dropped, counted,
     *  and reported once per reason; records of unselected types are
     *  filtered silently. Returns how many were kept, or a negative code
     *  when the batch as a whole was refused. */
    int32_t (*emit)(act_plugin_ctx *ctx, const act_plugin_record *records,
                    uint32_t count);
    /** Declare a counter track; *out receives its index for emit_samples.
     *  The same (device, track, series) again gives the same index. */
    int32_t (*add_counter)(act_plugin_ctx *ctx,
                           const act_plugin_counter *counter, uint32_t *out);
    /** Hand over samples of one counter track; as emit. */
    int32_t (*emit_samples)(act_plugin_ctx *ctx, uint32_t counter,
                            const act_plugin_sample *samples,
                            uint32_t count);
    /** The calling thread's innermost external correlation id
     *  (act_correlation_push), 0 if none. Call it from the app thread
     *  (e.g. in an API interception callback) and store it in
     *  act_plugin_record.external_id. */
    uint64_t (*correlation_current)(act_plugin_ctx *ctx);
    /* end of ABI 1.0 */

    /** Name a host thread of the traced process: @p tid is an OS thread
     *  id as in host records' stream (e.g. from an annotation API's
     *  "name this thread" call), or an id of the plugin's own choosing
     *  for a track of host records that is not a real thread. The name
     *  (UTF-8, 1..ACT_PLUGIN_NAME_MAX bytes) becomes the thread_name of
     *  that tid on the host process; the latest name wins. Since 1.1. */
    int32_t (*name_thread)(act_plugin_ctx *ctx, uint64_t tid,
                           const char *name, uint32_t name_len);
    /* end of ABI 1.1 */

    /** Call @p fn(@p arg, now_ns) every @p period_ns (1 ms .. 1 h), the
     *  first time one period from now, on the host's one helper thread,
     *  so that a plugin that samples needs no thread of its own; now_ns
     *  is the host clock. A late tick runs once and missed ones are
     *  skipped. *@p id receives the tick's handle for every_cancel.
     *  Register from start (the helper runs from the session's start to
     *  its stop): ACT_PLUGIN_ESTATE when no helper runs (before start,
     *  after stop, in a forked child, or it could not be created): use a
     *  thread of your own then. ACT_PLUGIN_ELIMIT: too many ticks.
     *  A tick must be short and must never block (it delays the host's
     *  own work, and every other plugin's ticks): sample, emit, return.
     *  It may call every host function, every_cancel included. The host
     *  cancels all of a plugin's ticks, waiting for one that runs, before
     *  it calls the plugin's stop (and finalize): no tick runs after them.
     *  Since 1.2. */
    int32_t (*every)(act_plugin_ctx *ctx, int64_t period_ns,
                     void (*fn)(void *arg, int64_t now_ns), void *arg,
                     uint32_t *id);
    /** Cancel tick @p id (0: all of this plugin's). When it returns, the
     *  tick is not running (unless called from that tick itself) and never
     *  runs again. 0, or ACT_PLUGIN_EINVAL for an id that is not one of
     *  this plugin's live ticks (one already cancelled included). Since
     *  1.2. */
    int32_t (*every_cancel)(act_plugin_ctx *ctx, uint32_t id);
    /* end of ABI 1.2 */
} act_plugin_host;

/* ---- the plugin table --------------------------------------------------- */

/**
 * What a plugin provides. Must stay valid until finalize returns
 * (typically a static const object). @c state is what init stored.
 */
typedef struct act_plugin {
    uint32_t struct_size; /**< sizeof(act_plugin) the plugin was built with */
    uint16_t abi_major;   /**< ACT_PLUGIN_ABI_MAJOR it was built with */
    uint16_t abi_minor;   /**< ACT_PLUGIN_ABI_MINOR it was built with */
    const char *name;     /**< [a-z0-9_-]{1,64}: "example" */
    /** Backend for Kineto category names: "cuda" makes runtime events
     *  "cuda_runtime"; an unknown backend gets generic names. */
    const char *backend;
    const char *version;  /**< the plugin's own version, free text */
    /** Activity types the plugin can produce (informational; built-in
     *  codes; custom ones are registered in init). May be NULL. */
    const int32_t *types;
    uint32_t ntypes;
    uint32_t reserved0; /**< zero */

    /**
     * Set up: read config, find devices, describe them, register types.
     * Store per-instance state in *state. Return ACT_PLUGIN_OK, or
     * ACT_PLUGIN_DECLINE / a negative code with a NUL-terminated reason in
     * @p reason (at most @p reason_cap bytes). On refusal no other
     * function is called, finalize included.
     */
    int32_t (*init)(const act_plugin_host *host, void **state, char *reason,
                    uint32_t reason_cap);
    /** Collection begins: enable callbacks, start sampling. */
    void (*start)(void *state);
    /** Collection ends: stop producing new activity. */
    void (*stop)(void *state);
    /** Deliver everything still buffered (called after stop, while the
     *  host still accepts records). */
    void (*flush)(void *state);
    /** Release everything; no host call is allowed afterwards. */
    void (*finalize)(void *state);
    /* end of ABI 1.0 */
} act_plugin;

/** Type of act_plugin_entry. */
typedef const act_plugin *(*act_plugin_entry_fn)(const act_plugin_host *host,
                                                 uint32_t host_abi_major,
                                                 uint32_t host_abi_minor);

/**
 * The entry point every plugin defines (declared here so its signature is
 * checked). Return the plugin's table, or NULL to decline (e.g. for a
 * host major the plugin does not speak).
 */
ACT_PLUGIN_EXPORT const act_plugin *
act_plugin_entry(const act_plugin_host *host, uint32_t host_abi_major,
                 uint32_t host_abi_minor);

/* ---- layout pins -------------------------------------------------------- */

/** Sizes of the structs as ABI 1.0 defined them (LP64); the host refuses
 *  anything smaller. */
#define ACT_PLUGIN_ARG_SIZE_1_0 40u
#define ACT_PLUGIN_RECORD_SIZE_1_0 80u
#define ACT_PLUGIN_DEVICE_SIZE_1_0 32u
#define ACT_PLUGIN_COUNTER_SIZE_1_0 32u
#define ACT_PLUGIN_SAMPLE_SIZE_1_0 24u
#define ACT_PLUGIN_HOST_SIZE_1_0 112u
#define ACT_PLUGIN_HOST_SIZE_1_1 120u
#define ACT_PLUGIN_HOST_SIZE_1_2 136u
#define ACT_PLUGIN_SIZE_1_0 88u

#if defined(__cplusplus)
#define ACT_PLUGIN_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define ACT_PLUGIN_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

#if UINTPTR_MAX == UINT64_MAX
#define ACT_PLUGIN_PIN(T, f, off)                                              \
    ACT_PLUGIN_STATIC_ASSERT(offsetof(T, f) == (off), #T "." #f " moved")
ACT_PLUGIN_PIN(act_plugin_arg, struct_size, 0);
ACT_PLUGIN_PIN(act_plugin_arg, kind, 4);
ACT_PLUGIN_PIN(act_plugin_arg, key, 8);
ACT_PLUGIN_PIN(act_plugin_arg, key_len, 16);
ACT_PLUGIN_PIN(act_plugin_arg, reserved0, 20);
ACT_PLUGIN_PIN(act_plugin_arg, v, 24);
ACT_PLUGIN_STATIC_ASSERT(sizeof(act_plugin_arg) == ACT_PLUGIN_ARG_SIZE_1_0,
                         "act_plugin_arg size");

ACT_PLUGIN_PIN(act_plugin_record, struct_size, 0);
ACT_PLUGIN_PIN(act_plugin_record, kind, 4);
ACT_PLUGIN_PIN(act_plugin_record, type, 8);
ACT_PLUGIN_PIN(act_plugin_record, device, 12);
ACT_PLUGIN_PIN(act_plugin_record, stream, 16);
ACT_PLUGIN_PIN(act_plugin_record, start_ns, 24);
ACT_PLUGIN_PIN(act_plugin_record, end_ns, 32);
ACT_PLUGIN_PIN(act_plugin_record, correlation, 40);
ACT_PLUGIN_PIN(act_plugin_record, external_id, 48);
ACT_PLUGIN_PIN(act_plugin_record, name, 56);
ACT_PLUGIN_PIN(act_plugin_record, name_len, 64);
ACT_PLUGIN_PIN(act_plugin_record, nargs, 68);
ACT_PLUGIN_PIN(act_plugin_record, args, 72);
ACT_PLUGIN_STATIC_ASSERT(sizeof(act_plugin_record) ==
                             ACT_PLUGIN_RECORD_SIZE_1_0,
                         "act_plugin_record size");

ACT_PLUGIN_PIN(act_plugin_device, struct_size, 0);
ACT_PLUGIN_PIN(act_plugin_device, nprops, 4);
ACT_PLUGIN_PIN(act_plugin_device, name, 8);
ACT_PLUGIN_PIN(act_plugin_device, vendor, 16);
ACT_PLUGIN_PIN(act_plugin_device, props, 24);
ACT_PLUGIN_STATIC_ASSERT(sizeof(act_plugin_device) ==
                             ACT_PLUGIN_DEVICE_SIZE_1_0,
                         "act_plugin_device size");

ACT_PLUGIN_PIN(act_plugin_counter, struct_size, 0);
ACT_PLUGIN_PIN(act_plugin_counter, device, 4);
ACT_PLUGIN_PIN(act_plugin_counter, track, 8);
ACT_PLUGIN_PIN(act_plugin_counter, series, 16);
ACT_PLUGIN_PIN(act_plugin_counter, unit, 24);
ACT_PLUGIN_STATIC_ASSERT(sizeof(act_plugin_counter) ==
                             ACT_PLUGIN_COUNTER_SIZE_1_0,
                         "act_plugin_counter size");

ACT_PLUGIN_PIN(act_plugin_sample, struct_size, 0);
ACT_PLUGIN_PIN(act_plugin_sample, reserved0, 4);
ACT_PLUGIN_PIN(act_plugin_sample, ts_ns, 8);
ACT_PLUGIN_PIN(act_plugin_sample, value, 16);
ACT_PLUGIN_STATIC_ASSERT(sizeof(act_plugin_sample) ==
                             ACT_PLUGIN_SAMPLE_SIZE_1_0,
                         "act_plugin_sample size");

ACT_PLUGIN_PIN(act_plugin_host, struct_size, 0);
ACT_PLUGIN_PIN(act_plugin_host, abi_major, 4);
ACT_PLUGIN_PIN(act_plugin_host, abi_minor, 6);
ACT_PLUGIN_PIN(act_plugin_host, ctx, 8);
ACT_PLUGIN_PIN(act_plugin_host, host_version, 16);
ACT_PLUGIN_PIN(act_plugin_host, log, 24);
ACT_PLUGIN_PIN(act_plugin_host, now_ns, 32);
ACT_PLUGIN_PIN(act_plugin_host, config_get, 40);
ACT_PLUGIN_PIN(act_plugin_host, register_type, 48);
ACT_PLUGIN_PIN(act_plugin_host, type_selected, 56);
ACT_PLUGIN_PIN(act_plugin_host, add_device, 64);
ACT_PLUGIN_PIN(act_plugin_host, name_stream, 72);
ACT_PLUGIN_PIN(act_plugin_host, emit, 80);
ACT_PLUGIN_PIN(act_plugin_host, add_counter, 88);
ACT_PLUGIN_PIN(act_plugin_host, emit_samples, 96);
ACT_PLUGIN_PIN(act_plugin_host, correlation_current, 104);
ACT_PLUGIN_PIN(act_plugin_host, name_thread, 112);
ACT_PLUGIN_PIN(act_plugin_host, every, 120);
ACT_PLUGIN_PIN(act_plugin_host, every_cancel, 128);
ACT_PLUGIN_STATIC_ASSERT(sizeof(act_plugin_host) == ACT_PLUGIN_HOST_SIZE_1_2,
                         "act_plugin_host size");

ACT_PLUGIN_PIN(act_plugin, struct_size, 0);
ACT_PLUGIN_PIN(act_plugin, abi_major, 4);
ACT_PLUGIN_PIN(act_plugin, abi_minor, 6);
ACT_PLUGIN_PIN(act_plugin, name, 8);
ACT_PLUGIN_PIN(act_plugin, backend, 16);
ACT_PLUGIN_PIN(act_plugin, version, 24);
ACT_PLUGIN_PIN(act_plugin, types, 32);
ACT_PLUGIN_PIN(act_plugin, ntypes, 40);
ACT_PLUGIN_PIN(act_plugin, reserved0, 44);
ACT_PLUGIN_PIN(act_plugin, init, 48);
ACT_PLUGIN_PIN(act_plugin, start, 56);
ACT_PLUGIN_PIN(act_plugin, stop, 64);
ACT_PLUGIN_PIN(act_plugin, flush, 72);
ACT_PLUGIN_PIN(act_plugin, finalize, 80);
ACT_PLUGIN_STATIC_ASSERT(sizeof(act_plugin) == ACT_PLUGIN_SIZE_1_0,
                         "act_plugin size");
#undef ACT_PLUGIN_PIN
#endif /* LP64 */

#ifdef __cplusplus
}
#endif
#endif /* ACTRACE_PLUGIN_H */
