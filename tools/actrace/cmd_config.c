/* SPDX-License-Identifier: MIT */
/*
 * actrace config check [--strict] FILE: parse FILE on top of the defaults.
 * Valid: print the effective configuration (one canonical KEY=VALUE per
 * line) and exit 0. Invalid: print every error as
 * "FILE:LINE:COLUMN: error: MESSAGE" on stderr and exit 2. Unknown keys are
 * warnings ("FILE:LINE:COLUMN: warning: ...") unless --strict. FILE "-"
 * reads standard input.
 *
 * --chip CHIP also checks PM_COUNTER_METRICS (or Kineto's
 * CUPTI_PM_SAMPLING_METRICS) for that NVIDIA chip ("GH100") with
 * actrace-cupti-metrics, built with the cupti plugin next to this binary:
 * unknown metrics and sets needing more than one pass are errors (exit 2).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actrace/actrace.h"
#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: actrace config check [--strict] [--chip CHIP] FILE\n");
}

/* Runs actrace-cupti-metrics --chip CHIP --check METRICS (the binary next
 * to this one, else from PATH). Returns 0 if the metrics are fine for the
 * chip, 2 otherwise (its message is on stderr). */
static int check_pm_metrics(const char *file, const char *chip,
                            const char *metrics)
{
    char self[PATH_MAX], tool[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    snprintf(tool, sizeof tool, "actrace-cupti-metrics");
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(tool, sizeof tool, "%s/actrace-cupti-metrics", self);
            if (access(tool, X_OK) != 0)
                snprintf(tool, sizeof tool, "actrace-cupti-metrics");
        }
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(2, 1); /* its report goes with the diagnostics */
        execlp(tool, tool, "--chip", chip, "--check", metrics, (char *)NULL);
        fprintf(stderr, "%s: error: --chip needs actrace-cupti-metrics "
                        "(built with the cupti plugin): %s\n",
                file, strerror(errno));
        _exit(2);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return 2;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    fprintf(stderr, "%s: error: PM_COUNTER_METRICS: not valid for chip %s\n",
            file, chip);
    return 2;
}

static void diag(const char *file, const char *kind, const act_parse_error *e)
{
    if (e->line > 0)
        fprintf(stderr, "%s:%d:%d: %s: %s\n", file, e->line, e->column, kind,
                e->message);
    else
        fprintf(stderr, "%s: %s: %s\n", file, kind, e->message);
}

static void on_error(void *user, const act_parse_error *e)
{
    diag(user, "error", e);
}

static void on_warning(void *user, const act_parse_error *e)
{
    diag(user, "warning", e);
}

/* The library's limit for a config file (act_config_parse_file,
 * docs/config.md); `config check` applies the same one. */
#define CONFIG_FILE_MAX ((size_t)16 << 20)

/* Whole file (or stdin for "-") into a heap buffer; NULL and errno set on
 * failure (EFBIG: larger than CONFIG_FILE_MAX). */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    int err = 0;
    for (;;) {
        if (n > CONFIG_FILE_MAX) {
            err = EFBIG;
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            if (cap > CONFIG_FILE_MAX + 1)
                cap = CONFIG_FILE_MAX + 1;
            char *nb = realloc(buf, cap);
            if (!nb) {
                err = ENOMEM;
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                err = errno ? errno : EIO;
            break;
        }
    }
    if (f != stdin)
        fclose(f);
    if (err) {
        free(buf);
        errno = err;
        return NULL;
    }
    *len = n;
    return buf;
}

static int config_check(int argc, char **argv)
{
    act_config_parse_opts opts;
    act_config_parse_opts_init(&opts);
    opts.on_error = on_error;
    opts.on_warning = on_warning;
    const char *file = NULL, *chip = NULL;
    int strict = 0;
    const act_cli_opt o[] = {{"--strict", NULL, &strict, NULL},
                             {"--chip", NULL, NULL, &chip},
                             {NULL, NULL, NULL, NULL}};
    const char **ops = calloc((size_t)argc + 1, sizeof *ops);
    int n = 0;
    if (!ops)
        return 1;
    int rc = act_cli_parse("config check", argc, argv, o, usage, ops, &n);
    if (rc == 0 && n != 1) {
        if (n > 1)
            fprintf(stderr, "actrace config check: one FILE only\n");
        usage(stderr);
        rc = 2;
    }
    file = n > 0 ? ops[0] : NULL;
    free(ops);
    if (rc)
        return rc == 1 ? 0 : 2;
    if (strict)
        opts.flags |= ACT_CONFIG_STRICT;
    size_t len = 0;
    char *text = slurp(file, &len);
    if (!text) {
        if (errno == EFBIG)
            fprintf(stderr, "%s: error: larger than %zu bytes (16 MiB, the "
                    "limit for a config)\n", file, CONFIG_FILE_MAX);
        else
            fprintf(stderr, "%s: error: cannot read: %s\n", file,
                    strerror(errno));
        return 2;
    }
    opts.user = (void *)file;
    act_config *cfg = NULL;
    act_parse_error err;
    rc = act_config_parse(text, len, &opts, &cfg, &err);
    free(text);
    if (rc != 0) {
        /* Errors were printed by on_error as they were found; only a
         * failure without a position (out of memory) is left. */
        if (err.line == 0)
            diag(file, "error", &err);
        return 2;
    }
    size_t need = act_config_format(cfg, NULL, 0);
    char *out = malloc(need + 1);
    if (!out) {
        act_config_destroy(cfg);
        fprintf(stderr, "actrace config check: out of memory\n");
        return 1;
    }
    act_config_format(cfg, out, need + 1);
    fwrite(out, 1, need, stdout);
    free(out);
    int pm_rc = 0;
    if (chip) {
        const char *m = act_config_get_str(cfg, "PM_COUNTER_METRICS");
        if (!m || !*m)
            m = act_config_get_str(cfg, "CUPTI_PM_SAMPLING_METRICS");
        if (m && *m)
            pm_rc = check_pm_metrics(file, chip, m);
    }
    act_config_destroy(cfg);
    if (fflush(stdout) != 0)
        return 1;
    return pm_rc;
}

int act_cmd_config(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "check") == 0)
        return config_check(argc - 1, argv + 1);
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 ||
                      strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    return 2;
}
