/* SPDX-License-Identifier: MIT */
/*
 * The chunk pool of a program's own session (thread.c): recording reuses
 * pool memory whatever the trace's length (the helper thread drains sealed
 * chunks to the archive), a stalled drain gives exact counted drops under
 * BUFFER_FULL_POLICY = drop and none under wait, never a corrupt event,
 * and the chunks of exited threads come back to the pool (churn).
 * The stall is simulated with ACTRACE_TEST_DRAIN_DELAY_US (a slow disk).
 * No timing is asserted: a stalled drain is stalled until stop. Past the
 * RAM budget the archive goes to the spill file (SPILL_DIR): nothing is
 * lost, RAM stays within the budget, the file has no name, and the file's
 * bound (SPOOL_MAX_MB), SPILL_DIR = none and a directory that cannot take
 * the file all give exact counted drops instead.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "engine/engine.h"
#include "engine/trace_util.h"

static act_session *session_env(const char *cfg, const char *delay_us)
{
    if (delay_us)
        setenv("ACTRACE_TEST_DRAIN_DELAY_US", delay_us, 1);
    act_session *s = tu_session(cfg);
    unsetenv("ACTRACE_TEST_DRAIN_DELAY_US");
    return s;
}

static act_session_stats stats_of(act_session *s)
{
    act_session_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK_OK(act_session_get_stats(s, &st));
    return st;
}

static const char shape[] = "[[128, 256], [256, 64]]";

/* Spans i in [from, to) with args "i" = i and "shape": one event, all its
 * args or none. */
static void record_range(act_name_id n, long from, long to)
{
    for (long i = from; i < to; i++) {
        act_span_record_id(ACT_CPU_OP, n, 1000000 + 10 * i, 1000005 + 10 * i);
        act_arg_int("i", i);
        act_arg_str("shape", shape);
    }
}

/* The trace of @p s: every "pool span" has both args, i unique, times
 * matching i; returns how many there are (-1 if any is wrong). */
static long check_trace(act_session *s, const char *name, long n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/pool_%s_%d.json", ACT_BINARY_DIR, name, (int)getpid());
    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path), *e;
    size_t k;
    long seen = 0, bad = 0;
    unsigned char *got = calloc((size_t)n, 1);
    CHECK_FATAL(got != NULL);
    json_array_foreach(tu_events(root), k, e) {
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (!nm || strcmp(nm, "pool span") != 0)
            continue;
        json_t *a = json_object_get(e, "args");
        long long i = json_integer_value(json_object_get(a, "i"));
        const char *sh = json_string_value(json_object_get(a, "shape"));
        if (i < 0 || i >= n || got[i] || !sh || strcmp(sh, shape) != 0 ||
            json_object_size(a) != 2)
            bad++;
        else
            got[i] = 1;
        seen++;
    }
    free(got);
    json_decref(root);
    unlink(path);
    return bad ? -1 : seen;
}

static long minflt_thread(void)
{
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt;
}

/* Steady state: 2M spans (64 MB of records, 16x the pool) recorded into a
 * 4 MB pool written at create: after warm-up the recording thread takes
 * no page fault, the pool was never grown past its slots, and a span open
 * across the whole run (its chunk pinned) ends correctly. */
