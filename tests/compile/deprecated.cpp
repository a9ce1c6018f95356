/* SPDX-License-Identifier: MIT */
/*
 * The C++ twin of deprecated.c: the deprecated activity-type enumerators
 * (DESIGN.md section 2) under a C++ compiler.
 * tests/compile/deprecated_check.cmake compiles this file and checks that (a) it compiles, so every static_assert below holds: each
 * deprecated enumerator equals its canonical one, and (b) the compiler
 * warned about each deprecated enumerator by name. With
 * ACT_TEST_CANONICAL_ONLY defined, only canonical enumerators are used and
 * the file must compile without any warning under -Werror.
 */
#include "actrace/activity_type.h"

static_assert(ACT_RUNTIME == 7 && ACT_DRIVER == 8, "codes are fixed");
static_assert(ACT_CONCURRENT_KERNEL == 5 && ACT_GPU_PM_COUNTER == 28,
               "codes are fixed");

#ifndef ACT_TEST_CANONICAL_ONLY
static_assert(ACT_CUDA_RUNTIME == ACT_RUNTIME, "ACT_CUDA_RUNTIME");
static_assert(ACT_MTIA_RUNTIME == ACT_RUNTIME, "ACT_MTIA_RUNTIME");
static_assert(ACT_GLOW_RUNTIME == ACT_RUNTIME, "ACT_GLOW_RUNTIME");
static_assert(ACT_HPU_OP == ACT_RUNTIME, "ACT_HPU_OP");
static_assert(ACT_XPU_RUNTIME == ACT_RUNTIME, "ACT_XPU_RUNTIME");
static_assert(ACT_PRIVATEUSE1_RUNTIME == ACT_RUNTIME,
               "ACT_PRIVATEUSE1_RUNTIME");
static_assert(ACT_CUDA_DRIVER == ACT_DRIVER, "ACT_CUDA_DRIVER");
static_assert(ACT_XPU_DRIVER == ACT_DRIVER, "ACT_XPU_DRIVER");
static_assert(ACT_PRIVATEUSE1_DRIVER == ACT_DRIVER, "ACT_PRIVATEUSE1_DRIVER");
static_assert(ACT_MTIA_CCP_EVENTS == ACT_CONCURRENT_KERNEL,
               "ACT_MTIA_CCP_EVENTS");
static_assert(ACT_MTIA_COUNTERS == ACT_GPU_PM_COUNTER, "ACT_MTIA_COUNTERS");
static_assert(ACT_HARDWARE_COUNTERS == ACT_GPU_PM_COUNTER,
               "ACT_HARDWARE_COUNTERS");
#endif

int deprecated_use(act_activity_type t);

/* Old code switching on vendor enumerators still compiles. */
int deprecated_use(act_activity_type t)
{
    switch (t) {
#ifndef ACT_TEST_CANONICAL_ONLY
    case ACT_CUDA_RUNTIME:
        return 1;
#else
    case ACT_RUNTIME:
        return 1;
#endif
    case ACT_DRIVER:
        return 2;
    default:
        return 0;
    }
}
