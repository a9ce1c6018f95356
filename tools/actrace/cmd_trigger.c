/* SPDX-License-Identifier: MIT */
/*
 * actrace trigger: ask running processes for a trace, as `dyno gputrace`
 * does (docs/on-demand.md). Two hops exist between a user and a traced
 * process, and trigger speaks either:
 *
 *  - to the dynolog daemon (default), as dyno does: a TCP connection to
 *    --host:--port (localhost:1778), one message of an int32 length
 *    (native byte order) and JSON {"fn": "setKinetOnDemandRequest",
 *    "config": TEXT, "job_id": J, "pids": [...], "process_limit": N}, and
 *    the daemon's JSON answer (processesMatched, activityProfilersTriggered,
 *    activityProfilersBusy), printed;
 *  - to the processes themselves with --serve, in the daemon's place where
 *    no dynolog runs: it binds the daemon's endpoint on the IPC fabric
 *    (dyno_ipc.h), answers every poll, hands the config to the next poll of
 *    each matching process, and reports a process that polls while its own
 *    trace runs (config type 0) as busy: such a request is not queued. A
 *    poll counts only when the kernel's credentials on its datagram name
 *    the pid it claims first, and a user whose processes obey this one
 *    (the same user, or trigger runs as root): any local user can send
 *    polls to the daemon's name.
 */
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ondemand/dyno_ipc.h"

#define MAX_PIDS 64

/* The actrace command itself never polls a daemon, even with
 * ACTRACE_USE_DAEMON set: libactrace's on-demand looks this symbol up
 * (exported: tools/actrace/CMakeLists.txt) before it starts its poller. */
__attribute__((visibility("default"))) const int actrace_cli_never_polls = 1;

typedef struct trig {
    long long duration_ms, iterations, roundup, start_time, job, limit, timeout_ms, count;
    const char *log_file, *trace_id, *host, *port;
    int32_t pids[MAX_PIDS];
    int npids;
    int serve;
} trig;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: actrace trigger [--serve] [--pid PID]... [--job-id ID]\n"
            "                       [--duration-ms MS [--start-time UNIX_MS] | --iterations N [--roundup R]]\n"
            "                       [--log-file FILE] [--trace-id ID]\n"
            "                       [--host HOST] [--port PORT] [--process-limit N]\n"
            "                       [--timeout-ms MS] [--count N]\n"
            "\n"
            "Ask running processes (dynolog clients: Kineto, or libactrace with\n"
            "ACTRACE_USE_DAEMON=1) for a trace, as `dyno gputrace` does.\n"
            "\n"
            "  (default)        send the request to the dynolog daemon at HOST:PORT\n"
            "                   (localhost:1778) and print its answer\n"
            "  --serve          no daemon: answer the processes' polls in its place on the\n"
            "                   local IPC fabric, until every --pid (or --count processes,\n"
            "                   default 1) got the request or was busy, or --timeout-ms\n"
            "                   (default 30000) passed\n"
            "  --pid PID        a process to trace, or an ancestor of it (repeatable;\n"
            "                   none: every process of the job)\n"
            "  --job-id ID      the job (SLURM_JOB_ID of the processes; default 0)\n"
            "  --duration-ms MS a window of MS milliseconds (default 500)\n"
            "  --iterations N   a window of N act_step() iterations, starting at the\n"
            "                   next multiple of --roundup R (default 1)\n"
            "  --log-file FILE  the trace, FILE with _<pid> inserted (default\n"
            "                   /tmp/actrace_trigger.json; must be under /tmp or\n"
            "                   KINETO_ONDEMAND_TRACE_DIR)\n"
            "  --trace-id ID    written as the traces' trace_id (ACTRACE_TRACE_ID, which\n"
            "                   dynolog keeps, and REQUEST_TRACE_ID for Kineto clients,\n"
            "                   which dynolog replaces with its own id)\n"
            "\n"
            "Exit status: 0 all triggered, 1 a process was busy, none matched or the\n"
            "daemon failed, 2 usage.\n");
}

static int num(const char *opt, const char *s, long long lo, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < lo) {
        fprintf(stderr, "actrace trigger: %s: '%s' is not an integer >= %lld\n", opt, s, lo);
        return -1;
    }
    *out = v;
    return 0;
}

