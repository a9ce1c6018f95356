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
 *       follows (else 0), bit 5 varint x (else 0), bit 6 varint name,
 *       rotated left by one so a local ref stays short (else 0), bit 7
 *       varint t1 code (else 0)
 *     varint t0 code; t1 and x codes (0 when absent). Timed records
 *       (span, instant, counter, the plugins' span and instant): t0 less
 *       the t0 of the timed record before (0 for the first), zigzag,
 *       modulo 2^64; t1: a counter's value bits byte-swapped (a round
 *       double ends in zero bytes), else t1 - t0 zigzag; x as it is.
 *       Others (args, a plugin event's device record, unknown kinds):
 *       t0, t1 and x each less the same field of the untimed record
 *       before (0 for the first), zigzag (an arg group's second-arg word
 *       and a reused string value cost nothing, a sequence number one
 *       byte)
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

/* The lowest offset a local string ref of chunk @p c's first @p used
 * records points to (names, arg keys and string values), or c->size if
 * none: where its string area starts for act__frame_encode. */
uint32_t act__frame_str_low(const act__chunk *c, uint32_t used);

#endif
