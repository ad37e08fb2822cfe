#!/bin/sh
# multigpu.sh (GPU, two or more) - two GPUs in one process and in two, each
# part natively and under the library twice: with the defaults (LD_PRELOAD
# alone, no GPUACCEL_* set but the log) and with every feature on; the same
# output as the native run, and every check line of each part (expect_ok):
#   two_gpus            contexts switched per call: device blocks (the pool),
#                       pinned churn from both devices, stream-ordered blocks on
#                       each device's stream (tests/gpu/two_gpus.cu)
#   coalesce_test --two-gpus   memory of one device written by the other
#                       (peer copies, a peer kernel) between 4-byte reads that
#                       coalescing may serve; both directions
#   torch2.py           one PyTorch process on cuda:0 and cuda:1
#   allreduce.py        torchrun, two processes: an NCCL all-reduce
#   ddp.py              torchrun, two processes: DistributedDataParallel
#   cuda-samples        the five samples that need two GPUs (tests/gpu/samples.sh
#                       with GA_SAMPLES_REQUIRE=1: waived natively is a failure)
# Skips with fewer than two GPUs (nvidia-smi, and CUDA_VISIBLE_DEVICES when it
# is set); a part that cannot run here says so in a "SKIP (part):" line.
#   PYTHON              the Python with torch (default python3)
#   GA_CUDA_SAMPLES     the carried cuda-samples (tools/carry-samples.sh)
#   GA_MULTIGPU_PARTS   only these parts (blank-separated: two_gpus coalesce
#                       torch2 allreduce ddp samples; default all)
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu multigpu
gpus=$(nvidia-smi -L | grep -c '^GPU')
[ "$gpus" -ge 2 ] || { echo "SKIP: fewer than two GPUs (nvidia-smi lists $gpus)"; exit 77; }
if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
    visible=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
    [ "$visible" -ge 2 ] || {
        echo "SKIP: CUDA_VISIBLE_DEVICES='$CUDA_VISIBLE_DEVICES' shows fewer than two of the $gpus GPUs"
        exit 77
    }
fi
# NVLink multicast stays off: NCCL, PyTorch's symmetric memory and NVSHMEM
# would otherwise create multicast objects (the library never sees those).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PARTS=${GA_MULTIGPU_PARTS:-two_gpus coalesce torch2 allreduce ddp samples}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
TWO="$GA_BUILD/tests/gpu/two_gpus"
CO="$GA_BUILD/tests/gpu/coalesce_test"
part two_gpus && require_built "$TWO"
part coalesce && require_built "$CO"
PY=${PYTHON:-python3}

# Which parts can run here, each said once.
coalesce=0
if part coalesce; then
    probe=$(env -u LD_PRELOAD "$CO" --two-gpus 2>&1)
    case $? in
    0) coalesce=1 ;;
    77) echo "SKIP (part): coalesce_test --two-gpus: $(echo "$probe" | grep -m1 '^SKIP' | sed 's/^SKIP: //')" ;;
    *) coalesce=1 ;; # compare_runs says what failed
    esac
fi
torch=0 dist=0
if part torch2 || part allreduce || part ddp; then
    if err=$($PY -c "import torch" 2>&1); then
        torch=1
        n=$($PY -c "import torch; print(torch.cuda.device_count())" 2>&1 | tail -1)
        [ "$n" -ge 2 ] 2>/dev/null || fail "torch sees $n CUDA devices, not two or more"
        if err=$($PY -c "import torch.distributed as d; assert d.is_nccl_available()" 2>&1); then
            dist=1
        else
            echo "SKIP (part): $PY has no torch.distributed with NCCL: allreduce and ddp did not run: $(echo "$err" | tail -1)"
        fi
    else
        echo "SKIP (part): $PY cannot import torch: torch2, allreduce and ddp did not run: $(echo "$err" | tail -1)"
    fi
fi
torchrun() { compare_runs "$PY" -m torch.distributed.run --standalone --nproc_per_node=2 "$@"; }

for setting in defaults every-feature; do
    SHIM_ENV=""
    [ $setting = defaults ] || SHIM_ENV=$ALL_FEATURES
    echo "== $setting: ${SHIM_ENV:-no GPUACCEL_* set}"
    if part two_gpus; then
        compare_runs "$TWO"
        expect_ok two_gpus pinned async
    fi
    if [ $coalesce = 1 ]; then
        compare_runs "$CO" --two-gpus
        expect_ok 1to0-copy 1to0-async 1to0-kernel 1to0-remote 0to1-copy 0to1-async 0to1-kernel 0to1-remote
        echo "$SHIM_ERR" | grep '^gpuaccel: coalesce:' | sed 's/^/   /'
    fi
    if [ $torch = 1 ] && part torch2; then
        compare_runs "$PY" "$GA_SRC/tests/gpu/torch2.py"
        expect_ok torch2
    fi
    if [ $dist = 1 ] && part allreduce; then
        torchrun "$GA_SRC/tests/gpu/allreduce.py"
        expect_ok allreduce
    fi
    if [ $dist = 1 ] && part ddp; then
        torchrun "$GA_SRC/tests/gpu/ddp.py"
        expect_ok ddp
    fi
done

# The cuda-samples that need two GPUs, both visible: each must run natively
# (a waive here, with two GPUs, is a failure) and agree under the library.
if part samples; then
    if [ -z "${GA_CUDA_SAMPLES:-}" ]; then
        echo "SKIP (part): no CUDA samples carried (GA_CUDA_SAMPLES): the two-GPU samples did not run"
    else
        for setting in defaults every-feature; do
            feats=""
            [ $setting = defaults ] || feats=$ALL_FEATURES
            echo "== samples, $setting"
            GA_SAMPLES="simpleP2P streamOrderedAllocationP2P conjugateGradientMultiDeviceCG simpleCUFFT_MGPU simpleCUFFT_2d_MGPU" \
                GA_SAMPLES_FEATURES="$feats" GA_SAMPLES_REQUIRE=1 sh "${GA_SRC:-.}/tests/gpu/samples.sh" \
                >"$tmp/samples.out" 2>&1
            rc=$?
            sed 's/^/   /' "$tmp/samples.out"
            verdict=$(grep -m1 -E '^(PASS|FAIL|SKIP)' "$tmp/samples.out")
            case $rc in
            0) ;;
            77) echo "SKIP (part): the two-GPU samples, $setting: $verdict" ;;
            *) fail "the two-GPU samples, $setting (exit $rc): ${verdict:-no verdict}" ;;
            esac
        done
    fi
fi
echo "PASS: multigpu"
