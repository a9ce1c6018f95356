#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ABI checks of the built library, run by CTest (tests/symbols/tests.cmake):
#
#   check_symbols.sh api LIB.so INCLUDE_DIR PENDING_FILE NM
#       The dynamic symbols libactrace.so defines equal the ACT_API
#       declarations of INCLUDE_DIR/*.h: every exported symbol is declared
#       ACT_API (nothing else leaks: no act__ internals, no zlib, no libc
#       helpers), every ACT_API function or variable is exported, each under
#       the version node of src/libactrace.map, and data is exported as data.
#       The ACTRACE_PRIVATE node may hold act__ internals the actrace command
#       calls, each named in src/libactrace.map (act__spool_rebuild).
#       PENDING_FILE lists declared symbols not implemented yet (one per
#       line, '#' comments); they are reported but do not fail the test.
#   check_symbols.sh soname LIB.so MAJOR READELF
#       The SONAME is libactrace.so.MAJOR.
#   check_symbols.sh static LIB.a NM
#       Every global symbol the static library defines starts with act_
#       (public) or act__ (internal): linking it cannot clash with the
#       application's names.
#
# POSIX sh and awk only, so CI needs nothing beyond binutils.
set -eu

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# ACT_API declarations of the headers: "name kind header" lines, kind being
# func or data. Comments and preprocessor lines (with continuations) are
# dropped, the rest is cut into statements at ';' and each statement that
# contains ACT_API yields the identifier before its first '(' (a function)
# or before '[', '=' or the end (a variable).
declared_api() {
    for h in "$1"/*.h; do
        awk -v hdr="$(basename "$h")" '
        { buf = buf $0 "\n" }
        END {
            # Remove /* ... */ comments.
            out = ""
            while ((i = index(buf, "/*")) > 0) {
                out = out substr(buf, 1, i - 1) " "
                rest = substr(buf, i + 2)
                j = index(rest, "*/")
                if (j == 0) { buf = ""; break }
                buf = substr(rest, j + 2)
            }
            buf = out buf
            n = split(buf, lines, "\n")
            code = ""; cont = 0
            for (k = 1; k <= n; k++) {
                l = lines[k]
                sub(/\/\/.*/, "", l)
                if (cont || l ~ /^[ \t]*#/) {
                    cont = (l ~ /\\[ \t]*$/)
                    continue
                }
                code = code " " l
            }
            m = split(code, stmts, ";")
            for (k = 1; k <= m; k++) {
                s = stmts[k]
                p = index(s, "ACT_API")
                if (p == 0) continue
                s = substr(s, p + 7)
                kind = "data"
                if ((q = index(s, "(")) > 0) { s = substr(s, 1, q - 1); kind = "func" }
                else {
                    if ((q = index(s, "[")) > 0) s = substr(s, 1, q - 1)
                    if ((q = index(s, "=")) > 0) s = substr(s, 1, q - 1)
                }
                if (match(s, /[A-Za-z_][A-Za-z0-9_]*[ \t]*$/) == 0) {
                    print "PARSE-ERROR " hdr " " s
                    continue
                }
                name = substr(s, RSTART, RLENGTH)
                sub(/[ \t]+$/, "", name)
                print name " " kind " " hdr
            }
        }' "$h"
    done
}

