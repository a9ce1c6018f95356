/* SPDX-License-Identifier: MIT */
/*
 * The session visitor: one walk over what a session recorded, in the order
 * a trace is written, for every consumer (the Chrome JSON writer, the
 * Perfetto writer, later the torch.profiler bridge's read-back). A consumer
 * fills an act__visitor with callbacks; act__visit() calls them:
 *
 *   begin(info)                 once: base time, pid, trace ids, host
 *   device(dev)                 each live device, in id order
 *   metadata(info)              once, after the devices
 *   process(p) / thread(t)      host process, named threads, side tracks,
 *                               each device as a process and its streams
 *   thread_events(pid, tid)     a recorded thread's events follow ...
 *   event(e)                    ... in start order, parents before children
 *   counter_track(ct)           a counter track (series grouped by device,
 *                               source and track name) whose samples follow
 *   counter(cs)                 one time of that track: the series sampled
 *                               then, and the latest value of every series
 *   end(stats)                  once: actraceStats and the series list
 *
 * What it resolves so consumers do not have to: pids and tids of device
 * streams (dense tids for 64-bit stream ids), plugin host spans moved to a
 * side track when they partially overlap another source's spans, the
 * category of each event (Kineto's names or generic ones), the flow id of a
 * launch or of the device work it launched (set only when both sides exist),
 * an open span's end (the session's stop), the base time, drop statistics.
 *
 * Memory: the visitor allocates only for what needs a global view (flow
 * correlation sets, stream maps, the order index of a thread recorded out of
 * start order, counter samples to group them per track); nothing per event
 * otherwise. Events are handed out straight from the session's chunks.
 *
 * The session lock is held for the whole walk (see act__visit): callbacks
 * must not call back into the session.
 *
 * ABI note: everything here is internal (act__, hidden). The public
 * read-back (include/actrace/visit.h, act_session_visit in readback.c) is
 * this walk seen through public, struct_size-first structs; a field added
 * here that the public side should see is appended there too.
 */
#ifndef ACT_WRITER_VISIT_H
#define ACT_WRITER_VISIT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

/* Device processes get pids above any Linux pid (pid_max <= 2^22). */
#define ACT__DEVICE_PID_BASE 0x40000000u

/** An arg of an event. key and a string value are name refs resolved with
 *  act__visit_ref (interned, or local to chunk c). */
typedef struct act__varg {
    const act__chunk *c;
    uint32_t key;
    uint8_t kind; /* ACT__V_* */
    uint64_t val; /* bits of the value; ACT__V_STR: a name ref */
} act__varg;

/** The walk's cache of interned keys (visit.c): per key id, whether it is
 *  reserved and which id first had its bytes, so that the args of the
 *  usual event are checked without looking a key up or comparing bytes. */
typedef struct act__vkeys act__vkeys;

/** Iterator over an event's args (records after it). */
typedef struct act__vargs {
    const act__chunk *c;
    uint32_t i;
    int slot, done;
    act__vkeys *keys; /* the walk's key cache; NULL: keys compared by bytes */
    void *walk;       /* the walk (act__visit's state): frames decoded as the
                         args reach them; NULL outside a walk */
} act__vargs;

/** One event. */
typedef struct act__vevent {
    uint32_t struct_size;
    uint8_t kind;  /* ACT__R_SPAN, _INSTANT (host), _EMIT_SPAN, _EMIT_INSTANT (plugin) */
    uint8_t open;  /* span not ended when the session stopped */
    uint8_t flow_dir; /* flow: 0 none, 1 starts here (launch), 2 ends here */
    uint8_t has_args;
    uint16_t type;   /* activity type code */
    uint16_t source; /* 0: the application; plugins from 1 */
    int32_t pid;
    uint32_t tid;
    int64_t t0, t1;  /* monotonic ns; t1 = t0 for instants */
    uint64_t ext;    /* external correlation ("External id"), 0: none */
    uint64_t corr;   /* plugin correlation id, 0: none */
    uint32_t device; /* ACT__HOST_DEVICE for host records */
    uint64_t stream; /* plugin records: stream id or host tid */
    uint64_t flow;   /* flow id (< 2^53) when flow_dir != 0 */
    const char *cat; /* category */
    const char *backend; /* plugin records: the source's backend */
    const act__chunk *c; /* name ref (name) lives here when local */
    uint32_t name;
    act__vargs args; /* iterate with act__vargs_next */
    const act__rec *rec; /* the record itself (for consumers' caches) */
    /* Appended (issue 19). A copy or memset span with a "bytes" arg and no
     * "memory bandwidth (GB/s)" of its own: Kineto's bandwidth arg, bytes
     * per ns (0 for an empty span, as Kineto writes it), which HTA's memory
     * analyses read; writers add it as that arg. */
    uint8_t has_mem_bw;
    double mem_bw_gbps;
#define ACT__MEM_BW_KEY "memory bandwidth (GB/s)"
} act__vevent;

