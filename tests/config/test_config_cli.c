/* SPDX-License-Identifier: MIT */
/*
 * `actrace config check [--strict] FILE`: exit status and exact output.
 * Runs the installed-layout binary from tests/config/data (so FILE names
 * are short and stable in the output) and compares stdout and stderr with
 * the golden files next to each config.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"

#define CLI ACT_BINARY_DIR "/bin/actrace"
#define DATA ACT_SOURCE_DIR "/tests/config/data"
#define OUT ACT_BINARY_DIR "/tests/config_cli.stdout"
#define ERR ACT_BINARY_DIR "/tests/config_cli.stderr"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Compare a captured stream with a golden file ("" when @p golden is
 * NULL: nothing may be printed). */
static void expect_file(const char *what, const char *captured,
                        const char *golden)
{
    char *got = slurp(captured);
    char *want = NULL;
    if (golden) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", DATA, golden);
        want = slurp(path);
        CHECK(want != NULL);
    }
    CHECK(got != NULL);
    if (got && strcmp(got, want ? want : "") != 0) {
        fprintf(stderr, "%s differs from %s:\n--- got ---\n%s--- want ---\n%s",
                what, golden ? golden : "(nothing)", got, want ? want : "");
        check_result_(0);
    }
    free(got);
    free(want);
}

static void run_case(const char *args, int status, const char *out_golden,
                     const char *err_golden)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' config check %s >'%s' 2>'%s'",
             DATA, CLI, args, OUT, ERR);
    int st = system(cmd);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (code != status)
        fprintf(stderr, "actrace config check %s: exit %d, want %d\n", args,
                code, status);
    CHECK_INT(code, status);
    expect_file("stdout", OUT, out_golden);
    expect_file("stderr", ERR, err_golden);
}

int main(void)
{
    /* Valid configs: the effective configuration, exit 0. */
    run_case("kineto.conf", 0, "kineto.out", NULL);
    run_case("crlf.conf", 0, "crlf.out", NULL);
    run_case("--strict kineto.conf", 0, "kineto.out", NULL);
    /* Unknown keys: a warning with the position, or an error in strict
     * mode. */
    run_case("unknown.conf", 0, "unknown.out", "unknown.err");
    run_case("--strict unknown.conf", 2, NULL, "unknown-strict.err");
    /* Every error in the file, each with its position; exit 2. */
    run_case("errors.conf", 2, NULL, "errors.err");
    /* Reading stdin. */
    run_case("- < crlf.conf", 0, "crlf.out", NULL);
    /* Usage and I/O errors. */
    run_case("", 2, NULL, "usage.err");
    run_case("--bogus kineto.conf", 2, NULL, "bogus.err");
    run_case("no-such-file.conf", 2, NULL, "missing.err");
    return check_exit();
}
