/* SPDX-License-Identifier: MIT */
/*
 * act_log_set against act_log on other threads (issue 12): two threads
 * keep installing one of two (function, user) pairs while two others log.
 * Each function checks that it received its own user pointer. The pair
 * was double-buffered, so a second act_log_set could rewrite the buffer a
 * reader was still copying: a torn pair (and a TSan report).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include <actrace/actrace.h>

#include "check.h"

static int user_a, user_b;
static _Atomic long torn, calls;
static _Atomic int running = 1;

static void fn_a(void *user, act_log_level level, const char *msg)
{
    (void)level;
    (void)msg;
    atomic_fetch_add(&calls, 1);
    if (user != &user_a)
        atomic_fetch_add(&torn, 1);
}

static void fn_b(void *user, act_log_level level, const char *msg)
{
    (void)level;
    (void)msg;
    atomic_fetch_add(&calls, 1);
    if (user != &user_b)
        atomic_fetch_add(&torn, 1);
}

static void *setter(void *arg)
{
    int which = (int)(intptr_t)arg;
    for (long i = 0; i < 200000; i++) {
        if ((i ^ which) & 1)
            act_log_set(fn_a, &user_a);
        else
            act_log_set(fn_b, &user_b);
    }
    return NULL;
}

static void *logger(void *arg)
{
    (void)arg;
    while (atomic_load_explicit(&running, memory_order_relaxed))
        act_log(ACT_LOG_ERROR, "x");
    return NULL;
}

int main(void)
{
    act_log_set(fn_a, &user_a);
    act_log_set_level(ACT_LOG_DEBUG);
    pthread_t s[2], l[2];
    for (int i = 0; i < 2; i++)
        CHECK_FATAL(pthread_create(&l[i], NULL, logger, NULL) == 0);
    for (int i = 0; i < 2; i++)
        CHECK_FATAL(pthread_create(&s[i], NULL, setter, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < 2; i++)
        pthread_join(s[i], NULL);
    atomic_store(&running, 0);
    for (int i = 0; i < 2; i++)
        pthread_join(l[i], NULL);
    act_log_set(NULL, NULL);
    printf("%ld log calls, %ld with a torn (function, user) pair\n",
           (long)atomic_load(&calls), (long)atomic_load(&torn));
    CHECK(atomic_load(&calls) > 0);
    CHECK_EQ_INT(atomic_load(&torn), 0);
    CHECK_MAIN_END;
}
