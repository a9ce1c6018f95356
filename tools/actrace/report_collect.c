/* SPDX-License-Identifier: MIT */
/*
 * `actrace report`'s own statistics, gathered in `actrace summary`'s pass
 * (summ's hook): per device busy time in time bins, per kernel a duration
 * histogram, per counter series its values in time bins, the steps
 * (ProfilerStep#N on the host) and the device spans for per-step device
 * work. Sizes are bounded (report.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* ---- time bins -------------------------------------------------------------------------- */

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void bins_init(rpt_bins *b, int nvals)
{
    memset(b, 0, sizeof *b);
    b->w = 1000; /* 1 us to start */
    b->kmin = 1;
    b->kmax = 0;
    b->nvals = nvals;
    b->v = act_cli_xcalloc((size_t)RB_BINS * (size_t)nvals, sizeof *b->v);
}

static void bin_clear(rpt_bins *b, double *v)
{
    if (b->nvals == 1) {
        v[0] = 0;
    } else {
        v[0] = v[1] = 0;
        v[2] = INFINITY;
        v[3] = -INFINITY;
    }
}

static void bin_merge(const rpt_bins *b, double *to, const double *from)
{
    if (b->nvals == 1) {
        to[0] += from[0];
        return;
    }
    to[0] += from[0];
    to[1] += from[1];
    if (from[2] < to[2])
        to[2] = from[2];
    if (from[3] > to[3])
        to[3] = from[3];
}

/* Make bins lo..hi (in units of the current width) fit; they may move. */
static void bins_fit(rpt_bins *b, int64_t lo_t, int64_t hi_t)
{
    int nv = b->nvals;
    if (b->kmin > b->kmax) { /* empty: anchor at lo */
        while (floordiv(hi_t, b->w) - floordiv(lo_t, b->w) >= RB_BINS)
            b->w *= 2;
        b->k0 = floordiv(lo_t, b->w);
        for (size_t i = 0; i < RB_BINS; i++)
            bin_clear(b, b->v + i * (size_t)nv);
        b->kmin = b->k0;
        b->kmax = b->k0;
        return;
    }
    int64_t lo = floordiv(lo_t, b->w), hi = floordiv(hi_t, b->w);
    if (lo >= b->k0 && hi < b->k0 + RB_BINS)
        return;
    if (lo > b->kmin)
        lo = b->kmin;
    if (hi < b->kmax)
        hi = b->kmax;
    double *tmp = act_cli_xcalloc((size_t)RB_BINS * (size_t)nv, sizeof *tmp);
    while (hi - lo >= RB_BINS) {
        /* Merge pairs: bin k goes to floor(k/2). */
        for (size_t i = 0; i < RB_BINS; i++)
            bin_clear(b, tmp + i * (size_t)nv);
        int64_t nk0 = floordiv(b->k0, 2);
        for (int64_t k = b->kmin; k <= b->kmax; k++)
            bin_merge(b, tmp + (size_t)(floordiv(k, 2) - nk0) * (size_t)nv,
                      b->v + (size_t)(k - b->k0) * (size_t)nv);
        memcpy(b->v, tmp, (size_t)RB_BINS * (size_t)nv * sizeof *tmp);
        b->k0 = nk0;
        b->kmin = floordiv(b->kmin, 2);
        b->kmax = floordiv(b->kmax, 2);
        b->w *= 2;
        lo = floordiv(lo_t, b->w);
        hi = floordiv(hi_t, b->w);
        if (lo > b->kmin)
            lo = b->kmin;
        if (hi < b->kmax)
            hi = b->kmax;
    }
    if (lo < b->k0 || hi >= b->k0 + RB_BINS) { /* move the window to start at lo */
        for (size_t i = 0; i < RB_BINS; i++)
            bin_clear(b, tmp + i * (size_t)nv);
        for (int64_t k = b->kmin; k <= b->kmax; k++)
            memcpy(tmp + (size_t)(k - lo) * (size_t)nv, b->v + (size_t)(k - b->k0) * (size_t)nv,
                   (size_t)nv * sizeof *tmp);
        memcpy(b->v, tmp, (size_t)RB_BINS * (size_t)nv * sizeof *tmp);
        b->k0 = lo;
    }
    free(tmp);
}

/* Busy time [s, e) spread over the bins it covers. */
static void bins_add_busy(rpt_bins *b, int64_t s, int64_t e)
{
    if (e <= s)
        return;
    bins_fit(b, s, e - 1);
    int64_t a = floordiv(s, b->w), z = floordiv(e - 1, b->w);
    for (int64_t k = a; k <= z; k++) {
        int64_t bs = k * b->w, be = bs + b->w;
        int64_t os = s > bs ? s : bs, oe = e < be ? e : be;
        b->v[k - b->k0] += (double)(oe - os);
    }
    if (a < b->kmin)
        b->kmin = a;
    if (z > b->kmax)
        b->kmax = z;
}

