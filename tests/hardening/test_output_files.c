/* SPDX-License-Identifier: MIT */
/*
 * Where a trace may be written (src/writer/out_sink.c): special files
 * (a character device, a FIFO, a pipe named as /dev/fd/N, a symlink to a
 * FIFO) are written in place and stay what they were; names of 245 to 255
 * bytes work; replacing a file keeps its mode and owner; hard links keep
 * the old content (documented: the replace is atomic, a new inode).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <actrace/actrace.h>

#include "check.h"

#define SCRATCH ACT_BINARY_DIR "/tests/hardening-output"

static int write_trace(const char *path)
{
    act_session *s = NULL;
    int rc = act_session_create(NULL, &s);
    if (rc)
        return rc;
    rc = act_session_start(s);
    act_span_begin(ACT_USER_ANNOTATION, "output-file test");
    act_span_end();
    if (!rc)
        rc = act_session_stop(s);
    if (!rc)
        rc = act_session_write(s, path);
    if (rc)
        fprintf(stderr, "write %s: %s\n", path, act_session_errmsg(s));
    act_session_destroy(s);
    return rc;
}

typedef struct reader {
    const char *path; /* opened by the thread, or */
    int fd;           /* read from directly */
    char buf[1 << 20];
    size_t n;
} reader;

static void *read_all(void *arg)
{
    reader *r = arg;
    int fd = r->path ? open(r->path, O_RDONLY) : r->fd;
    ssize_t got;
    while (fd >= 0 && r->n < sizeof r->buf - 1 &&
           (got = read(fd, r->buf + r->n, sizeof r->buf - 1 - r->n)) > 0)
        r->n += (size_t)got;
    r->buf[r->n] = '\0';
    if (fd >= 0)
        close(fd);
    return NULL;
}

static int is_trace(const reader *r)
{
    return r->n > 2 && r->buf[0] == '{' && strstr(r->buf, "\"traceEvents\"") &&
           strstr(r->buf, "output-file test");
}

static void test_char_device(void)
{
    struct stat st;
    if (geteuid() == 0) {
        /* A private /dev/null (1,3): replacing it would be visible. */
        char dev[600];
        snprintf(dev, sizeof dev, "%s/null", SCRATCH);
        unlink(dev);
        CHECK_OK(mknod(dev, S_IFCHR | 0666, makedev(1, 3)));
        CHECK_OK(write_trace(dev));
        CHECK(stat(dev, &st) == 0 && S_ISCHR(st.st_mode));
        CHECK_EQ_INT((long long)st.st_rdev, (long long)makedev(1, 3));
        unlink(dev);
    }
    /* The real one (as root the old code replaced it; as a user it
     * failed to create /dev/null.tmp.*). */
    CHECK_OK(write_trace("/dev/null"));
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
}

static void test_fifo_and_link(void)
{
    char fifo[600], link[600];
    snprintf(fifo, sizeof fifo, "%s/fifo", SCRATCH);
    snprintf(link, sizeof link, "%s/to-fifo", SCRATCH);
    unlink(fifo);
    unlink(link);
    CHECK_OK(mkfifo(fifo, 0600));
    CHECK_OK(symlink(fifo, link));
    const char *targets[] = {fifo, link};
    for (int i = 0; i < 2; i++) {
        static reader r;
        memset(&r, 0, sizeof r);
        r.path = fifo;
        pthread_t th;
        CHECK_OK(pthread_create(&th, NULL, read_all, &r));
        CHECK_OK(write_trace(targets[i]));
        pthread_join(th, NULL);
        CHECK(is_trace(&r));
        struct stat st;
        CHECK(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
        CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    }
    unlink(link);
    unlink(fifo);
}

/* A pipe named as /dev/fd/N (bash's ">(gzip > t.gz)"). */
static void test_dev_fd(void)
{
    int p[2];
    CHECK_FATAL(pipe(p) == 0);
    static reader r;
    memset(&r, 0, sizeof r);
    r.fd = p[0];
    pthread_t th;
    CHECK_OK(pthread_create(&th, NULL, read_all, &r));
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", p[1]);
    CHECK_OK(write_trace(path));
    /* Our descriptor is still ours (the writer used a duplicate). */
    CHECK(fcntl(p[1], F_GETFD) >= 0);
    close(p[1]);
    pthread_join(th, NULL);
    CHECK(is_trace(&r));
}

static void test_long_names(void)
{
    for (size_t len = 245; len <= 255; len += 5) {
        char name[300], path[900];
        memset(name, 'n', len);
        memcpy(name + len - 5, ".json", 5);
        name[len] = '\0';
        snprintf(path, sizeof path, "%s/%s", SCRATCH, name);
        if (!CHECK_OK(write_trace(path)))
            fprintf(stderr, "  name length %zu\n", len);
        struct stat st;
        CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0);
        /* Replacing it works too, and leaves no temporary file. */
        CHECK_OK(write_trace(path));
        unlink(path);
    }
    /* Only what the test made is left: the directory is empty. */
    CHECK_OK(rmdir(SCRATCH));
    CHECK_OK(mkdir(SCRATCH, 0755));
}

static void test_mode_owner_links(void)
{
    char path[600], hard[600];
    snprintf(path, sizeof path, "%s/kept.json", SCRATCH);
    snprintf(hard, sizeof hard, "%s/hard.json", SCRATCH);
    FILE *f = fopen(path, "w");
    CHECK_FATAL(f != NULL);
    fputs("old", f);
    fclose(f);
    CHECK_OK(chmod(path, 0640));
    if (geteuid() == 0)
        CHECK_OK(chown(path, 4242, 4343));
    CHECK_OK(link(path, hard));
    mode_t old = umask(022);
    CHECK_OK(write_trace(path));
    umask(old);
    struct stat st;
    CHECK_FATAL(stat(path, &st) == 0);
    CHECK_EQ_INT(st.st_mode & 07777, 0640);
    if (geteuid() == 0) {
        CHECK_EQ_INT(st.st_uid, 4242);
        CHECK_EQ_INT(st.st_gid, 4343);
    } else {
        printf("note: not root, the owner case is not exercised\n");
    }
    CHECK(st.st_size > 3);
    /* The atomic replace makes a new file: the hard link keeps the old
     * content (docs/recording.md). */
    CHECK(stat(hard, &st) == 0 && st.st_size == 3);
    unlink(hard);
    unlink(path);
}

int main(void)
{
    mkdir(SCRATCH, 0755);
    test_char_device();
    test_fifo_and_link();
    test_dev_fd();
    test_long_names();
    test_mode_owner_links();
    rmdir(SCRATCH);
    return check_done();
}
