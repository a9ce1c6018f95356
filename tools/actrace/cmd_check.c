/* SPDX-License-Identifier: MIT */
/*
 * actrace check [--strict] [--quiet] FILE: validate the structure of a
 * Chrome Trace Event JSON file (actrace's, Kineto's or any other) by the
 * rules the viewers rely on; the same rules as the shared
 * trace-consumers/lint-trace.mjs (catapult, Perfetto, speedscope, DevTools),
 * in C. On standard output: one line per problem,
 *
 *   FILE: error: event #I (ph=P, name=N): MESSAGE
 *   FILE: warning: event #I (ph=P, name=N): MESSAGE
 *
 * sorted by event index (at most 50, then a count of the rest), then one
 * summary line: "FILE: ok (N events)", "FILE: ok (N events, W warnings)" or
 * "FILE: failed (N events, E errors, W warnings)". Exit 0 without errors,
 * 1 with errors (--strict: warnings are errors), 2 when FILE cannot be read
 * or is not JSON (message on standard error). --quiet prints only the
 * summary line.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "trace_read.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: actrace check [--strict] [--quiet] FILE\n");
}

#ifndef ACT_CLI_HAVE_JANSSON

int act_cmd_check(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 ||
                      strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "actrace check: " ACT_CLI_NO_JSON_MSG "\n");
    return 1;
}

#else

#define MAX_SHOWN 50

typedef struct problem {
    size_t ev;  /* event index; SIZE_MAX: the document */
    size_t seq; /* order found, to keep the sort stable */
    int warn;
    char *msg;
} problem;

/* A slice or a B/E event on one thread (times in ns). */
typedef struct item {
    size_t i;
    int64_t ts, end;
    char ph;
    const char *name;
} item;

typedef struct thr {
    uint32_t pid, tid;
    item *v;
    size_t n, cap;
    item *sl; /* closed slices, sorted by ts (for flows) */
    size_t nsl;
    int64_t *maxend; /* running max of sl[].end */
} thr;

typedef struct flow {
    size_t i;
    int64_t ts;
    char ph;
    int bp_e;
    size_t thread; /* SIZE_MAX: pid/tid invalid */
    char *key;     /* cat \x1f name \x1f id */
    size_t keylen;
} flow;

typedef struct checker {
    json_t *events;
    problem *p;
    size_t np, pcap;
    act_cli_map thread_map;
    thr *t;
    size_t nt, tcap;
    act_cli_map counter_map;
    char **ckeys; /* first key set of each counter */
    size_t nc, ccap;
    flow *fl;
    size_t nf, fcap;
} checker;

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static void add(checker *c, size_t ev, int warn, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    act_cli_grow(&c->p, &c->pcap, c->np, sizeof *c->p);
    c->p[c->np] = (problem){ev, c->np, warn, act_cli_xstrdup(buf)};
    c->np++;
}

#define E(i, ...) add(c, (i), 0, __VA_ARGS__)
#define W(i, ...) add(c, (i), 1, __VA_ARGS__)
#define TXT(v) act_cli_json_text((v), txt, sizeof txt)

