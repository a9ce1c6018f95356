#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions per event of the recording hot path, counted by callgrind
# inside icount_loop at two event counts; the difference divided by the
# difference in events leaves setup out. Deterministic on any machine.
# usage: icount.sh path/to/act_bench_icount
bin=$1
if ! command -v valgrind >/dev/null 2>&1; then
    echo "instruction counts: skipped (valgrind not installed)"
    exit 0
fi
N1=100000
N2=300000
count() {
    case $1 in write_*) fn=icount_write ;; *) fn=icount_loop ;; esac
    valgrind --tool=callgrind --toggle-collect=$fn \
        --callgrind-out-file=/dev/null "$bin" "$1" "$2" 2>&1 |
        sed -n 's/.*Collected : *\([0-9][0-9]*\).*/\1/p'
}
per_event() {
    a=$(count "$1" $N1) && b=$(count "$1" $N2) || return 1
    if [ -z "$a" ] || [ -z "$b" ]; then
        echo "icount.sh: callgrind gave no count for $1" >&2
        return 1
    fi
    echo $(( (b - a) / (N2 - N1) ))
}
loop=$(per_event none) || exit 1
span0=$(per_event span0) || exit 1
argk=$(per_event args_key) || exit 1
args=$(per_event args_str) || exit 1
argb=$(per_event args_buf) || exit 1
echo "instructions per event (callgrind; the bench loop itself: $loop, included)"
echo "  span, supplied times, by id        $span0"
echo "  + int + 20B str args, act_key keys $argk"
echo "  + int + 20B str args, string keys  $args"
echo "    the value in a writable buffer   $argb"
sc=$(per_event scoped) || exit 1
scs=$(per_event scoped_str) || exit 1
sca=$(per_event scoped_args) || exit 1
echo "  scoped span, act_span_begin_id + act_span_end   $sc"
echo "    act_span_begin with a string name           $scs"
echo "    + int + 20B str args, act_key keys          $sca"
# The writers: act_session_write per event (visitor included), JSON and
# Perfetto's protobuf, argless and with Kineto's two args.
wj=$(per_event write_json) || exit 1
wp=$(per_event write_pftrace) || exit 1
wj2=$(per_event write_json_k2) || exit 1
wp2=$(per_event write_pftrace_k2) || exit 1
echo "instructions per event written (callgrind, act_session_write)"
echo "  argless span     JSON $wj, pftrace $wp"
echo "  Kineto's 2 args  JSON $wj2, pftrace $wp2"
wjs=$(per_event write_json_str) || exit 1
wps=$(per_event write_pftrace_str) || exit 1
echo "  argless span named by a string  JSON $wjs, pftrace $wps"
echo "{\"icount_loop\":$loop,\"icount_span0\":$span0,\"icount_args2_key\":$argk,\"icount_args2_str\":$args,\"icount_args2_buf\":$argb,\"icount_write_json\":$wj,\"icount_write_pftrace\":$wp,\"icount_write_json_k2\":$wj2,\"icount_write_pftrace_k2\":$wp2,\"icount_scoped\":$sc,\"icount_scoped_str\":$scs,\"icount_scoped_args2_key\":$sca,\"icount_write_json_str\":$wjs,\"icount_write_pftrace_str\":$wps}"
