/* SPDX-License-Identifier: MIT */
/*
 * Configuration in Kineto's text syntax (DESIGN.md section 3): one
 * KEY = VALUE per line, '#' comments, comma lists. A parse is applied
 * all-or-nothing; every error names line, column, key and reason.
 *
 * Layering: defaults, then the file named by $ACTRACE_CONFIG, then text
 * given through the API or the command line; later wins per key. Each
 * act_config_parse() call on an existing config is one more layer.
 *
 * An act_config is not thread-safe for concurrent modification; concurrent
 * reads are fine.
 */
#ifndef ACTRACE_CONFIG_H
#define ACTRACE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "actrace/activity_type.h"
#include "actrace/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct act_config act_config;

/** Where and why a parse failed. Caller-owned. */
typedef struct act_parse_error {
    int code;          /**< negative ACT_E* code, 0 if no error */
    int line;          /**< 1-based line, 0 if not tied to a line */
    int column;        /**< 1-based byte column, 0 if unknown */
    char key[64];      /**< offending key (truncated), "" if none */
    char message[256]; /**< full sentence, NUL-terminated */
} act_parse_error;

/** Called once per error found when a caller wants them all. */
typedef void (*act_parse_error_fn)(void *user, const act_parse_error *err);

/** Bits for act_config_parse_opts.flags. */
#define ACT_CONFIG_STRICT 0x1u /**< unknown keys are errors */
/** Unknown keys are kept without a warning here: the caller warns later for
 *  the ones no loaded plugin reads (act_session_create does, after loading
 *  its plugins). Ignored under ACT_CONFIG_STRICT. */
#define ACT_CONFIG_QUIET_UNKNOWN 0x2u

/** Options for act_config_parse(). May grow: set struct_size with
 *  act_config_parse_opts_init(). NULL means all defaults. */
typedef struct act_config_parse_opts {
    uint32_t struct_size;
    uint32_t flags;              /**< ACT_CONFIG_* */
    act_parse_error_fn on_error; /**< optional: every error, in order */
    void *user;                  /**< passed to on_error and on_warning */
    /** optional: warnings (unknown keys), each with its position, instead of
     *  the log callback. err->code is the code the warning would have as an
     *  error under ACT_CONFIG_STRICT. */
    act_parse_error_fn on_warning;
    /* end of ABI 0.1 */
} act_config_parse_opts;

/** Zero @p o and set its struct_size. */
ACT_API void act_config_parse_opts_init(act_config_parse_opts *o);

/** A config holding every key's default. act_config_destroy() frees it. */
ACT_API int act_config_create(act_config **out);

/** Free a config. NULL does nothing. */
ACT_API void act_config_destroy(act_config *cfg);

/** Deep copy. */
ACT_API int act_config_dup(const act_config *cfg, act_config **out);

/**
 * Parse @p text and apply it on top of *config (all-or-nothing).
 * If *config is NULL a new config with defaults is created first and stored
 * in *config on success only.
 * @param text  not necessarily NUL-terminated; any bytes.
 * @param err   optional; receives the first error.
 * @return 0, or the code of the first error (nothing applied).
 */
ACT_API int act_config_parse(const char *text, size_t len,
                             const act_config_parse_opts *opts,
                             act_config **config, act_parse_error *err);

/**
 * Read and parse a file as one layer. Errors name the file in
 * act_parse_error.message; I/O failures are ACT_EIO with line 0.
 */
ACT_API int act_config_parse_file(const char *path,
                                  const act_config_parse_opts *opts,
                                  act_config **config, act_parse_error *err);

/**
 * The layered config a session uses by default: defaults, then the file
 * named by $ACTRACE_CONFIG if set. Creates *config if NULL.
 */
ACT_API int act_config_load_env(const act_config_parse_opts *opts,
                                act_config **config, act_parse_error *err);

/** Integer value of a key (set or default). ACT_ENOENT if the key is
 *  neither set nor known; ACT_EINVAL if it is not an integer. */
ACT_API int act_config_get_int(const act_config *cfg, const char *key,
                               int64_t *out);

/** Boolean value of a key; as act_config_get_int. */
ACT_API int act_config_get_bool(const act_config *cfg, const char *key,
                                int *out);

/** Raw (trimmed) value of a key, set or default; NULL if neither. For
 *  TRACE_CATEGORIES it is the lower-case word ("kineto", "generic").
 *  Valid until the config is modified or destroyed. */
ACT_API const char *act_config_get_str(const act_config *cfg,
                                       const char *key);

/** The selected activity types (ACTIVITY_TYPES, or the default set). */
ACT_API void act_config_activity_types(const act_config *cfg,
                                       act_activity_set *out);

/** Callback for act_config_foreach: return non-zero to stop. */
typedef int (*act_config_visit_fn)(void *user, const char *key,
                                   const char *value);

/**
 * Visit every key that was set explicitly (in first-set order), with its
 * raw value: plugins read their own keys this way.
 */
ACT_API int act_config_foreach(const act_config *cfg, act_config_visit_fn fn,
                               void *user);

/**
 * Write the effective configuration, one canonical KEY=VALUE per line,
 * sorted by key: every known key with a value (set or default; keys whose
 * default is "not set", such as PROFILE_START_ITERATION, and Kineto keys
 * actrace accepts only for compatibility appear once set), then also the
 * unknown keys that were set. ACTIVITY_TYPES lists canonical names;
 * ACTIVITIES_DURATION_SECS is folded into ACTIVITIES_DURATION_MSECS.
 * Parsing the output gives the same configuration.
 * Returns the length it needed (like snprintf); @p buf may be NULL
 * when @p cap is 0.
 */
ACT_API size_t act_config_format(const act_config *cfg, char *buf,
                                 size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* ACTRACE_CONFIG_H */
