/* SPDX-License-Identifier: MIT */
/*
 * The writer against services still in flight (issue 12). Plugin threads
 * may describe devices, name streams and declare counter series at any
 * time until finalize; these grow arrays the writer reads. Three threads
 * keep calling the engine services a plugin's calls end in
 * (act__device_add, act__stream_name, act__series_find) while the main
 * thread writes the (stopped) session again and again. The writer used to
 * read them without the session lock: a heap-use-after-free under ASan, a
 * data race under TSan. Then: the counter-series index (a hash since this
 * issue) returns one id per identity across 20,000 series.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "engine/engine.h"
#include "engine/trace_util.h"

static _Atomic int running = 1;
static act_session *S;

static void *grow(void *arg)
{
    int which = (int)(intptr_t)arg;
    char buf[64];
    uint32_t dev = 0, id;
    /* No CHECK here: check.h's counters belong to the main thread. */
    if (act__device_add(S, 0, "race device", "t", &dev) != 0)
        abort();
    /* The first few calls happen whatever the main thread does: on a loaded
     * machine a thread may start only after the writes are done, and the
     * check below counts devices. */
    for (unsigned i = 0;
         i < 5000 && (i < 8 || atomic_load_explicit(&running, memory_order_relaxed)); i++) {
        snprintf(buf, sizeof buf, "s%u", i);
        switch (which) {
        case 0: act__device_add(S, 0, buf, "t", &id); break;
        case 1: act__stream_name(S, dev, i % 64, buf, strlen(buf)); break;
        case 2: act__series_find(S, 0, ACT__HOST_DEVICE, "race", buf, NULL, &id, NULL); break;
        }
    }
    return NULL;
}

static void test_write_vs_services(void)
{
    S = tu_session("");
    act_instant(ACT_USER_ANNOTATION, "x");
    CHECK_OK(act_session_stop(S));
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        CHECK_FATAL(pthread_create(&th[i], NULL, grow, (void *)(intptr_t)i) == 0);
    const char *path = ACT_BINARY_DIR "/tests/lifetime/lifetime_services.json" /* large: not for the CI validators */;
    for (int k = 0; k < 10; k++)
        CHECK_OK(act_session_write(S, path));
    atomic_store(&running, 0);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    CHECK_OK(act_session_write(S, path));
    json_t *root = tu_load(path);
    CHECK(json_array_size(json_object_get(root, "deviceProperties")) >= 4);
    json_decref(root);
    act_session_destroy(S);
}

static void test_series_index(void)
{
    act_session *s = tu_session("");
    enum { NS = 20000 };
    static uint32_t ids[NS];
    char track[32], series[32];
    for (int i = 0; i < NS; i++) {
        snprintf(track, sizeof track, "t%d", i % 100);
        snprintf(series, sizeof series, "s%d", i);
        CHECK_FATAL(act__series_find(s, (uint16_t)(i % 3 == 0), i % 5 ? ACT__HOST_DEVICE : 7,
                                     track, series, NULL, &ids[i], NULL) == 0);
        CHECK_FATAL(ids[i] == (uint32_t)i); /* new identities get dense ids */
    }
    /* The same identity again: the same id; the same names with another
     * source or device: a new one. */
    for (int i = 0; i < NS; i += 7) {
        snprintf(track, sizeof track, "t%d", i % 100);
        snprintf(series, sizeof series, "s%d", i);
        uint32_t id;
        act__series *sp;
        CHECK_OK(act__series_find(s, (uint16_t)(i % 3 == 0), i % 5 ? ACT__HOST_DEVICE : 7,
                                  track, series, "unit", &id, &sp));
        CHECK_EQ_INT(id, ids[i]);
        CHECK_EQ_STR(sp->unit, "unit");
    }
    uint32_t id;
    CHECK_OK(act__series_find(s, 9, ACT__HOST_DEVICE, "t1", "s1", NULL, &id, NULL));
    CHECK_EQ_INT(id, NS);
    CHECK_OK(act__series_find(s, 0, ACT__HOST_DEVICE, "", "", NULL, &id, NULL));
    CHECK_EQ_INT(id, NS + 1);
    CHECK_OK(act__series_find(s, 0, ACT__HOST_DEVICE, NULL, NULL, NULL, &id, NULL));
    CHECK_EQ_INT(id, NS + 1); /* NULL names are the empty names */
    act_session_stop(s);
    act_session_destroy(s);
}

int main(void)
{
    test_write_vs_services();
    test_series_index();
    CHECK_MAIN_END;
}
