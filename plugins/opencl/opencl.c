/* SPDX-License-Identifier: MIT */
/*
 * The OpenCL backend: one shared object that is both an actrace plugin and
 * an OpenCL ICD loader layer (cl_loader_layers: clGetLayerInfo,
 * clInitLayer, clInitLayerWithProperties, clDeinitLayer). The plugin's init
 * puts this file's path first in OPENCL_LAYERS, so the ICD loader of this
 * process and of its children loads it as a layer at its first OpenCL
 * call; every call then passes through the wrappers below, including calls
 * of programs that dlopen libOpenCL. docs/opencl.md tells the story.
 *
 * Two lifetimes meet here. The layer is process-wide: its dispatch tables,
 * queue table, device table, op pool and thread slots are globals that
 * live as long as the process (the object is linked -z nodelete, so no
 * dlclose unmaps code the ICD loader still calls). The plugin instance
 * (ocl_inst) lives from init to finalize of one session and is the only
 * thing that talks to the host table.
 *
 * Memory model and ownership.
 *  - g_next (the next layer's dispatch) and g_layer are written once, in
 *    clInitLayer, before the loader publishes our table; afterwards they
 *    are read-only.
 *  - g_active points to the instance while it collects (start..stop). A
 *    wrapper reads it relaxed as a hint; it reaches the host table only
 *    between ocl_enter() and ocl_leave(): enter stores 1 in the thread's
 *    slot with seq_cst, then loads g_active with seq_cst. stop clears
 *    g_active (seq_cst) and then waits until no slot is busy, so once stop
 *    returned no wrapper can still be emitting for that instance. Busy
 *    windows never contain a blocking OpenCL call: waits (clFinish,
 *    clWaitForEvents, blocking transfers) run outside them.
 *  - Every traced enqueue gets an op from the pool (slabs of OPS_PER_SLAB,
 *    never freed, no malloc per event) and holds exactly one reference to
 *    the command's event: when the program did not ask for an event, the
 *    layer passes its own out pointer and the event it receives is the op's
 *    reference; when the program asked for one, the layer retains it once
 *    and clGetEventInfo(CL_EVENT_REFERENCE_COUNT) subtracts that reference,
 *    so the program sees the count it would have seen untraced. The op's
 *    reference is released exactly once, when the op is harvested (its
 *    profiling times read) or discarded.
 *  - An op sits on its queue's pending list (guarded by the queue's mutex)
 *    from the enqueue until it is harvested; harvest detaches completed ops
 *    under the mutex and reads, emits and releases them outside it, so two
 *    threads never handle the same op. No event callback is used: pocl
 *    releases events from its callback thread concurrently with the
 *    program, which is how use-after-frees have been reported there;
 *    polling at synchronisation points and at flush never blocks.
 *  - Queue and device records are type-stable: never freed, recycled in
 *    place, so a lookup racing a release reads a stale but valid record.
 *
 * Time: device timestamps are mapped to the host clock (CLOCK_MONOTONIC,
 * the clock plugin.h promises) with a per-device offset. Its first value
 * comes from clGetDeviceAndHostTimer where the device has it; every
 * harvested command then refines it: the command was queued between the
 * host times around its enqueue call, and ended before the host saw it
 * complete, so the offset is moved (only as far as needed) into the window
 * those facts allow. That tracks drift between the device clock (pocl:
 * CLOCK_MONOTONIC_RAW) and ours without any extra call.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#define CL_USE_DEPRECATED_OPENCL_2_1_APIS
#define CL_USE_DEPRECATED_OPENCL_2_2_APIS
#include <CL/cl_icd.h>
#include <CL/cl_layer.h>

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <actrace/plugin.h>

#include "../lazy_wake.h"

/* Newer loaders (Khronos, from 2026.05.29) want these two as well; Debian
 * 12's CL/cl_layer.h does not declare them. */
#ifndef CL_LAYER_PROPERTIES_LIST_END
typedef cl_properties cl_layer_properties;
#define CL_LAYER_PROPERTIES_LIST_END ((cl_layer_properties)0)
#endif

#define LAYER_NAME "actrace OpenCL layer"
#define MAX_QUEUES 4096u  /* queue records, recycled after release */
#define MAX_DEVICES 64u
#define OPS_PER_SLAB 256u
#define NAME_CAP 128u       /* kernel names kept per op */
#define POLL_PENDING 64u    /* poll a queue once this many ops wait */
#define QUIESCE_SPINS 200000 /* ~100 ms of sched_yield */

/* ---- clock -------------------------------------------------------------- */

static inline int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- function ids and names ---------------------------------------------- */

/* Ids: the dispatch table's entries in table order (ID_DISPATCH_END of
 * them), then the extension functions the layer knows. */
#define ACT_CL_FN(n, r, p, a, k) ID_##n,
#define ACT_CL_ENQ(n, r, p, a, ae, b) ID_##n,
#define ACT_CL_SPECIAL(n) ID_##n,
#define ACT_CL_SKIP(n) ID_##n,
#define ACT_CL_EXT(n, r, p, a, k)
enum {
#include "dispatch_gen.h"
    ID_DISPATCH_END,
#undef ACT_CL_FN
#undef ACT_CL_ENQ
#undef ACT_CL_SPECIAL
#undef ACT_CL_SKIP
#undef ACT_CL_EXT
#define ACT_CL_FN(n, r, p, a, k)
#define ACT_CL_ENQ(n, r, p, a, ae, b)
#define ACT_CL_SPECIAL(n)
#define ACT_CL_SKIP(n)
#define ACT_CL_EXT(n, r, p, a, k) IDX_##n,
    IDX_BEFORE_FIRST = ID_DISPATCH_END - 1,
#include "dispatch_gen.h"
    ID_COUNT
};
#undef ACT_CL_FN
#undef ACT_CL_ENQ
#undef ACT_CL_SPECIAL
#undef ACT_CL_SKIP
#undef ACT_CL_EXT

#define ACT_CL_FN(n, r, p, a, k) #n,
#define ACT_CL_ENQ(n, r, p, a, ae, b) #n,
#define ACT_CL_SPECIAL(n) #n,
#define ACT_CL_SKIP(n) #n,
#define ACT_CL_EXT(n, r, p, a, k)
static const char *const fn_names[ID_COUNT] = {
#include "dispatch_gen.h"
#undef ACT_CL_FN
#undef ACT_CL_ENQ
#undef ACT_CL_SPECIAL
#undef ACT_CL_SKIP
#undef ACT_CL_EXT
#define ACT_CL_FN(n, r, p, a, k)
#define ACT_CL_ENQ(n, r, p, a, ae, b)
#define ACT_CL_SPECIAL(n)
#define ACT_CL_SKIP(n)
#define ACT_CL_EXT(n, r, p, a, k) #n,
#include "dispatch_gen.h"
};
#undef ACT_CL_FN
#undef ACT_CL_ENQ
#undef ACT_CL_SPECIAL
#undef ACT_CL_SKIP
#undef ACT_CL_EXT
/* Outside the passes above, extension lines expand to nothing. */
#define ACT_CL_EXT(n, r, p, a, k)
static uint32_t fn_lens[ID_COUNT];

/* ---- process-wide layer state -------------------------------------------- */

static cl_icd_dispatch g_next;  /* the next layer or the loader */
static cl_icd_dispatch g_layer; /* our wrappers */
static cl_uint g_next_entries;
enum { LAYER_NONE = 0, LAYER_ON = 1, LAYER_GONE = 2 };
static _Atomic int g_layer_state;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char *g_layers_env; /* OPENCL_LAYERS as the plugin set it */
static _Atomic uint64_t g_corr;
static _Atomic uint64_t g_gen;
static _Atomic int g_late_warned;
static _Atomic int g_sel_device; /* the instance keeps some device type */

/* The instance, see ocl_inst below. */
struct ocl_inst;
static _Atomic(struct ocl_inst *) g_active; /* collecting instance */
/* A forked child of a process that used OpenCL through this layer: its
 * first call wakes its lazily started session (lazy_wake.h). Not from the
 * fork handler itself: the other plugins' handlers (and this one's locks)
 * are not done yet there. */
static _Atomic int g_wake_pending;

static int ocl_wake_now(void)
{
    atomic_store(&g_wake_pending, 0);
    plugin_lazy_wake();
    return atomic_load(&g_active) != NULL;
}

/* 1 if no instance collects: the wrappers' first test (one load). */
static inline int ocl_inactive(void)
{
    if (__builtin_expect(atomic_load_explicit(&g_active, memory_order_relaxed) != NULL, 1))
        return 0;
    return !(atomic_load_explicit(&g_wake_pending, memory_order_relaxed) && ocl_wake_now());
}
static _Atomic(struct ocl_inst *) g_inst;   /* initialised instance */

/* ---- thread slots (the busy protocol) ------------------------------------ */

typedef struct ocl_slot {
    _Atomic int busy;
    _Atomic int used;
    struct ocl_slot *next;
} ocl_slot;

static ocl_slot *g_slots; /* under g_mu; never freed */
static pthread_key_t g_slot_key;
static pthread_once_t g_slot_once = PTHREAD_ONCE_INIT;
static _Thread_local ocl_slot *tl_slot;
static _Thread_local uint64_t tl_tid;

static void slot_release(void *p)
{
    ocl_slot *s = p;
    atomic_store_explicit(&s->busy, 0, memory_order_release);
    atomic_store_explicit(&s->used, 0, memory_order_release);
}

static void slot_key_init(void)
{
    (void)pthread_key_create(&g_slot_key, slot_release);
}

static ocl_slot *slot_get(void)
{
    if (__builtin_expect(tl_slot != NULL, 1))
        return tl_slot;
    pthread_once(&g_slot_once, slot_key_init);
    pthread_mutex_lock(&g_mu);
    ocl_slot *s = g_slots;
    for (; s; s = s->next) {
        int expect = 0;
        if (atomic_compare_exchange_strong(&s->used, &expect, 1))
            break;
    }
    if (!s) {
        s = calloc(1, sizeof *s);
        if (s) {
            atomic_store(&s->used, 1);
            s->next = g_slots;
            g_slots = s;
        }
    }
    pthread_mutex_unlock(&g_mu);
    if (s)
        pthread_setspecific(g_slot_key, s);
    tl_slot = s;
    tl_tid = (uint64_t)syscall(SYS_gettid);
    return s;
}

static struct ocl_inst *ocl_enter(ocl_slot *sl)
{
    atomic_store_explicit(&sl->busy, 1, memory_order_seq_cst);
    struct ocl_inst *s = atomic_load_explicit(&g_active, memory_order_seq_cst);
    if (!s)
        atomic_store_explicit(&sl->busy, 0, memory_order_release);
    return s;
}

static void ocl_leave(ocl_slot *sl)
{
    atomic_store_explicit(&sl->busy, 0, memory_order_release);
}

/* Waits (bounded) until no other thread is inside a busy window. The
 * calling thread's own slot is skipped: a signal handler that writes the
 * trace may have interrupted it inside one. Returns 0 if all went idle. */
static int quiesce(void)
{
    int stuck = 0;
    pthread_mutex_lock(&g_mu);
    for (ocl_slot *s = g_slots; s; s = s->next) {
        if (s == tl_slot)
            continue;
        int spins = 0;
        while (atomic_load_explicit(&s->busy, memory_order_acquire) &&
               spins++ < QUIESCE_SPINS)
            sched_yield();
        if (atomic_load_explicit(&s->busy, memory_order_acquire))
            stuck = 1;
    }
    pthread_mutex_unlock(&g_mu);
    return stuck ? -1 : 0;
}

/* ---- devices ------------------------------------------------------------- */

typedef struct ocl_device {
    cl_device_id id;
    pthread_mutex_t mu; /* guards the clock state */
    int have_offset;
    int64_t offset;   /* host_ns = device_ns + offset */
    uint64_t gen;     /* instance generation idx is valid for */
    uint32_t idx;     /* plugin device index for that instance */
    int timer_ok;     /* clGetDeviceAndHostTimer works */
} ocl_device;

static ocl_device g_devs[MAX_DEVICES];
static uint32_t g_ndevs; /* under g_mu */

static ocl_device *device_for(cl_device_id id)
{
    pthread_mutex_lock(&g_mu);
    ocl_device *d = NULL;
    for (uint32_t i = 0; i < g_ndevs; i++)
        if (g_devs[i].id == id)
            d = &g_devs[i];
    if (!d && g_ndevs < MAX_DEVICES) {
        d = &g_devs[g_ndevs++];
        d->id = id;
        pthread_mutex_init(&d->mu, NULL);
        d->timer_ok = -1;
    }
    pthread_mutex_unlock(&g_mu);
    return d;
}

/* ---- queues -------------------------------------------------------------- */

typedef struct ocl_op ocl_op;

