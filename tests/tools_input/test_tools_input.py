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


# ---- item 2: merge trusts the last input's ids -----------------------------

def case_merge_last_ids(tmp):
    a, b, o = (os.path.join(tmp, n) for n in ("a.json", "b.json", "o.json"))
    write(a, rank(0, 10))
    write(b, rank(1, 20, {"correlation": 2**63 - 1}))
    r = run(["merge", "-o", o, a, b])
    check(r.returncode == 1, "last file's correlation 2^63-1: exit %d: %s" % (r.returncode, out(r)))
    check(b in out(r) and "correlation" in out(r) and "2^53" in out(r),
          "the error names the file and the field: %s" % out(r))
    check(not os.path.exists(o), "nothing written")
    # The same for the other renumbered ids of the last file.
    for key in ("External id", "stream"):
        write(b, rank(1, 20, {key: 2**53}))
        r = run(["merge", "--force", "-o", o, a, b])
        check(r.returncode == 1 and key in out(r) and b in out(r),
              "last file's %s 2^53: exit %d: %s" % (key, r.returncode, out(r)))
    fl = rank(1, 20)
    fl["traceEvents"] += [{"ph": "s", "id": 2**62, "pid": 20, "tid": 20, "ts": 10, "cat": "c", "name": "f"},
                          {"ph": "f", "id": 2**62, "pid": 20, "tid": 20, "ts": 11, "cat": "c", "name": "f", "bp": "e"}]
    write(b, fl)
    r = run(["merge", "--force", "-o", o, a, b])
    check(r.returncode == 1 and "flow" in out(r) and b in out(r),
          "last file's flow id 2^62: exit %d: %s" % (r.returncode, out(r)))
    # Ids within 2^53 after the offset still merge, renumbered exactly.
    write(b, rank(1, 20, {"correlation": 2**53 - 10}))
    r = run(["merge", "--force", "-o", o, a, b])
    check(r.returncode == 0, "2^53-10 + 3 fits: %s" % out(r))
    if r.returncode == 0:
        late = [e for e in load_strict(o)["traceEvents"] if e.get("name") == "late"]
        check(late and late[0]["args"]["correlation"] == 2**53 - 7, "renumbered: %s" % late)


# ---- item 3: merge of base times far apart ---------------------------------

def case_merge_far_bases(tmp):
    a, b, o = (os.path.join(tmp, n) for n in ("a.json", "b.json", "o.json"))
    write(a, rank(0, 10, base=-(2**63) + 1000))
    write(b, rank(1, 20, base=2**63 - 1000))
    r = run(["merge", "-o", o, a, b])
    check(r.returncode == 1, "bases 2^64 apart: exit %d: %s" % (r.returncode, out(r)))
    check(a in out(r) and b in out(r) and "baseTimeNanoseconds" in out(r),
          "names both files: %s" % out(r))
    check("runtime error" not in out(r), "no undefined behaviour: %s" % out(r))
    check(not os.path.exists(o), "nothing written")
    # A move that fits, but an event's time after it that does not.
    write(a, rank(0, 10, base=0))
    ev = rank(1, 20, base=2**63 - 10**15)
    ev["traceEvents"][1]["ts"] = 9_000_000_000_000  # us: 9e15 ns, past 2^63 after the move
    write(b, ev)
    r = run(["merge", "--force", "-o", o, a, b])
    check(r.returncode == 1 and "baseTimeNanoseconds" in out(r),
          "event time past int64 after the move: exit %d: %s" % (r.returncode, out(r)))
    # Far apart but representable: merged, each event at its absolute time.
    write(a, rank(0, 10, base=10**18))
    write(b, rank(1, 20, base=2 * 10**18))
    r = run(["merge", "--force", "-o", o, a, b])
    check(r.returncode == 0, "10^18 apart: %s" % out(r))
    if r.returncode == 0:
        ts = [e["ts"] for e in load_strict(o)["traceEvents"] if e.get("pid") == 20 and "ts" in e]
        check(ts and ts[0] == 10**15 + 10, "moved by 10^15 us: %s" % ts[:3])


# ---- item 4: convert of a flow start without its end ----------------------

def case_convert_one_ended_flow(tmp):
    src = os.path.join(tmp, "cut.json")
    ev = [{"ph": "X", "cat": "c", "name": "launch", "pid": 1, "tid": 1, "ts": 10, "dur": 2},
          {"ph": "s", "id": 5, "pid": 1, "tid": 1, "ts": 10, "cat": "ac2g", "name": "ac2g"},
          # and a whole flow, which stays
          {"ph": "X", "cat": "c", "name": "launch", "pid": 1, "tid": 1, "ts": 30, "dur": 2},
          {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 30, "cat": "ac2g", "name": "ac2g"},
          {"ph": "X", "cat": "c", "name": "kernel", "pid": 1, "tid": 3, "ts": 33, "dur": 2},
          {"ph": "f", "id": 7, "pid": 1, "tid": 3, "ts": 33, "cat": "ac2g", "name": "ac2g", "bp": "e"}]
    write(src, trace(ev))
    r = run(["check", src])
    check(r.returncode == 0, "check accepts the JSON: %s" % out(r))
    pf = os.path.join(tmp, "cut.pftrace")
    r = run(["convert", src, pf])
    check(r.returncode == 0, "convert: %s" % out(r))
    check("1 one-ended flows left out" in out(r), "convert says what it left out: %s" % out(r))
    r = run(["check", pf])
    check(r.returncode == 0, "check accepts the converted trace: %s" % out(r))
    with open(pf, "rb") as f:
        data = f.read()
    # flow id 7 as a fixed64 (field 47 or 48): the whole flow is kept
    check((7).to_bytes(8, "little") in data, "the whole flow kept")


