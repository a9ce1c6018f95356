/* SPDX-License-Identifier: MIT */
/*
 * The recording API end to end: record through every call, write the
 * trace, read it back with jansson and check what each call produced, the
 * Kineto layout, and the statistics. Also writes traces/record_api.json for
 * the viewer checks in CI.
 */
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"

static json_t *find_x(json_t *root, const char *name, long long tid)
{
    json_t *evs = tu_events(root), *e;
    size_t i;
    json_array_foreach(evs, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *n = json_string_value(json_object_get(e, "name"));
        if (ph && strcmp(ph, "X") == 0 && n && strcmp(n, name) == 0 &&
            (tid < 0 || tu_int(e, "tid") == tid))
            return e;
    }
    return NULL;
}

static void *named_thread(void *arg)
{
    act_thread_name("worker-1");
    act_span_begin(ACT_USER_ANNOTATION, "on a thread that exits");
    act_span_end();
    *(long long *)arg = (long long)gettid();
    return NULL;
}

static void test_api(void)
{
    act_session *s = tu_session("ACTIVITY_TYPES = cpu_op, user_annotation, cpu_instant_event, python_function\n"
                                "REQUEST_TRACE_ID = trace-42\n");
    CHECK(act_session_active() == s);
    CHECK_EQ_INT(act_session_start(s), ACT_ESTATE);

    act_process_name("test process");
    act_thread_name("main thread");
    /* Nesting with args, an interned name, correlation. */
    act_name_id mm = act_name("aten::mm");
    CHECK(mm != 0);
    CHECK_EQ_INT(act_name("aten::mm"), mm);
    act_correlation_push(77);
    CHECK_EQ_U64(act_correlation_current(), 77);
    act_span_begin_id(ACT_CPU_OP, mm);
    act_arg_int("int", -5);
    act_arg_uint("uint", UINT64_C(1) << 40);
    act_arg_double("double", 0.25);
    act_arg_bool("bool", 1);
    act_arg_str("str", "va\"lue");
    act_arg_double("not_a_number", NAN);
    act_span_begin(ACT_USER_ANNOTATION, "child");
    act_span_end();
    act_span_end();
    act_correlation_pop();
    CHECK_EQ_U64(act_correlation_current(), 0);

    /* Caller-supplied times recorded child first: the writer must still put
     * the parent first (same start). */
    int64_t t = act_now_ns();
    act_span_record(ACT_CPU_OP, "late child", t + 1000, t + 2000);
    act_span_record(ACT_CPU_OP, "late parent", t + 1000, t + 5000);
    act_instant(ACT_CPU_INSTANT_EVENT, "tick");
    act_arg_str("where", "here");
    /* Ids act_name() never returned: empty names, never a crash. */
    act_instant_id(ACT_CPU_INSTANT_EVENT, 0x7ffffff0u);
    act_instant_id(ACT_CPU_INSTANT_EVENT, 0x80000010u);
    act_counter_unit("memory", "rss", "bytes", 1000);
    act_counter("memory", "heap", 10);
    act_counter("memory", "rss", 2000);
    act_counter("memory", "rss", INFINITY); /* dropped: non-finite */
    act_arg_int("orphan", 1);               /* dropped: follows a counter */

    /* Not selected: counted, not recorded. */
    act_span_begin(ACT_RUNTIME, "runtime not selected");
    act_span_end();
    /* Misuse: end without begin, end before start, a type that is none. */
    act_span_end();
    act_span_record(ACT_CPU_OP, "backwards", t + 10, t);
    act_span_record(ACT_CPU_OP, "absurd", INT64_MIN, INT64_MAX); /* would overflow dur */
    act_instant((act_activity_type)999, "bad type");

    long long worker_tid = 0;
    pthread_t th;
    pthread_create(&th, NULL, named_thread, &worker_tid);
    pthread_join(th, NULL);

    act_span_begin(ACT_PYTHON_FUNCTION, "still open at write");

    const char *path = tu_trace_path("record_api.json");
    CHECK_OK(act_session_write(s, path));
    CHECK(act_session_active() == NULL);
    act_span_end(); /* after stop: no session, nothing happens */

    json_t *root = tu_load(path);
    /* Kineto layout: key order as libkineto writes it. */
    const char *order[] = {"schemaVersion", "deviceProperties", "trace_id", "host_name",
                           "displayTimeUnit", "baseTimeNanoseconds", "traceEvents",
                           "actraceStats", "traceName"};
    size_t len;
    char *text = tu_slurp(path, &len);
    CHECK_FATAL(text != NULL);
    const char *prev = text;
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        char key[64];
        snprintf(key, sizeof key, "\"%s\":", order[i]);
        const char *at = strstr(text, key);
        CHECK(at != NULL && at >= prev);
        if (at)
            prev = at;
    }
    /* ts and dur: microseconds with exactly three decimals. */
    regex_t re;
    CHECK_FATAL(regcomp(&re, "\"(ts|dur)\":-?[0-9]+\\.[0-9]{3}[,}]", REG_EXTENDED) == 0);
    CHECK(regexec(&re, text, 0, NULL, 0) == 0);
    regfree(&re);
    CHECK(strstr(text, "\"ts\":0.000") == NULL);
    CHECK(strstr(text, "NaN") == NULL && strstr(text, "nan") == NULL);
    free(text);

    CHECK_EQ_INT(tu_int(root, "schemaVersion"), 1);
    CHECK_EQ_STR(json_string_value(json_object_get(root, "trace_id")), "trace-42");
    CHECK_EQ_STR(json_string_value(json_object_get(root, "displayTimeUnit")), "ms");
    CHECK_EQ_STR(json_string_value(json_object_get(root, "traceName")), "record_api.json");
    CHECK(json_is_integer(json_object_get(root, "baseTimeNanoseconds")));

    /* Every event: integer pid/tid, a cat, a ts unless metadata. */
    json_t *e;
    size_t i;
    json_array_foreach(tu_events(root), i, e) {
        CHECK(json_is_integer(json_object_get(e, "pid")));
        CHECK(json_is_integer(json_object_get(e, "tid")));
        const char *ph = json_string_value(json_object_get(e, "ph"));
        CHECK_FATAL(ph != NULL);
        if (strcmp(ph, "M") != 0) {
            CHECK(json_is_string(json_object_get(e, "cat")));
            CHECK(json_number_value(json_object_get(e, "ts")) > 0);
        }
    }

    long long pid = getpid(), tid = gettid();
    json_t *mme = find_x(root, "aten::mm", tid);
    CHECK_FATAL(mme != NULL);
    CHECK_EQ_INT(tu_int(mme, "pid"), pid);
    CHECK_EQ_STR(json_string_value(json_object_get(mme, "cat")), "cpu_op");
    json_t *args = json_object_get(mme, "args");
    CHECK_EQ_INT(tu_int(args, "External id"), 77);
    CHECK_EQ_INT(tu_int(args, "int"), -5);
    CHECK_EQ_INT(tu_int(args, "uint"), (long long)(UINT64_C(1) << 40));
    CHECK_NEAR(tu_num(args, "double"), 0.25, 0);
    CHECK(json_is_true(json_object_get(args, "bool")));
    CHECK_EQ_STR(json_string_value(json_object_get(args, "str")), "va\"lue");
    CHECK(json_is_null(json_object_get(args, "not_a_number")));

    json_t *child = find_x(root, "child", tid);
    CHECK_FATAL(child != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(child, "cat")), "user_annotation");
    CHECK(tu_num(child, "ts") >= tu_num(mme, "ts"));
    CHECK(tu_num(child, "ts") + tu_num(child, "dur") <= tu_num(mme, "ts") + tu_num(mme, "dur") + 0.0011);

    /* Parent before child at the same start. */
    size_t ip = SIZE_MAX, ic = SIZE_MAX;
    json_array_foreach(tu_events(root), i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (n && strcmp(n, "late parent") == 0)
            ip = i;
        if (n && strcmp(n, "late child") == 0)
            ic = i;
    }
    CHECK(ip < ic && ic != SIZE_MAX);
    json_t *lp = json_array_get(tu_events(root), ip);
    CHECK_NEAR(tu_num(lp, "dur"), 4.0, 1e-9);

    json_t *tick = tu_find(root, "i", "tick");
    CHECK_FATAL(tick != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(tick, "args"), "where")), "here");
    CHECK_EQ_STR(json_string_value(json_object_get(tick, "s")), "t");

    /* Counters: one track, both series on every sample, no infinity. */
    CHECK_EQ_INT(tu_count(root, "C", "memory"), 3);
    json_array_foreach(tu_events(root), i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (strcmp(ph, "C") == 0) {
            json_t *a = json_object_get(e, "args");
            CHECK_EQ_INT(json_object_size(a), 2);
            CHECK(json_is_number(json_object_get(a, "rss")) && json_is_number(json_object_get(a, "heap")));
        }
    }

    /* Open span at write: closed at stop and marked. */
    json_t *open = find_x(root, "still open at write", tid);
    CHECK_FATAL(open != NULL);
    CHECK(json_is_true(json_object_get(json_object_get(open, "args"), "unfinished")));

    /* The exited thread kept its events and its name. */
    CHECK(find_x(root, "on a thread that exits", worker_tid) != NULL);
    int named = 0, pnamed = 0;
    json_array_foreach(tu_events(root), i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));
        json_t *a = json_object_get(e, "args");
        if (n && strcmp(n, "thread_name") == 0 && tu_int(e, "tid") == worker_tid)
            named = strcmp(json_string_value(json_object_get(a, "name")), "worker-1") == 0;
        if (n && strcmp(n, "process_name") == 0 && tu_int(e, "pid") == pid)
            pnamed = strcmp(json_string_value(json_object_get(a, "name")), "test process") == 0;
    }
    CHECK(named);
    CHECK(pnamed);
    CHECK(find_x(root, "runtime not selected", -1) == NULL);
    CHECK(find_x(root, "backwards", -1) == NULL);

    /* Statistics: recorded events and each drop with its reason. */
    json_t *st = tu_stats(root);
    json_t *why = json_object_get(st, "dropped_by_reason");
    CHECK_EQ_INT(tu_int(why, "type_not_selected"), 1);
    CHECK_EQ_INT(tu_int(why, "unbalanced"), 1);
    CHECK_EQ_INT(tu_int(why, "bad_times"), 2);
    CHECK_EQ_INT(tu_int(why, "bad_type"), 1);
    CHECK_EQ_INT(tu_int(why, "non_finite"), 1);
    /* Args are counted apart from events. */
    CHECK(json_object_get(why, "orphan_arg") == NULL);
    CHECK_EQ_INT(tu_int(json_object_get(st, "args_dropped_by_reason"), "orphan_arg"), 1);
    CHECK_EQ_INT(tu_int(st, "args_dropped"), 1);
    CHECK_EQ_INT(tu_int(st, "args_recorded"), 7);
    CHECK_EQ_INT(tu_int(st, "dropped"), 6);
    CHECK_EQ_INT(tu_int(json_object_get(st, "dropped_by_type"), "runtime"), 1);
    /* Events kept: mm + child + late child/parent + tick + 2 bad-id
     * instants + 3 counters + thread span + open span = 12. */
    CHECK_EQ_INT(tu_int(st, "recorded"), 12);
    CHECK_EQ_INT(tu_count(root, "i", "(unnamed)"), 2);
    act_session_stats ss;
    memset(&ss, 0, sizeof ss);
    ss.struct_size = sizeof ss;
    CHECK_OK(act_session_get_stats(s, &ss));
    CHECK_EQ_U64(ss.recorded, 12);
    CHECK_EQ_U64(ss.dropped, 6);
    CHECK_EQ_U64(ss.args_recorded, 7);
    CHECK_EQ_U64(ss.args_dropped, 1);
    json_decref(root);
    act_session_destroy(s);
}