static void test_steady_state(void)
{
    act_session *s = session_env("BUFFER_POOL_MB = 4\nBUFFER_PREALLOC_MB = 4\n"
                                 "BUFFER_FULL_POLICY = wait\nMAX_BUFFER_SIZE_MB = 512\n",
                                 NULL);
    const long N = 2000000, WARM = 20000;
    act_name_id n = act_name("steady");
    for (long i = 0; i < WARM; i++)
        act_span_record_id(ACT_CPU_OP, n, 1000 + i, 1001 + i);
    /* Begun in a pool chunk, ended 2M spans later: its chunk must stay. */
    act_span_begin(ACT_USER_ANNOTATION, "outer");
    long f0 = minflt_thread();
    for (long i = WARM; i < N; i++)
        act_span_record_id(ACT_CPU_OP, n, 1000 + i, 1001 + i);
    long faults = minflt_thread() - f0;
    act_span_end();
    CHECK_OK(act_session_stop(s));
    uint64_t drained;
    uint32_t slots, touched;
    act__pool_counts(s, &drained, &slots, &touched);
    printf("steady state: %ld minor faults for %ld spans past warm-up; %u pool slots, "
           "%u touched, %llu chunks drained\n",
           faults, N - WARM, slots, touched, (unsigned long long)drained);
    CHECK_EQ_U64(slots, 64);
    CHECK(touched <= slots);
    /* 64 MB of records through 64 slots: nearly all were drained. */
    CHECK(drained + slots >= (uint64_t)(N * 32 / ACT__CHUNK_SIZE));
    /* Without the pool this is one fault per 4 KiB written (about 15000),
     * or whatever the pre-fault thread did not reach in time. Sanitizers
     * fault in their shadow of the records: not counted there. */
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
    CHECK(faults < 64);
#endif
    act_session_stats st = stats_of(s);
    CHECK_EQ_U64(st.recorded, (uint64_t)N + 1);
    CHECK_EQ_U64(st.dropped, 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/pool_steady_%d.json", ACT_BINARY_DIR, (int)getpid());
    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path);
    json_t *outer = tu_find(root, "X", "outer");
    CHECK(outer != NULL);
    CHECK(outer && tu_num(outer, "dur") > 0);
    /* Every span as recorded: 1 ns long (a recycled chunk written by a
     * late act_span_end would show as one that is not). */
    json_t *e;
    size_t k;
    long steady = 0, bad = 0;
    json_array_foreach(tu_events(root), k, e) {
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (!nm || strcmp(nm, "steady") != 0)
            continue;
        steady++;
        bad += tu_num(e, "dur") > 0.0015;
    }
    CHECK_EQ_INT(steady, N);
    CHECK_EQ_INT(bad, 0);
    json_decref(root);
    unlink(path);
    act_session_destroy(s);
}

/* @p n spans through a 1 MB pool (16 slots) whose drain waits @p delay_us
 * before each chunk, under @p policy (a config line, or "" for the
 * default), then stopped: the session in *@p sp, its stats returned. */
static act_session_stats stalled_run(act_session **sp, const char *policy, const char *delay_us,
                                     long n)
{
    char cfg[256];
    snprintf(cfg, sizeof cfg, "BUFFER_POOL_MB = 1\nBUFFER_PREALLOC_MB = 1\n%s", policy);
    act_session *s = session_env(cfg, delay_us);
    record_range(act_name("pool span"), 0, n);
    CHECK_OK(act_session_stop(s));
    *sp = s;
    return stats_of(s);
}

/* A drain stalled until stop, drop policy: the pool fills, the rest is
 * dropped, counted exactly, whole events (each kept one has both args). */
static void test_stalled_drop(void)
{
    act_session *s;
    const long N = 100000;
    act_session_stats st = stalled_run(&s, "BUFFER_FULL_POLICY = drop\n", "100000000", N);
    printf("stalled, drop: %llu recorded, %llu dropped, %llu args dropped\n",
           (unsigned long long)st.recorded, (unsigned long long)st.dropped,
           (unsigned long long)st.args_dropped);
    CHECK(st.dropped > 0);
    CHECK(st.recorded > 0);
    CHECK_EQ_U64(st.recorded + st.dropped, (uint64_t)N);
    CHECK_EQ_U64(st.args_recorded, 2 * st.recorded);
    CHECK_EQ_U64(st.args_dropped, 2 * st.dropped);
    uint64_t drained;
    uint32_t slots, touched;
    act__pool_counts(s, &drained, &slots, &touched);
    CHECK_EQ_U64(drained, 0);
    CHECK_EQ_INT(check_trace(s, "drop", N), (long)st.recorded);
    act_session_destroy(s);
}

