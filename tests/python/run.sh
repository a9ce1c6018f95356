#!/bin/sh
# SPDX-License-Identifier: MIT
# ctest's Python tests: run python/tests with the cached venv's pytest.
#   run.sh SOURCE_DIR BINARY_DIR [PYTEST_ARGS...]   (default: python/tests)
set -eu
src=$1
shift 2
[ $# -gt 0 ] || set -- python/tests
venv=$(sh "$src/scripts/pyvenv.sh" --path)
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pytest, scikit_build_core' 2>/dev/null; then
    if [ "${ACT_NO_VENV:-0}" = 1 ]; then
        echo "Python tests skipped: ACT_NO_VENV=1 (no venv at $venv)"
        exit 77
    fi
    echo "Python tests: the venv $venv is missing or incomplete; make it with:"
    echo "    sh $src/scripts/pyvenv.sh"
    exit 1
fi
cd "$src"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
