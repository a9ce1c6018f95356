/* SPDX-License-Identifier: MIT */
/* actrace config: not implemented yet. */
#include <stdio.h>

#include "cli.h"

int act_cmd_config(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "actrace config: not implemented yet\n");
    return 1;
}