/* The Kineto config of the request, as dyno writes it. */
static char *request_config(const trig *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fprintf(f, "ACTIVITIES_LOG_FILE=%s\n", t->log_file);
    if (t->iterations > 0)
        fprintf(f, "PROFILE_START_ITERATION=0\nPROFILE_START_ITERATION_ROUNDUP=%lld\n"
                   "ACTIVITIES_ITERATIONS=%lld\n", t->roundup, t->iterations);
    else {
        if (t->start_time > 0)
            fprintf(f, "PROFILE_START_TIME=%lld\n", t->start_time);
        fprintf(f, "ACTIVITIES_DURATION_MSECS=%lld\n", t->duration_ms);
    }
    if (t->trace_id)
        fprintf(f, "ACTRACE_TRACE_ID=%s\nREQUEST_TRACE_ID=%s\n", t->trace_id, t->trace_id);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- to dynolog, over TCP ------------------------------------------------ */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static int io_all(int fd, void *buf, size_t n, int rd)
{
    unsigned char *p = buf;
    while (n) {
        ssize_t k = rd ? read(fd, p, n) : write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* 1 if the daemon's JSON answer @p resp has "KEY": [ with an element (dynolog
 * answers with flat arrays of pids; a key absent counts as empty). */
static int json_list_nonempty(const char *resp, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(resp, pat);
    if (!p)
        return 0;
    p += strlen(pat);
    p += strspn(p, " \t\r\n");
    if (*p++ != ':')
        return 0;
    p += strspn(p, " \t\r\n");
    if (*p++ != '[')
        return 0;
    p += strspn(p, " \t\r\n");
    return *p != ']' && *p != '\0';
}

static int to_daemon(const trig *t, const char *config)
{
    char *msg = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&msg, &len);
    if (!f)
        return 1;
    fputs("{\"fn\": \"setKinetOnDemandRequest\", \"config\": ", f);
    json_str(f, config);
    fprintf(f, ", \"job_id\": %lld, \"pids\": [", t->job);
    for (int i = 0; i < t->npids; i++)
        fprintf(f, "%s%d", i ? ", " : "", (int)t->pids[i]);
    fprintf(f, "], \"process_limit\": %lld}", t->limit);
    fclose(f);

    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(t->host, t->port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "actrace trigger: %s:%s: %s\n", t->host, t->port, gai_strerror(rc));
        free(msg);
        return 1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "actrace trigger: cannot reach the dynolog daemon at %s:%s: %s "
                "(no daemon? --serve answers the processes without one)\n",
                t->host, t->port, strerror(err));
        free(msg);
        return 1;
    }
    int32_t n32 = (int32_t)len;
    int ok = io_all(fd, &n32, 4, 0) == 0 && io_all(fd, msg, len, 0) == 0;
    free(msg);
    char *resp = NULL;
    if (ok && io_all(fd, &n32, 4, 1) == 0 && n32 >= 0 && n32 <= (1 << 24) &&
        (resp = malloc((size_t)n32 + 1)) && io_all(fd, resp, (size_t)n32, 1) == 0) {
        resp[n32] = '\0';
        printf("%s\n", resp);
    } else {
        fprintf(stderr, "actrace trigger: the daemon at %s:%s did not answer\n", t->host, t->port);
        ok = 0;
    }
    close(fd);
    int matched = ok && resp && json_list_nonempty(resp, "processesMatched");
    int triggered = matched && json_list_nonempty(resp, "activityProfilersTriggered");
    long busy = 0;
    const char *b = resp ? strstr(resp, "\"activityProfilersBusy\"") : NULL;
    if (b && (b = strchr(b, ':')))
        busy = strtol(b + 1, NULL, 10);
    free(resp);
    if (ok && !matched)
        fprintf(stderr, "actrace trigger: no process matched (check --job-id and --pid)\n");
    else if (matched && busy > 0)
        fprintf(stderr, "actrace trigger: %ld matching process(es) busy (a request pending, or "
                "its trace running): not triggered, and dynolog does not queue the request\n",
                busy);
    else if (matched && !triggered)
        fprintf(stderr, "actrace trigger: no process triggered\n");
    return triggered && busy == 0 ? 0 : 1;
}

/* ---- in the daemon's place, on the IPC fabric ---------------------------- */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct seen {
    int32_t pid;
    int busy;
} seen;

/* In the directory mode, binding removes a file of that name first (as
 * dynolog does): never the socket of a daemon that is alive. */
static int daemon_listens(void)
{
    struct sockaddr_un a;
    socklen_t alen;
    if (act__dyno_addr(ACT__DYNO_DAEMON, &a, &alen) != 0 || !a.sun_path[0])
        return 0; /* abstract: bind itself fails with EADDRINUSE */
    int p = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int alive = p >= 0 && connect(p, (struct sockaddr *)&a, alen) == 0;
    if (p >= 0)
        close(p);
    return alive;
}

