/* SPDX-License-Identifier: MIT */
/* The argument shape of the subcommands that take files: options anywhere
 * (GNU style), "--" ending them. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "trace_read.h"

/* The option of @p opts that @p a names: "--name", its alias, or (an option
 * with a value) "--name=V" / "-oV"; *val gets V then. NULL: none. */
static const act_cli_opt *find_opt(const act_cli_opt *opts, const char *a, const char **val)
{
    *val = NULL;
    for (const act_cli_opt *o = opts; o && o->name; o++) {
        if (strcmp(a, o->name) == 0 || (o->alias && strcmp(a, o->alias) == 0))
            return o;
        if (!o->value)
            continue;
        size_t n = strlen(o->name);
        if (strncmp(a, o->name, n) == 0 && a[n] == '=') {
            *val = a + n + 1;
            return o;
        }
        /* A one-letter alias takes its value attached ("-oFILE"). */
        if (o->alias && o->alias[0] == '-' && o->alias[1] && o->alias[1] != '-' &&
            !o->alias[2] && strncmp(a, o->alias, 2) == 0 && a[2]) {
            *val = a + 2;
            return o;
        }
    }
    return NULL;
}

int act_cli_parse(const char *cmd, int argc, char **argv, const act_cli_opt *opts,
                  void (*usage)(FILE *), const char **operands, int *noperands)
{
    int n = 0, dashdash = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (dashdash || a[0] != '-' || a[1] == '\0') { /* "-": standard input */
            operands[n++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            dashdash = 1;
            continue;
        }
        const char *val;
        const act_cli_opt *o = find_opt(opts, a, &val);
        if (!o && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            usage(stdout);
            return 1;
        }
        if (!o) {
            fprintf(stderr, "actrace %s: unknown option '%s'\n", cmd, a);
            usage(stderr);
            return 2;
        }
        if (!o->value) {
            if (val) {
                fprintf(stderr, "actrace %s: option '%s' takes no value\n", cmd, o->name);
                usage(stderr);
                return 2;
            }
            *o->set = 1;
            continue;
        }
        if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "actrace %s: option '%s' needs a value\n", cmd, a);
                usage(stderr);
                return 2;
            }
            val = argv[++i];
        }
        *o->value = val;
    }
    *noperands = n;
    return 0;
}

int act_cli_file_args(const char *cmd, int argc, char **argv,
                      const act_cli_flag *flags, void (*usage)(FILE *),
                      const char **file)
{
    *file = NULL;
    act_cli_opt opts[32];
    size_t k = 0;
    for (const act_cli_flag *f = flags; f && f->name && k + 1 < sizeof opts / sizeof *opts; f++)
        opts[k++] = (act_cli_opt){f->name, f->alias, f->set, NULL};
    opts[k] = (act_cli_opt){NULL, NULL, NULL, NULL};
    const char **ops = act_cli_xcalloc((size_t)argc + 1, sizeof *ops);
    int n = 0;
    int rc = act_cli_parse(cmd, argc, argv, opts, usage, ops, &n);
    if (rc == 0 && n > 1) {
        fprintf(stderr, "actrace %s: one FILE only\n", cmd);
        usage(stderr);
        rc = 2;
    } else if (rc == 0 && n == 0) {
        usage(stderr);
        rc = 2;
    } else if (rc == 0) {
        *file = ops[0];
    }
    free(ops);
    return rc;
}
