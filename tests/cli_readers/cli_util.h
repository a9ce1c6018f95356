/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the tests of `actrace summary` and `actrace check`: run the
 * built actrace binary (path in argv[1]) and capture its exit status,
 * stdout and stderr; record a small trace through the library API; gzip a
 * file. Header-only; the CHECKs stay in each test's main file.
 */
#ifndef ACT_TESTS_CLI_UTIL_H
#define ACT_TESTS_CLI_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef CLI_TEST_HAVE_ZLIB
#include <zlib.h>
#endif

#include "actrace/actrace.h"

#define CLI_DATA ACT_SOURCE_DIR "/tests/cli_readers/data"

/* The actrace binary under test. */
static const char *cli_bin = ACT_BINARY_DIR "/bin/actrace";

static inline void cli_tmp_into(char *buf, size_t len, const char *name)
{
    mkdir(ACT_BINARY_DIR "/tests", 0755);
    snprintf(buf, len, "%s/tests/cli_readers_%d_%s", ACT_BINARY_DIR,
             (int)getpid(), name);
}

/* A scratch path under the build tree, unique to this process; the last
 * 8 stay valid. */
static inline const char *cli_tmp(const char *name)
{
    static char path[8][1024];
    static int k;
    char *p = path[k++ % 8];
    cli_tmp_into(p, 1024, name);
    return p;
}

static inline char *cli_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    if (len)
        *len = (size_t)n;
    fclose(f);
    return buf;
}

/* What one run printed and returned. */
typedef struct cli_result {
    int code; /* exit status; -1 if it did not exit normally */
    char *out, *err;
} cli_result;