static void bins_add_value(rpt_bins *b, int64_t t, double x)
{
    bins_fit(b, t, t);
    int64_t k = floordiv(t, b->w);
    double *v = b->v + (size_t)(k - b->k0) * 4;
    v[0] += x;
    v[1] += 1;
    if (x < v[2])
        v[2] = x;
    if (x > v[3])
        v[3] = x;
    if (k < b->kmin)
        b->kmin = k;
    if (k > b->kmax)
        b->kmax = k;
}

/* ---- devices and kernels --------------------------------------------------------------------- */

static rpt_dev *dev_of(rpt *R, int64_t id)
{
    int created;
    size_t *slot = act_cli_map_put(&R->dev_map, (const char *)&id, sizeof id, R->ndv, &created);
    if (created) {
        act_cli_grow(&R->dv, &R->dvcap, R->ndv, sizeof *R->dv);
        rpt_dev *d = &R->dv[R->ndv];
        memset(d, 0, sizeof *d);
        d->id = id;
        bins_init(&d->busy, 1);
        R->ndv++;
    }
    return &R->dv[*slot];
}

static size_t kbucket(int64_t v)
{
    if (v < 1)
        return 0;
    int e = 63 - __builtin_clzll((unsigned long long)v);
    size_t sub = e >= 3 ? (size_t)(((uint64_t)v >> (e - 3)) & 7) : 0;
    size_t b = (size_t)e * RK_SUB + sub;
    return b < RK_BUCKETS ? b : RK_BUCKETS - 1;
}

int64_t act_cli_report_kquantile(const rpt_kernel *k, double q)
{
    if (!k->count)
        return 0;
    uint64_t rank = (uint64_t)ceil(q * (double)k->count);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (size_t b = 0; b < RK_BUCKETS; b++) {
        seen += k->hist[b];
        if (seen >= rank) {
            int e = (int)(b / RK_SUB);
            double lo = ldexp(1.0 + (double)(b % RK_SUB) / RK_SUB, e);
            double hi = ldexp(1.0 + (double)(b % RK_SUB + 1) / RK_SUB, e);
            int64_t v = (int64_t)sqrt(lo * hi);
            if (v > k->max)
                v = k->max;
            if (v < k->min)
                v = k->min;
            return v;
        }
    }
    return k->max;
}

static void add_kernel(rpt *R, int64_t dev, const char *n, int64_t dur)
{
    size_t len = strlen(n);
    char *key = act_cli_xmalloc(len + sizeof dev);
    memcpy(key, &dev, sizeof dev);
    memcpy(key + sizeof dev, n, len);
    int created;
    size_t *slot = act_cli_map_put(&R->k_map, key, len + sizeof dev, R->nks, &created);
    if (created) {
        act_cli_grow(&R->ks, &R->kscap, R->nks, sizeof *R->ks);
        rpt_kernel *k = &R->ks[R->nks];
        memset(k, 0, sizeof *k);
        k->dev = dev;
        k->name = act_cli_map_key(&R->k_map, key, len + sizeof dev) + sizeof dev;
        k->min = INT64_MAX;
        k->hist = act_cli_xcalloc(RK_BUCKETS, sizeof *k->hist);
        R->nks++;
    }
    free(key);
    rpt_kernel *k = &R->ks[*slot];
    k->count++;
    k->total = sum_add(k->total, dur);
    if (dur < k->min)
        k->min = dur;
    if (dur > k->max)
        k->max = dur;
    k->hist[kbucket(dur)]++;
}

static void dev_span(rpt *R, int64_t id, int kind, int64_t s, int64_t e)
{
    rpt_dev *d = dev_of(R, id);
    /* Overlapping spans (streams) count once: a run grows while the next
     * span starts inside it. Spans out of start order are added as they
     * come (their bins are capped at 100% when written). */
    if (d->have_run && s >= d->run_s && s <= d->run_e) {
        if (e > d->run_e)
            d->run_e = e;
    } else {
        if (d->have_run)
            bins_add_busy(&d->busy, d->run_s, d->run_e);
        d->run_s = s;
        d->run_e = e;
        d->have_run = 1;
    }
    if (R->nsp < RPT_SPANS_MAX) {
        act_cli_grow(&R->sp, &R->spcap, R->nsp, sizeof *R->sp);
        R->sp[R->nsp++] = (rpt_span){s, e, kind};
    } else {
        R->spans_cut = 1;
    }
}

/* ---- counters ------------------------------------------------------------------------ */

