/* SPDX-License-Identifier: MIT */
/*
 * Fuzz `actrace merge` (tools/actrace/cmd_merge.c, compiled in) with two
 * inputs: the data is cut at its first "\n----\n" into two trace files
 * (JSON or gzip, anything the reader is given), merged with
 * `merge A -o OUT --force B` (options among the operands). The merge
 * either refuses (status 1 or 2, writing nothing) or writes a trace that
 * the trace reader (strict: RFC 8259, UTF-8) takes whole, with every input
 * event once, and an id that was a non-negative integer in an input still
 * one in the output (renumbering never wraps). Dictionary: merge.dict.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "trace_read.h"

#define SEP "\n----\n"

typedef struct counts {
    uint64_t events, negative_ids;
} counts;

static void count_neg(const act__jv *v, uint64_t *neg)
{
    int64_t x;
    if (v && v->type == ACT__J_NUMBER && act__jv_i64(v, &x) && x < 0)
        (*neg)++;
}

/* Events and negative integer ids (args correlation, External id, stream;
 * a flow's id) of trace @p path. 0, or -1 when the reader refuses it. */
static int count_trace(const char *path, counts *c)
{
    memset(c, 0, sizeof *c);
    act_cli_trace t;
    char msg[256];
    if (act_cli_trace_open(&t, path, msg, sizeof msg) != 0)
        return -1;
    act__rd_item it;
    int k;
    while ((k = act__rd_next(t.rd, &it)) > 0) {
        if (k != ACT__RD_EVENT || it.v->type != ACT__J_OBJECT)
            continue;
        c->events++;
        const act__jv *ph = act__jv_get(it.v, "ph");
        if (act__jv_is(ph, "s") || act__jv_is(ph, "t") || act__jv_is(ph, "f"))
            count_neg(act__jv_get(it.v, "id"), &c->negative_ids);
        const act__jv *args = act__jv_get(it.v, "args");
        if (args && args->type == ACT__J_OBJECT) {
            count_neg(act__jv_get(args, "correlation"), &c->negative_ids);
            count_neg(act__jv_get(args, "External id"), &c->negative_ids);
            count_neg(act__jv_get(args, "stream"), &c->negative_ids);
        }
    }
    act_cli_trace_close(&t);
    return k < 0 ? -1 : 0;
}

static void put_file(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
        abort();
}

static char dir[64];

static void cleanup(void)
{
    static const char *const names[] = {"a.json", "b.json", "out.json"};
    char p[96];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        /* In memory where there is a tmpfs: three files per input. */
        strcpy(dir, "/dev/shm/act_fuzz_merge_XXXXXX");
        if (!mkdtemp(dir)) {
            strcpy(dir, "/tmp/act_fuzz_merge_XXXXXX");
            if (!mkdtemp(dir))
                abort();
        }
        atexit(cleanup);
    }
    const uint8_t *cut = size >= 6 ? memmem(data, size, SEP, 6) : NULL;
    size_t na = cut ? (size_t)(cut - data) : size;
    const uint8_t *b = cut ? cut + 6 : data + size;
    size_t nb = cut ? size - na - 6 : 0;
    char pa[96], pb[96], po[96];
    snprintf(pa, sizeof pa, "%s/a.json", dir);
    snprintf(pb, sizeof pb, "%s/b.json", dir);
    snprintf(po, sizeof po, "%s/out.json", dir);
    put_file(pa, data, na);
    put_file(pb, b, nb);
    unlink(po);
    char *argv[] = {"merge", pa, "-o", po, "--force", pb, NULL};
    int rc = act_cmd_merge(6, argv);
    if (rc != 0) {
        if (rc != 1 && rc != 2)
            abort();
        if (access(po, F_OK) == 0) /* a refused merge writes nothing */
            abort();
        return 0;
    }
    counts ca, cb, co;
    if (count_trace(po, &co) != 0) {
        fprintf(stderr, "the reader refuses the merged trace\n");
        abort();
    }
    if (count_trace(pa, &ca) != 0 || count_trace(pb, &cb) != 0)
        abort(); /* the merge read them: so must the reader */
    if (co.events != ca.events + cb.events) {
        fprintf(stderr, "%" PRIu64 " events merged from %" PRIu64 " + %" PRIu64 "\n", co.events,
                ca.events, cb.events);
        abort();
    }
    if (co.negative_ids != ca.negative_ids + cb.negative_ids) {
        fprintf(stderr, "negative ids: %" PRIu64 " merged from %" PRIu64 " + %" PRIu64 "\n",
                co.negative_ids, ca.negative_ids, cb.negative_ids);
        abort();
    }
    return 0;
}
