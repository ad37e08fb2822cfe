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
    [[ "$output" == *"result ok=1"* ]]
    [ "$(echo "$output" | grep -c "^gpuaccel: warning: $1='$2' is not valid: expected $3")" -eq 1 ]
    [ "$(echo "$output" | grep -v '^gpuaccel:')" = "$want" ]
}

@test "GPUACCEL=maybe" { check_bad GPUACCEL maybe "0 or 1"; }
@test "GPUACCEL_LOG=loud" { check_bad GPUACCEL_LOG loud "error, warn, info or debug"; }
@test "GPUACCEL_POOL=yesplease" { check_bad GPUACCEL_POOL yesplease "0 or 1"; }
@test "GPUACCEL_POOL_LIMIT=lots" { check_bad GPUACCEL_POOL_LIMIT lots "a byte count"; }
@test "GPUACCEL_POOL_LIMIT=150%" { check_bad GPUACCEL_POOL_LIMIT 150% "a byte count"; }
@test "GPUACCEL_COALESCE_WINDOW=-5" { check_bad GPUACCEL_COALESCE_WINDOW -5 "a byte count"; }
@test "GPUACCEL_COALESCE_MAX=1.5K" { check_bad GPUACCEL_COALESCE_MAX 1.5K "a byte count"; }
@test "GPUACCEL_GRAPH_MIN=five" { check_bad GPUACCEL_GRAPH_MIN five "a whole number"; }
@test "GPUACCEL_PROFILE_KERNELS=2" { check_bad GPUACCEL_PROFILE_KERNELS 2 "0 or 1"; }

@test "GPUACCEL_LOG_FILE in a directory that does not exist: warned, stderr used" {
    run env GPUACCEL_LOG=info GPUACCEL_LOG_FILE=/nonexistent/dir/x.log LD_PRELOAD="$GA_LIB" \
        LD_LIBRARY_PATH="$FAKE_DIR" "$PROGS/door_getproc" "$PTX"
    [ "$status" -eq 0 ]
    [[ "$output" == *"GPUACCEL_LOG_FILE: cannot open '/nonexistent/dir/x.log'"* ]]
    [[ "$output" == *"gpuaccel: calls:"* ]]
}
