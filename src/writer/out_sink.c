/* SPDX-License-Identifier: MIT */
/*
 * The streaming output sink of the trace writers (act__out, json_out.h).
 *
 * Bytes collect in a staging buffer that writers fill through
 * reserve/commit; a full buffer goes to the temporary file (through zlib
 * for ".gz" paths) or, for a memory sink, to a growing array. The file is
 * "<path>.tmp.XXXXXX" next to the final path (or "actrace.tmp.XXXXXX" in
 * its directory when that name would pass NAME_MAX), created with O_EXCL
 * and mode 0666 so the umask applies, and renamed over the final path only
 * when everything was written. Replacing an existing file keeps its mode
 * (and its owner where we may set it); hard links to the old file keep the
 * old content, as with any atomic replace. The first error is kept
 * (sticky): the temporary file is removed at once, further writes are
 * discarded, and finish reports it. Nothing ever appears at the final path
 * after an error.
 *
 * A target that is not a regular file (a character device such as
 * /dev/null, a FIFO, a terminal, /dev/stdout, /dev/fd/N: anything a rename
 * would replace with a regular file) is written in place, without a
 * temporary file: /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N
 * write to a duplicate of that descriptor, so ">>" appends and a pipe
 * ("-o >(gzip > t.gz)") works. Such output is not atomic: an error leaves
 * what was written so far.
 */
#include "writer/json_out.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "actrace/errors.h"

#ifdef ACT_HAVE_ZLIB
#include <dlfcn.h>
#include <pthread.h>
#include <zlib.h>
#define GZ_OUT_SIZE ((size_t)128 * 1024)
typedef struct gz_state {
    z_stream z;
    unsigned char out[GZ_OUT_SIZE];
} gz_state;

/* zlib, loaded when a ".gz" trace is first written rather than linked:
 * linked, every process the library is preloaded into (each compiler of
 * a build under `actrace record`) mapped and relocated it at its start
 * (measured: 14k instructions and about 0.15 ms of CPU per /bin/true). */
static struct {
    int (*init2)(z_streamp, int, int, int, int, int, const char *, int);
    int (*deflate)(z_streamp, int);
    int (*end)(z_streamp);
    char err[200];
} zf;
static pthread_once_t zf_once = PTHREAD_ONCE_INIT;

static void zf_load(void)
{
    void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(zf.err, sizeof zf.err, "%s", e ? e : "libz.so.1: cannot be loaded");
        return;
    }
    *(void **)&zf.init2 = dlsym(h, "deflateInit2_");
    *(void **)&zf.deflate = dlsym(h, "deflate");
    *(void **)&zf.end = dlsym(h, "deflateEnd");
    if (!zf.init2 || !zf.deflate || !zf.end) {
        snprintf(zf.err, sizeof zf.err, "libz.so.1 lacks deflateInit2_/deflate/deflateEnd");
        zf.init2 = NULL;
    }
}
#endif

enum { ST_CLOSED = 0, ST_FILE = 1, ST_MEM = 2, ST_MEM_DONE = 3 };

/* Input bytes escaped per piece by act__out_str: 6 output bytes each at
 * most, so a piece always fits in ACT__OUT_RESERVE_SAFE. */
#define STR_PIECE ((ACT__OUT_RESERVE_SAFE - 2) / 6)

__attribute__((format(printf, 3, 4))) static void
set_err(act__out *o, int code, const char *fmt, ...)
{
    if (o->err)
        return; /* sticky: keep the first */
    o->err = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->errmsg, sizeof o->errmsg, fmt, ap);
    va_end(ap);
}

static int code_of_errno(int e)
{
    switch (e) {
    case ENOSPC:
    case EFBIG:
#ifdef EDQUOT
    case EDQUOT:
#endif
        return ACT_ENOSPC;
    case ENOMEM:
        return ACT_ENOMEM;
    default:
        return ACT_EIO;
    }
}

/* After the first error the temporary file is useless: remove it now, so
 * that a full disk gets its space back before the writer finishes. */
