/* SPDX-License-Identifier: MIT */
/*
 * The merge step of `actrace record`: the per-process traces that the
 * recorded processes wrote into record's private directory become one
 * trace, read with the streaming reader (src/reader), one pass per file
 * plus a look at each file's head (its deviceProperties and
 * baseTimeNanoseconds come before its events).
 *
 * What changes on the way: every file's "ts" is relative to its own
 * baseTimeNanoseconds; the output's base is the smallest, and each ts is
 * moved by the difference exactly (integer nanoseconds from the decimal
 * text, never a double). Devices get pids of their own per file (the
 * writer numbers a process's devices from 0x40000000 up; files after the
 * first are shifted past the earlier ones, "device" args and
 * deviceProperties ids with them). Flow ids ("id" of s/f/t events) are
 * renumbered per file so that flows stay within their process. A host pid
 * already used by an earlier file moves to a fresh pid above 0x20000000
 * (pid reuse), unless both files name the same process ("actraceProcessId",
 * its pidfs inode, or "actraceProcessStart", its start in clock ticks where
 * there is no pidfs): then it is one process that exec'd, and keeps
 * its pid. actraceStats: integer fields summed across files, objects
 * merged the same way, anything else taken from the first file, and
 * "processes" lists each file's own stats with its pid.
 *
 * The output goes through the trace writer's own sink (src/writer/out_sink.c,
 * compiled into the CLI too): the same temporary name and rename, mode and
 * owner kept, devices and FIFOs written in place, ".gz" compressed, as a
 * trace the library writes itself.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/spool.h"
#include "reader/reader.h"
#include "actrace/version.h"
#include "writer/json_out.h"
#include "merge_meta.h"
#include "record_light.h"
#include "record_merge.h"

#define DEVICE_PID_BASE 0x40000000LL
#define REUSED_PID_BASE 0x20000000LL

typedef struct mout {
    act__out out; /* errors are sticky: act__out_finish reports the first */
} mout;

static void put(mout *o, const char *s, size_t n)
{
    act__out_write(&o->out, s, n);
}
static void puts0(mout *o, const char *s) { put(o, s, strlen(s)); }

static void put_i64(mout *o, int64_t v)
{
    char b[ACT__FMT_I64_MAX];
    put(o, b, (size_t)(act__fmt_i64(b, v) - b)); /* no snprintf: several per event */
}

/* @p s as a JSON string, handed to @p emit in pieces (the merge's output
 * and the light logs' buffer share it): escaped as the library's writer
 * escapes (act__json_escape_units), so bytes that are not UTF-8 (a process
 * named "caf\xe9") become U+FFFD and the trace stays valid JSON. Plain
 * ASCII runs, nearly every string, are handed over as they are. */
static void jstr_to(void (*emit)(void *, const char *, size_t), void *ctx, const char *s,
                    size_t n)
{
    emit(ctx, "\"", 1);
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        while (i < n && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x80 &&
               s[i] != '"' && s[i] != '\\')
            i++;
        emit(ctx, s + start, i - start);
        if (i == n)
            break;
        /* Up to 256 units from here: escaped or repaired, never split. */
        char e[6 * 256];
        size_t lim = n - i < 256 ? n - i : 256, used;
        char *end = act__json_escape_units(e, s + i, lim, n - i, &used);
        emit(ctx, e, (size_t)(end - e));
        i += used;
    }
    emit(ctx, "\"", 1);
}

static void put_emit(void *o, const char *s, size_t n) { put(o, s, n); }

static void put_jstr(mout *o, const char *s, size_t n)
{
    jstr_to(put_emit, o, s, n);
}

static void put_value(mout *o, const act__jv *v)
{
    switch (v->type) {
    case ACT__J_NULL: puts0(o, "null"); break;
    case ACT__J_FALSE: puts0(o, "false"); break;
    case ACT__J_TRUE: puts0(o, "true"); break;
    case ACT__J_NUMBER: put(o, v->s, v->len); break;
    case ACT__J_STRING: put_jstr(o, v->s, v->len); break;
    case ACT__J_ARRAY:
    case ACT__J_OBJECT: {
        put(o, v->type == ACT__J_ARRAY ? "[" : "{", 1);
        for (const act__jv *c = v->child; c; c = c->next) {
            if (c != v->child)
                put(o, ",", 1);
            if (v->type == ACT__J_OBJECT) {
                put_jstr(o, c->key, c->klen);
                put(o, ":", 1);
            }
            put_value(o, c);
        }
        put(o, v->type == ACT__J_ARRAY ? "]" : "}", 1);
        break;
    }
    default: break;
    }
}