typedef struct act__vinfo {
    uint32_t struct_size;
    int32_t pid;
    int64_t base_unix_ns;     /* baseTimeNanoseconds: a whole second before
                                 the first event */
    int64_t to_rel_ns;        /* add to a monotonic time: ns since base */
    int64_t mono_to_unix_ns;  /* add to a monotonic time: Unix ns */
    int64_t proc_start;       /* actraceProcessStart, 0: unknown */
    const char *trace_id, *group_trace_id; /* NULL or "" : none */
    const char *host_name;
    const char *trace_name;   /* NULL: the writer names it from the path */
    int recovered;            /* rebuilt from a spool */
    int has_rank, has_world, has_local;
    int64_t rank, world, local;
    int categories_generic;
    const char *dist_backend; /* ACTRACE_DIST_BACKEND, else "unknown" */
} act__vinfo;

typedef struct act__vdevice {
    uint32_t struct_size;
    uint32_t id;
    const char *name, *vendor, *backend;
    const act__arg *props;
    size_t nprops;
} act__vdevice;

typedef struct act__vprocess {
    uint32_t struct_size;
    int32_t pid;
    int64_t sort_index;
    const char *name;
    uint32_t device; /* ACT__HOST_DEVICE for the host process */
} act__vprocess;

typedef struct act__vthread {
    uint32_t struct_size;
    int32_t pid;
    int64_t tid;
    const char *name;
    uint8_t is_stream; /* a device stream */
} act__vthread;

typedef struct act__vctrack {
    uint32_t struct_size;
    uint32_t index;  /* the track's first series */
    int32_t pid;
    uint32_t device;
    const char *name; /* as written: "(unnamed)", or "name [source]" on a clash */
    const char *cat;  /* "host_counter" or "gpu_pm_counter" */
    size_t nseries;
    const act__series *const *series; /* the track's series, index order */
    const uint32_t *series_id;        /* their ids */
} act__vctrack;

typedef struct act__vcsample {
    uint32_t struct_size;
    int64_t ts;                /* monotonic ns */
    size_t nchanged;           /* series sampled at ts ... */
    const uint32_t *changed;   /* ... as positions in the track's series */
    const double *changed_val; /* ... and their values */
    const double *cur;         /* every series' latest value (track order) */
    const uint8_t *seen;       /* series that have a value at all */
} act__vcsample;

typedef struct act__vplugin {
    const char *name, *path;
    uint64_t rejected, filtered, dropped;
    size_t nreasons;           /* reasons with a non-zero count */
    const char *reason_key[16];
    uint64_t reason_n[16];
    size_t nwarnings;
    const char *const *warnings;
} act__vplugin;

typedef struct act__vstats {
    uint32_t struct_size;
    uint64_t recorded, dropped, args_recorded, args_dropped;
    uint64_t args_orphan, args_event_dropped, args_reentrant;
    uint64_t by_reason[ACT__DROP_NREASONS];
    const char *const *reason_names; /* ACT__DROP_NREASONS */
    uint64_t by_type[ACT__NTYPE_SLOTS];
    uint64_t buffer_bytes, buffer_limit_bytes;
    size_t nplugins;
    const act__vplugin *plugins;
    size_t nseries; /* the session's series (0: no counters section) */
    const act__series *const *series;
    const uint8_t *series_live;
    uint64_t counter_samples, counter_events;
} act__vstats;

