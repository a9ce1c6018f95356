/* SPDX-License-Identifier: MIT */
/*
 * Names given as strings cost what interned ones cost (record.c,
 * name_ref): the written trace of a workload recorded with string names
 * equals the one recorded with act_name() ids, event for event (names,
 * types, args); a buffer reused with new text records the new text every
 * time; names made fresh for each event are copied as before and do not
 * fill the process's string table; repeated string names take no string
 * space in the buffers.
 */
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "engine/trace_util.h"

enum { N = 3000 };
static const char *const lits[3] = {"aten::matmul", "aten::add", "aten::relu"};

/* The workload, by id (@p by_id) or by string: scoped spans, given-time
 * spans and instants, with args, and names from a reused buffer. */
static void workload(int by_id)
{
    act_name_id ids[3];
    for (int k = 0; k < 3; k++)
        ids[k] = act_name(lits[k]);
    char buf[32];
    for (int i = 0; i < N; i++) {
        int k = i % 3;
        if (by_id)
            act_span_begin_id(ACT_CPU_OP, ids[k]);
        else
            act_span_begin(ACT_CPU_OP, lits[k]);
        act_arg_int("Sequence number", i);
        /* A writable buffer: one name for a while, then another. */
        snprintf(buf, sizeof buf, "buffer name %d", i / 500);
        if (by_id)
            act_instant_id(ACT_CPU_INSTANT_EVENT, act_name(buf));
        else
            act_instant(ACT_CPU_INSTANT_EVENT, buf);
        act_span_end();
    }
    /* The given-time spans after the scoped ones, so that none partially
     * overlaps another on the thread (the trace stays valid for the
     * viewers' lint, which checks every trace under build/traces). */
    int64_t t = act_now_ns() + 1000;
    for (int i = 0; i < N; i++, t += 1000) {
        int k = i % 3;
        if (by_id)
            act_span_record_id(ACT_USER_ANNOTATION, ids[(k + 1) % 3], t, t + 500);
        else
            act_span_record(ACT_USER_ANNOTATION, lits[(k + 1) % 3], t, t + 500);
    }
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The trace's events as "ph name cat args" lines in file order, without
 * times (the two runs' clocks differ), sorted. */
static char *events_text(const char *path)
{
    json_t *root = tu_load(path);
    CHECK_FATAL(root != NULL);
    json_t *evs = tu_events(root), *e;
    size_t i, cap = 1 << 20, len = 0;
    char *out = malloc(cap);
    out[0] = '\0';
    json_array_foreach(evs, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (!ph || (strcmp(ph, "X") != 0 && strcmp(ph, "i") != 0))
            continue;
        char *args = json_dumps(json_object_get(e, "args"), JSON_SORT_KEYS | JSON_COMPACT);
        const char *n = json_string_value(json_object_get(e, "name"));
        const char *cat = json_string_value(json_object_get(e, "cat"));
        size_t need = strlen(ph) + (n ? strlen(n) : 0) + (cat ? strlen(cat) : 0) +
                      (args ? strlen(args) : 0) + 8;
        if (len + need >= cap) {
            cap = 2 * (cap + need);
            out = realloc(out, cap);
        }
        len += (size_t)snprintf(out + len, cap - len, "%s %s %s %s\n", ph, n ? n : "", cat ? cat : "",
                                args ? args : "");
        free(args);
    }
    json_decref(root);
    /* In sorted order: the writer orders by time (the two runs' lines
     * compare as sets). */
    size_t nl = 0;
    for (char *p = out; *p; p++)
        nl += *p == '\n';
    char **lines = malloc((nl + 1) * sizeof *lines);
    size_t k = 0;
    for (char *p = out, *q; *p; p = q + 1) {
        q = strchr(p, '\n');
        *q = '\0';
        lines[k++] = p;
    }
    qsort(lines, k, sizeof *lines, cmp_line);
    char *sorted = malloc(len + 1), *w = sorted;
    for (size_t j = 0; j < k; j++)
        w += sprintf(w, "%s\n", lines[j]);
    *w = '\0';
    free(lines);
    free(out);
    return sorted;
}

static char *run(int by_id, uint64_t *bytes)
{
    act_session *s = tu_session("ACTIVITY_TYPES = cpu_op, user_annotation, cpu_instant_event\n");
    act_thread_name("names");
    workload(by_id);
    CHECK_EQ_INT(act_session_stop(s), 0);
    act_session_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    act_session_get_stats(s, &st);
    *bytes = st.bytes;
    CHECK_EQ_U64(st.dropped, 0);
    char path[4200];
    snprintf(path, sizeof path, "%s", tu_trace_path(by_id ? "names_by_id.json" : "names_by_str.json"));
    CHECK_EQ_INT(act_session_write(s, path), 0);
    act_session_destroy(s);
    return events_text(path);
}

int main(void)
{
    uint64_t b_id, b_str;
    char *a = run(1, &b_id);
    char *b = run(0, &b_str);
    CHECK(strlen(a) > 100);
    CHECK(strcmp(a, b) == 0); /* (not printed: megabytes) */
    /* A reused buffer keeps its text: each of its names, 500 times each. */
    for (int k = 0; k < N / 500; k++) {
        char line[64];
        snprintf(line, sizeof line, "i buffer name %d ", k);
        size_t c = 0;
        for (const char *p = b; (p = strstr(p, line)) != NULL; p++)
            c++;
        CHECK_EQ_INT(c, 500);
    }
    /* Repeated string names take no string space: the same buffer bytes
     * as by id, within a chunk's worth. */
    printf("buffer bytes: %llu by id, %llu by string\n", (unsigned long long)b_id,
           (unsigned long long)b_str);
    CHECK(b_str <= b_id + 65536);
    free(a);
    free(b);

    /* Names made fresh for each event are copied, not interned: the
     * table grows by one for the probe after them. */
    act_session *s = tu_session("");
    act_name_id before = act_name("names probe 1");
    char buf[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(buf, sizeof buf, "numbered %d", i);
        act_span_begin(ACT_CPU_OP, buf);
        act_span_end();
    }
    act_name_id after = act_name("names probe 2");
    CHECK_EQ_INT(after, before + 1);
    act_session_destroy(s);
    return check_done();
}
