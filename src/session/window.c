/* SPDX-License-Identifier: MIT */
/*
 * Windows on the active session (actrace/session.h): a consumer's slice of
 * another owner's session. A window is two times and the session it was
 * opened on; nothing is copied or recorded for it. Its events are read at
 * its end straight from the session's buffers (act__readback in
 * writer/readback.c), filtered to [open, close].
 */
#include <stdlib.h>

#include "actrace/errors.h"
#include "actrace/session.h"
#include "actrace/visit.h"
#include "engine/engine.h"
#include "writer/visit.h"

struct act_window {
    act_session *s;
    int64_t start_ns, end_ns; /* monotonic ns; end 0: open */
};

int act_window_open(act_window **out)
{
    if (!out)
        return ACT_EINVAL;
    *out = NULL;
    /* act_session_active: a lazily started session (record's) starts now,
     * as for any caller that means to use it. */
    act_session *s = act_session_active();
    if (!s)
        return ACT_ESTATE;
    act_window *w = calloc(1, sizeof *w);
    if (!w)
        return ACT_ENOMEM;
    w->s = s;
    w->start_ns = act__clock_ns();
    *out = w;
    return 0;
}

int act_window_close(act_window *w)
{
    if (!w)
        return ACT_EINVAL;
    if (w->end_ns)
        return ACT_ESTATE;
    w->end_ns = act__clock_ns();
    if (w->end_ns < w->start_ns)
        w->end_ns = w->start_ns;
    return 0;
}

void act_window_bounds(const act_window *w, int64_t *start_ns, int64_t *end_ns)
{
    if (!w)
        return;
    if (start_ns)
        *start_ns = w->start_ns;
    if (end_ns)
        *end_ns = w->end_ns;
}

int act_window_visit(act_window *w, const act_visitor *v)
{
    if (!w || !v)
        return ACT_EINVAL;
    return act__readback(w->s, v, 1, w->start_ns, w->end_ns ? w->end_ns : act__clock_ns());
}

void act_window_free(act_window *w)
{
    free(w);
}
