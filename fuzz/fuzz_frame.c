/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the compact frames of sealed chunks (src/engine/frame.c), which the
 * archive and the spill file hold (a program may scribble over its spill
 * file). Two properties:
 *  - round trip: the input made into a chunk (byte 0 a mode, bytes 1-2 its
 *    size, 3-4 its record count, 5-6 where its string area starts, each
 *    brought into range; the rest its records and strings) is encoded,
 *    decoded and compared: header, records and string area bit for bit;
 *  - hostile frames: the input decoded as a frame never reads or writes
 *    out of bounds; what decodes encodes again to a frame that decodes to
 *    the same chunk.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static act__chunk *chunk_new(void)
{
    act__chunk *c = aligned_alloc(64, ACT__CHUNK_SIZE);
    if (c)
        memset(c, 0, ACT__CHUNK_SIZE);
    return c;
}

static int same(const act__chunk *a, const act__chunk *b, uint32_t used, uint32_t str_off)
{
    if (a->size != b->size || a->heap != b->heap || a->settled != b->settled ||
        atomic_load(&((act__chunk *)b)->used) != used)
        return 0;
    for (uint32_t i = 0; i < used; i++) {
        const act__rec *x = &a->recs[i], *y = &b->recs[i];
        if (x->t0 != y->t0 ||
            atomic_load(&((act__rec *)x)->t1) != atomic_load(&((act__rec *)y)->t1) ||
            x->x != y->x || x->name != y->name || x->type != y->type || x->kind != y->kind ||
            x->flags != y->flags)
            return 0;
    }
    return memcmp((const char *)a + str_off, (const char *)b + str_off, a->size - str_off) == 0;
}

/* Encode @p c, decode, compare: abort on a difference. */
static void round_trip(const act__chunk *c, uint32_t used, uint32_t str_off, act__chunk *d)
{
    size_t bound = act__frame_bound(c, used, str_off);
    uint8_t *f = malloc(bound);
    if (!f)
        return;
    size_t n = act__frame_encode(c, used, str_off, f, bound), got = 0;
    if (!n || n > bound || act__frame_decode(f, n, d, ACT__CHUNK_SIZE, &got) != 0 || got != n ||
        !same(c, d, used, str_off))
        abort();
    free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    act__chunk *c = chunk_new(), *d = chunk_new();
    if (!c || !d)
        goto out;
    if (size >= 1 && (data[0] & 1)) {
        /* A hostile frame (after the mode byte). */
        size_t got = 0;
        const uint8_t *in = data + 1;
        size_t len = size - 1;
        /* Copied to an exact-size buffer so that ASan sees a read past it. */
        uint8_t *g = malloc(len ? len : 1);
        if (!g)
            goto out;
        if (len)
            memcpy(g, in, len);
        uint32_t cap = data[0] & 2 ? ACT__CHUNK_FIRST : ACT__CHUNK_SIZE;
        if (act__frame_decode(g, len, c, cap, &got) == 0) {
            uint32_t sz, used, so;
            if (got > len || act__frame_peek(g, len, &sz, &used, &so) != 0 || sz > cap ||
                sz != c->size || used != atomic_load(&c->used))
                abort();
            round_trip(c, used, so, d);
        }
        free(g);
        goto out;
    }
    if (size < 7)
        goto out;
    uint32_t hdr = (uint32_t)sizeof(act__chunk);
    uint32_t csize = hdr + (uint32_t)(data[1] | data[2] << 8) % (ACT__CHUNK_SIZE - hdr + 1);
    uint32_t maxrec = (csize - hdr) / (uint32_t)sizeof(act__rec);
    uint32_t used = (uint32_t)(data[3] | data[4] << 8) % (maxrec + 1);
    uint32_t lo = hdr + used * (uint32_t)sizeof(act__rec);
    uint32_t str_off = lo + (uint32_t)(data[5] | data[6] << 8) % (csize - lo + 1);
    size_t body = size - 7 < ACT__CHUNK_SIZE - hdr ? size - 7 : ACT__CHUNK_SIZE - hdr;
    memcpy(c->recs, data + 7, body);
    c->size = csize;
    c->heap = data[0] >> 1 & 3;
    c->settled = data[0] >> 3 & 1;
    atomic_store(&c->used, used);
    round_trip(c, used, str_off, d);
out:
    free(c);
    free(d);
    return 0;
}
