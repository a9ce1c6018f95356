# SPDX-License-Identifier: MIT
"""HolisticTraceAnalysis (PyPI holistictraceanalysis) reads actrace's
multi-rank traces (issue 19): a 4-rank job (a launcher shell giving each
rank RANK, LOCAL_RANK and WORLD_SIZE, as torchrun does) runs the demo with
the example plugin under `actrace record --per-process`, and HTA's
TraceAnalysis loads the directory as ranks 0-3; its kernel and temporal
breakdowns and memory-bandwidth summary are
compared with what the traces hold, and every kernel is linked to its
launch. The same ranks merged with `actrace merge` load as one trace whose
kernels still link within their own process.

Run by ctest (tests/merge/tests.cmake, run_hta.sh) with the cached venv:
ACTRACE, ACT_DEMO, ACT_EXAMPLE_PLUGIN and ACT_CL_DEMO name the build's
files. The OpenCL demo's memory bandwidth is checked where an OpenCL
platform runs it.
"""
import json
import os
import subprocess

import pytest

hta_analysis = pytest.importorskip("hta.trace_analysis")

ACTRACE = os.environ["ACTRACE"]
DEMO = os.environ["ACT_DEMO"]
EXAMPLE = os.environ["ACT_EXAMPLE_PLUGIN"]
CL_DEMO = os.environ.get("ACT_CL_DEMO", "")
NRANKS = 4
MEMORY_PREFIXES = ("Memcpy", "Memset", "memcpy", "memset")


