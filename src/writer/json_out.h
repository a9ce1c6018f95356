/* SPDX-License-Identifier: MIT */
/*
 * The low-level output layer of the trace writers: JSON formatting
 * primitives and a streaming file sink.
 *
 * Formatting helpers take a cursor, write without bounds checks into space
 * the caller reserved, and return the cursor past what they wrote (nothing
 * is NUL-terminated). Each documents its worst case as a macro, so a writer
 * reserves once per event:
 *
 *     char *p = act__out_reserve(o, 64 + ACT__FMT_TS_MAX * 2);
 *     p = act__fmt_ts_us(p, start_ns);
 *     ...
 *     act__out_commit(o, p);
 *
 * The sink (act__out) writes to a temporary file in the directory of the
 * final path and renames it when finished, so a trace either appears
 * complete or not at all. Paths ending in ".gz" are gzip-compressed. Write
 * errors are sticky: later writes are no-ops and act__out_finish() reports
 * the first one.
 *
 * Thread-safety: the formatting helpers are reentrant; one act__out is used
 * by one thread at a time.
 */
#ifndef ACT_WRITER_JSON_OUT_H
#define ACT_WRITER_JSON_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- worst-case sizes ------------------------------------------------ */

/** Longest output of act__fmt_u64 ("18446744073709551615"). */
#define ACT__FMT_U64_MAX 20
/** Longest output of act__fmt_i64 ("-9223372036854775808"). */
#define ACT__FMT_I64_MAX 20
/** Longest output of act__fmt_ts_us ("-9223372036854775.808", 21 bytes). */
#define ACT__FMT_TS_MAX 21
/** Longest output of act__fmt_double ("-2.2250738585072014e-308" is 24). */
#define ACT__FMT_DOUBLE_MAX 32
/**
 * Longest output of act__json_str for @p n input bytes: every byte may
 * become a 6-byte "\u00XX" escape, plus the two quotes. (Invalid UTF-8
 * becomes at most 3 bytes per input byte.) Evaluates @p n once only in
 * expressions; the caller must make sure 6*n+2 does not overflow (see
 * act__json_str_len_bound for a checked version).
 */
#define ACT__JSON_STR_MAX(n) (6 * (size_t)(n) + 2)
/** Longest output of act__json_str_body for @p n input bytes. */
#define ACT__JSON_BODY_MAX(n) (6 * (size_t)(n))

/* ---- formatting primitives ------------------------------------------ */

/** Decimal digits of @p v. Writes at most ACT__FMT_U64_MAX bytes. */
char *act__fmt_u64(char *p, uint64_t v);

/** Decimal of @p v with '-' if negative (correct for INT64_MIN). Writes at
 *  most ACT__FMT_I64_MAX bytes. */
char *act__fmt_i64(char *p, int64_t v);

/**
 * Nanoseconds as microseconds with exactly three decimals, from integer
 * maths only (the value is exact, nothing is rounded): 1234567 ->
 * "1234.567", -1 -> "-0.001", 0 -> "0.000". Correct for INT64_MIN and
 * INT64_MAX. Writes at most ACT__FMT_TS_MAX bytes.
 */
char *act__fmt_ts_us(char *p, int64_t ns);

/**
 * A finite double as a JSON number that parses back (strtod) to the same
 * value: the shortest of %.15g/%.16g/%.17g that round-trips, and integral
 * values with |v| < 1e15 as plain integers (no exponent, no ".0"); -0.0 is
 * "-0". Always uses '.' as the decimal point whatever the locale says.
 * A non-finite value (NaN, +-Inf) writes the JSON literal "null": JSON has
 * no representation for them (the writers avoid passing them).
 * Writes at most ACT__FMT_DOUBLE_MAX bytes. Not for per-event hot paths
 * (may call snprintf); thread-safe.
 */
char *act__fmt_double(char *p, double v);

/**
 * @p n bytes of @p s (any bytes, NULs included) as a quoted JSON string
 * (RFC 8259): '"' and '\\' are escaped, control characters become \n \t \r
 * \b \f or \u00xx (lowercase hex), DEL passes through, well-formed UTF-8 is copied
 * verbatim, and each maximal ill-formed subpart (Unicode 15, section 3.9,
 * "U+FFFD substitution of maximal subparts") becomes one U+FFFD, written as
 * the three bytes EF BF BD. The output is always well-formed UTF-8 with no
 * raw control characters. Writes at most ACT__JSON_STR_MAX(n) bytes.
 * @p s may be NULL when @p n is 0.
 */
char *act__json_str(char *p, const char *s, size_t n);

/** Like act__json_str without the surrounding quotes, for writers that
 *  concatenate pieces into one string. Writes at most
 *  ACT__JSON_BODY_MAX(n) bytes. */
