/* SPDX-License-Identifier: MIT */
/*
 * The one streaming pass behind `actrace summary` (see summary.h): each
 * event read from the trace updates tallies, per-name and per-process
 * statistics, per-device busy intervals, kernel tables, copy totals,
 * launch latencies (flow start on the host to flow finish on the device),
 * counter series and the flow matching, and is then forgotten.
 *
 * Bounded structures:
 *   - self time: each thread keeps a stack of its open X slices (at most
 *     SELF_STACK deep); traces list a thread's slices in start order,
 *     parents first (actrace and Kineto do), so a slice's parent is the
 *     innermost open slice that contains it. A slice that starts before
 *     the previous one on its thread resets the stack (its time then
 *     counts as self time of its own only).
 *   - device busy time: a set of intervals per device and kind, merged
 *     when it grows; past IV_KEEP disjoint intervals the older half is
 *     added to a running total and dropped. Exact when device spans come
 *     at most IV_KEEP busy runs out of order, as they do.
 *   - launch latency: exact quantiles for the first LAT_EXACT launches of
 *     a device, then a log-linear histogram (1/32 relative resolution);
 *     min and max are always exact.
 *   - flows: only identities with unmatched starts or finishes are held.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#include "summary.h"

#define SELF_STACK 256
#define IV_KEEP 65536

const char *const act_cli_copy_dir_names[CD_COUNT] = {"HtoD", "DtoH", "DtoD",
                                                      "HtoH", "PtoP", "other"};

/* ---- interval sets ------------------------------------------------------------ */

