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
    static int quiet;
    if (!quiet) {
        act_log_set_level(ACT_LOG_OFF);
        quiet = 1;
    }
    act_session_opts o;
    act_session_opts_init(&o);
    o.config_text = "MAX_BUFFER_SIZE_MB = 2\nBUFFER_PREALLOC_MB = 0\n";
    o.config_text_len = strlen(o.config_text);
    act_session *s = NULL;
    if (act_session_create(&o, &s) != 0 || act_session_start(s) != 0) {
        act_session_destroy(s);
        return 0;
    }
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
