/* SPDX-License-Identifier: MIT */
/*
 * make bench, NVTX part (act_bench_nvtx): what an NVTX push+pop pair costs
 * a program recorded with the nvtx plugin, against a clock read measured
 * in the same run (the engine's act_now_ns, as in act_bench). The pair is
 * a real nvtxRangePushA("aten::matmul") + nvtxRangePop() through NVTX's
 * own dispatch (header-only NVTX v3, this file compiled against it), so
 * the figure includes everything an annotated program pays.
 *
 * Each figure is the best of several repetitions (a fresh session each);
 * the first repetition also pays for the first touch of the plugin's
 * event blocks, which later ones reuse, and is printed separately. The
 * last line of stdout is one JSON object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nvtx3/nvToolsExt.h>

#include "actrace/actrace.h"

#define REPS 25

static volatile int64_t sink;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One repetition of the baseline: ns per act_now_ns(). */
static double clock_rep(long n)
{
    double t0 = now_s();
    int64_t acc = 0;
    for (long i = 0; i < n; i++)
        acc += act_now_ns();
    sink = acc;
    return (now_s() - t0) / (double)n * 1e9;
}

static act_session *start_session(void)
{
    static const char *const plugins[] = {ACT_NVTX_PLUGIN};
    act_config *cfg = NULL;
    act_parse_error err;
    const char *text = "MAX_BUFFER_SIZE_MB = 4096\nNVTX_MAX_BUFFER_MB = 1024\n";
    if (act_config_parse(text, strlen(text), NULL, &cfg, &err) != 0) {
        fprintf(stderr, "bench_nvtx: config: %s\n", err.message);
        exit(1);
    }
    act_session_opts o;
    act_session_opts_init(&o);
    o.config = cfg;
    o.plugins = plugins;
    o.plugin_count = 1;
    act_session *s;
    if (act_session_create(&o, &s) != 0 || act_session_start(s) != 0) {
        fprintf(stderr, "bench_nvtx: cannot start a session\n");
        exit(1);
    }
    act_config_destroy(cfg);
    return s;
}

int main(void)
{
    const long N = 200000;
    act_log_set_level(ACT_LOG_ERROR);
    double clock_ns = 1e9, best = 1e9, first = 0;
    act_session_stats st;
    memset(&st, 0, sizeof st);
    for (int r = 0; r < REPS; r++) {
        /* Baseline and pair alternate, so that both see the same load on
         * a shared machine. */
        double c = clock_rep(2 * N);
        if (c < clock_ns)
            clock_ns = c;
        /* The first session's plugin init sets NVTX_INJECTION64_PATH;
         * NVTX reads it at the first call below. */
        act_session *s = start_session();
        double t0 = now_s();
        for (long i = 0; i < N; i++) {
            nvtxRangePushA("aten::matmul");
            nvtxRangePop();
        }
        double dt = (now_s() - t0) / (double)N * 1e9;
        act_session_stop(s);
        st.struct_size = sizeof st;
        act_session_get_stats(s, &st);
        act_session_destroy(s);
        if (r == 0)
            first = dt;
        if (dt < best)
            best = dt;
    }
    if (st.recorded < (uint64_t)N) {
        fprintf(stderr, "bench_nvtx: only %llu of %ld ranges recorded: "
                "the NVTX injection did not attach\n",
                (unsigned long long)st.recorded, N);
        return 1;
    }
    printf("nvtx push+pop           %8.2f ns  (%.2fx two clock reads; "
           "first session %.2f ns)\n", best, best / (2 * clock_ns), first);
    printf("{\"nvtx_push_pop_ns\":%.2f,\"nvtx_push_pop_first_ns\":%.2f,"
           "\"clock_read_ns\":%.2f,\"nvtx_over_2clock\":%.3f,\"pairs\":%ld}\n",
           best, first, clock_ns, best / (2 * clock_ns), N);
    return 0;
}
