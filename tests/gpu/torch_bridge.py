# SPDX-License-Identifier: MIT
"""The torch section of tests/gpu/run.sh: a CUDA matmul loop.

  torch_bridge.py bridge SHIM PLUGINS OUT   under torch.profiler (CPU + CUDA)
                                            with actrace's Kineto shim, the
                                            plugins a comma list of paths
  torch_bridge.py loop                      the same loop, no profiler (run
                                            under `actrace record`)
  torch_bridge.py check-record TRACE        checks the record run's trace

The bridge is loaded with ctypes straight from a shim built by run.sh
(what actrace.torch.enable() builds and loads; the lent machine cannot
pip-install the package). One line per check: PASS/FAIL name: detail.
"""
import ctypes
import json
import os
import sys

DEVICE_PID = 0x40000000
fails = 0


def step(ok, name, detail):
    global fails
    print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail))
    fails += 0 if ok else 1


def loop(torch, n=20):
    a = torch.randn(1024, 1024, device="cuda")
    for i in range(n):
        torch.cuda.nvtx.range_push("step%d" % i)
        b = a @ a
        a = b / b.norm()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def bridge(shim, plugins, out):
    # As enable() does: NVTX reads its injection path at the first call.
    for p in plugins.split(","):
        if p.endswith("/nvtx.so"):
            os.environ.setdefault("NVTX_INJECTION64_PATH", p)
    import torch
    from torch.profiler import profile, ProfilerActivity
    lib = ctypes.CDLL(shim)
    lib.actrace_kineto_enable.argtypes = [ctypes.c_char_p] * 4 + [ctypes.c_size_t]
    err = ctypes.create_string_buffer(1024)
    rc = lib.actrace_kineto_enable(torch.__version__.encode(), plugins.replace(",", "\n").encode(),
                                   b"HOST_COUNTER_INTERVAL_MSECS = 10\n", err, len(err))
    step(rc == 0, "torch_enable", "rc %d %s" % (rc, err.value.decode()))
    loop(torch, 2)  # warm up cuBLAS outside the profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        loop(torch)
    prof.export_chrome_trace(out)
    t = json.load(open(out))
    ev = t["traceEvents"]
    md = t.get("actrace", {})
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    step(len(kernels) >= 20 and all(e["pid"] < DEVICE_PID for e in kernels), "torch_cupti_kernels",
         "%d kernels from torch's own CUPTI" % len(kernels))
    notes = md.get("notes", [])
    step(any("cupti plugin not started" in n for n in notes), "torch_cupti_declines",
         "the cupti plugin stays out: %s" % [n for n in notes if "cupti" in n][:1])
    names = [p["name"] for p in md.get("plugins", [])]
    step("nvtx" in names and "host" in names and "cupti" not in names, "torch_plugins", str(names))
    ranges = [e for e in ev if e.get("ph") == "X" and str(e.get("name", "")).startswith("step")]
    step(len(ranges) >= 20, "torch_nvtx", "%d NVTX ranges from the nvtx plugin" % len(ranges))
    ctr = {e["name"] for e in ev if e.get("ph") == "C"}
    step(bool(ctr), "torch_counters", "host counter tracks %s" % sorted(ctr)[:4])
    table = prof.key_averages().table(row_limit=5)
    step("aten::matmul" in table or "aten::mm" in table, "torch_key_averages", "key_averages works")


def check_record(path):
    t = json.load(open(path))
    ev = t["traceEvents"]
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    step(len(kernels) >= 20 and all(e["pid"] >= DEVICE_PID for e in kernels), "record_torch_kernels",
         "%d kernels from actrace's cupti plugin on its device pid" % len(kernels))
    pm = [e for e in ev if e.get("ph") == "C" and e.get("cat") == "gpu_pm_counter"]
    step(len(pm) > 0, "record_torch_pm", "%d PM counter samples" % len(pm))
    flows = [e for e in ev if e.get("ph") == "s"]
    step(len(flows) >= 20, "record_torch_flows", "%d launch flows" % len(flows))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "bridge":
        bridge(*sys.argv[2:5])
    elif mode == "loop":
        import torch
        loop(torch)
    elif mode == "check-record":
        check_record(sys.argv[2])
    sys.exit(1 if fails else 0)
