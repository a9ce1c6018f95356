/* SPDX-License-Identifier: MIT */
/*
 * Thread and process names (act_thread_name, act_process_name). They are
 * process-wide and outlive sessions, so a thread named once keeps its name
 * in every later trace. Names are keyed by the thread's tid and its
 * serial (act__thread_serial: unique per thread for the process's life),
 * so a thread that gets the tid of a dead one (tids are reused) does not
 * inherit its name. A plugin names a tid (name_thread: an OS thread it
 * saw, or a track of its own) with serial 0; an application's name for the
 * thread comes first. Threads never named get the kernel's name for them
 * (/proc/self/task/TID/comm, as set by pthread_setname_np) at write time.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/spool.h"

typedef struct tname {
    int32_t tid;
    int32_t by_plugin; /* named through the plugin host table (name_thread) */
    uint64_t serial;   /* act__thread_serial() of the named thread; 0 for a
                        * plugin's name (it names a tid, not a thread) */
    char *name;
} tname;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static tname *names;
static size_t nnames, capnames;
static char *process_name;

/* Names (@p tid, @p serial), latest wins. */
static int name_set(int32_t tid, uint64_t serial, const char *name, size_t len,
                    int by_plugin)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return ACT_ENOMEM;
    memcpy(copy, name, len);
    copy[len] = '\0';
    int rc = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nnames; i++) {
        if (names[i].tid == tid && names[i].serial == serial) {
            free(names[i].name);
            names[i].name = copy;
            names[i].by_plugin |= by_plugin;
            copy = NULL;
            break;
        }
    }
    if (copy) {
        if (nnames == capnames) {
            size_t ncap = capnames ? capnames * 2 : 16;
            tname *nn = realloc(names, ncap * sizeof *nn);
            if (!nn) {
                free(copy);
                rc = ACT_ENOMEM;
                goto out;
            }
            names = nn;
            capnames = ncap;
        }
        names[nnames].tid = tid;
        names[nnames].by_plugin = by_plugin;
        names[nnames].serial = serial;
        names[nnames].name = copy;
        nnames++;
    }
out:
    pthread_mutex_unlock(&lock);
    if (rc == 0 && act__spooling) {
        int64_t v[3] = {tid, (int64_t)serial, by_plugin};
        act__spool_log(ACT__SP_TNAME, v, 3, &name, &len, 1);
    }
    return rc;
}

int act__thread_name_set(int32_t tid, const char *name, size_t len,
                         int by_plugin)
{
    return name_set(tid, 0, name, len, by_plugin);
}

int act__thread_name_set_serial(int32_t tid, uint64_t serial, const char *name, size_t len,
                                int by_plugin)
{
    return name_set(tid, serial, name, len, by_plugin);
}

size_t act__thread_names_by_plugin(int32_t *out, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nnames; i++)
        if (names[i].by_plugin) {
            if (n < cap)
                out[n] = names[i].tid;
            n++;
        }
    pthread_mutex_unlock(&lock);
    return n;
}

void act_thread_name(const char *name)
{
    if (!name)
        return;
    int32_t tid = (int32_t)syscall(SYS_gettid);
    (void)name_set(tid, act__thread_serial(), name, strlen(name), 0);
}

void act_process_name(const char *name)
{
    if (!name)
        return;
    char *copy = strdup(name);
    if (!copy)
        return;
    pthread_mutex_lock(&lock);
    free(process_name);
    process_name = copy;
    pthread_mutex_unlock(&lock);
    if (act__spooling) {
        size_t n = strlen(name);
        act__spool_log(ACT__SP_PNAME, NULL, 0, &name, &n, 1);
    }
}

static const char *read_comm(const char *path, char *buf, size_t cap)
{
    /* open and read, not stdio: every process under record reads its
     * comm at exit, and fopen costs a buffer and a lock. */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t r;
    do
        r = read(fd, buf, cap - 1);
    while (r < 0 && errno == EINTR);
    close(fd);
    size_t n = r > 0 ? (size_t)r : 0;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\0'))
        n--;
    buf[n] = '\0';
    return n ? buf : NULL;
}

const char *act__thread_name_lookup(int32_t tid, uint64_t serial, char *buf, size_t cap)
{
    const char *exact = NULL, *plugin = NULL, *any = NULL;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nnames && !exact; i++) {
        if (names[i].tid != tid)
            continue;
        any = names[i].name; /* the latest given to this tid */
        if (names[i].serial == 0)
            plugin = names[i].name;
        else if (names[i].serial == serial)
            exact = names[i].name;
    }
    const char *pick = exact ? exact : serial == ACT__SERIAL_ANY ? any : plugin;
    const char *found = NULL;
    if (pick) {
        snprintf(buf, cap, "%s", pick);
        found = buf;
    }
    pthread_mutex_unlock(&lock);
    if (found)
        return found;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    return read_comm(path, buf, cap);
}

void act__names_reset(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nnames; i++)
        free(names[i].name);
    free(names);
    names = NULL;
    nnames = capnames = 0;
    free(process_name);
    process_name = NULL;
    pthread_mutex_unlock(&lock);
}

const char *act__process_name(char *buf, size_t cap)
{
    const char *found = NULL;
    pthread_mutex_lock(&lock);
    if (process_name) {
        snprintf(buf, cap, "%s", process_name);
        found = buf;
    }
    pthread_mutex_unlock(&lock);
    return found ? found : read_comm("/proc/self/comm", buf, cap);
}

const char *act__process_name_given(char *buf, size_t cap)
{
    const char *found = NULL;
    pthread_mutex_lock(&lock);
    if (process_name) {
        size_t n = strlen(process_name);
        if (n >= cap)
            n = cap - 1;
        memcpy(buf, process_name, n);
        buf[n] = '\0';
        found = buf;
    }
    pthread_mutex_unlock(&lock);
    return found;
}

/* Fork handlers (installed by session.c at load): see atfork_prepare. */
void act__names_atfork_prepare(void) { pthread_mutex_lock(&lock); }
void act__names_atfork_parent(void) { pthread_mutex_unlock(&lock); }
void act__names_atfork_child(void) { pthread_mutex_init(&lock, NULL); }
