/* SPDX-License-Identifier: MIT */
/*
 * `actrace summary [--json] FILE`: the built binary on the Kineto reference
 * trace (plain and gzipped), on a trace recorded here through the library
 * API (plain and .gz), on hand-written traces (flows, devices, counters
 * sampled out of order) and on unreadable input. The --json output is
 * parsed back with jansson and its numbers checked; the text output is
 * checked line by line.
 */
#include <math.h>

#include "check.h"
#include "cli_readers/cli_util.h"

#ifdef CLI_TEST_HAVE_JANSSON
#include <jansson.h>
#endif

/* The text output has this exact row for a name (count, total, mean, max). */
static int has_row(const char *out, unsigned long count, double total,
                   double mean, double max, const char *name)
{
    char row[512];
    snprintf(row, sizeof row, "\n  %10lu %14.3f %12.3f %12.3f  %s\n", count,
             total, mean, max, name);
    int ok = strstr(out, row) != NULL;
    if (!ok)
        fprintf(stderr, "missing row:%s", row);
    return ok;
}

static void expect_error(const char *file, const char *args, int code,
                         const char *msg)
{
    cli_result r = cli_run("summary %s '%s'", args, file);
    CHECK_INT(r.code, code);
    CHECK_STR(r.out, "");
    char want[2048];
    snprintf(want, sizeof want, "%s: error: ", file);
    if (!CHECK(strncmp(r.err, want, strlen(want)) == 0 &&
               strstr(r.err, msg) != NULL))
        fprintf(stderr, "stderr: %swant: %s...%s\n", r.err, want, msg);
    cli_free(&r);
}

#ifdef CLI_TEST_HAVE_JANSSON
static json_t *parse_json_output(const char *args, const char *file)
{
    cli_result r = cli_run("summary --json %s '%s'", args, file);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.err, "");
    json_error_t e;
    json_t *j = json_loads(r.out, JSON_REJECT_DUPLICATES, &e);
    if (!CHECK(j != NULL))
        fprintf(stderr, "--json output is not JSON: %d:%d: %s\n%s\n", e.line,
                e.column, e.text, r.out);
    CHECK(json_is_object(j));
    cli_free(&r);
    return j;
}

static json_t *find_by(json_t *arr, const char *key, const char *value)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *s = json_string_value(json_object_get(v, key));
        if (s && strcmp(s, value) == 0)
            return v;
    }
    return NULL;
}

