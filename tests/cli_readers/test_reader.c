/* SPDX-License-Identifier: MIT */
/*
 * The streaming trace reader (src/reader) through its own API: values and
 * their decoding (escapes, surrogate pairs, NUL, numbers up to and beyond
 * uint64), items split across refills (a pipe fed a few bytes at a time,
 * an event larger than the buffer), a FIFO, strict RFC 8259 rejections
 * with their byte offset and event index (every prefix of a valid trace,
 * bad escapes, control bytes, invalid UTF-8, bad numbers, trailing data,
 * deep nesting), the item size limit, gzip input (plain, concatenated,
 * truncated, a bomb) and, with jansson, a differential test: every trace
 * in tests/cli_readers/data, the Kineto reference and a recorded trace
 * and every trace the other tests wrote into ACT_TRACE_DIR, parsed by both
 * and compared value by value.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cli_readers/cli_util.h"
#include "reader/reader.h"

#ifdef CLI_TEST_HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef CLI_TEST_HAVE_JANSSON
#include <dirent.h>
#include <jansson.h>
#endif

/* ---- feeding the reader --------------------------------------------------------- */

typedef struct feed {
    int fd;
    const char *data;
    size_t len, step;
} feed;

static void *feeder(void *arg)
{
    feed *f = arg;
    for (size_t o = 0; o < f->len;) {
        size_t k = f->len - o < f->step ? f->len - o : f->step;
        ssize_t w = write(f->fd, f->data + o, k);
        if (w <= 0)
            break;
        o += (size_t)w;
    }
    close(f->fd);
    return NULL;
}

/* A reader over @p data written into a pipe @p step bytes at a time by a
 * thread (joined by done()). */
typedef struct src {
    act__rd *r;
    int fd;
    pthread_t th;
    feed f;
} src;

static void open_pipe(src *s, const char *data, size_t len, size_t step,
                      const act__rd_opts *o)
{
    int p[2];
    CHECK_FATAL(pipe(p) == 0);
    s->f = (feed){p[1], data, len, step};
    CHECK_FATAL(pthread_create(&s->th, NULL, feeder, &s->f) == 0);
    s->fd = p[0];
    CHECK_FATAL(act__rd_create(p[0], o, &s->r) == 0);
}

static void done(src *s)
{
    act__rd_destroy(s->r);
    close(s->fd); /* unblocks the feeder if the reader stopped early */
    pthread_join(s->th, NULL);
}

/* Read all of @p text; the return of the last act__rd_next, the events and
 * the message. */
static int read_all(const char *text, size_t len, size_t step,
                    const act__rd_opts *o, uint64_t *events, char *msg,
                    size_t msglen)
{
    src s;
    open_pipe(&s, text, len, step, o);
    act__rd_item it;
    int k;
    while ((k = act__rd_next(s.r, &it)) > 0)
        ;
    if (events)
        *events = act__rd_events(s.r);
    if (msg)
        snprintf(msg, msglen, "%s", act__rd_errmsg(s.r));
    done(&s);
    return k;
}

/* @p text must be rejected with @p what in the message (and, when
 * @p offset >= 0, "byte offset OFFSET"). */
static void bad(const char *text, size_t len, long offset, const char *what)
{
    /* Fed 3 bytes at a time (tokens cut by refills: the careful paths) and
     * all at once (the reader's fast paths). */
    for (int whole = 0; whole < 2; whole++) {
        char msg[600], want[64];
        int k = read_all(text, len, whole ? len + 1 : 3, NULL, NULL, msg, sizeof msg);
        int ok = CHECK_INT(k, -1);
        ok &= CHECK(strstr(msg, what) != NULL);
        if (offset >= 0) {
            snprintf(want, sizeof want, "byte offset %ld ", offset);
            ok &= CHECK(strstr(msg, want) != NULL);
        }
        if (!ok)
            fprintf(stderr, "input: %.*s\nmessage: %s\nwant: %s (offset %ld, %s)\n",
                    (int)(len > 200 ? 200 : len), text, msg, what, offset,
                    whole ? "whole" : "3-byte steps");
    }
}

#define BAD(lit, off, what) bad(lit, sizeof lit - 1, off, what)

/* ---- values ------------------------------------------------------------------------ */

