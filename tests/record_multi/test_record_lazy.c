/* SPDX-License-Identifier: MIT */
/*
 * Lazy start under `actrace record` (issue 20), with the default plugins:
 *  - idle: a descendant that records nothing has one thread and no spool
 *    (seen from inside it: /proc/self/task and the record directory), yet
 *    is in the merged trace with its name, its parent, its exit status and
 *    memory samples, not marked rebuilt; record's merge read its light
 *    log itself (no rebuild ran: ACTRACE_TEST_REBUILD_COUNTS prints
 *    nothing), and its entry counts what it shows (5 recorded);
 *  - torn: a damaged frame in record's shared light log costs only
 *    itself: the processes before and after it, and the end of the one
 *    that wrote it, are in the trace;
 *  - late: a first recording call late in the process's life is recorded
 *    (and only then does the spool appear), and the process then has at
 *    most one thread of the library's (/proc/self/task: 2 at most);
 *  - forkrec: a first recording call only in a forked child is recorded,
 *    in the child's own process;
 *  - replaced_plugin: record's child checks the plugins once and passes
 *    the list on; a plugin file replaced after that is refused in a
 *    descendant that loads it later (one left alone is not refused);
 *  - rank: a trace rebuilt by record (a light log; the spool of a process
 *    that _exit'ed) has the dead process's distributedInfo (RANK...,
 *    ACTRACE_DIST_BACKEND at its start), not record's environment;
 *  - many: 2000 short processes that record nothing (the merge streams
 *    them): each pid the shell started is in the trace once, with one
 *    'process' span and exit status 0.
 */
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"
#include "record_util.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define PROG ACT_BINARY_DIR "/tests/act_mp_prog"

static char tmpdir[] = "/tmp/act_lazy_XXXXXX";

static const char *tmp(const char *name)
{
    return ru_path(tmpdir, name);
}

/* The pid of the @p nth process whose process_name starts with @p part, or -1. */
static long long pid_named(json_t *root, const char *part, int nth)
{
    json_t *e;
    size_t i;
    json_array_foreach(tu_events(root), i, e)
    {
        const char *nm = json_string_value(json_object_get(e, "name"));
        json_t *a = json_object_get(e, "args");
        const char *pn = json_string_value(json_object_get(a, "name"));
        if (nm && strcmp(nm, "process_name") == 0 && pn && strncmp(pn, part, strlen(part)) == 0 &&
            nth-- == 0)
            return tu_int(e, "pid");
    }
    return -1;
}

static int recovered(json_t *root, long long pid)
{
    json_t *p;
    size_t i;
    json_array_foreach(json_object_get(root, "actraceProcesses"), i, p)
        if (tu_int(p, "pid") == pid)
            return json_is_true(json_object_get(p, "recovered"));
    return -1;
}

static size_t count_pid(json_t *root, const char *ph, const char *name, long long pid)
{
    json_t *e;
    size_t i, n = 0;
    json_array_foreach(tu_events(root), i, e)
    {
        const char *p = json_string_value(json_object_get(e, "ph"));
        const char *nm = json_string_value(json_object_get(e, "name"));
        n += p && nm && strcmp(p, ph) == 0 && strcmp(nm, name) == 0 && tu_int(e, "pid") == pid;
    }
    return n;
}

static int file_is(const char *path, const char *want)
{
    char *s = tu_slurp(path, NULL);
    int ok = s && strcmp(s, want) == 0;
    if (!ok)
        fprintf(stderr, "%s: \"%s\", expected \"%s\"\n", path, s ? s : "(missing)", want);
    free(s);
    return ok;
}

static json_t *proc_entry(json_t *root, long long pid);

