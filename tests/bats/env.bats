#!/usr/bin/env bats
# env.bats - malformed GPUACCEL_* values: one warning naming the variable and
# what was expected, the default is used, and the program runs unchanged.
load helpers

setup() { setup_fake; }

check_bad() { # VAR VALUE EXPECTED-WORDS
    local want
    want=$(native "$PROGS/door_getproc" "$PTX")
    run env "$1=$2" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'result ok=1'
    [ "$(echo "$output" | grep -cF "gpuaccel: warning: $1='$2' is not valid: expected $3")" -eq 1 ]
    [ "$(echo "$output" | grep -v '^gpuaccel:')" = "$want" ]
}

@test "GPUACCEL=maybe" { check_bad GPUACCEL maybe "0, safe or all (or 1, on, yes, true, 0, off, no or false)"; }
@test "GPUACCEL_LOG=loud" { check_bad GPUACCEL_LOG loud "error, warn, info or debug"; }
@test "GPUACCEL_POOL=yesplease" { check_bad GPUACCEL_POOL yesplease "1, on, yes, true, 0, off, no or false"; }
@test "GPUACCEL_POOL_LIMIT=lots" { check_bad GPUACCEL_POOL_LIMIT lots "a byte count"; }
@test "GPUACCEL_POOL_LIMIT=150%" { check_bad GPUACCEL_POOL_LIMIT 150% "a byte count"; }
@test "GPUACCEL_COALESCE_WINDOW=-5" { check_bad GPUACCEL_COALESCE_WINDOW -5 "a byte count"; }
@test "GPUACCEL_COALESCE_MAX=1.5Q" { check_bad GPUACCEL_COALESCE_MAX 1.5Q "a byte count"; }
@test "GPUACCEL_GRAPH_MIN=five" { check_bad GPUACCEL_GRAPH_MIN five "a whole number"; }
@test "GPUACCEL_PROFILE_KERNELS=2" { check_bad GPUACCEL_PROFILE_KERNELS 2 "1, on, yes, true, 0, off, no or false"; }

@test "GPUACCEL_LOG_FILE in a directory that does not exist: warned, stderr used" {
    run env GPUACCEL_LOG=info GPUACCEL_LOG_FILE=/nonexistent/dir/x.log LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    [[ "$output" == *"GPUACCEL_LOG_FILE: cannot open '/nonexistent/dir/x.log'"* ]]
    [[ "$output" == *"gpuaccel: calls:"* ]]
}

# Settings that parse but cannot mean what was written: one warning each, with
# what to write instead; the program runs unchanged.
warns() { # EXPECTED-TEXT VAR=VALUE...
    local text=$1 want
    shift
    want=$(native "$PROGS/door_getproc" "$PTX")
    run env "$@" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -cF "gpuaccel: warning: $text")" -eq 1 ]
    [ "$(echo "$output" | grep -v '^gpuaccel:')" = "$want" ]
}

