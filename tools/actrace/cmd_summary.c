/* SPDX-License-Identifier: MIT */
/*
 * actrace summary [--json] FILE: what a trace holds, for a human (or, with
 * --json, one JSON object with the same content). Reads actrace's traces
 * and Kineto's (pretty-printed or not, gzip-compressed or not): trace name,
 * producer, base time, time span, events by phase and by category, the
 * names with the most total duration, processes and threads with their
 * names, devices, counter tracks, flows, and actrace's own statistics.
 *
 * The summary is built once as a jansson object; the text form is rendered
 * from that object, so both forms always say the same. Exit 0, or 2 with
 * "FILE: error: ..." on standard error when FILE cannot be read or is not
 * a trace.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "trace_read.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: actrace summary [--json] FILE\n");
}

#ifndef ACT_CLI_HAVE_JANSSON

int act_cmd_summary(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 ||
                      strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "actrace summary: " ACT_CLI_NO_JSON_MSG "\n");
    return 1;
}

#else

#define TOP_NAMES 15
/* actrace's device processes: pid = DEVICE_PID_BASE + device index. */
#define ACTRACE_DEVICE_PID_BASE 0x40000000u

typedef struct nstat {
    const char *name; /* in the tree */
    uint64_t count;
    int64_t total, max; /* ns */
} nstat;

typedef struct proc {
    json_t *pid; /* in the tree (NULL: missing) */
    const char *name;
    uint64_t events;
    int is_device;
    int64_t device;
    size_t nthreads;
} proc;

typedef struct thrd {
    size_t proc;
    json_t *tid;
    const char *name;
    uint64_t events;
} thrd;

typedef struct series {
    const char *key;
    uint64_t n;
    double min, max, last;
    int64_t last_ts;
} series;

typedef struct ctr {
    json_t *pid;
    const char *name;
    uint64_t samples;
    series *s;
    size_t ns, cap;
} ctr;

typedef struct tally {
    const char *key; /* phase or category; NULL: none */
    uint64_t n;
} tally;

typedef struct summ {
    act_cli_map phase_map, cat_map, name_map, proc_map, thr_map, ctr_map,
        flow_map;
    tally *ph, *cat;
    size_t nph, phcap, ncat, catcap;
    nstat *nm;
    size_t nnm, nmcap;
    proc *pr;
    size_t npr, prcap;
    thrd *th;
    size_t nth, thcap;
    ctr *ct;
    size_t nct, ctcap;
    uint64_t (*fl)[3]; /* s, t, f per flow identity */
    size_t nfl, flcap;
    int64_t first, last;
    int have_time;
    int actrace;
} summ;

static tally *tally_of(act_cli_map *m, tally **v, size_t *n, size_t *cap,
                       const char *key)
{
    const char *k = key ? key : "";
    size_t len = key ? strlen(key) + 1 : 0; /* "" and none differ */
    int created;
    size_t *slot = act_cli_map_put(m, k, len, *n, &created);
    if (created) {
        act_cli_grow(v, cap, *n, sizeof **v);
        (*v)[*n] = (tally){key, 0};
        (*n)++;
    }
    return &(*v)[*slot];
}

static size_t proc_of(summ *S, json_t *pid)
{
    char key[160];
    act_cli_json_text(pid, key, sizeof key);
    int created;
    size_t *slot =
        act_cli_map_put(&S->proc_map, key, strlen(key), S->npr, &created);
    if (created) {
        act_cli_grow(&S->pr, &S->prcap, S->npr, sizeof *S->pr);
        memset(&S->pr[S->npr], 0, sizeof *S->pr);
        S->pr[S->npr].pid = pid;
        uint32_t id;
        if (S->actrace && act_cli_json_id(pid, &id) &&
            id >= ACTRACE_DEVICE_PID_BASE) {
            S->pr[S->npr].is_device = 1;
            S->pr[S->npr].device = id - ACTRACE_DEVICE_PID_BASE;
        }
        S->npr++;
    }
    return *slot;
}

static size_t thread_of(summ *S, json_t *pid, json_t *tid)
{
    char key[330];
    size_t p = proc_of(S, pid);
    char *q = act_cli_json_text(pid, key, 160);
    size_t n = strlen(q);
    key[n++] = '\x1f';
    act_cli_json_text(tid, key + n, 160);
    int created;
    size_t *slot =
        act_cli_map_put(&S->thr_map, key, strlen(key), S->nth, &created);
    if (created) {
        act_cli_grow(&S->th, &S->thcap, S->nth, sizeof *S->th);
        S->th[S->nth] = (thrd){p, tid, NULL, 0};
        S->pr[p].nthreads++;
        S->nth++;
    }
    return *slot;
}

