#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`actrace merge` and record's merged and per-process traces (issue 19).

usage: test_merge.py ACTRACE DEMO EXAMPLE_PLUGIN CASE

Synthetic rank traces are written here with colliding pids, correlation,
flow and stream ids, different wall-clock base times and hosts; the cases
check what the merged trace must keep apart and what it must keep.
"""
import gzip
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

ACTRACE, DEMO, EXAMPLE, CASE = sys.argv[1:5]
DEV = 0x40000000
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def rank_trace(rank, base_ns, pid, host, trace_id="req-1", ncorr=3, stream=7):
    """A rank's trace as the library writes one: a host process, one device
    (pid DEV), launches linked to kernels by correlation and flows."""
    ev = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "rank %d" % rank}},
        {"ph": "M", "name": "process_name", "pid": DEV, "tid": 0, "args": {"name": "dev 0"}},
    ]
    for c in range(1, ncorr + 1):
        t = 10 * c
        ev.append({"ph": "X", "cat": "cpu_op", "name": "op%d" % c, "pid": pid, "tid": pid,
                   "ts": t + 0.125, "dur": 5, "args": {"External id": c}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "launch", "pid": pid, "tid": pid,
                   "ts": t + 1, "dur": 1, "args": {"External id": c, "correlation": c}})
        ev.append({"ph": "s", "id": c, "pid": pid, "tid": pid, "ts": t + 1, "cat": "ac2g",
                   "name": "ac2g"})
        ev.append({"ph": "X", "cat": "kernel", "name": "k%d_r%d" % (c, rank), "pid": DEV, "tid": 1,
                   "ts": t + 3, "dur": 2,
                   "args": {"External id": c, "correlation": c, "device": 0, "stream": stream}})
        ev.append({"ph": "f", "bp": "e", "id": c, "pid": DEV, "tid": 1, "ts": t + 3,
                   "cat": "ac2g", "name": "ac2g"})
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "dev", "backend": "example"}],
        "trace_id": trace_id,
        "host_name": host,
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": base_ns,
        "traceEvents": ev,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
        "actraceStats": {"recorded": len(ev), "dropped": rank},
        "traceName": "r%d" % rank,
    }


def write(path, doc):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "wt") as f:
        json.dump(doc, f, indent=1)


def run(args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([ACTRACE] + args, capture_output=True, text=True, env=e, timeout=300)


def load(path):
    with open(path) as f:
        text = f.read()
    return text, json.loads(text)


def keep_for_validators(path, name):
    """Copies a trace to $ACT_TRACE_DIR, which CI's viewers' importers check."""
    d = os.environ.get("ACT_TRACE_DIR")
    if d and os.path.isdir(d):
        shutil.copy(path, os.path.join(d, name))


def host_pid(e):
    return isinstance(e.get("pid"), int) and e["pid"] < DEV


def check_apart(doc, what):
    """No correlation, External id or flow id is shared by two processes,
    and every kernel's correlation names a launch of its own rank."""
    owner = {}  # (kind, id) -> host pid
    dev_owner = {}  # device pid -> host pid, learnt from the flows
    launches = {}
    flows = {}
    for e in doc["traceEvents"]:
        a = e.get("args", {})
        if host_pid(e):
            for k in ("correlation", "External id"):
                if k in a:
                    key = (k, a[k])
                    prev = owner.setdefault(key, e["pid"])
                    check(prev == e["pid"], "%s: %s %s in pids %s and %s" % (what, k, a[k], prev, e["pid"]))
            if "correlation" in a:
                launches[a["correlation"]] = e["pid"]
        if e.get("ph") in ("s", "f"):
            flows.setdefault(e["id"], []).append(e)
    for fid, pair in flows.items():
        check(sorted(x["ph"] for x in pair) == ["f", "s"], "%s: flow %s is %s" % (what, fid, [x["ph"] for x in pair]))
        s = [x for x in pair if x["ph"] == "s"]
        f = [x for x in pair if x["ph"] == "f"]
        if s and f:
            prev = dev_owner.setdefault(f[0]["pid"], s[0]["pid"])
            check(prev == s[0]["pid"], "%s: device pid %s has flows from %s and %s" % (what, f[0]["pid"], prev, s[0]["pid"]))
    kernels = 0
    for e in doc["traceEvents"]:
        a = e.get("args", {})
        if e.get("cat") == "kernel":
            kernels += 1
            c = a.get("correlation")
            check(c in launches, "%s: kernel %s: correlation %s has no launch" % (what, e["name"], c))
            if c in launches and e["pid"] in dev_owner:
                check(launches[c] == dev_owner[e["pid"]],
                      "%s: kernel %s links to a launch of another process" % (what, e["name"]))
    return kernels


