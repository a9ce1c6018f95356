/* SPDX-License-Identifier: MIT */
/*
 * `actrace record --per-process DIR` (or -o DIR/): the traces that the
 * recorded processes wrote into record's private directory are moved, not
 * merged, to DIR as rank-R_<pid>.pt.trace.json, one per process, which is
 * what HTA's multi-rank loader and TensorBoard's PyTorch profiler plugin
 * (torch-tb-profiler) read: one trace per rank in a directory. The plugin
 * loads only names ending in ".pt.trace.json" and takes what precedes it as
 * the worker (a ".<digits>" just before the suffix would be read as a span,
 * hence "_<pid>", as torch's tensorboard_trace_handler writes
 * "<host>_<pid>"); HTA takes the rank from distributedInfo, not the name. R is the file's distributedInfo.rank (the library writes it
 * in every trace: RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, else 0). Each
 * file is read once with the streaming reader for its rank, event count and
 * drops, then renamed into DIR (copied through the writer's sink, with its
 * temporary name and rename, when DIR is on another file system). A name
 * already there is not replaced without --force, and never by another
 * process of the same run: such a file gets "-2", "-3", ... before
 * ".pt.trace.json".
 *
 * A process that no launcher variable gave a rank (its trace says
 * "actraceRankDefault": the launcher itself, torchrun or a shell, and its
 * helpers) would claim rank 0 beside the real rank 0, and HTA would keep one
 * of the two. When some process of the run has a rank, those go to
 * DIR/other/<pid>.json instead, out of HTA's way (it reads DIR's files, not
 * its subdirectories, and torch-tb-profiler loads only *.pt.trace.json);
 * when none has, they are the ranks (rank-0_<pid>.pt.trace.json).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/reader.h"
#include "record_merge.h"
#include "writer/json_out.h"

/* Rank, events and drops of @p path. 0, or -1 with @p err set. */
static int peek(const char *path, int64_t *rank, int *rank_default, uint64_t *events,
                uint64_t *dropped, char *err, size_t errcap)
{
    int fd;
    act__rd *r;
    if (act__merge_open(path, &fd, &r, err, errcap) != 0)
        return -1;
    act__rd_item it;
    int k;
    while ((k = act__rd_next(r, &it)) > 0) {
        int64_t x;
        if (k == ACT__RD_EVENT)
            ++*events;
        else if (strcmp(it.key, "distributedInfo") == 0)
            act__jv_i64(act__jv_get(it.v, "rank"), rank);
        else if (strcmp(it.key, "actraceRankDefault") == 0)
            *rank_default = it.v->type == ACT__J_TRUE;
        else if (strcmp(it.key, "actraceStats") == 0 &&
                 act__jv_i64(act__jv_get(it.v, "dropped"), &x) && x > 0)
            *dropped += (uint64_t)x;
    }
    if (k < 0)
        snprintf(err, errcap, "%s: %s", path, act__rd_errmsg(r));
    act__rd_destroy(r);
    close(fd);
    return k < 0 ? -1 : 0;
}

/* @p src to @p dst across file systems, as the library writes a trace. */
static int copy_file(const char *src, const char *dst, char *err, size_t errcap)
{
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errcap, "%s: %s", src, strerror(errno));
        return -1;
    }
    act__out o;
    if (act__out_open_ex(&o, dst, ACT__OUT_NOGZIP, err, errcap) != 0) {
        close(fd);
        return -1;
    }
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        act__out_write(&o, buf, (size_t)n);
    int rerr = n < 0 ? errno : 0;
    close(fd);
    if (rerr) {
        act__out_abort(&o);
        snprintf(err, errcap, "%s: %s", src, strerror(rerr));
        return -1;
    }
    if (act__out_finish(&o) != 0) {
        snprintf(err, errcap, "%s", act__out_errmsg(&o));
        return -1;
    }
    unlink(src);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int act__record_split(const char *dir, const char *outdir, int force, act__merge_result *res,
                      char *err, size_t errcap)
{
    memset(res, 0, sizeof *res);
    err[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errcap, "%s: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0 || de->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn)
                break;
            names = nn;
        }
        if (!(names[n] = strdup(de->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_names);
    /* Names made by this run, so that two processes never share one. */
    char **made = calloc(n ? n : 1, sizeof *made);
    int64_t *ranks = calloc(n ? n : 1, sizeof *ranks);
    int *dflt = calloc(n ? n : 1, sizeof *dflt);
    uint64_t *events = calloc(n ? n : 1, sizeof *events), *dropped = calloc(n ? n : 1, sizeof *dropped);
    size_t nmade = 0;
    int rc = made && ranks && dflt && events && dropped ? 0 : -1, any_rank = 0;
    if (rc != 0)
        snprintf(err, errcap, "out of memory");
    for (size_t i = 0; i < n && rc == 0; i++) {
        char src[PATH_MAX], e[PATH_MAX + 256];
        snprintf(src, sizeof src, "%s/%s", dir, names[i]);
        if (peek(src, &ranks[i], &dflt[i], &events[i], &dropped[i], e, sizeof e) != 0)
            fprintf(stderr, "actrace record: %s (moved as it is)\n", e);
        any_rank |= !dflt[i];
    }
    char other[PATH_MAX];
    snprintf(other, sizeof other, "%s/other", outdir);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char src[PATH_MAX], dst[PATH_MAX * 2 + 64], e[PATH_MAX * 3];
        snprintf(src, sizeof src, "%s/%s", dir, names[i]);
        long long pid = strtoll(names[i], NULL, 10);
        int aside = dflt[i] && any_rank;
        if (aside && mkdir(other, 0777) != 0 && errno != EEXIST) {
            snprintf(err, errcap, "%s: %s", other, strerror(errno));
            rc = -1;
            break;
        }
        for (unsigned k = 1;; k++) {
            char sfx[16] = "";
            if (k > 1)
                snprintf(sfx, sizeof sfx, "-%u", k);
            if (aside)
                snprintf(dst, sizeof dst, "%s/%lld%s.json", other, pid, sfx);
            else
                snprintf(dst, sizeof dst, "%s/rank-%" PRId64 "_%lld%s.pt.trace.json", outdir, ranks[i],
                         pid, sfx);
            int ours = 0;
            for (size_t j = 0; j < nmade && !ours; j++)
                ours = strcmp(made[j], dst) == 0;
            struct stat st;
            if (!ours && (force || lstat(dst, &st) != 0))
                break;
        }
        if (rename(src, dst) != 0) {
            int er = errno;
            e[0] = '\0';
            if (er != EXDEV || copy_file(src, dst, e, sizeof e) != 0) {
                if (!e[0])
                    snprintf(e, sizeof e, "%s: %s", dst, strerror(er));
                snprintf(err, errcap, "%s", e);
                rc = -1;
                break;
            }
        }
        if ((made[nmade] = strdup(dst)))
            nmade++;
        res->files++;
        res->events += events[i];
        res->dropped += dropped[i];
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    for (size_t i = 0; i < nmade; i++)
        free(made[i]);
    free(names);
    free(made);
    free(ranks);
    free(dflt);
    free(events);
    free(dropped);
    return rc;
}
