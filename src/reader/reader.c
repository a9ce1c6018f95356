/* SPDX-License-Identifier: MIT */
/*
 * The streaming trace reader (see reader.h for the interface): a pull
 * parser that turns a byte stream into items (events, top-level members),
 * each as a small tree of nodes that lives in the reader's buffer.
 *
 * State machine and its invariants
 * --------------------------------
 * Bytes: buf[0, end) holds decoded input not yet discarded; buf[end] is
 * always 0 (a sentinel that stops every scanning loop, since a NUL byte is
 * never valid JSON outside a string and never valid raw inside one), and
 * SLACK more bytes follow so that 8-byte loads at any index <= end stay in
 * the allocation. `base` is the stream offset of buf[0]. `pos` is the next
 * byte to parse. `beg` <= pos is the first byte that must be kept: the
 * start of the item being parsed, or pos between items. Refilling (more())
 * moves buf[beg, end) to the front, so offsets relative to `beg` survive a
 * refill, and grows the buffer only when the item alone fills it (up to
 * max_item_bytes: a bigger item is an error, so memory is bounded).
 *
 * Items: nodes point into buf (key, s) and at each other (next, child,
 * with their indices inext/ichild beside). A refill that moves the bytes
 * turns the item's node pointers into offsets from the item start and back
 * (nodes_to_offsets), and growing the node array rebuilds the links from
 * the indices, so a finished item needs no fix-up pass. Pointers are valid
 * until the next call.
 * Strings are validated in one pass (fast path: 16 bytes at a time with
 * SSE2, else 8 with word tricks, while none is a quote, a backslash, a
 * control byte or non-ASCII) and, only if
 * they hold escapes, decoded in place (a decoded escape is never longer
 * than its text); the closing quote becomes a NUL terminator. Numbers are
 * checked against the grammar and kept as text; converting them is the
 * consumer's choice (lazy).
 *
 * Top level (state): START -> '[' (array of events) | '{' (object) | a
 * scalar (no events). In an object: KEY ':' value, where a "traceEvents"
 * array is not an item but streams its elements as events (EV states), and
 * any other value is one MEMBER item. After the document: only whitespace,
 * then END. A failure sets `failed` and the message once; every later call
 * returns -1.
 *
 * Nesting is parsed with an explicit stack (max_depth), never recursion,
 * so no input can exhaust the C stack.
 */
#include "reader/reader.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef ACT_HAVE_ZLIB
#include <zlib.h>
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__GNUC__)
#define INLINE static inline __attribute__((always_inline))
#define NOINLINE __attribute__((noinline))
#else
#define INLINE static inline
#define NOINLINE
#endif

#define SLACK 16
#define INIT_CAP (1u << 20)
#define ZIN_CAP (1u << 18)
#define DEFAULT_MAX_ITEM ((size_t)64 << 20)
#define DEFAULT_MAX_DEPTH 1000u
#define MAX_NODES (1u << 22)

enum { S_START, S_KEY_FIRST, S_KEY, S_TOP_AFTER, S_EV_FIRST, S_EV, S_EV_AFTER,
       S_END, S_DONE };

typedef struct frame {
    uint32_t node, last;
} frame;

struct act__rd {
    int fd;
    unsigned char *buf;
    size_t cap, beg, pos, end;
    uint64_t base;
    int eof, failed, state, layout, in_events, top_array;
    uint64_t nev, raw_read;
    size_t max_item;
    unsigned max_depth;
    act__jv *nodes;
    size_t ncap, nn;
    frame *stack;
    size_t scap;
    /* source */
    int probed, gz;
    unsigned char *zin;  /* raw input: gzip data, or the probe's bytes */
    size_t zin_pos, zin_len;
    int raw_eof;
#ifdef ACT_HAVE_ZLIB
    z_stream z;
    int zinit, zmember_end;
#endif
    char msg[512];
};

/* ---- errors --------------------------------------------------------------- */

