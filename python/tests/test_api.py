# SPDX-License-Identifier: MIT
"""The actrace module from an installed wheel: every API call, checked in
the written trace."""
import json
import os
import subprocess

import pytest

from conftest import events, inside, thread_names

API_SCRIPT = r'''
import sys, threading
import actrace
assert "torch" not in sys.modules, "import actrace pulled in torch"

@actrace.annotate()
def plain(x):
    return x + 1

@actrace.annotate("early", kind="ret")
def early(x):
    if x:
        return "early"
    return "late"

@actrace.annotate("boom")
def boom():
    raise KeyError("inside")

@actrace.annotate("gen")
def gen(n):
    for i in range(n):
        yield i
    return "done"

@actrace.annotate("rec")
def rec(k):
    return rec(k - 1) if k else 0

deep = actrace.annotate("deep")
def nest(k):
    if k:
        with deep:
            nest(k - 1)

class C:
    @actrace.annotate()
    def method(self, v):
        return v * 2

def worker():
    with actrace.annotate("in-worker"):
        pass
    threading.current_thread().name = "renamed-worker"
    actrace.instant("after-rename")

with actrace.session(output=sys.argv[1]) as s:
    with actrace.annotate("outer", i=7, big=2**63 + 5, f=0.25, flag=True, text="t\"x", obj=[1, 2],
                         dims=((2, 3), (3,)), d={"k": ["\u00e9", None, 1.5]}, nan=[float("nan")],
                         st={1}):
        assert plain(1) == 2
        with actrace.annotate("inner"):
            actrace.instant("mark", n=3)
    assert early(1) == "early" and early(0) == "late"
    try:
        boom()
    except KeyError:
        pass
    try:
        with actrace.annotate("with-raise"):
            raise ValueError("x")
    except ValueError:
        pass
    assert list(gen(3)) == [0, 1, 2]
    g = gen(5)
    next(g)
    g.close()
    assert C().method(4) == 8
    assert rec(5) == 0
    nest(6)
    reused = actrace.annotate("reused")
    with reused:
        with reused:
            pass
    actrace.counter("memory", "used", 1024.0, unit="bytes")
    actrace.counter("memory", "used", 2048)
    with actrace.correlation(4242):
        with actrace.annotate("correlated"):
            pass
    t = threading.Thread(target=worker, name="worker-7")
    t.start(); t.join()
    for i in range(3):
        with actrace.annotate("step-body"):
            pass
        assert actrace.step() == i
    assert s.state == "running"
print(s.path)
'''


def test_api_in_trace(venv, trace_path):
    r = venv.run(API_SCRIPT, args=[trace_path])
    assert r.stdout.strip() == trace_path
    t = venv.check_trace(trace_path)
    x = {}
    for e in events(t, ph="X"):
        x.setdefault(e["name"], []).append(e)

    outer, = x["outer"]
    assert outer["cat"] == "user_annotation"
    assert outer["args"] == {"i": 7, "big": 2**63 + 5, "f": 0.25, "flag": True,
                             "text": "t\"x", "obj": [1, 2],
                             # lists, tuples and dicts as JSON values; what
                             # has no JSON form (NaN, a set) as its str()
                             "dims": [[2, 3], [3]], "d": {"k": ["\u00e9", None, 1.5]},
                             "nan": "[nan]", "st": "{1}"}
    # The decorator's default name is the qualified name.
    plain, = x["plain"]
    inner, = x["inner"]
    assert inside(plain, outer) and inside(inner, outer)
    mark, = events(t, ph="i", name="mark")
    assert mark["args"] == {"n": 3}
    assert inner["ts"] <= mark["ts"] <= inner["ts"] + inner["dur"]
    # Early returns: both calls are spans, with the decorator's args.
    assert len(x["early"]) == 2 and all(e["args"] == {"kind": "ret"} for e in x["early"])
    # Exceptions end their spans.
    assert len(x["boom"]) == 1 and len(x["with-raise"]) == 1
    # Generators: a span per resumption (3 items + the final one; then one
    # for the closed generator's single resumption), never one left open.
    assert len(x["gen"]) == 4 + 1
    assert len(x["C.method"]) == 1
    # One object entered twice: two nested spans.
    a, b = sorted(x["reused"], key=lambda e: e["dur"])
    assert inside(a, b)
    # Recursion through the decorator: every level; one object entered six
    # deep: every level too (past its 4 inline slots the object grows),
    # nested.
    assert len(x["rec"]) == 6
    d = sorted(x["deep"], key=lambda e: e["ts"])
    assert len(d) == 6 and all(inside(d[i + 1], d[i]) for i in range(5))
    # Counters with their unit.
    c = events(t, ph="C", name="memory")
    assert [e["args"]["used"] for e in c] == [1024, 2048]
    assert {"track": "memory", "series": "used", "unit": "bytes"} in t["actraceStats"]["counters"]
    # Correlation: the span carries the id as Kineto's "External id".
    corr, = x["correlated"]
    assert corr["args"]["External id"] == 4242
    assert "External id" not in outer.get("args", {})
    # Thread names follow threading, renames included.
    names = thread_names(t)
    w, = x["in-worker"]
    assert names[(w["pid"], w["tid"])] == "renamed-worker"
    assert names[(outer["pid"], outer["tid"])] == "MainThread"
    after, = events(t, ph="i", name="after-rename")
    assert after["tid"] == w["tid"]
    # Steps: ProfilerStep#0..2 as user annotations, each around its body.
    bodies = sorted(x["step-body"], key=lambda e: e["ts"])
    for i in range(3):
        st, = x["ProfilerStep#%d" % i]
        assert st["cat"] == "user_annotation"
        assert inside(bodies[i], st)
    assert t["actraceStats"]["dropped"] == 0


