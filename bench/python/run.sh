#!/bin/sh
# SPDX-License-Identifier: MIT
# `make bench`'s Python part: the wheel in a fresh venv (python/tests/
# wheelvenv.py, in BUILD/bench-python), then bench_python.py. Says so and
# does nothing when the cached venv is missing (scripts/pyvenv.sh makes it).
#   run.sh SOURCE_DIR BINARY_DIR
set -eu
src=$1
bin=$2
venv=$(sh "$src/scripts/pyvenv.sh" --path)
if [ ! -x "$venv/bin/python" ]; then
    echo "bench/python: skipped: no venv at $venv (make it with: sh $src/scripts/pyvenv.sh)"
    exit 0
fi
py=$("$venv/bin/python" "$src/python/tests/wheelvenv.py" "$bin/bench-python")
ACTRACE_CACHE_DIR="$bin/bench-python/torch-cache" exec "$py" "$src/bench/python/bench_python.py"