#define PROPS_MAX 16
/* Lanes of an out-of-order queue (see ocl_queue.lane_end). */
#define OCL_LANES 8
#define OCL_LANE_SHIFT 40
static inline uint64_t ocl_lane_stream(uint64_t stream, int lane)
{
    return stream | ((uint64_t)lane << OCL_LANE_SHIFT);
}
static inline uint64_t ocl_queue_of(uint64_t stream)
{
    return stream & ((UINT64_C(1) << OCL_LANE_SHIFT) - 1);
}


typedef struct ocl_queue {
    _Atomic(cl_command_queue) handle; /* NULL: never used */
    /* The program released its last reference: the record is free once
     * its pending ops are harvested (they keep the command objects, and
     * so the queue itself, alive). The handle stays, so that answers about
     * the queue's events still find the program's properties. */
    _Atomic int released;
    /* The program's references (create 1, clRetainCommandQueue +1,
     * clReleaseCommandQueue -1); -1: not known (a queue the layer found
     * rather than saw created). Counted, not read back from the runtime:
     * the runtime's count includes what the layer's events hold. */
    _Atomic int app_refs;
    ocl_device *dev;
    uint64_t stream;                  /* unique per queue in the process */
    cl_command_queue_properties app_props; /* what the program asked for */
    cl_queue_properties app_array[PROPS_MAX * 2 + 1];
    size_t app_array_n;  /* entries incl. the terminating 0; 0: none given */
    int profiling;       /* CL_QUEUE_PROFILING_ENABLE is on */
    int in_order;
    uint64_t named_gen;  /* instance generation the stream was named for */
    pthread_mutex_t mu;  /* guards the pending list and last_end */
    ocl_op *head, *tail;
    uint32_t npending;
    int64_t last_end;    /* end of the last span mapped (in-order queues) */
    /* Out-of-order queues: commands may run at once, and spans on one
     * track must nest. Each lane is a track of its own (the queue's stream
     * with the lane in bits 40 and up); lane_end[k] is its last span's
     * end, 0 when unused. Lane 0 is the queue's own stream. */
    int64_t lane_end[OCL_LANES];
} ocl_queue;

static ocl_queue g_queues[MAX_QUEUES]; /* append-only, recycled in place */
static _Atomic uint32_t g_nqueues;
static _Atomic uint64_t g_next_stream;

static ocl_queue *queue_find(cl_command_queue h)
{
    if (!h)
        return NULL;
    uint32_t n = atomic_load_explicit(&g_nqueues, memory_order_acquire);
    for (uint32_t i = n; i-- > 0;)
        if (atomic_load_explicit(&g_queues[i].handle, memory_order_acquire) == h)
            return &g_queues[i];
    return NULL;
}

static void harvest_released(void);
static _Atomic int g_forced_any; /* a queue profiles only for the layer */

/* Registers a queue the program created (@p created: the program holds
 * one reference) or found later. */
static ocl_queue *queue_add(cl_command_queue h, cl_device_id dev,
                            cl_command_queue_properties app_props,
                            const cl_queue_properties *app_array,
                            size_t app_array_n, int created)
{
    if (atomic_load_explicit(&g_nqueues, memory_order_relaxed) == MAX_QUEUES)
        harvest_released(); /* a released record still holding ops */
    cl_command_queue_properties actual = 0;
    if (g_next.clGetCommandQueueInfo(h, CL_QUEUE_PROPERTIES, sizeof actual,
                                     &actual, NULL) != CL_SUCCESS)
        actual = app_props;
    ocl_device *d = device_for(dev);
    pthread_mutex_lock(&g_mu);
    ocl_queue *q = NULL;
    uint32_t n = atomic_load_explicit(&g_nqueues, memory_order_relaxed);
    for (uint32_t i = 0; i < n && !q; i++) {
        ocl_queue *c = &g_queues[i];
        cl_command_queue ch = atomic_load(&c->handle);
        if (ch == h) {
            q = c; /* a released handle's address came back */
        } else if (atomic_load(&c->released)) {
            pthread_mutex_lock(&c->mu);
            if (!c->head)
                q = c;
            pthread_mutex_unlock(&c->mu);
        }
    }
    if (!q && n < MAX_QUEUES) {
        q = &g_queues[n];
        pthread_mutex_init(&q->mu, NULL);
        atomic_store_explicit(&g_nqueues, n + 1, memory_order_release);
    }
    if (q && !d)
        q = NULL; /* more devices than the table holds: untraced */
    if (q) {
        q->dev = d;
        q->stream = atomic_fetch_add(&g_next_stream, 1) + 1;
        q->app_props = app_props;
        q->app_array_n = app_array_n <= PROPS_MAX * 2 + 1 ? app_array_n : 0;
        if (q->app_array_n)
            memcpy(q->app_array, app_array,
                   q->app_array_n * sizeof app_array[0]);
        q->profiling = (actual & CL_QUEUE_PROFILING_ENABLE) != 0;
        q->in_order = (actual & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) == 0;
        q->named_gen = 0;
        q->last_end = INT64_MIN;
        memset(q->lane_end, 0, sizeof q->lane_end);
        atomic_store(&q->app_refs, created ? 1 : -1);
        if (q->profiling && !(app_props & CL_QUEUE_PROFILING_ENABLE))
            atomic_store(&g_forced_any, 1);
        atomic_store_explicit(&q->handle, h, memory_order_release);
        atomic_store_explicit(&q->released, 0, memory_order_release);
    }
    pthread_mutex_unlock(&g_mu);
    return q;
}

/* The record of @p h, registering a queue created before the layer was
 * active (its properties are what it has). */
static ocl_queue *queue_get(cl_command_queue h)
{
    ocl_queue *q = queue_find(h);
    if (q || !h)
        return q;
    cl_device_id dev = NULL;
    cl_command_queue_properties p = 0;
    if (g_next.clGetCommandQueueInfo(h, CL_QUEUE_DEVICE, sizeof dev, &dev,
                                     NULL) != CL_SUCCESS ||
        g_next.clGetCommandQueueInfo(h, CL_QUEUE_PROPERTIES, sizeof p, &p,
                                     NULL) != CL_SUCCESS)
        return NULL;
    return queue_add(h, dev, p, NULL, 0, 0);
}

/* ---- ops ------------------------------------------------------------------ */

enum { OP_KERNEL = 1, OP_MEMCPY, OP_MEMSET };
enum { DIR_HTOD = 0, DIR_DTOH, DIR_DTOD };
static const char *const dir_names[] = {"HtoD", "DtoH", "DtoD"};
static const char *const copy_names[] = {"Memcpy HtoD", "Memcpy DtoH",
                                         "Memcpy DtoD"};

struct ocl_op {
    ocl_op *next;
    cl_event ev;        /* the op's one reference */
    ocl_queue *q;
    /* The queue's device and stream at enqueue: what the span is emitted
     * with, even after the record is recycled (a late op, see g_late). */
    ocl_device *dev;
    uint64_t stream;
    int in_order;
    uint64_t gen;       /* instance generation at enqueue */
    uint64_t corr, ext;
    int64_t h0, h1;     /* host time around the enqueue call */
    int64_t start, end; /* device span on the host clock, at harvest */
    int timed;          /* 1: start/end valid, 2: and clamped */
    int kind, dir, fn;
    uint64_t bytes;
    uint32_t work_dim;
    size_t gws[3], lws[3];
    uint32_t name_len;
    char name[NAME_CAP];
};

typedef struct ocl_slab {
    struct ocl_slab *next;
    ocl_op ops[OPS_PER_SLAB];
} ocl_slab;

static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static ocl_op *g_free_ops;
static ocl_slab *g_slabs; /* reachable: never reported as a leak */

static ocl_op *op_alloc(void)
{
    pthread_mutex_lock(&g_pool_mu);
    if (!g_free_ops) {
        ocl_slab *sb = calloc(1, sizeof *sb);
        if (sb) {
            sb->next = g_slabs;
            g_slabs = sb;
            for (uint32_t i = 0; i < OPS_PER_SLAB; i++) {
                sb->ops[i].next = g_free_ops;
                g_free_ops = &sb->ops[i];
            }
        }
    }
    ocl_op *op = g_free_ops;
    if (op)
        g_free_ops = op->next;
    pthread_mutex_unlock(&g_pool_mu);
    if (op) {
        op->next = NULL;
        op->ev = NULL;
        op->bytes = 0;
        op->work_dim = 0;
        op->name_len = 0;
        op->dir = DIR_DTOD;
    }
    return op;
}

static void op_free(ocl_op *op)
{
    pthread_mutex_lock(&g_pool_mu);
    op->next = g_free_ops;
    g_free_ops = op;
    pthread_mutex_unlock(&g_pool_mu);
}

/* ---- the plugin instance ------------------------------------------------- */

typedef struct ocl_inst {
    const act_plugin_host *host;
    uint64_t gen;
    int sel_runtime, sel_kernel, sel_memcpy, sel_memset;
    _Atomic uint64_t n_calls, n_ops, n_spans, n_noprof, n_clamped,
        n_failed, n_dropped_ops;
    /* Calls that launched nothing, succeeded and returned within
     * min_call_ns are counted here, per function, and not drawn
     * (OPENCL_MIN_CALL_NS; see emit_host_span). */
    int64_t min_call_ns;
    _Atomic uint64_t n_short;
    _Atomic uint32_t short_by_fn[ID_COUNT];
} ocl_inst;

static void inst_log(ocl_inst *s, int32_t level, const char *msg)
{
    s->host->log(s->host->ctx, level, msg);
}

static void set_arg_u(act_plugin_arg *a, const char *k, uint64_t v)
{
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->kind = ACT_PLUGIN_ARG_UINT;
    a->key = k;
    a->key_len = (uint32_t)strlen(k);
    a->v.u = v;
}

static void set_arg_i(act_plugin_arg *a, const char *k, int64_t v)
{
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->kind = ACT_PLUGIN_ARG_INT;
    a->key = k;
    a->key_len = (uint32_t)strlen(k);
    a->v.i = v;
}

static void set_arg_s(act_plugin_arg *a, const char *k, const char *v,
                      size_t n)
{
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->kind = ACT_PLUGIN_ARG_STRING;
    a->key = k;
    a->key_len = (uint32_t)strlen(k);
    a->v.s.ptr = v;
    a->v.s.len = n;
}

/* One device query into a caller buffer (NUL-terminated, "" on error). */
static void dev_str(cl_device_id d, cl_device_info what, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (g_next.clGetDeviceInfo(d, what, cap - 1, buf, NULL) != CL_SUCCESS)
        buf[0] = '\0';
    buf[cap - 1] = '\0';
}

/* Describes @p d to the instance once per generation. Called with d->mu
 * not held, inside a busy window. */
static int device_describe(ocl_inst *s, ocl_device *d)
{
    if (d->gen == s->gen)
        return 0;
    pthread_mutex_lock(&g_mu);
    if (d->gen != s->gen) {
        char name[256], vendor[256], ver[256], drv[256];
        dev_str(d->id, CL_DEVICE_NAME, name, sizeof name);
        dev_str(d->id, CL_DEVICE_VENDOR, vendor, sizeof vendor);
        dev_str(d->id, CL_DEVICE_VERSION, ver, sizeof ver);
        dev_str(d->id, CL_DRIVER_VERSION, drv, sizeof drv);
        cl_uint cus = 0, mhz = 0;
        cl_ulong mem = 0;
        cl_device_type type = 0;
        g_next.clGetDeviceInfo(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus,
                               &cus, NULL);
        g_next.clGetDeviceInfo(d->id, CL_DEVICE_MAX_CLOCK_FREQUENCY,
                               sizeof mhz, &mhz, NULL);
        g_next.clGetDeviceInfo(d->id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem,
                               &mem, NULL);
        g_next.clGetDeviceInfo(d->id, CL_DEVICE_TYPE, sizeof type, &type,
                               NULL);
        const char *tname = type & CL_DEVICE_TYPE_GPU ? "GPU"
                            : type & CL_DEVICE_TYPE_CPU ? "CPU"
                            : type & CL_DEVICE_TYPE_ACCELERATOR ? "ACCELERATOR"
                                                                : "OTHER";
        act_plugin_arg props[7];
        set_arg_s(&props[0], "openclVersion", ver, strlen(ver));
        set_arg_s(&props[1], "driverVersion", drv, strlen(drv));
        set_arg_u(&props[2], "numComputeUnits", cus);
        set_arg_u(&props[3], "totalGlobalMem", mem);
        set_arg_u(&props[4], "clockRateMHz", mhz);
        set_arg_s(&props[5], "deviceType", tname, strlen(tname));
        set_arg_s(&props[6], "backend", "opencl", 6);
        act_plugin_device dev;
        memset(&dev, 0, sizeof dev);
        dev.struct_size = sizeof dev;
        dev.name = name[0] ? name : "OpenCL device";
        dev.vendor = vendor;
        dev.props = props;
        dev.nprops = 7;
        uint32_t idx = 0;
        if (s->host->add_device(s->host->ctx, &dev, &idx) == 0) {
            d->idx = idx;
            d->gen = s->gen;
        }
    }
    int ok = d->gen == s->gen;
    pthread_mutex_unlock(&g_mu);
    return ok ? 0 : -1;
}

