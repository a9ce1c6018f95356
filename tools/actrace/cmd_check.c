/* SPDX-License-Identifier: MIT */
/* actrace check: not implemented yet. */
#include <stdio.h>

#include "cli.h"

int act_cmd_check(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "actrace check: not implemented yet\n");
    return 1;
}
