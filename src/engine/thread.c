/* SPDX-License-Identifier: MIT */
/*
 * Per-thread buffers: attaching a thread to a session, moving to a new
 * chunk when the tail is full (the once-per-chunk slow path, where the
 * buffer limit is enforced), and drop accounting.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/frame.h"
#include "engine/spool.h"

static int32_t os_tid(void)
{
    return (int32_t)syscall(SYS_gettid);
}

struct act__slab {
    struct act__slab *next;
    size_t size;
    uint64_t off; /* offset in its file (the spool, or the spill file) */
    size_t charged; /* bytes of chunks carved from it (under s->lock) */
    int spilled;    /* written to its file and dropped from memory */
    int filed;      /* file memory (a spooled session's, or the spill file's):
                       it may be spilled; anonymous memory never is */
};

#define SLAB_SIZE ((size_t)4 << 20)
/* Carving starts this far into a slab (its header), keeping chunks page
 * aligned. */
#define SLAB_HDR ((size_t)4096)

/* Fault in @p size bytes at @p p by writing. MAP_POPULATE was measured to
 * leave pages that still cost a fault-like trap on the first write (about
 * 100 ns per record on this project's VMs, against under 2 ns after a
 * write-touch). */
static void populate_write(void *p, size_t size)
{
    int done = 0;
#ifdef MADV_POPULATE_WRITE
    done = madvise(p, size, MADV_POPULATE_WRITE) == 0;
#endif
    if (!done) {
        long pg = sysconf(_SC_PAGESIZE);
        for (size_t off = 0; off < size; off += (size_t)(pg > 0 ? pg : 4096))
            ((volatile char *)p)[off] = 0;
    }
}

/* Map a slab of @p size bytes. @p huge: ask for transparent huge pages,
 * which only pays where the slab is faulted in before recording (faulting
 * huge pages on demand stalls in compaction: ../shared/notes). */
static struct act__slab *slab_map(const act_session *s, size_t size, int huge, int populate)
{
    uint64_t off = 0;
    void *p;
    if (s->spooled) {
        /* Shared file memory (spool.h); no huge pages for files. */
        p = act__spool_map(size, &off);
        if (!p)
            return NULL;
        huge = 0;
    } else {
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
    }
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
    madvise(p, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#else
    (void)huge;
#endif
    if (populate)
        populate_write(p, size);
    struct act__slab *sl = p;
    sl->next = NULL;
    sl->size = size;
    sl->off = off;
    sl->charged = 0;
    sl->spilled = 0;
    sl->filed = s->spooled;
    return sl;
}

/* Make @p sl the slab being carved. Under s->lock. */
static void slab_use(act_session *s, struct act__slab *sl)
{
    sl->next = s->slabs;
    s->slabs = sl;
    s->slab_cur = (char *)sl + SLAB_HDR;
    s->slab_end = (char *)sl + sl->size;
}

/* Put @p sl, a slab threads never carve (full, or the drain's), in the
 * list behind the one being carved, so that it spills in age order with
 * the others; with no slab yet, it heads the list and the next carve maps
 * a new slab in front of it. Under s->lock. */
static void slab_link_behind(act_session *s, struct act__slab *sl)
{
    if (s->slabs) {
        sl->next = s->slabs->next;
        s->slabs->next = sl;
    } else {
        s->slabs = sl;
        s->slab_cur = s->slab_end = NULL;
    }
}

int act__slab_prealloc(act_session *s, size_t bytes)
{
    if (!bytes)
        return 0;
    bytes = (bytes + 4095) & ~(size_t)4095;
    struct act__slab *sl = slab_map(s, bytes + SLAB_HDR, 1, 1);
    if (!sl)
        return -1;
    pthread_mutex_lock(&s->lock);
    slab_use(s, sl);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

static void pool_free(act_session *s);

void act__slabs_free(act_session *s)
{
    pool_free(s);
    for (struct act__slab *sl = s->slabs, *n; sl; sl = n) {
        n = sl->next;
        munmap(sl, sl->size);
    }
    s->slabs = NULL;
    for (struct act__slab *sl = s->ready_head, *n; sl; sl = n) {
        n = sl->next;
        munmap(sl, sl->size);
    }
    s->ready_head = s->ready_tail = NULL;
    s->ready_bytes = 0;
    if (s->tmp_fd >= 0 && !atomic_load(&s->tmp_lost))
        close(s->tmp_fd); /* unlinked: its blocks go with the last mapping */
    s->tmp_fd = -1;
    s->tmp_slab = NULL;
    s->tmp_cur = s->tmp_end = NULL;
}

/* ---- the spill file (a program's own session) -------------------------------- */

/*
 * A program's own session keeps its trace in RAM while it fits the budget
 * (MAX_BUFFER_SIZE_MB). Past that, what the drain archives goes to an
 * unlinked temporary file, and slabs of it are spilled as a spooled
 * session's are (written, dropped from memory, read back by the writer),
 * up to SPOOL_MAX_MB. Only the archive goes there: its chunks are whole
 * copies no thread writes again but for their header's link (set by the
 * drain, under s->lock), so a forked child, which maps the same file
 * pages, never changes them; recording threads' own chunks stay
 * anonymous. The file is made with O_TMPFILE (no name anyone can reach or
 * replace), else mkostemp and unlinked at once; 0600. Its descriptor is
 * moved to 512 or above, out of the way of the program's own, and checked
 * to be the file's before every use (tmp_live).
 *
 * The drain writes a chunk with pwrite at its place in the file, not
 * through the mapping: one copy into the page cache, no zero-fill of the
 * blocks first, no page fault per page; a full disk fails the pwrite (the
 * chunk then stays in RAM, and the budget drops events, counted) instead
 * of raising SIGBUS at a store. The mapping is read by the writer and
 * written only at chunk headers, whose page the pwrite made.
 */
static int tmp_open(act_session *s)
{
    int fd = -1, e = 0;
#ifdef O_TMPFILE
    fd = open(s->tmp_dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
    e = errno;
#endif
    if (fd < 0) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/actrace-spill-XXXXXX", s->tmp_dir) < (int)sizeof path) {
            fd = mkostemp(path, O_CLOEXEC);
            if (fd >= 0)
                unlink(path);
            else if (!e)
                e = errno;
        } else {
            e = ENAMETOOLONG;
        }
    }
    if (fd < 0) {
        s->tmp_ok = 0;
        act_log(ACT_LOG_ERROR, "spill: cannot make a temporary file in %s (SPILL_DIR): %s; past "
                "MAX_BUFFER_SIZE_MB (%llu MB) events are dropped (counted)", s->tmp_dir,
                strerror(e), (unsigned long long)(s->max_bytes >> 20));
        return -1;
    }
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, 512);
    if (hi >= 0) {
        close(fd);
        fd = hi;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        s->tmp_ok = 0;
        return -1;
    }
    /* Sized once, now, while no one else can have its number: holes cost
     * nothing, and no later call can change a file's size should the
     * program ever get this number for one of its own. */
    if (ftruncate(fd, (off_t)(s->spool_max_bytes + SLAB_SIZE)) != 0) {
        int e2 = errno;
        close(fd);
        s->tmp_ok = 0;
        act_log(ACT_LOG_ERROR, "spill: cannot size a temporary file in %s (SPILL_DIR): %s; past "
                "MAX_BUFFER_SIZE_MB events are dropped (counted)", s->tmp_dir, strerror(e2));
        return -1;
    }
    s->tmp_dev = (uint64_t)st.st_dev;
    s->tmp_ino = (uint64_t)st.st_ino;
    s->tmp_fd = fd;
    s->tmp_pid = (int32_t)getpid();
    return 0;
}

/* 1 if the spill file's descriptor is still the file's. Else 0, said
 * once: the program closed it (and may have its number for a file of its
 * own); from then on the file is reached only through its mappings. */
static int tmp_live(act_session *s)
{
    if (s->tmp_fd < 0 || atomic_load_explicit(&s->tmp_lost, memory_order_relaxed))
        return 0;
    struct stat st;
    if (fstat(s->tmp_fd, &st) == 0 && (uint64_t)st.st_dev == s->tmp_dev &&
        (uint64_t)st.st_ino == s->tmp_ino)
        return 1;
    if (!atomic_exchange(&s->tmp_lost, 1))
        act_log(ACT_LOG_ERROR, "spill: descriptor %d of the temporary file in %s was closed by "
                "the program; past MAX_BUFFER_SIZE_MB events are dropped (counted)", s->tmp_fd,
                s->tmp_dir);
    return 0;
}

/* pwrite all of [@p p, @p p + @p n) at @p off. 0, or -1 (errno). */
static int pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
    act__xfsz_guard g;
    act__xfsz_block(&g);
    int rc = 0;
    for (size_t done = 0; done < n;) {
        ssize_t w = pwrite(fd, (const char *)p + done, n - done, (off_t)(off + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            rc = -1;
            break;
        }
        done += (size_t)w;
    }
    int e = errno;
    act__xfsz_unblock(&g);
    errno = e;
    return rc;
}

/* A new slab of the spill file for the archive (the drain only): mapped
 * shared, only its header page written; 1/32 of the RAM budget, 1 to
 * 63 chunks (a slab is spilled only once the drain has moved on to the
 * next). NULL when the file cannot be made, cannot grow (a full disk:
 * said once, and never tried again) or belongs to the parent of a forked
 * child. */
static struct act__slab *tmp_slab_new(act_session *s)
{
    uint64_t k = s->max_bytes / 32 / ACT__CHUNK_SIZE;
    const uint64_t kmax = (SLAB_SIZE - SLAB_HDR) / ACT__CHUNK_SIZE;
    size_t size = SLAB_HDR + (size_t)(k < 1 ? 1 : k > kmax ? kmax : k) * ACT__CHUNK_SIZE;
    if (s->tmp_fd < 0 && tmp_open(s) != 0)
        return NULL;
    if (s->tmp_pid != (int32_t)getpid() || !tmp_live(s)) {
        s->tmp_ok = 0;
        return NULL;
    }
    uint64_t off = s->tmp_size;
    if (off + size > s->spool_max_bytes + SLAB_SIZE) {
        s->tmp_ok = 0; /* SPOOL_MAX_MB refuses the chunks meanwhile */
        return NULL;
    }
    union {
        struct act__slab sl;
        char page[SLAB_HDR];
    } hdr; /* the header page, written whole: its blocks are the file's then */
    memset(&hdr, 0, sizeof hdr);
    hdr.sl.size = size;
    hdr.sl.off = off;
    hdr.sl.filed = 1;
    if (pwrite_all(s->tmp_fd, &hdr, sizeof hdr, off) != 0) {
        int e = errno;
        s->tmp_ok = 0;
        act_log(ACT_LOG_ERROR, "spill: cannot grow the temporary file in %s (SPILL_DIR) past %llu "
                "MB: %s; past MAX_BUFFER_SIZE_MB events are dropped (counted)", s->tmp_dir,
                (unsigned long long)(off >> 20), strerror(e));
        return NULL;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->tmp_fd, (off_t)off);
    if (p == MAP_FAILED)
        return NULL;
    s->tmp_size = off + size;
    return p;
}

