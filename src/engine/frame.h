/* SPDX-License-Identifier: MIT */
/*
 * Compact frames: one sealed chunk (engine.h, act__chunk) in a few bytes
 * per record, for the archive the drain keeps (issue 39). A frame is
 * self-contained: it holds the chunk's header fields, its string area
 * byte for byte (local refs stay valid offsets) and its records, each
 * coded against the one before it. Decoding gives back the same chunk:
 * the header (next NULL), records [0, used) and the string area
 * [str_off, size) equal the encoded ones bit for bit; the gap between
 * them is left as it was in the destination.
 *
 * Layout (version 1; varints are LEB128, at most 10 bytes, u32 fields
 * at most 5):
 *   byte 0xA1 (ACT__FRAME_V1)
 *   varint size, used, settled, heap, str_off
 *   size - str_off bytes: the string area
 *   used records, each:
 *     byte H: bits 0-2 the kind (1, a kind no record uses: a literal
 *       kind byte follows), bit 3 a varint type follows (else the type
 *       of the record before, 0 for the first), bit 4 a flags byte
 *       follows (else 0), bit 5 varint x code (else 0), bit 6 varint
 *       name code (else 0), bit 7 varint t1 code (else 0)
 *     varint t0 code; t1 and x codes (0 when absent). Timed records
 *       (span, instant, counter, the plugins' span and instant): t0 less
 *       the t0 of the timed record before (0 for the first), zigzag,
 *       modulo 2^64; t1: a counter's value bits byte-swapped (a round
 *       double ends in zero bytes), else t1 - t0 zigzag; x as it is.
 *       Others (args, a plugin event's device record, unknown kinds):
 *       t0, t1 and x each less the same field of the untimed record
 *       before (0 for the first), zigzag (an arg group's second-arg word
 *       and a reused string value cost nothing, a sequence number one
 *       byte). The name code: the name XOR the name of the record
 *       before of the same sort (timed or not; 0 for the first), rotated
 *       left by one so that a local ref stays short; a repeated name is 0
 *     the optional fields in the order of H's bits
 *
 * Hostile input (a spill file is the program's to scribble on) never
 * makes the decoder read or write out of bounds: every count and offset
 * is checked against the input and the destination.
 */
#ifndef ACT_ENGINE_FRAME_H
#define ACT_ENGINE_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

#define ACT__FRAME_V1 0xA1u

/* Bytes a frame of chunk @p c (its first @p used records, its string area
 * from @p str_off on) takes at most. */
size_t act__frame_bound(const act__chunk *c, uint32_t used, uint32_t str_off);

/* Encode @p used records of @p c and its string area [@p str_off,
 * c->size) into @p out (@p cap bytes). The frame's length, or 0 when
 * @p cap is below act__frame_bound or the offsets do not fit the chunk
 * (sizeof(act__chunk) + used records <= str_off <= size). t1 is loaded
 * relaxed (the caller knows no thread writes it any more). */
size_t act__frame_encode(const act__chunk *c, uint32_t used, uint32_t str_off, uint8_t *out,
                         size_t cap);

/* The header of the frame at @p in (@p len bytes): the chunk size it
 * decodes to, its record count and where its string area starts. 0, or
 * -1 if not a frame. */
int act__frame_peek(const uint8_t *in, size_t len, uint32_t *size, uint32_t *used,
                    uint32_t *str_off);

/* Decode the frame at @p in (at most @p len bytes) into @p out, which has
 * room for @p out_cap bytes. 0 with *@p consumed the frame's length, or
 * -1: not a frame, truncated, or its chunk larger than @p out_cap
 * (then @p out may hold part of it). */
int act__frame_decode(const uint8_t *in, size_t len, act__chunk *out, size_t out_cap,
                      size_t *consumed);

/*
 * The archive's frame nodes. The drain (thread.c) replaces a sealed pool
 * chunk by a node that holds its frame: an act__chunk header (next as
 * ever; used 0, so that a walk that does not know frames sees no records
 * rather than reading past the node; size the node's bytes; heap
 * ACT__CHUNK_FRAMED), an act__fmeta, then the frame. Stats read the
 * counts in act__fmeta; the writers' walk (act__visit) sees decoded
 * copies (act__frames_inflate) for as long as it holds s->lock.
 */
#define ACT__CHUNK_FRAMED 3u

typedef struct act__fmeta {
    uint32_t events; /* records stats count as recorded (not args, not device records) */
    uint32_t args;   /* args (an arg record holds one or two) */
    uint32_t flen;   /* the frame's bytes */
    uint32_t nrec;   /* records */
    /* The summary the walk's first pass (visit.c, scan_thread) reads
     * instead of decoding the frame, when ACT__FM_SUMMED: */
    uint32_t hevents; /* span and instant records, host and plugin */
    uint32_t flags;   /* ACT__FM_* */
    int64_t min_t0;   /* the least t0 of those and of counter samples,
                         INT64_MAX: none */
    int64_t first_t0, first_t1, last_t0, last_t1; /* the first and last of
                         those events (t1 ACT__OPEN as INT64_MAX) */
    uint64_t sum;     /* act__fmeta_sum: the fields above and the frame */
} act__fmeta;

