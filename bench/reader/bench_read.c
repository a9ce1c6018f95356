/* SPDX-License-Identifier: MIT */
/*
 * bench_read FILE: the reader alone over FILE (every event parsed into its
 * tree, nothing else), as machine-readable "read_mb_s=..." lines. Part of
 * `make bench` (bench/reader/run.sh).
 */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "reader/reader.h"

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0)
        return 2;
    act__rd *r;
    if (act__rd_create(fd, NULL, &r))
        return 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    act__rd_item it;
    int k;
    unsigned long long nodes = 0;
    while ((k = act__rd_next(r, &it)) > 0)
        nodes += it.v->len;
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (k < 0) {
        fprintf(stderr, "%s\n", act__rd_errmsg(r));
        return 1;
    }
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    double mb = (double)act__rd_offset(r) / 1e6;
    printf("reader_only_mb_s=%.0f events=%llu members=%llu\n", mb / s,
           (unsigned long long)act__rd_events(r), nodes);
    act__rd_destroy(r);
    close(fd);
    return 0;
}
