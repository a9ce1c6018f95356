/* SPDX-License-Identifier: MIT */
/*
 * The spool (spool.h): shared, file-backed chunk memory and the log of
 * everything else, and the rebuild of a trace from them after the process
 * is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/spool.h"

_Atomic int act__spooling;

/* The record directory is checked once (act__spool_dir_open: a
 * directory, owned by our euid, mode 0700) and from then on used only
 * through its descriptor (openat), never by its path: a directory someone
 * re-created at that path after record removed it is never written. The
 * descriptor sits at a high number (F_DUPFD_CLOEXEC). A program may still
 * close it (daemons close every descriptor) or dup2 a file of its own over
 * it: before each use its identity (st_dev, st_ino) is checked with fstat,
 * and where it is gone the path is opened again and accepted only if it is
 * the very directory checked at first (same identity, owner and mode, not
 * removed); otherwise, or when the directory was removed (st_nlink 0:
 * record ended and removed it), the process stops spooling and writing its
 * trace, and says so once. The spool's files are opened (openat) for each
 * use, never held, for the same reason. sp_open: the files exist and are
 * ours to write. */
static _Atomic int sp_open;
static uint64_t sp_size;     /* bytes of BASE.spool handed out (under sp_lock) */
static int sp_full_logged;   /* under sp_lock */
static _Atomic int sp_meta_broken; /* a short write: the log stops there */
/* BASE.spool, BASE.meta (in the directory), or NULL: in static buffers,
 * as the directory's path, so that a process that records nothing never
 * calls malloc (its first call sets up the heap). */
#define SP_NAME_MAX 256
static char *sp_names[2];
static char sp_name_buf[2][SP_NAME_MAX];
static int sp_removed;       /* the trace was written: files unlinked */
static int sp_light;         /* no session yet (act__spool_light_open): 1 BASE.meta,
                                2 frames in record's shared light log */
/* Shared light log: this process's records logged so far (its start
 * first), replayed into BASE.meta when its session starts; the frame
 * header before them is filled per write. */
static char sp_light_mem[2048];
static char *sp_light_recs = sp_light_mem;
static size_t sp_light_len, sp_light_cap = sizeof sp_light_mem;
static int sp_light_lost; /* a copy could not grow: BASE.meta would lack some */
static pthread_mutex_t sp_light_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t sp_base_len;
static char sp_base[80];
static atomic_int sp_taken;  /* a session spools already */
/* Small objects in the spool (act__spool_alloc): the region being carved. */
static char *sp_small_cur, *sp_small_end;
static uint64_t sp_small_off; /* file offset of sp_small_cur */
static pthread_mutex_t sp_small_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sp_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the record directory ------------------------------------------------ */

static _Atomic int sp_dirfd = -1;
static char *sp_dir;          /* its path, for messages and the re-open */
static char sp_dir_buf[PATH_MAX];
static dev_t sp_dir_dev;
static ino_t sp_dir_ino;
static atomic_int sp_dir_lost; /* gone: nothing is written there again */
static pthread_mutex_t sp_dir_lock = PTHREAD_MUTEX_INITIALIZER;

/* Move @p fd to a high descriptor number (close-on-exec), out of the way
 * of programs that expect the lowest free numbers. */
static int fd_high(int fd)
{
    struct rlimit rl;
    long floor = 512;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (long)rl.rlim_cur / 2 < floor)
        floor = (long)rl.rlim_cur / 2;
    int nfd = floor > 3 ? fcntl(fd, F_DUPFD_CLOEXEC, (int)floor) : -1;
    if (nfd < 0)
        return fd;
    close(fd);
    return nfd;
}

/* 0 if @p st is a directory owned by our euid, mode 0700 (no group or
 * other bits), not removed; else -1 with errno and *@p why. */
static int dir_safe(const struct stat *st, const char **why)
{
    if (!S_ISDIR(st->st_mode)) {
        *why = "not a directory";
        errno = ENOTDIR;
        return -1;
    }
    if (st->st_uid != geteuid()) {
        *why = "owned by another user";
        errno = EPERM;
        return -1;
    }
    if (st->st_mode & 077) {
        *why = "open to other users (mode not 0700)";
        errno = EPERM;
        return -1;
    }
    if (st->st_nlink == 0) {
        *why = "removed";
        errno = ENOENT;
        return -1;
    }
    return 0;
}

int act__spool_dir_open(const char *dir)
{
    const char *why = NULL;
    if (dir[0] != '/') {
        act_log(ACT_LOG_ERROR, "ACTRACE_RECORD_DIR %s is not an absolute path: not recording",
                dir);
        errno = EINVAL;
        return -1;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || dir_safe(&st, &why) != 0) {
        int e = errno;
        act_log(ACT_LOG_ERROR, "record directory %s: %s: not recording", dir,
                why ? why : strerror(e));
        if (fd >= 0)
            close(fd);
        errno = e;
        return -1;
    }
    size_t dl = strlen(dir);
    if (dl >= sizeof sp_dir_buf) {
        act_log(ACT_LOG_ERROR, "record directory %.64s...: path too long: not recording", dir);
        close(fd);
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sp_dir_buf, dir, dl + 1);
    sp_dir = sp_dir_buf;
    sp_dir_dev = st.st_dev;
    sp_dir_ino = st.st_ino;
    atomic_store(&sp_dir_lost, 0);
    atomic_store(&sp_dirfd, fd_high(fd));
    return 0;
}


int act__spool_dir_check(void)
{
    if (atomic_load_explicit(&sp_dir_lost, memory_order_relaxed))
        return -1;
    int fd = atomic_load(&sp_dirfd);
    if (fd < 0)
        return -1;
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) == 0 && st.st_dev == sp_dir_dev && st.st_ino == sp_dir_ino &&
        dir_safe(&st, &why) == 0)
        return fd;
    pthread_mutex_lock(&sp_dir_lock);
    if (atomic_load(&sp_dir_lost)) {
        pthread_mutex_unlock(&sp_dir_lock);
        return -1;
    }
    if (atomic_load(&sp_dirfd) != fd) {
        /* Another thread re-opened it meanwhile. */
        pthread_mutex_unlock(&sp_dir_lock);
        return act__spool_dir_check();
    }
    int removed = why && st.st_dev == sp_dir_dev && st.st_ino == sp_dir_ino;
    if (!removed) {
        /* Our descriptor was closed or replaced by the program: the path
         * again, accepted only as the very directory checked at first. */
        int nfd = open(sp_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat nst;
        const char *nwhy = NULL;
        if (nfd >= 0 && fstat(nfd, &nst) == 0 && nst.st_dev == sp_dir_dev &&
            nst.st_ino == sp_dir_ino && dir_safe(&nst, &nwhy) == 0) {
            nfd = fd_high(nfd);
            atomic_store(&sp_dirfd, nfd);
            pthread_mutex_unlock(&sp_dir_lock);
            return nfd;
        }
        if (nfd >= 0)
            close(nfd);
        why = nwhy ? nwhy : "replaced by another directory";
        if (nfd < 0)
            why = "removed";
    }
    /* Never used again: writing there could hand our data to whoever
     * re-created the path. The descriptor, if it is still ours, is kept
     * (the number may be the program's now). */
    atomic_store(&sp_dir_lost, 1);
    atomic_store_explicit(&sp_open, 0, memory_order_release);
    act__spooling = 0;
    pthread_mutex_unlock(&sp_dir_lock);
    act_log(ACT_LOG_ERROR, "record directory %s: %s (did `actrace record` end?): this process "
            "(pid %d) stops spooling and will not write its trace", sp_dir ? sp_dir : "?",
            why ? why : "gone", (int)getpid());
    return -1;
}

