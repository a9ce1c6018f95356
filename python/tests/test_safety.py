# SPDX-License-Identifier: MIT
"""The package under threads, fork and hostile files (issue 34's defects):
each test here failed on 75803da."""
import json
import os
import shutil
import stat

import pytest

from conftest import WORK, events


def _names(t, name):
    return [e for e in t["traceEvents"] if e.get("name") == name]


def test_write_vs_discard_on_another_thread(venv, tmp_path):
    """write() runs the library's write with the GIL released; a _discard()
    or start() on another thread meanwhile waits for it instead of freeing
    the session under it (75803da: SIGSEGV)."""
    out = tmp_path / "w.json"
    r = venv.run(r'''
import sys, threading, time
import actrace
from actrace import _C
out = sys.argv[1]
for rnd in range(4):
    actrace.start(output=out)
    for i in range(150000):
        actrace.instant("x", i=i)
    actrace.stop()
    t = threading.Thread(target=actrace.write)
    t.start()
    time.sleep(0.002 * rnd)
    if rnd % 2:
        _C._discard()
    else:
        try:
            actrace.start(output=out)   # waits for the write, then starts anew
            actrace.stop()
        except RuntimeError:
            pass
        _C._discard()
    t.join()
print("survived")
''', args=[str(out)], check=False)
    assert r.returncode == 0 and "survived" in r.stdout, (r.returncode, r.stderr[-3000:])


def test_annotate_shared_by_many_threads(venv, tmp_path):
    """One annotate object used by 6 threads at once, exits in an order
    that left a stale slot (the 4th slot's thread leaving first): every use
    is recorded, and later uses still are (75803da: after 4 rounds 0 of
    100)."""
    out = tmp_path / "a.json"
    venv.run(r'''
import sys, threading
import actrace
shared = actrace.annotate("shared")
N, ROUNDS = 6, 5
order = [3, 4, 5, 0, 1, 2]
with actrace.session(output=sys.argv[1]):
    for rnd in range(ROUNDS):
        entered = [threading.Event() for _ in range(N)]
        leave = [threading.Event() for _ in range(N)]
        left = [threading.Event() for _ in range(N)]
        def w(k):
            if k:
                entered[k - 1].wait()
            with shared:
                entered[k].set()
                leave[k].wait()
            left[k].set()
        ts = [threading.Thread(target=w, args=(k,)) for k in range(N)]
        for t in ts:
            t.start()
        entered[N - 1].wait()
        for k in order:
            leave[k].set()
            left[k].wait()
        for t in ts:
            t.join()
    for i in range(100):
        with shared:
            pass
''', args=[str(out)])
    t = venv.check_trace(str(out))
    spans = _names(t, "shared")
    assert len(spans) == 6 * 5 + 100, len(spans)


def test_forked_child_does_not_write_the_parents_session(venv, tmp_path):
    """A forked child that ends normally runs the exit hook; only the
    process that started the session writes it (75803da: the child's stale
    copy replaced the parent's trace, losing the 100 events after the
    fork)."""
    out = tmp_path / "f.json"
    venv.run(r'''
import os, sys
import actrace
actrace.start(output=sys.argv[1])
actrace.instant("before-fork")
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w)
    os.read(r, 1)          # until the parent wrote its trace
    assert actrace.write() is None
    sys.exit(0)            # a normal exit: atexit hooks run
os.close(r)
for i in range(100):
    actrace.instant("after-fork")
actrace.stop()
assert actrace.write() == sys.argv[1]
os.write(w, b"x")
_, st = os.waitpid(pid, 0)
assert os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0, st
''', args=[str(out)])
    t = venv.check_trace(str(out))
    assert len(_names(t, "after-fork")) == 100
    assert len(_names(t, "before-fork")) == 1


@pytest.mark.parametrize("where", ["missing-dir", "a-dir"])
def test_session_checks_its_output_at_start(venv, tmp_path, where):
    """session() fails before the block runs when the trace cannot be
    written there (75803da: only at the end, after the work)."""
    target = tmp_path / "nope" / "t.json" if where == "missing-dir" else tmp_path
    r = venv.run(r'''
import sys
import actrace
try:
    with actrace.session(output=sys.argv[1]):
        print("BODY RAN")
except OSError as e:
    print("refused:", type(e).__name__, e)
print("state", actrace._C._state())
with actrace.session(output=sys.argv[2]) as s:   # and a good one works after
    actrace.instant("ok")
print("wrote", s.path)
''', args=[str(target), str(tmp_path / "good.json")])
    assert "BODY RAN" not in r.stdout and "refused:" in r.stdout, r.stdout + r.stderr
    assert ("FileNotFoundError" if where == "missing-dir" else "IsADirectoryError") in r.stdout
    assert "state none" in r.stdout
    assert len(_names(venv.check_trace(str(tmp_path / "good.json")), "ok")) == 1


# ---- the shim cache: open once, check the open file, load that file -------

SHIM = r'''
import os, shutil, sys
import actrace.torch as at
src = at.kineto_shim_path()[1]
at._load_kineto()          # built (or found) in the test cache
print("SHIM", src)
'''


@pytest.fixture(scope="module")
def shim(venv):
    r = venv.run(SHIM, env=venv.env(ACTRACE_TORCH_PREBUILT=0))  # the cache's, built here
    return r.stdout.split("SHIM ", 1)[1].strip()


def _try_load(venv, path, pre=""):
    return venv.run(r'''
import sys
import actrace.torch as at
%s
try:
    lib = at._load_kineto(path=sys.argv[1])
    print("LOADED", bool(lib.actrace_kineto_built_for()))
except at.BuildError as e:
    print("REFUSED", e)
''' % pre, args=[path], check=False)


