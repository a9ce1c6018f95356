/* SPDX-License-Identifier: MIT */
/* Subcommands of the actrace command; each lives in cmd_<name>.c. Each
 * returns the process exit status: 0 ok, 1 failure, 2 usage or input error. */
#ifndef ACT_CLI_H
#define ACT_CLI_H

int act_cmd_types(int argc, char **argv);
int act_cmd_config(int argc, char **argv);
int act_cmd_record(int argc, char **argv);
int act_cmd_summary(int argc, char **argv);
int act_cmd_check(int argc, char **argv);

#endif
