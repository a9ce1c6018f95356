/* SPDX-License-Identifier: MIT */
/*
 * Engine services for the plugin host (src/internal.h): sources, devices,
 * streams, record emission and counter series. These are not the hot path
 * of the application's own recording, but emission still writes straight
 * into the calling thread's chunk with no lock.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/spool.h"

static char *dupn(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        if (n)
            memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static char *dup0(const char *s)
{
    return s ? dupn(s, strlen(s)) : NULL;
}

int act__source_add(act_session *s, const char *name, const char *backend,
                    uint16_t *out)
{
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (s->nsources >= ACT_ARRAY_SIZE(s->sources)) {
        rc = ACT_ELIMIT;
    } else {
        act__source *src = &s->sources[s->nsources];
        src->name = dup0(name ? name : "");
        src->backend = dup0(backend ? backend : "");
        if (!src->name || !src->backend) {
            free(src->name);
            free(src->backend);
            rc = ACT_ENOMEM;
        } else {
            *out = (uint16_t)s->nsources++;
            if (s->spooled) {
                int64_t v[2] = {*out, 0};
                const char *strs[2] = {src->name, src->backend};
                size_t lens[2] = {strlen(src->name), strlen(src->backend)};
                act__spool_log(ACT__SP_SOURCE, v, 2, strs, lens, 2);
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void act__source_retire(act_session *s, uint16_t source)
{
    pthread_mutex_lock(&s->lock);
    if (source && source < s->nsources) {
        s->sources[source].retired = 1;
        if (s->spooled) {
            int64_t v[2] = {source, 1};
            act__spool_log(ACT__SP_SOURCE, v, 2, NULL, NULL, 0);
        }
    }
    pthread_mutex_unlock(&s->lock);
}

int act__device_add(act_session *s, uint16_t source, const char *name,
                    const char *vendor, uint32_t *out)
{
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (s->ndevices >= 65536) {
        rc = ACT_ELIMIT;
    } else if (s->ndevices == s->capdevices) {
        size_t ncap = s->capdevices ? s->capdevices * 2 : 8;
        act__device *nd = realloc(s->devices, ncap * sizeof *nd);
        if (!nd)
            rc = ACT_ENOMEM;
        else {
            s->devices = nd;
            s->capdevices = ncap;
        }
    }
    if (rc == 0) {
        act__device *d = &s->devices[s->ndevices];
        memset(d, 0, sizeof *d);
        d->source = source;
        d->name = dup0(name ? name : "");
        d->vendor = dup0(vendor ? vendor : "");
        if (!d->name || !d->vendor) {
            free(d->name);
            free(d->vendor);
            rc = ACT_ENOMEM;
        } else {
            *out = (uint32_t)s->ndevices++;
            if (s->spooled) {
                int64_t v[2] = {*out, source};
                const char *strs[2] = {d->name, d->vendor};
                size_t lens[2] = {strlen(d->name), strlen(d->vendor)};
                act__spool_log(ACT__SP_DEVICE, v, 2, strs, lens, 2);
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int act__device_prop(act_session *s, uint32_t device, const act__arg *prop)
{
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (device >= s->ndevices) {
        rc = ACT_EINVAL;
        goto out;
    }
    act__device *d = &s->devices[device];
    if (d->nprops == d->capprops) {
        size_t ncap = d->capprops ? d->capprops * 2 : 8;
        act__arg *np = realloc(d->props, ncap * sizeof *np);
        if (!np) {
            rc = ACT_ENOMEM;
            goto out;
        }
        d->props = np;
        d->capprops = ncap;
    }
    act__arg a = *prop;
    a.key = dupn(prop->key, prop->key_len);
    if (!a.key) {
        rc = ACT_ENOMEM;
        goto out;
    }
    if (a.kind == ACT__V_STR) {
        a.v.s.p = dupn(prop->v.s.p, prop->v.s.n);
        if (!a.v.s.p) {
            free((char *)a.key);
            rc = ACT_ENOMEM;
            goto out;
        }
    }
    d->props[d->nprops++] = a;
    if (s->spooled)
        act__spool_log_prop(device, prop);
out:
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int act__stream_name(act_session *s, uint32_t device, uint64_t stream,
                     const char *name, size_t len)
{
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (device >= s->ndevices) {
        rc = ACT_EINVAL;
        goto out;
    }
    act__device *d = &s->devices[device];
    char *copy = dupn(name, len);
    if (!copy) {
        rc = ACT_ENOMEM;
        goto out;
    }
    if (s->spooled) {
        int64_t v[2] = {device, (int64_t)stream};
        act__spool_log(ACT__SP_STREAM, v, 2, &name, &len, 1);
    }
    for (size_t i = 0; i < d->nstreams; i++) {
        if (d->streams[i].id == stream) {
            free(d->streams[i].name);
            d->streams[i].name = copy;
            goto out;
        }
    }
    if (d->nstreams == d->capstreams) {
        size_t ncap = d->capstreams ? d->capstreams * 2 : 8;
        void *ns = realloc(d->streams, ncap * sizeof *d->streams);
        if (!ns) {
            free(copy);
            rc = ACT_ENOMEM;
            goto out;
        }
        d->streams = ns;
        d->capstreams = ncap;
    }
    d->streams[d->nstreams].id = stream;
    d->streams[d->nstreams].name = copy;
    d->nstreams++;
out:
    pthread_mutex_unlock(&s->lock);
    return rc;
}

uint32_t act__device_count(const act_session *s)
{
    act_session *ms = (act_session *)s;
    pthread_mutex_lock(&ms->lock);
    uint32_t n = (uint32_t)s->ndevices;
    pthread_mutex_unlock(&ms->lock);
    return n;
}

const act_activity_set *act__session_types(const act_session *s)
{
    return &s->types;
}

int act__session_collecting(const act_session *s)
{
    int st = atomic_load(&s->state);
    return st == ACT__S_COLLECTING || st == ACT__S_DONE;
}

/* ---- emission ------------------------------------------------------------- */

