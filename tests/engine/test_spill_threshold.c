/* SPDX-License-Identifier: MIT */
/*
 * The spill file is made only when what is kept no longer fits the RAM
 * budget (less the margin the drain keeps by spilling ahead): a run whose
 * events fit writes none, though the pool's free slots, counted as used,
 * would have passed the budget; a run past the budget still spills and
 * keeps everything.
 */
#include <stdint.h>

#include "check.h"
#include "engine/engine.h"
#include "engine/trace_util.h"

static void run(const char *cfg, long n, int want_spill)
{
    act_session *s = tu_session(cfg);
    act_name_id nm = act_name("spill threshold");
    act_key_id k = act_key("i");
    int64_t t = act_now_ns();
    for (long i = 0; i < n; i++, t += 100) {
        act_span_record_id(ACT_USER_ANNOTATION, nm, t, t + 50);
        act_arg_int_k(k, i);
    }
    CHECK_EQ_INT(act_session_stop(s), 0);
    act_session_stats st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    CHECK_EQ_INT(act_session_get_stats(s, &st), 0);
    CHECK_EQ_U64(st.recorded, (uint64_t)n);
    CHECK_EQ_U64(st.dropped, 0);
    int made = atomic_load(&s->tmp_on) != 0;
    printf("%ld events (%llu MB kept in RAM): spill file %s, %llu MB spilled\n", n,
           (unsigned long long)(st.bytes >> 20), made ? "made" : "none",
           (unsigned long long)(st.spilled >> 20));
    CHECK_EQ_INT(made, want_spill);
    if (!want_spill)
        CHECK_EQ_U64(st.spilled, 0);
    /* The file holds frames (a few bytes an event), not whole chunks
     * (32 bytes a record: 181 MB for the 4M events below). */
    CHECK(st.spilled <= (uint64_t)n * 16);
    act_session_destroy(s);
}

int main(void)
{
    /* 64 B per event (a span and its arg record): 1.25M events are 80 MB,
     * under the 128 MB budget less its 32 MB margin. The drain keeps
     * about half of the 64 MB pool free, so about 48 MB are archived: the
     * whole pool counted as used (before) passed the budget at 32 MB. */
    for (int k = 0; k < 4; k++) /* before, one run in 3 to 5 spilled here */
        run("MAX_BUFFER_SIZE_MB = 128\nBUFFER_POOL_MB = 64\n", 1250000, 0);
    /* Past the budget: spilled, nothing lost. The archive holds frames
     * (frame.h), a few bytes an event: 4M events take about 30 MB there,
     * twice the 16 MB budget. */
    run("MAX_BUFFER_SIZE_MB = 16\nBUFFER_POOL_MB = 4\nBUFFER_FULL_POLICY = wait\n", 4000000, 1);
    return check_done();
}
