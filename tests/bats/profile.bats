#!/usr/bin/env bats
# profile.bats - GPUACCEL_PROFILE end to end on the fake driver: the three
# files for each door, their counts, the JSON against doc/profile-schema.json
# and the trace against the trace-event format (with python3), SIGTERM, fork
# and several processes sharing one path, and no profile in pass-through.
load helpers

setup() {
    setup_fake
    T="$BATS_TEST_TMPDIR"
}

# check_files PREFIX: FILE.json valid against the schema, FILE.trace.json a
# valid trace, FILE.txt the JSON's text. Without python3 only presence.
check_files() {
    [ -s "$1.txt" ] || { echo "no $1.txt"; return 1; }
    [ -s "$1.json" ] || { echo "no $1.json"; return 1; }
    [ -s "$1.trace.json" ] || { echo "no $1.trace.json"; return 1; }
    command -v python3 >/dev/null || return 0
    python3 - "$GA_SRC/doc/profile-schema.json" "$1" <<'EOF'
import json, sys
schema, prefix = json.load(open(sys.argv[1])), sys.argv[2]
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}
def check(v, s, where):
    t = s.get("type")
    if t == "integer":
        assert isinstance(v, int) and not isinstance(v, bool), where
    elif t:
        assert isinstance(v, TYPES[t]), (where, t)
    if "const" in s: assert v == s["const"], where
    if "enum" in s: assert v in s["enum"], (where, v)
    if "minimum" in s: assert v >= s["minimum"], where
    if "minItems" in s: assert len(v) >= s["minItems"], where
    if "maxItems" in s: assert len(v) <= s["maxItems"], where
    if isinstance(v, list) and "items" in s:
        for i, x in enumerate(v): check(x, s["items"], "%s[%d]" % (where, i))
    if isinstance(v, dict):
        for k in s.get("required", []): assert k in v, (where, "missing", k)
        for k, x in v.items():
            if k in s.get("properties", {}): check(x, s["properties"][k], where + "." + k)
            else: assert s.get("additionalProperties", True), (where, "extra", k)
doc = json.load(open(prefix + ".json"))
check(doc, schema, "$")
assert doc["text"] == open(prefix + ".txt").read()
trace = json.load(open(prefix + ".trace.json"))
assert trace["traceEvents"] and "otherData" in trace
for e in trace["traceEvents"]:
    for k in ("name", "ph", "ts", "pid", "tid"): assert k in e, (e, k)
    assert e["ph"] in ("X", "M"), e
    if e["ph"] == "X": assert e["dur"] >= 0 and e["ts"] >= 0, e
EOF
}

# jq-less field access: py PREFIX EXPRESSION (d is the JSON document)
py() {
    python3 -c "import json,sys; d=json.load(open(sys.argv[1]+'.json')); print($2)" "$1"
}

profiled() { # PREFIX PROG ARGS...
    local p=$1
    shift
    env GPUACCEL_PROFILE="$p" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$@"
}

@test "each door: three valid files, and the program's output unchanged" {
    for door in door_dlsym door_getproc door_linked; do
        want=$(native "$PROGS/$door" "$PTX")
        run profiled "$T/$door" "$PROGS/$door" "$PTX"
        [ "$status" -eq 0 ]
        [ "$output" = "$want" ]
        check_files "$T/$door"
        [ ! -e "$T/$door.owner" ]
    done
}

@test "the counts are the workload's" {
    command -v python3 >/dev/null || skip "no python3"
    profiled "$T/p" "$PROGS/door_getproc" "$PTX" >/dev/null
    [ "$(py "$T/p" '[e["calls"] for e in d["entry_points"] if e["name"]=="cuLaunchKernel"][0]')" = 22 ]
    [ "$(py "$T/p" 'd["kernels"]["launches"]')" = 21 ]     # the oversized launch failed
    [ "$(py "$T/p" 'd["copies"]["small_dtoh_reads"]')" = 257 ]
    [ "$(py "$T/p" 'd["allocations"]["count"], d["allocations"]["failed"]')" = "1 1" ]
    [ "$(py "$T/p" 'sorted(k["name"] for k in d["kernels"]["list"])')" = "['add', 'fill']" ]
    # 20 "add" launches alternate between two streams: each launch on the other
    # stream ends the thread's segment (the boundaries graphs learns on), so with
    # "fill" that is 21 segments of one launch and no repeated sequence
    [ "$(py "$T/p" 'd["sequences"]["segments"], d["sequences"]["single_launch_segments"]')" = "21 21" ]
    [ "$(py "$T/p" 'd["sequences"]["list"]')" = "[]" ]
    [ "$(py "$T/p" '[o["feature"] for o in d["opportunities"]]')" = "['coalesce', 'coalesce_mirrors', 'pool', 'async_pool', 'pinned', 'staging', 'streams', 'lazy_sync', 'graphs', 'tune', 'kernels']" ]
    grep -q '"cat":"driver","ph":"X"' "$T/p.trace.json"
}

