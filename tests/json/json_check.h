/* SPDX-License-Identifier: MIT */
/*
 * Assertion macros of the JSON output tests. Each failed check prints the
 * location and both values (byte strings escaped) and is counted; a test's
 * main() ends with `return check_report("name");`.
 * (Kept local to tests/json so this branch does not collide with a shared
 * tests/check.h written elsewhere at the same time.)
 */
#ifndef ACT_TESTS_JSON_CHECK_H
#define ACT_TESTS_JSON_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

static inline void check_dump(const char *label, const void *p, size_t n)
{
    const unsigned char *s = p;
    fprintf(stderr, "    %s (%zu bytes): \"", label, n);
    size_t lim = n > 200 ? 200 : n;
    for (size_t i = 0; i < lim; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\')
            fputc(s[i], stderr);
        else
            fprintf(stderr, "\\x%02x", s[i]);
    }
    fprintf(stderr, "\"%s\n", n > lim ? "..." : "");
}

#define CHECK(cond)                                                           \
    do {                                                                      \
        check_count++;                                                        \
        if (!(cond)) {                                                        \
            check_failures++;                                                 \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__,  \
                    #cond);                                                   \
        }                                                                     \
    } while (0)

#define CHECK_INT(got, want)                                                  \
    do {                                                                      \
        long long g_ = (long long)(got), w_ = (long long)(want);              \
        check_count++;                                                        \
        if (g_ != w_) {                                                       \
            check_failures++;                                                 \
            fprintf(stderr, "%s:%d: %s == %lld, want %s == %lld\n", __FILE__, \
                    __LINE__, #got, g_, #want, w_);                           \
        }                                                                     \
    } while (0)

#define CHECK_U64(got, want)                                                  \
    do {                                                                      \
        uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);                 \
        check_count++;                                                        \
        if (g_ != w_) {                                                       \
            check_failures++;                                                 \
            fprintf(stderr, "%s:%d: %s == %" PRIu64 ", want %" PRIu64 "\n",   \
                    __FILE__, __LINE__, #got, g_, w_);                        \
        }                                                                     \
    } while (0)

/* Bytes [got, got+gn) equal [want, want+wn). */
#define CHECK_MEM(got, gn, want, wn)                                          \
    do {                                                                      \
        const void *gp_ = (got), *wp_ = (want);                               \
        size_t gn_ = (gn), wn_ = (wn);                                        \
        check_count++;                                                        \
        if (gn_ != wn_ || (gn_ && memcmp(gp_, wp_, gn_) != 0)) {              \
            check_failures++;                                                 \
            fprintf(stderr, "%s:%d: %s differs from %s\n", __FILE__,          \
                    __LINE__, #got, #want);                                   \
            check_dump("got ", gp_, gn_);                                     \
            check_dump("want", wp_, wn_);                                     \
        }                                                                     \
    } while (0)

#define CHECK_STR(got, want)                                                  \
    do {                                                                      \
        const char *gs_ = (got), *ws_ = (want);                               \
        if (!gs_)                                                             \
            gs_ = "(null)";                                                   \
        CHECK_MEM(gs_, strlen(gs_), ws_, strlen(ws_));                        \
    } while (0)

/* Stop a test early (setup failed); the message says why. */
#define REQUIRE(cond)                                                         \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "%s:%d: REQUIRE(%s) failed, giving up\n",         \
                    __FILE__, __LINE__, #cond);                               \
            return 1;                                                         \
        }                                                                     \
    } while (0)

static inline int check_report(const char *name)
{
    if (check_failures) {
        fprintf(stderr, "%s: %d of %d checks FAILED\n", name, check_failures,
                check_count);
        return 1;
    }
    printf("%s: %d checks passed\n", name, check_count);
    return 0;
}

/* xorshift64: the tests' reproducible random inputs. A test that wants
 * another sequence sets check_rng at the start of main(). */
static uint64_t check_rng = 0x243F6A8885A308D3u;
static inline uint64_t check_rnd(void)
{
    check_rng ^= check_rng << 13;
    check_rng ^= check_rng >> 7;
    check_rng ^= check_rng << 17;
    return check_rng;
}

#endif /* ACT_TESTS_JSON_CHECK_H */
