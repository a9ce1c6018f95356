// SPDX-License-Identifier: MIT
// The scoped span against the fastest peer, in one process and one run
// (issue 39): Tracy's ZoneScopedN, ZoneScopedN + ZoneValue + ZoneText
// (Kineto's two args), actrace's act_span_begin_id/act_span_end with and
// without two args, and the floor (two counter reads and a 32-byte store).
// Built by bench/peers/tracy.sh against a Tracy checkout the user names;
// Tracy's code is never part of this repository. Thread CPU time per
// event, 1M events a round, median of 7 interleaved rounds.
#include <tracy/Tracy.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <time.h>
extern "C" {
#include "actrace/actrace.h"
}
#include "scoped_work.h" // the loops bench_record.c times

static double cpu_s()
{
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}


enum { FLOOR, TRACY, TRACY_ARGS, ACT, ACT_ARGS, K };
static const char *const names[K] = {"floor: 2 rdtsc + 32B store", "Tracy ZoneScopedN",
                                     "Tracy + ZoneValue + ZoneText", "actrace scoped, interned",
                                     "actrace scoped + 2 args"};

__attribute__((noinline)) static void tracy_zone(long i)
{
    ZoneScopedN("aten::matmul");
    (void)i;
}

__attribute__((noinline)) static void tracy_zone_args(long i)
{
    ZoneScopedN("aten::matmul");
    ZoneValue((uint64_t)i);
    ZoneText(act_bench_str20, 20);
}

static double once(int k, long n, act_name_id name, act_key_id seq, act_key_id dims)
{
    double t0 = cpu_s();
    switch (k) {
    case FLOOR:
        scoped_floor_loop(n, name);
        break;
    case TRACY:
        for (long i = 0; i < n; i++)
            tracy_zone(i);
        break;
    case TRACY_ARGS:
        for (long i = 0; i < n; i++)
            tracy_zone_args(i);
        break;
    case ACT:
        scoped_id_loop(n, name);
        break;
    case ACT_ARGS:
        scoped_id_args2_loop(n, name, seq, dims);
        break;
    }
    return (cpu_s() - t0) / (double)n * 1e9;
}

/* Under callgrind (tracy.sh --icount): one kind's loop, n times, in a
 * function that callgrind counts alone (--toggle-collect). */
extern "C" __attribute__((noinline)) void icount_loop(int k, long n, act_name_id name,
                                                      act_key_id seq, act_key_id dims)
{
    if (k < 0) { // the loop alone
        for (long i = 0; i < n; i++)
            __asm__ volatile("" ::"r"(i) : "memory");
        return;
    }
    once(k, n, name, seq, dims);
}

static act_session *start_actrace()
{
    // bench_record.c's scoped rounds' config (start_session)
    static const char text[] = "MAX_BUFFER_SIZE_MB = 4096\nBUFFER_PREALLOC_MB = 160\n";
    act_config *c = NULL;
    act_parse_error err;
    act_session_opts o;
    act_session *s = NULL;
    act_session_opts_init(&o);
    if (act_config_parse(text, strlen(text), NULL, &c, &err) != 0)
        return NULL;
    o.config = c;
    if (act_session_create(&o, &s) != 0 || act_session_start(s) != 0) {
        fprintf(stderr, "tracy_scoped: cannot start an actrace session\n");
        act_config_destroy(c);
        return NULL;
    }
    act_config_destroy(c);
    return s;
}

int main(int argc, char **argv)
{
    const long N = 1000000;
    enum { R = 7 };
    act_log_set_level(ACT_LOG_ERROR);
    act_name_id name = act_name("aten::matmul");
    act_key_id seq = act_key("Sequence number"), dims = act_key("Input Dims");
    if (argc == 3) { // icount KIND N: "loop" or one of 0..K-1
        long n = atol(argv[2]);
        int k = strcmp(argv[1], "loop") == 0 ? -1 : atoi(argv[1]);
        act_session *s = k == ACT || k == ACT_ARGS ? start_actrace() : NULL;
        if ((k == ACT || k == ACT_ARGS) && !s)
            return 1;
        icount_loop(k, 1, name, seq, dims); // first-touch work outside the count
        icount_loop(k, n, name, seq, dims);
        if (s) {
            act_session_stop(s);
            act_session_destroy(s);
        }
        return 0;
    }
    double v[K][R];
    for (int r = 0; r < R; r++)
        for (int k = 0; k < K; k++) {
            act_session *s = NULL;
            if ((k == ACT || k == ACT_ARGS) && !(s = start_actrace()))
                return 1;
            v[k][r] = once(k, N, name, seq, dims);
            if (s) {
                act_session_stop(s);
                act_session_destroy(s);
            }
        }
    double med[K];
    for (int k = 0; k < K; k++) {
        std::sort(v[k], v[k] + R);
        med[k] = v[k][R / 2];
    }
    printf("scoped spans against Tracy (no capture tool connected), 1M events, thread CPU,\n"
           "median of %d interleaved rounds, one process:\n", R);
    for (int k = 0; k < K; k++)
        printf("  %-32s %7.2f ns  (%.2fx the floor)\n", names[k], med[k], med[k] / med[FLOOR]);
    printf("  actrace / Tracy: %.2fx (scoped), %.2fx (2 args)\n", med[ACT] / med[TRACY],
           med[ACT_ARGS] / med[TRACY_ARGS]);
    return 0;
}
