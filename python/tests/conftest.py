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
import textwrap

import pytest

import wheelvenv

ROOT = wheelvenv.ROOT
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


@pytest.fixture(scope="session")
def venv():
    os.makedirs(TRACES, exist_ok=True)
    return Venv(wheelvenv.make(WORK))


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
