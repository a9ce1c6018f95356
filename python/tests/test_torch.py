# SPDX-License-Identifier: MIT
"""actrace.torch.record_ops() on a real model with torch from PyPI."""
import json
import os

import pytest

from conftest import TRACES, events, inside

MODEL = r'''
import sys, torch, actrace, actrace.torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(2, 8), torch.randn(2, 4)
def train_step():
    with torch.autograd.profiler.record_function("forward"):
        loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def _by_name(t):
    x = {}
    for e in events(t, ph="X"):
        x.setdefault(e["name"], []).append(e)
    return x


@pytest.mark.parametrize("shapes", [True, False])
def test_record_ops(venv, trace_path, shapes):
    venv.run(MODEL + '''
with actrace.session(output=sys.argv[1]):
    assert actrace.torch.record_ops(shapes=%s)
    for i in range(3):
        train_step()
        actrace.step()
    actrace.torch.stop_ops()
    model(x)  # after stop_ops: not recorded
''' % shapes, args=[trace_path])
    t = venv.check_trace(trace_path)
    x = _by_name(t)
    for op in ("aten::linear", "aten::relu", "aten::addmm", "aten::mse_loss"):
        assert op in x and all(e["cat"] == "cpu_op" for e in x[op]), op
    assert len(x["aten::linear"]) == 2 * 3
    assert len(x["aten::relu"]) == 3
    # record_function regions are user annotations around their ops.
    fwd = x["forward"]
    assert len(fwd) == 3 and all(e["cat"] == "user_annotation" for e in fwd)
    for lin in x["aten::linear"]:
        assert any(inside(lin, f) for f in fwd)
        # addmm runs inside linear.
    for mm in x["aten::addmm"]:
        if any(inside(mm, f) for f in fwd):
            assert any(inside(mm, lin) for lin in x["aten::linear"])
    # Steps.
    for i in range(3):
        st, = x["ProfilerStep#%d" % i]
        assert sum(inside(f, st) for f in fwd) == 1
    # Kineto's args: External id unique per op, Sequence number on forward ops.
    ops = [e for e in events(t, ph="X", cat="cpu_op")]
    ids = [e["args"]["External id"] for e in ops]
    assert len(set(ids)) == len(ids) and all(isinstance(i, int) and i > 0 for i in ids)
    assert all(isinstance(e["args"]["Sequence number"], int) for e in x["aten::linear"])
    if shapes:
        # Kineto's array form: lists once the trace is parsed (json.load).
        dims = {json.dumps(e["args"]["Input Dims"]) for e in x["aten::linear"]}
        assert dims == {"[[2, 8], [16, 8], [16]]", "[[2, 16], [4, 16], [4]]"}
        assert all(e["args"]["Input type"] == ["float", "float", "float"] for e in x["aten::linear"])
        # Non-tensor inputs: [] and their kind's name, as Kineto; None: "".
        for e in ops:
            d, ty = e["args"].get("Input Dims"), e["args"].get("Input type")
            if d is not None:
                assert isinstance(d, list) and all(isinstance(v, list) for v in d), e
                assert isinstance(ty, list) and len(ty) == len(d), e
                assert all(isinstance(v, str) for v in ty), e
    else:
        assert not any("Input Dims" in e["args"] for e in ops)
    # Backward ops are recorded too (autograd's engine thread, or this one).
    assert any("Backward" in n for n in x), sorted(x)


def test_short_ops_counted_not_recorded(venv, tmp_path):
    """Ops under 1 us (aten::resolve_conj, aten::as_strided, ...) are
    counted, not recorded, by default; min_ns=0 records them;
    record_function regions are always recorded; a bad value is named."""
    r = venv.run(MODEL + '''