@test "a misspelt name: the closest known one is suggested" {
    warns "GPUACCEL_POOLL is not a setting of this library; did you mean GPUACCEL_POOL?" GPUACCEL_POOLL=1
}
@test "an unknown name with nothing close: pointed at gpuaccel env" {
    warns "GPUACCEL_FROBNICATE_ALL is not a setting of this library (gpuaccel env lists them)" \
        GPUACCEL_FROBNICATE_ALL=1
}
@test "a pool limit with no unit that looks like a forgotten percent sign" {
    warns "GPUACCEL_POOL_LIMIT=50 means 50 bytes; write 50% for a share of device memory or 50M for mebibytes" \
        GPUACCEL_POOL_LIMIT=50
}
@test "a window size with no unit where the default has one" {
    warns "GPUACCEL_COALESCE_WINDOW=64 means 64 bytes (the default is 64K); write 64K for kibibytes" \
        GPUACCEL_COALESCE_WINDOW=64 GPUACCEL_COALESCE=1
}
@test "limits of 0 keep nothing, for the pool and for pinned memory alike: no warning" {
    local v
    for v in GPUACCEL_POOL_LIMIT=0 GPUACCEL_PINNED_LIMIT=0 GPUACCEL_ASYNC_POOL_LIMIT=0; do
        run env "$v" LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
        [ "$status" -eq 0 ]
        no_line '^gpuaccel: warning'
    done
    # env --check takes each alike: no problem and no hint, the 0 in effect
    for v in GPUACCEL_POOL_LIMIT GPUACCEL_PINNED_LIMIT GPUACCEL_ASYNC_POOL_LIMIT; do
        run env "$v=0" "$GA_BUILD/tools/gpuaccel" env --check
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | awk -v v="$v" '$1 == v { print $3 "," $4 }')" = "0,0" ]
        [ "$(echo "$output" | sed -n '$p')" = "no problems" ]
        no_line '^(problem|note|hint|warning)'
    done
}
@test "sizes with a fraction and a unit: 1.5G is taken, 1.5 bytes is not" {
    local line
    run env GPUACCEL_PINNED_LIMIT=1.5G "$GA_BUILD/tools/gpuaccel" env
    [ "$status" -eq 0 ]
    line=$(echo "$output" | grep '^GPUACCEL_PINNED_LIMIT ')
    has_words '1.5G' "$line"
    has_words '1536M' "$line"
    check_bad GPUACCEL_COALESCE_MAX 1.5 "a byte count"
}
@test "G, GB and GiB are one unit, with a whole number or a fraction alike" {
    # effective VALUE: what env --check takes GPUACCEL_PINNED_LIMIT=VALUE as
    effective() {
        run env GPUACCEL_PINNED_LIMIT="$1" "$GA_BUILD/tools/gpuaccel" env --check
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | sed -n '$p')" = "no problems" ]
        [ "$(echo "$output" | awk '$1 == "GPUACCEL_PINNED_LIMIT" { print $4 }')" = "$2" ]
    }
    local v
    for v in 50G 50GB 50GiB 50g 50gb; do effective "$v" 50G; done
    for v in 1.5G 1.5GB 1.5GiB 1.5g; do effective "$v" 1536M; done
    effective 1536M 1536M
    effective 1.5MB 1536K
    check_bad GPUACCEL_POOL_LIMIT 1.5 "a byte count"
}
@test "GPUACCEL_CONFIG naming a directory says so" {
    warns "GPUACCEL_CONFIG=$BATS_TEST_TMPDIR: cannot read the file (Is a directory)" \
        GPUACCEL_CONFIG="$BATS_TEST_TMPDIR"
}
@test "tune on without a table says that nothing will be rewritten" {
    warns "GPUACCEL_TUNE=1 without GPUACCEL_TUNE_TABLE: there is no table" GPUACCEL_TUNE=1
}
@test "a table without tune: the setting has no effect" {
    warns "GPUACCEL_TUNE_TABLE is set but GPUACCEL_TUNE is off: it has no effect" \
        GPUACCEL_TUNE_TABLE=/tmp/t.table GPUACCEL_TUNE=0
}
@test "a feature's setting while the feature is off" {
    warns "GPUACCEL_COALESCE_WINDOW is set but GPUACCEL_COALESCE is off: it has no effect" \
        GPUACCEL_COALESCE_WINDOW=1M GPUACCEL_COALESCE=0
}
@test "GPUACCEL_CONFIG: a file of settings; bad lines named with their number; the environment wins" {
    printf 'GPUACCEL_COALESCE=1\nbroken line\nGPUACCEL_POOL=0\n' > "$BATS_TEST_TMPDIR/ga.conf"
    warns "GPUACCEL_CONFIG file $BATS_TEST_TMPDIR/ga.conf:2: expected NAME=VALUE; line skipped" \
        GPUACCEL_CONFIG="$BATS_TEST_TMPDIR/ga.conf" GPUACCEL_LOG=info GPUACCEL_POOL=1
    [[ "$output" == *"gpuaccel: pool:"* ]]
    [[ "$output" == *"gpuaccel: coalesce:"* ]]
}
@test "GPUACCEL_CONFIG naming a missing file" {
    warns "GPUACCEL_CONFIG=/nonexistent/ga.conf: cannot read the file" GPUACCEL_CONFIG=/nonexistent/ga.conf
}
@test "good settings say nothing" {
    run env GPUACCEL=all GPUACCEL_POOL_LIMIT=2G GPUACCEL_GRAPH_MIN=3 LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" != *"gpuaccel:"* ]]
}

