/* SPDX-License-Identifier: MIT */
/*
 * actrace merge [-o OUT] [--force] [--] TRACE...
 *
 * Merges rank (or per-process) traces, from one host or many, into one
 * trace on one timeline. Two streaming passes over each input with the
 * trace reader (src/reader), never holding a document: the first learns
 * each file's base time, rank, host, trace id, devices, pids and the
 * largest ids it uses; the second writes its events, changed only where
 * they would otherwise collide with another file's:
 *
 *   - ts: every file's times are relative to its own baseTimeNanoseconds
 *     (wall clock); the output's base is the smallest, and each ts moves by
 *     the difference exactly (integer nanoseconds, as record's merge does),
 *     so every event keeps its absolute time.
 *   - pids: a pid already taken by an earlier file moves to a fresh one
 *     (host pids above 0x20000000, actrace device pids to the next free
 *     device pid, with the "device" args and deviceProperties ids of that
 *     device), so ranks stay apart even when two hosts reuse a pid.
 *   - args "correlation" and "External id", the "id" of flow events
 *     (ph s/t/f) and the "stream" arg: file i adds the sum of the largest
 *     value of each in the files before it, so no two files share one
 *     (HTA links launches to kernels by equal correlation within a file)
 *     and the first file keeps its own.
 *
 * Files are ordered by rank (distributedInfo.rank), then as given. The
 * output's distributedInfo is the first file's, written in Kineto's layout
 * (": " so that HTA's "rank":\s+(\d+) finds it); trace_id, group_trace_id
 * and host_name are written at the top when every file that has one agrees;
 * "actraceProcesses" keeps each file's own: path, rank, distributedInfo,
 * trace_id, host_name, base time, pids (and what they were renamed from),
 * actraceStats. actraceStats at the top is the merge of all (record's rule).
 *
 * Memory: one reader at a time (its buffer holds one event) plus, per file,
 * its metadata and a map of its pids; nothing per event.
 *
 * Errors name the file, the line (plain files) and the event: an input
 * that is not a valid trace stops the merge before anything is written, as
 * do ids that would pass 2^53 once offset (naming the file and the id) and
 * base times too far apart for one 64-bit nanosecond timeline (naming the
 * files); the
 * output is written as the library writes a trace (temporary name and
 * rename, .gz compressed), and nothing replaces an existing file without
 * --force. Exit status: 0, 1 (an input or the output failed), 2 (usage).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_pftrace.h"
#include "cli.h"
#include "merge_meta.h"
#include "record_merge.h"
#include "trace_read.h"
#include "writer/json_out.h"

#define DEVICE_PID_BASE 0x40000000LL
#define DEVICE_PID_END 0x80000000LL
#define FRESH_HOST_PID 0x20000000LL

typedef struct minput {
    const char *path;
    size_t order;              /* position on the command line */
    int64_t base_ns;
    int has_base;
    act__merge_meta meta;      /* distributedInfo, trace_id, host_name, ... */
    act__jv *stats, *devs;
    act_cli_map pids;          /* 8-byte pid -> index in pid_old */
    int64_t *pid_old, *pid_new;
    size_t npids, pidcap;
    uint64_t max_corr, max_ext, max_flow, max_stream;
    uint64_t off_corr, off_ext, off_flow, off_stream;
    int64_t min_ts, max_ts;    /* its events' ts, in ns (has_ts) */
    int has_ts;
    uint64_t events;
} minput;

static void merge_usage(FILE *f)
{
    fprintf(f, "usage: actrace merge [-o OUT] [--force] [--] TRACE...\n"
               "  Merges rank or per-process traces (JSON, .gz) onto one timeline, aligned\n"
               "  by their wall-clock base times; ranks stay apart (pids, correlation,\n"
               "  flow and stream ids renumbered where they would collide).\n"
               "  -o, --output OUT  the merged trace (default merged.json; .gz compresses)\n"
               "  --force           replace OUT if it exists\n"
               "  Options may come before or after the traces; -- ends them.\n");
}