static void drop_file(act__out *o)
{
    if (o->state != ST_FILE)
        return;
    if (o->fd >= 0) {
        close(o->fd);
        o->fd = -1;
    }
    if (o->tmp && o->tmp[0]) {
        unlink(o->tmp);
        o->tmp[0] = '\0';
    }
}

/* The descriptor a path such as /dev/stdout or /proc/self/fd/3 names, or
 * -1. Written through a dup() of it, the output shares the caller's file
 * offset and flags (O_APPEND) instead of reopening the file at 0. */
static int named_fd(const char *path)
{
    if (strcmp(path, "/dev/stdout") == 0)
        return 1;
    if (strcmp(path, "/dev/stderr") == 0)
        return 2;
    static const char *const dirs[] = {"/dev/fd/", "/proc/self/fd/",
                                       "/proc/thread-self/fd/"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        size_t n = strlen(dirs[i]);
        if (strncmp(path, dirs[i], n) != 0)
            continue;
        const char *d = path + n;
        long v = 0;
        if (!*d)
            return -1;
        for (; *d; d++) {
            if (*d < '0' || *d > '9' || v > 1000000)
                return -1;
            v = v * 10 + (*d - '0');
        }
        return (int)v;
    }
    return -1;
}

/* Opens a target that is written in place (see the file comment). */
static int open_in_place(const char *path, const struct stat *st, int *err)
{
    int fd = -1, nfd = named_fd(path);
    if (nfd >= 0)
        fd = fcntl(nfd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) {
        /* A regular file reached through /dev/stdout-like names that are
         * not open here is truncated, as a shell's '>' would. */
        int trunc = st && S_ISREG(st->st_mode) ? O_TRUNC : 0;
        do {
            fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | trunc);
        } while (fd < 0 && errno == EINTR);
    }
    if (fd < 0)
        *err = errno;
    return fd;
}

static void os_fail(act__out *o, const char *what, int e)
{
    set_err(o, code_of_errno(e), "cannot %s '%s': %s", what, o->path,
            strerror(e));
    drop_file(o);
}

static void write_all(act__out *o, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0 && !o->err) {
        ssize_t r = write(o->fd, p, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            os_fail(o, "write", errno);
            return;
        }
        if (r == 0) {
            /* Not expected from a regular file; do not spin. */
            os_fail(o, "write", EIO);
            return;
        }
        p += r;
        n -= (size_t)r;
    }
}

static void mem_append(act__out *o, const char *p, size_t n)
{
    if (o->mem_cap - o->mem_len < n + 1) {
        size_t nc = o->mem_cap ? o->mem_cap : 4096;
        while (nc - o->mem_len < n + 1) {
            if (nc > SIZE_MAX / 2) {
                nc = 0;
                break;
            }
            nc *= 2;
        }
        char *nm = nc ? realloc(o->mem, nc) : NULL;
        if (!nm) {
            set_err(o, ACT_ENOMEM, "memory output: out of memory");
            return;
        }
        o->mem = nm;
        o->mem_cap = nc;
    }
    memcpy(o->mem + o->mem_len, p, n);
    o->mem_len += n;
    o->mem[o->mem_len] = '\0';
}

#ifdef ACT_HAVE_ZLIB
/* Compress @p n bytes (or finish the stream) and write what comes out. */
static void gz_feed(act__out *o, const char *p, size_t n, int flush)
{
    gz_state *g = o->gz;
    /* avail_in is a uInt: feed huge inputs in slices. */
    do {
        size_t slice = n > (1u << 30) ? (1u << 30) : n;
        g->z.next_in = (unsigned char *)(uintptr_t)p;
        g->z.avail_in = (uInt)slice;
        int last = flush == Z_FINISH && slice == n;
        for (;;) {
            g->z.next_out = g->out;
            g->z.avail_out = (uInt)GZ_OUT_SIZE;
            int zr = zf.deflate(&g->z, last ? Z_FINISH : Z_NO_FLUSH);
            if (zr == Z_STREAM_ERROR) {
                set_err(o, ACT_EIO, "cannot write '%s': zlib deflate failed",
                        o->path);
                drop_file(o);
                return;
            }
            size_t have = GZ_OUT_SIZE - g->z.avail_out;
            if (have)
                write_all(o, g->out, have);
            if (o->err)
                return;
            if (last ? zr == Z_STREAM_END
                     : (g->z.avail_in == 0 && g->z.avail_out != 0))
                break;
        }
        p += slice;
        n -= slice;
    } while (n > 0);
}
#endif

