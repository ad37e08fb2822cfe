#!/bin/sh
# samples.sh (GPU) - NVIDIA's public cuda-samples, carried by tools/carry-samples.sh
# (never committed), each run from its own folder natively and under the library
# with every feature on: the same exit status and the same result lines (PASS,
# FAIL, Result, errors, the sample's own checks; never timings) or DIFFER, the
# only failure. A sample that fails or times out natively is native-fails, one
# whose result lines change from one native run to the next is native-varies:
# neither says anything of the library. But a library run killed by a signal,
# timed out or exiting non-zero where the native one exited 0 is DIFFER at once,
# whatever a second native run does. One row a sample, then the totals; the
# table also goes to $OUT/samples.txt when OUT is set.
#   GA_CUDA_SAMPLES     the carried folder (tools/gpu-suite sets it); a program
#                       missing from its bin/ is built (tools/build-samples.sh)
#   GA_SAMPLES          only these samples (names, blank-separated)
#   GA_SAMPLES_TIMEOUT  seconds a run may take (default 120)
#   GA_SAMPLES_FEATURES the library's settings (default: every feature on; set
#                       and empty: the defaults, no GPUACCEL_* set)
#   GA_SAMPLES_REQUIRE=1 each sample GA_SAMPLES names must run: one missing from
#                       the manifest, not built, failing natively or waived
#                       (a "Waiving"/"GPUs are required" line, whatever its exit
#                       status) fails the script, the sample's line shown
#                       (tests/gpu/multigpu.sh: the two-GPU samples)
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu samples
S=${GA_CUDA_SAMPLES:-}
if [ -z "$S" ] || [ ! -f "$S/SAMPLES" ]; then
    echo "SKIP: no CUDA samples carried (GA_CUDA_SAMPLES; see tools/carry-samples.sh)"
    exit 77
fi
S=$(cd "$S" && pwd)
T=${GA_SAMPLES_TIMEOUT:-120}
ALL=${GA_SAMPLES_FEATURES-$ALL_FEATURES}
REQUIRE=${GA_SAMPLES_REQUIRE:-0}
required="" # under GA_SAMPLES_REQUIRE=1, why each sample that had to run did not
build="${GA_SRC:-.}/tools/build-samples.sh"
tab=$(printf '\t')

names=$(cut -f1 "$S/SAMPLES")
if [ -n "${GA_SAMPLES:-}" ]; then
    names=$(for n in $GA_SAMPLES; do cut -f1 "$S/SAMPLES" | grep -Fx "$n" || echo "samples: $n is not in the manifest" >&2; done)
    [ -n "$names" ] || fail "GA_SAMPLES ($GA_SAMPLES) names no sample of $S/SAMPLES"
    if [ "$REQUIRE" = 1 ]; then
        for n in $GA_SAMPLES; do
            cut -f1 "$S/SAMPLES" | grep -Fxq "$n" || required="$required$n: not in the manifest$(printf '\t')"
        done
    fi
fi
missing=""
for n in $names; do [ -x "$S/bin/$n" ] || missing="$missing $n"; done
if [ -n "$missing" ]; then
    if [ -n "${NVCC:-}" ]; then
        echo "samples: building$(echo "$missing" | wc -w | sed 's/^/ /') samples missing from $S/bin"
        # shellcheck disable=SC2086
        NVCC=$NVCC sh "$build" "$S" "$(nproc)" $missing >"$tmp/build.log" 2>&1
        grep -E 'built \(|failed:' "$tmp/build.log"
    elif [ "$(echo "$missing" | wc -w)" = "$(echo "$names" | wc -w)" ]; then
        echo "SKIP: no sample built in $S/bin and no nvcc to build them"
        exit 77
    fi
fi
# The links to this machine's toolkit headers that NVRTC samples read.
sh "$build" --prep "$S" || echo "samples: no links to the toolkit's headers (matrixMul_nvrtc will fail natively)"

# What a sample that waives says (cuda-samples: "Waiving", EXIT_WAIVED; the
# multi-GPU ones: "Two GPUs are required", "Two or more GPUs ... are required").
WAIVED='waiv|gpus? (are|is) required|(two|2) or more gpus|at least (two|2) gpus|no two or more gpus'

# results FILE: the lines that state a result, without timings, sorted (the
# order of several processes' lines varies).
results() {
    grep -aiE 'pass|fail|result|error|mismatch|correct|verif|waiv|differ|match|wrong|invalid' "$1" |
        grep -aviE '[0-9.] *(s|ms|msec|us|usec|ns|sec|secs|seconds)\b|time|/s\b|flop|bandwidth|throughput|elapsed|latency|speedup|perf' |
        sed -E 's/0x[0-9a-fA-F]{6,}/0x?/g; s/[[:space:]]+$//' | sort
}

# run OUT [ENV...]: run sample $name from its folder, stdin closed, under the
# timeout, with ENV (the library only in the sample); sets rc and secs.
run() {
    o=$1
    shift
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    (cd "$S/$dir" && env -u LD_PRELOAD timeout -k 10 "$T" env "$@" "$S/bin/$name" $args </dev/null >"$o" 2>&1)
    rc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.3f", b - a}')
}

row() { # NAME RESULT NATIVE_S LIBRARY_S RATIO
    printf '%-30s %-13s %9s %9s %7s\n' "$@" | tee -a "$tmp/table"
}

