/* SPDX-License-Identifier: MIT */
/* act_strerror() and act_err_name(), generated from ACT_ERROR_LIST. */
#include "actrace/errors.h"

/* Every code lies in [ACT__ERROR_MIN, 0]: a new code at the end of the list
 * must move ACT__ERROR_MIN with it. (Duplicate values are caught by the
 * switch statements below.) */
#define X(name, value, msg)                                                   \
    _Static_assert((value) <= 0 && (value) >= ACT__ERROR_MIN,                 \
                   "ACT_" #name ": outside [ACT__ERROR_MIN, 0]");
ACT_ERROR_LIST(X)
#undef X

const char *act_strerror(int err)
{
    switch (err) {
#define X(name, value, msg)                                                   \
    case value:                                                               \
        return msg;
        ACT_ERROR_LIST(X)
#undef X
    }
    return "unknown error";
}

const char *act_err_name(int err)
{
    switch (err) {
#define X(name, value, msg)                                                   \
    case value:                                                               \
        return #name;
        ACT_ERROR_LIST(X)
#undef X
    }
    return "UNKNOWN";
}