static int serve(const trig *t, const char *config)
{
    if (daemon_listens()) {
        fprintf(stderr, "actrace trigger: a daemon listens on \"%s\" already: leave out "
                "--serve to ask it\n", ACT__DYNO_DAEMON);
        return 1;
    }
    int fd = act__dyno_bind(ACT__DYNO_DAEMON);
    if (fd < 0) {
        fprintf(stderr, "actrace trigger: cannot bind the daemon's endpoint \"%s\": %s%s\n",
                ACT__DYNO_DAEMON, strerror(-fd),
                fd == -EADDRINUSE ? " (a daemon runs: leave out --serve to ask it)" : "");
        return 1;
    }
    int want = t->npids ? t->npids : (int)t->count;
    seen done[MAX_PIDS * 2];
    int ndone = 0, nbusy = 0, ntrig = 0;
    int64_t end = now_ms() + t->timeout_ms;
    while (ndone < want) {
        int64_t left = end - now_ms();
        if (left <= 0)
            break;
        act__dyno_msg m;
        int rc = act__dyno_recv(fd, (int)left, &m);
        if (rc < 0) {
            fprintf(stderr, "actrace trigger: a malformed message (%s), ignored\n", strerror(-rc));
            continue;
        }
        if (rc == 0)
            continue;
        if (strcmp(m.type, "ctxt") == 0) {
            int32_t one = 1; /* Kineto's registration: the count of its kind */
            act__dyno_send(fd, m.src, "ctxt", &one, sizeof one);
            act__dyno_msg_free(&m);
            continue;
        }
        int32_t type, pids[ACT__DYNO_MAX_PIDS];
        int64_t job;
        int np;
        if (strcmp(m.type, ACT__DYNO_REQ) != 0 ||
            act__dyno_poll_decode(m.data, m.len, &type, &job, pids, &np) != 0) {
            fprintf(stderr, "actrace trigger: a message of type \"%s\" and %zu bytes from \"%s\" "
                    "is no poll, ignored\n", m.type, m.len, m.src);
            act__dyno_msg_free(&m);
            continue;
        }
        /* The pid a poll claims is the kernel's word, or nothing: another
         * user could send a poll in any process's name. */
        if (!m.has_cred || m.pid != pids[0]) {
            fprintf(stderr, "actrace trigger: a poll from \"%s\" claims pid %d, but %s: "
                    "ignored\n", m.src, (int)pids[0],
                    m.has_cred ? "its sender is another process" : "it has no credentials");
            act__dyno_msg_free(&m);
            continue;
        }
        /* Which of ours it is: the process itself or an ancestor (as
         * dynolog matches), of the job; never this command itself. */
        int match = job == t->job && pids[0] != (int32_t)getpid();
        int target = -1;
        if (match && t->npids) {
            match = 0;
            for (int i = 0; i < np && !match; i++)
                for (int j = 0; j < t->npids; j++)
                    if (pids[i] == t->pids[j]) {
                        match = 1;
                        target = j;
                        break;
                    }
        }
        for (int i = 0; match && i < ndone; i++)
            if (done[i].pid == pids[0] || (target >= 0 && done[i].pid == -1 - target))
                match = 0; /* already answered */
        const char *reply = "";
        if (match) {
            int is_busy = !(type & ACT__DYNO_CFG_ACTIVITIES);
            if (geteuid() != 0 && m.uid != geteuid()) {
                /* It obeys only root or its own user: it would drop the
                 * request. */
                printf("pid %d: runs as uid %d, which takes requests only from root or "
                       "itself: not triggered\n", (int)pids[0], (int)m.uid);
                is_busy = 1;
                nbusy++;
            } else if (is_busy) {
                printf("pid %d: busy (its own trace is running): not triggered\n", (int)pids[0]);
                nbusy++;
            } else {
                reply = config;
                printf("pid %d: triggered\n", (int)pids[0]);
                ntrig++;
            }
            fflush(stdout);
            done[ndone].pid = target >= 0 ? -1 - target : pids[0];
            done[ndone++].busy = is_busy;
        }
        rc = act__dyno_send(fd, m.src, ACT__DYNO_REQ, reply, strlen(reply));
        if (rc != 0)
            fprintf(stderr, "actrace trigger: cannot answer \"%s\": %s\n", m.src, strerror(-rc));
        act__dyno_msg_free(&m);
    }
    act__dyno_unbind(fd, ACT__DYNO_DAEMON);
    if (ndone < want)
        fprintf(stderr, "actrace trigger: %d of %d processes polled within %lld ms\n", ndone, want,
                t->timeout_ms);
    return ndone == want && nbusy == 0 && ntrig > 0 ? 0 : 1;
}