static void test_no_session(void)
{
    /* Without a session every call is a no-op. */
    act_span_begin(ACT_CPU_OP, "x");
    act_arg_int("k", 1);
    act_span_end();
    act_counter("a", "b", 1);
    act_instant(ACT_CPU_INSTANT_EVENT, "i");
    CHECK(act_session_active() == NULL);

    act_session *a = tu_session(NULL);
    act_session *b = NULL;
    CHECK_OK(act_session_create(NULL, &b));
    CHECK_EQ_INT(act_session_start(b), ACT_EBUSY);
    CHECK_EQ_INT(act_session_stop(b), ACT_ESTATE);
    act_session_destroy(b);
    CHECK_OK(act_session_stop(a));
    CHECK_EQ_INT(act_session_stop(a), ACT_ESTATE);
    CHECK_EQ_INT(act_session_start(a), ACT_ESTATE);
    act_session_destroy(a);
    act_session_destroy(NULL);

    /* opts: a larger struct with a non-zero unknown tail is refused. */
    struct {
        act_session_opts o;
        uint64_t extra;
    } big;
    memset(&big, 0, sizeof big);
    big.o.struct_size = sizeof big;
    big.extra = 1;
    act_session *c = NULL;
    CHECK_EQ_INT(act_session_create(&big.o, &c), ACT_EINVAL);
    big.extra = 0;
    CHECK_OK(act_session_create(&big.o, &c));
    act_session_destroy(c);
    /* A bad config is refused. */
    act_session_opts o;
    act_session_opts_init(&o);
    o.config_text = "ACTIVITY_TYPES = nonsense\n";
    o.config_text_len = strlen(o.config_text);
    CHECK_EQ_INT(act_session_create(&o, &c), ACT_EINVAL);
}

