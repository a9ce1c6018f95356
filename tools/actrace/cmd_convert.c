/* SPDX-License-Identifier: MIT */
/*
 * actrace convert IN OUT: any trace the reader understands (actrace's or
 * Kineto's Chrome JSON, plain, .gz or "-") into Perfetto's protobuf
 * (OUT ending in .pftrace or .pftrace.gz), streaming.
 *
 * A JSON trace is not sorted per track, and a protobuf span is a BEGIN and
 * an END that must come in order on its sequence. So convert sorts, in
 * bounded memory: each event becomes a compact record (track, start, end,
 * name, category, args; strings as the encoder's iids, see crec) appended
 * to a run buffer of RUN_BYTES (24 MiB); a full run is sorted by (track,
 * start, longer first, input order) and spilled to an unlinked temporary
 * file; at the end the runs are merged (a heap over one read buffer per
 * run) and each track becomes one sequence, its spans fed to the encoder
 * in start order. Memory: the run buffer and its sort, the reader's item
 * buffer (1 MiB, more only for a larger event), the encoder's intern
 * table (capped), one READ_BUF per spilled run, per track its name and
 * ids, and per flow id a count (flowcount), never anything per event. A
 * trace that fits in one run never touches the disk.
 *
 * What maps to what: X events are spans, i/I instants, C counters (one
 * counter track per (pid, name, key): "name key"), s/t flows start and f
 * flows end on the slice that begins at the same time on the same track (a
 * flow with no such slice is an instant "flow" carrying it; a flow id on
 * one event only is left out, as Perfetto needs two), M events name
 * processes and threads, and the top-level members (baseTimeNanoseconds,
 * deviceProperties, actraceStats, ...) go on the "actrace" track as the
 * session writer puts them. B/E events are counted and skipped (actrace
 * and Kineto do not write them). Time: ts is microseconds since
 * baseTimeNanoseconds (0 when absent); the clock snapshot says the three
 * clocks coincide at that base, so wall-clock times come out right.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_pftrace.h"
#include "cli.h"
#include "trace_read.h"
#include "writer/json_out.h"
#include "writer/pftrace.h"

#define RUN_BYTES ((size_t)24 << 20)
#define READ_BUF ((size_t)256 << 10)
#define SPILL_BUF ((size_t)1 << 20)
#define SCACHE_N 256
#define SCACHE_LEN 32

enum { R_FLOW_OUT = 0, R_FLOW_IN = 1, R_SLICE = 2, R_INSTANT = 3, R_COUNTER = 4 };
/* An arg's type, in the top bits of its key word (A_SHIFT). */
enum { A_INT = 1, A_UINT, A_DOUBLE, A_BOOL, A_STR, A_STR_INLINE, A_JSON };
#define A_SHIFT 28

/* crec.tk: the track, then two flags and the kind. */
#define RF_NAME_INLINE 8u
#define RF_CAT_INLINE 16u
#define TRACK_SHIFT 5
#define MAX_TRACKS ((uint32_t)1 << (32 - TRACK_SHIFT))
#define REC_TRACK(r) ((r)->tk >> TRACK_SHIFT)
#define REC_KIND(r) ((int)((r)->tk & 7u))

/* A record: this header, then the bytes of an inline name and category
 * (each a u32 length and the bytes, when the flag says so) and the args,
 * zero-padded to a multiple of 8. Strings are iids of the encoder's intern
 * table, given at read time (so a record is 32 bytes and about 12 per arg,
 * whatever the names' lengths); only a string the table cannot take (too
 * long, table full) is carried as bytes. An arg: a u32 key word (its
 * A_* type << A_SHIFT | the key's iid; iid 0: a u32 length and the key's
 * bytes follow), then its value: 8 bytes (int, uint, double), 1 (bool), a
 * u32 iid (A_STR), or a u32 length and the bytes (A_STR_INLINE, A_JSON).
 * A zero key word, or fewer than 4 bytes left, ends the args. Input order
 * is the order in the run buffer, and across runs the runs' order. */
typedef struct crec {
    uint32_t len; /* header included, multiple of 8 */
    uint32_t tk;  /* track << TRACK_SHIFT | RF_* | kind */
    int64_t t0;
    int64_t t1;   /* a slice's end; instants: t0; flows: the id; counters: the value's bits */
    uint32_t name, cat; /* iids; 0: none, or inline (RF_*_INLINE) */
} crec;
_Static_assert(sizeof(crec) == 32, "crec is 32 bytes");

typedef struct ctrack {
    int64_t pid, tid;  /* tid -1: a counter track (name: its series) */
    char *name;        /* thread name, or the counter's "name key" */
    uint64_t uuid;
} ctrack;

typedef struct cproc {
    int64_t pid;
    char *name;
} cproc;

typedef struct run {
    int fd;
    uint64_t off, end; /* next byte to read, end of the run in the file */
    uint8_t *buf;
    size_t len, pos;
    crec *head; /* current record (in buf or in big) */
    uint8_t *big;
    int eof;
} run;

/* How many events carry each flow id (0, 1, 2 or more): a flow on one
 * event only (a trace cut at its window keeps a launch's start and not its
 * end) is written without its id, since a Perfetto flow needs two. Open
 * addressing, key 0 as a flag: 9 bytes a slot, at most half full. */
typedef struct flowcount {
    uint64_t *key;
    uint8_t *n;
    size_t cap, used;
    uint8_t n0; /* id 0's count */
} flowcount;

static uint8_t *fc_slot(flowcount *m, uint64_t id, int add)
{
    if (id == 0)
        return &m->n0;
    if (add && (m->used + 1) * 2 > m->cap) {
        flowcount nm = {NULL, NULL, m->cap ? m->cap * 2 : 1024, 0, m->n0};
        nm.key = act_cli_xcalloc(nm.cap, sizeof *nm.key);
        nm.n = act_cli_xcalloc(nm.cap, 1);
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) {
                *fc_slot(&nm, m->key[i], 1) = m->n[i];
            }
        free(m->key);
        free(m->n);
        *m = nm;
    }
    if (!m->cap)
        return NULL;
    size_t j = (size_t)((id * 0x9E3779B97F4A7C15u) >> 17) & (m->cap - 1);
    while (m->key[j] && m->key[j] != id)
        j = (j + 1) & (m->cap - 1);
    if (!m->key[j]) {
        if (!add)
            return NULL;
        m->key[j] = id;
        m->used++;
    }
    return &m->n[j];
}

