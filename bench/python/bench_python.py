# SPDX-License-Identifier: MIT
"""Costs of the Python side (`make bench` runs it in a venv with the wheel
installed; bench/python/run.sh). Prints one line per case and a JSON line
per section, in ns, all measured in this same run:

 1. annotation: an `actrace.annotate` context-manager span (new object per
    span, as users write it, and one reused object), the decorator's call
    path, against contextlib.nullcontext(), torch's record_function with no
    profiler, and nvtx.annotate with no tool attached. Target: <= 300 ns.
 2. ops: actrace.torch.record_ops() per aten op on a small MLP and a small
    conv net (batch 1, 200 training iterations), against the untraced run
    and torch.profiler.profile(activities=[CPU]) with and without
    record_shapes. ns added per op = (time - untraced) / ops, timed two
    ways in the same runs: the training loop alone, and the whole run as
    a user pays it, from the tracer's start to its trace written
    (torch.profiler: its stop, post-processing and export_chrome_trace;
    record_ops: the session's start, stop and write, to a file). Target:
    at most half of torch.profiler's, in both settings, checked on the
    whole run (the cost of getting a trace); the loop alone is printed
    beside it. ACT_BENCH_BASE_SHIM=path/to/actrace_torch_ops.so adds
    another build of the shim (an older source) as a baseline in the
    same run.
"""
import contextlib
import gc
import json
import os
import sys
import tempfile
import time

import actrace

N = int(os.environ.get("ACT_BENCH_SPANS", "200000"))
ITERS = int(os.environ.get("ACT_BENCH_ITERS", "200"))
REPEAT = 5
# ACT_BENCH_CLOCK=thread: the calling thread's CPU time (excludes the
# library's page-prefaulting thread); process (default): all threads.
_clock = time.thread_time_ns if os.environ.get("ACT_BENCH_CLOCK") == "thread" \
    else time.process_time_ns
OPS_REPEAT = int(os.environ.get("ACT_BENCH_OPS_REPEAT", "7"))


def best(fn, repeat=REPEAT):
    out = []
    for _ in range(repeat):
        gc.collect()
        t = time.thread_time_ns()  # CPU time: the machine may be shared
        fn()
        out.append(time.thread_time_ns() - t)
    return min(out)


def spans():
    import nvtx
    import torch
    res = {}

    def loop_empty():
        for _ in range(N):
            pass

    def loop_with(factory):
        # The same loop for every context manager: a local name, one
        # argument, an empty body.
        def run():
            f = factory
            for _ in range(N):
                with f("span"):
                    pass
        return run

    loop_null = loop_with(contextlib.nullcontext)
    loop_annotate = loop_with(actrace.annotate)

    reused = actrace.annotate("span")

    def loop_reused():
        for _ in range(N):
            with reused:
                pass

    @actrace.annotate("decorated")
    def deco():
        pass

    def plain():
        pass

    def loop_deco():
        for _ in range(N):
            deco()

    def loop_plain():
        for _ in range(N):
            plain()

    loop_rf = loop_with(torch.autograd.profiler.record_function)
    loop_nvtx = loop_with(nvtx.annotate)

    base = best(loop_empty)
    with actrace.session(config={"MAX_BUFFER_SIZE_MB": 1024}, output=os.devnull):
        for name, fn in (("nullcontext", loop_null), ("actrace.annotate", loop_annotate),
                         ("actrace.annotate (reused object)", loop_reused),
                         ("torch record_function (no profiler)", loop_rf),
                         ("nvtx.annotate (no tool)", loop_nvtx)):
            res[name] = (best(fn) - base) / N
        res["actrace decorator (minus a plain call)"] = (best(loop_deco) - best(loop_plain)) / N
    # Without a session: what an annotation costs when nothing records.
    res["actrace.annotate, no session"] = (best(loop_annotate) - base) / N
    for k, v in res.items():
        print("span  %-42s %8.1f ns" % (k, v))
    print(json.dumps({"bench": "python_spans", "spans": N, "ns_per_span": res}))
    return res


