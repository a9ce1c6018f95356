#!/bin/sh
# SPDX-License-Identifier: MIT
# `make bench`'s per-process cost of `actrace record` (issue 20): wall time
# of workloads made of many short processes, untraced and under record,
# in the same run, alternating, best of N; prints ratios to untraced.
#   run.sh ACTRACE LIBACTRACE PLUGIN_DIR [ROUNDS] [SWEEP]
# SWEEP (act_bench_rec_sweep): also the recording cost per event under
# record at 100k, 1M and 10M events, 0 and 2 args (issue 21): median of
# ROUNDS runs, each a process of its own (BENCH_RECORD_ONLY=sweep: alone).
# The workloads: a shell loop running /bin/true 200 times; a small
# multi-process build (make -j2 of 24 C files with cc, in a temporary
# folder) when make and cc exist. Wall times on a shared machine are
# noisy; the instruction counts at the end (callgrind, when valgrind is
# there) are not.
set -eu
act=$1
lib=$2
pdir=$3
rounds=${4:-5}
sweep_bin=${5:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ACTRACE_PLUGIN_DIR="$pdir"

now() { date +%s%N; }
# best wall ns of running "$@" $rounds times
best() {
    b=
    i=0
    while [ $i -lt "$rounds" ]; do
        t0=$(now)
        "$@" >/dev/null 2>&1 || true
        t1=$(now)
        d=$((t1 - t0))
        if [ -z "$b" ] || [ "$d" -lt "$b" ]; then b=$d; fi
        i=$((i + 1))
    done
    echo "$b"
}
loop='i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done'
have_build=0
if command -v make >/dev/null 2>&1 && command -v cc >/dev/null 2>&1; then
    have_build=1
    mkdir -p "$tmp/proj"
    n=0
    objs=
    while [ $n -lt 24 ]; do
        printf 'int f%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * %d; return s; }\n' $n $n > "$tmp/proj/f$n.c"
        objs="$objs f$n.o"
        n=$((n + 1))
    done
    printf 'int main(void) { return 0; }\n' > "$tmp/proj/main.c"
    printf 'all: prog\nprog: main.o%s\n\tcc -o $@ $^\n%%.o: %%.c\n\tcc -O1 -c -o $@ $<\nclean:\n\trm -f *.o prog\n' "$objs" > "$tmp/proj/Makefile"
fi
build() { make -s -C "$tmp/proj" clean >/dev/null; "$@" make -s -j2 -C "$tmp/proj"; }

# Alternate the variants round by round so drift hits all alike.
run_loop() {
    u=$(best sh -c "$loop")
    p=$(best env LD_PRELOAD="$lib" sh -c "$loop")
    n=$(best "$act" record --force -o "$tmp/n.json" --no-default-plugins -- sh -c "$loop")
    d=$(best "$act" record --force -o "$tmp/d.json" -- sh -c "$loop")
    awk -v u="$u" -v p="$p" -v n="$n" -v d="$d" 'BEGIN {
        printf "record/true200 untraced_ms=%.1f preload_ms=%.1f nodefault_ms=%.1f default_ms=%.1f\n", u/1e6, p/1e6, n/1e6, d/1e6
        printf "record/true200 ratio preload=%.2f nodefault=%.2f default=%.2f (targets: nodefault<=1.3 default<=1.5)\n", p/u, n/u, d/u
        printf "record/true200 added_us_per_process preload=%.0f nodefault=%.0f default=%.0f\n", (p-u)/200e3, (n-u)/200e3, (d-u)/200e3 }'
}
run_build() {
    u=$(best build)
    d=$(best build "$act" record --force -o "$tmp/b.json" --)
    awk -v u="$u" -v d="$d" 'BEGIN {
        printf "record/build24 untraced_ms=%.1f default_ms=%.1f ratio=%.2f (target <=1.10)\n", u/1e6, d/1e6, d/u }'
}
# Instructions (callgrind) of one /bin/true, noise-free where wall times
# on a shared machine are not: untraced, with the preload alone, and as a
# descendant under record with the default plugins (the record directory
# and variables as record sets them; it records nothing: lazy start).
# Forked processes are not summed: callgrind's counts of a fork child
# include its parent's.
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
       awk '/refs:/ {gsub(",", "", $4); s += $4} END {print s + 0}'; }
run_icount() {
    mkdir -m 700 "$tmp/rd"
    u=$(ir /bin/true)
    p=$(LD_PRELOAD="$lib" ir /bin/true)
    l=$(LD_PRELOAD="$lib" ACTRACE_RECORD_DIR="$tmp/rd" ACTRACE_DEFAULT_PLUGINS=1 \
        ACTRACE_RECORD_PARENT=1 ir /bin/true)
    awk -v u="$u" -v p="$p" -v l="$l" 'BEGIN {
        printf "record/icount true untraced=%d preload=%d under_record=%d instructions (record adds %d to the preload)\n", u, p, l, l - p }'
    # Record's end per process that recorded nothing: the instructions of
    # record's merge (act__record_merge, where it reads the light logs) for
    # 40 /bin/true less those for 20, over 20. The shell and /bin/true run
    # natively (--trace-children-skip).
    e20=$(ir_end 20)
    e40=$(ir_end 40)
    awk -v a="$e20" -v b="$e40" 'BEGIN {
        printf "record/icount end_per_process=%d instructions (record merge, 40 vs 20 /bin/true)\n", (b - a) / 20 }'
}
ir_end() {
    valgrind --tool=callgrind --trace-children=yes --trace-children-skip='*/sh,*/true,*/dash' \
        --toggle-collect=act__record_merge --callgrind-out-file="$tmp/cg.%p" \
        "$act" record --force -o "$tmp/e.json" -- \
        sh -c "i=0; while [ \$i -lt $1 ]; do /bin/true; i=\$((i+1)); done" >/dev/null 2>&1
    cat "$tmp"/cg.* | awk '/^totals:/ {s += $2} END {print s + 0}'
    rm -f "$tmp"/cg.*
}

# One line per length and arg count: the median (by wall) of $rounds
# runs of the sweep program under record (no default plugins: the
# recording alone), with its thread CPU and faults.
run_sweep() {
    for args in 0 2; do
        for n in 100000 1000000 10000000; do
            i=0
            while [ $i -lt "$rounds" ]; do
                "$act" record --force --no-default-plugins -o /dev/null -- "$sweep_bin" $n $args 2>/dev/null |
                    grep '^rec_sweep'
                i=$((i + 1))
            done | sort -t= -k4 -g | awk -v r="$rounds" 'NR == int((r + 1) / 2) { sub("rec_sweep", "record/sweep"); print }'
        done
    done
}

if [ "${BENCH_RECORD_ONLY:-}" = sweep ]; then
    run_sweep
    exit 0
fi
# BENCH_RECORD_ONLY=icount: the instruction counts alone.
if [ "${BENCH_RECORD_ONLY:-}" != icount ]; then
    if [ -n "$sweep_bin" ]; then run_sweep; fi
    run_loop
    if [ $have_build = 1 ]; then run_build; else echo "record/build24 skipped: no make or cc"; fi
fi
if command -v valgrind >/dev/null 2>&1; then run_icount; else echo "record/icount skipped: no valgrind"; fi
