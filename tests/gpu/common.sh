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

# require_gpu NAME: skip, saying why, when nvidia-smi lists no GPU here.
require_gpu() {
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "SKIP: no GPU on this machine: nvidia-smi is not installed ($1)"
        exit 77
    fi
    if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
        echo "SKIP: no GPU on this machine: nvidia-smi lists none ($1)"
        exit 77
    fi
}

# require_built PROG: skip when the CUDA programs were not built because
# configure found no nvcc (make check exports NVCC, empty then); a program
# missing although nvcc was there is a failure, not a skip.
require_built() {
    [ ! -x "$1" ] || return 0
    if [ -z "${NVCC:-}" ]; then
        echo "SKIP: built without nvcc ($1 is not built)"
        exit 77
    fi
    fail "$1 is not built, although configure found nvcc ($NVCC)"
}

fail() {
    echo "FAIL: $*"
    exit 1
}

# What compare_runs takes for a check line: a word ok=0 or ok=1
# (tests/progs/verdict.h), a digest (the prover, tune_prog) or a Python
# check's verdict.
CHECK_LINES='(^| )ok=[01]( |$)|^digest: [0-9a-f]{16}$|^check: ok$'

# compare_runs [--checks ERE] [--reference TEXT] CMD...: CMD natively (its
# stdout in $native_out), then under the library with GPUACCEL_LOG=info and
# $SHIM_ENV (stdout in $shim_out, stderr in $SHIM_ERR). Fails unless both runs
# exit 0, the native stdout is not empty, holds a check line (lines matching
# ERE, $CHECK_LINES by default) and no failed check (ok=0), the two stdouts
# are the same, and, with --reference, the library's stdout is TEXT (what a
# CPU reference computed). Silence, a lost check line or a reference missed
# by both runs alike cannot pass.
compare_runs() {
    _cr_checks=$CHECK_LINES _cr_ref='' _cr_has_ref=0
    while :; do
        case ${1:-} in
        --checks) _cr_checks=$2; shift 2 ;;
        --reference) _cr_ref=$2 _cr_has_ref=1; shift 2 ;;
        *) break ;;
        esac
    done
    native_out=$(env -u LD_PRELOAD "$@" 2>"$tmp/nerr") ||
        { _cr_rc=$?; tail -20 "$tmp/nerr"; fail "native run failed (exit $_cr_rc): $*"; }
    # shellcheck disable=SC2086
    shim_out=$(env LD_PRELOAD="$GA_LIB" GPUACCEL_LOG=info $SHIM_ENV "$@" 2>"$tmp/err") ||
        { _cr_rc=$?; tail -40 "$tmp/err"; fail "library run failed (exit $_cr_rc): $*"; }
    SHIM_ERR=$(cat "$tmp/err")
    [ -n "$native_out" ] || fail "no output natively: $*"
    printf '%s\n' "$native_out" | grep -Eq -- "$_cr_checks" ||
        fail "no check line ($_cr_checks) natively: $*: '$native_out'"
    _cr_failed=$(printf '%s\n' "$native_out" | grep -E '(^| )ok=0( |$)') &&
        fail "a check fails natively: $*: $_cr_failed"
    [ "$native_out" = "$shim_out" ] || fail "outputs differ for $*: native '$native_out' library '$shim_out'"
    if [ $_cr_has_ref = 1 ] && [ "$shim_out" != "$_cr_ref" ]; then
        fail "the output is not the reference's for $*: '$shim_out', reference '$_cr_ref'"
    fi
    echo "ok: $* -> $(echo "$native_out" | head -2 | tr '\n' ' ')${_cr_ref:+ (= the reference)}"
    echo "$SHIM_ERR" | grep '^gpuaccel:' | grep -Ev '^gpuaccel: (debug|calls):' | sed 's/^/   /'
}

# expect_ok NAME...: the last compare_runs printed, for each NAME, a line that
# starts with NAME and a space and holds ok=1: a check the program no longer
# prints fails as surely as one that prints ok=0.
expect_ok() {
    for _eo_name; do
        printf '%s\n' "$shim_out" |
            awk -v n="$_eo_name " 'index($0, n) == 1 && / ok=1( |$)/ {found = 1} END {exit !found}' ||
            fail "no line '$_eo_name ... ok=1' in: $(printf '%s' "$shim_out" | tr '\n' '|' | cut -c1-400)"
    done
}

# prover_reference PROVER ARGS...: sets $reference to what the prover's CPU
# reference (--reference: no CUDA call at all) prints for ARGS, for
# compare_runs --reference; fails when it does not give a digest.
prover_reference() {
    reference=$("$@" --reference 2>"$tmp/ref.err") ||
        { cat "$tmp/ref.err"; fail "the CPU reference failed: $* --reference"; }
    printf '%s\n' "$reference" | grep -Eqx 'digest: [0-9a-f]{16}' ||
        fail "the CPU reference gave no digest: $* --reference: '$reference'"
}

# library_failed NATIVE_STATUS LIBRARY_STATUS: whether a library run failed on
# its own account, whatever a second native run would show: killed by a
# signal (a status above 128, as the shell and timeout report it) or a
# non-zero exit where the native run exited 0. Output that varies from one
# native run to the next says nothing of the library; a crash does.
library_failed() {
    [ "$2" -gt 128 ] || { [ "$1" -eq 0 ] && [ "$2" -ne 0 ]; }
}

# exit_words STATUS: a status as words ("exit 1", "signal 11 (exit 139)").
exit_words() {
    if [ "$1" -gt 128 ] && [ "$1" -lt 160 ]; then
        echo "signal $(($1 - 128)) (exit $1)"
    else
        echo "exit $1"
    fi
}

# The programs written for other features, compared with $SHIM_ENV: the
# host-pointer, capture and static-cudart programs (those built), the
# driver-API capture program and the prover.
compare_other_programs() {
    if [ -x "$GA_BUILD/tests/gpu/hostptr_test" ]; then
        compare_runs "$GA_BUILD/tests/gpu/hostptr_test"
        expect_ok device-dst: device-src: managed: mapped: registered: past-end:
    fi
    if [ -x "$GA_BUILD/tests/gpu/capture_test" ]; then
        compare_runs "$GA_BUILD/tests/gpu/capture_test"
        expect_ok mixed modes ptds thread invalid churn
    fi
    if [ -x "$GA_BUILD/tests/gpu/cudart_static" ]; then
        compare_runs "$GA_BUILD/tests/gpu/cudart_static"
        expect_ok result
    fi
    compare_runs "$GA_BUILD/tests/progs/capture_prog" "$GA_SRC/tests/progs/kernels.ptx"
    expect_ok mixed modes ptsz thread invalid
    prover_reference "$GA_BUILD/tests/apps/prover/prover" --log-n 12 --proofs 2
    compare_runs --reference "$reference" "$GA_BUILD/tests/apps/prover/prover" --log-n 12 --proofs 2
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
