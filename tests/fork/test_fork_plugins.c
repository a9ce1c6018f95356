/* SPDX-License-Identifier: MIT */
/*
 * Forked children and the process-wide plugins (opencl layer, nvtx
 * injection) under `actrace record --plugin opencl --plugin nvtx`:
 *  - C (`test_ForkPlugins prog N`): the parent initialises OpenCL and
 *    NVTX and forks; the parent makes N clGetDeviceIDs calls and 1000
 *    NVTX ranges "parent", then lets the child go, which makes N
 *    clGetPlatformInfo calls and 1000 ranges "child" and exits;
 *  - Python (mp_fork.py): multiprocessing with the fork start method, two
 *    workers calling the same library through ctypes (N clGetPlatformInfo,
 *    N ranges "worker"; they end by os._exit, so record rebuilds their
 *    traces from their spools), the main process N clGetDeviceIDs and N
 *    ranges "main" after joining them. The workers' NVTX ranges are not
 *    checked: the nvtx plugin holds ranges until its flush, which a
 *    process that ends by _exit never reaches (docs/nvtx.md).
 *  - a library user (`test_ForkPlugins lib`, no record): a session of its
 *    own with both plugins, fork, the child starts a session of its own
 *    and writes it: each trace holds its process's calls and ranges only,
 *    and the child's session loaded both plugins.
 * Each process's calls must appear once, in its own process, none of
 * another's; every process has both plugins loaded (none declined as
 * "already in use"), nothing dropped, and `actrace check` passes. Before
 * plugins reset their state in forked children, the child's plugins
 * declined (its calls and ranges were missing, silently) and its OpenCL
 * calls went into the parent's session: under record into the parent's
 * shared spool, over the parent's own calls.
 * Skipped (77) without an OpenCL platform.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fork/fork_util.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define LIB ACT_BINARY_DIR "/tests/fork/libact_fork_calls.so"
#define PY_SCRIPT ACT_SOURCE_DIR "/tests/fork/mp_fork.py"
#define WORK ACT_BINARY_DIR "/tests/fork"
#define N_C 20000
#define N_NVTX 1000
#define N_PY 3000

enum { FC_PLATFORM_IDS = 0, FC_PLATFORM_INFO = 1, FC_DEVICE_IDS = 2 };
int fc_opencl(int which, int n);
void fc_nvtx(const char *msg, int n);

static int prog(int n)
{
    if (fc_opencl(FC_PLATFORM_IDS, 1) != 1)
        return 77;
    fc_nvtx("parent before", 10);
    int gate[2];
    pid_t pid = fu_fork_gated(gate);
    if (pid < 0)
        return 3;
    if (pid == 0) {
        int ok = fc_opencl(FC_PLATFORM_INFO, n) == n;
        fc_nvtx("child", N_NVTX);
        exit(ok ? 0 : 5);
    }
    int ok = fc_opencl(FC_DEVICE_IDS, n) == n;
    fc_nvtx("parent", N_NVTX);
    int st = fu_go_and_wait(gate, pid);
    return st < 0 ? 7 : !ok ? 8 : st ? 10 + st : 0;
}

/* A library user's session with both plugins, started (NULL on failure). */
static act_session *lib_session(void)
{
    const char *plugins[] = {ACT_BINARY_DIR "/plugins/opencl.so",
                             ACT_BINARY_DIR "/plugins/nvtx.so"};
    act_session_opts o;
    act_session_opts_init(&o);
    o.plugins = plugins;
    o.plugin_count = 2;
    act_session *s = NULL;
    if (act_session_create(&o, &s) != 0)
        return NULL;
    if (act_session_start(s) != 0) {
        act_session_destroy(s);
        return NULL;
    }
    return s;
}

static int lib_write(act_session *s, const char *path)
{
    int rc = act_session_stop(s);
    if (rc == 0)
        rc = act_session_write(s, path);
    act_session_destroy(s);
    return rc;
}

/* `test_ForkPlugins lib PARENT_TRACE CHILD_TRACE`: the same without
 * record, sessions of the library's own, the child starting one after
 * the fork (its plugins must load again). */
static int lib(const char *ptrace, const char *ctrace)
{
    act_session *s = lib_session();
    if (!s)
        return 2;
    if (fc_opencl(FC_PLATFORM_IDS, 1) != 1)
        return 77;
    fc_nvtx("parent before", 10);
    int gate[2];
    pid_t pid = fu_fork_gated(gate);
    if (pid < 0)
        return 3;
    if (pid == 0) {
        act_session *c = lib_session();
        if (!c)
            exit(4);
        int ok = fc_opencl(FC_PLATFORM_INFO, N_NVTX) == N_NVTX;
        fc_nvtx("child", N_NVTX);
        exit(lib_write(c, ctrace) == 0 && ok ? 0 : 5);
    }
    int ok = fc_opencl(FC_DEVICE_IDS, N_NVTX) == N_NVTX;
    fc_nvtx("parent", N_NVTX);
    int st = fu_go_and_wait(gate, pid);
    if (lib_write(s, ptrace) != 0)
        return 6;
    return st < 0 ? 7 : !ok ? 8 : st ? 10 + st : 0;
}

