/* SPDX-License-Identifier: MIT */
/*
 * Translation of CUPTI activity buffers into actrace plugin records.
 *
 * ct_buffer() walks a completed CUPTI buffer with the real
 * cuptiActivityGetNextRecord and hands kernels, copies, memsets, runtime
 * and driver calls, synchronisations, CUDA events and overheads to the
 * host in batches. It keeps the little state the mapping needs: CUDA
 * device ordinal -> host device index (devices are described on first
 * sight, with Kineto's deviceProperties keys, through the driver when it
 * is usable), context -> device, streams already named, CUPTI correlation
 * id -> external id (from EXTERNAL_CORRELATION records), demangled kernel
 * names and API function names. Nothing is allocated per record: a
 * demangled name is allocated once per distinct kernel.
 *
 * Not thread-safe: the caller serialises calls (CUPTI may complete
 * buffers on several threads).
 */
#ifndef ACT_CUPTI_TRANSLATE_H
#define ACT_CUPTI_TRANSLATE_H

#include <actrace/plugin.h>

#include "cupti_api.h"

#define CT_BATCH 128
#define CT_ARGS 12
#define CT_MAX_DEVICES 64
#define CT_MAX_CONTEXTS 256
#define CT_STREAM_SLOTS 4096   /* power of two */
#define CT_EXT_RING 16384      /* power of two */
#define CT_NAME_SLOTS 2048     /* power of two */
#define CT_API_NAMES 4096      /* cbids cached per domain */
#define CT_COPY_KINDS 11       /* CUPTI_ACTIVITY_MEMCPY_KIND_* */
#define CT_MEM_KINDS 8         /* CUPTI_ACTIVITY_MEMORY_KIND_* */

typedef char *(*ct_demangle_fn)(const char *, char *, size_t *, int *);

typedef struct ct_name_slot {
    const char *key;  /* CUPTI's mangled name pointer (stable) */
    char *demangled;  /* malloc'ed, or NULL: use key */
} ct_name_slot;

typedef struct ct_api_name {
    const char *ptr;
    uint32_t len; /* 0: not looked up yet */
} ct_api_name;

typedef struct ct_ctx {
    const act_plugin_host *host;
    const cu_cupti *api;
    const cu_driver *drv; /* may be NULL: devices get names only */
    ct_demangle_fn demangle;

    uint32_t dev_index[CT_MAX_DEVICES]; /* host index + 1; 0: unknown */
    struct { uint32_t ctx, dev; } ctxs[CT_MAX_CONTEXTS];
    uint32_t nctxs;
    uint64_t streams[CT_STREAM_SLOTS]; /* (hostdev << 32 | stream) + 1 */
    uint32_t nstreams;
    struct { uint32_t corr; uint64_t ext; } ext[CT_EXT_RING];
    ct_name_slot names[CT_NAME_SLOTS];
    uint32_t nnames;
    ct_api_name rt_names[CT_API_NAMES], drv_names[CT_API_NAMES];
    char copy_names[CT_COPY_KINDS][CT_MEM_KINDS][CT_MEM_KINDS][48];
    char memset_names[CT_MEM_KINDS][32];

    act_plugin_record recs[CT_BATCH];
    act_plugin_arg args[CT_BATCH][CT_ARGS];
    char scratch[CT_BATCH][2][48];
    uint32_t n;

    /* statistics */
    uint64_t translated; /* records handed to the host */
    uint64_t skipped;    /* kinds we do not translate */
    uint64_t bad;        /* records the host refused */
    uint64_t no_device;  /* records of a device that could not be added */
} ct_ctx;

/** Sets up @p c (zeroes it). @p drv may be NULL. Looks up __cxa_demangle. */
void ct_init(ct_ctx *c, const act_plugin_host *host, const cu_cupti *api,
             const cu_driver *drv);
/** Translates every record of @p buf (@p valid bytes) and emits them. */
void ct_buffer(ct_ctx *c, uint8_t *buf, size_t valid);
/** Emits what is batched. */
void ct_flush(ct_ctx *c);
/** Frees the demangled names. */
void ct_fini(ct_ctx *c);

/** Host device index for CUDA device @p ordinal, describing it on first
 *  use; UINT32_MAX if the host refused it. */
uint32_t ct_device(ct_ctx *c, uint32_t ordinal);

#endif
