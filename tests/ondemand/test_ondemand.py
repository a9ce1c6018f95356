#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""On-demand tracing (issue 19): a fake dynolog daemon drives od_prog.

The daemon side of dynolog's IPC fabric, written here from the protocol's
description (docs/on-demand.md), apart from the C code under test:
datagram sockets, a 40-byte header {uint64 size; char type[32]} and a
payload; a poll "req" is {int32 config type; int32 n; int64 job id;
int32 pids[n]}, the reply "req" is the config text, empty for nothing.

usage: test_ondemand.py OD_PROG ACTRACE CASE
"""
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

OD_PROG, ACTRACE, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
HDR = struct.Struct("=Q32s")
POLL = struct.Struct("=iiq")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


class Poll:
    def __init__(self, addr, ctype, job, pids):
        self.addr, self.ctype, self.job, self.pids = addr, ctype, job, pids


class Daemon:
    """The daemon's endpoint: "dynolog" in DIR, or abstract "\\0dynolog\\0"."""

    def __init__(self, sockdir):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if sockdir:
            path = os.path.join(sockdir, "dynolog")
            if os.path.exists(path):
                os.unlink(path)  # the previous case's daemon
            self.s.bind(path)
        else:
            # The abstract name with the trailing NUL counted, as dynolog binds it.
            self.s.bind(b"\0dynolog\0")

    def recv(self, timeout):
        """The next poll, or None after timeout seconds."""
        self.s.settimeout(timeout)
        try:
            data, addr = self.s.recvfrom(1 << 20)
        except socket.timeout:
            return None
        size, mtype = HDR.unpack_from(data)
        check(size == len(data) - HDR.size, "header size %d, datagram %d" % (size, len(data)))
        check(mtype.rstrip(b"\0") == b"req", "message type %r" % mtype)
        payload = data[HDR.size:]
        ctype, n, job = POLL.unpack_from(payload)
        check(len(payload) == POLL.size + 4 * n, "poll of %d bytes for %d pids" % (len(payload), n))
        pids = list(struct.unpack_from("=%di" % n, payload, POLL.size))
        return Poll(addr, ctype, job, pids)

    def reply(self, poll, text=""):
        body = text.encode()
        try:
            self.s.sendto(HDR.pack(len(body), b"req") + body, poll.addr)
        except (FileNotFoundError, ConnectionRefusedError):
            # The client exited (or closed its socket) after its poll, as
            # a real daemon sees processes end: not the test's failure.
            pass

    def serve_until(self, done, timeout, answer=lambda p: ""):
        """Answer polls until done() or timeout; returns the polls seen."""
        seen, end = [], time.monotonic() + timeout
        while not done() and time.monotonic() < end:
            p = self.recv(0.05)
            if p:
                seen.append(p)
                self.reply(p, answer(p))
        return seen

    def serve_count(self, n, timeout, answer=lambda p: ""):
        """Answer polls until n were seen or timeout; returns the polls seen
        (a loaded machine may not run a poller for a while: wait for what
        is asserted, not a fixed time)."""
        seen, end = [], time.monotonic() + timeout
        while len(seen) < n and time.monotonic() < end:
            p = self.recv(0.05)
            if p:
                seen.append(p)
                self.reply(p, answer(p))
        return seen

    def close(self):
        self.s.close()


tmp = tempfile.mkdtemp(prefix="act_ondemand_")
sockdir = os.path.join(tmp, "sock")
os.mkdir(sockdir)
env = dict(os.environ)
for k in ("ACTRACE_USE_DAEMON", "KINETO_USE_DAEMON", "ACTRACE_RECORD_DIR",
          "ACTRACE_RECORD_OUTPUT", "ACTRACE_CONFIG", "ACTRACE_PLUGINS"):
    env.pop(k, None)
env.update({"ACTRACE_USE_DAEMON": "1", "ACTRACE_DAEMON_POLL_MS": "40",
            "KINETO_IPC_SOCKET_DIR": sockdir, "KINETO_ONDEMAND_TRACE_DIR": tmp,
            "SLURM_JOB_ID": "4242", "ACTRACE_LOG": "debug"})


