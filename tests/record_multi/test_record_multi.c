/* SPDX-License-Identifier: MIT */
/*
 * `actrace record` of programs made of many processes, and of programs
 * stopped by a signal: wrappers (env, nice, sh -c, #!/bin/sh and bash
 * launcher scripts, a program that execs) leave the real program's events
 * in the trace; a fork tree three deep with exec'd children and threads
 * has every process's events, pids and names; SIGINT and SIGTERM on a
 * multi-threaded program that allocates in a loop end it and write its
 * trace every time; Ctrl-C twice, and record itself interrupted, still
 * write; a process that outlives the program is reported; no temporary
 * directory or *.tmp.* file is left behind.
 */
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"
#include "record_util.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define PROG ACT_BINARY_DIR "/tests/act_mp_prog"

static char tmpdir[] = "/tmp/act_mp_XXXXXX";

static const char *tmp(const char *name)
{
    static char path[4][512];
    static int k;
    k = (k + 1) & 3;
    snprintf(path[k], sizeof path[k], "%s/%s", tmpdir, name);
    return path[k];
}

/* pid of the first event ph/name, or -1. */
static long long pid_of(json_t *root, const char *ph, const char *name)
{
    json_t *e = tu_find(root, ph, name);
    return e ? tu_int(e, "pid") : -1;
}

static void check_clean(const char *what)
{
    int spools = ru_count_entries(tmpdir, "actrace-record-", NULL);
    /* Other tests write their traces into ACT_TRACE_DIR at the same time
     * (ctest -j): only this test's names count there. */
    int tmps = ru_count_entries(tmpdir, ".tmp.", NULL) +
               ru_count_entries(ACT_TRACE_DIR, "multi_", ".tmp.");
    if (spools || tmps)
        fprintf(stderr, "%s: %d spool dir(s), %d tmp file(s) left\n", what, spools, tmps);
    CHECK_EQ_INT(spools, 0);
    CHECK_EQ_INT(tmps, 0);
}

static void wrappers(void)
{
    static const struct {
        const char *name, *cmd;
    } w[] = {
        {"env", "env ACT_X=1 " PROG " leaf W-env"},
        {"nice", "nice -n 1 " PROG " leaf W-nice"},
        {"sh", "sh -c '" PROG " leaf W-sh; true'"},
        {"script", "@/launch.sh"},
        {"bash", "@/launch.bash"},
        {"exec", PROG " exec W-exec"},
    };
    FILE *f = fopen(tmp("launch.sh"), "w");
    CHECK_FATAL(f != NULL);
    fprintf(f, "#!/bin/sh\n%s leaf W-script\nexit 0\n", PROG);
    fclose(f);
    f = fopen(tmp("launch.bash"), "w");
    CHECK_FATAL(f != NULL);
    fprintf(f, "#!/bin/bash\nset -e\n%s leaf W-bash\n%s leaf W-bash2\n", PROG, PROG);
    fclose(f);
    chmod(tmp("launch.sh"), 0755);
    chmod(tmp("launch.bash"), 0755);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        char name[64], span[64], prog[1024], cmd[4096];
        snprintf(name, sizeof name, "multi_wrap_%s.json", w[i].name);
        snprintf(span, sizeof span, "W-%s", w[i].name);
        snprintf(prog, sizeof prog, "%s%s", w[i].cmd[0] == '@' ? tmpdir : "",
                 w[i].cmd + (w[i].cmd[0] == '@'));
        const char *out = tu_trace_path(name);
        remove(out);
        snprintf(cmd, sizeof cmd, "TMPDIR=%s %s record -o %s -- %s 2>/dev/null", tmpdir, ACTRACE,
                 out, prog);
        CHECK_EQ_INT(ru_run(cmd), 0);
        json_t *root = tu_load(out);
        CHECK_FATAL(root != NULL);
        if (tu_count(root, "X", span) != 1)
            fprintf(stderr, "wrapper %s: span %s missing\n", w[i].name, span);
        CHECK_EQ_INT(tu_count(root, "X", span), 1);
        if (strcmp(w[i].name, "bash") == 0) {
            /* Two children of one bash: two files, two pids. */
            CHECK_EQ_INT(tu_count(root, "X", "W-bash2"), 1);
            CHECK(pid_of(root, "X", "W-bash") != pid_of(root, "X", "W-bash2"));
        }
        json_decref(root);
        check_clean(w[i].name);
    }
}