def test_shim_link_is_refused(venv, shim, tmp_path):
    """A link at the cache path is not followed (75803da stat()ed the
    link's target and loaded it)."""
    d = tmp_path / "c"
    d.mkdir(mode=0o700)
    shutil.copy(shim, d / "real.so")
    os.symlink(d / "real.so", d / "link.so")
    r = _try_load(venv, str(d / "link.so"))
    assert "REFUSED" in r.stdout and "link" in r.stdout, r.stdout + r.stderr
    r = _try_load(venv, str(d / "real.so"))
    assert "LOADED True" in r.stdout, r.stdout + r.stderr


def test_shim_in_a_folder_others_could_swap(venv, shim, tmp_path):
    """A folder above the cache that others may write (no sticky bit) lets
    them rename the cache away: refused (75803da checked only the file
    and its own folder)."""
    top = tmp_path / "top"
    d = top / "cache"
    d.mkdir(parents=True)
    os.chmod(d, 0o700)
    shutil.copy(shim, d / "s.so")
    os.chmod(top, 0o777)
    r = _try_load(venv, str(d / "s.so"))
    assert "REFUSED" in r.stdout and "folder writable by others" in r.stdout, r.stdout + r.stderr
    os.chmod(top, 0o1777)   # sticky, as /tmp: nobody else may rename our folder
    r = _try_load(venv, str(d / "s.so"))
    assert "LOADED True" in r.stdout, r.stdout + r.stderr


def test_shim_owned_by_another_user(venv, shim, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    d = tmp_path / "o"
    d.mkdir(mode=0o700)
    shutil.copy(shim, d / "s.so")
    os.chown(d / "s.so", 4242, -1)
    r = _try_load(venv, str(d / "s.so"))
    assert "REFUSED" in r.stdout and "uid 4242" in r.stdout, r.stdout + r.stderr


def test_shim_swapped_after_the_check_is_not_loaded(venv, shim, tmp_path):
    """The file is swapped between the check and the load, as another user
    who can write the folder would (a race, made certain here): the file
    loaded is the one checked (75803da loaded by path again: the swapped
    one)."""
    d = tmp_path / "s"
    d.mkdir(mode=0o700)
    shutil.copy(shim, d / "s.so")
    evil = d / "evil.so"
    import ctypes.util
    libm = ctypes.util.find_library("m")
    shutil.copy("/lib/x86_64-linux-gnu/" + libm if not os.path.isabs(libm) else libm, evil) \
        if os.path.exists("/lib/x86_64-linux-gnu/" + libm) else pytest.skip("no libm")
    pre = r'''
import os
name = "_check_open" if hasattr(at, "_check_open") else "_check_owned"
orig = getattr(at, name)
def swapping(p, *a):
    r = orig(p, *a)
    os.link(%r, p + ".new")
    os.replace(p + ".new", p)
    return r
setattr(at, name, swapping)
''' % str(evil)
    r = _try_load(venv, str(d / "s.so"), pre)
    assert "LOADED True" in r.stdout, r.stdout + r.stderr


# ---- the shims under fork and an application's logger --------------------

def test_fork_while_the_ops_shim_thread_list_is_locked(venv, tmp_path):
    """A fork while another thread holds the ops shim's thread-list mutex
    (here: a thread calling ops_recorded() in a loop, the GIL released by
    ctypes) left it locked in the child, whose first new thread to run an
    op hung (confirmed: 75803da hung in some of 150 forks). The shim takes
    the mutex around fork now."""
    r = venv.run(r'''
import os, sys, threading, time
import torch
import actrace, actrace.torch
torch.set_num_threads(1)
actrace.start(output=sys.argv[1])
actrace.torch.record_ops()
torch.ones(2) + 1
lib = actrace.torch._lib
stop = False
def spin():
    while not stop:
        lib.actrace_torch_ops()
t = threading.Thread(target=spin)
t.start()
hung = 0
for i in range(150):
    pid = os.fork()
    if pid == 0:
        w = threading.Thread(target=lambda: torch.ones(2) + 1)
        w.start()
        w.join()
        os._exit(0)
    deadline = time.monotonic() + 20
    while True:
        p, st = os.waitpid(pid, os.WNOHANG)
        if p:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            hung += 1
            break
        time.sleep(0.002)
stop = True
t.join()
actrace.torch.stop_ops()
print("hung", hung)
''', args=[str(tmp_path / "fork.json")])
    assert "hung 0" in r.stdout, r.stdout + r.stderr


def test_profile_keeps_the_applications_logger(venv, tmp_path):
    """The Kineto shim's log capture forwards to the logger it found and is
    never reset: an application's act_log_set() callback gets libactrace's
    messages during a profile and after it (75803da replaced it during
    each capture and reset it to the default at the end)."""
    r = venv.run(r'''
import ctypes, os, sys
import torch
import actrace, actrace.torch
from torch.profiler import profile, ProfilerActivity
lib = ctypes.CDLL(os.path.join(os.path.dirname(actrace.__file__), "lib", "libactrace.so.0"))
got = []
FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)
cb = FN(lambda u, lvl, msg: got.append(msg.decode()))
lib.act_log_set(cb, None)
actrace.torch.enable(plugins=["host"], config="NO_SUCH_KEY_FOR_TEST = 1\n")
with profile(activities=[ProfilerActivity.CPU]):
    torch.ones(4) * 2
lib.act_log.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p]
lib.act_log(2, b"%s", b"after the profile")
print("GOT", got)
''')
    got = r.stdout.split("GOT", 1)[1]
    assert "after the profile" in got, r.stdout + r.stderr
    assert "NO_SUCH_KEY_FOR_TEST" in got, r.stdout + r.stderr