typedef struct conv {
    const char *in;
    uint8_t *runbuf;
    size_t runlen, runcap;
    size_t nrec;        /* records in the run buffer */
    act__pf *pf;        /* the encoder: its intern table gives the records' iids */
    uint32_t unnamed_g; /* "(unnamed)", for events without a name (0: not interned) */
    /* The iids of strings met lately, by their raw bytes (before UTF-8
     * repair): [0] names, categories and keys (act__pf_intern), [1] string
     * values (act__pf_value_iid). Most events repeat a few names, so most
     * lookups skip the encoder's hash and probe. */
    struct scache {
        uint32_t g, len;
        char s[SCACHE_LEN];
    } scache[2][SCACHE_N];
    FILE *spill;        /* all spilled runs, one after the other */
    char *spillbuf;     /* its stdio buffer */
    size_t nruns;
    uint64_t *run_off;  /* byte offset of each run in spill, and an end */
    size_t run_cap;
    act_cli_map tracks; /* "pid tid" or "C pid name key" -> index */
    ctrack *trk;
    size_t ntrk, captrk;
    cproc *procs;
    size_t nprocs, capprocs;
    act_cli_map procmap;
    /* Tracks and processes looked up lately: events of a track come in
     * bursts, so most lookups skip the maps (direct-mapped by pid, tid). */
    struct {
        int64_t pid, tid;
        uint32_t idx, used;
    } tcache[16];
    struct {
        int64_t pid;
        uint32_t idx, used;
    } pcache[8];
    act__out meta;      /* top-level members as annotations, rendered */
    act_cli_map units;  /* "device\0name key" -> index in unit (actraceStats) */
    char **unit;
    size_t nunits, capunits;
    int64_t base_ns;
    int64_t tmin, tmax; /* the events' times (ns from the base), when has_t */
    int has_t;
    flowcount flowids;
    uint64_t events, skipped_be, skipped_bad, unbound_flows, lonely_flows;
} conv;

/* ---- tracks ------------------------------------------------------------- */

/* The index of track (pid, tid), or of counter series @p cname of pid.
 * Keys are binary (no formatting per event): a kind byte, pid, tid or the
 * series name. */
static uint32_t track_map(conv *c, int64_t pid, int64_t tid, const char *cname, size_t cn);

static uint32_t track_of(conv *c, int64_t pid, int64_t tid, const char *cname, size_t cn)
{
    if (cname)
        return track_map(c, pid, tid, cname, cn);
    size_t h = ((uint64_t)pid * 0x9E3779B97F4A7C15u ^ (uint64_t)tid) * 0x9E3779B97F4A7C15u >> 60;
    if (c->tcache[h].used && c->tcache[h].pid == pid && c->tcache[h].tid == tid)
        return c->tcache[h].idx;
    uint32_t idx = track_map(c, pid, tid, NULL, 0);
    c->tcache[h].pid = pid;
    c->tcache[h].tid = tid;
    c->tcache[h].idx = idx;
    c->tcache[h].used = 1;
    return idx;
}

static uint32_t track_map(conv *c, int64_t pid, int64_t tid, const char *cname, size_t cn)
{
    char key[17 + 256];
    char *k = key, *tmp = NULL;
    size_t kl = 17 + (cname ? cn : 0);
    if (kl > sizeof key)
        k = tmp = act_cli_xmalloc(kl);
    k[0] = cname ? 'C' : 'T';
    memcpy(k + 1, &pid, 8);
    memcpy(k + 9, &tid, 8);
    if (cname) {
        memset(k + 9, 0, 8);
        memcpy(k + 17, cname, cn);
    }
    int created;
    size_t *v = act_cli_map_put(&c->tracks, k, kl, c->ntrk, &created);
    if (created) {
        if (c->ntrk == MAX_TRACKS) {
            fprintf(stderr, "actrace convert: %s: more than %" PRIu32 " tracks\n", c->in,
                    MAX_TRACKS);
            exit(1);
        }
        act_cli_grow(&c->trk, &c->captrk, c->ntrk, sizeof *c->trk);
        ctrack *t = &c->trk[c->ntrk++];
        t->pid = pid;
        t->tid = cname ? -1 : tid;
        t->name = NULL;
        if (cname) {
            t->name = act_cli_xmalloc(cn + 1);
            memcpy(t->name, cname, cn);
            t->name[cn] = '\0';
        }
    }
    free(tmp);
    return (uint32_t)*v;
}

static cproc *proc_of(conv *c, int64_t pid)
{
    size_t h = (uint64_t)pid * 0x9E3779B97F4A7C15u >> 61;
    if (c->pcache[h].used && c->pcache[h].pid == pid)
        return &c->procs[c->pcache[h].idx];
    int created;
    size_t *v = act_cli_map_put(&c->procmap, (const char *)&pid, sizeof pid, c->nprocs, &created);
    if (created) {
        act_cli_grow(&c->procs, &c->capprocs, c->nprocs, sizeof *c->procs);
        c->procs[c->nprocs++] = (cproc){pid, NULL};
    }
    c->pcache[h].pid = pid;
    c->pcache[h].idx = (uint32_t)*v;
    c->pcache[h].used = 1;
    return &c->procs[*v];
}

/* ---- records ------------------------------------------------------------ */

/* The order of the output: by track, start, flows before the slice they
 * start with, a parent before its child (longer first); 0 for records
 * that keep their input order. */
static int cmp_rec(const crec *a, const crec *b)
{
    if (REC_TRACK(a) != REC_TRACK(b))
        return REC_TRACK(a) < REC_TRACK(b) ? -1 : 1;
    if (a->t0 != b->t0)
        return a->t0 < b->t0 ? -1 : 1;
    int ka = REC_KIND(a), kb = REC_KIND(b);
    int ra = ka == R_FLOW_IN ? R_FLOW_OUT : ka, rb = kb == R_FLOW_IN ? R_FLOW_OUT : kb;
    if (ra != rb)
        return ra < rb ? -1 : 1;
    if (ra == R_SLICE && a->t1 != b->t1)
        return a->t1 > b->t1 ? -1 : 1; /* the parent first */
    return 0;
}

/* A record in the sort of a run: its start beside it, so that comparing
 * two records of one track at different times (nearly every compare)
 * reads no record. */
typedef struct rkey {
    int64_t t0;
    crec *r;
} rkey;

static inline int cmp_key(const rkey *a, const rkey *b)
{
    if (a->t0 != b->t0)
        return a->t0 < b->t0 ? -1 : 1;
    return cmp_rec(a->r, b->r);
}

/* Records of one run are in input order in the run buffer: the address
 * breaks a tie (qsort is not stable). */
static int cmp_qsort(const void *x, const void *y)
{
    const rkey *a = x, *b = y;
    int d = cmp_key(a, b);
    return d ? d : (a->r > b->r) - (a->r < b->r);
}

/* Sort @p v (n records of one track) by cmp_rec: insertion sort, which is
 * linear on what traces hold (each track in order but for a flow written
 * after the slice it starts with), unless it needs more than a few moves
 * per record; then qsort. */
static void sort_track(rkey *v, size_t n)
{
    size_t budget = 8 * n + 64;
    for (size_t i = 1; i < n; i++) {
        rkey x = v[i];
        size_t j = i;
        while (j > 0 && cmp_key(&v[j - 1], &x) > 0) {
            v[j] = v[j - 1];
            j--;
            if (!--budget) {
                v[j] = x;
                act_cli_sort(v, n, sizeof *v, cmp_qsort);
                return;
            }
        }
        v[j] = x;
    }
}

