/* SPDX-License-Identifier: MIT */
/*
 * actrace summary [--json] [--top N] [--wide] FILE: where the time went in
 * a trace, for a human (or, with --json, one JSON object with the same
 * content and stable keys, documented in docs/cli.md). With a DIRECTORY:
 * each trace in it and the job (per-rank table, slowest rank, top kernels
 * across ranks; act_cli_summary_dir in summary_collect.c). Reads actrace's
 * traces and Kineto's (pretty-printed or not, gzip-compressed or not, from
 * a file, a pipe or standard input) in one streaming pass
 * (summary_collect.c), in memory independent of the file size.
 *
 * In order: a warning when the recorder dropped events; the trace's
 * identity and time span; per device its busy share of the trace window
 * (split into compute, memcpy and memset), the top kernels, the launch
 * latency and the copies by direction; per host process the top names by
 * total and by self time; counters with min, time-weighted mean and max;
 * then the inventory (events by phase and category, names, processes and
 * threads, devices, flows, actrace's statistics).
 *
 * Exit 0, or 2 with "FILE: error: ..." on standard error when FILE cannot
 * be read or is not a trace.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "summary.h"

#define DEFAULT_TOP 15
#define NAME_WIDTH 80

static void usage(FILE *f)
{
    fprintf(f, "usage: actrace summary [--json] [--top N] [--wide] FILE\n"
               "       actrace summary [--json] [--top N] [--wide] [--each] DIRECTORY\n"
               "  FILE: a trace (JSON, .gz, or - for standard input): where the time went\n"
               "  DIRECTORY: every *.json and *.json.gz in it (a torch.profiler tensorboard\n"
               "    folder, record --per-process output) and the job: a per-rank table\n"
               "    (busy, steps), the slowest rank, the top kernels across ranks;\n"
               "    --each also prints each trace's own summary\n");
}

typedef struct opts {
    int json, wide, each;
    size_t top;
} opts;

/* ---- text helpers ------------------------------------------------------------------- */

static void put(const char *s)
{
    act_cli_put_text(stdout, s ? s : "");
}

/* A name cut to NAME_WIDTH bytes (at a UTF-8 boundary) unless --wide. */
static void put_name(const opts *o, const char *s)
{
    size_t n = strlen(s);
    if (o->wide || n <= NAME_WIDTH) {
        put(s);
        return;
    }
    size_t k = NAME_WIDTH - 3;
    while (k && ((unsigned char)s[k] & 0xC0) == 0x80)
        k--;
    char buf[NAME_WIDTH + 1];
    memcpy(buf, s, k);
    memcpy(buf + k, "...", 4);
    put(buf);
}

static void put_value(const act__jv *v)
{
    char buf[200];
    put(act_cli_json_text(v, buf, sizeof buf));
}

/* @p s right-aligned in @p w columns (UTF-8 aware: "µs" is 2 columns). */
static void col(const char *s, int w)
{
    int n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xC0) != 0x80;
    printf(" %*s%s", w > n ? w - n : 0, "", s);
}

static const char *s_(uint64_t n)
{
    return n == 1 ? "" : "s";
}

/* "12.3 µs": 3 significant digits, ns/µs/ms/s. */
static const char *htime(char *buf, size_t len, double ns)
{
    const char *u = "ns";
    double v = ns, a = fabs(ns);
    if (a >= 1e9) {
        v = ns / 1e9;
        u = "s";
    } else if (a >= 1e6) {
        v = ns / 1e6;
        u = "ms";
    } else if (a >= 1e3) {
        v = ns / 1e3;
        u = "\xC2\xB5s";
    }
    double av = fabs(v);
    int dec = av >= 100 || u[0] == 'n' ? 0 : av >= 10 ? 1 : 2;
    snprintf(buf, len, "%.*f %s", dec, v, u);
    return buf;
}

static const char *hbytes(char *buf, size_t len, double b)
{
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int k = 0;
    while (fabs(b) >= 1024 && k < 5) {
        b /= 1024;
        k++;
    }
    int dec = k == 0 || fabs(b) >= 100 ? 0 : fabs(b) >= 10 ? 1 : 2;
    snprintf(buf, len, "%.*f %s", dec, b, u[k]);
    return buf;
}

static const char *hrate(char *buf, size_t len, double bytes_per_s)
{
    double mb = bytes_per_s / 1e6;
    if (mb >= 1000)
        snprintf(buf, len, "%.*f GB/s", mb >= 100000 ? 0 : 1, mb / 1000);
    else
        snprintf(buf, len, "%.*f MB/s", mb >= 100 ? 0 : 1, mb);
    return buf;
}

/* A counter value in its unit. */
static const char *hvalue(char *buf, size_t len, double v, const char *unit)
{
    if (unit && (strcmp(unit, "bytes") == 0 || strcmp(unit, "B") == 0))
        return hbytes(buf, len, v);
    if (unit && strcmp(unit, "ns") == 0)
        return htime(buf, len, v);
    if (unit && strcmp(unit, "us") == 0)
        return htime(buf, len, v * 1e3);
    char num[40];
    if ((v == floor(v) || fabs(v) >= 1e5) && fabs(v) < 1e15)
        snprintf(num, sizeof num, "%.0f", v);
    else
        snprintf(num, sizeof num, "%.4g", v);
    if (unit && *unit)
        snprintf(buf, len, "%s %.40s", num, unit);
    else
        snprintf(buf, len, "%s", num);
    return buf;
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0.0;
}

/* ---- derived data ------------------------------------------------------------------------ */

typedef struct devsum {
    sum_device *d;
    int64_t busy, kind[4];
    sum_kstat **k; /* its kernels, by total time */
    size_t nk;
} devsum;

static int cmp_tally(const void *a, const void *b)
{
    const sum_tally *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    if (!x->key || !y->key)
        return !x->key - !y->key; /* none last */
    return strcmp(x->key, y->key);
}

