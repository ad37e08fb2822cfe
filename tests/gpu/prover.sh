#!/bin/sh
# prover.sh (GPU) - the bundled prover: GPU digests equal the CPU reference
# and every proof verifies (gpu_check.sh), natively and under the library with
# every feature on; and at --log-n 12 --proofs 2 the library's digest is the
# native run's and the CPU reference's.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu prover
P="$GA_BUILD/tests/apps/prover/prover"
require_built "$P"
sh "$GA_SRC/tests/apps/prover/gpu_check.sh" "$P" || fail "gpu_check.sh, native"
# shellcheck disable=SC2086
sh "$GA_SRC/tests/apps/prover/gpu_check.sh" "$P" LD_PRELOAD="$GA_LIB" $ALL_FEATURES ||
    fail "gpu_check.sh under the library"
prover_reference "$P" --log-n 12 --proofs 2
compare_runs --reference "$reference" "$P" --log-n 12 --proofs 2
expect_calls cuLaunchKernel 100
echo "PASS: prover"
