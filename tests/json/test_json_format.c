/* SPDX-License-Identifier: MIT */
/*
 * JsonFormat: the number formatting primitives of json_out.h. Integers and
 * timestamps against expected strings (edge cases, every power of ten,
 * random values against an independent printf/lldiv computation); doubles
 * round-trip through strtod, integral ones print without an exponent,
 * non-finite ones print null, and the decimal point stays '.' under a
 * locale whose decimal separator is a comma.
 */
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_check.h"
#include "writer/json_out.h"

/* Run a formatter into a guarded buffer; checks the worst-case bound. */
#define FMT(call, maxlen, out)                                                \
    do {                                                                      \
        char buf_[64];                                                        \
        memset(buf_, 0x55, sizeof buf_);                                      \
        char *p = buf_;                                                       \
        char *e_ = (call);                                                    \
        size_t n_ = (size_t)(e_ - buf_);                                      \
        CHECK(n_ <= (size_t)(maxlen));                                        \
        CHECK(buf_[n_] == 0x55);                                              \
        memcpy((out), buf_, n_);                                              \
        (out)[n_] = '\0';                                                     \
    } while (0)

static void check_u64(uint64_t v, const char *want)
{
    char got[64];
    FMT(act__fmt_u64(p, v), ACT__FMT_U64_MAX, got);
    CHECK_STR(got, want);
}

static void check_i64(int64_t v, const char *want)
{
    char got[64];
    FMT(act__fmt_i64(p, v), ACT__FMT_I64_MAX, got);
    CHECK_STR(got, want);
}

static void check_ts(int64_t v, const char *want)
{
    char got[64];
    FMT(act__fmt_ts_us(p, v), ACT__FMT_TS_MAX, got);
    CHECK_STR(got, want);
}

static void test_integers(void)
{
    check_u64(0, "0");
    check_u64(9, "9");
    check_u64(10, "10");
    check_u64(99, "99");
    check_u64(100, "100");
    check_u64(UINT64_MAX, "18446744073709551615");
    check_i64(0, "0");
    check_i64(-1, "-1");
    check_i64(INT64_MAX, "9223372036854775807");
    check_i64(INT64_MIN, "-9223372036854775808");

    /* Every power of ten and its neighbours (digit-count boundaries). */
    uint64_t t = 1;
    for (int k = 0; k < 20; k++, t *= 10) {
        uint64_t vs[3] = {t - 1, t, t + 1};
        for (int j = 0; j < 3; j++) {
            char want[32];
            snprintf(want, sizeof want, "%" PRIu64, vs[j]);
            check_u64(vs[j], want);
            if (vs[j] <= (uint64_t)INT64_MAX) {
                snprintf(want, sizeof want, "-%" PRIu64, vs[j]);
                check_i64(-(int64_t)vs[j], vs[j] ? want : "0");
            }
        }
    }
    for (int k = 0; k < 100000; k++) {
        uint64_t v = check_rnd() >> (check_rnd() % 64);
        char want[32];
        snprintf(want, sizeof want, "%" PRIu64, v);
        check_u64(v, want);
        snprintf(want, sizeof want, "%" PRId64, (int64_t)v);
        check_i64((int64_t)v, want);
    }
}

static void test_timestamps(void)
{
    check_ts(0, "0.000");
    check_ts(1, "0.001");
    check_ts(-1, "-0.001");
    check_ts(999, "0.999");
    check_ts(-999, "-0.999");
    check_ts(1000, "1.000");
    check_ts(-1000, "-1.000");
    check_ts(1234567, "1234.567");
    check_ts(-1234567, "-1234.567");
    check_ts(1000000, "1000.000");
    check_ts(1700000000123456789, "1700000000123456.789");
    check_ts(INT64_MAX, "9223372036854775.807");
    check_ts(INT64_MIN, "-9223372036854775.808");
    check_ts(INT64_MIN + 1, "-9223372036854775.807");
    for (int k = 0; k < 100000; k++) {
        int64_t v = (int64_t)(check_rnd() >> (check_rnd() % 64));
        if (k & 1)
            v = -v;
        /* Independent computation through lldiv and printf. */
        lldiv_t d = lldiv(v, 1000);
        char want[48];
        if (v < 0)
            snprintf(want, sizeof want, "-%lld.%03lld", -d.quot, -d.rem);
        else
            snprintf(want, sizeof want, "%lld.%03lld", d.quot, d.rem);
        check_ts(v, want);
    }
}

