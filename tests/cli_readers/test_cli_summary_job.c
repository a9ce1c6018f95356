/* SPDX-License-Identifier: MIT */
/*
 * `actrace summary` on what torch.profiler and real jobs write (issue 35,
 * part B), and `actrace check` on Kineto's string pids:
 *   - a negative "device" arg (it indexed the process table: SIGSEGV);
 *   - torch's "fwdbwd" flows (host to host) are not launches: no
 *     "device ? (pid ...)", no launch latency;
 *   - the base time is the zero of ts, not the recording date: the start
 *     is base + first ts, shown as a time of day; the span in human units;
 *   - ProfilerStep#N grouped as "ProfilerStep*" in the top lists, and the
 *     steps as a count with min/p50/p90/max;
 *   - summary DIR: each trace and the job (per-rank table, slowest rank,
 *     top kernels across ranks), --json with the same numbers;
 *   - check: Kineto's string pids are warnings naming speedscope, errors
 *     only with --strict.
 */
#include <sys/stat.h>

#include "check.h"
#include "cli_readers/cli_util.h"

#ifdef CLI_TEST_HAVE_JANSSON
#include <jansson.h>
#endif

static int has(const char *out, const char *want)
{
    int ok = strstr(out, want) != NULL;
    if (!ok)
        fprintf(stderr, "missing: [%s]\n", want);
    return ok;
}

#ifdef CLI_TEST_HAVE_JANSSON
static json_t *run_json(const char *args)
{
    cli_result r = cli_run("summary --json %s", args);
    CHECK_INT(r.code, 0);
    json_error_t e;
    json_t *j = json_loads(r.out, JSON_REJECT_DUPLICATES, &e);
    if (!CHECK(j != NULL))
        fprintf(stderr, "not JSON: %d:%d %s\n%s\n", e.line, e.column, e.text, r.out);
    cli_free(&r);
    return j;
}

static double jnum(json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

static long long jint(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}
#endif

/* Item 1: a negative "device" arg crashed summary (the process table was
 * indexed with -1 - device). */
static void test_negative_device(void)
{
    const char *f = cli_tmp("negdev.json");
    CHECK_OK(cli_write(f,
        "{\"traceEvents\":[\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
        "\"tid\":1,\"ts\":10,\"dur\":2},\n"
        "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":1,\"pid\":1,\"tid\":1,\"ts\":10},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":2,\"tid\":7,\"ts\":20,"
        "\"dur\":5,\"args\":{\"device\":-1000000000}},\n"
        "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":1,\"pid\":2,"
        "\"tid\":7,\"ts\":20},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":3,\"tid\":7,\"ts\":30,"
        "\"dur\":5,\"args\":{\"device\":-2}}\n"
        "]}\n"));
    cli_result r = cli_run("summary '%s'", f);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.err, "");
    /* Not a device index: shown as the unknown device of its process. */
    CHECK(has(r.out, "\n  device ? (pid 2): busy "));
    CHECK(has(r.out, "\n  device ? (pid 3): busy "));
    CHECK(has(r.out, "launch latency (host launch -> device start, 1 flow): p50 10.0 \xC2\xB5s"));
    cli_free(&r);
    r = cli_run("summary --json '%s' >/dev/null", f);
    CHECK_INT(r.code, 0);
    cli_free(&r);
    unlink(f);
}

/* A CPU-only torch.profiler training trace, cut down: Kineto's layout and
 * base time, ProfilerStep#N annotations, fwdbwd flows, the three
 * string-pid events. */