/* Events in start order within the frame (as scan_thread judges it: t0
 * not decreasing, of equal t0 the longer first). */
#define ACT__FM_SORTED 1u
/* The summary stands for the records: no device record (flows, streams,
 * plugin host spans need each record) and no event t0 still a tick. */
#define ACT__FM_SUMMED 2u
#define ACT__FM_COUNTERS 4u /* a counter sample */
#define ACT__FM_AUX 8u      /* a device record (ACT__R_AUX_DEV) */

/* The check sum of node @p c's act__fmeta (but its sum) and frame: any
 * one 8-byte word changed changes it. 0 with *@p out, or -1 when the
 * frame's length does not fit the node. */
int act__fmeta_sum(const act__chunk *c, uint64_t *out);

static inline int act__chunk_framed(const act__chunk *c)
{
    return c->heap == ACT__CHUNK_FRAMED;
}

static inline const act__fmeta *act__fmeta_of(const act__chunk *c)
{
    return (const act__fmeta *)(const void *)c->recs;
}

/* Make a frame node of chunk @p c (sealed, no thread writes it) in
 * memory from @p carve(@p arg, bytes): encoded in @p *scratch (grown as
 * needed, *@p scap bytes; the caller frees it). The node (next NULL), or
 * NULL: out of memory, or the frame would be no smaller than the chunk
 * (keep it as it is). */
act__chunk *act__frame_node(const act__chunk *c, uint8_t **scratch, size_t *scap,
                            void *(*carve)(void *arg, size_t bytes), void *arg);

/* Under s->lock: replace each frame node in @p s's thread lists by a
 * copy at an address of its own (what act__visit reads), noted in @p u,
 * which act__frames_restore undoes (the same lock hold: the drain splices
 * under it). 0, or ACT_ENOMEM or ACT_EINVAL (a frame that does not
 * decode: nothing replaced then).
 *
 * act__frames_inflate decodes every copy at once (the session's decoded
 * size in fresh memory: tests only). act__frames_inflate_lazy decodes
 * none: a walk enters a copy
 * (act__frames_enter, found by act__frames_find) before it reads it and
 * drops it (act__frames_drop) once it moves on; a copy's next is in its
 * entry whether decoded or not. At most ACT__INFL_LIVE copies it did not
 * drop stay decoded (the oldest is dropped), so a walk keeps a few chunks
 * of memory however large the session (issue 39: the write stays within
 * MAX_BUFFER_SIZE_MB). Copies stay at their addresses: a record's address
 * names it for the whole walk. A frame that does not decode sets bad (its
 * copy holds no records), and so does one whose sum does not match
 * (act__frames_summary): act__visit's first pass checks every frame's sum
 * (and decodes those it cannot summarise) and refuses to write when one
 * is bad; a frame whose sum matches but which does not decode (made so
 * on purpose) is found by the write pass, whose error keeps the file
 * from being renamed into place. */
#define ACT__INFL_LIVE 16
struct act__infl_ent {
    act__thread *t;
    act__chunk *prev;  /* the chunk in memory before the node, NULL: the head */
    act__chunk *node, *copy;
    act__chunk *next;  /* the copy's next (a copy when the next was a node too) */
    uint32_t size;     /* the copy's chunk bytes */
    uint8_t restore;   /* prev (or the head) points at the copy */
    uint8_t live;      /* decoded now */
    int16_t slot;      /* the memory file's place it is mapped from, or -1 */
    uint64_t stamp;    /* when last entered */
};
typedef struct act__inflated {
    struct act__infl_ent *v; /* by address of the copy */
    size_t n;
    void *map;
    size_t map_len;
    int lazy;
    const act__spill_map *spill;
    int mfd;                     /* the copies' memory file (lazy), or -1 */
    int bad;                     /* a frame entered did not decode */
    size_t ring[ACT__INFL_LIVE]; /* entries decoded, +1 (0: none) */
    uint64_t clock;
} act__inflated;
int act__frames_inflate(act_session *s, act__inflated *u);
/* @p spill (NULL: none): the walk's spilled slabs, each let go as soon
 * as looked at. */
int act__frames_inflate_lazy(act_session *s, act__inflated *u, const act__spill_map *spill);
void act__frames_restore(act_session *s, act__inflated *u);
/* The entry of copy @p c, or -1 if @p c is no copy of @p u. */
long act__frames_find(const act__inflated *u, const act__chunk *c);
/* Decode entry @p k's copy unless it is: 0, or -1 if its frame no longer
 * decodes (the copy then holds no records). */
int act__frames_enter(act__inflated *u, size_t k);
/* The summary of entry @p k's frame: 1 with *@p m when the first pass
 * may read it instead of the records (ACT__FM_SUMMED, its sum right), 0
 * when it has to decode the frame, -1 when the sum is wrong (bad is set:
 * the node was written over; the write is refused before it starts). */
int act__frames_summary(act__inflated *u, size_t k, const act__fmeta **m);
/* How many times a walk decoded a frame node, in this process (tests:
 * a write decodes each once). */
uint64_t act__frames_decoded(void);
/* Give entry @p k's decoded copy back to the system (its address stays). */
void act__frames_drop(act__inflated *u, size_t k);

#endif
