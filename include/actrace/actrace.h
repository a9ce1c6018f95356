/* SPDX-License-Identifier: MIT */
/* Umbrella header: everything an application needs to record a trace. */
#ifndef ACTRACE_ACTRACE_H
#define ACTRACE_ACTRACE_H

#include "actrace/activity_type.h"
#include "actrace/config.h"
#include "actrace/errors.h"
#include "actrace/export.h"
#include "actrace/log.h"
#include "actrace/record.h"
#include "actrace/session.h"
#include "actrace/version.h"
#include "actrace/visit.h"

#endif /* ACTRACE_ACTRACE_H */