/* openat in the checked record directory; -1 if it is gone. */
static int dir_open(const char *name, int flags, mode_t mode)
{
    int dfd = act__spool_dir_check();
    if (dfd < 0) {
        errno = ENOENT;
        return -1;
    }
    return openat(dfd, name, flags | O_CLOEXEC | O_NOFOLLOW, mode);
}

/* ---- file-size limits ------------------------------------------------------ */

/* The library's own writes never raise SIGXFSZ in the program: where
 * RLIMIT_FSIZE is finite, SIGXFSZ is blocked around the write, and one the
 * write raised (it was not pending before) is consumed; the write then
 * fails with EFBIG, refused like a full disk. */
void act__xfsz_block(act__xfsz_guard *g)
{
    struct rlimit rl;
    g->active = getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY;
    if (!g->active)
        return;
    sigset_t set, pend;
    sigemptyset(&set);
    sigaddset(&set, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &set, &g->old);
    g->was_pending = sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ);
}

void act__xfsz_unblock(act__xfsz_guard *g)
{
    if (!g->active)
        return;
    int e = errno;
    sigset_t set, pend;
    sigemptyset(&set);
    sigaddset(&set, SIGXFSZ);
    if (!g->was_pending && sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ)) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
    errno = e;
}

/* ---- writing ------------------------------------------------------------- */

size_t act__spool_encode(char *buf, size_t cap, uint32_t type, const int64_t *ints,
                         uint32_t nints, const char *const *strs, const size_t *lens,
                         uint32_t nstrs)
{
    size_t len = 8 + (size_t)nints * 8;
    for (uint32_t i = 0; i < nstrs; i++)
        len += 4 + (lens[i] > UINT32_MAX / 2 ? UINT32_MAX / 2 : lens[i]);
    if (len > UINT32_MAX / 2 || len + 8 > cap)
        return 0;
    uint32_t hdr[4] = {type, (uint32_t)len, nints, nstrs};
    memcpy(buf, hdr, 16);
    char *p = buf + 16;
    if (nints)
        memcpy(p, ints, (size_t)nints * 8);
    p += (size_t)nints * 8;
    for (uint32_t i = 0; i < nstrs; i++) {
        uint32_t l = (uint32_t)(lens[i] > UINT32_MAX / 2 ? UINT32_MAX / 2 : lens[i]);
        memcpy(p, &l, 4);
        if (l)
            memcpy(p + 4, strs[i], l);
        p += 4 + l;
    }
    return (size_t)(p - buf);
}

/* One write of @p len bytes to @p fd (O_APPEND), SIGXFSZ kept from the
 * program: 1 when all of it was written. */
static int append_all(int fd, const void *p, size_t len)
{
    act__xfsz_guard g;
    act__xfsz_block(&g);
    ssize_t w;
    do
        w = write(fd, p, len);
    while (w < 0 && errno == EINTR);
    act__xfsz_unblock(&g);
    return w == (ssize_t)len;
}

/* Records @p recs (@p len bytes, act__spool_encode's) of this process as
 * one frame of the shared light log, one write: O_APPEND places each
 * frame whole after the others, whoever writes them. Kept for the replay
 * into BASE.meta when they fit. 1 when written. */
static int light_write(const char *recs, size_t len)
{
    char stack[1024];
    size_t hl = ACT__LIGHT_FRAME_HEAD + sp_base_len, total = hl + len;
    if (total > UINT32_MAX / 2)
        return 0;
    char *buf = total <= sizeof stack ? stack : malloc(total);
    if (!buf)
        return 0;
    uint32_t h[3] = {ACT__LIGHT_MAGIC, (uint32_t)total, (uint32_t)sp_base_len};
    memcpy(buf, h, sizeof h);
    memcpy(buf + ACT__LIGHT_FRAME_HEAD, sp_base, sp_base_len);
    memcpy(buf + hl, recs, len);
    /* O_NONBLOCK: a FIFO put in its place fails (ENXIO) rather than
     * blocks the program; a regular file ignores it. */
    int ok = 0, fd = dir_open(ACT__LIGHT_LOG, O_WRONLY | O_APPEND | O_NONBLOCK, 0);
    if (fd >= 0) {
        ok = append_all(fd, buf, total);
        close(fd);
    }
    if (buf != stack)
        free(buf);
    pthread_mutex_lock(&sp_light_lock);
    if (ok && len > sp_light_cap - sp_light_len) {
        /* More than the static copy holds (many act_process_name calls):
         * grown on the heap, off any hot path. */
        size_t nc = sp_light_cap * 2 > sp_light_len + len ? sp_light_cap * 2 : sp_light_len + len;
        char *n = malloc(nc);
        if (n) {
            memcpy(n, sp_light_recs, sp_light_len);
            if (sp_light_recs != sp_light_mem)
                free(sp_light_recs);
            sp_light_recs = n;
            sp_light_cap = nc;
        } else {
            sp_light_lost = 1;
        }
    }
    if (ok && len <= sp_light_cap - sp_light_len) {
        memcpy(sp_light_recs + sp_light_len, recs, len);
        sp_light_len += len;
    }
    pthread_mutex_unlock(&sp_light_lock);
    return ok;
}

static void light_append(const char *recs, size_t len)
{
    if (!light_write(recs, len) && atomic_load(&sp_open)) {
        atomic_store(&sp_meta_broken, 1);
        act_log(ACT_LOG_ERROR, "spool: cannot append to %s/%s: %s; a crash from now on loses "
                "what is recorded after this point", sp_dir ? sp_dir : "?", ACT__LIGHT_LOG,
                strerror(errno));
    }
}

void act__spool_append(const char *recs, size_t len)
{
    if (!len || !atomic_load_explicit(&sp_open, memory_order_acquire) ||
        atomic_load_explicit(&sp_meta_broken, memory_order_relaxed))
        return;
    if (sp_light == 2) {
        light_append(recs, len);
        return;
    }
    int fd = dir_open(sp_names[1], O_WRONLY | O_APPEND, 0);
    int ok = fd >= 0 && append_all(fd, recs, len);
    if (fd >= 0)
        close(fd);
    if (!ok && atomic_load(&sp_open)) {
        atomic_store(&sp_meta_broken, 1);
        act_log(ACT_LOG_ERROR, "spool: cannot append to %s: %s; a crash from now on loses what "
                "is recorded after this point", sp_names[1], strerror(errno));
    }
}

void act__spool_log(uint32_t type, const int64_t *ints, uint32_t nints,
                    const char *const *strs, const size_t *lens, uint32_t nstrs)
{
    if (!atomic_load_explicit(&sp_open, memory_order_acquire) ||
        atomic_load_explicit(&sp_meta_broken, memory_order_relaxed))
        return;
    size_t len = 8 + (size_t)nints * 8;
    for (uint32_t i = 0; i < nstrs; i++)
        len += 4 + (lens[i] > UINT32_MAX / 2 ? UINT32_MAX / 2 : lens[i]);
    if (len > UINT32_MAX / 2)
        return;
    char stack[1024];
    char *buf = len + 8 <= sizeof stack ? stack : malloc(len + 8);
    if (!buf)
        return;
    /* One write with O_APPEND: records of concurrent writers never
     * interleave. A short write (a full disk) ends the log: the rebuild
     * stops at the torn record, so nothing after it may follow. */
    size_t total = act__spool_encode(buf, len + 8, type, ints, nints, strs, lens, nstrs);
    if (sp_light == 2) {
        light_append(buf, total);
        if (buf != stack)
            free(buf);
        return;
    }
    ssize_t w = -1;
    int fd = dir_open(sp_names[1], O_WRONLY | O_APPEND, 0);
    if (fd >= 0) {
        act__xfsz_guard g;
        act__xfsz_block(&g);
        do
            w = write(fd, buf, total);
        while (w < 0 && errno == EINTR);
        act__xfsz_unblock(&g);
        close(fd);
    }
    if (w != (ssize_t)total && atomic_load(&sp_open)) {
        atomic_store(&sp_meta_broken, 1);
        act_log(ACT_LOG_ERROR, "spool: cannot append to %s: %s; a crash from now on loses what "
                "is recorded after this point", sp_names[1], w < 0 ? strerror(errno) : "short write");
    }
    if (buf != stack)
        free(buf);
}

