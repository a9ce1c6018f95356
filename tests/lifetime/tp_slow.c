/* SPDX-License-Identifier: MIT */
/*
 * A test plugin for the lifetime tests (tests/lifetime): its start or its
 * flush (TPS_SLOW=start|flush in the environment at init) logs that it
 * entered, sleeps 100 ms, and logs that it left, so a test can run
 * act_session_stop/write/destroy while a window transition is inside
 * plugin code. The flush emits one host span, "tp_slow_late_flush", which
 * must reach the trace. Any call that overlaps start or flush, or comes
 * after finalize began, is logged as "tp_slow overlap".
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <actrace/plugin.h>

typedef struct tps {
    const act_plugin_host *h;
    int slow_start, slow_flush;
    _Atomic int busy; /* inside start or flush */
} tps;

static void nap(void)
{
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
}

static void check_idle(tps *t, const char *what)
{
    if (atomic_load(&t->busy))
        t->h->log(t->h->ctx, ACT_PLUGIN_LOG_WARN, what);
}

static int32_t tps_init(const act_plugin_host *h, void **state, char *reason,
                        uint32_t cap)
{
    (void)reason;
    (void)cap;
    tps *t = calloc(1, sizeof *t);
    if (!t)
        return ACT_PLUGIN_ENOMEM;
    t->h = h;
    const char *e = getenv("TPS_SLOW");
    t->slow_start = e && strcmp(e, "start") == 0;
    t->slow_flush = e && strcmp(e, "flush") == 0;
    *state = t;
    return 0;
}

static void tps_start(void *state)
{
    tps *t = state;
    check_idle(t, "tp_slow overlap in start");
    atomic_store(&t->busy, 1);
    if (t->slow_start) {
        t->h->log(t->h->ctx, ACT_PLUGIN_LOG_WARN, "tp_slow start entered");
        nap();
        t->h->log(t->h->ctx, ACT_PLUGIN_LOG_WARN, "tp_slow start left");
    }
    atomic_store(&t->busy, 0);
}

static void tps_stop(void *state)
{
    check_idle(state, "tp_slow overlap in stop");
}

static void tps_flush(void *state)
{
    tps *t = state;
    check_idle(t, "tp_slow overlap in flush");
    atomic_store(&t->busy, 1);
    if (t->slow_flush) {
        t->h->log(t->h->ctx, ACT_PLUGIN_LOG_WARN, "tp_slow flush entered");
        nap();
    }
    const act_plugin_host *h = t->h;
    act_plugin_record r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.kind = ACT_PLUGIN_RECORD_HOST_SPAN;
    r.type = ACT_RUNTIME;
    r.device = ACT_PLUGIN_HOST_DEVICE;
    r.stream = (uint64_t)syscall(SYS_gettid);
    r.end_ns = h->now_ns(h->ctx);
    r.start_ns = r.end_ns - 1000;
    r.name = "tp_slow_late_flush";
    r.name_len = (uint32_t)strlen(r.name);
    if (h->emit(h->ctx, &r, 1) != 1)
        h->log(h->ctx, ACT_PLUGIN_LOG_WARN, "tp_slow flush record refused");
    if (t->slow_flush)
        h->log(h->ctx, ACT_PLUGIN_LOG_WARN, "tp_slow flush left");
    atomic_store(&t->busy, 0);
}

static void tps_finalize(void *state)
{
    check_idle(state, "tp_slow overlap in finalize");
    free(state);
}

static const act_plugin table = {
    .struct_size = sizeof(act_plugin),
    .abi_major = ACT_PLUGIN_ABI_MAJOR,
    .abi_minor = ACT_PLUGIN_ABI_MINOR,
    .name = "tp_slow",
    .backend = "tp",
    .version = "0.0.1",
    .init = tps_init,
    .start = tps_start,
    .stop = tps_stop,
    .flush = tps_flush,
    .finalize = tps_finalize,
};

ACT_PLUGIN_EXPORT const act_plugin *
act_plugin_entry(const act_plugin_host *host, uint32_t major, uint32_t minor)
{
    (void)host;
    (void)major;
    (void)minor;
    return &table;
}