/* Hand @p n bytes on to the backend (file, compressor, memory). */
static void sink(act__out *o, const char *p, size_t n)
{
    o->flushed += n;
    if (o->err || n == 0)
        return;
    if (o->state == ST_MEM) {
        mem_append(o, p, n);
        return;
    }
#ifdef ACT_HAVE_ZLIB
    if (o->gz) {
        gz_feed(o, p, n, Z_NO_FLUSH);
        return;
    }
#endif
    write_all(o, p, n);
}

static void flush_buf(act__out *o)
{
    size_t n = (size_t)(o->cur - o->buf);
    o->cur = o->buf;
    sink(o, o->buf, n);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static void free_all(act__out *o)
{
    free(o->buf);
    free(o->path);
    free(o->tmp);
#ifdef ACT_HAVE_ZLIB
    if (o->gz) {
        zf.end(&((gz_state *)o->gz)->z);
        free(o->gz);
    }
#endif
    o->buf = o->cur = o->lim = NULL;
    o->cap = 0;
    o->path = o->tmp = NULL;
    o->gz = NULL;
    o->fd = -1;
}

static int open_fail(act__out *o, char *err, size_t errcap)
{
    int e = o->err;
    if (o->state == ST_FILE && o->fd >= 0) {
        close(o->fd);
        if (o->tmp && o->tmp[0])
            unlink(o->tmp);
    }
    free_all(o);
    o->state = ST_CLOSED;
    if (err && errcap)
        snprintf(err, errcap, "%s", o->errmsg);
    return e;
}

int act__out_open(act__out *o, const char *path, char *err, size_t errcap)
{
    return act__out_open_ex(o, path, 0, err, errcap);
}

int act__out_open_ex(act__out *o, const char *path, unsigned flags, char *err,
                     size_t errcap)
{
    static atomic_uint_fast64_t counter;
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->flags = flags;
    if (!path || !path[0]) {
        set_err(o, ACT_EINVAL, "empty output path");
        return open_fail(o, err, errcap);
    }
    o->path = strdup(path);
    if (!o->path) {
        set_err(o, ACT_ENOMEM, "out of memory");
        return open_fail(o, err, errcap);
    }
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        set_err(o, ACT_EINVAL, "cannot write '%s': it is a directory", path);
        return open_fail(o, err, errcap);
    }
    /* Devices, FIFOs, sockets, terminals and the process's own
     * descriptors are written in place: a rename would replace the node
     * (as root, "-o /dev/null" would destroy /dev/null). */
    int in_place = (exists && !S_ISREG(st.st_mode)) || named_fd(path) >= 0;
    int gz = !(flags & ACT__OUT_NOGZIP) && ends_with(path, ".gz");
#ifndef ACT_HAVE_ZLIB
    if (gz) {
        set_err(o, ACT_ENOTSUP,
                "cannot write '%s': gzip output needs zlib, and actrace was "
                "built without it (write a path not ending in .gz)",
                path);
        return open_fail(o, err, errcap);
    }
#endif
    size_t plen = strlen(path);
    /* "<path>.tmp.XXXXXX" unless the name would pass NAME_MAX (a legal
     * name of 245 to 255 bytes): then "actrace.tmp.XXXXXX" beside it. */
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
    int short_tmp = plen - dlen + sizeof ".tmp.XXXXXX" - 1 > NAME_MAX;
    o->tmp = in_place ? NULL : malloc(plen + sizeof "actrace.tmp.XXXXXX");
    o->buf = malloc(ACT__OUT_BUF_SIZE);
    if ((!in_place && !o->tmp) || !o->buf) {
        set_err(o, ACT_ENOMEM, "cannot write '%s': out of memory", path);
        return open_fail(o, err, errcap);
    }
    o->cap = ACT__OUT_BUF_SIZE;
    o->cur = o->buf;
    o->lim = o->buf + o->cap;

    /* A fresh name next to the final path; O_EXCL makes it ours. The mode
     * 0666 lets the umask decide, as for any file the user creates. */
    static const char alnum[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed = ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec ^
                    ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)o;
    int fd = -1, e = EEXIST;
    if (in_place) {
        fd = open_in_place(path, exists ? &st : NULL, &e);
        if (fd < 0) {
            set_err(o, code_of_errno(e), "cannot open '%s': %s", path,
                    strerror(e));
            return open_fail(o, err, errcap);
        }
    }
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        uint64_t r = mix64(seed ^ mix64(atomic_fetch_add(&counter, 1)));
        char *q;
        if (short_tmp) {
            memcpy(o->tmp, path, dlen);
            q = o->tmp + dlen;
            memcpy(q, "actrace", 7);
            q += 7;
        } else {
            memcpy(o->tmp, path, plen);
            q = o->tmp + plen;
        }
        memcpy(q, ".tmp.", 5);
        q += 5;
        for (int k = 0; k < 6; k++, r /= 62)
            *q++ = alnum[r % 62];
        *q = '\0';
        do {
            fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        } while (fd < 0 && errno == EINTR);
        if (fd < 0) {
            e = errno;
            if (e != EEXIST)
                break;
        }
    }
    if (fd < 0) {
        set_err(o, code_of_errno(e), "cannot create '%s': %s", path,
                strerror(e));
        return open_fail(o, err, errcap);
    }
    o->fd = fd;
    o->state = ST_FILE;
    if (!in_place && exists) {
        /* Replacing a file: it keeps its owner (where we may set it) and
         * its permission bits (never set-id ones), not the umask's. */
        if (st.st_uid != geteuid() || st.st_gid != getegid())
            (void)!fchown(fd, st.st_uid, st.st_gid);
        (void)!fchmod(fd, st.st_mode & 0777);
    }

