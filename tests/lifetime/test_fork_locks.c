/* SPDX-License-Identifier: MIT */
/*
 * fork() while other threads hold the library's process-wide locks (issue
 * 12): threads hammer act_thread_name, act_activity_type_register and
 * act_name while the main thread forks repeatedly, with no session ever
 * created (the fork handlers used to be installed by the first session,
 * and only for the interned-name lock). Each child calls the same three
 * functions and exits. A child that deadlocks is killed by the alarm it
 * sets itself (a harness timeout, not a timed assertion) and the test
 * fails naming the child.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <actrace/actrace.h>

#include "check.h"

#define FORKS 300

static _Atomic int running = 1;

static void *hammer(void *arg)
{
    int which = (int)(intptr_t)arg;
    char buf[64];
    unsigned i = 0;
    while (atomic_load_explicit(&running, memory_order_relaxed)) {
        snprintf(buf, sizeof buf, "n%u_%d", i++ % 4096, which);
        switch (which) {
        case 0: act_thread_name(buf); break;
        case 1: act_name(buf); break;
        case 2: {
            act_activity_type t;
            snprintf(buf, sizeof buf, "lt_type_%u", i % 8);
            act_activity_type_register(buf, ACT_SHAPE_HOST_SPAN, &t);
            break;
        }
        }
    }
    return NULL;
}

int main(void)
{
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        CHECK_FATAL(pthread_create(&th[i], NULL, hammer, (void *)(intptr_t)i) == 0);
    int hung = 0, failed = 0;
    for (int k = 0; k < FORKS; k++) {
        pid_t pid = fork();
        CHECK_FATAL(pid >= 0);
        if (pid == 0) {
            alarm(20); /* a deadlocked child dies of SIGALRM */
            act_thread_name("child");
            act_activity_type t;
            if (act_activity_type_register("lt_child_type", ACT_SHAPE_HOST_SPAN, &t) != 0)
                _exit(3);
            if (act_name("child name") == 0)
                _exit(4);
            _exit(0);
        }
        int st = 0;
        CHECK_FATAL(waitpid(pid, &st, 0) == pid);
        if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM) {
            fprintf(stderr, "fork %d: the child deadlocked\n", k);
            hung++;
        } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "fork %d: the child failed (status 0x%x)\n", k, st);
            failed++;
        }
        if (hung)
            break;
    }
    atomic_store(&running, 0);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    CHECK_EQ_INT(hung, 0);
    CHECK_EQ_INT(failed, 0);
    CHECK_MAIN_END;
}
