#!/bin/sh
# SPDX-License-Identifier: MIT
# The library's layers (docs/building.md, "Source layout"): arrows point
# down, never up.
#
#   4  ondemand/            on-demand tracing: a client of the session, which
#                           reaches it only through a hook (act__step_hook)
#   3  session/             drive sessions: lifecycle, autostart, the spool
#                           rebuild's write-out
#   2  plugin/  writer/     the plugin loader; the trace writers
#   1  engine/              recording core and spool storage
#   0  util/ config/ activity_type/
#
# A component may use its own layer and those below it, except that
# writer/ does not know plugin/ (what a writer reports of the plugins
# reaches it through the session: engine.h, report_plugins); plugin/ uses
# the writer's UTF-8 check (writer/json_out.h).
#
# Inside writer/ the files have layers of their own (wrank):
#   2  write.c               picks the writer a path asks for
#   1  chrome.c perfetto.c   the two writers: neither uses the other
#   0  the rest              common.c (what both writers share), visit.c,
#                            pftrace.c, json_fmt.c, out_sink.c, readback.c
# (checked on symbols, per object; a new writer file is rank 0 until it is
# listed here).
#
#   check_layering.sh includes SRC_DIR
#       every #include "dir/..." in SRC_DIR/<component>/*.[ch] names a
#       component of the same layer or a lower one;
#   check_layering.sh symbols NM OBJ...
#       every symbol an object of the library (OBJ: .../<component>/x.c.o)
#       leaves undefined is defined by an object of the same layer or a
#       lower one (or outside the library): a call up through a public
#       header (act_session_start from engine/) is caught too.
# Exit 0 when the layering holds, 1 with one line per violation.
set -u

rank() {
    case "$1" in
    util | config | activity_type) echo 0 ;;
    engine) echo 1 ;;
    plugin | writer) echo 2 ;;
    session) echo 3 ;;
    ondemand) echo 4 ;;
    *) echo "" ;;
    esac
}

# The file layer inside writer/ of object or source basename $1.
wrank() {
    case "$1" in
    write.c | write.c.o | write.o) echo 2 ;;
    chrome.c | chrome.c.o | chrome.o | perfetto.c | perfetto.c.o | perfetto.o) echo 1 ;;
    *) echo 0 ;;
    esac
}

# 1 if component $1 may use component $2 (both ranked).
allowed() {
    [ "$1" = writer ] && [ "$2" = plugin ] && return 1
    [ "$(rank "$2")" -le "$(rank "$1")" ]
}

mode=${1:-}
[ $# -ge 1 ] && shift
bad=0
case "$mode" in
includes)
    src=${1:?SRC_DIR}
    nfiles=0
    for f in "$src"/*/*.c "$src"/*/*.h; do
        [ -f "$f" ] || continue
        comp=$(basename "$(dirname "$f")")
        r=$(rank "$comp")
        [ -n "$r" ] || continue # reader/: not part of libactrace
        nfiles=$((nfiles + 1))
        # Lines like: #include "plugin/loader.h"
        out=$(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/[^"]*".*/\1/p' "$f" |
            sort -u)
        for inc in $out; do
            ri=$(rank "$inc")
            [ -n "$ri" ] || continue
            if ! allowed "$comp" "$inc"; then
                echo "layering: ${f#"$src"/} (layer $r, $comp) includes $inc/ (layer $ri)" \
                     "$(grep -n "#[[:space:]]*include[[:space:]]*\"$inc/" "$f" | head -1 | cut -d: -f1 | sed 's/^/at line /')"
                bad=1
            fi
        done
    done
    if [ "$nfiles" -eq 0 ]; then
        echo "layering: no source files under $src" >&2
        exit 2
    fi
    ;;
symbols)
    nm=${1:?NM}
    shift
    [ $# -gt 0 ] || { echo "layering: no objects" >&2; exit 2; }
    tmp=${TMPDIR:-/tmp}/act_layering.$$
    trap 'rm -f "$tmp".def "$tmp".und "$tmp".one' EXIT
    : >"$tmp".def
    : >"$tmp".und
    for o in "$@"; do
        comp=$(basename "$(dirname "$o")")
        r=$(rank "$comp")
        [ -n "$r" ] || continue
        "$nm" -P "$o" >"$tmp".one || { echo "layering: $nm cannot read $o" >&2; exit 2; }
        b=$(basename "$o")
        w=$(wrank "$b")
        awk -v r="$r" -v c="$comp" -v o="${b%.o}" -v w="$w" \
            '$2 ~ /^[A-TV-Z]$/ { print $1, r, c, o, w }' "$tmp".one >>"$tmp".def
        awk -v r="$r" -v c="$comp" -v o="${b%.o}" -v w="$w" \
            '$2 == "U" { print $1, r, c, o, w }' "$tmp".one >>"$tmp".und
    done
    if [ ! -s "$tmp".def ]; then
        echo "layering: no symbols read from the objects" >&2
        exit 2
    fi
    # A symbol is defined once in the library: its component decides.
    # Inside writer/: a file uses no file of a higher file layer, and the
    # two writers (file layer 1) not each other.
    out=$(awk 'NR == FNR { d[$1] = $2; dc[$1] = $3; df[$1] = $4; dw[$1] = $5; next }
               ($1 in d) && (d[$1] > $2 || ($3 == "writer" && dc[$1] == "plugin")) {
                   printf "layering: %s/%s (layer %s) uses %s, defined in %s/ (layer %s)\n",
                          $3, $4, $2, $1, dc[$1], d[$1]; next }
               ($1 in d) && $3 == "writer" && dc[$1] == "writer" && df[$1] != $4 &&
               (dw[$1] > $5 || (dw[$1] == 1 && $5 == 1)) {
                   printf "layering: writer/%s (file layer %s) uses %s, defined in writer/%s (file layer %s)\n",
                          $4, $5, $1, df[$1], dw[$1] }' "$tmp".def "$tmp".und | sort -u)
    if [ -n "$out" ]; then
        echo "$out"
        bad=1
    fi
    ;;
*)
    echo "usage: check_layering.sh includes SRC_DIR | symbols NM OBJ..." >&2
    exit 2
    ;;
esac
[ "$bad" -eq 0 ] && echo "layering: ok ($mode)"
exit "$bad"
