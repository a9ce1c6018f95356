/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the whole recording path: the input is a program of recording calls
 * (span begin/end, complete spans, instants, counters, args of every kind,
 * correlation push/pop, device spans) whose names, keys, values and times
 * come from the input bytes. The session is written to a file, which must
 * be one valid JSON document (checked by a small strict validator below),
 * with no negative ts and one device track per 64-bit stream id.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actrace/actrace.h"

#include "json_check.h"

#include "record_program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    act_session *s = fuzz_session();
    if (!s)
        return 0;
    run_program(data, size);
    char path[] = "/tmp/act_fuzz_trace_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    close(fd);
    if (act_session_write(s, path) != 0)
        abort();
    check_trace_lines(path);
    check_trace_file(path);
    act_session_destroy(s);
    return 0;
}
