#!/bin/sh
# matrix.sh (GPU) - real programs natively and under the library with every
# feature on: the output digests must be equal; prints the time ratio of each.
# On a difference the program runs natively again: if it differs from itself
# the row says NATIVE-VARIES (not a failure, but shown); else it fails.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu matrix
ALL="GPUACCEL_POOL=1 GPUACCEL_COALESCE=1 GPUACCEL_GRAPHS=1 GPUACCEL_KERNELS=1"
PY=${PYTHON:-python3}
G="$GA_SRC/tests/gpu"
B="$GA_BUILD/tests"
failed=0
printf '%-34s %-13s %10s %10s %8s\n' program digest native_s library_s speedup
row() { # NAME ENV-or-- CMD...
    name=$1 env=$2
    shift 2
    [ "$env" = - ] && env=
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    n=$(env -u LD_PRELOAD $env "$@" 2>/dev/null) || { printf '%-34s SKIP (native run failed)\n' "$name"; return; }
    t1=$(date +%s.%N)
    # shellcheck disable=SC2086
    l=$(env $env $ALL LD_PRELOAD="$GA_LIB" "$@" 2>"$tmp/err")
    lrc=$?
    t2=$(date +%s.%N)
    same=equal
    if [ "$n" != "$l" ] || [ $lrc != 0 ]; then
        # A program that differs from itself natively proves nothing either way.
        # shellcheck disable=SC2086
        n2=$(env -u LD_PRELOAD $env "$@" 2>/dev/null)
        if [ "$n2" != "$n" ]; then
            same=NATIVE-VARIES
            printf '   native runs differ: %s | %s\n' "$(echo "$n" | tail -1)" "$(echo "$n2" | tail -1)"
        else
            same=DIFFER
            failed=1
            printf '   library exit %s, output: %s (native: %s)\n' "$lrc" "$(echo "$l" | tail -1)" \
                "$(echo "$n" | tail -1)"
            tail -5 "$tmp/err"
        fi
    fi
    awk -v n="$name" -v s="$same" -v a="$t0" -v b="$t1" -v c="$t2" \
        'BEGIN {printf "%-34s %-13s %10.3f %10.3f %7.2fx\n", n, s, b - a, c - b, (b - a) / (c - b)}'
}
have() { $PY -c "import $1" 2>/dev/null; }
have torch && row "pytorch training + .item()" - $PY "$G/torch_check.py"
have torch && row "pytorch, no caching allocator" PYTORCH_NO_CUDA_MEMORY_CACHING=1 $PY "$G/torch_check.py"
have cupy && row "cupy (memory pool)" - $PY "$G/cupy_check.py"
have cupy && row "cupy (no pool)" - $PY "$G/cupy_check.py" nopool
have jax && row "jax jit" - $PY "$G/jax_check.py"
row "prover (default)" - "$B/apps/prover/prover"
row "prover --proofs 8" - "$B/apps/prover/prover" --proofs 8
row "cudart static" - "$B/gpu/cudart_static"
row "cudart shared" - "$B/gpu/cudart_shared"
row "cudart per-thread stream" - "$B/gpu/cudart_ptds"
row "pool_test" - "$B/gpu/pool_test"
row "coalesce_test" - "$B/gpu/coalesce_test"
row "tune_prog" - "$B/gpu/tune_prog"
row "graphs_prog" - "$B/progs/graphs_prog" "$GA_SRC/tests/progs/kernels.ptx"
row "door_getproc" - "$B/progs/door_getproc" "$GA_SRC/tests/progs/kernels.ptx"
[ $failed = 0 ] || fail "a program's output differed under the library"
echo "PASS: matrix"
