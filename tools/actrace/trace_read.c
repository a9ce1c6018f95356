/* SPDX-License-Identifier: MIT */
/*
 * Trace opening and shared helpers for `actrace summary` and `actrace check`
 * (see trace_read.h). The reader (src/reader) recognises gzip by its magic
 * bytes, so a ".json.gz" needs no special name; without zlib it refuses
 * gzip input with a clear message.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcntl.h>

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

void act_cli_sort(void *base, size_t n, size_t size,
                  int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
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
    size_t ncap = *cap ? *cap : 4; /* small: some arrays exist per thread */
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
    /* 8 bytes a step, then a final mix (keys are short). */
    uint64_t h = 0x9E3779B97F4A7C15u ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdu;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53u;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdu;
    return h ^ (h >> 32);
}

/* Equal bytes; short keys (most are) without a call to memcmp. */
static inline int same_bytes(const char *a, const char *b, size_t n)
{
    if (n > 16)
        return memcmp(a, b, n) == 0;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

static size_t find_slot(const act_cli_map *m, const char *key, size_t len,
                        uint64_t h)
{
    size_t j = (size_t)h & (m->cap - 1);
    uint32_t hh = (uint32_t)(h >> 32);
    for (;;) {
        const act_cli_slot *sl = &m->s[j];
        if (!sl->key || (sl->hash == hh && sl->len == len &&
                         same_bytes(sl->key, key, len)))
            return j;
        j = (j + 1) & (m->cap - 1);
    }
}

const char *act_cli_map_key(const act_cli_map *m, const char *key, size_t len)
{
    if (!m->cap)
        return NULL;
    return m->s[find_slot(m, key, len, hash(key, len))].key;
}

size_t *act_cli_map_get(const act_cli_map *m, const char *key, size_t len)
{
    if (!m->cap)
        return NULL;
    size_t j = find_slot(m, key, len, hash(key, len));
    return m->s[j].key ? &m->s[j].val : NULL;
}

size_t *act_cli_map_put(act_cli_map *m, const char *key, size_t len,
                        size_t fresh, int *created)
{
    for (int r = 0; r < 4; r++) {
        size_t j = m->recent[r];
        if (j && m->s[j - 1].len == len && same_bytes(m->s[j - 1].key, key, len)) {
            if (created)
                *created = 0;
            return &m->s[j - 1].val;
        }
    }
    if ((m->n + 1) * 2 > m->cap) {
        act_cli_map old = *m;
        memset(m->recent, 0, sizeof m->recent);
        m->cap = old.cap ? old.cap * 2 : 64;
        m->s = act_cli_xcalloc(m->cap, sizeof *m->s);
        for (size_t i = 0; i < old.cap; i++) {
            if (!old.s[i].key)
                continue;
            /* Place by the stored hash bits and the key's rehash. */
            uint64_t h = hash(old.s[i].key, old.s[i].len);
            size_t j = (size_t)h & (m->cap - 1);
            while (m->s[j].key)
                j = (j + 1) & (m->cap - 1);
            m->s[j] = old.s[i];
        }
        free(old.s);
    }
    uint64_t h = hash(key, len);
    size_t j = find_slot(m, key, len, h);
    m->recent[m->next_recent++ & 3] = j + 1;
    act_cli_slot *sl = &m->s[j];
    if (created)
        *created = !sl->key;
    if (!sl->key) {
        sl->key = act_cli_xmalloc(len + 1);
        memcpy(sl->key, key, len);
        sl->key[len] = '\0';
        sl->len = (uint32_t)len;
        sl->hash = (uint32_t)(h >> 32);
        sl->val = fresh;
        m->n++;
    }
    return &sl->val;
}

void act_cli_map_free(act_cli_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->s[i].key);
    free(m->s);
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

/* ---- opening ------------------------------------------------------------------ */

int act_cli_trace_open(act_cli_trace *t, const char *path, char *msg,
                       size_t msglen)
{
    t->rd = NULL;
    t->fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (t->fd < 0) {
        snprintf(msg, msglen, "cannot open: %s", strerror(errno));
        return -1;
    }
    if (act__rd_create(t->fd, NULL, &t->rd) != 0)
        oom();
    return 0;
}

void act_cli_trace_close(act_cli_trace *t)
{
    act__rd_destroy(t->rd);
    t->rd = NULL;
    if (t->fd > STDIN_FILENO)
        close(t->fd);
    t->fd = -1;
}

/* ---- values ---------------------------------------------------------------------- */

int act_cli_json_id(const act__jv *v, uint32_t *out)
{
    int64_t i;
    if (act__jv_i64(v, &i)) {
        if (i < 0 || i > (int64_t)UINT32_MAX)
            return 0;
        *out = (uint32_t)i;
        return 1;
    }
    double d;
    if (!act__jv_num(v, &d))
        return 0;
    if (!(d >= 0 && d <= (double)UINT32_MAX) || d != floor(d))
        return 0;
    *out = (uint32_t)d;
    return 1;
}

int act_cli_json_ns(const act__jv *v, int64_t *out)
{
    return act__jv_us_ns(v, out);
}

/* Copy @p s into @p buf (size @p len >= 4), cut with "..." if too long. */
static char *cut(char *buf, size_t len, const char *s, size_t n)
{
    if (n < len) {
        memcpy(buf, s, n);
        buf[n] = '\0';
    } else {
        memcpy(buf, s, len - 4);
        memcpy(buf + len - 4, "...", 4);
    }
    return buf;
}

/* A growable text used to render containers. */
typedef struct txt {
    char *buf;
    size_t len, cap, limit;
} txt;

static void tput(txt *t, const char *s, size_t n)
{
    if (t->len >= t->limit)
        return;
    if (n > t->limit - t->len)
        n = t->limit - t->len;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
}

static void render(txt *t, const act__jv *v, unsigned depth)
{
    char tmp[16];
    if (t->len >= t->limit)
        return;
    switch (v->type) {
    case ACT__J_NULL: tput(t, "null", 4); break;
    case ACT__J_TRUE: tput(t, "true", 4); break;
    case ACT__J_FALSE: tput(t, "false", 5); break;
    case ACT__J_NUMBER: tput(t, v->s, v->len); break;
    case ACT__J_STRING:
        tput(t, "\"", 1);
        for (size_t i = 0; i < v->len && t->len < t->limit; i++) {
            unsigned char c = (unsigned char)v->s[i];
            if (c == '"' || c == '\\') {
                tmp[0] = '\\';
                tmp[1] = (char)c;
                tput(t, tmp, 2);
            } else if (c < 0x20 || c == 0x7f) {
                snprintf(tmp, sizeof tmp, "\\u%04x", c);
                tput(t, tmp, 6);
            } else {
                tput(t, (const char *)&c, 1);
            }
        }
        tput(t, "\"", 1);
        break;
    default: {
        int obj = v->type == ACT__J_OBJECT;
        tput(t, obj ? "{" : "[", 1);
        for (const act__jv *c = v->child; c && t->len < t->limit; c = c->next) {
            if (c != v->child)
                tput(t, ",", 1);
            if (obj) {
                act__jv k = {0};
                k.type = ACT__J_STRING;
                k.s = c->key;
                k.len = c->klen;
                render(t, &k, depth + 1);
                tput(t, ":", 1);
            }
            render(t, c, depth + 1);
        }
        tput(t, obj ? "}" : "]", 1);
    }
    }
}

char *act_cli_json_text(const act__jv *v, char *buf, size_t len)
{
    if (len < 8) {
        if (len)
            buf[0] = '\0';
        return buf;
    }
    if (!v)
        return cut(buf, len, "(missing)", 9);
    if (v->type == ACT__J_NUMBER) {
        /* As JavaScript would print a huge integer: 1e+20. */
        double d;
        if (v->integer && v->len > 18 && act__jv_num(v, &d)) {
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%.17g", d);
            return cut(buf, len, tmp, strlen(tmp));
        }
        return cut(buf, len, v->s, v->len);
    }
    /* Strings end with "..." inside the quotes when cut. */
    char *tb = act_cli_xmalloc(len + 8);
    txt t = {tb, 0, len + 8, len + 4};
    render(&t, v, 0);
    if (t.len >= len) {
        size_t keep = len - 5;
        memcpy(buf, tb, keep);
        if (v->type == ACT__J_STRING)
            memcpy(buf + keep, "...\"", 5);
        else
            memcpy(buf + keep, "...", 4);
    } else {
        memcpy(buf, tb, t.len);
        buf[t.len] = '\0';
    }
    free(tb);
    return buf;
}

void act_cli_json_str(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *e = p + n;
    fputc('"', f);
    while (p < e) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            p++;
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            fputc(c, f);
            p++;
        } else {
            /* Copy a valid UTF-8 sequence; replace anything else. */
            size_t k = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            int ok = c >= 0xC2 && c <= 0xF4 && (size_t)(e - p) >= k;
            if (ok) {
                unsigned char lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
                unsigned char hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
                ok = p[1] >= lo && p[1] <= hi;
                for (size_t i = 2; ok && i < k; i++)
                    ok = (p[i] & 0xC0) == 0x80;
            }
            if (ok) {
                fwrite(p, 1, k, f);
                p += k;
            } else {
                fputs("\xEF\xBF\xBD", f);
                p++;
            }
        }
    }
    fputc('"', f);
}

