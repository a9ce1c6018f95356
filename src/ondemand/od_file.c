/* SPDX-License-Identifier: MIT */
/*
 * An on-demand trace's file: checked directory, exclusive creation,
 * no-replace link (od_file.h has the rules).
 */
#include "ondemand/od_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif

static void rand_hex(char *out, size_t nhex)
{
    unsigned char r[32];
    size_t nb = (nhex + 1) / 2;
    if (nb > sizeof r)
        nb = sizeof r;
    if (getrandom(r, nb, GRND_NONBLOCK) != (ssize_t)nb) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
        for (size_t i = 0; i < nb; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            r[i] = (unsigned char)(x >> 56);
        }
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < nhex; i++)
        out[i] = hex[(r[i / 2] >> (i % 2 ? 0 : 4)) & 15];
    out[nhex] = '\0';
}

/* A folder below the allowed directory: this user's or root's, and
 * writable by no one else unless sticky (as /tmp). */
static int dir_ok(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    if (st.st_uid != 0 && st.st_uid != geteuid())
        return 0;
    return !(st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_mode & S_ISVTX);
}

/* FILE with "_<pid>" before ".pt.trace.json", else before the first
 * ".json" (Kineto's naming); a name with neither is kept. */
static int pid_name(const char *base, int pid, char *out, size_t cap)
{
    const char *at = strstr(base, ".pt.trace.json");
    if (!at)
        at = strstr(base, ".json");
    int n = at ? snprintf(out, cap, "%.*s_%d%s", (int)(at - base), base, pid, at)
               : snprintf(out, cap, "%s", base);
    return n > 0 && (size_t)n < cap && n <= NAME_MAX ? 0 : -ENAMETOOLONG;
}

/* Open the folders of @p rel (a path relative to f->dirfd; its last
 * component is the file) one by one, never through a link; leaves
 * f->dirfd on the file's folder and its name in f->name. */
static int walk(act__od_file *f, const char *rel, int pid, char *why, size_t wcap)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", rel) >= (int)sizeof buf) {
        snprintf(why, wcap, "the name is too long");
        return -1;
    }
    char *save = NULL, *comp = strtok_r(buf, "/", &save);
    char shown[sizeof f->dir];
    snprintf(shown, sizeof shown, "%s", f->dir);
    while (comp) {
        char *next = strtok_r(NULL, "/", &save);
        if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) {
            snprintf(why, wcap, "it has a \".\" or \"..\" component");
            return -1;
        }
        if (!next) {
            if (pid_name(comp, pid, f->name, sizeof f->name) != 0) {
                snprintf(why, wcap, "the name is too long");
                return -1;
            }
            snprintf(f->dir, sizeof f->dir, "%s", shown);
            return 0;
        }
        int d = openat(f->dirfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d < 0) {
            snprintf(why, wcap, "cannot open its folder %s/%s without following a link: %s",
                     shown, comp, strerror(errno));
            return -1;
        }
        size_t sl = strlen(shown);
        snprintf(shown + sl, sizeof shown - sl, "/%s", comp);
        if (!dir_ok(d)) {
            snprintf(why, wcap, "its folder %s belongs to another user or others may write it",
                     shown);
            close(d);
            return -1;
        }
        close(f->dirfd);
        f->dirfd = d;
        comp = next;
    }
    snprintf(why, wcap, "it names no file");
    return -1;
}

