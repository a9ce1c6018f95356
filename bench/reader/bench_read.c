/* SPDX-License-Identifier: MIT */
/*
 * act_bench_reader ACTRACE GEN FILE [MB]: how fast traces are read.
 * Generates FILE (MB megabytes, default 256, Kineto-layout GPU events with
 * two args each, by GEN = gen_trace) unless it exists (and then removes it
 * at the end), then measures on
 * that plain file, page cache warm, best of three runs each:
 *   - a memchr pass over the file (the memory/page-cache bound);
 *   - the reader alone (src/reader: every event parsed into its tree);
 *   - `actrace check --quiet FILE` and `actrace summary FILE`, wall time
 *     of the process (read_mb_s) and its peak RSS;
 *   - Python's json.load on the same file when python3 is on PATH.
 * Prints one line each, then one JSON object with the same numbers.
 * Part of `make bench` (target run_bench_reader).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "reader/reader.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU seconds (user + system) of the last run(): robust when other
 * processes compete for the cores, as on shared CI machines. */
static double last_cpu;

/* Run argv with stdout to /dev/null; seconds (or -1), peak RSS in KiB. */
static double run(char *const argv[], long *rss)
{
    double t0 = now();
    pid_t p = fork();
    if (p == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (p < 0 || wait4(p, &st, 0, &ru) != p)
        return -1;
    double t = now() - t0;
    *rss = ru.ru_maxrss;
    last_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    return WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 1) ? t : -1;
}

static double best_run(char *const argv[], long *rss, double *cpu)
{
    double best = -1;
    *cpu = -1;
    for (int i = 0; i < 3; i++) {
        double t = run(argv, rss);
        if (t < 0)
            return -1;
        if (best < 0 || t < best)
            best = t;
        if (*cpu < 0 || last_cpu < *cpu)
            *cpu = last_cpu;
    }
    return best;
}

static double memchr_pass(const char *path)
{
    static char buf[1 << 20];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    double t0 = now();
    ssize_t n;
    long q = 0;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (const char *p = buf, *e = buf + n; (p = memchr(p, '"', (size_t)(e - p)));)
            p++, q++;
    close(fd);
    return q ? now() - t0 : -1;
}

static double reader_pass(const char *path, unsigned long long *events)
{
    int fd = open(path, O_RDONLY);
    act__rd *r;
    if (fd < 0 || act__rd_create(fd, NULL, &r) != 0)
        return -1;
    double t0 = now();
    act__rd_item it;
    int k;
    while ((k = act__rd_next(r, &it)) > 0)
        ;
    double t = now() - t0;
    *events = act__rd_events(r);
    if (k < 0)
        fprintf(stderr, "bench: %s\n", act__rd_errmsg(r));
    act__rd_destroy(r);
    close(fd);
    return k < 0 ? -1 : t;
}

