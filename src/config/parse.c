/* SPDX-License-Identifier: MIT */
/*
 * The config parser: Kineto's line syntax (one KEY = VALUE per line, '#'
 * starts a comment, keys case-sensitive, both sides trimmed), checked per
 * key, applied all-or-nothing.
 *
 * Every line is checked even after an error so that a caller asking for all
 * errors (opts->on_error) gets them in one pass; what was checked is staged
 * and only moved into the config when the whole text is valid. The move
 * cannot fail: all memory is reserved before it starts.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "config_impl.h"

/* Kineto refuses a PROFILE_START_TIME older than this (kMaxRequestAge). */
#define MAX_START_AGE_MS INT64_C(10000)

typedef struct staged {
    char *key;
    char *value;
    int def;
    act_activity_set types; /* ACTIVITY_TYPES only */
} staged;

typedef struct pctx {
    act_config_parse_opts o;
    act_parse_error *err; /* caller's: receives the first error */
    int first_code;
    staged *st;
    size_t n, cap;
} pctx;

/* ---- diagnostics ------------------------------------------------------- */

/* Copy at most 40 bytes of @p s for a message, escaping what is not
 * printable ASCII, so a message is always valid text. */
static void quote(char *dst, size_t cap, const char *s, size_t n)
{
    size_t o = 0, i = 0;
    for (; i < n && i < 40 && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f)
            dst[o++] = (char)c;
        else
            o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", c);
    }
    if (i < n && o + 4 < cap) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    dst[o] = '\0';
}

#if defined(__GNUC__) || defined(__clang__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

static void fill(act_parse_error *e, int code, int line, int col,
                 const char *key, size_t keylen, const char *fmt, va_list ap)
    PRINTF_LIKE(7, 0);
static void fill(act_parse_error *e, int code, int line, int col,
                 const char *key, size_t keylen, const char *fmt, va_list ap)
{
    memset(e, 0, sizeof *e);
    e->code = code;
    e->line = line;
    e->column = col;
    if (key) {
        size_t k = keylen < sizeof e->key - 1 ? keylen : sizeof e->key - 1;
        memcpy(e->key, key, k);
        e->key[k] = '\0';
    }
    vsnprintf(e->message, sizeof e->message, fmt, ap);
}

static void report(pctx *c, int code, int line, int col, const char *key,
                   size_t keylen, const char *fmt, ...) PRINTF_LIKE(7, 8);
static void report(pctx *c, int code, int line, int col, const char *key,
                   size_t keylen, const char *fmt, ...)
{
    act_parse_error e;
    va_list ap;
    va_start(ap, fmt);
    fill(&e, code, line, col, key, keylen, fmt, ap);
    va_end(ap);
    if (c->first_code == 0) {
        c->first_code = code;
        if (c->err)
            *c->err = e;
    }
    if (c->o.on_error)
        c->o.on_error(c->o.user, &e);
}

static void warn(pctx *c, int code, int line, int col, const char *key,
                 size_t keylen, const char *fmt, ...) PRINTF_LIKE(7, 8);
static void warn(pctx *c, int code, int line, int col, const char *key,
                 size_t keylen, const char *fmt, ...)
{
    act_parse_error e;
    va_list ap;
    va_start(ap, fmt);
    fill(&e, code, line, col, key, keylen, fmt, ap);
    va_end(ap);
    if (c->o.on_warning)
        c->o.on_warning(c->o.user, &e);
    else
        act_log(ACT_LOG_WARN, "config line %d, column %d: %s", line, col,
                e.message);
}

/* ---- values ------------------------------------------------------------ */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Trim blanks around [*s, *s + *n). */
static void trim(const char **s, size_t *n)
{
    while (*n && ACT__BLANK((*s)[0])) {
        (*s)++;
        (*n)--;
    }
    while (*n && ACT__BLANK((*s)[*n - 1]))
        (*n)--;
}

/* Check a whole number for key @p d; reports and returns non-zero if bad.
 * @p col is the column of @p v. */