@test "with graphs on: the profile counts exactly the segments graphs learns from" {
    command -v python3 >/dev/null || skip "no python3"
    run env GPUACCEL_GRAPHS=1 GPUACCEL_LOG=info GPUACCEL_PROFILE="$T/g" LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" timeout 120 "$PROGS/graphs_prog" "$PTX"
    [ "$status" -eq 0 ]
    learned=$(echo "$output" | sed -n 's/^gpuaccel: graphs: segments=\([0-9]*\) .*/\1/p')
    [ -n "$learned" ]
    [ "$learned" -gt 0 ]
    [ "$(py "$T/g" 'd["sequences"]["segments"]')" = "$learned" ]
}

@test "the unit test's synthetic profiles validate too" {
    # make check builds it: missing, it is a failure, not a reason to skip
    [ -x "$GA_BUILD/tests/unit/features/test_profile" ] || { echo "test_profile is not built"; false; }
    out=$(GA_PROFILE_KEEP=1 GA_SRC="$GA_SRC" "$GA_BUILD/tests/unit/features/test_profile")
    dir=$(echo "$out" | sed -n 's/^files in //p')
    for p in busy quiet timed live forked; do check_files "$dir/$p"; done
    rm -rf "$dir"
}

@test "GPUACCEL=0 with GPUACCEL_PROFILE: the profile alone, no serving feature" {
    # A feature's own switch wins over the set, the profile's file name too.
    run env GPUACCEL=0 GPUACCEL_PROFILE="$T/off" GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    [ -s "$T/off.json" ]
    [ "$(echo "$output" | grep '^gpuaccel: features on:')" = "gpuaccel: features on: GPUACCEL_PROFILE" ]
}

@test "pass-through (GPUACCEL=0 and nothing else) writes no profile and serves nothing" {
    run env GPUACCEL=0 GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    if echo "$output" | grep -q '^gpuaccel: features on:'; then false; fi
}

@test "an unwritable path: one warning, the program unaffected" {
    want=$(native "$PROGS/door_getproc" "$PTX")
    run profiled /nonexistent/dir/p "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c '^gpuaccel: warning: GPUACCEL_PROFILE')" -eq 1 ]
    [ "$(echo "$output" | grep -v '^gpuaccel:')" = "$want" ]
}

# A CUDA "program" that waits: python3 with ctypes on the fake driver.
sleeper() { # SECONDS
    echo "import ctypes, time, os, sys
c = ctypes.CDLL('libcuda.so.1'); c.cuInit(0)
print('ready', flush=True); time.sleep($1)"
}

@test "SIGTERM: the profile is written, then the default action" {
    command -v python3 >/dev/null || skip "no python3"
    # env, not the profiled function: $! must be the program's own pid
    env GPUACCEL_PROFILE="$T/term" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        python3 -c "$(sleeper 30)" > "$T/out" &
    pid=$!
    for _ in $(seq 50); do grep -q ready "$T/out" 2>/dev/null && break; sleep 0.1; done
    kill -TERM "$pid"
    status=0
    wait "$pid" || status=$?
    [ "$status" -eq 143 ] # killed by SIGTERM, as without the library
    check_files "$T/term"
    [ "$(py "$T/term" 'd["written_on"]')" = signal ]
}

