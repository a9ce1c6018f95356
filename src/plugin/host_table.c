/* SPDX-License-Identifier: MIT */
/*
 * The host table: the functions a plugin calls. Each one checks what the
 * plugin passes (validate.c), counts and reports once what it refuses, and
 * hands only valid data to the engine services of internal.h. They are
 * thread-safe: a plugin may deliver from its own threads.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actrace/log.h"
#include "actrace/record.h"
#include "actrace/version.h"
#include "config/config_impl.h"
#include "plugin/host.h"

#define CSTR_MAX 4096u

static struct act_plugin_ctx *ctx_of(act_plugin_ctx *p)
{
    struct act_plugin_ctx *c = p;
    /* A stuck plugin's thread may call in after its session is gone, and
     * a fork()ed child through the context it inherited. */
    return c && c->magic == ACT__PLUGIN_MAGIC && c->fork_gen == act__fork_gen &&
                   !atomic_load_explicit(&c->dead, memory_order_acquire)
               ? c
               : NULL;
}

/* Copies a plugin struct that starts with its uint32_t struct_size into
 * @p dst (@p cap bytes): the first min(size, cap, avail) bytes, the rest
 * zeroed (@p avail: the bytes the plugin's element spans, the stride of its
 * array; 0 for a lone struct). Returns the size read once, which the copy
 * also holds, so checks and use see one value (a racing plugin thread
 * cannot change it in between). */
static uint32_t copy_in(void *dst, size_t cap, const void *src, size_t avail)
{
    uint32_t size;
    memcpy(&size, src, sizeof size);
    size_t take = size < cap ? size : cap;
    if (avail && take > avail)
        take = avail;
    if (take < sizeof size)
        take = sizeof size;
    memcpy(dst, src, take);
    memset((char *)dst + take, 0, cap - take);
    memcpy(dst, &size, sizeof size);
    return size;
}

void act__phost_reject(struct act_plugin_ctx *c, act__prej r, uint64_t n)
{
    if ((unsigned)r >= ACT__PREJ_COUNT || r == ACT__PREJ_NONE)
        r = ACT__PREJ_CALL;
    atomic_fetch_add_explicit(&c->rejected[r], n, memory_order_relaxed);
    uint32_t bit = 1u << r;
    uint32_t was = atomic_fetch_or_explicit(&c->reported, bit,
                                            memory_order_relaxed);
    if (!(was & bit))
        act_log(ACT_LOG_WARN,
                "plugin '%s' (%s): data rejected: %s (further cases are "
                "counted, not logged)",
                c->name, c->path, act__prej_text(r));
}

uint64_t act__phost_rejected(const struct act_plugin_ctx *c)
{
    uint64_t n = 0;
    for (int i = 0; i < ACT__PREJ_COUNT; i++)
        n += atomic_load_explicit(&c->rejected[i], memory_order_relaxed);
    return n;
}

/* Plugin log text kept per message (input bytes). */
#define LOG_TEXT_MAX 900u

size_t act__phost_log_text(char *dst, size_t cap, const char *s, size_t max)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0, i = 0;
    if (!cap)
        return 0;
    /* Scan at most @p max bytes: a missing NUL must not run off. */
    const char *nul = memchr(s, '\0', max);
    size_t n = nul ? (size_t)(nul - s) : max;
    while (i < n) {
        unsigned char ch = (unsigned char)s[i];
        size_t len = 1;
        int ok;
        if (ch >= 0x20 && ch < 0x7f) {
            ok = 1;
        } else if (ch < 0x80) {
            ok = 0; /* C0 controls (ESC, CR, LF, BEL...) and DEL */
        } else {
            len = ch >= 0xf0 ? 4 : ch >= 0xe0 ? 3 : 2;
            ok = i + len <= n && act__utf8_valid(s + i, len);
            /* C1 controls (U+0080..U+009F) act like ESC on some
             * terminals. */
            if (ok && ch == 0xc2 && (unsigned char)s[i + 1] < 0xa0)
                ok = 0;
            if (!ok)
                len = 1;
        }
        if (o + (ok ? len : 4) + 1 > cap)
            break;
        if (ok) {
            memcpy(dst + o, s + i, len);
            o += len;
        } else {
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[ch >> 4];
            dst[o++] = hex[ch & 15];
        }
        i += len;
    }
    dst[o] = '\0';
    return o;
}

