#!/bin/sh
# graphs.sh (GPU) - repeated launch sequences replayed as graphs on a real GPU
# (graphs_prog.c): same results with scalar and pointer arguments changing,
# events bracketing, interrupted sequences, two threads and streams, the
# legacy and per-thread default streams; graphs were replayed; and the
# prover's digest with --proofs 8 is unchanged.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu graphs
P="$GA_BUILD/tests/progs"
PTX="$GA_SRC/tests/progs/kernels.ptx"
SHIM_ENV="GPUACCEL_GRAPHS=1"
compare_runs "$P/graphs_prog" "$PTX"
echo "$native_out" | grep -q 'ok=0' && fail "a check fails natively: $native_out"
echo "$SHIM_ERR" | grep -q '^gpuaccel: graphs: .*replays=[1-9]' || fail "no graph was replayed"
compare_runs "$GA_BUILD/tests/gpu/cudart_static"
if [ -x "$GA_BUILD/tests/apps/prover/prover" ]; then
    compare_runs "$GA_BUILD/tests/apps/prover/prover" --proofs 8
    echo "$SHIM_ERR" | grep '^gpuaccel: graphs:'
fi
SHIM_ENV="GPUACCEL_GRAPHS=1 GPUACCEL_POOL=1 GPUACCEL_COALESCE=1"
compare_runs "$P/graphs_prog" "$PTX"
echo "PASS: graphs"
