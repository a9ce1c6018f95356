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
 * or is not JSON (message on standard error, with the byte offset and the
 * event index). --quiet prints only the summary line.
 *
 * One streaming pass (src/reader): each event is checked when it is read
 * and forgotten. What outlives an event is only what the cross-event rules
 * need (no event text):
 *   - per thread whose X slices come in start order (as actrace and Kineto
 *     write them): the stack of open slices (the nesting rule runs as they
 *     come) and a ring of the last RING_MAX slices (start, running max of
 *     ends) for flow events that come after later slices. A B/E event or a
 *     slice out of order switches the thread to buffered mode: its slices
 *     from then on (seeded by the ring and the stack) are sorted and
 *     checked at the end (see thr);
 *   - per open flow identity, its records until one s..f chain is whole and
 *     bound (then checked and freed);
 *   - per counter identity, its first key set;
 *   - the first problems in event order (at most a few hundred; the rest
 *     are only counted).
 * ACT_CHECK_BUFFER_ALL=1 (test hook) runs everything the whole-file way.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "check_pftrace.h"
#include "cli.h"
#include "trace_read.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: actrace check [--strict] [--quiet] FILE\n"
               "  --strict  warnings are errors (e.g. the string pids every\n"
               "            torch.profiler trace has: speedscope cannot read them)\n"
               "  --quiet   only the summary line\n");
}


#define MAX_SHOWN 50
#define NONAME UINT32_MAX

typedef struct problem {
    uint64_t ev;  /* event index; UINT64_MAX: the document */
    uint64_t seq; /* order found, to keep the sort stable */
    int warn;
    char *msg;    /* "event #I (ph=P, name=N): MESSAGE" or "MESSAGE" */
} problem;

/* A slice or a B/E event on one thread (times in ns). */
typedef struct item {
    uint64_t i;
    int64_t ts, end;
    uint32_t name; /* interned; NONAME: none */
    char ph;
    char seeded;  /* checked online before its thread went out of order */
    char onl_err; /* the online check reported its partial overlap */
} item;

/* A flow query waiting for its thread's next slice start (online mode). */
typedef struct query {
    int64_t ts;
    size_t flow;
} query;

/* One thread. Online mode (the common case: only X slices, in start order
 * as actrace and Kineto write them): the nesting rule runs as events come
 * with a stack of the open slices, and a ring of the last RING_MAX slices
 * (start, running max of ends) answers flow events that come a little after
 * their slices. The first B/E event or slice out of order switches the
 * thread to buffered mode: from then on its slices are kept (the ring and
 * the stack seed them) and checked at the end, as a sort. */
typedef struct thr {
    uint32_t pid, tid;
    int buffered;
    /* online */
    item *stk;
    size_t depth, stkcap;
    item *ring;
    int64_t *rmax; /* running max of ends, up to and including ring[k] */
    size_t rcap, rhead, rn;
    uint64_t dropped;    /* slices pushed out of the ring */
    int64_t dropped_max; /* their max end */
    int64_t last_ts, last_end, maxend;
    uint64_t nslices;
    int64_t bound_min, bound_max; /* ts range of the flows decided with a
                                   * binding missing (max INT64_MIN: none) */
    query *pq; /* min-heap by ts */
    size_t npq, pqcap;
    /* buffered */
    item *v;
    size_t n, cap;
    int64_t seed_min;     /* start of the oldest seeded slice */
    size_t *bq;           /* flows whose binding is decided at the end */
    size_t nbq, bqcap;
    item *sl; /* closed slices, sorted by ts (for flows) */
    size_t nsl;
    int64_t *maxend_arr; /* running max of sl[].end */
} thr;

#define RING_MAX ((size_t)1 << 14)
#define NIL SIZE_MAX

/* A flow event. Its identity (cat, name, id) is kept as interned texts
 * (few distinct cats and names) and the id as a number when it is one, so
 * a flow costs its record, not a string; `h` hashes the identity. Records
 * live only while their identity is open (not yet matched s..f). */
typedef struct flow {
    uint64_t i;
    int64_t ts;
    uint64_t h;
    int64_t idnum;           /* when idtext is NONAME */
    uint32_t cat, nametext, idtext; /* interned texts */
    uint32_t name;           /* the event's name (for messages) */
    size_t thread;           /* SIZE_MAX: pid/tid invalid */
    size_t next;             /* next record of the identity, by (ts, i) */
    char ph;
    char bp_e;
    char resolved; /* encl/nxt/at_start known */
    char encl, nxt, at_start;
} flow;

/* Open flow identities: h -> list of records (sorted by ts, index). */
typedef struct ident {
    uint64_t h; /* 0: empty slot */
    size_t head;
    uint32_t nrec, nres;
} ident;

typedef struct checker {
    int strict;
    problem *p;
    size_t np, pcap;
    uint64_t seq, nerr, nwarn;
    act_cli_map thread_map;
    thr *t;
    size_t nt, tcap;
    act_cli_map counter_map;
    char **ckeys; /* first key set of each counter */
    size_t nc, ccap;
    flow *fl; /* pool of open flow records; free ones chained by next */
    size_t nf, fcap, ffree;
    ident *id;
    size_t idcap, nid;
    int defer_all;   /* ACT_CHECK_BUFFER_ALL: the whole-file algorithm */
    uint64_t approx; /* checks limited by the ring (see thr) */
    act_cli_map name_map; /* interned names and flow identity texts */
    const char **names;
    size_t nnames, namecap;
    /* Direct-mapped caches of the last threads and names looked up (most
     * events repeat a few of each); tc_idx: index + 1, len: length + 1
     * (0: empty). */
    uint64_t tc_key[64];
    size_t tc_idx[64];
    struct { uint64_t w; size_t len; uint32_t id; } nc_[256];
    /* The event being checked (for messages). */
    const act__jv *e;
    uint64_t ev;
} checker;