static void h_log(act_plugin_ctx *p, int32_t level, const char *msg)
{
    struct act_plugin_ctx *c = ctx_of(p);
    if (!c)
        return;
    if (!msg) {
        act__phost_reject(c, ACT__PREJ_CALL, 1);
        return;
    }
    if (level < ACT_PLUGIN_LOG_DEBUG)
        level = ACT_PLUGIN_LOG_DEBUG;
    if (level > ACT_PLUGIN_LOG_ERROR)
        level = ACT_PLUGIN_LOG_ERROR;
    /* The escaped text is cut at a character boundary and fits act_log's
     * 1024-byte line with the prefix (a plugin name has 64 bytes at most),
     * so the line never ends in half a UTF-8 sequence. */
    char clean[LOG_TEXT_MAX];
    act__phost_log_text(clean, sizeof clean, msg, LOG_TEXT_MAX);
    act_log((act_log_level)level, "plugin '%s': %s", c->name, clean);
    if (level >= ACT_PLUGIN_LOG_WARN) {
        pthread_mutex_lock(&c->lock);
        uint32_t n = atomic_load_explicit(&c->nwarnings, memory_order_relaxed);
        if (n < ACT__PLUGIN_WARN_MAX) {
            char *w = strdup(clean);
            if (w) {
                c->warnings[n] = w;
                atomic_store_explicit(&c->nwarnings, n + 1, memory_order_release);
            }
        }
        pthread_mutex_unlock(&c->lock);
    }
}

static int64_t h_now(act_plugin_ctx *p)
{
    (void)p;
    return act_now_ns();
}

static const char *h_config_get(act_plugin_ctx *p, const char *key)
{
    struct act_plugin_ctx *c = ctx_of(p);
    if (!c || !key || !c->cfg)
        return NULL;
    act__config_mark_read(c->cfg, key);
    return act_config_get_str(c->cfg, key);
}

static int32_t h_register_type(act_plugin_ctx *p, const char *name,
                               int32_t shape, int32_t *out)
{
    struct act_plugin_ctx *c = ctx_of(p);
    if (!c)
        return ACT_EINVAL;
    if (!name || !out || shape < ACT_SHAPE_HOST_SPAN ||
        shape > ACT_SHAPE_CORRELATION) {
        act__phost_reject(c, ACT__PREJ_CALL, 1);
        return ACT_EINVAL;
    }
    act_activity_type t;
    int rc = act_activity_type_register(name, (act_activity_shape)shape, &t);
    if (rc != 0) {
        act_log(ACT_LOG_WARN,
                "plugin '%s': cannot register activity type '%.64s': %s",
                c->name, name, act_strerror(rc));
        return rc;
    }
    *out = (int32_t)t;
    return 0;
}

/* A type is kept if the session selected it; a custom type also when the
 * user did not restrict ACTIVITY_TYPES (the config cannot name a type
 * before a plugin registered it). */
static int selected(const struct act_plugin_ctx *c, act_activity_type t)
{
    const act_activity_set *set = act__session_types(c->session);
    if (set && act_activity_set_has(set, t))
        return 1;
    return (int)t >= ACT_ACTIVITY_TYPE_FIRST_CUSTOM && !c->types_explicit;
}

static int32_t h_type_selected(act_plugin_ctx *p, int32_t type)
{
    struct act_plugin_ctx *c = ctx_of(p);
    act_activity_type t;
    if (!c || act_activity_type_canonical(type, &t) != 0)
        return 0;
    return selected(c, t);
}

