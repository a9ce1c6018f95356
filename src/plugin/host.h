/* SPDX-License-Identifier: MIT */
/*
 * One loaded plugin as the host sees it (struct act_plugin_ctx, opaque to
 * the plugin), shared by the loader (loader.c) and the host table that the
 * plugin calls (host_table.c).
 */
#ifndef ACT_PLUGIN_HOST_H
#define ACT_PLUGIN_HOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "actrace/plugin.h"
#include "internal.h"
#include "plugin/validate.h"

#define ACT__PLUGIN_MAGIC 0x61637470u /* "actp" */
#define ACT__PLUGIN_WARN_MAX 8u      /* warnings kept per plugin */

struct act_plugin_ctx {
    uint32_t magic;
    /* act__fork_gen when loaded: a fork()ed child's copy of the context
     * (a plugin that kept its parent's host table) is refused like a dead
     * one, so it never takes the parent's locks or records into its
     * session. */
    unsigned fork_gen;
    act_session *session;
    const act_config *cfg; /* the session's; outlives the plugin */
    uint16_t source;
    int types_explicit; /* ACTIVITY_TYPES set explicitly in the config */
    char *path;         /* real path of the .so */
    char name[65];
    void *dl;
    act_plugin table; /* the plugin's table, zero-extended to our size */
    void *state;      /* what init stored */
    int initialised;
    act_plugin_host host;

    pthread_mutex_t lock; /* serialises add_device / add_counter */
    _Atomic uint32_t ndev;
    uint32_t dev_map[ACT_PLUGIN_DEVICES_MAX]; /* plugin index -> engine */
    _Atomic uint32_t ntracks;
    uint32_t *track_map; /* ACT_PLUGIN_TRACKS_MAX: plugin index -> series */

    _Atomic uint64_t rejected[ACT__PREJ_COUNT];
    _Atomic uint32_t reported; /* bit per reason already logged */
    _Atomic uint64_t filtered; /* records of unselected types */
    _Atomic uint64_t dropped;  /* refused by the engine (limit, state) */

    int64_t timeout_ms;  /* PLUGIN_TIMEOUT_MSECS; 0 = wait for ever */
    _Atomic int stuck;   /* a bounded call did not return: skipped */
    _Atomic int dead;    /* the session is gone: every call is refused */
    /* The first warnings the plugin logged (level >= WARN), kept for the
     * trace's actraceStats.plugins[].warnings; appended under lock. */
    char *warnings[ACT__PLUGIN_WARN_MAX];
    _Atomic uint32_t nwarnings; /* published with a release store after the
                                 * slot is filled; read without the lock */
};

/* Fill c->host with the host functions. */
void act__phost_init(struct act_plugin_ctx *c);

/* Count @p n rejections of reason @p r; log the first one. */
void act__phost_reject(struct act_plugin_ctx *c, act__prej r, uint64_t n);

/* Plugin log text made safe for a terminal and a log file: at most @p max
 * bytes of @p s (up to its NUL), valid printable UTF-8 kept, C0/C1 control
 * characters (ESC, CR, LF, BEL...), DEL and invalid UTF-8 written as
 * "\xNN". Writes a NUL-terminated string into @p dst (@p cap bytes; 4 *
 * max + 1 hold any input) and returns its length. */
size_t act__phost_log_text(char *dst, size_t cap, const char *s, size_t max);

/* Total rejections of a plugin. */
uint64_t act__phost_rejected(const struct act_plugin_ctx *c);

#endif /* ACT_PLUGIN_HOST_H */
