/* SPDX-License-Identifier: MIT */
/*
 * `actrace summary` and `actrace check` on streams and on what a
 * performance engineer asks first: a hand-written Kineto-layout GPU trace
 * (kernels, memcpy, memset, runtime launches, flows, string pids) whose
 * busy shares, kernel table, launch latencies, copies, self times and
 * counter means are computed by hand; the drop warning; standard input,
 * pipes and FIFOs (a uint64 >= 2^63 arg, gzip through a pipe); hostile
 * input rejected with a position and exit status 2 (truncation, deep
 * nesting, invalid UTF-8, a gzip bomb); --top and name cutting; and a
 * 2 GiB generated trace fed through a pipe, read in bounded memory (peak
 * RSS of the actrace process from wait4).
 *
 * Arguments: the actrace binary, the gen_trace binary, and "--big" for
 * the 2 GiB test alone (CTest: CliStreamBig, out of the sanitizer jobs).
 */
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cli_readers/cli_util.h"

#ifdef CLI_TEST_HAVE_JANSSON
#include <jansson.h>
#endif
#ifdef CLI_TEST_HAVE_ZLIB
#include <zlib.h>
#endif

static const char *gen_bin = "";

static int has(const char *out, const char *s)
{
    int ok = strstr(out, s) != NULL;
    if (!ok)
        fprintf(stderr, "missing: [%s]\n", s);
    return ok;
}

static void test_kineto_gpu(void)
{
    const char *f = CLI_DATA "/kineto_gpu.json";
    cli_result r = cli_run("summary '%s'", f);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.err, "");
    /* Window 220 us; device 0 busy [20,50]+[60,70]+[80,85]+[200,220]. */
    int ok = 1;
    ok &= CHECK(has(r.out, "as a share of the 220 \xC2\xB5s trace window):\n"));
    ok &= CHECK(has(r.out, "\n  device 0: busy 29.5% (compute 27.3%, memcpy 9.1%, "
                           "memset 2.3%), idle 70.5%; 65.0 \xC2\xB5s busy\n"));
    ok &= CHECK(has(r.out, "\n    top 2 of 2 kernels by device time:\n"));
    ok &= CHECK(has(r.out, "\n             2    40.0 \xC2\xB5s    20.0 \xC2\xB5s    10.0 \xC2\xB5s"
                           "    30.0 \xC2\xB5s  61.5%  gemm\n"));
    ok &= CHECK(has(r.out, "  30.8%  relu_kernel\n"));
    /* Latencies 10, 10, 20, 20, 40 us. */
    ok &= CHECK(has(r.out, "\n    launch latency (host launch -> device start, 5 flows): "
                           "p50 20.0 \xC2\xB5s, p95 40.0 \xC2\xB5s, max 40.0 \xC2\xB5s\n"));
    ok &= CHECK(has(r.out, "\n    copies HtoD         1 in 20.0 \xC2\xB5s, 1.91 MiB, 100 GB/s\n"));
    ok &= CHECK(has(r.out, "\n  device 1: busy 4.5% (compute 4.5%, memcpy 0.0%, "
                           "memset 0.0%), idle 95.5%; 10.0 \xC2\xB5s busy\n"));
    /* Self: linear 100 - (5 + 10 + 5 + 4), relu 50 - 5. */
    ok &= CHECK(has(r.out, "\n  pid 100 \"python\": 5 names\n    by total:\n"));
    ok &= CHECK(has(r.out, "\n             1     100 \xC2\xB5s    76.0 \xC2\xB5s  aten::linear\n"));
    ok &= CHECK(has(r.out, "\n             1    50.0 \xC2\xB5s    45.0 \xC2\xB5s  aten::relu\n"));
    ok &= CHECK(has(r.out, "\n             3    15.0 \xC2\xB5s    15.0 \xC2\xB5s  cudaLaunchKernel\n"));
    /* Time-weighted: 50 for 110 us, 100 for 110 us. */
    ok &= CHECK(has(r.out, "\n  gpu_util (pid 0): 3 samples\n    util: min 0, mean 75, "
                           "max 100, last 0\n"));
    ok &= CHECK(has(r.out, "\n  pid \"Spans\": 1 event\n    tid \"PyTorch Profiler\": 1 event\n"));
    ok &= CHECK(has(r.out, "\nflows: 5 starts, 0 steps, 5 finishes; 5 matched pairs"));
    if (!ok)
        fprintf(stderr, "%s", r.out);
    cli_free(&r);

    /* --top 1 keeps one row per table. */
    r = cli_run("summary --top 1 '%s'", f);
    CHECK_INT(r.code, 0);
    CHECK(has(r.out, "\n    top 1 of 2 kernels by device time:\n"));
    CHECK(strstr(r.out, "relu_kernel") == NULL);
    cli_free(&r);
    r = cli_run("summary --top 0 '%s'", f);
    CHECK_INT(r.code, 2);
    CHECK(has(r.err, "--top needs a number"));
    cli_free(&r);

