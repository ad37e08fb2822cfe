#!/usr/bin/env bats
# gpuaccel.bats - the gpuaccel command: every subcommand and option, its errors
# and exit codes, against the fake driver and plain shell commands (no GPU).
load helpers
bats_require_minimum_version 1.5.0 # run -127

setup() {
    setup_fake
    GA_TOOL="${GA_TOOL:-$GA_BUILD/tools/gpuaccel}"
    [ -x "$GA_TOOL" ] || { echo "gpuaccel not built: $GA_TOOL" >&2; return 1; }
    T="$BATS_TEST_TMPDIR"
}

# ga ARGS...: the command with the built library and the fake driver.
ga() {
    env LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" "$@"
}

@test "--help, -V and --version" {
    run "$GA_TOOL" --help
    [ "$status" -eq 0 ]
    for c in run profile report ab env; do [[ "$output" == *"  $c "* ]]; done
    run "$GA_TOOL" --version
    [ "$status" -eq 0 ]
    [[ "$output" =~ ^gpuaccel\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
    local long=$output
    run "$GA_TOOL" -V
    [ "$status" -eq 0 ]
    [ "$output" = "$long" ]
    run "$GA_TOOL" ab --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"--check-digest"* ]]
}

@test "usage errors exit 2 with one clear line" {
    run "$GA_TOOL"
    [ "$status" -eq 2 ]
    run "$GA_TOOL" frobnicate
    [ "$status" -eq 2 ]
    [[ "$output" == *"unknown command 'frobnicate'"* ]]
    run ga run --bogus -- true
    [ "$status" -eq 2 ]
    [[ "$output" == *"unknown option '--bogus'"* ]]
    run ga run --enable
    [ "$status" -eq 2 ]
    [[ "$output" == *"--enable needs a value"* ]]
    run ga run --enable warp -- true
    [ "$status" -eq 2 ]
    [[ "$output" == *"'warp' in --enable warp is not a feature"* ]]
    run ga run --enable pool,banana -- true
    [ "$status" -eq 2 ]
    [[ "$output" == *"'banana' in --enable pool,banana is not a feature"* ]]
    run ga run --feature pool -- true
    [ "$status" -eq 2 ]
    [[ "$output" == *"run: --feature is not an option of run"* ]]
    run "$GA_TOOL" kernels list extra
    [ "$status" -eq 2 ]
    run ga run
    [ "$status" -eq 2 ]
    [[ "$output" == *"no command to run"* ]]
    run ga ab --enable pool --config /dev/null -- true
    [ "$status" -eq 2 ]
    run "$GA_TOOL" env extra
    [ "$status" -eq 2 ]
}

@test "env lists every GPUACCEL_* variable with its default" {
    run "$GA_TOOL" env
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "variable"*"default"*"meaning" ]]
    echo "$output" | grep -Eq '^GPUACCEL_POOL +[01] +- +[01] +serve cuMemAlloc'
    echo "$output" | grep -Eq '^GPUACCEL_GRAPH_MIN +5 '
    echo "$output" | grep -Eq '^GPUACCEL_PROFILE +\(none\) '
    # every variable the README documents
    for v in $(grep -o '^| `GPUACCEL[A-Z_]*`' "$GA_SRC/README.md" | tr -d '|` '); do
        echo "$output" | grep -q "^$v " || { echo "missing $v"; false; }
    done
}

@test "run: preloads the library and toggles features by name" {
    run ga run --enable pool,graphs --disable graphs -- sh -c 'echo "$LD_PRELOAD|$GPUACCEL_POOL|$GPUACCEL_GRAPHS|${GPUACCEL_TUNE-unset}"'
    [ "$status" -eq 0 ]
    [ "$output" = "$(readlink -f "$GA_LIB")|1|0|unset" ]
    run ga run --enable all --disable swap -- sh -c 'env | grep -E "^GPUACCEL(_POOL|_COALESCE|_GRAPHS|_TUNE|_KERNELS)?=" | sort | tr "\n" " "'
    [ "$output" = "GPUACCEL=all GPUACCEL_KERNELS=0 " ]
    run ga run --disable all -- sh -c 'env | grep -E "^GPUACCEL(_POOL|_COALESCE|_GRAPHS|_TUNE|_KERNELS)?=" | sort | tr "\n" " "'
    [ "$output" = "GPUACCEL_COALESCE=0 GPUACCEL_GRAPHS=0 GPUACCEL_KERNELS=0 GPUACCEL_POOL=0 GPUACCEL_TUNE=0 " ]
}

