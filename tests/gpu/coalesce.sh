#!/bin/sh
# coalesce.sh (GPU) - coalescing's guarantees on a real GPU (coalesce_test.cu):
# the same answers with coalescing on (with gathers and without), the polling
# loop ends, memory shared with another process or rewritten from another
# context is read anew, reads were served from windows and the query phase
# gathered. Then the GPU test programs and the prover, unchanged.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu coalesce
T="$GA_BUILD/tests/gpu/coalesce_test"
require_built "$T"
SHIM_ENV="GPUACCEL_COALESCE=1 GPUACCEL_COALESCE_GATHER=1"
compare_runs "$T"
echo "$native_out" | grep -q 'ok=0' && fail "a check fails natively: $native_out"
echo "$native_out" | grep -q '^ipc ok=1' && echo "$native_out" | grep -q '^peer ok=1' ||
    fail "the ipc and peer checks did not run: $native_out"
echo "$SHIM_ERR" | grep -q '^gpuaccel: coalesce: hits=[1-9]' || fail "no read was served"
echo "$SHIM_ERR" | grep -q 'gathers=[1-9]' || fail "the query phase was never gathered"
# Memory marked for GPUDirect RDMA or exported as a dma-buf (a NIC may write it
# unseen): never served; the same reads of plain memory are.
compare_runs "$T" --dma marked
echo "$native_out" | grep -q '^dma marked ok=1' || fail "the dma check failed: $native_out"
echo "$SHIM_ERR" | grep -q '^gpuaccel: coalesce: hits=0 ' || fail "reads of RDMA-marked memory served"
compare_runs "$T" --dma dmabuf
if echo "$native_out" | grep -q '^dma dmabuf unsupported'; then
    echo "SKIP (part): this device exports no dma-buf"
else
    echo "$native_out" | grep -q '^dma dmabuf ok=1' || fail "the dma-buf check failed: $native_out"
    echo "$SHIM_ERR" | grep -q '^gpuaccel: coalesce: hits=0 ' || fail "reads of dma-buf memory served"
fi
compare_runs "$T" --dma plain
echo "$SHIM_ERR" | grep -q '^gpuaccel: coalesce: hits=[1-9]' || fail "reads of plain memory not served"
SHIM_ENV="GPUACCEL_COALESCE=1 GPUACCEL_COALESCE_GATHER=0" # windows alone
compare_runs "$T"
echo "$SHIM_ERR" | grep -q 'gathers=0' || fail "gathers made while switched off"
echo "$SHIM_ERR" | grep -q 'mirrors=[1-9]' || fail "no whole-column read was kept"
compare_runs "$GA_BUILD/tests/gpu/cudart_static"
compare_runs "$GA_BUILD/tests/apps/prover/prover" --log-n 12 --proofs 2
echo "$SHIM_ERR" | grep '^gpuaccel: coalesce:'
SHIM_ENV="GPUACCEL_COALESCE=1 GPUACCEL_POOL=1"
compare_runs "$T"
compare_runs "$GA_BUILD/tests/apps/prover/prover" --log-n 12 --proofs 2
echo "PASS: coalesce"
