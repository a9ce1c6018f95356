/* SPDX-License-Identifier: MIT */
/*
 * act_config_format(): the effective configuration as canonical
 * KEY=VALUE lines, sorted by key. Parsing the output again gives the same
 * configuration: integers in decimal, booleans as true/false, lists trimmed
 * and joined by ',', ACTIVITY_TYPES as canonical names in code order, and
 * ACTIVITIES_DURATION_SECS folded into ACTIVITIES_DURATION_MSECS (unless
 * the duration in ms is past _MSECS's range: then _SECS is written). Keys
 * whose default is "not set" (-1) and Kineto keys actrace only accepts for
 * compatibility are written only when they were set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_impl.h"

/* Appends like snprintf: counts everything, stores what fits. */
typedef struct out {
    char *buf;
    size_t cap, len;
} out;

static void put(out *o, const char *s, size_t n)
{
    if (o->len < o->cap) {
        size_t room = o->cap - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }

static void put_i64(out *o, int64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    put(o, tmp, (size_t)n);
}

/* Trimmed non-empty items of a comma list, joined by ','. For integer lists
 * each item is written in canonical decimal. */
static void put_list(out *o, const char *v, int ints)
{
    int first = 1;
    for (;;) {
        const char *comma = strchr(v, ',');
        size_t n = comma ? (size_t)(comma - v) : strlen(v);
        const char *it = v;
        while (n && ACT__BLANK(*it)) {
            it++;
            n--;
        }
        while (n && ACT__BLANK(it[n - 1]))
            n--;
        if (n) {
            if (!first)
                put(o, ",", 1);
            first = 0;
            int64_t x;
            if (ints && act__config_parse_i64(it, n, 0, &x) == 0)
                put_i64(o, x);
            else
                put(o, it, n);
        }
        if (!comma)
            break;
        v = comma + 1;
    }
}

static void put_value(out *o, const act_config *cfg, const act__key_def *d,
                      const char *v)
{
    int64_t x;
    switch (d->kind) {
    case ACT__K_INT:
    case ACT__K_TIME:
        if (act_config_get_int(cfg, d->name, &x) == 0)
            put_i64(o, x);
        break;
    case ACT__K_BOOL:
        puts_(o, act__config_parse_bool(v, strlen(v)) > 0 ? "true" : "false");
        break;
    case ACT__K_STR:
    case ACT__K_ENUM:
        puts_(o, v);
        break;
    case ACT__K_LIST:
        put_list(o, v, 0);
        break;
    case ACT__K_INT_LIST:
        put_list(o, v, 1);
        break;
    case ACT__K_TYPES: {
        size_t cur = 0;
        act_activity_type t;
        int first = 1;
        while (act_activity_set_next(&cfg->types, &cur, &t)) {
            const char *name = act_activity_type_name(t);
            if (!name)
                continue;
            if (!first)
                put(o, ",", 1);
            first = 0;
            puts_(o, name);
        }
        break;
    }
    }
}

/* Key and value of the i-th candidate line (known keys, then unknown keys
 * that were set); 0 if that candidate is not written. */
static int candidate(const act_config *cfg, size_t i, const char **key,
                     const act__key_def **def, const char **value)
{
    if (i < act__config_key_count) {
        const act__key_def *d = &act__config_keys[i];
        const act__config_entry *e = act__config_entry_find(cfg, d->name);
        if (d->flags & ACT__KF_HIDDEN) {
            /* ACTIVITIES_DURATION_SECS: written instead of _MSECS only when
             * the duration in ms would not fit _MSECS's range. */
            int64_t ms = 0;
            act_config_get_int(cfg, "ACTIVITIES_DURATION_MSECS", &ms);
            if (ms <= INT32_MAX)
                return 0;
        } else if (strcmp(d->name, "ACTIVITIES_DURATION_MSECS") == 0) {
            int64_t ms = 0;
            act_config_get_int(cfg, d->name, &ms);
            if (ms > INT32_MAX)
                return 0;
        }
        if ((d->flags & ACT__KF_COMPAT) && !e)
            return 0;
        /* Kineto's -1 means "not set" and is no valid value: writing it
         * would make the output unparseable, so such keys appear only
         * once set. */
        if (!e && d->def[0] == '-')
            return 0;
        *key = d->name;
        *def = d;
        *value = e ? e->value : d->def;
        return 1;
    }
    const act__config_entry *e = &cfg->e[i - act__config_key_count];
    if (e->def >= 0)
        return 0;
    *key = e->key;
    *def = NULL;
    *value = e->value;
    return 1;
}

typedef struct line {
    const char *key, *value;
    const act__key_def *def;
} line;

static int line_cmp(const void *a, const void *b)
{
    return strcmp(((const line *)a)->key, ((const line *)b)->key);
}

static void put_line(out *o, const act_config *cfg, const line *l)
{
    puts_(o, l->key);
    put(o, "=", 1);
    if (l->def)
        put_value(o, cfg, l->def, l->value);
    else
        puts_(o, l->value);
    put(o, "\n", 1);
}

size_t act_config_format(const act_config *cfg, char *buf, size_t cap)
{
    out o = {buf, cap, 0};
    if (!cfg) {
        if (buf && cap)
            buf[0] = '\0';
        return 0;
    }
    size_t total = act__config_key_count + cfg->n;
    /* Sorted once: linear in the keys apart from the sort (a config with
     * 50,000 unknown keys formats in milliseconds). Keys are unique: known
     * keys once each, set keys once each, and a set key that is known is
     * written as the known one. */
    line *lines = malloc(total * sizeof *lines);
    if (lines) {
        size_t n = 0;
        for (size_t i = 0; i < total; i++)
            if (candidate(cfg, i, &lines[n].key, &lines[n].def,
                          &lines[n].value))
                n++;
        qsort(lines, n, sizeof *lines, line_cmp);
        for (size_t i = 0; i < n; i++)
            put_line(&o, cfg, &lines[i]);
        free(lines);
        if (buf && cap)
            buf[o.len < cap ? o.len : cap - 1] = '\0';
        return o.len;
    }
    /* Out of memory: selection by key order, quadratic but allocation
     * free (the result is the same). */
    const char *last = NULL;
    for (;;) {
        const char *best = NULL, *best_value = NULL;
        const act__key_def *best_def = NULL;
        for (size_t i = 0; i < total; i++) {
            const char *key, *value;
            const act__key_def *def;
            if (!candidate(cfg, i, &key, &def, &value))
                continue;
            if (last && strcmp(key, last) <= 0)
                continue;
            if (!best || strcmp(key, best) < 0) {
                best = key;
                best_def = def;
                best_value = value;
            }
        }
        if (!best)
            break;
        line l = {best, best_value, best_def};
        put_line(&o, cfg, &l);
        last = best;
    }
    if (buf && cap)
        buf[o.len < cap ? o.len : cap - 1] = '\0';
    return o.len;
}
