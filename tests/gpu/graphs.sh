#!/bin/sh
# graphs.sh (GPU) - repeated launch sequences replayed as graphs on a real GPU
# (graphs_prog.c): same results with scalar and pointer arguments changing,
# events bracketing, interrupted sequences, two threads and streams, the
# legacy and per-thread default streams, every check passing (each by name);
# graphs were replayed; and the prover's digest with --proofs 8 is unchanged
# and the CPU reference's.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu graphs
P="$GA_BUILD/tests/progs"
PTX="$GA_SRC/tests/progs/kernels.ptx"
PROVER="$GA_BUILD/tests/apps/prover/prover"
require_built "$GA_BUILD/tests/gpu/cudart_static"
require_built "$PROVER"
checks="sequences events interrupt threads legacy ptds"
SHIM_ENV="GPUACCEL_GRAPHS=1"
compare_runs "$P/graphs_prog" "$PTX"
# shellcheck disable=SC2086
expect_ok $checks
echo "$SHIM_ERR" | grep -q '^gpuaccel: graphs: .*replays=[1-9]' || fail "no graph was replayed"
compare_runs "$GA_BUILD/tests/gpu/cudart_static"
expect_ok result
prover_reference "$PROVER" --proofs 8
compare_runs --reference "$reference" "$PROVER" --proofs 8
echo "$SHIM_ERR" | grep '^gpuaccel: graphs:'
SHIM_ENV="GPUACCEL_GRAPHS=1 GPUACCEL_POOL=1 GPUACCEL_COALESCE=1"
compare_runs "$P/graphs_prog" "$PTX"
# shellcheck disable=SC2086
expect_ok $checks
echo "PASS: graphs"
