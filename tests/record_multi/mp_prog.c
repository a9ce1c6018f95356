/* SPDX-License-Identifier: MIT */
/*
 * Test helper for RecordMulti: a program of many processes and threads,
 * recorded through the API under `actrace record`.
 *   mp_prog leaf NAME         one span NAME, then exit
 *   mp_prog idle OUT          records nothing; writes to OUT what it sees from
 *                             inside: "threads N spool N meta N light N" (its
 *                             tasks in /proc/self/task, its files <pid>-*.spool
 *                             and .meta in $ACTRACE_RECORD_DIR, its frames in
 *                             the light.log there); exits 7
 *   mp_prog scribble          appends a torn frame to record's light.log
 *   mp_prog late NAME OUT     as idle (OUT written first), then records a
 *                             span NAME late in its life, then writes
 *                             "after: threads N spool N" to OUT.after
 *   mp_prog forkrec NAME      records nothing; a forked child records span
 *                             NAME (its parent waits for it)
 *   mp_prog exec NAME         exec "mp_prog leaf NAME"
 *   mp_prog tree DEPTH        a span "level DEPTH" and one on a thread; a forked
 *                             child (no exec) runs tree DEPTH-1, another forked
 *                             child execs "leaf exec-DEPTH"; then the parent
 *                             records "after fork DEPTH" and waits for both
 *   mp_prog alloc READY       4 threads allocate forever (recording 20000
 *                             spans in all first);
 *                             READY gets the pid once they run
 *   mp_prog daemon PIDFILE    a double-forked child that outlives the program
 *                             (writes its pid to PIDFILE, sleeps 30 s)
 *   mp_prog die HOW N         3 threads ("rec 0".."rec 2") record spans
 *                             "tick" with args i = 0, 1, ... (and a string
 *                             arg), without pause for the first 4000 (or
 *                             N if more), then every 200 us; once each has recorded N,
 *                             the main thread, inside an open span "dying",
 *                             ends the process by HOW: exit, _exit, abort,
 *                             segv, kill (SIGKILL to itself), exec (execs
 *                             "leaf after-exec"), quick_exit
 *   mp_prog fill MB N         the files it writes may not grow past MB (0:
 *                             no limit; RLIMIT_FSIZE, SIGXFSZ ignored: the calls
 *                             fail with EFBIG, as on a full disk); records N
 *                             spans "fill" with arg i = 0, 1, ... and leaves
 *                             with _exit (the trace is rebuilt from the spool)
 *   mp_prog churn T N         T threads, 4 at a time, each recording N spans
 *                             "c" with arg i (unique over all threads), then
 *                             _exit (rebuilt from the spool)
 *   mp_prog closefds FILE N   records N spans "before", closes every
 *                             descriptor above 2 (as daemons do), opens FILE
 *                             eight times (taking the lowest numbers),
 *                             records N spans "after" with arg i, writes
 *                             "END\n" to FILE and kills itself with SIGTERM
 *   mp_prog victim DIR        a background job that outlives record: records
 *                             span "victim before", writes DIR/state
 *                             (its ACTRACE_RECORD_DIR), waits for DIR/go,
 *                             records 20000 spans "victim after" (new
 *                             chunks), forks a child that records and
 *                             exits, runs "leaf victim-exec" (a new image),
 *                             then writes DIR/done and exits normally
 *   mp_prog bigstr N SIZE     records N instants whose names are SIZE
 *                             bytes (each different)
 *   mp_prog cdleaf NAME       changes to / and records one span NAME
 *   mp_prog sigcheck          its SIGINT and SIGTERM dispositions must be
 *                             the default (else exits 3); installs its
 *                             own SIGTERM handler, raises SIGTERM, and
 *                             exits 0 if the handler ran (else 4)
 *   mp_prog nopidfs CMD...    runs CMD (execvp) where pidfd_open fails with
 *                             ENOSYS (a seccomp filter, inherited), as on a
 *                             kernel older than 5.3: the library then names
 *                             a process by its start ticks (/proc)
 *   mp_prog spans N           records N spans "s", then prints
 *                             "maxrss_kb=K" (its peak resident memory so far)
 *                             on stderr and exits
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <dirent.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actrace/actrace.h"

static const char *self;

static void span(const char *name)
{
    act_span_begin(ACT_CPU_OP, name);
    act_span_end();
}

static void *thread_span(void *arg)
{
    act_thread_name("worker");
    span((const char *)arg);
    return NULL;
}

static void tree(int depth)
{
    char name[64], tname[64];
    snprintf(name, sizeof name, "level %d", depth);
    snprintf(tname, sizeof tname, "thread %d", depth);
    span(name);
    pthread_t t;
    pthread_create(&t, NULL, thread_span, tname);
    pthread_join(t, NULL);
    if (depth == 0)
        return;
    pid_t a = fork();
    if (a == 0) {
        tree(depth - 1);
        exit(0);
    }
    pid_t b = fork();
    if (b == 0) {
        char leaf[64];
        snprintf(leaf, sizeof leaf, "exec-%d", depth);
        execl(self, self, "leaf", leaf, (char *)NULL);
        _exit(127);
    }
    snprintf(name, sizeof name, "after fork %d", depth);
    span(name);
    waitpid(a, NULL, 0);
    waitpid(b, NULL, 0);
}

static volatile int running;
static atomic_int budget;

static void *alloc_loop(void *arg)
{
    (void)arg;
    running++;
    for (unsigned i = 0;; i++) {
        void *p = malloc(64 + (i % 4096));
        /* Enough to make the write take a while, small enough to be quick. */
        int rec = atomic_fetch_add(&budget, 1) < 20000;
        if (rec)
            act_span_begin(ACT_CPU_OP, "alloc span");
        free(p);
        if (rec)
            act_span_end();
    }
    return NULL;
}

