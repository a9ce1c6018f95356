/* SPDX-License-Identifier: MIT */
#include "actrace/version.h"

const char *act_version(void) { return ACT_VERSION_STRING; }

unsigned act_version_hex(void) { return (unsigned)ACT_VERSION_HEX; }
