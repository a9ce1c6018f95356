/* SPDX-License-Identifier: MIT */
/*
 * JsonString: RFC 8259 string escaping of any bytes (json_out.h).
 *
 * The expected output comes from a reference escaper written from the
 * definitions rather than from the implementation's tables: a sequence is
 * well-formed UTF-8 when decoding and re-encoding its code point gives the
 * same bytes (a scalar value, no overlong form), and a maximal ill-formed
 * subpart is the longest prefix of some well-formed sequence, found in
 * bitmaps built by encoding every scalar value. The test compares the two
 * on every single byte, every combination of two and three interesting
 * bytes, random strings, known ill-formed sequences with hand-written
 * results, and every scalar value; checks one-shot against piecewise
 * escaping (act__json_escape_units, act__out_str); and parses outputs with
 * jansson, which must give back the input for valid UTF-8 and the
 * U+FFFD-substituted input otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ACT_HAVE_JANSSON
#include <jansson.h>
#endif

#include "json_check.h"
#include "writer/json_out.h"

/* ---- reference ------------------------------------------------------- */

static unsigned char lead_ok[256];    /* first byte of a multi-byte seq */
static unsigned char *pfx2, *pfx3;    /* proper prefixes of 2 and 3 bytes */

static size_t encode(uint32_t cp, unsigned char *o)
{
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 63));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 63));
        o[2] = (unsigned char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | cp >> 18);
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 63));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 63));
    o[3] = (unsigned char)(0x80 | (cp & 63));
    return 4;
}

