# SPDX-License-Identifier: MIT
"""`actrace record -- python train.py` on an unchanged script: torch's aten
ops, its record_function regions and the device work of actrace's plugins
(OpenCL through pocl here) in one trace, which HTA loads;
`--no-python-ops` turns the ops off."""
import os
import subprocess

from conftest import events

HERE = os.path.dirname(os.path.abspath(__file__))
DEVICE_PID = 0x40000000

# No actrace anywhere: the script a PyTorch user already has.
TRAIN = r'''
import sys
sys.path.insert(0, %r)
import ocl_ctypes
import torch
from torch.profiler import record_function

model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
o = ocl_ctypes.Ocl()
x = torch.randn(8, 16)
for step in range(3):
    with record_function("train_step%%d" %% step):
        loss = model(x).sum()
        loss.backward()
        opt.step()
        o.round(float(step + 2))
print("done")
''' % HERE


def _record(venv, tmp_path, out, *opts, env=None):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    r = subprocess.run([venv.actrace, "record", "-o", str(out), *opts, "--", venv.python,
                        str(script)], env=env or venv.env(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=600)
    assert r.returncode == 0 and "done" in r.stdout, r.stderr
    return r, venv.check_trace(str(out))


def test_unchanged_script_records_ops_regions_and_device(venv, tmp_path, trace_path):
    r, t = _record(venv, tmp_path, trace_path)
    ops = [e for e in events(t, ph="X") if e.get("cat") == "cpu_op"]
    names = {e["name"] for e in ops}
    assert {"aten::linear", "aten::relu", "aten::sum"} <= names, sorted(names)[:40]
    regions = [e for e in events(t, ph="X", cat="user_annotation")
               if e["name"].startswith("train_step")]
    assert sorted(e["name"] for e in regions) == ["train_step0", "train_step1", "train_step2"]
    dev = [e for e in events(t, ph="X") if isinstance(e.get("pid"), int)
           and e["pid"] >= DEVICE_PID]
    assert any(e["name"] == "scale" for e in dev), sorted({e["name"] for e in dev})
    # The region encloses its ops, on the same thread.
    r0 = regions[0]
    assert any(e["tid"] == r0["tid"] and r0["ts"] <= e["ts"] <= r0["ts"] + r0["dur"]
               and e["name"] == "aten::linear" for e in ops)
    # One process: the record hook's folder is gone afterwards.
    assert "PyTorch ops are not recorded" not in r.stderr, r.stderr


HTA_ALL = r'''
import sys
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
kinds, kernels = a.get_gpu_kernel_breakdown(visualize=False)
print(sorted(set(kernels["name"])))
a.get_temporal_breakdown(visualize=False)
a.get_idle_time_breakdown(visualize=False)
a.get_comm_comp_overlap(visualize=False)
a.get_profiler_steps()
a.get_cuda_kernel_launch_stats(visualize=False)
a.get_queue_length_summary(ranks=[0])
a.get_memory_bw_summary(ranks=[0])
a.generate_trace_with_counters()
a.get_frequent_cuda_kernel_sequences(operator_name="clEnqueueNDRangeKernel",
                                     output_dir=sys.argv[2])
print("all analyses ran")
'''


def test_unchanged_script_trace_loads_in_hta(venv, tmp_path):
    """Every HTA analysis that runs on a Kineto trace runs on record's
    trace of a torch + OpenCL script, with HTA's defaults (its rounding of
    spans in to whole microseconds on). Before ops and OpenCL calls under
    1 us were counted rather than recorded, each recording held 1-3 pairs
    of a span rounded to -1 next to one rounded to 0 (two
    aten::resolve_conj within a microsecond) and
    get_frequent_cuda_kernel_sequences raised "Unexpected case"."""
    d = tmp_path / "hta"
    d.mkdir()
    _, t = _record(venv, tmp_path, d / "rank0.json")
    env = venv.env()
    env.pop("HTA_DISABLE_NS_ROUNDING", None)
    r = venv.run(HTA_ALL, args=[str(d), str(tmp_path)], env=env)
    assert "scale" in r.stdout and "all analyses ran" in r.stdout, r.stdout + r.stderr
    # No host span lies inside one microsecond: none rounds below 0.
    import math
    host = [e for e in events(t, ph="X") if isinstance(e.get("pid"), int)
            and e["pid"] < DEVICE_PID and e.get("cat") in ("cpu_op", "runtime")
            and "error" not in e.get("args", {})]
    assert host
    for e in host:
        assert math.floor(e["ts"] + e["dur"]) >= math.ceil(e["ts"]), e


def test_no_python_ops(venv, tmp_path):
    _, t = _record(venv, tmp_path, tmp_path / "n.json", "--no-python-ops")
    assert not [e for e in events(t, ph="X") if e.get("cat") == "cpu_op"]
    assert [e for e in events(t, ph="X") if isinstance(e.get("pid"), int)
            and e["pid"] >= DEVICE_PID]


def test_the_users_sitecustomize_still_runs(venv, tmp_path):
    """record's hook hides nothing: a sitecustomize the user has on
    PYTHONPATH runs too, and the hook's folder is removed at the end."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "sitecustomize.py").write_text("print('USER SITECUSTOMIZE')\n")
    tmpd = tmp_path / "tmp"
    tmpd.mkdir()
    env = venv.env(PYTHONPATH=str(mine), TMPDIR=str(tmpd))
    r, t = _record(venv, tmp_path, tmp_path / "u.json", env=env)
    assert "USER SITECUSTOMIZE" in r.stdout
    assert [e for e in events(t, ph="X") if e.get("cat") == "cpu_op"]
    assert not [f for f in os.listdir(tmpd) if f.startswith("actrace-")], os.listdir(tmpd)


def test_a_python_without_torch_imports_nothing_of_actrace(venv, tmp_path):
    """The hook costs a process that never imports torch one finder: the
    actrace package is not imported, threading is left alone."""
    r = subprocess.run([venv.actrace, "record", "-o", str(tmp_path / "p.json"), "--",
                        venv.python, "-c",
                        "import sys; print(sorted(m for m in sys.modules if 'actrace' in m), "
                        "[type(f).__name__ for f in sys.meta_path])"],
                       env=venv.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("[] [") and "_TorchFinder" in r.stdout, r.stdout + r.stderr


def test_torch_profiler_inside_record(venv, tmp_path):
    """enable() and torch.profiler cycles inside record: each profile opens
    a window on record's session (issue 34), so torch's trace of each cycle
    has the plugins' device work of that cycle (the OpenCL kernel record's
    opencl plugin saw, on actrace's device pid) and not the other cycle's,
    and record's trace keeps everything; nothing printed about it (6febe6c:
    torch's traces had no device work and actrace said 'another actrace
    session owns this process')."""
    script = tmp_path / "prof.py"
    script.write_text(r'''
import sys
sys.path.insert(0, %r)
import ocl_ctypes, torch, actrace.torch
from torch.profiler import profile, ProfilerActivity
actrace.torch.enable(plugins=["opencl", "host"])
o = ocl_ctypes.Ocl()
x = torch.randn(8, 8)
o.round(5.0)                  # before any profile: record's trace only
for cycle in range(2):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        o.round(2.0)
        y = x @ x
    prof.export_chrome_trace(sys.argv[1] + "%%d.json" %% cycle)
print("done")
''' % HERE)
    out = tmp_path / "r.json"
    r = subprocess.run([venv.actrace, "record", "-o", str(out), "--", venv.python, str(script),
                        str(tmp_path / "torch")], env=venv.env(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=600)
    assert r.returncode == 0 and "done" in r.stdout, r.stderr
    assert "cannot start" not in r.stderr, r.stderr
    assert "another actrace session" not in r.stderr, r.stderr
    t = venv.check_trace(str(out))
    rec = [e for e in events(t, ph="X") if isinstance(e.get("pid"), int)
           and e["pid"] >= DEVICE_PID and e["name"] == "scale"]
    assert len(rec) == 3, rec  # the one before the profiles and one per cycle
    import json
    for c in range(2):
        with open(str(tmp_path / "torch") + "%d.json" % c) as f:
            k = json.load(f)
        ev = k["traceEvents"]
        assert any(e.get("name") == "aten::mm" for e in ev)
        kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"
                   and isinstance(e.get("pid"), int) and e["pid"] >= DEVICE_PID]
        # This cycle's kernel only: the one before and the other cycle's
        # are outside its window.
        assert [e["name"] for e in kernels] == ["scale"], (c, kernels)
        assert any(e.get("cat") == "gpu_memcpy" for e in ev), c
        meta = json.loads(k["actrace"]) if isinstance(k.get("actrace"), str) else k.get("actrace")
        assert meta and any("window on another actrace session" in n for n in meta["notes"]), meta
