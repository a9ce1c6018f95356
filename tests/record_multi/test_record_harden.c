/* SPDX-License-Identifier: MIT */
/*
 * `actrace record` against hostile users and ordinary programs (issue 15):
 *  - takeover: a background job outlives record; record leaves the
 *    directory it uses; someone re-creates the directory (mode 0777, and
 *    owned by nobody when run as root): the job writes nothing there (no
 *    trace, no spool), neither does its forked child or a new image, and
 *    it says so;
 *  - `ulimit -f`: the library's own writes never raise SIGXFSZ;
 *  - chunks of large strings are spilled like any other: none dropped;
 *  - a relative TMPDIR, with processes that start in or change to
 *    another directory: every trace is written, none rebuilt;
 *  - signals: Python under record gets KeyboardInterrupt; a C program sees
 *    the default dispositions and its own SIGTERM handler runs;
 *  - a short program (`sh -c 'exit 3'`), and a forking script, get a valid
 *    trace with every process, and record exits with the program's status.
 */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"
#include "record_util.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define PROG ACT_BINARY_DIR "/tests/act_mp_prog"

static char tmpdir[] = "/tmp/act_harden_XXXXXX";

static const char *tmp(const char *name)
{
    return ru_path(tmpdir, name);
}

static int file_has(const char *path, const char *what)
{
    char *s = tu_slurp(path, NULL);
    int ok = s && strstr(s, what);
    if (!ok)
        fprintf(stderr, "%s does not hold \"%s\": %s\n", path, what, s ? s : "(missing)");
    free(s);
    return ok;
}

static int wait_file(const char *path, int ms)
{
    for (int i = 0; i < ms && access(path, F_OK) != 0; i++)
        usleep(1000);
    return access(path, F_OK) == 0;
}

/* 1 if the process of span @p name is marked rebuilt from its spool. */
static int span_recovered(json_t *root, const char *name)
{
    json_t *e = tu_find(root, "X", name), *p;
    if (!e)
        return 1;
    long long pid = tu_int(e, "pid");
    size_t i;
    int n = 0;
    json_array_foreach(json_object_get(root, "actraceProcesses"), i, p)
        if (tu_int(p, "pid") == pid)
            n += json_is_true(json_object_get(p, "recovered"));
    return n;
}

static void takeover(void)
{
    char cmd[16384];
    const char *out = tu_trace_path("harden_takeover.json");
    remove(out);
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s ACTRACE_RECORD_GRACE_MS=200 %s record --no-default-plugins -o %s -- "
             "sh -c '%s victim %s >/dev/null 2>%s & "
             "i=0; while [ ! -e %s ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done' 2>%s",
             tmpdir, ACTRACE, out, PROG, tmpdir, tmp("victim_err.txt"), tmp("state"),
             tmp("record_err.txt"));
    alarm(120);
    CHECK_EQ_INT(ru_run(cmd), 0);
    /* The shell waited for it (so "victim before" was recorded before
     * record's end, however slowly the victim started). */
    CHECK_FATAL(wait_file(tmp("state"), 20000));
    char *dir = tu_slurp(tmp("state"), NULL);
    CHECK_FATAL(dir != NULL);
    dir[strcspn(dir, "\n")] = '\0';
    CHECK(dir[0] == '/');
    /* Record is gone; the job still uses the directory: it is left. */
    struct stat st;
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    CHECK(file_has(tmp("record_err.txt"), "left in place"));
    json_t *root = tu_load(out);
    CHECK_EQ_INT(tu_count(root, "X", "victim before"), 1);
    json_decref(root);
    /* The attack: the directory removed (a tmp cleaner, or a record that
     * removed it) and made again by someone else. */
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -m 0777 '%s' && chmod 0777 '%s'", dir, dir,
             dir);
    CHECK_EQ_INT(ru_run(cmd), 0);
    if (geteuid() == 0)
        CHECK(chown(dir, 65534, 65534) == 0);
    FILE *f = fopen(tmp("go"), "w");
    CHECK_FATAL(f != NULL);
    fclose(f);
    CHECK(wait_file(tmp("done"), 60000));
    alarm(0);
    int left = ru_count_entries(dir, ".", NULL) - 2; /* "." and ".." */
    if (left)
        fprintf(stderr, "takeover: the victim wrote %d file(s) into the re-created %s\n", left,
                dir);
    CHECK_EQ_INT(left, 0);
    CHECK(file_has(tmp("victim_err.txt"), "stops spooling"));
    /* The new image refuses the directory too. */
    CHECK(file_has(tmp("victim_err.txt"), geteuid() == 0 ? "owned by another user"
                                                         : "mode not 0700"));
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ru_run(cmd);
    free(dir);
}

/* `ulimit -f 4096` (2 MB in 512-byte blocks): the library's spool cannot
 * grow (its 16 MB pre-allocation) but the program must not see SIGXFSZ. */