static void test_values(void)
{
    static const char doc[] =
        "{\"traceName\":\"t\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\","
        " \"n\" : [0, -0, 12, -7, 1.5e3, 2E-2, 9223372036854775807,"
        " 9223372036854775808, 18446744073709551615, 100000000000000000000,"
        " true, false, null, {}, []],\n"
        "\"traceEvents\": [ {\"ph\":\"X\",\"name\":\"a\\u0000b\",\"ts\":1.0005,"
        "\"dur\":-2.5,\"args\":{\"k\":{\"deep\":[1,[2,{\"x\":3}]]},\"k\":2}},\n"
        "  7 , \"s\", [] ],\"after\":1}  \n";
    for (size_t step = 1; step <= 64; step *= 4) {
        src s;
        open_pipe(&s, doc, sizeof doc - 1, step, NULL);
        act__rd_item it;
        CHECK_INT(act__rd_next(s.r, &it), ACT__RD_MEMBER);
        CHECK_STR(it.key, "traceName");
        CHECK_INT(it.v->type, ACT__J_STRING);
        /* é (2 bytes) + 😀 (4 bytes) + "\/ and five controls */
        CHECK_EQ_MEM(it.v->s, "t\xC3\xA9\xF0\x9F\x98\x80\"\\/\b\f\n\r\t", 15);
        CHECK_INT(it.v->len, 15);
        CHECK_INT(it.v->s[15], 0);
        CHECK_INT(act__rd_next(s.r, &it), ACT__RD_MEMBER);
        CHECK_STR(it.key, "n");
        CHECK_INT(it.v->len, 15);
        const act__jv *v = it.v->child;
        int64_t i;
        double d;
        CHECK(act__jv_i64(v, &i) && i == 0);
        v = v->next;
        CHECK(act__jv_i64(v, &i) && i == 0);
        v = v->next;
        CHECK(act__jv_i64(v, &i) && i == 12);
        v = v->next;
        CHECK(act__jv_i64(v, &i) && i == -7);
        v = v->next;
        CHECK(!act__jv_i64(v, &i) && act__jv_num(v, &d) && d == 1500);
        v = v->next;
        CHECK(act__jv_num(v, &d) && d == 0.02);
        v = v->next;
        CHECK(act__jv_i64(v, &i) && i == INT64_MAX);
        v = v->next; /* 2^63: valid JSON, not an int64, a double */
        CHECK(!act__jv_i64(v, &i) && act__jv_num(v, &d) && d == 9223372036854775808.0);
        CHECK_EQ_MEM(v->s, "9223372036854775808", 19);
        v = v->next;
        CHECK(act__jv_num(v, &d) && d == 18446744073709551615.0);
        v = v->next;
        CHECK(act__jv_num(v, &d) && d == 1e20);
        v = v->next;
        CHECK_INT(v->type, ACT__J_TRUE);
        v = v->next;
        CHECK_INT(v->type, ACT__J_FALSE);
        v = v->next;
        CHECK_INT(v->type, ACT__J_NULL);
        v = v->next;
        CHECK(v->type == ACT__J_OBJECT && v->len == 0 && !v->child);
        v = v->next;
        CHECK(v->type == ACT__J_ARRAY && v->len == 0 && !v->next);

        CHECK_INT(act__rd_next(s.r, &it), ACT__RD_EVENT);
        CHECK_EQ_U64(it.index, 0);
        CHECK(act__jv_is(act__jv_get(it.v, "ph"), "X"));
        const act__jv *nm = act__jv_get(it.v, "name");
        CHECK(nm && nm->len == 3 && memcmp(nm->s, "a\0b", 3) == 0);
        int64_t ns;
        CHECK(act__jv_us_ns(act__jv_get(it.v, "ts"), &ns) && ns == 1001);
        CHECK(act__jv_us_ns(act__jv_get(it.v, "dur"), &ns) && ns == -2500);
        const act__jv *args = act__jv_get(it.v, "args");
        CHECK_INT(args->len, 2);
        /* A repeated key: the last one, as JavaScript sees it. */
        CHECK(act__jv_i64(act__jv_get(args, "k"), &i) && i == 2);
        const act__jv *deep = act__jv_get(args->child, "deep");
        CHECK(deep && deep->type == ACT__J_ARRAY && deep->len == 2);
        act__jv *copy = act__jv_dup(it.v);
        CHECK_FATAL(copy != NULL);
        CHECK_INT(act__rd_next(s.r, &it), ACT__RD_EVENT);
        CHECK(act__jv_i64(it.v, &i) && i == 7);
        /* The copy outlives the item. */
        CHECK(act__jv_is(act__jv_get(copy, "ph"), "X"));
        CHECK_EQ_MEM(act__jv_get(copy, "name")->s, "a\0b", 4);
        free(copy);
        CHECK_INT(act__rd_next(s.r, &it), ACT__RD_EVENT);
        CHECK(act__jv_is(it.v, "s"));
        CHECK_INT(act__rd_next(s.r, &it), ACT__RD_EVENT);
        CHECK_EQ_U64(it.index, 3);
        CHECK_INT(it.v->type, ACT__J_ARRAY);
        CHECK_INT(act__rd_next(s.r, &it), ACT__RD_MEMBER);
        CHECK_STR(it.key, "after");
        CHECK_INT(act__rd_next(s.r, &it), 0);
        CHECK_INT(act__rd_next(s.r, &it), 0);
        CHECK_INT(act__rd_layout(s.r), ACT__RD_TOP_OBJECT);
        CHECK_EQ_U64(act__rd_events(s.r), 4);
        CHECK_EQ_U64(act__rd_offset(s.r), sizeof doc - 1);
        done(&s);
    }

    /* A 16-byte buffer: every item grows it, every token straddles. */
    uint64_t n;
    act__rd_opts tiny = {0, 0, 16};
    char msg[600];
    CHECK_INT(read_all(doc, sizeof doc - 1, 5, &tiny, &n, msg, sizeof msg), 0);
    CHECK_EQ_U64(n, 4);
    CHECK_INT(read_all("[]", 2, 1, NULL, &n, NULL, 0), 0);
    CHECK_EQ_U64(n, 0);
    src s;
    open_pipe(&s, " 42 ", 4, 1, NULL);
    act__rd_item it;
    CHECK_INT(act__rd_next(s.r, &it), 0);
    CHECK_INT(act__rd_layout(s.r), ACT__RD_TOP_NO_EVENTS);
    done(&s);
    open_pipe(&s, "{\"traceEvents\":{}}", 18, 5, NULL);
    CHECK_INT(act__rd_next(s.r, &it), ACT__RD_MEMBER);
    CHECK_INT(act__rd_next(s.r, &it), 0);
    CHECK_INT(act__rd_layout(s.r), ACT__RD_TOP_NO_EVENTS);
    done(&s);
}