void act_cli_json_write(FILE *f, const act__jv *v)
{
    switch (v->type) {
    case ACT__J_NULL: fputs("null", f); break;
    case ACT__J_TRUE: fputs("true", f); break;
    case ACT__J_FALSE: fputs("false", f); break;
    case ACT__J_NUMBER: fwrite(v->s, 1, v->len, f); break;
    case ACT__J_STRING: act_cli_json_str(f, v->s, v->len); break;
    default: {
        int obj = v->type == ACT__J_OBJECT;
        fputc(obj ? '{' : '[', f);
        for (const act__jv *c = v->child; c; c = c->next) {
            if (c != v->child)
                fputc(',', f);
            if (obj) {
                act_cli_json_str(f, c->key, c->klen);
                fputc(':', f);
            }
            act_cli_json_write(f, c);
        }
        fputc(obj ? '}' : ']', f);
    }
    }
}

void act_cli_get_fields(const act__jv *e, act_cli_fields *f)
{
    memset(f, 0, sizeof *f);
    if (!e || e->type != ACT__J_OBJECT)
        return;
    for (const act__jv *v = e->child; v; v = v->next) {
        const char *k = v->key;
        switch (v->klen) {
        case 1:
            if (k[0] == 's')
                f->s = v;
            break;
        case 2:
            if (k[0] == 'p' && k[1] == 'h')
                f->ph = v;
            else if (k[0] == 't' && k[1] == 's')
                f->ts = v;
            else if (k[0] == 'i' && k[1] == 'd')
                f->id = v;
            else if (k[0] == 'b' && k[1] == 'p')
                f->bp = v;
            break;
        case 3:
            if (memcmp(k, "pid", 3) == 0)
                f->pid = v;
            else if (memcmp(k, "tid", 3) == 0)
                f->tid = v;
            else if (memcmp(k, "cat", 3) == 0)
                f->cat = v;
            else if (memcmp(k, "dur", 3) == 0)
                f->dur = v;
            break;
        case 4:
            if (memcmp(k, "name", 4) == 0)
                f->name = v;
            else if (memcmp(k, "args", 4) == 0)
                f->args = v;
            break;
        default: break;
        }
    }
}

