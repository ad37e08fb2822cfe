#!/usr/bin/env bats
# advise.bats - gpuaccel advise searches settings, not features: on programs
# whose run time (or printed number) depends on the GPUACCEL settings they
# run under, it must pick the setting that is truly faster, write a file that
# `gpuaccel ab --config` measures faster again, say plainly when the data
# cannot separate settings, keep to its budget, run the tuner when the profile
# cannot tell what tune would do, and leave out a setting that fails.
load helpers
bats_require_minimum_version 1.5.0

setup() {
    setup_fake
    GA_TOOL="${GA_TOOL:-$GA_BUILD/tools/gpuaccel}"
    T="$BATS_TEST_TMPDIR"
    export GA_TOOL
}

ga() {
    env LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" "$@"
}

# knob: a program whose work depends on the settings it runs under, read as
# the library reads them (`gpuaccel env`: the environment, then the
# GPUACCEL_CONFIG file, then the defaults); natively (no library) it is 80 ms.
# Under the library: 80 ms, pool -20, graphs -20, kernels +30, coalesce +10,
# so the best setting tried is every feature but kernels (50 ms, 1.6x), and
# the defaults (pool and kernels on: 90 ms) lose. It prints "work_ms: N" and
# sleeps N ms; KNOB_CRASH=FEATURE makes it crash when that feature is on.
make_knob() {
    cat >"$T/knob" <<'SH'
#!/bin/sh
case "$LD_PRELOAD" in
*libgpuaccel*) eff=$("$GA_TOOL" env | awk '$1 ~ /^GPUACCEL_[A-Z_]+$/ {print $1 "=" $4}') ;;
*) eff= ;;
esac
ms=80
for kv in $eff; do
    case $kv in
    GPUACCEL_POOL=1) ms=$((ms - 20)) ;;
    GPUACCEL_GRAPHS=1) ms=$((ms - 20)) ;;
    GPUACCEL_KERNELS=1) ms=$((ms + 30)) ;;
    GPUACCEL_COALESCE=1) ms=$((ms + 10)) ;;
    esac
    [ -n "${KNOB_CRASH:-}" ] && [ "$kv" = "GPUACCEL_$KNOB_CRASH=1" ] && kill -SEGV $$
done
[ -n "${KNOB_FLAT:-}" ] && ms=80
sleep "$(awk -v m="$ms" 'BEGIN {printf "%.3f", m / 1000}')"
echo "result ok"
echo "work_ms: $ms"
SH
    chmod +x "$T/knob"
}

# speedup FILE ROW: native median over ROW's median, from an --export-json file.
speedup() {
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=next(x for x in d["rows"] if x["feature"]==sys.argv[2]); k=[k for k in r if k.startswith("median")][0]; print(d["native"][k] / r[k])' "$1" "$2"
}

@test "advise picks the setting that is truly faster; --write then ab --config reproduces it" {
    command -v python3 >/dev/null || skip "no python3"
    make_knob
    run ga advise --budget 30 --check-digest '^result' --write "$T/adv.conf" -- "$T/knob"
    echo "$output"
    [ "$status" -eq 0 ]
    # pool and graphs on, kernels off: the 50 ms setting, not the defaults
    grep -qx 'GPUACCEL_POOL=1' "$T/adv.conf"
    grep -qx 'GPUACCEL_GRAPHS=1' "$T/adv.conf"
    grep -qx 'GPUACCEL_KERNELS=0' "$T/adv.conf"
    # (1.6x on an idle machine; each library run also pays for loading the
    # library into the knob's few processes, which a busy machine stretches)
    echo "$output" | grep -Eq '^advice: all-kernels \(.*\): 1\.[1-9][0-9]x of native, 95% interval '
    # the defaults (kernels on) lose to native here: advise did not just take them
    echo "$output" | grep -Eq '^defaults +[0-9]+ +[0-9.]+ ms +0\.[0-9]+x '
    # the same file, measured again by ab, is faster than native by about as much
    run ga ab -r 3 --config "$T/adv.conf" --check-digest '^result' --export-json "$T/ab.json" -- "$T/knob"
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -Eq '^config .* agree$'
    awk -v s="$(speedup "$T/ab.json" config)" 'BEGIN {exit !(s >= 1.15)}'
}

