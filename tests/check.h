/* SPDX-License-Identifier: MIT */
/*
 * A tiny assertion header for actrace's tests. Checks do not abort: each
 * failure prints where it happened and both values, is counted, and
 * check_exit() turns the count into the process status (0 if none failed).
 *
 *   CHECK(cond)                 any condition
 *   CHECK_INT(a, b)             a == b as long long
 *   CHECK_STR(a, b)             strcmp(a, b) == 0 (NULL-safe)
 *   return check_exit();        at the end of main()
 */
#ifndef ACT_TESTS_CHECK_H
#define ACT_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,  \
                    #cond);                                                   \
            check_failures++;                                                 \
        }                                                                     \
    } while (0)

#define CHECK_INT(a, b)                                                       \
    do {                                                                      \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);       \
        if (check_a_ != check_b_) {                                           \
            fprintf(stderr, "%s:%d: CHECK_INT failed: %s == %s: %lld != %lld\n", \
                    __FILE__, __LINE__, #a, #b, check_a_, check_b_);          \
            check_failures++;                                                 \
        }                                                                     \
    } while (0)

#define CHECK_STR(a, b)                                                       \
    do {                                                                      \
        const char *check_a_ = (a), *check_b_ = (b);                          \
        if (!check_a_ || !check_b_ ? check_a_ != check_b_                     \
                                   : strcmp(check_a_, check_b_) != 0) {       \
            fprintf(stderr,                                                   \
                    "%s:%d: CHECK_STR failed: %s == %s:\n  \"%s\"\n  \"%s\"\n", \
                    __FILE__, __LINE__, #a, #b,                               \
                    check_a_ ? check_a_ : "(null)",                           \
                    check_b_ ? check_b_ : "(null)");                          \
            check_failures++;                                                 \
        }                                                                     \
    } while (0)

static inline int check_exit(void)
{
    if (check_failures)
        fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures ? 1 : 0;
}

#endif /* ACT_TESTS_CHECK_H */
