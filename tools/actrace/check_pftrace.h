/* SPDX-License-Identifier: MIT */
/* actrace check for Perfetto protobuf traces (check_pftrace.c). */
#ifndef ACT_CLI_CHECK_PFTRACE_H
#define ACT_CLI_CHECK_PFTRACE_H

/** 1 when @p path names a Perfetto trace (.pftrace[.gz], .perfetto-trace[.gz]). */
int act_cli_is_pftrace(const char *path);

/** Check @p file ("-": standard input); the exit status of actrace check.
 *  @p quiet 1: only the summary line; 2: nothing on standard output. */
int act_cli_check_pftrace(const char *file, int quiet);

#endif