static void fork_tree(void)
{
    const char *out = tu_trace_path("multi_tree.json");
    remove(out);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "TMPDIR=%s %s record -o %s -- %s tree 3 2>/dev/null", tmpdir, ACTRACE,
             out, PROG);
    CHECK_EQ_INT(ru_run(cmd), 0);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    long long pids[4];
    for (int d = 3; d >= 0; d--) {
        char n[64];
        snprintf(n, sizeof n, "level %d", d);
        /* Each process has its own events once: a forked child does not
         * carry (or write) its parent's. */
        CHECK_EQ_INT(tu_count(root, "X", n), 1);
        pids[d] = pid_of(root, "X", n);
        CHECK(pids[d] > 0);
        snprintf(n, sizeof n, "thread %d", d);
        CHECK_EQ_INT(tu_count(root, "X", n), 1);
        CHECK_EQ_INT(pid_of(root, "X", n), pids[d]);
        json_t *te = tu_find(root, "X", n);
        json_t *le = tu_find(root, "X", n);
        CHECK(te && le);
        if (d > 0) {
            /* The parent keeps what it recorded after the fork. */
            snprintf(n, sizeof n, "after fork %d", d);
            CHECK_EQ_INT(tu_count(root, "X", n), 1);
            CHECK_EQ_INT(pid_of(root, "X", n), pids[d]);
            snprintf(n, sizeof n, "exec-%d", d);
            CHECK_EQ_INT(tu_count(root, "X", n), 1);
            long long ep = pid_of(root, "X", n);
            CHECK(ep > 0 && ep != pids[d]);
        }
    }
    for (int a = 0; a < 4; a++)
        for (int b = a + 1; b < 4; b++)
            CHECK(pids[a] != pids[b]);
    /* Every process is named after its command line. */
    json_t *evs = tu_events(root);
    size_t i;
    json_t *e;
    int named = 0, named_tree = 0;
    json_array_foreach(evs, i, e)
    {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (!ph || !nm || strcmp(ph, "M") != 0 || strcmp(nm, "process_name") != 0)
            continue;
        named++;
        const char *pn = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
        if (pn && strstr(pn, "act_mp_prog tree 3"))
            named_tree++;
    }
    CHECK_EQ_INT(named, 7);
    CHECK_EQ_INT(named_tree, 4); /* the root and its three forked descendants */
    CHECK_EQ_INT(json_array_size(json_object_get(root, "actraceProcesses")), 7);
    CHECK(tu_int(tu_stats(root), "recorded") >= 4 * 3 + 3);
    json_decref(root);
    check_clean("tree");
}

/* Starts `record -o OUT -- mp_prog alloc READY` in its own process group;
 * returns record's pid and the program's in *prog. */
static pid_t start_alloc(const char *out, pid_t *prog)
{
    const char *ready = tmp("ready");
    remove(ready);
    remove(out);
    pid_t r = fork();
    if (r == 0) {
        setpgid(0, 0);
        setenv("TMPDIR", tmpdir, 1);
        FILE *e = freopen(tmp("alloc_err.txt"), "w", stderr);
        (void)e;
        execl(ACTRACE, ACTRACE, "record", "-o", out, "--", PROG, "alloc", ready, (char *)NULL);
        _exit(127);
    }
    setpgid(r, r);
    *prog = 0;
    for (int i = 0; i < 20000 && !*prog; i++) {
        FILE *f = fopen(ready, "r");
        if (f) {
            int p = 0;
            if (fscanf(f, "%d", &p) == 1)
                *prog = p;
            fclose(f);
        }
        if (!*prog)
            usleep(1000);
    }
    return r;
}