static int check_int(pctx *c, const act__key_def *d, int line, int col,
                     const char *v, size_t n)
{
    char q[200];
    int64_t x;
    /* Negative numbers parse, so that "-1" is reported as out of range. */
    int rc = act__config_parse_i64(v, n, 1, &x);
    quote(q, sizeof q, v, n);
    if (rc == ACT_EPARSE) {
        report(c, ACT_EPARSE, line, col, d->name, strlen(d->name),
               "invalid integer '%s' for %s: expected a whole number in "
               "[%lld, %lld]",
               q, d->name, (long long)d->min, (long long)d->max);
        return 1;
    }
    if (rc != 0 || x < d->min || x > d->max) {
        report(c, ACT_ERANGE, line, col, d->name, strlen(d->name),
               "%s = %s is out of range: expected a whole number in "
               "[%lld, %lld]",
               d->name, q, (long long)d->min, (long long)d->max);
        return 1;
    }
    if (d->kind == ACT__K_TIME && x != 0 && now_ms() - x > MAX_START_AGE_MS) {
        report(c, ACT_ERANGE, line, col, d->name, strlen(d->name),
               "%s = %s is more than %lld s in the past (milliseconds since "
               "the Unix epoch expected, 0 for none)",
               d->name, q, (long long)(MAX_START_AGE_MS / 1000));
        return 1;
    }
    return 0;
}

/* Comma list: calls @p item for each trimmed item with its column; returns
 * the number of bad items. @p skip_empty: empty items are allowed. */
typedef int (*item_fn)(pctx *c, const act__key_def *d, int line, int col,
                       const char *v, size_t n, void *arg);

static int each_item(pctx *c, const act__key_def *d, int line, int col,
                     const char *v, size_t n, int skip_empty, item_fn fn,
                     void *arg)
{
    int bad = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && v[i] != ',')
            continue;
        const char *it = v + start;
        size_t len = i - start;
        size_t lead = 0;
        while (lead < len && ACT__BLANK(it[lead]))
            lead++;
        it += lead;
        len -= lead;
        trim(&it, &len);
        int icol = col + (int)(start + lead);
        if (len == 0) {
            if (!skip_empty) {
                report(c, ACT_EPARSE, line, icol, d->name, strlen(d->name),
                       "empty item in the list of %s", d->name);
                bad++;
            }
        } else {
            bad += fn(c, d, line, icol, it, len, arg);
        }
        start = i + 1;
    }
    return bad;
}

static int type_item(pctx *c, const act__key_def *d, int line, int col,
                     const char *v, size_t n, void *arg)
{
    act_activity_type t;
    if (act_activity_type_parse(v, n, &t) != 0) {
        char q[200];
        quote(q, sizeof q, v, n);
        report(c, ACT_EUNKNOWN, line, col, d->name, strlen(d->name),
               "unknown activity type '%s' in %s (see 'actrace types')", q,
               d->name);
        return 1;
    }
    act_activity_set_add(arg, t);
    return 0;
}

static int int_item(pctx *c, const act__key_def *d, int line, int col,
                    const char *v, size_t n, void *arg)
{
    return check_int(c, d, line, col, v, n);
}

/* Check a known key's value; returns 0 and sets *enum_word for enums, or
 * non-zero after reporting. */
static int check_value(pctx *c, const act__key_def *d, int line, int col,
                       const char *v, size_t n, act_activity_set *types,
                       const char **enum_word)
{
    char q[200];
    switch (d->kind) {
    case ACT__K_INT:
    case ACT__K_TIME:
        return check_int(c, d, line, col, v, n);
    case ACT__K_BOOL:
        if (act__config_parse_bool(v, n) < 0) {
            quote(q, sizeof q, v, n);
            report(c, ACT_EPARSE, line, col, d->name, strlen(d->name),
                   "invalid boolean '%s' for %s: expected one of y, n, yes, "
                   "no, t, f, true, false, 1, 0",
                   q, d->name);
            return 1;
        }
        return 0;
    case ACT__K_STR:
    case ACT__K_LIST:
        return 0;
    case ACT__K_INT_LIST:
        return n ? each_item(c, d, line, col, v, n, 0, int_item, NULL) : 0;
    case ACT__K_TYPES: {
        act_activity_set_clear(types);
        int bad = each_item(c, d, line, col, v, n, 1, type_item, types);
        /* Nothing selected (empty value, or only commas): the default set,
         * as in Kineto. */
        if (!bad && act_activity_set_count(types) == 0)
            act_activity_set_default(types);
        return bad;
    }
    case ACT__K_ENUM:
        for (const char *const *w = d->words; *w; w++) {
            if (strlen(*w) == n && strncasecmp(*w, v, n) == 0) {
                *enum_word = *w;
                return 0;
            }
        }
        quote(q, sizeof q, v, n);
        report(c, ACT_EPARSE, line, col, d->name, strlen(d->name),
               "invalid value '%s' for %s: expected %s%s%s", q, d->name,
               d->words[0], d->words[1] ? " or " : "",
               d->words[1] ? d->words[1] : "");
        return 1;
    }
    return 1;
}

