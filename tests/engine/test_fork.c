/* SPDX-License-Identifier: MIT */
/*
 * fork() while recording: the child starts with a clean state (no active
 * session, recording calls are no-ops, it can start its own session and
 * write its own trace), and the parent's trace holds only the parent's
 * events.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"

int main(void)
{
    act_log_set_level(ACT_LOG_ERROR);
    act_session *s = tu_session(NULL);
    act_span_begin(ACT_CPU_OP, "parent before fork");
    act_span_end();
    act_span_begin(ACT_CPU_OP, "open across fork");

    const char *child_path = tu_trace_path("fork_child.json");
    char child_copy[4096];
    snprintf(child_copy, sizeof child_copy, "%s", child_path);
    unlink(child_copy);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = 0;
        if (act_session_active() != NULL)
            bad |= 1;
        act_span_begin(ACT_CPU_OP, "child without session");
        act_span_end();
        act_name("interned in child"); /* the string table lock works */
        act_session *c = NULL;
        if (act_session_create(NULL, &c) != 0 || act_session_start(c) != 0)
            bad |= 2;
        act_span_begin(ACT_CPU_OP, "child span");
        act_span_end();
        if (act_session_write(c, child_copy) != 0)
            bad |= 4;
        act_session_destroy(c);
        _exit(bad);
    }
    CHECK_FATAL(pid > 0);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK_EQ_INT(WEXITSTATUS(status), 0);
    act_span_end();
    act_span_begin(ACT_CPU_OP, "parent after fork");
    act_span_end();
    const char *path = tu_trace_path("fork_parent.json");
    CHECK_OK(act_session_write(s, path));

    json_t *root = tu_load(path);
    CHECK_EQ_INT(tu_count(root, "X", "parent before fork"), 1);
    CHECK_EQ_INT(tu_count(root, "X", "open across fork"), 1);
    CHECK_EQ_INT(tu_count(root, "X", "parent after fork"), 1);
    CHECK_EQ_INT(tu_count(root, "X", "child span"), 0);
    CHECK_EQ_INT(tu_count(root, "X", "child without session"), 0);
    json_t *open = tu_find(root, "X", "open across fork");
    CHECK(open && !json_object_get(json_object_get(open, "args"), "unfinished"));
    json_decref(root);

    json_t *croot = tu_load(child_copy);
    CHECK_EQ_INT(tu_count(croot, "X", "child span"), 1);
    CHECK_EQ_INT(tu_count(croot, "X", "parent before fork"), 0);
    CHECK_EQ_INT(tu_count(croot, "X", "child without session"), 0);
    json_t *cs = tu_find(croot, "X", "child span");
    CHECK(cs && tu_int(cs, "pid") == pid);
    json_decref(croot);
    act_session_destroy(s);
    return check_done();
}
