#!/bin/sh
# capture.sh (GPU) - stream captures and "host" pointers as real code makes
# them (capture_test.cu, capture_prog.c through the driver API, hostptr_test.cu):
# the same output natively, under each feature alone and under all of them;
# every check passes (each by name). With GA_LIB_BEFORE naming an earlier
# build of the library, the same programs also run under it and the verdicts
# are printed (to show a reproduction failing before a fix; never a failure
# here).
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu capture
CT="$GA_BUILD/tests/gpu/capture_test"
HT="$GA_BUILD/tests/gpu/hostptr_test"
CP="$GA_BUILD/tests/progs/capture_prog"
PTX="$GA_SRC/tests/progs/kernels.ptx"
require_built "$CT"
require_built "$HT"
ALL=$ALL_FEATURES
for feature in GPUACCEL_POOL=1 GPUACCEL_ASYNC_POOL=1 GPUACCEL_PINNED=1 GPUACCEL_COALESCE=1 GPUACCEL_GRAPHS=1 GPUACCEL_KERNELS=1 \
    "$ALL" "$ALL GPUACCEL_PROFILE=$tmp/prof GPUACCEL_PROFILE_KERNELS=1"; do
    SHIM_ENV=$feature
    compare_runs "$CT"
    expect_ok mixed modes ptds thread invalid churn
    compare_runs "$CP" "$PTX"
    expect_ok mixed modes ptsz thread invalid
done
SHIM_ENV="$ALL"
compare_runs "$CT" churn
expect_ok churn
echo "$SHIM_ERR" | grep -q '^gpuaccel: pool: hits=[1-9]' || fail "the pool served nothing after the captures"
echo "$SHIM_ERR" | grep -q '^gpuaccel: coalesce: hits=[1-9]' || fail "coalescing served nothing"
for feature in GPUACCEL_COALESCE=1 "$ALL"; do
    SHIM_ENV=$feature
    compare_runs "$HT"
    expect_ok device-dst: device-dst-reread: device-src: managed: mapped: registered: past-end:
done
echo "$native_out" | grep -q 'past-end: no error' || fail "past-end reads fault natively"
if [ -n "${GA_LIB_BEFORE:-}" ] && [ -f "$GA_LIB_BEFORE" ]; then
    echo "the same programs under the earlier library ($GA_LIB_BEFORE):"
    for feature in GPUACCEL_POOL=1 GPUACCEL_ASYNC_POOL=1 GPUACCEL_PINNED=1 GPUACCEL_COALESCE=1 GPUACCEL_GRAPHS=1 GPUACCEL_KERNELS=1; do
        # shellcheck disable=SC2086
        out=$(env $feature LD_PRELOAD="$GA_LIB_BEFORE" "$CT" mixed 2>&1)
        echo "   capture_test mixed, $feature: exit $? $(echo "$out" | tr '\n' ' ' | cut -c1-160)"
    done
    out=$(env GPUACCEL_COALESCE=1 LD_PRELOAD="$GA_LIB_BEFORE" "$HT" 2>&1)
    echo "   hostptr_test, GPUACCEL_COALESCE=1: exit $? $(echo "$out" | head -1)"
fi
echo "PASS: capture"