static int32_t h_add_device(act_plugin_ctx *p, const act_plugin_device *dev,
                            uint32_t *out)
{
    struct act_plugin_ctx *c = ctx_of(p);
    if (!c)
        return ACT_EINVAL;
    if (!dev || !out) {
        act__phost_reject(c, ACT__PREJ_CALL, 1);
        return ACT_EINVAL;
    }
    /* Checked and used from one copy: another plugin thread may change
     * the plugin's struct meanwhile (struct_size too). */
    act_plugin_device dcopy;
    uint32_t dsize = copy_in(&dcopy, sizeof dcopy, dev, 0);
    if (!act__pcheck_stride(dsize, ACT_PLUGIN_DEVICE_SIZE_1_0)) {
        act__phost_reject(c, ACT__PREJ_STRUCT_SIZE, 1);
        return ACT_EINVAL;
    }
    dev = &dcopy;
    act__prej e = act__pcheck_cstr(dev->name, CSTR_MAX);
    if (!e && dev->vendor)
        e = act__pcheck_cstr(dev->vendor, CSTR_MAX);
    act__arg props[ACT_PLUGIN_ARGS_MAX];
    if (!e)
        e = act__pcheck_args(dev->props, dev->nprops, props);
    if (e) {
        act__phost_reject(c, e, 1);
        return ACT_EINVAL;
    }
    pthread_mutex_lock(&c->lock);
    uint32_t n = atomic_load_explicit(&c->ndev, memory_order_relaxed);
    int rc = ACT_ELIMIT;
    uint32_t idx = 0;
    if (n < ACT_PLUGIN_DEVICES_MAX)
        rc = act__device_add(c->session, c->source, dev->name,
                             dev->vendor ? dev->vendor : "", &idx);
    for (uint32_t i = 0; rc == 0 && i < dev->nprops; i++)
        rc = act__device_prop(c->session, idx, &props[i]);
    if (rc == 0) {
        c->dev_map[n] = idx;
        /* Release: a thread that sees the count sees the mapping. */
        atomic_store_explicit(&c->ndev, n + 1, memory_order_release);
        *out = n;
    }
    pthread_mutex_unlock(&c->lock);
    if (rc != 0)
        act_log(ACT_LOG_WARN, "plugin '%s': add_device '%.64s' failed: %s",
                c->name, dev->name, act_strerror(rc));
    return rc;
}

static int32_t h_name_stream(act_plugin_ctx *p, uint32_t device,
                             uint64_t stream, const char *name,
                             uint32_t name_len)
{
    struct act_plugin_ctx *c = ctx_of(p);
    if (!c)
        return ACT_EINVAL;
    uint32_t ndev = atomic_load_explicit(&c->ndev, memory_order_acquire);
    act__prej e = device < ndev ? ACT__PREJ_NONE : ACT__PREJ_DEVICE;
    if (!e)
        e = act__pcheck_name(name, name_len, ACT_PLUGIN_NAME_MAX);
    if (e) {
        act__phost_reject(c, e, 1);
        return ACT_EINVAL;
    }
    return act__stream_name(c->session, c->dev_map[device], stream, name,
                            name_len);
}

static int32_t h_emit(act_plugin_ctx *p, const act_plugin_record *records,
                      uint32_t count)
{
    struct act_plugin_ctx *c = ctx_of(p);
    if (!c)
        return ACT_EINVAL;
    if (count == 0)
        return 0;
    /* A batch refused as a whole counts once: its count may be garbage. */
    if (!records || count > ACT_PLUGIN_BATCH_MAX) {
        act__phost_reject(c, ACT__PREJ_BATCH, 1);
        return ACT_EINVAL;
    }
    uint32_t stride = records->struct_size;
    if (!act__pcheck_stride(stride, ACT_PLUGIN_RECORD_SIZE_1_0)) {
        act__phost_reject(c, ACT__PREJ_STRUCT_SIZE, 1);
        return ACT_EINVAL;
    }
    uint32_t ndev = atomic_load_explicit(&c->ndev, memory_order_acquire);
    const unsigned char *base = (const unsigned char *)records;
    act__arg args[ACT_PLUGIN_ARGS_MAX];
    int32_t kept = 0;
    for (uint32_t i = 0; i < count; i++) {
        /* One copy of the record is checked and used (nargs, name_len,
         * args...): a plugin thread changing it meanwhile changes nothing
         * here. */
        act_plugin_record rcopy;
        uint32_t rsize = copy_in(&rcopy, sizeof rcopy,
                                 base + (size_t)i * stride, stride);
        act__emit_record er;
        act__prej e = rsize != stride
                          ? ACT__PREJ_STRUCT_SIZE
                          : act__pcheck_record(&rcopy, ndev, &er, args);
        if (ACT_UNLIKELY(e)) {
            act__phost_reject(c, e, 1);
            continue;
        }
        if (!selected(c, er.type)) {
            atomic_fetch_add_explicit(&c->filtered, 1, memory_order_relaxed);
            continue;
        }
        er.source = c->source;
        if (er.device != ACT__HOST_DEVICE)
            er.device = c->dev_map[er.device];
        if (act__emit(c->session, &er) == 0)
            kept++;
        else
            atomic_fetch_add_explicit(&c->dropped, 1, memory_order_relaxed);
    }
    return kept;
}

