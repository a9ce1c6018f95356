# SPDX-License-Identifier: MIT
"""Fixtures for the Python package's tests (run by ctest: tests/python).

Once per test session the package is built as a wheel (`pip wheel .`, with
a persistent build folder so a rerun is incremental) and installed into a
fresh venv. That venv reuses torch and the other heavy packages of the
cached venv the tests run from (a .pth file names its site-packages), so
nothing is downloaded. Every test then runs scripts in subprocesses with
the fresh venv's python, i.e. against the installed wheel, never against
the source tree.

Environment: ACT_PYTEST_WORK (scratch folder, default build/pytest),
ACT_TRACE_DIR (where traces go, so CI's validators check them; default
build/traces).
"""
import json
import os
import subprocess
import sys
import sysconfig
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORK = os.environ.get("ACT_PYTEST_WORK") or os.path.join(ROOT, "build", "pytest")
TRACES = os.environ.get("ACT_TRACE_DIR") or os.path.join(ROOT, "build", "traces")


class Venv:
    def __init__(self, path):
        self.path = path
        self.python = os.path.join(path, "bin", "python")
        self.actrace = os.path.join(path, "bin", "actrace")
        self.site = subprocess.check_output(
            [self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            text=True).strip()

    def env(self, **extra):
        e = dict(os.environ)
        for k in ("ACTRACE_DISABLE", "ACTRACE_CONFIG", "ACTRACE_PLUGINS", "ACTRACE_PLUGIN_DIR",
                  "LD_PRELOAD", "PYTHONPATH"):
            e.pop(k, None)
        e["ACTRACE_CACHE_DIR"] = os.path.join(WORK, "torch-cache")
        e.update({k: str(v) for k, v in extra.items()})
        return e

    def run(self, script, *, cwd=None, env=None, check=True, args=(), prefix=()):
        """Run @p script (Python source) with the venv's python; returns the
        CompletedProcess (text output)."""
        path = os.path.join(cwd or WORK, "script_%d.py" % os.getpid())
        with open(path, "w") as f:
            f.write(textwrap.dedent(script))
        r = subprocess.run(list(prefix) + [self.python, path] + list(args), cwd=cwd or WORK,
                           env=env or self.env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=600)
        if check and r.returncode != 0:
            raise AssertionError("script failed (%d)\nstdout:\n%s\nstderr:\n%s"
                                 % (r.returncode, r.stdout, r.stderr))
        return r

    def check_trace(self, path):
        r = subprocess.run([self.actrace, "check", path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        assert r.returncode == 0, r.stdout
        with open(path) as f:
            return json.load(f)


def _sh(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stdout[-6000:]))
    return r.stdout


@pytest.fixture(scope="session")
def venv():
    os.makedirs(WORK, exist_ok=True)
    os.makedirs(TRACES, exist_ok=True)
    wheels = os.path.join(WORK, "wheelhouse")
    if os.path.isdir(wheels):
        for f in os.listdir(wheels):
            os.unlink(os.path.join(wheels, f))
    # The wheel, once per session; the build folder persists (incremental).
    _sh([sys.executable, "-m", "pip", "wheel", "-q", ROOT, "--no-build-isolation", "--no-deps",
         "-w", wheels, "-C", "build-dir=" + os.path.join(WORK, "wheel-build")])
    whl = [f for f in os.listdir(wheels) if f.endswith(".whl")]
    assert len(whl) == 1, whl
    # A fresh venv that borrows the cached venv's packages (torch, pytest).
    path = os.path.join(WORK, "venv")
    if os.path.exists(path):
        import shutil
        shutil.rmtree(path)
    _sh([sys.executable, "-m", "venv", "--without-pip", path])
    v = Venv(path)
    with open(os.path.join(v.site, "_actrace_test_cached.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    _sh([v.python, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
         os.path.join(wheels, whl[0])])
    return v


@pytest.fixture
def trace_path(request):
    """A path in the validated trace folder, named after the test."""
    name = "py_" + request.node.name.replace("[", "_").replace("]", "") + ".json"
    p = os.path.join(TRACES, name)
    if os.path.exists(p):
        os.unlink(p)
    return p


def events(trace, ph=None, cat=None, name=None):
    out = []
    for e in trace["traceEvents"]:
        if ph and e.get("ph") != ph:
            continue
        if cat and e.get("cat") != cat:
            continue
        if name and e.get("name") != name:
            continue
        out.append(e)
    return out


def inside(inner, outer):
    """inner's interval lies within outer's, on the same thread."""
    return (inner["pid"] == outer["pid"] and inner["tid"] == outer["tid"] and
            inner["ts"] >= outer["ts"] and
            inner["ts"] + inner.get("dur", 0) <= outer["ts"] + outer["dur"] + 1e-3)


def thread_names(trace):
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
            if e.get("ph") == "M" and e.get("name") == "thread_name"}