#define TORCH_CPU \
    "{\"schemaVersion\": 1, \"deviceProperties\": [],\n" \
    "\"distributedInfo\": {\"backend\": \"gloo\", \"rank\": %d, \"world_size\": 2},\n" \
    "\"displayTimeUnit\": \"ms\", \"baseTimeNanoseconds\": 1790857026000000000,\n" \
    "\"traceEvents\": [\n" \
    "{\"ph\":\"M\",\"name\":\"process_name\",\"ts\":5535429803848.625,\"pid\":12633,\"tid\":0," \
    "\"args\":{\"name\":\"python\"}},\n" \
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"pid\":12633," \
    "\"tid\":12633,\"ts\":5535429803421.494,\"dur\":%s},\n" \
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":12633,\"tid\":12633," \
    "\"ts\":5535429803500.000,\"dur\":100.000},\n" \
    "{\"ph\":\"s\",\"id\":7,\"pid\":12633,\"tid\":12633,\"ts\":5535429803500.000," \
    "\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\"},\n" \
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#3\",\"pid\":12633," \
    "\"tid\":12633,\"ts\":5535429823421.494,\"dur\":30000.000},\n" \
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"autograd::engine::evaluate_function: " \
    "AddmmBackward0\",\"pid\":12633,\"tid\":12633,\"ts\":5535429823500.000,\"dur\":200.000},\n" \
    "{\"ph\":\"f\",\"id\":7,\"pid\":12633,\"tid\":12633,\"ts\":5535429823500.000," \
    "\"cat\":\"fwdbwd\",\"name\":\"fwdbwd\",\"bp\":\"e\"},\n" \
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#4\",\"pid\":12633," \
    "\"tid\":12633,\"ts\":5535429853421.494,\"dur\":40000.000},\n" \
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#5\",\"pid\":12633," \
    "\"tid\":12633,\"ts\":5535429893421.494,\"dur\":50000.000},\n" \
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#6\",\"pid\":12633," \
    "\"tid\":12633,\"ts\":5535429943421.494,\"dur\":60000.000},\n" \
    "%s" \
    "{\"ph\":\"X\",\"cat\":\"Trace\",\"name\":\"PyTorch Profiler (0)\",\"pid\":\"Spans\"," \
    "\"tid\":\"PyTorch Profiler\",\"ts\":5535429803421.494,\"dur\":200000.000},\n" \
    "{\"name\":\"Iteration Start: PyTorch Profiler\",\"ph\":\"i\",\"s\":\"g\"," \
    "\"pid\":\"Traces\",\"tid\":\"Trace PyTorch Profiler\",\"ts\":5535429803421.494},\n" \
    "{\"name\":\"Record Window End\",\"ph\":\"i\",\"s\":\"g\",\"pid\":\"\",\"tid\":\"\"," \
    "\"ts\":5535430003421.494}\n" \
    "],\"traceName\": \"rank%d.pt.trace.json\"}\n"

static void write_torch(const char *path, int rank, const char *step2,
                        const char *more)
{
    char buf[8192];
    snprintf(buf, sizeof buf, TORCH_CPU, rank, step2, more, rank);
    CHECK_OK(cli_write(path, buf));
}

/* Items 2 to 5 on one trace. */
static void test_torch_cpu(void)
{
    const char *f = cli_tmp("torch_cpu.json");
    write_torch(f, 0, "20000.000", "");
    cli_result r = cli_run("summary '%s'", f);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.err, "");
    /* 2: fwdbwd is not a launch. */
    CHECK(strstr(r.out, "device ?") == NULL);
    CHECK(strstr(r.out, "launch latency") == NULL);
    CHECK(strstr(r.out, "device activity") == NULL);
    CHECK(has(r.out, "\nflows: 1 start, 0 steps, 1 finish; 1 matched pair, 0 unmatched "
                     "starts, 0 unmatched finishes\n  1 matched pair ends in a process "
                     "without device work"));
    /* 3: the base time is the zero of ts (Kineto's 3-month floor). */
    CHECK(has(r.out, "\nbase time:   1790857026000000000 ns (ts 0 = 2026-10-01 "
                     "12:17:06.000000 UTC)\n"));
    /* 5: the span in human units, from the real start (base + first ts). */
    CHECK(has(r.out, "\ntime span:   200 ms, 2026-12-04 13:54:15.803421 to "
                     "13:54:16.003421 UTC\n"));
    /* 4: steps grouped, with their distribution (20, 30, 40, 50, 60 ms). */
    CHECK(has(r.out, "\nsteps:       5 ProfilerStep*: total 200 ms; min 20.0 ms, "
                     "p50 40.0 ms, p90 60.0 ms, max 60.0 ms\n"));
    char row[256];
    snprintf(row, sizeof row, "\n  %10d %14.3f %12.3f %12.3f  %s\n", 5, 200000.0, 40000.0,
             60000.0, "ProfilerStep*");
    CHECK(has(r.out, row));
    CHECK(strstr(r.out, "ProfilerStep#") == NULL);
    CHECK(has(r.out, "\n             5     200 ms     200 ms  ProfilerStep*\n"));
    if (check_failed_)
        fprintf(stderr, "%s", r.out);
    cli_free(&r);