static long long jint(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static double jnum(json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}
#endif

static void test_kineto(const char *ref)
{
    cli_result r = cli_run("summary '%s'", ref);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.err, "");
    CHECK(strstr(r.out, "\ntrace name:  kineto-cpu-ops.json\n") != NULL);
    CHECK(strstr(r.out, "\nproducer:    kineto\n") != NULL);
    CHECK(strstr(r.out, "\nbase time:   1790857026000000000 ns") != NULL);
    CHECK(strstr(r.out, "\nevents:      1001\n") != NULL);
    CHECK(strstr(r.out, "\ntime span:   1000 \xC2\xB5s, 2026-10-01 12:17:07.000000 to "
                        "12:17:07.000999 UTC\n") != NULL);
    CHECK(strstr(r.out, "\n        1000  X (complete)\n") != NULL);
    CHECK(strstr(r.out, "\n           1  i (instant)\n") != NULL);
    CHECK(strstr(r.out, "\n        1000  cpu_op\n") != NULL);
    CHECK(strstr(r.out, "\ntop 4 of 4 names by total duration") != NULL);
    /* Equal totals: by name. */
    const char *names[] = {"aten::conv2d", "aten::gelu__", "aten::linear",
                           "aten::matmul"};
    const char *prev = r.out;
    for (int i = 0; i < 4; i++) {
        CHECK(has_row(r.out, 250, 125.0, 0.5, 0.5, names[i]));
        const char *at = strstr(r.out, names[i]);
        CHECK(at && at > prev);
        prev = at ? at : prev;
    }
    CHECK(strstr(r.out, "\n  pid 4242: 1000 events\n    tid 4243: 1000 events\n") != NULL);
    /* The final instant's string pid is shown as it is written. */
    CHECK(strstr(r.out, "\n  pid \"\": 1 event\n    tid \"\": 1 event\n") != NULL);
    CHECK(strstr(r.out, "\ndevices: none\n") != NULL);
    CHECK(strstr(r.out, "\ncounters (min, time-weighted mean, max, last): none\n") != NULL);
    CHECK(strstr(r.out, "\nflows: none\n") != NULL);
    CHECK(strstr(r.out, "actrace stats") == NULL);

#ifdef CLI_TEST_HAVE_ZLIB
    /* The same file gzipped, under a name that does not say so: the same
     * summary but for the file line. */
    const char *gz = cli_tmp("kineto.json");
    CHECK_OK(cli_gzip(ref, gz, 0));
    cli_result g = cli_run("summary '%s'", gz);
    CHECK_INT(g.code, 0);
    const char *a = strchr(r.out, '\n'), *b = strchr(g.out, '\n');
    CHECK(a && b && strcmp(a, b) == 0);
    cli_free(&g);
    /* Truncated gzip data. */
    const char *cut = cli_tmp("kineto-cut.json.gz");
    CHECK_OK(cli_gzip(ref, cut, 3000));
    expect_error(cut, "", 2, "truncated gzip data");
    unlink(gz);
    unlink(cut);
#endif
    cli_free(&r);

#ifdef CLI_TEST_HAVE_JANSSON
    json_t *j = parse_json_output("", ref);
    CHECK_STR(json_string_value(json_object_get(j, "producer")), "kineto");
    CHECK_STR(json_string_value(json_object_get(j, "trace_name")),
              "kineto-cpu-ops.json");
    CHECK_EQ_INT(jint(j, "base_time_ns"), 1790857026000000000LL);
    CHECK_EQ_INT(jint(j, "events"), 1001);
    json_t *t = json_object_get(j, "time");
    CHECK_NEAR(jnum(t, "first_us"), 1000000.0, 1e-9);
    CHECK_NEAR(jnum(t, "last_us"), 1000999.5, 1e-9);
    CHECK_NEAR(jnum(t, "span_us"), 999.5, 1e-9);
    CHECK_EQ_INT(jint(json_object_get(j, "phases"), "X"), 1000);
    json_t *cats = json_object_get(j, "categories");
    CHECK_STR(json_string_value(json_object_get(json_array_get(cats, 0), "cat")),
              "cpu_op");
    CHECK_EQ_INT(jint(json_array_get(cats, 0), "count"), 1000);
    CHECK(json_is_null(json_object_get(json_array_get(cats, 1), "cat")));
    json_t *top = json_object_get(j, "top_names");
    CHECK_EQ_INT(json_array_size(top), 4);
    for (int i = 0; i < 4; i++) {
        json_t *n = find_by(top, "name", names[i]);
        CHECK(n != NULL);
        CHECK_EQ_INT(jint(n, "count"), 250);
        CHECK_NEAR(jnum(n, "total_us"), 125.0, 1e-9);
        CHECK_NEAR(jnum(n, "mean_us"), 0.5, 1e-12);
        CHECK_NEAR(jnum(n, "max_us"), 0.5, 1e-12);
    }
    json_t *procs = json_object_get(j, "processes");
    CHECK_EQ_INT(json_array_size(procs), 2);
    CHECK_EQ_INT(jint(json_array_get(procs, 0), "pid"), 4242);
    CHECK_EQ_INT(jint(json_array_get(procs, 0), "events"), 1000);
    CHECK_STR(json_string_value(json_object_get(json_array_get(procs, 1), "pid")), "");
    CHECK_EQ_INT(jint(json_object_get(j, "flows"), "starts"), 0);
    CHECK(json_object_get(j, "actrace_stats") == NULL);
    json_decref(j);
#endif
}

#ifdef CLI_TEST_HAVE_JANSSON
/* The X-event name with the largest summed dur in @p trace. */
static const char *largest_total(json_t *trace)
{
    static char best[64];
    double best_total = -1;
    json_t *evs = json_object_get(trace, "traceEvents"), *e, *f;
    size_t i, k;
    json_array_foreach(evs, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (!ph || strcmp(ph, "X") || !nm)
            continue;
        double total = 0;
        json_array_foreach(evs, k, f) {
            const char *ph2 = json_string_value(json_object_get(f, "ph"));
            const char *nm2 = json_string_value(json_object_get(f, "name"));
            if (ph2 && !strcmp(ph2, "X") && nm2 && !strcmp(nm2, nm))
                total += json_number_value(json_object_get(f, "dur"));
        }
        if (total > best_total) {
            best_total = total;
            snprintf(best, sizeof best, "%s", nm);
        }
    }
    return best;
}
#endif