char *act__json_str_body(char *p, const char *s, size_t n);

/**
 * Escape (without quotes) the UTF-8 units of @p s that start before
 * @p lim; a unit may read up to @p n bytes (lim <= n). Writes at most
 * 6*lim bytes; *used gets the input position reached (lim..lim+3, or n).
 * Calling it piecewise over [0, n) gives exactly the bytes of
 * act__json_str_body(s, n): it is how act__out_str escapes long strings.
 */
char *act__json_escape_units(char *p, const char *s, size_t lim, size_t n,
                             size_t *used);

/**
 * Checked worst case of act__json_str: 6*n+2, or SIZE_MAX when that would
 * overflow (the caller then has to use act__out_str, which escapes in
 * pieces).
 */
size_t act__json_str_len_bound(size_t n);

/**
 * Length of the longest prefix of @p s (@p n bytes) that is well-formed
 * UTF-8 (complete sequences only): n when all of @p s is valid.
 */
size_t act__utf8_valid_prefix(const char *s, size_t n);

/** @p n bytes of @p s with each maximal ill-formed UTF-8 subpart replaced
 *  by U+FFFD, exactly as act__json_str does, without escaping anything
 *  (the Perfetto writer's strings). Writes at most 3*n bytes. */
char *act__utf8_repair(char *p, const char *s, size_t n);

/** 1 when all @p n bytes of @p s are well-formed UTF-8 (RFC 3629: no
 *  overlong forms, no surrogates, nothing above U+10FFFF), else 0. NULL
 *  with n == 0 is valid. The plugin host validates names with it too. */
static inline int act__utf8_valid(const char *s, size_t n)
{
    return s ? act__utf8_valid_prefix(s, n) == n : n == 0;
}

/** Deepest nesting of arrays and objects act__json_valid accepts. */
#define ACT__JSON_DEPTH_MAX 64

/**
 * 1 when the @p n bytes of @p s are exactly one JSON value (RFC 8259),
 * optionally surrounded by whitespace, that every reader takes as it is:
 * well-formed UTF-8 throughout, no raw control characters in strings,
 * escapes complete (a \u escape of a surrogate must be one half of a
 * pair), numbers by the grammar, at most ACT__JSON_DEPTH_MAX levels of
 * arrays and objects. Else 0. Takes no memory; linear in @p n. The trace
 * writers write an ACT__V_JSON arg verbatim only when this holds.
 */
int act__json_valid(const char *s, size_t n);

/* ---- streaming sink -------------------------------------------------- */

/** Default staging buffer (uncompressed bytes) of a sink. */
#define ACT__OUT_BUF_SIZE ((size_t)256 * 1024)
/**
 * act__out_reserve(o, n) with n <= ACT__OUT_RESERVE_SAFE never returns
 * NULL (the staging buffer is never smaller than this). Larger
 * reservations may grow the buffer and return NULL when that fails.
 */
#define ACT__OUT_RESERVE_SAFE ((size_t)64 * 1024)

/** act__out_open_ex flags. */
#define ACT__OUT_FSYNC 0x1u  /**< fsync the file before the rename */
#define ACT__OUT_NOGZIP 0x2u /**< never compress, even for ".gz" paths */

/**
 * A streaming output sink. The definition is visible so that a writer can
 * embed it; its fields are private to json_out.c except through the inline
 * functions below. A zero-initialised act__out is "closed": act__out_abort
 * on it does nothing.
 */
typedef struct act__out {
    char *cur;          /* next free byte of buf */
    char *lim;          /* buf + cap */
    char *buf;          /* staging buffer (uncompressed) */
    size_t cap;         /* size of buf */
    uint64_t flushed;   /* uncompressed bytes handed on before buf */
    int err;            /* first error (ACT_E*), sticky; 0 if none */
    int state;          /* 0 closed, 1 file, 2 memory, 3 memory finished */
    int fd;             /* temporary file (state 1) */
    unsigned flags;     /* ACT__OUT_* */
    void *gz;           /* compressor state, NULL when not compressing */
    char *path;         /* final path (malloc'd) */
    char *tmp;          /* temporary path (malloc'd) */
    char *mem;          /* memory sink: collected bytes */
    size_t mem_len, mem_cap;
    char errmsg[1024];  /* message of err, "" if none */
} act__out;

