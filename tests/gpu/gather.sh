#!/bin/sh
# gather.sh (GPU) - the library's gather kernel itself (kernels/gather.cu,
# compiled, and the PTX the library embeds without nvcc, kernels/gather.ptx)
# on seeded random reads against a CPU reference (gather_test.cu): the rules
# the fake driver's model of it follows (tests/fake/fakecuda.c), which every
# gather test without a GPU relies on, checked on the hardware. Natively,
# under the defaults and with every feature on: the same lines, each ok=1.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu gather
T="$GA_BUILD/tests/gpu/gather_test"
require_built "$T"
for env in "" "$ALL_FEATURES"; do
    SHIM_ENV=$env
    compare_runs "$T" "$GA_SRC/kernels/gather.ptx"
    expect_ok "compiled inline" "compiled list" "ptx inline" "ptx list"
done
echo "PASS: gather"
