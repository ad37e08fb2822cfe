#!/bin/sh
# cudart.sh (GPU) - runtime-API programs reach the driver through the
# cuGetProcAddress door: static cudart (nvcc's default), shared cudart, and a
# per-thread-default-stream build. Results and error codes are unchanged, the
# library counted the launches, and it resolved the kernel's name.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu cudart
B="$GA_BUILD/tests/gpu"
require_built "$B/cudart_static"

SHIM_ENV="GPUACCEL_LOG=debug"
compare_runs "$B/cudart_static"
expect_ok result
expect_calls cuLaunchKernel 100; expect_calls cuMemAlloc_v2 1; expect_calls cuGetProcAddress_v2 100
echo "$SHIM_ERR" | grep -q 'kernel .*: _Z10add_kernelPjjj, 3 parameters' || fail "kernel name not resolved"
echo "$native_out" | grep codes
echo "$SHIM_ERR" | grep 'is not in this build' | sed 's/^/   /'
echo "$SHIM_ERR" | grep -q 'streams are presumed busy' && fail "cudart fetched an entry point that disables tracking"

compare_runs "$B/cudart_shared"
expect_ok result
expect_calls cuLaunchKernel 100; expect_calls cuMemAlloc_v2 1

compare_runs "$B/cudart_ptds"
expect_ok result
expect_calls cuLaunchKernel_ptsz 100
echo "PASS: cudart"
