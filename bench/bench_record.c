/* SPDX-License-Identifier: MIT */
/*
 * make bench: the recording and writing costs of the engine, each measured
 * against baselines taken in the same run (a clock read, a large memcpy),
 * so ratios stay meaningful on a noisy shared machine. The last line of
 * stdout is one JSON object with every number.
 *
 * Each figure is the best of several repetitions: the minimum is the
 * estimate least disturbed by other load.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "actrace/actrace.h"
#include "engine/engine.h"
#include "engine/frame.h"
#include "scoped_work.h"

#define REPS 5

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A started session with config @p text. */
static act_session *session_with(const char *text)
{
    act_config *cfg = NULL;
    act_parse_error err;
    if (act_config_parse(text, strlen(text), NULL, &cfg, &err) != 0) {
        fprintf(stderr, "bench: config: %s\n", err.message);
        exit(1);
    }
    act_session_opts o;
    act_session_opts_init(&o);
    o.config = cfg;
    act_session *s;
    if (act_session_create(&o, &s) != 0 || act_session_start(s) != 0) {
        fprintf(stderr, "bench: cannot start a session\n");
        exit(1);
    }
    act_config_destroy(cfg);
    return s;
}

/* The pre-faulted best case: a buffer large enough, 160 MB faulted in. */
static act_session *start_session(const char *extra)
{
    char text[256];
    snprintf(text, sizeof text, "MAX_BUFFER_SIZE_MB = 4096\nBUFFER_PREALLOC_MB = 160\n%s", extra ? extra : "");
    return session_with(text);
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile int64_t sink;

static double bench_clock(long n)
{
    double best = 1e9;
    for (int r = 0; r < REPS; r++) {
        double t0 = now_s();
        int64_t acc = 0;
        for (long i = 0; i < n; i++)
            acc += act_now_ns();
        sink = acc;
        double dt = (now_s() - t0) / (double)n * 1e9;
        if (dt < best)
            best = dt;
    }
    return best;
}

/* ns per event for one of the recording loops; a fresh session per rep so
 * the buffer never fills. */
enum kind { SPAN, SUPPLIED, SUPPLIED_ARGS2, COUNTER, KINETO2 };

static double run_loop(enum kind k, long n)
{
    act_name_id name = act_name("aten::matmul");
    static const char str20[] = "12345678901234567890";
    const int64_t base = act_now_ns(); /* supplied times must be near the clock */
    double t0 = now_s();
    switch (k) {
    case SPAN:
        for (long i = 0; i < n; i++) {
            act_span_begin_id(ACT_CPU_OP, name);
            act_span_end();
        }
        break;
    case SUPPLIED:
        for (long i = 0; i < n; i++)
            act_span_record_id(ACT_CPU_OP, name, base + i * 1000, base + i * 1000 + 500);
        break;
    case COUNTER:
        for (long i = 0; i < n; i++)
            act_counter("memory", "rss_bytes", (double)i);
        break;
    case KINETO2: {
        /* The two args Kineto puts on every op; shapes repeat. */
        static const char *const dims[4] = {"[[32, 64], [64, 128]]", "[[32, 128], [128]]",
                                            "[[1024, 1024], [1024, 1024]]", "[[32, 3, 224, 224]]"};
        for (long i = 0; i < n; i++) {
            act_span_record_id(ACT_CPU_OP, name, base + i * 1000, base + i * 1000 + 500);
            act_arg_int("Sequence number", i);
            act_arg_str("Input Dims", dims[i & 3]);
        }
        break;
    }
    case SUPPLIED_ARGS2:
        for (long i = 0; i < n; i++) {
            act_span_record_id(ACT_CPU_OP, name, base + i * 1000, base + i * 1000 + 500);
            act_arg_int("External id", i);
            act_arg_str("shape", str20);
        }
        break;
    }
    return (now_s() - t0) / (double)n * 1e9;
}

static double bench_record(enum kind k, long n)
{
    double best = 1e9;
    for (int r = 0; r < REPS; r++) {
        act_session *s = start_session(NULL);
        double dt = run_loop(k, n);
        act_session_stop(s);
        act_session_destroy(s);
        if (dt < best)
            best = dt;
    }
    return best;
}

typedef struct targ {
    long n;
    double ns;
} targ;

static void *span_thread(void *p)
{
    targ *a = p;
    a->ns = run_loop(SPAN, a->n);
    return NULL;
}

static double bench_span_2t(long n)
{
    double best = 1e9;
    for (int r = 0; r < REPS; r++) {
        act_session *s = start_session(NULL);
        pthread_t th[2];
        targ a[2] = {{n, 0}, {n, 0}};
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, span_thread, &a[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        act_session_stop(s);
        act_session_destroy(s);
        double dt = (a[0].ns + a[1].ns) / 2;
        if (dt < best)
            best = dt;
    }
    return best;
}

static double bench_memcpy(void)
{
    size_t n = 256u << 20;
    char *a = malloc(n), *b = malloc(n);
    if (!a || !b)
        return 0;
    memset(a, 1, n);
    memset(b, 2, n);
    double best = 1e9;
    for (int r = 0; r < REPS; r++) {
        double t0 = now_s();
        memcpy(b, a, n);
        double dt = now_s() - t0;
        if (dt < best)
            best = dt;
    }
    sink = b[n / 2];
    free(a);
    free(b);
    return (double)n / best / 1e9;
}

/*
 * Recording cost by trace length: Kineto's workload (cpu_op spans with
 * caller-supplied times, 0 or 2 args) under the default config (only
 * MAX_BUFFER_SIZE_MB raised so that 10M events fit), so the first
 * BUFFER_PREALLOC_MB are pre-faulted and the rest is not: this is what a
 * real run pays. Median and best of 5 (wall), median of the recording thread's CPU time (immune to other load on a shared machine); the recording thread's minor page faults
 * (getrusage RUSAGE_THREAD) per 1M events.
 */
typedef struct sweep_pt {
    long n;
    int args;
    double ns, best, cpu, faults_per_m, buf_per_event;
    uint64_t dropped;
    double spilled_mb;
} sweep_pt;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define SWEEP_REPS 5
static void sweep_one(sweep_pt *pt, const char *cfg)
{
    double ns[SWEEP_REPS], fl[SWEEP_REPS], cpu[SWEEP_REPS];
    for (int r = 0; r < SWEEP_REPS; r++) {
        act_session *s = session_with(cfg);
        struct rusage u0, u1;
        struct timespec c0, c1;
        getrusage(RUSAGE_THREAD, &u0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        ns[r] = run_loop(pt->args ? SUPPLIED_ARGS2 : SUPPLIED, pt->n);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        getrusage(RUSAGE_THREAD, &u1);
        cpu[r] = ((double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec)) / (double)pt->n;
        fl[r] = (double)(u1.ru_minflt - u0.ru_minflt) / ((double)pt->n / 1e6);
        act_session_stop(s);
        act_session_stats st;
        memset(&st, 0, sizeof st);
        st.struct_size = sizeof st;
        act_session_get_stats(s, &st);
        pt->dropped = st.dropped;
        pt->buf_per_event = (double)(st.bytes + st.spilled) / (double)pt->n;
        pt->spilled_mb = (double)st.spilled / 1048576.0;
        act_session_destroy(s);
    }
    qsort(ns, SWEEP_REPS, sizeof ns[0], cmp_d);
    qsort(fl, SWEEP_REPS, sizeof fl[0], cmp_d);
    qsort(cpu, SWEEP_REPS, sizeof cpu[0], cmp_d);
    pt->cpu = cpu[SWEEP_REPS / 2];
    pt->best = ns[0];
    pt->ns = ns[SWEEP_REPS / 2];
    pt->faults_per_m = fl[SWEEP_REPS / 2];
}

static void sweep(FILE *json)
{
    static sweep_pt pts[] = {{100000, 0, 0, 0, 0, 0, 0, 0, 0}, {1000000, 0, 0, 0, 0, 0, 0, 0, 0}, {10000000, 0, 0, 0, 0, 0, 0, 0, 0},
                             {100000, 2, 0, 0, 0, 0, 0, 0, 0}, {1000000, 2, 0, 0, 0, 0, 0, 0, 0}, {10000000, 2, 0, 0, 0, 0, 0, 0, 0}};
    const size_t np = sizeof pts / sizeof pts[0];
    printf("by length (default config, median (best) of 5):\n");
    /* ACT_BENCH_SWEEP_MAX=N: only lengths up to N (a quick look). */
    const char *mx = getenv("ACT_BENCH_SWEEP_MAX");
    long max_n = mx ? atol(mx) : 0;
    for (size_t i = 0; i < np; i++) {
        if (max_n > 0 && pts[i].n > max_n)
            continue;
        sweep_one(&pts[i], "MAX_BUFFER_SIZE_MB = 4096\n");
        printf("  %8ld events, %d args %8.2f (%6.2f) ns/event wall, %7.2f ns/event thread CPU  %8.1f faults/1M events  %6.1f buffer bytes/event%s\n",
               pts[i].n, pts[i].args, pts[i].ns, pts[i].best, pts[i].cpu, pts[i].faults_per_m, pts[i].buf_per_event,
               pts[i].dropped ? "  (DROPS)" : "");
    }
    printf("  10M/100k: %.2fx (0 args), %.2fx (2 args) wall; %.2fx, %.2fx thread CPU\n", pts[2].ns / pts[0].ns,
           pts[5].ns / pts[3].ns, pts[2].cpu / pts[0].cpu, pts[5].cpu / pts[3].cpu);
    /* Past the RAM budget: 10M events with 2 args (640 MB of records)
     * under a 64 MB budget, the rest spilled to SPILL_DIR by the drain,
     * under the default policy and under wait (recording at the disk's
     * pace, nothing dropped). */
    static const char *const spill_cfg[2] = {"MAX_BUFFER_SIZE_MB = 64\n",
                                             "MAX_BUFFER_SIZE_MB = 64\nBUFFER_FULL_POLICY = wait\n"};
    sweep_pt sp[2] = {{10000000, 2, 0, 0, 0, 0, 0, 0, 0}, {10000000, 2, 0, 0, 0, 0, 0, 0, 0}};
    int nsp = max_n > 0 && 10000000 > max_n ? 0 : 2;
    for (int k = 0; k < nsp; k++) {
        sweep_one(&sp[k], spill_cfg[k]);
        if (!k)
            printf("  past the RAM budget (MAX_BUFFER_SIZE_MB = 64; the drain spills the rest to "
                   "SPILL_DIR, so the disk sets the pace):\n");
        printf("  %8ld events, %d args %8.2f (%6.2f) ns/event wall, %7.2f ns/event thread CPU  %8.1f "
               "faults/1M events  %4.0f MB spilled  %s: %llu dropped\n",
               sp[k].n, sp[k].args, sp[k].ns, sp[k].best, sp[k].cpu, sp[k].faults_per_m,
               sp[k].spilled_mb, k ? "wait" : "grow (default)", (unsigned long long)sp[k].dropped);
    }
    fprintf(json, "{\"sweep\":[");
    for (size_t i = 0; i < np; i++)
        fprintf(json, "%s{\"events\":%ld,\"args\":%d,\"ns_per_event\":%.2f,\"best_ns_per_event\":%.2f,\"thread_cpu_ns_per_event\":%.2f,\"faults_per_1m\":%.1f,"
                "\"buffer_bytes_per_event\":%.1f,\"dropped\":%llu}", i ? "," : "", pts[i].n, pts[i].args,
                pts[i].ns, pts[i].best, pts[i].cpu, pts[i].faults_per_m, pts[i].buf_per_event, (unsigned long long)pts[i].dropped);
    fprintf(json, "],\"ratio_10m_100k_0\":%.3f,\"ratio_10m_100k_2\":%.3f", pts[2].ns / pts[0].ns,
            pts[5].ns / pts[3].ns);
    for (int k = 0; k < nsp; k++)
        fprintf(json, ",\"spill_%s\":{\"events\":%ld,\"args\":%d,\"ns_per_event\":%.2f,"
                "\"thread_cpu_ns_per_event\":%.2f,\"faults_per_1m\":%.1f,\"spilled_mb\":%.0f,"
                "\"dropped\":%llu}", k ? "wait" : "grow", sp[k].n, sp[k].args, sp[k].ns, sp[k].cpu,
                sp[k].faults_per_m, sp[k].spilled_mb, (unsigned long long)sp[k].dropped);
    fprintf(json, "}\n");
}

/*
 * The regime the numbers were taken in: what this machine charges for
 * writing 32-byte records into memory the process never wrote (4 KiB
 * pages, faulted on demand), into memory it wrote before, and into
 * transparent huge pages faulted on demand. Per 4 KiB page; best of 3.
 */
enum page_mode { PAGE_FRESH, PAGE_REUSED, PAGE_THP };

static void write_records(char *p, size_t bytes)
{
    uint64_t *w = (uint64_t *)(void *)p;
    for (size_t i = 0; i < bytes / 32; i++) {
        w[4 * i] = i;
        w[4 * i + 1] = i * 3;
        w[4 * i + 2] = i ^ 7;
        w[4 * i + 3] = 0;
    }
    __asm__ volatile("" ::"r"(p) : "memory");
}

static double page_cost(enum page_mode m)
{
    const size_t SZ = (size_t)64 << 20, HUGE = (size_t)2 << 20;
    double best = 1e12;
    for (int r = 0; r < 3; r++) {
        char *map = mmap(NULL, SZ + HUGE, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED)
            return -1;
        char *p = (char *)(((uintptr_t)map + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
#ifdef MADV_HUGEPAGE
        madvise(p, SZ, m == PAGE_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#endif
        if (m == PAGE_REUSED)
            write_records(p, SZ);
        double t0 = now_s();
        write_records(p, SZ);
        double dt = (now_s() - t0) / (double)(SZ / 4096) * 1e9;
        munmap(map, SZ + HUGE);
        if (dt < best)
            best = dt;
    }
    return best;
}

/*
 * The scoped path next to its floor, in one run (interleaved rounds,
 * medians): two counter reads and a 32-byte store into memory written
 * before (what any span with its own timestamps must do at least); the
 * scoped span with an interned name and with a string name, without and
 * with Kineto's two args; the same on the clock (HOST_CLOCK = monotonic).
 * Then act_session_stop per recorded event (1M spans, string names, 2
 * args: median and worst of 5) and the memory per kept event (RSS at 3M
 * less RSS at 100k spans).
 */
enum scoped_kind { SC_FLOOR, SC_FLOOR_CLOCK, SC_ID, SC_STR, SC_ID_ARGS2, SC_STR_ARGS2, SC_ID_CLOCK, SC_N };
static const char *const sc_names[SC_N] = {
    "floor: 2 counter reads + 32B store", "floor: 2 clock_gettime + 32B store",
    "scoped, interned name", "scoped, string name",
    "scoped, interned + 2 args", "scoped, string name + 2 args", "scoped, interned, HOST_CLOCK=monotonic"};

static double scoped_once(enum scoped_kind k, long n)
{
    act_session *s = NULL;
    static uint64_t ring[4 * 2048];
    if (k != SC_FLOOR && k != SC_FLOOR_CLOCK)
        s = start_session(k == SC_ID_CLOCK ? "HOST_CLOCK = monotonic\n" : NULL);
    act_name_id name = act_name("aten::matmul");
    act_key_id seq = act_key("Sequence number"), dims = act_key("Input Dims");
    /* The thread's CPU time: what the calls cost, not the other load of a
     * shared machine (which wall time would count). */
    double t0 = thread_cpu_s();
    switch (k) {
    case SC_FLOOR:
        scoped_floor_loop(n, name);
        break;
    case SC_FLOOR_CLOCK:
        for (long i = 0; i < n; i++) {
            int64_t a = act_now_ns(), b = act_now_ns();
            uint64_t *w = &ring[(i & 2047) * 4];
            w[0] = (uint64_t)a;
            w[1] = (uint64_t)b;
            w[2] = (uint64_t)i;
            w[3] = name;
            __asm__ volatile("" ::"r"(w) : "memory");
        }
        break;
    case SC_ID:
    case SC_ID_CLOCK:
        scoped_id_loop(n, name);
        break;
    case SC_STR:
        scoped_str_loop(n);
        break;
    case SC_ID_ARGS2:
        scoped_id_args2_loop(n, name, seq, dims);
        break;
    case SC_STR_ARGS2:
        scoped_str_args2_loop(n);
        break;
    case SC_N: break;
    }
    double dt = (thread_cpu_s() - t0) / (double)n * 1e9;
    if (s) {
        act_session_stop(s);
        act_session_destroy(s);
    }
    return dt;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* RSS growth (KiB) of a session that kept @p n spans (default config,
 * the budget raised to hold them), measured before its stop. */
static long kept_rss(long n, int args, int strnames)
{
    char cfg[64];
    snprintf(cfg, sizeof cfg, "MAX_BUFFER_SIZE_MB = 1024\n");
    long r0 = rss_kb();
    act_session *s = session_with(cfg);
    act_name_id name = act_name("aten::matmul");
    act_key_id seq = act_key("Sequence number"), dims = act_key("Input Dims");
    for (long i = 0; i < n; i++) {
        if (strnames) {
            act_span_begin(ACT_CPU_OP, "aten::matmul");
            if (args) {
                act_arg_int("Sequence number", i);
                act_arg_str("Input Dims", "12345678901234567890");
            }
        } else {
            act_span_begin_id(ACT_CPU_OP, name);
            if (args) {
                act_arg_int_k(seq, i);
                act_arg_str_k(dims, "12345678901234567890");
            }
        }
        act_span_end();
    }
    long r1 = rss_kb();
    act_session_stop(s);
    act_session_destroy(s);
    return r1 - r0;
}

/* A carve for act__frame_node that reuses one buffer (the encode cost
 * alone). */
static void *bench_carve(void *arg, size_t bytes)
{
    (void)bytes;
    return arg;
}

/* Thread CPU ns per event the drain's encode takes (act__frame_node) over
 * the chunks of a stopped session that kept whole copies. */
static double encode_cost(int args)
{
    setenv("ACTRACE_TEST_ARCHIVE_RAW", "1", 1);
    act_session *s = session_with("MAX_BUFFER_SIZE_MB = 1024\n");
    unsetenv("ACTRACE_TEST_ARCHIVE_RAW");
    act_name_id name = act_name("aten::matmul");
    act_key_id seq = act_key("Sequence number"), dims = act_key("Input Dims");
    const long n = 1000000;
    for (long i = 0; i < n; i++) {
        act_span_begin_id(ACT_CPU_OP, name);
        if (args) {
            act_arg_int_k(seq, i);
            act_arg_str_k(dims, "12345678901234567890");
        }
        act_span_end();
    }
    act_session_stop(s);
    static _Alignas(64) char node[ACT__CHUNK_SIZE];
    uint8_t *scratch = NULL;
    size_t scap = 0;
    double best = 1e9;
    for (int r = 0; r < 3; r++) {
        double t0 = thread_cpu_s();
        for (act__thread *t = s->threads; t; t = t->next)
            for (act__chunk *c = t->head; c; c = atomic_load(&c->next))
                if (!act__frame_node(c, &scratch, &scap, bench_carve, node))
                    fprintf(stderr, "bench: a chunk not framed\n");
        double dt = (thread_cpu_s() - t0) / (double)n * 1e9;
        if (dt < best)
            best = dt;
    }
    free(scratch);
    act_session_destroy(s);
    return best;
}

/*
 * The archive: frames (frame.h) against whole copies (the drain as it
 * was: ACTRACE_TEST_ARCHIVE_RAW), interleaved in one run, medians of 3:
 * memory per kept event (RSS at 3M less at 100k, interned, without and
 * with 2 args), whether 3M spans with 2 args under the default config
 * spill, stop per event and the write speed (1M spans with 2 args), and
 * the encode's cost per event on the drain thread.
 */
static void archive_report(void)
{
    enum { R = 3 };
    static const char *const mname[2] = {"whole copies (before)", "frames"};
    double mem0[2][R], mem2[2][R], stopv[2][R], wj[2][R], wp[2][R], wj0[2][R], wp0[2][R];
    unsigned long long spilled[2][R];
    static const char str20[] = "12345678901234567890";
    for (int r = 0; r < R; r++)
        for (int m = 0; m < 2; m++) {
            if (m == 0)
                setenv("ACTRACE_TEST_ARCHIVE_RAW", "1", 1);
            long a0 = kept_rss(100000, 0, 0), b0 = kept_rss(3000000, 0, 0);
            long a2 = kept_rss(100000, 2, 0), b2 = kept_rss(3000000, 2, 0);
            mem0[m][r] = (double)(b0 - a0) * 1024.0 / 2900000.0;
            mem2[m][r] = (double)(b2 - a2) * 1024.0 / 2900000.0;
            /* Default config, 3M spans with 2 args: a spill file? */
            act_session *s = session_with("");
            act_name_id name = act_name("aten::matmul");
            act_key_id seq = act_key("Sequence number"), dims = act_key("Input Dims");
            for (long i = 0; i < 3000000; i++) {
                act_span_begin_id(ACT_CPU_OP, name);
                act_arg_int_k(seq, i);
                act_arg_str_k(dims, str20);
                act_span_end();
            }
            act_session_stop(s);
            act_session_stats st;
            memset(&st, 0, sizeof st);
            st.struct_size = sizeof st;
            act_session_get_stats(s, &st);
            spilled[m][r] = (unsigned long long)st.spilled;
            act_session_destroy(s);
            /* Stop and write: 1M spans with 2 args (stop measured), then
             * 1M without args. */
            const long N = 1000000;
            for (int na = 2; na >= 0; na -= 2) {
                s = session_with("MAX_BUFFER_SIZE_MB = 1024\n");
                for (long i = 0; i < N; i++) {
                    act_span_begin_id(ACT_CPU_OP, name);
                    if (na) {
                        act_arg_int_k(seq, i);
                        act_arg_str_k(dims, str20);
                    }
                    act_span_end();
                }
                double t0 = now_s();
                act_session_stop(s);
                if (na)
                    stopv[m][r] = (now_s() - t0) / (double)N * 1e9;
                for (int f = 0; f < 2; f++) {
                    char path[64];
                    snprintf(path, sizeof path, "/tmp/act_bench_arch_%d%s", (int)getpid(),
                             f ? ".pftrace" : ".json");
                    unlink(path);
                    t0 = now_s();
                    if (act_session_write(s, path) != 0)
                        fprintf(stderr, "bench: write: %s\n", act_session_errmsg(s));
                    double ev_s = (double)N / (now_s() - t0);
                    if (na)
                        (f ? wp : wj)[m][r] = ev_s;
                    else
                        (f ? wp0 : wj0)[m][r] = ev_s;
                    unlink(path);
                }
                act_session_destroy(s);
            }
            unsetenv("ACTRACE_TEST_ARCHIVE_RAW");
        }
    printf("archive, medians of %d interleaved rounds:\n", R);
    for (int m = 0; m < 2; m++) {
        qsort(mem0[m], R, sizeof(double), cmp_d);
        qsort(mem2[m], R, sizeof(double), cmp_d);
        qsort(stopv[m], R, sizeof(double), cmp_d);
        qsort(wj[m], R, sizeof(double), cmp_d);
        qsort(wp[m], R, sizeof(double), cmp_d);
        qsort(wj0[m], R, sizeof(double), cmp_d);
        qsort(wp0[m], R, sizeof(double), cmp_d);
        printf("  %-22s memory per kept event %.1f B (no args), %.1f B (2 args); 3M with 2 args, "
               "default config: spilled %llu, %llu, %llu bytes; stop %.2f ns/event; write "
               "(2 args) %.2f M events/s .json, %.2f M events/s .pftrace; write (no args) "
               "%.2f M events/s .json, %.2f M events/s .pftrace\n",
               mname[m], mem0[m][R / 2], mem2[m][R / 2], spilled[m][0], spilled[m][1],
               spilled[m][2], stopv[m][R / 2], wj[m][R / 2] / 1e6, wp[m][R / 2] / 1e6,
               wj0[m][R / 2] / 1e6, wp0[m][R / 2] / 1e6);
    }
    printf("  frames over whole copies: write (2 args) %.2fx .json, %.2fx .pftrace; (no args) "
           "%.2fx .json, %.2fx .pftrace\n",
           wj[1][R / 2] / wj[0][R / 2], wp[1][R / 2] / wp[0][R / 2], wj0[1][R / 2] / wj0[0][R / 2],
           wp0[1][R / 2] / wp0[0][R / 2]);
    printf("  encode on the drain thread: %.2f ns/event (no args), %.2f ns/event (2 args)\n",
           encode_cost(0), encode_cost(2));
}

static void scoped_report(FILE *json)
{
    const long N = 1000000;
    enum { R = 5 };
    double v[SC_N][R];
    for (int r = 0; r < R; r++)
        for (int k = 0; k < SC_N; k++)
            v[k][r] = scoped_once((enum scoped_kind)k, N);
    double med[SC_N];
    for (int k = 0; k < SC_N; k++) {
        qsort(v[k], R, sizeof v[k][0], cmp_d);
        med[k] = v[k][R / 2];
    }
    printf("scoped spans, 1M events, thread CPU, median of %d interleaved rounds:\n", R);
    for (int k = 0; k < SC_N; k++)
        printf("  %-40s %7.2f ns  (%.2fx the floor)\n", sc_names[k], med[k], med[k] / med[SC_FLOOR]);
    /* Stop per event: 1M string-named spans with 2 args. */
    double stop[R];
    for (int r = 0; r < R; r++) {
        act_session *s = session_with("MAX_BUFFER_SIZE_MB = 1024\n");
        for (long i = 0; i < N; i++) {
            act_span_begin(ACT_CPU_OP, "aten::matmul");
            act_arg_int("Sequence number", i);
            act_arg_str("Input Dims", "12345678901234567890");
            act_span_end();
        }
        double t0 = now_s();
        act_session_stop(s);
        stop[r] = (now_s() - t0) / (double)N * 1e9; /* wall: stop waits */
        act_session_destroy(s);
    }
    qsort(stop, R, sizeof stop[0], cmp_d);
    printf("  act_session_stop per event (1M, string names, 2 args): median %.2f ns, worst %.2f ns\n",
           stop[R / 2], stop[R - 1]);
    long m0a = kept_rss(100000, 0, 0), m0b = kept_rss(3000000, 0, 0);
    long m2a = kept_rss(100000, 2, 0), m2b = kept_rss(3000000, 2, 0);
    double pe0 = (double)(m0b - m0a) * 1024.0 / 2900000.0, pe2 = (double)(m2b - m2a) * 1024.0 / 2900000.0;
    printf("  memory per kept event (RSS at 3M - RSS at 100k, interned): %.1f B (no args), %.1f B (2 args)\n",
           pe0, pe2);
    /* The same with string names and string keys (act_span_begin,
     * act_arg_int/act_arg_str): a repeated literal costs what an id does. */
    long s2a = kept_rss(100000, 2, 1), s2b = kept_rss(3000000, 2, 1);
    double ps2 = (double)(s2b - s2a) * 1024.0 / 2900000.0;
    printf("  memory per kept event, string names and keys, 2 args: %.1f B (%.2fx interned)\n",
           ps2, ps2 / pe2);
    fprintf(json, "{\"scoped_floor_ns\":%.2f,\"scoped_floor_clock_ns\":%.2f,\"scoped_id_ns\":%.2f,\"scoped_str_ns\":%.2f,"
            "\"scoped_id_args2_ns\":%.2f,\"scoped_str_args2_ns\":%.2f,\"scoped_id_clock_ns\":%.2f,"
            "\"scoped_id_over_floor\":%.3f,\"stop_ns_per_event_median\":%.2f,\"stop_ns_per_event_worst\":%.2f,"
            "\"kept_bytes_per_event_0\":%.1f,\"kept_bytes_per_event_2\":%.1f,"
            "\"kept_bytes_per_event_str_2\":%.1f}\n",
            med[SC_FLOOR], med[SC_FLOOR_CLOCK], med[SC_ID], med[SC_STR], med[SC_ID_ARGS2], med[SC_STR_ARGS2], med[SC_ID_CLOCK],
            med[SC_ID] / med[SC_FLOOR], stop[R / 2], stop[R - 1], pe0, pe2, ps2);
}

int main(void)
{
    if (getenv("ACT_BENCH_SCOPED_ONLY")) {
        act_log_set_level(ACT_LOG_ERROR);
        scoped_report(stdout);
        return 0;
    }
    if (getenv("ACT_BENCH_ARCHIVE_ONLY")) {
        act_log_set_level(ACT_LOG_ERROR);
        archive_report();
        return 0;
    }
    if (getenv("ACT_BENCH_SWEEP_ONLY")) {
        act_log_set_level(ACT_LOG_ERROR);
        sweep(stdout);
        return 0;
    }
    const long N = 2000000;
    const long EVENTS = 1000000;
    act_log_set_level(ACT_LOG_ERROR);
    double clock_ns = bench_clock(N);
    double span_ns = bench_record(SPAN, N);
    double span2_ns = bench_span_2t(N / 2);
    double supplied_ns = bench_record(SUPPLIED, N);
    double args2_ns = bench_record(SUPPLIED_ARGS2, N);
    double counter_ns = bench_record(COUNTER, N);
    sweep(stderr); /* stdout's last line stays the one summary object */
    scoped_report(stderr);
    archive_report();

    /* Memory per recorded span, and writing 1,000,000 spans: argless and
     * with Kineto's two args, as JSON and as Perfetto's protobuf. Each
     * session is written in both formats, alternately, so that both see
     * the same load; wall time and the writing thread's CPU time (which
     * includes the kernel's copying into the page cache), best of 5. */
    double buf_per_event = 0;
    struct wcase {
        enum kind k;
        const char *ext;
        double best_s, best_cpu_s;
        long long bytes;
    } wc[] = {{SUPPLIED, ".json", 1e9, 1e9, 0}, {SUPPLIED, ".pftrace", 1e9, 1e9, 0},
              {KINETO2, ".json", 1e9, 1e9, 0}, {KINETO2, ".pftrace", 1e9, 1e9, 0}};
    for (size_t c = 0; c < sizeof wc / sizeof wc[0]; c += 2) {
        act_session *s = start_session(NULL);
        run_loop(wc[c].k, EVENTS);
        act_session_stop(s);
        act_session_stats st;
        memset(&st, 0, sizeof st);
        st.struct_size = sizeof st;
        act_session_get_stats(s, &st);
        if (c == 0)
            buf_per_event = (double)st.bytes / (double)st.recorded;
        for (int r = 0; r < 5; r++) {
            for (size_t f = c; f < c + 2; f++) {
                char path[64];
                snprintf(path, sizeof path, "/tmp/act_bench_%d%s", (int)getpid(), wc[f].ext);
                /* Time the write, not the kernel freeing the previous
                 * file's pages (which a rename over it would do inside
                 * the timed region). */
                unlink(path);
                double t0 = now_s(), c0 = thread_cpu_s();
                if (act_session_write(s, path) != 0) {
                    fprintf(stderr, "bench: write: %s\n", act_session_errmsg(s));
                    return 1;
                }
                double dt = now_s() - t0, dc = thread_cpu_s() - c0;
                if (dt < wc[f].best_s)
                    wc[f].best_s = dt;
                if (dc < wc[f].best_cpu_s)
                    wc[f].best_cpu_s = dc;
                struct stat sb;
                stat(path, &sb);
                wc[f].bytes = (long long)sb.st_size;
                unlink(path);
            }
        }
        act_session_destroy(s);
    }
    double write_best = wc[0].best_s;
    long long file_bytes = wc[0].bytes;
#define WNS(c) (wc[c].best_s / (double)EVENTS * 1e9)
#define WCPU(c) (wc[c].best_cpu_s / (double)EVENTS * 1e9)
#define WB(c) ((double)wc[c].bytes / (double)EVENTS)
    double memcpy_gbs = bench_memcpy();
    double write_ns = write_best / (double)EVENTS * 1e9;

    double fresh_page = page_cost(PAGE_FRESH), reused_page = page_cost(PAGE_REUSED),
           thp_page = page_cost(PAGE_THP);
    printf("memory, fresh 4K page   %8.1f ns/page  (%.2f ns per 32-byte record)\n", fresh_page,
           fresh_page / 128);
    printf("memory, reused page     %8.1f ns/page  (%.2f ns per 32-byte record)\n", reused_page,
           reused_page / 128);
    printf("memory, THP on demand   %8.1f ns/page  (%.2f ns per 32-byte record)\n", thp_page,
           thp_page / 128);
    printf("clock read              %8.2f ns\n", clock_ns);
    printf("span begin+end (1t)     %8.2f ns  (%.2fx two clock reads)\n", span_ns, span_ns / (2 * clock_ns));
    printf("span begin+end (2t)     %8.2f ns/event\n", span2_ns);
    printf("span, supplied times    %8.2f ns\n", supplied_ns);
    printf("  + int + 20B str args  %8.2f ns\n", args2_ns);
    printf("counter sample (clock)  %8.2f ns\n", counter_ns);
    printf("write                   %8.2f ns/event, %.1f MB/s\n", write_ns, (double)file_bytes / write_best / 1e6);
    printf("file                    %8.1f bytes/event\n", (double)file_bytes / EVENTS);
    printf("buffer                  %8.1f bytes/event\n", buf_per_event);
    printf("write, argless span     JSON %6.2f ns/event %6.1f B/event | pftrace %6.2f ns/event "
           "%6.1f B/event (%.2fx faster, %.2fx smaller)\n",
           WNS(0), WB(0), WNS(1), WB(1), WNS(0) / WNS(1), WB(0) / WB(1));
    printf("  thread CPU            JSON %6.2f ns/event          | pftrace %6.2f ns/event "
           "          (%.2fx faster)\n", WCPU(0), WCPU(1), WCPU(0) / WCPU(1));
    printf("write, Kineto's 2 args  JSON %6.2f ns/event %6.1f B/event | pftrace %6.2f ns/event "
           "%6.1f B/event (%.2fx faster, %.2fx smaller)\n",
           WNS(2), WB(2), WNS(3), WB(3), WNS(2) / WNS(3), WB(2) / WB(3));
    printf("  thread CPU            JSON %6.2f ns/event          | pftrace %6.2f ns/event "
           "          (%.2fx faster)\n", WCPU(2), WCPU(3), WCPU(2) / WCPU(3));
    printf("memcpy                  %8.2f GB/s\n", memcpy_gbs);
    printf("{\"record_span_ns\":%.2f,\"record_span_ns_2t\":%.2f,\"record_supplied_ns\":%.2f,"
           "\"record_supplied_args2_ns\":%.2f,\"record_counter_ns\":%.2f,\"clock_read_ns\":%.2f,\"span_over_2clock\":%.3f,"
           "\"write_ns_per_event\":%.2f,\"write_mb_s\":%.1f,\"bytes_per_event\":%.1f,"
           "\"buffer_bytes_per_event\":%.1f,\"memcpy_gb_s\":%.2f,\"events\":%ld,"
           "\"json_write_ns\":%.2f,\"json_bytes\":%.1f,\"pftrace_write_ns\":%.2f,\"pftrace_bytes\":%.1f,"
           "\"json_args2_write_ns\":%.2f,\"json_args2_bytes\":%.1f,"
           "\"pftrace_args2_write_ns\":%.2f,\"pftrace_args2_bytes\":%.1f,"
           "\"json_write_cpu_ns\":%.2f,\"pftrace_write_cpu_ns\":%.2f,"
           "\"json_args2_write_cpu_ns\":%.2f,\"pftrace_args2_write_cpu_ns\":%.2f,"
           "\"page_fresh_ns\":%.1f,\"page_reused_ns\":%.1f,\"page_thp_ns\":%.1f}\n",
           span_ns, span2_ns, supplied_ns, args2_ns, counter_ns, clock_ns, span_ns / (2 * clock_ns), write_ns,
           (double)file_bytes / write_best / 1e6, (double)file_bytes / EVENTS, buf_per_event,
           memcpy_gbs, EVENTS, WNS(0), WB(0), WNS(1), WB(1), WNS(2), WB(2), WNS(3), WB(3),
           WCPU(0), WCPU(1), WCPU(2), WCPU(3),
           fresh_page, reused_page, thp_page);
    return 0;
}
