/* SPDX-License-Identifier: MIT */
/*
 * Activity types: the built-in table (DESIGN.md section 2), the aliases and
 * retired codes, the default set, sets, and the run-time registry.
 *
 * The registry is append-only. A writer fills a slot under a mutex and then
 * publishes it by storing the new count with release order; readers load the
 * count with acquire order and only look at slots below it, so lookups take
 * no lock and a published name never changes.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "internal.h"

/* ---- built-in table ---------------------------------------------------- */

#define NBUILTIN (ACT_ACTIVITY_TYPE_MAX_BUILTIN + 1)

typedef struct builtin {
    const char *name;  /* canonical name, or the historical one if retired */
    int canonical;     /* == code for a type; the decoded type if retired */
    uint8_t shape;     /* act_activity_shape (types only) */
    uint8_t is_default;
    uint8_t retired;
} builtin;

#define T(code, name, shape, def) [code] = {name, code, ACT_SHAPE_##shape, def, 0}
#define R(code, name, canon) [code] = {name, canon, 0, 0, 1}
static const builtin builtins[NBUILTIN] = {
    T(0, "cpu_op", HOST_SPAN, 1),
    T(1, "user_annotation", HOST_SPAN, 1),
    T(2, "gpu_user_annotation", DEVICE_SPAN, 1),
    T(3, "gpu_memcpy", DEVICE_SPAN, 1),
    T(4, "gpu_memset", DEVICE_SPAN, 1),
    T(5, "kernel", DEVICE_SPAN, 1),
    T(6, "external_correlation", CORRELATION, 1),
    T(7, "runtime", HOST_SPAN, 1),
    T(8, "driver", HOST_SPAN, 1),
    T(9, "cpu_instant_event", INSTANT, 1),
    T(10, "python_function", HOST_SPAN, 1),
    T(11, "overhead", HOST_SPAN, 1),
    R(12, "mtia_runtime", 7),
    R(13, "mtia_ccp_events", 5),
    T(14, "mtia_insight", HOST_SPAN, 1),
    T(15, "cuda_sync", DEVICE_SPAN, 1),
    T(16, "cuda_event", INSTANT, 1),
    R(17, "mtia_counters", 28),
    R(18, "glow_runtime", 7),
    T(19, "cuda_profiler_range", HOST_SPAN, 0),
    R(20, "hpu_op", 7),
    R(21, "xpu_runtime", 7),
    R(22, "xpu_driver", 8),
    T(23, "collective_comm", HOST_SPAN, 0),
    R(24, "privateuse1_runtime", 7),
    R(25, "privateuse1_driver", 8),
    T(26, "xpu_scope_profiler", COUNTER, 0),
    T(27, "xpu_sync", DEVICE_SPAN, 0),
    T(28, "gpu_pm_counter", COUNTER, 1),
};
#undef T
#undef R

/* Names accepted besides the canonical ones, in the order DESIGN.md lists
 * them. Each maps to its canonical type. */
typedef struct alias {
    const char *name;
    int canonical;
} alias;

static const alias aliases[] = {
    {"mtia_ccp_events", 5},    {"cuda_runtime", 7},
    {"mtia_runtime", 7},       {"glow_runtime", 7},
    {"hpu_op", 7},             {"xpu_runtime", 7},
    {"privateuse1_runtime", 7}, {"cuda_driver", 8},
    {"xpu_driver", 8},         {"privateuse1_driver", 8},
    {"hardware_counters", 28}, {"mtia_counters", 28},
};

/* Deprecated enumerators of include/actrace/activity_type.h. */
static const alias deprecated_enums[] = {
    {"ACT_CUDA_RUNTIME", 7},      {"ACT_MTIA_RUNTIME", 7},
    {"ACT_GLOW_RUNTIME", 7},      {"ACT_HPU_OP", 7},
    {"ACT_XPU_RUNTIME", 7},       {"ACT_PRIVATEUSE1_RUNTIME", 7},
    {"ACT_CUDA_DRIVER", 8},       {"ACT_XPU_DRIVER", 8},
    {"ACT_PRIVATEUSE1_DRIVER", 8}, {"ACT_MTIA_CCP_EVENTS", 5},
    {"ACT_MTIA_COUNTERS", 28},    {"ACT_HARDWARE_COUNTERS", 28},
};

