#!/bin/sh
# SPDX-License-Identifier: MIT
# The tables of docs/performance.md, from one `make bench` run.
#
#   scripts/perf-report.sh [BUILD]            run `make bench` (BUILD/bench.log), print the tables
#   scripts/perf-report.sh --from LOG         print the tables of an earlier run's log
#   PERF_DOC=docs/performance.md scripts/perf-report.sh ...
#                                             also put them in that file, between
#                                             <!-- perf:begin --> and <!-- perf:end -->
#
# Every figure is set beside a baseline measured in the same run (two clock
# reads, a memcpy, a memchr pass, the untraced program, the shortest trace),
# so tables from different days or machines compare through their ratios,
# never their raw times. The header names the machine, the date and the
# commit. `make bench` takes several minutes and both cores: run it on a
# quiet machine, once.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = "--from" ]; then
    LOG=${2:?usage: perf-report.sh --from LOG}
else
    BUILD=${1:-build}
    LOG="$BUILD/bench.log"
    [ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    {
        echo "machine: $(uname -srm); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
        echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "commit: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$SRC" diff --quiet 2>/dev/null || echo ' (with local changes)')"
        echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
        MAKEFLAGS=--no-print-directory cmake --build "$BUILD" --target run_bench 2>&1
        echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
    } >"$LOG"
fi
exec python3 - "$LOG" "${PERF_DOC:-}" <<'EOF'
import io, json, re, sys
_out = io.StringIO()
_print = print
def print(*a, **k):
    k.setdefault("file", _out)
    _print(*a, **k)

log = open(sys.argv[1], encoding="utf-8", errors="replace").read()
lines = log.splitlines()
J = {}
for l in lines:
    l = l.strip()
    if l.startswith("{") and l.endswith("}"):
        try:
            d = json.loads(l)
        except ValueError:
            continue
        if "bench" in d:
            J[d["bench"]] = d
        elif "nvtx_push_pop_ns" in d:
            J["nvtx"] = d  # its own clock_read_ns, measured in its process
        else:
            J.update(d)


def head(k):
    for l in lines:
        if l.startswith(k + ":"):
            return l.split(":", 1)[1].strip()
    return "?"


def table(title, cmd, rows, note=None):
    rows = [r for r in rows if r is not None]
    if not rows:
        print("### %s\n\n(not in this run: %s)\n" % (title, cmd))
        return
    print("### %s\n\nCommand: %s.%s\n" % (title, cmd, (" " + note) if note else ""))
    print("| what | value | same-run baseline | ratio |")
    print("|---|---|---|---|")
    for r in rows:
        print("| %s |" % " | ".join(r))
    print()


def g(k, d=None):
    d = J if d is None else d
    return d.get(k)


def row(what, val, unit, base=None, bunit="", ratio=None, fmt="%.2f"):
    if val is None:
        return None
    b = "" if base is None else ((fmt % base) + (" " + bunit if bunit else ""))
    r = "" if ratio is None else "%.2fx" % ratio
    return [what, (fmt % val) + " " + unit, b, r]


print("Machine: %s  \nDate: %s; commit %s; load average %s before, %s after.\n"
      % (head("machine"), head("date"), head("commit"), head("load before"), head("load after")))

clk = g("clock_read_ns")
table("Recording one event (the hot path)", "`make bench` (`act_bench`, first part)", [
    row("span with caller-supplied times, interned name", g("record_supplied_ns"), "ns",
        clk, "ns (one clock read)", g("record_supplied_ns") / clk if clk and g("record_supplied_ns") else None),
    row("the same plus an int and a 20-byte string arg", g("record_supplied_args2_ns"), "ns",
        clk, "ns", g("record_supplied_args2_ns") / clk if clk and g("record_supplied_args2_ns") else None),
    row("span begin+end with the session clock", g("record_span_ns"), "ns",
        2 * clk if clk else None, "ns (two clock reads)", g("span_over_2clock")),
    row("span begin+end, two threads", g("record_span_ns_2t"), "ns/event",
        2 * clk if clk else None, "ns", g("record_span_ns_2t") / (2 * clk) if clk and g("record_span_ns_2t") else None),
    row("one counter sample, clock read included", g("record_counter_ns"), "ns",
        clk, "ns", g("record_counter_ns") / clk if clk and g("record_counter_ns") else None),
    row("buffer memory per span", g("buffer_bytes_per_event"), "B", fmt="%.0f"),
], "Baseline: `clock_gettime` read in the same process.")

