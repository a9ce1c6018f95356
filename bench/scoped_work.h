/* SPDX-License-Identifier: MIT */
/*
 * The scoped-span workloads that bench_record.c times and
 * icount/bench_icount.c counts under callgrind: one definition, so that the
 * nanoseconds and the instruction counts measure the same loop.
 */
#ifndef ACT_BENCH_SCOPED_WORK_H
#define ACT_BENCH_SCOPED_WORK_H

#include <stdint.h>

#include "actrace/actrace.h"

static const char act_bench_str20[] = "12345678901234567890";

/* The counter the scoped spans read where it is the kernel's clocksource
 * (rdtsc, cntvct_el0; the clock elsewhere). */
static inline uint64_t bench_ticks(void)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v)::"memory");
    return v;
#else
    return (uint64_t)act_now_ns();
#endif
}

/* The floor of a span with its own times: two counter reads and a
 * 32-byte store into memory written before (a 64 KiB ring). */
static inline void scoped_floor_loop(long n, uint64_t name)
{
    static uint64_t ring[4 * 2048];
    for (long i = 0; i < n; i++) {
        uint64_t a = bench_ticks(), b = bench_ticks();
        uint64_t *w = &ring[(i & 2047) * 4];
        w[0] = a;
        w[1] = b;
        w[2] = (uint64_t)i;
        w[3] = name;
        __asm__ volatile("" ::"r"(w) : "memory");
    }
}

/* act_span_begin_id + act_span_end, no args. */
static inline void scoped_id_loop(long n, act_name_id name)
{
    for (long i = 0; i < n; i++) {
        act_span_begin_id(ACT_CPU_OP, name);
        act_span_end();
    }
}

/* The same named by a string literal (act_span_begin). */
static inline void scoped_str_loop(long n)
{
    for (long i = 0; i < n; i++) {
        act_span_begin(ACT_CPU_OP, "aten::matmul");
        act_span_end();
    }
}

/* act_span_begin_id + Kineto's two args through act_key keys. */
static inline void scoped_id_args2_loop(long n, act_name_id name, act_key_id seq,
                                        act_key_id dims)
{
    for (long i = 0; i < n; i++) {
        act_span_begin_id(ACT_CPU_OP, name);
        act_arg_int_k(seq, i);
        act_arg_str_k(dims, act_bench_str20);
        act_span_end();
    }
}

/* A string name and string keys. */
static inline void scoped_str_args2_loop(long n)
{
    for (long i = 0; i < n; i++) {
        act_span_begin(ACT_CPU_OP, "aten::matmul");
        act_arg_int("Sequence number", i);
        act_arg_str("Input Dims", act_bench_str20);
        act_span_end();
    }
}

#endif
