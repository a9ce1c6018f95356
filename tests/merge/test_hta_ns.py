# SPDX-License-Identifier: MIT
"""Every HTA analysis that runs on Kineto's traces runs on actrace's
(issue 35): a trace of the OpenCL demo under `actrace record --plugin
opencl`, loaded by HolisticTraceAnalysis 0.6.x.

HTA rounds a trace's ts up and ts + dur down to whole microseconds when its
ts are not integers, a guard against the overlaps that ns-resolution Kineto
traces have (their ts count from a 3-month base, ~5.5e12 us, where a double
holds about 1 ns). A host span shorter than a microsecond then gets a
duration of -1 (0 when it straddles a microsecond), and HTA's call-stack
sort raises "ValueError: Unexpected case" on a -1 and a 0 that meet at one
microsecond, as two consecutive sub-microsecond calls on one thread give
(clSetKernelArg, clGetEventProfilingInfo, clGetDeviceInfo...). Kineto's
traces rarely have such pairs: it drops the noisy sub-microsecond CUDA
runtime calls (cudaGetDevice, cudaSetDevice, cudaGetLastError,
cudaEventCreate/Destroy; libkineto's CuptiCbidRegistry blocklist) and
torch's ops are microseconds apart. actrace keeps every call, and its ts
count from a second before the first event, exact to the nanosecond in a
double: HTA's rounding is not needed there, and with
HTA_DISABLE_NS_ROUNDING=1 (HTA's own switch) every analysis runs.

Run by ctest (Merge.hta_ns: run_hta.sh with this file) with the cached
venv; ACTRACE and ACT_CL_DEMO name the build's files.
"""
import json
import os
import shutil
import subprocess

import pytest

hta_analysis = pytest.importorskip("hta.trace_analysis")

ACTRACE = os.environ["ACTRACE"]
CL_DEMO = os.environ.get("ACT_CL_DEMO", "")

# The analyses that run on a CPU-only torch.profiler trace (Kineto) with
# HTA 0.6.1, and those HTA answers for any trace with device work; with
# their arguments for a one-rank OpenCL trace.
ANALYSES = {
    "get_comm_comp_overlap": lambda t, d: t.get_comm_comp_overlap(visualize=False),
    "get_profiler_steps": lambda t, d: t.get_profiler_steps(),
    "get_gpu_kernel_breakdown": lambda t, d: t.get_gpu_kernel_breakdown(visualize=False),
    "get_temporal_breakdown": lambda t, d: t.get_temporal_breakdown(visualize=False),
    "get_frequent_cuda_kernel_sequences": lambda t, d: t.get_frequent_cuda_kernel_sequences(
        operator_name="clEnqueueNDRangeKernel", output_dir=str(d)),
    "get_cuda_kernel_launch_stats": lambda t, d: t.get_cuda_kernel_launch_stats(visualize=False),
    "get_queue_length_summary": lambda t, d: t.get_queue_length_summary(ranks=[0]),
    "get_memory_bw_summary": lambda t, d: t.get_memory_bw_summary(ranks=[0]),
    "get_idle_time_breakdown": lambda t, d: t.get_idle_time_breakdown(visualize=False),
    "generate_trace_with_counters": lambda t, d: t.generate_trace_with_counters(),
}


@pytest.fixture(scope="module")
def cl_trace(tmp_path_factory):
    if not CL_DEMO:
        pytest.skip("no OpenCL demo in this build")
    d = tmp_path_factory.mktemp("hta_ns")
    out = d / "rank-0.json"
    r = subprocess.run([ACTRACE, "record", "--plugin", "opencl", "-o", str(out), "--", CL_DEMO],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or not out.exists():
        pytest.skip("the OpenCL demo did not run here: %s" % r.stderr[-300:])
    with open(out) as f:
        doc = json.load(f)
    kernels = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    if not kernels:
        pytest.skip("no OpenCL device ran the demo's kernels")
    return d, doc


def sub_us_pairs(doc):
    """Host spans that HTA's rounding turns into a -1 and a 0 meeting at one
    microsecond on one thread (what its call-stack sort refuses)."""
    import math
    at = {}
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or e["pid"] >= 0x40000000:
            continue
        a, b = math.ceil(e["ts"]), math.floor(e["ts"] + e["dur"])
        for t in (a, b):
            at.setdefault((e["pid"], e["tid"], t), set()).add(b - a)
    return [k for k, v in at.items() if 0 in v and -1 in v]


def test_ts_exact_to_the_ns(cl_trace):
    """Rounding is not needed: every ts (in us, as a double) is a whole
    number of nanoseconds, and every child ends within its parent exactly."""
    _, doc = cl_trace
    for e in doc["traceEvents"]:
        if "ts" in e:
            ns = e["ts"] * 1000
            assert abs(ns - round(ns)) < 1e-3, e


@pytest.mark.parametrize("name", sorted(ANALYSES))
def test_analysis_runs(cl_trace, name, monkeypatch, tmp_path):
    d, doc = cl_trace
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")
    rank_dir = tmp_path / "trace"
    rank_dir.mkdir()
    shutil.copy(d / "rank-0.json", rank_dir / "rank-0.json")
    t = hta_analysis.TraceAnalysis(trace_dir=str(rank_dir))
    ANALYSES[name](t, tmp_path)


def test_rounding_is_what_fails(cl_trace, monkeypatch, tmp_path):
    """Without the switch, the call-stack analysis fails exactly when the
    trace has a pair HTA's rounding cannot sort (the demo's clSetKernelArg
    calls usually give one): the cause, not something else."""
    d, doc = cl_trace
    monkeypatch.delenv("HTA_DISABLE_NS_ROUNDING", raising=False)
    t = hta_analysis.TraceAnalysis(trace_dir=str(d))
    try:
        ANALYSES["get_frequent_cuda_kernel_sequences"](t, tmp_path)
        failed = None
    except ValueError as e:
        failed = str(e)
    if failed is not None:
        assert "Unexpected case" in failed and sub_us_pairs(doc), failed
