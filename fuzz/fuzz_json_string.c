/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for JSON string escaping (src/writer/json_out.h). Any input
 * bytes are escaped one-shot (act__json_str), piecewise at input-chosen
 * limits (act__json_escape_units) and through a memory sink
 * (act__out_str); all three must agree byte for byte. The output is then
 * checked by a small decoder written here: it must be a quoted JSON string
 * of well-formed UTF-8 with no raw control characters, and when the input
 * is well-formed UTF-8 it must decode back to exactly the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writer/json_out.h"

#define FAIL(msg)                                                             \
    do {                                                                      \
        fprintf(stderr, "fuzz_json_string: %s\n", msg);                       \
        abort();                                                              \
    } while (0)

/* Length of the well-formed UTF-8 sequence at s (n bytes left), or 0.
 * Decodes the code point and checks its range, independently of the
 * table-driven validator under test. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    size_t len;
    uint32_t cp;
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xE0) == 0xC0)
        len = 2, cp = s[0] & 0x1Fu;
    else if ((s[0] & 0xF0) == 0xE0)
        len = 3, cp = s[0] & 0x0Fu;
    else if ((s[0] & 0xF8) == 0xF0)
        len = 4, cp = s[0] & 0x07u;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[k] & 0x3Fu);
    }
    if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

static int utf8_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(s + i, n - i);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decode the quoted JSON string [s, s+n) into out (capacity >= n);
 * returns the decoded length. Aborts on anything RFC 8259 forbids or that
 * our escaper must never write (raw controls, ill-formed UTF-8, \u
 * escapes of anything but control characters). */
static size_t json_decode(const unsigned char *s, size_t n, unsigned char *out)
{
    if (n < 2 || s[0] != '"' || s[n - 1] != '"')
        FAIL("output is not quoted");
    if (!utf8_ok(s, n))
        FAIL("output is not well-formed UTF-8");
    size_t o = 0;
    for (size_t i = 1; i < n - 1;) {
        unsigned char c = s[i];
        if (c < 0x20)
            FAIL("raw control character in output");
        if (c == '"')
            FAIL("unescaped quote in output");
        if (c != '\\') {
            out[o++] = c;
            i++;
            continue;
        }
        if (i + 1 >= n - 1)
            FAIL("dangling backslash");
        unsigned char e = s[i + 1];
        i += 2;
        switch (e) {
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case '/': out[o++] = '/'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            if (i + 4 > n - 1)
                FAIL("short \\u escape");
            int v = 0;
            for (int k = 0; k < 4; k++) {
                int h = hexval(s[i + (size_t)k]);
                if (h < 0)
                    FAIL("bad hex in \\u escape");
                v = v << 4 | h;
            }
            if (v >= 0x20)
                FAIL("\\u escape of a non-control character");
            out[o++] = (unsigned char)v;
            i += 4;
            break;
        }
        default:
            FAIL("unknown escape");
        }
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The first byte seeds the piece sizes; all bytes are escaped. */
    unsigned seed = size ? data[0] : 0;
    const char *s = (const char *)data;

    size_t cap = ACT__JSON_STR_MAX(size);
    char *one = malloc(cap);
    if (!one)
        return 0;
    char *end = act__json_str(one, s, size);
    size_t one_n = (size_t)(end - one);
    if (one_n > cap)
        FAIL("act__json_str wrote past its bound");

    /* Piecewise with small input-dependent limits. */
    char *pc = malloc(cap);
    char *p = pc;
    *p++ = '"';
    size_t i = 0;
    unsigned x = seed * 2654435761u + 1;
    while (i < size) {
        x = x * 1103515245u + 12345u;
        size_t lim = 1 + (x >> 16) % 13;
        if (lim > size - i)
            lim = size - i;
        size_t used;
        p = act__json_escape_units(p, s + i, lim, size - i, &used);
        if (used < lim || used > lim + 3)
            FAIL("escape_units stopped at a wrong position");
        i += used;
    }
    *p++ = '"';
    if ((size_t)(p - pc) != one_n || memcmp(pc, one, one_n) != 0)
        FAIL("piecewise escaping differs from one-shot");
    free(pc);

    /* Through a memory sink. */
    act__out o;
    if (act__out_open_mem(&o, 0) == 0) {
        act__out_str(&o, s, size);
        if (act__out_finish(&o) != 0)
            FAIL("memory sink failed");
        size_t got_n;
        char *got = act__out_mem_take(&o, &got_n);
        if (!got || got_n != one_n || memcmp(got, one, one_n) != 0)
            FAIL("act__out_str differs from act__json_str");
        free(got);
        act__out_abort(&o);
    }

    unsigned char *dec = malloc(one_n + 1);
    size_t dec_n = json_decode((const unsigned char *)one, one_n, dec);
    int valid = utf8_ok(data, size);
    if (valid != act__utf8_valid(s, size))
        FAIL("act__utf8_valid disagrees with the reference decoder");
    if (valid && (dec_n != size || memcmp(dec, data, size) != 0))
        FAIL("valid UTF-8 does not round-trip");
    free(dec);
    free(one);
    return 0;
}
