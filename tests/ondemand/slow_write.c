/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for the exit-during-write test: every write(2) of more
 * than 64 bytes to a regular file sleeps ACT_TEST_SLOW_WRITE_MS first, so
 * that the on-demand poller is still writing its trace when the program
 * ends (the writer reaches write through the PLT, so this one is found
 * first).
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

ssize_t write(int fd, const void *buf, size_t n)
{
    static ssize_t (*real)(int, const void *, size_t);
    if (!real)
        real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    const char *ms = getenv("ACT_TEST_SLOW_WRITE_MS");
    struct stat st;
    if (ms && n > 64 && fd > 2 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        long v = atol(ms);
        struct timespec ts = {v / 1000, (v % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
    return real(fd, buf, n);
}