static int cmp_iv(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void iv_compact(sum_ivset *iv)
{
    if (iv->n > 1 && iv->unsorted)
        act_cli_sort(iv->v, iv->n, sizeof *iv->v, cmp_iv);
    iv->unsorted = 0;
    size_t w = 0;
    for (size_t k = 0; k < iv->n; k++) {
        if (w && iv->v[k].s <= iv->v[w - 1].e) {
            if (iv->v[k].e > iv->v[w - 1].e)
                iv->v[w - 1].e = iv->v[k].e;
        } else {
            iv->v[w++] = iv->v[k];
        }
    }
    iv->n = w;
}

static void iv_add(sum_ivset *iv, int64_t s, int64_t e)
{
    if (e <= iv->done_until)
        return;
    if (s < iv->done_until)
        s = iv->done_until;
    if (e <= s)
        return;
    /* Extends the last interval (the common, sorted case). */
    if (iv->n && s >= iv->v[iv->n - 1].s && s <= iv->v[iv->n - 1].e) {
        if (e > iv->v[iv->n - 1].e)
            iv->v[iv->n - 1].e = e;
        return;
    }
    if (iv->n && s < iv->v[iv->n - 1].s)
        iv->unsorted = 1;
    act_cli_grow(&iv->v, &iv->cap, iv->n, sizeof *iv->v);
    iv->v[iv->n].s = s;
    iv->v[iv->n].e = e;
    iv->n++;
    if (iv->n < 2 * IV_KEEP)
        return;
    iv_compact(iv);
    if (iv->n <= IV_KEEP)
        return;
    size_t half = iv->n / 2;
    for (size_t k = 0; k < half; k++)
        iv->done_total = sum_add(iv->done_total, iv->v[k].e - iv->v[k].s);
    iv->done_until = iv->v[half - 1].e;
    memmove(iv->v, iv->v + half, (iv->n - half) * sizeof *iv->v);
    iv->n -= half;
}

int64_t act_cli_ivset_total(sum_ivset *iv)
{
    iv_compact(iv);
    int64_t t = iv->done_total;
    for (size_t k = 0; k < iv->n; k++)
        t = sum_add(t, iv->v[k].e - iv->v[k].s);
    return t;
}

/* ---- latency histogram ----------------------------------------------------------- */

static size_t lat_bucket(int64_t v)
{
    if (v < 64)
        return v < 0 ? 0 : (size_t)v;
    int e = 63 - __builtin_clzll((unsigned long long)v); /* >= 6 */
    size_t sub = (size_t)((uint64_t)v >> (e - 5)) & 31;
    size_t b = 64 + (size_t)(e - 6) * 32 + sub;
    return b < LAT_BUCKETS ? b : LAT_BUCKETS - 1;
}

static int64_t lat_value(size_t b)
{
    if (b < 64)
        return (int64_t)b;
    int e = (int)((b - 64) / 32) + 6;
    uint64_t sub = (b - 64) % 32;
    uint64_t lo = (32 + sub) << (e - 5), w = (uint64_t)1 << (e - 5);
    return (int64_t)(lo + w / 2);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int64_t act_cli_lat_quantile(sum_device *d, double q)
{
    if (!d->lat_n)
        return 0;
    uint64_t rank = (uint64_t)ceil(q * (double)d->lat_n);
    if (rank < 1)
        rank = 1;
    if (d->lat_n <= LAT_EXACT) {
        if (!d->lat_sorted)
            act_cli_sort(d->lat_v, d->lat_n, sizeof *d->lat_v, cmp_i64);
        d->lat_sorted = 1;
        return d->lat_v[rank - 1];
    }
    uint64_t seen = 0;
    for (size_t b = 0; b < LAT_BUCKETS; b++) {
        seen += d->lat[b];
        if (seen >= rank) {
            int64_t v = lat_value(b);
            if (v > d->lat_max)
                v = d->lat_max;
            if (v < d->lat_min)
                v = d->lat_min;
            return v;
        }
    }
    return d->lat_max;
}

/* ---- keys -------------------------------------------------------------------------- */

/* A map key for a pid/tid value: its type and bytes (at most 200). */
static size_t value_key(const act__jv *v, char *buf)
{
    if (!v) {
        buf[0] = 'm';
        return 1;
    }
    buf[0] = (char)('0' + v->type);
    size_t n = 0;
    if (v->type == ACT__J_STRING || v->type == ACT__J_NUMBER) {
        n = v->len > 200 ? 200 : v->len;
        memcpy(buf + 1, v->s, n);
    }
    return n + 1;
}

static act__jv *dup_or_null(const act__jv *v)
{
    if (!v)
        return NULL;
    act__jv *d = act__jv_dup(v);
    if (!d) {
        fputs("actrace: out of memory\n", stderr);
        exit(1);
    }
    return d;
}

static char *strdup_jv(const act__jv *v)
{
    if (!v || v->type != ACT__J_STRING)
        return NULL;
    return act_cli_xstrdup(v->s);
}

static sum_tally *tally_of(act_cli_map *m, sum_tally **v, size_t *n,
                           size_t *cap, const act__jv *key)
{
    const char *k = key && key->type == ACT__J_STRING ? key->s : NULL;
    size_t len = k ? strlen(k) + 1 : 0; /* "" and none differ */
    int created;
    size_t *slot = act_cli_map_put(m, k ? k : "", len, *n, &created);
    if (created) {
        act_cli_grow(v, cap, *n, sizeof **v);
        (*v)[*n] = (sum_tally){k ? act_cli_map_key(m, k, len) : NULL, 0};
        (*n)++;
    }
    return &(*v)[*slot];
}

static size_t proc_of(summ *S, const act__jv *pid)
{
    char key[208];
    size_t kl = value_key(pid, key);
    int created;
    size_t *slot = act_cli_map_put(&S->proc_map, key, kl, S->npr, &created);
    if (created) {
        act_cli_grow(&S->pr, &S->prcap, S->npr, sizeof *S->pr);
        sum_proc *p = &S->pr[S->npr];
        memset(p, 0, sizeof *p);
        p->pid = dup_or_null(pid);
        p->first_thread = p->last_thread = SIZE_MAX;
        int64_t id;
        if (act__jv_i64(pid, &id) && id >= SUM_DEVICE_PID_BASE &&
            id < SUM_DEVICE_PID_BASE + 0x10000) {
            p->is_device = 1;
            p->device = id - SUM_DEVICE_PID_BASE;
        }
        S->npr++;
    }
    return *slot;
}

static size_t thread_of(summ *S, const act__jv *pid, const act__jv *tid)
{
    char key[420];
    size_t kl = value_key(pid, key);
    key[kl++] = '\x1f';
    kl += value_key(tid, key + kl);
    int created;
    size_t *slot = act_cli_map_put(&S->thr_map, key, kl, S->nth, &created);
    if (created) {
        size_t p = proc_of(S, pid);
        act_cli_grow(&S->th, &S->thcap, S->nth, sizeof *S->th);
        sum_thread *t = &S->th[S->nth];
        memset(t, 0, sizeof *t);
        t->proc = p;
        t->tid = dup_or_null(tid);
        t->next_in_proc = SIZE_MAX;
        sum_proc *pr = &S->pr[p];
        if (pr->last_thread == SIZE_MAX)
            pr->first_thread = S->nth;
        else
            S->th[pr->last_thread].next_in_proc = S->nth;
        pr->last_thread = S->nth;
        pr->nthreads++;
        S->nth++;
    }
    return *slot;
}

static size_t device_of(summ *S, int64_t id)
{
    int created;
    size_t *slot = act_cli_map_put(&S->dev_map, (const char *)&id, sizeof id,
                                   S->ndv, &created);
    if (created) {
        act_cli_grow(&S->dv, &S->dvcap, S->ndv, sizeof *S->dv);
        memset(&S->dv[S->ndv], 0, sizeof *S->dv);
        S->dv[S->ndv].id = id;
        S->dv[S->ndv].lat_min = INT64_MAX;
        S->ndv++;
    }
    return *slot;
}

/* ---- classification ------------------------------------------------------------------ */

static int device_kind(const act__jv *cat)
{
    if (!cat || cat->type != ACT__J_STRING)
        return DK_NONE;
    const char *c = cat->s;
    switch (cat->len) { /* by length first: most categories are neither */
    case 6:
        if (strcasecmp(c, "kernel") == 0)
            return DK_KERNEL;
        if (strcasecmp(c, "memcpy") == 0)
            return DK_MEMCPY;
        if (strcasecmp(c, "memset") == 0)
            return DK_MEMSET;
        break;
    case 10:
        if (strcasecmp(c, "gpu_memcpy") == 0)
            return DK_MEMCPY;
        if (strcasecmp(c, "gpu_memset") == 0)
            return DK_MEMSET;
        break;
    case 15:
        if (strcasecmp(c, "mtia_ccp_events") == 0)
            return DK_KERNEL;
        break;
    default: break;
    }
    return DK_NONE;
}

static int copy_dir(const act__jv *name, const act__jv *args)
{
    static const char *const tok[][2] = {
        {"HtoD", "h2d"}, {"DtoH", "d2h"}, {"DtoD", "d2d"}, {"HtoH", "h2h"},
        {"PtoP", "p2p"}};
    const char *texts[3] = {NULL, NULL, NULL};
    const act__jv *k = act__jv_get(args, "kind");
    if (!k)
        k = act__jv_get(args, "copyKind");
    texts[0] = k && k->type == ACT__J_STRING ? k->s : NULL;
    texts[1] = name && name->type == ACT__J_STRING ? name->s : NULL;
    for (int t = 0; t < 2; t++) {
        if (!texts[t])
            continue;
        for (int d = 0; d < 5; d++)
            if (strcasestr(texts[t], tok[d][0]) || strcasestr(texts[t], tok[d][1]))
                return d;
    }
    return CD_OTHER;
}

/* ---- flows ------------------------------------------------------------------------------ */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    /* 8 bytes a step (the identity texts are short). */
    const unsigned char *s = p;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x100000001b3u;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w ^ ((uint64_t)n << 56)) * 0x100000001b3u;
    return h ^ (h >> 29);
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdu;
    h ^= h >> 33;
    return h;
}

