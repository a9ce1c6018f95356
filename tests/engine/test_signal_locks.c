/* SPDX-License-Identifier: MIT */
/*
 * A signal handler that records never waits for a lock its own thread
 * holds: signals arrive at a high rate (a helper thread's pthread_kill)
 * while the main thread loops on act_session_get_stats (the session lock)
 * and act_name (the string table's lock). The handler records instants with large
 * names (a new chunk every few, under the session lock) and args whose
 * keys miss the thread's key cache (looked up in the string table, under
 * its lock; interned beforehand: act_name's malloc is not
 * async-signal-safe). The test
 * must finish (a watchdog fails it after 120 s: a deadlock), and every
 * event the handler attempted is recorded or counted dropped.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"

static pthread_t main_thread;
static atomic_int stop;
static atomic_long handled;
static char bigname[12000];

static void on_usr1(int sig)
{
    (void)sig;
    long n = atomic_fetch_add(&handled, 1);
    char key[32];
    snprintf(key, sizeof key, "k%ld", n % 5000);
    bigname[0] = (char)('a' + n % 26);
    act_instant(ACT_CPU_OP, bigname);
    act_arg_int(key, n);
}

static void *kicker(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        pthread_kill(main_thread, SIGUSR1);
        usleep(50);
    }
    return NULL;
}

static void *watchdog(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1200 && !atomic_load(&stop); i++)
        usleep(100 * 1000);
    if (!atomic_load(&stop)) {
        static const char m[] = "RecordSignalLocks: deadlocked (a handler waited for a lock "
                                "its own thread holds)\n";
        ssize_t w = write(2, m, sizeof m - 1);
        (void)w;
        _exit(1);
    }
    return NULL;
}

int main(void)
{
    memset(bigname, 'x', sizeof bigname - 1);
    act_session *s = tu_session("MAX_BUFFER_SIZE_MB = 64\n");
    main_thread = pthread_self();
    for (int i = 0; i < 5000; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        CHECK(act_name(key) != 0);
    }
    act_instant(ACT_CPU_OP, "attach"); /* the thread's buffer: malloc */
    pthread_t wd, k;
    pthread_create(&wd, NULL, watchdog, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_create(&k, NULL, kicker, NULL);
    act_session_stats st;
    /* Until 20000 signals were handled (get_stats slows down as the
     * session grows: most signals land inside it). */
    for (int i = 0; atomic_load(&handled) < 20000; i++) {
        memset(&st, 0, sizeof st);
        st.struct_size = sizeof st;
        CHECK_EQ_INT(act_session_get_stats(s, &st), 0);
        char nm[32];
        snprintf(nm, sizeof nm, "main %d", i);
        CHECK(act_name(nm) != 0);
    }
    atomic_store(&stop, 1);
    pthread_join(k, NULL);
    pthread_join(wd, NULL);
    signal(SIGUSR1, SIG_IGN);
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK_EQ_INT(act_session_get_stats(s, &st), 0);
    long n = atomic_load(&handled);
    fprintf(stderr, "RecordSignalLocks: %ld signals handled, %llu recorded, %llu dropped\n", n,
            (unsigned long long)st.recorded, (unsigned long long)st.dropped);
    CHECK(n > 0);
    /* Handlers that interrupted the locked sections were counted. */
    CHECK(st.dropped > 0);
    CHECK_EQ_INT((long long)(st.recorded + st.dropped), (long long)n + 1);
    CHECK_EQ_INT((long long)(st.args_recorded + st.args_dropped), (long long)n);
    act_session_stop(s);
    act_session_destroy(s);
    return check_done();
}