/* Names the stream of @p op's queue once per instance (the queue's
 * record may have been recycled since the op was enqueued: then the old
 * stream is named from the op, each time). */
static void queue_name(ocl_inst *s, const ocl_op *op)
{
    ocl_queue *q = op->q;
    int same = q->stream == op->stream;
    if (same && q->named_gen == s->gen)
        return;
    char buf[80];
    unsigned lane = (unsigned)(op->stream >> OCL_LANE_SHIFT);
    int n = lane ? snprintf(buf, sizeof buf, "queue %llu (out-of-order), lane %u",
                            (unsigned long long)ocl_queue_of(op->stream), lane)
                 : snprintf(buf, sizeof buf, "queue %llu (%s)",
                            (unsigned long long)op->stream,
                            op->in_order ? "in-order" : "out-of-order");
    s->host->name_stream(s->host->ctx, op->dev->idx, op->stream, buf,
                         (uint32_t)n);
    if (same)
        q->named_gen = s->gen;
}

/* ---- clock mapping ------------------------------------------------------- */

/* First estimate from clGetDeviceAndHostTimer, where the device has it:
 * device and "host timer" together, then the host timer against our clock
 * (bracketed). pocl 3.1 answers CL_INVALID_OPERATION. */
static void clock_seed(ocl_device *d)
{
    if (d->timer_ok >= 0)
        return;
    d->timer_ok = 0;
    if (!g_next.clGetDeviceAndHostTimer || !g_next.clGetHostTimer)
        return;
    cl_ulong dev_ts = 0, host_ts = 0, host2 = 0;
    if (g_next.clGetDeviceAndHostTimer(d->id, &dev_ts, &host_ts) != CL_SUCCESS)
        return;
    int64_t a = now_ns();
    if (g_next.clGetHostTimer(d->id, &host2) != CL_SUCCESS)
        return;
    int64_t b = now_ns();
    int64_t host_to_ours = a + (b - a) / 2 - (int64_t)host2;
    d->offset = (int64_t)host_ts - (int64_t)dev_ts + host_to_ours;
    d->have_offset = 1;
    d->timer_ok = 1;
}

/* Maps one command's device times (queued, start, end) to the host clock;
 * @p seen is a host time at which the command was known complete. Returns
 * 1 if the result had to be clamped into [h0, seen]. */
static int clock_map(ocl_device *d, const ocl_op *op, cl_ulong dq,
                     cl_ulong ds, cl_ulong de, int64_t seen, int64_t *start,
                     int64_t *end)
{
    int64_t lo = op->h0 - (int64_t)dq;
    int64_t hi = op->h1 - (int64_t)dq;
    int64_t hi2 = seen - (int64_t)de;
    if (hi2 < hi)
        hi = hi2;
    pthread_mutex_lock(&d->mu);
    clock_seed(d);
    if (lo <= hi) {
        if (!d->have_offset) {
            d->offset = lo + (hi - lo) / 2;
            d->have_offset = 1;
        } else if (d->offset < lo) {
            d->offset = lo;
        } else if (d->offset > hi) {
            d->offset = hi;
        }
    } else if (!d->have_offset) {
        d->offset = lo;
        d->have_offset = 1;
    }
    int64_t o = d->offset;
    pthread_mutex_unlock(&d->mu);
    int64_t s = (int64_t)ds + o, e = (int64_t)de + o;
    int clamped = 0;
    if (s < op->h0) {
        s = op->h0;
        clamped = 1;
    }
    if (e > seen) {
        e = seen;
        clamped = 1;
    }
    if (e < s)
        e = s;
    *start = s;
    *end = e;
    return clamped;
}

/* ---- emitting ------------------------------------------------------------ */

/* A runtime span for call @p fn. @p launch: an enqueue (always drawn, with
 * its correlation when it has device work). Any other call that succeeded
 * in less than min_call_ns (1 us by default) is counted, not drawn, as
 * libkineto counts and drops the short, noisy CUDA runtime calls
 * (cudaGetDevice, cudaGetLastError, cudaEventCreate/Destroy, ...):
 * clSetKernelArg, clGet*Info, clRetain/clRelease* and a clFinish with
 * nothing to wait for take 0.05-1 us on pocl, dozens per kernel. Beyond
 * the noise, HolisticTraceAnalysis rounds every span in to whole
 * microseconds (start up, end down), so a host span inside one
 * microsecond gets a duration of -1 and, next to one that rounds to 0,
 * stops its call-stack analysis ("Unexpected case"); a span of 1 us or
 * more never rounds below 0. Kineto's traces meet the same rounding. */
static void emit_host_span(ocl_inst *s, int fn, int64_t t0, int64_t t1,
                           cl_int err, uint64_t corr, uint64_t ext,
                           const act_plugin_arg *extra, uint32_t nextra,
                           int launch)
{
    if (!s->sel_runtime)
        return;
    if (!launch && err == CL_SUCCESS && t1 - t0 < s->min_call_ns) {
        atomic_fetch_add_explicit(&s->n_short, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->short_by_fn[fn], 1,
                                  memory_order_relaxed);
        return;
    }
    act_plugin_arg args[4];
    uint32_t n = 0;
    if (err != CL_SUCCESS)
        set_arg_i(&args[n++], "error", err);
    for (uint32_t i = 0; i < nextra && n < 4; i++)
        args[n++] = extra[i];
    act_plugin_record r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.kind = ACT_PLUGIN_RECORD_HOST_SPAN;
    r.type = ACT_RUNTIME;
    r.device = ACT_PLUGIN_HOST_DEVICE;
    r.stream = tl_tid;
    r.start_ns = t0;
    r.end_ns = t1 < t0 ? t0 : t1;
    r.correlation = corr;
    r.external_id = ext;
    r.name = fn_names[fn];
    r.name_len = fn_lens[fn];
    r.nargs = n;
    r.args = n ? args : NULL;
    s->host->emit(s->host->ctx, &r, 1);
    atomic_fetch_add_explicit(&s->n_calls, 1, memory_order_relaxed);
}

/* The common tail of a plain wrapper: one runtime span. */
static void call_done(int fn, int64_t t0, cl_int err)
{
    int64_t t1 = now_ns();
    ocl_slot *sl = slot_get();
    if (!sl)
        return;
    ocl_inst *s = ocl_enter(sl);
    if (s) {
        emit_host_span(s, fn, t0, t1, err, 0, 0, NULL, 0, 0);
        ocl_leave(sl);
    }
}

/* Reads the op's profiling times and maps them to the host clock. Called
 * with the queue's mutex held, in completion order, so that the spans of
 * an in-order queue never overlap even when the offset moved between two
 * of them (a start is moved just past the previous end; not counted as a
 * clamp). */
static void op_times(ocl_op *op, int64_t seen)
{
    cl_ulong dq = 0, ds = 0, de = 0;
    op->timed = 0;
    if (g_next.clGetEventProfilingInfo(op->ev, CL_PROFILING_COMMAND_QUEUED,
                                       sizeof dq, &dq, NULL) != CL_SUCCESS ||
        g_next.clGetEventProfilingInfo(op->ev, CL_PROFILING_COMMAND_START,
                                       sizeof ds, &ds, NULL) != CL_SUCCESS ||
        g_next.clGetEventProfilingInfo(op->ev, CL_PROFILING_COMMAND_END,
                                       sizeof de, &de, NULL) != CL_SUCCESS ||
        ds == 0 || de < ds)
        return;
    if (dq == 0 || dq > ds)
        dq = ds;
    int clamped = clock_map(op->dev, op, dq, ds, de, seen, &op->start,
                            &op->end);
    /* A command whose start and end are one time (pocl says so of a copy
     * it need not make: a buffer with CL_MEM_USE_HOST_PTR) is drawn 1 ns
     * long. Several of them done at once then lie one after the other on
     * their track instead of at one ts, where a viewer binds every flow
     * to one of them (hashcat's benchmark: 3 of 2207 launches joined to
     * another command's span). */
    if (op->end <= op->start)
        op->end = op->start + 1;
    ocl_queue *q = op->q;
    if (q->in_order) {
        /* Never before the previous op's end (touching is fine: the
         * writer keeps ts + dur below the next ts in doubles). */
        if (q->last_end != INT64_MIN && op->start < q->last_end)
            op->start = q->last_end;
        if (op->end <= op->start)
            op->end = op->start + 1;
        q->last_end = op->end;
    } else {
        /* The first lane free at this start; with all busy, the one that
         * frees first (its spans may then overlap: at most OCL_LANES
         * commands at once are drawn apart). */
        int k = 0;
        for (int j = 0; j < OCL_LANES; j++) {
            if (q->lane_end[j] <= op->start) {
                k = j;
                break;
            }
            if (q->lane_end[j] < q->lane_end[k])
                k = j;
        }
        if (op->end > q->lane_end[k])
            q->lane_end[k] = op->end;
        op->stream = ocl_lane_stream(op->stream, k);
    }
    op->timed = clamped ? 2 : 1;
}

/* Emits one harvested op as a device span (inside a busy window). */
static void emit_op(ocl_inst *s, ocl_op *op)
{
    if (!op->timed) {
        atomic_fetch_add_explicit(&s->n_noprof, 1, memory_order_relaxed);
        return;
    }
    if (device_describe(s, op->dev) != 0)
        return;
    queue_name(s, op);
    int64_t start = op->start, end = op->end;
    if (op->timed == 2)
        atomic_fetch_add_explicit(&s->n_clamped, 1, memory_order_relaxed);
    act_plugin_arg args[10];
    uint32_t n = 0;
    act_plugin_record r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.kind = ACT_PLUGIN_RECORD_DEVICE_SPAN;
    r.device = op->dev->idx;
    r.stream = op->stream;
    r.start_ns = start;
    r.end_ns = end;
    r.correlation = op->corr;
    r.external_id = op->ext;
    if (op->kind == OP_KERNEL) {
        r.type = ACT_CONCURRENT_KERNEL;
        r.name = op->name;
        r.name_len = op->name_len;
        static const char *const gk[3] = {"global_x", "global_y", "global_z"};
        static const char *const lk[3] = {"local_x", "local_y", "local_z"};
        for (uint32_t i = 0; i < op->work_dim && i < 3; i++)
            set_arg_u(&args[n++], gk[i], op->gws[i]);
        for (uint32_t i = 0; i < op->work_dim && i < 3; i++)
            if (op->lws[i])
                set_arg_u(&args[n++], lk[i], op->lws[i]);
    } else if (op->kind == OP_MEMCPY) {
        r.type = ACT_GPU_MEMCPY;
        r.name = copy_names[op->dir];
        r.name_len = (uint32_t)strlen(r.name);
        set_arg_s(&args[n++], "direction", dir_names[op->dir], 4);
        set_arg_u(&args[n++], "bytes", op->bytes);
    } else {
        r.type = ACT_GPU_MEMSET;
        r.name = "Memset";
        r.name_len = 6;
        set_arg_u(&args[n++], "bytes", op->bytes);
    }
    set_arg_u(&args[n++], "queue", ocl_queue_of(op->stream));
    set_arg_s(&args[n++], "function", fn_names[op->fn], fn_lens[op->fn]);
    r.args = args;
    r.nargs = n;
    if (s->host->emit(s->host->ctx, &r, 1) == 1)
        atomic_fetch_add_explicit(&s->n_spans, 1, memory_order_relaxed);
}

/* ---- harvest --------------------------------------------------------------- */

static int op_complete(const ocl_op *op)
{
    cl_int st = CL_QUEUED;
    if (g_next.clGetEventInfo(op->ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                              sizeof st, &st, NULL) != CL_SUCCESS)
        return -1; /* unusable: drop it */
    return st == CL_COMPLETE ? 1 : st < 0 ? -1 : 0;
}

/* Ops harvested while no instance collects but one was stopped and not
 * yet flushed (g_flush_gen: a program thread's clFinish between the
 * plugin's stop and its flush): timed and released like any other, then
 * kept here for the flush to emit. g_late_mu guards the list and the
 * generation, so an op is either kept before the flush takes the list
 * or found too late and counted there (never lost unseen). */
static pthread_mutex_t g_late_mu = PTHREAD_MUTEX_INITIALIZER;
static ocl_op *g_late;
static uint64_t g_flush_gen; /* under g_late_mu; 0: none */

/* Keeps @p op for the flush of its instance; 0 if it is not waiting. */
static int late_keep(ocl_op *op)
{
    pthread_mutex_lock(&g_late_mu);
    int keep = g_flush_gen && op->gen == g_flush_gen;
    if (keep) {
        op->next = g_late;
        g_late = op;
    }
    pthread_mutex_unlock(&g_late_mu);
    return keep;
}

/* Detaches the completed ops of @p q (all of those enqueued before
 * @p done_before are known complete), then emits them to @p s (may be
 * NULL: released only) and releases their events. Never blocks. */
