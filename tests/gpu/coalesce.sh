#!/bin/sh
# coalesce.sh (GPU) - coalescing's guarantees on a real GPU (coalesce_test.cu):
# the same answers with coalescing on (with gathers and without), the polling
# loop ends, memory shared with another process or rewritten from another
# context is read anew, reads were served from windows and the query phase
# gathered, a 4 MiB column read again and again was kept from staging's copies;
# every check of the program passes (each by name). Then the GPU
# test programs and the prover, unchanged (and the CPU reference's digest).
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu coalesce
T="$GA_BUILD/tests/gpu/coalesce_test"
PROVER="$GA_BUILD/tests/apps/prover/prover"
require_built "$T"
require_built "$PROVER"
checks="scan stream poll threads query columns ipc peer"
prover_reference "$PROVER" --log-n 12 --proofs 2
SHIM_ENV="GPUACCEL_COALESCE=1 GPUACCEL_COALESCE_GATHER=1"
compare_runs "$T"
# shellcheck disable=SC2086
expect_ok $checks
echo "$SHIM_ERR" | grep -q '^gpuaccel: coalesce: hits=[1-9]' || fail "no read was served"
echo "$SHIM_ERR" | grep -q 'gathers=[1-9]' || fail "the query phase was never gathered"
# Memory marked for GPUDirect RDMA or exported as a dma-buf (a NIC may write it
# unseen): never served; the same reads of plain memory are.
compare_runs "$T" --dma marked
expect_ok "dma marked"
echo "$SHIM_ERR" | grep -q '^gpuaccel: coalesce: hits=0 ' || fail "reads of RDMA-marked memory served"
compare_runs --checks '(^| )ok=[01]( |$)|^dma dmabuf unsupported$' "$T" --dma dmabuf
if echo "$native_out" | grep -qx 'dma dmabuf unsupported'; then
    echo "SKIP (part): this device exports no dma-buf: the dma-buf check did not run"
else
    expect_ok "dma dmabuf"
    echo "$SHIM_ERR" | grep -q '^gpuaccel: coalesce: hits=0 ' || fail "reads of dma-buf memory served"
fi
compare_runs "$T" --dma plain
expect_ok "dma plain"
echo "$SHIM_ERR" | grep -q '^gpuaccel: coalesce: hits=[1-9]' || fail "reads of plain memory not served"
SHIM_ENV="GPUACCEL_COALESCE=1 GPUACCEL_COALESCE_GATHER=0" # windows alone
compare_runs "$T"
# shellcheck disable=SC2086
expect_ok $checks
echo "$SHIM_ERR" | grep -q ' gathers=0 ' || fail "gathers made while switched off"
echo "$SHIM_ERR" | grep -q 'mirrors=[1-9]' || fail "no whole-column read was kept"
# With staging, a 1-16 MiB read is kept from staging's copy of it: the 4 MiB
# column, kept anew after each of its six writers (24 MiB), must have been.
SHIM_ENV="GPUACCEL_COALESCE=1 GPUACCEL_STAGING=1"
compare_runs "$T"
# shellcheck disable=SC2086
expect_ok $checks
# (the ipc check's child process reports too: the largest figure is the parent's)
kept=$(echo "$SHIM_ERR" | sed -n 's/^gpuaccel: coalesce: .* mirror_bytes=\([0-9]*\) .*/\1/p' |
	sort -n | tail -n 1)
[ "${kept:-0}" -ge 25165824 ] || fail "the 4 MiB column was not kept (mirror_bytes=${kept:-none})"
compare_runs "$GA_BUILD/tests/gpu/cudart_static"
expect_ok result
compare_runs --reference "$reference" "$PROVER" --log-n 12 --proofs 2
echo "$SHIM_ERR" | grep '^gpuaccel: coalesce:'
SHIM_ENV="GPUACCEL_COALESCE=1 GPUACCEL_POOL=1"
compare_runs "$T"
# shellcheck disable=SC2086
expect_ok $checks
compare_runs --reference "$reference" "$PROVER" --log-n 12 --proofs 2
echo "PASS: coalesce"
