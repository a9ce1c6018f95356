/* SPDX-License-Identifier: MIT */
/*
 * One trace's part of `actrace report`'s page: read the trace once
 * (summary's pass with report_collect.c's hook), then write what the page
 * shows of it as one JSON object (docs/report.md has the sizes): devices
 * with their binned busy time, top kernels and launch latency histogram,
 * host top names, steps with per-step device work, counter series, and the
 * warnings in plain words. Strings are escaped for a <script> element.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define TOP_KERNELS 20
#define STEPS_SHOWN 2000
#define STEP_HIST_BINS 30

/* ---- JSON out (safe inside <script>: <, >, & escaped) --------------------------------- */

typedef struct jw {
    FILE *f;
    int first;
} jw;

void act_cli_report_jstr(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        unsigned c = *p;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc((int)c, f);
    }
    fputc('"', f);
}

static void key(jw *w, const char *k)
{
    if (!w->first)
        fputc(',', w->f);
    w->first = 0;
    if (k) {
        act_cli_report_jstr(w->f, k);
        fputc(':', w->f);
    }
}

static void jnum(jw *w, const char *k, double v)
{
    key(w, k);
    if (isfinite(v))
        fprintf(w->f, "%.15g", v);
    else
        fputs("null", w->f);
}

static void jint(jw *w, const char *k, int64_t v)
{
    key(w, k);
    fprintf(w->f, "%" PRId64, v);
}

static void jus(jw *w, const char *k, int64_t ns)
{
    jnum(w, k, (double)ns / 1000.0);
}

static void js(jw *w, const char *k, const char *s)
{
    key(w, k);
    if (s)
        act_cli_report_jstr(w->f, s);
    else
        fputs("null", w->f);
}

static void jopen(jw *w, const char *k, char c)
{
    key(w, k);
    fputc(c, w->f);
    w->first = 1;
}

static void jclose(jw *w, char c)
{
    fputc(c, w->f);
    w->first = 0;
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0.0;
}

static uint64_t u64_of(const act__jv *v)
{
    int64_t i;
    return act__jv_i64(v, &i) && i > 0 ? (uint64_t)i : 0;
}

/* ---- one trace ------------------------------------------------------------------------- */

typedef struct one {
    char *file;
    summ S;
    rpt R;
    int ok;
    char err[600];
    int64_t (*work)[4]; /* per step: device time by kind (step_work) */
    uint64_t *nkern;
    int work_cut;
} one;

static int cmp_kernel_total(const void *a, const void *b)
{
    const rpt_kernel *x = *(rpt_kernel *const *)a, *y = *(rpt_kernel *const *)b;
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    return strcmp(x->name, y->name);
}

