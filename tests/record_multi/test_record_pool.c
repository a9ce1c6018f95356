/* SPDX-License-Identifier: MIT */
/*
 * The chunk pool under `actrace record` (issue 21): the pool's slots are
 * part of the spool, the drain copies each filled slot to the archive and
 * logs the move (ACT__SP_MOVED) before the slot is handed out again, and
 * the rebuild applies the moves in log order (src/engine/thread.c,
 * spool.c).
 * - SIGKILL while three threads record: the rebuilt trace holds every
 *   tick once (no duplicates, none lost), from chunks that moved to the
 *   archive and chunks still in their slots (the rebuild says how many
 *   moved: ACTRACE_TEST_REBUILD_COUNTS).
 * - A stalled drain (ACTRACE_TEST_DRAIN_DELAY_US: a slow disk) with a
 *   2 MB pool: BUFFER_FULL_POLICY drop gives counted drops (kept +
 *   dropped = attempted, each kept span whole and once), wait and grow
 *   keep everything.
 * - Thread churn: 40 threads, 4 at a time, through a 2 MB pool under
 *   wait: an exited thread's slots come back (else the wait would give
 *   up and drop), every span once in the rebuilt trace.
 */
#include <signal.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"
#include "record_util.h"
#include "record_seq.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define PROG ACT_BINARY_DIR "/tests/act_mp_prog"

static char tmpdir[] = "/tmp/act_rpool_XXXXXX";

/* "actrace rebuild: T threads, C chunks, M moved" in @p err: M, or -1. */
static long moved_count(const char *err)
{
    const char *m = err ? strstr(err, "actrace rebuild: ") : NULL;
    long t, c, mv;
    if (!m || sscanf(m, "actrace rebuild: %ld threads, %ld chunks, %ld moved", &t, &c, &mv) != 3)
        return -1;
    return mv;
}

/* At least @p min chunks moved, says the rebuild in @p err (freed). */
static void check_moved(const char *what, char *err, long min)
{
    long mv = moved_count(err);
    if (mv < min)
        fprintf(stderr, "%s: %ld chunks moved; stderr:\n%s\n", what, mv, err ? err : "");
    CHECK(mv >= min);
    free(err);
}

/* Run @p args under record with config @p conf and the environment
 * @p env; its trace (caller decrefs), record's stderr in *@p err. */
static json_t *run(const char *name, const char *conf, const char *env, const char *args,
                   int want_rc, char **err)
{
    char cfg[600], errpath[600], cmd[8192];
    snprintf(cfg, sizeof cfg, "%s/%s.conf", tmpdir, name);
    snprintf(errpath, sizeof errpath, "%s/%s.err", tmpdir, name);
    FILE *f = fopen(cfg, "w");
    CHECK_FATAL(f != NULL);
    fputs(conf, f);
    fclose(f);
    /* In the test's own directory, not ACT_TRACE_DIR: these traces are
     * 20-90 MB (hundreds of thousands of spans), past what CI's viewers
     * (speedscope in headless Chromium) import in their time limit. */
    char out[600];
    snprintf(out, sizeof out, "%s/rpool_%s.json", tmpdir, name);
    remove(out);
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s ACTRACE_TEST_REBUILD_COUNTS=1 %s %s record --no-default-plugins -c %s "
             "-o %s -- %s %s 2>%s",
             tmpdir, env, ACTRACE, cfg, out, PROG, args, errpath);
    int rc = ru_run(cmd);
    *err = tu_slurp(errpath, NULL);
    if (rc != want_rc)
        fprintf(stderr, "%s: record exited %d, expected %d; stderr:\n%s\n", name, rc, want_rc,
                *err ? *err : "");
    CHECK_EQ_INT(rc, want_rc);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    return root;
}

static long long dropped_ops(json_t *root)
{
    return tu_int(json_object_get(tu_stats(root), "dropped_by_type"), "cpu_op");
}

