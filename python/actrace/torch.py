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
(``_torch_ops.cpp`` beside this file). The wheel ships it prebuilt for the
torch it was built against (``_prebuilt/``, used when the running torch has
that version; ``ACTRACE_TORCH_PREBUILT=0`` ignores it); for any other torch
it is compiled on first use against the installed torch into a cache
(``$ACTRACE_CACHE_DIR``, default ``~/.cache/actrace/torch``), keyed by the
torch version and the shim's source. While torch.profiler is active, record_ops pauses: nothing is
recorded twice.

``actrace.torch.enable(plugins=None, config=None)`` goes the other way:
actrace's plugins run inside every torch.profiler session (a Kineto child
profiler, ``_torch_kineto.cpp``, built the same way), and their devices,
kernels, flows and counters land in torch.profiler's trace
(docs/pytorch.md).
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

__all__ = ["record_ops", "stop_ops", "ops_recorded", "ops_paused", "shim_path", "enable",
           "enabled_sessions", "kineto_shim_path"]

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
                         "apt-get install g++); actrace.torch builds a small shim against "
                         "the installed torch %s on first use" % (os.environ.get("CXX", ""),
                                                                 _torch.__version__))
    return cxx


def _cached(src_name, so_name):
    """(source, cached .so) of a shim: keyed by the torch version, torch's
    location, the shim's source and actrace's version."""
    src = os.path.join(_HERE, src_name)
    with open(src, "rb") as f:
        h = hashlib.sha256(f.read())
    h.update(_torch.__version__.encode())
    h.update(_torch.__file__.encode())
    h.update(_C._library()[0].encode())
    tag = "%s-%s" % (_torch.__version__.replace("+", "_"), h.hexdigest()[:16])
    return src, os.path.join(_cache_dir(), tag, so_name)


def shim_path():
    """Where the RecordFunction shim for this torch and this actrace lives
    (built or not)."""
    return _cached("_torch_ops.cpp", "actrace_torch_ops.so")


def kineto_shim_path():
    """Where the Kineto child-profiler shim (enable()) for this torch and
    this actrace lives (built or not)."""
    return _cached("_torch_kineto.cpp", "actrace_torch_kineto.so")


def _prebuilt(so_name):
    """The shim the wheel ships prebuilt (python/CMakeLists.txt), when it
    was built for this very torch version; else None."""
    if os.environ.get("ACTRACE_TORCH_PREBUILT", "1") == "0":
        return None
    d = os.path.join(_HERE, "_prebuilt")
    try:
        with open(os.path.join(d, "torch_version")) as f:
            built_for = f.read().strip()
    except OSError:
        return None
    p = os.path.join(d, so_name)
    return p if built_for == _torch.__version__ and os.path.isfile(p) else None


def _load_prebuilt(so_name):
    """The prebuilt shim, loaded as a cached one is (checked, by its open
    descriptor); None when there is none for this torch or it is refused
    (then the cache's is built and used, saying why)."""
    p = _prebuilt(so_name)
    if p is None:
        return None
    try:
        return _dlopen_checked(p)
    except BuildError as e:
        sys.stderr.write("%s\nactrace.torch: using a shim built here instead\n" % e)
        return None


def _build(src, out, what="the RecordFunction shim", extra=(), built_for=None):
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
    if built_for is not None:
        # The Kineto shim: built against torch's own Kineto headers, and
        # told which torch it is for (it refuses any other).
        kinc = os.path.join(tinc, "kineto")
        if not os.path.exists(os.path.join(kinc, "libkineto.h")):
            raise BuildError("actrace.torch: torch's Kineto headers are missing (%s has no "
                             "libkineto.h); torch wheels from PyPI ship them since 2.4"
                             % kinc)
        extra = list(extra) + ["-I", kinc, '-DACTRACE_TORCH_BUILT_FOR="%s"' % built_for]
    cmd = [cxx, "-O2", "-DNDEBUG", "-std=c++20", "-shared", "-fPIC", "-fvisibility=hidden",
           "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi, "-I", tinc, "-I", ainc] + list(extra) + [src,
           "-L", os.path.join(tdir, "lib"), "-lc10", "-ltorch_cpu",
           "-L", alib, "-l:libactrace.so.0",
           "-Wl,-rpath," + os.path.join(tdir, "lib"), "-Wl,-rpath," + alib, "-o", tmp]
    sys.stderr.write("actrace.torch: building %s against torch %s (once, into %s)\n"
                     % (what, _torch.__version__, os.path.dirname(out)))
    # TLS descriptors: a shim's thread_local is then reached without a
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