@test "run: keeps the user's LD_PRELOAD after the library's" {
    # (the loader complains about the missing /lib/nothing.so on stderr)
    run env LD_PRELOAD=/lib/nothing.so GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" run -- sh -c 'echo "=$LD_PRELOAD="'
    [[ "$output" == *"=$(readlink -f "$GA_LIB"):/lib/nothing.so="* ]]
}

@test "run: the command's exit status passes through" {
    run ga run -- sh -c 'exit 3'
    [ "$status" -eq 3 ]
}

@test "run: a CUDA program gives the same output under the library" {
    want=$(native "$PROGS/door_getproc" "$PTX")
    run ga run --enable all -- "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    [ "$output" = "$want" ]
}

@test "run: command not found is 127, not executable is 126" {
    run -127 ga run -- no-such-command-here
    [ "$output" = "gpuaccel: no-such-command-here: command not found" ]
    run -127 ga run -- ./no/such/path
    touch "$T/plain"
    run ga run -- "$T/plain"
    [ "$status" -eq 126 ]
    [[ "$output" == *"not executable"* ]]
}

@test "library: --lib, GPUACCEL_LIB, next to the command, and not found" {
    run env -u GPUACCEL_LIB "$GA_TOOL" run --lib "$T/missing.so" -- true
    [ "$status" -eq 2 ]
    [ "$output" = "gpuaccel: library not found: $T/missing.so" ]
    run env GPUACCEL_LIB="$T/missing.so" "$GA_TOOL" run -- true
    [ "$status" -eq 2 ]
    # an installed tree moved elsewhere: bin/gpuaccel and lib/libgpuaccel.so.1
    mkdir -p "$T/inst/bin" "$T/inst/lib" "$T/lone"
    cp "$GA_TOOL" "$T/inst/bin/gpuaccel"
    cp "$GA_LIB" "$T/inst/lib/libgpuaccel.so.1"
    run env -u GPUACCEL_LIB "$T/inst/bin/gpuaccel" run -- sh -c 'echo "$LD_PRELOAD"'
    [ "$status" -eq 0 ]
    [ "$output" = "$(readlink -f "$T/inst/lib/libgpuaccel.so.1")" ]
    cp "$GA_TOOL" "$T/lone/gpuaccel"
    run env -u GPUACCEL_LIB "$T/lone/gpuaccel" run -- true
    [ "$status" -eq 2 ]
    [[ "$output" == "gpuaccel: library not found (tried "*"use --lib PATH or GPUACCEL_LIB" ]]
}

@test "profile: writes the three files and says where" {
    cd "$T"
    run ga profile -o "$T/p" -- "$PROGS/door_getproc" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'result ok=1'
    [[ "$output" == *"gpuaccel: profile: $T/p.txt (report), $T/p.json, $T/p.trace.json"* ]]
    [ -s "$T/p.txt" ]
    [ -s "$T/p.json" ]
    [ -s "$T/p.trace.json" ]
    grep -q '^Opportunities' "$T/p.txt"
    run ga profile -- "$PROGS/door_getproc" "$PTX" # the default name, in the current directory
    [ -s "$T/gpuaccel-profile.json" ]
}

@test "profile: --kernels, toggles, and a command that never uses CUDA" {
    run ga profile --kernels --enable pool -o "$T/q" -- sh -c 'echo "$GPUACCEL_PROFILE $GPUACCEL_PROFILE_KERNELS $GPUACCEL_POOL"; exit 4'
    [ "$status" -eq 4 ]
    [ "${lines[0]}" = "$T/q 1 1" ]
    [[ "$output" == *"no profile was written to $T/q.json"* ]]
    run -127 ga profile -o "$T/q" -- no-such-command-here
}

@test "report: prints the report again from the JSON" {
    ga profile -o "$T/r" -- "$PROGS/door_getproc" "$PTX" >/dev/null 2>&1
    run "$GA_TOOL" report "$T/r.json"
    [ "$status" -eq 0 ]
    [ "$output" = "$(cat "$T/r.txt")" ]
    run "$GA_TOOL" report "$T/r" # the -o name works too
    [ "$status" -eq 0 ]
    run "$GA_TOOL" report "$T/none.json"
    [ "$status" -eq 2 ]
    [ "$output" = "gpuaccel: report: $T/none.json: no such file, and no profile of that name (NAME.json, NAME.PID.json, NAME.rankR.PID.json)" ]
    echo '{"schema":"x","nested":{"a":[1,{"b":"}"}]}}' > "$T/bad.json"
    run "$GA_TOOL" report "$T/bad.json"
    [ "$status" -eq 2 ]
    [[ "$output" == *"not a gpuaccel profile"* ]]
    run "$GA_TOOL" report
    [ "$status" -eq 2 ]
}

