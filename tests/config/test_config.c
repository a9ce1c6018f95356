/* SPDX-License-Identifier: MIT */
/*
 * The config parser (DESIGN.md section 3). The first half ports the
 * behaviour Kineto's libkineto/test/ConfigTest.cpp checks (whitespace,
 * comments, line format, ACTIVITY_TYPES, integers, booleans,
 * PROFILE_START_TIME, defaults); the second half checks what actrace adds
 * (all-or-nothing, error positions, CRLF, unknown keys, strict mode,
 * registered types, layering, getters, iteration, canonical output).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "actrace/actrace.h"
#include "check.h"

/* ---- helpers ------------------------------------------------------------ */

static int parse(act_config **cfg, const char *text)
{
    return act_config_parse(text, strlen(text), NULL, cfg, NULL);
}

/* Parse into a fresh config; 1 if it succeeded. */
static int ok(const char *text)
{
    act_config *cfg = NULL;
    int rc = parse(&cfg, text);
    act_config_destroy(cfg);
    return rc == 0;
}

static int64_t get_int(const act_config *cfg, const char *key)
{
    int64_t v = INT64_MIN;
    CHECK_INT(act_config_get_int(cfg, key, &v), 0);
    return v;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Log capture: the last warning and how many there were. */
static char last_log[1024];
static int nlog;

static void capture_log(void *user, act_log_level level, const char *msg)
{
    (void)user;
    (void)level;
    snprintf(last_log, sizeof last_log, "%s", msg);
    nlog++;
}

/* Every error reported through on_error. */
typedef struct errs {
    act_parse_error e[16];
    int n;
} errs;

static void collect(void *user, const act_parse_error *err)
{
    errs *es = user;
    if (es->n < 16)
        es->e[es->n] = *err;
    es->n++;
}

static int set_equals(const act_activity_set *set, const int *codes,
                      size_t n)
{
    if (act_activity_set_count(set) != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!act_activity_set_has(set, (act_activity_type)codes[i]))
            return 0;
    return 1;
}

/* ---- Kineto's behaviour --------------------------------------------------- */

static void test_whitespace(void)
{
    CHECK(ok(""));
    CHECK(ok(" "));
    CHECK(ok("\t"));
    CHECK(ok("\n"));
    CHECK(ok("    "));
    CHECK(ok("\t \n  \t\t\n\n"));
    /* Kineto refuses "\r\n"; actrace accepts CRLF files. */
    CHECK(ok("\r\n"));
    CHECK(ok("\r\n\r\n \t\r\n"));
}

static void test_comments(void)
{
    CHECK(ok("# comment"));
    CHECK(ok("   # ~!@#$"));
    CHECK(ok("\t#abc"));
    CHECK(ok("###\n##"));
    CHECK(ok("ACTIVITIES_ENABLED=false ##ok"));
    CHECK(!ok("util ## not ok"));
    CHECK(!ok("## ok \n blah # not OK"));

    act_config *cfg = NULL;
    CHECK_INT(parse(&cfg, "ACTIVITIES_LOG_FILE=/tmp/a.json ## "
                          "ACTIVITIES_LOG_FILE=/tmp/b.json"),
              0);
    CHECK_STR(act_config_get_str(cfg, "ACTIVITIES_LOG_FILE"), "/tmp/a.json");
    /* A comment does not affect the value before it. */
    CHECK_INT(parse(&cfg, "ACTIVITIES_ITERATIONS = 1 # one iteration"), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_ITERATIONS"), 1);
    act_config_destroy(cfg);
}

static void test_line_format(void)
{
    act_log_set(capture_log, NULL);
    CHECK(!ok("events"));
    CHECK(ok("events="));
    CHECK(!ok("=events="));
    CHECK(ok("events=1,2,3"));
    /* Only one setting per line. */
    CHECK(!ok("events = 1,2,3 ; metrics = 4,5,6"));
    CHECK(!ok("ACTIVITIES_ITERATIONS = 1 ; ACTIVITIES_WARMUP_ITERATIONS = 2"));
    CHECK(!ok("= 5"));
    act_log_set(NULL, NULL);

    /* Keys are case-sensitive: a lower-case key is another (unknown) key. */
    act_config *cfg = NULL;
    act_log_set(capture_log, NULL);
    CHECK_INT(parse(&cfg, "ACTIVITIES_ITERATIONS = 3 \n activities_iterations "
                          "= 4"),
              0);
    act_log_set(NULL, NULL);
    CHECK_INT(get_int(cfg, "ACTIVITIES_ITERATIONS"), 3);
    CHECK_STR(act_config_get_str(cfg, "activities_iterations"), "4");

    /* Surrounding whitespace goes, internal whitespace stays. */
    CHECK_INT(parse(&cfg, " \tPM_COUNTER_METRICS\t = \t4,\t5\t,\ts i x  "), 0);
    CHECK_STR(act_config_get_str(cfg, "PM_COUNTER_METRICS"), "4,\t5\t,\ts i x");
    char buf[4096];
    act_config_format(cfg, buf, sizeof buf);
    CHECK(strstr(buf, "\nPM_COUNTER_METRICS=4,5,s i x\n") != NULL);
    act_config_destroy(cfg);
}

static void test_default_activity_types(void)
{
    act_config *cfg = NULL;
    CHECK_INT(act_config_create(&cfg), 0);
    act_activity_set set, def;
    act_config_activity_types(cfg, &set);
    act_activity_set_default(&def);
    CHECK(memcmp(&set, &def, sizeof set) == 0);
    CHECK_INT(act_activity_set_count(&set), act_activity_types_default_count);
    act_config_destroy(cfg);
}

static void test_activity_types(void)
{
    act_config *cfg = NULL;
    act_activity_set set, def;
    act_activity_set_default(&def);
    CHECK(!ok("ACTIVITY_TYPES"));
    CHECK_INT(parse(&cfg, "ACTIVITY_TYPES="), 0);
    CHECK(!ok("=ACTIVITY_TYPES="));
    act_config_activity_types(cfg, &set);
    CHECK(memcmp(&set, &def, sizeof set) == 0);
    act_config_destroy(cfg);

    act_config *cfg2 = NULL;
    CHECK_INT(parse(&cfg2, "ACTIVITY_TYPES=gpu_memcpy,gpu_MeMsEt,kernel"), 0);
    act_config_activity_types(cfg2, &set);
    CHECK(set_equals(&set, (int[]){3, 4, 5}, 3));

    /* Trailing comma; replaces the previous selection. */
    CHECK_INT(parse(&cfg2, "ACTIVITY_TYPES = cuda_Runtime,"), 0);
    act_config_activity_types(cfg2, &set);
    CHECK(set_equals(&set, (int[]){ACT_RUNTIME}, 1));

    /* An unknown name is an error and changes nothing. */
    CHECK_INT(parse(&cfg2, "ACTIVITY_TYPES = memcopy,cuda_runtime"),
              ACT_EUNKNOWN);
    act_config_activity_types(cfg2, &set);
    CHECK(set_equals(&set, (int[]){ACT_RUNTIME}, 1));

    CHECK_INT(parse(&cfg2, "ACTIVITY_TYPES = cpu_op"), 0);
    act_config_activity_types(cfg2, &set);
    CHECK(set_equals(&set, (int[]){ACT_CPU_OP}, 1));

    /* Only commas: nothing named, so the default set, as with "". */
    CHECK_INT(parse(&cfg2, "ACTIVITY_TYPES = , ,"), 0);
    act_config_activity_types(cfg2, &set);
    CHECK(memcmp(&set, &def, sizeof set) == 0);

    /* Generic names select what every vendor alias names. */
    CHECK_INT(parse(&cfg2, "ACTIVITY_TYPES = runtime, driver, kernel"), 0);
    act_config_activity_types(cfg2, &set);
    CHECK_INT(act_activity_set_count(&set), 3);
    const char *names[] = {"cuda_runtime", "mtia_runtime", "glow_runtime",
                           "hpu_op",       "xpu_runtime",  "privateuse1_runtime",
                           "cuda_driver",  "xpu_driver",   "privateuse1_driver",
                           "mtia_ccp_events", "runtime",   "driver", "kernel"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        act_activity_type t;
        CHECK_INT(act_activity_type_parse(names[i], strlen(names[i]), &t), 0);
        CHECK_INT(act_activity_set_has(&set, t), 1);
    }
    int retired_codes[] = {12, 13, 18, 20, 21, 22, 24, 25};
    for (size_t i = 0; i < sizeof retired_codes / sizeof retired_codes[0]; i++)
        CHECK_INT(act_activity_set_has(&set,
                                       (act_activity_type)retired_codes[i]),
                  1);
    CHECK_INT(act_activity_set_has(&set, ACT_GPU_PM_COUNTER), 0);
    CHECK_INT(act_activity_set_has(&set, (act_activity_type)17), 0);

    /* Vendor aliases select the generic type. */
    CHECK_INT(parse(&cfg2, "ACTIVITY_TYPES = XPU_DRIVER, hardware_counters"),
              0);
    act_config_activity_types(cfg2, &set);
    CHECK(set_equals(&set, (int[]){ACT_DRIVER, ACT_GPU_PM_COUNTER}, 2));
    char buf[4096];
    act_config_format(cfg2, buf, sizeof buf);
    CHECK(strstr(buf, "\nACTIVITY_TYPES=driver,gpu_pm_counter\n") != NULL);
    act_config_destroy(cfg2);
}

static void test_integers(void)
{
    act_config *cfg = NULL;
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS=10"), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_WARMUP_ITERATIONS"), 10);
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS  =  \t100"), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_WARMUP_ITERATIONS"), 100);
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS=0"), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_WARMUP_ITERATIONS"), 0);
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS=2147483647"), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_WARMUP_ITERATIONS"), 2147483647);
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS=+7"), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_WARMUP_ITERATIONS"), 7);
    /* Negative, non-integer, empty, too large: errors, nothing changes. */
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS=-10"), ACT_ERANGE);
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS=1.5"), ACT_EPARSE);
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS="), ACT_EPARSE);
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS=string"), ACT_EPARSE);
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS=0x10"), ACT_EPARSE);
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS=2147483648"),
              ACT_ERANGE);
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS=99999999999999999999"),
              ACT_ERANGE);
    CHECK_INT(parse(&cfg, "ACTIVITIES_WARMUP_ITERATIONS=1 2"), ACT_EPARSE);
    CHECK_INT(get_int(cfg, "ACTIVITIES_WARMUP_ITERATIONS"), 7);
    /* actrace's positive keys refuse 0. */
    CHECK_INT(parse(&cfg, "MAX_BUFFER_SIZE_MB=0"), ACT_ERANGE);
    CHECK_INT(parse(&cfg, "PM_COUNTER_INTERVAL_USECS=0"), ACT_ERANGE);
    CHECK_INT(parse(&cfg, "HOST_COUNTER_INTERVAL_MSECS=0"), ACT_ERANGE);
    CHECK_INT(parse(&cfg, "MAX_BUFFER_SIZE_MB=64"), 0);
    CHECK_INT(get_int(cfg, "MAX_BUFFER_SIZE_MB"), 64);
    act_config_destroy(cfg);
}

