/* SPDX-License-Identifier: MIT */
/*
 * Version of the actrace headers, and act_version() for the version of the
 * library actually loaded. The SONAME carries the major version.
 */
#ifndef ACTRACE_VERSION_H
#define ACTRACE_VERSION_H

#include "actrace/export.h"

#define ACT_VERSION_MAJOR 0
#define ACT_VERSION_MINOR 1
#define ACT_VERSION_PATCH 0
#define ACT_VERSION_STRING "0.1.0"
/** 0xMMmmpp: comparable with < and >. */
#define ACT_VERSION_HEX                                                       \
    ((ACT_VERSION_MAJOR << 16) | (ACT_VERSION_MINOR << 8) | ACT_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/** Version string of the loaded library ("0.1.0"); static storage. */
ACT_API const char *act_version(void);

/** ACT_VERSION_HEX of the loaded library. */
ACT_API unsigned act_version_hex(void);

#ifdef __cplusplus
}
#endif
#endif /* ACTRACE_VERSION_H */