static uint32_t cap32(size_t n, uint32_t max)
{
    return n > max ? max : (uint32_t)n;
}

/* act__emit without the signal-safety guard (the caller holds it). */
static int emit_unguarded(act_session *s, const act__emit_record *r)
{
    act__thread *t = act__thread_for(s);
    if (!t)
        return ACT_ENOMEM;
    if (ACT_UNLIKELY(!act__session_time_ok(s, r->start_ns) ||
                     (r->kind != ACT__EMIT_INSTANT && !act__session_time_ok(s, r->end_ns)))) {
        act__thread_drop(t, r->type, ACT__DROP_BAD_TIMES);
        return ACT_ERANGE;
    }
    /* Size the whole group (event, device info, args and their strings) so
     * it lands in one chunk and is published at once. */
    uint32_t nlen = cap32(r->name_len, 1u << 20);
    uint32_t strbytes = act__str_space(nlen);
    for (size_t i = 0; i < r->nargs; i++) {
        strbytes += act__str_space(cap32(r->args[i].key_len, 65535));
        if (act__vkind_text(r->args[i].kind))
            strbytes += act__str_space(cap32(r->args[i].v.s.n, 1u << 20));
    }
    uint32_t nrec = 2 + (uint32_t)r->nargs;
    if ((size_t)(t->str - (char *)t->rec) < (size_t)nrec * sizeof(act__rec) + strbytes &&
        act__thread_reserve(t, nrec, strbytes) != 0) {
        act__thread_drop(t, r->type, ACT__DROP_BUFFER_FULL);
        return ACT_ELIMIT;
    }
    act__rec *e = t->rec;
    e->t0 = r->start_ns;
    atomic_store_explicit(&e->t1, r->kind == ACT__EMIT_INSTANT ? r->start_ns : r->end_ns,
                          memory_order_relaxed);
    e->x = r->external_id;
    e->name = act__thread_put_str(t, r->name, nlen);
    e->type = (uint16_t)r->type;
    e->kind = r->kind == ACT__EMIT_INSTANT ? ACT__R_EMIT_INSTANT : ACT__R_EMIT_SPAN;
    e->flags = 0;
    act__rec *aux = e + 1;
    aux->t0 = (int64_t)r->stream;
    atomic_store_explicit(&aux->t1, (int64_t)r->correlation, memory_order_relaxed);
    aux->x = (uint64_t)r->device | ((uint64_t)r->source << 32);
    aux->name = 0;
    aux->type = 0;
    aux->kind = ACT__R_AUX_DEV;
    aux->flags = (uint8_t)r->kind;
    act__rec *a = aux + 1;
    for (size_t i = 0; i < r->nargs; i++, a++) {
        const act__arg *in = &r->args[i];
        a->t0 = 0;
        atomic_store_explicit(&a->t1, 0, memory_order_relaxed);
        a->name = act__thread_put_str(t, in->key, cap32(in->key_len, 65535));
        a->type = 0;
        a->kind = ACT__R_ARG;
        a->flags = (uint8_t)in->kind;
        switch (in->kind) {
        case ACT__V_INT: a->x = (uint64_t)in->v.i; break;
        case ACT__V_UINT: a->x = in->v.u; break;
        case ACT__V_DOUBLE: memcpy(&a->x, &in->v.d, 8); break;
        case ACT__V_BOOL: a->x = in->v.b != 0; break;
        case ACT__V_STR:
        case ACT__V_JSON:
            a->x = act__thread_put_str(t, in->v.s.p, cap32(in->v.s.n, 1u << 20));
            break;
        }
    }
    t->rec = a;
    /* The app's own act_arg_* must not attach to a plugin's record. */
    t->args_ok = 0;
    act__thread_commit(t, nrec);
    return 0;
}