def run(args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([ACTRACE] + args, capture_output=True, text=True, env=e, timeout=300)
    assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    d = tmp_path_factory.mktemp("hta") / "ranks"
    launcher = ["sh", "-c", 'for r in 0 1 2 3; do RANK=$r LOCAL_RANK=$r "$0" >/dev/null & done; wait',
                DEMO]
    run(["record", "--per-process", str(d), "--plugin", EXAMPLE, "--"] + launcher,
        {"WORLD_SIZE": str(NRANKS)})
    files = sorted(p for p in os.listdir(d) if p.endswith(".json"))
    assert [f.split("_")[0] for f in files] == ["rank-%d" % r for r in range(NRANKS)], files
    assert all(f.endswith(".pt.trace.json") for f in files), files
    return d, [d / f for f in files]


def device_work(path):
    """The device events HTA counts (they carry a stream), from the trace."""
    with open(path) as f:
        doc = json.load(f)
    return [e for e in doc["traceEvents"]
            if e.get("ph") == "X" and "stream" in e.get("args", {}) and e["pid"] >= 0x40000000]


def union_us(spans):
    total, end = 0.0, None
    for ts, dur in sorted(spans):
        if end is None or ts > end:
            total += dur
            end = ts + dur
        elif ts + dur > end:
            total += ts + dur - end
            end = ts + dur
    return total


def test_per_process_ranks_load(ranks):
    d, files = ranks
    t = hta_analysis.TraceAnalysis(trace_dir=str(d))
    assert sorted(t.t.traces.keys()) == list(range(NRANKS))
    for rank, path in enumerate(files):
        df = t.t.get_trace(rank)
        sym = t.t.symbol_table.get_sym_table()
        names = sorted(sym[i] for i in df.loc[df["stream"].gt(0), "name"])
        assert names == sorted(e["name"] for e in device_work(path))
        assert len(names) > 0


def test_kernel_breakdown(ranks):
    d, files = ranks
    t = hta_analysis.TraceAnalysis(trace_dir=str(d))
    _, per_kernel = t.get_gpu_kernel_breakdown(visualize=False, num_kernels=100)
    for rank, path in enumerate(files):
        want, count = {}, {}
        for e in device_work(path):
            want[e["name"]] = want.get(e["name"], 0.0) + e["dur"]
            count[e["name"]] = count.get(e["name"], 0) + 1
        got = per_kernel[per_kernel["rank"] == rank]
        assert sorted(got["name"]) == sorted(want)
        for _, row in got.iterrows():
            # HTA works in whole microseconds: it rounds each start up and
            # each end down, so each event loses less than 1 us.
            name = row["name"]
            assert want[name] - count[name] <= row["sum (us)"] <= want[name], row
            assert row["sum (us)"] / row["mean (us)"] == pytest.approx(count[name]), row


def test_temporal_breakdown(ranks):
    d, files = ranks
    t = hta_analysis.TraceAnalysis(trace_dir=str(d))
    tb = t.get_temporal_breakdown(visualize=False)
    assert sorted(tb["rank"]) == list(range(NRANKS))
    for rank, path in enumerate(files):
        row = tb[tb["rank"] == rank].iloc[0]
        work = device_work(path)
        compute = union_us([(e["ts"], e["dur"]) for e in work
                            if not e["name"].startswith(MEMORY_PREFIXES)])
        span = max(e["ts"] + e["dur"] for e in work) - min(e["ts"] for e in work)
        assert abs(row["compute_time(us)"] - compute) <= len(work), (row, compute)
        assert abs(row["kernel_time(us)"] - span) <= 2, (row, span)
        assert row["idle_time(us)"] + row["compute_time(us)"] + row["non_compute_time(us)"] == \
            pytest.approx(row["kernel_time(us)"])
        assert 0 < row["compute_time(us)"] < row["kernel_time(us)"]


def test_memory_bandwidth(ranks):
    # The example backend's copies carry "bytes"; the writer adds Kineto's
    # "memory bandwidth (GB/s)", which HTA's memory analysis reads.
    d, files = ranks
    t = hta_analysis.TraceAnalysis(trace_dir=str(d))
    summary = t.get_memory_bw_summary(ranks=list(range(NRANKS)))
    assert len(summary) > 0
    copies = [e for e in device_work(files[0]) if e["name"].startswith("Memcpy")]
    assert copies and all("memory bandwidth (GB/s)" in e["args"] for e in copies)
    df = t.t.get_trace(0)
    bw = df.loc[df["stream"].gt(0) & df["memory_bw_gbps"].gt(0), "memory_bw_gbps"]
    assert sorted(bw) == pytest.approx(sorted(e["args"]["memory bandwidth (GB/s)"] for e in copies))


def linked(t, rank):
    """(device events with a correlation id, those HTA linked to a launch,
    the launches). The example backend's syncs have no launch."""
    df = t.t.get_trace(rank)
    k = df[df["stream"].gt(0) & df["index_correlation"].gt(0)]
    launches = df.loc[k["index_correlation"]]
    return int((df["stream"].gt(0) & df["correlation"].gt(0)).sum()), len(k), launches


def test_kernels_link_to_launches(ranks):
    d, files = ranks
    t = hta_analysis.TraceAnalysis(trace_dir=str(d))
    for rank in range(NRANKS):
        n, nlinked, launches = linked(t, rank)
        assert n == len([e for e in device_work(files[rank]) if e["args"].get("correlation")])
        assert n > 0 and nlinked == n
        assert (launches["stream"] == -1).all()


def test_merged_ranks_stay_apart(ranks, tmp_path):
    d, files = ranks
    out = tmp_path / "merged"
    out.mkdir()
    run(["merge", "-o", str(out / "all.json")] + [str(f) for f in files])
    t = hta_analysis.TraceAnalysis(trace_dir=str(out))
    assert list(t.t.traces.keys()) == [0]  # one file: the first rank's
    n, nlinked, launches = linked(t, 0)
    assert n == sum(len([e for e in device_work(f) if e["args"].get("correlation")]) for f in files)
    assert nlinked == n
    # Every kernel's launch is in its own rank's host process (correlation
    # ids renumbered per rank, pids and device pids kept apart).
    with open(out / "all.json") as f:
        procs = json.load(f)["actraceProcesses"]
    assert [p["rank"] for p in procs] == list(range(NRANKS))
    rank_of = {}
    for r, p in enumerate(procs):
        renamed = p.get("renamed", {})
        for pid in p["pids"]:
            rank_of[pid] = r
        for e in device_work(files[r]):
            rank_of[renamed.get(str(e["pid"]), e["pid"])] = r
    assert len(set(rank_of.values())) == NRANKS
    df = t.t.get_trace(0)
    k = df[df["stream"].gt(0) & df["index_correlation"].gt(0)]
    for kpid, lpid in zip(k["pid"], launches["pid"]):
        assert rank_of[int(kpid)] == rank_of[int(lpid)]
    streams = [set(df.loc[df["pid"].isin([p for p, r in rank_of.items() if r == rank]) &
                          df["stream"].gt(0), "stream"]) for rank in range(NRANKS)]
    assert all(streams)
    assert sum(len(x) for x in streams) == len(set().union(*streams))


def test_opencl_memory_bandwidth(tmp_path):
    # The OpenCL demo (PoCL here) in HTA: its copies and fills carry bytes,
    # so HTA's memory-bandwidth summary has them.
    if not CL_DEMO or subprocess.run([CL_DEMO, "1"], capture_output=True).returncode != 0:
        pytest.skip("no OpenCL platform runs the OpenCL demo")
    d = tmp_path / "cl"
    run(["record", "--per-process", str(d), "--", CL_DEMO])
    files = [d / f for f in os.listdir(d) if f.endswith(".json")]
    assert len(files) == 1
    copies = [e for e in device_work(files[0]) if e.get("cat") in ("gpu_memcpy", "gpu_memset")]
    assert copies
    for e in copies:
        # The written dur may be a nanosecond under the span (so that ts +
        # dur never passes its end in doubles): allow 2 ns.
        dur_ns = e["dur"] * 1000
        want = e["args"]["bytes"] / dur_ns if dur_ns else 0.0
        assert e["args"]["memory bandwidth (GB/s)"] == pytest.approx(want, rel=2 / max(dur_ns, 1))
    t = hta_analysis.TraceAnalysis(trace_dir=str(d))
    summary = t.get_memory_bw_summary(ranks=[0])
    assert len(summary) > 0
