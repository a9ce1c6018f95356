/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the streaming trace reader (src/reader): the input is a document
 * fed through a memory file, read with a small buffer (every refill and
 * growth path taken) and a small item limit. Every item's tree is walked
 * and converted through every accessor, and copied; the reader must never
 * crash, leak or loop, every error must carry a byte offset or say what
 * happened, and whatever it accepts must be valid JSON to the independent
 * validator in json_check.h (the reader is stricter: it also refuses
 * invalid UTF-8, lone surrogates and nesting beyond its limit).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "reader/reader.h"

#include "json_check.h"

static uint64_t walk(const act__jv *v, unsigned depth)
{
    uint64_t n = 1;
    double d;
    int64_t i;
    if (v->type == ACT__J_NUMBER) {
        act__jv_num(v, &d);
        act__jv_i64(v, &i);
        act__jv_us_ns(v, &i);
    }
    if (v->type == ACT__J_STRING && v->s[v->len] != '\0')
        abort(); /* strings are terminated */
    if (v->type == ACT__J_OBJECT && v->child)
        (void)act__jv_get(v, v->child->key);
    uint64_t kids = 0;
    for (const act__jv *c = v->child; c; c = c->next) {
        n += walk(c, depth + 1);
        kids++;
    }
    if ((v->type == ACT__J_ARRAY || v->type == ACT__J_OBJECT) && kids != v->len)
        abort();
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == SIZE_MAX)
        check_trace_file(""); /* json_check.h's other helper, unused here */
    int fd = memfd_create("fuzz_reader", 0);
    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    lseek(fd, 0, SEEK_SET);
    act__rd_opts o = {0};
    o.buffer_bytes = 16 + (size ? data[0] % 64 : 0);
    o.max_item_bytes = 4096;
    o.max_depth = 64;
    act__rd *r;
    if (act__rd_create(fd, &o, &r) != 0) {
        close(fd);
        return 0;
    }
    act__rd_item it;
    int k;
    uint64_t items = 0;
    while ((k = act__rd_next(r, &it)) > 0) {
        walk(it.v, 0);
        act__jv *copy = act__jv_dup(it.v);
        if (copy)
            walk(copy, 0);
        free(copy);
        if (++items > size + 1)
            abort(); /* more items than bytes: a loop */
    }
    const char *msg = act__rd_errmsg(r);
    if (k < 0 && !strstr(msg, "byte offset") && !strstr(msg, "empty input") &&
        !strstr(msg, "gzip"))
        abort();
    if (k == 0 && act__rd_next(r, &it) != 0)
        abort();
    /* Plain input accepted by the reader is JSON to the validator too. */
    if (k == 0 && !act__rd_gzip(r) && !valid_json((const char *)data, size))
        abort();
    act__rd_destroy(r);
    close(fd);
    return 0;
}
