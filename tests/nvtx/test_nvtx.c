/* SPDX-License-Identifier: MIT */
/*
 * The nvtx plugin end to end: nvtx_app (an NVTX-annotated program built
 * against the NVTX v3 headers only) run
 *  1. without actrace: same stdout, exit 0 (also with
 *     NVTX_INJECTION64_PATH pointing at nvtx.so but no session: the
 *     injection declines and NVTX turns into no-ops);
 *  2. under `actrace record --plugin nvtx`: every range, mark and arg of
 *     nvtx_app.c's list, with the right nesting, thread and name, and the
 *     plugin's counts (nvtx_stats) for the hostile calls;
 *  3. under `actrace record` with ACTRACE_PLUGINS=nvtx;
 *  4. under `actrace record --plugin nvtx` with a pre-set
 *     NVTX_INJECTION64_PATH: the plugin keeps it, says so, records none;
 *  5. the same with a libcupti path: the message names CUPTI.
 * `test_Nvtx threads` (NvtxThreads, also run under ASan and TSan) loads
 * the plugin into this process: four threads push, pop, mark and start
 * ranges that others end, all at once; then a second session in the same
 * process; then a 1 MiB budget (drops counted, recorded + dropped ==
 * attempted); then more overlapping start/end ranges than tracks; NVTX
 * calls after stop do nothing.
 * Traces are written to ACT_TRACE_DIR for the CI validators. Skipped (77)
 * when the NVTX headers (hence nvtx_app and nvtx.so) were not found.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"

#ifndef ACT_HAVE_NVTX
int main(void)
{
    CHECK_SKIP("NVTX v3 headers not found at configure time");
}
#else
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include <nvtx3/nvToolsExt.h>

#include "actrace/actrace.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"
#define WORK ACT_BINARY_DIR "/tests/nvtx"

static int run(const char *cmd)
{
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static json_t *load(const char *path)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root)
        fprintf(stderr, "%s:%d: %s\n", path, err.line, err.text);
    return root;
}

/* The one event named @p name with phase @p ph, or NULL (and a failure
 * if there are several). */
static json_t *find(json_t *events, const char *ph, const char *name)
{
    json_t *found = NULL, *ev;
    size_t i;
    int n = 0;
    json_array_foreach(events, i, ev) {
        const char *p = json_string_value(json_object_get(ev, "ph"));
        const char *nm = json_string_value(json_object_get(ev, "name"));
        if (p && nm && !strcmp(p, ph) && !strcmp(nm, name)) {
            found = ev;
            n++;
        }
    }
    if (n != 1)
        fprintf(stderr, "event %s '%s': found %d times\n", ph, name, n);
    return n == 1 ? found : NULL;
}

static json_int_t ival(json_t *ev, const char *key)
{
    return json_integer_value(json_object_get(ev, key));
}

static json_t *arg(json_t *ev, const char *key)
{
    return json_object_get(json_object_get(ev, "args"), key);
}

static const char *sarg(json_t *ev, const char *key)
{
    const char *s = json_string_value(arg(ev, key));
    return s ? s : "";
}

static double num(json_t *ev, const char *key)
{
    return json_number_value(json_object_get(ev, key));
}

/* The thread_name metadata of @p tid, or "". */
static const char *thread_name(json_t *events, json_int_t tid)
{
    json_t *ev;
    size_t i;
    json_array_foreach(events, i, ev) {
        const char *p = json_string_value(json_object_get(ev, "ph"));
        const char *nm = json_string_value(json_object_get(ev, "name"));
        if (p && nm && !strcmp(p, "M") && !strcmp(nm, "thread_name") &&
            ival(ev, "tid") == tid)
            return sarg(ev, "name");
    }
    return "";
}

/* @p in lies within @p out on the same thread. */
static int nested(json_t *out, json_t *in)
{
    return out && in && ival(out, "tid") == ival(in, "tid") &&
           num(in, "ts") >= num(out, "ts") &&
           num(in, "ts") + num(in, "dur") <= num(out, "ts") + num(out, "dur");
}

static void check_span(json_t *e)
{
    CHECK(e != NULL);
    if (e)
        CHECK_EQ_STR(json_string_value(json_object_get(e, "cat")),
                     "user_annotation");
}

