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

#include "fork/fork_util.h"

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
    int gate[2];
    pid_t pid = fu_fork_gated(gate);
    if (pid < 0)
        return 7;
    if (pid == 0) {
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
    if (emit(0, "parent", N) != N)
        return 9;
    int st = fu_go_and_wait(gate, pid);
    if (st < 0)
        return 11;
    if (emit(0, "parent after", 10) != 10)
        return 12;
    return st ? 20 + st : 0;
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
    CHECK_EQ_INT(fu_run(cmd), 0);
    json_t *root = tu_load(trace);
    CHECK_FATAL(root != NULL);
    json_int_t parent = fu_pid_of(root, "parent"), child = fu_pid_of(root, "child");
    CHECK(parent > 0 && child > 0 && parent != child);
    CHECK_EQ_INT(fu_count(root, "before fork", NULL, parent), 10);
    CHECK_EQ_INT(fu_count(root, "parent", NULL, parent), N);
    CHECK_EQ_INT(fu_count(root, "parent after", NULL, parent), 10);
    CHECK_EQ_INT(fu_count(root, "parent", NULL, 0), N);
    CHECK_EQ_INT(fu_count(root, "child", NULL, child), N);
    CHECK_EQ_INT(fu_count(root, "child", NULL, 0), N);
    CHECK_EQ_INT(fu_count(root, "stale", NULL, 0), 0);
    CHECK_EQ_INT(fu_count(root, "before fork", NULL, 0), 10); /* not copied into the child */
    /* Every process: nothing dropped, and as many records as it holds. */
    fu_check_no_drops(root, 2);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(root, "actraceProcesses"), i, p) {
        json_int_t pid = json_integer_value(json_object_get(p, "pid"));
        CHECK_EQ_INT(json_integer_value(
                         json_object_get(json_object_get(p, "actraceStats"), "recorded")),
                     pid == parent ? N + 20 : N);
    }
    json_decref(root);
    snprintf(cmd, sizeof cmd, ACTRACE " check %s >/dev/null", trace);
    CHECK_EQ_INT(fu_run(cmd), 0);
    return check_done();
}
