#!/bin/sh
# namesake.sh (GPU) - namesake.cu's kernels have the names and parameters of
# every original in the replacement table and other arithmetic: its results
# must be its own natively, under the defaults and with every feature on, and
# the library must swap none of them (its report says swapped=0). The bundled
# prover, whose kernels are the very code the table lists, is swapped.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu namesake
N="$GA_BUILD/tests/gpu/namesake"
P="$GA_BUILD/tests/apps/prover/prover"
require_built "$N"
require_built "$P"

# run_one LABEL ENV...: namesake with ENV; its "namesake ok=1" line is required
# (a missing line fails), as is a zero exit.
run_one() {
    label=$1
    shift
    out=$(env "$@" "$N" 2>"$tmp/err")
    rc=$?
    echo "$label: $out"
    grep '^gpuaccel: kernels:' "$tmp/err" | sed 's/^/   /'
    echo "$out" | grep -qx 'namesake ok=1' || { cat "$tmp/err"; fail "$label: no 'namesake ok=1' line (exit $rc)"; }
    [ "$rc" -eq 0 ] || { cat "$tmp/err"; fail "$label: exit $rc"; }
}

run_one native -u LD_PRELOAD
run_one defaults LD_PRELOAD="$GA_LIB" GPUACCEL_LOG=info
grep -q '^gpuaccel: kernels: swapped=0 ' "$tmp/err" || fail "defaults: no 'kernels: swapped=0' in the report"
run_one all LD_PRELOAD="$GA_LIB" GPUACCEL=all GPUACCEL_LOG=info
grep -q '^gpuaccel: kernels: swapped=0 ' "$tmp/err" || fail "every feature: no 'kernels: swapped=0' in the report"

# The prover's own kernels: the identities the table lists, so swapped.
out=$(env LD_PRELOAD="$GA_LIB" GPUACCEL_KERNELS=1 GPUACCEL_LOG=info "$P" --log-n 12 --proofs 2 2>&1) ||
    { echo "$out" | tail -20; fail "prover run failed"; }
echo "$out" | grep '^gpuaccel: kernels:' | sed 's/^/prover: /'
swapped=$(echo "$out" | sed -n 's/^gpuaccel: kernels: swapped=\([0-9]*\) .*/\1/p')
[ -n "$swapped" ] && [ "$swapped" -gt 0 ] || fail "prover: its kernels were not swapped"
echo "PASS: namesake"