static int fail(act__rd *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int fail(act__rd *r, const char *fmt, ...)
{
    if (r->failed)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    r->failed = 1;
    return -1;
}

static const char *where(const act__rd *r, char *buf, size_t len)
{
    if (r->in_events)
        snprintf(buf, len, "event #%" PRIu64, r->nev);
    else
        snprintf(buf, len, "%s", "outside the event array");
    return buf;
}

static const char *gz_note(const act__rd *r, char *buf, size_t len)
{
    buf[0] = '\0';
    if (r->gz)
        snprintf(buf, len,
                 " [gzip input: offset in the decompressed data; %" PRIu64
                 " compressed bytes read]",
                 r->raw_read);
    return buf;
}

/* A syntax error at offset @p i of the current item. */
NOINLINE static int bad(act__rd *r, size_t i, const char *what)
{
    char w[64], g[128];
    return fail(r, "invalid JSON at byte offset %" PRIu64 " (%s): %s%s",
                r->base + r->beg + i, where(r, w, sizeof w), what,
                gz_note(r, g, sizeof g));
}

NOINLINE static int truncated(act__rd *r, size_t i, const char *inside)
{
    char w[64], g[128];
    return fail(r,
                "invalid JSON at byte offset %" PRIu64
                " (%s): unexpected end of input %s (truncated file?)%s",
                r->base + r->beg + i, where(r, w, sizeof w), inside,
                gz_note(r, g, sizeof g));
}

/* ---- source: read(2), gzip through zlib ------------------------------------ */

static ssize_t raw_read(act__rd *r, unsigned char *dst, size_t n)
{
    for (;;) {
        ssize_t got = read(r->fd, dst, n);
        if (got >= 0) {
            r->raw_read += (uint64_t)got;
            return got;
        }
        if (errno != EINTR) {
            fail(r, "read error: %s", strerror(errno));
            return -1;
        }
    }
}

#ifdef ACT_HAVE_ZLIB
/* Fill zin from the descriptor when it is used up. 1, 0 at EOF, -1. */
static int zin_fill(act__rd *r)
{
    if (r->zin_pos < r->zin_len)
        return 1;
    if (r->raw_eof)
        return 0;
    ssize_t got = raw_read(r, r->zin, ZIN_CAP);
    if (got < 0)
        return -1;
    r->zin_pos = 0;
    r->zin_len = (size_t)got;
    if (!got)
        r->raw_eof = 1;
    return got > 0;
}

#endif

/* Read the first bytes to see whether the input is gzip. */
static int probe(act__rd *r)
{
    r->probed = 1;
    r->zin = malloc(ZIN_CAP);
    if (!r->zin)
        return fail(r, "out of memory");
    while (r->zin_len < 2 && !r->raw_eof) {
        ssize_t got = raw_read(r, r->zin + r->zin_len, ZIN_CAP - r->zin_len);
        if (got < 0)
            return -1;
        if (!got)
            r->raw_eof = 1;
        r->zin_len += (size_t)got;
    }
    if (r->zin_len >= 2 && r->zin[0] == 0x1f && r->zin[1] == 0x8b) {
        r->gz = 1;
#ifdef ACT_HAVE_ZLIB
        memset(&r->z, 0, sizeof r->z);
        if (inflateInit2(&r->z, 16 + MAX_WBITS) != Z_OK)
            return fail(r, "out of memory (zlib)");
        r->zinit = 1;
#else
        return fail(r, "gzip-compressed input, but actrace was built without "
                       "zlib (gunzip it first)");
#endif
    }
    return 0;
}

/* Up to @p n decoded bytes into @p dst: >0, 0 at the end, -1. */
static ssize_t src_read(act__rd *r, unsigned char *dst, size_t n)
{
    if (!r->probed && probe(r) < 0)
        return -1;
    if (!r->gz) {
        if (r->zin_pos < r->zin_len) { /* the probe's bytes first */
            size_t k = r->zin_len - r->zin_pos;
            if (k > n)
                k = n;
            memcpy(dst, r->zin + r->zin_pos, k);
            r->zin_pos += k;
            return (ssize_t)k;
        }
        if (r->raw_eof)
            return 0;
        return raw_read(r, dst, n);
    }
#ifdef ACT_HAVE_ZLIB
    if (n > (1u << 30))
        n = 1u << 30;
    for (;;) {
        int f = zin_fill(r);
        if (f < 0)
            return -1;
        if (r->zmember_end) {
            if (!f)
                return 0; /* the end, after a complete member */
            /* Another member follows (concatenated gzip files), or junk. */
            if (r->zin_len - r->zin_pos < 2 && !r->raw_eof) {
                memmove(r->zin, r->zin + r->zin_pos, r->zin_len - r->zin_pos);
                r->zin_len -= r->zin_pos;
                r->zin_pos = 0;
                ssize_t got = raw_read(r, r->zin + r->zin_len, ZIN_CAP - r->zin_len);
                if (got < 0)
                    return -1;
                if (!got)
                    r->raw_eof = 1;
                r->zin_len += (size_t)got;
                continue;
            }
            if (r->zin_len - r->zin_pos < 2 || r->zin[r->zin_pos] != 0x1f ||
                r->zin[r->zin_pos + 1] != 0x8b)
                return fail(r, "bad gzip data: trailing garbage after the "
                               "compressed stream");
            inflateReset(&r->z);
            r->zmember_end = 0;
        }
        if (!f)
            return fail(r, "truncated gzip data (unexpected end of file after "
                           "%" PRIu64 " compressed bytes)", r->raw_read);
        r->z.next_in = r->zin + r->zin_pos;
        r->z.avail_in = (uInt)(r->zin_len - r->zin_pos);
        r->z.next_out = dst;
        r->z.avail_out = (uInt)n;
        int zr = inflate(&r->z, Z_NO_FLUSH);
        r->zin_pos = r->zin_len - r->z.avail_in;
        size_t made = n - r->z.avail_out;
        if (zr == Z_STREAM_END)
            r->zmember_end = 1;
        else if (zr != Z_OK && zr != Z_BUF_ERROR)
            return fail(r, "bad gzip data: %s (after %" PRIu64
                           " compressed bytes)",
                        r->z.msg ? r->z.msg : "corrupt stream", r->raw_read);
        if (made)
            return (ssize_t)made;
    }
#else
    return -1;
#endif
}

/* Keep buf[beg, end), read more after it. 1: more bytes; 0: end of input;
 * -1: error (read, gzip, or the item would exceed max_item). */
static int more_bytes(act__rd *r);

/* The item's nodes point into buf: around a move they are turned into
 * offsets from the item start (integers: no pointer outlives its buffer)
 * and back. Only at refills, so rarely. */
static void nodes_to_offsets(act__rd *r)
{
    uintptr_t base = (uintptr_t)(r->buf + r->beg);
    for (size_t k = 0; k < r->nn; k++) {
        act__jv *v = &r->nodes[k];
        if (v->key)
            v->key = (const char *)((uintptr_t)v->key - base);
        if (v->type == ACT__J_STRING || v->type == ACT__J_NUMBER)
            v->s = (const char *)((uintptr_t)v->s - base);
    }
}

static void offsets_to_nodes(act__rd *r)
{
    uintptr_t base = (uintptr_t)(r->buf + r->beg);
    for (size_t k = 0; k < r->nn; k++) {
        act__jv *v = &r->nodes[k];
        if (v->key)
            v->key = (const char *)(base + (uintptr_t)v->key);
        if (v->type == ACT__J_STRING || v->type == ACT__J_NUMBER)
            v->s = (const char *)(base + (uintptr_t)v->s);
    }
}

NOINLINE static int more(act__rd *r)
{
    if (r->failed)
        return -1;
    if (r->eof)
        return 0;
    int moves = r->beg || r->end == r->cap;
    if (moves)
        nodes_to_offsets(r);
    int rc = more_bytes(r);
    if (moves)
        offsets_to_nodes(r);
    return rc;
}

/* more() without the node bookkeeping. */
NOINLINE static int more_bytes(act__rd *r)
{
    if (r->beg) {
        memmove(r->buf, r->buf + r->beg, r->end - r->beg);
        r->base += r->beg;
        r->pos -= r->beg;
        r->end -= r->beg;
        r->beg = 0;
    }
    if (r->end == r->cap) {
        if (r->cap >= r->max_item) {
            char w[64], g[128];
            return fail(r,
                        "item at byte offset %" PRIu64 " (%s) is larger than "
                        "the %zu MiB limit of one event or member%s",
                        r->base, where(r, w, sizeof w), r->max_item >> 20,
                        gz_note(r, g, sizeof g));
        }
        size_t ncap = r->cap * 2 > r->max_item ? r->max_item : r->cap * 2;
        unsigned char *nb = realloc(r->buf, ncap + SLACK);
        if (!nb)
            return fail(r, "out of memory (an item of %zu bytes)", ncap);
        r->buf = nb;
        r->cap = ncap;
    }
    ssize_t got = src_read(r, r->buf + r->end, r->cap - r->end);
    if (got < 0)
        return -1;
    r->end += (size_t)got;
    /* Also at the end of input: the move above left stale bytes there. */
    memset(r->buf + r->end, 0, SLACK);
    if (got == 0) {
        r->eof = 1;
        return 0;
    }
    return 1;
}

/* ---- scanning --------------------------------------------------------------- */

static const unsigned char ws_tab[256] = {[' '] = 1, ['\t'] = 1, ['\n'] = 1,
                                          ['\r'] = 1};

/* Cursor over the current item: b = buf + beg, n bytes, at i. */
typedef struct cur {
    unsigned char *b;
    size_t n, i;
} cur;

/* Refill; the cursor follows the moved bytes. 1, 0 (end), -1. */
INLINE int fill(act__rd *r, cur *c)
{
    int m = more(r);
    c->b = r->buf + r->beg;
    c->n = r->end - r->beg;
    return m;
}

/* Skip whitespace; the next byte, or -1 at the end of input, -2 on error. */
INLINE int ws(act__rd *r, cur *c)
{
    /* Fast path: most tokens follow without whitespace. Any byte above
     * ' ' is inside the data (buf[end] is the 0 sentinel), so no bounds
     * check is needed. */
    unsigned char ch0 = c->b[c->i];
    if (ch0 > ' ')
        return ch0;
    for (;;) {
        unsigned char *b = c->b;
        size_t i = c->i;
        while (ws_tab[b[i]])
            i++;
        c->i = i;
        if (i < c->n)
            return b[i];
        int m = fill(r, c);
        if (m < 0)
            return -2;
        if (m == 0)
            return -1;
    }
}

/* Make @p k bytes from c->i available: 1, or 0 at the end, -1. */
INLINE int need(act__rd *r, cur *c, size_t k)
{
    while (c->n - c->i < k) {
        int m = fill(r, c);
        if (m <= 0)
            return m;
    }
    return 1;
}

INLINE int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

INLINE long hex4(const unsigned char *p)
{
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(p[k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

#define ONES UINT64_C(0x0101010101010101)
#define HIGH UINT64_C(0x8080808080808080)
#define HASZERO(x) (((x) - ONES) & ~(x) & HIGH)

/* Decode the validated string body b[st, close) in place; its length. */
NOINLINE static size_t decode(unsigned char *b, size_t st, size_t close)
{
    size_t w = st, i = st;
    while (i < close) {
        unsigned char c = b[i];
        if (c != '\\') {
            b[w++] = c;
            i++;
            continue;
        }
        unsigned char e = b[i + 1];
        i += 2;
        switch (e) {
        case 'b': b[w++] = '\b'; break;
        case 'f': b[w++] = '\f'; break;
        case 'n': b[w++] = '\n'; break;
        case 'r': b[w++] = '\r'; break;
        case 't': b[w++] = '\t'; break;
        case 'u': {
            unsigned long cp = (unsigned long)hex4(b + i);
            i += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned long lo = (unsigned long)hex4(b + i + 2);
                i += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp < 0x80) {
                b[w++] = (unsigned char)cp;
            } else if (cp < 0x800) {
                b[w++] = (unsigned char)(0xC0 | (cp >> 6));
                b[w++] = (unsigned char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                b[w++] = (unsigned char)(0xE0 | (cp >> 12));
                b[w++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                b[w++] = (unsigned char)(0x80 | (cp & 0x3F));
            } else {
                b[w++] = (unsigned char)(0xF0 | (cp >> 18));
                b[w++] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                b[w++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                b[w++] = (unsigned char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: b[w++] = e; break; /* " \ / */
        }
    }
    b[w] = '\0';
    return w - st;
}

/* The string at c->i (its opening quote): validated, decoded, terminated;
 * *off and *len give its body relative to the item. 0 or -1. */
INLINE int string(act__rd *r, cur *c, size_t *off, size_t *len)
{
#if !defined(__SSE2__)
    const uint64_t Q = ONES * '"', BS = ONES * '\\', SP = ONES * 0x20;
#endif
    size_t st = ++c->i;
    int esc = 0;
    for (;;) {
        unsigned char *b = c->b;
        size_t i = c->i;
#if defined(__SSE2__)
        /* 16 bytes at a time: a signed compare below 0x20 flags control
         * bytes and non-ASCII (>= 0x80, negative) at once. Loads stay in
         * the allocation: i <= end and SLACK is 16. */
        {
            const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'),
                          sp = _mm_set1_epi8(0x20);
            for (;;) {
                __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
                __m128i t = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, bs)),
                    _mm_cmplt_epi8(x, sp));
                unsigned mk = (unsigned)_mm_movemask_epi8(t);
                if (mk) {
                    i += (size_t)__builtin_ctz(mk);
                    break;
                }
                i += 16;
            }
        }
#else
        for (;;) {
            uint64_t x;
            memcpy(&x, b + i, 8);
            uint64_t t = HASZERO(x ^ Q) | HASZERO(x ^ BS) |
                         ((x - SP) & ~x & HIGH) | (x & HIGH);
            if (t) {
                /* The lowest flagged byte is exact (a borrow only flags
                 * bytes above a true hit): jump to it. Little-endian. */
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                i += (size_t)__builtin_ctzll(t) >> 3;
#else
                while (b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 && b[i] < 0x80)
                    i++;
#endif
                break;
            }
            i += 8;
        }
#endif
        c->i = i;
        unsigned char ch = b[i];
        if (ch == '"') {
            if (esc) {
                *len = decode(b, st, i);
            } else {
                b[i] = '\0';
                *len = i - st;
            }
            *off = st;
            c->i = i + 1;
            return 0;
        }
        if (ch == '\\') {
            int m = need(r, c, 2);
            if (m <= 0)
                return m < 0 ? -1 : truncated(r, c->i, "in a string");
            unsigned char e = c->b[c->i + 1];
            if (e == 'u') {
                if ((m = need(r, c, 6)) <= 0)
                    return m < 0 ? -1 : truncated(r, c->i, "in a \\u escape");
                long cp = hex4(c->b + c->i + 2);
                if (cp < 0)
                    return bad(r, c->i, "invalid \\u escape (4 hex digits expected)");
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    return bad(r, c->i, "invalid \\u escape: a lone low surrogate");
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if ((m = need(r, c, 12)) < 0)
                        return -1;
                    const unsigned char *p = c->b + c->i + 6;
                    long lo = m ? hex4(p + 2) : -1;
                    if (!m || p[0] != '\\' || p[1] != 'u' || lo < 0xDC00 ||
                        lo > 0xDFFF)
                        return bad(r, c->i,
                                   "invalid \\u escape: a high surrogate "
                                   "without its low surrogate");
                    c->i += 6;
                }
                c->i += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' ||
                       e == 'f' || e == 'n' || e == 'r' || e == 't') {
                c->i += 2;
            } else {
                return bad(r, c->i, "invalid escape in a string");
            }
            esc = 1;
            continue;
        }
        if (ch < 0x20) {
            if (i >= c->n) {
                int m = fill(r, c);
                if (m <= 0)
                    return m < 0 ? -1 : truncated(r, c->i, "in a string");
                continue;
            }
            return bad(r, i, "control character in a string (must be escaped)");
        }
        /* Non-ASCII: one UTF-8 sequence (RFC 3629). */
        size_t k = ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : 2;
        int m = need(r, c, k);
        if (m < 0)
            return -1;
        const unsigned char *p = c->b + c->i;
        unsigned char lo = 0x80, hi = 0xBF;
        if (ch < 0xC2 || ch > 0xF4)
            return bad(r, c->i, "invalid UTF-8 in a string");
        if (ch == 0xE0)
            lo = 0xA0;
        else if (ch == 0xED)
            hi = 0x9F;
        else if (ch == 0xF0)
            lo = 0x90;
        else if (ch == 0xF4)
            hi = 0x8F;
        if (!m)
            return truncated(r, c->i, "in a string");
        if (p[1] < lo || p[1] > hi || (k > 2 && (p[2] & 0xC0) != 0x80) ||
            (k > 3 && (p[3] & 0xC0) != 0x80))
            return bad(r, c->i, "invalid UTF-8 in a string");
        c->i += k;
    }
}

/* Digits from c->i; refills across the buffer end. Returns the count, or
 * -1 on a read error. */
INLINE long digits(act__rd *r, cur *c)
{
    long n = 0;
    for (;;) {
        unsigned char *b = c->b;
        size_t i = c->i;
        while (b[i] >= '0' && b[i] <= '9')
            i++;
        n += (long)(i - c->i);
        c->i = i;
        if (i < c->n)
            return n;
        int m = fill(r, c);
        if (m < 0)
            return -1;
        if (m == 0)
            return n;
    }
}

/* The byte at c->i, refilling; 0 at the end of input; -1 on error. */
INLINE int peek(act__rd *r, cur *c)
{
    if (c->i < c->n)
        return c->b[c->i];
    int m = fill(r, c);
    return m < 0 ? -1 : m == 0 ? 0 : c->b[c->i];
}

#define IS_DIGIT(ch) ((unsigned)((ch) - '0') < 10u)

/* A number at c->i: checked, kept as text. 0 or -1.
 * Fast path: one pass over the bytes, no refill checks (the 0 sentinel at
 * buf[end] stops every loop); taken when the number ends before the data
 * does. Otherwise (a number cut by the buffer's end, or any error) the
 * careful path below re-scans it from its start with refills, and names
 * the error. */
INLINE int number(act__rd *r, cur *c, act__jv *v, size_t *off)
{
    size_t st = c->i;
    int ch, integer = 1;
    {
        /* The digits are gathered into one integer on the way (wrapping
         * harmlessly past 19 of them: then mfast stays 0). */
        const unsigned char *b = c->b;
        size_t i = st + (b[st] == '-');
        uint64_t m = 0;
        size_t d0 = i, fd = 0;
        if (b[i] == '0') {
            i++;
        } else if (b[i] >= '1' && b[i] <= '9') {
            do
                m = m * 10 + (unsigned)(b[i++] - '0');
            while (IS_DIGIT(b[i]));
        } else {
            goto slow;
        }
        size_t nd = i - d0;
        if (b[i] == '.') {
            size_t d = ++i;
            while (IS_DIGIT(b[i]))
                m = m * 10 + (unsigned)(b[i++] - '0');
            if (i == d)
                goto slow;
            fd = i - d;
            nd += fd;
            integer = 0;
        }
        v->mant = m;
        v->fdig = (uint8_t)fd;
        v->mfast = nd <= 18;
        if ((b[i] | 0x20) == 'e') {
            v->mfast = 0;
            i++;
            i += b[i] == '+' || b[i] == '-';
            size_t d = i;
            while (IS_DIGIT(b[i]))
                i++;
            if (i == d)
                goto slow;
            integer = 0;
        }
        if (i >= c->n) {
            v->mfast = 0;
            goto slow;
        }
        c->i = i;
        *off = st;
        v->len = i - st;
        v->integer = (uint8_t)integer;
        return 0;
    }
slow:
    integer = 1;
    if (c->b[c->i] == '-')
        c->i++;
    if ((ch = peek(r, c)) < 0)
        return -1;
    if (ch == '0') {
        c->i++;
    } else if (ch >= '1' && ch <= '9') {
        if (digits(r, c) < 0)
            return -1;
    } else {
        return ch ? bad(r, c->i, "invalid number") : truncated(r, c->i, "in a number");
    }
    if ((ch = peek(r, c)) < 0)
        return -1;
    if (ch == '.') {
        integer = 0;
        c->i++;
        long d = digits(r, c);
        if (d < 0)
            return -1;
        if (d == 0)
            return c->i >= c->n ? truncated(r, c->i, "in a number")
                                : bad(r, c->i, "invalid number: a digit must follow '.'");
        if ((ch = peek(r, c)) < 0)
            return -1;
    }
    if (ch == 'e' || ch == 'E') {
        integer = 0;
        c->i++;
        if ((ch = peek(r, c)) < 0)
            return -1;
        if (ch == '+' || ch == '-')
            c->i++;
        long d = digits(r, c);
        if (d < 0)
            return -1;
        if (d == 0)
            return c->i >= c->n ? truncated(r, c->i, "in a number")
                                : bad(r, c->i, "invalid number: a digit must follow the exponent");
    }
    *off = st;
    v->len = c->i - st;
    v->integer = (uint8_t)integer;
    return 0;
}

/* ---- items ---------------------------------------------------------------------- */

static int new_node(act__rd *r, uint32_t *out)
{
    if (r->nn == r->ncap) {
        if (r->ncap >= MAX_NODES)
            return -2;
        size_t nc = r->ncap ? r->ncap * 2 : 256;
        act__jv *nv = realloc(r->nodes, nc * sizeof *nv);
        if (!nv)
            return -1;
        r->nodes = nv;
        r->ncap = nc;
        /* The links are pointers too: rebuilt from their indices. */
        for (size_t k = 0; k < r->nn; k++) {
            nv[k].next = nv[k].inext ? &nv[nv[k].inext] : NULL;
            nv[k].child = nv[k].ichild ? &nv[nv[k].ichild] : NULL;
        }
    }
    memset(&r->nodes[r->nn], 0, sizeof r->nodes[r->nn]);
    *out = (uint32_t)r->nn++;
    return 0;
}


/* Parse one value (the item) from c->i; the key of a top-level member may
 * already be at *koff (relative offsets). Nodes end up in r->nodes. */
static int value_(act__rd *r, cur *c, int has_key, size_t koff, size_t klen);

/* The cursor is copied into a local so that, with the helpers inlined, it
 * lives in registers. */
NOINLINE static int value(act__rd *r, cur *cp, int has_key, size_t koff,
                          size_t klen)
{
    cur c = *cp;
    int rc = value_(r, &c, has_key, koff, klen);
    *cp = c;
    return rc;
}

INLINE int value_(act__rd *r, cur *c, int has_key, size_t koff, size_t klen)
{
    size_t depth = 0;
    int ch;
    r->nn = 0;
    for (;;) {
        /* A value, with the pending key (objects) or none. */
        if ((ch = ws(r, c)) < 0)
            return ch == -2 ? -1 : truncated(r, c->i, "where a value was expected");
        uint32_t k;
        int nr = new_node(r, &k);
        if (nr < 0)
            return nr == -1 ? fail(r, "out of memory")
                            : bad(r, c->i, "too many values in one item");
        act__jv *v = &r->nodes[k];
        if (has_key) {
            v->key = (const char *)c->b + koff;
            v->klen = klen;
            has_key = 0;
        }
        if (depth) {
            frame *f = &r->stack[depth - 1];
            if (f->last) {
                r->nodes[f->last].inext = k;
                r->nodes[f->last].next = &r->nodes[k];
            } else {
                r->nodes[f->node].ichild = k;
                r->nodes[f->node].child = &r->nodes[k];
            }
            f->last = k;
            r->nodes[f->node].len++;
        }
        size_t off = 0;
        switch (ch) {
        case '{':
        case '[':
            v->type = ch == '{' ? ACT__J_OBJECT : ACT__J_ARRAY;
            c->i++;
            if (depth >= r->max_depth)
                return bad(r, c->i - 1, "nesting too deep");
            if (depth == r->scap) {
                size_t ns = r->scap ? r->scap * 2 : 16;
                frame *st = realloc(r->stack, ns * sizeof *st);
                if (!st)
                    return fail(r, "out of memory");
                r->stack = st;
                r->scap = ns;
            }
            r->stack[depth++] = (frame){k, 0};
            if ((ch = ws(r, c)) < 0)
                return ch == -2 ? -1 : truncated(r, c->i, "in an object or array");
            if (ch == (v->type == ACT__J_OBJECT ? '}' : ']')) {
                c->i++;
                depth--;
                goto after;
            }
            if (v->type == ACT__J_ARRAY)
                continue;
            goto key;
        case '"':
            /* The type is set once s is: a refill inside moves only the
             * pointers that exist (nodes_to_offsets). */
            if (string(r, c, &off, &r->nodes[k].len) < 0)
                return -1;
            r->nodes[k].s = (const char *)c->b + off;
            r->nodes[k].type = ACT__J_STRING;
            goto after;
        case 't':
        case 'f':
        case 'n': {
            const char *lit = ch == 't' ? "true" : ch == 'f' ? "false" : "null";
            size_t ll = strlen(lit);
            int m = need(r, c, ll);
            if (m < 0)
                return -1;
            if (!m || memcmp(c->b + c->i, lit, ll) != 0)
                return m ? bad(r, c->i, "invalid literal")
                         : truncated(r, c->i, "in a literal");
            r->nodes[k].type = ch == 't' ? ACT__J_TRUE
                               : ch == 'f' ? ACT__J_FALSE : ACT__J_NULL;
            c->i += ll;
            goto after;
        }
        default:
            if (ch == '-' || (ch >= '0' && ch <= '9')) {
                if (number(r, c, &r->nodes[k], &off) < 0)
                    return -1;
                r->nodes[k].s = (const char *)c->b + off;
                r->nodes[k].type = ACT__J_NUMBER;
                goto after;
            }
            return bad(r, c->i, "expected a value");
        }
    key:
        /* At a member name (after '{' or ','). */
        if (c->b[c->i] != '"')
            return bad(r, c->i, "expected a member name (a string)");
        if (string(r, c, &koff, &klen) < 0)
            return -1;
        if ((ch = ws(r, c)) < 0)
            return ch == -2 ? -1 : truncated(r, c->i, "after a member name");
        if (ch != ':')
            return bad(r, c->i, "expected ':' after a member name");
        c->i++;
        has_key = 1;
        continue;
    after:
        for (;;) {
            if (!depth)
                return 0;
            const act__jv *top = &r->nodes[r->stack[depth - 1].node];
            int obj = top->type == ACT__J_OBJECT;
            if ((ch = ws(r, c)) < 0)
                return ch == -2 ? -1
                                : truncated(r, c->i, obj ? "in an object" : "in an array");
            if (ch == ',') {
                c->i++;
                if (obj) {
                    if ((ch = ws(r, c)) < 0)
                        return ch == -2 ? -1 : truncated(r, c->i, "in an object");
                    goto key;
                }
                break;
            }
            if (ch == (obj ? '}' : ']')) {
                c->i++;
                depth--;
                continue;
            }
            return bad(r, c->i, obj ? "expected ',' or '}' after an object member"
                                    : "expected ',' or ']' after an array element");
        }
    }
}

int act__rd_create(int fd, const act__rd_opts *opts, act__rd **out)
{
    *out = NULL;
    act__rd *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->fd = fd;
    r->cap = opts && opts->buffer_bytes ? opts->buffer_bytes : INIT_CAP;
    if (r->cap < 16)
        r->cap = 16;
    r->buf = malloc(r->cap + SLACK);
    if (!r->buf) {
        free(r);
        return -ENOMEM;
    }
    memset(r->buf, 0, SLACK);
    r->max_item = opts && opts->max_item_bytes ? opts->max_item_bytes
                                               : DEFAULT_MAX_ITEM;
    if (r->max_item < r->cap)
        r->max_item = r->cap;
    r->max_depth = opts && opts->max_depth ? opts->max_depth : DEFAULT_MAX_DEPTH;
    *out = r;
    return 0;
}

void act__rd_destroy(act__rd *r)
{
    if (!r)
        return;
#ifdef ACT_HAVE_ZLIB
    if (r->zinit)
        inflateEnd(&r->z);
#endif
    free(r->zin);
    free(r->buf);
    free(r->nodes);
    free(r->stack);
    free(r);
}

const char *act__rd_errmsg(const act__rd *r) { return r->msg; }
int act__rd_layout(const act__rd *r) { return r->layout; }
uint64_t act__rd_events(const act__rd *r) { return r->nev; }
uint64_t act__rd_offset(const act__rd *r) { return r->base + r->pos; }
uint64_t act__rd_bytes_read(const act__rd *r) { return r->raw_read; }
int act__rd_gzip(const act__rd *r) { return r->gz; }

int act__rd_next(act__rd *r, act__rd_item *it)
{
    if (r->failed)
        return -1;
    r->nn = 0; /* the last item's nodes are dead: refills skip them */
    for (;;) {
        r->beg = r->pos;
        cur c = {r->buf + r->beg, r->end - r->beg, 0};
        int ch;
        switch (r->state) {
        case S_DONE:
            return 0;
        case S_START:
            if ((ch = ws(r, &c)) < 0)
                return ch == -2 ? -1 : fail(r, "empty input: no JSON document");
            if (ch == '[' || ch == '{') {
                c.i++;
                r->top_array = ch == '[';
                r->state = ch == '[' ? S_EV_FIRST : S_KEY_FIRST;
                if (ch == '[') {
                    r->layout = ACT__RD_TOP_ARRAY;
                    r->in_events = 1;
                }
            } else {
                if (value(r, &c, 0, 0, 0) < 0)
                    return -1;
                r->state = S_END;
            }
            break;
        case S_KEY_FIRST:
        case S_KEY: {
            if ((ch = ws(r, &c)) < 0)
                return ch == -2 ? -1 : truncated(r, c.i, "in the top-level object");
            if (ch == '}' && r->state == S_KEY_FIRST) {
                c.i++;
                r->state = S_END;
                break;
            }
            if (ch != '"')
                return bad(r, c.i, "expected a member name (a string)");
            /* The member's key and value form one item from here. */
            r->beg += c.i;
            c.b += c.i;
            c.n -= c.i;
            c.i = 0;
            size_t koff = 0, klen = 0;
            if (string(r, &c, &koff, &klen) < 0)
                return -1;
            if ((ch = ws(r, &c)) < 0)
                return ch == -2 ? -1 : truncated(r, c.i, "after a member name");
            if (ch != ':')
                return bad(r, c.i, "expected ':' after a member name");
            c.i++;
            if ((ch = ws(r, &c)) < 0)
                return ch == -2 ? -1 : truncated(r, c.i, "where a value was expected");
            if (ch == '[' && klen == 11 &&
                memcmp(c.b + koff, "traceEvents", 11) == 0) {
                c.i++;
                r->layout = ACT__RD_TOP_OBJECT;
                r->in_events = 1;
                r->state = S_EV_FIRST;
                break;
            }
            if (value(r, &c, 1, koff, klen) < 0)
                return -1;
            r->pos = r->beg + c.i;
            r->state = S_TOP_AFTER;
            it->kind = ACT__RD_MEMBER;
            it->index = 0;
            it->key = r->nodes[0].key;
            it->v = &r->nodes[0];
            return ACT__RD_MEMBER;
        }
        case S_TOP_AFTER:
            if ((ch = ws(r, &c)) < 0)
                return ch == -2 ? -1 : truncated(r, c.i, "in the top-level object");
            if (ch == ',') {
                c.i++;
                r->state = S_KEY;
            } else if (ch == '}') {
                c.i++;
                r->state = S_END;
            } else {
                return bad(r, c.i, "expected ',' or '}' after a top-level member");
            }
            break;
        case S_EV_FIRST:
        case S_EV: {
            if ((ch = ws(r, &c)) < 0)
                return ch == -2 ? -1 : truncated(r, c.i, "in the event array");
            if (ch == ']' && r->state == S_EV_FIRST) {
                c.i++;
                r->in_events = 0;
                r->state = r->top_array ? S_END : S_TOP_AFTER;
                break;
            }
            r->beg += c.i;
            c.b += c.i;
            c.n -= c.i;
            c.i = 0;
            if (value(r, &c, 0, 0, 0) < 0)
                return -1;
            r->pos = r->beg + c.i;
            r->state = S_EV_AFTER;
            it->kind = ACT__RD_EVENT;
            it->index = r->nev++;
            it->key = NULL;
            it->v = &r->nodes[0];
            return ACT__RD_EVENT;
        }
        case S_EV_AFTER:
            if ((ch = ws(r, &c)) < 0)
                return ch == -2 ? -1 : truncated(r, c.i, "in the event array");
            if (ch == ',') {
                c.i++;
                r->state = S_EV;
            } else if (ch == ']') {
                c.i++;
                r->in_events = 0;
                r->state = r->top_array ? S_END : S_TOP_AFTER;
            } else {
                return bad(r, c.i, "expected ',' or ']' after an event");
            }
            break;
        case S_END:
            if ((ch = ws(r, &c)) == -2)
                return -1;
            if (ch >= 0)
                return bad(r, c.i, "unexpected data after the JSON document");
            r->pos = r->beg + c.i;
            if (!r->layout)
                r->layout = ACT__RD_TOP_NO_EVENTS;
            r->state = S_DONE;
            return 0;
        }
        r->pos = r->beg + c.i;
    }
}

/* ---- values ----------------------------------------------------------------------- */

const act__jv *act__jv_get(const act__jv *o, const char *key)
{
    if (!o || o->type != ACT__J_OBJECT)
        return NULL;
    const act__jv *hit = NULL;
    size_t kl = strlen(key);
    for (const act__jv *v = o->child; v; v = v->next)
        if (v->klen == kl && memcmp(v->key, key, kl) == 0)
            hit = v;
    return hit;
}

int act__jv_is(const act__jv *v, const char *s)
{
    return v && v->type == ACT__J_STRING && strlen(s) == v->len &&
           memcmp(v->s, s, v->len) == 0;
}

/* Exact powers of ten: every one up to 1e22 is a double. */
static const double pow10_exact[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

int act__jv_num(const act__jv *v, double *out)
{
    if (!v || v->type != ACT__J_NUMBER)
        return 0;
    if (v->mfast) {
        int neg = v->s[0] == '-';
        if (v->integer) { /* as the int64 path below: "-0" is +0.0 */
            int64_t x = neg ? -(int64_t)v->mant : (int64_t)v->mant;
            *out = (double)x;
            return 1;
        }
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
        /* Both operands are exact (mant < 2^53, 10^fdig <= 10^22), so the
         * one correctly rounded division is the correctly rounded value
         * of the text: what strtod returns, bit for bit. */
        if (v->mant <= (UINT64_C(1) << 53)) {
            double d = (double)v->mant / pow10_exact[v->fdig];
            *out = neg ? -d : d;
            return 1;
        }
#endif
    }
    if (v->integer && v->len <= 16) {
        int64_t x;
        act__jv_i64(v, &x);
        *out = (double)x;
        return 1;
    }
    /* The text is followed by a byte that ends any number, so strtod stops
     * exactly where the validated number ends; no copy needed. */
    *out = strtod(v->s, NULL);
    return 1;
}

int act__jv_i64(const act__jv *v, int64_t *out)
{
    if (!v || v->type != ACT__J_NUMBER || !v->integer)
        return 0;
    if (v->mfast) { /* at most 18 digits: in range */
        *out = v->s[0] == '-' ? -(int64_t)v->mant : (int64_t)v->mant;
        return 1;
    }
    const char *p = v->s, *e = v->s + v->len;
    int neg = *p == '-';
    p += neg;
    uint64_t x = 0;
    if (e - p <= 18) { /* below 10^18: no overflow, no check per digit */
        for (; p < e; p++)
            x = x * 10 + (unsigned)(*p - '0');
    }
    for (; p < e; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (x > (UINT64_MAX - d) / 10)
            return 0;
        x = x * 10 + d;
    }
    if (neg ? x > (uint64_t)INT64_MAX + 1 : x > (uint64_t)INT64_MAX)
        return 0;
    *out = neg ? (int64_t)(0 - x) : (int64_t)x;
    return 1;
}

int act__jv_us_ns(const act__jv *v, int64_t *out)
{
    if (!v || v->type != ACT__J_NUMBER)
        return 0;
    if (v->mfast && v->fdig <= 3 && v->mant < UINT64_C(1000000000000000)) {
        /* The text's value in ns exactly; beyond 9.2e12 us (integer part
         * above 9200000000000) it is out of range, as below. */
        static const uint64_t scale[4] = {1000, 100, 10, 1};
        uint64_t ns = v->mant * scale[v->fdig];
        if (ns > UINT64_C(9200000000000999))
            return 0;
        *out = v->s[0] == '-' ? -(int64_t)ns : (int64_t)ns;
        return 1;
    }
    const char *p = v->s, *e = v->s + v->len;
    int neg = *p == '-';
    p += neg;
    uint64_t ip = 0;
    int nd = 0;
    while (p < e && *p >= '0' && *p <= '9') {
        if (++nd > 13) /* beyond 9.2e12 us, or worth the slow path */
            goto slow;
        ip = ip * 10 + (uint64_t)(*p++ - '0');
    }
    uint64_t frac = 0;
    int fd = 0, round_up = 0;
    if (p < e && *p == '.') {
        p++;
        while (p < e && *p >= '0' && *p <= '9') {
            if (fd < 3)
                frac = frac * 10 + (uint64_t)(*p - '0');
            else if (fd == 3)
                round_up = *p >= '5';
            fd++;
            p++;
        }
    }
    if (p != e)
        goto slow; /* an exponent */
    while (fd < 3) {
        frac *= 10;
        fd++;
    }
    if (ip > 9200000000000ull)
        return 0;
    int64_t ns = (int64_t)(ip * 1000 + frac + (uint64_t)round_up);
    *out = neg ? -ns : ns;
    return 1;
slow: {
    double d;
    act__jv_num(v, &d);
    if (!(d <= 9.2e12 && d >= -9.2e12))
        return 0;
    double x = d * 1000.0;
    *out = (int64_t)(x < 0 ? x - 0.5 : x + 0.5);
    return 1;
}
}

/* ---- copies ------------------------------------------------------------------------ */

static void measure(const act__jv *v, size_t *nodes, size_t *bytes, int top)
{
    for (; v; v = top ? NULL : v->next) {
        (*nodes)++;
        if (v->key)
            *bytes += v->klen + 1;
        if (v->type == ACT__J_STRING || v->type == ACT__J_NUMBER)
            *bytes += v->len + 1;
        if (v->child)
            measure(v->child, nodes, bytes, 0);
        if (top)
            break;
    }
}

static act__jv *copy(const act__jv *v, act__jv *nodes, size_t *nn, char **sp)
{
    act__jv *d = &nodes[(*nn)++];
    *d = *v;
    d->next = NULL;
    d->child = NULL;
    if (v->key) {
        memcpy(*sp, v->key, v->klen);
        (*sp)[v->klen] = '\0';
        d->key = *sp;
        *sp += v->klen + 1;
    }
    if (v->type == ACT__J_STRING || v->type == ACT__J_NUMBER) {
        memcpy(*sp, v->s, v->len);
        (*sp)[v->len] = '\0';
        d->s = *sp;
        *sp += v->len + 1;
    }
    act__jv *prev = NULL;
    for (const act__jv *ch = v->child; ch; ch = ch->next) {
        act__jv *cd = copy(ch, nodes, nn, sp);
        if (prev)
            prev->next = cd;
        else
            d->child = cd;
        prev = cd;
    }
    return d;
}

act__jv *act__jv_dup(const act__jv *v)
{
    if (!v)
        return NULL;
    size_t nodes = 0, bytes = 0;
    measure(v, &nodes, &bytes, 1);
    act__jv *out = malloc(nodes * sizeof *out + bytes + 1);
    if (!out)
        return NULL;
    size_t nn = 0;
    char *sp = (char *)(out + nodes);
    copy(v, out, &nn, &sp);
    return out;
}
