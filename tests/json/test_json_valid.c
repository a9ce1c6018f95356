/* SPDX-License-Identifier: MIT */
/*
 * JsonValid: act__json_valid (json_out.h), which decides whether an
 * act_arg_json text is written verbatim into a trace. A table of texts
 * that must pass and hostile ones that must not (each with its reason),
 * the nesting limit at its edge, every cut of valid texts (a cut is never
 * valid unless it ends at a whole value), and, with jansson, random texts
 * over JSON's structural alphabet judged the same way as jansson does.
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

static int valid(const char *s)
{
    return act__json_valid(s, strlen(s));
}

static void test_table(void)
{
    static const char *const good[] = {
        "0", "-0", "1.5", "-12.5e+3", "1E-2", "true", "false", "null", "\"\"",
        "[]", "{}", " [ ] ", "\t\r\n{}\n", "[[2, 3], [3]]", "[\"float\", \"\"]",
        "{\"a\":{\"b\":[1,{\"c\":null}]}}", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
        "\"\\u00e9\\ud83d\\ude00\"", "\"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
        "\"\\u0000\"", "[1,[2,[3,[4]]]]", "{\"\":\"\"}", "\"\x7f\"",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        if (!valid(good[i]))
            fprintf(stderr, "refused: %s\n", good[i]);
        CHECK(valid(good[i]));
    }
    static const char *const bad[] = {
        "",              /* no value */
        "   ",           /* likewise */
        "[1, 2",         /* cut */
        "[1,]",          /* trailing comma */
        "{\"a\" 1}",     /* no colon */
        "{\"a\":}",      /* no value */
        "{1:2}",         /* key not a string */
        "[1] [2]",       /* two values */
        "1}, {\"ph\": \"X\"", /* an injection into the trace */
        "01", "1.", ".5", "-", "1e", "+1", "0x10", "NaN", "Infinity", "-Infinity",
        "tru", "nul", "True", "'a'",
        "\"abc",         /* unterminated */
        "\"a\nb\"",      /* raw control character */
        "\"\\x41\"",     /* no such escape */
        "\"\\u12\"",     /* short \u */
        "\"\\ud800\"",   /* lone high surrogate */
        "\"\\udc00\"",   /* lone low surrogate */
        "\"\\ud800\\u0041\"", /* high surrogate, then no low one */
        "\"\xff\"",      /* invalid UTF-8 */
        "\"\xc0\xaf\"",  /* overlong */
        "\"\xed\xa0\x80\"", /* encoded surrogate */
        "\"\xf4\x90\x80\x80\"", /* beyond U+10FFFF */
        "[\"\xe2\x82\"]", /* cut sequence */
        "\xef\xbb\xbf[]", /* a byte-order mark */
        "[1]\x01",       /* garbage after */
        "[}", "{]", "]", "}", ",", ":",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (valid(bad[i]))
            fprintf(stderr, "accepted: %s\n", bad[i]);
        CHECK(!valid(bad[i]));
    }
    /* NUL inside: bytes count, not C strings. */
    CHECK(act__json_valid("\"a\0b\"", 5) == 0);
    CHECK(act__json_valid("[1]\0", 4) == 0);
    CHECK(act__json_valid("[1]\0", 3) == 1);
    CHECK(act__json_valid(NULL, 0) == 0);
}

/* [[[...]]] and {"a":{"a":...}} at the limit pass, one deeper does not. */
static void test_depth(void)
{
    char s[4 * 1024];
    for (int obj = 0; obj < 2; obj++) {
        for (int d = ACT__JSON_DEPTH_MAX - 1; d <= ACT__JSON_DEPTH_MAX + 1; d++) {
            char *p = s;
            for (int i = 0; i < d; i++)
                p += sprintf(p, "%s", obj ? "{\"a\":" : "[");
            *p++ = '1';
            for (int i = 0; i < d; i++)
                *p++ = obj ? '}' : ']';
            CHECK(act__json_valid(s, (size_t)(p - s)) == (d <= ACT__JSON_DEPTH_MAX));
        }
    }
    /* A deep array followed by many siblings: the level's kind is kept. */
    CHECK(valid("[{\"a\":[1,2]},[{\"b\":{}}],{\"c\":[[],{}]}]"));
    CHECK(!valid("[{\"a\":[1,2]},[{\"b\":{}}],{\"c\":[[],{}]]]"));
    /* A million levels: refused, in constant memory. */
    size_t n = 1000000;
    char *big = malloc(n);
    CHECK(big != NULL);
    if (big) {
        memset(big, '[', n);
        CHECK(!act__json_valid(big, n));
        free(big);
    }
}

/* No proper prefix of these is valid except where the prefix is a value. */
static void test_cuts(void)
{
    static const char *const texts[] = {
        "[[2, 3], [3]]", "{\"a\":[1,true,null,\"x\\u00e9\"]}", "[\"float\", \"Scalar\"]",
    };
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
        size_t n = strlen(texts[k]);
        for (size_t i = 0; i < n; i++)
            CHECK(!act__json_valid(texts[k], i));
        CHECK(act__json_valid(texts[k], n));
    }
}

#ifdef ACT_HAVE_JANSSON
/* Random short texts: jansson (depth limit far above these) decides. Its
 * one difference, numbers out of range, cannot arise: no 'e', and at most
 * 10 bytes. */
static void test_random(void)
{
    static const char alpha[] = "[]{}:,\"a10-. \\u";
    char s[16];
    int agree = 0, ok = 0;
    for (int k = 0; k < 400000; k++) {
        size_t n = 1 + check_rnd() % 10;
        for (size_t i = 0; i < n; i++)
            s[i] = alpha[check_rnd() % (sizeof alpha - 1)];
        json_error_t err;
        json_t *j = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
        int want = j != NULL, got = act__json_valid(s, n);
        json_decref(j);
        if (want != got && agree == k) /* the first disagreement only */
            check_dump(want ? "jansson takes, refused" : "jansson refuses, taken", s, n);
        agree += want == got;
        ok += want;
    }
    CHECK(agree == 400000);
    CHECK(ok > 1000); /* the alphabet makes valid texts too */
}
#endif

int main(void)
{
    test_table();
    test_depth();
    test_cuts();
#ifdef ACT_HAVE_JANSSON
    test_random();
#endif
    return check_report("JsonValid");
}
