/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the plugin host's validation (src/plugin/validate.c):
 * UTF-8, names, struct sizes, args and records. Every reason a record can
 * be rejected for is produced here once, and a valid record is converted
 * field by field.
 */
#include <math.h>
#include <string.h>

#include "check.h"
#include "plugin/validate.h"

#define S(lit) lit, sizeof(lit) - 1

static void test_utf8(void)
{
    CHECK(act__utf8_valid(S("")));
    CHECK(act__utf8_valid(NULL, 0));
    CHECK(!act__utf8_valid(NULL, 1));
    CHECK(act__utf8_valid(S("plain ascii")));
    CHECK(act__utf8_valid(S("caf\xc3\xa9")));           /* é */
    CHECK(act__utf8_valid(S("\xe2\x82\xac")));          /* € */
    CHECK(act__utf8_valid(S("\xf0\x9f\x98\x80")));      /* U+1F600 */
    CHECK(act__utf8_valid(S("\xf4\x8f\xbf\xbf")));      /* U+10FFFF */
    CHECK(act__utf8_valid(S("a\0b")));                  /* NUL is UTF-8 */
    CHECK(!act__utf8_valid(S("\x80")));                 /* lone continuation */
    CHECK(!act__utf8_valid(S("\xc3")));                 /* truncated */
    CHECK(!act__utf8_valid(S("\xc0\xaf")));             /* overlong / */
    CHECK(!act__utf8_valid(S("\xc1\xbf")));             /* overlong */
    CHECK(!act__utf8_valid(S("\xe0\x80\xaf")));         /* overlong 3-byte */
    CHECK(!act__utf8_valid(S("\xed\xa0\x80")));         /* surrogate D800 */
    CHECK(!act__utf8_valid(S("\xf0\x80\x80\xaf")));     /* overlong 4-byte */
    CHECK(!act__utf8_valid(S("\xf4\x90\x80\x80")));     /* > U+10FFFF */
    CHECK(!act__utf8_valid(S("\xf5\x80\x80\x80")));
    CHECK(!act__utf8_valid(S("\xff")));
    CHECK(!act__utf8_valid(S("\xe2\x82")));             /* truncated € */
    CHECK(!act__utf8_valid(S("\xe2\x28\xa1")));         /* bad 2nd byte */
    CHECK(!act__utf8_valid(S("\xf0\x9f\x98\x28")));     /* bad 4th byte */
    /* The length bounds the scan: a valid prefix of an invalid buffer. */
    CHECK(act__utf8_valid("ab\xff", 2));
}

static void test_names(void)
{
    CHECK_EQ_INT(act__pcheck_name(NULL, 0, 10), ACT__PREJ_NAME_NULL);
    CHECK_EQ_INT(act__pcheck_name("abc", 3, 3), ACT__PREJ_NONE);
    CHECK_EQ_INT(act__pcheck_name("abcd", 4, 3), ACT__PREJ_NAME_LEN);
    CHECK_EQ_INT(act__pcheck_name("a\xff", 2, 10), ACT__PREJ_NAME_UTF8);
    CHECK_EQ_INT(act__pcheck_cstr("dev", 3), ACT__PREJ_NONE);
    CHECK_EQ_INT(act__pcheck_cstr("devs", 3), ACT__PREJ_NAME_LEN);
    CHECK_EQ_INT(act__pcheck_cstr(NULL, 3), ACT__PREJ_NAME_NULL);
    CHECK_EQ_INT(act__pcheck_cstr("\xc3(", 8), ACT__PREJ_NAME_UTF8);

    CHECK(act__pcheck_stride(80, 80));
    CHECK(act__pcheck_stride(88, 80)); /* a newer minor's larger record */
    CHECK(!act__pcheck_stride(72, 80));
    CHECK(!act__pcheck_stride(84, 80)); /* misaligned */
    CHECK(!act__pcheck_stride(ACT_PLUGIN_STRUCT_MAX + 8, 80));
    CHECK(!act__pcheck_stride(0, 80));
    for (int r = 0; r < ACT__PREJ_COUNT; r++)
        CHECK(strlen(act__prej_text((act__prej)r)) > 4);
    CHECK_EQ_STR(act__prej_text((act__prej)999), "unknown reason");
}

