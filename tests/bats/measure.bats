#!/usr/bin/env bats
# measure.bats - what ab and advise measure and how they behave as a
# benchmarking tool's users expect (hyperfine's option names): --metric and
# --phase against programs whose numbers and pauses are known, runs that fail
# or crash, a digest pattern that matches nothing, option values that are
# options, and an interrupt that still writes the exports.
load helpers
bats_require_minimum_version 1.5.0

setup() {
    setup_fake
    GA_TOOL="${GA_TOOL:-$GA_BUILD/tools/gpuaccel}"
    T="$BATS_TEST_TMPDIR"
}

ga() {
    env LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" "$@"
}

# median ROW KEY FILE: a row's value from an --export-json file ("native" or
# a row's label).
median() {
    python3 - "$@" <<'PY'
import json, sys
row, key, path = sys.argv[1:4]
d = json.load(open(path))
r = d["native"] if row == "native" else next(x for x in d["rows"] if x["feature"] == row)
print(r[key])
PY
}

@test "--metric: the first group of the last matching line, per run; lower is better" {
    # native prints 7 last, the library's runs 3: a known number each
    run ga ab -r 3 --metric '^work_ms: ([0-9.]+)' --export-json "$T/m.json" -- \
        sh -c 'echo work_ms: 99; echo other: 1; echo work_ms: ${LD_PRELOAD:+3}${LD_PRELOAD:-7}'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"measure: --metric '^work_ms: ([0-9.]+)' (the number the program prints; lower is better)"* ]]
    echo "$output" | grep -Eq '^native +7 +7 \+/- 0 +7 +7 '
    echo "$output" | grep -Eq '^all +3 +3 \+/- 0 +3 +3 +2\.33x'
    [ "$(median native median "$T/m.json")" = 7 ]
    [ "$(median all median "$T/m.json")" = 3 ]
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); m=d["measure"]; assert m["kind"]=="metric" and m["regex"]=="^work_ms: ([0-9.]+)" and m["unit"] is None, m; assert "median_s" not in d["native"]' "$T/m.json"
}

@test "--metric: a run whose output never matches is an error naming the regex" {
    run ga ab -r 2 --metric '^work_ms: ([0-9.]+)' -- sh -c 'echo ${LD_PRELOAD:+nothing}${LD_PRELOAD:-work_ms: 5}'
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"--metric '^work_ms: ([0-9.]+)' matched no line of the all run's standard output"* ]]
    run ga ab -r 1 --metric '^work_ms: [0-9.]+' -- echo work_ms: 5
    [ "$status" -eq 2 ]
    [[ "$output" == *"has no group"* ]]
    run ga ab -r 1 --metric '^v: (.*)' -- echo v: fast
    [ "$status" -eq 1 ]
    [[ "$output" == *"gives 'fast', not a number"* ]]
}

@test "--phase: the time between two lines as they arrive, not the whole process" {
    # 0.3 s between the lines, 0.4 s more after: the phase is about 0.3 s
    prog="echo start; sleep 0.3; echo end >&2; sleep 0.4"
    run ga ab -r 2 --phase '^start$' '^end$' --export-json "$T/p.json" -- sh -c "$prog"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"measure: --phase '^start\$' '^end\$'"* ]]
    for row in native all; do
        v=$(median "$row" median_s "$T/p.json")
        awk -v v="$v" 'BEGIN {exit !(v >= 0.29 && v < 0.55)}' || { echo "$row: $v"; false; }
    done
    python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["measure"]; assert m == {"kind": "phase", "start": "^start$", "end": "^end$", "unit": "s", "lower_is_better": True}, m' "$T/p.json"
    # END before START does not count; an END that never comes is an error
    run ga ab -r 1 --phase '^start$' '^end$' -- sh -c 'echo end; echo start'
    [ "$status" -eq 1 ]
    [[ "$output" == *"--phase: no line of the native run's output matched '^end\$' after the START line"* ]]
    run ga ab -r 1 --phase '^go$' '^end$' -- true
    [ "$status" -eq 1 ]
    [[ "$output" == *"matched '^go\$'"* ]]
    run ga ab -r 1 --phase '^go$' -- true
    [ "$status" -eq 2 ]
    [[ "$output" == *"--phase needs two values"* ]]
}

