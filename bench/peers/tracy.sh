#!/bin/sh
# SPDX-License-Identifier: MIT
# The scoped span against Tracy in one run (issue 39; docs/performance.md).
#   bench/peers/tracy.sh [--icount] TRACY_DIR [BUILD_DIR]
# TRACY_DIR: a checkout of https://github.com/wolfpld/tracy (v0.14.0 was
# measured), whose public/ holds TracyClient.cpp; BUILD_DIR: an actrace
# build (default build/) with libactrace.a. Builds Tracy's client with
# TRACY_ENABLE (no capture tool connected: Tracy queues the zones) and
# tracy_scoped.cpp into a temporary folder, and runs it on one core.
# --icount: instead of times, instructions per iteration under callgrind
# (each loop at two counts, the difference; the loop's own included, as
# bench/icount/icount.sh counts actrace's), both tracers in one binary.
set -eu
icount=0
if [ "${1:-}" = --icount ]; then icount=1; shift; fi
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
if [ $icount = 0 ]; then
    taskset -c 0 "$tmp/tracy_scoped" 2>/dev/null || "$tmp/tracy_scoped"
    exit 0
fi
command -v valgrind >/dev/null 2>&1 || { echo "tracy.sh: --icount needs valgrind" >&2; exit 2; }
count() {
    valgrind --tool=callgrind --toggle-collect=icount_loop --callgrind-out-file=/dev/null \
        "$tmp/tracy_scoped" "$1" "$2" 2>&1 | sed -n 's/.*Collected : *\([0-9][0-9]*\).*/\1/p'
}
per() {
    a=$(count "$1" 100000) && b=$(count "$1" 300000) && [ -n "$a" ] && [ -n "$b" ] ||
        { echo "tracy.sh: callgrind gave no count for $1" >&2; exit 1; }
    echo $(( (b - a) / 200000 ))
}
loop=$(per loop); floor=$(per 0); tz=$(per 1); tza=$(per 2); az=$(per 3); aza=$(per 4)
echo "instructions per iteration (callgrind, one static binary; the loop's own included):"
echo "  the loop alone                            $loop"
echo "  floor: 2 rdtsc + 32B store                $floor"
echo "  Tracy ZoneScopedN (a noinline call)       $tz"
echo "  Tracy + ZoneValue + ZoneText              $tza"
echo "  actrace act_span_begin_id + act_span_end  $az"
echo "  actrace scoped + 2 args (act_key keys)    $aza"