/* The 1-based line of byte @p off of a plain file, or 0 (gzip, error). */
/* The byte offset of the reader's error (its message says "byte offset
 * N"), else how far it read. */
static uint64_t error_offset(const act__rd *r)
{
    const char *at = strstr(act__rd_errmsg(r), "byte offset ");
    return at ? strtoull(at + 12, NULL, 10) : act__rd_offset(r);
}

static uint64_t line_of(const char *path, uint64_t off)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[65536];
    uint64_t pos = 0, line = 1;
    ssize_t n;
    int first = 1;
    while (pos < off && (n = read(fd, buf, sizeof buf)) > 0) {
        if (first && n >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b) {
            close(fd);
            return 0;
        }
        first = 0;
        for (ssize_t i = 0; i < n && pos < off; i++, pos++)
            line += buf[i] == '\n';
    }
    close(fd);
    return line;
}

/* "PATH:LINE: " (or "PATH: " when the line is unknown) into @p out. */
static void where(char *out, size_t cap, const char *path, const act__rd *r)
{
    uint64_t line = line_of(path, act__rd_offset(r));
    if (line)
        snprintf(out, cap, "%s:%" PRIu64 ": ", path, line);
    else
        snprintf(out, cap, "%s: ", path);
}

static void note_pid(minput *f, int64_t pid)
{
    int created;
    size_t *slot = act_cli_map_put(&f->pids, (const char *)&pid, sizeof pid, f->npids, &created);
    if (!created)
        return;
    act_cli_grow(&f->pid_old, &f->pidcap, f->npids, sizeof *f->pid_old);
    f->pid_old[*slot] = pid;
    f->npids++;
}

static int64_t map_pid(const minput *f, int64_t pid)
{
    size_t *slot = act_cli_map_get(&f->pids, (const char *)&pid, sizeof pid);
    return slot ? f->pid_new[*slot] : pid;
}

/* A non-negative integer value, for ids. */
static int id_of(const act__jv *v, uint64_t *out)
{
    int64_t x;
    if (!v || v->type != ACT__J_NUMBER || !act__jv_i64(v, &x) || x < 0)
        return 0;
    *out = (uint64_t)x;
    return 1;
}

static int is_flow(const act__jv *e)
{
    const act__jv *ph = act__jv_get(e, "ph");
    return act__jv_is(ph, "s") || act__jv_is(ph, "f") || act__jv_is(ph, "t");
}

static void max_id(const act__jv *v, uint64_t *m)
{
    uint64_t x;
    if (id_of(v, &x) && x > *m)
        *m = x;
}