/* An event larger than the buffer, and many events across refills. */
/* ---- number fast path --------------------------------------------------------------- */

/* The reader's scan gathers a number's digits (mfast, mant, fdig); the
 * value functions use them instead of the text. Each number here is
 * checked against the text path (the same node with mfast cleared: the
 * results from before the fast path, bit for bit) and, for act__jv_num,
 * against strtod. */
static uint64_t lcg_state = 88172645463325252ull;
static uint64_t lcg(void)
{
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return lcg_state >> 17;
}

static void gen_number(char *p, size_t cap)
{
    char *e = p + cap - 1;
    if (lcg() % 3 == 0)
        *p++ = '-';
    unsigned ni = (unsigned)(lcg() % 20), nf = (unsigned)(lcg() % 21);
    if (ni == 0 || lcg() % 8 == 0) {
        *p++ = '0';
    } else {
        *p++ = (char)('1' + lcg() % 9);
        for (unsigned k = 1; k < ni && p < e; k++)
            *p++ = (char)('0' + (lcg() % 4 == 0 ? 0 : lcg() % 10));
    }
    if (nf && lcg() % 4) {
        *p++ = '.';
        for (unsigned k = 0; k < nf && p < e; k++)
            *p++ = (char)('0' + (lcg() % 3 == 0 ? (lcg() % 2) * 9 : lcg() % 10));
    }
    if (lcg() % 10 == 0 && p + 5 < e) {
        *p++ = lcg() % 2 ? 'e' : 'E';
        unsigned sg = (unsigned)(lcg() % 3);
        if (sg)
            *p++ = sg == 1 ? '+' : '-';
        p += snprintf(p, (size_t)(e - p), "%u", (unsigned)(lcg() % 330));
    }
    *p = '\0';
}

