/* SPDX-License-Identifier: MIT */
/*
 * The Perfetto protobuf encoder shared by the session's Perfetto writer
 * (perfetto.c) and `actrace convert` (tools/actrace/cmd_convert.c).
 *
 * A .pftrace is a stream of TracePacket messages, each framed as field 1
 * of Trace. Everything is written the way Perfetto's SDK writes it:
 *   - packets belong to sequences (trusted_packet_sequence_id, from 1); a
 *     sequence's first packet carries SEQ_INCREMENTAL_STATE_CLEARED,
 *     TracePacketDefaults (timestamps on the sequence-scoped clock 64, and
 *     optionally the sequence's default track) and a ClockSnapshot tying
 *     clock 64 (incremental: each timestamp is a delta from the previous
 *     packet's) to CLOCK_MONOTONIC; later packets say
 *     SEQ_NEEDS_INCREMENTAL_STATE;
 *   - event names, categories, annotation names and short string values
 *     are interned per sequence (InternedData in the packet that first
 *     uses them; iids are global, so an iid never means two strings);
 *   - track descriptors (processes, threads, tracks, counters) go on
 *     sequence 1, each written before the first event that uses it;
 *   - a span is a SLICE_BEGIN and a SLICE_END. The encoder takes spans
 *     whole (start, end) in start order per sequence and keeps the ends it
 *     has not written yet in a heap: before anything at time t it writes
 *     every end <= t, the latest-started first on a tie, so that at equal
 *     times a child's END precedes its parent's and a sibling's END
 *     precedes the next BEGIN (trace_processor sorts by time, then file
 *     position). A span that would end after the innermost open span of its
 *     track is cut at that end (counted in clamped), so BEGIN/END always
 *     nest.
 *
 * Memory: a packet buffer (the largest event), the intern table (distinct
 * strings, capped), per sequence a bitmap of what it interned and the open
 * spans. Nothing is allocated per event.
 *
 * Field numbers come from Perfetto's public protos (protos/perfetto/trace/
 * trace_packet.proto, track_event/ protos, clock_snapshot.proto,
 * interned_data/interned_data.proto); tests/perfetto/actrace_trace.proto
 * lists the subset used, and protoc decodes every trace the tests write.
 */
#ifndef ACT_WRITER_PFTRACE_H
#define ACT_WRITER_PFTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "writer/json_out.h"

/* TrackEvent.Type */
enum { ACT__PF_BEGIN = 1, ACT__PF_END = 2, ACT__PF_INSTANT = 3, ACT__PF_COUNTER = 4 };

/* The descriptor sequence. */
#define ACT__PF_SEQ_DESC 1u

typedef struct act__pf_end {
    int64_t t1;
    uint64_t track;
    uint64_t order; /* push order: a later (inner) span ends first on a tie */
} act__pf_end;

typedef struct act__pf_seq {
    uint32_t id;
    uint8_t started;
    uint8_t hdrlen;     /* bytes of hdr */
    uint8_t hdr[10];    /* trusted_packet_sequence_id and
                           SEQ_NEEDS_INCREMENTAL_STATE, encoded once */
    int64_t last_ts;
    uint64_t default_track;
    uint8_t *interned; /* per global string: bit 0 name, 1 category, 2 key, 3 value */
    size_t ninterned;
    act__pf_end *heap;
    size_t nheap, capheap;
} act__pf_seq;

typedef struct act__pf_str {
    char *s; /* NULL: empty slot */
    uint32_t len, hash, g;
} act__pf_str;

