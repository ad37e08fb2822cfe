#!/bin/sh
# prover.sh (GPU) - the bundled prover: GPU digests equal the CPU reference
# (gpu_check.sh), and the library changes no digest, with --proofs 2.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu prover
P="$GA_BUILD/tests/apps/prover/prover"
require_built "$P"
sh "$GA_SRC/tests/apps/prover/gpu_check.sh" "$P" || fail "gpu_check.sh"
compare_runs "$P" --log-n 12 --proofs 2
expect_calls cuLaunchKernel 100
echo "PASS: prover"