#ifdef ACT_HAVE_ZLIB
    if (gz) {
        pthread_once(&zf_once, zf_load);
        if (!zf.init2) {
            set_err(o, ACT_EIO, "cannot write '%s': gzip output needs zlib: %s (write a "
                    "path not ending in .gz)", path, zf.err);
            return open_fail(o, err, errcap);
        }
        gz_state *g = calloc(1, sizeof *g);
        if (!g) {
            set_err(o, ACT_ENOMEM, "cannot write '%s': out of memory", path);
            return open_fail(o, err, errcap);
        }
        /* windowBits 15+16: a gzip header and trailer, as gzip(1) makes. */
        if (zf.init2(&g->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                     (int)sizeof(z_stream)) != Z_OK) {
            free(g);
            set_err(o, ACT_ENOMEM, "cannot write '%s': zlib init failed",
                    path);
            return open_fail(o, err, errcap);
        }
        o->gz = g;
    }
#endif
    if (err && errcap)
        err[0] = '\0';
    return 0;
}

int act__out_open_mem(act__out *o, size_t bufsize)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    if (bufsize == 0)
        bufsize = ACT__OUT_BUF_SIZE;
    if (bufsize < ACT__OUT_RESERVE_SAFE)
        bufsize = ACT__OUT_RESERVE_SAFE;
    o->buf = malloc(bufsize);
    if (!o->buf) {
        set_err(o, ACT_ENOMEM, "memory output: out of memory");
        return ACT_ENOMEM;
    }
    o->cap = bufsize;
    o->cur = o->buf;
    o->lim = o->buf + bufsize;
    o->state = ST_MEM;
    return 0;
}

char *act__out_reserve_slow(act__out *o, size_t n)
{
    if (!o->buf)
        return NULL; /* not open: a caller bug */
    flush_buf(o);
    if (n <= o->cap)
        return o->cur;
    size_t nc = o->cap;
    while (nc < n) {
        if (nc > SIZE_MAX / 2) {
            nc = 0;
            break;
        }
        nc *= 2;
    }
    char *nb = nc ? realloc(o->buf, nc) : NULL;
    if (!nb) {
        set_err(o, ACT_ENOMEM, "cannot write '%s': out of memory",
                o->path ? o->path : "(memory)");
        drop_file(o);
        return NULL;
    }
    o->buf = o->cur = nb;
    o->cap = nc;
    o->lim = nb + nc;
    return o->cur;
}