int act_cli_over3(const act__jv *v)
{
    if (!v || v->type != ACT__J_NUMBER || v->integer)
        return 0;
    const char *p = v->s, *e = v->s + v->len, *dot = NULL;
    int expo = 0;
    for (const char *q = p; q < e; q++) {
        if (*q == '.')
            dot = q;
        else if (*q == 'e' || *q == 'E')
            expo = 1;
    }
    if (expo || !dot) {
        double d;
        act__jv_num(v, &d);
        double sc = d * 1000.0, r = nearbyint(sc);
        return fabs(sc - r) > fmax(1e-6, fabs(sc) * 2e-15);
    }
    for (const char *q = dot + 4; q < e; q++)
        if (*q != '0')
            return 1;
    return 0;
}

/* ---- progress on a terminal --------------------------------------------- */

void act_cli_progress(act_cli_progress_t *p, uint64_t bytes, int done)
{
    if (!p->tty)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    if (p->start == 0) {
        p->start = now;
        p->last = now;
        return;
    }
    if (done) {
        if (p->shown)
            fprintf(stderr, "\r%-60s\r", "");
        return;
    }
    if (now - p->start < 1.0 || now - p->last < 0.25)
        return;
    p->last = now;
    p->shown = 1;
    fprintf(stderr, "\r%s: %.1f MB read, %.0f MB/s ", p->what, bytes / 1e6,
            bytes / 1e6 / (now - p->start));
}

