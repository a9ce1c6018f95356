/* SPDX-License-Identifier: MIT */
/*
 * actrace config check [--strict] FILE: parse FILE on top of the defaults.
 * Valid: print the effective configuration (one canonical KEY=VALUE per
 * line) and exit 0. Invalid: print every error as
 * "FILE:LINE:COLUMN: error: MESSAGE" on stderr and exit 2. Unknown keys are
 * warnings ("FILE:LINE:COLUMN: warning: ...") unless --strict. FILE "-"
 * reads standard input.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actrace/actrace.h"
#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: actrace config check [--strict] FILE\n");
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
    const char *file = NULL;
    int strict = 0;
    const act_cli_flag flags[] = {{"--strict", NULL, &strict}, {NULL, NULL, NULL}};
    int rc = act_cli_file_args("config check", argc, argv, flags, usage, &file);
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
    act_config_destroy(cfg);
    return fflush(stdout) == 0 ? 0 : 1;
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
