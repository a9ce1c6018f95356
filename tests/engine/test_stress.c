/* SPDX-License-Identifier: MIT */
/*
 * Many threads recording into a small buffer: events are dropped once the
 * buffer limit is reached, and recorded + dropped must equal the calls
 * made, exactly, for every type and in total. Run under TSan in CI.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "engine/trace_util.h"

#define THREADS 8
#define ITERS 20000

static void *worker(void *arg)
{
    long id = (long)arg;
    act_name_id n = act_name("interned span");
    int64_t t0 = act_now_ns(); /* supplied times must be near the clock */
    for (int i = 0; i < ITERS; i++) {
        switch ((i + id) % 5) {
        case 0:
            act_span_begin(ACT_CPU_OP, "dynamic span with a longish name");
            act_span_end();
            break;
        case 1:
            act_span_record_id(ACT_USER_ANNOTATION, n, t0 + i, t0 + i + 1);
            act_arg_int("i", i);
            break;
        case 2:
            act_instant(ACT_CPU_INSTANT_EVENT, "instant");
            break;
        case 3:
            act_counter("stress", id & 1 ? "odd" : "even", i);
            break;
        case 4:
            act_span_begin(ACT_RUNTIME, "not selected");
            act_span_end();
            break;
        }
    }
    return NULL;
}

/* Calls per type, computed the same way the workers make them. */
static void expected(long long *spans, long long *annots, long long *args, long long *instants,
                     long long *counters, long long *runtime)
{
    *spans = *annots = *args = *instants = *counters = *runtime = 0;
    for (long id = 0; id < THREADS; id++)
        for (int i = 0; i < ITERS; i++)
            switch ((i + id) % 5) {
            case 0: ++*spans; break;
            case 1: ++*annots; ++*args; break;
            case 2: ++*instants; break;
            case 3: ++*counters; break;
            case 4: ++*runtime; break;
            }
}

static _Atomic int workers_done;

static json_t *by_type_early(json_t *st)
{
    return json_object_get(st, "dropped_by_type");
}

/* Reads the totals while the workers record: must be race-free (TSan). */
static void *poller(void *arg)
{
    act_session *s = arg;
    uint64_t last = 0;
    while (!atomic_load(&workers_done)) {
        act_session_stats st;
        memset(&st, 0, sizeof st);
        st.struct_size = sizeof st;
        act_session_get_stats(s, &st);
        /* Totals only grow. */
        if (st.recorded + st.dropped < last)
            abort();
        last = st.recorded + st.dropped;
    }
    return NULL;
}

int main(void)
{
    act_log_set_level(ACT_LOG_ERROR);
    /* 1 MB: far less than the ~5 MB the calls need, so many are dropped
     * (no spill file: it would keep them). */
    act_session *s = tu_session("MAX_BUFFER_SIZE_MB = 1\nBUFFER_PREALLOC_MB = 0\nSPILL_DIR = none\n"
                                "ACTIVITY_TYPES = cpu_op, user_annotation, cpu_instant_event\n");
    pthread_t th[THREADS], poll;
    pthread_create(&poll, NULL, poller, s);
    for (long i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    for (long i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&workers_done, 1);
    pthread_join(poll, NULL);
    const char *path = tu_trace_path("stress.json");
    CHECK_OK(act_session_write(s, path));

    long long spans, annots, args, instants, counters, runtime;
    expected(&spans, &annots, &args, &instants, &counters, &runtime);
    /* Events (counter samples included); args are counted apart. */
    long long calls = spans + annots + instants + counters + runtime;

    json_t *root = tu_load(path);
    json_t *st = tu_stats(root);
    long long recorded = tu_int(st, "recorded"), dropped = tu_int(st, "dropped");
    printf("calls %lld recorded %lld dropped %lld\n", calls, recorded, dropped);
    CHECK_EQ_INT(recorded + dropped, calls);
    CHECK_EQ_INT(tu_int(st, "args_recorded") + tu_int(st, "args_dropped"), args);
    /* An event is kept with its arg or dropped with it. */
    CHECK_EQ_INT(tu_int(st, "args_recorded"), (long long)tu_count(root, "X", "interned span"));
    CHECK_EQ_INT(tu_int(json_object_get(st, "args_dropped_by_reason"), "event_dropped"),
                 tu_int(by_type_early(st), "user_annotation"));
    {
        size_t i;
        json_t *e;
        int bare = 0;
        json_array_foreach(json_object_get(root, "traceEvents"), i, e) {
            const char *nm = json_string_value(json_object_get(e, "name"));
            if (nm && strcmp(nm, "interned span") == 0 &&
                !json_is_integer(json_object_get(json_object_get(e, "args"), "i")))
                bare++;
        }
        CHECK_EQ_INT(bare, 0);
    }
    CHECK(tu_int(json_object_get(st, "dropped_by_reason"), "buffer_full") > 0);
    CHECK_EQ_INT(tu_int(json_object_get(st, "dropped_by_reason"), "type_not_selected"), runtime);
    CHECK(tu_int(st, "buffer_bytes") <= tu_int(st, "buffer_limit_bytes"));

    /* Per type: events in the file + drops of that type == calls. */
    json_t *by_type = json_object_get(st, "dropped_by_type");
    CHECK_EQ_INT((long long)tu_count(root, "X", "dynamic span with a longish name") +
                     tu_int(by_type, "cpu_op"),
                 spans);
    CHECK_EQ_INT((long long)tu_count(root, "X", "interned span") + tu_int(by_type, "user_annotation"),
                 annots);
    CHECK_EQ_INT((long long)tu_count(root, "i", "instant") + tu_int(by_type, "cpu_instant_event"),
                 instants);
    CHECK_EQ_INT(tu_int(by_type, "runtime"), runtime);

    act_session_stats ss;
    memset(&ss, 0, sizeof ss);
    ss.struct_size = sizeof ss;
    CHECK_OK(act_session_get_stats(s, &ss));
    CHECK_EQ_U64(ss.recorded + ss.dropped, (uint64_t)calls);
    CHECK_EQ_U64(ss.args_recorded + ss.args_dropped, (uint64_t)args);
    json_decref(root);
    act_session_destroy(s);
    return check_done();
}
