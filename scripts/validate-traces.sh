#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Check every trace in BUILD/traces/*.json with the shared trace validators
# (a structural lint, Chrome DevTools' trace engine, speedscope's importer),
# and every BUILD/traces/*.pftrace[.gz] against Perfetto's own trace schema
# (tests/perfetto/pf_schema.py with the cached venv's `perfetto` package):
#
#   scripts/validate-traces.sh [BUILD]        (default BUILD: build)
#
# The demo writes BUILD/traces/demo.json; a test that wants its output
# validated writes it to $ACT_TRACE_DIR (= BUILD/traces). Traces ending in
# .gz are decompressed into a temporary file first.
#
# The validators live in ../shared/trace-consumers beside the repository, or
# in $ACT_SHARED_DIR/trace-consumers. Without them this script says so loudly
# and exits 0 (nothing to check with); without traces it says so and exits 0.
# Exit status: 1 if any trace fails validation.
set -eu

build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${ACT_SHARED_DIR:-}" ]; then
    shared=$ACT_SHARED_DIR
elif top=$(git -C "$root" rev-parse --show-toplevel 2>/dev/null); then
    shared=$top/../shared
else
    shared=$root/../shared
fi
validator=$shared/trace-consumers/ci-validate.sh

case $build in
/*) ;;
*) build=$root/$build ;;
esac
dir=$build/traces

pass=0 fail=0 failed=""
# Perfetto traces: decoded with Perfetto's schema (PyPI's perfetto package
# in the cached venv, scripts/pyvenv.sh); skipped, loudly, without it.
venv=$(sh "$root/scripts/pyvenv.sh" --path 2>/dev/null || true)
for f in "$dir"/*.pftrace "$dir"/*.pftrace.gz; do
    [ -f "$f" ] || continue
    if [ ! -x "$venv/bin/python" ]; then
        echo "validate-traces: SKIPPED $f: no venv at $venv (scripts/pyvenv.sh makes it)"
        continue
    fi
    echo "---- decoding $f with Perfetto's schema"
    rc=0
    "$venv/bin/python" "$root/tests/perfetto/pf_schema.py" "$f" || rc=$?
    case $rc in
    0) pass=$((pass + 1)) ;;
    77) echo "validate-traces: SKIPPED $f: no perfetto package in $venv" ;;
    *) fail=$((fail + 1)); failed="$failed $f" ;;
    esac
done

if [ ! -f "$validator" ]; then
    echo "######################################################################"
    echo "# validate-traces: SKIPPED: no trace validators at"
    echo "#   $validator"
    echo "# (put the shared folder beside the repository, or set ACT_SHARED_DIR)"
    echo "######################################################################"
    for f in $failed; do echo "validate-traces: INVALID: $f"; done
    [ "$fail" -eq 0 ]
    exit 0
fi

set --
tmp=""
for f in "$dir"/*.json "$dir"/*.json.gz; do
    [ -f "$f" ] || continue
    case $f in
    *.gz)
        [ -n "$tmp" ] || tmp=$(mktemp -d)
        out=$tmp/$(basename "$f" .gz)
        gzip -dc "$f" >"$out" || { echo "validate-traces: cannot decompress $f" >&2; exit 1; }
        set -- "$@" "$out"
        ;;
    *) set -- "$@" "$f" ;;
    esac
done
if [ -n "$tmp" ]; then
    trap 'rm -rf "$tmp"' EXIT
fi

if [ $# -eq 0 ] && [ $((pass + fail)) -eq 0 ]; then
    echo "validate-traces: no traces in $dir yet (make demo and the tests write them there); nothing to validate"
    exit 0
fi

echo "validate-traces: $# trace(s) from $dir:"
for f in "$@"; do echo "  $f"; done
# One validator run per trace, so the summary can say which failed.
for f in "$@"; do
    echo "---- validating $f"
    if bash "$validator" "$f"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        failed="$failed $f"
    fi
done
for f in $failed; do echo "validate-traces: INVALID: $f"; done
echo "validate-traces: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
