/* SPDX-License-Identifier: MIT */
/*
 * JSON formatting primitives of the trace writers: integers through a
 * two-digit table, nanosecond timestamps as microseconds with three
 * decimals from integer maths, round-tripping doubles, and RFC 8259 string
 * escaping that turns any bytes into well-formed UTF-8 (see json_out.h).
 *
 * The string escaper copies runs of plain ASCII eight bytes at a time
 * (a SWAR test finds a block with nothing to escape) and looks every other
 * byte up in a 256-entry class table.
 */
#include "writer/json_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char digits2[201] =
    "00010203040506070809"
    "10111213141516171819"
    "20212223242526272829"
    "30313233343536373839"
    "40414243444546474849"
    "50515253545556575859"
    "60616263646566676869"
    "70717273747576777879"
    "80818283848586878889"
    "90919293949596979899";

static unsigned count_digits(uint64_t v)
{
    unsigned n = 1;
    for (;;) {
        if (v < 10)
            return n;
        if (v < 100)
            return n + 1;
        if (v < 1000)
            return n + 2;
        if (v < 10000)
            return n + 3;
        v /= 10000;
        n += 4;
    }
}

char *act__fmt_u64(char *p, uint64_t v)
{
    char *end = p + count_digits(v);
    char *q = end;
    while (v >= 100) {
        unsigned i = (unsigned)(v % 100) * 2;
        v /= 100;
        q -= 2;
        memcpy(q, digits2 + i, 2);
    }
    if (v >= 10) {
        q -= 2;
        memcpy(q, digits2 + v * 2, 2);
    } else {
        *--q = (char)('0' + v);
    }
    return end;
}

char *act__fmt_i64(char *p, int64_t v)
{
    uint64_t m = (uint64_t)v;
    if (v < 0) {
        *p++ = '-';
        m = (uint64_t)0 - m; /* well defined for INT64_MIN too */
    }
    return act__fmt_u64(p, m);
}

char *act__fmt_ts_us(char *p, int64_t ns)
{
    uint64_t m = (uint64_t)ns;
    if (ns < 0) {
        *p++ = '-';
        m = (uint64_t)0 - m;
    }
    p = act__fmt_u64(p, m / 1000);
    unsigned f = (unsigned)(m % 1000);
    p[0] = '.';
    p[1] = (char)('0' + f / 100);
    memcpy(p + 2, digits2 + (f % 100) * 2, 2);
    return p + 4;
}

/* snprintf writes the locale's decimal point (which may be several bytes,
 * e.g. U+066B); replace whatever is not part of a C-locale %g number by a
 * single '.'. %g never groups thousands (that needs the ' flag). */
static size_t normalize_number(char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e') {
            s[o++] = c;
            i++;
            continue;
        }
        s[o++] = '.';
        while (i < n && !((s[i] >= '0' && s[i] <= '9') || s[i] == 'e'))
            i++;
    }
    return o;
}

char *act__fmt_double(char *p, double v)
{
    if (!isfinite(v)) {
        memcpy(p, "null", 4);
        return p + 4;
    }
    if (v > -1e15 && v < 1e15) {
        int64_t i = (int64_t)v;
        if ((double)i == v && !(i == 0 && signbit(v)))
            return act__fmt_i64(p, i);
    }
    char tmp[48];
    int len = 0;
    for (int prec = 15; prec <= 17; prec++) {
        len = snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (len <= 0 || (size_t)len >= sizeof tmp) {
            /* Cannot happen for a finite double; stay valid JSON. */
            memcpy(p, "null", 4);
            return p + 4;
        }
        /* strtod reads the same locale snprintf wrote, so the check is
         * consistent; %.17g always round-trips. */
        if (prec == 17 || strtod(tmp, NULL) == v)
            break;
    }
    size_t n = normalize_number(tmp, (size_t)len);
    memcpy(p, tmp, n);
    return p + n;
}

/* ---- strings ---------------------------------------------------------- */

/* Byte classes: 0 copies verbatim; 'u' is written as \u00XX; another ASCII
 * letter or '"' '\\' is written after a backslash; U (>= 0x80) starts a
 * UTF-8 sequence to validate. */
#define U 1
static const unsigned char esc_class[256] = {
    /* 0x00 */ 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    /* 0x08 */ 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
    /* 0x10 */ 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    /* 0x18 */ 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    /* 0x20 */ 0, 0, '"', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 0x30 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 0x40 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 0x50 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '\\', 0, 0, 0,
    /* 0x60 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 0x70 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 0x80 */ U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U,
    /* 0x90 */ U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U,
    /* 0xa0 */ U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U,
    /* 0xb0 */ U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U,
    /* 0xc0 */ U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U,
    /* 0xd0 */ U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U,
    /* 0xe0 */ U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U,
    /* 0xf0 */ U, U, U, U, U, U, U, U, U, U, U, U, U, U, U, U,
};
#undef U

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* Nonzero when some byte of x is < 0x20, '"', '\\' or >= 0x80. Exact for
 * "any byte" (the usual borrow caveat only affects which byte). */