@test "--metric: the program's own number decides, and the winner separates from every other setting" {
    make_knob
    run ga advise --budget 20 --metric '^work_ms: ([0-9]+)' --write "$T/m.conf" -- "$T/knob"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"measure: --metric '^work_ms: ([0-9]+)'"* ]]
    # 80 / 50 exactly: the runs print the same number every time
    has_words 'advice: all-kernels'
    [[ "$output" == *": 1.60x of native, 95% interval 1.60-1.60x, "* ]]
    [[ "$output" == *"separated from every other setting"* ]]
    echo "$output" | grep -Eq '^defaults +[0-9]+ +90 +0\.89x '
    # graphs paid alone and is not a default: the defaults plus graphs were
    # tried (70); coalesce did not pay: no defaults+coalesce
    echo "$output" | grep -Eq '^defaults\+graphs +[0-9]+ +70 +1\.14x '
    no_line '^defaults\+coalesce '
    grep -qx 'GPUACCEL_KERNELS=0' "$T/m.conf"
    run ga ab -r 2 --config "$T/m.conf" --metric '^work_ms: ([0-9]+)' -- "$T/knob"
    [ "$status" -eq 0 ]
    echo "$output" | grep -Eq '^config +50 +50 \+/- 0 .* 1\.60x '
}

@test "says plainly when the data cannot separate settings, and keeps to its budget" {
    make_knob
    # only pool matters: pool alone, all, the defaults... tie at 60, and the
    # defaults are advised among them (whichever median came out fastest)
    cat >"$T/flat" <<'SH'
#!/bin/sh
case "$LD_PRELOAD" in *libgpuaccel*) p=$("$GA_TOOL" env | awk '$1 == "GPUACCEL_POOL" {print $4}') ;; esac
[ "${p:-0}" = 1 ] && echo "work_ms: 60" || echo "work_ms: 80"
SH
    chmod +x "$T/flat"
    t0=$(date +%s)
    run ga advise --budget 4 --metric '^work_ms: ([0-9]+)' -- "$T/flat"
    t1=$(date +%s)
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"advice: defaults ("*"pool"*" on): 1.33x of native, 95% interval 1.33-1.33x, "* ]]
    [[ "$output" == *"the data cannot separate them from "*"(1.33x, the fastest median)"*"(their intervals overlap"*"among settings it cannot tell apart the defaults are advised"* ]]
    # the fresh rounds measured the setting advised, not the fastest median
    echo "$output" | grep -Eq '^defaults \(fresh\) +5 +60 +1\.33x '
    [ -z "$(echo "$output" | grep -E '^pool \(fresh\) ')" ]
    # the first pass, then repeats until the budget: not much past 4 s
    [ $((t1 - t0)) -le 12 ]
    # a program the settings do not change: nothing separates from native
    run ga advise --budget 2 --metric '^work_ms: ([0-9]+)' --write "$T/n.conf" -- sh -c 'echo work_ms: 80'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"advice: the data cannot separate any setting from native"* ]]
    [ "$(grep -v '^#' "$T/n.conf")" = "GPUACCEL=0" ]
}

@test "the profile ranks the features; the tuner runs when tune is unknown; --no-tune skips it" {
    run ga advise --budget 5 --check-digest result --write "$T/d.conf" -- "$PROGS/door_getproc" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"profiling the command once"* ]]
    [[ "$output" == *"Opportunities"* ]]
    # features with nothing to act on are not tried alone
    [[ "$output" == *"(the profile saw nothing they would act on)"* ]]
    no_line '^staging '
    # the tuner proved the add rewrite: tune is a setting of its own
    [[ "$output" == *"tune: the tuner on the busiest kernels (add,fill)"* ]]
    has_words 'tune: 1 verified entry'
    echo "$output" | grep -Eq '^tune +[0-9]+ +[0-9.]+ (us|ms|s) '
    echo "$output" | grep -q '^advice: '
    # what advise wrote loads under --config, without a problem
    run env GPUACCEL_CONFIG="$T/d.conf" "$GA_TOOL" env --check
    echo "$output"
    [ "$status" -eq 0 ]
    run ga advise --budget 2 --no-tune --check-digest result -- "$PROGS/door_getproc" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    no_line '^gpuaccel advise: tune'
    no_line '^tune '
    run ga advise --svg x -- true
    [ "$status" -eq 2 ]
}

