/* SPDX-License-Identifier: MIT */
/*
 * Error codes of actrace. Every fallible call returns 0 or one of these
 * negative values. The list is an X-macro so that the enum, act_strerror()
 * and act_err_name() can never disagree. Values are never renumbered or
 * reused; a retired one stays as a comment.
 */
#ifndef ACTRACE_ERRORS_H
#define ACTRACE_ERRORS_H

#include "actrace/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, value, "message") */
#define ACT_ERROR_LIST(X)                                                     \
    X(OK, 0, "success")                                                       \
    X(EINVAL, -1, "invalid argument")                                         \
    X(ENOMEM, -2, "out of memory")                                            \
    X(ERANGE, -3, "value out of range")                                       \
    X(EPARSE, -4, "parse error")                                              \
    X(ENOENT, -5, "not found")                                                \
    X(EEXIST, -6, "already exists")                                           \
    X(ESTATE, -7, "operation not valid in the current state")                 \
    X(EBUSY, -8, "another session is active")                                 \
    X(EIO, -9, "input/output error")                                          \
    X(ELIMIT, -10, "limit reached")                                           \
    X(ENOTSUP, -11, "not supported")                                          \
    X(EPLUGIN, -12, "plugin refused")                                         \
    X(EABI, -13, "unsupported ABI version")                                   \
    X(EUNSAFE, -14, "file or directory is unsafe to load")                    \
    X(EDECLINED, -15, "declined")                                             \
    X(EUNKNOWN, -16, "unknown name")                                          \
    X(ENOSPC, -17, "no space left on device")

/** Error codes: ACT_OK (0) and negative ACT_E* values. */
typedef enum act_error {
#define ACT__ERR_ENUM(name, value, msg) ACT_##name = (value),
    ACT_ERROR_LIST(ACT__ERR_ENUM)
#undef ACT__ERR_ENUM
    ACT__ERROR_MIN = -17
} act_error;

/**
 * Human-readable message for an error code.
 * @return a static string; "unknown error" for a value not in the list.
 * Thread-safe.
 */
ACT_API const char *act_strerror(int err);

/**
 * The enumerator name of an error code without its prefix ("EINVAL").
 * @return a static string; "UNKNOWN" for a value not in the list.
 */
ACT_API const char *act_err_name(int err);

#ifdef __cplusplus
}
#endif
#endif /* ACTRACE_ERRORS_H */
