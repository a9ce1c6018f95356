/* SPDX-License-Identifier: MIT */
/*
 * hook.so: a test plugin that the test program drives directly (it finds
 * the functions below with dlopen(RTLD_NOLOAD) and dlsym):
 *  - tp_hook_emit(i, name, n) emits n host spans through the host table of
 *    the i-th instance ever initialised in this process image, even one a
 *    fork()ed child inherited from its parent (what a plugin that keeps
 *    process-wide state across fork would do): RecordForkBound checks the
 *    engine refuses those;
 *  - tp_hook_on_stop(fn) makes the plugin's stop call fn, between the stop
 *    and the flush of the plugins loaded before it (OpenclStopWindow runs
 *    an OpenCL call there).
 * Test-only; never installed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <actrace/plugin.h>

#define MAX_INST 8

static const act_plugin_host *insts[MAX_INST];
static _Atomic int ninst;
static void (*_Atomic on_stop)(void);

ACT_PLUGIN_EXPORT int tp_hook_instances(void);
ACT_PLUGIN_EXPORT int tp_hook_emit(int inst, const char *name, int n);
ACT_PLUGIN_EXPORT void tp_hook_on_stop(void (*fn)(void));

int tp_hook_instances(void)
{
    return atomic_load(&ninst);
}

/* Returns how many of the n spans the host accepted. */
int tp_hook_emit(int inst, const char *name, int n)
{
    if (inst < 0 || inst >= atomic_load(&ninst) || !insts[inst])
        return -1;
    const act_plugin_host *h = insts[inst];
    int ok = 0;
    for (int i = 0; i < n; i++) {
        act_plugin_record r;
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        r.kind = ACT_PLUGIN_RECORD_HOST_SPAN;
        r.type = ACT_USER_ANNOTATION;
        r.device = ACT_PLUGIN_HOST_DEVICE;
        r.stream = (uint64_t)syscall(SYS_gettid);
        r.start_ns = h->now_ns(h->ctx);
        r.end_ns = r.start_ns + 100;
        r.name = name;
        r.name_len = (uint32_t)strlen(name);
        ok += h->emit(h->ctx, &r, 1) == 1;
    }
    return ok;
}

void tp_hook_on_stop(void (*fn)(void))
{
    atomic_store(&on_stop, fn);
}

static int32_t hook_init(const act_plugin_host *h, void **state, char *reason, uint32_t cap)
{
    (void)reason;
    (void)cap;
    int i = atomic_load(&ninst);
    if (i >= MAX_INST)
        return ACT_PLUGIN_DECLINE;
    insts[i] = h;
    atomic_store(&ninst, i + 1);
    *state = (void *)(intptr_t)(i + 1);
    return ACT_PLUGIN_OK;
}

static void hook_stop(void *state)
{
    (void)state;
    void (*fn)(void) = atomic_load(&on_stop);
    if (fn)
        fn();
}

static void hook_finalize(void *state)
{
    /* The host table is gone with the session. */
    insts[(intptr_t)state - 1] = NULL;
}

static const int32_t hook_types[] = {ACT_USER_ANNOTATION};

static const act_plugin table = {
    .struct_size = sizeof(act_plugin),
    .abi_major = ACT_PLUGIN_ABI_MAJOR,
    .abi_minor = ACT_PLUGIN_ABI_MINOR,
    .name = "hook",
    .backend = "test",
    .version = "1.0.0",
    .types = hook_types,
    .ntypes = 1,
    .init = hook_init,
    .stop = hook_stop,
    .finalize = hook_finalize,
};

ACT_PLUGIN_EXPORT const act_plugin *act_plugin_entry(const act_plugin_host *host,
                                                     uint32_t major, uint32_t minor)
{
    (void)host;
    (void)minor;
    return major == ACT_PLUGIN_ABI_MAJOR ? &table : NULL;
}
