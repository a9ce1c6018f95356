/* SPDX-License-Identifier: MIT */
/*
 * The instruction counts of the recording hot path, for `make bench`
 * (bench/icount/icount.sh runs this under callgrind, which counts only
 * inside icount_loop, at two event counts, and divides the difference:
 * per-event instructions, setup excluded, the same on any machine).
 *
 *   act_bench_icount MODE N
 *
 * MODE: none (the loop alone), span0 (act_span_record_id, supplied times,
 * no args), args_key (+ act_arg_int_k / act_arg_str_k through keys from
 * act_key), args_str (+ act_arg_int / act_arg_str with literal keys),
 * args_buf (args_str, the value in a writable buffer: verified by content
 * on every call, as a string the program builds would be).
 *
 * MODE scoped (act_span_begin_id + act_span_end), scoped_str (act_span_begin
 * with a literal name), scoped_args (scoped + the two args by key).
 *
 * MODE write_json, write_pftrace (N argless spans) and write_json_k2,
 * write_pftrace_k2 (N spans with Kineto's two args): the writers instead;
 * with _str (write_json_str...), the spans named by a string.
 * The spans are recorded first; callgrind counts inside icount_write (one
 * act_session_write), so per event is the writer's cost, visitor included.
 */
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actrace/actrace.h"
#include "../scoped_work.h"

#if defined(__GNUC__) || defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

static const char str20[] = "12345678901234567890";

enum mode { NONE, SPAN0, ARGS_KEY, ARGS_STR, ARGS_BUF, SCOPED, SCOPED_STR, SCOPED_ARGS, WRITE };

/* Callgrind collects inside this function only (--toggle-collect). One
 * loop per mode, so that the loop's own cost (mode none) is a few
 * instructions. */
NOINLINE void icount_loop(enum mode m, long n, act_name_id name, act_key_id seq,
                          act_key_id dims, int64_t base);
NOINLINE void icount_loop(enum mode m, long n, act_name_id name, act_key_id seq,
                          act_key_id dims, int64_t base)
{
    int64_t t = base;
    switch (m) {
    case NONE:
        for (long i = 0; i < n; i++, t += 1000)
            __asm__ volatile("" ::"r"(t) : "memory");
        break;
    case SPAN0:
        for (long i = 0; i < n; i++, t += 1000)
            act_span_record_id(ACT_CPU_OP, name, t, t + 500);
        break;
    case ARGS_KEY:
        for (long i = 0; i < n; i++, t += 1000) {
            act_span_record_id(ACT_CPU_OP, name, t, t + 500);
            act_arg_int_k(seq, i);
            act_arg_str_k(dims, str20);
        }
        break;
    case ARGS_STR:
        for (long i = 0; i < n; i++, t += 1000) {
            act_span_record_id(ACT_CPU_OP, name, t, t + 500);
            act_arg_int("Sequence number", i);
            act_arg_str("Input Dims", str20);
        }
        break;
    case ARGS_BUF: {
        char buf[sizeof str20];
        memcpy(buf, str20, sizeof buf);
        for (long i = 0; i < n; i++, t += 1000) {
            act_span_record_id(ACT_CPU_OP, name, t, t + 500);
            act_arg_int("Sequence number", i);
            act_arg_str("Input Dims", buf);
            __asm__ volatile("" ::"r"(buf) : "memory");
        }
        break;
    }
    case SCOPED:
        scoped_id_loop(n, name);
        break;
    case SCOPED_STR:
        scoped_str_loop(n);
        break;
    case SCOPED_ARGS:
        scoped_id_args2_loop(n, name, seq, dims);
        break;
    case WRITE: break; /* write_mode */
    }
}

/* Callgrind collects inside this function only in the write modes. */
NOINLINE int icount_write(act_session *s, const char *path);
NOINLINE int icount_write(act_session *s, const char *path)
{
    return act_session_write(s, path);
}

/* N spans (with Kineto's two args when @p k2), written to a file named
 * with @p ext; 0 when it worked. */
