# common.sh - sourced by the GPU tests: skip visibly without a GPU, and run a
# program natively and under the library. Expects GA_LIB, GA_BUILD, GA_SRC
# (make check exports them; tools/gpu-suite does too).

# The environment that switches every feature on: each switchable row of
# src/features/features.def set to 1, but tune's (it acts only with a table,
# which the tests that want it give). One list, so a new feature is in every
# "every feature on" run without an edit here.
every_feature() {
    sed -n 's/^GA_FEATURE([a-z_]*, *\(GPUACCEL_[A-Z_]*\), *1)$/\1=1/p' \
        "${GA_SRC:-.}/src/features/features.def" | grep -v '^GPUACCEL_TUNE=' | tr '\n' ' '
}
ALL_FEATURES=$(every_feature)

require_gpu() {
    if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
        echo "SKIP: no GPU on this machine ($1)"
        exit 77
    fi
}

# require_built PROG: skip visibly when the CUDA programs were not built.
require_built() {
    if [ ! -x "$1" ]; then
        echo "SKIP: built without nvcc"
        exit 77
    fi
}

fail() {
    echo "FAIL: $*"
    exit 1
}

# Compare native and library runs of a command; the library's stderr lands in
# $SHIM_ERR. Extra environment for the library run goes in $SHIM_ENV.
compare_runs() {
    native_out=$(env -u LD_PRELOAD "$@" 2>/dev/null) || fail "native run failed: $*"
    # shellcheck disable=SC2086
    shim_out=$(env LD_PRELOAD="$GA_LIB" GPUACCEL_LOG=info $SHIM_ENV "$@" 2>"$tmp/err") ||
        { cat "$tmp/err"; fail "library run failed: $*"; }
    SHIM_ERR=$(cat "$tmp/err")
    [ "$native_out" = "$shim_out" ] || fail "outputs differ for $*: native '$native_out' library '$shim_out'"
    echo "ok: $* -> $(echo "$native_out" | head -2 | tr '\n' ' ')"
    echo "$SHIM_ERR" | grep '^gpuaccel:' | grep -Ev '^gpuaccel: (debug|calls):' | sed 's/^/   /'
}

# The programs written for other features, compared with $SHIM_ENV: the
# host-pointer, capture and static-cudart programs (those built), the
# driver-API capture program and the prover.
compare_other_programs() {
    for p in hostptr_test capture_test cudart_static; do
        if [ -x "$GA_BUILD/tests/gpu/$p" ]; then compare_runs "$GA_BUILD/tests/gpu/$p"; fi
    done
    compare_runs "$GA_BUILD/tests/progs/capture_prog" "$GA_SRC/tests/progs/kernels.ptx"
    compare_runs "$GA_BUILD/tests/apps/prover/prover" --log-n 12 --proofs 2
}

calls_of() {
    echo "$SHIM_ERR" | grep '^gpuaccel: calls:' | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1 | grep . || echo 0
}

# Total calls of every entry point whose name matches the extended REGEX.
sum_calls() {
    echo "$SHIM_ERR" | grep '^gpuaccel: calls:' | tr ' ' '\n' | grep -E "^($1)=" |
        awk -F= '{s += $2} END {print s + 0}'
}

expect_calls() { # NAME MIN
    n=$(calls_of "$1")
    [ "$n" -ge "$2" ] || fail "expected at least $2 calls of $1, saw $n"
    echo "   $1=$n"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