/* The same stalled drain under the default policy (grow): past the pool,
 * chunks are carved from fresh memory as without a pool, within the same
 * budget; nothing is dropped and the trace is whole. */
static void test_stalled_grow(void)
{
    act_session *s;
    const long N = 100000;
    act_session_stats st = stalled_run(&s, "", "100000000", N);
    printf("stalled, grow: %llu recorded, %llu dropped\n", (unsigned long long)st.recorded,
           (unsigned long long)st.dropped);
    CHECK_EQ_U64(st.dropped, 0);
    CHECK_EQ_U64(st.recorded, (uint64_t)N);
    CHECK_EQ_U64(st.args_recorded, 2 * (uint64_t)N);
    /* More than the pool holds (1 MB: 16 slots) was recorded, none drained. */
    CHECK(st.bytes > ((uint64_t)2 << 20));
    uint64_t drained;
    uint32_t slots, touched;
    act__pool_counts(s, &drained, &slots, &touched);
    CHECK_EQ_U64(drained, 0);
    CHECK(touched <= slots);
    CHECK_EQ_INT(check_trace(s, "grow", N), N);
    act_session_destroy(s);
}

/* A slow drain (a slow disk), wait policy: nothing is dropped. */
static void test_stalled_wait(void)
{
    act_session *s;
    const long N = 100000;
    act_session_stats st = stalled_run(&s, "BUFFER_FULL_POLICY = wait\n", "300", N);
    CHECK_EQ_U64(st.recorded, (uint64_t)N);
    CHECK_EQ_U64(st.dropped, 0);
    CHECK_EQ_U64(st.args_recorded, (uint64_t)(2 * N));
    CHECK_EQ_INT(check_trace(s, "wait", N), N);
    act_session_destroy(s);
}

/* Thread churn: 48 threads one after another, each recording 6 chunks'
 * worth and exiting, through a 16-slot pool, wait policy: each exited
 * thread's tail comes back (otherwise 16 dead tails would empty the pool
 * and the rest would be dropped). */
#define CHURN_THREADS 48
#define CHURN_EACH 6000L

static void *churn_thread(void *arg)
{
    long k = (long)(intptr_t)arg;
    record_range(act_name("pool span"), k * CHURN_EACH, (k + 1) * CHURN_EACH);
    return NULL;
}

static void test_churn(void)
{
    act_session *s = session_env("BUFFER_POOL_MB = 1\nBUFFER_PREALLOC_MB = 1\n"
                                 "BUFFER_FULL_POLICY = wait\n", NULL);
    for (long k = 0; k < CHURN_THREADS; k++) {
        pthread_t th;
        CHECK_FATAL(pthread_create(&th, NULL, churn_thread, (void *)(intptr_t)k) == 0);
        pthread_join(th, NULL);
    }
    CHECK_OK(act_session_stop(s));
    act_session_stats st = stats_of(s);
    uint64_t drained;
    uint32_t slots, touched;
    act__pool_counts(s, &drained, &slots, &touched);
    printf("churn: %llu recorded, %llu dropped, %llu chunks drained through %u slots\n",
           (unsigned long long)st.recorded, (unsigned long long)st.dropped,
           (unsigned long long)drained, slots);
    CHECK_EQ_U64(st.dropped, 0);
    CHECK_EQ_U64(st.recorded, (uint64_t)(CHURN_THREADS * CHURN_EACH));
    CHECK(drained > slots);
    CHECK_EQ_INT(check_trace(s, "churn", CHURN_THREADS * CHURN_EACH), CHURN_THREADS * CHURN_EACH);
    act_session_destroy(s);
}

/* Files in @p dir (-1: cannot read it). */
static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

/* @p n spans with args through a 4 MB RAM budget and a 1 MB pool, wait
 * policy, spill file in @p dir (or the config line @p extra): stopped, in
 * *@p sp; its stats returned. */