static int cmp_nstat(const void *a, const void *b)
{
    const sum_nstat *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
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

static int cmp_pn_self(const void *a, const void *b)
{
    const sum_nstat *x = *(const sum_nstat *const *)a, *y = *(const sum_nstat *const *)b;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    if (x->self != y->self)
        return x->self > y->self ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_kstat(const void *a, const void *b)
{
    const sum_kstat *x = *(const sum_kstat *const *)a, *y = *(const sum_kstat *const *)b;
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_dev(const void *a, const void *b)
{
    const devsum *x = a, *y = b;
    /* Known devices by id, then the unknown ones (negative ids). */
    int ux = x->d->id < 0, uy = y->d->id < 0;
    if (ux != uy)
        return ux - uy;
    return x->d->id < y->d->id ? -1 : x->d->id > y->d->id;
}

typedef struct view {
    summ *S;
    const char *file, *producer;
    devsum *dev;
    size_t ndev;
    sum_kstat **kall;
    sum_nstat **pn_total, **pn_self;
    const char **unit; /* per series */
    int64_t window;
    uint64_t dropped, recorded;
} view;

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

static uint64_t u64_of(const act__jv *v)
{
    int64_t i;
    return act__jv_i64(v, &i) && i > 0 ? (uint64_t)i : 0;
}

static void build_view(view *V, summ *S, const char *file)
{
    memset(V, 0, sizeof *V);
    V->S = S;
    V->file = file;
    V->producer = producer_of(S);
    V->window = S->have_time ? S->last - S->first : 0;
    if (S->nph > 1)
        act_cli_sort(S->ph, S->nph, sizeof *S->ph, cmp_tally);
    if (S->ncat > 1)
        act_cli_sort(S->cat, S->ncat, sizeof *S->cat, cmp_tally);
    if (S->nnm > 1)
        act_cli_sort(S->nm, S->nnm, sizeof *S->nm, cmp_nstat);
    /* Devices with device spans or launch latencies. */
    V->dev = act_cli_xcalloc(S->ndv, sizeof *V->dev);
    for (size_t d = 0; d < S->ndv; d++) {
        sum_device *dv = &S->dv[d];
        uint64_t spans = dv->kind_count[1] + dv->kind_count[2] + dv->kind_count[3];
        if (!spans && !dv->lat_n)
            continue;
        devsum *ds = &V->dev[V->ndev++];
        ds->d = dv;
        ds->busy = act_cli_ivset_total(&dv->busy);
        for (int k = 1; k < 4; k++)
            ds->kind[k] = act_cli_ivset_total(&dv->kind[k]);
    }
    V->kall = act_cli_xcalloc(S->nks, sizeof *V->kall);
    for (size_t k = 0; k < S->nks; k++)
        V->kall[k] = &S->ks[k];
    if (S->nks > 1)
        act_cli_sort(V->kall, S->nks, sizeof *V->kall, cmp_kstat);
    for (size_t i = 0; i < V->ndev; i++) {
        size_t idx = (size_t)(V->dev[i].d - S->dv);
        for (size_t k = 0; k < S->nks; k++) {
            if (V->kall[k]->dev != idx)
                continue;
            if (!V->dev[i].k)
                V->dev[i].k = &V->kall[k];
            V->dev[i].nk++;
        }
    }
    if (V->ndev > 1)
        act_cli_sort(V->dev, V->ndev, sizeof *V->dev, cmp_dev);
    V->pn_total = act_cli_xcalloc(S->npn, sizeof *V->pn_total);
    V->pn_self = act_cli_xcalloc(S->npn, sizeof *V->pn_self);
    for (size_t k = 0; k < S->npn; k++) {
        V->pn_total[k] = V->pn_self[k] = &S->pn[k];
        if (S->pn[k].self < 0)
            S->pn[k].self = 0; /* overlapping siblings */
    }
    if (S->npn > 1) {
        act_cli_sort(V->pn_total, S->npn, sizeof *V->pn_total, cmp_pn_total);
        act_cli_sort(V->pn_self, S->npn, sizeof *V->pn_self, cmp_pn_self);
    }
    /* Units and drops from actraceStats. */
    V->unit = act_cli_xcalloc(S->nse ? S->nse : 1, sizeof *V->unit);
    if (S->stats) {
        V->dropped = u64_of(act__jv_get(S->stats, "dropped"));
        V->recorded = u64_of(act__jv_get(S->stats, "recorded"));
        const act__jv *cs = act__jv_get(S->stats, "counters");
        act_cli_map um = {0};
        for (size_t i = 0; i < S->nse; i++) {
            const sum_series *s = &S->se[i];
            const char *track = S->ct[s->ctr].name;
            size_t tl = strlen(track), kl = strlen(s->key);
            char *k = act_cli_xmalloc(tl + kl + 2);
            memcpy(k, track, tl);
            k[tl] = '\x1f';
            memcpy(k + tl + 1, s->key, kl + 1);
            act_cli_map_put(&um, k, tl + kl + 1, i, NULL);
            /* The writer tells same-named tracks apart with a " [...]"
             * suffix on the event name; the stats keep the bare track. */
            const char *br = tl > 3 && track[tl - 1] == ']' ? strstr(track, " [") : NULL;
            if (br) {
                size_t bl = (size_t)(br - track);
                k[bl] = '\x1f';
                memmove(k + bl + 1, s->key, kl + 1);
                act_cli_map_put(&um, k, bl + kl + 1, i, NULL);
            }
            free(k);
        }
        for (const act__jv *c = cs && cs->type == ACT__J_ARRAY ? cs->child : NULL; c;
             c = c->next) {
            const act__jv *tr = act__jv_get(c, "track"), *se = act__jv_get(c, "series");
            const act__jv *un = act__jv_get(c, "unit");
            if (!tr || !se || !un || tr->type != ACT__J_STRING ||
                se->type != ACT__J_STRING || un->type != ACT__J_STRING || !un->len)
                continue;
            char *k = act_cli_xmalloc(tr->len + se->len + 2);
            memcpy(k, tr->s, tr->len);
            k[tr->len] = '\x1f';
            memcpy(k + tr->len + 1, se->s, se->len + 1);
            size_t *slot = act_cli_map_get(&um, k, tr->len + se->len + 1);
            if (slot)
                V->unit[*slot] = un->s;
            free(k);
        }
        act_cli_map_free(&um);
    }
}

static void free_view(view *V)
{
    free(V->dev);
    free(V->kall);
    free(V->pn_total);
    free(V->pn_self);
    free(V->unit);
}

static double series_mean(const sum_series *s)
{
    int64_t span = s->last_ts - s->first_ts;
    if (s->unordered || span <= 0)
        return s->n ? s->sum / (double)s->n : 0;
    return s->integral / (double)span;
}

/* ---- text -------------------------------------------------------------------------------- */

static const char *phase_desc(const char *ph)
{
    static const struct {
        const char *ph, *desc;
    } t[] = {{"X", "complete"},   {"B", "begin"},       {"E", "end"},
             {"i", "instant"},    {"I", "instant"},     {"C", "counter"},
             {"s", "flow start"}, {"t", "flow step"},   {"f", "flow end"},
             {"M", "metadata"},   {"b", "async begin"}, {"n", "async instant"},
             {"e", "async end"},  {"P", "sample"},      {"O", "object snapshot"},
             {"N", "object new"}, {"D", "object delete"}, {"R", "mark"}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (strcmp(ph, t[i].ph) == 0)
            return t[i].desc;
    return "other";
}

static void render_drops(const view *V)
{
    const act__jv *st = V->S->stats;
    if (!V->dropped)
        return;
    printf("WARNING: %" PRIu64 " event%s dropped while recording (%" PRIu64
           " recorded); the numbers below miss them.\n",
           V->dropped, s_(V->dropped), V->recorded);
    const act__jv *by = act__jv_get(st, "dropped_by_reason");
    int any = 0;
    for (const act__jv *v = by && by->type == ACT__J_OBJECT ? by->child : NULL; v;
         v = v->next) {
        uint64_t n = u64_of(v);
        if (!n)
            continue;
        fputs(any ? ", " : "  dropped by reason: ", stdout);
        any = 1;
        put(v->key);
        printf(" %" PRIu64, n);
    }
    if (any)
        fputc('\n', stdout);
    fputc('\n', stdout);
}

static void render_devices(const view *V, const opts *o)
{
    char a[32], b[32], c[32], d[32], e[32];
    if (!V->ndev)
        return;
    printf("\ndevice activity (busy = union of device spans, as a share of "
           "the %s trace window):\n",
           htime(a, sizeof a, (double)V->window));
    for (size_t i = 0; i < V->ndev; i++) {
        const devsum *ds = &V->dev[i];
        sum_device *dv = ds->d;
        if (dv->id >= 0)
            printf("  device %" PRId64 ":", dv->id);
        else
            printf("  device ? (pid %s):",
                   act_cli_json_text(V->S->pr[(size_t)(-1 - dv->id)].pid, a, sizeof a));
        double w = (double)V->window;
        printf(" busy %.1f%% (compute %.1f%%, memcpy %.1f%%, memset %.1f%%), "
               "idle %.1f%%; %s busy\n",
               pct((double)ds->busy, w), pct((double)ds->kind[1], w),
               pct((double)ds->kind[2], w), pct((double)ds->kind[3], w),
               w > 0 ? 100.0 - pct((double)ds->busy, w) : 0.0,
               htime(b, sizeof b, (double)ds->busy));
        if (ds->nk) {
            printf("    top %zu of %zu kernels by device time:\n",
                   ds->nk < o->top ? ds->nk : o->top, ds->nk);
            printf("    %10s %10s %10s %10s %10s %6s  %s\n", "count", "total",
                   "mean", "min", "max", "%busy", "name");
            for (size_t k = 0; k < ds->nk && k < o->top; k++) {
                const sum_kstat *ks = ds->k[k];
                printf("    %10" PRIu64, ks->count);
                col(htime(a, sizeof a, (double)ks->total), 10);
                col(htime(b, sizeof b, (double)ks->total / (double)ks->count), 10);
                col(htime(c, sizeof c, (double)ks->min), 10);
                col(htime(d, sizeof d, (double)ks->max), 10);
                printf(" %5.1f%%  ", pct((double)ks->total, (double)ds->busy));
                put_name(o, ks->name);
                fputc('\n', stdout);
            }
        }
        if (dv->lat_n)
            printf("    launch latency (host launch -> device start, %" PRIu64
                   " flow%s): p50 %s, p95 %s, max %s\n",
                   dv->lat_n, s_(dv->lat_n),
                   htime(a, sizeof a, (double)act_cli_lat_quantile(dv, 0.5)),
                   htime(b, sizeof b, (double)act_cli_lat_quantile(dv, 0.95)),
                   htime(c, sizeof c, (double)dv->lat_max));
        for (int k = 0; k < CD_COUNT; k++) {
            if (!dv->copy_count[k])
                continue;
            printf("    copies %-5s %8" PRIu64 " in %s", act_cli_copy_dir_names[k],
                   dv->copy_count[k], htime(a, sizeof a, (double)dv->copy_time[k]));
            if (dv->copy_bytes[k])
                printf(", %s, %s", hbytes(b, sizeof b, (double)dv->copy_bytes[k]),
                       dv->copy_time[k] > 0
                           ? hrate(e, sizeof e, (double)dv->copy_bytes[k] * 1e9 /
                                                    (double)dv->copy_time[k])
                           : "-");
            fputc('\n', stdout);
        }
    }
}

static void render_host(const view *V, const opts *o)
{
    char a[32], b[32];
    const summ *S = V->S;
    if (!S->npn)
        return;
    printf("\nhost: top names per process by total and by self time "
           "(self = minus nested children on the same thread):\n");
    size_t k = 0;
    while (k < S->npn) {
        uint32_t p = V->pn_total[k]->proc;
        size_t n = 0;
        while (k + n < S->npn && V->pn_total[k + n]->proc == p)
            n++;
        const sum_proc *pr = &S->pr[p];
        fputs("  pid ", stdout);
        put_value(pr->pid);
        if (pr->name) {
            fputs(" \"", stdout);
            put(pr->name);
            fputc('"', stdout);
        }
        printf(": %zu name%s\n", n, s_(n));
        for (int by = 0; by < 2; by++) {
            sum_nstat **v = by ? V->pn_self : V->pn_total;
            printf("    by %s:\n    %10s %10s %10s  %s\n", by ? "self" : "total",
                   "count", "total", "self", "name");
            for (size_t j = 0; j < n && j < o->top; j++) {
                const sum_nstat *st = v[k + j];
                printf("    %10" PRIu64, st->count);
                col(htime(a, sizeof a, (double)st->total), 10);
                col(htime(b, sizeof b, (double)st->self), 10);
                fputs("  ", stdout);
                put_name(o, st->name);
                fputc('\n', stdout);
            }
        }
        k += n;
    }
}

static void render_counters(const view *V, const opts *o)
{
    char a[96], b[96], c[96], d[96];
    const summ *S = V->S;
    fputs("\ncounters (min, time-weighted mean, max, last):", stdout);
    fputs(S->nct ? "\n" : " none\n", stdout);
    for (size_t i = 0; i < S->nct; i++) {
        const sum_ctr *ct = &S->ct[i];
        fputs("  ", stdout);
        put_name(o, ct->name);
        fputs(" (pid ", stdout);
        put_value(ct->pid);
        printf("): %" PRIu64 " sample%s\n", ct->samples, s_(ct->samples));
        for (size_t k = 0; k < ct->nseries; k++) {
            size_t si = ct->series[k];
            const sum_series *s = &S->se[si];
            const char *u = V->unit[si];
            fputs("    ", stdout);
            put_name(o, s->key);
            printf(": min %s, mean %s, max %s, last %s\n",
                   hvalue(a, sizeof a, s->min, u),
                   hvalue(b, sizeof b, series_mean(s), u),
                   hvalue(c, sizeof c, s->max, u), hvalue(d, sizeof d, s->last, u));
        }
    }
}

static void render_stats(const act__jv *st)
{
    printf("\nactrace stats: %" PRIu64 " recorded, %" PRIu64 " dropped\n",
           u64_of(act__jv_get(st, "recorded")), u64_of(act__jv_get(st, "dropped")));
    if (act__jv_get(st, "args_recorded"))
        printf("  args: %" PRIu64 " recorded, %" PRIu64 " dropped\n",
               u64_of(act__jv_get(st, "args_recorded")), u64_of(act__jv_get(st, "args_dropped")));
    const char *titles[] = {"dropped_by_reason", "dropped_by_type"};
    for (int t = 0; t < 2; t++) {
        const act__jv *by = act__jv_get(st, titles[t]);
        int any = 0;
        for (const act__jv *v = by && by->type == ACT__J_OBJECT ? by->child : NULL;
             v; v = v->next) {
            if (!u64_of(v))
                continue;
            printf(any ? ", " : "  %s: ",
                   t == 0 ? "dropped by reason" : "dropped by type");
            any = 1;
            put(v->key);
            printf(" %" PRIu64, u64_of(v));
        }
        if (any)
            fputc('\n', stdout);
    }
    if (act__jv_get(st, "buffer_bytes"))
        printf("  buffer: %" PRIu64 " bytes held, limit %" PRIu64 "\n",
               u64_of(act__jv_get(st, "buffer_bytes")),
               u64_of(act__jv_get(st, "buffer_limit_bytes")));
    const act__jv *pl = act__jv_get(st, "plugins");
    for (const act__jv *v = pl && pl->type == ACT__J_ARRAY ? pl->child : NULL; v;
         v = v->next) {
        const act__jv *n = act__jv_get(v, "name"), *p = act__jv_get(v, "path");
        fputs("  plugin ", stdout);
        put(n && n->type == ACT__J_STRING ? n->s : "");
        fputs(" (", stdout);
        put(p && p->type == ACT__J_STRING ? p->s : "");
        printf("): %" PRIu64 " records rejected\n", u64_of(act__jv_get(v, "rejected")));
    }
}

static void put_us(int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    printf("%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", a / 1000, a % 1000);
}

/* The wall-clock time of trace time @p ts (ns after the base time):
 * 0 and *unix_ns set, or -1 without a usable base time. */
static int wall_of(const summ *S, int64_t ts, int64_t *unix_ns)
{
    int64_t base;
    if (!act__jv_i64(S->base_time, &base) || base < 0)
        return -1;
    return __builtin_add_overflow(base, ts, unix_ns) || *unix_ns < 0 ? -1 : 0;
}

/* "2026-12-04 13:54:15.803421" (UTC, to the microsecond), or with
 * @p date 0 only the time of day. */
static const char *utc_text(char *buf, size_t len, int64_t unix_ns, int date)
{
    time_t sec = (time_t)(unix_ns / 1000000000);
    struct tm tm;
    char t[48];
    if (!gmtime_r(&sec, &tm) ||
        !strftime(t, sizeof t, date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm))
        t[0] = '\0';
    snprintf(buf, len, "%s.%06d", t, (int)(unix_ns % 1000000000 / 1000));
    return buf;
}

static void render_steps(const summ *S0)
{
    summ *S = (summ *)S0; /* the quantiles sort the kept durations */
    char a[32], b[32], c[32], d[32], e[32];
    for (size_t i = 0; i < S->nsteps; i++) {
        sum_steps *st = &S->steps[i];
        fputs(i ? "             " : "steps:       ", stdout);
        printf("%" PRIu64 " ", st->count);
        put(st->name);
        printf(": total %s; min %s, p50 %s, p90 %s, max %s\n",
               htime(a, sizeof a, (double)st->total), htime(b, sizeof b, (double)st->min),
               htime(c, sizeof c, (double)act_cli_steps_quantile(st, 0.5)),
               htime(d, sizeof d, (double)act_cli_steps_quantile(st, 0.9)),
               htime(e, sizeof e, (double)st->max));
    }
}

static void render(const view *V, const opts *o)
{
    const summ *S = V->S;
    render_drops(V);
    fputs("file:        ", stdout);
    put(V->file);
    fputs("\ntrace name:  ", stdout);
    put(S->trace_name && S->trace_name->type == ACT__J_STRING ? S->trace_name->s
                                                              : "(none)");
    fputs("\nproducer:    ", stdout);
    put(V->producer);
    if (strcmp(V->producer, "actrace") == 0 && S->actrace_version) {
        fputc(' ', stdout);
        put(S->actrace_version);
    }
    /* ts counts from baseTimeNanoseconds (Kineto: the system clock
     * floored to a 3-month interval, so the base is not when the trace
     * was recorded; actrace: a whole second before its first event). */
    fputs("\nbase time:   ", stdout);
    int64_t ns, w0, w1;
    char t0[64], t1[64], dur[32];
    if (act__jv_i64(S->base_time, &ns)) {
        printf("%" PRId64 " ns", ns);
        if (ns >= 0)
            printf(" (ts 0 = %s UTC)", utc_text(t0, sizeof t0, ns, 1));
    } else if (S->base_time && S->base_time->type != ACT__J_NULL) {
        put_value(S->base_time);
        fputs(" ns", stdout);
    } else {
        fputs("(none)", stdout);
    }
    printf("\nevents:      %" PRIu64 "\n", S->events);
    fputs("time span:   ", stdout);
    if (S->have_time) {
        fputs(htime(dur, sizeof dur, (double)(S->last - S->first)), stdout);
        if (wall_of(S, S->first, &w0) == 0 && wall_of(S, S->last, &w1) == 0) {
            printf(", %s", utc_text(t0, sizeof t0, w0, 1));
            printf(" to %s UTC", utc_text(t1, sizeof t1, w1, w1 / 86400000000000 !=
                                                         w0 / 86400000000000));
        } else {
            fputs(", ts ", stdout);
            put_us(S->first);
            fputs(" us to ", stdout);
            put_us(S->last);
            fputs(" us (no base time: no time of day)", stdout);
        }
        fputc('\n', stdout);
    } else {
        fputs("(no timed events)\n", stdout);
    }
    render_steps(S);

    render_devices(V, o);
    render_host(V, o);
    render_counters(V, o);

    fputs("\nevents by phase:\n", stdout);
    for (size_t i = 0; i < S->nph; i++) {
        printf("  %10" PRIu64 "  ", S->ph[i].n);
        if (S->ph[i].key && *S->ph[i].key) {
            put(S->ph[i].key);
            printf(" (%s)\n", phase_desc(S->ph[i].key));
        } else {
            fputs("(no ph)\n", stdout);
        }
    }
    fputs("\nevents by category (metadata aside):\n", stdout);
    if (!S->ncat)
        fputs("  none\n", stdout);
    for (size_t i = 0; i < S->ncat; i++) {
        printf("  %10" PRIu64 "  ", S->cat[i].n);
        put(S->cat[i].key ? S->cat[i].key : "(no cat)");
        fputc('\n', stdout);
    }

    size_t ntop = S->nnm < o->top ? S->nnm : o->top;
    printf("\ntop %zu of %zu names by total duration (X events; times in us):\n",
           ntop, S->nnm);
    if (ntop)
        printf("  %10s %14s %12s %12s  %s\n", "count", "total", "mean", "max",
               "name");
    for (size_t i = 0; i < ntop; i++) {
        const sum_nstat *n = &S->nm[i];
        printf("  %10" PRIu64 " %14.3f %12.3f %12.3f  ", n->count,
               (double)n->total / 1000.0,
               (double)n->total / 1000.0 / (double)n->count, (double)n->max / 1000.0);
        put_name(o, n->name);
        fputc('\n', stdout);
    }

    fputs("\nprocesses and threads:\n", stdout);
    if (!S->npr)
        fputs("  none\n", stdout);
    for (size_t p = 0; p < S->npr; p++) {
        const sum_proc *pr = &S->pr[p];
        fputs("  pid ", stdout);
        put_value(pr->pid);
        if (pr->name) {
            fputs(" \"", stdout);
            put(pr->name);
            fputc('"', stdout);
        }
        printf(": %" PRIu64 " event%s", pr->events, s_(pr->events));
        if (pr->is_device)
            printf(" (device %" PRId64 ")", pr->device);
        fputc('\n', stdout);
        for (size_t t = pr->first_thread; t != SIZE_MAX; t = S->th[t].next_in_proc) {
            fputs("    tid ", stdout);
            put_value(S->th[t].tid);
            if (S->th[t].name) {
                fputs(" \"", stdout);
                put(S->th[t].name);
                fputc('"', stdout);
            }
            printf(": %" PRIu64 " event%s\n", S->th[t].events, s_(S->th[t].events));
        }
    }

    const act__jv *props = S->device_props && S->device_props->type == ACT__J_ARRAY
                               ? S->device_props : NULL;
    int anydev = 0;
    for (size_t p = 0; p < S->npr; p++)
        anydev |= S->pr[p].is_device;
    fputs("\ndevices:", stdout);
    if ((!props || !props->len) && !anydev)
        fputs(" none", stdout);
    fputc('\n', stdout);
    for (const act__jv *v = props ? props->child : NULL; v; v = v->next) {
        fputs("  device ", stdout);
        put_value(act__jv_get(v, "id"));
        fputs(":", stdout);
        for (const act__jv *pv = v->type == ACT__J_OBJECT ? v->child : NULL; pv;
             pv = pv->next) {
            if (strcmp(pv->key, "id") == 0)
                continue;
            fputc(' ', stdout);
            put(pv->key);
            fputc('=', stdout);
            put_value(pv);
        }
        fputc('\n', stdout);
    }
    for (size_t p = 0; p < S->npr; p++) {
        const sum_proc *pr = &S->pr[p];
        if (!pr->is_device)
            continue;
        printf("  device %" PRId64 " events: pid ", pr->device);
        put_value(pr->pid);
        if (pr->name) {
            fputs(" \"", stdout);
            put(pr->name);
            fputc('"', stdout);
        }
        printf(", %zu stream%s, %" PRIu64 " event%s\n", pr->nthreads,
               s_(pr->nthreads), pr->events, s_(pr->events));
    }

    fputs("\nflows: ", stdout);
    if (!S->flow_starts && !S->flow_steps && !S->flow_finishes)
        fputs("none\n", stdout);
    else
        printf("%" PRIu64 " start%s, %" PRIu64 " step%s, %" PRIu64
               " finish%s; %" PRIu64 " matched pair%s, %" PRIu64
               " unmatched start%s, %" PRIu64 " unmatched finish%s\n",
               S->flow_starts, s_(S->flow_starts), S->flow_steps,
               s_(S->flow_steps), S->flow_finishes,
               S->flow_finishes == 1 ? "" : "es", S->flow_matched,
               s_(S->flow_matched), S->flow_unmatched_s, s_(S->flow_unmatched_s),
               S->flow_unmatched_f, S->flow_unmatched_f == 1 ? "" : "es");
    if (S->flow_host)
        printf("  %" PRIu64 " matched pair%s end%s in a process without device work "
               "(not launches, e.g. torch's fwdbwd)\n",
               S->flow_host, s_(S->flow_host), S->flow_host == 1 ? "s" : "");
    if (S->stats && S->stats->type == ACT__J_OBJECT)
        render_stats(S->stats);
}

/* ---- JSON -------------------------------------------------------------------------------- */

typedef struct jw {
    FILE *f;
    int depth;
    int first[64];
} jw;

static void jw_sep(jw *w, const char *key)
{
    if (w->depth) {
        fputs(w->first[w->depth] ? "\n" : ",\n", w->f);
        w->first[w->depth] = 0;
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    if (key) {
        act_cli_json_str(w->f, key, strlen(key));
        fputs(": ", w->f);
    }
}

static void jw_open(jw *w, const char *key, char c)
{
    jw_sep(w, key);
    fputc(c, w->f);
    w->depth++;
    w->first[w->depth] = 1;
}

static void jw_close(jw *w, char c)
{
    int empty = w->first[w->depth];
    w->depth--;
    if (!empty) {
        fputc('\n', w->f);
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    fputc(c, w->f);
}

static void jw_num(jw *w, const char *key, double v)
{
    jw_sep(w, key);
    if (!isfinite(v)) {
        fputs("null", w->f);
        return;
    }
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    /* A JSON reader should see a real where we mean one. */
    if (!strpbrk(buf, ".eE"))
        strcat(buf, ".0");
    fputs(buf, w->f);
}

static void jw_int(jw *w, const char *key, int64_t v)
{
    jw_sep(w, key);
    fprintf(w->f, "%" PRId64, v);
}

static void jw_us(jw *w, const char *key, int64_t ns)
{
    jw_num(w, key, (double)ns / 1000.0);
}

static void jw_str(jw *w, const char *key, const char *s)
{
    jw_sep(w, key);
    if (s)
        act_cli_json_str(w->f, s, strlen(s));
    else
        fputs("null", w->f);
}

static void jw_val(jw *w, const char *key, const act__jv *v)
{
    jw_sep(w, key);
    if (v)
        act_cli_json_write(w->f, v);
    else
        fputs("null", w->f);
}

static void json_out(const view *V, const opts *o, jw *w)
{
    const summ *S = V->S;
    jw_open(w, NULL, '{');
    jw_str(w, "file", V->file);
    jw_val(w, "trace_name", S->trace_name && S->trace_name->type == ACT__J_STRING
                                ? S->trace_name : NULL);
    jw_str(w, "producer", V->producer);
    if (strcmp(V->producer, "actrace") == 0 && S->actrace_version)
        jw_str(w, "producer_version", S->actrace_version);
    jw_val(w, "base_time_ns", S->base_time && S->base_time->type == ACT__J_NUMBER
                                  ? S->base_time : NULL);
    jw_int(w, "events", (int64_t)S->events);
    if (S->have_time) {
        jw_open(w, "time", '{');
        jw_us(w, "first_us", S->first);
        jw_us(w, "last_us", S->last);
        jw_us(w, "span_us", S->last - S->first);
        int64_t w0;
        char t0[64];
        if (wall_of(S, S->first, &w0) == 0) {
            jw_int(w, "start_unix_ns", w0);
            jw_str(w, "start_utc", utc_text(t0, sizeof t0, w0, 1));
        } else {
            jw_str(w, "start_unix_ns", NULL);
            jw_str(w, "start_utc", NULL);
        }
        jw_close(w, '}');
    } else {
        jw_str(w, "time", NULL);
    }
    jw_open(w, "steps", '[');
    for (size_t i = 0; i < S->nsteps; i++) {
        sum_steps *st = &((summ *)S)->steps[i];
        jw_open(w, NULL, '{');
        jw_str(w, "name", st->name);
        jw_int(w, "count", (int64_t)st->count);
        jw_us(w, "total_us", st->total);
        jw_us(w, "min_us", st->min);
        jw_us(w, "p50_us", act_cli_steps_quantile(st, 0.5));
        jw_us(w, "p90_us", act_cli_steps_quantile(st, 0.9));
        jw_us(w, "max_us", st->max);
        jw_close(w, '}');
    }
    jw_close(w, ']');
    jw_open(w, "dropped", '{');
    jw_int(w, "total", (int64_t)V->dropped);
    jw_open(w, "by_reason", '{');
    const act__jv *by = act__jv_get(S->stats, "dropped_by_reason");
    for (const act__jv *v = by && by->type == ACT__J_OBJECT ? by->child : NULL; v;
         v = v->next)
        if (u64_of(v))
            jw_int(w, v->key, (int64_t)u64_of(v));
    jw_close(w, '}');
    jw_close(w, '}');

    jw_open(w, "device_activity", '[');
    for (size_t i = 0; i < V->ndev; i++) {
        const devsum *ds = &V->dev[i];
        sum_device *dv = ds->d;
        double win = (double)V->window;
        jw_open(w, NULL, '{');
        if (dv->id >= 0)
            jw_int(w, "device", dv->id);
        else
            jw_str(w, "device", NULL);
        jw_us(w, "busy_us", ds->busy);
        jw_num(w, "busy_pct", pct((double)ds->busy, win));
        jw_num(w, "compute_pct", pct((double)ds->kind[1], win));
        jw_num(w, "memcpy_pct", pct((double)ds->kind[2], win));
        jw_num(w, "memset_pct", pct((double)ds->kind[3], win));
        jw_num(w, "idle_pct", win > 0 ? 100.0 - pct((double)ds->busy, win) : 0.0);
        jw_int(w, "kernels", (int64_t)dv->kind_count[1]);
        jw_open(w, "top_kernels", '[');
        for (size_t k = 0; k < ds->nk && k < o->top; k++) {
            const sum_kstat *ks = ds->k[k];
            jw_open(w, NULL, '{');
            jw_str(w, "name", ks->name);
            jw_int(w, "count", (int64_t)ks->count);
            jw_us(w, "total_us", ks->total);
            jw_num(w, "mean_us", (double)ks->total / 1000.0 / (double)ks->count);
            jw_us(w, "min_us", ks->min);
            jw_us(w, "max_us", ks->max);
            jw_num(w, "busy_pct", pct((double)ks->total, (double)ds->busy));
            jw_close(w, '}');
        }
        jw_close(w, ']');
        if (dv->lat_n) {
            jw_open(w, "launch_latency", '{');
            jw_int(w, "count", (int64_t)dv->lat_n);
            jw_us(w, "p50_us", act_cli_lat_quantile(dv, 0.5));
            jw_us(w, "p95_us", act_cli_lat_quantile(dv, 0.95));
            jw_us(w, "max_us", dv->lat_max);
            jw_close(w, '}');
        } else {
            jw_str(w, "launch_latency", NULL);
        }
        jw_open(w, "copies", '[');
        for (int k = 0; k < CD_COUNT; k++) {
            if (!dv->copy_count[k])
                continue;
            jw_open(w, NULL, '{');
            jw_str(w, "direction", act_cli_copy_dir_names[k]);
            jw_int(w, "count", (int64_t)dv->copy_count[k]);
            jw_int(w, "bytes", (int64_t)dv->copy_bytes[k]);
            jw_us(w, "total_us", dv->copy_time[k]);
            jw_num(w, "mb_per_s", dv->copy_time[k] > 0
                                      ? (double)dv->copy_bytes[k] * 1e3 /
                                            (double)dv->copy_time[k]
                                      : 0.0);
            jw_close(w, '}');
        }
        jw_close(w, ']');
        jw_close(w, '}');
    }
    jw_close(w, ']');

    jw_open(w, "host", '[');
    for (size_t k = 0; k < S->npn;) {
        uint32_t p = V->pn_total[k]->proc;
        size_t n = 0;
        while (k + n < S->npn && V->pn_total[k + n]->proc == p)
            n++;
        jw_open(w, NULL, '{');
        jw_val(w, "pid", S->pr[p].pid);
        jw_str(w, "name", S->pr[p].name);
        for (int b = 0; b < 2; b++) {
            sum_nstat **v = b ? V->pn_self : V->pn_total;
            jw_open(w, b ? "top_self" : "top_total", '[');
            for (size_t j = 0; j < n && j < o->top; j++) {
                const sum_nstat *st = v[k + j];
                jw_open(w, NULL, '{');
                jw_str(w, "name", st->name);
                jw_int(w, "count", (int64_t)st->count);
                jw_us(w, "total_us", st->total);
                jw_us(w, "self_us", st->self);
                jw_us(w, "max_us", st->max);
                jw_close(w, '}');
            }
            jw_close(w, ']');
        }
        jw_close(w, '}');
        k += n;
    }
    jw_close(w, ']');

    jw_open(w, "phases", '{');
    for (size_t i = 0; i < S->nph; i++)
        jw_int(w, S->ph[i].key ? S->ph[i].key : "", (int64_t)S->ph[i].n);
    jw_close(w, '}');
    jw_open(w, "categories", '[');
    for (size_t i = 0; i < S->ncat; i++) {
        jw_open(w, NULL, '{');
        jw_str(w, "cat", S->cat[i].key);
        jw_int(w, "count", (int64_t)S->cat[i].n);
        jw_close(w, '}');
    }
    jw_close(w, ']');
    jw_int(w, "x_names", (int64_t)S->nnm);
    jw_open(w, "top_names", '[');
    for (size_t i = 0; i < S->nnm && i < o->top; i++) {
        const sum_nstat *n = &S->nm[i];
        jw_open(w, NULL, '{');
        jw_str(w, "name", n->name);
        jw_int(w, "count", (int64_t)n->count);
        jw_us(w, "total_us", n->total);
        jw_num(w, "mean_us", (double)n->total / 1000.0 / (double)n->count);
        jw_us(w, "max_us", n->max);
        jw_close(w, '}');
    }
    jw_close(w, ']');

    jw_open(w, "processes", '[');
    for (size_t p = 0; p < S->npr; p++) {
        const sum_proc *pr = &S->pr[p];
        jw_open(w, NULL, '{');
        jw_val(w, "pid", pr->pid);
        jw_str(w, "name", pr->name);
        jw_int(w, "events", (int64_t)pr->events);
        if (pr->is_device)
            jw_int(w, "device", pr->device);
        jw_open(w, "threads", '[');
        for (size_t t = pr->first_thread; t != SIZE_MAX; t = S->th[t].next_in_proc) {
            jw_open(w, NULL, '{');
            jw_val(w, "tid", S->th[t].tid);
            jw_str(w, "name", S->th[t].name);
            jw_int(w, "events", (int64_t)S->th[t].events);
            jw_close(w, '}');
        }
        jw_close(w, ']');
        jw_close(w, '}');
    }
    jw_close(w, ']');
    jw_open(w, "devices", '{');
    if (S->device_props && S->device_props->type == ACT__J_ARRAY)
        jw_val(w, "properties", S->device_props);
    else {
        jw_open(w, "properties", '[');
        jw_close(w, ']');
    }
    jw_open(w, "processes", '[');
    for (size_t p = 0; p < S->npr; p++) {
        const sum_proc *pr = &S->pr[p];
        if (!pr->is_device)
            continue;
        jw_open(w, NULL, '{');
        jw_val(w, "pid", pr->pid);
        jw_int(w, "device", pr->device);
        jw_str(w, "name", pr->name);
        jw_int(w, "streams", (int64_t)pr->nthreads);
        jw_int(w, "events", (int64_t)pr->events);
        jw_close(w, '}');
    }
    jw_close(w, ']');
    jw_close(w, '}');

    jw_open(w, "counters", '[');
    for (size_t i = 0; i < S->nct; i++) {
        const sum_ctr *ct = &S->ct[i];
        jw_open(w, NULL, '{');
        jw_val(w, "pid", ct->pid);
        jw_str(w, "name", ct->name);
        jw_int(w, "samples", (int64_t)ct->samples);
        jw_open(w, "series", '[');
        for (size_t k = 0; k < ct->nseries; k++) {
            const sum_series *s = &S->se[ct->series[k]];
            jw_open(w, NULL, '{');
            jw_str(w, "key", s->key);
            jw_str(w, "unit", V->unit[ct->series[k]]);
            jw_int(w, "samples", (int64_t)s->n);
            jw_num(w, "min", s->min);
            jw_num(w, "mean", series_mean(s));
            jw_num(w, "max", s->max);
            jw_num(w, "last", s->last);
            jw_close(w, '}');
        }
        jw_close(w, ']');
        jw_close(w, '}');
    }
    jw_close(w, ']');

    jw_open(w, "flows", '{');
    jw_int(w, "starts", (int64_t)S->flow_starts);
    jw_int(w, "steps", (int64_t)S->flow_steps);
    jw_int(w, "finishes", (int64_t)S->flow_finishes);
    jw_int(w, "matched", (int64_t)S->flow_matched);
    jw_int(w, "unmatched_starts", (int64_t)S->flow_unmatched_s);
    jw_int(w, "unmatched_finishes", (int64_t)S->flow_unmatched_f);
    jw_int(w, "host_only", (int64_t)S->flow_host);
    jw_close(w, '}');
    if (S->stats && S->stats->type == ACT__J_OBJECT)
        jw_val(w, "actrace_stats", S->stats);
    jw_close(w, '}');
}

/* ---- a directory (a job) --------------------------------------------------------------------- */

typedef struct dirctx {
    const opts *o;
    jw *w; /* --json: the "files" array is open */
    size_t n;
} dirctx;

/* Each trace of the directory, as it is read: with --json its object in
 * "files"; with --each its full text summary. */
static void dir_each(void *ctx, const char *path, summ *S, const char *err)
{
    dirctx *c = ctx;
    c->n++;
    if (!S) {
        fprintf(stderr, "%s: error: %s\n", path, err);
        if (c->w) {
            jw_open(c->w, NULL, '{');
            jw_str(c->w, "file", path);
            jw_str(c->w, "error", err);
            jw_close(c->w, '}');
        }
        return;
    }
    if (!c->w && !c->o->each)
        return;
    view V;
    build_view(&V, S, path);
    if (c->w) {
        json_out(&V, c->o, c->w);
    } else {
        if (c->n > 1)
            fputs("\n", stdout);
        render(&V, c->o);
        fputs("\n", stdout);
    }
    free_view(&V);
}

/* "rank 3 (" or "(": the rank when the trace names one. */
static void put_rank(const sum_rank *r)
{
    if (r->rank >= 0)
        printf("rank %" PRId64 " (", r->rank);
    else
        fputs("(", stdout);
}

static void render_job(sum_job *J, const opts *o)
{
    char a[32], b[32], c[32], d[32], e[64], f[64];
    int64_t first = INT64_MAX, last = INT64_MIN;
    size_t ok = J->nr - J->nerr;
    for (size_t i = 0; i < J->nr; i++) {
        const sum_rank *r = &J->r[i];
        if (r->error || !r->have_time || r->start_unix < 0)
            continue;
        if (r->start_unix < first)
            first = r->start_unix;
        int64_t end = r->start_unix + (r->last - r->first);
        if (end > last)
            last = end;
    }
    fputs("directory:   ", stdout);
    put(J->dir);
    printf("\ntraces:      %zu (%zu read", J->nr, ok);
    if (J->nerr)
        printf(", %zu with errors", J->nerr);
    fputs(")\n", stdout);
    if (first <= last)
        printf("time span:   %s, %s to %s UTC (wall clock, all traces)\n",
               htime(a, sizeof a, (double)(last - first)), utc_text(e, sizeof e, first, 1),
               utc_text(f, sizeof f, last, last / 86400000000000 != first / 86400000000000));
    if (J->steps.count) {
        sum_steps *st = &J->steps;
        printf("steps:       %" PRIu64 " ", st->count);
        put(st->name);
        printf(" across ranks: min %s, p50 %s, p90 %s, max %s\n",
               htime(a, sizeof a, (double)st->min),
               htime(b, sizeof b, (double)act_cli_steps_quantile(st, 0.5)),
               htime(c, sizeof c, (double)act_cli_steps_quantile(st, 0.9)),
               htime(d, sizeof d, (double)st->max));
    }
    printf("\nper rank (busy = device busy share of the trace window, "
           "step = its steps' p50 / max):\n");
    printf("  %-9s %10s %10s %7s %7s %10s %10s  %s\n", "rank", "events", "span",
           "busy", "steps", "step p50", "step max", "file");
    for (size_t i = 0; i < J->nr; i++) {
        const sum_rank *r = &J->r[i];
        char rk[32];
        if (r->rank >= 0)
            snprintf(rk, sizeof rk, "%" PRId64, r->rank);
        else
            snprintf(rk, sizeof rk, "-");
        printf("  %-9s", rk);
        if (r->error) {
            fputs("  error: ", stdout);
            put(r->error);
            fputs("  ", stdout);
            put(r->file);
            fputc('\n', stdout);
            continue;
        }
        printf(" %10" PRIu64, r->events);
        col(r->have_time ? htime(a, sizeof a, (double)(r->last - r->first)) : "-", 10);
        if (r->busy_pct >= 0)
            snprintf(b, sizeof b, "%.1f%%", r->busy_pct);
        else
            snprintf(b, sizeof b, "-");
        col(b, 7);
        printf(" %7" PRIu64, r->steps);
        col(r->steps ? htime(c, sizeof c, (double)r->step_p50) : "-", 10);
        col(r->steps ? htime(d, sizeof d, (double)r->step_max) : "-", 10);
        fputs("  ", stdout);
        put(r->file);
        fputs(i == J->slowest ? "  <- slowest\n" : "\n", stdout);
    }
    if (J->slowest != SIZE_MAX && ok > 1) {
        const sum_rank *r = &J->r[J->slowest];
        fputs("\nslowest:     ", stdout);
        put_rank(r);
        put(r->file);
        if (J->slowest_by_steps)
            printf("): step p50 %s", htime(a, sizeof a, (double)r->step_p50));
        else
            printf("): span %s (no steps in every trace)",
                   htime(a, sizeof a, (double)(r->last - r->first)));
        fputc('\n', stdout);
    }
    if (J->nk) {
        size_t n = J->nk < o->top ? J->nk : o->top;
        printf("\ntop %zu of %zu kernels across ranks by device time:\n", n, J->nk);
        printf("  %10s %10s %10s %10s %6s  %s\n", "count", "total", "mean", "max",
               "ranks", "name");
        for (size_t k = 0; k < n; k++) {
            const sum_jkernel *jk = &J->k[k];
            printf("  %10" PRIu64, jk->count);
            col(htime(a, sizeof a, (double)jk->total), 10);
            col(htime(b, sizeof b, (double)jk->total / (double)jk->count), 10);
            col(htime(c, sizeof c, (double)jk->max), 10);
            printf(" %6zu  ", jk->ranks);
            put_name(o, jk->name);
            fputc('\n', stdout);
        }
    }
}

static void json_job(sum_job *J, const opts *o, jw *w)
{
    jw_open(w, "job", '{');
    jw_int(w, "traces", (int64_t)J->nr);
    jw_int(w, "errors", (int64_t)J->nerr);
    if (J->steps.count) {
        sum_steps *st = &J->steps;
        jw_open(w, "steps", '{');
        jw_str(w, "name", st->name);
        jw_int(w, "count", (int64_t)st->count);
        jw_us(w, "total_us", st->total);
        jw_us(w, "min_us", st->min);
        jw_us(w, "p50_us", act_cli_steps_quantile(st, 0.5));
        jw_us(w, "p90_us", act_cli_steps_quantile(st, 0.9));
        jw_us(w, "max_us", st->max);
        jw_close(w, '}');
    } else {
        jw_str(w, "steps", NULL);
    }
    jw_open(w, "ranks", '[');
    for (size_t i = 0; i < J->nr; i++) {
        const sum_rank *r = &J->r[i];
        jw_open(w, NULL, '{');
        jw_str(w, "file", r->file);
        if (r->rank >= 0)
            jw_int(w, "rank", r->rank);
        else
            jw_str(w, "rank", NULL);
        jw_str(w, "error", r->error);
        if (!r->error) {
            jw_int(w, "events", (int64_t)r->events);
            if (r->have_time)
                jw_us(w, "span_us", r->last - r->first);
            else
                jw_str(w, "span_us", NULL);
            if (r->start_unix >= 0)
                jw_int(w, "start_unix_ns", r->start_unix);
            else
                jw_str(w, "start_unix_ns", NULL);
            jw_int(w, "devices", (int64_t)r->ndev);
            jw_us(w, "busy_us", r->busy);
            if (r->busy_pct >= 0)
                jw_num(w, "busy_pct", r->busy_pct);
            else
                jw_str(w, "busy_pct", NULL);
            if (r->steps) {
                jw_open(w, "steps", '{');
                jw_str(w, "name", r->step_name);
                jw_int(w, "count", (int64_t)r->steps);
                jw_us(w, "total_us", r->step_total);
                jw_us(w, "min_us", r->step_min);
                jw_us(w, "p50_us", r->step_p50);
                jw_us(w, "p90_us", r->step_p90);
                jw_us(w, "max_us", r->step_max);
                jw_close(w, '}');
            } else {
                jw_str(w, "steps", NULL);
            }
        }
        jw_close(w, '}');
    }
    jw_close(w, ']');
    if (J->slowest != SIZE_MAX) {
        const sum_rank *r = &J->r[J->slowest];
        jw_open(w, "slowest", '{');
        jw_str(w, "file", r->file);
        if (r->rank >= 0)
            jw_int(w, "rank", r->rank);
        else
            jw_str(w, "rank", NULL);
        jw_str(w, "by", J->slowest_by_steps ? "step_p50" : "span");
        jw_us(w, "value_us", J->slowest_by_steps ? r->step_p50 : r->last - r->first);
        jw_close(w, '}');
    } else {
        jw_str(w, "slowest", NULL);
    }
    jw_open(w, "top_kernels", '[');
    for (size_t k = 0; k < J->nk && k < o->top; k++) {
        const sum_jkernel *jk = &J->k[k];
        jw_open(w, NULL, '{');
        jw_str(w, "name", jk->name);
        jw_int(w, "count", (int64_t)jk->count);
        jw_us(w, "total_us", jk->total);
        jw_num(w, "mean_us", (double)jk->total / 1000.0 / (double)jk->count);
        jw_us(w, "max_us", jk->max);
        jw_int(w, "ranks", (int64_t)jk->ranks);
        jw_close(w, '}');
    }
    jw_close(w, ']');
    jw_close(w, '}');
}

static int summary_dir(const char *dir, const opts *o)
{
    sum_job J;
    memset(&J, 0, sizeof J);
    jw W = {stdout, 0, {0}};
    dirctx c = {o, o->json ? &W : NULL, 0};
    char msg[600];
    if (o->json) {
        jw_open(&W, NULL, '{');
        jw_str(&W, "directory", dir);
        jw_open(&W, "files", '[');
    }
    int rc = act_cli_summary_dir(&J, dir, dir_each, &c, msg, sizeof msg);
    if (rc != 0) {
        if (o->json)
            fputc('\n', stdout); /* what was opened is abandoned */
        fprintf(stderr, "%s: error: %s\n", dir, msg);
        act_cli_summary_job_free(&J);
        return 2;
    }
    if (o->json) {
        jw_close(&W, ']');
        json_job(&J, o, &W);
        jw_close(&W, '}');
        fputc('\n', stdout);
    } else {
        render_job(&J, o);
    }
    int bad = J.nerr != 0;
    act_cli_summary_job_free(&J);
    if (fflush(stdout) != 0)
        return 1;
    return bad ? 2 : 0;
}

/* ---- command ---------------------------------------------------------------------------------- */

int act_cmd_summary(int argc, char **argv)
{
    opts o = {0, 0, 0, DEFAULT_TOP};
    /* --top N takes a value: take it out before the common parser. */
    char **av = act_cli_xcalloc((size_t)argc + 1, sizeof *av);
    int ac = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && strcmp(argv[i], "--") == 0) {
            while (i < argc)
                av[ac++] = argv[i++];
            break;
        }
        if (i > 0 && (strcmp(argv[i], "--top") == 0 || strncmp(argv[i], "--top=", 6) == 0)) {
            const char *v = argv[i][5] == '=' ? argv[i] + 6 : (i + 1 < argc ? argv[++i] : NULL);
            char *end = NULL;
            long n = v ? strtol(v, &end, 10) : 0;
            if (!v || !*v || *end || n < 1 || n > 1000000) {
                fprintf(stderr, "actrace summary: --top needs a number from 1 to 1000000\n");
                usage(stderr);
                free(av);
                return 2;
            }
            o.top = (size_t)n;
            continue;
        }
        av[ac++] = argv[i];
    }
    const char *file = NULL;
    const act_cli_flag flags[] = {{"--json", NULL, &o.json},
                                  {"--wide", NULL, &o.wide},
                                  {"--each", NULL, &o.each},
                                  {NULL, NULL, NULL}};
    int rc = act_cli_file_args("summary", ac, av, flags, usage, &file);
    free(av);
    if (rc)
        return rc == 1 ? 0 : 2;
    if (act_cli_is_dir(file))
        return summary_dir(file, &o);
    if (o.each) {
        fprintf(stderr, "actrace summary: --each needs a DIRECTORY\n");
        usage(stderr);
        return 2;
    }
    char msg[600];
    summ S;
    memset(&S, 0, sizeof S);
    if (act_cli_summary_file(&S, file, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s: error: %s\n", file, msg);
        act_cli_summary_free(&S);
        return 2;
    }
    view V;
    build_view(&V, &S, file);
    if (o.json) {
        jw W = {stdout, 0, {0}};
        json_out(&V, &o, &W);
        fputc('\n', stdout);
    } else {
        render(&V, &o);
    }
    free_view(&V);
    act_cli_summary_free(&S);
    return fflush(stdout) == 0 ? 0 : 1;
}
