/* SPDX-License-Identifier: MIT */
/*
 * Trace loading and shared helpers for `actrace summary` and `actrace check`
 * (see trace_read.h). Input goes through zlib's gzread when zlib is there,
 * which reads plain files unchanged and gzip files decompressed, so a
 * ".json.gz" needs no special name; without zlib a gzip file is recognised
 * by its magic bytes and refused with a clear message.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef ACT_CLI_HAVE_ZLIB
#include <zlib.h>
#endif

#include "trace_read.h"

/* ---- allocation ------------------------------------------------------------ */

static void oom(void)
{
    fputs("actrace: out of memory\n", stderr);
    exit(1);
}

void *act_cli_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *act_cli_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom();
    return p;
}

void *act_cli_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom();
    return q;
}

char *act_cli_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(act_cli_xmalloc(n), s, n);
}

void act_cli_grow(void *v, size_t *cap, size_t need, size_t size)
{
    if (need < *cap)
        return;
    size_t ncap = *cap ? *cap : 16;
    while (ncap <= need) {
        if (ncap > SIZE_MAX / 2 / size)
            oom();
        ncap *= 2;
    }
    void **pv = v;
    *pv = act_cli_xrealloc(*pv, ncap * size);
    *cap = ncap;
}

/* ---- map ---------------------------------------------------------------------- */

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3u;
    }
    return h ^ (h >> 29);
}

static size_t find_slot(const act_cli_map *m, const char *key, size_t len)
{
    size_t j = hash(key, len) & (m->cap - 1);
    while (m->keys[j] &&
           (m->lens[j] != len || memcmp(m->keys[j], key, len) != 0))
        j = (j + 1) & (m->cap - 1);
    return j;
}

size_t *act_cli_map_get(const act_cli_map *m, const char *key, size_t len)
{
    if (!m->cap)
        return NULL;
    size_t j = find_slot(m, key, len);
    return m->keys[j] ? &m->vals[j] : NULL;
}

size_t *act_cli_map_put(act_cli_map *m, const char *key, size_t len,
                        size_t fresh, int *created)
{
    if ((m->n + 1) * 2 > m->cap) {
        act_cli_map old = *m;
        m->cap = old.cap ? old.cap * 2 : 64;
        m->keys = act_cli_xcalloc(m->cap, sizeof *m->keys);
        m->lens = act_cli_xcalloc(m->cap, sizeof *m->lens);
        m->vals = act_cli_xcalloc(m->cap, sizeof *m->vals);
        for (size_t i = 0; i < old.cap; i++) {
            if (!old.keys[i])
                continue;
            size_t j = find_slot(m, old.keys[i], old.lens[i]);
            m->keys[j] = old.keys[i];
            m->lens[j] = old.lens[i];
            m->vals[j] = old.vals[i];
        }
        free(old.keys);
        free(old.lens);
        free(old.vals);
    }
    size_t j = find_slot(m, key, len);
    if (created)
        *created = !m->keys[j];
    if (!m->keys[j]) {
        m->keys[j] = act_cli_xmalloc(len + 1);
        memcpy(m->keys[j], key, len);
        m->keys[j][len] = '\0';
        m->lens[j] = len;
        m->vals[j] = fresh;
        m->n++;
    }
    return &m->vals[j];
}

void act_cli_map_free(act_cli_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->lens);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

void act_cli_put_text(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
}

#ifdef ACT_CLI_HAVE_JANSSON

/* ---- loading ------------------------------------------------------------------ */

typedef struct reader {
#ifdef ACT_CLI_HAVE_ZLIB
    gzFile gz;
#else
    FILE *f;
    int first;   /* no byte read yet: look for gzip's magic */
    int gzipped; /* it was gzip: refused */
#endif
    int failed;
    int err; /* errno of a failed read */
} reader;