/* Microseconds with three decimals, trailing zeros dropped. */
static void put_us(mout *o, int64_t ns)
{
    char b[48], *p = b;
    int neg = ns < 0;
    uint64_t a = neg ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (neg)
        *p++ = '-';
    p = act__fmt_u64(p, a / 1000);
    unsigned frac = (unsigned)(a % 1000);
    if (frac) {
        p[0] = '.';
        p[1] = (char)('0' + frac / 100);
        p[2] = (char)('0' + frac / 10 % 10);
        p[3] = (char)('0' + frac % 10);
        p += 4;
        while (p[-1] == '0')
            p--;
    }
    put(o, b, (size_t)(p - b));
}

/* ---- per-file state -------------------------------------------------------- */

typedef struct flowmap {
    uint64_t *k, *v;
    size_t cap, n;
} flowmap;

static uint64_t flow_get(flowmap *m, uint64_t key, uint64_t *next)
{
    if (m->n * 2 >= m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        uint64_t *nk = calloc(ncap, sizeof *nk), *nv = calloc(ncap, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return key;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->v[i])
                continue;
            size_t h = (size_t)(m->k[i] * 0x9e3779b97f4a7c15ull) & (ncap - 1);
            while (nv[h])
                h = (h + 1) & (ncap - 1);
            nk[h] = m->k[i];
            nv[h] = m->v[i];
        }
        free(m->k);
        free(m->v);
        m->k = nk;
        m->v = nv;
        m->cap = ncap;
    }
    size_t h = (size_t)(key * 0x9e3779b97f4a7c15ull) & (m->cap - 1);
    while (m->v[h]) {
        if (m->k[h] == key)
            return m->v[h];
        h = (h + 1) & (m->cap - 1);
    }
    m->k[h] = key;
    m->v[h] = ++*next;
    m->n++;
    return m->v[h];
}

typedef struct mfile {
    char *path;
    int64_t pid;      /* from the name <pid>-<ns>.json */
    int64_t new_pid;  /* pid in the output */
    int64_t base_ns;
    int has_base;
    int64_t ndev;     /* devices of this file (max id + 1) */
    int64_t dev_off;  /* added to its device numbers */
    act__jv *stats;   /* its actraceStats (a copy), or NULL */
    act__spool_life *life; /* a light log (path: its BASE), or NULL: a trace */
    int recovered;    /* "actraceRecovered": rebuilt from the spool */
    int64_t proc_start; /* act__proc_id's: "actraceProcessId" or "...Start" (0: absent) */
    act__jv *devs;    /* its deviceProperties (a copy), or NULL */
    flowmap flows;
    act__merge_meta meta; /* distributedInfo, trace_id, host_name, ... */
    uint64_t id_mul, id_add; /* ids x of this file become x * id_mul + id_add */
} mfile;

/* ---- actraceStats ------------------------------------------------------------ */

static const act__jv *child_of(const act__jv *o, const char *key, size_t klen)
{
    if (!o || o->type != ACT__J_OBJECT)
        return NULL;
    const act__jv *hit = NULL;
    for (const act__jv *c = o->child; c; c = c->next)
        if (c->klen == klen && memcmp(c->key, key, klen) == 0)
            hit = c;
    return hit;
}

/* Writes the merge of @p n values (some NULL) found under one key. */
static void put_merged(mout *o, const act__jv **vals, size_t n)
{
    const act__jv *first = NULL;
    int all_int = 1, all_obj = 1;
    for (size_t i = 0; i < n; i++) {
        if (!vals[i])
            continue;
        if (!first)
            first = vals[i];
        if (!(vals[i]->type == ACT__J_NUMBER && vals[i]->integer))
            all_int = 0;
        if (vals[i]->type != ACT__J_OBJECT)
            all_obj = 0;
    }
    if (!first) {
        puts0(o, "null");
        return;
    }
    if (all_int) {
        int64_t sum = 0, x;
        for (size_t i = 0; i < n; i++)
            if (vals[i] && act__jv_i64(vals[i], &x))
                sum += x;
        put_i64(o, sum);
        return;
    }
    if (!all_obj) {
        put_value(o, first);
        return;
    }
    const act__jv **sub = calloc(n ? n : 1, sizeof *sub);
    if (!sub) {
        put_value(o, first);
        return;
    }
    put(o, "{", 1);
    int any = 0;
    /* Keys in order of first appearance across the files. */
    for (size_t i = 0; i < n; i++) {
        if (!vals[i])
            continue;
        for (const act__jv *c = vals[i]->child; c; c = c->next) {
            int seen = 0;
            for (size_t j = 0; j < i && !seen; j++)
                seen = child_of(vals[j], c->key, c->klen) != NULL;
            if (seen || child_of(vals[i], c->key, c->klen) != c)
                continue;
            for (size_t j = 0; j < n; j++)
                sub[j] = child_of(vals[j], c->key, c->klen);
            if (any)
                put(o, ",", 1);
            any = 1;
            put_jstr(o, c->key, c->klen);
            put(o, ":", 1);
            put_merged(o, sub, n);
        }
    }
    put(o, "}", 1);
    free(sub);
}

