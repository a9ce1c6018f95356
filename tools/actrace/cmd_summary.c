/* SPDX-License-Identifier: MIT */
/* actrace summary: not implemented yet. */
#include <stdio.h>

#include "cli.h"

int act_cmd_summary(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "actrace summary: not implemented yet\n");
    return 1;
}