@test "fork: the child writes FILE.<pid>.*" {
    command -v python3 >/dev/null || skip "no python3"
    run profiled "$T/fork" python3 -c "
import ctypes, os, sys
c = ctypes.CDLL('libcuda.so.1'); c.cuInit(0)
pid = os.fork()
if pid == 0:
    c.cuInit(0); sys.exit(0)
os.waitpid(pid, 0); print(pid)"
    [ "$status" -eq 0 ]
    check_files "$T/fork"
    check_files "$T/fork.$output"
    [ "$(py "$T/fork.$output" 'd["pid"]')" = "$output" ]
}

@test "processes sharing one GPUACCEL_PROFILE: the first owns it, others add .<pid>" {
    command -v python3 >/dev/null || skip "no python3"
    env GPUACCEL_PROFILE="$T/multi" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        python3 -c "$(sleeper 2)" > "$T/out" &
    owner=$!
    for _ in $(seq 50); do grep -q ready "$T/out" 2>/dev/null && break; sleep 0.1; done
    [ -e "$T/multi.owner" ]
    env GPUACCEL_PROFILE="$T/multi" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/door_getproc" "$PTX" >/dev/null &
    other=$!
    wait "$other"
    wait "$owner"
    check_files "$T/multi"
    check_files "$T/multi.$other"
    [ ! -e "$T/multi.owner" ]
}

@test "a process with a rank: PATH.rank<R>.<pid>.*, valid against the schema (gpuaccel-profile/3)" {
    command -v python3 >/dev/null || skip "no python3"
    run env RANK=3 WORLD_SIZE=4 GPUACCEL_PROFILE="$T/r" LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    f=$(ls "$T"/r.rank3.*[0-9].json)
    [ -n "$f" ]
    [ "$(echo "$f" | wc -l)" -eq 1 ]
    check_files "${f%.json}"
    [ ! -e "$T/r.json" ]
    [ ! -e "$T/r.owner" ]
    [ "$(py "${f%.json}" 'd["schema"], d["job"]["world_size"]')" = "gpuaccel-profile/3 4" ]
}

@test "an estimate for every feature, from what the profile recorded, the largest first, each with its check" {
    command -v python3 >/dev/null || skip "no python3"
    # mix_prog gives each feature its work (tests/progs/mix_prog.c); every
    # feature off, as gpuaccel profile runs it (async_pool on keeps the memory)
    run env GPUACCEL=0 GPUACCEL_PROFILE="$T/m" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/mix_prog" "$PTX"
    [ "$status" -eq 0 ]
    python3 - "$T/m.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuaccel-profile/3", d["schema"]
ops = {o["feature"]: o for o in d["opportunities"]}
# what each acts on, as mix_prog makes it: 8 pageable 8 MiB copies each way,
# 32 page-locked pairs (each with a 64 KiB read: as large as staging's
# smallest copy), 33 streams created and destroyed, 32 stream-ordered
# allocations of which all but the first mapped memory the sync had released
assert ops["staging"]["acts_on"] == 16, ops["staging"]
assert ops["pinned"]["acts_on"] == 32 and d["page_locked"]["allocations"] == 32, ops["pinned"]
assert ops["streams"]["acts_on"] == 33 and d["streams"]["destroyed"] == 33, ops["streams"]
assert ops["async_pool"]["acts_on"] == 31 and d["allocations"]["stream_ordered"] == 32, ops["async_pool"]
assert d["synchronizations"]["shared_memory_made"] is True
assert "never defers" in ops["lazy_sync"]["reason"], ops["lazy_sync"]
assert "no replacement is listed" in ops["kernels"]["reason"] or ops["kernels"]["acts_on"] > 0
large = {(c["direction"], c["host"]): c["count"] for c in d["copies"]["large"]}
assert large == {("htod", "pageable"): 8, ("dtoh", "pageable"): 8, ("htod", "page_locked"): 0,
                 ("dtoh", "page_locked"): 32}, large
for f, o in ops.items():
    assert o["reason"] and o["check"].endswith("-- COMMAND"), o
assert ops["staging"]["check"] == "gpuaccel ab --feature staging -- COMMAND"
# what staging would take: its own rates, never faster than the program's own
# page-locked reads ran (on the fake driver, no faster than its pageable copies)
assert "staged they would take" in ops["staging"]["reason"], ops["staging"]
# the first download's 8 MiB of untouched destination: its page faults counted
import re
assert re.search(r"faulting in 8(\.0)? MiB of host memory the program had not touched",
                 ops["staging"]["reason"]), ops["staging"]
# the saving is what the copies took less what staged copies would take, both
# from this run (times on a loaded host vary together: no fixed bound), and a
# staged copy is never faster than the program's own page-locked reads ran
m = re.search(r"took ~([0-9.]+) ms; staged they would take ~([0-9.]+) ms", ops["staging"]["reason"])
assert m, ops["staging"]
took, staged = float(m.group(1)) * 1e6, float(m.group(2)) * 1e6
pageable = sum(c["ns"] for c in d["copies"]["large"] if c["host"] == "pageable")
assert abs(took - pageable) <= 0.1e6, (took, pageable)
assert abs(ops["staging"]["saving_ns"] - max(0.0, took - staged)) <= 0.2e6, (ops["staging"], took, staged)
pl = next(c for c in d["copies"]["large"] if c["host"] == "page_locked" and c["direction"] == "dtoh")
staged_bytes = sum(c["bytes"] for c in d["copies"]["large"] if c["host"] == "pageable")
assert staged >= staged_bytes * pl["ns"] / pl["bytes"] * 0.99, (staged, pl)
# the text: the ones that would help by their saving, each with its check line
text = d["text"].split("\n")
rows = [l.split()[0] for l in text if l.startswith("  ") and len(l.split()) > 1 and l.split()[0] in ops]
helps = [f for f in rows if ops[f]["verdict"] == "helps"]
assert helps == sorted(helps, key=lambda f: -ops[f]["saving_ns"]), helps
assert rows[:len(helps)] == helps, rows
for f in helps:
    i = next(k for k, l in enumerate(text) if l.startswith("  " + f + " "))
    assert text[i + 1].strip() == "check: " + ops[f]["check"], text[i + 1]
PY
}

