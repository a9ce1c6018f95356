/* SPDX-License-Identifier: MIT */
/*
 * Reading Chrome Trace Event JSON for `actrace summary` and `actrace check`:
 * open a file (plain, gzip-compressed, or "-" for standard input) on the
 * streaming reader (src/reader), and the small helpers both commands share
 * (a string-keyed hash map, timestamp and id conversions, printable
 * renderings of JSON values, a JSON string writer). Allocation failures end
 * the process with "actrace: out of memory" (exit 1): a command-line reader
 * has nothing better to do.
 */
#ifndef ACT_CLI_TRACE_READ_H
#define ACT_CLI_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "reader/reader.h"

/** An open trace: the descriptor and its streaming reader. */
typedef struct act_cli_trace {
    int fd;        /* -1 when closed; 0 (not closed) for "-" */
    act__rd *rd;
} act_cli_trace;

/** Open @p path ("-": standard input) for reading. 0, or -1 with a message
 *  such as "cannot open: No such file or directory" in @p msg. */
int act_cli_trace_open(act_cli_trace *t, const char *path, char *msg,
                       size_t msglen);
void act_cli_trace_close(act_cli_trace *t);

/** @p v as an integer id in 0..2^32-1 (an integer, or a number with an
 *  integral value, as JavaScript sees it). 1 and *out set, or 0. */
int act_cli_json_id(const act__jv *v, uint32_t *out);

/** @p v (microseconds) as integer nanoseconds; 0 if not a finite number
 *  within +-9.2e12 us. */
int act_cli_json_ns(const act__jv *v, int64_t *out);

/** A short printable rendering of @p v: strings quoted and escaped,
 *  numbers as written, objects/arrays compact, at most @p len - 1 bytes
 *  (cut with "..."). NULL prints "(missing)". Returns @p buf. */
char *act_cli_json_text(const act__jv *v, char *buf, size_t len);

/** The members of an event that the readers look at, found in one pass
 *  (the last of a repeated key wins, as in JavaScript); NULL if absent. */
typedef struct act_cli_fields {
    const act__jv *ph, *name, *cat, *pid, *tid, *ts, *dur, *args, *id, *bp,
        *s;
} act_cli_fields;
void act_cli_get_fields(const act__jv *e, act_cli_fields *f);

/** Whether the number @p v has more than 3 decimals (below a nanosecond
 *  when it counts microseconds), judged on its text. */
int act_cli_over3(const act__jv *v);

/** Write @p v as compact JSON to @p f (strings escaped, numbers as
 *  written). */
void act_cli_json_write(FILE *f, const act__jv *v);

/** Write the bytes @p s (@p n) as a JSON string, invalid UTF-8 replaced by
 *  U+FFFD. */
void act_cli_json_str(FILE *f, const char *s, size_t n);

/* ---- allocation that cannot fail (exits) -------------------------------- */

void *act_cli_xmalloc(size_t n);
void *act_cli_xcalloc(size_t n, size_t size);
void *act_cli_xrealloc(void *p, size_t n);
char *act_cli_xstrdup(const char *s);

/** qsort that accepts an empty or absent array (qsort's first argument
 *  must not be NULL even when @p n is 0). */
void act_cli_sort(void *base, size_t n, size_t size,
                  int (*cmp)(const void *, const void *));

/** Grow *@p v (elements of @p size) so that index @p need fits. */
void act_cli_grow(void *v, size_t *cap, size_t need, size_t size);

/* ---- string -> index map ------------------------------------------------- */

/** Open-addressing hash map from byte strings (copied) to a size_t. One
 *  slot array (key, length, hash bits, value): a probe touches one cache
 *  line and compares keys only when the stored hash bits match. */
typedef struct act_cli_slot {
    char *key; /* NULL: empty */
    uint32_t len, hash;
    size_t val;
} act_cli_slot;

typedef struct act_cli_map {
    act_cli_slot *s;
    size_t cap, n;
    size_t recent[4]; /* 1 + slots of the last keys looked up: events
                         cycle through a few phases, categories, processes
                         and threads, so most lookups end here */
    unsigned next_recent;
} act_cli_map;

/** The value slot of @p key, inserted with value @p fresh if absent;
 *  *@p created (may be NULL) says which. Keys up to 4 GiB. */
size_t *act_cli_map_put(act_cli_map *m, const char *key, size_t len,
                        size_t fresh, int *created);
/** The map's own NUL-terminated copy of @p key, or NULL if absent. */
const char *act_cli_map_key(const act_cli_map *m, const char *key, size_t len);
/** The value slot of @p key, or NULL. */
size_t *act_cli_map_get(const act_cli_map *m, const char *key, size_t len);
void act_cli_map_free(act_cli_map *m);

/** Progress of a long read on a terminal (standard error): after the first
 *  second, every quarter second, "WHAT: N MB read, R MB/s". */
typedef struct act_cli_progress_t {
    const char *what;
    int tty;
    double start, last;
    int shown;
} act_cli_progress_t;
/** Call with 0 bytes first, then now and then; @p done clears the line. */
void act_cli_progress(act_cli_progress_t *p, uint64_t bytes, int done);

/** Print @p s to @p f with control bytes escaped (\n, \xNN). */
void act_cli_put_text(FILE *f, const char *s);

#endif /* ACT_CLI_TRACE_READ_H */
