#!/bin/sh
# staging.sh (GPU) - large pageable copies staged through the library's pinned
# buffers (GPUACCEL_STAGING): every byte and every return code as native
# (staging_test.cu through cudart and the driver API, built as is and with
# --default-stream per-thread; staging_prog.c through the driver API alone),
# every check passing (each by name), and the copies were staged both ways.
# Then the host-pointer and capture programs with the threshold lowered so
# that their copies qualify, and the prover, unchanged. Every copy that
# qualifies is staged (GPUACCEL_STAGING_ADAPT=0), but in the last run of
# staging_test, with the admission by measurement as shipped.
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
# The checks staging_test prints: each size (around 1 MiB, the chunks and the
# ring) by each entry point, stream order and copies too long by entry point,
# the threads.
test_checks() {
    apis="cudaMemcpy cudaMemcpyAsync-stream cudaMemcpyAsync-default cuMemcpy cuMemcpyAsync"
    for size in 1048575 1048576 1048577 2097153 8388607 8388608 8388609 15728639 15728640 \
        15728641 33554445 67108871; do
        for api in $apis; do expect_ok "size=$size $api"; done
    done
    for api in $apis; do expect_ok "stream order $api" "too long $api:"; done
    expect_ok threads
}
# The same for staging_prog (sizes around 64 KiB and 256 KiB, its five modes).
prog_checks() {
    modes="sync ptds async-stream async-null ptsz"
    for size in 65535 65536 262143 262144 262145 787209 5242883; do
        for mode in $modes; do expect_ok "size=$size $mode"; done
    done
    for mode in $modes; do expect_ok "too long $mode:"; done
    expect_ok "after fork" threads
}
SHIM_ENV="GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=1M GPUACCEL_STAGING_ADAPT=0"
compare_runs "$T"
test_checks
staged
compare_runs "$TP"
test_checks
staged
compare_runs "$GA_BUILD/tests/progs/staging_prog" 4
prog_checks
staged
# one copying thread (no helpers), and every feature on at once
SHIM_ENV="GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=1M GPUACCEL_STAGING_THREADS=1 GPUACCEL_STAGING_ADAPT=0"
compare_runs "$T" 2
test_checks
staged
SHIM_ENV="GPUACCEL=all GPUACCEL_STAGING_MIN=1M GPUACCEL_STAGING_ADAPT=0"
compare_runs "$T"
test_checks
staged
# as shipped: each kind and size of copy the way measured faster (each class
# is staged at least once)
SHIM_ENV="GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=1M"
compare_runs "$T"
test_checks
staged
# programs written for other features, with every copy of 4 KiB or more staged
SHIM_ENV="GPUACCEL_STAGING=1 GPUACCEL_STAGING_MIN=4K GPUACCEL_STAGING_ADAPT=0"
compare_other_programs
echo "$SHIM_ERR" | grep '^gpuaccel: staging:'
echo "PASS: staging"