static sum_flow *flow_slot(summ *S, uint64_t key, int insert)
{
    if (insert && (S->fln + 1) * 2 > S->flcap) {
        sum_flow *old = S->fl;
        size_t ocap = S->flcap;
        S->flcap = ocap ? ocap * 2 : 1024;
        S->fl = act_cli_xcalloc(S->flcap, sizeof *S->fl);
        for (size_t i = 0; i < ocap; i++) {
            if (!old[i].key)
                continue;
            size_t j = mix(old[i].key) & (S->flcap - 1);
            while (S->fl[j].key)
                j = (j + 1) & (S->flcap - 1);
            S->fl[j] = old[i];
        }
        free(old);
    }
    if (!S->flcap)
        return NULL;
    size_t j = mix(key) & (S->flcap - 1);
    while (S->fl[j].key && S->fl[j].key != key)
        j = (j + 1) & (S->flcap - 1);
    if (!S->fl[j].key) {
        if (!insert)
            return NULL;
        memset(&S->fl[j], 0, sizeof S->fl[j]);
        S->fl[j].key = key;
        S->fln++;
    }
    return &S->fl[j];
}

/* Remove @p f (backward-shift deletion keeps probe chains intact). */
static void flow_remove(summ *S, sum_flow *f)
{
    size_t mask = S->flcap - 1, i = (size_t)(f - S->fl), j = i;
    S->fl[i].key = 0;
    S->fln--;
    for (;;) {
        j = (j + 1) & mask;
        if (!S->fl[j].key)
            return;
        size_t home = mix(S->fl[j].key) & mask;
        /* Move j to i if its home is not in (i, j] (cyclically). */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            S->fl[i] = S->fl[j];
            S->fl[j].key = 0;
            i = j;
        }
    }
}

static void add_latency(summ *S, size_t proc, int64_t lat)
{
    sum_proc *p = &S->pr[proc];
    size_t d = device_of(S, p->is_device ? p->device : -1 - (int64_t)proc);
    sum_device *dv = &S->dv[d];
    if (!dv->lat)
        dv->lat = act_cli_xcalloc(LAT_BUCKETS, sizeof *dv->lat);
    dv->lat[lat_bucket(lat)]++;
    if (dv->lat_n < LAT_EXACT) {
        act_cli_grow(&dv->lat_v, &dv->lat_vcap, dv->lat_n, sizeof *dv->lat_v);
        dv->lat_v[dv->lat_n] = lat;
    }
    dv->lat_n++;
    if (lat > dv->lat_max || dv->lat_n == 1)
        dv->lat_max = lat;
    if (lat < dv->lat_min)
        dv->lat_min = lat;
}

static void add_flow(summ *S, char ph, const act__jv *cat, const act__jv *name,
                     const act__jv *id, size_t proc, int ts_ok, int64_t ts)
{
    if (ph == 't') {
        S->flow_steps++;
        return;
    }
    char buf[208];
    uint64_t h = 0xcbf29ce484222325u;
    size_t n = value_key(cat, buf);
    h = fnv(h, buf, n);
    h = fnv(h, "\x1f", 1);
    n = value_key(name, buf);
    h = fnv(h, buf, n);
    h = fnv(h, "\x1f", 1);
    n = value_key(id, buf);
    h = fnv(h, buf, n);
    if (!h)
        h = 1;
    sum_flow *f = flow_slot(S, h, 1);
    if (ph == 's') {
        S->flow_starts++;
        if (f->nf) { /* its finish came first */
            f->nf--;
            S->flow_matched++;
            if (ts_ok)
                add_latency(S, f->proc, f->ts - ts);
        } else {
            f->ns++;
            f->ts = ts;
        }
    } else {
        S->flow_finishes++;
        if (f->ns) {
            f->ns--;
            S->flow_matched++;
            if (ts_ok)
                add_latency(S, proc, ts - f->ts);
        } else {
            f->nf++;
            f->ts = ts;
            f->proc = proc;
        }
    }
    if (!f->ns && !f->nf)
        flow_remove(S, f);
}

/* ---- numbered steps ------------------------------------------------------------------------ */

static int ends_with_ci(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && strncasecmp(s + n - k, suf, k) == 0;
}

static int contains_ci(const char *s, size_t n, const char *w)
{
    size_t k = strlen(w);
    for (size_t i = 0; i + k <= n; i++)
        if (strncasecmp(s + i, w, k) == 0)
            return 1;
    return 0;
}

const char *act_cli_step_group(const char *name, char *buf, size_t len, int *is_step)
{
    size_t n = strlen(name), d = n;
    while (d && name[d - 1] >= '0' && name[d - 1] <= '9')
        d--;
    if (d == n || d < 2) /* no digits, or nothing before the separator */
        return NULL;
    char sep = name[d - 1];
    size_t pre = d - 1; /* the prefix, without the separator */
    int step = contains_ci(name, pre, "step") || contains_ci(name, pre, "iteration");
    if (sep != '#' &&
        !((sep == ' ' || sep == '_') &&
          (ends_with_ci(name, pre, "step") || ends_with_ci(name, pre, "iteration"))))
        return NULL;
    /* "ProfilerStep#3" -> "ProfilerStep*" (torch's name); "step 3" ->
     * "step *". */
    size_t keep = sep == '#' ? pre : d;
    if (keep + 2 > len)
        return NULL;
    memcpy(buf, name, keep);
    buf[keep] = '*';
    buf[keep + 1] = '\0';
    if (is_step)
        *is_step = step;
    return buf;
}

