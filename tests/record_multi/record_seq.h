/* SPDX-License-Identifier: MIT */
/*
 * A check shared by the tests of `actrace record` that count a program's
 * numbered spans (RecordDie, RecordPoolSpool): each span's arg "i" seen
 * once. Header-only, static; needs check.h and trace_util.h first.
 */
#ifndef ACT_TEST_RECORD_SEQ_H
#define ACT_TEST_RECORD_SEQ_H

/* Spans @p name of thread (pid, tid) (@p tid < 0: of any thread of pid):
 * their arg i must be 0..n-1, each once (@p gaps_ok: each at most once, 0
 * among them: drops leave gaps); at most @p noargs_max without args (a
 * span whose args had not been recorded yet). Returns n. */
static long ru_check_seq(json_t *root, const char *name, long long pid, long long tid,
                         int noargs_max, int gaps_ok)
{
    json_t *evs = tu_events(root), *e;
    size_t i, cap = 1024, n = 0;
    long *seen = calloc(cap, sizeof *seen);
    int noargs = 0;
    CHECK_FATAL(seen != NULL);
    json_array_foreach(evs, i, e)
    {
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (!nm || strcmp(nm, name) != 0 || tu_int(e, "pid") != pid ||
            (tid >= 0 && tu_int(e, "tid") != tid))
            continue;
        json_t *iv = json_object_get(json_object_get(e, "args"), "i");
        if (!iv) {
            noargs++;
            continue;
        }
        long v = (long)json_integer_value(iv);
        if (v < 0 || v >= 100000000) {
            CHECK(0);
            continue;
        }
        while ((size_t)v >= cap) {
            seen = realloc(seen, 2 * cap * sizeof *seen);
            CHECK_FATAL(seen != NULL);
            memset(seen + cap, 0, cap * sizeof *seen);
            cap *= 2;
        }
        seen[v]++;
        n++;
    }
    for (size_t k = 0; !gaps_ok && k < n; k++)
        if (k >= cap || seen[k] != 1) {
            fprintf(stderr, "%s on tid %lld: i = %zu seen %ld times\n", name, tid, k,
                    k < cap ? seen[k] : 0);
            CHECK(0);
            break;
        }
    for (size_t k = 0; gaps_ok && k < cap; k++)
        if (seen[k] > 1 || (k == 0 && seen[0] != 1)) {
            fprintf(stderr, "%s on tid %lld: i = %zu seen %ld times\n", name, tid, k, seen[k]);
            CHECK(0);
            break;
        }
    CHECK(noargs <= noargs_max);
    free(seen);
    return (long)n;
}

#endif