static void test_recorded(void)
{
    char json_path[1024];
    snprintf(json_path, sizeof json_path, "%s/cli_summary.json", ACT_TRACE_DIR);
#ifdef CLI_TEST_HAVE_ZLIB
    const char *gz_path = cli_tmp("recorded.json.gz");
#else
    const char *gz_path = NULL;
#endif
    record_trace(json_path, gz_path);

    cli_result r = cli_run("summary '%s'", json_path);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.err, "");
    char want[256];
    snprintf(want, sizeof want, "\nproducer:    actrace %s\n", act_version());
    CHECK(strstr(r.out, want) != NULL);
    CHECK(strstr(r.out, "\ntrace name:  cli-readers\n") != NULL);
    CHECK(has_row(r.out, REC_OUTER, 10.0 * REC_OUTER, 10.0, 10.0, "outer"));
    CHECK(has_row(r.out, REC_INNER, 2.0 * REC_INNER, 2.0, 2.0, "inner"));
    snprintf(want, sizeof want, "\n  pid %d \"cli-test\": ", (int)getpid());
    CHECK(strstr(r.out, want) != NULL);
    snprintf(want, sizeof want, " \"main\": %d events\n", REC_MAIN_EVENTS);
    CHECK(strstr(r.out, want) != NULL);
    CHECK(strstr(r.out, " \"worker\": 1 event\n") != NULL);
    CHECK(strstr(r.out, "\ncounters (min, time-weighted mean, max, last):\n  memory (pid ") != NULL);
    /* rss has the unit "bytes" (from actraceStats): human units; its
     * time-weighted mean depends on when the samples were taken. */
    CHECK(strstr(r.out, "\n    rss: min 1000 B, mean ") != NULL);
    CHECK(strstr(r.out, ", max 2.93 KiB, last 1.95 KiB\n") != NULL);
    CHECK(strstr(r.out, "\n    heap: min 10, mean 10, max 10, last 10\n") != NULL);
    CHECK(strstr(r.out, "\nactrace stats: ") != NULL);
    CHECK(strstr(r.out, " recorded, 0 dropped\n") != NULL);
    if (gz_path) {
        cli_result g = cli_run("summary '%s'", gz_path);
        CHECK_INT(g.code, 0);
        const char *a = strchr(r.out, '\n'), *b = strchr(g.out, '\n');
        if (!CHECK(a && b && strcmp(a, b) == 0))
            fprintf(stderr, "plain:\n%s\ngzip:\n%s\n", r.out, g.out);
        cli_free(&g);
    }
    cli_free(&r);

#ifdef CLI_TEST_HAVE_JANSSON
    json_t *j = parse_json_output("", json_path);
    json_error_t e;
    json_t *trace = json_load_file(json_path, 0, &e);
    CHECK_FATAL(trace != NULL);
    size_t nev = json_array_size(json_object_get(trace, "traceEvents"));
    CHECK_EQ_INT(jint(j, "events"), nev);
    CHECK_STR(json_string_value(json_object_get(j, "producer")), "actrace");
    CHECK_STR(json_string_value(json_object_get(j, "producer_version")),
              act_version());
    CHECK_EQ_INT(jint(j, "base_time_ns"),
                 json_integer_value(json_object_get(trace, "baseTimeNanoseconds")));
    CHECK(jnum(json_object_get(j, "time"), "span_us") >= 210.0);
    json_t *ph = json_object_get(j, "phases");
    CHECK_EQ_INT(jint(ph, "X"), 2 + REC_OUTER + REC_INNER + 1);
    CHECK_EQ_INT(jint(ph, "i"), REC_TICKS);
    CHECK(jint(ph, "C") >= 1 && jint(ph, "C") <= 4);
    json_t *top = json_object_get(j, "top_names");
    /* The first row is the name with the largest total duration in the
     * trace itself: "outer" (30 us) unless the live span, timed by the
     * clock, took longer on a loaded machine. */
    CHECK_STR(json_string_value(json_object_get(json_array_get(top, 0), "name")),
              largest_total(trace));
    json_t *inner = find_by(top, "name", "inner");
    CHECK_EQ_INT(jint(inner, "count"), REC_INNER);
    CHECK_NEAR(jnum(inner, "total_us"), 2.0 * REC_INNER, 1e-9);
    CHECK_NEAR(jnum(inner, "max_us"), 2.0, 1e-9);
    json_t *proc = find_by(json_object_get(j, "processes"), "name", "cli-test");
    CHECK_FATAL(proc != NULL);
    CHECK_EQ_INT(jint(proc, "pid"), getpid());
    json_t *threads = json_object_get(proc, "threads");
    CHECK_EQ_INT(jint(find_by(threads, "name", "main"), "events"), REC_MAIN_EVENTS);
    CHECK_EQ_INT(jint(find_by(threads, "name", "worker"), "events"), 1);
    json_t *ctr = find_by(json_object_get(j, "counters"), "name", "memory");
    CHECK_FATAL(ctr != NULL);
    json_t *rss = find_by(json_object_get(ctr, "series"), "key", "rss");
    CHECK_NEAR(jnum(rss, "min"), 1000, 0);
    CHECK_NEAR(jnum(rss, "max"), 3000, 0);
    CHECK_NEAR(jnum(rss, "last"), 2000, 0);
    CHECK(jnum(rss, "mean") >= 1000 && jnum(rss, "mean") <= 3000);
    CHECK_STR(json_string_value(json_object_get(rss, "unit")), "bytes");
    json_t *st = json_object_get(j, "actrace_stats");
    CHECK(json_is_object(st));
    CHECK_EQ_INT(jint(st, "dropped"), 0);
    CHECK_EQ_INT(jint(st, "recorded"),
                 json_integer_value(json_object_get(
                     json_object_get(trace, "actraceStats"), "recorded")));
    CHECK_EQ_INT(jint(json_object_get(j, "flows"), "starts"), 0);
    json_decref(trace);
    if (gz_path) {
        /* The gzipped copy: the same JSON but for "file". */
        json_t *g = parse_json_output("", gz_path);
        json_object_del(g, "file");
        json_object_del(j, "file");
        CHECK(json_equal(g, j));
        json_decref(g);
    }
    json_decref(j);
