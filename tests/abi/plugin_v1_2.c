/* SPDX-License-Identifier: MIT */
/*
 * A plugin built against the frozen copy of plugin.h 1.2
 * (tests/abi/v1_2/actrace/plugin.h). It uses what 1.2 added, the host's
 * ticks (every, every_cancel):
 *  - in init, before the session starts, every is refused (no helper yet);
 *  - in start it registers a 1 ms tick that counts its calls, notes its
 *    thread and emits a counter sample, and a second one that cancels
 *    itself from inside its first call;
 *  - it checks that the host refuses a period of 0 and of more than an
 *    hour, a NULL function, and the cancel of an id it never had;
 *  - stop notes that it ran; a tick after it counts as late;
 *  - with ABI_V1_2_TICK_BLOCK_MSECS set, its first tick sleeps that long
 *    (a tick that blocks, which the host must survive).
 * Finalize logs what it saw; test_abi_v1_2.c checks it. The test reads the
 * tick count through abi_v1_2_ticks() (dlsym) to wait for ticks without a
 * timed assertion.
 *
 * Never edit this file or the frozen header once 1.2 shipped (docs/ABI.md).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <actrace/plugin.h>

static const act_plugin_host *host;
static int32_t init_rc, bad_zero, bad_long, bad_null, bad_cancel;
static uint32_t counter;
static atomic_int ticks, self_calls, late, stopped, other_thread;
static atomic_long tick_tid;
static uint32_t self_id;
static long block_ms; /* config ABI_V1_2_TICK_BLOCK_MSECS: the first tick sleeps */
static atomic_int blocking;

/* 1 once a tick is inside its long sleep (ABI_V1_2_TICK_BLOCK_MSECS). */
ACT_PLUGIN_EXPORT int abi_v1_2_blocking(void);
ACT_PLUGIN_EXPORT int abi_v1_2_blocking(void)
{
    return atomic_load(&blocking);
}

ACT_PLUGIN_EXPORT int abi_v1_2_ticks(void);
ACT_PLUGIN_EXPORT int abi_v1_2_ticks(void)
{
    return atomic_load(&ticks);
}

/* The tid the ticks ran on (0: none yet). */
ACT_PLUGIN_EXPORT long abi_v1_2_tick_tid(void);
ACT_PLUGIN_EXPORT long abi_v1_2_tick_tid(void)
{
    return atomic_load(&tick_tid);
}

static void tick(void *arg, int64_t now_ns)
{
    (void)arg;
    if (atomic_load(&stopped))
        atomic_fetch_add(&late, 1);
    if (block_ms > 0 && !atomic_exchange(&blocking, 1)) {
        /* A tick that blocks (what a tick must never do): the host gives
         * up on it at stop after PLUGIN_TIMEOUT_MSECS. */
        struct timespec ts = {block_ms / 1000, (block_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        return;
    }
    long tid = (long)syscall(SYS_gettid);
    long was = 0;
    if (!atomic_compare_exchange_strong(&tick_tid, &was, tid) && was != tid)
        atomic_store(&other_thread, 1);
    act_plugin_sample sm;
    memset(&sm, 0, sizeof sm);
    sm.struct_size = sizeof sm;
    sm.ts_ns = now_ns;
    sm.value = (double)atomic_load(&ticks);
    host->emit_samples(host->ctx, counter, &sm, 1);
    atomic_fetch_add(&ticks, 1);
}

static void self_cancel(void *arg, int64_t now_ns)
{
    (void)arg;
    (void)now_ns;
    atomic_fetch_add(&self_calls, 1);
    host->every_cancel(host->ctx, self_id);
}

static void nop(void *arg, int64_t now_ns)
{
    (void)arg;
    (void)now_ns;
}

static int32_t v12_init(const act_plugin_host *h, void **state, char *reason,
                        uint32_t cap)
{
    if (h->abi_major != 1 || h->struct_size < ACT_PLUGIN_HOST_SIZE_1_2 ||
        !h->every || !h->every_cancel) {
        snprintf(reason, cap, "host lacks ABI 1.2");
        return ACT_PLUGIN_DECLINE;
    }
    host = h;
    /* Each session starts afresh (the test runs several in turn). */
    atomic_store(&ticks, 0);
    atomic_store(&self_calls, 0);
    atomic_store(&late, 0);
    atomic_store(&stopped, 0);
    atomic_store(&other_thread, 0);
    atomic_store(&tick_tid, 0);
    atomic_store(&blocking, 0);
    const char *b = h->config_get(h->ctx, "ABI_V1_2_TICK_BLOCK_MSECS");
    block_ms = b ? strtol(b, NULL, 10) : 0;
    act_plugin_counter c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.device = ACT_PLUGIN_HOST_DEVICE;
    c.track = "abi_v1_2_ticks";
    if (h->add_counter(h->ctx, &c, &counter) != 0) {
        snprintf(reason, cap, "add_counter");
        return ACT_PLUGIN_EINVAL;
    }
    uint32_t id = 0;
    init_rc = h->every(h->ctx, 1000000, nop, NULL, &id);
    *state = &host;
    return ACT_PLUGIN_OK;
}

static void v12_start(void *state)
{
    (void)state;
    uint32_t id = 0;
    bad_zero = host->every(host->ctx, 0, nop, NULL, &id);
    bad_long = host->every(host->ctx, INT64_C(3600000000001), nop, NULL, &id);
    bad_null = host->every(host->ctx, 1000000, NULL, NULL, &id);
    bad_cancel = host->every_cancel(host->ctx, 999999);
    host->every(host->ctx, 1000000, self_cancel, NULL, &self_id);
    host->every(host->ctx, 1000000, tick, NULL, &id);
}

static void v12_stop(void *state)
{
    (void)state;
    atomic_store(&stopped, 1);
}

static void v12_finalize(void *state)
{
    (void)state;
    char msg[256];
    snprintf(msg, sizeof msg,
             "abi v1.2 init %d bad %d %d %d %d self %d late %d other %d ticked %d",
             init_rc, bad_zero, bad_long, bad_null, bad_cancel,
             atomic_load(&self_calls), atomic_load(&late),
             atomic_load(&other_thread), atomic_load(&ticks) > 0);
    host->log(host->ctx, ACT_PLUGIN_LOG_INFO, msg);
}

static const act_plugin v12_plugin = {
    .struct_size = sizeof(act_plugin),
    .abi_major = ACT_PLUGIN_ABI_MAJOR,
    .abi_minor = ACT_PLUGIN_ABI_MINOR,
    .name = "abi_v1_2",
    .backend = "abi_v1_2",
    .version = "1.2",
    .init = v12_init,
    .start = v12_start,
    .stop = v12_stop,
    .finalize = v12_finalize,
};

ACT_PLUGIN_EXPORT const act_plugin *
act_plugin_entry(const act_plugin_host *h, uint32_t major, uint32_t minor)
{
    (void)h;
    (void)minor;
    return major == 1 ? &v12_plugin : NULL;
}