static uint32_t intern(act_cli_map *m, const char ***v, size_t *n, size_t *cap,
                       const char *s, size_t len)
{
    int created;
    size_t *slot = act_cli_map_put(m, s, len, *n, &created);
    if (created) {
        act_cli_grow(v, cap, *n, sizeof **v);
        (*v)[*n] = NULL; /* set below, from the map's copy */
        (*n)++;
    }
    return (uint32_t)*slot;
}

static uint32_t text_id(checker *c, const char *s, size_t len)
{
    uint32_t id = intern(&c->name_map, &c->names, &c->nnames, &c->namecap, s, len);
    if (!c->names[id])
        c->names[id] = act_cli_map_key(&c->name_map, s, len);
    return id;
}

static uint32_t name_id(checker *c, const act__jv *name)
{
    if (!name || name->type != ACT__J_STRING)
        return NONAME;
    /* Names are seen up to a NUL, as C strings. */
    size_t len = strlen(name->s);
    uint64_t w = 0;
    memcpy(&w, name->s, len < 8 ? len : 8);
    w ^= (uint64_t)len * 0x9e3779b97f4a7c15u;
    size_t j = (size_t)((w * 0xff51afd7ed558ccdu) >> 56);
    if (c->nc_[j].len == len + 1 && c->nc_[j].w == w &&
        memcmp(c->names[c->nc_[j].id], name->s, len) == 0)
        return c->nc_[j].id;
    uint32_t id = text_id(c, name->s, len);
    c->nc_[j].w = w;
    c->nc_[j].len = len + 1;
    c->nc_[j].id = id;
    return id;
}

static const char *name_of(const checker *c, uint32_t id)
{
    return id == NONAME ? NULL : c->names[id];
}

