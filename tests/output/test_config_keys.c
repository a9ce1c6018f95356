/* SPDX-License-Identifier: MIT */
/*
 * Kineto config keys that must have their documented effect on a session
 * (issue 12): ACTIVITIES_ENABLED = false records nothing and loads no
 * plugin, PROFILE_START_TIME delays collection until that wall-clock time,
 * REQUEST_GROUP_TRACE_ID is written into the trace. And distributedInfo
 * (issue 19): in every trace, from the launcher's variables, in a form
 * HolisticTraceAnalysis's rank pattern "rank":\s+(\d+) matches.
 */
#include <regex.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"

#define TP_OK ACT_BINARY_DIR "/tests/plugin/plugins/tp_ok.so"

static int64_t unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A span: the validated traces need one (speedscope reads only spans). */
static void span(const char *name)
{
    act_span_begin(ACT_CPU_OP, name);
    act_span_end();
}

static void sleep_until_ms(int64_t ms)
{
    while (unix_ms() < ms)
        usleep(5000);
}

/* A path outside the traces CI validates: some of these are empty. */
static const char *tmp_path(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", ACT_BINARY_DIR, name);
    return path;
}

static size_t plugins_listed(json_t *root)
{
    return json_array_size(json_object_get(tu_stats(root), "plugins"));
}

static void test_disabled(void)
{
    /* Control: the same config with the key true loads and runs tp_ok. */
    for (int enabled = 1; enabled >= 0; enabled--) {
        char cfg[512];
        snprintf(cfg, sizeof cfg, "ACTIVITIES_ENABLED = %s\nPLUGINS = %s\n",
                 enabled ? "true" : "false", TP_OK);
        act_session *s = tu_session(cfg);
        act_span_begin(ACT_CPU_OP, "op");
        act_span_end();
        act_step();
        act_counter("track", "v", 1.0);
        act_session_stats st;
        memset(&st, 0, sizeof st);
        st.struct_size = sizeof st;
        CHECK_OK(act_session_get_stats(s, &st));
        const char *path = tmp_path(enabled ? "keys_enabled.json" : "keys_disabled.json");
        CHECK_OK(act_session_write(s, path));
        json_t *root = tu_load(path);
        if (enabled) {
            CHECK(tu_find(root, "X", "op") != NULL);
            CHECK(tu_find(root, "X", "tpLaunch_tp_ok") != NULL);
            CHECK_EQ_INT(plugins_listed(root), 1);
        } else {
            CHECK_EQ_U64(st.recorded, 0);
            CHECK_EQ_U64(st.dropped, 0);
            CHECK_EQ_INT(tu_count(root, "X", NULL), 0);
            CHECK_EQ_INT(tu_count(root, "C", NULL), 0);
            CHECK_EQ_INT(plugins_listed(root), 0);
            CHECK_EQ_INT(tu_int(tu_stats(root), "recorded"), 0);
        }
        json_decref(root);
        act_session_destroy(s);
    }
}

static void test_start_time(void)
{
    /* In the future: nothing before it, collection from then on, for the
     * duration. */
    int64_t start = unix_ms() + 500;
    char cfg[256];
    snprintf(cfg, sizeof cfg, "PROFILE_START_TIME = %lld\nACTIVITIES_DURATION_MSECS = 600\n",
             (long long)start);
    act_session *s = tu_session(cfg);
    span("before");
    /* (A slow machine may have taken longer than that to create it.) */
    int armed = unix_ms() < start;
    sleep_until_ms(start + 150);
    span("during");
    sleep_until_ms(start + 1000);
    span("after");
    const char *path = tu_trace_path("output_start_time.json");
    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path);
    CHECK(!armed || tu_find(root, "X", "before") == NULL);
    CHECK(tu_find(root, "X", "during") != NULL);
    CHECK(tu_find(root, "X", "after") == NULL);
    json_decref(root);
    act_session_destroy(s);

    /* Passed already (Kineto accepts up to 10 s ago): from start on. */
    snprintf(cfg, sizeof cfg, "PROFILE_START_TIME = %lld\n", (long long)(unix_ms() - 2000));
    s = tu_session(cfg);
    span("at once");
    path = tmp_path("keys_start_passed.json");
    CHECK_OK(act_session_write(s, path));
    root = tu_load(path);
    CHECK(tu_find(root, "X", "at once") != NULL);
    json_decref(root);
    act_session_destroy(s);

    /* An iteration window takes precedence over a start time (Kineto). */
    snprintf(cfg, sizeof cfg, "PROFILE_START_TIME = %lld\nPROFILE_START_ITERATION = 1\n"
             "ACTIVITIES_ITERATIONS = 1\n", (long long)(unix_ms() + 600000));
    s = tu_session(cfg);
    span("iteration 0");
    act_step();
    span("iteration 1");
    act_step();
    span("iteration 2");
    path = tmp_path("keys_start_iteration.json");
    CHECK_OK(act_session_write(s, path));
    root = tu_load(path);
    CHECK(tu_find(root, "X", "iteration 0") == NULL);
    CHECK(tu_find(root, "X", "iteration 1") != NULL);
    CHECK(tu_find(root, "X", "iteration 2") == NULL);
    json_decref(root);
    act_session_destroy(s);
}

