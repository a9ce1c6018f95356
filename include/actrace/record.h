/* SPDX-License-Identifier: MIT */
/*
 * Recording calls. They go to the process's active session and cost one
 * relaxed atomic load and a branch when there is none. They never fail:
 * what cannot be recorded (buffer limit reached, type not selected, misuse)
 * is counted per type and reported in the trace's "actraceStats".
 *
 * Names: any NUL-terminated byte string, or an id from act_name()
 * (interned once; the fast path). A string the thread has seen before costs
 * what its id does (a literal on its pointer, other memory checked by
 * content); one seen once is copied. Every call is thread-safe; spans nest
 * per thread.
 */
#ifndef ACTRACE_RECORD_H
#define ACTRACE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "actrace/activity_type.h"
#include "actrace/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An interned name. 0 is never a valid id. */
typedef uint32_t act_name_id;

/**
 * Intern a name for the whole process (survives sessions). Thread-safe;
 * takes a lock, so call once and keep the id. Returns 0 for NULL or when
 * the string table is full (names longer than 64 KiB are cut).
 */
ACT_API act_name_id act_name(const char *name);

/** Nanoseconds on the session clock (CLOCK_MONOTONIC). */
ACT_API int64_t act_now_ns(void);

/** Begin a span on the calling thread; close it with act_span_end(). */
ACT_API void act_span_begin(act_activity_type type, const char *name);
/** act_span_begin() with an interned name. */
ACT_API void act_span_begin_id(act_activity_type type, act_name_id name);
/** End the innermost open span of the calling thread. */
ACT_API void act_span_end(void);

/** A complete span with caller-supplied times (act_now_ns() clock). Times
 *  more than 2^51 ns (26 days) from the session's start and from the clock
 *  now, or an end before the start, are dropped and counted (bad_times). */
ACT_API void act_span_record(act_activity_type type, const char *name,
                             int64_t start_ns, int64_t end_ns);
/** act_span_record() with an interned name: the fastest call. */
ACT_API void act_span_record_id(act_activity_type type, act_name_id name,
                                int64_t start_ns, int64_t end_ns);

/** An instant event now, on the calling thread. */
ACT_API void act_instant(act_activity_type type, const char *name);
/** act_instant() with an interned name. */
ACT_API void act_instant_id(act_activity_type type, act_name_id name);

/**
 * One sample of @p series on the host counter track @p track, now.
 * Non-finite values are dropped and counted.
 */
ACT_API void act_counter(const char *track, const char *series,
                         double value);
/** act_counter() with a unit ("bytes", "%") recorded for the series. */
ACT_API void act_counter_unit(const char *track, const char *series,
                              const char *unit, double value);

/*
 * Typed arguments on the most recent span or instant of the calling thread
 * (begun or recorded). An arg with no such event right before it (another
 * kind of record came in between) is dropped and counted. Keys and string
 * values are any bytes, copied.
 */
ACT_API void act_arg_int(const char *key, int64_t value);
ACT_API void act_arg_uint(const char *key, uint64_t value);
ACT_API void act_arg_double(const char *key, double value);
ACT_API void act_arg_bool(const char *key, int value);
ACT_API void act_arg_str(const char *key, const char *value);
/** act_arg_str() with an explicit length (value need not be NUL-ended). */
ACT_API void act_arg_strn(const char *key, const char *value, size_t len);

/**
 * Interned arg keys, the fast path for args: intern a key once with
 * act_key() and pass the id to the act_arg_*_k() calls, which record
 * exactly what act_arg_*() with that key string would. Ids are
 * process-wide and survive sessions (an act_key_id is an act_name_id:
 * the same table). act_key() takes a lock: call it once and keep the id.
 * It returns 0 for NULL, for a key longer than 64 KiB, or when the table
 * is full; an arg given key 0 (or an id act_key() never returned) is
 * recorded with an empty key.
 *
 * With string keys the calls above are fast too when a key is a string
 * literal: a per-thread cache hits on the pointer alone for keys in a
 * loaded object's read-only data, and verifies any other key's bytes.
 * String values likewise: one in read-only data is found on its pointer
 * (act_arg_str does not measure it), any other is checked byte by byte.
 */
typedef uint32_t act_key_id;
ACT_API act_key_id act_key(const char *key);
ACT_API void act_arg_int_k(act_key_id key, int64_t value);
ACT_API void act_arg_uint_k(act_key_id key, uint64_t value);
ACT_API void act_arg_double_k(act_key_id key, double value);
ACT_API void act_arg_bool_k(act_key_id key, int value);
ACT_API void act_arg_str_k(act_key_id key, const char *value);
ACT_API void act_arg_strn_k(act_key_id key, const char *value, size_t len);

