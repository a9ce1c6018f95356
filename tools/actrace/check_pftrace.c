/* SPDX-License-Identifier: MIT */
/*
 * actrace check for Perfetto protobuf traces (.pftrace, .pftrace.gz): the
 * rules trace_processor enforces that a protobuf decoder cannot see. Each
 * problem is one line on standard output,
 *
 *   FILE: error: packet #I: MESSAGE
 *
 * (at most 50, then a count), then "FILE: ok (N packets)" or
 * "FILE: failed (N packets, E errors)". Exit 0 without errors, 1 with, 2
 * when FILE cannot be read or is not a protobuf stream of TracePackets.
 *
 * The rules:
 *   - every TrackEvent, InternedData and TracePacketDefaults packet has a
 *     non-zero trusted_packet_sequence_id;
 *   - each sequence's first packet clears incremental state;
 *   - every iid is defined earlier on the same sequence, since the last
 *     clear;
 *   - track uuids are unique and described before use, parents exist, no
 *     cycles;
 *   - pid and tid are not 0;
 *   - BEGIN/END balance per track, and no END comes without a BEGIN;
 *   - counters only on counter tracks, with a value; no slices on them;
 *   - each flow id is on at least two events;
 *   - timestamps on an incremental clock never pass 2^63;
 *   - every clock used (but the default BOOTTIME) is in a ClockSnapshot
 *     (a sequence-scoped one, 64..127, on the same sequence).
 *
 * One pass; memory grows with sequences, tracks, interned ids and flow
 * ids, never with events.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if ACT_HAVE_ZLIB
#include <zlib.h>
#endif

#include "check_pftrace.h"
#include "trace_read.h"

#define MAX_SHOWN 50
#define MAX_PACKET ((size_t)256 << 20)

/* ---- input ------------------------------------------------------------------ */

typedef struct input {
#if ACT_HAVE_ZLIB
    gzFile gz;
#endif
    int fd;
    uint64_t read;
} input;