@test "the advice's figure comes from fresh runs of the pick; a pick they do not bear out is not advised" {
    # lucky: pool alone is 50 ms (native and every other setting 80) for its
    # first LUCKY_FOR runs, 100 ms after; every run of pool alone is counted
    # in $T/count. A unique winner with exact numbers: the search stops after
    # its first rounds, the same every time.
    cat >"$T/lucky" <<'SH'
#!/bin/sh
case "$LD_PRELOAD" in *libgpuaccel*)
    p=$("$GA_TOOL" env | awk -v feats="$LUCKY_FEATS" '$1 ~ "^GPUACCEL_(" feats ")$" && $4 == 1 {n++; if ($1 == "GPUACCEL_POOL") p = 1}
                              END {print (n == 1 && p) ? 1 : 0}') ;;
esac
if [ "${p:-0}" = 1 ]; then
    n=$(($(cat "$T/count" 2>/dev/null || echo 0) + 1)); echo $n >"$T/count"
    [ "$n" -le "${LUCKY_FOR:-1000000}" ] && echo "work_ms: 50" || echo "work_ms: 100"
else
    echo "work_ms: 80"
fi
SH
    chmod +x "$T/lucky"
    LUCKY_FEATS=$(toggled_features | tr 'a-z\n' 'A-Z|' | sed 's/|$//')
    export T LUCKY_FEATS
    # pool's luck holds: the pick, and its fresh rounds say the same
    run ga advise --budget 30 --metric '^work_ms: ([0-9]+)' -- "$T/lucky"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"advice: pool (pool on): 1.60x of native, 95% interval 1.60-1.60x, 5 runs after the search (which measured 1.60x over 3 runs); separated from every other setting"* ]]
    echo "$output" | grep -Eq '^pool \(fresh\) +5 +50 +1\.60x '
    # the same search, but pool's luck runs out just before the fresh rounds
    # (deterministic numbers: the search runs the same settings each time;
    # the fresh rounds are the last 5)
    lucky_for=$(($(cat "$T/count") - 5))
    rm -f "$T/count"
    run env LUCKY_FOR=$lucky_for LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" \
        advise --budget 30 --metric '^work_ms: ([0-9]+)' --write "$T/l.conf" -- "$T/lucky"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *") was the fastest in the search, 1.60x of native, but its fresh runs do not separate it from native (0.80x, 95% interval 0.80-0.80x, 5 runs); run it natively"* ]]
    [ "$(grep -v '^#' "$T/l.conf")" = "GPUACCEL=0" ]
}

@test "a setting whose run fails is left out, and the search goes on" {
    make_knob
    run env KNOB_CRASH=GRAPHS LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" \
        advise --budget 10 --metric '^work_ms: ([0-9]+)' -- "$T/knob"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"graphs run of '$T/knob' failed (killed by SIGSEGV"* ]]
    [[ "$output" == *"gpuaccel advise: graphs is left out: its run failed"* ]]
    echo "$output" | grep -Eq '^graphs .* FAILED$'
    # without graphs, the best left is pool alone (60 ms)
    echo "$output" | grep -Eq '^advice: pool \(pool on\): 1\.33x of native'
}

@test "an interrupted advise prints what it measured and writes its exports, marked" {
    make_knob
    run timeout --preserve-status -s INT 3 env LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" \
        "$GA_TOOL" advise --budget 60 --export-json "$T/i.json" -- "$T/knob"
    echo "$output"
    [ "$status" -eq 130 ]
    [[ "$output" == *"advice: none: interrupted"* ]]
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["interrupted"] is True and d["runs"] >= 1, d' "$T/i.json"
}

# check_knob: the knob above, run as tests/corpus/advise-check.sh's stand-in: it
# prints "digest: ..." and "phase_ms: N" (N as the knob's work_ms, kernels adding
# KNOB_KERNELS, 30 by default, and coalesce KNOB_COALESCE, 10), and does the
# CUDA work of mix_prog only when profiled (the profile's estimates come from
# it), between "phase: begin" and "phase: end" lines; with KNOB_SLEEP, each
# run sleeps that many seconds.
make_check_knob() {
    cat >"$T/cknob" <<'SH'
#!/bin/sh
case "$LD_PRELOAD" in
*libgpuaccel*) eff=$("$GA_TOOL" env | awk '$1 ~ /^GPUACCEL_[A-Z_]+$/ {print $1 "=" $4}') ;;
*) eff= ;;
esac
if [ -n "${GPUACCEL_PROFILE:-}" ]; then # the timed phase, marked as corpus.h's Phase does
    echo "phase: begin"
    "$PROGS/mix_prog" "$PTX" >/dev/null
    echo "phase: end"