#ifdef CLI_TEST_HAVE_JANSSON
    r = cli_run("summary --json '%s'", f);
    CHECK_INT(r.code, 0);
    json_error_t e;
    json_t *j = json_loads(r.out, JSON_REJECT_DUPLICATES, &e);
    CHECK_FATAL(j != NULL);
    json_t *d0 = json_array_get(json_object_get(j, "device_activity"), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(d0, "device")), 0);
    CHECK_NEAR(json_number_value(json_object_get(d0, "busy_us")), 65.0, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(d0, "busy_pct")), 6500.0 / 220, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(d0, "compute_pct")), 6000.0 / 220, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(d0, "memcpy_pct")), 2000.0 / 220, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(d0, "memset_pct")), 500.0 / 220, 1e-9);
    CHECK_EQ_INT(json_integer_value(json_object_get(d0, "kernels")), 3);
    json_t *k0 = json_array_get(json_object_get(d0, "top_kernels"), 0);
    CHECK_STR(json_string_value(json_object_get(k0, "name")), "gemm");
    CHECK_EQ_INT(json_integer_value(json_object_get(k0, "count")), 2);
    CHECK_NEAR(json_number_value(json_object_get(k0, "min_us")), 10.0, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(k0, "max_us")), 30.0, 1e-9);
    json_t *lat = json_object_get(d0, "launch_latency");
    CHECK_EQ_INT(json_integer_value(json_object_get(lat, "count")), 5);
    CHECK_NEAR(json_number_value(json_object_get(lat, "p50_us")), 20.0, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(lat, "p95_us")), 40.0, 1e-9);
    json_t *cp = json_array_get(json_object_get(d0, "copies"), 0);
    CHECK_STR(json_string_value(json_object_get(cp, "direction")), "HtoD");
    CHECK_EQ_INT(json_integer_value(json_object_get(cp, "bytes")), 2000000);
    CHECK_NEAR(json_number_value(json_object_get(cp, "mb_per_s")), 100000.0, 1e-6);
    json_t *h = json_array_get(json_object_get(j, "host"), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(h, "pid")), 100);
    json_t *s0 = json_array_get(json_object_get(h, "top_self"), 0);
    CHECK_STR(json_string_value(json_object_get(s0, "name")), "aten::linear");
    CHECK_NEAR(json_number_value(json_object_get(s0, "self_us")), 76.0, 1e-9);
    json_t *ctr = json_array_get(json_object_get(j, "counters"), 0);
    json_t *ser = json_array_get(json_object_get(ctr, "series"), 0);
    CHECK_NEAR(json_number_value(json_object_get(ser, "mean")), 75.0, 1e-9);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(j, "dropped"), "total")), 0);
    json_decref(j);
    cli_free(&r);
#endif
}

static void test_drops(void)
{
    const char *f = cli_tmp("drops.json");
    CHECK_OK(cli_write(f, "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"c\",\"name\":\"a\","
                          "\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2}],\"actraceStats\":"
                          "{\"recorded\":10,\"dropped\":5,\"dropped_by_reason\":"
                          "{\"buffer_full\":4,\"disabled\":0,\"spool\":1}}}"));
    cli_result r = cli_run("summary '%s'", f);
    CHECK_INT(r.code, 0);
    /* The first thing printed. */
    static const char warn[] =
        "WARNING: 5 events dropped while recording (10 recorded); the numbers "
        "below miss them.\n  dropped by reason: buffer_full 4, spool 1\n\nfile:";
    if (!CHECK(strncmp(r.out, warn, sizeof warn - 1) == 0))
        fprintf(stderr, "%s", r.out);
    cli_free(&r);
#ifdef CLI_TEST_HAVE_JANSSON
    r = cli_run("summary --json '%s'", f);
    json_t *j = json_loads(r.out, 0, NULL);
    CHECK_FATAL(j != NULL);
    json_t *d = json_object_get(j, "dropped");
    CHECK_EQ_INT(json_integer_value(json_object_get(d, "total")), 5);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(d, "by_reason"),
                                                    "buffer_full")), 4);
    json_decref(j);
    cli_free(&r);
