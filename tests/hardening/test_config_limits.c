/* SPDX-License-Identifier: MIT */
/*
 * Config limits: a config file is read up to 16 MiB and refused beyond with
 * an error naming the file (ACTRACE_CONFIG=/dev/zero fails at once instead
 * of eating memory), and parsing, formatting and `actrace config check`
 * are linear in the number of keys (50,000 keys complete in well under
 * the test's timeout; they took minutes when lookups were linear scans).
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <actrace/actrace.h>

#include "check.h"

#define NKEYS 50000
#define ACTRACE_BIN ACT_BINARY_DIR "/bin/actrace"
#define SCRATCH ACT_BINARY_DIR "/tests/hardening-config"

static void test_dev_zero(void)
{
    setenv("ACTRACE_CONFIG", "/dev/zero", 1);
    act_config *cfg = NULL;
    act_parse_error err;
    int rc = act_config_load_env(NULL, &cfg, &err);
    CHECK_EQ_INT(rc, ACT_ELIMIT);
    CHECK(cfg == NULL);
    CHECK(strstr(err.message, "/dev/zero") != NULL);
    CHECK(strstr(err.message, "larger than 16777216 bytes") != NULL);
    unsetenv("ACTRACE_CONFIG");

    /* The CLI refuses it the same way, naming the file. */
    FILE *p = popen(ACTRACE_BIN " config check /dev/zero 2>&1", "r");
    CHECK_FATAL(p != NULL);
    char line[512] = "";
    if (!fgets(line, sizeof line, p))
        line[0] = '\0';
    int st = pclose(p);
    CHECK_EQ_INT(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 2);
    CHECK(strstr(line, "/dev/zero: error: larger than") != NULL);
}

/* A file of exactly the limit is read; one byte more is refused. */
static void test_limit_edge(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/edge.conf", SCRATCH);
    size_t lim = (size_t)16 << 20;
    for (int extra = 0; extra <= 1; extra++) {
        FILE *f = fopen(path, "w");
        CHECK_FATAL(f != NULL);
        fputs("PLUGINS = x\n", f);
        /* The rest is one long comment line. */
        for (size_t i = 12; i < lim - 1 + (size_t)extra; i++)
            fputc(i == 12 ? '#' : 'c', f);
        fputc('\n', f);
        fclose(f);
        act_config *cfg = NULL;
        act_parse_error err;
        int rc = act_config_parse_file(path, NULL, &cfg, &err);
        if (extra) {
            CHECK_EQ_INT(rc, ACT_ELIMIT);
            CHECK(strstr(err.message, path) != NULL);
        } else {
            CHECK_EQ_INT(rc, 0);
            CHECK_EQ_STR(act_config_get_str(cfg, "PLUGINS"), "x");
        }
        act_config_destroy(cfg);
    }
    unlink(path);
}

static char *many_keys(size_t *len)
{
    size_t cap = (size_t)NKEYS * 40 + 256, n = 0;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    /* In reverse order, so that sorting has work to do. */
    for (int i = NKEYS - 1; i >= 0; i--)
        n += (size_t)snprintf(t + n, cap - n, "USER_KEY_%06d = v%d\n", i, i);
    n += (size_t)snprintf(t + n, cap - n,
                          "PLUGINS = a, b\nUSER_KEY_000007 = again\n");
    *len = n;
    return t;
}

static void quiet(void *user, const act_parse_error *e)
{
    (void)e;
    ++*(int *)user;
}

static void test_many_keys(void)
{
    size_t len = 0;
    char *text = many_keys(&len);
    CHECK_FATAL(text != NULL);
    act_config_parse_opts o;
    act_config_parse_opts_init(&o);
    int warnings = 0;
    o.on_warning = quiet;
    o.user = &warnings;
    act_config *cfg = NULL;
    act_parse_error err;
    CHECK_OK(act_config_parse(text, len, &o, &cfg, &err));
    CHECK_EQ_INT(warnings, NKEYS + 1);
    CHECK_EQ_STR(act_config_get_str(cfg, "USER_KEY_000007"), "again");
    CHECK_EQ_STR(act_config_get_str(cfg, "USER_KEY_049999"), "v49999");
    CHECK(act_config_get_str(cfg, "USER_KEY_050000") == NULL);
    act_config *dup = NULL;
    CHECK_OK(act_config_dup(cfg, &dup));
    CHECK_EQ_STR(act_config_get_str(dup, "USER_KEY_000123"), "v123");
    /* Set again on top: the existing entry changes, no new one. */
    const char more[] = "USER_KEY_000123 = w\n";
    CHECK_OK(act_config_parse(more, sizeof more - 1, &o, &dup, &err));
    CHECK_EQ_STR(act_config_get_str(dup, "USER_KEY_000123"), "w");
    CHECK_EQ_STR(act_config_get_str(cfg, "USER_KEY_000123"), "v123");

    size_t need = act_config_format(dup, NULL, 0);
    char *out = malloc(need + 1);
    CHECK_FATAL(out != NULL);
    CHECK_EQ_INT((long long)act_config_format(dup, out, need + 1),
                 (long long)need);
    /* Every user key once, in order, after the known keys before 'U'. */
    const char *p = strstr(out, "USER_KEY_000000=v0\n");
    CHECK_FATAL(p != NULL);
    int seen = 0, ordered = 1;
    char want[64];
    for (int i = 0; i < NKEYS; i++) {
        snprintf(want, sizeof want, "USER_KEY_%06d=", i);
        if (strncmp(p, want, strlen(want)) != 0) {
            ordered = 0;
            break;
        }
        seen++;
        p = strchr(p, '\n') + 1;
    }
    CHECK(ordered);
    CHECK_EQ_INT(seen, NKEYS);
    CHECK(strstr(out, "\nUSER_KEY_000123=w\n") != NULL);
    CHECK(strstr(out, "\nPLUGINS=a,b\n") != NULL);
    free(out);
    act_config_destroy(dup);
    act_config_destroy(cfg);

    /* `actrace config check` on the same keys as a file. */
    char path[600];
    snprintf(path, sizeof path, "%s/many.conf", SCRATCH);
    FILE *f = fopen(path, "w");
    CHECK_FATAL(f != NULL);
    fwrite(text, 1, len, f);
    fclose(f);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "%s config check %s 2>/dev/null", ACTRACE_BIN,
             path);
    FILE *pp = popen(cmd, "r");
    CHECK_FATAL(pp != NULL);
    char line[256];
    int lines = 0, user = 0;
    while (fgets(line, sizeof line, pp)) {
        lines++;
        user += strncmp(line, "USER_KEY_", 9) == 0;
    }
    int st = pclose(pp);
    CHECK_EQ_INT(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
    CHECK_EQ_INT(user, NKEYS);
    CHECK(lines > NKEYS);
    unlink(path);
    free(text);
}

int main(void)
{
    /* On a build without the limit, /dev/zero would grow until memory
     * runs out: bound the address space and the time instead. */
    struct rlimit rl = {(rlim_t)4 << 30, (rlim_t)4 << 30};
    setrlimit(RLIMIT_AS, &rl);
    alarm(100);
    mkdir(SCRATCH, 0755);
    test_dev_zero();
    test_limit_edge();
    test_many_keys();
    rmdir(SCRATCH);
    return check_done();
}
