/* SPDX-License-Identifier: MIT */
/*
 * End to end: the application records operators (host spans with external
 * correlation ids) while the example plugin, loaded by its bare name from
 * the build tree, simulates a device. The written trace must show the
 * device as its own process with two named streams, the kernels and copies
 * on them, flows from the runtime calls that launched them, the counter
 * track, and the custom type's name as category. The trace is kept in
 * ACT_TRACE_DIR for the CI trace validators.
 *
 * With an argument, loads that file instead of the bare name "example"
 * (tests/plugin/out_of_tree.cmake passes the copies built out of tree).
 */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "plugin_test_util.h"

#define LAUNCHES 6

static void app_body(void)
{
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "op_%d", i);
        act_correlation_push(100 + (uint64_t)i);
        act_span_begin(ACT_CPU_OP, name);
        sleep_ms(1);
        act_span_end();
        act_correlation_pop();
    }
}

static const char *cat(json_t *ev)
{
    const char *c = ev_str(ev, "cat");
    return c ? c : "(none)";
}

int main(int argc, char **argv)
{
    const char *plugin = argc > 1 ? argv[1] : "example";
    const char *trace = argc > 1 ? ACT_TRACE_DIR "/plugin_example_oot.json"
                                 : ACT_TRACE_DIR "/plugin_example.json";
    unsetenv("ACTRACE_PLUGIN_DIR");
    unsetenv("ACTRACE_PLUGINS");
    log_start();
    const char *list[] = {plugin};
    char cfg[96];
    snprintf(cfg, sizeof cfg, "EXAMPLE_LAUNCHES = %d\nNOBODY_READS_THIS = 1\n",
             LAUNCHES);
    CHECK_FATAL(run_session(list, 1, cfg, trace, app_body) == 0);
    /* The plugin's own key is not unknown (it read it in its init); a key
     * nothing reads is, once, after the plugins are loaded. */
    CHECK_EQ_INT(log_count("unknown key", "EXAMPLE_LAUNCHES", NULL), 0);
    if (!CHECK_EQ_INT(log_count("unknown key", "NOBODY_READS_THIS", NULL), 1))
        fprintf(stderr, "log:\n%s", log_buf);
    if (!CHECK_EQ_INT(log_count("loaded 'example'",
                                argc > 1 ? plugin : "/plugins/example.so",
                                NULL), 1))
        fprintf(stderr, "log:\n%s", log_buf);
    CHECK_EQ_INT(log_count("rejected", NULL, NULL), 0);

    json_t *root = trace_load(trace);
    CHECK_FATAL(root != NULL);

    /* The application's own spans. */
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "op_%d", i);
        json_t *op = trace_find(root, "X", name);
        CHECK(op != NULL && ev_int(op, "pid") == getpid());
    }

    /* The device: its process, its two streams. */
    json_int_t dev = trace_process(root, "Example NPU 0");
    CHECK_FATAL(dev >= 0);
    CHECK(dev != getpid());
    json_int_t compute = trace_thread(root, dev, "compute");
    json_int_t copy = trace_thread(root, dev, "copy");
    CHECK(compute >= 0 && copy >= 0 && compute != copy);
    /* Streams from 1 (HTA links no kernel on stream 0 to its launch). */
    CHECK_EQ_INT(compute, 1);
    CHECK_EQ_INT(copy, 2);
    char *props = json_dumps(json_object_get(root, "deviceProperties"), 0);
    CHECK(props && strstr(props, "Example NPU 0") &&
          strstr(props, "totalGlobalMem"));
    free(props);

    /* As many launches as the config asked for: the plugin read its own
     * key EXAMPLE_LAUNCHES through the host's config_get. */
    int n = trace_count(root, "X", "example_gemm") +
            trace_count(root, "X", "example_relu");
    CHECK_EQ_INT(n, LAUNCHES);
    CHECK_EQ_INT(trace_count(root, "X", "Memcpy HtoD"), n);
    CHECK_EQ_INT(trace_count(root, "X", "example_sync"), n);
    CHECK_EQ_INT(trace_count(root, "X", "exampleLaunchKernel"), n);
    CHECK_EQ_INT(trace_count(root, "X", "exampleMemcpyAsync"), n);

    size_t i;
    json_t *ev;
    int kernels = 0, flows = 0, copies = 0, syncs = 0;
    json_array_foreach(trace_events(root), i, ev) {
        const char *ph = ev_str(ev, "ph"), *name = ev_str(ev, "name");
        if (!ph || strcmp(ph, "X") || !name)
            continue;
        if (!strcmp(name, "example_gemm") || !strcmp(name, "example_relu")) {
            kernels++;
            CHECK_EQ_INT(ev_int(ev, "pid"), dev);
            CHECK_EQ_INT(ev_int(ev, "tid"), compute);
            CHECK_EQ_STR(cat(ev), "kernel");
            json_t *args = json_object_get(ev, "args");
            CHECK(json_integer_value(json_object_get(args, "grid")) > 0);
            CHECK_EQ_STR(json_string_value(json_object_get(args, "queue")),
                         "compute");
            /* A flow from the runtime call that launched it. */
            size_t j;
            json_t *host;
            json_array_foreach(trace_events(root), j, host) {
                const char *hn = ev_str(host, "name");
                if (hn && !strcmp(hn, "exampleLaunchKernel") &&
                    trace_has_flow(root, host, ev)) {
                    flows++;
                    break;
                }
            }
        } else if (!strcmp(name, "Memcpy HtoD")) {
            copies++;
            CHECK_EQ_INT(ev_int(ev, "pid"), dev);
            CHECK_EQ_INT(ev_int(ev, "tid"), copy);
            CHECK_EQ_STR(cat(ev), "gpu_memcpy");
        } else if (!strcmp(name, "example_sync")) {
            syncs++;
            CHECK_EQ_INT(ev_int(ev, "pid"), dev);
            CHECK_EQ_INT(ev_int(ev, "tid"), compute);
            CHECK_EQ_STR(cat(ev), "example_sync");
        } else if (!strcmp(name, "exampleLaunchKernel")) {
            CHECK_EQ_INT(ev_int(ev, "pid"), getpid());
            CHECK_EQ_STR(cat(ev), "runtime");
        }
    }
    CHECK(kernels > 0);
    CHECK_EQ_INT(flows, kernels);
    CHECK_EQ_INT(copies, kernels);
    CHECK_EQ_INT(syncs, kernels);

    /* The utilisation counter: two samples per launch on the device. */
    int samples = 0;
    json_array_foreach(trace_events(root), i, ev) {
        const char *ph = ev_str(ev, "ph"), *name = ev_str(ev, "name");
        if (ph && !strcmp(ph, "C") && name && strstr(name, "utilization")) {
            samples++;
            CHECK_EQ_INT(ev_int(ev, "pid"), dev);
        }
    }
    CHECK_EQ_INT(samples, 2 * kernels);
    json_decref(root);
    act_log_set(NULL, NULL);
    CHECK_MAIN_END;
}
