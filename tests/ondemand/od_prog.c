/* SPDX-License-Identifier: MIT */
/*
 * A program that does not know it may be traced: linked with libactrace,
 * it runs steps and never starts a session; test_ondemand.py plays the
 * daemon and asks it for traces.
 *
 *   od_prog steps N MS   N steps of MS ms: a span "ProfilerStep#i", then
 *                        act_step(); prints "pid P" first
 *   od_prog fork N MS    the same in a forked child too (both print)
 *   od_prog own N MS FILE [NAME]  the same inside a session of its own
 *                        (trace name NAME: "torch.profiler" is how
 *                        torch_kineto.cpp names its sessions), written
 *                        to FILE
 *   od_prog forkexec N MS CHILD_MS  N steps; in each a child is forked
 *                        that lives CHILD_MS ms, then execs /bin/true
 *   od_prog kineto N MS LIB  N steps; LIB is dlopen'd (RTLD_LOCAL) after
 *                        half of them, and "loaded" printed
 *   od_prog idle MS      prints "pid P", then sleeps MS ms: no act_step
 *   od_prog probe MS     after MS ms, prints "threads T sockets S poller P":
 *                        its thread count (/proc/self/task), its sockets
 *                        (/proc/self/fd) and whether a thread is named
 *                        actrace-dyno, for "nothing polls without the
 *                        variable"
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actrace/actrace.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static void steps(int n, int ms)
{
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "ProfilerStep#%d", i);
        act_span_begin(ACT_USER_ANNOTATION, name);
        sleep_ms(ms);
        act_span_end();
        act_step();
    }
}

/* 1 if a thread of the process is named @p comm. */
static int has_thread(const char *comm)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        char path[300], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
        if (f) {
            if (fgets(name, sizeof name, f))
                name[strcspn(name, "\n")] = '\0';
            fclose(f);
            found = strcmp(name, comm) == 0;
        }
    }
    closedir(d);
    return found;
}

static int count_dir(const char *dir, int sockets)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (!sockets) {
            n++;
            continue;
        }
        char path[512], target[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t k = readlink(path, target, sizeof target - 1);
        if (k > 0) {
            target[k] = '\0';
            n += strncmp(target, "socket:", 7) == 0;
        }
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "probe") == 0) {
        sleep_ms(atoi(argv[2]));
        printf("threads %d sockets %d poller %d\n", count_dir("/proc/self/task", 0),
               count_dir("/proc/self/fd", 1), has_thread("actrace-dyno"));
        return 0;
    }
    if (argc == 4 && (strcmp(argv[1], "steps") == 0 || strcmp(argv[1], "fork") == 0)) {
        if (strcmp(argv[1], "fork") == 0) {
            pid_t c = fork();
            if (c == 0) {
                steps(atoi(argv[2]), atoi(argv[3]));
                _exit(0);
            }
            steps(atoi(argv[2]), atoi(argv[3]));
            int st;
            waitpid(c, &st, 0);
            return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
        }
        steps(atoi(argv[2]), atoi(argv[3]));
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "forkexec") == 0) {
        printf("pid %d\n", (int)getpid());
        fflush(stdout);
        for (int i = 0; i < atoi(argv[2]); i++) {
            pid_t c = fork();
            if (c == 0) {
                sleep_ms(atoi(argv[4]));
                execl("/bin/true", "true", (char *)NULL);
                _exit(127);
            }
            sleep_ms(atoi(argv[3]));
            act_step();
            int st;
            waitpid(c, &st, 0);
        }
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "kineto") == 0) {
        printf("pid %d\n", (int)getpid());
        fflush(stdout);
        for (int i = 0; i < atoi(argv[2]); i++) {
            sleep_ms(atoi(argv[3]));
            act_step();
            if (i == atoi(argv[2]) / 2) {
                if (!dlopen(argv[4], RTLD_NOW | RTLD_LOCAL)) {
                    fprintf(stderr, "od_prog: %s\n", dlerror());
                    return 1;
                }
                printf("loaded\n");
                fflush(stdout);
            }
        }
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "idle") == 0) {
        printf("pid %d\n", (int)getpid());
        fflush(stdout);
        sleep_ms(atoi(argv[2]));
        return 0;
    }
    if ((argc == 5 || argc == 6) && strcmp(argv[1], "own") == 0) {
        act_session *s = NULL;
        act_session_opts o;
        act_session_opts_init(&o);
        o.trace_name = argc == 6 ? argv[5] : NULL;
        if (act_session_create(&o, &s) != 0 || act_session_start(s) != 0)
            return 1;
        steps(atoi(argv[2]), atoi(argv[3]));
        int rc = act_session_write(s, argv[4]);
        act_session_destroy(s);
        return rc == 0 ? 0 : 1;
    }
    fprintf(stderr, "usage: od_prog steps|fork N MS | own N MS FILE [NAME] | forkexec N MS CHILD_MS | "
                    "kineto N MS LIB | idle MS | probe MS\n");
    return 2;
}
