/* SPDX-License-Identifier: MIT */
/*
 * Internals of src/config: the table of known keys, the config object and
 * the value helpers shared by the parser (parse.c), the store and getters
 * (config.c) and the canonical writer (format.c).
 */
#ifndef ACT_CONFIG_IMPL_H
#define ACT_CONFIG_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* The largest config file act_config_parse_file() reads (docs/config.md):
 * 16 MiB, far above any real config (tens of thousands of keys fit), so
 * that ACTRACE_CONFIG=/dev/zero fails fast instead of growing until memory
 * runs out. */
#define ACT__CONFIG_FILE_MAX ((size_t)16 << 20)

/* How a known key's value is checked and written back. */
typedef enum act__key_kind {
    ACT__K_INT = 0,  /* whole number in [min, max] */
    ACT__K_TIME,     /* ms since the epoch; 0 = unset; not > 10 s old */
    ACT__K_BOOL,     /* y/n/yes/no/t/f/true/false/1/0, any case */
    ACT__K_STR,      /* any text */
    ACT__K_LIST,     /* comma list of strings */
    ACT__K_INT_LIST, /* comma list of whole numbers in [min, max] */
    ACT__K_TYPES,    /* ACTIVITY_TYPES */
    ACT__K_ENUM      /* one of a fixed list of words, any case */
} act__key_kind;

/* Flags of a known key. */
#define ACT__KF_COMPAT 0x1u /* Kineto key accepted for compatibility only:
                               written by act_config_format() only if set */
#define ACT__KF_HIDDEN 0x2u /* folded into another key when written */

typedef struct act__key_def {
    const char *name;
    act__key_kind kind;
    unsigned flags;
    int64_t min, max;         /* ACT__K_INT, ACT__K_INT_LIST */
    const char *def;          /* default, as text */
    const char *const *words; /* ACT__K_ENUM: NULL-terminated, lower case */
} act__key_def;

extern const act__key_def act__config_keys[];
extern const size_t act__config_key_count;

/* Index of a known key in act__config_keys, or -1. */
int act__config_key_find(const char *key, size_t len);

typedef struct act__config_entry {
    char *key;
    char *value; /* trimmed; canonical spelling for ACT__K_ENUM */
    int def;     /* index of the known key, or -1 */
    uint64_t seq; /* when it was last set (orders ..._SECS vs ..._MSECS) */
    unsigned char read; /* a plugin asked for it (act__config_mark_read) */
} act__config_entry;

struct act_config {
    act__config_entry *e; /* explicitly set keys, in first-set order */
    size_t n, cap;
    uint64_t seq;
    act_activity_set types; /* effective ACTIVITY_TYPES */
    /* Hash index over e[].key (open addressing, linear probing): slot
     * holds entry index + 1, 0 = empty; idx_cap is 0 or a power of two at
     * least twice n. Keeps a lookup O(1), so parsing and formatting a
     * config are linear in its number of keys. */
    uint32_t *idx;
    size_t idx_cap;
};

/* Make room in the index for @p n entries in all (rehashing what is
 * there). Returns 0 or ACT_ENOMEM; after success, adding entries up to
 * @p n cannot fail. */
int act__config_index_reserve(act_config *cfg, size_t n);
/* Enter e[@p i] into the index (room was reserved). */
void act__config_index_add(act_config *cfg, size_t i);

/* Entry of a key that was set, or NULL. */
const act__config_entry *act__config_entry_find(const act_config *cfg,
                                                const char *key);

/* A loaded plugin asked for @p key (the host's config_get): a set key no
 * built-in one knows is then a plugin's, not unknown. Thread-safe. */
void act__config_mark_read(const act_config *cfg, const char *key);
/* Warn once for each set key that is neither built in nor asked for by a
 * plugin since the config was made (act_session_create calls it after its
 * plugins' init, the config having been parsed with
 * ACT_CONFIG_QUIET_UNKNOWN). */
void act__config_warn_unread(const act_config *cfg);

/* Parse a whole number with an optional '+' (and '-' if @p allow_neg).
 * Returns 0 and the value, ACT_EPARSE for anything but a number, ACT_ERANGE
 * past int64. */
int act__config_parse_i64(const char *s, size_t n, int allow_neg,
                          int64_t *out);
/* 1 or 0 for a boolean word, -1 otherwise. */
int act__config_parse_bool(const char *s, size_t n);

#define ACT__BLANK(c)                                                         \
    ((c) == ' ' || (c) == '\t' || (c) == '\r' || (c) == '\v' || (c) == '\f')

#endif /* ACT_CONFIG_IMPL_H */