import json
out = {}
for min_ns in (None, 0):
    path = sys.argv[1] + "/%s.json" % min_ns
    with actrace.session(output=path):
        before = actrace.torch.ops_short()
        assert actrace.torch.record_ops(min_ns=min_ns)
        for i in range(3):
            train_step()
        actrace.torch.stop_ops()
    t = json.load(open(path))
    ops = [e for e in t["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    out[str(min_ns)] = {"short": actrace.torch.ops_short() - before,
                        "ops": len(ops), "min_dur": min(e["dur"] for e in ops),
                        "forward": sum(e.get("name") == "forward" for e in t["traceEvents"])}
for bad in (-1, 1.5, "1000", True):
    try:
        actrace.torch.record_ops(min_ns=bad)
        out["bad"] = "accepted %r" % (bad,)
    except ValueError as e:
        assert "min_ns" in str(e), e
print(json.dumps(out))
''', args=[str(tmp_path)])
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert "bad" not in out, out
    dflt, every = out["None"], out["0"]
    assert dflt["short"] > 0 and every["short"] == 0, out
    assert dflt["min_dur"] >= 0.999, out
    assert dflt["ops"] + dflt["short"] >= every["ops"] - every["ops"] // 10, out
    assert dflt["forward"] == every["forward"] == 3, out
    # The variable, for record's hook: named when it is not a number.
    env = venv.env(ACTRACE_PYTHON_OPS_MIN_NS="12x")
    r = venv.run("import actrace, actrace.torch\ntry:\n    actrace.torch.record_ops()\n"
                 "except ValueError as e:\n    print(e)\n", env=env)
    assert "ACTRACE_PYTHON_OPS_MIN_NS = '12x'" in r.stdout, r.stdout + r.stderr


def test_torch_profiler_active_nothing_twice(venv, trace_path, tmp_path):
    kineto = tmp_path / "kineto.json"
    r = venv.run(MODEL + '''
from torch.profiler import profile, ProfilerActivity
with actrace.session(output=sys.argv[1]):
    actrace.torch.record_ops()
    model(x)                                     # recorded by actrace
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with torch.autograd.profiler.record_function("under-torch-profiler"):
            model(x)                             # torch.profiler's alone
    prof.export_chrome_trace(sys.argv[2])
    model(x)                                     # actrace again
print("paused", actrace.torch.ops_paused())
''', args=[trace_path, str(kineto)])
    assert "torch.profiler is active: record_ops() pauses" in r.stderr
    assert int(r.stdout.split("paused")[1]) > 0
    t = venv.check_trace(trace_path)
    x = _by_name(t)
    assert len(x["aten::linear"]) == 2 * 2  # the two calls outside the profiler
    assert "under-torch-profiler" not in x
    k = json.load(open(kineto))
    assert sum(e.get("name") == "aten::linear" for e in k["traceEvents"]) == 2


def test_record_ops_under_record(venv, trace_path, tmp_path):
    """Under `actrace record`, the shim binds the preloaded libactrace:
    the ops land in the recorder's session, one process."""
    import subprocess
    script = tmp_path / "prog.py"
    script.write_text(MODEL + "actrace.torch.record_ops()\ntrain_step()\nactrace.step()\n")
    r = subprocess.run([venv.actrace, "record", "-o", trace_path, "--", venv.python, str(script)],
                       env=venv.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, r.stderr
    t = venv.check_trace(trace_path)
    x = _by_name(t)
    assert len(x["aten::linear"]) == 2 and "ProfilerStep#0" in x
    assert len({e["pid"] for e in events(t, ph="X")}) == 1


def test_missing_compiler_is_named(venv, tmp_path):
    r = venv.run('''
        import actrace.torch
        try:
            actrace.torch.record_ops()
        except actrace.torch.BuildError as e:
            print("BuildError:", e)
    ''', env=venv.env(CXX="/nonexistent/c++", ACTRACE_CACHE_DIR=tmp_path / "cache",
                      ACTRACE_TORCH_PREBUILT=0))
    assert "BuildError: actrace.torch: no C++ compiler" in r.stdout, r.stdout + r.stderr


def test_shim_in_a_folder_others_can_write_is_refused(venv, tmp_path):
    cache = tmp_path / "shared-cache"
    r = venv.run('''
        import os, actrace.torch
        src, out = actrace.torch.shim_path()
        actrace.torch._build(src, out)
        os.chmod(os.path.dirname(out), 0o777)
        try:
            actrace.torch.record_ops()
        except actrace.torch.BuildError as e:
            print("BuildError:", e)
    ''', env=venv.env(ACTRACE_CACHE_DIR=cache, ACTRACE_TORCH_PREBUILT=0))
    assert "BuildError: actrace.torch: refusing" in r.stdout and "writable by others" in r.stdout, \
        r.stdout + r.stderr


def test_op_correlation_is_pushed(venv, trace_path):
    """While an op runs its correlation id is the thread's current one, so
    what is recorded inside it (device work from a backend, here a span from
    a custom op's Python body) carries the op's "External id"."""
    venv.run('''
        import sys, torch, actrace, actrace.torch
        @torch.library.custom_op("actrace_test::probe", mutates_args=())
        def probe(x: torch.Tensor) -> torch.Tensor:
            with actrace.annotate("inside-op"):
                pass
            return x.clone()
        with actrace.session(output=sys.argv[1]):
            actrace.torch.record_ops()
            torch.ops.actrace_test.probe(torch.ones(2))
            with actrace.annotate("outside-op"):
                pass
    ''', args=[trace_path])
    t = venv.check_trace(trace_path)
    op, = events(t, ph="X", name="actrace_test::probe")
    inner, = events(t, ph="X", name="inside-op")
    outer, = events(t, ph="X", name="outside-op")
    assert inside(inner, op)
    assert inner["args"]["External id"] == op["args"]["External id"]
    assert "External id" not in outer.get("args", {})


def test_long_shapes_are_cut(venv, trace_path):
    """An op whose inputs' dims take more words than the shape cache keys
    (5 tensors of rank 60: 305 words, built on the heap, not cached): the
    dims text is cut with "...]" at its 512-byte limit, the types are all
    there, on every call."""
    venv.run('''
        import sys, torch, actrace, actrace.torch
        @torch.library.custom_op("actrace_test::many", mutates_args=())
        def many(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor,
                 e: torch.Tensor) -> torch.Tensor:
            return a.clone()
        x = torch.ones([1] * 60)
        with actrace.session(output=sys.argv[1]):
            actrace.torch.record_ops(shapes=True)
            for i in range(3):
                torch.ops.actrace_test.many(x, x, x, x, x)
    ''', args=[trace_path])
    t = venv.check_trace(trace_path)
    ops = events(t, ph="X", name="actrace_test::many")
    assert len(ops) == 3
    for e in ops:
        # Cut: no JSON, so a string; the types fit: an array.
        dims = e["args"]["Input Dims"]
        assert dims.startswith("[[" + ", ".join(["1"] * 60) + "], [1, 1")
        assert dims.endswith(", ...]") and len(dims) == 508, dims
        assert e["args"]["Input type"] == ["float"] * 5
    # The op's body ran inside it, with shapes of its own.
    clones = events(t, ph="X", name="aten::clone")
    assert len(clones) == 3 and all(e["args"]["Input Dims"][0] == [1] * 60 for e in clones)


def test_record_ops_shapes_hta(venv, tmp_path):
    """HolisticTraceAnalysis reads record_ops(shapes=True)'s "Input Dims"
    and "Input type" as lists (value type Object in its parser config),
    as it reads Kineto's: they are JSON arrays in the trace, not strings."""
    import shutil
    d = tmp_path / "ranks"
    d.mkdir()
    path = str(d / "rank-0.json")
    venv.run(MODEL + '''
with actrace.session(output=sys.argv[1]):
    actrace.torch.record_ops(shapes=True)
    for i in range(3):
        train_step()
        actrace.step()
''', args=[path])
    venv.check_trace(path)
    shutil.copy(path, os.path.join(TRACES, "py_record_ops_shapes_hta.json"))
    r = venv.run(r'''
import json, sys
from hta.configs.parser_config import ParserConfig
from hta.trace_analysis import TraceAnalysis
cfg = ParserConfig.get_default_cfg()
cfg.set_args(ParserConfig.get_minimum_args() + ParserConfig.ARGS_INPUT_SHAPE)
ParserConfig.set_default_cfg(cfg)
a = TraceAnalysis(trace_dir=sys.argv[1])
df = a.t.get_trace(0)
sym = a.t.symbol_table.get_sym_table()
lin = df[df["name"].map(lambda i: sym[i]) == "aten::linear"]
dims = [json.dumps(v) for v in lin["input_dims"]]
types = [json.dumps(v) for v in lin["input_type"]]
assert all(isinstance(v, list) for v in lin["input_dims"]), lin["input_dims"].tolist()
print("DIMS", sorted(set(dims)))
print("TYPES", sorted(set(types)))
print("STEPS", sorted(set(df["iteration"]) - {-1}))
''', args=[str(d)])
    lines = dict(l.split(" ", 1) for l in r.stdout.splitlines() if l[:5] in ("DIMS ", "TYPES", "STEPS"))
    assert lines["DIMS"] == str(sorted(["[[2, 8], [16, 8], [16]]", "[[2, 16], [4, 16], [4]]"]))
    assert lines["TYPES"] == str(['["float", "float", "float"]'])
    assert lines["STEPS"] == "[0, 1]"  # HTA leaves the last step out


def _properly_nested(spans):
    """Spans of one thread never overlap partly (each pair nested or apart):
    every start met its own end."""
    bad = []
    by_tid = {}
    for e in spans:
        by_tid.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in by_tid.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in evs:
            end = e["ts"] + e["dur"]
            while stack and stack[-1] <= e["ts"] + 1e-3:
                stack.pop()
            if stack and end > stack[-1] + 1e-3:
                bad.append(e)
            stack.append(end)
    return bad


def test_frames_with_torchscript_fork_and_threads(venv, trace_path):
    """Aten ops keep their state on a per-thread stack of frames: with
    TorchScript functions (the interpreter can resume them elsewhere),
    torch.jit.fork, record_function regions and ops on other threads, every op is one span that nests
    properly on its thread, and ops after them are still recorded."""
    r = venv.run(MODEL + '''
import threading
@torch.jit.script
def inner(a):
    return torch.relu(a) + 1
@torch.jit.script
def outer(a):
    fut = torch.jit.fork(inner, a)
    return torch.jit.wait(fut) * 2
with actrace.session(output=sys.argv[1]):
    actrace.torch.record_ops()
    for i in range(5):
        outer(x)
    with torch.autograd.profiler.record_function("around"):
        torch.relu(x)
        torch.relu(x)
    th = [threading.Thread(target=train_step) for _ in range(2)]
    [t.start() for t in th]
    [t.join() for t in th]
    model(x)
    print("MOVED", actrace.torch.ops_moved())
''', args=[trace_path])
    t = venv.check_trace(trace_path)
    x = _by_name(t)
    ops = events(t, ph="X", cat="cpu_op")
    assert not _properly_nested(ops), _properly_nested(ops)[:3]
    assert len(x["aten::linear"]) == 2 * 2 + 2  # two threads' steps, then the last call
    assert len(x["aten::relu"]) >= 5 + 2 + 2 + 1
    assert len(x["around"]) == 1
    # TorchScript functions resumed on another thread are left out, counted.
    moved = int(r.stdout.split("MOVED")[1])
    assert moved + len(x.get("outer", [])) == 5, (moved, len(x.get("outer", [])))
