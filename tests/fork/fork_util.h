/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the tests that run a program which forks under
 * `actrace record` and check the merged trace (RecordForkBound,
 * ForkPlugins, PluginCuptiFork, OpenclAnswers): run a command, fork a
 * child that waits for the parent's go, count events by name, category
 * and process, check every process's drop count. Header-only, static,
 * on top of tests/engine/trace_util.h.
 */
#ifndef ACT_TESTS_FORK_UTIL_H
#define ACT_TESTS_FORK_UTIL_H

#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"

/* Run @p cmd with the shell: its exit status, or -1 if it did not exit. */
static inline int fu_run(const char *cmd)
{
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* fork(): in the child, returns 0 once the parent called fu_go (or
 * _exit(99) if the parent went away first); in the parent, the child's
 * pid (-1 on failure). @p fd holds the gate. */
static inline pid_t fu_fork_gated(int fd[2])
{
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        close(fd[1]);
        if (read(fd[0], &c, 1) != 1)
            _exit(99);
        close(fd[0]);
        return 0;
    }
    close(fd[0]);
    return pid;
}

/* Lets the child of fu_fork_gated go, waits for it: its exit status, or
 * -1 if it did not exit. */
static inline int fu_go_and_wait(int fd[2], pid_t pid)
{
    int st = 0;
    if (write(fd[1], "x", 1) != 1)
        return -1;
    close(fd[1]);
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

/* Complete events ("X") named @p name, of category @p cat (any if NULL),
 * of process @p pid (any if 0). */
static inline int fu_count(json_t *root, const char *name, const char *cat, json_int_t pid)
{
    int n = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(tu_events(root), i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *nm = json_string_value(json_object_get(ev, "name"));
        const char *c = json_string_value(json_object_get(ev, "cat"));
        if (ph && !strcmp(ph, "X") && (!name || (nm && !strcmp(nm, name))) &&
            (!cat || (c && !strcmp(c, cat))) &&
            (!pid || json_integer_value(json_object_get(ev, "pid")) == pid))
            n++;
    }
    return n;
}

/* The pid of the first complete event named @p name (0: none). */
static inline json_int_t fu_pid_of(json_t *root, const char *name)
{
    json_t *ev = tu_find(root, "X", name);
    return ev ? json_integer_value(json_object_get(ev, "pid")) : 0;
}

/* The merged trace has @p nproc processes, none of which dropped an
 * event. */
static inline void fu_check_no_drops(json_t *root, size_t nproc)
{
    json_t *procs = json_object_get(root, "actraceProcesses");
    CHECK_EQ_INT(json_array_size(procs), nproc);
    size_t i;
    json_t *p;
    json_array_foreach(procs, i, p) {
        json_t *st = json_object_get(p, "actraceStats");
        if (!CHECK_EQ_INT(json_integer_value(json_object_get(st, "dropped")), 0))
            fprintf(stderr, "pid %lld dropped events\n",
                    (long long)json_integer_value(json_object_get(p, "pid")));
    }
}

#endif
