# SPDX-License-Identifier: MIT
"""docs/python.md's training-loop example runs as written, and its trace
has what the text says; it is copied to the validated trace folder."""
import os
import re
import shutil

from conftest import ROOT, TRACES, events, inside


def _example():
    text = open(os.path.join(ROOT, "docs", "python.md")).read()
    m = re.search(r"<!-- example: train[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert m, "docs/python.md lost its example block"
    return m.group(1)


def test_doc_example(venv, tmp_path):
    venv.run(_example(), cwd=str(tmp_path))
    path = str(tmp_path / "train.json")
    t = venv.check_trace(path)
    shutil.copy(path, os.path.join(TRACES, "py_doc_example.json"))
    x = {}
    for e in events(t, ph="X"):
        x.setdefault(e["name"], []).append(e)
    steps = [x["ProfilerStep#%d" % i][0] for i in range(5)]
    for name in ("load_batch", "forward", "backward"):
        assert len(x[name]) == 5
        assert all(any(inside(e, s) for s in steps) for e in x[name]), name
    for op in ("aten::linear", "aten::addmm", "aten::relu", "aten::mse_loss"):
        assert op in x, op
    assert all(any(inside(op, f) for f in x["forward"]) for op in x["aten::relu"])
    assert "AddmmBackward0" in x
    assert [e["args"]["step"] for e in x["forward"]] == [0, 1, 2, 3, 4]
    assert len(events(t, ph="C", name="training")) == 5


def test_pytorch_doc_example(venv, tmp_path):
    """docs/pytorch.md's user example runs as written and its trace has the
    example plugin's device, streams, kernels, flows and counter track."""
    text = open(os.path.join(ROOT, "docs", "pytorch.md")).read()
    m = re.search(r"<!-- example: pytorch[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert m, "docs/pytorch.md lost its example block"
    r = venv.run(m.group(1), cwd=str(tmp_path))
    assert "Self CPU time total" in r.stdout  # key_averages works with the bridge
    # EXAMPLE_LAUNCHES is the example plugin's own key: not "unknown".
    assert "unknown key" not in r.stderr, r.stderr
    import json
    with open(str(tmp_path / "torch_trace.json")) as f:
        t = json.load(f)
    dev = [e for e in events(t, ph="X") if isinstance(e["pid"], int) and e["pid"] >= 0x40000000]
    # Launches that end after the profile stops (a loaded machine) are
    # outside its window: counted, not drawn.
    kernels = [e for e in dev if e["cat"] == "kernel"]
    assert 1 <= len(kernels) <= 4 and 4 - len(kernels) <= t["actrace"]["outside_window"]
    names = {e["pid"]: e["args"]["name"] for e in events(t, ph="M", name="process_name")}
    assert names[dev[0]["pid"]].startswith("Example NPU 0")
    flows = [e for e in dev if e["cat"] in ("kernel", "gpu_memcpy")]
    assert len(events(t, ph="s")) == len(events(t, ph="f")) == len(flows)
    assert events(t, ph="C", name="utilization")
