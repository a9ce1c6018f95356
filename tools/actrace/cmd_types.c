/* SPDX-License-Identifier: MIT */
/* actrace types: not implemented yet. */
#include <stdio.h>

#include "cli.h"

int act_cmd_types(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "actrace types: not implemented yet\n");
    return 1;
}
