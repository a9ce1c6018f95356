/* SPDX-License-Identifier: MIT */
/*
 * `actrace record` keeps what a process recorded however it ends (the
 * spool, src/engine/spool.h): exit, _exit, abort, a segfault, SIGKILL,
 * exec and quick_exit, each with three threads recording at that moment.
 * Every thread's spans are in the trace from the first one on, each with
 * its args (but for the one a thread was in the middle of), under the
 * thread's name; the open span the main thread died in is there, marked
 * unfinished; the process is named after its command line and marked
 * "recovered" when the trace was rebuilt; an exec'd image keeps the pid. Also: `sh -c '...; exit 3'`
 * (dash leaves with _exit), and a file-size limit reached while spilling
 * (EFBIG, as on a full disk): a clear error, and every event that fit is
 * kept. 10M spans under a 64 MB RAM budget are all recorded (spilled). No
 * spool is left behind.
 */
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"
#include "record_util.h"
#include "record_seq.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define PROG ACT_BINARY_DIR "/tests/act_mp_prog"

static char tmpdir[] = "/tmp/act_die_XXXXXX";

static void check_clean(const char *what)
{
    int left = ru_count_entries(tmpdir, "actrace-record-", NULL);
    if (left)
        fprintf(stderr, "%s: %d record directory(ies) left\n", what, left);
    CHECK_EQ_INT(left, 0);
}

static const char *arg_str(json_t *e, const char *key)
{
    return json_string_value(json_object_get(json_object_get(e, "args"), key));
}

static void die(const char *how, int want_rc)
{
    enum { N = 3000 };
    char name[64], cmd[4096];
    snprintf(name, sizeof name, "die_%s.json", how);
    const char *out = tu_trace_path(name);
    remove(out);
    snprintf(cmd, sizeof cmd, "TMPDIR=%s %s record -o %s -- %s die %s %d 2>/dev/null", tmpdir,
             ACTRACE, out, PROG, how, N);
    int rc = ru_run(cmd);
    if (rc != want_rc)
        fprintf(stderr, "%s: record exited %d, expected %d\n", how, rc, want_rc);
    CHECK_EQ_INT(rc, want_rc);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    json_t *dying = tu_find(root, "X", "dying");
    CHECK(dying != NULL);
    if (!dying) {
        fprintf(stderr, "%s: no \"dying\" span\n", how);
        json_decref(root);
        return;
    }
    long long pid = tu_int(dying, "pid");
    CHECK(json_is_true(json_object_get(json_object_get(dying, "args"), "unfinished")));
    /* Three named threads, each with its spans from the first on. */
    int threads = 0;
    json_t *evs = tu_events(root), *e;
    size_t i;
    int named_proc = 0;
    json_array_foreach(evs, i, e)
    {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (!ph || !nm || strcmp(ph, "M") != 0 || tu_int(e, "pid") != pid)
            continue;
        if (strcmp(nm, "process_name") == 0) {
            const char *pn = arg_str(e, "name");
            /* exec: the exec'd image names the same pid too */
            named_proc |= pn && strstr(pn, "act_mp_prog die") != NULL;
        }
        if (strcmp(nm, "thread_name") != 0)
            continue;
        const char *tn = arg_str(e, "name");
        if (!tn || strncmp(tn, "rec ", 4) != 0)
            continue;
        threads++;
        long n = ru_check_seq(root, "tick", pid, tu_int(e, "tid"), 1, 0);
        if (n < N)
            fprintf(stderr, "%s: %s has %ld ticks, at least %d were recorded\n", how, tn, n, N);
        CHECK(n >= N);
    }
    CHECK_EQ_INT(threads, 3);
    CHECK(named_proc);
    /* Rebuilt (all but exit), and said so. */
    json_t *procs = json_object_get(root, "actraceProcesses");
    int recovered = 0;
    json_array_foreach(procs, i, e)
    {
        if (tu_int(e, "pid") == pid)
            recovered |= json_is_true(json_object_get(e, "recovered"));
    }
    CHECK_EQ_INT(recovered, strcmp(how, "exit") != 0);
    if (strcmp(how, "exec") == 0) {
        /* The exec'd image records on its own, as the same process: the
         * same pid (not moved as a reused one), two images listed. */
        CHECK_EQ_INT(tu_count(root, "X", "after-exec"), 1);
        json_t *ae = tu_find(root, "X", "after-exec");
        CHECK(ae && tu_int(ae, "pid") == pid);
        CHECK_EQ_INT(json_array_size(procs), 2);
    }
    json_decref(root);
    check_clean(how);
}

/* dash's exit builtin leaves with _exit: what sh's child recorded, and
 * sh itself, are in the trace, and the status is passed on. */
static void sh_exit(void)
{
    const char *out = tu_trace_path("die_sh_exit.json");
    remove(out);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "TMPDIR=%s %s record -o %s -- sh -c '%s leaf D-sh; exit 3' 2>/dev/null",
             tmpdir, ACTRACE, out, PROG);
    CHECK_EQ_INT(ru_run(cmd), 3);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    CHECK_EQ_INT(tu_count(root, "X", "D-sh"), 1);
    json_decref(root);
    check_clean("sh -c exit");
}