/* @p bytes (at most ACT__CHUNK_SIZE: a chunk, or a frame node, 64-byte
 * aligned) of the spill file for one drained chunk, at file offset *@p off
 * in s->tmp_slab (the caller charges it there once written: spilling the
 * slab uncharges it), or NULL (the caller keeps the chunk in RAM). The
 * drain only. */
static act__chunk *tmp_archive_chunk(act_session *s, size_t bytes, uint64_t *off)
{
    size_t room = (bytes + 63) & ~(size_t)63;
    if (s->tmp_end - s->tmp_cur < (ptrdiff_t)room) {
        struct act__slab *sl = tmp_slab_new(s);
        if (!sl)
            return NULL;
        pthread_mutex_lock(&s->lock);
        slab_link_behind(s, sl);
        s->tmp_slab = sl; /* not spilled while the drain fills it */
        pthread_mutex_unlock(&s->lock);
        s->tmp_cur = (char *)sl + SLAB_HDR;
        s->tmp_end = (char *)sl + sl->size;
    }
    act__chunk *c = (act__chunk *)(void *)s->tmp_cur;
    *off = s->tmp_slab->off + (uint64_t)(s->tmp_cur - (char *)s->tmp_slab);
    s->tmp_cur += room;
    return c;
}

/* Start writing slab memory at file offset @p off to its file. */
static void slab_writeback(act_session *s, uint64_t off, size_t size)
{
    if (s->spooled)
        act__spool_writeback(off, size);
    else if (tmp_live(s))
        sync_file_range(s->tmp_fd, (off_t)off, (off_t)size, SYNC_FILE_RANGE_WRITE);
}

/* Write slab memory [@p p, +@p size) at file offset @p off to its file
 * and drop it from memory (read back from the file when touched): 0, or
 * -1 (left in memory). */
static int slab_spill(act_session *s, void *p, uint64_t off, size_t size)
{
    if (s->spooled)
        return act__spool_spill(p, off, size);
    int live = tmp_live(s);
    if (live && sync_file_range(s->tmp_fd, (off_t)off, (off_t)size,
                                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                    SYNC_FILE_RANGE_WAIT_AFTER) != 0)
        return -1;
    /* Shared file memory: unmapping loses nothing; the clean pages then
     * leave the page cache too (without the descriptor the kernel writes
     * them back and reclaims them in its own time). */
    madvise(p, size, MADV_DONTNEED);
    if (live)
        posix_fadvise(s->tmp_fd, (off_t)off, (off_t)size, POSIX_FADV_DONTNEED);
    return 0;
}

/* ---- spilling (a spooled session) ------------------------------------------ */

/* Drop slab @p sl (its writeback started) from memory and uncharge it.
 * Under spill_lock. Returns the bytes uncharged. */
static size_t spill_finish(act_session *s, struct act__slab *sl)
{
    /* The header page stays: the slab list is walked. */
    if (slab_spill(s, (char *)sl + SLAB_HDR, sl->off + SLAB_HDR, sl->size - SLAB_HDR) != 0)
        return 0; /* left charged, and never tried again */
    pthread_mutex_lock(&s->lock);
    size_t charged = sl->charged;
    pthread_mutex_unlock(&s->lock);
    atomic_fetch_add_explicit(&s->spilled, charged, memory_order_relaxed);
    atomic_fetch_sub_explicit(&s->bytes, charged, memory_order_relaxed);
    return charged;
}

/* Spill slabs no longer carved (never the current one), oldest first: a
 * slab's chunks are written to the spool file and dropped from memory,
 * and uncharged from the RAM budget. Pipelined: each call drops the slab
 * whose writeback the previous call started (done by now, as a rule) and
 * starts the next one's, so the pre-fault thread does not wait for the
 * disk. @p urgent (a recording thread with no room): when nothing was in
 * flight, the new victim is finished at once. A thread whose tail chunk
 * lies in a spilled slab faults its pages back in as it writes (the
 * budget is approximate by that much). Returns the bytes uncharged. */
static size_t spill_one(act_session *s, int urgent)
{
    pthread_mutex_lock(&s->spill_lock);
    size_t got = 0;
    if (s->spill_next) {
        got = spill_finish(s, s->spill_next);
        s->spill_next = NULL;
    }
    pthread_mutex_lock(&s->lock);
    struct act__slab *victim = NULL;
    for (struct act__slab *sl = s->slabs ? s->slabs->next : NULL; sl; sl = sl->next)
        if (!sl->spilled && sl->charged && sl->filed && sl != s->tmp_slab)
            victim = sl; /* the list is newest first: the last is oldest */
    if (victim)
        victim->spilled = 1; /* chosen: carved no more, spilled below */
    pthread_mutex_unlock(&s->lock);
    if (victim) {
        slab_writeback(s, victim->off + SLAB_HDR, victim->size - SLAB_HDR);
        if (urgent && !got)
            got = spill_finish(s, victim);
        else
            s->spill_next = victim;
    }
    pthread_mutex_unlock(&s->spill_lock);
    return got;
}

/* The room kept in the RAM budget by spilling ahead of need: a quarter of
 * it, at most 32 MB. */
static uint64_t budget_keep(const act_session *s)
{
    return s->max_bytes / 4 < ((uint64_t)32 << 20) ? s->max_bytes / 4 : ((uint64_t)32 << 20);
}

/* 1 when the RAM budget has less than budget_keep left. */
static int budget_short(const act_session *s)
{
    return atomic_load_explicit(&s->bytes, memory_order_relaxed) > s->max_bytes - budget_keep(s);
}

/* 1 for a session that spills: spooled, or with its spill file in use. */
static inline int spills(const act_session *s)
{
    return s->spooled || atomic_load_explicit(&s->tmp_on, memory_order_relaxed);
}

/* 1 if the helper thread should spill ahead of need, keeping room in the
 * RAM budget (budget_short), so that recording threads rarely spill
 * themselves; a run that fits in the budget never spills. */
static int spill_wanted(const act_session *s)
{
    return spills(s) && budget_short(s);
}

/* ---- reading spilled slabs back (a writer) ----------------------------------- */

static int cmp_uptr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

void act__chunk_drop_read(const act__chunk *c, uintptr_t end)
{
    /* Private: dropping a page the rebuild wrote would undo its fix (the
     * header's links and counts); the pages wholly past the header were
     * only read. */
    uintptr_t a = (uintptr_t)c;
    uintptr_t from = (a + sizeof(act__chunk) + 4095) & ~(uintptr_t)4095;
    uintptr_t to = (a + c->size) & ~(uintptr_t)4095;
    if (to > end)
        to = end;
    if (to > from)
        madvise((void *)from, to - from, MADV_DONTNEED);
}

int act__spill_map_make(act_session *s, act__spill_map *m)
{
    m->lo = NULL;
    m->n = 0;
    m->priv = 0;
    if (s->rebuilt_map && s->rebuilt_len) {
        uintptr_t *v = malloc(2 * sizeof *v);
        if (!v)
            return -1;
        v[0] = (uintptr_t)s->rebuilt_map;
        v[1] = v[0] + s->rebuilt_len;
        m->lo = v;
        m->n = 1;
        m->priv = 1;
        return 0;
    }
    if (!atomic_load_explicit(&s->spilled, memory_order_relaxed))
        return 0;
    size_t n = 0;
    for (const struct act__slab *sl = s->slabs; sl; sl = sl->next)
        n += sl->spilled != 0;
    if (!n)
        return 0;
    /* Pairs (start, end), sorted by start: slabs never overlap. */
    uintptr_t *v = malloc(n * 2 * sizeof *v);
    if (!v)
        return -1;
    size_t k = 0;
    for (const struct act__slab *sl = s->slabs; sl && k < n; sl = sl->next)
        if (sl->spilled) {
            v[2 * k] = (uintptr_t)sl;
            v[2 * k + 1] = (uintptr_t)sl + sl->size;
            k++;
        }
    qsort(v, k, 2 * sizeof *v, cmp_uptr);
    m->lo = v;
    m->n = k;
    return 0;
}