def _refuse(p, st, why):
    import stat
    raise BuildError("actrace.torch: refusing %s: %s (owner uid %d, mode %o); use a private "
                     "$ACTRACE_CACHE_DIR" % (p, why, st.st_uid, stat.S_IMODE(st.st_mode)))


def _private_group(gid):
    """A group only this user is in (user private groups, umask 002): its
    write bit lets nobody else in."""
    if gid != os.getegid():
        return False
    try:
        import grp
        import pwd
        members = grp.getgrgid(gid).gr_mem
        me = pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        return False
    return all(m == me for m in members)


def _check_open(path):
    """Open the shim at @p path once, without following a link, and check
    what was opened: a regular file owned by this user (or root) that
    nobody else may write, in folders that nobody else could have swapped
    (each folder up to / owned by this user or root, and writable by
    others only with the sticky bit, as /tmp). Returns the descriptor;
    the caller loads that very file (/proc/self/fd/N), so a file swapped
    in at the path after the check is never the one loaded."""
    import stat
    me = (0, os.geteuid())
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise BuildError("actrace.torch: refusing %s: %s (a link, or unreadable); use a "
                         "private $ACTRACE_CACHE_DIR" % (path, e.strerror))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            _refuse(path, st, "not a regular file")
        if st.st_uid not in me or st.st_mode & stat.S_IWOTH or \
                (st.st_mode & stat.S_IWGRP and not _private_group(st.st_gid)):
            _refuse(path, st, "owned by another user or writable by others")
        d = os.path.dirname(os.path.abspath(path))
        while True:
            dst = os.lstat(d)
            if stat.S_ISLNK(dst.st_mode):
                # A link in the path: check where it leads instead.
                d = os.path.realpath(d)
                continue
            if dst.st_uid not in me:
                _refuse(d, dst, "a folder owned by another user")
            if (dst.st_mode & stat.S_IWOTH or
                    (dst.st_mode & stat.S_IWGRP and not _private_group(dst.st_gid))) \
                    and not dst.st_mode & stat.S_ISVTX:
                _refuse(d, dst, "a folder writable by others, without the sticky bit")
            up = os.path.dirname(d)
            if up == d:
                break
            d = up
    except BaseException:
        os.close(fd)
        raise
    return fd


_fds = []  # descriptors of the loaded shims, kept open: their /proc/self/fd names stay unique


def _dlopen_checked(path):
    fd = _check_open(path)
    name = "/proc/self/fd/%d" % fd
    try:
        lib = ctypes.CDLL(name)
    except OSError as e:
        os.close(fd)
        raise BuildError("actrace.torch: cannot load %s (%s): %s" % (path, name, e))
    _fds.append(fd)
    return lib


def _load():
    global _lib
    if _lib is None:
        lib = _load_prebuilt("actrace_torch_ops.so")
        if lib is None:
            src, out = shim_path()
            if not os.path.exists(out):
                _build(src, out)
            lib = _dlopen_checked(out)
        lib.actrace_torch_enable.argtypes = [ctypes.c_int]
        lib.actrace_torch_enable.restype = ctypes.c_int
        lib.actrace_torch_ops.restype = ctypes.c_uint64
        lib.actrace_torch_paused.restype = ctypes.c_uint64
        lib.actrace_torch_moved.restype = ctypes.c_uint64
        lib.actrace_torch_short.restype = ctypes.c_uint64
        lib.actrace_torch_set_min_ns.argtypes = [ctypes.c_int64]
        lib.actrace_torch_set_min_ns.restype = None
        _lib = lib
    return _lib


_MIN_NS_MAX = 1000000000


def _min_ns(min_ns):
    """record_ops()' min_ns, else $ACTRACE_PYTHON_OPS_MIN_NS, else 1000."""
    where = "min_ns"
    if min_ns is None:
        v = os.environ.get("ACTRACE_PYTHON_OPS_MIN_NS", "")
        if not v:
            return 1000
        where = "ACTRACE_PYTHON_OPS_MIN_NS"
        min_ns = int(v, 10) if v.isdigit() and v.isascii() else v
    if isinstance(min_ns, bool) or not isinstance(min_ns, int) or \
            not 0 <= min_ns <= _MIN_NS_MAX:
        raise ValueError("actrace.torch: %s = %r is not a whole number of nanoseconds in "
                         "[0, %d]" % (where, min_ns, _MIN_NS_MAX))
    return min_ns


