/* SPDX-License-Identifier: MIT */
/* Subcommands of the actrace command; each lives in cmd_<name>.c. Each
 * returns the process exit status: 0 ok, 1 failure, 2 usage or input error. */
#ifndef ACT_CLI_H
#define ACT_CLI_H

#include <stdio.h>

int act_cmd_types(int argc, char **argv);
int act_cmd_config(int argc, char **argv);
int act_cmd_record(int argc, char **argv);
int act_cmd_summary(int argc, char **argv);
int act_cmd_report(int argc, char **argv);
int act_cmd_check(int argc, char **argv);
int act_cmd_convert(int argc, char **argv);
int act_cmd_trigger(int argc, char **argv);
int act_cmd_merge(int argc, char **argv);

/* Convert the JSON trace @p in into the Perfetto trace @p out (cmd_convert.c):
 * the exit status of actrace convert; messages on standard error. */
int act_cli_convert(const char *in, const char *out);

/* A boolean flag of a subcommand: "--name" (or its alias) sets *set. */
typedef struct act_cli_flag {
    const char *name, *alias;
    int *set;
} act_cli_flag;

/* Parse "[FLAGS] [--] FILE" (cli_args.c). Returns 0 with *file set; 1 after
 * printing help (exit 0); 2 after printing a usage error (exit 2). @p flags
 * ends with a NULL name. */
int act_cli_file_args(const char *cmd, int argc, char **argv,
                      const act_cli_flag *flags, void (*usage)(FILE *),
                      const char **file);

#endif
