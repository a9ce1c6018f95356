/* SPDX-License-Identifier: MIT */
/*
 * Fuzz record's shared light log (tools/actrace/record_light.c): the
 * frames every process under `actrace record` that records nothing
 * appends to light.log, which a traced program can scribble over. The
 * input is the file. It is loaded as record loads it (frames checked,
 * damaged ones skipped, joined per process) and each process's records
 * are read as record's merge reads them (act__spool_life_parse). Neither
 * may crash, hang or leak; what they accept is bounded: a base of digits
 * and dashes, NUL-ended, entries sorted and distinct, a NUL-ended name
 * and backend, a positive pid, an end not before the start.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/spool.h"
#include "record_light.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[] = "/tmp/act_fuzz_light_XXXXXX";
    if (!mkdtemp(dir))
        abort();
    char path[64];
    snprintf(path, sizeof path, "%s/%s", dir, ACT__LIGHT_LOG);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    act__light_set ls;
    act__light_load(dir, &ls);
    for (size_t i = 0; i < ls.n; i++) {
        const act__light_ent *e = &ls.v[i];
        size_t bl = strnlen(e->base, sizeof e->base);
        if (!bl || bl == sizeof e->base || strspn(e->base, "0123456789-") != bl)
            abort();
        if (i && strcmp(ls.v[i - 1].base, e->base) >= 0)
            abort(); /* sorted, one entry per process */
        if (!e->recs || e->dropped)
            abort();
        act__spool_life l;
        char err[256] = "";
        if (act__spool_life_parse(e->recs, e->len, "fuzz", &l, err, sizeof err) == 0) {
            if (l.name_len >= sizeof l.name || strlen(l.name) != l.name_len ||
                strnlen(l.backend, sizeof l.backend) == sizeof l.backend ||
                l.stop_mono < l.start_mono || l.pid <= 0)
                abort();
        } else if (!err[0]) {
            abort(); /* a refusal says why */
        }
    }
    act__light_free(&ls);
    unlink(path);
    rmdir(dir);
    return 0;
}
