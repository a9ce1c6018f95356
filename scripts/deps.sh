#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs the Debian packages the full demo and test suite use (the list
# of .ci/run), called by `make` before building. Idempotent and fast: when
# every package is installed (one dpkg-query), it does nothing, and never
# runs apt-get update. When some are missing it installs them with apt-get
# if it runs as root or with passwordless sudo, else it prints the one
# command to run. It never fails the build: every package is optional (the
# parts that need a missing one are skipped and CMake says so).
#
# ACT_NO_DEPS=1 skips it; non-Debian systems (no dpkg-query) are skipped.
[ "${ACT_NO_DEPS:-0}" = 1 ] && exit 0
command -v dpkg-query >/dev/null 2>&1 || exit 0
command -v apt-get >/dev/null 2>&1 || exit 0

PKGS="build-essential cmake clang libclang-rt-14-dev zlib1g-dev libjansson-dev
pkg-config ocl-icd-opencl-dev opencl-headers pocl-opencl-icd gzip valgrind
protobuf-compiler python3 libjs-chart.js"

# One dpkg-query for all; a package it does not know prints nothing.
# shellcheck disable=SC2086
installed=$(dpkg-query -W -f='${Package} ${Status}\n' $PKGS 2>/dev/null |
    awk '$NF == "installed" && $(NF-1) == "ok" { sub(/:.*/, "", $1); print $1 }')
missing=""
for p in $PKGS; do
    echo "$installed" | grep -qx "$p" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
missing=${missing# }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "actrace: optional packages missing: $missing"
        echo "actrace: the demo and tests that need them are skipped; to install them run:"
        echo "  sudo apt-get install -y $missing"
        exit 0
    fi
fi
echo "actrace: installing the Debian packages the demo and tests use: $missing"
APT="$SUDO env DEBIAN_FRONTEND=noninteractive apt-get"
if ! $APT update -qq; then
    echo "actrace: apt-get update failed; continuing without: $missing"
    exit 0
fi
# shellcheck disable=SC2086
if ! $APT install -y -qq --no-install-recommends $missing; then
    # One unknown package (another release) must not keep the others out.
    for p in $missing; do
        $APT install -y -qq --no-install-recommends "$p" ||
            echo "actrace: could not install $p (optional; continuing)"
    done
fi
exit 0
