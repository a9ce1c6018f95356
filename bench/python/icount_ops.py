# SPDX-License-Identifier: MIT
"""Instructions per aten op under callgrind: record_ops() against the
untraced run, the do-nothing RecordFunction callback and torch.profiler,
with and without shapes. Instruction counts do not move with the load of
a shared machine, where bench_python.py's times do. Not run by `make
bench` (each setting is one valgrind run of a minute or more); by hand,
with the venv bench/python/run.sh makes:

    python bench/python/icount_ops.py [ITERS] [mlp|conv] [SETTING...]

Settings: untraced, floor (a global callback that records nothing),
floortl (the same as the calling thread's callback, as torch.profiler
registers its own), floors (floor asking for the inputs, as shapes do), ops, shapes, prof, profs (torch.profiler, with
record_shapes) count the training loop alone; opsw, shapesw, profw and
profsw count the whole run, from the tracer's start to its trace written
(default: the loop settings; name the whole-run ones).

Each setting runs in its own process; callgrind's instrumentation is on
only around ITERS training iterations (callgrind_control -i on/off), so
import and warm-up are not counted. Prints instructions per op above the
untraced run. ACT_BENCH_BASE_SHIM=path/to/actrace_torch_ops.so adds the
setting "base" (another build of the shim).
"""
import os
import re
import subprocess
import sys
import tempfile

SETTINGS = ["untraced", "floor", "floortl", "floors", "ops", "shapes", "prof", "profs"]
# The whole run as a user pays it: from the tracer's start to its trace
# written (torch.profiler's stop, post-processing and export_chrome_trace;
# record_ops' session start, stop and write), after one such run as a
# warm-up (one-time initialisation is not counted for either).
WHOLE = ["opsw", "shapesw", "profw", "profsw"]


def child(mode, iters, mname):
    import contextlib
    import torch
    import actrace
    import actrace.torch
    from torch.profiler import ProfilerActivity, profile
    torch.set_num_threads(1)
    torch.manual_seed(0)
    if mname == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 10))
        x = torch.randn(1, 64)
    else:
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(),
                                    torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 16, 3),
                                    torch.nn.ReLU(), torch.nn.Flatten(),
                                    torch.nn.Linear(16 * 5 * 5, 10))
        x = torch.randn(1, 3, 16, 16)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    y = torch.zeros(1, 10)

    def train(n):
        for _ in range(n):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    train(3)
    if mode in WHOLE:
        return whole(mode, iters, train)
    ctx = contextlib.nullcontext()
    session = actrace.session(config={"MAX_BUFFER_SIZE_MB": 256}, output=os.devnull)
    if mode in ("floor", "floortl", "floors"):
        actrace.torch._record_nothing(thread_local=mode == "floortl", inputs=mode == "floors")
    elif mode in ("ops", "shapes"):
        ctx = session
        actrace.torch.record_ops(shapes=mode == "shapes")
    elif mode == "base":
        import ctypes
        ctx = session
        ctypes.CDLL(os.environ["ACT_BENCH_BASE_SHIM"]).actrace_torch_enable(0)
    elif mode == "prof":
        ctx = profile(activities=[ProfilerActivity.CPU])
    elif mode == "profs":
        ctx = profile(activities=[ProfilerActivity.CPU], record_shapes=True)
    with ctx:
        train(2)
        pid = str(os.getpid())
        subprocess.run(["callgrind_control", "-i", "on", pid], stdout=subprocess.DEVNULL)
        train(iters)
        subprocess.run(["callgrind_control", "-i", "off", pid], stdout=subprocess.DEVNULL)
        # Ops per iteration, counted outside the measured part.
        if mode == "ops":
            n0 = actrace.torch.ops_recorded() + actrace.torch.ops_short()
            train(1)
            print("OPS", actrace.torch.ops_recorded() + actrace.torch.ops_short() - n0)
    sys.stdout.flush()
    os._exit(0)


def whole(mode, iters, train):
    import actrace
    import actrace.torch
    from torch.profiler import ProfilerActivity, profile
    path = os.path.join(tempfile.mkdtemp(), "trace.json")
    shapes = mode in ("shapesw", "profsw")

    def run(n):
        if mode in ("opsw", "shapesw"):
            with actrace.session(config={"MAX_BUFFER_SIZE_MB": 256}, output=path):
                actrace.torch.record_ops(shapes=shapes)
                train(n)
                actrace.torch.stop_ops()
        else:
            with profile(activities=[ProfilerActivity.CPU], record_shapes=shapes) as p:
                train(n)
            p.export_chrome_trace(path)

    run(1)
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "-i", "on", pid], stdout=subprocess.DEVNULL)
    run(iters)
    subprocess.run(["callgrind_control", "-i", "off", pid], stdout=subprocess.DEVNULL)
    sys.stdout.flush()
    os._exit(0)


def main():
    args = sys.argv[1:]
    iters = int(args.pop(0)) if args and args[0].isdigit() else 10
    mname = args.pop(0) if args and args[0] in ("mlp", "conv") else "mlp"
    settings = args or SETTINGS + (["base"] if os.environ.get("ACT_BENCH_BASE_SHIM") else [])
    if "untraced" not in settings:
        settings = ["untraced"] + settings
    if "ops" not in settings:
        settings.append("ops")  # counts the ops
    total, nops = {}, None
    with tempfile.TemporaryDirectory() as d:
        for s in settings:
            out = os.path.join(d, "cg." + s)
            r = subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                                "--callgrind-out-file=" + out, sys.executable, __file__,
                                "--child", s, str(iters), mname],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            m = re.search(r"Collected : (\d+)", r.stderr)
            if not m:
                sys.exit("icount_ops: %s: no count from callgrind:\n%s" % (s, r.stderr[-3000:]))
            total[s] = int(m.group(1))
            m = re.search(r"OPS (\d+)", r.stdout)
            if m:
                nops = int(m.group(1))
    print("icount %s: %d ops per iteration, %d iterations" % (mname, nops, iters))
    per = {s: (total[s] - total["untraced"]) / (nops * iters) for s in settings}
    for s in settings:
        if s != "untraced":
            print("icount %-5s %-8s %7.0f instructions added per op" % (mname, s, per[s]))
    for a, b, what in (("ops", "prof", "loop alone"), ("shapes", "profs", "loop alone"),
                       ("opsw", "profw", "whole run"), ("shapesw", "profsw", "whole run")):
        if a in per and b in per:
            print("icount %-5s %s / %s %.2f (%s)" % (mname, a, b, per[a] / per[b], what))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()