@test "ab: a CUDA program on the fake driver, digests agree" {
    run ga ab -r 2 --check-digest '^result' -- "$PROGS/door_getproc" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    has_words '2 runs each, alternating, after one warm-up'
    echo "$output" | grep -Eq '^native +[0-9.]+ [mu]?s .* reference$'
    echo "$output" | grep -Eq '^all +[0-9.]+ [mu]?s .* [0-9.]+x +\([0-9.]+-[0-9.]+\) +agree$'
}

@test "ab: --feature picks one row; --per-feature one per feature plus all" {
    run ga ab -r 1 --feature pool -- true
    [ "$status" -eq 0 ]
    echo "$output" | grep -q '^pool '
    no_line '^all '
    run ga ab -r 1 --per-feature -- true
    [ "$status" -eq 0 ]
    for f in native $(toggled_features) all; do echo "$output" | grep -q "^$f "; done
    echo "$output" | grep -q 'not checked'
}

@test "ab: --json is machine-readable" {
    command -v python3 >/dev/null || skip "no python3"
    ga ab -r 2 --per-feature --json --check-digest result -- "$PROGS/door_getproc" "$PTX" > "$T/ab.json"
    python3 - "$T/ab.json" "$(toggled_features)" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
want = sys.argv[2].split() + ["all"]
assert d["runs"] == 2 and d["check"] == {"kind": "digest", "pattern": "result"}, d
assert len(d["native"]["times_s"]) == 2
assert [r["feature"] for r in d["rows"]][-len(want):] == want, d["rows"]
for r in d["rows"]:
    assert r["outputs_agree"] is True and r["speedup_min"] <= r["speedup_max"]
    assert r["min_s"] <= r["median_s"] <= r["max_s"]
assert d["outputs_agree"] is True
EOF
}

@test "ab: --svg writes a bar chart" {
    run ga ab -r 2 --per-feature --svg "$T/ab.svg" -- true
    [ "$status" -eq 0 ]
    python3 -c 'import xml.dom.minidom as m,sys; m.parse(sys.argv[1])' "$T/ab.svg"
    # a legend, the library's version and date, and (no GPU here) a clear mark
    grep -q 'whisker: range of the paired per-run speedups' "$T/ab.svg"
    grep -q 'within the run-to-run spread' "$T/ab.svg"
    grep -Eq 'libgpuaccel [0-9]+\.[0-9]+\.[0-9]+' "$T/ab.svg"
    grep -Eq ', [0-9]{4}-[0-9]{2}-[0-9]{2}, ' "$T/ab.svg"
    if [ ! -e /dev/nvidiactl ]; then grep -q 'NO GPU' "$T/ab.svg"; fi
    grep -q '^<svg xmlns="http://www.w3.org/2000/svg"' "$T/ab.svg"
    grep -q '1.0x = native' "$T/ab.svg"
    # one bar a row, each feature and "all" (legend swatches sit at the left edge)
    [ "$(grep -c '<rect x="150"' "$T/ab.svg")" -eq $(($(toggled_features | wc -l) + 1)) ]
    if command -v python3 >/dev/null; then
        python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$T/ab.svg"
    fi
    run ga ab -r 1 --svg /nonexistent/dir/x.svg -- true
    [ "$status" -eq 2 ]
}

@test "ab: outputs that differ exit 1 and say so" {
    run ga ab -r 1 --check-digest '^digest' -- sh -c 'echo digest ${LD_PRELOAD:+library}${LD_PRELOAD:-native}'
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"all output differs:"*"native: digest native"*"all: digest library"* ]]
    echo "$output" | grep -Eq '^all .*DIFFER$'
    [[ "$output" == *"outputs differ between the native run and the library's"* ]]
    # a pattern that matches no line is an error, not two empty digests that agree
    run ga ab -r 1 --check-digest '^nothing matches' -- echo hello
    [ "$status" -eq 1 ]
    [[ "$output" == *"--check-digest '^nothing matches' matched no line of the native run's standard output"* ]]
    no_line '^all .*agree$'
}

@test "ab: --check-file compares the file's bytes after each run" {
    run ga ab -r 2 --check-file "$T/out.bin" -- sh -c "printf 'a\\0b' > '$T/out.bin'"
    [ "$status" -eq 0 ]
    echo "$output" | grep -Eq '^all .* agree$'
    run ga ab -r 1 --check-file "$T/out2" -- sh -c "echo \${LD_PRELOAD:+x} > '$T/out2'"
    [ "$status" -eq 1 ]
    [[ "$output" == *"all: $T/out2 differs from the native run's"* ]]
}

