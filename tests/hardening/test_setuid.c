/* SPDX-License-Identifier: MIT */
/*
 * A setuid-root program linked with libactrace must ignore the ACTRACE_*
 * variables (secure_getenv): otherwise any user could make it replace a
 * root-owned file with a trace (ACTRACE_RECORD_OUTPUT), parse a root-only
 * file and print its first line (ACTRACE_CONFIG), or load a library
 * (ACTRACE_PLUGINS). Runs only as root (it needs chown and setuid); the
 * same probe run without the setuid bit shows that the variables do work
 * in a normal process, so the check cannot pass by accident.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define PROBE ACT_BINARY_DIR "/tests/act_suid_probe"
#define TP_OK ACT_BINARY_DIR "/tests/plugin/plugins/tp_ok.so"

static char dir[512];

static int copy_file(const char *from, const char *to, mode_t mode)
{
    char buf[65536];
    int in = open(from, O_RDONLY);
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0700);
    ssize_t n;
    int ok = in >= 0 && out >= 0;
    while (ok && (n = read(in, buf, sizeof buf)) > 0)
        ok = write(out, buf, (size_t)n) == n;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return ok && chown(to, 0, 0) == 0 && chmod(to, mode) == 0 ? 0 : -1;
}

static void put_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    CHECK_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
    CHECK_OK(chmod(path, mode));
}

/* Run @p prog as @p uid (65534: nobody) with only the ACTRACE_* variables
 * below in its environment; its stdout and stderr go to @p log. */
static int run_as(const char *prog, uid_t uid, int with_cfg,
                  const char *trace, const char *log)
{
    char e_out[700], e_cfg[700], e_plug[700];
    snprintf(e_out, sizeof e_out, "ACTRACE_RECORD_OUTPUT=%s", trace);
    snprintf(e_cfg, sizeof e_cfg, "ACTRACE_CONFIG=%s/secret.conf", dir);
    snprintf(e_plug, sizeof e_plug, "ACTRACE_PLUGINS=%s", TP_OK);
    char *env[] = {e_out, e_plug, "ACTRACE_LOG=debug",
                   "ACTRACE_PLUGIN_DIR=/nonexistent", e_cfg, NULL};
    if (!with_cfg)
        env[4] = NULL;
    char *argv[] = {(char *)prog, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            _exit(120);
        dup2(fd, 1);
        dup2(fd, 2);
        if (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0)
            _exit(121);
        execve(prog, argv, env);
        _exit(122);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *path)
{
    static char buf[65536];
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* 1 if user nobody can search @p path (execve checks every directory on
 * the way with the caller's credentials, before the setuid bit applies). */
static int nobody_can_reach(const char *path)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setgid(65534) != 0 ||
            setuid(65534) != 0)
            _exit(2);
        _exit(access(path, X_OK) == 0 ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The probe's directory: one that nobody can reach, wherever the build
 * tree is (a clone under /root or a mktemp -d is 0700 all the way). */
static int make_dir(void)
{
    static const char *const bases[] = {ACT_BINARY_DIR "/tests", "/tmp",
                                        "/var/tmp", "/dev/shm"};
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        snprintf(dir, sizeof dir, "%s/hardening-suid.XXXXXX", bases[i]);
        if (!mkdtemp(dir))
            continue;
        if (chmod(dir, 0755) == 0 && nobody_can_reach(dir))
            return 0;
        rmdir(dir);
    }
    return -1;
}

int main(void)
{
    if (geteuid() != 0)
        CHECK_SKIP("not root: the setuid case needs root to chown and "
                   "setuid a copy of the probe");
    if (make_dir() != 0)
        CHECK_SKIP("no directory that user nobody can reach (the build "
                   "tree, /tmp, /var/tmp and /dev/shm all refuse it)");
    char probe[600], rootonly[600], trace[700], log[600], cfg[600];
    snprintf(probe, sizeof probe, "%s/probe", dir);
    snprintf(rootonly, sizeof rootonly, "%s/rootonly", dir);
    snprintf(trace, sizeof trace, "%s/trace.json", rootonly);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    snprintf(cfg, sizeof cfg, "%s/secret.conf", dir);
    CHECK_OK(mkdir(rootonly, 0755)); /* nobody cannot create files here */
    /* A root-only file whose first line would be echoed by a parse error. */
    put_file(cfg, "SECRET!LINE = 1\n", 0600);

    /* Control: without the setuid bit, run as root, the variables work:
     * the config is parsed (its first line is echoed in the error), and
     * without it the trace is written and the plugin loaded. */
    CHECK_FATAL(copy_file(PROBE, probe, 0755) == 0);
    CHECK_EQ_INT(run_as(probe, 0, 1, trace, log), 0);
    const char *out = slurp(log);
    int control_ok = CHECK(strstr(out, "SECRET!LINE") != NULL);
    CHECK_EQ_INT(run_as(probe, 0, 0, trace, log), 0);
    out = slurp(log);
    struct stat st;
    control_ok &= CHECK(stat(trace, &st) == 0);
    control_ok &= CHECK(strstr(out, "loaded 'tp_ok'") != NULL);
    if (!control_ok)
        fprintf(stderr, "control output:\n%s", out);
    unlink(trace);

    /* The same binary setuid root, run by nobody: nothing of the above. */
    CHECK_FATAL(copy_file(PROBE, probe, 04755) == 0);
    for (int with_cfg = 1; with_cfg >= 0; with_cfg--) {
        CHECK_EQ_INT(run_as(probe, 65534, with_cfg, trace, log), 0);
        out = slurp(log);
        if (!strstr(out, "euid=0 uid=65534")) {
            fprintf(stderr, "probe output:\n%s", out);
            if (strstr(out, "euid=65534"))
                CHECK_SKIP("the setuid bit had no effect (nosuid mount?)");
            CHECK(0);
        }
        int failed = (int)check_failed_;
        CHECK(stat(trace, &st) != 0 && errno == ENOENT);
        CHECK(strstr(out, "SECRET") == NULL);
        CHECK(strstr(out, "tp_ok") == NULL);
        CHECK(strstr(out, "debug") == NULL);
        if ((int)check_failed_ != failed)
            fprintf(stderr, "setuid probe output (config %d):\n%s",
                    with_cfg, out);
        unlink(trace);
    }
    unlink(probe);
    unlink(log);
    unlink(cfg);
    rmdir(rootonly);
    rmdir(dir);
    return check_done();
}