def record_ops(shapes=False, min_ns=None):
    """Record every aten op (and record_function region) from now on, in
    every thread, into the active actrace session. ``shapes=True`` adds
    "Input Dims" and "Input type" (the costly part). Calling it again
    changes nothing (the first ``shapes`` stays; stop_ops() first to
    change it). An op shorter than ``min_ns`` nanoseconds (default
    $ACTRACE_PYTHON_OPS_MIN_NS, else 1000) is counted (ops_short()), not
    recorded; 0 records every op; record_function regions are always
    recorded. Returns True when on, False under ACTRACE_DISABLE=1."""
    global _shapes
    if disabled:
        return False
    ns = _min_ns(min_ns)
    lib = _load()
    lib.actrace_torch_set_min_ns(ns)
    rc = lib.actrace_torch_enable(1 if shapes else 0)
    if rc < 0:
        raise RuntimeError("actrace.torch: torch refused the RecordFunction callback")
    if rc == 0:
        _shapes = bool(shapes)
    elif bool(shapes) != _shapes:
        sys.stderr.write("actrace.torch: record_ops() is already on with shapes=%s; "
                         "call stop_ops() first to change it\n" % _shapes)
    return True


def _record_nothing(thread_local=False, inputs=False):
    """Bench only: RecordFunction callbacks that record nothing (the floor
    of any RecordFunction-based tracer). ``thread_local``: the calling
    thread's callbacks, as torch.profiler registers its own; ``inputs``:
    asking for the ops' inputs (torch then boxes them), as shapes do."""
    global _shapes
    if _load().actrace_torch_enable((0x300 if thread_local else 0x100) | bool(inputs)) == 0:
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


def ops_short():
    """How many ops it left out because they took less than record_ops()'
    ``min_ns`` (1 us by default): HTA rounds every span in to whole
    microseconds, and one inside a microsecond stops its call-stack
    analyses (docs/python.md)."""
    return int(_lib.actrace_torch_short()) if _lib is not None else 0


def ops_moved():
    """How many ops it left out because they ended on another thread than
    they began on (TorchScript functions the interpreter resumed
    elsewhere after a wait): their spans would overlap that thread's."""
    return int(_lib.actrace_torch_moved()) if _lib is not None else 0


# ---- torch.profiler: actrace's plugins as a Kineto child profiler -----------

_klib = None
_enabled = None


def _plugin_dir():
    d = os.environ.get("ACTRACE_PLUGIN_DIR")
    if d and os.path.isabs(d):
        return d
    return os.path.join(_HERE, "lib", "actrace", "plugins")


def _default_plugins():
    """The default set of `actrace record`: every plugin of the plugin
    folder but the example."""
    try:
        names = sorted(f[:-3] for f in os.listdir(_plugin_dir())
                       if f.endswith(".so") and f != "example.so")
    except OSError:
        names = []
    return names


def _plugin_file(p):
    return p if os.path.isabs(p) else os.path.join(_plugin_dir(), p + ".so")


def _load_kineto(path=None, built_for=None):
    """The Kineto shim (built on first use). @p path and @p built_for are
    for tests: a shim at another path, built as if for another torch."""
    global _klib
    if path is None and _klib is not None:
        return _klib
    lib = None
    if path is None:
        lib = _load_prebuilt("actrace_torch_kineto.so")
        src, out = kineto_shim_path()
    else:
        src, out = os.path.join(_HERE, "_torch_kineto.cpp"), path
    if lib is None:
        if not os.path.exists(out):
            _build(src, out, what="the Kineto child-profiler shim",
                   built_for=built_for or _torch.__version__)
        lib = _dlopen_checked(out)
    lib.actrace_kineto_built_for.restype = ctypes.c_char_p
    lib.actrace_kineto_enable.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                          ctypes.c_char_p, ctypes.c_size_t]
    lib.actrace_kineto_enable.restype = ctypes.c_int
    lib.actrace_kineto_sessions.restype = ctypes.c_uint64
    if path is None:
        _klib = lib
    return lib