/* ---- lines ------------------------------------------------------------- */

static int stage(pctx *c, const char *k, size_t kn, const char *v, size_t vn,
                 int def, const act_activity_set *types)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        staged *st = realloc(c->st, cap * sizeof *st);
        if (!st)
            return ACT_ENOMEM;
        c->st = st;
        c->cap = cap;
    }
    staged *s = &c->st[c->n];
    s->key = strndup(k, kn);
    s->value = strndup(v, vn);
    if (!s->key || !s->value) {
        free(s->key);
        free(s->value);
        return ACT_ENOMEM;
    }
    s->def = def;
    if (types)
        s->types = *types;
    c->n++;
    return 0;
}

static int key_char(unsigned char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
           (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-';
}

/* One line without its '\n'. Returns ACT_ENOMEM or 0 (errors in the text
 * are reported, not returned). */
static int parse_line(pctx *c, int line, const char *p, size_t len)
{
    /* '#' starts a comment anywhere, as in Kineto. */
    const char *hash = len ? memchr(p, '#', len) : NULL;
    if (hash)
        len = (size_t)(hash - p);
    const char *nul = memchr(p, '\0', len);
    if (nul) {
        report(c, ACT_EPARSE, line, (int)(nul - p) + 1, NULL, 0,
               "NUL byte in the line");
        return 0;
    }
    size_t first = 0;
    while (first < len && ACT__BLANK(p[first]))
        first++;
    if (first == len)
        return 0; /* blank or comment-only */

    const char *eq = memchr(p, '=', len);
    if (!eq) {
        report(c, ACT_EPARSE, line, (int)first + 1, NULL, 0,
               "expected 'KEY = VALUE' (no '=' on the line)");
        return 0;
    }
    const char *eq2 = memchr(eq + 1, '=', len - (size_t)(eq + 1 - p));
    if (eq2) {
        report(c, ACT_EPARSE, line, (int)(eq2 - p) + 1, NULL, 0,
               "expected 'KEY = VALUE': a second '=' (one setting per "
               "line)");
        return 0;
    }
    const char *k = p;
    size_t kn = (size_t)(eq - p);
    trim(&k, &kn);
    const char *v = eq + 1;
    size_t vn = len - (size_t)(eq + 1 - p);
    trim(&v, &vn);
    int kcol = (int)(k - p) + 1;
    int vcol = vn ? (int)(v - p) + 1 : (int)(eq - p) + 2;
    if (kn == 0) {
        report(c, ACT_EPARSE, line, (int)(eq - p) + 1, NULL, 0,
               "expected 'KEY = VALUE': no key before '='");
        return 0;
    }
    for (size_t i = 0; i < kn; i++) {
        if (!key_char((unsigned char)k[i])) {
            char q[200];
            quote(q, sizeof q, k, kn);
            report(c, ACT_EPARSE, line, kcol + (int)i, k, kn,
                   "invalid key '%s': keys are letters, digits, '_', '.' "
                   "and '-'",
                   q);
            return 0;
        }
    }

    int def = act__config_key_find(k, kn);
    if (def < 0) {
        char q[200];
        quote(q, sizeof q, k, kn);
        if (c->o.flags & ACT_CONFIG_STRICT) {
            report(c, ACT_EUNKNOWN, line, kcol, k, kn, "unknown key '%s'", q);
            return 0;
        }
        if (!(c->o.flags & ACT_CONFIG_QUIET_UNKNOWN))
            warn(c, ACT_EUNKNOWN, line, kcol, k, kn,
                 "unknown key '%s' (kept for plugins)", q);
        return stage(c, k, kn, v, vn, -1, NULL);
    }
    const act__key_def *d = &act__config_keys[def];
    act_activity_set types;
    const char *word = NULL;
    if (check_value(c, d, line, vcol, v, vn, &types, &word))
        return 0;
    if (word)
        return stage(c, k, kn, word, strlen(word), def, NULL);
    return stage(c, k, kn, v, vn, def, d->kind == ACT__K_TYPES ? &types : NULL);
}

/* ---- applying ---------------------------------------------------------- */

static void free_staged(pctx *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->st[i].key);
        free(c->st[i].value);
    }
    free(c->st);
}