static void test_booleans(void)
{
    static const struct {
        const char *text;
        int value;
    } words[] = {{"yes", 1},  {"no", 0},    {"YES", 1}, {"NO", 0},
                 {"Y", 1},    {"N", 0},     {"T", 1},   {"F", 0},
                 {"true", 1}, {"false", 0}, {"1", 1},   {"0", 0},
                 {"TrUe", 1}, {"fAlSe", 0}, {"y", 1},   {"n", 0}};
    act_config *cfg = NULL;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        char line[64];
        snprintf(line, sizeof line, "ACTIVITIES_ENABLED=%s", words[i].text);
        CHECK_INT(parse(&cfg, line), 0);
        int b = -1;
        CHECK_INT(act_config_get_bool(cfg, "ACTIVITIES_ENABLED", &b), 0);
        CHECK_INT(b, words[i].value);
    }
    CHECK_INT(parse(&cfg, "ACTIVITIES_ENABLED=  "), ACT_EPARSE);
    CHECK_INT(parse(&cfg, "ACTIVITIES_ENABLED=2"), ACT_EPARSE);
    CHECK_INT(parse(&cfg, "ACTIVITIES_ENABLED=-1"), ACT_EPARSE);
    CHECK_INT(parse(&cfg, "ACTIVITIES_ENABLED=yep"), ACT_EPARSE);
    CHECK_INT(parse(&cfg, "ACTIVITIES_ENABLED=on"), ACT_EPARSE);
    int b = -1;
    CHECK_INT(act_config_get_bool(cfg, "ACTIVITIES_ENABLED", &b), 0);
    CHECK_INT(b, 0);
    act_config_destroy(cfg);
}

