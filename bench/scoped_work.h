/* SPDX-License-Identifier: MIT */
/*
 * The scoped-span workloads that bench_record.c times and
 * icount/bench_icount.c counts under callgrind: one definition, so that the
 * nanoseconds and the instruction counts measure the same loop.
 */
#ifndef ACT_BENCH_SCOPED_WORK_H
#define ACT_BENCH_SCOPED_WORK_H

#include "actrace/actrace.h"

static const char act_bench_str20[] = "12345678901234567890";

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