static void kill_many(void)
{
    enum { N = 200000 };
    char args[64], *err;
    snprintf(args, sizeof args, "die kill %d", N);
    /* An 8 MB pool (128 slots): most chunks move before the end. */
    json_t *root = run("kill", "BUFFER_POOL_MB = 8\n", "", args, 128 + SIGKILL, &err);
    json_t *dying = tu_find(root, "X", "dying");
    CHECK_FATAL(dying != NULL);
    long long pid = tu_int(dying, "pid");
    json_t *evs = tu_events(root), *e;
    size_t i;
    int threads = 0;
    json_array_foreach(evs, i, e)
    {
        const char *nm = json_string_value(json_object_get(e, "name"));
        const char *tn = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
        if (!nm || strcmp(nm, "thread_name") != 0 || !tn || strncmp(tn, "rec ", 4) != 0 ||
            tu_int(e, "pid") != pid)
            continue;
        threads++;
        long n = ru_check_seq(root, "tick", pid, tu_int(e, "tid"), 1, 0);
        if (n < N)
            fprintf(stderr, "kill: %s has %ld ticks, at least %d were recorded\n", tn, n, N);
        CHECK(n >= N);
    }
    CHECK_EQ_INT(threads, 3);
    CHECK_EQ_INT(dropped_ops(root), 0);
    /* 3 x 200k ticks of 64 bytes are about 600 chunks: most moved. */
    check_moved("kill", err, 100);
    json_decref(root);
}

/* A drain that sleeps 2 ms before each chunk; 200k spans with an arg
 * (about 200 chunks) through a 2 MB pool (32 slots), left with _exit. */
static void stalled(const char *policy)
{
    enum { N = 200000 };
    char conf[256], args[64], name[32], *err;
    snprintf(conf, sizeof conf, "BUFFER_POOL_MB = 2\nBUFFER_FULL_POLICY = %s\n", policy);
    snprintf(args, sizeof args, "fill 0 %d", N);
    snprintf(name, sizeof name, "stalled_%s", policy);
    json_t *root = run(name, conf, "ACTRACE_TEST_DRAIN_DELAY_US=2000", args, 0, &err);
    json_t *first = tu_find(root, "X", "fill");
    CHECK_FATAL(first != NULL);
    int drop = strcmp(policy, "drop") == 0;
    long n = ru_check_seq(root, "fill", tu_int(first, "pid"), tu_int(first, "tid"), 0, drop);
    long long dropped = dropped_ops(root);
    if (n + dropped != N || (drop && dropped == 0) || (!drop && dropped != 0))
        fprintf(stderr, "%s: %ld kept, %lld dropped of %d\n", name, n, dropped, N);
    CHECK_EQ_INT(n + dropped, N);
    if (drop)
        CHECK(dropped > 0);
    else
        CHECK_EQ_INT(dropped, 0);
    CHECK(moved_count(err) >= 0); /* rebuilt */
    free(err);
    json_decref(root);
}

static void churn(void)
{
    enum { T = 40, N = 20000 };
    char args[64], *err;
    snprintf(args, sizeof args, "churn %d %d", T, N);
    json_t *root = run("churn", "BUFFER_POOL_MB = 2\nBUFFER_FULL_POLICY = wait\n", "", args, 0,
                       &err);
    json_t *first = tu_find(root, "X", "c");
    CHECK_FATAL(first != NULL);
    /* T x N spans of 64 bytes: 800 slot uses of 32 slots. */
    CHECK_EQ_INT(ru_check_seq(root, "c", tu_int(first, "pid"), -1, 0, 0), (long)T * N);
    CHECK_EQ_INT(dropped_ops(root), 0);
    check_moved("churn", err, 500);
    json_decref(root);
}

int main(void)
{
    CHECK_FATAL(mkdtemp(tmpdir) != NULL);
    ru_watchdog("RecordPoolSpool: timed out\n", 240);
    kill_many();
    stalled("drop");
    stalled("wait");
    stalled("grow");
    churn();
    CHECK_EQ_INT(ru_count_entries(tmpdir, "actrace-record-", NULL), 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ru_run(cmd);
    return check_done();
}
