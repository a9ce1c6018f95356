# SPDX-License-Identifier: MIT
"""actrace: an accelerator-agnostic activity tracer, from Python.

    import actrace

    with actrace.session(output="trace.json"):
        with actrace.annotate("load", batch=3):
            ...
        actrace.step()

Everything here is a thin layer over libactrace's C API (the C extension
``actrace._actrace``). Under ``actrace record -- python app.py`` the module
uses the session that the recorder started: one library, one session per
process, and the recorder writes the trace. ``ACTRACE_DISABLE=1`` makes
every call a no-op. ``import actrace`` needs no torch; ``actrace.torch``
does.
"""
import atexit as _atexit
import os as _os
import threading as _threading

from . import _actrace as _C

__all__ = ["annotate", "instant", "counter", "correlation", "step", "session",
           "start", "stop", "write", "disabled", "__version__"]

__version__ = _C._library()[0]
#: True when ACTRACE_DISABLE=1 was set at import: every call is a no-op.
disabled = bool(_C.disabled)

annotate = _C.annotate
correlation = _C.correlation
instant = _C.instant
counter = _C.counter
step = _C.step


def _wrap_generator(fn, ann):
    """Decorated generator (or coroutine) functions: every resumption is a
    span, so a suspended generator never leaves a span open."""
    import functools
    import inspect

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def coro_wrapper(*args, **kwargs):
            with ann:
                return await fn(*args, **kwargs)
        return coro_wrapper
    if inspect.isasyncgenfunction(fn):
        @functools.wraps(fn)
        async def agen_wrapper(*args, **kwargs):
            agen = fn(*args, **kwargs)
            method, value = agen.asend, None
            while True:
                try:
                    with ann:
                        item = await method(value)
                except StopAsyncIteration:
                    return
                try:
                    value = yield item
                    method = agen.asend
                except GeneratorExit:
                    await agen.aclose()
                    raise
                except BaseException as exc:
                    method, value = agen.athrow, exc
        return agen_wrapper

    @functools.wraps(fn)
    def gen_wrapper(*args, **kwargs):
        gen = fn(*args, **kwargs)
        method, value = gen.send, None
        while True:
            try:
                with ann:
                    item = method(value)
            except StopIteration as e:
                return e.value
            try:
                value = yield item
                method = gen.send
            except GeneratorExit:
                gen.close()
                raise
            except BaseException as exc:  # thrown in: passed on, timed
                method, value = gen.throw, exc
    return gen_wrapper


_C._set_generator_wrapper(_wrap_generator)

# ---- thread names follow threading's -------------------------------------
_name_prop = _threading.Thread.name


def _set_name(self, value):
    _name_prop.fset(self, value)
    _C._names_changed()


if isinstance(_name_prop, property) and not disabled:
    _threading.Thread.name = property(_name_prop.fget, _set_name, _name_prop.fdel,
                                      _name_prop.__doc__)

# ---- sessions --------------------------------------------------------------
_output = None        # where start()'s session is written at stop or exit
_mode = None          # 0 own, 1 attached (actrace record), 2 disabled
_pending = False      # an own session that was started and not written yet
_pid = None           # the process that started it: only it writes it


def _config_text(config):
    if config is None:
        return None
    if isinstance(config, dict):
        return "".join("%s = %s\n" % (k, v) for k, v in config.items())
    if isinstance(config, _os.PathLike):
        with open(config, encoding="utf-8", errors="surrogateescape") as f:
            return f.read()
    if isinstance(config, str):
        return config
    raise TypeError("actrace: config must be text (KEY = VALUE lines), a dict, "
                    "or a path (os.PathLike), not %s" % type(config).__name__)


def start(config=None, output=None):
    """Start recording. ``config`` is config text (``KEY = VALUE`` lines,
    as in every actrace config), a dict of keys, or a path to a file. The
    trace goes to ``output`` when stop() or write() runs, or at exit; the
    default is the config's ACTIVITIES_LOG_FILE if it sets one, else
    ``actrace-<pid>.json``. Under ``actrace record`` the recorder's session is
    used (and written by the recorder); returns "running", "attached" or
    "disabled"."""
    global _output, _mode, _pending, _pid
    mode = _C._start(_config_text(config))
    if mode == 0:
        prev = (_output, _pid)
        _output = output
        try:
            _check_output(_default_output())
        except OSError:
            _output, _pid = prev
            _C._stop()
            _C._discard()
            raise
    _mode = mode
    if _mode == 0:
        _pending = True
        _pid = _os.getpid()
    return ("running", "attached", "disabled")[_mode]


def _check_output(path):
    """Fail at start, not after the run: the trace's folder must exist and
    be writable, and the path must not be a folder (as `actrace record`
    checks its -o before the program runs)."""
    import errno
    p = _os.path.abspath(path)
    d = _os.path.dirname(p)
    if _os.path.isdir(p):
        raise IsADirectoryError(errno.EISDIR, "actrace: cannot write the trace: it is a "
                                "directory", path)
    if not _os.path.isdir(d):
        raise FileNotFoundError(errno.ENOENT, "actrace: cannot write the trace: no such "
                                "directory %s" % d, path)
    if not _os.access(d, _os.W_OK | _os.X_OK):
        raise PermissionError(errno.EACCES, "actrace: cannot write the trace: directory "
                              "%s is not writable" % d, path)


def stop():
    """Stop recording (the trace is written by write(), or at exit)."""
    _C._stop()


def _default_output():
    out = _output or _C._log_file() or "actrace-%pid%.json"
    return _os.fspath(out).replace("%pid%", str(_os.getpid()))


def write(path=None):
    """Write the stopped (or running: it is stopped first) session to
    ``path`` (default: start()'s output). Returns the path written, or None
    when there is nothing of this module's to write (disabled, or under
    ``actrace record``, whose recorder writes the trace)."""
    global _pending
    if _mode != 0 or _pid != _os.getpid():
        return None
    p = _os.fspath(path) if path is not None else _default_output()
    if _C._write(p):
        _pending = False
        return p
    return None


class session:
    """``with actrace.session(config=None, output=None):`` records the
    block and writes the trace when it ends (exception or not)."""

    def __init__(self, config=None, output=None):
        self.config = config
        self.output = output
        self.path = None
        self.state = None

    def __enter__(self):
        self.state = start(self.config, self.output)
        return self

    def __exit__(self, *exc):
        stop()
        self.path = write()
        return False


def _at_exit():
    # Only the process that started the session writes it: a forked child
    # that ends normally holds a stale copy of it (docs/architecture.md).
    if _pending and _mode == 0 and _pid == _os.getpid():
        try:
            stop()
            write()
        except Exception as e:  # never turn a clean exit into a traceback
            import sys
            print("actrace: could not write the trace at exit: %s" % e, file=sys.stderr)


_atexit.register(_at_exit)