typedef struct act__pf {
    act__out *o;
    uint8_t *pkt;       /* the packet being built: in the sink's buffer, or heap */
    size_t len, cap;
    uint8_t *heap;      /* packets that outgrow the in-place room */
    size_t heapcap;
    int inplace;
    size_t nest[8];     /* open nested messages: offset of their length byte */
    int depth;
    uint8_t *idata;     /* the packet's new InternedData entries */
    size_t ilen, icap;
    act__pf_seq *seqs;  /* index id - 1 */
    size_t nseqs, capseqs;
    act__pf_str *tab;   /* intern table */
    act__pf_str *gstr;  /* by iid: the interned strings */
    size_t gcap;
    size_t tabcap, ntab;
    uint64_t *defined;  /* track uuids described so far (open addressing) */
    size_t defcap, ndef;
    uint64_t order;
    act__pf_seq *cur;   /* sequence of the event being built */
    int64_t cur_t1;     /* its end, for a span */
    uint64_t cur_track;
    int cur_type;
    uint8_t *clean0, *clean1; /* repaired UTF-8 (pftrace.c: clean) */
    size_t clean0_cap, clean1_cap;
    uint64_t seed;      /* of the intern table's hash */
    uint64_t events, clamped, backwards;
    int err;            /* ACT_ENOMEM, sticky */
} act__pf;

/** Start a trace on @p o (not owned). 0 or ACT_ENOMEM. @p o may be NULL
 *  while only strings are interned (act__pf_intern, act__pf_value_iid):
 *  act__pf_set_out gives it before the first packet. */
int act__pf_init(act__pf *pf, act__out *o);
void act__pf_set_out(act__pf *pf, act__out *o);
/** Write every pending END, then free the encoder (not the sink). */
int act__pf_finish(act__pf *pf);
void act__pf_free(act__pf *pf);

/** The global clock snapshot: the same instant on CLOCK_MONOTONIC,
 *  CLOCK_BOOTTIME and CLOCK_REALTIME (ns). */
void act__pf_clocks(act__pf *pf, int64_t mono, int64_t boot, int64_t real);

/** A new sequence (id >= 2) whose first timestamp is @p t0 (monotonic ns)
 *  and whose events go to @p default_track unless they say otherwise. */
uint32_t act__pf_seq_new(act__pf *pf, int64_t t0, uint64_t default_track);
/** Write every pending END of sequence @p seq. */
void act__pf_seq_flush(act__pf *pf, uint32_t seq);

/** 1 when track @p uuid was described already; else records it and 0. */
int act__pf_track_seen(act__pf *pf, uint64_t uuid);
/** Track descriptors (sequence 1). @p name may be NULL. */
void act__pf_track_process(act__pf *pf, uint64_t uuid, int32_t pid, const char *name, size_t n);
void act__pf_track_thread(act__pf *pf, uint64_t uuid, uint64_t parent, int32_t pid, int32_t tid,
                          const char *name, size_t n);
void act__pf_track_named(act__pf *pf, uint64_t uuid, uint64_t parent, const char *name, size_t n);
void act__pf_track_counter(act__pf *pf, uint64_t uuid, uint64_t parent, const char *name, size_t n,
                           const char *unit);

/** Begin an event on sequence @p seq at @p ts: a span [ts, t1], an
 *  instant (t1 ignored) or a counter sample (act__pf_counter_value). Args
 *  and flows may follow; act__pf_event_end writes it. @p track 0: the
 *  sequence's default track. @p cat / @p name (bytes) are interned. */
void act__pf_event(act__pf *pf, uint32_t seq, int type, uint64_t track, int64_t ts, int64_t t1,
                   const char *cat, size_t catn, const char *name, size_t namen);
void act__pf_arg_int(act__pf *pf, const char *key, size_t kn, int64_t v);
void act__pf_arg_uint(act__pf *pf, const char *key, size_t kn, uint64_t v);
void act__pf_arg_double(act__pf *pf, const char *key, size_t kn, double v);
void act__pf_arg_bool(act__pf *pf, const char *key, size_t kn, int v);
void act__pf_arg_str(act__pf *pf, const char *key, size_t kn, const char *s, size_t n);
/** A JSON text as legacy_json_value (metadata, nested args). */
void act__pf_arg_json(act__pf *pf, const char *key, size_t kn, const char *s, size_t n);
void act__pf_counter_value(act__pf *pf, double v);

/** The iid of @p s (repaired to UTF-8), for the _g calls below; 0 when it
 *  is not interned (too long, table full): use the string calls then. */
