#!/bin/sh
# demo.sh - the main job (make demo): the bundled prover natively and under the
# library, alternating, an A/B table of medians, and the digest check.
# usage: tools/demo.sh BUILD_DIR [RUNS]
set -u
build=${1:-.}
runs=${2:-3}
lib="$build/.libs/libgpuaccel.so"
prover="$build/tests/apps/prover/prover"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    echo "demo: no GPU on this machine: nothing to run (make check tests what runs without one)"
    exit 0
fi
[ -x "$prover" ] || { echo "demo: $prover not built (needs nvcc)"; exit 1; }
[ -f "$lib" ] || { echo "demo: $lib not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME ENV...: one timed run of the prover, appends "seconds digest" to $tmp/NAME
run() {
    name=$1; shift
    t0=$(date +%s.%N)
    d=$(env "$@" "$prover" 2>/dev/null | sed -n 's/^digest: //p')
    t1=$(date +%s.%N)
    echo "$(awk "BEGIN {print $t1 - $t0}") ${d:-none}" >>"$tmp/$name"
}

variants="native all"
for f in pool coalesce graphs kernels; do variants="$variants $f"; done
envof() {
    case $1 in
    native) echo "GPUACCEL_DEMO=native" ;;
    all) echo "LD_PRELOAD=$lib GPUACCEL_POOL=1 GPUACCEL_COALESCE=1 GPUACCEL_GRAPHS=1 GPUACCEL_KERNELS=1" ;;
    *) echo "LD_PRELOAD=$lib GPUACCEL_$(echo "$1" | tr a-z A-Z)=1" ;;
    esac
}
echo "demo: prover (default size) on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $runs runs each after a warm-up"
for v in $variants; do run warmup $(envof "$v"); done
i=0
while [ $i -lt "$runs" ]; do
    for v in $variants; do run "$v" $(envof "$v"); done
    i=$((i + 1))
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ref=$(median "$tmp/native")
want=$(awk '{print $2}' "$tmp/native" | sort -u)
printf '%-10s %10s %9s  %s\n' variant median_s speedup digest
status=0
for v in $variants; do
    m=$(median "$tmp/$v")
    digests=$(awk '{print $2}' "$tmp/$v" | sort -u)
    ok=same
    [ "$digests" = "$want" ] || { ok="DIFFERENT ($digests vs $want)"; status=1; }
    printf '%-10s %10.3f %8.2fx  %s\n' "$v" "$m" "$(awk "BEGIN {print $ref / $m}")" "$ok"
done
exit $status
