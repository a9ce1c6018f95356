/* SPDX-License-Identifier: MIT */
/*
 * Recording from a signal handler (issue 12). The main thread records
 * instants with an arg; another thread keeps sending it SIGUSR1, whose
 * handler records an instant with an arg too. A handler that interrupts a
 * recording call of its own thread used to write into the same slot (a
 * record lost, the published count one ahead of the records written:
 * 3,000,095 against 3,000,094) or to wait for the session lock its thread
 * held while carving a chunk (a deadlock, caught by the test timeout).
 * Now such a nested call records nothing and is counted as dropped for
 * the reason "reentrant"; every other call is recorded intact.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/trace_util.h"

#define N 200000

static volatile sig_atomic_t ready;
static _Atomic long handler_calls; /* lock-free: fine in a handler */
static _Atomic int done;

static void on_signal(int sig)
{
    (void)sig;
    if (!ready)
        return;
    long k = atomic_fetch_add_explicit(&handler_calls, 1, memory_order_relaxed);
    act_instant(ACT_USER_ANNOTATION, "sig");
    act_arg_int("k", k);
}

static void *sender(void *arg)
{
    pthread_t target = *(pthread_t *)arg;
    while (!atomic_load_explicit(&done, memory_order_relaxed)) {
        pthread_kill(target, SIGUSR1);
        sched_yield();
    }
    return NULL;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);

    act_session *s = tu_session("MAX_BUFFER_SIZE_MB=256\nBUFFER_PREALLOC_MB=1\n");
    act_instant(ACT_USER_ANNOTATION, "first"); /* attach before signals */
    ready = 1;
    pthread_t self = pthread_self(), th;
    CHECK_FATAL(pthread_create(&th, NULL, sender, &self) == 0);
    for (long i = 0; i < N; i++) {
        act_instant(ACT_USER_ANNOTATION, "loop");
        act_arg_int("i", i);
    }
    atomic_store(&done, 1);
    pthread_join(th, NULL);
    ready = 0;
    CHECK_OK(act_session_stop(s));
    act_session_stats stats;
    stats.struct_size = sizeof stats;
    CHECK_OK(act_session_get_stats(s, &stats));
    const char *path = ACT_BINARY_DIR "/tests/lifetime/lifetime_signal.json" /* large: not for the CI validators */;
    CHECK_OK(act_session_write(s, path));
    act_session_destroy(s);

    json_t *root = tu_load(path);
    json_t *evs = tu_events(root), *e;
    size_t idx;
    unsigned char *seen = calloc(N, 1);
    long calls = atomic_load(&handler_calls);
    unsigned char *seen_k = calloc((size_t)calls + 1, 1);
    CHECK_FATAL(seen && seen_k);
    long loop = 0, sig = 0, bad = 0;
    json_array_foreach(evs, idx, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!ph || strcmp(ph, "i") != 0 || !name)
            continue;
        json_t *args = json_object_get(e, "args");
        /* A handler that ran between the loop's instant and its arg takes
         * the arg (args attach to the thread's previous event): an "i" may
         * sit on a "sig" instant, but each value exists exactly once. */
        json_t *v = json_object_get(args, "i");
        if (v) {
            long i = (long)json_integer_value(v);
            if (i < 0 || i >= N || seen[i]++)
                bad++;
        }
        if (strcmp(name, "loop") == 0) {
            if (json_object_size(args) != (v ? 1u : 0u))
                bad++;
            loop++;
        } else if (strcmp(name, "sig") == 0) {
            json_t *kv = json_object_get(args, "k");
            long k = kv ? (long)json_integer_value(kv) : -1;
            if (!kv || k < 0 || k >= calls || seen_k[k]++)
                bad++;
            sig++;
        }
    }
    long nseen = 0;
    for (long i = 0; i < N; i++)
        nseen += seen[i];
    CHECK_EQ_INT(nseen, N);
    json_t *st = tu_stats(root);
    long long reentrant = tu_int(json_object_get(st, "dropped_by_reason"), "reentrant");
    long long reentrant_args = tu_int(json_object_get(st, "args_dropped_by_reason"), "reentrant");
    printf("handler calls %ld: %ld recorded, %lld records dropped as reentrant\n",
           calls, sig, reentrant);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(loop, N);
    /* The published counts are exactly what the trace holds: "first", the
     * loop's and the handler's instants (events), and one arg each (args,
     * counted apart). */
    CHECK_EQ_INT(tu_int(st, "recorded"), 1 + N + sig);
    CHECK_EQ_U64(stats.recorded, (uint64_t)(1 + N + sig));
    CHECK_EQ_INT(tu_int(st, "args_recorded"), N + sig);
    CHECK_EQ_U64(stats.args_recorded, (uint64_t)(N + sig));
    /* Each handler call is an event and an arg: recorded, or dropped as
     * nested. */
    CHECK_EQ_INT(sig + reentrant, calls);
    CHECK_EQ_INT(sig + reentrant_args, calls);
    CHECK_EQ_INT(tu_int(st, "dropped"), reentrant);
    CHECK_EQ_U64(stats.dropped, (uint64_t)reentrant);
    CHECK_EQ_INT(tu_int(st, "args_dropped"), reentrant_args);
    CHECK_EQ_U64(stats.args_dropped, (uint64_t)reentrant_args);
    free(seen);
    free(seen_k);
    json_decref(root);
    CHECK_MAIN_END;
}