/* Pass 1 over @p f. 0, or -1 after printing why. */
static int scan(minput *f)
{
    act_cli_trace t;
    char msg[256];
    if (act_cli_trace_open(&t, f->path, msg, sizeof msg) != 0) {
        fprintf(stderr, "actrace merge: %s: %s\n", f->path, msg);
        return -1;
    }
    act__rd_item it;
    int k, rc = 0;
    while ((k = act__rd_next(t.rd, &it)) > 0) {
        const act__jv *v = it.v;
        if (k == ACT__RD_MEMBER) {
            if (strcmp(it.key, "baseTimeNanoseconds") == 0) {
                f->has_base = act__jv_i64(v, &f->base_ns);
                if (!f->has_base) {
                    where(msg, sizeof msg, f->path, t.rd);
                    fprintf(stderr, "actrace merge: %sbaseTimeNanoseconds is not an integer\n", msg);
                    rc = -1;
                    break;
                }
            } else if (act__merge_meta_take(&f->meta, it.key, v)) {
            } else if (strcmp(it.key, "actraceStats") == 0 && v->type == ACT__J_OBJECT) {
                act__merge_keep(&f->stats, v);
            } else if (strcmp(it.key, "deviceProperties") == 0 && v->type == ACT__J_ARRAY) {
                act__merge_keep(&f->devs, v);
                for (const act__jv *d = v->child; d; d = d->next) {
                    int64_t id;
                    if (act__jv_i64(act__jv_get(d, "id"), &id) && id >= 0 &&
                        id < DEVICE_PID_END - DEVICE_PID_BASE)
                        note_pid(f, DEVICE_PID_BASE + id);
                }
            }
            continue;
        }
        if (v->type != ACT__J_OBJECT) {
            where(msg, sizeof msg, f->path, t.rd);
            fprintf(stderr, "actrace merge: %sevent #%" PRIu64 " is not an object\n", msg,
                    it.index);
            rc = -1;
            break;
        }
        f->events++;
        const act__jv *pid = act__jv_get(v, "pid");
        int64_t p;
        if (pid) {
            if (!act__jv_i64(pid, &p)) {
                where(msg, sizeof msg, f->path, t.rd);
                fprintf(stderr, "actrace merge: %sevent #%" PRIu64 ": \"pid\" is not an integer\n",
                        msg, it.index);
                rc = -1;
                break;
            }
            note_pid(f, p);
        }
        const act__jv *ts = act__jv_get(v, "ts");
        int64_t tns;
        if (ts && ts->type == ACT__J_NUMBER && act__jv_us_ns(ts, &tns)) {
            if (!f->has_ts || tns < f->min_ts)
                f->min_ts = tns;
            if (!f->has_ts || tns > f->max_ts)
                f->max_ts = tns;
            f->has_ts = 1;
        }
        if (is_flow(v))
            max_id(act__jv_get(v, "id"), &f->max_flow);
        const act__jv *args = act__jv_get(v, "args");
        if (args && args->type == ACT__J_OBJECT) {
            max_id(act__jv_get(args, "correlation"), &f->max_corr);
            max_id(act__jv_get(args, "External id"), &f->max_ext);
            max_id(act__jv_get(args, "stream"), &f->max_stream);
        }
    }
    if (k < 0) {
        uint64_t line = line_of(f->path, error_offset(t.rd));
        if (line)
            fprintf(stderr, "actrace merge: %s:%" PRIu64 ": %s\n", f->path, line,
                    act__rd_errmsg(t.rd));
        else
            fprintf(stderr, "actrace merge: %s: %s\n", f->path, act__rd_errmsg(t.rd));
        rc = -1;
    } else if (rc == 0 && act__rd_layout(t.rd) == ACT__RD_TOP_NO_EVENTS) {
        fprintf(stderr, "actrace merge: %s: not a trace (no traceEvents array)\n", f->path);
        rc = -1;
    }
    act_cli_trace_close(&t);
    return rc;
}