mc = g("memcpy_gb_s")
def wrow(what, ns, b):
    if ns is None or b is None or not mc:
        return None
    return [what, "%.2f ns/event, %.0f B/event" % (ns, b), "%.2f GB/s memcpy" % mc,
            "%.1fx a memcpy of those bytes" % (ns / (b / mc))]
def prow(what, ns, b, jns, jb):
    if ns is None or b is None or not jns:
        return None
    return [what, "%.2f ns/event, %.0f B/event" % (ns, b), "%.2f ns/event, %.0f B/event (JSON)" % (jns, jb),
            "%.2fx the time, %.2fx the bytes" % (ns / jns, b / jb)]
table("Writing a trace", "`make bench` (`act_bench`, write part: 1M events)", [
    wrow("JSON, argless span", g("json_write_ns"), g("json_bytes")),
    prow("Perfetto protobuf, argless span", g("pftrace_write_ns"), g("pftrace_bytes"),
         g("json_write_ns"), g("json_bytes")),
    wrow("JSON, Kineto's two args", g("json_args2_write_ns"), g("json_args2_bytes")),
    prow("Perfetto protobuf, Kineto's two args", g("pftrace_args2_write_ns"), g("pftrace_args2_bytes"),
         g("json_args2_write_ns"), g("json_args2_bytes")),
], "Baseline: a memcpy of the bytes written (JSON), the JSON writer on the same events (Perfetto).")

sw = J.get("sweep") or []
base = {0: None, 2: None}
for p in sw:
    if p["events"] == min(q["events"] for q in sw if q["args"] == p["args"]):
        base[p["args"]] = p
rows = []
for p in sw:
    b = base[p["args"]]
    rows.append(["%s events, %d args" % (format(p["events"], ","), p["args"]),
                 "%.2f ns/event wall, %.2f thread CPU, %.1f faults/1M" % (
                     p["ns_per_event"], p["thread_cpu_ns_per_event"], p["faults_per_1m"]),
                 "%.2f ns/event wall, %.2f thread CPU (%s events)" % (
                     b["ns_per_event"], b["thread_cpu_ns_per_event"], format(b["events"], ",")),
                 "%.2fx wall, %.2fx CPU" % (p["ns_per_event"] / b["ns_per_event"],
                                            p["thread_cpu_ns_per_event"] / b["thread_cpu_ns_per_event"])])
table("Recording by trace length (default config)", "`make bench` (`act_bench`, sweep; `ACT_BENCH_SWEEP_ONLY=1 build/bench/act_bench` alone)",
      rows, "Baseline: the shortest trace of the same run; median of 5.")

own = {(p["events"], p["args"]): p for p in sw}
rows = []
for l in lines:
    m = re.match(r"record/sweep events=(\d+) args=(\d+) wall_ns=([\d.]+) cpu_ns=([\d.]+) faults_per_1m=([\d.]+)", l)
    if m:
        n, a = int(m.group(1)), int(m.group(2))
        cpu = float(m.group(4))
        o = own.get((n, a))
        rows.append(["%s events, %d args, under `record`" % (format(n, ","), a),
                     "%s ns/event wall, %.2f thread CPU, %s faults/1M" % (m.group(3), cpu, m.group(5)),
                     "%.2f ns/event thread CPU, the program's own session" % o["thread_cpu_ns_per_event"] if o else "",
                     "%.2fx" % (cpu / o["thread_cpu_ns_per_event"]) if o else ""])
table("Recording by trace length under `actrace record`", "`make bench` (`bench/record/run.sh`, `act_bench_rec_sweep`; `BENCH_RECORD_ONLY=sweep` alone)",
      rows, "Baseline: the same length in a program's own session (the sweep above), recording thread's CPU time.")

mm = g("memchr_mb_s")
def rrow(what, rate, rss):
    if rate is None or not mm:
        return None
    return [what, "%.0f MB/s, peak RSS %.1f MB" % (rate, rss / 1024.0), "%.0f MB/s memchr pass" % mm,
            "%.2fx" % (rate / mm)]
table("Reading traces", "`make bench` (`act_bench_reader`, a generated %s MB trace)" % (g("trace_mb") or "?"), [
    rrow("`actrace check`", g("check_read_mb_s"), g("check_peak_rss_kib") or 0),
    rrow("`actrace summary`", g("summary_read_mb_s"), g("summary_peak_rss_kib") or 0),
    rrow("`actrace convert` to .pftrace", g("convert_mb_s"), g("convert_peak_rss_kib") or 0),
    rrow("Python's `json.load` (for scale)", g("python_json_load_mb_s"), g("python_peak_rss_kib") or 0),
], "Baseline: one `memchr` pass over the same file.")