typedef struct act__visitor {
    uint32_t struct_size; /* sizeof(act__visitor) of the caller */
    void *ctx;
    void (*begin)(void *ctx, const act__vinfo *info);
    void (*device)(void *ctx, const act__vdevice *d);
    void (*metadata)(void *ctx, const act__vinfo *info);
    void (*process)(void *ctx, const act__vprocess *p);
    void (*thread)(void *ctx, const act__vthread *t);
    void (*thread_events)(void *ctx, int32_t pid, int32_t tid);
    void (*event)(void *ctx, const act__vevent *e);
    void (*counter_track)(void *ctx, const act__vctrack *ct);
    void (*counter)(void *ctx, const act__vctrack *ct, const act__vcsample *cs);
    void (*end)(void *ctx, const act__vstats *st);
    /* Appended fields go below this line. */
} act__visitor;

/**
 * Walk @p s, calling @p v's callbacks (NULL ones are skipped). Holds the
 * session lock throughout.
 * @return 0, or ACT_ENOMEM when memory for a global view ran out (the walk
 *         still completes as well as it can: events unsorted, flows or
 *         counters missing); @p err gets a message.
 */
int act__visit(act_session *s, const act__visitor *v, char *err, size_t errcap);

/** act_session_visit() (window 0) or a window's read-back (window 1:
 *  the session must be the active one and still collecting; events and
 *  counter samples outside [lo, hi] and spans still open are left out). */
struct act_visitor;
int act__readback(act_session *s, const struct act_visitor *v, int window, int64_t lo,
                  int64_t hi);

/** The bytes of name ref @p ref (local to @p c, or interned); "" for 0 or
 *  an unknown id. */
const char *act__visit_ref(const act__chunk *c, uint32_t ref, uint32_t *len);

/** Next arg of an event; 0 after the last. */
int act__vargs_next(act__vargs *it, act__varg *out);

/** Which keys act__vargs_next_unique skips: those a writer writes itself. */
enum {
    ACT__ARGS_ALL = 0,    /* none */
    ACT__ARGS_HOST = 1,   /* host events: "External id", "unfinished" */
    ACT__ARGS_PLUGIN = 2  /* plugin events: "External id", "correlation",
                             "device", "stream", "backend" */
};

/** Next arg to write: args whose key is reserved for @p which (ACT__ARGS_*)
 *  are skipped, and of a key given twice only the last is kept (keys must
 *  be unique in a JSON object; the Perfetto writer keeps the same args, so
 *  both formats carry the same; a duplicate more than 64 args later is not
 *  seen). Interned keys are checked through the walk's key cache (it->keys)
 *  by id; local keys, and every key when it->keys is NULL, by their bytes,
 *  with the same result. 0 after the last. */
int act__vargs_next_unique(act__vargs *it, int which, act__varg *out);

/** The args of one event to write, as act__vargs_next_unique gives them,
 *  gathered in one pass: for an event of at most ACT__VUNIQ_MAX args each
 *  is read once, and interned keys are compared by their cached ids (no
 *  lookahead per arg, no string table). More args: the iterator's way. */
#define ACT__VUNIQ_MAX 16
typedef struct act__vuniq {
    uint32_t n, pos;
    int which, more; /* more: past ACT__VUNIQ_MAX, iterate `it` */
    act__vargs it;
    act__varg arg[ACT__VUNIQ_MAX];
} act__vuniq;

/** Start @p u on the args @p args of an event, skipping those reserved for
 *  @p which (ACT__ARGS_*). */
void act__vuniq_start(act__vuniq *u, const act__vargs *args, int which);

/** Next arg of @p u (as act__vargs_next_unique); 0 after the last. */
static inline int act__vuniq_next(act__vuniq *u, act__varg *out)
{
    if (u->more)
        return act__vargs_next_unique(&u->it, u->which, out);
    if (u->pos >= u->n)
        return 0;
    *out = u->arg[u->pos++];
    return 1;
}

#endif /* ACT_WRITER_VISIT_H */
