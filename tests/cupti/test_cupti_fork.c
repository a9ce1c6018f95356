/* SPDX-License-Identifier: MIT */
/*
 * The cupti plugin and fork(), without a GPU: `actrace record --plugin
 * cupti` with libfakecupti.so and libfakecuda.so standing in for libcupti
 * and the driver (as PluginCuptiFake) runs `test_PluginCuptiFork prog`:
 *  - the parent launches 100 kernels "parent_kernel" after the fork and
 *    flushes CUPTI (its buffers are translated, new chunks carved), then
 *    lets the child go;
 *  - the child launches 100 kernels "child_kernel" and flushes CUPTI, as
 *    CUPTI's worker would deliver them: the parent's instance, which the
 *    child inherited, must neither hand out buffers nor translate them
 *    into the parent's session (under record: the parent's shared spool).
 * The merged trace must hold the parent's 100 kernels and no child
 * kernel; the child's session declines the
 * plugin, saying it was forked from a process that used CUPTI; nothing is
 * dropped and `actrace check` passes. Before the plugin forgot its
 * instance in a forked child, the child's kernels were written over the
 * parent's and the child's plugin declined as "already loaded".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fork/fork_util.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define FAKE_CUPTI ACT_BINARY_DIR "/tests/cupti/libfakecupti.so"
#define FAKE_CUDA ACT_BINARY_DIR "/tests/cupti/libfakecuda.so"
#define WORK ACT_BINARY_DIR "/tests/cupti"
#define N 100

static int prog(void)
{
    /* The plugin opened it (ACTRACE_CUPTI_LIBRARY): the same image. */
    void *fake = dlopen(FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD);
    if (!fake)
        return 3;
    void (*launch)(const char *, uint32_t);
    int (*flush)(uint32_t);
    *(void **)&launch = dlsym(fake, "fake_launch");
    *(void **)&flush = dlsym(fake, "cuptiActivityFlushAll");
    if (!launch || !flush)
        return 4;
    int gate[2];
    pid_t pid = fu_fork_gated(gate);
    if (pid < 0)
        return 6;
    if (pid == 0) {
        for (int i = 0; i < N; i++)
            launch("child_kernel", 1000 + (uint32_t)i);
        flush(0);
        exit(0);
    }
    /* A stream each: the fake's kernels (20 us, launched 1 us apart)
     * would overlap on one. */
    for (int i = 0; i < N; i++)
        launch("parent_kernel", 1 + (uint32_t)i);
    flush(0);
    return fu_go_and_wait(gate, pid) == 0 ? 0 : 9;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "prog") == 0)
        return prog();
    unsetenv("ACTRACE_PLUGIN_DIR");
    unsetenv("ACTRACE_PLUGINS");
    CHECK_FATAL(system("mkdir -p " WORK) == 0);
    const char *dir = getenv("ACT_TRACE_DIR");
    char trace[512], cmd[4096];
    snprintf(trace, sizeof trace, "%s/cupti_fork.json", dir ? dir : ACT_TRACE_DIR);
    remove(trace);
    snprintf(cmd, sizeof cmd,
             "ACTRACE_CUPTI_LIBRARY=" FAKE_CUPTI " ACTRACE_CUDA_DRIVER=" FAKE_CUDA
             " %s record --force -o %s --plugin cupti -- %s prog >" WORK
             "/fork.log 2>&1", ACTRACE, trace, argv[0]);
    int rc = fu_run(cmd);
    FILE *f = fopen(WORK "/fork.log", "r");
    static char log[1 << 16];
    size_t n = f ? fread(log, 1, sizeof log - 1, f) : 0;
    if (f)
        fclose(f);
    log[n] = '\0';
    if (!CHECK_EQ_INT(rc, 0))
        fprintf(stderr, "%s\n", log);
    CHECK(strstr(log, "forked from one that used CUPTI") != NULL);
    CHECK(strstr(log, "already loaded") == NULL);
    json_error_t err;
    json_t *root = json_load_file(trace, 0, &err);
    CHECK_FATAL(root != NULL);
    CHECK_EQ_INT(fu_count(root, "parent_kernel", "kernel", 0), N);
    CHECK_EQ_INT(fu_count(root, "child_kernel", "kernel", 0), 0);
    fu_check_no_drops(root, 2);
    json_decref(root);
    snprintf(cmd, sizeof cmd, ACTRACE " check %s >/dev/null", trace);
    CHECK_EQ_INT(fu_run(cmd), 0);
    return check_done();
}
