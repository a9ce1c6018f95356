/* SPDX-License-Identifier: MIT */
/*
 * `actrace record` end to end: the bundled demo recorded into a valid trace
 * with its threads, counters and steps; the command's exit status passed
 * through; a program killed by SIGTERM still leaves its trace; a bad config
 * is reported with file:line:column before anything runs; a missing command
 * is exit 127.
 */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "engine/trace_util.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"

/* The demo's steps as Kineto names them (HTA's loader needs the number in
 * the name): ProfilerStep#0 .. ProfilerStep#<n-1>, each once. */
static void check_steps(json_t *root, int n)
{
    CHECK_EQ_INT(tu_count(root, "X", "ProfilerStep"), 0);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "ProfilerStep#%d", i);
        CHECK_EQ_INT(tu_count(root, "X", name), 1);
    }
}

static int run(const char *cmd)
{
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

static char tmpdir[] = "/tmp/act_record_XXXXXX";

static const char *tmp(const char *name)
{
    static char path[4][512];
    static int k;
    k = (k + 1) & 3;
    snprintf(path[k], sizeof path[k], "%s/%s", tmpdir, name);
    return path[k];
}

int main(void)
{
    CHECK_FATAL(mkdtemp(tmpdir) != NULL);
    char cmd[16384];

    /* The demo: threads, nested spans, counters, args. */
    const char *demo = tu_trace_path("record_demo.json");
    remove(demo); /* record never overwrites without --force */
    snprintf(cmd, sizeof cmd, "%s record -o %s -- %s/bin/actrace-demo >/dev/null 2>&1", ACTRACE,
             demo, ACT_BINARY_DIR);
    CHECK_EQ_INT(run(cmd), 0);
    json_t *root = tu_load(demo);
    check_steps(root, 20);
    CHECK_EQ_INT(tu_count(root, "X", "load batch"), 20);
    CHECK_EQ_INT(tu_count(root, "X", "aten::matmul"), 40);
    CHECK_EQ_INT(tu_count(root, "C", "training"), 20);
    CHECK_EQ_INT(tu_count(root, "i", "checkpoint"), 4);
    CHECK_EQ_INT(tu_int(tu_stats(root), "dropped"), 0);
    CHECK_EQ_STR(json_string_value(json_object_get(root, "traceName")), "record_demo.json");
    json_t *mm = tu_find(root, "X", "aten::matmul");
    CHECK(mm && tu_int(json_object_get(mm, "args"), "External id") > 0);
    CHECK(mm && json_is_string(json_object_get(json_object_get(mm, "args"), "Input Dims")));
    json_decref(root);

    /* Exit status passes through; a program that never calls the API still
     * gets a (valid, empty) trace. (`false` leaves with exit(); a program
     * that calls _exit(), like dash's `exit`, runs no exit handler and
     * writes no trace: actrace record says so.) */
    snprintf(cmd, sizeof cmd, "%s record --no-default-plugins -o %s -- false 2>/dev/null", ACTRACE,
             tmp("exit3.json"));
    CHECK_EQ_INT(run(cmd), 1);
    root = tu_load(tmp("exit3.json"));
    CHECK_EQ_INT(tu_int(tu_stats(root), "recorded"), 0);
    json_decref(root);

    /* Killed by SIGTERM: the handler writes the trace, the status says so. */
    snprintf(cmd, sizeof cmd, "%s record -o %s -- %s/tests/act_term_self 2>/dev/null", ACTRACE,
             tmp("term.json.gz"), ACT_BINARY_DIR);
    CHECK_EQ_INT(run(cmd), 128 + 15);
    struct stat sb;
    CHECK(stat(tmp("term.json.gz"), &sb) == 0 && sb.st_size > 0);
    snprintf(cmd, sizeof cmd, "zcat %s | grep -q '\"before the signal\"'", tmp("term.json.gz"));
    CHECK_EQ_INT(run(cmd), 0);

    /* A bad config: file:line:column, exit 2, the command never runs. */
    FILE *f = fopen(tmp("bad.cfg"), "w");
    CHECK_FATAL(f != NULL);
    fputs("# comment\nACTIVITY_TYPES = kernel, nonsense\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s record -c %s -o %s -- touch %s 2>%s", ACTRACE, tmp("bad.cfg"),
             tmp("never.json"), tmp("ran"), tmp("err.txt"));
    CHECK_EQ_INT(run(cmd), 2);
    CHECK(access(tmp("ran"), F_OK) != 0);
    CHECK(access(tmp("never.json"), F_OK) != 0);
    char *err = tu_slurp(tmp("err.txt"), NULL);
    char want[600];
    snprintf(want, sizeof want, "%s:2:", tmp("bad.cfg"));
    CHECK(err && strstr(err, want) != NULL);
    free(err);

    /* A good config applies: only the selected type is recorded. */
    f = fopen(tmp("good.cfg"), "w");
    CHECK_FATAL(f != NULL);
    fputs("ACTIVITY_TYPES = user_annotation\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd %s && %s record -c good.cfg -o rel.json -- %s/bin/actrace-demo >/dev/null 2>&1",
             tmpdir, ACTRACE, ACT_BINARY_DIR);
    CHECK_EQ_INT(run(cmd), 0);
    root = tu_load(tmp("rel.json"));
    CHECK_EQ_INT(tu_count(root, "X", "aten::matmul"), 0);
    check_steps(root, 20);
    json_decref(root);

    /* Kineto's ACTIVITIES_LOG_FILE with %pid% names the output without -o. */
    f = fopen(tmp("logfile.cfg"), "w");
    CHECK_FATAL(f != NULL);
    fprintf(f, "ACTIVITIES_LOG_FILE = %s/kineto_%%pid%%.json\n", tmpdir);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s record -c %s -- %s/tests/act_term_self 2>%s", ACTRACE,
             tmp("logfile.cfg"), ACT_BINARY_DIR, tmp("err2.txt"));
    CHECK_EQ_INT(run(cmd), 128 + 15);
    err = tu_slurp(tmp("err2.txt"), NULL);
    CHECK(err && strstr(err, "wrote ") && strstr(err, "/kineto_"));
    if (err) {
        /* "actrace record: wrote DIR/kineto_PID.json (... MB, ...)" */
        char *w = strstr(err, "wrote ");
        char *nl = w ? strchr(w, '\n') : NULL;
        if (nl)
            *nl = '\0';
        CHECK(w && strstr(w, " events, 0 dropped") && strstr(w, "actrace summary "));
        nl = w ? strstr(w, " (") : NULL;
        if (nl)
            *nl = '\0';
        CHECK(w && !strstr(w, "%pid%"));
        if (w) {
            json_t *kr = tu_load(w + 6);
            CHECK_EQ_INT(tu_count(kr, "X", "before the signal"), 1);
            json_decref(kr);
        }
    }
    free(err);

    /* actrace types lists what a plugin registers. */
    snprintf(cmd, sizeof cmd, "%s types --json --plugin %s/plugins/example.so >%s 2>/dev/null",
             ACTRACE, ACT_BINARY_DIR, tmp("types.json"));
    CHECK_EQ_INT(run(cmd), 0);
    json_t *types = tu_load(tmp("types.json"));
    int found = 0;
    size_t k;
    json_t *ty;
    json_array_foreach(types, k, ty) {
        const char *nm = json_string_value(json_object_get(ty, "name"));
        if (nm && strcmp(nm, "example_sync") == 0) {
            found = 1;
            CHECK(tu_int(ty, "code") >= 1024);
            CHECK(json_is_true(json_object_get(ty, "registered")));
        }
    }
    CHECK(found);
    json_decref(types);

    /* No such command; usage errors. */
    snprintf(cmd, sizeof cmd, "%s record -o %s -- /nonexistent/cmd 2>/dev/null", ACTRACE,
             tmp("x.json"));
    CHECK_EQ_INT(run(cmd), 127);
    snprintf(cmd, sizeof cmd, "%s record 2>/dev/null", ACTRACE);
    CHECK_EQ_INT(run(cmd), 2);
    snprintf(cmd, sizeof cmd, "%s record --bogus -- true 2>/dev/null", ACTRACE);
    CHECK_EQ_INT(run(cmd), 2);

    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    run(cmd);
    return check_done();
}