static void test_number_fast(void)
{
    static const char *edge[] = {
        "0", "-0", "-0.0", "0.0", "0.1", "-0.1", "0.5", "1", "-1", "10", "1.5",
        "123.456", "1000000.000", "1000000.001", "-2.5", "0.000", "0.001",
        "0.0005", "1.0005", "1.0004", "0.30000000000000004", "0.1234567890123456",
        "9007199254740991", "9007199254740992", "9007199254740993",
        "900719925474099.3", "900719925474099.5", "9007199254740.993",
        "90071992547409.93", "9007199254740993.0", "123456789012345678",
        "-123456789012345678", "1234567890123456789", "9223372036854775807",
        "-9223372036854775808", "9223372036854775808", "18446744073709551615",
        "18446744073709551616", "0.000000000000000001", "0.0000000000000000001",
        "0.000000000000000000000001", "1.00000000000000000000001",
        "3.14159265358979323846264338327950288", "99999999999999999999",
        "999999999999999.999", "99999999999999.999", "9200000000000",
        "9200000000000.999", "9200000000001", "9200000000001.0",
        "-9200000000000.999", "-9200000000001", "9200000000000.9995",
        "9199999999999.9999", "1e22", "1E-5", "-1.5e+3", "1e0", "0e0", "-0e-0",
        "2.2250738585072014e-308", "4.9e-324", "1.7976931348623157e308",
        "1e400", "-1e400", "1e-400", "123456789012345.678", "12345678901234.5678",
        "4503599627370497.5", "0.1e1", "7.0e-10", "1.7976931348623157",
    };
    enum { NGEN = 20000 };
    size_t nedge = sizeof edge / sizeof edge[0];
    size_t cap = (nedge + NGEN) * 48 + 16, n = 0;
    char *doc = malloc(cap);
    CHECK_FATAL(doc != NULL);
    doc[n++] = '[';
    for (size_t k = 0; k < nedge + NGEN; k++) {
        char num[48];
        if (k < nedge)
            snprintf(num, sizeof num, "%s", edge[k]);
        else
            gen_number(num, sizeof num);
        n += (size_t)snprintf(doc + n, cap - n, "%s%s", k ? "," : "", num);
    }
    doc[n++] = ']';
    act__rd_opts o = {.buffer_bytes = n + 64}; /* no number cut by a refill */
    src sr;
    open_pipe(&sr, doc, n, n, &o);
    act__rd_item it;
    int k;
    size_t fast = 0, total = 0, bad_num = 0, bad_i64 = 0, bad_ns = 0, bad_strtod = 0;
    while ((k = act__rd_next(sr.r, &it)) == ACT__RD_EVENT) {
        const act__jv *v = it.v;
        if (!CHECK(v->type == ACT__J_NUMBER))
            break;
        total++;
        fast += v->mfast;
        act__jv slow = *v;
        slow.mfast = 0;
        char text[64];
        snprintf(text, sizeof text, "%.*s", (int)v->len, v->s);
        double a = -1, b = -2;
        int ra = act__jv_num(v, &a), rb = act__jv_num(&slow, &b);
        if (ra != rb || memcmp(&a, &b, sizeof a) != 0) {
            if (bad_num++ < 5)
                fprintf(stderr, "act__jv_num(%s): %a fast, %a text\n", text, a, b);
        }
        double want = strtod(text, NULL);
        int plain_neg_zero = v->integer && a == 0; /* "-0" as an int64: +0.0 */
        if (!plain_neg_zero && memcmp(&a, &want, sizeof a) != 0) {
            if (bad_strtod++ < 5)
                fprintf(stderr, "act__jv_num(%s): %a, strtod %a\n", text, a, want);
        }
        int64_t x = 1, y = 2;
        ra = act__jv_i64(v, &x);
        rb = act__jv_i64(&slow, &y);
        if (ra != rb || (ra && x != y)) {
            if (bad_i64++ < 5)
                fprintf(stderr, "act__jv_i64(%s): %d %lld fast, %d %lld text\n", text,
                        ra, (long long)x, rb, (long long)y);
        }
        x = 1, y = 1;
        ra = act__jv_us_ns(v, &x);
        rb = act__jv_us_ns(&slow, &y);
        if (ra != rb || x != y) {
            if (bad_ns++ < 5)
                fprintf(stderr, "act__jv_us_ns(%s): %d %lld fast, %d %lld text\n", text,
                        ra, (long long)x, rb, (long long)y);
        }
        if (total <= nedge) { /* mfast exactly when <= 18 digits, no exponent */
            size_t digs = 0;
            int expo = 0;
            for (size_t j = 0; j < v->len; j++) {
                digs += v->s[j] >= '0' && v->s[j] <= '9';
                expo |= v->s[j] == 'e' || v->s[j] == 'E';
            }
            if (!CHECK_INT(v->mfast, !expo && digs <= 18))
                fprintf(stderr, "mfast of %s\n", text);
        }
    }
    CHECK_INT(k, 0);
    CHECK_INT(total, nedge + NGEN);
    CHECK_INT(bad_num, 0);
    CHECK_INT(bad_strtod, 0);
    CHECK_INT(bad_i64, 0);
    CHECK_INT(bad_ns, 0);
    CHECK(fast > total / 4); /* the fast path ran, often */
    done(&sr);
    free(doc);
}