static int has_plugin(json_t *root, const char *name)
{
    size_t i;
    json_t *pl;
    json_array_foreach(json_object_get(json_object_get(root, "actraceStats"), "plugins"), i, pl) {
        const char *nm = json_string_value(json_object_get(pl, "name"));
        if (nm && !strcmp(nm, name))
            return 1;
    }
    return 0;
}

static void lib_fork(const char *self)
{
    char ptrace[512], ctrace[512], cmd[2048];
    const char *dir = getenv("ACT_TRACE_DIR");
    snprintf(ptrace, sizeof ptrace, "%s/fork_plugins_lib_parent.json", dir ? dir : ACT_TRACE_DIR);
    snprintf(ctrace, sizeof ctrace, "%s/fork_plugins_lib_child.json", dir ? dir : ACT_TRACE_DIR);
    snprintf(cmd, sizeof cmd, "%s lib %s %s >" WORK "/fork_lib.log 2>&1", self, ptrace, ctrace);
    CHECK_EQ_INT(fu_run(cmd), 0);
    json_t *p = tu_load(ptrace), *c = tu_load(ctrace);
    CHECK_EQ_INT(fu_count(p, "clGetDeviceIDs", NULL, 0), N_NVTX);
    CHECK_EQ_INT(fu_count(p, "parent", NULL, 0), N_NVTX);
    CHECK_EQ_INT(fu_count(p, "parent before", NULL, 0), 10);
    CHECK_EQ_INT(fu_count(p, "clGetPlatformInfo", NULL, 0), 0);
    CHECK_EQ_INT(fu_count(p, "child", NULL, 0), 0);
    CHECK_EQ_INT(fu_count(c, "clGetPlatformInfo", NULL, 0), N_NVTX);
    CHECK_EQ_INT(fu_count(c, "child", NULL, 0), N_NVTX);
    CHECK_EQ_INT(fu_count(c, "clGetDeviceIDs", NULL, 0), 0);
    CHECK_EQ_INT(fu_count(c, "parent", NULL, 0), 0);
    CHECK_EQ_INT(fu_count(c, "parent before", NULL, 0), 0);
    CHECK(has_plugin(c, "opencl") && has_plugin(c, "nvtx"));
    CHECK_EQ_INT(json_integer_value(json_object_get(tu_stats(c), "dropped")), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(tu_stats(p), "dropped")), 0);
    json_decref(p);
    json_decref(c);
}

/* Every process in the trace: nothing dropped, and both plugins loaded
 * (a trace rebuilt from a spool lists no plugin). */
static void check_processes(json_t *root, size_t nproc)
{
    fu_check_no_drops(root, nproc);
    size_t i, j;
    json_t *p, *pl;
    json_array_foreach(json_object_get(root, "actraceProcesses"), i, p) {
        json_t *st = json_object_get(p, "actraceStats");
        json_int_t pid = json_integer_value(json_object_get(p, "pid"));
        if (json_is_true(json_object_get(p, "recovered")))
            continue;
        int opencl = 0, nvtx = 0;
        json_array_foreach(json_object_get(st, "plugins"), j, pl) {
            const char *nm = json_string_value(json_object_get(pl, "name"));
            opencl += nm && !strcmp(nm, "opencl");
            nvtx += nm && !strcmp(nm, "nvtx");
        }
        if (!CHECK(opencl == 1 && nvtx == 1))
            fprintf(stderr, "pid %lld: opencl %d, nvtx %d loaded\n", (long long)pid, opencl,
                    nvtx);
    }
}

static json_t *record(const char *trace, const char *prog_cmd, const char *out)
{
    static int first = 1;
    char cmd[8192];
    remove(trace);
    snprintf(cmd, sizeof cmd,
             ACTRACE " record --force -o %s --plugin opencl --plugin nvtx -- %s >%s 2>%s.log",
             trace, prog_cmd, out, out);
    int rc = fu_run(cmd);
    if (rc == 77 && first)
        CHECK_SKIP("no OpenCL platform (install pocl-opencl-icd)");
    first = 0;
    if (!CHECK_EQ_INT(rc, 0)) {
        char log[600];
        snprintf(log, sizeof log, "%s.log", out);
        char *l = tu_slurp(log, NULL);
        fprintf(stderr, "%s\n", l ? l : "");
        free(l);
    }
    json_error_t err;
    json_t *root = json_load_file(trace, 0, &err);
    if (!root)
        fprintf(stderr, "%s:%d: %s\n", trace, err.line, err.text);
    snprintf(cmd, sizeof cmd, ACTRACE " check %s >/dev/null", trace);
    CHECK_EQ_INT(fu_run(cmd), 0);
    return root;
}