/* The records of the run buffer in cmp_rec order (malloc'd, c->nrec of
 * them): a stable counting sort by track, then each track's records by
 * sort_track. */
static rkey *sort_run(conv *c)
{
    size_t cnt = c->nrec;
    rkey *idx = act_cli_xmalloc((cnt ? cnt : 1) * sizeof *idx);
    size_t ntrk = c->ntrk ? c->ntrk : 1;
    size_t *start = act_cli_xcalloc(ntrk + 1, sizeof *start);
    for (size_t o = 0; o < c->runlen; o += ((crec *)(c->runbuf + o))->len)
        start[REC_TRACK((crec *)(c->runbuf + o)) + 1]++; /* tracks are made before records */
    for (size_t t = 0; t < ntrk; t++)
        start[t + 1] += start[t];
    size_t *at = act_cli_xmalloc(ntrk * sizeof *at);
    memcpy(at, start, ntrk * sizeof *at);
    for (size_t o = 0; o < c->runlen; o += ((crec *)(c->runbuf + o))->len) {
        crec *r = (crec *)(c->runbuf + o);
        idx[at[REC_TRACK(r)]++] = (rkey){r->t0, r};
    }
    for (size_t t = 0; t < ntrk; t++)
        sort_track(idx + start[t], start[t + 1] - start[t]);
    free(at);
    free(start);
    return idx;
}

static void spill_write(conv *c, const void *p, size_t n)
{
    if (n && fwrite(p, n, 1, c->spill) != 1) {
        fprintf(stderr, "actrace convert: cannot write the temporary file: %s\n", strerror(errno));
        exit(1);
    }
}

static void spill_run(conv *c)
{
    if (!c->runlen)
        return;
    if (!c->spill) {
        c->spill = tmpfile();
        if (!c->spill) {
            fprintf(stderr, "actrace convert: cannot create a temporary file: %s\n", strerror(errno));
            exit(1);
        }
        /* Runs are gathered in a 1 MiB buffer and written from it (stdio's
         * 4 KiB buffer cost 55k write calls on the read benchmark's trace,
         * and fwrite per record its own locking). */
        c->spillbuf = act_cli_xmalloc(SPILL_BUF);
    }
    rkey *idx = sort_run(c);
    act_cli_grow(&c->run_off, &c->run_cap, c->nruns + 1, sizeof *c->run_off);
    if (c->nruns == 0)
        c->run_off[0] = 0;
    size_t fill = 0;
    for (size_t i = 0; i < c->nrec; i++) {
        const crec *r = idx[i].r;
        if (fill + r->len > SPILL_BUF) {
            spill_write(c, c->spillbuf, fill);
            fill = 0;
        }
        if (r->len > SPILL_BUF)
            spill_write(c, r, r->len);
        else
            memcpy(c->spillbuf + fill, r, r->len), fill += r->len;
    }
    spill_write(c, c->spillbuf, fill);
    free(idx);
    c->nruns++;
    c->run_off[c->nruns] = (uint64_t)ftello(c->spill);
    c->runlen = 0;
    c->nrec = 0;
}

/* Room for a record of @p len bytes in the run buffer (spilling it first
 * when full). */
static crec *rec_new(conv *c, size_t len)
{
    len = (len + 7) & ~(size_t)7;
    if (c->runlen + len > c->runcap) {
        spill_run(c);
        if (len > c->runcap) {
            c->runbuf = act_cli_xrealloc(c->runbuf, len);
            c->runcap = len;
        }
    }
    crec *r = (crec *)(c->runbuf + c->runlen);
    c->nrec++;
    memset((char *)r + len - 8, 0, 8); /* the padding ends the args */
    memset(r, 0, sizeof *r);
    r->len = (uint32_t)len;
    c->runlen += len;
    return r;
}

/* ---- args ----------------------------------------------------------------- */

typedef struct abuf {
    uint8_t *p;
    size_t len, cap;
} abuf;

/* Room for @p n more bytes. */
static uint8_t *aroom(abuf *b, size_t n)
{
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 256;
        while (nc < b->len + n)
            nc *= 2;
        b->p = act_cli_xrealloc(b->p, nc);
        b->cap = nc;
    }
    return b->p + b->len;
}

static inline void aput(abuf *b, const void *s, size_t n)
{
    uint8_t *p = b->len + n <= b->cap ? b->p + b->len : aroom(b, n);
    if (n)
        memcpy(p, s, n);
    b->len += n;
}

static void aput_u32(abuf *b, uint32_t v)
{
    aput(b, &v, 4);
}

/* @p a and @p b, both @p n bytes (1 to SCACHE_LEN), are equal: in words,
 * the last one overlapping (memcmp's call costs more at these lengths). */
static inline int same_bytes(const char *a, const char *b, size_t n)
{
    if (n >= 8) {
        uint64_t x, y, d = 0;
        for (size_t i = 0; i + 8 < n; i += 8) {
            memcpy(&x, a + i, 8);
            memcpy(&y, b + i, 8);
            d |= x ^ y;
        }
        memcpy(&x, a + n - 8, 8);
        memcpy(&y, b + n - 8, 8);
        return !(d | (x ^ y));
    }
    if (n >= 4) {
        uint32_t x0, y0, x1, y1;
        memcpy(&x0, a, 4);
        memcpy(&y0, b, 4);
        memcpy(&x1, a + n - 4, 4);
        memcpy(&y1, b + n - 4, 4);
        return !((x0 ^ y0) | (x1 ^ y1));
    }
    return a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1];
}

/* The iid of @p s from the encoder (@p value: as a string value, else as
 * a name, category or key), through the cache of strings met lately (its
 * slot: a hash of the length and the first and last bytes). */
static uint32_t iid_of(conv *c, int value, const char *s, size_t n)
{
    if (n > SCACHE_LEN || n == 0)
        return value ? act__pf_value_iid(c->pf, s, n) : act__pf_intern(c->pf, s, n);
    uint64_t w;
    if (n >= 8) {
        uint64_t a, z;
        memcpy(&a, s, 8);
        memcpy(&z, s + n - 8, 8);
        w = a ^ (z * 0x9E3779B97F4A7C15u);
    } else {
        w = act__pf_short_word(s, n);
    }
    w = (w ^ n) * 0xff51afd7ed558ccdu;
    struct scache *e = &c->scache[value][w >> (64 - 8)];
    if (e->len == n && e->g && same_bytes(e->s, s, n))
        return e->g;
    uint32_t g = value ? act__pf_value_iid(c->pf, s, n) : act__pf_intern(c->pf, s, n);
    e->g = g;
    e->len = (uint32_t)n;
    memcpy(e->s, s, n);
    return g;
}

/* A string the records carry: its iid (from the encoder's table), or 0
 * and then its length and bytes are put in @p b. */
static uint32_t put_str(abuf *b, conv *c, const char *s, size_t n)
{
    uint32_t g = iid_of(c, 0, s, n);
    if (!g) {
        aput_u32(b, (uint32_t)n);
        aput(b, s, n);
    }
    return g;
}

