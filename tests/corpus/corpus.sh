#!/bin/sh
# corpus.sh (GPU) - public GPU prover code run natively and under the library with
# every feature on: supranational/sppark's NTT, RISC Zero's prover kernels and
# NethermindEth/stwo-gpu's circle FFT and Merkle commitment, each built from the
# project's own sources (carried by tools/carry-corpus.sh, never committed) and
# driven by tests/corpus/<project> the way the project's prover drives it. The
# digest and check lines and the exit status must be equal; prints the time
# ratio of each. A library run killed by a signal or exiting non-zero fails its
# row at once. On a difference in the lines the driver runs natively again: if
# it differs from itself the row says NATIVE-VARIES (shown, not a failure). A
# driver whose own CPU check fails natively (or says nothing: no `check: ok`)
# fails the test too.
#   GA_CORPUS        the carried directory (default .carry/corpus of the tree)
#   GA_CORPUS_BIN    the drivers, built (tests/corpus/build.sh DEST); else they are
#                    built here when nvcc is at hand ($NVCC or on PATH)
#   GA_CORPUS_SIZES  log2 sizes to run (default "16 20 22": sppark's domain,
#                    risc0's trace (its LDE is 4x), stwo's rows)
# Writes the table to $OUT/corpus.txt when OUT is set.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu corpus
here=$(cd "$(dirname "$0")" && pwd)
C=${GA_CORPUS:-}
if [ -z "$C" ]; then
    for d in "${GA_SRC:-.}/.carry/corpus" "$here/../../.carry/corpus"; do
        if [ -d "$d" ]; then
            C=$d
            break
        fi
    done
fi
if [ -z "$C" ] || ! ls "$C"/*/COMMIT >/dev/null 2>&1; then
    echo "SKIP: no prover corpus carried (GA_CORPUS; see tools/carry-corpus.sh)"
    exit 77
fi
B=${GA_CORPUS_BIN:-}
if [ -z "$B" ]; then
    for p in sppark risc0 stwo; do
        [ -x "$C/bin/$p" ] && B=$C/bin
    done
fi
if [ -z "$B" ]; then
    if [ -z "${NVCC:-}" ] && ! command -v nvcc >/dev/null 2>&1; then
        echo "SKIP: prover corpus not built and no nvcc (GA_CORPUS_BIN; see tests/corpus/build.sh)"
        exit 77
    fi
    B=$tmp/bin
    GA_CORPUS=$C sh "$here/build.sh" "$B" >"$tmp/build.log" 2>&1 ||
        { tail -20 "$tmp/build.log"; fail "building the prover corpus"; }
fi
if [ -z "${GA_LIB:-}" ] || [ ! -f "$GA_LIB" ]; then
    fail "GA_LIB does not name the library"
fi
ALL=$ALL_FEATURES
table=$tmp/table
: >"$table"
say() { # FORMAT ARGS...
    # shellcheck disable=SC2059
    printf "$@" | tee -a "$table"
}
for p in sppark risc0 stwo; do
    [ -f "$C/$p/COMMIT" ] && say '%-7s %s %s\n' "$p" "$(cat "$C/$p/ORIGIN" 2>/dev/null)" \
        "$(cut -c1-12 "$C/$p/COMMIT")"
done
say '%-28s %-13s %10s %10s %8s\n' program digest native_s library_s speedup
failed=0
row() { # NAME CMD...
    name=$1
    shift
    t0=$(date +%s.%N)
    env -u LD_PRELOAD "$@" >"$tmp/n.out" 2>"$tmp/n.err"
    nrc=$?
    t1=$(date +%s.%N)
    # shellcheck disable=SC2086
    env $ALL LD_PRELOAD="$GA_LIB" "$@" >"$tmp/l.out" 2>"$tmp/l.err"
    lrc=$?
    t2=$(date +%s.%N)
    n=$(grep -E '^(digest|check):' "$tmp/n.out")
    l=$(grep -E '^(digest|check):' "$tmp/l.out")
    same=equal
    if [ $nrc != 0 ] || ! printf '%s\n' "$n" | grep -qx 'check: ok'; then
        same=NATIVE-FAILED
        failed=1
        say '   native %s, its check: %s\n' "$(exit_words "$nrc")" \
            "$(printf '%s\n' "$n" | grep '^check:' || echo none)"
        tail -3 "$tmp/n.err" | tee -a "$table"
    elif library_failed "$nrc" "$lrc"; then
        same=DIFFER
        failed=1
        say '   library %s: %s (native: %s)\n' "$(exit_words "$lrc")" "$(echo "$l" | tr '\n' ' ')" \
            "$(echo "$n" | tr '\n' ' ')"
        tail -5 "$tmp/l.err" | tee -a "$table"
    elif [ "$n" != "$l" ]; then
        n2=$(env -u LD_PRELOAD "$@" 2>/dev/null | grep -E '^(digest|check):')
        if [ "$n2" != "$n" ]; then
            same=NATIVE-VARIES
            say '   native runs differ: %s | %s\n' "$(echo "$n" | head -1)" "$(echo "$n2" | head -1)"
        else
            same=DIFFER
            failed=1
            say '   library exit %s: %s (native: %s)\n' "$lrc" "$(echo "$l" | tr '\n' ' ')" \
                "$(echo "$n" | tr '\n' ' ')"
            tail -5 "$tmp/l.err" | tee -a "$table"
        fi
    fi
    awk -v n="$name" -v s="$same" -v a="$t0" -v b="$t1" -v c="$t2" \
        'BEGIN {printf "%-28s %-13s %10.3f %10.3f %7.2fx\n", n, s, b - a, c - b, (b - a) / (c - b)}' |
        tee -a "$table"
}
sizes=${GA_CORPUS_SIZES:-16 20 22}
mid=$(echo "$sizes" | awk '{print $(int((NF + 1) / 2))}')
ran=0
for s in $sizes; do
    [ -x "$B/sppark" ] && { row "sppark ntt 2^$s" "$B/sppark" "$s"; ran=1; }
    [ -x "$B/risc0" ] && { row "risc0 poseidon2 po2 $s" "$B/risc0" "$s" poseidon2; ran=1; }
    [ -x "$B/risc0" ] && [ "$s" = "$mid" ] && row "risc0 sha256 po2 $s" "$B/risc0" "$s" sha256
    [ -x "$B/stwo" ] && { row "stwo commit 2^$s" "$B/stwo" "$s"; ran=1; }
done
[ -n "${OUT:-}" ] && mkdir -p "$OUT" && cp "$table" "$OUT/corpus.txt"
[ $ran = 1 ] || { echo "SKIP: no corpus driver (sppark, risc0 or stwo) in $B"; exit 77; }
[ $failed = 0 ] || fail "a prover's output differed under the library (or its check failed)"
echo "PASS: corpus"
