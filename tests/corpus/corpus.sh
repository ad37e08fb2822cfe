#!/bin/sh
# corpus.sh (GPU) - public GPU prover code run natively and under the library:
# supranational/sppark's NTT, RISC Zero's prover kernels, NethermindEth/stwo-gpu's
# circle FFT and Merkle commitment (stwo_commit) and a whole proof of a trace
# (stwo_proof, at the middle size: out-of-domain samples, quotients, FRI and the
# decommitments) and ICICLE v2's Groth16 MSMs and NTTs, each
# built from the project's own sources (carried by tools/carry-corpus.sh, never
# committed) and driven by tests/corpus/<project> the way the project's prover
# drives it.
#
# Each program runs under every setting: native (no preload), defaults (the
# library preloaded, no GPUACCEL_* set), all (every feature on: ALL_FEATURES of
# tests/gpu/common.sh) and those of GA_CORPUS_SETTINGS. One warm-up run of each
# setting, then GA_CORPUS_RUNS rounds of one run of each, the order of the settings
# rotated by one each round. A run's time is the program's own `phase_ms:` line
# (its proving phase, after set-up) when it prints one, else the whole process.
#
# Every run's digest and check lines must equal native's first run's. A library
# run that exits non-zero or dies of a signal fails its row whatever native did.
# When native's own runs differ among themselves the native row says
# NATIVE-VARIES and a library run's differing digest is shown as `varies`, not
# failed (a crash still fails). A native run that fails (its CPU check, or an
# error) fails the test: NATIVE-FAILED.
#
#   GA_CORPUS          the carried directory (default .carry/corpus of the tree)
#   GA_CORPUS_BIN      the drivers, built (tests/corpus/build.sh DEST); a driver not
#                      there is taken from $GA_CORPUS/bin, else built here when nvcc
#                      is at hand ($NVCC or on PATH)
#   GA_CORPUS_SIZES    log2 sizes to run (default "16 20 22": sppark's domain,
#                      risc0's trace (its LDE is 4x), stwo's rows, ICICLE's domain
#                      and MSM size)
#   GA_CORPUS_RUNS     timed rounds after the warm-up (default 5)
#   GA_CORPUS_ONLY     the programs to run (default "sppark risc0 stwo icicle")
#   GA_CORPUS_SETTINGS more library settings, `NAME=ENV...;NAME=ENV...`, e.g.
#                      'defaults+memory=GPUACCEL_MEMORY=1;staging=GPUACCEL=0 GPUACCEL_STAGING=1'
#                      (each runs preloaded with GPUACCEL_* cleared, then ENV set)
#
# The table (also $OUT/corpus.txt when OUT is set): `#` lines are comments (the
# sources, the settings' environments, the first failure of each setting and
# program, with its output's last line and stderr's); every other line
# is one program under one setting, whitespace-separated:
#   program setting status unit runs median_ms min_ms max_ms native/setting
# status: ok, NATIVE-VARIES, NATIVE-FAILED (native rows); ok, varies, DIFFER,
# EXIT-<rc>, CRASH-SIG<n> (library rows). unit: phase (the program's phase_ms) or
# wall (the whole process). native/setting: native's median over the setting's
# (above 1: faster than native).
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
programs=${GA_CORPUS_ONLY:-sppark risc0 stwo icicle}
# A program's driver: GA_CORPUS_BIN's, else the carried build's ($C/bin), else
# built here (those carried but built nowhere, when nvcc is at hand).
bin_of() {
    for d in ${GA_CORPUS_BIN:-} "$C/bin" "$tmp/bin"; do
        if [ -x "$d/$1" ]; then
            echo "$d/$1"
            return
        fi
    done
}
missing=""
for p in $programs; do
    [ -f "$C/$p/COMMIT" ] && [ -z "$(bin_of "$p")" ] && missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ -n "${NVCC:-}" ] || command -v nvcc >/dev/null 2>&1; then
        CORPUS_PROGRAMS=$missing GA_CORPUS=$C sh "$here/build.sh" "$tmp/bin" >"$tmp/build.log" 2>&1 ||
            { tail -20 "$tmp/build.log"; fail "building the prover corpus ($missing)"; }
    else
        echo "note:$missing carried but not built, and no nvcc: left out (GA_CORPUS_BIN; see tests/corpus/build.sh)"
    fi
fi
if [ -z "${GA_LIB:-}" ] || [ ! -f "$GA_LIB" ]; then
    fail "GA_LIB does not name the library"
fi
runs=${GA_CORPUS_RUNS:-5}
case $runs in
'' | *[!0-9]* | 0) fail "GA_CORPUS_RUNS='$runs' is not a count of rounds" ;;
esac