static void test_custom_types(void)
{
    act_activity_type mine, other;
    CHECK_OK(act_activity_type_register("my_phase", ACT_SHAPE_HOST_SPAN, &mine));
    CHECK_OK(act_activity_type_register("my_other", ACT_SHAPE_HOST_SPAN, &other));
    /* ACTIVITY_TYPES not set: registered types are recorded. */
    act_session *s = tu_session(NULL);
    act_span_begin(mine, "custom span");
    act_span_end();
    const char *path = tu_trace_path("record_custom.json");
    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path);
    json_t *e = find_x(root, "custom span", -1);
    CHECK(e && strcmp(json_string_value(json_object_get(e, "cat")), "my_phase") == 0);
    json_decref(root);
    act_session_destroy(s);
    /* Set: only what it names, registered names included. */
    s = tu_session("ACTIVITY_TYPES = cpu_op, my_phase\n");
    act_span_begin(mine, "named");
    act_span_end();
    act_span_begin(other, "not named");
    act_span_end();
    CHECK_OK(act_session_write(s, path));
    root = tu_load(path);
    CHECK(find_x(root, "named", -1) != NULL);
    CHECK(find_x(root, "not named", -1) == NULL);
    CHECK_EQ_INT(tu_int(json_object_get(tu_stats(root), "dropped_by_type"), "my_other"), 1);
    json_decref(root);
    act_session_destroy(s);
}

