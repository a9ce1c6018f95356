#!/bin/sh
# SPDX-License-Identifier: MIT
# DemoOutput: `make demo`'s recording part (scripts/demo.sh on a built tree)
# prints a few lines, none of the programs' own output (the OpenCL example's
# "queue 0: profiling off"), and its last line names the main trace and how
# to open it.
#   demo_output.sh SOURCE_DIR BUILD_DIR
set -u
src=$1
build=$2
out=$(sh "$src/scripts/demo.sh" "$build" 2>&1)
rc=$?
bad=0
fail() { echo "DemoOutput: $*"; bad=1; }
[ $rc -eq 0 ] || fail "scripts/demo.sh exited $rc"
n=$(printf '%s\n' "$out" | wc -l)
[ "$n" -le 25 ] || fail "$n lines (at most 25: a few lines of progress and one summary)"
printf '%s\n' "$out" | grep -q 'profiling off' && fail "the OpenCL example's own output is shown without -v"
printf '%s\n' "$out" | grep -q 'Entering directory' && fail "make's directory lines are shown"
last=$(printf '%s\n' "$out" | tail -n 1)
case "$last" in
*"$build/traces/demo.json"*ui.perfetto.dev*) ;;
*) fail "the last line does not name $build/traces/demo.json and how to open it: $last" ;;
esac
[ $bad -eq 0 ] || { echo "--- output ---"; printf '%s\n' "$out"; exit 1; }
echo "DemoOutput: ok ($n lines)"