static int create(act__od_file *f, char *err, size_t ecap)
{
    int fd;
    do
        fd = openat(f->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    while (fd < 0 && errno == EINTR);
    if (fd >= 0) {
        f->fd = fd;
        f->tmp[0] = '\0';
        return 0;
    }
    int e = errno;
    if (e != EOPNOTSUPP && e != EISDIR && e != EINVAL && e != ENOENT) {
        snprintf(err, ecap, "cannot create a file in %s: %s", f->dir, strerror(e));
        return -e;
    }
    /* No O_TMPFILE here: a fresh name of our own. */
    for (int i = 0; i < 100; i++) {
        char r[17];
        rand_hex(r, 16);
        snprintf(f->tmp, sizeof f->tmp, ".actrace-ondemand.%s.tmp", r);
        do
            fd = openat(f->dirfd, f->tmp,
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        while (fd < 0 && errno == EINTR);
        if (fd >= 0) {
            f->fd = fd;
            return 0;
        }
        if (errno != EEXIST)
            break;
    }
    e = errno;
    f->tmp[0] = '\0';
    snprintf(err, ecap, "cannot create a file in %s: %s", f->dir, strerror(e));
    return -e;
}

int act__od_file_open(act__od_file *f, const char *allowed, const char *log_file, int pid,
                      char *warn, size_t wcap, char *err, size_t ecap)
{
    memset(f, 0, sizeof *f);
    f->dirfd = f->fd = -1;
    warn[0] = err[0] = '\0';
    if (!allowed) {
        allowed = secure_getenv("KINETO_ONDEMAND_TRACE_DIR");
        if (!allowed || !*allowed)
            allowed = "/tmp";
    }
    /* The allowed directory without trailing slashes ("/" stays "/"). */
    size_t an = strlen(allowed);
    while (an > 1 && allowed[an - 1] == '/')
        an--;
    if (an >= sizeof f->dir) {
        snprintf(err, ecap, "KINETO_ONDEMAND_TRACE_DIR is too long");
        return -ENAMETOOLONG;
    }
    memcpy(f->dir, allowed, an);
    f->dir[an] = '\0';
    char root[sizeof f->dir];
    memcpy(root, f->dir, an + 1);
    int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        int e = errno;
        snprintf(err, ecap, "cannot open the trace directory %s: %s", root, strerror(e));
        return -e;
    }
    f->dirfd = rootfd;
    int done = 0;
    if (log_file && *log_file) {
        const char *rel = NULL;
        size_t rn = strcmp(root, "/") == 0 ? 0 : an;
        if (strncmp(log_file, root, rn) == 0 && log_file[rn] == '/')
            rel = log_file + rn + 1;
        if (!rel) {
            snprintf(warn, wcap, "ACTIVITIES_LOG_FILE %s is outside %s", log_file, root);
        } else {
            char why[512];
            f->dirfd = dup(rootfd);
            if (f->dirfd >= 0 && walk(f, rel, pid, why, sizeof why) == 0) {
                done = 1;
            } else {
                snprintf(warn, wcap, "ACTIVITIES_LOG_FILE %s: %s", log_file,
                         f->dirfd < 0 ? strerror(errno) : why);
                if (f->dirfd >= 0)
                    close(f->dirfd);
                memcpy(f->dir, root, an + 1);
            }
            if (done)
                close(rootfd);
            else
                f->dirfd = rootfd;
        }
    }
    if (!done)
        snprintf(f->name, sizeof f->name, "libkineto_activities_%d.json", pid);
    int rc = create(f, err, ecap);
    if (rc != 0) {
        close(f->dirfd);
        f->dirfd = -1;
    }
    return rc;
}

void act__od_file_target(const act__od_file *f, char *out, size_t cap)
{
    snprintf(out, cap, "/proc/self/fd/%d", f->fd);
}

/* Link the file at @p name in dirfd: 0, or -errno (-EEXIST: taken). */
static int link_at(act__od_file *f, const char *name)
{
    int rc;
    if (f->tmp[0]) {
        rc = linkat(f->dirfd, f->tmp, f->dirfd, name, 0);
    } else {
        char p[64];
        snprintf(p, sizeof p, "/proc/self/fd/%d", f->fd);
        rc = linkat(AT_FDCWD, p, f->dirfd, name, AT_SYMLINK_FOLLOW);
        if (rc != 0 && errno == ENOENT) /* no /proc: needs CAP_DAC_READ_SEARCH */
            rc = linkat(f->fd, "", f->dirfd, name, AT_EMPTY_PATH);
    }
    return rc == 0 ? 0 : -errno;
}

/* NAME.<16 hex>.json (or NAME.<16 hex> for a name without ".json"). */
static void other_name(const char *name, const char *tag, char *out, size_t cap)
{
    const char *at = strstr(name, ".pt.trace.json");
    if (!at)
        at = strstr(name, ".json");
    char r[17];
    rand_hex(r, 16);
    size_t stem = at ? (size_t)(at - name) : strlen(name);
    if (stem > NAME_MAX - 40)
        stem = NAME_MAX - 40;
    snprintf(out, cap, "%s%.*s.%s%s", tag, (int)stem, name, r, at ? at : "");
}

int act__od_file_commit(act__od_file *f, char *err, size_t ecap)
{
    err[0] = '\0';
    int rc = fsync(f->fd) == 0 || errno == EINVAL || errno == EROFS ? 0 : -errno;
    if (rc != 0) {
        snprintf(err, ecap, "cannot write %s/%s: %s", f->dir, f->name, strerror(-rc));
        act__od_file_abort(f);
        return rc;
    }
    const char *used = f->name;
    char alt[NAME_MAX + 1];
    rc = link_at(f, f->name);
    if (rc == -EEXIST) {
        struct stat st;
        if (fstatat(f->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == geteuid()) {
            /* Our own earlier trace: replaced by rename, never written
             * through. */
            for (int i = 0; i < 20 && rc == -EEXIST; i++) {
                other_name(f->name, ".", alt, sizeof alt);
                rc = link_at(f, alt);
            }
            if (rc == 0 && renameat(f->dirfd, alt, f->dirfd, f->name) != 0) {
                rc = -errno;
                unlinkat(f->dirfd, alt, 0);
            }
        } else {
            /* Someone else's node: a name no one could guess. */
            for (int i = 0; i < 20 && rc == -EEXIST; i++) {
                other_name(f->name, "", alt, sizeof alt);
                rc = link_at(f, alt);
            }
            used = alt;
            if (rc == 0)
                snprintf(err, ecap, "%s/%s exists and is not this user's file: the trace "
                         "went to %s/%s instead", f->dir, f->name, f->dir, alt);
        }
    }
    if (rc != 0)
        snprintf(err, ecap, "cannot link the trace at %s/%s: %s", f->dir, used, strerror(-rc));
    else
        snprintf(f->final, sizeof f->final, "%s/%s", f->dir, used);
    act__od_file_abort(f);
    return rc;
}

void act__od_file_abort(act__od_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->tmp[0] && f->dirfd >= 0)
        unlinkat(f->dirfd, f->tmp, 0);
    f->tmp[0] = '\0';
    if (f->dirfd >= 0)
        close(f->dirfd);
    f->dirfd = -1;
}
