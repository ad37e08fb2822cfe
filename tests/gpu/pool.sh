#!/bin/sh
# pool.sh (GPU) - the pool's guarantees on a real GPU (pool_test.cu): the
# same answers with the pool on, with poisoning on, and the pool served hits.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu pool
T="$GA_BUILD/tests/gpu/pool_test"
require_built "$T"
SHIM_ENV="GPUACCEL_POOL=1"
compare_runs "$T"
echo "$native_out" | grep -q 'ok=0' && fail "a check fails natively: $native_out"
echo "$SHIM_ERR" | grep -q '^gpuaccel: pool: hits=[1-9]' || fail "the pool served no allocation"
SHIM_ENV="GPUACCEL_POOL=1 GPUACCEL_POOL_POISON=1"
compare_runs "$T"
SHIM_ENV="GPUACCEL_POOL=1 GPUACCEL_POOL_LIMIT=8M"
compare_runs "$T"
echo "PASS: pool"