static int is_scalar(uint32_t cp)
{
    return cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

static void build_reference(void)
{
    pfx2 = calloc(1, 65536 / 8);
    pfx3 = calloc(1, (1u << 24) / 8);
    for (uint32_t cp = 0x80; cp <= 0x10FFFF; cp++) {
        if (!is_scalar(cp))
            continue;
        unsigned char b[4];
        size_t n = encode(cp, b);
        lead_ok[b[0]] = 1;
        if (n >= 3) {
            unsigned k = (unsigned)b[0] << 8 | b[1];
            pfx2[k >> 3] |= (unsigned char)(1u << (k & 7));
        }
        if (n == 4) {
            uint32_t k = (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
            pfx3[k >> 3] |= (unsigned char)(1u << (k & 7));
        }
    }
}

/* s[0..k) is a complete well-formed sequence of k >= 2 bytes. */
static int ref_full(const unsigned char *s, size_t k)
{
    uint32_t cp;
    if (k == 2)
        cp = (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
    else if (k == 3)
        cp = (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 |
             (s[2] & 0x3F);
    else
        cp = (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
             (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
    if (!is_scalar(cp))
        return 0;
    unsigned char b[4];
    return encode(cp, b) == k && memcmp(b, s, k) == 0;
}

/* s[0..k) is a proper prefix of some well-formed multi-byte sequence. */
static int ref_prefix(const unsigned char *s, size_t k)
{
    if (k == 1)
        return lead_ok[s[0]];
    if (k == 2) {
        unsigned x = (unsigned)s[0] << 8 | s[1];
        return pfx2[x >> 3] >> (x & 7) & 1;
    }
    uint32_t x = (uint32_t)s[0] << 16 | (uint32_t)s[1] << 8 | s[2];
    return pfx3[x >> 3] >> (x & 7) & 1;
}

/* Decode [s, s+n) into units: *full gets the length of a well-formed
 * sequence starting at s (0 if none), the return value the number of input
 * bytes the unit takes (a maximal subpart when not full). */
static size_t ref_unit(const unsigned char *s, size_t n, int *full)
{
    if (s[0] < 0x80) {
        *full = 1;
        return 1;
    }
    for (size_t k = 4; k >= 2; k--)
        if (k <= n && ref_full(s, k)) {
            *full = 1;
            return k;
        }
    *full = 0;
    for (size_t k = 3; k >= 1; k--)
        if (k <= n && ref_prefix(s, k))
            return k;
    return 1;
}

/* Reference escaper: returns the output length (quotes included). */
static size_t ref_escape(const unsigned char *s, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    *p++ = '"';
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c < 0x80) {
            const char *e = NULL;
            switch (c) {
            case '"': e = "\\\""; break;
            case '\\': e = "\\\\"; break;
            case '\b': e = "\\b"; break;
            case '\t': e = "\\t"; break;
            case '\n': e = "\\n"; break;
            case '\f': e = "\\f"; break;
            case '\r': e = "\\r"; break;
            default: break;
            }
            if (e) {
                memcpy(p, e, 2);
                p += 2;
            } else if (c < 0x20) {
                p += sprintf(p, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
            } else {
                *p++ = (char)c;
            }
            i++;
            continue;
        }
        int full;
        size_t k = ref_unit(s + i, n - i, &full);
        if (full) {
            memcpy(p, s + i, k);
            p += k;
        } else {
            memcpy(p, "\xEF\xBF\xBD", 3);
            p += 3;
        }
        i += k;
    }
    *p++ = '"';
    return (size_t)(p - out);
}

#ifdef ACT_HAVE_JANSSON
/* The string a JSON parser must give back: ill-formed subparts replaced. */
static size_t ref_decoded(const unsigned char *s, size_t n, char *out)
{
    char *p = out;
    for (size_t i = 0; i < n;) {
        int full;
        size_t k = ref_unit(s + i, n - i, &full);
        if (full)
            memcpy(p, s + i, k), p += k;
        else
            memcpy(p, "\xEF\xBF\xBD", 3), p += 3;
        i += k;
    }
    return (size_t)(p - out);
}
#endif

static size_t ref_valid_prefix(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        int full;
        size_t k = ref_unit(s + i, n - i, &full);
        if (!full)
            return i;
        i += k;
    }
    return n;
}

/* ---- helpers --------------------------------------------------------- */

/* act__json_str into an exactly sized heap buffer (ASan sees overruns). */
static char *escape(const void *s, size_t n, size_t *outlen)
{
    char *buf = malloc(ACT__JSON_STR_MAX(n));
    char *e = act__json_str(buf, s, n);
    *outlen = (size_t)(e - buf);
    CHECK(*outlen <= ACT__JSON_STR_MAX(n));
    return buf;
}

#ifdef ACT_HAVE_JANSSON
/* Parse ["<escaped>"] and compare the string with @p want. */
static void check_parses(const char *esc, size_t elen, const char *want,
                         size_t wlen)
{
    char *doc = malloc(elen + 3);
    doc[0] = '[';
    memcpy(doc + 1, esc, elen);
    doc[elen + 1] = ']';
    json_error_t jerr;
    json_t *j = json_loadb(doc, elen + 2, JSON_ALLOW_NUL, &jerr);
    if (!j) {
        fprintf(stderr, "jansson: %s (line %d col %d)\n", jerr.text,
                jerr.line, jerr.column);
        CHECK(!"escaped string parses");
        check_dump("doc", doc, elen + 2);
    } else {
        json_t *s = json_array_get(j, 0);
        CHECK(json_is_string(s));
        if (json_is_string(s))
            CHECK_MEM(json_string_value(s), json_string_length(s), want, wlen);
        json_decref(j);
    }
    free(doc);
}
#endif

/* Escape, compare with the reference and (with jansson) parse back. */
static void check_escape(const void *s, size_t n)
{
    size_t got_n;
    char *got = escape(s, n, &got_n);
    char *want = malloc(6 * n + 2);
    size_t want_n = ref_escape(s, n, want);
    CHECK_MEM(got, got_n, want, want_n);
    /* The body variant is the same without quotes. */
    char *body = malloc(ACT__JSON_BODY_MAX(n) + 1);
    char *be = act__json_str_body(body, s, n);
    CHECK_MEM(body, (size_t)(be - body), got + 1, got_n - 2);
    CHECK_INT(act__utf8_valid_prefix(s, n), ref_valid_prefix(s, n));
#ifdef ACT_HAVE_JANSSON
    char *dec = malloc(3 * n + 1);
    size_t dec_n = ref_decoded(s, n, dec);
    check_parses(got, got_n, dec, dec_n);
    free(dec);
#endif
    free(body);
    free(want);
    free(got);
}

static void check_exact(const char *in, size_t n, const char *want)
{
    size_t got_n;
    char *got = escape(in, n, &got_n);
    CHECK_MEM(got, got_n, want, strlen(want));
    free(got);
    check_escape(in, n);
}
#define EXACT(in, want) check_exact((in), sizeof(in) - 1, (want))

/* ---- tests ----------------------------------------------------------- */

static void test_single_bytes(void)
{
    for (unsigned b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        check_escape(&c, 1);
    }
    EXACT("\x00", "\"\\u0000\"");
    EXACT("\x01", "\"\\u0001\"");
    EXACT("\x1f", "\"\\u001f\"");
    EXACT("\b\t\n\f\r", "\"\\b\\t\\n\\f\\r\"");
    EXACT("\x0b", "\"\\u000b\"");
    EXACT("\"", "\"\\\"\"");
    EXACT("\\", "\"\\\\\"");
    EXACT("/", "\"/\"");
    EXACT("\x7f", "\"\x7f\"");
    EXACT("\x80", "\"\xEF\xBF\xBD\"");
    EXACT("\xff", "\"\xEF\xBF\xBD\"");
    EXACT("", "\"\"");
}

static const unsigned char interesting[] = {
    0x00, 0x09, 0x1f, 0x20, '"', '\\', 'a', 0x7f, 0x80, 0x8f, 0x90, 0x9f,
    0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef,
    0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
#define NINT (sizeof interesting)

static void test_combinations(void)
{
    unsigned char s[3];
    for (size_t a = 0; a < NINT; a++)
        for (size_t b = 0; b < NINT; b++) {
            s[0] = interesting[a];
            s[1] = interesting[b];
            check_escape(s, 2);
            for (size_t c = 0; c < NINT; c++) {
                s[2] = interesting[c];
                check_escape(s, 3);
            }
        }
}

static void test_known_invalid(void)
{
#define R "\xEF\xBF\xBD"
    /* Unicode 15 table 3-8 (maximal subparts). */
    EXACT("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64",
          "\"a" R R R "b" R "c" R R "d\"");
    EXACT("\xC0\xAF", "\"" R R "\"");          /* overlong '/' */
    EXACT("\xC1\xBF", "\"" R R "\"");          /* overlong */
    EXACT("\xE0\x80\xAF", "\"" R R R "\"");    /* overlong 3-byte */
    EXACT("\xE0\x9F\xBF", "\"" R R R "\"");
    EXACT("\xF0\x80\x80\xAF", "\"" R R R R "\""); /* overlong 4-byte */
    EXACT("\xF0\x8F\xBF\xBF", "\"" R R R R "\"");
    EXACT("\xED\xA0\x80", "\"" R R R "\"");    /* U+D800 */
    EXACT("\xED\xBF\xBF", "\"" R R R "\"");    /* U+DFFF */
    EXACT("\xED\xA0\x80\xED\xB0\x80", "\"" R R R R R R "\""); /* pair */
    EXACT("\xF4\x90\x80\x80", "\"" R R R R "\""); /* U+110000 */
    EXACT("\xF5\x80\x80\x80", "\"" R R R R "\"");
    EXACT("\xF8\x88\x80\x80\x80", "\"" R R R R R "\"");
    EXACT("\xFC\x84\x80\x80\x80\x80", "\"" R R R R R R "\"");
    EXACT("\xFE\xFF", "\"" R R "\"");
    EXACT("\x80\xBF", "\"" R R "\"");          /* stray continuations */
    EXACT("\xC2", "\"" R "\"");                /* truncated at the end */
    EXACT("\xE1\x80", "\"" R "\"");
    EXACT("\xF1\x80\x80", "\"" R "\"");
    EXACT("\xF4\x8F\xBF", "\"" R "\"");
    EXACT("\xE1\x80x", "\"" R "x\"");          /* truncated mid-string */
    EXACT("\xF1\x80\x80\x41", "\"" R "A\"");
    EXACT("\xF0\x9F\x98\"", "\"" R "\\\"\"");
    EXACT("\xC2\x0a", "\"" R "\\n\"");
    EXACT("\xE2\x82\xAC\xE2\x82", "\"\xE2\x82\xAC" R "\"");
    /* The largest and smallest of each length stay verbatim. */
    EXACT("\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xF0\x90\x80\x80"
          "\xF4\x8F\xBF\xBF",
          "\"\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xF0\x90\x80\x80"
          "\xF4\x8F\xBF\xBF\"");
    EXACT("\xED\x9F\xBF\xEE\x80\x80", "\"\xED\x9F\xBF\xEE\x80\x80\"");
#undef R
}

static void test_valid_roundtrip(void)
{
    static const char *texts[] = {
        "aten::matmul", "héllo wörld", "日本語のカーネル", "Ελληνικά",
        "Русский текст", "עברית", "العربية", "emoji 😀🚀 and 𝄞",
        "mixed: a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z", "\xF4\x8F\xBF\xBF",
        "\xEF\xBB\xBF BOM", "\xEF\xBF\xBE\xEF\xBF\xBF nonchars"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        size_t n = strlen(texts[i]), got_n;
        CHECK(act__utf8_valid(texts[i], n));
        char *got = escape(texts[i], n, &got_n);
        CHECK_INT(got_n, n + 2);
        CHECK_MEM(got + 1, got_n - 2, texts[i], n);
        free(got);
        check_escape(texts[i], n);
    }

    /* Every scalar value from U+0080 to U+10FFFF, in one string. */
    size_t cap = 4 * 0x110000, n = 0;
    unsigned char *all = malloc(cap);
    for (uint32_t cp = 0x80; cp <= 0x10FFFF; cp++)
        if (is_scalar(cp))
            n += encode(cp, all + n);
    CHECK_INT(act__utf8_valid_prefix((char *)all, n), n);
    size_t got_n;
    char *got = escape(all, n, &got_n);
    CHECK_INT(got_n, n + 2);
    CHECK(got_n == n + 2 && memcmp(got + 1, all, n) == 0);
#ifdef ACT_HAVE_JANSSON
    check_parses(got, got_n, (char *)all, n);
#endif
    free(got);

    /* Every surrogate and value above U+10FFFF is rejected as a prefix. */
    for (uint32_t cp = 0xD800; cp <= 0xDFFF; cp++) {
        unsigned char b[3] = {(unsigned char)(0xE0 | cp >> 12),
                              (unsigned char)(0x80 | ((cp >> 6) & 63)),
                              (unsigned char)(0x80 | (cp & 63))};
        CHECK_INT(act__utf8_valid_prefix((char *)b, 3), 0);
    }
    free(all);
}

static void test_random(void)
{
    unsigned char s[16];
    for (int k = 0; k < 300000; k++) {
        size_t n = check_rnd() % (sizeof s + 1);
        for (size_t i = 0; i < n; i++) {
            uint64_t r = check_rnd();
            s[i] = (r & 3) ? interesting[(r >> 2) % NINT]
                           : (unsigned char)(r >> 8);
        }
        check_escape(s, n);
    }
    /* Long ASCII runs with one special byte at every position cover the
     * eight-byte fast path and its exits. */
    char line[40];
    for (size_t pos = 0; pos < sizeof line; pos++)
        for (size_t v = 0; v < NINT; v++) {
            memset(line, 'x', sizeof line);
            line[pos] = (char)interesting[v];
            check_escape(line, sizeof line);
            check_escape(line, pos + 1);
        }
}

static void test_bounds(void)
{
    CHECK_U64(act__json_str_len_bound(0), 2);
    CHECK_U64(act__json_str_len_bound(10), 62);
    CHECK_U64(act__json_str_len_bound((SIZE_MAX - 2) / 6),
              6 * ((SIZE_MAX - 2) / 6) + 2);
    CHECK_U64(act__json_str_len_bound((SIZE_MAX - 2) / 6 + 1), SIZE_MAX);
    CHECK_U64(act__json_str_len_bound(SIZE_MAX), SIZE_MAX);
    /* The worst case is reached exactly by control characters. */
    char ctl[100];
    memset(ctl, 1, sizeof ctl);
    size_t got_n;
    char *got = escape(ctl, sizeof ctl, &got_n);
    CHECK_INT(got_n, ACT__JSON_STR_MAX(sizeof ctl));
    free(got);
    /* NULL with length 0 is allowed. */
    char two[2];
    CHECK(act__json_str(two, NULL, 0) == two + 2);
    CHECK(two[0] == '"' && two[1] == '"');
}

/* A big string of mixed units shifted by @p shift bytes, so that piece
 * boundaries fall at every position inside the multi-byte units. */
static unsigned char *mixed_string(size_t n, size_t shift, int valid_only)
{
    static const char *units[] = {
        "\xF0\x9F\x98\x80", "\xE2\x82\xAC", "\xC3\xA9", "a", "\n",
        "\xF0\x9F\x98", "\xE2\x82", "\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80"};
    unsigned char *s = malloc(n);
    size_t i = 0;
    memset(s, 'z', shift < n ? shift : n);
    i = shift;
    unsigned k = 0;
    while (i < n) {
        const char *u = units[k++ % (valid_only ? 5 : 10)];
        size_t l = strlen(u);
        if (l > n - i)
            l = n - i;
        memcpy(s + i, u, l);
        i += l;
    }
    return s;
}

/* One-shot act__json_str vs act__out_str into a memory sink, and vs
 * act__json_escape_units with random piece limits. */
static void check_chunked(const unsigned char *s, size_t n, int parse)
{
    size_t one_n;
    char *one = escape(s, n, &one_n);

    act__out o;
    if (act__out_open_mem(&o, 0) != 0) {
        CHECK(!"act__out_open_mem");
        free(one);
        return;
    }
    act__out_char(&o, '[');
    act__out_str(&o, (const char *)s, n);
    act__out_char(&o, ']');
    CHECK_INT(act__out_finish(&o), 0);
    size_t got_n;
    char *got = act__out_mem_take(&o, &got_n);
    act__out_abort(&o);
    CHECK(got != NULL);
    if (got) {
        CHECK_MEM(got + 1, got_n - 2, one, one_n);
#ifdef ACT_HAVE_JANSSON
        if (parse) {
            char *dec = malloc(3 * n + 1);
            size_t dec_n = ref_decoded(s, n, dec);
            check_parses(got + 1, got_n - 2, dec, dec_n);
            free(dec);
        }
#endif
    }
    free(got);

    /* Body variant into the sink. */
    CHECK_INT(act__out_open_mem(&o, 0), 0);
    act__out_str_body(&o, (const char *)s, n);
    CHECK_INT(act__out_finish(&o), 0);
    got = act__out_mem_take(&o, &got_n);
    CHECK(got && got_n == one_n - 2 && memcmp(got, one + 1, got_n) == 0);
    free(got);

    /* Random piece sizes straight through escape_units. */
    char *pieces = malloc(ACT__JSON_BODY_MAX(n) + 8);
    char *p = pieces;
    size_t i = 0;
    while (i < n) {
        size_t lim = 1 + check_rnd() % 9;
        if (lim > n - i)
            lim = n - i;
        size_t used;
        p = act__json_escape_units(p, (const char *)s + i, lim, n - i, &used);
        CHECK(used >= lim && used <= lim + 3);
        i += used;
    }
    CHECK_INT(i, n);
    CHECK_MEM(pieces, (size_t)(p - pieces), one + 1, one_n - 2);
    free(pieces);
    free(one);
}

static void test_chunked(void)
{
    /* 1 MiB of random bytes. */
    size_t n = (size_t)1 << 20;
    unsigned char *s = malloc(n);
    for (size_t i = 0; i < n; i++)
        s[i] = (unsigned char)(check_rnd() >> 24);
    check_chunked(s, n, 1);
    free(s);
    /* Mixed units at every alignment relative to the pieces. */
    for (size_t shift = 0; shift < 8; shift++) {
        s = mixed_string(200000, shift, 0);
        check_chunked(s, 200000, shift == 0);
        free(s);
        s = mixed_string(200000, shift, 1);
        /* Valid up to a unit the end may cut short. */
        CHECK(act__utf8_valid_prefix((char *)s, 200000) >= 200000 - 3);
        check_chunked(s, 200000, shift == 1);
        free(s);
    }
    /* Short strings go through the one-reservation path. */
    check_chunked((const unsigned char *)"a\"b", 3, 1);
    check_chunked((const unsigned char *)"", 0, 1);
}

int main(void)
{
    check_rng = 0x9E3779B97F4A7C15u;
    build_reference();
    test_single_bytes();
    test_combinations();
    test_known_invalid();
    test_valid_roundtrip();
    test_random();
    test_bounds();
    test_chunked();
    free(pfx2);
    free(pfx3);
    return check_report("JsonString");
}
