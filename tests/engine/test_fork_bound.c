/* SPDX-License-Identifier: MIT */
/*
 * A session is bound to the process that created it. Under `actrace
 * record` (chunks in a spool the parent maps shared), this program loads
 * the hook test plugin (tests/plugin/hook_plugin.c), forks, and then:
 *  - the parent emits N spans "parent" through its plugin context, then
 *    lets the child go;
 *  - the child emits N spans "stale" through the context it inherited
 *    from its parent (as a plugin would that keeps its process-wide state
 *    across fork), which the engine must refuse (the emits return
 *    nothing), and N spans "child" through its own session's context.
 * The merged trace must hold each process's own spans once, in its own
 * process, no "stale" span anywhere, no drop, and pass `actrace check`.
 * Before sessions were bound, the child's spans landed in the parent's
 * shared chunks over the parent's own (the parent's trace showed the
 * child's spans, or the parent crashed in its writer).
 * `test_RecordForkBound prog` is the program.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define HOOK ACT_BINARY_DIR "/tests/plugin/plugins/hook.so"
#define N 20000

static int prog(void)
{
    void *h = dlopen(HOOK, RTLD_NOW | RTLD_NOLOAD);
    if (!h) {
        fprintf(stderr, "hook.so is not loaded (run under actrace record --plugin)\n");
        return 3;
    }
    int (*emit)(int, const char *, int);
    int (*instances)(void);
    *(void **)&emit = dlsym(h, "tp_hook_emit");
    *(void **)&instances = dlsym(h, "tp_hook_instances");
    if (!emit || !instances || instances() != 1)
        return 4;
    if (emit(0, "before fork", 10) != 10)
        return 5;
    int go[2];
    if (pipe(go) != 0)
        return 6;
    pid_t pid = fork();
    if (pid < 0)
        return 7;
    if (pid == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) != 1)
            _exit(8);
        int bad = 0;
        int stale = emit(0, "stale", N);
        if (stale != 0) {
            fprintf(stderr, "child: %d spans accepted into the parent's session\n", stale);
            bad |= 1;
        }
        /* The child's own session (started by the fork handler) loaded
         * the plugin again: instance 1. */
        if (instances() != 2 || emit(1, "child", N) != N)
            bad |= 2;
        exit(bad);
    }
    close(go[0]);
    if (emit(0, "parent", N) != N)
        return 9;
    if (write(go[1], "x", 1) != 1)
        return 10;
    close(go[1]);
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return 11;
    if (emit(0, "parent after", 10) != 10)
        return 12;
    return WEXITSTATUS(st) ? 20 + WEXITSTATUS(st) : 0;
}

/* Spans named @p name of process @p pid (any pid if 0). */
static int count(json_t *root, const char *name, json_int_t pid)
{
    int n = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(tu_events(root), i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *nm = json_string_value(json_object_get(ev, "name"));
        if (ph && nm && !strcmp(ph, "X") && !strcmp(nm, name) &&
            (!pid || json_integer_value(json_object_get(ev, "pid")) == pid))
            n++;
    }
    return n;
}

/* The pid of the first span named @p name. */
static json_int_t pid_of(json_t *root, const char *name)
{
    json_t *ev = tu_find(root, "X", name);
    return ev ? json_integer_value(json_object_get(ev, "pid")) : 0;
}

static int run(const char *cmd)
{
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "prog") == 0)
        return prog();
    unsetenv("ACTRACE_PLUGINS");
    const char *trace = tu_trace_path("fork_bound.json");
    char cmd[10240];
    snprintf(cmd, sizeof cmd, ACTRACE " record --force -o %s --plugin " HOOK " -- %s prog",
             trace, argv[0]);
    CHECK_EQ_INT(run(cmd), 0);
    json_t *root = tu_load(trace);
    CHECK_FATAL(root != NULL);
    json_int_t parent = pid_of(root, "parent"), child = pid_of(root, "child");
    CHECK(parent > 0 && child > 0 && parent != child);
    CHECK_EQ_INT(count(root, "before fork", parent), 10);
    CHECK_EQ_INT(count(root, "parent", parent), N);
    CHECK_EQ_INT(count(root, "parent after", parent), 10);
    CHECK_EQ_INT(count(root, "parent", 0), N);
    CHECK_EQ_INT(count(root, "child", child), N);
    CHECK_EQ_INT(count(root, "child", 0), N);
    CHECK_EQ_INT(count(root, "stale", 0), 0);
    CHECK_EQ_INT(count(root, "before fork", 0), 10); /* not copied into the child */
    /* Every process: nothing dropped, and as many records as it holds. */
    json_t *procs = json_object_get(root, "actraceProcesses");
    CHECK_EQ_INT(json_array_size(procs), 2);
    size_t i;
    json_t *p;
    json_array_foreach(procs, i, p) {
        json_t *st = json_object_get(p, "actraceStats");
        json_int_t pid = json_integer_value(json_object_get(p, "pid"));
        CHECK_EQ_INT(json_integer_value(json_object_get(st, "dropped")), 0);
        CHECK_EQ_INT(json_integer_value(json_object_get(st, "recorded")),
                     pid == parent ? N + 20 : N);
    }
    json_decref(root);
    snprintf(cmd, sizeof cmd, ACTRACE " check %s >/dev/null", trace);
    CHECK_EQ_INT(run(cmd), 0);
    return check_done();
}