mode=${1:-}
case "$mode" in
api)
    lib=$2 incdir=$3 pending=$4 nm=$5
    [ -f "$lib" ] || fail "no library at $lib"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    declared_api "$incdir" | sort -u >"$tmp/declared"
    if grep '^PARSE-ERROR' "$tmp/declared" >&2; then
        fail "could not read the name of the ACT_API declaration(s) above"
    fi
    [ -s "$tmp/declared" ] || fail "no ACT_API declaration found in $incdir"
    # "type name version" of every defined dynamic symbol.
    "$nm" -D --defined-only "$lib" | awk '
        NF >= 3 { t = $2; n = $3; v = ""
                  if ((i = index(n, "@")) > 0) { v = substr(n, i); n = substr(n, 1, i - 1) }
                  print t " " n " " (v == "" ? "-" : v) }' >"$tmp/exported"
    # The private node's names, from the version script beside the library
    # sources (lines "    act__name;" after "ACTRACE_PRIVATE {").
    map=$(dirname "$0")/../../src/libactrace.map
    sed -n '/^ACTRACE_PRIVATE/,/}/s/^[ \t]*\(act__[a-z_0-9]*\);.*/\1/p' "$map" >"$tmp/private"
    if [ -f "$pending" ]; then
        sed -e 's/#.*//' -e 's/[ \t]*$//' -e '/^$/d' "$pending" | sort -u >"$tmp/pending"
    else
        : >"$tmp/pending"
    fi
    awk -v tmp="$tmp" '
        FILENAME == tmp "/declared" { kind[$1] = $2; hdr[$1] = $3; next }
        FILENAME == tmp "/pending"  { pend[$1] = 1; next }
        FILENAME == tmp "/private"  { privok[$1] = 1; next }
        FILENAME == tmp "/exported" {
            t = $1; n = $2; v = $3
            if (t == "A" && n ~ /^ACTRACE_[0-9]+$/) { node = n; next }
            if (t == "A" && n == "ACTRACE_PRIVATE") next
            if (n ~ /^act__/ && v ~ /^@@?ACTRACE_PRIVATE$/ && n in privok) { npriv++; next }
            ex[n] = t; ver[n] = v; next
        }
        END {
            bad = 0; nexp = 0; npend = 0
            if (node == "")
                { print "FAIL: no ACTRACE_<n> version node: was src/libactrace.map applied?"; bad++ }
            for (n in ex) {
                nexp++
                if (!(n in kind)) {
                    why = (n ~ /^act__/) ? "an act__ internal" : \
                          (n ~ /^act_/) ? "act_ but not declared ACT_API in include/actrace" : \
                          "not an actrace name (runtime or dependency symbol)"
                    printf "FAIL: exported %s (%s): %s\n", n, ex[n], why; bad++
                    continue
                }
                if (ver[n] != "-" && ver[n] !~ ("^@@?" node "$")) {
                    printf "FAIL: %s has version %s, expected @@%s\n", n, ver[n], node; bad++
                }
                if (ver[n] == "-" && node != "")
                    { printf "FAIL: %s is not versioned\n", n; bad++ }
                isfunc = (ex[n] == "T" || ex[n] == "t" || ex[n] == "i")
                if (kind[n] == "func" && !isfunc)
                    { printf "FAIL: %s is declared as a function but exported as data (%s)\n", n, ex[n]; bad++ }
                if (kind[n] == "data" && isfunc)
                    { printf "FAIL: %s is declared as a variable but exported as code (%s)\n", n, ex[n]; bad++ }
                if (n in pend)
                    printf "note: %s is exported now: remove it from tests/symbols/pending.txt\n", n
            }
            for (n in kind) {
                if (n in ex) continue
                if (n in pend) { npend++; continue }
                printf "FAIL: %s (ACT_API in %s) is not exported by the library\n", n, hdr[n]; bad++
            }
            for (n in pend)
                if (!(n in kind))
                    printf "note: pending.txt lists %s, which no header declares\n", n
            ndecl = 0; for (n in kind) ndecl++
            printf "%d ACT_API declarations, %d exported symbols (version node %s), %d private, %d pending, %d problems\n", \
                   ndecl, nexp, node, npriv + 0, npend, bad
            if (npend > 0)
                printf "pending (declared, not implemented yet): see tests/symbols/pending.txt\n"
            exit (bad > 0 ? 1 : 0)
        }' "$tmp/declared" "$tmp/pending" "$tmp/private" "$tmp/exported"
    ;;
soname)
    lib=$2 major=$3 readelf=$4
    [ -f "$lib" ] || fail "no library at $lib"
    so=$("$readelf" -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
    [ -n "$so" ] || fail "$lib has no SONAME"
    [ "$so" = "libactrace.so.$major" ] || fail "SONAME is '$so', expected 'libactrace.so.$major'"
    echo "SONAME $so: ok"
    ;;
static)
    lib=$2 nm=$3
    [ -f "$lib" ] || fail "no library at $lib"
    # Defined globals (code, data, bss, read-only, common, weak).
    bad=$("$nm" -g --defined-only "$lib" | awk '
        NF >= 3 && $2 ~ /^[TDBRCVWGS]$/ && $3 !~ /^act_/ { print "  " $3 " (" $2 ")" }' | sort -u)
    if [ -n "$bad" ]; then
        echo "FAIL: libactrace.a defines globals outside the act_/act__ namespace" >&2
        echo "$bad" >&2
        echo "(make them static, or name them act__<component>_...)" >&2
        exit 1
    fi
    echo "libactrace.a: every global symbol starts with act_: ok"
    ;;
*)
    echo "usage: $0 api LIB.so INCLUDE_DIR PENDING_FILE NM | soname LIB.so MAJOR READELF | static LIB.a NM" >&2
    exit 2
    ;;
esac
