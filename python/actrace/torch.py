# SPDX-License-Identifier: MIT
"""PyTorch's operators in actrace traces, without torch.profiler.

    import actrace, actrace.torch
    actrace.torch.record_ops(shapes=False)

Every aten op becomes a ``cpu_op`` span with Kineto's arg names ("Sequence
number", "External id", and with ``shapes=True`` "Input Dims" and "Input
type"); ``record_function`` regions become ``user_annotation`` spans. Each
op's correlation id is pushed while it runs, so device work that actrace's
backends record links to it.

It uses RecordFunction's global callback from a small C++ shim
(``_torch_ops.cpp`` beside this file), compiled on first use against the
installed torch into a cache (``$ACTRACE_CACHE_DIR``, default
``~/.cache/actrace/torch``), keyed by the torch version and the shim's
source. While torch.profiler is active, record_ops pauses: nothing is
recorded twice.
"""
import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import sysconfig

import torch as _torch

from . import _C, disabled

__all__ = ["record_ops", "stop_ops", "ops_recorded", "ops_paused", "shim_path"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_lib = None
_shapes = None


class BuildError(RuntimeError):
    """The shim could not be built; the message says what is missing."""


def _cache_dir():
    d = os.environ.get("ACTRACE_CACHE_DIR")
    if not d:
        d = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "actrace", "torch")
    return d


def _compiler():
    cxx = os.environ.get("CXX")
    if cxx:
        cxx = shutil.which(cxx)
    else:
        cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if not cxx:
        raise BuildError("actrace.torch: no C++ compiler found (CXX=%s; set CXX, or install one: "
                         "apt-get install g++); record_ops() builds a small shim against "
                         "the installed torch on first use" % os.environ.get("CXX", ""))
    return cxx


def shim_path():
    """Where the shim for this torch and this actrace lives (built or not)."""
    src = os.path.join(_HERE, "_torch_ops.cpp")
    with open(src, "rb") as f:
        h = hashlib.sha256(f.read())
    h.update(_torch.__version__.encode())
    h.update(_torch.__file__.encode())
    h.update(_C._library()[0].encode())
    tag = "%s-%s" % (_torch.__version__.replace("+", "_"), h.hexdigest()[:16])
    return src, os.path.join(_cache_dir(), tag, "actrace_torch_ops.so")


def _build(src, out):
    tdir = os.path.dirname(_torch.__file__)
    tinc = os.path.join(tdir, "include")
    if not os.path.exists(os.path.join(tinc, "ATen", "record_function.h")):
        raise BuildError("actrace.torch: torch's C++ headers are missing (%s has no "
                         "ATen/record_function.h); install a torch wheel from PyPI, which "
                         "ships them" % tinc)
    ainc = os.path.join(_HERE, "include")
    alib = os.path.join(_HERE, "lib")
    if not os.path.exists(os.path.join(ainc, "actrace", "actrace.h")):
        raise BuildError("actrace.torch: actrace's headers are missing (%s); reinstall "
                         "actrace" % ainc)
    cxx = _compiler()
    os.makedirs(os.path.dirname(out), mode=0o700, exist_ok=True)
    tmp = "%s.%d.tmp" % (out, os.getpid())
    abi = int(_torch._C._GLIBCXX_USE_CXX11_ABI)
    # -DNDEBUG as torch's own build: RecordFunction's debug-only asserts
    # would fire on ops recorded without inputs.
    cmd = [cxx, "-O2", "-DNDEBUG", "-std=c++20", "-shared", "-fPIC", "-fvisibility=hidden",
           "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi, "-I", tinc, "-I", ainc, src,
           "-L", os.path.join(tdir, "lib"), "-lc10", "-ltorch_cpu",
           "-L", alib, "-l:libactrace.so.0",
           "-Wl,-rpath," + os.path.join(tdir, "lib"), "-Wl,-rpath," + alib, "-o", tmp]
    sys.stderr.write("actrace.torch: building the RecordFunction shim against torch %s "
                     "(once, into %s)\n" % (_torch.__version__, os.path.dirname(out)))
    # TLS descriptors: the shim's one thread_local is then reached without a
    # __tls_get_addr call per op (x86-64; a compiler without them builds
    # without).
    gnu2 = ["-mtls-dialect=gnu2"] if platform.machine() in ("x86_64", "AMD64") else []
    r = subprocess.run(cmd[:1] + gnu2 + cmd[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0 and gnu2 and b"tls-dialect" in r.stdout:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise BuildError("actrace.torch: building the shim failed (%s):\n%s\ncommand: %s"
                         % (cxx, r.stdout.decode(errors="replace")[-4000:], " ".join(cmd)))
    os.replace(tmp, out)


def _check_owned(path):
    """Refuse to load code from a file or folder that someone else could
    have written (a shared cache folder, a hostile $ACTRACE_CACHE_DIR)."""
    import stat
    for p in (os.path.dirname(path), path):
        st = os.stat(p)
        if st.st_uid not in (0, os.geteuid()) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise BuildError("actrace.torch: refusing %s: owned by uid %d or writable by "
                             "others (mode %o); use a private $ACTRACE_CACHE_DIR"
                             % (p, st.st_uid, stat.S_IMODE(st.st_mode)))


def _load():
    global _lib
    if _lib is None:
        src, out = shim_path()
        if not os.path.exists(out):
            _build(src, out)
        _check_owned(out)
        lib = ctypes.CDLL(out)
        lib.actrace_torch_enable.argtypes = [ctypes.c_int]
        lib.actrace_torch_enable.restype = ctypes.c_int
        lib.actrace_torch_ops.restype = ctypes.c_uint64
        lib.actrace_torch_paused.restype = ctypes.c_uint64
        _lib = lib
    return _lib


def record_ops(shapes=False):
    """Record every aten op (and record_function region) from now on, in
    every thread, into the active actrace session. ``shapes=True`` adds
    "Input Dims" and "Input type" (the costly part). Calling it again
    changes nothing (the first ``shapes`` stays; stop_ops() first to
    change it). Returns True when on, False under ACTRACE_DISABLE=1."""
    global _shapes
    if disabled:
        return False
    rc = _load().actrace_torch_enable(1 if shapes else 0)
    if rc < 0:
        raise RuntimeError("actrace.torch: torch refused the RecordFunction callback")
    if rc == 0:
        _shapes = bool(shapes)
    elif bool(shapes) != _shapes:
        sys.stderr.write("actrace.torch: record_ops() is already on with shapes=%s; "
                         "call stop_ops() first to change it\n" % _shapes)
    return True


def _record_nothing():
    """Bench only: RecordFunction callbacks that record nothing (the floor
    of any RecordFunction-based tracer)."""
    global _shapes
    if _load().actrace_torch_enable(0x100) == 0:
        _shapes = False


def stop_ops():
    """Stop recording ops."""
    global _shapes
    if _lib is not None:
        _lib.actrace_torch_disable()
    _shapes = None


def ops_recorded():
    """How many ops the callback recorded so far (all threads)."""
    return int(_lib.actrace_torch_ops()) if _lib is not None else 0


def ops_paused():
    """How many ops it skipped because torch.profiler was active."""
    return int(_lib.actrace_torch_paused()) if _lib is not None else 0