def test_enter_exit_called_by_hand(venv, trace_path):
    """annotate's __enter__/__exit__ bind to the object itself (no bound
    method per span): explicit calls, calls through the class (as
    contextlib.ExitStack makes them) and misuse behave as methods would."""
    r = venv.run('''
        import contextlib, sys, actrace
        a = actrace.annotate("by-hand")
        with actrace.session(output=sys.argv[1]):
            assert a.__enter__() is a
            assert a.__exit__(None, None, None) is False
            actrace.annotate.__enter__(a)
            type(a).__exit__(a, None, None, None)
            with contextlib.ExitStack() as st:
                assert st.enter_context(actrace.annotate("stacked")).name == "stacked"
            for bad in (lambda: a(1), lambda: a(1, 2), lambda: actrace.annotate.__enter__(3),
                        lambda: actrace.annotate.__enter__(a, 1), lambda: a(x=1)):
                try:
                    bad()
                except TypeError as e:
                    print("TypeError", e)
                else:
                    print("no error")
        print(actrace.annotate.__enter__.__name__, actrace.annotate.__exit__.__name__)
    ''', args=[trace_path])
    assert "no error" not in r.stdout and r.stdout.count("TypeError") == 5, r.stdout
    assert "__enter__ __exit__" in r.stdout
    t = venv.check_trace(trace_path)
    hand = events(t, ph="X", name="by-hand")
    assert len(hand) == 2 and len(events(t, ph="X", name="stacked")) == 1


def test_import_needs_no_torch(venv):
    venv.run("import sys, actrace\nassert 'torch' not in sys.modules\n")


def test_config_applies_and_errors_name_the_line(venv, trace_path):
    r = venv.run('''
        import sys, actrace
        try:
            actrace.start(config="MAX_BUFFER_SIZE_MB = 4\\nACTIVITY_TYPES = no_such_type\\n")
        except ValueError as e:
            print("error:", e)
        with actrace.session(config={"ACTIVITY_TYPES": "cpu_op"}, output=sys.argv[1]):
            with actrace.annotate("dropped-by-config"):
                pass
            with actrace.annotate("kept", type="cpu_op"):
                pass
    ''', args=[trace_path])
    assert "error:" in r.stdout and "line 2" in r.stdout, r.stdout
    t = venv.check_trace(trace_path)
    assert [e["name"] for e in events(t, ph="X")] == ["kept"]
    assert t["actraceStats"]["dropped_by_reason"]["type_not_selected"] == 1


def test_bad_arguments_raise(venv):
    r = venv.run('''
        import actrace
        for call in (lambda: actrace.annotate(3), lambda: actrace.annotate("x", type="nope"),
                     lambda: actrace.correlation(0), lambda: actrace.annotate()(1),
                     lambda: actrace.session(config=3).__enter__()):
            try:
                call()
            except (TypeError, ValueError) as e:
                print(type(e).__name__, e)
            else:
                print("no error")
    ''')
    assert "no error" not in r.stdout, r.stdout
    assert "unknown activity type 'nope'" in r.stdout


def test_atexit_writes_a_started_session(venv, trace_path):
    venv.run('''
        import sys, actrace
        actrace.start(output=sys.argv[1])
        with actrace.annotate("before-exit"):
            pass
    ''', args=[trace_path])
    t = venv.check_trace(trace_path)
    assert [e["name"] for e in events(t, ph="X")] == ["before-exit"]


def test_disable_is_a_no_op(venv, tmp_path):
    out = tmp_path / "never.json"
    r = venv.run('''
        import sys, actrace
        assert actrace.disabled
        def f(): return 1
        assert actrace.annotate("x")(f) is f
        a, b = actrace.annotate("a", k=1), actrace.annotate(name="b", type="cpu_op")
        assert a is b
        with a:
            with actrace.correlation(5):
                actrace.instant("i", k=2)
                actrace.counter("t", "s", 1.0)
        assert actrace.step() is None
        with actrace.session(output=sys.argv[1]) as s:
            pass
        assert s.path is None and s.state == "disabled"
        actrace.start(output=sys.argv[1])
    ''', args=[str(out)], env=venv.env(ACTRACE_DISABLE=1))
    assert r.returncode == 0
    assert not out.exists()


def _libactrace_maps_script(out):
    return '''
        import sys, actrace
        print("state", actrace.start(output=%r))
        with actrace.annotate("module-span"):
            pass
        libs = set()
        for line in open("/proc/self/maps"):
            if "libactrace" in line:
                libs.add(line.split()[-1])
        print("libs", sorted(libs))
    ''' % out