/* An arg's key word and key. */
static void put_key(abuf *b, conv *c, int type, const char *key, size_t kn)
{
    uint32_t g = iid_of(c, 0, key, kn), w = (uint32_t)type << A_SHIFT | g;
    aput_u32(b, w);
    if (!g) {
        aput_u32(b, (uint32_t)kn);
        aput(b, key, kn);
    }
}

static void put_arg(abuf *b, conv *c, int type, const char *key, size_t kn, const void *v,
                    size_t vn)
{
    put_key(b, c, type, key, kn);
    aput(b, v, vn);
}

/* A JSON value as compact text (for args that are objects, arrays or null). */
static char *json_text(const act__jv *v, size_t *n)
{
    char *s = NULL;
    FILE *f = open_memstream(&s, n);
    if (!f) {
        fprintf(stderr, "actrace: out of memory\n");
        exit(1);
    }
    act_cli_json_write(f, v);
    fclose(f);
    return s;
}

static void encode_value(abuf *b, conv *c, const char *key, size_t kn, const act__jv *v)
{
    switch (v->type) {
    case ACT__J_TRUE:
    case ACT__J_FALSE: {
        uint8_t t = v->type == ACT__J_TRUE;
        put_arg(b, c, A_BOOL, key, kn, &t, 1);
        break;
    }
    case ACT__J_STRING: {
        uint32_t g = iid_of(c, 1, v->s, v->len);
        if (g) {
            put_arg(b, c, A_STR, key, kn, &g, 4);
        } else {
            put_key(b, c, A_STR_INLINE, key, kn);
            aput_u32(b, (uint32_t)v->len);
            aput(b, v->s, v->len);
        }
        break;
    }
    case ACT__J_NUMBER: {
        int64_t i;
        if (v->integer && act__jv_i64(v, &i)) {
            put_arg(b, c, A_INT, key, kn, &i, 8);
        } else if (v->integer && v->s[0] != '-') {
            char *end;
            errno = 0;
            unsigned long long u = strtoull(v->s, &end, 10);
            if (!errno) {
                uint64_t u64 = u;
                put_arg(b, c, A_UINT, key, kn, &u64, 8);
                break;
            }
            double d;
            act__jv_num(v, &d);
            put_arg(b, c, A_DOUBLE, key, kn, &d, 8);
        } else {
            double d = 0;
            act__jv_num(v, &d);
            put_arg(b, c, A_DOUBLE, key, kn, &d, 8);
        }
        break;
    }
    default: {
        size_t n;
        char *s = json_text(v, &n);
        put_key(b, c, A_JSON, key, kn);
        aput_u32(b, (uint32_t)n);
        aput(b, s, n);
        free(s);
        break;
    }
    }
}

/* The string at *@p p (a u32 length and the bytes), stepping past it. */
static const char *get_str(const uint8_t **p, size_t *n)
{
    uint32_t l;
    memcpy(&l, *p, 4);
    const char *s = (const char *)*p + 4;
    *p += 4 + l;
    *n = l;
    return s;
}

/* One arg at *@p p (before @p end), stepping past it: its type (0: no
 * more), key (iid *@p kg, or bytes), and value (bits *@p v: scalars, the
 * iid of A_STR; bytes *@p s, *@p sn: A_STR_INLINE, A_JSON). */
typedef struct carg {
    int type;
    uint32_t kg;
    const char *key, *s;
    size_t kn, sn;
    uint64_t v;
} carg;

static int next_arg(const uint8_t **p, const uint8_t *end, carg *a)
{
    uint32_t w;
    if (end - *p < 4 || (memcpy(&w, *p, 4), w == 0))
        return 0;
    *p += 4;
    *a = (carg){.type = (int)(w >> A_SHIFT)};
    a->kg = w & (((uint32_t)1 << A_SHIFT) - 1);
    if (!a->kg)
        a->key = get_str(p, &a->kn);
    switch (a->type) {
    case A_INT:
    case A_UINT:
    case A_DOUBLE: memcpy(&a->v, *p, 8); *p += 8; break;
    case A_BOOL: a->v = **p; *p += 1; break;
    case A_STR: {
        uint32_t g;
        memcpy(&g, *p, 4);
        a->v = g;
        *p += 4;
        break;
    }
    default: a->s = get_str(p, &a->sn); break;
    }
    return 1;
}

/* The garg kinds of A_INT .. A_STR. */
static const uint32_t garg_kind[] = {0, ACT__PF_ARG_INT, ACT__PF_ARG_UINT, ACT__PF_ARG_DOUBLE,
                                     ACT__PF_ARG_BOOL, ACT__PF_ARG_STR_IID};

/* Write the args at @p p .. @p end into the event being built. */
static void emit_args(act__pf *pf, const uint8_t *p, const uint8_t *end)
{
    carg a;
    while (next_arg(&p, end, &a)) {
        double d;
        memcpy(&d, &a.v, 8);
        if (a.kg) {
            switch (a.type) {
            case A_INT: act__pf_arg_int_g(pf, a.kg, (int64_t)a.v); break;
            case A_UINT: act__pf_arg_uint_g(pf, a.kg, a.v); break;
            case A_DOUBLE: act__pf_arg_double_g(pf, a.kg, d); break;
            case A_BOOL: act__pf_arg_bool_g(pf, a.kg, (int)a.v); break;
            case A_STR: act__pf_arg_str_iid(pf, a.kg, (uint32_t)a.v); break;
            case A_STR_INLINE: act__pf_arg_str_g(pf, a.kg, a.s, a.sn); break;
            default: {
                size_t kn;
                const char *key = act__pf_string(pf, a.kg, &kn);
                act__pf_arg_json(pf, key, kn, a.s, a.sn);
                break;
            }
            }
            continue;
        }
        switch (a.type) {
        case A_INT: act__pf_arg_int(pf, a.key, a.kn, (int64_t)a.v); break;
        case A_UINT: act__pf_arg_uint(pf, a.key, a.kn, a.v); break;
        case A_DOUBLE: act__pf_arg_double(pf, a.key, a.kn, d); break;
        case A_BOOL: act__pf_arg_bool(pf, a.key, a.kn, (int)a.v); break;
        case A_STR: {
            size_t n;
            const char *s = act__pf_string(pf, (uint32_t)a.v, &n);
            act__pf_arg_str(pf, a.key, a.kn, s, n);
            break;
        }
        case A_STR_INLINE: act__pf_arg_str(pf, a.key, a.kn, a.s, a.sn); break;
        default: act__pf_arg_json(pf, a.key, a.kn, a.s, a.sn); break;
        }
    }
}

/* ---- reading ---------------------------------------------------------------- */

