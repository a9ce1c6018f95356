#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The cached Python virtual environment that the Python tests and benches
# use: torch, pytest and the build backend from PyPI. Made once, reused by
# `make test`, `make bench` and `.ci/run` (torch from PyPI is a CUDA build of
# several GB, so it is installed once per machine, not per clone).
#
#   scripts/pyvenv.sh          make or update the venv, print its path last
#   scripts/pyvenv.sh --path   print the path only
#
# ACT_VENV chooses the place (default: $XDG_CACHE_HOME/actrace/venv-pyX.Y,
# else ~/.cache/...). ACT_PYTHON chooses the interpreter (default: python3.11,
# else python3). ACT_NO_VENV=1 skips it: the Python tests then skip, and say so.
set -eu

PY=${ACT_PYTHON:-}
if [ -z "$PY" ]; then
    if command -v python3.11 >/dev/null 2>&1; then PY=python3.11; else PY=python3; fi
fi
ver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
VENV=${ACT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/actrace/venv-py$ver}
if [ "${1:-}" = "--path" ]; then
    echo "$VENV"
    exit 0
fi
if [ "${ACT_NO_VENV:-0}" = 1 ]; then
    echo "pyvenv: skipped (ACT_NO_VENV=1); the Python tests will skip" >&2
    exit 0
fi
# What the tests need (perfetto: Perfetto's own trace schema, which
# validate-traces.sh and PerfettoSchema decode our .pftrace with). Bump STAMP when the list changes. pandas<3: HTA
# (0.5.0, the newest on PyPI here) sets int row indices into a column that
# pandas downcast to int8 when a trace's correlation ids are small, which
# pandas 3 refuses (TypeError in transform_correlation_to_index) and 2.x
# only warns about. torch-tb-profiler: TensorBoard's PyTorch profiler
# plugin, which python/tests/test_tb_profiler.py loads record's traces with.
REQS="torch numpy pytest scikit-build-core nvtx holistictraceanalysis pandas<3 torch-tb-profiler perfetto"
STAMP="3 $REQS"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.actrace-stamp" 2>/dev/null)" = "$STAMP" ]; then
    echo "$VENV"
    exit 0
fi
echo "pyvenv: making $VENV ($REQS; torch is a download of several GB, once)" >&2
mkdir -p "$(dirname "$VENV")"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV" >&2
"$VENV/bin/python" -m pip install -q --upgrade pip >&2 || true
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install -q $REQS >&2
echo "$STAMP" >"$VENV/.actrace-stamp"
echo "$VENV"