static int cmp_inputs(const void *a, const void *b)
{
    const minput *x = a, *y = b;
    if (x->meta.has_rank != y->meta.has_rank)
        return x->meta.has_rank ? -1 : 1;
    if (x->meta.has_rank && x->meta.rank != y->meta.rank)
        return x->meta.rank < y->meta.rank ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* The offset after one of @p a for ids up to @p b: a + b + @p plus (1
 * where 0 is an id of its own), checked; 0 past 2^53 (ids stay exact in
 * JavaScript). */
static int add_off(uint64_t a, uint64_t b, int plus, uint64_t *out)
{
    const uint64_t lim = (uint64_t)1 << 53;
    if (a > lim || b > lim - a - (uint64_t)plus)
        return 0;
    *out = a + b + (uint64_t)plus;
    return 1;
}

/* Fresh pids for every pid a file shares with an earlier one. */
static void assign_pids(minput *in, size_t n)
{
    act_cli_map used;
    memset(&used, 0, sizeof used);
    int64_t next_host = FRESH_HOST_PID, next_dev = DEVICE_PID_BASE;
    for (size_t i = 0; i < n; i++) {
        minput *f = &in[i];
        f->pid_new = act_cli_xcalloc(f->npids, sizeof *f->pid_new);
        for (size_t j = 0; j < f->npids; j++) {
            int64_t p = f->pid_old[j];
            if (act_cli_map_get(&used, (const char *)&p, sizeof p)) {
                int dev = p >= DEVICE_PID_BASE && p < DEVICE_PID_END;
                int64_t *next = dev ? &next_dev : &next_host;
                while (act_cli_map_get(&used, (const char *)next, sizeof *next) ||
                       act_cli_map_get(&f->pids, (const char *)next, sizeof *next))
                    ++*next;
                p = (*next)++;
            }
            f->pid_new[j] = p;
            act_cli_map_put(&used, (const char *)&p, sizeof p, 1, NULL);
        }
    }
    act_cli_map_free(&used);
}

/* A device number of file @p f (its pid is DEVICE_PID_BASE + d) in the
 * output. */
static int64_t map_device(const minput *f, int64_t d)
{
    if (d < 0 || d >= DEVICE_PID_END - DEVICE_PID_BASE)
        return d;
    return map_pid(f, DEVICE_PID_BASE + d) - DEVICE_PID_BASE;
}

static void put_key(act__out *o, const act__jv *c)
{
    act__out_str(o, c->key, c->klen);
    act__out_char(o, ':');
}

static void put_i64(act__out *o, int64_t v)
{
    char b[24];
    int n = snprintf(b, sizeof b, "%" PRId64, v);
    act__out_write(o, b, (size_t)n);
}

/* @p v + @p off when @p v is an id, else @p v as it is. Correlation 0
 * means "none" (@p keep_zero). */
static void put_id(act__out *o, const act__jv *v, uint64_t off, int keep_zero)
{
    uint64_t x;
    if (off && id_of(v, &x) && !(keep_zero && x == 0))
        put_i64(o, (int64_t)(x + off));
    else
        act__merge_put_value(o, v);
}

static void put_args(act__out *o, const minput *f, const act__jv *args)
{
    act__out_char(o, '{');
    for (const act__jv *a = args->child; a; a = a->next) {
        int64_t d;
        if (a != args->child)
            act__out_char(o, ',');
        put_key(o, a);
        if (strcmp(a->key, "correlation") == 0)
            put_id(o, a, f->off_corr, 1);
        else if (strcmp(a->key, "External id") == 0)
            put_id(o, a, f->off_ext, 1);
        else if (strcmp(a->key, "stream") == 0)
            put_id(o, a, f->off_stream, 0);
        else if (strcmp(a->key, "device") == 0 && a->type == ACT__J_NUMBER && act__jv_i64(a, &d))
            put_i64(o, map_device(f, d));
        else
            act__merge_put_value(o, a);
    }
    act__out_char(o, '}');
}

static void put_event(act__out *o, const minput *f, const act__jv *e, int64_t delta)
{
    int flow = is_flow(e);
    act__out_char(o, '{');
    for (const act__jv *c = e->child; c; c = c->next) {
        int64_t x;
        if (c != e->child)
            act__out_char(o, ',');
        put_key(o, c);
        if (strcmp(c->key, "pid") == 0 && act__jv_i64(c, &x))
            put_i64(o, map_pid(f, x));
        else if (strcmp(c->key, "ts") == 0 && c->type == ACT__J_NUMBER && act__jv_us_ns(c, &x))
            act__merge_put_us(o, x + delta);
        else if (flow && strcmp(c->key, "id") == 0)
            put_id(o, c, f->off_flow, 0);
        else if (strcmp(c->key, "args") == 0 && c->type == ACT__J_OBJECT)
            put_args(o, f, c);
        else
            act__merge_put_value(o, c);
    }
    act__out_char(o, '}');
}

/* Pass 2 over @p f: its events into @p o. 0, or -1 after printing why. */
static int copy_events(act__out *o, const minput *f, int64_t base, int *first)
{
    act_cli_trace t;
    char msg[256];
    if (act_cli_trace_open(&t, f->path, msg, sizeof msg) != 0) {
        fprintf(stderr, "actrace merge: %s: %s\n", f->path, msg);
        return -1;
    }
    int64_t delta = f->has_base ? f->base_ns - base : 0;
    act__rd_item it;
    int k;
    uint64_t events = 0;
    while ((k = act__rd_next(t.rd, &it)) > 0) {
        if (k != ACT__RD_EVENT || it.v->type != ACT__J_OBJECT)
            continue;
        act__out_lit(o, *first ? "\n" : ",\n");
        *first = 0;
        put_event(o, f, it.v, delta);
        events++;
    }
    int rc = 0;
    if (k < 0 || events != f->events) {
        where(msg, sizeof msg, f->path, t.rd);
        fprintf(stderr, "actrace merge: %s%s\n", msg,
                k < 0 ? act__rd_errmsg(t.rd) : "changed while it was merged");
        rc = -1;
    }
    act_cli_trace_close(&t);
    return rc;
}

static void put_process(act__out *o, const minput *f)
{
    act__out_lit(o, "{\"file\":");
    act__out_str(o, f->path, strlen(f->path));
    act__merge_meta_put_entry(o, &f->meta);
    if (f->has_base) {
        act__out_lit(o, ",\"baseTimeNanoseconds\":");
        put_i64(o, f->base_ns);
    }
    act__out_lit(o, ",\"pids\":[");
    int any = 0;
    for (size_t j = 0; j < f->npids; j++) {
        if (f->pid_old[j] >= DEVICE_PID_BASE && f->pid_old[j] < DEVICE_PID_END)
            continue;
        if (any)
            act__out_char(o, ',');
        any = 1;
        put_i64(o, f->pid_new[j]);
    }
    act__out_char(o, ']');
    any = 0;
    for (size_t j = 0; j < f->npids; j++) {
        if (f->pid_old[j] == f->pid_new[j])
            continue;
        act__out_lit(o, any ? "," : ",\"renamed\":{");
        any = 1;
        char b[24];
        int n = snprintf(b, sizeof b, "%" PRId64, f->pid_old[j]);
        act__out_str(o, b, (size_t)n);
        act__out_char(o, ':');
        put_i64(o, f->pid_new[j]);
    }
    if (any)
        act__out_char(o, '}');
    act__out_lit(o, ",\"actraceStats\":");
    if (f->stats)
        act__merge_put_value(o, f->stats);
    else
        act__out_lit(o, "null");
    act__out_char(o, '}');
}

static void free_inputs(minput *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        act__merge_meta_free(&in[i].meta);
        free(in[i].stats);
        free(in[i].devs);
        free(in[i].pid_old);
        free(in[i].pid_new);
        act_cli_map_free(&in[i].pids);
    }
    free(in);
}