/* RFC 8259 number grammar: -? int frac? exp? */
static int is_json_number(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return 0;
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

static void check_double_rt(double v)
{
    char got[64];
    FMT(act__fmt_double(p, v), ACT__FMT_DOUBLE_MAX, got);
    CHECK(is_json_number(got));
    double back = strtod(got, NULL);
    if (memcmp(&back, &v, sizeof v) != 0) {
        fprintf(stderr, "  %.17g printed as %s reads back as %.17g\n", v, got,
                back);
        CHECK(!"double round trip");
    }
    if (v == floor(v) && fabs(v) < 1e15)
        CHECK(strpbrk(got, "eE.") == NULL);
}

static void check_double(double v, const char *want)
{
    char got[64];
    FMT(act__fmt_double(p, v), ACT__FMT_DOUBLE_MAX, got);
    CHECK_STR(got, want);
}

static void test_doubles(void)
{
    check_double(0.0, "0");
    check_double(-0.0, "-0");
    check_double(1.0, "1");
    check_double(-42.0, "-42");
    check_double(0.5, "0.5");
    check_double(0.1, "0.1");
    check_double(1.5e300, "1.5e+300");
    check_double(999999999999999.0, "999999999999999");
    check_double(-999999999999999.0, "-999999999999999");
    check_double(1e15, "1e+15");
    check_double(NAN, "null");
    check_double(INFINITY, "null");
    check_double(-INFINITY, "null");
    static const double edge[] = {
        0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 1e-300, 5e-324, -5e-324,
        2.2250738585072014e-308, 2.2250738585072009e-308, 1.7976931348623157e308,
        -1.7976931348623157e308, 123456.789, 9007199254740993.0,
        4503599627370495.5, 0.30000000000000004, 1e21, 1e22, 1e-7, 123e-20,
        999999999999999.9, 99999999999999.99, 1e15 + 0.5, -1e15 - 2};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        check_double_rt(edge[i]);
    for (int k = 0; k < 100000; k++) {
        uint64_t bits = check_rnd();
        double v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v))
            continue;
        check_double_rt(v);
        /* Also ordinary magnitudes and integral values. */
        check_double_rt((double)(int64_t)(check_rnd() >> (check_rnd() % 64)) *
                        ((k & 1) ? -1.0 : 1.0));
        check_double_rt((double)(check_rnd() >> 11) / (double)(1ull << (check_rnd() % 60)));
    }
}

/* A locale with ',' as decimal point: an installed one, or one built with
 * localedef into a temporary LOCPATH. Returns 1 when active. */
static int comma_locale(char *tmpdir, size_t cap)
{
    static const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                  "fr_FR.utf8", "de_DE", "fr_FR"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (setlocale(LC_NUMERIC, names[i]))
            return 1;
    if (access("/usr/bin/localedef", X_OK) != 0 &&
        access("/usr/sbin/localedef", X_OK) != 0)
        return 0;
    snprintf(tmpdir, cap, "%s/act-locale-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir))
        return 0;
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "localedef -i de_DE -f UTF-8 '%s/de_DE.UTF-8' >/dev/null 2>&1",
             tmpdir);
    if (system(cmd) != 0)
        return 0;
    setenv("LOCPATH", tmpdir, 1);
    return setlocale(LC_NUMERIC, "de_DE.UTF-8") != NULL;
}

static void test_locale(void)
{
    char tmpdir[256] = "";
    if (!comma_locale(tmpdir, sizeof tmpdir)) {
        printf("JsonFormat: SKIP locale check: no locale with a comma "
               "decimal point (install locales or localedef)\n");
    } else {
        char probe[32];
        snprintf(probe, sizeof probe, "%g", 0.5);
        CHECK_STR(probe, "0,5"); /* the locale really is active */
        check_double(0.5, "0.5");
        check_double(-1234.25, "-1234.25");
        check_double(1.5e-7, "1.5e-07");
        check_double(0.1, "0.1");
        for (int k = 0; k < 10000; k++) {
            uint64_t bits = check_rnd();
            double v;
            memcpy(&v, &bits, sizeof v);
            if (!isfinite(v))
                continue;
            char got[64];
            FMT(act__fmt_double(p, v), ACT__FMT_DOUBLE_MAX, got);
            CHECK(is_json_number(got));
        }
        setlocale(LC_NUMERIC, "C");
        unsetenv("LOCPATH");
    }
    if (tmpdir[0]) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", tmpdir);
    }
}

int main(void)
{
    test_integers();
    test_timestamps();
    test_doubles();
    test_locale();
    return check_report("JsonFormat");
}