static int cmp_step(const void *a, const void *b)
{
    const rpt_step *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_span(const void *a, const void *b)
{
    const rpt_span *x = a, *y = b;
    return x->s < y->s ? -1 : x->s > y->s;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void write_bins_busy(jw *w, const rpt_bins *b, int64_t base)
{
    jopen(w, "bins", '{');
    if (b->kmin <= b->kmax) {
        jus(w, "t0_us", b->kmin * b->w - base);
        jus(w, "w_us", b->w);
        jopen(w, "busy_pct", '[');
        for (int64_t k = b->kmin; k <= b->kmax; k++) {
            double p = pct(b->v[k - b->k0], (double)b->w);
            jnum(w, NULL, p > 100.0 ? 100.0 : p);
        }
        jclose(w, ']');
    }
    jclose(w, '}');
}

/* A launch latency histogram of 4 bins per power of two, from summary's
 * finer buckets (32 per power of two above 64 ns). */
static void write_latency(jw *w, sum_device *dv)
{
    if (!dv->lat_n || !dv->lat) {
        js(w, "latency", NULL);
        return;
    }
    jopen(w, "latency", '{');
    jint(w, "count", (int64_t)dv->lat_n);
    jus(w, "p50_us", act_cli_lat_quantile(dv, 0.5));
    jus(w, "p95_us", act_cli_lat_quantile(dv, 0.95));
    jus(w, "max_us", dv->lat_max);
    /* Coarse bin c: [2^(c/4) * (1 + (c%4)/4), ...) ns; c < 24 holds all
     * latencies under 64 ns (and negatives) in bin 0. */
    uint64_t coarse[64 * 4] = {0};
    int cmin = INT32_MAX, cmax = -1;
    for (size_t b = 0; b < LAT_BUCKETS; b++) {
        if (!dv->lat[b])
            continue;
        int c;
        if (b < 64) {
            c = 0;
        } else {
            int e = (int)((b - 64) / 32) + 6;
            c = (e - 6) * 4 + (int)((b - 64) % 32) / 8 + 1;
        }
        coarse[c] += dv->lat[b];
        if (c < cmin)
            cmin = c;
        if (c > cmax)
            cmax = c;
    }
    jopen(w, "lo_us", '[');
    for (int c = cmin; c <= cmax; c++) {
        double lo = c == 0 ? 0 : ldexp(1.0 + (double)((c - 1) % 4) / 4.0, (c - 1) / 4 + 6);
        jnum(w, NULL, lo / 1000.0);
    }
    jclose(w, ']');
    jopen(w, "hi_us", '[');
    for (int c = cmin; c <= cmax; c++) {
        double hi = c == 0 ? 64 : ldexp(1.0 + (double)((c - 1) % 4 + 1) / 4.0, (c - 1) / 4 + 6);
        jnum(w, NULL, hi / 1000.0);
    }
    jclose(w, ']');
    jopen(w, "counts", '[');
    for (int c = cmin; c <= cmax; c++)
        jint(w, NULL, (int64_t)coarse[c]);
    jclose(w, ']');
    jclose(w, '}');
}

static void write_devices(jw *w, one *o)
{
    summ *S = &o->S;
    rpt *R = &o->R;
    double win = S->have_time ? (double)(S->last - S->first) : 0;
    rpt_kernel **kk = act_cli_xcalloc(R->nks ? R->nks : 1, sizeof *kk);
    for (size_t i = 0; i < R->nks; i++)
        kk[i] = &R->ks[i];
    act_cli_sort(kk, R->nks, sizeof *kk, cmp_kernel_total);
    jopen(w, "devices", '[');
    for (size_t d = 0; d < S->ndv; d++) {
        sum_device *dv = &S->dv[d];
        uint64_t spans = dv->kind_count[1] + dv->kind_count[2] + dv->kind_count[3];
        if (!spans && !dv->lat_n)
            continue;
        int64_t busy = act_cli_ivset_total(&dv->busy);
        int64_t kind[4] = {0};
        for (int k = 1; k < 4; k++)
            kind[k] = act_cli_ivset_total(&dv->kind[k]);
        jopen(w, NULL, '{');
        if (dv->id >= 0) {
            jint(w, "device", dv->id);
        } else {
            js(w, "device", NULL);
        }
        const char *pname = NULL;
        for (size_t p = 0; p < S->npr; p++)
            if (dv->id >= 0 ? (S->pr[p].is_device && S->pr[p].device == dv->id)
                            : (size_t)(-1 - dv->id) == p) {
                pname = S->pr[p].name;
                break;
            }
        js(w, "name", pname);
        jus(w, "busy_us", busy);
        jnum(w, "busy_pct", pct((double)busy, win));
        jnum(w, "compute_pct", pct((double)kind[1], win));
        jnum(w, "memcpy_pct", pct((double)kind[2], win));
        jnum(w, "memset_pct", pct((double)kind[3], win));
        jnum(w, "idle_pct", win > 0 ? 100.0 - pct((double)busy, win) : 0.0);
        jint(w, "kernels", (int64_t)dv->kind_count[1]);
        size_t *rd = act_cli_map_get(&R->dev_map, (const char *)&dv->id, sizeof dv->id);
        if (rd)
            write_bins_busy(w, &R->dv[*rd].busy, S->first);
        jopen(w, "top_kernels", '[');
        size_t shown = 0, nk = 0;
        for (size_t i = 0; i < R->nks; i++) {
            const rpt_kernel *k = kk[i];
            if (k->dev != dv->id)
                continue;
            nk++;
            if (shown >= TOP_KERNELS)
                continue;
            shown++;
            jopen(w, NULL, '{');
            js(w, "name", k->name);
            jint(w, "count", (int64_t)k->count);
            jus(w, "total_us", k->total);
            jnum(w, "mean_us", (double)k->total / 1000.0 / (double)k->count);
            jus(w, "p50_us", act_cli_report_kquantile(k, 0.5));
            jus(w, "p99_us", act_cli_report_kquantile(k, 0.99));
            jus(w, "min_us", k->min);
            jus(w, "max_us", k->max);
            jnum(w, "busy_pct", pct((double)k->total, (double)busy));
            jclose(w, '}');
        }
        jclose(w, ']');
        jint(w, "kernel_names", (int64_t)nk);
        write_latency(w, dv);
        jclose(w, '}');
    }
    jclose(w, ']');
    free(kk);
}

static void write_steps(jw *w, one *o)
{
    rpt *R = &o->R;
    int64_t base = o->S.first;
    if (!R->nst) {
        js(w, "steps", NULL);
        return;
    }
    int64_t(*work)[4] = o->work;
    uint64_t *nkern = o->nkern;
    int64_t *d = act_cli_xmalloc(R->nst * sizeof *d);
    int64_t sum = 0;
    for (size_t i = 0; i < R->nst; i++) {
        d[i] = R->st[i].dur;
        sum = sum_add(sum, d[i]);
    }
    act_cli_sort(d, R->nst, sizeof *d, cmp_i64);
    size_t n = R->nst;
#define RANK(q) d[(size_t)ceil((q) * (double)n) > 0 ? (size_t)ceil((q) * (double)n) - 1 : 0]
    jopen(w, "steps", '{');
    jint(w, "count", (int64_t)n);
    jnum(w, "mean_us", (double)sum / 1000.0 / (double)n);
    jus(w, "p50_us", RANK(0.5));
    jus(w, "p99_us", RANK(0.99));
    jus(w, "min_us", d[0]);
    jus(w, "max_us", d[n - 1]);
    jint(w, "spans_cut", R->spans_cut);
    size_t g = (n + STEPS_SHOWN - 1) / STEPS_SHOWN; /* steps per point */
    jint(w, "group", (int64_t)g);
    jopen(w, "list", '[');
    for (size_t i = 0; i < n; i += g) {
        size_t m = i + g <= n ? g : n - i;
        int64_t dur = 0, wk[4] = {0};
        uint64_t nk = 0;
        for (size_t j = i; j < i + m; j++) {
            dur = sum_add(dur, R->st[j].dur);
            for (int k = 1; k < 4; k++)
                wk[k] = sum_add(wk[k], work[j][k]);
            nk += nkern[j];
        }
        jopen(w, NULL, '{');
        jint(w, "n", R->st[i].num);
        jus(w, "start_us", R->st[i].ts - base);
        jnum(w, "dur_us", (double)dur / 1000.0 / (double)m);
        jnum(w, "kernel_us", (double)wk[1] / 1000.0 / (double)m);
        jnum(w, "memcpy_us", (double)wk[2] / 1000.0 / (double)m);
        jnum(w, "memset_us", (double)wk[3] / 1000.0 / (double)m);
        jnum(w, "kernels", (double)nk / (double)m);
        jclose(w, '}');
    }
    jclose(w, ']');
    /* Distribution: equal-width bins from the shortest to the longest. */
    int64_t span = d[n - 1] - d[0];
    int nb = span > 0 ? STEP_HIST_BINS : 1;
    uint64_t cnt[STEP_HIST_BINS] = {0};
    for (size_t i = 0; i < n; i++) {
        int b = span > 0 ? (int)((double)(d[i] - d[0]) * nb / (double)span) : 0;
        cnt[b < nb ? b : nb - 1]++;
    }
    jopen(w, "hist", '{');
    jus(w, "lo_us", d[0]);
    jnum(w, "w_us", span > 0 ? (double)span / 1000.0 / nb : 0);
    jopen(w, "counts", '[');
    for (int b = 0; b < nb; b++)
        jint(w, NULL, (int64_t)cnt[b]);
    jclose(w, ']');
    jclose(w, '}');
    jclose(w, '}');
#undef RANK
    free(d);
}

/* Device work inside each step's window, by kind (summed over devices and
 * streams: concurrent spans each count). Steps and spans sorted by start;
 * a span longer than the others makes the window of spans to look at wide,
 * so the overlap tests are counted and stop at STEP_WORK_BUDGET (the page
 * then says the per-step work is partial). */
#define STEP_WORK_BUDGET 200000000u
static void step_work(one *o)
{
    rpt *R = &o->R;
    if (!R->nst)
        return;
    act_cli_sort(R->st, R->nst, sizeof *R->st, cmp_step);
    act_cli_sort(R->sp, R->nsp, sizeof *R->sp, cmp_span);
    int64_t maxspan = 0;
    for (size_t i = 0; i < R->nsp; i++)
        if (R->sp[i].e - R->sp[i].s > maxspan)
            maxspan = R->sp[i].e - R->sp[i].s;
    o->work = act_cli_xcalloc(R->nst, sizeof *o->work);
    o->nkern = act_cli_xcalloc(R->nst, sizeof *o->nkern);
    uint64_t budget = STEP_WORK_BUDGET;
    size_t lo = 0;
    for (size_t i = 0; i < R->nst && !o->work_cut; i++) {
        int64_t s = R->st[i].ts, e = s + R->st[i].dur;
        while (lo < R->nsp && R->sp[lo].s < s - maxspan)
            lo++;
        for (size_t j = lo; j < R->nsp && R->sp[j].s < e; j++) {
            if (!budget--) {
                o->work_cut = 1;
                break;
            }
            int64_t os = R->sp[j].s > s ? R->sp[j].s : s;
            int64_t oe = R->sp[j].e < e ? R->sp[j].e : e;
            if (oe <= os)
                continue;
            o->work[i][R->sp[j].kind] = sum_add(o->work[i][R->sp[j].kind], oe - os);
            if (R->sp[j].kind == DK_KERNEL && R->sp[j].s >= s)
                o->nkern[i]++;
        }
    }
}

static int cmp_pn_total(const void *a, const void *b)
{
    const sum_nstat *x = *(const sum_nstat *const *)a, *y = *(const sum_nstat *const *)b;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Per host process, its top names by total time (self: minus nested
 * children on the same thread), as summary counts them. */
static void write_host(jw *w, one *o)
{
    summ *S = &o->S;
    sum_nstat **v = act_cli_xcalloc(S->npn ? S->npn : 1, sizeof *v);
    for (size_t k = 0; k < S->npn; k++)
        v[k] = &S->pn[k];
    act_cli_sort(v, S->npn, sizeof *v, cmp_pn_total);
    jopen(w, "host", '[');
    for (size_t k = 0; k < S->npn;) {
        uint32_t p = v[k]->proc;
        size_t n = 0;
        while (k + n < S->npn && v[k + n]->proc == p)
            n++;
        jopen(w, NULL, '{');
        char pid[96];
        js(w, "pid", act_cli_json_text(S->pr[p].pid, pid, sizeof pid));
        js(w, "name", S->pr[p].name);
        jint(w, "names", (int64_t)n);
        jopen(w, "top", '[');
        for (size_t j = 0; j < n && j < TOP_KERNELS; j++) {
            const sum_nstat *st = v[k + j];
            jopen(w, NULL, '{');
            js(w, "name", st->name);
            jint(w, "count", (int64_t)st->count);
            jus(w, "total_us", st->total);
            jus(w, "self_us", st->self > 0 ? st->self : 0);
            jnum(w, "mean_us", (double)st->total / 1000.0 / (double)st->count);
            jus(w, "max_us", st->max);
            jclose(w, '}');
        }
        jclose(w, ']');
        jclose(w, '}');
        k += n;
    }
    jclose(w, ']');
    free(v);
}

/* A counter series's unit from actraceStats.counters (track, series). */
static const char *unit_of(const summ *S, const char *track, const char *key)
{
    const act__jv *cs = act__jv_get(S->stats, "counters");
    size_t tl = strlen(track);
    const char *br = tl > 3 && track[tl - 1] == ']' ? strstr(track, " [") : NULL;
    size_t bl = br ? (size_t)(br - track) : tl;
    for (const act__jv *c = cs && cs->type == ACT__J_ARRAY ? cs->child : NULL; c; c = c->next) {
        const act__jv *tr = act__jv_get(c, "track"), *se = act__jv_get(c, "series");
        const act__jv *un = act__jv_get(c, "unit");
        if (!tr || !se || !un || tr->type != ACT__J_STRING || se->type != ACT__J_STRING ||
            un->type != ACT__J_STRING || strcmp(se->s, key) != 0)
            continue;
        if (strcmp(tr->s, track) == 0 || (tr->len == bl && strncmp(tr->s, track, bl) == 0))
            return un->s;
    }
    return NULL;
}

static void write_counters(jw *w, one *o)
{
    rpt *R = &o->R;
    jopen(w, "counters", '[');
    for (size_t i = 0; i < R->nse; i++) {
        rpt_series *s = &R->se[i];
        const rpt_bins *b = &s->bins;
        jopen(w, NULL, '{');
        js(w, "pid", s->pid);
        js(w, "track", s->track);
        js(w, "key", s->key);
        js(w, "unit", unit_of(&o->S, s->track, s->key));
        jint(w, "samples", (int64_t)s->n);
        jnum(w, "min", s->min);
        jnum(w, "max", s->max);
        jus(w, "t0_us", b->kmin * b->w - o->S.first);
        jus(w, "w_us", b->w);
        for (int m = 0; m < 3; m++) {
            jopen(w, m == 0 ? "mean" : m == 1 ? "lo" : "hi", '[');
            for (int64_t k = b->kmin; k <= b->kmax; k++) {
                const double *v = b->v + (size_t)(k - b->k0) * 4;
                if (v[1] == 0)
                    key(w, NULL), fputs("null", w->f);
                else
                    jnum(w, NULL, m == 0 ? v[0] / v[1] : v[m + 1]);
            }
            jclose(w, ']');
        }
        jclose(w, '}');
    }
    jclose(w, ']');
    jint(w, "series_left_out", (int64_t)R->series_left_out);
}

/* Drops, refused records and other warnings, in plain words. */
static void write_warnings(jw *w, one *o)
{
    summ *S = &o->S;
    const act__jv *st = S->stats;
    char buf[1024];
    jopen(w, "warnings", '[');
    uint64_t dropped = u64_of(act__jv_get(st, "dropped"));
    if (dropped) {
        int n = snprintf(buf, sizeof buf,
                         "%" PRIu64 " event%s dropped while recording (%" PRIu64
                         " recorded): the charts below miss them.",
                         dropped, dropped == 1 ? " was" : "s were",
                         u64_of(act__jv_get(st, "recorded")));
        const act__jv *by = act__jv_get(st, "dropped_by_reason");
        const char *sep = " By reason: ";
        for (const act__jv *v = by && by->type == ACT__J_OBJECT ? by->child : NULL; v; v = v->next)
            if (u64_of(v) && n > 0 && (size_t)n < sizeof buf) {
                n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%s %" PRIu64, sep, v->key,
                              u64_of(v));
                sep = ", ";
            }
        if (by && by->child && u64_of(act__jv_get(by, "buffer_full")))
            if (n > 0 && (size_t)n < sizeof buf)
                snprintf(buf + n, sizeof buf - (size_t)n,
                         ". A larger BUFFER_SIZE_MB (docs/config.md) keeps them.");
        js(w, NULL, buf);
    }
    uint64_t adrop = u64_of(act__jv_get(st, "args_dropped"));
    if (adrop) {
        snprintf(buf, sizeof buf, "%" PRIu64 " event argument%s dropped while recording.",
                 adrop, adrop == 1 ? " was" : "s were");
        js(w, NULL, buf);
    }
    const act__jv *pl = act__jv_get(st, "plugins");
    for (const act__jv *p = pl && pl->type == ACT__J_ARRAY ? pl->child : NULL; p; p = p->next) {
        const act__jv *nm = act__jv_get(p, "name");
        const char *name = nm && nm->type == ACT__J_STRING ? nm->s : "?";
        uint64_t rej = u64_of(act__jv_get(p, "rejected")), pd = u64_of(act__jv_get(p, "dropped"));
        if (rej) {
            int n = snprintf(buf, sizeof buf,
                             "Plugin %s: %" PRIu64 " of its record%s refused (not in the trace)",
                             name, rej, rej == 1 ? " was" : "s were");
            const act__jv *by = act__jv_get(p, "rejected_by_reason");
            const char *sep = ": ";
            for (const act__jv *v = by && by->type == ACT__J_OBJECT ? by->child : NULL; v;
                 v = v->next)
                if (u64_of(v) && n > 0 && (size_t)n < sizeof buf) {
                    n += snprintf(buf + n, sizeof buf - (size_t)n, "%s%s %" PRIu64, sep,
                                  v->key, u64_of(v));
                    sep = ", ";
                }
            if (n > 0 && (size_t)n < sizeof buf)
                snprintf(buf + n, sizeof buf - (size_t)n, ".");
            js(w, NULL, buf);
        }
        if (pd) {
            snprintf(buf, sizeof buf, "Plugin %s: %" PRIu64 " record%s dropped.", name, pd,
                     pd == 1 ? " was" : "s were");
            js(w, NULL, buf);
        }
    }
    if (o->R.spans_cut) {
        snprintf(buf, sizeof buf,
                 "More than %u device spans: per-step device work counts the first %u only.",
                 RPT_SPANS_MAX, RPT_SPANS_MAX);
        js(w, NULL, buf);
    }
    if (o->work_cut) {
        snprintf(buf, sizeof buf,
                 "Per-step device work is partial: long device spans made the steps "
                 "overlap too many others to count them all.");
        js(w, NULL, buf);
    }
    if (o->R.series_left_out) {
        snprintf(buf, sizeof buf,
                 "More than %d counter series: %" PRIu64 " more are not drawn "
                 "(`actrace summary` lists them all).",
                 RPT_SERIES_MAX, o->R.series_left_out);
        js(w, NULL, buf);
    }
    if (S->flow_unmatched_s || S->flow_unmatched_f) {
        snprintf(buf, sizeof buf,
                 "%" PRIu64 " flow start%s and %" PRIu64 " flow finish%s have no partner: "
                 "their launches are missing from the latency histograms.",
                 S->flow_unmatched_s, S->flow_unmatched_s == 1 ? "" : "s", S->flow_unmatched_f,
                 S->flow_unmatched_f == 1 ? "" : "es");
        js(w, NULL, buf);
    }
    jclose(w, ']');
}

static const char *producer_of(const summ *S)
{
    if (S->top_array)
        return "chrome";
    if (S->stats || S->actrace_version)
        return "actrace";
    if (S->kineto_keys)
        return "kineto";
    return "chrome";
}

static void write_trace(jw *w, one *o, size_t index)
{
    summ *S = &o->S;
    jopen(w, NULL, '{');
    js(w, "file", o->file);
    if (!o->ok) {
        js(w, "error", o->err);
        jclose(w, '}');
        return;
    }
    jint(w, "rank", o->R.rank >= 0 ? o->R.rank : (int64_t)index);
    jint(w, "rank_given", o->R.rank >= 0);
    js(w, "host_name", o->R.host);
    js(w, "trace_name", S->trace_name && S->trace_name->type == ACT__J_STRING
                            ? S->trace_name->s : NULL);
    js(w, "producer", producer_of(S));
    js(w, "producer_version", S->actrace_version);
    jint(w, "events", (int64_t)S->events);
    jus(w, "first_us", S->have_time ? S->first : 0);
    jus(w, "span_us", S->have_time ? S->last - S->first : 0);
    jint(w, "dropped", (int64_t)u64_of(act__jv_get(S->stats, "dropped")));
    jint(w, "recorded", (int64_t)u64_of(act__jv_get(S->stats, "recorded")));
    write_warnings(w, o);
    write_devices(w, o);
    write_host(w, o);
    write_steps(w, o);
    write_counters(w, o);
    jclose(w, '}');
}

/* ---- reading ------------------------------------------------------------------------ */

static void read_one(one *o)
{
    act_cli_trace tr;
    memset(&o->S, 0, sizeof o->S);
    act_cli_report_attach(&o->R, &o->S);
    if (act_cli_trace_open(&tr, o->file, o->err, sizeof o->err) != 0)
        return;
    if (act_cli_summary_collect(&o->S, &tr, o->err, sizeof o->err) != 0) {
        act_cli_trace_close(&tr);
        return;
    }
    act_cli_trace_close(&tr);
    act_cli_report_finish(&o->R);
    for (size_t i = 0; i < o->S.flcap; i++) {
        if (!o->S.fl[i].key)
            continue;
        o->S.flow_unmatched_s += o->S.fl[i].ns;
        o->S.flow_unmatched_f += o->S.fl[i].nf;
    }
    step_work(o);
    o->ok = 1;
}


int act_cli_report_trace(const char *file, size_t index, FILE *out, char *err, size_t errlen)
{
    one o;
    memset(&o, 0, sizeof o);
    o.file = (char *)file;
    read_one(&o);
    jw W = {out, 1};
    write_trace(&W, &o, index);
    act_cli_report_free(&o.R);
    act_cli_summary_free(&o.S);
    free(o.work);
    free(o.nkern);
    if (!o.ok)
        snprintf(err, errlen, "%s", o.err);
    return o.ok;
}