static act_session_stats spill_run(act_session **sp, const char *extra, long n, long *rss_added)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "MAX_BUFFER_SIZE_MB = 4\nBUFFER_POOL_MB = 1\nBUFFER_PREALLOC_MB = 1\n"
             "BUFFER_FULL_POLICY = wait\n%s", extra);
    act_session *s = session_env(cfg, NULL);
    long r0 = rss_kib();
    record_range(act_name("pool span"), 0, n);
    CHECK_OK(act_session_stop(s));
    if (rss_added)
        *rss_added = rss_kib() - r0;
    *sp = s;
    return stats_of(s);
}

/* 400k spans (about 26 MB of records, 6x the RAM budget): all recorded,
 * the rest of the budget's worth spilled to the file, whose directory
 * shows no name; RAM held within the budget; the trace whole. */
static void test_spill_file(void)
{
    char dir[4096], line[4200];
    snprintf(dir, sizeof dir, "%s/pool_spill_%d", ACT_BINARY_DIR, (int)getpid());
    CHECK_FATAL(mkdir(dir, 0700) == 0);
    snprintf(line, sizeof line, "SPILL_DIR = %s\n", dir);
    act_session *s;
    const long N = 400000;
    long added = 0;
    act_session_stats st = spill_run(&s, line, N, &added);
    printf("spill file: %llu recorded, %llu dropped, %llu bytes in RAM, %llu spilled, "
           "RSS +%ld KiB\n", (unsigned long long)st.recorded, (unsigned long long)st.dropped,
           (unsigned long long)st.bytes, (unsigned long long)st.spilled, added);
    CHECK_EQ_U64(st.dropped, 0);
    CHECK_EQ_U64(st.recorded, (uint64_t)N);
    CHECK_EQ_U64(st.args_recorded, 2 * (uint64_t)N);
    CHECK(st.bytes <= ((uint64_t)4 << 20));
    CHECK(st.spilled >= ((uint64_t)16 << 20));
    /* The budget, the pool and some slack: not the 26 MB recorded
     * (sanitizers' shadow of the records is not). */
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
    CHECK(added < 12 * 1024);
#endif
    CHECK_EQ_INT(dir_entries(dir), 0);
    CHECK_EQ_INT(check_trace(s, "spill", N), N);
    act_session_destroy(s);
    CHECK_EQ_INT(dir_entries(dir), 0);
    rmdir(dir);
}

/* The file's bound: SPOOL_MAX_MB = 8 holds RAM and file together; past
 * it, exact counted drops of whole events. */
static void test_spill_bound(void)
{
    act_session *s;
    const long N = 400000;
    act_session_stats st = spill_run(&s, "SPOOL_MAX_MB = 8\n", N, NULL);
    printf("spill bound: %llu recorded, %llu dropped, %llu spilled\n",
           (unsigned long long)st.recorded, (unsigned long long)st.dropped,
           (unsigned long long)st.spilled);
    CHECK(st.spilled > 0);
    CHECK(st.dropped > 0);
    CHECK(st.bytes + st.spilled <= ((uint64_t)8 << 20));
    CHECK_EQ_U64(st.recorded + st.dropped, (uint64_t)N);
    CHECK_EQ_U64(st.args_recorded, 2 * st.recorded);
    CHECK_EQ_INT(check_trace(s, "spill_bound", N), (long)st.recorded);
    act_session_destroy(s);
}

/* The program closes the spill file's descriptor mid-run and puts a file
 * of its own at that number (dup2): not one byte goes into the program's
 * file; the rest is dropped, counted; what was recorded is whole. */
