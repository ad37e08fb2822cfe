#!/bin/sh
# demo.sh - the main job (make demo): the bundled prover natively, under the
# library's defaults (plain LD_PRELOAD) and with every feature on, alternating,
# an A/B table of medians and the digest check. Without a GPU it says so and
# runs the same comparison on the fake driver (tests/fake) with
# tests/progs/mix_prog, a program that gives every feature work: the numbers
# then time the fake driver, which runs on the CPU, but the digests are real.
# usage: tools/demo.sh BUILD_DIR [RUNS]
set -u
build=${1:-.}
runs=${2:-3}
lib="$build/.libs/libgpuaccel.so"
[ -f "$lib" ] || { echo "demo: $lib not built"; exit 1; }
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    prog="$build/tests/apps/prover/prover"
    [ -x "$prog" ] || { echo "demo: $prog not built (needs nvcc)"; exit 1; }
    arg=
    pattern='^digest: '
    where="the bundled prover (default size) on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
else
    prog="$build/tests/progs/mix_prog"
    [ -x "$prog" ] || { echo "demo: $prog not built"; exit 1; }
    arg="$(cd "$(dirname "$0")/.." && pwd)/tests/progs/kernels.ptx"
    pattern='^digest='
    export LD_LIBRARY_PATH="$build/tests/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "demo: no GPU on this machine: running tests/progs/mix_prog on the fake driver"
    echo "      (tests/fake, on the CPU) instead; times are the fake's, digests are real"
    where="mix_prog on the fake driver"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME ENV...: one timed run, appends "seconds digest" to $tmp/NAME
run() {
    name=$1
    shift
    t0=$(date +%s.%N)
    d=$(env "$@" "$prog" ${arg:+"$arg"} 2>/dev/null | grep -E "$pattern" | sed "s/$pattern//" | head -1)
    t1=$(date +%s.%N)
    echo "$(awk "BEGIN {print $t1 - $t0}") ${d:-none}" >>"$tmp/$name"
}
variants="native defaults all"
envof() {
    case $1 in
    native) echo "GPUACCEL_DEMO=native" ;;
    defaults) echo "LD_PRELOAD=$lib" ;;
    all) echo "LD_PRELOAD=$lib GPUACCEL=all" ;;
    esac
}
echo "demo: $where, $runs runs each after a warm-up, in turns"
for v in $variants; do run warmup $(envof "$v"); done
i=0
while [ $i -lt "$runs" ]; do
    for v in $variants; do run "$v" $(envof "$v"); done
    i=$((i + 1))
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ref=$(median "$tmp/native")
want=$(awk '{print $2}' "$tmp/native" | sort -u)
printf '%-10s %10s %9s  %s\n' setting median_s speedup digest
status=0
[ "$want" != none ] || { echo "demo: the program printed no digest natively"; status=1; }
for v in $variants; do
    m=$(median "$tmp/$v")
    digests=$(awk '{print $2}' "$tmp/$v" | sort -u)
    ok="same as native"
    [ "$v" = native ] && ok=$want
    [ "$digests" = "$want" ] || { ok="DIFFERENT ($digests vs $want)"; status=1; }
    printf '%-10s %10.3f %8.2fx  %s\n' "$v" "$m" "$(awk "BEGIN {print $ref / $m}")" "$ok"
done
exit $status
