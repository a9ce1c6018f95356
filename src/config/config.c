/* SPDX-License-Identifier: MIT */
/*
 * The config object: explicitly set keys in first-set order, each with its
 * trimmed value, plus the parsed ACTIVITY_TYPES. Values were checked when
 * they were parsed, so the typed getters only convert.
 */
#include <stdlib.h>
#include <string.h>

#include "actrace/log.h"
#include "config_impl.h"

void act_config_parse_opts_init(act_config_parse_opts *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
}

int act_config_create(act_config **out)
{
    if (!out)
        return ACT_EINVAL;
    act_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return ACT_ENOMEM;
    act_activity_set_default(&cfg->types);
    *out = cfg;
    return 0;
}

void act_config_destroy(act_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n; i++) {
        free(cfg->e[i].key);
        free(cfg->e[i].value);
    }
    free(cfg->e);
    free(cfg->idx);
    free(cfg);
}

/* ---- the key index ------------------------------------------------------ */

static uint64_t key_hash(const char *k)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * UINT64_C(0x100000001b3);
    return h ^ (h >> 29);
}

static void index_put(uint32_t *idx, size_t cap, const act__config_entry *e,
                      size_t i)
{
    size_t m = cap - 1, h = (size_t)key_hash(e[i].key) & m;
    while (idx[h])
        h = (h + 1) & m;
    idx[h] = (uint32_t)(i + 1);
}

int act__config_index_reserve(act_config *cfg, size_t n)
{
    if (n > UINT32_MAX - 1)
        return ACT_ENOMEM;
    if (cfg->idx_cap >= 2 * n && cfg->idx)
        return 0;
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    uint32_t *idx = calloc(cap, sizeof *idx);
    if (!idx)
        return ACT_ENOMEM;
    for (size_t i = 0; i < cfg->n; i++)
        index_put(idx, cap, cfg->e, i);
    free(cfg->idx);
    cfg->idx = idx;
    cfg->idx_cap = cap;
    return 0;
}

void act__config_index_add(act_config *cfg, size_t i)
{
    index_put(cfg->idx, cfg->idx_cap, cfg->e, i);
}

int act_config_dup(const act_config *cfg, act_config **out)
{
    if (!cfg || !out)
        return ACT_EINVAL;
    act_config *c = calloc(1, sizeof *c);
    if (!c)
        return ACT_ENOMEM;
    *c = *cfg;
    c->e = NULL;
    c->n = c->cap = 0;
    c->idx = NULL;
    c->idx_cap = 0;
    if (cfg->n) {
        c->e = calloc(cfg->n, sizeof *c->e);
        if (!c->e) {
            free(c);
            return ACT_ENOMEM;
        }
        c->cap = cfg->n;
    }
    for (size_t i = 0; i < cfg->n; i++) {
        act__config_entry *d = &c->e[i];
        *d = cfg->e[i];
        d->key = strdup(cfg->e[i].key);
        d->value = strdup(cfg->e[i].value);
        c->n++;
        if (!d->key || !d->value) {
            act_config_destroy(c);
            return ACT_ENOMEM;
        }
    }
    if (act__config_index_reserve(c, c->n) != 0) {
        act_config_destroy(c);
        return ACT_ENOMEM;
    }
    *out = c;
    return 0;
}

const act__config_entry *act__config_entry_find(const act_config *cfg,
                                                const char *key)
{
    if (!cfg->idx) {
        for (size_t i = 0; i < cfg->n; i++)
            if (strcmp(cfg->e[i].key, key) == 0)
                return &cfg->e[i];
        return NULL;
    }
    size_t m = cfg->idx_cap - 1, h = (size_t)key_hash(key) & m;
    for (uint32_t v; (v = cfg->idx[h]) != 0; h = (h + 1) & m)
        if (strcmp(cfg->e[v - 1].key, key) == 0)
            return &cfg->e[v - 1];
    return NULL;
}