static void idle(void)
{
    char cmd[8192];
    const char *out = tmp("idle.json");
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s ACTRACE_TEST_REBUILD_COUNTS=1 %s record -o %s -- sh -c '%s idle %s; "
             "echo $? > %s' 2>%s", tmpdir, ACTRACE,
             out, PROG, tmp("idle.txt"), tmp("idle.rc"), tmp("idle.err"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    /* No file of its own: its start is a frame of record's light log. */
    CHECK(file_is(tmp("idle.txt"), "threads 1 spool 0 meta 0 light 1\n"));
    CHECK(file_is(tmp("idle.rc"), "7\n"));
    snprintf(cmd, sizeof cmd, "%s check %s >/dev/null", ACTRACE, out);
    CHECK_EQ_INT(ru_run(cmd), 0);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    long long pid = pid_named(root, PROG " idle", 0), sh = pid_named(root, "sh -c", 0);
    CHECK(pid > 0);
    CHECK(sh > 0);
    CHECK_EQ_INT(recovered(root, pid), 0);
    /* Its life, parent and status, and the memory samples. */
    json_t *e, *life = NULL;
    size_t i;
    json_array_foreach(tu_events(root), i, e)
        if (tu_int(e, "pid") == pid &&
            json_string_value(json_object_get(e, "name")) &&
            strcmp(json_string_value(json_object_get(e, "name")), "process") == 0)
            life = e;
    CHECK_FATAL(life != NULL);
    json_t *a = json_object_get(life, "args");
    CHECK_EQ_INT(tu_int(a, "exit_status"), 7);
    CHECK_EQ_INT(tu_int(a, "parent_pid"), sh);
    CHECK(count_pid(root, "C", "memory", pid) == 2);
    CHECK(count_pid(root, "C", "cpu", pid) <= 1);
    json_t *st = json_object_get(proc_entry(root, pid), "actraceStats");
    CHECK_EQ_INT(tu_int(st, "recorded"),
                 1 + 2 + 2 * (long long)count_pid(root, "C", "cpu", pid));
    char *err = tu_slurp(tmp("idle.err"), NULL);
    CHECK(err && !strstr(err, "actrace rebuild: 0 threads")); /* sh: its spool, 1 thread */
    free(err);
    json_decref(root);
}

static void late(void)
{
    char cmd[8192];
    const char *out = tmp("late.json");
    snprintf(cmd, sizeof cmd, "TMPDIR=%s %s record -o %s -- sh -c '%s late late-span %s; true' 2>%s",
             tmpdir, ACTRACE, out, PROG, tmp("late.txt"), tmp("late.err"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    CHECK(file_is(tmp("late.txt"), "threads 1 spool 0 meta 0 light 1\n"));
    /* Recording started: the spool is there now. */
    char *after = tu_slurp(tmp("late.txt.after"), NULL);
    CHECK(after && strstr(after, "spool 1 meta 1"));
    /* Recording, with the default plugins: its own thread and at most one
     * of the library's, the spool's helper, which also runs the host
     * plugin's sampling ticks (issue 20). */
    int nthreads = -1;
    CHECK(after && sscanf(after, "after: threads %d", &nthreads) == 1);
    CHECK(nthreads >= 1 && nthreads <= 2);
    if (nthreads > 2)
        fprintf(stderr, "late: %s", after);
    free(after);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    long long pid = pid_named(root, PROG " late", 0);
    CHECK(pid > 0);
    CHECK_EQ_INT(count_pid(root, "X", "late-span", pid), 1);
    CHECK_EQ_INT(recovered(root, pid), 0);
    json_decref(root);
}

static void forkrec(void)
{
    char cmd[8192];
    const char *out = tmp("fork.json");
    snprintf(cmd, sizeof cmd, "TMPDIR=%s %s record -o %s -- sh -c '%s forkrec child-span; true' 2>%s",
             tmpdir, ACTRACE, out, PROG, tmp("fork.err"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    long long p0 = pid_named(root, PROG " forkrec", 0),
              p1 = pid_named(root, PROG " forkrec", 1);
    CHECK(p0 > 0);
    CHECK(p1 > 0);
    CHECK(p0 != p1);
    /* Once, in one of the two (the child), not in both. */
    CHECK_EQ_INT(count_pid(root, "X", "child-span", p0) + count_pid(root, "X", "child-span", p1), 1);
    CHECK_EQ_INT(tu_count(root, "X", "child-span"), 1);
    json_decref(root);
}

/* A pid the kernel gives to a second process after the first one exec'd
 * and exited: both are in the trace (record took the first one's last
 * image for an exec of the second, and showed one process). With @p
 * nopidfs, where pidfd_open fails: the processes are told apart by their
 * start ticks instead of their pidfs inodes. */
static void reuse(int nopidfs)
{
    char cmd[8192], pre[4200] = "";
    const char *out = tmp(nopidfs ? "reuse_np.json" : "reuse.json");
    if (nopidfs)
        snprintf(pre, sizeof pre, "%s nopidfs ", PROG);
    snprintf(cmd, sizeof cmd, "TMPDIR=%s %s%s record -o %s -- %s reuse %s 2>%s", tmpdir, pre,
             ACTRACE, out, PROG, tmp("reuse.txt"), tmp("reuse.err"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    char *txt = tu_slurp(tmp("reuse.txt"), NULL);
    CHECK_FATAL(txt != NULL);
    long long pid = strtoll(txt, NULL, 10);
    free(txt);
    if (pid <= 0) {
        printf("reuse: skipped (clone3 set_tid refused: not root, or an old kernel)\n");
        return;
    }
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    json_t *e;
    size_t i, listed = 0;
    long long moved = 0;
    json_array_foreach(json_object_get(root, "actraceProcesses"), i, e)
    {
        json_t *os = json_object_get(e, "os_pid");
        if (os && json_integer_value(os) == pid)
            moved = tu_int(e, "pid");
        listed += (os ? json_integer_value(os) : tu_int(e, "pid")) == pid;
    }
    CHECK_EQ_INT((long long)listed, 2);
    CHECK(moved > 0 && moved != pid);
    CHECK_EQ_INT((long long)count_pid(root, "X", "process", pid), 1);
    CHECK_EQ_INT((long long)count_pid(root, "X", "process", moved), 1);
    json_decref(root);
}

/* What names a process across exec in its own trace: its pidfs inode
 * ("actraceProcessId") where the kernel has pidfs, its start ticks
 * ("actraceProcessStart") where pidfd_open fails. That an exec'd image
 * names the same is RecordDie's exec case and reuse() above. */
static void ids(void)
{
    char cmd[8192];
    struct stat st;
    int pidfs = 0;
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    struct statfs sf;
    pidfs = fd >= 0 && fstatfs(fd, &sf) == 0 && (unsigned long)sf.f_type == 0x50494446 &&
            fstat(fd, &st) == 0;
    if (fd >= 0)
        close(fd);
#endif
    for (int np = 0; np < 2; np++) {
        const char *out = tmp(np ? "ids_np.json" : "ids.json");
        /* The variable past the wrapper: mp_prog, linked to the library,
         * would take it for itself (single-file mode unsets it). */
        snprintf(cmd, sizeof cmd, "%s%senv ACTRACE_RECORD_OUTPUT=%s %s leaf ids-leaf 2>%s",
                 np ? PROG : "", np ? " nopidfs " : "", out, PROG, tmp("ids.err"));
        CHECK_EQ_INT(ru_run(cmd), 0);
        json_t *root = tu_load(out);
        CHECK_FATAL(root != NULL);
        json_t *id = json_object_get(root, "actraceProcessId"),
               *ticks = json_object_get(root, "actraceProcessStart");
        if (pidfs && !np) {
            CHECK(id && json_integer_value(id) > 0 && !ticks);
        } else {
            CHECK(ticks && json_integer_value(ticks) > 0 && !id);
        }
        CHECK_EQ_INT(tu_count(root, "X", "ids-leaf"), 1);
        json_decref(root);
    }
}

static void replaced_plugin(void)
{
    char cmd[16384];
    /* A plugin folder of our own, safe (0700): example.so, and host.so to
     * put in its place. */
    snprintf(cmd, sizeof cmd, "mkdir -m 700 %s && cp %s/plugins/example.so %s/plugins/host.so %s/",
             tmp("plug"), ACT_BINARY_DIR, ACT_BINARY_DIR, tmp("plug"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    for (int replace = 0; replace < 2; replace++) {
        const char *out = tmp(replace ? "plug_r.json" : "plug_k.json");
        const char *err = tmp(replace ? "plug_r.err" : "plug_k.err");
        /* $0 of the script: the plugin folder. */
        snprintf(cmd, sizeof cmd,
                 "TMPDIR=%s %s record --no-default-plugins --plugin %s/example.so -o %s -- "
                 "sh -c '%s %s leaf child-span; true' %s 2>%s",
                 tmpdir, ACTRACE, tmp("plug"), out,
                 replace ? "cp $0/host.so $0/new.so && mv $0/new.so $0/example.so;" : "true;",
                 PROG, tmp("plug"), err);
        CHECK_EQ_INT(ru_run(cmd), 0);
        char *log = tu_slurp(err, NULL);
        CHECK_FATAL(log != NULL);
        int refused = strstr(log, "refused: the file changed since `actrace record` checked it") != NULL;
        if (refused != replace)
            fprintf(stderr, "%s:\n%s\n", err, log);
        CHECK_EQ_INT(refused, replace);
        free(log);
        json_t *root = tu_load(out);
        CHECK_FATAL(root != NULL);
        CHECK_EQ_INT(tu_count(root, "X", "child-span"), 1);
        json_decref(root);
    }
}

/* The actraceProcesses entry of @p pid. */
static json_t *proc_entry(json_t *root, long long pid)
{
    json_t *p;
    size_t i;
    json_array_foreach(json_object_get(root, "actraceProcesses"), i, p)
        if (tu_int(p, "pid") == pid)
            return p;
    return NULL;
}

static void rank(void)
{
    char cmd[8192];
    const char *out = tmp("rank.json");
    /* record itself runs with RANK=9: none of its processes says so. */
    snprintf(cmd, sizeof cmd,
             "RANK=9 TMPDIR=%s %s record -o %s -- sh -c '"
             "RANK=3 WORLD_SIZE=4 LOCAL_RANK=1 ACTRACE_DIST_BACKEND=nccl %s idle %s; "
             "RANK=2 WORLD_SIZE=4 ACTRACE_DIST_BACKEND=gloo %s die _exit 100; true' 2>%s",
             tmpdir, ACTRACE, out, PROG, tmp("rank.txt"), PROG, tmp("rank.err"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    long long idle_pid = pid_named(root, PROG " idle", 0), dead = pid_named(root, PROG " die", 0);
    CHECK_FATAL(idle_pid > 0);
    CHECK_FATAL(dead > 0);
    CHECK_EQ_INT(recovered(root, idle_pid), 0);
    CHECK_EQ_INT(recovered(root, dead), 1);
    json_t *di = json_object_get(proc_entry(root, idle_pid), "distributedInfo");
    CHECK_EQ_INT(tu_int(di, "rank"), 3);
    CHECK_EQ_INT(tu_int(di, "world_size"), 4);
    CHECK_EQ_INT(tu_int(di, "local_rank"), 1);
    CHECK_STR(json_string_value(json_object_get(di, "backend")), "nccl");
    di = json_object_get(proc_entry(root, dead), "distributedInfo");
    CHECK_EQ_INT(tu_int(di, "rank"), 2);
    CHECK_EQ_INT(tu_int(di, "world_size"), 4);
    CHECK_EQ_INT(tu_int(di, "local_rank"), 0);
    CHECK_STR(json_string_value(json_object_get(di, "backend")), "gloo");
    json_decref(root);
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* Index of @p pid in the sorted @p v, or -1. */
static long find_ll(const long long *v, size_t n, long long pid)
{
    const long long *hit = bsearch(&pid, v, n, sizeof *v, cmp_ll);
    return hit ? (long)(hit - v) : -1;
}

static void many(void)
{
    enum { N = 2000 };
    char cmd[8192];
    const char *out = tmp("many.json");
    /* $! of each /bin/true: its pid (the forked shell that exec'd it). */
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s %s record -o %s -- sh -c 'i=0; while [ $i -lt %d ]; do /bin/true & "
             "echo $! >> %s; wait; i=$((i+1)); done' 2>%s",
             tmpdir, ACTRACE, out, N, tmp("many.pids"), tmp("many.err"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    static long long pids[N];
    size_t n = 0;
    FILE *f = fopen(tmp("many.pids"), "r");
    CHECK_FATAL(f != NULL);
    while (n < N && fscanf(f, "%lld", &pids[n]) == 1)
        n++;
    fclose(f);
    CHECK_EQ_INT((long long)n, N);
    qsort(pids, n, sizeof *pids, cmp_ll);
    /* pid_max is 32768 here and other jobs fork too: a pid may come back
     * within the loop. Keep each pid once, with how many of the loop's
     * processes had it (find_ll then finds the one index of a pid). */
    static unsigned mult[N];
    size_t u = 0;
    for (size_t k = 0; k < n; k++) {
        if (u && pids[u - 1] == pids[k]) {
            mult[u - 1]++;
            continue;
        }
        pids[u] = pids[k];
        mult[u++] = 1;
    }
    n = u;
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    /* Each process once in actraceProcesses (a pid that came back is
     * moved and keeps os_pid) and once as a 'process' span with status 0:
     * a pid as many times as the loop's processes had it. */
    static unsigned char listed[N], spans[N];
    static long long moved[N]; /* output pids of moved processes, and their index */
    static long moved_k[N];
    size_t nmoved = 0;
    json_t *e;
    size_t i;
    json_array_foreach(json_object_get(root, "actraceProcesses"), i, e)
    {
        json_t *os = json_object_get(e, "os_pid");
        long k = find_ll(pids, n, os ? json_integer_value(os) : tu_int(e, "pid"));
        if (k >= 0 && listed[k] < 255)
            listed[k]++;
        if (k >= 0 && os && nmoved < N) {
            moved[nmoved] = tu_int(e, "pid");
            moved_k[nmoved++] = k;
        }
    }
    json_array_foreach(tu_events(root), i, e)
    {
        const char *nm = json_string_value(json_object_get(e, "name"));
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (!nm || !ph || strcmp(nm, "process") != 0 || strcmp(ph, "X") != 0)
            continue;
        long long pid = tu_int(e, "pid");
        long k = -1;
        for (size_t m = 0; m < nmoved && k < 0; m++)
            if (moved[m] == pid)
                k = moved_k[m];
        if (k < 0)
            k = find_ll(pids, n, pid);
        if (k < 0)
            continue;
        if (tu_int(json_object_get(e, "args"), "exit_status") == 0 && spans[k] < 255)
            spans[k]++;
    }
    size_t bad_listed = 0, bad_spans = 0;
    for (size_t k = 0; k < n; k++) {
        bad_listed += listed[k] != mult[k];
        bad_spans += spans[k] != mult[k];
    }
    CHECK_EQ_INT((long long)bad_listed, 0);
    CHECK_EQ_INT((long long)bad_spans, 0);
    json_decref(root);
}

/* The exit status of process @p pid's 'process' span, or -1. */
static long long life_status(json_t *root, long long pid)
{
    json_t *e;
    size_t i;
    json_array_foreach(tu_events(root), i, e)
    {
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (tu_int(e, "pid") == pid && nm && strcmp(nm, "process") == 0)
            return tu_int(json_object_get(e, "args"), "exit_status");
    }
    return -1;
}

static void torn(void)
{
    char cmd[8192];
    const char *out = tmp("torn.json");
    /* Between two processes that record nothing, one appends a torn frame
     * to the light log (as a full disk leaves one) and exits: its own end
     * follows the damage. */
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s %s record -o %s -- sh -c '%s idle %s; %s scribble; %s idle %s; true' "
             "2>%s", tmpdir, ACTRACE, out, PROG, tmp("torn1.txt"), PROG, PROG, tmp("torn2.txt"),
             tmp("torn.err"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    char *err = tu_slurp(tmp("torn.err"), NULL);
    CHECK(err && strstr(err, "light.log: 1 damaged part(s) skipped"));
    free(err);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    long long a = pid_named(root, PROG " idle", 0), b = pid_named(root, PROG " idle", 1),
              sc = pid_named(root, PROG " scribble", 0);
    CHECK(a > 0 && b > 0 && sc > 0);
    CHECK_EQ_INT(life_status(root, a), 7);
    CHECK_EQ_INT(life_status(root, b), 7);
    CHECK_EQ_INT(life_status(root, sc), 0); /* its end, found past the damage */
    CHECK_EQ_INT(recovered(root, sc), 0);
    json_decref(root);
}

/* A process named from the arguments its loader passed the library (no
 * /proc open at load) is named as /proc/self/cmdline names it: arguments
 * joined by spaces, an empty one as an empty word, trailing empty ones
 * dropped. Its first memory sample (from /proc/self/stat's read) is a
 * real one. */
static void names(void)
{
    char cmd[8192];
    const char *out = tmp("names.json");
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s %s record -o %s -- sh -c '/bin/echo \"a  b\" \"\" x \"\" >/dev/null; true' "
             "2>%s", tmpdir, ACTRACE, out, tmp("names.err"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    long long pid = pid_named(root, "/bin/echo a  b  x", 0);
    CHECK(pid > 0);
    CHECK(pid_named(root, "/bin/echo a  b  x ", 0) < 0); /* nothing after the x */
    json_t *e;
    size_t i, n = 0;
    json_array_foreach(tu_events(root), i, e) {
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (tu_int(e, "pid") == pid && nm && strcmp(nm, "memory") == 0) {
            long long rss = tu_int(json_object_get(e, "args"), "rss_bytes");
            CHECK(rss > 4096 && rss % 1024 == 0);
            n++;
        }
    }
    CHECK_EQ_INT((long long)n, 2);
    json_decref(root);
}

/* Without the host plugin (--no-default-plugins), a process that records
 * nothing has no memory samples (they stand for the host plugin's, and
 * cost two /proc reads in every process): its life span, parent and exit
 * status are there, and its CPU use. */
static void nohost(void)
{
    char cmd[8192];
    const char *out = tmp("nohost.json");
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s %s record --no-default-plugins -o %s -- sh -c '/bin/sleep 0.05; true' 2>%s",
             tmpdir, ACTRACE, out, tmp("nohost.err"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    long long pid = pid_named(root, "/bin/sleep 0.05", 0);
    CHECK_FATAL(pid > 0);
    CHECK_EQ_INT((long long)count_pid(root, "X", "process", pid), 1);
    CHECK_EQ_INT((long long)count_pid(root, "C", "memory", pid), 0);
    CHECK_EQ_INT((long long)count_pid(root, "C", "cpu", pid), 1);
    json_decref(root);
}

/* The program replaces the light log with a FIFO (no reader): the
 * processes after it neither block nor vanish (each falls back to a log
 * of its own), and record does not block reading it. */
static void fifo(void)
{
    char cmd[8192];
    const char *out = tmp("fifo.json");
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s timeout 60 %s record -o %s -- sh -c 'rm \"$ACTRACE_RECORD_DIR/light.log\" "
             "&& mkfifo \"$ACTRACE_RECORD_DIR/light.log\" && %s idle %s; true' 2>%s",
             tmpdir, ACTRACE, out, PROG, tmp("fifo.txt"), tmp("fifo.err"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    CHECK(file_is(tmp("fifo.txt"), "threads 1 spool 0 meta 1 light 0\n"));
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    long long pid = pid_named(root, PROG " idle", 0);
    CHECK(pid > 0);
    CHECK_EQ_INT(life_status(root, pid), 7);
    json_decref(root);
}

int main(void)
{
    CHECK_FATAL(mkdtemp(tmpdir) != NULL);
    idle();
    names();
    nohost();
    torn();
    fifo();
    late();
    forkrec();
    reuse(0);
    reuse(1);
    ids();
    replaced_plugin();
    rank();
    many();
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (!check_failures())
        ru_run(cmd);
    return check_done();
}