#endif
    if (gz_path)
        unlink(gz_path);
}

static void test_handwritten(void)
{
    const char *good = CLI_DATA "/good.json";
    cli_result r = cli_run("summary '%s'", good);
    CHECK_INT(r.code, 0);
    CHECK(strstr(r.out, "\nproducer:    kineto\n") != NULL);
    CHECK(strstr(r.out, "\ntrace name:  good\n") != NULL);
    CHECK(strstr(r.out, "\ntime span:   31.0 \xC2\xB5s, ") != NULL);
    CHECK(has_row(r.out, 1, 5.25, 5.25, 5.25, "gemm"));
    CHECK(strstr(r.out, "\n  pid 1 \"host proc\": 9 events\n    tid 1 \"main\": 6 events\n") != NULL);
    CHECK(strstr(r.out, "\n  pid 0 \"GPU 0\": 2 events (device 0)\n") != NULL);
    CHECK(strstr(r.out, "\n  device 0: name=\"Fake GPU\" totalGlobalMem=1024\n") != NULL);
    CHECK(strstr(r.out, "\n  device 0 events: pid 0 \"GPU 0\", 1 stream, 2 events\n") != NULL);
    /* Samples out of ts order: "last" is the latest ts, not the file's last. */
    CHECK(strstr(r.out, "\n  memory (pid 1): 3 samples\n    rss: min 2, mean 4.667, max 7, last 2\n"
                        "    heap: min 1, mean 4.667, max 9, last 9\n") != NULL);
    CHECK(strstr(r.out, "\nflows: 1 start, 0 steps, 1 finish; 1 matched pair, "
                        "0 unmatched starts, 0 unmatched finishes\n") != NULL);
    cli_free(&r);

    r = cli_run("summary '%s'", CLI_DATA "/dangling_flow.json");
    CHECK_INT(r.code, 0);
    CHECK(strstr(r.out, "\nproducer:    chrome\n") != NULL);
    CHECK(strstr(r.out, "0 matched pairs, 0 unmatched starts, 1 unmatched finish\n") != NULL);
    cli_free(&r);

    /* Standard input, and a bare array of events. */
    const char *bare = cli_tmp("bare.json");
    CHECK_OK(cli_write(bare, "[{\"ph\":\"X\",\"name\":\"a\",\"cat\":\"c\",\"pid\":1,"
                             "\"tid\":1,\"ts\":1,\"dur\":2}]"));
    r = cli_run("summary - <'%s'", bare);
    CHECK_INT(r.code, 0);
    CHECK(strstr(r.out, "file:        -\ntrace name:  (none)\nproducer:    chrome\n") == r.out);
    CHECK(has_row(r.out, 1, 2.0, 2.0, 2.0, "a"));
    cli_free(&r);
#ifdef CLI_TEST_HAVE_JANSSON
    json_t *j = parse_json_output("", bare);
    CHECK(json_is_null(json_object_get(j, "trace_name")));
    CHECK(json_is_null(json_object_get(j, "base_time_ns")));
    json_decref(j);
#endif
    unlink(bare);
}

/* Durations near the reader's limit (9.2e12 us each): 1100 of them sum
 * past INT64_MAX in ns. `check` accepts the trace; summary must saturate
 * rather than wrap (it printed negative totals and "-92711.5%"; UBSan
 * aborts the sanitizer build on the overflow). */