static inline void cli_free(cli_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Run "actrace ARGS" through the shell (ARGS is a printf format: quote
 * paths yourself). Never NULL strings in the result. */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static inline cli_result cli_run(const char *fmt, ...)
{
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char out[1024], err[1024];
    cli_tmp_into(out, sizeof out, "stdout");
    cli_tmp_into(err, sizeof err, "stderr");
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", cli_bin, args, out, err);
    int st = system(cmd);
    cli_result r;
    r.code = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = cli_slurp(out, NULL);
    r.err = cli_slurp(err, NULL);
    if (!r.out)
        r.out = calloc(1, 1);
    if (!r.err)
        r.err = calloc(1, 1);
    unlink(out);
    unlink(err);
    return r;
}

/* Run the shell command @p sh as it is (pipes, FIFOs, redirections), its
 * output captured like cli_run's. */
static inline cli_result cli_run_sh(const char *sh)
{
    char cmd[8192], out[1024], err[1024];
    cli_tmp_into(out, sizeof out, "stdout");
    cli_tmp_into(err, sizeof err, "stderr");
    snprintf(cmd, sizeof cmd, "(%s) >'%s' 2>'%s'", sh, out, err);
    int st = system(cmd);
    cli_result r;
    r.code = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = cli_slurp(out, NULL);
    r.err = cli_slurp(err, NULL);
    if (!r.out)
        r.out = calloc(1, 1);
    if (!r.err)
        r.err = calloc(1, 1);
    unlink(out);
    unlink(err);
    return r;
}

/* Lines of @p text that contain @p needle. */
static inline int cli_count_lines(const char *text, const char *needle)
{
    int n = 0;
    while (*text) {
        const char *eol = strchr(text, '\n');
        size_t len = eol ? (size_t)(eol - text) : strlen(text);
        char *line = strndup(text, len);
        if (line && strstr(line, needle))
            n++;
        free(line);
        text += len + (eol ? 1 : 0);
    }
    return n;
}

/* The last line of @p text (without its newline), in a static buffer. */
static inline const char *cli_last_line(const char *text)
{
    static char buf[1024];
    size_t len = strlen(text);
    if (len && text[len - 1] == '\n')
        len--;
    size_t start = len;
    while (start && text[start - 1] != '\n')
        start--;
    snprintf(buf, sizeof buf, "%.*s", (int)(len - start), text + start);
    return buf;
}

static inline int cli_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

#ifdef CLI_TEST_HAVE_ZLIB
/* gzip @p src into @p dst; keep only the first @p keep bytes of the result
 * when @p keep is not 0 (a truncated .gz). */
static inline int cli_gzip(const char *src, const char *dst, size_t keep)
{
    size_t len;
    char *data = cli_slurp(src, &len);
    if (!data)
        return -1;
    uLongf zlen = compressBound(len) + 64;
    unsigned char *z = malloc(zlen);
    /* deflate with a gzip wrapper (windowBits 15 + 16). */
    z_stream s;
    memset(&s, 0, sizeof s);
    int rc = -1;
    if (z && deflateInit2(&s, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
        s.next_in = (Bytef *)data;
        s.avail_in = (uInt)len;
        s.next_out = z;
        s.avail_out = (uInt)zlen;
        if (deflate(&s, Z_FINISH) == Z_STREAM_END) {
            size_t n = s.total_out;
            if (keep && keep < n)
                n = keep;
            FILE *f = fopen(dst, "wb");
            if (f) {
                rc = fwrite(z, 1, n, f) == n ? 0 : -1;
                if (fclose(f) != 0)
                    rc = -1;
            }
        }
        deflateEnd(&s);
    }
    free(z);
    free(data);
    return rc;
}
#endif

/* ---- a trace recorded through the library API ------------------------------ */

/* What record_trace() records (the tests check the summary against it). */
#define REC_OUTER 3    /* "outer" cpu_op spans of 10 us ... */
#define REC_INNER 6    /* ... each holding two "inner" spans of 2 us */
#define REC_TICKS 2    /* "tick" instants */
#define REC_MAIN_EVENTS (2 + REC_OUTER + REC_INNER + REC_TICKS) /* + 2 live */

static inline void *rec_worker(void *arg)
{
    (void)arg;
    act_thread_name("worker");
    act_span_begin(ACT_CPU_OP, "work");
    act_span_end();
    return NULL;
}

/* Record spans (live and with given times, nested), instants, counters and
 * a second named thread; write @p json_path and, when not NULL, the same
 * trace to @p gz_path. Exits on a library error. */
static inline void record_trace(const char *json_path, const char *gz_path)
{
    static const char cfg[] =
        "ACTIVITY_TYPES = cpu_op, user_annotation, cpu_instant_event\n";
    act_session_opts o;
    act_session_opts_init(&o);
    o.config_text = cfg;
    o.config_text_len = strlen(cfg);
    o.trace_name = "cli-readers";
    act_session *s = NULL;
    int rc = act_session_create(&o, &s);
    if (rc == 0)
        rc = act_session_start(s);
    if (rc != 0) {
        fprintf(stderr, "record_trace: %s\n", act_strerror(rc));
        exit(1);
    }
    act_process_name("cli-test");
    act_thread_name("main");
    act_span_begin(ACT_CPU_OP, "live");
    act_span_begin(ACT_USER_ANNOTATION, "live child");
    act_arg_int("n", 1);
    act_span_end();
    act_span_end();
    for (int i = 0; i < REC_TICKS; i++)
        act_instant(ACT_CPU_INSTANT_EVENT, "tick");
    act_counter_unit("memory", "rss", "bytes", 1000);
    act_counter("memory", "heap", 10);
    act_counter("memory", "rss", 3000);
    act_counter("memory", "rss", 2000);
    pthread_t th;
    pthread_create(&th, NULL, rec_worker, NULL);
    pthread_join(th, NULL);
    /* Spans with given times, after everything else on this thread, the
     * children recorded before their parents. */
    int64_t t = act_now_ns() + 1000000;
    for (int k = 0; k < REC_OUTER; k++) {
        int64_t b = t + k * 100000;
        act_span_record(ACT_USER_ANNOTATION, "inner", b + 1000, b + 3000);
        act_span_record(ACT_USER_ANNOTATION, "inner", b + 5000, b + 7000);
        act_span_record(ACT_CPU_OP, "outer", b, b + 10000);
    }
    rc = act_session_write(s, json_path);
    if (rc == 0 && gz_path)
        rc = act_session_write(s, gz_path);
    if (rc != 0) {
        fprintf(stderr, "record_trace: %s\n", act_session_errmsg(s));
        exit(1);
    }
    act_session_destroy(s);
}

#endif /* ACT_TESTS_CLI_UTIL_H */