# The settings, one a line: NAME KIND ENV... (KIND native or lib).
settings=$tmp/settings
{
    echo "native native"
    echo "defaults lib"
    echo "all lib $ALL_FEATURES"
} >"$settings"
if [ -n "${GA_CORPUS_SETTINGS:-}" ]; then
    echo "$GA_CORPUS_SETTINGS" | tr ';' '\n' | while IFS= read -r s; do
        [ -n "$s" ] || continue
        name=${s%%=*}
        env=${s#*=}
        case $name in
        '' | *[!A-Za-z0-9_+.-]*) echo "bad" ;;
        *) [ "$name" != "$s" ] || env=""; echo "$name lib $env" ;;
        esac
    done >>"$settings"
    grep -q '^bad$' "$settings" && fail "GA_CORPUS_SETTINGS: a setting's NAME (before '=') is [A-Za-z0-9_+.-]+"
fi
nset=$(wc -l <"$settings")
# The library runs start from no GPUACCEL_* at all.
clean=$(env | sed -n 's/^\(GPUACCEL[A-Za-z0-9_]*\)=.*/-u \1/p' | tr '\n' ' ')

table=$tmp/table
: >"$table"
say() { # FORMAT ARGS...
    # shellcheck disable=SC2059
    printf "$@" | tee -a "$table"
}
for p in $programs; do
    [ -f "$C/$p/COMMIT" ] && say '# source %-7s %s %s%s\n' "$p" "$(cat "$C/$p/ORIGIN" 2>/dev/null)" \
        "$(cut -c1-12 "$C/$p/COMMIT")" "$([ -f "$C/$p/TAG" ] && echo " ($(cat "$C/$p/TAG"))")"
done
while read -r name kind env; do
    say '# setting %s: %s\n' "$name" "$([ "$kind" = native ] && echo "no preload" ||
        echo "LD_PRELOAD=libgpuaccel.so ${env:-(no GPUACCEL_*)}")"
done <"$settings"
say '# %s timed rounds after one warm-up of each setting, the order rotated each round\n' "$runs"
say '%-22s %-16s %-13s %-5s %4s %10s %10s %10s %14s\n' program setting status unit runs \
    median_ms min_ms max_ms native/setting
failed=0

# run_setting I CMD...: run the program under setting I (0-based line of $settings);
# sets rc, ms, unit and leaves the output in $tmp/out, $tmp/err.
run_setting() {
    i=$1
    shift
    line=$(sed -n "$((i + 1))p" "$settings")
    kind=$(echo "$line" | cut -d' ' -f2)
    senv=$(echo "$line" | cut -d' ' -f3-)
    [ "$senv" = "$line" ] && senv=""
    t0=$(date +%s.%N)
    if [ "$kind" = native ]; then
        env -u LD_PRELOAD "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
        rc=$?
    else
        # $clean and $senv are lists of words.
        # shellcheck disable=SC2086
        env $clean $senv LD_PRELOAD="$GA_LIB" "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
        rc=$?
    fi
    t1=$(date +%s.%N)
    ms=$(sed -n 's/^phase_ms: *\([0-9.][0-9.]*\).*/\1/p' "$tmp/out" | tail -1)
    if [ -n "$ms" ]; then
        unit=phase
    else
        unit=wall
        ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) * 1000}')
    fi
}

# judge I: weigh the run just made under setting I against native's first run.
judge() {
    i=$1
    lines=$(grep -E '^(digest|check):' "$tmp/out")
    if [ "$i" = 0 ]; then
        # a driver checks its results against a CPU reference: no "check: ok"
        # line natively (a lost or failed check) fails like a failed run
        if [ $rc != 0 ] || ! grep -qx 'check: ok' "$tmp/out"; then
            if [ "$(cat "$tmp/s.0")" != NATIVE-FAILED ]; then
                echo NATIVE-FAILED >"$tmp/s.0"
                say '#   %s native: exit %s: %s\n' "$id" "$rc" "$(tail -1 "$tmp/out")"
                tail -3 "$tmp/err" | sed 's/^/#     /' | tee -a "$table"
            fi
        elif [ ! -f "$tmp/ref" ]; then
            echo "$lines" >"$tmp/ref"
        elif [ "$lines" != "$(cat "$tmp/ref")" ] && [ "$(cat "$tmp/s.0")" = ok ]; then
            echo NATIVE-VARIES >"$tmp/s.0"
            say '#   %s native runs differ: %s | %s\n' "$id" "$(head -1 "$tmp/ref")" \
                "$(echo "$lines" | head -1)"
        fi
        return
    fi
    cur=$(cat "$tmp/s.$i")
    if [ $rc != 0 ]; then
        if [ $rc -gt 128 ]; then
            st=CRASH-SIG$((rc - 128))
        else
            st=EXIT-$rc
        fi
        case $cur in
        CRASH-* | EXIT-*) ;;
        *)
            echo "$st" >"$tmp/s.$i"
            say '#   %s %s: %s: %s\n' "$id" "$setname" "$st" "$(tail -1 "$tmp/out")"
            tail -5 "$tmp/err" | sed 's/^/#     /' | tee -a "$table"
            ;;
        esac
    elif [ -f "$tmp/ref" ] && [ "$lines" != "$(cat "$tmp/ref")" ] && [ "$cur" = ok ]; then
        echo differs >"$tmp/s.$i"
        say '#   %s %s: %s (native: %s)\n' "$id" "$setname" "$(echo "$lines" | tr '\n' ' ')" \
            "$(tr '\n' ' ' <"$tmp/ref")"
    fi
}

