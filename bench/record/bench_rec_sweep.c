/* SPDX-License-Identifier: MIT */
/*
 * The recording cost under `actrace record` (issue 21), run by
 * bench/record/run.sh: `act_bench_rec_sweep N ARGS` records N cpu_op spans
 * with caller-supplied times by id (Kineto's workload, as act_bench's
 * sweep), with ARGS = 0 or 2 args ("External id" int, "shape" 20-byte
 * string), into the session record started in this process (the
 * auto-started, spooled one), and prints one line: wall and recording
 * thread CPU per event, the thread's minor faults per 1M events. Linked
 * to the shared library, so that record's preloaded one is the one used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "actrace/actrace.h"

static double ns_of(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    long n = atol(argv[1]);
    int args = atoi(argv[2]);
    act_name_id name = act_name("aten::matmul");
    static const char str20[] = "12345678901234567890";
    const int64_t base = act_now_ns();
    struct rusage u0, u1;
    getrusage(RUSAGE_THREAD, &u0);
    double w0 = ns_of(CLOCK_MONOTONIC), c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
    if (args)
        for (long i = 0; i < n; i++) {
            act_span_record_id(ACT_CPU_OP, name, base + i * 1000, base + i * 1000 + 500);
            act_arg_int("External id", i);
            act_arg_str("shape", str20);
        }
    else
        for (long i = 0; i < n; i++)
            act_span_record_id(ACT_CPU_OP, name, base + i * 1000, base + i * 1000 + 500);
    double w1 = ns_of(CLOCK_MONOTONIC), c1 = ns_of(CLOCK_THREAD_CPUTIME_ID);
    getrusage(RUSAGE_THREAD, &u1);
    printf("rec_sweep events=%ld args=%d wall_ns=%.2f cpu_ns=%.2f faults_per_1m=%.1f\n", n, args,
           (w1 - w0) / (double)n, (c1 - c0) / (double)n,
           (double)(u1.ru_minflt - u0.ru_minflt) / ((double)n / 1e6));
    return 0;
}