static void check_full_trace(const char *path)
{
    json_t *root = load(path);
    CHECK_FATAL(root != NULL);
    json_t *ev = json_object_get(root, "traceEvents");

    json_t *outer = find(ev, "X", "outer"), *inner = find(ev, "X", "inner");
    check_span(outer);
    check_span(inner);
    CHECK(nested(outer, inner));
    json_int_t main_tid = outer ? ival(outer, "tid") : -1;
    CHECK_EQ_STR(sarg(inner, "category"), "io");
    CHECK_EQ_STR(sarg(inner, "color"), "#ff0000");
    CHECK_EQ_INT((int)json_integer_value(arg(inner, "payload")), 42);
    json_t *wide = find(ev, "X", "wide-\xc3\xbc");
    check_span(wide);
    CHECK(wide && ival(wide, "tid") == main_tid);
    CHECK(!nested(outer, wide));

    /* Marks: instants, every payload type. */
    json_t *m = find(ev, "i", "mark-a");
    CHECK(m && !strcmp(json_string_value(json_object_get(m, "cat")),
                       "cpu_instant_event"));
    CHECK(m && ival(m, "tid") == main_tid);
    CHECK(find(ev, "i", "mark-w") != NULL);
    m = find(ev, "i", "mark-u64");
    CHECK(m && json_integer_value(arg(m, "payload")) == 9000000000000000000ll);
    m = find(ev, "i", "mark-i32");
    CHECK(m && json_integer_value(arg(m, "payload")) == -5);
    m = find(ev, "i", "mark-u32");
    CHECK(m && json_integer_value(arg(m, "payload")) == 4000000000);
    m = find(ev, "i", "mark-double");
    CHECK(m && json_real_value(arg(m, "payload")) == 2.5);
    m = find(ev, "i", "mark-float");
    CHECK(m && json_real_value(arg(m, "payload")) == 0.25);

    /* Hostile strings. */
    check_span(find(ev, "X", "(null)"));
    check_span(find(ev, "X", "bad\xef\xbf\xbd\xef\xbf\xbdutf8"));

    /* Domain: registered string, category name, payload. */
    json_t *reg = find(ev, "X", "registered-name");
    check_span(reg);
    CHECK_EQ_STR(sarg(reg, "domain"), "mydomain");
    CHECK_EQ_STR(sarg(reg, "category"), "dom-cat");
    CHECK(reg && json_integer_value(arg(reg, "payload")) == 7);
    CHECK(reg && ival(reg, "tid") == main_tid);
    json_t *dr = find(ev, "X", "dom-range");
    check_span(dr);
    CHECK_EQ_STR(sarg(dr, "domain"), "mydomain");
    CHECK(dr && ival(dr, "tid") >= 0x40000000);
    json_t *dm = find(ev, "i", "dom-mark");
    CHECK_EQ_STR(sarg(dm, "domain"), "mydomain");
    /* A wild domain handle: the default domain, no "domain" arg. */
    json_t *wd = find(ev, "X", "wild-domain");
    check_span(wd);
    CHECK(wd && ival(wd, "tid") == main_tid && !arg(wd, "domain"));

    /* Workers: nested on their own threads; "cross" on the ranges track,
     * started by worker 1 and ended by worker 2. */
    json_t *w1 = find(ev, "X", "work-1"), *s1 = find(ev, "X", "step-1");
    json_t *w2 = find(ev, "X", "work-2"), *s2 = find(ev, "X", "step-2");
    check_span(w1);
    check_span(w2);
    CHECK(nested(w1, s1));
    CHECK(nested(w2, s2));
    CHECK(w1 && w2 && ival(w1, "tid") != ival(w2, "tid"));
    CHECK(w1 && ival(w1, "tid") != main_tid);
    json_t *cross = find(ev, "X", "cross");
    check_span(cross);
    CHECK(cross && ival(cross, "tid") >= 0x40000000);
    CHECK(cross && w1 &&
          json_integer_value(arg(cross, "start_tid")) == ival(w1, "tid"));
    CHECK(cross && w2 &&
          json_integer_value(arg(cross, "end_tid")) == ival(w2, "tid"));
    CHECK(cross && s1 && num(cross, "ts") >= num(s1, "ts"));
    CHECK(cross && s2 &&
          num(cross, "ts") + num(cross, "dur") <= num(s2, "ts") + num(s2, "dur"));

    /* Thread names: nvtxNameOsThread and the range track. */
    CHECK_EQ_STR(thread_name(ev, main_tid), "nvtx-main");
    CHECK_EQ_STR(thread_name(ev, w1 ? ival(w1, "tid") : -1), "worker-1");
    CHECK_EQ_STR(thread_name(ev, w2 ? ival(w2, "tid") : -1), "worker-2");
    CHECK_EQ_STR(thread_name(ev, cross ? ival(cross, "tid") : -1),
                 "NVTX ranges");

    /* The plugin's counts. */
    json_t *st = find(ev, "i", "nvtx_stats");
    CHECK_FATAL(st != NULL);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "spans")), 11);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "ranges")), 2);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "marks")), 11);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "bad_pops")), 2);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "bad_range_ends")), 0);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "open_at_stop")), 0);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "null_strings")), 4);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "bad_handles")), 3);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "bad_attributes")), 1);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "invalid_utf8")), 1);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "registered_strings")), 1);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "dropped")), 0);
    CHECK_EQ_INT((int)json_integer_value(arg(st, "injection_kept")), 0);
    CHECK((int)json_integer_value(arg(st, "nvtx_modules")) >= 1);
    json_decref(root);
}

