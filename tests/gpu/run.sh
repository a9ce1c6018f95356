#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The cupti plugin on a real NVIDIA GPU, in one command:
#   tests/gpu/run.sh            (from anywhere; BUILD=dir to choose the build)
# Builds actrace and the cupti plugin, builds tests/gpu/workload.cu with
# nvcc (kernels on two streams, copies both ways, a memset, a device
# synchronisation), records it with `actrace record --plugin cupti` and
# gpu_pm_counter selected, then checks the trace with check_trace.py: one
# line per check, exit status non-zero on any failure. Then the torch
# section (torch_bridge.py): a CUDA matmul loop under torch.profiler with
# actrace's Kineto bridge (nvtx and host plugins; the cupti plugin stays
# out, torch's CUPTI being on), and the same loop under `actrace record`
# with the cupti plugin and PM counters. A few minutes on an H200 (most of
# it the build).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build-gpu}
out=${OUT_DIR:-$build/gpu-test}
interval_us=${PM_INTERVAL_USECS:-1000}
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=${NVCC:-$cuda/bin/nvcc}
fail=0
step() { printf '%s %s: %s\n' "$1" "$2" "$3"; [ "$1" = PASS ] || fail=1; }
mkdir -p "$out"

if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu: /'
fi
if cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACT_CUDA_ROOT="$cuda" \
     >"$out/cmake.log" 2>&1 &&
   cmake --build "$build" -j "$(nproc)" --target actrace_cli actrace_plugin_cupti \
     actrace_cupti_metrics >>"$out/cmake.log" 2>&1 && [ -f "$build/plugins/cupti.so" ]; then
  step PASS build "actrace and cupti.so in $build"
else
  step FAIL build "see $out/cmake.log"; tail -20 "$out/cmake.log"; exit 1
fi
arch=-arch=native
"$nvcc" $arch -O2 -o "$out/workload" "$here/workload.cu" >"$out/nvcc.log" 2>&1 ||
  "$nvcc" -arch=sm_90 -O2 -o "$out/workload" "$here/workload.cu" >>"$out/nvcc.log" 2>&1
if [ -x "$out/workload" ]; then step PASS nvcc "workload built"; else
  step FAIL nvcc "see $out/nvcc.log"; tail -20 "$out/nvcc.log"; exit 1; fi

# The chip's metrics through the host API (no GPU needed for this part).
chip=$("$build/bin/actrace-cupti-metrics" --chips 2>/dev/null | grep -c . || true)
step "$([ "${chip:-0}" -gt 0 ] && echo PASS || echo FAIL)" metrics_tool "$chip chips known to CUPTI"

cat >"$out/gpu.cfg" <<CFG
ACTIVITY_TYPES = cpu_op, user_annotation, kernel, gpu_memcpy, gpu_memset, runtime, driver, cuda_sync, cuda_event, overhead, gpu_pm_counter
PM_COUNTER_INTERVAL_USECS = $interval_us
CFG
rm -f "$out/trace.json" "$out/manifest.json"
export LD_LIBRARY_PATH="$cuda/extras/CUPTI/lib64:$cuda/targets/x86_64-linux/lib:$cuda/lib64:${LD_LIBRARY_PATH:-}"
start=$(date +%s)
timeout 180 "$build/bin/actrace" record -c "$out/gpu.cfg" -o "$out/trace.json" --plugin cupti \
  -- "$out/workload" "$out/manifest.json" >"$out/record.log" 2>&1
rc=$?
grep -i "cupti\|warning\|error" "$out/record.log" | head -20 | sed 's/^/log: /'
step "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" record "exit status $rc in $(( $(date +%s) - start )) s"
[ -f "$out/trace.json" ] && [ -f "$out/manifest.json" ] || { step FAIL trace "no trace or manifest"; exit 1; }
if grep -q "declined" "$out/record.log"; then step FAIL plugin "the cupti plugin declined"; else
  step PASS plugin "the cupti plugin loaded"; fi

python3 "$here/check_trace.py" --manifest "$out/manifest.json" --interval-us "$interval_us" \
  "$out/trace.json" || fail=1
"$build/bin/actrace" summary "$out/trace.json" >"$out/summary.txt" 2>&1 &&
  step PASS summary "actrace summary reads it ($out/summary.txt)" || step FAIL summary "see $out/summary.txt"
# ---- torch: the torch.profiler bridge, and the same loop under record -------
# Needs a python with a CUDA torch (PYTHON=..., default python3); without one
# the section is skipped, said as such. The bridge's shim is built here as
# actrace.torch.enable() builds it (python/actrace/torch.py), against this
# torch's headers, and loaded by torch_bridge.py with ctypes.
py=${PYTHON:-python3}
if "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  if cmake --build "$build" -j "$(nproc)" --target actrace actrace_plugin_nvtx actrace_plugin_host \
       >>"$out/cmake.log" 2>&1 && [ -f "$build/plugins/nvtx.so" ] && [ -f "$build/plugins/host.so" ]; then
    step PASS torch_build "nvtx.so and host.so in $build/plugins"
  else
    step FAIL torch_build "see $out/cmake.log"
  fi
  tdir=$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
  tver=$("$py" -c 'import torch; print(torch.__version__)')
  tabi=$("$py" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
  if ${CXX:-c++} -O2 -DNDEBUG -std=c++20 -shared -fPIC -fvisibility=hidden \
       -D_GLIBCXX_USE_CXX11_ABI="$tabi" -I "$tdir/include" -I "$tdir/include/kineto" \
       -I "$root/include" -DACTRACE_TORCH_BUILT_FOR="\"$tver\"" "$root/python/src/torch_kineto.cpp" \
       -L "$tdir/lib" -lc10 -ltorch_cpu -L "$build/src" -l:libactrace.so.0 \
       -Wl,-rpath,"$tdir/lib" -Wl,-rpath,"$build/src" -o "$out/torch_kineto.so" >"$out/shim.log" 2>&1; then
    step PASS torch_shim "built against torch $tver"
    timeout 300 "$py" "$here/torch_bridge.py" bridge "$out/torch_kineto.so" \
      "$build/plugins/nvtx.so,$build/plugins/host.so,$build/plugins/cupti.so" \
      "$out/torch_bridge.json" 2>"$out/torch_bridge.log" || fail=1
  else
    step FAIL torch_shim "see $out/shim.log"; tail -20 "$out/shim.log"
  fi
  rm -f "$out/torch_record.json"
  timeout 300 "$build/bin/actrace" record -c "$out/gpu.cfg" -o "$out/torch_record.json" --plugin cupti \
    -- "$py" "$here/torch_bridge.py" loop >"$out/torch_record.log" 2>&1
  rc=$?
  step "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" torch_record "exit status $rc (log: $out/torch_record.log)"
  [ -f "$out/torch_record.json" ] && { "$py" "$here/torch_bridge.py" check-record "$out/torch_record.json" || fail=1; }
else
  echo "SKIP torch: no CUDA torch for $py"
fi

[ $fail -eq 0 ] && echo "gpu: all checks passed" || echo "gpu: FAILED"
exit $fail