static void add_event(conv *c, int kind, uint32_t track, int64_t t0, int64_t t1,
                      const act__jv *name, const act__jv *cat, const act__jv *args, abuf *ab)
{
    ab->len = 0;
    uint32_t flags = 0, ng = 0, cg = 0;
    if (name && name->type == ACT__J_STRING && name->len &&
        !(ng = put_str(ab, c, name->s, name->len)))
        flags |= RF_NAME_INLINE;
    if (cat && cat->type == ACT__J_STRING && cat->len &&
        !(cg = put_str(ab, c, cat->s, cat->len)))
        flags |= RF_CAT_INLINE;
    if (args && args->type == ACT__J_OBJECT)
        for (const act__jv *a = args->child; a; a = a->next)
            encode_value(ab, c, a->key, a->klen, a);
    int64_t hi = kind == R_SLICE ? t1 : t0;
    if (!c->has_t || t0 < c->tmin)
        c->tmin = t0;
    if (!c->has_t || hi > c->tmax)
        c->tmax = hi;
    c->has_t = 1;
    crec *r = rec_new(c, sizeof(crec) + ab->len);
    r->tk = track << TRACK_SHIFT | flags | (uint32_t)kind;
    r->t0 = t0;
    r->t1 = t1;
    r->name = ng;
    r->cat = cg;
    if (ab->len)
        memcpy(r + 1, ab->p, ab->len);
    c->events++;
}

static int id_of(const act__jv *v, int64_t *out)
{
    uint32_t u;
    if (!v || !act_cli_json_id(v, &u) || u > 0x7fffffffu)
        return 0;
    *out = u;
    return 1;
}

static void read_event(conv *c, const act__jv *e, abuf *ab)
{
    act_cli_fields f;
    act_cli_get_fields(e, &f);
    if (!f.ph || f.ph->type != ACT__J_STRING || f.ph->len != 1) {
        c->skipped_bad++;
        return;
    }
    char ph = f.ph->s[0];
    int64_t pid = 0, tid = 0, ts = 0, dur = 0;
    if (ph == 'M') {
        if (!id_of(f.pid, &pid) || !f.name || !f.args)
            return;
        const act__jv *nm = act__jv_get(f.args, "name");
        if (!nm || nm->type != ACT__J_STRING)
            return;
        if (act__jv_is(f.name, "process_name")) {
            cproc *p = proc_of(c, pid);
            free(p->name);
            p->name = act_cli_xstrdup(nm->s);
        } else if (act__jv_is(f.name, "thread_name") && id_of(f.tid, &tid)) {
            uint32_t ti = track_of(c, pid, tid, NULL, 0); /* may move c->trk */
            ctrack *t = &c->trk[ti];
            free(t->name);
            t->name = act_cli_xstrdup(nm->s);
        }
        return;
    }
    if (ph == 'B' || ph == 'E') {
        c->skipped_be++;
        return;
    }
    if (!id_of(f.pid, &pid) || !f.ts || !act_cli_json_ns(f.ts, &ts)) {
        c->skipped_bad++;
        return;
    }
    if (ph != 'C' && !id_of(f.tid, &tid)) {
        c->skipped_bad++;
        return;
    }
    proc_of(c, pid);
    switch (ph) {
    case 'X':
        if (!f.dur || !act_cli_json_ns(f.dur, &dur) || dur < 0)
            dur = 0;
        if (__builtin_add_overflow(ts, dur, &dur)) { /* dur: the end, now */
            c->skipped_bad++;
            return;
        }
        add_event(c, R_SLICE, track_of(c, pid, tid, NULL, 0), ts, dur, f.name, f.cat,
                  f.args, ab);
        break;
    case 'i':
    case 'I':
        add_event(c, R_INSTANT, track_of(c, pid, tid, NULL, 0), ts, ts, f.name, f.cat, f.args,
                  ab);
        break;
    case 's':
    case 't':
    case 'f': {
        /* Integer ids as they are; string ids ("0x1f", as Chrome allows)
         * by a hash of their text. */
        int64_t i64;
        uint64_t id;
        if (f.id && act__jv_i64(f.id, &i64) && i64 >= 0) {
            id = (uint64_t)i64;
        } else if (f.id && f.id->type == ACT__J_STRING) {
            id = 1469598103934665603u;
            for (size_t i = 0; i < f.id->len; i++)
                id = (id ^ (unsigned char)f.id->s[i]) * 1099511628211u;
        } else {
            c->skipped_bad++;
            return;
        }
        uint8_t *cnt = fc_slot(&c->flowids, id, 1);
        if (*cnt < 2)
            ++*cnt;
        add_event(c, ph == 'f' ? R_FLOW_IN : R_FLOW_OUT, track_of(c, pid, tid, NULL, 0), ts,
                  (int64_t)id, NULL, NULL, NULL, ab);
        break;
    }
    case 'C': {
        if (!f.name || f.name->type != ACT__J_STRING || !f.args || f.args->type != ACT__J_OBJECT)
            return;
        for (const act__jv *a = f.args->child; a; a = a->next) {
            double v;
            if (!act__jv_num(a, &v))
                continue;
            /* "name key", on the stack unless it is long (no allocation
             * per sample). */
            char small[256];
            size_t n = f.name->len + 1 + a->klen;
            char *cn = n <= sizeof small ? small : act_cli_xmalloc(n);
            memcpy(cn, f.name->s, f.name->len);
            cn[f.name->len] = ' ';
            memcpy(cn + f.name->len + 1, a->key, a->klen);
            uint32_t tr = track_of(c, pid, 0, cn, n);
            if (cn != small)
                free(cn);
            int64_t bits;
            memcpy(&bits, &v, 8);
            add_event(c, R_COUNTER, tr, ts, bits, NULL, NULL, NULL, ab);
        }
        break;
    }
    default: c->skipped_bad++; break;
    }
}

/* Counter units, from actraceStats.counters ({track, series, unit,
 * device}), by the counter track's name as the JSON writer names it
 * ("track series", "(unnamed)" and "value" for empty parts) and device
 * (-1: the host). */
static void unit_key(abuf *k, int64_t dev, const char *name, size_t n)
{
    k->len = 0;
    aput(k, &dev, sizeof dev);
    aput(k, name, n);
}

static void read_units(conv *c, const act__jv *stats)
{
    const act__jv *list = act__jv_get(stats, "counters");
    if (!list || list->type != ACT__J_ARRAY)
        return;
    abuf k = {NULL, 0, 0};
    for (const act__jv *s = list->child; s; s = s->next) {
        const act__jv *tr = act__jv_get(s, "track"), *se = act__jv_get(s, "series"),
                      *un = act__jv_get(s, "unit"), *dv = act__jv_get(s, "device");
        if (!tr || tr->type != ACT__J_STRING || !se || se->type != ACT__J_STRING || !un ||
            un->type != ACT__J_STRING || !un->len || memchr(un->s, '\0', un->len))
            continue;
        int64_t dev = -1;
        if (dv && (!act__jv_i64(dv, &dev) || dev < 0))
            continue;
        const char *tn = tr->len ? tr->s : "(unnamed)", *sn = se->len ? se->s : "value";
        size_t tl = tr->len ? tr->len : 9, sl = se->len ? se->len : 5;
        char *name = act_cli_xmalloc(tl + 1 + sl);
        memcpy(name, tn, tl);
        name[tl] = ' ';
        memcpy(name + tl + 1, sn, sl);
        unit_key(&k, dev, name, tl + 1 + sl);
        free(name);
        int created;
        size_t *slot = act_cli_map_put(&c->units, (const char *)k.p, k.len, c->nunits, &created);
        if (created) {
            act_cli_grow(&c->unit, &c->capunits, c->nunits, sizeof *c->unit);
            c->unit[c->nunits++] = NULL;
        }
        free(c->unit[*slot]);
        c->unit[*slot] = act_cli_xstrdup(un->s);
    }
    free(k.p);
}