#endif
    unlink(f);
}

/* Standard input from pipes: never reopened. */
static void test_pipes(void)
{
    const char *f = cli_tmp("big_uint.json");
    CHECK_OK(cli_write(f, "[{\"ph\":\"X\",\"cat\":\"c\",\"name\":\"a\",\"pid\":1,\"tid\":1,"
                          "\"ts\":1,\"dur\":2,\"args\":{\"v\":18446744073709551615,"
                          "\"w\":9223372036854775808}}]"));
    cli_result r;
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cat '%s' | '%s' summary - ", f, cli_bin);
    r = cli_run_sh(cmd);
    CHECK_INT(r.code, 0);
    CHECK(has(r.out, "\nevents:      1\n"));
    cli_free(&r);
    snprintf(cmd, sizeof cmd, "cat '%s' | '%s' check -", f, cli_bin);
    r = cli_run_sh(cmd);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out, "-: ok (1 event)\n");
    cli_free(&r);

    /* A FIFO. */
    const char *fifo = cli_tmp("trace.fifo");
    unlink(fifo);
    CHECK_FATAL(mkfifo(fifo, 0600) == 0);
    snprintf(cmd, sizeof cmd, "(cat '%s' > '%s' &); '%s' summary '%s'", f, fifo,
             cli_bin, fifo);
    r = cli_run_sh(cmd);
    CHECK_INT(r.code, 0);
    CHECK(has(r.out, "\nevents:      1\n"));
    cli_free(&r);
    unlink(fifo);
#ifdef CLI_TEST_HAVE_ZLIB
    /* zcat-free: gzip data through a pipe. */
    const char *gzf = cli_tmp("pipe.json.gz");
    CHECK_OK(cli_gzip(CLI_DATA "/kineto_gpu.json", gzf, 0));
    snprintf(cmd, sizeof cmd, "cat '%s' | '%s' summary -", gzf, cli_bin);
    r = cli_run_sh(cmd);
    CHECK_INT(r.code, 0);
    CHECK(has(r.out, "\n  device 0: busy 29.5%"));
    cli_free(&r);
    unlink(gzf);
#endif
    unlink(f);
}

/* Rejected with exit 2 and "byte offset N (event #K)" on stderr. */
static void expect_reject(const char *cmd, const char *file, const char *what)
{
    for (int c = 0; c < 2; c++) {
        cli_result r = cli_run("%s '%s'", c ? "check" : "summary", file);
        int ok = CHECK_INT(r.code, 2);
        ok &= CHECK_STR(r.out, "");
        ok &= CHECK(strstr(r.err, what) != NULL);
        if (!ok)
            fprintf(stderr, "%s: %s\nwant: %s\n", cmd, r.err, what);
        cli_free(&r);
    }
}

static void test_hostile(void)
{
    /* A generated trace cut in an event. */
    const char *f = cli_tmp("cut.json");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' -n 100 | head -c 5000 > '%s'", gen_bin, f);
    CHECK_INT(system(cmd), 0);
    expect_reject("cut", f, "invalid JSON at byte offset 5000 (event #");
    expect_reject("cut", f, "unexpected end of input in ");
    expect_reject("cut", f, "(truncated file?)");

    /* Nesting far beyond any trace. */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 64);
    CHECK_FATAL(deep != NULL);
    strcpy(deep, "[{\"args\":");
    memset(deep + 9, '[', depth);
    deep[9 + depth] = '\0';
    CHECK_OK(cli_write(f, deep));
    free(deep);
    expect_reject("deep", f, "(event #0): nesting too deep");

    /* Invalid UTF-8 in a name. */
    CHECK_OK(cli_write(f, "[{\"ph\":\"i\",\"name\":\"ok\"},\n{\"ph\":\"i\",\"name\":\"\xC3\x28\"}]"));
    expect_reject("utf8", f, "invalid JSON at byte offset 43 (event #1): invalid UTF-8 in a string");
    /* A number where the grammar has none. */
    CHECK_OK(cli_write(f, "{\"traceEvents\":[{\"ts\":01}]}"));
    expect_reject("num", f, "invalid JSON at byte offset 23 (event #0): expected ',' or '}'");
#ifdef CLI_TEST_HAVE_ZLIB
    /* A gzip bomb: 512 MiB of NUL bytes after "[", about 500 KiB on disk. */
    gzFile g = gzopen(f, "wb9");
    CHECK_FATAL(g != NULL);
    gzwrite(g, "[", 1);
    static char zero[1 << 20];
    for (int i = 0; i < 512; i++)
        gzwrite(g, zero, sizeof zero);
    gzclose(g);
    expect_reject("bomb", f, "invalid JSON at byte offset 1 (event #0): expected a value "
                             "[gzip input: offset in the decompressed data;");
