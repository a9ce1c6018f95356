/* SPDX-License-Identifier: MIT */
/*
 * Fuzz `actrace report`'s reading of one trace (tools/actrace/report_json.c,
 * report_collect.c, on summary_collect.c's pass): the input is a trace fed
 * through a memory file. It must never crash, leak or loop, and what it
 * writes for the page must be valid JSON holding no '<' at all (so nothing
 * in a trace can end the page's <script> element).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "report.h"

#include "json_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == SIZE_MAX)
        check_trace_file(""); /* json_check.h's other helper, unused here */
    int fd = memfd_create("fuzz_report", 0);
    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    char *out = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&out, &len);
    if (!m) {
        close(fd);
        return 0;
    }
    char err[600];
    int ok = act_cli_report_trace(path, 0, m, err, sizeof err);
    if (fclose(m) != 0)
        abort();
    if (!ok && !err[0])
        abort(); /* a failure says why */
    if (!valid_json(out, len))
        abort();
    if (memchr(out, '<', len))
        abort();
    free(out);
    close(fd);
    return 0;
}