@test "a run killed by a signal is named; -i times non-zero exits but not crashes" {
    run ga ab -r 1 -- sh -c 'kill -SEGV $$'
    [ "$status" -eq 1 ]
    [[ "$output" == *"native run of 'sh' failed (killed by SIGSEGV"* ]]
    no_line 'exit status 139([^0-9]|$)'
    run ga ab -r 1 -- sh -c 'exit 3'
    [ "$status" -eq 1 ]
    [[ "$output" == *"failed (exit status 3)"* ]]
    run ga ab -r 2 -i -- sh -c 'exit 3'
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -Eq '^all +[0-9.]+ (us|ms|s) '
    run ga ab -r 1 --ignore-failure -- sh -c 'kill -KILL $$'
    [ "$status" -eq 1 ]
    [[ "$output" == *"(killed by SIGKILL)"* ]]
}

@test "an option's value must be a value: --export-json -- ./prog writes no file named --" {
    cd "$T"
    run ga ab --export-json -- true
    echo "$output"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--export-json needs a value, not the option '--'"* ]]
    [ ! -e "$T/--" ]
    run ga ab --export-csv --json -- true
    [ "$status" -eq 2 ]
    run ga ab -r --json -- true
    [ "$status" -eq 2 ]
    # the = form says it is meant
    run ga ab -r 1 --export-json=-- -- true
    [ "$status" -eq 0 ]
    [ -s "$T/--" ]
    # -n is hyperfine's --command-name, not runs: an error that says so
    run ga ab -n 3 -- true
    [ "$status" -eq 2 ]
    [[ "$output" == *"-r/--runs"* ]]
}

@test "--runs, --warmup and --command-name: the runs done and the name in the exports" {
    run ga ab --runs 2 --warmup 0 --command-name fast-thing --export-json "$T/r.json" \
        --export-markdown "$T/r.md" -- true
    echo "$output"
    [ "$status" -eq 0 ]
    has_words '2 runs each, alternating, no warm-up'
    [[ "$output" == *"command: fast-thing"* ]]
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["runs"] == 2 and d["runs_requested"] == 2 and d["warmup"] == 0 and d["command_name"] == "fast-thing" and d["interrupted"] is False and len(d["native"]["times_s"]) == 2, d' "$T/r.json"
    grep -q 'Command: fast-thing' "$T/r.md"
    run ga ab -r 1 -w 3 -- true
    has_words '1 run each, alternating, after 3 warm-ups'
}

@test "an interrupted ab still writes its exports, marked with the runs asked and done" {
    run timeout --preserve-status -s INT 2 "$GA_TOOL" ab --lib "$GA_LIB" -r 200 \
        --export-json "$T/i.json" --export-csv "$T/i.csv" --export-markdown "$T/i.md" -- sleep 0.2
    echo "$output"
    [ "$status" -eq 130 ]
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["interrupted"] is True and d["runs_requested"] == 200 and d["runs"] < 200 and len(d["native"]["times_s"]) == d["runs"], d' "$T/i.json"
    grep -Eq '^native,.*,[0-9]+,200,wall time of the whole process$' "$T/i.csv"
    grep -Eq 'of 200 runs done \(interrupted\)' "$T/i.md"
    # SIGTERM too, and before any round completed (the warm-ups take 0.6 s):
    # the files say so. timeout signals the process and then its group, so ab
    # gets it twice: the second must not cut the file short (a run under load
    # once left it empty), whenever the pair lands
    for at in 0.1 0.25 0.4 0.55; do
        rm -f "$T/t.json"
        run timeout --preserve-status -s TERM "$at" "$GA_TOOL" ab --lib "$GA_LIB" -r 5 \
            --export-json "$T/t.json" -- sleep 0.3
        [ "$status" -eq 143 ]
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["interrupted"] is True and d["runs"] == 0 and d["native"]["median_s"] is None, d' "$T/t.json"
        [ ! -e "$T/t.json.tmp" ]
    done
}

@test "ab and advise --help describe every option with its default; the man page names each" {
    man_text=$(sed 's/\\-/-/g' "$GA_SRC/man/gpuaccel.1.in")
    for c in ab advise profile tune run; do
        run "$GA_TOOL" $c --help
        [ "$status" -eq 0 ]
        # each option's text, joined over its folded lines, says its default
        texts=$(echo "$output" | sed -n '/^options:/,$p' | sed 1d |
            awk '/^  (-[a-z], )?--|^      --/ {if (t) print t; t=$0; next} {t = t " " $0} END {print t}')
        while IFS= read -r t; do
            case "$t" in *--help*) continue ;; esac
            [[ "$t" == *"default"* ]] || { echo "$c: no default: $t"; false; }
            name=$(echo "$t" | grep -o -- '--[a-z-]*' | head -1)
            grep -qF -- "$name" <<<"$man_text" ||
                { echo "$c: $name not in man/gpuaccel.1.in"; false; }
        done <<<"$texts"
    done
}