static int cmp_problem(const void *a, const void *b)
{
    const problem *x = a, *y = b;
    /* Document-level problems (UINT64_MAX) last would hide them: first. */
    uint64_t ex = x->ev == UINT64_MAX ? 0 : x->ev + 1;
    uint64_t ey = y->ev == UINT64_MAX ? 0 : y->ev + 1;
    if (ex != ey)
        return ex < ey ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Keep only the first MAX_SHOWN problems in (event, found) order. */
static void trim(checker *c)
{
    if (c->np > 1) /* qsort's pointer must not be NULL, even for none */
        act_cli_sort(c->p, c->np, sizeof *c->p, cmp_problem);
    for (size_t k = MAX_SHOWN; k < c->np; k++)
        free(c->p[k].msg);
    if (c->np > MAX_SHOWN)
        c->np = MAX_SHOWN;
}

/* "event #I (ph=X, name=aten::mm)" with control bytes escaped and long names
 * cut, from the ph and name as written. */
static void event_desc(char *buf, size_t len, uint64_t i, const act__jv *ph,
                       const act__jv *name, char phc, const char *nm)
{
    char a[200], b[200];
    if (ph && ph->type == ACT__J_STRING)
        snprintf(a, sizeof a, "%s", ph->s);
    else if (ph)
        act_cli_json_text(ph, a, sizeof a);
    else if (phc)
        snprintf(a, sizeof a, "%c", phc);
    else
        snprintf(a, sizeof a, "?");
    const char *n = NULL;
    if (name && name->type == ACT__J_STRING)
        n = name->s;
    else if (name)
        n = act_cli_json_text(name, b, sizeof b);
    else
        n = nm;
    if (!n) {
        n = "?";
    } else if (strlen(n) > 120 && n != b) {
        memcpy(b, n, 117);
        memcpy(b + 117, "...", 4);
        n = b;
    }
    snprintf(buf, len, "event #%" PRIu64 " (ph=%s, name=%s): ", i, a, n);
}

#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
static void add_at(checker *c, uint64_t ev, int warn, char ph, uint32_t name,
                   const char *fmt, ...)
{
    char head[600] = "", buf[1024];
    if (warn && !c->strict)
        c->nwarn++;
    else
        c->nerr++;
    if (ev != UINT64_MAX) {
        if (ev == c->ev && c->e)
            event_desc(head, sizeof head, ev, act__jv_get(c->e, "ph"),
                       act__jv_get(c->e, "name"), 0, NULL);
        else
            event_desc(head, sizeof head, ev, NULL, NULL, ph, name_of(c, name));
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t hl = strlen(head), bl = strlen(buf);
    char *msg = act_cli_xmalloc(hl + bl + 1);
    memcpy(msg, head, hl);
    memcpy(msg + hl, buf, bl + 1);
    act_cli_grow(&c->p, &c->pcap, c->np, sizeof *c->p);
    c->p[c->np++] = (problem){ev, c->seq++, warn, msg};
    if (c->np >= 8 * MAX_SHOWN)
        trim(c);
}

#define E(i, ...) add_at(c, (i), 0, 0, NONAME, __VA_ARGS__)
#define W(i, ...) add_at(c, (i), 1, 0, NONAME, __VA_ARGS__)
#define TXT(v) act_cli_json_text((v), txt, sizeof txt)

/* "1000000.500": microseconds with 3 decimals. */
static const char *fmt_us(char *buf, size_t len, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    snprintf(buf, len, "%s%llu.%03llu", ns < 0 ? "-" : "",
             (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
    return buf;
}

static size_t thread_of(checker *c, uint32_t pid, uint32_t tid)
{
    uint64_t key = (uint64_t)pid << 32 | tid;
    size_t j = (size_t)(((key + 1) * 0x9e3779b97f4a7c15u) >> 58);
    if (c->tc_idx[j] && c->tc_key[j] == key)
        return c->tc_idx[j] - 1;
    c->tc_key[j] = key;
    uint32_t k[2] = {pid, tid};
    int created;
    size_t *slot = act_cli_map_put(&c->thread_map, (const char *)k, sizeof k,
                                   c->nt, &created);
    if (created) {
        act_cli_grow(&c->t, &c->tcap, c->nt, sizeof *c->t);
        memset(&c->t[c->nt], 0, sizeof c->t[c->nt]);
        c->t[c->nt].pid = pid;
        c->t[c->nt].tid = tid;
        c->t[c->nt].bound_max = INT64_MIN;
        c->nt++;
    }
    c->tc_idx[j] = *slot + 1;
    return *slot;
}

static void slice_add(checker *c, size_t t, item it);
static void flow_add(checker *c, const flow *rec);

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

/* The sorted key set of a counter's args, comma-separated (duplicate keys
 * count once, as a JavaScript object sees them). */
static char *key_set(const act__jv *args)
{
    size_t n = args->len, len = 1, k = 0;
    const char **keys = act_cli_xcalloc(n, sizeof *keys);
    for (const act__jv *v = args->child; v; v = v->next) {
        keys[k++] = v->key;
        len += strlen(v->key) + 1;
    }
    if (k > 1)
        act_cli_sort(keys, k, sizeof *keys, cmp_str);
    char *out = act_cli_xmalloc(len), *p = out;
    *p = '\0';
    for (size_t i = 0; i < k; i++) {
        if (i && strcmp(keys[i], keys[i - 1]) == 0)
            continue;
        size_t l = strlen(keys[i]);
        if (p != out)
            *p++ = ',';
        memcpy(p, keys[i], l);
        p += l;
        *p = '\0';
    }
    free(keys);
    return out;
}

static int is_num(const act__jv *v)
{
    return v && v->type == ACT__J_NUMBER;
}

static int is_str(const act__jv *v)
{
    return v && v->type == ACT__J_STRING;
}

static double num(const act__jv *v)
{
    double d = 0;
    act__jv_num(v, &d);
    return d;
}

static void check_counter(checker *c, uint64_t i, const act__jv *e,
                          const act__jv *args)
{
    char txt[160];
    const act__jv *id = act__jv_get(e, "id");
    size_t nkeys = args && args->type == ACT__J_OBJECT ? args->len : 0;
    if (!nkeys) {
        E(i, "counter needs at least one args key (one series per key)");
        return;
    }
    /* Duplicate keys: the last value is the one viewers see. */
    for (const act__jv *v = args->child; v; v = v->next) {
        if (act__jv_get(args, v->key) != v)
            continue;
        if (!is_num(v))
            E(i, "counter series \"%s\" value must be a number (got %s)",
              v->key, TXT(v));
    }
    if (is_num(id))
        W(i, "numeric counter id: Perfetto ignores it (only string ids split "
             "counters); use \"id\":\"<str>\" or put it in the name");
    /* Identity: pid, name, id, as the viewers see them. */
    char pid[64], name[400], ids[64], ck[600];
    act_cli_json_text(act__jv_get(e, "pid"), pid, sizeof pid);
    act_cli_json_text(act__jv_get(e, "name"), name, sizeof name);
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

static void check_flow(checker *c, uint64_t i, const act_cli_fields *F,
                       char ph, int ts_ok, int64_t ts, size_t thread)
{
    char txt[160];
    const act__jv *id = F->id, *cat = F->cat, *bp = F->bp;
    if (!id)
        E(i, "flow event needs id");
    else if (is_str(id) && !is_hex_id(id->s))
        E(i, "flow id %s: Perfetto parses string flow ids as hex "
             "(flow_invalid_id); use an integer",
          TXT(id));
    else if (is_str(id))
        W(i, "flow id %s is a string: use an integer", TXT(id));
    else if (!is_num(id) || num(id) != floor(num(id)))
        E(i, "flow id %s must be an integer", TXT(id));
    if (!is_str(cat))
        E(i, "flow event needs cat (flow identity is cat+name+id)");
    if (ph == 'f' && bp && !act__jv_is(bp, "e"))
        E(i, "bp must be \"e\" if present (got %s)", TXT(bp));
    else if (ph == 'f' && !bp)
        W(i, "f without \"bp\":\"e\" binds to the next slice that starts "
             "after it, not to the enclosing one");
    if (!id || !ts_ok)
        return;
    /* The identity: cat, name (its text if not a string), id. */
    char name[400], ids[64];
    const act__jv *jn = F->name;
    const char *nm = name, *cs = is_str(cat) ? cat->s : "";
    if (is_str(jn))
        nm = jn->s;
    else
        act_cli_json_text(jn, name, sizeof name);
    flow rec, *f = &rec;
    memset(f, 0, sizeof *f);
    f->cat = text_id(c, cs, strlen(cs));
    f->nametext = text_id(c, nm, strlen(nm));
    f->idtext = NONAME;
    if (!act__jv_i64(id, &f->idnum)) {
        act_cli_json_text(id, ids, sizeof ids);
        f->idtext = text_id(c, ids, strlen(ids));
    }
    uint64_t h = 0xcbf29ce484222325u;
    uint64_t parts[4] = {f->cat, f->nametext, f->idtext, (uint64_t)f->idnum};
    for (int k = 0; k < 4; k++) {
        h ^= parts[k];
        h *= 0x100000001b3u;
        h ^= h >> 29;
    }
    f->h = h ? h : 1;
    f->i = i;
    f->ts = ts;
    f->ph = ph;
    f->bp_e = (char)act__jv_is(bp, "e");
    f->thread = thread;
    f->name = name_id(c, jn);
    flow_add(c, f);
}

static void check_meta(checker *c, uint64_t i, const act__jv *e,
                       const act__jv *args)
{
    char txt[160];
    const act__jv *name = act__jv_get(e, "name");
    if (!is_str(name))
        return; /* "missing name" already */
    const char *n = name->s;
    if (strcmp(n, "process_name") == 0 || strcmp(n, "thread_name") == 0) {
        if (!is_str(act__jv_get(args, "name")))
            E(i, "%s needs args.name string (got %s)", n,
              TXT(act__jv_get(args, "name")));
    } else if (strcmp(n, "process_sort_index") == 0 ||
               strcmp(n, "thread_sort_index") == 0) {
        const act__jv *si = act__jv_get(args, "sort_index");
        if (!is_num(si) || num(si) != floor(num(si)))
            E(i, "%s needs integer args.sort_index (got %s)", n, TXT(si));
    } else if (strcmp(n, "process_labels") != 0) {
        W(i, "unknown metadata name \"%s\"", n);
    }
}

static void check_event(checker *c, uint64_t i, const act__jv *e)
{
    char txt[160];
    c->e = e;
    c->ev = i;
    if (e->type != ACT__J_OBJECT) {
        E(i, "event is not an object (got %s)", TXT(e));
        return;
    }
    if (e->len == 0)
        return; /* {} is tolerated by every consumer */
    act_cli_fields F;
    act_cli_get_fields(e, &F);
    const act__jv *jph = F.ph;
    if (!is_str(jph) || jph->len != 1 || jph->s[0] == '\0') {
        if (jph)
            E(i, "bad ph %s", TXT(jph));
        else
            E(i, "no ph");
        return;
    }
    char ph = jph->s[0];
    if (!strchr("BEXiICsftMbenPONDR", ph))
        W(i, "phase \"%c\" is not handled by the checked consumers", ph);

    const act__jv *jts = F.ts;
    int64_t ts = 0;
    int ts_ok = act_cli_json_ns(jts, &ts);
    if (ph != 'M' && !is_num(jts))
        E(i, "ts must be a finite number of microseconds (got %s)", TXT(jts));
    if (is_num(jts)) {
        if (jts->s[0] == '-' && num(jts) < 0)
            W(i, "negative ts");
        if (act_cli_over3(jts))
            W(i, "ts %s has more than 3 decimals (below a nanosecond)",
              TXT(jts));
    }

    uint32_t pid = 0, tid = 0;
    const act__jv *jpid = F.pid, *jtid = F.tid;
    int pid_ok = act_cli_json_id(jpid, &pid);
    int tid_ok = (ph == 'C' || ph == 'M') ? 1 : act_cli_json_id(jtid, &tid);
    if (!pid_ok && is_str(jpid) && (tid_ok || is_str(jtid))) {
        /* Strings, as Kineto writes for its "Spans", "Traces" and final
         * events: Perfetto and chrome://tracing take them as names; only
         * speedscope cannot read them. A warning (an error with --strict):
         * every torch.profiler trace has three. */
        char t2[160];
        if (!tid_ok)
            W(i, "pid %s and tid %s are strings: speedscope fails to import the "
                 "trace (Perfetto and chrome://tracing show them as names)",
              TXT(jpid), act_cli_json_text(jtid, t2, sizeof t2));
        else
            W(i, "pid %s is a string: speedscope fails to import the trace "
                 "(Perfetto and chrome://tracing show it as a name)",
              TXT(jpid));
    } else if (!pid_ok && !tid_ok) {
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
    if (ph == 'C' || ph == 'M')
        tid_ok = act_cli_json_id(jtid, &tid);
    size_t thread = pid_ok && tid_ok ? thread_of(c, pid, tid) : SIZE_MAX;

    const act__jv *jname = F.name;
    if (ph != 'E' && (!is_str(jname) || !jname->s[0]))
        E(i, "missing name");
    const act__jv *cat = F.cat;
    if (cat && !is_str(cat))
        E(i, "cat must be a string (got %s)", TXT(cat));
    else if (!cat && ph != 'M')
        W(i, "no cat (every event should have a category)");
    const act__jv *args = F.args;
    if (args && args->type != ACT__J_OBJECT)
        E(i, "args must be an object (got %s)", TXT(args));

    switch (ph) {
    case 'X': {
        const act__jv *jdur = F.dur;
        int64_t dur;
        if (!act_cli_json_ns(jdur, &dur) || jdur->s[0] == '-') {
            E(i, "X needs dur >= 0 (got %s)", TXT(jdur));
            break;
        }
        if (act_cli_over3(jdur))
            W(i, "dur %s has more than 3 decimals (below a nanosecond)",
              TXT(jdur));
        if (ts_ok && thread != SIZE_MAX)
            slice_add(c, thread, (item){i, ts, ts + dur, name_id(c, jname), 'X', 0, 0});
        break;
    }
    case 'B':
    case 'E':
        if (ts_ok && thread != SIZE_MAX)
            slice_add(c, thread, (item){i, ts, ts, name_id(c, jname), ph, 0, 0});
        break;
    case 'i':
    case 'I': {
        const act__jv *sc = F.s;
        if (sc && !(act__jv_is(sc, "g") || act__jv_is(sc, "p") ||
                    act__jv_is(sc, "t")))
            E(i, "instant scope s must be \"g\", \"p\" or \"t\" (got %s)",
              TXT(sc));
        break;
    }
    case 'C': check_counter(c, i, e, args); break;
    case 's':
    case 't':
    case 'f': check_flow(c, i, &F, ph, ts_ok, ts, thread); break;
    case 'M': check_meta(c, i, e, args); break;
    default: break;
    }
}

/* qsort, skipped when the array is already in order (traces list most
 * threads' slices and flows sorted). */
static void sort_if_needed(void *base, size_t n, size_t size,
                           int (*cmp)(const void *, const void *))
{
    const char *p = base;
    size_t k = 1;
    while (k < n && cmp(p + (k - 1) * size, p + k * size) <= 0)
        k++;
    if (k < n)
        act_cli_sort(base, n, size, cmp);
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

#define EAT(it, ...) add_at(c, (it).i, 0, (it).ph, (it).name, __VA_ARGS__)
#define WAT(it, ...) add_at(c, (it).i, 1, (it).ph, (it).name, __VA_ARGS__)

/* The nesting rule's message for slice @p s inside @p p. */
static void overlap_error(checker *c, const thr *t, const item *s,
                          const item *p)
{
    char a[32], b[32], pe[32];
    EAT(*s,
        "thread %u/%u: \"%s\" [%s, %s] partially overlaps \"%s\" "
        "(#%" PRIu64 "), which ends at %s; slices must nest (Perfetto "
        "moves it to an overflow track)",
        t->pid, t->tid, q(name_of(c, s->name)), fmt_us(a, sizeof a, s->ts),
        fmt_us(b, sizeof b, s->end), q(name_of(c, p->name)), p->i,
        fmt_us(pe, sizeof pe, p->end));
}

/* Withdraw the online nesting error of event @p ev (its thread turned out
 * to be out of order: the sort at the end decides again). */
static void retract(checker *c, uint64_t ev)
{
    c->nerr--;
    for (size_t k = 0; k < c->np; k++)
        if (c->p[k].ev == ev && !c->p[k].warn &&
            strstr(c->p[k].msg, "partially overlaps")) {
            free(c->p[k].msg);
            c->p[k] = c->p[--c->np];
            return;
        }
}

/* ---- flows: open identities only ---------------------------------------- */

static size_t ident_home(const checker *c, uint64_t h)
{
    uint64_t x = h; /* murmur3's finaliser: ids are sequential */
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdu;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53u;
    x ^= x >> 33;
    return (size_t)x & (c->idcap - 1);
}

static ident *ident_find(checker *c, uint64_t h)
{
    if (!c->idcap)
        return NULL;
    size_t j = ident_home(c, h);
    while (c->id[j].h && c->id[j].h != h)
        j = (j + 1) & (c->idcap - 1);
    return c->id[j].h ? &c->id[j] : NULL;
}

static ident *ident_put(checker *c, uint64_t h)
{
    if (2 * (c->nid + 1) > c->idcap) {
        ident *old = c->id;
        size_t oc = c->idcap;
        c->idcap = oc ? 2 * oc : 64;
        c->id = act_cli_xcalloc(c->idcap, sizeof *c->id);
        for (size_t k = 0; k < oc; k++)
            if (old[k].h) {
                size_t j = ident_home(c, old[k].h);
                while (c->id[j].h)
                    j = (j + 1) & (c->idcap - 1);
                c->id[j] = old[k];
            }
        free(old);
    }
    size_t j = ident_home(c, h);
    while (c->id[j].h && c->id[j].h != h)
        j = (j + 1) & (c->idcap - 1);
    if (!c->id[j].h) {
        c->id[j] = (ident){h, NIL, 0, 0};
        c->nid++;
    }
    return &c->id[j];
}

/* Linear probing's deletion: shift back the entries that probed past it. */
static void ident_del(checker *c, ident *e)
{
    size_t mask = c->idcap - 1, j = (size_t)(e - c->id), k = j;
    c->id[j].h = 0;
    c->nid--;
    for (;;) {
        k = (k + 1) & mask;
        if (!c->id[k].h)
            return;
        size_t home = ident_home(c, c->id[k].h);
        /* Move k to j when home is not cyclically in (j, k]. */
        if ((j < k) ? (home <= j || home > k) : (home <= j && home > k)) {
            c->id[j] = c->id[k];
            c->id[k].h = 0;
            j = k;
        }
    }
}

/* "cat|name|id" for messages. */
static const char *flow_desc(const checker *c, const flow *f, char *buf,
                             size_t len)
{
    char id[32];
    if (f->idtext == NONAME)
        snprintf(id, sizeof id, "%lld", (long long)f->idnum);
    snprintf(buf, len, "%s|%s|%s", c->names[f->cat], c->names[f->nametext],
             f->idtext == NONAME ? id : c->names[f->idtext]);
    return buf;
}

/* The flow rules over one identity's records in (ts, index) order, as the
 * viewers match them; @p final: the input has ended (an s left open was
 * never finished). Frees the records and the identity. */
static void ident_run(checker *c, ident *e, int final)
{
    char d[640];
    size_t open = NIL;
    for (size_t k = e->head; k != NIL; k = c->fl[k].next) {
        const flow *f = &c->fl[k];
        if (f->ph == 's') {
            if (open != NIL)
                WAT(*f, "flow %s started again before it ended",
                    flow_desc(c, f, d, sizeof d));
            open = k;
            if (!f->encl)
                EAT(*f, "flow start is not inside a slice on its thread");
        } else if (open == NIL) {
            EAT(*f, "flow %c for %s has no earlier s (same cat, name and id)",
                f->ph, flow_desc(c, f, d, sizeof d));
        } else {
            if (f->ph == 'f')
                open = NIL;
            if (f->bp_e ? !f->encl : !f->nxt)
                EAT(*f, "flow %c binds to no slice (%s)", f->ph,
                    f->bp_e ? "no enclosing slice"
                            : "no slice starts at/after ts; add \"bp\":\"e\"?");
        }
        if (!f->at_start)
            WAT(*f, "flow %c: DevTools only draws flows whose ts, pid and tid "
                    "equal a slice start",
                f->ph);
    }
    if (final && open != NIL)
        WAT(c->fl[open], "flow started but never finished (no f)");
    for (size_t k = e->head, nx; k != NIL; k = nx) {
        nx = c->fl[k].next;
        c->fl[k].next = c->ffree;
        c->ffree = k;
    }
    ident_del(c, e);
}

/* Run an identity as soon as it holds one whole s (t...) f chain with every
 * binding known: later flows of the same identity are taken as a new chain
 * (ids reused only after their f, as tracers do). */
static void ident_try(checker *c, ident *e)
{
    if (c->defer_all || e->nres != e->nrec || e->nrec < 2)
        return;
    size_t k = e->head, last = NIL;
    if (c->fl[k].ph != 's')
        return;
    for (k = c->fl[k].next; k != NIL; k = c->fl[k].next) {
        if (c->fl[k].ph == 's')
            return;
        if (c->fl[k].ph == 'f' && c->fl[k].next != NIL)
            return;
        last = k;
    }
    if (c->fl[last].ph == 'f')
        ident_run(c, e, 0);
}

/* A flow at @p ts on @p t was decided with a binding still missing: a
 * slice that comes later and covers ts could have changed that (bindings
 * only grow with slices, so decided-true ones cannot change). */
static void bound(thr *t, int64_t ts)
{
    if (t->bound_max == INT64_MIN || ts < t->bound_min)
        t->bound_min = ts;
    if (ts > t->bound_max)
        t->bound_max = ts;
}

static void flow_resolved(checker *c, size_t k, int encl, int nxt, int at)
{
    flow *f = &c->fl[k];
    if (!(encl && nxt && at) && f->thread != SIZE_MAX)
        bound(&c->t[f->thread], f->ts);
    f->encl = (char)encl;
    f->nxt = (char)nxt;
    f->at_start = (char)at;
    f->resolved = 1;
    ident *e = ident_find(c, f->h);
    e->nres++;
    ident_try(c, e);
}

static void pq_push(thr *t, query x)
{
    act_cli_grow(&t->pq, &t->pqcap, t->npq, sizeof *t->pq);
    size_t k = t->npq++;
    while (k && t->pq[(k - 1) / 2].ts > x.ts) {
        t->pq[k] = t->pq[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    t->pq[k] = x;
}

static query pq_pop(thr *t)
{
    query top = t->pq[0], x = t->pq[--t->npq];
    size_t k = 0, n = t->npq;
    for (;;) {
        size_t m = 2 * k + 1;
        if (m >= n)
            break;
        if (m + 1 < n && t->pq[m + 1].ts < t->pq[m].ts)
            m++;
        if (t->pq[m].ts >= x.ts)
            break;
        t->pq[k] = t->pq[m];
        k = m;
    }
    if (n)
        t->pq[k] = x;
    return top;
}

static const item *ring_at(const thr *t, size_t k)
{
    return &t->ring[(t->rhead + k) & (t->rcap - 1)];
}

/* Decide at once what can be decided of flow @p k on online thread @p t:
 * a flow at or after the last slice start waits for the next start. */
static void bind_online(checker *c, thr *t, size_t k)
{
    int64_t ts = c->fl[k].ts;
    if (!t->nslices || ts >= t->last_ts) {
        pq_push(t, (query){ts, k});
        return;
    }
    /* Late: the last slice that starts at or before ts, from the ring. */
    size_t lo = 0, hi = t->rn;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ring_at(t, mid)->ts <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) {
        if (t->dropped) { /* older than the ring: only the ends are known */
            c->approx++;
            flow_resolved(c, k, t->dropped_max >= ts, 1, 0);
        } else {
            flow_resolved(c, k, 0, 1, 0);
        }
        return;
    }
    size_t j = (t->rhead + lo - 1) & (t->rcap - 1);
    flow_resolved(c, k, t->rmax[j] >= ts, 1, t->ring[j].ts == ts);
}

static void flow_add(checker *c, const flow *rec)
{
    size_t k;
    if (c->ffree != NIL) {
        k = c->ffree;
        c->ffree = c->fl[k].next;
    } else {
        act_cli_grow(&c->fl, &c->fcap, c->nf, sizeof *c->fl);
        k = c->nf++;
    }
    c->fl[k] = *rec;
    flow *f = &c->fl[k];
    ident *e = ident_put(c, f->h);
    /* Insert by (ts, index): flows of one identity are few. */
    size_t *pp = &e->head;
    while (*pp != NIL && (c->fl[*pp].ts < f->ts ||
                          (c->fl[*pp].ts == f->ts && c->fl[*pp].i < f->i)))
        pp = &c->fl[*pp].next;
    f->next = *pp;
    *pp = k;
    e->nrec++;
    if (f->thread == SIZE_MAX) {
        flow_resolved(c, k, 0, 0, 0);
        return;
    }
    thr *t = &c->t[f->thread];
    if (t->buffered) {
        act_cli_grow(&t->bq, &t->bqcap, t->nbq, sizeof *t->bq);
        t->bq[t->nbq++] = k;
    } else {
        bind_online(c, t, k);
    }
}

/* ---- slices ------------------------------------------------------------- */

static void buf_push(checker *c, thr *t, item it)
{
    if (it.ph == 'X' && t->dropped && it.ts < t->seed_min &&
        t->dropped_max > it.ts)
        c->approx++; /* may overlap a slice no longer kept */
    else if (it.ph != 'E' && it.ts <= t->bound_max &&
             (it.ph == 'B' || it.end >= t->bound_min))
        c->approx++; /* may cover a flow decided as unbound */
    act_cli_grow(&t->v, &t->cap, t->n, sizeof *t->v);
    t->v[t->n++] = it;
}

/* Online -> buffered: keep the ring and the open stack as seeds, and move
 * the waiting flows to the end-of-input decision. */
static void go_buffered(checker *c, thr *t)
{
    uint64_t oldest = t->rn ? ring_at(t, 0)->i : UINT64_MAX;
    t->buffered = 1;
    t->seed_min = INT64_MIN;
    for (size_t k = 0; k < t->depth; k++)
        if (t->stk[k].i < oldest) {
            t->stk[k].seeded = 1;
            buf_push(c, t, t->stk[k]);
        }
    for (size_t k = 0; k < t->rn; k++) {
        item it = *ring_at(t, k);
        it.seeded = 1;
        buf_push(c, t, it);
    }
    if (t->rn)
        t->seed_min = ring_at(t, 0)->ts;
    for (size_t k = 0; k < t->depth; k++)
        if (t->stk[k].ts < t->seed_min)
            t->seed_min = t->stk[k].ts;
    for (size_t k = 0; k < t->npq; k++) {
        act_cli_grow(&t->bq, &t->bqcap, t->nbq, sizeof *t->bq);
        t->bq[t->nbq++] = t->pq[k].flow;
    }
    free(t->stk);
    free(t->ring);
    free(t->rmax);
    free(t->pq);
    t->stk = t->ring = NULL;
    t->rmax = NULL;
    t->pq = NULL;
    t->depth = t->stkcap = t->rcap = t->rn = t->npq = t->pqcap = 0;
}

static void slice_add(checker *c, size_t ti, item s)
{
    thr *t = &c->t[ti];
    if (!t->buffered &&
        (c->defer_all || s.ph != 'X' ||
         (t->nslices && (s.ts < t->last_ts ||
                         (s.ts == t->last_ts && s.end > t->last_end)))))
        go_buffered(c, t);
    if (t->buffered) {
        buf_push(c, t, s);
        return;
    }
    /* Flows waiting for a start after theirs: every slice so far starts at
     * or before them. */
    while (t->npq && t->pq[0].ts < s.ts) {
        query x = pq_pop(t);
        flow_resolved(c, x.flow, t->nslices && t->maxend >= x.ts, 1,
                      t->nslices && t->last_ts == x.ts);
        t = &c->t[ti];
    }
    /* The nesting rule: the sort's loop, with the events already sorted. */
    while (t->depth && t->stk[t->depth - 1].end <= s.ts)
        t->depth--;
    if (t->depth && s.end > t->stk[t->depth - 1].end) {
        overlap_error(c, t, &s, &t->stk[t->depth - 1]);
        s.onl_err = 1;
    }
    act_cli_grow(&t->stk, &t->stkcap, t->depth, sizeof *t->stk);
    t->stk[t->depth++] = s;
    if (!t->nslices || s.end > t->maxend)
        t->maxend = s.end;
    t->last_ts = s.ts;
    t->last_end = s.end;
    t->nslices++;
    /* The ring: grows to RING_MAX, then the oldest slice leaves. */
    if (t->rn == t->rcap && t->rcap < RING_MAX) {
        size_t nc = t->rcap ? 2 * t->rcap : 16;
        t->ring = act_cli_xrealloc(t->ring, nc * sizeof *t->ring);
        t->rmax = act_cli_xrealloc(t->rmax, nc * sizeof *t->rmax);
        t->rcap = nc; /* never wrapped yet: rhead is 0 */
    }
    size_t j;
    if (t->rn == t->rcap) {
        j = t->rhead;
        if (!t->dropped || t->rmax[j] > t->dropped_max)
            t->dropped_max = t->rmax[j];
        t->dropped++;
        t->rhead = (t->rhead + 1) & (t->rcap - 1);
    } else {
        j = (t->rhead + t->rn++) & (t->rcap - 1);
    }
    t->ring[j] = s;
    t->rmax[j] = t->maxend;
}

/* Slices of one buffered thread must nest perfectly (B/E paired first). */
static void check_nesting(checker *c, thr *t)
{
    item *be = act_cli_xcalloc(t->n ? t->n : 1, sizeof *be), *sl;
    size_t nbe = 0, nsl = 0;
    for (size_t k = 0; k < t->n; k++)
        if (t->v[k].ph != 'X')
            be[nbe++] = t->v[k];
    sl = act_cli_xcalloc(t->n ? t->n : 1, sizeof *sl);
    if (nbe > 1)
        sort_if_needed(be, nbe, sizeof *be, cmp_be);
    item *stack = act_cli_xcalloc(nbe ? nbe : 1, sizeof *stack);
    size_t depth = 0;
    for (size_t k = 0; k < nbe; k++) {
        if (be[k].ph == 'B') {
            stack[depth++] = be[k];
            continue;
        }
        if (!depth) {
            EAT(be[k], "thread %u/%u: E without matching B", t->pid, t->tid);
            continue;
        }
        item top = stack[--depth];
        if (be[k].name != NONAME && top.name != NONAME && be[k].name != top.name)
            EAT(be[k], "thread %u/%u: E \"%s\" closes B \"%s\" (#%" PRIu64 ")",
                t->pid, t->tid, name_of(c, be[k].name), name_of(c, top.name),
                top.i);
        sl[nsl++] = (item){top.i, top.ts, be[k].ts, top.name, 'B', 0, 0};
    }
    for (size_t k = 0; k < depth; k++)
        WAT(stack[k],
            "thread %u/%u: B \"%s\" never ended (viewers close it at the "
            "trace end)",
            t->pid, t->tid, q(name_of(c, stack[k].name)));
    for (size_t k = 0; k < t->n; k++)
        if (t->v[k].ph == 'X')
            sl[nsl++] = t->v[k];
    free(t->v);
    t->v = NULL;
    if (nsl > 1)
        sort_if_needed(sl, nsl, sizeof *sl, cmp_slice);
    depth = 0;
    stack = act_cli_xrealloc(stack, (nsl ? nsl : 1) * sizeof *stack);
    for (size_t k = 0; k < nsl; k++) {
        const item *s = &sl[k];
        if (s->onl_err)
            retract(c, s->i); /* decided again here */
        while (depth && stack[depth - 1].end <= s->ts)
            depth--;
        if (depth && s->end > stack[depth - 1].end) {
            overlap_error(c, t, s, &stack[depth - 1]);
        } else if (depth && stack[depth - 1].ts == s->ts &&
                   stack[depth - 1].i > s->i) {
            WAT(*s,
                "thread %u/%u: \"%s\" starts with its parent \"%s\" (#%" PRIu64
                ") but comes first in the file; Perfetto keeps file order for "
                "equal ts and sees an overlap",
                t->pid, t->tid, q(name_of(c, s->name)),
                q(name_of(c, stack[depth - 1].name)), stack[depth - 1].i);
        }
        stack[depth++] = *s;
    }
    free(stack);
    free(be);
    t->sl = sl;
    t->nsl = nsl;
    t->maxend_arr = act_cli_xcalloc(nsl ? nsl : 1, sizeof *t->maxend_arr);
    for (size_t k = 0; k < nsl; k++)
        t->maxend_arr[k] = k && t->maxend_arr[k - 1] > sl[k].end
                               ? t->maxend_arr[k - 1]
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

static int cmp_ident(const void *a, const void *b)
{
    const ident *x = a, *y = b;
    const uint64_t fx = x->head, fy = y->head; /* first record's index */
    return fx < fy ? -1 : fx > fy;
}

/* End of input: every thread's slices are known; decide the flows still
 * waiting and run every identity still open. */
static void finish(checker *c)
{
    for (size_t ti = 0; ti < c->nt; ti++) {
        thr *t = &c->t[ti];
        if (!t->buffered) {
            while (t->npq) {
                query x = pq_pop(t);
                flow_resolved(c, x.flow, t->nslices && t->maxend >= x.ts,
                              t->nslices && t->last_ts >= x.ts,
                              t->nslices && t->last_ts == x.ts);
                t = &c->t[ti];
            }
            continue;
        }
        check_nesting(c, t);
        t = &c->t[ti];
        for (size_t k = 0; k < t->nbq; k++) {
            size_t fk = t->bq[k];
            int64_t ts = c->fl[fk].ts;
            size_t upto = starts_upto(t, ts);
            int encl = upto && t->maxend_arr[upto - 1] >= ts;
            if (t->dropped && ts < t->seed_min) {
                c->approx++;
                encl |= t->dropped_max >= ts;
            }
            int next = (t->nsl && t->sl[t->nsl - 1].ts >= ts) ||
                       (t->dropped && ts < t->seed_min);
            int at = upto && t->sl[upto - 1].ts == ts;
            flow_resolved(c, fk, encl, next, at);
            t = &c->t[ti];
        }
    }
    /* What is left: identities not closed by an f, or reused. Take them
     * out of the table (runs delete), in a stable order. */
    ident *left = act_cli_xcalloc(c->nid ? c->nid : 1, sizeof *left);
    size_t nl = 0;
    for (size_t k = 0; k < c->idcap; k++)
        if (c->id[k].h)
            left[nl++] = c->id[k];
    act_cli_sort(left, nl, sizeof *left, cmp_ident);
    c->defer_all = 1; /* no more early runs */
    for (size_t k = 0; k < nl; k++)
        ident_run(c, ident_find(c, left[k].h), 1);
    free(left);
}

static void checker_free(checker *c)
{
    for (size_t k = 0; k < c->np; k++)
        free(c->p[k].msg);
    free(c->p);
    for (size_t k = 0; k < c->nt; k++) {
        free(c->t[k].v);
        free(c->t[k].sl);
        free(c->t[k].maxend_arr);
        free(c->t[k].stk);
        free(c->t[k].ring);
        free(c->t[k].rmax);
        free(c->t[k].pq);
        free(c->t[k].bq);
    }
    free(c->t);
    act_cli_map_free(&c->thread_map);
    for (size_t k = 0; k < c->nc; k++)
        free(c->ckeys[k]);
    free(c->ckeys);
    act_cli_map_free(&c->counter_map);
    free(c->fl);
    free(c->id);
    act_cli_map_free(&c->name_map);
    free(c->names);
}

static const char *plural(uint64_t n, const char *one, const char *many)
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
    if (act_cli_is_pftrace(file))
        return act_cli_check_pftrace(file, quiet);
    char msg[512];
    act_cli_trace tr;
    if (act_cli_trace_open(&tr, file, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s: error: %s\n", file, msg);
        return 2;
    }

    checker cc, *c = &cc;
    memset(c, 0, sizeof *c);
    c->strict = strict;
    c->ffree = NIL;
    const char *all = getenv("ACT_CHECK_BUFFER_ALL");
    c->defer_all = all && *all && strcmp(all, "0") != 0;
    act__rd_item it;
    int k;
    uint64_t items = 0;
    act_cli_progress_t prog = {"check", isatty(2), 0, 0, 0};
    act_cli_progress(&prog, 0, 0);
    while ((k = act__rd_next(tr.rd, &it)) > 0) {
        if ((++items & 4095) == 0)
            act_cli_progress(&prog, act__rd_bytes_read(tr.rd), 0);
        if (k == ACT__RD_EVENT) {
            check_event(c, it.index, it.v);
            continue;
        }
        c->e = NULL;
        if (strcmp(it.key, "displayTimeUnit") == 0 &&
            !(act__jv_is(it.v, "ms") || act__jv_is(it.v, "ns")))
            E(UINT64_MAX, "displayTimeUnit must be \"ms\" or \"ns\" (catapult "
                          "throws otherwise)");
    }
    act_cli_progress(&prog, 0, 1);
    if (k < 0) {
        fprintf(stderr, "%s: error: %s\n", file, act__rd_errmsg(tr.rd));
        checker_free(c);
        act_cli_trace_close(&tr);
        return 2;
    }
    c->e = NULL;
    uint64_t nev = act__rd_events(tr.rd);
    int layout = act__rd_layout(tr.rd);
    act_cli_trace_close(&tr);
    if (layout == ACT__RD_TOP_NO_EVENTS)
        E(UINT64_MAX, "top level must be an array or an object with a "
                      "\"traceEvents\" array");
    else if (nev == 0)
        W(UINT64_MAX, "no events (speedscope and DevTools show nothing)");
    finish(c);
    trim(c);
    if (c->approx)
        fprintf(stderr,
                "%s: note: %" PRIu64 " slices or flows came out of order "
                "after the checks they affect had run (more than %zu slices "
                "late on their thread, or after flows found unbound there); "
                "the nesting and flow rules may miss a problem there\n",
                file, c->approx, (size_t)RING_MAX);

    uint64_t nerr = c->nerr, nwarn = c->nwarn, np = nerr + nwarn;
    if (!quiet) {
        for (size_t j = 0; j < c->np; j++) {
            const problem *p = &c->p[j];
            fprintf(stdout, "%s: %s: ", file,
                    p->warn && !strict ? "warning" : "error");
            act_cli_put_text(stdout, p->msg);
            fputc('\n', stdout);
        }
        if (np > c->np)
            printf("%s: ... and %" PRIu64 " more %s not shown\n", file,
                   np - c->np, plural(np - c->np, "problem", "problems"));
    }
    if (nerr)
        printf("%s: failed (%" PRIu64 " %s, %" PRIu64 " %s, %" PRIu64 " %s)\n",
               file, nev, plural(nev, "event", "events"), nerr,
               plural(nerr, "error", "errors"), nwarn,
               plural(nwarn, "warning", "warnings"));
    else if (nwarn)
        printf("%s: ok (%" PRIu64 " %s, %" PRIu64 " %s)\n", file, nev,
               plural(nev, "event", "events"), nwarn,
               plural(nwarn, "warning", "warnings"));
    else
        printf("%s: ok (%" PRIu64 " %s)\n", file, nev,
               plural(nev, "event", "events"));
    checker_free(c);
    if (fflush(stdout) != 0)
        return 2;
    return nerr ? 1 : 0;
}