static void harvest(ocl_queue *q, ocl_inst *s, int64_t done_before)
{
    ocl_op *done = NULL, **dtail = &done;
    int64_t seen;
    pthread_mutex_lock(&q->mu);
    if (!q->head) {
        pthread_mutex_unlock(&q->mu);
        return;
    }
    ocl_op **pp = &q->head, *prev = NULL;
    while (*pp) {
        ocl_op *op = *pp;
        int c = op->h1 <= done_before ? 1 : op_complete(op);
        if (c == 0) {
            if (q->in_order)
                break;
            prev = op;
            pp = &op->next;
            continue;
        }
        *pp = op->next;
        if (q->tail == op)
            q->tail = prev;
        q->npending--;
        op->next = NULL;
        op->kind = c < 0 ? -op->kind : op->kind;
        *dtail = op;
        dtail = &op->next;
    }
    seen = now_ns();
    for (ocl_op *op = done; op; op = op->next)
        if (op->kind > 0)
            op_times(op, seen);
    pthread_mutex_unlock(&q->mu);
    while (done) {
        ocl_op *op = done;
        done = op->next;
        int keep = 0;
        if (op->gen == 0)
            ; /* inherited across fork(): the parent's work, not ours */
        else if (op->kind > 0 && s && op->gen == s->gen)
            emit_op(s, op);
        else if (op->kind < 0 && s)
            atomic_fetch_add_explicit(&s->n_failed, 1, memory_order_relaxed);
        else if (s)
            atomic_fetch_add_explicit(&s->n_dropped_ops, 1,
                                      memory_order_relaxed);
        else if (op->kind > 0)
            keep = late_keep(op);
        g_next.clReleaseEvent(op->ev);
        op->ev = NULL;
        if (!keep)
            op_free(op);
    }
}

static void harvest_all(ocl_inst *s, int64_t done_before)
{
    uint32_t n = atomic_load_explicit(&g_nqueues, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        harvest(&g_queues[i], s, done_before);
}

/* Harvest from a wrapper: inside a busy window if an instance collects,
 * else only to release what is done. */
static void harvest_from_call(ocl_queue *q, int64_t done_before)
{
    ocl_slot *sl = slot_get();
    ocl_inst *s = sl ? ocl_enter(sl) : NULL;
    if (q)
        harvest(q, s, done_before);
    else
        harvest_all(s, done_before);
    if (s)
        ocl_leave(sl);
}

/* ---- describing enqueues ------------------------------------------------- */

static uint64_t region_bytes(const size_t *region)
{
    return region ? (uint64_t)region[0] * region[1] * region[2] : 0;
}

static uint64_t image_bytes(cl_mem image, const size_t *region)
{
    size_t el = 0;
    if (g_next.clGetImageInfo(image, CL_IMAGE_ELEMENT_SIZE, sizeof el, &el,
                              NULL) != CL_SUCCESS)
        el = 0;
    return region_bytes(region) * el;
}

static int copy_op(ocl_op *op, int dir, uint64_t bytes)
{
    op->kind = OP_MEMCPY;
    op->dir = dir;
    op->bytes = bytes;
    return 1;
}

static int fill_op(ocl_op *op, uint64_t bytes)
{
    op->kind = OP_MEMSET;
    op->bytes = bytes;
    return 1;
}

static int kernel_op(ocl_op *op, cl_kernel k, cl_uint dim, const size_t *g,
                     const size_t *l)
{
    op->kind = OP_KERNEL;
    size_t len = 0;
    if (k && g_next.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, NAME_CAP,
                                    op->name, &len) == CL_SUCCESS &&
        len > 1) {
        op->name_len = (uint32_t)(len - 1);
    } else {
        static const char unknown[] = "kernel";
        memcpy(op->name, unknown, sizeof unknown);
        op->name_len = sizeof unknown - 1;
    }
    op->work_dim = dim > 3 ? 3 : dim;
    for (cl_uint i = 0; i < op->work_dim; i++) {
        op->gws[i] = g ? g[i] : 1;
        op->lws[i] = l ? l[i] : 0;
    }
    return 1;
}

static int desc_clEnqueueReadBuffer(ocl_op *op, cl_command_queue q, cl_mem b,
                                    cl_bool bl, size_t off, size_t size,
                                    void *p, cl_uint n, const cl_event *w,
                                    cl_event *e)
{
    return copy_op(op, DIR_DTOH, size);
}
static int desc_clEnqueueWriteBuffer(ocl_op *op, cl_command_queue q, cl_mem b,
                                     cl_bool bl, size_t off, size_t size,
                                     const void *p, cl_uint n,
                                     const cl_event *w, cl_event *e)
{
    return copy_op(op, DIR_HTOD, size);
}
static int desc_clEnqueueCopyBuffer(ocl_op *op, cl_command_queue q, cl_mem s,
                                    cl_mem d, size_t so, size_t doff,
                                    size_t size, cl_uint n, const cl_event *w,
                                    cl_event *e)
{
    return copy_op(op, DIR_DTOD, size);
}
static int desc_clEnqueueReadImage(ocl_op *op, cl_command_queue q, cl_mem im,
                                   cl_bool bl, const size_t *o,
                                   const size_t *r, size_t rp, size_t sp,
                                   void *p, cl_uint n, const cl_event *w,
                                   cl_event *e)
{
    return copy_op(op, DIR_DTOH, image_bytes(im, r));
}
static int desc_clEnqueueWriteImage(ocl_op *op, cl_command_queue q, cl_mem im,
                                    cl_bool bl, const size_t *o,
                                    const size_t *r, size_t rp, size_t sp,
                                    const void *p, cl_uint n,
                                    const cl_event *w, cl_event *e)
{
    return copy_op(op, DIR_HTOD, image_bytes(im, r));
}
static int desc_clEnqueueCopyImage(ocl_op *op, cl_command_queue q, cl_mem s,
                                   cl_mem d, const size_t *so,
                                   const size_t *dof, const size_t *r,
                                   cl_uint n, const cl_event *w, cl_event *e)
{
    return copy_op(op, DIR_DTOD, image_bytes(s, r));
}
static int desc_clEnqueueCopyImageToBuffer(ocl_op *op, cl_command_queue q,
                                           cl_mem s, cl_mem d,
                                           const size_t *so, const size_t *r,
                                           size_t doff, cl_uint n,
                                           const cl_event *w, cl_event *e)
{
    return copy_op(op, DIR_DTOD, image_bytes(s, r));
}
static int desc_clEnqueueCopyBufferToImage(ocl_op *op, cl_command_queue q,
                                           cl_mem s, cl_mem d, size_t so,
                                           const size_t *dof, const size_t *r,
                                           cl_uint n, const cl_event *w,
                                           cl_event *e)
{
    return copy_op(op, DIR_DTOD, image_bytes(d, r));
}
static int desc_clEnqueueUnmapMemObject(ocl_op *op, cl_command_queue q,
                                        cl_mem m, void *p, cl_uint n,
                                        const cl_event *w, cl_event *e)
{
    return copy_op(op, DIR_HTOD, 0);
}
static int desc_clEnqueueNDRangeKernel(ocl_op *op, cl_command_queue q,
                                       cl_kernel k, cl_uint dim,
                                       const size_t *go, const size_t *g,
                                       const size_t *l, cl_uint n,
                                       const cl_event *w, cl_event *e)
{
    return kernel_op(op, k, dim, g, l);
}
static int desc_clEnqueueTask(ocl_op *op, cl_command_queue q, cl_kernel k,
                              cl_uint n, const cl_event *w, cl_event *e)
{
    return kernel_op(op, k, 1, NULL, NULL);
}
static int desc_clEnqueueNativeKernel(ocl_op *op, cl_command_queue q,
                                      void(CL_CALLBACK *fn)(void *),
                                      void *args, size_t cb, cl_uint nm,
                                      const cl_mem *ml, const void **al,
                                      cl_uint n, const cl_event *w,
                                      cl_event *e)
{
    kernel_op(op, NULL, 1, NULL, NULL);
    static const char native[] = "native_kernel";
    memcpy(op->name, native, sizeof native);
    op->name_len = sizeof native - 1;
    return 1;
}
static int desc_clEnqueueReadBufferRect(ocl_op *op, cl_command_queue q,
                                        cl_mem b, cl_bool bl,
                                        const size_t *bo, const size_t *ho,
                                        const size_t *r, size_t a, size_t bb,
                                        size_t c, size_t d, void *p,
                                        cl_uint n, const cl_event *w,
                                        cl_event *e)
{
    return copy_op(op, DIR_DTOH, region_bytes(r));
}
static int desc_clEnqueueWriteBufferRect(ocl_op *op, cl_command_queue q,
                                         cl_mem b, cl_bool bl,
                                         const size_t *bo, const size_t *ho,
                                         const size_t *r, size_t a,
                                         size_t bb, size_t c, size_t d,
                                         const void *p, cl_uint n,
                                         const cl_event *w, cl_event *e)
{
    return copy_op(op, DIR_HTOD, region_bytes(r));
}
static int desc_clEnqueueCopyBufferRect(ocl_op *op, cl_command_queue q,
                                        cl_mem s, cl_mem d, const size_t *so,
                                        const size_t *dof, const size_t *r,
                                        size_t a, size_t b, size_t c,
                                        size_t dd, cl_uint n,
                                        const cl_event *w, cl_event *e)
{
    return copy_op(op, DIR_DTOD, region_bytes(r));
}
static int desc_clEnqueueFillBuffer(ocl_op *op, cl_command_queue q, cl_mem b,
                                    const void *pat, size_t ps, size_t off,
                                    size_t size, cl_uint n, const cl_event *w,
                                    cl_event *e)
{
    return fill_op(op, size);
}
static int desc_clEnqueueFillImage(ocl_op *op, cl_command_queue q, cl_mem im,
                                   const void *color, const size_t *o,
                                   const size_t *r, cl_uint n,
                                   const cl_event *w, cl_event *e)
{
    return fill_op(op, image_bytes(im, r));
}
static int desc_clEnqueueSVMMemcpy(ocl_op *op, cl_command_queue q,
                                   cl_bool bl, void *d, const void *s,
                                   size_t size, cl_uint n, const cl_event *w,
                                   cl_event *e)
{
    return copy_op(op, DIR_DTOD, size);
}
static int desc_clEnqueueSVMMemFill(ocl_op *op, cl_command_queue q, void *p,
                                    const void *pat, size_t ps, size_t size,
                                    cl_uint n, const cl_event *w, cl_event *e)
{
    return fill_op(op, size);
}
static int desc_clEnqueueSVMMap(ocl_op *op, cl_command_queue q, cl_bool bl,
                                cl_map_flags f, void *p, size_t size,
                                cl_uint n, const cl_event *w, cl_event *e)
{
    return copy_op(op, DIR_DTOH, size);
}
static int desc_clEnqueueSVMUnmap(ocl_op *op, cl_command_queue q, void *p,
                                  cl_uint n, const cl_event *w, cl_event *e)
{
    return copy_op(op, DIR_HTOD, 0);
}
/* Enqueues that move no data of their own: a runtime span only. */
#define desc_clEnqueueAcquireGLObjects(...) 0
#define desc_clEnqueueReleaseGLObjects(...) 0
#define desc_clEnqueueAcquireD3D10ObjectsKHR(...) 0
#define desc_clEnqueueReleaseD3D10ObjectsKHR(...) 0
#define desc_clEnqueueAcquireD3D11ObjectsKHR(...) 0
#define desc_clEnqueueReleaseD3D11ObjectsKHR(...) 0
#define desc_clEnqueueAcquireDX9MediaSurfacesKHR(...) 0
#define desc_clEnqueueReleaseDX9MediaSurfacesKHR(...) 0
#define desc_clEnqueueAcquireEGLObjectsKHR(...) 0
#define desc_clEnqueueReleaseEGLObjectsKHR(...) 0
#define desc_clEnqueueMigrateMemObjects(...) 0
#define desc_clEnqueueMarkerWithWaitList(...) 0
#define desc_clEnqueueBarrierWithWaitList(...) 0
#define desc_clEnqueueSVMFree(...) 0
#define desc_clEnqueueSVMMigrateMem(...) 0

/* ---- the enqueue path ---------------------------------------------------- */

/* Before the call: an op when the queue profiles and the instance keeps
 * device spans. */
static ocl_op *enq_begin(cl_command_queue h, ocl_queue **qp)
{
    ocl_queue *q = queue_get(h);
    *qp = q;
    if (!q || !q->profiling ||
        !atomic_load_explicit(&g_sel_device, memory_order_relaxed))
        return NULL;
    ocl_op *op = op_alloc();
    if (op) {
        op->q = q;
        op->dev = q->dev;
        op->stream = q->stream;
        op->in_order = q->in_order;
    }
    return op;
}

static int op_selected(const ocl_inst *s, const ocl_op *op)
{
    return op->kind == OP_KERNEL   ? s->sel_kernel
           : op->kind == OP_MEMCPY ? s->sel_memcpy
                                   : s->sel_memset;
}

/* After the call: the op is queued (holding one event reference) and the
 * runtime span emitted with the same correlation id. */