static void test_big(void)
{
    size_t big = 3u << 20;
    char *doc = malloc(big + 4096);
    CHECK_FATAL(doc != NULL);
    char *p = doc;
    p += sprintf(p, "[{\"name\":\"");
    memset(p, 'x', big);
    p += big;
    p += sprintf(p, "\",\"ph\":\"i\"}");
    for (int i = 0; i < 100; i++)
        p += sprintf(p, ",{\"ts\":%d}", i);
    p += sprintf(p, "]");
    src s;
    open_pipe(&s, doc, (size_t)(p - doc), 65536 + 7, NULL);
    act__rd_item it;
    CHECK_INT(act__rd_next(s.r, &it), ACT__RD_EVENT);
    CHECK_EQ_U64(act__jv_get(it.v, "name")->len, big);
    int k, n = 0;
    while ((k = act__rd_next(s.r, &it)) > 0) {
        int64_t ts;
        CHECK(act__jv_i64(act__jv_get(it.v, "ts"), &ts) && ts == n);
        n++;
    }
    CHECK_INT(k, 0);
    CHECK_INT(n, 100);
    done(&s);

    /* The same with a 1 MiB limit: refused, saying why and where. */
    act__rd_opts o = {1u << 20, 0, 0};
    char msg[600];
    CHECK_INT(read_all(doc, (size_t)(p - doc), 65536, &o, NULL, msg, sizeof msg), -1);
    CHECK(strstr(msg, "item at byte offset 1 (event #0) is larger than the 1 MiB "
                      "limit") != NULL);
    free(doc);
}

/* ---- rejections ---------------------------------------------------------------------- */

static void test_invalid(void)
{
    BAD("", -1, "empty input");
    BAD("   \n", -1, "empty input");
    BAD("[1,]", 3, "expected a value");
    BAD("[1 2]", 3, "expected ',' or ']' after an event");
    BAD("{\"traceEvents\":[],}", 18, "expected a member name");
    BAD("{\"a\" 1}", 5, "expected ':'");
    BAD("[{\"a\":1,}]", 8, "expected a member name");
    BAD("[{\"a\":1 \"b\":2}]", 8, "expected ',' or '}'");
    BAD("[01]", 2, "expected ',' or ']'");
    BAD("[1.]", 3, "a digit must follow '.'");
    BAD("[1e+]", 4, "a digit must follow the exponent");
    BAD("[-]", 2, "invalid number");
    BAD("[+1]", 1, "expected a value");
    BAD("[NaN]", 1, "expected a value");
    BAD("[.5]", 1, "expected a value");
    BAD("[tru]", 1, "invalid literal");
    BAD("[nulL]", 1, "invalid literal");
    BAD("[\"a\\x\"]", 3, "invalid escape");
    BAD("[\"\\u12G4\"]", 2, "4 hex digits");
    BAD("[\"\\udc00\"]", 2, "lone low surrogate");
    BAD("[\"\\ud800x\"]", 2, "without its low surrogate");
    BAD("[\"\\ud800\\u0041\"]", 2, "without its low surrogate");
    BAD("[\"a\tb\"]", 3, "control character");
    BAD("[\"a\nb\"]", 3, "control character");
    BAD("[\"\xC0\x80\"]", 2, "invalid UTF-8"); /* overlong NUL */
    BAD("[\"\xE0\x80\xAF\"]", 2, "invalid UTF-8"); /* overlong / */
    BAD("[\"\xED\xA0\x80\"]", 2, "invalid UTF-8"); /* a surrogate */
    BAD("[\"\xF4\x90\x80\x80\"]", 2, "invalid UTF-8"); /* > U+10FFFF */
    BAD("[\"\xF5\x80\x80\x80\"]", 2, "invalid UTF-8");
    BAD("[\"\x80\"]", 2, "invalid UTF-8");
    BAD("[\"\xE2\x82\"]", 2, "invalid UTF-8"); /* cut sequence */
    BAD("\xEF\xBB\xBF[]", 0, "expected a value"); /* a BOM */
    BAD("[] x", 3, "unexpected data after the JSON document");
    BAD("[][]", 2, "unexpected data after the JSON document");
    BAD("{\"traceEvents\":[{}, {\"a\":[1,2}]}", 29, "(event #1): expected ',' or ']' after an array element");
    BAD("[\"\0\"]", 2, "control character");

    /* Every proper prefix of a valid trace is truncated. */
    static const char doc[] =
        "{\"traceName\":\"t\",\"traceEvents\":[{\"ph\":\"X\",\"name\":\"\\u00e9\xC3\xA9\","
        "\"ts\":-1.5e3,\"args\":{\"a\":[true,false,null]}}],\"x\":{}}";
    size_t len = sizeof doc - 1;
    CHECK_INT(read_all(doc, len, 1, NULL, NULL, NULL, 0), 0);
    for (size_t cut = 0; cut < len; cut++) {
        char msg[600];
        int k = read_all(doc, cut, 1, NULL, NULL, msg, sizeof msg);
        if (!CHECK_INT(k, -1) ||
            !CHECK(strstr(msg, cut ? "(truncated file?)" : "empty input")))
            fprintf(stderr, "prefix %zu: %s\n", cut, msg);
        if (cut) {
            char want[64];
            snprintf(want, sizeof want, "byte offset %zu ", cut);
            /* Where the input stops, or at the token cut short. */
            CHECK(strstr(msg, "byte offset ") != NULL);
        }
    }

    /* Deep nesting: refused at the limit, no recursion. */
    size_t depth = 200000;
    char *deep = malloc(2 * depth + 2);
    CHECK_FATAL(deep != NULL);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    bad(deep, 2 * depth, 1001, "nesting too deep");
    act__rd_opts o = {0, 300000, 0};
    CHECK_INT(read_all(deep, 2 * depth, 4096, &o, NULL, NULL, 0), 0);
    free(deep);
}