# Numbers the code would clamp, round away or read as something else: outside
# the range the settings table states, `gpuaccel env --check` names the range
# and exits 1, and the library says the same once, uses the default and runs
# the program unchanged.
out_of_range() { # VAR=VALUE RANGE DEFAULT
    local var=${1%%=*} val=${1#*=} text
    text="$var='$val' is out of range: expected $2; using the default '$3'"
    run env GPUACCEL=all "$1" "$GA_BUILD/tools/gpuaccel" env --check
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$(echo "$output" | grep -cxF "problem: $text")" -eq 1 ]
    [ "$(echo "$output" | grep -c '^problem: ')" -eq 1 ]
    [ "$(echo "$output" | awk -v v="$var" '$1 == v { print $4 }')" = "$3" ]
    warns "$text" GPUACCEL=all "$1"
}

@test "GPUACCEL_GRAPH_MIN=0 and =1: fewer than 2 launches make no graph" {
    out_of_range GPUACCEL_GRAPH_MIN=0 "2 to 4096" 5
    out_of_range GPUACCEL_GRAPH_MIN=1 "2 to 4096" 5
}
@test "GPUACCEL_GRAPH_MIN=5000: no sequence learned is that long" {
    out_of_range GPUACCEL_GRAPH_MIN=5000 "2 to 4096" 5
}
@test "GPUACCEL_GRAPH_CACHE=0: the cache keeps at least one graph" {
    out_of_range GPUACCEL_GRAPH_CACHE=0 "1 or more" 64
}
@test "GPUACCEL_COALESCE_MAX=0: no small read would fill a window" {
    out_of_range GPUACCEL_COALESCE_MAX=0 "1 or more" 256
}
@test "GPUACCEL_COALESCE_WINDOW=0: a window holds at least a byte" {
    out_of_range GPUACCEL_COALESCE_WINDOW=0 "1 or more" 64K
}
@test "GPUACCEL_COALESCE_THREADS=9: a large read is copied by 8 threads at most" {
    out_of_range GPUACCEL_COALESCE_THREADS=9 "0 to 8" 0
}
@test "GPUACCEL_STAGING_THREADS=1000: 64 copy threads at most" {
    out_of_range GPUACCEL_STAGING_THREADS=1000 "0 to 64" 0
}
@test "GPUACCEL_STAGING_CHUNK=32K and =2G: a chunk is 64K to 1G" {
    out_of_range GPUACCEL_STAGING_CHUNK=32K "64K to 1G" 8M
    out_of_range GPUACCEL_STAGING_CHUNK=2G "64K to 1G" 8M
}
@test "GPUACCEL_STAGING_MIN=0: the smallest copy staged is a byte" {
    out_of_range GPUACCEL_STAGING_MIN=0 "1 or more" 64K
}
@test "a range's bounds are taken as set: no problem" {
    run env GPUACCEL=all GPUACCEL_GRAPH_MIN=4096 GPUACCEL_GRAPH_CACHE=1 \
        GPUACCEL_STAGING_THREADS=64 GPUACCEL_STAGING_CHUNK=1G GPUACCEL_STAGING_MIN=1K \
        GPUACCEL_COALESCE_MAX=1K GPUACCEL_COALESCE_WINDOW=1K "$GA_BUILD/tools/gpuaccel" env --check
    echo "$output"
    [ "$status" -eq 0 ]
    has_words 'no problems'
    [ "$(echo "$output" | awk '$1 == "GPUACCEL_STAGING_THREADS" { print $4 }')" = 64 ]
    run env GPUACCEL=all GPUACCEL_GRAPH_MIN=2 GPUACCEL_STAGING_CHUNK=64K \
        "$GA_BUILD/tools/gpuaccel" env --check
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | awk '$1 == "GPUACCEL_GRAPH_MIN" { print $4 }')" = 2 ]
}

