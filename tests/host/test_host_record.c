/* SPDX-License-Identifier: MIT */
/*
 * `actrace record --plugin host -- actrace-demo`: the plugin, loaded by
 * its bare name from the build tree, samples the demo. The trace must hold
 * the default counter tracks on the demo's process, with their series.
 * A config file sets a 10 ms interval so the short demo gets several
 * samples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <jansson.h>

#include "check.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define WORK ACT_BINARY_DIR "/tests/host"

/* C events named @p name; *pid receives the pid of the first one. Every
 * one must carry the numeric series @p key. */
static int count_counter(json_t *events, const char *name, const char *key,
                         json_int_t *pid)
{
    int n = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *nm = json_string_value(json_object_get(ev, "name"));
        if (!ph || strcmp(ph, "C") || !nm || strcmp(nm, name))
            continue;
        json_t *args = json_object_get(ev, "args");
        /* The demo records its own "memory" track (rss_mib): count ours. */
        if (!json_object_get(args, key))
            continue;
        CHECK(json_is_number(json_object_get(args, key)));
        if (!n)
            *pid = json_integer_value(json_object_get(ev, "pid"));
        n++;
    }
    return n;
}

int main(void)
{
    unsetenv("ACTRACE_PLUGIN_DIR");
    unsetenv("ACTRACE_PLUGINS");
    CHECK_FATAL(system("mkdir -p " WORK) == 0);
    FILE *f = fopen(WORK "/host.cfg", "w");
    CHECK_FATAL(f != NULL);
    fputs("HOST_COUNTER_INTERVAL_MSECS = 10\n", f);
    fclose(f);
    const char *trace = WORK "/record_host.json";
    remove(trace);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s record -c %s/host.cfg -o %s --plugin host -- "
             "%s/bin/actrace-demo >%s/record.log 2>&1",
             ACTRACE, WORK, trace, ACT_BINARY_DIR, WORK);
    int st = system(cmd);
    if (!CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0))
        if (system("cat " WORK "/record.log >&2") != 0)
            fprintf(stderr, "(no log)\n");

    json_error_t err;
    json_t *root = json_load_file(trace, 0, &err);
    if (!root)
        fprintf(stderr, "%s:%d: %s\n", trace, err.line, err.text);
    CHECK_FATAL(root != NULL);
    json_t *events = json_object_get(root, "traceEvents");
    json_int_t pcpu = -1, pmem = -2, pfault = -3, pcs = -4;
    CHECK(count_counter(events, "cpu", "user", &pcpu) >= 2);
    CHECK(count_counter(events, "cpu", "system", &pcpu) >= 2);
    /* The demo records its own "memory" track: the plugin's, on the same
     * process, is told apart by its source. */
    CHECK(count_counter(events, "memory [host]", "rss_bytes", &pmem) >= 2);
    CHECK_EQ_INT(count_counter(events, "memory", "rss_bytes", &pmem), 0);
    CHECK(count_counter(events, "page_faults", "minor", &pfault) >= 2);
    CHECK(count_counter(events, "context_switches", "voluntary", &pcs) >= 2);
    /* On the demo's process (not actrace's, not a device). */
    CHECK(pcpu > 0);
    CHECK_EQ_INT(pmem, pcpu);
    CHECK_EQ_INT(pfault, pcpu);
    CHECK_EQ_INT(pcs, pcpu);
    char *stats = json_dumps(json_object_get(root, "actraceStats"), 0);
    CHECK(stats && strstr(stats, "host.so"));
    free(stats);
    json_decref(root);
    CHECK_MAIN_END;
}