/* Move the staged settings into @p cfg. Reserves first, then cannot fail. */
static int apply(pctx *c, act_config *cfg)
{
    if (cfg->n + c->n > cfg->cap) {
        size_t cap = cfg->cap ? cfg->cap : 16;
        while (cap < cfg->n + c->n)
            cap *= 2;
        act__config_entry *e = realloc(cfg->e, cap * sizeof *e);
        if (!e)
            return ACT_ENOMEM;
        cfg->e = e;
        cfg->cap = cap;
    }
    if (act__config_index_reserve(cfg, cfg->n + c->n) != 0)
        return ACT_ENOMEM;
    for (size_t i = 0; i < c->n; i++) {
        staged *s = &c->st[i];
        act__config_entry *e =
            (act__config_entry *)act__config_entry_find(cfg, s->key);
        if (e) {
            free(e->value);
            free(s->key);
        } else {
            e = &cfg->e[cfg->n++];
            e->key = s->key;
            e->def = s->def;
            e->read = 0;
            act__config_index_add(cfg, cfg->n - 1);
        }
        e->value = s->value;
        e->seq = ++cfg->seq;
        if (s->def >= 0 && act__config_keys[s->def].kind == ACT__K_TYPES)
            cfg->types = s->types;
        s->key = s->value = NULL;
    }
    return 0;
}

/* Copy the caller's options, honouring struct_size both ways. */
static int read_opts(const act_config_parse_opts *in, act_config_parse_opts *o)
{
    memset(o, 0, sizeof *o);
    if (!in)
        return 0;
    size_t sz = in->struct_size;
    if (sz < sizeof(uint32_t))
        return ACT_EINVAL;
    if (sz > sizeof *o) {
        /* A newer caller: its unknown tail must be zero. */
        const unsigned char *b = (const unsigned char *)in;
        for (size_t i = sizeof *o; i < sz; i++)
            if (b[i])
                return ACT_EINVAL;
        sz = sizeof *o;
    }
    memcpy(o, in, sz);
    return 0;
}

int act_config_parse(const char *text, size_t len,
                     const act_config_parse_opts *opts, act_config **config,
                     act_parse_error *err)
{
    pctx c;
    memset(&c, 0, sizeof c);
    if (err)
        memset(err, 0, sizeof *err);
    int rc = read_opts(opts, &c.o);
    if (rc == 0 && (!config || (!text && len)))
        rc = ACT_EINVAL;
    if (rc) {
        if (err) {
            err->code = rc;
            snprintf(err->message, sizeof err->message,
                     "invalid arguments to act_config_parse");
        }
        return rc;
    }
    c.err = err;
    if (!text)
        text = ""; /* len is 0: memchr() and friends want a real pointer */

    int line = 1;
    size_t start = 0;
    for (size_t i = 0; i <= len && rc == 0; i++) {
        if (i < len && text[i] != '\n')
            continue;
        rc = parse_line(&c, line++, text + start, i - start);
        start = i + 1;
    }

    act_config *created = NULL;
    if (rc == 0 && c.first_code == 0 && !*config) {
        rc = act_config_create(&created);
    }
    if (rc == 0 && c.first_code == 0)
        rc = apply(&c, created ? created : *config);
    free_staged(&c);
    if (rc) {
        act_config_destroy(created);
        if (err) {
            memset(err, 0, sizeof *err);
            err->code = rc;
            snprintf(err->message, sizeof err->message, "%s",
                     act_strerror(rc));
        }
        return rc;
    }
    if (c.first_code)
        return c.first_code;
    if (created)
        *config = created;
    return 0;
}

/* ---- files and the environment ----------------------------------------- */

