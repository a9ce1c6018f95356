/* SPDX-License-Identifier: MIT */
/*
 * The buffer pre-fault thread: it runs while a session records (memory
 * past BUFFER_PREALLOC_MB is faulted in ahead of the recording threads),
 * is joined at stop, and a fork()ed child (which has no such thread) can
 * record past its pre-allocated memory in a session of its own. Faults
 * taken by the recording thread are printed, not asserted (a busy machine
 * may leave the pre-fault thread behind; `make bench` measures them).
 * Not under TSan, which does not support fork() with threads running.
 */
#include <dirent.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"

static int ntasks(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

#define SPANS 200000 /* 6.4 MB of records: well past 1 MB pre-allocated */

static long record(act_name_id n)
{
    struct rusage u0, u1;
    getrusage(RUSAGE_THREAD, &u0);
    for (long i = 0; i < SPANS; i++)
        act_span_record_id(ACT_CPU_OP, n, 1000 + i, 1001 + i);
    getrusage(RUSAGE_THREAD, &u1);
    return u1.ru_minflt - u0.ru_minflt;
}

/* In the child: its own session records past its pre-allocation. */
static int child(void)
{
    int bad = 0;
    if (act_session_active() != NULL)
        bad |= 1;
    int base = ntasks();
    act_session *c = NULL;
    const char *cfg = "BUFFER_PREALLOC_MB = 1\n";
    act_session_opts o;
    act_session_opts_init(&o);
    o.config_text = cfg;
    o.config_text_len = strlen(cfg);
    if (act_session_create(&o, &c) != 0 || act_session_start(c) != 0)
        _exit(2);
    record(act_name("child span"));
    act_session_stop(c);
    if (ntasks() != base)
        bad |= 4;
    act_session_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    act_session_get_stats(c, &st);
    if (st.recorded != SPANS || st.dropped)
        bad |= 8;
    act_session_destroy(c);
    return bad;
}

int main(void)
{
    act_log_set_level(ACT_LOG_ERROR);
    int base = ntasks();
    CHECK(base >= 1);
    act_session *s = tu_session("BUFFER_PREALLOC_MB = 1\n");
    int running = ntasks();
    CHECK_EQ_INT(running, base + 1); /* the pre-fault thread */
    long faults = record(act_name("parent span"));
    printf("recording thread: %ld minor faults for %d spans (%.1f MB)\n", faults, SPANS,
           SPANS * 32.0 / 1048576);

    pid_t pid = fork();
    if (pid == 0)
        _exit(child());
    CHECK_FATAL(pid > 0);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK_EQ_INT(WEXITSTATUS(status), 0);

    record(act_name("parent after fork"));
    CHECK_OK(act_session_stop(s));
    CHECK_EQ_INT(ntasks(), running - 1); /* joined */
    /* Every span of this process, none of the child's. */
    act_session_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK_OK(act_session_get_stats(s, &st));
    CHECK_EQ_U64(st.recorded, 2 * SPANS);
    CHECK_EQ_U64(st.dropped, 0);
    act_session_destroy(s);
    CHECK_EQ_INT(ntasks(), running - 1);
    return check_done();
}