/* ---- the passes ---------------------------------------------------------------- */

int act__merge_open(const char *path, int *fd, act__rd **r, char *err, size_t errcap)
{
    *r = NULL;
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) {
        snprintf(err, errcap, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (act__rd_create(*fd, NULL, r) != 0) {
        close(*fd);
        *fd = -1;
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    return 0;
}

/* The head of @p f: its deviceProperties and baseTimeNanoseconds. */
/* A light log's trace text (life_json), built in a buffer of the merge's:
 * no stdio, a few hundred bytes per process. */
typedef struct lbuf {
    char *p;
    size_t n, cap;
    int oom;
} lbuf;

static void lb_put(lbuf *b, const char *s, size_t n)
{
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 4096;
        while (nc < b->n + n)
            nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void lb_lit(lbuf *b, const char *s) { lb_put(b, s, strlen(s)); }

static void lb_i64(lbuf *b, int64_t v)
{
    char t[ACT__FMT_I64_MAX];
    lb_put(b, t, (size_t)(act__fmt_i64(t, v) - t));
}

static void lb_dbl(lbuf *b, double v)
{
    char t[ACT__FMT_DOUBLE_MAX];
    lb_put(b, t, (size_t)(act__fmt_double(t, v) - t));
}

/* A percentage to three decimals (1e-3 % of the process's life is past
 * what its CPU times, in microseconds, tell), trailing zeros dropped: by
 * hand, where %.15g cost about 3.8k instructions a number, two per
 * process record's merge reads from the light log. */
static void lb_pct(lbuf *b, double v)
{
    if (!(v > -1e12 && v < 1e12)) {
        lb_dbl(b, v);
        return;
    }
    int64_t r = llround(v * 1000.0);
    char t[ACT__FMT_I64_MAX + 5], *e = t;
    if (r < 0) {
        *e++ = '-';
        r = -r;
    }
    e = act__fmt_i64(e, r / 1000);
    int f = (int)(r % 1000);
    if (f) {
        *e++ = '.';
        *e++ = (char)('0' + f / 100);
        if (f % 100) {
            *e++ = (char)('0' + f / 10 % 10);
            if (f % 10)
                *e++ = (char)('0' + f % 10);
        }
    }
    lb_put(b, t, (size_t)(e - t));
}

/* Nanoseconds >= 0 as microseconds with three decimals. */
static void lb_us(lbuf *b, int64_t ns)
{
    char t[ACT__FMT_I64_MAX + 4];
    char *e = act__fmt_i64(t, ns / 1000);
    int f = (int)(ns % 1000);
    *e++ = '.';
    *e++ = (char)('0' + f / 100);
    *e++ = (char)('0' + f / 10 % 10);
    *e++ = (char)('0' + f % 10);
    lb_put(b, t, (size_t)(e - t));
}

static void lb_emit(void *b, const char *s, size_t n) { lb_put(b, s, n); }

static void lb_str(lbuf *b, const char *s, size_t n)
{
    jstr_to(lb_emit, b, s, n);
}

/* ---- light logs ------------------------------------------------------------- */

/* The base of a light log's trace: as the writer's (src/writer/visit.c), a
 * whole second at least one before its first event. */
static int64_t life_base(const act__spool_life *l)
{
    return ((l->start_mono + l->mono_to_unix) / 1000000000 - 1) * 1000000000;
}

/* What a light log shows, as the rebuild's session and writer would have
 * written it (session/rebuild.c, spool.c light_life). */
typedef struct life_shape {
    int known, span, mem0, mem1, cpu;
    double secs;
} life_shape;

static life_shape life_shape_of(const act__spool_life *l)
{
    life_shape h;
    int64_t t0 = l->start_mono, t1 = l->stop_mono;
    h.known = l->parent >= 0; /* a log with the start's samples */
    h.span = h.known && l->have_exit;
    h.mem0 = h.known && l->rss0_kib >= 0;
    h.mem1 = h.span && l->rss1_kib >= 0;
    h.secs = t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
    h.cpu = h.span && h.secs > 0 && l->user1_us >= l->user0_us && l->user0_us >= 0 &&
            l->sys1_us >= l->sys0_us && l->sys0_us >= 0;
    return h;
}

/* The events of a process that recorded nothing (its name, one span for
 * its life with parent and exit status, memory at start and exit, CPU
 * over its life), as pid @p pid with times relative to @p base (unix
 * ns), each after ",\n" unless *@p first: straight into the merged
 * trace, no reader and no writer. Returns how many. */
static uint64_t life_events(lbuf *b, const act__spool_life *l, int64_t pid, int64_t base,
                            int *first)
{
    life_shape h = life_shape_of(l);
    int64_t t0 = l->start_mono, t1 = l->stop_mono;
    int64_t rel0 = t0 + l->mono_to_unix - base, rel1 = t1 + l->mono_to_unix - base;
    lb_lit(b, *first ? "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":"
                     : ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
    *first = 0;
    lb_i64(b, pid);
    lb_lit(b, ",\"tid\":0,\"args\":{\"name\":");
    if (l->name_len) {
        lb_str(b, l->name, l->name_len);
    } else {
        lb_lit(b, "\"pid ");
        lb_i64(b, l->pid);
        lb_lit(b, "\"");
    }
    lb_lit(b, "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":");
    lb_i64(b, pid);
    lb_lit(b, ",\"tid\":0,\"args\":{\"sort_index\":0}}");
    uint64_t n = 3;
    if (h.span) {
        lb_lit(b, ",\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"process\",\"pid\":");
        lb_i64(b, pid);
        lb_lit(b, ",\"tid\":");
        lb_i64(b, l->pid); /* a thread id: not moved with a reused pid */
        lb_lit(b, ",\"ts\":");
        lb_us(b, rel0);
        lb_lit(b, ",\"dur\":");
        lb_us(b, t1 - t0);
        lb_lit(b, ",\"args\":{\"parent_pid\":");
        lb_i64(b, l->parent);
        lb_lit(b, ",\"exit_status\":");
        lb_i64(b, l->status);
        lb_lit(b, "}}");
        n++;
    }
    for (int k = 0; k < 2; k++) {
        if (!(k ? h.mem1 : h.mem0))
            continue;
        lb_lit(b, ",\n{\"ph\":\"C\",\"cat\":\"host_counter\",\"name\":\"memory\",\"pid\":");
        lb_i64(b, pid);
        lb_lit(b, ",\"tid\":0,\"ts\":");
        lb_us(b, k ? rel1 : rel0);
        lb_lit(b, ",\"args\":{\"rss_bytes\":");
        lb_i64(b, (k ? l->rss1_kib : l->rss0_kib) * 1024);
        lb_lit(b, "}}");
        n++;
    }
    if (h.cpu) {
        lb_lit(b, ",\n{\"ph\":\"C\",\"cat\":\"host_counter\",\"name\":\"cpu\",\"pid\":");
        lb_i64(b, pid);
        lb_lit(b, ",\"tid\":0,\"ts\":");
        lb_us(b, rel1);
        lb_lit(b, ",\"args\":{\"user\":");
        lb_pct(b, (double)(l->user1_us - l->user0_us) / 1e6 / h.secs * 100.0);
        lb_lit(b, ",\"system\":");
        lb_pct(b, (double)(l->sys1_us - l->sys0_us) / 1e6 / h.secs * 100.0);
        lb_lit(b, "}}");
        n++;
    }
    lb_lit(b, ",\n{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":");
    lb_i64(b, pid);
    lb_lit(b, ",\"tid\":0,\"args\":{\"labels\":\"actrace " ACT_VERSION_STRING "\"}}");
    return n;
}

/* The members of a light log's trace after its events, as a document the
 * merge reads like a trace's (its entry's distributedInfo, host_name,
 * actraceStats; "actraceRecovered" when it did not exit normally). */
static void life_json(lbuf *b, const act__spool_life *l, const char *host)
{
    life_shape h = life_shape_of(l);
    lb_lit(b, "{\"host_name\":");
    lb_str(b, host, strlen(host));
    lb_lit(b, ",\n\"distributedInfo\": {\"backend\": ");
    const char *be = l->backend[0] ? l->backend : "unknown";
    lb_str(b, be, strlen(be));
    lb_lit(b, ", \"rank\": ");
    lb_i64(b, l->has_rank ? l->rank : 0);
    lb_lit(b, ", \"world_size\": ");
    lb_i64(b, l->has_world ? l->world : 1);
    lb_lit(b, ", \"local_rank\": ");
    lb_i64(b, l->has_local ? l->local : 0);
    lb_lit(b, "}");
    if (!l->has_rank)
        lb_lit(b, ",\n\"actraceRankDefault\":true");
    if (!l->have_exit)
        lb_lit(b, ",\n\"actraceRecovered\":true");
    int samples = h.mem0 + h.mem1 + 2 * h.cpu, cevents = h.mem0 + h.mem1 + h.cpu;
    lb_lit(b, ",\n\"actraceStats\":{\"recorded\":");
    lb_i64(b, h.span + samples);
    lb_lit(b, ",\"dropped\":0,\"args_recorded\":");
    lb_i64(b, 2 * h.span);
    lb_lit(b, ",\"args_dropped\":0,\"args_dropped_by_reason\":{\"orphan_arg\":0,"
              "\"event_dropped\":0,\"reentrant\":0},\"dropped_by_reason\":{\"buffer_full\":0,"
              "\"type_not_selected\":0,\"bad_type\":0,\"unbalanced\":0,\"non_finite\":0,"
              "\"bad_times\":0,\"reentrant\":0},\"dropped_by_type\":{},\"buffer_bytes\":0,"
              "\"buffer_limit_bytes\":0,\"plugins\":[]");
    if (h.known) {
        lb_lit(b, ",\"counter_samples\":");
        lb_i64(b, samples);
        lb_lit(b, ",\"counter_events\":");
        lb_i64(b, cevents);
        lb_lit(b, ",\"counters\":[{\"track\":\"memory\",\"series\":\"rss_bytes\",\"unit\":\"bytes\"},"
                  "{\"track\":\"cpu\",\"series\":\"user\",\"unit\":\"%\"},"
                  "{\"track\":\"cpu\",\"series\":\"system\",\"unit\":\"%\"}]");
    }
    lb_lit(b, "}}\n");
}

/* A reader of file @p f: its trace, or (no events) its light log's other
 * members as life_json writes them, in @p mem (a memory file the merge reuses; -1: none yet).
 * 0, or -1 with a message. */
static int mfile_open(const mfile *f, int *mem, lbuf *b, int *fd, act__rd **r, char *err,
                      size_t errcap)
{
    if (!f->life)
        return act__merge_open(f->path, fd, r, err, errcap);
    static char host[256];
    if (!host[0] && gethostname(host, sizeof host) != 0)
        strcpy(host, "unknown");
    host[sizeof host - 1] = '\0';
    b->n = 0;
    life_json(b, f->life, host);
    if (*mem < 0)
        *mem = memfd_create("actrace-light", MFD_CLOEXEC);
    errno = ENOMEM;
    act__rd_opts small = {0};
    small.buffer_bytes = 4096; /* a few hundred bytes each */
    if (b->oom || *mem < 0 || ftruncate(*mem, 0) != 0 ||
        pwrite(*mem, b->p, b->n, 0) != (ssize_t)b->n || lseek(*mem, 0, SEEK_SET) != 0 ||
        act__rd_create(*mem, &small, r) != 0) {
        snprintf(err, errcap, "%s.meta: %s", f->path, strerror(errno));
        return -1;
    }
    *fd = -1; /* the memory file stays the merge's */
    return 0;
}

static int read_head(mfile *f, char *err, size_t errcap)
{
    int fd;
    act__rd *r;
    if (f->life) {
        f->base_ns = life_base(f->life);
        f->has_base = 1;
        f->proc_start = f->life->proc_start;
        return 0; /* no devices */
    }
    if (act__merge_open(f->path, &fd, &r, err, errcap) != 0)
        return -1;
    act__rd_item it;
    int k, rc = 0;
    int64_t v;
    while ((k = act__rd_next(r, &it)) > 0) {
        if (k == ACT__RD_EVENT)
            break;
        if (strcmp(it.key, "baseTimeNanoseconds") == 0 && act__jv_i64(it.v, &f->base_ns))
            f->has_base = 1;
        else if (strcmp(it.key, "actraceProcessStart") == 0 && act__jv_i64(it.v, &v) && v > 0 &&
                 v < ACT__PROC_ID_PIDFS)
            f->proc_start = v;
        else if (strcmp(it.key, "actraceProcessId") == 0 && act__jv_i64(it.v, &v) && v > 0 &&
                 v < ACT__PROC_ID_PIDFS)
            f->proc_start = ACT__PROC_ID_PIDFS | v;
        else if (strcmp(it.key, "deviceProperties") == 0 && it.v->type == ACT__J_ARRAY) {
            f->devs = act__jv_dup(it.v);
            for (const act__jv *d = it.v->child; d; d = d->next) {
                int64_t id;
                if (act__jv_i64(act__jv_get(d, "id"), &id) && id + 1 > f->ndev)
                    f->ndev = id + 1;
            }
        }
    }
    if (k < 0) {
        snprintf(err, errcap, "%s: %s", f->path, act__rd_errmsg(r));
        rc = -1;
    }
    act__rd_destroy(r);
    close(fd);
    return rc;
}

/* An arg that names an id shared with another process ("correlation",
 * "External id": 0 is none; "stream"), renumbered for file @p f: 1 when it
 * was written. */
static int put_renumbered(mout *o, const mfile *f, const act__jv *a)
{
    int64_t x;
    int corr = strcmp(a->key, "correlation") == 0 || strcmp(a->key, "External id") == 0;
    if (f->id_mul <= 1 || !(corr || strcmp(a->key, "stream") == 0) || a->type != ACT__J_NUMBER ||
        !act__jv_i64(a, &x) || x < 0 || (corr && x == 0) ||
        (uint64_t)x > (((uint64_t)1 << 53) - f->id_add) / f->id_mul)
        return 0;
    put_i64(o, (int64_t)((uint64_t)x * f->id_mul + f->id_add));
    return 1;
}

static void put_event(mout *o, mfile *f, const act__jv *e, int64_t delta_ns, uint64_t *next_flow)
{
    const act__jv *ph = act__jv_get(e, "ph");
    int is_flow = ph && (act__jv_is(ph, "s") || act__jv_is(ph, "f") || act__jv_is(ph, "t"));
    int64_t pid = 0;
    int have_pid = act__jv_i64(act__jv_get(e, "pid"), &pid);
    int device = have_pid && pid >= DEVICE_PID_BASE;
    put(o, "{", 1);
    for (const act__jv *c = e->child; c; c = c->next) {
        if (c != e->child)
            put(o, ",", 1);
        put_jstr(o, c->key, c->klen);
        put(o, ":", 1);
        int64_t x;
        uint64_t u;
        if (strcmp(c->key, "pid") == 0 && have_pid) {
            put_i64(o, device ? pid + f->dev_off : pid == f->pid ? f->new_pid : pid);
        } else if (strcmp(c->key, "ts") == 0 && c->type == ACT__J_NUMBER && act__jv_us_ns(c, &x)) {
            put_us(o, x + delta_ns);
        } else if (is_flow && strcmp(c->key, "id") == 0 && act__jv_i64(c, &x)) {
            u = flow_get(&f->flows, (uint64_t)x, next_flow);
            put_i64(o, (int64_t)u);
        } else if (strcmp(c->key, "args") == 0 && c->type == ACT__J_OBJECT &&
                   ((device && act__jv_get(c, "device")) || f->id_mul > 1)) {
            put(o, "{", 1);
            for (const act__jv *a = c->child; a; a = a->next) {
                if (a != c->child)
                    put(o, ",", 1);
                put_jstr(o, a->key, a->klen);
                put(o, ":", 1);
                if (device && strcmp(a->key, "device") == 0 && act__jv_i64(a, &x))
                    put_i64(o, x + f->dev_off);
                else if (!put_renumbered(o, f, a))
                    put_value(o, a);
            }
            put(o, "}", 1);
        } else {
            put_value(o, c);
        }
    }
    put(o, "}", 1);
}

static int cmp_files(const void *a, const void *b)
{
    const mfile *x = a, *y = b;
    return strcmp(x->path, y->path);
}

/* Appends an entry for @p path (made here) to *@p files. 0, or -1 (out of
 * memory: @p life freed). */
static int files_add(mfile **files, size_t *n, size_t *cap, const char *dir, const char *name,
                     size_t name_len, act__spool_life *life)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        mfile *nf = realloc(*files, nc * sizeof *nf);
        if (!nf) {
            free(life);
            return -1;
        }
        *files = nf;
        *cap = nc;
    }
    mfile *f = &(*files)[*n];
    memset(f, 0, sizeof *f);
    size_t dl = strlen(dir);
    f->path = malloc(dl + name_len + 2);
    if (!f->path) {
        free(life);
        return -1;
    }
    memcpy(f->path, dir, dl);
    f->path[dl] = '/';
    memcpy(f->path + dl + 1, name, name_len);
    f->path[dl + 1 + name_len] = '\0';
    f->pid = strtoll(name, NULL, 10);
    f->life = life;
    (*n)++;
    return 0;
}

int act__record_merge(const char *dir, const act__light_set *light_set, const char *out_path,
                      const char *trace_name, act__merge_result *res, char *err, size_t errcap)
{
    memset(res, 0, sizeof *res);
    err[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errcap, "%s: %s", dir, strerror(errno));
        return -1;
    }
    mfile *files = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 6 || de->d_name[0] == '.')
            continue;
        int light = strcmp(de->d_name + len - 5, ".meta") == 0;
        if (!light && strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        act__spool_life *life = NULL;
        if (light) {
            /* A log with no trace beside it and no BASE.spool: a process
             * that recorded nothing (record removed those of images that
             * exec'd, and rebuilt the full spools). */
            char p[PATH_MAX + 8];
            struct stat st;
            int pl0 = snprintf(p, sizeof p, "%s/%.*s.json", dir, (int)(len - 5), de->d_name);
            if (pl0 < 0 || (size_t)pl0 >= sizeof p || stat(p, &st) == 0)
                continue;
            p[pl0 - 5] = '\0';
            life = malloc(sizeof *life);
            char e[PATH_MAX + 256];
            int lr = life ? act__spool_life_read(p, life, e, sizeof e) : -1;
            if (lr != 0) {
                if (lr < 0)
                    fprintf(stderr, "actrace record: skipping %s\n", life ? e : "a log: out of memory");
                free(life);
                continue;
            }
        }
        if (files_add(&files, &n, &cap, dir, de->d_name, light ? len - 5 : len, life) != 0)
            break;
        if (life && !life->have_exit)
            res->light_recovered++;
    }
    closedir(d);
    /* The shared light log's processes, as light logs of their own. */
    for (size_t i = 0; light_set && i < light_set->n; i++) {
        const act__light_ent *le = &light_set->v[i];
        if (le->dropped)
            continue;
        act__spool_life *life = malloc(sizeof *life);
        char e[256];
        if (!life || act__spool_life_parse(le->recs, le->len, le->base, life, e, sizeof e) != 0) {
            fprintf(stderr, "actrace record: skipping %s (in %s/%s)\n",
                    life ? e : "a process: out of memory", dir, ACT__LIGHT_LOG);
            free(life);
            continue;
        }
        if (files_add(&files, &n, &cap, dir, le->base, strlen(le->base), life) != 0)
            break;
        if (!life->have_exit)
            res->light_recovered++;
    }
    if (n > 1)
        qsort(files, n, sizeof *files, cmp_files);

    int rc = 0;
    int64_t base = INT64_MAX, dev_off = 0, reused = 0;
    size_t good = 0;
    for (size_t i = 0; i < n; i++) {
        char e[512];
        if (read_head(&files[i], e, sizeof e) != 0) {
            fprintf(stderr, "actrace record: skipping %s\n", e);
            free(files[i].path);
            files[i].path = NULL;
            continue;
        }
        good++;
        if (files[i].has_base && files[i].base_ns < base)
            base = files[i].base_ns;
        files[i].dev_off = dev_off;
        dev_off += files[i].ndev;
        /* A pid seen in an earlier file: the same process after an exec
         * when both name the same process start, so it keeps its pid;
         * otherwise a reused pid, moved. */
        files[i].new_pid = files[i].pid;
        for (size_t j = 0; j < i; j++) {
            if (!files[j].path || files[j].pid != files[i].pid)
                continue;
            if (files[i].proc_start > 0 && files[j].proc_start == files[i].proc_start)
                files[i].new_pid = files[j].new_pid;
            else
                files[i].new_pid = REUSED_PID_BASE + ++reused;
        }
    }
    if (base == INT64_MAX)
        base = 0;
    res->files = good;

    mout o;
    if (act__out_open(&o.out, out_path, err, errcap) != 0) {
        rc = -1;
        goto done;
    }
    puts0(&o, "{\"schemaVersion\":1,\"deviceProperties\":[");
    int firstdev = 1;
    for (size_t i = 0; i < n; i++) {
        if (!files[i].path || !files[i].devs)
            continue;
        for (const act__jv *dv = files[i].devs->child; dv; dv = dv->next) {
            puts0(&o, firstdev ? "\n{" : ",\n{");
            firstdev = 0;
            for (const act__jv *c = dv->child; c; c = c->next) {
                int64_t x;
                if (c != dv->child)
                    put(&o, ",", 1);
                put_jstr(&o, c->key, c->klen);
                put(&o, ":", 1);
                if (strcmp(c->key, "id") == 0 && act__jv_i64(c, &x))
                    put_i64(&o, x + files[i].dev_off);
                else
                    put_value(&o, c);
            }
            put(&o, "}", 1);
        }
    }
    puts0(&o, "],\n\"displayTimeUnit\":\"ms\",\n\"baseTimeNanoseconds\":");
    put_i64(&o, base);
    puts0(&o, ",\n\"traceEvents\":[\n");
    int first_ev = 1;
    uint64_t next_flow = 0;
    int mem = -1; /* the light logs' memory file (mfile_open) */
    lbuf lb = {0};
    /* Correlation and stream ids of file k (of the good ones) become
     * x * good + k: unique across processes, the same when there is one. */
    size_t nth = 0;
    for (size_t i = 0; i < n; i++) {
        mfile *f = &files[i];
        if (!f->path)
            continue;
        f->id_mul = good;
        f->id_add = nth++;
        int64_t delta = f->has_base ? f->base_ns - base : 0;
        int fd = -1;
        act__rd *r = NULL;
        char e[512];
        if (mfile_open(f, &mem, &lb, &fd, &r, e, sizeof e) != 0) {
            fprintf(stderr, "actrace record: skipping %s\n", e);
            continue;
        }
        if (f->life) {
            lb.n = 0;
            uint64_t ne = life_events(&lb, f->life, f->new_pid, base, &first_ev);
            if (!lb.oom) {
                put(&o, lb.p, lb.n);
                res->events += ne;
            }
        }
        act__rd_item it;
        int k;
        while ((k = act__rd_next(r, &it)) > 0) {
            if (k == ACT__RD_EVENT) {
                if (it.v->type != ACT__J_OBJECT)
                    continue;
                if (!first_ev)
                    puts0(&o, ",\n");
                first_ev = 0;
                put_event(&o, f, it.v, delta, &next_flow);
                res->events++;
            } else if (strcmp(it.key, "actraceStats") == 0 && it.v->type == ACT__J_OBJECT) {
                free(f->stats);
                f->stats = act__jv_dup(it.v);
            } else if (strcmp(it.key, "actraceRecovered") == 0 && it.v->type == ACT__J_TRUE) {
                f->recovered = 1;
            } else {
                act__merge_meta_take(&f->meta, it.key, it.v);
            }
        }
        if (k < 0)
            fprintf(stderr, "actrace record: %s: %s (kept the events before it)\n", f->path,
                    act__rd_errmsg(r));
        act__rd_destroy(r);
        if (fd >= 0)
            close(fd);
    }
    if (mem >= 0)
        close(mem);
    free(lb.p);
    puts0(&o, "\n],\n");
    {
        const act__merge_meta **metas = calloc(n ? n : 1, sizeof *metas);
        size_t nm = 0;
        for (size_t i = 0; metas && i < n; i++)
            if (files[i].path)
                metas[nm++] = &files[i].meta;
        if (metas)
            act__merge_meta_put_top(&o.out, metas, nm);
        free(metas);
    }
    puts0(&o, "\"actraceStats\":");
    {
        const act__jv **vals = calloc(n ? n : 1, sizeof *vals);
        size_t nv = 0;
        for (size_t i = 0; vals && i < n; i++)
            if (files[i].path && files[i].stats)
                vals[nv++] = files[i].stats;
        if (vals && nv) {
            /* The merge of all, then "processes". */
            mout *po = &o;
            put_merged(po, vals, nv);
            /* put_merged ended with '}' for an object: reopen is not
             * possible on a stream, so the per-process list is a
             * sibling member below. */
        } else {
            puts0(&o, "{}");
        }
        free(vals);
    }
    puts0(&o, ",\n\"actraceProcesses\":[");
    int firstp = 1;
    for (size_t i = 0; i < n; i++) {
        if (!files[i].path)
            continue;
        puts0(&o, firstp ? "\n{\"pid\":" : ",\n{\"pid\":");
        firstp = 0;
        put_i64(&o, files[i].new_pid);
        if (files[i].new_pid != files[i].pid) {
            puts0(&o, ",\"os_pid\":");
            put_i64(&o, files[i].pid);
        }
        if (files[i].recovered)
            puts0(&o, ",\"recovered\":true");
        act__merge_meta_put_entry(&o.out, &files[i].meta);
        puts0(&o, ",\"actraceStats\":");
        if (files[i].stats)
            put_value(&o, files[i].stats);
        else
            puts0(&o, "null");
        put(&o, "}", 1);
        int64_t x;
        if (files[i].stats && act__jv_i64(act__jv_get(files[i].stats, "dropped"), &x))
            res->dropped += (uint64_t)x;
    }
    puts0(&o, "],\n\"traceName\":");
    put_jstr(&o, trace_name, strlen(trace_name));
    puts0(&o, "}\n");
    if (act__out_finish(&o.out) != 0) {
        snprintf(err, errcap, "%s", act__out_errmsg(&o.out));
        rc = -1;
    }
done:
    for (size_t i = 0; i < n; i++) {
        free(files[i].path);
        free(files[i].stats);
        free(files[i].life);
        free(files[i].devs);
        free(files[i].flows.k);
        free(files[i].flows.v);
        act__merge_meta_free(&files[i].meta);
    }
    free(files);
    return rc;
}

/* ---- shared with `actrace merge` (cmd_merge.c) ------------------------------- */

/* An mout is an act__out and nothing else (its first and only member), so
 * the sink converts to it (C11 6.7.2.1p15). */
void act__merge_put_value(act__out *o, const act__jv *v)
{
    put_value((mout *)o, v);
}

void act__merge_put_us(act__out *o, int64_t ns)
{
    put_us((mout *)o, ns);
}

void act__merge_put_stats(act__out *o, const act__jv **vals, size_t n)
{
    put_merged((mout *)o, vals, n);
}