/* A FIFO: opened and read once, never reopened; a uint64 >= 2^63 in it. */
static void test_fifo(void)
{
    const char *path = cli_tmp("reader.fifo");
    unlink(path);
    CHECK_FATAL(mkfifo(path, 0600) == 0);
    static const char doc[] =
        "[{\"ph\":\"X\",\"args\":{\"big\":18446744073709551615}}]";
    pid_t child = fork();
    if (child == 0) {
        int fd = open(path, O_WRONLY);
        if (fd < 0 || write(fd, doc, sizeof doc - 1) != (ssize_t)(sizeof doc - 1))
            _exit(1);
        _exit(0);
    }
    int fd = open(path, O_RDONLY);
    CHECK_FATAL(fd >= 0);
    act__rd *r;
    CHECK_FATAL(act__rd_create(fd, NULL, &r) == 0);
    act__rd_item it;
    CHECK_INT(act__rd_next(r, &it), ACT__RD_EVENT);
    double d;
    CHECK(act__jv_num(act__jv_get(act__jv_get(it.v, "args"), "big"), &d) &&
          d == 18446744073709551615.0);
    CHECK_INT(act__rd_next(r, &it), 0);
    act__rd_destroy(r);
    close(fd);
    int st;
    waitpid(child, &st, 0);
    unlink(path);
}

/* ---- gzip ------------------------------------------------------------------------------ */

#ifdef CLI_TEST_HAVE_ZLIB
/* gzip @p n bytes of @p data (or @p n copies of byte @p fill when data is
 * NULL), between @p head and @p tail. */
static unsigned char *gz(const char *head, const char *data, size_t n, int fill,
                         const char *tail, size_t *outlen)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    CHECK_FATAL(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9,
                             Z_DEFAULT_STRATEGY) == Z_OK);
    size_t cap = n / 500 + 65536, len = 0;
    unsigned char *out = malloc(cap);
    static unsigned char chunk[1 << 20];
    memset(chunk, fill, sizeof chunk);
    const char *parts[3] = {head, data, tail};
    for (int part = 0; part < 3; part++) {
        size_t left = part == 1 ? n : strlen(parts[part]);
        const unsigned char *in = (const unsigned char *)parts[part];
        while (left || part == 2) {
            size_t k = left;
            if (part == 1 && !data)
                in = chunk, k = left < sizeof chunk ? left : sizeof chunk;
            z.next_in = (unsigned char *)in;
            z.avail_in = (uInt)k;
            int flush = part == 2 ? Z_FINISH : Z_NO_FLUSH;
            int zr;
            do {
                if (cap - len < 65536) {
                    cap *= 2;
                    out = realloc(out, cap);
                }
                z.next_out = out + len;
                z.avail_out = (uInt)(cap - len);
                zr = deflate(&z, flush);
                len = cap - z.avail_out;
            } while (z.avail_in || (flush == Z_FINISH && zr != Z_STREAM_END));
            if (data || part != 1)
                in += k;
            left -= k;
            if (part == 2)
                break;
        }
    }
    deflateEnd(&z);
    *outlen = len;
    return out;
}

