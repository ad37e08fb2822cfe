#!/usr/bin/env bats
# report.bats - profiles of several processes under one GPUACCEL_PROFILE: the
# names a launcher's rank gives them, `gpuaccel report NAME` merging them (the
# sums checked against the files themselves), several FILEs, --json, and
# files that are not profiles (a one-line error naming the file, never a crash).
load helpers
bats_require_minimum_version 1.5.0 # run --separate-stderr

setup() {
    setup_fake
    GA_TOOL="$GA_BUILD/tools/gpuaccel"
    [ -x "$GA_TOOL" ] || { echo "gpuaccel not built: $GA_TOOL" >&2; return 1; }
    T="$BATS_TEST_TMPDIR"
}

# as_rank RANK PATH PROG: PROG (a test program) profiled into PATH as rank RANK of 3.
as_rank() {
    env RANK="$1" WORLD_SIZE=3 LOCAL_RANK="$1" GPUACCEL_PROFILE="$2" LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/$3" "$PTX" >/dev/null
}

# A launcher without a rank, then three ranks running different programs.
three_ranks() {
    env GPUACCEL_PROFILE="$1" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/door_dlsym" "$PTX" >/dev/null
    as_rank 0 "$1" door_getproc
    as_rank 1 "$1" item_prog
    as_rank 2 "$1" repeat_prog
}

# sums FILE...: the totals a merged report must show, from the files themselves.
sums() {
    python3 - "$@" <<'EOF'
import json, sys
t = dict(calls=0, launches=0, syncs=0, copies=0, copy_bytes=0, allocations=0, wall=0)
kern, entry = {}, {}
for f in sys.argv[1:]:
    d = json.load(open(f))
    for e in d["entry_points"]:
        t["calls"] += e["calls"]
        entry[e["name"]] = entry.get(e["name"], 0) + e["calls"]
        if "Synchronize" in e["name"]: t["syncs"] += e["calls"]
    t["launches"] += d["kernels"]["launches"]
    for k in d["kernels"]["list"]: kern[k["name"]] = kern.get(k["name"], 0) + k["launches"]
    for b in d["copies"]["buckets"]: t["copies"] += b["count"]; t["copy_bytes"] += b["bytes"]
    t["allocations"] += d["allocations"]["count"]
    t["wall"] = max(t["wall"], d["wall_ns"])
print(json.dumps(dict(t, kernels=kern, entry_points=entry), sort_keys=True))
EOF
}

# The same figures as the merged report's --json gives them.
merged_sums() {
    python3 -c '
import json, sys
d = json.load(sys.stdin); t = d["totals"]
out = {k: t[k] for k in ("calls", "launches", "syncs", "copies", "copy_bytes", "allocations")}
out["wall"] = t["wall_ns"]
out["kernels"] = {k["name"]: k["launches"] for k in d["kernels"]}
out["entry_points"] = {e["name"]: e["calls"] for e in d["entry_points"]}
print(json.dumps(out, sort_keys=True))'
}

@test "a rank names the files PATH.rank<R>.<pid>.*, records the job, and claims nothing" {
    command -v python3 >/dev/null || skip "no python3"
    three_ranks "$T/run"
    [ -s "$T/run.json" ]
    [ ! -e "$T/run.owner" ]
    n=0
    for r in 0 1 2; do
        f=$(ls "$T"/run.rank$r.*.json | grep -v trace)
        pid=${f%.json}; pid=${pid##*.}
        [ -s "$T/run.rank$r.$pid.txt" ]
        [ -s "$T/run.rank$r.$pid.trace.json" ]
        python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuaccel-profile/3", d["schema"]
assert d["pid"] == int(sys.argv[3])
assert d["job"] == {"rank_variable": "RANK", "rank": int(sys.argv[2]), "world_size": 3,
                    "local_rank": int(sys.argv[2])}, d["job"]
assert d["text"].startswith("gpuaccel profile: pid %s, rank %s of 3," % (sys.argv[3], sys.argv[2]))
' "$f" "$r" "$pid"
        n=$((n + 1))
    done
    [ "$n" -eq 3 ]
    # without a rank: no "job"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["schema"]=="gpuaccel-profile/3" and "job" not in d' "$T/run.json"
}

@test "the launchers' variables, first match wins; a malformed rank is warned about and skipped" {
    command -v python3 >/dev/null || skip "no python3"
    job() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["job"]; print(j["rank_variable"], j["rank"], j.get("world_size", "-"), j.get("local_rank", "-"))' "$@"; }
    run_as() { # PATH VAR=VALUE...
        local p=$1; shift
        env "$@" GPUACCEL_PROFILE="$p" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
            "$PROGS/door_getproc" "$PTX"
    }
    run_as "$T/o" OMPI_COMM_WORLD_RANK=4 OMPI_COMM_WORLD_SIZE=8 OMPI_COMM_WORLD_LOCAL_RANK=0 \
        SLURM_PROCID=0 >/dev/null
    [ "$(job "$T"/o.rank4.*[0-9].json)" = "OMPI_COMM_WORLD_RANK 4 8 0" ]
    run_as "$T/m" PMI_RANK=7 PMI_SIZE=9 MPI_LOCALRANKID=1 >/dev/null
    [ "$(job "$T"/m.rank7.*[0-9].json)" = "PMI_RANK 7 9 1" ]
    run_as "$T/s" SLURM_PROCID=3 SLURM_NTASKS=4 >/dev/null
    [ "$(job "$T"/s.rank3.*[0-9].json)" = "SLURM_PROCID 3 4 -" ]
    run run_as "$T/w" RANK=first SLURM_PROCID=2
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c "^gpuaccel: warning: profile: RANK='first' is not a rank")" -eq 1 ]
    [ "$(job "$T"/w.rank2.*[0-9].json)" = "SLURM_PROCID 2 - -" ]
}

