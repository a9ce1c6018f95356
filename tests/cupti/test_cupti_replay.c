/* SPDX-License-Identifier: MIT */
/*
 * A real session with cupti_replay.so (replay_plugin.c: the cupti
 * plugin's translation and PM sink fed with a synthetic run of the GPU
 * workload). The trace goes through the host's validation and the writer
 * like a GPU run's would, is kept as traces/cupti_replay.json for the CI
 * validators, and is checked here with jansson (categories, streams named,
 * External id, deviceProperties like Kineto's, counter tracks with units
 * on the GPU's process) and by tests/gpu/check_trace.py, the checker that
 * tests/gpu/run.sh runs on a GPU (when python3 is there). Skipped (77)
 * without libcupti.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "plugin/plugin_test_util.h"
#pragma GCC diagnostic pop

#define REPLAY_SO ACT_BINARY_DIR "/tests/cupti/cupti_replay.so"
#define TRACE ACT_TRACE_DIR "/cupti_replay.json"
#define MANIFEST ACT_BINARY_DIR "/tests/cupti/replay_manifest.json"

static void body(void)
{
    act_span_begin(ACT_CPU_OP, "workload");
    sleep_ms(300);
    act_span_end();
}

int main(void)
{
    unsetenv("ACTRACE_PLUGINS");
    log_start();
    const char *plugins[] = {REPLAY_SO};
    int rc = run_session(plugins, 1, NULL, TRACE, body);
    if (log_count("cupti_replay", "no libcupti", NULL)) {
        printf("skipped: no libcupti\n");
        return 77;
    }
    CHECK_FATAL(rc == 0);
    json_t *root = trace_load(TRACE);
    CHECK_FATAL(root != NULL);

    json_t *props = json_object_get(root, "deviceProperties");
    CHECK_EQ_INT(json_array_size(props), 1);
    json_t *p0 = json_array_get(props, 0);
    CHECK_EQ_STR(json_string_value(json_object_get(p0, "name")),
                 "NVIDIA H200 (replay)");
    CHECK_EQ_INT(json_integer_value(json_object_get(p0, "numSms")), 132);
    CHECK_EQ_INT(json_integer_value(json_object_get(p0, "computeMajor")), 9);

    json_t *k = trace_find(root, "X", "busy_kernel(float*, int, unsigned long long)");
    if (CHECK(k != NULL)) {
        CHECK_EQ_STR(ev_str(k, "cat"), "kernel");
        json_t *args = json_object_get(k, "args");
        CHECK_EQ_INT(json_integer_value(json_object_get(args, "External id")), 4242);
        CHECK_EQ_STR(json_string_value(json_object_get(args, "grid")), "[1056, 1, 1]");
        CHECK_EQ_STR(json_string_value(json_object_get(args, "backend")), "cuda");
        json_int_t gpu = ev_int(k, "pid");
        CHECK(trace_thread(root, gpu, "stream 13") >= 0);
        CHECK(trace_thread(root, gpu, "context sync") >= 0);
    }
    json_t *launch = trace_find(root, "X", "cudaLaunchKernel");
    if (CHECK(launch != NULL)) {
        CHECK_EQ_STR(ev_str(launch, "cat"), "cuda_runtime");
        CHECK(trace_has_flow(root, launch, k));
    }
    json_t *sync = trace_find(root, "X", "Context Sync");
    CHECK(sync && !strcmp(ev_str(sync, "cat"), "cuda_sync"));
    CHECK(trace_count(root, "C", "sm__cycles_active.avg.pct_of_peak_sustained_elapsed") > 100);
    char *stats = json_dumps(json_object_get(root, "actraceStats"), 0);
    CHECK(stats && strstr(stats, "\"unit\": \"byte/second\""));
    free(stats);
    json_decref(root);

    /* The GPU checker on the same trace. */
    FILE *m = fopen(MANIFEST, "w");
    CHECK_FATAL(m != NULL);
    fputs("{\"kernels\":[{\"name\":\"busy_kernel\",\"stream\":\"A\",\"count\":3},"
          "{\"name\":\"scale_kernel\",\"stream\":\"B\",\"count\":4}],"
          "\"memcpy\":[{\"kind\":\"HtoD\",\"stream\":\"A\",\"count\":1},"
          "{\"kind\":\"HtoD\",\"stream\":\"B\",\"count\":1},"
          "{\"kind\":\"DtoH\",\"stream\":\"A\",\"count\":1},"
          "{\"kind\":\"DtoH\",\"stream\":\"B\",\"count\":1}],"
          "\"memset\":[{\"stream\":\"B\",\"count\":1}],\"busy_kernel\":\"busy_kernel\"}\n",
          m);
    fclose(m);
    if (system("python3 -c 'import json' >/dev/null 2>&1") == 0) {
        int st = system("python3 " ACT_SOURCE_DIR "/tests/gpu/check_trace.py --manifest "
                        MANIFEST " --interval-us 1000 " TRACE);
        CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    } else {
        printf("(no python3: check_trace.py not run)\n");
    }
    CHECK_MAIN_END;
}
