#!/bin/sh
# make demo: record the bundled example (a small training loop instrumented
# with the actrace API, plus the example device plugin and the host
# counters plugin when they are built)
# with `actrace record`, then summarise the trace. The trace lands in
# BUILD/traces/demo.json: open it in https://ui.perfetto.dev or
# chrome://tracing; CI checks it with real viewers' importers.
set -e
BUILD=${1:-build}
mkdir -p "$BUILD/traces"
PLUGINS=""
for p in example host; do
  if [ -f "$BUILD/plugins/$p.so" ]; then
    PLUGINS="$PLUGINS --plugin $(cd "$BUILD/plugins" && pwd)/$p.so"
  fi
done
"$BUILD/bin/actrace" record -c "$(dirname "$0")/../examples/demo/demo.cfg" -o "$BUILD/traces/demo.json" $PLUGINS \
  -- "$BUILD/bin/actrace-demo"
"$BUILD/bin/actrace" summary "$BUILD/traces/demo.json"
echo "trace: $BUILD/traces/demo.json (open it in https://ui.perfetto.dev)"
