/* SPDX-License-Identifier: MIT */
/*
 * ABI 1.1, tested: a plugin compiled against the frozen plugin.h 1.1
 * (tests/abi/v1_1) names a host track of its own and the session thread
 * through name_thread, and the host refuses a zero tid and an invalid
 * UTF-8 name. If this test has to change, the ABI was broken
 * (docs/ABI.md).
 */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "../plugin/plugin_test_util.h"

#define V11_PLUGIN ACT_BINARY_DIR "/tests/abi/abi_v1_1.so"

int main(void)
{
    const char *trace = ACT_TRACE_DIR "/abi_v1_1.json";
    log_start();
    const char *list[] = {V11_PLUGIN};
    CHECK_FATAL(run_session(list, 1, NULL, trace, NULL) == 0);
    if (!CHECK_EQ_INT(log_count("abi v1.1 rc 1 0 0 1 1", NULL, NULL), 1))
        fprintf(stderr, "log:\n%s", log_buf);
    /* Each refusal is counted and reported once per reason. */
    CHECK_EQ_INT(log_count("data rejected", NULL, NULL), 2);

    json_t *root = trace_load(trace);
    CHECK_FATAL(root != NULL);
    CHECK_EQ_INT(trace_count(root, "X", "abi_v1_1_span"), 1);
    CHECK(trace_process(root, "no such process") < 0);
    json_t *span = trace_find(root, "X", "abi_v1_1_span");
    CHECK_FATAL(span != NULL);
    CHECK_EQ_INT(ev_int(span, "pid"), getpid());
    CHECK_EQ_INT(ev_int(span, "tid"), 0x40000123);
    CHECK_EQ_INT(trace_thread(root, getpid(), "abi v1.1 track"), 0x40000123);
    /* The plugin names the thread its flush runs on: a host thread of its
     * own since flush is bounded by PLUGIN_TIMEOUT_MSECS (docs/ABI.md). */
    long named = (long)trace_thread(root, getpid(), "abi v1.1 thread");
    CHECK(named > 0 && named < 0x40000000L);
    CHECK(!trace_has_flow(root, span, span));
    json_decref(root);
    CHECK_MAIN_END;
}