static void test_gzip(void)
{
    static const char doc[] = "{\"traceEvents\":[{\"ph\":\"i\"},{\"ph\":\"X\"}]}";
    size_t n;
    unsigned char *g = gz("", doc, sizeof doc - 1, 0, "", &n);
    uint64_t ev;
    char msg[600];
    CHECK_INT(read_all((char *)g, n, 7, NULL, &ev, msg, sizeof msg), 0);
    CHECK_EQ_U64(ev, 2);
    /* Two members one after the other (cat a.gz b.gz): one stream. */
    size_t n1, n2;
    unsigned char *a = gz("", "[{},", 4, 0, "", &n1);
    unsigned char *b = gz("", "{}]", 3, 0, "", &n2);
    unsigned char *ab = malloc(n1 + n2 + 8);
    memcpy(ab, a, n1);
    memcpy(ab + n1, b, n2);
    CHECK_INT(read_all((char *)ab, n1 + n2, 5, NULL, &ev, msg, sizeof msg), 0);
    CHECK_EQ_U64(ev, 2);
    memcpy(ab + n1 + n2, "junk", 4);
    CHECK_INT(read_all((char *)ab, n1 + n2 + 4, 5, NULL, &ev, msg, sizeof msg), -1);
    CHECK(strstr(msg, "trailing garbage") != NULL);
    /* Truncated, corrupt. */
    CHECK_INT(read_all((char *)g, n - 9, 7, NULL, &ev, msg, sizeof msg), -1);
    CHECK(strstr(msg, "truncated gzip data") != NULL);
    g[n - 6] ^= 0xff; /* the CRC */
    CHECK_INT(read_all((char *)g, n, 7, NULL, &ev, msg, sizeof msg), -1);
    CHECK(strstr(msg, "gzip data") != NULL);
    free(g);
    free(a);
    free(b);
    free(ab);

    /* Bombs: 256 MiB of 'a' in one string, and of NUL bytes, from a few
     * hundred kilobytes: refused early, in bounded memory, saying what happened. */
    size_t bomb = (size_t)256 << 20;
    g = gz("[\"", NULL, bomb, 'a', "\"]", &n);
    CHECK(n < bomb / 500);
    act__rd_opts o = {8u << 20, 0, 0};
    CHECK_INT(read_all((char *)g, n, 1 << 16, &o, NULL, msg, sizeof msg), -1);
    CHECK(strstr(msg, "is larger than the 8 MiB limit of one event or member "
                      "[gzip input") != NULL);
    free(g);
    g = gz("[", NULL, bomb, 0, "]", &n);
    CHECK_INT(read_all((char *)g, n, 1 << 16, NULL, NULL, msg, sizeof msg), -1);
    CHECK(strstr(msg, "invalid JSON at byte offset 1 (event #0): expected a value "
                      "[gzip input: offset in the decompressed data;") != NULL);
    free(g);
}
#endif

/* ---- differential: jansson -------------------------------------------------------------- */

#ifdef CLI_TEST_HAVE_JANSSON
static int same(const json_t *j, const act__jv *v, const char *where);

static int same_num(const json_t *j, const act__jv *v)
{
    if (v->type != ACT__J_NUMBER)
        return 0;
    if (json_is_integer(j)) {
        int64_t i;
        return act__jv_i64(v, &i) && i == json_integer_value(j);
    }
    double d;
    return json_is_real(j) && act__jv_num(v, &d) && d == json_real_value(j);
}