static void test_group_trace_id(void)
{
    act_session *s = tu_session("REQUEST_TRACE_ID = t-1\nREQUEST_GROUP_TRACE_ID = group \"7\"\n");
    span("x"); /* speedscope and DevTools want a span */
    const char *path = tu_trace_path("output_group_id.json");
    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path);
    CHECK_EQ_STR(json_string_value(json_object_get(root, "trace_id")), "t-1");
    CHECK_EQ_STR(json_string_value(json_object_get(root, "group_trace_id")), "group \"7\"");
    json_decref(root);
    act_session_destroy(s);
}

static const char *const dist_vars[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "ACTRACE_DIST_BACKEND", NULL};

/* The rank as HTA reads it: the first match of "rank":\s+(\d+) in the
 * file's text; -1 without one. */
static long hta_rank(const char *path)
{
    size_t len;
    char *text = tu_slurp(path, &len);
    CHECK(text != NULL);
    regex_t re;
    CHECK_EQ_INT(regcomp(&re, "\"rank\":[[:space:]]+([0-9]+)", REG_EXTENDED), 0);
    regmatch_t m[2];
    long rank = -1;
    if (text && regexec(&re, text, 2, m, 0) == 0)
        rank = strtol(text + m[1].rm_so, NULL, 10);
    regfree(&re);
    free(text);
    return rank;
}

/* Write a trace under the given variables (name=value pairs, NULL-ended)
 * and return its distributedInfo (a new reference). */
static json_t *dist_info(const char *name, const char *const *vars, long *rank_re)
{
    for (const char *const *v = dist_vars; *v; v++)
        unsetenv(*v);
    for (; vars && *vars; vars += 2)
        setenv(vars[0], vars[1], 1);
    act_session *s = tu_session(NULL);
    span("x");
    const char *path = tu_trace_path(name);
    CHECK_OK(act_session_write(s, path));
    act_session_destroy(s);
    *rank_re = hta_rank(path);
    json_t *root = tu_load(path);
    json_t *d = json_incref(json_object_get(root, "distributedInfo"));
    json_decref(root);
    CHECK(d != NULL);
    return d ? d : json_object();
}

static void test_distributed_info(void)
{
    struct {
        const char *name;
        const char *vars[13];
        long rank, world, local;
        const char *backend;
    } cases[] = {
        {"output_dist_none.json", {NULL}, 0, 1, 0, "unknown"},
        {"output_dist_torchrun.json",
         {"RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "1", "ACTRACE_DIST_BACKEND", "nccl",
          /* torchrun's win over Slurm's and OpenMPI's */
          "SLURM_PROCID", "7", "OMPI_COMM_WORLD_RANK", "8", NULL},
         3, 4, 1, "nccl"},
        {"output_dist_slurm.json",
         {"SLURM_PROCID", "12", "SLURM_NTASKS", "16", "SLURM_LOCALID", "4",
          "OMPI_COMM_WORLD_RANK", "9", NULL},
         12, 16, 4, "unknown"},
        {"output_dist_ompi.json",
         {"OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_SIZE", "6",
          "OMPI_COMM_WORLD_LOCAL_RANK", "2", "RANK", "not a number", NULL},
         5, 6, 2, "unknown"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        long rank_re;
        json_t *d = dist_info(cases[i].name, cases[i].vars, &rank_re);
        CHECK_EQ_INT(rank_re, cases[i].rank);
        CHECK_EQ_INT(tu_int(d, "rank"), cases[i].rank);
        CHECK_EQ_INT(tu_int(d, "world_size"), cases[i].world);
        CHECK_EQ_INT(tu_int(d, "local_rank"), cases[i].local);
        CHECK_EQ_STR(json_string_value(json_object_get(d, "backend")), cases[i].backend);
        json_decref(d);
    }
    for (const char *const *v = dist_vars; *v; v++)
        unsetenv(*v);
}

int main(void)
{
    act_log_set_level(ACT_LOG_OFF);
    test_disabled();
    test_start_time();
    test_group_trace_id();
    test_distributed_info();
    CHECK_MAIN_END;
}
