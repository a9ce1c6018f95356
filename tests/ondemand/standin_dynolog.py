#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A stand-in for the dynolog daemon, the project's own, for the tests.

It behaves as dynolog 0.6.0 does where that matters to a client (issue 33),
written from dynolog's observed behaviour and the protocol's description in
docs/on-demand.md, not from its code:

- Two hops: a TCP port for requests (an int32 length, then the JSON of
  setKinetOnDemandRequest, answered with processesMatched,
  activityProfilersTriggered, activityProfilersBusy), and the IPC fabric's
  datagram endpoint "dynolog" for the processes' polls.
- Registrations are keyed by the poll's pid list (the process and its
  ancestors): two pollers in one process are one registration, and the
  request goes to whichever polls first. A registration silent for 60 s is
  forgotten.
- A request's config is kept for each matching process (its job id, and a
  requested pid among its pids, or any process of the job), at most
  process_limit of them, with "\nREQUEST_TRACE_ID=<id>" appended after the
  request's text; a process that already has one pending counts as busy.
  It is handed over on the process's next poll that asks for activities
  (config type 2); a poll of type 0 gets an empty reply.
- A reply to an endpoint that has gone (ECONNREFUSED, ENOENT) is retried
  10 times, blocking, with doubling delays from `retry_ms`, while nothing
  else is served: the stall a vanished endpoint costs everyone. Each such
  failed reply is counted in `stalls`.

usage as a module: d = Dynolog(sockdir_or_None); d.start(); d.port; ...
d.stop(). As a program: standin_dynolog.py [--sockdir DIR] [--port P].
"""
import json
import os
import random
import select
import socket
import struct
import sys
import threading
import time

HDR = struct.Struct("=Q32s")
POLL = struct.Struct("=iiq")


class Registration:
    def __init__(self, pids, job, addr):
        self.pids, self.job, self.addr = pids, job, addr
        self.seen = time.monotonic()
        self.ctype = 2
        self.pending = None


class Dynolog:
    def __init__(self, sockdir=None, port=0, retry_ms=10, tries=10):
        self.sockdir, self.retry_ms, self.tries = sockdir, retry_ms, tries
        self.ipc = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if sockdir:
            path = os.path.join(sockdir, "dynolog")
            if os.path.exists(path):
                os.unlink(path)
            self.ipc.bind(path)
        else:
            self.ipc.bind(b"\0dynolog\0")  # the trailing NUL counted, as dynolog binds it
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("127.0.0.1", port))
        self.tcp.listen(8)
        self.port = self.tcp.getsockname()[1]
        self.regs = {}          # tuple(pids) -> Registration
        self.polls = []         # (time, pids, ctype, addr) of every poll
        self.stalls = 0         # replies to endpoints that had gone
        self.stall_s = 0.0      # time spent retrying them
        self.trace_ids = []
        self.lock = threading.Lock()
        self._stop = False
        self._thread = None

    # ---- the IPC side ------------------------------------------------------
    def _reply(self, addr, text):
        body = text.encode()
        msg = HDR.pack(len(body), b"req") + body
        delay = self.retry_ms / 1000.0
        for i in range(self.tries):
            try:
                self.ipc.sendto(msg, addr)
                return True
            except (FileNotFoundError, ConnectionRefusedError):
                if i == 0:
                    self.stalls += 1
                t0 = time.monotonic()
                time.sleep(delay)  # blocking: nobody is served meanwhile
                self.stall_s += time.monotonic() - t0
                delay *= 2
        return False

    def _on_poll(self, data, addr):
        if len(data) < HDR.size + POLL.size:
            return
        size, mtype = HDR.unpack_from(data)
        if size != len(data) - HDR.size or mtype.rstrip(b"\0") != b"req":
            return
        ctype, n, job = POLL.unpack_from(data, HDR.size)
        if n < 1 or len(data) != HDR.size + POLL.size + 4 * n:
            return
        pids = tuple(struct.unpack_from("=%di" % n, data, HDR.size + POLL.size))
        with self.lock:
            self.polls.append((time.monotonic(), pids, ctype, addr))
            r = self.regs.get(pids)
            if r is None:
                r = self.regs[pids] = Registration(pids, job, addr)
            r.addr, r.seen, r.ctype, r.job = addr, time.monotonic(), ctype, job
            text = ""
            if r.pending is not None and ctype & 2:
                text, r.pending = r.pending, None
        self._reply(addr, text)

    # ---- the TCP side -------------------------------------------------------
    def _on_request(self, conn):
        conn.settimeout(5)
        try:
            n, = struct.unpack("=i", conn.recv(4, socket.MSG_WAITALL))
            req = json.loads(conn.recv(n, socket.MSG_WAITALL))
        except (OSError, ValueError, struct.error):
            conn.close()
            return
        matched, triggered, busy = [], [], []
        if req.get("fn") == "setKinetOnDemandRequest":
            trace_id = str(random.getrandbits(63))
            self.trace_ids.append(trace_id)
            config = req.get("config", "") + "\nREQUEST_TRACE_ID=" + trace_id + "\n"
            want = set(req.get("pids") or [])
            limit = int(req.get("process_limit", 3))
            now = time.monotonic()
            with self.lock:
                for r in list(self.regs.values()):
                    if now - r.seen > 60:
                        del self.regs[r.pids]
                        continue
                    if r.job != int(req.get("job_id", 0)):
                        continue
                    if want and not want.intersection(r.pids):
                        continue
                    if len(matched) >= limit:
                        break
                    matched.append(r.pids[0])
                    if r.pending is not None:
                        busy.append(r.pids[0])
                    else:
                        r.pending = config
                        triggered.append(r.pids[0])
        resp = json.dumps({"processesMatched": matched,
                           "activityProfilersTriggered": triggered,
                           "activityProfilersBusy": len(busy)}).encode()
        try:
            conn.sendall(struct.pack("=i", len(resp)) + resp)
        except OSError:
            pass
        conn.close()

    # ---- the loop: one thread serves both, as dynolog's IPC monitor -------
    def _run(self):
        while not self._stop:
            r, _, _ = select.select([self.ipc, self.tcp], [], [], 0.05)
            if self.ipc in r:
                try:
                    data, addr = self.ipc.recvfrom(1 << 20)
                except OSError:
                    continue
                self._on_poll(data, addr)
            if self.tcp in r:
                conn, _ = self.tcp.accept()
                self._on_request(conn)

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop = True
        if self._thread:
            self._thread.join()
        self.ipc.close()
        self.tcp.close()
        if self.sockdir:
            try:
                os.unlink(os.path.join(self.sockdir, "dynolog"))
            except OSError:
                pass

    def polled(self, pid):
        """The polls whose process (first pid) is pid."""
        with self.lock:
            return [p for p in self.polls if p[1][0] == pid]


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sockdir")
    ap.add_argument("--port", type=int, default=1778)
    a = ap.parse_args()
    d = Dynolog(a.sockdir, a.port).start()
    print("stand-in dynolog: port %d, endpoint %s" % (d.port, a.sockdir or "@dynolog"),
          flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        d.stop()
        sys.exit(0)