static void add_step(summ *S, const char *group, int64_t dur)
{
    sum_steps *st = NULL;
    for (size_t i = 0; i < S->nsteps; i++)
        if (strcmp(S->steps[i].name, group) == 0)
            st = &S->steps[i];
    if (!st) {
        if (S->nsteps == STEP_FAMILIES)
            return; /* families past the first few: in the top lists only */
        st = &S->steps[S->nsteps++];
        st->name = act_cli_xstrdup(group);
        st->min = INT64_MAX;
    }
    st->count++;
    st->total = sum_add(st->total, dur);
    if (dur < st->min)
        st->min = dur;
    if (dur > st->max)
        st->max = dur;
    if (st->nv < STEP_KEEP) {
        act_cli_grow(&st->v, &st->cap, st->nv, sizeof *st->v);
        st->v[st->nv++] = dur;
        st->sorted = 0;
    }
}

int64_t act_cli_steps_quantile(sum_steps *st, double q)
{
    if (!st->nv)
        return 0;
    if (!st->sorted)
        act_cli_sort(st->v, st->nv, sizeof *st->v, cmp_i64);
    st->sorted = 1;
    size_t rank = (size_t)ceil(q * (double)st->nv);
    if (rank < 1)
        rank = 1;
    if (rank > st->nv)
        rank = st->nv;
    return st->v[rank - 1];
}

