/* SPDX-License-Identifier: MIT */
/*
 * Thread churn under the default config: 5000 short-lived threads each
 * recording one span lose nothing (threads start with a small chunk), and
 * a thread that gets a dead thread's tid does not inherit its name.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"

#define CHURN 5000

static void *one_span(void *arg)
{
    long i = (long)arg;
    if (i % 2 == 0) {
        char name[32];
        snprintf(name, sizeof name, "churn %ld", i);
        act_thread_name(name);
    }
    act_span_begin(ACT_CPU_OP, "short");
    act_span_end();
    return NULL;
}

static void test_churn(void)
{
    act_session *s = tu_session(NULL); /* the default config */
    for (long i = 0; i < CHURN; i += 8) {
        pthread_t th[8];
        int n = 0;
        for (long j = i; j < i + 8 && j < CHURN; j++)
            CHECK_FATAL(pthread_create(&th[n++], NULL, one_span, (void *)j) == 0);
        for (int k = 0; k < n; k++)
            pthread_join(th[k], NULL);
    }
    const char *path = tu_trace_path("thread_churn.json");
    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path);
    json_t *st = tu_stats(root);
    CHECK_EQ_INT((long long)tu_count(root, "X", "short"), CHURN);
    CHECK_EQ_INT(tu_int(st, "dropped"), 0);
    CHECK_EQ_INT(tu_int(st, "recorded"), CHURN);
    printf("buffer bytes for %d threads: %lld\n", CHURN, tu_int(st, "buffer_bytes"));
    json_decref(root);
    act_session_destroy(s);
}

static _Atomic int target_tid;
static _Atomic int hit;

static void *dead_named(void *arg)
{
    (void)arg;
    atomic_store(&target_tid, (int)syscall(SYS_gettid));
    act_thread_name("dead thread");
    act_span_record(ACT_CPU_OP, "before", 1000, 1005);
    return NULL;
}

static void *probe(void *arg)
{
    (void)arg;
    if ((int)syscall(SYS_gettid) == atomic_load(&target_tid)) {
        atomic_store(&hit, 1);
        act_span_record(ACT_CPU_OP, "after", 2000, 2005);
    }
    return NULL;
}

/* Creates threads until one gets the tid of a named thread that exited
 * (the kernel hands tids out in a cycle of pid_max); skipped where that
 * takes too long. */
static int test_reused_tid(void)
{
    long pid_max = 0;
    FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
    if (f) {
        if (fscanf(f, "%ld", &pid_max) != 1)
            pid_max = 0;
        fclose(f);
    }
    if (pid_max <= 0 || pid_max > 65536) {
        printf("skip: pid_max %ld, a tid cannot be made to recur quickly\n", pid_max);
        return 0;
    }
    act_session *s = tu_session(NULL);
    pthread_t th;
    CHECK_FATAL(pthread_create(&th, NULL, dead_named, NULL) == 0);
    pthread_join(th, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < 4 * pid_max && !atomic_load(&hit); i++) {
        if (pthread_create(&th, NULL, probe, NULL) != 0)
            break;
        pthread_join(th, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (t1.tv_sec - t0.tv_sec > 60)
            break;
    }
    if (!atomic_load(&hit)) {
        printf("skip: no tid came back in time\n");
        act_session_destroy(s);
        return 0;
    }
    const char *path = tu_trace_path("thread_tid_reuse.json");
    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path), *e;
    size_t i;
    int tid = atomic_load(&target_tid), dead = 0, other = 0;
    json_array_foreach(tu_events(root), i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (!ph || strcmp(ph, "M") || !nm || strcmp(nm, "thread_name") ||
            json_integer_value(json_object_get(e, "tid")) != tid)
            continue;
        const char *tn = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
        if (tn && strcmp(tn, "dead thread") == 0)
            dead++;
        else
            other++;
    }
    printf("tid %d: named by the dead thread %d time(s), otherwise %d\n", tid, dead, other);
    /* The dead thread keeps its name; the new one does not inherit it (it
     * has exited too, so it has no name at all, or the kernel's). */
    CHECK_EQ_INT(dead, 1);
    CHECK(other <= 1);
    CHECK_EQ_INT((long long)tu_count(root, "X", "before") + (long long)tu_count(root, "X", "after"), 2);
    json_decref(root);
    act_session_destroy(s);
    return 1;
}

int main(void)
{
    act_log_set_level(ACT_LOG_ERROR);
    test_churn();
    test_reused_tid();
    return check_done();
}