/* The unit of counter track @p t, or NULL. */
static const char *unit_of(const conv *c, const ctrack *t)
{
    if (!c->nunits)
        return NULL;
    int64_t dev = t->pid >= 0x40000000 ? t->pid - 0x40000000 : -1;
    abuf k = {NULL, 0, 0};
    unit_key(&k, dev, t->name, strlen(t->name));
    size_t *slot = act_cli_map_get(&c->units, (const char *)k.p, k.len);
    free(k.p);
    return slot ? c->unit[*slot] : NULL;
}

/* A top-level member, kept for the metadata instant. */
static void read_member(conv *c, const char *key, const act__jv *v, abuf *ab)
{
    if (strcmp(key, "traceEvents") == 0 || strcmp(key, "displayTimeUnit") == 0 ||
        strcmp(key, "schemaVersion") == 0)
        return;
    if (strcmp(key, "actraceStats") == 0 && v->type == ACT__J_OBJECT)
        read_units(c, v);
    if (strcmp(key, "baseTimeNanoseconds") == 0) {
        int64_t b;
        if (act__jv_i64(v, &b))
            c->base_ns = b;
    }
    ab->len = 0;
    encode_value(ab, c, key, strlen(key), v);
    act__out_write(&c->meta, ab->p, ab->len);
}

/* ---- merging ---------------------------------------------------------------- */

static int run_next(conv *c, run *r, size_t k)
{
    (void)c;
    if (r->pos + sizeof(crec) > r->len) {
        /* Refill, keeping the partial record. */
        size_t keep = r->len - r->pos;
        memmove(r->buf, r->buf + r->pos, keep);
        r->len = keep;
        r->pos = 0;
        (void)k;
        uint64_t left = r->end - r->off;
        size_t want = READ_BUF - keep < left ? READ_BUF - keep : (size_t)left;
        ssize_t got = want ? pread(r->fd, r->buf + keep, want, (off_t)r->off) : 0;
        if (got < 0) {
            fprintf(stderr, "actrace convert: cannot read the temporary file: %s\n", strerror(errno));
            exit(1);
        }
        r->off += (uint64_t)got;
        r->len += (size_t)got;
        if (r->len < sizeof(crec))
            return 0;
    }
    crec h;
    memcpy(&h, r->buf + r->pos, sizeof h);
    if (r->pos + h.len <= r->len) {
        r->head = (crec *)(r->buf + r->pos);
        r->pos += h.len;
        return 1;
    }
    /* A record that is not all in the buffer: read it whole aside. */
    free(r->big);
    r->big = act_cli_xmalloc(h.len);
    size_t have = r->len - r->pos;
    memcpy(r->big, r->buf + r->pos, have);
    if (pread(r->fd, r->big + have, h.len - have, (off_t)r->off) != (ssize_t)(h.len - have))
        return 0;
    r->off += h.len - have;
    r->pos = r->len = 0;
    r->head = (crec *)r->big;
    return 1;
}

typedef struct merger {
    conv *c;
    run *runs;
    size_t *heap, nheap;
    rkey *mem;  /* the last run, sorted in memory */
    size_t nmem, imem;
} merger;

static const crec *mhead(merger *m, size_t k)
{
    return k == m->c->nruns ? m->mem[m->imem].r : m->runs[k].head;
}

/* Heads of runs @p x before @p y: on a tie, the earlier run (input order). */
static int mless(merger *m, size_t x, size_t y)
{
    int d = cmp_rec(mhead(m, x), mhead(m, y));
    return d ? d < 0 : x < y;
}

static void sift(merger *m, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, b = i;
        if (l < m->nheap && mless(m, m->heap[l], m->heap[b]))
            b = l;
        if (l + 1 < m->nheap && mless(m, m->heap[l + 1], m->heap[b]))
            b = l + 1;
        if (b == i)
            return;
        size_t t = m->heap[i];
        m->heap[i] = m->heap[b];
        m->heap[b] = t;
        i = b;
    }
}

/* The next record in sorted order (valid until the next call), or NULL. */
static const crec *merge_next(merger *m, size_t *cur)
{
    if (*cur != SIZE_MAX) {
        size_t k = m->heap[0];
        int more = k == m->c->nruns ? ++m->imem < m->nmem : run_next(m->c, &m->runs[k], k);
        if (!more)
            m->heap[0] = m->heap[--m->nheap];
        if (m->nheap)
            sift(m, 0);
    }
    *cur = 0;
    return m->nheap ? mhead(m, m->heap[0]) : NULL;
}

/* ---- writing ----------------------------------------------------------------- */

static uint64_t uuid_of(const ctrack *t, uint32_t idx)
{
    if (t->tid < 0)
        return ACT__PF_UUID_COUNTER(idx);
    if (t->pid == 0)
        return (uint64_t)1 << 61 | 0x80000000u | (uint64_t)t->tid;
    return act__pf_uuid_thread((int32_t)t->pid, (uint32_t)t->tid);
}

static uint64_t proc_uuid(int64_t pid)
{
    return pid == 0 ? (uint64_t)1 << 61 : act__pf_uuid_process((int32_t)pid);
}

static void write_tracks(const conv *c, act__pf *pf)
{
    for (size_t i = 0; i < c->nprocs; i++) {
        const cproc *p = &c->procs[i];
        uint64_t u = proc_uuid(p->pid);
        act__pf_track_seen(pf, u);
        char buf[64];
        const char *nm = p->name;
        if (p->pid == 0) {
            /* pid 0 (Kineto's device 0) cannot be a ProcessDescriptor. */
            if (!nm) {
                snprintf(buf, sizeof buf, "process 0");
                nm = buf;
            }
            act__pf_track_named(pf, u, 0, nm, strlen(nm));
        } else {
            act__pf_track_process(pf, u, (int32_t)p->pid, nm, nm ? strlen(nm) : 0);
        }
    }
    for (size_t i = 0; i < c->ntrk; i++) {
        ctrack *t = &c->trk[i];
        t->uuid = uuid_of(t, (uint32_t)i);
        act__pf_track_seen(pf, t->uuid);
        uint64_t parent = proc_uuid(t->pid);
        if (t->tid < 0)
            act__pf_track_counter(pf, t->uuid, parent, t->name, strlen(t->name), unit_of(c, t));
        else if (t->pid == 0 || t->tid == 0 || (uint64_t)t->pid >= 0x40000000u) {
            char buf[64];
            const char *nm = t->name;
            if (!nm) {
                snprintf(buf, sizeof buf, "stream %" PRId64, t->tid);
                nm = buf;
            }
            act__pf_track_named(pf, t->uuid, parent, nm, strlen(nm));
        } else {
            act__pf_track_thread(pf, t->uuid, parent, (int32_t)t->pid, (int32_t)t->tid, t->name,
                                 t->name ? strlen(t->name) : 0);
        }
    }
}