# ---- item 5: check and convert on .pftrace --------------------------------

def case_convert_base_overflow(tmp):
    src = os.path.join(tmp, "late.json")
    write(src, trace([{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 10, "dur": 2}],
                     base=2**63 - 5000))
    pf = os.path.join(tmp, "late.pftrace")
    r = run(["convert", src, pf])
    check(r.returncode == 2, "base near INT64_MAX: exit %d: %s" % (r.returncode, out(r)))
    check("baseTimeNanoseconds" in out(r) and src in out(r), "names the file and field: %s" % out(r))
    check("runtime error" not in out(r), "no undefined behaviour: %s" % out(r))
    check(not os.path.exists(pf), "nothing written")
    # ts + dur past int64 in one event: skipped as malformed, no overflow.
    write(src, trace([{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 9e15, "dur": 9e15},
                      {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 1, "dur": 1}], base=0))
    r = run(["convert", src, pf])
    check(r.returncode == 0 and "1 malformed events skipped" in out(r) and
          "runtime error" not in out(r), "ts + dur overflow: %s" % out(r))
    r = run(["check", pf])
    check(r.returncode == 0, "check passes it: %s" % out(r))


# ---- item 6: options anywhere, -- ending them ------------------------------

def case_options_anywhere(tmp):
    a, b, o = (os.path.join(tmp, n) for n in ("a.json", "b.json", "o.json"))
    write(a, rank(0, 10))
    write(b, rank(1, 20))
    r = run(["merge", a, b, "-o", o])
    check(r.returncode == 0 and os.path.exists(o), "merge A B -o OUT: %s" % out(r))
    r = run(["merge", a, "--force", b, "--output=" + o])
    check(r.returncode == 0, "merge A --force B --output=OUT: %s" % out(r))
    r = run(["merge", a, "-o" + o, b])
    check(r.returncode == 2 and "--force" in out(r), "merge A -oOUT B (OUT exists): %s" % out(r))
    r = run(["merge", a, "-o" + o, b, "--force"])
    check(r.returncode == 0, "merge A -oOUT B --force: %s" % out(r))
    # "--" ends the options: a file named like one.
    dash = os.path.join(tmp, "-o")
    shutil.copy(b, dash)
    r = run(["merge", "--force", "-o", o, "--", a, "-o"], cwd=tmp)
    check(r.returncode == 0 and "2 traces" in out(r), "merge -- A -o (a file): %s" % out(r))
    r = run(["merge", a, b, "-o"])
    check(r.returncode == 2 and "needs a value" in out(r), "-o without a value: %s" % out(r))
    r = run(["merge", a, "--bogus", b])
    check(r.returncode == 2 and "--bogus" in out(r), "unknown option after operands: %s" % out(r))
    # convert
    pf = os.path.join(tmp, "a.pftrace")
    r = run(["convert", "--", a, pf])
    check(r.returncode == 0, "convert -- IN OUT: %s" % out(r))
    r = run(["convert", a, "--help"])
    check(r.returncode == 0 and "usage: actrace convert" in out(r), "convert IN --help: %s" % out(r))
    shutil.copy(a, os.path.join(tmp, "-x.json"))
    r = run(["convert", "--", "-x.json", "x.pftrace"], cwd=tmp)
    check(r.returncode == 0, "convert -- -x.json OUT: %s" % out(r))
    # check, summary, config check: flags after the file, -- before one.
    r = run(["check", a, "--quiet"])
    check(r.returncode == 0, "check FILE --quiet: %s" % out(r))
    r = run(["check", "--", "-x.json"], cwd=tmp)
    check(r.returncode == 0, "check -- -x.json: %s" % out(r))
    r = run(["check", "--strict", "--", "-x.json"], cwd=tmp)
    check(r.returncode in (0, 1) and "unknown option" not in out(r), "check --strict -- FILE: %s" % out(r))
    r = run(["summary", a, "--json", "--top", "2"])
    check(r.returncode == 0 and out(r).lstrip().startswith("{"), "summary FILE --json --top 2: %s" % out(r)[:300])
    conf = os.path.join(tmp, "c.conf")
    with open(conf, "w") as f:
        f.write("ACTIVITIES_DURATION_MSECS=100\n")
    r = run(["config", "check", conf, "--strict"])
    check(r.returncode == 0, "config check FILE --strict: %s" % out(r))


CASES = {
    "record_non_utf8_name": case_record_non_utf8_name,
    "merge_last_ids": case_merge_last_ids,
    "merge_far_bases": case_merge_far_bases,
    "convert_one_ended_flow": case_convert_one_ended_flow,
    "convert_base_overflow": case_convert_base_overflow,
    "options_anywhere": case_options_anywhere,
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
