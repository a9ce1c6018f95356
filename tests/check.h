/* SPDX-License-Identifier: MIT */
/*
 * check.h: the assertion macros every unit test uses. Header-only, libc
 * only. The pass/fail counters are `static`, i.e. per translation unit:
 * keep the CHECKs of one test executable in the .c file that owns main()
 * (helpers in other files can return values for main() to check).
 *
 * A failed CHECK does not stop the test: it prints "file:line: ..." with
 * the expression and both values to stderr, counts the failure, and the
 * test goes on. Use CHECK_FATAL / *_OR_RETURN forms where continuing would
 * crash (e.g. a NULL pointer you are about to use):
 *
 *     #include "check.h"
 *     int main(void)
 *     {
 *         CHECK_EQ_INT(act_foo(), 0);
 *         CHECK_EQ_STR(act_strerror(ACT_EINVAL), "invalid argument");
 *         return check_done();        // or: CHECK_MAIN_END;
 *     }
 *
 * check_done() prints "N passed, M failed" on stdout and returns 0 when no
 * check failed, 1 otherwise (so `return check_done();` gives CTest the
 * right exit status). CHECK_SKIP("no jansson") exits 77, which act_add_test
 * registers as CTest's "skipped".
 */
#ifndef ACT_TESTS_CHECK_H
#define ACT_TESTS_CHECK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long check_passed_;
static unsigned long check_failed_;

#if defined(__GNUC__) || defined(__clang__)
#define CHECK_UNUSED_ __attribute__((unused))
#else
#define CHECK_UNUSED_
#endif

/* Record one result; returns @p ok so the macros can branch on it. */
static CHECK_UNUSED_ int check_result_(int ok)
{
    if (ok)
        check_passed_++;
    else
        check_failed_++;
    return ok;
}

/* Print a string value with non-printable bytes escaped, or (null). */
static CHECK_UNUSED_ void check_print_str_(const char *s)
{
    if (!s) {
        fputs("(null)", stderr);
        return;
    }
    fputc('"', stderr);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(stderr, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f)
            fputc(c, stderr);
        else
            fprintf(stderr, "\\x%02x", c);
    }
    fputc('"', stderr);
}

static CHECK_UNUSED_ int check_bool_(int ok, const char *expr,
                                     const char *file, int line)
{
    if (!check_result_(ok))
        fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, expr);
    return ok;
}

static CHECK_UNUSED_ int check_int_(intmax_t a, intmax_t b, const char *ea,
                                    const char *eb, const char *file,
                                    int line)
{
    int ok = a == b;
    if (!check_result_(ok))
        fprintf(stderr,
                "%s:%d: CHECK_EQ_INT failed: %s == %s\n"
                "    left:  %jd\n    right: %jd\n",
                file, line, ea, eb, a, b);
    return ok;
}

static CHECK_UNUSED_ int check_u64_(uint64_t a, uint64_t b, const char *ea,
                                    const char *eb, const char *file,
                                    int line)
{
    int ok = a == b;
    if (!check_result_(ok))
        fprintf(stderr,
                "%s:%d: CHECK_EQ_U64 failed: %s == %s\n"
                "    left:  %" PRIu64 " (0x%" PRIx64 ")\n"
                "    right: %" PRIu64 " (0x%" PRIx64 ")\n",
                file, line, ea, eb, a, a, b, b);
    return ok;
}

static CHECK_UNUSED_ int check_str_(const char *a, const char *b,
                                    const char *ea, const char *eb,
                                    const char *file, int line)
{
    int ok = (a == NULL && b == NULL) ||
             (a != NULL && b != NULL && strcmp(a, b) == 0);
    if (!check_result_(ok)) {
        fprintf(stderr, "%s:%d: CHECK_EQ_STR failed: %s == %s\n    left:  ",
                file, line, ea, eb);
        check_print_str_(a);
        fputs("\n    right: ", stderr);
        check_print_str_(b);
        fputc('\n', stderr);
    }
    return ok;
}