fi
[ -z "${KNOB_SLEEP:-}" ] || sleep "$KNOB_SLEEP" # a run that takes time (KNOB_SLEEP s)
ms=80
for kv in $eff; do
    case $kv in
    GPUACCEL_POOL=1) ms=$((ms - 20)) ;;
    GPUACCEL_GRAPHS=1) ms=$((ms - 20)) ;;
    GPUACCEL_KERNELS=1) ms=$((ms + ${KNOB_KERNELS:-30})) ;;
    GPUACCEL_COALESCE=1) ms=$((ms + ${KNOB_COALESCE:-10})) ;;
    esac
done
echo "digest: 0123456789abcdef"
echo "phase_ms: $ms"
SH
    chmod +x "$T/cknob"
    printf '#!/bin/sh\necho "digest: 1"\necho "phase_ms: 80"\n' >"$T/flat"
    chmod +x "$T/flat"
}

# advise_check ENV...: tests/corpus/advise-check.sh under bats' run, with the
# fake driver, the tree's tool and library, and ENV (later settings win).
advise_check() {
    run env LD_LIBRARY_PATH="$FAKE_DIR" GA_TOOL="$GA_TOOL" GA_LIB="$GA_LIB" "$@" \
        sh "$GA_SRC/tests/corpus/advise-check.sh"
}

# check_row TABLE ID: the first line of TABLE (a file) whose first word is ID.
check_row() {
    awk -v id="$2" '$1 == id {print; exit}' "$1"
}

@test "tests/corpus/advise-check.sh: the pick against every subset of what paid, and each estimate" {
    command -v python3 >/dev/null || skip "no python3"
    make_check_knob
    export PROGS PTX
    # good: kernels and coalesce cost nothing, so advise's pick (all) is the best
    # subset ({graphs,pool}, 40); flat: nothing changes it, native is the pick;
    # bad: not asked for (GA_ADVISE_ONLY)
    advise_check GA_ADVISE_PROGRAMS="good env KNOB_KERNELS=0 KNOB_COALESCE=0 $T/cknob;flat $T/flat;bad $T/cknob" \
        GA_ADVISE_ONLY="good flat" GA_ADVISE_BUDGET=8 OUT="$T/out"
    echo "$output"
    [ "$status" -eq 0 ]
    t="$T/out/advise-check-good-flat.txt"
    [ "$(check_row "$t" good)" = "$(echo "$output" | awk '$1 == "good" {print; exit}')" ]
    no_line '^bad '
    read -r -a g <<<"$(check_row "$t" good)"
    [ "${g[1]}" = all ]
    [ "${g[2]}" = "2.00x(2.00-2.00)" ]
    [ "${g[3]}" = graphs,pool ]
    [ "${g[4]}" = "{graphs,pool}" ]
    [ "${g[5]}" = 40.00 ]
    [ "${g[6]}" = 40.00 ]
    [ "${g[7]}" = 1.000 ]
    [ "${g[8]}" = yes ]
    [ "${g[10]}" = yes ]
    [ "${g[11]}" = 5/5 ]
    read -r -a f <<<"$(check_row "$t" flat)"
    [ "${f[1]}" = native ]
    [ "${f[8]}" = yes ]
    [ "${f[10]}" = yes ]
    # the estimates: every opportunity of the profile, pool measured in the rounds
    [ "$(grep -c '^good ' "$t")" -eq 12 ]
    grep -Eq '^good +pool +[a-z]+ +[0-9.]+ +20\.00 +rounds\(5\) +20\.00\.\.20\.00 ' "$t"
    grep -Eq '^good +tune +unknown .* n/a: no estimate' "$t"
    [ -s "$T/out/advise-check/good/pick.conf" ]
    [ -s "$T/out/advise-check/good/profile.json" ]
    # the profile and advise's profile run counted inside the phase's lines only
    # (mix_prog, the process with CUDA work, ends inside the window)
    [ "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); w=d["window"]; print(d["schema"], w["windows"], w["open_at_exit"], w["inside_ns"] > 0)' \
        "$T/out/advise-check/good/profile.json")" = "gpuaccel-profile/4 0 True True" ]
    grep -qF "profiling the command once, between its lines matching '^phase: begin' and '^phase: end'" \
        "$T/out/advise-check/good/advise.txt"
    grep -q '^  Opportunities in the windows' "$T/out/advise-check/good/advise.txt"
    # native (the empty subset), {graphs}, {pool}, {graphs,pool} and the pick, 5 rounds
    [ "$(grep -c '^[0-9]' "$T/out/advise-check/good/rounds.txt")" -eq 25 ]
    [ "$(grep -c ' {} ' "$T/out/advise-check/good/rounds.txt")" -eq 0 ]
    # bad: kernels cost 30, and advise (the profile saw nothing for kernels to act
    # on) does not find {graphs,pool}; a budget of 1 s leaves one round, said so.
    # Its runs take 0.2 s: ab's 12 runs alone then pass the budget, whatever the
    # host's speed (with runs of ~0 s, a fast advise once left time for two)
    advise_check KNOB_SLEEP=0.2 GA_ADVISE_PROGRAMS="bad $T/cknob" GA_ADVISE_BUDGET=1
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"# bad: 1 exhaustive round of 5: "* ]]
    read -r -a b <<<"$(echo "$output" | awk '$1 == "bad" {print; exit}')"
    [ "${b[4]}" = "{graphs,pool}" ]
    [ "${b[8]}" = no ]
    [ "${b[11]}" = 1/5 ]
}

