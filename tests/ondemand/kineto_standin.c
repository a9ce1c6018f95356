/* SPDX-License-Identifier: MIT */
/*
 * Stands in for a library with Kineto in it (torch's libtorch_cpu.so
 * defines libkineto_init): od_prog dlopens it (RTLD_LOCAL, as Python loads
 * extension modules) to show that libactrace's poller leaves on-demand to
 * Kineto where Kineto polls (KINETO_USE_DAEMON). Its name holds "kineto",
 * as libactrace looks for. Nothing here polls.
 */
void libkineto_init(int cpu_only, int log_on_error);

void libkineto_init(int cpu_only, int log_on_error)
{
    (void)cpu_only;
    (void)log_on_error;
}