uint32_t act__pf_intern(act__pf *pf, const char *s, size_t n);
/** act__pf_event and act__pf_arg_* with strings interned already (a
 *  writer that caches iids per name skips hashing on the hot path). */
void act__pf_event_g(act__pf *pf, uint32_t seq, int type, uint64_t track, int64_t ts, int64_t t1,
                     uint32_t cat_g, uint32_t name_g);
/** act__pf_event_g and act__pf_event_end at once, for an event without
 *  args or flows (the common case, written without per-field checks). */
void act__pf_event_whole_g(act__pf *pf, uint32_t seq, int type, uint64_t track, int64_t ts,
                           int64_t t1, uint32_t cat_g, uint32_t name_g);
/** An arg whose key, and string value, are interned (kind ACT__PF_ARG_*;
 *  v: the value's bits, or the value's iid for _STR_IID). */
enum { ACT__PF_ARG_INT = 1, ACT__PF_ARG_UINT, ACT__PF_ARG_DOUBLE, ACT__PF_ARG_BOOL,
       ACT__PF_ARG_STR_IID };
typedef struct act__pf_garg {
    uint32_t key_g, kind;
    uint64_t v;
} act__pf_garg;
/** act__pf_event_whole_g with @p n such args: written at once when the
 *  sequence has every string already and @p n <= ACT__PF_GARGS_MAX, else
 *  field by field (the same bytes). */
#define ACT__PF_GARGS_MAX 3
void act__pf_event_args_g(act__pf *pf, uint32_t seq, int type, uint64_t track, int64_t ts,
                          int64_t t1, uint32_t cat_g, uint32_t name_g, const act__pf_garg *a,
                          size_t n);
void act__pf_arg_int_g(act__pf *pf, uint32_t key_g, int64_t v);
void act__pf_arg_uint_g(act__pf *pf, uint32_t key_g, uint64_t v);
void act__pf_arg_double_g(act__pf *pf, uint32_t key_g, double v);
void act__pf_arg_bool_g(act__pf *pf, uint32_t key_g, int v);
void act__pf_arg_str_g(act__pf *pf, uint32_t key_g, const char *s, size_t n);
/* The iid of string value @p s (interned now when new; its repaired copy
 * when it is not UTF-8), or 0 when it must go inline (too long, table
 * full); then an arg with interned key and value. */
uint32_t act__pf_value_iid(act__pf *pf, const char *s, size_t n);
void act__pf_arg_str_iid(act__pf *pf, uint32_t key_g, uint32_t val_g);
/** The bytes (repaired UTF-8) of interned string @p g, and its length. */
const char *act__pf_string(const act__pf *pf, uint32_t g, size_t *n);
/** @p terminating 0: flow_ids (the flow starts here), 1: terminating_flow_ids. */
void act__pf_flow(act__pf *pf, uint64_t id, int terminating);
void act__pf_event_end(act__pf *pf);

/** The bytes of @p s (1 to 7 of them) as one word for a hash, without a
 *  byte loop: two overlapping 4-byte words, or 3 bytes picked (all of a
 *  string of 1 to 3). */
static inline uint64_t act__pf_short_word(const char *s, size_t n)
{
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        return a | (uint64_t)b << 32;
    }
    return (uint64_t)(unsigned char)s[0] | (uint64_t)(unsigned char)s[n / 2] << 8 |
           (uint64_t)(unsigned char)s[n - 1] << 16;
}

/** The uuids actrace uses: a process, a thread (or stream) of a process
 *  (pids are never 0 and below 2^31), counter tracks (top bit set) and the
 *  trace-level metadata track (1). */
#define ACT__PF_UUID_META 1u
#define ACT__PF_UUID_COUNTER(k) ((uint64_t)1 << 63 | (uint64_t)(k))
static inline uint64_t act__pf_uuid_process(int32_t pid)
{
    return (uint64_t)(uint32_t)pid << 32;
}
static inline uint64_t act__pf_uuid_thread(int32_t pid, uint32_t tid)
{
    return (uint64_t)(uint32_t)pid << 32 | (tid & 0x7fffffffu) | 0x80000000u;
}

#endif /* ACT_WRITER_PFTRACE_H */
