/* SPDX-License-Identifier: MIT */
/*
 * Record's shared light log (src/engine/spool.h, ACT__LIGHT_LOG): the
 * frames that processes which never started a session appended to one
 * file, read back and joined per process, so that the rest of record
 * sees each such process as it saw a BASE.meta of its own.
 */
#include "record_light.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/spool.h"

int act__light_create(const char *dir)
{
    char p[4096];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, ACT__LIGHT_LOG) >= sizeof p) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

/* Whole file @p path (regular, not a link), or NULL. */
static char *slurp(const char *path, size_t *len)
{
    *len = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK); /* a FIFO: no wait */
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return NULL;
    }
    size_t cap = st.st_size > 0 ? (size_t)st.st_size : 1, n = 0;
    char *b = malloc(cap);
    while (b) {
        if (n == cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    *len = n;
    return b;
}

/* A frame's base: "<pid>-<ns>-<start>" as autostart.c names files (digits
 * and dashes, a pid first). */
static int base_ok(const char *b, size_t n)
{
    if (!n || n >= sizeof((act__light_ent *)0)->base || b[0] < '1' || b[0] > '9')
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((b[i] < '0' || b[i] > '9') && b[i] != '-')
            return 0;
    return 1;
}

typedef struct frame {
    const char *base, *recs;
    size_t base_len, len, order;
} frame;

static int frame_cmp(const void *a, const void *b)
{
    const frame *x = a, *y = b;
    size_t n = x->base_len < y->base_len ? x->base_len : y->base_len;
    int c = memcmp(x->base, y->base, n);
    if (c)
        return c;
    if (x->base_len != y->base_len)
        return x->base_len < y->base_len ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* 1 if DIR/BASE.EXT exists (or cannot be told apart from existing). */
static int beside(const char *dir, const char *base, const char *ext)
{
    char p[4096];
    struct stat st;
    if ((size_t)snprintf(p, sizeof p, "%s/%s%s", dir, base, ext) >= sizeof p)
        return 1;
    return lstat(p, &st) == 0 || errno != ENOENT;
}

void act__light_load(const char *dir, act__light_set *ls)
{
    memset(ls, 0, sizeof *ls);
    char p[4096];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, ACT__LIGHT_LOG) >= sizeof p)
        return;
    size_t len;
    char *buf = slurp(p, &len);
    if (!buf)
        return;
    frame *fv = NULL;
    size_t nf = 0, cap = 0, torn = 0;
    for (size_t pos = 0; pos + ACT__LIGHT_FRAME_HEAD <= len;) {
        uint32_t h[3];
        memcpy(h, buf + pos, sizeof h);
        if (h[0] != ACT__LIGHT_MAGIC || h[1] < ACT__LIGHT_FRAME_HEAD + h[2] || h[1] > len - pos ||
            !base_ok(buf + pos + ACT__LIGHT_FRAME_HEAD, h[2])) {
            /* A frame cut short (a full disk): what follows is the next
             * writer's, found by its magic. */
            torn++;
            pos++;
            while (pos + 4 <= len && memcmp(buf + pos, &(uint32_t){ACT__LIGHT_MAGIC}, 4) != 0)
                pos++;
            continue;
        }
        if (nf == cap) {
            size_t nc = cap ? cap * 2 : 256;
            frame *n2 = realloc(fv, nc * sizeof *n2);
            if (!n2)
                break;
            fv = n2;
            cap = nc;
        }
        const char *b = buf + pos + ACT__LIGHT_FRAME_HEAD;
        fv[nf] = (frame){b, b + h[2], h[2], h[1] - ACT__LIGHT_FRAME_HEAD - h[2], nf};
        nf++;
        pos += h[1];
    }
    if (torn)
        fprintf(stderr, "actrace record: %s: %zu damaged part(s) skipped (a full disk?)\n", p,
                torn);
    if (nf > 1)
        qsort(fv, nf, sizeof *fv, frame_cmp);
    for (size_t i = 0; i < nf;) {
        size_t j = i, total = 0;
        while (j < nf && fv[j].base_len == fv[i].base_len &&
               memcmp(fv[j].base, fv[i].base, fv[i].base_len) == 0) {
            total += fv[j].len;
            j++;
        }
        act__light_ent e;
        memset(&e, 0, sizeof e);
        memcpy(e.base, fv[i].base, fv[i].base_len);
        /* A process whose session started (BASE.meta), or that wrote its
         * trace: those files say all; the frames are a copy. */
        if (!beside(dir, e.base, ".meta") && !beside(dir, e.base, ".spool") &&
            !beside(dir, e.base, ".json") && (e.recs = malloc(total ? total : 1))) {
            for (size_t k = i; k < j; k++) {
                memcpy(e.recs + e.len, fv[k].recs, fv[k].len);
                e.len += fv[k].len;
            }
            act__light_ent *nv = realloc(ls->v, (ls->n + 1) * sizeof *nv);
            if (nv) {
                ls->v = nv;
                ls->v[ls->n++] = e;
            } else {
                free(e.recs);
            }
        }
        i = j;
    }
    free(fv);
    free(buf);
}

void act__light_free(act__light_set *ls)
{
    for (size_t i = 0; i < ls->n; i++)
        free(ls->v[i].recs);
    free(ls->v);
    memset(ls, 0, sizeof *ls);
}

size_t act__light_write_logs(const char *dir, act__light_set *ls)
{
    size_t n = 0;
    for (size_t i = 0; i < ls->n; i++) {
        act__light_ent *e = &ls->v[i];
        if (e->dropped)
            continue;
        char p[4096];
        if ((size_t)snprintf(p, sizeof p, "%s/%s.meta", dir, e->base) >= sizeof p)
            continue;
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            continue;
        size_t done = 0;
        while (done < e->len) {
            ssize_t w = write(fd, e->recs + done, e->len - done);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            done += (size_t)w;
        }
        close(fd);
        if (done == e->len)
            n++;
        else
            unlink(p);
    }
    return n;
}

int act__light_live(const act__light_set *ls)
{
    for (size_t i = 0; i < ls->n; i++) {
        long pid = strtol(ls->v[i].base, NULL, 10);
        if (pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM))
            return 1;
    }
    return 0;
}
