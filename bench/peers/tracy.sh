#!/bin/sh
# SPDX-License-Identifier: MIT
# The scoped span against Tracy in one run (issue 39; docs/performance.md).
#   bench/peers/tracy.sh TRACY_DIR [BUILD_DIR]
# TRACY_DIR: a checkout of https://github.com/wolfpld/tracy (v0.14.0 was
# measured), whose public/ holds TracyClient.cpp; BUILD_DIR: an actrace
# build (default build/) with libactrace.a. Builds Tracy's client with
# TRACY_ENABLE (no capture tool connected: Tracy queues the zones) and
# tracy_scoped.cpp into a temporary folder, and runs it on one core.
set -eu
tracy=${1:?usage: bench/peers/tracy.sh TRACY_DIR [BUILD_DIR]}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ -f "$tracy/public/TracyClient.cpp" ] || { echo "tracy.sh: no $tracy/public/TracyClient.cpp" >&2; exit 2; }
lib="$build/src/libactrace.a"
[ -f "$lib" ] || { echo "tracy.sh: no $lib (build actrace first: make)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cxx=${CXX:-c++}
$cxx -O2 -DNDEBUG -DTRACY_ENABLE -I"$tracy/public" -c "$tracy/public/TracyClient.cpp" -o "$tmp/tracy.o"
$cxx -O2 -DNDEBUG -DTRACY_ENABLE -I"$tracy/public" -I"$root/include" -I"$root/bench" -I"$build/include" \
    "$here/tracy_scoped.cpp" "$tmp/tracy.o" "$lib" -o "$tmp/tracy_scoped" -lpthread -ldl -lm -lz
taskset -c 0 "$tmp/tracy_scoped" 2>/dev/null || "$tmp/tracy_scoped"