static inline uint64_t block_special(uint64_t x)
{
    uint64_t q = x ^ (ONES * '"');
    uint64_t b = x ^ (ONES * '\\');
    uint64_t lt = (x - ONES * 0x20) & ~x;
    uint64_t zq = (q - ONES) & ~q;
    uint64_t zb = (b - ONES) & ~b;
    return (lt | zq | zb | x) & HIGHS;
}

/* One UTF-8 unit at s (s[0] >= 0x80), @p avail bytes readable. Returns the
 * length of a well-formed sequence (2..4), or minus the length of the
 * maximal ill-formed subpart (1..3), per Unicode table 3-7. */
static inline int utf8_unit(const unsigned char *s, size_t avail)
{
    unsigned b = s[0];
    unsigned lo = 0x80, hi = 0xBF;
    int len;
    if (b < 0xC2)
        return -1; /* continuation byte, or overlong lead C0/C1 */
    if (b <= 0xDF) {
        len = 2;
    } else if (b <= 0xEF) {
        len = 3;
        if (b == 0xE0)
            lo = 0xA0; /* overlong */
        else if (b == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (b <= 0xF4) {
        len = 4;
        if (b == 0xF0)
            lo = 0x90; /* overlong */
        else if (b == 0xF4)
            hi = 0x8F; /* > U+10FFFF */
    } else {
        return -1; /* F5..FF never appear */
    }
    if (avail < 2 || s[1] < lo || s[1] > hi)
        return -1;
    for (int k = 2; k < len; k++)
        if ((size_t)k >= avail || (s[k] & 0xC0) != 0x80)
            return -k;
    return len;
}

/* The non-ASCII unit at s[*i] (of n bytes): copied when it is valid UTF-8,
 * else U+FFFD for the bytes utf8_unit says to skip; advances *i. */
static inline char *utf8_copy(char *p, const unsigned char *s, size_t n, size_t *i)
{
    int r = utf8_unit(s + *i, n - *i);
    if (r > 0) {
        memcpy(p, s + *i, (size_t)r);
        *i += (size_t)r;
        return p + r;
    }
    memcpy(p, "\xEF\xBF\xBD", 3);
    *i += (size_t)-r;
    return p + 3;
}

/* Escape the units of s that start before @p lim; a unit may extend up to
 * @p n (lim <= n). Writes at most 6 bytes per unit, so at most 6*lim.
 * *used gets the input position reached (lim..lim+3, or n). Because the
 * decoder keeps no state between units, escaping [0,n) in several calls
 * gives the same bytes as one call. */
static char *escape_units(char *p, const unsigned char *s, size_t lim,
                          size_t n, size_t *used)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    while (i < lim) {
        while (lim - i >= 8) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            if (block_special(x))
                break;
            memcpy(p, &x, 8);
            p += 8;
            i += 8;
        }
        while (i < lim && esc_class[s[i]] == 0)
            *p++ = (char)s[i++];
        if (i >= lim)
            break;
        unsigned c = s[i];
        unsigned k = esc_class[c];
        if (k == 'u') {
            memcpy(p, "\\u00", 4);
            p[4] = hex[c >> 4];
            p[5] = hex[c & 15];
            p += 6;
            i++;
        } else if (k != 1) {
            p[0] = '\\';
            p[1] = (char)k;
            p += 2;
            i++;
        } else {
            p = utf8_copy(p, s, n, &i);
        }
    }
    *used = i;
    return p;
}

char *act__json_str_body(char *p, const char *s, size_t n)
{
    size_t used;
    if (n == 0)
        return p;
    return escape_units(p, (const unsigned char *)s, n, n, &used);
}

char *act__json_str(char *p, const char *s, size_t n)
{
    *p++ = '"';
    p = act__json_str_body(p, s, n);
    *p++ = '"';
    return p;
}

size_t act__json_str_len_bound(size_t n)
{
    if (n > (SIZE_MAX - 2) / 6)
        return SIZE_MAX;
    return 6 * n + 2;
}

size_t act__utf8_valid_prefix(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        while (n - i >= 8) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            if (x & HIGHS)
                break;
            i += 8;
        }
        while (i < n && s[i] < 0x80)
            i++;
        if (i >= n)
            break;
        int r = utf8_unit(s + i, n - i);
        if (r < 0)
            return i;
        i += (size_t)r;
    }
    return n;
}