static atomic_long ticks[3];
/* Ticks recorded at full speed before each thread slows down. */
static long die_fast = 4000;

static void *die_loop(void *arg)
{
    long k = (long)(intptr_t)arg;
    char tn[16];
    snprintf(tn, sizeof tn, "rec %ld", k);
    act_thread_name(tn);
    for (long i = 0;; i++) {
        act_span_begin(ACT_CPU_OP, "tick");
        act_arg_int("i", i);
        act_arg_str("thread", tn);
        act_span_end();
        atomic_store(&ticks[k], i + 1);
        if (i >= die_fast) {
            /* Still recording when the process ends, but a trace of a
             * size the viewers' checks in CI read quickly. */
            struct timespec ts = {0, 200 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static int die(const char *how, long n)
{
    pthread_t t[3];
    if (n > die_fast)
        die_fast = n;
    for (long k = 0; k < 3; k++)
        pthread_create(&t[k], NULL, die_loop, (void *)(intptr_t)k);
    for (int k = 0; k < 3; k++)
        while (atomic_load(&ticks[k]) < n)
            usleep(1000);
    act_span_begin(ACT_CPU_OP, "dying");
    fflush(NULL);
    if (strcmp(how, "exit") == 0)
        exit(0);
    if (strcmp(how, "_exit") == 0)
        _exit(0);
    if (strcmp(how, "abort") == 0)
        abort();
    if (strcmp(how, "segv") == 0) {
        volatile uintptr_t bad = 8; /* a real fault, not raise() */
        return *(volatile int *)bad;
    }
    if (strcmp(how, "kill") == 0)
        kill(getpid(), SIGKILL);
    if (strcmp(how, "exec") == 0)
        execl(self, self, "leaf", "after-exec", (char *)NULL);
    if (strcmp(how, "quick_exit") == 0)
        quick_exit(0);
    return 2;
}

static long churn_n;
static atomic_long churn_next;

static void *churn_loop(void *arg)
{
    (void)arg;
    long base = atomic_fetch_add(&churn_next, churn_n);
    for (long i = 0; i < churn_n; i++) {
        act_span_begin(ACT_CPU_OP, "c");
        act_arg_int("i", base + i);
        act_span_end();
    }
    return NULL;
}

static void churn(long nthreads, long n)
{
    churn_n = n;
    for (long done = 0; done < nthreads; done += 4) {
        pthread_t t[4];
        long k = nthreads - done < 4 ? nthreads - done : 4;
        for (long j = 0; j < k; j++)
            pthread_create(&t[j], NULL, churn_loop, NULL);
        for (long j = 0; j < k; j++)
            pthread_join(t[j], NULL);
    }
    _exit(0);
}

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
    (void)sig;
    got_term = 1;
}

static int sigcheck(void)
{
    static const int sigs[] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
            old.sa_handler != SIG_DFL) {
            fprintf(stderr, "sigcheck: signal %d does not have its default action\n", sigs[i]);
            return 3;
        }
    }
    span("sigcheck");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    raise(SIGTERM);
    return got_term ? 0 : 4;
}

/* What this process sees of itself: its tasks, and its own files in the
 * record directory. */
static void self_report(const char *out, const char *prefix)
{
    int threads = 0, spool = 0, meta = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *de;
    while (d && (de = readdir(d)))
        threads += de->d_name[0] != '.';
    if (d)
        closedir(d);
    const char *dir = getenv("ACTRACE_RECORD_DIR");
    char pre[32];
    snprintf(pre, sizeof pre, "%d-", (int)getpid());
    d = dir ? opendir(dir) : NULL;
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, pre, strlen(pre)) != 0)
            continue;
        spool += strstr(de->d_name, ".spool") != NULL;
        meta += strstr(de->d_name, ".meta") != NULL;
    }
    if (d)
        closedir(d);
    /* Its frames in record's shared light log (src/engine/spool.h: u32
     * magic, u32 length, u32 base length, the base, records). */
    int light = 0;
    char p[4096];
    snprintf(p, sizeof p, "%s/light.log", dir ? dir : ".");
    /* Not blocking on a FIFO put in its place (test_record_lazy's fifo). */
    int lfd = open(p, O_RDONLY | O_NONBLOCK);
    struct stat lst;
    FILE *lf = lfd >= 0 && fstat(lfd, &lst) == 0 && S_ISREG(lst.st_mode) ? fdopen(lfd, "rb") : NULL;
    if (!lf && lfd >= 0)
        close(lfd);
    if (lf) {
        static char buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, lf), pos = 0;
        fclose(lf);
        while (pos + 12 <= n) {
            uint32_t h[3];
            memcpy(h, buf + pos, sizeof h);
            if (h[0] != 0x4c544341u || h[1] < 12 + h[2] || h[1] > n - pos)
                break;
            light += h[2] > strlen(pre) && memcmp(buf + pos + 12, pre, strlen(pre)) == 0;
            pos += h[1];
        }
    }
    FILE *f = fopen(out, "w");
    if (f) {
        fprintf(f, "%sthreads %d spool %d meta %d light %d\n", prefix, threads, spool, meta,
                light);
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    self = argv[0];
    if (argc == 2 && strcmp(argv[1], "sigcheck") == 0)
        return sigcheck();
    if (argc == 2 && strcmp(argv[1], "scribble") == 0) {
        /* A torn frame in record's light log, as a write a full disk cut
         * short leaves: the magic and a length running past what
         * follows. */
        char p[4096];
        snprintf(p, sizeof p, "%s/light.log", getenv("ACTRACE_RECORD_DIR"));
        int fd = open(p, O_WRONLY | O_APPEND);
        static const unsigned char torn[] = {0x41, 0x43, 0x54, 0x4c, 0xff, 0x00, 0x00, 0x00,
                                             0x1f, 0x00, 0x00, 0x00, '1', '2'};
        if (fd < 0 || write(fd, torn, sizeof torn) != (ssize_t)sizeof torn)
            return 3;
        close(fd);
        return 0;
    }
    if (argc < 3)
        return 2;
    if (strcmp(argv[1], "fill") == 0 && argc >= 4) {
        struct rlimit rl = {(rlim_t)atol(argv[2]) << 20, (rlim_t)atol(argv[2]) << 20};
        signal(SIGXFSZ, SIG_IGN);
        if (atol(argv[2]) > 0 && setrlimit(RLIMIT_FSIZE, &rl) != 0)
            return 3;
        long n = atol(argv[3]);
        for (long i = 0; i < n; i++) {
            act_span_begin(ACT_CPU_OP, "fill");
            act_arg_int("i", i);
            act_span_end();
        }
        _exit(0);
    }
    if (strcmp(argv[1], "churn") == 0 && argc >= 4)
        churn(atol(argv[2]), atol(argv[3]));
    if (strcmp(argv[1], "closefds") == 0 && argc >= 4) {
        long n = atol(argv[3]);
        for (long i = 0; i < n; i++)
            span("before");
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        int fds[8];
        for (int k = 0; k < 8; k++)
            fds[k] = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        for (long i = 0; i < n; i++) {
            act_span_begin(ACT_CPU_OP, "after");
            act_arg_int("i", i);
            act_span_end();
        }
        if (fds[0] < 0 || write(fds[0], "END\n", 4) != 4)
            return 3;
        kill(getpid(), SIGTERM);
        pause();
        return 4;
    }
    if (strcmp(argv[1], "victim") == 0) {
        char path[4096];
        span("victim before");
        snprintf(path, sizeof path, "%s/state", argv[2]);
        FILE *f = fopen(path, "w");
        if (!f)
            return 3;
        const char *d = getenv("ACTRACE_RECORD_DIR");
        fprintf(f, "%s\n", d ? d : "");
        fclose(f);
        snprintf(path, sizeof path, "%s/go", argv[2]);
        for (int i = 0; i < 60000 && access(path, F_OK) != 0; i++)
            usleep(1000);
        for (long i = 0; i < 20000; i++) {
            act_span_begin(ACT_CPU_OP, "victim after");
            act_arg_int("i", i);
            act_span_end();
        }
        pid_t c = fork();
        if (c == 0) {
            span("victim child");
            exit(0);
        }
        waitpid(c, NULL, 0);
        c = fork();
        if (c == 0) {
            execl(self, self, "leaf", "victim-exec", (char *)NULL);
            _exit(127);
        }
        waitpid(c, NULL, 0);
        snprintf(path, sizeof path, "%s/done", argv[2]);
        f = fopen(path, "w");
        if (f)
            fclose(f);
        return 0;
    }
    if (strcmp(argv[1], "bigstr") == 0 && argc >= 4) {
        long n = atol(argv[2]);
        size_t size = (size_t)atol(argv[3]);
        char *name = malloc(size + 1);
        if (!name)
            return 3;
        memset(name, 'x', size);
        name[size] = '\0';
        for (long i = 0; i < n; i++) {
            snprintf(name, 32, "big %ld ", i % 100000000);
            name[strlen(name)] = 'x';
            act_instant(ACT_CPU_OP, name);
        }
        free(name);
        return 0;
    }
    if (strcmp(argv[1], "cdleaf") == 0) {
        if (chdir("/") != 0)
            return 3;
        span(argv[2]);
        return 0;
    }
    if (strcmp(argv[1], "spans") == 0) {
        long n = atol(argv[2]);
        for (long i = 0; i < n; i++) {
            act_span_begin(ACT_CPU_OP, "s");
            act_span_end();
        }
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        fprintf(stderr, "maxrss_kb=%ld\n", ru.ru_maxrss);
        return 0;
    }
    if (strcmp(argv[1], "die") == 0 && argc >= 4)
        return die(argv[2], atol(argv[3]));
    if (strcmp(argv[1], "idle") == 0) {
        self_report(argv[2], "");
        return 7;
    }
    if (strcmp(argv[1], "late") == 0 && argc >= 4) {
        self_report(argv[3], "");
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        span(argv[2]);
        char after[4096];
        snprintf(after, sizeof after, "%s.after", argv[3]);
        self_report(after, "after: ");
        return 0;
    }
    if (strcmp(argv[1], "nopidfs") == 0 && argc >= 3) {
#ifdef SYS_pidfd_open
        struct sock_filter f[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_open, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
            perror("mp_prog nopidfs: seccomp");
            return 126;
        }
#endif
        execvp(argv[2], argv + 2);
        perror("mp_prog nopidfs: exec");
        return 127;
    }
    if (strcmp(argv[1], "reuse") == 0) {
        /* Two processes with one pid: /bin/true forked, reaped, and a
         * second /bin/true given the same pid by clone3's set_tid (root
         * only; "skip" in FILE where the kernel refuses). */
        FILE *f = fopen(argv[2], "w");
        if (!f)
            return 1;
        pid_t a = fork();
        if (a == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int st = 0;
        waitpid(a, &st, 0);
        /* A process is told apart from an earlier one with its pid by its
         * start time in clock ticks (10 ms): the kernel hands a pid out
         * again only after cycling through pid_max others, never within a
         * tick; set_tid could, so wait past one. */
        struct timespec tick = {0, 30 * 1000 * 1000};
        nanosleep(&tick, NULL);
        pid_t b = -1;
#ifdef SYS_clone3
        struct {
            uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
                set_tid, set_tid_size, cgroup;
        } ca = {0};
        pid_t want = a;
        ca.exit_signal = SIGCHLD;
        ca.set_tid = (uint64_t)(uintptr_t)&want;
        ca.set_tid_size = 1;
        b = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
        if (b == 0) {
            /* A raw clone: no fork handlers ran; exec at once. */
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        if (b > 0)
            waitpid(b, &st, 0);
#endif
        if (b == a)
            fprintf(f, "%d\n", (int)a);
        else
            fprintf(f, "skip\n");
        fclose(f);
        return 0;
    }
    if (strcmp(argv[1], "forkrec") == 0) {
        pid_t c = fork();
        if (c == 0) {
            span(argv[2]);
            exit(0);
        }
        int st = 0;
        waitpid(c, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    if (strcmp(argv[1], "leaf") == 0) {
        span(argv[2]);
        return 0;
    }
    if (strcmp(argv[1], "exec") == 0) {
        span("before exec");
        execl(self, self, "leaf", argv[2], (char *)NULL);
        return 127;
    }
    if (strcmp(argv[1], "tree") == 0) {
        tree(atoi(argv[2]));
        return 0;
    }
    if (strcmp(argv[1], "alloc") == 0) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, alloc_loop, NULL);
        while (running < 4)
            usleep(1000);
        usleep(20000);
        FILE *f = fopen(argv[2], "w");
        if (f) {
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
        }
        for (;;)
            pause();
    }
    if (strcmp(argv[1], "daemon") == 0) {
        span("daemon parent");
        pid_t a = fork();
        if (a == 0) {
            if (fork() == 0) {
                setsid();
                FILE *f = fopen(argv[2], "w");
                if (f) {
                    fprintf(f, "%d\n", (int)getpid());
                    fclose(f);
                }
                sleep(30);
                _exit(0);
            }
            _exit(0);
        }
        waitpid(a, NULL, 0);
        return 0;
    }
    return 2;
}
