# SPDX-License-Identifier: MIT
"""Every HTA analysis that runs on Kineto's traces runs on actrace's
(issue 35), with HTA's defaults: a trace of the OpenCL demo under
`actrace record --plugin opencl`, loaded by HolisticTraceAnalysis.

HTA rounds a trace's ts up and ts + dur down to whole microseconds when its
ts are not integers (a guard against the overlaps of ns-resolution Kineto
traces). A host span that lies inside one microsecond gets a duration of
-1 (0 when it straddles a microsecond), and HTA's call-stack sort raises
"ValueError: Unexpected case" where a -1 and a 0 meet at one microsecond
on a thread. Kineto writes ts and dur exactly as actrace does (us with
three decimals, relative to baseTimeNanoseconds) and its traces get the
same rounding; they rarely hold such a pair because libkineto counts and
drops the short, noisy CUDA runtime calls (cudaGetDevice, cudaSetDevice,
cudaGetLastError, cudaEventCreate/Destroy) and torch's ops start about a
microsecond apart (a dense one, 2000 rounds of view ops, fails in HTA the
same way). The OpenCL plugin now does the first: a call that launched
nothing, succeeded and returned within OPENCL_MIN_CALL_NS (1000) is
counted, not drawn (clSetKernelArg, clGet*Info, clRelease*, a clFinish with
nothing to wait for: 0.05-1 us on pocl, dozens per kernel). A drawn span
of 1 us or more never rounds below 0.

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


def record_demo(d, config=None):
    out = d / "rank-0.json"
    env = dict(os.environ)
    env.pop("ACTRACE_CONFIG", None)
    if config:
        (d / "act.conf").write_text(config)
        env["ACTRACE_CONFIG"] = str(d / "act.conf")
    r = subprocess.run([ACTRACE, "record", "-v", "--plugin", "opencl", "-o", str(out), "--",
                        CL_DEMO], capture_output=True, text=True, timeout=300, env=env)
    if r.returncode != 0 or not out.exists():
        pytest.skip("the OpenCL demo did not run here: %s" % r.stderr[-300:])
    with open(out) as f:
        doc = json.load(f)
    kernels = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    if not kernels:
        pytest.skip("no OpenCL device ran the demo's kernels")
    return doc, r.stderr


@pytest.fixture(scope="module")
def cl_trace(tmp_path_factory):
    """The demo recorded with every default."""
    if not CL_DEMO:
        pytest.skip("no OpenCL demo in this build")
    d = tmp_path_factory.mktemp("hta_ns")
    doc, log = record_demo(d)
    return d, doc, log


@pytest.fixture(scope="module")
def cl_trace_all_calls(tmp_path_factory):
    """The demo with every call drawn (OPENCL_MIN_CALL_NS = 0): the trace
    as it was before short calls were counted."""
    if not CL_DEMO:
        pytest.skip("no OpenCL demo in this build")
    d = tmp_path_factory.mktemp("hta_ns_all")
    doc, log = record_demo(d, "OPENCL_MIN_CALL_NS = 0\n")
    return d, doc, log


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


def host_spans(doc):
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e["pid"] < 0x40000000]


def test_ts_exact_to_the_ns(cl_trace):
    """Nothing is rounded: every ts (in us, as a double) is a whole number
    of nanoseconds."""
    _, doc, _ = cl_trace
    for e in doc["traceEvents"]:
        if "ts" in e:
            ns = e["ts"] * 1000
            assert abs(ns - round(ns)) < 1e-3, e


@pytest.mark.parametrize("name", sorted(ANALYSES))
def test_analysis_runs(cl_trace, name, monkeypatch, tmp_path):
    """HTA's defaults: no HTA_DISABLE_NS_ROUNDING. Before short calls were
    counted, get_frequent_cuda_kernel_sequences failed here ("Unexpected
    case") on 3 of 3 recordings (8-10 pairs each)."""
    d, _, _ = cl_trace
    monkeypatch.delenv("HTA_DISABLE_NS_ROUNDING", raising=False)
    rank_dir = tmp_path / "trace"
    rank_dir.mkdir()
    shutil.copy(d / "rank-0.json", rank_dir / "rank-0.json")
    t = hta_analysis.TraceAnalysis(trace_dir=str(rank_dir))
    ANALYSES[name](t, tmp_path)


def test_no_host_span_rounds_below_zero(cl_trace):
    """Every drawn call that launched nothing lasted 1 us or more, so HTA's
    rounding leaves it a duration of 0 or more; no -1 meets a 0."""
    _, doc, _ = cl_trace
    for e in host_spans(doc):
        a = e.get("args", {})
        if e["cat"] == "runtime" and "correlation" not in a and "error" not in a:
            assert e["dur"] >= 0.999, e  # the writer may shave 1 ns (safe_dur)
    assert not sub_us_pairs(doc)


def test_short_calls_counted_not_lost(cl_trace, cl_trace_all_calls):
    """The calls left out are counted, per function, in the plugin's log
    (`record -v`); OPENCL_MIN_CALL_NS = 0 draws every one: the demo's 40
    clSetKernelArg calls are drawn or counted, none lost."""
    _, doc, log = cl_trace
    _, all_doc, all_log = cl_trace_all_calls
    import re
    n_all = sum(e["name"] == "clSetKernelArg" for e in host_spans(all_doc))
    assert n_all == 40, n_all
    assert "counted, not drawn" not in all_log, all_log
    m = re.search(r"(\d+) calls shorter than 1000 ns that launched nothing counted, not drawn "
                  r"\(OPENCL_MIN_CALL_NS\):.*clSetKernelArg (\d+)", log)
    assert m, log
    drawn = sum(e["name"] == "clSetKernelArg" for e in host_spans(doc))
    assert drawn + int(m.group(2)) == n_all, (drawn, m.group(0))
    # Launches are all drawn, with their flows: as many kernels as before.
    def kernels(x):
        return sum(e.get("cat") == "kernel" for e in x["traceEvents"] if e.get("ph") == "X")
    assert kernels(doc) == kernels(all_doc)


def test_all_calls_trace_is_what_failed(cl_trace_all_calls, monkeypatch, tmp_path):
    """With every call drawn (the trace before the fix), the call-stack
    analysis fails exactly when the trace has a pair HTA's rounding cannot
    sort (the demo's clSetKernelArg calls usually give several): the
    cause, not something else."""
    d, doc, _ = cl_trace_all_calls
    monkeypatch.delenv("HTA_DISABLE_NS_ROUNDING", raising=False)
    (d / "act.conf").unlink(missing_ok=True)
    t = hta_analysis.TraceAnalysis(trace_dir=str(d))
    try:
        ANALYSES["get_frequent_cuda_kernel_sequences"](t, tmp_path)
        failed = None
    except ValueError as e:
        failed = str(e)
    if failed is not None:
        assert "Unexpected case" in failed and sub_us_pairs(doc), failed
    else:
        assert not sub_us_pairs(doc)