static void test_iterations(void)
{
    /* PROFILE_START_ITERATION=2, ACTIVITIES_ITERATIONS=2: steps 2 and 3. */
    act_session *s = tu_session("PROFILE_START_ITERATION = 2\nACTIVITIES_ITERATIONS = 2\n");
    for (int step = 0; step < 6; step++) {
        char name[32];
        snprintf(name, sizeof name, "step %d", step);
        act_span_begin(ACT_CPU_OP, name);
        act_span_end();
        act_step();
    }
    const char *path = tu_trace_path("record_iterations.json");
    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path);
    CHECK(find_x(root, "step 1", -1) == NULL);
    CHECK(find_x(root, "step 2", -1) != NULL);
    CHECK(find_x(root, "step 3", -1) != NULL);
    CHECK(find_x(root, "step 4", -1) == NULL);
    json_decref(root);
    act_session_destroy(s);
}

static void test_duration(void)
{
    /* No warmup, a 50 ms window: what is recorded right after start is in,
     * what comes after the window closed is not (the sleep is 10 times the
     * window, so only a stalled timer thread could make this flaky). */
    act_session *s = tu_session("ACTIVITIES_WARMUP_PERIOD_SECS = 0\nACTIVITIES_DURATION_MSECS = 50\n");
    act_span_begin(ACT_CPU_OP, "inside the window");
    act_span_end();
    usleep(500 * 1000);
    act_span_begin(ACT_CPU_OP, "after the window");
    act_span_end();
    const char *path = tu_trace_path("record_duration.json");
    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path);
    CHECK(find_x(root, "inside the window", -1) != NULL);
    CHECK(find_x(root, "after the window", -1) == NULL);
    json_decref(root);
    act_session_destroy(s);

    /* A warmup longer than the test: nothing is recorded. */
    s = tu_session("ACTIVITIES_WARMUP_PERIOD_SECS = 3600\n");
    act_span_begin(ACT_CPU_OP, "during warmup");
    act_span_end();
    CHECK_OK(act_session_stop(s));
    act_session_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK_OK(act_session_get_stats(s, &st));
    CHECK_EQ_U64(st.recorded, 0);
    act_session_destroy(s);
}

int main(void)
{
    act_log_set_level(ACT_LOG_ERROR);
    test_duration();
    test_api();
    test_no_session();
    test_custom_types();
    test_iterations();
    return check_done();
}
