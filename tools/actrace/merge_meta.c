/* SPDX-License-Identifier: MIT */
/* Each input's identity in a merged trace (merge_meta.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "merge_meta.h"
#include "record_merge.h"

void act__merge_keep(act__jv **slot, const act__jv *v)
{
    free(*slot);
    *slot = act__jv_dup(v);
    if (!*slot) {
        fputs("actrace: out of memory\n", stderr);
        exit(1);
    }
}

int act__merge_meta_take(act__merge_meta *m, const char *key, const act__jv *v)
{
    if (strcmp(key, "distributedInfo") == 0 && v->type == ACT__J_OBJECT) {
        act__merge_keep(&m->dist, v);
        m->has_rank = act__jv_i64(act__jv_get(v, "rank"), &m->rank) && !m->rank_default;
    } else if (strcmp(key, "actraceRankDefault") == 0) {
        m->rank_default = v->type == ACT__J_TRUE;
        if (m->rank_default)
            m->has_rank = 0;
    } else if (strcmp(key, "trace_id") == 0) {
        act__merge_keep(&m->trace_id, v);
    } else if (strcmp(key, "group_trace_id") == 0) {
        act__merge_keep(&m->group_id, v);
    } else if (strcmp(key, "host_name") == 0) {
        act__merge_keep(&m->host, v);
    } else {
        return 0;
    }
    return 1;
}

/* {"k": v, ...}: HTA's rank pattern needs the space after the colon. */
static void put_spaced(act__out *o, const act__jv *obj)
{
    act__out_char(o, '{');
    for (const act__jv *c = obj->child; c; c = c->next) {
        if (c != obj->child)
            act__out_lit(o, ", ");
        act__out_str(o, c->key, c->klen);
        act__out_lit(o, ": ");
        act__merge_put_value(o, c);
    }
    act__out_char(o, '}');
}

static const act__jv *field(const act__merge_meta *m, int which)
{
    return which == 0 ? m->trace_id : which == 1 ? m->group_id : m->host;
}

static const char *const names[] = {"trace_id", "group_trace_id", "host_name"};

void act__merge_meta_put_top(act__out *o, const act__merge_meta *const *m, size_t n)
{
    const act__merge_meta *top = NULL;
    for (size_t i = 0; i < n && !(top && top->has_rank); i++)
        if (m[i]->dist && (!top || m[i]->has_rank))
            top = m[i];
    if (top) {
        act__out_lit(o, "\"distributedInfo\": ");
        put_spaced(o, top->dist);
        act__out_lit(o, ",\n");
    }
    for (int w = 0; w < 3; w++) {
        const act__jv *common = NULL;
        int agree = 1;
        for (size_t i = 0; i < n && agree; i++) {
            const act__jv *v = field(m[i], w);
            if (!v)
                continue;
            if (v->type != ACT__J_STRING)
                agree = 0;
            else if (!common)
                common = v;
            else
                agree = v->len == common->len && memcmp(v->s, common->s, v->len) == 0;
        }
        if (!agree || !common)
            continue;
        act__out_char(o, '"');
        act__out_lit(o, names[w]);
        act__out_lit(o, "\":");
        act__merge_put_value(o, common);
        act__out_lit(o, ",\n");
    }
}

void act__merge_meta_put_entry(act__out *o, const act__merge_meta *m)
{
    if (m->has_rank) {
        char b[32];
        int n = snprintf(b, sizeof b, ",\"rank\":%" PRId64, m->rank);
        act__out_write(o, b, (size_t)n);
    }
    if (m->dist) {
        act__out_lit(o, ",\"distributedInfo\":");
        put_spaced(o, m->dist);
    }
    for (int w = 0; w < 3; w++) {
        const act__jv *v = field(m, w);
        if (!v)
            continue;
        act__out_lit(o, ",\"");
        act__out_lit(o, names[w]);
        act__out_lit(o, "\":");
        act__merge_put_value(o, v);
    }
}

void act__merge_meta_free(act__merge_meta *m)
{
    free(m->dist);
    free(m->trace_id);
    free(m->group_id);
    free(m->host);
    memset(m, 0, sizeof *m);
}