#endif
    unlink(f);
}

/* Names are cut to a sensible width; --wide shows them whole. */
static void test_names(void)
{
    size_t n = 1 << 20;
    char *t = malloc(n + 256);
    CHECK_FATAL(t != NULL);
    char *p = t + sprintf(t, "[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"");
    memset(p, 'n', n);
    p += n;
    strcpy(p, "\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1}]");
    const char *f = cli_tmp("longname.json");
    CHECK_OK(cli_write(f, t));
    free(t);
    cli_result r = cli_run("summary '%s'", f);
    CHECK_INT(r.code, 0);
    CHECK(r.out && strlen(r.out) < 8192);
    CHECK(has(r.out, "nnn...\n"));
    cli_free(&r);
    r = cli_run("summary --wide '%s'", f);
    CHECK_INT(r.code, 0);
    CHECK(r.out && strlen(r.out) > 2 * n);
    cli_free(&r);
    unlink(f);
}

/* gen_trace -m MB | actrace CMD -: exit status, output, peak RSS (KiB). */
static int piped(const char *cmd, unsigned mb, const char *out, long *maxrss)
{
    int p[2];
    if (pipe(p) != 0)
        return -1;
    char mbs[32];
    snprintf(mbs, sizeof mbs, "%u", mb);
    pid_t g = fork();
    if (g == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execl(gen_bin, gen_bin, "-m", mbs, (char *)NULL);
        _exit(127);
    }
    pid_t a = fork();
    if (a == 0) {
        dup2(p[0], 0);
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        close(p[0]);
        close(p[1]);
        execl(cli_bin, cli_bin, cmd, "-", (char *)NULL);
        _exit(127);
    }
    close(p[0]);
    close(p[1]);
    int st, gst;
    struct rusage ru;
    if (wait4(a, &st, 0, &ru) != a)
        return -1;
    waitpid(g, &gst, 0);
    *maxrss = ru.ru_maxrss;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_big(void)
{
    const char *out = cli_tmp("big.out");
    long rss = 0;
    /* 2 GiB of events generated on the fly: no disk needed. */
    int rc = piped("summary", 2048, out, &rss);
    CHECK_INT(rc, 0);
    char *text = cli_slurp(out, NULL);
    CHECK_FATAL(text != NULL);
    /* gen_trace: 6 or 7 or 8 events an iteration, ~770 bytes. */
    CHECK(has(text, "\ntrace name:  generated\n"));
    CHECK(has(text, "    launch latency (host launch -> device start, "));
    CHECK(has(text, "p50 18.0 \xC2\xB5s, p95 18.0 \xC2\xB5s, max 18.0 \xC2\xB5s\n"));
    const char *ev = strstr(text, "\nevents:      ");
    CHECK(ev && strtoull(ev + 14, NULL, 10) > 15000000ull);
    printf("summary of 2 GiB through a pipe: peak RSS %ld KiB\n", rss);
    /* Generous: the reader's buffer is 1 MiB and the summary's tables
     * hold a handful of names. */
    CHECK(rss > 0 && rss < 64 * 1024);
    free(text);

    /* check on the same 2 GiB: gen_trace writes each thread's slices in
     * start order, so check keeps no slice (a stack, a ring of recent
     * slices per thread) and only the open flows (each s is matched by
     * its f a few events later). Before: ~100 bytes per slice+flow. */
    rc = piped("check", 2048, out, &rss);
    CHECK_INT(rc, 0);
    text = cli_slurp(out, NULL);
    CHECK_FATAL(text != NULL);
    CHECK(strncmp(text, "-: ok (", 7) == 0);
    CHECK(strtoull(text + 7, NULL, 10) > 15000000ull);
    printf("check of 2 GiB through a pipe: peak RSS %ld KiB\n", rss);
    CHECK(rss > 0 && rss < 64 * 1024);
    free(text);
    unlink(out);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cli_bin = argv[1];
    if (argc > 2)
        gen_bin = argv[2];
    if (argc > 3 && strcmp(argv[3], "--big") == 0) {
        test_big(); /* CliStreamBig: slow under sanitizers, labelled nosan */
        return check_done();
    }
    test_kineto_gpu();
    test_drops();
    test_pipes();
    test_hostile();
    test_names();
    return check_done();
}
