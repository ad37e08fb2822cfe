# helpers.bash - shared setup for the Bats tests. Runs programs against the
# fake driver (tests/fake), natively and with the library preloaded.
# AM_TESTS_ENVIRONMENT exports GA_LIB, GA_BUILD, GA_SRC and GA_CC.

setup_fake() {
    # A launcher's rank names profiles PATH.rank<R>.<pid>.*: the tests set it themselves.
    unset RANK WORLD_SIZE LOCAL_RANK OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE \
        OMPI_COMM_WORLD_LOCAL_RANK PMI_RANK PMI_SIZE MPI_LOCALRANKID SLURM_PROCID SLURM_NTASKS \
        SLURM_LOCALID
    FAKE_DIR="$GA_BUILD/tests/fake"
    PROGS="$GA_BUILD/tests/progs"
    PTX="$GA_SRC/tests/progs/kernels.ptx"
    [ -f "$GA_LIB" ] || { echo "library not built: $GA_LIB" >&2; return 1; }
    [ -f "$FAKE_DIR/libcuda.so.1" ] || { echo "fake driver not built" >&2; return 1; }
}

# The features `gpuaccel run --enable` and `gpuaccel ab` switch, one a line,
# in features.def order, named as the command names them (the variable
# without GPUACCEL_, in lower case): a new feature needs no edit here.
toggled_features() {
    sed -n 's/^GA_FEATURE([a-z_]*, *GPUACCEL_\([A-Z_]*\), *1)$/\1/p' \
        "$GA_SRC/src/features/features.def" | tr 'A-Z' 'a-z'
}

# Every feature switched on, as NAME=1 words: the GPU tests' own list
# (tests/gpu/common.sh, from features.def; tune left out).
every_feature_env() {
    (. "$GA_SRC/tests/gpu/common.sh" && echo "$ALL_FEATURES")
}

# native PROG ARGS...: run against the fake driver, no library.
native() {
    env -u LD_PRELOAD LD_LIBRARY_PATH="$FAKE_DIR" "$@"
}

# shim PROG ARGS...: the same with the library preloaded.
shim() {
    env LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$@"
}

# The number of calls of entry point NAME in a "gpuaccel: calls:" summary on
# stdin (0 when absent).
calls_of() {
    grep '^gpuaccel: calls:' | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1 | grep . || echo 0
}

# no_line ERE: fails, showing them, when lines of $output match ERE. (A bare
# `! echo "$output" | grep -q ERE` fails nothing before a test's last line:
# set -e ignores a negated command. tools/check-bats rejects one.)
no_line() {
    local hit
    if hit=$(grep -E -- "$1" <<<"$output"); then
        echo "expected no line matching '$1'; found:" >&2
        echo "$hit" >&2
        return 1
    fi
}

# has_words TEXT [STRING]: STRING ($output by default) holds TEXT with no
# letter, digit or _ just before or after it (grep -wF), so that a number in
# it is matched exactly: "driver_waits=1" is not found in "driver_waits=12",
# nor "1 verified entries" in "11 verified entries" (a glob *"waits=1"* finds
# both). Says what is missing.
has_words() {
    local text=${2-$output}
    grep -qwF -- "$1" <<<"$text" && return 0
    echo "not found as whole words: '$1'" >&2
    return 1
}

# like_native ENV... -- CMD ARGS: CMD's stdout natively goes in $want; then CMD
# runs with the library, ENV and GPUACCEL_LOG=info, and must succeed with the
# same stdout. $output keeps the library's lines for the test's own checks.
like_native() {
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    want=$(native "$@")
    run env "${envs[@]}" GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$@"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -v '^gpuaccel:')" = "$want" ]
}