#ifdef CLI_TEST_HAVE_JANSSON
    char args[1200];
    snprintf(args, sizeof args, "'%s'", f);
    json_t *j = run_json(args);
    CHECK_EQ_INT(json_array_size(json_object_get(j, "device_activity")), 0);
    CHECK_EQ_INT(jint(json_object_get(j, "flows"), "host_only"), 1);
    json_t *t = json_object_get(j, "time");
    CHECK_EQ_INT(jint(t, "start_unix_ns"), 1796392455803421494LL);
    CHECK_STR(json_string_value(json_object_get(t, "start_utc")),
              "2026-12-04 13:54:15.803421");
    json_t *st = json_array_get(json_object_get(j, "steps"), 0);
    CHECK_STR(json_string_value(json_object_get(st, "name")), "ProfilerStep*");
    CHECK_EQ_INT(jint(st, "count"), 5);
    CHECK_NEAR(jnum(st, "min_us"), 20000.0, 1e-9);
    CHECK_NEAR(jnum(st, "p50_us"), 40000.0, 1e-9);
    CHECK_NEAR(jnum(st, "p90_us"), 60000.0, 1e-9);
    CHECK_NEAR(jnum(st, "max_us"), 60000.0, 1e-9);
    json_t *top = json_array_get(json_object_get(j, "top_names"), 0);
    CHECK_STR(json_string_value(json_object_get(top, "name")), "ProfilerStep*");
    json_decref(j);
#endif

    /* A trace without a base time: ts as written, no time of day. */
    const char *g = cli_tmp("nobase.json");
    CHECK_OK(cli_write(g, "[{\"ph\":\"X\",\"name\":\"a\",\"cat\":\"c\",\"pid\":1,"
                          "\"tid\":1,\"ts\":1988840.133,\"dur\":70185.942}]"));
    r = cli_run("summary '%s'", g);
    CHECK(has(r.out, "\ntime span:   70.2 ms, ts 1988840.133 us to 2059026.075 us "
                     "(no base time: no time of day)\n"));
    cli_free(&r);
    unlink(g);
    unlink(f);
}

/* Other numbered names torch's table would group. */
static void test_step_names(void)
{
    const char *f = cli_tmp("steps.json");
    CHECK_OK(cli_write(f, "[{\"ph\":\"X\",\"name\":\"train_step_1\",\"cat\":\"c\",\"pid\":1,"
                          "\"tid\":1,\"ts\":1,\"dur\":2},"
                          "{\"ph\":\"X\",\"name\":\"train_step_2\",\"cat\":\"c\",\"pid\":1,"
                          "\"tid\":1,\"ts\":4,\"dur\":4},"
                          "{\"ph\":\"X\",\"name\":\"conv2d\",\"cat\":\"c\",\"pid\":1,"
                          "\"tid\":1,\"ts\":4,\"dur\":1},"
                          "{\"ph\":\"X\",\"name\":\"layer_2\",\"cat\":\"c\",\"pid\":1,"
                          "\"tid\":1,\"ts\":9,\"dur\":1},"
                          "{\"ph\":\"X\",\"name\":\"opt#3\",\"cat\":\"c\",\"pid\":1,"
                          "\"tid\":1,\"ts\":11,\"dur\":1},"
                          "{\"ph\":\"X\",\"name\":\"gemm#7\",\"cat\":\"kernel\",\"pid\":2,"
                          "\"tid\":1,\"ts\":11,\"dur\":1,\"args\":{\"device\":0}}]"));
    cli_result r = cli_run("summary '%s'", f);
    CHECK_INT(r.code, 0);
    CHECK(has(r.out, "\nsteps:       2 train_step_*: total 6.00 \xC2\xB5s; min 2.00 \xC2\xB5s, "
                     "p50 2.00 \xC2\xB5s, p90 4.00 \xC2\xB5s, max 4.00 \xC2\xB5s\n"));
    CHECK(has(r.out, "  train_step_*\n"));
    CHECK(has(r.out, "  conv2d\n"));
    CHECK(has(r.out, "  layer_2\n")); /* not a step, not "#": as it is */
    CHECK(has(r.out, "  opt*\n"));    /* "#N": grouped, not a step */
    CHECK(has(r.out, "  gemm#7\n"));  /* a kernel keeps its name */
    CHECK(strstr(r.out, "gemm*") == NULL);
    if (check_failed_)
        fprintf(stderr, "%s", r.out);
    cli_free(&r);
    unlink(f);
}