/* The output's base time: the smallest input's (0 when none has one). */
static int64_t base_of(const minput *in, size_t n)
{
    int64_t base = INT64_MAX;
    int any = 0;
    for (size_t i = 0; i < n; i++)
        if (in[i].has_base && (!any || in[i].base_ns < base)) {
            base = in[i].base_ns;
            any = 1;
        }
    return any ? base : 0;
}

/* Each file's id offsets: what the files before it take. With two files
 * or more, every file's ids after their offset must stay within 2^53 (the
 * earlier files' as the later ones' offsets, the last file's as what it
 * writes). 0, or -1 after naming the file and the id. */
static int renumber_ids(minput *in, size_t n)
{
    static const char *const what[4] = {"\"correlation\" args", "\"External id\" args",
                                        "flow events' \"id\"", "\"stream\" args"};
    /* Correlation 0 is "none" and stays; flow and stream 0 are ids. */
    static const int plus[4] = {0, 0, 1, 1};
    uint64_t next[4] = {0, 0, 0, 0};
    for (size_t j = 0; j < n && n > 1; j++) {
        minput *f = &in[j];
        uint64_t *off[4] = {&f->off_corr, &f->off_ext, &f->off_flow, &f->off_stream};
        const uint64_t max[4] = {f->max_corr, f->max_ext, f->max_flow, f->max_stream};
        for (int k = 0; k < 4; k++) {
            *off[k] = next[k];
            if (!add_off(*off[k], max[k], plus[k], &next[k])) {
                fprintf(stderr, "actrace merge: %s: its %s (up to %" PRIu64 ") cannot "
                        "be renumbered after the %" PRIu64 " taken by the files before it: they "
                        "would pass 2^53, past which JSON readers lose integers\n", f->path,
                        what[k], max[k], *off[k]);
                return -1;
            }
        }
    }
    return 0;
}