static void test_profile_start_time(void)
{
    act_config *cfg = NULL;
    char line[128];
    int64_t now = now_ms();
    snprintf(line, sizeof line, "PROFILE_START_TIME = %lld", (long long)now);
    CHECK_INT(parse(&cfg, line), 0);
    CHECK_INT(get_int(cfg, "PROFILE_START_TIME"), now);
    /* 0: no start time. */
    CHECK_INT(parse(&cfg, "PROFILE_START_TIME = 0"), 0);
    CHECK_INT(get_int(cfg, "PROFILE_START_TIME"), 0);
    snprintf(line, sizeof line, "PROFILE_START_TIME = %lld",
             (long long)(now - 5000));
    CHECK_INT(parse(&cfg, line), 0);
    snprintf(line, sizeof line, "PROFILE_START_TIME = %lld",
             (long long)(now + 60000));
    CHECK_INT(parse(&cfg, line), 0);
    /* More than 10 s in the past. */
    snprintf(line, sizeof line, "PROFILE_START_TIME = %lld",
             (long long)(now - 15000));
    act_parse_error err;
    CHECK_INT(act_config_parse(line, strlen(line), NULL, &cfg, &err),
              ACT_ERANGE);
    CHECK_STR(err.key, "PROFILE_START_TIME");
    CHECK(strstr(err.message, "more than 10 s in the past") != NULL);
    CHECK_INT(get_int(cfg, "PROFILE_START_TIME"), now + 60000);
    CHECK_INT(parse(&cfg, "PROFILE_START_TIME = -1"), ACT_ERANGE);
    act_config_destroy(cfg);
}