static CHECK_UNUSED_ int check_mem_(const void *a, const void *b, size_t n,
                                    const char *ea, const char *eb,
                                    const char *file, int line)
{
    int ok = n == 0 || (a && b && memcmp(a, b, n) == 0);
    if (!check_result_(ok)) {
        fprintf(stderr, "%s:%d: CHECK_EQ_MEM failed: %s == %s (%zu bytes)\n",
                file, line, ea, eb, n);
        if (a && b) {
            const unsigned char *pa = a, *pb = b;
            size_t i = 0;
            while (i < n && pa[i] == pb[i])
                i++;
            fprintf(stderr, "    first difference at byte %zu: 0x%02x vs 0x%02x\n",
                    i, pa[i], pb[i]);
        }
    }
    return ok;
}

static CHECK_UNUSED_ int check_dbl_(double a, double b, double tol,
                                    const char *ea, const char *eb,
                                    const char *file, int line)
{
    double d = a > b ? a - b : b - a;
    int ok = d <= tol; /* NaN never passes */
    if (!check_result_(ok))
        fprintf(stderr,
                "%s:%d: CHECK_NEAR failed: %s ~= %s (tolerance %g)\n"
                "    left:  %.17g\n    right: %.17g\n",
                file, line, ea, eb, tol, a, b);
    return ok;
}

/* ---- the macros -------------------------------------------------------- */

/** Check that @p cond is true. Evaluates to the result (0/1). */
#define CHECK(cond) check_bool_(!!(cond), #cond, __FILE__, __LINE__)
/** Signed/unsigned small integers, enums, error codes. */
#define CHECK_EQ_INT(a, b)                                                    \
    check_int_((intmax_t)(a), (intmax_t)(b), #a, #b, __FILE__, __LINE__)
/** 64-bit unsigned values (sizes, counters, ids, timestamps). */
#define CHECK_EQ_U64(a, b)                                                    \
    check_u64_((uint64_t)(a), (uint64_t)(b), #a, #b, __FILE__, __LINE__)
/** NUL-terminated strings; NULL equals only NULL. */
#define CHECK_EQ_STR(a, b) check_str_((a), (b), #a, #b, __FILE__, __LINE__)
/** @p n bytes of memory. */
#define CHECK_EQ_MEM(a, b, n)                                                 \
    check_mem_((a), (b), (n), #a, #b, __FILE__, __LINE__)
/** Doubles within an absolute tolerance. */
#define CHECK_NEAR(a, b, tol)                                                 \
    check_dbl_((double)(a), (double)(b), (double)(tol), #a, #b, __FILE__,   \
               __LINE__)
/** An int return code is 0 (prints the value on failure). */
#define CHECK_OK(expr) CHECK_EQ_INT((expr), 0)

/** Like CHECK, but abort the whole test (after the summary) on failure. */
#define CHECK_FATAL(cond)                                                     \
    do {                                                                      \
        if (!CHECK(cond)) {                                                   \
            fprintf(stderr, "%s:%d: fatal check failed, stopping\n",          \
                    __FILE__, __LINE__);                                      \
            exit(check_done());                                               \
        }                                                                     \
    } while (0)

/** Print the summary; 0 when every check passed, 1 otherwise. */
static CHECK_UNUSED_ int check_done(void)
{
    printf("%lu passed, %lu failed\n", check_passed_, check_failed_);
    fflush(stdout);
    return check_failed_ ? 1 : 0;
}

/** Number of failures so far (for tests that want to bail out early). */
static CHECK_UNUSED_ unsigned long check_failures(void)
{
    return check_failed_;
}

/** Exit status that CTest reports as "skipped" (SKIP_RETURN_CODE). */
#define CHECK_SKIP_CODE 77

/** Skip the whole test: print why, exit 77 (CTest shows it as skipped).
 *  Use only for a missing optional dependency, never to hide a failure;
 *  a test that already failed a check exits 1 instead. */
#define CHECK_SKIP(reason)                                                    \
    do {                                                                      \
        printf("SKIPPED: %s\n", (reason));                                    \
        fflush(stdout);                                                       \
        exit(check_failed_ ? check_done() : CHECK_SKIP_CODE);                 \
    } while (0)

/** `CHECK_MAIN_END;` as the last statement of main(). */
#define CHECK_MAIN_END return check_done()

/* Short aliases. */
#define CHECK_INT(a, b) CHECK_EQ_INT(a, b)
#define CHECK_STR(a, b) CHECK_EQ_STR(a, b)
static CHECK_UNUSED_ int check_exit(void) { return check_done(); }

#endif /* ACT_TESTS_CHECK_H */