static int cmp_steps(const void *a, const void *b)
{
    const sum_steps *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

void act_cli_steps_sort(summ *S)
{
    if (S->nsteps > 1)
        act_cli_sort(S->steps, S->nsteps, sizeof *S->steps, cmp_steps);
}

/* ---- events --------------------------------------------------------------------------------- */

static size_t name_stat(summ *S, const char *n)
{
    size_t len = strlen(n);
    int created;
    size_t *slot = act_cli_map_put(&S->name_map, n, len, S->nnm, &created);
    if (created) {
        act_cli_grow(&S->nm, &S->nmcap, S->nnm, sizeof *S->nm);
        S->nm[S->nnm] = (sum_nstat){act_cli_map_key(&S->name_map, n, len), 0, 0,
                                    0, 0, INT64_MAX, 0};
        S->nnm++;
    }
    return *slot;
}

/* Stats of (process, name), keyed by both. */
static size_t pname_stat(summ *S, size_t proc, const char *n)
{
    size_t len = strlen(n);
    char stackkey[256];
    char *key = len + 4 <= sizeof stackkey ? stackkey : act_cli_xmalloc(len + 4);
    uint32_t p32 = (uint32_t)proc;
    memcpy(key, &p32, 4);
    memcpy(key + 4, n, len);
    int created;
    size_t *slot = act_cli_map_put(&S->pname_map, key, len + 4, S->npn, &created);
    if (created) {
        act_cli_grow(&S->pn, &S->pncap, S->npn, sizeof *S->pn);
        S->pn[S->npn] = (sum_nstat){act_cli_map_key(&S->pname_map, key, len + 4) + 4,
                                    p32, 0, 0, 0, INT64_MAX, 0};
        S->npn++;
    }
    if (key != stackkey)
        free(key);
    return *slot;
}

static void add_kernel(summ *S, size_t dev, const char *n, int64_t dur)
{
    size_t len = strlen(n);
    char stackkey[256];
    char *key = len + 4 <= sizeof stackkey ? stackkey : act_cli_xmalloc(len + 4);
    uint32_t d32 = (uint32_t)dev;
    memcpy(key, &d32, 4);
    memcpy(key + 4, n, len);
    int created;
    size_t *slot = act_cli_map_put(&S->kname_map, key, len + 4, S->nks, &created);
    if (created) {
        act_cli_grow(&S->ks, &S->kscap, S->nks, sizeof *S->ks);
        S->ks[S->nks] = (sum_kstat){dev, act_cli_map_key(&S->kname_map, key, len + 4) + 4,
                                    0, 0, INT64_MAX, 0};
        S->nks++;
    }
    if (key != stackkey)
        free(key);
    sum_kstat *k = &S->ks[*slot];
    k->count++;
    k->total = sum_add(k->total, dur);
    if (dur < k->min)
        k->min = dur;
    if (dur > k->max)
        k->max = dur;
}

static void add_self(summ *S, size_t thread, size_t stat, int64_t ts, int64_t end)
{
    sum_thread *t = &S->th[thread];
    int64_t dur = end - ts;
    S->pn[stat].self = sum_add(S->pn[stat].self, dur);
    if (t->depth && ts < t->stack[t->depth - 1].ts)
        t->depth = 0; /* out of start order: no parent known */
    while (t->depth && t->stack[t->depth - 1].end <= ts)
        t->depth--; /* closed before this one starts */
    if (t->depth && end <= t->stack[t->depth - 1].end)
        S->pn[t->stack[t->depth - 1].stat].self =
            sum_add(S->pn[t->stack[t->depth - 1].stat].self, -dur);
    else
        t->depth = 0; /* partial overlap: no parent, a new root */
    if (t->depth < SELF_STACK) {
        /* Most threads never nest deeper than a few slices: grow on need
         * (a million threads must not cost a million full stacks). */
        if (t->depth == t->stack_cap) {
            t->stack_cap = t->stack_cap ? t->stack_cap * 2 : 4;
            t->stack = act_cli_xrealloc(t->stack, t->stack_cap * sizeof *t->stack);
        }
        t->stack[t->depth].ts = ts;
        t->stack[t->depth].end = end;
        t->stack[t->depth].stat = stat;
        t->depth++;
    }
}

static void add_counter(summ *S, const act__jv *pid, const act__jv *name,
                        const act__jv *args, int64_t ts)
{
    char key[420];
    size_t kl = value_key(pid, key);
    key[kl++] = '\x1f';
    const char *nm = name && name->type == ACT__J_STRING ? name->s : "";
    size_t nl = strlen(nm);
    if (nl > 200)
        nl = 200; /* identity by the first 200 bytes */
    memcpy(key + kl, nm, nl);
    kl += nl;
    int created;
    size_t *slot = act_cli_map_put(&S->ctr_map, key, kl, S->nct, &created);
    if (created) {
        act_cli_grow(&S->ct, &S->ctcap, S->nct, sizeof *S->ct);
        memset(&S->ct[S->nct], 0, sizeof *S->ct);
        S->ct[S->nct].pid = dup_or_null(pid);
        S->ct[S->nct].name = act_cli_xstrdup(nm);
        S->nct++;
    }
    size_t ci = *slot;
    S->ct[ci].samples++;
    for (const act__jv *v = args->child; v; v = v->next) {
        double d;
        if (!act__jv_num(v, &d) || !isfinite(d))
            continue;
        size_t klen = v->klen;
        char stackkey[256];
        char *sk = klen + sizeof ci <= sizeof stackkey
                       ? stackkey : act_cli_xmalloc(klen + sizeof ci);
        memcpy(sk, &ci, sizeof ci);
        memcpy(sk + sizeof ci, v->key, klen);
        int cr;
        size_t *ss = act_cli_map_put(&S->series_map, sk, klen + sizeof ci, S->nse, &cr);
        if (cr) {
            act_cli_grow(&S->se, &S->secap, S->nse, sizeof *S->se);
            sum_series *s = &S->se[S->nse];
            memset(s, 0, sizeof *s);
            s->ctr = ci;
            s->key = act_cli_map_key(&S->series_map, sk, klen + sizeof ci) + sizeof ci;
            s->min = s->max = s->last = d;
            s->first_ts = s->last_ts = ts;
            sum_ctr *c = &S->ct[ci];
            act_cli_grow(&c->series, &c->cap, c->nseries, sizeof *c->series);
            c->series[c->nseries++] = S->nse;
            S->nse++;
        }
        if (sk != stackkey)
            free(sk);
        sum_series *s = &S->se[*ss];
        if (s->n) {
            if (ts >= s->last_ts) {
                s->integral += s->last * (double)(ts - s->last_ts);
                s->last = d;
                s->last_ts = ts;
            } else {
                s->unordered = 1;
                if (ts < s->first_ts)
                    s->first_ts = ts;
            }
        }
        s->n++;
        s->sum += d;
        if (d < s->min)
            s->min = d;
        if (d > s->max)
            s->max = d;
    }
}

static void add_event(summ *S, const act__jv *e)
{
    S->events++;
    if (e->type != ACT__J_OBJECT)
        return;
    act_cli_fields f;
    act_cli_get_fields(e, &f);
    const char *ph = f.ph && f.ph->type == ACT__J_STRING ? f.ph->s : NULL;
    if (ph && ph[0] && !ph[1] && S->ph_one[(unsigned char)ph[0]]) {
        S->ph[S->ph_one[(unsigned char)ph[0]] - 1].n++;
    } else {
        sum_tally *t = tally_of(&S->phase_map, &S->ph, &S->nph, &S->phcap, f.ph);
        t->n++;
        if (ph && ph[0] && !ph[1] && f.ph->len == 1)
            S->ph_one[(unsigned char)ph[0]] = (size_t)(t - S->ph) + 1;
    }
    const char *name = f.name && f.name->type == ACT__J_STRING ? f.name->s : NULL;
    if (ph && ph[0] == 'M' && !ph[1]) {
        const act__jv *v = act__jv_get(f.args, "name");
        if (name && v && v->type == ACT__J_STRING &&
            strcmp(name, "process_name") == 0) {
            size_t p = proc_of(S, f.pid);
            free(S->pr[p].name);
            S->pr[p].name = strdup_jv(v);
        } else if (name && v && v->type == ACT__J_STRING &&
                   strcmp(name, "thread_name") == 0) {
            size_t t = thread_of(S, f.pid, f.tid);
            free(S->th[t].name);
            S->th[t].name = strdup_jv(v);
        } else if (name && strcmp(name, "process_labels") == 0) {
            const act__jv *l = act__jv_get(f.args, "labels");
            if (l && l->type == ACT__J_STRING && strncmp(l->s, "actrace ", 8) == 0) {
                free(S->actrace_version);
                S->actrace_version = act_cli_xstrdup(l->s + 8);
            }
        }
        return;
    }
    tally_of(&S->cat_map, &S->cat, &S->ncat, &S->catcap, f.cat)->n++;
    size_t thread = SIZE_MAX;
    if (f.tid) {
        thread = thread_of(S, f.pid, f.tid);
        S->th[thread].events++;
    }
    size_t p = thread != SIZE_MAX ? S->th[thread].proc : proc_of(S, f.pid);
    S->pr[p].events++;
    int64_t dev_arg;
    /* A device index is 0..INT32_MAX: a negative one would read as one of
     * the "unknown device" keys (-1 - process index) and index the
     * process table out of bounds. */
    if (!S->pr[p].is_device && act__jv_i64(act__jv_get(f.args, "device"), &dev_arg) &&
        dev_arg >= 0 && dev_arg <= INT32_MAX) {
        S->pr[p].is_device = 1;
        S->pr[p].device = dev_arg;
    }
    int64_t ts, dur = 0;
    if (!act__jv_us_ns(f.ts, &ts))
        return;
    int is_x = ph && ph[0] == 'X' && !ph[1];
    if (is_x && act__jv_us_ns(f.dur, &dur) && dur >= 0) {
        const char *n = name ? name : "";
        char gbuf[256];
        int is_step = 0;
        int kind = device_kind(f.cat);
        /* Numbered host names are grouped; device spans (kernels) keep
         * their names. */
        const char *grp = kind == DK_NONE ? act_cli_step_group(n, gbuf, sizeof gbuf, &is_step)
                                          : NULL;
        if (grp) {
            /* Steps on the host only: Kineto repeats ProfilerStep#N on the
             * GPU timeline as a "gpu_user_annotation". */
            if (is_step && kind == DK_NONE && !S->pr[p].is_device &&
                !(f.cat && f.cat->type == ACT__J_STRING &&
                  strcmp(f.cat->s, "gpu_user_annotation") == 0))
                add_step(S, grp, dur);
            n = grp;
        }
        size_t sti = name_stat(S, n);
        sum_nstat *st = &S->nm[sti];
        st->count++;
        st->total = sum_add(st->total, dur);
        if (dur > st->max)
            st->max = dur;
        if (dur < st->min)
            st->min = dur;
        if (kind != DK_NONE) {
            sum_proc *pr = &S->pr[p];
            size_t d = device_of(S, pr->is_device ? pr->device : -1 - (int64_t)p);
            sum_device *dv = &S->dv[d];
            iv_add(&dv->busy, ts, ts + dur);
            iv_add(&dv->kind[kind], ts, ts + dur);
            dv->kind_sum[kind] = sum_add(dv->kind_sum[kind], dur);
            dv->kind_count[kind]++;
            if (kind == DK_KERNEL)
                add_kernel(S, d, n, dur);
            if (kind == DK_MEMCPY) {
                int cd = copy_dir(f.name, f.args);
                int64_t bytes;
                dv->copy_count[cd]++;
                dv->copy_time[cd] = sum_add(dv->copy_time[cd], dur);
                if (act__jv_i64(act__jv_get(f.args, "bytes"), &bytes) && bytes > 0)
                    dv->copy_bytes[cd] = sum_addu(dv->copy_bytes[cd], (uint64_t)bytes);
            }
        } else if (thread != SIZE_MAX) {
            size_t st2 = pname_stat(S, p, n);
            sum_nstat *ps = &S->pn[st2];
            ps->count++;
            ps->total = sum_add(ps->total, dur);
            if (dur > ps->max)
                ps->max = dur;
            if (dur < ps->min)
                ps->min = dur;
            add_self(S, thread, st2, ts, ts + dur);
        }
    } else {
        dur = 0;
    }
    if (!S->have_time || ts < S->first)
        S->first = ts;
    if (!S->have_time || ts + dur > S->last)
        S->last = ts + dur;
    S->have_time = 1;
    if (!ph || ph[1])
        return;
    if (ph[0] == 'C' && f.args && f.args->type == ACT__J_OBJECT)
        add_counter(S, f.pid, f.name, f.args, ts);
    else if (ph[0] == 's' || ph[0] == 't' || ph[0] == 'f')
        add_flow(S, ph[0], f.cat, f.name, f.id, p, 1, ts);
}

static void add_member(summ *S, const char *key, const act__jv *v)
{
    act__jv **slot = NULL;
    if (strcmp(key, "traceName") == 0)
        slot = &S->trace_name;
    else if (strcmp(key, "baseTimeNanoseconds") == 0)
        slot = &S->base_time;
    else if (strcmp(key, "deviceProperties") == 0)
        slot = &S->device_props;
    else if (strcmp(key, "actraceStats") == 0)
        slot = &S->stats;
    else if (strcmp(key, "distributedInfo") == 0)
        slot = &S->dist_info;
    if (strcmp(key, "actraceRankDefault") == 0)
        S->rank_default = v->type == ACT__J_TRUE;
    if (strcmp(key, "schemaVersion") == 0 || strcmp(key, "baseTimeNanoseconds") == 0 ||
        strcmp(key, "deviceProperties") == 0 || strcmp(key, "distributedInfo") == 0)
        S->kineto_keys = 1;
    if (slot) {
        free(*slot);
        *slot = dup_or_null(v);
    }
}

int act_cli_summary_collect(summ *S, act_cli_trace *tr, char *msg, size_t msglen)
{
    act__rd_item it;
    int k;
    uint64_t items = 0;
    act_cli_progress_t prog = {"summary", isatty(2), 0, 0, 0};
    act_cli_progress(&prog, 0, 0);
    while ((k = act__rd_next(tr->rd, &it)) > 0) {
        if (k == ACT__RD_EVENT)
            add_event(S, it.v);
        else
            add_member(S, it.key, it.v);
        if (S->hook)
            S->hook(S->hook_ctx, S, k == ACT__RD_EVENT ? NULL : it.key, it.v);
        if ((++items & 4095) == 0)
            act_cli_progress(&prog, act__rd_bytes_read(tr->rd), 0);
    }
    act_cli_progress(&prog, 0, 1);
    if (k < 0) {
        snprintf(msg, msglen, "%s", act__rd_errmsg(tr->rd));
        return -1;
    }
    if (act__rd_layout(tr->rd) == ACT__RD_TOP_NO_EVENTS) {
        snprintf(msg, msglen, "not a trace: the top level must be an array or "
                              "an object with a \"traceEvents\" array");
        return -1;
    }
    S->top_array = act__rd_layout(tr->rd) == ACT__RD_TOP_ARRAY;
    /* Flow finishes read before their process was known to be a device:
     * move their latencies to that device now. */
    for (size_t d = 0; d < S->ndv; d++) {
        sum_device *dv = &S->dv[d];
        if (dv->id >= 0 || !dv->lat_n)
            continue;
        const sum_proc *pr = &S->pr[(size_t)(-1 - dv->id)];
        if (!pr->is_device) {
            /* Flows that end in a process with no device work are not
             * launches (torch's "fwdbwd" flows join a forward op to its
             * backward op on the host): no latency, no device. */
            if (!dv->kind_count[DK_KERNEL] && !dv->kind_count[DK_MEMCPY] &&
                !dv->kind_count[DK_MEMSET]) {
                S->flow_host += dv->lat_n;
                dv->lat_n = 0;
            }
            continue;
        }
        size_t to = device_of(S, pr->device);
        dv = &S->dv[d]; /* device_of may have moved the array */
        sum_device *t = &S->dv[to];
        if (!t->lat)
            t->lat = act_cli_xcalloc(LAT_BUCKETS, sizeof *t->lat);
        for (size_t b = 0; b < LAT_BUCKETS; b++)
            t->lat[b] += dv->lat[b];
        for (size_t x = 0; x < dv->lat_n && t->lat_n + x < LAT_EXACT; x++) {
            act_cli_grow(&t->lat_v, &t->lat_vcap, t->lat_n + x, sizeof *t->lat_v);
            t->lat_v[t->lat_n + x] = dv->lat_v[x];
        }
        if (!t->lat_n || dv->lat_max > t->lat_max)
            t->lat_max = dv->lat_max;
        if (dv->lat_min < t->lat_min)
            t->lat_min = dv->lat_min;
        t->lat_n += dv->lat_n;
        dv->lat_n = 0;
    }
    return 0;
}

size_t act_cli_summary_proc(summ *S, const act__jv *pid)
{
    return proc_of(S, pid);
}

int act_cli_device_kind(const act__jv *cat)
{
    return device_kind(cat);
}

void act_cli_summary_free(summ *S)
{
    act_cli_map *maps[] = {&S->phase_map, &S->cat_map,  &S->name_map,
                           &S->pname_map, &S->proc_map, &S->thr_map,
                           &S->ctr_map,   &S->series_map, &S->dev_map,
                           &S->kname_map};
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++)
        act_cli_map_free(maps[i]);
    for (size_t i = 0; i < S->npr; i++) {
        free(S->pr[i].pid);
        free(S->pr[i].name);
    }
    for (size_t i = 0; i < S->nth; i++) {
        free(S->th[i].tid);
        free(S->th[i].name);
        free(S->th[i].stack);
    }
    for (size_t i = 0; i < S->nct; i++) {
        free(S->ct[i].pid);
        free(S->ct[i].name);
        free(S->ct[i].series);
    }
    for (size_t i = 0; i < S->ndv; i++) {
        free(S->dv[i].busy.v);
        for (int k = 0; k < 4; k++)
            free(S->dv[i].kind[k].v);
        free(S->dv[i].lat);
        free(S->dv[i].lat_v);
    }
    free(S->ph);
    free(S->cat);
    free(S->nm);
    free(S->pn);
    free(S->pr);
    free(S->th);
    free(S->ct);
    free(S->se);
    free(S->dv);
    free(S->ks);
    free(S->fl);
    free(S->trace_name);
    free(S->base_time);
    free(S->device_props);
    free(S->stats);
    free(S->actrace_version);
    free(S->dist_info);
    for (size_t i = 0; i < S->nsteps; i++) {
        free(S->steps[i].name);
        free(S->steps[i].v);
    }
}