/* ---- in process: threads, sessions in turn, budget ------------------- */

#define NT 4
#define ITER 3000
static nvtxRangeId_t ids[NT][ITER];
static _Atomic int started[NT]; /* ranges thread i has started */
static pthread_barrier_t barrier;
static nvtxDomainHandle_t domain;

/* Each thread nests, marks, starts ranges that the next thread ends (in
 * step, so that few overlap), and registers names now and then, all at
 * once with the others. */
static void *hammer(void *p)
{
    int i = (int)(intptr_t)p;
    for (int k = 0; k < ITER; k++) {
        nvtxRangePushA("outer");
        nvtxRangePushA("inner");
        nvtxMarkA("m");
        nvtxRangePop();
        nvtxRangePop();
        ids[i][k] = nvtxRangeStartA("r");
        atomic_store(&started[i], k + 1);
        int next = (i + 1) % NT;
        while (atomic_load(&started[next]) <= k)
            sched_yield();
        nvtxRangeEnd(ids[next][k]);
        if (k % 500 == 0) {
            nvtxDomainRegisterStringA(domain, "s");
            nvtxDomainCreateA("other");
            nvtxNameCategoryA((uint32_t)k, "c");
        }
    }
    pthread_barrier_wait(&barrier);
    return NULL;
}

static act_session *session(const char *cfgtext)
{
    static const char *const plugins[] = {ACT_BINARY_DIR "/plugins/nvtx.so"};
    act_config *cfg = NULL;
    act_parse_error err;
    CHECK_FATAL(act_config_parse(cfgtext, strlen(cfgtext), NULL, &cfg,
                                 &err) == 0);
    act_session_opts o;
    act_session_opts_init(&o);
    o.config = cfg;
    o.plugins = plugins;
    o.plugin_count = 1;
    act_session *s = NULL;
    CHECK_FATAL(act_session_create(&o, &s) == 0);
    act_config_destroy(cfg);
    CHECK_FATAL(act_session_start(s) == 0);
    return s;
}

static json_t *finish(act_session *s, const char *path)
{
    CHECK_OK(act_session_stop(s));
    /* After stop: no-ops, no crash. */
    nvtxRangePushA("late");
    nvtxRangePop();
    nvtxRangeEnd(ids[0][0]);
    nvtxMarkA("late");
    CHECK_OK(act_session_write(s, path));
    act_session_destroy(s);
    json_t *root = load(path);
    CHECK_FATAL(root != NULL);
    return root;
}

static int count(json_t *events, const char *ph, const char *name)
{
    int n = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *p = json_string_value(json_object_get(ev, "ph"));
        const char *nm = json_string_value(json_object_get(ev, "name"));
        n += p && nm && !strcmp(p, ph) && !strcmp(nm, name);
    }
    return n;
}

static json_int_t stat(json_t *events, const char *key)
{
    json_t *st = find(events, "i", "nvtx_stats");
    return st ? json_integer_value(arg(st, key)) : -1;
}

