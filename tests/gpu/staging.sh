#!/bin/sh
# staging.sh (GPU) - large pageable copies staged through the library's pinned
# buffers (GPUACCEL_STAGING): every byte and every return code as native
# (staging_test.cu through cudart and the driver API, built as is and with
# --default-stream per-thread; staging_prog.c through the driver API alone),
# and the copies were staged both ways. Then the host-pointer and capture
# programs with the threshold lowered so that their copies qualify, and the
# prover, unchanged.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu staging
T="$GA_BUILD/tests/gpu/staging_test"
TP="$GA_BUILD/tests/gpu/staging_test_ptds"
require_built "$T"
require_built "$TP"
staged() {
    echo "$SHIM_ERR" | grep -Eq '^gpuaccel: staging: htod=[1-9][0-9]* dtoh=[1-9][0-9]* ' ||
        fail "nothing was staged both ways: $(echo "$SHIM_ERR" | grep '^gpuaccel: staging:')"
}
SHIM_ENV="GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=1M"
compare_runs "$T"
echo "$native_out" | grep -q 'ok=0' && fail "a check fails natively: $(echo "$native_out" | grep 'ok=0')"
staged
compare_runs "$TP"
echo "$native_out" | grep -q 'ok=0' && fail "a check fails natively (per-thread default stream)"
staged
compare_runs "$GA_BUILD/tests/progs/staging_prog" 4
echo "$native_out" | grep -q 'ok=0' && fail "a driver-API check fails natively"
staged
# one copying thread (no helpers), and every feature on at once
SHIM_ENV="GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=1M GPUACCEL_STAGING_THREADS=1"
compare_runs "$T" 2
staged
SHIM_ENV="GPUACCEL=all GPUACCEL_STAGING_MIN=1M"
compare_runs "$T"
staged
# programs written for other features, with every copy of 4 KiB or more staged
SHIM_ENV="GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=4K"
compare_other_programs
echo "$SHIM_ERR" | grep '^gpuaccel: staging:'
echo "PASS: staging"
