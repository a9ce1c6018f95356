#!/bin/sh
# make demo: record the bundled example (a small training loop instrumented
# with the actrace API, plus the example device plugin when it is built)
# with `actrace record`, then summarise the trace. The trace lands in
# BUILD/traces/demo.json: open it in https://ui.perfetto.dev or
# chrome://tracing; CI checks it with real viewers' importers.
set -e
BUILD=${1:-build}
mkdir -p "$BUILD/traces"
PLUGIN=""
if [ -f "$BUILD/plugins/example.so" ]; then
  PLUGIN="--plugin $(cd "$BUILD/plugins" && pwd)/example.so"
fi
"$BUILD/bin/actrace" record -o "$BUILD/traces/demo.json" $PLUGIN -- "$BUILD/bin/actrace-demo"
if "$BUILD/bin/actrace" summary "$BUILD/traces/demo.json" 2>/dev/null; then :; else
  echo "(actrace summary not available in this build)"
fi
echo "trace: $BUILD/traces/demo.json (open it in https://ui.perfetto.dev)"
