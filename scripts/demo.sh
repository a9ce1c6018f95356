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
"$BUILD/bin/actrace" record -c "$(dirname "$0")/../examples/demo/demo.cfg" -o "$BUILD/traces/demo.json" --force $PLUGINS \
  -- "$BUILD/bin/actrace-demo"
"$BUILD/bin/actrace" summary "$BUILD/traces/demo.json"
echo "trace: $BUILD/traces/demo.json (open it in https://ui.perfetto.dev)"
# The same run in Perfetto's native format, decoded with protoc against our
# subset schema and checked by trace_processor's rules (actrace check).
"$BUILD/bin/actrace" record -c "$(dirname "$0")/../examples/demo/demo.cfg" -o "$BUILD/traces/demo.pftrace" --force $PLUGINS \
  -- "$BUILD/bin/actrace-demo" > /dev/null
python3 "$(dirname "$0")/../tests/perfetto/pf_check.py" --actrace "$BUILD/bin/actrace" \
  --proto "$(dirname "$0")/../tests/perfetto/actrace_trace.proto" "$BUILD/traces/demo.pftrace" || [ $? -eq 77 ]
echo "trace: $BUILD/traces/demo.pftrace (Perfetto's protobuf; same run, a third of the size)"
# The OpenCL example, when an OpenCL runtime is present: recorded with no
# --plugin, so host and every installed backend (opencl here) are loaded.
if [ -x "$BUILD/bin/actrace-cl-demo" ]; then
  if "$BUILD/bin/actrace-cl-demo" 1 >/dev/null 2>&1; then
    "$BUILD/bin/actrace" record --force -o "$BUILD/traces/demo_opencl.json" -- "$BUILD/bin/actrace-cl-demo"
    "$BUILD/bin/actrace" summary "$BUILD/traces/demo_opencl.json" 2>/dev/null | head -40 || :
    echo "trace: $BUILD/traces/demo_opencl.json (OpenCL host calls and device work)"
  else
    echo "(no OpenCL platform: the OpenCL example is not recorded; apt-get install pocl-opencl-icd)"
  fi
fi
# The demo's report: one HTML page that opens offline (docs/report.md).
"$BUILD/bin/actrace" report -o "$BUILD/traces/demo.html" "$BUILD/traces/demo.json" >/dev/null &&
  echo "report: $BUILD/traces/demo.html (open it in a browser; no network needed)" || :