static void add_counter(summ *S, json_t *e, int64_t ts)
{
    json_t *pid = json_object_get(e, "pid"), *args = json_object_get(e, "args");
    const char *name = json_string_value(json_object_get(e, "name"));
    char key[600];
    act_cli_json_text(pid, key, 160);
    size_t n = strlen(key);
    snprintf(key + n, sizeof key - n, "\x1f%s", name ? name : "");
    int created;
    size_t *slot =
        act_cli_map_put(&S->ctr_map, key, strlen(key), S->nct, &created);
    if (created) {
        act_cli_grow(&S->ct, &S->ctcap, S->nct, sizeof *S->ct);
        memset(&S->ct[S->nct], 0, sizeof *S->ct);
        S->ct[S->nct].pid = pid;
        S->ct[S->nct].name = name;
        S->nct++;
    }
    ctr *c = &S->ct[*slot];
    c->samples++;
    const char *k;
    json_t *v;
    json_object_foreach(args, k, v) {
        if (!json_is_number(v))
            continue;
        double d = json_number_value(v);
        series *s = NULL;
        for (size_t i = 0; i < c->ns && !s; i++)
            if (strcmp(c->s[i].key, k) == 0)
                s = &c->s[i];
        if (!s) {
            act_cli_grow(&c->s, &c->cap, c->ns, sizeof *c->s);
            s = &c->s[c->ns++];
            *s = (series){k, 0, d, d, d, ts};
        }
        s->n++;
        if (d < s->min)
            s->min = d;
        if (d > s->max)
            s->max = d;
        if (ts >= s->last_ts) {
            s->last = d;
            s->last_ts = ts;
        }
    }
}

static void add_flow(summ *S, json_t *e, char ph)
{
    char key[700], a[160], b[400];
    const char *cat = json_string_value(json_object_get(e, "cat"));
    act_cli_json_text(json_object_get(e, "name"), b, sizeof b);
    act_cli_json_text(json_object_get(e, "id"), a, sizeof a);
    snprintf(key, sizeof key, "%s\x1f%s\x1f%s", cat ? cat : "", b, a);
    int created;
    size_t *slot =
        act_cli_map_put(&S->flow_map, key, strlen(key), S->nfl, &created);
    if (created) {
        act_cli_grow(&S->fl, &S->flcap, S->nfl, sizeof *S->fl);
        memset(S->fl[S->nfl], 0, sizeof S->fl[S->nfl]);
        S->nfl++;
    }
    S->fl[*slot][ph == 's' ? 0 : ph == 't' ? 1 : 2]++;
}

static void add_event(summ *S, json_t *e)
{
    if (!json_is_object(e))
        return;
    const char *ph = json_string_value(json_object_get(e, "ph"));
    const char *name = json_string_value(json_object_get(e, "name"));
    json_t *pid = json_object_get(e, "pid"), *tid = json_object_get(e, "tid");
    json_t *args = json_object_get(e, "args");
    tally_of(&S->phase_map, &S->ph, &S->nph, &S->phcap, ph)->n++;
    if (ph && strcmp(ph, "M") == 0) {
        const char *v = json_string_value(json_object_get(args, "name"));
        /* proc_of/thread_of may move the arrays: index after the call. */
        if (name && v && strcmp(name, "process_name") == 0) {
            size_t p = proc_of(S, pid);
            S->pr[p].name = v;
        } else if (name && v && strcmp(name, "thread_name") == 0) {
            size_t t = thread_of(S, pid, tid);
            S->th[t].name = v;
        }
        return;
    }
    tally_of(&S->cat_map, &S->cat, &S->ncat, &S->catcap,
             json_string_value(json_object_get(e, "cat")))
        ->n++;
    if (tid) {
        size_t t = thread_of(S, pid, tid);
        S->th[t].events++;
    }
    size_t p = proc_of(S, pid);
    S->pr[p].events++;
    json_t *dev = json_object_get(args, "device");
    if (json_is_integer(dev) && !S->pr[p].is_device) {
        S->pr[p].is_device = 1;
        S->pr[p].device = (int64_t)json_integer_value(dev);
    }
    int64_t ts, dur = 0;
    if (!act_cli_json_ns(json_object_get(e, "ts"), &ts))
        return;
    if (ph && strcmp(ph, "X") == 0 &&
        act_cli_json_ns(json_object_get(e, "dur"), &dur) && dur >= 0) {
        const char *n = name ? name : "";
        int created;
        size_t *slot =
            act_cli_map_put(&S->name_map, n, strlen(n), S->nnm, &created);
        if (created) {
            act_cli_grow(&S->nm, &S->nmcap, S->nnm, sizeof *S->nm);
            S->nm[S->nnm++] = (nstat){n, 0, 0, 0};
        }
        nstat *st = &S->nm[*slot];
        st->count++;
        st->total += dur;
        if (dur > st->max)
            st->max = dur;
    } else {
        dur = 0;
    }
    if (!S->have_time || ts < S->first)
        S->first = ts;
    if (!S->have_time || ts + dur > S->last)
        S->last = ts + dur;
    S->have_time = 1;
    if (ph && strcmp(ph, "C") == 0 && json_is_object(args))
        add_counter(S, e, ts);
    if (ph && (strcmp(ph, "s") == 0 || strcmp(ph, "t") == 0 ||
               strcmp(ph, "f") == 0))
        add_flow(S, e, ph[0]);
}

