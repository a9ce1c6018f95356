/* SPDX-License-Identifier: MIT */
/*
 * Writes one session as both formats, for the Perfetto checks
 * (tests/perfetto/tests.cmake): DIR/gen.json and DIR/gen.pftrace (and
 * DIR/gen.pftrace.gz). The session has what a trace carries: nested and
 * touching host spans on two threads, instants, args of every kind
 * (strings with hostile bytes; JSON args, valid and not), an open span, host and device counters
 * with units, a device with two same-named streams and a 64-bit stream,
 * plugin runtime calls with device work linked by flows, and metadata.
 * Usage: gen_pftrace DIR
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actrace/actrace.h"
#include "engine/engine.h"

static int64_t T;

static void *worker(void *arg)
{
    (void)arg;
    act_thread_name("worker \"quoted\"");
    /* String values repeat (the recorder copies one once per chunk, and
     * the writer caches its iid by chunk and ref) or are new each time;
     * enough events for several chunks, whose refs coincide. */
    static const char *const dims[5] = {"[[32, 64], [64, 128]]", "[[1, 2]]", "[]",
                                        "[[32, 3, 224, 224]]", "[[7]]"};
    for (int i = 0; i < 3000; i++) {
        int64_t t = T + 1000000 + i * 1000;
        act_span_record(ACT_CPU_OP, "aten::mm", t, t + 1000); /* touching */
        act_arg_int("Sequence number", 1000 + i);
        /* Kineto's arrays as JSON args (repeating texts, as strings repeat),
         * and a string arg whose value repeats or is new each time. */
        const char *d = dims[i % 5 == 4 ? i / 5 % 5 : i % 5];
        act_arg_json("Input Dims", d);
        act_arg_json_k(act_key("Input type"), "[\"float\", \"\"]");
        if (i % 7 == 0) {
            char v[32];
            snprintf(v, sizeof v, "value %d", i);
            act_arg_str("label", v);
        } else {
            act_arg_str("label", d);
        }
    }
    return NULL;
}

