/* SPDX-License-Identifier: MIT */
/*
 * JsonSink: the streaming output sink of json_out.h. Files get exactly the
 * bytes written, appear at the final path only at finish (never after an
 * error, and an older file there survives a failed write), honour the
 * umask, and ".gz" paths decompress to the same bytes. Write failures are
 * provoked with RLIMIT_FSIZE (EFBIG) in a forked child so the limit does
 * not leak into the rest of the test.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef ACT_HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef ACT_HAVE_JANSSON
#include <jansson.h>
#endif

#include "actrace/errors.h"
#include "json_check.h"
#include "writer/json_out.h"

static char dir[400];

static void path_in(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static int exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* Names in the test directory other than @p except (NULL: all). */
static int count_entries(const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (!prefix || strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

static char *read_file(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    *len = n;
    return buf;
}

static void write_file(const char *p, const char *content)
{
    FILE *f = fopen(p, "wb");
    if (f) {
        fputs(content, f);
        fclose(f);
    }
}

/* A deterministic document: numbers, timestamps, strings, big blocks. */
static char *make_doc(act__out *o, size_t approx, size_t *len)
{
    size_t cap = approx + (1 << 20), n = 0;
    char *want = malloc(cap);
    uint64_t i = 0;
    while (n < approx) {
        char tmp[256];
        char *p = act__out_reserve(o, 200);
        char *q = p;
        p = act__fmt_u64(p, i);
        *p++ = ',';
        p = act__fmt_ts_us(p, (int64_t)(i * 1000003) - 5000);
        *p++ = ',';
        act__out_commit(o, p);
        memcpy(tmp, q, (size_t)(p - q));
        memcpy(want + n, tmp, (size_t)(p - q));
        n += (size_t)(p - q);
        char name[32];
        int nl = snprintf(name, sizeof name, "ev\"%llu\n", (unsigned long long)i);
        act__out_str(o, name, (size_t)nl);
        char *e = act__json_str(want + n, name, (size_t)nl);
        n = (size_t)(e - want);
        act__out_lit(o, "\n");
        want[n++] = '\n';
        if (i % 997 == 0) {
            /* A block larger than one reservation. */
            size_t big = 70000 + (size_t)(check_rnd() % 50000);
            char *blk = malloc(big);
            for (size_t k = 0; k < big; k++)
                blk[k] = (char)('a' + check_rnd() % 26);
            act__out_write(o, blk, big);
            memcpy(want + n, blk, big);
            n += big;
            free(blk);
        }
        i++;
    }
    *len = n;
    return want;
}

static void test_plain(void)
{
    char path[600], other[600];
    path_in(path, sizeof path, "plain.json");
    act__out o;
    char err[256] = "x";
    CHECK_INT(act__out_open(&o, path, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_STR(act__out_errmsg(&o), "");
    size_t want_n;
    char *want = make_doc(&o, 3 << 20, &want_n);
    /* Only the temporary file exists until finish. */
    CHECK(!exists(path));
    CHECK_INT(count_entries("plain.json.tmp."), 1);
    CHECK_U64(act__out_bytes(&o), want_n);
    CHECK_INT(act__out_error(&o), 0);
    CHECK_INT(act__out_finish(&o), 0);
    CHECK_U64(act__out_bytes(&o), want_n);
    CHECK(exists(path));
    CHECK_INT(count_entries("plain.json.tmp."), 0);
    size_t got_n;
    char *got = read_file(path, &got_n);
    CHECK(got != NULL);
    if (got)
        CHECK(got_n == want_n && memcmp(got, want, want_n) == 0);
    free(got);
    free(want);
    /* Abort after finish leaves the file alone. */
    act__out_abort(&o);
    CHECK(exists(path));
    unlink(path);

    /* Reservations larger than the buffer. */
    path_in(other, sizeof other, "big.json");
    CHECK_INT(act__out_open_ex(&o, other, ACT__OUT_FSYNC, NULL, 0), 0);
    size_t big = 3 * ACT__OUT_BUF_SIZE + 17;
    char *p = act__out_reserve(&o, big);
    CHECK(p != NULL);
    if (p) {
        memset(p, 'q', big);
        act__out_commit(&o, p + big);
    }
    act__out_lit(&o, "end");
    CHECK_INT(act__out_finish(&o), 0);
    got = read_file(other, &got_n);
    CHECK_INT(got_n, big + 3);
    if (got && got_n == big + 3) {
        CHECK(got[0] == 'q' && got[big - 1] == 'q');
        CHECK_MEM(got + big, 3, "end", 3);
    }
    free(got);
    unlink(other);

    /* An empty output is an empty file. */
    CHECK_INT(act__out_open(&o, other, NULL, 0), 0);
    CHECK_INT(act__out_finish(&o), 0);
    got = read_file(other, &got_n);
    CHECK(got != NULL);
    CHECK_INT(got_n, 0);
    free(got);
    unlink(other);
}

static void test_mode(void)
{
    char path[600];
    path_in(path, sizeof path, "mode.json");
    mode_t masks[] = {022, 077, 002};
    for (size_t i = 0; i < 3; i++) {
        mode_t old = umask(masks[i]);
        act__out o;
        CHECK_INT(act__out_open(&o, path, NULL, 0), 0);
        act__out_lit(&o, "{}");
        CHECK_INT(act__out_finish(&o), 0);
        umask(old);
        struct stat st;
        CHECK(stat(path, &st) == 0);
        CHECK_INT(st.st_mode & 0777, 0666 & ~masks[i]);
        unlink(path);
    }
}

static void test_replace_existing(void)
{
    char path[600];
    path_in(path, sizeof path, "existing.json");
    write_file(path, "old content");
    act__out o;
    CHECK_INT(act__out_open(&o, path, NULL, 0), 0);
    act__out_lit(&o, "new content");
    size_t n;
    char *got = read_file(path, &n);
    CHECK_MEM(got, n, "old content", 11); /* untouched until finish */
    free(got);
    CHECK_INT(act__out_finish(&o), 0);
    got = read_file(path, &n);
    CHECK_MEM(got, n, "new content", 11);
    free(got);

    /* Abort: the old file stays, the temporary one goes. */
    CHECK_INT(act__out_open(&o, path, NULL, 0), 0);
    act__out_lit(&o, "discarded");
    CHECK_INT(count_entries("existing.json.tmp."), 1);
    act__out_abort(&o);
    CHECK_INT(count_entries("existing.json.tmp."), 0);
    got = read_file(path, &n);
    CHECK_MEM(got, n, "new content", 11);
    free(got);
    unlink(path);

    /* Abort of a fresh output: nothing at the final path. */
    CHECK_INT(act__out_open(&o, path, NULL, 0), 0);
    act__out_abort(&o);
    CHECK(!exists(path));
    CHECK_INT(count_entries(NULL), 0);
    act__out_abort(&o); /* twice is harmless */
    act__out zero;
    memset(&zero, 0, sizeof zero);
    act__out_abort(&zero);
    CHECK_INT(act__out_finish(&zero), ACT_ESTATE);
}

static void test_open_errors(void)
{
    act__out o;
    char err[512];
    char path[600];

    path_in(path, sizeof path, "no/such/dir/trace.json");
    CHECK_INT(act__out_open(&o, path, err, sizeof err), ACT_EIO);
    CHECK(strstr(err, path) != NULL);
    CHECK(strstr(err, strerror(ENOENT)) != NULL);
    CHECK_STR(act__out_errmsg(&o), err);
    act__out_abort(&o);

    /* A parent that is a regular file. */
    char file[500];
    path_in(file, sizeof file, "afile");
    write_file(file, "x");
    snprintf(path, sizeof path, "%s/trace.json", file);
    CHECK_INT(act__out_open(&o, path, err, sizeof err), ACT_EIO);
    CHECK(strstr(err, path) != NULL);
    CHECK(strstr(err, strerror(ENOTDIR)) != NULL);
    unlink(file);

    /* A directory without write permission (root ignores the mode). */
    char ro[500];
    path_in(ro, sizeof ro, "readonly");
    CHECK(mkdir(ro, 0500) == 0);
    snprintf(path, sizeof path, "%s/trace.json", ro);
    if (geteuid() != 0) {
        CHECK_INT(act__out_open(&o, path, err, sizeof err), ACT_EIO);
        CHECK(strstr(err, path) != NULL);
        CHECK(strstr(err, strerror(EACCES)) != NULL);
    } else {
        /* Root may write anywhere but in pseudo file systems. */
        const char *proc = "/proc/act-sink-test.json";
        CHECK(act__out_open(&o, proc, err, sizeof err) < 0);
        CHECK(strstr(err, proc) != NULL);
        CHECK(!exists(proc));
        printf("JsonSink: running as root, permission check done in /proc\n");
    }
    rmdir(ro);

    /* The path is a directory. */
    CHECK_INT(act__out_open(&o, dir, err, sizeof err), ACT_EINVAL);
    CHECK(strstr(err, dir) != NULL);
    CHECK(strstr(err, "directory") != NULL);

    CHECK_INT(act__out_open(&o, "", err, sizeof err), ACT_EINVAL);
    CHECK(err[0] != '\0');
    CHECK_INT(act__out_open(&o, NULL, NULL, 0), ACT_EINVAL);
    CHECK_INT(count_entries(NULL), 0);
}

#ifdef ACT_HAVE_ZLIB
static char *gunzip_file(const char *p, size_t *len)
{
    gzFile g = gzopen(p, "rb");
    if (!g)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    int r;
    while ((r = gzread(g, buf + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)r;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    CHECK(r == 0);
    gzclose(g);
    *len = n;
    return buf;
}
#endif

static void test_gzip(void)
{
    char path[600];
    path_in(path, sizeof path, "trace.json.gz");
    act__out o;
    char err[512];
#ifdef ACT_HAVE_ZLIB
    CHECK_INT(act__out_open(&o, path, err, sizeof err), 0);
    size_t want_n;
    char *want = make_doc(&o, 2 << 20, &want_n);
    CHECK(!exists(path));
    CHECK_U64(act__out_bytes(&o), want_n);
    CHECK_INT(act__out_finish(&o), 0);
    size_t raw_n;
    char *raw = read_file(path, &raw_n);
    CHECK(raw && raw_n > 18);
    if (raw && raw_n > 2) {
        CHECK(raw[0] == (char)0x1f && raw[1] == (char)0x8b); /* gzip magic */
        CHECK(raw_n < want_n);                               /* compressed */
    }
    free(raw);
    size_t got_n = 0;
    char *got = gunzip_file(path, &got_n);
    CHECK(got != NULL);
    CHECK(got && got_n == want_n && memcmp(got, want, want_n) == 0);
    free(got);
    free(want);
    unlink(path);

    /* Empty gzip output is still a valid (empty) gzip file. */
    CHECK_INT(act__out_open(&o, path, NULL, 0), 0);
    CHECK_INT(act__out_finish(&o), 0);
    got = gunzip_file(path, &got_n);
    CHECK(got != NULL);
    CHECK_INT(got_n, 0);
    free(got);
    unlink(path);
#else
    CHECK_INT(act__out_open(&o, path, err, sizeof err), ACT_ENOTSUP);
    CHECK(strstr(err, path) != NULL);
    CHECK(strstr(err, "zlib") != NULL);
    CHECK(!exists(path));
#endif
    /* NOGZIP writes a .gz path uncompressed. */
    CHECK_INT(act__out_open_ex(&o, path, ACT__OUT_NOGZIP, NULL, 0), 0);
    act__out_lit(&o, "plain");
    CHECK_INT(act__out_finish(&o), 0);
    size_t n;
    char *plain = read_file(path, &n);
    CHECK_MEM(plain, n, "plain", 5);
    free(plain);
    unlink(path);
    CHECK_INT(count_entries(NULL), 0);
}

/* In a child limited to @p limit bytes per file: write @p total bytes to
 * @p name and finish. Exit status 0 when everything the parent cannot see
 * was right (error code, message, sticky state). */
static int child_fail(const char *name, size_t limit, size_t total, int early)
{
    char path[600];
    path_in(path, sizeof path, name);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {limit, limit};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 90;
    act__out o;
    char err[512];
    if (act__out_open(&o, path, err, sizeof err) != 0) {
        fprintf(stderr, "open: %s\n", err);
        return 91;
    }
    char block[4096];
    for (size_t done = 0; done < total; done += sizeof block) {
        for (size_t i = 0; i < sizeof block; i++)
            block[i] = (char)check_rnd(); /* incompressible, for the gzip case */
        act__out_write(&o, block, sizeof block);
        act__out_str(&o, block, 100);
    }
    /* Sticky, and seen before finish once a flush failed. */
    if (act__out_error(&o) != (early ? ACT_ENOSPC : 0)) {
        act__out_abort(&o);
        return 92;
    }
    if (exists(path) && strcmp(name, "keep.json") != 0) {
        act__out_abort(&o);
        return 93;
    }
    int r = act__out_finish(&o);
    if (r != ACT_ENOSPC) {
        fprintf(stderr, "finish returned %d (%s)\n", r, act__out_errmsg(&o));
        return 94;
    }
    const char *msg = act__out_errmsg(&o);
    if (!strstr(msg, path) || !strstr(msg, strerror(EFBIG))) {
        fprintf(stderr, "message: %s\n", msg);
        return 95;
    }
    act__out_abort(&o);
    return 0;
}

static void run_fail_case(const char *name, size_t limit, size_t total,
                          int early)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        _exit(child_fail(name, limit, total, early));
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st));
    CHECK_INT(WEXITSTATUS(st), 0);
}

static void test_write_failure(void)
{
    char path[600];
    /* Fails during a flush in the middle (buffer 256 KiB, limit 100 KB). */
    run_fail_case("fail.json", 100000, 4 << 20, 1);
    path_in(path, sizeof path, "fail.json");
    CHECK(!exists(path));
    CHECK_INT(count_entries(NULL), 0);

    /* Fails only at finish (everything fits in the buffer). */
    run_fail_case("late.json", 1000, 50000, 0);
    CHECK_INT(count_entries(NULL), 0);

#ifdef ACT_HAVE_ZLIB
    run_fail_case("fail.json.gz", 100000, 4 << 20, 1);
    CHECK_INT(count_entries(NULL), 0);
#endif

    /* An existing file survives a failed replacement unchanged. */
    path_in(path, sizeof path, "keep.json");
    write_file(path, "{\"old\": true}");
    run_fail_case("keep.json", 100000, 4 << 20, 1);
    size_t n;
    char *got = read_file(path, &n);
    CHECK_MEM(got, n, "{\"old\": true}", 13);
    free(got);
    CHECK_INT(count_entries(NULL), 1);
    unlink(path);
}

static void test_memory(void)
{
    act__out o;
    CHECK_INT(act__out_open_mem(&o, 1), 0); /* clamped up */
    size_t want_n;
    char *want = make_doc(&o, 1 << 20, &want_n);
    CHECK_INT(act__out_finish(&o), 0);
    size_t got_n;
    char *got = act__out_mem_take(&o, &got_n);
    CHECK(got && got_n == want_n && memcmp(got, want, want_n) == 0);
    CHECK(got && got[got_n] == '\0');
    CHECK(act__out_mem_take(&o, &got_n) == NULL); /* taken once */
    free(got);
    free(want);
    act__out_abort(&o);

    /* Not taken: abort frees it (LeakSanitizer would complain). */
    CHECK_INT(act__out_open_mem(&o, 0), 0);
    act__out_lit(&o, "x");
    CHECK_INT(act__out_finish(&o), 0);
    act__out_abort(&o);

#ifdef ACT_HAVE_JANSSON
    /* A document of escaped random strings parses. */
    CHECK_INT(act__out_open_mem(&o, 0), 0);
    act__out_char(&o, '[');
    for (int k = 0; k < 2000; k++) {
        char s[300];
        size_t n = check_rnd() % sizeof s;
        for (size_t i = 0; i < n; i++)
            s[i] = (char)check_rnd();
        if (k)
            act__out_char(&o, ',');
        act__out_str(&o, s, n);
        char *p = act__out_reserve(&o, 2 + ACT__FMT_TS_MAX +
                                           ACT__FMT_DOUBLE_MAX);
        *p++ = ',';
        p = act__fmt_ts_us(p, (int64_t)check_rnd());
        *p++ = ',';
        double d;
        uint64_t bits = check_rnd();
        memcpy(&d, &bits, sizeof d);
        p = act__fmt_double(p, d);
        act__out_commit(&o, p);
    }
    act__out_char(&o, ']');
    CHECK_INT(act__out_finish(&o), 0);
    got = act__out_mem_take(&o, &got_n);
    json_error_t jerr;
    json_t *j = json_loadb(got, got_n, JSON_ALLOW_NUL, &jerr);
    if (!j)
        fprintf(stderr, "jansson: %s at %d:%d\n", jerr.text, jerr.line,
                jerr.column);
    CHECK(j != NULL);
    CHECK(j && json_array_size(j) == 3 * 2000);
    json_decref(j);
    free(got);
#endif
}

int main(void)
{
    check_rng = 0x2545F4914F6CDD1Du;
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/act-sink-XXXXXX", base && *base ? base : "/tmp");
    REQUIRE(mkdtemp(dir) != NULL);
    test_plain();
    test_mode();
    test_replace_existing();
    test_open_errors();
    test_gzip();
    test_write_failure();
    test_memory();
    int left = count_entries(NULL);
    CHECK_INT(left, 0);
    if (left == 0)
        rmdir(dir);
    return check_report("JsonSink");
}