/* A RAM budget of 2 MB (older buffers spill to the spool), and files that
 * may not grow past 4 MB in the program: the spool stops growing
 * (EFBIG, like ENOSPC on a full disk), the library says so, drops what does
 * not fit (counted), and the process leaves with _exit: in the trace record
 * rebuilds, every span is there once or counted as dropped (a thread's
 * counts are in the spool too). */
static void fill(void)
{
    const char *out = tu_trace_path("die_fill.json");
    char errpath[600], cmd[4096];
    snprintf(errpath, sizeof errpath, "%s/fill.err", tmpdir);
    remove(out);
    /* 1 MB pre-allocated (at load, before the limit is set), 2 MB in RAM. */
    char cfg[600];
    snprintf(cfg, sizeof cfg, "%s/fill.conf", tmpdir);
    FILE *f = fopen(cfg, "w");
    CHECK_FATAL(f != NULL);
    fputs("BUFFER_PREALLOC_MB = 1\nMAX_BUFFER_SIZE_MB = 2\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "TMPDIR=%s %s record -c %s -o %s -- %s fill 4 1000000 2>%s", tmpdir,
             ACTRACE, cfg, out, PROG, errpath);
    CHECK_EQ_INT(ru_run(cmd), 0);
    size_t len;
    char *err = tu_slurp(errpath, &len);
    CHECK_FATAL(err != NULL);
    if (!strstr(err, "spool: cannot grow") || !strstr(err, "File too large"))
        fprintf(stderr, "fill: stderr was:\n%s\n", err);
    CHECK(strstr(err, "spool: cannot grow") != NULL);
    CHECK(strstr(err, "File too large") != NULL);
    CHECK(strstr(err, "rebuilt after an abnormal end") != NULL);
    free(err);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    json_t *first = tu_find(root, "X", "fill");
    CHECK_FATAL(first != NULL);
    long n = ru_check_seq(root, "fill", tu_int(first, "pid"), tu_int(first, "tid"), 0, 1);
    /* 4 MB at about 64 bytes a span with its arg; well short of all. */
    CHECK(n > 10000 && n < 1000000);
    long long dropped = tu_int(json_object_get(tu_stats(root), "dropped_by_type"), "cpu_op");
    if (n + dropped != 1000000)
        fprintf(stderr, "fill: %ld in the trace + %lld dropped != 1000000\n", n, dropped);
    CHECK_EQ_INT(n + dropped, 1000000);
    json_decref(root);
    check_clean("fill");
}

/* 10M spans (320 MB of buffers; ACT_TEST_SPILL_EVENTS=50000000 by hand)
 * under a 64 MB RAM budget: all recorded, none dropped (spilled to the
 * spool), and the peak resident memory stays within the pool (half the
 * budget under record: 32 MB) and the budget above the program's own
 * footprint (the program untraced). Both are measured over every process
 * of the run and each one's whole life: the program's trace write at its
 * exit reads the spilled slabs back, and must drop them again as it goes
 * (it once grew by 40 bytes per event there: 430 MB at 10M). The
 * program's own figure at the end of main (maxrss_kb=) must hold too. The
 * trace goes to /dev/null: its 900 MB of JSON are not the point. Then the
 * same for a process that dies (its trace rebuilt by record). */
