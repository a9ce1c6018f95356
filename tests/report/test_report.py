#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""actrace report in a real browser (issue 36, docs/report.md).

    test_report.py CASE    (environment: ACTRACE, ACT_DEMO, ACT_PLUGIN_DIR,
                            ACT_CL_DEMO, ACT_TRACE_DIR, ACT_VENV_PY,
                            ACT_KINETO_REF)

Each case makes a trace (or a directory of rank traces), writes its report
with `actrace report`, loads the page in headless Chromium and checks:
  - no console message at all (a script error, a Content-Security-Policy
    refusal or a failed load each print one) and no network request made
    by the page (Chromium's own net log, the browser's background requests
    without an origin left out);
  - the numbers the page shows (its tables, read back from the DOM after
    the page drew itself) against `actrace summary --json` of the same
    trace, and the steps against the trace's own ProfilerStep#N events;
  - a screenshot goes to ACT_TRACE_DIR/report_CASE.png for a person.
Cases: demo, opencl, torch, kineto, ranks, harness (the checker itself
fails on a page that fetches or logs), errors (the command's messages).
Exit 77 when Chromium (or what a case needs) is missing.
"""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

ACTRACE = os.environ.get("ACTRACE", "actrace")
TRACE_DIR = os.environ.get("ACT_TRACE_DIR") or tempfile.gettempdir()
SKIP = 77


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(SKIP)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


# ---- the browser --------------------------------------------------------------------------

def browse(page, shot=None):
    """Load PAGE (a path) in headless Chromium: (dom text, console lines,
    urls the page requested). With SHOT, also write a screenshot there."""
    exe = chromium()
    if not exe:
        skip("no chromium (apt-get install chromium)")
    url = "file://" + os.path.abspath(page)
    with tempfile.TemporaryDirectory(prefix="act-report-") as tmp:
        netlog = os.path.join(tmp, "net.json")
        common = [exe, "--headless", "--no-sandbox", "--disable-gpu",
                  "--user-data-dir=" + os.path.join(tmp, "profile"),
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--disable-extensions", "--disable-default-apps",
                  "--enable-logging=stderr", "--v=0",
                  "--log-net-log=" + netlog, "--window-size=1280,2400"]
        r = subprocess.run(common + ["--dump-dom", url], capture_output=True,
                           text=True, timeout=180)
        if r.returncode != 0:
            fail("chromium exited %d: %s" % (r.returncode, r.stderr[-2000:]))
        dom = r.stdout
        console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
        urls = page_requests(netlog)
        if shot:
            r2 = subprocess.run(common + ["--screenshot=" + shot, "--hide-scrollbars", url],
                                capture_output=True, text=True, timeout=180)
            if r2.returncode != 0 or not os.path.exists(shot):
                fail("chromium screenshot failed: %s" % r2.stderr[-2000:])
            console += [l for l in r2.stderr.splitlines() if ":CONSOLE" in l]
            urls += page_requests(netlog)
    return dom, console, urls


def page_requests(netlog):
    """URLs of requests that a page started (the browser's own background
    requests carry no origin: initiator 'not an origin')."""
    try:
        with open(netlog) as f:
            text = f.read()
    except OSError:
        fail("chromium wrote no net log")
    try:
        d = json.loads(text)
    except ValueError:  # cut at exit: close it
        d = json.loads(text.rstrip().rstrip(",") + "]}")
    types = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    out = []
    for e in d.get("events", []):
        p = e.get("params") or {}
        if types.get(e.get("type")) == "URL_REQUEST_START_JOB" and "url" in p \
                and p.get("initiator") != "not an origin":
            out.append(p["url"])
    return out


# ---- reading the page's DOM -----------------------------------------------------------------

class Dom(html.parser.HTMLParser):
    """Tables (with their attributes and the attributes of their
    ancestors' data-*), each row a dict data-k -> cell text."""

    def __init__(self):
        super().__init__()
        self.stack = []  # (tag, attrs)
        self.tables = []
        self.row = None
        self.cell = None
        self.text = {}  # data-k of non-cell elements -> text
        self.cur_k = None
        self.rendered = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body" and a.get("data-rendered") == "1":
            self.rendered = True
        self.stack.append((tag, a))
        if tag == "table":
            ctx = {}
            for _, pa in self.stack:
                for k, v in pa.items():
                    if k.startswith("data-"):
                        ctx[k] = v
            self.tables.append({"class": a.get("class", ""), "ctx": ctx, "rows": []})
        elif tag == "tr" and self.tables:
            self.row = {"_attrs": a}
        elif tag == "td" and self.row is not None:
            self.cell = [a.get("data-k"), ""]
        elif "data-k" in a:
            self.cur_k = [a["data-k"], ""]

    def handle_endtag(self, tag):
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break
        if tag == "td" and self.cell is not None:
            self.row[self.cell[0]] = self.cell[1]
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if len(self.row) > 1:
                self.tables[-1]["rows"].append(self.row)
            self.row = None
        elif self.cur_k is not None and tag in ("p", "div", "span"):
            self.text.setdefault(self.cur_k[0], self.cur_k[1])
            self.cur_k = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell[1] += data
        if self.cur_k is not None:
            self.cur_k[1] += data

    def find(self, cls, **ctx):
        out = []
        for t in self.tables:
            if t["class"] != cls:
                continue
            if all(t["ctx"].get("data-" + k) == str(v) for k, v in ctx.items()):
                out.append(t)
        return out


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        fail("not a number on the page: %r" % (s,))


def close(page, want, decimals, what, rel=0.0):
    """PAGE (text, DECIMALS shown) shows WANT."""
    got = num(page)
    tol = 0.5 * 10 ** -decimals + 1e-9 + rel * abs(want)
    if abs(got - want) > tol:
        fail("%s: the page shows %s, summary says %r" % (what, page, want))


# ---- checks -------------------------------------------------------------------------------------

def summary(path):
    r = subprocess.run([ACTRACE, "summary", "--json", "--top", "1000", path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail("actrace summary %s: %s" % (path, r.stderr))
    return json.loads(r.stdout)


def report(src, out):
    if os.path.exists(out):
        os.unlink(out)
    r = subprocess.run([ACTRACE, "report", "-o", out, src], capture_output=True, text=True)
    if r.returncode != 0:
        fail("actrace report %s: exit %d: %s" % (src, r.returncode, r.stderr))
    if "wrote " + out not in r.stdout:
        fail("actrace report said: %r" % r.stdout)
    return out


def steps_of(path):
    """ProfilerStep#N host spans of a trace, as (count, mean_us)."""
    with open(path) as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    durs = [e["dur"] for e in ev if e.get("ph") == "X" and
            str(e.get("name", "")).startswith("ProfilerStep#") and
            e.get("cat") != "gpu_user_annotation" and
            not (isinstance(e.get("pid"), int) and 0x40000000 <= e["pid"] < 0x40010000)]
    return len(durs), (sum(durs) / len(durs) if durs else None)


def check_trace(dom, ti, trace, S, need_devices=False, need_steps=False,
                need_counters=False):
    """Trace TI's section of the page against its summary S."""
    ov = dom.find("overview", trace=ti)
    if len(ov) != 1:
        fail("trace %d: no overview table on the page" % ti)
    row = ov[0]["rows"][0]
    close(row["events"], S["events"], 0, "events")
    close(row["span_us"], S["time"]["span_us"], 3, "time span", rel=1e-9)
    close(row["dropped"], S["dropped"]["total"], 0, "dropped")
    with open(trace) as f:
        top = json.load(f)
    if isinstance(top, dict) and isinstance(top.get("host_name"), str) and \
            row["host_name"] != top["host_name"]:
        fail("host %r on the page, %r in the trace" % (row["host_name"], top["host_name"]))
    devs = {str(d["device"]) if d["device"] is not None else "null": d
            for d in S["device_activity"]}
    # The busy-over-time chart's bins add up to the busy time.
    for d in dom.data["traces"][ti]["devices"]:
        b = d.get("bins") or {}
        if b.get("busy_pct"):
            area = sum(v / 100.0 * b["w_us"] for v in b["busy_pct"])
            if abs(area - d["busy_us"]) > 0.01 * d["busy_us"] + 1e-3:
                fail("device %s: the busy chart holds %.3f us, busy is %.3f us" %
                     (d["device"], area, d["busy_us"]))
    shown = {t["ctx"].get("data-device") for t in dom.find("split", trace=ti)}
    if shown != set(devs):
        fail("devices on the page %s, in the summary %s" % (sorted(shown), sorted(devs)))
    if need_devices and not devs:
        fail("trace %d: no device activity to check" % ti)
    checked = {"kernels": 0, "latency": 0}
    for key, d in devs.items():
        split = dom.find("split", trace=ti, device=key)[0]["rows"][0]
        for k in ("busy_pct", "compute_pct", "memcpy_pct", "memset_pct", "idle_pct"):
            close(split[k], d[k], 1, "device %s %s" % (key, k))
        close(split["busy_us"], d["busy_us"], 3, "device %s busy_us" % key, rel=1e-9)
        close(split["kernels"], d["kernels"], 0, "device %s kernels" % key)
        ks = {k["name"]: k for k in d["top_kernels"]}
        for t in dom.find("kernels", trace=ti, device=key):
            for r in t["rows"]:
                k = ks.get(r["name"])
                if not k:
                    fail("kernel %r on the page is not in the summary" % r["name"])
                close(r["count"], k["count"], 0, "kernel %s count" % r["name"])
                for f in ("total_us", "mean_us", "max_us"):
                    close(r[f], k[f], 3, "kernel %s %s" % (r["name"], f), rel=1e-9)
                for f in ("p50_us", "p99_us"):
                    if not k["min_us"] - 0.0005 <= num(r[f]) <= k["max_us"] + 0.0005:
                        fail("kernel %s %s %s outside [min, max]" % (r["name"], f, r[f]))
                if num(r["p50_us"]) > num(r["p99_us"]):
                    fail("kernel %s: p50 above p99" % r["name"])
                checked["kernels"] += 1
        lat = dom.find("latency", trace=ti, device=key)
        if d["launch_latency"]:
            if len(lat) != 1:
                fail("device %s: launch latency missing from the page" % key)
            r = lat[0]["rows"][0]
            L = d["launch_latency"]
            close(r["count"], L["count"], 0, "latency count")
            for f in ("p50_us", "p95_us", "max_us"):
                close(r[f], L[f], 3, "latency " + f, rel=1e-9)
            checked["latency"] += 1
        elif lat:
            fail("device %s: latency on the page, none in the summary" % key)
    # Host: each name shown against summary's top_total of its process.
    hosts = {}
    for h in S["host"]:
        hosts[json.dumps(h["pid"])] = {x["name"]: x for x in h["top_total"]}
    nhost = 0
    for t in dom.tables:
        if t["class"] != "hostnames" or t["ctx"].get("data-trace") != str(ti):
            continue
        names = hosts.get(t["ctx"].get("data-pid"))
        if names is None:
            fail("host pid %s on the page is not in the summary" % t["ctx"].get("data-pid"))
        for r in t["rows"]:
            x = names.get(r["name"])
            if not x:
                fail("host name %r on the page is not in the summary" % r["name"])
            close(r["count"], x["count"], 0, "host %s count" % r["name"])
            for f in ("total_us", "self_us", "max_us"):
                close(r[f], x[f], 3, "host %s %s" % (r["name"], f), rel=1e-9)
            nhost += 1
    if S["host"] and not nhost:
        fail("trace %d: host names missing from the page" % ti)
    # Counters: each series's min and max and unit.
    series = {}
    for c in S["counters"]:
        for s in c["series"]:
            series[(c["name"], s["key"])] = s
    ct = dom.find("counters", trace=ti)
    rows = ct[0]["rows"] if ct else []
    if need_counters and not rows:
        fail("trace %d: no counters on the page" % ti)
    for r in rows:
        s = series.get((r["track"], r["key"]))
        if not s:
            fail("counter %s/%s on the page is not in the summary" % (r["track"], r["key"]))
        close(r["samples"], s["samples"], 0, "counter samples", rel=0)
        close(r["min"], s["min"], 3, "counter %s min" % r["key"], rel=1e-9)
        close(r["max"], s["max"], 3, "counter %s max" % r["key"], rel=1e-9)
        if (r["unit"] or None) != s["unit"]:
            fail("counter %s/%s unit %r, summary %r" % (r["track"], r["key"], r["unit"], s["unit"]))
    n, mean = steps_of(trace)
    st = dom.find("stepstats", trace=ti)
    if n:
        if len(st) != 1:
            fail("trace %d: %d steps in the trace, none on the page" % (ti, n))
        r = st[0]["rows"][0]
        close(r["count"], n, 0, "steps")
        close(r["mean_us"], mean, 3, "mean step", rel=1e-9)
        if not num(r["min_us"]) <= num(r["p50_us"]) <= num(r["p99_us"]) <= num(r["max_us"]):
            fail("step quantiles out of order: %r" % r)
    elif st:
        fail("steps on the page, none in the trace")
    if need_steps and not n:
        fail("trace %d: no steps to check" % ti)
    print("trace %d (%s): %d device(s), %d kernel rows, %d latency tables, %d host names, "
          "%d counter series, %d steps: the page agrees with summary --json" %
          (ti, os.path.basename(trace), len(devs), checked["kernels"], checked["latency"],
           nhost, len(rows), n))
    return checked


def load_and_check(page, case):
    shot = os.path.join(TRACE_DIR, "report_%s.png" % case)
    dom_text, console, urls = browse(page, shot)
    if console:
        fail("console messages:\n  " + "\n  ".join(console))
    if urls:
        fail("the page made network requests: %s" % urls)
    dom = Dom()
    dom.feed(dom_text)
    a = dom_text.index('<script type="application/json" id="actrace-data">')
    a = dom_text.index(">", a) + 1
    dom.data = json.loads(dom_text[a:dom_text.index("</script>", a)])
    if not dom.rendered:
        fail("the page did not finish drawing (no data-rendered on body)")
    if dom_text.count("<canvas") < 1:
        fail("no charts on the page")
    size = os.path.getsize(page)
    print("%s: %d bytes, %d charts, no console message, no request; screenshot %s" %
          (page, size, dom_text.count("<canvas"), shot))
    return dom


# ---- cases --------------------------------------------------------------------------------

def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        fail("%s: exit %d\n%s\n%s" % (cmd, r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
    return r


def case_demo(tmp):
    demo = os.environ.get("ACT_DEMO")
    if not demo:
        skip("no demo binary")
    trace = os.path.join(tmp, "demo.json")
    cmd = [ACTRACE, "record", "-o", trace, "--force"]
    pdir = os.environ.get("ACT_PLUGIN_DIR", "")
    for p in ("example", "host"):
        so = os.path.join(pdir, p + ".so")
        if os.path.exists(so):
            cmd += ["--plugin", so]
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cmd += ["-c", os.path.join(src, "examples", "demo", "demo.cfg"), "--", demo]
    run(cmd)
    page = report(trace, os.path.join(TRACE_DIR, "report_demo.html"))
    dom = load_and_check(page, "demo")
    c = check_trace(dom, 0, trace, summary(trace), need_devices=True, need_steps=True,
                    need_counters=True)
    if not c["kernels"] or not c["latency"]:
        fail("the demo's kernels and launch latency were not checked")


def case_opencl(tmp):
    cl = os.environ.get("ACT_CL_DEMO")
    if not cl:
        skip("no OpenCL demo built")
    if subprocess.run([cl, "1"], capture_output=True).returncode != 0:
        skip("no OpenCL platform (apt-get install pocl-opencl-icd)")
    trace = os.path.join(tmp, "demo_opencl.json")
    run([ACTRACE, "record", "--force", "-o", trace, "--", cl])
    page = report(trace, os.path.join(TRACE_DIR, "report_opencl.html"))
    dom = load_and_check(page, "opencl")
    c = check_trace(dom, 0, trace, summary(trace), need_devices=True)
    if not c["kernels"]:
        fail("no OpenCL kernels checked")


TORCH_SCRIPT = r"""
import sys, torch
from torch.profiler import profile, schedule, ProfilerActivity
out = sys.argv[1]
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256); y = torch.randint(0, 10, (64,))
with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=6),
             on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
    for i in range(8):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward(); opt.step()
        prof.step()
"""


def case_torch(tmp):
    py = os.environ.get("ACT_VENV_PY", "")
    if not py or not os.access(py, os.X_OK) or \
            subprocess.run([py, "-c", "import torch"], capture_output=True).returncode != 0:
        skip("no venv with torch (scripts/pyvenv.sh)")
    trace = os.path.join(tmp, "torch.json")
    run([py, "-c", TORCH_SCRIPT, trace], timeout=600)
    page = report(trace, os.path.join(TRACE_DIR, "report_torch.html"))
    dom = load_and_check(page, "torch")
    check_trace(dom, 0, trace, summary(trace), need_steps=True)


def case_kineto(tmp):
    ref = os.environ.get("ACT_KINETO_REF", "")
    if not ref or not os.path.exists(ref):
        skip("no Kineto reference trace (set ACT_SHARED_DIR when configuring)")
    page = report(ref, os.path.join(TRACE_DIR, "report_kineto.html"))
    dom = load_and_check(page, "kineto")
    check_trace(dom, 0, ref, summary(ref))


def rank_trace(rank, step_us):
    """A Kineto-shaped rank trace: 5 steps of STEP_US, each launching two
    kernels on device 0 (flows from launch to kernel), and a counter."""
    pid, dev = 1000 + rank, 0x40000000
    ev = [{"ph": "M", "name": "process_name", "pid": pid, "args": {"name": "rank %d" % rank}},
          {"ph": "M", "name": "process_name", "pid": dev, "args": {"name": "GPU 0"}}]
    t = 1000.0
    fid = 1
    for s in range(5):
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % s,
                   "pid": pid, "tid": pid, "ts": t, "dur": step_us})
        for k in range(2):
            lt = t + 10 + k * 20
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                       "pid": pid, "tid": pid, "ts": lt, "dur": 5})
            ev.append({"ph": "s", "cat": "ac2g", "name": "launch", "id": fid, "pid": pid,
                       "tid": pid, "ts": lt, "bp": "e"})
            kt = lt + 7 + rank
            ev.append({"ph": "X", "cat": "kernel", "name": ["gemm", "relu"][k], "pid": dev,
                       "tid": 7, "ts": kt, "dur": 30 + 10 * k, "args": {"device": 0}})
            ev.append({"ph": "f", "cat": "ac2g", "name": "launch", "id": fid, "pid": dev,
                       "tid": 7, "ts": kt, "bp": "e"})
            fid += 1
        ev.append({"ph": "C", "name": "memory", "pid": pid, "ts": t, "args": {"allocated": 1e6 * (s + 1)}})
        t += step_us + 50
    return {"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 4},
            "baseTimeNanoseconds": 1790000000000000000, "traceEvents": ev}


def case_ranks(tmp):
    d = os.path.join(tmp, "ranks")
    os.mkdir(d)
    step = {0: 1000, 1: 1100, 2: 1900, 3: 1050}  # rank 2 is the slowest
    files = []
    for r in range(4):
        p = os.path.join(d, "rank%d.json" % r)
        with open(p, "w") as f:
            json.dump(rank_trace(r, step[r]), f)
        files.append(p)
    page = report(d, os.path.join(TRACE_DIR, "report_ranks.html"))
    dom = load_and_check(page, "ranks")
    ranks = dom.find("ranks")
    if len(ranks) != 1 or len(ranks[0]["rows"]) != 4:
        fail("no per-rank table of 4 rows on the page")
    for row in ranks[0]["rows"]:
        r = int(num(row["rank"]))
        S = summary(files[r])
        close(row["events"], S["events"], 0, "rank %d events" % r)
        close(row["span_us"], S["time"]["span_us"], 3, "rank %d span" % r, rel=1e-9)
        close(row["steps"], 5, 0, "rank %d steps" % r)
        close(row["step_mean_us"], step[r], 3, "rank %d mean step" % r)
        slow = row["_attrs"].get("data-slowest") == "1"
        if slow != (r == 2):
            fail("rank %d marked slowest=%s" % (r, slow))
    if "Slowest rank: 2 " not in dom.text.get("slowest", ""):
        fail("the page does not name rank 2 the slowest: %r" % dom.text.get("slowest"))
    for i, p in enumerate(files):
        check_trace(dom, i, p, summary(p), need_devices=True, need_steps=True)


def case_harness(tmp):
    """The checker catches what it must: a page that fetches, logs, or
    fails to draw."""
    page = os.path.join(tmp, "bad.html")
    with open(page, "w") as f:
        f.write('<!DOCTYPE html><html><body><img src="http://192.0.2.1/x.png">'
                '<script>console.log("hello")</script></body></html>')
    _, console, urls = browse(page)
    if not any("hello" in c for c in console):
        fail("the console message was not seen: %r" % console)
    if not any("192.0.2.1" in u for u in urls):
        fail("the page's request was not seen: %r" % urls)
    print("harness: a console message and a request are both caught")


def case_errors(tmp):
    trace = os.path.join(tmp, "t.json")
    with open(trace, "w") as f:
        json.dump({"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}, f)
    env = dict(os.environ, ACTRACE_CHARTJS=os.path.join(tmp, "missing.js"))
    r = subprocess.run([ACTRACE, "report", trace], capture_output=True, text=True, env=env)
    if r.returncode != 2 or "missing.js" not in r.stderr:
        fail("a missing ACTRACE_CHARTJS: exit %d, %r" % (r.returncode, r.stderr))
    env = dict(os.environ, ACTRACE_CHARTJS="")
    r = subprocess.run([ACTRACE, "report", "--chartjs", os.path.join(tmp, "nope.js"), trace],
                       capture_output=True, text=True, env=env)
    if r.returncode != 2 or "nope.js" not in r.stderr:
        fail("a missing --chartjs: exit %d, %r" % (r.returncode, r.stderr))
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents": [{"ph": "X",')
    r = subprocess.run([ACTRACE, "report", bad], capture_output=True, text=True)
    if r.returncode != 2 or bad not in r.stderr or os.path.exists(bad[:-5] + ".html"):
        fail("a cut trace: exit %d, %r" % (r.returncode, r.stderr))
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    r = subprocess.run([ACTRACE, "report", empty], capture_output=True, text=True)
    if r.returncode != 2 or "no trace" not in r.stderr:
        fail("an empty directory: exit %d, %r" % (r.returncode, r.stderr))
    # -o naming the trace it reads is refused, and the trace kept.
    before = open(trace).read()
    r = subprocess.run([ACTRACE, "report", "-o", trace, trace], capture_output=True, text=True)
    if r.returncode != 2 or "one of the traces read" not in r.stderr or open(trace).read() != before:
        fail("-o over the input: exit %d, %r" % (r.returncode, r.stderr))
    # In a directory, a trace that cannot be read is named, the others kept.
    mixed = os.path.join(tmp, "mixed")
    os.mkdir(mixed)
    shutil.copy(bad, os.path.join(mixed, "rank1.json"))
    with open(os.path.join(mixed, "rank0.json"), "w") as f:
        json.dump(rank_trace(0, 1000), f)
    out = os.path.join(tmp, "mixed.html")
    r = subprocess.run([ACTRACE, "report", "-o", out, mixed], capture_output=True, text=True)
    if r.returncode != 0 or "rank1.json: error:" not in r.stderr or \
            "wrote " + out + " (1 trace)" not in r.stdout:
        fail("a directory with a cut trace: exit %d, %r %r" % (r.returncode, r.stdout, r.stderr))
    if "rank1.json" not in open(out).read():
        fail("the unreadable rank is not named on the page")
    # A name that would end the page's script element stays inside it.
    with open(trace, "w") as f:
        json.dump({"traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "</script><b>x</b>", "pid": 0x40000000,
             "tid": 1, "ts": 1, "dur": 2, "args": {"device": 0}}]}, f)
    r = subprocess.run([ACTRACE, "report", trace], capture_output=True, text=True)
    if r.returncode != 0:
        fail("report of a hostile name: %r" % r.stderr)
    page = os.path.join(tmp, "t.html")
    text = open(page).read()
    if "</script><b>" in text:
        fail("the kernel name is in the page unescaped")
    if chromium():
        dom_text, console, urls = browse(page)
        if console or urls:
            fail("hostile name page: %r %r" % (console, urls))
        if "&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;" not in dom_text:
            fail("the hostile kernel name is not shown as text")
    print("errors: missing Chart.js, a cut trace, an empty directory, a directory with a cut "
          "trace, a hostile name")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    case = sys.argv[1]
    fn = globals().get("case_" + case)
    if not fn:
        fail("unknown case " + case)
    if case not in ("errors",) and not chromium():
        skip("no chromium (apt-get install chromium)")
    os.makedirs(TRACE_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="act-report-probe-") as tmp:
        t = os.path.join(tmp, "t.json")
        with open(t, "w") as f:
            f.write('{"traceEvents": []}')
        r = subprocess.run([ACTRACE, "report", t], capture_output=True, text=True)
        if r.returncode == 2 and "libjs-chart.js" in r.stderr and \
                not os.environ.get("ACTRACE_CHARTJS"):
            skip("Chart.js is not installed (apt-get install libjs-chart.js)")
    with tempfile.TemporaryDirectory(prefix="act-report-case-") as tmp:
        fn(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
