/* SPDX-License-Identifier: MIT */
/*
 * The example plugin: a template for vendors. Copy this file, rename
 * "example", and replace the simulation with calls into your driver.
 *
 * It simulates one accelerator ("Example NPU 0") with two streams, a
 * compute stream and a copy stream. While the session collects, a worker
 * thread plays the role of an application thread calling the vendor
 * runtime: each "launch" is a runtime API span on the host, followed by a
 * kernel on the compute stream, a copy on the copy stream, and a custom
 * "example_sync" span, each correlated with the API call that launched it
 * (actrace draws those links as flows). A counter track reports a
 * simulated utilisation in percent.
 *
 * Everything reaches actrace through the host table of
 * <actrace/plugin.h>: the plugin never writes JSON and never links
 * libactrace, so it loads into any libactrace speaking ABI major 1.
 *
 * Config keys (read through the host, from the same config as the session):
 *   EXAMPLE_LAUNCHES = 8      number of simulated launches (1..256)
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <actrace/plugin.h>

#define MAX_LAUNCHES 256
/* The device's streams. Numbered from 1: a backend whose native ids start
 * at 0 adds 1 (docs/plugin-guide.md). */
#define STREAM_COMPUTE 1
#define STREAM_COPY 2
/* Per launch: 2 API spans, 1 kernel, 1 copy, 1 sync = 5 records. */
#define MAX_RECORDS (MAX_LAUNCHES * 5)

/* Everything a plugin instance owns lives here, never in globals: the
 * same .so may serve several sessions one after the other. */
typedef struct example {
    const act_plugin_host *host; /* valid until finalize returns */
    uint32_t device;             /* our device's index, from add_device */
    uint32_t util;               /* our counter track, from add_counter */
    int32_t sync_type;           /* our custom activity type's code */
    int launches;
    pthread_t worker;
    int worker_running;

    /* Buffered activity, delivered in flush(). A real plugin buffers in
     * the same way (CUPTI-style buffers) and delivers in batches. */
    act_plugin_record records[MAX_RECORDS];
    act_plugin_arg args[MAX_LAUNCHES][2]; /* kernel args, see launch() */
    act_plugin_arg copy_args[MAX_LAUNCHES]; /* the copy's "bytes" */
    size_t nrecords;
    act_plugin_sample samples[MAX_LAUNCHES * 2];
    size_t nsamples;
} example;

/* Fills a record. Always set struct_size: the host strides by it, and it
 * is how a newer host knows which fields this plugin knows about. */
static act_plugin_record *add_record(example *ex, int32_t kind, int32_t type,
                                     uint32_t device, uint64_t stream,
                                     int64_t start, int64_t end,
                                     uint64_t correlation, const char *name)
{
    act_plugin_record *r = &ex->records[ex->nrecords++];
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    r->kind = kind;
    r->type = type;
    r->device = device;
    r->stream = stream;
    r->start_ns = start;
    r->end_ns = end;
    r->correlation = correlation;
    r->name = name;
    r->name_len = (uint32_t)strlen(name);
    return r;
}