static void spill(void)
{
    const char *ne = getenv("ACT_TEST_SPILL_EVENTS");
    long want = ne && atol(ne) > 0 ? atol(ne) : 10000000;
    char cfg[600], errpath[600], cmd[4096];
    snprintf(cfg, sizeof cfg, "%s/spill.conf", tmpdir);
    snprintf(errpath, sizeof errpath, "%s/spill.err", tmpdir);
    FILE *f = fopen(cfg, "w");
    CHECK_FATAL(f != NULL);
    fputs("MAX_BUFFER_SIZE_MB = 64\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s %s record --no-default-plugins -c %s -o /dev/null -- %s spans %ld 2>%s",
             tmpdir, ACTRACE, cfg, PROG, want, errpath);
    /* The program's own footprint first (binary and libraries: the same
     * program untraced, 1000 spans that nothing records): the bound is on
     * what recording adds to it. */
    char base_cmd[4096];
    snprintf(base_cmd, sizeof base_cmd, "%s spans 1000 2>%s", PROG, errpath);
    long base_kb = -1;
    CHECK_EQ_INT(ru_run_maxrss(base_cmd, &base_kb), 0);
    CHECK_FATAL(base_kb > 0);
    long peak_kb = -1;
    CHECK_EQ_INT(ru_run_maxrss(cmd, &peak_kb), 0);
    char *err = tu_slurp(errpath, NULL);
    CHECK_FATAL(err != NULL);
    const char *m = strstr(err, "maxrss_kb=");
    long rss_kb = m ? atol(m + 10) : -1;
    const char *w = strstr(err, "MB, ");
    char events[32] = "", dropped[32] = "";
    if (w)
        sscanf(w + 4, "%31[0-9,] events, %31[0-9,] dropped", events, dropped);
    /* The spans and the library's own few events. */
    long ev = 0;
    for (const char *p = events; *p; p++)
        if (*p != ',')
            ev = ev * 10 + (*p - '0');
    /* The pool and the budget (96 MB), and 32 MB for what a helper thread
     * that lags on a loaded machine has not spilled yet (spilling is
     * pipelined, and recording threads spill only when RAM is full). */
    long bound_kb = base_kb + 128 * 1024;
    if (ev < want || strcmp(dropped, "0") != 0 || rss_kb <= 0 || rss_kb > bound_kb ||
        peak_kb <= 0 || peak_kb > bound_kb)
        fprintf(stderr, "spill: events %s, dropped %s, peak RSS %ld kB in main, %ld kB over "
                "the run (bound %ld: %ld of the program's own); stderr:\n%s\n", events, dropped,
                rss_kb, peak_kb, bound_kb, base_kb, err);
    CHECK(ev >= want && ev < want + 100);
    CHECK(strcmp(dropped, "0") == 0);
    CHECK(rss_kb > 0 && rss_kb <= bound_kb);
    CHECK(peak_kb > 0 && peak_kb <= bound_kb);
    free(err);
    check_clean("spill");

    /* The same spans from a process that dies (_exit: record rebuilds its
     * trace from the spool). The rebuild maps the spool privately and
     * fixes up each chunk's header there, so those pages (4 KB of every
     * 64 KB) stay; the rest is dropped once read. It held 720 MB at 10M
     * spans before; the bound is twice the one above. */
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s %s record --no-default-plugins -c %s -o /dev/null -- %s fill 0 %ld 2>%s",
             tmpdir, ACTRACE, cfg, PROG, want, errpath);
    peak_kb = -1;
    CHECK_EQ_INT(ru_run_maxrss(cmd, &peak_kb), 0);
    err = tu_slurp(errpath, NULL);
    CHECK_FATAL(err != NULL);
    w = strstr(err, "MB, ");
    events[0] = dropped[0] = '\0';
    if (w)
        sscanf(w + 4, "%31[0-9,] events, %31[0-9,] dropped", events, dropped);
    ev = 0;
    for (const char *p = events; *p; p++)
        if (*p != ',')
            ev = ev * 10 + (*p - '0');
    long rebuild_kb = base_kb + 2 * 128 * 1024;
    if (ev < want || strcmp(dropped, "0") != 0 || !strstr(err, "1 rebuilt") || peak_kb <= 0 ||
        peak_kb > rebuild_kb)
        fprintf(stderr, "spill, rebuilt: events %s, dropped %s, peak RSS %ld kB over the run "
                "(bound %ld); stderr:\n%s\n", events, dropped, peak_kb, rebuild_kb, err);
    CHECK(ev >= want && ev < want + 100);
    CHECK(strcmp(dropped, "0") == 0);
    CHECK(strstr(err, "1 rebuilt") != NULL);
    CHECK(peak_kb > 0 && peak_kb <= rebuild_kb);
    free(err);
    check_clean("spill rebuilt");
}

/* A program that closes every descriptor and opens a file of its own
 * gets the lowest numbers: the library must never write into that file
 * (it holds no descriptor of the spool, and checks the signal pipe's
 * identity before waking its watcher). The file holds exactly what the
 * program wrote; the SIGTERM ends it as the signal does; every span is in
 * the rebuilt trace. */
static void closefds(void)
{
    enum { N = 5000 };
    char victim[600], cmd[4096];
    snprintf(victim, sizeof victim, "%s/victim.txt", tmpdir);
    const char *out = tu_trace_path("die_closefds.json");
    remove(out);
    remove(victim);
    snprintf(cmd, sizeof cmd, "TMPDIR=%s %s record -o %s -- %s closefds %s %d 2>/dev/null", tmpdir,
             ACTRACE, out, PROG, victim, N);
    CHECK_EQ_INT(ru_run(cmd), 128 + SIGTERM);
    size_t len = 0;
    char *got = tu_slurp(victim, &len);
    CHECK_FATAL(got != NULL);
    if (len != 4 || memcmp(got, "END\n", 4) != 0)
        fprintf(stderr, "closefds: the program's file holds %zu bytes, not \"END\\n\"\n", len);
    CHECK(len == 4 && memcmp(got, "END\n", 4) == 0);
    free(got);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    CHECK_EQ_INT(tu_count(root, "X", "before"), N);
    json_t *first = tu_find(root, "X", "after");
    CHECK_FATAL(first != NULL);
    CHECK_EQ_INT(ru_check_seq(root, "after", tu_int(first, "pid"), tu_int(first, "tid"), 0, 0), N);
    json_decref(root);
    check_clean("closefds");
}

int main(void)
{
    CHECK_FATAL(mkdtemp(tmpdir) != NULL);
    ru_watchdog("RecordDie: timed out\n", 240);
    die("exit", 0);
    die("_exit", 0);
    die("quick_exit", 0);
    die("abort", 128 + SIGABRT);
    die("segv", 128 + SIGSEGV);
    die("kill", 128 + SIGKILL);
    die("exec", 0);
    sh_exit();
    fill();
    closefds();
    spill();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ru_run(cmd);
    return check_done();
}
