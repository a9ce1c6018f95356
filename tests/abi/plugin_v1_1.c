/* SPDX-License-Identifier: MIT */
/*
 * A plugin built against the frozen copy of plugin.h 1.1
 * (tests/abi/v1_1/actrace/plugin.h). It uses what 1.1 added,
 * name_thread, on the host: a host span on a track of its own choosing
 * (tid 0x40000123) named "abi v1.1 track", the session thread named
 * "abi v1.1 thread", and two calls the host must refuse (tid 0, invalid
 * UTF-8). It logs the return codes; test_abi_v1_1.c checks both.
 *
 * Never edit this file or the frozen header (docs/ABI.md).
 */
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <actrace/plugin.h>

#define TRACK 0x40000123u

static const act_plugin_host *host;

static int32_t v11_init(const act_plugin_host *h, void **state, char *reason,
                        uint32_t cap)
{
    if (h->abi_major != 1 || h->struct_size < ACT_PLUGIN_HOST_SIZE_1_1 ||
        !h->name_thread) {
        snprintf(reason, cap, "host lacks ABI 1.1");
        return ACT_PLUGIN_DECLINE;
    }
    host = h;
    *state = &host;
    return ACT_PLUGIN_OK;
}

static void v11_flush(void *state)
{
    (void)state;
    const act_plugin_host *h = host;
    int64_t t = h->now_ns(h->ctx);
    act_plugin_record r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.kind = ACT_PLUGIN_RECORD_HOST_SPAN;
    r.type = ACT_USER_ANNOTATION;
    r.device = ACT_PLUGIN_HOST_DEVICE;
    r.stream = TRACK;
    r.start_ns = t - 2000;
    r.end_ns = t - 1000;
    r.name = "abi_v1_1_span";
    r.name_len = 13;
    int32_t kept = h->emit(h->ctx, &r, 1);
    int32_t a = h->name_thread(h->ctx, TRACK, "abi v1.1 track", 14);
    int32_t b = h->name_thread(h->ctx, (uint64_t)syscall(SYS_gettid),
                               "abi v1.1 thread", 15);
    int32_t c = h->name_thread(h->ctx, 0, "zero", 4);
    int32_t d = h->name_thread(h->ctx, TRACK, "bad\xff", 4);
    char msg[128];
    snprintf(msg, sizeof msg, "abi v1.1 rc %d %d %d %d %d", kept, a, b,
             c < 0, d < 0);
    h->log(h->ctx, ACT_PLUGIN_LOG_INFO, msg);
}

static const act_plugin v11_plugin = {
    .struct_size = sizeof(act_plugin),
    .abi_major = ACT_PLUGIN_ABI_MAJOR,
    .abi_minor = ACT_PLUGIN_ABI_MINOR,
    .name = "abi_v1_1",
    .backend = "abi_v1_1",
    .version = "1.1",
    .init = v11_init,
    .flush = v11_flush,
};

ACT_PLUGIN_EXPORT const act_plugin *
act_plugin_entry(const act_plugin_host *h, uint32_t major, uint32_t minor)
{
    (void)h;
    (void)minor;
    return major == 1 ? &v11_plugin : NULL;
}