static long in_read(input *in, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
#if ACT_HAVE_ZLIB
        int k = gzread(in->gz, (char *)buf + got, (unsigned)(n - got > (1u << 30) ? (1u << 30) : n - got));
#else
        ssize_t k = read(in->fd, (char *)buf + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
#endif
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    in->read += got;
    return (long)got;
}

/* ---- wire format ------------------------------------------------------------ */

typedef struct pbf {
    uint32_t field;
    int wt;
    uint64_t v;           /* varint / fixed value */
    const uint8_t *data;  /* length-delimited */
    size_t len;
} pbf;

static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (int s = 0; s < 64 && *p < end; s += 7) {
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

/* Next field of [*p, end): 1, 0 at the end, -1 when malformed. */
static int next_field(const uint8_t **p, const uint8_t *end, pbf *f)
{
    if (*p >= end)
        return 0;
    uint64_t tag;
    if (get_varint(p, end, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
        return -1;
    f->field = (uint32_t)(tag >> 3);
    f->wt = (int)(tag & 7);
    switch (f->wt) {
    case 0: return get_varint(p, end, &f->v) ? -1 : 1;
    case 1:
        if (end - *p < 8)
            return -1;
        f->v = 0;
        for (int i = 0; i < 8; i++)
            f->v |= (uint64_t)(*p)[i] << (8 * i);
        *p += 8;
        return 1;
    case 5:
        if (end - *p < 4)
            return -1;
        f->v = 0;
        for (int i = 0; i < 4; i++)
            f->v |= (uint64_t)(*p)[i] << (8 * i);
        *p += 4;
        return 1;
    case 2: {
        uint64_t n;
        if (get_varint(p, end, &n) || n > (uint64_t)(end - *p))
            return -1;
        f->data = *p;
        f->len = (size_t)n;
        *p += n;
        return 1;
    }
    default: return -1;
    }
}

/* ---- state ----------------------------------------------------------------- */

/* Kinds of interned strings. */
enum { K_CAT = 1, K_NAME = 2, K_ANN = 3, K_STRVAL = 4, K_COUNT };

/* A set of 64-bit keys with a value, open addressing (key 0 stored as a flag). */
typedef struct u64map {
    uint64_t *key;
    uint64_t *val;
    size_t cap, n;
    int has0;      /* key 0 is in the map, its value in val0 (slots use 0 for empty) */
    uint64_t val0;
} u64map;

static size_t slot_of(const u64map *m, uint64_t k)
{
    size_t j = (size_t)((k * 0x9E3779B97F4A7C15u) >> 17) & (m->cap - 1);
    while (m->key[j] && m->key[j] != k)
        j = (j + 1) & (m->cap - 1);
    return j;
}

/* The value slot of @p k, inserted as 0 with *fresh = 1. */
static uint64_t *map_put(u64map *m, uint64_t k, int *fresh)
{
    if (k == 0) {
        if (fresh)
            *fresh = !m->has0;
        if (!m->has0)
            m->val0 = 0;
        m->has0 = 1;
        return &m->val0;
    }
    if ((m->n + 1) * 2 > m->cap) {
        u64map nm = {NULL, NULL, m->cap ? m->cap * 2 : 64, 0, m->has0, m->val0};
        nm.key = act_cli_xcalloc(nm.cap, sizeof *nm.key);
        nm.val = act_cli_xcalloc(nm.cap, sizeof *nm.val);
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) {
                size_t j = slot_of(&nm, m->key[i]);
                nm.key[j] = m->key[i];
                nm.val[j] = m->val[i];
                nm.n++;
            }
        free(m->key);
        free(m->val);
        *m = nm;
    }
    size_t j = slot_of(m, k);
    int f = !m->key[j];
    if (f) {
        m->key[j] = k;
        m->val[j] = 0;
        m->n++;
    }
    if (fresh)
        *fresh = f;
    return &m->val[j];
}

static uint64_t *map_get(u64map *m, uint64_t k)
{
    if (k == 0)
        return m->has0 ? &m->val0 : NULL;
    if (!m->cap)
        return NULL;
    size_t j = slot_of(m, k);
    return m->key[j] ? &m->val[j] : NULL;
}

static void map_free(u64map *m)
{
    free(m->key);
    free(m->val);
}

typedef struct seqst {
    uint32_t id;
    uint8_t seen, cleared;
    uint32_t clock;        /* default timestamp clock (TracePacketDefaults), 0: none */
    uint64_t default_track;
    int has_default_track;
    u64map iids[K_COUNT];  /* per kind: iid -> generation (one map per kind:
                              no iid of one kind is taken for another's) */
    uint64_t gen;          /* clears so far */
    u64map clocks;         /* clock id + 1 -> incremental(1)/absolute(2), value */
    u64map clock_ts;       /* clock id + 1 -> last timestamp */
} seqst;

/* Track state: bit flags and open slices. */
#define TR_COUNTER 1u
#define TR_HAS_PARENT 2u
typedef struct track {
    uint64_t uuid, parent;
    uint32_t flags;
    uint64_t open;
} track;

typedef struct pfcheck {
    const char *file;
    uint64_t packet;
    uint64_t errors;
    u64map seqs;      /* seq id -> index + 1 into seq */
    seqst *seq;
    size_t nseq, capseq;
    u64map tracks;    /* uuid -> index + 1 into trk */
    track *trk;
    size_t ntrk, captrk;
    u64map flows;     /* flow id -> count */
    u64map global_clocks; /* builtin clock ids + 1 seen in a snapshot */
    int quiet;
} pfcheck;

__attribute__((format(printf, 2, 3)))
static void err(pfcheck *c, const char *fmt, ...)
{
    c->errors++;
    if (c->errors > MAX_SHOWN || c->quiet)
        return; /* quiet 2: nothing at all (the fuzz target) */
    va_list ap;
    va_start(ap, fmt);
    printf("%s: error: packet #%" PRIu64 ": ", c->file, c->packet);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

static seqst *seq_get(pfcheck *c, uint32_t id)
{
    int fresh;
    uint64_t *v = map_put(&c->seqs, id, &fresh);
    if (fresh) {
        act_cli_grow(&c->seq, &c->capseq, c->nseq, sizeof *c->seq);
        memset(&c->seq[c->nseq], 0, sizeof c->seq[0]);
        c->seq[c->nseq].id = id;
        *v = ++c->nseq;
    }
    return &c->seq[*v - 1];
}

static track *track_get(pfcheck *c, uint64_t uuid)
{
    uint64_t *v = map_get(&c->tracks, uuid);
    return v ? &c->trk[*v - 1] : NULL;
}

/* ---- packets ----------------------------------------------------------------- */


static void define_iids(pfcheck *c, seqst *q, const uint8_t *p, const uint8_t *end)
{
    pbf f = {0};
    int r;
    while ((r = next_field(&p, end, &f)) > 0) {
        int kind = f.field == 1 ? K_CAT : f.field == 2 ? K_NAME : f.field == 3 ? K_ANN
                   : f.field == 29 ? K_STRVAL : 0;
        if (!kind || f.wt != 2)
            continue;
        const uint8_t *e = f.data, *ee = f.data + f.len;
        pbf g = {0};
        uint64_t iid = 0;
        while (next_field(&e, ee, &g) > 0)
            if (g.field == 1 && g.wt == 0)
                iid = g.v;
        if (!iid) {
            err(c, "interned entry without an iid (0 is invalid)");
            continue;
        }
        *map_put(&q->iids[kind], iid, NULL) = q->gen + 1;
    }
    if (r < 0)
        err(c, "malformed InternedData");
}

static void use_iid(pfcheck *c, seqst *q, int kind, uint64_t iid, const char *what)
{
    uint64_t *g = map_get(&q->iids[kind], iid);
    if (!g || *g != q->gen + 1)
        err(c, "%s iid %" PRIu64 " is not defined on sequence %" PRIu64
               " since its last clear", what, iid, (uint64_t)q->id);
}

static void check_annotations(pfcheck *c, seqst *q, const uint8_t *p, const uint8_t *end)
{
    pbf f = {0};
    while (next_field(&p, end, &f) > 0) {
        if (f.field == 1 && f.wt == 0)
            use_iid(c, q, K_ANN, f.v, "debug annotation name");
        else if (f.field == 17 && f.wt == 0)
            use_iid(c, q, K_STRVAL, f.v, "debug annotation string value");
        else if ((f.field == 11 || f.field == 12) && f.wt == 2)
            check_annotations(c, q, f.data, f.data + f.len);
    }
}

static void check_track_event(pfcheck *c, seqst *q, const uint8_t *p, const uint8_t *end)
{
    pbf f = {0};
    uint64_t type = 0, uuid = 0;
    int has_uuid = 0, has_value = 0, r;
    while ((r = next_field(&p, end, &f)) > 0) {
        switch (f.field) {
        case 9: type = f.v; break;
        case 11: uuid = f.v; has_uuid = 1; break;
        case 10: use_iid(c, q, K_NAME, f.v, "event name"); break;
        case 3:
            if (f.wt == 0)
                use_iid(c, q, K_CAT, f.v, "category");
            else {
                const uint8_t *e = f.data, *ee = f.data + f.len;
                uint64_t v;
                while (e < ee && !get_varint(&e, ee, &v))
                    use_iid(c, q, K_CAT, v, "category");
            }
            break;
        case 4: check_annotations(c, q, f.data, f.data + f.len); break;
        case 30:
        case 44: has_value = 1; break;
        case 47:
        case 48:
            if (f.wt == 1)
                (*map_put(&c->flows, f.v, NULL))++;
            else if (f.wt == 2)
                for (size_t i = 0; i + 8 <= f.len; i += 8) {
                    uint64_t v = 0;
                    for (int b = 0; b < 8; b++)
                        v |= (uint64_t)f.data[i + b] << (8 * b);
                    (*map_put(&c->flows, v, NULL))++;
                }
            break;
        default: break;
        }
    }
    if (r < 0) {
        err(c, "malformed TrackEvent");
        return;
    }
    if (!has_uuid && q->has_default_track) {
        uuid = q->default_track;
        has_uuid = 1;
    }
    track *t = has_uuid ? track_get(c, uuid) : NULL;
    if (has_uuid && uuid && !t) {
        err(c, "track uuid %" PRIu64 " is used before its TrackDescriptor", uuid);
        return;
    }
    int counter = t && (t->flags & TR_COUNTER);
    if (type == 4) {
        if (!counter)
            err(c, "counter event on track %" PRIu64 ", which is not a counter track", uuid);
        if (!has_value)
            err(c, "counter event without a value (counter_value or double_counter_value)");
        return;
    }
    if (counter && (type == 1 || type == 2 || type == 3)) {
        err(c, "slice or instant event on counter track %" PRIu64, uuid);
        return;
    }
    if (!t)
        return; /* the implicit global track (uuid 0) */
    if (type == 1)
        t->open++;
    else if (type == 2) {
        if (!t->open)
            err(c, "SLICE_END on track %" PRIu64 " with no open slice (END before its BEGIN)", uuid);
        else
            t->open--;
    }
}

static void check_descriptor(pfcheck *c, const uint8_t *p, const uint8_t *end)
{
    pbf f = {0};
    uint64_t uuid = 0, parent = 0;
    int has_uuid = 0, has_parent = 0, counter = 0, r;
    while ((r = next_field(&p, end, &f)) > 0) {
        if (f.field == 1 && f.wt == 0) {
            uuid = f.v;
            has_uuid = 1;
        } else if (f.field == 5 && f.wt == 0) {
            parent = f.v;
            has_parent = 1;
        } else if (f.field == 8) {
            counter = 1;
        } else if ((f.field == 3 || f.field == 4) && f.wt == 2) {
            const uint8_t *e = f.data, *ee = f.data + f.len;
            pbf g = {0};
            int has_pid = 0, has_tid = 0;
            while (next_field(&e, ee, &g) > 0) {
                if (g.field == 1 && g.wt == 0) {
                    has_pid = 1;
                    if ((int32_t)g.v == 0)
                        err(c, "%s descriptor with pid 0", f.field == 3 ? "process" : "thread");
                }
                if (f.field == 4 && g.field == 2 && g.wt == 0) {
                    has_tid = 1;
                    if ((int32_t)g.v == 0)
                        err(c, "thread descriptor with tid 0");
                }
            }
            if (!has_pid)
                err(c, "%s descriptor without a pid", f.field == 3 ? "process" : "thread");
            if (f.field == 4 && !has_tid)
                err(c, "thread descriptor without a tid");
        }
    }
    if (r < 0) {
        err(c, "malformed TrackDescriptor");
        return;
    }
    if (!has_uuid || !uuid) {
        err(c, "TrackDescriptor without a uuid (0 is the implicit global track)");
        return;
    }
    int fresh;
    uint64_t *slot = map_put(&c->tracks, uuid, &fresh);
    if (!fresh) {
        err(c, "track uuid %" PRIu64 " is described twice", uuid);
        return;
    }
    act_cli_grow(&c->trk, &c->captrk, c->ntrk, sizeof *c->trk);
    c->trk[c->ntrk] = (track){uuid, parent, (counter ? TR_COUNTER : 0) | (has_parent ? TR_HAS_PARENT : 0), 0};
    *slot = ++c->ntrk;
    if (has_parent) {
        if (parent == uuid) {
            err(c, "track %" PRIu64 " is its own parent (a cycle)", uuid);
            return;
        }
        if (!track_get(c, parent)) {
            err(c, "track %" PRIu64 ": parent %" PRIu64 " is not described before it", uuid, parent);
            return;
        }
        /* Parents are described before children, so a chain ends; walk it
         * anyway, bounded, in case a uuid repeats. */
        uint64_t u = parent;
        for (size_t k = 0; k <= c->ntrk; k++) {
            track *t = track_get(c, u);
            if (!t || !(t->flags & TR_HAS_PARENT))
                break;
            if (t->parent == uuid) {
                err(c, "track %" PRIu64 ": its parents form a cycle", uuid);
                break;
            }
            u = t->parent;
        }
    }
}

static void check_snapshot(pfcheck *c, seqst *q, const uint8_t *p, const uint8_t *end)
{
    pbf f = {0};
    while (next_field(&p, end, &f) > 0) {
        if (f.field != 1 || f.wt != 2)
            continue;
        const uint8_t *e = f.data, *ee = f.data + f.len;
        pbf g = {0};
        uint64_t id = 0, ts = 0;
        int inc = 0;
        while (next_field(&e, ee, &g) > 0) {
            if (g.field == 1)
                id = g.v;
            else if (g.field == 2)
                ts = g.v;
            else if (g.field == 3)
                inc = g.v != 0;
        }
        if (id >= 64 && id <= 127) {
            if (!q) {
                err(c, "sequence-scoped clock %" PRIu64 " in a snapshot without a sequence", id);
                continue;
            }
            *map_put(&q->clocks, id + 1, NULL) = inc ? 1 : 2;
            *map_put(&q->clock_ts, id + 1, NULL) = ts;
        } else {
            *map_put(&c->global_clocks, id + 1, NULL) = 1;
        }
    }
}

static void check_packet(pfcheck *c, const uint8_t *p, const uint8_t *end)
{
    pbf f = {0};
    int r;
    uint32_t seq_id = 0, flags = 0, clock = 0;
    int has_ts = 0, has_clock = 0, cleared_old = 0;
    uint64_t ts = 0;
    const uint8_t *te = NULL, *td = NULL, *id = NULL, *defs = NULL, *cs = NULL;
    size_t te_n = 0, td_n = 0, id_n = 0, defs_n = 0, cs_n = 0;
    while ((r = next_field(&p, end, &f)) > 0) {
        switch (f.field) {
        case 8: ts = f.v; has_ts = 1; break;
        case 10: seq_id = (uint32_t)f.v; break;
        case 13: flags = (uint32_t)f.v; break;
        case 41: cleared_old = f.v != 0; break;
        case 58: clock = (uint32_t)f.v; has_clock = 1; break;
        case 11: te = f.data; te_n = f.len; break;
        case 60: td = f.data; td_n = f.len; break;
        case 12: id = f.data; id_n = f.len; break;
        case 59: defs = f.data; defs_n = f.len; break;
        case 6: cs = f.data; cs_n = f.len; break;
        default: break;
        }
    }
    if (r < 0) {
        err(c, "malformed TracePacket");
        return;
    }
    if (!seq_id && (te || id || defs))
        err(c, "%s packet without a trusted_packet_sequence_id (0 is invalid)",
            te ? "TrackEvent" : id ? "InternedData" : "TracePacketDefaults");
    seqst *q = seq_id ? seq_get(c, seq_id) : NULL;
    int clears = (flags & 1u) || cleared_old;
    if (q) {
        if (!q->seen && !clears && (te || id || defs))
            err(c, "first packet of sequence %" PRIu32 " does not clear incremental state "
                   "(SEQ_INCREMENTAL_STATE_CLEARED)", seq_id);
        q->seen = 1;
        if (clears) {
            q->cleared = 1;
            q->gen++;
            q->clock = 0;
            q->has_default_track = 0;
            map_free(&q->clocks);
            map_free(&q->clock_ts);
            memset(&q->clocks, 0, sizeof q->clocks);
            memset(&q->clock_ts, 0, sizeof q->clock_ts);
        }
    }
    if (defs && q) {
        const uint8_t *e = defs, *ee = defs + defs_n;
        pbf g = {0};
        while (next_field(&e, ee, &g) > 0) {
            if (g.field == 58 && g.wt == 0)
                q->clock = (uint32_t)g.v;
            else if (g.field == 11 && g.wt == 2) {
                const uint8_t *x = g.data, *xe = g.data + g.len;
                pbf h = {0};
                while (next_field(&x, xe, &h) > 0)
                    if (h.field == 11 && h.wt == 0) {
                        q->default_track = h.v;
                        q->has_default_track = 1;
                    }
            }
        }
    }
    if (cs)
        check_snapshot(c, q, cs, cs + cs_n);
    if (id && q)
        define_iids(c, q, id, id + id_n);
    if (td)
        check_descriptor(c, td, td + td_n);
    if (has_ts) {
        uint32_t ck = has_clock ? clock : q && q->clock ? q->clock : 6;
        if (ck >= 64 && ck <= 127) {
            uint64_t *kind = q ? map_get(&q->clocks, (uint64_t)ck + 1) : NULL;
            if (!kind)
                err(c, "timestamp on sequence-scoped clock %" PRIu32
                       " with no ClockSnapshot for it on this sequence", ck);
            else if (*kind == 1) {
                uint64_t *last = map_put(&q->clock_ts, (uint64_t)ck + 1, NULL);
                if (ts > (uint64_t)INT64_MAX - *last)
                    err(c, "incremental timestamp passes 2^63 (a negative delta?)");
                else
                    *last += ts;
            }
        } else if (ck != 6 && !map_get(&c->global_clocks, (uint64_t)ck + 1)) {
            err(c, "timestamp on clock %" PRIu32 ", which no ClockSnapshot defines so far", ck);
        }
    }
    if (te && q)
        check_track_event(c, q, te, te + te_n);
}

/* ---- entry ---------------------------------------------------------------------- */

int act_cli_is_pftrace(const char *path)
{
    static const char *const ext[] = {".pftrace", ".pftrace.gz", ".perfetto-trace",
                                      ".perfetto-trace.gz"};
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t m = strlen(ext[i]);
        if (n >= m && strcmp(path + n - m, ext[i]) == 0)
            return 1;
    }
    return 0;
}

int act_cli_check_pftrace(const char *file, int quiet)
{
    input in;
    memset(&in, 0, sizeof in);
    in.fd = strcmp(file, "-") == 0 ? 0 : open(file, O_RDONLY | O_CLOEXEC);
    if (in.fd < 0) {
        fprintf(stderr, "%s: error: cannot open: %s\n", file, strerror(errno));
        return 2;
    }
#if ACT_HAVE_ZLIB
    in.gz = gzdopen(in.fd, "rb");
    if (!in.gz) {
        fprintf(stderr, "%s: error: out of memory\n", file);
        return 2;
    }
#endif
    pfcheck c;
    memset(&c, 0, sizeof c);
    c.file = file;
    c.quiet = quiet;
    uint8_t *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    act_cli_progress_t prog = {"check", isatty(2), 0, 0, 0};
    act_cli_progress(&prog, 0, 0);
    for (;;) {
        if ((c.packet & 4095) == 4095)
            act_cli_progress(&prog, in.read, 0);
        /* Trace.packet: tag 0x0a, a varint length, the packet. */
        uint8_t b;
        long k = in_read(&in, &b, 1);
        if (k == 0)
            break;
        if (k < 0 || b != 0x0a) {
            fprintf(stderr, "%s: error: byte %" PRIu64 ": %s\n", file, in.read,
                    k < 0 ? "read error" : "not a Trace (expected field 1, a TracePacket)");
            rc = 2;
            break;
        }
        uint64_t len = 0;
        int s = 0;
        for (;;) {
            if (in_read(&in, &b, 1) != 1 || s > 63) {
                fprintf(stderr, "%s: error: byte %" PRIu64 ": cut short in a packet length\n",
                        file, in.read);
                rc = 2;
                break;
            }
            len |= (uint64_t)(b & 0x7f) << s;
            s += 7;
            if (!(b & 0x80))
                break;
        }
        if (rc)
            break;
        if (len > MAX_PACKET) {
            fprintf(stderr, "%s: error: byte %" PRIu64 ": packet of %" PRIu64 " bytes (limit %zu)\n",
                    file, in.read, len, MAX_PACKET);
            rc = 2;
            break;
        }
        if (len > cap) {
            cap = (size_t)len;
            buf = act_cli_xrealloc(buf, cap);
        }
        if (in_read(&in, buf, (size_t)len) != (long)len) {
            fprintf(stderr, "%s: error: byte %" PRIu64 ": cut short inside packet #%" PRIu64 "\n",
                    file, in.read, c.packet);
            rc = 2;
            break;
        }
        check_packet(&c, buf, buf + len);
        c.packet++;
    }
    act_cli_progress(&prog, 0, 1);
    if (!rc) {
        for (size_t i = 0; i < c.ntrk; i++)
            if (c.trk[i].open) {
                err(&c, "%" PRIu64 " slice(s) never end (SLICE_BEGIN without SLICE_END) on track %" PRIu64,
                    c.trk[i].open, c.trk[i].uuid);
            }
        if (c.flows.has0 && c.flows.val0 < 2)
            err(&c, "flow id 0 is on one event only (a flow needs two)");
        for (size_t j = 0; j < c.flows.cap; j++)
            if (c.flows.key[j] && c.flows.val[j] < 2)
                err(&c, "flow id %" PRIu64 " is on one event only (a flow needs two)",
                    c.flows.key[j]);
        if (c.errors > MAX_SHOWN && !quiet)
            printf("%s: ... and %" PRIu64 " more errors\n", file, c.errors - MAX_SHOWN);
        if (quiet >= 2)
            ;
        else if (c.errors)
            printf("%s: failed (%" PRIu64 " packets, %" PRIu64 " errors)\n", file, c.packet, c.errors);
        else
            printf("%s: ok (%" PRIu64 " packets)\n", file, c.packet);
        rc = c.errors ? 1 : 0;
    }
    free(buf);
    for (size_t i = 0; i < c.nseq; i++) {
        for (int k = 0; k < K_COUNT; k++)
            map_free(&c.seq[i].iids[k]);
        map_free(&c.seq[i].clocks);
        map_free(&c.seq[i].clock_ts);
    }
    free(c.seq);
    free(c.trk);
    map_free(&c.seqs);
    map_free(&c.tracks);
    map_free(&c.flows);
    map_free(&c.global_clocks);
#if ACT_HAVE_ZLIB
    gzclose(in.gz);
#else
    if (in.fd > 0)
        close(in.fd);
#endif
    return rc;
}