/* ---- one file, a directory ------------------------------------------------------------------ */

int act_cli_summary_file(summ *S, const char *path, char *msg, size_t msglen)
{
    act_cli_trace tr;
    if (act_cli_trace_open(&tr, path, msg, msglen) != 0)
        return -1;
    int rc = act_cli_summary_collect(S, &tr, msg, msglen);
    act_cli_trace_close(&tr);
    if (rc != 0)
        return -1;
    /* Flows still open are unmatched. */
    for (size_t i = 0; i < S->flcap; i++) {
        if (!S->fl[i].key)
            continue;
        S->flow_unmatched_s += S->fl[i].ns;
        S->flow_unmatched_f += S->fl[i].nf;
    }
    act_cli_steps_sort(S);
    return 0;
}

int act_cli_is_dir(const char *path)
{
    struct stat st;
    return strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int trace_name_ok(const char *n)
{
    size_t l = strlen(n);
    if (n[0] == '.')
        return 0;
    return (l > 5 && strcmp(n + l - 5, ".json") == 0) ||
           (l > 8 && strcmp(n + l - 8, ".json.gz") == 0);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_rank(const void *a, const void *b)
{
    const sum_rank *x = a, *y = b;
    int ux = x->rank < 0, uy = y->rank < 0;
    if (ux != uy)
        return ux - uy;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->file, y->file);
}

static int cmp_jkernel(const void *a, const void *b)
{
    const sum_jkernel *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The row of trace @p S, and its kernels and steps into the job. */
static void job_add(sum_job *J, sum_rank *r, summ *S)
{
    int64_t rk;
    const act__jv *rv = act__jv_get(S->dist_info, "rank");
    r->rank = !S->rank_default && act__jv_i64(rv, &rk) && rk >= 0 ? rk : -1;
    r->events = S->events;
    r->have_time = S->have_time;
    r->first = S->first;
    r->last = S->last;
    r->start_unix = -1;
    int64_t base, w;
    if (S->have_time && act__jv_i64(S->base_time, &base) && base >= 0 &&
        !__builtin_add_overflow(base, S->first, &w) && w >= 0)
        r->start_unix = w;
    int64_t window = S->have_time ? S->last - S->first : 0;
    for (size_t d = 0; d < S->ndv; d++) {
        sum_device *dv = &S->dv[d];
        if (!dv->kind_count[DK_KERNEL] && !dv->kind_count[DK_MEMCPY] &&
            !dv->kind_count[DK_MEMSET])
            continue;
        r->ndev++;
        r->busy = sum_add(r->busy, act_cli_ivset_total(&dv->busy));
    }
    r->busy_pct = r->ndev && window > 0
                      ? 100.0 * (double)r->busy / ((double)r->ndev * (double)window)
                      : -1.0;
    if (S->nsteps) {
        sum_steps *st = &S->steps[0];
        r->step_name = act_cli_xstrdup(st->name);
        r->steps = st->count;
        r->step_min = st->min;
        r->step_max = st->max;
        r->step_total = st->total;
        r->step_p50 = act_cli_steps_quantile(st, 0.5);
        r->step_p90 = act_cli_steps_quantile(st, 0.9);
        /* The job's steps: the family of the first trace with steps. */
        if (!J->steps.name)
            J->steps.name = act_cli_xstrdup(st->name), J->steps.min = INT64_MAX;
        for (size_t i = 0; i < S->nsteps; i++) {
            sum_steps *f = &S->steps[i];
            if (strcmp(f->name, J->steps.name) != 0)
                continue;
            sum_steps *js = &J->steps;
            js->count += f->count;
            js->total = sum_add(js->total, f->total);
            if (f->min < js->min)
                js->min = f->min;
            if (f->max > js->max)
                js->max = f->max;
            for (size_t k = 0; k < f->nv && js->nv < STEP_KEEP; k++) {
                act_cli_grow(&js->v, &js->cap, js->nv, sizeof *js->v);
                js->v[js->nv++] = f->v[k];
            }
            js->sorted = 0;
        }
    }
    size_t me = (size_t)(r - J->r);
    for (size_t k = 0; k < S->nks; k++) {
        const sum_kstat *ks = &S->ks[k];
        size_t len = strlen(ks->name);
        int created;
        size_t *slot = act_cli_map_put(&J->kmap, ks->name, len, J->nk, &created);
        if (created) {
            act_cli_grow(&J->k, &J->kcap, J->nk, sizeof *J->k);
            J->k[J->nk] = (sum_jkernel){act_cli_map_key(&J->kmap, ks->name, len), 0, 0,
                                        0, 0, SIZE_MAX};
            J->nk++;
        }
        sum_jkernel *jk = &J->k[*slot];
        jk->count += ks->count;
        jk->total = sum_add(jk->total, ks->total);
        if (ks->max > jk->max)
            jk->max = ks->max;
        if (jk->last != me) {
            jk->ranks++;
            jk->last = me;
        }
    }
}

int act_cli_summary_dir(sum_job *J, const char *dir,
                        void (*each)(void *ctx, const char *path, summ *S,
                                     const char *err),
                        void *ctx, char *msg, size_t msglen)
{
    J->dir = act_cli_xstrdup(dir);
    J->slowest = SIZE_MAX;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(msg, msglen, "cannot open directory: %s", strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t nn = 0, ncap = 0;
    struct dirent *de;
    size_t dl = strlen(dir);
    while ((de = readdir(d)) != NULL) {
        if (!trace_name_ok(de->d_name))
            continue;
        char *path = act_cli_xmalloc(dl + strlen(de->d_name) + 2);
        sprintf(path, "%s/%s", dir, de->d_name);
        struct stat st;
        int reg = stat(path, &st) == 0 && S_ISREG(st.st_mode);
        free(path);
        if (!reg)
            continue;
        act_cli_grow(&names, &ncap, nn, sizeof *names);
        names[nn++] = act_cli_xstrdup(de->d_name);
    }
    closedir(d);
    if (!nn) {
        snprintf(msg, msglen, "no trace files (*.json, *.json.gz) in the directory");
        free(names);
        return -1;
    }
    act_cli_sort(names, nn, sizeof *names, cmp_str);
    for (size_t i = 0; i < nn; i++) {
        char *path = act_cli_xmalloc(dl + strlen(names[i]) + 2);
        sprintf(path, "%s/%s", dir, names[i]);
        act_cli_grow(&J->r, &J->rcap, J->nr, sizeof *J->r);
        sum_rank *r = &J->r[J->nr++];
        memset(r, 0, sizeof *r);
        r->file = names[i];
        r->rank = -1;
        r->start_unix = -1;
        r->busy_pct = -1.0;
        summ *S = act_cli_xcalloc(1, sizeof *S);
        char m[600];
        if (act_cli_summary_file(S, path, m, sizeof m) != 0) {
            r->error = act_cli_xstrdup(m);
            J->nerr++;
            if (each)
                each(ctx, path, NULL, m);
        } else {
            job_add(J, r, S);
            if (each)
                each(ctx, path, S, NULL);
        }
        act_cli_summary_free(S);
        free(S);
        free(path);
    }
    free(names);
    if (J->nr > 1)
        act_cli_sort(J->r, J->nr, sizeof *J->r, cmp_rank);
    if (J->nk > 1)
        act_cli_sort(J->k, J->nk, sizeof *J->k, cmp_jkernel);
    /* The slowest rank: the largest median step when every readable trace
     * has steps, else the longest trace span. */
    size_t ok = 0, with_steps = 0;
    for (size_t i = 0; i < J->nr; i++) {
        if (J->r[i].error || !J->r[i].have_time)
            continue;
        ok++;
        with_steps += J->r[i].steps > 0;
    }
    J->slowest_by_steps = ok && with_steps == ok;
    for (size_t i = 0; i < J->nr; i++) {
        const sum_rank *r = &J->r[i];
        if (r->error || !r->have_time)
            continue;
        int64_t v = J->slowest_by_steps ? r->step_p50 : r->last - r->first;
        if (J->slowest == SIZE_MAX) {
            J->slowest = i;
            continue;
        }
        const sum_rank *b = &J->r[J->slowest];
        if (v > (J->slowest_by_steps ? b->step_p50 : b->last - b->first))
            J->slowest = i;
    }
    return 0;
}

void act_cli_summary_job_free(sum_job *J)
{
    for (size_t i = 0; i < J->nr; i++) {
        free(J->r[i].file);
        free(J->r[i].error);
        free(J->r[i].step_name);
    }
    free(J->r);
    act_cli_map_free(&J->kmap);
    free(J->k);
    free(J->steps.name);
    free(J->steps.v);
    free(J->dir);
}