@test "a ranked process's fork child writes PATH.rank<R>.<child pid>.*" {
    command -v python3 >/dev/null || skip "no python3"
    run env RANK=1 GPUACCEL_PROFILE="$T/fork" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" python3 -c "
import ctypes, os, sys
c = ctypes.CDLL('libcuda.so.1'); c.cuInit(0)
pid = os.fork()
if pid == 0:
    c.cuInit(0); sys.exit(0)
os.waitpid(pid, 0); print(pid)"
    [ "$status" -eq 0 ]
    [ -s "$T/fork.rank1.$output.json" ]
    [ "$(ls "$T"/fork.rank1.*[0-9].json | wc -l)" -eq 2 ]
}

@test "report NAME: every process of the run merged, the totals the sums of the files" {
    command -v python3 >/dev/null || skip "no python3"
    three_ranks "$T/run"
    files=("$T"/run.json "$T"/run.*[0-9].json)
    [ "${#files[@]}" -eq 4 ]
    want=$(sums "${files[@]}")
    run "$GA_TOOL" report --json "$T/run"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | merged_sums)" = "$want" ]
    echo "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["process_count"] == 4 and d["ranks"] == 3 and d["world_size"] == 3, d'

    run "$GA_TOOL" report "$T/run"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[0]}" = "gpuaccel report: 4 processes merged from $T/run (ranks 0-2 of world size 3; 1 process without a rank)" ]
    # one line per process, the launcher first, then the ranks in order
    [ "$(echo "$output" | grep -E '^  (-|[0-9]) +[0-9]+ ' | awk '{print $1}' | tr '\n' ' ')" = "- 0 1 2 " ]
    fmt() { python3 -c 'import json,sys; t=json.loads(sys.argv[1]); print(sys.argv[2].format(**t))' "$want" "$1"; }
    [[ "$output" == *"$(fmt '  driver calls {calls:,} (')"* ]]
    [[ "$output" == *"$(fmt '  kernel launches {launches:,}')"* ]]
    [[ "$output" == *"$(fmt '), synchronizing calls {syncs:,}')"* ]]
    echo "$output" | grep -Eq "^  total +[0-9.]+ [mun]?s +$(fmt '{calls:,} +{launches:,} +{syncs:,} +{copies:,} ')"
    # BASE.json names the run too when that file is not there
    rm "$T/run.json" "$T/run.txt"
    run "$GA_TOOL" report "$T/run.json"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "gpuaccel report: 3 processes merged from $T/run.json (ranks 0-2 of world size 3)" ]]
}

