/* SPDX-License-Identifier: MIT */
/*
 * Activity types: what happened (runtime call, kernel, PM counter sample...),
 * not which vendor did it. DESIGN.md section 2 is the contract.
 *
 * Rule: a numeric code never changes meaning. Codes 0-28 are the values
 * Kineto uses, so integers written by Kineto-era tools decode correctly.
 * Vendor-specific codes that became aliases are retired: never reused, and
 * act_activity_type_canonical() maps them to their generic type. Types
 * registered at run time get codes from ACT_ACTIVITY_TYPE_FIRST_CUSTOM up.
 */
#ifndef ACTRACE_ACTIVITY_TYPE_H
#define ACTRACE_ACTIVITY_TYPE_H

#include <stddef.h>
#include <stdint.h>

#include "actrace/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Deprecated enumerators warn through ACT_DEPRECATED_ENUM. C++ accepts
 * [[deprecated]] on enumerators; GCC and Clang accept the GNU attribute in C.
 */
#if defined(__cplusplus) && __cplusplus >= 201703L
#define ACT_DEPRECATED_ENUM(msg) [[deprecated(msg)]]
#elif defined(__GNUC__) || defined(__clang__)
#define ACT_DEPRECATED_ENUM(msg) __attribute__((deprecated(msg)))
#else
#define ACT_DEPRECATED_ENUM(msg)
#endif

/** Activity type codes. Values are fixed forever (see DESIGN.md). */
typedef enum act_activity_type {
    ACT_CPU_OP = 0,
    ACT_USER_ANNOTATION = 1,
    ACT_GPU_USER_ANNOTATION = 2,
    ACT_GPU_MEMCPY = 3,
    ACT_GPU_MEMSET = 4,
    ACT_CONCURRENT_KERNEL = 5, /* name "kernel" */
    ACT_EXTERNAL_CORRELATION = 6,
    ACT_RUNTIME = 7,
    ACT_DRIVER = 8,
    ACT_CPU_INSTANT_EVENT = 9,
    ACT_PYTHON_FUNCTION = 10,
    ACT_OVERHEAD = 11,
    /* 12: retired, was MTIA_RUNTIME; decodes to ACT_RUNTIME */
    /* 13: retired, was MTIA_CCP_EVENTS; decodes to ACT_CONCURRENT_KERNEL */
    ACT_MTIA_INSIGHT = 14,
    ACT_CUDA_SYNC = 15,
    ACT_CUDA_EVENT = 16,
    /* 17: retired, was MTIA_COUNTERS; decodes to ACT_GPU_PM_COUNTER */
    /* 18: retired, was GLOW_RUNTIME; decodes to ACT_RUNTIME */
    ACT_CUDA_PROFILER_RANGE = 19, /* reserved, never produced */
    /* 20: retired, was HPU_OP; decodes to ACT_RUNTIME */
    /* 21: retired, was XPU_RUNTIME; decodes to ACT_RUNTIME */
    /* 22: retired, was XPU_DRIVER; decodes to ACT_DRIVER */
    ACT_COLLECTIVE_COMM = 23,
    /* 24: retired, was PRIVATEUSE1_RUNTIME; decodes to ACT_RUNTIME */
    /* 25: retired, was PRIVATEUSE1_DRIVER; decodes to ACT_DRIVER */
    ACT_XPU_SCOPE_PROFILER = 26,
    ACT_XPU_SYNC = 27,
    ACT_GPU_PM_COUNTER = 28,

    /* Deprecated vendor enumerators: equal to their generic type. */
    ACT_CUDA_RUNTIME ACT_DEPRECATED_ENUM("use ACT_RUNTIME") = 7,
    ACT_MTIA_RUNTIME ACT_DEPRECATED_ENUM("use ACT_RUNTIME") = 7,
    ACT_GLOW_RUNTIME ACT_DEPRECATED_ENUM("use ACT_RUNTIME") = 7,
    ACT_HPU_OP ACT_DEPRECATED_ENUM("use ACT_RUNTIME") = 7,
    ACT_XPU_RUNTIME ACT_DEPRECATED_ENUM("use ACT_RUNTIME") = 7,
    ACT_PRIVATEUSE1_RUNTIME ACT_DEPRECATED_ENUM("use ACT_RUNTIME") = 7,
    ACT_CUDA_DRIVER ACT_DEPRECATED_ENUM("use ACT_DRIVER") = 8,
    ACT_XPU_DRIVER ACT_DEPRECATED_ENUM("use ACT_DRIVER") = 8,
    ACT_PRIVATEUSE1_DRIVER ACT_DEPRECATED_ENUM("use ACT_DRIVER") = 8,
    ACT_MTIA_CCP_EVENTS ACT_DEPRECATED_ENUM("use ACT_CONCURRENT_KERNEL") = 5,
    ACT_MTIA_COUNTERS ACT_DEPRECATED_ENUM("use ACT_GPU_PM_COUNTER") = 28,
    ACT_HARDWARE_COUNTERS ACT_DEPRECATED_ENUM("use ACT_GPU_PM_COUNTER") = 28,

    /** First code handed out by act_activity_type_register(). */
    ACT_ACTIVITY_TYPE_FIRST_CUSTOM = 1024,
    /** Forces an int-sized enum so registered codes fit. Not a type. */
    ACT__ACTIVITY_TYPE_FORCE_INT = 0x7fffffff
} act_activity_type;

/** Highest built-in code (ACT_GPU_PM_COUNTER). */
#define ACT_ACTIVITY_TYPE_MAX_BUILTIN 28
/** Most types a process may register (codes 1024 .. 1024+limit-1). */
#define ACT_ACTIVITY_TYPE_MAX_REGISTERED 256
/** Longest registered name, excluding the terminating NUL. */
#define ACT_ACTIVITY_TYPE_NAME_MAX 63