# stats FILE: "median min max" of the numbers in FILE, one a line.
stats() {
    sort -n "$1" | awk '{v[NR] = $1} END {
        if (NR == 0) { print "0 0 0"; exit }
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'
}

row() { # ID CMD...
    id=$1
    shift
    rm -f "$tmp"/ref "$tmp"/t.* "$tmp"/s.* "$tmp"/u.*
    i=0
    while [ $i -lt "$nset" ]; do
        echo ok >"$tmp/s.$i"
        : >"$tmp/t.$i"
        i=$((i + 1))
    done
    # The warm-up, native first: its run is the reference.
    i=0
    while [ $i -lt "$nset" ]; do
        setname=$(sed -n "$((i + 1))p" "$settings" | cut -d' ' -f1)
        run_setting $i "$@"
        judge "$i"
        i=$((i + 1))
    done
    r=1
    while [ $r -le "$runs" ]; do
        j=0
        while [ $j -lt "$nset" ]; do
            i=$(((j + r) % nset))
            setname=$(sed -n "$((i + 1))p" "$settings" | cut -d' ' -f1)
            run_setting $i "$@"
            judge "$i"
            echo "$ms" >>"$tmp/t.$i"
            if [ ! -f "$tmp/u.$i" ]; then
                echo "$unit" >"$tmp/u.$i"
            elif [ "$(cat "$tmp/u.$i")" != "$unit" ]; then
                echo mixed >"$tmp/u.$i"
            fi
            j=$((j + 1))
        done
        r=$((r + 1))
    done
    nstat=$(cat "$tmp/s.0")
    [ "$nstat" = NATIVE-FAILED ] && failed=1
    nmed=$(stats "$tmp/t.0" | cut -d' ' -f1)
    i=0
    while read -r name kind env; do
        st=$(cat "$tmp/s.$i")
        if [ "$st" = differs ]; then
            if [ "$nstat" = NATIVE-VARIES ]; then st=varies; else st=DIFFER; fi
        fi
        case $st in DIFFER | CRASH-* | EXIT-*) failed=1 ;; esac
        # shellcheck disable=SC2046
        set -- $(stats "$tmp/t.$i")
        awk -v id="$id" -v n="$name" -v s="$st" -v u="$(cat "$tmp/u.$i")" -v k="$runs" \
            -v med="$1" -v lo="$2" -v hi="$3" -v nm="$nmed" 'BEGIN {
                printf "%-22s %-16s %-13s %-5s %4d %10.2f %10.2f %10.2f %14.3f\n",
                    id, n, s, u, k, med, lo, hi, (med > 0 ? nm / med : 0) }' | tee -a "$table"
        i=$((i + 1))
    done <"$settings"
}

want() { echo " $programs " | grep -q " $1 " && [ -n "$(bin_of "$1")" ]; }
sizes=${GA_CORPUS_SIZES:-16 20 22}
mid=$(echo "$sizes" | awk '{print $(int((NF + 1) / 2))}')
ran=0
for sz in $sizes; do
    want sppark && { row "sppark_ntt_$sz" "$(bin_of sppark)" "$sz"; ran=1; }
    want risc0 && { row "risc0_poseidon2_$sz" "$(bin_of risc0)" "$sz" poseidon2; ran=1; }
    want risc0 && [ "$sz" = "$mid" ] && row "risc0_sha256_$sz" "$(bin_of risc0)" "$sz" sha256
    want stwo && { row "stwo_commit_$sz" "$(bin_of stwo)" "$sz"; ran=1; }
    want stwo && [ "$sz" = "$mid" ] && row "stwo_proof_$sz" "$(bin_of stwo)" "$sz" 8 proof
    want icicle && { row "icicle_groth16_$sz" "$(bin_of icicle)" "$sz"; ran=1; }
done
[ -n "${OUT:-}" ] && mkdir -p "$OUT" && cp "$table" "$OUT/corpus.txt"
[ $ran = 1 ] || { echo "SKIP: no corpus driver built (GA_CORPUS_BIN; see tests/corpus/build.sh)"; exit 77; }
[ $failed = 0 ] || fail "a prover's run failed or differed under the library (or natively)"
echo "PASS: corpus"
