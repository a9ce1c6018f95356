/* SPDX-License-Identifier: MIT */
/*
 * The keys actrace knows, with their kind, range and default. Kineto keys
 * keep Kineto's defaults (libkineto/src/Config.cpp); actrace's own keys are
 * documented in docs/config.md. A default of -1 means "not set", as in
 * Kineto; values given in a config are never negative.
 */
#include <string.h>
#include <strings.h>

#include "config_impl.h"

#define I32MAX INT64_C(2147483647)

static const char *const trace_categories[] = {"kineto", "generic", NULL};
static const char *const output_formats[] = {"auto", "json", "perfetto", NULL};
static const char *const full_policies[] = {"grow", "drop", "wait", NULL};
static const char *const host_clocks[] = {"auto", "monotonic", NULL};

#define INT(name, lo, def) {name, ACT__K_INT, 0, lo, I32MAX, def, NULL}
#define BOOL(name, def) {name, ACT__K_BOOL, 0, 0, 0, def, NULL}
#define STR(name, def) {name, ACT__K_STR, 0, 0, 0, def, NULL}
#define LIST(name) {name, ACT__K_LIST, 0, 0, 0, "", NULL}
#define COMPAT_BOOL(name, def) {name, ACT__K_BOOL, ACT__KF_COMPAT, 0, 0, def, NULL}

const act__key_def act__config_keys[] = {
    /* Kineto keys of DESIGN.md section 3. */
    {"ACTIVITY_TYPES", ACT__K_TYPES, 0, 0, 0, "", NULL},
    BOOL("ACTIVITIES_ENABLED", "true"),
    STR("ACTIVITIES_LOG_FILE", "/tmp/libkineto_activities_%pid%.json"),
    {"ACTIVITIES_DURATION_SECS", ACT__K_INT, ACT__KF_HIDDEN, 0, I32MAX, "0",
     NULL},
    INT("ACTIVITIES_DURATION_MSECS", 0, "500"),
    INT("ACTIVITIES_ITERATIONS", 0, "0"),
    INT("ACTIVITIES_WARMUP_PERIOD_SECS", 0, "5"),
    INT("ACTIVITIES_WARMUP_ITERATIONS", 0, "0"),
    INT("ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB", 0, "128"),
    {"PROFILE_START_TIME", ACT__K_TIME, 0, 0, INT64_MAX, "0", NULL},
    INT("PROFILE_START_ITERATION", 0, "-1"),
    INT("PROFILE_START_ITERATION_ROUNDUP", 0, "-1"),
    STR("REQUEST_TRACE_ID", ""),
    STR("REQUEST_GROUP_TRACE_ID", ""),
    LIST("CUPTI_PM_SAMPLING_METRICS"),
    INT("CUPTI_PM_SAMPLING_DEVICE_ID", 0, "-1"),
    /* How often the process polls the dynolog daemon (docs/on-demand.md). */
    INT("ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS", 1, "5"),

    /* Other Kineto keys: checked and kept, no effect in actrace. */
    COMPAT_BOOL("ACTIVITIES_DISPLAY_CUDA_SYNC_WAIT_EVENTS", "true"),
    COMPAT_BOOL("CUPTI_PER_THREAD_BUFFER_ENABLED", "false"),
    COMPAT_BOOL("CLIENT_INTERFACE_ENABLE_OP_INPUTS_COLLECTION", "false"),
    COMPAT_BOOL("PYTHON_STACK_TRACE", "false"),
    COMPAT_BOOL("PROFILE_REPORT_INPUT_SHAPES", "false"),
    COMPAT_BOOL("PROFILE_PROFILE_MEMORY", "false"),
    COMPAT_BOOL("PROFILE_WITH_STACK", "false"),
    COMPAT_BOOL("PROFILE_WITH_FLOPS", "false"),
    COMPAT_BOOL("PROFILE_WITH_MODULES", "false"),
    COMPAT_BOOL("ENABLE_IPC_FABRIC", "false"),
    {"VERBOSE_LOG_LEVEL", ACT__K_INT, ACT__KF_COMPAT, 0, I32MAX, "-1", NULL},
    {"VERBOSE_LOG_MODULES", ACT__K_LIST, ACT__KF_COMPAT, 0, 0, "", NULL},
    {"CUSTOM_CONFIG", ACT__K_STR, ACT__KF_COMPAT, 0, 0, "", NULL},

    /* actrace keys (docs/config.md). */
    LIST("PLUGINS"),
    {"TRACE_CATEGORIES", ACT__K_ENUM, 0, 0, 0, "kineto", trace_categories},
    LIST("PM_COUNTER_METRICS"),
    INT("PM_COUNTER_INTERVAL_USECS", 1, "10000"),
    {"PM_COUNTER_DEVICES", ACT__K_INT_LIST, 0, 0, I32MAX, "", NULL},
    LIST("HOST_COUNTERS"),
    INT("HOST_COUNTER_INTERVAL_MSECS", 1, "100"),
    INT("MAX_BUFFER_SIZE_MB", 1, "256"),
    INT("BUFFER_PREALLOC_MB", 0, "16"),
    INT("BUFFER_POOL_MB", 0, "128"),
    {"BUFFER_FULL_POLICY", ACT__K_ENUM, 0, 0, 0, "grow", full_policies},
    INT("SPOOL_MAX_MB", 1, "8192"),
    STR("SPILL_DIR", ""),
    {"HOST_CLOCK", ACT__K_ENUM, 0, 0, 0, "auto", host_clocks},
    INT("PLUGIN_TIMEOUT_MSECS", 0, "5000"),
    BOOL("DEFAULT_PLUGINS", "true"),
    {"OUTPUT_FORMAT", ACT__K_ENUM, 0, 0, 0, "auto", output_formats},
};
const size_t act__config_key_count = ACT_ARRAY_SIZE(act__config_keys);

int act__config_key_find(const char *key, size_t len)
{
    for (size_t i = 0; i < act__config_key_count; i++) {
        const char *name = act__config_keys[i].name;
        if (strncmp(name, key, len) == 0 && name[len] == '\0')
            return (int)i;
    }
    return -1;
}

int act__config_parse_i64(const char *s, size_t n, int allow_neg,
                          int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '+' || (allow_neg && s[i] == '-'))) {
        neg = s[i] == '-';
        i++;
    }
    if (i == n)
        return ACT_EPARSE;
    uint64_t v = 0;
    int overflow = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return ACT_EPARSE;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_C(9223372036854775807) - d) / 10)
            overflow = 1; /* keep scanning: "99999999999x" is not a number */
        else
            v = v * 10 + d;
    }
    if (overflow)
        return ACT_ERANGE;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

int act__config_parse_bool(const char *s, size_t n)
{
    static const char *const words[] = {"n", "y",     "no",   "yes", "f",
                                        "t", "false", "true", "0",   "1"};
    for (size_t i = 0; i < ACT_ARRAY_SIZE(words); i++) {
        if (strlen(words[i]) == n && strncasecmp(words[i], s, n) == 0)
            return (int)(i % 2);
    }
    return -1;
}
