/* SPDX-License-Identifier: MIT */
/*
 * Touching spans stay apart in doubles (issue 16, from issue 15): viewers
 * parse ts and dur (microseconds, three decimals) into doubles and add
 * them; for back-to-back spans on one track, fl(ts) + fl(dur) can round
 * one ulp past the next span's fl(ts), and the two then overlap. The
 * writer must write a dur for which the sum never passes the next ts.
 * The test finds, near the session's own times, a start and duration that
 * round the wrong way (about one pair in eight does), records two spans
 * that touch there, and checks the sum as a viewer computes it.
 */
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "engine/engine.h"
#include "engine/trace_util.h"

static json_t *find(json_t *root, const char *name)
{
    return tu_find(root, "X", name);
}

int main(void)
{
    const char *path = tu_trace_path("output_touching.json");
    act_session *s = tu_session("ACTIVITY_TYPES = cpu_op\n");
    /* The writer's base (chrome.c/visit.c): a whole second at least one
     * second before the session's start, the earliest time here. */
    int64_t first_unix = s->start_mono_ns + s->mono_to_unix_ns;
    int64_t base = (first_unix / 1000000000 - 1) * 1000000000;
    int64_t to_rel = s->mono_to_unix_ns - base;
    int64_t rel_now = act_now_ns() + to_rel;
    static const int64_t durs[] = {1, 3, 17, 333, 1000, 4567};
    int64_t rel0 = 0, dur = 0;
    for (int64_t r = rel_now + 1000000; !dur && r < rel_now + 2000000; r += 7)
        for (size_t k = 0; k < sizeof durs / sizeof durs[0] && !dur; k++)
            if ((double)r / 1e3 + (double)durs[k] / 1e3 > (double)(r + durs[k]) / 1e3) {
                rel0 = r;
                dur = durs[k];
            }
    CHECK_FATAL(dur != 0);
    int64_t t0 = rel0 - to_rel;
    act_span_record(ACT_CPU_OP, "first", t0, t0 + dur);
    act_span_record(ACT_CPU_OP, "second", t0 + dur, t0 + dur + 500);
    CHECK_OK(act_session_write(s, path));
    json_t *root = tu_load(path);
    json_t *a = find(root, "first"), *b = find(root, "second");
    CHECK_FATAL(a && b);
    double ats = json_number_value(json_object_get(a, "ts"));
    double adur = json_number_value(json_object_get(a, "dur"));
    double bts = json_number_value(json_object_get(b, "ts"));
    /* The start is exact; the sum as a viewer computes it never passes the
     * next span's start; at most two nanoseconds are given up. */
    CHECK_EQ_INT(llround(ats * 1e3), rel0);
    CHECK(ats + adur <= bts);
    CHECK(llround(adur * 1e3) >= dur - 2 && llround(adur * 1e3) <= dur);
    json_decref(root);
    act_session_destroy(s);
    return check_done();
}