static act_plugin_arg arg_int(const char *key, int64_t v)
{
    act_plugin_arg a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.kind = ACT_PLUGIN_ARG_INT;
    a.key = key;
    a.key_len = (uint32_t)strlen(key);
    a.v.i = v;
    return a;
}

static void test_args(void)
{
    act__arg out[ACT_PLUGIN_ARGS_MAX];
    act_plugin_arg a[5];
    a[0] = arg_int("n", -5);
    a[1] = arg_int("u", 0);
    a[1].kind = ACT_PLUGIN_ARG_UINT;
    a[1].v.u = UINT64_MAX;
    a[2] = arg_int("d", 0);
    a[2].kind = ACT_PLUGIN_ARG_DOUBLE;
    a[2].v.d = 2.5;
    a[3] = arg_int("b", 0);
    a[3].kind = ACT_PLUGIN_ARG_BOOL;
    a[3].v.b = 42;
    a[4] = arg_int("s", 0);
    a[4].kind = ACT_PLUGIN_ARG_STRING;
    a[4].v.s.ptr = "q\"\xff"; /* any bytes: escaping is the host's job */
    a[4].v.s.len = 3;
    CHECK_EQ_INT(act__pcheck_args(a, 5, out), ACT__PREJ_NONE);
    CHECK_EQ_INT(out[0].kind, ACT__V_INT);
    CHECK_EQ_INT(out[0].v.i, -5);
    CHECK_EQ_INT(out[1].kind, ACT__V_UINT);
    CHECK_EQ_U64(out[1].v.u, UINT64_MAX);
    CHECK_EQ_INT(out[2].kind, ACT__V_DOUBLE);
    CHECK_NEAR(out[2].v.d, 2.5, 0);
    CHECK_EQ_INT(out[3].kind, ACT__V_BOOL);
    CHECK_EQ_INT(out[3].v.b, 1);
    CHECK_EQ_INT(out[4].kind, ACT__V_STR);
    CHECK_EQ_U64(out[4].v.s.n, 3);
    CHECK(out[4].key_len == 1 && out[4].key[0] == 's');

    CHECK_EQ_INT(act__pcheck_args(NULL, 0, out), ACT__PREJ_NONE);
    CHECK_EQ_INT(act__pcheck_args(NULL, 1, out), ACT__PREJ_ARGS);
    CHECK_EQ_INT(act__pcheck_args(a, ACT_PLUGIN_ARGS_MAX + 1, out),
                 ACT__PREJ_ARGS);

    act_plugin_arg b = a[0];
    b.key = NULL;
    CHECK_EQ_INT(act__pcheck_args(&b, 1, out), ACT__PREJ_ARG);
    b = a[0];
    b.key_len = 0; /* never an empty key */
    CHECK_EQ_INT(act__pcheck_args(&b, 1, out), ACT__PREJ_ARG);
    b.key = "\xc3\x28";
    b.key_len = 2;
    CHECK_EQ_INT(act__pcheck_args(&b, 1, out), ACT__PREJ_ARG);
    b = a[0];
    b.kind = 99;
    CHECK_EQ_INT(act__pcheck_args(&b, 1, out), ACT__PREJ_ARG);
    b = a[2];
    b.v.d = NAN;
    CHECK_EQ_INT(act__pcheck_args(&b, 1, out), ACT__PREJ_ARG);
    b.v.d = INFINITY;
    CHECK_EQ_INT(act__pcheck_args(&b, 1, out), ACT__PREJ_ARG);
    b = a[4];
    b.v.s.ptr = NULL;
    CHECK_EQ_INT(act__pcheck_args(&b, 1, out), ACT__PREJ_ARG);
    b.v.s.len = 0; /* NULL with length 0 is the empty string */
    CHECK_EQ_INT(act__pcheck_args(&b, 1, out), ACT__PREJ_NONE);
    CHECK_EQ_U64(out[0].v.s.n, 0);
    b = a[4];
    b.v.s.len = 1u << 20;
    CHECK_EQ_INT(act__pcheck_args(&b, 1, out), ACT__PREJ_ARG);
    act_plugin_arg c[2] = {a[0], a[1]};
    c[1].struct_size = 48; /* differs within the array */
    CHECK_EQ_INT(act__pcheck_args(c, 2, out), ACT__PREJ_STRUCT_SIZE);
    c[0].struct_size = 16;
    CHECK_EQ_INT(act__pcheck_args(c, 1, out), ACT__PREJ_STRUCT_SIZE);
}