static size_t read_cb(void *buf, size_t len, void *data)
{
    reader *r = data;
#ifdef ACT_CLI_HAVE_ZLIB
    if (len > INT_MAX / 2)
        len = INT_MAX / 2;
    errno = 0;
    int n = gzread(r->gz, buf, (unsigned)len);
    if (n < 0) {
        r->failed = 1;
        r->err = errno;
        return (size_t)-1;
    }
    return (size_t)n;
#else
    errno = 0;
    size_t n = fread(buf, 1, len, r->f);
    if (n == 0 && ferror(r->f)) {
        r->failed = 1;
        r->err = errno ? errno : EIO;
        return (size_t)-1;
    }
    if (r->first && n > 0) {
        r->first = 0;
        /* fread fills what it can; two bytes are there unless the file is
         * shorter, and a one-byte file is not gzip. */
        const unsigned char *b = buf;
        if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
            r->gzipped = 1;
            r->failed = 1;
            return (size_t)-1;
        }
    }
    return n;
#endif
}

static int reader_open(reader *r, const char *path, char *msg, size_t msglen)
{
    memset(r, 0, sizeof *r);
    int stdin_ = strcmp(path, "-") == 0;
#ifdef ACT_CLI_HAVE_ZLIB
    if (stdin_) {
        int fd = dup(STDIN_FILENO);
        r->gz = fd >= 0 ? gzdopen(fd, "rb") : NULL;
        if (!r->gz && fd >= 0)
            close(fd);
    } else {
        r->gz = gzopen(path, "rb");
    }
    if (!r->gz) {
        snprintf(msg, msglen, "cannot open: %s",
                 errno ? strerror(errno) : "out of memory");
        return -1;
    }
    gzbuffer(r->gz, 1 << 16);
#else
    r->first = 1;
    r->f = stdin_ ? stdin : fopen(path, "rb");
    if (!r->f) {
        snprintf(msg, msglen, "cannot open: %s", strerror(errno));
        return -1;
    }
#endif
    return 0;
}

/* Close the reader; a read failure found now or before becomes @p msg and
 * -1 (it explains a parse error better than the parser can). */
static int reader_close(reader *r, char *msg, size_t msglen)
{
    int rc = 0;
#ifdef ACT_CLI_HAVE_ZLIB
    int zerr = Z_OK;
    const char *zmsg = gzerror(r->gz, &zerr);
    if (r->failed || zerr != Z_OK) {
        rc = -1;
        if (zerr == Z_ERRNO || (r->failed && zerr == Z_OK))
            snprintf(msg, msglen, "read error: %s",
                     strerror(r->err ? r->err : EIO));
        else if (zerr == Z_BUF_ERROR)
            snprintf(msg, msglen,
                     "truncated gzip data (unexpected end of file)");
        else
            snprintf(msg, msglen, "bad gzip data: %s", zmsg);
    }
    gzclose(r->gz);
#else
    if (r->gzipped) {
        snprintf(msg, msglen,
                 "gzip-compressed input, but actrace was built without zlib "
                 "(gunzip it first)");
        rc = -1;
    } else if (r->failed) {
        snprintf(msg, msglen, "read error: %s", strerror(r->err));
        rc = -1;
    }
    if (r->f != stdin)
        fclose(r->f);
#endif
    return rc;
}

static json_t *load_once(const char *path, size_t flags, json_error_t *jerr,
                         int *read_failed, char *msg, size_t msglen)
{
    reader r;
    *read_failed = 1;
    if (reader_open(&r, path, msg, msglen) != 0)
        return NULL;
    json_t *root = json_load_callback(read_cb, &r, flags, jerr);
    if (reader_close(&r, msg, msglen) != 0) {
        json_decref(root);
        return NULL;
    }
    *read_failed = 0;
    return root;
}