void act__spool_log_name(uint32_t id, const char *s, size_t n)
{
    int64_t v = id;
    act__spool_log(ACT__SP_NAME, &v, 1, &s, &n, 1);
}

void act__spool_log_prop(uint32_t device, const act__arg *a)
{
    int64_t v[3] = {device, a->kind, 0};
    const char *strs[2] = {a->key, ""};
    size_t lens[2] = {a->key_len, 0};
    switch (a->kind) {
    case ACT__V_INT: v[2] = a->v.i; break;
    case ACT__V_UINT: v[2] = (int64_t)a->v.u; break;
    case ACT__V_DOUBLE: memcpy(&v[2], &a->v.d, 8); break;
    case ACT__V_BOOL: v[2] = a->v.b; break;
    case ACT__V_JSON: /* device properties are never JSON */
    case ACT__V_STR: strs[1] = a->v.s.p; lens[1] = a->v.s.n; break;
    }
    act__spool_log(ACT__SP_PROP, v, 3, strs, lens, 2);
}

static char *cat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *p = malloc(na + nb + 1);
    if (p) {
        memcpy(p, a, na);
        memcpy(p + na, b, nb + 1);
    }
    return p;
}

/* Names the spool's files: BASE.spool and BASE.meta (NULL both, with
 * ENAMETOOLONG, when they do not fit). */
static void names_set(const char *base)
{
    size_t n = strlen(base);
    if (n + sizeof ".spool" > SP_NAME_MAX) {
        sp_names[0] = sp_names[1] = NULL;
        errno = ENAMETOOLONG;
        return;
    }
    memcpy(sp_name_buf[0], base, n);
    memcpy(sp_name_buf[0] + n, ".spool", sizeof ".spool");
    memcpy(sp_name_buf[1], base, n);
    memcpy(sp_name_buf[1] + n, ".meta", sizeof ".meta");
    sp_names[0] = sp_name_buf[0];
    sp_names[1] = sp_name_buf[1];
}

int act__spool_light_open(const char *base, const char *recs, size_t len)
{
    names_set(base);
    size_t bl = strlen(base);
    /* Record's shared light log: no file of this process's own (a file
     * made and removed per process is most of what a short process cost
     * under record; measured in docs/cli.md). Without one, BASE.meta. */
    if (sp_names[0] && bl < sizeof sp_base) {
        memcpy(sp_base, base, bl);
        sp_base_len = bl;
        sp_light_len = 0;
        if (light_write(recs, len)) {
            sp_removed = 0;
            sp_light = 2;
            atomic_store(&sp_meta_broken, 0);
            atomic_store(&sp_taken, 1);
            atomic_store_explicit(&sp_open, 1, memory_order_release);
            return 0;
        }
        /* No light log (an older record), or one that cannot be written
         * (replaced by something else, a full disk): a file of its own. */
    }
    int fd = sp_names[0] && sp_names[1]
                 ? dir_open(sp_names[1], O_WRONLY | O_APPEND | O_CREAT | O_EXCL, 0600)
                 : -1;
    if (fd < 0) {
        sp_names[0] = sp_names[1] = NULL;
        return -1;
    }
    int whole = append_all(fd, recs, len);
    close(fd);
    sp_removed = 0;
    sp_light = 1;
    atomic_store(&sp_meta_broken, !whole);
    atomic_store(&sp_taken, 1); /* no session spools into it */
    atomic_store_explicit(&sp_open, 1, memory_order_release);
    return 0;
}

int act__spool_open(const char *base)
{
    int fd0 = -1, fd1 = -1;
    int light = sp_light; /* BASE.meta exists already: ours */
    if (!light)
        names_set(base);
    if (!sp_names[0] || !sp_names[1])
        goto fail;
    fd0 = dir_open(sp_names[0], O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd0 < 0)
        goto fail;
    fd1 = dir_open(sp_names[1], O_WRONLY | O_APPEND | (light == 1 ? 0 : O_CREAT | O_EXCL), 0600);
    if (fd1 < 0)
        goto fail;
    /* From the shared light log: BASE.meta starts with what this process
     * logged there (record reads a process's frames only where it has no
     * BASE.meta). */
    if (light == 2 && sp_light_len && !append_all(fd1, sp_light_recs, sp_light_len)) {
        int e = errno ? errno : ENOSPC;
        close(fd1);
        fd1 = -1;
        int dfd = act__spool_dir_check();
        if (dfd >= 0)
            unlinkat(dfd, sp_names[1], 0);
        errno = e;
        goto fail;
    }
    if (light == 2 && sp_light_lost)
        act_log(ACT_LOG_WARN, "spool: %s lacks some of what was logged before the session "
                "started (out of memory)", sp_names[1]);
    close(fd0);
    close(fd1);
    sp_light = 0;
    sp_size = 0;
    sp_full_logged = 0;
    sp_removed = 0;
    sp_small_cur = sp_small_end = NULL;
    atomic_store(&sp_taken, 0);
    atomic_store(&sp_meta_broken, 0);
    atomic_store_explicit(&sp_open, 1, memory_order_release);
    /* The first threads' state, reserved now: a thread that starts when
     * the disk is already full still has its drop counts spooled. */
    uint64_t o;
    void *first = act__spool_alloc(64, &o);
    if (first) {
        sp_small_cur -= 64;
        sp_small_off -= 64;
    }
    /* From here on new names are logged as they are interned; those that
     * exist are logged now, under the same lock (strtab.c). */
    act__strtab_spool_begin();
    return 0;
fail:;
    int e = errno;
    if (fd0 >= 0) {
        close(fd0);
        int dfd = act__spool_dir_check();
        if (dfd >= 0)
            unlinkat(dfd, sp_names[0], 0);
    }
    if (!light)
        sp_names[0] = sp_names[1] = NULL;
    errno = e;
    return -1;
}

int act__spool_take(void)
{
    int no = 0;
    return act__spooling && atomic_load(&sp_open) &&
           atomic_compare_exchange_strong(&sp_taken, &no, 1);
}

void act__spool_remove(void)
{
    if (!atomic_load(&sp_open) || sp_removed)
        return;
    sp_removed = 1;
    act__spooling = 0;
    atomic_store(&sp_open, 0);
    /* The files go; their mappings stay until the process ends: threads
     * still recording (exit handlers) write to memory released then. */
    int dfd = act__spool_dir_check();
    if (dfd >= 0) {
        unlinkat(dfd, sp_names[1], 0);
        unlinkat(dfd, sp_names[0], 0);
    }
}

void act__spool_atfork_child(void)
{
    sp_removed = 0;
    sp_light = 0;
    pthread_mutex_init(&sp_lock, NULL);
    pthread_mutex_init(&sp_small_lock, NULL);
    pthread_mutex_init(&sp_light_lock, NULL);
    sp_light_len = 0;
    sp_light_lost = 0;
    sp_small_cur = sp_small_end = NULL;
    act__spooling = 0;
    atomic_store(&sp_taken, 0);
    atomic_store(&sp_open, 0);
    sp_names[0] = sp_names[1] = NULL;
    /* The record directory's descriptor stays: the child checked nothing
     * else, and uses the same directory. */
    pthread_mutex_init(&sp_dir_lock, NULL);
}

