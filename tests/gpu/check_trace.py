#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a trace recorded by tests/gpu/run.sh against the workload's
manifest: every kernel, copy and memset there on its stream, a flow from
each launch call, device times inside the host window, PM counter tracks
with units, samples spaced by the interval, plausible values (SM activity
rises while the busy kernels run). Prints one line per check and exits 1
if any failed.

  check_trace.py --manifest M.json [--interval-us N] [--no-pm] TRACE.json
  check_trace.py --self-test     # the checks on hand-made traces, good
                                 # and broken, so the logic is tested
                                 # without a GPU

Python 3 standard library only.
"""
import argparse
import copy
import json
import math
import statistics
import sys

SM_METRIC = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
SLACK_US = 0.01  # writer rounding: ts/dur have three decimals


class Result:
    def __init__(self, quiet=False):
        self.fails = []
        self.quiet = quiet

    def check(self, name, ok, detail):
        if not self.quiet:
            print("%s %s: %s" % ("PASS" if ok else "FAIL", name, detail))
        if not ok:
            self.fails.append(name)
        return ok


def x_events(evs, cat):
    return [e for e in evs if e.get("ph") == "X" and e.get("cat") == cat]


def check(trace, manifest, interval_us, want_pm, res):
    evs = trace.get("traceEvents")
    if not res.check("trace", isinstance(evs, list) and len(evs) > 0,
                     "%d events" % (len(evs) if isinstance(evs, list) else 0)):
        return
    props = trace.get("deviceProperties") or []
    res.check("device_properties",
              len(props) > 0 and all(p.get("name") for p in props) and
              any(int(p.get("numSms", 0)) > 0 for p in props),
              "; ".join("%s (%s SMs, cc %s.%s)" % (p.get("name"), p.get("numSms"),
                                                    p.get("computeMajor"), p.get("computeMinor"))
                        for p in props) or "none")
    kernels = x_events(evs, "kernel")
    copies = x_events(evs, "gpu_memcpy")
    memsets = x_events(evs, "gpu_memset")
    runtime = x_events(evs, "cuda_runtime")
    gpu_pids = {e["pid"] for e in kernels + copies + memsets}

    # Kernels by name, and the stream (pid, tid) of each manifest label.
    label_lane = {}
    lanes_ok = True
    detail = []
    for k in manifest["kernels"]:
        got = [e for e in kernels if e["name"].startswith(k["name"])]
        detail.append("%s %d/%d" % (k["name"], len(got), k["count"]))
        lanes = {(e["pid"], e["tid"]) for e in got}
        if len(lanes) != 1:
            lanes_ok = False
        elif k["stream"] in label_lane and label_lane[k["stream"]] != lanes.pop():
            lanes_ok = False
        elif lanes:
            label_lane[k["stream"]] = lanes.pop()
        k["_got"] = len(got)
    res.check("kernels", all(k["_got"] == k["count"] for k in manifest["kernels"]),
              ", ".join(detail))
    distinct = len(set(label_lane.values())) == len(label_lane)
    res.check("kernel_streams", lanes_ok and distinct and len(label_lane) > 0,
              ", ".join("stream %s -> pid %s tid %s" % (l, p, t)
                        for l, (p, t) in sorted(label_lane.items())))

    def on(label, e):
        return label_lane.get(label) == (e["pid"], e["tid"])

    detail, ok = [], True
    for m in manifest.get("memcpy", []):
        got = [e for e in copies
               if e.get("args", {}).get("kind") == m["kind"] and on(m["stream"], e)]
        detail.append("%s on %s %d/%d" % (m["kind"], m["stream"], len(got), m["count"]))
        ok &= len(got) == m["count"]
    res.check("copies", ok, ", ".join(detail))
    detail, ok = [], True
    for m in manifest.get("memset", []):
        got = [e for e in memsets if on(m["stream"], e)]
        detail.append("on %s %d/%d" % (m["stream"], len(got), m["count"]))
        ok &= len(got) == m["count"]
    res.check("memsets", ok, ", ".join(detail))

    # Flows: an "s" on a runtime call, an "f" on the device event.
    starts = {}
    rt_at = {(e["pid"], e["tid"], e["ts"]) for e in runtime}
    for e in evs:
        if e.get("ph") == "s" and (e["pid"], e["tid"], e["ts"]) in rt_at:
            starts[e["id"]] = e
    ends = {}
    for e in evs:
        if e.get("ph") == "f":
            ends.setdefault((e["pid"], e["tid"], e["ts"]), []).append(e)
    device = kernels + copies + memsets
    missing, late = 0, 0
    for d in device:
        fl = [f for f in ends.get((d["pid"], d["tid"], d["ts"]), []) if f["id"] in starts]
        if not fl:
            missing += 1
        elif starts[fl[0]["id"]]["ts"] > d["ts"] + SLACK_US:
            late += 1
    res.check("flows", missing == 0 and len(device) > 0,
              "%d of %d device events have a flow from their launch call" %
              (len(device) - missing, len(device)))
    res.check("launch_before_work", late == 0,
              "%d device events start before their launch call" % late)

    # Host window: the traced process's spans.
    host = [e for e in evs if e.get("ph") == "X" and e["pid"] not in gpu_pids]
    if host and device:
        lo = min(e["ts"] for e in host)
        hi = max(e["ts"] + e.get("dur", 0) for e in host)
        out = [d for d in device
               if d["ts"] < lo - SLACK_US or d["ts"] + d.get("dur", 0) > hi + SLACK_US]
        res.check("host_window", not out,
                  "%d of %d device events outside the host window [%.3f, %.3f] us%s" %
                  (len(out), len(device), lo, hi,
                   (" (first: %s at %.3f)" % (out[0]["name"], out[0]["ts"])) if out else ""))
    else:
        res.check("host_window", False, "no host or device events")

    if not want_pm:
        return
    counters = [e for e in evs if e.get("ph") == "C" and e["pid"] in gpu_pids]
    tracks = {}
    for e in counters:
        tracks.setdefault(e["name"], []).append(e)
    res.check("pm_tracks", len(tracks) >= 1 and SM_METRIC in tracks and
              all(len(v) >= 5 for v in tracks.values()),
              "%d tracks on the GPU process: %s" %
              (len(tracks), ", ".join("%s (%d)" % (k, len(v)) for k, v in sorted(tracks.items()))))
    units = {c["track"]: c.get("unit", "") for c in
             (trace.get("actraceStats") or {}).get("counters", [])}
    res.check("pm_units", tracks and all(units.get(t) for t in tracks),
              ", ".join("%s [%s]" % (t, units.get(t, "")) for t in sorted(tracks)) or "none")
    sm = sorted(tracks.get(SM_METRIC, []), key=lambda e: e["ts"])
    if len(sm) >= 3:
        deltas = [b["ts"] - a["ts"] for a, b in zip(sm, sm[1:])]
        med = statistics.median(deltas)
        res.check("pm_spacing", 0.5 * interval_us <= med <= 2.0 * interval_us,
                  "median spacing %.1f us for an interval of %d us" % (med, interval_us))
    else:
        res.check("pm_spacing", False, "fewer than 3 samples of " + SM_METRIC)
    bad = 0
    for name, v in tracks.items():
        for e in v:
            for val in e.get("args", {}).values():
                if not isinstance(val, (int, float)) or not math.isfinite(val) or val < 0 or \
                        (".pct_of_peak" in name and val > 100.5):
                    bad += 1
    res.check("pm_values", bad == 0 and len(tracks) > 0,
              "%d implausible values (negative, non-finite, percentages over 100)" % bad)
    busy = [k for k in kernels if k["name"].startswith(manifest.get("busy_kernel", "busy_kernel"))]

    def value(e):
        a = e.get("args", {})
        return next(iter(a.values())) if a else 0.0

    def inside(ts, spans):
        return any(s["ts"] <= ts <= s["ts"] + s["dur"] for s in spans)

    during = [value(e) for e in sm if inside(e["ts"], busy)]
    idle = [value(e) for e in sm if not inside(e["ts"], kernels)]
    if len(during) >= 3 and len(idle) >= 3:
        md, mi = statistics.mean(during), statistics.mean(idle)
        res.check("pm_rises", md > mi + 10.0 and md > 20.0,
                  "%s: mean %.1f during busy kernels (%d samples), %.1f idle (%d samples)" %
                  (SM_METRIC, md, len(during), mi, len(idle)))
    else:
        res.check("pm_rises", False, "%d samples during busy kernels, %d idle" %
                  (len(during), len(idle)))


# ---- self-test -----------------------------------------------------------------

def synthetic(interval_us=1000):
    """A trace shaped like actrace's output for the workload."""
    pid, gpu = 4000, 1 << 30
    evs = [{"ph": "M", "name": "process_name", "pid": gpu, "tid": 0,
            "args": {"name": "NVIDIA H200"}}]
    t = 1000.0
    ids = [100]

    def launch(name, tid, start, dur, cat, args=None):
        ids[0] += 1
        rt = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel" if cat == "kernel"
              else "cudaMemcpyAsync", "pid": pid, "tid": pid, "ts": start - 50.0, "dur": 5.0,
              "args": {"correlation": ids[0]}}
        dev = {"ph": "X", "cat": cat, "name": name, "pid": gpu, "tid": tid, "ts": start,
               "dur": dur, "args": dict(args or {}, correlation=ids[0])}
        evs.extend([rt, dev,
                    {"ph": "s", "id": ids[0], "pid": pid, "tid": pid, "ts": rt["ts"],
                     "cat": "ac2g", "name": "ac2g"},
                    {"ph": "f", "bp": "e", "id": ids[0], "pid": gpu, "tid": tid,
                     "ts": start, "cat": "ac2g", "name": "ac2g"}])

    evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaFree", "pid": pid, "tid": pid,
                "ts": t, "dur": 100.0})
    t = 151000.0
    launch("Memcpy HtoD (Pinned -> Device)", 13, t, 5000, "gpu_memcpy", {"kind": "HtoD"})
    launch("Memcpy HtoD (Pinned -> Device)", 14, t + 10, 5000, "gpu_memcpy", {"kind": "HtoD"})
    launch("Memset (Device)", 14, t + 5100, 100, "gpu_memset")
    busy = []
    for i in range(3):
        s = t + 5200 + i * 60000
        launch("busy_kernel(float*, int, unsigned long long)", 13, s, 60000, "kernel")
        busy.append((s, s + 60000))
    for i in range(4):
        launch("scale_kernel(float*, int, float)", 14, t + 5300 + i * 100, 90, "kernel")
    end = t + 5200 + 3 * 60000
    launch("Memcpy DtoH (Device -> Pinned)", 13, end + 10, 5000, "gpu_memcpy", {"kind": "DtoH"})
    launch("Memcpy DtoH (Device -> Pinned)", 14, end + 5100, 5000, "gpu_memcpy", {"kind": "DtoH"})
    evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": pid,
                "tid": pid, "ts": t + 100, "dur": end + 11000 - t})
    evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaFreeHost", "pid": pid,
                "tid": pid, "ts": end + 160000, "dur": 50.0})
    stats = []
    for m, unit in ((SM_METRIC, "%"), ("dram__bytes_read.sum.per_second", "byte/second")):
        stats.append({"track": m, "series": "value", "unit": unit, "device": 0})
        ts = 500.0
        while ts < end + 150000:
            on = any(a <= ts <= b for a, b in busy)
            v = (95.0 if on else 0.5) if m == SM_METRIC else (2e9 if on else 1e6)
            evs.append({"ph": "C", "cat": "gpu_pm_counter", "name": m, "pid": gpu, "tid": 0,
                        "ts": ts, "args": {"value": v}})
            ts += interval_us
    return {"schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "numSms": 132,
                                  "computeMajor": 9, "computeMinor": 0}],
            "traceEvents": evs, "actraceStats": {"counters": stats}}