/* Each event moves by its file's base time minus the output's: refused
 * (naming both files) when that move, or an event's time after it, leaves
 * the 64-bit range of nanoseconds. 0, or -1 after saying why. */
static int align_times(const minput *in, size_t n)
{
    int64_t base = base_of(in, n);
    const minput *first = NULL;
    for (size_t i = 0; i < n; i++)
        if (in[i].has_base && in[i].base_ns == base && !first)
            first = &in[i];
    for (size_t i = 0; i < n; i++) {
        const minput *f = &in[i];
        if (!f->has_base || f == first)
            continue;
        int64_t delta, lo = 0, hi = 0;
        if (__builtin_sub_overflow(f->base_ns, base, &delta) ||
            (f->has_ts && (__builtin_add_overflow(f->min_ts, delta, &lo) ||
                           __builtin_add_overflow(f->max_ts, delta, &hi)))) {
            fprintf(stderr, "actrace merge: %s and %s cannot be put on one timeline: their "
                    "baseTimeNanoseconds (%" PRId64 " and %" PRId64 ") are too far apart for "
                    "event times in 64-bit nanoseconds\n", first->path, f->path, base,
                    f->base_ns);
            return -1;
        }
    }
    return 0;
}

static int write_merged(minput *in, size_t n, const char *out, int64_t base)
{
    act__out o;
    char err[1024];
    if (act__out_open(&o, out, err, sizeof err) != 0) {
        fprintf(stderr, "actrace merge: %s\n", err);
        return 1;
    }
    act__out_lit(&o, "{\"schemaVersion\":1,\"deviceProperties\":[");
    int firstdev = 1;
    for (size_t i = 0; i < n; i++) {
        if (!in[i].devs)
            continue;
        for (const act__jv *dv = in[i].devs->child; dv; dv = dv->next) {
            act__out_lit(&o, firstdev ? "\n" : ",\n");
            firstdev = 0;
            if (dv->type != ACT__J_OBJECT) {
                act__merge_put_value(&o, dv);
                continue;
            }
            act__out_char(&o, '{');
            for (const act__jv *c = dv->child; c; c = c->next) {
                int64_t x;
                if (c != dv->child)
                    act__out_char(&o, ',');
                put_key(&o, c);
                if (strcmp(c->key, "id") == 0 && c->type == ACT__J_NUMBER && act__jv_i64(c, &x))
                    put_i64(&o, map_device(&in[i], x));
                else
                    act__merge_put_value(&o, c);
            }
            act__out_char(&o, '}');
        }
    }
    act__out_lit(&o, "],\n");
    const act__merge_meta **metas = act_cli_xcalloc(n, sizeof *metas);
    for (size_t i = 0; i < n; i++)
        metas[i] = &in[i].meta;
    act__merge_meta_put_top(&o, metas, n);
    free(metas);
    act__out_lit(&o, "\"displayTimeUnit\":\"ms\",\n\"baseTimeNanoseconds\":");
    put_i64(&o, base);
    act__out_lit(&o, ",\n\"traceEvents\":[");
    int first = 1, rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = copy_events(&o, &in[i], base, &first);
    if (rc != 0) {
        act__out_abort(&o);
        return 1;
    }
    act__out_lit(&o, "\n],\n\"actraceStats\":");
    const act__jv **vals = act_cli_xcalloc(n, sizeof *vals);
    size_t nv = 0;
    for (size_t i = 0; i < n; i++)
        if (in[i].stats)
            vals[nv++] = in[i].stats;
    if (nv)
        act__merge_put_stats(&o, vals, nv);
    else
        act__out_lit(&o, "{}");
    free(vals);
    act__out_lit(&o, ",\n\"actraceProcesses\":[");
    for (size_t i = 0; i < n; i++) {
        act__out_lit(&o, i ? ",\n" : "\n");
        put_process(&o, &in[i]);
    }
    act__out_lit(&o, "],\n\"traceName\":");
    const char *slash = strrchr(out, '/');
    const char *name = slash ? slash + 1 : out;
    act__out_str(&o, name, strlen(name));
    act__out_lit(&o, "}\n");
    if (act__out_finish(&o) != 0) {
        fprintf(stderr, "actrace merge: %s\n", act__out_errmsg(&o));
        return 1;
    }
    return 0;
}