void act__out_write(act__out *o, const void *p, size_t n)
{
    if (n == 0)
        return;
    if ((size_t)(o->lim - o->cur) >= n) {
        memcpy(o->cur, p, n);
        o->cur += n;
        return;
    }
    if (!o->buf)
        return;
    flush_buf(o);
    if (n <= o->cap) {
        memcpy(o->cur, p, n);
        o->cur += n;
    } else {
        sink(o, p, n); /* large: no copy through the buffer */
    }
}

void act__out_str_body(act__out *o, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t lim = n - i > STR_PIECE ? STR_PIECE : n - i;
        char *p = act__out_reserve(o, 6 * lim);
        if (!p)
            return;
        size_t used;
        p = act__json_escape_units(p, s + i, lim, n - i, &used);
        act__out_commit(o, p);
        i += used;
    }
}

void act__out_str(act__out *o, const char *s, size_t n)
{
    if (n <= STR_PIECE) {
        char *p = act__out_reserve(o, ACT__JSON_STR_MAX(n));
        if (!p)
            return;
        act__out_commit(o, act__json_str(p, s, n));
        return;
    }
    act__out_char(o, '"');
    act__out_str_body(o, s, n);
    act__out_char(o, '"');
}

const char *act__out_errmsg(const act__out *o)
{
    return o->errmsg;
}

int act__out_finish(act__out *o)
{
    if (o->state == ST_MEM) {
        flush_buf(o);
        free(o->buf);
        o->buf = o->cur = o->lim = NULL;
        o->cap = 0;
        o->state = ST_MEM_DONE;
        if (!o->err && !o->mem) {
            /* Empty output: still give the caller a buffer to take. */
            mem_append(o, "", 0);
        }
        if (o->err) {
            free(o->mem);
            o->mem = NULL;
            o->mem_len = o->mem_cap = 0;
        }
        return o->err;
    }
    if (o->state != ST_FILE) {
        set_err(o, ACT_ESTATE, "output is not open");
        return ACT_ESTATE;
    }
    flush_buf(o);
#ifdef ACT_HAVE_ZLIB
    if (o->gz && !o->err)
        gz_feed(o, "", 0, Z_FINISH);
#endif
    if (!o->err && (o->flags & ACT__OUT_FSYNC)) {
        int r;
        do {
            r = fsync(o->fd);
        } while (r < 0 && errno == EINTR);
        /* A pipe, a terminal or /dev/null cannot be synced: nothing to
         * report. */
        if (r < 0 && !(!o->tmp && (errno == EINVAL || errno == EROFS)))
            os_fail(o, "write", errno);
    }
    if (!o->err) {
        /* close() can report a deferred write error (NFS, quotas). */
        int r = close(o->fd);
        o->fd = -1;
        if (r < 0 && errno != EINTR)
            os_fail(o, "write", errno);
    }
    if (!o->err && o->tmp && rename(o->tmp, o->path) < 0) {
        int e = errno;
        set_err(o, code_of_errno(e), "cannot rename '%s' to '%s': %s",
                o->tmp, o->path, strerror(e));
    }
    if (o->err)
        drop_file(o);
    free_all(o);
    o->state = ST_CLOSED;
    return o->err;
}

char *act__out_mem_take(act__out *o, size_t *len)
{
    if (o->state != ST_MEM_DONE || !o->mem) {
        if (len)
            *len = 0;
        return NULL;
    }
    char *m = o->mem;
    if (len)
        *len = o->mem_len;
    o->mem = NULL;
    o->mem_len = o->mem_cap = 0;
    return m;
}

void act__out_abort(act__out *o)
{
    drop_file(o);
    free_all(o);
    free(o->mem);
    o->mem = NULL;
    o->mem_len = o->mem_cap = 0;
    o->state = ST_CLOSED;
}