@test "ab: a failing command stops with exit 1 and its stderr" {
    run ga ab -r 2 -- sh -c 'echo boom >&2; exit 3'
    [ "$status" -eq 1 ]
    [[ "$output" == *"native run of 'sh' failed (exit status 3)"* ]]
    [[ "$output" == *"boom"* ]]
}

@test "ab: option errors" {
    run ga ab -r 0 -- true
    [ "$status" -eq 2 ]
    run ga ab --runs many -- true
    [ "$status" -eq 2 ]
    run ga ab -w -1 -- true
    [ "$status" -eq 2 ]
    run ga ab --feature warp -- true
    [ "$status" -eq 2 ]
    run ga ab --check-digest x --check-file y -- true
    [ "$status" -eq 2 ]
    run ga ab --check-digest '(' -- true
    [ "$status" -eq 2 ]
    [[ "$output" == *"not a valid regular expression"* ]]
    run -127 ga ab -- no-such-command-here
}

@test "ab: no GPU is a note, or exit 77 with --require-gpu" {
    [ ! -e /dev/nvidiactl ] && [ ! -e /dev/nvidia0 ] || skip "this machine has a GPU"
    run ga ab -r 1 -- true
    [ "$status" -eq 0 ]
    [[ "$output" == *"note: no NVIDIA GPU here"* ]]
    run ga ab -r 1 --require-gpu -- true
    [ "$status" -eq 77 ]
    [ "$output" = "gpuaccel: no GPU: /dev/nvidiactl is missing (--require-gpu)" ]
}

@test "tune: the tuner writes a verified entry, the program's output unchanged, and the table works" {
    table="$BATS_TEST_TMPDIR/t.table"
    want=$(env -u LD_PRELOAD LD_LIBRARY_PATH="$GA_BUILD/tests/fake" \
        "$GA_BUILD/tests/progs/door_getproc" "$GA_SRC/tests/progs/kernels.ptx")
    run env LD_LIBRARY_PATH="$GA_BUILD/tests/fake" "$GA_TOOL" tune -o "$table" -- \
        "$GA_BUILD/tests/progs/door_getproc" "$GA_SRC/tests/progs/kernels.ptx"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -v '^gpuaccel')" = "$want" ]
    has_words '1 verified entries'
    grep -q '^add sm_90 32,1,1 128,1,1 0 -> 4,1,1 1024,1,1 threads$' "$table"
    grep -q '^# verified: .* compared bit for bit' "$table"
    run env GPUACCEL_TUNE=1 GPUACCEL_TUNE_TABLE="$table" GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$GA_BUILD/tests/fake" "$GA_BUILD/tests/progs/door_getproc" \
        "$GA_SRC/tests/progs/kernels.ptx"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -v '^gpuaccel')" = "$want" ]
    has_words 'gpuaccel: tune: rewritten=19'
}

@test "tune: a launch whose result is already in memory is not tried (no entry that skips work)" {
    table="$BATS_TEST_TMPDIR/r.table"
    want=$(env -u LD_PRELOAD LD_LIBRARY_PATH="$GA_BUILD/tests/fake" \
        "$GA_BUILD/tests/progs/repeat_prog" "$GA_SRC/tests/progs/kernels.ptx")
    [ "$want" = "sum=28672" ]
    run env LD_LIBRARY_PATH="$GA_BUILD/tests/fake" "$GA_TOOL" tune -o "$table" -- \
        "$GA_BUILD/tests/progs/repeat_prog" "$GA_SRC/tests/progs/kernels.ptx"
    echo "$output"
    cat "$table"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -v '^gpuaccel')" = "$want" ]
    has_words '0 verified entries'
    grep -q '^# no: fill .*the launch changed no memory' "$table"
}

# tune_run TABLE [VAR=VALUE...] [OPTION...] -- PROGRAM ARGS...: PROGRAM natively on
# the fake driver (its output in $want), then gpuaccel tune -o TABLE of it, as `run`
# leaves it (status, output), the output and the table printed for a failure.
tune_run() {
    local table=$1 envs=() opts=()
    shift
    while [ "$1" != "--" ]; do
        if [[ $1 == *=* ]]; then envs+=("$1"); else opts+=("$1"); fi
        shift
    done
    shift
    want=$(env -u LD_PRELOAD LD_LIBRARY_PATH="$GA_BUILD/tests/fake" "$@")
    run env LD_LIBRARY_PATH="$GA_BUILD/tests/fake" "${envs[@]}" "$GA_TOOL" tune "${opts[@]}" \
        -o "$table" -- "$@"
    echo "$output"
    cat "$table" 2>/dev/null || true
}