MANIFEST = {"kernels": [{"name": "busy_kernel", "stream": "A", "count": 3},
                        {"name": "scale_kernel", "stream": "B", "count": 4}],
            "memcpy": [{"kind": "HtoD", "stream": "A", "count": 1},
                       {"kind": "HtoD", "stream": "B", "count": 1},
                       {"kind": "DtoH", "stream": "A", "count": 1},
                       {"kind": "DtoH", "stream": "B", "count": 1}],
            "memset": [{"stream": "B", "count": 1}],
            "busy_kernel": "busy_kernel"}


def run_checks(trace, interval=1000, pm=True):
    r = Result(quiet=True)
    check(trace, copy.deepcopy(MANIFEST), interval, pm, r)
    return r.fails


def self_test():
    ok = True

    def expect(label, trace, fails_with, interval=1000, pm=True):
        nonlocal ok
        fails = run_checks(trace, interval, pm)
        good = (fails == []) if fails_with is None else (fails_with in fails)
        print("%s self-test %s: %s" % ("PASS" if good else "FAIL", label,
                                       "failed: " + ", ".join(fails) if fails else "all checks pass"))
        ok &= good

    base = synthetic()
    expect("good trace", base, None)
    expect("good trace, no PM", base, None, pm=False)

    def mutate(fn):
        t = copy.deepcopy(base)
        fn(t["traceEvents"], t)
        return t

    def drop_first(evs, pred):
        for i, e in enumerate(evs):
            if pred(e):
                del evs[i]
                return

    expect("a kernel missing", mutate(lambda evs, t: drop_first(
        evs, lambda e: e.get("cat") == "kernel" and e["name"].startswith("scale"))), "kernels")
    expect("a kernel on the wrong stream", mutate(lambda evs, t: next(
        e for e in evs if e.get("cat") == "kernel" and e["name"].startswith("busy")).update(tid=99)),
        "kernel_streams")
    expect("a copy missing", mutate(lambda evs, t: drop_first(
        evs, lambda e: e.get("args", {}).get("kind") == "DtoH")), "copies")
    expect("the memset missing", mutate(lambda evs, t: drop_first(
        evs, lambda e: e.get("cat") == "gpu_memset")), "memsets")
    expect("a flow missing", mutate(lambda evs, t: drop_first(
        evs, lambda e: e.get("ph") == "f")), "flows")
    def launch_late(evs, t):
        s = next(e for e in evs if e.get("ph") == "s")
        rt = next(e for e in evs if e.get("cat") == "cuda_runtime" and e["ts"] == s["ts"])
        s["ts"] = rt["ts"] = s["ts"] + 10 ** 6
    expect("work before its launch", mutate(launch_late), "launch_before_work")

    def late(evs, t):
        for e in evs:
            if e.get("cat") == "kernel" and e["name"].startswith("scale"):
                e["ts"] += 10 ** 7
    expect("device work outside the host window", mutate(late), "host_window")
    expect("no device properties", mutate(lambda evs, t: t.update(deviceProperties=[])),
           "device_properties")
    expect("no PM samples", mutate(lambda evs, t: evs.__init__(
        [e for e in evs if e.get("ph") != "C"])), "pm_tracks")
    expect("no units", mutate(lambda evs, t: t["actraceStats"]["counters"][0].update(unit="")),
           "pm_units")
    expect("samples at the wrong interval", base, "pm_spacing", interval=20000)

    def flat(evs, t):
        for e in evs:
            if e.get("ph") == "C" and e["name"] == SM_METRIC:
                e["args"]["value"] = 3.0
    expect("SM activity flat while kernels run", mutate(flat), "pm_rises")

    def over(evs, t):
        next(e for e in evs if e.get("ph") == "C" and e["name"] == SM_METRIC)["args"]["value"] = 140.0
    expect("a percentage over 100", mutate(over), "pm_values")
    print("self-test: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", nargs="?")
    ap.add_argument("--manifest")
    ap.add_argument("--interval-us", type=int, default=1000)
    ap.add_argument("--no-pm", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.trace or not a.manifest:
        ap.error("TRACE and --manifest are required")
    try:
        with open(a.trace) as f:
            trace = json.load(f)
        with open(a.manifest) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        print("FAIL load: %s" % e)
        return 1
    r = Result()
    check(trace, manifest, a.interval_us, not a.no_pm, r)
    print("%s: %d check(s) failed" % ("FAIL" if r.fails else "PASS", len(r.fails)))
    return 1 if r.fails else 0


if __name__ == "__main__":
    sys.exit(main())
