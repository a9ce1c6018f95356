#!/bin/sh
# make demo: the main job on the bundled example.
set -e
BUILD=${1:-build}
"$BUILD/bin/actrace" types