void act__spill_map_drop(const act__spill_map *m, const act__chunk *c)
{
    uintptr_t a = (uintptr_t)c;
    size_t lo = 0, hi = m->n;
    while (lo < hi) { /* the last slab that starts at or before a */
        size_t mid = lo + (hi - lo) / 2;
        if (m->lo[2 * mid] <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo || a >= m->lo[2 * (lo - 1) + 1])
        return; /* not in a spilled slab: in RAM, within the budget */
    uintptr_t start = m->lo[2 * (lo - 1)], end = m->lo[2 * (lo - 1) + 1];
    if (m->priv) {
        act__chunk_drop_read(c, end);
        return;
    }
    /* Out to the 64 KiB windows around the chunk: a read fault maps the
     * pages of its window that are in the page cache too (the kernel's
     * fault-around), so a neighbour already read (or the slab's header)
     * would stay mapped otherwise, some 70 KB per slab (1.7% of a long
     * trace). Shared file memory: dropping the mapping loses nothing (the
     * pages stay in the file and the page cache; a later read maps them
     * again). */
    uintptr_t from = a & ~(uintptr_t)0xffff, to = (a + c->size + 0xffff) & ~(uintptr_t)0xffff;
    if (from < start)
        from = start;
    if (to > end)
        to = end;
    if (to > from)
        madvise((void *)from, to - from, MADV_DONTNEED);
}

void act__spill_map_free(act__spill_map *m)
{
    free(m->lo);
    m->lo = NULL;
    m->n = 0;
}

/* ---- the chunk pool ---------------------------------------------------------- */

/*
 * Fresh memory is dear on some machines (12-20 us per 4 KiB page on one
 * of ours, whichever thread faults it) and cheap on others; memory written
 * before costs the same everywhere. So standard chunks come from a bounded
 * pool, faulted once and recycled: a recording thread takes a slot at its
 * once-per-chunk slow path; the helper thread (the drain) copies each
 * sealed slot to the archive (malloc'd memory: the drain pays its first
 * touch, not the recorder) and splices the copy into the thread's chunk
 * list in its place, under s->lock, then returns the slot. Writers, stats
 * and visits walk the same lists as before.
 *
 * A slot is drained only once its thread has moved on (chunk->next set,
 * with release, after the thread's last write to it) and while it is not
 * pinned. At each seal the thread pins the slots it may still write: those
 * that hold one of its open spans (act_span_end stores t1 in place) and,
 * while args may still attach, those of the current arg group (group_undo
 * lowers their counts); it unpins, with release, those it no longer needs.
 * A pinned slot is drained at a later seal's unpin, or stays in the pool
 * until stop (the writer reads it in place). A slot handed out again is
 * invalidated in its new owner's string-value cache (set_tail).
 *
 * Under `actrace record` the slots are a reserved range mapped from the
 * spool a 2 MB segment at a time (pool_map_upto), by the drain as it warms
 * ahead, so a process that records little maps none (grow: its chunks are
 * carved from the slabs until the drain has warmed slots). The archive is
 * carved from the slabs (archive_slab_chunk), which spill as without a
 * pool; the move is logged (ACT__SP_MOVED, spool.h) after the copy and
 * before pool_push_free, so a crash finds each chunk whole somewhere the
 * log names. The pool is then at most half of MAX_BUFFER_SIZE_MB
 * (session.c) and adds that much to the spool file beyond SPOOL_MAX_MB.
 *
 * Budget: a slot is charged to s->bytes when it is taken, like any chunk;
 * its archive copy keeps the charge, a returned slot is not charged. So
 * MAX_BUFFER_SIZE_MB bounds the trace as before and the pool adds at most
 * BUFFER_POOL_MB of RAM. When the pool is empty: BUFFER_FULL_POLICY grow
 * (a chunk carved from the slabs, as without a pool: fresh memory, within
 * the same budget; the drain leaves it in place), drop (buffer-full drops,
 * counted as such) or wait (for the drain; given up, as a drop, at stop or
 * when the drain finds nothing it may drain).
 */
#define POOL_ALIGN ((size_t)2 << 20) /* huge-page aligned: slots are 64 KiB aligned */
#define POOL_NONE UINT32_MAX
/* Slots the drain keeps written ahead of need (free and warm); under
 * record 16 MB, what the pre-fault thread kept ready before the pool
 * (the drain's warming costs more there: the spool's blocks are written
 * first). */
#define POOL_WARM_AHEAD 64u
#define POOL_WARM_AHEAD_SPOOLED 256u
#define POOL_WARM_STEP ((uint32_t)(POOL_ALIGN / ACT__CHUNK_SIZE))

enum { SLOT_FREE = 0, SLOT_USED = 1 };

typedef struct act__pool_slot {
    act__thread *owner; /* set at take */
    act__chunk *prev;   /* the chunk before it in owner's list (take; the drain
                           updates it when it replaces that chunk) */
    _Atomic uint32_t pinned; /* owner: 1 at a seal, 0 (release) once done */
    uint32_t mark;           /* owner's pin generation (owner only) */
    uint32_t state;          /* SLOT_*, under the pool's lock */
    uint32_t next_free;
} act__pool_slot;

struct act__pool {
    char *map;
    size_t map_size;
    char *base;      /* slot i's chunk is base + i * ACT__CHUNK_SIZE */
    uint32_t nslots;
    pthread_mutex_t lock;
    pthread_cond_t freed; /* a slot came back, a pass ended, or stop */
    pthread_cond_t work;  /* wakes the drain */
    uint32_t nfresh;      /* slots [nfresh, nslots) never handed out */
    uint32_t free_head, nfree;
    _Atomic uint32_t avail; /* nfree + never handed out: a hint, no lock */
    uint64_t passes, freed_count;
    int wait;     /* BUFFER_FULL_POLICY = wait */
    int grow;     /* BUFFER_FULL_POLICY = grow */
    int running;  /* a drain thread runs */
    int stop;
    unsigned delay_us; /* test hook: ACTRACE_TEST_DRAIN_DELAY_US per chunk */
    /* Slots that may be handed out: nslots, or fewer once the spool could
     * not grow for them (under lock). */
    uint32_t cap;
    uint32_t warm_ahead; /* POOL_WARM_AHEAD or, spooled, _SPOOLED */
    size_t tsize;        /* bytes of the slots' mapping (slots, seg_off) */
    /* Under `actrace record` (a spooled session) the slots are part of
     * BASE.spool, so that what is still in the pool survives a crash:
     * mapped (MAP_FIXED over the reserved range) a segment of SEG_SLOTS
     * slots at a time as they are first needed, segment k at file offset
     * seg_off[k]. nmapped: slots mapped (release, under map_lock, which
     * is taken after lock). The drain copies a slot to archive memory
     * carved from the slabs (in the spool, spilled as ever) and logs the
     * move (ACT__SP_MOVED) before the slot is handed out again. */
    int spooled, mapfail;
    _Atomic uint32_t nmapped;
    pthread_mutex_t map_lock;
    uint64_t *seg_off;
    uint64_t drained;  /* chunks drained (the churn and steady-state tests) */
    /* The archive: arenas of ARENA_SIZE (huge-page aligned, so that the
     * drain faults a 2 MB page per 32 chunks where the kernel allows),
     * carved by the drain only; unmapped with the pool. */
    struct act__arena *arenas;
    char *arena_cur, *arena_end;
    /* The drain's scratch for a frame (frame.h): a chunk is archived as
     * a frame node, a few bytes per record, in RAM or in the spill file
     * (not spooled: record's rebuild reads whole chunks). ACTRACE_TEST_ARCHIVE_RAW set: whole copies (the
     * baseline the benches compare with). */
    uint8_t *fbuf;
    size_t fcap;
    act__chunk *nbuf; /* a frame node on its way to the spill file */
    int raw;
    act__pool_slot *slots;
};

static inline act__chunk *slot_chunk(const struct act__pool *p, uint32_t i)
{
    return (act__chunk *)(void *)(p->base + (size_t)i * ACT__CHUNK_SIZE);
}

/* The slot whose chunk holds address @p a, or POOL_NONE. */
static inline uint32_t slot_of(const struct act__pool *p, const void *a)
{
    uintptr_t off = (uintptr_t)a - (uintptr_t)p->base;
    if ((uintptr_t)a < (uintptr_t)p->base || off >= (uintptr_t)p->nslots * ACT__CHUNK_SIZE)
        return POOL_NONE;
    return (uint32_t)(off / ACT__CHUNK_SIZE);
}

static void pool_avail_update(struct act__pool *p)
{
    atomic_store_explicit(&p->avail, p->nfree + (p->cap > p->nfresh ? p->cap - p->nfresh : 0),
                          memory_order_relaxed);
}

/* A spooled pool's segment: a huge page's worth of slots. */
#define SEG_SLOTS POOL_WARM_STEP

/* Slot @p i's offset in BASE.spool (a spooled pool; @p i mapped). */
static uint64_t slot_off(const struct act__pool *p, uint32_t i)
{
    return p->seg_off[i / SEG_SLOTS] + (uint64_t)(i % SEG_SLOTS) * ACT__CHUNK_SIZE;
}

/* A spooled pool: map the segments that hold slots [0, @p upto). 0, or -1
 * when the spool cannot grow (then never tried again). Takes map_lock. */
static int pool_map_upto(struct act__pool *p, uint32_t upto)
{
    if (!p->spooled || atomic_load_explicit(&p->nmapped, memory_order_acquire) >= upto)
        return 0;
    pthread_mutex_lock(&p->map_lock);
    int rc = 0;
    uint32_t m = atomic_load_explicit(&p->nmapped, memory_order_relaxed);
    while (m < upto) {
        uint64_t off = 0;
        if (p->mapfail || !act__spool_map_at(p->base + (size_t)m * ACT__CHUNK_SIZE,
                                             (size_t)SEG_SLOTS * ACT__CHUNK_SIZE, &off)) {
            p->mapfail = 1;
            rc = -1;
            break;
        }
        p->seg_off[m / SEG_SLOTS] = off;
        m += SEG_SLOTS;
        atomic_store_explicit(&p->nmapped, m, memory_order_release);
    }
    pthread_mutex_unlock(&p->map_lock);
    return rc;
}

static void pool_push_free(struct act__pool *p, uint32_t i)
{
    p->slots[i].state = SLOT_FREE;
    p->slots[i].owner = NULL;
    p->slots[i].prev = NULL;
    p->slots[i].next_free = p->free_head;
    p->free_head = i;
    p->nfree++;
    pool_avail_update(p);
}

static void pool_register(act_session *s);

int act__pool_create(act_session *s, size_t bytes, size_t warm, int policy)
{
    size_t n = bytes / ACT__CHUNK_SIZE;
    if (n > UINT32_MAX / 2)
        n = UINT32_MAX / 2;
    if (s->spooled)
        n -= n % SEG_SLOTS; /* whole segments */
    if (n < 4)
        return -1;
    struct act__pool *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    /* The slot table (and segment offsets) mapped, not calloc'd: zero
     * pages, touched only as slots are used (a process that records a
     * little would otherwise write 64 KB of it: callgrind, a leaf under
     * record, +66k instructions). */
    size_t tsize = n * sizeof(act__pool_slot);
    if (s->spooled)
        tsize += n / SEG_SLOTS * sizeof(uint64_t);
    void *tm = mmap(NULL, tsize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (tm == MAP_FAILED) {
        free(p);
        return -1;
    }
    p->slots = tm;
    p->tsize = tsize;
    p->spooled = s->spooled;
    p->warm_ahead = p->spooled ? POOL_WARM_AHEAD_SPOOLED : POOL_WARM_AHEAD;
    p->seg_off = p->spooled ? (uint64_t *)(void *)(p->slots + n) : NULL;
    p->map_size = n * ACT__CHUNK_SIZE + POOL_ALIGN;
    /* Spooled: a reserved range, mapped from the spool as it is needed. */
    void *m = mmap(NULL, p->map_size, p->spooled ? PROT_NONE : PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        munmap(p->slots, p->tsize);
        free(p);
        return -1;
    }
    p->map = m;
    p->base = (char *)(((uintptr_t)m + POOL_ALIGN - 1) & ~(uintptr_t)(POOL_ALIGN - 1));
    p->nslots = p->cap = (uint32_t)n;
#ifdef MADV_HUGEPAGE
    /* Faulted once, ahead of use (here and by the drain): huge pages
     * cost fewer faults and never stall a recording thread. (Not for
     * the spool's file pages.) */
    if (!p->spooled)
        madvise(p->base, n * ACT__CHUNK_SIZE, MADV_HUGEPAGE);
#endif
    pthread_mutex_init(&p->map_lock, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->freed, NULL);
    pthread_cond_init(&p->work, NULL);
    p->free_head = POOL_NONE;
    p->wait = policy == ACT__POOL_WAIT;
    p->grow = policy == ACT__POOL_GROW;
    const char *d = getenv("ACTRACE_TEST_DRAIN_DELAY_US");
    p->delay_us = d ? (unsigned)strtoul(d, NULL, 10) : 0;
    const char *raw = getenv("ACTRACE_TEST_ARCHIVE_RAW");
    p->raw = raw && *raw && strcmp(raw, "0") != 0;
    /* The warm part, written now (the cost BUFFER_PREALLOC_MB always
     * had); pushed so that the lowest slots are taken first. */
    size_t w = warm / ACT__CHUNK_SIZE;
    if (w > n)
        w = n;
    if (w && pool_map_upto(p, (uint32_t)w) != 0)
        w = atomic_load_explicit(&p->nmapped, memory_order_relaxed);
    if (w)
        populate_write(p->base, w * ACT__CHUNK_SIZE);
    p->nfresh = (uint32_t)w;
    for (size_t i = w; i-- > 0;)
        pool_push_free(p, (uint32_t)i);
    pool_avail_update(p);
    s->pool = p;
    pool_register(s);
    return 0;
}

#define ARENA_SIZE ((size_t)4 << 20)

struct act__arena {
    struct act__arena *next;
    void *map; /* ARENA_SIZE + POOL_ALIGN bytes mapped */
};

/* 64 KiB of archive for one drained chunk (the drain thread only), or
 * NULL when the system has no memory now. */
static act__chunk *archive_chunk(struct act__pool *p)
{
    if (p->arena_end - p->arena_cur < (ptrdiff_t)ACT__CHUNK_SIZE) {
        struct act__arena *a = malloc(sizeof *a);
        void *m = a ? mmap(NULL, ARENA_SIZE + POOL_ALIGN, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                    : MAP_FAILED;
        if (m == MAP_FAILED) {
            free(a);
            return NULL;
        }
        char *b = (char *)(((uintptr_t)m + POOL_ALIGN - 1) & ~(uintptr_t)(POOL_ALIGN - 1));
#ifdef MADV_HUGEPAGE
        madvise(b, ARENA_SIZE, MADV_HUGEPAGE);
#endif
        a->map = m;
        a->next = p->arenas;
        p->arenas = a;
        p->arena_cur = b;
        p->arena_end = b + ARENA_SIZE;
    }
    act__chunk *c = (act__chunk *)(void *)p->arena_cur;
    p->arena_cur += ACT__CHUNK_SIZE;
    return c;
}

/* act__frame_node's carve into the drain's scratch (p->nbuf), from where
 * the node is written to the spill file. */
static void *scratch_carve(void *arg, size_t bytes)
{
    (void)bytes; /* at most ACT__CHUNK_SIZE: act__frame_node */
    return arg;
}

/* @p bytes of archive (at most ACT__CHUNK_SIZE, 64-byte aligned) for a
 * frame node (act__frame_node's carve), or NULL. The drain thread only. */
static void *archive_carve(void *arg, size_t bytes)
{
    struct act__pool *p = arg;
    size_t room = (bytes + 63) & ~(size_t)63;
    if (p->arena_end - p->arena_cur < (ptrdiff_t)room) {
        /* A new arena (what is left of this one stays unused). */
        p->arena_cur = p->arena_end;
        if (!archive_chunk(p))
            return NULL;
        p->arena_cur -= ACT__CHUNK_SIZE; /* carved below instead */
    }
    void *a = p->arena_cur;
    p->arena_cur += room;
    return a;
}

/* Spooled: 64 KiB of archive for one drained chunk, carved from the
 * slabs (the spool; the drain maps and faults a new slab itself), charged
 * to the slab so that spilling it uncharges it; at file offset *@p off.
 * NULL when the spool cannot grow. */
static act__chunk *archive_slab_chunk(act_session *s, uint64_t *off)
{
    pthread_mutex_lock(&s->lock);
    if ((size_t)(s->slab_end - s->slab_cur) < ACT__CHUNK_SIZE) {
        pthread_mutex_unlock(&s->lock);
        struct act__slab *sl = slab_map(s, SLAB_SIZE, 0, 1);
        if (!sl)
            return NULL;
        pthread_mutex_lock(&s->lock);
        slab_use(s, sl); /* what is left of the one before stays unused */
    }
    act__chunk *c = (act__chunk *)(void *)s->slab_cur;
    s->slab_cur += ACT__CHUNK_SIZE;
    *off = s->slabs->off + (uint64_t)((char *)c - (char *)s->slabs);
    s->slabs->charged += ACT__CHUNK_SIZE;
    pthread_mutex_unlock(&s->lock);
    return c;
}

static void pool_free(act_session *s)
{
    struct act__pool *p = s->pool;
    if (!p)
        return;
    act__pool_forget(s);
    for (struct act__arena *a = p->arenas, *n; a; a = n) {
        n = a->next;
        munmap(a->map, ARENA_SIZE + POOL_ALIGN);
        free(a);
    }
    free(p->fbuf);
    free(p->nbuf);
    munmap(p->map, p->map_size); /* a spooled pool's segments too */
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->freed);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->map_lock);
    munmap(p->slots, p->tsize);
    free(p);
    s->pool = NULL;
}

/* A slot for thread @p t's next chunk (its tail now the chunk before; a
 * spooled pool: at file offset *@p off), or NULL: the pool is empty (drop
 * policy, or the wait was given up), or no drain runs or the policy is
 * grow (*@p nodrain set: carve a chunk as before). */
static act__chunk *pool_take(struct act__pool *p, act__thread *t, int *nodrain, uint64_t *off)
{
    *nodrain = 0;
    if (!p->wait && atomic_load_explicit(&p->avail, memory_order_relaxed) == 0) {
        *nodrain = p->grow;
        return NULL; /* a drop, or a slab chunk, without the lock */
    }
    pthread_mutex_lock(&p->lock);
    if (!p->running) {
        pthread_mutex_unlock(&p->lock);
        *nodrain = 1;
        return NULL;
    }
    uint32_t i = POOL_NONE;
    uint64_t since_pass = p->passes, since_freed = p->freed_count;
    for (;;) {
        if (p->free_head != POOL_NONE) {
            i = p->free_head;
            p->free_head = p->slots[i].next_free;
            p->nfree--;
            break;
        }
        if (p->nfresh < p->cap) {
            if (p->spooled && atomic_load_explicit(&p->nmapped, memory_order_acquire) <= p->nfresh) {
                /* Not in the spool yet. Grow: carve a chunk meanwhile
                 * (a small process never maps a segment of the pool
                 * itself); the drain maps and warms ahead. */
                if (p->grow) {
                    pthread_cond_signal(&p->work);
                    break;
                }
                if (pool_map_upto(p, p->nfresh + 1) != 0) {
                    p->cap = atomic_load_explicit(&p->nmapped, memory_order_relaxed);
                    pool_avail_update(p);
                    continue;
                }
            }
            i = p->nfresh++; /* never written: this thread faults it */
            break;
        }
        if (!p->wait || p->stop || !p->running) {
            /* Grow (a chunk off the pool meanwhile): the drain is told
             * at once, not at its next pass, which an idle one puts off
             * (drain_main). */
            if (p->running && !p->stop)
                pthread_cond_signal(&p->work);
            break;
        }
        if (p->freed_count != since_freed) {
            since_freed = p->freed_count;
            since_pass = p->passes;
        } else if (p->passes >= since_pass + 3) {
            break; /* three passes drained nothing: all pinned */
        }
        pthread_cond_signal(&p->work);
        pthread_cond_wait(&p->freed, &p->lock);
    }
    act__chunk *c = NULL;
    if (i == POOL_NONE && p->grow)
        *nodrain = 1;
    if (i != POOL_NONE) {
        act__pool_slot *sl = &p->slots[i];
        sl->state = SLOT_USED;
        sl->owner = t;
        sl->prev = t->tail;
        atomic_store_explicit(&sl->pinned, 0, memory_order_relaxed);
        c = slot_chunk(p, i);
        if (p->spooled)
            *off = slot_off(p, i);
        atomic_store_explicit(&c->next, NULL, memory_order_relaxed);
        atomic_store_explicit(&c->used, 0, memory_order_relaxed);
        c->size = ACT__CHUNK_SIZE;
        c->heap = 0;
        c->settled = 0;
        pool_avail_update(p);
        if (p->nfree < p->warm_ahead / 2)
            pthread_cond_signal(&p->work);
    }
    pthread_mutex_unlock(&p->lock);
    return c;
}

/* Grow thread @p t's pin buffers to @p n slots. 0 or -1. */
static int pins_reserve(act__thread *t, uint32_t n)
{
    if (n <= t->cappins)
        return 0;
    uint32_t cap = t->cappins ? t->cappins : ACT__MAX_DEPTH + 8;
    while (cap < n)
        cap *= 2;
    uint32_t *a = realloc(t->pins, cap * sizeof *a);
    if (!a)
        return -1;
    t->pins = a;
    uint32_t *b = realloc(t->pins_next, cap * sizeof *b);
    if (!b)
        return -1;
    t->pins_next = b;
    t->cappins = cap;
    return 0;
}

/* Before thread @p t seals its tail (set_tail's release store): pin the
 * pool slots it may still write, unpin the rest of those pinned before.
 * 0, or -1 if the pin list cannot grow (the chunk is then refused). */
static int pool_pin(struct act__pool *p, act__thread *t)
{
    uint32_t depth = t->depth < ACT__MAX_DEPTH ? t->depth : ACT__MAX_DEPTH;
    int grp = t->args_ok == ACT__ARGS_OK && t->grp_chunk;
    uint32_t need = depth;
    if (grp)
        for (act__chunk *c = t->grp_chunk; c; c = atomic_load_explicit(&c->next, memory_order_relaxed)) {
            need++;
            if (c == t->tail)
                break;
        }
    if (pins_reserve(t, need + 1) != 0)
        return -1;
    uint32_t gen = ++t->pin_gen;
    if (!gen)
        gen = ++t->pin_gen;
    uint32_t n = 0;
#define PIN(addr)                                                              \
    do {                                                                       \
        uint32_t i_ = slot_of(p, (addr));                                      \
        if (i_ != POOL_NONE && p->slots[i_].mark != gen) {                     \
            p->slots[i_].mark = gen;                                           \
            atomic_store_explicit(&p->slots[i_].pinned, 1, memory_order_relaxed); \
            t->pins_next[n++] = i_;                                            \
        }                                                                      \
    } while (0)
    for (uint32_t d = 0; d < depth; d++)
        if (t->open[d])
            PIN(t->open[d]);
    if (grp)
        for (act__chunk *c = t->grp_chunk; c; c = atomic_load_explicit(&c->next, memory_order_relaxed)) {
            PIN(c);
            if (c == t->tail)
                break;
        }
#undef PIN
    for (uint32_t k = 0; k < t->npins; k++) {
        act__pool_slot *sl = &p->slots[t->pins[k]];
        if (sl->mark != gen)
            atomic_store_explicit(&sl->pinned, 0, memory_order_release);
    }
    uint32_t *old = t->pins;
    t->pins = t->pins_next;
    t->pins_next = old;
    t->npins = n;
    return 0;
}

/* A program's own session: 1 once the archive in RAM has grown so far
 * that, were every pool slot in use (each is charged then), the budget
 * would be short (budget_short): the archive goes to the spill file from
 * then on. The anonymous archive, which never spills, so leaves the pool
 * and the spill file's slabs in flight their room. */
static int tmp_wanted(const act_session *s, const struct act__pool *p)
{
    /* What is kept (the archive and the slots in use: s->bytes) leaves
     * less than budget_keep. A free slot holds nothing and is charged
     * when taken; counting every one as used made a spill file for runs
     * that fit (3M spans with 2 args: 209 MB of RSS under 256 MB). */
    (void)p;
    return budget_short(s);
}

/* BUFFER_FULL_POLICY = wait, the RAM budget full and nothing to spill
 * (the spill file's slab being filled holds the rest): wait for the drain
 * to pass once. 1 after a pass, 0 when no drain runs or it stopped (the
 * caller then drops, counted). */
static int pool_wait_pass(struct act__pool *p)
{
    pthread_mutex_lock(&p->lock);
    int ok = p->running && !p->stop;
    if (ok) {
        uint64_t since = p->passes;
        pthread_cond_signal(&p->work);
        while (p->running && !p->stop && p->passes == since)
            pthread_cond_wait(&p->freed, &p->lock);
        ok = p->passes != since;
    }
    pthread_mutex_unlock(&p->lock);
    return ok;
}

/* Copy slot @p i (sealed, not pinned) to the archive and splice the copy
 * into its owner's list in its place. 0, or -1 (out of memory: later). */
static int drain_one(act_session *s, struct act__pool *p, uint32_t i)
{
    act__chunk *c = slot_chunk(p, i);
    /* Its counter times become nanoseconds before it leaves the pool
     * (a pair was taken after it was sealed: drain_main). */
    act__settle_chunk(s, c);
    uint64_t aoff = 0;
    act__chunk *a = NULL;
    int filed = 0; /* in the spill file */
    int framed = 0; /* a frame node (frame.h) */
    size_t alen = ACT__CHUNK_SIZE; /* the archive's bytes for it */
    if (p->spooled) {
        a = archive_slab_chunk(s, &aoff);
        if (a)
            memcpy(a, c, ACT__CHUNK_SIZE);
    } else {
        /* Past the RAM budget: the spill file (tmp_archive_chunk). */
        if (s->tmp_ok && !atomic_load_explicit(&s->tmp_on, memory_order_relaxed) &&
            tmp_wanted(s, p))
            atomic_store_explicit(&s->tmp_on, 1, memory_order_relaxed);
        if (s->tmp_ok && atomic_load_explicit(&s->tmp_on, memory_order_relaxed)) {
            /* A frame node, made in the drain's scratch, is what the
             * file gets (else the whole chunk). */
            const act__chunk *src = c;
            if (!p->raw && !p->nbuf)
                p->nbuf = aligned_alloc(64, ACT__CHUNK_SIZE);
            act__chunk *node = p->raw || !p->nbuf ? NULL
                               : act__frame_node(c, &p->fbuf, &p->fcap, scratch_carve, p->nbuf);
            if (node) {
                src = node;
                alen = node->size;
            }
            a = tmp_archive_chunk(s, alen, &aoff);
            if (a && !tmp_live(s)) {
                s->tmp_ok = 0; /* said by tmp_live */
                a = NULL;
            } else if (a && pwrite_all(s->tmp_fd, src, alen, aoff) != 0) {
                /* The blocks could not be had: the rest stays in RAM. */
                int e = errno;
                s->tmp_ok = 0;
                s->tmp_cur = s->tmp_end; /* the slab takes no more */
                act_log(ACT_LOG_ERROR, "spill: cannot write the temporary file in %s "
                        "(SPILL_DIR): %s; past MAX_BUFFER_SIZE_MB events are dropped (counted)",
                        s->tmp_dir, strerror(e));
                a = NULL;
            }
            filed = a != NULL;
            framed = filed && node;
        }
        if (!a && !p->raw) {
            /* A frame node: the slot's charge less what it saves. */
            a = act__frame_node(c, &p->fbuf, &p->fcap, archive_carve, p);
            if (a) {
                framed = 1;
                alen = a->size;
            }
        }
        if (!a) {
            a = archive_chunk(p);
            if (a)
                memcpy(a, c, ACT__CHUNK_SIZE);
        }
    }
    if (!a)
        return -1;
    if (framed)
        atomic_fetch_sub_explicit(&s->bytes, ACT__CHUNK_SIZE - alen, memory_order_relaxed);
    else
        a->heap = 0; /* the archive's (or the slab's): unmapped with it */
    act__pool_slot *sl = &p->slots[i];
    if (p->spooled) {
        /* After the whole copy, before the slot can be handed out again:
         * a rebuild finds the chunk at one place or the other. */
        int64_t v[3] = {(int64_t)sl->owner->serial, (int64_t)slot_off(p, i), (int64_t)aoff};
        act__spool_log(ACT__SP_MOVED, v, 3, NULL, NULL, 0);
    }
    pthread_mutex_lock(&s->lock);
    if (filed)
        s->tmp_slab->charged += alen; /* the slot's charge, moved (a frame's: its bytes) */
    act__chunk *nx = atomic_load_explicit(&c->next, memory_order_relaxed);
    atomic_store_explicit(&a->next, nx, memory_order_relaxed);
    if (sl->prev)
        atomic_store_explicit(&sl->prev->next, a, memory_order_release);
    else
        sl->owner->head = a;
    uint32_t j = slot_of(p, nx);
    if (j != POOL_NONE)
        p->slots[j].prev = a;
    if (atomic_load_explicit(&sl->owner->exited, memory_order_acquire) && sl->owner->tail == c)
        sl->owner->tail = a; /* an exited thread's tail (a live one's is never drained) */
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* Write @p n never-used slots from nfresh on and free them, warm. Pool
 * lock held on entry and exit (dropped while writing). */
static void pool_warm(struct act__pool *p, uint32_t n)
{
    uint32_t first = p->nfresh;
    if (first >= p->cap)
        return;
    if (n > p->cap - first)
        n = p->cap - first;
    if (!n)
        return;
    p->nfresh += n; /* claimed: no recording thread takes them meanwhile */
    pthread_mutex_unlock(&p->lock);
    uint32_t ok = n;
    if (pool_map_upto(p, first + n) != 0) {
        uint32_t m = atomic_load_explicit(&p->nmapped, memory_order_relaxed);
        ok = m > first ? m - first : 0;
    }
    if (ok)
        populate_write(slot_chunk(p, first), (size_t)ok * ACT__CHUNK_SIZE);
    pthread_mutex_lock(&p->lock);
    if (ok < n) {
        /* The spool cannot grow: the pool stops at what is mapped. */
        p->cap = first + ok;
        pool_avail_update(p);
    }
    for (uint32_t k = ok; k-- > 0;)
        pool_push_free(p, first + k);
    pthread_cond_broadcast(&p->freed);
}

/* Wait on @p c (@p m held) for at most @p ms. */
static void cond_wait_ms(pthread_cond_t *c, pthread_mutex_t *m, long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += ms * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(c, m, &ts);
}

/* Wait on @p c (@p m held) for at most @p ns (> 0). */
static void cond_wait_ns(pthread_cond_t *c, pthread_mutex_t *m, int64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t t = (int64_t)ts.tv_nsec + ns;
    ts.tv_sec += (time_t)(t / 1000000000);
    ts.tv_nsec = (long)(t % 1000000000);
    pthread_cond_timedwait(c, m, &ts);
}

/* ---- ticks ------------------------------------------------------------------ */

/*
 * Ticks are the helper thread's periodic calls for plugins (the ABI's
 * every): the helper runs the ticks that are due between its own work and
 * waits until the earliest of its own next pass and the next tick. A tick
 * runs with no engine lock held (it records, as a plugin thread would);
 * the helper marks itself (on_helper) so that its recording never waits
 * for the pool it drains itself. Ticks must be short: while one runs, the
 * helper neither drains nor warms (docs/plugins.md).
 */
static _Thread_local int on_helper;

/* The earliest next_ns of the table, or INT64_MAX. Under tick_lock. */
static int64_t ticks_first(const act_session *s)
{
    int64_t first = INT64_MAX;
    for (uint32_t i = 0; i < ACT__TICKS_MAX; i++)
        if (s->ticks[i].id && s->ticks[i].next_ns < first)
            first = s->ticks[i].next_ns;
    return first;
}

/* On the helper: runs each tick due now once (one that is late runs once,
 * then a period later: missed ticks are skipped), and returns when the
 * next one is due (INT64_MAX: none). */
static int64_t ticks_run(act_session *s)
{
    int64_t first = atomic_load_explicit(&s->tick_first, memory_order_acquire);
    if (first == INT64_MAX)
        return first;
    int64_t now = act__clock_ns();
    if (now < first)
        return first;
    pthread_mutex_lock(&s->tick_lock);
    for (uint32_t i = 0; i < ACT__TICKS_MAX; i++) {
        struct act__tick *k = &s->ticks[i];
        if (!k->id || k->next_ns > now)
            continue;
        k->next_ns += k->period_ns;
        if (k->next_ns <= now)
            k->next_ns = now + k->period_ns;
        void (*fn)(void *, int64_t) = k->fn;
        void *arg = k->arg;
        s->tick_busy_id = k->id;
        s->tick_busy_owner = k->owner;
        pthread_mutex_unlock(&s->tick_lock);
        fn(arg, act__clock_ns());
        pthread_mutex_lock(&s->tick_lock);
        s->tick_busy_id = 0;
        s->tick_busy_owner = NULL;
        pthread_cond_broadcast(&s->tick_done);
    }
    first = ticks_first(s);
    atomic_store_explicit(&s->tick_first, first, memory_order_release);
    pthread_mutex_unlock(&s->tick_lock);
    return first;
}

/* How long the helper may sleep, in ns, at most @p cap_ns, before the tick
 * due at @p next: 0 when it is due now. */
static int64_t tick_sleep(int64_t next, int64_t cap_ns)
{
    if (next == INT64_MAX)
        return cap_ns;
    int64_t d = next - act__clock_ns();
    return d <= 0 ? 0 : d < cap_ns ? d : cap_ns;
}

/* 1 if this process runs @p s's helper now. */
static int helper_here(act_session *s)
{
    return s->prefault_pid && s->prefault_pid == (int32_t)getpid();
}

int act__tick_add(act_session *s, const void *owner, int64_t period_ns,
                  void (*fn)(void *arg, int64_t now_ns), void *arg, uint32_t *id)
{
    if (!s || !fn || !id || period_ns <= 0)
        return ACT_EINVAL;
    /* A forked child has no helper (and its locks may have been held at
     * the fork): nothing is taken there. */
    if (!helper_here(s))
        return ACT_ESTATE;
    pthread_mutex_lock(&s->ready_lock);
    int running = s->prefault_running && !s->prefault_stop;
    pthread_mutex_unlock(&s->ready_lock);
    if (!running)
        return ACT_ESTATE;
    pthread_mutex_lock(&s->tick_lock);
    struct act__tick *k = NULL;
    for (uint32_t i = 0; i < ACT__TICKS_MAX && !k; i++)
        if (!s->ticks[i].id)
            k = &s->ticks[i];
    if (!k) {
        pthread_mutex_unlock(&s->tick_lock);
        return ACT_ELIMIT;
    }
    if (++s->tick_next_id == 0)
        s->tick_next_id = 1;
    k->fn = fn;
    k->arg = arg;
    k->owner = owner;
    k->period_ns = period_ns;
    int64_t now = act__clock_ns();
    k->next_ns = period_ns > INT64_MAX - now ? INT64_MAX - 1 : now + period_ns;
    k->id = s->tick_next_id;
    *id = k->id;
    int earlier = k->next_ns < atomic_load_explicit(&s->tick_first, memory_order_relaxed);
    if (earlier)
        atomic_store_explicit(&s->tick_first, k->next_ns, memory_order_release);
    pthread_mutex_unlock(&s->tick_lock);
    if (earlier) {
        /* The helper may sleep until its own next pass (or for ever,
         * without a pool): it recomputes its wait. */
        pthread_mutex_lock(&s->ready_lock);
        pthread_cond_signal(&s->prefault_cond);
        pthread_mutex_unlock(&s->ready_lock);
        if (s->pool) {
            pthread_mutex_lock(&s->pool->lock);
            pthread_cond_signal(&s->pool->work);
            pthread_mutex_unlock(&s->pool->lock);
        }
    }
    return 0;
}

int act__tick_cancel(act_session *s, const void *owner, uint32_t id, int64_t wait_ms)
{
    if (!s || !helper_here(s))
        return 0;
    pthread_mutex_lock(&s->tick_lock);
    int found = 0;
    for (uint32_t i = 0; i < ACT__TICKS_MAX; i++)
        if (s->ticks[i].id && s->ticks[i].owner == owner && (!id || s->ticks[i].id == id)) {
            s->ticks[i].id = 0;
            found = 1;
        }
    atomic_store_explicit(&s->tick_first, ticks_first(s), memory_order_release);
    int rc = found || !id ? 0 : ACT_ENOENT;
    if (!on_helper) {
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        int64_t t = (int64_t)dl.tv_nsec + (wait_ms > 0 ? wait_ms : 0) % 1000 * 1000000;
        dl.tv_sec += (time_t)((wait_ms > 0 ? wait_ms : 0) / 1000 + t / 1000000000);
        dl.tv_nsec = (long)(t % 1000000000);
        while (s->tick_busy_id && s->tick_busy_owner == owner &&
               (!id || s->tick_busy_id == id)) {
            if (wait_ms <= 0) {
                pthread_cond_wait(&s->tick_done, &s->tick_lock);
            } else if (pthread_cond_timedwait(&s->tick_done, &s->tick_lock, &dl) == ETIMEDOUT &&
                       s->tick_busy_id && s->tick_busy_owner == owner) {
                s->helper_stuck = 1;
                rc = ACT_EBUSY;
                break;
            }
        }
    }
    pthread_mutex_unlock(&s->tick_lock);
    return rc;
}

/* Test hook: ACTRACE_TEST_DRAIN_DELAY_US before each chunk (a slow
 * disk), cut short by stop. */
static int drain_delay(struct act__pool *p)
{
    int64_t end = act__clock_ns() + (int64_t)p->delay_us * 1000;
    pthread_mutex_lock(&p->lock);
    while (!p->stop && act__clock_ns() < end)
        cond_wait_ms(&p->work, &p->lock, 1);
    int stop = p->stop;
    pthread_mutex_unlock(&p->lock);
    return stop;
}

void act__pool_counts(act_session *s, uint64_t *drained, uint32_t *slots, uint32_t *touched)
{
    *drained = 0;
    *slots = *touched = 0;
    struct act__pool *p = s->pool;
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    *drained = p->drained;
    *slots = p->nslots;
    *touched = p->nfresh;
    pthread_mutex_unlock(&p->lock);
}

void act__pool_settle(act_session *s)
{
    for (int k = 0; s->pool && k < 3; k++)
        if (!pool_wait_pass(s->pool))
            break;
}

/*
 * Thread exit. A thread's tail is sealed only when it moves on; one that
 * exits never does, so a key destructor marks it exited (and drops its
 * pins): the drain then takes its tail too, and the pool gets its slots
 * back (thread churn). The key holds a token naming the session by
 * generation, checked under exit_lock against the sessions alive (one
 * destroyed meanwhile is left alone); the thread forgets its buffer, so
 * a recording call from a later destructor attaches a new one.
 */
typedef struct exit_token {
    act_session *s;
    uint64_t gen;
    act__thread *t;
} exit_token;

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static int exit_key_ok;
static pthread_mutex_t exit_lock = PTHREAD_MUTEX_INITIALIZER;
/* Sessions with a pool that are not destroyed (under exit_lock). */
static struct live_pool {
    act_session *s;
    uint64_t gen;
    struct live_pool *next;
} *live_pools;

static void thread_exited(void *v)
{
    exit_token *tok = v;
    pthread_mutex_lock(&exit_lock);
    struct live_pool *l = live_pools;
    while (l && !(l->s == tok->s && l->gen == tok->gen))
        l = l->next;
    if (l && tok->s->pool) {
        act__thread *t = tok->t;
        struct act__pool *p = tok->s->pool;
        for (uint32_t k = 0; k < t->npins; k++)
            atomic_store_explicit(&p->slots[t->pins[k]].pinned, 0, memory_order_release);
        t->npins = 0;
        atomic_store_explicit(&t->exited, 1, memory_order_release);
    }
    pthread_mutex_unlock(&exit_lock);
    act__thread_forget();
    free(tok);
}

static void exit_lock_take(void)
{
    pthread_mutex_lock(&exit_lock);
}

static void exit_lock_give(void)
{
    pthread_mutex_unlock(&exit_lock);
}

static void exit_lock_child(void)
{
    pthread_mutex_init(&exit_lock, NULL);
}

static void exit_key_init(void)
{
    exit_key_ok = pthread_key_create(&exit_key, thread_exited) == 0;
    pthread_atfork(exit_lock_take, exit_lock_give, exit_lock_child);
}

/* Register @p t (the calling thread's, of pooled session @p s) for its
 * exit hook; the previous token of this thread (another session) goes. */
static void exit_watch(act_session *s, act__thread *t)
{
    pthread_once(&exit_once, exit_key_init);
    if (!exit_key_ok)
        return;
    exit_token *tok = malloc(sizeof *tok);
    if (!tok)
        return; /* its tail stays in the pool until stop */
    tok->s = s;
    tok->gen = s->gen;
    tok->t = t;
    free(pthread_getspecific(exit_key));
    pthread_setspecific(exit_key, tok);
}

static void pool_register(act_session *s)
{
    pthread_once(&exit_once, exit_key_init); /* exit_lock's fork handlers */
    struct live_pool *l = malloc(sizeof *l);
    if (!l)
        return; /* exits are then not seen: tails stay until stop */
    l->s = s;
    l->gen = s->gen;
    pthread_mutex_lock(&exit_lock);
    l->next = live_pools;
    live_pools = l;
    pthread_mutex_unlock(&exit_lock);
}

void act__pool_forget(act_session *s)
{
    pthread_mutex_lock(&exit_lock);
    for (struct live_pool **pl = &live_pools; *pl; pl = &(*pl)->next)
        if ((*pl)->s == s && (*pl)->gen == s->gen) {
            struct live_pool *l = *pl;
            *pl = l->next;
            free(l);
            break;
        }
    pthread_mutex_unlock(&exit_lock);
}

/* The drain's pass period: 2 ms while the session takes chunks or the
 * drain has work, doubled on each idle pass up to 32 ms (an idle recording
 * process, a launcher or a build's make under record, wakes about 30 times
 * a second, not 500). What needs the drain sooner wakes it: a recording
 * thread short of free slots, a grow past the pool, the wait policy, a
 * tick added earlier, the stop. */
#define DRAIN_PASS_NS ((int64_t)2000000)
#define DRAIN_IDLE_NS ((int64_t)32000000)
#define DRAIN_FRAMES_PER_PASS 32u

/* The drain: passes over the slots in use, draining those sealed and not
 * pinned once fewer than half the slots are free or never used (a trace
 * that fits in the pool is never copied: the writer, or the rebuild,
 * reads it in place), and keeps warm_ahead slots written ahead of need. */
static void drain_main(act_session *s)
{
    struct act__pool *p = s->pool;
    uint32_t *cand = malloc((size_t)p->nslots * sizeof *cand);
    int64_t pass_ns = DRAIN_PASS_NS;
    uint64_t last_used = UINT64_MAX;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        uint32_t n = 0;
        /* Whole copies are drained only when the pool runs low (a copy
         * saves nothing); frames as soon as sealed: a frame is a quarter
         * of the chunk or less, and the slot comes back warm, so the
         * pool's fresh pages are not touched. */
        int pressure = (!p->spooled && !p->raw) ||
                       p->nfree + (p->cap > p->nfresh ? p->cap - p->nfresh : 0) < p->nslots / 2;
        for (uint32_t i = 0; cand && pressure && i < p->nfresh; i++) {
            if (p->slots[i].state != SLOT_USED)
                continue;
            act__chunk *c = slot_chunk(p, i);
            if ((atomic_load_explicit(&c->next, memory_order_acquire) ||
                 atomic_load_explicit(&p->slots[i].owner->exited, memory_order_acquire)) &&
                !atomic_load_explicit(&p->slots[i].pinned, memory_order_acquire))
                cand[n++] = i;
        }
        /* Counter times: every sealed, unpinned slot not yet settled is
         * settled now, off the recording threads and before stop (which
         * then settles only the tails and the pinned). */
        uint32_t ns = 0;
        for (uint32_t i = 0; cand && !pressure && s->use_ticks && i < p->nfresh; i++) {
            if (p->slots[i].state != SLOT_USED)
                continue;
            act__chunk *c = slot_chunk(p, i);
            if (!c->settled &&
                (atomic_load_explicit(&c->next, memory_order_acquire) ||
                 atomic_load_explicit(&p->slots[i].owner->exited, memory_order_acquire)) &&
                !atomic_load_explicit(&p->slots[i].pinned, memory_order_acquire))
                cand[n + ns++] = i;
        }
        pthread_mutex_unlock(&p->lock);
        /* A calibration pair after the candidates' last writes (or now
         * and then while the session runs). */
        act__cal_add(s, n + ns > 0);
        for (uint32_t k = 0; k < ns; k++)
            act__settle_chunk(s, slot_chunk(p, cand[n + k]));
        /* Frames: every candidate settled first (cheap), so that what
         * the encode has not reached by stop needs no settling there; a
         * pass encodes a few only, so that the next pass settles what was
         * sealed meanwhile (a backlog would otherwise be settled by stop). */
        for (uint32_t k = 0; s->use_ticks && !p->spooled && !p->raw && k < n; k++)
            act__settle_chunk(s, slot_chunk(p, cand[k]));
        if (!p->spooled && !p->raw && n > DRAIN_FRAMES_PER_PASS)
            n = DRAIN_FRAMES_PER_PASS;
        uint32_t done = 0;
        for (uint32_t k = 0; k < n; k++) {
            if (p->delay_us && drain_delay(p))
                break; /* stopped: the rest is read in place */
            if (drain_one(s, p, cand[k]) != 0)
                break;
            pthread_mutex_lock(&p->lock);
            pool_push_free(p, cand[k]);
            p->freed_count++;
            p->drained++;
            pthread_cond_broadcast(&p->freed);
            /* Stopped: the rest is read in place (stop waits for one
             * chunk's copy at most, not for the archive's fresh pages). */
            int stopping = p->stop;
            pthread_mutex_unlock(&p->lock);
            done++;
            if (stopping)
                break;
        }
        /* Spooled: the archive spills ahead, as without a pool (bounded
         * by the slabs there are; p->stop is read under the lock only). */
        while (spill_wanted(s) && spill_one(s, 0))
            done++;
        int64_t next_tick = ticks_run(s);
        pthread_mutex_lock(&p->lock);
        /* Warm ahead, a huge page at a time, once the session records
         * (a lazy one: past prefault_after) and within the budget. */
        uint64_t used = atomic_load_explicit(&s->bytes, memory_order_relaxed);
        int warmed = 0;
        if (!p->stop && p->nfree < p->warm_ahead && p->nfresh < p->cap &&
            used >= s->prefault_after &&
            used + (uint64_t)(p->nfree + POOL_WARM_STEP) * ACT__CHUNK_SIZE <= s->max_bytes) {
            pool_warm(p, POOL_WARM_STEP - p->nfresh % POOL_WARM_STEP);
            warmed = 1;
        }
        p->passes++;
        pthread_cond_broadcast(&p->freed);
        if (done || warmed || n || used != last_used)
            pass_ns = DRAIN_PASS_NS;
        else if (pass_ns < DRAIN_IDLE_NS)
            pass_ns *= 2;
        last_used = used;
        int64_t sleep_ns = tick_sleep(next_tick, pass_ns);
        if (!done && !warmed && !p->stop && sleep_ns > 0)
            cond_wait_ns(&p->work, &p->lock, sleep_ns);
    }
    pthread_mutex_unlock(&p->lock);
    free(cand);
}

/* ---- the pre-fault thread --------------------------------------------------- */

#define PREFAULT_AHEAD ((size_t)16 << 20)
/* What a recording thread maps when no pre-faulted slab is ready: a few
 * chunks only, so it goes back to pre-faulted memory as soon as the
 * pre-fault thread catches up. */
#define FALLBACK_SLAB (SLAB_HDR + 4 * (size_t)ACT__CHUNK_SIZE)

/* 1 if one more slab may be pre-faulted: fewer than PREFAULT_AHEAD bytes
 * are ready, and the budget could still take them all (memory the budget
 * would refuse is never touched). Under ready_lock. */
static int prefault_wanted(const act_session *s)
{
    if (s->ready_bytes >= PREFAULT_AHEAD)
        return 0;
    uint64_t used = atomic_load_explicit(&s->bytes, memory_order_relaxed);
    /* A lazy session (prefault_after) pre-faults nothing until it has
     * used that much: most short-lived processes record a few events. */
    if (used + atomic_load_explicit(&s->spilled, memory_order_relaxed) < s->prefault_after)
        return 0;
    return used + s->ready_bytes + SLAB_SIZE <= s->max_bytes;
}

/* Wait on prefault_cond (ready_lock held) for at most @p ms. */
static void wait_ms(act_session *s, long ms)
{
    cond_wait_ms(&s->prefault_cond, &s->ready_lock, ms);
}

static void *prefault_main(void *arg)
{
    act_session *s = arg;
    on_helper = 1;
    /* Named for ps and the trace: it runs plugins' ticks, which record. */
    prctl(PR_SET_NAME, "actrace-helper", 0, 0, 0);
    if (s->pool) {
        drain_main(s);
        return NULL;
    }
    pthread_mutex_lock(&s->ready_lock);
    while (!s->prefault_stop) {
        pthread_mutex_unlock(&s->ready_lock);
        int64_t next_tick = ticks_run(s);
        pthread_mutex_lock(&s->ready_lock);
        if (s->prefault_stop)
            break;
        /* Spooled: keep room in the RAM budget (a quarter of it, at most
         * 32 MB: what the pre-fault thread keeps ready and some) by
         * spilling ahead of need, so recording threads rarely spill
         * themselves; a run that fits in the budget never spills. */
        if (spill_wanted(s)) {
            pthread_mutex_unlock(&s->ready_lock);
            size_t got = spill_one(s, 0);
            pthread_mutex_lock(&s->ready_lock);
            if (got)
                continue;
        }
        if (!prefault_wanted(s)) {
            if (s->spooled || s->prefault_after) {
                /* Woken by ready_take, or every 10 ms to spill or to see
                 * whether a lazy session got going (sooner for a tick). */
                int64_t ns = tick_sleep(next_tick, 10000000);
                if (ns > 0)
                    cond_wait_ns(&s->prefault_cond, &s->ready_lock, ns);
            } else if (next_tick != INT64_MAX) {
                int64_t ns = tick_sleep(next_tick, INT64_MAX);
                if (ns > 0)
                    cond_wait_ns(&s->prefault_cond, &s->ready_lock, ns);
            } else {
                /* Woken by ready_take, stop, or a new tick. */
                pthread_cond_wait(&s->prefault_cond, &s->ready_lock);
            }
            continue;
        }
        pthread_mutex_unlock(&s->ready_lock);
        struct act__slab *sl = slab_map(s, SLAB_SIZE, 0, 1);
        pthread_mutex_lock(&s->ready_lock);
        if (!sl) {
            /* Out of memory for now: recording threads fall back. */
            if (!s->prefault_stop)
                wait_ms(s, 50);
            continue;
        }
        if (s->ready_tail)
            s->ready_tail->next = sl;
        else
            s->ready_head = sl;
        s->ready_tail = sl;
        s->ready_bytes += sl->size - SLAB_HDR;
    }
    pthread_mutex_unlock(&s->ready_lock);
    return NULL;
}

void act__prefault_start(act_session *s)
{
    pthread_mutex_lock(&s->ready_lock);
    int running = s->prefault_running;
    s->prefault_stop = 0;
    pthread_mutex_unlock(&s->ready_lock);
    if (running)
        return;
    pthread_cond_init(&s->prefault_cond, NULL);
    if (s->pool) {
        pthread_mutex_lock(&s->pool->lock);
        s->pool->stop = 0;
        s->pool->running = 1;
        pthread_mutex_unlock(&s->pool->lock);
    }
    /* No signal is delivered to the helper: the program's handlers run on
     * its own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->prefault, NULL, prefault_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        /* No drain: chunks are carved as before (nothing records yet). */
        pool_free(s);
        pthread_cond_destroy(&s->prefault_cond);
        act_log(ACT_LOG_WARN, "cannot start the buffer pre-fault thread; recording threads fault in their own memory");
        return;
    }
    pthread_mutex_lock(&s->ready_lock);
    s->prefault_pid = (int32_t)getpid();
    s->prefault_running = 1;
    pthread_mutex_unlock(&s->ready_lock);
}