def enable(plugins=None, config=None, _shim=None, _built_for=None):
    """From now on, every ``torch.profiler.profile(...)`` session also runs
    actrace's plugins (``plugins``: names of installed plugins or paths;
    default: the set ``actrace record`` loads, every installed plugin but
    the example), and their kernels, copies, runtime calls, flows and
    counters appear in torch.profiler's trace. ``config``: actrace config
    (text, a dict or a path), for every session; a profile's
    ``experimental_config.custom_profiler_config`` adds to it; without
    either the plugins read ``$ACTRACE_CONFIG``. Idempotent (the first
    call's settings stay) and never undone. Returns True when on, False
    under ACTRACE_DISABLE=1, and False (saying what to install) when the
    shim cannot be built here (no C++ compiler, no torch headers): the
    profiles then run without actrace. Raises ValueError naming the
    installed plugins when a name is not one of them, RuntimeError when
    the shim was built for another torch."""
    global _enabled
    if disabled:
        return False
    from . import _config_text
    if plugins is None:
        plugins = _default_plugins()
    elif isinstance(plugins, (str, os.PathLike)):
        plugins = [os.fspath(plugins)]
    plugins = [os.fspath(p) for p in plugins]
    for p in plugins:
        if "\n" in p:
            raise ValueError("actrace.torch.enable: a plugin name has a newline: %r" % p)
    missing = [p for p in plugins if not os.path.isfile(_plugin_file(p))]
    if missing:
        try:
            have = sorted(f[:-3] for f in os.listdir(_plugin_dir()) if f.endswith(".so"))
        except OSError:
            have = []
        raise ValueError("actrace.torch.enable: no such plugin: %s (installed in %s: %s)"
                         % (", ".join(missing), _plugin_dir(), ", ".join(have) or "none"))
    text = _config_text(config)
    try:
        lib = _load_kineto(_shim, _built_for) if _shim else _load_kineto()
    except BuildError as e:
        if _shim:
            raise
        # torch.profiler runs as it would without actrace: say what to do.
        sys.stderr.write("%s\nactrace.torch: enable() is off: torch.profiler runs without "
                         "actrace's plugins\n" % e)
        return False
    if _enabled is not None and not _shim:
        if (plugins, text) != _enabled:
            sys.stderr.write("actrace.torch: enable() is already on with plugins %s; its "
                             "first settings stay\n" % (_enabled[0],))
        return True
    # The OpenCL backend is an ICD loader layer and the NVTX one an NVTX
    # injection library: the ICD loader reads OPENCL_LAYERS, NVTX reads
    # NVTX_INJECTION64_PATH at the process's first call, which may come
    # before the first torch.profiler session loads the plugin (whose init
    # would set them).
    for p in plugins:
        f = _plugin_file(p)
        if os.path.basename(f) == "nvtx.so" and os.path.exists(f):
            os.environ.setdefault("NVTX_INJECTION64_PATH", os.path.realpath(f))
        if os.path.basename(f) == "opencl.so" and os.path.exists(f):
            f = os.path.realpath(f)
            cur = os.environ.get("OPENCL_LAYERS", "")
            if f not in cur.split(":"):
                os.environ["OPENCL_LAYERS"] = f + (":" + cur if cur else "")
            # Queues the program creates before the first profile must
            # profile too, or their commands have no device times.
            os.environ.setdefault("ACTRACE_OPENCL_PROFILE_QUEUES", "1")
    err = ctypes.create_string_buffer(1024)
    rc = lib.actrace_kineto_enable(_torch.__version__.encode(), "\n".join(plugins).encode(),
                                   (text or "").encode(), err, len(err))
    if rc < 0:
        raise RuntimeError(err.value.decode(errors="replace"))
    if not _shim:
        _enabled = (plugins, text)
        _counters_out_of_tables()
    return True


class _NoCounters:
    """A torch profiler result whose events() leaves out counter samples:
    actrace's counter tracks (cpu, memory, ...) belong in the trace, not in
    key_averages()' table of ops, where each took a row at 0 us."""

    def __init__(self, r):
        self._r = r

    def events(self):
        return [e for e in self._r.events() if not _is_counter(e)]

    def __getattr__(self, name):
        return getattr(self._r, name)


def _is_counter(e):
    try:
        return "counter" in str(e.activity_type()).lower()
    except Exception:
        return False


def _counters_out_of_tables():
    try:
        from torch.autograd import profiler as p
        orig = p.profile._parse_kineto_results
    except (ImportError, AttributeError):
        return
    if getattr(orig, "_actrace", False):
        return

    def parse(self, result, *args, **kwargs):
        return orig(self, _NoCounters(result), *args, **kwargs)

    parse._actrace = True
    parse.__doc__ = orig.__doc__
    p.profile._parse_kineto_results = parse


def enabled_sessions():
    """How many torch.profiler sessions actrace's child profiler served."""
    return int(_klib.actrace_kineto_sessions()) if _klib is not None else 0
