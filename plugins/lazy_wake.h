/* SPDX-License-Identifier: MIT */
/*
 * Lazy start, the plugin's side (ACT_PLUGIN_LAZY_SYMBOL in plugin.h). Under
 * `actrace record`, a process that has not recorded yet has no session and
 * no plugin instance (src/session/autostart.c). A plugin that exports the
 * symbol promises to wake the session itself when its runtime shows up in
 * such a process: its runtime hook (the NVTX injection, the OpenCL layer's
 * init) or its fork handler (a child of a process that used the runtime)
 * calls plugin_lazy_wake(), which calls libactrace's act_session_active()
 * (it starts a lazy session, which loads this plugin's instance). Found at
 * run time, so the plugin still loads where libactrace is not the one
 * driving it; without libactrace in the process it does nothing.
 */
#ifndef ACT_PLUGIN_LAZY_WAKE_H
#define ACT_PLUGIN_LAZY_WAKE_H

#include <dlfcn.h>
#include <string.h>

#include "actrace/plugin.h"

/* The marker: any plugin including this header can start lazily. */
ACT_PLUGIN_EXPORT const int act_plugin_lazy = 1;

static inline void plugin_lazy_wake(void)
{
    void *sym = dlsym(RTLD_DEFAULT, "act_session_active");
    void *(*fn)(void);
    if (!sym)
        return;
    memcpy(&fn, &sym, sizeof fn);
    fn();
}

#endif