/**
 * Open a sink that writes to @p path: a temporary file
 * "<path>.tmp.XXXXXX" in the same directory (mode 0666 minus the umask) is
 * renamed to @p path by act__out_finish. A path ending in ".gz" is written
 * gzip-compressed (zlib, level 6); without zlib support that is
 * ACT_ENOTSUP. Nothing is created at @p path before act__out_finish
 * succeeds, and an existing file there stays untouched until then (a
 * replaced file keeps its mode and owner). A target that is not a regular
 * file (a device, a FIFO, /dev/stdout, /dev/fd/N) is written in place
 * instead, not atomically (out_sink.c).
 * @param o    sink to initialise (its previous content is ignored)
 * @param err  optional buffer (may be NULL) for a message naming the path
 *             and the OS reason; also available as act__out_errmsg(o)
 * @return 0, ACT_EINVAL (empty path, a directory), ACT_ENOTSUP (.gz without
 *         zlib), ACT_ENOMEM, ACT_ENOSPC or ACT_EIO (cannot create the file).
 *         On failure @p o is closed (nothing to abort, errmsg kept).
 */
int act__out_open(act__out *o, const char *path, char *err, size_t errcap);

/** act__out_open with ACT__OUT_* @p flags. */
int act__out_open_ex(act__out *o, const char *path, unsigned flags, char *err,
                     size_t errcap);

/**
 * Open a sink that collects the output in memory (tests, fuzzing, small
 * documents); @p bufsize is the staging buffer size (0 for the default;
 * clamped to at least ACT__OUT_RESERVE_SAFE). Retrieve the bytes with
 * act__out_mem_take after act__out_finish.
 * @return 0 or ACT_ENOMEM.
 */
int act__out_open_mem(act__out *o, size_t bufsize);

/* Slow path of act__out_reserve: flushes, or grows for large n. */
char *act__out_reserve_slow(act__out *o, size_t n);

/**
 * A cursor with at least @p n writable bytes. After an error the space is
 * still valid (its content is discarded), so writers need not check.
 * @return the cursor; NULL only when n > ACT__OUT_RESERVE_SAFE and the
 *         buffer could not grow (the sink then holds ACT_ENOMEM).
 */
static inline char *act__out_reserve(act__out *o, size_t n)
{
    if ((size_t)(o->lim - o->cur) >= n)
        return o->cur;
    return act__out_reserve_slow(o, n);
}

/** Mark the bytes up to @p end (a cursor from act__out_reserve moved
 *  forward by at most the reserved size) as written. */
static inline void act__out_commit(act__out *o, char *end)
{
    o->cur = end;
}

/** Write @p n raw bytes (any size). */
void act__out_write(act__out *o, const void *p, size_t n);

/** Write a NUL-terminated string literal or C string verbatim. */
#define act__out_lit(o, lit) act__out_write((o), (lit), strlen(lit))

/** Write one byte. */
static inline void act__out_char(act__out *o, char c)
{
    char *p = act__out_reserve(o, 1);
    *p++ = c;
    act__out_commit(o, p);
}

/**
 * Write @p n bytes of @p s as a quoted JSON string, exactly as
 * act__json_str would, for any @p n (escapes in pieces, never splitting a
 * UTF-8 sequence, so the output is byte-identical to a one-shot escape).
 */
void act__out_str(act__out *o, const char *s, size_t n);

/** Like act__out_str without the quotes (act__json_str_body). */
void act__out_str_body(act__out *o, const char *s, size_t n);

/** Uncompressed bytes written so far (committed ones included). */
static inline uint64_t act__out_bytes(const act__out *o)
{
    return o->flushed + (uint64_t)(o->cur - o->buf);
}

/** The first error of the sink (ACT_E*), or 0. */
static inline int act__out_error(const act__out *o)
{
    return o->err;
}

/** Message of the first error (names the final path and the cause), or "". */
const char *act__out_errmsg(const act__out *o);

/**
 * Complete the output: flush, finish the gzip stream, optionally fsync,
 * close, and rename the temporary file to the final path. On any error
 * (including an earlier sticky one) the temporary file is removed and
 * nothing is created at the final path.
 * @return 0; ACT_ENOSPC (ENOSPC, EFBIG, EDQUOT); ACT_EIO (other OS errors);
 *         ACT_ENOMEM; ACT_ESTATE when the sink is not open. The message is
 *         in act__out_errmsg. The sink is closed afterwards (for a memory
 *         sink the collected bytes stay until act__out_mem_take or
 *         act__out_abort).
 */
int act__out_finish(act__out *o);

/**
 * Memory sink after a successful act__out_finish: the collected bytes
 * (malloc'd, NUL-terminated for convenience, owned by the caller) and their
 * length in @p len. NULL when there is nothing to take.
 */
char *act__out_mem_take(act__out *o, size_t *len);

/** Abandon the output: remove the temporary file and free everything.
 *  Safe on a closed, finished or zeroed sink. */
void act__out_abort(act__out *o);

#endif /* ACT_WRITER_JSON_OUT_H */