void *act__spool_map(size_t size, uint64_t *off)
{
    return act__spool_map_at(NULL, size, off);
}

void *act__spool_map_at(void *at_addr, size_t size, uint64_t *off)
{
    if (!atomic_load_explicit(&sp_open, memory_order_acquire))
        return NULL;
    pthread_mutex_lock(&sp_lock);
    uint64_t at = sp_size;
    sp_size = at + size; /* reserved: filled below, outside the lock */
    pthread_mutex_unlock(&sp_lock);
    int fd = dir_open(sp_names[0], O_RDWR, 0);
    if (fd < 0)
        return NULL;
    /* Reserve the blocks now by writing zeros: a full disk refuses the
     * chunk here (ENOSPC), where it is counted, rather than as SIGBUS when
     * a page is first written through the mapping. Written zeros, not
     * fallocate: ext4 then has nothing to convert when the pages are
     * faulted in (measured: the pre-fault thread keeps up, and the
     * recording thread took 4 instead of 600-4400 faults per 1M events
     * with 2 args). A failed range stays a hole in the file. */
    static const char zeros[65536];
    act__xfsz_guard g;
    act__xfsz_block(&g);
    for (size_t done = 0; done < size;) {
        size_t n = size - done < sizeof zeros ? size - done : sizeof zeros;
        ssize_t w = pwrite(fd, zeros, n, (off_t)(at + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w == 0 ? ENOSPC : errno;
            act__xfsz_unblock(&g);
            close(fd);
            pthread_mutex_lock(&sp_lock);
            int first = !sp_full_logged;
            sp_full_logged = 1;
            pthread_mutex_unlock(&sp_lock);
            if (first)
                act_log(ACT_LOG_ERROR, "spool: cannot grow %s by %zu bytes: %s; events are "
                        "dropped (counted) from now on", sp_names[0], size, strerror(e));
            return NULL;
        }
        done += (size_t)w;
    }
    act__xfsz_unblock(&g);
    void *p = mmap(at_addr, size, PROT_READ | PROT_WRITE, MAP_SHARED | (at_addr ? MAP_FIXED : 0),
                   fd, (off_t)at);
    close(fd); /* the mapping keeps the file */
    if (p == MAP_FAILED)
        return NULL;
    *off = at;
    return p;
}

void act__spool_writeback(uint64_t off, size_t size)
{
    int fd = atomic_load(&sp_open) ? dir_open(sp_names[0], O_RDWR, 0) : -1;
    if (fd >= 0) {
        sync_file_range(fd, (off_t)off, (off_t)size, SYNC_FILE_RANGE_WRITE);
        close(fd);
    }
}

int act__spool_spill(void *p, uint64_t off, size_t size)
{
    int fd = atomic_load(&sp_open) ? dir_open(sp_names[0], O_RDWR, 0) : -1;
    if (fd < 0)
        return -1;
    /* Clean first: reclaim only drops clean file pages. */
    int rc = sync_file_range(fd, (off_t)off, (off_t)size,
                             SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                 SYNC_FILE_RANGE_WAIT_AFTER);
    close(fd);
    if (rc != 0)
        return -1;
#ifdef MADV_PAGEOUT
    madvise(p, size, MADV_PAGEOUT);
#else
    /* An older kernel: the pages are clean and reclaimable, at least. */
    (void)p;
#endif
    return 0;
}

void *act__spool_alloc(size_t size, uint64_t *off)
{
    size = (size + 63) & ~(size_t)63;
    pthread_mutex_lock(&sp_small_lock);
    if ((size_t)(sp_small_end - sp_small_cur) < size) {
        size_t region = size > ((size_t)256 << 10) ? (size + 4095) & ~(size_t)4095 : (size_t)256 << 10;
        uint64_t o;
        char *p = act__spool_map(region, &o);
        if (!p) {
            pthread_mutex_unlock(&sp_small_lock);
            return NULL;
        }
        sp_small_cur = p;
        sp_small_end = p + region;
        sp_small_off = o;
    }
    void *r = sp_small_cur;
    *off = sp_small_off;
    sp_small_cur += size;
    sp_small_off += size;
    pthread_mutex_unlock(&sp_small_lock);
    return r; /* fresh file blocks: zero */
}

/* ---- rebuilding ---------------------------------------------------------------- */

typedef struct sp_rec {
    uint32_t type, nints, nstrs;
    const int64_t *ints; /* unaligned: read with memcpy (ival) */
    const char *strs[4];
    uint32_t lens[4];
} sp_rec;

static int64_t ival(const sp_rec *r, uint32_t i)
{
    int64_t v = 0;
    if (i < r->nints)
        memcpy(&v, (const char *)r->ints + 8 * (size_t)i, 8);
    return v;
}

static const char *sval(const sp_rec *r, uint32_t i, size_t *len)
{
    if (i < r->nstrs && i < 4) {
        *len = r->lens[i];
        return r->strs[i];
    }
    *len = 0;
    return "";
}

/* The next record at *@p pos, or 0 at the end or at a torn record. */
static int next_rec(const char *buf, size_t n, size_t *pos, sp_rec *r)
{
    if (n - *pos < 16)
        return 0;
    uint32_t hdr[4];
    memcpy(hdr, buf + *pos, 16);
    size_t len = hdr[1];
    if (len < 8 || len + 8 > n - *pos)
        return 0;
    const char *p = buf + *pos + 16, *end = buf + *pos + 8 + len;
    r->type = hdr[0];
    r->nints = hdr[2];
    r->nstrs = hdr[3];
    if (r->nints > 64 || r->nstrs > 64 || (size_t)(end - p) < (size_t)r->nints * 8)
        return 0;
    r->ints = (const int64_t *)(const void *)p;
    p += (size_t)r->nints * 8;
    for (uint32_t i = 0; i < r->nstrs; i++) {
        uint32_t l;
        if (end - p < 4)
            return 0;
        memcpy(&l, p, 4);
        if ((size_t)(end - p - 4) < l)
            return 0;
        if (i < 4) {
            r->strs[i] = p + 4;
            r->lens[i] = l;
        }
        p += 4 + l;
    }
    *pos += 8 + len;
    return 1;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static char *read_all(const char *path, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size < ((uint64_t)1 << 32)) {
        buf = malloc((size_t)st.st_size + 1);
        size_t got = 0;
        while (buf && got < (size_t)st.st_size) {
            ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        *n = got;
    }
    close(fd);
    return buf;
}

/* 1 if local ref @p ref lies inside chunk @p c with its bytes. */
static int ref_ok(const act__chunk *c, uint32_t ref)
{
    if (!(ref & ACT__REF_LOCAL))
        return 1;
    uint32_t off = ref & ~ACT__REF_LOCAL, len;
    if (off < sizeof(act__chunk) || off > c->size - 4 || (off & 3))
        return 0;
    memcpy(&len, (const char *)c + off, 4);
    return len <= c->size - off - 4;
}

/* Check a chunk's committed records against its bounds (a program may
 * have scribbled over the spool); cut it at the first bad one. Returns the
 * latest time it holds. */
static int64_t chunk_check(act__chunk *c, int64_t anchor, int64_t latest, uint64_t *events,
                           uint64_t *samples)
{
    uint32_t used0 = atomic_load_explicit(&c->used, memory_order_relaxed), used = used0;
    uint32_t cap = (uint32_t)((c->size - sizeof(act__chunk)) / sizeof(act__rec));
    if (used > cap)
        used = cap;
    uint32_t i = 0;
    for (; i < used; i++) {
        act__rec *r = &c->recs[i];
        int64_t t1 = atomic_load_explicit(&r->t1, memory_order_relaxed);
        int ok = ref_ok(c, r->name);
        switch (r->kind) {
        case ACT__R_SPAN:
        case ACT__R_EMIT_SPAN:
            /* Times as the recording calls check them: within the window
             * of the session's anchor, and no end before the start. */
            ok = ok && act__time_near(r->t0, anchor) &&
                 (t1 == ACT__OPEN || (act__time_near(t1, anchor) && t1 >= r->t0));
            if (r->t0 > latest)
                latest = r->t0;
            if (t1 != ACT__OPEN && t1 > latest)
                latest = t1;
            break;
        case ACT__R_INSTANT:
        case ACT__R_EMIT_INSTANT:
        case ACT__R_COUNTER:
            ok = ok && act__time_near(r->t0, anchor);
            if (r->t0 > latest)
                latest = r->t0;
            break;
        case ACT__R_ARG:
            /* A kind beyond the last is refused: its value would be read
             * as a string reference nobody checked. */
            ok = ok && r->flags <= ACT__V_JSON;
            if (act__vkind_text(r->flags))
                ok = ok && ref_ok(c, (uint32_t)r->x | ACT__REF_LOCAL);
            if (t1 & ACT__ARG2_PRESENT) {
                ok = ok && ref_ok(c, (uint32_t)t1) && (uint8_t)(t1 >> 32) <= ACT__V_JSON;
                if (act__vkind_text((uint8_t)(t1 >> 32)))
                    ok = ok && ref_ok(c, (uint32_t)r->t0 | ACT__REF_LOCAL);
            }
            break;
        case ACT__R_AUX_DEV:
            break;
        default:
            ok = 0;
        }
        if (!ok)
            break;
        if (r->kind == ACT__R_COUNTER)
            ++*samples;
        else if (r->kind != ACT__R_ARG && r->kind != ACT__R_AUX_DEV)
            ++*events;
    }
    /* Stored whenever it is less than the chunk said, a count past the
     * chunk's capacity too (the writer reads as many as it says). */
    if (i < used0)
        atomic_store_explicit(&c->used, i, memory_order_relaxed);
    return latest;
}

/* act__chunk.heap of a chunk the rebuild linked (real ones: 0, 1, 2). */
#define LINKED 0x6c696e6bu

typedef struct sp_tname {
    int32_t tid;
    uint64_t serial;
    const char *name;
    size_t len;
    int by_plugin;
} sp_tname;

/* A thread's chunks, in the order of its list (the rebuild). */
typedef struct sp_clist {
    act__thread *t;
    struct {
        uint64_t off;
        uint32_t size;
    } *v;
    size_t n, cap;
} sp_clist;

/* 1 if a chunk of @p size bytes at file offset @p off lies in a map of
 * @p maplen bytes, whole pages at a page offset. */
static int chunk_place_ok(uint64_t off, uint64_t size, size_t maplen)
{
    return size >= 4096 && size <= UINT32_MAX / 2 && !(size & 4095) && !(off & 4095) &&
           off <= maplen && size <= maplen - off;
}

/* Pages of the spool that chunks taken so far cover (1 each): a chunk
 * whose pages another one covers is not taken. A real spool never has two
 * chunks over one page; a scribbled one could, and the rebuild writes each
 * chunk's header (links, cut counts) in its private copy, then drops the
 * pages past a chunk's header page (act__chunk_drop_read): over another
 * chunk's header that would undo its fix-up and leave a stale count and
 * link for the writer to follow. */
static int pages_free(const uint8_t *cover, uint64_t off, uint64_t size)
{
    for (uint64_t p = off / 4096; p < (off + size) / 4096; p++)
        if (cover[p])
            return 0;
    return 1;
}

static void pages_mark(uint8_t *cover, uint64_t off, uint64_t size, uint8_t v)
{
    memset(cover + off / 4096, v, (size_t)(size / 4096));
}

/* Append @p e to the array *@p v; 0, or -1 out of memory. */
static int tn_push(sp_tname **v, size_t *n, size_t *cap, sp_tname e)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        sp_tname *nv = realloc(*v, ncap * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
        *cap = ncap;
    }
    (*v)[(*n)++] = e;
    return 0;
}

/* What the light log of a process that recorded nothing says, as the host
 * plugin would have sampled it (memory and CPU at start and, when it ended
 * normally, at exit; docs/record.md) and one span for its life with its
 * parent and exit status: recorded into @p s (the rebuild's own session,
 * in record's child) on this thread, which then stands for the process's
 * main thread. CPU is what the process used between the library's load
 * and its exit. @p end NULL: it did not exit normally. */
static void light_life(act_session *s, int32_t pid, const int64_t *start, const int64_t *end)
{
    atomic_store(&s->state, ACT__S_COLLECTING);
    atomic_store_explicit(&act__recording, s, memory_order_release);
    uint32_t mem, cu, cs;
    int ok = act__series_find(s, 0, ACT__HOST_DEVICE, "memory", "rss_bytes", "bytes", &mem,
                              NULL) == 0 &&
             act__series_find(s, 0, ACT__HOST_DEVICE, "cpu", "user", "%", &cu, NULL) == 0 &&
             act__series_find(s, 0, ACT__HOST_DEVICE, "cpu", "system", "%", &cs, NULL) == 0;
    int64_t t0 = s->start_mono_ns, t1 = s->stop_mono_ns;
    if (ok && start[1] >= 0)
        act__counter_sample(s, mem, t0, (double)start[1] * 1024.0);
    if (end) {
        act_span_record(ACT_USER_ANNOTATION, "process", t0, t1);
        act_arg_int("parent_pid", start[0]);
        act_arg_int("exit_status", end[0]);
        double secs = t1 > t0 ? (double)(t1 - t0) / 1e9 : 0;
        if (ok && end[1] >= 0)
            act__counter_sample(s, mem, t1, (double)end[1] * 1024.0);
        /* CPU over the process's life, in % of one core (the host plugin's
         * unit), once at the end. */
        if (ok && secs > 0 && end[2] >= start[2] && start[2] >= 0 && end[3] >= start[3] &&
            start[3] >= 0) {
            act__counter_sample(s, cu, t1, (double)(end[2] - start[2]) / 1e6 / secs * 100.0);
            act__counter_sample(s, cs, t1, (double)(end[3] - start[3]) / 1e6 / secs * 100.0);
        }
    }
    atomic_store(&act__recording, NULL);
    /* The thread that recorded is this one: it becomes the process's. */
    for (act__thread *t = s->threads; t; t = t->next)
        if (t->pid != pid) {
            t->pid = pid;
            t->tid = pid;
        }
}

/* A DIST record's values into @p d: 1, or 0 when it holds none (too few
 * values, or a rank, size or local rank below 0: only a whole number >= 0
 * comes from a launcher's variable, so a log scribbled over gives the
 * environment's instead). The backend is cut to fit. */
static int dist_of(const sp_rec *r, act__dist *d)
{
    if (r->nints < 6)
        return 0;
    size_t l0;
    const char *s0 = sval(r, 0, &l0);
    d->has_rank = ival(r, 0) != 0;
    d->rank = ival(r, 1);
    d->has_world = ival(r, 2) != 0;
    d->world = ival(r, 3);
    d->has_local = ival(r, 4) != 0;
    d->local = ival(r, 5);
    size_t bl = l0 < sizeof d->backend ? l0 : sizeof d->backend - 1;
    if (bl)
        memcpy(d->backend, s0, bl);
    d->backend[bl] = '\0';
    return d->rank >= 0 && d->world >= 0 && d->local >= 0;
}

/* A log's clocks as a live session has them (a spool may be scribbled
 * over): its start within range and near its anchor, its offset to Unix
 * time within range, so that the writer's arithmetic cannot overflow. */
static int clocks_ok(int64_t start_mono, int64_t anchor, int64_t mono_to_unix)
{
    return start_mono >= 0 && start_mono <= ACT__TIME_MAX && act__time_near(anchor, start_mono) &&
           mono_to_unix >= -ACT__TIME_MAX && mono_to_unix <= ACT__TIME_MAX;
}

int act__spool_life_read(const char *base, act__spool_life *l, char *err, size_t errlen)
{
    char *mpath = cat(base, ".meta"), *spath = cat(base, ".spool");
    struct stat st;
    int rc = -1;
    if (!mpath || !spath) {
        memset(l, 0, sizeof *l);
        bad(err, errlen, "out of memory");
        goto out;
    }
    if (lstat(spath, &st) == 0 || errno != ENOENT) {
        memset(l, 0, sizeof *l);
        rc = 1; /* a full spool, or one we cannot tell: the rebuild's */
        goto out;
    }
    size_t mlen = 0;
    char *meta = read_all(mpath, &mlen);
    if (!meta) {
        memset(l, 0, sizeof *l);
        bad(err, errlen, "%s: %s", mpath, strerror(errno));
        goto out;
    }
    rc = act__spool_life_parse(meta, mlen, mpath, l, err, errlen);
    free(meta);
out:
    free(mpath);
    free(spath);
    return rc;
}

int act__spool_life_parse(const char *meta, size_t mlen, const char *mpath, act__spool_life *l,
                          char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    l->rss0_kib = l->user0_us = l->sys0_us = -1;
    int have_start = 0, have_stop = 0, have_dist = 0;
    act__dist dist;
    memset(&dist, 0, sizeof dist);
    int64_t anchor = 0;
    size_t pos = 0;
    sp_rec r;
    while (next_rec(meta, mlen, &pos, &r)) {
        size_t l0;
        const char *s0 = sval(&r, 0, &l0);
        switch (r.type) {
        case ACT__SP_START:
            l->pid = ival(&r, 0);
            l->start_mono = ival(&r, 1);
            l->mono_to_unix = ival(&r, 2);
            anchor = ival(&r, 3);
            l->proc_start = ival(&r, 5) > 0 ? ival(&r, 5) : 0;
            l->parent = r.nints >= 10 ? ival(&r, 6) : -1;
            l->rss0_kib = r.nints >= 10 ? ival(&r, 7) : -1;
            l->user0_us = r.nints >= 10 ? ival(&r, 8) : -1;
            l->sys0_us = r.nints >= 10 ? ival(&r, 9) : -1;
            have_start = 1;
            break;
        case ACT__SP_PNAME:
            l->name_len = l0 < sizeof l->name ? l0 : sizeof l->name - 1;
            memcpy(l->name, s0, l->name_len);
            l->name[l->name_len] = '\0';
            l->name_len = strlen(l->name); /* a NUL inside ends it */
            break;
        case ACT__SP_STOP:
            l->stop_mono = ival(&r, 0);
            have_stop = 1;
            break;
        case ACT__SP_EXIT:
            if (r.nints >= 4) {
                l->have_exit = 1;
                l->status = ival(&r, 0);
                l->rss1_kib = ival(&r, 1);
                l->user1_us = ival(&r, 2);
                l->sys1_us = ival(&r, 3);
            }
            break;
        case ACT__SP_DIST:
            have_dist = dist_of(&r, &dist); /* the last one counts, as in the rebuild */
            break;
        default:
            break; /* not a light log's, or a newer writer's */
        }
    }
    /* Samples a scribbled log made too large to scale to bytes: unknown. */
    if (l->rss0_kib > INT64_MAX / 1024)
        l->rss0_kib = -1;
    if (l->rss1_kib > INT64_MAX / 1024)
        l->rss1_kib = -1;
    if (!have_start) {
        bad(err, errlen, "%s: the process ended before its session started", mpath);
        return -1;
    }
    if (!clocks_ok(l->start_mono, anchor, l->mono_to_unix) || l->start_mono + l->mono_to_unix < 0 ||
        l->pid <= 0 || l->pid > INT32_MAX) {
        bad(err, errlen, "%s: the session's clocks are out of range", mpath);
        return -1;
    }
    if (!have_stop || !act__time_near(l->stop_mono, anchor) || l->stop_mono < l->start_mono) {
        l->stop_mono = l->start_mono;
        l->have_exit = 0; /* as the rebuild: no span without a sane end */
    }
    if (!have_dist)
        act__dist_env(&dist);
    l->has_rank = dist.has_rank;
    l->has_world = dist.has_world;
    l->has_local = dist.has_local;
    l->rank = dist.rank;
    l->world = dist.world;
    l->local = dist.local;
    size_t bl = strnlen(dist.backend, sizeof l->backend - 1);
    memcpy(l->backend, dist.backend, bl);
    l->backend[bl] = '\0';
    return 0;
}

int act__spool_read(const char *base, const char *out, unsigned flags, act__trace_writer write,
                    char *err, size_t errlen)
{
    char *mpath = cat(base, ".meta"), *spath = cat(base, ".spool");
    size_t mlen = 0;
    char *meta = mpath ? read_all(mpath, &mlen) : NULL;
    void *map = NULL;
    size_t maplen = 0;
    act_session *s = NULL;
    act_config *cfg = NULL;
    const char **names = NULL;
    uint32_t *nlens = NULL, nnames = 0;
    sp_tname *tn = NULL;
    size_t ntn = 0, captn = 0;
    /* Each thread's chunks in log order (file offsets), and for each page
     * of the spool the list entry whose chunk starts there (list + 1 << 32
     * | index; 0: none): a move replaces an entry in place. */
    sp_clist *cl = NULL;
    size_t ncl = 0, capcl = 0;
    uint64_t *live = NULL, npages = 0, nmoved = 0;
    uint8_t *cover = NULL;
    int rc = -1;
    if (!meta) {
        bad(err, errlen, "%s: %s", mpath ? mpath : base, strerror(errno));
        goto out;
    }
    int fd = spath ? open(spath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
    struct stat st;
    /* No BASE.spool: a light spool (act__spool_light_open), no chunks. */
    int light = fd < 0 && spath && errno == ENOENT;
    if (light) {
        st.st_size = 0;
    } else if (fd < 0 || fstat(fd, &st) != 0) {
        bad(err, errlen, "%s: %s", spath ? spath : base, strerror(errno));
        if (fd >= 0)
            close(fd);
        goto out;
    }
    maplen = (size_t)st.st_size;
    if (maplen && fd >= 0) {
        /* Private: chunk links and cut counts are fixed up in this copy. */
        map = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            map = NULL;
            close(fd);
            bad(err, errlen, "%s: %s", spath, strerror(errno));
            goto out;
        }
    }
    if (fd >= 0)
        close(fd);
    npages = maplen / 4096 + 1;
    live = calloc(npages, sizeof *live); /* untouched pages cost nothing */
    cover = calloc(npages, 1);
    if (!live || !cover) {
        bad(err, errlen, "out of memory");
        goto out;
    }

    /* This process's thread and process names are the dead process's
     * from here on. */
    act__names_reset();
    /* A session with nothing of its own: no plugin, no pre-allocation. */
    static const char cfgtext[] = "BUFFER_PREALLOC_MB = 0\nBUFFER_POOL_MB = 0\nDEFAULT_PLUGINS = false\n";
    act_session_opts o;
    act_session_opts_init(&o);
    if (act_config_create(&cfg) != 0) {
        bad(err, errlen, "out of memory");
        goto out;
    }
    o.config = cfg;
    o.config_text = cfgtext;
    o.config_text_len = sizeof cfgtext - 1;
    if (act__session_create(&o, &s) != 0) {
        bad(err, errlen, "cannot create a session");
        goto out;
    }

    int32_t pid = 0;
    int have_start = 0, have_stop = 0, have_exit = 0;
    /* A light log's: parent, RSS, CPU at start; status, RSS, CPU at exit. */
    int64_t life_start[4] = {-1, -1, -1, -1}, life_end[4] = {-1, -1, -1, -1};
    const char *pname = NULL;
    size_t pname_len = 0;
    int64_t latest = INT64_MIN;
    size_t pos = 0;
    sp_rec r;
    uint64_t nchunks = 0, nthreads = 0, events = 0, samples = 0;
    while (next_rec(meta, mlen, &pos, &r)) {
        size_t l0, l1, l2;
        const char *s0 = sval(&r, 0, &l0), *s1 = sval(&r, 1, &l1), *s2 = sval(&r, 2, &l2);
        switch (r.type) {
        case ACT__SP_START:
            pid = (int32_t)ival(&r, 0);
            s->start_mono_ns = ival(&r, 1);
            s->mono_to_unix_ns = ival(&r, 2);
            s->time_anchor_ns = ival(&r, 3);
            s->categories_generic = (int)ival(&r, 4);
            s->proc_start = ival(&r, 5) > 0 ? ival(&r, 5) : 0;
            free(s->trace_name);
            s->trace_name = l0 ? strndup(s0, l0) : NULL;
            have_start = 1;
            for (uint32_t k = 0; k < 4; k++)
                life_start[k] = r.nints >= 10 ? ival(&r, 6 + k) : -1;
            break;
        case ACT__SP_NAME: {
            /* Ids are dense (1, 2, ...), one record each: an id beyond the
             * records the log can hold is not a name. */
            int64_t id = ival(&r, 0);
            if (id <= 0 || id >= (int64_t)ACT__REF_LOCAL || (uint64_t)id > mlen / 16 + 1)
                break;
            if ((uint64_t)id >= nnames) {
                uint32_t ncap = nnames ? nnames : 256;
                while (ncap <= (uint64_t)id && ncap < ACT__REF_LOCAL)
                    ncap *= 2;
                const char **nn = realloc(names, ncap * sizeof *nn);
                uint32_t *nl = nn ? realloc(nlens, ncap * sizeof *nl) : NULL;
                if (nn)
                    names = nn;
                if (!nn || !nl) {
                    bad(err, errlen, "out of memory");
                    goto out;
                }
                nlens = nl;
                memset(names + nnames, 0, (ncap - nnames) * sizeof *names);
                memset(nlens + nnames, 0, (ncap - nnames) * sizeof *nlens);
                nnames = ncap;
            }
            names[id] = s0;
            nlens[id] = (uint32_t)l0;
            break;
        }
        case ACT__SP_THREAD: {
            act__thread *t = calloc(1, sizeof *t);
            if (!t) {
                bad(err, errlen, "out of memory");
                goto out;
            }
            t->session = s;
            t->serial = (uint64_t)ival(&r, 0);
            t->pid = (int32_t)ival(&r, 1);
            t->tid = (int32_t)ival(&r, 2);
            /* The thread's own state, drop counts included, in the spool
             * (written by the same library: same layout, checked). */
            uint64_t toff = (uint64_t)ival(&r, 3);
            if (r.nints >= 6 && (uint64_t)ival(&r, 4) == sizeof(act__thread) &&
                ival(&r, 5) == ACT__THREAD_LAYOUT && toff < maplen &&
                maplen - toff >= sizeof(act__thread) && !(toff & 63)) {
                act__thread *dt = (act__thread *)(void *)((char *)map + toff);
                for (size_t k = 0; k < ACT__NTYPE_SLOTS; k++)
                    atomic_init(&t->dropped_type[k], atomic_load(&dt->dropped_type[k]));
                for (size_t k = 0; k < ACT__DROP_NREASONS; k++)
                    atomic_init(&t->dropped_reason[k], atomic_load(&dt->dropped_reason[k]));
                atomic_init(&t->dropped_other, atomic_load(&dt->dropped_other));
                for (size_t k = 0; k < 2; k++)
                    atomic_init(&t->args_dropped[k], atomic_load(&dt->args_dropped[k]));
            }
            t->next = s->threads;
            s->threads = t;
            nthreads++;
            if (ncl == capcl) {
                size_t ncap = capcl ? capcl * 2 : 16;
                sp_clist *nv = ncap < ((size_t)1 << 30) ? realloc(cl, ncap * sizeof *nv) : NULL;
                if (!nv) {
                    bad(err, errlen, "out of memory");
                    goto out;
                }
                cl = nv;
                capcl = ncap;
            }
            cl[ncl++] = (sp_clist){t, NULL, 0, 0};
            if (l0 && tn_push(&tn, &ntn, &captn, (sp_tname){t->tid, t->serial, s0, l0, -1})) {
                bad(err, errlen, "out of memory");
                goto out;
            }
            break;
        }
        case ACT__SP_CHUNK:
        case ACT__SP_MOVED: {
            uint64_t serial = (uint64_t)ival(&r, 0), off = (uint64_t)ival(&r, 1),
                     size = (uint64_t)ival(&r, 2);
            if (r.type == ACT__SP_MOVED) {
                /* The chunk at off moved to ival 2, whole: it takes the
                 * place of the old one in its thread's list. */
                uint64_t to = size;
                uint64_t e = off <= maplen && !(off & 4095) && off / 4096 < npages
                                 ? live[off / 4096]
                                 : 0;
                if (!e || cl[(e >> 32) - 1].t->serial != serial)
                    break; /* not a chunk of that thread now */
                sp_clist *l = &cl[(e >> 32) - 1];
                size = l->v[(uint32_t)e].size;
                if (!chunk_place_ok(to, size, maplen) || !pages_free(cover, to, size))
                    break;
                l->v[(uint32_t)e].off = to;
                live[off / 4096] = 0;
                live[to / 4096] = e;
                pages_mark(cover, off, size, 0);
                pages_mark(cover, to, size, 1);
                nmoved++;
                break;
            }
            size_t k = 0;
            while (k < ncl && cl[k].t->serial != serial)
                k++;
            /* Chunks are whole pages at page offsets, so two headers never
             * share a byte; one over pages a chunk taken already covers
             * (pages_free: one live in a list, a log that names it twice
             * without a move, among them) is not taken: no cycle, no
             * overlap. */
            if (k == ncl || !chunk_place_ok(off, size, maplen) || !pages_free(cover, off, size))
                break; /* not mapped when the process died: nothing in it */
            sp_clist *l = &cl[k];
            if (l->n == l->cap) {
                size_t ncap = l->cap ? l->cap * 2 : 16;
                void *nv = ncap < ((size_t)1 << 31) ? realloc(l->v, ncap * sizeof *l->v) : NULL;
                if (!nv) {
                    bad(err, errlen, "out of memory");
                    goto out;
                }
                l->v = nv;
                l->cap = ncap;
            }
            l->v[l->n].off = off;
            l->v[l->n].size = (uint32_t)size;
            live[off / 4096] = (uint64_t)(k + 1) << 32 | (uint32_t)l->n;
            pages_mark(cover, off, size, 1);
            l->n++;
            break;
        }
        case ACT__SP_TNAME:
            if (tn_push(&tn, &ntn, &captn,
                        (sp_tname){(int32_t)ival(&r, 0), (uint64_t)ival(&r, 1), s0, l0,
                                   ival(&r, 2) != 0})) {
                bad(err, errlen, "out of memory");
                goto out;
            }
            break;
        case ACT__SP_PNAME:
            pname = s0;
            pname_len = l0;
            break;
        case ACT__SP_SOURCE: {
            int64_t idx = ival(&r, 0);
            if (idx > 0 && (size_t)idx == s->nsources) {
                char *n0 = strndup(s0, l0), *n1 = strndup(s1, l1);
                uint16_t got;
                if (n0 && n1)
                    act__source_add(s, n0, n1, &got);
                free(n0);
                free(n1);
            }
            if (idx > 0 && (size_t)idx < s->nsources && ival(&r, 1))
                act__source_retire(s, (uint16_t)idx);
            break;
        }
        case ACT__SP_DEVICE: {
            char *n0 = strndup(s0, l0), *n1 = strndup(s1, l1);
            uint32_t got;
            if (n0 && n1 && (size_t)ival(&r, 0) == s->ndevices &&
                act__device_add(s, (uint16_t)ival(&r, 1), n0, n1, &got) == 0)
                s->devices[got].source = (uint16_t)ival(&r, 1);
            free(n0);
            free(n1);
            break;
        }
        case ACT__SP_PROP: {
            act__arg a;
            memset(&a, 0, sizeof a);
            a.key = s0;
            a.key_len = l0;
            a.kind = (act__vkind)ival(&r, 1);
            int64_t v = ival(&r, 2);
            switch (a.kind) {
            case ACT__V_INT: a.v.i = v; break;
            case ACT__V_UINT: a.v.u = (uint64_t)v; break;
            case ACT__V_DOUBLE: memcpy(&a.v.d, &v, 8); break;
            case ACT__V_BOOL: a.v.b = v != 0; break;
            case ACT__V_STR: a.v.s.p = s1; a.v.s.n = l1; break;
            default: continue;
            }
            act__device_prop(s, (uint32_t)ival(&r, 0), &a);
            break;
        }
        case ACT__SP_STREAM:
            act__stream_name(s, (uint32_t)ival(&r, 0), (uint64_t)ival(&r, 1), s0, l0);
            break;
        case ACT__SP_SERIES: {
            char *tr = strndup(s0, l0), *se = strndup(s1, l1),
                 *un = ival(&r, 3) ? strndup(s2, l2) : NULL;
            uint32_t id;
            if (tr && se && act__series_find(s, (uint16_t)ival(&r, 1), (uint32_t)ival(&r, 2), tr,
                                             se, un, &id, NULL) == 0 &&
                id != (uint32_t)ival(&r, 0)) {
                free(tr);
                free(se);
                free(un);
                bad(err, errlen, "%s: counter series out of order", mpath);
                goto out;
            }
            free(tr);
            free(se);
            free(un);
            break;
        }
        case ACT__SP_STOP:
            s->stop_mono_ns = ival(&r, 0);
            have_stop = 1;
            break;
        case ACT__SP_DIST:
            s->has_dist = dist_of(&r, &s->dist); /* the last one counts */
            break;
        case ACT__SP_EXIT:
            have_exit = r.nints >= 4; /* ended normally: nothing was lost */
            for (uint32_t k = 0; have_exit && k < 4; k++)
                life_end[k] = ival(&r, k);
            break;
        default:
            break; /* a newer writer's record */
        }
    }
    /* Link each thread's chunks where the log last put them. */
    for (size_t k = 0; k < ncl; k++)
        for (size_t j = 0; j < cl[k].n; j++) {
            act__chunk *c = (act__chunk *)(void *)((char *)map + cl[k].v[j].off);
            if (c->size != cl[k].v[j].size || c->heap == LINKED)
                continue;
            atomic_init(&c->next, NULL);
            c->heap = LINKED;
            act__thread *t = cl[k].t;
            if (t->tail)
                atomic_store_explicit(&t->tail->next, c, memory_order_relaxed);
            else
                t->head = c;
            t->tail = c;
            nchunks++;
            /* Reading the header mapped its neighbours too (the kernel's
             * fault-around): out of memory again until they are read. */
            act__chunk_drop_read(c, (uintptr_t)map + maplen);
        }
    if (!have_start) {
        bad(err, errlen, "%s: the process ended before its session started", mpath);
        goto out;
    }
    if (!clocks_ok(s->start_mono_ns, s->time_anchor_ns, s->mono_to_unix_ns)) {
        bad(err, errlen, "%s: the session's clocks are out of range", mpath);
        goto out;
    }
    if (have_stop && (!act__time_near(s->stop_mono_ns, s->time_anchor_ns) ||
                      s->stop_mono_ns < s->start_mono_ns))
        have_stop = 0;
    for (act__thread *t = s->threads; t; t = t->next)
        for (act__chunk *c = t->head; c; c = atomic_load_explicit(&c->next, memory_order_relaxed))
        {
            latest = chunk_check(c, s->time_anchor_ns, latest, &events, &samples);
            /* Checked: out of memory again until the writer reads it. */
            act__chunk_drop_read(c, (uintptr_t)map + maplen);
        }
    if (((flags & ACT__SPOOL_SKIP_EMPTY) && events == 0) ||
        ((flags & ACT__SPOOL_SKIP_IDLE) && events == 0 && samples == 0)) {
        rc = 1;
        goto out;
    }
    /* Where nothing says when recording stopped, open spans end at the
     * latest time the process recorded. */
    if (!have_stop)
        s->stop_mono_ns = latest > s->start_mono_ns ? latest : s->start_mono_ns;
    for (act__thread *t = s->threads; t; t = t->next)
        if (!t->head)
            t->full = 1;
    /* Names threads had when they attached first (by_plugin -1), then the
     * names given, in order: a name given before the thread's first event
     * still wins over its comm. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < ntn; i++)
            if ((tn[i].by_plugin < 0) == (pass == 0))
                act__thread_name_set_serial(tn[i].tid, tn[i].serial, tn[i].name, tn[i].len,
                                            tn[i].by_plugin > 0);
    char pbuf[32];
    if (!pname) {
        snprintf(pbuf, sizeof pbuf, "pid %d", (int)pid);
        pname = pbuf;
        pname_len = strlen(pbuf);
    }
    char *pn = strndup(pname, pname_len);
    if (pn)
        act_process_name(pn);
    free(pn);
    act__names_override(names, nlens, nnames);
    s->pid = pid;
    if (light && life_start[0] >= 0)
        light_life(s, pid, life_start, have_exit && have_stop ? life_end : NULL);
    s->recovered = !(light && have_exit && have_stop);
    atomic_store(&s->state, ACT__S_STOPPED);
    s->rebuilt_map = map;
    s->rebuilt_len = maplen;
    char werr[1024];
    rc = write(s, out, werr, sizeof werr);
    act__names_override(NULL, NULL, 0);
    if (rc != 0) {
        bad(err, errlen, "%s", werr);
        rc = -1;
    } else if (!s->recovered) {
        rc = 2; /* a light log of a normal exit: nothing was lost */
    }
    /* Test hook: what the rebuild found (tests/record_multi). */
    if (getenv("ACTRACE_TEST_REBUILD_COUNTS"))
        fprintf(stderr, "actrace rebuild: %" PRIu64 " threads, %" PRIu64 " chunks, %" PRIu64
                " moved\n", nthreads, nchunks, nmoved);
out:
    if (s) {
        /* The chunks are the mapping's (heap LINKED: not freed, not
         * unmapped by the session): only the thread structs go. */
        for (act__thread *t = s->threads; t; t = t->next)
            t->head = t->tail = NULL;
        act__session_free(s);
    }
    act_config_destroy(cfg);
    if (map)
        munmap(map, maplen);
    for (size_t k = 0; k < ncl; k++)
        free(cl[k].v);
    free(cl);
    free(live);
    free(cover);
    free(names);
    free(nlens);
    free(tn);
    free(meta);
    free(mpath);
    free(spath);
    return rc;
}