static act_plugin_record good_record(void)
{
    act_plugin_record r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.kind = ACT_PLUGIN_RECORD_DEVICE_SPAN;
    r.type = ACT_CONCURRENT_KERNEL;
    r.device = 1;
    r.stream = 7;
    r.start_ns = 1000;
    r.end_ns = 3000;
    r.correlation = 11;
    r.external_id = 22;
    r.name = "gemm";
    r.name_len = 4;
    return r;
}

static void test_records(void)
{
    act__emit_record e;
    act__arg args[ACT_PLUGIN_ARGS_MAX];
    act_plugin_arg a = arg_int("grid", 64);
    act_plugin_record r = good_record();
    r.args = &a;
    r.nargs = 1;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_NONE);
    CHECK_EQ_INT(e.kind, ACT__EMIT_DEVICE_SPAN);
    CHECK_EQ_INT(e.type, ACT_CONCURRENT_KERNEL);
    CHECK_EQ_U64(e.device, 1);
    CHECK_EQ_U64(e.stream, 7);
    CHECK_EQ_U64(e.start_ns, 1000);
    CHECK_EQ_U64(e.end_ns, 3000);
    CHECK_EQ_U64(e.correlation, 11);
    CHECK_EQ_U64(e.external_id, 22);
    CHECK_EQ_U64(e.name_len, 4);
    CHECK_EQ_U64(e.nargs, 1);
    CHECK(e.args == args && args[0].v.i == 64);

    /* A retired code decodes to its canonical type (12 -> runtime). */
    r = good_record();
    r.kind = ACT_PLUGIN_RECORD_HOST_SPAN;
    r.device = ACT_PLUGIN_HOST_DEVICE;
    r.type = 12;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_NONE);
    CHECK_EQ_INT(e.type, ACT_RUNTIME);
    CHECK_EQ_U64(e.device, ACT__HOST_DEVICE);
    CHECK(e.args == NULL && e.nargs == 0);

    /* Instants ignore end_ns. */
    r = good_record();
    r.kind = ACT_PLUGIN_RECORD_INSTANT;
    r.end_ns = -5;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_NONE);
    CHECK_EQ_U64(e.end_ns, 1000);

    /* One case per reason. */
    r = good_record();
    r.kind = 3;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_KIND);
    r = good_record();
    r.type = 900; /* never issued */
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_TYPE);
    r.type = -1;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_TYPE);
    r.type = 5000; /* custom range, never registered */
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_TYPE);
    r = good_record();
    r.type = ACT_GPU_PM_COUNTER;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_SHAPE);
    r = good_record();
    r.device = ACT_PLUGIN_HOST_DEVICE; /* device span without a device */
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_SHAPE);
    r = good_record();
    r.kind = ACT_PLUGIN_RECORD_HOST_SPAN; /* host span on a device */
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_SHAPE);
    r = good_record();
    r.device = 2;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_DEVICE);
    CHECK_EQ_INT(act__pcheck_record(&r, 0, &e, args), ACT__PREJ_DEVICE);
    r = good_record();
    r.start_ns = -1;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_TIME);
    r = good_record();
    r.end_ns = 999;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_ORDER);
    r.end_ns = 1000; /* zero duration is fine */
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_NONE);
    r = good_record();
    r.name = NULL;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_NAME_NULL);
    r = good_record();
    r.name = "bad\xc0\x80";
    r.name_len = 5;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_NAME_UTF8);
    r = good_record();
    r.name_len = ACT_PLUGIN_NAME_MAX + 1;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_NAME_LEN);
    r = good_record();
    r.nargs = 65;
    r.args = &a;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_ARGS);
    a.key = NULL;
    r.nargs = 1;
    CHECK_EQ_INT(act__pcheck_record(&r, 2, &e, args), ACT__PREJ_ARG);
}

int main(void)
{
    test_utf8();
    test_names();
    test_args();
    test_records();
    CHECK_MAIN_END;
}