/* The effective duration in ms: ACTIVITIES_DURATION_SECS and _MSECS set one
 * value (as in Kineto), so whichever was set last wins. */
static int64_t duration_ms(const act_config *cfg)
{
    const act__config_entry *ms =
        act__config_entry_find(cfg, "ACTIVITIES_DURATION_MSECS");
    const act__config_entry *s =
        act__config_entry_find(cfg, "ACTIVITIES_DURATION_SECS");
    int64_t v = 500;
    if (s && (!ms || s->seq > ms->seq)) {
        act__config_parse_i64(s->value, strlen(s->value), 0, &v);
        return v * 1000;
    }
    if (ms)
        act__config_parse_i64(ms->value, strlen(ms->value), 0, &v);
    return v;
}

int act_config_get_int(const act_config *cfg, const char *key, int64_t *out)
{
    if (!cfg || !key || !out)
        return ACT_EINVAL;
    if (strcmp(key, "ACTIVITIES_DURATION_MSECS") == 0) {
        *out = duration_ms(cfg);
        return 0;
    }
    if (strcmp(key, "ACTIVITIES_DURATION_SECS") == 0) {
        *out = duration_ms(cfg) / 1000;
        return 0;
    }
    int def = act__config_key_find(key, strlen(key));
    if (def >= 0 && act__config_keys[def].kind != ACT__K_INT &&
        act__config_keys[def].kind != ACT__K_TIME)
        return ACT_EINVAL;
    const char *v = act_config_get_str(cfg, key);
    if (!v)
        return ACT_ENOENT;
    int64_t x;
    if (act__config_parse_i64(v, strlen(v), 1, &x) != 0)
        return ACT_EINVAL;
    *out = x;
    return 0;
}

int act_config_get_bool(const act_config *cfg, const char *key, int *out)
{
    if (!cfg || !key || !out)
        return ACT_EINVAL;
    int def = act__config_key_find(key, strlen(key));
    if (def >= 0 && act__config_keys[def].kind != ACT__K_BOOL)
        return ACT_EINVAL;
    const char *v = act_config_get_str(cfg, key);
    if (!v)
        return ACT_ENOENT;
    int b = act__config_parse_bool(v, strlen(v));
    if (b < 0)
        return ACT_EINVAL;
    *out = b;
    return 0;
}

const char *act_config_get_str(const act_config *cfg, const char *key)
{
    if (!cfg || !key)
        return NULL;
    const act__config_entry *e = act__config_entry_find(cfg, key);
    if (e)
        return e->value;
    int def = act__config_key_find(key, strlen(key));
    return def >= 0 ? act__config_keys[def].def : NULL;
}

void act_config_activity_types(const act_config *cfg, act_activity_set *out)
{
    if (!out)
        return;
    if (cfg)
        *out = cfg->types;
    else
        act_activity_set_default(out);
}

int act_config_foreach(const act_config *cfg, act_config_visit_fn fn,
                       void *user)
{
    if (!cfg || !fn)
        return ACT_EINVAL;
    for (size_t i = 0; i < cfg->n; i++) {
        int rc = fn(user, cfg->e[i].key, cfg->e[i].value);
        if (rc)
            return rc;
    }
    return 0;
}

void act__config_mark_read(const act_config *cfg, const char *key)
{
    if (!cfg || !key)
        return;
    const act__config_entry *e = act__config_entry_find(cfg, key);
    /* The entry array belongs to the session's config, which outlives its
     * plugins; only this flag changes after the config is made. */
    if (e && e->def < 0)
        __atomic_store_n((unsigned char *)&e->read, 1, __ATOMIC_RELAXED);
}

void act__config_warn_unread(const act_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n; i++) {
        const act__config_entry *e = &cfg->e[i];
        if (e->def < 0 && !__atomic_load_n(&e->read, __ATOMIC_RELAXED))
            act_log(ACT_LOG_WARN,
                    "config: unknown key '%.200s': no built-in key and no "
                    "loaded plugin reads it",
                    e->key);
    }
}