/* Stop: the chunks still holding counter times (in the pool, carved
 * from the slabs, a thread's first ones) are settled in place; the drain
 * settled what it copied (archived chunks, in RAM or in the spill file,
 * are never read here: a spilled page is never faulted back in). */
void act__settle_times(act_session *s)
{
    if (!s->use_ticks)
        return;
    act__cal_add(s, 1);
    struct act__pool *p = s->pool;
    if (p) {
        pthread_mutex_lock(&p->lock);
        for (uint32_t i = 0; i < p->nfresh; i++)
            if (p->slots[i].state == SLOT_USED)
                act__settle_chunk(s, slot_chunk(p, i));
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->nloose; i++)
        act__settle_chunk(s, s->loose[i]);
    pthread_mutex_unlock(&s->lock);
}

void act__prefault_stop(act_session *s)
{
    /* A forked child never had the thread, and the lock may have been held
     * by it at the fork: leave both alone. */
    if (s->prefault_pid && s->prefault_pid != (int32_t)getpid())
        return;
    pthread_mutex_lock(&s->ready_lock);
    int mine = s->prefault_running && s->prefault_pid == (int32_t)getpid();
    s->prefault_running = 0;
    s->prefault_stop = 1;
    if (mine)
        pthread_cond_signal(&s->prefault_cond);
    pthread_mutex_unlock(&s->ready_lock);
    if (mine && s->pool) {
        struct act__pool *p = s->pool;
        pthread_mutex_lock(&p->lock);
        p->stop = 1;
        p->running = 0;
        pthread_cond_broadcast(&p->work);
        pthread_cond_broadcast(&p->freed); /* waiting recorders give up */
        pthread_mutex_unlock(&p->lock);
    }
    if (mine && s->helper_stuck) {
        /* Inside a plugin's tick that never returned: left to itself
         * (the session is never freed, act__session_free). */
        pthread_detach(s->prefault);
        act__settle_times(s);
        return;
    }
    if (mine) {
        pthread_join(s->prefault, NULL);
        pthread_cond_destroy(&s->prefault_cond);
        /* No tick runs from now on (a plugin's stop cancelled its own). */
        pthread_mutex_lock(&s->tick_lock);
        for (uint32_t i = 0; i < ACT__TICKS_MAX; i++)
            s->ticks[i].id = 0;
        atomic_store_explicit(&s->tick_first, INT64_MAX, memory_order_release);
        pthread_mutex_unlock(&s->tick_lock);
    }
    act__settle_times(s);
}