@test "tune: stream-ordered memory is restored; a launch on page-locked memory is left alone" {
    table="$BATS_TEST_TMPDIR/m.table"
    tune_run "$table" -- "$GA_BUILD/tests/progs/tunemem_prog" "$GA_SRC/tests/progs/kernels.ptx"
    [ "$want" = "async=8468480 host=25307136" ]
    [ "$status" -eq 0 ]
    # the host sum moves if the kernel on page-locked memory ran more than its four times
    [ "$(echo "$output" | grep -v '^gpuaccel')" = "$want" ]
    [ "$(grep -c 'cannot restore' "$table")" -eq 0 ]
    grep -q '^add sm_90 32,1,1 128,1,1 0 -> .* threads$' "$table"
    grep -q '^# verified: .* 1 allocations .* compared bit for bit' "$table"
    grep -q '^# no: add 64,1,1 64,1,1 0: not tried: a parameter points into page-locked host memory' "$table"
}

@test "tune: a candidate that faults the context is marked, and the program runs again without it" {
    table="$BATS_TEST_TMPDIR/f.table"
    prog=("$GA_BUILD/tests/progs/tunemem_prog" "$GA_SRC/tests/progs/kernels.ptx")
    # add traps with 1024 threads a block: each configuration's last candidate
    tune_run "$table" FAKECUDA_TRAP_BLOCK=1024 -- "${prog[@]}"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -v '^gpuaccel' | grep -v 'tunemem_prog.c:[0-9]*: ')" = "$want" ]
    has_words 'running it again, leaving it alone (run 2 of 5)'
    [ "$(grep -c 'run 3 of 5)' <<<"$output")" -eq 0 ]
    grep -q '^# no: add 32,1,1 128,1,1 0: faulted: the candidate 4,1,1 1024,1,1 made the context fail' "$table"
    has_words '0 verified entries, 2 configurations not kept'
    # a block size that divides no thread count is never tried: nothing faults
    rm -f "$table"
    tune_run "$table" FAKECUDA_TRAP_BLOCK=96 --exhaustive -- "${prog[@]}"
    [ "$status" -eq 0 ]
    [ "$(grep -c faulted "$table")" -eq 0 ]
    [ "$(grep -c '^add ' "$table")" -eq 1 ]
    # a skip table that cannot be read: one warning, nothing skipped
    run env LD_LIBRARY_PATH="$GA_BUILD/tests/fake" GPUACCEL_TUNER="$table.2" \
        GPUACCEL_TUNER_SKIP=/nonexistent LD_PRELOAD="$GA_LIB" "${prog[@]}"
    [ "$status" -eq 0 ]
    has_words "gpuaccel: warning: GPUACCEL_TUNER_SKIP: cannot read '/nonexistent' (expected a table the tuner wrote); nothing is skipped"
}

@test "tune --exhaustive: every multiple of 32 that divides the thread count is tried" {
    table="$BATS_TEST_TMPDIR/x.table"
    prog=("$GA_BUILD/tests/progs/tunemem_prog" "$GA_SRC/tests/progs/kernels.ptx" 12288)
    tune_run "$table" --exhaustive -- "${prog[@]}"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -v '^gpuaccel')" = "$want" ]
    # 12288 threads: 32, 64, 96, 128, 192, 256, 384, 512, 768 and 1024 divide it; less
    # the launch's own block size, 9 candidates (5 without --exhaustive)
    [ "$(grep -c '^# verified: 9 candidates run, 0 gave other results' "$table")" -eq 1 ]
    grep -q '^add sm_90 96,1,1 128,1,1 0 -> 12,1,1 1024,1,1 threads$' "$table"
    rm -f "$table"
    tune_run "$table" -- "${prog[@]}"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^# verified: 5 candidates run, 0 gave other results' "$table")" -eq 1 ]
}

@test "tune-retime: both tables timed side by side, per kernel, outputs checked" {
    d="$BATS_TEST_TMPDIR/d.table" e="$BATS_TEST_TMPDIR/e.table"
    prog=("$GA_BUILD/tests/progs/door_getproc" "$GA_SRC/tests/progs/kernels.ptx")
    export LD_LIBRARY_PATH="$GA_BUILD/tests/fake"
    "$GA_TOOL" tune -o "$d" -- "${prog[@]}" >/dev/null 2>&1
    "$GA_TOOL" tune --exhaustive -o "$e" -- "${prog[@]}" >/dev/null 2>&1
    run python3 "$GA_SRC/bench/tune-retime.py" --runs 2 --gpuaccel "$GA_TOOL" "$d" "$e" -- "${prog[@]}"
    echo "$output"
    [ "$status" -eq 0 ]
    # Both tables rewrite 'add' to 4 blocks of 1024, faster than 32 of 128 on the
    # fake driver's clock (each block costs 0.2 us, each thread 1 ns).
    has_words '2 runs of each, alternating; outputs identical'
    echo "$output" | grep -Eq '^add +[0-9.]+us +[0-9.]+us +[0-9.]+us +1\.000x$'
    native=$(echo "$output" | awk '$1 == "add" {print $2 + 0}')
    tuned=$(echo "$output" | awk '$1 == "add" {print $3 + 0}')
    awk -v n="$native" -v t="$tuned" 'BEGIN {exit !(t < n)}'
    # No command: a usage error.
    run python3 "$GA_SRC/bench/tune-retime.py" --runs 1 --gpuaccel "$GA_TOOL" "$d" "$e"
    [ "$status" -eq 2 ]
}