/* A device trace of a rank, for the job tests. */
static void write_gpu_rank(const char *path, int rank, int kdur)
{
    char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"schemaVersion\": 1, \"baseTimeNanoseconds\": 1790857026000000000,\n"
             "\"distributedInfo\": {\"rank\": %d, \"world_size\": 2},\n"
             "\"traceEvents\": [\n"
             "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\","
             "\"pid\":100,\"tid\":1,\"ts\":1000,\"dur\":%d},\n"
             "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\","
             "\"pid\":100,\"tid\":1,\"ts\":%d,\"dur\":%d},\n"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,"
             "\"ts\":1010,\"dur\":%d,\"args\":{\"device\":0}},\n"
             "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"relu\",\"pid\":0,\"tid\":7,"
             "\"ts\":%d,\"dur\":10,\"args\":{\"device\":0}}\n"
             "]}\n",
             rank, 2 * kdur, 1000 + 2 * kdur, 2 * kdur, kdur, 1010 + kdur + 1);
    CHECK_OK(cli_write(path, buf));
}

/* Item 6: a directory of traces. */
static void test_directory(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", cli_tmp("job"));
    mkdir(dir, 0755);
    char p[1200];
    snprintf(p, sizeof p, "%s/rank1.123.pt.trace.json", dir);
    write_gpu_rank(p, 1, 300); /* steps 600 us: the slowest */
    snprintf(p, sizeof p, "%s/rank0.123.pt.trace.json", dir);
    write_gpu_rank(p, 0, 100);
    snprintf(p, sizeof p, "%s/notes.txt", dir);
    CHECK_OK(cli_write(p, "not a trace"));
    mkdir(strcat(strcpy(p, dir), "/other"), 0755);

    cli_result r = cli_run("summary '%s'", dir);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.err, "");
    CHECK(has(r.out, "\ntraces:      2 (2 read)\n"));
    CHECK(has(r.out, "\nsteps:       4 ProfilerStep* across ranks: min 200 \xC2\xB5s, "
                     "p50 200 \xC2\xB5s, p90 600 \xC2\xB5s, max 600 \xC2\xB5s\n"));
    /* Rank 0 first; rank 1's steps are the slowest. Busy: rank 0 kernels
     * 100 + 10 us of a 400 us window. */
    const char *r0 = strstr(r.out, "\n  0 ");
    const char *r1 = strstr(r.out, "\n  1 ");
    CHECK(r0 && r1 && r0 < r1);
    CHECK(has(r.out, "   27.5%       2     200 \xC2\xB5s     200 \xC2\xB5s  rank0.123.pt.trace.json\n"));
    CHECK(has(r.out, "  rank1.123.pt.trace.json  <- slowest\n"));
    CHECK(has(r.out, "\nslowest:     rank 1 (rank1.123.pt.trace.json): step p50 600 \xC2\xB5s\n"));
    CHECK(has(r.out, "\ntop 2 of 2 kernels across ranks by device time:\n"));
    CHECK(has(r.out, "\n           2     400 \xC2\xB5s     200 \xC2\xB5s     300 \xC2\xB5s      2  gemm\n"));
    if (check_failed_)
        fprintf(stderr, "%s", r.out);
    cli_free(&r);

    /* --each: every trace's own summary too. */
    r = cli_run("summary --each '%s'", dir);
    CHECK_INT(r.code, 0);
    CHECK_INT(cli_count_lines(r.out, "file:        "), 2);
    cli_free(&r);

