/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the tests that run `actrace record` on test programs
 * (RecordMulti, RecordDie). Header-only, static.
 */
#ifndef ACT_TEST_RECORD_UTIL_H
#define ACT_TEST_RECORD_UTIL_H

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Run @p cmd with the shell: its exit status, or -1 if it did not exit. */
static inline int ru_run(const char *cmd)
{
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
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

#endif
