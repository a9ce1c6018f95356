/* SPDX-License-Identifier: MIT */
/*
 * Every byte a user can supply produces a file a strict JSON parser
 * accepts: quotes, backslashes, control characters, invalid UTF-8 and
 * 1 MiB strings in names, arg keys and values, counter tracks and series.
 * Valid UTF-8 round-trips exactly; invalid UTF-8 is replaced, never
 * dropped silently. Also a .gz trace decompresses to the same document.
 */
#include <math.h>
#include <zlib.h>

#include "check.h"
#include "engine/trace_util.h"

static const char *const hostile[] = {
    "",
    "plain",
    "quote\" backslash\\ slash/",
    "\x01\x02\x1f\x7f control",
    "tab\there\nnewline\rcr\bbs\fff",
    "\xff\xfe invalid",
    "\xc0\xaf overlong",
    "\xed\xa0\x80 surrogate",
    "\xf4\x90\x80\x80 beyond U+10FFFF",
    "truncated \xe2\x82",
    "\xe2\x82\xac euro \xf0\x9f\x98\x80 emoji \xc3\xa9",
    "</script><script>alert(1)</script>",
    "\"},{\"ph\":\"X\",\"name\":\"injected",
};

int main(void)
{
    act_log_set_level(ACT_LOG_ERROR);
    act_session *s = tu_session(NULL);
    size_t n = sizeof hostile / sizeof *hostile;
    for (size_t i = 0; i < n; i++) {
        act_span_begin(ACT_CPU_OP, hostile[i]);
        act_arg_str(hostile[i], hostile[(i + 1) % n]);
        act_arg_double("inf", INFINITY);
        act_span_end();
        act_counter(hostile[i], hostile[(i + 3) % n], (double)i);
    }
    /* A name with every byte value 1..255. */
    char all[256];
    for (int b = 1; b < 256; b++)
        all[b - 1] = (char)b;
    all[255] = '\0';
    act_instant(ACT_CPU_INSTANT_EVENT, all);
    /* 1 MiB of random bytes as a name and as an arg value. */
    size_t big = 1u << 20;
    char *rnd = malloc(big + 1);
    CHECK_FATAL(rnd != NULL);
    uint32_t x = 12345;
    for (size_t i = 0; i < big; i++) {
        x = x * 1103515245u + 12345u;
        rnd[i] = (char)((x >> 16) | 1); /* no NUL */
    }
    rnd[big] = '\0';
    act_span_begin(ACT_CPU_OP, rnd);
    act_arg_strn("bytes with NUL", "a\0b", 3);
    act_arg_str("big", rnd);
    act_span_end();
    /* 1 MiB of valid UTF-8 round-trips. */
    char *utf = malloc(big + 1);
    CHECK_FATAL(utf != NULL);
    for (size_t i = 0; i + 3 <= big; i += 3)
        memcpy(utf + i, "\xe2\x82\xac", 3);
    utf[big - big % 3] = '\0';
    act_instant(ACT_CPU_INSTANT_EVENT, utf);

    const char *path = tu_trace_path("hostile.json");
    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path); /* exits on invalid JSON */
    CHECK(tu_find(root, "X", "plain") != NULL);
    CHECK(tu_find(root, "X", "quote\" backslash\\ slash/") != NULL);
    CHECK(tu_find(root, "X", "tab\there\nnewline\rcr\bbs\fff") != NULL);
    CHECK(tu_find(root, "X", "\xe2\x82\xac euro \xf0\x9f\x98\x80 emoji \xc3\xa9") != NULL);
    CHECK(tu_find(root, "X", "\"},{\"ph\":\"X\",\"name\":\"injected") != NULL);
    CHECK(tu_find(root, "i", utf) != NULL);
    /* Invalid UTF-8 became U+FFFD, the rest kept. */
    CHECK(tu_find(root, "X", "\xef\xbf\xbd\xef\xbf\xbd invalid") != NULL);
    CHECK(tu_find(root, "X", "truncated \xef\xbf\xbd") != NULL);
    json_t *e;
    size_t i;
    int saw_big = 0, saw_nul = 0, saw_all = 0;
    json_array_foreach(tu_events(root), i, e) {
        const char *nm = json_string_value(json_object_get(e, "name"));
        json_t *args = json_object_get(e, "args");
        if (nm && strlen(nm) >= big)
            saw_big = 1;
        json_t *v = json_object_get(args, "bytes with NUL");
        if (v && json_string_length(v) == 3 && memcmp(json_string_value(v), "a\0b", 3) == 0)
            saw_nul = 1;
        if (nm && strncmp(nm, "\x01\x02\x03", 3) == 0 && strlen(nm) > 120)
            saw_all = 1;
        json_t *inf = json_object_get(args, "inf");
        if (inf)
            CHECK(json_is_null(inf));
    }
    CHECK(saw_big);
    CHECK(saw_nul);
    CHECK(saw_all);
    json_decref(root);

    /* The same trace gzip-compressed. */
    char gz[4200];
    snprintf(gz, sizeof gz, "%s.gz", path);
    CHECK_OK(act_session_write(s, gz));
    gzFile g = gzopen(gz, "rb");
    CHECK_FATAL(g != NULL);
    size_t cap = 1 << 24, len = 0;
    char *buf = malloc(cap);
    int r;
    while ((r = gzread(g, buf + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)r;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    gzclose(g);
    size_t plain_len;
    char *plain = tu_slurp(path, &plain_len);
    CHECK_FATAL(plain != NULL);
    /* Identical but for traceName, which is the file's name. */
    CHECK_EQ_U64(len, plain_len + 3);
    char *tn = strstr(plain, "\"traceName\":\"hostile.json\"}");
    CHECK_FATAL(tn != NULL);
    size_t prefix = (size_t)(tn - plain);
    CHECK(len > prefix && memcmp(buf, plain, prefix) == 0);
    CHECK(memcmp(buf + prefix, "\"traceName\":\"hostile.json.gz\"}", 30) == 0);
    free(plain);
    free(buf);
    unlink(gz);
    free(rnd);
    free(utf);
    act_session_destroy(s);
    return check_done();
}