@test "tests/corpus/advise-check.sh: the advise stage, then the rounds from its folder" {
    command -v python3 >/dev/null || skip "no python3"
    make_check_knob
    export PROGS PTX
    local good="good env KNOB_KERNELS=0 KNOB_COALESCE=0 $T/cknob"
    advise_check GA_ADVISE_PROGRAMS="$good" GA_ADVISE_BUDGET=8 GA_ADVISE_STAGE=advise OUT="$T/one"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"# good: advise stage done (exit 0, "* ]]
    no_line '^good '
    [ -s "$T/one/advise-check/good/stage.json" ]
    [ ! -e "$T/one/advise-check/good/rounds.txt" ]
    # the stage's folder moved elsewhere, as a copy between machines would
    mv "$T/one/advise-check" "$T/moved"
    advise_check GA_ADVISE_PROGRAMS="$good" GA_ADVISE_BUDGET=8 GA_ADVISE_STAGE=rounds \
        GA_ADVISE_FROM="$T/moved" OUT="$T/two"
    echo "$output"
    [ "$status" -eq 0 ]
    read -r -a g <<<"$(echo "$output" | awk '$1 == "good" {print; exit}')"
    [ "${g[1]}" = all ]
    [ "${g[4]}" = "{graphs,pool}" ]
    [ "${g[7]}" = 1.000 ]
    [ "${g[11]}" = 5/5 ]
    [ "$(grep -c '^[0-9]' "$T/two/advise-check/good/rounds.txt")" -eq 25 ]
    [ "$(grep -c '^good ' "$T/two/advise-check.txt")" -eq 12 ]
    # a rounds stage without the advise stage's files, and a stage of no such name
    advise_check GA_ADVISE_PROGRAMS="good $T/cknob" GA_ADVISE_STAGE=rounds GA_ADVISE_FROM="$T/none"
    [ "$status" -eq 1 ]
    [[ "$output" == *"# good: no advise stage in $T/none/good (stage.json, advise.json)"* ]]
    advise_check GA_ADVISE_PROGRAMS="good $T/cknob" GA_ADVISE_STAGE=later
    [ "$status" -eq 2 ]
    [[ "$output" == *"GA_ADVISE_STAGE is all, advise, rounds or table"* ]]
    # the tables again from the whole check's folder, running nothing (no
    # library run: the fake driver is not on the path)
    cp "$T/two/advise-check.txt" "$T/two.txt"
    rm "$T/two/advise-check/good/stage.json" # a whole check's folder needs none
    advise_check LD_LIBRARY_PATH= GA_ADVISE_PROGRAMS="$good" GA_ADVISE_STAGE=table \
        GA_ADVISE_FROM="$T/two/advise-check" OUT="$T/three"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c '^[0-9]' "$T/three/advise-check/good/rounds.txt")" -eq 25 ]
    diff <(grep '^good ' "$T/two.txt" | awk '{$NF = ""; print}' | sed -n 1p) \
        <(grep '^good ' "$T/three/advise-check.txt" | awk '{$NF = ""; print}' | sed -n 1p)
    diff <(grep '^good ' "$T/two.txt" | sed 1d) <(grep '^good ' "$T/three/advise-check.txt" | sed 1d)
}

