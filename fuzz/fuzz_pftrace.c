/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the Perfetto writer's inputs: the recording program of
 * record_program.h (names, keys and string values of any bytes, args of
 * every kind, times near and far, 64-bit streams), the session written as
 * .pftrace, which must pass actrace check's rules (tools/actrace/
 * check_pftrace.c, compiled in): framing, sequences, iids, tracks, nesting,
 * counters, flows, clocks.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actrace/actrace.h"

#include "check_pftrace.h"
#include "record_program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    act_session *s = fuzz_session();
    if (!s)
        return 0;
    run_program(data, size);
    char path[] = "/tmp/act_fuzz_pftrace_XXXXXX.pftrace";
    int fd = mkstemps(path, 8);
    if (fd < 0)
        abort();
    close(fd);
    if (act_session_write(s, path) != 0)
        abort();
    if (act_cli_check_pftrace(path, 2) != 0) {
        act_cli_check_pftrace(path, 0); /* say why */
        abort();
    }
    unlink(path);
    act_session_destroy(s);
    return 0;
}
