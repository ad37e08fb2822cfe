#!/bin/sh
# reliability.sh (GPU) - the stress program (16 threads) natively and with every
# feature on; a faulting kernel (the same error codes afterwards); compute-sanitizer
# memcheck, racecheck and synccheck on a GPU test program and on the prover
# (small size, digest checked) under the library (with the pool off: a pooled block is
# still allocated to the driver, so a use after free inside it is invisible to
# memcheck; with the pool on the run must still be clean).
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
echo "$native_out" | grep -q 'sync=700' || echo "note: the fault was reported as: $native_out"
SHIM_ENV="$ALL GPUACCEL_LAZY_SYNC=0 GPUACCEL_POOL_POISON=1"
compare_runs --checks "$fault_line" "$GA_BUILD/tests/gpu/fault"
SHIM_ENV="$ALL"
lazy_out=$(env LD_PRELOAD="$GA_LIB" $SHIM_ENV "$GA_BUILD/tests/gpu/fault" 2>/dev/null)
echo "with lazy synchronization: $lazy_out"
echo "$lazy_out" | grep -Eq 'sync=(0|700) alloc=[0-9]+ copy=700' ||
    fail "the fault was not reported by the next call that observes the device: $lazy_out"

CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -z "$CS" ]; then
    echo "SKIP part: compute-sanitizer not found"
else
    # The GPU test program, and the prover at a small size (its digest must
    # also be the one it prints natively).
    P="$GA_BUILD/tests/apps/prover/prover"
    want=$(env -u LD_PRELOAD "$P" --log-n 10 --queries 8 2>/dev/null | grep '^digest:')
    for prog in cudart_static prover; do
        for tool in memcheck racecheck synccheck; do
            for features in "GPUACCEL=1" "$ALL"; do
                if [ $prog = prover ]; then
                    set -- "$P" --log-n 10 --queries 8
                else
                    set -- "$GA_BUILD/tests/gpu/cudart_static"
                fi
                # shellcheck disable=SC2086
                out=$(env $features LD_PRELOAD="$GA_LIB" "$CS" --tool "$tool" --report-api-errors no \
                    --error-exitcode 9 "$@" 2>&1)
                rc=$?
                echo "compute-sanitizer $tool $prog ($features): exit $rc, $(echo "$out" | grep -c 'ERROR SUMMARY: 0 errors') clean summary"
                [ $rc -eq 0 ] || { echo "$out" | tail -20; fail "$tool found errors in $prog ($features)"; }
                [ $prog = cudart_static ] || echo "$out" | grep -qxF "$want" ||
                    fail "$tool: the prover's digest changed ($features)"
            done
        done
    done
fi
echo "PASS: reliability"
