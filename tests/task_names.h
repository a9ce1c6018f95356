/* SPDX-License-Identifier: MIT */
/*
 * Threads of the calling process counted by name (/proc/self/task/N/comm):
 * the library's helpers are told apart by name, since the sanitizers'
 * runtimes add threads of their own. Header-only, static.
 */
#ifndef ACT_TEST_TASK_NAMES_H
#define ACT_TEST_TASK_NAMES_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>

/* Threads whose name is @p name (@p prefix: starts with it); -1 if the
 * task list cannot be read. */
static inline int threads_named(const char *name, int prefix)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(comm, sizeof comm, f))
                comm[strcspn(comm, "\n")] = '\0';
            fclose(f);
        }
        n += (prefix ? strncmp(comm, name, strlen(name)) : strcmp(comm, name)) == 0;
    }
    closedir(d);
    return n;
}

#endif
