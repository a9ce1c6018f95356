/* SPDX-License-Identifier: MIT */
/* actrace record: not implemented yet. */
#include <stdio.h>

#include "cli.h"

int act_cmd_record(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "actrace record: not implemented yet\n");
    return 1;
}
