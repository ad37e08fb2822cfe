#!/bin/sh
# multigpu.sh (GPU, two or more) - one process on two GPUs with contexts
# switched per call, and a two-process torchrun NCCL all-reduce, each natively
# and under the library with every feature on. Skips with fewer than two GPUs.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu multigpu
gpus=$(nvidia-smi -L | grep -c '^GPU')
[ "$gpus" -ge 2 ] || { echo "SKIP: fewer than two GPUs (nvidia-smi lists $gpus)"; exit 77; }
ALL=$ALL_FEATURES
SHIM_ENV="$ALL"
require_built "$GA_BUILD/tests/gpu/two_gpus"
compare_runs "$GA_BUILD/tests/gpu/two_gpus"
expect_ok two_gpus
PY=${PYTHON:-python3}
if $PY -c "import torch.distributed" 2>/dev/null; then
    export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
    compare_runs $PY -m torch.distributed.run --nproc_per_node=2 "$GA_SRC/tests/gpu/allreduce.py"
    expect_ok allreduce
else
    echo "SKIP (part): $PY cannot import torch.distributed: the two-process all-reduce did not run"
fi
echo "PASS: multigpu"