static int32_t h_add_counter(act_plugin_ctx *p,
                             const act_plugin_counter *counter, uint32_t *out)
{
    struct act_plugin_ctx *c = ctx_of(p);
    if (!c)
        return ACT_EINVAL;
    if (!counter || !out) {
        act__phost_reject(c, ACT__PREJ_CALL, 1);
        return ACT_EINVAL;
    }
    act_plugin_counter ccopy;
    uint32_t csize = copy_in(&ccopy, sizeof ccopy, counter, 0);
    if (!act__pcheck_stride(csize, ACT_PLUGIN_COUNTER_SIZE_1_0)) {
        act__phost_reject(c, ACT__PREJ_STRUCT_SIZE, 1);
        return ACT_EINVAL;
    }
    counter = &ccopy;
    uint32_t ndev = atomic_load_explicit(&c->ndev, memory_order_acquire);
    uint32_t device = counter->device;
    act__prej e = device == ACT_PLUGIN_HOST_DEVICE || device < ndev
                      ? ACT__PREJ_NONE
                      : ACT__PREJ_DEVICE;
    const char *series = counter->series ? counter->series : counter->track;
    if (!e)
        e = act__pcheck_cstr(counter->track, CSTR_MAX);
    if (!e && *counter->track == '\0')
        e = ACT__PREJ_NAME_NULL;
    if (!e)
        e = act__pcheck_cstr(series, CSTR_MAX);
    if (!e && *series == '\0')
        e = ACT__PREJ_NAME_NULL;
    if (!e && counter->unit)
        e = act__pcheck_cstr(counter->unit, CSTR_MAX);
    if (e) {
        act__phost_reject(c, e, 1);
        return ACT_EINVAL;
    }
    uint32_t edev =
        device == ACT_PLUGIN_HOST_DEVICE ? ACT__HOST_DEVICE : c->dev_map[device];
    uint32_t id;
    int rc = act__counter_series(c->session, c->source, edev, counter->track,
                                 series, counter->unit, &id);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&c->lock);
    uint32_t n = atomic_load_explicit(&c->ntracks, memory_order_relaxed);
    uint32_t found = n;
    for (uint32_t i = 0; i < n; i++)
        if (c->track_map[i] == id)
            found = i;
    if (found == n) {
        if (n < ACT_PLUGIN_TRACKS_MAX) {
            c->track_map[n] = id;
            atomic_store_explicit(&c->ntracks, n + 1, memory_order_release);
        } else {
            rc = ACT_ELIMIT;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (rc == 0)
        *out = found;
    return rc;
}

static int32_t h_emit_samples(act_plugin_ctx *p, uint32_t counter,
                              const act_plugin_sample *samples,
                              uint32_t count)
{
    struct act_plugin_ctx *c = ctx_of(p);
    if (!c)
        return ACT_EINVAL;
    if (count == 0)
        return 0;
    if (!samples || count > ACT_PLUGIN_BATCH_MAX) {
        act__phost_reject(c, ACT__PREJ_BATCH, 1);
        return ACT_EINVAL;
    }
    uint32_t ntracks = atomic_load_explicit(&c->ntracks, memory_order_acquire);
    if (counter >= ntracks) {
        act__phost_reject(c, ACT__PREJ_COUNTER, count);
        return ACT_EINVAL;
    }
    uint32_t stride = samples->struct_size;
    if (!act__pcheck_stride(stride, ACT_PLUGIN_SAMPLE_SIZE_1_0)) {
        act__phost_reject(c, ACT__PREJ_STRUCT_SIZE, 1);
        return ACT_EINVAL;
    }
    uint32_t series = c->track_map[counter];
    const unsigned char *base = (const unsigned char *)samples;
    int32_t kept = 0;
    for (uint32_t i = 0; i < count; i++) {
        act_plugin_sample scopy;
        uint32_t ssize = copy_in(&scopy, sizeof scopy,
                                 base + (size_t)i * stride, stride);
        const act_plugin_sample *sm = &scopy;
        act__prej e = ACT__PREJ_NONE;
        if (ssize != stride)
            e = ACT__PREJ_STRUCT_SIZE;
        else if (sm->ts_ns < 0 || sm->ts_ns > ACT__TIME_MAX)
            e = ACT__PREJ_TIME;
        else if (!isfinite(sm->value))
            e = ACT__PREJ_VALUE;
        if (ACT_UNLIKELY(e)) {
            act__phost_reject(c, e, 1);
            continue;
        }
        if (act__counter_sample(c->session, series, sm->ts_ns, sm->value) ==
            0)
            kept++;
        else
            atomic_fetch_add_explicit(&c->dropped, 1, memory_order_relaxed);
    }
    return kept;
}

static uint64_t h_correlation_current(act_plugin_ctx *p)
{
    (void)p;
    return act_correlation_current();
}

static int32_t h_name_thread(act_plugin_ctx *p, uint64_t tid,
                             const char *name, uint32_t name_len)
{
    struct act_plugin_ctx *c = ctx_of(p);
    if (!c)
        return ACT_EINVAL;
    /* Thread ids are int32 in the trace (Linux tids fit, pid_max <= 2^22). */
    act__prej e = tid == 0 || tid > INT32_MAX ? ACT__PREJ_CALL : ACT__PREJ_NONE;
    if (!e)
        e = act__pcheck_name(name, name_len, ACT_PLUGIN_NAME_MAX);
    if (!e && name_len == 0)
        e = ACT__PREJ_NAME_NULL;
    if (e) {
        act__phost_reject(c, e, 1);
        return ACT_EINVAL;
    }
    return act__thread_name_set((int32_t)tid, name, name_len, 1);
}

/* Ticks on the session's helper thread (engine/thread.c), owned by the
 * plugin's context: act__plugins_stop and _destroy cancel them all before
 * the plugin's stop and finalize. */
static int32_t h_every(act_plugin_ctx *p, int64_t period_ns,
                       void (*fn)(void *arg, int64_t now_ns), void *arg,
                       uint32_t *id)
{
    struct act_plugin_ctx *c = ctx_of(p);
    if (!c)
        return ACT_EINVAL;
    if (!fn || !id || period_ns < ACT__PLUGIN_TICK_MIN_NS || period_ns > ACT__PLUGIN_TICK_MAX_NS) {
        act__phost_reject(c, ACT__PREJ_CALL, 1);
        return ACT_EINVAL;
    }
    if (atomic_load(&c->stuck))
        return ACT_ESTATE;
    return act__tick_add(c->session, c, period_ns, fn, arg, id);
}

static int32_t h_every_cancel(act_plugin_ctx *p, uint32_t id)
{
    struct act_plugin_ctx *c = ctx_of(p);
    if (!c)
        return ACT_EINVAL;
    int rc = act__tick_cancel(c->session, c, id, c->timeout_ms);
    return rc == ACT_ENOENT ? ACT_EINVAL : rc == ACT_EBUSY ? ACT_ESTATE : rc;
}

void act__phost_init(struct act_plugin_ctx *c)
{
    act_plugin_host *h = &c->host;
    memset(h, 0, sizeof *h);
    h->struct_size = (uint32_t)sizeof *h;
    h->abi_major = ACT_PLUGIN_ABI_MAJOR;
    h->abi_minor = ACT_PLUGIN_ABI_MINOR;
    h->ctx = c;
    h->host_version = act_version();
    h->log = h_log;
    h->now_ns = h_now;
    h->config_get = h_config_get;
    h->register_type = h_register_type;
    h->type_selected = h_type_selected;
    h->add_device = h_add_device;
    h->name_stream = h_name_stream;
    h->emit = h_emit;
    h->add_counter = h_add_counter;
    h->emit_samples = h_emit_samples;
    h->correlation_current = h_correlation_current;
    h->name_thread = h_name_thread;
    h->every = h_every;
    h->every_cancel = h_every_cancel;
}