nv = J.get("nvtx", {})
rows = [row("NVTX push+pop under actrace", g("nvtx_push_pop_ns", nv), "ns",
            2 * g("clock_read_ns", nv) if g("clock_read_ns", nv) else None, "ns (two clock reads)",
            g("nvtx_over_2clock", nv))]
for k, what in (("enqueue", "OpenCL kernel enqueue (pocl)"), ("write", "OpenCL buffer write (pocl)"),
                ("call", "other OpenCL call (pocl)")):
    p, t = g("opencl_%s_ns_plain" % k), g("opencl_%s_ns_traced" % k)
    if p and t:
        rows.append(["%s, traced" % what, "%.2f us" % (t / 1e3), "%.2f us untraced" % (p / 1e3), "%.2fx" % (t / p)])
table("Backends", "`make bench` (`act_bench_nvtx`, `act_bench_opencl`)", rows,
      "Baseline: two clock reads (NVTX); the same calls untraced (OpenCL).")

rows = []
for l in lines:
    m = re.match(r"record/true200 untraced_ms=([\d.]+) preload_ms=([\d.]+) nodefault_ms=([\d.]+) default_ms=([\d.]+)", l)
    if m:
        u, p, n, d = map(float, m.groups())
        rows += [["200 `/bin/true`, libactrace preloaded", "%.0f ms" % p, "%.0f ms untraced" % u, "%.2fx" % (p / u)],
                 ["200 `/bin/true` under `record --no-default-plugins`", "%.0f ms" % n, "%.0f ms untraced" % u, "%.2fx" % (n / u)],
                 ["200 `/bin/true` under `record`", "%.0f ms" % d, "%.0f ms untraced" % u, "%.2fx" % (d / u)]]
    m = re.match(r"record/build24 untraced_ms=([\d.]+) default_ms=([\d.]+)", l)
    if m:
        u, d = map(float, m.groups())
        rows.append(["`make -j2` of 24 C files under `record`", "%.0f ms" % d, "%.0f ms untraced" % u, "%.2fx" % (d / u)])
    m = re.match(r"record/icount true untraced=(\d+) preload=(\d+) under_record=(\d+)", l)
    if m:
        u, p, r = map(int, m.groups())
        rows.append(["`/bin/true` under `record`, instructions (callgrind)", format(r, ","),
                     "%s untraced" % format(u, ","), "%.2fx" % (r / u)])
table("Processes under `actrace record`", "`make bench` (`bench/record/run.sh`)", rows,
      "Baseline: the same workload untraced, alternating, best of 5. Wall times on a shared machine are noisy; instruction counts are not.")

rows = []
sp = J.get("python_spans")
if sp:
    nc = sp["ns_per_span"].get("nullcontext")
    for k, v in sorted(sp["ns_per_span"].items()):
        if k != "nullcontext":
            rows.append(["Python span: %s" % k, "%.0f ns" % v,
                         "%.0f ns (`with contextlib.nullcontext()`)" % nc if nc else "",
                         "%.2fx" % (v / nc) if nc else ""])
ops = J.get("python_ops")
if ops:
    for m, d in sorted(ops["models"].items()):
        for key, label in (("ratio_whole", "start to trace written"), ("ratio", "training loop only")):
            per = d.get("ns_added_per_op" + ("_whole" if key == "ratio_whole" else ""))
            if per and key in d:
                rows.append(["`record_ops()` per aten op, %s (%s)" % (label, m),
                             "%.0f ns added" % per["actrace record_ops"],
                             "%.0f ns added by torch.profiler CPU" % per["torch.profiler CPU"],
                             "%.2fx" % d[key]])
table("Python and PyTorch", "`make bench` (`bench/python`)", rows,
      "Baseline: an empty `with` block (spans); torch.profiler's own cost on the same model (ops).")

text = _out.getvalue()
sys.stdout.write(text)
if len(sys.argv) > 2 and sys.argv[2]:
    doc = open(sys.argv[2], encoding="utf-8").read()
    b, e = "<!-- perf:begin -->", "<!-- perf:end -->"
    if b not in doc or e not in doc:
        sys.exit("%s: no %s ... %s markers" % (sys.argv[2], b, e))
    head, rest = doc.split(b, 1)
    doc = (head + b + "\n<!-- generated by scripts/perf-report.sh from one `make bench` run;"
           " do not edit by hand -->\n\n" + text + e + rest.split(e, 1)[1])
    open(sys.argv[2], "w", encoding="utf-8").write(doc)
EOF
