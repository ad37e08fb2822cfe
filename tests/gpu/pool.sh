#!/bin/sh
# pool.sh (GPU) - the pool's guarantees on a real GPU (pool_test.cu): the
# same answers with the pool on, with poisoning on and with a low limit,
# every check of the program passing (each by name), and the pool served hits.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu pool
T="$GA_BUILD/tests/gpu/pool_test"
require_built "$T"
checks="slow_free threads big_alloc meminfo ipc contexts no_context"
for env in "GPUACCEL_POOL=1" "GPUACCEL_POOL=1 GPUACCEL_POOL_POISON=1" "GPUACCEL_POOL=1 GPUACCEL_POOL_LIMIT=8M"; do
    SHIM_ENV=$env
    compare_runs "$T"
    # shellcheck disable=SC2086
    expect_ok $checks
    if [ "$env" = GPUACCEL_POOL=1 ]; then
        echo "$SHIM_ERR" | grep -q '^gpuaccel: pool: hits=[1-9]' || fail "the pool served no allocation"
    fi
done
echo "PASS: pool"