/* A pre-faulted slab, or NULL if none is ready or the pre-fault thread
 * holds the lock right now (never waited for). */
static struct act__slab *ready_take(act_session *s)
{
    if (pthread_mutex_trylock(&s->ready_lock) != 0)
        return NULL;
    struct act__slab *sl = s->ready_head;
    if (sl) {
        s->ready_head = sl->next;
        if (!s->ready_head)
            s->ready_tail = NULL;
        s->ready_bytes -= sl->size - SLAB_HDR;
    }
    if (s->prefault_running && s->prefault_pid == (int32_t)getpid() &&
        s->ready_bytes < PREFAULT_AHEAD / 2)
        pthread_cond_signal(&s->prefault_cond);
    pthread_mutex_unlock(&s->ready_lock);
    return sl;
}

/* Size of a thread's next standard chunk: a thread starts small (most
 * short-lived threads record a few events) and grows to ACT__CHUNK_SIZE. */
static size_t chunk_size_for(uint32_t nth)
{
    return nth == 0 ? ACT__CHUNK_FIRST : nth == 1 ? ACT__CHUNK_SIZE / 4 : ACT__CHUNK_SIZE;
}

/* A new chunk of at least @p need usable bytes (@p std: the standard size
 * for the thread's chunk number), charged to the session's budget, or NULL
 * if the budget (or the system) refuses it. */
