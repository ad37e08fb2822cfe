#!/bin/sh
# reliability.sh (GPU) - the stress program (16 threads) natively and with every
# feature on; a faulting kernel (the driver's code for an illegal address, 700,
# natively, and the same codes afterwards under the library); compute-sanitizer
# memcheck, racecheck and synccheck on a GPU test program and on the prover
# (small size, digest checked against the CPU reference) under the library
# (with the pool off: a pooled block is still allocated to the driver, so a use
# after free inside it is invisible to memcheck; with the pool on the run must
# still be clean). Without compute-sanitizer that part prints a SKIP line with
# the reason and the rest runs.
#   GA_COMPUTE_SANITIZER  the tool (default: compute-sanitizer on PATH, else
#                         /usr/local/cuda/bin/compute-sanitizer); set and empty,
#                         the sanitizer part is left out (a SKIP line says so)
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu reliability
S="$GA_BUILD/tests/gpu/stress"
require_built "$S"
ALL=$ALL_FEATURES
SHIM_ENV="$ALL"
compare_runs "$S" --seconds "${GA_STRESS_SECONDS:-20}"
expect_ok stress
# A faulting kernel: the same codes afterwards, natively and with every
# feature, lazy synchronization aside: by design it reports the fault at the
# next call that observes the device instead of at the synchronization (the
# program checks which call saw it; tests/gpu/lazy.sh checks that one).
fault_line='^launch=-?[0-9]+ sync=-?[0-9]+ alloc=-?[0-9]+ copy=-?[0-9]+ free=-?[0-9]+$'
SHIM_ENV="$ALL GPUACCEL_LAZY_SYNC=0"
compare_runs --checks "$fault_line" "$GA_BUILD/tests/gpu/fault"
echo "$native_out" | grep -q ' sync=700 ' ||
    fail "the fault was reported natively as '$native_out', not 700 (an illegal address) at the synchronization"
SHIM_ENV="$ALL GPUACCEL_LAZY_SYNC=0 GPUACCEL_POOL_POISON=1"
compare_runs --checks "$fault_line" "$GA_BUILD/tests/gpu/fault"
SHIM_ENV="$ALL"
lazy_out=$(env LD_PRELOAD="$GA_LIB" $SHIM_ENV "$GA_BUILD/tests/gpu/fault" 2>/dev/null)
echo "with lazy synchronization: $lazy_out"
echo "$lazy_out" | grep -Eq 'sync=(0|700) alloc=[0-9]+ copy=700 ' ||
    fail "the fault was not reported by the next call that observes the device: $lazy_out"

if [ "${GA_COMPUTE_SANITIZER+set}" = set ]; then
    CS=$GA_COMPUTE_SANITIZER why="GA_COMPUTE_SANITIZER is set and empty"
else
    CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
    why="compute-sanitizer is neither on PATH nor in /usr/local/cuda/bin"
fi
skipped=
if [ -z "$CS" ]; then
    echo "SKIP (part): $why: memcheck, racecheck and synccheck did not run"
    skipped=" (but for compute-sanitizer: $why)"
else
    # The GPU test program (its own check must pass), and the prover at a small
    # size (its digest must be the CPU reference's).
    P="$GA_BUILD/tests/apps/prover/prover"
    require_built "$P"
    prover_reference "$P" --log-n 10 --queries 8
    want=$reference
    for prog in cudart_static prover; do
        for tool in memcheck racecheck synccheck; do
            for features in "GPUACCEL=1" "$ALL"; do
                if [ $prog = prover ]; then
                    set -- "$P" --log-n 10 --queries 8
                    result=$want
                else
                    set -- "$GA_BUILD/tests/gpu/cudart_static"
                    result='result ok=1 '
                fi
                # shellcheck disable=SC2086
                out=$(env $features LD_PRELOAD="$GA_LIB" "$CS" --tool "$tool" --report-api-errors no \
                    --error-exitcode 9 "$@" 2>&1)
                rc=$?
                echo "compute-sanitizer $tool $prog ($features): exit $rc, $(echo "$out" | grep -c 'ERROR SUMMARY: 0 errors') clean summary"
                [ $rc -eq 0 ] || { echo "$out" | tail -20; fail "$tool found errors in $prog ($features)"; }
                echo "$out" | grep -qF "$result" ||
                    fail "$tool: $prog did not print '$result' ($features): $(echo "$out" | tail -5)"
            done
        done
    done
fi
echo "PASS: reliability$skipped"