const act_activity_type act_activity_types_default[] = {
    ACT_CPU_OP,
    ACT_USER_ANNOTATION,
    ACT_GPU_USER_ANNOTATION,
    ACT_GPU_MEMCPY,
    ACT_GPU_MEMSET,
    ACT_CONCURRENT_KERNEL,
    ACT_EXTERNAL_CORRELATION,
    ACT_RUNTIME,
    ACT_DRIVER,
    ACT_CPU_INSTANT_EVENT,
    ACT_PYTHON_FUNCTION,
    ACT_OVERHEAD,
    ACT_MTIA_INSIGHT,
    ACT_CUDA_SYNC,
    ACT_CUDA_EVENT,
    ACT_GPU_PM_COUNTER,
};
const size_t act_activity_types_default_count =
    sizeof act_activity_types_default / sizeof act_activity_types_default[0];

/* ---- registry ---------------------------------------------------------- */

typedef struct registered {
    char name[ACT_ACTIVITY_TYPE_NAME_MAX + 1];
    uint8_t shape;
} registered;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static registered reg[ACT_ACTIVITY_TYPE_MAX_REGISTERED];
static _Atomic int reg_count;

static int reg_published(void)
{
    return atomic_load_explicit(&reg_count, memory_order_acquire);
}

/* Index of a registered code, or -1. */
static int reg_index(long code)
{
    long i = code - ACT_ACTIVITY_TYPE_FIRST_CUSTOM;
    if (i < 0 || i >= reg_published())
        return -1;
    return (int)i;
}

static int is_builtin_type(long code)
{
    return code >= 0 && code < NBUILTIN && !builtins[code].retired;
}

/* ---- queries ----------------------------------------------------------- */

const char *act_activity_type_name(act_activity_type t)
{
    long code = (long)t;
    if (is_builtin_type(code))
        return builtins[code].name;
    int i = reg_index(code);
    return i >= 0 ? reg[i].name : NULL;
}

const char *act_activity_type_retired_name(int code)
{
    if (code >= 0 && code < NBUILTIN && builtins[code].retired)
        return builtins[code].name;
    return NULL;
}

int act_activity_type_shape(act_activity_type t, act_activity_shape *out)
{
    long code = (long)t;
    if (!out)
        return ACT_EINVAL;
    if (is_builtin_type(code)) {
        *out = (act_activity_shape)builtins[code].shape;
        return 0;
    }
    int i = reg_index(code);
    if (i < 0)
        return ACT_EINVAL;
    *out = (act_activity_shape)reg[i].shape;
    return 0;
}

const char *act_activity_shape_name(act_activity_shape s)
{
    static const char *const names[] = {"host_span", "device_span", "instant",
                                        "counter", "correlation"};
    unsigned u = (unsigned)s;
    return u < ACT_ARRAY_SIZE(names) ? names[u] : NULL;
}

int act_activity_type_is_retired(int code)
{
    return code >= 0 && code < NBUILTIN && builtins[code].retired;
}

int act_activity_type_is_default(act_activity_type t)
{
    long code = (long)t;
    return is_builtin_type(code) && builtins[code].is_default;
}

int act_activity_type_canonical(int code, act_activity_type *out)
{
    if (!out)
        return ACT_EINVAL;
    if (code >= 0 && code < NBUILTIN) {
        *out = (act_activity_type)builtins[code].canonical;
        return 0;
    }
    if (reg_index(code) >= 0) {
        *out = (act_activity_type)code;
        return 0;
    }
    return ACT_EUNKNOWN;
}