static int wait_status(pid_t r)
{
    int st = 0;
    while (waitpid(r, &st, 0) < 0) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void check_alloc_trace(const char *out, const char *what, int round)
{
    json_t *root = tu_load(out);
    size_t n = root ? tu_count(root, "X", "alloc span") : 0;
    if (!n)
        fprintf(stderr, "%s round %d: no alloc spans in the trace\n", what, round);
    CHECK(n > 0);
    json_decref(root);
}

static void signals(void)
{
    const char *out = tu_trace_path("multi_signal.json");
    static const int sigs[] = {SIGINT, SIGTERM};
    for (int s = 0; s < 2; s++) {
        for (int round = 0; round < 20; round++) {
            alarm(60);
            pid_t prog;
            pid_t r = start_alloc(out, &prog);
            CHECK_FATAL(prog > 0);
            kill(prog, sigs[s]);
            CHECK_EQ_INT(wait_status(r), 128 + sigs[s]);
            alarm(0);
            check_alloc_trace(out, sigs[s] == SIGINT ? "SIGINT" : "SIGTERM", round);
            check_clean("signal");
        }
    }
    /* Ctrl-C twice: the terminal signals the whole group, twice. */
    for (int round = 0; round < 5; round++) {
        alarm(60);
        pid_t prog;
        pid_t r = start_alloc(out, &prog);
        CHECK_FATAL(prog > 0);
        kill(-r, SIGINT);
        usleep(200);
        kill(-r, SIGINT);
        CHECK_EQ_INT(wait_status(r), 128 + SIGINT);
        alarm(0);
        check_alloc_trace(out, "Ctrl-C twice", round);
        check_clean("Ctrl-C twice");
    }
    /* record itself stopped (timeout, kill): the program gets the signal,
     * writes, and record merges what is there. */
    for (int round = 0; round < 3; round++) {
        alarm(60);
        pid_t prog;
        pid_t r = start_alloc(out, &prog);
        CHECK_FATAL(prog > 0);
        kill(r, SIGTERM);
        usleep(200);
        kill(r, SIGTERM);
        CHECK_EQ_INT(wait_status(r), 128 + SIGTERM);
        alarm(0);
        check_alloc_trace(out, "record SIGTERM", round);
        check_clean("record SIGTERM");
    }
}

static void daemon_outlives(void)
{
    const char *out = tu_trace_path("multi_daemon.json");
    remove(out);
    remove(tmp("daemon.pid"));
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s ACTRACE_RECORD_GRACE_MS=300 %s record -o %s -- %s daemon %s 2>%s", tmpdir,
             ACTRACE, out, PROG, tmp("daemon.pid"), tmp("daemon_err.txt"));
    alarm(60);
    CHECK_EQ_INT(ru_run(cmd), 0);
    alarm(0);
    char *err = tu_slurp(tmp("daemon_err.txt"), NULL);
    CHECK(err && strstr(err, "still running"));
    CHECK(err && strstr(err, "wrote "));
    /* The daemon still uses the record directory: record leaves it. */
    CHECK(err && strstr(err, "left in place"));
    free(err);
    json_t *root = tu_load(out);
    CHECK_EQ_INT(tu_count(root, "X", "daemon parent"), 1);
    json_decref(root);
    FILE *f = fopen(tmp("daemon.pid"), "r");
    int p = 0;
    if (f) {
        if (fscanf(f, "%d", &p) != 1)
            p = 0;
        fclose(f);
    }
    CHECK(p > 0);
    if (p > 0)
        kill(p, SIGKILL);
    CHECK_EQ_INT(ru_count_entries(tmpdir, "actrace-record-", NULL), 1);
    snprintf(cmd, sizeof cmd, "rm -rf %s/actrace-record-*", tmpdir);
    ru_run(cmd);
    check_clean("daemon");
}

/* A program built with AddressSanitizer: its runtime is preloaded first.
 * Skipped when no compiler here can build one. */
