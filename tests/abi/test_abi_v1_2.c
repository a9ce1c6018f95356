/* SPDX-License-Identifier: MIT */
/*
 * ABI 1.2, tested: a plugin compiled against the frozen plugin.h 1.2
 * (tests/abi/v1_2) gets ticks from the host (every, every_cancel):
 *  - they run on the host's helper thread ("actrace-helper"), one thread
 *    for all the ticks, the only thread of the library's;
 *  - a tick may cancel itself; it then never runs again;
 *  - the host refuses every before start (no helper: ESTATE), periods of 0
 *    and over an hour, a NULL function, and an unknown id to cancel;
 *  - no tick runs after the plugin's stop, and each tick's sample is in
 *    the trace (as many as the ticks that ran);
 *  - a tick that blocks past PLUGIN_TIMEOUT_MSECS does not hang stop: the
 *    plugin is reported stuck and skipped, the trace is written.
 * If this test has to change, the ABI was broken (docs/ABI.md).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "../plugin/plugin_test_util.h"
#include "../task_names.h"

#define V12_PLUGIN ACT_BINARY_DIR "/tests/abi/abi_v1_2.so"

static int (*ticks_fn)(void);
static long (*tid_fn)(void);
static int tasks_while_ticking = -1;


/* The name of thread @p tid of this process, "" if none. */
static void thread_comm(long tid, char *comm, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", tid);
    comm[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(comm, (int)cap, f))
            comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
    }
}

static char tick_comm[64];
static int (*blocking_fn)(void);

/* Waits (up to 60 s) until a tick is inside its long sleep. */
static void wait_blocking(void)
{
    act_span_begin(ACT_USER_ANNOTATION, "waiting for the blocking tick");
    for (int i = 0; i < 60000 && !blocking_fn(); i++)
        sleep_ms(1);
    act_span_end();
}

/* Waits (up to 60 s, never asserting on time) for 5 ticks, inside a span
 * (a trace of counter samples alone has no timeline for viewers). */
static void body(void)
{
    act_span_begin(ACT_USER_ANNOTATION, "waiting for ticks");
    for (int i = 0; i < 60000 && ticks_fn() < 5; i++)
        sleep_ms(1);
    act_span_end();
    tasks_while_ticking = threads_named("actrace", 1);
    thread_comm(tid_fn(), tick_comm, sizeof tick_comm);
}

int main(void)
{
    const char *trace = ACT_TRACE_DIR "/abi_v1_2.json";
    log_start();
    char real[PATH_MAX];
    CHECK_FATAL(realpath(V12_PLUGIN, real) != NULL);
    /* Loaded here first so that the test can read the plugin's counts;
     * the session's load finds this very object. */
    void *so = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    CHECK_FATAL(so != NULL);
    void *a = dlsym(so, "abi_v1_2_ticks"), *b = dlsym(so, "abi_v1_2_tick_tid");
    CHECK_FATAL(a != NULL && b != NULL);
    memcpy(&ticks_fn, &a, sizeof a);
    memcpy(&tid_fn, &b, sizeof b);

    const char *list[] = {real};
    /* With the chunk pool (the helper is its drain) and without it (the
     * helper is the pre-fault thread, which otherwise sleeps until woken). */
    const char *configs[] = {NULL, "BUFFER_POOL_MB = 0\n"};
    for (int k = 0; k < 2; k++) {
        log_reset();
        CHECK_FATAL(run_session(list, 1, configs[k], trace, body) == 0);
        CHECK(ticks_fn() >= 5);
        if (!CHECK_EQ_INT(log_count("abi v1.2 init -7 bad -1 -1 -1 -1 self 1 late 0 other 0 ticked 1",
                                    NULL, NULL), 1))
            fprintf(stderr, "log:\n%s", log_buf);
        /* One thread of the library's: the helper, where the ticks ran. */
        CHECK_EQ_INT(tasks_while_ticking, 1);
        CHECK_EQ_STR(tick_comm, "actrace-helper");
        long tid = tid_fn();
        CHECK(tid > 0 && tid != (long)syscall(SYS_gettid));

        json_t *root = trace_load(trace);
        CHECK_FATAL(root != NULL);
        /* Every tick emitted one sample while collecting, and none came
         * after stop: the trace has them all. */
        CHECK_EQ_INT(trace_count(root, "C", "abi_v1_2_ticks"), ticks_fn());
        CHECK_EQ_INT(trace_count(root, "X", "waiting for ticks"), 1);
        json_t *c = trace_find(root, "C", "abi_v1_2_ticks");
        CHECK_FATAL(c != NULL);
        CHECK_EQ_INT(ev_int(c, "pid"), getpid());
        CHECK(!trace_has_flow(root, c, c));
        CHECK(trace_process(root, "no such process") < 0);
        (void)trace_thread; /* counter samples name no thread */
        json_decref(root);
    }
    /* A tick that blocks past PLUGIN_TIMEOUT_MSECS: stop gives up on it
     * (the plugin is stuck and skipped, its stop and finalize are not
     * called), returns, and the trace is written without waiting. */
    void *c = dlsym(so, "abi_v1_2_blocking");
    CHECK_FATAL(c != NULL);
    memcpy(&blocking_fn, &c, sizeof c);
    log_reset();
    CHECK_FATAL(run_session(list, 1,
                            "PLUGIN_TIMEOUT_MSECS = 100\nABI_V1_2_TICK_BLOCK_MSECS = 3000\n",
                            trace, wait_blocking) == 0);
    CHECK_EQ_INT(blocking_fn(), 1);
    CHECK(log_count("a tick did not return within 100 ms", NULL, NULL) >= 1);
    CHECK_EQ_INT(log_count("abi v1.2 init", NULL, NULL), 0); /* no finalize */
    json_t *root = trace_load(trace);
    CHECK_FATAL(root != NULL);
    CHECK_EQ_INT(trace_count(root, "X", "waiting for the blocking tick"), 1);
    json_decref(root);
    dlclose(so);
    CHECK_MAIN_END;
}
