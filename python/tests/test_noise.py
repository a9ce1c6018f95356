# SPDX-License-Identifier: MIT
"""What a PyTorch user sees on every run with actrace.torch.enable(): a
default profile on a machine without CUDA prints nothing from actrace;
counters stay out of key_averages(); a mistyped plugin name is an error
at enable(); no compiler turns enable() off with a message, and the
profile runs."""
import json

PROFILE = r'''
import sys, time
import torch
import actrace, actrace.torch
from torch.profiler import profile, ProfilerActivity, schedule
assert actrace.torch.enable(config="HOST_COUNTER_INTERVAL_MSECS = 5\n") is True
x = torch.randn(32, 32)
for cycle in range(2):
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(3):
            y = torch.relu(x @ x)
        time.sleep(0.03)
    prof.export_chrome_trace(sys.argv[1] + "%d.json" % cycle)
print(prof.key_averages().table(row_limit=8))
'''


def test_default_profile_is_quiet_and_counters_stay_in_the_trace(venv, tmp_path):
    base = str(tmp_path / "p")
    venv.run("import actrace.torch\nactrace.torch._load_kineto()\n")  # built once, said once
    r = venv.run(PROFILE, args=[base])
    # No CUDA driver here: cupti declines, silently.
    assert "actrace" not in r.stderr, r.stderr
    table = r.stdout
    rows = [l.split()[0] for l in table.splitlines()[3:] if l.strip() and not l.startswith("-")]
    assert not {"cpu", "memory", "page_faults", "context_switches"} & set(rows), table
    assert "aten::" in table, table
    with open(base + "1.json") as f:
        t = json.load(f)
    assert [e for e in t["traceEvents"] if e.get("ph") == "C"], "counters in the trace"
    notes = t["actrace"]["notes"]
    assert any("cupti" in n and "declined" in n for n in notes), notes


def test_decline_said_once_with_verbosity(venv, tmp_path):
    r = venv.run(PROFILE, args=[str(tmp_path / "v")], env=venv.env(ACTRACE_LOG="info"))
    lines = [l for l in r.stderr.splitlines() if "cupti" in l and "declined" in l]
    assert len(lines) == 1, r.stderr


def test_unknown_plugin_name_is_an_error_at_enable(venv):
    r = venv.run(r'''
import actrace.torch
try:
    actrace.torch.enable(plugins=["opencll"])
    print("no error")
except ValueError as e:
    print("ValueError:", e)
''')
    assert "ValueError:" in r.stdout and "opencll" in r.stdout, r.stdout + r.stderr
    assert "opencl" in r.stdout.split("installed", 1)[1], r.stdout


def test_no_compiler_turns_enable_off_and_the_profile_runs(venv, tmp_path):
    r = venv.run(r'''
import sys, torch
import actrace.torch
from torch.profiler import profile, ProfilerActivity
print("enabled", actrace.torch.enable(plugins=["host"]))
with profile(activities=[ProfilerActivity.CPU]) as prof:
    torch.ones(4) * 2
print("ops", len(prof.key_averages()))
''', env=venv.env(CXX="/nonexistent/c++", ACTRACE_CACHE_DIR=tmp_path / "cache",
                 ACTRACE_TORCH_PREBUILT=0))  # a torch the wheel has no shim for
    assert "enabled False" in r.stdout, r.stdout + r.stderr
    assert "no C++ compiler" in r.stderr and "apt-get install g++" in r.stderr, r.stderr
    assert "torch.profiler runs without" in r.stderr
    assert "ops 0" not in r.stdout