static int test_threads(void)
{
    unsetenv("NVTX_INJECTION64_PATH");
    CHECK_FATAL(run("mkdir -p " WORK " " ACT_TRACE_DIR) == 0);
    /* 1. Four threads at once. */
    act_session *s = session("");
    domain = nvtxDomainCreateA("threads");
    pthread_barrier_init(&barrier, NULL, NT);
    pthread_t th[NT];
    for (int i = 0; i < NT; i++)
        pthread_create(&th[i], NULL, hammer, (void *)(intptr_t)i);
    for (int i = 0; i < NT; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&barrier);
    json_t *root = finish(s, ACT_TRACE_DIR "/nvtx_threads.json");
    json_t *ev = json_object_get(root, "traceEvents");
    CHECK_EQ_INT(count(ev, "X", "outer"), NT * ITER);
    CHECK_EQ_INT(count(ev, "X", "inner"), NT * ITER);
    CHECK_EQ_INT(count(ev, "i", "m"), NT * ITER);
    CHECK_EQ_INT(count(ev, "X", "r"), NT * ITER);
    CHECK_EQ_INT(count(ev, "X", "late") + count(ev, "i", "late"), 0);
    CHECK_EQ_INT((int)stat(ev, "spans"), 2 * NT * ITER);
    CHECK_EQ_INT((int)stat(ev, "ranges"), NT * ITER);
    CHECK_EQ_INT((int)stat(ev, "bad_range_ends"), 0);
    CHECK_EQ_INT((int)stat(ev, "bad_pops"), 0);
    CHECK_EQ_INT((int)stat(ev, "dropped"), 0);
    CHECK_EQ_INT((int)stat(ev, "open_at_stop"), 0);
    /* Every range ended on the thread after the one that started it. */
    size_t i;
    json_t *e;
    int crossed = 0;
    json_array_foreach(ev, i, e) {
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (nm && !strcmp(nm, "r") &&
            json_integer_value(arg(e, "start_tid")) !=
                json_integer_value(arg(e, "end_tid")) &&
            ival(e, "tid") >= 0x40000000)
            crossed++;
    }
    CHECK_EQ_INT(crossed, NT * ITER);
    json_decref(root);

    /* 2. A second session in the same process: the first one's events and
     * range ids are gone. */
    s = session("");
    nvtxRangePushA("second");
    nvtxRangePop();
    nvtxRangeEnd(ids[1][1]);
    root = finish(s, ACT_TRACE_DIR "/nvtx_threads2.json");
    ev = json_object_get(root, "traceEvents");
    CHECK_EQ_INT(count(ev, "X", "second"), 1);
    CHECK_EQ_INT(count(ev, "X", "outer"), 0);
    CHECK_EQ_INT((int)stat(ev, "spans"), 1);
    CHECK_EQ_INT((int)stat(ev, "bad_range_ends"), 1);
    json_decref(root);

    /* 3. A 1 MiB budget: what does not fit is dropped and counted. */
    static char big[3001];
    memset(big, 'x', 3000);
    s = session("NVTX_MAX_BUFFER_MB = 1\n");
    for (int k = 0; k < 2000; k++) {
        nvtxRangePushA(big);
        nvtxRangePop();
    }
    root = finish(s, ACT_TRACE_DIR "/nvtx_budget.json");
    ev = json_object_get(root, "traceEvents");
    json_int_t spans = stat(ev, "spans"), dropped = stat(ev, "dropped");
    CHECK(dropped > 0);
    CHECK(spans > 0);
    CHECK_EQ_INT((int)(spans + dropped), 2000);
    CHECK_EQ_INT(count(ev, "X", big), (int)spans);
    CHECK_EQ_INT((int)stat(ev, "bad_range_ends"), 0); /* per recording */
    json_decref(root);

    /* 4. More start/end ranges open at once than there are tracks (1024):
     * the rest are counted, not drawn overlapping. Not in ACT_TRACE_DIR:
     * 1024 tracks of one slice each is no trace for the validators. */
    static nvtxRangeId_t many[1100];
    s = session("");
    for (int k = 0; k < 1100; k++)
        many[k] = nvtxRangeStartA("many");
    for (int k = 0; k < 1100; k++)
        nvtxRangeEnd(many[k]);
    root = finish(s, WORK "/nvtx_lanes.json");
    ev = json_object_get(root, "traceEvents");
    CHECK_EQ_INT(count(ev, "X", "many"), 1024);
    CHECK_EQ_INT((int)stat(ev, "ranges"), 1024);
    CHECK_EQ_INT((int)stat(ev, "dropped"), 76);
    CHECK_EQ_STR(thread_name(ev, 0x40000000 + 1023), "NVTX ranges (1024)");
    json_decref(root);
    CHECK_MAIN_END;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "threads"))
        return test_threads();
    unsetenv("ACTRACE_PLUGIN_DIR");
    unsetenv("ACTRACE_PLUGINS");
    unsetenv("NVTX_INJECTION64_PATH");
    CHECK_FATAL(run("mkdir -p " WORK " " ACT_TRACE_DIR) == 0);
    const char *app = WORK "/nvtx_app";
    char cmd[8192];

    /* 1. Unchanged without actrace. */
    snprintf(cmd, sizeof cmd, "%s >%s/plain.out 2>&1", app, WORK);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_EQ_STR(slurp(WORK "/plain.out"), "nvtx_app: done\n");
    snprintf(cmd, sizeof cmd,
             "NVTX_INJECTION64_PATH=%s/plugins/nvtx.so %s >%s/plain2.out 2>&1",
             ACT_BINARY_DIR, app, WORK);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_EQ_STR(slurp(WORK "/plain2.out"), "nvtx_app: done\n");

    /* 2. --plugin nvtx. */
    const char *t1 = ACT_TRACE_DIR "/nvtx_record.json";
    remove(t1);
    snprintf(cmd, sizeof cmd,
             "%s record --force -o %s --plugin nvtx -- %s >%s/rec.out 2>%s/rec.log",
             ACTRACE, t1, app, WORK, WORK);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_EQ_STR(slurp(WORK "/rec.out"), "nvtx_app: done\n");
    check_full_trace(t1);

    /* 3. ACTRACE_PLUGINS=nvtx. */
    const char *t2 = ACT_TRACE_DIR "/nvtx_env.json";
    remove(t2);
    snprintf(cmd, sizeof cmd,
             "ACTRACE_PLUGINS=nvtx %s record --force -o %s -- %s >%s/env.out 2>/dev/null",
             ACTRACE, t2, app, WORK);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_EQ_STR(slurp(WORK "/env.out"), "nvtx_app: done\n");
    check_full_trace(t2);

    /* 4. Somebody else's injection: kept, said so, nothing recorded. */
    /* Not in ACT_TRACE_DIR: a trace holding one instant and no span is
     * more than the importers of the CI validators can take. */
    const char *t3 = WORK "/nvtx_kept.json";
    remove(t3);
    snprintf(cmd, sizeof cmd,
             "NVTX_INJECTION64_PATH=%s/no-such-tool/libother.so %s record --force -o "
             "%s --plugin nvtx -- %s >%s/kept.out 2>%s/kept.log",
             WORK, ACTRACE, t3, app, WORK, WORK);
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_EQ_STR(slurp(WORK "/kept.out"), "nvtx_app: done\n");
    const char *log = slurp(WORK "/kept.log");
    CHECK(log && strstr(log, "NVTX_INJECTION64_PATH is already set") &&
          strstr(log, "libother.so"));
    json_t *root = load(t3);
    CHECK_FATAL(root != NULL);
    json_t *ev = json_object_get(root, "traceEvents");
    CHECK(find(ev, "X", "outer") == NULL);
    json_t *st = find(ev, "i", "nvtx_stats");
    CHECK(st && json_integer_value(arg(st, "injection_kept")) == 1);
    CHECK(st && json_integer_value(arg(st, "spans")) == 0);
    json_decref(root);

    /* 5. ... and when that injection is libcupti, the log says CUPTI. */
    snprintf(cmd, sizeof cmd,
             "NVTX_INJECTION64_PATH=%s/cuda/lib64/libcupti.so %s record --force -o "
             "%s/nvtx_cupti.json --plugin nvtx -- %s >%s/cupti.out "
             "2>%s/cupti.log",
             WORK, ACTRACE, WORK, app, WORK, WORK);
    CHECK_EQ_INT(run(cmd), 0);
    log = slurp(WORK "/cupti.log");
    CHECK(log && strstr(log, "libcupti: CUPTI turns NVTX into MARKER"));
    CHECK_MAIN_END;
}
#endif
