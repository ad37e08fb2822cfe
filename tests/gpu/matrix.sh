#!/bin/sh
# matrix.sh (GPU) - real programs natively and under the library with every
# feature on (GA_MATRIX_SET=defaults: with no GPUACCEL_* variable at all, what a
# plain LD_PRELOAD gets): the output digests must be equal; prints the time
# ratio of each.
# A library run killed by a signal or exiting non-zero (the native one exited
# 0) fails its row at once (DIFFER). On a difference in output the program runs
# natively again: if it differs from itself the row says NATIVE-VARIES (not a
# failure, but shown); else it fails. The Python programs also check their own
# results (`check: ok`, or exit 1); a program that fails natively is a SKIP row
# with the end of its stderr. The
# torch.compile rows compile from an empty cache each run, so their times
# include compilation. With OUT set, the table also goes to $OUT/matrix.txt.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu matrix
ALL=$ALL_FEATURES
[ "${GA_MATRIX_SET:-all}" = defaults ] && ALL=
echo "matrix: ${GA_MATRIX_SET:-all} (${ALL:-no GPUACCEL_* variable})"
PY=${PYTHON:-python3}
G="$GA_SRC/tests/gpu"
B="$GA_BUILD/tests"

# show_diff A B: the lines where outputs A (<) and B (>) differ, at most 8.
show_diff() {
    printf '%s\n' "$1" >"$tmp/a"
    printf '%s\n' "$2" >"$tmp/b"
    if command -v diff >/dev/null 2>&1; then
        diff "$tmp/a" "$tmp/b" | grep '^[<>]' | head -8 | sed 's/^/   /'
    else
        printf '   < %s\n   > %s\n' "$(tail -1 "$tmp/a")" "$(tail -1 "$tmp/b")"
    fi
}

row() { # NAME ENV-or-- CMD...   (ENV: assignments separated by spaces)
    name=$1 env=$2
    shift 2
    [ "$env" = - ] && env=
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    n=$(env -u LD_PRELOAD $env "$@" 2>"$tmp/nerr") || {
        printf '%-34s SKIP (native run failed)\n' "$name"
        tail -12 "$tmp/nerr" | sed 's/^/   /'
        return
    }
    t1=$(date +%s.%N)
    # shellcheck disable=SC2086
    l=$(env $env $ALL LD_PRELOAD="$GA_LIB" "$@" 2>"$tmp/err")
    lrc=$?
    t2=$(date +%s.%N)
    same=equal
    if library_failed 0 "$lrc"; then
        # A crash or a failure of the library's run, whatever native does.
        same=DIFFER
        : >"$tmp/failed"
        printf '   library %s, native exit 0; its output against native (< native, > library):\n' \
            "$(exit_words "$lrc")"
        show_diff "$n" "$l"
        printf '   library stderr, last lines:\n'
        tail -20 "$tmp/err" | sed 's/^/   /'
    elif [ "$n" != "$l" ]; then
        # A program that differs from itself natively proves nothing either way.
        # shellcheck disable=SC2086
        n2=$(env -u LD_PRELOAD $env "$@" 2>/dev/null)
        if [ "$n2" != "$n" ]; then
            same=NATIVE-VARIES
            printf '   native runs differ (< first, > second):\n'
            show_diff "$n" "$n2"
        else
            same=DIFFER
            : >"$tmp/failed"
            printf '   library exit %s; its output against native (< native, > library):\n' "$lrc"
            show_diff "$n" "$l"
            printf '   library stderr, last lines:\n'
            tail -20 "$tmp/err" | sed 's/^/   /'
        fi
    fi
    awk -v n="$name" -v s="$same" -v a="$t0" -v b="$t1" -v c="$t2" \
        'BEGIN {printf "%-34s %-13s %10.3f %10.3f %7.2fx\n", n, s, b - a, c - b, (b - a) / (c - b)}'
}

# have MODULE: whether $PY imports it (asked once per module).
have() {
    eval "h=\${have_$1:-}"
    if [ -z "$h" ]; then
        if $PY -c "import $1" 2>/dev/null; then h=yes; else h=no; fi
        eval "have_$1=$h"
    fi
    [ "$h" = yes ]
}

rows() {
    printf '%-34s %-13s %10s %10s %8s\n' program digest native_s library_s speedup
    have torch && row "pytorch training + .item()" - $PY "$G/torch_check.py"
    have torch && row "pytorch, no caching allocator" PYTORCH_NO_CUDA_MEMORY_CACHING=1 $PY "$G/torch_check.py"
    have torch && row "pytorch, expandable segments" PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
        $PY "$G/torch_check.py"
    have torch && row "pytorch cuda graphs (capture)" - $PY "$G/torch_graph_check.py"
    have torch && row "pytorch torch.compile" - $PY "$G/torch_compile_check.py" default
    have torch && row "pytorch compile reduce-overhead" - $PY "$G/torch_compile_check.py" reduce-overhead
    have cupy && row "cupy (memory pool)" - $PY "$G/cupy_check.py"
    have cupy && row "cupy (no pool)" - $PY "$G/cupy_check.py" nopool
    have cupy && row "cupy stream capture + Graph" - $PY "$G/cupy_check.py" capture
    have cupy && row "cupy stream capture, no pool" - $PY "$G/cupy_check.py" capture nopool
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
}

# rows runs in a pipeline's subshell when teed: a failure is a file, not a variable.
if [ -n "${OUT:-}" ] && mkdir -p "$OUT" 2>/dev/null; then
    rows | tee "$OUT/matrix.txt"
else
    rows
fi
[ ! -e "$tmp/failed" ] || fail "a program's output differed under the library"
echo "PASS: matrix"
