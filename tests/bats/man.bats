#!/usr/bin/env bats
# man.bats - the file-format pages against the code: each example table is
# read whole by the library, a bad line gets the warning the page quotes, and
# gpuaccel-profile(5) names every key the profile, its trace and
# `gpuaccel report --json` write. (tests/man.sh renders every page.)
load helpers

setup() {
    setup_fake
    GA_TOOL="$GA_BUILD/tools/gpuaccel"
    T="$BATS_TEST_TMPDIR"
}

# example PAGE: the first .nf block of the page's EXAMPLE section, as text.
example() {
    sed -n '/^\.SH EXAMPLE/,/^\.fi/p' "$GA_BUILD/man/$1" | sed '1,2d;$d' |
        sed 's/\\-/-/g; s/\\e/\\/g'
}

# The warning a page quotes for a bad line (folded there), as one line.
quoted_warning() {
    sed -n '/^gpuaccel: warning: /,/^\.fi/p' "$GA_BUILD/man/$1" | sed '$d' |
        sed 's/\\-/-/g; s/^  */ /' | tr -d '\n'
}

@test "gpuaccel-tune(5): the example is a table read whole; bad lines warn as the page says" {
    example gpuaccel-tune.5 > "$T/t.table"
    grep -q '^add sm_90 32,1,1 128,1,1 0 -> 4,1,1 1024,1,1 threads$' "$T/t.table"
    run env GPUACCEL_TUNE=1 GPUACCEL_TUNE_TABLE="$T/t.table" GPUACCEL_LOG=debug \
        LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    [[ "$output" != *"warning"* ]]
    [[ "$output" == *"gpuaccel: debug: tune: 2 entries from $T/t.table"* ]]
    has_words 'gpuaccel: tune: rewritten=19' # the fake device is sm_90
    # what the page rules out: x,y alone; threads with another thread count;
    # more than 1024 threads; sm_ below 10; then one good line with a comment
    printf '%s\n' 'add * 32,1 128 0 -> 4 1024 threads' 'add * 32 128 0 -> 8 1024 threads' \
        'add * 32 128 0 -> 1 2048 stride' 'add sm_9 32 128 0 -> 1 256 stride' \
        'add * 32 128 0 -> 16 256 threads # same 4096 threads' > "$T/bad.table"
    run env GPUACCEL_TUNE=1 GPUACCEL_TUNE_TABLE="$T/bad.table" GPUACCEL_LOG=debug \
        LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    w=$(quoted_warning gpuaccel-tune.5)
    [[ "$w" == "gpuaccel: warning: FILE:N: expected '<kernel> "* ]]
    for n in 1 2 3 4; do
        echo "$output" | grep -qxF "${w/FILE:N/$T/bad.table:$n}" || { echo "line $n: $output"; false; }
    done
    [[ "$output" == *"tune: 1 entries from"* ]]
}

@test "gpuaccel-kernels(5): the example is a table read whole; bad lines warn as the page says" {
    example gpuaccel-kernels.5 > "$T/k.table"
    grep -q '^_Z8axpy_modPjPKjjj  *my_axpy_mod  *grid=any  *code=[0-9a-f]\{16\}$' "$T/k.table"
    head -c 64 /dev/zero > "$T/k.fatbin" # loaded only when a listed kernel launches
    run env GPUACCEL_KERNELS=1 GPUACCEL_KERNELS_EXTRA="$T/k.fatbin:$T/k.table" GPUACCEL_LOG=info \
        LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    [[ "$output" != *"warning"* ]]
    printf '%s\n' 'add ga_add' 'add ga_add grid=all' '# only a comment' 'add ga_add grid=any x' \
        > "$T/bad.table"
    run env GPUACCEL_KERNELS=1 GPUACCEL_KERNELS_EXTRA="$T/k.fatbin:$T/bad.table" \
        LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    w=$(quoted_warning gpuaccel-kernels.5)
    [[ "$w" == "gpuaccel: warning: TABLE:N: expected '<original> "* ]]
    for n in 1 2 4; do
        echo "$output" | grep -qxF "${w/TABLE:N/$T/bad.table:$n}" || { echo "line $n: $output"; false; }
    done
    [ "$(echo "$output" | grep -c warning)" -eq 3 ]
}

@test "gpuaccel-profile(5) names every key of the profile, its trace and report --json" {
    command -v python3 >/dev/null || skip "no python3"
    env RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 GPUACCEL_PROFILE="$T/p" LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX" >/dev/null
    f=$(ls "$T"/p.rank1.*[0-9].json)
    "$GA_TOOL" report --json "$f" > "$T/merged.json"
    python3 - "$GA_SRC/doc/profile-schema.json" "$f" "$T/merged.json" "${f%.json}.trace.json" \
        "$GA_BUILD/man/gpuaccel-profile.5" <<'PY'
import json, re, sys
schema, prof, merged, trace = (json.load(open(f)) for f in sys.argv[1:5])
page = open(sys.argv[5]).read().replace("\\-", "-")
words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", page))
keys = set()
def walk_schema(s):
    for k, v in s.get("properties", {}).items():
        keys.add(k)
        walk_schema(v)
    if "items" in s:
        walk_schema(s["items"])
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            keys.add(k)
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
walk_schema(schema)
walk(prof)
walk(merged)
walk(trace["otherData"])
keys.update(trace.keys())
missing = sorted(k for k in keys if k not in words)
assert not missing, "not in gpuaccel-profile(5): %s" % missing
assert "job" in prof and merged["processes"][0]["rank"] == 1
PY
}

@test "gpuaccel(1) lists every feature, the defaults marked as the library has them" {
    # the features DESCRIPTION names: NAME, and NAME* when its text says on by default
    listed=$(sed -n '/^\.SH DESCRIPTION/,/^\.SH COMMANDS/p' "$GA_BUILD/man/gpuaccel.1" | awk '
        inparen { if (index($0, "*")) star = 1; if (index($0, ")")) { print name (star ? "*" : ""); inparen = 0 }; next }
        /^\.B [a-z_]+$/ { name = $2; next }
        name != "" && /^\(/ { inparen = 1; star = index($0, "*") > 0
                              if (index($0, ")")) { print name (star ? "*" : ""); inparen = 0 }; next }
        { name = "" }' | sort)
    on=$("$GA_BUILD/tools/gpuaccel" env --check | sed -n 's/^features on by default (GPUACCEL=safe): //p')
    want=$(sed -n 's/^GA_FEATURE(\([a-z_]*\), \(GPUACCEL_[A-Z_]*\), 1)$/\1 \2/p' \
        "$GA_SRC/src/features/features.def" | while read -r name var; do
            case " $on " in *" $var "*) echo "$name*" ;; *) echo "$name" ;; esac
        done | sort)
    echo "page: $listed"
    echo "want: $want"
    [ "$(echo "$want" | wc -l)" -eq 10 ]
    [ "$listed" = "$want" ]
}
