/* SPDX-License-Identifier: MIT */
/*
 * The host plugin end to end: sessions load build/plugins/host.so by path,
 * the application burns CPU and touches memory, and the written trace must
 * carry the counter tracks on the host process with stable series:
 *   1. the default set at a 10 ms interval (trace kept in ACT_TRACE_DIR
 *      as plugin_host.json for the CI validators);
 *   2. a list with an unknown name and the perf counters (cycles and
 *      instructions decline cleanly where the kernel has no hardware
 *      counters; the rest still appears);
 *   3. only unknown names, and only unavailable counters: the plugin
 *      declines, the session goes on.
 */
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
/* The shared helpers; this test does not use all of them. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "plugin/plugin_test_util.h"
#pragma GCC diagnostic pop

#define HOST_SO ACT_BINARY_DIR "/plugins/host.so"
#define TOUCH_BYTES (50u << 20)

static char *held; /* the touched memory, held until the session ended */

static double cpu_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile double sink;

static void burn_ms(int ms)
{
    double end = cpu_secs() + ms / 1000.0, x = 1.0;
    while (cpu_secs() < end)
        for (int i = 0; i < 10000; i++)
            x = x * 1.0000001 + 1e-9;
    sink = x;
}

/* The application's own spans frame the work (and give the viewers a
 * timeline: a trace of counters only is an "empty profile" to some). */
static void app_body(void)
{
    act_span_begin(ACT_CPU_OP, "burn");
    burn_ms(200);
    act_span_end();
    act_span_begin(ACT_CPU_OP, "touch");
    held = malloc(TOUCH_BYTES);
    if (held)
        for (size_t i = 0; i < TOUCH_BYTES; i += 4096)
            held[i] = (char)i; /* touch every page */
    act_span_end();
    sleep_ms(40);
}

static void light_body(void)
{
    act_span_begin(ACT_CPU_OP, "light");
    burn_ms(50);
    act_span_end();
    sleep_ms(30);
}

/* Counter events named @p name on this process; their number. */
static int counters(json_t *root, const char *name)
{
    int n = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(trace_events(root), i, ev) {
        const char *ph = ev_str(ev, "ph"), *nm = ev_str(ev, "name");
        if (ph && !strcmp(ph, "C") && nm && !strcmp(nm, name) &&
            ev_int(ev, "pid") == getpid())
            n++;
    }
    return n;
}

/* Largest value of series @p key of counter @p name; -1 if none. Also
 * checks every sample is a number >= @p min. */
static double series_max(json_t *root, const char *name, const char *key,
                         double min)
{
    double mx = -1;
    size_t i;
    json_t *ev;
    json_array_foreach(trace_events(root), i, ev) {
        const char *ph = ev_str(ev, "ph"), *nm = ev_str(ev, "name");
        if (!ph || strcmp(ph, "C") || !nm || strcmp(nm, name) ||
            ev_int(ev, "pid") != getpid())
            continue;
        json_t *v = json_object_get(json_object_get(ev, "args"), key);
        if (!CHECK(json_is_number(v))) {
            fprintf(stderr, "  %s has no numeric '%s'\n", name, key);
            continue;
        }
        double d = json_number_value(v);
        CHECK(d >= min);
        if (d > mx)
            mx = d;
    }
    return mx;
}

/* Every C event of a (pid, name) track has the same set of args keys, and
 * none is empty. Returns the number of C events seen. */
static int check_key_sets(json_t *root)
{
    json_t *first = json_object(); /* "pid/name" -> first event's args */
    int n = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(trace_events(root), i, ev) {
        const char *ph = ev_str(ev, "ph"), *nm = ev_str(ev, "name");
        if (!ph || strcmp(ph, "C") || !nm)
            continue;
        n++;
        char key[600];
        snprintf(key, sizeof key, "%lld/%s", (long long)ev_int(ev, "pid"),
                 nm);
        json_t *args = json_object_get(ev, "args");
        CHECK(json_is_object(args) && json_object_size(args) > 0);
        json_t *ref = json_object_get(first, key);
        if (!ref) {
            json_object_set(first, key, args);
            continue;
        }
        const char *k;
        json_t *v;
        int same = json_object_size(ref) == json_object_size(args);
        json_object_foreach(args, k, v) {
            CHECK(k[0] != '\0');
            if (!json_object_get(ref, k))
                same = 0;
        }
        if (!CHECK(same))
            fprintf(stderr, "  track %s changes its keys\n", key);
    }
    json_decref(first);
    return n;
}