/** How a type is drawn. Stored as a fixed-width integer across the ABI. */
typedef enum act_activity_shape {
    ACT_SHAPE_HOST_SPAN = 0,   /**< slice on a host thread */
    ACT_SHAPE_DEVICE_SPAN = 1, /**< slice on a device stream */
    ACT_SHAPE_INSTANT = 2,     /**< point event */
    ACT_SHAPE_COUNTER = 3,     /**< time series sample */
    ACT_SHAPE_CORRELATION = 4  /**< links activities; never drawn itself */
} act_activity_shape;

/**
 * Canonical name of a type ("runtime", "kernel", or a registered name).
 * @return static storage, or NULL for a code that is not a type (retired
 * codes and unassigned codes included). Thread-safe.
 */
ACT_API const char *act_activity_type_name(act_activity_type t);

/**
 * Shape of a type; ACT_EINVAL for a code that is not a type.
 * @param out receives the shape.
 */
ACT_API int act_activity_type_shape(act_activity_type t,
                                    act_activity_shape *out);

/** Name of a shape ("host_span", "device_span", "instant", "counter",
 *  "correlation"), or NULL. */
ACT_API const char *act_activity_shape_name(act_activity_shape s);

/**
 * Parse a type name: case-insensitive, leading and trailing blanks ignored;
 * canonical names, deprecated aliases ("cuda_runtime") and registered names.
 * @param s   the text, not necessarily NUL-terminated.
 * @param len its length in bytes.
 * @param out receives the canonical type.
 * @return 0, ACT_EINVAL for NULL arguments, ACT_EUNKNOWN for anything else.
 * Thread-safe.
 */
ACT_API int act_activity_type_parse(const char *s, size_t len,
                                    act_activity_type *out);

/**
 * Decode any code ever issued to its canonical type, retired ones included
 * (12 -> ACT_RUNTIME, 13 -> ACT_CONCURRENT_KERNEL, 17 -> ACT_GPU_PM_COUNTER,
 * 22 -> ACT_DRIVER) and registered ones.
 * @return 0, or ACT_EUNKNOWN for a code never issued.
 */
ACT_API int act_activity_type_canonical(int code, act_activity_type *out);

/** 1 if @p code is a retired code (12, 13, 17, 18, 20, 21, 22, 24, 25). */
ACT_API int act_activity_type_is_retired(int code);

/** 1 if the type is in the default set (DESIGN.md section 2). */
ACT_API int act_activity_type_is_default(act_activity_type t);

/**
 * Register a custom type. Thread-safe. The same name and shape again
 * returns the same code; the same name with another shape is ACT_EEXIST.
 * @param name matches [a-z][a-z0-9_]{0,62}; a built-in name or alias is
 *             refused (ACT_EEXIST); otherwise ACT_EINVAL.
 * @return 0, ACT_EINVAL, ACT_EEXIST, or ACT_ELIMIT past
 *         ACT_ACTIVITY_TYPE_MAX_REGISTERED registrations.
 */
ACT_API int act_activity_type_register(const char *name,
                                       act_activity_shape shape,
                                       act_activity_type *out);

/** Number of types registered so far. */
ACT_API int act_activity_type_registered_count(void);

/**
 * Deprecated aliases of a type: fills @p out with up to @p cap static
 * strings and returns how many exist (which may exceed @p cap).
 */
ACT_API size_t act_activity_type_aliases(act_activity_type t,
                                         const char **out, size_t cap);

/**
 * Names of the deprecated enumerators equal to a type ("ACT_CUDA_RUNTIME"):
 * fills @p out with up to @p cap static strings and returns how many exist.
 */
ACT_API size_t act_activity_type_deprecated_enumerators(act_activity_type t,
                                                        const char **out,
                                                        size_t cap);

/**
 * The name a retired code had when it was issued (12 -> "mtia_runtime").
 * @return static storage, or NULL if @p code is not retired.
 */
ACT_API const char *act_activity_type_retired_name(int code);

/** The default set, as an explicit constant array (DESIGN.md). */
ACT_API extern const act_activity_type act_activity_types_default[];
/** Number of entries in act_activity_types_default. */
ACT_API extern const size_t act_activity_types_default_count;

/**
 * A set of activity types, built-in and registered. A plain value: copy it
 * with '='. Treat the fields as private.
 */
typedef struct act_activity_set {
    uint64_t bits[1 + ACT_ACTIVITY_TYPE_MAX_REGISTERED / 64];
} act_activity_set;

/** Empty the set. */
ACT_API void act_activity_set_clear(act_activity_set *set);
/** Fill the set with the default types. */
ACT_API void act_activity_set_default(act_activity_set *set);
/** Add a type; ACT_EINVAL if it is not a type (retired codes are decoded
 *  to their canonical type first). */
ACT_API int act_activity_set_add(act_activity_set *set, act_activity_type t);
/** Remove a type; ACT_EINVAL if it is not a type. */
ACT_API int act_activity_set_remove(act_activity_set *set,
                                    act_activity_type t);
/** 1 if the set holds @p t (retired codes test their canonical type). */
ACT_API int act_activity_set_has(const act_activity_set *set,
                                 act_activity_type t);
/** Number of types in the set. */
ACT_API size_t act_activity_set_count(const act_activity_set *set);
/**
 * Iterate in ascending code order: start with *cursor = 0; each call
 * stores the next member in *out and returns 1, or returns 0 at the end.
 */
ACT_API int act_activity_set_next(const act_activity_set *set,
                                  size_t *cursor, act_activity_type *out);

#ifdef __cplusplus
}
#endif
#endif /* ACTRACE_ACTIVITY_TYPE_H */
