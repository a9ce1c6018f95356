/* SPDX-License-Identifier: MIT */
/* The "[FLAGS] FILE" argument shape shared by check, summary and config. */
#include <string.h>

#include "cli.h"

int act_cli_file_args(const char *cmd, int argc, char **argv,
                      const act_cli_flag *flags, void (*usage)(FILE *),
                      const char **file)
{
    *file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const act_cli_flag *f = flags;
        for (; f && f->name; f++)
            if (strcmp(a, f->name) == 0 || (f->alias && strcmp(a, f->alias) == 0))
                break;
        if (f && f->name) {
            *f->set = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(a, "--") == 0 && i + 1 < argc && !*file) {
            *file = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "actrace %s: unknown option '%s'\n", cmd, a);
            usage(stderr);
            return 2;
        } else if (*file) {
            fprintf(stderr, "actrace %s: one FILE only\n", cmd);
            usage(stderr);
            return 2;
        } else {
            *file = a;
        }
    }
    if (!*file) {
        usage(stderr);
        return 2;
    }
    return 0;
}
