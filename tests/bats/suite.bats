#!/usr/bin/env bats
# suite.bats - bench/run-suite's verdicts, on a stub benchmark program and a
# stub nvidia-smi (no GPU): the defaults variant runs with no GPUACCEL*
# variable whatever the caller set (and the suite names those it did not pass
# on), the variants' order turns every repeat,
# and a missing digest, an exit 77 under the library or digests that differ
# fail the suite instead of being filed as n/a or a skip; with --confirm a
# flag stays only where a second alternation shows it too; --explain runs
# every feature on but one, for each, on a flagged row.
load helpers

setup() {
    T=$BATS_TEST_TMPDIR
    mkdir -p "$T/bin" "$T/prog" "$T/out"
    printf '#!/bin/sh\necho "stub GPU, 999.99"\n' >"$T/bin/nvidia-smi"
    chmod +x "$T/bin/nvidia-smi"
}

# bench_stub BODY: bench_driver as a script that logs each run ("lib=0|1"
# and its GPUACCEL* variables) to $T/log, runs BODY ($LIB is 1 under the
# library, $VARS its GPUACCEL* variables), then prints a result and a digest.
bench_stub() {
    cat >"$T/prog/bench_driver" <<STUB
#!/bin/sh
case "\${LD_PRELOAD:-}" in *libgpuaccel*) LIB=1 ;; *) LIB=0 ;; esac
VARS=\$(env | grep '^GPUACCEL' | sort | tr '\n' ' ')
echo "lib=\$LIB \$VARS" >>"$T/log"
$1
echo "result driver 1.0"
echo "digest: 0123456789abcdef"
STUB
    chmod +x "$T/prog/bench_driver"
}

# suite: the driver-dtoh row (a digest required, no reference), two repeats,
# the caller's environment holding settings no variant may inherit.
suite() {
    run env PATH="$T/bin:$PATH" GPUACCEL=all GPUACCEL_POOL=1 "${PYTHON3:-python3}" "$GA_SRC/bench/run-suite" \
        --lib "$GA_LIB" --bin "$T/prog" --out "$T/out" --repeats 2 --pin none --only driver-dtoh
    echo "$output"
}

@test "run-suite: defaults run with no GPUACCEL* set, and the order turns" {
    bench_stub ""
    suite
    [ "$status" -eq 0 ]
    [[ "$output" == *"run-suite: not passed to the runs (each variant sets its own): GPUACCEL GPUACCEL_POOL"* ]]
    cat "$T/log"
    # native, defaults, all, the feature alone: a warm-up and two repeats each
    [ "$(wc -l <"$T/log")" -eq 12 ]
    [ "$(grep -cx 'lib=0 ' "$T/log")" -eq 3 ]
    [ "$(grep -cx 'lib=1 ' "$T/log")" -eq 3 ]
    [ "$(grep -c '^lib=1 GPUACCEL=all ' "$T/log")" -eq 3 ]
    # the warm-up starts with native, the first repeat with the defaults
    [ "$(sed -n 1p "$T/log")" = "lib=0 " ]
    [ "$(sed -n 5p "$T/log")" = "lib=1 " ]
}

@test "run-suite: a run with no digest line fails the row" {
    bench_stub '[ -n "$VARS" ] || [ $LIB = 0 ] || { echo "result driver 1.0"; exit 0; }'
    suite
    [ "$status" -eq 1 ]
    has_words 'no digest line (defaults)'
}

@test "run-suite: an exit 77 under the library is a failure, not a skip" {
    bench_stub '[ $LIB = 0 ] || { echo "no GPU" >&2; exit 77; }'
    suite
    [ "$status" -eq 1 ]
    has_words 'only native may skip a row'
}

@test "run-suite: a digest that differs under the library fails" {
    bench_stub 'case "$VARS" in GPUACCEL=all*) echo "result driver 1.0"; echo "digest: 00000000000000ff"; exit 0 ;; esac'
    suite
    [ "$status" -eq 1 ]
    has_words 'digests differ'
}

# confirm_suite BODY: the suite with --confirm and two repeats, the stub
# printing its own result (BODY sets R).
confirm_suite() {
    bench_stub "$1; echo \"result driver \$R\"; echo 'digest: 0123456789abcdef'; exit 0"
    run env PATH="$T/bin:$PATH" "${PYTHON3:-python3}" "$GA_SRC/bench/run-suite" \
        --lib "$GA_LIB" --bin "$T/prog" --out "$T/out" --repeats 2 --pin none --confirm \
        --only driver-dtoh
    echo "$output"
}

@test "run-suite --confirm: a slowdown in both alternations stays flagged" {
    confirm_suite 'case "$VARS" in GPUACCEL=all*) R=2.0 ;; *) R=1.0 ;; esac'
    [ "$status" -eq 0 ]
    # the group ran twice: 12 processes each time
    [ "$(wc -l <"$T/log")" -eq 24 ]
    has_words 'driver-dtoh (us): native 1.000'
    "${PYTHON3:-python3}" -c 'import json,sys,glob; r=json.load(open(glob.glob(sys.argv[1]+"/*.json")[0]))["rows"][0]; sys.exit(0 if r["flags"]==["A"] and r["unconfirmed"]==[] and r["confirm_all_median"]==2.0 else 1)' "$T/out"
}

