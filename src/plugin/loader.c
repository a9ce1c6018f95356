/* SPDX-License-Identifier: MIT */
/* Placeholder until the plugin ABI lands: loads nothing. */
#include <stdlib.h>

#include "plugin/loader.h"

struct act__plugins {
    int unused;
};

int act__plugins_load(act_session *s, const act_config *cfg,
                      const char *const *extra, size_t nextra,
                      act__plugins **out)
{
    (void)s;
    (void)cfg;
    (void)extra;
    (void)nextra;
    *out = calloc(1, sizeof **out);
    return *out ? 0 : ACT_ENOMEM;
}

void act__plugins_start(act__plugins *p) { (void)p; }
void act__plugins_stop(act__plugins *p) { (void)p; }
void act__plugins_destroy(act__plugins *p) { free(p); }
size_t act__plugins_count(const act__plugins *p) { (void)p; return 0; }
const char *act__plugins_name(const act__plugins *p, size_t i) { (void)p; (void)i; return ""; }
const char *act__plugins_path(const act__plugins *p, size_t i) { (void)p; (void)i; return ""; }
uint64_t act__plugins_rejected(const act__plugins *p, size_t i) { (void)p; (void)i; return 0; }