typedef struct file_ctx {
    const act_config_parse_opts *outer;
    const char *path;
} file_ctx;

static void prefix(act_parse_error *e, const char *path)
{
    /* "PATH: message", truncated to the field (a long path is legal). */
    char msg[sizeof e->message];
    size_t cap = sizeof msg - 1, o = 0;
    size_t pn = strlen(path), mn = strlen(e->message);
    size_t take = pn < cap ? pn : cap;
    memcpy(msg, path, take);
    o = take;
    if (o + 2 <= cap) {
        memcpy(msg + o, ": ", 2);
        o += 2;
    }
    take = mn < cap - o ? mn : cap - o;
    memcpy(msg + o, e->message, take);
    o += take;
    msg[o] = '\0';
    memcpy(e->message, msg, sizeof msg);
}

static void file_on_error(void *user, const act_parse_error *err)
{
    file_ctx *f = user;
    act_parse_error e = *err;
    prefix(&e, f->path);
    f->outer->on_error(f->outer->user, &e);
}

static void file_on_warning(void *user, const act_parse_error *err)
{
    file_ctx *f = user;
    act_parse_error e = *err;
    prefix(&e, f->path);
    if (f->outer->on_warning)
        f->outer->on_warning(f->outer->user, &e);
    else
        act_log(ACT_LOG_WARN, "config %s line %d, column %d: %s", f->path,
                e.line, e.column, err->message);
}

int act_config_parse_file(const char *path, const act_config_parse_opts *opts,
                          act_config **config, act_parse_error *err)
{
    act_config_parse_opts o;
    int rc = read_opts(opts, &o);
    if (err)
        memset(err, 0, sizeof *err);
    if (rc == 0 && (!path || !config))
        rc = ACT_EINVAL;
    if (rc) {
        if (err)
            err->code = rc;
        return rc;
    }
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0;
    int saved = 0;
    int too_big = 0;
    if (f) {
        size_t cap = 0;
        for (;;) {
            if (len > ACT__CONFIG_FILE_MAX) {
                /* /dev/zero or a runaway file: stop before memory does. */
                too_big = 1;
                rc = ACT_ELIMIT;
                break;
            }
            if (len == cap) {
                cap = cap ? 2 * cap : 4096;
                if (cap > ACT__CONFIG_FILE_MAX + 1)
                    cap = ACT__CONFIG_FILE_MAX + 1;
                char *nb = realloc(buf, cap);
                if (!nb) {
                    rc = ACT_ENOMEM;
                    break;
                }
                buf = nb;
            }
            size_t got = fread(buf + len, 1, cap - len, f);
            len += got;
            if (got == 0)
                break;
        }
        if (ferror(f)) {
            saved = errno;
            rc = ACT_EIO;
        }
        fclose(f);
    } else {
        saved = errno;
        rc = ACT_EIO;
    }
    if (rc) {
        free(buf);
        if (err) {
            err->code = rc;
            if (too_big)
                snprintf(err->message, sizeof err->message,
                         "config file %s is larger than %u bytes (16 MiB, "
                         "the limit for a config)", path,
                         (unsigned)ACT__CONFIG_FILE_MAX);
            else
                snprintf(err->message, sizeof err->message,
                         "cannot read config file %s: %s", path,
                         rc == ACT_EIO ? strerror(saved) : act_strerror(rc));
        }
        return rc;
    }

    act_config_parse_opts inner = o;
    file_ctx fc = {&o, path};
    inner.struct_size = sizeof inner;
    inner.user = &fc;
    inner.on_error = o.on_error ? file_on_error : NULL;
    inner.on_warning = file_on_warning;
    rc = act_config_parse(buf, len, &inner, config, err);
    free(buf);
    if (rc && err && err->line > 0)
        prefix(err, path);
    return rc;
}

int act_config_load_env(const act_config_parse_opts *opts,
                        act_config **config, act_parse_error *err)
{
    if (!config)
        return ACT_EINVAL;
    if (err)
        memset(err, 0, sizeof *err);
    const char *path = secure_getenv("ACTRACE_CONFIG");
    if (path && *path)
        return act_config_parse_file(path, opts, config, err);
    if (*config)
        return 0;
    return act_config_create(config);
}