static void c_fork(const char *self)
{
    const char *dir = getenv("ACT_TRACE_DIR");
    char trace[512], cmd[1024];
    snprintf(trace, sizeof trace, "%s/fork_plugins_c.json", dir ? dir : ACT_TRACE_DIR);
    snprintf(cmd, sizeof cmd, "%s prog %d", self, N_C);
    json_t *root = record(trace, cmd, WORK "/fork_c.out");
    CHECK_FATAL(root != NULL);
    json_int_t parent = fu_pid_of(root, "parent"), child = fu_pid_of(root, "child");
    CHECK(parent > 0 && child > 0 && parent != child);
    CHECK_EQ_INT(fu_count(root, "clGetDeviceIDs", NULL, parent), N_C);
    CHECK_EQ_INT(fu_count(root, "clGetDeviceIDs", NULL, 0), N_C);
    CHECK_EQ_INT(fu_count(root, "clGetPlatformInfo", NULL, child), N_C);
    CHECK_EQ_INT(fu_count(root, "clGetPlatformInfo", NULL, 0), N_C);
    CHECK_EQ_INT(fu_count(root, "parent", NULL, parent), N_NVTX);
    CHECK_EQ_INT(fu_count(root, "parent", NULL, 0), N_NVTX);
    CHECK_EQ_INT(fu_count(root, "child", NULL, child), N_NVTX);
    CHECK_EQ_INT(fu_count(root, "child", NULL, 0), N_NVTX);
    CHECK_EQ_INT(fu_count(root, "parent before", NULL, parent), 10);
    CHECK_EQ_INT(fu_count(root, "parent before", NULL, 0), 10);
    check_processes(root, 2);
    json_decref(root);
}

static void py_fork(void)
{
    const char *py = "/usr/bin/python3";
    if (access(py, X_OK) != 0) {
        printf("note: %s missing: the multiprocessing case is skipped\n", py);
        return;
    }
    const char *dir = getenv("ACT_TRACE_DIR");
    char trace[512], cmd[1024];
    snprintf(trace, sizeof trace, "%s/fork_plugins_py.json", dir ? dir : ACT_TRACE_DIR);
    snprintf(cmd, sizeof cmd, "%s " PY_SCRIPT " " LIB " %d", py, N_PY);
    json_t *root = record(trace, cmd, WORK "/fork_py.out");
    CHECK_FATAL(root != NULL);
    char *out = tu_slurp(WORK "/fork_py.out", NULL);
    CHECK_FATAL(out != NULL);
    long main_pid = 0, workers[2] = {0, 0};
    int nw = 0;
    for (const char *l = out; l && *l;) {
        long v;
        if (sscanf(l, "main %ld", &v) == 1)
            main_pid = v;
        else if (sscanf(l, "worker %ld", &v) == 1 && nw < 2)
            workers[nw++] = v;
        l = strchr(l, '\n');
        l = l ? l + 1 : NULL;
    }
    free(out);
    CHECK_FATAL(main_pid > 0 && nw == 2);
    CHECK_EQ_INT(fu_count(root, "clGetDeviceIDs", NULL, main_pid), N_PY);
    CHECK_EQ_INT(fu_count(root, "clGetDeviceIDs", NULL, 0), N_PY);
    CHECK_EQ_INT(fu_count(root, "main", NULL, main_pid), N_PY);
    CHECK_EQ_INT(fu_count(root, "main before", NULL, main_pid), 10);
    CHECK_EQ_INT(fu_count(root, "main before", NULL, 0), 10);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(fu_count(root, "clGetPlatformInfo", NULL, workers[i]), N_PY);
        CHECK_EQ_INT(fu_count(root, "clGetDeviceIDs", NULL, workers[i]), 0);
    }
    CHECK_EQ_INT(fu_count(root, "clGetPlatformInfo", NULL, 0), 2 * N_PY);
    CHECK_EQ_INT(fu_count(root, "worker", NULL, main_pid), 0);
    CHECK_EQ_INT(fu_count(root, "main", NULL, 0), N_PY);
    check_processes(root, 3);
    json_decref(root);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "prog") == 0)
        return prog(atoi(argv[2]));
    if (argc > 3 && strcmp(argv[1], "lib") == 0)
        return lib(argv[2], argv[3]);
    unsetenv("ACTRACE_PLUGIN_DIR");
    unsetenv("ACTRACE_PLUGINS");
    unsetenv("OPENCL_LAYERS");
    unsetenv("NVTX_INJECTION64_PATH");
    CHECK_FATAL(system("mkdir -p " WORK) == 0);
    /* The calls are the markers counted per process: draw every one,
     * however short (the opencl plugin counts calls under 1 us that
     * launch nothing and leaves them out by default). */
    FILE *cf = fopen(WORK "/all_calls.conf", "w");
    CHECK_FATAL(cf && fputs("OPENCL_MIN_CALL_NS = 0\n", cf) >= 0 && fclose(cf) == 0);
    setenv("ACTRACE_CONFIG", WORK "/all_calls.conf", 1);
    c_fork(argv[0]);
    py_fork();
    lib_fork(argv[0]);
    return check_done();
}