static void sanitized(void)
{
    char cmd[4096];
    FILE *f = fopen(tmp("asan.c"), "w");
    CHECK_FATAL(f != NULL);
    fprintf(f, "int main(void) { return 0; }\n");
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -fsanitize=address -o %s %s 2>/dev/null", tmp("asan"),
             tmp("asan.c"));
    if (ru_run(cmd) != 0) {
        fprintf(stderr, "RecordMulti: no AddressSanitizer compiler: sanitized case skipped\n");
        return;
    }
    /* No spans (the program does not use the API): not a trace for the
     * viewers in $ACT_TRACE_DIR. */
    const char *out = tmp("multi_asan.json");
    remove(out);
    snprintf(cmd, sizeof cmd, "TMPDIR=%s %s record -o %s -- %s 2>%s", tmpdir, ACTRACE, out,
             tmp("asan"), tmp("asan_err.txt"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    json_t *root = tu_load(out);
    CHECK(root != NULL);
    json_decref(root);
    check_clean("asan");
}

/* Two processes with a device each (the example plugin; the shell has one
 * too, and no flows): distinct device pids and deviceProperties ids;
 * every flow joins one process's host thread to that process's device. */
static void devices_and_flows(void)
{
    char cmd[4096];
    const char *out = tu_trace_path("multi_devices.json");
    remove(out);
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s %s record --plugin example -o %s -- sh -c '%s/bin/actrace-demo & "
             "%s/bin/actrace-demo; wait' >/dev/null 2>&1",
             tmpdir, ACTRACE, out, ACT_BINARY_DIR, ACT_BINARY_DIR);
    CHECK_EQ_INT(ru_run(cmd), 0);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    json_t *devs = json_object_get(root, "deviceProperties");
    CHECK_EQ_INT(json_array_size(devs), 3);
    CHECK(tu_int(json_array_get(devs, 0), "id") != tu_int(json_array_get(devs, 1), "id"));
    CHECK(tu_int(json_array_get(devs, 1), "id") != tu_int(json_array_get(devs, 2), "id"));
    /* flow id -> pids of its s and f ends; device pid -> the host pid. */
    enum { MAXF = 4096 };
    static long long fid[MAXF], spid[MAXF], fpid[MAXF];
    long long dev_host[3][2] = {{0, 0}, {0, 0}, {0, 0}};
    size_t nf = 0, i;
    json_t *e;
    json_array_foreach(tu_events(root), i, e)
    {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (!ph || (strcmp(ph, "s") != 0 && strcmp(ph, "f") != 0))
            continue;
        long long id = tu_int(e, "id"), pid = tu_int(e, "pid");
        size_t k = 0;
        while (k < nf && fid[k] != id)
            k++;
        if (k == nf && nf < MAXF) {
            fid[nf] = id;
            spid[nf] = fpid[nf] = 0;
            nf++;
        }
        if (k < nf)
            (*ph == 's' ? spid : fpid)[k] = pid;
    }
    CHECK(nf >= 2);
    int bad = 0;
    for (size_t k = 0; k < nf; k++) {
        if (!spid[k] || fpid[k] < 0x40000000LL || fpid[k] > 0x40000002LL) {
            bad++;
            continue;
        }
        long long *slot = dev_host[fpid[k] - 0x40000000LL];
        if (!slot[0])
            slot[0] = spid[k];
        else if (slot[0] != spid[k])
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
    /* Two devices have flows, each from its own host process. */
    int with_flows = 0;
    for (int a = 0; a < 3; a++)
        with_flows += dev_host[a][0] != 0;
    CHECK_EQ_INT(with_flows, 2);
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b < 3; b++)
            CHECK(!dev_host[a][0] || dev_host[a][0] != dev_host[b][0]);
    json_decref(root);
    check_clean("devices");
}

int main(void)
{
    CHECK_FATAL(mkdtemp(tmpdir) != NULL);
    ru_watchdog("RecordMulti: timed out (a recorded program hung)\n", 0);
    wrappers();
    fork_tree();
    signals();
    daemon_outlives();
    sanitized();
    devices_and_flows();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ru_run(cmd);
    return check_done();
}
