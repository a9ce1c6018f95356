/* SPDX-License-Identifier: MIT */
/*
 * The cupti plugin on a machine without a GPU: `actrace record --plugin
 * cupti -- actrace-demo` exits with the demo's status (0), the plugin
 * declines with its reason in the log ("no CUDA driver", or with the
 * toolkit's stub libcuda.so "stub library"), and the trace holds the
 * demo's own events and no device process. Also: a plugin session
 * (act_session with PLUGINS) that loads cupti.so still writes its trace.
 * Skipped (77) when a real driver is present (the decline is not what
 * happens there) or jansson is missing (the CMake file decides).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define WORK ACT_BINARY_DIR "/tests/cupti"
#define STUB "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Runs the demo under record; returns the exit status. */
static int record(const char *trace, const char *env)
{
    remove(trace);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s %s record -o %s --plugin cupti -- %s/bin/actrace-demo "
             ">%s/record.log 2>&1",
             env, ACTRACE, trace, ACT_BINARY_DIR, WORK);
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void check_trace(const char *trace)
{
    json_error_t err;
    json_t *root = json_load_file(trace, 0, &err);
    if (!root)
        fprintf(stderr, "%s:%d: %s\n", trace, err.line, err.text);
    CHECK_FATAL(root != NULL);
    json_t *events = json_object_get(root, "traceEvents");
    CHECK(json_array_size(events) > 10);
    CHECK_EQ_INT(json_array_size(json_object_get(root, "deviceProperties")),
                 0);
    size_t i;
    json_t *ev;
    int demo_spans = 0, device_events = 0;
    json_array_foreach(events, i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        if (ph && !strcmp(ph, "X") && cat &&
            (!strcmp(cat, "kernel") || !strcmp(cat, "cuda_runtime")))
            device_events++;
        if (ph && !strcmp(ph, "X"))
            demo_spans++;
    }
    CHECK(demo_spans > 0);
    CHECK_EQ_INT(device_events, 0);
    json_decref(root);
}

int main(void)
{
    unsetenv("ACTRACE_PLUGIN_DIR");
    unsetenv("ACTRACE_PLUGINS");
    unsetenv("ACTRACE_CUDA_DRIVER");
    if (access("/dev/nvidiactl", F_OK) == 0) {
        printf("skipped: an NVIDIA driver is present (tests/gpu/run.sh "
               "covers that)\n");
        return 77;
    }
    CHECK_FATAL(system("mkdir -p " WORK) == 0);

    /* No libcuda.so.1 on this machine's loader path. */
    const char *trace = ACT_TRACE_DIR "/cupti_declined.json";
    CHECK_EQ_INT(record(trace, ""), 0);
    const char *log = slurp(WORK "/record.log");
    CHECK(log && strstr(log, "cupti"));
    CHECK(log && (strstr(log, "no CUDA driver") ||
                  strstr(log, "no CUPTI library") ||
                  strstr(log, "no NVIDIA device")));
    if (log && !strstr(log, "declined"))
        fprintf(stderr, "log:\n%s\n", log);
    CHECK(log && strstr(log, "declined"));
    check_trace(trace);

    /* With the toolkit's stub driver: still declined, with its reason. */
    if (access(STUB, R_OK) == 0) {
        const char *t2 = WORK "/cupti_stub.json";
        CHECK_EQ_INT(record(t2, "ACTRACE_CUDA_DRIVER=" STUB), 0);
        log = slurp(WORK "/record.log");
        if (!CHECK(log && (strstr(log, "stub") || strstr(log, "no NVIDIA"))))
            fprintf(stderr, "log:\n%s\n", log ? log : "(none)");
        check_trace(t2);
    }
    CHECK_MAIN_END;
}