static void add_counter(rpt *R, const act__jv *pid, const act__jv *name,
                        const act__jv *args, int64_t ts)
{
    char pidtext[96];
    act_cli_json_text(pid, pidtext, sizeof pidtext);
    const char *nm = name && name->type == ACT__J_STRING ? name->s : "";
    for (const act__jv *v = args->child; v; v = v->next) {
        double d;
        if (!act__jv_num(v, &d) || !isfinite(d))
            continue;
        size_t pl = strlen(pidtext), nl = strlen(nm), kl = v->klen;
        char *key = act_cli_xmalloc(pl + nl + kl + 2);
        memcpy(key, pidtext, pl);
        key[pl] = '\x1f';
        memcpy(key + pl + 1, nm, nl);
        key[pl + 1 + nl] = '\x1f';
        memcpy(key + pl + nl + 2, v->key, kl);
        size_t klen = pl + nl + kl + 2;
        size_t *slot = act_cli_map_get(&R->se_map, key, klen);
        if (!slot) {
            if (R->nse >= RPT_SERIES_MAX) {
                R->series_left_out++;
                free(key);
                continue;
            }
            slot = act_cli_map_put(&R->se_map, key, klen, R->nse, NULL);
            act_cli_grow(&R->se, &R->secap, R->nse, sizeof *R->se);
            rpt_series *s = &R->se[R->nse];
            memset(s, 0, sizeof *s);
            const char *mk = act_cli_map_key(&R->se_map, key, klen);
            s->track = act_cli_xstrdup(nm);
            s->key = mk + pl + nl + 2;
            s->pid = act_cli_xstrdup(pidtext);
            s->min = INFINITY;
            s->max = -INFINITY;
            bins_init(&s->bins, 4);
            R->nse++;
        }
        free(key);
        rpt_series *s = &R->se[*slot];
        s->n++;
        if (d < s->min)
            s->min = d;
        if (d > s->max)
            s->max = d;
        bins_add_value(&s->bins, ts, d);
    }
}

/* ---- the hook ------------------------------------------------------------------------- */

static void on_member(rpt *R, const char *key, const act__jv *v)
{
    if (strcmp(key, "distributedInfo") == 0) {
        int64_t r;
        if (act__jv_i64(act__jv_get(v, "rank"), &r))
            R->rank = r;
    } else if (strcmp(key, "host_name") == 0 && v->type == ACT__J_STRING) {
        free(R->host);
        R->host = act_cli_xstrdup(v->s);
    }
}

static void hook(void *ctx, summ *S, const char *key, const act__jv *e)
{
    rpt *R = ctx;
    if (key) {
        on_member(R, key, e);
        return;
    }
    if (e->type != ACT__J_OBJECT)
        return;
    act_cli_fields f;
    act_cli_get_fields(e, &f);
    const char *ph = f.ph && f.ph->type == ACT__J_STRING ? f.ph->s : NULL;
    if (!ph || !ph[0] || ph[1] || ph[0] == 'M')
        return;
    int64_t ts, dur = 0;
    if (!act__jv_us_ns(f.ts, &ts))
        return;
    if (ph[0] == 'C') {
        if (f.args && f.args->type == ACT__J_OBJECT)
            add_counter(R, f.pid, f.name, f.args, ts);
        return;
    }
    if (ph[0] != 'X' || !act__jv_us_ns(f.dur, &dur) || dur < 0)
        return;
    const char *name = f.name && f.name->type == ACT__J_STRING ? f.name->s : "";
    size_t p = act_cli_summary_proc(S, f.pid);
    const sum_proc *pr = &S->pr[p];
    int kind = act_cli_device_kind(f.cat);
    if (kind != DK_NONE) {
        int64_t id = pr->is_device ? pr->device : -1 - (int64_t)p;
        dev_span(R, id, kind, ts, ts + dur);
        if (kind == DK_KERNEL)
            add_kernel(R, id, name, dur);
        return;
    }
    if (strncmp(name, "ProfilerStep#", 13) == 0 && !pr->is_device &&
        !(f.cat && f.cat->type == ACT__J_STRING &&
          strcmp(f.cat->s, "gpu_user_annotation") == 0)) {
        char *end;
        long long n = strtoll(name + 13, &end, 10);
        act_cli_grow(&R->st, &R->stcap, R->nst, sizeof *R->st);
        R->st[R->nst++] = (rpt_step){ts, dur, (*end || end == name + 13) ? -1 : n};
    }
}

void act_cli_report_attach(rpt *R, summ *S)
{
    memset(R, 0, sizeof *R);
    R->rank = -1;
    S->hook = hook;
    S->hook_ctx = R;
}

void act_cli_report_finish(rpt *R)
{
    for (size_t i = 0; i < R->ndv; i++) {
        rpt_dev *d = &R->dv[i];
        if (d->have_run)
            bins_add_busy(&d->busy, d->run_s, d->run_e);
        d->have_run = 0;
    }
}

void act_cli_report_free(rpt *R)
{
    for (size_t i = 0; i < R->ndv; i++)
        free(R->dv[i].busy.v);
    for (size_t i = 0; i < R->nks; i++)
        free(R->ks[i].hist);
    for (size_t i = 0; i < R->nse; i++) {
        free((char *)R->se[i].track);
        free(R->se[i].pid);
        free(R->se[i].bins.v);
    }
    act_cli_map_free(&R->dev_map);
    act_cli_map_free(&R->k_map);
    act_cli_map_free(&R->se_map);
    free(R->dv);
    free(R->ks);
    free(R->se);
    free(R->st);
    free(R->sp);
    free(R->host);
}
