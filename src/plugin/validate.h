/* SPDX-License-Identifier: MIT */
/*
 * Validation of what a plugin hands the host: UTF-8, records, args,
 * samples. Pure functions (no session state), so they are unit-tested
 * directly and shared by every host-table entry point.
 */
#ifndef ACT_PLUGIN_VALIDATE_H
#define ACT_PLUGIN_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "actrace/plugin.h"
#include "internal.h"
#include "writer/json_out.h"

/* Why a plugin's data was rejected. Counted per plugin, logged once per
 * plugin and reason. 0 means "valid". */
typedef enum act__prej {
    ACT__PREJ_NONE = 0,
    ACT__PREJ_BATCH,       /* NULL array with count > 0, or count too large */
    ACT__PREJ_STRUCT_SIZE, /* struct_size too small, too large, misaligned
                              or differing inside one batch */
    ACT__PREJ_KIND,        /* unknown record kind */
    ACT__PREJ_TYPE,        /* unknown activity type code */
    ACT__PREJ_SHAPE,       /* counter/correlation type used as a record, or
                              a device span without a device */
    ACT__PREJ_DEVICE,      /* device not described by this plugin */
    ACT__PREJ_TIME,        /* negative timestamp */
    ACT__PREJ_ORDER,       /* end before start */
    ACT__PREJ_NAME_NULL,   /* NULL name */
    ACT__PREJ_NAME_LEN,    /* name too long */
    ACT__PREJ_NAME_UTF8,   /* name not valid UTF-8 */
    ACT__PREJ_ARGS,        /* too many args, or NULL args with nargs > 0 */
    ACT__PREJ_ARG,         /* one arg invalid (key, kind, value) */
    ACT__PREJ_COUNTER,     /* unknown counter track */
    ACT__PREJ_VALUE,       /* non-finite counter value */
    ACT__PREJ_CALL,        /* a host function called with invalid arguments */
    ACT__PREJ_COUNT
} act__prej;

/* Sentence describing @p r, for the log. */
const char *act__prej_text(act__prej r);
/* Short key naming @p r ("order", "name_utf8"...), for the trace's stats. */
const char *act__prej_name(act__prej r);

/* UTF-8 validation is the writer's act__utf8_valid (writer/json_out.h). */

/* Check a name given as (ptr, len): NULL, length cap, UTF-8. */
act__prej act__pcheck_name(const char *s, uint64_t len, uint64_t cap);

/* Check a NUL-terminated name (device names, tracks, units). */
act__prej act__pcheck_cstr(const char *s, size_t cap);

/* Check the element size of a plugin array: at least @p min_size, at most
 * ACT_PLUGIN_STRUCT_MAX, a multiple of 8. */
int act__pcheck_stride(uint32_t size, uint32_t min_size);

/* Validate @p nargs plugin args and convert them into @p out (room for
 * ACT_PLUGIN_ARGS_MAX). The converted args borrow the plugin's bytes. */
act__prej act__pcheck_args(const act_plugin_arg *args, uint32_t nargs,
                           act__arg *out);

/* Validate one record of a batch whose stride was checked. @p ndev is the
 * number of devices the plugin described. On success fills @p out (type
 * canonical, device still the plugin-local index) and @p args. @p r must
 * be the host's own copy of the record (host_table.c copies each record
 * once), so that what is checked is what is used; args are copied one by
 * one inside act__pcheck_args for the same reason. */
act__prej act__pcheck_record(const act_plugin_record *r, uint32_t ndev,
                             act__emit_record *out, act__arg *args);

#endif /* ACT_PLUGIN_VALIDATE_H */