@test "run-suite --confirm: a slowdown the second alternation does not show is not flagged" {
    # every feature slower in the first 12 runs only
    confirm_suite 'n=$(wc -l <"'"$T"'/log"); R=1.0; case "$VARS" in GPUACCEL=all*) [ "$n" -le 12 ] && R=2.0 ;; esac'
    [ "$status" -eq 0 ]
    [ "$(wc -l <"$T/log")" -eq 24 ]
    has_words 'not reproduced in a second alternation'
    has_words 'first native 1.000 (1.000-1.000), defaults 1.000 (1.000-1.000), all 2.000'
    "${PYTHON3:-python3}" -c 'import json,sys,glob; r=json.load(open(glob.glob(sys.argv[1]+"/*.json")[0]))["rows"][0]; sys.exit(0 if r["flags"]==[] and r["unconfirmed"]==["A"] else 1)' "$T/out"
}

@test "run-suite --explain: every feature on but one names the feature that costs" {
    # every feature on is slower unless coalescing is off
    bench_stub 'case "$VARS" in *GPUACCEL_COALESCE=0*) R=1.0 ;; GPUACCEL=all*) R=2.0 ;; *) R=1.0 ;; esac; echo "result driver $R"; echo "digest: 0123456789abcdef"; exit 0'
    run env PATH="$T/bin:$PATH" "${PYTHON3:-python3}" "$GA_SRC/bench/run-suite" \
        --lib "$GA_LIB" --bin "$T/prog" --out "$T/out" --repeats 2 --pin none --explain \
        --only driver-dtoh
    echo "$output"
    [ "$status" -eq 0 ]
    n=$(grep -c '^GA_FEATURE(.*, 1)$' "$GA_SRC/src/features/features.def")
    # the row's 4 variants, then all and all-but-each: a warm-up and two repeats each
    [ "$(wc -l <"$T/log")" -eq $((12 + 3 * (n + 1))) ]
    [ "$(grep -c '^lib=1 GPUACCEL=all GPUACCEL_COALESCE=0 $' "$T/log")" -eq 3 ]
    has_words 'driver-dtoh (us): *but coalesce 1.000 (1.000-1.000), all 2.000'
    "${PYTHON3:-python3}" -c 'import json,sys,glob; r=json.load(open(glob.glob(sys.argv[1]+"/*.json")[0]))["rows"][0]; e=r["explain"]; sys.exit(0 if e["all"][0]==2.0 and e["but coalesce"][0]==1.0 and e["but pool"][0]==2.0 and len(e)==int(sys.argv[2])+1 else 1)' "$T/out" "$n"
}

@test "run-suite --stop-after: no group starts after the time given, and the rest are named" {
    bench_stub 'sleep 0.1'
    run env PATH="$T/bin:$PATH" "${PYTHON3:-python3}" "$GA_SRC/bench/run-suite" \
        --lib "$GA_LIB" --bin "$T/prog" --out "$T/out" --repeats 1 --pin none --stop-after 0.5 \
        --only driver-dtoh driver-ctxget
    echo "$output"
    [ "$status" -eq 0 ]
    # the first group (the table's order) ran: 4 variants, a warm-up and a repeat each
    [ "$(wc -l <"$T/log")" -eq 8 ]
    has_words 'not run: driver-dtoh'
    "${PYTHON3:-python3}" -c 'import json,sys,glob; d=json.load(open(glob.glob(sys.argv[1]+"/*.json")[0])); sys.exit(0 if d["not_run"]==["driver-dtoh"] and [r["name"] for r in d["rows"]]==["driver-ctxget"] else 1)' "$T/out"
    # what the group took: its 8 runs of at least 0.1 s
    "${PYTHON3:-python3}" -c 'import json,sys,glob; r=json.load(open(glob.glob(sys.argv[1]+"/*.json")[0]))["rows"][0]; sys.exit(0 if 0.8 <= r["group_seconds"] < 60 else 1)' "$T/out"
}

@test "run-suite --no-reference: the hand-written reference does not run" {
    cat >"$T/prog/bench_alloc" <<STUB
#!/bin/sh
echo "\$*" >>"$T/args"
echo "result alloc 1.0"
echo "digest: 0123456789abcdef"
STUB
    chmod +x "$T/prog/bench_alloc"
    for flag in "" --no-reference; do
        rm -f "$T/args"
        # shellcheck disable=SC2086
        run env PATH="$T/bin:$PATH" "${PYTHON3:-python3}" "$GA_SRC/bench/run-suite" --lib "$GA_LIB" \
            --bin "$T/prog" --out "$T/out" --repeats 2 --pin none --only alloc-64k $flag
        echo "$output"
        [ "$status" -eq 0 ]
        cat "$T/args"
        # native, defaults, all, the feature alone: a warm-up and two repeats each
        [ "$(grep -vc -- '--mode reference' "$T/args")" -eq 12 ]
        if [ -z "$flag" ]; then want=3; else want=0; fi
        [ "$(grep -c -- '--mode reference' "$T/args")" -eq "$want" ]
    done
}