@test "tune: --kernel limits what is tried; usage errors" {
    table="$BATS_TEST_TMPDIR/none.table"
    run env LD_LIBRARY_PATH="$GA_BUILD/tests/fake" "$GA_TOOL" tune -o "$table" --kernel 'nomatch*' \
        -- "$GA_BUILD/tests/progs/door_getproc" "$GA_SRC/tests/progs/kernels.ptx"
    [ "$status" -eq 0 ]
    has_words '0 verified entries'
    # several globs, comma-separated: one of them names add
    run env LD_LIBRARY_PATH="$GA_BUILD/tests/fake" "$GA_TOOL" tune -o "$table.2" \
        --kernel 'nomatch*,ad?' -- "$GA_BUILD/tests/progs/door_getproc" "$GA_SRC/tests/progs/kernels.ptx"
    [ "$status" -eq 0 ]
    has_words '1 verified entries'
    run "$GA_TOOL" tune -o
    [ "$status" -eq 2 ]
    run "$GA_TOOL" tune --frobnicate -- true
    [ "$status" -eq 2 ]
}

@test "kernels list: the table shipped in the library (read by dlopen, so the library loads that way too)" {
    run "$GA_TOOL" kernels --lib "$GA_LIB" list
    echo "$output"
    [ "$status" -eq 0 ]
    if [ -n "$NVCC" ]; then
        [[ "$output" == *"_Z9ntt_layerPjjjj"*"ga_ntt_layer"*"grid=any"* ]]
    else
        [[ "$output" == *"ships no replacement kernels"* ]]
    fi
}

@test "kernels ids: each kernel's code identity, from PTX, a program, or by name; bad use" {
    run "$GA_TOOL" kernels ids "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -Ec '^(add|fill) code=[0-9a-f]{16}$')" -eq 2 ]
    add=$(echo "$output" | sed -n 's/^add //p')
    run "$GA_TOOL" kernels ids "$PTX" add
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -v '^#')" = "add $add" ]
    run "$GA_TOOL" kernels ids "$PTX" add _Z6absentv
    [ "$status" -eq 1 ]
    [[ "$output" == *"# _Z6absentv: not identified in $PTX"* ]]
    # the same kernel text in another module: the same identity, whatever else is there
    { echo '// another module'; cat "$PTX"; printf '.visible .entry extra()\n{\n\tret;\n}\n'; } >"$T/more.ptx"
    run "$GA_TOOL" kernels ids "$T/more.ptx" add
    [ "$(echo "$output" | grep -v '^#')" = "add $add" ]
    sed 's/add.s32 %r7/sub.s32 %r7/' "$PTX" >"$T/other.ptx"
    run "$GA_TOOL" kernels ids "$T/other.ptx" add
    [ "$status" -eq 0 ]
    [[ "$output" == *"add code="* ]]
    [[ "$output" != *"add $add"* ]]
    run "$GA_TOOL" kernels ids "$T/nosuch"
    [ "$status" -eq 1 ]
    [[ "$output" == *"$T/nosuch: No such file"* ]]
    run "$GA_TOOL" kernels ids /bin/sh
    [ "$status" -eq 1 ]
    [[ "$output" == *"a host binary without device code"* ]]
    run "$GA_TOOL" kernels ids
    [ "$status" -eq 2 ]
    [ -n "$NVCC" ] || skip "built without nvcc: no prover to read"
    # the prover's kernels: the identities the shipped table lists, each row's
    run "$GA_TOOL" kernels ids "$GA_BUILD/tests/apps/prover/prover"
    echo "$output"
    [ "$status" -eq 0 ]
    ids=$output
    run "$GA_TOOL" kernels --lib "$GA_LIB" list
    rows=$(echo "$output" | grep -v '^#' | grep .)
    # the rows the source leaves without code=: the prover's, with its identities
    bundled=$(grep -v '^#' "$GA_SRC/kernels/table.txt" | awk 'NF && !/ code=/ {print $1}')
    [ "$(echo "$bundled" | wc -l)" -eq 8 ]
    for name in $bundled; do
        code=$(echo "$rows" | awk -v n="$name" '$1 == n {print $4}')
        echo "$ids" | grep -qx "$name $code" || { echo "no $name $code in the prover"; exit 1; }
    done
    # the others (public provers' builds): listed with the source's identities
    [ "$(echo "$rows" | wc -l)" -eq "$(grep -v '^#' "$GA_SRC/kernels/table.txt" | grep -c .)" ]
    grep -v '^#' "$GA_SRC/kernels/table.txt" | awk 'NF && / code=/ {print $1, $4}' | while read -r name code; do
        echo "$rows" | awk '{print $1, $4}' | grep -qx "$name $code" || { echo "no row $name $code"; exit 1; }
    done
}