static void test_default_set(void)
{
    const char *trace = ACT_TRACE_DIR "/plugin_host.json";
    const char *list[] = {HOST_SO};
    log_reset();
    CHECK_FATAL(run_session(list, 1, "HOST_COUNTER_INTERVAL_MSECS = 10\n",
                            trace, app_body) == 0);
    if (!CHECK_EQ_INT(log_count("loaded 'host'", "/plugins/host.so", NULL),
                      1))
        fprintf(stderr, "log:\n%s", log_buf);
    CHECK_EQ_INT(log_count("rejected", NULL, NULL), 0);
    CHECK_EQ_INT(log_count("every 10 ms", NULL, NULL), 1);

    json_t *root = trace_load(trace);
    free(held);
    held = NULL;
    CHECK_FATAL(root != NULL);
    CHECK(check_key_sets(root) > 0);
    CHECK(trace_find(root, "X", "burn") != NULL);

    /* cpu: ~250 ms at 10 ms gives ~25 samples; ask for a handful only. */
    int ncpu = counters(root, "cpu");
    if (!CHECK(ncpu >= 5))
        fprintf(stderr, "  only %d cpu samples\n", ncpu);
    CHECK(ncpu < 1000);
    CHECK(series_max(root, "cpu", "user", 0) > 0);
    CHECK(series_max(root, "cpu", "system", 0) >= 0);
    json_t *ev = trace_find(root, "C", "cpu");
    CHECK_FATAL(ev != NULL);
    CHECK_EQ_STR(ev_str(ev, "cat"), "host_counter");
    CHECK_EQ_INT(ev_int(ev, "pid"), getpid());

    /* memory: the 50 MB touched and held until the end of the session. */
    CHECK(counters(root, "memory") >= 5);
    double rss = series_max(root, "memory", "rss_bytes", 1);
    if (!CHECK(rss >= (double)TOUCH_BYTES))
        fprintf(stderr, "  max rss %.0f < %u\n", rss, TOUCH_BYTES);

    /* Touching 12800 new pages faults. */
    CHECK(counters(root, "page_faults") >= 5);
    CHECK(series_max(root, "page_faults", "minor", 0) > 0);
    CHECK(series_max(root, "page_faults", "major", 0) >= 0);
    CHECK(counters(root, "context_switches") >= 5);
    CHECK(series_max(root, "context_switches", "voluntary", 0) >= 0);
    CHECK(series_max(root, "context_switches", "involuntary", 0) >= 0);

    /* Not in the default set. */
    CHECK_EQ_INT(counters(root, "cycles") + counters(root, "instructions") +
                     counters(root, "task_clock"),
                 0);
    json_decref(root);
}

/* A perf counter either works (samples, >= 0) or was logged once as not
 * available and left out. Returns 1 if it works. */
static int perf_counter_ok(json_t *root, const char *name)
{
    char what[64];
    snprintf(what, sizeof what, "%s: not available", name);
    int missing = log_count(what, NULL, NULL);
    int n = counters(root, name);
    if (missing) {
        CHECK_EQ_INT(missing, 1);
        CHECK_EQ_INT(n, 0);
        return 0;
    }
    CHECK(n >= 3);
    CHECK(series_max(root, name, name, 0) >= 0);
    return 1;
}

static void test_list(void)
{
    const char *trace = ACT_TRACE_DIR "/plugin_host_list.json";
    const char *list[] = {HOST_SO};
    log_reset();
    CHECK_FATAL(run_session(list, 1,
                            "HOST_COUNTER_INTERVAL_MSECS = 10\n"
                            "HOST_COUNTERS = cpu, bogus_ctr, memory, cycles, "
                            "instructions, task_clock, CPU\n",
                            trace, light_body) == 0);
    if (!CHECK_EQ_INT(log_count("loaded 'host'", NULL, NULL), 1))
        fprintf(stderr, "log:\n%s", log_buf);
    /* The unknown name is reported, with the valid ones, and ignored. */
    CHECK_EQ_INT(log_count("unknown counter 'bogus_ctr'", "valid:",
                           "context_switches"),
                 1);
    json_t *root = trace_load(trace);
    CHECK_FATAL(root != NULL);
    check_key_sets(root);
    CHECK(counters(root, "cpu") >= 3);
    CHECK(counters(root, "memory") >= 3);
    CHECK_EQ_INT(counters(root, "page_faults"), 0);
    CHECK_EQ_INT(counters(root, "context_switches"), 0);
    int hw = perf_counter_ok(root, "cycles");
    perf_counter_ok(root, "instructions");
    if (perf_counter_ok(root, "task_clock"))
        /* ~50 ms of CPU: some interval saw the task clock run. */
        CHECK(series_max(root, "task_clock", "task_clock", 0) > 0);
    printf("hardware counters %s\n", hw ? "available" : "not available");
    json_decref(root);
}

static void test_declines(void)
{
    const char *list[] = {HOST_SO};
    const char *trace = ACT_TRACE_DIR "/plugin_host_declined.json";
    log_reset();
    CHECK_FATAL(run_session(list, 1, "HOST_COUNTERS = nope, , also_not\n",
                            trace, NULL) == 0);
    CHECK_EQ_INT(log_count("unknown counter 'nope'", NULL, NULL), 1);
    CHECK_EQ_INT(log_count("unknown counter 'also_not'", NULL, NULL), 1);
    if (!CHECK_EQ_INT(log_count("init declined", "names no known counter",
                                NULL),
                      1))
        fprintf(stderr, "log:\n%s", log_buf);
    json_t *root = trace_load(trace);
    CHECK_FATAL(root != NULL);
    CHECK_EQ_INT(trace_count(root, "C", NULL), 0);
    json_decref(root);

    /* Hardware counters only: on a machine without them, a clean decline. */
    log_reset();
    CHECK_FATAL(run_session(list, 1,
                            "HOST_COUNTER_INTERVAL_MSECS = 10\n"
                            "HOST_COUNTERS = cycles,instructions\n",
                            trace, light_body) == 0);
    root = trace_load(trace);
    CHECK_FATAL(root != NULL);
    if (log_count("cycles: not available", NULL, NULL) &&
        log_count("instructions: not available", NULL, NULL)) {
        CHECK_EQ_INT(log_count("init declined",
                               "none of the requested counters", NULL),
                     1);
        CHECK_EQ_INT(trace_count(root, "C", NULL), 0);
    } else {
        CHECK(counters(root, "cycles") + counters(root, "instructions") > 0);
    }
    json_decref(root);
}

int main(void)
{
    unsetenv("ACTRACE_PLUGIN_DIR");
    unsetenv("ACTRACE_PLUGINS");
    log_start();
    test_default_set();
    test_list();
    test_declines();
    act_log_set(NULL, NULL);
    CHECK_MAIN_END;
}
