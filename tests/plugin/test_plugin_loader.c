/* SPDX-License-Identifier: MIT */
/*
 * The plugin loader through the public API: every refusal reason (each
 * checked by its log message, which must name the file and the reason),
 * the ways plugins are named (path, bare name, env, config), a plugin that
 * returns garbage, and several plugins at once. Refused plugins never stop
 * the others or the session.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "actrace/plugin.h"
#include "plugin_test_util.h"

#define SCRATCH ACT_BINARY_DIR "/tests/plugin/scratch"

static const char *tp(const char *name)
{
    static char buf[8][512];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 512, "%s/%s.so", TP_DIR, name);
    return b;
}

/* Loads one entry, expects it refused with a message holding @p why. */
static void expect_refused(const char *entry, const char *file,
                           const char *why)
{
    log_reset();
    const char *list[] = {entry};
    run_session(list, 1, NULL, NULL, NULL);
    if (!CHECK_EQ_INT(log_count("refused", file, why), 1))
        fprintf(stderr, "  entry %s; log was:\n%s", entry, log_buf);
    CHECK_EQ_INT(log_count("loaded", NULL, NULL), 0);
}

static void app_span(void)
{
    act_span_begin(ACT_USER_ANNOTATION, "the app goes on");
    act_span_end();
}

static int copy_file(const char *from, const char *to, mode_t mode)
{
    char buf[65536];
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, mode);
    ssize_t n;
    int ok = in >= 0 && out >= 0;
    while (ok && (n = read(in, buf, sizeof buf)) > 0)
        ok = write(out, buf, (size_t)n) == n;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    chmod(to, mode);
    return ok ? 0 : -1;
}

static void test_paths(void)
{
    expect_refused("tests/plugin/tp_ok.so", "tests/plugin/tp_ok.so",
                   "relative path");
    expect_refused("./tp_ok.so", "./tp_ok.so", "relative path");
    expect_refused("tp_ok.so", "tp_ok.so",
                   "neither an absolute path nor a bare name");
    expect_refused(SCRATCH "/missing.so", SCRATCH "/missing.so",
                   "No such file");

    /* A bare name resolves in ACTRACE_PLUGIN_DIR, never in the cwd. */
    setenv("ACTRACE_PLUGIN_DIR", TP_DIR, 1);
    log_reset();
    const char *bare[] = {"tp_ok"};
    run_session(bare, 1, NULL, NULL, NULL);
    CHECK_EQ_INT(log_count("loaded 'tp_ok'", TP_DIR "/tp_ok.so", NULL), 1);
    CHECK_OK(chdir(TP_DIR));
    setenv("ACTRACE_PLUGIN_DIR", "/nonexistent-actrace-dir", 1);
    expect_refused("tp_ok", "/nonexistent-actrace-dir/tp_ok.so",
                   "No such file");
    setenv("ACTRACE_PLUGIN_DIR", "relative/dir", 1);
    log_reset();
    run_session(bare, 1, NULL, NULL, NULL);
    CHECK_EQ_INT(log_count("ACTRACE_PLUGIN_DIR", "not an absolute path", NULL),
                 1);
    unsetenv("ACTRACE_PLUGIN_DIR");
    CHECK_OK(chdir(ACT_BINARY_DIR));

    /* Config PLUGINS (commas) and ACTRACE_PLUGINS (colons); a plugin
     * listed twice loads once. */
    char env[1200], cfg[1200];
    snprintf(env, sizeof env, "%s:%s", tp("tp_ok"), tp("tp_second"));
    snprintf(cfg, sizeof cfg, "PLUGINS = %s, %s\n", tp("tp_second"),
             tp("tp_ok"));
    setenv("ACTRACE_PLUGINS", env, 1);
    log_reset();
    run_session(NULL, 0, cfg, NULL, NULL);
    CHECK_EQ_INT(log_count("loaded 'tp_ok'", NULL, NULL), 1);
    CHECK_EQ_INT(log_count("loaded 'tp_second'", NULL, NULL), 1);
    unsetenv("ACTRACE_PLUGINS");
}

