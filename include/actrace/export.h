/* SPDX-License-Identifier: MIT */
/*
 * ACT_API marks the symbols libactrace exports. The library is built with
 * -fvisibility=hidden, so anything without ACT_API stays private, and a
 * linker version script (src/libactrace.map) pins the exported set.
 */
#ifndef ACTRACE_EXPORT_H
#define ACTRACE_EXPORT_H

#if defined(ACT_STATIC_DEFINE)
#define ACT_API
#elif defined(__GNUC__) || defined(__clang__)
#define ACT_API __attribute__((visibility("default")))
#else
#define ACT_API
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ACT_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define ACT_DEPRECATED(msg)
#endif

#endif /* ACTRACE_EXPORT_H */