static void fsize_limit(void)
{
    char cmd[16384];
    const char *out = tmp("fsize.json");
    remove(out);
    remove(tmp("f"));
    snprintf(cmd, sizeof cmd,
             "cd %s && ulimit -f 4096 && TMPDIR=%s %s record -o %s -- sh -c 'echo hi > f' "
             "2>%s",
             tmpdir, tmpdir, ACTRACE, out, tmp("fsize_err.txt"));
    int rc = ru_run(cmd);
    if (rc != 0)
        fprintf(stderr, "ulimit -f: record exited %d\n", rc);
    CHECK_EQ_INT(rc, 0);
    CHECK(file_has(tmp("f"), "hi"));
    /* A program whose own threads record through a limit: a span per
     * thread write, the spool refuses chunks, nothing is killed. */
    snprintf(cmd, sizeof cmd,
             "ulimit -f 2048 && TMPDIR=%s %s record --no-default-plugins -o %s -- %s spans "
             "200000 2>%s",
             tmpdir, ACTRACE, tmp("fsize2.json"), PROG, tmp("fsize_err.txt"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    CHECK_EQ_INT(ru_count_entries(tmpdir, "actrace-record-", NULL), 0);
}

/* Strings over a standard chunk get chunks of their own: under record
 * they spill like the rest, so a small RAM budget drops none while the
 * spool has room. */
static void big_strings(void)
{
    enum { N = 600, SIZE = 80000 };
    char cmd[16384];
    FILE *f = fopen(tmp("small.cfg"), "w");
    CHECK_FATAL(f != NULL);
    fputs("MAX_BUFFER_SIZE_MB = 8\nBUFFER_PREALLOC_MB = 1\n", f);
    fclose(f);
    const char *out = tmp("bigstr.json");
    remove(out);
    snprintf(cmd, sizeof cmd,
             "TMPDIR=%s %s record --no-default-plugins -c %s -o %s -- %s bigstr %d %d 2>%s",
             tmpdir, ACTRACE, tmp("small.cfg"), out, PROG, N, SIZE, tmp("bigstr_err.txt"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    long long dropped = tu_int(tu_stats(root), "dropped");
    if (dropped)
        fprintf(stderr, "big strings: %lld of %d dropped\n", dropped, N);
    CHECK_EQ_INT(dropped, 0);
    CHECK_EQ_INT(tu_int(tu_stats(root), "recorded"), N);
    json_decref(root);
    remove(out);
}

/* TMPDIR relative to where record starts; processes start in, or change
 * to, another directory. */
static void relative_tmpdir(void)
{
    char cmd[16384];
    const char *out = tmp("rel.json");
    remove(out);
    CHECK(mkdir(tmp("rel"), 0700) == 0);
    snprintf(cmd, sizeof cmd,
             "cd %s && TMPDIR=rel %s record --no-default-plugins -o %s -- sh -c "
             "'%s leaf here; %s cdleaf moved; cd / && %s leaf there' 2>%s",
             tmpdir, ACTRACE, out, PROG, PROG, PROG, tmp("rel_err.txt"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    CHECK_EQ_INT(tu_count(root, "X", "here"), 1);
    CHECK_EQ_INT(tu_count(root, "X", "moved"), 1);
    CHECK_EQ_INT(tu_count(root, "X", "there"), 1);
    /* The three programs wrote their own traces (only the shell, which
     * leaves with _exit, is rebuilt). */
    CHECK_EQ_INT(span_recovered(root, "here"), 0);
    CHECK_EQ_INT(span_recovered(root, "moved"), 0);
    CHECK_EQ_INT(span_recovered(root, "there"), 0);
    json_decref(root);
    CHECK_EQ_INT(ru_count_entries(tmp("rel"), "actrace-record-", NULL), 0);
    /* The library itself refuses a relative directory, and says so. */
    snprintf(cmd, sizeof cmd,
             "cd %s && ACTRACE_RECORD_DIR=rel LD_PRELOAD=%s/src/libactrace.so %s leaf x 2>%s",
             tmpdir, ACT_BINARY_DIR, PROG, tmp("rel_err.txt"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    CHECK(file_has(tmp("rel_err.txt"), "not an absolute path"));
    CHECK_EQ_INT(ru_count_entries(tmp("rel"), ".json", NULL), 0);
}

static void signals_as_untraced(void)
{
    char cmd[16384];
    if (access("/usr/bin/python3", X_OK) == 0) {
        FILE *f = fopen(tmp("kbd.py"), "w");
        CHECK_FATAL(f != NULL);
        fprintf(f, "import os, signal, sys, time\n"
                   "try:\n"
                   "    os.kill(os.getpid(), signal.SIGINT)\n"
                   "    time.sleep(10)\n"
                   "    sys.exit(5)\n"
                   "except KeyboardInterrupt:\n"
                   "    print('caught')\n"
                   "finally:\n"
                   "    open('%s', 'w').write('finally ran')\n"
                   "sys.exit(0)\n",
                tmp("kbd_marker"));
        fclose(f);
        remove(tmp("kbd_marker"));
        snprintf(cmd, sizeof cmd,
                 "TMPDIR=%s %s record -o %s -- /usr/bin/python3 %s >%s 2>/dev/null", tmpdir,
                 ACTRACE, tmp("kbd.json"), tmp("kbd.py"), tmp("kbd_out.txt"));
        CHECK_EQ_INT(ru_run(cmd), 0);
        CHECK(file_has(tmp("kbd_out.txt"), "caught"));
        CHECK(file_has(tmp("kbd_marker"), "finally ran"));
    } else {
        fprintf(stderr, "RecordHarden: no /usr/bin/python3: KeyboardInterrupt case skipped\n");
    }
    snprintf(cmd, sizeof cmd, "TMPDIR=%s %s record -o %s -- %s sigcheck 2>%s", tmpdir, ACTRACE,
             tmp("sig.json"), PROG, tmp("sig_err.txt"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    json_t *root = tu_load(tmp("sig.json"));
    CHECK_EQ_INT(tu_count(root, "X", "sigcheck"), 1);
    json_decref(root);
    /* Killed by SIGTERM with no handler: the spool keeps the trace. */
    snprintf(cmd, sizeof cmd, "TMPDIR=%s %s record -o %s -- sh -c '%s leaf t; kill -TERM $$' "
             "2>/dev/null", tmpdir, ACTRACE, tmp("sigterm.json"), PROG);
    CHECK_EQ_INT(ru_run(cmd), 128 + SIGTERM);
    root = tu_load(tmp("sigterm.json"));
    CHECK_EQ_INT(tu_count(root, "X", "t"), 1);
    json_decref(root);
    CHECK_EQ_INT(ru_count_entries(tmpdir, "actrace-record-", NULL), 0);
}

/* The merged trace @p out: valid (`actrace check`), with at least
 * @p procs processes, each named, with a pid, and with the host plugin's
 * memory sample at its start. */
static void check_short(const char *out, size_t procs)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s check %s >/dev/null 2>&1", ACTRACE, out);
    CHECK_EQ_INT(ru_run(cmd), 0);
    json_t *root = tu_load(out);
    CHECK_FATAL(root != NULL);
    json_t *pl = json_object_get(root, "actraceProcesses"), *p;
    CHECK(json_array_size(pl) >= procs);
    size_t i, j;
    json_array_foreach(pl, i, p)
    {
        long long pid = tu_int(p, "pid");
        CHECK(pid > 0);
        int sampled = 0;
        json_t *e;
        json_array_foreach(tu_events(root), j, e)
        {
            const char *ph = json_string_value(json_object_get(e, "ph"));
            const char *nm = json_string_value(json_object_get(e, "name"));
            sampled |= ph && nm && strcmp(ph, "C") == 0 && strcmp(nm, "memory") == 0 &&
                       tu_int(e, "pid") == pid;
        }
        if (!sampled)
            fprintf(stderr, "%s: pid %lld has no memory sample\n", out, pid);
        CHECK(sampled);
    }
    size_t named = 0;
    json_array_foreach(tu_events(root), i, p)
    {
        const char *ph = json_string_value(json_object_get(p, "ph"));
        const char *nm = json_string_value(json_object_get(p, "name"));
        named += ph && nm && strcmp(ph, "M") == 0 && strcmp(nm, "process_name") == 0;
    }
    CHECK(named >= procs);
    json_decref(root);
}

static void short_programs(void)
{
    char cmd[16384];
    const char *out = tmp("short.json");
    remove(out);
    snprintf(cmd, sizeof cmd, "cd %s && TMPDIR=%s %s record --plugin host -o %s -- sh -c 'exit 3' 2>%s",
             tmpdir, tmpdir, ACTRACE, out, tmp("short_err.txt"));
    CHECK_EQ_INT(ru_run(cmd), 3);
    check_short(out, 1);
    remove(out);
    snprintf(cmd, sizeof cmd,
             "cd %s && TMPDIR=%s %s record --plugin host -o %s -- sh -c 'sh -c true & wait' 2>%s", tmpdir,
             tmpdir, ACTRACE, out, tmp("short_err.txt"));
    CHECK_EQ_INT(ru_run(cmd), 0);
    check_short(out, 2);
    CHECK_EQ_INT(ru_count_entries(tmpdir, "actrace-record-", NULL), 0);
}

int main(int argc, char **argv)
{
    CHECK_FATAL(mkdtemp(tmpdir) != NULL);
    ru_watchdog("RecordHarden: timed out\n", 0);
    const char *only = argc > 1 ? argv[1] : NULL;
#define CASE(f) \
    if (!only || strcmp(only, #f) == 0) { \
        alarm(120); \
        f(); \
        alarm(0); \
    }
    CASE(takeover)
    CASE(fsize_limit)
    CASE(big_strings)
    CASE(relative_tmpdir)
    CASE(signals_as_untraced)
    CASE(short_programs)
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    ru_run(cmd);
    return check_done();
}