/**
 * An arg whose value is a JSON text (an array, an object, any value), such
 * as Kineto's "Input Dims" ([[2, 3], [3]]). Recorded like a string (the
 * bytes are copied, nothing is parsed while recording); at write time a
 * text that is exactly one JSON value (RFC 8259, well-formed UTF-8, at
 * most 64 levels of nesting) is written verbatim into a Chrome trace and
 * as a debug annotation's legacy_json_value in a Perfetto trace, and read
 * back as ACT_VISIT_ARG_JSON; any other text is written and read back as
 * a string arg holding those bytes, as act_arg_strn() would. NULL is "".
 */
ACT_API void act_arg_json(const char *key, const char *json);
ACT_API void act_arg_jsonn(const char *key, const char *json, size_t len);
ACT_API void act_arg_json_k(act_key_id key, const char *json);
ACT_API void act_arg_jsonn_k(act_key_id key, const char *json, size_t len);

/**
 * External correlation: spans begun on this thread while an id is pushed
 * carry it ("External id"), and plugins attach it to the device work
 * launched meanwhile, so kernels link back to the operator. Per thread;
 * stack depth 32 (deeper pushes keep counting so pops balance, but
 * inner ids beyond 32 are not recorded).
 */
ACT_API void act_correlation_push(uint64_t id);
ACT_API void act_correlation_pop(void);
/** The calling thread's innermost external correlation id, 0 if none. */
ACT_API uint64_t act_correlation_current(void);

/**
 * An operator in two calls, for tracers that wrap every operator of a
 * framework (actrace.torch.record_ops) and want the least cost per op.
 *
 * act_op_begin() pushes @p correlation (as act_correlation_push) and
 * returns the time now (act_now_ns). act_op_end() records the span
 * [@p start_ns, @p end_ns] of @p type and interned @p name as
 * act_span_record_id() would (carrying the correlation id that
 * act_op_begin pushed: "External id"), attaches one int arg @p key =
 * @p value to it as act_arg_int_k() would (none when @p key is 0), then
 * pops the correlation id as act_correlation_pop(). Further act_arg_*
 * calls attach to the span, as after act_span_record_id.
 *
 * The push and the pop happen with or without a session, as
 * act_correlation_push/pop do: pair every act_op_begin with one
 * act_op_end on the same thread. Thread-safe (per thread), never blocks.
 */
ACT_API int64_t act_op_begin(uint64_t correlation);
ACT_API void act_op_end(act_activity_type type, act_name_id name, int64_t start_ns,
                        int64_t end_ns, act_key_id key, int64_t value);

/** Name the calling thread / the process in the trace (copied). Works
 *  without an active session too: names persist for later sessions. */
ACT_API void act_thread_name(const char *name);
ACT_API void act_process_name(const char *name);

/*
 * Devices described by the application itself (a runtime that knows its
 * own device timings, or a test); plugins have their own calls in
 * plugin.h. Devices belong to the started session (act_session_active()):
 * describe them after act_session_start(). Each device is drawn as its own
 * process (a pid above any OS pid) with its streams as threads, and listed
 * in the trace's "deviceProperties".
 */

/**
 * Describe a device of the started session.
 * @param name   shown as the device's process name (copied; any bytes)
 * @param vendor copied; may be NULL
 * @param out    receives the device index used by the calls below
 * @return 0, ACT_ESTATE without a started session, ACT_ELIMIT, ACT_ENOMEM.
 */
ACT_API int act_device_add(const char *name, const char *vendor, uint32_t *out);
/** Typed properties of a device, written in "deviceProperties" (key and
 *  value copied). ACT_EINVAL for an unknown device or a NULL key, and for a
 *  non-finite double. */
ACT_API int act_device_prop_int(uint32_t device, const char *key, int64_t value);
ACT_API int act_device_prop_str(uint32_t device, const char *key, const char *value);
ACT_API int act_device_prop_double(uint32_t device, const char *key, double value);
/** Name a stream (queue) of a device: the thread name of its track. */
ACT_API int act_stream_name(uint32_t device, uint64_t stream, const char *name);

/**
 * Device activity (a kernel, a copy...) on @p device / @p stream with
 * times on the act_now_ns() clock. The calling thread's external
 * correlation id is attached ("External id"). Counted and dropped like
 * every recording call: unknown device, end before start, a time far
 * from the clock (as act_span_record()), type not selected. A stream id
 * may use all 64 bits: each stream gets its own track.
 */
ACT_API void act_device_span_record(act_activity_type type, uint32_t device,
                                    uint64_t stream, const char *name,
                                    int64_t start_ns, int64_t end_ns);

/** One sample of a counter series on a device's track, at @p ts_ns. */
ACT_API void act_device_counter(uint32_t device, const char *track,
                                const char *series, const char *unit,
                                int64_t ts_ns, double value);

#ifdef __cplusplus
}
#endif
#endif /* ACTRACE_RECORD_H */