# tstand CMD...: tests/corpus/tune-check.sh's stand-in: CMD's output lines as
# its check lines ("digest: " before each; with CHECK_TUNE=1 the table's switch
# too, so that a tuned run differs), and its run time in microseconds as
# phase_ms; with FAIL_TUNED=1 a tuned run exits 3, with SLOW_TUNED=1 it takes
# 400 ms longer.
make_tstand() {
    cat >"$T/tstand" <<'SH'
#!/bin/sh
[ "${FAIL_TUNED:-0}" = 1 ] && [ "${GPUACCEL_TUNE:-0}" = 1 ] && exit 3
t0=$(date +%s%N)
[ "${SLOW_TUNED:-0}" = 1 ] && [ "${GPUACCEL_TUNE:-0}" = 1 ] && sleep 0.4
out=$("$@") || exit 1
echo "$out" | sed 's/^/digest: /'
[ "${CHECK_TUNE:-0}" = 1 ] && echo "digest: tune=${GPUACCEL_TUNE:-0}"
echo "phase_ms: $(( ($(date +%s%N) - t0) / 1000 ))"
SH
    chmod +x "$T/tstand"
}

@test "tests/corpus/tune-check.sh: the busiest kernels tuned, the table against the defaults" {
    command -v python3 >/dev/null || skip "no python3"
    make_tstand
    run env LD_LIBRARY_PATH="$FAKE_DIR" GA_TOOL="$GA_TOOL" GA_LIB="$GA_LIB" GA_TUNE_BEGIN= \
        GA_TUNE_PROGRAMS="adds $T/tstand $PROGS/door_getproc $PTX;slow env SLOW_TUNED=1 $T/tstand $PROGS/door_getproc $PTX" \
        GA_TUNE_ROUNDS=2 OUT="$T/out" sh "$GA_SRC/tests/corpus/tune-check.sh"
    echo "$output"
    [ "$status" -eq 0 ]
    # the profile's two kernels, add the busier; the tuner's entry for add; both
    # ways' check lines equal in every run
    grep -Eq '^# adds: +[0-9.]+ ms +20 launches +add$' "$T/out/tune-check.txt"
    grep -Eq '^# adds: +[0-9.]+ ms +1 launches +fill$' "$T/out/tune-check.txt"
    grep -q '^add sm_90 32,1,1 128,1,1 0 -> 4,1,1 1024,1,1 threads$' "$T/out/tune-check/adds/tune.table"
    read -r -a a <<<"$(check_row "$T/out/tune-check.txt" adds)"
    [ "${a[1]}" = 2 ]
    [ "${a[2]}" = 1 ]
    [ "${a[6]}" = agree, ]
    # the fake's timing is the runs': any of the three verdicts, well formed
    [[ "${a[*]:7}" =~ ^((gain|loss)\ beyond\ noise|within\ noise\ \(\+-[0-9.]+\))$ ]]
    [ "$(ls "$T"/out/tune-check/adds/tuned-*.log | wc -l)" -eq 3 ]
    # a table that slows the program by far more than its runs spread
    read -r -a a <<<"$(check_row "$T/out/tune-check.txt" slow)"
    [ "${a[*]:6}" = "agree, loss beyond noise" ]
}

@test "tests/corpus/tune-check.sh: no kernels, a tuned run that differs or fails: each a failure" {
    command -v python3 >/dev/null || skip "no python3"
    make_tstand
    run env LD_LIBRARY_PATH="$FAKE_DIR" GA_TOOL="$GA_TOOL" GA_LIB="$GA_LIB" GA_TUNE_BEGIN= \
        GA_TUNE_PROGRAMS="none $T/tstand true;odd env CHECK_TUNE=1 $T/tstand $PROGS/door_getproc $PTX;broke env FAIL_TUNED=1 $T/tstand $PROGS/door_getproc $PTX" \
        GA_TUNE_ROUNDS=1 OUT="$T/out" sh "$GA_SRC/tests/corpus/tune-check.sh"
    echo "$output"
    [ "$status" -eq 1 ]
    has_words '# none: no kernel timed'
    read -r -a o <<<"$(check_row "$T/out/tune-check.txt" odd)"
    [ "${o[6]}" = DIFFER ]
    read -r -a b <<<"$(check_row "$T/out/tune-check.txt" broke)"
    [ "${b[6]}" = FAILED ]
    grep -qx '# broke: tuned run 1: exit 3' "$T/out/tune-check.txt"
}