def test_without_record_the_wheel_library_is_used(venv, tmp_path):
    r = venv.run(_libactrace_maps_script(str(tmp_path / "own.json")))
    libs = eval(r.stdout.split("libs", 1)[1])
    assert libs == [os.path.join(venv.site, "actrace", "lib", "libactrace.so.0")]
    assert "state running" in r.stdout


def test_record_one_library_one_session(venv, trace_path, tmp_path):
    # The program's own output= is ignored under record: the recorder writes.
    own = tmp_path / "own.json"
    script = tmp_path / "prog.py"
    script.write_text(__import__("textwrap").dedent(_libactrace_maps_script(str(own))))
    r = subprocess.run([venv.actrace, "record", "-o", trace_path, "--", venv.python, str(script)],
                       env=venv.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, r.stderr
    assert "state attached" in r.stdout
    libs = eval(r.stdout.split("libs", 1)[1])
    assert len(libs) == 1 and libs[0].startswith(venv.site), libs
    assert not own.exists()
    t = venv.check_trace(trace_path)
    span, = events(t, ph="X", name="module-span")
    procs = [e for e in t["traceEvents"] if e.get("ph") == "M" and e.get("name") == "process_name"
             and e["pid"] == span["pid"]]
    assert len(procs) == 1
    host_pids = {e["pid"] for e in t["traceEvents"] if e.get("ph") in ("X", "i")}
    assert host_pids == {span["pid"]}
    # The recorder's default plugins came from the wheel.
    paths = [p["path"] for p in t["actraceStats"]["plugins"]]
    assert paths and all(p.startswith(os.path.join(venv.site, "actrace", "lib")) for p in paths)


def test_record_with_disable_records_nothing_of_the_module(venv, tmp_path):
    # Not in the validated folder: a trace with no span at all is what this
    # checks, and the viewers' validators reject an empty timeline.
    trace_path = str(tmp_path / "disabled.json")
    script = tmp_path / "prog.py"
    script.write_text("import actrace\nwith actrace.annotate('hidden'):\n    pass\n")
    r = subprocess.run([venv.actrace, "record", "-o", trace_path, "--", venv.python, str(script)],
                       env=venv.env(ACTRACE_DISABLE=1), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, r.stderr
    t = venv.check_trace(trace_path)
    assert events(t, name="hidden") == []


def test_command_from_the_venv(venv):
    r = subprocess.run([venv.actrace, "types"], stdout=subprocess.PIPE, text=True)
    assert r.returncode == 0 and "user_annotation" in r.stdout
    r = subprocess.run([venv.python, "-m", "actrace", "types"], stdout=subprocess.PIPE, text=True)
    assert r.returncode == 0 and "cpu_op" in r.stdout
    # The program's exit status comes through record and the script.
    r = subprocess.run([venv.actrace, "record", "-o", "/dev/null", "--force", "--",
                        venv.python, "-c", "raise SystemExit(3)"], env=venv.env())
    assert r.returncode == 3


def test_report_from_the_venv(venv, tmp_path):
    """python -m actrace report (docs/report.md) runs the wheel's command:
    one page with Chart.js inlined, or the message naming the package."""
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 1,'
                     ' "tid": 1, "ts": 1, "dur": 2, "args": {"device": 0}}]}')
    out = str(tmp_path / "t.html")
    r = subprocess.run([venv.python, "-m", "actrace", "report", "-o", out, str(trace)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode == 2 and "libjs-chart.js" in r.stderr:
        pytest.skip("Chart.js is not installed (apt-get install libjs-chart.js)")
    assert r.returncode == 0, r.stderr
    page = open(out).read()
    assert "Chart.js" in page and '"name":"k"' in page and "default-src 'none'" in page
    r = subprocess.run([venv.python, "-m", "actrace", "report", "--chartjs",
                        str(tmp_path / "none.js"), str(trace)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 2 and "none.js" in r.stderr


def test_start_stop_write_by_hand(venv, trace_path, tmp_path):
    second = str(tmp_path / "again.json")
    r = venv.run('''
        import sys, actrace
        assert actrace.start() == "running"
        try:
            actrace.start()
        except RuntimeError as e:
            print("twice:", e)
        with actrace.annotate("by-hand"):
            pass
        actrace.stop()
        with actrace.annotate("after-stop"):
            pass
        assert actrace.write(sys.argv[1]) == sys.argv[1]
        assert actrace.write(sys.argv[2]) == sys.argv[2]   # written again, same data
        try:
            actrace.write("/nonexistent-dir/x.json")
        except OSError as e:
            print("bad path:", e)
    ''', args=[trace_path, second])
    assert "twice: actrace: a session is already running" in r.stdout
    assert "bad path:" in r.stdout and "/nonexistent-dir/x.json" in r.stdout, r.stdout
    for p in (trace_path, second):
        t = venv.check_trace(p)
        assert [e["name"] for e in events(t, ph="X")] == ["by-hand"]