@test "env --markdown: a row per variable with its range, whatever the environment says" {
    local n
    run env GPUACCEL_GRAPH_MIN=1 GPUACCEL_NOPE=1 "$GA_BUILD/tools/gpuaccel" env --markdown
    echo "$output"
    [ "$status" -eq 0 ]
    n=$("$GA_BUILD/tools/gpuaccel" env | grep -c '^GPUACCEL')
    [ "$(echo "$output" | grep -c '^| `GPUACCEL')" -eq "$n" ]
    [ "$(echo "$output" | grep -cxF '| `GPUACCEL_GRAPH_MIN` | 5 | 2 to 4096 | fewest kernels in a sequence worth a graph; acts with GPUACCEL_GRAPHS |')" -eq 1 ]
    no_line 'problem'
    run "$GA_BUILD/tools/gpuaccel" env --markdown --check
    [ "$status" -eq 2 ]
    [[ "$output" == *"choose --check or --markdown, not both"* ]]
}

# One truth for settings: for every set and each feature's own switch on top
# of it, the features the library turns on (its "features on:" line) are the
# ones `gpuaccel env` shows in effect.
env_features() { # ENV...: the switches env shows on, as GPUACCEL_X words
    local vars
    vars=$(sed -n 's/^GA_FEATURE([a-z_]*, *\(GPUACCEL_[A-Z_]*\), *1)$/\1/p' \
        "$GA_SRC/src/features/features.def")
    env "$@" "$GA_BUILD/tools/gpuaccel" env 2>/dev/null |
        awk -v vars="$vars" 'BEGIN { n = split(vars, v, "\n"); for (i = 1; i <= n; i++) want[v[i]] = 1 }
             ($1 in want) && $4 == "1" { printf " %s", $1 }'
}
lib_features() { # ENV...: the toggled switches the library says are on
    local vars line
    vars=$(sed -n 's/^GA_FEATURE([a-z_]*, *\(GPUACCEL_[A-Z_]*\), *1)$/\1/p' \
        "$GA_SRC/src/features/features.def")
    line=$(env "$@" GPUACCEL_LOG=info LD_PRELOAD="$GA_LIB" LD_LIBRARY_PATH="$FAKE_DIR" \
        "$PROGS/door_getproc" "$PTX" 2>&1 | sed -n 's/^gpuaccel: features on://p')
    for v in $vars; do
        case " $line " in *" $v "*) printf ' %s' "$v" ;; esac
    done
}
same_features() { # ENV...
    local e l
    e=$(env_features "$@")
    l=$(lib_features "$@")
    if [ "$e" != "$l" ]; then
        echo "with $*: gpuaccel env says [$e], the library [$l]"
        return 1
    fi
}

@test "the library's features equal gpuaccel env's for every set and override" {
    local sets=("" GPUACCEL=0 GPUACCEL=safe GPUACCEL=all) f s n=0
    for s in "${sets[@]}"; do
        same_features $s
        n=$((n + 1))
        for f in $(toggled_features); do
            f=GPUACCEL_$(echo "$f" | tr 'a-z' 'A-Z')
            same_features $s "$f=1"
            same_features $s "$f=0"
            n=$((n + 2))
        done
    done
    # and the one that disagreed before: a switch on under GPUACCEL=0 acts
    [ "$(lib_features GPUACCEL=0 GPUACCEL_COALESCE=1)" = " GPUACCEL_COALESCE" ]
    [ "$n" -gt 60 ]
}