size_t act_activity_type_aliases(act_activity_type t, const char **out,
                                 size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < ACT_ARRAY_SIZE(aliases); i++) {
        if (aliases[i].canonical != (int)t)
            continue;
        if (out && n < cap)
            out[n] = aliases[i].name;
        n++;
    }
    return n;
}

size_t act_activity_type_deprecated_enumerators(act_activity_type t,
                                                const char **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < ACT_ARRAY_SIZE(deprecated_enums); i++) {
        if (deprecated_enums[i].canonical != (int)t)
            continue;
        if (out && n < cap)
            out[n] = deprecated_enums[i].name;
        n++;
    }
    return n;
}

/* ---- parsing ----------------------------------------------------------- */

static int is_blank(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
           c == '\f';
}

/* Exact match of a lower-cased candidate against a NUL-terminated name. */
static int name_eq(const char *lower, size_t len, const char *name)
{
    return strncmp(lower, name, len) == 0 && name[len] == '\0';
}

/* Built-in name or alias (not registered names). @p lower is lower case. */
static int lookup_builtin(const char *lower, size_t len, int *out)
{
    for (int c = 0; c < NBUILTIN; c++) {
        if (!builtins[c].retired && name_eq(lower, len, builtins[c].name)) {
            *out = c;
            return 1;
        }
    }
    for (size_t i = 0; i < ACT_ARRAY_SIZE(aliases); i++) {
        if (name_eq(lower, len, aliases[i].name)) {
            *out = aliases[i].canonical;
            return 1;
        }
    }
    return 0;
}