static int write_mode(act_session *s, long n, int k2, int str, const char *ext)
{
    static const char *const dims[4] = {"[[32, 64], [64, 128]]", "[[32, 128], [128]]",
                                        "[[1024, 1024], [1024, 1024]]", "[[32, 3, 224, 224]]"};
    act_name_id name = act_name("aten::matmul");
    int64_t base = act_now_ns();
    for (long i = 0; i < n; i++) {
        if (str)
            act_span_record(ACT_CPU_OP, "aten::matmul", base + i * 1000, base + i * 1000 + 500);
        else
            act_span_record_id(ACT_CPU_OP, name, base + i * 1000, base + i * 1000 + 500);
        if (k2) {
            act_arg_int("Sequence number", i);
            act_arg_str("Input Dims", dims[i & 3]);
        }
    }
    act_session_stop(s);
    char path[64];
    snprintf(path, sizeof path, "/tmp/act_icount_%d%s", (int)getpid(), ext);
    int rc = icount_write(s, path);
    if (rc)
        fprintf(stderr, "act_bench_icount: write: %s\n", act_session_errmsg(s));
    unlink(path);
    act_session_destroy(s);
    return rc != 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: act_bench_icount none|span0|args_key|args_str|args_buf|scoped|scoped_str|scoped_args|write_{json,pftrace}[_k2] N\n");
        return 2;
    }
    enum mode m;
    if (strcmp(argv[1], "none") == 0)
        m = NONE;
    else if (strcmp(argv[1], "span0") == 0)
        m = SPAN0;
    else if (strcmp(argv[1], "args_key") == 0)
        m = ARGS_KEY;
    else if (strcmp(argv[1], "args_str") == 0)
        m = ARGS_STR;
    else if (strcmp(argv[1], "args_buf") == 0)
        m = ARGS_BUF;
    else if (strcmp(argv[1], "scoped") == 0)
        m = SCOPED;
    else if (strcmp(argv[1], "scoped_str") == 0)
        m = SCOPED_STR;
    else if (strcmp(argv[1], "scoped_args") == 0)
        m = SCOPED_ARGS;
    else if (strncmp(argv[1], "write_", 6) == 0)
        m = WRITE;
    else {
        fprintf(stderr, "act_bench_icount: unknown mode '%s'\n", argv[1]);
        return 2;
    }
    long n = strtol(argv[2], NULL, 10);
    act_log_set_level(ACT_LOG_ERROR);
    static const char cfg_text[] = "MAX_BUFFER_SIZE_MB = 1024\n";
    act_config *cfg = NULL;
    act_parse_error err;
    if (act_config_parse(cfg_text, strlen(cfg_text), NULL, &cfg, &err) != 0) {
        fprintf(stderr, "act_bench_icount: config: %s\n", err.message);
        return 1;
    }
    act_session_opts o;
    act_session_opts_init(&o);
    o.config = cfg;
    act_session *s;
    if (act_session_create(&o, &s) != 0 || act_session_start(s) != 0) {
        fprintf(stderr, "act_bench_icount: cannot start a session\n");
        return 1;
    }
    act_config_destroy(cfg);
    if (m == WRITE) {
        const char *w = argv[1] + 6;
        int k2 = strstr(w, "_k2") != NULL, str = strstr(w, "_str") != NULL;
        return write_mode(s, n, k2, str, strncmp(w, "pftrace", 7) == 0 ? ".pftrace" : ".json");
    }
    act_name_id name = act_name("aten::matmul");
    act_key_id seq = act_key("Sequence number"), dims = act_key("Input Dims");
    /* Warm the thread's buffer and caches outside the counted loop. */
    icount_loop(m, 1, name, seq, dims, act_now_ns());
    icount_loop(m, n, name, seq, dims, act_now_ns());
    act_session_stop(s);
    act_session_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    act_session_get_stats(s, &st);
    act_session_destroy(s);
    long want = m == NONE ? 0 : n + 1;
    if ((long)st.recorded != want) {
        fprintf(stderr, "act_bench_icount: recorded %llu events of %ld\n",
                (unsigned long long)st.recorded, want);
        return 1;
    }
    return 0;
}
