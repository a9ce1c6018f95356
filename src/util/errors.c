/* SPDX-License-Identifier: MIT */
/* act_strerror() and act_err_name(), generated from ACT_ERROR_LIST. */
#include "actrace/errors.h"

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
