#!/bin/sh
# SPDX-License-Identifier: MIT
# make demo: build, record the bundled example with `actrace record`, say
# where the trace is, summarise it in a few lines.
#
#   scripts/demo.sh [-v] [--build] [BUILD]     (BUILD defaults to build)
#
# --build  configure (once) and build BUILD first (`make demo` passes it;
#          JOBS and CMAKE_FLAGS from the environment), its output in
#          BUILD/build.log, one line here
# -v       everything: the build's output, the programs' own output, the
#          full `actrace summary` of each trace (`make demo V=1`)
#
# The example (examples/demo/demo_app.c) is a small training loop
# instrumented with the actrace API, recorded with the example device
# plugin and the host counters plugin (examples/demo/demo.cfg). The same
# run is also written as Perfetto's protobuf and checked, and when an
# OpenCL runtime is present examples/opencl is recorded with no flags (the
# opencl backend traces it). Everything a step prints goes to
# BUILD/traces/demo.log; a failing step prints its part of that log.
# CI checks the traces with real viewers' importers (make validate).
set -e
VERBOSE=0
BUILD_FIRST=0
while [ $# -gt 0 ]; do
    case "$1" in
    -v) VERBOSE=1 ;;
    --build) BUILD_FIRST=1 ;;
    -*) echo "usage: scripts/demo.sh [-v] [--build] [BUILD]" >&2; exit 2 ;;
    *) break ;;
    esac
    shift
done
BUILD=${1:-build}
SRC=$(cd "$(dirname "$0")/.." && pwd)
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

say() { printf '%s\n' "$*"; }
# step LOG CMD...: run CMD, its output to LOG (appended) or, with -v, here;
# on failure print LOG's last lines and stop.
step() {
    log=$1
    shift
    if [ "$VERBOSE" = 1 ]; then
        "$@"
        return
    fi
    if ! "$@" >>"$log" 2>&1; then
        say "demo: failed: $*" >&2
        tail -n 40 "$log" >&2
        say "demo: (the whole output: $log)" >&2
        exit 1
    fi
}

if [ "$BUILD_FIRST" = 1 ]; then
    mkdir -p "$BUILD"
    blog="$BUILD/build.log"
    : >"$blog"
    t0=$(date +%s)
    if [ ! -f "$BUILD/CMakeCache.txt" ]; then
        # shellcheck disable=SC2086 # CMAKE_FLAGS is a list of flags
        step "$blog" cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_FLAGS:-}
        [ "$VERBOSE" = 1 ] || grep '^-- actrace: not found' "$blog" | sed 's/^-- /  /' || :
    fi
    step "$blog" cmake --build "$BUILD" -j "$JOBS"
    say "build:   $BUILD/ ($(($(date +%s) - t0)) s; its output in $blog)"
fi

ACTRACE="$BUILD/bin/actrace"
TRACES="$BUILD/traces"
mkdir -p "$TRACES"
LOG="$TRACES/demo.log"
: >"$LOG"
PLUGINS=""
NAMES=""
for p in example host; do
    if [ -f "$BUILD/plugins/$p.so" ]; then
        PLUGINS="$PLUGINS --plugin $(cd "$BUILD/plugins" && pwd)/$p.so"
        NAMES="$NAMES $p"
    fi
done
CFG="$SRC/examples/demo/demo.cfg"

# shellcheck disable=SC2086 # PLUGINS is a list of flags
step "$LOG" "$ACTRACE" record -c "$CFG" -o "$TRACES/demo.json" --force $PLUGINS -- "$BUILD/bin/actrace-demo"
say "record:  examples/demo (a training loop instrumented with the actrace API; plugins:${NAMES:- none})"
if [ "$VERBOSE" = 1 ]; then
    "$ACTRACE" summary "$TRACES/demo.json"
else
    # One summary: what the recorder wrote and the device's activity.
    grep '^actrace record: wrote' "$LOG" | tail -n 1 | sed 's/; open it.*//; s/^actrace record: wrote /trace:   /'
    "$ACTRACE" summary "$TRACES/demo.json" 2>>"$LOG" |
        sed -n '/^device activity/,/^$/p' | sed '/^$/d; s/^/  /'
fi

# The same run in Perfetto's native format, decoded with protoc against our
# subset schema and checked by trace_processor's rules (actrace check).
# shellcheck disable=SC2086
step "$LOG" "$ACTRACE" record -c "$CFG" -o "$TRACES/demo.pftrace" --force $PLUGINS -- "$BUILD/bin/actrace-demo"
pf_check() {
    python3 "$SRC/tests/perfetto/pf_check.py" --actrace "$ACTRACE" \
        --proto "$SRC/tests/perfetto/actrace_trace.proto" "$TRACES/demo.pftrace" || [ $? -eq 77 ]
}
step "$LOG" pf_check
say "also:    $TRACES/demo.pftrace (a second run as Perfetto's protobuf, checked)"

# The OpenCL example, when an OpenCL runtime is present: recorded with no
# --plugin, so host and every installed backend (opencl here) are loaded.
if [ -x "$BUILD/bin/actrace-cl-demo" ]; then
    if "$BUILD/bin/actrace-cl-demo" 1 >/dev/null 2>&1; then
        step "$LOG" "$ACTRACE" record --force -o "$TRACES/demo_opencl.json" -- "$BUILD/bin/actrace-cl-demo"
        [ "$VERBOSE" = 1 ] && { "$ACTRACE" summary "$TRACES/demo_opencl.json" 2>/dev/null | head -40 || :; }
        say "also:    $TRACES/demo_opencl.json (examples/opencl: OpenCL calls and device work, no flags)"
    else
        say "(no OpenCL platform: examples/opencl not recorded; apt-get install pocl-opencl-icd)"
    fi
fi

# The demo's report: one HTML page that opens offline (docs/report.md).
if "$ACTRACE" report -o "$TRACES/demo.html" "$TRACES/demo.json" >>"$LOG" 2>&1; then
    say "report:  $TRACES/demo.html (open it in a browser; no network needed)"
fi

# More outputs go above this point: the last line names the main trace.
say "Open $TRACES/demo.json in https://ui.perfetto.dev (Open trace file), or run: $ACTRACE summary $TRACES/demo.json"
