/* SPDX-License-Identifier: MIT */
/*
 * The plugin loader, as the session sees it. Loading never fails the
 * session: a refused plugin is reported through the log (naming the file
 * and the reason) and skipped.
 */
#ifndef ACT_PLUGIN_LOADER_H
#define ACT_PLUGIN_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

typedef struct act__plugins act__plugins;

/* Load the plugins named by the config's PLUGINS, $ACTRACE_PLUGINS and
 * @p extra (in that order, duplicates once), call their init. Returns 0
 * and a (possibly empty) set, or ACT_ENOMEM. */
int act__plugins_load(act_session *s, const act_config *cfg,
                      const char *const *extra, size_t nextra,
                      act__plugins **out);
/* The folder bare plugin names are found in (ACTRACE_PLUGIN_DIR, else
 * beside the library; loader.c). */
const char *act__plugins_dir(void);
/* start / stop+flush every plugin that initialised. */
void act__plugins_start(act__plugins *p);
void act__plugins_stop(act__plugins *p);
/* finalize and unload. NULL does nothing. */
void act__plugins_destroy(act__plugins *p);

/* For the trace's "actraceStats": per loaded plugin, its name, path and
 * how many records it handed over that were rejected. */
size_t act__plugins_count(const act__plugins *p);
/* 1 if every loaded plugin can start lazily: it exports the data symbol
 * ACT_PLUGIN_LAZY_SYMBOL (its runtime, once used, wakes the process's
 * session: plugin.h), so that a process that does not use it needs no
 * instance of it. */
int act__plugins_all_lazy(const act__plugins *p);
const char *act__plugins_name(const act__plugins *p, size_t i);
const char *act__plugins_path(const act__plugins *p, size_t i);
uint64_t act__plugins_rejected(const act__plugins *p, size_t i);
/* Records of plugin @p i filtered out (type not selected), and refused by
 * the engine (buffer limit). */
uint64_t act__plugins_filtered(const act__plugins *p, size_t i);
uint64_t act__plugins_dropped(const act__plugins *p, size_t i);
/* The first warnings plugin @p i logged (its log at WARN or ERROR), for
 * actraceStats; a returned string lives as long as the set. */
size_t act__plugins_warning_count(const act__plugins *p, size_t i);
const char *act__plugins_warning(const act__plugins *p, size_t i, size_t k);
/* Rejections of plugin @p i by reason: the reason at position @p k
 * (0 <= k < act__plugins_reason_count()) as a short key and its count. */
size_t act__plugins_reason_count(void);
uint64_t act__plugins_rejected_by(const act__plugins *p, size_t i, size_t k,
                                  const char **key);

#endif /* ACT_PLUGIN_LOADER_H */