/* "1000000.500": microseconds with 3 decimals. */
static const char *fmt_us(char *buf, size_t len, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    snprintf(buf, len, "%s%llu.%03llu", ns < 0 ? "-" : "",
             (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
    return buf;
}

/* More than 3 decimals (a fraction of a nanosecond)? Tolerates the error of
 * a double that holds a 3-decimal number. */
static int over3(double v)
{
    double s = v * 1000.0, r = nearbyint(s);
    return fabs(s - r) > fmax(1e-6, fabs(s) * 2e-15);
}

static size_t thread_of(checker *c, uint32_t pid, uint32_t tid)
{
    uint32_t k[2] = {pid, tid};
    int created;
    size_t *slot = act_cli_map_put(&c->thread_map, (const char *)k, sizeof k,
                                   c->nt, &created);
    if (created) {
        act_cli_grow(&c->t, &c->tcap, c->nt, sizeof *c->t);
        memset(&c->t[c->nt], 0, sizeof c->t[c->nt]);
        c->t[c->nt].pid = pid;
        c->t[c->nt].tid = tid;
        c->nt++;
    }
    return *slot;
}

static void thread_push(checker *c, size_t t, item it)
{
    thr *th = &c->t[t];
    act_cli_grow(&th->v, &th->cap, th->n, sizeof *th->v);
    th->v[th->n++] = it;
}

static int is_hex_id(const char *s)
{
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!strchr("0123456789abcdefABCDEF", *s))
            return 0;
    return 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The sorted key set of a counter's args, comma-separated. */
static char *key_set(json_t *args)
{
    size_t n = json_object_size(args), len = 1, k = 0;
    const char **keys = act_cli_xcalloc(n, sizeof *keys);
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v) {
        keys[k++] = key;
        len += strlen(key) + 1;
    }
    if (k > 1)
        qsort(keys, k, sizeof *keys, cmp_str);
    char *out = act_cli_xmalloc(len), *p = out;
    *p = '\0';
    for (size_t i = 0; i < k; i++) {
        size_t l = strlen(keys[i]);
        if (i)
            *p++ = ',';
        memcpy(p, keys[i], l);
        p += l;
        *p = '\0';
    }
    free(keys);
    return out;
}

static void check_counter(checker *c, size_t i, json_t *e, json_t *args)
{
    char txt[160];
    json_t *v, *id = json_object_get(e, "id");
    const char *key;
    size_t nkeys = json_is_object(args) ? json_object_size(args) : 0;
    if (!nkeys) {
        E(i, "counter needs at least one args key (one series per key)");
        return;
    }
    json_object_foreach(args, key, v) {
        if (!json_is_number(v))
            E(i, "counter series \"%s\" value must be a number (got %s)", key,
              TXT(v));
    }
    if (json_is_number(id))
        W(i, "numeric counter id: Perfetto ignores it (only string ids split "
             "counters); use \"id\":\"<str>\" or put it in the name");
    /* Identity: pid, name, id, as the viewers see them. */
    char pid[64], name[400], ids[64], ck[600];
    act_cli_json_text(json_object_get(e, "pid"), pid, sizeof pid);
    act_cli_json_text(json_object_get(e, "name"), name, sizeof name);
    act_cli_json_text(id, ids, sizeof ids);
    int n = snprintf(ck, sizeof ck, "%s\x1f%s\x1f%s", pid, name, ids);
    size_t cklen = n < (int)sizeof ck ? (size_t)n : sizeof ck - 1;
    int created;
    size_t *slot = act_cli_map_put(&c->counter_map, ck, cklen, c->nc,
                                   &created);
    char *keys = key_set(args);
    if (created) {
        act_cli_grow(&c->ckeys, &c->ccap, c->nc, sizeof *c->ckeys);
        c->ckeys[c->nc++] = keys;
        return;
    }
    if (strcmp(c->ckeys[*slot], keys) != 0)
        E(i, "counter %s series keys changed (%s -> %s); chrome://tracing "
             "keeps only the first event's keys",
          name, c->ckeys[*slot], keys);
    free(keys);
}

static void check_flow(checker *c, size_t i, json_t *e, char ph, int ts_ok,
                       int64_t ts, size_t thread)
{
    char txt[160];
    json_t *id = json_object_get(e, "id"), *cat = json_object_get(e, "cat");
    json_t *bp = json_object_get(e, "bp");
    if (!id)
        E(i, "flow event needs id");
    else if (json_is_string(id) && !is_hex_id(json_string_value(id)))
        E(i, "flow id %s: Perfetto parses string flow ids as hex "
             "(flow_invalid_id); use an integer",
          TXT(id));
    else if (json_is_string(id))
        W(i, "flow id %s is a string: use an integer", TXT(id));
    else if (!json_is_integer(id) &&
             !(json_is_real(id) &&
               json_real_value(id) == floor(json_real_value(id))))
        E(i, "flow id %s must be an integer", TXT(id));
    if (!json_is_string(cat))
        E(i, "flow event needs cat (flow identity is cat+name+id)");
    if (ph == 'f' && bp && !(json_is_string(bp) &&
                             strcmp(json_string_value(bp), "e") == 0))
        E(i, "bp must be \"e\" if present (got %s)", TXT(bp));
    else if (ph == 'f' && !bp)
        W(i, "f without \"bp\":\"e\" binds to the next slice that starts "
             "after it, not to the enclosing one");
    if (!id || !ts_ok)
        return;
    char name[400], ids[64], key[900];
    json_t *jn = json_object_get(e, "name");
    if (json_is_string(jn))
        snprintf(name, sizeof name, "%s", json_string_value(jn));
    else
        act_cli_json_text(jn, name, sizeof name);
    act_cli_json_text(id, ids, sizeof ids);
    int n = snprintf(key, sizeof key, "%s\x1f%s\x1f%s",
                     json_is_string(cat) ? json_string_value(cat) : "",
                     name, ids);
    size_t keylen = n < (int)sizeof key ? (size_t)n : sizeof key - 1;
    act_cli_grow(&c->fl, &c->fcap, c->nf, sizeof *c->fl);
    flow *f = &c->fl[c->nf++];
    f->i = i;
    f->ts = ts;
    f->ph = ph;
    f->bp_e = json_is_string(bp) && strcmp(json_string_value(bp), "e") == 0;
    f->thread = thread;
    f->key = act_cli_xmalloc(keylen + 1);
    memcpy(f->key, key, keylen);
    f->key[keylen] = '\0';
    f->keylen = keylen;
}

static void check_meta(checker *c, size_t i, json_t *e, json_t *args)
{
    char txt[160];
    json_t *name = json_object_get(e, "name");
    const char *n = json_string_value(name);
    if (!n)
        return; /* "missing name" already */
    if (strcmp(n, "process_name") == 0 || strcmp(n, "thread_name") == 0) {
        if (!json_is_string(json_object_get(args, "name")))
            E(i, "%s needs args.name string (got %s)", n,
              TXT(json_object_get(args, "name")));
    } else if (strcmp(n, "process_sort_index") == 0 ||
               strcmp(n, "thread_sort_index") == 0) {
        json_t *si = json_object_get(args, "sort_index");
        if (!json_is_integer(si) &&
            !(json_is_real(si) &&
              json_real_value(si) == floor(json_real_value(si))))
            E(i, "%s needs integer args.sort_index (got %s)", n, TXT(si));
    } else if (strcmp(n, "process_labels") != 0) {
        W(i, "unknown metadata name \"%s\"", n);
    }
}

static void check_event(checker *c, size_t i, json_t *e)
{
    char txt[160];
    if (!json_is_object(e)) {
        E(i, "event is not an object (got %s)", TXT(e));
        return;
    }
    if (json_object_size(e) == 0)
        return; /* {} is tolerated by every consumer */
    json_t *jph = json_object_get(e, "ph");
    if (!json_is_string(jph) || json_string_length(jph) != 1 ||
        json_string_value(jph)[0] == '\0') {
        if (jph)
            E(i, "bad ph %s", TXT(jph));
        else
            E(i, "no ph");
        return;
    }
    char ph = json_string_value(jph)[0];
    if (!strchr("BEXiICsftMbenPONDR", ph))
        W(i, "phase \"%c\" is not handled by the checked consumers", ph);

    json_t *jts = json_object_get(e, "ts");
    int64_t ts = 0;
    int ts_ok = act_cli_json_ns(jts, &ts);
    if (ph != 'M' && !json_is_number(jts))
        E(i, "ts must be a finite number of microseconds (got %s)", TXT(jts));
    if (json_is_number(jts)) {
        if (json_number_value(jts) < 0)
            W(i, "negative ts");
        if (over3(json_number_value(jts)))
            W(i, "ts %s has more than 3 decimals (below a nanosecond)",
              TXT(jts));
    }

    uint32_t pid = 0, tid = 0;
    json_t *jpid = json_object_get(e, "pid"), *jtid = json_object_get(e, "tid");
    int pid_ok = act_cli_json_id(jpid, &pid);
    int tid_ok = (ph == 'C' || ph == 'M') ? 1 : act_cli_json_id(jtid, &tid);
    if (!pid_ok && !tid_ok) {
        char t2[160];
        E(i, "pid %s and tid %s must be integers in 0..2^32-1 (speedscope "
             "crashes on string pids; Perfetto makes them names)",
          TXT(jpid), act_cli_json_text(jtid, t2, sizeof t2));
    } else if (!pid_ok) {
        E(i, "pid %s must be an integer in 0..2^32-1 (speedscope crashes on "
             "string pids; Perfetto makes strings names, negative/huge ones "
             "0)",
          TXT(jpid));
    } else if (!tid_ok) {
        E(i, "tid %s must be an integer in 0..2^32-1", TXT(jtid));
    }
    tid_ok = act_cli_json_id(jtid, &tid);
    size_t thread = pid_ok && tid_ok ? thread_of(c, pid, tid) : SIZE_MAX;

    json_t *jname = json_object_get(e, "name");
    const char *name = json_string_value(jname);
    if (ph != 'E' && (!name || !*name))
        E(i, "missing name");
    json_t *cat = json_object_get(e, "cat");
    if (cat && !json_is_string(cat))
        E(i, "cat must be a string (got %s)", TXT(cat));
    else if (!cat && ph != 'M')
        W(i, "no cat (every event should have a category)");
    json_t *args = json_object_get(e, "args");
    if (args && !json_is_object(args))
        E(i, "args must be an object (got %s)", TXT(args));

    switch (ph) {
    case 'X': {
        json_t *jdur = json_object_get(e, "dur");
        int64_t dur;
        if (!act_cli_json_ns(jdur, &dur) || json_number_value(jdur) < 0) {
            E(i, "X needs dur >= 0 (got %s)", TXT(jdur));
            break;
        }
        if (over3(json_number_value(jdur)))
            W(i, "dur %s has more than 3 decimals (below a nanosecond)",
              TXT(jdur));
        if (ts_ok && thread != SIZE_MAX)
            thread_push(c, thread, (item){i, ts, ts + dur, 'X', name});
        break;
    }
    case 'B':
    case 'E':
        if (ts_ok && thread != SIZE_MAX)
            thread_push(c, thread, (item){i, ts, ts, ph, name});
        break;
    case 'i':
    case 'I': {
        json_t *s = json_object_get(e, "s");
        const char *sv = json_string_value(s);
        if (s && !(sv && (strcmp(sv, "g") == 0 || strcmp(sv, "p") == 0 ||
                          strcmp(sv, "t") == 0)))
            E(i, "instant scope s must be \"g\", \"p\" or \"t\" (got %s)",
              TXT(s));
        break;
    }
    case 'C': check_counter(c, i, e, args); break;
    case 's':
    case 't':
    case 'f': check_flow(c, i, e, ph, ts_ok, ts, thread); break;
    case 'M': check_meta(c, i, e, args); break;
    default: break;
    }
}

static int cmp_be(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Start, then the longer (the parent) first, then file order. */
static int cmp_slice(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static const char *q(const char *s)
{
    return s ? s : "";
}

/* Slices of one thread must nest perfectly (B/E paired first). */
static void check_nesting(checker *c, thr *t)
{
    char a[32], b[32], pe[32];
    item *be = act_cli_xcalloc(t->n, sizeof *be), *sl;
    size_t nbe = 0, nsl = 0;
    for (size_t k = 0; k < t->n; k++)
        if (t->v[k].ph != 'X')
            be[nbe++] = t->v[k];
    sl = act_cli_xcalloc(t->n, sizeof *sl);
    if (nbe > 1)
        qsort(be, nbe, sizeof *be, cmp_be);
    item *stack = act_cli_xcalloc(nbe, sizeof *stack);
    size_t depth = 0;
    for (size_t k = 0; k < nbe; k++) {
        if (be[k].ph == 'B') {
            stack[depth++] = be[k];
            continue;
        }
        if (!depth) {
            E(be[k].i, "thread %u/%u: E without matching B", t->pid, t->tid);
            continue;
        }
        item top = stack[--depth];
        if (be[k].name && top.name && strcmp(be[k].name, top.name) != 0)
            E(be[k].i, "thread %u/%u: E \"%s\" closes B \"%s\" (#%zu)",
              t->pid, t->tid, be[k].name, top.name, top.i);
        sl[nsl++] = (item){top.i, top.ts, be[k].ts, 'X', top.name};
    }
    for (size_t k = 0; k < depth; k++)
        W(stack[k].i,
          "thread %u/%u: B \"%s\" never ended (viewers close it at the "
          "trace end)",
          t->pid, t->tid, q(stack[k].name));
    for (size_t k = 0; k < t->n; k++)
        if (t->v[k].ph == 'X')
            sl[nsl++] = t->v[k];
    if (nsl > 1)
        qsort(sl, nsl, sizeof *sl, cmp_slice);
    depth = 0;
    stack = act_cli_xrealloc(stack, (nsl ? nsl : 1) * sizeof *stack);
    for (size_t k = 0; k < nsl; k++) {
        const item *s = &sl[k];
        while (depth && stack[depth - 1].end <= s->ts)
            depth--;
        if (depth && s->end > stack[depth - 1].end) {
            const item *p = &stack[depth - 1];
            E(s->i,
              "thread %u/%u: \"%s\" [%s, %s] partially overlaps \"%s\" "
              "(#%zu), which ends at %s; slices must nest (Perfetto moves it "
              "to an overflow track)",
              t->pid, t->tid, q(s->name), fmt_us(a, sizeof a, s->ts),
              fmt_us(b, sizeof b, s->end), q(p->name), p->i,
              fmt_us(pe, sizeof pe, p->end));
        } else if (depth && stack[depth - 1].ts == s->ts &&
                   stack[depth - 1].i > s->i) {
            W(s->i,
              "thread %u/%u: \"%s\" starts with its parent \"%s\" (#%zu) but "
              "comes first in the file; Perfetto keeps file order for equal "
              "ts and sees an overlap",
              t->pid, t->tid, q(s->name), q(stack[depth - 1].name),
              stack[depth - 1].i);
        }
        stack[depth++] = *s;
    }
    free(stack);
    free(be);
    t->sl = sl;
    t->nsl = nsl;
    t->maxend = act_cli_xcalloc(nsl, sizeof *t->maxend);
    for (size_t k = 0; k < nsl; k++)
        t->maxend[k] = k && t->maxend[k - 1] > sl[k].end ? t->maxend[k - 1]
                                                        : sl[k].end;
}

/* Number of slices of @p t that start at or before @p ts. */
static size_t starts_upto(const thr *t, int64_t ts)
{
    size_t lo = 0, hi = t->nsl;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->sl[mid].ts <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int cmp_flow(const void *a, const void *b)
{
    const flow *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* "cat|name|id" for messages. */
static const char *flow_desc(const flow *f, char *buf, size_t len)
{
    snprintf(buf, len, "%s", f->key);
    for (char *p = buf; *p; p++)
        if (*p == '\x1f')
            *p = '|';
    return buf;
}

static void check_flows(checker *c)
{
    act_cli_map started = {0};
    char d[640];
    if (c->nf > 1)
        qsort(c->fl, c->nf, sizeof *c->fl, cmp_flow);
    for (size_t k = 0; k < c->nf; k++) {
        const flow *f = &c->fl[k];
        const thr *t = f->thread == SIZE_MAX ? NULL : &c->t[f->thread];
        size_t upto = t ? starts_upto(t, f->ts) : 0;
        int encl = upto && t->maxend[upto - 1] >= f->ts;
        int next = t && t->nsl && t->sl[t->nsl - 1].ts >= f->ts;
        int at_start = upto && t->sl[upto - 1].ts == f->ts;
        size_t *slot = act_cli_map_put(&started, f->key, f->keylen, 0, NULL);
        if (f->ph == 's') {
            if (*slot)
                W(f->i, "flow %s started again before it ended",
                  flow_desc(f, d, sizeof d));
            *slot = f->i + 1;
            if (!encl)
                E(f->i, "flow start is not inside a slice on its thread");
        } else if (!*slot) {
            E(f->i, "flow %c for %s has no earlier s (same cat, name and id)",
              f->ph, flow_desc(f, d, sizeof d));
        } else {
            if (f->ph == 'f')
                *slot = 0;
            if (f->bp_e ? !encl : !next)
                E(f->i, "flow %c binds to no slice (%s)", f->ph,
                  f->bp_e ? "no enclosing slice"
                          : "no slice starts at/after ts; add \"bp\":\"e\"?");
        }
        if (!at_start)
            W(f->i, "flow %c: DevTools only draws flows whose ts, pid and tid "
                    "equal a slice start",
              f->ph);
    }
    for (size_t k = 0; k < started.cap; k++)
        if (started.keys[k] && started.vals[k])
            W(started.vals[k] - 1, "flow started but never finished (no f)");
    act_cli_map_free(&started);
}

static int cmp_problem(const void *a, const void *b)
{
    const problem *x = a, *y = b;
    /* Document-level problems (SIZE_MAX) last would hide them: first. */
    size_t ex = x->ev == SIZE_MAX ? 0 : x->ev + 1;
    size_t ey = y->ev == SIZE_MAX ? 0 : y->ev + 1;
    if (ex != ey)
        return ex < ey ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* "(ph=X, name=aten::mm)" with control bytes escaped and long names cut. */
static void put_event_id(FILE *f, json_t *e, size_t i)
{
    char buf[200];
    json_t *ph = json_object_get(e, "ph"), *name = json_object_get(e, "name");
    fprintf(f, "event #%zu (ph=", i);
    if (json_is_string(ph))
        act_cli_put_text(f, json_string_value(ph));
    else
        fputs(ph ? act_cli_json_text(ph, buf, sizeof buf) : "?", f);
    fputs(", name=", f);
    if (json_is_string(name)) {
        const char *s = json_string_value(name);
        if (strlen(s) > 120) {
            memcpy(buf, s, 117);
            memcpy(buf + 117, "...", 4);
            s = buf;
        }
        act_cli_put_text(f, s);
    } else {
        fputs(name ? act_cli_json_text(name, buf, sizeof buf) : "?", f);
    }
    fputc(')', f);
}

static void checker_free(checker *c)
{
    for (size_t k = 0; k < c->np; k++)
        free(c->p[k].msg);
    free(c->p);
    for (size_t k = 0; k < c->nt; k++) {
        free(c->t[k].v);
        free(c->t[k].sl);
        free(c->t[k].maxend);
    }
    free(c->t);
    act_cli_map_free(&c->thread_map);
    for (size_t k = 0; k < c->nc; k++)
        free(c->ckeys[k]);
    free(c->ckeys);
    act_cli_map_free(&c->counter_map);
    for (size_t k = 0; k < c->nf; k++)
        free(c->fl[k].key);
    free(c->fl);
}

static const char *plural(size_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

int act_cmd_check(int argc, char **argv)
{
    int strict = 0, quiet = 0;
    const char *file = NULL;
    const act_cli_flag flags[] = {{"--strict", NULL, &strict},
                                  {"--quiet", "-q", &quiet},
                                  {NULL, NULL, NULL}};
    int rc = act_cli_file_args("check", argc, argv, flags, usage, &file);
    if (rc)
        return rc == 1 ? 0 : 2;
    char msg[512];
    json_t *root = act_cli_trace_load(file, msg, sizeof msg);
    if (!root) {
        fprintf(stderr, "%s: error: %s\n", file, msg);
        return 2;
    }

    checker cc, *c = &cc;
    memset(c, 0, sizeof *c);
    c->events = act_cli_trace_events(root);
    size_t nev = c->events ? json_array_size(c->events) : 0;
    if (!c->events)
        E(SIZE_MAX, "top level must be an array or an object with a "
                    "\"traceEvents\" array");
    json_t *dtu = json_is_object(root) ? json_object_get(root, "displayTimeUnit")
                                       : NULL;
    if (dtu && !(json_is_string(dtu) &&
                 (strcmp(json_string_value(dtu), "ms") == 0 ||
                  strcmp(json_string_value(dtu), "ns") == 0)))
        E(SIZE_MAX, "displayTimeUnit must be \"ms\" or \"ns\" (catapult "
                    "throws otherwise)");
    if (c->events && nev == 0)
        W(SIZE_MAX, "no events (speedscope and DevTools show nothing)");
    for (size_t i = 0; i < nev; i++)
        check_event(c, i, json_array_get(c->events, i));
    for (size_t k = 0; k < c->nt; k++)
        check_nesting(c, &c->t[k]);
    check_flows(c);

    if (c->np > 1)
        qsort(c->p, c->np, sizeof *c->p, cmp_problem);
    size_t nerr = 0, nwarn = 0;
    for (size_t k = 0; k < c->np; k++) {
        if (c->p[k].warn && !strict)
            nwarn++;
        else
            nerr++;
    }
    if (!quiet) {
        size_t shown = c->np < MAX_SHOWN ? c->np : MAX_SHOWN;
        for (size_t k = 0; k < shown; k++) {
            const problem *p = &c->p[k];
            fprintf(stdout, "%s: %s: ", file,
                    p->warn && !strict ? "warning" : "error");
            if (p->ev != SIZE_MAX) {
                put_event_id(stdout, json_array_get(c->events, p->ev), p->ev);
                fputs(": ", stdout);
            }
            act_cli_put_text(stdout, p->msg);
            fputc('\n', stdout);
        }
        if (c->np > shown)
            printf("%s: ... and %zu more %s not shown\n", file,
                   c->np - shown, plural(c->np - shown, "problem", "problems"));
    }
    if (nerr)
        printf("%s: failed (%zu %s, %zu %s, %zu %s)\n", file, nev,
               plural(nev, "event", "events"), nerr,
               plural(nerr, "error", "errors"), nwarn,
               plural(nwarn, "warning", "warnings"));
    else if (nwarn)
        printf("%s: ok (%zu %s, %zu %s)\n", file, nev,
               plural(nev, "event", "events"), nwarn,
               plural(nwarn, "warning", "warnings"));
    else
        printf("%s: ok (%zu %s)\n", file, nev, plural(nev, "event", "events"));
    checker_free(c);
    json_decref(root);
    if (fflush(stdout) != 0)
        return 2;
    return nerr ? 1 : 0;
}

#endif /* ACT_CLI_HAVE_JANSSON */