static act__chunk *chunk_new(act_session *s, act__thread *t, size_t need, size_t std,
                             uint64_t *off)
{
    size_t size = std;
    int heap = 0;
    if (need + sizeof(act__chunk) > size) {
        size = (need + sizeof(act__chunk) + 4095) & ~(size_t)4095;
        if (size <= ACT__CHUNK_SIZE)
            size = ACT__CHUNK_SIZE;
        else
            heap = 1;
    }
    if (size > UINT32_MAX / 2)
        return NULL; /* strings are capped well below this */
    /* Check before charging (a compare-and-swap): a request the budget
     * refuses never shows in s->bytes, so a huge string refused on one
     * thread cannot make another thread's ordinary chunk look over the
     * limit. */
    uint64_t cur = atomic_load_explicit(&s->bytes, memory_order_relaxed);
    int waited = 0;
    for (;;) {
        if (spills(s)) {
            /* The file's bound: what is in memory and what was spilled. */
            uint64_t sp = atomic_load_explicit(&s->spilled, memory_order_relaxed);
            if (size > s->spool_max_bytes || cur + sp > s->spool_max_bytes - size)
                return NULL;
            if (size <= s->max_bytes && cur > s->max_bytes - size) {
                /* RAM is full: spill the oldest slab and try again (wait
                 * policy, the spill file's: or wait for the drain to
                 * fill its slab, three passes at most). */
                if (!spill_one(s, 1) &&
                    (s->spooled || !s->pool || !s->pool->wait || on_helper ||
                     ++waited > 3 || !pool_wait_pass(s->pool)))
                    return NULL;
                cur = atomic_load_explicit(&s->bytes, memory_order_relaxed);
                continue;
            }
        }
        if (size > s->max_bytes || cur > s->max_bytes - size)
            return NULL;
        if (atomic_compare_exchange_weak_explicit(&s->bytes, &cur, cur + size,
                                                  memory_order_relaxed, memory_order_relaxed))
            break;
    }
    act__chunk *c = NULL;
    /* The helper (a plugin's tick records there) carves: it never waits
     * for the pool it drains itself. */
    if (s->pool && t && !heap && size == ACT__CHUNK_SIZE && !on_helper) {
        int nodrain = 0;
        c = pool_take(s->pool, t, &nodrain, off);
        if (c)
            return c; /* its header is set */
        if (!nodrain) {
            atomic_fetch_sub_explicit(&s->bytes, size, memory_order_relaxed);
            return NULL; /* the pool is empty: a buffer-full drop */
        }
    }
    if (heap && s->spooled) {
        /* A slab of its own, in the list behind the one being carved:
         * spilled like any other (never carved: it is full). */
        struct act__slab *sl = slab_map(s, size + SLAB_HDR, 0, 0);
        if (sl) {
            c = (act__chunk *)(void *)((char *)sl + SLAB_HDR);
            *off = sl->off + SLAB_HDR;
            sl->charged = size;
            pthread_mutex_lock(&s->lock);
            slab_link_behind(s, sl);
            pthread_mutex_unlock(&s->lock);
        }
        heap = 0; /* the slab's: unmapped with it */
    } else if (heap) {
        c = malloc(size);
    } else {
        pthread_mutex_lock(&s->lock);
        if ((size_t)(s->slab_end - s->slab_cur) < size) {
            /* The rest of this slab is left unused (under a chunk). */
            struct act__slab *sl = ready_take(s);
            if (!sl) {
                /* The pre-fault thread fell behind (or there is none):
                 * fresh memory, faulted in by this thread as it writes. */
                sl = slab_map(s, FALLBACK_SLAB, 0, 0);
            }
            if (sl)
                slab_use(s, sl);
        }
        if ((size_t)(s->slab_end - s->slab_cur) >= size) {
            c = (act__chunk *)s->slab_cur;
            s->slab_cur += size;
            *off = s->slabs->off + (uint64_t)((char *)c - (char *)s->slabs);
            s->slabs->charged += size;
        }
        pthread_mutex_unlock(&s->lock);
    }
    if (!c) {
        atomic_fetch_sub_explicit(&s->bytes, size, memory_order_relaxed);
        return NULL;
    }
    atomic_init(&c->next, NULL);
    atomic_init(&c->used, 0);
    c->size = (uint32_t)size;
    c->heap = (uint32_t)heap;
    c->settled = 0;
    if (s->use_ticks) {
        /* Known to stop's settle (act__settle_times). */
        pthread_mutex_lock(&s->lock);
        if (s->nloose == s->caploose) {
            size_t cap = s->caploose ? 2 * s->caploose : 64;
            act__chunk **nl = realloc(s->loose, cap * sizeof *nl);
            if (nl) {
                s->loose = nl;
                s->caploose = cap;
            }
        }
        if (s->nloose < s->caploose) {
            s->loose[s->nloose++] = c;
        } else {
            /* No memory to list it: this session records on the clock
             * from now on (act__span_now), so this chunk gets no ticks;
             * the ticks already written are settled as ever. */
            s->tick_gen = UINT64_MAX;
            c->settled = 1;
        }
        pthread_mutex_unlock(&s->lock);
    }
    return c;
}