/* Flows read but not written yet: they go on the slice of their track
 * that starts at their time, t. */
#define FLOWS_MAX 64
typedef struct flows {
    uint64_t id[FLOWS_MAX];
    int dir[FLOWS_MAX];
    size_t n;
    int64_t t;
} flows;

static void flows_put(act__pf *pf, flows *fl)
{
    for (size_t i = 0; i < fl->n; i++)
        act__pf_flow(pf, fl->id[i], fl->dir[i]);
    fl->n = 0;
}

/* Flows no slice starts with: an instant "flow" carries them. */
static void flows_alone(conv *c, act__pf *pf, uint32_t seq, flows *fl)
{
    act__pf_event(pf, seq, ACT__PF_INSTANT, 0, fl->t + c->base_ns, 0, NULL, 0, "flow", 4);
    c->unbound_flows += fl->n;
    flows_put(pf, fl);
    act__pf_event_end(pf);
}

/* A slice [t0, t1] or an instant, with flows @p fl when not NULL: at once
 * when every string is interned and it has at most ACT__PF_GARGS_MAX args
 * and no flows (the usual event), else field by field. */
static void write_event(conv *c, act__pf *pf, uint32_t seq, const crec *r, int64_t t0, int64_t t1,
                        flows *fl)
{
    const uint8_t *p = (const uint8_t *)(r + 1), *end = (const uint8_t *)r + r->len;
    int type = REC_KIND(r) == R_SLICE ? ACT__PF_BEGIN : ACT__PF_INSTANT;
    const char *name = NULL, *cat = NULL;
    size_t nn = 0, cn = 0;
    if (r->tk & RF_NAME_INLINE)
        name = get_str(&p, &nn);
    if (r->tk & RF_CAT_INLINE)
        cat = get_str(&p, &cn);
    uint32_t ng = r->name, cg = r->cat;
    if (!ng && !name)
        ng = c->unnamed_g;
    if (!fl && ng && !name && !cat) {
        act__pf_garg ga[ACT__PF_GARGS_MAX];
        size_t n = 0;
        const uint8_t *q = p;
        carg a;
        int simple = 1;
        while (simple && next_arg(&q, end, &a)) {
            if (n == ACT__PF_GARGS_MAX || !a.kg || a.type > A_STR)
                simple = 0;
            else
                ga[n++] = (act__pf_garg){a.kg, garg_kind[a.type], a.v};
        }
        if (simple) {
            act__pf_event_args_g(pf, seq, type, 0, t0, t1, cg, ng, ga, n);
            return;
        }
    }
    if (ng && !name && !cat) {
        act__pf_event_g(pf, seq, type, 0, t0, t1, cg, ng);
    } else {
        if (!name && ng)
            name = act__pf_string(pf, ng, &nn);
        else if (!name)
            name = "(unnamed)", nn = 9;
        if (!cat && cg)
            cat = act__pf_string(pf, cg, &cn);
        act__pf_event(pf, seq, type, 0, t0, t1, cat, cn, name, nn);
    }
    emit_args(pf, p, end);
    if (fl)
        flows_put(pf, fl);
    act__pf_event_end(pf);
}

static void write_events(conv *c, act__pf *pf)
{
    merger m;
    memset(&m, 0, sizeof m);
    m.c = c;
    m.runs = act_cli_xcalloc(c->nruns + 1, sizeof *m.runs);
    m.heap = act_cli_xcalloc(c->nruns + 1, sizeof *m.heap);
    for (size_t k = 0; k < c->nruns; k++) {
        run *r = &m.runs[k];
        /* Runs share one file: each reads its range with pread. */
        if (k == 0 && fflush(c->spill) != 0) {
            fprintf(stderr, "actrace convert: cannot write the temporary file: %s\n", strerror(errno));
            exit(1);
        }
        r->fd = fileno(c->spill);
        r->off = c->run_off[k];
        r->end = c->run_off[k + 1];
        r->buf = act_cli_xmalloc(READ_BUF);
        if (run_next(c, r, k))
            m.heap[m.nheap++] = k;
    }
    m.nmem = c->nrec;
    m.mem = sort_run(c);
    if (m.nmem)
        m.heap[m.nheap++] = c->nruns;
    for (size_t i = m.nheap / 2 + 1; i-- > 0;)
        sift(&m, i);

    size_t cur = SIZE_MAX;
    uint32_t track = UINT32_MAX, seq = 0;
    /* Flows waiting for the slice that begins with them. */
    flows fl = {.n = 0};
    const crec *r;
    for (;;) {
        r = merge_next(&m, &cur);
        if (fl.n && (!r || REC_TRACK(r) != track || r->t0 != fl.t ||
                     (REC_KIND(r) != R_SLICE && REC_KIND(r) > R_FLOW_IN)))
            flows_alone(c, pf, seq, &fl); /* no slice starts with them */
        if (!r)
            break;
        if (REC_TRACK(r) != track) {
            if (seq)
                act__pf_seq_flush(pf, seq);
            track = REC_TRACK(r);
            seq = act__pf_seq_new(pf, r->t0 + c->base_ns, c->trk[track].uuid);
        }
        int kind = REC_KIND(r);
        int64_t t0 = r->t0 + c->base_ns;
        switch (kind) {
        case R_FLOW_OUT:
        case R_FLOW_IN: {
            const uint8_t *cnt = fc_slot(&c->flowids, (uint64_t)r->t1, 0);
            if (!cnt || *cnt < 2) {
                c->lonely_flows++; /* its other end is not in the trace */
                break;
            }
            if (fl.n == FLOWS_MAX)
                flows_alone(c, pf, seq, &fl);
            fl.t = r->t0;
            fl.dir[fl.n] = kind == R_FLOW_IN;
            fl.id[fl.n++] = (uint64_t)r->t1;
            break;
        }
        case R_COUNTER: {
            double v;
            memcpy(&v, &r->t1, 8);
            act__pf_event(pf, seq, ACT__PF_COUNTER, 0, t0, t0, NULL, 0, NULL, 0);
            act__pf_counter_value(pf, v);
            act__pf_event_end(pf);
            break;
        }
        default: {
            int with = fl.n && r->t0 == fl.t && kind == R_SLICE;
            write_event(c, pf, seq, r, t0, r->t1 + c->base_ns, with ? &fl : NULL);
            break;
        }
        }
    }
    if (seq)
        act__pf_seq_flush(pf, seq);
    for (size_t k = 0; k < c->nruns; k++) {
        free(m.runs[k].buf);
        free(m.runs[k].big);
    }
    free(m.runs);
    free(m.heap);
    free(m.mem);
}