static int merge_files(const char *out, int force, const char *const *paths, size_t n);

int act_cmd_merge(int argc, char **argv)
{
    const char *out = "merged.json";
    int force = 0;
    const act_cli_opt opts[] = {{"--output", "-o", NULL, &out},
                                {"--force", NULL, &force, NULL},
                                {NULL, NULL, NULL, NULL}};
    const char **paths = act_cli_xcalloc((size_t)argc + 1, sizeof *paths);
    int np = 0;
    int prc = act_cli_parse("merge", argc, argv, opts, merge_usage, paths, &np);
    if (prc) {
        free(paths);
        return prc == 1 ? 0 : 2;
    }
    int rc = merge_files(out, force, paths, (size_t)np);
    free(paths);
    return rc;
}

static int merge_files(const char *out, int force, const char *const *paths, size_t n)
{
    if (n == 0) {
        fprintf(stderr, "actrace merge: no trace given\n");
        merge_usage(stderr);
        return 2;
    }
    if (act_cli_is_pftrace(out)) {
        fprintf(stderr, "actrace merge: %s: merge writes JSON; convert the merged trace with "
                "`actrace convert`\n", out);
        return 2;
    }
    struct stat st;
    if (!force && stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
        fprintf(stderr, "actrace merge: %s exists; use --force to overwrite it\n", out);
        return 2;
    }
    minput *in = act_cli_xcalloc(n, sizeof *in);
    for (size_t j = 0; j < n; j++) {
        in[j].path = paths[j];
        in[j].order = j;
        if (strcmp(in[j].path, "-") == 0) {
            fprintf(stderr, "actrace merge: standard input cannot be merged (each trace is "
                    "read twice)\n");
            free_inputs(in, n);
            return 2;
        }
        struct stat ist;
        if (stat(in[j].path, &ist) == 0 && stat(out, &st) == 0 && ist.st_dev == st.st_dev &&
            ist.st_ino == st.st_ino) {
            fprintf(stderr, "actrace merge: %s is both an input and the output\n", out);
            free_inputs(in, n);
            return 2;
        }
    }
    for (size_t j = 0; j < n; j++) {
        if (scan(&in[j]) != 0) {
            free_inputs(in, n);
            return 1;
        }
    }
    act_cli_sort(in, n, sizeof *in, cmp_inputs);
    if (renumber_ids(in, n) != 0 || align_times(in, n) != 0) {
        free_inputs(in, n);
        return 1;
    }
    assign_pids(in, n);
    int rc = write_merged(in, n, out, base_of(in, n));
    if (rc == 0) {
        uint64_t ev = 0;
        for (size_t j = 0; j < n; j++)
            ev += in[j].events;
        fprintf(stderr, "actrace merge: wrote %s (%zu trace%s, %" PRIu64 " events)\n", out, n,
                n == 1 ? "" : "s", ev);
    }
    free_inputs(in, n);
    return rc;
}