json_t *act_cli_trace_load(const char *path, char *msg, size_t msglen)
{
    json_error_t jerr;
    int read_failed;
    /* NUL in strings is valid JSON (actrace writes "\u0000" for a NUL byte
     * in an arg); names are then seen up to the NUL. */
    size_t flags = JSON_ALLOW_NUL;
    json_t *root = load_once(path, flags, &jerr, &read_failed, msg, msglen);
#if JANSSON_VERSION_HEX >= 0x020b00
    /* Integers beyond int64 are valid JSON: read them as doubles, as a
     * JavaScript consumer would (not possible again from standard input). */
    if (!root && !read_failed &&
        json_error_code(&jerr) == json_error_numeric_overflow &&
        strcmp(path, "-") != 0)
        root = load_once(path, flags | JSON_DECODE_INT_AS_REAL, &jerr,
                         &read_failed, msg, msglen);
#endif
    if (!root && !read_failed) {
        int premature = 0;
#if JANSSON_VERSION_HEX >= 0x020b00
        premature =
            json_error_code(&jerr) == json_error_premature_end_of_input;
#endif
        if (strstr(jerr.text, "end of file") ||
            strstr(jerr.text, "premature end"))
            premature = 1;
        snprintf(msg, msglen, "invalid JSON at line %d, column %d: %s%s",
                 jerr.line, jerr.column, jerr.text,
                 premature ? " (truncated file?)" : "");
    }
    return root;
}

json_t *act_cli_trace_events(json_t *root)
{
    if (json_is_array(root))
        return root;
    json_t *ev = json_object_get(root, "traceEvents");
    return json_is_array(ev) ? ev : NULL;
}

/* ---- values ---------------------------------------------------------------------- */

int act_cli_json_id(const json_t *v, uint32_t *out)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0 || i > (json_int_t)UINT32_MAX)
            return 0;
        *out = (uint32_t)i;
        return 1;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!(d >= 0 && d <= (double)UINT32_MAX) || d != floor(d))
            return 0;
        *out = (uint32_t)d;
        return 1;
    }
    return 0;
}

int act_cli_json_ns(const json_t *v, int64_t *out)
{
    if (!json_is_number(v))
        return 0;
    double d = json_number_value(v);
    if (!isfinite(d) || d > 9.2e12 || d < -9.2e12)
        return 0;
    *out = (int64_t)llround(d * 1000.0);
    return 1;
}

/* Copy @p s into @p buf (size @p len >= 4), cut with "..." if too long. */
static char *cut(char *buf, size_t len, const char *s)
{
    size_t n = strlen(s);
    if (n < len) {
        memcpy(buf, s, n + 1);
    } else {
        memcpy(buf, s, len - 4);
        memcpy(buf + len - 4, "...", 4);
    }
    return buf;
}

char *act_cli_json_text(const json_t *v, char *buf, size_t len)
{
    char tmp[64];
    if (len < 8) {
        if (len)
            buf[0] = '\0';
        return buf;
    }
    if (!v)
        return cut(buf, len, "(missing)");
    switch (json_typeof(v)) {
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v), o = 0;
        buf[o++] = '"';
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)s[i];
            char e[8];
            if (c == '"' || c == '\\')
                snprintf(e, sizeof e, "\\%c", c);
            else if (c < 0x20 || c == 0x7f)
                snprintf(e, sizeof e, "\\u%04x", c);
            else
                snprintf(e, sizeof e, "%c", c);
            size_t el = strlen(e);
            if (o + el + 5 > len) { /* room for ..." and NUL */
                memcpy(buf + o, "...", 3);
                o += 3;
                break;
            }
            memcpy(buf + o, e, el);
            o += el;
        }
        buf[o++] = '"';
        buf[o] = '\0';
        return buf;
    }
    case JSON_INTEGER:
        snprintf(tmp, sizeof tmp, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(v));
        return cut(buf, len, tmp);
    case JSON_REAL: {
        double d = json_real_value(v);
        snprintf(tmp, sizeof tmp, "%.15g", d);
        if (strtod(tmp, NULL) != d)
            snprintf(tmp, sizeof tmp, "%.17g", d);
        return cut(buf, len, tmp);
    }
    case JSON_TRUE: return cut(buf, len, "true");
    case JSON_FALSE: return cut(buf, len, "false");
    case JSON_NULL: return cut(buf, len, "null");
    default: {
        char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!s)
            oom();
        cut(buf, len, s);
        free(s);
        return buf;
    }
    }
}

#endif /* ACT_CLI_HAVE_JANSSON */