static void write_meta(conv *c, act__pf *pf)
{
    size_t n;
    if (act__out_finish(&c->meta) != 0)
        return;
    uint8_t *b = (uint8_t *)act__out_mem_take(&c->meta, &n);
    act__pf_track_seen(pf, ACT__PF_UUID_META);
    act__pf_track_named(pf, ACT__PF_UUID_META, 0, "actrace", 7);
    uint32_t seq = act__pf_seq_new(pf, c->base_ns, ACT__PF_UUID_META);
    act__pf_event(pf, seq, ACT__PF_INSTANT, 0, c->base_ns, 0, "actrace", 7, "actraceMetadata", 15);
    if (b)
        emit_args(pf, b, b + n);
    act__pf_event_end(pf);
    free(b);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: actrace convert [--] IN OUT\n"
               "  IN: a Chrome JSON trace (actrace's, Kineto's; .gz; - for stdin)\n"
               "  OUT: a Perfetto trace (.pftrace, .pftrace.gz)\n");
}

int act_cmd_convert(int argc, char **argv)
{
    const act_cli_opt opts[] = {{NULL, NULL, NULL, NULL}};
    const char **ops = act_cli_xcalloc((size_t)argc + 1, sizeof *ops);
    int n = 0;
    int prc = act_cli_parse("convert", argc, argv, opts, usage, ops, &n);
    if (prc == 0 && n != 2) {
        fprintf(stderr, "actrace convert: %s\n",
                n < 2 ? "IN and OUT are needed" : "one IN and one OUT only");
        usage(stderr);
        prc = 2;
    }
    const char *in = n > 0 ? ops[0] : NULL, *outp = n > 1 ? ops[1] : NULL;
    free(ops);
    if (prc)
        return prc == 1 ? 0 : 2;
    if (!act_cli_is_pftrace(outp)) {
        fprintf(stderr, "actrace convert: %s: the output must end in .pftrace or .pftrace.gz\n", outp);
        return 2;
    }
    return act_cli_convert(in, outp);
}

/* Everything @p c holds (and the record buffer @p ab). */
static void conv_free(conv *c, abuf *ab)
{
    if (c->spill)
        fclose(c->spill);
    free(c->spillbuf);
    for (size_t i = 0; i < c->ntrk; i++)
        free(c->trk[i].name);
    for (size_t i = 0; i < c->nprocs; i++)
        free(c->procs[i].name);
    free(c->trk);
    free(c->procs);
    free(c->run_off);
    free(c->runbuf);
    free(ab->p);
    for (size_t i = 0; i < c->nunits; i++)
        free(c->unit[i]);
    free(c->unit);
    act_cli_map_free(&c->units);
    act_cli_map_free(&c->tracks);
    act_cli_map_free(&c->procmap);
    free(c->flowids.key);
    free(c->flowids.n);
}

int act_cli_convert(const char *in, const char *outp)
{
    char msg[512];
    act_cli_trace tr;
    if (act_cli_trace_open(&tr, in, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s: error: %s\n", in, msg);
        return 2;
    }
    conv c;
    memset(&c, 0, sizeof c);
    c.in = in;
    c.runcap = RUN_BYTES;
    /* Test hook: a small run buffer, so that small inputs spill too. */
    const char *rb = getenv("ACT_CONVERT_RUN_BYTES");
    if (rb && atol(rb) >= 4096)
        c.runcap = (size_t)atol(rb);
    c.runbuf = act_cli_xmalloc(c.runcap);
    /* The encoder exists from the start, so that records carry its iids;
     * its output is opened once the input is read (none on a bad input). */
    act__pf pf;
    if (act__out_open_mem(&c.meta, 0) != 0 || act__pf_init(&pf, NULL) != 0) {
        fprintf(stderr, "actrace: out of memory\n");
        return 1;
    }
    c.pf = &pf;
    c.unnamed_g = act__pf_intern(&pf, "(unnamed)", 9);
    act_cli_progress_t prog = {"convert", isatty(2), 0, 0, 0};
    act_cli_progress(&prog, 0, 0);
    abuf ab = {NULL, 0, 0};
    act__rd_item it;
    int k;
    uint64_t items = 0;
    while ((k = act__rd_next(tr.rd, &it)) > 0) {
        if (k == ACT__RD_EVENT)
            read_event(&c, it.v, &ab);
        else
            read_member(&c, it.key, it.v, &ab);
        if ((++items & 4095) == 0)
            act_cli_progress(&prog, act__rd_bytes_read(tr.rd), 0);
    }
    act_cli_progress(&prog, 0, 1);
    if (k < 0) {
        fprintf(stderr, "%s: error: %s\n", in, act__rd_errmsg(tr.rd));
        act_cli_trace_close(&tr);
        act__pf_free(&pf);
        act__out_abort(&c.meta);
        conv_free(&c, &ab);
        return 2;
    }
    act_cli_trace_close(&tr);
    /* Absolute times are the base plus each event's: refused when that
     * leaves 64 bits (the output's times would wrap). */
    int64_t lo, hi;
    if (c.has_t && (__builtin_add_overflow(c.base_ns, c.tmin, &lo) ||
                    __builtin_add_overflow(c.base_ns, c.tmax, &hi))) {
        fprintf(stderr, "%s: error: baseTimeNanoseconds %" PRId64 " plus the events' times "
                "(%" PRId64 " ns to %" PRId64 " ns after it) passes the 64-bit range of "
                "nanoseconds\n", in, c.base_ns, c.tmin, c.tmax);
        act__pf_free(&pf);
        act__out_abort(&c.meta);
        conv_free(&c, &ab);
        return 2;
    }
    /* The last run stays in memory and is merged with the spilled ones. */

    act__out out;
    if (act__out_open(&out, outp, msg, sizeof msg) != 0) {
        fprintf(stderr, "actrace convert: %s\n", msg);
        act__pf_free(&pf);
        act__out_abort(&c.meta);
        conv_free(&c, &ab);
        return 1;
    }
    act__pf_set_out(&pf, &out);
    act__pf_clocks(&pf, c.base_ns, c.base_ns, c.base_ns);
    write_tracks(&c, &pf);
    write_events(&c, &pf);
    write_meta(&c, &pf);
    int rc = act__pf_finish(&pf);
    uint64_t clamped = pf.clamped;
    act__pf_free(&pf);
    if (rc) {
        act__out_abort(&out);
        fprintf(stderr, "actrace: out of memory\n");
        conv_free(&c, &ab);
        return 1;
    }
    if (act__out_finish(&out) != 0) {
        fprintf(stderr, "actrace convert: %s\n", act__out_errmsg(&out));
        conv_free(&c, &ab);
        return 1;
    }
    if (c.skipped_be || c.skipped_bad || clamped || c.unbound_flows || c.lonely_flows)
        fprintf(stderr,
                "actrace convert: %s: %" PRIu64 " B/E events skipped, %" PRIu64
                " malformed events skipped, %" PRIu64 " slices cut to their parent's end, %" PRIu64
                " flows with no slice starting with them, %" PRIu64
                " one-ended flows left out (their other end is not in the trace)\n",
                in, c.skipped_be, c.skipped_bad, clamped, c.unbound_flows, c.lonely_flows);
    conv_free(&c, &ab);
    return 0;
}