static void test_spill_fd_reused(void)
{
    act_session *s = session_env("MAX_BUFFER_SIZE_MB = 4\nBUFFER_POOL_MB = 1\n"
                                 "BUFFER_PREALLOC_MB = 1\nBUFFER_FULL_POLICY = wait\n", NULL);
    const long N = 400000;
    act_name_id n = act_name("pool span");
    record_range(n, 0, N / 2);
    /* The drain done with what was recorded (not between its check of the
     * descriptor and its write: no check can close that window). */
    act__pool_settle(s);
    /* The spill file: the one descriptor of 512 or above that names an
     * unlinked file. */
    int fd = -1;
    DIR *d = opendir("/proc/self/fd");
    CHECK_FATAL(d != NULL);
    for (struct dirent *e; (e = readdir(d));) {
        int k = atoi(e->d_name);
        char lp[64], tgt[4096];
        snprintf(lp, sizeof lp, "/proc/self/fd/%d", k);
        ssize_t m = readlink(lp, tgt, sizeof tgt - 1);
        if (k >= 512 && m > 0) {
            tgt[m] = '\0';
            if (strstr(tgt, "(deleted)"))
                fd = k;
        }
    }
    closedir(d);
    CHECK_FATAL(fd >= 512);
    char mine[4096];
    snprintf(mine, sizeof mine, "%s/pool_fd_reused_%d.txt", ACT_BINARY_DIR, (int)getpid());
    int own = open(mine, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK_FATAL(own >= 0);
    CHECK_FATAL(dup2(own, fd) == fd);
    close(own);
    record_range(n, N / 2, N);
    CHECK_OK(act_session_stop(s));
    act_session_stats st = stats_of(s);
    struct stat sb;
    CHECK_FATAL(fstat(fd, &sb) == 0);
    printf("spill fd reused: %llu recorded, %llu dropped, %llu spilled; the program's file: "
           "%lld bytes\n", (unsigned long long)st.recorded, (unsigned long long)st.dropped,
           (unsigned long long)st.spilled, (long long)sb.st_size);
    CHECK_EQ_U64((uint64_t)sb.st_size, 0);
    CHECK(st.spilled > 0);
    CHECK(st.dropped > 0);
    CHECK_EQ_U64(st.recorded + st.dropped, (uint64_t)N);
    CHECK_EQ_INT(check_trace(s, "spill_fd", N), (long)st.recorded);
    act_session_destroy(s);
    /* The descriptor is the program's: the session left it open. */
    CHECK(fcntl(fd, F_GETFD) >= 0);
    close(fd);
    unlink(mine);
}

/* No spill file (SPILL_DIR = none), or a directory that cannot take one:
 * as before the file, the budget drops what does not fit, counted. */
static void test_spill_off(const char *line, const char *name)
{
    act_session *s;
    const long N = 400000;
    act_session_stats st = spill_run(&s, line, N, NULL);
    printf("spill %s: %llu recorded, %llu dropped, %llu spilled\n", name,
           (unsigned long long)st.recorded, (unsigned long long)st.dropped,
           (unsigned long long)st.spilled);
    CHECK_EQ_U64(st.spilled, 0);
    CHECK(st.dropped > 0);
    CHECK(st.bytes <= ((uint64_t)4 << 20));
    CHECK_EQ_U64(st.recorded + st.dropped, (uint64_t)N);
    CHECK_EQ_INT(check_trace(s, name, N), (long)st.recorded);
    act_session_destroy(s);
}

int main(void)
{
    act_log_set_level(ACT_LOG_ERROR);
    test_steady_state();
    test_stalled_drop();
    test_stalled_grow();
    test_stalled_wait();
    test_churn();
    /* The spill file's mechanics with whole chunks in the archive, at the
     * sizes these tests were made for: as frames (frame.h) their 400k
     * events would fit the 4 MB budget. RecordFrame runs frames past a
     * budget into the spill file. */
    setenv("ACTRACE_TEST_ARCHIVE_RAW", "1", 1);
    test_spill_file();
    test_spill_bound();
    test_spill_fd_reused();
    test_spill_off("SPILL_DIR = none\n", "spill_none");
    test_spill_off("SPILL_DIR = /nonexistent/actrace-spill\n", "spill_baddir");
    unsetenv("ACTRACE_TEST_ARCHIVE_RAW");
    return check_done();
}