echo "cuda-samples $(cut -c1-12 "$S/COMMIT"), timeout ${T}s a run, library features: ${ALL:-none set (the defaults)}" | tee "$tmp/table"
row sample result native_s library_s ratio
carried=0 built=0 ran=0 agreed=0 differ=0
notes=""
for name in $names; do
    carried=$((carried + 1))
    line=$(awk -F'\t' -v n="$name" '$1 == n' "$S/SAMPLES" | head -1)
    dir=$(echo "$line" | cut -f2)
    args=$(echo "$line" | cut -f7)
    [ "$args" != - ] || args=""
    if [ ! -x "$S/bin/$name" ]; then
        row "$name" build-fails - - -
        why=$(awk -F'\t' -v n="$name" '$1 == n {print $3}' "$S/BUILT" 2>/dev/null)
        notes="$notes$name: build-fails: ${why:-no binary}$tab"
        required="$required$name: not built: ${why:-no binary}$tab"
        continue
    fi
    built=$((built + 1))
    run "$tmp/n1.out"
    nrc=$rc ns=$secs
    if [ $nrc != 0 ]; then
        why="exit $nrc"
        [ $nrc = 124 ] || [ $nrc = 137 ] && why="timed out after ${T}s"
        [ $nrc = 2 ] && grep -qai waiv "$tmp/n1.out" && why="waived (exit 2)"
        row "$name" native-fails "$ns" - -
        last=$(grep -av '^[[:space:]]*$' "$tmp/n1.out" | tail -1 | cut -c1-160)
        notes="$notes$name: native-fails: $why${last:+: $last}$tab"
        required="$required$name: failed natively: $why${last:+: $last}$tab"
        continue
    fi
    # A sample that exits 0 although it waived (it found no second GPU, say).
    waive=$(grep -aiE "$WAIVED" "$tmp/n1.out" | head -1 | cut -c1-160)
    [ -z "$waive" ] || required="$required$name: waived natively (exit 0): $waive$tab"
    ran=$((ran + 1))
    rm -f "$tmp/ga.log"
    # shellcheck disable=SC2086
    run "$tmp/l.out" $ALL GPUACCEL_LOG_FILE="$tmp/ga.log" LD_PRELOAD="$GA_LIB"
    lrc=$rc ls=$secs
    ratio=$(awk -v a="$ns" -v b="$ls" 'BEGIN {if (b > 0) printf "%.2fx", a / b; else print "-"}')
    results "$tmp/n1.out" >"$tmp/n1.res"
    results "$tmp/l.out" >"$tmp/l.res"
    res=same
    if library_failed "$nrc" "$lrc"; then
        res=DIFFER
        differ=$((differ + 1))
    elif ! cmp -s "$tmp/n1.res" "$tmp/l.res"; then
        # A second native run tells a sample that varies by itself from the library.
        run "$tmp/n2.out"
        results "$tmp/n2.out" >"$tmp/n2.res"
        if [ $rc != $nrc ] || ! cmp -s "$tmp/n1.res" "$tmp/n2.res"; then
            res=native-varies
            notes="$notes$name: native-varies: two native runs gave different result lines (exit $nrc and $rc)$tab"
        else
            res=DIFFER
            differ=$((differ + 1))
        fi
    fi
    [ $res = same ] && agreed=$((agreed + 1))
    row "$name" "$res" "$ns" "$ls" "$ratio"
    if [ $res = DIFFER ]; then
        {
            echo "   native $(exit_words "$nrc"), library $(exit_words "$lrc"); result lines, native (<) and library (>):"
            diff "$tmp/n1.res" "$tmp/l.res" | grep '^[<>]' | head -20 | sed 's/^/   /'
            echo "   library output, last lines:"
            tail -8 "$tmp/l.out" | sed 's/^/   | /'
        } | tee -a "$tmp/table"
        if [ -n "${OUT:-}" ]; then
            mkdir -p "$OUT/samples"
            cp "$tmp/n1.out" "$OUT/samples/$name.native.txt"
            cp "$tmp/l.out" "$OUT/samples/$name.library.txt"
        fi
    fi
    # What the library said (it writes nothing unless something is wrong).
    [ -s "$tmp/ga.log" ] && head -3 "$tmp/ga.log" | sed "s/^/   $name: /" | tee -a "$tmp/table"
done
{
    echo "carried $carried, built $built, ran natively $ran, agreed $agreed, differ $differ"
    [ -z "$notes" ] || echo "$notes" | tr '\t' '\n' | grep . | sed 's/^/  /'
} | tee -a "$tmp/table"
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT" && cp "$tmp/table" "$OUT/samples.txt"
fi
[ $differ = 0 ] || fail "$differ sample(s) behaved differently under the library"
if [ "$REQUIRE" = 1 ] && [ -n "$required" ]; then
    echo "$required" | tr '\t' '\n' | grep . | sed 's/^/  required: /'
    fail "GA_SAMPLES_REQUIRE=1: $(echo "$required" | tr '\t' '\n' | grep -c .) sample(s) did not run: $(echo "$required" | tr '\t' '\n' | grep . | head -1)"
fi
if [ $ran = 0 ]; then
    # Nothing was compared: say why (the rows above name each sample's reason).
    if [ $built = 0 ]; then
        echo "SKIP: none of the $carried samples could be built (the build-fails rows)"
    else
        echo "SKIP: none of the $built samples built ran natively (the native-fails rows)"
    fi
    exit 77
fi
echo "PASS: samples"