def start(args, **over):
    e = dict(env)
    e.update(over)
    e = {k: v for k, v in e.items() if v is not None}
    p = subprocess.Popen([OD_PROG] + args, env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline() if args[0] != "probe" else ""
    m = re.match(r"pid (\d+)", line)
    return p, int(m.group(1)) if m else p.pid


def finish(p):
    out, err = p.communicate(timeout=60)
    sys.stderr.write(err)
    check(p.returncode == 0, "od_prog exit status %s" % p.returncode)
    return out, err


def trace_at(path):
    with open(path) as f:
        return json.load(f)


def steps_in(trace):
    """The numbers of the ProfilerStep#N spans in a trace, sorted."""
    return sorted(int(e["name"].split("#")[1]) for e in trace["traceEvents"]
                  if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#"))


def contiguous(xs):
    return bool(xs) and xs == list(range(xs[0], xs[0] + len(xs)))


def appear(path, timeout=30):
    """Wait for a trace that no daemon of ours serves (trigger did)."""
    end = time.monotonic() + timeout
    while not os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.05)


def once(text):
    """A daemon's answer: text to the first poll, nothing to the others."""
    sent = []

    def answer(poll):
        if sent:
            return ""
        sent.append(poll)
        return text
    return answer


def wait_file(path, d, timeout=30):
    d.serve_until(lambda: os.path.exists(path), timeout)
    return check(os.path.exists(path), "no trace at " + path)


def case_registration():
    d = Daemon(sockdir)
    p, pid = start(["steps", "20", "10"])
    first = d.recv(10)
    if check(first is not None, "no poll arrived"):
        # The process first, then its ancestors: our own pid is its parent.
        check(first.pids[0] == pid and len(first.pids) >= 2 and first.pids[1] == os.getpid(),
              "pids %s (process %d, parent %d)" % (first.pids, pid, os.getpid()))
        check(len(first.pids) <= 11, "more than 10 ancestors")
        check(first.ctype == 2, "config type %d, not 2 (activities)" % first.ctype)
        check(first.job == 4242, "job id %d, not SLURM_JOB_ID" % first.job)
        name = first.addr if isinstance(first.addr, str) else first.addr.decode()
        check(os.path.basename(name).startswith("dynoconfigclient"), "endpoint %r" % name)
        d.reply(first)
    # It keeps polling (every 40 ms here), from the same endpoint.
    seen = d.serve_count(2, 10)
    check(len(seen) >= 2 and all(s.addr == first.addr for s in seen), "%d more polls" % len(seen))
    finish(p)
    d.close()


def case_duration_busy_iterations():
    """A duration request; a request while it runs (busy: dropped); then an
    iteration request, each trace at its path with its trace_id."""
    d = Daemon(sockdir)
    p, pid = start(["steps", "400", "10"])
    dur = "ACTIVITIES_LOG_FILE=%s/dur.json\nACTIVITIES_DURATION_MSECS=300\nREQUEST_TRACE_ID=dur-1\n" % tmp
    busy = "ACTIVITIES_LOG_FILE=%s/busy.json\nACTIVITIES_DURATION_MSECS=50\nREQUEST_TRACE_ID=busy\n" % tmp
    state = {"sent": False, "busy_polls": 0, "busy_sent": False}

    def answer(poll):
        if not state["sent"]:
            state["sent"] = True
            return dur
        if poll.ctype == 0:  # tracing: Kineto's "while tracing" poll
            state["busy_polls"] += 1
            if not state["busy_sent"]:
                state["busy_sent"] = True
                return busy  # a daemon that hands it over anyway
        return ""

    path = "%s/dur_%d.json" % (tmp, pid)
    d.serve_until(lambda: os.path.exists(path), 30, answer)
    if check(os.path.exists(path), "no duration trace at " + path):
        t = trace_at(path)
        check(t.get("trace_id") == "dur-1", "trace_id %r" % t.get("trace_id"))
        s = steps_in(t)
        # A window, not the run: some steps, consecutive, far fewer than 400.
        check(contiguous(s) and len(s) < 200, "duration window's steps %s" % s)
        check(t["distributedInfo"]["rank"] == 0, "distributedInfo %s" % t.get("distributedInfo"))
    check(state["busy_polls"] > 0, "no poll with config type 0 while tracing")
    # Polls ask for activities again once the trace is written.
    again = []
    d.serve_until(lambda: len(again) >= 3, 20, lambda q: again.append(q) or "")
    check(again and all(q.ctype == 2 for q in again), "polls after the trace: %s" %
          [q.ctype for q in again])
    check(not os.path.exists("%s/busy_%d.json" % (tmp, pid)), "the busy request was traced")
    it = ("ACTIVITIES_LOG_FILE=%s/it.pt.trace.json\nPROFILE_START_ITERATION=0\n"
          "PROFILE_START_ITERATION_ROUNDUP=10\nACTIVITIES_ITERATIONS=5\nREQUEST_TRACE_ID=it-2\n" % tmp)
    path = "%s/it_%d.pt.trace.json" % (tmp, pid)
    d.serve_until(lambda: os.path.exists(path), 30, once(it))
    if check(os.path.exists(path), "no iteration trace at " + path):
        t = trace_at(path)
        check(t.get("trace_id") == "it-2", "trace_id %r" % t.get("trace_id"))
        s = steps_in(t)
        check(len(s) == 5 and contiguous(s) and s[0] % 10 == 0 and s[0] > 0,
              "iteration window's steps %s (5 from a multiple of 10)" % s)
    p.kill()
    _, err = p.communicate()
    check("busy: a trace window is open (the on-demand owner's session)" in err,
          "the busy message names no owner: %r" % [l for l in err.splitlines() if "busy" in l])
    check(not os.path.exists("%s/busy_%d.json" % (tmp, pid)), "the busy request was traced")
    d.close()


def case_no_daemon():
    """Without the variable (or with it false) nothing polls: one thread,
    no socket, no poll; with it, one more thread and one socket."""
    # (With the variable, TSan's runtime adds a thread of its own: the
    # poller is found by its name.)
    for value, threads, sockets, poller in ((None, 1, 0, 0), ("0", 1, 0, 0), ("false", 1, 0, 0),
                                            ("1", None, 1, 1)):
        d = Daemon(sockdir)
        p, _ = start(["probe", "300"], ACTRACE_USE_DAEMON=value, KINETO_USE_DAEMON=None)
        out, _ = finish(p)
        m = re.search(r"threads (\d+) sockets (\d+) poller (\d)", out)
        if check(m, "probe printed %r" % out):
            got = (int(m.group(1)) if threads else None, int(m.group(2)), int(m.group(3)))
            check(got == (threads, sockets, poller),
                  "ACTRACE_USE_DAEMON=%s: %s, want threads %s sockets %d poller %d" %
                  (value, m.group(0), threads, sockets, poller))
        poll = d.recv(0.2)
        check((poll is not None) == (value == "1"), "ACTRACE_USE_DAEMON=%s: poll %s" %
              (value, poll and poll.pids))
        d.close()
    # Kineto's variable does the same.
    d = Daemon(sockdir)
    p, _ = start(["probe", "300"], ACTRACE_USE_DAEMON=None, KINETO_USE_DAEMON="1")
    out, _ = finish(p)
    check("sockets 1 poller 1" in out, "KINETO_USE_DAEMON=1: %r" % out)
    d.close()


def case_own_session():
    """A program that records on its own is busy: its polls ask for no
    activities, and a config handed over anyway is dropped."""
    d = Daemon(sockdir)
    own = os.path.join(tmp, "own.json")
    p, pid = start(["own", "60", "10", own])
    give = once("ACTIVITIES_LOG_FILE=%s/od.json\nACTIVITIES_DURATION_MSECS=50\n" % tmp)
    # The first poll may come before main() started the session.
    seen = d.serve_until(lambda: p.poll() is not None, 30,
                         lambda q: give(q) if q.ctype == 0 else "")
    _, err = p.communicate()
    check(p.returncode == 0, "od_prog own: exit %s %r" % (p.returncode, err[-6000:]))
    # Type 2 until main() started its session, 0 while it runs, 2 after
    # it stopped (the program writes its trace and exits).
    types = "".join(str(q.ctype) for q in seen)
    check(re.fullmatch(r"2*000+2*", types) is not None, "poll types %s" % types)
    check(os.path.exists(own) and len(steps_in(trace_at(own))) == 60, "the program's own trace")
    check(not os.path.exists("%s/od_%d.json" % (tmp, pid)), "a request traced during the program's session")
    check("busy" in err, "no busy message: %r" % err[-300:])
    check("the program owner's session" in err, "the busy message names no owner: %r" % err[-600:])
    d.close()


def case_busy_owner():
    """A request refused as busy names whose session is in the way: record,
    torch (a session named as torch_kineto.cpp names its), on-demand."""
    # torch: a session created as actrace.torch.enable()'s are.
    d = Daemon(sockdir)
    own = os.path.join(tmp, "torch.json")
    p, pid = start(["own", "40", "10", own, "torch.profiler"])
    give = once("ACTIVITIES_LOG_FILE=%s/t.json\nACTIVITIES_DURATION_MSECS=50\n" % tmp)
    d.serve_until(lambda: p.poll() is not None, 30, lambda q: give(q) if q.ctype == 0 else "")
    _, err = p.communicate()
    check(p.returncode == 0, "od_prog own: exit %s" % p.returncode)
    check("the torch owner's session" in err, "torch: the busy message: %r" %
          [l for l in err.splitlines() if "busy" in l or "request" in l])
    d.close()
    # record: the program actrace record runs; every poll is handed a request.
    d = Daemon(sockdir)
    out = os.path.join(tmp, "rec.json")
    r = subprocess.Popen([ACTRACE, "record", "-o", out, "--", OD_PROG, "steps", "40", "10"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    give = once("ACTIVITIES_LOG_FILE=%s/r.json\nACTIVITIES_DURATION_MSECS=50\n" % tmp)
    d.serve_until(lambda: r.poll() is not None, 30, give)
    _, err = r.communicate(timeout=60)
    check(r.returncode == 0, "actrace record: exit %s %r" % (r.returncode, err[-600:]))
    check("the record owner's session" in err, "record: the busy message: %r" %
          [l for l in err.splitlines() if "busy" in l or "request" in l])
    check(not [f for f in os.listdir(tmp) if f.startswith("r_")], "a request traced under record")
    d.close()


def case_fork():
    """A forked child polls on its own endpoint with its own pid first."""
    d = Daemon(sockdir)
    # TSan's runtime refuses threads after a multi-threaded fork by default.
    # Both live 3 s (300 steps of 10 ms) and each polls every 40 ms after
    # its first 40 ms; served until both have polled, up to 10 s, since a
    # loaded machine may not run the child's poller thread for a while
    # (CI once saw only one of them within a fixed 1 s).
    p, _ = start(["fork", "300", "10"],
                 TSAN_OPTIONS=(os.environ.get("TSAN_OPTIONS", "") + " die_after_fork=0").strip())
    pid = p.pid  # the parent (either may print first)
    seen, end = [], time.monotonic() + 10
    while len({q.pids[0] for q in seen}) < 2 and p.poll() is None and time.monotonic() < end:
        seen += d.serve_until(lambda: False, 0.2)
    firsts = {q.pids[0]: q.addr for q in seen}
    check(pid in firsts and len(firsts) == 2, "pids polling: %s" % sorted(firsts))
    check(len(set(firsts.values())) == len(firsts), "parent and child share an endpoint")
    child = [k for k in firsts if k != pid]
    if child:
        q = [q for q in seen if q.pids[0] == child[0]][0]
        check(q.pids[1] == pid, "the child's ancestors %s" % q.pids)
    finish(p)
    d.close()


def one_request(text, steps=("steps", "200", "10")):
    d = Daemon(sockdir)
    p, pid = start(list(steps))
    return d, p, pid, once(text)


def case_path():
    """A log file outside KINETO_ONDEMAND_TRACE_DIR (or through "..") goes
    to the default name there; a name without .json gets no pid."""
    for f in ("/etc/actrace_ondemand.json", tmp + "/../escape.json"):
        d, p, pid, answer = one_request("ACTIVITIES_LOG_FILE=%s\nACTIVITIES_DURATION_MSECS=50\n" % f)
        path = "%s/libkineto_activities_%d.json" % (tmp, pid)
        d.serve_until(lambda: os.path.exists(path), 30, answer)
        check(os.path.exists(path), "%s: no trace at %s" % (f, path))
        check(not os.path.exists(f), "wrote " + f)
        p.kill()
        p.communicate()
        d.close()
    d, p, pid, answer = one_request("ACTIVITIES_LOG_FILE=%s/plain.trace\nACTIVITIES_DURATION_MSECS=50\n" % tmp)
    path = tmp + "/plain.trace"
    wait = d.serve_until(lambda: os.path.exists(path), 30, answer)
    check(os.path.exists(path), "no trace at " + path)
    p.kill()
    p.communicate()
    d.close()


def case_plugins():
    """A daemon's config never loads code: PLUGINS is refused, nothing traced."""
    so = os.path.join(tmp, "evil.so")
    open(so, "w").close()
    d, p, pid, answer = one_request(
        "ACTIVITIES_LOG_FILE=%s/pl.json\nACTIVITIES_DURATION_MSECS=50\nPLUGINS=%s\n" % (tmp, so))
    d.serve_count(3, 10, answer)  # the poller reads a reply before it polls again
    p.kill()
    _, err = p.communicate()
    check(not os.path.exists("%s/pl_%d.json" % (tmp, pid)), "a PLUGINS request was traced")
    check("names PLUGINS" in err, "no message about PLUGINS: %r" % err[-500:])
    d.close()


def case_exit():
    """A window still open when the program exits is written at exit."""
    d, p, pid, answer = one_request(
        "ACTIVITIES_LOG_FILE=%s/ex.json\nACTIVITIES_DURATION_MSECS=600000\nREQUEST_TRACE_ID=ex\n" % tmp,
        ("steps", "60", "10"))
    d.serve_until(lambda: p.poll() is not None, 30, answer)
    finish(p)
    path = "%s/ex_%d.json" % (tmp, pid)
    if check(os.path.exists(path), "no trace at exit at " + path):
        t = trace_at(path)
        check(t.get("trace_id") == "ex" and contiguous(steps_in(t)) and steps_in(t)[-1] == 59,
              "trace at exit: steps %s" % steps_in(t))
    d.close()


def trigger(*args, timeout=60):
    e = dict(env)
    e.pop("ACTRACE_USE_DAEMON")  # the command itself is not traced
    return subprocess.run([ACTRACE, "trigger", "--serve"] + list(args), env=e,
                          capture_output=True, text=True, timeout=timeout)


def case_trigger():
    p, pid = start(["steps", "400", "10"])
    r = trigger("--pid", str(pid), "--job-id", "4242", "--duration-ms", "200",
                "--log-file", tmp + "/trig.json", "--trace-id", "trig-1", "--timeout-ms", "20000")
    sys.stderr.write(r.stdout + r.stderr)
    check(r.returncode == 0, "trigger exit status %d" % r.returncode)
    check("pid %d: triggered" % pid in r.stdout, "trigger's report %r" % r.stdout)
    path = "%s/trig_%d.json" % (tmp, pid)
    appear(path)
    if check(os.path.exists(path), "no trace at " + path):
        t = trace_at(path)
        check(t.get("trace_id") == "trig-1", "trace_id %r" % t.get("trace_id"))
        check(contiguous(steps_in(t)) and len(steps_in(t)) < 200, "duration window's steps %s" % steps_in(t))
    # An iteration request through trigger.
    r = trigger("--pid", str(pid), "--job-id", "4242", "--iterations", "3", "--roundup", "4",
                "--log-file", tmp + "/trig_it.json", "--timeout-ms", "20000")
    check(r.returncode == 0, "trigger --iterations exit status %d" % r.returncode)
    path = "%s/trig_it_%d.json" % (tmp, pid)
    appear(path)
    if check(os.path.exists(path), "no trace at " + path):
        t = trace_at(path)
        s = steps_in(t)
        check(len(s) == 3 and contiguous(s) and s[0] % 4 == 0, "iteration window's steps %s, %s" %
              (s, [(e["name"], e["ts"], e.get("dur")) for e in t["traceEvents"] if e.get("ph") == "X"]))
    # A daemon that is alive keeps its endpoint.
    d = Daemon(sockdir)
    r = trigger("--pid", str(pid), "--timeout-ms", "500")
    check(r.returncode == 1 and "a daemon listens" in r.stderr, "over a live daemon: %d %r" %
          (r.returncode, r.stderr))
    check(d.recv(0.2) is not None, "the live daemon lost its endpoint")
    d.close()
    # Usage errors.
    p.kill()
    _, err = p.communicate()
    if failures:
        sys.stderr.write(err)
    for bad in (["--pid", "x"], ["--duration-ms", "0"], ["--log-file", "a\nPLUGINS=/x.so"],
                ["--duration-ms", "5", "--iterations", "2"], ["stray"]):
        r = trigger(*bad)
        check(r.returncode == 2 and "actrace trigger" in r.stderr, "%s: %d %r" % (bad, r.returncode, r.stderr))


def case_trigger_busy():
    """A second request while the first's window is open: busy, not queued."""
    p, pid = start(["steps", "600", "10"])
    r = trigger("--pid", str(pid), "--job-id", "4242", "--duration-ms", "3000",
                "--log-file", tmp + "/long.json", "--timeout-ms", "20000")
    check(r.returncode == 0, "first trigger: %d %r" % (r.returncode, r.stdout))
    r = trigger("--pid", str(pid), "--job-id", "4242", "--duration-ms", "100",
                "--log-file", tmp + "/second.json", "--timeout-ms", "20000")
    check(r.returncode == 1 and "pid %d: busy" % pid in r.stdout, "second trigger: %d %r" %
          (r.returncode, r.stdout))
    path = "%s/long_%d.json" % (tmp, pid)
    appear(path)
    check(os.path.exists(path), "no trace at " + path)
    p.kill()
    p.communicate()
    check(not os.path.exists("%s/second_%d.json" % (tmp, pid)), "the busy request was queued")


def case_trigger_not_ours():
    """A request for another pid: that process traces, this one does not."""
    a, pa = start(["steps", "400", "10"])
    b, pb = start(["steps", "400", "10"])
    r = trigger("--pid", str(pb), "--job-id", "4242", "--duration-ms", "100",
                "--log-file", tmp + "/mine.json", "--timeout-ms", "20000")
    check(r.returncode == 0 and "pid %d: triggered" % pb in r.stdout and str(pa) not in r.stdout,
          "trigger: %d %r" % (r.returncode, r.stdout))
    # A wrong job id matches nobody.
    r = trigger("--pid", str(pa), "--job-id", "1", "--timeout-ms", "500")
    check(r.returncode == 1, "job 1 matched: %r" % r.stdout)
    path = "%s/mine_%d.json" % (tmp, pb)
    appear(path)
    check(os.path.exists(path), "no trace at " + path)
    time.sleep(0.3)
    check(not os.path.exists("%s/mine_%d.json" % (tmp, pa)), "the other process traced")
    for p in (a, b):
        p.kill()
        p.communicate()


def case_trigger_tcp():
    """Without --serve, trigger speaks to dynolog as dyno does: TCP, an
    int32 length and the JSON of setKinetOnDemandRequest."""
    import threading
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(2)
    got = []

    def serve(matched):
        c, _ = srv.accept()
        n, = struct.unpack("=i", c.recv(4, socket.MSG_WAITALL))
        got.append(json.loads(c.recv(n, socket.MSG_WAITALL)))
        resp = json.dumps({"processesMatched": matched, "activityProfilersTriggered": matched,
                           "activityProfilersBusy": 0}).encode()
        c.sendall(struct.pack("=i", len(resp)) + resp)
        c.close()

    port = str(srv.getsockname()[1])
    for matched, status in (([4321], 0), ([], 1)):
        t = threading.Thread(target=serve, args=(matched,))
        t.start()
        r = subprocess.run([ACTRACE, "trigger", "--host", "127.0.0.1", "--port", port,
                            "--job-id", "7", "--pid", "4321", "--pid", "99", "--iterations", "6",
                            "--roundup", "50", "--log-file", "/tmp/x \"q\".json", "--trace-id", "tcp-1"],
                           capture_output=True, text=True, timeout=60)
        t.join()
        check(r.returncode == status, "trigger exit %d for %s: %r" % (r.returncode, matched, r.stderr))
        req = got[-1]
        check(req["fn"] == "setKinetOnDemandRequest" and req["job_id"] == 7 and
              req["pids"] == [4321, 99], "request %s" % req)
        check(req["config"] == "ACTIVITIES_LOG_FILE=/tmp/x \"q\".json\nPROFILE_START_ITERATION=0\n"
              "PROFILE_START_ITERATION_ROUNDUP=50\nACTIVITIES_ITERATIONS=6\nACTRACE_TRACE_ID=tcp-1\n"
              "REQUEST_TRACE_ID=tcp-1\n",
              "config %r" % req["config"])
        check("activityProfilersTriggered" in r.stdout, "response not printed: %r" % r.stdout)
    srv.close()
    r = subprocess.run([ACTRACE, "trigger", "--host", "127.0.0.1", "--port", port],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 1 and "cannot reach" in r.stderr, "no daemon: %d %r" % (r.returncode, r.stderr))


def case_abstract():
    """The default transport: abstract names, the daemon at "\\0dynolog\\0"."""
    global env
    env = dict(env)
    env.pop("KINETO_IPC_SOCKET_DIR")
    try:
        d = Daemon(None)
    except OSError as e:
        print("skip: cannot bind the abstract name dynolog (%s): a daemon runs?" % e)
        sys.exit(77)
    p, pid = start(["steps", "300", "10"])
    first = d.recv(10)
    if check(first is not None, "no poll on the abstract name"):
        # The client's name is abstract, its length counting a trailing NUL.
        check(isinstance(first.addr, bytes) and first.addr.startswith(b"\0dynoconfigclient")
              and first.addr.endswith(b"\0"), "client address %r" % (first.addr,))
        d.reply(first, "ACTIVITIES_LOG_FILE=%s/abs.json\nACTIVITIES_DURATION_MSECS=100\n"
                "REQUEST_TRACE_ID=abs\n" % tmp)
        path = "%s/abs_%d.json" % (tmp, pid)
        if wait_file(path, d):
            check(trace_at(path).get("trace_id") == "abs", "trace_id")
    d.close()
    p.kill()
    p.communicate()



# ---- issue 33: through a stand-in dynolog; a hostile local user ------------

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def asan_preload():
    """ASAN_OPTIONS for a program with a library preloaded before ASan's."""
    return (os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")


def standin(**kw):
    from standin_dynolog import Dynolog
    return Dynolog(sockdir, **kw).start()


def dyno(d, *args):
    """actrace trigger to the stand-in daemon's TCP port, as dyno does."""
    e = dict(env)
    return subprocess.run([ACTRACE, "trigger", "--host", "127.0.0.1", "--port", str(d.port),
                           "--job-id", "4242"] + list(args), env=e, capture_output=True,
                          text=True, timeout=60)


def wait_for(cond, timeout=30):
    end = time.monotonic() + timeout
    while not cond() and time.monotonic() < end:
        time.sleep(0.05)
    return cond()


def case_standin_trace_id():
    """Item 2: dynolog appends its own REQUEST_TRACE_ID after the request's
    text; --trace-id still names the trace (ACTRACE_TRACE_ID)."""
    d = standin()
    p, pid = start(["steps", "400", "10"])
    check(wait_for(lambda: d.polled(pid), 10), "no registration")
    r = dyno(d, "--pid", str(pid), "--duration-ms", "200", "--log-file", tmp + "/tid.json",
             "--trace-id", "mine-7")
    check(r.returncode == 0, "trigger through the stand-in: %d %r %r" % (r.returncode, r.stdout, r.stderr))
    path = "%s/tid_%d.json" % (tmp, pid)
    if check(wait_for(lambda: os.path.exists(path)), "no trace at " + path):
        t = trace_at(path)
        check(t.get("trace_id") == "mine-7", "trace_id %r (the daemon's ids: %s)" %
              (t.get("trace_id"), d.trace_ids))
    # Without --trace-id, the daemon's id is the trace's.
    r = dyno(d, "--pid", str(pid), "--duration-ms", "100", "--log-file", tmp + "/tid2.json")
    path = "%s/tid2_%d.json" % (tmp, pid)
    if check(wait_for(lambda: os.path.exists(path)), "no trace at " + path):
        check(trace_at(path).get("trace_id") == d.trace_ids[-1], "trace_id %r, daemon's %s" %
              (trace_at(path).get("trace_id"), d.trace_ids))
    p.kill()
    p.communicate()
    d.stop()


def case_standin_busy():
    """Through dynolog, a request for a process that has one pending is
    answered busy (activityProfilersBusy, nothing triggered): trigger says
    so and exits 1, as with --serve; the first request is traced."""
    d = standin()
    p, pid = start(["steps", "1500", "10"], ACTRACE_DAEMON_POLL_MS="3000")
    check(wait_for(lambda: d.polled(pid), 10), "no registration")
    # Both right after a poll: the first is still pending at the second.
    n = len(d.polls)
    wait_for(lambda: len(d.polls) > n, 10)
    r1 = dyno(d, "--pid", str(pid), "--duration-ms", "100", "--log-file", tmp + "/first.json")
    r2 = dyno(d, "--pid", str(pid), "--duration-ms", "100", "--log-file", tmp + "/second.json")
    check(r1.returncode == 0, "first trigger: %d %r %r" % (r1.returncode, r1.stdout, r1.stderr))
    check(r2.returncode == 1 and '"activityProfilersBusy": 1' in r2.stdout and "busy" in r2.stderr,
          "second trigger: %d %r %r" % (r2.returncode, r2.stdout, r2.stderr))
    path = "%s/first_%d.json" % (tmp, pid)
    check(wait_for(lambda: os.path.exists(path)), "no trace at " + path)
    p.kill()
    p.communicate()
    check(not os.path.exists("%s/second_%d.json" % (tmp, pid)), "the busy request was traced")
    d.stop()


def case_standin_forkexec():
    """Items 3 and 11: a polling process that forks and execs children:
    none registers (dynolog would stall its IPC thread on each vanished
    endpoint), none leaves an endpoint file; another process's trace comes
    with no stall."""
    d = standin()
    over = {"ACTRACE_DAEMON_POLL_MS": "1000"}
    p, pid = start(["forkexec", "80", "30", "20"], **over)
    other, opid = start(["steps", "400", "10"])
    check(wait_for(lambda: d.polled(pid) and d.polled(opid), 10), "no registrations")
    r = dyno(d, "--pid", str(opid), "--duration-ms", "100", "--log-file", tmp + "/other.json")
    check(r.returncode == 0, "trigger: %r" % r.stdout)
    finish(p)
    path = "%s/other_%d.json" % (tmp, opid)
    check(wait_for(lambda: os.path.exists(path)), "no trace at " + path)
    with d.lock:
        firsts = sorted({q[1][0] for q in d.polls})
    check(sorted(firsts) == sorted([pid, opid]), "processes that polled: %s (parent %d, other %d)"
          % (firsts, pid, opid))
    check(d.stalls == 0, "%d replies to vanished endpoints (%.1f s stalled)" % (d.stalls, d.stall_s))
    finish(other)
    left = sorted(f for f in os.listdir(sockdir) if f != "dynolog")
    check(left == [], "endpoint files left: %s" % left)
    d.stop()


def case_cli_never_polls():
    """Item 3: the actrace command itself never registers, even with the
    variable set; the program it records does."""
    d = standin()
    out = os.path.join(tmp, "rec.json")
    r = subprocess.Popen([ACTRACE, "record", "-o", out, "--", OD_PROG, "steps", "50", "10"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    so, se = r.communicate(timeout=60)
    m = re.search(r"pid (\d+)", so)
    child = int(m.group(1)) if m else -1
    time.sleep(0.2)
    with d.lock:
        firsts = {q[1][0] for q in d.polls}
    check(r.pid not in firsts, "the actrace command (pid %d) polled: %s" % (r.pid, firsts))
    check(child in firsts, "the recorded program (pid %d) did not poll: %s %r" % (child, firsts, se[-500:]))
    d.stop()


def case_kineto_owns():
    """Item 4: where Kineto polls (KINETO_USE_DAEMON and a library with
    libkineto_init), libactrace's poller stops: one poller per process."""
    lib = os.environ["ACT_TEST_KINETO_LIB"]
    d = standin()
    p, pid = start(["kineto", "200", "10", lib], ACTRACE_USE_DAEMON=None, KINETO_USE_DAEMON="1")
    check(p.stdout.readline().strip() == "loaded", "od_prog did not load the library")
    before = len(d.polled(pid))
    time.sleep(0.3)  # a poll already under way
    after = len(d.polled(pid))
    time.sleep(0.5)  # a poller alive would poll about 12 times
    check(before > 0, "libactrace never polled before Kineto was loaded")
    check(len(d.polled(pid)) == after, "%d polls from libactrace after Kineto was loaded" %
          (len(d.polled(pid)) - after))
    finish(p)
    check(sorted(f for f in os.listdir(sockdir) if f != "dynolog") == [], "endpoint file left")
    # ACTRACE_USE_DAEMON alone: Kineto does not poll, libactrace does.
    p, pid = start(["kineto", "80", "10", lib])
    finish(p)
    check(len(d.polled(pid)) >= 5, "ACTRACE_USE_DAEMON alone: %d polls" % len(d.polled(pid)))
    d.stop()


def case_trigger_forged():
    """Item 8: a poll claiming another process's pid gets nothing."""
    victim, vpid = start(["idle", "20000"], ACTRACE_USE_DAEMON=None)
    forger = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    forger.bind(os.path.join(sockdir, "dynoconfigclientforged"))
    e = dict(env)
    e.pop("ACTRACE_USE_DAEMON")
    t = subprocess.Popen([ACTRACE, "trigger", "--serve", "--pid", str(vpid), "--job-id", "4242",
                          "--timeout-ms", "1500", "--log-file", tmp + "/forged.json"], env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    body = POLL.pack(2, 1, 4242) + struct.pack("=i", vpid)
    got = []
    end = time.monotonic() + 1.2
    forger.settimeout(0.1)
    while time.monotonic() < end:
        try:
            forger.sendto(HDR.pack(len(body), b"req") + body, os.path.join(sockdir, "dynolog"))
        except OSError:
            pass
        try:
            got.append(forger.recv(1 << 16))
        except socket.timeout:
            pass
    so, se = t.communicate(timeout=30)
    check("triggered" not in so and t.returncode == 1, "forged poll: %d %r" % (t.returncode, so))
    check("claims pid %d" % vpid in se, "no message about the forged poll: %r" % se)
    check(all(g[HDR.size:] == b"" for g in got), "the forger received a config: %r" % got[:1])
    victim.kill()
    victim.communicate()
    forger.close()


def case_iter_timeout():
    """Item 9: an iteration request to a process that never steps is given
    up; the process takes the next request."""
    d = Daemon(sockdir)
    p, pid = start(["idle", "8000"], ACTRACE_DAEMON_START_TIMEOUT_MS="500")
    it = ("ACTIVITIES_LOG_FILE=%s/never.json\nPROFILE_START_ITERATION=0\n"
          "PROFILE_START_ITERATION_ROUNDUP=1\nACTIVITIES_ITERATIONS=2\n" % tmp)
    state = {"n": 0}
    dur = "ACTIVITIES_LOG_FILE=%s/after.json\nACTIVITIES_DURATION_MSECS=100\n" % tmp

    def answer(q):
        state["n"] += 1
        if state["n"] == 1:
            return it
        if q.ctype == 2 and state["n"] > 2 and not state.get("dur"):
            state["dur"] = True
            return dur
        return ""
    path = "%s/after_%d.json" % (tmp, pid)
    d.serve_until(lambda: os.path.exists(path), 20, answer)
    check(os.path.exists(path), "the request after a given-up iteration request: no trace")
    p.kill()
    _, err = p.communicate()
    check("given up" in err, "no message: %r" % err[-800:])
    check(not os.path.exists("%s/never_%d.json" % (tmp, pid)), "the iteration request wrote a trace")
    d.close()


def case_exit_write():
    """Item 10: the program ends while its trace is being written: the
    trace is complete, and no temporary file stays."""
    d = Daemon(sockdir)
    answer = once("ACTIVITIES_LOG_FILE=%s/slow.json\nACTIVITIES_DURATION_MSECS=200\n" % tmp)
    p, pid = start(["steps", "100", "10"], LD_PRELOAD=os.environ["ACT_TEST_SLOW_WRITE"],
                   ACT_TEST_SLOW_WRITE_MS="3500", ASAN_OPTIONS=asan_preload())
    # The window closes at about 0.2 s, the write takes 3.5 s, and the
    # program ends at about 1 s, more than 2 s before the write does.
    d.serve_until(lambda: p.poll() is not None, 60, answer)
    finish(p)
    path = "%s/slow_%d.json" % (tmp, pid)
    if check(os.path.exists(path), "the trace written during exit is lost"):
        check(len(steps_in(trace_at(path))) > 0, "empty trace")
    left = [f for f in os.listdir(tmp) if ".tmp" in f]
    check(left == [], "temporary files left: %s" % left)
    d.close()


def case_file_safety():
    """Items 5-7: a symlinked folder, a FIFO or another user's file at the
    trace's name: never followed nor written through; the trace is this
    user's, with its umask."""
    allowed = os.path.join(tmp, "allowed")
    outside = os.path.join(tmp, "outside")
    os.mkdir(allowed)
    os.mkdir(outside)
    os.symlink(outside, os.path.join(allowed, "link"))
    over = {"KINETO_ONDEMAND_TRACE_DIR": allowed}

    def run(text, check_done, preexec=None):
        d = Daemon(sockdir)
        e = dict(env)
        e.update(over)
        p = subprocess.Popen([OD_PROG, "steps", "300", "10"], env=e, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=preexec)
        pid = int(re.match(r"pid (\d+)", p.stdout.readline()).group(1))
        d.serve_until(lambda: check_done(pid), 30, once(text % {"pid": pid}))
        p.kill()
        _, err = p.communicate()
        d.close()
        return pid, err

    # 5: a folder that is a symbolic link.
    pid, err = run("ACTIVITIES_LOG_FILE=" + allowed + "/link/x.json\nACTIVITIES_DURATION_MSECS=50\n",
                   lambda pid: os.path.exists("%s/libkineto_activities_%d.json" % (allowed, pid)))
    check(os.listdir(outside) == [], "wrote through the symlinked folder: %s" % os.listdir(outside))
    check(os.path.exists("%s/libkineto_activities_%d.json" % (allowed, pid)), "no default trace")
    # 6: a FIFO at the name: not opened (the poller would block), the trace
    # goes to an unguessable name, the poller keeps polling.
    fifo_pid = []

    def fifo_pre():
        pass
    d = Daemon(sockdir)
    e = dict(env)
    e.update(over)
    p = subprocess.Popen([OD_PROG, "steps", "300", "10"], env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    pid = int(re.match(r"pid (\d+)", p.stdout.readline()).group(1))
    fifo = "%s/ff_%d.json" % (allowed, pid)
    os.mkfifo(fifo, 0o666)
    alt = lambda: [f for f in os.listdir(allowed) if f.startswith("ff_%d." % pid) and f.endswith(".json")
                   and f != os.path.basename(fifo)]
    d.serve_until(lambda: alt(), 30,
                  once("ACTIVITIES_LOG_FILE=%s/ff.json\nACTIVITIES_DURATION_MSECS=50\n" % allowed))
    check(alt() and len(alt()[0]) >= len("ff_%d.0123456789abcdef.json" % pid),
          "no trace beside the FIFO: %s" % os.listdir(allowed))
    more = d.serve_count(3, 10)
    check(len(more) >= 3, "the poller stopped polling after the FIFO: %d polls" % len(more))
    p.kill()
    p.communicate()
    d.close()
    # 7: another user's 0666 file at the name, umask 077: left alone; the
    # trace is ours, mode 0600.
    if os.geteuid() == 0:
        victim = {}

        def plant():
            os.umask(0o077)
        d = Daemon(sockdir)
        p = subprocess.Popen([OD_PROG, "steps", "300", "10"], env=e, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=plant)
        pid = int(re.match(r"pid (\d+)", p.stdout.readline()).group(1))
        planted = "%s/own_%d.json" % (allowed, pid)
        with open(planted, "w") as f:
            f.write("nobody's\n")
        os.chown(planted, 65534, 65534)
        os.chmod(planted, 0o666)
        alt = lambda: [f for f in os.listdir(allowed) if f.startswith("own_%d." % pid)
                       and f != os.path.basename(planted)]
        d.serve_until(lambda: alt(), 30,
                      once("ACTIVITIES_LOG_FILE=%s/own.json\nACTIVITIES_DURATION_MSECS=50\n" % allowed))
        p.kill()
        p.communicate()
        d.close()
        st = os.stat(planted)
        check(open(planted).read() == "nobody's\n" and st.st_uid == 65534, "the planted file changed")
        if check(alt(), "no trace beside the planted file"):
            st = os.stat(os.path.join(allowed, alt()[0]))
            check(st.st_uid == os.geteuid() and (st.st_mode & 0o777) == 0o600,
                  "trace owner %d mode %o" % (st.st_uid, st.st_mode & 0o777))
    # Our own earlier trace at the name is replaced, never written through
    # (a hard link to it keeps the old content).
    d = Daemon(sockdir)
    p = subprocess.Popen([OD_PROG, "steps", "300", "10"], env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    pid = int(re.match(r"pid (\d+)", p.stdout.readline()).group(1))
    mine = "%s/again_%d.json" % (allowed, pid)
    with open(mine, "w") as f:
        f.write("old\n")
    os.link(mine, mine + ".keep")
    d.serve_until(lambda: os.path.getsize(mine) > 4, 30,
                  once("ACTIVITIES_LOG_FILE=%s/again.json\nACTIVITIES_DURATION_MSECS=50\n" % allowed))
    p.kill()
    p.communicate()
    d.close()
    check(open(mine + ".keep").read() == "old\n", "wrote through our old trace")
    check(len(steps_in(trace_at(mine))) > 0, "the new trace at the name")
    check([f for f in os.listdir(allowed) if "tmp" in f] == [], "temporary files left")


def case_remote_keys():
    """Item 12: a request may set only the window, the file and the ids;
    the rest is the process's own, and durations are bounded."""
    d = Daemon(sockdir)
    answer = once(
        "ACTIVITIES_LOG_FILE=%s/keys.json\nACTIVITIES_DURATION_MSECS=99999999\n"
        "MAX_BUFFER_SIZE_MB=1\nSPILL_DIR=/etc\nDEFAULT_PLUGINS=true\nSPOOL_MAX_MB=1\n" % tmp)
    p, pid = start(["steps", "300", "10"], ACTRACE_DAEMON_MAX_DURATION_MS="300")
    path = "%s/keys_%d.json" % (tmp, pid)
    d.serve_until(lambda: os.path.exists(path), 30, answer)
    p.kill()
    _, err = p.communicate()
    if check(os.path.exists(path), "no trace"):
        s = steps_in(trace_at(path))
        check(0 < len(s) < 290, "the bounded window's steps: %d" % len(s))
    check("MAX_BUFFER_SIZE_MB" in err and "SPILL_DIR" in err and "left out" in err,
          "no warning about the keys left out: %r" % err[-1500:])
    check("bounded" in err, "no warning about the bound")
    d.close()


def case_opencl_ready():
    """Item 1: ACTRACE_USE_DAEMON=1 ACTRACE_PLUGINS=opencl is all it takes:
    a request after the program's first OpenCL calls gets its kernels."""
    demo = os.environ["ACT_TEST_CL_DEMO"]
    d = standin()
    e = dict(env)
    e.update({"LD_PRELOAD": os.environ["ACT_TEST_LIBACTRACE"], "ACTRACE_PLUGINS": "opencl",
              "ACTRACE_LOG": "info", "ASAN_OPTIONS": asan_preload()})
    e["CL_DEMO_SHOW_LAYERS"] = "1"  # on stderr once its OpenCL is set up
    p = subprocess.Popen([demo, "30000"], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    early = []
    for line in p.stderr:
        early.append(line)
        if line.startswith("OPENCL_LAYERS="):
            break
    if not early or not early[-1].startswith("OPENCL_LAYERS="):
        _, err = p.communicate()
        if p.returncode == 77:
            print("skip: no OpenCL platform: %r" % "".join(early))
            sys.exit(77)
        check(False, "cl_demo: %d %r" % (p.returncode, "".join(early)))
        return
    pid = p.pid
    check(wait_for(lambda: d.polled(pid), 10), "no registration")
    r = dyno(d, "--pid", str(pid), "--duration-ms", "300", "--log-file", tmp + "/cl.json")
    check(r.returncode == 0, "trigger: %r" % r.stdout)
    path = "%s/cl_%d.json" % (tmp, pid)
    ok = wait_for(lambda: os.path.exists(path), 20)
    check(p.poll() is None, "cl_demo ended before the trace was written")
    p.kill()
    _, err = p.communicate()
    if check(ok, "no trace: %r" % err[-1500:]):
        ev = trace_at(path)["traceEvents"]
        kernels = [x for x in ev if x.get("cat") == "kernel"]
        copies = [x for x in ev if x.get("cat") in ("gpu_memcpy", "gpu_memset")]
        check(kernels, "no kernels in the on-demand trace: cats %s" %
              sorted({str(x.get("cat")) for x in ev}))
        check(copies, "no copies in the on-demand trace")
    d.stop()


def doc_block(name):
    """docs/on-demand.md's block "<!-- example: on-demand NAME -->", run as
    written from the build folder (the abstract name "dynolog": ctest's
    resource lock keeps the cases apart)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text = open(os.path.join(root, "docs", "on-demand.md")).read()
    m = re.search(r"<!-- example: on-demand %s -->\s*```sh\n(.*?)```" % name, text, re.S)
    if not check(m, "docs/on-demand.md lost its %s block" % name):
        return None
    e = dict(os.environ)
    for k in ("ACTRACE_USE_DAEMON", "KINETO_USE_DAEMON", "KINETO_IPC_SOCKET_DIR",
              "KINETO_ONDEMAND_TRACE_DIR", "ACTRACE_PLUGINS", "SLURM_JOB_ID", "ACTRACE_LOG"):
        e.pop(k, None)
    build = os.path.dirname(os.path.dirname(os.path.abspath(ACTRACE)))
    r = subprocess.run(["bash", "-e", "-c", m.group(1)], cwd=build, env=e, capture_output=True,
                       text=True, timeout=100)
    sys.stderr.write(r.stdout[-3000:] + r.stderr[-3000:])
    check(r.returncode == 0, "the %s block: exit %d" % (name, r.returncode))
    return r


def case_doc_c():
    if "ACT_TEST_CL_DEMO" not in os.environ:
        print("skip: no OpenCL")
        sys.exit(77)
    r = doc_block("C")
    check(r and re.search(r"^\s*\d+\s+kernel", r.stdout, re.M), "no kernels in its summary")


def case_doc_python():
    r = doc_block("Python")
    check(r and r.stdout.strip().splitlines()[-1].isdigit() and
          int(r.stdout.strip().splitlines()[-1]) > 0, "no kernels in its trace")

try:
    globals()["case_" + CASE]()
finally:
    shutil.rmtree(tmp, ignore_errors=True)
if failures:
    print("%d check(s) failed" % len(failures), file=sys.stderr)
    sys.exit(1)
print("ok")