static int same(const json_t *j, const act__jv *v, const char *where)
{
    int ok = 1;
    if (!j) {
        fprintf(stderr, "%s: not in jansson's tree\n", where);
        return 0;
    }
    switch (json_typeof(j)) {
    case JSON_NULL: ok = v->type == ACT__J_NULL; break;
    case JSON_TRUE: ok = v->type == ACT__J_TRUE; break;
    case JSON_FALSE: ok = v->type == ACT__J_FALSE; break;
    case JSON_INTEGER:
    case JSON_REAL: ok = same_num(j, v); break;
    case JSON_STRING:
        ok = v->type == ACT__J_STRING && v->len == json_string_length(j) &&
             memcmp(v->s, json_string_value(j), v->len) == 0;
        break;
    case JSON_ARRAY: {
        ok = v->type == ACT__J_ARRAY && v->len == json_array_size(j);
        size_t i = 0;
        for (const act__jv *c = v->child; ok && c; c = c->next, i++)
            ok = same(json_array_get(j, i), c, where);
        break;
    }
    case JSON_OBJECT: {
        ok = v->type == ACT__J_OBJECT && json_object_size(j) <= v->len;
        const char *k;
        json_t *m;
        json_object_foreach((json_t *)j, k, m) {
            const act__jv *c = ok ? act__jv_get(v, k) : NULL;
            ok = ok && c && same(m, c, where);
        }
        break;
    }
    }
    if (!ok)
        fprintf(stderr, "%s: differs from jansson near %s\n", where,
                v->key ? v->key : "(element)");
    return ok;
}

/* Parse @p path with both, from the same bytes (read once: other tests
 * may rewrite their traces meanwhile); compare every item. */
static void differential(const char *path)
{
    size_t len = 0;
    char *text = cli_slurp(path, &len);
    if (!text)
        return; /* gone meanwhile */
    json_error_t e;
    json_t *root = json_loadb(text, len, JSON_ALLOW_NUL, &e);
    if (!root)
        root = json_loadb(text, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &e);
    int fd = memfd_create("differential", 0);
    CHECK_FATAL(fd >= 0);
    CHECK_FATAL(write(fd, text, len) == (ssize_t)len);
    lseek(fd, 0, SEEK_SET);
    free(text);
    act__rd *r;
    CHECK_FATAL(act__rd_create(fd, NULL, &r) == 0);
    act__rd_item it;
    int k;
    size_t nev = 0, nmem = 0;
    json_t *events = json_is_array(root) ? root : json_object_get(root, "traceEvents");
    int ok = 1;
    while ((k = act__rd_next(r, &it)) > 0) {
        if (!root)
            continue;
        if (k == ACT__RD_EVENT)
            ok &= same(json_array_get(events, nev++), it.v, path);
        else {
            nmem++;
            ok &= same(json_object_get(root, it.key), it.v, path);
        }
    }
    /* Both accept, or both refuse. */
    if (!CHECK((k == 0) == (root != NULL)))
        fprintf(stderr, "%s: jansson %s (%s), reader %s (%s)\n", path,
                root ? "accepts" : "refuses", root ? "" : e.text,
                k == 0 ? "accepts" : "refuses", act__rd_errmsg(r));
    if (root) {
        CHECK(ok);
        CHECK_EQ_U64(nev, json_array_size(events));
        if (json_is_object(root))
            CHECK_EQ_U64(nmem + 1, json_object_size(root));
    }
    act__rd_destroy(r);
    close(fd);
    json_decref(root);
}

static void test_differential(void)
{
    DIR *d = opendir(CLI_DATA);
    CHECK_FATAL(d != NULL);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 5, ".json") != 0)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", CLI_DATA, de->d_name);
        differential(path);
        n++;
    }
    closedir(d);
    CHECK(n >= 7);
    if (*ACT_KINETO_REF)
        differential(ACT_KINETO_REF);
    char path[1024];
    snprintf(path, sizeof path, "%s/cli_reader.json", ACT_TRACE_DIR);
    record_trace(path, NULL);
    differential(path);
    /* Every trace the other tests have written so far. */
    d = opendir(ACT_TRACE_DIR);
    n = 0;
    while (d && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 5, ".json") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", ACT_TRACE_DIR, de->d_name);
        differential(path);
        n++;
    }
    if (d)
        closedir(d);
    printf("differential: %d traces from %s\n", n, ACT_TRACE_DIR);
}
#endif

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* feeders of readers that stop early */
    test_values();
    test_number_fast();
    test_big();
    test_invalid();
    test_fifo();
#ifdef CLI_TEST_HAVE_ZLIB
    test_gzip();
#else
    char msg[600];
    CHECK_INT(read_all("\x1f\x8b\x08\x00", 4, 1, NULL, NULL, msg, sizeof msg), -1);
    CHECK(strstr(msg, "gzip-compressed input, but actrace was built without zlib") != NULL);
#endif
#ifdef CLI_TEST_HAVE_JANSSON
    test_differential();
#else
    printf("jansson not found: the differential test is skipped\n");
#endif
    return check_done();
}
