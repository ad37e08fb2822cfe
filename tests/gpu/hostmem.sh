#!/bin/sh
# hostmem.sh (GPU) - stream-ordered allocations and page-locked host memory on
# a real GPU (hostmem_test.cu), and streams made per operation: the same
# answers as native with async_pool, with pinned, with streams and with all
# of them, every check passing (each by name), and each feature acted.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu hostmem
T="$GA_BUILD/tests/gpu/hostmem_test"
require_built "$T"
for feature in GPUACCEL_ASYNC_POOL=1 GPUACCEL_PINNED=1 GPUACCEL_STREAMS=1 \
    "GPUACCEL_ASYNC_POOL=1 GPUACCEL_PINNED=1 GPUACCEL_STREAMS=1 GPUACCEL_POOL=1 GPUACCEL_LOG=info"; do
    SHIM_ENV=$feature
    # shellcheck disable=SC2086
    env LD_PRELOAD="$GA_LIB" $feature "$T" 2>&1 | grep -v '^gpuaccel: calls' | sed 's/^/   first run: /'
    compare_runs "$T"
    expect_ok "async threads" "async captured" "pinned fence" "pinned mapped" "stream churn"
done
echo "$SHIM_ERR" | grep -q 'async_pool: [1-9][0-9]* of' || fail "async_pool never acted"
echo "$SHIM_ERR" | grep -q 'pinned: [1-9][0-9]* of' || fail "pinned served nothing"
echo "$SHIM_ERR" | grep -q 'streams: [1-9][0-9]* of' || fail "streams served nothing"
echo "PASS: hostmem"