int act_activity_type_parse(const char *s, size_t len, act_activity_type *out)
{
    if ((!s && len) || !out)
        return ACT_EINVAL;
    while (len && is_blank((unsigned char)s[0])) {
        s++;
        len--;
    }
    while (len && is_blank((unsigned char)s[len - 1]))
        len--;
    if (len == 0 || len > ACT_ACTIVITY_TYPE_NAME_MAX)
        return ACT_EUNKNOWN;
    char lower[ACT_ACTIVITY_TYPE_NAME_MAX + 1];
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\0')
            return ACT_EUNKNOWN;
        lower[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    lower[len] = '\0';
    int code;
    if (lookup_builtin(lower, len, &code)) {
        *out = (act_activity_type)code;
        return 0;
    }
    int n = reg_published();
    for (int i = 0; i < n; i++) {
        if (name_eq(lower, len, reg[i].name)) {
            *out = (act_activity_type)(ACT_ACTIVITY_TYPE_FIRST_CUSTOM + i);
            return 0;
        }
    }
    return ACT_EUNKNOWN;
}

/* ---- registration ------------------------------------------------------ */

static int valid_custom_name(const char *name, size_t *len)
{
    if (!(name[0] >= 'a' && name[0] <= 'z'))
        return 0;
    size_t i = 1;
    for (; name[i]; i++) {
        char c = name[i];
        if (i > ACT_ACTIVITY_TYPE_NAME_MAX - 1)
            return 0;
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return 0;
    }
    *len = i;
    return 1;
}

int act_activity_type_register(const char *name, act_activity_shape shape,
                               act_activity_type *out)
{
    size_t len;
    if (!name || !out || (unsigned)shape > ACT_SHAPE_CORRELATION ||
        !valid_custom_name(name, &len))
        return ACT_EINVAL;
    int code;
    if (lookup_builtin(name, len, &code))
        return ACT_EEXIST;

    int rc = 0;
    pthread_mutex_lock(&reg_lock);
    int n = atomic_load_explicit(&reg_count, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        if (strcmp(reg[i].name, name) == 0) {
            if (reg[i].shape == (uint8_t)shape)
                *out = (act_activity_type)(ACT_ACTIVITY_TYPE_FIRST_CUSTOM + i);
            else
                rc = ACT_EEXIST;
            goto done;
        }
    }
    if (n >= ACT_ACTIVITY_TYPE_MAX_REGISTERED) {
        rc = ACT_ELIMIT;
        goto done;
    }
    memcpy(reg[n].name, name, len + 1);
    reg[n].shape = (uint8_t)shape;
    atomic_store_explicit(&reg_count, n + 1, memory_order_release);
    *out = (act_activity_type)(ACT_ACTIVITY_TYPE_FIRST_CUSTOM + n);
done:
    pthread_mutex_unlock(&reg_lock);
    return rc;
}

int act_activity_type_registered_count(void) { return reg_published(); }

/* Fork handlers (installed by src/engine/session.c when the library is
 * loaded): the registry lock is held across fork, so the child never
 * inherits it locked by a thread that does not exist there. */
void act__types_atfork_prepare(void) { pthread_mutex_lock(&reg_lock); }
void act__types_atfork_parent(void) { pthread_mutex_unlock(&reg_lock); }
void act__types_atfork_child(void) { pthread_mutex_init(&reg_lock, NULL); }

/* ---- sets -------------------------------------------------------------- */

/* Bit position of a type in a set: built-ins in word 0 (codes below 64),
 * registered types from bit 64 on. -1 if the code is not a type. */
static long set_bit(act_activity_type t)
{
    act_activity_type c;
    if (act_activity_type_canonical((int)t, &c) != 0)
        return -1;
    if ((long)c < NBUILTIN)
        return (long)c;
    return 64 + ((long)c - ACT_ACTIVITY_TYPE_FIRST_CUSTOM);
}

_Static_assert(NBUILTIN <= 64, "built-in codes must fit the set's first word");

void act_activity_set_clear(act_activity_set *set)
{
    if (set)
        memset(set, 0, sizeof *set);
}

void act_activity_set_default(act_activity_set *set)
{
    if (!set)
        return;
    act_activity_set_clear(set);
    for (size_t i = 0; i < act_activity_types_default_count; i++)
        set->bits[0] |= UINT64_C(1) << act_activity_types_default[i];
}

int act_activity_set_add(act_activity_set *set, act_activity_type t)
{
    long b = set_bit(t);
    if (!set || b < 0)
        return ACT_EINVAL;
    set->bits[b / 64] |= UINT64_C(1) << (b % 64);
    return 0;
}

int act_activity_set_remove(act_activity_set *set, act_activity_type t)
{
    long b = set_bit(t);
    if (!set || b < 0)
        return ACT_EINVAL;
    set->bits[b / 64] &= ~(UINT64_C(1) << (b % 64));
    return 0;
}

int act_activity_set_has(const act_activity_set *set, act_activity_type t)
{
    long b = set_bit(t);
    if (!set || b < 0)
        return 0;
    return (set->bits[b / 64] >> (b % 64)) & 1;
}

size_t act_activity_set_count(const act_activity_set *set)
{
    size_t n = 0;
    if (!set)
        return 0;
    for (size_t w = 0; w < ACT_ARRAY_SIZE(set->bits); w++)
        n += (size_t)__builtin_popcountll(set->bits[w]);
    return n;
}

int act_activity_set_next(const act_activity_set *set, size_t *cursor,
                          act_activity_type *out)
{
    if (!set || !cursor || !out)
        return 0;
    size_t nbits = 64 * ACT_ARRAY_SIZE(set->bits);
    for (size_t b = *cursor; b < nbits; b++) {
        uint64_t word = set->bits[b / 64] >> (b % 64);
        if (!word) {
            b |= 63; /* skip the rest of this word */
            continue;
        }
        b += (size_t)__builtin_ctzll(word);
        *cursor = b + 1;
        *out = (act_activity_type)(b < 64 ? (long)b
                                          : ACT_ACTIVITY_TYPE_FIRST_CUSTOM +
                                                (long)(b - 64));
        return 1;
    }
    *cursor = nbits;
    return 0;
}