def case_basic(tmp):
    # Rank 1 starts 5 s later on another host with the same pid (4242).
    base = 1_700_000_000_000_000_000
    a = os.path.join(tmp, "r1.json")
    # A gzip input where the build reads gzip (the minimal build has no zlib).
    gz = os.environ.get("ACT_HAVE_ZLIB", "ON") == "ON"
    b = os.path.join(tmp, "r0.json.gz" if gz else "r0.json")
    write(a, rank_trace(1, base + 5_000_000_000, 4242, "hostB"))
    write(b, rank_trace(0, base, 4242, "hostA"))
    out = os.path.join(tmp, "all.json")
    r = run(["merge", "-o", out, a, b])
    check(r.returncode == 0, "merge exit %d: %s" % (r.returncode, r.stderr))
    text, doc = load(out)
    check(doc["baseTimeNanoseconds"] == base, "base %s" % doc["baseTimeNanoseconds"])
    # HTA's rank pattern finds the first rank: rank 0's, sorted first.
    m = re.search(r'"rank":\s+(\d+)', text)
    check(m and m.group(1) == "0", "HTA rank pattern: %s" % (m and m.group(0)))
    check(doc["distributedInfo"]["rank"] == 0, "top distributedInfo %s" % doc.get("distributedInfo"))
    check(doc.get("trace_id") == "req-1", "agreed trace_id kept at the top")
    check("host_name" not in doc, "two hosts: no host_name at the top")
    procs = doc["actraceProcesses"]
    check([p.get("rank") for p in procs] == [0, 1], "ranks in order: %s" % [p.get("rank") for p in procs])
    check([p.get("host_name") for p in procs] == ["hostA", "hostB"], "hosts %s" % [p.get("host_name") for p in procs])
    check(procs[1]["distributedInfo"] == {"backend": "nccl", "rank": 1, "world_size": 2},
          "rank 1's distributedInfo %s" % procs[1].get("distributedInfo"))
    check(procs[1]["pids"] == [0x20000000] and procs[0]["pids"] == [4242],
          "colliding pid moved: %s %s" % (procs[0]["pids"], procs[1]["pids"]))
    check(procs[1].get("renamed") == {"4242": 0x20000000, str(DEV): DEV + 1},
          "renamed %s" % procs[1].get("renamed"))
    check(doc["actraceStats"]["dropped"] == 1, "stats summed: %s" % doc["actraceStats"])
    check([d["id"] for d in doc["deviceProperties"]] == [0, 1], "device ids %s" % doc["deviceProperties"])
    # Absolute times kept: rank 1's first op at 10.125 us after its base.
    ops = {(e["pid"], e["name"]): e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"}
    check(ops[(4242, "op1")]["ts"] == 10.125, "rank 0 ts %s" % ops[(4242, "op1")]["ts"])
    check(ops[(0x20000000, "op1")]["ts"] == 5000010.125, "rank 1 ts %s" % ops[(0x20000000, "op1")]["ts"])
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    r1k = [e for e in kernels if e["name"].endswith("_r1")]
    check(all(e["pid"] == DEV + 1 and e["args"]["device"] == 1 for e in r1k), "rank 1 device moved")
    streams = {e["name"][-2:]: e["args"]["stream"] for e in kernels}
    check(streams["r0"] == 7 and streams["r1"] == 15, "streams kept apart: %s" % streams)
    # First file's ids are its own; the second's follow.
    corr = sorted(e["args"]["correlation"] for e in r1k)
    check(corr == [4, 5, 6], "rank 1 correlations %s" % corr)
    check(check_apart(doc, "merge") == 6, "6 kernels")
    r = run(["check", out])
    check(r.returncode == 0, "actrace check: %s" % r.stdout[-500:])
    keep_for_validators(out, "merge_ranks.json")
    # Never replaced without --force; with it, it is.
    r = run(["merge", "-o", out, a, b])
    check(r.returncode == 2 and "--force" in r.stderr, "exists: %d %s" % (r.returncode, r.stderr))
    r = run(["merge", "--force", "-o", out, a])
    check(r.returncode == 0 and len(load(out)[1]["actraceProcesses"]) == 1, "--force")


def case_errors(tmp):
    good = os.path.join(tmp, "good.json")
    write(good, rank_trace(0, 10**18, 10, "h"))
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents":[\n{"ph":"X","pid":1,"ts":1},\n{"ph":"X",,}\n]}\n')
    out = os.path.join(tmp, "out.json")
    r = run(["merge", "-o", out, good, bad])
    check(r.returncode == 1, "bad JSON: exit %d" % r.returncode)
    check(bad + ":3:" in r.stderr, "names file and line: %r" % r.stderr)
    check(not os.path.exists(out), "nothing written for a bad input")
    strpid = os.path.join(tmp, "strpid.json")
    with open(strpid, "w") as f:
        f.write('{"traceEvents":[\n{"ph":"X","pid":1,"ts":1},\n{"ph":"X","pid":"gpu","ts":2}\n]}\n')
    r = run(["merge", "-o", out, strpid])
    check(r.returncode == 1 and strpid + ":3: event #1" in r.stderr and "pid" in r.stderr,
          "string pid: %r" % r.stderr)
    r = run(["merge", "-o", out, os.path.join(tmp, "missing.json")])
    check(r.returncode == 1 and "missing.json" in r.stderr, "missing: %r" % r.stderr)
    notrace = os.path.join(tmp, "notrace.json")
    with open(notrace, "w") as f:
        f.write('{"a": 1}\n')
    r = run(["merge", "-o", out, notrace])
    check(r.returncode == 1 and "notrace.json" in r.stderr and "traceEvents" in r.stderr,
          "no events: %r" % r.stderr)
    r = run(["merge", "-o", out, "-"])
    check(r.returncode == 2, "stdin refused")
    r = run(["merge", "-o", out])
    check(r.returncode == 2 and "no trace" in r.stderr, "no input")
    r = run(["merge", "-o", good, "--force", good])
    check(r.returncode == 2 and "both" in r.stderr, "input as output: %r" % r.stderr)
    check(not os.path.exists(out), "no output left behind")


def record(args, out_args, env=None):
    cmd = ["record"] + out_args + ["--force", "--plugin", EXAMPLE, "--"] + args
    r = run(cmd, env)
    check(r.returncode == 0, "record %s: exit %d: %s" % (args, r.returncode, r.stderr))
    return r


def demo_kernels(tmp):
    """Names of the kernels one demo run records alone (the reference)."""
    out = os.path.join(tmp, "alone.json")
    record([DEMO], ["-o", out])
    return sorted(e["name"] for e in load(out)[1]["traceEvents"] if e.get("cat") == "kernel")


def two_ranks():
    # A 2-rank launcher: each rank gets RANK and WORLD_SIZE, as torchrun sets them.
    return ["sh", "-c", 'RANK=0 "$0" >/dev/null & RANK=1 "$0" >/dev/null; wait', DEMO]


def case_record_merged(tmp):
    out = os.path.join(tmp, "job.json")
    cfg = os.path.join(tmp, "job.cfg")
    with open(cfg, "w") as f:
        f.write("REQUEST_TRACE_ID = x\n")
    record(two_ranks(), ["-o", out, "-c", cfg], {"WORLD_SIZE": "2"})
    text, doc = load(out)
    keep_for_validators(out, "record_ranks.json")
    procs = doc.get("actraceProcesses", [])
    # The launcher (sh) has no rank of its own: no "rank" in its entry.
    ranks = sorted(p["rank"] for p in procs if "rank" in p)
    check(ranks == [0, 1], "record keeps each process's rank: %s" % ranks)
    check(len(procs) == 3 and all("distributedInfo" in p and p.get("host_name") for p in procs),
          "distributedInfo and host_name per process: %s" % procs)
    # (sh ends with _exit: its trace is rebuilt from its spool, without the
    # config, so without trace_id; the agreed one is still at the top.)
    check(all(p.get("trace_id") == "x" for p in procs if "rank" in p) and doc.get("trace_id") == "x",
          "trace_id")
    m = re.search(r'"rank":\s+(\d+)', text)
    check(m and m.group(1) == "0", "HTA finds rank 0")
    ref = demo_kernels(tmp)
    check(len(ref) > 0, "the demo records kernels")
    check(check_apart(doc, "record") == 2 * len(ref), "kernels of 2 ranks")


def case_record_per_process(tmp):
    d = os.path.join(tmp, "ranks")
    ref = demo_kernels(tmp)
    for out_args in (["--per-process", d], ["-o", d + "/"]):
        shutil.rmtree(d, ignore_errors=True)
        r = record(two_ranks(), out_args, {"WORLD_SIZE": "2"})
        names = sorted(n for n in os.listdir(d) if n != "other") if os.path.isdir(d) else []
        check(len(names) == 2 and all(re.fullmatch(r"rank-[01]_\d+\.pt\.trace\.json", n) for n in names),
              "%s: files %s" % (out_args, names))
        # The launcher (sh) had no rank: aside, where HTA does not look.
        other = os.listdir(os.path.join(d, "other")) if os.path.isdir(os.path.join(d, "other")) else []
        check(len(other) == 1 and re.fullmatch(r"\d+\.json", other[0]), "launcher aside: %s" % other)
        check(sorted(n.split("_")[0] for n in names) == ["rank-0", "rank-1"], "ranks %s" % names)
        for n in names:
            text, doc = load(os.path.join(d, n))
            m = re.search(r'"rank":\s+(\d+)', text)
            check(m and "rank-%s_" % m.group(1) == n[:7], "%s: HTA's rank %s" % (n, m and m.group(1)))
            kern = sorted(e["name"] for e in doc["traceEvents"] if e.get("cat") == "kernel")
            check(kern == ref, "%s: kernels as recorded alone: %s" % (n, kern))
            pid = n.split("_")[1].split(".")[0]
            check(any(e.get("pid") == int(pid) for e in doc["traceEvents"]), "%s: pid in name" % n)
        check("3 process" in r.stderr and d in r.stderr, "says what it wrote: %r" % r.stderr)
    # Another run adds its own file (named by its pid) beside them; one
    # process without a rank is rank 0 when no process has one.
    r = run(["record", "--per-process", d, "--plugin", EXAMPLE, "--", DEMO])
    names = [n for n in os.listdir(d) if n != "other"]
    check(r.returncode == 0 and len(names) == 3, "a new pid, a new file: %s" % names)
    bad = os.path.join(tmp, "file")
    open(bad, "w").close()
    r = run(["record", "--per-process", bad, "--", DEMO])
    check(r.returncode == 2 and "not a directory" in r.stderr, "not a dir: %r" % r.stderr)


def case_bandwidth(tmp):
    # Kineto's "memory bandwidth (GB/s)" (bytes per ns) on every copy with
    # "bytes", added by the writers through the visitor: JSON and Perfetto.
    out = os.path.join(tmp, "bw.json")
    record([DEMO], ["-o", out])
    copies = [e for e in load(out)[1]["traceEvents"] if e.get("cat") in ("gpu_memcpy", "gpu_memset")]
    check(len(copies) > 0, "the demo copies")
    for e in copies:
        a = e["args"]
        # The written dur may be a nanosecond under the span: allow 2 ns.
        want = a["bytes"] / (e["dur"] * 1000) if e["dur"] else 0.0
        check(abs(a.get("memory bandwidth (GB/s)", -1) - want) <= 2 * want / max(e["dur"] * 1000, 1),
              "bandwidth of %s: %s, want %s" % (e["name"], a.get("memory bandwidth (GB/s)"), want))
    pf = os.path.join(tmp, "bw.pftrace")
    record([DEMO], ["-o", pf])
    with open(pf, "rb") as f:
        data = f.read()
    check(b"memory bandwidth (GB/s)" in data, "the Perfetto trace names the arg")
    # A debug annotation's double is a fixed64: its 8 bytes, little-endian
    # (the example's copies all last 10 us: the same value in both runs).
    want = struct.pack("<d", copies[0]["args"]["memory bandwidth (GB/s)"])
    check(want in data, "the Perfetto trace holds the value")


CASES = {
    "bandwidth": case_bandwidth,
    "basic": case_basic,
    "errors": case_errors,
    "record_merged": case_record_merged,
    "record_per_process": case_record_per_process,
}

tmp = tempfile.mkdtemp(prefix="actrace-merge-")
try:
    CASES[CASE](tmp)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
if failures:
    print("%d failure(s)" % len(failures), file=sys.stderr)
    sys.exit(1)
print("ok")
