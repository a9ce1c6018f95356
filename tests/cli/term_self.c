/* SPDX-License-Identifier: MIT */
/* Test helper: records a span through the API, then dies of SIGTERM. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <unistd.h>

#include "actrace/actrace.h"

int main(void)
{
    act_span_begin(ACT_CPU_OP, "before the signal");
    act_span_end();
    kill(getpid(), SIGTERM);
    pause();
    return 0;
}