/* Log chunk @p c (at spool offset @p off) as thread @p t's next: before
 * anything is written to it, so a rebuild never misses a committed
 * record. */
static void spool_chunk(const act__thread *t, const act__chunk *c, uint64_t off)
{
    int64_t v[3] = {(int64_t)t->serial, (int64_t)off, (int64_t)c->size};
    act__spool_log(ACT__SP_CHUNK, v, 3, NULL, NULL, 0);
}

static void set_tail(act__thread *t, act__chunk *c)
{
    /* Its count before readers can reach it (a pool slot was used). */
    atomic_store_explicit(&c->used, 0, memory_order_relaxed);
    if (t->tail)
        atomic_store_explicit(&t->tail->next, c, memory_order_release);
    else
        t->head = c;
    t->tail = c;
    /* A pool slot may come back to this thread: its old string copies
     * must not be found again. */
    memset(t->vcache, 0, sizeof t->vcache);
    t->rec = c->recs;
    act__thread_set_str(t, (char *)c + c->size);
}

act__thread *act__thread_get(act_session *s)
{
    /* A fork()ed child's copy of its parent's session: its chunks may be
     * the parent's shared spool. Never attach to it. */
    if (s->fork_gen != act__fork_gen)
        return NULL;
    /* Spooled: the thread's state lives in the spool, so that its drop
     * counts outlive the process. */
    uint64_t toff = UINT64_MAX;
    act__thread *t = s->spooled ? act__spool_alloc(sizeof *t, &toff) : NULL;
    if (t)
        t->in_spool = 1;
    else
        t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->session = s;
    t->pid = (int32_t)getpid();
    t->tid = os_tid();
    t->serial = act__thread_serial();
    if (s->spooled) {
        /* The thread's name now (the rebuild has no /proc of the thread). */
        char comm[17] = "";
        prctl(PR_GET_NAME, comm, 0, 0, 0);
        int64_t v[6] = {(int64_t)t->serial, t->pid, t->tid, (int64_t)toff,
                        (int64_t)sizeof *t, ACT__THREAD_LAYOUT};
        const char *cs = comm;
        size_t cl = strnlen(comm, 16);
        act__spool_log(ACT__SP_THREAD, v, 6, &cs, &cl, 1);
    }
    uint64_t off = 0;
    act__chunk *c = chunk_new(s, NULL, 0, chunk_size_for(0), &off);
    if (c) {
        if (s->spooled)
            spool_chunk(t, c, off);
        set_tail(t, c);
        t->nchunks = 1;
    } else {
        t->full = 1;
    }
    pthread_mutex_lock(&s->lock);
    t->next = s->threads;
    s->threads = t;
    pthread_mutex_unlock(&s->lock);
    if (s->pool)
        exit_watch(s, t);
    return t;
}

