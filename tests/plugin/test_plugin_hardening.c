/* SPDX-License-Identifier: MIT */
/*
 * The plugin host against plugins that misbehave (issue 12): log text
 * with terminal escapes and invalid UTF-8, a plugin reached through an
 * attacker's symlink in a sticky directory, a flush that never returns,
 * a thread that outlives finalize, and a thread that rewrites records
 * while the host checks them.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "plugin_test_util.h"

/* A fresh directory per run (mkdtemp in main). */
static char scratch[512];
#define SCRATCH scratch

static const char *tp(const char *name)
{
    static char buf[8][512];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 512, "%s/%s.so", TP_DIR, name);
    return b;
}

/* The log text of a plugin reaches the terminal escaped. */
static void test_log_text(void)
{
    log_reset();
    const char *list[] = {tp("tp_log")};
    CHECK_OK(run_session(list, 1, NULL, NULL, NULL));
    CHECK_EQ_INT(log_count("plugin 'tp_log': tp_log says", NULL, NULL), 1);
    const char *line = strstr(log_buf, "plugin 'tp_log': tp_log says");
    CHECK_FATAL(line != NULL);
    const char *end = strchr(line, '\n');
    CHECK_FATAL(end != NULL);
    /* No control byte, no C1 control, no invalid UTF-8 in the line. */
    int bad = 0;
    for (const char *p = line; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f || c == 0xff || c == 0xfe)
            bad++;
        if (c == 0xc2 && (unsigned char)p[1] < 0xa0)
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(strstr(line, "\\x1b[31mred\\x1b[0m\\x0dover\\x07bell") != NULL);
    CHECK(strstr(line, "\\xc2\\x9b2J") != NULL);
    CHECK(strstr(line, "bad\\xff\\xfe caf\xc3\xa9 end\\x0anext line") != NULL);

    /* A long message is cut at a character boundary: the line is valid
     * UTF-8 and fits the log's 1024 bytes. */
    line = strstr(log_buf, "plugin 'tp_log': tp_log long ");
    CHECK_FATAL(line != NULL);
    end = strchr(line, '\n');
    CHECK_FATAL(end != NULL);
    CHECK(end - line < 1024 && end - line > 800);
    const unsigned char *u = (const unsigned char *)line;
    int utf8_ok = 1;
    while (u < (const unsigned char *)end) {
        if (*u < 0x80) {
            u++;
        } else if (*u == 0xc3 && u + 1 < (const unsigned char *)end &&
                   u[1] == 0xa9) {
            u += 2;
        } else {
            utf8_ok = 0;
            break;
        }
    }
    CHECK(utf8_ok);
}

/* A symlink on the path as given is checked, not only where it leads. */
static void test_symlink(void)
{
    if (geteuid() != 0) {
        printf("note: not root, the symlink-owner cases are not exercised\n");
        return;
    }
    char sticky[600], link[700], chain[700];
    snprintf(sticky, sizeof sticky, "%s/sticky", SCRATCH);
    snprintf(link, sizeof link, "%s/evil.so", sticky);
    snprintf(chain, sizeof chain, "%s/chain.so", SCRATCH);
    mkdir(sticky, 01777);
    CHECK_OK(chmod(sticky, 01777)); /* like /tmp */
    unlink(link);
    unlink(chain);
    CHECK_OK(symlink(tp("tp_ok"), link));
    CHECK_OK(symlink(link, chain)); /* a link to the link */

    /* Another user's link in a sticky world-writable directory. */
    CHECK_OK(lchown(link, 4242, 4242));
    const char *list[] = {link};
    log_reset();
    run_session(list, 1, NULL, NULL, NULL);
    if (!CHECK_EQ_INT(log_count("refused", "symlink", "owned by uid 4242"), 1))
        fprintf(stderr, "log:\n%s", log_buf);
    CHECK_EQ_INT(log_count("loaded", NULL, NULL), 0);
    /* Reached through a chain of links: still found. */
    const char *list2[] = {chain};
    log_reset();
    run_session(list2, 1, NULL, NULL, NULL);
    char want[700];
    snprintf(want, sizeof want, "symlink %s/sticky/evil.so", SCRATCH);
    CHECK_EQ_INT(log_count("refused", want, "owned by uid 4242"), 1);
    CHECK_EQ_INT(log_count("loaded", NULL, NULL), 0);
    /* The same link owned by root is fine. */
    CHECK_OK(lchown(link, 0, 0));
    log_reset();
    run_session(list2, 1, NULL, NULL, NULL);
    CHECK_EQ_INT(log_count("loaded 'tp_ok'", NULL, NULL), 1);
    unlink(chain);
    unlink(link);
    rmdir(sticky);
}

