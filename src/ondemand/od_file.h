/* SPDX-License-Identifier: MIT */
/*
 * Where an on-demand trace goes, and how it is created (od_file.c).
 *
 * A request names its trace (ACTIVITIES_LOG_FILE) from another process, on
 * behalf of any local user who can reach the daemon: the file is made as
 * in a shared folder such as /tmp, never through a node someone else made.
 *
 *  - The allowed directory (KINETO_ONDEMAND_TRACE_DIR, else /tmp) is the
 *    process's own setting and is opened as given. A requested file must
 *    lie under it; each folder below it is opened with openat(O_NOFOLLOW |
 *    O_DIRECTORY) (no symbolic link is followed) and must belong to this
 *    user or root and be writable by nobody else unless sticky. Anything
 *    else is refused for the default name in the allowed directory.
 *  - The file is created unnamed (O_TMPFILE, mode 0666 so that the umask
 *    applies, owned by this process's user), written through its
 *    descriptor, and linked at its name only when complete: a process
 *    that dies meanwhile leaves nothing. Where O_TMPFILE is not supported
 *    a fresh random name is created with O_CREAT | O_EXCL | O_NOFOLLOW.
 *  - The link never replaces a node of someone else: the name is taken
 *    only when free, or when it holds a regular file of this user (a
 *    previous trace), replaced by rename; otherwise the trace gets an
 *    unguessable name beside it (NAME.<16 hex>.json), said in the log.
 */
#ifndef ACT_ONDEMAND_OD_FILE_H
#define ACT_ONDEMAND_OD_FILE_H

#include <limits.h>
#include <stddef.h>

typedef struct act__od_file {
    int dirfd;               /* the checked directory */
    int fd;                  /* the file being written */
    char name[NAME_MAX + 1]; /* its name in dirfd */
    char tmp[NAME_MAX + 1];  /* its temporary name; "" when unnamed */
    char dir[4096];          /* dirfd's path, for messages */
    char final[4096 + NAME_MAX + 2]; /* where it went (after commit) */
} act__od_file;

/**
 * Decide the name and create the file.
 * @param allowed   the allowed directory (NULL: KINETO_ONDEMAND_TRACE_DIR,
 *                  else /tmp)
 * @param log_file  the request's ACTIVITIES_LOG_FILE, or NULL
 * @param pid       inserted as Kineto does: FILE_<pid>.json
 * @param warn      receives why a requested name was refused ("" if not)
 * @return 0, or -errno with @p err filled.
 */
int act__od_file_open(act__od_file *f, const char *allowed, const char *log_file, int pid,
                      char *warn, size_t wcap, char *err, size_t ecap);

/** The path the trace is written through (/proc/self/fd/N). */
void act__od_file_target(const act__od_file *f, char *out, size_t cap);

/** Link the complete file at its name (see above); f->final says where.
 *  0, or -errno with @p err filled. Closes the file either way. */
int act__od_file_commit(act__od_file *f, char *err, size_t ecap);

/** Drop the file (nothing stays); closes everything. Idempotent. */
void act__od_file_abort(act__od_file *f);

#endif
