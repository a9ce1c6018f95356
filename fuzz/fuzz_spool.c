/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the spool's rebuild (src/engine/spool.c): what `actrace record`
 * reads back from a process that died. The input is a spool pair: a
 * little-endian u32 N, then N bytes of BASE.meta (the log), then the rest
 * as BASE.spool (chunk memory). Both are written to files and rebuilt into
 * a trace; a program may have scribbled over its spool, so the rebuild
 * must never crash, hang or leak, and whatever it writes must be valid
 * JSON holding no negative timestamp (json_check.h). The log alone is
 * then read as a light log (no BASE.spool) by act__spool_life_read, the
 * reader record's merge uses: what it accepts is bounded (a NUL-ended
 * name and backend, a positive pid, an end not before the start).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/spool.h"
#include "session/rebuild.h"

#include "json_check.h"

static int put(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = n ? fwrite(p, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    uint32_t n;
    memcpy(&n, data, 4);
    data += 4;
    size -= 4;
    if (n > size)
        n = (uint32_t)size;
    char base[] = "/tmp/act_fuzz_spool_XXXXXX";
    int fd = mkstemp(base);
    if (fd < 0)
        abort();
    close(fd);
    char meta[64], spool[64], out[64];
    snprintf(meta, sizeof meta, "%s.meta", base);
    snprintf(spool, sizeof spool, "%s.spool", base);
    snprintf(out, sizeof out, "%s.json", base);
    if (put(meta, data, n) != 0 || put(spool, data + n, size - n) != 0)
        abort();
    char err[256];
    int rc = act__spool_rebuild(base, out, 0, err, sizeof err);
    if (rc == 0) {
        check_trace_lines(out);
        check_trace_file(out); /* removes it */
    } else if (access(out, F_OK) == 0) {
        abort(); /* a failed rebuild leaves no trace behind */
    } else if (!err[0]) {
        abort(); /* and says why */
    }
    unlink(spool);
    act__spool_life l;
    err[0] = '\0';
    if (act__spool_life_read(base, &l, err, sizeof err) == 0) {
        if (l.name_len >= sizeof l.name || strlen(l.name) != l.name_len ||
            strnlen(l.backend, sizeof l.backend) == sizeof l.backend ||
            l.stop_mono < l.start_mono || l.pid <= 0)
            abort();
    } else if (!err[0]) {
        abort();
    }
    unlink(meta);
    unlink(base);
    return 0;
}