char *act__json_escape_units(char *p, const char *s, size_t lim, size_t n,
                             size_t *used)
{
    return escape_units(p, (const unsigned char *)s, lim, n, used);
}

char *act__utf8_repair(char *p, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        if (s[i] < 0x80) {
            *p++ = (char)s[i++];
            continue;
        }
        p = utf8_copy(p, s, n, &i);
    }
    return p;
}

/* ---- JSON validation -------------------------------------------------------- */

static size_t json_ws(const unsigned char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

static int hex4(const unsigned char *s, size_t n, size_t i, unsigned *out)
{
    if (n - i < 4)
        return 0;
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        unsigned c = s[i + k], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (c | 0x20) - 'a' + 10;
        else
            return 0;
        v = v << 4 | d;
    }
    *out = v;
    return 1;
}

/* A string at s[i] == '"': the position past its closing quote, or 0. */
static size_t json_string(const unsigned char *s, size_t n, size_t i)
{
    for (i++; i < n;) {
        unsigned c = s[i];
        if (c == '"')
            return i + 1;
        if (c < 0x20)
            return 0;
        if (c >= 0x80) {
            int r = utf8_unit(s + i, n - i);
            if (r < 0)
                return 0;
            i += (size_t)r;
            continue;
        }
        if (c != '\\') {
            i++;
            continue;
        }
        if (++i >= n)
            return 0;
        c = s[i++];
        if (c == 'u') {
            unsigned u, lo;
            if (!hex4(s, n, i, &u))
                return 0;
            i += 4;
            if (u >= 0xDC00 && u <= 0xDFFF)
                return 0; /* a low half alone */
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (n - i < 6 || s[i] != '\\' || s[i + 1] != 'u' || !hex4(s, n, i + 2, &lo) ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return 0;
                i += 6;
            }
        } else if (!strchr("\"\\/bfnrt", (int)c) || c == 0) {
            return 0;
        }
    }
    return 0;
}

/* A number at s[i]: the position past it, or 0. */
static size_t json_number(const unsigned char *s, size_t n, size_t i)
{
    if (i < n && s[i] == '-')
        i++;
    if (i >= n)
        return 0;
    if (s[i] == '0') {
        i++;
    } else if (s[i] >= '1' && s[i] <= '9') {
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    } else {
        return 0;
    }
    if (i < n && s[i] == '.') {
        size_t d = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return 0;
    }
    return i;
}

int act__json_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    if (!s)
        return 0;
    /* in_obj: bit d set when level d is an object. */
    uint64_t in_obj = 0;
    int depth = 0;
    size_t i = json_ws(s, n, 0);
    for (;;) {
        /* A value at i. */
        if (i >= n)
            return 0;
        unsigned c = s[i];
        if (c == '[' || c == '{') {
            if (depth == ACT__JSON_DEPTH_MAX)
                return 0;
            in_obj = (in_obj & ~((uint64_t)1 << depth)) | (uint64_t)(c == '{') << depth;
            depth++;
            i = json_ws(s, n, i + 1);
            if (i < n && s[i] == (c == '[' ? ']' : '}')) {
                depth--;
                i++;
                goto after_value;
            }
            if (c == '{')
                goto member;
            continue;
        }
        if (c == '"') {
            i = json_string(s, n, i);
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            i = json_number(s, n, i);
        } else if (n - i >= 4 && memcmp(s + i, "true", 4) == 0) {
            i += 4;
        } else if (n - i >= 5 && memcmp(s + i, "false", 5) == 0) {
            i += 5;
        } else if (n - i >= 4 && memcmp(s + i, "null", 4) == 0) {
            i += 4;
        } else {
            return 0;
        }
        if (!i)
            return 0;
    after_value:
        i = json_ws(s, n, i);
        if (!depth)
            return i == n;
        if (i >= n)
            return 0;
        int obj = (int)(in_obj >> (depth - 1) & 1);
        if (s[i] == ',') {
            i = json_ws(s, n, i + 1);
            if (obj)
                goto member;
            continue;
        }
        if (s[i] != (obj ? '}' : ']'))
            return 0;
        depth--;
        i++;
        goto after_value;
    member:
        /* A member's key and colon at i; its value follows. */
        if (i >= n || s[i] != '"' || !(i = json_string(s, n, i)))
            return 0;
        i = json_ws(s, n, i);
        if (i >= n || s[i] != ':')
            return 0;
        i = json_ws(s, n, i + 1);
    }
}