static void test_kineto_defaults(void)
{
    act_config *cfg = NULL;
    CHECK_INT(act_config_create(&cfg), 0);
    int b = -1;
    CHECK_INT(act_config_get_bool(cfg, "ACTIVITIES_ENABLED", &b), 0);
    CHECK_INT(b, 1);
    CHECK_STR(act_config_get_str(cfg, "ACTIVITIES_LOG_FILE"),
              "/tmp/libkineto_activities_%pid%.json");
    CHECK_INT(get_int(cfg, "ACTIVITIES_DURATION_MSECS"), 500);
    CHECK_INT(get_int(cfg, "ACTIVITIES_DURATION_SECS"), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_ITERATIONS"), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_WARMUP_PERIOD_SECS"), 5);
    CHECK_INT(get_int(cfg, "ACTIVITIES_WARMUP_ITERATIONS"), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB"), 128);
    CHECK_INT(get_int(cfg, "PROFILE_START_TIME"), 0);
    CHECK_INT(get_int(cfg, "PROFILE_START_ITERATION"), -1);
    CHECK_INT(get_int(cfg, "PROFILE_START_ITERATION_ROUNDUP"), -1);
    CHECK_STR(act_config_get_str(cfg, "REQUEST_TRACE_ID"), "");
    CHECK_STR(act_config_get_str(cfg, "REQUEST_GROUP_TRACE_ID"), "");
    CHECK_STR(act_config_get_str(cfg, "CUPTI_PM_SAMPLING_METRICS"), "");
    CHECK_INT(get_int(cfg, "CUPTI_PM_SAMPLING_DEVICE_ID"), -1);
    CHECK_STR(act_config_get_str(cfg, "ACTIVITY_TYPES"), "");
    /* actrace's keys (docs/config.md). */
    CHECK_STR(act_config_get_str(cfg, "PLUGINS"), "");
    CHECK_STR(act_config_get_str(cfg, "TRACE_CATEGORIES"), "kineto");
    CHECK_STR(act_config_get_str(cfg, "PM_COUNTER_METRICS"), "");
    CHECK_INT(get_int(cfg, "PM_COUNTER_INTERVAL_USECS"), 10000);
    CHECK_STR(act_config_get_str(cfg, "PM_COUNTER_DEVICES"), "");
    CHECK_STR(act_config_get_str(cfg, "HOST_COUNTERS"), "");
    CHECK_INT(get_int(cfg, "HOST_COUNTER_INTERVAL_MSECS"), 100);
    CHECK_INT(get_int(cfg, "MAX_BUFFER_SIZE_MB"), 256);
    /* Nothing was set explicitly. */
    int visits = 0;
    CHECK_INT(act_config_foreach(cfg, (act_config_visit_fn)NULL, &visits),
              ACT_EINVAL);
    act_config_destroy(cfg);
}

/* ---- actrace's additions -------------------------------------------------- */

static void test_all_or_nothing(void)
{
    act_config *cfg = NULL;
    const char *bad = "ACTIVITIES_ITERATIONS = 5\n"
                      "ACTIVITY_TYPES = kernel\n"
                      "PLUGIN_KEY = kept?\n"
                      "ACTIVITIES_WARMUP_ITERATIONS = many\n";
    act_log_set(capture_log, NULL);
    /* On a NULL config nothing is created. */
    CHECK_INT(parse(&cfg, bad), ACT_EPARSE);
    CHECK(cfg == NULL);
    CHECK_INT(act_config_create(&cfg), 0);
    CHECK_INT(parse(&cfg, "ACTIVITIES_ITERATIONS = 2"), 0);
    CHECK_INT(parse(&cfg, bad), ACT_EPARSE);
    act_log_set(NULL, NULL);
    CHECK_INT(get_int(cfg, "ACTIVITIES_ITERATIONS"), 2);
    act_activity_set set, def;
    act_config_activity_types(cfg, &set);
    act_activity_set_default(&def);
    CHECK(memcmp(&set, &def, sizeof set) == 0);
    CHECK(act_config_get_str(cfg, "PLUGIN_KEY") == NULL);
    act_config_destroy(cfg);
}

static void test_error_positions(void)
{
    act_config *cfg = NULL;
    act_parse_error err;
    const char *text = "# header\n"
                       "ACTIVITIES_ITERATIONS = 3\n"
                       "\n"
                       "ACTIVITY_TYPES = kernel, memcopy ,runtime\n";
    CHECK_INT(act_config_parse(text, strlen(text), NULL, &cfg, &err),
              ACT_EUNKNOWN);
    CHECK_INT(err.code, ACT_EUNKNOWN);
    CHECK_INT(err.line, 4);
    CHECK_INT(err.column, 26);
    CHECK_STR(err.key, "ACTIVITY_TYPES");
    CHECK(strstr(err.message, "'memcopy'") != NULL);

    /* Every error, in order, through on_error; err gets the first. */
    errs es;
    memset(&es, 0, sizeof es);
    act_config_parse_opts opts;
    act_config_parse_opts_init(&opts);
    opts.on_error = collect;
    opts.user = &es;
    text = "foo\n"                                /* 1:1 no '=' */
           "  =foo=\n"                            /* 2:7 second '=' */
           "ACTIVITIES_ENABLED = maybe\n"         /* 3:22 bool */
           "  MAX_BUFFER_SIZE_MB=0   \n"          /* 4:22 range */
           "BAD KEY = 1\n"                        /* 5:4 key char */
           "TRACE_CATEGORIES = perfetto\n"        /* 6:20 enum */
           "PM_COUNTER_DEVICES = 0,1,,2\n"        /* 7:26 empty item */
           "ACTIVITIES_DURATION_MSECS =\n"        /* 8:28 empty int */
           "ACTIVITIES_ITERATIONS = 4\n";         /* fine */
    CHECK_INT(act_config_parse(text, strlen(text), &opts, &cfg, &err),
              ACT_EPARSE);
    CHECK_INT(es.n, 8);
    static const int where[8][3] = {
        {1, 1, ACT_EPARSE},  {2, 7, ACT_EPARSE},  {3, 22, ACT_EPARSE},
        {4, 22, ACT_ERANGE}, {5, 4, ACT_EPARSE},  {6, 20, ACT_EPARSE},
        {7, 26, ACT_EPARSE}, {8, 28, ACT_EPARSE},
    };
    for (int i = 0; i < 8 && i < es.n; i++) {
        CHECK_INT(es.e[i].line, where[i][0]);
        CHECK_INT(es.e[i].column, where[i][1]);
        CHECK_INT(es.e[i].code, where[i][2]);
    }
    CHECK_STR(es.e[2].key, "ACTIVITIES_ENABLED");
    CHECK_STR(es.e[3].key, "MAX_BUFFER_SIZE_MB");
    CHECK_STR(es.e[0].key, "");
    CHECK(strstr(es.e[2].message, "'maybe'") != NULL);
    CHECK(strstr(es.e[5].message, "kineto or generic") != NULL);
    CHECK_INT(err.line, 1);
    CHECK(cfg == NULL);

    /* Bytes that are not text are escaped in messages. */
    const char nul[] = "ACTIVITIES_ENABLED = \x01\xff\n";
    CHECK_INT(act_config_parse(nul, sizeof nul - 1, NULL, &cfg, &err),
              ACT_EPARSE);
    CHECK(strstr(err.message, "'\\x01\\xff'") != NULL);
    const char nul2[] = "ACTIVITIES_ENABLED = t\0rue\n";
    CHECK_INT(act_config_parse(nul2, sizeof nul2 - 1, NULL, &cfg, &err),
              ACT_EPARSE);
    CHECK_INT(err.column, 23);
    CHECK(strstr(err.message, "NUL") != NULL);
    /* A NUL in a comment is harmless. */
    const char nul3[] = "ACTIVITIES_ENABLED = true # \0\n";
    CHECK_INT(act_config_parse(nul3, sizeof nul3 - 1, NULL, &cfg, &err), 0);
    CHECK_INT(err.code, 0);
    act_config_destroy(cfg);
}

