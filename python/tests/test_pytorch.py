# SPDX-License-Identifier: MIT
"""actrace.torch.enable(): actrace's plugins inside torch.profiler (a Kineto
child profiler), with torch from PyPI on this CPU machine.

The traces torch.profiler exports carry three events Kineto writes itself
with string pids ("Spans", "Traces" and the "Record Window End" marker);
the shared validators refuse string pids (speedscope crashes on them) and
actrace check warns about them (errors with --strict). Each test checks
that those are the only errors about the full trace, and writes a copy without them to the validated
trace folder (ACT_TRACE_DIR) for CI's validators: everything the bridge
adds is checked there.
"""
import json
import os
import subprocess

import pytest

from conftest import TRACES, WORK, events

HERE = os.path.dirname(os.path.abspath(__file__))
DEVICE_PID = 0x40000000

PRELUDE = r'''
import json, os, sys
sys.path.insert(0, %r)
import torch
import actrace, actrace.torch
from torch.profiler import profile, ProfilerActivity, record_function, schedule
''' % HERE


def _check_full_and_copy(venv, path, name):
    """actrace check on torch's trace: only Kineto's own string-pid events
    may be errors (they are warnings now). A copy without them must pass; it goes to TRACES."""
    r = subprocess.run([venv.actrace, "check", path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    errors = [l for l in r.stdout.splitlines() if ": error:" in l]
    kineto_own = ('pid "Spans"', 'pid "Traces"', 'pid ""')
    assert all(any(k in l for k in kineto_own) for l in errors), r.stdout
    with open(path) as f:
        t = json.load(f)
    copy = dict(t)
    copy["traceEvents"] = [e for e in t["traceEvents"] if isinstance(e.get("pid"), int)]
    out = os.path.join(TRACES, name)
    with open(out, "w") as f:
        json.dump(copy, f)
    r = subprocess.run([venv.actrace, "check", out], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    return t


def _device_x(t):
    return [e for e in events(t, ph="X") if isinstance(e.get("pid"), int) and e["pid"] >= DEVICE_PID]


def _ext(e):
    return e.get("args", {}).get("External id")


OPENCL_RUN = PRELUDE + r'''
import ocl_ctypes
assert actrace.torch.enable(plugins=["opencl", "host"], config="HOST_COUNTER_INTERVAL_MSECS = 5\n")
o = ocl_ctypes.Ocl()          # queue made before any profile, without profiling
x = torch.randn(32, 32)
o.round()                     # outside any profile: not in the trace
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for i in range(3):
        with record_function("ocl_round%d" % i):
            o.round(float(i + 2))
        y = torch.relu(x @ x)
    import time; time.sleep(0.03)   # a few host counter samples
prof.export_chrome_trace(sys.argv[1])
table = prof.key_averages().table(row_limit=50)
assert "ocl_round0" in table and "aten::matmul" in table, table
print("sessions", actrace.torch.enabled_sessions())
'''


@pytest.fixture(scope="module")
def opencl_trace(venv):
    path = os.path.join(WORK, "torch_opencl.json")
    r = venv.run(OPENCL_RUN, args=[path])
    assert "sessions 1" in r.stdout, r.stdout + r.stderr
    return path, r


def test_opencl_under_torch_profiler(venv, opencl_trace):
    path, r = opencl_trace
    t = _check_full_and_copy(venv, path, "py_torch_opencl.json")
    dev = _device_x(t)
    kernels = [e for e in dev if e["cat"] == "kernel"]
    copies = [e for e in dev if e["cat"] == "gpu_memcpy"]
    fills = [e for e in dev if e["cat"] == "gpu_memset"]
    # Three rounds inside the profile (the one before it is not there).
    assert len(kernels) == 3 and all(k["name"] == "scale" for k in kernels), kernels
    assert sorted(c["name"] for c in copies) == ["Memcpy DtoH"] * 3 + ["Memcpy HtoD"] * 3
    assert len(fills) == 3
    # On actrace's device pid, its stream named, the device named.
    pids = {e["pid"] for e in dev}
    assert len(pids) == 1
    dpid = pids.pop()
    names = {e["pid"]: e["args"]["name"] for e in events(t, ph="M", name="process_name")}
    assert names.get(dpid), names
    streams = {(e["pid"], e["tid"]): e["args"]["name"] for e in events(t, ph="M", name="thread_name")}
    for e in dev:
        assert (e["pid"], e["tid"]) in streams, e
        assert e["args"]["backend"] == "opencl"
    # One flow per launch: from its runtime call to its device work.
    starts = {f["id"]: f for f in events(t, ph="s")}
    ends = {f["id"]: f for f in events(t, ph="f")}
    assert len(starts) == len(events(t, ph="s")) and len(ends) == len(events(t, ph="f"))
    assert set(starts) == set(ends) and len(starts) == len(dev) == 12
    # Keyed by where a flow event binds (pid, tid, ts): two slices may share
    # a key (a 0-length call, or a ts rounded by the export), so the flow
    # must bind to one of the slices there, and that one is its launch.
    runtime, devx = {}, {}
    for e in events(t, ph="X", cat="privateuse1_runtime"):
        runtime.setdefault((e["pid"], e["tid"], e["ts"]), []).append(e)
    for e in dev:
        devx.setdefault((e["pid"], e["tid"], e["ts"]), []).append(e)
    for fid, s in starts.items():
        at = runtime[(s["pid"], s["tid"], s["ts"])]
        launch = next((e for e in at if e["args"]["correlation"] == fid), at[0])
        at = devx[(ends[fid]["pid"], ends[fid]["tid"], ends[fid]["ts"])]
        work = next((e for e in at if e["args"]["correlation"] == fid), at[0])
        assert launch["args"]["correlation"] == work["args"]["correlation"] == fid
        assert launch["name"] == work["args"]["function"]
        assert _ext(launch) == _ext(work)
    # Every device span lies inside the record_function region that was
    # current at its launch (External id): clocks agree (the rounds finish
    # their work before they return).
    regions = {_ext(e): e for e in events(t, ph="X", cat="user_annotation")}
    for e in dev:
        reg = regions[_ext(e)]
        assert reg["name"].startswith("ocl_round")
        assert reg["ts"] <= e["ts"] and e["ts"] + e["dur"] <= reg["ts"] + reg["dur"] + 1e-3, (e, reg)
    kernel_rounds = sorted(regions[_ext(k)]["name"] for k in kernels)
    assert kernel_rounds == ["ocl_round0", "ocl_round1", "ocl_round2"]
    # The host plugin's counters as counter tracks on the host process.
    ctr = events(t, ph="C")
    host_pid = [e["pid"] for e in events(t, ph="X", cat="cpu_op")][0]
    assert {"cpu", "memory"} <= {c["name"] for c in ctr if c["pid"] == host_pid}, ctr[:5]
    for c in ctr:
        assert c["args"] and all(k for k in c["args"])
    # The bridge's metadata.
    md = t["actrace"]
    assert [p["name"] for p in md["plugins"]] == ["opencl", "host"]
    assert md["dropped"] == 0


def test_opencl_trace_hta(venv, opencl_trace, tmp_path):
    """HolisticTraceAnalysis parses torch's trace with the bridge's events
    and breaks the kernels down."""
    path, _ = opencl_trace
    d = tmp_path / "hta"
    d.mkdir()
    os.link(path, d / "rank0.json") if os.stat(path).st_dev == os.stat(str(d)).st_dev else \
        (d / "rank0.json").write_bytes(open(path, "rb").read())
    r = venv.run(r'''
import sys
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
kinds, kernels = a.get_gpu_kernel_breakdown(visualize=False)
names = set(kernels["name"])
print(sorted(names))
assert "scale" in names and "Memcpy HtoD" in names, names
# HTA adds "A overlapping B" rows where its interval sweep sees kernels of
# two kinds at once (pocl's queues may overlap, and equal end/start times
# sort either way); the kinds themselves are exactly these two.
base = {k for k in kinds["kernel_type"] if " overlapping " not in k}
assert base == {"COMPUTATION", "MEMORY"}, kinds
''', args=[str(d)])
    assert "scale" in r.stdout


def test_schedule_two_cycles_two_traces(venv, tmp_path):
    out = tmp_path / "cycles"
    out.mkdir()
    venv.run(PRELUDE + r'''
import ocl_ctypes
actrace.torch.enable(plugins=["opencl"])
o = ocl_ctypes.Ocl()
n = [0]
def ready(p):
    p.export_chrome_trace(os.path.join(sys.argv[1], "cycle%d.json" % n[0]))
    n[0] += 1
with profile(activities=[ProfilerActivity.CPU], on_trace_ready=ready,
             schedule=schedule(wait=1, warmup=1, active=2, repeat=2)) as prof:
    for step in range(10):
        with record_function("step%d" % step):
            o.round()
        prof.step()
assert n[0] == 2, n
print("sessions", actrace.torch.enabled_sessions())
''', args=[str(out)])
    seen = []
    for i in range(2):
        p = str(out / ("cycle%d.json" % i))
        t = _check_full_and_copy(venv, p, "py_torch_cycle%d.json" % i)
        dev = _device_x(t)
        kernels = [e for e in dev if e["cat"] == "kernel"]
        # Two active steps per cycle: two rounds, each its own kernel.
        assert len(kernels) == 2, kernels
        regions = {_ext(e): e for e in events(t, ph="X", cat="user_annotation")
                   if e["name"].startswith("step")}
        steps = sorted(regions[_ext(k)]["name"] for k in kernels)
        seen.append(steps)
        # Only this cycle's device work: every span belongs to a step of
        # this trace, inside it.
        for e in dev:
            reg = regions[_ext(e)]
            assert reg["ts"] <= e["ts"] and e["ts"] + e["dur"] <= reg["ts"] + reg["dur"] + 1e-3
        # Flow ids never repeat between the cycles either.
        seen.append({f["id"] for f in events(t, ph="s")})
    assert seen[0] == ["step2", "step3"] and seen[2] == ["step6", "step7"], seen
    assert not (seen[1] & seen[3])


def test_example_plugin_flows(venv, trace_path, tmp_path):
    """The example plugin, unchanged: its device, streams, kernels with
    their args, a flow from each simulated launch to its device work, its
    counter track, its custom type."""
    path = str(tmp_path / "example.json")
    venv.run(PRELUDE + r'''
actrace.torch.enable(plugins=["example"], config="EXAMPLE_LAUNCHES = 4\n")
x = torch.randn(16, 16)
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for i in range(50):
        with record_function("work%d" % i):
            y = x @ x
    import time; time.sleep(0.5)   # the simulated launches take a few ms
prof.export_chrome_trace(sys.argv[1])
''', args=[path])
    t = _check_full_and_copy(venv, path, os.path.basename(trace_path))
    dev = _device_x(t)
    # The plugin's worker simulates its launches after the profile starts;
    # on a loaded machine some may end after the profile stopped: those are
    # outside the window, dropped and counted, never lost silently.
    kernels = [e for e in dev if e["cat"] == "kernel"]
    copies = [e for e in dev if e["cat"] == "gpu_memcpy"]
    assert 1 <= len(kernels) <= 4 and len(copies) <= 4, dev
    assert 4 - len(kernels) <= t["actrace"]["outside_window"]
    names = {e["pid"]: e["args"]["name"] for e in events(t, ph="M", name="process_name")}
    dpid = dev[0]["pid"]
    assert names[dpid].startswith("Example NPU 0")
    streams = {e["args"]["name"]: e["tid"] for e in events(t, ph="M", name="thread_name")
               if e["pid"] == dpid}
    assert streams == {"compute": 1, "copy": 2}
    for k in kernels:
        assert k["tid"] == 1 and k["args"]["queue"] == "compute" and k["args"]["grid"] % 64 == 0
    sync = [e for e in dev if e["name"] == "example_sync"]
    assert sync and all(e["args"]["actrace type"] == "example_sync" for e in sync)
    starts = {f["id"]: f for f in events(t, ph="s")}
    ends = {f["id"]: f for f in events(t, ph="f")}
    launches = {(e["tid"], e["ts"]): e for e in events(t, ph="X", cat="privateuse1_runtime")}
    linked = 0
    for w in kernels + copies:
        fid = w["args"]["correlation"]
        assert ends[fid]["ts"] == w["ts"] and ends[fid]["pid"] == dpid
        s = starts[fid]
        launch = launches[(s["tid"], s["ts"])]
        assert launch["name"] == ("exampleLaunchKernel" if w["cat"] == "kernel" else "exampleMemcpyAsync")
        linked += 1
    assert linked == len(kernels) + len(copies)
    util = [c for c in events(t, ph="C") if c["name"] == "utilization"]
    assert util and all(c["pid"] == dpid and "utilization (%)" in c["args"] for c in util)


def test_correlation_links_device_work_to_the_current_op(venv, tmp_path):
    """The op that was current when a plugin launched (torch pushes its
    correlation id; the child passes it to act_correlation_push) is the
    one the device work names as "External id", and torch's op carries the
    same External id."""
    path = str(tmp_path / "ext.json")
    venv.run(PRELUDE + r'''
import ocl_ctypes
actrace.torch.enable(plugins=["opencl"])
o = ocl_ctypes.Ocl()
with profile(activities=[ProfilerActivity.CPU]) as prof:
    with record_function("outer"):
        x = torch.ones(4)
        with record_function("inner"):
            o.round()
        x = x + 1
prof.export_chrome_trace(sys.argv[1])
''', args=[path])
    with open(path) as f:
        t = json.load(f)
    dev = _device_x(t)
    assert len(dev) == 4
    inner, = [e for e in events(t, ph="X", cat="user_annotation") if e["name"] == "inner"]
    assert all(_ext(e) == _ext(inner) for e in dev)


def test_shim_for_another_torch_is_refused(venv, tmp_path):
    shim = str(tmp_path / "other" / "shim.so")
    r = venv.run(PRELUDE + r'''
try:
    actrace.torch.enable(plugins=["host"], _shim=sys.argv[1], _built_for="1.0.0")
except RuntimeError as e:
    print("refused:", e)
else:
    raise SystemExit("a shim built for torch 1.0.0 was accepted")
# The shim for this torch still loads.
assert actrace.torch.enable(plugins=["host"])
''', args=[shim])
    assert "refused:" in r.stdout
    assert "built for torch 1.0.0" in r.stdout and "is running" in r.stdout, r.stdout


FAIL_PLUGIN = r'''
#include <string.h>
#include <actrace/plugin.h>
static int32_t fail_init(const act_plugin_host *h, void **st, char *reason, uint32_t cap)
{
    (void)h; (void)st;
    strncpy(reason, "no device on this test machine", cap - 1);
    return ACT_PLUGIN_EINVAL;
}
static const act_plugin table = {
    .struct_size = sizeof(act_plugin), .abi_major = ACT_PLUGIN_ABI_MAJOR,
    .abi_minor = ACT_PLUGIN_ABI_MINOR, .name = "failing", .version = "1",
    .init = fail_init,
};
ACT_PLUGIN_EXPORT const act_plugin *act_plugin_entry(const act_plugin_host *host,
                                                     uint32_t major, uint32_t minor)
{
    (void)host; (void)minor;
    return major == ACT_PLUGIN_ABI_MAJOR ? &table : NULL;
}
'''


def test_failing_plugin_shows_and_profile_completes(venv, tmp_path):
    src = tmp_path / "failing.c"
    src.write_text(FAIL_PLUGIN)
    so = str(tmp_path / "failing.so")
    inc = subprocess.check_output([venv.python, "-c",
                                   "import actrace, os; print(os.path.join(os.path.dirname(actrace.__file__), 'include'))"],
                                  text=True).strip()
    subprocess.check_call(["cc", "-shared", "-fPIC", "-I", inc, str(src), "-o", so])
    os.chmod(str(tmp_path), 0o755)
    path = str(tmp_path / "fail.json")
    r = venv.run(PRELUDE + r'''
actrace.torch.enable(plugins=[sys.argv[2], "host"])
with profile(activities=[ProfilerActivity.CPU]) as prof:
    y = torch.ones(8) * 2
prof.export_chrome_trace(sys.argv[1])
''', args=[path, so])
    assert "no device on this test machine" in r.stderr, r.stderr
    with open(path) as f:
        t = json.load(f)
    notes = t["actrace"]["notes"]
    assert any("no device on this test machine" in n and "failing.so" in n for n in notes), notes
    assert [p["name"] for p in t["actrace"]["plugins"]] == ["host"]
    assert events(t, ph="X", cat="cpu_op"), "the profile itself is complete"


def test_no_double_cupti(venv, tmp_path):
    """With device activity requested, torch's own CUPTI is on: the cupti
    plugin is not started (said on stderr and in the metadata), the others
    run. Without it, the cupti plugin is loaded (and declines here: no
    GPU). torch.profiler drops ProfilerActivity.CUDA on a machine without
    a GPU, so the CUDA case goes through the calls torch.profiler makes
    with a GPU (_prepare_profiler/_enable_profiler), which hand Kineto the
    same activity set."""
    out = {}
    for name in ("cuda", "cpu"):
        path = str(tmp_path / (name + ".json"))
        r = venv.run(PRELUDE + r'''
from torch._C._profiler import ProfilerConfig, ProfilerState, _ExperimentalConfig
actrace.torch.enable(plugins=["cupti", "host"])
acts = {ProfilerActivity.CPU, ProfilerActivity.CUDA} if sys.argv[2] == "cuda" else {ProfilerActivity.CPU}
cfg = ProfilerConfig(ProfilerState.KINETO_GPU_FALLBACK if sys.argv[2] == "cuda" else ProfilerState.KINETO,
                     False, False, False, False, False, _ExperimentalConfig())
torch.autograd._prepare_profiler(cfg, acts)
torch.autograd._enable_profiler(cfg, acts)
y = torch.ones(8) * 2
torch.autograd._disable_profiler().save(sys.argv[1])
''', args=[path, name])
        with open(path) as f:
            out[name] = (json.load(f)["actrace"], r.stderr)
    md, err = out["cuda"]
    assert any("cupti plugin not started" in n for n in md["notes"]), md
    assert "cupti plugin not started" in err
    assert [p["name"] for p in md["plugins"]] == ["host"]
    md, err = out["cpu"]
    assert not any("not started" in n for n in md["notes"]), md
    assert any("cupti" in n for n in md["notes"]), md   # it was loaded and declined
    assert [p["name"] for p in md["plugins"]] == ["host"]


def test_disabled_enable_is_a_no_op(venv):
    r = venv.run(PRELUDE + r'''
print("on", actrace.torch.enable(plugins=["host"]))
''', env=venv.env(ACTRACE_DISABLE="1"))
    assert "on False" in r.stdout


def test_any_bytes_keep_the_trace_valid(venv, tmp_path):
    """Names and args with quotes, backslashes and control bytes (Kineto
    writes string args unescaped): the trace stays JSON, the text survives
    as far as it can. (Invalid UTF-8 cannot come from Python's API; the
    shim replaces it with U+FFFD all the same.)"""
    path = str(tmp_path / "bytes.json")
    venv.run(PRELUDE + r'''
actrace.torch.enable(plugins=["host"])
with profile(activities=[ProfilerActivity.CPU]) as prof:
    with actrace.annotate('we"ird\\name\x01', key='va"l\\ue\n\x02', n=3):
        y = torch.ones(3) * 2
    with actrace.annotate('na\u00efve', n=4):
        y = torch.ones(3) * 2
prof.export_chrome_trace(sys.argv[1])
''', args=[path])
    with open(path, "rb") as f:
        t = json.loads(f.read().decode("utf-8"))
    # Not a user_annotation: torch renames those it did not record.
    ann, = [e for e in events(t, ph="X", cat="privateuse1_runtime") if e["args"].get("n") == 3]
    assert ann["args"]["actrace type"] == "user_annotation"
    assert ann["name"].startswith("we'ird/name")
    assert ann["args"]["key"].startswith("va'l/ue")
    # Kineto itself names a slice with non-ASCII bytes "unknown"; the
    # trace stays valid either way.
    other, = [e for e in events(t, ph="X", cat="privateuse1_runtime") if e["args"].get("n") == 4]
    assert other["name"] in ("na\u00efve", "unknown")


def test_json_args_through_the_bridge(venv, tmp_path):
    """JSON args (a list given to annotate, recorded with act_arg_json)
    reach torch.profiler's trace as JSON values, as Kineto writes its own
    "Input Dims"; a text that is no JSON stays a string."""
    path = str(tmp_path / "json_args.json")
    venv.run(PRELUDE + r'''
actrace.torch.enable(plugins=["host"])
with profile(activities=[ProfilerActivity.CPU]) as prof:
    with actrace.annotate("dims", dims=[[2, 3], [3]], types=("float", ""), m={"k": [1, None]},
                          text="[[2, 3], [3]]", n=5):
        y = torch.ones(3) * 2
prof.export_chrome_trace(sys.argv[1])
''', args=[path])
    t = _check_full_and_copy(venv, path, "py_torch_json_args.json")
    ann, = [e for e in events(t, ph="X", cat="privateuse1_runtime") if e["args"].get("n") == 5]
    assert ann["args"]["dims"] == [[2, 3], [3]]
    assert ann["args"]["types"] == ["float", ""]
    assert ann["args"]["m"] == {"k": [1, None]}
    assert ann["args"]["text"] == "[[2, 3], [3]]"