int act__thread_reserve(act__thread *t, uint32_t nrec, uint32_t strbytes)
{
    size_t need = (size_t)nrec * sizeof(act__rec) + strbytes;
    if (t->tail && (size_t)(t->str - (char *)t->rec) >= need)
        return 0;
    act_session *s = t->session;
    /* `full` is a hint that saves a trip to the allocator while the budget
     * has no room for a standard chunk; it is re-checked (one relaxed
     * load), never final: a chunk refused for a transient reason (the
     * system out of memory, a slab that could not be mapped) does not stop
     * the thread for good. */
    if (t->full) {
        /* Spooled, a full RAM budget is spilled, not final: try. */
        if (!s->spooled &&
            atomic_load_explicit(&s->bytes, memory_order_relaxed) + ACT__CHUNK_SIZE > s->max_bytes)
            return -1;
        t->full = 0;
    }
    size_t std = chunk_size_for(t->nchunks);
    if (s->pool && t->tail) {
        /* The pool is empty (drop policy): no need to try. */
        if (!s->pool->wait && !s->pool->grow && std == ACT__CHUNK_SIZE && need + sizeof(act__chunk) <= std &&
            atomic_load_explicit(&s->pool->avail, memory_order_relaxed) == 0)
            return -1;
        /* Pin what this thread may still write before its tail is sealed. */
        if (pool_pin(s->pool, t) != 0)
            return -1;
    }
    uint64_t off = 0;
    act__chunk *c = chunk_new(s, t, need, std, &off);
    if (c && s->spooled)
        spool_chunk(t, c, off);
    if (!c) {
        /* An oversized chunk (a huge string) may fail alone. */
        if (need + sizeof(act__chunk) <= ACT__CHUNK_SIZE)
            t->full = 1;
        return -1;
    }
    set_tail(t, c);
    t->nchunks++;
    return 0;
}

/* Only the owning thread writes: no read-modify-write needed. */
static inline void bump(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

void act__thread_drop(act__thread *t, int type, act__drop_reason why)
{
    /* Args that follow a dropped event must not attach to the one before. */
    if (why != ACT__DROP_ORPHAN_ARG)
        t->args_ok = 0;
    int slot = act__type_slot(type);
    if (slot >= 0)
        bump(&t->dropped_type[slot]);
    else
        bump(&t->dropped_other);
    bump(&t->dropped_reason[why]);
}
