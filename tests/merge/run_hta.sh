#!/bin/sh
# SPDX-License-Identifier: MIT
# ctest's HTA test: tests/merge/test_hta.py with the cached venv's pytest
# and HolisticTraceAnalysis (scripts/pyvenv.sh).
#   run_hta.sh SOURCE_DIR ACTRACE DEMO EXAMPLE_PLUGIN [CL_DEMO [TEST_FILE]]
# TEST_FILE: tests/merge/test_hta.py unless given.
set -eu
src=$1
venv=$(sh "$src/scripts/pyvenv.sh" --path)
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pytest, hta' 2>/dev/null; then
    if [ "${ACT_NO_VENV:-0}" = 1 ]; then
        echo "HTA test skipped: ACT_NO_VENV=1 (no venv with holistictraceanalysis at $venv)"
        exit 77
    fi
    echo "HTA test: the venv $venv is missing or lacks holistictraceanalysis; make it with:"
    echo "    sh $src/scripts/pyvenv.sh"
    exit 1
fi
export ACTRACE=$2 ACT_DEMO=$3 ACT_EXAMPLE_PLUGIN=$4 ACT_CL_DEMO=${5:-}
cd "$src"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "${6:-tests/merge/test_hta.py}"
