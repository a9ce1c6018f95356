/* SPDX-License-Identifier: MIT */
/*
 * Record's shared light log (record_light.c): what processes that never
 * started a session logged, one entry per process.
 */
#ifndef ACT_RECORD_LIGHT_H
#define ACT_RECORD_LIGHT_H

#include <stddef.h>

typedef struct act__light_ent {
    char base[80]; /* "<pid>-<ns>-<identity>", as its BASE.meta would be named */
    char *recs;    /* its records, in the order written (BASE.meta's format) */
    size_t len;
    int dropped;   /* an image that exec'd: a later image shows the process */
} act__light_ent;

typedef struct act__light_set {
    act__light_ent *v; /* sorted by base */
    size_t n;
} act__light_set;

/** Creates DIR/light.log (empty, 0600) before the program runs. 0 or -1. */
int act__light_create(const char *dir);
/** Reads DIR/light.log into @p ls: one entry per process that has no
 *  BASE.meta, BASE.spool or BASE.json (those say everything). Damaged
 *  frames are skipped, said once on stderr. */
void act__light_load(const char *dir, act__light_set *ls);
void act__light_free(act__light_set *ls);
/** Writes each entry not dropped as DIR/BASE.meta (`record --per-process`
 *  rebuilds those); returns how many were written. */
size_t act__light_write_logs(const char *dir, act__light_set *ls);
/** 1 if a process of @p ls still runs. */
int act__light_live(const act__light_set *ls);

#endif