static void test_crlf(void)
{
    act_config *cfg = NULL;
    const char *text = "ACTIVITIES_ITERATIONS = 3\r\n"
                       "ACTIVITY_TYPES = kernel,\r\n"
                       "ACTIVITIES_LOG_FILE = /tmp/x.json\r\n"
                       "# comment\r\n"
                       "\r\n";
    CHECK_INT(parse(&cfg, text), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_ITERATIONS"), 3);
    CHECK_STR(act_config_get_str(cfg, "ACTIVITIES_LOG_FILE"), "/tmp/x.json");
    act_activity_set set;
    act_config_activity_types(cfg, &set);
    CHECK(set_equals(&set, (int[]){ACT_CONCURRENT_KERNEL}, 1));
    /* Positions count the same with CRLF. */
    act_parse_error err;
    text = "ACTIVITIES_ITERATIONS = 3\r\nACTIVITIES_ENABLED = x\r\n";
    CHECK_INT(act_config_parse(text, strlen(text), NULL, &cfg, &err),
              ACT_EPARSE);
    CHECK_INT(err.line, 2);
    CHECK_INT(err.column, 22);
    CHECK(strstr(err.message, "'x'") != NULL);
    act_config_destroy(cfg);
}

static void test_unknown_keys(void)
{
    act_config *cfg = NULL;
    nlog = 0;
    act_log_set(capture_log, NULL);
    CHECK_INT(parse(&cfg, "\nMY_PLUGIN_RATE = 7\n"), 0);
    act_log_set(NULL, NULL);
    CHECK_INT(nlog, 1);
    CHECK(strstr(last_log, "line 2") != NULL);
    CHECK(strstr(last_log, "'MY_PLUGIN_RATE'") != NULL);
    /* Kept for plugins, readable with every getter. */
    CHECK_STR(act_config_get_str(cfg, "MY_PLUGIN_RATE"), "7");
    CHECK_INT(get_int(cfg, "MY_PLUGIN_RATE"), 7);
    int b;
    CHECK_INT(act_config_get_bool(cfg, "MY_PLUGIN_RATE", &b), ACT_EINVAL);
    CHECK_INT(act_config_get_bool(cfg, "NOT_SET", &b), ACT_ENOENT);
    int64_t v;
    CHECK_INT(act_config_get_int(cfg, "NOT_SET", &v), ACT_ENOENT);
    CHECK(act_config_get_str(cfg, "NOT_SET") == NULL);
    /* Known keys of another kind are not integers or booleans. */
    CHECK_INT(act_config_get_int(cfg, "ACTIVITIES_ENABLED", &v), ACT_EINVAL);
    CHECK_INT(act_config_get_bool(cfg, "MAX_BUFFER_SIZE_MB", &b), ACT_EINVAL);

    /* on_warning replaces the log and carries the position. */
    errs ws;
    memset(&ws, 0, sizeof ws);
    act_config_parse_opts opts;
    act_config_parse_opts_init(&opts);
    opts.on_warning = collect;
    opts.user = &ws;
    nlog = 0;
    act_log_set(capture_log, NULL);
    const char *text = "ACTIVITIES_ITERATIONS=1\n  OTHER_KEY = x\n";
    CHECK_INT(act_config_parse(text, strlen(text), &opts, &cfg, NULL), 0);
    act_log_set(NULL, NULL);
    CHECK_INT(nlog, 0);
    CHECK_INT(ws.n, 1);
    CHECK_INT(ws.e[0].line, 2);
    CHECK_INT(ws.e[0].column, 3);
    CHECK_STR(ws.e[0].key, "OTHER_KEY");

    /* Strict: an error with its position, nothing applied. */
    opts.flags = ACT_CONFIG_STRICT;
    opts.on_warning = NULL;
    act_parse_error err;
    text = "ACTIVITIES_ITERATIONS=9\n  THIRD_KEY = x\n";
    CHECK_INT(act_config_parse(text, strlen(text), &opts, &cfg, &err),
              ACT_EUNKNOWN);
    CHECK_INT(err.line, 2);
    CHECK_INT(err.column, 3);
    CHECK_STR(err.key, "THIRD_KEY");
    CHECK(strstr(err.message, "unknown key 'THIRD_KEY'") != NULL);
    CHECK_INT(get_int(cfg, "ACTIVITIES_ITERATIONS"), 1);
    /* Kineto keys actrace does not use are known, even in strict mode. */
    text = "PROFILE_WITH_STACK = true\nVERBOSE_LOG_LEVEL = 2\n";
    CHECK_INT(act_config_parse(text, strlen(text), &opts, &cfg, &err), 0);
    CHECK_INT(act_config_parse("PROFILE_WITH_STACK = 3", 22, &opts, &cfg,
                               &err),
              ACT_EPARSE);
    act_config_destroy(cfg);
}

static void test_registered_types(void)
{
    act_activity_type npu;
    CHECK_INT(act_activity_type_register("npu_kernel", ACT_SHAPE_DEVICE_SPAN,
                                         &npu),
              0);
    act_config *cfg = NULL;
    CHECK_INT(parse(&cfg, "ACTIVITY_TYPES = kernel, NPU_Kernel"), 0);
    act_activity_set set;
    act_config_activity_types(cfg, &set);
    CHECK(set_equals(&set, (int[]){ACT_CONCURRENT_KERNEL, (int)npu}, 2));
    char buf[4096];
    act_config_format(cfg, buf, sizeof buf);
    CHECK(strstr(buf, "\nACTIVITY_TYPES=kernel,npu_kernel\n") != NULL);
    CHECK_INT(parse(&cfg, "ACTIVITY_TYPES = npu_kernels"), ACT_EUNKNOWN);
    act_config_destroy(cfg);
}

static void test_durations(void)
{
    act_config *cfg = NULL;
    CHECK_INT(parse(&cfg, "ACTIVITIES_DURATION_SECS = 2"), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_DURATION_MSECS"), 2000);
    CHECK_INT(get_int(cfg, "ACTIVITIES_DURATION_SECS"), 2);
    CHECK_INT(parse(&cfg, "ACTIVITIES_DURATION_MSECS = 750"), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_DURATION_MSECS"), 750);
    CHECK_INT(parse(&cfg, "ACTIVITIES_DURATION_MSECS = 10\n"
                          "ACTIVITIES_DURATION_SECS = 3"),
              0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_DURATION_MSECS"), 3000);
    CHECK_INT(parse(&cfg, "ACTIVITIES_DURATION_SECS = 4\n"
                          "ACTIVITIES_DURATION_MSECS = 20"),
              0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_DURATION_MSECS"), 20);
    CHECK_INT(parse(&cfg, "ACTIVITIES_DURATION_SECS = 2147483647"), 0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_DURATION_MSECS"),
              INT64_C(2147483647000));
    char buf[4096];
    act_config_format(cfg, buf, sizeof buf);
    /* Past _MSECS's range, the duration is written as _SECS, so that the
     * output parses back. */
    CHECK(strstr(buf, "ACTIVITIES_DURATION_MSECS") == NULL);
    CHECK(strncmp(buf, "ACTIVITIES_DURATION_SECS=2147483647\n", 36) == 0);
    act_config *again = NULL;
    CHECK_INT(parse(&again, buf), 0);
    CHECK_INT(get_int(again, "ACTIVITIES_DURATION_MSECS"),
              INT64_C(2147483647000));
    act_config_destroy(again);
    CHECK_INT(parse(&cfg, "ACTIVITIES_DURATION_SECS = 7"), 0);
    act_config_format(cfg, buf, sizeof buf);
    CHECK(strncmp(buf, "ACTIVITIES_DURATION_MSECS=7000\n", 31) == 0);
    CHECK(strstr(buf, "ACTIVITIES_DURATION_SECS") == NULL);
    act_config_destroy(cfg);
}

static int visit(void *user, const char *key, const char *value)
{
    char *acc = user;
    size_t n = strlen(acc);
    snprintf(acc + n, 512 - n, "%s=%s;", key, value);
    return strcmp(key, "STOP_HERE") == 0 ? 42 : 0;
}

static void test_foreach_and_values(void)
{
    act_config *cfg = NULL;
    act_log_set(capture_log, NULL);
    CHECK_INT(parse(&cfg, "B_KEY = 1\nACTIVITIES_ITERATIONS = 2\n"
                          "TRACE_CATEGORIES = GENERIC\n"),
              0);
    CHECK_INT(parse(&cfg, "B_KEY = 3\nA_KEY = x y\nPLUGINS = a.so , b.so"),
              0);
    act_log_set(NULL, NULL);
    char acc[512] = "";
    CHECK_INT(act_config_foreach(cfg, visit, acc), 0);
    CHECK_STR(acc, "B_KEY=3;ACTIVITIES_ITERATIONS=2;TRACE_CATEGORIES=generic;"
                   "A_KEY=x y;PLUGINS=a.so , b.so;");
    /* A visitor stops the walk with its non-zero value. */
    act_log_set(capture_log, NULL);
    CHECK_INT(parse(&cfg, "STOP_HERE = 1\nZ_LAST = 2"), 0);
    act_log_set(NULL, NULL);
    acc[0] = '\0';
    CHECK_INT(act_config_foreach(cfg, visit, acc), 42);
    CHECK(strstr(acc, "Z_LAST") == NULL);
    CHECK_STR(act_config_get_str(cfg, "TRACE_CATEGORIES"), "generic");

    /* Integer lists. */
    CHECK_INT(parse(&cfg, "PM_COUNTER_DEVICES = 0, 2,4"), 0);
    CHECK_STR(act_config_get_str(cfg, "PM_COUNTER_DEVICES"), "0, 2,4");
    CHECK_INT(parse(&cfg, "PM_COUNTER_DEVICES = 0,two"), ACT_EPARSE);
    CHECK_INT(parse(&cfg, "PM_COUNTER_DEVICES = -1"), ACT_ERANGE);
    CHECK_INT(parse(&cfg, "PM_COUNTER_DEVICES = 1,"), ACT_EPARSE);
    CHECK_INT(parse(&cfg, "PM_COUNTER_DEVICES ="), 0);
    CHECK_STR(act_config_get_str(cfg, "PM_COUNTER_DEVICES"), "");

    /* dup is deep: changing the copy leaves the original alone. */
    act_config *copy = NULL;
    CHECK_INT(act_config_dup(cfg, &copy), 0);
    CHECK_INT(parse(&copy, "ACTIVITIES_ITERATIONS = 9\nACTIVITY_TYPES=cpu_op"),
              0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_ITERATIONS"), 2);
    CHECK_INT(get_int(copy, "ACTIVITIES_ITERATIONS"), 9);
    CHECK_STR(act_config_get_str(copy, "A_KEY"), "x y");
    act_activity_set s1, s2;
    act_config_activity_types(cfg, &s1);
    act_config_activity_types(copy, &s2);
    CHECK(memcmp(&s1, &s2, sizeof s1) != 0);
    act_config_destroy(copy);
    act_config_destroy(cfg);
    act_config_destroy(NULL);
}

static void test_format_round_trip(void)
{
    act_config *cfg = NULL;
    act_log_set(capture_log, NULL);
    CHECK_INT(parse(&cfg, "ACTIVITY_TYPES = cuda_runtime, KERNEL,\n"
                          "ACTIVITIES_ENABLED = N\n"
                          "ACTIVITIES_ITERATIONS = +0012\n"
                          "PM_COUNTER_DEVICES = 03 , 1\n"
                          "PLUGINS = ,a.so,, b.so ,\n"
                          "ZZ_PLUGIN_KEY = some value\n"
                          "PROFILE_WITH_STACK = YES\n"),
              0);
    size_t need = act_config_format(cfg, NULL, 0);
    char *buf = malloc(need + 1);
    CHECK_INT(act_config_format(cfg, buf, need + 1), need);
    CHECK_INT(strlen(buf), need);
    CHECK(strstr(buf, "ACTIVITIES_ENABLED=false\n") != NULL);
    CHECK(strstr(buf, "ACTIVITIES_ITERATIONS=12\n") != NULL);
    CHECK(strstr(buf, "ACTIVITY_TYPES=kernel,runtime\n") != NULL);
    CHECK(strstr(buf, "PM_COUNTER_DEVICES=3,1\n") != NULL);
    CHECK(strstr(buf, "PLUGINS=a.so,b.so\n") != NULL);
    CHECK(strstr(buf, "PROFILE_WITH_STACK=true\n") != NULL);
    CHECK(strstr(buf, "VERBOSE_LOG_LEVEL") == NULL); /* compat, unset */
    CHECK(need > 0 && buf[need - 1] == '\n');
    CHECK(strncmp(buf + need - strlen("ZZ_PLUGIN_KEY=some value\n"),
                  "ZZ_PLUGIN_KEY=some value\n",
                  strlen("ZZ_PLUGIN_KEY=some value\n")) == 0);
    /* Sorted by key. */
    const char *prev = buf;
    for (const char *p = strchr(buf, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
        CHECK(strcmp(prev, p + 1) < 0);
        prev = p + 1;
    }
    /* The output parses back to the same output. */
    act_config *again = NULL;
    CHECK_INT(parse(&again, buf), 0);
    act_log_set(NULL, NULL);
    char *buf2 = malloc(need + 1);
    CHECK_INT(act_config_format(again, buf2, need + 1), need);
    CHECK_STR(buf2, buf);
    /* Truncation behaves like snprintf. */
    char small[8];
    CHECK_INT(act_config_format(cfg, small, sizeof small), need);
    CHECK_INT(strlen(small), 7);
    CHECK(strncmp(small, buf, 7) == 0);
    free(buf);
    free(buf2);
    act_config_destroy(again);
    act_config_destroy(cfg);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_layering(void)
{
    char path[] = "/tmp/actrace_cfg_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    write_file(path, "ACTIVITIES_ITERATIONS = 4\nMAX_BUFFER_SIZE_MB = 32\n"
                     "ACTIVITY_TYPES = cpu_op\n");

    /* defaults < file named by ACTRACE_CONFIG < API text. */
    setenv("ACTRACE_CONFIG", path, 1);
    act_config *cfg = NULL;
    act_parse_error err;
    CHECK_INT(act_config_load_env(NULL, &cfg, &err), 0);
    CHECK(cfg != NULL);
    CHECK_INT(get_int(cfg, "ACTIVITIES_ITERATIONS"), 4);
    CHECK_INT(get_int(cfg, "MAX_BUFFER_SIZE_MB"), 32);
    CHECK_INT(get_int(cfg, "ACTIVITIES_WARMUP_PERIOD_SECS"), 5);
    CHECK_INT(parse(&cfg, "MAX_BUFFER_SIZE_MB = 64\nACTIVITY_TYPES = kernel"),
              0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_ITERATIONS"), 4);
    CHECK_INT(get_int(cfg, "MAX_BUFFER_SIZE_MB"), 64);
    act_activity_set set;
    act_config_activity_types(cfg, &set);
    CHECK(set_equals(&set, (int[]){ACT_CONCURRENT_KERNEL}, 1));
    act_config_destroy(cfg);

    /* A bad file: errors name the file and the line. */
    write_file(path, "ACTIVITIES_ITERATIONS = 4\nMAX_BUFFER_SIZE_MB = lots\n");
    cfg = NULL;
    CHECK_INT(act_config_load_env(NULL, &cfg, &err), ACT_EPARSE);
    CHECK(cfg == NULL);
    CHECK_INT(err.line, 2);
    CHECK_INT(err.column, 22);
    CHECK(strncmp(err.message, path, strlen(path)) == 0);
    errs es;
    memset(&es, 0, sizeof es);
    act_config_parse_opts opts;
    act_config_parse_opts_init(&opts);
    opts.on_error = collect;
    opts.user = &es;
    CHECK_INT(act_config_parse_file(path, &opts, &cfg, &err), ACT_EPARSE);
    CHECK_INT(es.n, 1);
    CHECK(strstr(es.e[0].message, path) != NULL);
    CHECK(strstr(es.e[0].message, "'lots'") != NULL);

    /* A missing file. */
    unlink(path);
    CHECK_INT(act_config_load_env(NULL, &cfg, &err), ACT_EIO);
    CHECK_INT(err.line, 0);
    CHECK(strstr(err.message, path) != NULL);
    CHECK(cfg == NULL);

    /* No ACTRACE_CONFIG: the defaults. */
    unsetenv("ACTRACE_CONFIG");
    CHECK_INT(act_config_load_env(NULL, &cfg, &err), 0);
    CHECK(cfg != NULL);
    CHECK_INT(get_int(cfg, "MAX_BUFFER_SIZE_MB"), 256);
    act_config_destroy(cfg);
}

static void test_arguments(void)
{
    act_config *cfg = NULL;
    act_parse_error err;
    CHECK_INT(act_config_parse("A=1", 3, NULL, NULL, &err), ACT_EINVAL);
    CHECK_INT(act_config_parse(NULL, 3, NULL, &cfg, &err), ACT_EINVAL);
    CHECK_INT(act_config_parse(NULL, 0, NULL, &cfg, &err), 0);
    act_config_destroy(cfg);
    cfg = NULL;
    /* Not NUL-terminated: only len bytes count. */
    CHECK_INT(act_config_parse("ACTIVITIES_ITERATIONS=12345", 23, NULL, &cfg,
                               &err),
              0);
    CHECK_INT(get_int(cfg, "ACTIVITIES_ITERATIONS"), 1);

    /* Options grow by struct_size: a larger struct with a zero tail is
     * fine, a non-zero tail is refused, a too-small size is refused. */
    struct {
        act_config_parse_opts o;
        uint64_t future;
    } big;
    memset(&big, 0, sizeof big);
    big.o.struct_size = sizeof big;
    CHECK_INT(act_config_parse("", 0, &big.o, &cfg, &err), 0);
    big.future = 1;
    CHECK_INT(act_config_parse("", 0, &big.o, &cfg, &err), ACT_EINVAL);
    act_config_parse_opts o;
    memset(&o, 0, sizeof o);
    CHECK_INT(act_config_parse("", 0, &o, &cfg, &err), ACT_EINVAL);
    /* An old caller whose struct ends before flags: strict is off. */
    o.struct_size = sizeof(uint32_t);
    o.flags = ACT_CONFIG_STRICT;
    act_log_set(capture_log, NULL);
    CHECK_INT(act_config_parse("X_KEY=1", 7, &o, &cfg, &err), 0);
    act_log_set(NULL, NULL);
    act_config_destroy(cfg);
}

int main(void)
{
    test_whitespace();
    test_comments();
    test_line_format();
    test_default_activity_types();
    test_activity_types();
    test_integers();
    test_booleans();
    test_profile_start_time();
    test_kineto_defaults();
    test_all_or_nothing();
    test_error_positions();
    test_crlf();
    test_unknown_keys();
    test_registered_types();
    test_durations();
    test_foreach_and_values();
    test_format_round_trip();
    test_layering();
    test_arguments();
    return check_exit();
}