@test "kernels verify: runs the harness (SKIP without a GPU); bad use is a usage error" {
    [ -n "$NVCC" ] || skip "built without nvcc"
    run "$GA_TOOL" kernels --lib "$GA_LIB" verify --quick
    echo "$output"
    if nvidia-smi -L >/dev/null 2>&1; then
        [ "$status" -eq 0 ]
    else
        [ "$status" -eq 77 ]
        [[ "$output" == *"SKIP: no CUDA device"* ]]
    fi
    run "$GA_TOOL" kernels
    [ "$status" -eq 2 ]
    run "$GA_TOOL" kernels frobnicate
    [ "$status" -eq 2 ]
}

@test "the command's features are the library's list (src/features/features.def)" {
    # The boolean switches of the list, by variable, against what `ab` runs.
    want=$(sed -n 's/^GA_FEATURE([a-z_]*, \(GPUACCEL_[A-Z_]*\), 1)$/\1/p' \
        "$GA_SRC/src/features/features.def" | sort)
    got=$(ga ab -r 1 --per-feature --json -- true |
        python3 -c 'import json,sys; print("\n".join("GPUACCEL_" + r["feature"].upper() for r in json.load(sys.stdin)["rows"] if r["feature"] not in ("native", "all")))' | sort)
    echo "list: $want"
    echo "command: $got"
    [ -n "$want" ]
    [ "$want" = "$got" ]
}

@test "env --check: exit 1 and one line per problem; 0 when the settings are good" {
    run env GPUACCEL_POOLL=1 GPUACCEL_POOL_LIMIT=50 "$GA_TOOL" env --check
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"problem: GPUACCEL_POOLL is not a setting of this library; did you mean GPUACCEL_POOL?"* ]]
    [[ "$output" == *"problem: GPUACCEL_POOL_LIMIT=50 means 50 bytes"* ]]
    echo "$output" | grep -Eq '^GPUACCEL_POOL_LIMIT +50% +50 +50 '
    run env GPUACCEL=all GPUACCEL_POOL_LIMIT=2G "$GA_TOOL" env --check
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"no problems"* ]]
    echo "$output" | grep -Eq '^GPUACCEL_COALESCE +[01] +- +1 '
    echo "$output" | grep -Eq '^GPUACCEL_POOL_LIMIT +50% +2G +2G '
    run env GPUACCEL=0 "$GA_TOOL" env
    echo "$output" | grep -Eq '^GPUACCEL_POOL +[01] +- +0 '
    run "$GA_TOOL" env --bogus
    [ "$status" -eq 2 ]
}

@test "profile and tune check -o before running: a missing directory, an existing file (--force), a .json suffix" {
    run ga profile -o /nonexistent/dir/p -- sh -c 'echo ran'
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"the directory /nonexistent/dir does not exist"* ]]
    [[ "$output" != *"ran"* ]]
    touch "$T/old.json"
    run ga profile -o "$T/old.json" -- sh -c 'echo ran'
    [ "$status" -eq 2 ]
    [[ "$output" == *"$T/old.json: the file exists (--force overwrites it)"* ]]
    [[ "$output" != *"ran"* ]]
    run ga profile --force -o "$T/old.json" -- "$PROGS/door_getproc" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    [ -s "$T/old.json" ]
    [ -s "$T/old.txt" ]
    [ ! -e "$T/old.json.json" ]
    touch "$T/t.table"
    run ga tune -o "$T/t.table" -- true
    [ "$status" -eq 2 ]
    [[ "$output" == *"the file exists"* ]]
}