static void sleep_ns(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

/* One simulated launch. In a real plugin the host spans come from API
 * interception (on the application's thread) and the device spans from
 * the driver's activity buffers, with device timestamps converted to the
 * host clock (host->now_ns) before they are handed over. */
static void launch(example *ex, int i)
{
    const act_plugin_host *h = ex->host;
    uint64_t tid = (uint64_t)syscall(SYS_gettid);
    uint64_t corr_kernel = 2 * (uint64_t)i + 1, corr_copy = corr_kernel + 1;
    /* The external correlation id of the thread (act_correlation_push)
     * links device work back to the framework operator. */
    uint64_t ext = h->correlation_current(h->ctx);

    int64_t t0 = h->now_ns(h->ctx);
    sleep_ns(20000); /* the runtime call itself */
    int64_t t1 = h->now_ns(h->ctx);
    act_plugin_record *r =
        add_record(ex, ACT_PLUGIN_RECORD_HOST_SPAN, ACT_RUNTIME,
                   ACT_PLUGIN_HOST_DEVICE, tid, t0, t1, corr_kernel,
                   "exampleLaunchKernel");
    r->external_id = ext;
    r = add_record(ex, ACT_PLUGIN_RECORD_HOST_SPAN, ACT_RUNTIME,
                   ACT_PLUGIN_HOST_DEVICE, tid, t1 + 1000, t1 + 6000,
                   corr_copy, "exampleMemcpyAsync");
    r->external_id = ext;

    /* Device work on stream 1 (compute) and stream 2 (copy). Streams are
     * numbered from 1, as CUDA's are: HolisticTraceAnalysis links a kernel
     * to its launch only on a stream > 0. */
    int64_t k0 = t1 + 10000, k1 = k0 + 40000;
    r = add_record(ex, ACT_PLUGIN_RECORD_DEVICE_SPAN, ACT_CONCURRENT_KERNEL,
                   ex->device, STREAM_COMPUTE, k0, k1, corr_kernel,
                   i % 2 ? "example_relu" : "example_gemm");
    r->external_id = ext;
    /* Typed args: the host escapes and formats them. */
    act_plugin_arg *a = ex->args[i];
    memset(a, 0, 2 * sizeof *a);
    a[0].struct_size = sizeof *a;
    a[0].kind = ACT_PLUGIN_ARG_INT;
    a[0].key = "grid";
    a[0].key_len = 4;
    a[0].v.i = 64 * (i + 1);
    a[1].struct_size = sizeof *a;
    a[1].kind = ACT_PLUGIN_ARG_STRING;
    a[1].key = "queue";
    a[1].key_len = 5;
    a[1].v.s.ptr = "compute";
    a[1].v.s.len = 7;
    r->args = a;
    r->nargs = 2;

    r = add_record(ex, ACT_PLUGIN_RECORD_DEVICE_SPAN, ACT_GPU_MEMCPY,
                   ex->device, STREAM_COPY, t1 + 7000, t1 + 17000, corr_copy,
                   "Memcpy HtoD");
    r->external_id = ext;
    /* A copy or memset says how many bytes it moved: the host adds Kineto's
     * "memory bandwidth (GB/s)" from it and the span's duration. */
    a = &ex->copy_args[i];
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->kind = ACT_PLUGIN_ARG_UINT;
    a->key = "bytes";
    a->key_len = 5;
    a->v.u = (uint64_t)1 << 20;
    r->args = a;
    r->nargs = 1;
    /* The custom type: drawn on the compute stream after the kernel. */
    add_record(ex, ACT_PLUGIN_RECORD_DEVICE_SPAN, ex->sync_type, ex->device,
               STREAM_COMPUTE, k1, k1 + 2000, 0, "example_sync");

    /* Utilisation: busy while the kernel runs, idle after. */
    act_plugin_sample *s = &ex->samples[ex->nsamples];
    memset(s, 0, 2 * sizeof *s);
    s[0].struct_size = s[1].struct_size = sizeof *s;
    s[0].ts_ns = k0;
    s[0].value = 50.0 + (i * 7) % 50;
    s[1].ts_ns = k1;
    s[1].value = 0.0;
    ex->nsamples += 2;
}

static void *worker_main(void *arg)
{
    example *ex = arg;
    for (int i = 0; i < ex->launches; i++) {
        launch(ex, i);
        sleep_ns(50000);
    }
    return NULL;
}

/* ---- the plugin table's functions -------------------------------------- */

static int32_t example_init(const act_plugin_host *host, void **state,
                            char *reason, uint32_t reason_cap)
{
    /* Every host function this plugin calls must be present. A host of a
     * newer minor has a larger table; an older one might lack a field:
     * check struct_size covers the last field used, then decline politely
     * instead of crashing. */
    if (host->struct_size < ACT_PLUGIN_HOST_SIZE_1_0 || !host->emit ||
        !host->add_device || !host->add_counter) {
        strncpy(reason, "host lacks ABI 1.0 functions", reason_cap - 1);
        return ACT_PLUGIN_DECLINE;
    }
    example *ex = calloc(1, sizeof *ex);
    if (!ex) {
        strncpy(reason, "out of memory", reason_cap - 1);
        return ACT_PLUGIN_ENOMEM;
    }
    ex->host = host;

    /* Our own config key, from the session's config. */
    ex->launches = 8;
    const char *v = host->config_get(host->ctx, "EXAMPLE_LAUNCHES");
    if (v) {
        long n = strtol(v, NULL, 10);
        ex->launches = n < 1 ? 1 : n > MAX_LAUNCHES ? MAX_LAUNCHES : (int)n;
    }

    /* A custom activity type: its name becomes the events' category. */
    if (host->register_type(host->ctx, "example_sync", ACT_SHAPE_DEVICE_SPAN,
                            &ex->sync_type) != 0) {
        strncpy(reason, "cannot register type example_sync", reason_cap - 1);
        free(ex);
        return ACT_PLUGIN_EINVAL;
    }

    /* Describe the device: name, vendor and typed properties. They land in
     * the trace's "deviceProperties" and name the device's process. */
    act_plugin_arg props[3];
    memset(props, 0, sizeof props);
    props[0].struct_size = props[1].struct_size = props[2].struct_size =
        sizeof props[0];
    props[0].kind = ACT_PLUGIN_ARG_UINT;
    props[0].key = "totalGlobalMem";
    props[0].key_len = 14;
    props[0].v.u = 16ull << 30;
    props[1].kind = ACT_PLUGIN_ARG_INT;
    props[1].key = "numComputeUnits";
    props[1].key_len = 15;
    props[1].v.i = 32;
    props[2].kind = ACT_PLUGIN_ARG_DOUBLE;
    props[2].key = "clockGHz";
    props[2].key_len = 8;
    props[2].v.d = 1.5;
    act_plugin_device dev;
    memset(&dev, 0, sizeof dev);
    dev.struct_size = sizeof dev;
    dev.name = "Example NPU 0";
    dev.vendor = "Example Corp";
    dev.props = props;
    dev.nprops = 3;
    if (host->add_device(host->ctx, &dev, &ex->device) != 0) {
        strncpy(reason, "cannot describe the device", reason_cap - 1);
        free(ex);
        return ACT_PLUGIN_EINVAL;
    }
    host->name_stream(host->ctx, ex->device, STREAM_COMPUTE, "compute", 7);
    host->name_stream(host->ctx, ex->device, STREAM_COPY, "copy", 4);

    /* A counter track on the device. */
    act_plugin_counter ctr;
    memset(&ctr, 0, sizeof ctr);
    ctr.struct_size = sizeof ctr;
    ctr.device = ex->device;
    ctr.track = "utilization";
    ctr.unit = "%";
    if (host->add_counter(host->ctx, &ctr, &ex->util) != 0) {
        strncpy(reason, "cannot declare the counter track", reason_cap - 1);
        free(ex);
        return ACT_PLUGIN_EINVAL;
    }
    host->log(host->ctx, ACT_PLUGIN_LOG_INFO, "simulated device ready");
    *state = ex;
    return ACT_PLUGIN_OK;
}

static void example_start(void *state)
{
    example *ex = state;
    ex->worker_running =
        pthread_create(&ex->worker, NULL, worker_main, ex) == 0;
    if (!ex->worker_running)
        ex->host->log(ex->host->ctx, ACT_PLUGIN_LOG_WARN,
                      "cannot start the simulation thread");
}

/* A real plugin disables its callbacks here. The simulation finishes its
 * short, fixed workload instead, so that it produces the same events on
 * every run (the tests rely on it). */
static void example_stop(void *state)
{
    example *ex = state;
    if (ex->worker_running)
        pthread_join(ex->worker, NULL);
    ex->worker_running = 0;
}

/* Deliver everything buffered: one batch of records, one of samples. */
static void example_flush(void *state)
{
    example *ex = state;
    const act_plugin_host *h = ex->host;
    if (ex->nrecords)
        h->emit(h->ctx, ex->records, (uint32_t)ex->nrecords);
    if (ex->nsamples)
        h->emit_samples(h->ctx, ex->util, ex->samples,
                        (uint32_t)ex->nsamples);
    ex->nrecords = ex->nsamples = 0;
}

static void example_finalize(void *state)
{
    free(state);
}

/* What the plugin can produce (informational). */
static const int32_t example_types[] = {ACT_RUNTIME, ACT_CONCURRENT_KERNEL,
                                        ACT_GPU_MEMCPY};

/* The table: static, valid for as long as the .so is loaded. */
static const act_plugin example_plugin = {
    .struct_size = sizeof(act_plugin),
    .abi_major = ACT_PLUGIN_ABI_MAJOR,
    .abi_minor = ACT_PLUGIN_ABI_MINOR,
    .name = "example",
    .backend = "example",
    .version = "1.0.0",
    .types = example_types,
    .ntypes = sizeof example_types / sizeof example_types[0],
    .init = example_init,
    .start = example_start,
    .stop = example_stop,
    .flush = example_flush,
    .finalize = example_finalize,
};

/* The one exported symbol. Decline a host whose major differs: its
 * structs would not be the ones this file was compiled against. */
ACT_PLUGIN_EXPORT const act_plugin *
act_plugin_entry(const act_plugin_host *host, uint32_t host_abi_major,
                 uint32_t host_abi_minor)
{
    (void)host;
    (void)host_abi_minor;
    if (host_abi_major != ACT_PLUGIN_ABI_MAJOR)
        return NULL;
    return &example_plugin;
}