static int on_path(const char *prog)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path && *path) {
        const char *c = strchr(path, ':');
        size_t n = c ? (size_t)(c - path) : strlen(path);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, prog);
        if (access(buf, X_OK) == 0)
            return 1;
        path = c ? c + 1 : NULL;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: act_bench_reader ACTRACE GEN FILE [MB]\n");
        return 2;
    }
    char *actrace = argv[1], *gen = argv[2], *file = argv[3];
    const char *mb = argc > 4 ? argv[4] : "256";
    struct stat st;
    int generated = 0;
    if (stat(file, &st) != 0) {
        generated = 1;
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "'%s' -m %s > '%s'", gen, mb, file);
        if (system(cmd) != 0 || stat(file, &st) != 0) {
            fprintf(stderr, "bench: cannot generate %s\n", file);
            return 1;
        }
    }
    double size_mb = (double)st.st_size / 1e6;
    memchr_pass(file); /* page cache warm */
    double tm = -1;
    for (int i = 0; i < 3; i++) {
        double t = memchr_pass(file);
        if (t > 0 && (tm < 0 || t < tm))
            tm = t;
    }
    unsigned long long events = 0;
    double tr = -1;
    for (int i = 0; i < 3; i++) {
        double t = reader_pass(file, &events);
        if (t > 0 && (tr < 0 || t < tr))
            tr = t;
    }
    long rss_c = 0, rss_s = 0, rss_p = 0;
    char *check[] = {actrace, "check", "--quiet", file, NULL};
    char *summary[] = {actrace, "summary", file, NULL};
    double cc, cs, cp = -1;
    double tc = best_run(check, &rss_c, &cc), ts = best_run(summary, &rss_s, &cs);
    /* convert to .pftrace (beside the trace, removed after). */
    char pfpath[4096];
    snprintf(pfpath, sizeof pfpath, "%s.pftrace", file);
    char *convert[] = {actrace, "convert", file, pfpath, NULL};
    long rss_v = 0;
    double cv;
    double tv = best_run(convert, &rss_v, &cv);
    struct stat pst;
    double pf_mb = stat(pfpath, &pst) == 0 ? (double)pst.st_size / 1e6 : 0;
    unlink(pfpath);
    double tp = -1;
    if (on_path("python3")) {
        char *py[] = {"python3", "-c",
                      "import json,sys\nwith open(sys.argv[1],'rb') as f: json.load(f)",
                      file, NULL};
        tp = run(py, &rss_p); /* once: it is the slow one */
        cp = last_cpu;
    }
#define RATE(t) ((t) > 0 ? size_mb / (t) : 0.0)
    printf("trace                   %8.1f MB, %llu events (%s)\n", size_mb, events, file);
    printf("memchr pass             %8.0f MB/s\n", RATE(tm));
    printf("reader alone            %8.0f MB/s\n", RATE(tr));
    printf("actrace check           %8.0f MB/s (%.0f MB/s of CPU time), peak RSS %ld KiB\n",
           RATE(tc), RATE(cc), rss_c);
    printf("actrace summary         %8.0f MB/s (%.0f MB/s of CPU time), peak RSS %ld KiB\n",
           RATE(ts), RATE(cs), rss_s);
    printf("actrace convert         %8.0f MB/s (%.0f MB/s of CPU time), peak RSS %ld KiB, "
           ".pftrace %.1f MB (%.1fx smaller)\n",
           RATE(tv), RATE(cv), rss_v, pf_mb, pf_mb > 0 ? size_mb / pf_mb : 0.0);
    if (tp > 0)
        printf("python3 json.load       %8.0f MB/s (%.0f MB/s of CPU time), peak RSS %ld KiB\n"
               "  ratios: summary %.1fx, check %.1fx (wall); %.1fx, %.1fx (CPU)\n",
               RATE(tp), RATE(cp), rss_p, tp / ts, tp / tc, cp / cs, cp / cc);
    else
        printf("python3 json.load       (python3 not found)\n");
    printf("{\"trace_mb\":%.1f,\"events\":%llu,\"memchr_mb_s\":%.1f,\"reader_mb_s\":%.1f,"
           "\"check_read_mb_s\":%.1f,\"check_cpu_mb_s\":%.1f,\"check_peak_rss_kib\":%ld,"
           "\"summary_read_mb_s\":%.1f,\"summary_cpu_mb_s\":%.1f,\"summary_peak_rss_kib\":%ld,"
           "\"convert_mb_s\":%.1f,\"convert_cpu_mb_s\":%.1f,\"convert_peak_rss_kib\":%ld,"
           "\"convert_pftrace_mb\":%.1f,"
           "\"python_json_load_mb_s\":%.1f,\"python_cpu_mb_s\":%.1f,\"python_peak_rss_kib\":%ld}\n",
           size_mb, events, RATE(tm), RATE(tr), RATE(tc), RATE(cc), rss_c, RATE(ts),
           RATE(cs), rss_s, RATE(tv), RATE(cv), rss_v, pf_mb, RATE(tp), RATE(cp), rss_p);
    if (generated)
        unlink(file); /* disk is precious: regenerated in half a second */
    return tc > 0 && ts > 0 ? 0 : 1;
}
