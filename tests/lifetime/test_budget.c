/* SPDX-License-Identifier: MIT */
/*
 * A refused huge string must not stop recording on other threads (issue
 * 12). One thread keeps attaching a 100 MiB string arg, which the 64 MiB
 * budget refuses, while another records 400,000 instants (about 13 MiB,
 * far below the limit). The budget used to be charged before the limit
 * check and refunded after, so the recorder's ordinary chunk refills were
 * refused in that window and the recorder stopped recording for good
 * (1.12 million buffer_full drops). Every buffer_full drop must now be
 * the huge arg's own.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "engine/trace_util.h"

#define EVENTS 400000

static _Atomic int done;
static _Atomic long huge_attempts;

static void *huge_loop(void *arg)
{
    const char *big = arg;
    while (!atomic_load_explicit(&done, memory_order_relaxed)) {
        act_instant(ACT_USER_ANNOTATION, "huge");
        act_arg_strn("blob", big, (size_t)100 << 20);
        atomic_fetch_add(&huge_attempts, 1);
    }
    return NULL;
}

int main(void)
{
    /* Never touched: the engine refuses it before copying a byte. */
    char *big = malloc((size_t)100 << 20);
    CHECK_FATAL(big != NULL);
    act_session *s = tu_session("MAX_BUFFER_SIZE_MB=64\nBUFFER_PREALLOC_MB=1\n");
    pthread_t th;
    CHECK_FATAL(pthread_create(&th, NULL, huge_loop, big) == 0);
    while (atomic_load(&huge_attempts) < 10)
        sched_yield();
    for (int i = 0; i < EVENTS; i++)
        act_instant_id(ACT_USER_ANNOTATION, 0);
    atomic_store(&done, 1);
    pthread_join(th, NULL);
    CHECK_OK(act_session_stop(s));
    const char *path = tu_trace_path("lifetime_budget.json");
    CHECK_OK(act_session_write(s, path));
    act_session_destroy(s);
    free(big);
    json_t *root = tu_load(path);
    json_t *st = tu_stats(root);
    long long full = tu_int(json_object_get(st, "dropped_by_reason"), "buffer_full");
    long long attempts = atomic_load(&huge_attempts);
    printf("huge args refused: %lld, buffer_full drops: %lld, bytes %lld of %lld\n",
           attempts, full, tu_int(st, "buffer_bytes"), tu_int(st, "buffer_limit_bytes"));
    CHECK_EQ_INT(full, attempts);
    CHECK(tu_int(st, "buffer_bytes") < (32ll << 20));
    CHECK_EQ_INT((long long)tu_count(root, "i", "(unnamed)"), EVENTS);
    json_decref(root);
    CHECK_MAIN_END;
}