@test "lazy_sync's estimate: synchronizations after kernels alone, none of them after shared memory" {
    command -v python3 >/dev/null || skip "no python3"
    run env GPUACCEL=0 GPUACCEL_PROFILE="$T/l" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/lazy_prog" "$PTX" chain 50
    [ "$status" -eq 0 ]
    python3 - "$T/l.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["synchronizations"]
o = next(o for o in d["opportunities"] if o["feature"] == "lazy_sync")
# 50 launch-then-cuCtxSynchronize rounds and the last wait: each quiet
assert s["count"] == 51 and s["quiet"] == 51 and s["shared_memory_made"] is False, s
assert o["acts_on"] == 51 and o["saving_ns"] == s["quiet_overlap_ns"] <= s["quiet_ns"], (o, s)
PY
}

@test "GPUACCEL_PROFILE_WINDOW that cannot be used: one warning, the output unchanged, the whole process" {
    command -v python3 >/dev/null || skip "no python3"
    want=$(native "$PROGS/door_getproc" "$PTX")
    head -c 64 /dev/zero > "$T/small"      # too small for a window file
    head -c 4096 /dev/zero > "$T/foreign"  # large enough, not a window file
    for f in "$T/missing" "$T/small" "$T/foreign"; do
        run env GPUACCEL_PROFILE_WINDOW="$f" GPUACCEL_PROFILE="$T/w" LD_PRELOAD="$GA_LIB" \
            LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | grep -v '^gpuaccel:')" = "$want" ]
        [ "$(echo "$output" | grep -c '^gpuaccel:')" -eq 1 ]
        echo "$output" | grep -qF "gpuaccel: warning: GPUACCEL_PROFILE_WINDOW='$f': "
        echo "$output" | grep -q 'expected a 1024-byte window file that gpuaccel profile --phase writes: profiling the whole process$'
        check_files "$T/w"
        # the counts of "the counts are the workload's": the whole process
        [ "$(py "$T/w" 'd["schema"], "window" in d')" = "gpuaccel-profile/3 False" ]
        [ "$(py "$T/w" 'd["copies"]["small_dtoh_reads"], d["kernels"]["launches"]')" = "257 21" ]
        rm -f "$T"/w.*
    done
}