def ops():
    import torch
    import actrace.torch
    from torch.profiler import ProfilerActivity, profile
    torch.set_num_threads(1)
    torch.manual_seed(0)
    models = {
        "mlp": (torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 10)), torch.randn(1, 64)),
        "conv": (torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
                                     torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 16, 3),
                                     torch.nn.ReLU(), torch.nn.Flatten(),
                                     torch.nn.Linear(16 * 5 * 5, 10)), torch.randn(1, 3, 16, 16)),
    }
    trace = os.path.join(tempfile.mkdtemp(prefix="actrace-bench-"), "trace.json")
    base_lib = None
    if os.environ.get("ACT_BENCH_BASE_SHIM"):
        import ctypes
        base_lib = ctypes.CDLL(os.environ["ACT_BENCH_BASE_SHIM"])
    out = {}
    for mname, (model, x) in models.items():
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        y = torch.zeros(1, 10)

        def train():
            for _ in range(ITERS):
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()

        train()  # warm up

        @contextlib.contextmanager
        def with_ops(shapes):
            with actrace.session(config={"MAX_BUFFER_SIZE_MB": 1024}, output=trace):
                actrace.torch.record_ops(shapes=shapes)
                try:
                    yield
                finally:
                    actrace.torch.stop_ops()

        @contextlib.contextmanager
        def with_floor():
            actrace.torch._record_nothing()
            try:
                yield
            finally:
                actrace.torch.stop_ops()

        @contextlib.contextmanager
        def with_base(shapes):
            # ACT_BENCH_BASE_SHIM: another build of the shim (an older
            # _torch_ops.cpp), measured in the same run as a baseline.
            with actrace.session(config={"MAX_BUFFER_SIZE_MB": 1024}, output=trace):
                base_lib.actrace_torch_enable(1 if shapes else 0)
                try:
                    yield
                finally:
                    base_lib.actrace_torch_disable()

        @contextlib.contextmanager
        def with_prof(shapes):
            with profile(activities=[ProfilerActivity.CPU], record_shapes=shapes) as p:
                yield
            p.export_chrome_trace(trace)

        modes = {
            "untraced": contextlib.nullcontext,
            "RecordFunction callback recording nothing": with_floor,
            "actrace record_ops": lambda: with_ops(False),
            "actrace record_ops(shapes=True)": lambda: with_ops(True),
            "torch.profiler CPU": lambda: with_prof(False),
            "torch.profiler CPU record_shapes": lambda: with_prof(True),
        }
        if base_lib is not None:
            modes["base shim record_ops"] = lambda: with_base(False)
            modes["base shim record_ops(shapes=True)"] = lambda: with_base(True)
        # Round-robin, best of OPS_REPEAT, in process CPU time: the machine
        # may be shared, and wall time then measures the neighbours.
        # Each run times the loop alone and the whole run (entering the
        # tracer to its trace written); an untraced run's two are equal
        # but for the empty context.
        loop = {k: [] for k in modes}
        whole = {k: [] for k in modes}
        # Ops seen: recorded, and counted for being under a microsecond.
        before = actrace.torch.ops_recorded() + actrace.torch.ops_short()
        for _ in range(OPS_REPEAT):
            for k, make in modes.items():
                gc.collect()
                t0 = _clock()
                with make():
                    t1 = _clock()
                    train()
                    loop[k].append(_clock() - t1)
                whole[k].append(_clock() - t0)
        nops = (actrace.torch.ops_recorded() + actrace.torch.ops_short() - before) / (
            2 * OPS_REPEAT * ITERS)
        res = {}
        for what, times in (("loop", loop), ("whole", whole)):
            med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
            low = {k: min(v) for k, v in times.items()}
            # Above the untraced loop in both: what tracing added.
            res[what] = ({k: (v - min(loop["untraced"])) / (ITERS * nops) for k, v in low.items()},
                         {k: (v - med["untraced"]) / (ITERS * nops) for k, v in med.items()})
        print("ops   %s: %.0f ops per iteration, %d iterations, untraced %.1f us/iteration"
              % (mname, nops, ITERS, min(loop["untraced"]) / ITERS / 1e3))
        out[mname] = {"ops_per_iter": nops}
        for what, label in (("whole", "whole run"), ("loop", "loop alone")):
            per, per_med = res[what]
            for k, v in per.items():
                if k != "untraced":
                    print("ops   %-5s %-10s %-41s %8.0f ns added per op (medians: %.0f)"
                          % (mname, label, k, v, per_med[k]))
            ratio = per["actrace record_ops"] / per["torch.profiler CPU"]
            ratio_s = (per["actrace record_ops(shapes=True)"] /
                       per["torch.profiler CPU record_shapes"])
            print("ops   %-5s %-10s record_ops / torch.profiler: %.2f; with shapes: %.2f%s"
                  % (mname, label, ratio, ratio_s,
                     " (the target, <= 0.5)" if what == "whole" else ""))
            if base_lib is not None:
                print("ops   %-5s %-10s record_ops / base shim: %.2f; with shapes: %.2f"
                      % (mname, label, per["actrace record_ops"] / per["base shim record_ops"],
                         per["actrace record_ops(shapes=True)"] /
                         per["base shim record_ops(shapes=True)"]))
            key = "" if what == "loop" else "_whole"
            out[mname].update({"ns_added_per_op" + key: per,
                               "ns_added_per_op_medians" + key: per_med,
                               "ratio" + key: ratio, "ratio_shapes" + key: ratio_s})
    print(json.dumps({"bench": "python_ops", "iterations": ITERS, "models": out}))


def disabled_spans():
    """ACTRACE_DISABLE=1, in a child process (the flag is read at import)."""
    import subprocess
    code = ("import time, actrace\nassert actrace.disabled\nN=%d\n"
            "def run(f):\n    t = time.thread_time_ns()\n    for _ in range(N):\n"
            "        with f('span'):\n            pass\n    return time.thread_time_ns() - t\n"
            "def empty():\n    t = time.thread_time_ns()\n    for _ in range(N):\n        pass\n"
            "    return time.thread_time_ns() - t\n"
            "print((min(run(actrace.annotate) for _ in range(5)) - min(empty() for _ in range(5))) / N)\n"
            % N)
    env = dict(os.environ, ACTRACE_DISABLE="1")
    ns = float(subprocess.check_output([sys.executable, "-c", code], env=env, text=True))
    print("span  %-42s %8.1f ns" % ("actrace.annotate, ACTRACE_DISABLE=1", ns))
    print(json.dumps({"bench": "python_spans_disabled", "spans": N, "ns_per_span": ns}))


if __name__ == "__main__":
    spans()
    disabled_spans()
    if "--spans-only" not in sys.argv:
        ops()
