/* SPDX-License-Identifier: MIT */
/*
 * The streaming trace reader: Chrome Trace Event JSON (actrace's, Kineto's,
 * any producer's) read from a file descriptor one event at a time, never
 * holding the document. Used by `actrace summary`, `actrace check` and every
 * later consumer of trace files. Built as the internal static library
 * actrace_reader (not part of libactrace's ABI).
 *
 * What the caller sees, in file order, is a sequence of items:
 *   - ACT__RD_EVENT: one element of the event array (the document itself
 *     when it is an array, else the value of its "traceEvents" member),
 *     with its index;
 *   - ACT__RD_MEMBER: any other member of the top-level object
 *     ("traceName", "deviceProperties", "actraceStats", ...), with its key.
 * Each item comes as a small tree of act__jv nodes (the value and
 * everything inside it). The tree, its strings and its number texts live in
 * the reader's buffer and are valid until the next act__rd_next() or
 * act__rd_destroy(); act__jv_dup() copies one that must outlive that.
 *
 * Input: plain JSON, gzip (detected by its magic bytes, zlib when built
 * with it; otherwise a clear error), from any descriptor: a file, stdin, a
 * pipe, a FIFO. The descriptor is read forward once with read(2) and never
 * reopened, rewound or closed by the reader.
 *
 * Strict RFC 8259: UTF-8 is validated (overlong forms, surrogates and code
 * points beyond U+10FFFF refused, as is a \u escape that leaves a lone
 * surrogate), numbers follow the grammar exactly, nothing but whitespace
 * may follow the document. Errors (act__rd_errmsg) give the byte offset in
 * the decoded stream and the event index, and say what happened when the
 * input is cut short or an item exceeds the size limit.
 *
 * Memory: one buffer that holds the current item (1 MiB, grown only for a
 * larger item, up to act__rd_opts.max_item_bytes) plus the item's nodes;
 * independent of the file size. Not thread-safe: one reader per thread.
 */
#ifndef ACT_READER_H
#define ACT_READER_H

#include <stddef.h>
#include <stdint.h>

/** JSON value types (explicit values; never renumbered). */
enum {
    ACT__J_NULL = 0,
    ACT__J_FALSE = 1,
    ACT__J_TRUE = 2,
    ACT__J_NUMBER = 3,
    ACT__J_STRING = 4,
    ACT__J_ARRAY = 5,
    ACT__J_OBJECT = 6
};

/** One JSON value of an item's tree. */
typedef struct act__jv {
    const char *key;  /**< member name (decoded, NUL-terminated); NULL in
                           arrays and for the item itself (events) */
    const char *s;    /**< string: decoded bytes, NUL-terminated (it may hold
                           NULs of its own: use len); number: its text, not
                           terminated (followed by a non-number byte) */
    size_t klen;      /**< bytes of key */
    size_t len;       /**< string bytes, number text length, or children */
    const struct act__jv *next;  /**< next sibling, NULL at the end */
    const struct act__jv *child; /**< first child of an array or object */
    uint32_t inext, ichild;      /**< the same as node indices (internal) */
    uint8_t type;                /**< ACT__J_* */
    uint8_t integer;             /**< number without fraction or exponent */
    /* Numbers (internal, filled by the reader's scan, read by act__jv_num
     * and friends): when mfast is 1 the text has no exponent and at most
     * 18 digits, mant is all its digits as one integer (sign aside) and
     * fdig how many of them follow the '.'. 0: parse the text. */
    uint8_t mfast, fdig;
    uint64_t mant;
} act__jv;

/** Kinds of items returned by act__rd_next(). */
enum { ACT__RD_EVENT = 1, ACT__RD_MEMBER = 2 };

typedef struct act__rd_item {
    int kind;           /**< ACT__RD_EVENT or ACT__RD_MEMBER */
    uint64_t index;     /**< event index (events only) */
    const char *key;    /**< member key (members only) */
    const act__jv *v;   /**< the value */
} act__rd_item;

/** Reader options; zero-initialise, set what you need. */
typedef struct act__rd_opts {
    size_t max_item_bytes; /**< largest event or member (0: 64 MiB) */
    unsigned max_depth;    /**< deepest nesting (0: 1000) */
    size_t buffer_bytes;   /**< initial buffer (0: 1 MiB; at least 16):
                                small ones exercise refills in tests */
} act__rd_opts;

typedef struct act__rd act__rd;

/** How the document was laid out (known once act__rd_next returned 0). */
enum {
    ACT__RD_TOP_ARRAY = 1,    /**< [ events ] */
    ACT__RD_TOP_OBJECT = 2,   /**< { ..., "traceEvents": [ ... ], ... } */
    ACT__RD_TOP_NO_EVENTS = 3 /**< an object without a traceEvents array,
                                   or a scalar document */
};

/** A reader of @p fd (borrowed: not closed). @p opts may be NULL.
 *  Returns 0, or -ENOMEM. */
int act__rd_create(int fd, const act__rd_opts *opts, act__rd **out);

/** The next item: ACT__RD_EVENT or ACT__RD_MEMBER with @p it filled in,
 *  0 at the end of a valid document, -1 on an error (read error, bad gzip
 *  data, invalid JSON, an item over the limits): act__rd_errmsg() says
 *  which and where; every later call returns -1 again. */
int act__rd_next(act__rd *r, act__rd_item *it);

/** The error message of the last failure ("" if none), e.g.
 *  "invalid JSON at byte offset 1234 (event #17): expected ',' or '}'". */
const char *act__rd_errmsg(const act__rd *r);

/** ACT__RD_TOP_*, or 0 while undecided. */
int act__rd_layout(const act__rd *r);

/** Events read so far. */
uint64_t act__rd_events(const act__rd *r);

/** Bytes of JSON consumed so far (decompressed) and bytes read from the
 *  descriptor. */
uint64_t act__rd_offset(const act__rd *r);
uint64_t act__rd_bytes_read(const act__rd *r);

/** Whether the input was gzip. */
int act__rd_gzip(const act__rd *r);

void act__rd_destroy(act__rd *r);

/* ---- values ------------------------------------------------------------- */

/** Member @p key of object @p o (the last one if repeated), or NULL (also
 *  when @p o is NULL or not an object). Linear in the members. */
const act__jv *act__jv_get(const act__jv *o, const char *key);

/** @p v as a double (numbers only; integers beyond 2^53 rounded, as
 *  JavaScript reads them). 1 and *out, or 0 when not a number. */
int act__jv_num(const act__jv *v, double *out);

/** @p v as an int64 (an integer text in range). 1 and *out, or 0. */
int act__jv_i64(const act__jv *v, int64_t *out);

/** @p v, microseconds, as integer nanoseconds rounded to nearest: exact
 *  for decimal texts (no double on the way for up to 18 significant
 *  digits), 0 when not a finite number within +-9.2e12 us. */
int act__jv_us_ns(const act__jv *v, int64_t *out);

/** Whether @p v is a string equal to @p s. */
int act__jv_is(const act__jv *v, const char *s);

/** A malloc'd standalone copy of the tree under @p v (the key kept), freed
 *  with free() alone. NULL when out of memory or @p v is NULL. */
act__jv *act__jv_dup(const act__jv *v);

#endif /* ACT_READER_H */
