/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the tests that run `actrace record` on test programs
 * (RecordMulti, RecordDie). Header-only, static.
 */
#ifndef ACT_TEST_RECORD_UTIL_H
#define ACT_TEST_RECORD_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run @p cmd with the shell: its exit status, or -1 if it did not exit. */
static inline int ru_run(const char *cmd)
{
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

/* ru_run, in a child of its own that reports, through a pipe, the
 * largest peak resident memory (kB) of every process the command ran:
 * the shell, actrace, the program over its whole life (its exit's trace
 * write included) and record's own children. -1 in *@p kb if unknown. */
static inline int ru_run_maxrss(const char *cmd, long *kb)
{
    int fd[2];
    *kb = -1;
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        int rc = ru_run(cmd);
        struct rusage ru;
        long v = getrusage(RUSAGE_CHILDREN, &ru) == 0 ? ru.ru_maxrss : -1;
        ssize_t w = write(fd[1], &v, sizeof v);
        (void)w;
        _exit(rc < 0 ? 255 : rc);
    }
    close(fd[1]);
    long v = -1;
    if (read(fd[0], &v, sizeof v) == (ssize_t)sizeof v)
        *kb = v;
    close(fd[0]);
    int st;
    pid_t got;
    while ((got = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
        ;
    if (got != pid || !WIFEXITED(st) || WEXITSTATUS(st) == 255)
        return -1;
    return WEXITSTATUS(st);
}

/* Entries of @p dir whose name contains @p part (and @p also, if not NULL). */
static inline int ru_count_entries(const char *dir, const char *part, const char *also)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strstr(de->d_name, part) && (!also || strstr(de->d_name, also)))
            n++;
    closedir(d);
    return n;
}

/* DIR/NAME in one of 8 rotating buffers (so a call may use a few at once). */
static inline const char *ru_path(const char *dir, const char *name)
{
    static char buf[8][700];
    static int k;
    k = (k + 1) & 7;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static const char *ru_watch_msg;

static void ru_on_alarm(int sig)
{
    (void)sig;
    ssize_t w = write(2, ru_watch_msg, strlen(ru_watch_msg));
    (void)w;
    _exit(1);
}

/* A test that hangs (a recorded program that never ends) says @p msg and
 * exits 1 after @p secs seconds (0: the caller calls alarm itself). */
static inline void ru_watchdog(const char *msg, unsigned secs)
{
    ru_watch_msg = msg;
    signal(SIGALRM, ru_on_alarm);
    if (secs)
        alarm(secs);
}

#endif