#ifdef CLI_TEST_HAVE_JANSSON
    char args[1200];
    snprintf(args, sizeof args, "'%s'", dir);
    json_t *j = run_json(args);
    CHECK_STR(json_string_value(json_object_get(j, "directory")), dir);
    json_t *files = json_object_get(j, "files");
    CHECK_EQ_INT(json_array_size(files), 2);
    /* Each file's object is what summary --json FILE prints. */
    snprintf(p, sizeof p, "'%s/rank0.123.pt.trace.json'", dir);
    json_t *one = run_json(p);
    CHECK(json_equal(json_array_get(files, 0), one));
    json_decref(one);
    json_t *job = json_object_get(j, "job");
    CHECK_EQ_INT(jint(job, "traces"), 2);
    json_t *ranks = json_object_get(job, "ranks");
    json_t *a = json_array_get(ranks, 0), *b = json_array_get(ranks, 1);
    CHECK_EQ_INT(jint(a, "rank"), 0);
    CHECK_EQ_INT(jint(b, "rank"), 1);
    CHECK_NEAR(jnum(a, "busy_pct"), 100.0 * 110 / 400, 1e-9);
    CHECK_NEAR(jnum(b, "busy_pct"), 100.0 * 310 / 1200, 1e-9);
    CHECK_NEAR(jnum(json_object_get(a, "steps"), "p50_us"), 200.0, 1e-9);
    CHECK_NEAR(jnum(json_object_get(b, "steps"), "max_us"), 600.0, 1e-9);
    json_t *slow = json_object_get(job, "slowest");
    CHECK_EQ_INT(jint(slow, "rank"), 1);
    CHECK_STR(json_string_value(json_object_get(slow, "by")), "step_p50");
    json_t *k = json_array_get(json_object_get(job, "top_kernels"), 0);
    CHECK_STR(json_string_value(json_object_get(k, "name")), "gemm");
    CHECK_EQ_INT(jint(k, "ranks"), 2);
    CHECK_NEAR(jnum(k, "total_us"), 400.0, 1e-9);
    json_decref(j);
#endif

    /* A broken trace among them: named on stderr, a row with its error,
     * the others still summarised; exit 2. */
    snprintf(p, sizeof p, "%s/rank2.bad.json", dir);
    CHECK_OK(cli_write(p, "{\"traceEvents\": [{\"ph\":"));
    r = cli_run("summary '%s'", dir);
    CHECK_INT(r.code, 2);
    CHECK(has(r.err, "/rank2.bad.json: error: invalid JSON"));
    CHECK(has(r.out, "\ntraces:      3 (2 read, 1 with errors)\n"));
    CHECK(has(r.out, "\nslowest:     rank 1 "));
    cli_free(&r);
    unlink(p);

    /* A directory without traces. */
    char empty[1200];
    snprintf(empty, sizeof empty, "%s/other", dir);
    r = cli_run("summary '%s'", empty);
    CHECK_INT(r.code, 2);
    CHECK(has(r.err, "/other: error: no trace files (*.json, *.json.gz) in the directory\n"));
    cli_free(&r);
    rmdir(empty);
    snprintf(p, sizeof p, "rm -rf '%s'", dir);
    CHECK_OK(system(p));
}

/* Item 7: Kineto's string pids are warnings (speedscope), errors with
 * --strict. */
static void test_check_string_pids(void)
{
    const char *f = cli_tmp("torch_check.json");
    write_torch(f, 0, "20000.000", "");
    cli_result r = cli_run("check '%s'", f);
    CHECK_INT(r.code, 0);
    CHECK(has(r.out, "warning: event #10 (ph=X, name=PyTorch Profiler (0)): pid \"Spans\" "
                     "and tid \"PyTorch Profiler\" are strings: speedscope fails to import "
                     "the trace"));
    CHECK(has(r.out, "warning: event #12 (ph=i, name=Record Window End): pid \"\" and tid "
                     "\"\" are strings"));
    CHECK(has(r.out, ": ok (13 events, "));
    CHECK(strstr(r.out, "error") == NULL);
    if (check_failed_)
        fprintf(stderr, "%s", r.out);
    cli_free(&r);
    r = cli_run("check --strict '%s'", f);
    CHECK_INT(r.code, 1);
    CHECK(has(r.out, "error: event #11 (ph=i, name=Iteration Start: PyTorch Profiler): "
                     "pid \"Traces\" and tid \"Trace PyTorch Profiler\" are strings"));
    cli_free(&r);
    /* A pid that is a number but not an id stays an error. */
    const char *g = cli_tmp("negpid.json");
    CHECK_OK(cli_write(g, "[{\"ph\":\"X\",\"name\":\"a\",\"cat\":\"c\",\"pid\":-1,"
                          "\"tid\":1,\"ts\":1,\"dur\":2}]"));
    r = cli_run("check '%s'", g);
    CHECK_INT(r.code, 1);
    CHECK(has(r.out, "error: event #0 (ph=X, name=a): pid -1 must be an integer in 0..2^32-1"));
    cli_free(&r);
    unlink(g);
    unlink(f);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cli_bin = argv[1];
    test_negative_device();
    test_torch_cpu();
    test_step_names();
    test_directory();
    test_check_string_pids();
    return check_done();
}