static int cmp_tally(const void *a, const void *b)
{
    const tally *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    if (!x->key || !y->key)
        return !x->key - !y->key; /* none last */
    return strcmp(x->key, y->key);
}

static int cmp_nstat(const void *a, const void *b)
{
    const nstat *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

static json_t *us(int64_t ns)
{
    return json_real((double)ns / 1000.0);
}

/* A JSON string of a byte string that may not be UTF-8 (a file name). */
static json_t *jstr_any(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    char *c = act_cli_xstrdup(s);
    for (char *p = c; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    j = json_string(c);
    free(c);
    return j;
}

static json_t *jstr_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *jpid(json_t *v)
{
    return v ? json_incref(v) : json_null();
}

static void set(json_t *o, const char *k, json_t *v)
{
    json_object_set_new(o, k, v ? v : json_null());
}

static const char *producer_of(json_t *root, json_t *events,
                               const char **version)
{
    *version = NULL;
    if (!json_is_object(root))
        return "chrome";
    /* actrace closes its event array with a process_labels "actrace X.Y.Z". */
    size_t n = json_array_size(events);
    json_t *lastev = n ? json_array_get(events, n - 1) : NULL;
    const char *lab = json_string_value(
        json_object_get(json_object_get(lastev, "args"), "labels"));
    if (lab && strncmp(lab, "actrace ", 8) == 0)
        *version = lab + 8;
    if (json_object_get(root, "actraceStats") || *version)
        return "actrace";
    if (json_object_get(root, "schemaVersion") ||
        json_object_get(root, "baseTimeNanoseconds") ||
        json_object_get(root, "deviceProperties") ||
        json_object_get(root, "distributedInfo"))
        return "kineto";
    return "chrome";
}

static json_t *build(const char *file, json_t *root, json_t *events)
{
    summ S;
    memset(&S, 0, sizeof S);
    const char *version;
    const char *producer = producer_of(root, events, &version);
    S.actrace = strcmp(producer, "actrace") == 0;
    size_t nev = json_array_size(events);
    for (size_t i = 0; i < nev; i++)
        add_event(&S, json_array_get(events, i));

    json_t *o = json_object();
    set(o, "file", jstr_any(file));
    json_t *tn = json_is_object(root) ? json_object_get(root, "traceName") : NULL;
    set(o, "trace_name", json_is_string(tn) ? json_incref(tn) : json_null());
    set(o, "producer", json_string(producer));
    if (version)
        set(o, "producer_version", json_string(version));
    json_t *base = json_is_object(root)
                       ? json_object_get(root, "baseTimeNanoseconds")
                       : NULL;
    set(o, "base_time_ns", json_is_number(base) ? json_incref(base) : json_null());
    set(o, "events", json_integer((json_int_t)nev));
    if (S.have_time) {
        json_t *t = json_object();
        set(t, "first_us", us(S.first));
        set(t, "last_us", us(S.last));
        set(t, "span_us", us(S.last - S.first));
        set(o, "time", t);
    } else {
        set(o, "time", json_null());
    }

    if (S.nph > 1)
        qsort(S.ph, S.nph, sizeof *S.ph, cmp_tally);
    json_t *phs = json_object();
    for (size_t i = 0; i < S.nph; i++)
        set(phs, S.ph[i].key ? S.ph[i].key : "", json_integer((json_int_t)S.ph[i].n));
    set(o, "phases", phs);
    if (S.ncat > 1)
        qsort(S.cat, S.ncat, sizeof *S.cat, cmp_tally);
    json_t *cats = json_array();
    for (size_t i = 0; i < S.ncat; i++) {
        json_t *c = json_object();
        set(c, "cat", jstr_or_null(S.cat[i].key));
        set(c, "count", json_integer((json_int_t)S.cat[i].n));
        json_array_append_new(cats, c);
    }
    set(o, "categories", cats);

    if (S.nnm > 1)
        qsort(S.nm, S.nnm, sizeof *S.nm, cmp_nstat);
    set(o, "x_names", json_integer((json_int_t)S.nnm));
    json_t *top = json_array();
    for (size_t i = 0; i < S.nnm && i < TOP_NAMES; i++) {
        json_t *n = json_object();
        set(n, "name", json_string(S.nm[i].name));
        set(n, "count", json_integer((json_int_t)S.nm[i].count));
        set(n, "total_us", us(S.nm[i].total));
        set(n, "mean_us",
            json_real((double)S.nm[i].total / 1000.0 / (double)S.nm[i].count));
        set(n, "max_us", us(S.nm[i].max));
        json_array_append_new(top, n);
    }
    set(o, "top_names", top);

    json_t *procs = json_array(), *devprocs = json_array();
    for (size_t p = 0; p < S.npr; p++) {
        json_t *j = json_object();
        set(j, "pid", jpid(S.pr[p].pid));
        set(j, "name", jstr_or_null(S.pr[p].name));
        set(j, "events", json_integer((json_int_t)S.pr[p].events));
        if (S.pr[p].is_device)
            set(j, "device", json_integer((json_int_t)S.pr[p].device));
        json_t *ts = json_array();
        for (size_t t = 0; t < S.nth; t++) {
            if (S.th[t].proc != p)
                continue;
            json_t *tj = json_object();
            set(tj, "tid", jpid(S.th[t].tid));
            set(tj, "name", jstr_or_null(S.th[t].name));
            set(tj, "events", json_integer((json_int_t)S.th[t].events));
            json_array_append_new(ts, tj);
        }
        set(j, "threads", ts);
        json_array_append_new(procs, j);
        if (S.pr[p].is_device) {
            json_t *d = json_object();
            set(d, "pid", jpid(S.pr[p].pid));
            set(d, "device", json_integer((json_int_t)S.pr[p].device));
            set(d, "name", jstr_or_null(S.pr[p].name));
            set(d, "streams", json_integer((json_int_t)S.pr[p].nthreads));
            set(d, "events", json_integer((json_int_t)S.pr[p].events));
            json_array_append_new(devprocs, d);
        }
    }
    set(o, "processes", procs);
    json_t *devs = json_object();
    json_t *props = json_is_object(root) ? json_object_get(root, "deviceProperties")
                                         : NULL;
    set(devs, "properties", json_is_array(props) ? json_incref(props) : json_array());
    set(devs, "processes", devprocs);
    set(o, "devices", devs);

    json_t *ctrs = json_array();
    for (size_t i = 0; i < S.nct; i++) {
        json_t *c = json_object();
        set(c, "pid", jpid(S.ct[i].pid));
        set(c, "name", jstr_or_null(S.ct[i].name));
        set(c, "samples", json_integer((json_int_t)S.ct[i].samples));
        json_t *ser = json_array();
        for (size_t k = 0; k < S.ct[i].ns; k++) {
            const series *s = &S.ct[i].s[k];
            json_t *sj = json_object();
            set(sj, "key", json_string(s->key));
            set(sj, "samples", json_integer((json_int_t)s->n));
            set(sj, "min", json_real(s->min));
            set(sj, "max", json_real(s->max));
            set(sj, "last", json_real(s->last));
            json_array_append_new(ser, sj);
        }
        set(c, "series", ser);
        json_array_append_new(ctrs, c);
        free(S.ct[i].s);
    }
    set(o, "counters", ctrs);

    uint64_t fs = 0, ft = 0, ff = 0, matched = 0, us_ = 0, uf = 0;
    for (size_t i = 0; i < S.nfl; i++) {
        uint64_t s = S.fl[i][0], f = S.fl[i][2], m = s < f ? s : f;
        fs += s;
        ft += S.fl[i][1];
        ff += f;
        matched += m;
        us_ += s - m;
        uf += f - m;
    }
    json_t *fl = json_object();
    set(fl, "starts", json_integer((json_int_t)fs));
    set(fl, "steps", json_integer((json_int_t)ft));
    set(fl, "finishes", json_integer((json_int_t)ff));
    set(fl, "matched", json_integer((json_int_t)matched));
    set(fl, "unmatched_starts", json_integer((json_int_t)us_));
    set(fl, "unmatched_finishes", json_integer((json_int_t)uf));
    set(o, "flows", fl);

    json_t *st = json_is_object(root) ? json_object_get(root, "actraceStats")
                                      : NULL;
    if (json_is_object(st))
        set(o, "actrace_stats", json_incref(st));

    act_cli_map *maps[] = {&S.phase_map, &S.cat_map, &S.name_map, &S.proc_map,
                           &S.thr_map, &S.ctr_map, &S.flow_map};
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++)
        act_cli_map_free(maps[i]);
    free(S.ph);
    free(S.cat);
    free(S.nm);
    free(S.pr);
    free(S.th);
    free(S.ct);
    free(S.fl);
    return o;
}

/* ---- text ------------------------------------------------------------------------ */

static void put(const char *s)
{
    act_cli_put_text(stdout, s ? s : "");
}

static void put_json(json_t *v)
{
    char buf[200];
    put(act_cli_json_text(v, buf, sizeof buf));
}

/* "name" quoted (for process/thread names), or nothing. */
static void put_qname(json_t *name)
{
    if (json_is_string(name)) {
        fputs(" \"", stdout);
        put(json_string_value(name));
        fputc('"', stdout);
    }
}

static void put_us(json_t *v)
{
    printf("%.3f", json_number_value(v));
}

static uint64_t u(json_t *o, const char *k)
{
    return (uint64_t)json_integer_value(json_object_get(o, k));
}

static const char *s_(uint64_t n)
{
    return n == 1 ? "" : "s";
}

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

static void render_stats(json_t *st)
{
    printf("\nactrace stats: %" PRIu64 " recorded, %" PRIu64 " dropped\n",
           u(st, "recorded"), u(st, "dropped"));
    if (json_object_get(st, "args_recorded"))
        printf("  args: %" PRIu64 " recorded, %" PRIu64 " dropped\n", u(st, "args_recorded"),
               u(st, "args_dropped"));
    const char *k;
    json_t *v;
    const char *titles[] = {"dropped_by_reason", "dropped_by_type"};
    for (int t = 0; t < 2; t++) {
        json_t *by = json_object_get(st, titles[t]);
        int any = 0;
        json_object_foreach(by, k, v) {
            if (!json_integer_value(v))
                continue;
            printf(any ? ", " : "  %s: ",
                   t == 0 ? "dropped by reason" : "dropped by type");
            any = 1;
            put(k);
            printf(" %" PRIu64, (uint64_t)json_integer_value(v));
        }
        if (any)
            fputc('\n', stdout);
    }
    if (json_object_get(st, "buffer_bytes"))
        printf("  buffer: %" PRIu64 " bytes held, limit %" PRIu64 "\n",
               u(st, "buffer_bytes"), u(st, "buffer_limit_bytes"));
    size_t i;
    json_array_foreach(json_object_get(st, "plugins"), i, v) {
        fputs("  plugin ", stdout);
        put(json_string_value(json_object_get(v, "name")));
        fputs(" (", stdout);
        put(json_string_value(json_object_get(v, "path")));
        printf("): %" PRIu64 " records rejected\n", u(v, "rejected"));
    }
}

static void render(json_t *o)
{
    size_t i;
    json_t *v;
    const char *k;
    fputs("file:        ", stdout);
    put(json_string_value(json_object_get(o, "file")));
    fputs("\ntrace name:  ", stdout);
    json_t *tn = json_object_get(o, "trace_name");
    put(json_is_string(tn) ? json_string_value(tn) : "(none)");
    fputs("\nproducer:    ", stdout);
    put(json_string_value(json_object_get(o, "producer")));
    json_t *pv = json_object_get(o, "producer_version");
    if (pv) {
        fputc(' ', stdout);
        put(json_string_value(pv));
    }
    fputs("\nbase time:   ", stdout);
    json_t *base = json_object_get(o, "base_time_ns");
    if (json_is_integer(base)) {
        json_int_t ns = json_integer_value(base);
        time_t sec = (time_t)(ns / 1000000000);
        struct tm tm;
        char when[64] = "";
        if (ns >= 0 && gmtime_r(&sec, &tm))
            strftime(when, sizeof when, " (%Y-%m-%d %H:%M:%S UTC)", &tm);
        printf("%" JSON_INTEGER_FORMAT " ns%s", ns, when);
    } else if (base && !json_is_null(base)) {
        put_json(base);
        fputs(" ns", stdout);
    } else {
        fputs("(none)", stdout);
    }
    printf("\nevents:      %" PRIu64 "\n", u(o, "events"));
    json_t *t = json_object_get(o, "time");
    fputs("time span:   ", stdout);
    if (json_is_object(t)) {
        put_us(json_object_get(t, "first_us"));
        fputs(" us to ", stdout);
        put_us(json_object_get(t, "last_us"));
        fputs(" us (", stdout);
        put_us(json_object_get(t, "span_us"));
        fputs(" us)\n", stdout);
    } else {
        fputs("(no timed events)\n", stdout);
    }

    fputs("\nevents by phase:\n", stdout);
    json_object_foreach(json_object_get(o, "phases"), k, v) {
        printf("  %10" PRIu64 "  ", (uint64_t)json_integer_value(v));
        if (*k) {
            put(k);
            printf(" (%s)\n", phase_desc(k));
        } else {
            fputs("(no ph)\n", stdout);
        }
    }
    json_t *cats = json_object_get(o, "categories");
    fputs("\nevents by category (metadata aside):\n", stdout);
    if (!json_array_size(cats))
        fputs("  none\n", stdout);
    json_array_foreach(cats, i, v) {
        printf("  %10" PRIu64 "  ", u(v, "count"));
        json_t *c = json_object_get(v, "cat");
        put(json_is_string(c) ? json_string_value(c) : "(no cat)");
        fputc('\n', stdout);
    }

    json_t *top = json_object_get(o, "top_names");
    printf("\ntop %zu of %" PRIu64
           " names by total duration (X events; times in us):\n",
           json_array_size(top), u(o, "x_names"));
    if (json_array_size(top))
        printf("  %10s %14s %12s %12s  %s\n", "count", "total", "mean", "max",
               "name");
    json_array_foreach(top, i, v) {
        printf("  %10" PRIu64 " %14.3f %12.3f %12.3f  ", u(v, "count"),
               json_number_value(json_object_get(v, "total_us")),
               json_number_value(json_object_get(v, "mean_us")),
               json_number_value(json_object_get(v, "max_us")));
        put(json_string_value(json_object_get(v, "name")));
        fputc('\n', stdout);
    }

    fputs("\nprocesses and threads:\n", stdout);
    json_t *procs = json_object_get(o, "processes");
    if (!json_array_size(procs))
        fputs("  none\n", stdout);
    json_array_foreach(procs, i, v) {
        fputs("  pid ", stdout);
        put_json(json_object_get(v, "pid"));
        put_qname(json_object_get(v, "name"));
        printf(": %" PRIu64 " event%s", u(v, "events"), s_(u(v, "events")));
        if (json_object_get(v, "device"))
            printf(" (device %" PRIu64 ")", u(v, "device"));
        fputc('\n', stdout);
        size_t j;
        json_t *th;
        json_array_foreach(json_object_get(v, "threads"), j, th) {
            fputs("    tid ", stdout);
            put_json(json_object_get(th, "tid"));
            put_qname(json_object_get(th, "name"));
            printf(": %" PRIu64 " event%s\n", u(th, "events"),
                   s_(u(th, "events")));
        }
    }

    json_t *devs = json_object_get(o, "devices");
    json_t *props = json_object_get(devs, "properties");
    json_t *dprocs = json_object_get(devs, "processes");
    fputs("\ndevices:", stdout);
    if (!json_array_size(props) && !json_array_size(dprocs))
        fputs(" none", stdout);
    fputc('\n', stdout);
    json_array_foreach(props, i, v) {
        fputs("  device ", stdout);
        put_json(json_object_get(v, "id"));
        fputs(":", stdout);
        json_t *pvv;
        json_object_foreach(v, k, pvv) {
            if (strcmp(k, "id") == 0)
                continue;
            fputc(' ', stdout);
            put(k);
            fputc('=', stdout);
            put_json(pvv);
        }
        fputc('\n', stdout);
    }
    json_array_foreach(dprocs, i, v) {
        printf("  device %" PRIu64 " events: pid ", u(v, "device"));
        put_json(json_object_get(v, "pid"));
        put_qname(json_object_get(v, "name"));
        printf(", %" PRIu64 " stream%s, %" PRIu64 " event%s\n",
               u(v, "streams"), s_(u(v, "streams")), u(v, "events"),
               s_(u(v, "events")));
    }

    json_t *ctrs = json_object_get(o, "counters");
    fputs("\ncounters:", stdout);
    fputs(json_array_size(ctrs) ? "\n" : " none\n", stdout);
    json_array_foreach(ctrs, i, v) {
        fputs("  ", stdout);
        put(json_string_value(json_object_get(v, "name")));
        fputs(" (pid ", stdout);
        put_json(json_object_get(v, "pid"));
        printf("): %" PRIu64 " sample%s\n", u(v, "samples"),
               s_(u(v, "samples")));
        size_t j;
        json_t *s;
        json_array_foreach(json_object_get(v, "series"), j, s) {
            fputs("    ", stdout);
            put(json_string_value(json_object_get(s, "key")));
            printf(": min %.15g, max %.15g, last %.15g\n",
                   json_number_value(json_object_get(s, "min")),
                   json_number_value(json_object_get(s, "max")),
                   json_number_value(json_object_get(s, "last")));
        }
    }

    json_t *fl = json_object_get(o, "flows");
    fputs("\nflows: ", stdout);
    if (!u(fl, "starts") && !u(fl, "steps") && !u(fl, "finishes"))
        fputs("none\n", stdout);
    else
        printf("%" PRIu64 " start%s, %" PRIu64 " step%s, %" PRIu64
               " finish%s; %" PRIu64 " matched pair%s, %" PRIu64
               " unmatched start%s, %" PRIu64 " unmatched finish%s\n",
               u(fl, "starts"), s_(u(fl, "starts")), u(fl, "steps"),
               s_(u(fl, "steps")), u(fl, "finishes"),
               u(fl, "finishes") == 1 ? "" : "es", u(fl, "matched"),
               s_(u(fl, "matched")), u(fl, "unmatched_starts"),
               s_(u(fl, "unmatched_starts")), u(fl, "unmatched_finishes"),
               u(fl, "unmatched_finishes") == 1 ? "" : "es");

    json_t *st = json_object_get(o, "actrace_stats");
    if (json_is_object(st))
        render_stats(st);
}

int act_cmd_summary(int argc, char **argv)
{
    int as_json = 0;
    const char *file = NULL;
    const act_cli_flag flags[] = {{"--json", NULL, &as_json}, {NULL, NULL, NULL}};
    int rc = act_cli_file_args("summary", argc, argv, flags, usage, &file);
    if (rc)
        return rc == 1 ? 0 : 2;
    char msg[512];
    json_t *root = act_cli_trace_load(file, msg, sizeof msg);
    if (!root) {
        fprintf(stderr, "%s: error: %s\n", file, msg);
        return 2;
    }
    json_t *events = act_cli_trace_events(root);
    if (!events) {
        fprintf(stderr,
                "%s: error: not a trace: the top level must be an array or "
                "an object with a \"traceEvents\" array\n",
                file);
        json_decref(root);
        return 2;
    }
    json_t *sum = build(file, root, events);
    if (as_json) {
        if (json_dumpf(sum, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) != 0) {
            json_decref(sum);
            json_decref(root);
            fprintf(stderr, "actrace summary: cannot write the output\n");
            return 1;
        }
        fputc('\n', stdout);
    } else {
        render(sum);
    }
    json_decref(sum);
    json_decref(root);
    return fflush(stdout) == 0 ? 0 : 1;
}

#endif /* ACT_CLI_HAVE_JANSSON */