@test "report FILE...: those files merged; one file prints its own report, and says what else is there" {
    command -v python3 >/dev/null || skip "no python3"
    three_ranks "$T/run"
    r0=$(ls "$T"/run.rank0.*[0-9].json) r2=$(ls "$T"/run.rank2.*[0-9].json)
    run "$GA_TOOL" report --json "$r0" "$r2"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | merged_sums)" = "$(sums "$r0" "$r2")" ]
    run "$GA_TOOL" report "$r0" "$r2"
    [[ "${lines[0]}" == "gpuaccel report: 2 processes merged from the files given (ranks 0, 2 of world size 3, 1 without a profile)" ]]
    run --separate-stderr "$GA_TOOL" report "$T/run.json"
    [ "$status" -eq 0 ]
    [ "$output" = "$(cat "$T/run.txt")" ]
    [ "$stderr" = "gpuaccel: report: 3 more profiles of this run beside $T/run.json; gpuaccel report $T/run merges them" ]
    # a run of one process: its own report, as before
    env GPUACCEL_PROFILE="$T/one" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/door_getproc" "$PTX" >/dev/null
    run "$GA_TOOL" report "$T/one"
    [ "$status" -eq 0 ]
    [ "$output" = "$(cat "$T/one.txt")" ]
}

@test "a file that is not a profile: one line naming it, exit 2, nothing printed on stdout" {
    command -v python3 >/dev/null || skip "no python3"
    three_ranks "$T/run"
    good=$(ls "$T"/run.rank1.*[0-9].json)
    size=$(stat -c %s "$good")
    bad="$T/run.rank9.99.json" # one of the run: report NAME must stop at it
    check_bad() { # WHAT: the error for $bad, merged with the run and alone
        for args in "$T/run" "$bad"; do
            run --separate-stderr "$GA_TOOL" report $args
            [ "$status" -eq 2 ] || { echo "$1: status $status"; return 1; }
            [ -z "$output" ] || { echo "$1: stdout: $output"; return 1; }
            [ "$(echo "$stderr" | wc -l)" -eq 1 ] || { echo "$1: $stderr"; return 1; }
            [[ "$stderr" == "gpuaccel: report: $bad: "* ]] || { echo "$1: $stderr"; return 1; }
        done
    }
    for cut in 0 1 2 17 100 $((size / 3)) $((size / 2)) $((size - 300)) $((size - 3)) $((size - 2)); do
        head -c "$cut" "$good" > "$bad"
        check_bad "cut at $cut"
    done
    [[ "$stderr" == *"truncated: the JSON ends at byte $((size - 2))" ]]
    printf '{"a": 1}' > "$bad" && check_bad foreign
    [[ "$stderr" == *': not a gpuaccel profile: no "schema"' ]]
    echo '[}' > "$bad" && check_bad brackets
    echo '{"schema":"gpuaccel-profile/1","pid":"12"}' > "$bad" && check_bad "a string for a number"
    python3 -c 'print("[" * 100000)' > "$bad" && check_bad "deep nesting"
    head -c 4096 /dev/urandom > "$bad" && check_bad "random bytes"
    sed 's/"launches":/"launches":-/' "$good" > "$bad" && check_bad "a negative count"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["kernels"]; json.dump(d, open(sys.argv[2], "w"))' "$good" "$bad"
    check_bad "no kernels"
    [[ "$stderr" == *': not a gpuaccel profile: no "kernels"' ]]
    (cat "$good"; echo '{}') > "$bad" && check_bad "two documents"
    # and the good files alone still merge
    rm "$bad"
    run "$GA_TOOL" report "$T/run"
    [ "$status" -eq 0 ]
}

@test "report: usage" {
    run "$GA_TOOL" report --help
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "usage: gpuaccel report [--json] NAME | FILE.json..." ]]
    run "$GA_TOOL" report --bogus x
    [ "$status" -eq 2 ]
    [[ "${lines[0]}" == "gpuaccel: report: unknown option '--bogus'" ]]
    run "$GA_TOOL" report --json
    [ "$status" -eq 2 ]
}

@test "profile -o NAME: lists every process's files and how to merge them; old ones need --force" {
    cd "$T"
    run env LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" RANK=0 "$GA_TOOL" profile -o "$T/p" -- \
        "$PROGS/door_getproc" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"gpuaccel: profile of another process: $T/p.rank0."*".{txt,json,trace.json}"* ]]
    [[ "$output" == *"gpuaccel: profile: gpuaccel report $T/p prints its report"* ]]
    [[ "$output" != *"no profile was written"* ]]
    run env LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" profile -o "$T/p" -- true
    [ "$status" -eq 2 ]
    [[ "$output" == "gpuaccel: -o $T/p: $T/p.rank0."*".json is there, from an earlier run (--force removes the profiles of that run)"* ]]
    run env LD_LIBRARY_PATH="$FAKE_DIR" GPUACCEL_LIB="$GA_LIB" "$GA_TOOL" profile --force -o "$T/p" -- \
        "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    [ -z "$(ls "$T"/p.rank0.* 2>/dev/null)" ]
    [ -s "$T/p.json" ]
}