@test "profile: the program alone unless --enable, the environment or a config says otherwise" {
    show='env | grep -E "^GPUACCEL_(POOL|KERNELS|COALESCE)=" | sort | tr "\n" " "'
    run env -u GPUACCEL -u GPUACCEL_POOL -u GPUACCEL_KERNELS -u GPUACCEL_COALESCE \
        LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" profile -o "$T/a" -- sh -c "$show"
    echo "$output"
    has_words 'GPUACCEL_COALESCE=0 GPUACCEL_KERNELS=0 GPUACCEL_POOL=0'
    run env -u GPUACCEL -u GPUACCEL_KERNELS -u GPUACCEL_COALESCE GPUACCEL_POOL=1 \
        LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" profile -o "$T/b" \
        --enable coalesce -- sh -c "$show"
    echo "$output"
    has_words 'GPUACCEL_COALESCE=1 GPUACCEL_KERNELS=0 GPUACCEL_POOL=1'
}

@test "JSON stays valid with a non-UTF-8 byte on the command line (ab --json, the profile)" {
    command -v python3 >/dev/null || skip "no python3"
    ga ab -r 1 --json -- "$PROGS/door_getproc" "$PTX" $'caf\xe9' > "$T/ab.json"
    python3 -c 'import json,sys; d=json.loads(open(sys.argv[1],"rb").read().decode("utf-8")); assert d["command"][-1]=="caf\ufffd", d["command"]' "$T/ab.json"
    run ga profile -o "$T/p" -- "$PROGS/door_getproc" "$PTX" $'\xff\xfe'
    [ "$status" -eq 0 ]
    python3 -c 'import json,sys; json.loads(open(sys.argv[1],"rb").read().decode("utf-8"))' "$T/p.json"
}

@test "options follow getopt_long: --opt=value, -r2, per-command --help" {
    run ga run --enable=pool -- sh -c 'echo "$GPUACCEL_POOL"'
    [ "$status" -eq 0 ]
    [ "$output" = 1 ]
    run ga ab -r 2 --json -- true
    [ "$status" -eq 0 ]
    has_words '"runs":2'
    for c in run profile tune report ab advise kernels env; do
        run "$GA_TOOL" $c --help
        echo "$c: $output"
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "usage: gpuaccel $c "* ]]
    done
}

@test "ab: mean +/- sigma beside median/min/max; --export-json/-csv/-markdown beside the table" {
    run ga ab -r 3 --check-digest result --export-json "$T/x.json" --export-csv "$T/x.csv" \
        --export-markdown "$T/x.md" -- "$PROGS/door_getproc" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"mean +/- sigma"* ]]
    echo "$output" | grep -Eq '^all +[0-9.]+ (us|ms|s) +[0-9.]+ (us|ms|s) \+/- '
    [ "$(head -1 "$T/x.csv")" = "config,median_s,mean_s,stddev_s,min_s,max_s,speedup,speedup_min,speedup_max,outputs,runs,runs_requested,measure" ]
    grep -q '^all,[0-9.]*,[0-9.]*,[0-9.]*,' "$T/x.csv"
    grep -q '^| all | ' "$T/x.md"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["rows"][0]; assert r["mean_s"] > 0 and r["stddev_s"] >= 0 and d["runs"] == 3' "$T/x.json"
}

@test "ab: Ctrl-C prints the rounds completed and exits 130" {
    run timeout --preserve-status -s INT 3 "$GA_TOOL" ab --lib "$GA_LIB" -r 200 -- sleep 0.2
    echo "$output"
    [ "$status" -eq 130 ]
    [[ "$output" == *"interrupted after"*"complete round"* ]]
    [[ "$output" == *"(interrupted: the rounds completed, "*" of 200 asked)"* ]]
    echo "$output" | grep -Eq '^native +[0-9.]+ ms'
}

@test "profile report: headed opportunity columns, a suggested next command, singular counts" {
    run ga profile -o "$T/r" -- "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    grep -Eq '^  feature +verdict +saving +why$' "$T/r.txt"
    grep -Eq '^Next: gpuaccel (advise|ab --feature [a-z]+) -- COMMAND' "$T/r.txt"
    run ! grep -Eq '(^|[^0-9,])1 (launches|allocations|kernels)\b' "$T/r.txt"
    # the saving never runs into the reason
    run ! grep -Eq 'would help +~[0-9.]+ [mun]?s[^ ]' "$T/r.txt"
}

@test "the man pages carry the version and release date configure set" {
    v=$("$GA_TOOL" --version | awk '{print $2}')
    for page in "$GA_BUILD/man/gpuaccel.1" "$GA_BUILD/man/libgpuaccel.7" \
        "$GA_BUILD"/man/gpuaccel-{tune,kernels,profile}.5; do
        head -3 "$page" | grep -Eq "^\.TH [A-Z-]+ [157] \"[0-9]{4}-[0-9]{2}-[0-9]{2}\" \"libgpuaccel $v\"" ||
            { echo "$page: $(head -3 "$page")"; false; }
    done
}