static void enq_end(int fn, ocl_queue *q, ocl_op *op, cl_int err,
                    cl_event *app_event, cl_event mine, int64_t t0,
                    cl_bool blocking)
{
    int64_t t1 = now_ns();
    uint64_t corr = 0;
    ocl_slot *sl = slot_get();
    ocl_inst *s = sl ? ocl_enter(sl) : NULL;
    if (op && (!s || err != CL_SUCCESS || !op_selected(s, op))) {
        if (mine)
            g_next.clReleaseEvent(mine);
        op_free(op);
        op = NULL;
    }
    uint64_t ext = s ? s->host->correlation_current(s->host->ctx) : 0;
    if (op) {
        cl_event ev = app_event ? *app_event : mine;
        if (app_event && ev)
            g_next.clRetainEvent(ev); /* the op's reference; hidden */
        if (!ev) {
            op_free(op);
            op = NULL;
        } else {
            corr = atomic_fetch_add_explicit(&g_corr, 1,
                                             memory_order_relaxed) + 1;
            op->ev = ev;
            op->fn = fn;
            op->gen = s->gen;
            op->corr = corr;
            op->ext = ext;
            op->h0 = t0;
            op->h1 = t1;
            pthread_mutex_lock(&q->mu);
            if (q->tail)
                q->tail->next = op;
            else
                q->head = op;
            q->tail = op;
            q->npending++;
            pthread_mutex_unlock(&q->mu);
            atomic_fetch_add_explicit(&s->n_ops, 1, memory_order_relaxed);
        }
    }
    if (s) {
        if (q && !q->profiling)
            atomic_fetch_add_explicit(&s->n_noprof, 1, memory_order_relaxed);
        act_plugin_arg a;
        set_arg_u(&a, "queue", q ? q->stream : 0);
        emit_host_span(s, fn, t0, t1, err, corr, ext, &a, q ? 1 : 0, 1);
    }
    if (q && (q->head || q->npending)) {
        /* A blocking call on an in-order queue finished everything queued
         * before it began (its own op is polled); otherwise poll once the
         * list grows. */
        if (blocking && err == CL_SUCCESS && q->in_order)
            harvest(q, s, t0);
        else if (q->npending >= POLL_PENDING)
            harvest(q, s, INT64_MIN);
    }
    if (s)
        ocl_leave(sl);
}

/* ---- generated wrappers ---------------------------------------------------- */

#define ACT_CL_ARGS(...) __VA_ARGS__
#define ACT_CL_SKIP(n)
#define ACT_CL_SPECIAL(n)

