/* SPDX-License-Identifier: MIT */
/*
 * Reading Chrome Trace Event JSON for `actrace summary` and `actrace check`:
 * load a file (plain, gzip-compressed, or "-" for standard input) into a
 * jansson tree with positioned errors, find its event array, and the small
 * helpers both commands share (a string-keyed hash map, timestamp and id
 * conversions, printable renderings of JSON values).
 *
 * Only compiled with jansson (ACT_CLI_HAVE_JANSSON); the commands print
 * act_cli_no_json() otherwise. Allocation failures end the process with
 * "actrace: out of memory" (exit 1): a command-line reader has nothing
 * better to do.
 */
#ifndef ACT_CLI_TRACE_READ_H
#define ACT_CLI_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The message both commands print when built without jansson. */
#define ACT_CLI_NO_JSON_MSG                                                  \
    "built without JSON support (install libjansson-dev and rebuild)"

#ifdef ACT_CLI_HAVE_JANSSON
#include <jansson.h>

/** Load @p path ("-": standard input; gzip detected by content when built
 *  with zlib). Returns the root, or NULL with a message such as
 *  "line 3, column 7: ..." or "cannot open: No such file..." in @p msg. */
json_t *act_cli_trace_load(const char *path, char *msg, size_t msglen);

/** The event array: root.traceEvents, or root itself when it is an array.
 *  NULL when neither. */
json_t *act_cli_trace_events(json_t *root);

/** @p v as an integer id in 0..2^32-1 (an integer, or a real with an
 *  integral value, as JavaScript sees it). 1 and *out set, or 0. */
int act_cli_json_id(const json_t *v, uint32_t *out);

/** @p v (microseconds) as integer nanoseconds; 0 if not a finite number
 *  within +-9.2e12 us. */
int act_cli_json_ns(const json_t *v, int64_t *out);

/** A short printable rendering of @p v: strings quoted and escaped,
 *  numbers as written, objects/arrays compact, at most @p len - 1 bytes
 *  (cut with "..."). Returns @p buf. */
char *act_cli_json_text(const json_t *v, char *buf, size_t len);

#endif /* ACT_CLI_HAVE_JANSSON */

/* ---- allocation that cannot fail (exits) -------------------------------- */

void *act_cli_xmalloc(size_t n);
void *act_cli_xcalloc(size_t n, size_t size);
void *act_cli_xrealloc(void *p, size_t n);
char *act_cli_xstrdup(const char *s);

/** Grow *@p v (elements of @p size) so that index @p need fits. */
void act_cli_grow(void *v, size_t *cap, size_t need, size_t size);

/* ---- string -> index map ------------------------------------------------- */

/** Open-addressing hash map from byte strings (copied) to a size_t. */
typedef struct act_cli_map {
    char **keys;
    size_t *lens;
    size_t *vals;
    size_t cap, n;
} act_cli_map;

/** The value slot of @p key, inserted with value @p fresh if absent;
 *  *@p created (may be NULL) says which. */
size_t *act_cli_map_put(act_cli_map *m, const char *key, size_t len,
                        size_t fresh, int *created);
/** The value slot of @p key, or NULL. */
size_t *act_cli_map_get(const act_cli_map *m, const char *key, size_t len);
void act_cli_map_free(act_cli_map *m);

/** Print @p s to @p f with control bytes escaped (\n, \xNN). */
void act_cli_put_text(FILE *f, const char *s);

#endif /* ACT_CLI_TRACE_READ_H */