static void test_unsafe(void)
{
    char dir[600], file[700];
    snprintf(dir, sizeof dir, "%s/unsafe", SCRATCH);
    snprintf(file, sizeof file, "%s/p.so", dir);
    mkdir(SCRATCH, 0755);
    mkdir(dir, 0755);
    chmod(dir, 0755);
    CHECK_OK(copy_file(tp("tp_ok"), file, 0755));

    log_reset();
    const char *list[] = {file};
    run_session(list, 1, NULL, NULL, NULL);
    CHECK_EQ_INT(log_count("loaded 'tp_ok'", file, NULL), 1);

    chmod(file, 0775);
    expect_refused(file, file, "file " SCRATCH "/unsafe/p.so is writable by "
                               "group or others (mode 0775)");
    chmod(file, 0757);
    expect_refused(file, file, "writable by group or others (mode 0757)");
    chmod(file, 0755);
    chmod(dir, 0777);
    expect_refused(file, file, "directory " SCRATCH "/unsafe is writable by "
                               "group or others (mode 0777)");
    /* A sticky directory (like /tmp) owned by root or the user is safe on
     * the path: others cannot rename or remove what is in it... */
    chmod(dir, 01777);
    log_reset();
    run_session(list, 1, NULL, NULL, NULL);
    CHECK_EQ_INT(log_count("loaded 'tp_ok'", file, NULL), 1);
    /* ...but a sticky file writable by others is still refused. */
    chmod(file, 01757);
    expect_refused(file, file, "writable by group or others (mode 1757)");
    chmod(file, 0755);
    if (geteuid() == 0) {
        /* A sticky directory owned by someone else is not. */
        CHECK_OK(chown(dir, 4242, 4242));
        expect_refused(file, file, "directory " SCRATCH "/unsafe is owned by uid 4242");
        CHECK_OK(chown(dir, 0, 0));
    }
    chmod(dir, 0755);
    if (geteuid() == 0) {
        CHECK_OK(chown(file, 4242, 4242));
        expect_refused(file, file,
                       "is owned by uid 4242, neither root nor the current "
                       "user");
        CHECK_OK(chown(file, 0, 0));
    } else {
        printf("note: not root, the file-owner case is not exercised\n");
    }

    /* Not a shared object: text, and an ELF that is not ET_DYN. */
    char text[700];
    snprintf(text, sizeof text, "%s/text.so", dir);
    FILE *f = fopen(text, "w");
    CHECK_FATAL(f != NULL);
    fputs("this is not an ELF file, just text\n", f);
    fclose(f);
    chmod(text, 0644);
    expect_refused(text, text, "not a shared object (no ELF header)");
    char rel[700];
    snprintf(rel, sizeof rel, "%s/rel.so", dir);
    f = fopen(rel, "wb");
    CHECK_FATAL(f != NULL);
    unsigned char hdr[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    hdr[16] = 1; /* ET_REL */
    fwrite(hdr, 1, sizeof hdr, f);
    fclose(f);
    chmod(rel, 0644);
    expect_refused(rel, rel, "not a shared object (ELF type 1");
    /* A directory is not a plugin either. */
    expect_refused(dir, dir, "not a regular file");
}

static void test_abi_refusals(void)
{
    expect_refused(tp("tp_nosym"), tp("tp_nosym"),
                   "missing entry symbol act_plugin_entry");
    /* The test plugin's minor is this header's ACT_PLUGIN_ABI_MINOR. */
    char major2[96];
    snprintf(major2, sizeof major2,
             "unsupported plugin ABI 2.%d (this host speaks 1.0 to 1.%d)",
             ACT_PLUGIN_ABI_MINOR, ACT_PLUGIN_ABI_MINOR);
    expect_refused(tp("tp_major2"), tp("tp_major2"), major2);
    expect_refused(tp("tp_small"), tp("tp_small"),
                   "plugin table struct_size 40 is smaller than ABI 1.0's "
                   "(88)");
    expect_refused(tp("tp_nullentry"), tp("tp_nullentry"),
                   "declined: act_plugin_entry returned NULL");
    expect_refused(tp("tp_decline"), tp("tp_decline"),
                   "init declined: no tp device present");
    {
        /* What it described before declining is not in the trace (which
         * CI also checks with the viewers: it holds one span of the app's,
         * so speedscope has a profile to import). */
        const char *list[] = {tp("tp_decline")};
        const char *trace = ACT_TRACE_DIR "/plugin_declined.json";
        CHECK_OK(run_session(list, 1, NULL, trace, app_span));
        json_t *root = trace_load(trace);
        CHECK_FATAL(root != NULL);
        CHECK_EQ_INT(json_array_size(json_object_get(root, "deviceProperties")), 0);
        char *text = json_dumps(root, 0);
        CHECK(text && !strstr(text, "declined device") && !strstr(text, "declined track"));
        free(text);
        json_decref(root);
    }
    expect_refused(tp("tp_fail"), tp("tp_fail"),
                   "init failed (-1): driver error 42");

    /* The same plugin name from two files: the second is refused. */
    char copy[700];
    mkdir(SCRATCH, 0755);
    snprintf(copy, sizeof copy, "%s/tp_ok_copy.so", SCRATCH);
    CHECK_OK(copy_file(tp("tp_ok"), copy, 0755));
    log_reset();
    const char *two[] = {tp("tp_ok"), copy};
    run_session(two, 2, NULL, NULL, NULL);
    CHECK_EQ_INT(log_count("loaded 'tp_ok'", NULL, NULL), 1);
    CHECK_EQ_INT(log_count("refused", copy, "already loaded"), 1);
}

/* Refused plugins around a good one; a second good one next to it. */
static void test_two_plugins(void)
{
    const char *trace = ACT_TRACE_DIR "/plugin_two.json";
    const char *list[] = {tp("tp_nosym"), tp("tp_ok"), tp("tp_fail"),
                          tp("tp_second"), tp("tp_major2")};
    log_reset();
    CHECK_OK(run_session(list, 5, NULL, trace, NULL));
    CHECK_EQ_INT(log_count("refused", NULL, NULL), 3);
    json_t *root = trace_load(trace);
    CHECK_FATAL(root != NULL);
    const char *names[2] = {"tp_ok", "tp_second"};
    json_int_t pids[2];
    for (int i = 0; i < 2; i++) {
        char dev[64], k[64], launch[64], mark[64];
        snprintf(dev, sizeof dev, "%s device", names[i]);
        snprintf(k, sizeof k, "tp_kernel_%s", names[i]);
        snprintf(launch, sizeof launch, "tpLaunch_%s", names[i]);
        snprintf(mark, sizeof mark, "tp_mark_%s", names[i]);
        pids[i] = trace_process(root, dev);
        CHECK(pids[i] >= 0);
        json_t *kern = trace_find(root, "X", k);
        json_t *host = trace_find(root, "X", launch);
        CHECK_FATAL(kern && host);
        CHECK_EQ_INT(ev_int(kern, "pid"), pids[i]);
        CHECK_EQ_INT(ev_int(kern, "tid"), trace_thread(root, pids[i], "q3"));
        CHECK_EQ_INT(ev_int(host, "pid"), getpid());
        /* tp_second's host span is on a thread of its own, so the two
         * spans never overlap partially on one thread. */
        if (i == 0)
            CHECK_EQ_INT(ev_int(host, "tid"), gettid());
        else
            CHECK(ev_int(host, "tid") > 0 && ev_int(host, "tid") != gettid());
        CHECK(trace_has_flow(root, host, kern));
        json_t *ins = trace_find(root, "i", mark);
        CHECK(ins != NULL && ev_int(ins, "pid") == pids[i]);
    }
    CHECK(pids[0] != pids[1]);
    CHECK(trace_count(root, "C", NULL) >= 4);
    json_decref(root);
}

/* A plugin that reads its key only in start, not in init: that key is not
 * unknown; a key nothing reads is, once, when the session stops (before:
 * the warning came right after init and named TP_LATE_KEY too). */
static void test_late_config_key(void)
{
    const char *list[] = {tp("tp_ok")};
    log_reset();
    CHECK_OK(run_session(list, 1, "TP_LATE_KEY = 1\nNOBODY_READS_IT = 2\n", NULL, NULL));
    if (!CHECK_EQ_INT(log_count("unknown key", "TP_LATE_KEY", NULL), 0))
        fprintf(stderr, "log:\n%s", log_buf);
    CHECK_EQ_INT(log_count("unknown key", "NOBODY_READS_IT", NULL), 1);
    /* Created and destroyed without running: reported at destroy, once. */
    log_reset();
    act_session_opts o;
    act_session_opts_init(&o);
    o.plugins = list;
    o.plugin_count = 1;
    o.config_text = "NOBODY_READS_IT = 3\n";
    o.config_text_len = strlen(o.config_text);
    act_session *s = NULL;
    CHECK_OK(act_session_create(&o, &s));
    CHECK_EQ_INT(log_count("unknown key", NULL, NULL), 0);
    act_session_destroy(s);
    CHECK_EQ_INT(log_count("unknown key", "NOBODY_READS_IT", NULL), 1);
}

static void test_garbage(void)
{
    const char *trace = ACT_TRACE_DIR "/plugin_garbage.json";
    const char *list[] = {tp("tp_garbage"), tp("tp_ok")};
    log_reset();
    CHECK_OK(run_session(list, 2, NULL, trace, NULL));
    /* Each reason is logged once, however often it happened. */
    static const char *const reasons[] = {
        "batch refused", "struct_size smaller", "unknown record kind",
        "unknown activity type", "not drawable", "unknown device",
        "timestamp negative or beyond", "end before start", "NULL name",
        "name longer than", "not valid UTF-8", "ACT_PLUGIN_ARGS_MAX args",
        "invalid arg (key", "unknown counter track", "non-finite counter value",
        "invalid arguments"};
    for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
        if (!CHECK_EQ_INT(log_count("'tp_garbage'", "data rejected",
                                    reasons[i]), 1))
            fprintf(stderr, "  reason: %s\n", reasons[i]);
    CHECK_EQ_INT(log_count("'tp_garbage'", "rejected in total", NULL), 1);
    CHECK_EQ_INT(log_count("'tp_ok'", "rejected", NULL), 0);
    CHECK_EQ_INT(log_count("cannot register activity type 'Bad Name!'",
                           NULL, NULL), 1);
    json_t *root = trace_load(trace);
    CHECK_FATAL(root != NULL);
    CHECK(trace_find(root, "X", "gb_valid_0") != NULL);
    CHECK(trace_find(root, "X", "gb_valid_1") != NULL);
    CHECK(trace_find(root, "X", "gb_valid_2") != NULL);
    CHECK(trace_find(root, "X", "tp_kernel_tp_ok") != NULL);
    /* The rejections are in the trace's stats, per plugin. */
    json_t *pl = json_object_get(json_object_get(root, "actraceStats"),
                                 "plugins");
    size_t i;
    json_t *p;
    int seen = 0;
    json_array_foreach(pl, i, p) {
        const char *name = ev_str(p, "name");
        json_int_t rej = ev_int(p, "rejected");
        if (name && !strcmp(name, "tp_garbage")) {
            seen |= 1;
            CHECK(rej > 100);
            CHECK_EQ_STR(ev_str(p, "path"), tp("tp_garbage"));
            /* The reasons add up to the total, and every one that was
             * logged is there by its key. */
            json_t *by = json_object_get(p, "rejected_by_reason");
            CHECK_EQ_INT(json_object_size(by), sizeof reasons / sizeof reasons[0]);
            const char *key;
            json_t *val;
            json_int_t sum = 0;
            json_object_foreach(by, key, val) sum += json_integer_value(val);
            CHECK_EQ_INT(sum, rej);
            CHECK(json_integer_value(json_object_get(by, "order")) > 0);
            CHECK(json_integer_value(json_object_get(by, "name_utf8")) > 0);
            CHECK(json_is_integer(json_object_get(p, "filtered")));
            CHECK(json_is_integer(json_object_get(p, "dropped")));
        } else if (name && !strcmp(name, "tp_ok")) {
            seen |= 2;
            CHECK_EQ_INT(rej, 0);
        }
    }
    CHECK_EQ_INT(seen, 3);
    json_decref(root);
}

int main(void)
{
    log_start();
    test_paths();
    test_unsafe();
    test_abi_refusals();
    test_two_plugins();
    test_late_config_key();
    test_garbage();
    act_log_set(NULL, NULL);
    CHECK_MAIN_END;
}