/* A flush that never returns: reported, skipped, the rest written. */
static void test_hang(void)
{
    /* Not in ACT_TRACE_DIR (which CI validates with the viewers): tp_hang
     * and tp_ok both put a host span at [t0 + 1000, t0 + 2000] of their
     * own start on this thread, which may overlap partially. */
    char trace[600];
    snprintf(trace, sizeof trace, "%s/plugin_hang.json", SCRATCH);
    const char *list[] = {tp("tp_hang"), tp("tp_ok")};
    log_reset();
    CHECK_OK(run_session(list, 2, "PLUGIN_TIMEOUT_MSECS = 300\n", trace,
                         NULL));
    if (!CHECK_EQ_INT(log_count("plugin 'tp_hang'", "flush did not return "
                                "within 300 ms", "stuck"), 1))
        fprintf(stderr, "log:\n%s", log_buf);
    json_t *root = trace_load(trace);
    CHECK_FATAL(root != NULL);
    /* tp_ok flushed after it; what tp_hang emitted before it hung is in. */
    CHECK(trace_find(root, "X", "tp_kernel_tp_ok") != NULL);
    CHECK(trace_find(root, "X", "tp_kernel_tp_hang") != NULL);
    json_decref(root);
    unlink(trace);
    /* A second session loads it again and is bounded again. */
    log_reset();
    CHECK_OK(run_session(list, 2, "PLUGIN_TIMEOUT_MSECS = 100\n", NULL,
                         NULL));
    CHECK_EQ_INT(log_count("plugin 'tp_hang'", "within 100 ms", NULL), 1);
}

/* A plugin thread still running after finalize and destroy. */
static void test_leaked_thread(void)
{
    const char *list[] = {tp("tp_leak")};
    log_reset();
    CHECK_OK(run_session(list, 1, NULL, NULL, NULL));
    CHECK_EQ_INT(log_count("loaded 'tp_leak'", NULL, NULL), 1);
    /* Were the plugin unmapped, its thread would fault here. */
    sleep_ms(50);
    CHECK(1);
}

/* Records rewritten by a plugin thread while the host checks them. */
static void test_race(void)
{
#if defined(__SANITIZE_THREAD__)
    /* The plugin races with the host on purpose: TSan would (rightly)
     * report the plugin's bug. The other builds run it. */
    printf("note: TSan build, the racing-plugin case is not run\n");
    return;
#endif
    /* Not in ACT_TRACE_DIR: ~100k identical spans, no use to viewers. */
    char trace[600];
    snprintf(trace, sizeof trace, "%s/plugin_race.json", SCRATCH);
    const char *list[] = {tp("tp_race")};
    log_reset();
    CHECK_OK(run_session(list, 1, NULL, trace, NULL));
    json_t *root = trace_load(trace);
    CHECK_FATAL(root != NULL);
    /* Every span that was kept is the valid record, whole: name and arg
     * exactly as they are between the racer's rewrites. */
    size_t i, kept = 0, wrong = 0;
    json_t *ev;
    json_array_foreach(trace_events(root), i, ev) {
        const char *name = ev_str(ev, "name");
        if (!name || strncmp(name, "tp_racing", 9) != 0)
            continue;
        kept++;
        json_t *args = json_object_get(ev, "args");
        const char *v = ev_str(args, "key");
        if (strcmp(name, "tp_racing") != 0 || !v || strcmp(v, "value") != 0)
            wrong++;
    }
    CHECK(kept >= 10);
    CHECK_EQ_INT((long long)wrong, 0);
    /* Every emit is accounted for: kept, rejected or dropped. */
    json_t *pl = json_object_get(json_object_get(root, "actraceStats"),
                                 "plugins");
    json_t *p;
    long long rejected = -1, dropped = -1, filtered = -1;
    json_array_foreach(pl, i, p) {
        const char *nm = ev_str(p, "name");
        if (nm && strcmp(nm, "tp_race") == 0) {
            rejected = (long long)ev_int(p, "rejected");
            dropped = (long long)ev_int(p, "dropped");
            filtered = (long long)ev_int(p, "filtered");
        }
    }
    CHECK_EQ_INT((long long)kept + rejected + dropped + filtered,
                 200000 + 10);
    json_decref(root);
    unlink(trace);
}

int main(void)
{
    /* Without the bound, the hang test would never end: fail instead. */
    alarm(100);
    snprintf(scratch, sizeof scratch, "%s/tests/plugin/hardening.XXXXXX",
             ACT_BINARY_DIR);
    CHECK_FATAL(mkdtemp(scratch) != NULL);
    CHECK_OK(chmod(scratch, 0755));
    /* Helpers of plugin_test_util.h this test does not need. */
    (void)trace_count;
    (void)trace_process;
    (void)trace_thread;
    (void)trace_has_flow;
    log_start();
    test_log_text();
    test_symlink();
    test_hang();
    test_leaked_thread();
    test_race();
    act_log_set(NULL, NULL);
    rmdir(SCRATCH);
    CHECK_MAIN_END;
}
