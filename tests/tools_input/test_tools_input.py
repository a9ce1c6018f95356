#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The trace tools under hostile and real input (issue 35, part A):
record's merge, merge, convert and check.

usage: test_tools_input.py ACTRACE CASE

Each case is one defect seen on 51a5f8f/75803da; it fails there and
passes after the fix (the case names what it covers).
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

ACTRACE, CASE = os.path.abspath(sys.argv[1]), sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def run(args, env=None, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([ACTRACE] + args, capture_output=True, env=e, cwd=cwd, timeout=300)


def out(r):
    return (r.stdout + r.stderr).decode("utf-8", "replace")


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


def load_strict(path):
    """The trace as Python's json reads it, its bytes decoded as strict UTF-8."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    return json.loads(data.decode("utf-8"))


def trace(events, base=1_700_000_000_000_000_000, **top):
    d = {"schemaVersion": 1, "displayTimeUnit": "ms", "baseTimeNanoseconds": base,
         "traceEvents": events}
    d.update(top)
    return d


def rank(r, pid, corr_extra=None, base=1_700_000_000_000_000_000):
    ev = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "rank %d" % r}}]
    for c in (1, 2, 3):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "launch", "pid": pid, "tid": pid,
                   "ts": 10 * c, "dur": 1, "args": {"correlation": c, "External id": c}})
    if corr_extra is not None:
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "late", "pid": pid, "tid": pid,
                   "ts": 50, "dur": 1, "args": corr_extra})
    return trace(ev, base, distributedInfo={"rank": r, "world_size": 2})


# ---- item 1: record's merge and a process name that is not UTF-8 ----------

def case_record_non_utf8_name(tmp):
    """A real program whose executable is named caf\\xe9, which records
    nothing, run by a shell (record's own child starts its session at
    once; a grandchild starts lazily and, recording nothing, is one of the
    light log's processes, which record's merge writes itself). The merged
    trace is valid JSON, check passes it, and the name is repaired as the
    library's writer does (U+FFFD for the byte)."""
    exe = os.path.join(tmp.encode(), b"caf\xe9")
    shutil.copy("/bin/true", exe)
    os.chmod(exe, 0o755)
    path = os.path.join(tmp, "rec.json")
    r = subprocess.run([ACTRACE.encode(), b"record", b"--force", b"-o", path.encode(), b"--",
                        b"/bin/sh", b"-c", b'"$0"; exit 0', exe],
                       capture_output=True, timeout=300)
    check(r.returncode == 0, "record exit %d: %s" % (r.returncode, out(r)))
    try:
        doc = load_strict(path)
    except (ValueError, OSError) as e:
        check(False, "the merged trace is not valid UTF-8 JSON: %s" % e)
        return
    names = [e["args"]["name"] for e in doc["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"]
    check(any("caf\ufffd" in n for n in names), "the name repaired: %r" % names)
    r = run(["check", path])
    check(r.returncode == 0, "check of the merged trace: %s" % out(r)[-800:])
    r = run(["convert", path, os.path.join(tmp, "rec.pftrace")])
    check(r.returncode == 0, "convert of the merged trace: %s" % out(r)[-800:])


CASES = {
    "record_non_utf8_name": case_record_non_utf8_name,
}

tmp = tempfile.mkdtemp(prefix="actrace-input-")
try:
    CASES[CASE](tmp)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
if failures:
    print("%d failure(s)" % len(failures), file=sys.stderr)
    sys.exit(1)
print("ok")