int act_cmd_trigger(int argc, char **argv)
{
    trig t;
    memset(&t, 0, sizeof t);
    t.duration_ms = 500;
    t.roundup = 1;
    t.limit = 3;
    t.timeout_ms = 30000;
    t.count = 1;
    t.log_file = "/tmp/actrace_trigger.json";
    t.host = "localhost";
    t.port = "1778";
    enum { O_PID = 256, O_JOB, O_DUR, O_ITER, O_ROUND, O_START, O_LOG, O_ID, O_HOST, O_PORT,
           O_LIMIT, O_TIMEOUT, O_COUNT, O_SERVE };
    static const struct option opts[] = {
        {"pid", required_argument, 0, O_PID},        {"job-id", required_argument, 0, O_JOB},
        {"duration-ms", required_argument, 0, O_DUR}, {"iterations", required_argument, 0, O_ITER},
        {"roundup", required_argument, 0, O_ROUND},  {"start-time", required_argument, 0, O_START},
        {"log-file", required_argument, 0, O_LOG},   {"trace-id", required_argument, 0, O_ID},
        {"host", required_argument, 0, O_HOST},      {"port", required_argument, 0, O_PORT},
        {"process-limit", required_argument, 0, O_LIMIT},
        {"timeout-ms", required_argument, 0, O_TIMEOUT},
        {"count", required_argument, 0, O_COUNT},    {"serve", no_argument, 0, O_SERVE},
        {"help", no_argument, 0, 'h'},               {0, 0, 0, 0}};
    int c, dur_set = 0;
    long long v;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        const char *name = c >= O_PID && c <= O_SERVE ? opts[c - O_PID].name : "";
        switch (c) {
        case O_PID:
            if (num("--pid", optarg, 1, &v) || v > INT32_MAX)
                return 2;
            if (t.npids == MAX_PIDS) {
                fprintf(stderr, "actrace trigger: at most %d --pid\n", MAX_PIDS);
                return 2;
            }
            t.pids[t.npids++] = (int32_t)v;
            break;
        case O_JOB: if (num("--job-id", optarg, 0, &t.job)) return 2; break;
        case O_DUR:
            if (num("--duration-ms", optarg, 1, &t.duration_ms))
                return 2;
            dur_set = 1;
            break;
        case O_ITER: if (num("--iterations", optarg, 1, &t.iterations)) return 2; break;
        case O_ROUND: if (num("--roundup", optarg, 1, &t.roundup)) return 2; break;
        case O_START: if (num("--start-time", optarg, 1, &t.start_time)) return 2; break;
        case O_LIMIT: if (num("--process-limit", optarg, 1, &t.limit)) return 2; break;
        case O_TIMEOUT: if (num("--timeout-ms", optarg, 1, &t.timeout_ms)) return 2; break;
        case O_COUNT:
            if (num("--count", optarg, 1, &t.count) || t.count > MAX_PIDS) {
                fprintf(stderr, "actrace trigger: --count is at most %d\n", MAX_PIDS);
                return 2;
            }
            break;
        case O_LOG: case O_ID:
            /* One line each in the config: no line breaks in them. */
            if (!*optarg || strpbrk(optarg, "\r\n")) {
                fprintf(stderr, "actrace trigger: --%s must be one non-empty line\n", name);
                return 2;
            }
            if (c == O_LOG)
                t.log_file = optarg;
            else
                t.trace_id = optarg;
            break;
        case O_HOST: t.host = optarg; break;
        case O_PORT: t.port = optarg; break;
        case O_SERVE: t.serve = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "actrace trigger: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (dur_set && t.iterations) {
        fprintf(stderr, "actrace trigger: --duration-ms and --iterations are two kinds of "
                "window: give one\n");
        return 2;
    }
    char *config = request_config(&t);
    if (!config) {
        fprintf(stderr, "actrace trigger: out of memory\n");
        return 1;
    }
    printf("request:\n%s", config);
    fflush(stdout);
    int rc = t.serve ? serve(&t, config) : to_daemon(&t, config);
    free(config);
    return rc;
}