#define GEN_INT(n, p, a)                                                       \
    static cl_int CL_API_CALL w_##n p                                         \
    {                                                                          \
        if (ocl_inactive())            \
            return g_next.n a;                                                 \
        int64_t t0_ = now_ns();                                                \
        cl_int r_ = g_next.n a;                                                \
        call_done(ID_##n, t0_, r_);                                            \
        return r_;                                                             \
    }
#define GEN_ERRCODE(n, ret, p, a)                                              \
    static ret CL_API_CALL w_##n p                                            \
    {                                                                          \
        if (ocl_inactive())            \
            return g_next.n a;                                                 \
        cl_int e_ = CL_SUCCESS;                                                \
        int own_ = errcode_ret == NULL;                                        \
        if (own_)                                                              \
            errcode_ret = &e_;                                                 \
        int64_t t0_ = now_ns();                                                \
        ret r_ = g_next.n a;                                                   \
        call_done(ID_##n, t0_, *errcode_ret);                                  \
        return r_;                                                             \
    }
#define GEN_NOERR(n, ret, p, a)                                                \
    static ret CL_API_CALL w_##n p                                            \
    {                                                                          \
        if (ocl_inactive())            \
            return g_next.n a;                                                 \
        int64_t t0_ = now_ns();                                                \
        ret r_ = g_next.n a;                                                   \
        call_done(ID_##n, t0_, CL_SUCCESS);                                    \
        return r_;                                                             \
    }
#define GEN_VOID(n, p, a)                                                      \
    static void CL_API_CALL w_##n p                                           \
    {                                                                          \
        if (ocl_inactive()) {          \
            g_next.n a;                                                        \
            return;                                                            \
        }                                                                      \
        int64_t t0_ = now_ns();                                                \
        g_next.n a;                                                            \
        call_done(ID_##n, t0_, CL_SUCCESS);                                    \
    }
#define GEN_KIND_INT(n, ret, p, a) GEN_INT(n, p, a)
#define GEN_KIND_ERRCODE(n, ret, p, a) GEN_ERRCODE(n, ret, p, a)
#define GEN_KIND_NOERR(n, ret, p, a) GEN_NOERR(n, ret, p, a)
#define GEN_KIND_VOID(n, ret, p, a) GEN_VOID(n, p, a)
#define ACT_CL_FN(n, ret, p, a, k) GEN_KIND_##k(n, ret, p, a)

#define ACT_CL_ENQ(n, ret, p, a, ae, blk)                                      \
    static cl_int CL_API_CALL w_##n p                                         \
    {                                                                          \
        if (ocl_inactive())            \
            return g_next.n a;                                                 \
        int64_t t0_ = now_ns();                                                \
        ocl_queue *q_ = NULL;                                                  \
        ocl_op *op_ = enq_begin(command_queue, &q_);                    \
        if (op_ && !desc_##n(op_, ACT_CL_ARGS a)) {                            \
            op_free(op_);                                                      \
            op_ = NULL;                                                        \
        }                                                                      \
        cl_event mine_ = NULL;                                                 \
        cl_event *evp_ = event ? event : op_ ? &mine_ : NULL;                  \
        cl_int r_ = g_next.n ae;                                               \
        enq_end(ID_##n, q_, op_, r_, event, mine_, t0_, (cl_bool)(blk));       \
        return r_;                                                             \
    }

#include "dispatch_gen.h"

#undef ACT_CL_FN
#undef ACT_CL_ENQ

/* ---- extension functions (generated) ------------------------------------------ */

/* For each extension function of CL/cl_ext.h: the implementation's pointer
 * (set once, under g_mu, before the wrapper is handed out) and a wrapper
 * that records a runtime span. Enqueue-like extension calls get a runtime
 * span only (their event and device work are not followed). */
#undef ACT_CL_EXT
#define ACT_CL_EXT(n, ret, p, a, k)                                            \
    typedef ret(CL_API_CALL *ext_pfn_##n) p;                                   \
    static ext_pfn_##n g_ext_##n;                                              \
    GEN_EXT_KIND_##k(n, ret, p, a)

#define GEN_EXT_KIND_INT(n, ret, p, a)                                         \
    static cl_int CL_API_CALL wx_##n p                                        \
    {                                                                          \
        if (ocl_inactive())            \
            return g_ext_##n a;                                                \
        int64_t t0_ = now_ns();                                                \
        cl_int r_ = g_ext_##n a;                                               \
        call_done(IDX_##n, t0_, r_);                                           \
        return r_;                                                             \
    }
#define GEN_EXT_KIND_ERRCODE(n, ret, p, a)                                     \
    static ret CL_API_CALL wx_##n p                                           \
    {                                                                          \
        if (ocl_inactive())            \
            return g_ext_##n a;                                                \
        cl_int e_ = CL_SUCCESS;                                                \
        if (!errcode_ret)                                                      \
            errcode_ret = &e_;                                                 \
        int64_t t0_ = now_ns();                                                \
        ret r_ = g_ext_##n a;                                                  \
        call_done(IDX_##n, t0_, *errcode_ret);                                 \
        return r_;                                                             \
    }
#define GEN_EXT_KIND_NOERR(n, ret, p, a)                                       \
    static ret CL_API_CALL wx_##n p                                           \
    {                                                                          \
        if (ocl_inactive())            \
            return g_ext_##n a;                                                \
        int64_t t0_ = now_ns();                                                \
        ret r_ = g_ext_##n a;                                                  \
        call_done(IDX_##n, t0_, CL_SUCCESS);                                   \
        return r_;                                                             \
    }
#define GEN_EXT_KIND_VOID(n, ret, p, a)                                        \
    static void CL_API_CALL wx_##n p                                          \
    {                                                                          \
        if (ocl_inactive()) {          \
            g_ext_##n a;                                                       \
            return;                                                            \
        }                                                                      \
        int64_t t0_ = now_ns();                                                \
        g_ext_##n a;                                                           \
        call_done(IDX_##n, t0_, CL_SUCCESS);                                   \
    }
#define ACT_CL_FN(n, r, p, a, k)
#define ACT_CL_ENQ(n, r, p, a, ae, b)
#include "dispatch_gen.h"
#undef ACT_CL_FN
#undef ACT_CL_ENQ
#undef ACT_CL_EXT

/* Hands out the wrapper of extension function @p id for @p real: the
 * first implementation pointer seen for a name is the one wrapped; another
 * platform's different pointer is returned as it is (not traced). */
static void *ext_wrap(int id, void *real)
{
    void *out = real;
    pthread_mutex_lock(&g_mu);
    switch (id) {
#define ACT_CL_FN(n, r, p, a, k)
#define ACT_CL_ENQ(n, r, p, a, ae, b)
#define ACT_CL_EXT(n, ret, p, a, k)                                            \
    case IDX_##n: {                                                            \
        void *cur;                                                             \
        memcpy(&cur, &g_ext_##n, sizeof cur);                                  \
        if (!cur)                                                              \
            memcpy(&g_ext_##n, &real, sizeof real);                            \
        if (!cur || cur == real) {                                             \
            ext_pfn_##n w = wx_##n;                                            \
            memcpy(&out, &w, sizeof out);                                      \
        }                                                                      \
        break;                                                                 \
    }
#include "dispatch_gen.h"
#undef ACT_CL_FN
#undef ACT_CL_ENQ
#undef ACT_CL_EXT
#define ACT_CL_EXT(n, r, p, a, k)
    default:
        break;
    }
    pthread_mutex_unlock(&g_mu);
    return out;
}

/* ---- hand-written wrappers --------------------------------------------------- */

/* Profiling is forced while a plugin instance exists, so that a session
 * started later still gets device times; and always when
 * ACTRACE_OPENCL_PROFILE_QUEUES=1 (actrace.torch.enable sets it: its
 * sessions come and go with each torch.profiler session, while the
 * program creates its queues once, usually before the first). */
static int force_profiling(void)
{
    static _Atomic int env = -1; /* -1: not read yet */
    int e = atomic_load_explicit(&env, memory_order_relaxed);
    if (e < 0) {
        const char *v = getenv("ACTRACE_OPENCL_PROFILE_QUEUES");
        e = v && strcmp(v, "1") == 0;
        atomic_store_explicit(&env, e, memory_order_relaxed);
    }
    return e || atomic_load_explicit(&g_inst, memory_order_acquire) != NULL;
}

static cl_command_queue CL_API_CALL
w_clCreateCommandQueue(cl_context context, cl_device_id device,
                       cl_command_queue_properties properties,
                       cl_int *errcode_ret)
{
    int64_t t0 = now_ns();
    cl_int e = CL_SUCCESS;
    cl_int *ep = errcode_ret ? errcode_ret : &e;
    cl_command_queue_properties p = properties;
    if (force_profiling())
        p |= CL_QUEUE_PROFILING_ENABLE;
    cl_command_queue q = g_next.clCreateCommandQueue(context, device, p, ep);
    if (q && *ep == CL_SUCCESS)
        queue_add(q, device, properties, NULL, 0, 1);
    if (atomic_load_explicit(&g_active, memory_order_relaxed))
        call_done(ID_clCreateCommandQueue, t0, *ep);
    return q;
}

static cl_command_queue CL_API_CALL w_clCreateCommandQueueWithProperties(
    cl_context context, cl_device_id device,
    const cl_queue_properties *properties, cl_int *errcode_ret)
{
    int64_t t0 = now_ns();
    cl_int e = CL_SUCCESS;
    cl_int *ep = errcode_ret ? errcode_ret : &e;
    cl_queue_properties mine[PROPS_MAX * 2 + 3];
    size_t n = 0;
    cl_command_queue_properties app = 0;
    int found = 0, fits = 1;
    if (properties) {
        while (properties[n] != 0) {
            if (n + 2 > PROPS_MAX * 2) {
                fits = 0;
                break;
            }
            mine[n] = properties[n];
            mine[n + 1] = properties[n + 1];
            if (properties[n] == CL_QUEUE_PROPERTIES) {
                app = properties[n + 1];
                found = 1;
                if (force_profiling())
                    mine[n + 1] |= CL_QUEUE_PROFILING_ENABLE;
            }
            n += 2;
        }
    }
    const cl_queue_properties *use = properties;
    if (fits && force_profiling()) {
        if (!found) {
            mine[n++] = CL_QUEUE_PROPERTIES;
            mine[n++] = CL_QUEUE_PROFILING_ENABLE;
        }
        mine[n] = 0;
        use = mine;
    }
    cl_command_queue q =
        g_next.clCreateCommandQueueWithProperties(context, device, use, ep);
    if (q && *ep == CL_SUCCESS) {
        size_t an = 0;
        if (properties && fits) {
            while (properties[an] != 0)
                an += 2;
            an++;
        }
        queue_add(q, device, app, properties, an, 1);
    }
    if (atomic_load_explicit(&g_active, memory_order_relaxed))
        call_done(ID_clCreateCommandQueueWithProperties, t0, *ep);
    return q;
}

static cl_int CL_API_CALL w_clGetCommandQueueInfo(
    cl_command_queue command_queue, cl_command_queue_info param_name,
    size_t param_value_size, void *param_value, size_t *param_value_size_ret)
{
    int64_t t0 = now_ns();
    ocl_queue *q = queue_find(command_queue);
    cl_int r;
    if (q && param_name == CL_QUEUE_PROPERTIES_ARRAY) {
        /* What the program passed, not what the layer made of it. */
        size_t need = q->app_array_n * sizeof(cl_queue_properties);
        r = CL_SUCCESS;
        if (param_value && param_value_size < need)
            r = CL_INVALID_VALUE;
        else if (param_value && need)
            memcpy(param_value, q->app_array, need);
        if (r == CL_SUCCESS && param_value_size_ret)
            *param_value_size_ret = need;
    } else {
        /* Each event the layer holds may hold the queue (pocl's do): let
         * go of the completed ones first, so that the count is the one an
         * untraced run reads (the runtime holds a command that is not
         * complete either way). Once more if one completed meanwhile. */
        for (int i = 0; q && param_name == CL_QUEUE_REFERENCE_COUNT && i < 2 && q->head; i++)
            harvest_from_call(q, INT64_MIN);
        r = g_next.clGetCommandQueueInfo(command_queue, param_name,
                                         param_value_size, param_value,
                                         param_value_size_ret);
        if (r == CL_SUCCESS && q && param_name == CL_QUEUE_PROPERTIES &&
            param_value &&
            param_value_size >= sizeof(cl_command_queue_properties)) {
            cl_command_queue_properties *p = param_value;
            *p = (*p & ~(cl_command_queue_properties)
                           CL_QUEUE_PROFILING_ENABLE) |
                 (q->app_props & CL_QUEUE_PROFILING_ENABLE);
        }
    }
    if (atomic_load_explicit(&g_active, memory_order_relaxed))
        call_done(ID_clGetCommandQueueInfo, t0, r);
    return r;
}

static cl_int CL_API_CALL w_clSetCommandQueueProperty(
    cl_command_queue command_queue, cl_command_queue_properties properties,
    cl_bool enable, cl_command_queue_properties *old_properties)
{
    int64_t t0 = now_ns();
    ocl_queue *q = queue_find(command_queue);
    cl_command_queue_properties p = properties;
    if (q && !enable && force_profiling())
        p &= ~(cl_command_queue_properties)CL_QUEUE_PROFILING_ENABLE;
    cl_int r = g_next.clSetCommandQueueProperty(command_queue, p, enable,
                                                old_properties);
    if (q && r == CL_SUCCESS) {
        if (old_properties)
            *old_properties =
                (*old_properties & ~(cl_command_queue_properties)
                                       CL_QUEUE_PROFILING_ENABLE) |
                (q->app_props & CL_QUEUE_PROFILING_ENABLE);
        if (enable)
            q->app_props |= properties;
        else
            q->app_props &= ~properties;
    }
    if (atomic_load_explicit(&g_active, memory_order_relaxed))
        call_done(ID_clSetCommandQueueProperty, t0, r);
    return r;
}

static cl_int CL_API_CALL w_clRetainCommandQueue(cl_command_queue command_queue)
{
    int64_t t0 = now_ns();
    cl_int r = g_next.clRetainCommandQueue(command_queue);
    ocl_queue *q = r == CL_SUCCESS ? queue_find(command_queue) : NULL;
    if (q) {
        int n = atomic_load(&q->app_refs);
        while (n >= 0 && !atomic_compare_exchange_weak(&q->app_refs, &n, n + 1))
            ;
    }
    if (atomic_load_explicit(&g_active, memory_order_relaxed))
        call_done(ID_clRetainCommandQueue, t0, r);
    return r;
}

static cl_int CL_API_CALL w_clReleaseCommandQueue(cl_command_queue command_queue)
{
    int64_t t0 = now_ns();
    ocl_queue *q = queue_find(command_queue);
    cl_uint refs = 0;
    int known = 0;
    if (q) {
        harvest_from_call(q, INT64_MIN);
        known = atomic_load(&q->app_refs) >= 0;
        /* A queue the layer did not see created: its last release is the
         * one that finds a single reference (not exact when the layer's
         * events still hold the queue; then the record stays). */
        if (!known && g_next.clGetCommandQueueInfo(command_queue, CL_QUEUE_REFERENCE_COUNT,
                                                   sizeof refs, &refs, NULL) != CL_SUCCESS)
            refs = 0;
    }
    cl_int r = g_next.clReleaseCommandQueue(command_queue);
    if (q && r == CL_SUCCESS &&
        (known ? atomic_fetch_sub(&q->app_refs, 1) == 1 : refs == 1)) {
        /* The program's last reference: the record is recycled once its
         * pending ops (which keep the command objects alive) are
         * harvested, whatever the runtime's count says. */
        atomic_store_explicit(&q->released, 1, memory_order_release);
    }
    if (atomic_load_explicit(&g_active, memory_order_relaxed))
        call_done(ID_clReleaseCommandQueue, t0, r);
    return r;
}

/* Harvests the records the program released that still hold ops, so that
 * they can be recycled (queue_add, when the table is full). */
static void harvest_released(void)
{
    uint32_t n = atomic_load_explicit(&g_nqueues, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        ocl_queue *q = &g_queues[i];
        if (atomic_load_explicit(&q->released, memory_order_acquire) && q->head)
            harvest_from_call(q, INT64_MIN);
    }
}

static cl_int CL_API_CALL w_clFinish(cl_command_queue command_queue)
{
    if (ocl_inactive()) {
        cl_int r = g_next.clFinish(command_queue);
        ocl_queue *q = queue_find(command_queue);
        if (q && q->head)
            harvest_from_call(q, INT64_MIN);
        return r;
    }
    int64_t t0 = now_ns();
    cl_int r = g_next.clFinish(command_queue);
    int64_t t1 = now_ns();
    ocl_queue *q = queue_find(command_queue);
    ocl_slot *sl = slot_get();
    ocl_inst *s = sl ? ocl_enter(sl) : NULL;
    if (s) {
        act_plugin_arg a;
        set_arg_u(&a, "queue", q ? q->stream : 0);
        emit_host_span(s, ID_clFinish, t0, t1, r, 0, 0, &a, q ? 1 : 0, 0);
    }
    /* Everything enqueued before clFinish began is complete. */
    if (q)
        harvest(q, s, r == CL_SUCCESS ? t0 : INT64_MIN);
    if (s)
        ocl_leave(sl);
    return r;
}

static cl_int CL_API_CALL w_clWaitForEvents(cl_uint num_events,
                                            const cl_event *event_list)
{
    int64_t t0 = now_ns();
    cl_int r = g_next.clWaitForEvents(num_events, event_list);
    int64_t t1 = now_ns();
    ocl_slot *sl = slot_get();
    ocl_inst *s = sl ? ocl_enter(sl) : NULL;
    if (s) {
        act_plugin_arg a;
        set_arg_u(&a, "events", num_events);
        emit_host_span(s, ID_clWaitForEvents, t0, t1, r, 0, 0, &a, 1, 0);
    }
    harvest_all(s, INT64_MIN);
    if (s)
        ocl_leave(sl);
    return r;
}

/* The layer turns profiling on for every queue (force_profiling); a
 * program that did not ask for it gets the answer an untraced run gets:
 * CL_PROFILING_INFO_NOT_AVAILABLE, nothing written. */
static cl_int CL_API_CALL w_clGetEventProfilingInfo(cl_event event,
                                                    cl_profiling_info param_name,
                                                    size_t param_value_size,
                                                    void *param_value,
                                                    size_t *param_value_size_ret)
{
    int64_t t0 = now_ns();
    cl_command_queue qh = NULL;
    ocl_queue *q;
    cl_int r;
    if (atomic_load_explicit(&g_forced_any, memory_order_relaxed) &&
        g_next.clGetEventInfo(event, CL_EVENT_COMMAND_QUEUE, sizeof qh, &qh, NULL) ==
            CL_SUCCESS &&
        (q = queue_find(qh)) != NULL && q->profiling &&
        !(q->app_props & CL_QUEUE_PROFILING_ENABLE))
        r = CL_PROFILING_INFO_NOT_AVAILABLE;
    else
        r = g_next.clGetEventProfilingInfo(event, param_name, param_value_size,
                                           param_value, param_value_size_ret);
    if (atomic_load_explicit(&g_active, memory_order_relaxed))
        call_done(ID_clGetEventProfilingInfo, t0, r);
    return r;
}

/* How many references to @p ev the layer holds (0 or 1): pending ops. */
static cl_uint layer_refs(cl_event ev)
{
    cl_uint n = 0;
    uint32_t nq = atomic_load_explicit(&g_nqueues, memory_order_acquire);
    for (uint32_t i = 0; i < nq; i++) {
        ocl_queue *q = &g_queues[i];
        pthread_mutex_lock(&q->mu);
        for (ocl_op *op = q->head; op; op = op->next)
            if (op->ev == ev)
                n++;
        pthread_mutex_unlock(&q->mu);
    }
    return n;
}

static cl_int CL_API_CALL w_clGetEventInfo(cl_event event,
                                           cl_event_info param_name,
                                           size_t param_value_size,
                                           void *param_value,
                                           size_t *param_value_size_ret)
{
    int64_t t0 = now_ns();
    cl_int r = g_next.clGetEventInfo(event, param_name, param_value_size,
                                     param_value, param_value_size_ret);
    if (r == CL_SUCCESS && param_name == CL_EVENT_REFERENCE_COUNT &&
        param_value && param_value_size >= sizeof(cl_uint)) {
        cl_uint mine = layer_refs(event);
        cl_uint *v = param_value;
        *v = *v > mine ? *v - mine : 1;
    }
    if (atomic_load_explicit(&g_active, memory_order_relaxed))
        call_done(ID_clGetEventInfo, t0, r);
    return r;
}

static void *CL_API_CALL w_clEnqueueMapBuffer(
    cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_map,
    cl_map_flags map_flags, size_t offset, size_t size,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
    cl_event *event, cl_int *errcode_ret)
{
    if (ocl_inactive())
        return g_next.clEnqueueMapBuffer(
            command_queue, buffer, blocking_map, map_flags, offset, size,
            num_events_in_wait_list, event_wait_list, event, errcode_ret);
    int64_t t0 = now_ns();
    ocl_queue *q = NULL;
    ocl_op *op = enq_begin(command_queue, &q);
    if (op)
        copy_op(op, DIR_DTOH, size);
    cl_event mine = NULL;
    cl_event *evp = event ? event : op ? &mine : NULL;
    cl_int e = CL_SUCCESS;
    cl_int *ep = errcode_ret ? errcode_ret : &e;
    void *p = g_next.clEnqueueMapBuffer(command_queue, buffer, blocking_map,
                                        map_flags, offset, size,
                                        num_events_in_wait_list,
                                        event_wait_list, evp, ep);
    enq_end(ID_clEnqueueMapBuffer, q, op, *ep, event, mine, t0, blocking_map);
    return p;
}

static void *CL_API_CALL w_clEnqueueMapImage(
    cl_command_queue command_queue, cl_mem image, cl_bool blocking_map,
    cl_map_flags map_flags, const size_t *origin, const size_t *region,
    size_t *image_row_pitch, size_t *image_slice_pitch,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
    cl_event *event, cl_int *errcode_ret)
{
    if (ocl_inactive())
        return g_next.clEnqueueMapImage(
            command_queue, image, blocking_map, map_flags, origin, region,
            image_row_pitch, image_slice_pitch, num_events_in_wait_list,
            event_wait_list, event, errcode_ret);
    int64_t t0 = now_ns();
    ocl_queue *q = NULL;
    ocl_op *op = enq_begin(command_queue, &q);
    if (op)
        copy_op(op, DIR_DTOH, image_bytes(image, region));
    cl_event mine = NULL;
    cl_event *evp = event ? event : op ? &mine : NULL;
    cl_int e = CL_SUCCESS;
    cl_int *ep = errcode_ret ? errcode_ret : &e;
    void *p = g_next.clEnqueueMapImage(
        command_queue, image, blocking_map, map_flags, origin, region,
        image_row_pitch, image_slice_pitch, num_events_in_wait_list,
        event_wait_list, evp, ep);
    enq_end(ID_clEnqueueMapImage, q, op, *ep, event, mine, t0, blocking_map);
    return p;
}

/* ---- extension functions ----------------------------------------------------- */

/* Extension entry points the layer knows the signature of get a wrapper
 * (a runtime span each); the real pointer is kept per name. When two
 * platforms return different pointers for one name, the second one is
 * returned unwrapped (not traced), see docs/opencl.md. */
typedef cl_command_queue(CL_API_CALL *pfn_queue_props)(
    cl_context, cl_device_id, const cl_queue_properties *, cl_int *);
static pfn_queue_props g_ext_queue_khr;

static cl_command_queue CL_API_CALL w_clCreateCommandQueueWithPropertiesKHR(
    cl_context context, cl_device_id device,
    const cl_queue_properties *properties, cl_int *errcode_ret)
{
    /* Same semantics as the core entry point, so the same treatment. */
    if (!g_next.clCreateCommandQueueWithProperties)
        return g_ext_queue_khr(context, device, properties, errcode_ret);
    return w_clCreateCommandQueueWithProperties(context, device, properties,
                                                errcode_ret);
}

static void *wrap_extension(const char *name, void *real)
{
    if (!real || !name)
        return real;
    if (strcmp(name, "clCreateCommandQueueWithPropertiesKHR") == 0) {
        pfn_queue_props f;
        memcpy(&f, &real, sizeof f);
        if (!g_ext_queue_khr)
            g_ext_queue_khr = f;
        if (g_ext_queue_khr == f) {
            pfn_queue_props w = w_clCreateCommandQueueWithPropertiesKHR;
            void *out;
            memcpy(&out, &w, sizeof out);
            return out;
        }
    }
    /* Extension functions the headers describe. */
    for (int i = ID_DISPATCH_END; i < ID_COUNT; i++)
        if (strcmp(fn_names[i], name) == 0)
            return ext_wrap(i, real);
    /* Core entry points asked for by name come back wrapped too. */
    for (int i = 0; i < ID_DISPATCH_END; i++) {
        if (strcmp(fn_names[i], name) == 0) {
            void *const *next = (void *const *)(const void *)&g_next;
            void *const *mine = (void *const *)(const void *)&g_layer;
            if ((size_t)i < g_next_entries && next[i] == real && mine[i])
                return mine[i];
            break;
        }
    }
    return real;
}

static void *CL_API_CALL w_clGetExtensionFunctionAddress(const char *func_name)
{
    int64_t t0 = now_ns();
    void *p = g_next.clGetExtensionFunctionAddress(func_name);
    p = wrap_extension(func_name, p);
    if (atomic_load_explicit(&g_active, memory_order_relaxed))
        call_done(ID_clGetExtensionFunctionAddress, t0, CL_SUCCESS);
    return p;
}

static void *CL_API_CALL w_clGetExtensionFunctionAddressForPlatform(
    cl_platform_id platform, const char *func_name)
{
    int64_t t0 = now_ns();
    void *p =
        g_next.clGetExtensionFunctionAddressForPlatform(platform, func_name);
    p = wrap_extension(func_name, p);
    if (atomic_load_explicit(&g_active, memory_order_relaxed))
        call_done(ID_clGetExtensionFunctionAddressForPlatform, t0,
                  CL_SUCCESS);
    return p;
}

/* ---- the layer entry points ------------------------------------------------- */

CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param_name,
                                               size_t param_value_size,
                                               void *param_value,
                                               size_t *param_value_size_ret)
    __attribute__((visibility("default")));
CL_API_ENTRY cl_int CL_API_CALL
clInitLayer(cl_uint num_entries, const cl_icd_dispatch *target_dispatch,
            cl_uint *num_entries_ret,
            const cl_icd_dispatch **layer_dispatch_ret)
    __attribute__((visibility("default")));
CL_API_ENTRY cl_int CL_API_CALL clInitLayerWithProperties(
    cl_uint num_entries, const cl_icd_dispatch *target_dispatch,
    cl_uint *num_entries_ret, const cl_icd_dispatch **layer_dispatch_ret,
    const cl_layer_properties *properties)
    __attribute__((visibility("default")));
CL_API_ENTRY cl_int CL_API_CALL clDeinitLayer(void)
    __attribute__((visibility("default")));

CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info param_name,
                                               size_t param_value_size,
                                               void *param_value,
                                               size_t *param_value_size_ret)
{
    const void *src;
    size_t n;
    cl_layer_api_version v = CL_LAYER_API_VERSION_100;
    switch (param_name) {
    case CL_LAYER_API_VERSION:
        src = &v;
        n = sizeof v;
        break;
#ifdef CL_LAYER_NAME
    case CL_LAYER_NAME:
        src = LAYER_NAME;
        n = sizeof LAYER_NAME;
        break;
#endif
    default:
        return CL_INVALID_VALUE;
    }
    if (param_value) {
        if (param_value_size < n)
            return CL_INVALID_VALUE;
        memcpy(param_value, src, n);
    }
    if (param_value_size_ret)
        *param_value_size_ret = n;
    return CL_SUCCESS;
}

static void names_init(void)
{
    for (int i = 0; i < ID_COUNT; i++)
        fn_lens[i] = (uint32_t)strlen(fn_names[i]);
}

CL_API_ENTRY cl_int CL_API_CALL
clInitLayer(cl_uint num_entries, const cl_icd_dispatch *target_dispatch,
            cl_uint *num_entries_ret,
            const cl_icd_dispatch **layer_dispatch_ret)
{
    if (!target_dispatch || !num_entries_ret || !layer_dispatch_ret)
        return CL_INVALID_VALUE;
    /* The program uses OpenCL: a lazily started session starts now
     * (lazy_wake.h); its load makes the instance this layer records for. */
    if (!atomic_load(&g_inst))
        plugin_lazy_wake();
    const cl_uint ours = sizeof(cl_icd_dispatch) / sizeof(void *);
    pthread_mutex_lock(&g_mu);
    if (atomic_load(&g_layer_state) != LAYER_ON) {
        names_init();
        /* Entries beyond what the loader gave stay NULL (not ours to call). */
        g_next_entries = num_entries < ours ? num_entries : ours;
        memset(&g_next, 0, sizeof g_next);
        memcpy(&g_next, target_dispatch, g_next_entries * sizeof(void *));
        memset(&g_layer, 0, sizeof g_layer);
#define ACT_CL_SET(n)                                                          \
    if ((size_t)ID_##n < g_next_entries && g_next.n)                           \
        g_layer.n = w_##n;
#define ACT_CL_FN(n, r, p, a, k) ACT_CL_SET(n)
#define ACT_CL_ENQ(n, r, p, a, ae, b) ACT_CL_SET(n)
#undef ACT_CL_SPECIAL
#define ACT_CL_SPECIAL(n) ACT_CL_SET(n)
#include "dispatch_gen.h"
#undef ACT_CL_FN
#undef ACT_CL_ENQ
#undef ACT_CL_SET
        atomic_store(&g_layer_state, LAYER_ON);
    }
    /* ocl-icd 2.3.1 cut OPENCL_LAYERS at the first ':' in place while it
     * walks the list; put the whole list back for child processes. It
     * keeps walking its own (old) copy, which setenv does not free. */
    if (g_layers_env) {
        const char *cur = getenv("OPENCL_LAYERS");
        if (!cur || strcmp(cur, g_layers_env) != 0)
            setenv("OPENCL_LAYERS", g_layers_env, 1);
    }
    pthread_mutex_unlock(&g_mu);
    *layer_dispatch_ret = &g_layer;
    *num_entries_ret = ours;
    return CL_SUCCESS;
}

CL_API_ENTRY cl_int CL_API_CALL clInitLayerWithProperties(
    cl_uint num_entries, const cl_icd_dispatch *target_dispatch,
    cl_uint *num_entries_ret, const cl_icd_dispatch **layer_dispatch_ret,
    const cl_layer_properties *properties)
{
    (void)properties; /* none defined that this layer needs */
    return clInitLayer(num_entries, target_dispatch, num_entries_ret,
                       layer_dispatch_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clDeinitLayer(void)
{
    /* The loader goes away: stop calling down. Pending ops are dropped
     * without touching their events. */
    atomic_store(&g_layer_state, LAYER_GONE);
    return CL_SUCCESS;
}

/* ---- plugin -------------------------------------------------------------------- */

/* Whether an ICD of this machine is already loaded in the process: the
 * ICD loader opens them at its first call, so this says whether OpenCL
 * was initialised (possibly before OPENCL_LAYERS named us). */
static int icd_loaded(void)
{
    const char *dir = getenv("OCL_ICD_VENDORS");
    if (!dir || !*dir)
        dir = getenv("OPENCL_VENDOR_PATH");
    if (!dir || !*dir)
        dir = "/etc/OpenCL/vendors";
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".icd") != 0)
            continue;
        char path[PATH_MAX], lib[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(lib, sizeof lib, f)) {
            lib[strcspn(lib, "\r\n")] = '\0';
            void *h = lib[0] ? dlopen(lib, RTLD_LAZY | RTLD_NOLOAD) : NULL;
            if (h) {
                found = 1;
                dlclose(h);
            }
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

static int have_icd_files(const char **where)
{
    const char *dir = getenv("OCL_ICD_VENDORS");
    if (dir && *dir)
        return 1; /* a file or folder of the user's choosing */
    dir = getenv("OPENCL_VENDOR_PATH");
    if (!dir || !*dir)
        dir = "/etc/OpenCL/vendors";
    *where = dir;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        found = n >= 5 && strcmp(e->d_name + n - 4, ".icd") == 0;
    }
    closedir(d);
    return found;
}

/* Puts this object first in OPENCL_LAYERS (once). */
static int install_layer(char *why, size_t cap)
{
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)clInitLayer, &info) || !info.dli_fname) {
        snprintf(why, cap, "cannot find the plugin's own path");
        return -1;
    }
    char self[PATH_MAX];
    if (!realpath(info.dli_fname, self))
        snprintf(self, sizeof self, "%s", info.dli_fname);
    const char *old = getenv("OPENCL_LAYERS");
    size_t sl = strlen(self);
    int present = 0;
    for (const char *p = old; p && *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == sl && memcmp(p, self, n) == 0)
            present = 1;
        p = e ? e + 1 : p + n;
    }
    char *val;
    if (present) {
        val = strdup(old);
    } else {
        size_t n = sl + (old ? strlen(old) : 0) + 2;
        val = malloc(n);
        if (val)
            snprintf(val, n, "%s%s%s", self, old && *old ? ":" : "",
                     old ? old : "");
    }
    if (!val || setenv("OPENCL_LAYERS", val, 1) != 0) {
        free(val);
        snprintf(why, cap, "cannot set OPENCL_LAYERS");
        return -1;
    }
    pthread_mutex_lock(&g_mu);
    free(g_layers_env);
    g_layers_env = val;
    pthread_mutex_unlock(&g_mu);
    return 0;
}

static void warn_late(ocl_inst *s)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&g_late_warned, &expect, 1))
        return;
    static const char msg[] =
        "OpenCL was initialised in this process before the opencl layer "
        "could be installed: its OpenCL calls are not traced (load the "
        "plugin before the first OpenCL call, e.g. with actrace record)";
    inst_log(s, ACT_PLUGIN_LOG_WARN, msg);
    /* Also in the trace: an instant on the host, so a reader of the file
     * learns why there is no OpenCL activity. */
    act_plugin_record r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.kind = ACT_PLUGIN_RECORD_INSTANT;
    r.type = ACT_CPU_INSTANT_EVENT;
    r.device = ACT_PLUGIN_HOST_DEVICE;
    r.stream = (uint64_t)syscall(SYS_gettid);
    r.start_ns = r.end_ns = now_ns();
    r.name = "opencl layer not active";
    r.name_len = (uint32_t)strlen(r.name);
    act_plugin_arg a;
    set_arg_s(&a, "reason", msg, sizeof msg - 1);
    r.args = &a;
    r.nargs = 1;
    s->host->emit(s->host->ctx, &r, 1);
}

/* ---- fork -------------------------------------------------------------------- */

/*
 * A fork()ed child inherits the layer's globals: the parent's instance
 * (g_inst, g_active: its host table is the parent's session), the busy
 * slots of threads that do not exist in the child, the parent's pending
 * ops, and locks another thread may have held. The child's calls must go
 * to the child's own session (under record, one the child starts in its
 * fork handler), never to the parent's, and the child's instance must not
 * be declined as "another session". So every lock is held across fork
 * (prepare/parent), and the child forgets the parent's instance
 * (fork_reset): g_owner_pid names the process g_inst belongs to. The
 * reset runs from the fork handler and, in case the handlers ran in
 * another order, from init; each checks the owner first, so a reset never
 * undoes the child's own instance. The handler also marks every op the
 * child inherited generation 0 (released when harvested there, neither
 * emitted nor counted: the parent's work) and frees the other threads'
 * slots. The layer itself (g_next,
 * g_layer) stays: the child's ICD loader is the parent's copy.
 */
static pid_t g_owner_pid; /* under the instance's lifecycle (init/finalize) */

static void fork_prepare(void)
{
    pthread_mutex_lock(&g_mu);
    uint32_t nq = atomic_load(&g_nqueues);
    for (uint32_t i = 0; i < nq; i++)
        pthread_mutex_lock(&g_queues[i].mu);
    for (uint32_t i = 0; i < g_ndevs; i++)
        pthread_mutex_lock(&g_devs[i].mu);
    pthread_mutex_lock(&g_pool_mu);
    pthread_mutex_lock(&g_late_mu);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&g_late_mu);
    pthread_mutex_unlock(&g_pool_mu);
    for (uint32_t i = g_ndevs; i-- > 0;)
        pthread_mutex_unlock(&g_devs[i].mu);
    for (uint32_t i = atomic_load(&g_nqueues); i-- > 0;)
        pthread_mutex_unlock(&g_queues[i].mu);
    pthread_mutex_unlock(&g_mu);
}

/* Single-threaded (the child of fork, before anything else runs there). */
static void fork_reset(void)
{
    if (!g_owner_pid || g_owner_pid == getpid())
        return;
    g_owner_pid = 0;
    atomic_store(&g_active, NULL);
    atomic_store(&g_inst, NULL); /* the parent's: leaked in the child */
    atomic_store(&g_late_warned, 0);
    for (ocl_op *op = g_late, *next; op; op = next) {
        next = op->next;
        op->next = g_free_ops;
        g_free_ops = op;
    }
    g_late = NULL;
    g_flush_gen = 0;
}

static void fork_child(void)
{
    /* The forking thread holds every lock (fork_prepare): initialise them
     * afresh rather than unlock, as for the engine's. */
    pthread_mutex_init(&g_mu, NULL);
    uint32_t nq = atomic_load(&g_nqueues);
    for (uint32_t i = 0; i < nq; i++)
        pthread_mutex_init(&g_queues[i].mu, NULL);
    for (uint32_t i = 0; i < g_ndevs; i++)
        pthread_mutex_init(&g_devs[i].mu, NULL);
    pthread_mutex_init(&g_pool_mu, NULL);
    pthread_mutex_init(&g_late_mu, NULL);
    /* Whatever the instance: every op pending now is the parent's, and
     * only the forking thread exists (every other slot is free). */
    for (uint32_t i = 0; i < nq; i++)
        for (ocl_op *op = g_queues[i].head; op; op = op->next)
            op->gen = 0;
    for (ocl_slot *sl = g_slots; sl; sl = sl->next) {
        atomic_store(&sl->busy, 0);
        if (sl != tl_slot)
            atomic_store(&sl->used, 0);
    }
    int used = atomic_load(&g_layer_state) == LAYER_ON && atomic_load(&g_inst);
    fork_reset();
    /* The child calls OpenCL through this layer (the loader's state is
     * inherited): its first call starts its session if it starts lazily. */
    if (used && !atomic_load(&g_inst))
        atomic_store(&g_wake_pending, 1);
}

/* At load (as a plugin or as a layer): the handlers are in place before
 * any instance exists. libactrace's auto-start registered its fork handler
 * before (a child's lazy state is set up when this one runs); init resets
 * a parent's state itself where a child's session started first. */
__attribute__((constructor)) static void ocl_load(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

#define MIN_CALL_NS_DEFAULT 1000
#define MIN_CALL_NS_MAX 1000000000

/* OPENCL_MIN_CALL_NS: calls shorter than this (that launch nothing and
 * succeed) are counted, not drawn; 0 draws every call. A value that is
 * not a whole number in [0, 1e9] is named in a warning and the default
 * used. */
static int64_t min_call_ns(ocl_inst *s)
{
    const char *v = s->host->config_get
                        ? s->host->config_get(s->host->ctx, "OPENCL_MIN_CALL_NS")
                        : NULL;
    if (!v)
        return MIN_CALL_NS_DEFAULT;
    int64_t n = 0;
    const char *p = v;
    if (*p == '+')
        p++;
    int ok = *p != '\0';
    for (; ok && *p; p++) {
        if (*p < '0' || *p > '9' || n > MIN_CALL_NS_MAX) {
            ok = 0;
            break;
        }
        n = n * 10 + (*p - '0');
    }
    if (ok && n <= MIN_CALL_NS_MAX)
        return n;
    char msg[256];
    snprintf(msg, sizeof msg,
             "config: OPENCL_MIN_CALL_NS = '%.40s' is not a whole number of "
             "nanoseconds in [0, %d]: using %d",
             v, MIN_CALL_NS_MAX, MIN_CALL_NS_DEFAULT);
    inst_log(s, ACT_PLUGIN_LOG_WARN, msg);
    return MIN_CALL_NS_DEFAULT;
}

static int32_t ocl_init(const act_plugin_host *host, void **state,
                        char *reason, uint32_t reason_cap)
{
    fork_reset(); /* a child whose fork handlers ran in another order */
    if (host->struct_size < ACT_PLUGIN_HOST_SIZE_1_0 || !host->emit ||
        !host->add_device || !host->name_stream || !host->log) {
        snprintf(reason, reason_cap, "host lacks ABI 1.0 functions");
        return ACT_PLUGIN_DECLINE;
    }
    void *cl = dlopen("libOpenCL.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!cl)
        cl = dlopen("libOpenCL.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!cl) {
        snprintf(reason, reason_cap,
                 "no OpenCL runtime: libOpenCL.so.1 (an ICD loader) not found");
        return ACT_PLUGIN_DECLINE;
    }
    dlclose(cl);
    const char *where = "";
    if (!have_icd_files(&where)) {
        snprintf(reason, reason_cap,
                 "no OpenCL runtime: no platform (.icd) in %.200s", where);
        return ACT_PLUGIN_DECLINE;
    }
    if (atomic_load(&g_inst)) {
        snprintf(reason, reason_cap,
                 "another session already uses the opencl plugin");
        return ACT_PLUGIN_DECLINE;
    }
    char why[256];
    if (install_layer(why, sizeof why) != 0) {
        snprintf(reason, reason_cap, "%s", why);
        return ACT_PLUGIN_DECLINE;
    }
    ocl_inst *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(reason, reason_cap, "out of memory");
        return ACT_PLUGIN_ENOMEM;
    }
    s->host = host;
    s->gen = atomic_fetch_add(&g_gen, 1) + 1;
    s->min_call_ns = min_call_ns(s);
    s->sel_runtime = host->type_selected(host->ctx, ACT_RUNTIME);
    s->sel_kernel = host->type_selected(host->ctx, ACT_CONCURRENT_KERNEL);
    s->sel_memcpy = host->type_selected(host->ctx, ACT_GPU_MEMCPY);
    s->sel_memset = host->type_selected(host->ctx, ACT_GPU_MEMSET);
    atomic_store(&g_sel_device,
                 s->sel_kernel || s->sel_memcpy || s->sel_memset);
    g_owner_pid = getpid();
    atomic_store(&g_inst, s);
    *state = s;
    return ACT_PLUGIN_OK;
}

static void ocl_start(void *state)
{
    ocl_inst *s = state;
    if (atomic_load(&g_layer_state) == LAYER_NONE && icd_loaded())
        warn_late(s);
    atomic_store_explicit(&g_active, s, memory_order_seq_cst);
}

static void ocl_stop(void *state)
{
    ocl_inst *s = state;
    /* From now until the flush, what a program thread harvests is kept
     * for the flush (late_keep); set before g_active is cleared, so a
     * harvest that sees no instance sees this. */
    pthread_mutex_lock(&g_late_mu);
    g_flush_gen = s->gen;
    pthread_mutex_unlock(&g_late_mu);
    struct ocl_inst *expect = s;
    atomic_compare_exchange_strong(&g_active, &expect, NULL);
    if (quiesce() != 0)
        inst_log(s, ACT_PLUGIN_LOG_WARN,
                 "a thread stayed inside the layer while stopping");
}

/* Emits (or, not of this instance, counts) the ops kept by late_keep and
 * stops keeping more. */
static void late_drain(ocl_inst *s)
{
    pthread_mutex_lock(&g_late_mu);
    ocl_op *op = g_late;
    g_late = NULL;
    g_flush_gen = 0;
    pthread_mutex_unlock(&g_late_mu);
    while (op) {
        ocl_op *next = op->next;
        if (op->gen == s->gen)
            emit_op(s, op);
        else
            atomic_fetch_add_explicit(&s->n_dropped_ops, 1, memory_order_relaxed);
        op_free(op);
        op = next;
    }
}

/* At flush: how many short calls were counted and not drawn, the most
 * frequent functions first (at most 8 named). */
static void short_calls_log(ocl_inst *s)
{
    uint64_t total = atomic_load(&s->n_short);
    if (total == 0)
        return;
    char msg[768];
    int n = snprintf(msg, sizeof msg,
                     "%llu calls shorter than %lld ns that launched nothing "
                     "counted, not drawn (OPENCL_MIN_CALL_NS):",
                     (unsigned long long)total, (long long)s->min_call_ns);
    uint32_t shown[8];
    int nshown = 0;
    for (; nshown < 8; nshown++) {
        int best = -1;
        uint32_t bc = 0;
        for (int i = 0; i < ID_COUNT; i++) {
            uint32_t c = atomic_load_explicit(&s->short_by_fn[i],
                                              memory_order_relaxed);
            int seen = 0;
            for (int j = 0; j < nshown; j++)
                seen |= (int)shown[j] == i;
            if (c > bc && !seen) {
                bc = c;
                best = i;
            }
        }
        if (best < 0)
            break;
        shown[nshown] = (uint32_t)best;
        if (n > 0 && (size_t)n < sizeof msg)
            n += snprintf(msg + n, sizeof msg - (size_t)n, "%s %s %u",
                          nshown ? "," : "", fn_names[best], bc);
    }
    inst_log(s, ACT_PLUGIN_LOG_INFO, msg);
}

static void ocl_flush(void *state)
{
    ocl_inst *s = state;
    if (atomic_load(&g_layer_state) == LAYER_ON)
        harvest_all(s, INT64_MIN);
    else if (icd_loaded())
        warn_late(s);
    late_drain(s);
    uint64_t left = 0;
    uint32_t nq = atomic_load(&g_nqueues);
    for (uint32_t i = 0; i < nq; i++) {
        pthread_mutex_lock(&g_queues[i].mu);
        for (ocl_op *op = g_queues[i].head; op; op = op->next)
            left += op->gen == s->gen;
        pthread_mutex_unlock(&g_queues[i].mu);
    }
    char msg[512];
    snprintf(msg, sizeof msg,
             "%llu calls, %llu device commands traced (%llu spans); %llu "
             "without profiling data, %llu failed, %llu clamped to the host "
             "window, %llu not complete at the end",
             (unsigned long long)atomic_load(&s->n_calls),
             (unsigned long long)atomic_load(&s->n_ops),
             (unsigned long long)atomic_load(&s->n_spans),
             (unsigned long long)atomic_load(&s->n_noprof),
             (unsigned long long)atomic_load(&s->n_failed),
             (unsigned long long)atomic_load(&s->n_clamped),
             (unsigned long long)left);
    inst_log(s, ACT_PLUGIN_LOG_INFO, msg);
    short_calls_log(s);
}

static void ocl_finalize(void *state)
{
    ocl_inst *s = state;
    struct ocl_inst *expect = s;
    atomic_compare_exchange_strong(&g_active, &expect, NULL);
    /* A flush that never ran (a stuck plugin) leaves kept ops: gone. */
    pthread_mutex_lock(&g_late_mu);
    ocl_op *late = g_flush_gen == s->gen ? g_late : NULL;
    if (late) {
        g_late = NULL;
        g_flush_gen = 0;
    }
    pthread_mutex_unlock(&g_late_mu);
    for (ocl_op *next; late; late = next) {
        next = late->next;
        op_free(late);
    }
    expect = s;
    if (atomic_compare_exchange_strong(&g_inst, &expect, NULL))
        g_owner_pid = 0;
    /* A thread still inside a busy window could use s: leak it then. */
    if (quiesce() == 0)
        free(s);
}

static const int32_t ocl_types[] = {ACT_RUNTIME, ACT_CONCURRENT_KERNEL,
                                    ACT_GPU_MEMCPY, ACT_GPU_MEMSET};

static const act_plugin ocl_plugin = {
    .struct_size = sizeof(act_plugin),
    .abi_major = ACT_PLUGIN_ABI_MAJOR,
    .abi_minor = ACT_PLUGIN_ABI_MINOR,
    .name = "opencl",
    .backend = "opencl",
    .version = "1.0.0",
    .types = ocl_types,
    .ntypes = sizeof ocl_types / sizeof ocl_types[0],
    .init = ocl_init,
    .start = ocl_start,
    .stop = ocl_stop,
    .flush = ocl_flush,
    .finalize = ocl_finalize,
};

ACT_PLUGIN_EXPORT const act_plugin *
act_plugin_entry(const act_plugin_host *host, uint32_t host_abi_major,
                 uint32_t host_abi_minor)
{
    (void)host;
    (void)host_abi_minor;
    return host_abi_major == ACT_PLUGIN_ABI_MAJOR ? &ocl_plugin : NULL;
}