int act__emit(act_session *s, const act__emit_record *r)
{
    if (!act__session_collecting(s))
        return ACT_ESTATE;
    if (!act__rec_enter()) {
        act__reentrant_drop(s);
        return ACT_ESTATE;
    }
    int rc = emit_unguarded(s, r);
    act__rec_leave();
    return rc;
}

int act__emit_guarded(act_session *s, const act__emit_record *r)
{
    if (!act__session_collecting(s))
        return ACT_ESTATE;
    return emit_unguarded(s, r);
}

/* ---- counters ------------------------------------------------------------- */

static int streq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static uint64_t series_key(uint16_t source, uint32_t device, const char *track,
                           const char *series)
{
    /* FNV-1a over the identity; a NUL separates the two names. */
    uint64_t h = 1469598103934665603u ^ ((uint64_t)source << 32 | device);
    h *= 1099511628211u;
    for (const char *p = track ? track : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    h = (h ^ 0xffu) * 1099511628211u;
    for (const char *p = series ? series : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211u;
    return h ^ (h >> 29);
}

/* Grow the series index to hold @p need entries at half load. Under lock. */
static int series_hash_grow(act_session *s, size_t need)
{
    if (need * 2 <= s->series_hash_cap)
        return 0;
    size_t ncap = s->series_hash_cap ? s->series_hash_cap * 2 : 64;
    while (ncap < need * 2)
        ncap *= 2;
    uint32_t *nh = calloc(ncap, sizeof *nh);
    if (!nh)
        return -1;
    for (size_t i = 0; i < s->nseries; i++) {
        const act__series *e = s->series[i];
        size_t j = series_key(e->source, e->device, e->track, e->series) & (ncap - 1);
        while (nh[j])
            j = (j + 1) & (ncap - 1);
        nh[j] = (uint32_t)i + 1;
    }
    free(s->series_hash);
    s->series_hash = nh;
    s->series_hash_cap = ncap;
    return 0;
}

static void spool_series(uint32_t id, const act__series *e)
{
    int64_t v[4] = {id, e->source, e->device, e->unit != NULL};
    const char *strs[3] = {e->track, e->series, e->unit ? e->unit : ""};
    size_t lens[3] = {strlen(e->track), strlen(e->series), strlen(strs[2])};
    act__spool_log(ACT__SP_SERIES, v, 4, strs, lens, 3);
}

int act__series_find(act_session *s, uint16_t source, uint32_t device,
                     const char *track, const char *series, const char *unit,
                     uint32_t *out, act__series **sp)
{
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    /* A hash index (the series list grows to 2^24): one lookup per new
     * (track, series) pointer pair of a thread, however many exist. */
    if (series_hash_grow(s, s->nseries + 1) != 0) {
        rc = ACT_ENOMEM;
        goto out;
    }
    size_t mask = s->series_hash_cap - 1;
    size_t j = series_key(source, device, track, series) & mask;
    for (; s->series_hash[j]; j = (j + 1) & mask) {
        uint32_t i = s->series_hash[j] - 1;
        act__series *e = s->series[i];
        if (e->device == device && e->source == source && streq(e->track, track) &&
            streq(e->series, series)) {
            if (unit && !e->unit) {
                e->unit = dup0(unit);
                if (s->spooled)
                    spool_series(i, e);
            }
            *out = i;
            if (sp)
                *sp = e;
            goto out;
        }
    }
    if (s->nseries >= (1u << 24)) {
        rc = ACT_ELIMIT;
        goto out;
    }
    if (s->nseries == s->capseries) {
        size_t ncap = s->capseries ? s->capseries * 2 : 16;
        act__series **ns = realloc(s->series, ncap * sizeof *ns);
        if (!ns) {
            rc = ACT_ENOMEM;
            goto out;
        }
        s->series = ns;
        s->capseries = ncap;
    }
    act__series *e = calloc(1, sizeof *e);
    if (!e || !(e->track = dup0(track ? track : "")) ||
        !(e->series = dup0(series ? series : ""))) {
        if (e)
            free(e->track);
        free(e);
        rc = ACT_ENOMEM;
        goto out;
    }
    e->unit = unit ? dup0(unit) : NULL;
    e->device = device;
    e->source = source;
    s->series[s->nseries] = e;
    s->series_hash[j] = (uint32_t)s->nseries + 1;
    *out = (uint32_t)s->nseries++;
    if (s->spooled)
        spool_series(*out, e);
    if (sp)
        *sp = e;
out:
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int act__counter_series(act_session *s, uint16_t source, uint32_t device,
                        const char *track, const char *series,
                        const char *unit, uint32_t *out)
{
    return act__series_find(s, source, device, track, series, unit, out, NULL);
}

int act__counter_sample_guarded(act_session *s, uint32_t series, int64_t ts_ns,
                                double value)
{
    if (!act__session_collecting(s))
        return ACT_ESTATE;
    if (!isfinite(value))
        return ACT_EINVAL;
    act__thread *t = act__thread_for(s);
    if (!t)
        return ACT_ENOMEM;
    if (ACT_UNLIKELY(!act__session_time_ok(s, ts_ns))) {
        act__thread_drop(t, -1, ACT__DROP_BAD_TIMES);
        return ACT_ERANGE;
    }
    return act__thread_put_counter(t, series, ts_ns, value) == 0 ? 0 : ACT_ELIMIT;
}

int act__counter_sample(act_session *s, uint32_t series, int64_t ts_ns,
                        double value)
{
    if (!act__rec_enter()) {
        act__reentrant_drop(s);
        return ACT_ESTATE;
    }
    int rc = act__counter_sample_guarded(s, series, ts_ns, value);
    act__rec_leave();
    return rc;
}
