# SPDX-License-Identifier: MIT
"""PyTorch ops under ``actrace record`` with no change to the program.

``actrace record`` puts a ``sitecustomize.py`` first on ``PYTHONPATH``
(``--no-python-ops`` leaves it out). When a Python process below record
starts, that file runs this one by path (as ``_actrace_autotorch``: the
actrace package itself is not imported until torch is) and calls
install(), which adds an import hook: once
the program imports ``torch`` (and only then: a process that never does
pays for one finder on ``sys.meta_path``), actrace.torch.record_ops() is
turned on, so every aten op and record_function region goes into the
process's trace, linked to the device work actrace's plugins record.

Nothing here runs outside record: ``ACTRACE_RECORD_DIR`` must be set,
``ACTRACE_PYTHON_OPS`` must not be 0, and ``ACTRACE_DISABLE=1`` turns it
off. A failure (no C++ compiler for the shim, say) is one line on stderr;
the program runs on, untraced by ops.
"""
import os
import sys

_installed = False


class _TorchFinder:
    """On sys.meta_path until torch is imported: wraps torch's loader so
    that record_ops() runs right after torch's own import completes."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        _remove()
        import importlib.util
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        inner = loader.exec_module

        def exec_module(module):
            inner(module)
            _torch_imported()

        loader.exec_module = exec_module
        return spec


_finder = _TorchFinder()


def _remove():
    try:
        sys.meta_path.remove(_finder)
    except ValueError:
        pass


def _torch_imported():
    try:
        import actrace.torch
        actrace.torch.record_ops()
    except Exception as e:  # never break the program's import of torch
        sys.stderr.write("actrace: PyTorch ops are not recorded in process %d: %s\n"
                         % (os.getpid(), e))


def wanted():
    return (bool(os.environ.get("ACTRACE_RECORD_DIR"))
            and os.environ.get("ACTRACE_PYTHON_OPS", "1") != "0"
            and os.environ.get("ACTRACE_DISABLE") != "1")


def install():
    """Called by record's sitecustomize.py: record torch's ops once torch
    is imported (at once if it already is). Idempotent."""
    global _installed
    if _installed or not wanted():
        return
    _installed = True
    if "torch" in sys.modules:
        _torch_imported()
    else:
        sys.meta_path.insert(0, _finder)