static void test_huge_times(void)
{
    const char *big = cli_tmp("huge.json");
    FILE *f = fopen(big, "w");
    CHECK_FATAL(f != NULL);
    fputs("{\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,"
          "\"tid\":0,\"args\":{\"name\":\"h\"}}", f);
    for (int i = 0; i < 1100; i++)
        fprintf(f, ",\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":1,"
                   "\"tid\":%d,\"ts\":0,\"dur\":9100000000000,\"args\":{\"device\":0,"
                   "\"stream\":%d}},\n{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\","
                   "\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":9100000000000}",
                i + 10, i + 10);
    fputs("\n]}\n", f);
    CHECK_OK(fclose(f));
    cli_result r = cli_run("check '%s'", big);
    CHECK_INT(r.code, 0);
    cli_free(&r);
    r = cli_run("summary '%s'", big);
    CHECK_INT(r.code, 0);
    /* No share is negative; the device's busy share is at most 100%. */
    int n = 0;
    for (const char *p = r.out; (p = strchr(p, '%')) != NULL; p++) {
        const char *q = p;
        while (q > r.out && (q[-1] == '.' || q[-1] == '-' || (q[-1] >= '0' && q[-1] <= '9')))
            q--;
        if (q == p)
            continue;
        n++;
        if (!CHECK(atof(q) >= 0.0))
            fprintf(stderr, "negative share: %.*s\n", (int)(p - q + 1), q);
    }
    CHECK(n >= 5);
    CHECK(strstr(r.out, "device 0: busy 100.0% (compute 100.0%,") != NULL);
    /* The sums saturate at INT64_MAX ns (9223372037 s). */
    CHECK(strstr(r.out, "\n          1100 9223372037 s ") != NULL);
    CHECK(strstr(r.out, " -") == NULL);
    if (check_failed_)
        fprintf(stderr, "summary output:\n%s", r.out);
    cli_free(&r);
#ifdef CLI_TEST_HAVE_JANSSON
    json_t *j = parse_json_output("", big);
    json_t *da = json_array_get(json_object_get(j, "device_activity"), 0);
    CHECK(jnum(da, "busy_pct") == 100.0);
    json_t *k = json_array_get(json_object_get(da, "top_kernels"), 0);
    CHECK(jnum(k, "total_us") == (double)INT64_MAX / 1000.0);
    CHECK(jnum(k, "busy_pct") > 0.0);
    json_decref(j);
#endif
    unlink(big);
}

static void test_errors(void)
{
    expect_error(CLI_DATA "/not_json.json", "", 2,
                 "invalid JSON at byte offset 0 (outside the event array): ");
    expect_error(CLI_DATA "/truncated.json", "", 2,
                 "invalid JSON at byte offset 150 (outside the event array): "
                 "unexpected end of input");
    expect_error(CLI_DATA "/truncated.json", "--json", 2, "(truncated file?)");
    expect_error(CLI_DATA "/no-such-file.json", "", 2,
                 "cannot open: No such file or directory");
    const char *obj = cli_tmp("noevents.json");
    CHECK_OK(cli_write(obj, "{\"traceEvents\": {}}"));
    expect_error(obj, "", 2, "not a trace: the top level must be an array or "
                             "an object with a \"traceEvents\" array");
    /* gzip's magic, then garbage. */
    CHECK_OK(cli_write(obj, "\x1f\x8b\x08" "garbage"));
#ifdef CLI_TEST_HAVE_ZLIB
    expect_error(obj, "", 2, "gzip data");
#else
    expect_error(obj, "", 2, "gzip-compressed input, but actrace was built "
                             "without zlib");
#endif
    unlink(obj);
    cli_result r = cli_run("summary");
    CHECK_INT(r.code, 2);
    CHECK(strstr(r.err, "usage: actrace summary [--json] [--top N] [--wide] FILE") != NULL);
    cli_free(&r);
    r = cli_run("summary --bogus x.json");
    CHECK_INT(r.code, 2);
    CHECK(strstr(r.err, "unknown option '--bogus'") != NULL);
    cli_free(&r);
    r = cli_run("summary --help");
    CHECK_INT(r.code, 0);
    CHECK(strstr(r.out, "usage: actrace summary") != NULL);
    cli_free(&r);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cli_bin = argv[1];
    const char *ref = ACT_KINETO_REF;
    if (*ref)
        test_kineto(ref);
    else
        printf("NOTE: Kineto reference trace not found at configure time "
               "(set ACT_SHARED_DIR): its checks are skipped\n");
    test_recorded();
    test_handwritten();
    test_huge_times();
    test_errors();
    return check_done();
}
