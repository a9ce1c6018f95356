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

/* An option of a subcommand: "--name" (or its alias) sets *set to 1, or,
 * with @p value, takes a value ("--name V", "--name=V", or for a one-letter
 * alias "-o V" and "-oV") into *value. An array of them ends with a NULL
 * name. */
typedef struct act_cli_opt {
    const char *name, *alias;
    int *set;
    const char **value;
} act_cli_opt;

/* Parse GNU style (cli_args.c): options anywhere among the operands, "--"
 * ending them ("-" alone is an operand: standard input), "-h"/"--help"
 * printing @p usage. The operands, in order, go to @p operands (room for
 * argc of them) and their count to *noperands; argv[0] is skipped. Returns
 * 0; 1 after printing help (exit 0); 2 after printing a usage error (an
 * unknown option, a missing value; exit 2). */
int act_cli_parse(const char *cmd, int argc, char **argv, const act_cli_opt *opts,
                  void (*usage)(FILE *), const char **operands, int *noperands);

/* Parse "[FLAGS] [--] FILE", flags anywhere (act_cli_parse). Returns 0 with *file set; 1 after
 * printing help (exit 0); 2 after printing a usage error (exit 2). @p flags
 * ends with a NULL name. */
int act_cli_file_args(const char *cmd, int argc, char **argv,
                      const act_cli_flag *flags, void (*usage)(FILE *),
                      const char **file);

#endif