static void emit(act_session *s, uint16_t src, int kind, uint32_t device, uint64_t stream,
                 const char *name, int64_t t0, int64_t t1, uint64_t corr)
{
    act__emit_record r;
    memset(&r, 0, sizeof r);
    r.kind = (act__emit_kind)kind;
    r.type = kind == ACT__EMIT_HOST_SPAN ? ACT_RUNTIME : ACT_CONCURRENT_KERNEL;
    r.source = src;
    r.device = device;
    r.stream = stream;
    r.start_ns = t0;
    r.end_ns = t1;
    r.correlation = corr;
    r.name = name;
    r.name_len = strlen(name);
    if (act__emit(s, &r) != 0) {
        fprintf(stderr, "gen_pftrace: emit %s failed\n", name);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: gen_pftrace DIR [gz]\n");
        return 2;
    }
    act_session_opts o;
    act_session_opts_init(&o);
    static const char cfg[] = "ACTIVITY_TYPES = cpu_op, user_annotation, kernel, runtime, "
                              "cpu_instant_event, gpu_memcpy\nREQUEST_TRACE_ID = req-1\n";
    o.config_text = cfg;
    o.config_text_len = sizeof cfg - 1;
    act_session *s = NULL;
    if (act_session_create(&o, &s) || act_session_start(s)) {
        fprintf(stderr, "gen_pftrace: cannot start a session\n");
        return 1;
    }
    T = act_now_ns();
    act_thread_name("main");
    /* Nested, and children touching each other and their parent's end. */
    act_span_record(ACT_USER_ANNOTATION, "step", T, T + 10000);
    act_span_record(ACT_CPU_OP, "child a", T, T + 4000);
    act_arg_double("ratio", 0.25);
    act_arg_bool("flag", 1);
    act_arg_uint("big", UINT64_MAX);
    act_span_record(ACT_CPU_OP, "child b", T + 4000, T + 10000);
    act_arg_str("bytes", "tab\there \xff\xfe nul-free");
    act_span_record(ACT_CPU_OP, "grandchild", T + 4000, T + 4000);
    act_span_record(ACT_CPU_OP, "", T + 12000, T + 13000); /* unnamed */
    /* Larger than a packet built in place: a 300-byte name (never
     * interned) and a 5000-byte string arg. */
    static char longname[301], longval[5001];
    memset(longname, 'n', 300);
    memset(longval, 'v', 5000);
    act_span_record(ACT_CPU_OP, longname, T + 14000, T + 15000);
    act_arg_str("long", longval);
    /* JSON args (pf_check.py: "json ..." keys): valid ones are written as
     * JSON values in both formats, hostile ones as strings. */
    act_span_record(ACT_CPU_OP, "json args", T + 16000, T + 17000);
    act_arg_json("json ok obj", " {\"a\": [1, -2.5e3, true, null], \"\\u00e9\\ud83d\\ude00\": {}} ");
    act_arg_jsonn("json ok num", "42xyz", 2);
    act_arg_json("json bad open", "[[1, 2], [3");
    act_arg_json("json bad inject", "1}, {\"ph\": \"X\"");
    act_arg_json("json bad utf8", "[\"\xff\"]");
    act_arg_json("json bad surrogate", "[\"\\ud800\"]");
    act_arg_json("json bad empty", "");
    act_instant(ACT_CPU_INSTANT_EVENT, "mark");
    act_arg_int("neg", -5);
    act_counter_unit("memory", "rss", "bytes", 1024.0);
    act_counter_unit("memory", "heap", "bytes", 512.0);
    act_counter("load", "", 0.5);

    pthread_t th;
    pthread_create(&th, NULL, worker, NULL);
    pthread_join(th, NULL);

    uint16_t src = 0;
    uint32_t dev = 0;
    if (act__source_add(s, "plug", "cuda", &src) || act__device_add(s, src, "GPU 0", "test", &dev)) {
        fprintf(stderr, "gen_pftrace: no plugin source\n");
        return 1;
    }
    act_stream_name(dev, 7, "compute");
    act_stream_name(dev, 8, "compute");
    act_stream_name(dev, (UINT64_C(1) << 40) | 3, "ctx stream");
    for (int i = 0; i < 5; i++) {
        int64_t t = T + 2000000 + i * 10000;
        emit(s, src, ACT__EMIT_HOST_SPAN, ACT__HOST_DEVICE, (uint64_t)gettid(), "cudaLaunchKernel",
             t, t + 2000, 100 + i);
        emit(s, src, ACT__EMIT_DEVICE_SPAN, dev, 7 + (i & 1), "kernel_fwd", t + 5000, t + 9000,
             100 + i);
    }
    emit(s, src, ACT__EMIT_DEVICE_SPAN, dev, (UINT64_C(1) << 40) | 3, "memcpy", T + 2100000,
         T + 2100500, 0);
    act_device_counter(dev, "sm", "occupancy", "%", T + 2000000, 40.0);
    act_device_counter(dev, "sm", "occupancy", "%", T + 2010000, 60.0);
    act_span_begin(ACT_CPU_OP, "still open");
    act_session_stop(s);

    /* argv[2] "gz": the library has zlib, write the .gz variant too. */
    static const char *const outs[] = {"gen.json", "gen.pftrace", "gen.pftrace.gz"};
    size_t nouts = argc > 2 && strcmp(argv[2], "gz") == 0 ? 3 : 2;
    for (size_t i = 0; i < nouts; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], outs[i]);
        if (act_session_write(s, path) != 0) {
            fprintf(stderr, "gen_pftrace: %s: %s\n", path, act_session_errmsg(s));
            return 1;
        }
    }
    act_span_end();
    act_session_destroy(s);
    return 0;
}
