/* SPDX-License-Identifier: MIT */
/* actrace: record, inspect and check traces (DESIGN.md section 8). */
#include <stdio.h>
#include <string.h>

#include "actrace/actrace.h"
#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: actrace COMMAND [ARGS]\n"
            "\n"
            "  record [-o FILE] [-c CONFIG] [--plugin PATH]... [--force] -- CMD [ARGS]\n"
            "                         run CMD and write its trace\n"
            "  summary [--json] FILE  summarise a trace (actrace's or Kineto's)\n"
            "  report [-o OUT.html] [--chartjs FILE] TRACE|DIR\n"
            "                         one self-contained HTML page (charts, offline)\n"
            "  check [--strict] [--quiet] FILE\n"
            "                         validate a trace's structure (JSON or .pftrace)\n"
            "  convert IN OUT.pftrace convert a JSON trace to Perfetto's protobuf\n"
            "  merge [-o OUT] [--force] TRACE...\n"
            "                         merge rank traces onto one timeline\n"
            "  types [--json] [--plugin PATH]...\n"
            "                         list the activity types\n"
            "  config check FILE      validate a config, print the effective one\n"
            "  trigger [--serve] [--pid PID]... [--duration-ms MS | --iterations N] ...\n"
            "                         ask running processes for a trace (dynolog's way)\n"
            "  version                print the version\n"
            "\n"
            "Options may come before or after a command's files; -- ends them (record:\n"
            "everything from CMD on is the program's).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "types") == 0)
        return act_cmd_types(argc - 1, argv + 1);
    if (strcmp(cmd, "config") == 0)
        return act_cmd_config(argc - 1, argv + 1);
    if (strcmp(cmd, "record") == 0)
        return act_cmd_record(argc - 1, argv + 1);
    if (strcmp(cmd, "summary") == 0)
        return act_cmd_summary(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0)
        return act_cmd_report(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0)
        return act_cmd_check(argc - 1, argv + 1);
    if (strcmp(cmd, "convert") == 0)
        return act_cmd_convert(argc - 1, argv + 1);
    if (strcmp(cmd, "merge") == 0)
        return act_cmd_merge(argc - 1, argv + 1);
    if (strcmp(cmd, "trigger") == 0)
        return act_cmd_trigger(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("actrace %s\n", act_version());
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 ||
        strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "actrace: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
