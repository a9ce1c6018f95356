/* SPDX-License-Identifier: MIT */
/*
 * `actrace record` checks its output before it starts the program: a
 * missing or non-directory parent, or an existing trace without --force,
 * is a clear error (exit 2) and the program never runs. --force replaces;
 * /dev/null needs no --force, stays a device, and counts as written.
 */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define ACTRACE ACT_BINARY_DIR "/bin/actrace"

static char dir[512];

static const char *at(const char *name)
{
    static char buf[4][700];
    static int k;
    k = (k + 1) & 3;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* Runs `actrace record ARGS -- touch MARKER`; stderr into err.txt. */
static int record(const char *args)
{
    char cmd[3000];
    unlink(at("ran"));
    snprintf(cmd, sizeof cmd, "%s record %s -- touch %s 2>%s", ACTRACE, args, at("ran"),
             at("err.txt"));
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int ran(void)
{
    return access(at("ran"), F_OK) == 0;
}

static int err_has(const char *a, const char *b)
{
    static char buf[4096];
    FILE *f = fopen(at("err.txt"), "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    int ok = strstr(buf, a) && (!b || strstr(buf, b));
    if (!ok)
        fprintf(stderr, "stderr was: %s\n", buf);
    return ok;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
}

static long size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/tests/hardening-record.XXXXXX", ACT_BINARY_DIR);
    CHECK_FATAL(mkdtemp(dir) != NULL);
    char args[1500];

    /* A directory that does not exist: refused before the program runs. */
    snprintf(args, sizeof args, "-o %s/no-such-dir/t.json", dir);
    CHECK_EQ_INT(record(args), 2);
    CHECK(!ran());
    CHECK(err_has("no-such-dir", "No such file or directory"));

    /* A parent that is a file. */
    put(at("plain"), "x");
    snprintf(args, sizeof args, "-o %s/plain/t.json", dir);
    CHECK_EQ_INT(record(args), 2);
    CHECK(!ran());
    CHECK(err_has("plain/t.json", "Not a directory"));

    /* The output is a directory. */
    snprintf(args, sizeof args, "-o %s", dir);
    CHECK_EQ_INT(record(args), 2);
    CHECK(!ran());
    CHECK(err_has("it is a directory", NULL));

    /* An existing trace is kept without --force (DESIGN section 8). */
    put(at("old.json"), "old");
    snprintf(args, sizeof args, "-o %s", at("old.json"));
    CHECK_EQ_INT(record(args), 2);
    CHECK(!ran());
    CHECK(err_has("old.json exists", "--force"));
    CHECK_EQ_INT(size_of(at("old.json")), 3);
    /* With --force it is replaced. */
    snprintf(args, sizeof args, "--force -o %s", at("old.json"));
    CHECK_EQ_INT(record(args), 0);
    CHECK(ran());
    CHECK(size_of(at("old.json")) > 3);

    /* A replaced trace keeps its mode; a 250-byte name works (written and
     * replaced): record's merged trace goes through the writer's sink. */
    CHECK_OK(chmod(at("old.json"), 0640));
    snprintf(args, sizeof args, "--force -o %s", at("old.json"));
    CHECK_EQ_INT(record(args), 0);
    struct stat om;
    CHECK(stat(at("old.json"), &om) == 0 && (om.st_mode & 07777) == 0640);
    char longname[251];
    memset(longname, 'n', 245);
    memcpy(longname + 245, ".json", 6);
    for (int pass = 0; pass < 2; pass++) {
        snprintf(args, sizeof args, "--force -o %s", at(longname));
        CHECK_EQ_INT(record(args), 0);
        CHECK(size_of(at(longname)) > 3);
    }

    /* A %pid% name is checked once the pid is known (it never exists). */
    snprintf(args, sizeof args, "-o %s/p_%%pid%%.json", dir);
    CHECK_EQ_INT(record(args), 0);
    CHECK(ran());

    /* A read-only directory (root may write anywhere: not checked). */
    if (geteuid() != 0) {
        CHECK_OK(mkdir(at("ro"), 0555));
        snprintf(args, sizeof args, "-o %s/ro/t.json", dir);
        CHECK_EQ_INT(record(args), 2);
        CHECK(!ran());
        CHECK(err_has("ro", "Permission denied"));
        rmdir(at("ro"));
    }

    /* /dev/null: no --force needed, written in place, reported written. */
    CHECK_EQ_INT(record("-o /dev/null"), 0);
    CHECK(ran());
    CHECK(err_has("wrote /dev/null", NULL));
    struct stat st;
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));

    char cmd[800];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ_INT(system(cmd), 0);
    return check_done();
}
